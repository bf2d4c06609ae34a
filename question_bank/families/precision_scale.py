"""Low precision and training at scale, part 2 (issue 25): whether a 3D-parallel run fits a chip's memory,
the memory of FP8 training, a run's FLOPs from its GPU-hours or days × chips, and per-tensor against
per-channel against per-block quantisation scales.

Keys are the solver's (``solver.systems.training_scale.fit_3d``, ``solver.kernels.quant_error``'s
``fp8_training_memory`` and ``quantize_matrix``, ``solver.systems.measurements.run_flops``); each
misconception is the same solver call (or the solver's figures) with the mistake applied.
"""

from __future__ import annotations

import math
from fractions import Fraction

from question_bank.families.counting_common import nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = ("issue 25; Korthikanti et al. 2022 (activations with tensor and sequence parallelism); Rajbhandari et al. "
        "2020 (ZeRO); Narayanan et al. 2021 (1F1B); NVIDIA Transformer Engine; DeepSeek-V3 technical report §3.3")


def _blind_ok(value: float, printed: list[float]) -> bool:
    return value not in (0, 1) and all(abs(value - p) > 1e-12 for p in printed)


def _even_rounding(value: float, decimals: int, margin: float = 0.1) -> bool:
    """``safe_for_rounding`` with a band of the same width kept out around the whole units too (the last digit's
    fraction in [0.1, 0.4] or [0.6, 0.9]). Issue 39: keeping out only the keys near a half made a doubled key round
    to exactly twice the key's text more often (62 % against 50 %), so the option an exact ×2 or ÷2 away from
    another was the key more often than not; with both bands out, as often as any other option."""
    frac = abs(value) * 10**decimals % 1
    return margin <= frac <= 0.5 - margin or 0.5 + margin <= frac <= 1 - margin


# ---------------------------------------------------------------------------------------
# Does a 3D-parallel configuration fit?
# ---------------------------------------------------------------------------------------

#: (parameters, layers, d_model, heads): LLaMA / Llama 2 and GPT-3 shapes (their papers' tables)
_MODELS = ((7 * 10**9, 32, 4096, 32), (13 * 10**9, 40, 5120, 40), (33 * 10**9, 60, 6656, 52),
           (65 * 10**9, 80, 8192, 64), (70 * 10**9, 80, 8192, 64), (175 * 10**9, 96, 12288, 96))
_HBM = {"h100-sxm": "H100 SXM (80 GB)", "h200": "H200 (141 GB)", "mi300x": "MI300X (192 GB)"}


@family("training.fit_3d", topic="parallelism", title="Does a TP × PP × DP run fit? Memory per GPU",
        types=("nat",), tags=("3d-parallelism", "zero", "sequence-parallelism", "1f1b", "memory"), source=_SRC)
def fit_3d_family(d: Draw) -> Problem:
    """Per GPU of the first stage: (2 + 2 + 12/d)·P/(t·p) bytes of model states under ZeRO-1 (gradients / d too
    under ZeRO-2), plus (L/p)·min(p, m) layers of activations, 34·s·b·h/t each with sequence parallelism and
    selective recomputation (s·b·h·(10 + 24/t) without)."""
    from solver.systems.chips import get_hardware
    from solver.systems.training_scale import fit_3d

    # Levels (disjoint): easy, the model states per GPU under ZeRO-1 (no activations); medium, the activations the
    # first stage holds (sequence parallel, selective recomputation, m > p micro-batches per step); hard, the HBM
    # left on a named chip (negative: it does not fit), ZeRO-1 or 2, sequence parallelism on or off.
    for _ in range(300):
        P, L, h, a = d.pick(_MODELS)
        t = d.pick((2, 4, 8))
        p = d.pick([q for q in (2, 4, 8, 16) if L % q == 0 and q < L])
        dp = d.pick((4, 8, 16, 32, 64))
        # issue 39: any sequence length in multiples of 256 (log-uniform) and micro-batches of 1 to 4, so that keys
        # rarely repeat across draws
        s, b = 256 * round(d.log_uniform(4, 32, None)), d.pick((1, 2, 3, 4))
        m = d.rng.randint(max(2, p // 2), 4 * p)  # fewer than p now and then: then all m are in flight
        zero = 1 if d.level < 2 else d.pick((1, 2))
        sp = True if d.level < 2 else d.pick((True, False))
        hw = d.pick(tuple(_HBM)) if d.level == 2 else None
        hbm = get_hardware(hw).hbm_bytes if hw else None

        cfg = dict(tp=t, pp=p, dp=dp, zero_stage=zero, microbatches=m, sequence_parallel=sp, recompute="selective",
                   hbm=hbm)
        r = fit_3d(P, L, h, a, s, b, **cfg)
        br = r.breakdown
        states = br["weights_bytes"] + br["gradients_bytes"] + br["optimizer_bytes"]
        if d.level == 0:
            figure = lambda res: res.breakdown["weights_bytes"] + res.breakdown["gradients_bytes"] + \
                res.breakdown["optimizer_bytes"]  # noqa: E731
        elif d.level == 1:
            figure = lambda res: res.breakdown["activations_bytes"]  # noqa: E731
        else:
            figure = lambda res: res.breakdown["left_bytes"]  # noqa: E731
        value = float(figure(r)) / 1e9
        printed = [P / 1e9, L, h, a, t, p, dp, s, b, m] + ([hbm / 1e9] if hbm else [])
        if safe_for_rounding(value, 2, 0.1) and _blind_ok(round(value, 2), printed) and abs(value) >= 0.05:
            break

    def solve(**kw):
        return fit_3d(P, L, h, a, s, b, **{**cfg, **kw})

    per_layer = br["activations_per_layer_bytes"]
    layers_here = L // p
    all_m = Fraction(layers_here * m) * per_layer  # every micro-batch's activations kept
    wrongs = [Wrong("zero_not_sharded", "did not divide the optimizer states by d (ZeRO-1 shards them)",
                    "ZeRO stage 1 keeps 12/d bytes of optimizer state (fp32 master, Adam m, v) per parameter.",
                    float(figure(solve(zero_stage=0))) / 1e9) if d.level != 1 else None,
              Wrong("pp_not_divided", "split the parameters over t only, not t·p",
                    "Each pipeline stage holds L/p of the layers: P/(t·p) parameters per GPU.",
                    float(states * p) / 1e9 if d.level == 0 else
                    float(br["left_bytes"] - states * (p - 1)) / 1e9 if d.level == 2 else None)]
    if d.level >= 1:
        if m < p:  # the mistake the other way round: p in flight although only m micro-batches exist
            all_m = Fraction(layers_here * p) * per_layer
        shift = (all_m - br["activations_bytes"])
        wrongs += [Wrong("all_microbatches", f"kept all m = {m} micro-batches' activations, not the p in flight",
                         "1F1B starts a backward as soon as the first micro-batch reaches the last stage: stage 1 "
                         "holds at most min(p, m) micro-batches.",
                         float(all_m if d.level == 1 else br["left_bytes"] - shift) / 1e9) if m > p else
                   Wrong("p_in_flight", f"counted p = {p} micro-batches in flight although a step runs only m = {m}",
                         "Stage 1 holds min(p, m) micro-batches: with m < p every micro-batch is in flight at once.",
                         float(all_m if d.level == 1 else br["left_bytes"] - shift) / 1e9) if m < p else None,
                   Wrong("sp_ignored" if sp else "sp_assumed",
                         "did not divide the LayerNorm/dropout activations (10·s·b·h) by t under sequence parallelism"
                         if sp else "divided the LayerNorm/dropout activations by t without sequence parallelism",
                         "Tensor parallelism alone replicates the 10·s·b·h of LayerNorm inputs and dropout masks; "
                         "sequence parallelism splits them over the t ranks.",
                         float(figure(solve(sequence_parallel=not sp))) / 1e9),
                   Wrong("all_layers", "counted all L layers on the first stage, not L/p",
                         "A stage holds L/p layers.",
                         float(figure(r) * p if d.level == 1 else br["left_bytes"] - br["activations_bytes"] * (p - 1))
                         / 1e9)]
    if d.level == 2 and zero == 2:
        wrongs.append(Wrong("zero2_grads", "left the gradients unsharded under ZeRO-2",
                            "ZeRO stage 2 shards the gradients over d as well as the optimizer states.",
                            float(figure(solve(zero_stage=1))) / 1e9))
    if d.level == 2:
        wrongs.append(Wrong("gib", "counted memory in GiB against the GB capacity",
                            "The datasheet's capacity is in GB (10^9 bytes); count the use in the same unit.",
                            (hbm - float(br["total_bytes"]) * 1e9 / 2**30) / 1e9))
    key = nat_key(value, 2, unit="GB")
    st = Doc()
    cfg = (f"A {P / 1e9:g}B-parameter transformer ({L} layers, $d_{{model}} = {h:,}$, {a} heads) trains with tensor "
           f"parallelism $t = {t}$, pipeline parallelism $p = {p}$ (1F1B) and data parallelism $d = {dp}$")
    states_txt = ("bf16 weights (2 bytes), bf16 gradients (2 bytes) and Adam's optimizer states (fp32 master weights, "
                  "m and v: 12 bytes) per parameter, split evenly over the $t \\cdot p$ model-parallel ranks")
    act_txt = ("Activations per layer follow Korthikanti et al. (2022) with selective recomputation: $s b h (10 + 24/t)$ "
               "bytes per GPU without sequence parallelism, where the $10\\,s b h$ (LayerNorm inputs, dropout masks) "
               "are replicated by tensor parallelism and sequence parallelism splits them over the $t$ ranks too")
    if d.level == 0:
        st.p(f"{cfg}, with ZeRO stage 1. Count {states_txt}.")
        st.p("How many bytes of model states (weights, gradients and optimizer states; no activations) does each GPU "
             "hold? Give GB ($10^9$ bytes), rounded off to two decimal places.")
    elif d.level == 1:
        st.p(f"{cfg}, with sequence parallelism. Sequences are $s = {s:,}$ tokens, micro-batches $b = {b}$ sequence{'s' if b > 1 else ''}, "
             f"and each optimizer step runs $m = {m}$ micro-batches through the pipeline. {act_txt}.")
        st.p("How many bytes of activations does a GPU of the first pipeline stage hold at its peak? Give GB "
             "($10^9$ bytes), rounded off to two decimal places.")
    else:
        st.p(f"{cfg}, with ZeRO stage {zero} and {'with' if sp else 'without'} sequence parallelism, on {_HBM[hw]} "
             f"GPUs. Sequences are $s = {s:,}$ tokens, micro-batches $b = {b}$ sequence{'s' if b > 1 else ''}, and each optimizer step runs "
             f"$m = {m}$ micro-batches. Count {states_txt}, ZeRO sharding over $d$. {act_txt}.")
        st.p("How much of a first-stage GPU's memory is left once the model states and the activations at their peak "
             "are counted (negative if the configuration does not fit)? Give GB ($10^9$ bytes), rounded off to two "
             "decimal places.")
    notes = [f"The first stage holds $\\min(p, m) = {br['microbatches_in_flight']}$ micro-batches' activations of "
             f"$L/p = {layers_here}$ layers."] if d.level else []
    if d.level == 2:
        notes.append(f"Left: ${hbm / 1e9:g} - {float(br['total_bytes']) / 1e9:.4f} = {value:.4f}$ GB: "
                     + ("it fits." if br["fits"] else "it does not fit."))
    if d.level == 0:
        notes.append(f"Model states $= {float(br['weights_bytes']):,.0f} + {float(br['gradients_bytes']):,.0f} + "
                     f"{float(br['optimizer_bytes']):,.0f} = {float(states):,.0f}$ bytes $= {value:.4f}$ GB.")
    steps = r.steps if d.level else r.steps[:4]
    return nat_problem(d, st, key, steps, wrongs, notes=notes,
                       given={"P": P, "L": L, "h": h, "a": a, "t": t, "p": p, "d": dp, "s": s, "b": b, "m": m,
                              "zero": zero, "sp": sp, "hbm": hbm, "ask": ("states", "activations", "left")[d.level]})


# ---------------------------------------------------------------------------------------
# The memory of FP8 training
# ---------------------------------------------------------------------------------------

_RECIPE_TEXT = {
    "fp8-te": "NVIDIA Transformer Engine's FP8 recipe: the matmuls read an FP8 copy of the weights (cast once per "
              "step), while the bf16 weights, the fp32 master weights, the bf16 gradients and Adam's fp32 moments "
              "m and v are kept as in bf16 mixed precision",
    # DeepSeek-V3 technical report, section 3.3. Issue 39: the section's number is not printed: a number in one
    # recipe's text alone told the recipe, and with it which way the moments' slip goes (below)
    "fp8-deepseek-v3": "DeepSeek-V3's FP8 recipe: the weights the matmuls read are FP8, the master weights and the "
                       "gradients are fp32, and Adam's moments m and v are bf16",
}
#: the optimizer's tensors (ZeRO-1 shards them): the fp32 master weights and Adam's moments
_SHARDED = ("fp32_master_weights_bytes", "adam_m_bytes", "adam_v_bytes")


def _fp8_states(recipe: str, N: int, *, rows=None):
    """(replicated, sharded, Result) model-state bytes of N parameters: the solver's figures, or ``rows`` (the
    recipe with a mistake applied) counted the same way (Result None)."""
    from solver.kernels.quant_error import fp8_training_memory

    if rows is None:
        r = fp8_training_memory(N, recipe)
        sharded = sum(r.breakdown[k] for k in _SHARDED)
        return r.breakdown["total_bytes"] - sharded, sharded, r
    opt = [b for n, b, _ in rows if n.startswith(("fp32 master", "Adam"))]
    return N * (sum(b for _, b, _ in rows) - sum(opt)), N * sum(opt), None


@family("precision.fp8_memory", topic="quantisation", title="Model-state memory of FP8 training",
        types=("nat",), tags=("fp8", "mixed-precision", "memory", "zero", "training"), source=_SRC,
        # issue 39, its MCQ view (medium, hard: per GPU, in GB or GiB, named in words): the unit's slip and Adam's
        # moments in the other recipe's precision, each going the way the statement's words say. GiB asked: GB given,
        # up × 1.0737; GB asked: GiB given, down; Transformer Engine's fp32 moments taken as bf16: down, DeepSeek-V3's
        # bf16 as fp32: up, by the same factor (5 + 12/d)/(5 + 8/d). Every option is then a value of the same printed
        # figures in one of the units and recipes, and neither step's size tells its way. Not "t only" (× p or ÷ p: an
        # exact multiple of a printed number between the options' two columns), the ZeRO slips (one way, by factors of
        # 1.5 to 3) nor ±1 byte of FP8 weights (1 + 1/K up against 1/(1 − 1/K) down with K in 5 to 6.5 bytes: the
        # step's size told its way)
        view_slips=("gb_for_gib", "gib_for_gb", "moments_bf16", "moments_fp32"))
def fp8_memory_family(d: Draw) -> Problem:
    """Bytes per parameter: Transformer Engine 2 + 1 + 4 + 2 + 4 + 4 = 17 (bf16 and fp8 weights, fp32 master, bf16
    gradients, fp32 m and v); DeepSeek-V3 1 + 4 + 4 + 2 + 2 = 13. ZeRO-1 divides the master weights and moments
    by d; tensor and pipeline parallelism divide everything by t·p."""
    from solver.kernels.quant_error import FP8_RECIPES

    # Levels (disjoint): easy, the total model states of a recipe in GB; medium, per GPU under ZeRO-1 over d
    # data-parallel GPUs, in GB; hard, per GPU with tensor and pipeline parallelism too, in GiB.
    for _ in range(300):
        recipe = d.pick(("fp8-te", "fp8-deepseek-v3"))
        N = d.rng.randint(10, 200 if d.level == 1 else 1800) * 10**8  # ZeRO-1 alone: a model that could fit
        if d.level:
            # Issue 39: per GPU, to hundredths of a billion (Llama 3.1 70B has 70.55 billion): with tenths, the GB
            # figures often came out whole or half-way (57.00), which told the unit's slip from its inverse
            N += d.rng.randrange(10) * 10**7
        dp = d.pick((8, 16, 32, 64, 128)) if d.level else 1
        t, p = (d.pick((2, 4, 8)), d.pick((2, 4, 8))) if d.level == 2 else (1, 1)
        if d.level:
            # Issue 39: any number of replicas from 8 to 128 and any number of pipeline stages from 2 to 16 (Llama 3
            # 405B: 16 stages; Dubey et al. 2024, arXiv:2407.21783, table 4): with powers of two alone, an option's
            # distance from N in log space, t·p a power of two, told the GB figure from the key
            dp = d.rng.randint(8, 128)
            p = d.rng.randint(2, 16) if d.level == 2 else 1
        div, unit = (2**30, "GiB") if d.level == 2 else (10**9, "GB")
        rep, shd, r = _fp8_states(recipe, N)

        def per_gpu(rep_, shd_, *, shard=dp, mp=t * p, unit_div=div):
            return float(Fraction(rep_ + Fraction(shd_, shard), mp)) / unit_div

        value = per_gpu(rep, shd)
        # Issue 39: per GPU, the answer of each recipe in each unit (the MCQ's four options: the unit's slip and the
        # moments' slip turn one into another) passes the same checks as the key, so whether a draw is kept says
        # nothing of which of the four was asked (the key alone kept off a half-way digit left the other recipe's GB
        # figure there, an even last digit a learned attacker struck out)
        other = 2**30 if div == 10**9 else 10**9
        fair = [value] if not d.level else [
            per_gpu(*_fp8_states(rc, N)[:2], unit_div=u) for rc in ("fp8-te", "fp8-deepseek-v3")
            for u in (div, other, div * div / other)]
        # hard: each model-parallel rank holds a billion parameters or more (a model is split as far as it must be:
        # Llama 3 405B over t·p = 128 ranks, 3.2 billion each); issue 39: a 1-billion-parameter model over 128 ranks
        # gave keys of a few hundredths of a GiB that repeated across draws
        if all(safe_for_rounding(v, 2, 0.1) and _blind_ok(round(v, 2), [N / 1e9, dp, t, p]) and v >= 0.05
               for v in fair) and N >= t * p * 10**9 * (d.level == 2):
            break
    rows = FP8_RECIPES[recipe]

    def mistake(change) -> float:
        return per_gpu(*_fp8_states(recipe, N, rows=[change(row) for row in rows])[:2])

    wrongs = [Wrong("master_fp8", "kept the master weights in FP8 (1 byte)",
                    "The optimizer updates an fp32 master copy (4 bytes): FP8 is only the matmuls' operand; small "
                    "updates vanish in FP8.",
                    mistake(lambda row: (row[0], 1, row[2]) if row[0].startswith("fp32 master") else row)),
              Wrong("all_fp8", "counted every state at 1 byte (FP8 everywhere)",
                    "Only the GEMM operands are FP8; master weights, gradients and moments stay in higher precision.",
                    mistake(lambda row: (row[0], 1, row[2]))),
              Wrong("bf16_mixed", "counted bf16 mixed precision's 16 bytes per parameter",
                    "The FP8 recipe changes which copies exist: count its own tensors.",
                    per_gpu(*_fp8_states("bf16-mixed", N)[:2]))]
    if recipe == "fp8-te":
        wrongs.append(Wrong("fp8_copy_forgotten", "forgot the FP8 weight copy",
                            "Transformer Engine keeps the bf16 weights and casts an FP8 copy for the matmuls: both exist.",
                            mistake(lambda row: (row[0], 0, row[2]) if row[0].startswith("fp8") else row)))
        # Issue 39: each recipe's moments in the other's precision: Transformer Engine's fp32 m and v taken as bf16
        # (DeepSeek-V3's), or DeepSeek-V3's bf16 as fp32. Either slip turns one recipe's bytes per parameter into the
        # other's (5 + 12/d against 5 + 8/d), so both move the key by the same factor, one down, one up, with the
        # recipe (named in words, no figure) saying which
        wrongs.append(Wrong("moments_bf16", "kept Adam's moments in bf16 (2 bytes each)",
                            "Transformer Engine keeps Adam's m and v in fp32 (4 bytes each), as in bf16 mixed precision.",
                            mistake(lambda row: (row[0], 2, row[2]) if row[0].startswith("Adam") else row)))
    else:
        wrongs.append(Wrong("moments_fp32", "kept Adam's moments in fp32",
                            "DeepSeek-V3 stores m and v in bf16 (2 bytes each).",
                            mistake(lambda row: (row[0], 4, row[2]) if row[0].startswith("Adam") else row)))
    if d.level:
        # the MCQ's slip first: where the key is small, the master weights in FP8 (3/d bytes less) print as the moments
        # in bf16 (4/d less) and the two are one option, at the first one's value (issue 39: the other recipe's figure)
        moments = next(w for w in wrongs if w.id in ("moments_bf16", "moments_fp32"))
        wrongs = [moments, *(w for w in wrongs if w is not moments)]
        wrongs += [Wrong("master_not_sharded", "sharded only Adam's m and v, not the fp32 master weights",
                         "ZeRO-1's optimizer states are the master weights and both moments: all are split over d.",
                         per_gpu(rep + 4 * N, shd - 4 * N)),
                   Wrong("not_sharded", "did not shard anything over d", "ZeRO-1 splits the optimizer states over the "
                         "d data-parallel ranks.", per_gpu(rep, shd, shard=1)),
                   Wrong("zero3", "divided everything by d", "ZeRO-1 shards the optimizer states only; the weights "
                         "and gradients stay whole on every rank.", per_gpu(Fraction(rep, dp), shd))]
    if d.level == 1:
        wrongs.append(Wrong("gib_for_gb", "divided by 2^30 where GB was asked", "1 GB = 10^9 bytes.",
                            per_gpu(rep, shd, unit_div=2**30), inverse="converted to GB twice (× 1.0737 once more)"))
    if d.level == 2:
        wrongs += [Wrong("gb_for_gib", "divided by 10^9 where GiB was asked", "1 GiB = 2^30 bytes.",
                         per_gpu(rep, shd, unit_div=10**9), inverse="converted to GiB twice (× 0.9313 once more)"),
                   Wrong("tp_only", "divided by t only, not t·p", "Pipeline stages split the layers: P/(t·p) "
                         "parameters per GPU.", per_gpu(rep, shd, mp=t), inverse="divided by the p stages twice (t·p²)",
                         inverse_value=per_gpu(rep, shd, mp=t * p * p))]
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    st.p(f"A {N / 1e9:g}-billion-parameter model trains with Adam under {_RECIPE_TEXT[recipe]}.")
    if d.level == 0:
        st.p("How many bytes of model states (weights in every copy, gradients, optimizer states; no activations) "
             "does it hold? Give GB ($10^9$ bytes), rounded off to two decimal places.")
    elif d.level == 1:
        st.p(f"It runs on $d = {dp}$ data-parallel GPUs with ZeRO stage 1 (the optimizer's tensors, the master "
             "weights included, are split over the ranks).")
        st.p("How many bytes of model states does each GPU hold? Give GB ($10^9$ bytes), rounded off to two decimal "
             "places.")
    else:
        st.p(f"It runs with tensor parallelism $t = {t}$, pipeline parallelism $p = {p}$ (the parameters split evenly "
             f"over the $t \\cdot p$ ranks) and $d = {dp}$ data-parallel replicas with ZeRO stage 1 (the optimizer's "
             "tensors, the master weights included, split over $d$).")
        st.p("How many bytes of model states does each GPU hold? Give GiB ($2^{30}$ bytes), rounded off to two decimal "
             "places.")
    notes = []
    if d.level == 0:
        notes.append(f"${float(rep + shd):,.0f}$ bytes $/ 10^9 = {value:.4f}$ GB.")
    if d.level:
        notes.append(f"Replicated over $d$: ${float(Fraction(rep, N)):g}$ bytes per parameter; sharded (master weights, "
                     f"m, v): ${float(Fraction(shd, N)):g}$ bytes per parameter, divided by $d = {dp}$"
                     + (f"; then divided by $t \\cdot p = {t * p}$." if d.level == 2 else "."))
        total_b = Fraction(rep + Fraction(shd, dp), t * p)
        notes.append(f"Per GPU: ${N:,} \\times ({float(Fraction(rep, N)):g} + {float(Fraction(shd, N)):g}/{dp})"
                     + (f" / {t * p}" if d.level == 2 else "") + f" = {float(total_b):,.0f}$ bytes $= {value:.4f}$ {unit}.")
    return nat_problem(d, st, key, r.steps, wrongs, notes=notes,
                       given={"recipe": recipe, "N": N, "d": dp, "t": t, "p": p, "unit": unit})


# ---------------------------------------------------------------------------------------
# A run's FLOPs from GPU-hours or days × chips
# ---------------------------------------------------------------------------------------

_RUN_CHIPS = ("a100-80gb", "h100-sxm", "h200", "mi300x", "tpu-v5p")
_RUN_CHIP_COUNTS = (256, 512, 1024, 2048, 4096, 8192, 16384)
#: hard: a cluster of 256 to 16,384 chips (Llama 3 405B trained on up to 16,384 H100s: Dubey et al. 2024,
#: arXiv:2407.21783, section 3.3), any multiple of 32 in between. Issue 39, measured: from 64 to 32,768, no better
_RUN_CLUSTER = (256, 16384)
#: dense model sizes (parameters): GPT-3 1.3B/2.7B/6.7B/13B/175B (Brown et al. 2020, table 2.1), LLaMA 33B/65B,
#: Llama 2 7B/34B/70B, Llama 3 8B/70B/405B and Llama 3.2 1B/3B (Meta's model cards), Qwen2.5 14B/32B/72B (Qwen2.5
#: Technical Report), Falcon 40B/180B, PaLM 62B/540B (Chowdhery et al. 2022), Gopher 280B (Rae et al. 2021)
_RUN_SIZES = tuple(round(n * 10**9) for n in (1, 1.3, 2.7, 3, 6.7, 7, 8, 13, 14, 32, 33, 34, 40, 62, 65, 70, 72, 175,
                                                180, 280, 405, 540))
#: a pre-training run's tokens, in billions: 100 billion (a third of GPT-3's 300 billion: Brown et al. 2020,
#: arXiv:2005.14165, section 2.2) to 40 trillion (Qwen3's 36 trillion, the largest published pre-training set: Qwen3
#: Technical Report, arXiv:2505.09388). Issue 39: from 10 billion, a key below 100 had three significant figures and
#: 1 in 40 keys repeated another's text, which key-pool memory then picked (+1 to +3 points)
_RUN_TOKENS = (100.0, 40_000.0)


@family("measurements.run_flops", topic="hardware", title="A run's FLOPs from GPU-hours or days × chips",
        types=("nat",), tags=("flops", "mfu", "gpu-hours", "compute-budget", "measurement"), source=_SRC,
        # issue 39, its MCQ view (hard, the tokens trained): the MFU and the peak's or the 6N's factor of 2, each either
        # way. Near an end of the plausible range (key_range) those crosses do not fit and the draw is made again; a
        # one-way slip (4N, 8N, 2N, days as hours) taken there instead would say which side of it the key lies
        view_slips=("no_mfu", "sparse_peak", "macs_vs_flops"))
def run_flops_family(d: Draw) -> Problem:
    """FLOPs = GPU-hours × 3,600 × dense peak × MFU, or days × 86,400 × chips × peak × MFU; tokens = FLOPs / (6N).

    Misconceptions: the MFU left out, hours or days not turned into seconds, days taken as hours, one chip, the
    with-sparsity figure as the peak; (tokens) 2N, 3N (multiply-adds), 4N (backward = forward) or 8N (recomputation)
    per token in place of 6N."""
    import math

    from solver.systems.chips import get_hardware
    from solver.systems.measurements import run_flops

    # Levels (disjoint): easy, FLOPs from GPU-hours and the dense peak; medium, FLOPs from days × chips (NVIDIA chips
    # given by their datasheet's with-sparsity figure, to be halved); hard, the tokens trained, D = FLOPs / (6N).
    for _ in range(300):
        hw = d.pick(_RUN_CHIPS if d.level == 0 else _RUN_CHIPS[:3] if d.level == 1 else _RUN_CHIPS)
        h = get_hardware(hw)
        peak = h.peak("bf16")
        # hard: MFU to a tenth of a percent (as papers report it: Llama 3's 38-43 %), so that runs rarely repeat
        mfu = d.rng.randint(25, 62) / 100 if d.level < 2 else d.rng.randint(250, 620) / 1000
        N = None
        if d.level == 0:
            gh = d.rng.randint(20, 6000) * 1000
            r = run_flops(peak, mfu, gpu_hours=gh)
            days = chips = None
        else:
            if d.level < 2:
                chips = d.pick(_RUN_CHIP_COUNTS)
                days = d.rng.randint(5, 120)
            else:
                # issue 39: the tokens drawn first, log-uniformly over the plausible range (_RUN_TOKENS), then a model
                # size among those some cluster of 256 to 16,384 chips trains on them in 3 to 150 days, and the chips,
                # log-uniformly in that span, a multiple of 32 (a cluster is whole nodes: OPT's 992 A100s, BLOOM's
                # 384, Llama 3's 16,384 H100s). Drawn as days × chips, the keys piled up at the top of the range;
                # drawn as tokens with the size and the chips drawn before them (a run outside 3-150 days drawn
                # again), they still did. The range's ends are hard: the MCQ view keeps its options inside the range
                # too (given["key_range"]), so no option's place in it tells the key; ramps (×1.5, then) only
                # made a key near an end rarer than its options. The chips from seven powers of two made the FLOPs
                # without the MFU (days × chips × peak / 6N) take few values: that option's text recurred across
                # draws and, a recurring text being no key, key-pool memory struck it out (+3 points). Sizes from 22
                # published models (1B to 540B, not 7): the key's ratio to each printed figure spreads wider
                D = d.log_uniform(_RUN_TOKENS[0] * 1e9, _RUN_TOKENS[1] * 1e9, None)
                chip_days = {n: D * 6 * n / (86400 * peak * mfu) for n in _RUN_SIZES}
                spans = {n: (max(_RUN_CLUSTER[0], cd / 150), min(_RUN_CLUSTER[1], cd / 3)) for n, cd in chip_days.items()}
                sizes = [n for n, (lo, hi) in spans.items() if math.ceil(lo / 32) <= math.floor(hi / 32)]
                if not sizes:
                    continue
                N = d.pick(sizes)
                lo, hi = spans[N]
                chips = 32 * min(max(round(d.log_uniform(lo, hi, None) / 32), math.ceil(lo / 32)), math.floor(hi / 32))
                days = round(chip_days[N] / chips)
                if not 3 <= days <= 150:
                    continue
            r = run_flops(peak, mfu, days=days, chips=chips, params=N)
            gh = None
        if d.level < 2:
            exp = math.floor(math.log10(r.answer))
            value, unit = r.answer / 10**exp, f"× 10^{exp} FLOPs"
        else:
            exp = 9
            value, unit = r.breakdown["tokens"] / 1e9, "billion tokens"
        printed = [x for x in (gh, days, chips, mfu * 100, peak / 1e12, N / 1e9 if N else None) if x]
        dec = 2 if d.level < 2 else 1
        sane = d.level < 2 or _RUN_TOKENS[0] <= value <= _RUN_TOKENS[1]
        even = d.level < 2 or _even_rounding(value, dec)
        if sane and even and safe_for_rounding(value, dec, 0.1) and _blind_ok(round(value, dec), printed):
            break
    sparse = h.vendor == "NVIDIA" and d.level >= 1
    scale = (1e9 * 6 * N) if d.level == 2 else 10**exp  # FLOPs -> the answer's unit
    wrongs = [Wrong("no_mfu", "left out the MFU (counted the peak for every second)",
                    "A run reaches only MFU × peak on average.", r.answer / mfu / scale, inverse="applied the MFU twice"),
              Wrong("hours_not_seconds", "multiplied FLOP/s by hours (no × 3,600)" if d.level == 0 else
                    "multiplied FLOP/s by days (no × 86,400)", "Peak is per second: convert the time to seconds.",
                    r.answer / (3600 if d.level == 0 else 86400) / scale)]
    if d.level >= 1:
        wrongs += [Wrong("days_as_hours", "took the days as hours (× 3,600 instead of × 86,400)",
                         "A day is 86,400 seconds.", r.answer / 24 / scale),
                   Wrong("one_chip", "left out the number of chips", "All the chips run for the whole time.",
                         r.answer / chips / scale)]
    if sparse:
        wrongs.append(Wrong("sparse_peak", "used the with-sparsity figure as the peak",
                            "NVIDIA's printed tensor figure assumes 2:4 sparsity: the dense peak is half.",
                            2 * r.answer / scale, inverse="halved the dense peak (took it for the with-sparsity figure)"))
    if d.level == 2:
        wrongs.append(Wrong("two_n", "divided by 2N (the forward pass only)", "Training costs 6N FLOPs per token: "
                            "2N forward, 4N backward.", 3 * value))
        wrongs += [Wrong("macs_vs_flops", "divided by 3N (counted multiply-adds)", "The peak and the 6N rule both count "
                         "2 FLOPs per multiply-add: divide by 6N.", r.answer / (3 * N) / 1e9,
                         inverse="divided by 12N (4 FLOPs per multiply-add)"),
                   Wrong("backward_as_forward", "divided by 4N (took the backward pass as costly as the forward)",
                         "The backward pass costs 4N per token, twice the forward's 2N: 6N in all.", r.answer / (4 * N) / 1e9),
                   Wrong("counted_recompute", "divided by 8N (counted activation recomputation)",
                         "The question counts the model's 6N FLOPs per token; recomputation is not in it.",
                         r.answer / (8 * N) / 1e9)]
    # a mistake whose value, in the answer's unit, rounds to nothing at the asked decimals (one chip of 8,192:
    # 0.005 × 10^23) cannot be told from another such mistake (hours for seconds: 0.00006): not offered
    wrongs = [w for w in wrongs if abs(w.value) >= 10 ** -dec]
    key = nat_key(value, dec, unit=unit if d.level == 2 else "", scale=exp if d.level < 2 else 0)
    st = Doc()
    peak_txt = (f"a dense bf16 peak of ${peak / 1e12:g}$ TFLOP/s per chip" if not sparse else
                f"a datasheet bf16 tensor figure of ${2 * peak / 1e12:g}$ TFLOP/s per GPU (with 2:4 sparsity)")
    name = {"a100-80gb": "A100 80GB", "h100-sxm": "H100 SXM", "h200": "H200", "mi300x": "MI300X",
            "tpu-v5p": "TPU v5p"}[hw]
    if d.level == 0:
        st.p(f"A training run used ${gh:,}$ {name} {'chip' if hw.startswith('tpu') else 'GPU'}-hours at an average MFU of ${mfu * 100:g}$ %; the "
             f"chip has {peak_txt}.")
        st.p(f"How many FLOPs did it compute? Give the answer in units of $10^{{{exp}}}$ FLOPs, rounded off to two "
             "decimal places.")
    elif d.level == 1:
        st.p(f"A training run took ${days}$ days on ${chips:,}$ {name} GPUs at an average MFU of ${mfu * 100:g}$ %; "
             f"the GPU has {peak_txt}.")
        st.p(f"How many FLOPs did it compute? Give the answer in units of $10^{{{exp}}}$ FLOPs, rounded off to two "
             "decimal places.")
    else:
        st.p(f"A {N / 1e9:g}B-parameter dense model trained for ${days}$ days on ${chips:,}$ {name} chips at an "
             f"average MFU of ${mfu * 100:g}$ %; the chip has {peak_txt}.")
        st.p("How many tokens did it train on (6N FLOPs per token)? Give billions of tokens, rounded off to one "
             "decimal place.")
    notes = ([f"The dense peak is half the with-sparsity figure: ${peak / 1e12:g}$ TFLOP/s."] if sparse else [])
    if d.level == 2:
        notes.append(f"Tokens: ${r.breakdown['tokens']:.4e}$ = ${value:.1f}$ billion.")
    else:
        notes.append(f"${r.answer:.4e}$ FLOPs = ${value:.2f} \\times 10^{{{exp}}}$.")
    return nat_problem(d, st, key, r.steps, wrongs, notes=notes,
                       given={"hw": hw, "mfu": mfu, "gpu_hours": gh, "days": days, "chips": chips, "N": N, "exp": exp,
                              "sparse_printed": sparse, **({"key_range": _RUN_TOKENS} if d.level == 2 else {})})


# ---------------------------------------------------------------------------------------
# Per-tensor, per-channel, per-block scales
# ---------------------------------------------------------------------------------------


def _has_tie(rows, bits: int) -> bool:
    """Whether any entry lands exactly on a half code under the per-tensor, per-row or per-pair scale (kept out:
    the half-to-even rule would be what the problem tests)."""
    qmax = 2 ** (bits - 1) - 1
    groups = [[x for row in rows for x in row]] + [list(row) for row in rows] + \
        [list(row[j:j + 2]) for row in rows for j in range(0, len(row), 2)]
    for g in groups:
        amax = max(abs(x) for x in g)
        if amax == 0:
            return True
        for x in g:
            q = x * qmax / amax
            if (q - Fraction(1, 2)).denominator == 1:
                return True
    return False


@family("precision.quant_granularity", topic="quantisation", title="Per-tensor, per-channel and per-block int4 scales",
        types=("nat",), tags=("int4", "absmax", "per-channel", "per-block", "quantisation-error"), source=_SRC,
        told_apart=("per_tensor", "per_channel"))
def quant_granularity(d: Draw) -> Problem:
    """absmax int4 of a matrix W (rows = output channels): scale = max|group| / 7 per tensor (one group), per
    channel (a row) or per block (two consecutive entries of a row); error = max |x̂ − x|, MSE = mean (x̂ − x)².

    Misconceptions (largest error): the per-tensor, per-column or (per-block asked) per-channel scales, the max divided
    by 8, the mean |error| for the largest, w / scale truncated instead of rounded, the half-step bound max|w| / 14 for
    the error; (MSE ratio) the ratio inverted, of the largest errors, of the RMS errors, or against per-block scales."""
    from solver.kernels.quant_error import quantize_group, quantize_matrix

    bits = 4
    # Levels (disjoint): easy, a 2 × 4 matrix, the largest error with per-channel scales; medium, a 3 × 4 matrix,
    # the largest error with per-block scales (two entries); hard, a 3 × 4 matrix, how many times larger the mean
    # squared error is with one per-tensor scale than with per-channel scales.
    rows_n = 2 if d.level == 0 else 3
    for _ in range(300):
        mags = [d.pick((300, 250, 200)), d.pick((90, 60, 40))] + ([d.pick((150, 120))] if rows_n == 3 else [])
        d.rng.shuffle(mags)
        W = [[Fraction(d.rng.randint(-mg, mg), 100) for _ in range(4)] for mg in mags]
        if any(x == 0 for row in W for x in row) or _has_tie(W, bits):
            continue
        r = quantize_matrix([[x for x in row] for row in W], bits, "absmax", block=2)
        br = r.breakdown
        if d.level == 0:
            value = float(br["max_abs_error_per_channel"])
        elif d.level == 1:
            value = float(br["max_abs_error_per_block"])
        else:
            if br["mse_per_channel"] == 0:
                continue
            value = float(br["mse_per_tensor"] / br["mse_per_channel"])
        dec = 4 if d.level < 2 else 2
        printed = [float(x) for row in W for x in row]
        if value > 0 and safe_for_rounding(value, dec, 0.1) and _blind_ok(round(value, dec), printed):
            break

    def errors(groups, qmax_bits=bits, round_fn=None, qm=2 ** (bits - 1)):
        """(max |error|, mse, mean |error|) with the given groups of (i, j), the solver's quantize_group per group,
        or, with ``round_fn``, codes round_fn(x / scale) clamped to ±qm with scale = max / qm."""
        errs = []
        for g in groups:
            xs = [W[i][j] for i, j in g]
            if round_fn is None:
                _, _, _, deq = quantize_group(xs, qmax_bits, "absmax")
            else:
                amax = max(abs(x) for x in xs)
                deq = [max(-qm, min(qm, round_fn(x * qm / amax))) * amax / qm for x in xs]
            errs += [dq - x for dq, x in zip(deq, xs, strict=True)]
        return max(abs(e) for e in errs), sum(e * e for e in errs) / len(errs), sum(abs(e) for e in errs) / len(errs)

    cells = [(i, j) for i in range(rows_n) for j in range(4)]
    chan_g = [[(i, j) for j in range(4)] for i in range(rows_n)]
    block_g = [[(i, j), (i, j + 1)] for i in range(rows_n) for j in (0, 2)]
    col_g = [[(i, j) for i in range(rows_n)] for j in range(4)]
    from solver.kernels.quant_error import round_half_even

    if d.level < 2:
        mine = chan_g if d.level == 0 else block_g
        wrongs = [Wrong("per_tensor", "used one scale from the whole matrix's max (per-tensor)",
                        "Per-channel (per-block) scales take each row's (block's) own max |w|.",
                        float(br["max_abs_error_per_tensor"])),
                  Wrong("qmax_8", "divided the max by 8 instead of 7",
                        "Symmetric int4 codes run −7 … 7: scale = max / 7.",
                        float(errors(mine, round_fn=round_half_even)[0])),
                  Wrong("per_column", "took one scale per column (input channel)",
                        "Output channels are the rows: one scale per row of W.", float(errors(col_g)[0])),
                  Wrong("mean_error", "averaged the errors (mean |ŵ − w|), not their largest",
                        "The question asks for the largest error over the entries, max |ŵ − w|.",
                        float(errors(mine)[2])),
                  Wrong("truncated", "truncated w / scale toward zero instead of rounding it",
                        "q = round(w / scale): the nearest code, which keeps every error within half a step.",
                        float(errors(mine, round_fn=math.trunc, qm=2 ** (bits - 1) - 1)[0])),
                  Wrong("half_step_bound", "gave the bound of half a step (max|w| / 14), not the actual error",
                        "Half a step bounds the error; compute each entry's |ŵ − w| and take the largest.",
                        float(max(max(abs(W[i][j]) for i, j in g) for g in mine) / (2 * (2 ** (bits - 1) - 1))))]
        if d.level == 1:
            wrongs.append(Wrong("per_channel", "used one scale per row (per-channel), not per block of two",
                                "Per-block scales take the max of each two consecutive entries.",
                                float(br["max_abs_error_per_channel"])))
    else:
        mse_t, mse_c = br["mse_per_tensor"], br["mse_per_channel"]
        wrongs = [Wrong("inverted", "divided the per-channel MSE by the per-tensor MSE", "The ratio asked is "
                        "per-tensor over per-channel (how many times larger).", float(mse_c / mse_t)),
                  Wrong("max_error_ratio", "took the ratio of the largest errors, not of the MSEs",
                        "MSE averages the squared errors of all entries.",
                        float(br["max_abs_error_per_tensor"] / br["max_abs_error_per_channel"])),
                  Wrong("rmse_ratio", "took the ratio of root-mean-square errors", "The MSE is not square-rooted.",
                        float(mse_t / mse_c) ** 0.5),
                  Wrong("per_block", "compared with per-block scales instead of per-channel",
                        "Per-channel: one scale per row.", float(mse_t / br["mse_per_block"])
                        if br["mse_per_block"] else None)]
    def group_note(name: str, g) -> str:
        xs = [W[i][j] for i, j in g]
        scale, _, codes, deq = quantize_group(xs, bits, "absmax")
        errs = ", ".join(f"{abs(float(dq - x)):.4f}" for dq, x in zip(deq, xs, strict=True))
        return (f"{name}: scale $= {float(max(abs(x) for x in xs)):g}/7 = {float(scale):.6f}$, codes "
                f"$({', '.join(str(q) for q in codes)})$, $|\\hat w - w| = ({errs})$.")

    if d.level == 0:
        notes = [group_note(f"Row {i + 1}", g) for i, g in enumerate(chan_g)]
    elif d.level == 1:
        notes = [group_note(f"Row {g[0][0] + 1}, entries {g[0][1] + 1}–{g[1][1] + 1}", g) for g in block_g]
    else:
        notes = [group_note("Per-tensor (all 12 entries)", cells)] + \
            [group_note(f"Per-channel, row {i + 1}", g) for i, g in enumerate(chan_g)] + \
            [f"MSE per-tensor $= \\frac{{1}}{{12}}\\sum (\\hat w - w)^2 = {float(br['mse_per_tensor']):.6f}$.",
             f"MSE per-channel $= {float(br['mse_per_channel']):.6f}$.",
             f"Ratio $= {float(br['mse_per_tensor']):.6f} / {float(br['mse_per_channel']):.6f} = {value:.4f}$."]
    key = nat_key(value, dec)
    st = Doc()
    st.p(f"A weight matrix $W$ ({rows_n} output channels = rows, 4 input channels = columns) is quantised to int4 with "
         "absmax (symmetric) scales: scale $= \\max|w| / 7$ over the entries that share it, $q = \\mathrm{round}(w / "
         "\\text{scale})$ in −7 … 7 (half to even), dequantised $\\hat w = q \\times \\text{scale}$.")
    st.matrix("W", [[float(x) for x in row] for row in W], 2)
    if d.level == 0:
        st.p("With per-channel scales (one scale per row), what is the largest error $\\max |\\hat w - w|$? Round off "
             "to four decimal places.")
    elif d.level == 1:
        st.p("With per-block scales (one scale per block of two consecutive entries of a row), what is the largest "
             "error $\\max |\\hat w - w|$? Round off to four decimal places.")
    else:
        st.p("How many times larger is the mean squared error $\\frac{1}{12}\\sum (\\hat w - w)^2$ with one "
             "per-tensor scale than with per-channel scales (one per row)? Round off to two decimal places.")
    return nat_problem(d, st, key, r.steps, wrongs, notes=notes,
                       given={"W": [[str(x) for x in row] for row in W], "bits": bits,
                              "ask": ("channel_max", "block_max", "mse_ratio")[d.level]})
