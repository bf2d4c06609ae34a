"""Positional encodings: sinusoidal PE, RoPE, ALiBi, learned tables; both implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels import numpy_ref as R
from solver.kernels import torch_ref as T
from tests.strategies import finite_arrays, rope_vectors

impls = st.sampled_from(["numpy", "torch"])


def rope(impl: str, x: np.ndarray, positions, pairing: str) -> np.ndarray:
    if impl == "numpy":
        return R.rope(x, np.asarray(positions), pairing=pairing)
    return T.rope(torch.from_numpy(x), torch.tensor(positions), pairing=pairing).numpy()


# ----------------------------------------------------------------------------- sinusoidal


def pairs(pe: np.ndarray, d: int, layout: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (sin, cos) columns of each frequency that has both (odd d: the last one has no cos)."""
    if layout == "interleaved":
        return [(pe[:, 2 * i], pe[:, 2 * i + 1]) for i in range(d // 2)]
    n_sin = (d + 1) // 2
    return [(pe[:, i], pe[:, n_sin + i]) for i in range(d // 2)]


@given(st.integers(2, 10), st.integers(0, 12), st.sampled_from(["interleaved", "concat"]), impls)
def test_pe_at_pos_plus_k_is_a_rotation_of_pe_at_pos(d, k, layout, impl):
    """(sin(a + b), cos(a + b)) = [[cos b, sin b], [−sin b, cos b]] (sin a, cos a): for every
    frequency, PE(pos + k) is PE(pos) rotated by an angle that depends on k only, and since
    PE(0) = (0, 1) that rotation can be read off PE(k) itself."""
    n = 8
    mod = R if impl == "numpy" else T
    pe = np.asarray(mod.sinusoidal_pe(n + k, d, layout=layout))
    for s, c in pairs(pe, d, layout):
        sin_k, cos_k = s[k], c[k]
        for pos in range(n):
            rotated = np.array([[cos_k, sin_k], [-sin_k, cos_k]]) @ np.array([s[pos], c[pos]])
            np.testing.assert_allclose(rotated, [s[pos + k], c[pos + k]], atol=1e-12)


@given(st.floats(0, 1000), st.integers(1, 12), st.data())
def test_pe_value_is_the_vaswani_formula(pos, d, data):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i + 1) = cos(same), written out here."""
    dim = data.draw(st.integers(0, d - 1))
    i = dim // 2
    angle = pos / 10000 ** (2 * i / d)
    expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    assert R.pe_value(pos, dim, d) == pytest.approx(expected, abs=1e-14)


def test_pe_by_hand():
    """d = 4: frequencies 1/10000^0 = 1 and 1/10000^(2/4) = 1/100.
    Interleaved PE(3) = (sin 3, cos 3, sin 0.03, cos 0.03); concat PE(3) = (sin 3, sin 0.03,
    cos 3, cos 0.03). Odd d = 5: frequencies 1, 10000^(−2/5), 10000^(−4/5); the last column
    (interleaved) or the third sine (concat) is sin(pos·10000^(−4/5)) with no cosine partner."""
    s3, c3, s03, c03 = math.sin(3), math.cos(3), math.sin(0.03), math.cos(0.03)
    np.testing.assert_allclose(R.sinusoidal_pe(4, 4)[3], [s3, c3, s03, c03], rtol=1e-15)
    np.testing.assert_allclose(R.sinusoidal_pe(4, 4, layout="concat")[3], [s3, s03, c3, c03], rtol=1e-15)
    last = math.sin(3 / 10000 ** 0.8)
    assert R.sinusoidal_pe(4, 5)[3, 4] == pytest.approx(last, rel=1e-15)
    np.testing.assert_allclose(
        R.sinusoidal_pe(4, 5, layout="concat")[3], [s3, math.sin(3 / 10000**0.4), last, c3, math.cos(3 / 10000**0.4)]
    )
    v, tr = R.pe_value(3, 2, 4, return_trace=True)
    assert tr.names() == ["angle", "output"] and tr["angle"].value == pytest.approx(0.03) and v == pytest.approx(s03)
    _, tr = R.sinusoidal_pe(4, 5, return_trace=True)
    assert tr.names() == ["angle", "output"] and tr["angle"].value.shape == (4, 3)


def test_pe_errors():
    with pytest.raises(SolverInputError) as e:
        R.pe_value(1, 4, 4)
    assert e.value.param == "dim"
    with pytest.raises(SolverInputError) as e:
        R.sinusoidal_pe(3, 4, layout="sines-first")
    assert e.value.param == "layout"


# ----------------------------------------------------------------------------- RoPE


@given(rope_vectors(), st.integers(0, 200), st.integers(0, 200), st.integers(-100, 100), st.sampled_from(["interleaved", "half"]), impls)
def test_rope_scores_depend_only_on_the_offset(qk, m, n, shift, pairing, impl):
    """⟨RoPE(q, m), RoPE(k, n)⟩ = ⟨RoPE(q, m + s), RoPE(k, n + s)⟩: R(mθ)ᵀR(nθ) = R((n − m)θ)."""
    q, k = qk
    shift = max(shift, -min(m, n))
    a = (rope(impl, q, [m], pairing) * rope(impl, k, [n], pairing)).sum()
    b = (rope(impl, q, [m + shift], pairing) * rope(impl, k, [n + shift], pairing)).sum()
    assert a == pytest.approx(b, abs=1e-9)


@given(st.data(), impls)
def test_rope_is_a_rotation_and_the_identity_at_position_zero(data, impl):
    q, _ = data.draw(rope_vectors())
    pos = data.draw(st.integers(0, 10_000))
    for pairing in ("interleaved", "half"):
        np.testing.assert_allclose(np.linalg.norm(rope(impl, q, [pos], pairing)), np.linalg.norm(q), rtol=1e-12)
        np.testing.assert_array_equal(rope(impl, q, [0], pairing), q)


@given(st.data(), impls)
def test_rope_interleaved_is_complex_multiplication(data, impl):
    """The RoFormer / LLaMA-complex view: pairs (x₂ᵢ, x₂ᵢ₊₁) as x₂ᵢ + i·x₂ᵢ₊₁, times e^{i·p·θᵢ}."""
    n, d = data.draw(st.integers(1, 4)), 2 * data.draw(st.integers(1, 4))
    x = data.draw(finite_arrays((n, d)))
    pos = np.array(data.draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)))
    z = x[:, 0::2] + 1j * x[:, 1::2]
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    rotated = z * np.exp(1j * pos[:, None] * theta)
    expected = np.stack([rotated.real, rotated.imag], axis=-1).reshape(n, d)
    np.testing.assert_allclose(rope(impl, x, pos.tolist(), "interleaved"), expected, atol=1e-12)


@given(st.data(), impls)
def test_the_two_rope_pairings_differ_by_a_fixed_permutation(data, impl):
    """With P = (0, d/2, 1, d/2 + 1, …): half(x)[P] = interleaved(x[P]). The same weights do
    not give the same model under the two conventions unless the head dims are permuted."""
    n, h = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    d = 2 * h
    x = data.draw(finite_arrays((n, d)))
    pos = data.draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    perm = np.ravel(np.column_stack([np.arange(h), np.arange(h) + h]))
    np.testing.assert_allclose(rope(impl, x, pos, "half")[:, perm], rope(impl, x[:, perm], pos, "interleaved"), atol=1e-12)


def test_rope_by_hand():
    """d = 2, θ₀ = 1: x = (1, 0) at position 1 becomes (cos 1, sin 1); d = 4, half pairing,
    x = (1, 0, 0, 0) at position 2: pair (0, 2) rotates by 2·θ₀ = 2 → (cos 2, 0, sin 2, 0)."""
    out, tr = R.rope(np.array([[1.0, 0.0]]), [1], return_trace=True)
    assert tr.names() == ["angle", "cos", "sin", "output"]
    np.testing.assert_allclose(out, [[math.cos(1), math.sin(1)]], rtol=1e-15)
    x = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(R.rope(x, pairing="half")[2], [math.cos(2), 0, math.sin(2), 0], atol=1e-16)
    with pytest.raises(SolverInputError) as e:
        R.rope(np.ones((2, 3)))
    assert e.value.param == "x"


# ----------------------------------------------------------------------------- ALiBi, learned


def test_alibi_slopes_for_8_heads_are_powers_of_one_half():
    """h = 8: start and ratio 2^(−8/8) = 1/2, so slopes 1/2, 1/4, …, 1/256 (exact in binary)."""
    assert R.alibi_slopes(8).tolist() == [1 / 2**k for k in range(1, 9)]
    assert T.alibi_slopes(8).tolist() == [1 / 2**k for k in range(1, 9)]


def test_alibi_slopes_for_a_non_power_of_two():
    """h = 6: the 4-head slopes 2^(−2), 2^(−4), 2^(−6), 2^(−8), then the 1st and 3rd of the
    8-head slopes, 2^(−1) and 2^(−3)."""
    assert R.alibi_slopes(6).tolist() == [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]


@given(st.integers(1, 64))
def test_alibi_slopes_are_distinct_powers_of_two_roots(h):
    """Every slope lies in (0, 1), they are distinct, and the first p (largest power of two ≤ h)
    are geometric with ratio 2^(−8/p)."""
    s = R.alibi_slopes(h)
    p = 2 ** int(math.log2(h))
    assert len(s) == h and len(set(s.tolist())) == h and np.all((s > 0) & (s < 1))
    np.testing.assert_allclose(s[1:p] / s[: p - 1], 2 ** (-8 / p), rtol=1e-12)


@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 3))
def test_alibi_bias_entries(h, n, extra):
    """B[h, i, j] = −slope_h · (i + m − n − j) for keys not after the query, −∞ after it."""
    m = n + extra
    b, slopes = R.alibi_bias(h, n, m), R.alibi_slopes(h)
    for head in range(h):
        for i in range(n):
            for j in range(m):
                dist = i + m - n - j
                if dist >= 0:
                    assert b[head, i, j] == pytest.approx(-slopes[head] * dist, rel=1e-15)
                else:
                    assert b[head, i, j] == -math.inf
    sym = R.alibi_bias(h, n, causal=False)
    np.testing.assert_array_equal(sym, np.swapaxes(sym, -1, -2))


def test_learned_pe_is_a_table_lookup():
    table = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(R.learned_pe(table, [2, 0]), [[6, 7, 8], [0, 1, 2]])
    np.testing.assert_array_equal(T.learned_pe(torch.from_numpy(table), [3]).numpy(), [[9, 10, 11]])
    with pytest.raises(SolverInputError) as e:
        R.learned_pe(table, [4])
    assert e.value.param == "positions"
