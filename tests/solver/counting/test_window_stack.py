"""Sliding-window stacks (solver.counting.window.window_stack) against a reachability simulation, and
soft-capping (solver.kernels.softcap) against its definition and Gemma 2's caps."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.counting.window import window_stack
from solver.errors import SolverInputError
from solver.kernels.softcap import GEMMA2_CAPS, softcap


def reach(n, layers, window, sinks=0):
    """Positions the last token of n depends on after ``layers`` windowed layers (BFS over the masks)."""
    seen = {n - 1}
    for _ in range(layers):
        seen = {j for p in seen for j in range(n) if (p - window < j <= p) or (j < sinks and j <= p)}
    return seen


@given(st.integers(1, 5), st.integers(1, 8), st.integers(0, 3))
def test_strict_field_matches_reachability(L, W, s):
    n = L * W + 10
    seen = reach(n, L, W, s)
    r = window_stack(L, W, sinks=s, seq=n)
    assert min(j for j in seen if j >= s) == n - 1 - r.answer
    assert r.breakdown["receptive_field_span"] == L * W
    assert r.breakdown["beyond_reach"] == n - len(seen)


def test_mistral_numbers():
    """Mistral 7B: W = 4096, 32 layers: 131,040 strict, 131,072 (≈ 131K, the paper's figure) as span."""
    assert window_stack(32, 4096).answer == 131_040
    assert window_stack(32, 4096, convention="span").answer == 131_072
    assert window_stack(32, 4096, sinks=4, seq=32_768).breakdown["kv_tokens_per_layer"] == 4100
    with pytest.raises(SolverInputError):
        window_stack(2, 4, convention="both")


@given(st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=8), st.floats(0.5, 100))
def test_softcap_is_bounded_odd_and_monotone(xs, cap):
    y = softcap(xs, cap).answer
    assert all(abs(v) <= cap for v in y)
    for a, b, ya, yb in zip(xs, xs[1:], y, y[1:], strict=False):
        if a < b:
            assert ya <= yb
    assert softcap([-v for v in xs], cap).answer == pytest.approx([-v for v in y])


def test_softcap_against_gemma2_config():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Gemma2Config()
    assert (cfg.attn_logit_softcapping, cfg.final_logit_softcapping) == (GEMMA2_CAPS["attention"], GEMMA2_CAPS["final"])
    r = softcap([60.0], 50.0)
    assert r.answer[0] == pytest.approx(50 * math.tanh(1.2))
    assert r.breakdown["gradient"][0] == pytest.approx(1 / math.cosh(1.2) ** 2)
