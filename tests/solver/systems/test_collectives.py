"""solver.systems.collectives against a step-by-step simulation with NumPy arrays across n ranks.

Each simulated algorithm moves real chunks between ranks, one step at a time; the simulation
counts the steps and the bytes on every directed link, checks the data it ends with (the sum,
the gathered parts, the transposed parts), and prices the schedule in the α-β model step by step
(a step costs α plus its largest message over β). The solver's closed forms must agree.
Bus bandwidth: nccl-tests (doc/PERFORMANCE.md) defines busbw = algbw · 2(n−1)/n for all-reduce and
algbw · (n−1)/n for all-gather and reduce-scatter.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.collectives import collective
from solver.systems.interconnect import get_link

ranks = st.integers(2, 9)
chunk = st.integers(1, 6)
ITEM = 4  # float32


def _price(step_messages, alpha, beta):
    """α-β time of a schedule: each step costs α + (largest message in it) / β."""
    return sum(alpha + max(step) / beta for step in step_messages)


def simulate_ring_all_reduce(x: np.ndarray):
    """x[n, L] (L = n·c): reduce-scatter then all-gather around the ring i → i+1."""
    n = x.shape[0]
    buf = [np.array_split(row.copy(), n) for row in x]
    link_bytes, steps = np.zeros(n), []
    for s in range(n - 1):  # reduce-scatter: rank i sends chunk (i − s) mod n, i+1 adds it
        sent = [(i, (i - s) % n, buf[i][(i - s) % n].copy()) for i in range(n)]
        for i, c, data in sent:
            buf[(i + 1) % n][c] += data
            link_bytes[i] += data.nbytes
        steps.append([d.nbytes for _, _, d in sent])
    for s in range(n - 1):  # all-gather: rank i sends its finished chunk (i + 1 − s) mod n
        sent = [(i, (i + 1 - s) % n, buf[i][(i + 1 - s) % n].copy()) for i in range(n)]
        for i, c, data in sent:
            buf[(i + 1) % n][c] = data
            link_bytes[i] += data.nbytes
        steps.append([d.nbytes for _, _, d in sent])
    return np.stack([np.concatenate(b) for b in buf]), link_bytes, steps


def simulate_ring_all_gather(parts: np.ndarray):
    """parts[n, c]: rank i starts with part i; each step forwards the part it received last."""
    n = parts.shape[0]
    have = [{i: parts[i].copy()} for i in range(n)]
    link_bytes, steps = np.zeros(n), []
    for s in range(n - 1):
        sent = [(i, (i - s) % n, have[i][(i - s) % n]) for i in range(n)]
        for i, c, data in sent:
            have[(i + 1) % n][c] = data.copy()
            link_bytes[i] += data.nbytes
        steps.append([d.nbytes for _, _, d in sent])
    return np.stack([np.concatenate([h[c] for c in range(n)]) for h in have]), link_bytes, steps


def simulate_ring_reduce_scatter(x: np.ndarray):
    """x[n, L]: the first half of the ring all-reduce; rank i ends with chunk (i + 1) mod n summed."""
    n = x.shape[0]
    buf = [np.array_split(row.copy(), n) for row in x]
    link_bytes, steps = np.zeros(n), []
    for s in range(n - 1):
        sent = [(i, (i - s) % n, buf[i][(i - s) % n].copy()) for i in range(n)]
        for i, c, data in sent:
            buf[(i + 1) % n][c] += data
            link_bytes[i] += data.nbytes
        steps.append([d.nbytes for _, _, d in sent])
    return [buf[i][(i + 1) % n] for i in range(n)], link_bytes, steps


def simulate_all_to_all(x: np.ndarray):
    """x[n, n, c]: rank i's part j goes to rank j; pairwise exchange, step s: i sends to (i + s) mod n."""
    n = x.shape[0]
    out = np.zeros_like(x)
    for i in range(n):
        out[i, i] = x[i, i]
    sent_bytes, steps = np.zeros(n), []
    for s in range(1, n):
        msgs = []
        for i in range(n):
            j = (i + s) % n
            out[j, i] = x[i, j]
            sent_bytes[i] += x[i, j].nbytes
            msgs.append(x[i, j].nbytes)
        steps.append(msgs)
    return out, sent_bytes, steps


def simulate_tree_all_reduce(x: np.ndarray):
    """Binomial tree: round k, rank i with i mod 2^(k+1) = 2^k sends its partial sum to i − 2^k; then back down."""
    n = x.shape[0]
    acc = [row.copy() for row in x]
    rounds, k = [], 0
    while 2**k < n:
        msgs = []
        for i in range(n):
            if i % 2 ** (k + 1) == 2**k:
                acc[i - 2**k] += acc[i]
                msgs.append(acc[i].nbytes)
        rounds.append(msgs)
        k += 1
    for k in reversed(range(len(rounds))):
        msgs = []
        for i in range(n):
            if i % 2 ** (k + 1) == 2**k:
                acc[i] = acc[i - 2**k].copy()
                msgs.append(acc[i].nbytes)
        rounds.append(msgs)
    return np.stack(acc), rounds


def _data(n, c, seed):
    return np.random.default_rng(seed).integers(-9, 9, size=(n, n * c)).astype(np.float32)


@given(n=ranks, c=chunk, alpha=st.sampled_from([0.0, 1e-6, 5e-6]), beta=st.sampled_from([25e9, 450e9]))
def test_ring_all_reduce_matches_simulation(n, c, alpha, beta):
    x = _data(n, c, n * 7 + c)
    out, link_bytes, steps = simulate_ring_all_reduce(x)
    assert np.array_equal(out, np.broadcast_to(x.sum(0), x.shape))  # every rank holds the sum
    S = x[0].nbytes
    r = collective("all-reduce", S, n, beta, latency=alpha)
    assert r.breakdown["steps"] == len(steps) == 2 * (n - 1)
    assert all(b == r.breakdown["bytes_sent_per_rank"] for b in link_bytes)
    assert r.answer == pytest.approx(_price(steps, alpha, beta), rel=1e-12)


@given(n=ranks, c=chunk, alpha=st.sampled_from([0.0, 2e-6]))
def test_ring_all_gather_matches_simulation(n, c, alpha):
    parts = np.arange(n * c, dtype=np.float32).reshape(n, c)
    out, link_bytes, steps = simulate_ring_all_gather(parts)
    assert np.array_equal(out, np.broadcast_to(parts.reshape(-1), (n, n * c)))
    r = collective("all-gather", out[0].nbytes, n, 100e9, latency=alpha)  # S = the gathered output
    assert r.breakdown["steps"] == len(steps) and all(b == r.breakdown["bytes_sent_per_rank"] for b in link_bytes)
    assert r.answer == pytest.approx(_price(steps, alpha, 100e9), rel=1e-12)


@given(n=ranks, c=chunk)
def test_ring_reduce_scatter_matches_simulation(n, c):
    x = _data(n, c, n + 3 * c)
    parts, link_bytes, steps = simulate_ring_reduce_scatter(x)
    total = np.array_split(x.sum(0), n)
    assert all(np.array_equal(parts[i], total[(i + 1) % n]) for i in range(n))
    r = collective("reduce-scatter", x[0].nbytes, n, 50e9, latency=1e-6)
    assert r.breakdown["steps"] == len(steps) and all(b == r.breakdown["bytes_sent_per_rank"] for b in link_bytes)
    assert r.answer == pytest.approx(_price(steps, 1e-6, 50e9), rel=1e-12)


@given(n=ranks, c=chunk)
def test_all_to_all_matches_simulation(n, c):
    x = np.random.default_rng(n * c).standard_normal((n, n, c)).astype(np.float32)
    out, sent, steps = simulate_all_to_all(x)
    assert np.array_equal(out, x.transpose(1, 0, 2))
    r = collective("all-to-all", x[0].nbytes, n, 50e9, latency=3e-6)
    assert r.breakdown["steps"] == len(steps) and all(b == r.breakdown["bytes_sent_per_rank"] for b in sent)
    assert r.answer == pytest.approx(_price(steps, 3e-6, 50e9), rel=1e-12)


@given(n=st.integers(2, 17), c=chunk, alpha=st.sampled_from([0.0, 1e-5]))
def test_tree_all_reduce_matches_simulation(n, c, alpha):
    x = _data(n, c, n + c)
    out, rounds = simulate_tree_all_reduce(x)
    assert np.array_equal(out, np.broadcast_to(x.sum(0), x.shape))
    r = collective("all-reduce", x[0].nbytes, n, 100e9, latency=alpha, algorithm="tree")
    assert r.breakdown["steps"] == len(rounds)
    assert r.answer == pytest.approx(_price(rounds, alpha, 100e9), rel=1e-12)


def tree_bytes_sent_by_rank(n: int, S: int) -> list[int]:
    """Each rank's bytes sent in the binomial tree, counted send by send (reduce up, broadcast down)."""
    sent, k = [0] * n, 0
    while 2**k < n:
        for i in range(n):
            if i % 2 ** (k + 1) == 2**k:
                sent[i] += S  # reduce: i sends its partial sum to i − 2^k
                sent[i - 2**k] += S  # broadcast: i − 2^k sends the total back to i
        k += 1
    return sent


@given(n=st.integers(2, 64), S=st.integers(1, 10**9))
def test_tree_bytes_per_rank_named_apart(n, S):
    """Issue 25: the tree's 2⌈log₂ n⌉·S is the critical path, not what a rank sends; the root sends the most."""
    per_rank = tree_bytes_sent_by_rank(n, S)
    r = collective("all-reduce", S, n, 1e9, algorithm="tree")
    assert r.breakdown["bytes_sent_per_rank"] == max(per_rank) == r.breakdown["bytes_sent_max_rank"]
    assert r.breakdown["bytes_sent_all_ranks"] == sum(per_rank)
    assert r.breakdown["bytes_critical_path"] == r.breakdown["steps"] * S
    assert r.answer == pytest.approx(r.breakdown["bytes_critical_path"] / 1e9, rel=1e-12)


@given(op=st.sampled_from(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]), n=st.integers(2, 1024),
       S=st.integers(1, 10**11), beta=st.floats(1e9, 1e12), alpha=st.floats(0, 1e-4))
def test_bus_bandwidth_as_nccl_tests_define_it(op, n, S, beta, alpha):
    """busbw = algbw × 2(n−1)/n (all-reduce) or (n−1)/n; with α = 0 a ring's busbw is the link's β."""
    r = collective(op, S, n, beta, latency=alpha)
    factor = 2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n
    bd = r.breakdown
    assert bd["algbw"] == pytest.approx(S / r.answer, rel=1e-12)
    assert bd["busbw"] == pytest.approx(bd["algbw"] * factor, rel=1e-12)
    assert bd["busbw"] <= beta * (1 + 1e-12)
    if alpha == 0:
        assert bd["busbw"] == pytest.approx(beta, rel=1e-12)


def test_one_gigabyte_on_eight_h100s_by_hand():
    """1 GB all-reduce, 8 × H100 over NVLink 4 (450 GB/s each way), α = 0:
    t = 2·7/8 · 10⁹ / 450·10⁹ = 1.75/450 s = 3.888… ms; algbw = 257.14 GB/s, busbw = 450 GB/s.
    Dividing by the printed 900 GB/s (bidirectional) would give half: 1.944 ms."""
    link = get_link("nvlink4")
    r = collective("all-reduce", 10**9, 8, link.per_direction)
    assert r.answer == pytest.approx(1.75 / 450, rel=1e-12)
    assert r.breakdown["algbw"] == pytest.approx(450e9 / 1.75) and r.breakdown["busbw"] == pytest.approx(450e9)
    assert link.bidirectional == 900e9


def test_errors_are_one_line():
    for call, param in ((lambda: collective("gather", 1, 2, 1e9), "op"), (lambda: collective("all-reduce", 1, 1, 1e9), "ranks"),
                        (lambda: collective("all-gather", 1, 4, 1e9, algorithm="tree"), "algorithm"),
                        (lambda: collective("all-reduce", 1, 4, 0), "link_bandwidth")):
        with pytest.raises(SolverInputError) as e:
            call()
        assert e.value.param == param and "\n" not in str(e.value)


def test_link_presets_per_direction_from_printed_figures():
    """Figures typed from the sources: NVLink/PCIe print bidirectional totals, InfiniBand Gb/s per direction."""
    printed_bidir = {"nvlink3": 600e9, "nvlink4": 900e9, "pcie4": 64e9, "pcie5": 128e9}
    for name, total in printed_bidir.items():
        assert get_link(name).per_direction == total / 2
    assert get_link("ib-hdr").per_direction == 200e9 / 8 and get_link("ndr").per_direction == 400e9 / 8
    # Google's pages print bidirectional per chip: v5e 400 GBps over 4 ports, v5p 1200 over 6, v6e 800 over 4
    assert get_link("ici-v5p").per_direction == 1200e9 / 6 / 2 and get_link("ici-v5e").per_direction == 400e9 / 4 / 2
    assert get_link("ici-v6e").per_direction == 800e9 / 4 / 2 and get_link("nvlink5").per_direction == 1.8e12 / 2
    assert math.isclose(get_link("h100").bidirectional, 900e9)
