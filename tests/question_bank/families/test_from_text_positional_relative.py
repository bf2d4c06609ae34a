"""The keys of ``positional.alibi_bias``, ``positional.rope_relative_score``, ``positional.t5_bias_params``
and ``positional.t5_bucket``, recomputed from the text a student reads.

``alibi_bias``: H, h, i, j are parsed; the slope follows the rule the text states (2^(-8h/H) for H a power
of two; otherwise the first p heads take 2^(-8h/p) and head p + r takes 2^(-8k/(2p)) with k = 2r - 1, p
checked against the text's). ``rope_relative_score``: q, k, m, n, d and the pairing are parsed; each pair is a
complex number rotated by its position's angle, and the score is Re Σ (q rotated)·conj(k rotated), the real
dot product of the rotated vectors. ``t5_bias_params``: one table of n_b × h scalars per stack (as the text
says), times the stacks asked, times the bytes per parameter when asked. ``t5_bucket``: the text's bucket
rule for its direction (bidirectional: n = n_b/2 per side, offset n for keys after the query; causal: all
n_b for keys before, later keys at distance 0), with the floor of the real logarithm ratio.

The named mistakes (ALiBi's sign, no rotation, the offset reversed, a table per layer) are recomputed from
the text too, and the buckets are checked against transformers' ``T5Attention`` where it is installed.
"""

from __future__ import annotations

import cmath
import math
import re

import pytest

from question_bank.family import FAMILIES
from tests.question_bank.families.from_text_audit import (
    SEEDS,
    Unreadable,
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_kernels import (
    find,
    vector,
)


def alibi_bias(text: str) -> float:
    big_h, h = find(r"H = (\d+) heads", text, int), find(r"head h = (\d+) add", text, int)
    i, j = find(r"query position i = (\d+)", text, int), find(r"key position j = (\d+)", text, int)
    if "mₕ = 2^(-8h/H)" not in text or "-mₕ (i - j)" not in text or j > i:
        raise Unreadable("the slope rule or the bias is not stated, or j > i")
    if big_h & (big_h - 1) == 0:
        m = 2 ** (-8 * h / big_h)
    else:
        p = 2 ** (big_h.bit_length() - 1)
        if find(r"with p = (\d+) the largest power of two below H", text, int) != p:
            raise Unreadable("the text's p is not the largest power of two below H")
        if "every other slope of 2p" not in text:
            raise Unreadable("the rule for H not a power of two is not stated")
        m = 2 ** (-8 * h / p) if h <= p else 2 ** (-8 * (2 * (h - p) - 1) / (2 * p))
    return -m * (i - j)


def rope_score(text: str) -> float:
    d = find(r"With d = (\d+)", text, int)
    q, k = vector("q", text), vector("k", text)
    m, n = find(r"position m = (\d+)", text, int), find(r"position n = (\d+)", text, int)
    if len(q) != d or len(k) != d or "θᵢ = 10000^(-2i/d)" not in text or "no scaling" not in text:
        raise Unreadable("the vectors or the rotation are not fully stated")
    if not ("(x₂ᵢ, x₂ᵢ₊₁)" in text or (d == 2 and "(x₀, x₁)" in text)):
        raise Unreadable("the pairing is not stated")
    score = 0.0
    for i in range(d // 2):
        theta = 10000 ** (-2 * i / d)
        zq = complex(q[2 * i], q[2 * i + 1]) * cmath.exp(1j * m * theta)
        zk = complex(k[2 * i], k[2 * i + 1]) * cmath.exp(1j * n * theta)
        score += (zq * zk.conjugate()).real
    return score


def t5_bias_params(text: str) -> int:
    if "each stack has one bias table" not in text or "all the layers of that stack share" not in text:
        raise Unreadable("the sharing of the bias table is not stated")
    per_stack = find(r"\bh = (\d+) heads", text, int) * find(r"n_b = (\d+) relative-position buckets", text, int)
    if "of the encoder and the decoder together" in text:
        total = 2 * per_stack
    elif "of the encoder have" in text:
        total = per_stack
    else:
        raise Unreadable("the stacks asked are not named")
    if "How many bytes" in text:
        total *= find(r"\((\d+) bytes per parameter\)", text, int)
    return total


def t5_bucket(text: str) -> int:
    nb, big_d = find(r"n_b = (\d+) buckets", text, int), find(r"max distance D = (\d+)", text, int)
    r = find(r"Which bucket does r = (-?\d+) fall in", text, int)
    if "r = j - i (key j, query i)" not in text:
        raise Unreadable("the sign of r is not stated")
    if "bidirectional" in text and "offset by n_b/2) for keys after it" in text:
        n, offset, dist = nb // 2, (nb // 2 if r > 0 else 0), abs(r)
    elif "causal" in text and "keys after it count as distance 0" in text:
        n, offset, dist = nb, 0, max(-r, 0)
    else:
        raise Unreadable("the direction's rule is not stated")
    exact = n // 2
    if dist < exact:
        return offset + dist
    return offset + min(n - 1, exact + math.floor(math.log(dist / exact) / math.log(big_d / exact) * (n - exact)))


RECOMPUTE = {"positional.alibi_bias": alibi_bias, "positional.rope_relative_score": rope_score,
             "positional.t5_bias_params": t5_bias_params, "positional.t5_bucket": t5_bucket}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """r = 11 among 32 bidirectional buckets (D = 128): n = 16, δ = 11 ≥ 8, 8 + ⌊ln(11/8)/ln(16)·8⌋ = 8, plus
    the offset 16: bucket 24. ALiBi with H = 24, head 17 takes 2^(-8/32); for i - j = 4 the bias is -4·2^(-1/4)."""
    head = ("T5 maps the relative position r = j - i (key j, query i) to one of n_b = 32 buckets, bidirectional (the "
            "encoder): half of the buckets for keys at or before the query, half (offset by n_b/2) for keys after it. "
            "... with max distance D = 128.\n\n")
    assert t5_bucket(head + "Which bucket does r = 11 fall in?") == 24
    assert re.search("offset", head)
    alibi = ("ALiBi adds -mₕ (i - j) to the attention score of query i and key j ≤ i in head h. A model has H = 24 "
             "heads; the slopes follow the ALiBi paper: for H a power of two, mₕ = 2^(-8h/H), h = 1, …, H. For H not a "
             "power of two the paper's rule is: with p = 16 the largest power of two below H, heads h = 1, …, 16 take "
             "the slopes 2^(-8h/16) of 16 heads, and the other 8 heads take every other slope of 2p = 32 heads.\n\n"
             "What bias does head h = 17 add for query position i = 11 and key position j = 7?")
    assert math.isclose(alibi_bias(alibi), -4 * 2 ** -0.25)


#: fid -> misconception id -> the value its label names, from the text
MISTAKES = {
    "positional.alibi_bias": {"positive_sign": lambda t: -alibi_bias(t)},
    "positional.rope_relative_score": {
        "no_rotation": lambda t: sum(a * b for a, b in zip(vector("q", t), vector("k", t), strict=True)),
        # rotated by (n - m)θ: the score with the two positions exchanged
        "reversed_offset": lambda t: rope_score(re.sub(r"position m = (\d+)(.*)position n = (\d+)",
                                                       lambda m: f"position m = {m[3]}{m[2]}position n = {m[1]}", t,
                                                       flags=re.S)),
    },
    "positional.t5_bias_params": {
        "per_layer": lambda t: t5_bias_params(t) * find(r"L = (\d+) layers in each stack", t, int),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "positional_relative", mistakes=MISTAKES))


def test_t5_buckets_agree_with_transformers():
    """The keys of positional.t5_bucket against transformers' own T5Attention._relative_position_bucket, run
    on the n_b, D, direction and r the text prints (skipped where transformers is not installed)."""
    torch = pytest.importorskip("torch")
    t5 = pytest.importorskip("transformers.models.t5.modeling_t5")
    wrong = []
    for p in (FAMILIES["positional.t5_bucket"].generate(s, lv) for lv in FAMILIES["positional.t5_bucket"].levels
              for s in SEEDS):
        text = p.statement_text
        r = torch.tensor([find(r"Which bucket does r = (-?\d+) fall in", text, int)])
        got = t5.T5Attention._relative_position_bucket(r, bidirectional="bidirectional" in text,
                                                       num_buckets=find(r"n_b = (\d+) buckets", text, int),
                                                       max_distance=find(r"max distance D = (\d+)", text, int))
        if int(got) != p.key.value:
            wrong.append(f"{p.id}: transformers gives {int(got)}, key {p.key.value}\n    statement: {text!r}")
    assert not wrong, "\n".join(wrong)


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
