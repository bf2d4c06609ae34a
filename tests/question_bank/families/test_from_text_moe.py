"""The mixture-of-experts keys (question_bank/families/moe.py), recomputed from the text.

The sizes are parsed from the plain statement with regular expressions; the text's own figures are first
checked against each other (a routed expert is three d × width matrices, no biases; the routed experts
are E of them in each MoE layer; the input embedding is V × d), then:

* the model's total: the parameters outside the routed experts plus E experts in each MoE layer;
* the active parameters: everything outside the routed experts (embeddings, head, shared experts,
  dense FFNs, routers) plus k of the E routed experts, i.e. k/E of the routed parameters;
* the expected weight bytes of a decode step: everything outside the routed experts except the input
  embedding, B rows of the embedding (a lookup), and each routed expert with the probability that at
  least one of the B tokens picked it; a token picks k of E uniformly, so it misses a given expert with
  probability C(E−1, k)/C(E, k) (``math.comb``), and all B miss it with that to the B-th power.

Exact arithmetic (``fractions``) until the unit (billions, GB = 10⁹ bytes, GiB = 2³⁰ bytes). The key
must accept the value rounded as asked (MCQ: the keyed option is the one option printing it). Nothing
here reads ``given`` or imports the solver. ``python -m tests.question_bank.families.test_from_text_moe``
sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import math
from fractions import Fraction

from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    has,
    number_in,
)


def experts(text: str) -> tuple[int, int, int]:
    """(E, k, parameters of one routed expert) as the text describes the expert: three d × width matrices."""
    E, k = number_in(r"E = (\d+) routed SwiGLU experts", text), number_in(r"uses the top k = (\d+)", text)
    width, d = number_in(r"experts of width (\d+)", text), number_in(r"matrices, d = (\d+)\)", text)
    assert has(rf"three d × {width} matrices", text)
    return E, k, 3 * d * width


def moe_layers(text: str) -> int:
    L = number_in(r"has L = (\d+) layers", text)
    dense = number_in(r"the first (\d+) layers? keeps? one dense FFN", text) if "dense FFN" in text else 0
    return L - dense


def active_params(text: str, p=None, *, held_experts: str = "E", active_share: str = "k/E") -> float:
    """``held_experts``: 'E' (the statement's) or 'k' (a slip's: only the active ones held);
    ``active_share``: 'k/E' (the statement's) or '1' (a slip's: every expert active)."""
    E, k, one = experts(text)
    if "How many parameters does the model hold in all?" in text:
        outside = number_in(r"Outside the routed experts it has ([\d,]+) parameters", text)
        stated_one = number_in(r"one routed expert of one layer has ([\d,]+)", text)
        M = number_in(r"and (\d+) layers are MoE layers", text)
        assert stated_one == one and M == moe_layers(text), (stated_one, one, M)
        return float(Fraction(outside + (E if held_experts == "E" else k) * M * one, 10**9))
    assert "How many parameters does one token use" in text and "embeddings and head counted whole" in text
    N, routed = number_in(r"holds N = ([\d,]+) parameters", text), number_in(r"the routed experts hold ([\d,]+)", text)
    assert routed == E * moe_layers(text) * one, (routed, E, moe_layers(text), one)
    share = Fraction(k, E) if active_share == "k/E" else 1
    return float(Fraction(N - routed, 10**9) + routed * share / 10**9)


def decode_bytes(text: str, p=None, *, experts_read: str = "expected", embedding: str = "rows",
                 swapped: bool = False) -> float:
    """``experts_read``: 'expected' (the statement's), 'all' or 'k' (slips: every expert, one token's k);
    ``embedding``: 'rows' (the statement's lookup) or 'whole' (a slip's: the whole table read)."""
    E, k, one = experts(text)
    N, routed = number_in(r"has N = ([\d,]+) parameters", text), number_in(r"the routed experts hold ([\d,]+)", text)
    M = number_in(r"spread evenly over (\d+) MoE layers", text)
    assert M == moe_layers(text) and routed == M * E * one
    V, d, emb = number_in(r"a table of V = ([\d,]+) rows", text), number_in(r"rows of d = (\d+) values", text), \
        number_in(r"values, ([\d,]+) parameters, separate from the LM head", text)
    assert emb == V * d
    B, per_param = number_in(r"batch of B = (\d+) tokens", text), number_in(r"in bf16 \((\d+) bytes per parameter\)", text)
    assert has(rf"picks its {k} experts? uniformly at random, independently of the other tokens", text)
    miss_one = Fraction(math.comb(E - 1, k), math.comb(E, k))
    share = {"expected": 1 - miss_one**B, "all": 1, "k": Fraction(k, E)}[experts_read]
    expected_params = (N - routed - emb) + (B * d if embedding == "rows" else emb) + routed * share
    if "GiB (1 GiB = 2³⁰ bytes)" in text:
        u = 10**9 if swapped else 2**30
    else:
        assert "GB (1 GB = 10⁹ bytes)" in text
        u = 2**30 if swapped else 10**9
    return float(expected_params * per_param / u)


RECOMPUTE = {"moe.active_params": active_params, "moe.decode_weight_bytes": decode_bytes}
FIDS = with_views(RECOMPUTE)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "moe.active_params": {
        "only_active_held": lambda t: active_params(t, held_experts="k"),
        "every_expert_active": lambda t: active_params(t, active_share="1"),
    },
    "moe.decode_weight_bytes": {
        "every_expert_read": lambda t: decode_bytes(t, experts_read="all"),
        "only_k_read": lambda t: decode_bytes(t, experts_read="k"),
        "whole_embedding_read": lambda t: decode_bytes(t, embedding="whole"),
        "gb_for_gib": lambda t: decode_bytes(t, swapped=True),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "moe", mistakes=SLIPS))





if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
