"""solver.kernels.masks: conventions, conversions, builders, and the fully-masked-row policy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

from solver.errors import SolverInputError
from solver.kernels import masks
from solver.kernels import numpy_ref as R

bool_masks = hnp.arrays(np.bool_, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))


@given(bool_masks)
def test_block_is_the_negation_of_keep(mask):
    np.testing.assert_array_equal(masks.to_keep(mask, masks.BLOCK), ~mask)
    np.testing.assert_array_equal(masks.to_keep(mask, masks.KEEP), mask)
    np.testing.assert_array_equal(masks.to_keep(torch.from_numpy(mask), "block").numpy(), ~mask)


@given(bool_masks, st.sampled_from([masks.KEEP, masks.BLOCK]))
def test_additive_is_zero_where_kept_and_minus_inf_where_blocked(mask, convention):
    """to_additive then from_additive is the identity on KEEP masks, for both libraries."""
    keep = mask if convention == masks.KEEP else ~mask
    add = masks.to_additive(mask, convention)
    assert add.dtype == np.float64
    assert np.all(add[keep] == 0.0) and np.all(np.isneginf(add[~keep]))
    np.testing.assert_array_equal(masks.from_additive(add), keep)
    add_t = masks.to_additive(torch.from_numpy(mask), convention, dtype=torch.float64)
    np.testing.assert_array_equal(add_t.numpy(), add)
    np.testing.assert_array_equal(masks.from_additive(add_t).numpy(), keep)


def test_integer_masks_count_as_boolean_and_floats_pass_through():
    """The command line writes 1 = may attend, 0 = blocked; a float mask is additive as given."""
    np.testing.assert_array_equal(masks.to_keep(np.array([[1, 0], [0, 1]])), [[True, False], [False, True]])
    with pytest.raises(SolverInputError) as e:
        masks.to_keep(np.array([[1, 2]]))
    assert e.value.param == "mask"
    add = np.array([[0.0, -1e9], [0.5, 0.0]])
    assert masks.to_additive(add) is add
    with pytest.raises(SolverInputError):
        masks.to_keep(add)
    with pytest.raises(SolverInputError) as e:
        masks.to_keep(np.array([True]), "True=keep")
    assert e.value.param == "mask_convention"


def test_from_additive_reads_a_textbook_minus_1e9_mask_only_with_a_threshold():
    add = np.array([0.0, -1e9, -np.inf, -3.0])
    np.testing.assert_array_equal(masks.from_additive(add), [True, True, False, True])
    np.testing.assert_array_equal(masks.from_additive(add, threshold=-1e9), [True, False, False, True])


@given(st.integers(1, 6), st.integers(0, 4))
def test_causal_mask_matches_torch_causal_biases(n, extra):
    """Bottom-right alignment == torch's causal_lower_right; top-left == causal_upper_left
    (is_causal); square masks are the lower triangle."""
    m = n + extra
    np.testing.assert_array_equal(masks.causal_mask(n, m), causal_lower_right(n, m)._materialize().numpy())
    np.testing.assert_array_equal(
        masks.causal_mask(n, m, align="top_left"), causal_upper_left(n, m)._materialize().numpy()
    )
    np.testing.assert_array_equal(masks.causal_mask(n), np.tril(np.ones((n, n), dtype=bool)))


def test_causal_mask_with_fewer_keys_than_queries_leaves_leading_rows_empty():
    """n = 3 queries, m = 2 keys, bottom-right: query 0 sits at position −1 and sees nothing."""
    np.testing.assert_array_equal(masks.causal_mask(3, 2), [[False, False], [True, False], [True, True]])


@given(st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_padding_mask_keeps_exactly_the_first_length_keys(lengths):
    n = max(lengths)
    pm = masks.padding_mask(lengths, n)
    assert pm.shape == (len(lengths), 1, n)
    assert pm.sum(axis=-1)[:, 0].tolist() == lengths
    for b, length in enumerate(lengths):
        assert pm[b, 0, :length].all() and not pm[b, 0, length:].any()


def test_padding_mask_rejects_impossible_lengths():
    for bad in ([0, 2], [4], [1.5]):
        with pytest.raises(SolverInputError) as e:
            masks.padding_mask(bad, 3)
        assert e.value.param == "lengths"


@given(st.integers(1, 8), st.integers(1, 5))
def test_sliding_window_counts(n, window):
    """Causal: query i sees min(i + 1, window) keys, the last of them itself; non-causal:
    every key within distance window − 1."""
    sw = masks.sliding_window_mask(n, window)
    assert sw.sum(axis=1).tolist() == [min(i + 1, window) for i in range(n)]
    assert not (sw & ~masks.causal_mask(n)).any()
    sym = masks.sliding_window_mask(n, window, causal=False)
    np.testing.assert_array_equal(sym, sym.T)
    assert sym.sum(axis=1).tolist() == [
        sum(1 for j in range(n) if abs(i - j) <= window - 1) for i in range(n)
    ]


@given(st.lists(hnp.arrays(np.bool_, (2, 3)), min_size=1, max_size=3))
def test_combine_is_the_and_of_keep_masks(ms):
    expected = np.ones((2, 3), dtype=bool)
    for m in ms:
        for i in range(2):
            for j in range(3):
                expected[i, j] = expected[i, j] and m[i, j]
    np.testing.assert_array_equal(masks.combine(*ms, None), expected)
    assert masks.combine(None) is None


def test_causal_and_padding_combine_broadcasts_to_batch():
    """(n, n) causal AND (B, 1, n) padding → (B, n, n): sequence 0 of length 2 keeps
    keys 0..min(i, 1) in row i."""
    c = masks.combine(masks.causal_mask(3), masks.padding_mask([2, 3], 3))
    assert c.shape == (2, 3, 3)
    np.testing.assert_array_equal(c[0], [[1, 0, 0], [1, 1, 0], [1, 1, 0]])
    np.testing.assert_array_equal(c[1], np.tril(np.ones((3, 3))))


def test_minus_1e9_hides_a_fully_masked_row_while_minus_inf_reports_it():
    """The module docstring's claim: with −1e9 a fully masked row attends to all keys as if
    unmasked (the shift cancels in the softmax), with −∞ (or a boolean mask) it is an error."""
    q = np.array([[1.0, 0.0], [0.0, 2.0]])
    k = np.array([[1.0, 1.0], [2.0, -1.0], [0.0, 1.0]])
    v = np.eye(3)
    keep = np.array([[True, True, False], [False, False, False]])
    soft = np.where(keep, 0.0, -1e9)
    _, w = R.attention(q, k, v, soft)
    _, w_unmasked = R.attention(q, k, v)
    np.testing.assert_allclose(w[1], w_unmasked[1], rtol=1e-6)
    with pytest.raises(SolverInputError, match="row 1 of the mask blocks every key") as e:
        R.attention(q, k, v, keep)
    assert e.value.param == "mask"
    with pytest.raises(SolverInputError, match="row 1"):
        R.attention(q, k, v, masks.to_additive(keep))


def test_bad_policy_and_shape_are_one_line_errors():
    q = np.ones((2, 2))
    with pytest.raises(SolverInputError) as e:
        R.attention(q, q, q, np.ones((2, 2), bool), empty_rows="nan")
    assert e.value.param == "empty_rows"
    with pytest.raises(SolverInputError) as e:
        R.attention(q, q, q, np.ones((3, 3), bool))
    assert e.value.param == "mask" and "\n" not in str(e.value)
