"""The exact SymPy path against the float path (solver.kernels.numpy_ref), and exact invariants.

The two paths are written independently (SymPy on Matrices of rationals, NumPy on float64
arrays); on small integer/rational inputs they must agree to 1e-12 at every step.
"""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels import numpy_ref as N
from solver.kernels import sympy_ref as R

TOL = 1e-12

small_ints = st.integers(-3, 3)
small_rationals = st.fractions(min_value=-3, max_value=3, max_denominator=4)


def matrices(rows, cols, elements=small_ints):
    return st.lists(st.lists(elements, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


@st.composite
def qkv_problems(draw):
    n, m, d, dv = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    return draw(matrices(n, d)), draw(matrices(m, d)), draw(matrices(m, dv, small_rationals))


def as_float(value):
    return np.asarray(R.to_floats(value), dtype=np.float64)


def assert_steps_match(exact_trace, float_trace):
    """Every step of both traces, in the same order, equal to TOL (±inf where both are)."""
    assert exact_trace.names() == float_trace.names()
    for e, f in zip(exact_trace, float_trace, strict=True):
        ev = as_float(e.value).ravel()
        fv = np.asarray(f.value, dtype=np.float64).ravel()
        assert ev.shape == fv.shape, e.name
        both_inf = np.isinf(ev) & np.isinf(fv) & (np.sign(ev) == np.sign(fv))
        with np.errstate(invalid="ignore"):
            close = np.abs(ev - fv) <= TOL * np.maximum(1, np.abs(fv))
        assert np.all(both_inf | close), (e.name, ev, fv)


def fl(rows):
    return np.array([[float(x) for x in r] for r in rows])


# ------------------------------------------------------------------ exact() never goes through a float


def test_exact_reads_decimal_text_not_binary():
    assert R.exact("0.1") == sp.Rational(1, 10)
    assert R.exact(0.1) == sp.Rational(1, 10)  # the decimal repr, not 3602879701896397/2**55
    assert R.exact("1/3") == sp.Rational(1, 3)
    assert R.exact("1e-5") == sp.Rational(1, 100000)
    assert R.exact(Fraction(2, 6)) == sp.Rational(1, 3)
    assert R.exact(float("-inf")) == -sp.oo
    with pytest.raises(SolverInputError):
        R.exact("__import__('os')")


# ------------------------------------------------------------------ exact == float


@settings(max_examples=20)
@given(qkv_problems(), st.booleans())
def test_attention_exact_matches_float(problem, causal):
    q, k, v = problem
    if causal and len(q) > len(k):  # bottom-right causal: the first rows would block every key
        causal = False
    (_, _), etr = R.attention(q, k, v, causal=causal, return_trace=True)
    (_, _), ftr = N.attention(fl(q), fl(k), fl(v), causal=causal, return_trace=True)
    assert_steps_match(etr, ftr)


@settings(max_examples=20)
@given(qkv_problems(), st.data())
def test_attention_masks_exact_match_float_in_both_conventions(problem, data):
    q, k, v = problem
    n, m = len(q), len(k)
    keep = data.draw(matrices(n, m, st.booleans()).filter(lambda rows: all(any(r) for r in rows)))
    block = [[not x for x in r] for r in keep]
    (_, w_keep), etr = R.attention(q, k, v, keep, mask_convention="keep", return_trace=True)
    (_, w_block) = R.attention(q, k, v, block, mask_convention="block")
    assert w_keep == w_block
    (_, _), ftr = N.attention(fl(q), fl(k), fl(v), np.array(keep), mask_convention="keep", return_trace=True)
    assert_steps_match(etr, ftr)
    for i in range(n):  # blocked weights are exactly 0
        for j in range(m):
            if not keep[i][j]:
                assert w_keep[i, j] == 0


@given(st.lists(small_rationals, min_size=1, max_size=5), st.sampled_from([1, 2, Fraction(1, 2)]))
def test_softmax_exact_matches_float(x, t):
    _, etr = R.softmax(x, temperature=t, return_trace=True)
    _, ftr = N.softmax(np.array([[float(v) for v in x]]), temperature=float(t), return_trace=True)
    assert_steps_match(etr, ftr)


@given(matrices(2, 3, small_rationals), st.sampled_from(["0", "1e-5", "1/10"]))
def test_layer_norm_exact_matches_float(x, eps):
    if eps == "0" and any(len(set(r)) == 1 for r in x):
        eps = "1e-5"  # a constant row with eps = 0 divides by zero (tested below)
    gamma, beta = [1, 2, Fraction(1, 2)], [0, -1, 1]
    _, etr = R.layer_norm(x, gamma, beta, eps=eps, return_trace=True)
    _, ftr = N.layer_norm(fl(x), np.array([1, 2, 0.5]), np.array([0.0, -1, 1]), eps=float(Fraction(eps)),
                          return_trace=True)
    assert_steps_match(etr, ftr)


@given(matrices(2, 4, small_rationals))
def test_rms_norm_exact_matches_float(x):
    _, etr = R.rms_norm(x, eps="1e-6", return_trace=True)
    _, ftr = N.rms_norm(fl(x), eps=1e-6, return_trace=True)
    assert_steps_match(etr, ftr)


@given(st.integers(0, 50), st.integers(1, 9), st.sampled_from(["interleaved", "concat"]))
def test_pe_exact_matches_float(pos, d_model, layout):
    table, etr = R.sinusoidal_pe(pos + 1, d_model, layout=layout, return_trace=True)
    _, ftr = N.sinusoidal_pe(pos + 1, d_model, layout=layout, return_trace=True)
    assert_steps_match(etr, ftr)
    for dim in range(d_model):
        assert R.pe_value(pos, dim, d_model, layout=layout) == table[pos, dim]
        assert abs(float(R.pe_value(pos, dim, d_model, layout=layout)) - N.pe_value(pos, dim, d_model, layout=layout)) < TOL


@given(matrices(2, 4, small_rationals), st.lists(st.integers(0, 20), min_size=2, max_size=2),
       st.sampled_from(["interleaved", "half"]))
def test_rope_exact_matches_float(x, positions, pairing):
    _, etr = R.rope(x, positions, pairing=pairing, return_trace=True)
    _, ftr = N.rope(fl(x), np.array(positions, dtype=float), pairing=pairing, return_trace=True)
    assert_steps_match(etr, ftr)


def test_multi_head_exact_matches_float():
    x = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
    wq = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0], [0, 0, 0, 1]]
    wo = [[1, 0], [0, 1], [1, 1], [Fraction(1, 2), 0]]
    (_, _), etr = R.multi_head_attention(x, wq, np.eye(4, dtype=int), wq, wo, n_heads=2, causal=True,
                                         return_trace=True)
    (_, _), ftr = N.multi_head_attention(fl(x), fl(wq), np.eye(4), fl(wq), fl(wo), n_heads=2, causal=True,
                                         return_trace=True)
    assert_steps_match(etr, ftr)


# ------------------------------------------------------------------ exact invariants


@settings(max_examples=20)
@given(qkv_problems())
def test_attention_rows_sum_to_exactly_one(problem):
    q, k, v = problem
    _, w = R.attention(q, k, v)
    for i in range(w.rows):
        assert sp.cancel(sum(w.row(i))) == 1


@given(st.lists(small_rationals, min_size=1, max_size=5), small_rationals)
def test_softmax_shift_invariant_exactly(x, c):
    """softmax(x + c) = softmax(x): exactly, even as expressions (the shifted values coincide)."""
    a = R.softmax(x)
    b = R.softmax([v + c for v in x])
    assert a == b
    assert sp.cancel(sum(a)) == 1


@given(matrices(1, 4, small_rationals))
def test_layer_norm_output_has_mean_zero_and_biased_variance_one_at_eps_zero(x):
    if len(set(x[0])) == 1:
        return
    y = R.layer_norm(x, eps=0)
    assert sp.expand(sum(y)) == 0
    assert sp.expand(sum(v**2 for v in y) / 4) == 1  # divides by d: the biased variance


@given(st.integers(0, 30), st.sampled_from(["interleaved", "half"]))
def test_rope_preserves_norm_exactly(pos, pairing):
    """A rotation keeps ‖x‖² exactly: after expanding, sin² + cos² = 1 leaves Σ xᵢ²."""
    x = [[1, 2, -1, Fraction(1, 2)]]
    y = R.rope(x, [pos], pairing=pairing)
    norm2 = sp.expand(sum(v**2 for v in y))
    for a in set(R.rope(x, [pos], return_trace=True)[1]["angle"].value):
        norm2 = sp.expand(norm2.subs(sp.sin(a) ** 2, 1 - sp.cos(a) ** 2))
    assert norm2 == sum(v**2 for v in R.matrix(x))


def test_pe_exact_values():
    """PE(1, 0) = sin(1) and PE(1, 1) = cos(1) for any d (frequency 10000^0 = 1); with d = 4,
    PE(1, 2) = sin(1/100) since 10000^(2/4) = 100; concat puts cos(1) at index d/2."""
    assert R.pe_value(1, 0, 4) == sp.sin(1)
    assert R.pe_value(1, 1, 4) == sp.cos(1)
    assert R.pe_value(1, 2, 4) == sp.sin(sp.Rational(1, 100))
    assert R.pe_value(1, 2, 4, layout="concat") == sp.cos(1)
    # d = 5, concat: dims 0-2 are the sines of i = 0, 1, 2; dims 3-4 the cosines of i = 0, 1
    assert R.pe_value(1, 4, 5, layout="concat") == sp.cos(1 / sp.Integer(10000) ** sp.Rational(2, 5))
    assert R.pe_value(1, 4, 5) == sp.sin(1 / sp.Integer(10000) ** sp.Rational(4, 5))


def test_fully_masked_row_is_an_error_or_zero():
    q = k = v = [[1, 0], [0, 1]]
    with pytest.raises(SolverInputError) as e:
        R.attention(q, k, v, [[1, 1], [0, 0]])
    assert e.value.param == "mask"
    (out, w) = R.attention(q, k, v, [[1, 1], [0, 0]], empty_rows="zero")
    assert list(w.row(1)) == [0, 0] and list(out.row(1)) == [0, 0]


def test_shape_errors_name_the_argument():
    with pytest.raises(SolverInputError) as e:
        R.attention([[1, 0]], [[1, 0, 0]], [[1]])
    assert e.value.param == "k"
    with pytest.raises(SolverInputError) as e:
        R.attention([[1, 0]], [[1, 0]], [[1], [2]])
    assert e.value.param == "v"
    with pytest.raises(SolverInputError) as e:
        R.layer_norm([[1, 1]], eps=0)
    assert e.value.param == "eps"


def test_evalf_trace_gives_requested_digits():
    _, tr = R.attention([[1, 0]], [[1, 0], [0, 1]], [[1], [0]], return_trace=True)
    ev = R.evalf_trace(tr, 30)
    w = ev["weights"].value[0, 0]
    # e^(1/√2) / (e^(1/√2) + 1), computed independently with mpmath at 40 digits
    import mpmath

    mpmath.mp.dps = 40
    ref = mpmath.e ** (1 / mpmath.sqrt(2)) / (mpmath.e ** (1 / mpmath.sqrt(2)) + 1)
    assert abs(mpmath.mpf(str(w)) - ref) < mpmath.mpf(10) ** -28
