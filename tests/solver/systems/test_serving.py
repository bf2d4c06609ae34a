"""solver.systems.serving against independent references: the largest batch by filling the chips' HBM one
sequence at a time (cache tensor sizes from meta-device ``numel``), the generation time by a loop
over decode steps with the cache growing (each step priced by ``decode_step``), speculative
decoding by Monte Carlo (draft tokens accepted with probability α until the first rejection), and
the compute-optimal model by a numerical search along C = 6ND on the fitted loss.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.chips import Chip, resolve_chip
from solver.systems.inference import decode_step, prefill
from solver.systems.serving import (
    chinchilla_loss,
    compute_optimal,
    generation,
    max_batch,
    overtraining,
    serve,
    speculative,
)


def cache_bytes(layers, kv_heads, d_head, batch, context, dtype=torch.bfloat16):
    """Bytes of the K and V cache tensors [B, G, S, H] of every layer (meta device: sizes only)."""
    k = torch.empty(batch, kv_heads, context, d_head, dtype=dtype, device="meta")
    return 2 * layers * k.numel() * k.element_size()


@given(layers=st.integers(1, 96), kv=st.sampled_from([1, 8, 32]), S=st.integers(1, 32768), chips=st.integers(1, 8),
       N=st.integers(10**8, 10**11))
def test_max_batch_fills_the_hbm(layers, kv, S, chips, N):
    """B_max sequences fit beside the weights and B_max + 1 do not."""
    hbm = 80 * 10**9
    chip = Chip(hbm=hbm, origin={"hbm": "given"})
    per_token = cache_bytes(layers, kv, 128, 1, 1)
    if 2 * N >= chips * hbm:
        with pytest.raises(SolverInputError, match="chips"):
            max_batch(N, S, per_token, chip, chips=chips)
        return
    B = max_batch(N, S, per_token, chip, chips=chips).answer
    assert 2 * N + cache_bytes(layers, kv, 128, B, S) <= chips * hbm < 2 * N + cache_bytes(layers, kv, 128, B + 1, S)


def test_seventy_b_on_eight_h100s_by_hand():
    """Llama-2-70B shapes (80 layers, 8 KV heads, d_head 128, bf16): X = 327,680 B/token. 8 × H100 at the
    nvidia-smi figure 85,520,809,984 B: 684,166,479,872 − 140·10⁹ = 544,166,479,872 B; a 4,096-token
    sequence holds 1,342,177,280 B → ⌊405.43…⌋ = 405 sequences. The datasheet's 80·10⁹ gives ⌊372.5…⌋ = 372."""
    X = 2 * 80 * 8 * 128 * 2
    dev = max_batch(70 * 10**9, 4096, X, resolve_chip("h100", hbm_figure="device"), chips=8)
    assert dev.answer == 405 and "device" in dev.convention["hbm"]
    assert max_batch(70 * 10**9, 4096, X, resolve_chip("h100"), chips=8).answer == (640 - 140) * 10**9 // (4096 * X) == 372


@given(N=st.integers(10**9, 10**11), P=st.integers(1, 4096), G=st.integers(1, 300), B=st.integers(1, 512),
       X=st.integers(1, 10**6), n=st.integers(1, 8), model=st.sampled_from(["total", "kv-plus-max"]),
       peak=st.floats(1e14, 2e15), bw=st.floats(5e11, 5e12))
def test_generation_vs_a_loop_over_steps(N, P, G, B, X, n, model, peak, bw):
    chip = Chip(peak_flops=peak, bandwidth=bw)
    loop = prefill(N, B * P, chip, chips=n).answer
    loop += sum(decode_step(N, B, P + i, X, chip, chips=n, model=model).answer for i in range(G))
    assert generation(N, P, G, X, chip, batch=B, chips=n, model=model).answer == pytest.approx(loop, rel=1e-9)


@given(N=st.integers(10**9, 10**11), S=st.integers(1, 8192), X=st.integers(1, 10**6), peak=st.floats(1e14, 2e15),
       bw=st.floats(5e11, 5e12))
def test_compute_bound_batch_is_where_the_bound_flips(N, S, X, peak, bw):
    chip = Chip(peak_flops=peak, bandwidth=bw, hbm=10**15)
    b_c = serve(N, S, X, chip, batch=1).breakdown["compute_bound_batch"]
    if b_c is None:  # never compute-bound (issue 20: null, not the string "inf")
        assert decode_step(N, 10**6, S, X, chip).breakdown["bound"] == "memory"
        return
    lo, hi = math.floor(b_c * (1 - 1e-9)), math.ceil(b_c * (1 + 1e-9))
    if lo >= 1:
        assert decode_step(N, lo, S, X, chip).breakdown["bound"] == "memory"
    assert decode_step(N, hi, S, X, chip).breakdown["bound"] == "compute"


def test_serve_tokens_per_second_and_cost():
    chip = Chip(peak_flops=1e15, bandwidth=2e12, hbm=80e9, origin={"hbm": "given"})
    r = serve(7 * 10**9, 2048, 524288, chip, batch=8, price_per_chip_hour=3.0)
    t = (14e9 + 8 * 2048 * 524288) / 2e12  # memory-bound: weights plus 8 caches over the bandwidth
    assert r.breakdown["per_token_latency_s"] == pytest.approx(t)
    assert r.answer == pytest.approx(8 / t)
    assert r.breakdown["cost_per_million_tokens"] == pytest.approx(3.0 / 3600 / (8 / t) * 1e6)
    with pytest.raises(SolverInputError, match="batch"):
        serve(7 * 10**9, 2048, 524288, chip, batch=10**6)


def monte_carlo_tokens(alpha, gamma, steps, rng):
    """Each step: draft tokens accepted one by one with probability α until the first rejection; +1 target token."""
    if gamma == 0:
        return 1.0
    u = rng.random((steps, gamma)) < alpha
    accepted = np.where(u.all(1), gamma, np.argmin(u, axis=1))
    return (accepted + 1).mean()


@given(alpha=st.floats(0, 0.99), gamma=st.integers(0, 10))
def test_speculative_vs_monte_carlo(alpha, gamma):
    rng = np.random.default_rng(int(alpha * 1000) + gamma)
    mc = monte_carlo_tokens(alpha, gamma, 40_000, rng)
    r = speculative(alpha, gamma)
    sd = math.sqrt(gamma + 1) * (gamma + 1) / math.sqrt(40_000)
    assert abs(r.answer - mc) < 5 * sd + 1e-9


def test_speculative_by_hand():
    """α = 0.8, γ = 4: (1 − 0.8⁵)/0.2 = (1 − 0.32768)/0.2 = 3.3616 tokens; all γ accepted would be 5.
    With c = 0.05: 3.3616 / 1.2 = 2.80133×."""
    r = speculative(0.8, 4, cost=0.05)
    assert r.answer == pytest.approx(3.3616) and r.breakdown["speedup"] == pytest.approx(3.3616 / 1.2)
    assert speculative(1.0, 4).answer == 5
    best = r.breakdown["best_gamma"]
    ratios = [(1 - 0.8 ** (g + 1)) / 0.2 / (g * 0.05 + 1) for g in range(65)]
    assert best == int(np.argmax(ratios))


@given(logC=st.floats(19, 27))
def test_fitted_optimum_vs_numerical_search(logC):
    """The closed form is the minimum of L along C = 6ND: a fine search over N agrees."""
    C = 10**logC
    r = compute_optimal(C)
    Ns = np.logspace(np.log10(r.answer) - 1, np.log10(r.answer) + 1, 20001)
    losses = [chinchilla_loss(N, C / (6 * N)) for N in Ns]
    assert r.answer == pytest.approx(Ns[int(np.argmin(losses))], rel=2e-4)
    assert 6 * r.answer * r.breakdown["tokens"] == pytest.approx(C)


def test_rule_of_twenty_by_hand():
    """C = 10²⁴: N = √(10²⁴/120) = 91.287 B, D = 1.8257 T (the rule); the fitted law gives fewer parameters."""
    r = compute_optimal(1e24, method="rule-20")
    assert r.answer == pytest.approx(91.2870929e9) and r.breakdown["tokens"] == pytest.approx(1.825741858e12)
    fit = compute_optimal(1e24)
    assert fit.answer < r.answer and "rule of thumb" in r.convention["method"]
    assert fit.breakdown["loss"] < r.breakdown["loss"]


def test_overtraining_llama_like():
    """An 8B model on 15T tokens: D/D_opt for the same compute, > 1 (over-trained)."""
    r = overtraining(8e9, 15e12)
    C = 6 * 8e9 * 15e12
    assert r.breakdown["compute"] == pytest.approx(C) and r.answer == pytest.approx(15e12 / (C / 6 / compute_optimal(C).answer))
    assert r.answer > 1 and r.breakdown["loss"] > r.breakdown["optimal_loss"]
