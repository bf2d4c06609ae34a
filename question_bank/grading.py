"""Grading: is a student's (already parsed) answer right, how close, and which mistake is it?

Text parsing is not done here (``drills.answers`` turns ``"3/5"`` or ``"0.6 0.4; 0.4 0.6"``
into Python values); :func:`grade` receives a value: a number (int, float, Fraction, Decimal,
a NumPy scalar), a matrix as a list of rows (or a flat list for a one-row key), an option
index (MCQ) or a set of indices (MSQ). Pass ``written=`` the text as typed so that the digits
the student wrote are known (a :class:`decimal.Decimal` value carries them as well).

The NAT rule (:func:`nat_key`)
------------------------------
A statement that says "round off to *d* decimal places" is keyed by

* ``r`` = the exact value rounded half away from zero to *d* decimals (the rounding people do
  on paper: the decimal digits of the double are rounded, so 0.605 -> 0.61);
* the accepted range is the closed interval ``[r - ½·10⁻ᵈ, r + ½·10⁻ᵈ]``: every answer that
  rounds to ``r``, both boundaries included (GATE ranges are inclusive), widened by a float
  slack of ``1e-9·max(1, |r|)`` so that a boundary typed as a decimal is not lost to binary
  representation.

Families keep the exact value at least a tenth of a unit away from a rounding boundary
(:func:`safe_for_rounding`), so a student who rounds an intermediate result does not drop out
of the range by accident. Curated items cannot choose their numbers (they are the source
text's), so when an exact value lies within ``BOUNDARY_MARGIN`` of a unit from a boundary
(e.g. 0.50349 asked to three decimals), the range takes in both roundings (0.503 and 0.504):
a careful hand computation with 4-digit intermediates lands on either side. A misconception
is matched with the same rule around its own rounded value.

Verdict statuses
----------------
``correct``; ``follow_through`` (right given the student's own earlier parts); ``misconception``
(wrong, and equal to a declared typical mistake); ``too_few_digits`` (the exact value rounded
to fewer decimals than asked); ``rounded_wrongly`` (within one unit of the last asked digit of
the exact value but outside the range: truncated, or rounded from rounded intermediates);
``close`` (an integer count within 1 % but not exact); ``partial`` (a matrix with some
entries right); ``wrong_unit`` (an answer in bits for a key in bytes: "you answered in bits;
the key is in bytes (÷ 8)", see :class:`GivenUnit`); ``wrong``; ``invalid`` (unusable: wrong shape, not a number, an option that
does not exist; the quiz asks again and counts nothing); ``unanswered`` (multi-part only).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from question_bank.problem import (
    ChoiceKey,
    IntegerKey,
    Key,
    MatrixKey,
    Misconception,
    NumericKey,
    Part,
    Problem,
)

__all__ = [
    "Verdict",
    "GivenUnit",
    "nat_key",
    "integer_key",
    "matrix_key",
    "choice_key",
    "round_half_up",
    "safe_for_rounding",
    "decimals_written",
    "grade",
    "grade_parts",
    "total_score",
    "accepts",
    "describe_key",
    "values_coincide",
    "nat_range",
    "answer_text",
    "audit_problem",
]

LETTERS = "abcdefghijklmnopqrstuvwxyz"


# --------------------------------------------------------------------------------------------
# the named tolerance comparators: every verdict in qkv (quiz, exam, checker, Moodle ranges)
# compares a number with these, so their edge cases are spelt out once, here.

#: Added to every tolerance, relative to the size of the exact value: a boundary typed as a
#: decimal (0.595) must not be lost to its binary representation.
FLOAT_SLACK = 1e-9
#: An entry at or below this stands for −∞ (the usual stand-in −1e9 for a masked score).
MINUS_INF_STANDIN = -1e9


def slack(exact: float) -> float:
    """The float slack added to every tolerance: 1e-9·max(1, |exact|)."""
    return FLOAT_SLACK * max(1.0, abs(exact))


def within(given: float, exact: float, tolerance: float) -> bool:
    """|given − exact| ≤ tolerance + slack.

    Edge cases: NaN on either side is never right; an infinite exact value is matched only by
    the same infinity (−∞ also by a stand-in ≤ −1e9); an infinite given value never matches a
    finite one. 0 is an ordinary value (no relative test near 0)."""
    if math.isnan(given) or math.isnan(exact):
        return False
    if math.isinf(exact):
        return given == exact or (exact < 0 and given <= MINUS_INF_STANDIN)
    if math.isinf(given):
        return False
    return abs(given - exact) <= tolerance + slack(exact)


def right_to_decimals(given: float, exact: float, decimals: int) -> bool:
    """``given`` is a correct rounding of ``exact`` to ``decimals`` places, ties included:
    |given − exact| ≤ ½·10⁻ᵈ + slack (edge cases: :func:`within`)."""
    return within(given, exact, 0.5 * 10.0 ** (-decimals))


def right_exactly(given: float, exact: float) -> bool:
    """Equal up to the float slack (integers and expressions typed exactly)."""
    return within(given, exact, 0.0)


def right_to_sig_figs(given: float, exact: float, sig: int) -> bool:
    """``given`` is ``exact`` rounded to ``sig`` significant figures (within ½ unit of the last
    figure of ``given``, plus slack). Edge cases: 0 is right only for 0; NaN/inf never."""
    if not (math.isfinite(given) and math.isfinite(exact)):
        return False
    if given == 0 or exact == 0:
        return given == exact
    unit = 10.0 ** (math.floor(math.log10(abs(given))) - sig + 1)
    return abs(given - exact) <= 0.5 * unit + slack(exact)


def tolerance_text(decimals: int | None) -> str:
    if decimals is None:
        return "exact (integers or expressions: compared to 1e-9)"
    return f"to {decimals} decimal place{'s' if decimals != 1 else ''} (within ±{0.5 * 10.0 ** -decimals:g})"


@dataclass(frozen=True)
class EntriesVerdict:
    """Entries judged at the precision the student wrote (see :func:`judge_as_written`):
    ``wrong`` holds the indices of the wrong entries, ``tolerance`` says what was applied."""

    ok: bool
    wrong: tuple[tuple[int, ...], ...]
    tolerance: str


def judge_as_written(given: Any, places: Any, expected: Any) -> EntriesVerdict:
    """Judge an array of values typed by a student against ``expected``, each entry at the
    precision it was written with: ``places`` gives per entry the decimals typed (−1 for an
    integer or an expression). A decimal entry is right when it is a correct rounding of the
    exact entry to its own places (:func:`right_to_decimals`); an integer entry among decimal
    ones is judged at the most places of the array (the ``0`` in ``0.707 0 0.707``); an array
    of integers or expressions only is compared exactly (:func:`right_exactly`). This is how
    ``qkv check`` judges a step: a student who rounds to 2 places is held to 2 places."""
    import numpy as np

    g, exp, pl = np.asarray(given, dtype=float), np.asarray(expected, dtype=float), np.asarray(places)
    if g.shape != exp.shape:
        shape = lambda a: "×".join(str(s) for s in a.shape) if a.ndim else "scalar"  # noqa: E731
        return EntriesVerdict(False, (), f"shape {shape(g)} given, {shape(exp)} expected")
    most = int(pl.max()) if pl.size and pl.max() > 0 else None
    wrong, used = [], set()
    for idx in np.ndindex(exp.shape):
        x, e = float(g[idx]), float(exp[idx])
        d = int(pl[idx]) if pl[idx] > 0 else (most if math.isfinite(x) and x.is_integer() else None)
        used.add(d)
        if not (right_to_decimals(x, e, d) if d is not None else right_exactly(x, e)):
            wrong.append(tuple(int(i) for i in idx))
    decs = sorted(d for d in used if d is not None)
    if len(decs) > 1:
        tol = f"each entry to the decimal places it shows ({decs[0]} to {decs[-1]})"
    else:
        tol = tolerance_text(decs[0] if decs else None)
    return EntriesVerdict(not wrong, tuple(wrong), tol)


# --------------------------------------------------------------------------------------------
# keys


def round_half_up(value: float, decimals: int) -> float:
    """``value`` rounded half away from zero to ``decimals`` places, on its shortest decimal
    spelling (``repr``): 0.605 -> 0.61, 2.5 -> 3, -0.125 -> -0.13."""
    if not math.isfinite(value):
        return value
    q = Decimal(1).scaleb(-decimals)
    return float(Decimal(repr(float(value))).quantize(q, rounding=ROUND_HALF_UP))


def _half_unit(decimals: int) -> float:
    return 0.5 * 10.0 ** (-decimals)


def nat_key(value: float, decimals: int, unit: str = "") -> NumericKey:
    """The NAT key for "round off to ``decimals`` decimal places": ``[r − ½·10⁻ᵈ, r + ½·10⁻ᵈ]``
    around ``r = round_half_up(value, decimals)``, both roundings when the value sits on a
    boundary (see the module docstring and :func:`nat_range`)."""
    if decimals < 0:
        raise ValueError("decimals must be >= 0")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"a NAT key needs a finite value, got {value}")
    lo, hi = nat_range(value, decimals)
    return NumericKey(value=value, lo=lo, hi=hi, decimals=decimals, unit=unit)


def integer_key(value: int, unit: str = "", rel_tol: float = 0.0) -> IntegerKey:
    if int(value) != value:
        raise ValueError(f"an integer key needs an integer, got {value}")
    return IntegerKey(value=int(value), unit=unit, rel_tol=rel_tol)


def matrix_key(rows: Any, decimals: int | None = 2, abs_tol: float | None = None) -> MatrixKey:
    """A matrix keyed entrywise. An entry is accepted when it is within ``abs_tol`` of the
    exact entry (default ½·10⁻ᵈ) or when it lies in the NAT range of that entry at ``decimals``."""
    tup = tuple(tuple(float(x) for x in _row_list(r)) for r in _rows_of(rows))
    if decimals == 0 and abs_tol is None and all(x.is_integer() for r in tup for x in r):
        # an integer matrix (QKᵀ of integer inputs) is keyed exactly: 1.4 does not "round to" 1 here
        return MatrixKey(value=tup, abs_tol=0.0, decimals=None)
    if abs_tol is None:
        abs_tol = _half_unit(decimals) if decimals is not None else 5e-3
    return MatrixKey(value=tup, abs_tol=abs_tol, decimals=decimals)


def choice_key(*correct: int) -> ChoiceKey:
    return ChoiceKey(correct=frozenset(int(c) for c in correct))


#: Every entry of a matrix keyed at d decimals lies at least this many units of 10⁻ᵈ from a
#: rounding boundary: a hand computation with 4-significant-digit intermediates then rounds the
#: same way, and a worked solution's 3-decimal display of an entry (0.665…) never reads as the
#: other rounding of the 2-decimal key.
ENTRY_MARGIN = 0.06


def safe_for_rounding(value: Any, decimals: int, margin: float = 0.1) -> bool:
    """True when ``value`` (a number, or every finite entry of a vector, matrix or array) is at
    least ``margin`` units (of 10⁻ᵈ) away from a rounding boundary, so that answers computed
    from rounded intermediates still round the same way."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return all(safe_for_rounding(x, decimals, margin) for x in value)
    x = float(value)
    if not math.isfinite(x):
        return True
    scaled = abs(x) * 10**decimals
    frac = scaled - math.floor(scaled)
    return abs(frac - 0.5) >= margin


def decimals_written(text: str | None) -> int | None:
    """Digits after the decimal point in a plain decimal as typed (``"0.60"`` -> 2,
    ``"6.02e-1"`` -> 3, ``"3"`` -> 0); None for anything else (``"3/5"``, ``"sqrt(2)"``)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*", text)
    if not m or not (m.group(1) or m.group(2)):
        return None
    frac = len(m.group(2) or "")
    exp = int(m.group(3) or 0)
    return max(0, frac - exp)


# --------------------------------------------------------------------------------------------
# the verdict


@dataclass(frozen=True)
class Verdict:
    """What the student sees, and what progress records.

    ``accepted`` says what was accepted (``"0.595 ≤ x ≤ 0.605 (0.60 to 2 decimal places)"``);
    ``lo``/``hi`` the numeric range (NAT), ``tol`` the per-entry tolerance (matrix);
    ``expected`` the keyed value (a number, rows, or option indices); ``cells`` per-entry
    correctness for a matrix; ``misconception`` the typical mistake the answer equals;
    ``precision`` one of ``too_few_digits``/``rounded_wrongly``/``more_digits``/``fewer_digits``
    (the last two are notes on a correct answer); ``follow_through`` True when a part was
    judged against what follows from the student's earlier parts."""

    correct: bool
    score: float
    status: str
    message: str
    accepted: str = ""
    expected: Any = None
    lo: float | None = None
    hi: float | None = None
    tol: float | None = None
    cells: tuple[tuple[bool, ...], ...] | None = None
    misconception: Misconception | None = None
    precision: str | None = None
    follow_through: bool = False
    label: str | None = None
    invalid: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        m = self.misconception
        return {
            "correct": self.correct,
            "score": self.score,
            "status": self.status,
            "message": self.message,
            "accepted": self.accepted,
            "expected": _plain(self.expected),
            "lo": self.lo,
            "hi": self.hi,
            "tol": self.tol,
            "cells": [list(r) for r in self.cells] if self.cells is not None else None,
            "misconception": None if m is None else {"id": m.id, "label": m.label, "feedback": m.feedback},
            "precision": self.precision,
            "follow_through": self.follow_through,
            "label": self.label,
            "invalid": self.invalid,
        }


@dataclass(frozen=True)
class GivenUnit:
    """The unit a numeric answer was typed in, when the caller converted it to the key's unit
    before grading (the parser lives in ``drills.answers``; this module only explains).

    ``unit`` is the unit as the parser spells it (``"Gbit"``, ``"GB"``, ``"MiB"``),
    ``dimension`` its kind (``"bits"``, ``"bytes"``), ``magnitude`` the number typed before it
    (16 for ``16 Gb``) and ``key_dimension`` the kind of the key's unit. The value handed to
    :func:`grade` is already in the key's unit (16 Gb -> 2 for a key in GB).

    Bits for a key in bytes are a unit mistake, not a silent conversion: the answer scores 0
    with status ``wrong_unit`` and says "you answered in bits; the key is in bytes (÷ 8)" when
    its value in bits is the key times 8, or that ``Gb`` means gigabits when the number typed is
    the key's own (a lower-case b for B). Another unit of the same kind (GB for a GiB key) is
    graded on the converted value, and the verdict shows the conversion."""

    unit: str
    dimension: str
    magnitude: float
    key_dimension: str


def _byte_spelling(bit_unit: str) -> str:
    """The byte unit with the same prefix: Gbit -> GB, Gibit -> GiB, bits -> bytes."""
    return "bytes" if bit_unit == "bits" else bit_unit.replace("bit", "B")


def _with_unit(v: Verdict, key: Key, value: Any, given: GivenUnit | None) -> Verdict:
    """``v`` with the feedback on the unit the answer was typed in (see :class:`GivenUnit`)."""
    if given is None or v.invalid or not isinstance(key, NumericKey | IntegerKey):
        return v
    x = _to_float(value)
    if x is None:
        return v
    key_unit = key.unit or given.key_dimension
    conv = f"{_fmt(given.magnitude)} {given.unit} = {_fmt(x)} {key_unit}"
    if given.dimension == "bits" and given.key_dimension == "bytes":
        if v.correct:
            return replace(v, correct=False, score=0.0, status="wrong_unit", precision=None,
                           message=f"Not right: you answered in bits; the key is in bytes (÷ 8): {conv}.")
        if grade(key, x * 8).correct:  # the key's own number, with b typed for B
            return replace(v, status="wrong_unit", misconception=None,
                           message=f"Not right: {given.unit} is bits, so {conv}; for bytes write "
                                   f"{_byte_spelling(given.unit)} (capital B).")
        return replace(v, message=f"{v.message} (You answered in bits: {conv}.)")
    if given.unit != key.unit:
        return replace(v, message=f"{v.message} ({conv}.)")
    return v


def _plain(v: Any) -> Any:
    if isinstance(v, frozenset | set):
        return sorted(v)
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def _invalid(message: str, key: Key, accepted: str = "") -> Verdict:
    return Verdict(False, 0.0, "invalid", message, accepted=accepted, expected=stored_key_value(key), invalid=True)


# --------------------------------------------------------------------------------------------
# helpers on values


def _to_float(x: Any) -> float | None:
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return None
    if isinstance(x, Fraction | Decimal | int | float):
        try:
            f = float(x)
        except (OverflowError, InvalidOperation):
            return None
        return f if math.isfinite(f) else None
    try:  # numpy / sympy scalars
        f = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _rows_of(x: Any) -> list:
    if hasattr(x, "tolist") and not isinstance(x, list | tuple):
        x = x.tolist()
    return list(x)


def _row_list(r: Any) -> list:
    if hasattr(r, "tolist") and not isinstance(r, list | tuple):
        r = r.tolist()
    if isinstance(r, list | tuple):
        return list(r)
    return [r]


def stored_key_value(key: Key) -> Any:
    """The value a key stores, as stored: a number, the matrix rows, or the set of correct option
    indices (``problem.key_value`` is the plain JSON-ready form)."""
    if isinstance(key, NumericKey):
        return key.value
    if isinstance(key, IntegerKey):
        return key.value
    if isinstance(key, MatrixKey):
        return key.value
    return key.correct


def _fmt(x: float, decimals: int | None = None) -> str:
    if decimals is not None:
        return f"{x:.{decimals}f}"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def _plural(d: int) -> str:
    return f"{d} decimal place" + ("" if d == 1 else "s")


def describe_key(key: Key, options_text: list[str] | None = None) -> str:
    """The keyed answer as one line: ``0.60 (accepted 0.595 to 0.605)``, ``(c) O(n²·d)``, ..."""
    if isinstance(key, NumericKey):
        shown = _fmt(round_half_up(key.value, key.decimals), key.decimals) if key.decimals is not None else _fmt(key.value)
        unit = f" {key.unit}" if key.unit else ""
        return f"{shown}{unit} (accepted {_fmt(key.lo, _range_digits(key))} to {_fmt(key.hi, _range_digits(key))})"
    if isinstance(key, IntegerKey):
        unit = f" {key.unit}" if key.unit else ""
        tol = f" (within {key.rel_tol:.2%})" if key.rel_tol else ""
        return f"{key.value:,}{unit}{tol}"
    if isinstance(key, MatrixKey):
        return "; ".join(" ".join(_fmt(x, key.decimals) for x in row) for row in key.value)
    letters = ", ".join(f"({LETTERS[i]})" for i in sorted(key.correct))
    if options_text:
        return "; ".join(f"({LETTERS[i]}) {options_text[i]}" for i in sorted(key.correct) if i < len(options_text))
    return letters


def _range_digits(key: NumericKey) -> int | None:
    return None if key.decimals is None else key.decimals + 1


def _in_range(v: float, lo: float, hi: float) -> bool:
    s = FLOAT_SLACK * max(1.0, abs(lo), abs(hi))
    return lo - s <= v <= hi + s


def values_coincide(a: Any, b: Any, key: Key) -> bool:
    """True when answer ``a`` and answer ``b`` would be graded alike under ``key``'s tolerance
    (used to keep misconceptions and MCQ options apart from the key and from each other)."""
    if isinstance(key, NumericKey):
        fa, fb = _to_float(a), _to_float(b)
        if fa is None or fb is None:
            return False
        if key.decimals is None:
            width = (key.hi - key.lo) / 2
            return abs(fa - fb) <= width + FLOAT_SLACK * max(1.0, abs(fa))
        return round_half_up(fa, key.decimals) == round_half_up(fb, key.decimals) or _in_range(
            fb, *nat_range(fa, key.decimals)
        )
    if isinstance(key, IntegerKey):
        fa, fb = _to_float(a), _to_float(b)
        if fa is None or fb is None:
            return False
        return abs(fa - fb) <= key.rel_tol * max(abs(fa), abs(fb)) or fa == fb
    if isinstance(key, MatrixKey):
        try:
            ra = [[float(x) for x in _row_list(r)] for r in _rows_of(a)]
            rb = [[float(x) for x in _row_list(r)] for r in _rows_of(b)]
        except (TypeError, ValueError):
            return False
        if [len(r) for r in ra] != [len(r) for r in rb]:
            return False
        return all(abs(x - y) <= key.abs_tol + 1e-12 for r1, r2 in zip(ra, rb, strict=True) for x, y in zip(r1, r2, strict=True))
    return _as_choice_set(a) == _as_choice_set(b)


#: An exact value closer than this (in units of the last asked digit) to a rounding boundary
#: is keyed with both roundings. Families stay further away (:data:`ENTRY_MARGIN`, 0.1).
BOUNDARY_MARGIN = 0.05


def nat_range(value: float, decimals: int) -> tuple[float, float]:
    """What rounding ``value`` to ``decimals`` places accepts: ``[r − h, r + h]`` with h half a
    unit; for a value within :data:`BOUNDARY_MARGIN` of the boundary, the neighbouring rounding's
    interval too."""
    r = round_half_up(value, decimals)
    h = _half_unit(decimals)
    lo, hi = r - h, r + h
    if not safe_for_rounding(value, decimals, BOUNDARY_MARGIN):
        if value > r:
            hi = r + 3 * h  # up to the next rounding's upper edge
        else:
            lo = r - 3 * h
    return lo, hi


# --------------------------------------------------------------------------------------------
# grading by key type


def grade(target: Problem | Part | Key, value: Any, *, written: str | None = None,
          unit: GivenUnit | None = None) -> Verdict:
    """Grade one answer against a problem's key (for a multi-part problem: the final part's
    key, which ``Problem.key`` holds), a part's key, or a bare key.

    ``value`` is the parsed answer; ``written`` (optional) the text as typed, used only to
    count the decimals the student wrote. Misconceptions of the problem/part are matched with
    the key's own tolerance. ``unit`` (optional): the unit the answer was typed in, when the
    caller converted it to the key's unit (:class:`GivenUnit`: bits for bytes, GB for GiB)."""
    if isinstance(target, Problem | Part):
        key, misconceptions = target.key, list(target.misconceptions)
        label = target.label if isinstance(target, Part) else None
        options = getattr(target, "options_text", None) or None
    else:
        key, misconceptions, label, options = target, [], None, None
    if written is None and isinstance(value, Decimal):
        written = str(value)
    if isinstance(key, NumericKey):
        v = _grade_numeric(key, value, written, misconceptions)
    elif isinstance(key, IntegerKey):
        v = _grade_integer(key, value, misconceptions)
    elif isinstance(key, MatrixKey):
        v = _grade_matrix(key, value, misconceptions)
    elif isinstance(key, ChoiceKey):
        v = _grade_choice(key, value, misconceptions, options, _n_options(target))
    else:
        raise TypeError(f"unknown key type {type(key).__name__}")
    v = _with_unit(v, key, value, unit)
    v = _fraction_for_percent(v, key, value)
    return replace(v, label=label) if label is not None else v


def _fraction_for_percent(v: Verdict, key: Key, value: Any) -> Verdict:
    """A fraction (0.519) typed for a key in % (51.9 %) is wrong, and said so: the value is
    right once multiplied by 100. An answer typed with % (51.9%) reaches the judge as 51.9."""
    if v.correct or v.invalid or v.misconception is not None or not isinstance(key, NumericKey):
        return v
    if key.unit.split("(")[0].strip() != "%":
        return v
    x = _to_float(value)
    if x is None or x == 0 or not _in_range(x * 100, key.lo, key.hi):
        return v
    return replace(v, status="wrong_unit", precision=None,
                   message=f"Not right: the question asks for a percentage, and {_fmt(x)} is a fraction "
                           f"(× 100 = {_fmt(x * 100)} %).")


def _n_options(target: Any) -> int | None:
    opts = getattr(target, "options", None)
    return len(opts) if opts else None


def _match_misconception_numeric(v: float, key: NumericKey, misconceptions: list[Misconception]) -> Misconception | None:
    for m in misconceptions:
        mv = _to_float(m.value)
        if mv is None:
            continue
        if key.decimals is not None:
            if _in_range(v, *nat_range(mv, key.decimals)):
                return m
        else:
            width = (key.hi - key.lo) / 2
            if _in_range(v, mv - width, mv + width):
                return m
    return None


def _grade_numeric(key: NumericKey, value: Any, written: str | None, misconceptions: list[Misconception]) -> Verdict:
    d = key.decimals
    rd = _range_digits(key)
    accepted = f"{_fmt(key.lo, rd)} ≤ x ≤ {_fmt(key.hi, rd)}"
    if d is not None:
        r = round_half_up(key.value, d)
        if key.hi - key.lo > 2.5 * _half_unit(d):  # both roundings (the value sits on a boundary)
            other = r + 2 * _half_unit(d) if key.value > r else r - 2 * _half_unit(d)
            both = sorted((r, other))
            accepted += (f" ({_fmt(both[0], d)} or {_fmt(both[1], d)} to {_plural(d)}: the exact "
                         f"{key.value:.{d + 2}f} lies on the boundary)")
        else:
            accepted += f" ({_fmt(r, d)} to {_plural(d)})"
    base = dict(accepted=accepted, expected=key.value, lo=key.lo, hi=key.hi)
    v = _to_float(value)
    if v is None:
        return _invalid("expected a single number", key, accepted)
    wd = decimals_written(written)
    if _in_range(v, key.lo, key.hi):
        precision, msg = None, "Correct."
        if d is not None and wd is not None and wd != d:
            shown = _fmt(round_half_up(key.value, d), d)
            if wd > d:
                precision = "more_digits"
                msg = f"Correct: the value is right, but the question asks for {_plural(d)}, so write {shown}."
            else:
                precision = "fewer_digits"
                msg = f"Correct value, but the question asks for {_plural(d)}: write {shown}."
        return Verdict(True, 1.0, "correct", msg, precision=precision, **base)
    m = _match_misconception_numeric(v, key, misconceptions)
    if m is not None:
        return Verdict(False, 0.0, "misconception", f"Not right. {m.feedback}", misconception=m, **base)
    if d is not None:
        # too few digits: the exact value rounded to fewer decimals than asked
        for k in range(0, d):
            if wd is not None and wd != k:
                continue
            if abs(v - round_half_up(key.value, k)) <= FLOAT_SLACK * max(1.0, abs(v)):
                shown = _fmt(round_half_up(key.value, d), d)
                return Verdict(
                    False, 0.0, "too_few_digits",
                    f"Right value, but too few digits: the question asks for {_plural(d)} ({shown}), "
                    f"and {_fmt(v, k)} is rounded to {_plural(k)}.",
                    precision="too_few_digits", **base,
                )
        unit = 10.0 ** (-d)
        if abs(v - key.value) <= unit * (1 + 1e-9):
            trunc = math.trunc(key.value * 10**d) / 10**d
            how = "truncated instead of rounded off" if abs(v - trunc) < 1e-12 * max(1.0, abs(v)) and wd in (None, d) else (
                "probably from rounding the intermediate results too early"
            )
            return Verdict(
                False, 0.0, "rounded_wrongly",
                f"Right value, rounded wrongly ({how}): to {_plural(d)} the answer is "
                f"{_fmt(round_half_up(key.value, d), d)}.",
                precision="rounded_wrongly", **base,
            )
    return Verdict(False, 0.0, "wrong", "Not right.", **base)


def _grade_integer(key: IntegerKey, value: Any, misconceptions: list[Misconception]) -> Verdict:
    accepted = "exactly" if not key.rel_tol else f"within {key.rel_tol:.3%}"
    accepted = f"{key.value:,} {accepted}".strip()
    base = dict(accepted=accepted, expected=key.value)
    v = _to_float(value)
    if v is None:
        return _invalid("expected a whole number", key, accepted)
    exact = value if isinstance(value, int) and not isinstance(value, bool) else None
    if exact is None and isinstance(value, Fraction) and value.denominator == 1:
        exact = int(value)

    def same(a: float | int, target: int) -> bool:
        if key.rel_tol:
            return abs(a - target) <= key.rel_tol * abs(target) + 1e-9
        if isinstance(a, int):
            return a == target
        return float(a).is_integer() and float(a) == float(target)

    probe = exact if exact is not None else v
    if same(probe, key.value):
        return Verdict(True, 1.0, "correct", "Correct.", **base)
    for m in misconceptions:
        mv = _to_float(m.value)
        if mv is not None and (same(probe, int(round(mv))) if float(mv).is_integer() else abs(v - mv) <= 1e-9 * abs(mv)):
            return Verdict(False, 0.0, "misconception", f"Not right. {m.feedback}", misconception=m, **base)
    if key.value and abs(v - key.value) <= 0.01 * abs(key.value):
        return Verdict(
            False, 0.0, "close",
            f"Close (within {abs(v - key.value) / abs(key.value):.2%}), but the question asks for the exact count: "
            f"{key.value:,}.",
            precision="rounded_wrongly", **base,
        )
    return Verdict(False, 0.0, "wrong", "Not right.", **base)


def _as_matrix(value: Any, key: MatrixKey) -> list[list[float]] | str:
    """Rows of floats, or a message saying why the value is not a matrix of the key's shape."""
    shape = (len(key.value), len(key.value[0]) if key.value else 0)
    try:
        rows = _rows_of(value)
    except TypeError:
        return "expected a matrix (rows separated by ';')"
    if rows and all(_to_float(x) is not None for x in rows):  # a flat list
        if shape[0] == 1:
            rows = [rows]
        elif shape[1] == 1:
            rows = [[x] for x in rows]
    out: list[list[float]] = []
    for r in rows:
        cells = _row_list(r)
        fl = [_to_float(x) for x in cells]
        if any(x is None for x in fl):
            return "every entry must be a finite number"
        out.append([float(x) for x in fl])  # type: ignore[arg-type]
    got = (len(out), len(out[0]) if out else 0)
    if got[0] != shape[0] or any(len(r) != shape[1] for r in out):
        return f"expected a {shape[0]}×{shape[1]} matrix ({shape[0]} rows of {shape[1]}), got " + (
            f"{got[0]}×{got[1]}" if all(len(r) == got[1] for r in out) else "rows of different lengths"
        )
    return out


def _cell_ok(x: float, exact: float, key: MatrixKey) -> bool:
    if within(x, exact, key.abs_tol):
        return True
    return key.decimals is not None and _in_range(x, *nat_range(exact, key.decimals))


def _grade_matrix(key: MatrixKey, value: Any, misconceptions: list[Misconception]) -> Verdict:
    d = key.decimals
    if key.abs_tol == 0 and d is None:
        accepted = "each entry exactly"
    else:
        accepted = f"each entry within ±{key.abs_tol:g} of the exact value" + (
            f" (or rounding to it at {_plural(d)})" if d is not None else ""
        )
    base = dict(accepted=accepted, expected=key.value, tol=key.abs_tol)
    rows = _as_matrix(value, key)
    if isinstance(rows, str):
        return _invalid(rows, key, accepted)
    cells = tuple(tuple(_cell_ok(x, e, key) for x, e in zip(r, kr, strict=True)) for r, kr in zip(rows, key.value, strict=True))
    n = sum(len(r) for r in cells)
    good = sum(sum(r) for r in cells)
    if good == n:
        return Verdict(True, 1.0, "correct", "Correct: every entry is right.", cells=cells, **base)
    for m in misconceptions:
        mrows = m.value
        try:
            ok = all(
                _cell_ok(x, float(e), key)
                for r, mr in zip(rows, _rows_of(mrows), strict=True)
                for x, e in zip(r, _row_list(mr), strict=True)
            )
        except (TypeError, ValueError):
            ok = False
        if ok:
            return Verdict(False, good / n, "misconception", f"Not right. {m.feedback}", cells=cells, misconception=m, **base)
    wrong = [f"({i + 1},{j + 1})" for i, r in enumerate(cells) for j, c in enumerate(r) if not c]
    if len(key.value) == len(key.value[0]) and any(
        key.value[i][j] != key.value[j][i] for i in range(len(key.value)) for j in range(len(key.value))
    ):
        if all(_cell_ok(rows[j][i], key.value[i][j], key) for i in range(len(rows)) for j in range(len(rows))):
            return Verdict(False, good / n, "wrong", "Not right: this is the transpose of the answer.", cells=cells, **base)
    status = "partial" if good else "wrong"
    where = ", ".join(wrong[:8]) + (" …" if len(wrong) > 8 else "")
    return Verdict(
        False, good / n, status,
        f"{good} of {n} entries right; wrong (row,column): {where}.", cells=cells, **base,
    )


def _as_choice_set(value: Any) -> frozenset[int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return frozenset({value})
    if isinstance(value, set | frozenset | list | tuple):
        if all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            return frozenset(value)
    return None


def _grade_choice(
    key: ChoiceKey, value: Any, misconceptions: list[Misconception], options: list[str] | None, n: int | None
) -> Verdict:
    accepted = describe_key(key, options)
    base = dict(accepted=accepted, expected=frozenset(key.correct))
    chosen = _as_choice_set(value)
    if not chosen:
        return _invalid("expected an option letter (a, b, …) or several separated by commas", key, accepted)
    if n is not None and any(i < 0 or i >= n for i in chosen):
        return _invalid(f"there are only {n} options, ({LETTERS[0]}) to ({LETTERS[n - 1]})", key, accepted)
    if chosen == key.correct:
        return Verdict(True, 1.0, "correct", "Correct.", **base)
    for m in misconceptions:
        ms = _as_choice_set(m.value)
        if ms is not None and ms == chosen:
            return Verdict(False, 0.0, "misconception", f"Not right. {m.feedback}", misconception=m, **base)
    if len(key.correct) > 1 and chosen < key.correct:
        return Verdict(False, 0.0, "wrong", "Not right: some correct options are missing (all must be chosen).", **base)
    return Verdict(False, 0.0, "wrong", "Not right.", **base)


def accepts(target: Problem | Part | Key, value: Any) -> bool:
    return grade(target, value).correct


# --------------------------------------------------------------------------------------------
# multi-part problems


def grade_parts(problem: Problem, answers: dict[str, Any], *, written: dict[str, str] | None = None,
                units: dict[str, GivenUnit] | None = None) -> dict[str, Verdict]:
    """Grade every part of a multi-part problem, with follow-through.

    Parts are judged in order. A part that is wrong against its own key, coming after a wrong
    (or unanswered) earlier part, is judged again against ``part.follow(earlier)``, where
    ``earlier`` maps each earlier label to the student's answer (or to the key's value when
    that part was unanswered or unusable). If it is right there, the part gets full marks
    with ``status="follow_through"`` and a message that says so; ``expected`` stays the true
    key. ``units`` maps a label to the unit its answer was typed in (see :func:`grade`).
    Returns ``{label: Verdict}`` in part order."""
    written = written or {}
    units = units or {}
    out: dict[str, Verdict] = {}
    earlier: dict[str, Any] = {}
    slipped = False
    for part in problem.parts:
        if part.label not in answers or answers[part.label] is None:
            v = Verdict(False, 0.0, "unanswered", "Not answered.", expected=stored_key_value(part.key), label=part.label)
            out[part.label] = v
            earlier[part.label] = stored_key_value(part.key)
            slipped = True
            continue
        ans = answers[part.label]
        v = grade(part, ans, written=written.get(part.label), unit=units.get(part.label))
        if not v.correct and not v.invalid and v.status != "wrong_unit" and slipped and part.follow is not None:
            try:
                fkey = part.follow(dict(earlier))
            except Exception:  # noqa: BLE001 - an unusable earlier answer simply gives no follow-through
                fkey = None
            if fkey is not None:
                fv = grade(fkey, ans, written=written.get(part.label))
                if fv.correct:
                    given = [f"({lab})" for lab, pv in out.items() if not pv.correct or pv.follow_through]
                    slips = [f"({lab})" for lab, pv in out.items() if not pv.correct]
                    slip_text = " and ".join(slips) + (" was" if len(slips) == 1 else " were")
                    v = replace(
                        fv,
                        status="follow_through",
                        follow_through=True,
                        label=part.label,
                        expected=stored_key_value(part.key),
                        cells=fv.cells,
                        message=(
                            f"Correct given your answer to {', '.join(given)}: this follows from it, so full marks "
                            f"(follow-through); it differs from the exact value only because {slip_text} wrong."
                        ),
                    )
        elif not v.correct and not v.invalid and v.status != "wrong_unit" and not slipped and part.follow is not None:
            before = problem.parts[: problem.parts.index(part)]
            v = _carried_rounding(part, ans, v, earlier, before, written.get(part.label))
        out[part.label] = v
        earlier[part.label] = ans if not v.invalid else stored_key_value(part.key)
        if not v.correct or v.follow_through:
            slipped = True
    return out


def _rounded_key_value(key: Key) -> Any:
    """The key as a student writes it when rounding as the statement asks (its decimals)."""
    if isinstance(key, NumericKey) and key.decimals is not None:
        return round_half_up(key.value, key.decimals)
    if isinstance(key, MatrixKey) and key.decimals is not None:
        return [[round_half_up(x, key.decimals) for x in r] for r in key.value]
    return stored_key_value(key)


def _carried_rounding(part: Part, ans: Any, v: Verdict, earlier: dict[str, Any], before: list[Part],
                      written: str | None) -> Verdict:
    """Every earlier part was right, but this one misses the exact key: a student who carries
    their correctly rounded earlier values forward lands a little off. Accept the answer when
    it follows from the student's own (right) earlier answers or from the earlier keys rounded
    as asked; full marks, ``status`` stays ``correct`` with a note on the rounding."""
    rounded = {pt.label: _rounded_key_value(pt.key) for pt in before}
    for basis in (dict(earlier), rounded):
        try:
            fkey = part.follow(basis)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - an unusable basis simply gives nothing
            continue
        fv = grade(fkey, ans, written=written)
        if fv.correct:
            shown = ", ".join(f"({pt.label})" for pt in before)
            return replace(fv, label=part.label, expected=v.expected, precision="carried_rounding",
                           message=f"Correct: this follows from your rounded answers to {shown} (the exact value "
                                   "differs in the last places only because of that rounding).")
    return v


def total_score(verdicts: dict[str, Verdict] | list[Verdict]) -> float:
    """Mean score over parts (each part weighs the same), in [0, 1]."""
    vs = list(verdicts.values()) if isinstance(verdicts, dict) else list(verdicts)
    return sum(v.score for v in vs) / len(vs) if vs else 0.0


# --------------------------------------------------------------------------------------------
# auditing a problem (used by ``qkv bank validate``, ``Family.self_test`` and the tests)

_KEY_FOR_TYPE = {"nat": NumericKey, "integer": IntegerKey, "matrix": MatrixKey, "mcq": ChoiceKey, "msq": ChoiceKey}


def answer_text(key: Key, options_text: list[str] | None = None) -> str:
    """The answer as a solution's last line states it (``describe_key`` without the range)."""
    if isinstance(key, NumericKey):
        s = _fmt(round_half_up(key.value, key.decimals), key.decimals) if key.decimals is not None else _fmt(key.value)
        return s + (f" {key.unit}" if key.unit else "")
    if isinstance(key, IntegerKey):
        return f"{key.value:,}" + (f" {key.unit}" if key.unit else "")
    return describe_key(key, options_text)


def _audit_key(where: str, type_: str, key: Key, misconceptions: list[Misconception], target: Any,
               n_options: int | None) -> list[str]:
    out: list[str] = []
    want = _KEY_FOR_TYPE.get(type_)
    if want is None:
        return [f"{where}unknown type {type_!r}"]
    if not isinstance(key, want):
        return [f"{where}type {type_} needs a {want.__name__}, got {type(key).__name__}"]
    if isinstance(key, NumericKey):
        if not (key.lo <= key.value <= key.hi) and not _in_range(key.value, key.lo, key.hi):
            out.append(f"{where}key value {key.value} outside its own range [{key.lo}, {key.hi}]")
        if key.decimals is not None:
            r = round_half_up(key.value, key.decimals)
            if not grade(key, r).correct:
                out.append(f"{where}the rounded key {r} is not accepted")
    if isinstance(key, ChoiceKey):
        if not key.correct:
            out.append(f"{where}no correct option")
        if type_ == "mcq" and len(key.correct) != 1:
            out.append(f"{where}an MCQ needs exactly one correct option, has {len(key.correct)}")
        if n_options is not None and any(i < 0 or i >= n_options for i in key.correct):
            out.append(f"{where}correct option index out of range")
    kv = stored_key_value(key)
    verdict = grade(target, kv if not isinstance(key, ChoiceKey) else set(kv))
    if not verdict.correct:
        out.append(f"{where}the key itself is not accepted: {verdict.message}")
    seen: set[str] = set()
    for m in misconceptions:
        if m.id in seen:
            out.append(f"{where}misconception id {m.id!r} twice")
        seen.add(m.id)
        mv = m.value
        if isinstance(key, ChoiceKey) and isinstance(mv, int):
            mv = {mv}
        v = grade(target, mv)
        if v.correct:
            out.append(f"{where}misconception {m.id!r} (value {mv!r}) is accepted as correct")
        elif v.misconception is None or v.misconception.id != m.id:
            got = v.misconception.id if v.misconception else v.status
            out.append(f"{where}misconception {m.id!r} is diagnosed as {got!r}")
    return out


def audit_problem(p: Problem) -> list[str]:
    """Everything wrong with a problem, as messages (empty when it is sound): the schema, the
    key accepted by :func:`grade`, every misconception rejected *and* diagnosed as itself,
    options distinct, parts consistent with their follow-through functions; for a generated
    problem also that its worked solution states the answer as :func:`answer_text` writes it."""
    from question_bank.problem import DIFFICULTIES, PROBLEM_TYPES

    out: list[str] = []
    if not p.id:
        out.append("empty id")
    if p.type not in PROBLEM_TYPES:
        out.append(f"unknown type {p.type!r}")
        return out
    if p.difficulty not in DIFFICULTIES:
        out.append(f"difficulty {p.difficulty!r} not one of {DIFFICULTIES}")
    if p.marks not in (1, 2):
        out.append(f"marks {p.marks} not 1 or 2")
    for name in ("topic", "statement_md", "statement_text", "solution_md", "solution_text"):
        if not str(getattr(p, name)).strip():
            out.append(f"empty {name}")
    n_opt = len(p.options) if p.options else None
    if p.type in ("mcq", "msq"):
        if len(p.options) < 2:
            out.append(f"{p.type} with {len(p.options)} options")
        if p.type == "mcq" and len(p.options) != 4:
            out.append(f"an MCQ has four options, this one {len(p.options)}")
        if len(p.options_text) != len(p.options):
            out.append("options and options_text differ in length")
        if len(set(p.options)) != len(p.options) or len(set(p.options_text)) != len(p.options_text):
            out.append("two options read the same")
        vals = p.given.get("option_values")
        if vals is not None:
            dec = p.given.get("option_decimals")
            for i in range(len(vals)):
                for j in range(i + 1, len(vals)):
                    a, b = vals[i], vals[j]
                    if dec is not None:
                        same = values_coincide(a, b, nat_key(float(a), dec)) or values_coincide(b, a, nat_key(float(b), dec))
                    else:
                        same = a == b or (isinstance(a, int | float) and isinstance(b, int | float)
                                          and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
                    if same:
                        out.append(f"options ({LETTERS[i]}) and ({LETTERS[j]}) coincide: {a!r} vs {b!r}")
    out.extend(_audit_key("", p.type, p.key, p.misconceptions, p, n_opt))
    ans = answer_text(p.key, p.options_text)
    if p.family is not None and p.type != "matrix" and ans not in p.solution_text:
        out.append(f"the worked solution does not state the answer {ans!r}")
    if p.parts:
        labels = [pt.label for pt in p.parts]
        if len(set(labels)) != len(labels):
            out.append("duplicate part labels")
        keys: dict[str, Any] = {}
        for pt in p.parts:
            out.extend(_audit_key(f"part ({pt.label}): ", pt.type, pt.key, pt.misconceptions, pt, None))
            if pt.follow is not None:
                try:
                    fk = pt.follow(dict(keys))
                except Exception as e:  # noqa: BLE001
                    out.append(f"part ({pt.label}): follow() fails on the keyed earlier answers: {e}")
                else:
                    if not grade(fk, stored_key_value(pt.key)).correct:
                        out.append(f"part ({pt.label}): follow() on the keyed earlier answers disagrees with the key")
            keys[pt.label] = stored_key_value(pt.key)
        last = p.parts[-1]
        if last.type != p.type or stored_key_value(last.key) != stored_key_value(p.key):
            out.append("Problem.key/type must be the last part's key/type")
    return out
