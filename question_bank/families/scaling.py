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
    told_apart=("sum_not_product", "std_for_variance"),
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
# the three others and each filler with one other. (Pools of right and wrong statements written apart lost to "most
# shared words", 36-42 %, and to a learned attacker at medium, 56-62 %: the right ones used fewer, longer words,
# "saturation", "vanishing gradients".) Within a slot the right and the wrong filler have the same length, the same
# number of words and of new words, and share the same number of words with the statement, so that the four options
# of a draw look alike to every feature of question_bank.adversary (length, words, overlaps, numbers): a learned
# attacker sees four equal rows but for their positions. (Fillers of other lengths, dₖ against √dₖ, "variance"
# against "mean", let one trained on some frames find the key in 47 % of the medium draws of the others, at 400
# draws.) Across the frames of a level each filler is the right one as often as the wrong one ("dₖ," right in one
# frame is wrong in another), so no word such as "mean", "one" or √dₖ marks the key either.
# tests/question_bank/families/test_why_sqrt_dk_frames.py holds both.
_D = r"$d_k$"
_SQ = r"$\sqrt{d_k}$"
#: dₖ against √dₖ: the comma (before "and", "so", "which") makes the two fillers one length
_DC = r"$d_k$,"
_QK = r"$q_i k_i$"


def _w(id_: str, label: str, feedback: str) -> Wrong:
    return Wrong(id_, label, feedback, None)


# easy: the wrong fillers get the picture wrong (what is scaled, which way the scores and the gradients go, what the
# softmax does with large or small scores, the key width against the number of keys)
_SCORES_SHRINK = _w("scores_shrink", "thought wider vectors give smaller dot products",
                    "q·k adds up dₖ products qᵢkᵢ: its spread grows like √dₖ, it does not shrink.")
_GRADIENTS_EXPLODE = _w("gradients_explode", "thought a saturated softmax has exploding gradients",
                        "A saturated softmax has derivatives pᵢ(δᵢⱼ − pⱼ) near 0: its gradients vanish.")
# medium: the wrong fillers get the variance arithmetic wrong, told apart only by doing it
_VAR_SQRT = _w("variance_grows_sqrt", "took the standard deviation √dₖ for the variance",
               "Var(q·k) = Σ Var(qᵢkᵢ) = dₖ; √dₖ is its standard deviation.")
_VAR_BY_SQRT = _w("variance_by_sqrt", "thought the variance is divided by √dₖ",
                  "Dividing a variable by √dₖ divides its variance by (√dₖ)² = dₖ: from dₖ to 1.")
_EACH_TERM_DK = _w("each_term_dk", "thought each product has variance dₖ",
                   "Var(qᵢkᵢ) = E[qᵢ²]E[kᵢ²] = 1·1 = 1; the dₖ products add up to dₖ.")
_RAW_VAR_ONE = _w("raw_variance_one", "thought the unscaled scores already have variance 1",
                  "Each of the dₖ products qᵢkᵢ has variance 1, and they add up: the raw score has variance dₖ.")

#: (frame with {x} and {y}, (right x, wrong x, the mistake of the wrong x), (right y, wrong y, its mistake))
_WHY_FRAMES: dict[int, list[tuple[str, tuple[str, str, Wrong], tuple[str, str, Wrong]]]] = {
    0: [
        ("So that {x} do not {y} as the head width " + _D + " grows and push the softmax into saturation",
         ("the scores", "the values",
          _w("value_vectors", "thought the factor scales the value vectors",
             "The factor divides the scores QKᵀ before the softmax; the values V are not scaled.")),
         ("blow up", "die out", _SCORES_SHRINK)),
        ("Because without it a large " + _D + " makes the softmax {y}, so that its gradients {x}",
         ("die out", "blow up", _GRADIENTS_EXPLODE),
         ("sharply peaked", "nearly uniform",
          _w("flat_not_one_hot", "thought large scores flatten the softmax",
             "Large scores let the largest exponential dominate: the softmax tends to one-hot, not to uniform."))),
        ("Because without it the softmax weights that average {x} come from dot products that {y} as " + _D + " grows",
         ("the values", "the scores",
          _w("averages_scores", "thought the softmax weights average the scores",
             "The softmax turns the scores into weights, and the weights average the values V.")),
         ("blow up", "die out", _SCORES_SHRINK)),
        ("Because dividing by " + _D + " instead would make the scores {x} as " + _D + " grows and the softmax {y}",
         ("die out", "blow up",
          _w("over_scaling_grows", "thought the scores still grow when divided by dₖ",
             "q·k has standard deviation √dₖ, so q·k/dₖ has 1/√dₖ: the scores die out as dₖ grows.")),
         ("nearly uniform", "sharply peaked",
          _w("small_scores_peaked", "thought scores near 0 make the softmax peaked",
             "Scores near 0 give exponentials near 1: the softmax tends to uniform."))),
        ("So that the scores do not grow with {x} and saturate the softmax, whose gradients would then {y}",
         ("wider keys", "extra keys",
          _w("sequence_length", "thought the scaling is about the number of keys",
             "Each score is one dot product over the key width dₖ; the number of keys n does not enter it.")),
         ("die out", "blow up", _GRADIENTS_EXPLODE)),
        ("Because adding {x} to a query's softmax leaves each of its scores as it is, but a large " + _D + " makes them {y}",
         ("extra keys", "wider keys",
          _w("width_leaves_scores", "thought wider keys leave the scores as they are",
             "A wider key adds more products qᵢkᵢ to each score: its spread grows like √dₖ.")),
         ("blow up", "die out", _SCORES_SHRINK)),
    ],
    1: [
        ("Because without it {x} of each score grows like {y} and the softmax saturates",
         ("the size", "the mean",
          _w("mean_grows", "thought the mean of the scores grows with dₖ",
             "E[q·k] = Σ E[qᵢ]E[kᵢ] = 0 for every dₖ; it is the spread that grows, like √dₖ.")),
         (_SQ, _DC, _w("std_grows_dk", "took the variance dₖ for the typical size",
                       "The variance of q·k is dₖ; its standard deviation, the typical size of a score, is √dₖ."))),
        ("Because the variances of the " + _D + " products {x}, making the variance of each score grow like {y} and the "
         "softmax saturate",
         ("stack up", "even out",
          _w("variances_even_out", "thought the products' variances even out like their signs",
             "Variances of independent terms add, whatever their signs: Var(q·k) = Σ Var(qᵢkᵢ) = dₖ.")),
         (_DC, _SQ, _VAR_SQRT)),
        ("Because without it a score sums " + _D + " products " + _QK + " of variance {x} and so has standard deviation {y}, "
         "which makes the softmax nearly one-hot",
         ("one", _DC, _EACH_TERM_DK),
         (_SQ, "one", _w("raw_std_one", "thought the raw scores have standard deviation 1",
                         "The dₖ products' variances add up to dₖ, so the raw score's standard deviation is √dₖ, not 1."))),
        ("Because without it each score has variance {y} and the softmax is nearly one-hot, while dividing by " + _SQ
         + " brings that variance to {x}",
         ("one", _SQ, _VAR_BY_SQRT),
         (_DC, "one", _RAW_VAR_ONE)),
        ("Because the products " + _QK + " {x} in {y} of each score, keeping it at zero, while their variances sum to " + _D
         + ", enough to saturate the softmax",
         ("even out", "stack up",
          _w("means_stack_up", "thought the products pile up in the mean",
             "Each product qᵢkᵢ has mean E[qᵢ]E[kᵢ] = 0: positive and negative products even out, and E[q·k] = 0.")),
         ("the mean", "the size",
          _w("small_scores", "took the zero mean for small scores",
             "E[q·k] = 0, but the scores spread around it with standard deviation √dₖ: they are not small."))),
        ("Because dividing each score by " + _SQ + " divides its standard deviation by {x} and its variance by {y} and keeps "
         "the softmax out of saturation",
         (_SQ, _DC, _w("std_by_dk", "thought the standard deviation is divided by dₖ",
                       "Dividing a variable by √dₖ divides its standard deviation by √dₖ and its variance by dₖ.")),
         (_DC, _SQ, _VAR_BY_SQRT)),
        ("Because each one of the " + _D + " products " + _QK + " has variance {x} and the raw score, their sum, has variance "
         "{y} and saturates the softmax",
         ("one", _DC, _EACH_TERM_DK),
         (_DC, "one", _RAW_VAR_ONE)),
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
    # easy: wrong fillers that get the picture wrong (what is scaled, which way the scores and the gradients go,
    # the softmax of large or small scores, the key width against the number of keys); medium: wrong fillers that
    # get the variance arithmetic wrong, so the option is found only by computing E[q·k], Var(q·k) and
    # Var(q·k/√dₖ). Disjoint frames: no statement at both levels.
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
    sol.p(r"Only the width $d_k$ of $q$ and $k$ enters a score, not the number of keys; the factor scales the scores, "
          r"not the values $V$ that the softmax weights average. Dividing by $d_k$ instead would leave the scores a "
          r"standard deviation $1/\sqrt{d_k}$: they would die out, and the softmax would be nearly uniform.")
    if d.level > 0:
        sol.p(r"The arithmetic the options get wrong: each product has mean $E[q_i]E[k_i] = 0$ (the products even out, "
              r"$E[q\cdot k] = 0$, and the scale keeps it 0) and variance $E[q_i^2]E[k_i^2] = 1$; the $d_k$ variances add up, "
              r"$\operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k$, a standard deviation "
              r"(the typical size of a score) of $\sqrt{d_k}$; dividing by $\sqrt{d_k}$ divides the standard deviation by "
              r"$\sqrt{d_k}$ and the variance by $(\sqrt{d_k})^2 = d_k$: "
              r"$\operatorname{Var}(q\cdot k/\sqrt{d_k}) = 1$, the same for every $d_k$ and every $n$.")
    sol.p("**Answer:** " + answer_text(key, [latex_to_text(o) for o in options]))
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, misconceptions=mis,
                     explanation="Var(q·k) = d_k for unit-variance components; the scaling keeps the softmax out of saturation.")
