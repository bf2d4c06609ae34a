"""GPU nodes and NVLink domains as presets: an 8-GPU HGX H100, H200 or B200 board, and a GB200
NVL72 rack (72 GPUs in one NVLink domain), each figure with where it is printed; and the
``node`` formula (``qkv solve node``, ``qkv calc node(...)``) that gives a node's totals, its
link figures one way and both, and the network's arithmetic intensities inside and across nodes.

Conventions (the same as :mod:`solver.systems.interconnect`):

- Every bandwidth is stored **per direction** in bytes/s. NVIDIA prints NVLink, NVLink-C2C and
  PCIe as both directions added ("900 GB/s" = 450 GB/s each way); InfiniBand and Ethernet NICs
  per port, per direction ("400 Gb/s" = 50 GB/s each way).
- ``nvlink`` is one GPU's links summed (what it can push into the NVSwitch fabric); ``host_link``
  one GPU's path to its host CPU (a PCIe Gen5 x16 slot, or NVLink-C2C on a Grace superchip);
  ``nics`` the scale-out NICs of the node (one per GPU in NVIDIA's reference designs).
- A node here is the NVLink domain: 8 GPUs on an HGX board, 72 in a GB200 NVL72 rack (How to
  Scale Your Model, Part 12, on the two meanings of "node"). ``gpus_per_host`` is the GPUs one
  host board drives: an HGX board's 8; an NVL72 compute tray's 4 (2 Grace CPUs, 2 GPUs each;
  18 trays). The text's footnote says "still only 8 GPUs connected to each host" for NVL72: the
  preset keeps the tray's 4 and says so.
- The node's egress is what crosses into the scale-out network: NICs × one NIC's rate. With
  one NIC per GPU, a cross-node collective that runs one ring per GPU (each over 1/g of the
  data) moves the data at the node's egress, the W the text divides by ("400e9").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Input, Output, formula
from solver.result import Result, fmt

G = 10**9
HSM12 = ("Austin et al., How to Scale Your Model (2025), Part 12 'How to Think About GPUs' (github.com/jax-ml/"
         "scaling-book gpus.md at 1a55377), 'At the node level' and 'Beyond the node level'")
URL_HGX_BLOG = "https://developer.nvidia.com/blog/introducing-nvidia-hgx-h100-an-accelerated-server-platform-for-ai-and-high-performance-computing/"
URL_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
URL_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
URL_DGX_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
URL_HGX = "https://www.nvidia.com/en-us/data-center/hgx/"
URL_NVL72 = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
URL_NVL72_BLOG = ("https://developer.nvidia.com/blog/achieving-peak-system-and-workload-efficiency-on-nvidia-"
                  "gb200-nvl72-with-slurm-block-scheduling/")
READ_HSM = "read in gpus.md at 1a55377 (jax-ml/scaling-book, in the reference library)"
READ_BLOG = "read in a verbatim copy of NVIDIA's blog post (dynasys.com.hk) in the reference library"
NOT_HELD = ("NVIDIA's page is not held in the reference library: the figure as the preset's chip cites it "
            "(solver.systems.chips, solver.systems.interconnect)")
UNSEEN = "NVIDIA's page is not held in the reference library; the text is as NVIDIA's spec tables are widely quoted"


@dataclass(frozen=True)
class NodeCitation:
    """One stored figure as its source prints it: the text, the number in base units (bytes/s, or a
    count), and what it covers, so that the stored figure is ``value / per / directions``."""

    figure: str  # "nvlink", "nvswitches", "nics", ...
    printed: str
    value: float
    source: str
    per: int = 1  # the printed figure covers this many of what is stored (GPUs, links)
    directions: int = 1  # 2 when printed with both directions added
    note: str = ""
    seen: str = ""  # how the printed text was checked (read where), or that it was not

    def stored(self) -> float:
        return self.value / self.per / self.directions


@dataclass(frozen=True)
class Node:
    """One NVLink domain: its GPUs (a chip preset), switches, and its links, each per direction."""

    name: str
    gpu: str  # a chip preset of solver.systems.chips
    gpus: int  # GPUs in the NVLink domain
    gpus_per_host: int  # GPUs one host CPU (or compute tray) drives
    nvswitches: int  # NVSwitch chips in the domain
    switch_ports: int  # NVLink ports per NVSwitch chip
    nvlink_links: int  # NVLink links per GPU
    nvlink_link: float  # one link, bytes/s per direction
    host_link: float  # one GPU to its host, bytes/s per direction
    host_link_name: str
    nics: int  # scale-out NICs in the domain
    nic: float  # one NIC, bytes/s per direction
    nic_name: str
    source: str
    citations: tuple[NodeCitation, ...] = ()
    notes: str = ""
    aliases: tuple[str, ...] = field(default=())

    @property
    def nvlink(self) -> float:
        """One GPU's NVLink bandwidth per direction: links × one link's."""
        return self.nvlink_links * self.nvlink_link

    @property
    def egress(self) -> float:
        """The domain's bandwidth into the scale-out network, per direction: NICs × one NIC's."""
        return self.nics * self.nic

    def figure(self, name: str) -> float:
        return float(getattr(self, name))


NODES: dict[str, Node] = {
    "hgx-h100": Node(
        name="hgx-h100", gpu="h100-sxm", gpus=8, gpus_per_host=8, nvswitches=4, switch_ports=64, nvlink_links=18,
        nvlink_link=25 * G, host_link=64 * G, host_link_name="PCIe Gen5 x16", nics=8, nic=50 * G,
        nic_name="ConnectX-7 400 Gb/s (InfiniBand NDR), one per GPU",
        source="NVIDIA H100 datasheet and 'Introducing NVIDIA HGX H100' (NVIDIA technical blog); " + HSM12,
        aliases=("dgx-h100", "h100-node", "8xh100"),
        citations=(
            NodeCitation("gpus", "HGX H100 8-GPU ... hosts eight H100 Tensor Core GPUs and four third-generation "
                         "NVSwitch", 8, URL_HGX_BLOG, seen=READ_BLOG),
            NodeCitation("nvswitches", "four third-generation NVSwitch", 4, URL_HGX_BLOG,
                         note="How to Scale Your Model: 'for H100, we have 4 NVSwitches per node'", seen=READ_BLOG),
            NodeCitation("switch_ports", "The massive NVSwitches have up to 64 NVLink ports", 64, HSM12, seen=READ_HSM),
            NodeCitation("nvlink_links", "NVLink Ports / GPU 18 (Hopper, NVLink 4.0)", 18, HSM12,
                         note="the H100 datasheet: 'NVLink: 900GB/s', i.e. 18 links × 50 GB/s both ways", seen=READ_HSM),
            NodeCitation("nvlink_link", "each NVLink link has 25GB/s of full-duplex bandwidth", 25e9, HSM12,
                         note="full-duplex: 25 GB/s each way", seen=READ_HSM),
            NodeCitation("nvlink", "NVLink 900GB/s (H100 SXM)", 900e9, URL_H100, directions=2,
                         note="How to Scale Your Model: '18 * 25=450GB/s of full-duplex bandwidth from each GPU'",
                         seen=NOT_HELD),
            NodeCitation("host_link", "PCIe Gen5: 128GB/s (H100 SXM)", 128e9, URL_H100, directions=2, seen=NOT_HELD),
            NodeCitation("nics", "8 400Gbps CX7 NICs (one per GPU)", 8, HSM12, seen=READ_HSM),
            NodeCitation("nic", "400Gbps CX7 NICs; InfiniBand NDR (50GB/s full-duplex)", 400e9 / 8, HSM12, seen=READ_HSM),
            NodeCitation("egress", "each node has 400GB/s of egress bandwidth into the IB network", 400e9, HSM12, seen=READ_HSM),
        )),
    "hgx-h200": Node(
        name="hgx-h200", gpu="h200", gpus=8, gpus_per_host=8, nvswitches=4, switch_ports=64, nvlink_links=18,
        nvlink_link=25 * G, host_link=64 * G, host_link_name="PCIe Gen5 x16", nics=8, nic=50 * G,
        nic_name="ConnectX-7 400 Gb/s (InfiniBand NDR), one per GPU",
        source="NVIDIA H200 datasheet (H200 SXM: NVLink 900GB/s, PCIe Gen5 128GB/s); the board, switches and NICs "
               "are the HGX H100's (the same GH100 GPU and NVLink 4 fabric)",
        notes="How to Scale Your Model's node tables have no H200 row; its H100 figures apply, as the H200 SXM's "
              "NVLink and PCIe figures are the H100 SXM's.",
        aliases=("dgx-h200", "h200-node", "8xh200"),
        citations=(
            NodeCitation("nvlink", "NVIDIA NVLink: 900GB/s (H200 SXM)", 900e9, URL_H200, directions=2, seen=NOT_HELD),
            NodeCitation("host_link", "PCIe Gen5: 128GB/s (H200 SXM)", 128e9, URL_H200, directions=2, seen=UNSEEN),
        )),
    "hgx-b200": Node(
        name="hgx-b200", gpu="b200", gpus=8, gpus_per_host=8, nvswitches=2, switch_ports=72, nvlink_links=18,
        nvlink_link=50 * G, host_link=64 * G, host_link_name="PCIe Gen5 x16", nics=8, nic=50 * G,
        nic_name="ConnectX-7 400 Gb/s, one per GPU",
        source="NVIDIA HGX and DGX B200 pages (NVLink 1.8 TB/s per GPU, 8 × ConnectX-7 400 Gb/s); " + HSM12,
        aliases=("dgx-b200", "b200-node", "8xb200"),
        citations=(
            NodeCitation("nvlink", "NVLink GPU-to-GPU Bandwidth 1.8 TB/s", 1.8e12, URL_HGX, directions=2,
                         note="How to Scale Your Model: NVLink 5.0, 50 GB/s a link, 18 ports, 900 GB/s full-duplex",
                         seen=NOT_HELD),
            NodeCitation("nvlink_link", "NVLink Bandwidth (GB/s, full-duplex) 50 (Blackwell, NVLink 5.0)", 50e9, HSM12, seen=READ_HSM),
            NodeCitation("nvlink_links", "NVLink Ports / GPU 18 (Blackwell)", 18, HSM12, seen=READ_HSM),
            NodeCitation("nvswitches", "NVSwitches per node 2/18 (8 and 72 GPU Blackwell systems)", 2, HSM12, seen=READ_HSM),
            NodeCitation("nics", "DGX B200: 8x single-port NVIDIA ConnectX-7 VPI, up to 400Gb/s", 8, URL_DGX_B200,
                         seen=UNSEEN, note="How to Scale Your Model: B200 node egress 400e9, i.e. 8 × 50 GB/s"),
            NodeCitation("egress", "B200 ... Node egress bandwidth 400e9", 400e9, HSM12, seen=READ_HSM),
        )),
    "gb200-nvl72": Node(
        name="gb200-nvl72", gpu="gb200", gpus=72, gpus_per_host=4, nvswitches=18, switch_ports=72, nvlink_links=18,
        nvlink_link=50 * G, host_link=450 * G, host_link_name="NVLink-C2C (Grace to Blackwell)", nics=72, nic=50 * G,
        nic_name="400 Gb/s, one per GPU",
        source="NVIDIA GB200 NVL72 page (72 Blackwell GPUs, 36 Grace CPUs, NVLink 130 TB/s, NVLink-C2C 900 GB/s); "
               + HSM12,
        notes="18 compute trays of 2 GB200 superchips (2 Grace CPUs, 4 GPUs) and 9 switch trays of 2 NVLink Switch "
              "chips. The NICs (one 400 Gb/s port per GPU) are the text's: 4 · 18 · 400 / 8 = 3.6 TB/s per rack.",
        aliases=("nvl72", "gb200-rack"),
        citations=(
            NodeCitation("gpus", "GB200 NVL72 connects 36 Grace CPUs and 72 Blackwell GPUs in a rack-scale design", 72,
                         URL_NVL72, seen=UNSEEN, note="How to Scale Your Model: 'Node size (NVLink domain) 8/72'"),
            NodeCitation("gpus_per_host", "18 compute nodes, each housing two Grace-Blackwell Superchips (GB200)", 4,
                         "https://training.continuumlabs.ai/infrastructure/servers-and-chips/nvidia-gb200-nvl72",
                         seen="read in a secondary page in the reference library (continuumlabs.ai); NVIDIA's OCP "
                              "description as reported in ferra.ru (2025-08-25): two Grace CPUs and four Blackwell GPUs "
                              "a compute tray",
                         note="2 superchips × 2 GPUs = 4; 18 × 4 = 72. How to Scale Your Model's footnote says 8 GPUs "
                              "per host for NVL72 (not taken)"),
            NodeCitation("nvlink", "GB200 NVL72 provides 1.8 TB/s bidirectional throughput per GPU, for a total of "
                         "130 TB/s", 1.8e12, URL_NVL72_BLOG, directions=2,
                         note="130 TB/s ÷ 72 = 1.806 TB/s: 72 · 1.8 = 129.6 TB/s rounded up",
                         seen="read in a verbatim capture of NVIDIA's developer blog in the reference library (as "
                              "solver.systems.chips cites it)"),
            NodeCitation("nvswitches", "NVSwitches per node 2/18 (8 and 72 GPU Blackwell systems)", 18, HSM12, seen=READ_HSM),
            NodeCitation("host_link", "NVLink-C2C 900GB/s (Grace to Blackwell)", 900e9, URL_NVL72, directions=2,
                         seen=UNSEEN),
            NodeCitation("egress", "GB200 NVL72 ... Node egress bandwidth 3600e9; '4 * 18 * 400 / 8 = 3.6TB/s'", 3.6e12,
                         HSM12, seen=READ_HSM),
        )),
}

#: How to Scale Your Model, Part 12 (gpus.md at 1a55377), the node tables as printed: node -> (GPUs per node, GPU
#: egress bytes/s, node egress bytes/s) from "Node Type | GPUs per node | GPU egress bandwidth | Node egress
#: bandwidth", and (NVLink GB/s per link full-duplex, ports per GPU, switches per node) from the NVLink table
HSM_NODES = {"hgx-h100": (8, 450e9, 400e9, 25e9, 18, 4), "hgx-b200": (8, 900e9, 400e9, 50e9, 18, 2),
             "gb200-nvl72": (72, 900e9, 3600e9, 50e9, 18, 18)}


def get_node(name: str) -> Node:
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    if key in NODES:
        return NODES[key]
    for n in NODES.values():
        if key in n.aliases:
            return n
    from difflib import get_close_matches

    near = get_close_matches(key, list(NODES) + [a for n in NODES.values() for a in n.aliases], 1)
    raise SolverInputError(f"unknown node {name!r}; choose from {', '.join(NODES)}"
                           + (f" (did you mean {near[0]}?)" if near else ""), param="node")


@formula("node", "A GPU node (NVLink domain) by name: its totals, NVLink per GPU one way and both, the switches' "
         "ports, the host link, the NICs' egress, and C/W inside and across nodes (the per-GPU batch of "
         "data parallelism).",
         (Input("node", "a node preset: hgx-h100, hgx-h200, hgx-b200, gb200-nvl72 (also dgx-h100, nvl72)",
                kind="choice", aliases=("preset",)),
          Input("dtype", "the dtype of the GPUs' peak", kind="dtype", default="bf16"),
          Input("peak", "FLOP/s per GPU (instead of the preset GPU's)", unit="FLOP/s", default=None,
                aliases=("peak_flops", "C"))),
         (Output("nvlink", "B/s", "one GPU's NVLink, one direction: links · one link", key="nvlink_bandwidth"),
          Output("nvlink_bidi", "B/s", "the same, both directions (NVIDIA's printed figure)",
                 key="nvlink_bidi_bandwidth"),
          Output("gpus", "", "GPUs in the NVLink domain"),
          Output("flops", "FLOP/s", "GPUs · peak", key="peak_flops"),
          Output("hbm", "B", "GPUs · HBM", key="hbm_bytes"),
          Output("nvlink_total", "B/s", "every GPU's NVLink, one direction (the text's 8 · 450 GB/s = 3.6 TB/s; also "
                 "the bisection counted both ways)", key="nvlink_total_bandwidth"),
          Output("switch_total", "B/s", "every NVSwitch port, one direction (the text's 4 · 64 · 25 GB/s = 6.4 TB/s)",
                 key="switch_total_bandwidth"),
          Output("host_link", "B/s", "one GPU to its host, one direction", key="host_link_bandwidth"),
          Output("egress", "B/s", "the node's NICs, one direction (W across nodes)", key="egress_bandwidth"),
          Output("egress_per_gpu", "B/s", "the node's egress / GPUs", key="egress_per_gpu_bandwidth"),
          Output("alpha_intra", "FLOP/B", "C / NVLink per GPU: the per-GPU batch of DP inside the node"),
          Output("alpha_inter", "FLOP/B", "C / node egress: the per-GPU batch of DP across nodes"),
          Output("host_load_time", "s", "one GPU's HBM filled from its host over the host link",
                 key="host_load_time_s")),
         conventions=(Convention("figures", "Whose figures.", {
             "preset": Choice("the preset's (each cited: qkv calc --list node)", "solver.systems.nodes"),
             "hsm": Choice("How to Scale Your Model's node table (H100, B200, GB200 NVL72): GPU and node egress",
                           HSM12)}, "preset"),),
         solve="node", source=HSM12)
def _node(node, dtype, peak, figures="preset"):
    from solver.systems.chips import get_hardware
    from solver.systems.sharding import _num, _pos

    n = get_node(node)
    hw = get_hardware(n.gpu)
    r = Result(answer=None, unit="B/s", convention={"node": n.name, "gpu": hw.name, "figures": figures,
                                                   "bandwidths": "per direction unless named bidi", "source": n.source})
    nvlink, egress = n.nvlink, n.egress
    if figures == "hsm":
        if n.name not in HSM_NODES:
            raise SolverInputError(f"the text's table covers {', '.join(HSM_NODES)}, not {n.name}", param="node")
        _g, nvlink, egress, _l, _p, _s = HSM_NODES[n.name]
        r.convention["source"] = HSM12
    C = _num(peak) if peak is not None else hw.peak(dtype)
    _pos("peak", C)
    g = n.gpus
    r.breakdown["gpus"] = g
    r.breakdown["peak_flops"] = r.step("FLOP/s = GPUs · peak", f"{g} · {fmt(C)}", g * C, "FLOP/s")
    r.breakdown["hbm_bytes"] = r.step("HBM = GPUs · HBM per GPU", f"{g} · {fmt(hw.hbm_bytes)}", g * hw.hbm_bytes, "B")
    if figures == "preset":
        r.step("NVLink per GPU = links · one link", f"{n.nvlink_links} · {fmt(n.nvlink_link)}", nvlink, "B/s")
    r.breakdown["nvlink_bandwidth"] = nvlink
    r.breakdown["nvlink_bidi_bandwidth"] = r.step("both directions = 2 · one", f"2 · {fmt(nvlink)}", 2 * nvlink, "B/s")
    r.breakdown["nvlink_total_bandwidth"] = r.step("all GPUs' NVLink = GPUs · per GPU", f"{g} · {fmt(nvlink)}", g * nvlink, "B/s")
    r.breakdown["switch_total_bandwidth"] = r.step("switch ports = NVSwitches · ports · one link",
                                         f"{n.nvswitches} · {n.switch_ports} · {fmt(n.nvlink_link)}",
                                         n.nvswitches * n.switch_ports * n.nvlink_link, "B/s")
    r.breakdown["host_link_bandwidth"] = n.host_link
    r.breakdown["egress_bandwidth"] = r.step("node egress = NICs · one NIC" if figures == "preset" else "node egress (the text)",
                                   f"{n.nics} · {fmt(n.nic)}" if figures == "preset" else fmt(egress), egress, "B/s")
    r.breakdown["egress_per_gpu_bandwidth"] = r.step("per GPU = egress / GPUs", f"{fmt(egress)} / {g}", egress / g, "B/s")
    r.breakdown["alpha_intra"] = r.step("α inside = C / NVLink per GPU", f"{fmt(C)} / {fmt(nvlink)}", C / nvlink,
                                        "FLOP/B")
    r.breakdown["alpha_inter"] = r.step("α across = C / node egress", f"{fmt(C)} / {fmt(egress)}", C / egress, "FLOP/B")
    r.breakdown["host_load_time_s"] = r.step("HBM / host link", f"{fmt(hw.hbm_bytes)} / {fmt(n.host_link)}",
                                           Fraction(hw.hbm_bytes) / Fraction(n.host_link), "s")
    r.breakdown.update(nvswitches=n.nvswitches, gpus_per_host=n.gpus_per_host, nics=n.nics)
    r.answer = nvlink
    return r


FORMULAS = (_node.formula,)
