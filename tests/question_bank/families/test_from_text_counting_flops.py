"""The FLOP-count keys (question_bank/families/counting_flops.py), recomputed from the text.

The sizes are parsed from the plain statement with regular expressions and the FLOPs counted here the
way each statement says: 2 FLOPs per multiply-add, only matrix multiplications, the full n × n score
matrix; a training step is the forward pass and a backward pass of two matmuls of each matmul's size
(3× the forward); the training-compute rule is 2 FLOPs per multiply-add forward and twice that
backward, C = 6ND. The matmul counts are written out per matmul (a weight d_in × d_out applied to T
tokens is T·d_in·d_out multiply-adds; QKᵀ and A·V are n²·dₖ per head and sequence) and checked against
torch's own FLOP counter (``torch.utils.flop_counter``) on the meta device for the attention products.
Exact arithmetic (``fractions``) until the final rounding the statement asks for. The key must accept
the value rounded as asked (MCQ: the keyed option is the one option printing it). Nothing here reads
``given`` or imports the solver. ``python -m tests.question_bank.families.test_from_text_counting_flops``
sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import re
from fractions import Fraction

import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.question_bank.families.from_text_audit import (
    asked_decimals,
    key_tests,
    shown,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    has,
    number_in,
)

SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
SCALE = {"million": 10**6, "billion": 10**9, "trillion": 10**12}


def exact(s: str) -> Fraction:
    return Fraction(s.replace(",", ""))


def rnn_ratio(text: str) -> Fraction:
    """(QKᵀ + AV FLOPs) / (recurrent layer FLOPs): 4·n²·d against n·2·(h² + h·d) per gate."""
    n, d, h = number_in(r"n = ([\d,]+) tokens", text), number_in(r"width d = ([\d,]+)", text), number_in(r"hidden width h = ([\d,]+)", text)
    gates = 4 if has(r"LSTM layer \(four gates", text) else 1
    assert gates == 4 or "tanh(Wₕₕ hₜ₋₁ + Wₓₕ xₜ)" in text
    attention = 2 * n * n * d + 2 * n * n * d
    recurrent = gates * n * 2 * (h * h + h * d)
    return Fraction(attention, recurrent)


def attention_products(B: int, n: int, d: int, h: int) -> tuple[int, int]:
    """FLOPs of QKᵀ and A·V over the heads and the batch, counted by torch on the meta device."""
    q = torch.empty(B, h, n, d // h, device="meta")
    a = torch.empty(B, h, n, n, device="meta")
    with FlopCounterMode(display=False) as c1:
        torch.matmul(q, q.transpose(-1, -2))
    with FlopCounterMode(display=False) as c2:
        torch.matmul(a, q)
    return c1.get_total_flops(), c2.get_total_flops()


def flops_attention(text: str, p=None) -> int:
    B, n = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) tokens", text)
    d, h = number_in(r"d_model = ([\d,]+)", text), number_in(r"h = (\d+) heads", text)
    assert "2 FLOPs per multiply-add" in text and "full n × n score matrix" in text
    qk, av = 2 * B * h * n * n * (d // h), 2 * B * h * n * n * (d // h)
    assert (qk, av) == attention_products(B, n, d, h)  # our count and torch's agree
    if "QKᵀ and AV together" in text:
        return qk + av
    if "computing QKᵀ take" in text:
        return qk
    assert "the product AV of the attention weights with the values" in text, f"what is asked:\n{text}"
    return av


def flops_forward(text: str, p=None, *, head: bool = True, scores: bool = True, per_mac: int = 2) -> float:
    """GFLOPs of the forward pass (or 3× it for a training step): per token and layer the four d × d
    projections, the FFN's two matrices, QKᵀ and A·V over n keys; then the LM head d × V."""
    V, d = number_in(r"vocabulary V = ([\d,]+)", text), number_in(r"d_model = ([\d,]+)", text)
    L = number_in(r"L = (\d+) layers", text)
    dff = number_in(rf"FFN {d} → ([\d,]+) → {d}", text)
    B, n = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) tokens", text)
    assert "LM head" in text and "logits at every position" in text and "full n × n score matrix" in text
    tokens = B * n
    macs_per_token = L * (4 * d * d + 2 * d * dff + (n * d + n * d) * scores) + d * V * head
    flops = per_mac * tokens * macs_per_token
    if "one training step" in text:
        assert "each matmul's backward is two matmuls of its size" in text
        flops *= 3
    else:
        assert "one forward pass" in text
    assert "GFLOPs (10⁹ FLOPs)" in text
    return float(Fraction(flops, 10**9))


def flops_training(text: str, p=None, *, per_token: int = 6) -> float:
    """C = 6ND (2 FLOPs per multiply-add forward, 4 backward), in the unit the statement asks."""
    m = re.search(r"N = ([\d.,]+) (million|billion|trillion) parameters", text)
    k = re.search(r"D = ([\d.,]+) (million|billion|trillion) tokens", text)
    assert m and k, f"N or D not given:\n{text}"
    C = per_token * exact(m[1]) * SCALE[m[2]] * exact(k[1]) * SCALE[k[2]]
    if u := re.search(r"units of 10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+) FLOPs", text):
        return float(C / Fraction(10) ** int(u[1].translate(SUP)))
    assert "petaflop/s-days (10¹⁵ FLOP/s sustained for one day)" in text, f"unit not said:\n{text}"
    return float(C / (10**15 * 86_400))


def rnn_choice(text: str, p) -> set[int]:
    """The easy level of counting.attention_vs_rnn is a choice: which is cheaper, and by what factor
    (the dearer one's FLOPs over the cheaper one's). The statement asks no rounding; the options print
    three significant figures (2.27, 13.6, 92): an option's factor is right when it is the exact factor
    rounded half up to the figures it prints, and a factor printed as a whole number (1, 92) to three."""
    assert asked_decimals(text) is None
    r = rnn_ratio(text)
    cheaper, factor = ("The RNN", r) if r > 1 else ("Self-attention", 1 / r)
    hits = set()
    for i, o in enumerate(p.options_text):
        m = re.match(r"(Self-attention|The RNN) is cheaper: (?:the RNN|self-attention) needs ([\d.]+) times its FLOPs", o)
        assert m, f"an option this file cannot read: {o!r}"
        if m[1] == cheaper and exact(m[2]) == three_figures(factor):
            hits.add(i)
    return hits


@shown
def attention_vs_rnn(p) -> float | set[int]:
    """The ratio of the FLOPs, or (the choice of the easy level) the options the text makes true."""
    if p.options_text and " is cheaper: " in p.options_text[0]:
        return rnn_choice(p.statement_text, p)
    return float(rnn_ratio(p.statement_text))


RECOMPUTE = {
    "counting.attention_vs_rnn": attention_vs_rnn,
    "counting.flops_attention": flops_attention, "counting.flops_forward": flops_forward,
    "counting.flops_training": flops_training,
}
FIDS = with_views(RECOMPUTE)


def three_figures(x: Fraction) -> Fraction:
    """x > 0 rounded half up to three significant figures, exactly."""
    e = 0
    while x * Fraction(10) ** e < 100:
        e += 1
    while x * Fraction(10) ** e >= 1000:
        e -= 1
    return Fraction(int(x * Fraction(10) ** e + Fraction(1, 2))) / Fraction(10) ** e


def _rnn_sizes(text: str) -> tuple[int, int, int, int]:
    gates = 4 if "LSTM layer" in text else 1
    return number_in(r"n = ([\d,]+) tokens", text), number_in(r"width d = ([\d,]+)", text), number_in(r"hidden width h = ([\d,]+)", text), gates


def _heads_batch(text: str) -> tuple[int, int]:
    return number_in(r"h = (\d+) heads", text), number_in(r"B = (\d+) sequences?", text)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "counting.attention_vs_rnn": {
        "swapped_complexities": lambda t: float(1 / rnn_ratio(t)),
        "forgot_av": lambda t: float(rnn_ratio(t) / 2),
        "only_w_hh": lambda t: (lambda n, d, h, g: 4 * n * n * d / (g * 2 * n * h * h))(*_rnn_sizes(t)),
    },
    "counting.flops_attention": {
        "macs_vs_flops": lambda t: flops_attention(t) // 2,
        "one_head_only": lambda t: flops_attention(t) // _heads_batch(t)[0],
        "forgot_batch": lambda t: flops_attention(t) // _heads_batch(t)[1],
    },
    "counting.flops_forward": {
        "macs_vs_flops": lambda t: flops_forward(t, per_mac=1),
        "forgot_lm_head": lambda t: flops_forward(t, head=False),
        "forgot_attention_scores": lambda t: flops_forward(t, scores=False),
    },
    "counting.flops_training": {
        "forgot_backward": lambda t: flops_training(t, per_token=2),
        "macs_vs_flops": lambda t: flops_training(t, per_token=3),
        "forgot_forward": lambda t: flops_training(t, per_token=4),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "counting_flops", mistakes=SLIPS))


def test_attention_products_counted_by_torch():
    """The count written here, 2·B·h·n²·dₖ per product, is torch's FLOP counter's for tiny shapes."""
    assert attention_products(2, 5, 12, 3) == (2 * 2 * 3 * 25 * 4, 2 * 2 * 3 * 25 * 4)


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
