"""Inference on hardware: prefill time, the decode-step lower bound, chips to hold a model.

Conventions: FLOPs count 2 per multiply-add; a forward pass costs 2·N FLOPs per token (every
weight used once in one multiply-add; attention's QKᵀ and A·V are added only when given);
"total" peak and bandwidth are per-chip figures times the number of chips (perfect sharding,
no communication cost), so every time here is a lower bound.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.systems.chips import Chip
from solver.units import dtype_bytes

if TYPE_CHECKING:  # issue 10
    from solver.systems.decode_read import ModelRead
    from solver.systems.serving import WeightBytes


def _positive(name: str, value, integer: bool = True):
    bad = value is None or isinstance(value, bool) or value <= 0 or (integer and int(value) != value)
    if bad:
        kind = "a positive integer" if integer else "positive"
        raise SolverInputError(f"must be {kind} (got {value!r})", param=name)
    return int(value) if integer else value


def _mfu(mfu: float) -> float:
    if not 0 < mfu <= 1:
        raise SolverInputError(f"must be in (0, 1] (got {mfu})", param="mfu")
    return mfu


def kv_bytes_per_token(n_layers: int, n_kv_heads: int, d_head: int, dtype: str = "bf16") -> Fraction:
    """KV-cache bytes per token: 2 (K and V) · layers · n_kv_heads · d_head · bytes."""
    return 2 * n_layers * n_kv_heads * d_head * dtype_bytes(dtype)


def kv_cache_bytes_of(cfg, batch: int, context: int, dtype: str = "bf16") -> int:
    """Issue 20: the KV cache of a ModelConfig holding ``context`` positions for ``batch`` sequences,
    exactly as ``qkv solve memory --what kv-cache`` counts it (solver.counting.memory.kv_cache_report:
    grouped heads, a sliding window's rolling buffer, latent attention's d_c + d_R)."""
    from solver.counting.memory import kv_cache_report

    return kv_cache_report(cfg, batch, context, dtype).bytes


def kv_bytes_per_token_at(cfg, context: int, dtype: str = "bf16") -> Fraction:
    """Issue 20: the cache one sequence of ``context`` positions holds, per position: the X of B·S·X that
    makes B·S·X the model's real cache (a windowed layer holds min(S, W) positions, not S)."""
    S = _positive("context", context)
    return Fraction(kv_cache_bytes_of(cfg, 1, S, dtype), S)


def prefill(params: int, tokens: int, chip: Chip, *, chips: int = 1, mfu: float = 1.0,
            flops: int | None = None) -> Result:
    """Prefill time t = FLOPs / (chips · peak · MFU), FLOPs = 2·N·T (or the exact count given)."""
    N, T = _positive("params", params), _positive("tokens", tokens)
    n, u = _positive("chips", chips), _mfu(mfu)
    peak = chip.need("peak_flops")
    r = Result(answer=None, unit="s", convention={
        "flops": "2 per multiply-add; forward = 2·N per token" if flops is None
        else "2 per multiply-add; exact matmul count of the model", "hardware": chip.origin})
    rule = 2 * N * T
    f = r.step("FLOPs = 2·N·T", f"2 × {fmt(N)} × {fmt(T)}", rule, "FLOP")
    if flops is not None:
        f = r.step("FLOPs = exact matmul count (counting engine)", f"(2·N·T would be {fmt(rule)})", flops, "FLOP")
    t = r.step("t = FLOPs / (chips · peak · MFU)", f"{fmt(f)} / ({n} × {fmt(peak)} × {u})", f / (n * peak * u), "s")
    r.answer = t
    r.breakdown.update(flops=f, flops_rule_2NT=rule, time_s=t, tokens_per_second=T / t, peak_flops=peak,
                       chips=n, mfu=u)
    return r


#: The two legitimate models of a decode step's time (both lower bounds, both named in every answer):
#: "total": the larger of all bytes over bandwidth and all FLOPs over peak (one roofline for the step);
#: "kv-plus-max": the KV-cache read time plus the larger of the weight-read and compute times, as the
#: scaling book (Austin et al., "How to Scale Your Model", inference chapter) writes it: attention's
#: KV read cannot overlap the matmuls' compute, the weight read can.
DECODE_MODELS = ("total", "kv-plus-max")


def decode_step(params: int, batch: int, context: int, kv_bytes_token: Fraction | int, chip: Chip, *,
                chips: int = 1, weight_dtype: str = "bf16", attention_flops: int = 0,
                model: str = "total", read: ModelRead | None = None, weights: WeightBytes | None = None) -> Result:
    """Lower bound of one decode step, in either of :data:`DECODE_MODELS` (both in the breakdown).

    total: max((N·w + B·S·X) / (chips·bw), FLOPs / (chips·peak)).
    kv-plus-max: B·S·X / (chips·bw) + max(N·w / (chips·bw), FLOPs / (chips·peak)).
    Every step reads all weights once (N·w bytes) and each sequence's whole KV cache
    (S tokens × X bytes per token); it does 2·N FLOPs per sequence (plus the attention
    FLOPs if given: 4·B·S·Σ_layers n_heads·d_head).

    ``read`` (issue 10, a mixture of experts, a sliding window, latent attention): the bytes a
    step really reads, from :func:`solver.systems.decode_read.model_read`: the weights of the experts the
    batch touches instead of N·w, the cache the layers hold instead of B·S·X, and 2·N_active
    FLOPs per token.
    """
    if model not in DECODE_MODELS:
        raise SolverInputError(f"must be one of {', '.join(DECODE_MODELS)} (got {model!r})", param="model")
    N, B, S = _positive("params", params), _positive("batch", batch), _positive("context", context)
    n = _positive("chips", chips)
    X = Fraction(kv_bytes_token)
    if X < 0:
        raise SolverInputError("must be >= 0", param="kv_bytes_per_token")
    w = dtype_bytes(weight_dtype)
    bw, peak = chip.need("bandwidth"), chip.need("peak_flops")
    r = Result(answer=None, unit="s", convention={
        "weights": f"{weight_dtype} ({fmt(w)} bytes/param)",
        "flops": "2 per multiply-add; 2·N per token" + (" + attention" if attention_flops else
                                                        " (attention FLOPs not included)"),
        "sharding": "weights and KV cache spread evenly over the chips; no communication time",
        "hardware": chip.origin})
    if weights is not None:  # issue 37: a quantised checkpoint's bytes (solver.systems.serving.WeightBytes)
        r.convention["weights"] = weights.text
    if read is None and weights is not None:
        wb = r.step("weight bytes = the quantised checkpoint's bytes", f"{weights.bytes:,}", Fraction(weights.bytes),
                    "bytes")
        kv = r.step("KV bytes = B·S·X", f"{B} × {fmt(S)} × {fmt(X)}", B * S * X, "bytes")
    elif read is None:
        wb = r.step("weight bytes = N·w", f"{fmt(N)} × {fmt(w)}", N * w, "bytes")
        kv = r.step("KV bytes = B·S·X", f"{B} × {fmt(S)} × {fmt(X)}", B * S * X, "bytes")
    else:  # issue 10: what a MoE / windowed / latent-attention model reads (solver.systems.decode_read)
        wb = r.step(read.weights_formula, read.weights_substituted, read.weight_bytes, "bytes")
        kv = r.step(read.kv_formula, read.kv_substituted, read.kv_bytes, "bytes")
        N = read.flop_params
        r.convention.update(read.convention)
    total = wb + kv
    tm = r.step("t_memory = (N·w + B·S·X) / (chips·bandwidth)", f"{fmt(total)} / ({n} × {fmt(bw)})",
                float(total) / (n * bw), "s")
    fl = r.step("FLOPs = 2·N·B" + (" + attention" if attention_flops else ""),
                f"2 × {fmt(N)} × {B}" + (f" + {fmt(attention_flops)}" if attention_flops else ""),
                2 * N * B + attention_flops, "FLOP")
    tc = r.step("t_compute = FLOPs / (chips·peak)", f"{fmt(fl)} / ({n} × {fmt(peak)})", fl / (n * peak), "s")
    t_total = max(tm, tc)
    t_kv, t_w = float(kv) / (n * bw), float(wb) / (n * bw)
    t_split = t_kv + max(t_w, tc)
    r.convention["model"] = ("total: max(all bytes / bandwidth, FLOPs / peak)" if model == "total" else
                             "kv-plus-max (scaling book): KV read + max(weight read, compute)")
    if model == "total":
        t = r.step("t_step ≥ max(t_memory, t_compute)", f"max({fmt(tm)}, {fmt(tc)})", t_total, "s")
    else:
        r.step("t_KV = B·S·X / (chips·bandwidth)", f"{fmt(kv)} / ({n} × {fmt(bw)})", t_kv, "s")
        r.step("t_weights = N·w / (chips·bandwidth)", f"{fmt(wb)} / ({n} × {fmt(bw)})", t_w, "s")
        t = r.step("t_step ≥ t_KV + max(t_weights, t_compute)", f"{fmt(t_kv)} + max({fmt(t_w)}, {fmt(tc)})",
                   t_split, "s")
    r.answer = t
    r.breakdown.update(model=model, time_total_model_s=t_total, time_kv_plus_max_model_s=t_split,
                       kv_time_s=t_kv, weight_time_s=t_w)
    # issue 20: the bound is what dominates the step: in kv-plus-max the KV read is memory time too
    # (a step whose KV read is most of it is not "compute" because the compute beats the weight read)
    memory_part = tm if model == "total" else t_kv + (t_w if t_w >= tc else 0)
    which = memory_part >= (tc if model == "total" else t - memory_part)
    parts = {"KV read": t_kv, "weight read": t_w, "compute": tc} if model == "kv-plus-max" else \
        {"memory (weights + KV)": tm, "compute": tc}
    top = max(parts, key=lambda k: parts[k])
    r.breakdown.update(weight_bytes=wb, kv_bytes=kv, total_bytes=total, flops=fl, memory_time_s=tm,
                       compute_time_s=tc, bound="memory" if which else "compute",
                       bound_by=f"{top}: {float(parts[top]) / float(t):.0%} of the step" if t else top,
                       tokens_per_second=B / t, tokens_per_second_per_sequence=1 / t, chips=n)
    return r


def min_chips(params: int, weight_dtype: str, hbm: float, *, kv_bytes: Fraction | int = 0,
              reserved_bytes: Fraction | int = 0, weights: WeightBytes | None = None) -> Result:
    """Fewest chips whose HBM holds the weights plus the KV cache: ⌈(N·w + KV) / (HBM − reserved)⌉, where
    ``reserved_bytes`` of each chip's HBM are kept by the runtime (0: all of HBM usable). ``weights``
    (issue 37): a quantised checkpoint's bytes in place of N·w."""
    N = _positive("params", params)
    hbm = _positive("hbm", hbm, integer=False)
    w = dtype_bytes(weight_dtype)
    if reserved_bytes < 0 or reserved_bytes >= hbm:
        raise SolverInputError(f"reserved_bytes must be at least 0 and less than hbm, got {reserved_bytes}",
                               param="reserved_bytes")
    r = Result(answer=None, unit="chips", convention={
        "weights": f"{weight_dtype} = {fmt(w)} bytes/param" + (" (two 4-bit values per byte)"
                                                              if weight_dtype.lower() == "int4" else ""),
        "memory": ("all of HBM usable" if not reserved_bytes else "HBM less the runtime's reserve usable")
        + "; no activations, workspace or fragmentation"})
    if weights is None:
        wb = r.step("weight bytes = N·w", f"{fmt(N)} × {fmt(w)}", N * w, "bytes")
    else:
        r.convention["weights"] = weights.text
        wb = r.step("weight bytes = the quantised checkpoint's bytes", f"{weights.bytes:,}", Fraction(weights.bytes),
                    "bytes")
    total = wb + Fraction(kv_bytes)
    if kv_bytes:
        r.step("total = weights + KV cache", f"{fmt(wb)} + {fmt(kv_bytes)}", total, "bytes")
    usable = Fraction(hbm) - Fraction(reserved_bytes)
    if reserved_bytes:
        r.step("usable HBM per chip = HBM − reserved", f"{fmt(hbm)} − {fmt(reserved_bytes)}", usable, "bytes")
    ratio = Fraction(total) / usable
    per = "usable HBM" if reserved_bytes else "HBM"
    chips = r.step(f"chips = ⌈total / {per}⌉", f"⌈{fmt(total)} / {fmt(usable)}⌉ = ⌈{float(ratio):.4g}⌉",
                   max(1, math.ceil(ratio)), "chips")
    r.answer = chips
    r.breakdown.update(weight_bytes=wb, kv_bytes=Fraction(kv_bytes), total_bytes=total, hbm_bytes=hbm,
                       reserved_bytes=Fraction(reserved_bytes), usable_bytes=usable, exact_ratio=float(ratio))
    return r


def kv_tokens_freed_per_step(batch: int, prompt_len: int, gen_len: int,
                             kv_bytes_token: Fraction | int = 0) -> Result:
    """Steady-state continuous batching: B·(P+G)/G cached tokens freed per decode step.

    B sequences run at once, each produces one token per step and finishes after G steps,
    holding P + G cached tokens when it does; so B/G sequences finish per step on average.
    """
    B, P, Gn = _positive("batch", batch), _positive("prompt_len", prompt_len) if prompt_len else 0, \
        _positive("gen_len", gen_len)
    r = Result(answer=None, unit="tokens/step", convention={
        "model": "steady state; every sequence has prompt P and generates G tokens; one token per step"})
    done = r.step("sequences finishing per step = B / G", f"{B} / {Gn}", Fraction(B, Gn), "sequences")
    freed = r.step("tokens freed per step = (B/G)·(P+G)", f"{fmt(done)} × ({P}+{Gn})", done * (P + Gn), "tokens")
    r.answer = freed
    r.breakdown.update(sequences_done_per_step=done, tokens_freed_per_step=freed,
                       bytes_freed_per_step=freed * Fraction(kv_bytes_token))
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's prefill(...),
# decode(...) and chips(...), from qkv solve prefill, decode and chips.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

_CHIP = Input("chip", "a chip preset (h100): its figures at the dtype", kind="chip", default=None, aliases=("hw",))
_PEAK = Input("peak", "peak FLOP/s per chip (instead of the chip's)", unit="FLOP/s", default=None,
              aliases=("peak_flops",))
_BW = Input("bandwidth", "HBM bytes/s per chip (instead of the chip's)", unit="B/s", default=None,
            aliases=("hbm_bandwidth",))
_CHIPS = Input("chips", "chips sharing the work", kind="count", integer=True, minimum=1, default=1, aliases=("gpus",))
_DTYPE = Input("dtype", "compute / KV-cache dtype (the chip's peak at it)", kind="dtype", default="bf16")
_WDTYPE = Input("weight_dtype", "weight dtype (default: dtype; int4 = 1/2 byte)", kind="dtype", default=None)
_MODEL = Input("model", "a model preset or config: its parameter count (and exact FLOPs or cache)", kind="model",
               default=None, aliases=("preset", "config"))


def _or_float(v):
    """None, or the number as a float (as the command's flags give it)."""
    return None if v is None else float(v)


def _resolve(chip, dtype, peak=None, bandwidth=None, hbm=None, hbm_figure="datasheet"):
    from solver.systems.chips import resolve_chip

    return resolve_chip(chip, dtype, peak_flops=_or_float(peak), bandwidth=_or_float(bandwidth), hbm=_or_float(hbm),
                        hbm_figure=hbm_figure)


def _model_params(model, params):
    if params is None and model is None:
        raise SolverInputError("give params= or a model", param="params")
    if params is not None:
        return params
    from solver.counting import param_count

    return param_count(model)


@formula("prefill", "Prefill time t = 2·N·T / (chips · peak · MFU) (exact matmul FLOPs with a model).",
         (Input("params", "N: parameters (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("N",)),
          Input("tokens", "T: prompt tokens", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("T", "prompt", "seq")),
          _MODEL, _CHIP, _PEAK, _CHIPS,
          Input("mfu", "model FLOPs utilisation, 0 to 1 (1: the peak)", kind="fraction", default=1, maximum=1),
          _DTYPE),
         (Output("time", "s", "FLOPs / (chips · peak · MFU)", key="time_s"),
          Output("flops", "FLOP", "2·N·T, or the model's exact matmul count"),
          Output("tokens_per_second", "tokens/s", "T / t")),
         solve="prefill", source="Kaplan et al. 2020 (2N FLOPs per token)")
def _prefill_formula(params, tokens, model, chip, peak, chips, mfu, dtype):
    flops = None
    if model is not None:
        from solver.counting import matmul_flops

        flops = matmul_flops(model, 1, int(tokens), "forward").flops
    return prefill(_model_params(model, params), tokens, _resolve(chip, dtype, peak), chips=chips,
                   mfu=float(mfu), flops=flops)


DECODE_MODEL = Convention("model", "How a decode step's time is bounded.", {
    "total": Choice("max(all bytes / bandwidth, FLOPs / peak): one roofline for the step", "Williams et al. 2009"),
    "kv-plus-max": Choice("KV read + max(weight read, compute): the KV read cannot overlap the matmuls",
                          "Austin et al., How to Scale Your Model (2025), 'Inference'")}, "total")


@formula("decode", "Lower bound of one decode step: weights N·w and the KV cache B·S·X read, 2·N·B FLOPs.",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),
          Input("batch", "B: sequences decoded together", kind="count", integer=True, minimum=1, aliases=("B",)),
          Input("context", "S: cached tokens per sequence", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("S", "seq")),
          Input("kv_bytes_per_token", "X: KV-cache bytes per token, 2·layers·kv_heads·d_head·bytes", unit="B",
                aliases=("X", "kv_per_token")),
          _CHIP, _PEAK, _BW, _CHIPS, _DTYPE, _WDTYPE),
         (Output("time", "s", "the step's lower bound in the chosen model"),
          Output("memory_time", "s", "(N·w + B·S·X) / (chips · bandwidth)", key="memory_time_s"),
          Output("compute_time", "s", "2·N·B / (chips · peak)", key="compute_time_s"),
          Output("weight_bytes", "B", "N·w"),
          Output("kv_bytes", "B", "B·S·X"),
          Output("tokens_per_second", "tokens/s", "B / t")),
         conventions=(DECODE_MODEL,), solve="decode", source="Austin et al., How to Scale Your Model (2025)")
def _decode_formula(params, batch, context, kv_bytes_per_token, chip, peak, bandwidth, chips, dtype, weight_dtype,
                    model="total"):
    r = decode_step(params, batch, context, kv_bytes_per_token, _resolve(chip, dtype, peak, bandwidth), chips=chips,
                    weight_dtype=weight_dtype or dtype, model=model)
    r.breakdown["time"] = r.answer
    return r


@formula("chips", "Fewest chips whose HBM holds the weights (and the KV cache): ⌈(N·w + B·S·X) / HBM⌉.",
         (Input("params", "N: parameters (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("N",)),
          _MODEL, _CHIP,
          Input("hbm", "HBM bytes per chip (instead of the chip's)", unit="B", default=None),
          _DTYPE, _WDTYPE,
          Input("batch", "B: sequences cached (with context)", kind="count", integer=True, minimum=1, default=None,
                aliases=("B",)),
          Input("context", "S: cached tokens per sequence", kind="count", integer=True, minimum=1, default=None,
                binary_k=True, aliases=("S", "seq")),
          Input("kv_bytes_per_token", "X: KV-cache bytes per token (or the model's own cache)", unit="B",
                default=None, aliases=("X",))),
         (Output("chips", "", "⌈total / HBM⌉", key="chips"),
          Output("total_bytes", "B", "weights + KV cache"),
          Output("weight_bytes", "B", "N·w")),
         solve="chips")
def _chips_formula(params, model, chip, hbm, dtype, weight_dtype, batch, context, kv_bytes_per_token):
    N = _model_params(model, params)
    kv: Fraction | int = 0
    if batch is not None or context is not None:
        if batch is None or context is None or (kv_bytes_per_token is None and model is None):
            raise SolverInputError("the KV cache needs batch, context and kv_bytes_per_token (or a model)",
                                   param="context")
        kv = (Fraction(kv_cache_bytes_of(model, int(batch), int(context), dtype)) if kv_bytes_per_token is None
              else Fraction(batch) * Fraction(context) * Fraction(kv_bytes_per_token))
    r = min_chips(N, weight_dtype or dtype, _resolve(chip, dtype, hbm=hbm).need("hbm"), kv_bytes=kv)
    r.breakdown["chips"] = r.answer
    return r


FORMULAS = (_prefill_formula.formula, _decode_formula.formula, _chips_formula.formula)
