"""BERT's masked-language-model arithmetic.

BERT (Devlin et al., 2019) selects 15 % of the token positions for prediction; of those, 80 %
are replaced by [MASK], 10 % by a random token and 10 % are left unchanged. Expected counts
for N tokens: selected 0.15N, [MASK] 0.12N, random 0.015N, unchanged-but-predicted 0.015N;
the MLM loss is computed on the selected positions only. Fractions are exact (``Fraction``).
"""

from __future__ import annotations

from fractions import Fraction

from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, nat_key
from question_bank.problem import Problem
from question_bank.render import Doc, num

SELECT = Fraction(15, 100)
SPLIT = {"mask": Fraction(80, 100), "random": Fraction(10, 100), "unchanged": Fraction(10, 100)}


def expected_counts(n_tokens: int) -> dict[str, Fraction]:
    """Expected numbers of selected, [MASK], random and unchanged positions in N tokens."""
    sel = SELECT * n_tokens
    return {"selected": sel, **{k: sel * f for k, f in SPLIT.items()}}


@family(
    "pretraining.bert_masking",
    topic="pretraining",
    title="BERT masking arithmetic (15 %, 80/10/10)",
    types=("nat",),
    tags=("bert", "mlm", "masked-lm"),
    source="004_83489721195aedaa.txt GATE Q5; 000_77b679b0197eab2d.txt (BERT)",
)
def bert_masking(d: Draw) -> Problem:
    """Expected numbers of [MASK], random, unchanged or loss positions for N tokens.

    Levels (issue 12: disjoint, ordered by the steps they take): easy, one sequence, the selected
    or the [MASK] positions (one or two factors: 15 %, 80 % of it); medium, one sequence, the random
    or unchanged positions (10 % of 15 %, where 10 % of all tokens is the trap); hard, a batch of
    sequences (one more product) and any count, the positions that are not [MASK] included (a
    complement as well)."""
    n_seq = d.pick((8, 16, 32)) if d.level == 2 else 1
    # issue 22: any length from 64 to 1,024 in steps of 8 (six lengths gave 12 easy problems in 1,000 draws)
    seq = d.pick(tuple(range(64, 1025, 8)))
    n = n_seq * seq
    ask = d.pick((("selected", "mask"), ("random", "unchanged"), ("mask", "random", "unchanged", "selected", "not_mask"))[d.level])
    c = expected_counts(n)
    value = {"not_mask": n - c["mask"]}.get(ask, c.get(ask))
    key = nat_key(float(value), 2)
    what = {
        "mask": "replaced by the [MASK] token",
        "random": "replaced by a random token",
        "unchanged": "selected for prediction but left unchanged",
        "selected": "whose prediction enters the MLM loss",
        "not_mask": "that are **not** the [MASK] token in the model's input",
    }[ask]
    wrongs = [
        Wrong("fraction_of_all_tokens", "applied 80/10/10 to all tokens", "The 80/10/10 split applies to the 15 % selected positions only.",
              float(n * SPLIT[ask]) if ask in SPLIT else None),
        Wrong("all_selected_masked", "took all 15 % as [MASK]", "Only 80 % of the selected positions become [MASK].",
              float(c["selected"]) if ask == "mask" else (float(n - c["selected"]) if ask == "not_mask" else None)),
        Wrong("loss_on_mask_only", "counted only the [MASK] positions in the loss",
              "The loss covers every selected position, including the random and unchanged ones.",
              float(c["mask"]) if ask == "selected" else None),
        Wrong("loss_on_all", "counted every token in the loss", "Only the 15 % selected positions are predicted.",
              float(n) if ask == "selected" else None),
        Wrong("random_unchanged_swapped", "took 10 % of all tokens", "It is 10 % of the 15 % selected: 1.5 % of all tokens.",
              float(n * Fraction(10, 100)) if ask in ("random", "unchanged") else None),
    ]
    mis = keep_distinct(key, wrongs)
    st = Doc()
    where = f"a sequence of {seq} tokens" if n_seq == 1 else f"a batch of {n_seq} sequences of {seq} tokens each"
    st.p(f"BERT pre-training selects 15 % of the token positions for masked language modelling; of the selected positions 80 % "
         f"are replaced by [MASK], 10 % by a random token and 10 % are left unchanged. For {where}, what is the expected "
         f"number of positions {what}? Round off to two decimal places.")
    sol = Doc()
    if n_seq > 1:
        sol.p(f"The batch holds $N = {n_seq} \\times {seq} = {n}$ tokens; every sequence is masked the same way.")
    sol.p(f"N = {n} tokens. Selected: $0.15 \\times {n} = {num(float(c['selected']), 4)}$.")
    sol.p(f"[MASK]: $0.8 \\times {num(float(c['selected']), 4)} = {num(float(c['mask']), 4)}$; random: "
          f"$0.1 \\times {num(float(c['selected']), 4)} = {num(float(c['random']), 4)}$; unchanged: ${num(float(c['unchanged']), 4)}$.")
    if ask in ("random", "unchanged"):
        sol.p(f"That is 10 % of the {num(float(c['selected']), 4)} selected positions, not 10 % of all {n} tokens "
              f"({num(0.1 * n, 4)}).")
    if ask == "not_mask":
        sol.p(f"Not [MASK]: ${n} - {num(float(c['mask']), 4)} = {num(float(value), 4)}$.")
    if ask == "selected":
        sol.p("The loss is computed on every selected position (including the random and unchanged ones).")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"n_tokens": n, "n_sequences": n_seq, "seq_len": seq, "ask": ask})
