"""An outsider's audit of question_bank/families/hardware_inference.py: every key recomputed from the text.

The numbers are parsed from ``statement_text`` with regular expressions and the formulas are written here,
with the conventions the statement states: 2 FLOPs per multiply-add; QKᵀ and A·V over all S keys (no causal
halving); the projections Q, O of d × d and K, V of d × (G·H); a feed-forward block of two (or, SwiGLU,
three) d × d_ff matrices; the decode step's bytes of reading Q, the cached K and V and writing O once, at the
bytes per value the text names; the prefill's 2N FLOPs per token at the dense peak (a with-sparsity
datasheet figure halved) times the MFU. ``p.given``, the solutions, the misconceptions, the solver and the
family module are not read. Script mode sweeps many seeds::

    PYTHONPATH=. python tests/question_bank/families/test_from_text_hardware_inference.py 300
"""

from __future__ import annotations

import math
import re

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
    number,
)


def _kv_heads(t: str, n_heads: int) -> int:
    m = grab(r"(multi-head attention \(MHA|multi-query attention \(MQA|grouped-query attention \(GQA\) with G = (\d+))",
             t, "the attention variant")
    return n_heads if m[1].startswith("multi-head") else 1 if m[1].startswith("multi-query") else int(m[2])


def attention_crossover(t: str, *, kv_heads_as_query: bool = False) -> float:
    """S at which 4·S·N·H (QKᵀ and A·V for one query) equals the other matmuls' FLOPs for one token."""
    d, N = int(number(r"d = (\d+)", t)), int(number(r"N = (\d+) query heads of size H = d/N", t))
    H = d / N
    G = N if kv_heads_as_query else _kv_heads(t, N)
    assert "2 FLOPs per multiply-add; all S keys counted, no causal halving" in t
    proj = 2 * d * (N * H) * 2 + 2 * d * (G * H) * 2  # Q and O: d × NH; K and V: d × GH
    d_ff = int(number(r"d_ff = (\d+)", t))
    if "SwiGLU feed-forward block (three d × d_ff matrices)" in t:
        ffn = 3 * 2 * d * d_ff
    else:
        grab(r"a feed-forward block of two matrices with d_ff", t, "the feed-forward block's shape")
        ffn = 2 * 2 * d * d_ff
    if "equal the FLOPs of the four projections Q, K, V, O?" in t:
        other = proj
    else:
        grab(r"equal the FLOPs of all of its other matmuls \(the projections Q, K, V, O and the feed-forward block\)",
             t, "what the attention is compared with")
        other = proj + ffn
    return other / (4 * N * H)


def decode_attention_intensity(t: str, *, kv_heads_as_query: bool = False) -> float:
    """FLOPs of QKᵀ and A·V over bytes of Q, cached K and V, and O, for one decode step of a batch."""
    N, H = (int(x) for x in grab(r"N = (\d+) query heads of size H = (\d+)", t, "N and H").groups())
    G = N if kv_heads_as_query else _kv_heads(t, N)
    B = int(number(r"batch of B = (\d+) sequences?", t))
    S = int(number(r"S = (\d+) cached tokens", t))
    m = grab(r"All tensors are (\w+) \((\d+) bytes? per value\)", t, "the bytes per value")
    w = int(m[2])
    assert "2 FLOPs per multiply-add; softmax not counted" in t
    flops = 2 * B * N * S * H * 2
    byts = w * (B * N * H + 2 * B * G * S * H + B * N * H)
    return flops / byts


def prefill_time(t: str) -> float:
    """2N·T FLOPs at chips × dense peak × MFU, in ms."""
    N = number(r"N = ([\d,.]+(?: (?:million|billion|trillion))?) parameters", t, "N")
    T = int(number(r"a prompt of T = ([\d,]+) tokens", t))
    chips = int(m[1]) if (m := re.search(r"on (\d+) × ", t)) else 1
    if chips > 1:
        assert "the chips share the work perfectly" in t
    else:
        grab(r"on one ", t, "the number of chips")
    mfu = number(r"MFU\) of (\d+)%", t) / 100
    assert "2N FLOPs per token for a forward pass" in t
    return 2 * N * T / (chips * dense_peak(t) * mfu) * 1e3


RECOMPUTE = {
    "hardware.attention_crossover": attention_crossover,
    "hardware.decode_attention_intensity": decode_attention_intensity,
    "hardware.prefill_time": prefill_time,
}


FIDS = with_views(RECOMPUTE)


def _nvidia(t: str) -> bool:
    return "with 2:4 structured sparsity" in t


#: the stretch: the wrong value each of the commonest mistakes gives, from the text (the right value v)
_MISTAKES = {
    "hardware.prefill_time": {
        "sparse_peak": lambda t, v: v / 2 if _nvidia(t) else math.nan,
        "forgot_mfu": lambda t, v: v * number(r"MFU\) of (\d+)%", t) / 100,
        "one_chip": lambda t, v: v * int(number(r"on (\d+) × ", t)),
    },
    "hardware.attention_crossover": {
        "used_n_heads": lambda t, v: attention_crossover(t, kv_heads_as_query=True),
        "forgot_av": lambda t, v: 2 * v,  # half the attention FLOPs: S doubles
    },
    "hardware.decode_attention_intensity": {
        "macs_vs_flops": lambda t, v: v / 2,
        "used_n_heads": lambda t, v: decode_attention_intensity(t, kv_heads_as_query=True),
    },
}


MISTAKES = with_right_value(_MISTAKES, RECOMPUTE)
globals().update(key_tests(RECOMPUTE, FIDS, "hardware_inference", mistakes=MISTAKES))


def test_crossover_pinned():
    """By hand: d = 512, N = 8 (H = 64), MQA (G = 1), d_ff = 2048, all other matmuls: projections
    2·512·512·2 + 2·512·64·2 = 1,179,648; FFN 4·512·2048 = 4,194,304; 4·S·512 = 5,373,952 → S = 2624."""
    t = ("A decoder layer has d = 512, N = 8 query heads of size H = d/N, multi-query attention (MQA: one K/V head "
         "shared by all query heads), and a feed-forward block of two matrices with d_ff = 2048. No biases. For one "
         "token that attends to S keys, at what S do the FLOPs of QKᵀ and A · V equal the FLOPs of all of its other "
         "matmuls (the projections Q, K, V, O and the feed-forward block)? (2 FLOPs per multiply-add; all S keys "
         "counted, no causal halving.)")
    assert attention_crossover(t) == 2624


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
