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

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    shown,
    sweep_main,
    true_options,
    with_views,
)
from tests.question_bank.families.from_text_kernels import (
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


@shown
def shape_options(p) -> set[int]:
    """The options that print the shape the text asks for."""
    want = shape_asked(p.statement_text)
    return true_options(p, lambda o: o.strip() == want)


RECOMPUTE = {"attention.heads": heads_count, "attention.shapes": shape_options}


def test_pinned():
    """d_model = 1280 over h = 16 heads gives dₖ = 80; Q 40×45 against K 21×45 gives 40×21 weights."""
    assert heads_count("A Transformer layer has d_model = 1280 and h = 16 attention heads. What is the dimension dₖ "
                       "of the queries and keys of each head?") == 80
    assert shape_asked("In cross-attention, Q is 40 × 45, K is 21 × 45 and V is 21 × 26. What is the shape of the "
                       "attention weights softmax(QKᵀ/√dₖ)?") == "40 × 21"


globals().update(key_tests(RECOMPUTE, with_views(RECOMPUTE), "heads"))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, with_views(RECOMPUTE)))
