"""Issue 11, "wrong or inconsistent today": the matmul critical batch agrees with the bound the
same result reports; decode offers two named models; HBM keeps the device figure beside the
datasheet one.

Independent references: the matmul intensity is recomputed here from the sizes of the three
tensors (meta-device ``numel`` × bytes per element) and 2 FLOPs per multiply-add; the decode
models are written again from their definitions; the device HBM figures are typed from the
nvidia-smi transcripts cited in ``solver.systems.chips``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.chips import Chip, get_hardware, resolve_chip
from solver.systems.inference import decode_step
from solver.systems.roofline import matmul

DTYPE_BYTES = {"bf16": 2, "int8": 1, "fp32": 4}


def tensor_intensity(B: int, D: int, F: int, a: int, w: int) -> Fraction:
    """2·B·D·F FLOPs over the bytes of X[B,D], W[D,F] and Y[B,F] (sizes from meta tensors)."""
    x, wt, y = (torch.empty(*s, device="meta") for s in ((B, D), (D, F), (B, F)))
    return Fraction(2 * B * D * F, a * x.numel() + w * wt.numel() + a * y.numel())


@given(D=st.integers(64, 8192), F=st.integers(64, 8192), act=st.sampled_from(["bf16", "fp32", "int8"]),
       wdt=st.sampled_from(["bf16", "int8", "fp32"]), crit=st.floats(5, 600))
@example(D=600, F=600, act="int8", wdt="int8", crit=599.9999999999999)  # the limit I(∞) = 600 a hair above I*
def test_critical_batch_separates_the_bounds(D, F, act, wdt, crit):
    """Below the exact B* every batch is memory-bound, above it compute-bound (by the tensors' bytes)."""
    chip = Chip(peak_flops=crit * 1e12, bandwidth=1e12)
    b_star = matmul(1, D, F, dtype=act, weight_dtype=wdt, chip=chip).breakdown["critical_batch"]
    a, w = DTYPE_BYTES[act], DTYPE_BYTES[wdt]
    limit = Fraction(2 * D * F, a * (D + F))  # I(B) as B → ∞
    if b_star == math.inf:
        assert limit <= Fraction(crit) * (1 + Fraction(1, 10**9))
        return
    below, above = math.floor(b_star * (1 - 1e-9)), math.ceil(b_star * (1 + 1e-9))
    for B, expected in ((below, "memory"), (above, "compute")):
        if B < 1:
            continue
        r = matmul(B, D, F, dtype=act, weight_dtype=wdt, chip=chip)
        assert r.breakdown["bound"] == expected
        assert (tensor_intensity(B, D, F, a, w) > crit) == (expected == "compute")


def test_int8_weights_bf16_activations_agree_with_the_bound():
    """The issue's case: H100, bf16 peak, int8 weights. 2B/w says B* ≈ 147.7, the exact one 172.6."""
    r = matmul(160, 4096, 4096, dtype="bf16", weight_dtype="int8", chip=resolve_chip("h100"))
    bd = r.breakdown
    assert bd["critical_batch_approx"] == pytest.approx(989.5 / 3.35 * 1 / 2)
    # by hand: I* = 295.373; B* = I*·1·4096² / (2·4096² − I*·2·8192) = I* / (2 − I*·4/4096)
    assert bd["critical_batch"] == pytest.approx(295.3731343 / (2 - 295.3731343 * 4 / 4096), rel=1e-9)
    assert bd["bound"] == "memory" and 160 < bd["critical_batch"]
    assert any("B ≪ D, F approximation" in s.formula for s in r.steps)


def decode_by_definition(N, B, S, X, w, bw, peak, n):
    weights, kv, flops = N * w, B * S * X, 2 * N * B
    total = max((weights + kv) / (n * bw), flops / (n * peak))
    split = kv / (n * bw) + max(weights / (n * bw), flops / (n * peak))
    return total, split


@given(N=st.integers(10**6, 10**11), B=st.integers(1, 512), S=st.integers(1, 32768), X=st.integers(0, 10**6),
       n=st.integers(1, 16), peak=st.floats(1e13, 2e15), bw=st.floats(1e11, 5e12))
def test_decode_models(N, B, S, X, n, peak, bw):
    """Both models by definition; the scaling book's is never below the single roofline, and equal without a cache."""
    chip = Chip(peak_flops=peak, bandwidth=bw)
    total, split = decode_by_definition(N, B, S, X, 2, bw, peak, n)
    a = decode_step(N, B, S, X, chip, chips=n)
    b = decode_step(N, B, S, X, chip, chips=n, model="kv-plus-max")
    assert a.answer == pytest.approx(total, rel=1e-12) and b.answer == pytest.approx(split, rel=1e-12)
    assert b.answer >= a.answer * (1 - 1e-12)
    assert a.breakdown["time_kv_plus_max_model_s"] == b.answer and b.breakdown["time_total_model_s"] == a.answer
    assert "scaling book" in b.convention["model"] and "total" in a.convention["model"]
    if X == 0:
        assert a.answer == pytest.approx(b.answer, rel=1e-12)


def test_decode_model_unknown_is_one_line():
    with pytest.raises(SolverInputError, match="model"):
        decode_step(10**9, 1, 1, 0, Chip(peak_flops=1e15, bandwidth=1e12), model="sum")


def test_hbm_device_figures():
    """nvidia-smi memory.total: H100 81,559 MiB, A100 80GB 81,920 MiB, A100 40GB 40,960 MiB, H200 143,771 MiB."""
    mib = {"h100-sxm": 81_559, "a100-80gb": 81_920, "a100-40gb": 40_960, "h200": 143_771}
    for name, m in mib.items():
        h = get_hardware(name)
        assert h.hbm("device") == m * 1024 * 1024 and h.hbm_device_source
        assert h.hbm("datasheet") == h.hbm_bytes
    assert get_hardware("h100").hbm("device") / 2**30 == pytest.approx(79.647, abs=1e-3)  # not 74.51 GiB
    chip = resolve_chip("h100", hbm_figure="device")
    assert chip.hbm == 85_520_809_984 and chip.origin["hbm_figure"] == "device"
    with pytest.raises(SolverInputError, match="hbm_figure"):
        get_hardware("tpu-v5e").hbm("device")
