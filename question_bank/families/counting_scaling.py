"""Scaling-law arithmetic: Chinchilla's 20 tokens per parameter with C = 6·N·D.

(``question_bank/families/scaling.py`` holds the softmax-temperature and √dₖ families; this
module is the compute-scaling arithmetic.)

Facts: training compute C = 6·N·D (``solver.systems.training.train``); Hoffmann et al. (2022) find the
compute-optimal D ≈ 20·N, so C = 6·N·20N = 120·N² and N = √(C/120). Keys: the compute of N
parameters on 20N tokens and the tokens a budget buys are ``train(...)``'s figures; for the
optimal N the family draws a budget of two significant figures and keys √(C/120) (``train`` of the
rounded N at 20N tokens gives the budget back, a check the solution shows). The compute is asked in units of a power of ten
drawn so that the answer lies in [1, 10), [10, 100), [100, 1000) or [1000, 10,000) (not always a mantissa in
[1, 10), which an MCQ's options would give away).
Issue 39: each level's answer is drawn as a corner, at random, of the box of options its MCQ view offers (the
FLOPs per multiply-add and the backward pass, each either way: its ``view_slips``), the box placed
log-uniformly in the level's range, which the draw names (``given["key_range"]``, with ``key_as_corner``) for the view to keep its
options in; so that whatever place the options have in the range, any of them is the key as often.
Misconceptions: 2N in place of 6N (forgot the backward pass), 3N (counted multiply-adds, not FLOPs),
4N (took the backward pass as costly as the forward), and D = N (forgot the 20), or the Chinchilla D
in place of the tokens a budget buys, or N² for N (forgot the square root).
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import sci, tokens_text
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

TOKENS_PER_PARAM = 20
#: the easy question's compute, in its unit 10^exp FLOPs (1 to 10,000 units)
COMPUTE_RANGE = (1.0, 10_000.0)
#: the medium question's tokens, in billions (1 billion to 40 trillion: Llama 3 trained on 15 trillion)
TOKENS_RANGE = (1.0, 40_000.0)
#: the hard question's compute-optimal N, in billions: √(C/120) for a budget of 10^22 to 10^26 FLOPs
OPTIMAL_N_RANGE = (math.sqrt(1e22 / 120) / 1e9, math.sqrt(1e26 / 120) / 1e9)
#: billions of parameters (issue 22: eleven sizes held 9 to 11 problems per level in 1,000 draws; now every whole
#: number of billions to 70 and ten published sizes beyond or between)
_NS_B = tuple(range(1, 71)) + (1.3, 1.5, 2.7, 6.7, 72, 100, 175, 280, 405, 540)
#: the compute question's sizes: 0.1 to 405 billion, evenly spread in log (two significant figures), so that C's
#: leading digits are spread evenly too and no decade boundary sits just above most keys
_NS_B_LOG = tuple(float(f"{10 ** (-1 + math.log10(3600) * i / 77):.2g}") for i in range(78)) + (405, 450)


#: issue 38: the inverse slips of "forgot the backward pass" (2N per token) and "forgot the 20" (D = N), each a
#: mistake of its own whose value is the mirror (the same factor the other way)
_TIMES_3_AGAIN = "applied training = 3 × forward to 6N again (18N per token)"
_TWENTY_TWICE = "multiplied by 20 twice (400 tokens per parameter)"


@family("scaling.chinchilla", topic="scaling", title="Chinchilla arithmetic: 20 tokens per parameter, C = 6ND",
        types=("nat",), tags=("scaling-laws", "chinchilla", "6ND"), source="issue 4 (scaling-law arithmetic); Hoffmann et al. 2022",
        # issue 39, its MCQ view: the FLOPs per multiply-add and the backward pass, each either way (the box its draws
        # place in each level's range); not "forgot the 20", whose ×20 either way spans more than the range lets a box move
        view_slips=("macs_vs_flops", "forgot_backward"))
def chinchilla(d: Draw) -> Problem:
    """Compute for N at 20N tokens; tokens a budget buys for N; the compute-optimal N for a budget."""
    from solver.systems.roofline import matmul_flops  # 2·B·D·F: the 2N-per-token forward count as one matmul
    from solver.systems.training import train

    # Levels (issue 12: disjoint, ordered by steps): easy, C for a compute-optimal N (two products);
    # medium, the tokens a budget buys (a division); hard, the compute-optimal N (solve C = 120N²).
    ask = ("compute", "tokens", "optimal_n")[d.level]
    for _ in range(300):
        if ask == "compute":
            # issue 39: the answer in its unit drawn first, a corner (at random) of the box its view offers (the key,
            # ×2 or ÷2 for the FLOPs per multiply-add, ×3 or ÷3 for the backward pass) placed log-uniformly in
            # COMPUTE_RANGE, then a unit 10^exp among those that give a size of 0.1 to 450 billion, the size rounded
            # to three significant figures. Drawn as a size and a unit putting C in [0.1, 1), ... [100, 1000), the keys
            # below 1 had two significant figures (90 texts, which key-pool memory read: +10 points over chance), and
            # a corner past an end of the range was never the key
            v = d.log_uniform(COMPUTE_RANGE[0] * 1.012, COMPUTE_RANGE[1] / 6 / 1.012, None) * d.pick((1, 2, 3, 6))
            exp = d.pick([e for e in range(16, 28) if 0.1 <= math.sqrt(v * 10**e / 120) / 10**9 <= 450])
            N = round(float(f"{math.sqrt(v * 10**exp / 120):.4g}"))
            C = train(N, tokens=TOKENS_PER_PARAM * N).answer
            value, scale = C / 10**exp, 10**exp
            if not 0.1e9 <= N <= 450e9:
                continue
        else:  # the size, three significant figures, log-uniform (hard draws it too, then keys its own N)
            N = round(d.log_uniform(1, 540, 3) * 10**9)
        if ask == "tokens":
            # issue 39: the tokens drawn first, the budget then 6·N·D to three significant figures. Drawn as a budget
            # of 10^21 to 10^24 and a size, D = C/6N had ramps of ×540 at each end (the convolution of two log-uniform
            # draws), and an option ×6 above a key on the top ramp was rarely the key. D is a corner, drawn at random,
            # of the box its view offers (the key, ×2 or ÷2 for the FLOPs per multiply-add, ×3 or ÷3 for the backward
            # pass: ×1, ×2, ×3 or ×6 its smallest corner), the box placed log-uniformly in 1 billion to 40 trillion
            # tokens (TOKENS_RANGE); the view draws the key's place among the places whose box lies in that range
            D = d.log_uniform(TOKENS_RANGE[0], TOKENS_RANGE[1] / 6, None) * d.pick((1, 2, 3, 6))
            C = float(f"{6 * N * D * 10**9:.3g}")
            value = float(train(N, compute=C).breakdown["tokens"]) / 10**9
            scale = 10**9
        elif ask == "optimal_n":  # a budget of four significant figures, 10^22 to 10^26 FLOPs (N ≈ 9.1 to 913 billion)
            # issue 39: N is a corner, drawn at random, of the box its view offers (the key, ×√2 or ÷√2 for the FLOPs
            # per multiply-add, ×√3 or ÷√3 for the backward pass: ×1, ×√2, ×√3 or ×√6 its smallest corner), the box
            # placed log-uniformly in OPTIMAL_N_RANGE, and the view draws the key's place among the places whose box
            # lies in that range: drawn flat, a corner past an end of the range was never the key. From 10^21 FLOPs
            # (N from 2.9 billion), the budget's printed mantissa (1 to 10) sat among the options (3 to 9) and
            # gave the key away (√(m·10^21/120) grows with m): +33 points over chance on those draws. Four significant
            # figures, not three: of 3,600 budgets the keys repeated, and an option ×√2 above a key (twice a budget of
            # three figures) was often another draw's key, which key-pool memory read (+5 to +8 points)
            n_b = d.log_uniform(OPTIMAL_N_RANGE[0] * 1.005, OPTIMAL_N_RANGE[1] / math.sqrt(6) / 1.005, None)
            C = float(f"{6 * TOKENS_PER_PARAM * (n_b * math.sqrt(d.pick((1, 2, 3, 6))) * 10**9) ** 2:.4g}")
            value = math.sqrt(C / (6 * TOKENS_PER_PARAM)) / 10**9
            N = round(value * 10**9)
            scale = 10**9
        # issue 39: the compute and the tokens (one product or division of printed figures, no rounded intermediate)
        # held 0.03 of a unit off a rounding boundary (the NAT grader's margin), not 0.1, as parallel.bus_bandwidth:
        # held further off than any other option, the key's text was an exact multiple (×2, ×3, ×6) of another
        # option's more or less often
        if safe_for_rounding(value, 2, 0.1 if ask == "optimal_n" else 0.03) and 0.01 <= value < 100_000:
            break
    def per_token(k: int) -> float:
        """The answer, in its unit, when training is taken to cost k·N FLOPs per token (C = k·N·D), not 6N."""
        if ask == "compute":
            return k * N * (TOKENS_PER_PARAM * N) / scale
        if ask == "tokens":
            return C / (k * N) / scale
        return math.sqrt(C / (k * TOKENS_PER_PARAM)) / scale

    slips = [Wrong("macs_vs_flops", "counted multiply-adds (3N per token)",
                   "FLOP counts take 2 FLOPs per multiply-add: training costs 6N FLOPs per token, not 3N.", per_token(3),
                   inverse="counted 4 FLOPs per multiply-add (12N per token)", inverse_value=per_token(12)),
             Wrong("backward_as_forward", "took the backward pass as costly as the forward (4N per token)",
                   "The backward pass computes gradients for both the activations and the weights: 4N per token, "
                   "twice the forward's 2N, so training costs 6N.", per_token(4))]
    if ask == "compute":
        wrongs = [Wrong("forgot_backward", "used 2N per token", "Training costs 6N per token (forward 2N + backward 4N).",
                        matmul_flops(TOKENS_PER_PARAM * N, N, 1, "forward") / scale, inverse=_TIMES_3_AGAIN,
                        inverse_value=per_token(18)),
                  Wrong("forgot_twenty", "trained on N tokens", "Chinchilla-optimal is about 20 tokens per parameter.",
                        train(N, tokens=N).answer / scale, inverse=_TWENTY_TWICE)]
    elif ask == "tokens":
        wrongs = [Wrong("forgot_backward", "used C = 2ND", "C = 6ND: the budget buys a third of C/(2N).",
                        3 * float(train(N, compute=C).breakdown["tokens"]) / scale, inverse=_TIMES_3_AGAIN,
                        inverse_value=per_token(18)),
                  Wrong("twenty_n", "answered 20·N", "The question asks what the budget buys, not the Chinchilla-optimal D.",
                        TOKENS_PER_PARAM * N / scale)]
    else:
        wrongs = [Wrong("forgot_backward", "used C = 2ND", "C = 6ND = 120N²: N = √(C/120).", math.sqrt(C / 40) / scale,
                        inverse=_TIMES_3_AGAIN, inverse_value=per_token(18)),
                  Wrong("forgot_twenty", "took D = N", "D ≈ 20N, so C = 120N², not 6N².", math.sqrt(C / 6) / scale,
                        inverse=_TWENTY_TWICE),
                  Wrong("no_square_root", "forgot the square root", "C = 120N² gives N² = C/120: take the square root.",
                        C / 120 / scale)]
    wrongs += slips
    st = Doc()
    st.p("Use the training-compute rule $C = 6ND$ (N parameters, D training tokens) and the Chinchilla rule of thumb "
         "that compute-optimal training uses about 20 tokens per parameter.")
    sol = Doc()
    if ask == "compute":
        st.p(f"How much compute does a compute-optimal training run of a model with $N$ = {tokens_text(N)} parameters take? "
             f"Give $C$ in units of $10^{{{exp}}}$ FLOPs, rounded off to two decimal places.")
        sol.p(f"$D = 20N = {sci(TOKENS_PER_PARAM * N)}$ tokens; $C = 6ND = 6 \\times {sci(N)} \\times {sci(20 * N)} = {sci(C, 6)}$ FLOPs "
              f"$= {value:.4f} \\times 10^{{{exp}}}$.")
    elif ask == "tokens":
        st.p(f"With a budget of $C = {sci(C)}$ FLOPs, on how many tokens can a model of $N$ = {tokens_text(N)} parameters be "
             "trained? Give D in billions of tokens, rounded off to two decimal places.")
        sol.p(f"$D = C / (6N) = {sci(C)} / (6 \\times {sci(N)}) = {sci(value * 1e9, 6)}$ tokens $= {value:.4f}$ billion.")
    else:
        st.p(f"A lab has a budget of $C = {sci(C)}$ FLOPs. What is the compute-optimal model size N? Give N in billions "
             "of parameters, rounded off to two decimal places.")
        check = train(N, tokens=TOKENS_PER_PARAM * N).answer
        sol.p(f"$C = 6N \\cdot 20N = 120N^2$, so $N = \\sqrt{{C/120}} = \\sqrt{{{sci(C)}/120}} = {sci(N, 6)}$ "
              f"$= {value:.4f}$ billion (check: $6 \\times {sci(N, 6)} \\times {sci(20 * N, 6)} = {sci(check, 6)}$).")
    key = nat_key(value, 2, scale=exp if ask == "compute" else 9)  # units of 10^exp FLOPs, or billions
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"ask": ask, "params": N, "compute": C, "unit_exponent": exp if ask == "compute" else None,
                            # the range the view's options lie in, the key a corner of their box (numeric_mcq): the
                            # budget's rounding moves D by 0.5 % at most, N by 0.03 %
                            **({"key_range": (TOKENS_RANGE[0] / 1.01, TOKENS_RANGE[1] * 1.01), "key_as_corner": True}
                               if ask == "tokens" else
                               {"key_range": COMPUTE_RANGE, "key_as_corner": True} if ask == "compute" else
                               {"key_range": OPTIMAL_N_RANGE, "key_as_corner": True} if ask == "optimal_n" else {})},
                     hints=[_HINTS[ask]])


#: One hint per question (issue 12: "D ≈ 20N" on a budget question led to the family's own "answered 20·N").
_HINTS = {
    "compute": "C = 6ND, and compute-optimal training uses D ≈ 20N tokens.",
    "tokens": "The budget fixes D: C = 6ND, so D = C/(6N), whether or not that is 20 tokens per parameter.",
    "optimal_n": "Compute-optimal means D ≈ 20N, so C = 6N·20N = 120N².",
}
