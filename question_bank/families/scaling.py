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

from question_bank.family import Draw, Wrong, concept_choices, family, keep_distinct
from question_bank.grading import answer_text, nat_key, safe_for_rounding
from question_bank.problem import Problem
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


# issue 22: every option names the softmax and dₖ, and rights and wrongs share their openings ("To", "So that",
# "Because"), words and lengths ("pick the option with 'softmax' and 'dₖ'" was right in every draw when only the
# right statements named both)
_WHY_RIGHT = [  # of different lengths, so that with balance_length the key is not told by its length
    r"To keep the softmax out of saturation as $d_k$ grows",
    r"So that a large $d_k$ no longer makes the softmax of the scores nearly one-hot, with vanishing gradients",
    r"Because the scores would otherwise have variance $d_k$, and the softmax of such large scores saturates",
    r"To bring the scores back to unit variance, so that their softmax stays out of saturation as $d_k$ grows",
    r"So that the softmax stays in a region with useful gradients whatever $d_k$ is",
    r"Because without it the spread of the scores grows with $d_k$ and the softmax turns nearly one-hot",
]
_WHY_WRONG = [
    (r"So that the softmax weights of each row add up to one, whatever $d_k$ is",
     Wrong("confuses_with_softmax", "confused the scaling with the softmax normalisation",
           "Rows summing to 1 is the softmax's job; the scaling controls the size of the scores.", None)),
    (r"Because without it the attention layer would need more parameters as $d_k$ grows",
     Wrong("parameters", "thought the scaling changes the parameter count", "A constant scale adds or removes no parameters.", None)),
    (r"To bound the output of attention to the unit interval after the softmax, whatever $d_k$ is",
     Wrong("output_range", "thought the scaling bounds the output", "The output is a weighted average of values, in their range, scaled or not.", None)),
    (r"To make the softmax of the scores blind to the order of the tokens as $d_k$ grows",
     Wrong("order_invariance", "confused scaling with permutation invariance", "Order is handled by positional encodings, not the scale.", None)),
    (r"To shrink the variance of the scores $\sqrt{d_k}$-fold ahead of the softmax",
     Wrong("variance_by_sqrt", "thought the variance is divided by √dₖ", "Dividing a variable by √dₖ divides its variance by dₖ.", None)),
    (r"Because the softmax needs the cosine similarity of $q$ and $k$, and $\sqrt{d_k}$ turns the scores into cosines",
     Wrong("cosine", "confused the scaling with a cosine similarity",
           "A cosine divides by the norms |q||k|, which vary from token to token; √dₖ is one constant for all scores.", None)),
    (r"So that heads of width $d_k$ give their softmax scores of one size, and their outputs can be concatenated",
     Wrong("concatenation", "thought the concatenation needs it", "Concatenation works for outputs of any size; the scale acts on the scores inside each head.", None)),
    (r"To slow the learning of the $d_k$-wide projections, so the softmax patterns change gradually like a warm-up",
     Wrong("learning_rate", "confused the scaling with a learning-rate schedule",
           "The factor is applied in every forward pass, at inference too; it is not a schedule.", None)),
    (r"So that the spread of the scores no longer depends on the sequence length, whatever $d_k$ is, and the softmax sees one spread",
     Wrong("sequence_length", "thought the scaling is about the sequence length",
           "Each score is one dot product over dₖ components; n does not enter its variance.", None)),
    # medium (issue 12): distractors that get the variance arithmetic wrong, told apart only by doing it
    (r"To give the scores zero mean for the softmax, whatever $d_k$ is",
     Wrong("zero_mean", "thought the scaling centres the scores",
           "A constant factor leaves a zero mean at zero and cannot centre a nonzero one; it changes the spread.", None)),
    (r"So that the variance of the scores grows like $\sqrt{d_k}$ instead of $d_k$, which the softmax tolerates",
     Wrong("variance_grows_sqrt", "thought the scaled variance is √dₖ",
           "Var(q·k/√dₖ) = dₖ/(√dₖ)² = 1: it does not grow with dₖ at all.", None)),
    (r"To give the scores of a $d_k$-wide head a variance of one over $d_k$ in the softmax",
     Wrong("variance_one_over_dk", "thought the scaled variance is 1/dₖ",
           "Var(q·k/√dₖ) = dₖ/(√dₖ)² = 1, not 1/dₖ: the unscaled variance is dₖ, not 1.", None)),
]


_WHY_EASY_WRONG = frozenset({"confuses_with_softmax", "parameters", "output_range", "order_invariance",
                             "concatenation", "learning_rate"})
_WHY_MEDIUM_WRONG = frozenset({"variance_by_sqrt", "zero_mean", "cosine", "sequence_length", "variance_grows_sqrt",
                               "variance_one_over_dk"})


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
    # easy: distractors that confuse the scale with another part of the layer (softmax, parameters,
    # order, heads, training); medium: distractors that get the variance arithmetic wrong, so the
    # option is found only by computing Var(q·k/√dₖ). Disjoint pools: no statement at both levels.
    pool = _WHY_EASY_WRONG if d.level == 0 else _WHY_MEDIUM_WRONG
    wrong = [(t, Wrong(w.id, w.label, w.feedback, 0)) for t, w in _WHY_WRONG if w.id in pool]
    options, key, mis = concept_choices(d, _WHY_RIGHT, wrong, n=4, n_right=1, balance_length=True)
    st = Doc().p(r"Why does scaled dot-product attention divide $QK^\top$ by $\sqrt{d_k}$ before the softmax?")
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
