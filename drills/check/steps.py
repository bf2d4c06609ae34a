"""Check a hand computation step by step against the solver's trace.

A student gives the inputs of a kernel (attention, softmax, LayerNorm, RMSNorm, sinusoidal PE,
RoPE) and whichever intermediate results they worked out, named as in :mod:`solver.trace`.
Each given step is judged against the exact step of the solver's trace; a step that is wrong
is then

* re-judged by **follow-through**: when an earlier step the student gave was wrong, a later
  step is also compared with what follows from *their* earlier values (weights judged as the
  softmax of *their* scaled scores); matching it, the step counts as right "given your
  previous step" and the first wrong step stays the earlier one;
* **diagnosed**: the step is recomputed with typical mistakes applied (scores not scaled,
  softmax over the columns, biased/unbiased variance, sin and cos swapped, ...) by calling
  the solver kernels with the mistaken arguments (``scale=1``, ``axis=-2``, ``layout=...``);
  the first variant that matches names the likely mistake.

Tolerances (the named comparators of :mod:`question_bank.grading`, with their edge cases):

* an entry typed as a decimal with *k* places (``0.707``) is right when it is within half a
  unit of its last place of the exact value, plus a float slack of ``1e-9·max(1, |exact|)``:
  exactly the values that are a correct rounding of the exact value to *k* places, ties
  included. A matrix is judged at the most places any of its entries shows, so the ``0`` in
  ``0.707 0 0.707`` is judged to 3 places, not to 0;
* a step typed with integers only (``1 0 1``) or with expressions (``sqrt(2)/2``) is compared
  exactly (to the float slack);
* −∞ (typed ``-inf`` or ``−∞``) matches only −∞; the usual stand-in −1e9 (anything ≤ −1e9)
  is accepted for a −∞ entry and said so; NaN is never right.

This module imports numpy at the top (the check path needs it) but neither torch nor sympy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The tolerance comparators are the judge's (``question_bank.grading``): the checker, the quiz,
# the exam and the Moodle ranges compare numbers with the same functions.
from question_bank.grading import judge_as_written

# ============================================================================ typed values


@dataclass(frozen=True)
class Typed:
    """A step value as the student typed it: floats, and the places each entry shows
    (−1 for an integer or an expression)."""

    text: str
    values: np.ndarray
    places: np.ndarray

    @property
    def decimals(self) -> int | None:
        """The places the step is judged at (None: exactly)."""
        k = int(self.places.max()) if self.places.size else -1
        return k if k > 0 else None


class ReadError(ValueError):
    """A step value that cannot be read; ``str(e)`` is one line."""


def read_value(text: str, *, vector: bool = False, scalar: bool = False) -> Typed:
    """Read a matrix, vector or number typed by the student with the one answer reader
    (:mod:`drills.answers`: never evaluated), keeping the decimals each entry shows.
    ``-inf``/``−∞`` are allowed as entries."""
    from drills.answers import AnswerParseError, parse_matrix, parse_number, parse_vector

    try:
        if scalar:
            p = parse_number(text)
            if p.dimension or p.unit:
                raise ReadError("a plain number is expected here (no unit)")
            values, places = np.array(float(p.value)), np.array(-1 if p.decimals is None else p.decimals)
        else:
            pm = parse_vector(text, allow_inf=True) if vector else parse_matrix(text, allow_inf=True)
            values = np.array(pm.rows, dtype=float)
            places = np.array([[-1 if d is None else d for d in row] for row in pm.decimals])
            if vector:
                values, places = values[0], places[0]
    except AnswerParseError as e:
        raise ReadError(str(e)) from None
    places = np.where(np.isfinite(values) & (places > 0), places, -1)
    return Typed(text.strip(), values, places)


def judge(given: Typed, expected: Any) -> tuple[bool, list[tuple[int, ...]], str]:
    """(right?, wrong entries (indices), tolerance text) of ``given`` against ``expected``, each
    entry at the precision the student wrote (:func:`question_bank.grading.judge_as_written`)."""
    v = judge_as_written(given.values, given.places, expected)
    return v.ok, list(v.wrong), v.tolerance


def _plain_int(x: float) -> bool:
    return math.isfinite(x) and float(x).is_integer()


def _shape(a: np.ndarray) -> str:
    return "×".join(str(s) for s in a.shape) if a.ndim else "scalar"


def matches_either(given: Typed, expected: Any, candidate: Any) -> bool:
    """Every entry of ``given`` is right against ``expected`` or against ``candidate`` (what
    follows from the student's own rounded earlier step): a student who carries their rounded
    weights into A·V but writes the plain 2 where every value is 2 is right in both places."""
    try:
        c = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    if c.shape != given.values.shape:
        return False
    wrong_exact = set(judge(given, expected)[1])
    return not (wrong_exact & set(judge(given, c)[1]))


def matches(given: Typed, candidate: Any) -> bool:
    try:
        c = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return c.shape == given.values.shape and judge(given, c)[0]


#: the judge's words (question_bank.grading.judge, "rounded wrongly") for a value cut off at the last digit
TRUNCATED = "truncated instead of rounded off"


def truncated(given: Typed, expected: Any) -> bool:
    """Every wrong entry of ``given`` is the exact value cut off (not rounded) at the places it shows, and
    cutting off differs from rounding there: 0.66 for 0.6652 (issue 38: the quiz names this, the checker
    said "none of the usual ones")."""
    try:
        e = np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    if e.shape != given.values.shape:
        return False
    wrong = judge(given, e)[1]
    if not wrong:
        return False
    for idx in wrong:
        places = int(given.places[idx])
        x, v = float(e[idx]), float(given.values[idx])
        if places <= 0 or not math.isfinite(x):
            return False
        cut = math.trunc(x * 10**places) / 10**places
        if abs(v - cut) > 1e-9 * max(1.0, abs(v)) or abs(round(x, places) - cut) < 10**-places / 2:
            return False
    return True


# ============================================================================ the report


@dataclass
class StepCheck:
    """The verdict on one step."""

    name: str
    label: str
    given: Typed
    expected: Any
    ok: bool
    tolerance: str
    follow_through: bool = False
    from_previous: Any = None  # what follows from the student's earlier values, when used
    mistake: str | None = None
    wrong_cells: list[tuple[int, ...]] = field(default_factory=list)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "label": self.label, "given": _jsonable(self.given.values),
            "given_text": self.given.text, "expected": _jsonable(self.expected), "ok": self.ok,
            "follow_through": self.follow_through, "mistake": self.mistake, "tolerance": self.tolerance,
            "expected_from_your_previous": None if self.from_previous is None else _jsonable(self.from_previous),
            "wrong_cells": [list(c) for c in self.wrong_cells], "note": self.note,
        }


def _jsonable(v: Any) -> Any:
    a = np.asarray(v, dtype=float)
    return a.tolist() if a.ndim else float(a)


@dataclass
class CheckReport:
    kernel: str
    steps: list[StepCheck]
    conventions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def first_wrong(self) -> StepCheck | None:
        return next((s for s in self.steps if not s.ok), None)

    def to_json(self) -> dict[str, Any]:
        fw = self.first_wrong
        return {"ok": self.ok, "kernel": self.kernel, "steps": [s.to_json() for s in self.steps],
                "first_wrong": None if fw is None else fw.name, "conventions": self.conventions}


# ============================================================================ chains

Mistakes = list[tuple[str, Any]]


@dataclass
class Chain:
    """A kernel's steps, its exact values, and how to recompute a step from the student's work.

    ``follow(name, theirs)`` returns what step ``name`` should be given the student's values
    ``theirs`` (name → array of the steps they gave before it), or None when nothing of theirs
    feeds it. ``mistakes(name, theirs)`` lists (description, value) of typical mistakes.
    ``alternatives(name)`` lists (description, value) of other *right* conventions (an
    unshifted exp in softmax).
    """

    kernel: str
    names: list[str]
    labels: dict[str, str]
    exact: dict[str, Any]
    follow: Callable[[str, dict[str, np.ndarray]], Any]
    mistakes: Callable[[str, dict[str, np.ndarray]], Mistakes]
    alternatives: Callable[[str], Mistakes] = lambda name: []
    conventions: dict[str, str] = field(default_factory=dict)


def check_chain(chain: Chain, given: dict[str, Typed]) -> CheckReport:
    """Judge every given step of ``chain`` (in the chain's order); see the module docstring."""
    unknown = [n for n in given if n not in chain.names]
    if unknown:
        raise ValueError(f"no step {unknown[0]!r} in {chain.kernel}; steps are {chain.names}")
    steps: list[StepCheck] = []
    theirs: dict[str, np.ndarray] = {}
    any_wrong_before = False
    for name in chain.names:
        if name not in given:
            continue
        g = given[name]
        expected = chain.exact[name]
        ok, wrong, tol = judge(g, expected)
        sc = StepCheck(name, chain.labels.get(name, name), g, expected, ok, tol, wrong_cells=wrong)
        if not ok:
            for desc, alt in chain.alternatives(name):
                if matches(g, alt):
                    sc.ok, sc.wrong_cells, sc.note = True, [], f"right ({desc})"
                    break
        if not sc.ok and theirs:
            ft = safe(lambda name=name: chain.follow(name, dict(theirs)))
            if ft is not None and (matches(g, ft) or matches_either(g, expected, ft)):
                sc.from_previous = ft
                sc.ok, sc.wrong_cells = True, []
                if any_wrong_before:
                    sc.follow_through = True
                    sc.note = "right given your previous step"
                else:  # carried rounding: right at the precision the student works at (as the quiz judges)
                    sc.note = ("right: it follows from your rounded previous step (the exact value differs "
                               "in the last place only because of that rounding)")
        if not sc.ok and sc.mistake is None:
            for desc, variant in safe(lambda name=name: chain.mistakes(name, dict(theirs))) or []:
                if variant is not None and matches(g, variant) and not matches(g, expected):
                    sc.mistake = desc
                    break
        if not sc.ok and sc.mistake is None and truncated(g, expected):
            sc.mistake = TRUNCATED  # the quiz's and the exam's words for the same slip (issue 38)
        if not sc.ok:
            any_wrong_before = True
        theirs[name] = g.values
        steps.append(sc)
    return CheckReport(chain.kernel, steps, chain.conventions)


def safe(fn: Callable[[], Any]) -> Any:
    """Run a recomputation; a mistaken variant the solver refuses (a shape that does not fit,
    a row the flipped mask blocks entirely) is simply not a candidate."""
    from solver.errors import SolverInputError

    try:
        with np.errstate(all="ignore"):
            return fn()
    except (SolverInputError, ValueError, FloatingPointError, IndexError, ZeroDivisionError):
        return None


def trace_steps(call: Callable[[], Any]) -> dict[str, Any]:
    """The trace of a solver call as {name: value} (empty when the solver refuses)."""
    out = safe(call)
    return {} if out is None else out[1].values()


def latest(theirs: dict[str, np.ndarray], names: list[str], before: str) -> tuple[str, np.ndarray] | None:
    """The last step the student gave before ``before`` (among ``names``)."""
    earlier = names[: names.index(before)]
    for n in reversed(earlier):
        if n in theirs:
            return n, theirs[n]
    return None
