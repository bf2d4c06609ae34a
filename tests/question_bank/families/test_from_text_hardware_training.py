"""An outsider's audit of question_bank/families/hardware_training.py: every key recomputed from the text.

The numbers are parsed from ``statement_text`` with regular expressions and the formulas are written here,
with the conventions the statement states: training costs 6ND FLOPs (2 per multiply-add, forward and
backward); a PF-day is 10¹⁵ FLOP/s for 86,400 s; the MFU is those FLOPs over GPU-hours × 3,600 s × the dense
peak (a datasheet's with-sparsity figure halved); Kaplan et al.'s C_forward = 2N + 2·n_layer·n_ctx·d_attn
(and the printed N is checked against its printed formula); Korthikanti et al.'s s·b·h·(34 + 5as/h) bytes
per layer, the 5as/h term dropped under selective recomputation; MiB, GiB powers of two, GB of ten.
``p.given``, the solutions, the misconceptions, the solver and the family module are not read. Script mode
sweeps many seeds::

    PYTHONPATH=. python tests/question_bank/families/test_from_text_hardware_training.py 300
"""

from __future__ import annotations

import math

import question_bank.families  # noqa: F401 - registers every family
from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_right_value,
    with_views,
)
from tests.question_bank.families.from_text_hardware import (
    dense_peak,
    grab,
    num,
    number,
)

_BIG = r"([\d,.]+(?: (?:million|billion|trillion))?)"
_STANDARD = "2 FLOPs per multiply-add; forward and backward pass; ignore attention's sequence-length term"


def _n_and_d(t: str) -> tuple[float, float]:
    N = number(rf"N = {_BIG} parameters", t, "N")
    if m := grab(rf"(?:D = {_BIG} tokens|(\d+) tokens per parameter \(D = (\d+)N\))", t, "D"):
        if m[1]:
            return N, num(m[1])
        assert m[2] == m[3], t
        return N, int(m[2]) * N
    raise AssertionError


def pf_days(t: str) -> float:
    assert _STANDARD in t and "1 PF-day = 10¹⁵ FLOP/s sustained for 86,400 s" in t
    N, D = _n_and_d(t)
    return 6 * N * D / (1e15 * 86400)


def mfu_from_gpu_hours(t: str) -> float:
    """6ND / (GPU-hours × 3,600 s × dense peak), in percent."""
    assert _STANDARD in t
    N, D = _n_and_d(t)
    hours = number(r"using ([\d,]+) GPU-hours", t, "the GPU-hours")
    return 100 * 6 * N * D / (hours * 3600 * dense_peak(t))


def kaplan_forward(t: str) -> float:
    L = int(number(r"n_layer = (\d+) layers", t))
    if m := grab(r"(d_model = dₐₜₜₙ = (\d+) and d_ff = 4 d_model|d_model = (\d+), (\d+) attention heads of "
                 r"d_head = (\d+) \(so dₐₜₜₙ = (\d+)\) and d_ff = (\d+))", t, "the layer's sizes"):
        if m[2]:
            dm = da = int(m[2])
            dff = 4 * dm
        else:
            dm, heads, dh, da, dff = (int(m[i]) for i in range(3, 8))
            assert heads * dh == da, f"{heads} heads of {dh} printed as dₐₜₜₙ = {da}\n{t}"
    N = number(r"\(2 dₐₜₜₙ \+ d_ff\) = ([\d,]+)\.", t, "N")
    # the printed N is the printed formula on the printed sizes
    assert N == 2 * dm * L * (2 * da + dff), f"N printed {N:,.0f}, formula {2 * dm * L * (2 * da + dff):,}\n{t}"
    n_ctx = int(number(r"n_ctx = (\d+) tokens", t))
    grab(r"C_forward ≈ 2N \+ 2 n_layer n_ctx dₐₜₜₙ FLOPs per token", t, "Kaplan's formula")
    attn = 2 * L * n_ctx * da
    if "by what percentage does C_forward exceed the 2N rule" in t:
        return 100 * attn / (2 * N)
    unit = grab(r"how many (MFLOP \(10⁶|GFLOP \(10⁹) FLOPs\)", t, "the unit")[1]
    return (2 * N + attn) / (1e6 if unit.startswith("M") else 1e9)


def activation_memory(t: str, *, other_unit: bool = False) -> float:
    h, a = int(number(r"hidden size h = (\d+)", t)), int(number(r"a = (\d+) attention heads", t))
    s, b = int(number(r"sequence length s = (\d+)", t)), int(number(r"micro-batch b = (\d+)", t))
    assert "16-bit activations and 1-byte dropout masks, no tensor or sequence parallelism" in t
    assert "s b h (34 + 5 a s / h) bytes per layer without recomputation" in t
    if "no recomputation (every activation is stored)" in t:
        per_layer = s * b * h * (34 + 5 * a * s / h)
    else:
        grab(r"selective activation recomputation: the 5as/h term of the estimate below .* is recomputed in the backward "
             r"pass, not stored", t, "what is recomputed")
        per_layer = s * b * h * 34
    if "does one transformer layer store" in t:
        layers = 1
    else:
        layers = int(number(r"do all L = (\d+) layers store", t, "the layers"))
    unit = {"MiB (2²⁰ bytes)": 2**20, "GiB (2³⁰ bytes)": 2**30, "GB (10⁹ bytes)": 1e9, "MB (10⁶ bytes)": 1e6}[
        grab(r"Give it in (MiB \(2²⁰ bytes\)|GiB \(2³⁰ bytes\)|GB \(10⁹ bytes\)|MB \(10⁶ bytes\))", t, "the unit")[1]]
    if other_unit:
        unit = {2**20: 1e6, 1e6: 2**20, 2**30: 1e9, 1e9: 2**30}[unit]
    return per_layer * layers / unit


RECOMPUTE = {
    "hardware.activation_memory": activation_memory,
    "hardware.kaplan_forward": kaplan_forward,
    "hardware.mfu_from_gpu_hours": mfu_from_gpu_hours,
    "hardware.pf_days": pf_days,
}


FIDS = with_views(RECOMPUTE)


#: the stretch: the wrong value each of the commonest mistakes gives, from the text (the right value v)
_MISTAKES = {
    "hardware.pf_days": {"forgot_backward": lambda t, v: v / 3, "macs_vs_flops": lambda t, v: v / 2},
    "hardware.mfu_from_gpu_hours": {
        "sparse_peak": lambda t, v: v / 2 if "with 2:4 structured sparsity" in t else math.nan,
        "forgot_backward": lambda t, v: v / 3,
    },
    "hardware.activation_memory": {
        "gb_vs_gib": lambda t, v: activation_memory(t, other_unit=True),
        "forgot_batch": lambda t, v: v / int(number(r"micro-batch b = (\d+)", t)),
    },
}


MISTAKES = with_right_value(_MISTAKES, RECOMPUTE)
globals().update(key_tests(RECOMPUTE, FIDS, "hardware_training", mistakes=MISTAKES))


def test_activation_memory_pinned():
    """By hand: h = 1024, a = 16, s = 1536, b = 1, no recomputation: 1536·1024·(34 + 5·16·1536/1024) = 1536·1024·154
    bytes = 154 × 1.5 MiB = 231 MiB."""
    t = ("A GPT-style transformer with hidden size h = 1024 and a = 16 attention heads is trained with sequence length "
         "s = 1536 and micro-batch b = 1, 16-bit activations and 1-byte dropout masks, no tensor or sequence parallelism, "
         "and no recomputation (every activation is stored). Using the activation-memory estimate of Korthikanti et al. "
         "(2022), s b h (34 + 5 a s / h) bytes per layer without recomputation, how much activation memory does one "
         "transformer layer store? Give it in MiB (2²⁰ bytes), rounded off to two decimal places.")
    assert activation_memory(t) == 231


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
