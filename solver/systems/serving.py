"""Serving arithmetic: the largest batch that fits, tokens/s at it, end-to-end generation time,
cost per million tokens; speculative decoding; the compute-optimal model for a FLOP budget.

Conventions (every function here follows them):

- Memory: weights N·w plus the KV cache, B sequences × S tokens × X bytes per token, over
  ``chips`` chips of HBM each (the figure the Chip carries: datasheet or nvidia-smi, named in
  ``convention["hbm"]``); all of it usable (no activations, workspace or fragmentation).
- Decode steps are priced by :func:`solver.systems.inference.decode_step` in either named model
  ("total" or "kv-plus-max"); prefill by :func:`solver.systems.inference.prefill` (2·N FLOPs per token).
- Generation of n tokens: the prefill of B prompts of P tokens, then n decode steps; step i
  (i = 0 … n−1) reads a cache of P + i tokens per sequence. (The prefill's own logits are not
  counted as a new token.)
- Speculative decoding (Leviathan et al. 2023, §3): γ draft tokens, each accepted with
  probability α independently; a step yields (1 − α^(γ+1))/(1 − α) tokens on average (the
  accepted prefix plus one token from the target model); with a draft of relative cost c the
  wall-time speed-up is that over (γ·c + 1).
- Scaling laws (Hoffmann et al. 2022): C = 6·N·D; the "20 tokens per parameter" rule, D = 20·N,
  is a rule of thumb and named so; the fitted parametric loss of approach 3 (§3.3, eq. 10),
  L(N, D) = E + A/N^α + B/D^β with E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28, is
  minimised on C = 6ND in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.systems.chips import Chip
from solver.systems.inference import DECODE_MODELS, decode_step, prefill
from solver.units import GB, GiB, dtype_bytes

if TYPE_CHECKING:  # issue 20
    from solver.systems.decode_read import ModelRead

@dataclass(frozen=True)
class WeightBytes:
    """Issue 37: the bytes every weight of a quantised checkpoint takes, and those words for people
    (``MXFP4 (4.25 bits) for the experts, bf16 elsewhere``)."""

    bytes: int
    text: str


#: Hoffmann et al. 2022 (Chinchilla), §3.3 eq. (10): approach 3's fitted parametric loss
CHINCHILLA_FIT = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
#: Besiroglu, Erdil, Barnett and You 2024, "Chinchilla Scaling: A replication attempt" (arXiv:2404.10102,
#: Table 1): approach 3 refitted to data read off Hoffmann et al.'s Figure 4. Its optimum is close to the
#: 20 tokens per parameter rule; the published fit above gives several times fewer tokens per parameter.
BESIROGLU_FIT = {"E": 1.8172, "A": 482.01, "B": 2085.43, "alpha": 0.3478, "beta": 0.3658}
OPTIMAL_METHODS = ("fitted", "besiroglu", "rule-20")
FITS = {"fitted": CHINCHILLA_FIT, "besiroglu": BESIROGLU_FIT}


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def _pos(name: str, value, zero: bool = False):
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return value


def _hbm_text(chip: Chip) -> str:
    figure = chip.origin.get("hbm_figure")
    where = chip.origin.get("hbm", "given")
    return f"{fmt(chip.hbm)} bytes per chip ({where}" + (f", {figure} figure" if figure else "") + \
        "); all of it usable"


# ---------------------------------------------------------------------------------------
# The largest batch, and what it serves
# ---------------------------------------------------------------------------------------


def max_batch(params: int, context: int, kv_bytes_token: Fraction | int, chip: Chip, *, chips: int = 1,
              weight_dtype: str = "bf16", weights: WeightBytes | None = None) -> Result:
    """B_max = ⌊(chips·HBM − N·w) / (S·X)⌋: sequences of S tokens whose caches fit beside the weights.

    ``weights`` (issue 37): the weight bytes of a quantised checkpoint (its quantization_config laid out,
    :func:`solver.counting.quantization.quantized_weights`) in place of N·w."""
    N, S, n = _int("params", params), _int("context", context), _int("chips", chips)
    X = Fraction(kv_bytes_token)
    if X < 0:
        raise SolverInputError(f"must be >= 0 (got {X})", param="kv_bytes_per_token")
    hbm = chip.need("hbm")
    w = dtype_bytes(weight_dtype)
    r = Result(answer=None, unit="sequences", convention={
        "hbm": _hbm_text(chip), "weights": f"{weight_dtype} ({fmt(w)} bytes/param), sharded over the chips",
        "kv": "X bytes per token (2·layers·kv_heads·d_head·bytes), S tokens per sequence"})
    if weights is not None:
        r.convention["weights"] = f"{weights.text}, sharded over the chips"
    total = r.step("HBM in all = chips·HBM", f"{n} × {fmt(hbm)}", n * Fraction(hbm), "bytes")
    if weights is None:
        wb = r.step("weights = N·w", f"{fmt(N)} × {fmt(w)}", N * w, "bytes")
    else:
        wb = r.step("weights = the quantised checkpoint's bytes", f"{weights.bytes:,}", Fraction(weights.bytes),
                    "bytes")
    free = r.step("left for the cache = chips·HBM − N·w", f"{fmt(total)} − {fmt(wb)}", total - wb, "bytes")
    if free <= 0:
        raise SolverInputError(f"the weights ({float(wb) / GB:.4g} GB) do not fit in {n} × {float(hbm) / GB:.4g} GB "
                               "of HBM; add chips", param="chips")
    per_seq = r.step("cache per sequence = S·X", f"{fmt(S)} × {fmt(X)}", S * X, "bytes")
    if X == 0:  # issue 20: no cache: the weights fit, and so does any batch
        r.answer = None
        r.breakdown.update(hbm_total_bytes=total, weight_bytes=wb, free_bytes=free, kv_bytes_per_sequence=per_seq,
                           max_batch=None, max_batch_note="no KV cache (0 bytes per token): any batch fits",
                           free_GB=float(free) / GB, free_GiB=float(free) / GiB)
        return r
    B = r.step("B_max = ⌊left / (S·X)⌋", f"⌊{fmt(free)} / {fmt(per_seq)}⌋", math.floor(free / per_seq), "sequences")
    r.answer = B
    r.breakdown.update(hbm_total_bytes=total, weight_bytes=wb, free_bytes=free, kv_bytes_per_sequence=per_seq,
                       max_batch=B, free_GB=float(free) / GB, free_GiB=float(free) / GiB)
    return r


def serve(params: int, context: int, kv_bytes_token: Fraction | int, chip: Chip, *, chips: int = 1,
          weight_dtype: str = "bf16", batch: int | None = None, model: str = "total",
          price_per_chip_hour: float | None = None, read_at: Callable[[int], ModelRead] | None = None,
          weights: WeightBytes | None = None) -> Result:
    """Tokens/s at a batch (default: the largest that fits) on ``chips`` chips, from a decode model.

    Also the per-token latency (one step), the batch at which a step turns compute-bound in the
    "total" model, B_c = N·w/bw / (2N/peak − S·X/bw), and the cost per million tokens.

    ``read_at`` (issue 20): ``B ↦`` what a step of B sequences really reads
    (:func:`solver.systems.decode_read.model_read`: the experts a batch touches, 2·N_active FLOPs), as
    ``qkv solve decode`` prices a step; the batch that fits still holds every weight (N·w). With a
    mixture of experts the weights read grow with B, so B_c has no closed form: None, said so.
    """
    if model not in DECODE_MODELS:
        raise SolverInputError(f"must be one of {', '.join(DECODE_MODELS)} (got {model!r})", param="model")
    n = _int("chips", chips)
    fit = max_batch(params, context, kv_bytes_token, chip, chips=n, weight_dtype=weight_dtype, weights=weights)
    if fit.answer is None and batch is None:
        raise SolverInputError("with no KV cache (0 bytes per token) every batch fits beside the weights: give "
                               "--batch", param="batch")
    B = fit.answer if batch is None else _int("batch", batch)
    if fit.answer is not None and B < 1:
        raise SolverInputError(f"not one sequence of {context} tokens fits beside the weights; add chips",
                               param="chips")
    if fit.answer is not None and B > fit.answer:
        raise SolverInputError(f"batch {B} does not fit: at most {fit.answer} sequences of {context} tokens",
                               param="batch")
    read = read_at(B) if read_at is not None else None
    step = decode_step(params, B, context, kv_bytes_token, chip, chips=n, weight_dtype=weight_dtype, model=model,
                       read=read, weights=weights)
    r = Result(answer=None, unit="tokens/s", convention=dict(fit.convention) | {
        "batch": "the largest that fits" if batch is None else "given", **step.convention})
    r.steps = list(fit.steps) if batch is None else []
    r.steps += step.steps
    t = step.answer
    tps = r.step("tokens/s = B / t_step", f"{B} / {fmt(t)}", B / t, "tokens/s")
    r.answer = tps
    bw, peak = chip.need("bandwidth"), chip.need("peak_flops")
    N, S, X, w = params, context, Fraction(kv_bytes_token), dtype_bytes(weight_dtype)
    denom = 2 * N / peak - float(S * X) / bw
    # issue 20: a step that never turns compute-bound has no such batch: None (JSON null), said so
    b_c = float(N * w if weights is None else weights.bytes) / bw / denom if denom > 0 else None
    if read is not None and read.experts_per_layer is not None:
        b_c = None
        r.breakdown["compute_bound_note"] = ("no closed form with experts: the weights a step reads grow with B "
                                             "(qkv solve decode at a given batch says which bound holds)")
    elif b_c is None:
        r.breakdown["compute_bound_note"] = ("never: at this context one sequence's cache read alone takes longer "
                                             "than its 2·N FLOPs (S·X/bw ≥ 2N/peak)")
    r.breakdown.update(batch=B, max_batch=fit.answer, step_time_s=t, per_token_latency_s=t, tokens_per_second=tps,
                       tokens_per_second_per_chip=tps / n, compute_bound_batch=b_c, bound=step.breakdown["bound"],
                       weight_bytes=fit.breakdown["weight_bytes"], kv_bytes=step.breakdown["kv_bytes"], model=model)
    if price_per_chip_hour is not None:
        price = _pos("price_per_chip_hour", price_per_chip_hour)
        cost = r.step("cost per 10⁶ tokens = chips·price / (tokens/s · 3,600) · 10⁶",
                      f"{n} × {fmt(price)} / ({fmt(tps)} × 3,600) × 10⁶", n * price / (tps * 3600) * 1e6, "$")
        r.breakdown["cost_per_million_tokens"] = cost
    return r


def generation(params: int, prompt: int, new_tokens: int, kv_bytes_token: Fraction | int, chip: Chip, *,
               batch: int = 1, chips: int = 1, weight_dtype: str = "bf16", mfu: float = 1.0,
               model: str = "total", read: ModelRead | None = None) -> Result:
    """End-to-end time: prefill of B·P tokens, then n decode steps, step i reading P + i cached tokens.

    Closed form of Σᵢ t_step(P + i): in the "total" model t_i = max(a + k·i, c) with
    a = (N·w + B·P·X)/(chips·bw), k = B·X/(chips·bw), c = 2·N·B/(chips·peak), so the steps
    below i* = ⌈(c − a)/k⌉ cost c and the rest an arithmetic series; in "kv-plus-max"
    t_i = k·(P + i) + max(N·w/(chips·bw), c), an arithmetic series.

    ``read`` (issue 20, a mixture of experts): the weight bytes a step of B sequences reads (the experts
    they touch: the same every step, B fixed) replace N·w, and 2·N_active·B FLOPs replace 2·N·B
    (:func:`solver.systems.decode_read.model_read`); the prefill still counts 2·N per token.
    """
    if model not in DECODE_MODELS:
        raise SolverInputError(f"must be one of {', '.join(DECODE_MODELS)} (got {model!r})", param="model")
    N, P, G = _int("params", params), _int("prompt", prompt), _int("new_tokens", new_tokens)
    B, n = _int("batch", batch), _int("chips", chips)
    X = Fraction(kv_bytes_token)
    bw, peak = chip.need("bandwidth"), chip.need("peak_flops")
    w = dtype_bytes(weight_dtype)
    pre = prefill(N, B * P, chip, chips=n, mfu=mfu)
    r = Result(answer=None, unit="s", convention={
        "steps": "prefill of B·P tokens, then n decode steps; step i reads P + i cached tokens (i = 0 … n−1)",
        "prefill": pre.convention["flops"] + f"; MFU {mfu}", "decode": {
            "total": "total: max(all bytes / bandwidth, FLOPs / peak) per step",
            "kv-plus-max": "kv-plus-max (scaling book): KV read + max(weight read, compute) per step"}[model],
        "hardware": chip.origin})
    tp = r.step("t_prefill = 2·N·B·P / (chips·peak·MFU)", f"2 × {fmt(N)} × {B * P} / ({n} × {fmt(peak)} × {mfu})",
                pre.answer, "s")
    k = float(B * X) / (n * bw)
    c = 2 * (read.flop_params if read is not None else N) * B / (n * peak)
    wt = float(read.weight_bytes if read is not None else N * w) / (n * bw)
    if read is not None:
        r.convention.update({k_: v for k_, v in read.convention.items() if k_ != "kv_cache"})
    r.step("k = B·X / (chips·bw)   (seconds per cached token, per step)", f"{B} × {fmt(X)} / ({n} × {fmt(bw)})", k, "s")
    r.step("c = 2·N·B / (chips·peak)   (compute per step)", f"2 × {fmt(N)} × {B} / ({n} × {fmt(peak)})", c, "s")
    if model == "total":
        a = wt + k * P
        r.step("a = (N·w + B·P·X) / (chips·bw)   (first step's memory time)", f"{fmt(wt)} + {fmt(k)} × {P}", a, "s")
        # i* = how many steps i in 0 … n−1 have a + k·i < c (compute-bound: they cost c)
        i_star = 0 if c <= a else (G if k == 0 else min(G, math.ceil((c - a) / k)))
        rest = G - i_star
        series = rest * a + k * (i_star + G - 1) * rest / 2
        td = r.step("t_decode = i*·c + Σ_{i=i*}^{n−1} (a + k·i)", f"{i_star} × {fmt(c)} + {rest} × {fmt(a)} + "
                    f"{fmt(k)} × ({i_star} + {G - 1}) × {rest} / 2", i_star * c + series, "s")
        r.breakdown["compute_bound_steps"] = i_star
    else:
        td = r.step("t_decode = n·max(N·w/(chips·bw), c) + k·(n·P + n(n−1)/2)",
                    f"{G} × {fmt(max(wt, c))} + {fmt(k)} × ({G} × {P} + {G}×{G - 1}/2)",
                    G * max(wt, c) + k * (G * P + G * (G - 1) / 2), "s")
    total = r.step("t = t_prefill + t_decode", f"{fmt(tp)} + {fmt(td)}", tp + td, "s")
    r.answer = total
    r.breakdown.update(prefill_s=tp, decode_s=td, total_s=total, time_to_first_token_s=tp,
                       mean_step_s=td / G, tokens_generated=B * G, tokens_per_second=B * G / total, model=model)
    return r


# ---------------------------------------------------------------------------------------
# Speculative decoding
# ---------------------------------------------------------------------------------------


def expected_tokens(alpha: float, gamma: int) -> float:
    """(1 − α^(γ+1)) / (1 − α); γ + 1 when α = 1."""
    return gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


#: The most draft tokens a step is given (γ and --max-gamma): beyond it γ·c and α^γ say nothing new,
#: and a count of 10^400 no longer converts to a float.
MAX_GAMMA = 10**15


def best_gamma(alpha: float, c: float, max_gamma: int) -> int:
    """The smallest γ in 0 … ``max_gamma`` maximising f(γ) = E(γ) / (γ·c + 1).

    E is increasing and concave in γ (for α < 1), the denominator affine: f rises to its maximum,
    then never rises again, so the first γ with f(γ + 1) ≤ f(γ) is found by bisection on that
    sign, in about log₂(max_gamma) steps (a scan of 10⁹ values ran for ever). α = 1: f = (γ + 1) /
    (γc + 1), which rises for c < 1 (best: max_gamma) and otherwise does not (best: 0)."""
    def f(k: int) -> float:
        return expected_tokens(alpha, k) / (k * c + 1)

    if alpha == 1:
        return max_gamma if c < 1 else 0
    lo, hi = 0, max_gamma  # invariant: f rises at every γ < lo; the answer lies in lo … hi
    while lo < hi:
        mid = (lo + hi) // 2
        if f(mid + 1) > f(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


def speculative(alpha: float, gamma: int, *, cost: float | None = None, max_gamma: int = 64) -> Result:
    """Expected tokens per step (1 − α^(γ+1))/(1 − α); speed-up over (γc + 1); the best γ for that c."""
    if isinstance(alpha, bool) or not 0 <= alpha <= 1:
        raise SolverInputError(f"must be in [0, 1] (got {alpha!r})", param="alpha")
    g = _int("gamma", gamma, 0)
    if g > MAX_GAMMA or max_gamma > MAX_GAMMA:
        big = g if g > MAX_GAMMA else max_gamma
        shown = str(big) if big < 10**20 else f"a number of {len(str(big))} digits"
        raise SolverInputError(f"at most 10^15 draft tokens (got {shown})",
                               param="gamma" if g > MAX_GAMMA else "max_gamma")
    r = Result(answer=None, unit="tokens/step", convention={
        "source": "Leviathan et al. 2023, Fast Inference from Transformers via Speculative Decoding, §3",
        "acceptance": "each draft token accepted with probability α, independently; the target adds one token",
        "cost": "c = time of one draft step ÷ time of one target step" if cost is not None else "not given"})
    if alpha == 1:
        e = r.step("E = γ + 1   (α = 1: every draft accepted)", f"{g} + 1", g + 1.0, "tokens")
    else:
        e = r.step("E = (1 − α^(γ+1)) / (1 − α)", f"(1 − {alpha}^{g + 1}) / (1 − {alpha})", expected_tokens(alpha, g),
                   "tokens")
    r.answer = e
    r.breakdown.update(expected_tokens=e, accepted_drafts=e - 1, all_accepted_probability=alpha**g)
    if cost is not None:
        c = _pos("cost", cost, zero=True)
        s = r.step("speed-up = E / (γ·c + 1)", f"{fmt(e)} / ({g} × {c} + 1)", e / (g * c + 1), "×")
        best = best_gamma(alpha, c, _int("max_gamma", max_gamma))
        bs = expected_tokens(alpha, best) / (best * c + 1)
        r.step("best γ = argmax_γ E(γ) / (γ·c + 1)", f"γ in 0 … {max_gamma}", best, "")
        r.breakdown.update(speedup=s, best_gamma=best, best_speedup=bs)
    return r


# ---------------------------------------------------------------------------------------
# Compute-optimal model (Chinchilla)
# ---------------------------------------------------------------------------------------


def chinchilla_loss(params: float, tokens: float, fit: dict[str, float] | None = None) -> float:
    """L(N, D) = E + A/N^α + B/D^β with the fitted constants of approach 3 (Hoffmann et al. 2022, eq. 10),
    or those of ``fit`` (:data:`BESIROGLU_FIT`)."""
    f = fit or CHINCHILLA_FIT
    return f["E"] + f["A"] / params ** f["alpha"] + f["B"] / tokens ** f["beta"]


def compute_optimal(compute: float, *, method: str = "fitted") -> Result:
    """N and D for a budget C = 6·N·D: the fitted law's minimum, or the 20-tokens-per-parameter rule."""
    C = _pos("compute", compute)
    if method not in OPTIMAL_METHODS:
        raise SolverInputError(f"must be one of {', '.join(OPTIMAL_METHODS)} (got {method!r})", param="method")
    f = FITS.get(method, CHINCHILLA_FIT)
    r = Result(answer=None, unit="parameters", convention={
        "compute": "C = 6·N·D (2 forward + 4 backward FLOPs per parameter per token)",
        "method": {"fitted": "the fitted parametric loss of Hoffmann et al. 2022 (approach 3, eq. 10): E = 1.69, "
                             "A = 406.4, B = 410.7, α = 0.34, β = 0.28",
                   "besiroglu": "Besiroglu et al. 2024's refit of approach 3 (arXiv:2404.10102, Table 1): E = 1.8172, "
                                "A = 482.01, B = 2085.43, α = 0.3478, β = 0.3658",
                   "rule-20": "the rule of thumb D ≈ 20·N (not a fit: a rounded reading of the paper's tables)"}[method]})
    if method == "rule-20":
        N = r.step("N = √(C / 120)   (C = 6·N·20N)", f"√({fmt(C)} / 120)", math.sqrt(C / 120), "parameters")
        D = r.step("D = 20·N", f"20 × {fmt(N)}", 20 * N, "tokens")
    else:
        a, b = f["alpha"], f["beta"]
        G = r.step("G = (α·A / (β·B))^(1/(α+β))", f"({a} × {f['A']} / ({b} × {f['B']}))^(1/{a + b:g})",
                   (a * f["A"] / (b * f["B"])) ** (1 / (a + b)), "")
        N = r.step("N_opt = G·(C/6)^(β/(α+β))", f"{fmt(G)} × ({fmt(C)}/6)^{b / (a + b):.6g}", G * (C / 6) ** (b / (a + b)),
                   "parameters")
        D = r.step("D_opt = (C/6) / N_opt", f"({fmt(C)}/6) / {fmt(N)}", C / 6 / N, "tokens")
    loss = r.step("L(N, D) = E + A/N^α + B/D^β", f"{f['E']} + {f['A']}/{fmt(N)}^{f['alpha']} + {f['B']}/{fmt(D)}^{f['beta']}",
                  chinchilla_loss(N, D, f), "nats/token")
    r.answer = N
    r.breakdown.update(params=N, tokens=D, tokens_per_param=D / N, loss=loss, method=method)
    return r


def overtraining(params: float, tokens: float, *, method: str = "fitted") -> Result:
    """How far a run is from compute-optimal: D/N against the optimum of ``method`` (as
    :func:`compute_optimal`) for the same C = 6ND, and the loss under that method's fit."""
    N, D = _pos("params", params), _pos("tokens", tokens)
    C = 6 * N * D
    opt = compute_optimal(C, method=method)
    r = Result(answer=None, unit="×", convention={"optimum": opt.convention["method"], "compute": "C = 6·N·D"})
    r.step("C = 6·N·D", f"6 × {fmt(N)} × {fmt(D)}", C, "FLOP")
    r.steps += opt.steps
    k = r.step("over-training factor = D / D_opt", f"{fmt(D)} / {fmt(opt.breakdown['tokens'])}", D / opt.breakdown["tokens"], "×")
    loss = chinchilla_loss(N, D, FITS.get(method, CHINCHILLA_FIT))
    r.answer = k
    r.breakdown.update(compute=C, optimal_params=opt.answer, optimal_tokens=opt.breakdown["tokens"], loss=loss,
                       optimal_loss=opt.breakdown["loss"], tokens_per_param=D / N)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's serve(...),
# generate(...), speculative(...), compute_optimal(...) and overtraining(...), from qkv solve serve,
# generate, speculative and compute-optimal.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402
from solver.systems.inference import DECODE_MODEL  # noqa: E402

_CHIP_IN = (Input("chip", "a chip preset (h100): its figures at the dtype", kind="chip", default=None, aliases=("hw",)),
            Input("peak", "peak FLOP/s per chip (instead of the chip's)", unit="FLOP/s", default=None,
                  aliases=("peak_flops",)),
            Input("bandwidth", "HBM bytes/s per chip (instead of the chip's)", unit="B/s", default=None,
                  aliases=("hbm_bandwidth",)))
_SERVING_IN = (Input("chips", "chips sharing the weights and cache", kind="count", integer=True, minimum=1, default=1,
                     aliases=("gpus",)),
               Input("dtype", "compute / KV-cache dtype (the chip's peak at it)", kind="dtype", default="bf16"),
               Input("weight_dtype", "weight dtype (default: dtype)", kind="dtype", default=None))


def _or_float(v):
    """None, or the number as a float (as the command's flags give it)."""
    return None if v is None else float(v)


def _serving_chip(chip, dtype, peak, bandwidth, hbm=None):
    from solver.systems.chips import resolve_chip

    return resolve_chip(chip, dtype, peak_flops=_or_float(peak), bandwidth=_or_float(bandwidth), hbm=_or_float(hbm))


@formula("serve", "Largest batch whose KV cache fits beside the weights, and tokens/s and per-token latency at it.",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),
          Input("context", "S: tokens cached per sequence", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("S", "seq")),
          Input("kv_bytes_per_token", "X: KV-cache bytes per token", unit="B", aliases=("X",)),
          *_CHIP_IN,
          Input("hbm", "HBM bytes per chip (instead of the chip's)", unit="B", default=None),
          *_SERVING_IN,
          Input("batch", "B: sequences (default: the largest that fits)", kind="count", integer=True, minimum=1,
                default=None, aliases=("B",)),
          Input("price_per_chip_hour", "dollars per chip-hour (cost per 10⁶ tokens)", kind="fraction", default=None,
                maximum=None, aliases=("price",))),
         (Output("tokens_per_second", "tokens/s", "B / t_step"),
          Output("batch", "", "the batch served"),
          Output("max_batch", "", "the largest batch that fits"),
          Output("latency", "s", "one step: the per-token latency", key="step_time_s"),
          Output("compute_bound_batch", "", "the batch where a step turns compute-bound"),
          Output("cost_per_million_tokens", "", "dollars per 10⁶ tokens", ("price_per_chip_hour",))),
         conventions=(DECODE_MODEL,), solve="serve", source="Austin et al., How to Scale Your Model (2025), 'Inference'")
def _serve_formula(params, context, kv_bytes_per_token, chip, peak, bandwidth, hbm, chips, dtype, weight_dtype, batch,
                   price_per_chip_hour, model="total"):
    return serve(params, context, kv_bytes_per_token, _serving_chip(chip, dtype, peak, bandwidth, hbm), chips=chips,
                 weight_dtype=weight_dtype or dtype, batch=batch, model=model,
                 price_per_chip_hour=None if price_per_chip_hour is None else float(price_per_chip_hour))


@formula("generate", "End-to-end time of a prompt and n new tokens: the prefill, then n decode steps as the cache grows.",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),
          Input("prompt", "P: prompt tokens per sequence", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("P", "prompt_tokens")),
          Input("new_tokens", "n: tokens generated per sequence", kind="count", integer=True, minimum=1,
                binary_k=True, aliases=("n", "max_new_tokens", "output_tokens")),
          Input("kv_bytes_per_token", "X: KV-cache bytes per token", unit="B", aliases=("X",)),
          Input("batch", "B: sequences", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
          *_CHIP_IN, *_SERVING_IN,
          Input("mfu", "the prefill's MFU, 0 to 1", kind="fraction", default=1, maximum=1)),
         (Output("time", "s", "prefill + decode", key="total_s"),
          Output("prefill", "s", "the prefill: the time to the first token", key="prefill_s"),
          Output("decode", "s", "the n decode steps", key="decode_s")),
         conventions=(DECODE_MODEL,), solve="generate", source="Austin et al., How to Scale Your Model (2025)")
def _generate_formula(params, prompt, new_tokens, kv_bytes_per_token, batch, chip, peak, bandwidth, chips, dtype,
                      weight_dtype, mfu, model="total"):
    return generation(params, prompt, new_tokens, kv_bytes_per_token, _serving_chip(chip, dtype, peak, bandwidth),
                      batch=batch, chips=chips, weight_dtype=weight_dtype or dtype, mfu=float(mfu), model=model)


@formula("speculative", "Speculative decoding: expected tokens per target step (1 − α^(γ+1))/(1 − α), the speed-up "
         "E/(γ·c + 1), the best γ.",
         (Input("alpha", "α: probability a draft token is accepted", kind="fraction", maximum=1, aliases=("a",)),
          Input("gamma", "γ: draft tokens per step", kind="count", integer=True, minimum=0, maximum=10**15,
                aliases=("g", "draft_tokens")),
          Input("cost", "c: a draft step's time ÷ a target step's", kind="fraction", default=None, maximum=10**6,
                aliases=("c",)),
          Input("max_gamma", "the largest γ tried for the best γ", kind="count", integer=True, minimum=1, default=64,
                maximum=10**15)),
         (Output("tokens", "", "expected tokens per target step", key="expected_tokens"),
          Output("speedup", "", "E / (γ·c + 1)", ("cost",)),
          Output("best_gamma", "", "the γ of the largest speed-up", ("cost",)),
          Output("best_speedup", "", "the speed-up at the best γ", ("cost",))),
         solve="speculative", source="Leviathan et al. 2023, §3")
def _speculative_formula(alpha, gamma, cost, max_gamma):
    return speculative(float(alpha), gamma, cost=None if cost is None else float(cost), max_gamma=max_gamma)


OPTIMAL_METHOD = Convention("method", "Which law sets the compute-optimal N and D.", {
    "fitted": Choice("the fitted loss of approach 3: E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28",
                     "Hoffmann et al. 2022 (Chinchilla), eq. 10"),
    "besiroglu": Choice("approach 3 refitted: near 20 tokens per parameter", "Besiroglu et al. 2024, Table 1"),
    "rule-20": Choice("D = 20·N, N = √(C/120) (a rule of thumb)", "Hoffmann et al. 2022, Table 3 (rounded)")},
    "fitted")


@formula("compute_optimal", "Compute-optimal N and D for a budget C = 6·N·D (Chinchilla).",
         (Input("compute", "C: the FLOP budget", unit="FLOP", aliases=("C", "flops", "budget")),),
         (Output("params", "", "N: parameters"),
          Output("tokens", "", "D: training tokens"),
          Output("tokens_per_param", "", "D / N"),
          Output("loss", "", "the fitted loss L(N, D), nats per token")),
         conventions=(OPTIMAL_METHOD,), solve="compute-optimal", source="Hoffmann et al. 2022 (Chinchilla)")
def _compute_optimal_formula(compute, method="fitted"):
    return compute_optimal(float(compute), method=method)


@formula("overtraining", "How far a run of N parameters and D tokens is from compute-optimal: D / D_opt at the same "
         "C = 6·N·D.",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),
          Input("tokens", "D: training tokens", kind="count", integer=True, minimum=1, aliases=("D",))),
         (Output("factor", "", "over-training factor D / D_opt", key="overtraining_factor"),
          Output("optimal_params", "", "N_opt at the same compute"),
          Output("optimal_tokens", "", "D_opt at the same compute"),
          Output("loss", "", "the fitted loss of the run")),
         conventions=(OPTIMAL_METHOD,), solve="compute-optimal", source="Hoffmann et al. 2022 (Chinchilla)")
def _overtraining_formula(params, tokens, method="fitted"):
    r = overtraining(params, tokens, method=method)
    r.breakdown["overtraining_factor"] = r.answer
    return r


FORMULAS = (_serve_formula.formula, _generate_formula.formula, _speculative_formula.formula,
            _compute_optimal_formula.formula, _overtraining_formula.formula)
