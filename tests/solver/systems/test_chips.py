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
    "tpu-v5p": (459, False, 95e9, 2765e9),
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
