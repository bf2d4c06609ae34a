"""An outsider's audit of question_bank/families/hardware.py: every key recomputed from the text a student reads.

For each family (and its numeric MCQ view) the numbers are parsed with regular expressions from
``statement_text`` (and ``options_text``); the formula is written here, with the conventions as the
statement states them: a datasheet's "with 2:4 structured sparsity" figure is halved for the dense peak;
TB/s and GB are powers of ten, GiB 2³⁰; 2 FLOPs per multiply-add; int8/fp8 one byte per weight, int4
half a byte, bf16 two. The key must accept the value rounded as the statement asks (and equal it); a
numeric MCQ must key the one option that prints it. ``p.given``, the solutions, the misconceptions, the
solver and the family module are not read. Run as a script for the sweep over many seeds::

    PYTHONPATH=. python tests/question_bank/families/test_from_text_hardware.py 300
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

import question_bank.families  # noqa: F401 - registers every family
from tests.question_bank.families.from_text_audit import (
    check,
    key_tests,
    printed_number,
    shown,
    sweep_main,
    with_right_value,
    with_views,
)
from tests.question_bank.families.from_text_hardware import DTYPE_BYTES, dense_peak, grab, hbm_bw, num, number

# --- one function per family: the answer from the text -------------------------------------------------


def matmul_bound(t: str) -> tuple[str, float]:
    """(bound, roofline time in ms) of Y = XW: 2BDF FLOPs, 2(BD + DF + BF) bytes."""
    m = grab(r"X of shape (\d+) × (\d+) by weights W of shape (\d+) × (\d+)", t, "the shapes")
    B, D, D2, F = map(int, m.groups())
    assert D == D2, t
    assert "2 FLOPs per multiply-add and 2 bytes per bf16 element" in t
    compute, memory = 2 * B * D * F / dense_peak(t), 2 * (B * D + D * F + B * F) / hbm_bw(t)
    return ("compute" if compute > memory else "memory"), max(compute, memory) * 1e3


def critical_intensity(t: str) -> float:
    i_star = dense_peak(t) / hbm_bw(t)
    if "critical batch size B*" not in t:
        return i_star
    assert "2B/w equals I*" in t and "w = bytes per weight" in t
    w = DTYPE_BYTES[grab(r"bf16 activations and (\w+) weights", t, "the weights' type")[1]]
    return i_star * w / 2


def decode_step(t: str, *, kv: bool = True, time: str = "roofline") -> float:
    """max(bytes / bandwidth, FLOPs / peak) over the chips, in ms: all weights and every sequence's K and V
    of min(S, W) positions read once (2 bytes each), 2N FLOPs per sequence."""
    N = number(r"N = ([\d,]+) parameters", t)
    L = int(number(r"L = (\d+) layers", t))
    m = grab(r"h = (\d+) heads of size dₕ = (\d+) and (multi-head attention|grouped-query attention with (\d+) K/V "
             r"heads|multi-query attention)", t, "the attention")
    h, dh = int(m[1]), int(m[2])
    g = h if m[3] == "multi-head attention" else 1 if m[3] == "multi-query attention" else int(m[4])
    assert "2 bytes per value" in t and "does 2N FLOPs per sequence" in t
    chips = int(m2[1]) if (m2 := re.search(r"on (\d+) × ", t)) else 1
    if chips > 1:
        assert "weights and cache split evenly" in t
    B, S = int(number(r"B = (\d+) sequences?", t)), int(number(r"S = (\d+) tokens so far", t))
    positions = S
    if w := re.search(r"sliding-window attention with W = (\d+) in every layer", t):
        positions = min(S, int(w[1]))
    else:
        assert "window" not in t.lower(), t
    byts = 2 * N + (B * L * 2 * g * dh * positions * 2 if kv else 0)
    memory, compute = byts / (chips * hbm_bw(t)), 2 * N * B / (chips * dense_peak(t))
    return {"roofline": max(memory, compute), "compute": compute}[time] * 1e3


def _tokens(t: str) -> tuple[float, float]:
    N = number(r"N = ([\d,.]+(?: (?:million|billion|trillion))?) parameters", t, "N")
    if m := re.search(r"(\d+) tokens per parameter \(D = \1N\)", t):
        return N, int(m[1]) * N
    return N, number(r"D = ([\d,.]+(?: (?:million|billion|trillion))?) tokens", t, "D")


def gpu_days(t: str) -> float:
    """6ND / (chips × dense peak × MFU), in days of 86,400 s."""
    assert "2 FLOPs per multiply-add; forward and backward pass" in t and "86,400 s" in t
    N, D = _tokens(t)
    chips = int(number(r"on (\d+) × ", t))
    mfu = number(r"MFU\) of (\d+)%", t) / 100
    return 6 * N * D / (chips * dense_peak(t) * mfu) / 86400


def zero_memory(t: str, *, stage: int | None = None, other_unit: bool = False) -> float:
    """ZeRO (Rajbhandari et al. 2020) with 2 + 2 + 12 bytes per parameter: stage 1 shards the 12, stage 2 the
    gradients too, stage 3 everything."""
    assert "2-byte weights and gradients; 12 bytes of optimizer state per parameter" in t
    psi = number(r"Ψ = ([\d,.]+(?: (?:million|billion|trillion))?) parameters", t)
    nd = int(number(r"N_d = (\d+)", t))
    stage = stage if stage is not None else int(number(r"ZeRO stage (\d)", t))
    weights, grads, opt = 2 * psi, 2 * psi, 12 * psi
    per_gpu = {0: weights + grads + opt, 1: weights + grads + opt / nd, 2: weights + (grads + opt) / nd,
               3: (weights + grads + opt) / nd}[stage]
    unit = {"GB (10⁹ bytes)": 1e9, "GiB (2³⁰ bytes)": 2**30}[grab(r"answer in (GB \(10⁹ bytes\)|GiB \(2³⁰ bytes\))",
                                                                 t, "the unit")[1]]
    if other_unit:
        unit = 2**30 if unit == 1e9 else 1e9
    return per_gpu / unit


def min_chips(t: str, *, reserve_kept: bool = True, rounding=math.ceil) -> int:
    """⌈(N·w + KV bytes) / (HBM − reserve)⌉, exactly (fractions)."""
    m = grab(r"N = ([\d,]+) parameters, stored in (\w+)\.", t, "N and its type")
    N, w = int(num(m[1])), Fraction(DTYPE_BYTES[m[2]])
    m = grab(r"has (\d+) (GB|GiB) \((10⁹|2³⁰) bytes each\) of HBM", t, "the HBM")
    unit = 10**9 if m[2] == "GB" else 2**30
    assert (m[3] == "10⁹") == (m[2] == "GB"), t
    hbm = int(m[1]) * unit
    reserve = int(r[1]) * unit if (r := re.search(rf"the runtime keeps (\d+) {m[2]} for itself", t)) else 0
    reserve = reserve if reserve_kept else 0
    kv = 0
    if k := re.search(r"bf16 KV cache for B = (\d+) sequences of S = (\d+) tokens \(L = (\d+) layers, (\d+) K/V heads "
                      r"of size (\d+)\): ([\d,]+) bytes", t):
        B, S, L, g, dh = map(int, k.groups()[:5])
        kv = int(num(k[6]))
        # the printed total is checked against its printed parts: K and V, 2 bytes each
        assert kv == 2 * L * B * S * g * dh * 2, f"the KV bytes printed ({kv:,}) are not 2·L·B·S·g·dₕ·2\n{t}"
        assert "the weights and the KV cache" in t
    total = N * w + kv
    return rounding(total / (hbm - reserve))


@shown
def matmul_bound_options(p) -> set[int]:
    """The options that name the bound and print the roofline time (to 0.6 %) the text gives."""
    bound, ms = matmul_bound(p.statement_text)
    return {i for i, o in enumerate(p.options_text)
            if o.lower().startswith(bound) and math.isclose(float(printed_number(o)), ms, rel_tol=0.006)}


RECOMPUTE = {
    "hardware.matmul_bound": matmul_bound_options,
    "hardware.critical_intensity": critical_intensity,
    "hardware.decode_step": decode_step,
    "hardware.gpu_days": gpu_days,
    "hardware.zero_memory": zero_memory,
    "hardware.min_chips": min_chips,
}
FIDS = with_views(RECOMPUTE)


def _mfu(t: str) -> float:
    return number(r"MFU\) of (\d+)%", t) / 100


def _chips(t: str) -> int:
    return int(m[1]) if (m := re.search(r"on (\d+) × ", t)) else 1


def _nvidia(t: str) -> bool:
    return "with 2:4 structured sparsity" in t


#: the stretch: the wrong value each of the commonest mistakes gives, from the text (the right value v)
_MISTAKES = {
    "hardware.gpu_days": {
        "sparse_peak": lambda t, v: v / 2 if _nvidia(t) else math.nan,  # the with-sparsity figure as the dense peak
        "forgot_mfu": lambda t, v: v * _mfu(t),
        "gpu_days": lambda t, v: v * _chips(t),
        "forgot_backward": lambda t, v: v / 3,  # 2N per token, not 6N
    },
    "hardware.zero_memory": {
        "no_sharding": lambda t, v: zero_memory(t, stage=0),
        "gb_vs_gib": lambda t, v: zero_memory(t, other_unit=True),
        "stage_1_partitioning": lambda t, v: zero_memory(t, stage=1),
        "stage_2_partitioning": lambda t, v: zero_memory(t, stage=2),
        "stage_3_partitioning": lambda t, v: zero_memory(t, stage=3),
    },
    "hardware.min_chips": {
        "rounded_down": lambda t, v: min_chips(t, rounding=math.floor),
        "forgot_reserve": lambda t, v: min_chips(t, reserve_kept=False),
    },
    "hardware.critical_intensity": {"sparse_peak": lambda t, v: 2 * v if _nvidia(t) else math.nan},
    "hardware.decode_step": {
        "forgot_kv_cache": lambda t, v: decode_step(t, kv=False),
        "compute_bound_time": lambda t, v: decode_step(t, time="compute"),
    },
}


MISTAKES = with_right_value(_MISTAKES, RECOMPUTE)
globals().update(key_tests(RECOMPUTE, FIDS, "hardware", mistakes=MISTAKES))


def test_matmul_bound_easy_seed_70287_draws():
    """The audit's sweep found a seed the family could not draw (compute-bound in the lowest band of times, on a chip
    drawn four times among the two whose critical intensity is high): it drew nothing and raised, and
    `qkv bank show hardware.matmul_bound --seed 70287 --difficulty easy` said "internal error"."""
    check(RECOMPUTE, "hardware.matmul_bound", 70287, "easy")


def test_min_chips_kv_bytes_check_can_fail():
    """The auditor's own check of the printed KV total rejects a wrong total."""
    t = ("m has N = 1,000 parameters, stored in bf16. Each X has 16 GB (10⁹ bytes each) of HBM. Serving also keeps a bf16 "
         "KV cache for B = 1 sequences of S = 2 tokens (L = 1 layers, 1 K/V heads of size 4): 33 bytes. ... holds the "
         "weights and the KV cache?")
    with pytest.raises(AssertionError, match="KV bytes printed"):
        min_chips(t)
    assert min_chips(t.replace("33 bytes", "32 bytes")) == 1


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
