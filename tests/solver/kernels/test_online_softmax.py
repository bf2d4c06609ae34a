"""Online softmax (solver.kernels.online_softmax) against the full softmax, computed here in NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels.online_softmax import online_softmax

score = st.floats(-30, 30, allow_nan=False)
blocks = st.lists(st.lists(score, min_size=1, max_size=5), min_size=1, max_size=5)


def full_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


@given(blocks)
def test_block_by_block_gives_the_full_softmax(bs):
    """However the row is cut into blocks, the online weights are the full softmax's."""
    row = [x for b in bs for x in b]
    r = online_softmax(bs)
    np.testing.assert_allclose(r.answer, full_softmax(row), rtol=1e-12, atol=1e-15)
    assert r.breakdown["final_max"] == max(row)


@given(blocks, st.data())
def test_rescaled_partial_output_is_softmax_times_v(bs, data):
    """o/ℓ after the last block is softmax(x)·V, V drawn at random."""
    row = [x for b in bs for x in b]
    v = data.draw(st.lists(st.lists(st.floats(-5, 5), min_size=2, max_size=2), min_size=len(row), max_size=len(row)))
    r = online_softmax(bs, v)
    np.testing.assert_allclose(r.breakdown["output"], full_softmax(row) @ np.array(v), rtol=1e-9, atol=1e-12)


@given(blocks)
def test_running_sum_is_the_sum_at_the_running_max(bs):
    """Invariant after each block j: ℓ_j = Σ_{seen} e^(x − m_j)."""
    r = online_softmax(bs)
    seen = []
    for b, state in zip(bs, r.breakdown["blocks"], strict=True):
        seen += b
        assert state["m"] == max(seen)
        assert state["l"] == pytest.approx(float(np.exp(np.array(seen) - max(seen)).sum()), rel=1e-12)


def test_two_blocks_by_hand():
    """Blocks [1, 2] then [3, 0]. Block 1: m = 2, ℓ = e^-1 + 1. Block 2: m = 3, rescale e^-1,
    ℓ = e^-1(e^-1 + 1) + e^0 + e^-3 = e^-2 + e^-1 + 1 + e^-3; weight of 3 = 1/ℓ."""
    import sympy as sp

    r = online_softmax([[1, 2], [3, 0]], exact=True)
    ell = sp.exp(-2) + sp.exp(-1) + 1 + sp.exp(-3)
    assert sp.simplify(r.breakdown["final_sum"] - ell) == 0
    assert sp.simplify(r.answer[2] - 1 / ell) == 0
    assert sp.simplify(r.breakdown["blocks"][1]["rescale"] - sp.exp(-1)) == 0
    assert r.breakdown["equal_to_full_softmax"] is True


def test_empty_block_is_refused():
    with pytest.raises(SolverInputError):
        online_softmax([[1.0], []])
