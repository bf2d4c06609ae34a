"""Scaling-law arithmetic: Chinchilla's 20 tokens per parameter with C = 6·N·D.

(``question_bank/families/scaling.py`` holds the softmax-temperature and √dₖ families; this
module is the compute-scaling arithmetic.)

Facts: training compute C = 6·N·D (``solver.systems.training.train``); Hoffmann et al. (2022) find the
compute-optimal D ≈ 20·N, so C = 6·N·20N = 120·N² and N = √(C/120). Keys: the compute of N
parameters on 20N tokens and the tokens a budget buys are ``train(...)``'s figures; for the
optimal N the family draws a round N, states the budget ``train(N, tokens=20N)`` computes,
and keys that N (``train`` round-trips it in the tests). Misconceptions: 2N in place of 6N
(forgot the backward pass) and D = N (forgot the 20).
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import sci, tokens_text
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

TOKENS_PER_PARAM = 20
#: billions of parameters (issue 22: eleven sizes held 9 to 11 problems per level in 1,000 draws; now every whole
#: number of billions to 70 and ten published sizes beyond or between)
_NS_B = tuple(range(1, 71)) + (1.3, 1.5, 2.7, 6.7, 72, 100, 175, 280, 405, 540)


@family("scaling.chinchilla", topic="scaling", title="Chinchilla arithmetic: 20 tokens per parameter, C = 6ND",
        types=("nat",), tags=("scaling-laws", "chinchilla", "6ND"), source="issue 4 (scaling-law arithmetic); Hoffmann et al. 2022")
def chinchilla(d: Draw) -> Problem:
    """Compute for N at 20N tokens; tokens a budget buys for N; the compute-optimal N for a budget."""
    from solver.systems.roofline import matmul_flops  # 2·B·D·F: the 2N-per-token forward count as one matmul
    from solver.systems.training import train

    # Levels (issue 12: disjoint, ordered by steps): easy, C for a compute-optimal N (two products);
    # medium, the tokens a budget buys (a division); hard, the compute-optimal N (solve C = 120N²).
    ask = ("compute", "tokens", "optimal_n")[d.level]
    for _ in range(300):
        n_b = d.pick(_NS_B)
        N = round(n_b * 10**9)
        if ask == "compute":
            C = train(N, tokens=TOKENS_PER_PARAM * N).answer
            exp = int(math.floor(math.log10(C)))
            value, scale = C / 10**exp, 10**exp
        elif ask == "tokens":
            C = d.pick((1, 2, 3, 5)) * 10 ** d.pick((21, 22, 23))
            value = float(train(N, compute=C).breakdown["tokens"]) / 10**9
            scale = 10**9
        else:
            C = train(N, tokens=TOKENS_PER_PARAM * N).answer
            value = float(n_b)
            scale = 10**9
        if safe_for_rounding(value, 2, 0.1) and 0.01 <= value < 100_000:
            break
    if ask == "compute":
        wrongs = [Wrong("forgot_backward", "used 2N per token", "Training costs 6N per token (forward 2N + backward 4N).",
                        matmul_flops(TOKENS_PER_PARAM * N, N, 1, "forward") / scale),
                  Wrong("forgot_twenty", "trained on N tokens", "Chinchilla-optimal is about 20 tokens per parameter.",
                        train(N, tokens=N).answer / scale)]
    elif ask == "tokens":
        wrongs = [Wrong("forgot_backward", "used C = 2ND", "C = 6ND: the budget buys a third of C/(2N).",
                        3 * float(train(N, compute=C).breakdown["tokens"]) / scale),
                  Wrong("twenty_n", "answered 20·N", "The question asks what the budget buys, not the Chinchilla-optimal D.",
                        TOKENS_PER_PARAM * N / scale)]
    else:
        wrongs = [Wrong("forgot_backward", "used C = 2ND", "C = 6ND = 120N²: N = √(C/120).", math.sqrt(C / 40) / scale),
                  Wrong("forgot_twenty", "took D = N", "D ≈ 20N, so C = 120N², not 6N².", math.sqrt(C / 6) / scale),
                  Wrong("no_square_root", "forgot the square root", "C = 120N² gives N² = C/120: take the square root.",
                        C / 120 / scale)]
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
        st.p(f"A lab has a budget of $C = {sci(C, 6)}$ FLOPs. What is the compute-optimal model size N? Give N in billions "
             "of parameters, rounded off to two decimal places.")
        sol.p(f"$C = 6N \\cdot 20N = 120N^2$, so $N = \\sqrt{{C/120}} = \\sqrt{{{sci(C, 6)}/120}} = {sci(N)}$ "
              f"$= {value:.2f}$ billion (check: $6 \\times {sci(N)} \\times {sci(20 * N)} = {sci(C, 6)}$).")
    key = nat_key(value, 2, scale=exp if ask == "compute" else 9)  # units of 10^exp FLOPs, or billions
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"ask": ask, "params": N, "compute": C, "unit_exponent": exp if ask == "compute" else None},
                     hints=[_HINTS[ask]])


#: One hint per question (issue 12: "D ≈ 20N" on a budget question led to the family's own "answered 20·N").
_HINTS = {
    "compute": "C = 6ND, and compute-optimal training uses D ≈ 20N tokens.",
    "tokens": "The budget fixes D: C = 6ND, so D = C/(6N), whether or not that is 20 tokens per parameter.",
    "optimal_n": "Compute-optimal means D ≈ 20N, so C = 6N·20N = 120N².",
}
