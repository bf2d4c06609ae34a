"""The keys of ``attention.variance_qk``, ``attention.why_sqrt_dk``, ``softmax.temperature`` and its MCQ
view, recomputed from the text a student reads.

``attention.variance_qk``: the width d (ℝᵈ, in superscript digits), the component variances (1, or
σ_q², σₖ² as printed, fractions included) and, when the text describes the √d_model bug, d_model are
parsed; for independent zero-mean components Var(q·k) = d·σ_q²·σₖ², divided by d_model for the bug's
scores; the standard deviation is its square root. ``softmax.temperature``: z, T and the token asked
(1-based, its logit printed beside it and checked) are parsed and torch's softmax(z/T) gives the
probability. ``attention.why_sqrt_dk``: each option is one of thirteen claims with interchangeable words
(scores/values, blow up/die out, dₖ/√dₖ/one, ...); this file states which words make each claim true, from
Var(qᵢkᵢ) = 1, Var(q·k) = dₖ, sd √dₖ, and a saturated (peaked) softmax whose gradients vanish.

The named mistakes (temperature ignored or multiplied, the factor d forgotten) are recomputed from the text
too, and in the MCQ view point to the option that prints their value.
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
    number,
    vector,
)

SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def variance_qk(text: str) -> float:
    d = int(find(r"in ℝ([⁰¹²³⁴⁵⁶⁷⁸⁹]+) ", text, str).translate(SUPER))
    if "mean 0" not in text or "independent" not in text:
        raise Unreadable("the components are not said to be independent with mean 0")
    if re.search(r"mean 0 and variance 1\b", text):
        vq = vk = 1.0
    else:
        vq, vk = find(r"σ_q² = ([\d/.]+) for q", text), find(r"σₖ² = ([\d/.]+) for k", text)
    var = d * vq * vk
    if "divides its attention scores by √d_model" in text:
        var /= find(r"d_model = (\d+)", text, int)
        if "variance of its scores q · k/√d_model" not in text:
            raise Unreadable("the bug's question is not the variance of its scores")
        return var
    if "standard deviation of q · k" in text:
        return var**0.5
    if "variance of the dot product q · k" in text:
        return var
    raise Unreadable("neither the variance nor the standard deviation is asked")


def temperature_probability(text: str) -> float:
    z = vector("z", text)
    t = find(r"temperature T = ([\d./]+)", text)
    if "pᵢ = e^(zᵢ/T) / Σⱼ e^(zⱼ/T)" not in text:
        raise Unreadable("the softmax with temperature is not stated")
    m = re.search(r"probability of token (\d+) \(logit (-?[\d.]+)\)", text)
    if m is None or len(z) < int(m[1]) or z[int(m[1]) - 1] != number(m[2]):
        raise Unreadable("the token asked and its logit do not agree with z (tokens counted from 1)")
    return float(torch.softmax(torch.tensor(z, dtype=torch.float64) / t, dim=0)[int(m[1]) - 1])


#: (claim with its interchangeable words as groups, the words that make it true)
SQRT_DK_CLAIMS = [
    (r"So that the (scores|values) do not (blow up|die out) as the head width dₖ grows and push the softmax into "
     r"saturation", ("scores", "blow up")),
    (r"So that the scores do not grow with (extra|wider) keys and saturate the softmax, whose gradients would then "
     r"(blow up|die out)", ("wider", "die out")),
    (r"Because dividing by dₖ instead would make the scores (blow up|die out) as dₖ grows and the softmax "
     r"(nearly uniform|sharply peaked)", ("die out", "nearly uniform")),
    (r"Because dividing each score by √dₖ divides its standard deviation by (√dₖ|dₖ),? and its variance by (√dₖ|dₖ),? "
     r"and keeps the softmax out of saturation", ("√dₖ", "dₖ")),
    (r"Because each one of the dₖ products qᵢ kᵢ has variance (one|dₖ),? and the raw score, their sum, has variance "
     r"(one|dₖ),? and saturates the softmax", ("one", "dₖ")),
    (r"Because the products qᵢ kᵢ (even out|stack up) in the (mean|size) of each score, keeping it at zero, while "
     r"their variances sum to dₖ, enough to saturate the softmax", ("even out", "mean")),
    (r"Because the variances of the dₖ products (even out|stack up), making the variance of each score grow like "
     r"(√dₖ|dₖ),? and the softmax saturate", ("stack up", "dₖ")),
    (r"Because without it a large dₖ makes the softmax (nearly uniform|sharply peaked), so that its gradients "
     r"(blow up|die out)", ("sharply peaked", "die out")),
    (r"Because without it a score sums dₖ products qᵢ kᵢ of variance (one|dₖ),? and so has standard deviation "
     r"(one|√dₖ), which makes the softmax nearly one-hot", ("one", "√dₖ")),
    (r"Because without it each score has variance (one|dₖ),? and the softmax is nearly one-hot, while dividing by √dₖ "
     r"brings that variance to (one|√dₖ)", ("dₖ", "one")),
    (r"Because without it the (mean|size) of each score grows like (√dₖ|dₖ),? and the softmax saturates",
     ("size", "√dₖ")),
    (r"Because without it the softmax weights that average the (scores|values) come from dot products that "
     r"(blow up|die out) as dₖ grows", ("values", "blow up")),
    (r"Because adding (extra|wider) keys to a query's softmax leaves each of its scores as it is, but a large dₖ "
     r"makes them (blow up|die out)", ("extra", "blow up")),
]


def sqrt_dk_truth(option: str) -> bool:
    for pattern, true_words in SQRT_DK_CLAIMS:
        if m := re.fullmatch(pattern, option.strip()):
            return m.groups() == true_words
    raise Unreadable(f"a claim this audit cannot read: {option!r}")


@shown
def why_sqrt_dk(p) -> set[int]:
    """The claims the text makes true."""
    if "independent, standardised random variables" not in p.statement_text:
        raise Unreadable("the stem does not standardise q and k")
    return true_options(p, sqrt_dk_truth)


RECOMPUTE = {
    "attention.variance_qk": variance_qk,
    "attention.why_sqrt_dk": why_sqrt_dk,
    "softmax.temperature": temperature_probability,
}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """d = 16, σ_q² = σₖ² = 2: Var(q·k) = 16·2·2 = 64, sd 8; z = [1, -1, 3] at T = 2: e^-0.5/(e^0.5+e^-0.5+e^1.5)."""
    assert variance_qk("The components of a query q and a key k in ℝ¹⁶ are independent random variables with mean 0 "
                       "(variance σ_q² = 2 for q, σₖ² = 2 for k). What is the standard deviation of q · k?") == 8.0
    p = temperature_probability("A language model outputs the logits z = [1, -1, 3] over a vocabulary of 3 tokens. "
                                "Sampling uses softmax with temperature T = 2: pᵢ = e^(zᵢ/T) / Σⱼ e^(zⱼ/T). What is "
                                "the probability of token 2 (logit -1)?")
    assert round(p, 4) == 0.0900


def _temperature_at(text: str, t_of) -> float:
    """The probability asked with the temperature T replaced by ``t_of(T)``."""
    t = find(r"temperature T = ([\d./]+):", text)
    z = torch.tensor(vector("z", text), dtype=torch.float64)
    i = find(r"probability of token (\d+) \(logit", text, int)
    return float(torch.softmax(z / t_of(t), dim=0)[i - 1])


#: fid -> misconception id -> the value its label names, from the text
MISTAKES = {
    "softmax.temperature": {
        "ignored_temperature": lambda t: _temperature_at(t, lambda T: 1.0),
        "multiplied_by_t": lambda t: _temperature_at(t, lambda T: 1 / T),
    },
    "attention.variance_qk": {
        # the same question for components in ℝ¹: no factor d
        "no_dk": lambda t: variance_qk(re.sub(r"ℝ[⁰¹²³⁴⁵⁶⁷⁸⁹]+ ", "ℝ¹ ", t)) if "√d_model" not in t else None,
    },
}
MISTAKES["softmax.temperature_mcq"] = MISTAKES["softmax.temperature"]  # the MCQ view: the option each mistake leads to


globals().update(key_tests(RECOMPUTE, FIDS, "scaling", mistakes=MISTAKES))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
