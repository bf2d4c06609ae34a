"""Figures read off measurements (solver.systems.measurements).

nccl-tests: its PERFORMANCE.md derives each factor from the ideal time, e.g. all-reduce
t = (S/B)·2(n − 1)/n; feeding that time back must give busbw = B for every op. Two rows of real
all_reduce_perf output (public transcripts) are pinned as printed: 8 ranks, 1,048,576 B in 105.9 µs →
algbw 9.90, busbw 17.33 GB/s; 16 ranks (2 × 8 A100), 10,737,418,240 B in 90,330 µs → 118.87, 222.88 GB/s.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.systems.measurements import mfu_from_step, nccl_busbw, run_flops
from solver.systems.parallelism import flops_utilisation

#: PERFORMANCE.md's ideal time per op for S bytes, n ranks, rank bandwidth B
IDEAL = {"all-reduce": lambda S, n, B: S / B * 2 * (n - 1) / n, "reduce-scatter": lambda S, n, B: S * (n - 1) / (B * n),
         "all-gather": lambda S, n, B: S * (n - 1) / (B * n), "broadcast": lambda S, n, B: S / B,
         "reduce": lambda S, n, B: S / B, "all-to-all": lambda S, n, B: S * (n - 1) / (B * n),
         "all-reduce-in-network": lambda S, n, B: S / B * (n - 1) / (n + 1)}


@given(op=st.sampled_from(sorted(IDEAL)), n=st.integers(2, 4096), S=st.integers(1, 10**11), B=st.floats(1e8, 1e13))
def test_busbw_recovers_the_bandwidth_of_the_ideal_time(op, n, S, B):
    r = nccl_busbw(op, n, size=S, time=IDEAL[op](S, n, B))
    assert r.answer == pytest.approx(B, rel=1e-9)


@pytest.mark.parametrize("n, S, t_us, alg, bus", [(8, 1_048_576, 105.9, 9.90, 17.33),
                                                  (16, 10_737_418_240, 90_330, 118.87, 222.88)])
def test_nccl_tests_rows_as_printed(n, S, t_us, alg, bus):
    r = nccl_busbw("all-reduce", n, size=S, time=t_us * 1e-6)
    assert round(r.breakdown["algbw"] / 1e9, 2) == alg and round(r.answer / 1e9, 2) == bus
    assert nccl_busbw("all-reduce", n, algbw=alg * 1e9).answer == pytest.approx(bus * 1e9, abs=0.01e9)


def test_run_flops_pinned():
    """10 days × 86,400 × 1,024 chips × 989.5e12 × 0.4 = 3.5017e23 FLOPs; the same as
    245,760 GPU-hours × 3,600 × 989.5e12 × 0.4."""
    a = run_flops(989.5e12, 0.4, days=10, chips=1024)
    b = run_flops(989.5e12, 0.4, gpu_hours=10 * 24 * 1024)
    assert a.answer == pytest.approx(10 * 86400 * 1024 * 989.5e12 * 0.4) and b.answer == pytest.approx(a.answer)
    c = run_flops(989.5e12, 0.4, days=10, chips=1024, params=7e9)
    assert c.breakdown["tokens"] == pytest.approx(a.answer / 42e9)


@given(N=st.integers(10**8, 10**12), T=st.integers(10**4, 10**8), t=st.floats(0.01, 100), n=st.integers(1, 10**5),
       C=st.floats(1e14, 5e15))
def test_mfu_from_step_equals_mfu_from_tokens_per_second(N, T, t, n, C):
    assert mfu_from_step(N, T, t, n, C).answer == pytest.approx(flops_utilisation(N, T / t, n, C).answer, rel=1e-9)
