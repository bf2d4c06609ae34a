"""Softmax with a temperature, the variance of q·k, and why attention divides by √dₖ.

Facts used (stated here so that keys are derived, never typed):

- softmax with temperature T: pᵢ = exp(zᵢ/T) / Σⱼ exp(zⱼ/T) (``solver.kernels.sympy_ref.softmax``);
- for q, k with independent components of mean 0 and variances σ_q², σ_k²:
  Var(qᵢkᵢ) = E[qᵢ²]E[kᵢ²] = σ_q²σ_k², so Var(q·k) = dₖ·σ_q²σ_k² (a sum of dₖ independent
  terms) and Var(q·k/√dₖ) = σ_q²σ_k²: dividing by √dₖ removes the growth with dₖ.
"""

from __future__ import annotations

import math
from fractions import Fraction

from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, nat_key, safe_for_rounding
from question_bank.problem import ChoiceKey, Problem
from question_bank.render import Doc, frac_text, latex_to_text, num


@family(
    "softmax.temperature",
    topic="attention",
    title="Softmax with a temperature",
    types=("nat",),
    tags=("softmax", "temperature", "sampling"),
    source="003_f22b31e216cc5b5a.txt, 004_83489721195aedaa.txt (softmax, sampling temperature)",
)
def softmax_temperature(d: Draw) -> Problem:
    """The probability of one token under softmax(z/T) for small integer logits."""
    from question_bank.quality import blind_guess_accepted
    from solver.kernels import sympy_ref

    decimals = 3 if d.level == 2 else 2
    n = 3 if d.level == 0 else 4
    temps = (Fraction(1, 2), Fraction(2)) if d.level < 2 else (Fraction(1, 2), Fraction(2), Fraction(5), Fraction(1, 4))
    for _ in range(300):
        z = [d.rng.randint(-1, 3) for _ in range(n)]
        if len(set(z)) < 3:
            continue
        t = d.pick(temps)
        i = d.rng.randrange(n)
        out, tr = sympy_ref.softmax(z, temperature=str(t), return_trace=True)
        p = sympy_ref.to_floats(out)[0]
        value = p[i]
        key = nat_key(value, decimals)
        if not safe_for_rounding(value, decimals, 0.15):
            continue
        # issue 12: a key that rounds to 0 (or equals a number of the statement) is won by typing it
        if blind_guess_accepted(key, [*z, float(t), n, i + 1, decimals]):
            continue
        tf = float(t)
        exps = [math.exp(x / tf) for x in z]
        wrongs = [
            Wrong("multiplied_by_t", "multiplied by T instead of dividing",
                  f"This is softmax(z·T); the logits are divided by T = {frac_text(t)}.",
                  math.exp(z[i] * tf) / sum(math.exp(x * tf) for x in z)),
            Wrong("ignored_temperature", "ignored the temperature", "This is the softmax at T = 1.",
                  math.exp(z[i]) / sum(math.exp(x) for x in z)),
            Wrong("divided_logits_not_exp", "divided the probabilities by T",
                  "You took softmax(z) and then divided by T; the temperature divides the logits inside the exponential.",
                  math.exp(z[i]) / sum(math.exp(x) for x in z) / tf),
            Wrong("linear_normalisation", "normalised z/T linearly",
                  "You divided zᵢ/T by Σ zⱼ/T without exponentiating.",
                  (z[i] / sum(z)) if sum(z) else None),
        ]
        wrongs = [w for w in wrongs if w.value is not None and exps]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2:
            break
    zs = ", ".join(str(x) for x in z)
    st = Doc()
    st.p(f"A language model outputs the logits $z = [{zs}]$ over a vocabulary of {n} tokens. "
         f"Sampling uses softmax with temperature $T = {frac_text(t)}$: $p_i = e^{{z_i/T}} / \\sum_j e^{{z_j/T}}$.")
    st.p(f"What is the probability of token {i + 1} (logit {z[i]})? Round off to {decimals} decimal places.")
    scaled = [x / tf for x in z]
    mx = max(scaled)
    e = [math.exp(s - mx) for s in scaled]
    sol = Doc()
    sol.p(f"Divide the logits by $T = {frac_text(t)}$: $z/T = [{', '.join(num(s, 4) for s in scaled)}]$.")
    sol.p(f"Subtract the maximum ({num(mx, 4)}) and exponentiate: $[{', '.join(num(x, 4) for x in e)}]$, "
          f"sum $= {num(sum(e), 4)}$.")
    sol.p(f"$p_{{{i + 1}}} = {num(e[i], 4)} / {num(sum(e), 4)} = {num(value, 6)} \\approx$ **{answer_text(key)}**.")
    sol.p("A temperature below 1 sharpens the distribution (the largest logit gains), above 1 flattens it.")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"logits": z, "temperature": str(t), "index": i, "trace": tr.names()},
                     hints=["Divide every logit by T first, then take the ordinary softmax."])


@family(
    "attention.variance_qk",
    topic="attention",
    title="The variance of q·k and the √dₖ scaling",
    types=("nat",),
    tags=("sqrt-dk", "variance", "score-scaling"),
    source="004_83489721195aedaa.txt GATE Q4, §derivations",
)
def variance_qk(d: Draw) -> Problem:
    """Var(q·k) = dₖσ_q²σ_k² for independent zero-mean components; after the 1/√dₖ scaling
    it is σ_q²σ_k²; the standard deviation is the square root."""
    # Levels (issue 12: disjoint, ordered; issue 22: no level above easy is one operation on the printed
    # numbers, and each holds well over 50 problems in 1,000 draws): easy, unit variances and the standard
    # deviation √dₖ (one step on purpose; dₖ printed only as the exponent of ℝ^dₖ was the key of the
    # variance in half the draws); medium, other variances, Var or std of q·k (dₖσ_q²σ_k², a product of
    # three); hard, a model that divides by √d_model instead of √dₖ (d_model = H·dₖ): the variance of its
    # scores, dₖσ_q²σ_k²/d_model (it was σ_q²σ_k², the product of the two printed variances).
    decimals = 3 if d.level == 2 else 2
    while True:
        d_k = d.pick(range(16, 1025, 8)) if d.level < 2 else d.pick((32, 48, 64, 80, 96, 128, 160, 256))
        var_q = d.pick((Fraction(1),) if d.level == 0 else (Fraction(1), Fraction(2), Fraction(1, 2), Fraction(4), Fraction(3)))
        var_k = d.pick((Fraction(1),) if d.level == 0 else (Fraction(1), Fraction(2), Fraction(4), Fraction(3), Fraction(1, 4)))
        ask = d.pick((("std",), ("variance", "std"), ("bug_scale",))[d.level])
        heads = d.pick((4, 8, 12, 16, 32)) if d.level == 2 else 1
        d_model = heads * d_k
        if d.level > 0 and (var_q * var_k == 1 or 1 in (var_q, var_k)):
            continue  # a unit variance would make the key one product of two printed numbers
        prod = var_q * var_k
        var = d_k * prod
        if ask == "variance":
            value, what = float(var), r"the variance of the dot product $q \cdot k$"
        elif ask == "std":
            value, what = math.sqrt(var), r"the standard deviation of $q \cdot k$"
        else:
            value, what = float(var / d_model), r"the variance of its scores $q \cdot k/\sqrt{d_{model}}$"
        # √2048 = 45.2548: too near 45.255 for a hand computation; draw again
        if safe_for_rounding(value, decimals, 0.1) and value >= 0.05:
            break
    key = nat_key(value, decimals)
    wrongs = [
        Wrong("std_for_variance", "gave the standard deviation for the variance (or the reverse)",
              "You mixed up variance and standard deviation (one is the square of the other).",
              math.sqrt(value) if ask != "std" else float(var)),
        Wrong("sum_not_product", "added the variances of q and k instead of multiplying",
              "Var(qᵢkᵢ) = E[qᵢ²]·E[kᵢ²] = σ_q²·σ_k², a product, not a sum.",
              {"variance": float(d_k * (var_q + var_k)), "std": math.sqrt(d_k * (var_q + var_k)),
               "bug_scale": float(d_k * (var_q + var_k) / d_model)}[ask]),
        Wrong("divided_by_dk", "scaled the variance by 1/√d_model instead of 1/d_model",
              "Dividing the score by √d_model divides its variance by d_model, not by √d_model.",
              float(var) / math.sqrt(d_model) if ask == "bug_scale" else None),
        Wrong("no_dk", "forgot the factor dₖ", "q·k sums dₖ independent products, so the variances add up dₖ times.",
              float(prod) if ask == "variance" else (math.sqrt(prod) if ask == "std" else float(prod / d_model))),
        Wrong("dk_not_scaled", "used the intended 1/√dₖ scaling",
              f"This model divides by √d_model = √{d_model}, not by √dₖ: the variance is divided by d_model.",
              float(prod) if ask == "bug_scale" else None),
    ]
    mis = keep_distinct(key, wrongs)
    st = Doc()
    sq = "" if var_q == 1 and var_k == 1 else f" (variance $\\sigma_q^2 = {frac_text(var_q)}$ for $q$, $\\sigma_k^2 = {frac_text(var_k)}$ for $k$)"
    lead = (f"A model of width $d_{{model}} = {d_model}$, whose heads have width $d_k$, divides its attention scores by "
            r"$\sqrt{d_{model}}$ instead of $\sqrt{d_k}$ (a bug). " if ask == "bug_scale" else "")
    st.p(lead + f"The components of a query $q$ and a key $k$ in $\\mathbb{{R}}^{{{d_k}}}$ are independent random variables with mean 0"
         + (" and variance 1" if not sq else "") + f"{sq}. What is {what}? Round off to {('two', 'two', 'three')[d.level]} decimal places.")
    sol = Doc()
    sol.p(r"Each term $q_i k_i$ has mean $E[q_i]E[k_i] = 0$ and variance $E[q_i^2]E[k_i^2] = \sigma_q^2\sigma_k^2$ "
          f"$= {frac_text(var_q)} \\times {frac_text(var_k)} = {frac_text(prod)}$.")
    sol.p(f"The $d_k = {d_k}$ terms are independent, so their variances add: $\\operatorname{{Var}}(q\\cdot k) = d_k\\sigma_q^2\\sigma_k^2 = {frac_text(var)}$.")
    if d.level == 1:
        sol.p(f"Check: with unit variances it would be $d_k = {d_k}$; the variances multiply it by "
              f"$\\sigma_q^2\\sigma_k^2 = {frac_text(prod)}$.")
    if ask == "std":
        sol.p(f"The standard deviation is $\\sqrt{{{frac_text(var)}}} = {num(value, 4)}$.")
    if ask == "bug_scale":
        sol.p(f"Dividing by $\\sqrt{{d_{{model}}}}$ divides the variance by $d_{{model}} = {d_model}$ ({heads} heads of {d_k}): "
              f"${frac_text(var)}/{d_model} = {num(value, 5)}$, which is $\\sigma_q^2\\sigma_k^2/H$: the scores are {heads} times "
              "too small in variance, and the softmax is flatter than intended.")
        sol.p(f"For comparison, the intended $1/\\sqrt{{d_k}}$ gives ${frac_text(var)}/{d_k} = {frac_text(prod)}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"d_k": d_k, "var_q": str(var_q), "var_k": str(var_k), "ask": ask, "d_model": d_model},
                     hints=["Var of a product of independent zero-mean variables is the product of their variances."])


# issue 22: each problem is one sentence frame with two slots, each filled right or wrong, and its four options are
# the 2×2 cross of the fillers: exactly one option fills both slots right. Every option then shares the frame with
# the three others and each filler with one other, so "most (fewest) shared words", "echoes the statement" and
# the options' lengths and word counts say nothing that the frame does not say of all four; which filler is the
# longer one, right or wrong, varies from frame to frame. (Pools of right and wrong statements written apart lost
# to "most shared words", 36-42 %, and to a learned attacker at medium, 56-62 %: the right ones used fewer, longer
# words, "saturation", "vanishing gradients".)
_D = r"$d_k$"
_SQ = r"$\sqrt{d_k}$"


def _w(id_: str, label: str, feedback: str) -> Wrong:
    return Wrong(id_, label, feedback, None)


_SEQ_LEN = _w("sequence_length", "thought the scaling is about the sequence length",
              "Each score is one dot product over dₖ components; the sequence length n does not enter its variance.")
_ZERO_MEAN = _w("mean_grows", "thought the mean of the scores grows with dₖ",
                "E[q·k] = Σ E[qᵢ]E[kᵢ] = 0 for every dₖ; it is the variance that grows, like dₖ.")
_VAR_SQRT = _w("variance_grows_sqrt", "took the standard deviation √dₖ for the variance",
               "Var(q·k) = Σ Var(qᵢkᵢ) = dₖ; √dₖ is its standard deviation.")
_VAR_BY_SQRT = _w("variance_by_sqrt", "thought the variance is divided by √dₖ",
                  "Dividing a variable by √dₖ divides its variance by (√dₖ)² = dₖ.")

#: (frame with {x} and {y}, (right x, wrong x, the mistake of the wrong x), (right y, wrong y, its mistake))
_WHY_FRAMES: dict[int, list[tuple[str, tuple[str, str, Wrong], tuple[str, str, Wrong]]]] = {
    # easy: the wrong fillers confuse the scale with another part of the layer (the softmax's normalisation,
    # parameters, order, heads, training, the sequence length)
    0: [
        ("So that {x} do not grow with {y}, which would saturate the softmax",
         ("the scores", "the probabilities",
          _w("probabilities", "confused the scores with the softmax probabilities",
             "The softmax probabilities lie between 0 and 1 whatever dₖ is; the factor scales the scores before the softmax.")),
         ("the head width " + _D, "the sequence length $n$", _SEQ_LEN)),
        ("Because without it a large " + _D + " makes the softmax nearly {x}, so that its gradients {y}",
         ("one-hot", "flat",
          _w("flat_not_one_hot", "thought large scores flatten the softmax",
             "Large scores let the largest exponential dominate: the softmax tends to one-hot, not to flat (uniform).")),
         ("vanish", "explode",
          _w("gradients_explode", "thought a saturated softmax has exploding gradients",
             "A saturated softmax has derivatives pᵢ(δᵢⱼ − pⱼ) near 0: its gradients vanish."))),
        ("So that one constant, applied {x}, {y} as " + _D + " grows",
         ("in every forward pass", "only during the warm-up",
          _w("learning_rate", "confused the scaling with a learning-rate schedule",
             "The factor is applied in every forward pass, at inference too; it is not a schedule.")),
         ("shrinks the scores", "adds parameters",
          _w("parameters", "thought the scaling changes the parameter count",
             "A constant scale adds or removes no parameters; it shrinks the scores."))),
        ("Because it acts on {x}, keeping their softmax {y}",
         ("the scores inside each head", "the concatenated outputs",
          _w("concatenation", "thought the concatenation needs it",
             "The factor divides QKᵀ inside each head; the concatenated outputs of the heads are not scaled.")),
         ("out of saturation", "blind to order",
          _w("order_invariance", "confused the scaling with permutation invariance",
             "Order is handled by positional encodings, not by the scale."))),
        ("Because {x} of " + _D + "-wide vectors grow with " + _D + ", and the softmax of large scores {y}",
         ("dot products", "cosines",
          _w("cosine", "confused the scores with cosine similarities",
             "A cosine lies in [−1, 1] whatever dₖ is; it is the raw dot product q·k whose spread grows like √dₖ.")),
         ("saturates", "sums to over one",
          _w("confuses_with_softmax", "confused the scaling with the softmax normalisation",
             "The softmax sums to 1 whatever its inputs; large scores make it nearly one-hot (saturated)."))),
        ("So that the softmax {x} whatever the {y}",
         ("keeps useful gradients", "stays bounded by one",
          _w("output_range", "thought the scaling bounds the softmax",
             "The softmax is bounded by 1 with or without the factor; the factor keeps it from saturating.")),
         ("width " + _D + " of a head", "number of sequences in a batch",
          _w("batch_size", "thought the scaling is about the batch size",
             "Each score is one dot product of two dₖ-wide vectors; the batch size does not enter it."))),
    ],
    # medium: the wrong fillers get the variance arithmetic wrong, told apart only by doing it
    1: [
        ("Because without it the {x} of each score grows like {y}, and the softmax saturates",
         ("variance", "mean", _ZERO_MEAN), (_D, _SQ, _VAR_SQRT)),
        ("Because without it the {x} of each score grows like {y}, and the softmax saturates",
         ("standard deviation", "mean", _ZERO_MEAN),
         (_SQ, _D, _w("std_grows_dk", "took the variance dₖ for the standard deviation",
                      "The variance of q·k is dₖ; its standard deviation is the square root, √dₖ."))),
        ("So that each score has a {x} of {y} after the scaling, whatever " + _D + " is",
         ("variance", "mean", _w("mean_one", "thought the scaling sets the mean of the scores to 1",
                                 "The mean of q·k is 0 before and after the scaling: a constant factor keeps it at 0.")),
         ("1", "$1/d_k$", _w("variance_one_over_dk", "thought the scaled variance is 1/dₖ",
                             "Var(q·k/√dₖ) = dₖ/(√dₖ)² = 1, not 1/dₖ: the unscaled variance is dₖ, not 1."))),
        ("Because each of the " + _D + " products $q_i k_i$ adds {x} to the variance of the raw score, which reaches {y}",
         ("one", _D, _w("each_term_dk", "thought each product has variance dₖ",
                      "Var(qᵢkᵢ) = E[qᵢ²]E[kᵢ²] = 1·1 = 1; the dₖ products add up to dₖ.")),
         (_D, _SQ, _VAR_SQRT)),
        ("Because dividing by " + _SQ + " divides the variance of each score by {x}, taking it from {y} to 1",
         (_D, _SQ, _VAR_BY_SQRT),
         (_D, _SQ, _VAR_SQRT)),
        ("Because without it the scores of a " + _D + "-wide head have variance {x}, {y} times what they have with it",
         (_D, "1", _w("raw_variance_one", "thought the unscaled scores already have variance 1",
                      "Each of the dₖ products qᵢkᵢ has variance 1, and they add up: the raw score has variance dₖ.")),
         (_D, _SQ, _VAR_BY_SQRT)),
    ],
}


def _why_cell(frame: str, x: tuple[str, str, Wrong], y: tuple[str, str, Wrong], xr: bool, yr: bool) -> tuple[str, Wrong | None]:
    text = frame.replace("{x}", x[0] if xr else x[1]).replace("{y}", y[0] if yr else y[1])
    if xr and yr:
        return text, None
    if xr or yr:
        return text, (y[2] if xr else x[2])
    a, b = x[2], y[2]
    return text, Wrong(f"{a.id}_and_{b.id}", f"{a.label}, and {b.label}", f"{a.feedback} {b.feedback}", None)


@family(
    "attention.why_sqrt_dk",
    topic="attention",
    title="Why divide by √dₖ?",
    types=("mcq",),
    tags=("sqrt-dk", "score-scaling", "conceptual"),
    difficulties=("easy", "medium"),
    source="004_83489721195aedaa.txt GATE Q4",
)
def why_sqrt_dk(d: Draw) -> Problem:
    """The reason for the 1/√dₖ factor, one right statement among mistaken ones."""
    # easy: wrong fillers that confuse the scale with another part of the layer (softmax, parameters,
    # order, heads, training); medium: wrong fillers that get the variance arithmetic wrong, so the
    # option is found only by computing Var(q·k/√dₖ). Disjoint frames: no statement at both levels.
    frame, x, y = d.pick(_WHY_FRAMES[min(d.level, 1)])
    cells = [_why_cell(frame, x, y, xr, yr) for xr in (True, False) for yr in (True, False)]
    d.rng.shuffle(cells)
    options = [t for t, _ in cells]
    key = ChoiceKey(frozenset(i for i, (_, w) in enumerate(cells) if w is None))
    mis = [w.misconception(i) for i, (_, w) in enumerate(cells) if w is not None]
    st = Doc().p(r"Why does scaled dot-product attention divide $QK^\top$ by $\sqrt{d_k}$ before the softmax? (Assume the "
                 r"components of a query $q$ and a key $k$ are independent, standardised random variables.)")
    sol = Doc()
    sol.p(r"For $q, k$ with independent unit-variance components, $\operatorname{Var}(q\cdot k) = d_k$: the scores grow "
          r"like $\sqrt{d_k}$, and a softmax of large scores is nearly one-hot with vanishing gradients. Dividing by $\sqrt{d_k}$ "
          r"brings the variance back to 1.")
    if d.level > 0:
        sol.p(r"The arithmetic the options get wrong: $E[q\cdot k] = 0$ and the scale keeps it 0; "
              r"$\operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k$; "
              r"$\operatorname{Var}(q\cdot k/\sqrt{d_k}) = d_k/(\sqrt{d_k})^2 = 1$, the same for every $d_k$ and every $n$.")
    sol.p("**Answer:** " + answer_text(key, [latex_to_text(o) for o in options]))
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, misconceptions=mis,
                     explanation="Var(q·k) = d_k for unit-variance components; the scaling keeps the softmax out of saturation.")
