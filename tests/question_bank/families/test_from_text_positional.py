"""The keys of ``positional.pe_value``, ``positional.pe_rotation`` and ``positional.rope``, recomputed
from the text a student reads.

``pe_value``: d and PE(pos, j) are parsed; with the text's formula (dimensions from 0, pair index
i = ⌊j/2⌋, sin for even j, cos for odd, radians) the value is computed. ``pe_rotation``: the statement's
four-decimal figures sin(ωp), cos(ωp) (and, when printed, cos(ωk), sin(ωk)) are parsed; when they are not
printed the text asks for them "computed to four decimal places", so they are computed from ω = 10000^(-2i/d)
and rounded to four decimals; then sin(ω(p+k)) = sin ωp cos ωk + cos ωp sin ωk (cos(ω(p+k)) = cos cos - sin sin
for an odd dimension), and the printed figures are checked to be the sin and cos of ωp to four decimals.
``rope``: x, p, d and the pairing the text states ((x₂ᵢ, x₂ᵢ₊₁) interleaved, or (xᵢ, x_(i+d/2)) halves) are
parsed and each pair is rotated as a complex number (torch.polar) by p·θᵢ.

The named mistakes (degrees, sin/cos swapped, rotated backwards) are recomputed from the text too.
"""

from __future__ import annotations

import math
import re

import torch

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    rounded,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_kernels import (
    find,
    vector,
)


def pe_value(text: str) -> float:
    if "PE(pos, 2i) = sin(pos/10000^(2i/d)) and PE(pos, 2i+1) = cos(pos/10000^(2i/d))" not in text or \
            "numbered from 0" not in text or "radians" not in text:
        raise Unreadable("the encoding's convention is not stated")
    d = find(r"d = d_model = (\d+)", text, int)
    m = re.search(r"compute PE\((\d+), (\d+)\)", text)
    if m is None:
        raise Unreadable("no PE(pos, j) asked")
    pos, j = int(m[1]), int(m[2])
    if j >= d:
        raise Unreadable(f"dimension {j} of a {d}-wide encoding")
    angle = pos / 10000 ** (2 * (j // 2) / d)
    return math.sin(angle) if j % 2 == 0 else math.cos(angle)


def pe_rotation(text: str) -> float:
    d, i = find(r"d_model = (\d+)", text, int), find(r"frequency index i = (\d+)", text, int)
    p, k = find(r"position p = (\d+)", text, int), find(r"for k = (\d+)", text, int)
    omega = 10000 ** (-2 * i / d)
    sp = find(r"= sin\(ωp\) = (-?\d+(?:\.\d+)?)", text)
    cp = find(r"= cos\(ωp\) = (-?\d+(?:\.\d+)?)", text)
    for printed, exact in ((sp, math.sin(omega * p)), (cp, math.cos(omega * p))):
        if float(rounded(exact, 4)) != printed:
            raise Unreadable(f"a printed figure {printed} is not the exact {exact:.6f} to four decimals")
    if "cos(ωk) = " in text:
        ck, sk = find(r"cos\(ωk\) = (-?\d+(?:\.\d+)?)", text), find(r"sin\(ωk\) = (-?\d+(?:\.\d+)?)", text)
    elif "computed to four decimal places" in text:
        ck, sk = (float(rounded(f(omega * k), 4)) for f in (math.cos, math.sin))
    else:
        raise Unreadable("cos(ωk), sin(ωk) are neither printed nor asked to a precision")
    m = re.search(r"compute PE\(p \+ k, (\d+)\) = PE\((\d+), (\d+)\)", text)
    if m is None or int(m[2]) != p + k or int(m[1]) != int(m[3]) or int(m[1]) // 2 != i:
        raise Unreadable("the dimension or position asked does not match p + k and i")
    return sp * ck + cp * sk if int(m[1]) % 2 == 0 else cp * ck - sp * sk


def rope(text: str) -> list[float]:
    x = torch.tensor(vector("x", text), dtype=torch.float64)
    d, p = find(r"of a (\d+)-dimensional query", text, int), find(r"at position p = (\d+)", text, int)
    if x.numel() != d or "θᵢ = 10000^(-2i/d)" not in text or "(a cos φ - b sin φ, a sin φ + b cos φ)" not in text:
        raise Unreadable("the rotation is not fully stated")
    if "(x₂ᵢ, x₂ᵢ₊₁)" in text:
        a, b = x[0::2], x[1::2]
    elif "(xᵢ, x_(i+d/2))" in text:
        a, b = x[: d // 2], x[d // 2:]
    else:
        raise Unreadable("the pairing is not stated")
    theta = 10000 ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    z = torch.complex(a, b) * torch.polar(torch.ones_like(theta), p * theta)
    out = torch.empty(d, dtype=torch.float64)
    if "(x₂ᵢ, x₂ᵢ₊₁)" in text:
        out[0::2], out[1::2] = z.real, z.imag
    else:
        out[: d // 2], out[d // 2:] = z.real, z.imag
    return out.tolist()


#: RoPE's key is a one-row matrix
RECOMPUTE = {"positional.pe_value": pe_value, "positional.pe_rotation": pe_rotation,
             "positional.rope": lambda t: [rope(t)]}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """PE(1, 1) = cos(1) = 0.540 for any d; RoPE of [1 1] at p = 1 (θ₀ = 1): (cos 1 - sin 1, sin 1 + cos 1)."""
    head = ("The sinusoidal positional encoding is PE(pos, 2i) = sin(pos/10000^(2i/d)) and PE(pos, 2i+1) = "
            "cos(pos/10000^(2i/d)), with dimensions numbered from 0 and angles in radians.\n\n")
    assert round(pe_value(head + "For d = d_model = 16, compute PE(1, 1)."), 3) == 0.540
    y = rope("Rotary position embedding (RoPE) rotates each pair (x₂ᵢ, x₂ᵢ₊₁) of a 2-dimensional query at position p "
             "by the angle p θᵢ, θᵢ = 10000^(-2i/d): (a, b) → (a cos φ - b sin φ, a sin φ + b cos φ) (radians).\n\n"
             "Apply RoPE to x = [1 1] at position p = 1.")
    assert [round(v, 2) for v in y] == [-0.30, 1.38]


def _pe_slip(text: str, degrees: bool = False, swapped: bool = False) -> float:
    """PE(pos, j) with the angle read in degrees, or with sin and cos swapped."""
    d = find(r"d = d_model = (\d+)", text, int)
    pos, j = (int(x) for x in re.search(r"compute PE\((\d+), (\d+)\)", text).groups())
    angle = pos / 10000 ** (2 * (j // 2) / d)
    angle = math.radians(angle) if degrees else angle
    return math.sin(angle) if (j % 2 == 0) != swapped else math.cos(angle)


def rope_at(text: str, sign: int = 1) -> list[float]:
    """RoPE as the text states it, written out pair by pair, with the angle's sign flipped for sign = -1."""
    p = find(r"at position p = (\d+)", text, int)
    x = vector("x", text)
    d = len(x)
    out = list(x)
    pairs = [(2 * i, 2 * i + 1) for i in range(d // 2)] if "(x₂ᵢ, x₂ᵢ₊₁)" in text else \
        [(i, i + d // 2) for i in range(d // 2)]
    for i, (u, v) in enumerate(pairs):
        phi = sign * p * 10000 ** (-2 * i / d)
        out[u] = x[u] * math.cos(phi) - x[v] * math.sin(phi)
        out[v] = x[u] * math.sin(phi) + x[v] * math.cos(phi)
    return out


#: fid -> misconception id -> the value its label names, from the text
MISTAKES = {
    "positional.pe_value": {"degrees": lambda t: _pe_slip(t, degrees=True),
                            "sin_cos_swapped": lambda t: _pe_slip(t, swapped=True)},
    "positional.rope": {"rotated_backwards": lambda t: [rope_at(t, sign=-1)]},
}


globals().update(key_tests(RECOMPUTE, FIDS, "positional", mistakes=MISTAKES))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
