"""Hardware arithmetic: compute- or memory-bound matmuls, critical intensity, the decode-step
lower bound, GPU-days at an MFU, ZeRO memory per GPU, and the fewest chips that hold a model.

Keys are ``solver.systems.roofline``/``solver.systems.inference``/``solver.systems.training`` results on figures
that the statement states (from ``solver.systems.chips`` presets: dense peaks, HBM bandwidth and
capacity); the worked solution is the result's steps (formula, substitution, value).
Misconceptions are the same calls with the mistake applied: the with-sparsity peak (2 × the
dense one), FLOPs counted as multiply-adds, no KV cache or only K, ``n_heads`` in place of
``n_kv_heads``, the compute time where the memory time binds (bandwidth- vs compute-bound),
2N (forward only) in place of 6N, GiB in place of GB, 4 bytes (bits) per int4 weight,
another ZeRO stage.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from question_bank.families.counting_common import big, nat_problem, result_steps, tokens_text
from question_bank.family import Draw, Wrong, family, keep_distinct, numeric_choices
from question_bank.grading import answer_text, integer_key, nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc, latex_to_text

_SRC = "issue 7 (hardware arithmetic)"
#: how the statements name each preset (shared with hardware_inference and hardware_training)
CHIP_NAMES = {"a100-80gb": "NVIDIA A100 80GB SXM", "a100-40gb": "NVIDIA A100 40GB SXM", "h100-sxm": "NVIDIA H100 SXM",
          "h200": "NVIDIA H200", "tpu-v4": "Google TPU v4", "tpu-v5e": "Google TPU v5e", "tpu-v5p": "Google TPU v5p"}


def _hw(name: str) -> Any:
    from solver.systems.chips import get_hardware

    return get_hardware(name)


def peak_text(name: str, dtype: str = "bf16") -> str:
    """The peak as a datasheet states it: NVIDIA prints the with-sparsity figure (2 × dense)."""
    hw = _hw(name)
    dense = hw.peak(dtype) / 1e12
    if hw.vendor == "NVIDIA":
        return (f"its datasheet lists {dtype.upper()} tensor throughput as ${2 * dense:g}$ TFLOP/s with 2:4 structured "
                "sparsity; dense matmuls cannot use sparsity")
    return f"its dense {dtype.upper()} peak is ${dense:g}$ TFLOP/s"


def _bw_text(name: str) -> str:
    return f"HBM bandwidth ${_hw(name).hbm_bandwidth / 1e12:g}$ TB/s ($10^{{12}}$ bytes/s)"


def _p(doc: Doc, md: str) -> None:
    """A paragraph whose text spells I* and B* (and ≪) plainly."""
    doc.p(md, latex_to_text(md.replace(r"\ll", "≪")).replace("I^*", "I*").replace("B^*", "B*"))


def resolved_chip(name: str, dtype: str = "bf16", **kw: Any) -> Any:
    """The preset's solver.systems.chips.Chip at ``dtype`` (dense peak), keyword overrides as resolve_chip."""
    from solver.systems.chips import resolve_chip

    return resolve_chip(name, dtype, **kw)


def sparse_chip(name: str, dtype: str = "bf16") -> Any:
    """The chip with the with-sparsity figure taken as the peak (the mistake)."""
    return resolved_chip(name, dtype, peak_flops=2 * _hw(name).peak(dtype))


_SPARSE = ("sparse_peak", "used the with-sparsity peak", "The datasheet's figure with 2:4 sparsity is twice the dense peak; "
           "a dense matmul gets only half of it.")
#: issue 38: the sparse-peak mistake made the other way round, a mistake of its own (the dense peak halved)
SPARSE_INVERSE = "halved the dense peak (took it for the with-sparsity figure)"


_MATMUL_D = (2048, 3072, 4096, 5120, 8192, 12288, 16384)
_MATMUL_F = (2048, 4096, 8192, 11008, 14336, 16384, 28672)


def _log_multiple(d: Draw, lo: int, hi: int, step: int) -> int:
    """A multiple of ``step`` drawn log-uniformly in [lo, hi]."""
    return max(lo, round(lo * (hi / lo) ** d.rng.random() / step) * step)


@family("hardware.matmul_bound", topic="hardware", title="Is this matmul compute- or memory-bound?",
        types=("mcq",), tags=("roofline", "arithmetic-intensity", "hardware"), marks=2, source=_SRC)
def matmul_bound(d: Draw) -> Problem:
    """I = 2BDF / (2BD + 2DF + 2BF) bytes (bf16) against I* = peak / bandwidth.

    The options cross two roofline times (the right one, and the one a typical slip gives) with the
    two verdicts, so every number and every verdict appears twice and no option can be told from
    the others without computing I and I* (issue 12: the old options repeated the key's numbers).
    The verdict is drawn first, so memory- and compute-bound keys are equally frequent.

    Issue 22 (the ratio of the two times): I is at least a factor 2 from I* (I ≤ I*/2 or I ≥ 2I*), and each
    slip doubles or halves the time that binds, so the two printed times always differ by exactly 2×, whatever
    the verdict and whichever is the key: memory-bound, 4 bytes per element (2t) or 1 byte (t/2); compute-bound,
    the dense peak halved once more (2t) or the with-sparsity peak / multiply-adds for FLOPs (t/2). (With a
    20 % margin and slips that doubled only memory-bound times exactly, "exactly 2×: the smaller time,
    memory-bound; else the smaller, compute-bound" was right in half the draws.)

    Levels (issue 12: disjoint, ordered): easy, a TPU whose dense peak is stated as such; medium, an
    NVIDIA GPU (the datasheet's with-sparsity figure to halve first) with square weights (D = F);
    hard, an NVIDIA GPU with D ≠ F (three distinct sizes in the traffic)."""
    from solver.systems.roofline import matmul

    # issue 22: the options give the verdict with the roofline time t = max(FLOPs/peak, bytes/bandwidth),
    # not with I: I ≈ B for B ≪ D, F, so "keep the two options whose I is nearest a printed number, say
    # compute-bound over 150" won 80 % of draws, and the same shape had the same key text at every level.
    # The slip drawn gives a time above the key's in half the draws (bytes counted as fp32, or the dense peak halved
    # again) and below it in the other half (one byte per element; multiply-adds for FLOPs, or the with-sparsity peak).
    want = d.pick(("memory", "compute"))
    above = d.rng.random() < 0.5

    def us(t: float) -> str:
        # issue 39: the times in ms (0.0126 to 0.4), below every size the statement prints: in µs (12.6 to 400) they
        # sat among the batch sizes of memory-bound draws (B of 16 to 100) and above those of compute-bound ones, so
        # an option's distance to the nearest printed number told the verdict (easy 39 %)
        return f"{t * 1e3:.3g}"

    # issue 22 (second round): boosted trees on the options' times found the verdict at hard (55 %, chance 25 %):
    # compute-bound shapes took longer than memory-bound ones. The smaller of the options' two times is now drawn in
    # one of four bands of log10(t/µs), 1.1 to 2.3, the same for both verdicts and for a key above or below the
    # slip, over wider sizes (D, F from 2,048 to 28,672).
    band = d.pick(range(4))  # (from 0.8 until I had to be 2x from I*: a compute-bound time under 12 µs is then rare)
    # issue 39: at easy the bands start at 10^1.4 = 25 µs (from 12.6 µs, a compute-bound matmul reached the lowest band
    # only on the TPU v5p, whose critical intensity is lowest: the band and the chip told the verdict); above easy a
    # memory-bound square matmul (medium) never takes 200 µs on an H200, so the bands start at 12.6 µs as before
    base = 1.4 if d.level == 0 else 1.1
    for attempt in range(24000):
        if d.level > 0 or attempt % 1500 == 0:
            # issue 39: at easy the chip drawn before the shapes, and again only when 1,500 shapes gave none in the band:
            # drawn with each shape, a chip whose critical intensity is low (TPU v5p, 166) met compute-bound shapes more
            # often (171 of 237 easy draws) and one with a high one (v5e) memory-bound shapes, so the chip's figures in
            # the statement told the verdict (easy 33 %); above easy (GPUs) with each shape, as before (a memory-bound
            # square matmul reaches the top band only on the A100)
            chips = ("tpu-v5e", "tpu-v5p", "tpu-v4") if d.level == 0 else ("a100-80gb", "h100-sxm", "h200")
            # past 6,000 shapes (only draws that used to fail get there: easy seed 70,287, compute-bound in band 0,
            # drew TPU v5e or v4 four times), every chip in turn, so the one whose band is reachable comes up
            hw = d.pick(chips) if attempt < 6000 else chips[(attempt // 1500) % len(chips)]
        # issue 39: sizes drawn log-uniformly as multiples of 256 (D from 2,048 to 16,384, F to 28,672) and B as a
        # multiple of 16 from 16 to 4,096, so a shape and its times rarely repeat across draws
        # issue 39: at medium (square weights, one size fewer) D a multiple of 128 and B of 8: with the coarser steps its
        # shapes repeated, and remembering which option texts had been keys scored 30 %
        D = _log_multiple(d, 2048, 16384, 128 if d.level == 1 else 256)
        F = (_log_multiple(d, 2048, 28672, 256), D, _log_multiple(d, 2048, 28672, 256))[d.level]
        if d.level == 2 and F == D:
            continue
        B = _log_multiple(d, 16, 4096, 8 if d.level == 1 else 16)
        r = matmul(B, D, F, dtype="bf16", chip=resolved_chip(hw))
        I, crit = float(r.breakdown["intensity"]), float(r.breakdown["critical_intensity"])
        t = float(r.breakdown["time_s"])
        if r.breakdown["bound"] != want or crit / 2 < I < 2 * crit:
            continue
        slips = [
            Wrong("fp32_bytes", "counted 4 bytes per bf16 element", "A bf16 number is 16 bits, 2 bytes, not 4.",
                  matmul(B, D, F, dtype="fp32", chip=resolved_chip(hw))),
            Wrong("one_byte_per_element", "counted one byte per bf16 element",
                  "A bf16 number is 16 bits, 2 bytes: the traffic is twice that.",
                  matmul(B, D, F, dtype="int8", chip=resolved_chip(hw))),
            Wrong(*_SPARSE, matmul(B, D, F, dtype="bf16", chip=sparse_chip(hw))) if _hw(hw).vendor == "NVIDIA" else
            Wrong("macs_vs_flops", "counted multiply-adds, not FLOPs",
                  "The peak counts 2 FLOPs per multiply-add: so must the FLOPs of the matmul.",
                  matmul(B, D, F, dtype="bf16", chip=resolved_chip(hw, peak_flops=2 * _hw(hw).peak("bf16")))),
            Wrong("halved_dense_peak", *(
                ("halved the dense peak a second time", "The datasheet's figure with 2:4 sparsity, halved once, is the "
                 "dense peak; halving it again counts the sparsity twice.") if _hw(hw).vendor == "NVIDIA" else
                ("halved a peak already stated as dense", "This peak is the dense one: only a figure with 2:4 sparsity "
                 "(NVIDIA's datasheets) is halved.")),
                  matmul(B, D, F, dtype="bf16", chip=resolved_chip(hw, peak_flops=_hw(hw).peak("bf16") / 2))),
        ]
        # the band holds the smaller of the two times the options show (the key's or the slip's): a band on the key's
        # time alone put a slip outside the range in a fifth of the draws, and a time outside it was never the key
        slips = [w for w in slips if us(float(w.value.breakdown["time_s"])) != us(t)
                 and (float(w.value.breakdown["time_s"]) > t) == above
                 and base + 0.3 * band <= math.log10(min(t, float(w.value.breakdown["time_s"])) * 1e6) < base + 0.3 * (band + 1)]
        if slips:
            break
    else:  # never met: every (verdict, band) pair is reachable on some chip of every level (tests: 1,000 seeds)
        raise RuntimeError(f"matmul_bound: no shape for {want}-bound in band {band} at level {d.level}")
    which = r.breakdown["bound"]
    other = "compute" if which == "memory" else "memory"
    slip = d.pick(slips)
    rs = slip.value
    t_s, slip_which = float(rs.breakdown["time_s"]), rs.breakdown["bound"]
    slip_other = "compute" if slip_which == "memory" else "memory"

    # issue 22: the printed times are exactly 2x apart too: the smaller to 3 significant figures, the larger as twice
    # that (one more figure where needed). Each to 3 figures made the ratio 1.99x or 2.01x in half the draws, and at
    # medium, with few shapes, whether it did leaked the verdict ("exactly 2x: the smaller, compute-bound", 30 %).
    low = min(t, t_s)

    def shown(tt: float) -> str:
        return us(tt) if tt == low else f"{2 * float(us(low)):g}"

    def fmt(v: tuple[float, str]) -> str:
        tt, b = v
        return f"{b.capitalize()}-bound, taking at least {shown(tt)} ms"

    wrongs = [
        Wrong("bandwidth_compute_confusion", "confused memory-bound with compute-bound",
              "Below the critical intensity the chip waits for memory (memory-bound); above it, for the ALUs (compute-bound).",
              (t, other)),
        Wrong(slip.id, slip.label, slip.feedback, (t_s, slip_which)),
    ]
    options, key, mis, values = numeric_choices(d, (t, which), wrongs, fmt=fmt, tol_key=None,
                                                fillers=lambda _: [(t_s, slip_other)])
    options_text = [latex_to_text(o) for o in options]
    st = Doc()
    st.p(f"On the {CHIP_NAMES[hw]} ({peak_text(hw)}; {_bw_text(hw)}), a bf16 matmul $Y = XW$ multiplies activations "
         f"$X$ of shape ${B} \\times {D}$ by weights $W$ of shape ${D} \\times {F}$. Assume each operand is read from HBM once "
         "and $Y$ written once, count 2 FLOPs per multiply-add and 2 bytes per bf16 element. Which statement about the "
         "matmul (its bound, and its roofline time, the larger of compute time and HBM time) is right?")
    sol = Doc()
    # The solver's "I ≈ 2B/w" and "B* = I*·w/2" lines assume B ≪ D, F; the exact I is computed above
    # them, so the solution leaves them out (B reaches 2048 here, not small beside D = 4096).
    result_steps(sol, [s for s in r.steps if not s.formula.startswith(("I ≈", "B* =", "B* ≈"))])
    sol.p(f"$I = {I:.1f}$ is {'below' if I < crit else 'above'} $I^* = {crit:.1f}$: the matmul is **{which}-bound**, "
          f"and takes at least {shown(t)} ms.",
          f"I = {I:.1f} is {'below' if I < crit else 'above'} I* = {crit:.1f}: the matmul is {which}-bound, "
          f"and takes at least {shown(t)} ms.")
    ans = answer_text(key, options_text)
    sol.p(f"**Answer:** {ans}", f"Answer: {ans}")
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, options_text=options_text,
                     misconceptions=mis,
                     given={"hw": hw, "batch": B, "d_in": D, "d_out": F, "bound": which, "intensity": I,
                            "critical_intensity": crit,
                            "option_values": [[tt * 1e3, b] for tt, b in values]})  # ms, as the options show them


@family("hardware.critical_intensity", topic="hardware", title="Critical intensity and critical batch of a chip",
        types=("nat",), tags=("roofline", "critical-intensity", "hardware"), source=_SRC,
        small_pool="six real chips (A100, H100, H200, TPU v4, v5e, v5p): at easy the chip is the problem; medium and "
                   "hard vary the weights' precision (int8 or fp8; int4) on each chip")
def critical_intensity(d: Draw) -> Problem:
    """I* = dense peak / HBM bandwidth; a matmul with B ≪ D, F has I ≈ 2B/w, so B* = I*·w/2.

    Levels (issue 12: disjoint, ordered by steps and conventions): easy, I* (one division); medium,
    the critical batch B* for one-byte weights, int8 or fp8 (one more step, and the bytes per weight);
    hard, B* for int4 weights (half a byte). Issue 22: medium was B* for bf16 weights, which equals I*
    (w/2 = 1): remembering the easy answer answered it."""
    from solver.systems.roofline import roofline

    for _ in range(300):  # one decimal place, clear of a rounding boundary (I* then ·w/2 may be typed rounded)
        hw = d.pick(("a100-80gb", "h100-sxm", "h200", "tpu-v5e", "tpu-v5p", "tpu-v4"))
        ask = "intensity" if d.level == 0 else "batch"
        wdt = ("bf16", d.pick(("int8", "fp8")), "int4")[d.level]
        r = roofline(resolved_chip(hw), weight_dtype=wdt)
        field = "critical_intensity" if ask == "intensity" else "critical_batch"
        value = float(r.breakdown[field])
        if safe_for_rounding(value, 1, 0.1):
            break
    rs = roofline(sparse_chip(hw), weight_dtype=wdt)
    wrongs = [Wrong(*_SPARSE, float(rs.breakdown[field])) if _hw(hw).vendor == "NVIDIA" else None]
    if ask == "intensity":
        wrongs.append(Wrong("inverted", "divided bandwidth by peak", "I* = peak FLOP/s ÷ bytes/s (FLOPs per byte).",
                            1 / value))
        wrongs.append(Wrong("macs_vs_flops", "counted the peak in multiply-adds", "Peaks count 2 FLOPs per multiply-add, "
                            "and so does the intensity.", float(roofline(resolved_chip(hw, peak_flops=_hw(hw).peak("bf16") / 2))
                                                               .breakdown[field])))
    else:
        bits = {"bf16": None, "int8": "fp64", "fp8": "fp64", "int4": "fp32"}[wdt]
        wrongs.append(Wrong("bits_as_bytes", "used bits as bytes per weight", f"A {wdt} weight is {'half a byte' if wdt == 'int4' else '1 byte'}.",
                            float(roofline(resolved_chip(hw), weight_dtype=bits).breakdown[field])) if bits else None)
        doubled = {"bf16": "fp32", "int8": "bf16", "fp8": "bf16", "int4": "int8"}[wdt]  # B* = I*·(2w)/2 = I*·w: the missing /2
        wrongs.append(Wrong("forgot_two_flops", "took I ≈ B/w (forgot 2 FLOPs per multiply-add)",
                            "Each weight read is used in B multiply-adds = 2B FLOPs: I ≈ 2B/w.",
                            float(roofline(resolved_chip(hw), weight_dtype=doubled).breakdown[field])))
        wrongs.append(Wrong("ignored_weight_dtype", "assumed 2-byte weights", f"The weights are {wdt}: fewer bytes per weight read "
                            "means fewer rows needed to reach I*.", float(roofline(resolved_chip(hw), weight_dtype="bf16").breakdown[field]))
                      if wdt != "bf16" else None)
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 1, unit="FLOP/byte" if ask == "intensity" else "rows")
    st = Doc()
    st.p(f"Consider the {CHIP_NAMES[hw]}: {peak_text(hw)}; {_bw_text(hw)}.")
    if ask == "intensity":
        _p(st, "What is its critical arithmetic intensity $I^*$ (FLOPs per byte of HBM traffic above which a dense bf16 kernel "
             "is compute-bound)? Round off to one decimal place.")
    else:
        _p(st, f"A matmul $X[B, D] \\cdot W[D, F]$ with bf16 activations and **{wdt} weights**, $B \\ll D, F$, moves mostly the "
             "weights, so its intensity is about $2B/w$ ($w$ = bytes per weight). What is the critical batch size $B^*$ at "
             "which $2B/w$ equals $I^*$ (at the bf16 dense peak; above $B^*$ the matmul is compute-bound)? "
             "Round off to one decimal place.")
    return nat_problem(d, st, key, r.steps, wrongs,
                       given={"hw": hw, "ask": ask, "weight_dtype": wdt})


_DECODE_MODELS = ("llama2-7b", "llama2-13b", "llama3-8b", "mistral-7b", "llama2-70b")


@family("hardware.decode_step", topic="hardware", title="Lower bound of one decode step",
        types=("nat",), tags=("inference", "decode", "kv-cache", "memory-bound"), marks=2, source=_SRC)
def decode_step(d: Draw) -> Problem:
    """t ≥ max((N·w + B·S·X) / (chips·bw), 2·N·B / (chips·peak)), X = 2·L·h_kv·d_h·bytes per token.

    Levels (issue 12: disjoint, ordered): easy, a multi-head-attention model (Llama 2 7B or 13B) on one
    chip; medium, a GQA or sliding-window model (Llama 3 8B, Mistral 7B: n_kv_heads or min(S, W) to
    track) on one chip; hard, any model split over 2, 4 or 8 chips (the bandwidths add up)."""
    from solver.counting.params import param_count
    from solver.counting.presets import get_preset
    from solver.systems.inference import decode_step as step
    from solver.systems.inference import kv_bytes_per_token

    for _ in range(300):
        name = d.pick((("llama2-7b", "llama2-13b"), ("llama3-8b", "mistral-7b"), _DECODE_MODELS)[d.level])
        cfg = get_preset(name).config
        N = param_count(cfg)
        hw = d.pick(("a100-80gb", "h100-sxm", "h200"))
        chips = 8 if name == "llama2-70b" else (d.pick((2, 4)) if d.level == 2 else 1)
        # issue 22: more batches and context lengths (the easy level held about 42 problems in 1,000 draws)
        B = d.pick((1, 8, 16, 24, 32, 48, 64) if d.level else (1, 2, 4, 8, 16))
        S = d.pick((512, 1024, 1536, 2048, 3072, 4096, 6144, 8192))
        L, h, kv, dh = cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.head_dim
        X = kv_bytes_per_token(L, kv, dh, "bf16")
        W = cfg.sliding_window  # issue 10: Mistral 7B's rolling buffer holds min(S, W) positions per layer
        held = min(S, W) if W else S
        chip = resolved_chip(hw)
        r = step(N, B, held, X, chip, chips=chips, weight_dtype="bf16")
        value = r.answer * 1e3
        fits = 2 * N + B * held * X <= chips * _hw(hw).hbm_bytes  # a step of a model that cannot be held is no question
        if fits and safe_for_rounding(value, 2, 0.1):
            break
    ms = 1e3
    wrongs = [
        Wrong("forgot_kv_cache", "forgot the KV-cache read", "Each step reads every sequence's whole KV cache as well as the weights.",
              step(N, B, held, 0, chip, chips=chips).answer * ms),
        Wrong("forgot_k_and_v", "cached K only (forgot the factor 2)", "Both K and V are cached and read: 2·L·h_kv·d_h values per token.",
              step(N, B, held, X / 2, chip, chips=chips).answer * ms, inverse="counted K and V twice each (a factor 4)",
              inverse_value=step(N, B, held, 2 * X, chip, chips=chips).answer * ms),
        Wrong("used_n_heads", "used n_heads instead of n_kv_heads", f"Only {kv} K/V heads are cached per layer, not {h}.",
              step(N, B, held, kv_bytes_per_token(L, h, dh, "bf16"), chip, chips=chips).answer * ms) if kv != h else None,
        Wrong("window_ignored", "read all S cached positions (ignored the sliding window)",
              f"With a window of W = {W} each layer keeps and reads only the last min(S, W) = {held} positions.",
              step(N, B, S, X, chip, chips=chips).answer * ms) if held != S else None,
        Wrong("compute_bound_time", "took the compute time", "Decode at this batch is memory-bandwidth-bound: the bound is the larger "
              "(memory) time, not FLOPs/peak.", float(r.breakdown["compute_time_s"]) * ms),
        Wrong("one_chip", "used one chip's bandwidth", f"The weights and cache are spread over {chips} chips whose bandwidths add up.",
              step(N, B, held, X, chip, chips=1).answer * ms) if chips > 1 else None,
    ]
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 2, unit="ms")
    att = "multi-head attention" if kv == h else f"grouped-query attention with {kv} K/V heads"
    st = Doc()
    st.p(f"{name} has $N = {big(N)}$ parameters, $L = {L}$ layers, $h = {h}$ heads of size $d_h = {dh}$ and {att}. "
         f"It decodes in bf16 (weights and KV cache, 2 bytes per value) on "
         + (f"{chips} × {CHIP_NAMES[hw]} (per chip: " if chips > 1 else f"one {CHIP_NAMES[hw]} (")
         + f"dense bf16 peak ${_hw(hw).peak('bf16') / 1e12:g}$ TFLOP/s, {_bw_text(hw)})"
         + (", weights and cache split evenly." if chips > 1 else "."))
    if W:
        st.p(f"It uses sliding-window attention with $W = {W}$ in every layer: each layer's KV cache is a rolling buffer "
             "of the last $W$ positions.")
    # issue 21: say which cached positions a step reads (S of them: the new token's K/V is written, not read from HBM)
    st.p(f"A batch of $B = {B}$ sequence{'s' if B > 1 else ''} each has $S = {S}$ tokens so far, whose K and V are in "
         "the cache. Each decode step reads all weights once and every sequence's whole KV cache of those "
         + ("$\\min(S, W)$" if W else "$S$") + " positions (the new token's own K and V are computed in the step, not "
         "read from HBM), and does 2N FLOPs per sequence. What is the lower bound on the "
         "time of one decode step (no communication cost)? Give it in milliseconds, rounded off to two decimal places.")
    sol = Doc()
    sol.p(f"KV bytes per token $X = 2 \\cdot L \\cdot h_{{kv}} \\cdot d_h \\cdot 2 = 2 \\times {L} \\times {kv} \\times {dh} \\times 2 "
          f"= {big(int(X))}$ bytes.")
    if W:
        sol.p(f"The window keeps $\\min(S, W) = \\min({S}, {W}) = {held}$ cached positions per layer and sequence.")
    if chips > 1:
        sol.p(f"The {chips} chips together read ${chips} \\times {_hw(hw).hbm_bandwidth / 1e12:g} = "
              f"{chips * _hw(hw).hbm_bandwidth / 1e12:g}$ TB/s and compute ${chips} \\times {_hw(hw).peak('bf16') / 1e12:g} = "
              f"{chips * _hw(hw).peak('bf16') / 1e12:g}$ TFLOP/s (dense bf16).")
    result_steps(sol, r.steps, {"s": "s"})
    sol.p(f"$= {value:.4f}$ ms ({r.breakdown['bound']}-bound).")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"model": name, "params": N, "n_layers": L, "n_heads": h, "n_kv_heads": kv, "d_head": dh,
                            "hw": hw, "chips": chips, "batch": B, "context": S, "window": W})


#: billions of parameters and of training tokens for hardware.gpu_days
_GD_SIZES = (70, 13, 7, 1.3, 3, 8, 34, 65, 175)
_GD_TOKENS = (1000, 2000, 300, 500, 15000, 1400, 3000)


@family("hardware.gpu_days", topic="hardware", title="Training time in days at an MFU",
        types=("nat",), tags=("training", "mfu", "6ND", "hardware"), source=_SRC)
def gpu_days(d: Draw) -> Problem:
    """days = 6·N·D / (chips · dense peak · MFU · 86,400).

    Levels (issue 12: disjoint, ordered): easy, MFU 40 % and D given; medium, MFU 35 to 60 % and D
    given; hard, MFU 35 to 60 % and D given as tokens per parameter (one more step, D = r·N).
    The chip count is the cluster a lab would size for the run: the chips that finish it in a planned time
    (issue 39, round 3), so the key is spread flat in log space rather than piled against its floor of 1 day.
    Misconceptions: the with-sparsity peak, 2N per token (forward only), 4N (the backward pass taken as
    costly as the forward), 8N (recomputation counted), the MFU ignored or multiplied by, GPU-days, the chips
    divided by twice."""
    from solver.systems.inference import prefill
    from solver.systems.training import DAY, train

    per_param = None
    for _ in range(300):
        # issue 22: nine sizes, seven token counts, four chips and six chip counts (three sizes, three token counts,
        # two chips and four counts held 72 easy problems: a learned attacker met the same keys again at 400 draws)
        # issue 39: sizes, token counts and chip counts drawn log-uniformly (two significant figures; chips a multiple
        # of 8) and any MFU of 30 to 65 %, so that keys rarely repeat and a slip's factor leaves no trace in the size
        n_b, t_b = d.log_uniform(1, 500, 2), d.log_uniform(100, 20000, 2)
        if d.level == 2:
            per_param = d.pick(range(5, 201))
            t_b = per_param * n_b
        N, D = round(n_b * 10**9), round(t_b * 10**9)
        hw = d.pick(("a100-80gb", "h100-sxm", "h200", "b200"))
        # not 0.5: ignoring it would equal the sparse-peak mistake
        mfu = d.pick(tuple(x / 100 for x in range(30, 66) if x != 50)) if d.level else 0.4
        chip = resolved_chip(hw)
        # issue 39, round 3: the cluster is sized for the run, as a lab sizes it: the chips that finish it in a
        # planned time T (a multiple of 8). T is the product of two log-uniform draws (1.3 to 400 days, times 1 to
        # 6.3), flat in log space from about 8 to 400 days and tapering off to 1.3 and 2,500 at the ends; with the chip
        # count drawn apart from the run's size the key piled up against its floor of 1 day, and an option below
        # 1 day was never the key
        planned = d.log_uniform(1.26, 400, None) * d.log_uniform(1, 6.3, None)
        chip_days = float(train(N, tokens=D, chip=chip, chips=1, mfu=mfu).breakdown["days"])
        chips = 8 * round(chip_days / planned / 8)
        if not 8 <= chips <= 16384:
            continue
        r = train(N, tokens=D, chip=chip, chips=chips, mfu=mfu)
        value = float(r.breakdown["days"])
        if 1 <= value < 5000 and safe_for_rounding(value, 2, 0.1):
            break
    wrongs = [
        Wrong(*_SPARSE, float(train(N, tokens=D, chip=sparse_chip(hw), chips=chips, mfu=mfu).breakdown["days"]),
              inverse=SPARSE_INVERSE),
        Wrong("forgot_backward", "used 2N per token (forward only)", "Training costs 6N FLOPs per token, not 2N.",
              prefill(N, D, chip, chips=chips, mfu=mfu).answer / DAY),
        Wrong("forgot_mfu", "ignored the MFU", f"Only {mfu:.0%} of the peak is achieved: divide by the MFU.",
              float(train(N, tokens=D, chip=chip, chips=chips, mfu=1.0).breakdown["days"]),
              inverse="divided by the MFU twice"),
        Wrong("gpu_days", "gave GPU-days", "The question asks for wall-clock days: the chips work in parallel.",
              value * chips),
        # issue 39: dividing by the chips twice is a mistake of its own, not gave-GPU-days' declared inverse: as an
        # inverse it was crossed with the sparse peak and the MFU, and its factor of 1/chips (8 to 16,384) put that
        # option far off the others in log space, the key's side told by the printed chip count
        Wrong("chips_twice", "divided by the number of chips twice",
              "The chips share the work once: the total FLOPs divided by (chips × per-chip rate), not by chips again.",
              value / chips),
        Wrong("backward_as_forward", "took the backward pass as costly as the forward (4N per token)",
              "The backward pass computes gradients for both the activations and the weights: 4N FLOPs per token, "
              "twice the forward's 2N, so training costs 6N.",
              float(train(N, compute=4 * N * D, chip=chip, chips=chips, mfu=mfu).breakdown["days"])),
        Wrong("counted_recompute", "counted 8N per token (with activation recomputation)",
              "The standard count is the model's 6N FLOPs per token; a recomputed forward pass is extra hardware work "
              "that the rule leaves out.",
              float(train(N, compute=8 * N * D, chip=chip, chips=chips, mfu=mfu).breakdown["days"])),
        Wrong("times_mfu", "multiplied by the MFU instead of dividing by it",
              f"The chips sustain only MFU × peak = {mfu:.0%} of the peak, so training takes longer than at the peak: "
              "divide by the MFU.",
              float(train(N, tokens=D, chip=chip, chips=chips, mfu=1.0).breakdown["days"]) * mfu),
    ]
    key = nat_key(value, 2, unit="days")
    st = Doc()
    data = (f"$D$ = {tokens_text(D)} tokens" if per_param is None
            else f"{per_param} tokens per parameter ($D = {per_param}N$)")
    st.p(f"A dense model with $N$ = {tokens_text(N)} parameters is trained on {data} on {chips} × "
         f"{CHIP_NAMES.get(hw) or _MORE_CHIP_NAMES[hw]} ({peak_text(hw)}) at a model FLOPs utilisation (MFU) of {mfu:.0%}.")
    st.p("Using the standard rule for training FLOPs (2 FLOPs per multiply-add; forward and backward pass; ignore "
         "attention's sequence-length term), how many days (wall-clock, 86,400 s each) does training take? "
         "Round off to two decimal places.")
    notes = [] if per_param is None else [f"(Here $D = {per_param} \\times {tokens_text(N)} = {tokens_text(D)}$ tokens.)"]
    return nat_problem(d, st, key, r.steps, wrongs, notes=notes,
                       given={"params": N, "tokens": D, "hw": hw, "chips": chips, "mfu": mfu, "tokens_per_param": per_param})


@family("hardware.zero_memory", topic="hardware", title="ZeRO: model-state memory per GPU",
        types=("nat",), tags=("training", "zero", "memory", "data-parallel"), source=_SRC + "; Rajbhandari et al. 2020",
        # issue 39, its MCQ view: the two middle stages swapped (stage 1 for 2 gives the same pair of values as 2 for 1,
        # so the swap moves the key up or down with the stage asked) and GB for GiB either way; not no ZeRO (exactly
        # 16Ψ) nor stage 3 (16Ψ/N_d), which move the key one way only, by a factor a reader spots from the statement's
        # figures
        view_slips=("gb_vs_gib", "stage_1_partitioning", "stage_2_partitioning"))
def zero_memory(d: Draw) -> Problem:
    """Stage 0: 16Ψ; 1: 4Ψ + 12Ψ/N_d; 2: 2Ψ + 14Ψ/N_d; 3: 16Ψ/N_d bytes per GPU (mixed-precision Adam).

    Levels (issue 12: disjoint, ordered): easy, stage 3 (one term, 16Ψ/N_d) in GB; medium, stage 1
    or 2 (a replicated and a partitioned term) in GB; hard, stage 1 or 2 in GiB (a unit to convert)."""
    from solver.systems.training import zero

    for _ in range(300):
        # issue 22: eleven sizes on eleven data-parallel widths (six on five held 18 easy problems in 1,000 draws)
        if d.level == 0:
            psi = int(d.pick((Fraction(13, 10), Fraction(27, 10), Fraction(15, 2), 1, 3, 7, 8, 13, 34, 70, 175)) * 10**9)
            gpus = d.pick((4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256))
        else:
            # issue 39: 11 sizes on 11 widths left 128 distinct medium keys in 500 draws (key-pool memory won 44 %);
            # any size from 1 to 200 billion (to 0.1 billion) on any multiple of 8 GPUs from 8 to 1,024, log-uniform
            # and the exact count printed, as a model card gives it (6,738,415,616 for Llama 2 7B): "50.9 billion" made
            # the no-ZeRO option exactly 16 × a printed number and the stage-3 one 16 × it over N_d
            psi = int(10 ** (9 + math.log10(200) * d.rng.random()))
            gpus = max(8, round(8 * 128 ** d.rng.random() / 8) * 8)
        # issue 39: hard is stage 1 or 2 in GiB (stage 3 is the easy level's one term; in hard its options sat a factor
        # N_d below every other stage's, which told the key's corner); the unit is the step above medium
        stage = 3 if d.level == 0 else d.pick((1, 2))
        unit = "GiB" if d.level == 2 else "GB"
        r = zero(psi, gpus, stage)
        value = float(r.breakdown[unit])
        if safe_for_rounding(value, 2, 0.1):
            break
    other = "GiB" if unit == "GB" else "GB"
    wrongs = [Wrong("no_sharding", "ignored ZeRO (plain data parallelism)", "ZeRO partitions the model states over the GPUs.",
                    float(zero(psi, gpus, 0).breakdown[unit]))]
    # each id spelled out whole, as view_slips above names two of them (family.spelled reads the ids from this code)
    stages = {1: ("stage_1_partitioning", "optimizer states only"), 2: ("stage_2_partitioning", "optimizer states and gradients"),
              3: ("stage_3_partitioning", "optimizer states, gradients and parameters")}
    for s, (sid, what) in stages.items():
        if s != stage:
            wrongs.append(Wrong(sid, f"partitioned as stage {s}",
                                f"Stage {s} partitions the {what}; stage {stage} is asked.", float(zero(psi, gpus, s).breakdown[unit])))
    # issue 39: the conversion made the wrong way round (× 2³⁰/10⁹ where it divides, or the reverse) is a mistake of
    # its own, so the unit slip can move the key either way and does not tell on which side of its partner the key lies
    wrongs.append(Wrong("gb_vs_gib", f"gave {other} instead of {unit}", "1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes.",
                        float(zero(psi, gpus, stage).breakdown[other]),
                        inverse=f"converted between {other} and {unit} the wrong way round (multiplied by 2³⁰/10⁹ where "
                                "it divides, or the reverse)",
                        inverse_value=value ** 2 / float(zero(psi, gpus, stage).breakdown[other])))
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    zmd = (f"A model with $\\Psi$ = {tokens_text(psi) if d.level == 0 else big(psi)} parameters is trained with mixed-precision Adam (2-byte weights and "
           "gradients; 12 bytes of optimizer state per parameter: fp32 master weights, momentum, variance) on "
           f"$N_d = {gpus}$ data-parallel GPUs with **ZeRO stage {stage}**.")
    st.p(zmd, latex_to_text(zmd).replace("Psi", "Ψ"))
    st.p("How much memory do the model states (no activations or buffers) take per GPU? Give the answer in "
         + ("GB ($10^9$ bytes)" if unit == "GB" else "GiB ($2^{30}$ bytes)") + ", rounded off to two decimal places.")
    return nat_problem(d, st, key, r.steps, wrongs,
                       given={"params": psi, "gpus": gpus, "stage": stage, "unit": unit},
                       notes=[f"$= {big(int(r.answer))}$ bytes $= {value:.4f}$ {unit}."])


#: issue 22: sixteen dense models and ten chips (the old six models on five chips held 7 distinct easy problems in
#: 1,000 draws, and typing one remembered number won half the medium draws)
_CHIP_MODELS = ("llama2-7b", "llama2-13b", "llama3-8b", "llama2-70b", "gpt3-175b", "gpt3-13b", "llama3-70b", "llama3.1-405b",
                "gpt3-6.7b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b", "gemma2-9b", "gemma2-27b", "olmo2-7b", "phi3-mini")
_MIN_CHIPS_HW = ("a100-40gb", "a100-80gb", "h100-sxm", "h200", "tpu-v5e", "tpu-v4", "tpu-v5p", "tpu-v6e", "b200", "mi300x")
_MORE_CHIP_NAMES = {"tpu-v6e": "Google TPU v6e", "b200": "NVIDIA B200", "mi300x": "AMD Instinct MI300X"}


@family("hardware.min_chips", topic="hardware", title="Fewest chips to hold a model (int4 / int8 / bf16)",
        types=("integer",), tags=("inference", "quantisation", "memory", "hardware"), source=_SRC,
        told_apart=("gb_vs_gib", "bf16_weights", "forgot_kv_cache"))
def min_chips(d: Draw) -> Problem:
    """⌈(N·w + KV bytes) / (HBM − reserved)⌉ with w = 2 (bf16), 1 (int8) or ½ (int4) bytes per weight.

    Levels (issue 12: disjoint, ordered; issue 22: two operations above easy): easy, int8, fp8 or bf16 weights
    on all of HBM; medium, bf16 or int4 (2 or ½ byte per weight) with part of each chip's HBM kept by the
    runtime (a subtraction before the division); hard, any weights plus the KV cache of a batch, and the reserve."""
    from solver.counting.memory import kv_cache_bytes
    from solver.counting.params import param_count
    from solver.counting.presets import get_preset
    from solver.systems.inference import min_chips as chips_for

    for _ in range(300):
        name = d.pick(_CHIP_MODELS)
        cfg = get_preset(name).config
        N = param_count(cfg)
        hw = d.pick(_MIN_CHIPS_HW)
        hbm = _hw(hw).hbm_bytes
        unit_bytes = 2**30 if hbm % 2**30 == 0 else 10**9
        wdt = d.pick(("int8", "fp8", "bf16") if d.level == 0 else ("bf16", "int4") if d.level == 1 else ("bf16", "int8", "int4"))
        with_kv = d.level == 2
        # the runtime's reserve (CUDA context, framework pools): whole units of the chip's own HBM unit, under a quarter
        res_units = 0 if d.level == 0 else d.pick(tuple(k for k in (1, 2, 3, 5, 6, 7, 9, 10, 11, 13)
                                                         if k * unit_bytes < hbm // 4))
        reserved = res_units * unit_bytes
        B, S = d.pick((4, 8, 12, 16, 24, 32)), d.pick((2048, 4096, 8192, 16384))
        kv = kv_cache_bytes(cfg.n_layers, B, S, cfg.kv_heads, cfg.head_dim, "bf16") if with_kv else 0
        r = chips_for(N, wdt, hbm, kv_bytes=kv, reserved_bytes=reserved)
        value = r.answer
        ratio = r.breakdown["exact_ratio"]
        if 1.05 < ratio <= 64 and ratio - math.floor(ratio) > 0.02:
            wrongs = [
                Wrong("bits_as_bytes", "used bits as bytes per weight",
                      f"{wdt}: {'half a byte' if wdt == 'int4' else '1 byte' if wdt in ('int8', 'fp8') else '2 bytes'} per weight.",
                      chips_for(N, {"int4": "fp32", "int8": "fp64", "fp8": "fp64", "bf16": "fp64"}[wdt], hbm, kv_bytes=kv,
                                reserved_bytes=reserved).answer if wdt != "bf16" else None),
                Wrong("forgot_kv_cache", "forgot the KV cache", "The KV cache must fit in HBM too.",
                      chips_for(N, wdt, hbm, reserved_bytes=reserved).answer if kv else None),
                Wrong("forgot_reserve", "used all of HBM", "The runtime's reserve is not available to the model: "
                      "divide by what is left of each chip.",
                      chips_for(N, wdt, hbm, kv_bytes=kv).answer if reserved else None),
                Wrong("rounded_down", "rounded down", "A fraction of a chip does not exist: round the ratio up.", math.floor(ratio)),
                Wrong("gb_vs_gib", "mixed GB and GiB for the HBM size",
                      "The statement gives the HBM in its own unit: 1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes; do not swap them.",
                      chips_for(N, wdt, (hbm * 2**30) // 10**9 if hbm % 10**9 == 0 else (hbm * 10**9) // 2**30, kv_bytes=kv,
                                reserved_bytes=reserved).answer),
                Wrong("bf16_weights", "ignored the quantisation", f"The weights are stored in {wdt}, not bf16.",
                      chips_for(N, "bf16", hbm, kv_bytes=kv, reserved_bytes=reserved).answer if wdt != "bf16" else None),
            ]
            key = integer_key(value, unit="chips")
            mis = keep_distinct(key, wrongs)
            # above easy the reserve must change the answer (otherwise the subtraction is decoration)
            if len(mis) >= 2 and (not reserved or "forgot_reserve" in {m.id for m in mis}):
                break
    unit_name = "GiB" if unit_bytes == 2**30 else "GB"
    hbm_text = (f"{hbm // 2**30} GiB ($2^{{30}}$ bytes each)" if unit_name == "GiB"
                else f"{hbm // 10**9} GB ($10^9$ bytes each)")
    chip_name = CHIP_NAMES.get(hw) or _MORE_CHIP_NAMES[hw]
    st = Doc()
    st.p(f"{name} has $N = {big(N)}$ parameters, stored in **{wdt}**. Each {chip_name} has {hbm_text} of HBM"
         + (f", of which the runtime keeps {res_units} {unit_name} for itself." if reserved else "."))
    if kv:
        st.p(f"Serving also keeps a bf16 KV cache for $B = {B}$ sequences of $S = {S}$ tokens ($L = {cfg.n_layers}$ layers, "
             f"{cfg.kv_heads} K/V heads of size {cfg.head_dim}): ${big(kv)}$ bytes.")
    st.p("Ignoring activations and workspace, what is the fewest number of chips whose "
         + ("remaining " if reserved else "") + "HBM holds "
         + ("the weights and the KV cache?" if kv else "the weights?"))
    sol = Doc()
    result_steps(sol, r.steps)
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"model": name, "params": N, "hw": hw, "hbm": hbm, "weight_dtype": wdt, "kv_bytes": kv,
                            "reserved_bytes": reserved})

