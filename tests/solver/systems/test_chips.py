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
    # HGX B200 datasheet: 8-GPU totals with sparsity (BF16 36 PF, 1,440 GB, 64 TB/s) ÷ 8
    "b200": (36_000 / 8, True, 1440e9 / 8, 64e12 / 8),
    # GB200 NVL72 datasheet: 72-GPU totals with sparsity (BF16 360 PF, 576 TB/s) ÷ 72; HBM 372 GB per 2-GPU superchip
    "gb200": (360_000 / 72, True, 372e9 / 2, 576e12 / 72),
    "mi300x": (1307.4, False, 192e9, 5.3e12),  # AMD prints the dense column beside the sparse one
    "tpu-v6e": (918, False, 32e9, 1638e9),
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
