"""Interconnect presets as data: bandwidth per direction, the bidirectional figure beside it.

Conventions (read before quoting a figure):

- ``per_direction`` is the bytes/s one chip can *send* (and, at the same time, receive) over
  the link, which is what the α-β model of a collective divides by. Vendors print NVLink and
  PCIe as the **bidirectional total** (NVLink 4: "900 GB/s" = 450 GB/s each way); InfiniBand
  and Ethernet are printed per direction per port (NDR "400 Gb/s" = 50 GB/s each way).
  Dividing by the bidirectional figure halves every communication time: a classic mistake.
- NVLink figures are per GPU, summed over all its links (what one GPU can push into an
  NVSwitch fabric); PCIe is one x16 slot; InfiniBand one port (one HCA per GPU is usual);
  TPU ICI is one port of one chip (a chip has 4 (v5e, v6e) or 6 (v4, v5p) of them): a ring
  along one torus axis sends over one port each way. Every chip preset of
  :mod:`solver.systems.chips` names its link here, with the same per-direction figure.
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
    "nvlink5": Link(
        "nvlink5", 900 * G, "1.8 TB/s (bidirectional)", "per GPU, 18 links",
        source="NVIDIA HGX page (https://www.nvidia.com/en-us/data-center/hgx/: 'NVLink GPU-to-GPU Bandwidth 1.8 TB/s'), "
               "GB200 NVL72 page (superchip 'NVLink Bandwidth 3.6 TB/s' for 2 GPUs; 130 TB/s per 72), NVIDIA developer "
               "blog on GB200 NVL72 (2026-05-07): '1.8 TB/s bidirectional throughput per GPU'",
        notes="1.8 TB/s counts both directions: 900 GB/s per direction (18 fifth-generation links × 50 GB/s each way). "
              "NVIDIA's Base Command Manager NVLink chapter (docs.nvidia.com, Mission Control) says instead '900 GB/s "
              "bidirectional bandwidth per link', which fits neither the per-GPU 1.8 TB/s nor 18 links; not used.",
        aliases=("nvlink-5", "b200", "gb200")),
    "nvlink-bridge-h100": Link(
        "nvlink-bridge-h100", 300 * G, "600 GB/s (bidirectional, NVLink bridge)", "per GPU pair (2-way bridge)",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe: NVLink 600GB/s)",
        notes="Two H100 PCIe boards joined by NVLink bridges: 300 GB/s each way.", aliases=("h100-pcie",)),
    "xgmi-mi300x": Link(
        "xgmi-mi300x", 448 * G, "7 × 128 GB/s = 896 GB/s (bidirectional)", "per GPU, 7 links (fully connected 8-GPU platform)",
        source="AMD CDNA 3 white paper, Table 2 (MI300X: '7 x16 AMD Infinity Fabric links', 'P2P RING PEAK AGGREGATE "
               "I/O BANDWIDTH 896 GB/s (8 GPUs)'; links 'operate at up to 32Gbps', '16-lane, bi-directional')",
        notes="16 lanes × 32 Gb/s ÷ 8 = 64 GB/s each way per link (128 GB/s both ways, the data sheet's peak link "
              "figure); RCCL's rings over the fully connected 8-GPU platform use all 7 links, 448 GB/s each way "
              "per GPU.", aliases=("infinity-fabric", "mi300x", "xgmi")),
    "ici-v4": Link(
        "ici-v4", 25 * G, "2,400 Gbps = 300 GB/s per chip over 6 ports", "per port (6 per chip)",
        source="Google Cloud TPU documentation, system architecture table (TPU v4: ICI 2,400 Gbps per chip)",
        notes="Read as bidirectional per chip: 300 GB/s / 6 ports / 2 directions = 25 GB/s each way per port.",
        aliases=("tpu-v4",)),
    "ici-v5e": Link(
        "ici-v5e", 50 * G, "400 GBps bidirectional per chip, 4 ports", "per port (4 per chip)",
        source="Google Cloud TPU documentation, 'TPU v5e' (bidirectional ICI bandwidth per chip 400 GBps; 4 ICI ports)",
        notes="400 / 4 ports / 2 directions = 50 GB/s each way per port: a ring along one axis of the 2D torus "
              "sends over one port. (jax-ml/scaling-book's table rounds it to 4.5e10 B/s.)",
        aliases=("tpu-v5e", "ici")),
    "ici-v5p": Link(
        "ici-v5p", 100 * G, "1200 GBps bidirectional per chip, 6 ports", "per port (6 per chip)",
        source="Google Cloud TPU documentation, 'TPU v5p' (bidirectional ICI bandwidth per chip 1200 GBps; 3D torus)",
        notes="1200 / 6 ports / 2 directions = 100 GB/s each way per port (jax-ml/scaling-book: 9e10 B/s).",
        aliases=("tpu-v5p",)),
    "ici-v6e": Link(
        "ici-v6e", 100 * G, "800 GBps bidirectional per chip, 4 ports", "per port (4 per chip)",
        source="Google Cloud TPU documentation, 'TPU v6e' (https://docs.cloud.google.com/tpu/docs/v6e: 'Bidirectional "
               "inter-chip interconnect (ICI) bandwidth (per chip) 800 GBps', 'ICI ports per chip 4', 2D torus)",
        notes="800 / 4 ports / 2 directions = 100 GB/s each way per port (the page's 'All-reduce bandwidth per Pod "
              "102.4 TB/s' ÷ 256 chips = 400 GB/s = 800 halved).", aliases=("tpu-v6e", "trillium")),
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
