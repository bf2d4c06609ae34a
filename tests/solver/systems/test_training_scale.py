"""Training at scale (solver.systems.training_scale) against simulations written here.

FSDP: an event simulation of two streams (communication, compute) layer by layer, with the next
layer's gather issued when the previous layer's compute starts (one layer of prefetch), and the
ring all-gather simulated chunk by chunk. Gradient accumulation: a GPipe-style dependency
simulation of the pipeline (each stage in micro-batch order, a forward waits for the previous stage).
3D fit: the layers of stage 1 and a 1F1B order simulated to count the micro-batches whose
activations are held at once; Korthikanti's per-layer activations typed from the paper's Table 2.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.systems.training_scale import fit_3d, fsdp_overlap, grad_accumulation


def simulate_layers(comm: list[float], compute: list[float]) -> float:
    """Two streams: gather(i) starts when the link is free and layer i−1's compute has started; compute(i)
    starts when gather(i) is done and compute(i−1) is done. Returns the end of the last compute."""
    link_free = comp_end = prev_comp_start = 0.0
    for a, c in zip(comm, compute, strict=True):
        g_start = max(link_free, prev_comp_start)
        link_free = g_start + a
        start = max(link_free, comp_end)
        comp_end = start + c
        prev_comp_start = start
    return comp_end


def ring_all_gather_time(n: int, S: int, beta: float) -> float:
    """n − 1 ring steps, each rank forwarding one chunk of S/n bytes per step."""
    return sum((S / n) / beta for _ in range(n - 1))


@given(P=st.integers(10**6, 10**9), n=st.integers(2, 256), T=st.integers(1, 65536), L=st.integers(1, 40),
       beta=st.floats(1e10, 1e12), C=st.floats(1e14, 2e15))
def test_fsdp_against_a_layer_simulation(P, n, T, L, beta, C):
    r = fsdp_overlap(P, n, T, link_bandwidth=beta, peak_flops=C, layers=L)
    ag = ring_all_gather_time(n, 2 * P, beta)
    assert r.breakdown["all_gather_time_s"] == pytest.approx(ag, rel=1e-9)
    fwd = simulate_layers([ag] * L, [2 * P * T / C] * L)
    bwd = simulate_layers([2 * ag] * L, [4 * P * T / C] * L)
    assert r.breakdown["forward_s"] == pytest.approx(fwd, rel=1e-9)
    assert r.breakdown["backward_s"] == pytest.approx(bwd, rel=1e-9)
    assert r.answer == pytest.approx(fwd + bwd - L * 6 * P * T / C, rel=1e-9, abs=1e-15)
    # the hiding threshold: at T* tokens the forward gather equals the forward compute
    Ts = r.breakdown["tokens_to_hide_forward"]
    assert ag == pytest.approx(2 * P * Ts / C, rel=1e-9)


def test_fsdp_pinned():
    """Llama-7B-like layer, P = 202,383,360, n = 8, 4,096 tokens, β = 450 GB/s, C = 989.5 TF/s:
    AG = 7/8 × 404,766,720 / 4.5e11 = 0.787 ms; forward compute = 2·P·4096/C = 1.6755 ms: hidden."""
    r = fsdp_overlap(202_383_360, 8, 4096, link_bandwidth=450e9, peak_flops=989.5e12)
    assert r.breakdown["all_gather_time_s"] == pytest.approx(7 / 8 * 404_766_720 / 450e9)
    assert r.breakdown["forward_hidden"] and r.breakdown["tokens_to_hide_forward"] == pytest.approx(7 / 8 * 2 * 989.5e12 / 900e9)


def simulate_pipeline(p: int, m: int) -> Fraction:
    """GPipe order with forward 1 unit and backward 2: idle fraction of the p stages over the step."""
    f_end = [[0] * m for _ in range(p)]
    for s in range(p):
        t = 0
        for j in range(m):
            t = max(t, f_end[s - 1][j] if s else 0) + 1
            f_end[s][j] = t
    b_end = [[0] * m for _ in range(p)]
    for s in reversed(range(p)):
        t = f_end[s][m - 1] if s == p - 1 else 0
        for j in range(m):
            t = max(t, b_end[s + 1][j] if s < p - 1 else f_end[s][m - 1], f_end[s][m - 1]) + 2
            b_end[s][j] = t
    step = max(b_end[0])
    return Fraction(step - 3 * m, step)


@given(B_per=st.integers(1, 16), b=st.integers(1, 4), d=st.integers(1, 16), p=st.integers(2, 8))
def test_grad_accumulation_and_bubble(B_per, b, d, p):
    r = grad_accumulation(B_per * b * d, b, d, stages=p)
    assert r.answer == B_per
    assert r.breakdown["bubble_fraction"] == simulate_pipeline(p, B_per)


def in_flight_first_stage(p: int, m: int) -> int:
    """1F1B on stage 1: p warm-up forwards (at most m), then one forward / one backward; count held activations."""
    held = peak = 0
    warm = min(p, m)
    order = ["F"] * warm + ["B", "F"] * (m - warm) + ["B"] * warm
    for op in order:
        held += 1 if op == "F" else -1
        peak = max(peak, held)
    return peak


@given(p=st.sampled_from([1, 2, 4, 8]), m=st.integers(1, 32), t=st.sampled_from([1, 2, 4, 8]),
       d=st.integers(1, 64), z=st.integers(0, 3))
def test_fit_3d_per_layer(p, m, t, d, z):
    L, h, a, s, b = 32, 4096, 32, 2048, 1
    P = 12 * L * h * h
    r = fit_3d(P, L, h, a, s, b, tp=t, pp=p, dp=d, zero_stage=z, microbatches=m)
    total = Fraction(0)
    per_gpu_params = Fraction(P, t * p)
    for _ in range(L // p):  # the layers on stage 1, one by one
        layer = per_gpu_params / (L // p)
        total += layer * (2 / Fraction(d if z == 3 else 1) + 2 / Fraction(d if z >= 2 else 1) + 12 / Fraction(d if z >= 1 else 1))
        # Korthikanti et al. Table 2, sequence parallel + selective recompute: 34·s·b·h/t per micro-batch held
        total += in_flight_first_stage(p, m) * Fraction(34 * s * b * h, t)
    assert r.answer == total
