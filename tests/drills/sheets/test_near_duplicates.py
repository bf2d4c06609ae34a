"""Issue 27: a sheet never asks the same thing twice in other words. The oracle is a hand-made list
of pairs of the bank's questions that ask the same thing (read from their statements and keys), not
the selection's own rule: a sheet holds at most one of each pair, and a conceptual family's
statement at most once."""

from __future__ import annotations

import pytest

from drills.sheets.select import near_duplicate, select_problems
from question_bank import bank as qb
from question_bank.family import get_family

#: pairs of the bank's questions that ask the same thing in other words (judged from their statements and
#: keys; a family id stands for all its variants). Not every pair of a topic: "which is TRUE about BERT's
#: pre-training" and "why is BERT bidirectional, GPT causal" ask different things; so do "problems of RNNs
#: that self-attention fixes" and "reasons Transformers beat RNNs" (problems vs advantages).
SAME_QUESTION = [
    ("004.gate.q4", "attention.why_sqrt_dk"),  # why divide QKᵀ by √dₖ
    ("002.interview.answer", "004.interview.why_beat_rnns"),  # why Transformers replaced RNNs
    ("002.interview.answer", "002.s.rnn_problems"),
    ("002.s.rnn_problems", "004.interview.why_beat_rnns"),
    ("001.s1.rnn_problems", "002.s.rnn_problems"),  # problems of RNNs and their remedies
    ("000.concept.bert_vs_gpt", "004.gate.q5"),  # BERT: bidirectional, masked LM
    ("000.concept.bert_vs_gpt", "004.ex.a4"),  # BERT bidirectional vs GPT causal
]


def _check(problems) -> None:
    ids = {p.id.split("/")[0] for p in problems} | {p.id for p in problems}
    both = [(a, b) for a, b in SAME_QUESTION if a in ids and b in ids]
    assert not both, both
    stmts = [(p.family, " ".join(p.statement_text.split())) for p in problems if p.family and p.type in ("mcq", "msq")
             and not any(c.isdigit() for c in p.statement_text if c.isascii())]
    assert len(stmts) == len(set(stmts))


def test_the_rule_on_known_pairs():
    cur = {i: qb.problem(i) for i in ("004.gate.q4", "002.interview.answer", "004.interview.why_beat_rnns",
                                      "004.gate.q2")}
    fam = get_family("attention.why_sqrt_dk")
    a, b = fam.generate(1, "medium"), fam.generate(2, "medium")
    assert a.options != b.options and near_duplicate(a, b)  # the same statement, other options drawn
    assert near_duplicate(cur["004.gate.q4"], a) and near_duplicate(a, cur["004.gate.q4"])
    assert near_duplicate(cur["002.interview.answer"], cur["004.interview.why_beat_rnns"])
    flash = get_family("complexity.attention_variants").generate(1, "easy")  # FlashAttention's complexity
    assert not near_duplicate(cur["004.gate.q2"], flash)  # self-attention's: another question
    nums = get_family("counting.params_mha")
    assert not near_duplicate(nums.generate(1, "easy"), nums.generate(1, "easy"))  # numeric: never by this rule


def test_every_why_sqrt_dk_frame_is_gate_q4_s_question():
    """Every sentence frame of both levels of attention.why_sqrt_dk (issue 22) is found the same question as GATE Q4:
    its key shares a word with GATE's (the softmax, dₖ, saturation, gradients)."""
    from question_bank.families.scaling import _WHY_FRAMES

    gate = qb.problem("004.gate.q4")
    fam = get_family("attention.why_sqrt_dk")
    for lvl, diff in enumerate(fam.levels):
        keys = set()
        for s in range(60):
            p = fam.generate(s, diff)
            keys.add(p.options[next(iter(p.key.correct))])
            assert near_duplicate(gate, p) and near_duplicate(p, gate), (p.id, p.options_text)
        assert len(keys) == len(_WHY_FRAMES[lvl]), (diff, len(keys))


def test_a_conceptual_sheet_asks_each_thing_once():
    sel = select_problems(60, 3, types=["mcq", "msq"])
    _check(sel.problems)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1])
def test_a_200_question_sheet_asks_each_thing_once(seed):
    sel = select_problems(200, seed)
    assert len(sel.problems) == 200
    _check(sel.problems)
