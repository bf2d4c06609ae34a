"""solver.kernels.residual_graph: the graph walk against the closed forms read off each formula
(hypothesis over forms, depths and sub-layers per layer), and a numerical check that the skip path
of pre-LN carries x to y unnormalised while post-LN's does not."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.kernels.residual_graph import FORMS, analyse, stack_graph

#: per sub-layer: norms on the skip path, norms in all, whether F reads a norm's output
PER_SUBLAYER = {"pre": (0, 1, True), "post": (1, 1, False), "sandwich": (0, 2, True), "reordered": (0, 1, False)}


@given(st.sampled_from(FORMS), st.integers(1, 60), st.integers(1, 3))
def test_graph_walk_matches_the_closed_forms(form, layers, subs):
    a = analyse(stack_graph(form, layers, subs))
    skip, norms, reads = PER_SUBLAYER[form]
    n = layers * subs
    assert a.sublayers == n
    assert a.skip_norms == skip * n
    assert a.norms == norms * n
    # post-LN: every sub-layer but the first reads the norm that ended the sub-layer before it
    assert a.normalised_inputs == (n if reads else (n - 1 if form == "post" else 0))
    assert a.output_normalised == (form == "post")
    assert a.norms_with_final == a.norms + (form != "post")


def _layernorm(x):
    return (x - x.mean()) / x.std()


@pytest.mark.parametrize("form", ["pre", "post"])
def test_skip_path_numerically(form):
    """With F = 0 (the sub-layer switched off), a block is its skip path: pre-LN gives y = x exactly,
    post-LN y = N(x), a normalised vector; the graph says the same (0 norms on pre-LN's skip path)."""
    x = np.random.default_rng(0).normal(3.0, 5.0, 16)

    def block(v):
        f = np.zeros_like
        return v + f(_layernorm(v)) if form == "pre" else _layernorm(v + f(v))

    y = block(x)
    crosses = analyse(stack_graph(form, 1, 1)).skip_norms > 0
    assert np.allclose(y, x) != crosses
    assert np.isclose(y.std(), 1.0) == crosses


def test_bad_arguments():
    with pytest.raises(ValueError):
        stack_graph("middle", 2)
    with pytest.raises(ValueError):
        stack_graph("pre", 0)
