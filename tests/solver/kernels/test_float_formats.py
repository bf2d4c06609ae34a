"""Number formats by hand (solver.kernels.float_formats) against PyTorch's own dtypes.

torch.finfo gives max and smallest normal; the smallest subnormal is the bit pattern 0…01 read
through ``Tensor.view``; every FP8 bit pattern is enumerated and must encode back to itself; the
nearest representable value is PyTorch's cast (from float32, so there is no double rounding); the
spacing is the gap to the next value in the enumerated list. FP4 (e2m1) has no PyTorch arithmetic
dtype: its eight magnitudes are typed from the OCP MX specification (§5.3.3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.kernels.float_formats import (
    FORMATS,
    block_format_bytes,
    encode,
    float_format,
    mx_quantize,
    round_to_format,
    spacing,
)

TORCH = {"fp32": (torch.float32, torch.int32), "fp16": (torch.float16, torch.int16),
         "bf16": (torch.bfloat16, torch.int16), "e4m3": (torch.float8_e4m3fn, torch.uint8),
         "e5m2": (torch.float8_e5m2, torch.uint8)}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_extremes_match_torch(name):
    dt, it = TORCH[name]
    f = FORMATS[name]
    fi = torch.finfo(dt)
    assert f.max_normal == Fraction(fi.max) and f.min_normal == Fraction(fi.smallest_normal)
    one = torch.tensor([1], dtype=it).view(dt).double().item()  # bit pattern 0…01: smallest subnormal
    assert f.min_subnormal == Fraction(one)
    assert f.bits == torch.tensor([], dtype=dt).element_size() * 8


@pytest.mark.parametrize("name", ["e4m3", "e5m2"])
def test_every_fp8_pattern_encodes_back_and_spacing_is_the_gap(name):
    dt, _ = TORCH[name]
    f = FORMATS[name]
    vals = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dt).double().tolist()
    finite = sorted({Fraction(v) for v in vals if math.isfinite(v)})
    for bits, v in enumerate(vals):
        if not math.isfinite(v) or (v == 0 and bits):
            continue
        s, e, m = encode(f, Fraction(v))
        assert (s << 7) | (e << f.mantissa_bits) | m == bits
        assert round_to_format(f, Fraction(v)) == Fraction(v)
    pos = [v for v in finite if v > 0]
    for a, b in zip(pos, pos[1:], strict=False):
        assert spacing(f, a) == b - a
    assert max(finite) == f.max_normal


@pytest.mark.parametrize("name", sorted(TORCH))
@given(x=st.floats(-1e5, 1e5, width=32, allow_nan=False))
def test_nearest_is_torchs_cast(name, x):
    dt, _ = TORCH[name]
    got = torch.tensor([x], dtype=torch.float32).to(dt).double().item()
    mine = round_to_format(FORMATS[name], Fraction(x))
    assert (mine == got) if math.isfinite(got) else (isinstance(mine, float) and mine == got)


def test_fp4_values_from_the_mx_spec():
    f = FORMATS["fp4"]
    grid = [Fraction(v) for v in ("0", "0.5", "1", "1.5", "2", "3", "4", "6")]
    assert f.max_normal == 6 and f.min_subnormal == Fraction(1, 2) and f.min_normal == 1
    assert sorted({round_to_format(f, Fraction(k, 8)) for k in range(0, 64)}) == grid


def test_pinned_hand_worked():
    """E4M3 of 0.3: ⌊log₂ 0.3⌋ = −2, spacing 2^(−2−3) = 1/32, 0.3·32 = 9.6 → 10 → 10/32 = 0.3125."""
    r = float_format("e4m3", "0.3")
    assert r.answer == Fraction(5, 16) and r.breakdown["spacing"] == Fraction(1, 32)
    assert r.breakdown["bits_pattern"] == "0 0101 010"
    assert float_format("e5m2").answer == 57344 and float_format("e4m3", ask="min-subnormal").answer == Fraction(1, 512)
    assert float_format("e4m3", "465", overflow="ieee").answer == "nan"
    assert float_format("e4m3", "465").answer == 448  # PyTorch's cast saturates float8_e4m3fn


def test_block_bytes_from_the_spec():
    """MXFP4: 32 FP4 elements + one 8-bit E8M0 scale = 136 bits per 32 = 4.25 bits = 0.53125 bytes."""
    assert block_format_bytes("mxfp4").answer == Fraction(136, 32 * 8)
    assert block_format_bytes("nvfp4").answer == Fraction(4 * 16 + 8, 16 * 8)
    assert block_format_bytes("mxfp4", 64).answer == 64 * 4 // 8 + 2


def _np_mx_fp4(v: np.ndarray):
    """Independent MX FP4: scale 2^(floor(log2 amax) − 2), nearest of the e2m1 grid (ties to even index), clip."""
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    scale = 2.0 ** (np.floor(np.log2(np.abs(v).max())) - 2)
    out = []
    for x in v / scale:
        a = min(abs(x), 6.0)
        d = np.abs(grid - a)
        best = np.flatnonzero(d == d.min())
        k = best[0] if len(best) == 1 else [i for i in best if i % 2 == 0][0]
        out.append(math.copysign(grid[k], x))
    return scale, np.array(out)


@given(v=st.lists(st.integers(-4000, 4000), min_size=1, max_size=32).filter(any))
def test_mx_fp4_block_against_numpy(v):
    x = np.array(v, dtype=np.float64) / 64
    scale, codes = _np_mx_fp4(x)
    r = mx_quantize([Fraction(int(a), 64) for a in v], "fp4")
    assert float(r.breakdown["scale"]) == scale
    assert r.breakdown["elements"] == codes.tolist()
    assert float(r.answer) == pytest.approx(np.abs(codes * scale - x).max(), abs=1e-12)


@given(v=st.lists(st.integers(-4000, 4000), min_size=1, max_size=32).filter(any))
def test_mx_fp8_block_against_torch(v):
    x = torch.tensor(v, dtype=torch.float32) / 64
    shared = math.floor(math.log2(x.abs().max().item())) - 8
    codes = (x / 2.0**shared).to(torch.float8_e4m3fn).float()  # PyTorch saturates at ±448
    r = mx_quantize([Fraction(int(a), 64) for a in v], "e4m3")
    assert r.breakdown["shared_exponent"] == shared and r.breakdown["elements"] == codes.tolist()
