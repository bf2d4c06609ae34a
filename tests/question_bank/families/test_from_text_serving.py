"""The keys of question_bank/families/serving.py recomputed from the text a student reads.

``scaling.compute_optimal``, ``serving.max_batch`` and ``serving.speculative_tokens`` (and their MCQ
views): the numbers are parsed out of ``statement_text`` only and the answer computed here from what the
statement states (C = 6ND; D = 20N; the fitted loss and its constants as printed; bf16 = 2 bytes for
weights and cache; GB = 10⁹ and MiB = 2²⁰ bytes as the statement says; independent acceptances). The
Chinchilla optimum is found numerically (bisection on the sign of dL/dN, not the closed form), and the
expected tokens per speculative step by summing over the outcomes of the γ drafts. The key must accept
the value rounded as asked (MCQ: the keyed option, and only it, prints it). Nothing is read from
``given``, the solution or the solver.

Run as a script to sweep 300 seeds per level (0..299 and 70,000..70,299) and print every disagreement.
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import pytest

import question_bank.families  # noqa: F401  (registers the families)
from question_bank.family import FAMILIES
from tests.question_bank.families.from_text import (
    field,
    frac,
    search,
)
from tests.question_bank.families.from_text_audit import (
    SEEDS,
    Unreadable,
    key_tests,
    sweep_main,
    with_views,
)

_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


# ---------------------------------------------------------------- scaling.compute_optimal
def _budget(t: str) -> float:
    m = search(t, r"C = ([\d.]+) × 10([⁰¹²³⁴⁵⁶⁷⁸⁹]+) FLOPs, with C = 6ND", "the budget and C = 6ND")
    return float(m[1]) * 10 ** int(m[2].translate(_SUP))


def _unit(t: str) -> float:
    """The count one unit of the answer stands for, as the statement asks it ("Give it in billions" or trillions)."""
    return {"billions": 1e9, "trillions": 1e12}[search(t, r"Give it in (billions|trillions)", "the unit asked")[1]]


def _bisect_log(g, lo: float, hi: float) -> float:
    """The root of g(e^x) on [lo, hi] by bisection (g rises through 0 once there)."""
    assert g(math.exp(lo)) < 0 < g(math.exp(hi))
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if g(math.exp(mid)) < 0 else (lo, mid)
    return math.exp((lo + hi) / 2)


def compute_optimal(t: str) -> float:
    C = _budget(t)
    if "rule of thumb that compute-optimal training uses D = 20N tokens" in t:
        assert "what is the compute-optimal N? Give it in" in t
        return math.sqrt(C / (6 * 20)) / _unit(t)  # C = 6 N (20 N)
    if "L(N, D) = E + A/N^α + B/D^β" in t:
        E, A, B = (float(field(t, k)) for k in ("E", "A", "B"))
        a, b = float(field(t, "α")), float(field(t, "β"))

        def slope(N):
            """The sign of dL/dN with D = C/(6N), as log(B-term pull) - log(A-term pull)."""
            # dL/dN = -αA N^(-α-1) + βB (6/C)^β N^(β-1); compare the two terms in logs
            return math.log(b * B) + b * math.log(6 * N / C) - (math.log(a * A) - a * math.log(N))

        N = _bisect_log(slope, math.log(1.0), math.log(C / 6))  # D ≥ 1 token, N ≥ 1 parameter
        if "Which N minimises L for this budget? Give it in" in t:
            return N / _unit(t)
        if "How many training tokens D does the model that minimises L for this budget see? Give it in" in t:
            return C / (6 * N) / _unit(t)
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- serving.max_batch
def max_batch(t: str) -> Fr:
    m = search(t, r"\(N = ([\d.]+) billion parameters, (\d+) layers, (\d+) K/V heads of size (\d+)\) is served in "
                  r"bf16 on (\d+) GPUs?, each (?:with ([\d,]+) GB \(10⁹ bytes\) of HBM as the datasheet prints it"
                  r"|reporting ([\d,]+) MiB \(2²⁰ bytes\) of HBM in nvidia-smi)", "the model, the GPUs and the memory")
    N, layers, kv, hd, gpus = frac(m[1]) * 10**9, int(m[2]), int(m[3]), int(m[4]), int(m[5])
    per_gpu = int(m[6].replace(",", "")) * 10**9 if m[6] else int(m[7].replace(",", "")) * 2**20
    assert "nothing else uses memory" in t
    seq = int(search(t, r"How many sequences of (\d+) tokens each can be held at once", "the sequence length")[1])
    bf16 = 2
    free = gpus * per_gpu - N * bf16
    per_seq = 2 * layers * kv * hd * bf16 * seq  # K and V of every layer
    if free < 0:
        raise Unreadable("the weights do not fit")
    return Fr(math.floor(free / per_seq))


# ---------------------------------------------------------------- serving.speculative_tokens
def speculative_tokens(t: str) -> Fr:
    g, a = int(field(t, "γ")), frac(field(t, "α"))
    assert "stops at the first rejection, and always adds one token of its own" in t
    # the first k drafts accepted and the (k+1)-th rejected (k < γ), or all γ accepted: k + 1 tokens
    expected = sum(a**k * (1 - a) * (k + 1) for k in range(g)) + a**g * (g + 1)
    if "expected number of tokens produced per target-model step" in t:
        return expected
    if m := search(t, r"A draft step costs c = ([\d.]+) of a target step\. What is the expected wall-time speed-up "
                      r"over plain decoding", "the draft cost"):
        c = frac(m[1])
        return expected / (g * c + 1)  # one target step gives 1 token in plain decoding
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- the misconceptions, from the text
def compute_optimal_wrong(t: str) -> dict:
    C = _budget(t)
    if "rule of thumb" in t:
        return {"c_2nd": math.sqrt(C / 40) / _unit(t), "no_square_root": C / 120 / _unit(t)}
    rule = math.sqrt(C / 120)
    if "Which N minimises L" in t:
        return {"rule_for_fit": rule / _unit(t)}
    return {"rule_for_fit": 20 * rule / _unit(t), "gave_params": compute_optimal(t.replace(
        "How many training tokens D does the model that minimises L for this budget see?", "Which N minimises L for this budget?"))}


def max_batch_wrong(t: str) -> dict:
    m = search(t, r"\(N = ([\d.]+) billion parameters, (\d+) layers, (\d+) K/V heads of size (\d+)\) is served in "
                  r"bf16 on (\d+) GPUs?, each (?:with ([\d,]+) GB|reporting ([\d,]+) MiB)", "the model")
    N, layers, kv, hd, gpus = frac(m[1]) * 10**9, int(m[2]), int(m[3]), int(m[4]), int(m[5])
    seq = int(search(t, r"How many sequences of (\d+) tokens", "the length")[1])
    per_seq = 2 * layers * kv * hd * 2 * seq
    total = gpus * (int(m[6].replace(",", "")) * 10**9 if m[6] else int(m[7].replace(",", "")) * 2**20)
    out = {"only_k": Fr(math.floor((total - 2 * N) / (per_seq / 2))), "forgot_weights": Fr(math.floor(total / per_seq))}
    if m[6]:
        out["gb_for_gib"] = Fr(math.floor((gpus * int(m[6].replace(",", "")) * 2**30 - 2 * N) / per_seq))
    else:
        out["mib_as_mb"] = Fr(math.floor((gpus * int(m[7].replace(",", "")) * 10**6 - 2 * N) / per_seq))
    return out


def speculative_tokens_wrong(t: str) -> dict:
    g, a = int(field(t, "γ")), frac(field(t, "α"))
    right = sum(a**k * (1 - a) * (k + 1) for k in range(g)) + a**g * (g + 1)
    wrong = {"all_accepted": Fr(g + 1), "forgot_bonus": right - 1, "gamma_exponent": (1 - a**g) / (1 - a)}
    if "A draft step costs" in t:
        c = frac(search(t, r"costs c = ([\d.]+)", "c")[1])
        wrong = {k: v / (g * c + 1) for k, v in wrong.items()} | {"forgot_draft_cost": right}
    return wrong


ANSWERS = {
    "scaling.compute_optimal": compute_optimal,
    "serving.max_batch": max_batch,
    "serving.speculative_tokens": speculative_tokens,
}
WRONG = {
    "scaling.compute_optimal": compute_optimal_wrong,
    "serving.max_batch": max_batch_wrong,
    "serving.speculative_tokens": speculative_tokens_wrong,
}
FIDS = with_views(ANSWERS)


globals().update(key_tests(ANSWERS, FIDS, "serving", mistakes=WRONG))


#: models with a sliding window of 4096 positions (config.json: "sliding_window": 4096; Gemma 2 on every other
#: layer, Gemma Team 2024, arXiv 2408.00118, Table 1): a longer sequence's cache is not the full one the text counts
WINDOW = {"Mistral-7B": 4096, "Gemma-2-9B": 4096}


@pytest.mark.parametrize("level", FAMILIES["serving.max_batch"].levels)
def test_max_batch_sequences_fit_the_named_models_window(level):
    """Every layer caches the whole sequence (as the statement's count has it) only up to the model's window: a
    statement naming Mistral-7B or Gemma-2-9B asks for at most 4096 tokens. (Found by this audit: Gemma-2-9B was
    asked up to 16k tokens, where its 21 sliding-window layers keep 4096.)"""
    bad = []
    for s in (*SEEDS, *range(100, 400)):
        t = FAMILIES["serving.max_batch"].generate(s, level).statement_text
        name = t.split(" (N = ")[0]
        n = int(search(t, r"How many sequences of (\d+) tokens", "the length")[1])
        if n > WINDOW.get(name, n):
            bad.append(f"serving.max_batch/{level}/{s}: {name}, {n} tokens")
    assert not bad, f"{len(bad)} draws ask beyond the window, e.g. {bad[:3]}"


if __name__ == "__main__":
    raise SystemExit(sweep_main(ANSWERS, FIDS, WRONG))
