"""GATE's marking table, question by question (drills.exam.marking).

The expected values are GATE's published rules, written here as literal fractions:
a wrong 1-mark MCQ costs 1/3, a wrong 2-mark MCQ 2/3; MSQ and NAT never cost anything;
an unanswered question scores 0; a right answer scores the question's marks.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from drills.exam.marking import NotOnPaper, mark, max_marks, negative_marks, paper_type


@pytest.mark.parametrize(
    ("qtype", "marks", "outcome", "awarded", "lost"),
    [
        ("mcq", 1, "correct", Fraction(1), Fraction(0)),
        ("mcq", 2, "correct", Fraction(2), Fraction(0)),
        ("mcq", 1, "wrong", Fraction(-1, 3), Fraction(1, 3)),
        ("mcq", 2, "wrong", Fraction(-2, 3), Fraction(2, 3)),
        ("mcq", 1, "unanswered", Fraction(0), Fraction(0)),
        ("mcq", 2, "unanswered", Fraction(0), Fraction(0)),
        ("msq", 1, "correct", Fraction(1), Fraction(0)),
        ("msq", 2, "correct", Fraction(2), Fraction(0)),
        ("msq", 1, "wrong", Fraction(0), Fraction(0)),  # a partially right MSQ is "wrong": 0, never negative
        ("msq", 2, "wrong", Fraction(0), Fraction(0)),
        ("msq", 2, "unanswered", Fraction(0), Fraction(0)),
        ("nat", 1, "correct", Fraction(1), Fraction(0)),
        ("nat", 2, "correct", Fraction(2), Fraction(0)),
        ("nat", 1, "wrong", Fraction(0), Fraction(0)),
        ("nat", 2, "wrong", Fraction(0), Fraction(0)),
        ("nat", 1, "unanswered", Fraction(0), Fraction(0)),
        # qkv's integer problems are marked as NAT
        ("integer", 2, "correct", Fraction(2), Fraction(0)),
        ("integer", 2, "wrong", Fraction(0), Fraction(0)),
    ],
)
def test_marking_table(qtype, marks, outcome, awarded, lost):
    m = mark(qtype, marks, outcome)
    assert m.awarded == awarded
    assert m.negative == lost
    assert m.max == marks
    assert m.awarded == (marks if outcome == "correct" else -lost)


def test_negative_marks_are_exact_thirds():
    assert negative_marks("mcq", 1) == Fraction(1, 3)
    assert negative_marks("mcq", 2) == Fraction(2, 3)
    assert negative_marks("msq", 2) == 0 and negative_marks("nat", 2) == 0
    # three wrong 1-mark MCQs cost exactly one mark (no float drift)
    assert sum((mark("mcq", 1, "wrong").awarded for _ in range(3)), Fraction(0)) == -1


def test_types_on_a_paper():
    assert [paper_type(t) for t in ("mcq", "msq", "nat", "integer")] == ["mcq", "msq", "nat", "nat"]
    with pytest.raises(NotOnPaper):
        paper_type("matrix")
    with pytest.raises(NotOnPaper):
        mark("matrix", 1, "correct")
    with pytest.raises(NotOnPaper):
        mark("mcq", 3, "wrong")
    with pytest.raises(ValueError):
        mark("mcq", 1, "partial")


def test_max_marks():
    assert max_marks([1, 1, 2, 2, 2]) == 8
    with pytest.raises(NotOnPaper):
        max_marks([1, 0])
