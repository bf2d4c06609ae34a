"""The collective conventions against simulations that share no code with the formulas: a
bidirectional ring stepped chunk by chunk, an all-to-all routed message by message on a ring or
torus; and recomputation against its hand derivation (8ND; 6ND + 4·L·s·d·D)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.systems.collectives import all_to_all_link_load, collective
from solver.systems.training import train


def simulate_bidirectional_all_gather(n: int, size: int) -> tuple[Fraction, bool]:
    """Each rank's part (size/n) is split in halves; one half goes clockwise, the other
    counter-clockwise, one hop per step, every link carrying one half-part each way per step.
    Returns (the busiest link's bytes summed over steps, whether every rank got every part)."""
    half = Fraction(size, 2 * n)
    have = [{(r, "cw"), (r, "ccw")} for r in range(n)]
    moving = {r: {"cw": (r, "cw"), "ccw": (r, "ccw")} for r in range(n)}
    busiest = Fraction(0)
    for _ in range(n - 1):
        load: dict[tuple[int, int], Fraction] = defaultdict(Fraction)
        arriving: dict[int, dict[str, tuple[int, str]]] = {r: {} for r in range(n)}
        for r in range(n):
            for way, step in (("cw", 1), ("ccw", -1)):
                dst = (r + step) % n
                load[(r, dst)] += half
                arriving[dst][way] = moving[r][way]
        busiest += max(load.values())
        for r in range(n):
            for way in ("cw", "ccw"):
                have[r].add(arriving[r][way])
            moving[r] = arriving[r]
    whole = all(len(h) == 2 * n for h in have)
    return busiest, whole


@given(st.integers(2, 24), st.integers(1, 2**30))
def test_bidirectional_ring_all_gather_matches_the_stepped_ring(n, size):
    busiest, whole = simulate_bidirectional_all_gather(n, size)
    assert whole
    r = collective("all-gather", size, n, 1.0, ring="bidirectional")
    assert r.breakdown["time_s"] == pytest.approx(float(busiest))  # β = 1 byte/s: time = bytes


def test_the_tpu_texts_figure_for_an_all_gather():
    """2 MiB over 4 chips at 45 GB/s each way: 23.30 µs both ways without (n−1)/n; 17.48 µs with it;
    34.95 µs one way (the issue's three figures)."""
    s = 2097152
    one = collective("all-gather", s, 4, 45e9).answer
    both = collective("all-gather", s, 4, 45e9, ring="bidirectional").answer
    asym = collective("all-gather", s, 4, 45e9, ring="bidirectional", asymptotic=True).answer
    assert (round(one * 1e6, 2), round(both * 1e6, 2), round(asym * 1e6, 2)) == (34.95, 17.48, 23.30)


def route_all_to_all(shape: tuple[int, ...], size: int, bidirectional: bool = True) -> Fraction:
    """Every rank sends size/N to every rank, routed axis by axis the shorter way (a tie split in
    half); an axis of 2 has one link per direction. Returns the busiest directed link's bytes."""
    N = 1
    for k in shape:
        N *= k
    part = Fraction(size, N)
    load: dict[tuple, Fraction] = defaultdict(Fraction)
    nodes = list(itertools.product(*[range(k) for k in shape]))
    for src in nodes:
        for dst in nodes:
            if src == dst:
                continue
            pos = list(src)
            for axis, k in enumerate(shape):
                fwd = (dst[axis] - pos[axis]) % k
                if fwd == 0:
                    continue
                if not bidirectional:
                    ways = [(1, fwd, part)]
                elif k == 2:
                    ways = [(1, 1, part)]
                elif fwd * 2 < k:
                    ways = [(1, fwd, part)]
                elif fwd * 2 > k:
                    ways = [(-1, k - fwd, part)]
                else:
                    ways = [(1, fwd, part / 2), (-1, fwd, part / 2)]
                for step, hops, amount in ways:
                    p = list(pos)
                    for _ in range(hops):
                        here = tuple(p)
                        p[axis] = (p[axis] + step) % k
                        load[(here, axis, step if k > 2 else 1)] += amount
                pos[axis] = dst[axis]
    return max(load.values())


@pytest.mark.parametrize("shape", [(2,), (3,), (4,), (5,), (8,), (2, 2), (4, 4), (3, 5), (2, 4), (4, 4, 4), (2, 3, 4)])
def test_torus_all_to_all_matches_message_by_message_routing(shape):
    size = 2**20 * 3 * 5 * 7
    assert all_to_all_link_load(size, shape) == route_all_to_all(shape, size)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8])
def test_unidirectional_ring_all_to_all_matches_routing(n):
    size = 2**20 * 105
    assert all_to_all_link_load(size, (n,), bidirectional=False) == route_all_to_all((n,), size, bidirectional=False)


@given(st.integers(1, 10**12), st.integers(1, 10**13))
def test_full_recomputation_is_eight_n_d(N, D):
    """Forward 2N, backward 4N, and the forward again: 8·N·D."""
    assert train(N, tokens=D, recompute="full").answer == 8 * N * D
    assert train(N, tokens=D).answer == 6 * N * D


@given(st.integers(1, 10**11), st.integers(1, 10**12), st.integers(1, 128), st.integers(1, 32768),
       st.integers(1, 16384))
def test_selective_recomputation_adds_the_attention_core(N, D, L, s, d):
    """Per token and layer, QKᵀ costs 2·s·d and A·V 2·s·d FLOPs (s keys, d = heads × head size);
    selective recomputation runs them again: 6N + 4·L·s·d per token."""
    assert train(N, tokens=D, recompute="selective", layers=L, seq=s, d_model=d).answer == (6 * N + 4 * L * s * d) * D
