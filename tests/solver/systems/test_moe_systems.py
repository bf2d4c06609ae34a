"""Expert-parallel all-to-all and expert capacity (solver.systems.moe_systems) against a token-by-token
routing simulation and an enumeration of every routing choice."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.moe_systems import expert_all_to_all, expert_capacity


def simulate_a2a(tokens, d, k, ep, E, rng, b=2):
    """Each device routes each of its tokens to k distinct experts at random; bytes that leave the device."""
    per_dev = E // ep
    sent = np.zeros(ep)
    for dev in range(ep):
        for _ in range(tokens):
            for e in rng.choice(E, size=k, replace=False):
                if e // per_dev != dev:
                    sent[dev] += d * b
    return 2 * sent  # dispatch, then the same vectors back (combine)


@given(k=st.integers(1, 3), ep=st.integers(1, 4), per=st.integers(1, 3))
def test_expected_remote_volume_by_enumeration(k, ep, per):
    """Averaged over every set of k distinct experts, the remote vectors per token are k·(ep − 1)/ep."""
    E = ep * per
    if k > E:
        return
    subsets = list(itertools.combinations(range(E), k))
    for dev in range(ep):
        mean = Fraction(sum(sum(e // per != dev for e in s) for s in subsets), len(subsets))
        assert mean * 1 * 1 * 2 == expert_all_to_all(1, 1, k, ep, experts=E, dtype="int8").answer


def test_random_routing_simulation_matches_expected_volume():
    """8 devices × 2,000 tokens, top-2 of 16 experts: the simulated bytes sit within 2% of the formula."""
    rng = np.random.default_rng(0)
    sent = simulate_a2a(2000, 64, 2, 8, 16, rng)
    expected = expert_all_to_all(2000, 64, 2, 8, experts=16).answer
    assert abs(sent.mean() / float(expected) - 1) < 0.02
    assert expert_all_to_all(2000, 64, 2, 8, count_local=True).answer == 2 * 2000 * 2 * 64 * 2


def test_a2a_worked_example():
    """T = 4096 tokens per device, d = 4096, top-2, EP = 8, bf16: 4096·2·7/8 = 7,168 vectors,
    × 4096 × 2 bytes = 58,720,256 bytes per phase; at 50 GB/s 1.174 ms per phase."""
    r = expert_all_to_all(4096, 4096, 2, 8, link_bandwidth=50 * 10**9)
    assert r.breakdown["dispatch_bytes"] == 58_720_256 and r.answer == 2 * 58_720_256
    assert r.breakdown["phase_s"] == Fraction(58_720_256, 50 * 10**9)


def simulate_drops(choices, E, C):
    """Tokens arrive in order; an expert keeps the first C of them."""
    load = [0] * E
    dropped = 0
    for e in choices:
        if load[e] < C:
            load[e] += 1
        else:
            dropped += 1
    return dropped


@given(st.integers(1, 8), st.lists(st.integers(0, 7), min_size=1, max_size=80), st.sampled_from([0.5, 1, 1.25, 2]))
def test_drops_match_a_token_by_token_queue(E, raw, cf):
    choices = [c % E for c in raw]
    T = len(choices)
    routed = [choices.count(e) for e in range(E)]
    r = expert_capacity(T, E, cf, routed=routed)
    C = int(Fraction(repr(float(cf))) * T // E)
    assert r.breakdown["capacity"] == C
    assert r.answer == simulate_drops(choices, E, C)


def test_capacity_conventions():
    """T = 1000, E = 8, cf = 1.25: 156.25 → 156 (floor) or 157 (ceil); top-2 per assignment: 312.5 → 312."""
    assert expert_capacity(1000, 8, 1.25).answer == 156
    assert expert_capacity(1000, 8, 1.25, rounding="ceil").answer == 157
    assert expert_capacity(1000, 8, 1.25, top_k=2, per="assignments").answer == 312
    with pytest.raises(SolverInputError):
        expert_capacity(10, 2, 1, routed=[3, 3])


def test_dispatch_in_fp8_and_combine_in_bf16():
    """DeepSeek-V3's split: 4096 tokens × top-8 over 8 devices: 4096·8·7/8 = 28,672 vectors of d = 7168;
    dispatch 1 byte each, combine 2: 28,672·7,168·(1 + 2) bytes."""
    from solver.systems.moe_systems import expert_all_to_all

    r = expert_all_to_all(4096, 7168, 8, 8, dtype="fp8", combine_dtype="bf16", link_bandwidth=50e9)
    assert r.breakdown["dispatch_bytes"] == 28_672 * 7168 and r.breakdown["combine_bytes"] == 2 * 28_672 * 7168
    assert r.answer == 3 * 28_672 * 7168
    assert float(r.breakdown["forward_s"]) == pytest.approx(3 * 28_672 * 7168 / 50e9)
