"""Hardware presets: dense peaks are the datasheets' with-sparsity figures halved (NVIDIA), TPU figures as printed.

The numbers below are the ones printed in each source (NVIDIA datasheets mark tensor figures
"with sparsity"; Google's Cloud TPU pages print dense ones), so a typo in solver.systems.chips fails here.
"""

from __future__ import annotations

import pytest

from solver.systems.chips import PRESETS, get_hardware

# name: (printed bf16 TFLOP/s, sparse?, HBM bytes, HBM bytes/s)
PRINTED = {
    "a100-40gb": (624, True, 40e9, 1555e9),
    "a100-80gb": (624, True, 80e9, 2039e9),
    "h100-sxm": (1979, True, 80e9, 3.35e12),
    "h100-pcie": (1513, True, 80e9, 2.0e12),
    "h200": (1979, True, 141e9, 4.8e12),
    "tpu-v4": (275, False, 32 * 2**30, 1.2e12),
    "tpu-v5e": (197, False, 16e9, 819e9),
    "tpu-v5p": (459, False, 95 * 2**30, 2765e9),  # the current page: "HBM capacity per chip (GiB) 95"
    # nvidia.com/en-us/data-center/hgx (HGX B200, 8 GPUs, with sparsity): "FP16/BF16 Tensor Core 36 PFLOPS";
    # nvidia.com/en-us/data-center/dgx-b200: "1,440GB total GPU memory", "64TB/s HBM3e bandwidth"; ÷ 8
    "b200": (36_000 / 8, True, 1440e9 / 8, 64e12 / 8),
    # nvidia.com/en-us/data-center/gb200-nvl72: rack "FP16/BF16 Tensor Core² 360 PFLOPS" (sparse),
    # "13.4 TB HBM3E | 576 TB/s" ÷ 72; superchip "372 GB HBM3E | 16 TB/s" ÷ 2
    "gb200": (360_000 / 72, True, 372e9 / 2, 576e12 / 72),
    # AMD CDNA 3 white paper, Table 2: "BF16 | BF16 (SPARSITY) 1,307.4 TF | 2,614.9 TF", "192 GB HBM3",
    # "up to 5.3 TB/sec" (AMD prints the dense figure beside the sparse one)
    "mi300x": (1307.4, False, 192e9, 5.3e12),
    # docs.cloud.google.com/tpu/docs/v6e: "918 TFLOPs", "HBM capacity per chip 32 GB", "1638 GBps"
    "tpu-v6e": (918, False, 32e9, 1638e9),
}

#: Every stored figure of the four newer presets, from its primary source as printed:
#: figure -> (printed number in base units, chips the figure covers, printed with sparsity?, where).
#: The NVIDIA pages are known here through verbatim copies (the reference library holds no copy of
#: nvidia.com itself); AMD's white paper and ROCm page and Google's v6e page were read directly.
HGX, DGX = "https://www.nvidia.com/en-us/data-center/hgx/", "https://www.nvidia.com/en-us/data-center/dgx-b200/"
NVL72 = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
CDNA3 = "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-white-paper.pdf"
V6E = "https://docs.cloud.google.com/tpu/docs/v6e"
PRIMARY = {
    "b200": {
        "peak_flops.bf16": (36e15, 8, True, HGX),  # "FP16/BF16 Tensor Core 36 PFLOPS"
        "peak_flops.fp16": (36e15, 8, True, HGX),
        "peak_flops.fp8": (72e15, 8, True, HGX),  # "FP8/FP6 Tensor Core 72 PFLOPS"
        "peak_flops.int8": (72e15, 8, True, HGX),  # "INT8 Tensor Core 72 POPS"
        "peak_flops.fp4": (72e15, 8, False, HGX),  # "FP4 Tensor Core 144 PFLOPS | 72 PFLOPS" (sparse | dense)
        "peak_flops.tf32": (18e15, 8, True, HGX),  # "TF32 Tensor Core 18 PFLOPS"
        "peak_flops.fp64": (296e12, 8, False, HGX),  # "FP64/FP64 Tensor Core 296 TFLOPS"
        "hbm_bytes": (1440e9, 8, False, DGX),  # "1,440GB total GPU memory" (GB = 10^9)
        "hbm_bandwidth": (64e12, 8, False, DGX),  # "64TB/s HBM3e bandwidth"
    },
    "gb200": {
        "peak_flops.bf16": (360e15, 72, True, NVL72),  # "FP16/BF16 Tensor Core² 360 PFLOPS"
        "peak_flops.fp16": (360e15, 72, True, NVL72),
        "peak_flops.fp8": (720e15, 72, True, NVL72),  # "FP8/FP6 Tensor Core² 720 PFLOPS"
        "peak_flops.int8": (720e15, 72, True, NVL72),  # "INT8 Tensor Core² 720 POPS"
        "peak_flops.fp4": (720e15, 72, False, NVL72),  # "NVFP4 Tensor Core 1,440 | 720 PFLOPS" (sparse | dense)
        "peak_flops.tf32": (180e15, 72, True, NVL72),  # "TF32 Tensor Core² 180 PFLOPS"
        "peak_flops.fp64": (2880e12, 72, False, NVL72),  # "FP64 / FP64 Tensor Core 2,880 TFLOPS" (was 3,240)
        "hbm_bytes": (372e9, 2, False, NVL72),  # superchip "372 GB HBM3E | 16 TB/s"
        "hbm_bandwidth": (576e12, 72, False, NVL72),  # rack "13.4 TB HBM3E | 576 TB/s"
    },
    "mi300x": {  # dense column of "X | X (SPARSITY)"
        "peak_flops.bf16": (1307.4e12, 1, False, CDNA3), "peak_flops.fp16": (1307.4e12, 1, False, CDNA3),
        "peak_flops.fp8": (2614.9e12, 1, False, CDNA3), "peak_flops.int8": (2614.9e12, 1, False, CDNA3),
        "peak_flops.tf32": (653.7e12, 1, False, CDNA3),  # Table 2 (Table 1 prints 490.3)
        "peak_flops.fp32": (163.4e12, 1, False, CDNA3),  # "FP32 MATRIX 163.4 TF"
        "peak_flops.fp64": (163.4e12, 1, False, CDNA3),  # "FP64 MATRIX 163.4 TF"
        "hbm_bytes": (192e9, 1, False, CDNA3),  # "192 GB HBM3"
        "hbm_bandwidth": (5.3e12, 1, False, CDNA3),  # "up to 5.3 TB/sec"
    },
    "tpu-v6e": {
        "peak_flops.bf16": (918e12, 1, False, V6E), "peak_flops.int8": (1836e12, 1, False, V6E),
        "hbm_bytes": (32e9, 1, False, V6E), "hbm_bandwidth": (1638e9, 1, False, V6E),
    },
}
#: the link figure as printed (both directions added) and the ports it spreads over
PRIMARY_LINK = {
    "b200": (1.8e12, 1, 1, HGX),  # "NVLink GPU-to-GPU Bandwidth 1.8 TB/s"; "1.8TB/s bidirectional throughput per GPU"
    "gb200": (3.6e12, 2, 1, NVL72),  # superchip "NVLink Bandwidth 3.6 TB/s" (2 GPUs)
    "mi300x": (896e9, 1, 1, CDNA3),  # "P2P RING PEAK AGGREGATE I/O BANDWIDTH 896 GB/s (8 GPUs)", 7 x16 links
    "tpu-v6e": (800e9, 1, 4, V6E),  # "Bidirectional ... ICI bandwidth (per chip) 800 GBps", "ICI ports per chip 4"
}

#: the link figure each vendor prints (bytes/s), and over how many ports it is spread
PRINTED_LINK = {
    "a100-40gb": (600e9, 1), "a100-80gb": (600e9, 1), "h100-sxm": (900e9, 1), "h100-pcie": (600e9, 1),
    "h200": (900e9, 1), "b200": (1.8e12, 1), "gb200": (1.8e12, 1), "mi300x": (7 * 128e9, 1),
    "tpu-v4": (2400e9 / 8, 6), "tpu-v5e": (400e9, 4), "tpu-v5p": (1200e9, 6), "tpu-v6e": (800e9, 4),
}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_preset_matches_its_source(name):
    printed, sparse, hbm, bw = PRINTED[name]
    h = get_hardware(name)
    assert h.peak("bf16") == printed * 1e12 / (2 if sparse else 1)
    assert h.hbm_bytes == hbm and h.hbm_bandwidth == bw
    assert h.source and h.link_bandwidth > 0
    if sparse:
        assert "sparsity" in h.notes  # each NVIDIA preset says its figures were halved


def test_all_presets_listed_and_consistent():
    assert set(PRESETS) == set(PRINTED)
    for h in PRESETS.values():
        assert h.peak("fp16") == h.peak("bf16") if "fp16" in h.peak_flops else True
        assert h.peak_flops.get("int8", h.peak("bf16")) >= h.peak("bf16")
        assert h.critical_intensity("bf16") == h.peak("bf16") / h.hbm_bandwidth


def test_aliases_and_unknown_names():
    from solver.errors import SolverInputError

    assert get_hardware("H100").name == "h100-sxm" and get_hardware("a100").name == "a100-40gb"
    assert get_hardware("tpu_v5e").name == "tpu-v5e"
    with pytest.raises(SolverInputError):
        get_hardware("h300")
    with pytest.raises(SolverInputError):
        get_hardware("tpu-v4").peak("fp32")  # no published fp32 peak: asked to give --peak-flops


@pytest.mark.parametrize("name", sorted(PRINTED_LINK))
def test_link_per_direction_is_the_printed_figure_halved_per_port(name):
    """Link figures are per direction everywhere: printed bidirectional ÷ ports ÷ 2, and the named link agrees."""
    from solver.systems.interconnect import get_link

    printed, ports = PRINTED_LINK[name]
    h = get_hardware(name)
    assert h.link_bandwidth == pytest.approx(printed / ports / 2, rel=1e-12)
    assert get_link(h.link).per_direction == pytest.approx(h.link_bandwidth, rel=1e-12)
    assert h.link_printed


def test_new_presets_are_dense_and_sourced():
    assert get_hardware("b200").peak("fp8") == 72e15 / 8 / 2 and get_hardware("gb200").peak("fp4") == 1440e15 / 72 / 2
    assert get_hardware("mi300x").peak("fp8") == 2614.9e12 and get_hardware("trillium").name == "tpu-v6e"
    for name in ("b200", "gb200", "mi300x", "tpu-v6e"):
        h = get_hardware(name)
        assert h.source and "ense" in h.notes


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_every_figure_of_the_newer_presets_is_its_primary_source_made_dense_and_per_chip(name):
    """Each figure = the vendor's printed number ÷ the chips it covers ÷ 2 where printed with sparsity."""
    h = get_hardware(name)
    for figure, (printed, chips, sparse, _url) in PRIMARY[name].items():
        assert h.figure(figure) == pytest.approx(printed / chips / (2 if sparse else 1), rel=1e-12), figure
    assert set(PRIMARY[name]) == {f"peak_flops.{d}" for d in h.peak_flops} | {"hbm_bytes", "hbm_bandwidth"}
    printed, chips, ports, _url = PRIMARY_LINK[name]
    assert h.link_bandwidth == pytest.approx(printed / chips / ports / 2, rel=1e-12)


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_the_presets_citations_name_the_same_printed_figures_and_pages(name):
    """The source each preset records (qkv hw show) is the one above, figure for figure."""
    h = get_hardware(name)
    cited = {f: c for c in h.citations for f in c.figures}
    assert set(cited) == set(PRIMARY[name]) | {"link_bandwidth"}
    for figure, (printed, chips, sparse, url) in PRIMARY[name].items():
        c = cited[figure]
        assert (c.value, c.chips, c.sparse, c.url) == (printed, chips, sparse, url), figure
        assert c.printed and c.seen and c.stored() == pytest.approx(h.figure(figure), rel=1e-12)
    link = cited["link_bandwidth"]
    assert (link.value, link.chips, link.ports, link.directions) == (*PRIMARY_LINK[name][:3], 2)
    assert link.url == PRIMARY_LINK[name][3] and link.stored() == pytest.approx(h.link_bandwidth, rel=1e-12)
    for c in h.citations:  # a capacity says how the vendor's unit is read
        assert ("hbm_bytes" in c.figures) == bool(c.unit)


def test_gb200_fp64_is_the_current_pages_2880_not_the_earlier_3240():
    assert get_hardware("gb200").peak("fp64") == 2880e12 / 72 == 80e12 / 2  # rack ÷ 72 = superchip ÷ 2


def test_v6e_ici_halved_is_the_pages_own_all_reduce_bandwidth_per_chip():
    """Google's v6e table: 'All-reduce bandwidth per Pod 102.4 TB/s' over a 256-chip pod = 400 GB/s per chip,
    the bidirectional 800 GBps halved (one direction, all 4 ports)."""
    h = get_hardware("tpu-v6e")
    assert h.link_bandwidth * 4 == pytest.approx(102.4e12 / 256, rel=1e-12)


def test_mi300x_link_from_lanes_and_rate():
    """AMD's white paper: x16 Infinity Fabric links at up to 32 Gbps per lane, bi-directional; 7 of them."""
    per_link_each_way = 16 * 32e9 / 8
    assert get_hardware("mi300x").link_bandwidth == 7 * per_link_each_way == 896e9 / 2


def test_mi300x_device_figure_is_rocm_smis_bytes_not_the_datasheets_gb():
    """rocm-smi --showmeminfo vram on an MI300X: 'VRAM Total Memory (B): 205822885888' (public transcripts),
    a whole number of MiB, below both 192·10^9 (the data sheet's "192 GB") and 192·2^30."""
    h = get_hardware("mi300x")
    assert h.hbm("device") == 205_822_885_888 and h.hbm("device") % 2**20 == 0
    assert h.hbm("device") > h.hbm("datasheet") == 192e9 and h.hbm("device") < 192 * 2**30
