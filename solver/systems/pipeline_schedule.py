"""The timeline of a pipeline schedule: which stage runs which microbatch's forward or backward when.

A discrete simulation, independent of the closed-form bubble of
:func:`solver.systems.parallelism.pipeline_bubble` (the tests check that the two agree). Conventions:

- Every stage takes ``forward`` time units for a microbatch's forward pass and ``backward`` for
  its backward pass (default 1 and 2: the backward computes two matmuls per forward one); with
  the interleaved schedule each of a stage's v chunks takes 1/v of that (times are kept in
  units of one chunk's forward, so they stay integers). No communication time.
- Each stage runs its operations in a fixed order and starts each as soon as the stage is free
  and its input is ready: a forward needs the previous (virtual) stage's forward of the same
  microbatch, a backward the next stage's backward (the last stage's needs its own forward).
- Orders: GPipe (Huang et al. 2019) runs all forwards, then all backwards. 1F1B
  (PipeDream-Flush, Narayanan et al. 2021 §2.2) runs p − s − 1 warm-up forwards on stage s
  (0-based), then alternates one forward and one backward, then drains the backwards. The
  interleaved schedule (Narayanan et al. 2021 §2.2, Megatron-LM's
  ``forward_backward_pipelining_with_interleaving``) gives stage s the chunks s, s + p, ...,
  s + (v − 1)·p of the model, runs microbatches in groups of p through chunk 0, then chunk 1,
  ..., with (p − s − 1)·2 + (v − 1)·p warm-up forwards before alternating.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from solver.errors import SolverInputError

SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class Block:
    """One operation on one stage: ``kind`` "F" or "B", 0-based microbatch and chunk, start and end."""

    stage: int
    kind: str
    microbatch: int
    chunk: int
    start: int
    end: int


@dataclass(frozen=True)
class Timeline:
    stages: int
    microbatches: int
    chunks: int
    schedule: str
    blocks: tuple[Block, ...]
    makespan: int  # the step, in time units
    busy_per_stage: int  # time units each stage computes

    @property
    def idle_fraction(self) -> Fraction:
        """The fraction of the step a stage idles (the same for every stage here)."""
        return Fraction(self.makespan - self.busy_per_stage, self.makespan)


def _orders(p: int, m: int, v: int, schedule: str) -> list[list[tuple[str, int, int]]]:
    """Per stage, its operations (kind, microbatch, chunk) in the order it runs them."""
    orders = []
    for s in range(p):
        if schedule == "gpipe":
            ops = [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
        elif schedule == "1f1b":
            warm = min(p - s - 1, m)
            fwd = [("F", j, 0) for j in range(m)]
            bwd = [("B", j, 0) for j in range(m)]
            ops = fwd[:warm]
            for k in range(m - warm):
                ops += [fwd[warm + k], bwd[k]]
            ops += bwd[m - warm:]
        else:
            total = m * v

            def fwd_op(k: int) -> tuple[str, int, int]:
                return "F", (k // (p * v)) * p + k % p, (k // p) % v

            def bwd_op(k: int) -> tuple[str, int, int]:
                return "B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v

            warm = min((p - s - 1) * 2 + (v - 1) * p, total)
            ops = [fwd_op(k) for k in range(warm)]
            for k in range(total - warm):
                ops += [fwd_op(warm + k), bwd_op(k)]
            ops += [bwd_op(k) for k in range(total - warm, total)]
        orders.append(ops)
    return orders


def pipeline_timeline(stages: int, microbatches: int, *, schedule: str = "1f1b", chunks: int = 1,
                      forward: int = 1, backward: int = 2) -> Timeline:
    """Simulate one training step of the schedule; see the module's conventions."""
    for name, value in (("stages", stages), ("microbatches", microbatches), ("chunks", chunks),
                        ("forward", forward), ("backward", backward)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SolverInputError(f"must be a positive integer (got {value!r})", param=name)
    if schedule not in SCHEDULES:
        raise SolverInputError(f"must be one of {', '.join(SCHEDULES)} (got {schedule!r})", param="schedule")
    p, m = stages, microbatches
    v = chunks if schedule == "interleaved" else 1
    if schedule != "interleaved" and chunks != 1:
        raise SolverInputError("chunks (v) applies to the interleaved schedule only", param="chunks")
    if schedule == "interleaved" and m % p:
        raise SolverInputError(f"the interleaved schedule needs microbatches divisible by stages ({m} % {p} ≠ 0)",
                               param="microbatches")
    if p * m * v > 20_000:
        raise SolverInputError(f"too many blocks to draw ({p}·{m}·{v} > 20,000)", param="microbatches")
    # one chunk's forward lasts `forward` units, so a whole stage's forward of a microbatch is v·forward
    tf, tb = forward, backward
    last = p * v - 1  # the last virtual stage
    orders = _orders(p, m, v, schedule)
    done: dict[tuple[str, int, int], int] = {}  # (kind, virtual stage, microbatch) -> end time
    free = [0] * p
    pos = [0] * p
    blocks: list[Block] = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, j, c = orders[s][pos[s]]
                vs = c * p + s
                if kind == "F":
                    dep = ("F", vs - 1, j) if vs > 0 else None
                else:
                    dep = ("B", vs + 1, j) if vs < last else ("F", last, j)
                if dep is not None and dep not in done:
                    break
                start = max(free[s], done[dep] if dep is not None else 0)
                end = start + (tf if kind == "F" else tb)
                done[(kind, vs, j)] = end
                free[s] = end
                blocks.append(Block(s, kind, j, c, start, end))
                pos[s] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    makespan = max(b.end for b in blocks)
    busy = m * v * (tf + tb)
    return Timeline(p, m, v, schedule, tuple(sorted(blocks, key=lambda b: (b.stage, b.start))), makespan, busy)
