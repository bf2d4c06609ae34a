"""Interconnect presets as data: bandwidth per direction, the bidirectional figure beside it.

Conventions (read before quoting a figure):

- ``per_direction`` is the bytes/s one chip can *send* (and, at the same time, receive) over
  the link, which is what the α-β model of a collective divides by. Vendors print NVLink and
  PCIe as the **bidirectional total** (NVLink 4: "900 GB/s" = 450 GB/s each way); InfiniBand
  and Ethernet are printed per direction per port (NDR "400 Gb/s" = 50 GB/s each way).
  Dividing by the bidirectional figure halves every communication time: a classic mistake.
- NVLink figures are per GPU, summed over all its links (what one GPU can push into an
  NVSwitch fabric); PCIe is one x16 slot; InfiniBand one port (one HCA per GPU is usual);
  TPU ICI is one link of one chip (a chip has 4 (v5e) or 6 (v4, v5p) of them).
- Bytes/s, 10^9 = 1 GB/s; Gb/s are divided by 8.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.errors import SolverInputError

G = 10**9


@dataclass(frozen=True)
class Link:
    """One interconnect: bandwidth per direction (bytes/s), what the vendor prints, and where from."""

    name: str
    per_direction: float  # bytes/s one chip sends (and receives at the same time)
    printed: str  # the figure as the source prints it
    scope: str  # what the figure covers: per GPU (all links), per x16 slot, per port, per link
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def bidirectional(self) -> float:
        """Both directions added: 2 × per direction (the figure NVIDIA prints for NVLink and PCIe)."""
        return 2 * self.per_direction


LINKS: dict[str, Link] = {
    "nvlink3": Link(
        "nvlink3", 300 * G, "600 GB/s (bidirectional)", "per GPU, 12 links",
        source="NVIDIA A100 Tensor Core GPU datasheet (NVLink: 600GB/s)",
        notes="12 third-generation links × 25 GB/s each way = 300 GB/s per direction.", aliases=("nvlink-3", "a100")),
    "nvlink4": Link(
        "nvlink4", 450 * G, "900 GB/s (bidirectional)", "per GPU, 18 links",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: NVLink 900GB/s)",
        notes="18 fourth-generation links × 25 GB/s each way = 450 GB/s per direction.", aliases=("nvlink-4", "h100")),
    "pcie4": Link(
        "pcie4", 32 * G, "64 GB/s (bidirectional, x16)", "per x16 slot",
        source="NVIDIA A100 datasheet (PCIe Gen4: 64GB/s); PCI-SIG: 16 GT/s per lane",
        notes="16 GT/s × 16 lanes / 8 = 32 GB/s each way before 128b/130b encoding (31.5 GB/s after).",
        aliases=("pcie-4", "pcie-gen4")),
    "pcie5": Link(
        "pcie5", 64 * G, "128 GB/s (bidirectional, x16)", "per x16 slot",
        source="NVIDIA H100 datasheet (PCIe Gen5: 128GB/s); PCI-SIG: 32 GT/s per lane",
        notes="32 GT/s × 16 lanes / 8 = 64 GB/s each way before 128b/130b encoding (63 GB/s after).",
        aliases=("pcie-5", "pcie-gen5")),
    "ib-hdr": Link(
        "ib-hdr", 25 * G, "200 Gb/s per port (each direction)", "per port",
        source="NVIDIA ConnectX-6 / Quantum HDR InfiniBand product briefs (200Gb/s HDR)",
        notes="InfiniBand rates are per direction: 200 Gb/s / 8 = 25 GB/s each way.", aliases=("hdr",)),
    "ib-ndr": Link(
        "ib-ndr", 50 * G, "400 Gb/s per port (each direction)", "per port",
        source="NVIDIA ConnectX-7 / Quantum-2 NDR InfiniBand product briefs (400Gb/s NDR)",
        notes="400 Gb/s / 8 = 50 GB/s each way; a DGX H100 has one NDR port per GPU.", aliases=("ndr",)),
    "ici-v5e": Link(
        "ici-v5e", 45 * G, "4.5e10 B/s one-way per link (9e10 bidirectional)", "per link (4 per chip)",
        source="Austin et al., How to Scale Your Model (jax-ml/scaling-book), 'All About TPUs' table",
        aliases=("tpu-v5e", "ici")),
    "ici-v5p": Link(
        "ici-v5p", 90 * G, "9e10 B/s one-way per link (1.8e11 bidirectional)", "per link (6 per chip)",
        source="Austin et al., How to Scale Your Model (jax-ml/scaling-book), 'All About TPUs' table",
        aliases=("tpu-v5p",)),
}


def get_link(name: str) -> Link:
    """A preset by name or alias (case-insensitive; ``_`` and spaces read as ``-``)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in LINKS:
        return LINKS[key]
    for link in LINKS.values():
        if key in link.aliases:
            return link
    raise SolverInputError(f"unknown link {name!r}; choose from {', '.join(LINKS)}", param="link")


def list_links() -> list[Link]:
    return list(LINKS.values())
