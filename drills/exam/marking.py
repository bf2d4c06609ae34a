"""GATE marking rules, as a small pure module (no I/O, no grading of answers).

The rules of the GATE examination (Graduate Aptitude Test in Engineering) for its three
question types, each question worth 1 or 2 marks:

=======================  ==============  ===============================  ==========
question type            answered right  answered wrong                   unanswered
=======================  ==============  ===============================  ==========
MCQ (one option)         + marks         −⅓ (1-mark) / −⅔ (2-mark)         0
MSQ (one or more)        + marks         0 (all or nothing: no partial)   0
NAT (numerical answer)   + marks         0                                0
=======================  ==============  ===============================  ==========

MSQ is all or nothing: choosing some but not all of the correct options, or one wrong option
besides them, is "wrong" (0 marks, never negative). Whether an answer is right is decided by
:func:`question_bank.grading.grade`; this module only turns that outcome into marks.

qkv's two extra problem types
-----------------------------
- ``integer`` (an exact count, e.g. a parameter count) goes on a paper as a NAT question: GATE's
  numerical answers are often integers, and its accepted "range" is then a single value. It is
  marked like NAT (no negative marks).
- ``matrix`` (entrywise-keyed matrices) has no GATE counterpart (GATE gives no per-entry
  credit), so it never goes on an exam paper: :func:`paper_type` raises :class:`NotOnPaper`.

Marks are exact :class:`fractions.Fraction` values (−⅓ is not a float); round for display only
(GATE reports scores to two decimal places).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "GATE_TYPES",
    "PAPER_TYPES",
    "MARK_VALUES",
    "NotOnPaper",
    "QuestionMarks",
    "paper_type",
    "negative_marks",
    "mark",
    "max_marks",
    "paper_marks",
]

#: GATE's three question types.
GATE_TYPES: tuple[str, ...] = ("mcq", "msq", "nat")
#: qkv problem types that may appear on a paper, and the GATE type they are marked as.
PAPER_TYPES: dict[str, str] = {"mcq": "mcq", "msq": "msq", "nat": "nat", "integer": "nat"}
#: A question is worth 1 or 2 marks.
MARK_VALUES: tuple[int, ...] = (1, 2)

#: Fraction of a question's marks lost for a wrong answer, by GATE type.
_PENALTY: dict[str, Fraction] = {"mcq": Fraction(1, 3), "msq": Fraction(0), "nat": Fraction(0)}

OUTCOMES: tuple[str, ...] = ("correct", "wrong", "unanswered")


class NotOnPaper(ValueError):
    """A problem type that GATE's marking cannot mark (``matrix``), or marks other than 1 or 2."""


@dataclass(frozen=True)
class QuestionMarks:
    """The marks of one question: ``awarded`` (signed: negative for a wrong MCQ), ``negative``
    (marks lost, ≥ 0), the question's ``max`` marks and the ``outcome``."""

    awarded: Fraction
    negative: Fraction
    max: int
    outcome: str


def paper_type(problem_type: str) -> str:
    """The GATE type a qkv problem type is marked as (``integer`` -> ``nat``); raises
    :class:`NotOnPaper` for ``matrix`` and unknown types."""
    try:
        return PAPER_TYPES[problem_type]
    except KeyError:
        raise NotOnPaper(f"{problem_type!r} problems are not part of a GATE paper "
                         f"(types on a paper: {', '.join(PAPER_TYPES)})") from None


def _check_marks(marks: int) -> int:
    if marks not in MARK_VALUES:
        raise NotOnPaper(f"a GATE question is worth 1 or 2 marks, not {marks!r}")
    return int(marks)


def negative_marks(problem_type: str, marks: int) -> Fraction:
    """Marks lost for a wrong answer (≥ 0): ⅓ of ``marks`` for an MCQ, 0 for MSQ and NAT."""
    return _PENALTY[paper_type(problem_type)] * _check_marks(marks)


def mark(problem_type: str, marks: int, outcome: str) -> QuestionMarks:
    """The marks for one question whose answer was ``correct``, ``wrong`` or ``unanswered``."""
    m = _check_marks(marks)
    if outcome == "correct":
        paper_type(problem_type)
        return QuestionMarks(Fraction(m), Fraction(0), m, outcome)
    if outcome == "wrong":
        lost = negative_marks(problem_type, m)
        return QuestionMarks(-lost, lost, m, outcome)
    if outcome == "unanswered":
        paper_type(problem_type)
        return QuestionMarks(Fraction(0), Fraction(0), m, outcome)
    raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")


def paper_marks(problem_type: str, marks: int, outcome: str, penalties: dict[str, Fraction] | None = None,
                partial: tuple[str, ...] | list[str] = (), chosen: frozenset[int] | set[int] | None = None,
                key: frozenset[int] | None = None) -> QuestionMarks:
    """The marks of one question on a blueprint's paper: :func:`mark`, with the blueprint's own
    penalties (per GATE type, the fraction of the marks a wrong answer costs) and, for a type in
    ``partial`` (``msq``), partial credit: a wrong MSQ whose ``chosen`` options are all in the
    ``key`` earns ``marks × len(chosen) / len(key)`` (one wrong option: the wrong answer's marks)."""
    m = mark(problem_type, marks, outcome)
    gate = paper_type(problem_type)
    if outcome != "wrong":
        return m
    if gate in partial and chosen and key and set(chosen) < set(key):
        got = Fraction(m.max * len(chosen), len(key))
        return QuestionMarks(got, Fraction(0), m.max, "partial")
    if penalties is not None:
        lost = Fraction(penalties.get(gate, 0)) * m.max
        return QuestionMarks(-lost, lost, m.max, m.outcome)
    return m


def max_marks(marks: list[int] | tuple[int, ...]) -> int:
    """The maximum score of a paper: the sum of its questions' marks."""
    return sum(_check_marks(m) for m in marks)
