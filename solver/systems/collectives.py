"""Collectives in the α-β model: time from message size, ranks, link bandwidth and latency.

Conventions (every function here follows them):

- The α-β model: a step that sends m bytes over one link costs α + m/β, with α the per-step
  latency (s) and β the link bandwidth **per direction** (bytes/s). Every rank sends and
  receives at the same time (full duplex), so a ring step costs one chunk's time.
- S is the size nccl-tests reports (NVIDIA/nccl-tests, doc/PERFORMANCE.md): for all-reduce
  the buffer on each rank; for all-gather the gathered *output* (n × each rank's part); for
  reduce-scatter the *input* on each rank (n × each rank's result); for all-to-all each
  rank's whole send buffer (n parts, one per rank).
- Ring algorithms (S split in n chunks of S/n):
  all-reduce = reduce-scatter + all-gather: 2(n−1) steps, each rank sends 2(n−1)/n·S;
  all-gather, reduce-scatter: n−1 steps, (n−1)/n·S sent per rank;
  all-to-all (pairwise exchange): n−1 steps, (n−1)/n·S sent per rank.
  Tree all-reduce: a binomial tree (in round k, rank i with i mod 2^(k+1) = 2^k sends to
  i − 2^k), reduce to rank 0 then broadcast back the same way, the whole message per hop and
  no pipelining: 2⌈log₂ n⌉ rounds of α + S/β. Ranks do not all send alike: in the reduce
  every rank but the root sends S once, in the broadcast a rank sends S to each of its
  children, so the root sends ⌈log₂ n⌉·S (the most of any rank), a leaf S, and all ranks
  together 2(n−1)·S. The time's 2⌈log₂ n⌉·S is the bytes along the critical path (one
  after another), not what any rank sends: the breakdown names them apart.
- Algorithm bandwidth algbw = S / t. Bus bandwidth busbw = algbw × factor with nccl-tests'
  factors: 2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all.
  busbw is what compares with the link's per-direction bandwidth: for a ring with α = 0 it
  equals β exactly, whatever n.
"""

from __future__ import annotations

import math
from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import format_bandwidth

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
ALGORITHMS = ("ring", "tree")
#: nccl-tests' bus-bandwidth factor per collective (doc/PERFORMANCE.md), as a function of n
BUS_FACTOR = {"all-reduce": lambda n: Fraction(2 * (n - 1), n), "all-gather": lambda n: Fraction(n - 1, n),
              "reduce-scatter": lambda n: Fraction(n - 1, n), "all-to-all": lambda n: Fraction(n - 1, n)}
_SRC = "NVIDIA/nccl-tests, doc/PERFORMANCE.md (algorithm and bus bandwidth)"


def _op(op: str) -> str:
    key = op.strip().lower().replace("_", "-").replace("allreduce", "all-reduce").replace("allgather", "all-gather") \
        .replace("reducescatter", "reduce-scatter").replace("alltoall", "all-to-all")
    if key not in OPS:
        raise SolverInputError(f"must be one of {', '.join(OPS)} (got {op!r})", param="op")
    return key


def _ranks(n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise SolverInputError(f"must be an integer >= 2 (got {n!r})", param="ranks")
    return n


def _positive(name: str, value, zero: bool = False):
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return value


def ring_cost(op: str, size: float | Fraction, ranks: int) -> tuple[int, Fraction]:
    """(steps, bytes each rank sends) of the ring (or pairwise) algorithm for ``op`` on S bytes."""
    op, n = _op(op), _ranks(ranks)
    S = Fraction(size)
    if op == "all-reduce":
        return 2 * (n - 1), 2 * (n - 1) * S / n
    return n - 1, (n - 1) * S / n


def tree_cost(size: float | Fraction, ranks: int) -> tuple[int, Fraction]:
    """(steps, bytes each step sends) of a non-pipelined binomial-tree all-reduce: 2⌈log₂ n⌉ rounds of S."""
    n = _ranks(ranks)
    return 2 * math.ceil(math.log2(n)), Fraction(size)


def collective(op: str, size: float, ranks: int, bandwidth: float, *, latency: float = 0.0,
               algorithm: str = "ring", link_name: str | None = None) -> Result:
    """Time, algorithm bandwidth and bus bandwidth of one collective in the α-β model."""
    op, n = _op(op), _ranks(ranks)
    S, bw, alpha = _positive("size", size), _positive("link_bandwidth", bandwidth), _positive("latency", latency, True)
    if algorithm not in ALGORITHMS:
        raise SolverInputError(f"must be ring or tree (got {algorithm!r})", param="algorithm")
    if algorithm == "tree" and op != "all-reduce":
        raise SolverInputError("the tree algorithm is modelled for all-reduce only", param="algorithm")
    r = Result(answer=None, unit="s", convention={
        "model": "α-β: each step costs α + bytes/β; every rank sends and receives at once (full duplex)",
        "bandwidth": "β per direction" + (f" ({link_name})" if link_name else ""),
        "size": {"all-reduce": "S = the buffer on each rank",
                 "all-gather": "S = the gathered output (n × each rank's part), as nccl-tests reports it",
                 "reduce-scatter": "S = the input on each rank (n × each result), as nccl-tests reports it",
                 "all-to-all": "S = each rank's send buffer (n parts)"}[op],
        "algorithm": {"ring": "ring (all-to-all: pairwise exchange)",
                      "tree": "binomial tree, reduce then broadcast, whole message per hop, not pipelined"}[algorithm],
        "bus_bandwidth": _SRC})
    if algorithm == "ring":
        steps, sent = ring_cost(op, S, n)
        label = {"all-reduce": "2(n−1)/n·S", "all-to-all": "(n−1)/n·S"}.get(op, "(n−1)/n·S")
        k = r.step("steps = " + ("2(n−1)" if op == "all-reduce" else "n−1"),
                   f"{'2 × ' if op == 'all-reduce' else ''}({n} − 1)", steps, "steps")
        v = r.step(f"bytes each rank sends = {label}", f"{'2 × ' if op == 'all-reduce' else ''}({n} − 1)/{n} × {fmt(S)}",
                   sent, "bytes")
        t = r.step("t = steps·α + sent/β", f"{k} × {fmt(alpha)} + {fmt(v)} / {fmt(bw)}", k * alpha + float(v) / bw, "s")
        per_link = sent
    else:
        steps, hop = tree_cost(S, n)
        k = r.step("steps = 2⌈log₂ n⌉ (up, then down)", f"2 × ⌈log₂ {n}⌉", steps, "steps")
        t = r.step("t = steps·(α + S/β)", f"{k} × ({fmt(alpha)} + {fmt(S)} / {fmt(bw)})", k * (alpha + float(S) / bw), "s")
        rounds = steps // 2
        sent = rounds * hop  # the root's: the most any rank sends (the tree has no per-rank constant)
        per_link = hop  # each tree edge carries S once each way
        r.step("bytes the root sends = ⌈log₂ n⌉·S (the most of any rank)", f"{rounds} × {fmt(S)}", sent, "bytes")
        r.step("bytes all ranks send = 2(n−1)·S", f"2 × ({n} − 1) × {fmt(S)}", 2 * (n - 1) * hop, "bytes")
    factor = BUS_FACTOR[op](n)
    alg = r.step("algbw = S / t", f"{fmt(S)} / {fmt(t)}", float(S) / t, "bytes/s")
    bus = r.step(f"busbw = algbw × {'2(n−1)/n' if op == 'all-reduce' else '(n−1)/n'}",
                 f"{format_bandwidth(alg)} × {fmt(factor)}", alg * float(factor), "bytes/s")
    r.answer = t
    r.breakdown.update(op=op, algorithm=algorithm, ranks=n, size_bytes=S, steps=steps, bytes_sent_per_rank=sent,
                       bytes_per_link=per_link, time_s=t, latency_time_s=steps * alpha,
                       bandwidth_time_s=t - steps * alpha, algbw=alg, busbw=bus, bus_factor=factor,
                       link_bandwidth=bw, latency=alpha)
    if algorithm == "tree":
        r.breakdown.update(bytes_sent_max_rank=sent, bytes_sent_all_ranks=2 * (n - 1) * S,
                           bytes_critical_path=steps * S)
        r.convention["bytes_sent_per_rank"] = ("tree: the most any rank sends (the root, ⌈log₂ n⌉·S); "
                                               "bytes_critical_path = 2⌈log₂ n⌉·S is what the time counts")
    return r


def transfer_time(n_bytes: float | Fraction, bandwidth: float, latency: float = 0.0) -> float:
    """Point-to-point: α + bytes/β (one message over one link, one direction)."""
    return _positive("latency", latency, True) + float(n_bytes) / _positive("link_bandwidth", bandwidth)
