"""The keys of ``attention.heads`` and ``attention.shapes``, recomputed from the text a student reads.

``attention.heads``: d_model, h and n are parsed from ``statement_text``; the question's words pick the
count (dₖ = d_model/h; the score-matrix entries of one layer, h·n² for h heads of n×n scores; the weights
of one head's query projection Wᵢ^Q, d_model × d_model/h). ``attention.shapes``: the shapes of Q, K, V are
parsed, and the shape asked is found by running the product on torch's meta device (no data, only
shapes); the keyed option must be the one that prints that shape.
"""

from __future__ import annotations

import re

import torch
from hypothesis import given
from hypothesis import strategies as st

from question_bank.family import FAMILIES
from tests.question_bank.families.from_text_kernels import (
    Unreadable,
    audit_all,
    audit_catches_wrong_keys,
    audit_one,
    check_int,
    check_truths,
    find,
)


def heads_count(text: str) -> int:
    d, h = find(r"d_model = (\d+)", text, int), find(r"\bh = (\d+)", text, int)
    if d % h:
        raise Unreadable(f"d_model = {d} is not a multiple of h = {h}")
    if "dimension dₖ of the queries and keys of each head" in text:
        return d // h
    if "attention weights (entries of the score matrices)" in text and "one layer" in text and "one sequence" in text:
        n = find(r"\bn = (\d+) tokens", text, int)
        return h * n * n
    if "query projection matrix Wᵢ^Q of one head" in text and "no bias" in text:
        return d * (d // h)
    raise Unreadable("a question this audit cannot read")


def audit_heads(p) -> list[str]:
    return check_int(p, heads_count(p.statement_text))


def shape_asked(text: str) -> str:
    dims = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"\b([QKV]) is (\d+) × (\d+)", text)}
    if set(dims) != {"Q", "K", "V"}:
        raise Unreadable("the shapes of Q, K and V are not all given")
    q, k, v = (torch.empty(dims[x], device="meta") for x in "QKV")
    scores = q @ k.T
    weights = torch.softmax(scores / dims["K"][1] ** 0.5, dim=-1)
    asked = {"shape of QKᵀ?": scores, "shape of the attention weights": weights, "shape of the output": weights @ v}
    hit = [t for phrase, t in asked.items() if phrase in text]
    if len(hit) != 1:
        raise Unreadable("no shape asked")
    return "{} × {}".format(*hit[0].shape)


def audit_shapes(p) -> list[str]:
    want = shape_asked(p.statement_text)
    return check_truths(p, lambda o: o.strip() == want)


AUDITS = {"attention.heads": audit_heads, "attention.shapes": audit_shapes}
CASES = [(fid, lv) for fid in AUDITS for lv in FAMILIES[fid].levels]
BLOCK = range(40)


def test_pinned():
    """d_model = 1280 over h = 16 heads gives dₖ = 80; Q 40×45 against K 21×45 gives 40×21 weights."""
    assert heads_count("A Transformer layer has d_model = 1280 and h = 16 attention heads. What is the dimension dₖ "
                       "of the queries and keys of each head?") == 80
    assert shape_asked("In cross-attention, Q is 40 × 45, K is 21 × 45 and V is 21 × 26. What is the shape of the "
                       "attention weights softmax(QKᵀ/√dₖ)?") == "40 × 21"


def test_every_key_agrees_with_the_text():
    problems = [line for fid, audit in AUDITS.items() for line in audit_all(fid, audit, BLOCK)]
    assert not problems, "\n".join(problems[:10])


@given(st.integers(0, 10**6), st.sampled_from(CASES))
def test_drawn_keys_agree_with_the_text(seed, case):
    fid, lv = case
    problems = audit_one(FAMILIES[fid].generate(seed, lv), AUDITS[fid])
    assert not problems, "\n".join(problems)


def test_the_audit_catches_a_wrong_key():
    """Each key moved past its tolerance (the keyed option moved, for a choice item) is reported."""
    assert audit_catches_wrong_keys(AUDITS) == []
