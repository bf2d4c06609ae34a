"""Quantisation error by hand (solver.kernels.quant_error) against a NumPy implementation written here.

np.round rounds half to even, like the solver; the NumPy code works in float64 on values that are
multiples of 1/64, so both agree exactly or to float rounding.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.kernels.quant_error import fp8_training_memory, quantize_matrix, quantize_vector, smoothquant


def np_absmax(x, bits):
    qmax = 2 ** (bits - 1) - 1
    scale = np.abs(x).max() / qmax
    q = np.clip(np.round(x / scale), -qmax, qmax)
    return q, q * scale


def np_zero_point(x, bits):
    qmax = 2**bits - 1
    lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
    scale = (hi - lo) / qmax
    z = np.clip(np.round(-lo / scale), 0, qmax)
    q = np.clip(np.round(x / scale) + z, 0, qmax)
    return q, (q - z) * scale


vec = st.lists(st.integers(-640, 640), min_size=1, max_size=12).filter(lambda v: len(set(v)) > 1)


@given(v=vec, bits=st.sampled_from([4, 8]), scheme=st.sampled_from(["absmax", "zero-point"]))
def test_vector_matches_numpy(v, bits, scheme):
    x = np.array(v, dtype=np.float64) / 64
    q, deq = (np_absmax if scheme == "absmax" else np_zero_point)(x, bits)
    r = quantize_vector([Fraction(a, 64) for a in v], bits, scheme)
    # ties at exactly .5 may land apart under float64 division; compare where NumPy is not on a tie
    assert r.breakdown["max_abs_error"] == pytest.approx(np.abs(deq - x).max(), abs=1e-9) or _tie(x, bits, scheme)
    if not _tie(x, bits, scheme):
        assert r.breakdown["codes"] == q.astype(int).tolist()


def _tie(x, bits, scheme) -> bool:
    if scheme == "absmax":
        t = x / (np.abs(x).max() / (2 ** (bits - 1) - 1))
    else:
        lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
        t = np.concatenate([x / ((hi - lo) / (2**bits - 1)), [-lo / ((hi - lo) / (2**bits - 1))]])
    return bool(np.any(np.isclose(np.abs(t) % 1, 0.5)))


def test_pinned_hand_worked():
    """int8 absmax of [0.5, −1.2, 3.1, 0.05]: scale 3.1/127; 0.5·127/3.1 = 20.48 → 20 → 20·3.1/127 = 0.48819…,
    error 0.5 − 62/127 = 1.5/127 = 0.011811. int4 zero-point: scale 4.3/15, z = round(1.2·15/4.3 = 4.186) = 4."""
    r = quantize_vector(["0.5", "-1.2", "3.1", "0.05"], 8, "absmax")
    assert r.breakdown["codes"] == [20, -49, 127, 2] and r.answer == Fraction(3, 254)
    z = quantize_vector(["0.5", "-1.2", "3.1", "0.05"], 4, "zero-point")
    assert z.breakdown["zero_point"] == 4 and z.breakdown["scale"] == Fraction(43, 150)


@given(rows=st.lists(st.lists(st.integers(-640, 640), min_size=4, max_size=4), min_size=2, max_size=4))
def test_granularity_against_numpy_and_ordered(rows):
    W = np.array(rows, dtype=np.float64) / 64
    if not np.all(np.abs(W).max(axis=1) > 0):
        return
    r = quantize_matrix([[Fraction(a, 64) for a in row] for row in rows], 8, "absmax", block=2)
    _, t = np_absmax(W, 8)
    ch = np.vstack([np_absmax(row, 8)[1] for row in W])
    blk = [np_absmax(W[i, s:s + 2], 8)[1] if np.abs(W[i, s:s + 2]).max() > 0 else W[i, s:s + 2]
           for i in range(len(W)) for s in (0, 2)]
    assert float(r.breakdown["mse_per_tensor"]) == pytest.approx(((t - W) ** 2).mean(), abs=1e-12)
    assert float(r.breakdown["mse_per_channel"]) == pytest.approx(((ch - W) ** 2).mean(), abs=1e-12)
    assert float(r.breakdown["mse_per_block"]) == pytest.approx(
        np.mean([((b - W[i // 2, (i % 2) * 2:(i % 2) * 2 + 2]) ** 2).mean() for i, b in enumerate(blk)]), abs=1e-12)


@given(x=st.lists(st.floats(0.01, 100), min_size=1, max_size=6), alpha=st.floats(0, 1), seed=st.integers(0, 99))
def test_smoothquant_keeps_the_product_and_matches_numpy(x, alpha, seed):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.01, 10, size=len(x))
    r = smoothquant(x, w, alpha)
    s = np.array(x) ** alpha / w ** (1 - alpha)
    assert np.allclose(r.answer, s, rtol=1e-12)
    X, W = rng.normal(size=(3, len(x))), rng.normal(size=(len(x), 2))
    assert np.allclose((X / s) @ (s[:, None] * W), X @ W)
    if alpha == 0.5:
        assert np.allclose(r.breakdown["x_absmax_after"], r.breakdown["w_absmax_after"])


def test_fp8_memory_recipes():
    """TE: 2 + 1 + 4 + 2 + 4 + 4 = 17 bytes; DeepSeek-V3: 1 + 4 + 4 + 2 + 2 = 13; bf16 mixed: 16."""
    assert fp8_training_memory(10**9, "fp8-te").answer == 17 * 10**9
    assert fp8_training_memory(10**9, "fp8-deepseek-v3").breakdown["bytes_per_parameter"] == 13
    assert fp8_training_memory(1, "bf16-mixed").answer == 16
