"""The problem model: what a question is, whatever produced it.

A :class:`Problem` comes from a family (a generator, ``question_bank.families``) or from a
curated data file (``question_bank/data/*.toml``); the quiz, the checker, sheets and exams
read only this shape. Keys are values the solver computed; grading lives in
``question_bank.grading``; text→value parsing of what a student types lives in ``drills``.

Types (GATE's three, plus two that drills need):

- ``mcq``: one correct option of four; key :class:`ChoiceKey` with one index.
- ``msq``: one or more correct options; :class:`ChoiceKey`, all-or-nothing.
- ``nat``: a number; :class:`NumericKey` with the exact value, the rounding the statement
  asks for (``decimals``) and the accepted GATE-style range ``[lo, hi]``.
- ``integer``: an exact integer (parameter counts); :class:`IntegerKey`.
- ``matrix``: a matrix keyed elementwise; :class:`MatrixKey` with a tolerance.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ProblemType = Literal["mcq", "msq", "nat", "integer", "matrix"]
PROBLEM_TYPES: tuple[str, ...] = ("mcq", "msq", "nat", "integer", "matrix")
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")


@dataclass(frozen=True)
class NumericKey:
    """A NAT key: ``value`` exact (a float, or an int), the statement's rounding, and the range
    ``[lo, hi]`` that GATE would accept (inclusive)."""

    value: float
    lo: float
    hi: float
    decimals: int | None = None  # "round off to two decimal places" -> 2
    unit: str = ""  # "", "bytes", "GiB", "FLOPs", ...
    #: the power of ten one unit of the answer stands for, when the unit does not say it: 20 for
    #: "give C in units of 10²⁰ FLOPs", 9 for "give N in billions" with no unit written (0: the unit
    #: says it, see ``question_bank.grading.keys.key_factor``)
    scale: int = 0


@dataclass(frozen=True)
class IntegerKey:
    value: int
    unit: str = ""
    rel_tol: float = 0.0  # 0: exact; a family may accept e.g. 1e-3 when it says "in millions"


@dataclass(frozen=True)
class MatrixKey:
    value: tuple[tuple[float, ...], ...]  # rows
    abs_tol: float = 5e-3
    decimals: int | None = None


@dataclass(frozen=True)
class ChoiceKey:
    correct: frozenset[int]  # indices into Problem.options (0 = a)


Key = NumericKey | IntegerKey | MatrixKey | ChoiceKey


@dataclass(frozen=True)
class Misconception:
    """A typical wrong path, computed by the solver with the mistake applied.

    ``value`` has the shape of the key's value (a number, a matrix as rows, or for choice
    problems the option index the mistake leads to).

    ``inverse`` (issue 38) names the mistake made the other way round, when that is a mistake a
    student makes in its own right: the label of the value a numeric MCQ offers on the other side
    of the key (:func:`question_bank.numeric_mcq.mirror`: ``k²/v`` for a NAT key, ``2k − v`` for an
    integer key), e.g. "forgot to divide by h" ↔ "divided by h twice". None: the mistake has no
    such inverse and is not mirrored; ``inverse_value`` is that mistake's value when the family computes
    it (a slip that adds or drops a term), else the mirror's. Not part of equality (an export does not
    carry them)."""

    id: str  # stable: "no_sqrt_dk_scaling"
    label: str  # short: "forgot to divide by √dₖ"
    feedback: str  # to the student: "This is the result without dividing by √dₖ."
    value: Any
    inverse: str | None = field(default=None, compare=False)  # "divided by √dₖ twice"
    #: the inverse mistake's own value, when the family computes it (an additive slip: "counted the scales
    #: twice" for "forgot the scales"); None: ``mirror`` of ``value``
    inverse_value: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Wrong:
    """A typical mistake, as a family or a curated item's computation describes it: its id, short
    label, the feedback sentence, and the value the solver computes with the mistake applied.

    It becomes a problem's :class:`Misconception` with :meth:`misconception`; a choice problem
    passes the index of the option the mistake picks as ``value``; ``inverse`` labels the mistake made
    the other way round (:attr:`Misconception.inverse`)."""

    id: str
    label: str
    feedback: str
    value: Any
    inverse: str | None = None
    inverse_value: Any = None

    def misconception(self, value: Any = None) -> Misconception:
        return Misconception(self.id, self.label, self.feedback, self.value if value is None else value, self.inverse,
                             self.inverse_value)


#: Kinds of :class:`Erratum` (issue 12: a paper's rounding is not an error, and is shown apart).
ERRATUM_KINDS: tuple[str, ...] = ("error", "rounding")


@dataclass(frozen=True)
class Erratum:
    """A figure of a source text that the solver disagrees with.

    ``kind``: ``"error"`` (the text is wrong, or its figure cannot be derived from what it
    states) or ``"rounding"`` (a rounding note: the printed figure is the source's own rounding
    of the exact one, or a model's name such as "1.5B", not an error). The quiz can show the
    two apart: "Erratum" vs "Rounding note"."""

    where: str  # "004_83489721195aedaa.txt §19 GATE Q3"
    printed: str  # the figure as printed
    exact: str  # the solver's figure
    reason: str  # a different convention, or a plain error, explained
    kind: str = "error"  # one of ERRATUM_KINDS


@dataclass
class Part:
    """One part of a multi-part problem ((a) QKᵀ, (b) scaled, (c) weights, (d) output).

    ``follow`` computes this part's key from the student's answers to the earlier parts
    (a dict label -> value), for follow-through marking; ``None`` when the part stands alone.
    """

    label: str
    type: ProblemType
    prompt_md: str
    prompt_text: str
    key: Key
    misconceptions: list[Misconception] = field(default_factory=list)
    follow: Callable[[dict[str, Any]], Key] | None = None


@dataclass
class Problem:
    id: str  # "attention.by_hand/1234" for a generated variant; the item id for curated ones
    family: str | None  # family id, or None for a curated item
    seed: int | None
    topic: str  # "attention", "counting", "positional", "normalisation", "hardware", ...
    tags: tuple[str, ...]
    difficulty: str  # easy | medium | hard
    marks: int  # 1 or 2
    type: ProblemType
    statement_md: str  # Markdown with LaTeX math ($...$, $$...$$)
    statement_text: str  # plain Unicode for the terminal (QKᵀ/√dₖ)
    key: Key
    solution_md: str
    solution_text: str
    given: dict[str, Any] = field(default_factory=dict)
    options: list[str] = field(default_factory=list)  # MCQ/MSQ, Markdown
    options_text: list[str] = field(default_factory=list)  # MCQ/MSQ, plain Unicode
    misconceptions: list[Misconception] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)  # empty for single-answer problems
    source: str = "generated"  # or "004_83489721195aedaa.txt §19 GATE Q3"
    source_label: str = ""  # "GATE Q3", "B5", "Worked Example 1"
    hints: list[str] = field(default_factory=list)
    errata: list[Erratum] = field(default_factory=list)
    explanation: str = ""  # for conceptual MCQ/MSQ: why the key is right
    # Curated only (issue 12): non-empty when the item cannot be answered from what the student
    # sees (e.g. a seeded program's output); the reason. Shown with its worked answer, never graded:
    # question_bank.curated.index() and bank.entries() leave it out unless asked.
    study_only: str = ""
    # What a student is shown as the source (issue 12: a title and section, never a file name):
    # "Chapter 15: Transformers and Attention Mechanisms, §19 GATE / Exam Corner"; "" when generated.
    # ``source`` keeps the seed file for tools (issue 4's listing).
    source_title: str = ""
    # Who vouches for the key (issue 27): "qkv" (the solver computed it) or "teacher" (a sheet read
    # back with ``qkv sheet --from`` whose teacher edited the statement or key and marked the key as
    # their own). Written to JSON only when "teacher".
    key_source: str = "qkv"


_SOURCE_FILE = re.compile(r"\b\d{3}_[0-9a-f]{16}\.txt\s*")


def source_shown(p: Problem) -> str:
    """Where a problem comes from, as a student sees it: the source's title and section, never
    its file name (``"generated"`` for a generated problem)."""
    if p.source == "generated":
        return "generated"
    return p.source_title or _SOURCE_FILE.sub("", p.source).strip()


def erratum_place(p: Problem, e: Erratum) -> str:
    """The place of an erratum as a student sees it: the source's title and section, then the
    figure (``e.where`` keeps the file name for maintainers)."""
    if p.source_title and e.where.startswith(p.source):
        return f"{p.source_title}, {e.where[len(p.source):].strip()}"
    return _SOURCE_FILE.sub("", e.where).strip()


def erratum_heading(e: Erratum) -> str:
    """"Erratum" for an error of the source, "Rounding note" for its own rounding."""
    return "Rounding note" if e.kind == "rounding" else "Erratum"


def key_value(key: Key) -> Any:
    """The plain answer a key holds: a number, rows, or the sorted correct option indices."""
    if isinstance(key, ChoiceKey):
        return sorted(key.correct)
    if isinstance(key, MatrixKey):
        return [list(r) for r in key.value]
    return key.value


def key_to_json(key: Key) -> dict[str, Any]:
    if isinstance(key, NumericKey):
        return {"kind": "numeric", "value": key.value, "lo": key.lo, "hi": key.hi, "decimals": key.decimals, "unit": key.unit}
    if isinstance(key, IntegerKey):
        return {"kind": "integer", "value": key.value, "unit": key.unit, "rel_tol": key.rel_tol}
    if isinstance(key, MatrixKey):
        return {"kind": "matrix", "value": [list(r) for r in key.value], "abs_tol": key.abs_tol, "decimals": key.decimals}
    return {"kind": "choice", "correct": sorted(key.correct)}


def _mis_json(m: Misconception) -> dict[str, Any]:
    v = m.value
    if isinstance(v, tuple):
        v = [list(r) if isinstance(r, tuple) else r for r in v]
    elif isinstance(v, frozenset | set):
        v = sorted(v)
    return {"id": m.id, "label": m.label, "feedback": m.feedback, "value": v}


def problem_to_json(p: Problem) -> dict[str, Any]:
    """The whole problem as plain JSON data (answer included; ``Part.follow`` omitted)."""
    return {
        "id": p.id,
        "family": p.family,
        "seed": p.seed,
        "kind": "family" if p.family else "curated",
        "topic": p.topic,
        "tags": list(p.tags),
        "difficulty": p.difficulty,
        "marks": p.marks,
        "type": p.type,
        "statement_md": p.statement_md,
        "statement_text": p.statement_text,
        "options": list(p.options),
        "options_text": list(p.options_text),
        "key": key_to_json(p.key),
        "answer": key_value(p.key),
        "solution_md": p.solution_md,
        "solution_text": p.solution_text,
        "given": p.given,
        "misconceptions": [_mis_json(m) for m in p.misconceptions],
        "parts": [
            {
                "label": pt.label,
                "type": pt.type,
                "prompt_md": pt.prompt_md,
                "prompt_text": pt.prompt_text,
                "key": key_to_json(pt.key),
                "misconceptions": [_mis_json(m) for m in pt.misconceptions],
                "follow_through": pt.follow is not None,
            }
            for pt in p.parts
        ],
        "source": p.source,
        "source_label": p.source_label,
        "hints": list(p.hints),
        "errata": [{"where": e.where, "printed": e.printed, "exact": e.exact, "reason": e.reason, "kind": e.kind}
                   for e in p.errata],
        "explanation": p.explanation,
        "study_only": p.study_only,
        "source_title": p.source_title,
        **({"key_source": p.key_source} if p.key_source != "qkv" else {}),
    }


def extra_explanation(p: Problem) -> str:
    """The explanation, when it says more than the worked solution (curated conceptual items
    often make the explanation their whole solution: then it is shown once, as the solution)."""
    text = p.explanation.strip()
    return "" if not text or text in p.solution_md else text
