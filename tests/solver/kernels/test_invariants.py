"""Invariants of the attention, softmax and normalisation kernels, for both implementations."""

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
from tests.strategies import (
    attention_shapes,
    dtypes,
    finite_arrays,
    keep_masks,
    qkv_arrays,
    tol,
)

IMPLS = {"numpy": (R, np.asarray), "torch": (T, lambda a: torch.from_numpy(np.ascontiguousarray(a)))}
impls = st.sampled_from(sorted(IMPLS))


def run(impl: str, fn: str, *arrays, **kw):
    """Call ``fn`` of the chosen implementation and bring every array result back to NumPy."""
    mod, conv = IMPLS[impl]
    out = getattr(mod, fn)(*[conv(a) if isinstance(a, np.ndarray) else a for a in arrays], **kw)
    back = lambda r: r.numpy() if isinstance(r, torch.Tensor) else r  # noqa: E731
    return tuple(back(r) for r in out) if isinstance(out, tuple) else back(out)


# ----------------------------------------------------------------------------- attention


@given(st.data(), impls)
def test_rows_sum_to_one_and_masked_weights_are_exactly_zero(data, impl):
    """Every row with a kept key sums to 1; blocked entries are exactly 0 (exp(−∞)); rows the
    mask and the causal mask together empty are all zeros under empty_rows="zero"."""
    shape, dtype, q, k, v = data.draw(qkv_arrays())
    keep = data.draw(keep_masks(shape.scores))
    causal = data.draw(st.booleans())
    _, w = run(impl, "attention", q, k, v, keep, causal=causal, empty_rows="zero")
    kept = np.broadcast_to(keep, w.shape)
    if causal:
        kept = kept & (np.arange(shape.m)[None, :] <= np.arange(shape.n)[:, None] + shape.m - shape.n)
    has_key = kept.any(axis=-1)
    np.testing.assert_allclose(w.sum(axis=-1), np.where(has_key, 1.0, 0.0), **tol(dtype))
    assert np.all(w[~kept] == 0.0)
    assert np.all(w >= 0.0)


@given(st.data(), impls)
def test_softmax_is_shift_invariant(data, impl):
    """softmax(x + c) = softmax(x) for any constant c added to a whole slice."""
    dtype = data.draw(dtypes)
    x = data.draw(finite_arrays((2, data.draw(st.integers(1, 6))), dtype, 10.0))
    c = data.draw(st.floats(-1e3, 1e3, width=32))
    np.testing.assert_allclose(
        run(impl, "softmax", x + np.asarray(c, dtype=dtype)), run(impl, "softmax", x), rtol=1e-4, atol=1e-4
    )


@given(st.data(), impls)
def test_softmax_temperature_divides_the_logits(data, impl):
    x = data.draw(finite_arrays((data.draw(st.integers(1, 6)),)))
    temp = data.draw(st.floats(0.1, 10.0))
    np.testing.assert_allclose(run(impl, "softmax", x, temperature=temp), run(impl, "softmax", x / temp), rtol=1e-12)


@given(st.data(), impls)
def test_attention_without_positions_is_permutation_equivariant(data, impl):
    """Permuting the tokens (rows of Q and of K, V together) permutes the output rows the same
    way; permuting only the keys with their values changes nothing."""
    shape, dtype, q, k, v = data.draw(qkv_arrays(shape=attention_shapes(square=True)))
    perm = np.array(data.draw(st.permutations(range(shape.n))))
    out, _ = run(impl, "attention", q, k, v)
    out_p, _ = run(impl, "attention", q[..., perm, :], k[..., perm, :], v[..., perm, :])
    np.testing.assert_allclose(out_p, out[..., perm, :], **tol(dtype))
    out_kv, _ = run(impl, "attention", q, k[..., perm, :], v[..., perm, :])
    np.testing.assert_allclose(out_kv, out, **tol(dtype))


@given(st.data(), impls)
def test_huge_scores_give_no_nan_or_inf(data, impl):
    """Scores around ±1e4: the max-subtraction keeps exp finite; the weights are (near) one-hot."""
    dtype = data.draw(dtypes)
    n, d = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    signs = st.sampled_from([-1.0, 1.0])
    q = 100.0 * np.array(data.draw(st.lists(signs, min_size=n * d, max_size=n * d)), dtype=dtype).reshape(n, d)
    k = 100.0 * np.array(data.draw(st.lists(signs, min_size=n * d, max_size=n * d)), dtype=dtype).reshape(n, d)
    v = data.draw(finite_arrays((n, d), dtype))
    out, w = run(impl, "attention", q, k, v, scale=1.0)
    assert np.isfinite(out).all() and np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, **tol(dtype))
    big = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=dtype)
    s = run(impl, "softmax", big)
    assert np.isfinite(s).all()
    np.testing.assert_allclose(s, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


@given(st.data(), impls)
def test_a_fully_masked_row_raises_or_gives_zeros(data, impl):
    shape, dtype, q, k, v = data.draw(qkv_arrays())
    keep = data.draw(keep_masks(shape.scores, allow_empty_rows=False))
    keep = np.broadcast_to(keep, shape.scores).copy()
    row = data.draw(st.integers(0, shape.n - 1))
    keep[..., row, :] = False
    with pytest.raises(SolverInputError, match=f"row {row} of the mask blocks every key") as e:
        run(impl, "attention", q, k, v, keep)
    assert e.value.param == "mask"
    out, w = run(impl, "attention", q, k, v, ~keep, mask_convention="block", empty_rows="zero")
    assert np.all(out[..., row, :] == 0) and np.all(w[..., row, :] == 0)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(np.delete(w, row, axis=-2).sum(axis=-1), 1.0, **tol(dtype))


def test_worked_example_attention_by_hand():
    """Q = K = V = [[1, 0], [0, 1]], d_k = 2, no mask. Scores = I, scaled by 1/√2:
    row 0 weights (e^{1/√2}, 1)/(e^{1/√2} + 1) = (0.66976…, 0.33023…); output row 0 = weights
    (V = I); by symmetry row 1 is the reverse."""
    x = np.eye(2)
    a = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    for impl in IMPLS:
        (out, w), tr = IMPLS[impl][0].attention(IMPLS[impl][1](x), IMPLS[impl][1](x), IMPLS[impl][1](x), return_trace=True)
        assert tr.names() == ["scores", "scaled", "weights", "output"]
        np.testing.assert_allclose(np.asarray(tr["scaled"].value), np.eye(2) / math.sqrt(2), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(w), [[a, 1 - a], [1 - a, a]], rtol=1e-14)
        np.testing.assert_allclose(np.asarray(out), [[a, 1 - a], [1 - a, a]], rtol=1e-14)
    assert a == pytest.approx(0.669761549, abs=1e-9)


def test_attention_trace_names_follow_the_documented_order():
    q = np.arange(6.0).reshape(3, 2) / 6
    for mod in (R, T):
        conv = IMPLS["numpy" if mod is R else "torch"][1]
        (_, _), tr = mod.attention(conv(q), conv(q), conv(q), causal=True, return_trace=True)
        assert tr.names() == ["scores", "scaled", "masked", "weights", "output"]
        (_, _), tr = mod.multi_head_attention(conv(q), np.eye(2), np.eye(2), np.eye(2), n_heads=2, causal=True, return_trace=True)
        assert tr.names() == ["q", "k", "v", "scores", "scaled", "masked", "weights", "concat", "output"]
        assert tuple(tr["weights"].value.shape) == (2, 3, 3)


def test_dropout_zeroes_or_rescales_weights():
    q = np.linspace(-1, 1, 12).reshape(4, 3)
    (_, w), tr = R.attention(q, q, q, dropout_p=0.5, rng=np.random.default_rng(0), return_trace=True)
    dropped = tr["dropout"].value
    assert np.all((dropped == 0) | np.isclose(dropped, 2 * w))
    assert (dropped == 0).any() and (dropped != 0).any()
    np.testing.assert_allclose(tr["output"].value, dropped @ q)
    with pytest.raises(SolverInputError):
        R.attention(q, q, q, dropout_p=1.0)


def test_shape_errors_name_the_argument():
    q = np.ones((2, 3))
    with pytest.raises(SolverInputError) as e:
        R.attention(q, np.ones((2, 4)), q)
    assert e.value.param == "k"
    with pytest.raises(SolverInputError) as e:
        T.attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(3, 3))
    assert e.value.param == "v"
    with pytest.raises(SolverInputError) as e:
        R.multi_head_attention(np.ones((2, 4)), np.eye(4), np.eye(4), np.eye(4), n_heads=4, n_kv_heads=3)
    assert e.value.param == "n_kv_heads"
    with pytest.raises(SolverInputError) as e:
        R.multi_head_attention(np.ones((2, 4)), np.eye(4), np.eye(4)[:, :3], np.eye(4), n_heads=2, n_kv_heads=1)
    assert e.value.param == "wk"
    with pytest.raises(SolverInputError) as e:
        R.attention([[1, 2], [3]], q, q)
    assert e.value.param == "q"


# ----------------------------------------------------------------------------- normalisation


def test_layer_norm_by_hand():
    """x = (1, 2, 3, 6): μ = 12/4 = 3, σ² = (4 + 1 + 0 + 9)/4 = 3.5 (biased: ÷ d = 4, not 3),
    output (x − 3)/√3.5 = (−2, −1, 0, 3)/√3.5."""
    x = np.array([1.0, 2.0, 3.0, 6.0])
    for mod, conv in IMPLS.values():
        y, tr = mod.layer_norm(conv(x), eps=0.0, return_trace=True)
        assert tr.names() == ["mean", "variance", "normalised", "output"]
        assert float(tr["mean"].value) == 3.0 and float(tr["variance"].value) == 3.5
        np.testing.assert_allclose(np.asarray(y), np.array([-2.0, -1.0, 0.0, 3.0]) / math.sqrt(3.5), rtol=1e-15)


@given(st.data(), impls)
def test_norm_outputs_have_zero_mean_and_unit_variance(data, impl):
    """Without γ, β and with ε = 0 each LayerNorm row has mean 0 and (biased) variance 1;
    each RMSNorm row has mean square 1."""
    x = data.draw(finite_arrays((2, data.draw(st.integers(2, 6)))))
    x = x + 10.0 * np.arange(x.shape[-1])  # entries 3 apart at most: no constant row
    y = run(impl, "layer_norm", x, eps=0.0)
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, rtol=1e-12)
    r = run(impl, "rms_norm", x, eps=0.0)
    np.testing.assert_allclose((r**2).mean(axis=-1), 1.0, rtol=1e-12)


@given(st.data(), impls)
def test_layer_norm_normalises_tokens_batch_norm_normalises_features(data, impl):
    """The contrast: LayerNorm makes every row (token) mean 0; BatchNorm makes every column
    (feature) mean 0 over the batch. The two agree only by accident."""
    x = data.draw(finite_arrays((3, 4))) + np.array([[0.0, 1, 5, 2], [3, 0, 1, 1], [2, 2, 0, 7]])
    np.testing.assert_allclose(run(impl, "layer_norm", x).mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(run(impl, "batch_norm", x).mean(axis=0), 0.0, atol=1e-12)
    assert not np.allclose(run(impl, "layer_norm", x).mean(axis=0), 0.0)


def test_norm_errors():
    with pytest.raises(SolverInputError) as e:
        R.layer_norm(np.ones(3), eps=0.0)
    assert e.value.param == "eps"
    with pytest.raises(SolverInputError) as e:
        T.layer_norm(torch.ones(3), gamma=[1.0, 2.0])
    assert e.value.param == "gamma"
    with pytest.raises(SolverInputError) as e:
        R.rms_norm(np.zeros(2), eps=0.0)
    assert e.value.param == "eps"


@given(st.data(), impls)
def test_swiglu_with_identity_weights_is_silu_times_x(data, impl):
    """W_gate = W_up = W_down = I: SwiGLU(x) = SiLU(x)·x = x²·σ(x), σ written here as 1/(1 + e^−x)."""
    x = data.draw(finite_arrays((1, 4), bound=8.0))
    expected = x * x / (1.0 + np.exp(-x))
    np.testing.assert_allclose(run(impl, "swiglu", x, np.eye(4), np.eye(4), np.eye(4)), expected, rtol=1e-12)
