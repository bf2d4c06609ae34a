"""The keys of question_bank/families/precision_scale.py recomputed from the text a student reads.

For each family and its MCQ view, the numbers are parsed from ``statement_text`` with regular expressions and
the answer computed here by the formula the statement states (``from_text_audit`` then asks the grader whether
the key accepts it, exact and rounded as asked; for an MCQ, whether the keyed option is the one it matches):

- ``measurements.run_flops``: FLOPs = chip-seconds × dense peak × MFU, the dense peak being half a datasheet
  figure printed "with 2:4 sparsity"; tokens = FLOPs / 6N;
- ``precision.fp8_memory``: bytes per parameter read off the recipe as printed (FP8 1, bf16 2, fp32 4 bytes),
  the optimizer's tensors (master weights, m, v) divided by d under ZeRO stage 1, all divided by t·p;
- ``precision.quant_granularity``: the matrix as printed, quantised here in exact rational arithmetic
  (``fractions.Fraction``, whose ``round`` is half to even as the statement asks) with one scale per row,
  per block or per tensor;
- ``training.fit_3d``: model states 2 + 2 + 12 bytes per parameter over t·p, ZeRO stage k sharding the
  optimizer (k ≥ 1), the gradients (k ≥ 2) and the weights (k = 3) over d; activations by the printed
  Korthikanti et al. formula, s·b·h·(10 + 24/t) bytes per layer (10/t with sequence parallelism), times the
  L/p layers of a stage and the min(p, m) micro-batches the first 1F1B stage holds; the memory left is the
  printed capacity less both.

Nothing is read from ``given``, the solution or the misconceptions; nothing is imported from the solver.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

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

BYTES = {"FP8": 1, "fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}
UNIT = {"GB": 1e9, "GiB": 2**30, "MB": 1e6, "MiB": 2**20}
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def _peak(t: str, dense: bool = True) -> float:
    """The dense bf16 FLOP/s of one chip, as printed (``dense=False``: a with-sparsity figure taken as it is)."""
    if m := re.search(r"dense bf16 peak of ([\d,.]+) TFLOP/s per chip", t):
        return num(m[1]) * 1e12
    figure = num(find(r"datasheet bf16 tensor figure of ([\d,.]+) TFLOP/s per GPU \(with 2:4 sparsity\)", t)[1]) * 1e12
    return figure / 2 if dense else figure


def run_flops(p, mfu_on: bool = True, dense: bool = True, chips: bool = True, day: int = 86400,
              per_token: int = 6) -> float:
    t = p.statement_text
    mfu = num(find(r"average MFU of ([\d.]+) %", t)[1]) / 100
    if m := re.search(r"used ([\d,]+) .*?(?:GPU|chip)-hours", t):
        seconds = num(m[1]) * 3600
    else:
        m = find(r"(?:took|trained for) ([\d,.]+) days on ([\d,]+) ", t)
        seconds = num(m[1]) * day * (num(m[2]) if chips else 1)
    flops = seconds * _peak(t, dense) * (mfu if mfu_on else 1)
    if m := re.search(r"A ([\d.]+)B-parameter dense model", t):
        find(r"6N FLOPs per token\)\? Give billions of tokens", t)
        return flops / (per_token * num(m[1]) * 1e9) / 1e9
    exp = int(find(r"in units of 10([⁰¹²³⁴⁵⁶⁷⁸⁹]+) FLOPs", t)[1].translate(SUPERSCRIPT))
    return flops / 10**exp


def fp8_memory(p, shard: str = "zero1", split_tp_only: bool = False, other_unit: bool = False) -> float:
    t = p.statement_text
    n = num(find(r"A ([\d.]+)-billion-parameter model", t)[1]) * 1e9
    if "Transformer Engine" in t:
        m = find(r"the matmuls read an (FP8) copy of the weights \(cast once per step\), while the (\w+) weights, the (\w+) "
                 r"master weights, the (\w+) gradients and Adam's (\w+) moments m and v", t)
        weights, master, grads, moment = BYTES[m[1]] + BYTES[m[2]], BYTES[m[3]], BYTES[m[4]], BYTES[m[5]]
    else:
        m = find(r"the weights the matmuls read are (FP8), the master weights and the gradients are (\w+), and Adam's "
                 r"moments m and v are (\w+)", t)
        weights, master, grads, moment = BYTES[m[1]], BYTES[m[2]], BYTES[m[2]], BYTES[m[3]]
    optimizer = master + 2 * moment
    d, split = 1, 1
    if m := re.search(r"d = (\d+) data-parallel (?:GPUs|replicas) with ZeRO stage (\d)", t):
        assert m[2] == "1", f"{p.id}: ZeRO stage {m[2]}"
        find(r"the optimizer's tensors, the master weights included,", t)
        d = int(m[1])
    if m := re.search(r"tensor parallelism t = (\d+), pipeline parallelism p = (\d+) \(the parameters split evenly over "
                      r"the t · p ranks\)", t):
        split = int(m[1]) * (1 if split_tp_only else int(m[2]))
    total = n / split * {"zero1": weights + grads + optimizer / d, "none": weights + grads + optimizer,
                         "zero3": (weights + grads + optimizer) / d,
                         "moments_only": weights + grads + master + 2 * moment / d}[shard]
    unit = find(r"Give (GB|GiB) \(", question(t))[1]
    return total / UNIT[{"GB": "GiB", "GiB": "GB"}[unit] if other_unit else unit]


def _matrix(t: str) -> list[list[Fraction]]:
    rows = [line for line in t.split("\n") if re.search(r"[⎡⎢⎣\[]", line) and re.search(r"\d", line)]
    assert rows, "no matrix printed"
    return [[Fraction(x) for x in re.findall(r"-?\d+\.\d+|-?\d+", re.sub(r"^\s*W = ", "", r))] for r in rows]


def _quantise(groups: list[list[Fraction]], qmax: int, rnd=round) -> list[Fraction]:
    """Every entry's error ŵ - w, each group with its own absmax scale (exact; round() is half to even)."""
    errs = []
    for g in groups:
        scale = max(abs(w) for w in g) / qmax
        errs += [max(-qmax, min(qmax, rnd(w / scale))) * scale - w for w in g]
    return errs


def quant_granularity(p, slip: str = "") -> float:
    t = p.statement_text
    find(r"absmax \(symmetric\) scales: scale = max\|w\| / (\d+) over the entries that share it, q = round\(w / scale\) "
         r"in −(\d+) … (\d+) \(half to even\), dequantised", t)
    qmax = int(find(r"scale = max\|w\| / (\d+)", t)[1])
    w = _matrix(t)
    if slip:
        return _granularity_slip(t, w, qmax, slip)
    m = find(r"\((\d+) output channels = rows, (\d+) input channels = columns\)", t)
    assert (len(w), len(w[0])) == (int(m[1]), int(m[2])), f"{p.id}: the matrix printed is not {m[1]} × {m[2]}"
    q = question(t)
    per_row = [list(r) for r in w]
    if "per-block scales" in q:
        k = {"two": 2, "three": 3, "four": 4}[find(r"one scale per block of (\w+) consecutive entries of a row", q)[1]]
        groups = [r[i:i + k] for r in w for i in range(0, len(r), k)]
        return float(max(abs(e) for e in _quantise(groups, qmax)))
    if "largest error" in q:
        find(r"per-channel scales \(one scale per row\)", q)
        return float(max(abs(e) for e in _quantise(per_row, qmax)))
    find(r"mean squared error .* with one per-tensor scale than with per-channel scales \(one per row\)", q)
    tensor = _quantise([[x for r in w for x in r]], qmax)
    channel = _quantise(per_row, qmax)
    return float(sum(e * e for e in tensor) / sum(e * e for e in channel))


def _granularity_slip(t: str, w: list[list[Fraction]], qmax: int, slip: str) -> float:
    """The value of a named mistake on the printed matrix (the question's own grouping unless the slip changes it)."""
    q = question(t)
    k = 2 if "block of two" in q else None
    rows = [list(r) for r in w]
    groups = {"per_tensor": [[x for r in w for x in r]], "per_column": [list(c) for c in zip(*w, strict=True)],
              "per_channel": rows}.get(slip, [r[i:i + k] for r in w for i in range(0, len(r), k)] if k else rows)
    if slip == "qmax_8":
        qmax = 8
    if slip == "truncated":
        errs = _quantise(groups, qmax, rnd=lambda x: int(x))  # int() of a Fraction truncates toward zero
    else:
        errs = _quantise(groups, qmax)
    if slip == "mean_error":
        return float(sum(abs(e) for e in errs) / len(errs))
    if slip == "half_step_bound":
        return float(max(abs(x) for r in w for x in r) / (2 * qmax))
    if slip in ("inverted", "rmse_ratio", "max_error_ratio", "per_block"):
        tensor = _quantise([[x for r in w for x in r]], qmax)
        other = _quantise([r[i:i + 2] for r in w for i in range(0, len(r), 2)] if slip == "per_block" else rows, qmax)
        mse = float(sum(e * e for e in tensor) / sum(e * e for e in other))
        return {"inverted": 1 / mse, "rmse_ratio": mse**0.5, "per_block": mse,
                "max_error_ratio": float(max(abs(e) for e in tensor) / max(abs(e) for e in other))}[slip]
    return float(max(abs(e) for e in errs))


def _zero(t: str) -> int:
    m = re.search(r"with ZeRO stage (\d)", t)
    return int(m[1]) if m else 0


def _states(t: str, tp_only: bool = False, unsharded: bool = False) -> float:
    n = num(find(r"A ([\d.]+)B-parameter transformer", t)[1]) * 1e9
    tp, pp = int(find(r"tensor parallelism t = (\d+)", t)[1]), int(find(r"pipeline parallelism p = (\d+)", t)[1])
    d = int(find(r"data parallelism d = (\d+)", t)[1])
    find(r"Count bf16 weights \(2 bytes\), bf16 gradients \(2 bytes\) and Adam's optimizer states \(fp32 master weights, "
         r"m and v: 12 bytes\) per parameter, split evenly over the t · p model-parallel ranks", t)
    stage = 0 if unsharded else _zero(t)
    pp = 1 if tp_only else pp
    weights, grads, optim = 2 / (d if stage >= 3 else 1), 2 / (d if stage >= 2 else 1), 12 / (d if stage >= 1 else 1)
    return n / (tp * pp) * (weights + grads + optim)


def _activations(t: str, all_layers: bool = False, all_micro: bool = False, sp: bool | None = None) -> float:
    layers = int(find(r"\((\d+) layers, d_model = ([\d,]+)", t)[1])
    h = num(find(r"d_model = ([\d,]+)", t)[1])
    tp, pp = int(find(r"tensor parallelism t = (\d+)", t)[1]), int(find(r"pipeline parallelism p = (\d+) \(1F1B\)", t)[1])
    s, b = num(find(r"s = ([\d,]+) tokens", t)[1]), int(find(r"micro-batches b = (\d+) sequences?", t)[1])
    m = int(find(r"each optimizer step runs m = (\d+) micro-batches", t)[1])
    find(r"s b h \(10 \+ 24/t\) bytes per GPU without sequence parallelism, where the 10 s b h \(LayerNorm inputs, "
         r"dropout masks\) are replicated by tensor parallelism and sequence parallelism splits them over the t ranks too", t)
    sp_printed = "with sequence parallelism" in t
    sp = sp_printed if sp is None else sp
    assert sp_printed or "without sequence parallelism" in t or "sequence parallelism" not in t.split("Activations")[0]
    per_layer = s * b * h * ((10 / tp if sp else 10) + 24 / tp)
    assert layers % pp == 0
    return per_layer * (layers if all_layers else layers // pp) * (m if all_micro else min(pp, m))


def fit_3d(p, unit: float = 1e9, **slip) -> float:
    t = p.statement_text
    q = question(t)
    find(r"Give GB \(10⁹ bytes\)", q)
    states = {k: v for k, v in slip.items() if k in ("tp_only", "unsharded")}
    acts = {k: v for k, v in slip.items() if k in ("all_layers", "all_micro", "sp")}
    if "bytes of model states" in q:
        return _states(t, **states) / unit
    if "bytes of activations" in q:
        return _activations(t, **acts) / unit
    find(r"How much of a first-stage GPU's memory is left", q)
    capacity = num(find(r"\((\d+) GB\) GPUs", t)[1]) * 1e9
    return (capacity - (_states(t, **states) + _activations(t, **acts)) * 1e9 / unit) / 1e9


RECOMPUTE = shown_all({"measurements.run_flops": run_flops, "precision.fp8_memory": fp8_memory,
             "precision.quant_granularity": quant_granularity, "training.fit_3d": fit_3d})
FIDS = with_views(RECOMPUTE)



#: the commonest mistakes, each recomputed from the text with the slip its label names
WRONGS = shown_all({
    "measurements.run_flops": {"no_mfu": lambda p: run_flops(p, mfu_on=False), "sparse_peak": lambda p: run_flops(p, dense=False),
                               "one_chip": lambda p: run_flops(p, chips=False), "days_as_hours": lambda p: run_flops(p, day=3600),
                               "two_n": lambda p: run_flops(p, per_token=2), "macs_vs_flops": lambda p: run_flops(p, per_token=3)},
    "precision.fp8_memory": {"not_sharded": lambda p: fp8_memory(p, shard="none"), "zero3": lambda p: fp8_memory(p, shard="zero3"),
                             "master_not_sharded": lambda p: fp8_memory(p, shard="moments_only"),
                             "tp_only": lambda p: fp8_memory(p, split_tp_only=True),
                             "gb_for_gib": lambda p: fp8_memory(p, other_unit=True),
                             "gib_for_gb": lambda p: fp8_memory(p, other_unit=True)},
    "precision.quant_granularity": {s: functools.partial(quant_granularity, slip=s) for s in (
        "per_tensor", "per_column", "per_channel", "qmax_8", "truncated", "mean_error", "half_step_bound", "inverted",
        "rmse_ratio", "max_error_ratio", "per_block")},
    "training.fit_3d": {"pp_not_divided": lambda p: fit_3d(p, tp_only=True), "zero_not_sharded": lambda p: fit_3d(p, unsharded=True),
                        "all_layers": lambda p: fit_3d(p, all_layers=True), "all_microbatches": lambda p: fit_3d(p, all_micro=True),
                        "gib": lambda p: fit_3d(p, unit=2**30), "sp_ignored": lambda p: fit_3d(p, sp=False),
                        "sp_assumed": lambda p: fit_3d(p, sp=True)},
})


globals().update(key_tests(RECOMPUTE, FIDS, "precision_scale", mistakes=WRONGS))



if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, WRONGS))
