"""``ModelConfig.dense_layers_of`` counts the dense layers in closed form (issue 28: a config with 2·10⁸
layers took a minute through a per-layer loop); checked against the per-layer rule ``is_moe_layer``
applied to every layer, and answered at once for a huge stack."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from solver.counting.presets import get_config
from tests.timing import assert_within, seconds_of


@given(n=st.integers(0, 400), first=st.integers(0, 50), every=st.integers(1, 6), experts=st.sampled_from([1, 8]))
def test_dense_layers_match_the_per_layer_rule(n, first, every, experts):
    cfg = dataclasses.replace(get_config("mixtral-8x7b"), n_experts=experts, top_k=min(2, experts), first_dense_layers=first if experts > 1 else 0,
                              moe_every=every if experts > 1 else 1)
    assert cfg.dense_layers_of(n) == sum(not cfg.is_moe_layer(i) for i in range(n))


def test_a_huge_stack_is_counted_at_once():
    cfg = dataclasses.replace(get_config("mixtral-8x7b"), first_dense_layers=3, moe_every=2)
    n = 214_748_364
    assert cfg.dense_layers_of(n) == 3 + (n - 3) - ((n // 2) - (3 // 2))  # f dense, then every other layer MoE
    # counted, not looped: 2·10⁸ layers take about what 100 take (the best of 5 each, a ratio: issue 40)
    small = min(seconds_of(lambda: cfg.dense_layers_of(100)) for _ in range(5))
    huge = min(seconds_of(lambda: cfg.dense_layers_of(n)) for _ in range(5))
    assert_within(huge, small, 100, "dense_layers_of(214,748,364) against dense_layers_of(100)", slack=0)


@given(n_layers=st.integers(0, 300), window=st.sampled_from([0, 4, 4096]), every=st.sampled_from([0, 2, 6]),
       n=st.integers(1, 10_000))
def test_window_layers_match_the_per_layer_rule(n_layers, window, every, n):
    cfg = dataclasses.replace(get_config("mistral-7b"), sliding_window=window, global_every=every if window else 0)
    assert cfg.local_layers_of(n_layers) == sum(cfg.is_local_layer(i) for i in range(n_layers))
    assert cfg.attended_over(n, n_layers) == sum(cfg.attended(n, i) for i in range(n_layers))
