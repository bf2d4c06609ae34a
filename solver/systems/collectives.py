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


RING_DIRECTIONS = ("unidirectional", "bidirectional")
TOPOLOGIES = ("switch", "ring", "torus")


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


def shortest_hops_sum(k: int) -> int:
    """M_k = Σ_{j=1}^{k−1} min(j, k − j): hops from one node to all others on a bidirectional ring of k."""
    return sum(min(j, k - j) for j in range(1, k))


def all_to_all_link_load(size: float | Fraction, shape: tuple[int, ...], bidirectional: bool = True) -> Fraction:
    """Bytes on the busiest directed link of an all-to-all on a ring or torus of ``shape``.

    Each of the N = ∏shape ranks sends S/N to every rank (S = its whole send buffer), routed
    dimension by dimension along the shorter way round each axis (a tie split half each way).
    Along an axis of k ≥ 3 ranks the N ranks put S·N·M_k/k bytes·hops on 2N directed links:
    S·M_k/(2k) per link. An axis of 2 has one link each way (S/2 on it). A unidirectional ring
    of n: every message goes forward, S·(n−1)/2 per link.
    """
    S = Fraction(size)
    if not bidirectional:
        (n,) = shape
        return S * (n - 1) / 2
    loads = []
    for k in shape:
        if k == 1:
            continue
        loads.append(S * shortest_hops_sum(k) / (2 * k) if k >= 3 else S / 2)
    return max(loads)


def collective(op: str, size: float, ranks: int, bandwidth: float | None, *, latency: float = 0.0,
               algorithm: str = "ring", link_name: str | None = None, ring: str = "unidirectional",
               asymptotic: bool = False, topology: str = "switch", torus: tuple[int, ...] | None = None) -> Result:
    """Time, algorithm bandwidth and bus bandwidth of one collective in the α-β model.

    Conventions beyond the module's: ``ring="bidirectional"`` splits the message in two halves
    sent round the ring in opposite directions at once (each link busy both ways), halving the
    bandwidth term; ``asymptotic`` drops the (n−1)/n factor (t = V/W, the large-n limit the TPU
    texts write); an all-to-all's ``topology`` is a ``switch`` (pairwise exchange, every rank
    one hop from every other), a ``ring`` or a ``torus`` of the given ``torus`` shape (bytes on
    the busiest link, :func:`all_to_all_link_load`). Without ``bandwidth`` only the byte counts
    are computed."""
    op, n = _op(op), _ranks(ranks)
    S, alpha = _positive("size", size), _positive("latency", latency, True)
    bw = None if bandwidth is None else _positive("link_bandwidth", bandwidth)
    if algorithm not in ALGORITHMS:
        raise SolverInputError(f"must be ring or tree (got {algorithm!r})", param="algorithm")
    if algorithm == "tree" and op != "all-reduce":
        raise SolverInputError("the tree algorithm is modelled for all-reduce only", param="algorithm")
    if ring not in RING_DIRECTIONS:
        raise SolverInputError(f"must be unidirectional or bidirectional (got {ring!r})", param="ring")
    if topology not in TOPOLOGIES:
        raise SolverInputError(f"must be one of {', '.join(TOPOLOGIES)} (got {topology!r})", param="topology")
    if algorithm == "tree" and (ring != "unidirectional" or asymptotic):
        raise SolverInputError("the tree sends the whole message each hop: --ring and --asymptotic are ring "
                               "conventions", param="algorithm")
    if topology != "switch" and op != "all-to-all":
        raise SolverInputError("--topology is a choice of the all-to-all (the other collectives run on a ring)",
                               param="topology")
    if op == "all-to-all" and topology == "switch" and ring != "unidirectional":
        raise SolverInputError("a switched all-to-all has no ring direction: give --topology ring or torus",
                               param="ring")
    if op == "all-to-all" and topology != "switch" and asymptotic:
        raise SolverInputError("a ring or torus all-to-all has no (n−1)/n factor to drop", param="asymptotic")
    if (torus is not None) != (topology == "torus"):
        raise SolverInputError("--topology torus needs the torus shape (--torus 4x4), and only it takes one",
                               param="torus")
    if torus is not None:
        if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in torus) or math.prod(torus) != n:
            raise SolverInputError(f"the torus {'x'.join(map(str, torus))} must have {n} ranks "
                                   f"(its sides multiply to the ranks)", param="torus")
    two_way = ring == "bidirectional"
    r = Result(answer=None, unit="s" if bw is not None else "bytes", convention={
        "model": "α-β: each step costs α + bytes/β; every rank sends and receives at once (full duplex)",
        "bandwidth": "β per direction" + (f" ({link_name})" if link_name else ""),
        "size": {"all-reduce": "S = the buffer on each rank",
                 "all-gather": "S = the gathered output (n × each rank's part), as nccl-tests reports it",
                 "reduce-scatter": "S = the input on each rank (n × each result), as nccl-tests reports it",
                 "all-to-all": "S = each rank's send buffer (n parts)"}[op],
        "algorithm": {"ring": "ring (all-to-all: pairwise exchange)",
                      "tree": "binomial tree, reduce then broadcast, whole message per hop, not pipelined"}[algorithm],
        "bus_bandwidth": _SRC})
    if op == "all-to-all":
        r.convention["algorithm"] = {
            "switch": "pairwise exchange through a switch: every rank one hop from every other",
            "ring": "on a ring: each part routed the shorter way" if two_way else "on a ring: every part sent forward",
            "torus": "on a torus with wraparound links: each part routed axis by axis, the shorter way round"}[topology]
    if two_way:
        r.convention["ring"] = ("bidirectional: the message split in two halves sent round the ring in opposite "
                                "directions at once (each link busy both ways)")
    if asymptotic:
        r.convention["factor"] = "asymptotic: the (n−1)/n factor dropped (t = V/W, the large-n limit)"
    t = None
    if op == "all-to-all" and topology != "switch":
        shape = torus if torus is not None else (n,)
        load = all_to_all_link_load(S, shape, bidirectional=two_way or topology == "torus")
        if topology == "ring" and two_way:
            what = "S·M_n/(2n), M_n = Σ min(j, n−j)" if n >= 3 else "S/2"
        elif topology == "ring":
            what = "S·(n−1)/2"
        else:
            what = "max over axes of S·M_k/(2k)"
        steps = r.step("steps = n − 1 (one part to each other rank)", f"{n} − 1", n - 1, "steps")
        sent = r.step("bytes each rank sends = (n−1)/n·S", f"({n} − 1)/{n} × {fmt(S)}", (n - 1) * Fraction(S) / n,
                      "bytes")
        per_link = r.step(f"bytes on the busiest link = {what}", f"{fmt(S)}, shape {'x'.join(map(str, shape))}", load,
                          "bytes")
        if bw is not None:
            t = r.step("t = steps·α + link bytes/β", f"{steps} × {fmt(alpha)} + {fmt(load)} / {fmt(bw)}",
                       steps * alpha + float(load) / bw, "s")
    elif algorithm == "ring":
        steps, sent = ring_cost(op, S, n)
        two = op == "all-reduce"
        k = r.step("steps = " + ("2(n−1)" if two else "n−1"), f"{'2 × ' if two else ''}({n} − 1)", steps, "steps")
        label = "2(n−1)/n·S" if two else "(n−1)/n·S"
        r.step(f"bytes each rank sends = {label}", f"{'2 × ' if two else ''}({n} − 1)/{n} × {fmt(S)}", sent,
                   "bytes")
        moved = (2 if two else 1) * Fraction(S) if asymptotic else sent
        if asymptotic:
            moved = r.step(f"bytes counted (asymptotic) = {'2·S' if two else 'S'}", f"{'2 × ' if two else ''}{fmt(S)}",
                           moved, "bytes")
        halve = two_way and n >= 3  # a ring of 2 has one link each way: both halves share it
        per_link = moved / 2 if halve else moved
        if halve:
            per_link = r.step("bytes each way on a link = half of them (two directions)", f"{fmt(moved)} / 2",
                              per_link, "bytes")
        elif two_way:
            r.convention["ring"] += "; a ring of 2 ranks has one link each way, so both halves share it"
        if bw is not None:
            t = r.step("t = steps·α + " + ("(sent/2)/β" if halve else "sent/β"),
                       f"{k} × {fmt(alpha)} + {fmt(per_link)} / {fmt(bw)}", k * alpha + float(per_link) / bw, "s")
        per_link = sent if not (halve or asymptotic) else per_link
    else:
        steps, hop = tree_cost(S, n)
        k = r.step("steps = 2⌈log₂ n⌉ (up, then down)", f"2 × ⌈log₂ {n}⌉", steps, "steps")
        if bw is not None:
            t = r.step("t = steps·(α + S/β)", f"{k} × ({fmt(alpha)} + {fmt(S)} / {fmt(bw)})",
                       k * (alpha + float(S) / bw), "s")
        rounds = steps // 2
        sent = rounds * hop  # the root's: the most any rank sends (the tree has no per-rank constant)
        per_link = hop  # each tree edge carries S once each way
        r.step("bytes the root sends = ⌈log₂ n⌉·S (the most of any rank)", f"{rounds} × {fmt(S)}", sent, "bytes")
        r.step("bytes all ranks send = 2(n−1)·S", f"2 × ({n} − 1) × {fmt(S)}", 2 * (n - 1) * hop, "bytes")
    factor = BUS_FACTOR[op](n)
    r.breakdown.update(op=op, algorithm=algorithm if op != "all-to-all" else
                       ("ring" if topology == "switch" else topology), ranks=n, size_bytes=S, steps=steps,
                       bytes_sent_per_rank=sent, bytes_per_link=per_link)
    if op == "all-to-all":
        r.breakdown["topology"] = topology
    if two_way or asymptotic:
        r.breakdown.update(ring=ring, asymptotic=asymptotic)
    if t is None:
        r.answer = per_link
        r.convention["time"] = "not computed: give the link bandwidth (per direction) for the time"
        return r
    alg = r.step("algbw = S / t", f"{fmt(S)} / {fmt(t)}", float(S) / t, "bytes/s")
    bus = r.step(f"busbw = algbw × {'2(n−1)/n' if op == 'all-reduce' else '(n−1)/n'}",
                 f"{format_bandwidth(alg)} × {fmt(factor)}", alg * float(factor), "bytes/s")
    r.answer = t
    r.breakdown.update(time_s=t, latency_time_s=steps * alpha, bandwidth_time_s=t - steps * alpha, algbw=alg,
                       busbw=bus, bus_factor=factor, link_bandwidth=bw, latency=alpha)
    if algorithm == "tree":
        r.breakdown.update(bytes_sent_max_rank=sent, bytes_sent_all_ranks=2 * (n - 1) * S,
                           bytes_critical_path=steps * S)
        r.convention["bytes_sent_per_rank"] = ("tree: the most any rank sends (the root, ⌈log₂ n⌉·S); "
                                               "bytes_critical_path = 2⌈log₂ n⌉·S is what the time counts")
    return r


def transfer_time(n_bytes: float | Fraction, bandwidth: float, latency: float = 0.0) -> float:
    """Point-to-point: α + bytes/β (one message over one link, one direction)."""
    return _positive("latency", latency, True) + float(n_bytes) / _positive("link_bandwidth", bandwidth)


# ---------------------------------------------------------------------------------------
# The registry's descriptions (solver.registry): qkv calc's all_gather(...) and the flags of
# qkv solve collective / allreduce are read from these.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

_TPU_BOOK = "Austin et al., How to Scale Your Model (2025), Part 3 'Sharded matrices' (TPU ICI collectives)"
RING = Convention("ring", "Which ways round the ring the message goes.", {
    "unidirectional": Choice("the whole message goes one way round the ring; each link busy one way",
                             "NCCL's ring (NVIDIA/nccl-tests doc/PERFORMANCE.md)"),
    "bidirectional": Choice("two halves go opposite ways at once; each link busy both ways, half the time",
                            _TPU_BOOK)}, "unidirectional")
FACTOR = Convention("factor", "The (n−1)/n factor of a ring's bandwidth term.", {
    "exact": Choice("t = (n−1)/n · V/W: each rank sends all but its own part", "nccl-tests doc/PERFORMANCE.md"),
    "asymptotic": Choice("t = V/W: the large-n limit, (n−1)/n dropped", _TPU_BOOK)}, "exact")
ALGORITHM = Convention("algorithm", "The all-reduce's algorithm.", {
    "ring": Choice("reduce-scatter then all-gather round the ring, 2(n−1) steps", "nccl-tests"),
    "tree": Choice("binomial tree, reduce then broadcast, whole message per hop, not pipelined", "")}, "ring")
TOPOLOGY = Convention("topology", "What the all-to-all runs on.", {
    "switch": Choice("a switch: every rank one hop from every other; pairwise exchange, (n−1)/n·S per rank",
                     "NVLink/NVSwitch domains; nccl-tests"),
    "ring": Choice("a ring: each part travels to its rank (the shorter way when bidirectional)", _TPU_BOOK),
    "torus": Choice("a torus with wraparound links (torus=AxB): routed axis by axis, the busiest link's bytes",
                    _TPU_BOOK + "; TPU v4/v5p 3D tori")}, "switch")

_SIZE_HELP = {"all-gather": "S: the gathered output (n × each rank's part), as nccl-tests reports it",
              "reduce-scatter": "S: the input on each rank (n × each result), as nccl-tests reports it",
              "all-reduce": "S: the buffer on each rank",
              "all-to-all": "S: each rank's whole send buffer (n parts, one per rank)"}


def _inputs(op: str) -> tuple[Input, ...]:
    extra = (Input("torus", "the torus shape as a list of sides (torus=[4, 4]), with topology=torus", kind="shape",
                   default=None),) if op == "all-to-all" else ()
    return (Input("size", _SIZE_HELP[op], unit="B", aliases=("S", "bytes", "message")),
            Input("ranks", "n: ranks (chips) in the group", kind="count", integer=True, minimum=2,
                  aliases=("n", "gpus", "chips")),
            Input("link", "β: link bandwidth per direction", unit="B/s", default=None,
                  aliases=("bandwidth", "link_bandwidth", "bw", "beta")),
            Input("latency", "α: seconds per step", unit="s", default=0, aliases=("alpha",)), *extra)


_OUTPUTS = (Output("time", "s", "the collective's time", ("link",), key="time_s"),
            Output("bytes_per_rank", "B", "bytes each rank sends", key="bytes_sent_per_rank"),
            Output("link_bytes", "B", "bytes one link carries one way (what the time divides by β)",
                    key="bytes_per_link"),
            Output("steps", "", "steps (each costs α)"),
            Output("algbw", "B/s", "algorithm bandwidth S/t (nccl-tests)", ("link",)),
            Output("busbw", "B/s", "bus bandwidth (nccl-tests' factor)", ("link",)))


def _collective_formula(op: str, name: str, conventions):
    def compute(size, ranks, link, latency, ring="unidirectional", factor="exact", algorithm="ring",
                topology="switch", torus=None):
        return collective(op, size, ranks, link, latency=latency, algorithm=algorithm, ring=ring,
                          asymptotic=factor == "asymptotic", topology=topology,
                          torus=None if torus is None else tuple(torus))

    compute.__module__ = __name__
    solve = "collective --op " + op if op != "all-reduce" else "allreduce"
    return formula(name, f"The {op} of S bytes over n ranks in the α-β model: time, bytes per rank and per link.",
                   _inputs(op), _OUTPUTS, conventions=conventions, solve=solve, source=_SRC)(compute).formula


def _transfer(size, link, latency):
    r = Result(answer=None, unit="s", convention={"model": "one message over one link, one direction: α + bytes/β"})
    S, bw = _positive("size", size), _positive("link_bandwidth", link)
    t = r.step("t = α + bytes/β", f"{fmt(latency)} + {fmt(S)} / {fmt(bw)}", transfer_time(S, bw, latency), "s")
    r.answer = t
    r.breakdown.update(time_s=t, size_bytes=S, link_bandwidth=bw, latency=latency)
    return r


FORMULAS = (
    _collective_formula("all-gather", "all_gather", (RING, FACTOR)),
    _collective_formula("reduce-scatter", "reduce_scatter", (RING, FACTOR)),
    _collective_formula("all-reduce", "all_reduce", (ALGORITHM, RING, FACTOR)),
    _collective_formula("all-to-all", "all_to_all", (TOPOLOGY, RING, FACTOR)),
    formula("transfer", "Point to point: one message over one link, one direction (α + bytes/β).",
            (Input("size", "bytes sent", unit="B", aliases=("S", "bytes")),
             Input("link", "β: link bandwidth per direction", unit="B/s", aliases=("bandwidth", "bw")),
             Input("latency", "α: seconds", unit="s", default=0, aliases=("alpha",))),
            (Output("time", "s", "the transfer's time", ("link",), key="time_s"),), solve="transfer")(_transfer).formula,
)
