"""Ring attention and Ulysses (solver.systems.context_parallel) against step-by-step simulations
written here: a ring that passes K/V blocks and really computes attention block by block, and an
all-to-all that moves each (token, head) element to the device that owns its head."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.context_parallel import ring_attention, ulysses


def simulate_ring(q, k, v, P):
    """P devices; device p holds query block p and starts with K/V block p. Each step it attends its
    queries to the K/V block it holds (online softmax), then sends that block to p + 1."""
    N, d = q.shape
    c = N // P
    held = [(k[p * c:(p + 1) * c], v[p * c:(p + 1) * c]) for p in range(P)]
    m = [np.full(c, -np.inf) for _ in range(P)]
    s_ = [np.zeros(c) for _ in range(P)]
    acc = [np.zeros((c, d)) for _ in range(P)]
    sent_elements, pairs = 0, set()
    for step in range(P):
        for p in range(P):
            kb, vb = held[p]
            pairs.add((p, (p - step) % P))
            s = q[p * c:(p + 1) * c] @ kb.T
            mn = np.maximum(m[p], s.max(axis=1))
            e = np.exp(s - mn[:, None])
            s_[p] = np.exp(m[p] - mn) * s_[p] + e.sum(axis=1)
            acc[p] = np.exp(m[p] - mn)[:, None] * acc[p] + e @ vb
            m[p] = mn
        if step < P - 1:
            sent_elements += sum(kb.size + vb.size for kb, vb in held) // P  # per device
            held = [held[(p - 1) % P] for p in range(P)]
    out = np.vstack([acc[p] / s_[p][:, None] for p in range(P)])
    return out, sent_elements, pairs


@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(0, 999))
def test_ring_matches_a_step_simulation(P, c, d, seed):
    rng = np.random.default_rng(seed)
    N = P * c
    q, k, v = (rng.normal(size=(N, d)) for _ in range(3))
    out, sent, pairs = simulate_ring(q, k, v, P)
    s = q @ k.T
    w = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, (w / w.sum(axis=1, keepdims=True)) @ v, rtol=1e-9, atol=1e-12)
    assert len(pairs) == P * P  # every query block met every key block exactly once
    r = ring_attention(N, P, 1, d, dtype="int8")  # 1 byte per element, one head
    assert r.breakdown["layer_bytes"] == sent
    assert r.breakdown["block_flops"] == 4 * c * c * d


def test_ring_hides_exactly_from_the_minimum_chunk():
    """c* = F·h_kv·b/(2hβ): with F = 1e15, β = 1e11, b = 2, h = h_kv: c* = 10,000 tokens."""
    at = ring_attention(8 * 10_000, 8, 32, 128, link_bandwidth=10**11, peak_flops=10**15)
    below = ring_attention(8 * 9_000, 8, 32, 128, link_bandwidth=10**11, peak_flops=10**15)
    assert at.breakdown["min_chunk_to_hide"] == 10_000
    assert at.breakdown["hidden"] is True and below.breakdown["hidden"] is False
    assert at.breakdown["compute_s"] == at.breakdown["send_s"]


def simulate_ulysses(N, P, h, hk):
    """Count elements (token, head, ·) whose owner changes: seq-sharded → head-sharded (Q, K, V), back for O."""
    def moved(heads):
        n = 0
        for t in range(N):
            for head in range(heads):
                n += (t // (N // P)) != (head // (heads // P))
        return n
    return moved(h) + 2 * moved(hk) + moved(h)  # Q, K, V in; O out


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3))
def test_ulysses_matches_an_element_simulation(P, c, hp, kp):
    h, hk = hp * P, kp * P
    moved = simulate_ulysses(P * c, P, h, hk)
    r = ulysses(P * c, P, h, 1, kv_heads=hk, dtype="int8")
    assert r.answer == moved / P  # per device (every device moves the same amount)


def test_ulysses_worked_example():
    """N = 32k, P = 8, 32 heads (MHA), d_h 128, bf16: c = 4096; (P − 1)/P × 4096 × 4·32·128 × 2 bytes."""
    r = ulysses(32_768, 8, 32, 128)
    assert r.answer == Fraction(7, 8) * 4096 * 4 * 32 * 128 * 2
    with pytest.raises(SolverInputError):
        ulysses(32_768, 8, 12, 128)
