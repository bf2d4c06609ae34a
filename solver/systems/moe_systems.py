"""Mixture-of-experts systems arithmetic: the expert-parallel all-to-all of one MoE layer and
expert capacity with the tokens it drops.

Sources: Lepikhin et al. 2021 (GShard: expert capacity, dispatch/combine all-to-all); Fedus et al.
2022 (Switch Transformer §2.2: "expert capacity = (tokens per batch / number of experts) ×
capacity factor"; tokens over capacity are dropped and pass through the residual).

Conventions (named in each result):

- Expert parallelism over ``ep`` devices, E experts split evenly (E/ep per device). ``tokens`` are
  the tokens **on each device** (its micro-batch × sequence); each picks ``top_k`` distinct experts.
- Dispatch sends each (token, expert) pair's d-vector to the expert's device; combine sends the
  expert's output back: the same volume each way. Under uniform routing an expert is on another
  device with probability (ep − 1)/ep, so each device sends T·k·d·b·(ep − 1)/ep bytes per phase
  (``count_local=False``, the default); ``count_local=True`` counts all T·k·d·b (what a naive
  all-to-all buffer holds, the local share included).
- Time per phase = α + bytes sent per device / β (every device sends at once over its own link of
  β bytes/s per direction); a layer's forward has two phases (dispatch, combine), its backward two more.
- Capacity C = cf·T/E (Switch, top-1: ``per="tokens"``) or cf·k·T/E (top-k assignments:
  ``per="assignments"``), rounded down (``rounding="floor"``, as int() in the Switch/Mesh code) or
  up; an expert routed n tokens keeps min(n, C) and drops the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import dtype_bytes


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def _frac(name: str, value, zero: bool = False) -> Fraction:
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def expert_all_to_all(tokens: int, d_model: int, top_k: int, ep: int, *, dtype: str = "bf16",
                      link_bandwidth=None, latency=0, count_local: bool = False, experts: int | None = None,
                      combine_dtype: str | None = None) -> Result:
    """Bytes each device sends in the dispatch and the combine of one MoE layer (expected, uniform
    routing), and the time over the link when its bandwidth is given.

    ``dtype`` is the dispatch's (tokens to experts), ``combine_dtype`` the combine's (outputs
    back; default the same): DeepSeek-V3 dispatches in FP8 and combines in BF16 (DeepSeek-V3
    technical report, 2024, §3.3.2 and §3.2.2).

    Answer: bytes per device for dispatch + combine (forward). Breakdown: per phase, the whole
    group's volume, the remote fraction, and times."""
    T, d, k, P = _int("tokens", tokens), _int("d_model", d_model), _int("top_k", top_k), _int("ep", ep)
    if experts is not None:
        E = _int("experts", experts)
        if E % P:
            raise SolverInputError(f"{E} experts do not split evenly over {P} devices", param="experts")
        if k > E:
            raise SolverInputError(f"top-k {k} is more than the {E} experts", param="top_k")
    b = dtype_bytes(dtype)
    cb = b if combine_dtype is None else dtype_bytes(combine_dtype)
    remote = Fraction(1) if count_local else Fraction(P - 1, P)
    r = Result(answer=None, unit="bytes", convention={
        "tokens": "T tokens on each device, each sent to its top-k experts (distinct)",
        "routing": "uniform: an expert is on another device with probability (ep − 1)/ep",
        "count": "all T·k vectors counted (local ones too)" if count_local else
                 "only vectors leaving the device: T·k·(ep − 1)/ep",
        "phases": "dispatch (tokens to experts) and combine (outputs back), equal volumes; forward only "
                  "(the backward repeats both)",
        "dtype": f"{dtype}, {fmt(b)} bytes per element"})
    if combine_dtype is not None and cb != b:
        r.convention["phases"] = ("dispatch (tokens to experts) and combine (outputs back), the same vectors at "
                                  "their own dtypes; forward only (the backward repeats both)")
        r.convention["dtype"] = f"dispatch {dtype} ({fmt(b)} bytes), combine {combine_dtype} ({fmt(cb)} bytes)"
    pairs = r.step("vectors sent per device = T·k" + ("" if count_local else "·(ep − 1)/ep"),
                   f"{fmt(T)} × {k}" + ("" if count_local else f" × {P - 1}/{P}"), T * k * remote)
    if cb == b:
        phase = r.step("bytes per phase = vectors·d·b", f"{fmt(pairs)} × {fmt(d)} × {fmt(b)}", pairs * d * b, "bytes")
        total = r.step("dispatch + combine = 2 × bytes per phase", f"2 × {fmt(phase)}", 2 * phase, "bytes")
        combine = phase
    else:
        phase = r.step("dispatch bytes = vectors·d·b_dispatch", f"{fmt(pairs)} × {fmt(d)} × {fmt(b)}", pairs * d * b,
                       "bytes")
        combine = r.step("combine bytes = vectors·d·b_combine", f"{fmt(pairs)} × {fmt(d)} × {fmt(cb)}",
                         pairs * d * cb, "bytes")
        total = r.step("dispatch + combine", f"{fmt(phase)} + {fmt(combine)}", phase + combine, "bytes")
    r.breakdown = {"dispatch_bytes": phase, "combine_bytes": combine, "per_device_bytes": total,
                   "group_bytes": total * P, "remote_fraction": remote, "vectors_per_device": pairs}
    if link_bandwidth is not None:
        beta, alpha = _frac("link_bandwidth", link_bandwidth), _frac("latency", latency, zero=True)
        if cb == b:
            t = r.step("time per phase = α + bytes/β", f"{fmt(alpha)} + {fmt(phase)}/{fmt(beta)}", alpha + phase / beta,
                       "s")
            layer = r.step("forward time = 2 phases", f"2 × {fmt(t)}", 2 * t, "s")
        else:
            t = r.step("dispatch time = α + bytes/β", f"{fmt(alpha)} + {fmt(phase)}/{fmt(beta)}", alpha + phase / beta,
                       "s")
            t2 = r.step("combine time = α + bytes/β", f"{fmt(alpha)} + {fmt(combine)}/{fmt(beta)}",
                        alpha + combine / beta, "s")
            layer = r.step("forward time = dispatch + combine", f"{fmt(t)} + {fmt(t2)}", t + t2, "s")
            r.breakdown["combine_s"] = t2
        r.breakdown.update({"phase_s": t, "forward_s": layer, "forward_backward_s": 2 * layer})
    r.answer = total
    return r


def expert_capacity(tokens: int, experts: int, capacity_factor, *, top_k: int = 1, per: str = "tokens",
                    rounding: str = "floor", routed: Sequence[int] | None = None) -> Result:
    """Expert capacity C and, for a stated routing (tokens routed to each expert), the tokens dropped.

    Answer: dropped (token, expert) assignments when ``routed`` is given, else C."""
    T, E, k = _int("tokens", tokens), _int("experts", experts), _int("top_k", top_k)
    cf = _frac("capacity_factor", capacity_factor)
    if per not in ("tokens", "assignments"):
        raise SolverInputError(f"per must be tokens or assignments (got {per!r})", param="per")
    if rounding not in ("floor", "ceil"):
        raise SolverInputError(f"rounding must be floor or ceil (got {rounding!r})", param="rounding")
    mult = k if per == "assignments" else 1
    r = Result(answer=None, unit="tokens", convention={
        "capacity": ("C = cf·k·T/E (top-k assignments)" if per == "assignments" else
                     "C = cf·T/E (Switch Transformer §2.2, tokens per batch ÷ experts × capacity factor)"),
        "rounding": "down (int(), as the Switch/Mesh code)" if rounding == "floor" else "up",
        "drop": "an expert keeps the first C tokens routed to it; the rest are dropped (they skip the layer "
                "through the residual)"})
    raw = r.step("cf·" + ("k·" if mult > 1 else "") + "T/E", f"{fmt(cf)} × " + (f"{k} × " if mult > 1 else "")
                 + f"{fmt(T)}/{E}", cf * mult * T / E)
    C = r.step(f"C = {'⌊' if rounding == 'floor' else '⌈'}cf·{'k·' if mult > 1 else ''}T/E"
               f"{'⌋' if rounding == 'floor' else '⌉'}", fmt(raw),
               int(raw // 1) if rounding == "floor" else -int((-raw) // 1), "tokens")
    r.breakdown = {"capacity": C, "slots": C * E, "assignments": T * k}
    r.answer = C
    if routed is not None:
        counts = [_int("routed", n, 0) for n in routed]
        if len(counts) != E:
            raise SolverInputError(f"give one count per expert ({E}), got {len(counts)}", param="routed")
        if sum(counts) != T * k:
            raise SolverInputError(f"the routed counts add up to {sum(counts)}, not T·k = {T * k}", param="routed")
        drops = [max(0, n - C) for n in counts]
        dropped = r.step("dropped = Σ max(0, n_e − C)", " + ".join(f"max(0, {n} − {C})" for n in counts)
                         if E <= 8 else f"{E} experts", sum(drops), "tokens")
        r.breakdown.update({"routed": counts, "dropped_per_expert": drops, "dropped": dropped,
                            "dropped_fraction": Fraction(dropped, T * k),
                            "padding_slots": sum(max(0, C - n) for n in counts)})
        r.answer = dropped
        r.convention["answer"] = "dropped (token, expert) assignments"
    return r


# ---------------------------------------------------------------------------------------
# The registry's description (solver.registry): qkv calc's moe_all_to_all(...).
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Input, Output, formula  # noqa: E402


@formula("moe_all_to_all", "Expert-parallel all-to-all of one MoE layer: dispatch + combine bytes per device.",
         (Input("tokens", "T: tokens on each device", kind="count", integer=True, minimum=1, aliases=("T",)),
          Input("d_model", "d: model width", kind="count", integer=True, minimum=1, aliases=("d", "hidden")),
          Input("top_k", "k: experts per token", kind="count", integer=True, minimum=1, aliases=("k",)),
          Input("ep", "expert-parallel devices", kind="count", integer=True, minimum=1),
          Input("dtype", "the dispatch's dtype", kind="dtype", default="bf16", aliases=("dispatch_dtype",)),
          Input("combine_dtype", "the combine's dtype (default: the dispatch's)", kind="dtype", default=None),
          Input("link", "β: link bandwidth per direction", unit="B/s", default=None, aliases=("bandwidth", "bw")),
          Input("latency", "α: seconds per phase", unit="s", default=0, aliases=("alpha",))),
         (Output("bytes", "B", "bytes each device sends: dispatch + combine", key="per_device_bytes"),
          Output("dispatch_bytes", "B", "the dispatch's bytes"),
          Output("combine_bytes", "B", "the combine's bytes"),
          Output("time", "s", "forward time of both phases", ("link",), key="forward_s")),
         solve="moe-all-to-all", source="DeepSeek-V3 technical report (2024) §3.2.2, §3.3.2")
def _moe_formula(tokens, d_model, top_k, ep, dtype, combine_dtype, link, latency):
    return expert_all_to_all(tokens, d_model, top_k, ep, dtype=dtype, combine_dtype=combine_dtype,
                             link_bandwidth=link, latency=latency)


FORMULAS = (_moe_formula.formula,)


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): qkv calc's expert_capacity(...), from qkv solve expert-capacity (without
# a stated routing: that one takes a list per expert).
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention  # noqa: E402

CAPACITY_PER = Convention("per", "What the capacity counts.", {
    "tokens": Choice("C = cf·T/E: tokens per expert", "Fedus et al. 2021 (Switch Transformer), §2.2"),
    "assignments": Choice("C = cf·k·T/E: (token, expert) assignments per expert, top-k routing",
                          "Lepikhin et al. 2020 (GShard)")}, "tokens")
CAPACITY_ROUNDING = Convention("rounding", "How C is made whole.", {
    "floor": Choice("⌊cf·T/E⌋", "Switch Transformer's implementation (mesh-tensorflow)"),
    "ceil": Choice("⌈cf·T/E⌉", "")}, "floor")


@formula("expert_capacity", "Expert capacity C = cf·T/E (cf·k·T/E per assignment): the tokens each expert takes "
         "before it drops.",
         (Input("tokens", "T: tokens routed together", kind="count", integer=True, minimum=1, aliases=("T",)),
          Input("experts", "E: experts", kind="count", integer=True, minimum=1, aliases=("E",)),
          Input("capacity_factor", "cf: the capacity factor", kind="fraction", default=1, minimum=0, maximum=1000,
                aliases=("cf",)),
          Input("top_k", "k: experts per token", kind="count", integer=True, minimum=1, default=1, aliases=("k",))),
         (Output("capacity", "", "C: tokens (or assignments) per expert"),
          Output("slots", "", "C·E"),
          Output("assignments", "", "T·k")),
         conventions=(CAPACITY_PER, CAPACITY_ROUNDING), solve="expert-capacity",
         source="Fedus et al. 2021 (Switch Transformer), §2.2")
def _capacity_formula(tokens, experts, capacity_factor, top_k, per="tokens", rounding="floor"):
    return expert_capacity(tokens, experts, float(capacity_factor), top_k=top_k, per=per, rounding=rounding)


FORMULAS += (_capacity_formula.formula,)  # issue 44 (more entries)
