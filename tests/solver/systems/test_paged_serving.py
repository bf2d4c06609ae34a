"""PagedAttention's blocks, static/continuous batching and disaggregation (solver.systems.paged_serving)
against simulations written here: a block allocator filled token by token, a scheduler stepped one
iteration at a time, a link sending one layer's share after another."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.paged_serving import batching, disaggregation, paged_kv


class PagedAllocator:
    """A free list of physical blocks; each sequence appends tokens one at a time and takes a new
    block when its last one is full (vLLM's block manager, reduced to its arithmetic)."""

    def __init__(self, n_blocks: int, block_size: int):
        self.free = list(range(n_blocks))
        self.B = block_size
        self.tables: dict[int, list[int]] = {}
        self.fill: dict[int, int] = {}

    def append(self, seq: int) -> bool:
        table = self.tables.setdefault(seq, [])
        if not table or self.fill[seq] == self.B:
            if not self.free:
                return False
            table.append(self.free.pop())
            self.fill[seq] = 0
        self.fill[seq] += 1
        return True

    def add(self, seq: int, length: int) -> bool:
        """Add a whole sequence, or undo it and say no."""
        for _ in range(length):
            if not self.append(seq):
                self.free += self.tables.pop(seq)
                return False
        return True


lengths = st.lists(st.integers(1, 300), min_size=1, max_size=12)


@given(lengths, st.integers(1, 64))
def test_blocks_and_fragmentation_match_the_allocator(ls, B):
    alloc = PagedAllocator(10**6, B)
    for i, L in enumerate(ls):
        assert alloc.add(i, L)
    r = paged_kv(ls, B, 1)
    assert r.answer == sum(len(t) for t in alloc.tables.values())
    assert r.breakdown["empty_slots"] == sum(B - alloc.fill[i] for i in alloc.tables)
    full = paged_kv(ls, B, 1, last_block="full-only").answer
    assert full == sum(len(t) - (alloc.fill[i] < B) for i, t in alloc.tables.items())


@given(st.integers(1, 2000), st.integers(1, 64), st.integers(1, 8), st.integers(1, 400))
def test_sequences_that_fit_match_the_allocator(L, B, X, budget_blocks):
    """Fill a budget of whole blocks with sequences of length L until the allocator refuses."""
    budget = budget_blocks * B * X + (X - 1)  # a remainder smaller than a block is unusable
    alloc = PagedAllocator(budget // (B * X), B)
    n = 0
    while alloc.add(n, L):
        n += 1
    r = paged_kv([L], B, X, budget=budget, max_len=max(L, 2048))
    assert r.breakdown["paged_sequences"] == n
    assert r.breakdown["contiguous_sequences"] == budget // (max(L, 2048) * X)


def test_paged_worked_example():
    """Llama-2-7B-sized KV, X = 524,288 bytes/token, B = 16, L = 1000: ⌈1000/16⌉ = 63 blocks, 8 empty
    slots. 40 GB holds ⌊40e9/(16·524,288)⌋ = 4,768 blocks: ⌊4768/63⌋ = 75 sequences paged against
    ⌊40e9/(4096·524,288)⌋ = 18 reserved at 4,096 tokens."""
    r = paged_kv([1000], 16, 524_288, budget=40 * 10**9, max_len=4096)
    assert (r.answer, r.breakdown["empty_slots"], r.breakdown["physical_blocks"]) == (63, 8, 4768)
    assert (r.breakdown["paged_sequences"], r.breakdown["contiguous_sequences"]) == (75, 18)


def simulate(outs, batch, t_step, t_prefill, policy):
    """Iteration by iteration, request by request: (finish times, total time)."""
    remaining = list(outs)
    queue = list(range(len(outs)))
    slots: list[int | None] = [None] * batch
    t, finish = Fraction(0), {}
    while queue or any(s is not None for s in slots):
        joining = 0
        if policy == "continuous" or all(s is None for s in slots):
            for k in range(batch):
                if slots[k] is None and queue:
                    slots[k] = queue.pop(0)
                    joining += 1
        t += t_step + joining * t_prefill
        for k, s in enumerate(slots):
            if s is not None:
                remaining[s] -= 1
                if remaining[s] == 0:
                    finish[s] = t
                    slots[k] = None
    return finish, t


@given(st.lists(st.integers(1, 30), min_size=1, max_size=15), st.integers(1, 5), st.integers(1, 5), st.integers(0, 5),
       st.sampled_from(["static", "continuous"]))
def test_batching_matches_a_step_simulation(outs, B, ts, tp, policy):
    finish, T = simulate(outs, B, Fraction(ts), Fraction(tp), policy)
    r = batching(outs, B, ts, t_prefill=tp, policy=policy)
    assert r.breakdown["makespan_s"] == T
    assert r.answer == Fraction(sum(outs)) / T
    assert r.breakdown["mean_latency_s"] == sum(finish.values()) / len(outs)


@given(st.lists(st.integers(1, 30), min_size=1, max_size=15), st.integers(1, 5))
def test_continuous_never_slower_without_prefill_cost(outs, B):
    """With free prefills, refilling slots never lengthens the makespan."""
    r = batching(outs, B, 1)
    assert r.breakdown["makespan_s"] <= r.breakdown["static_makespan_s"]


def test_batching_worked_example():
    """Outputs 1, 10, 3, 5 on 2 slots: static runs max(1,10) + max(3,5) = 15 iterations; continuous
    fills the freed slot at once: 10 iterations (request 2 in 2-4, request 3 in 5-9)."""
    r = batching([1, 10, 3, 5], 2, 1)
    assert r.breakdown["iterations"] == 10 and r.breakdown["static_iterations"] == 15


@given(st.integers(1, 64), st.integers(1, 10**4), st.integers(1, 100), st.integers(1, 100))
def test_layerwise_transfer_matches_a_link_simulation(L, P, beta, tpf):
    """One share per layer, ready at l·t_p/L, sent back to back: exposed time = last end − t_p."""
    r = disaggregation(P, 2 * L, beta, n_layers=L, prefill_time=tpf)
    share = Fraction(P * 2 * L, L) / beta
    link_free = Fraction(0)
    for layer in range(1, L + 1):
        ready = Fraction(tpf * layer, L)
        link_free = max(link_free, ready) + share
    assert r.breakdown["layerwise_exposed_s"] == link_free - tpf
    assert r.answer == Fraction(P * 2 * L, beta)
    assert r.breakdown["layerwise_exposed_s"] <= r.answer


def test_bad_block_size_is_refused():
    with pytest.raises(SolverInputError):
        paged_kv([10], 0, 1)
