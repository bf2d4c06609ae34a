"""The keys of question_bank/families/low_precision.py recomputed from the text a student reads.

For each family and its MCQ view, the numbers are parsed from ``statement_text`` with regular expressions and
the answer computed here by the formula or the number format the statement describes (``key_from_text`` then
asks the grader whether the key accepts it, exact and rounded as asked; for an MCQ, whether the keyed option is
the one it matches):

- ``measurements.mfu_step``: MFU = 6N × tokens per step / (seconds per step × chips × printed dense peak, or half the
  printed with-sparsity figure);
- ``measurements.nccl_busbw``: nccl-tests' algbw = S / t, busbw = algbw × 2(n - 1)/n for all_reduce and
  × (n - 1)/n for reduce_scatter, all_gather and all_to_all (its PERFORMANCE.md), over the link's rate for the
  fraction;
- ``precision.block_bytes``: element bits + scale bits / block size per weight, read from the format's
  description (FP4 4 bits, FP8 8 bits, an 8-bit scale), bf16 for the weights said to be bf16;
- ``precision.nearest_value``: every finite value of the format enumerated from its printed description
  (sign, exponent and mantissa bits, bias, infinities or the largest normal) and the nearest taken, ties to
  the even mantissa; checked against torch's own cast (``torch.float8_e4m3fn``, ``torch.float8_e5m2``); the
  MXFP4 element by the printed shared-scale rule and the printed E2M1 magnitudes, in exact fractions;
- ``precision.quant_error``: absmax or zero-point quantisation as printed, in exact fractions
  (``round`` of a ``Fraction`` is half to even, as the statement asks);
- ``precision.smoothquant``: sⱼ = max|Xⱼ|^α / max|Wⱼ|^(1-α) (Xiao et al. 2023, eq. 4), and max|Xⱼ| / sⱼ after;
- ``training.fsdp_overlap``: a ring all-gather moves (n - 1)/n of the 2P bytes over one direction of the link;
  compute 2·P·T / peak;
- ``training.grad_accum_bubble``: m = global batch / (b · d) micro-batches, bubble (p - 1)/(m + p - 1);
- ``training.lr_schedule``: HuggingFace's linear schedule with warmup, the printed cosine, and Vaswani et al.'s
  eq. 3, d_model^-0.5 · min(t^-0.5, t · warmup^-1.5).

Nothing is read from ``given``, the solution or the misconceptions; nothing is imported from the solver.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

import torch

from tests.question_bank.families.from_text_audit import (
    key_tests,
    shown_all,
    sweep_main,
    with_views,
)
from tests.question_bank.families.key_from_text import (
    find,
    num,
    question,
)

SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def mfu_step(p, chips_on: bool = True, peak_x: float = 1, per_token: int = 6) -> float:
    t = p.statement_text
    n = num(find(r"A (\d+(?:\.\d+)?)B-parameter model", t)[1]) * 1e9
    if m := re.search(r"trains on ([\d,]+) × [\w-]+ chips \(its datasheet lists BF16 tensor throughput as ([\d,.]+) "
                      r"TFLOP/s with 2:4 structured sparsity; dense matmuls cannot use sparsity\)", t):
        chips, peak = num(m[1]), num(m[2]) * 1e12 / 2  # a dense matmul gets half the with-sparsity figure
    else:
        m = find(r"trains on ([\d,]+) × [\w-]+ \(dense bf16 peak ([\d,.]+) TFLOP/s per chip\)", t)
        chips, peak = num(m[1]), num(m[2]) * 1e12
    if m := re.search(r"with ([\d,]+) tokens per step", t):
        tokens = num(m[1])
    else:
        m = find(r"global batch of ([\d,]+) sequences of ([\d,]+) tokens", t)
        tokens = num(m[1]) * num(m[2])
    secs = num(find(r"the log shows (\d+(?:\.\d+)?) s per step", t)[1])
    find(r"6N FLOPs per token, attention left out\)\? Give percent", t)
    return 100 * per_token * n * tokens / secs / ((chips if chips_on else 1) * peak * peak_x)


BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "reduce_scatter": lambda n: (n - 1) / n,
              "all_gather": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


def nccl_busbw(p, slip: str = "") -> float:
    t = p.statement_text
    m = find(r"nccl-tests' (\w+)_perf on n = (\d+) GPUs", t)
    factor = BUS_FACTOR[m[1]](int(m[2]))
    if slip == "algbw":
        factor = 1
    elif slip == "other_factor":  # all_reduce's for the others, theirs for all_reduce
        factor = BUS_FACTOR["all_gather" if m[1] == "all_reduce" else "all_reduce"](int(m[2]))
    if m := re.search(r"for size S = ([\d,]+) bytes, a time of ([\d.,]+) µs", t):
        find(r"Give GB/s \(10⁹ bytes/s\)", t)
        return num(m[1]) / (num(m[2]) * (1e-3 if slip == "ms" else 1e-6)) * factor / 1e9
    algbw = num(find(r"prints an algorithm bandwidth of ([\d.,]+) GB/s", t)[1])
    link = num(find(r"link is rated ([\d.,]+) GB/s per direction", t)[1])
    find(r"What fraction of the link does the bus bandwidth reach\? Give percent", t)
    return 100 * algbw * factor / link


ELEMENT_BITS = {"FP4 E2M1": 4, "FP8 E4M3": 8, "FP8 E5M2": 8, "FP6 E2M3": 6, "FP6 E3M2": 6}


def _bits_per_weight(t: str, scale_every: int | None = None) -> float:
    m = find(r"\((FP\d E\dM\d) elements, one (8-bit E8M0|FP8 E4M3)(?: power-of-two)? scale per block of (\d+)", t)
    return ELEMENT_BITS[m[1]] + (8 / int(m[3]) if scale_every is None else 8 / scale_every if scale_every else 0)


def block_bytes(p, scale_every: int | None = None, bf16: bool = True, other_unit: bool = False) -> float:
    t = p.statement_text
    bits = _bits_per_weight(t, scale_every)
    unit = {"GB": 1e9, "GiB": 2**30}[find(r"Give (GB|GiB) \(", question(t))[1]]
    unit = {1e9: 2**30, 2**30: 1e9}[unit] if other_unit else unit
    if m := re.search(r"A model's (\d+(?:\.\d+)?) billion weights are stored in", t):
        if "NVFP4" in t:
            find(r"ignore the per-tensor fp32 scale", t)
        return num(m[1]) * 1e9 * bits / 8 / unit
    m = find(r"has (\d+) layers of (\d+) experts, each expert (\d+(?:\.\d+)?) million weights", t)
    experts = int(m[1]) * int(m[2]) * num(m[3]) * 1e6
    other = num(find(r"its other (\d+(?:\.\d+)?) billion weights are in bf16", t)[1]) * 1e9
    return (experts * bits / 8 + other * 2 * bf16) / unit


def format_values(e_bits: int, m_bits: int, bias: int, ieee: bool, largest: Fraction | None) -> list[tuple[Fraction, int]]:
    """Every finite non-negative value of a binary float format, with its mantissa field (for ties to even)."""
    out = []
    for e in range(2**e_bits):
        if ieee and e == 2**e_bits - 1:
            continue  # infinities and NaNs
        for m in range(2**m_bits):
            v = (Fraction(m, 2**m_bits) * Fraction(2) ** (1 - bias) if e == 0
                 else (1 + Fraction(m, 2**m_bits)) * Fraction(2) ** (e - bias))
            if largest is None or v <= largest:
                out.append((v, m))
    return out


def nearest(x: Fraction, values: list[tuple[Fraction, int]]) -> Fraction:
    """The value nearest to |x| with x's sign, ties to the even mantissa field; x must lie within the range."""
    mag = abs(x)
    assert mag <= max(v for v, _ in values), f"{float(x)} is beyond the format's range"
    best = min(values, key=lambda vm: (abs(vm[0] - mag), vm[1] % 2))
    return best[0] if x >= 0 else -best[0]


TORCH_FP8 = {("E4M3", False): torch.float8_e4m3fn, ("E5M2", True): torch.float8_e5m2}


def nearest_value(p) -> float:
    t = p.statement_text
    if m := re.search(r"Convert x = (-?[\d.]+) to FP8 (E(\d)M(\d)) \(1 sign, (\d) exponent, (\d) mantissa bits, bias (\d+); "
                      r"(no infinities, largest normal (\d+(?:\.\d+)?)|IEEE-style infinities)\), rounding to nearest \(ties to even\)", t):
        x = Fraction(m[1])
        e_bits, m_bits, bias = int(m[5]), int(m[6]), int(m[7])
        assert (e_bits, m_bits) == (int(m[3]), int(m[4]))
        ieee = m[8].startswith("IEEE")
        values = format_values(e_bits, m_bits, bias, ieee, None if ieee else Fraction(m[9]))
        v = nearest(x, values)
        cast = torch.tensor(float(x), dtype=torch.float64).to(TORCH_FP8[(m[2], ieee)]).to(torch.float64).item()
        assert cast == float(v), f"{p.id}: torch casts {float(x)} to {cast}, the enumeration gives {float(v)}"
        return float(v)
    m = find(r"An MXFP4 block \(OCP Microscaling v1\.0\) holds four values here: (-?[\d.]+), (-?[\d.]+), (-?[\d.]+), "
             r"(-?[\d.]+)\. The block's shared scale is 2\^\(⌊ log₂ max\|v\| ⌋ - 2\)", t)
    vs = [Fraction(m[i]) for i in range(1, 5)]
    mags = find(r"nearest FP4 E2M1 value \(magnitudes ([\d., ]+); ties to even; values above 6 saturate to 6\)", t)[1]
    grid = [Fraction(s) for s in mags.split(", ")]
    values = format_values(2, 1, 1, False, Fraction(6))
    assert sorted(v for v, _ in values) == grid, "the printed E2M1 magnitudes are not E2M1's"
    top = max(abs(v) for v in vs)
    e = math.floor(math.log2(top))
    e += (Fraction(2) ** (e + 1) <= top) - (Fraction(2) ** e > top)  # exact floor of log₂
    scale = Fraction(2) ** (e - 2)
    j = int(find(r"What value does element (\d) \((-?[\d.]+)\)", t)[1])
    assert Fraction(find(r"element \d \((-?[\d.]+)\)", t)[1]) == vs[j - 1], f"{p.id}: element {j} is not the value shown"
    y = vs[j - 1] / scale
    y = max(Fraction(-6), min(Fraction(6), y))
    return float(nearest(y, values) * scale)


def _vector(t: str) -> list[Fraction]:
    return [Fraction(s.strip()) for s in find(r"x = \(([-\d., ]+)\)", t)[1].split(",")]


def quant_error(p, qmax_slip: bool = False, rnd=round) -> float:
    t = p.statement_text
    x = _vector(t)
    find(r"rounding is half to even", t)
    if "absmax (symmetric)" in t:
        m = find(r"int(\d+): scale = max\|x\| / (\d+), codes q = round\(x/scale\) in −(\d+) … (\d+)", t)
        qmax = int(m[2])
        assert int(m[3]) == int(m[4]) == qmax
        qmax += qmax_slip  # the slip: codes taken to run to 2^(b-1), not 2^(b-1) - 1
        scale = max(abs(v) for v in x) / qmax
        xhat = [max(-qmax, min(qmax, rnd(v / scale))) * scale for v in x]
    else:
        m = find(r"the range \[min, max\] widened to hold 0, scale = \(max - min\)/(\d+), zero point z = round\(-min/scale\), "
                 r"codes q = round\(x/scale\) \+ z clamped to 0 … (\d+), dequantised \(q - z\)·scale", t)
        levels = int(m[1])
        assert int(m[2]) == levels
        lo, hi = min(min(x), 0), max(max(x), 0)
        scale = (hi - lo) / (levels + 1 if qmax_slip else levels)
        z = round(-lo / scale)
        xhat = [(max(0, min(levels, round(v / scale) + z)) - z) * scale for v in x]
    q = question(t)
    if m := re.search(r"What is element (\d+) \((-?[\d.]+)\) after dequantisation", q):
        j = int(m[1])
        assert Fraction(m[2]) == x[j - 1], f"{p.id}: element {j} is not the value shown"
        return float(xhat[j - 1])
    find(r"largest absolute error maxᵢ \|x̂ᵢ - xᵢ\|", q)
    return float(max(abs(a - b) for a, b in zip(xhat, x, strict=True)))


def smoothquant(p, slip: str = "") -> float:
    t = p.statement_text
    alpha = num(find(r"α = (\d+(?:\.\d+)?)", t)[1])
    if m := re.search(r"max\|Xⱼ\| = (\d+(?:\.\d+)?) and weight maximum max\|Wⱼ\| = (\d+(?:\.\d+)?)", t):
        find(r"What is the smoothing factor sⱼ\?", t)
        x, w = num(m[1]), num(m[2])
        return {"": x**alpha / w ** (1 - alpha), "ratio": x / w, "swapped": w**alpha / x ** (1 - alpha),
                "alpha_swapped": x ** (1 - alpha) / w**alpha}[slip]
    chans = re.findall(r"channel \d: max\|X\| = (\d+(?:\.\d+)?), max\|W\| = (\d+(?:\.\d+)?)", t)
    assert len(chans) == 3, "three channels printed"
    find(r"largest activation maximum over the three channels", t)
    smooth = [(num(x), num(x) ** alpha / num(w) ** (1 - alpha)) for x, w in chans]
    return max({"": x / s, "before": x, "multiplied": x * s}[slip] for x, s in smooth)


def fsdp_overlap(p, link_x: float = 1, width: int = 2, ring: bool = True, shard_only: bool = False,
                 fwd: int = 2, total: bool = False) -> float:
    t = p.statement_text
    m = find(r"over n = (\d+) (?:GPUs|TPU chips) \([\w-]+: dense bf16 peak ([\d.,]+) TFLOP/s, link ([\d.,]+) GB/s per "
             r"direction\)", t)
    n, peak, link = int(m[1]), num(m[2]) * 1e12, num(m[3]) * 1e9 * link_x
    find(r"its bf16 parameters \(2 bytes each\) are all-gathered with a ring", t)
    params = num(find(r"one layer has P = ([\d,]+) parameters", t)[1])
    gather = (1 / n if shard_only else (n - 1) / n if ring else 1) * width * params / link
    q = question(t)
    if "How long does one layer's all-gather take" in q or total:
        return gather * 1e3
    find(r"\(2·P FLOPs per token forward, at the peak\)", t)
    if "left exposed" in q:
        tokens = num(find(r"each (?:GPU|TPU chip) runs T = ([\d,]+) tokens", t)[1])
        return max(0.0, gather - fwd * params * tokens / peak) * 1e3
    find(r"How many tokens per (?:GPU|TPU chip) must a layer's forward process", q)
    return gather * peak / (fwd * params)


def grad_accum_bubble(p, share=lambda p, m: (p - 1) / (m + p - 1), dp: bool = True) -> float:
    t = p.statement_text
    stages = int(find(r"p = (\d+) pipeline stages", t)[1])
    find(r"1F1B", t)
    if m := re.search(r"each optimizer step runs m = (\d+) micro-batches", t):
        micro = int(m[1])
    else:
        if m := re.search(r"global batch of B = ([\d,]+) sequences", t):
            seqs = num(m[1])
        else:
            m = find(r"global batch of ([\d,]+) tokens of sequences of ([\d,]+) tokens", t)
            seqs = num(m[1]) / num(m[2])
        b, d = int(find(r"micro-batches of b = (\d+) sequences?", t)[1]), int(find(r"d = (\d+) data-parallel", t)[1])
        micro = seqs / (b * (d if dp else 1))
        assert micro == int(micro), f"the global batch is not whole micro-batches: m = {micro}"
    return 100 * share(stages, micro)


def lr_schedule(p, slip: str = "") -> float:
    t = p.statement_text
    step = num(find(r"at step t = ([\d,]+)\?", t)[1])
    exp = int(find(r"in units of 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", t)[1].translate(SUPERSCRIPT))
    if m := re.search(r"d_model = ([\d,]+) and warmup_steps = ([\d,]+) \(steps count from 1\)", t):
        d, w = num(m[1]), num(m[2])
        branches = (step**-0.5, step * w**-1.5)
        branch = max(branches) if slip == "wrong_branch" else min(branches)
        lr = (1 if slip == "no_dmodel" else d**-0.5) * branch
    elif "HuggingFace's linear schedule; steps count from 0" in t:
        m = find(r"from 0 to ([\d.e-]+) over the first w = ([\d,]+) steps, then decays it linearly to 0 at step T = ([\d,]+)", t)
        top, w, total = float(m[1]), num(m[2]), num(m[3])
        lr = top * step / w if step < w else top * max(0.0, (total - step) / (total if slip == "decay_from_zero" else total - w))
    else:
        m = find(r"warms up linearly to ([\d.e-]+) over w = ([\d,]+) steps, then follows a cosine decay to ([\d.e-]+) at step "
                 r"T = ([\d,]+): η = ηₘᵢₙ \+ \(ηₘₐₓ - ηₘᵢₙ\)\(1 \+ cos πp\)/2 with p the fraction of the decay done", t)
        top, w, low, total = float(m[1]), num(m[2]), float(m[3]), num(m[4])
        assert step >= w, f"step {step} is in the warmup, whose start the text does not give"
        frac = step / total if slip == "progress_from_zero" else (step - w) / (total - w)
        low = 0.0 if slip == "floor_ignored" else low
        lr = low + (top - low) * (1 + math.cos(math.pi * frac)) / (1 if slip == "no_half" else 2)
    return lr / 10.0**exp


RECOMPUTE = shown_all({"measurements.mfu_step": mfu_step, "measurements.nccl_busbw": nccl_busbw, "precision.block_bytes": block_bytes,
             "precision.nearest_value": nearest_value, "precision.quant_error": quant_error,
             "precision.smoothquant": smoothquant, "training.fsdp_overlap": fsdp_overlap,
             "training.grad_accum_bubble": grad_accum_bubble, "training.lr_schedule": lr_schedule})
FIDS = with_views(RECOMPUTE)



def _trunc(x: Fraction) -> int:
    return int(x)  # toward zero


#: the commonest mistakes, each recomputed from the text with the slip its label names
WRONGS = shown_all({
    "measurements.mfu_step": {"one_chip": lambda p: mfu_step(p, chips_on=False), "two_n": lambda p: mfu_step(p, per_token=2),
                              "sparse_peak": lambda p: mfu_step(p, peak_x=2)},
    "measurements.nccl_busbw": {"algbw_as_busbw": lambda p: nccl_busbw(p, "algbw"), "ms_for_us": lambda p: nccl_busbw(p, "ms"),
                                "wrong_factor": lambda p: nccl_busbw(p, "other_factor")},
    "precision.block_bytes": {"scales_forgotten": lambda p: block_bytes(p, scale_every=0),
                              "scale_per_weight": lambda p: block_bytes(p, scale_every=1),
                              "bf16_left_out": lambda p: block_bytes(p, bf16=False),
                              "gb_for_gib": lambda p: block_bytes(p, other_unit=True)},
    "precision.quant_error": {"qmax_power_of_two": lambda p: quant_error(p, qmax_slip=True),
                              "truncated": lambda p: quant_error(p, rnd=_trunc)},
    "precision.smoothquant": {s: functools.partial(smoothquant, slip=s) for s in
                              ("ratio", "swapped", "alpha_swapped", "before", "multiplied")},
    "training.fsdp_overlap": {"bidirectional": lambda p: fsdp_overlap(p, link_x=2), "fp32_params": lambda p: fsdp_overlap(p, width=4),
                              "no_ring_factor": lambda p: fsdp_overlap(p, ring=False),
                              "shard_only": lambda p: fsdp_overlap(p, shard_only=True),
                              "fwd_6pt": lambda p: fsdp_overlap(p, fwd=6), "total_not_exposed": lambda p: fsdp_overlap(p, total=True)},
    "training.grad_accum_bubble": {"over_ideal": lambda p: grad_accum_bubble(p, share=lambda s, m: (s - 1) / m),
                                   "one_slot_more": lambda p: grad_accum_bubble(p, share=lambda s, m: (s - 1) / (m + s)),
                                   "p_not_minus_one": lambda p: grad_accum_bubble(p, share=lambda s, m: s / (m + s)),
                                   "dp_not_divided": lambda p: grad_accum_bubble(p, dp=False)},
    "training.lr_schedule": {s: functools.partial(lr_schedule, slip=s) for s in
                             ("decay_from_zero", "no_dmodel", "wrong_branch", "progress_from_zero", "no_half", "floor_ignored")},
})


globals().update(key_tests(RECOMPUTE, FIDS, "low_precision", mistakes=WRONGS))



def test_format_enumeration_matches_torch():
    """The enumerated FP8 formats are torch's: E4M3 (no infinities) tops out at 448 and E5M2 at 57344."""
    e4m3 = format_values(4, 3, 7, False, Fraction(448))
    e5m2 = format_values(5, 2, 15, True, None)
    assert max(v for v, _ in e4m3) == torch.finfo(torch.float8_e4m3fn).max
    assert max(v for v, _ in e5m2) == torch.finfo(torch.float8_e5m2).max
    assert min(v for v, _ in e4m3 if v > 0) == torch.finfo(torch.float8_e4m3fn).smallest_normal / 8


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, WRONGS))
