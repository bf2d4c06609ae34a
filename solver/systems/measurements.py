"""Figures read off measurements: nccl-tests' output to bus bandwidth, a run's FLOPs from its GPU-hours
(or days × chips) × peak × MFU, and MFU from a logged step time.

Conventions (named in every result):

- nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = S / t, with S the size column
  (bytes; all-gather: the gathered output, reduce-scatter: the input) and t the time column (the
  tool prints microseconds and GB/s = 10^9 bytes/s); busbw = algbw × factor: all-reduce 2(n − 1)/n,
  all-reduce with in-network reduction (n − 1)/(n + 1), reduce-scatter, all-gather and all-to-all
  (n − 1)/n, broadcast and reduce 1. busbw is what compares with the hardware's per-direction
  bandwidth, whatever n.
- a run's FLOPs = GPU-seconds × peak × MFU, GPU-seconds = GPU-hours × 3,600 (or days × 86,400 × chips);
  peak is the dense peak per chip at the training dtype. With N parameters the tokens that buys
  under C = 6·N·D are D = FLOPs / (6N).
- MFU from a step: model FLOPs per step 6·N·tokens (Kaplan et al. 2020; the attention-score FLOPs
  left out unless ``attention_flops_per_token`` is given) ÷ (step time × chips × peak).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import format_bandwidth

NCCL_OPS = ("all-reduce", "all-reduce-in-network", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce")
NCCL_SRC = "NVIDIA/nccl-tests, doc/PERFORMANCE.md (Summary: correction factors)"


def bus_factor(op: str, n: int) -> Fraction:
    """nccl-tests' correction factor from algbw to busbw."""
    return {"all-reduce": Fraction(2 * (n - 1), n), "all-reduce-in-network": Fraction(n - 1, n + 1),
            "reduce-scatter": Fraction(n - 1, n), "all-gather": Fraction(n - 1, n),
            "all-to-all": Fraction(n - 1, n), "broadcast": Fraction(1), "reduce": Fraction(1)}[op]


FACTOR_TEXT = {"all-reduce": "2(n − 1)/n", "all-reduce-in-network": "(n − 1)/(n + 1)", "reduce-scatter": "(n − 1)/n",
               "all-gather": "(n − 1)/n", "all-to-all": "(n − 1)/n", "broadcast": "1", "reduce": "1"}


def _pos(name: str, v):
    if v is None or isinstance(v, bool) or not v > 0:
        raise SolverInputError(f"must be positive (got {v!r})", param=name)
    return v


def nccl_busbw(op: str, ranks: int, *, size: float | None = None, time: float | None = None,
               algbw: float | None = None, link_bandwidth: float | None = None) -> Result:
    """busbw from nccl-tests' size and time (or its algbw), and the fraction of a link it reaches."""
    op = op.strip().lower().replace("_", "-").replace("allreduce", "all-reduce").replace("allgather", "all-gather") \
        .replace("reducescatter", "reduce-scatter").replace("alltoall", "all-to-all")
    if op not in NCCL_OPS:
        raise SolverInputError(f"must be one of {', '.join(NCCL_OPS)} (got {op!r})", param="op")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 2:
        raise SolverInputError(f"must be an integer >= 2 (got {ranks!r})", param="ranks")
    n = ranks
    r = Result(answer=None, unit="bytes/s", convention={
        "algbw": "S / t, S the size column (bytes), t the time column", "busbw": f"algbw × {FACTOR_TEXT[op]} ({NCCL_SRC})",
        "units": "nccl-tests prints t in µs and bandwidths in GB/s = 10^9 bytes/s"})
    if algbw is None:
        S, t = _pos("size", size), _pos("time", time)
        alg = r.step("algbw = S / t", f"{fmt(S)} / {fmt(t)}", S / t, "bytes/s")
    else:
        if size is not None and time is not None:
            raise SolverInputError("give size and time, or algbw, not both", param="algbw")
        alg = _pos("algbw", algbw)
        r.step("algbw (read off the output)", format_bandwidth(alg), alg, "bytes/s")
    f = bus_factor(op, n)
    bus = r.step(f"busbw = algbw × {FACTOR_TEXT[op]}", f"{format_bandwidth(alg)} × {fmt(f)}", alg * float(f), "bytes/s")
    r.answer = bus
    r.breakdown.update(op=op, ranks=n, algbw=alg, busbw=bus, bus_factor=f, algbw_GBps=alg / 1e9, busbw_GBps=bus / 1e9)
    if link_bandwidth is not None:
        beta = _pos("link_bandwidth", link_bandwidth)
        frac = r.step("fraction of the link = busbw / β (per direction)", f"{format_bandwidth(bus)} / {format_bandwidth(beta)}", bus / beta)
        r.breakdown.update(link_bandwidth=beta, link_fraction=frac)
    return r


def run_flops(peak_flops: float, mfu: float, *, gpu_hours: float | None = None, days: float | None = None,
              chips: int | None = None, params: float | None = None) -> Result:
    """FLOPs of a training run from GPU-hours (or days × chips) × dense peak × MFU."""
    C, u = _pos("peak_flops", peak_flops), _pos("mfu", mfu)
    if u > 1:
        raise SolverInputError(f"must be at most 1 (got {u})", param="mfu")
    r = Result(answer=None, unit="FLOPs", convention={
        "flops": "GPU-seconds × dense peak per chip × MFU", "peak": "dense (no 2:4 sparsity), at the training dtype"})
    if gpu_hours is not None:
        if days is not None or chips is not None:
            raise SolverInputError("give GPU-hours, or days and chips, not both", param="gpu_hours")
        secs = r.step("GPU-seconds = GPU-hours × 3,600", f"{fmt(_pos('gpu_hours', gpu_hours))} × 3,600", gpu_hours * 3600, "s")
    else:
        if days is None or chips is None:
            raise SolverInputError("give --gpu-hours, or --days and --chips", param="gpu_hours")
        secs = r.step("GPU-seconds = days × 86,400 × chips", f"{fmt(_pos('days', days))} × 86,400 × {_pos('chips', chips)}",
                      days * 86400 * chips, "s")
    flops = r.step("FLOPs = GPU-seconds × peak × MFU", f"{fmt(secs)} × {fmt(C)} × {fmt(u)}", secs * C * u, "FLOPs")
    r.answer = flops
    r.breakdown.update(gpu_seconds=secs, gpu_hours=secs / 3600, flops=flops, pf_days=flops / (1e15 * 86400))
    if params is not None:
        N = _pos("params", params)
        D = r.step("tokens D = FLOPs / (6N)", f"{fmt(flops)} / (6 × {fmt(N)})", flops / (6 * N), "tokens")
        r.breakdown["tokens"] = D
    return r


def mfu_from_step(params: float, tokens_per_step: float, step_time: float, chips: int, peak_flops: float, *,
                  attention_flops_per_token: float = 0.0) -> Result:
    """MFU = model FLOPs per step / (step time × chips × dense peak), model FLOPs = (6N + attention)·tokens."""
    N, T, t = _pos("params", params), _pos("tokens_per_step", tokens_per_step), _pos("step_time", step_time)
    n, C = _pos("chips", chips), _pos("peak_flops", peak_flops)
    if attention_flops_per_token < 0:
        raise SolverInputError("must be >= 0", param="attention_flops_per_token")
    r = Result(answer=None, unit="", convention={
        "model_flops": "6·N per token (forward 2N + backward 4N; Kaplan et al. 2020)"
                       + (" + the stated attention FLOPs per token" if attention_flops_per_token else
                          "; attention-score FLOPs left out"),
        "peak": "dense peak per chip", "answer": "MFU"})
    per_tok = 6 * N + attention_flops_per_token
    fl = r.step("model FLOPs per step = (6N + attention)·tokens", f"(6 × {fmt(N)} + {fmt(attention_flops_per_token)}) × {fmt(T)}",
                per_tok * T, "FLOPs")
    avail = r.step("available = step time × chips × peak", f"{fmt(t)} × {n} × {fmt(C)}", t * n * C, "FLOPs")
    u = r.step("MFU = model FLOPs / available", f"{fmt(fl)} / {fmt(avail)}", fl / avail)
    r.answer = u
    r.breakdown.update(model_flops_per_step=fl, available_flops=avail, mfu=u, tokens_per_second=T / t,
                       tokens_per_second_per_chip=T / t / n)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's busbw(...),
# run_flops(...) and mfu_step(...), from the qkv solve commands busbw, run-flops and mfu-step.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

NCCL_OP = Convention("op", "The nccl-tests collective whose output is read (its bus factor).", {
    "all-reduce": Choice("busbw = algbw × 2(n − 1)/n", NCCL_SRC),
    "all-reduce-in-network": Choice("busbw = algbw × 1: the switch reduces (NVLink SHARP)", NCCL_SRC),
    "reduce-scatter": Choice("busbw = algbw × (n − 1)/n", NCCL_SRC),
    "all-gather": Choice("busbw = algbw × (n − 1)/n", NCCL_SRC),
    "all-to-all": Choice("busbw = algbw × (n − 1)/n", NCCL_SRC),
    "broadcast": Choice("busbw = algbw × 1", NCCL_SRC),
    "reduce": Choice("busbw = algbw × 1", NCCL_SRC)}, "all-reduce")


def _peak_of(chip, peak, dtype):
    if peak is not None:
        return float(peak)
    if chip is None:
        raise SolverInputError("needed here: give peak= or a chip", param="peak")
    return chip.peak(dtype)


_PEAK_IN = (Input("chip", "a chip preset: its dense peak at the dtype", kind="chip", default=None, aliases=("hw",)),
            Input("peak", "dense FLOP/s per chip (instead of the chip's)", unit="FLOP/s", default=None,
                  aliases=("peak_flops",)),
            Input("dtype", "the dtype of the chip's peak", kind="dtype", default="bf16"))


def _or_float(v):
    """None, or the number as a float (as the command's flags give it)."""
    return None if v is None else float(v)


@formula("busbw", "nccl-tests' size and time (or algbw) to bus bandwidth, and the share of a link it reaches.",
         (Input("ranks", "n: ranks of the run", kind="count", integer=True, minimum=2, aliases=("n", "gpus")),
          Input("size", "S: nccl-tests' size column", unit="B", default=None, aliases=("S",)),
          Input("time", "t: nccl-tests' time column", unit="s", default=None),
          Input("algbw", "algbw instead of size and time", unit="B/s", default=None),
          Input("link", "β: link bandwidth per direction", unit="B/s", default=None, aliases=("link_bandwidth",))),
         (Output("busbw", "B/s", "algbw × the op's bus factor"),
          Output("algbw", "B/s", "S / t"),
          Output("link_fraction", "", "busbw / β", ("link",))),
         conventions=(NCCL_OP,), solve="busbw", source=NCCL_SRC)
def _busbw_formula(ranks, size, time, algbw, link, op="all-reduce"):
    if algbw is None and (size is None or time is None):
        raise SolverInputError("give size and time, or algbw", param="size")
    return nccl_busbw(op, ranks, size=_or_float(size), time=_or_float(time), algbw=_or_float(algbw),
                      link_bandwidth=_or_float(link))


@formula("run_flops", "A training run's FLOPs: GPU-hours (or days × chips) × dense peak × MFU; tokens = FLOPs / 6N.",
         (Input("mfu", "model FLOPs utilisation, 0 to 1", kind="fraction", maximum=1),
          *_PEAK_IN,
          Input("gpu_hours", "chip-time of the run (GPU-hours: 2.6e6 h)", unit="h", default=None),
          Input("days", "wall-clock time of the run (with chips)", unit="days", default=None),
          Input("chips", "chips of the run (with days)", kind="count", integer=True, minimum=1, default=None,
                aliases=("gpus",)),
          Input("params", "N: parameters (the tokens D = FLOPs / 6N)", kind="count", minimum=1, default=None,
                aliases=("N",))),
         (Output("flops", "FLOP", "GPU-seconds × peak × MFU"),
          Output("pf_days", "", "petaflop/s-days"),
          Output("tokens", "", "D = FLOPs / (6N)", ("params",))),
         solve="run-flops", source="Kaplan et al. 2020 (C = 6ND)")
def _run_flops_formula(mfu, chip, peak, dtype, gpu_hours, days, chips, params):
    return run_flops(_peak_of(chip, peak, dtype), float(mfu),
                     gpu_hours=None if gpu_hours is None else float(gpu_hours) / 3600,
                     days=None if days is None else float(days) / 86400, chips=chips,
                     params=None if params is None else float(params))


@formula("mfu_step", "MFU from a logged step time: (6N + attention)·tokens / (step time × chips × dense peak).",
         (Input("params", "N: parameters", kind="count", minimum=1, aliases=("N",)),
          Input("tokens", "tokens per optimizer step (global batch × seq)", kind="count", minimum=1, aliases=("T",)),
          Input("step_time", "seconds per step, as logged", unit="s", aliases=("time",)),
          Input("chips", "chips of the run", kind="count", integer=True, minimum=1, aliases=("gpus",)),
          *_PEAK_IN,
          Input("attention_flops", "attention FLOPs per token (PaLM's 6·L·s·d)", unit="FLOP", default=0)),
         (Output("mfu", "", "model FLOPs / available FLOPs"),
          Output("tokens_per_second", "tokens/s", "tokens / step time")),
         solve="mfu-step", source="Chowdhery et al. 2022 (PaLM), App. B")
def _mfu_step_formula(params, tokens, step_time, chips, chip, peak, dtype, attention_flops):
    return mfu_from_step(float(params), float(tokens), float(step_time), chips, _peak_of(chip, peak, dtype),
                         attention_flops_per_token=float(attention_flops))


FORMULAS = (_busbw_formula.formula, _run_flops_formula.formula, _mfu_step_formula.formula)
