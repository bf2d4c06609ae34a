"""The judge: one answer against one key, with the verdict a student sees (tolerance, rounding
diagnosis, units, misconceptions)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from question_bank.grading.keys import (
    LETTERS,
    as_choice_set,
    describe_key,
    fmt,
    key_factor,
    plural,
    range_digits,
    row_list,
    rows_of,
    stored_key_value,
    to_float,
)
from question_bank.grading.tolerance import (
    FLOAT_SLACK,
    decimals_written,
    digits_verdict,
    half_unit,
    in_range,
    nat_range,
    round_half_up,
    within,
)
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
    #: every typical mistake the answer equals (``misconception`` names them all at once when
    #: there are several: see :func:`named`)
    misconceptions: tuple[Misconception, ...] = ()

    def to_json(self) -> dict[str, Any]:
        m = self.misconception
        return {
            "correct": self.correct,
            "score": self.score,
            "status": self.status,
            "message": self.message,
            "accepted": self.accepted,
            "expected": plain(self.expected),
            "lo": self.lo,
            "hi": self.hi,
            "tol": self.tol,
            "cells": [list(r) for r in self.cells] if self.cells is not None else None,
            "misconception": None if m is None else {"id": m.id, "label": m.label, "feedback": m.feedback},
            "misconceptions": [{"id": x.id, "label": x.label, "feedback": x.feedback} for x in self.misconceptions],
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
    return "bytes" if bit_unit == "bits" else "B/s" if bit_unit == "bits/s" else bit_unit.replace("bit", "B")



def _with_unit(v: Verdict, key: Key, value: Any, given: GivenUnit | None) -> Verdict:
    """``v`` with the feedback on the unit the answer was typed in (see :class:`GivenUnit`)."""
    if given is None or v.invalid or not isinstance(key, NumericKey | IntegerKey):
        return v
    x = to_float(value)
    if x is None:
        return v
    key_unit = key.unit or given.key_dimension
    conv = f"{fmt(given.magnitude)} {given.unit} = {fmt(x)} {key_unit}"
    if (given.dimension, given.key_dimension) in (("bits", "bytes"), ("bits/s", "bytes/s")):
        if v.correct:
            return replace(v, correct=False, score=0.0, status="wrong_unit", precision=None,
                           message=f"Not right: you answered in bits; the key is in bytes (÷ 8): {conv}.")
        if grade(key, x * 8).correct:  # the key's own number, with b typed for B
            return replace(v, status="wrong_unit", misconception=None, misconceptions=(),
                           message=f"Not right: {given.unit} is bits, so {conv}; for bytes write "
                                   f"{_byte_spelling(given.unit)} (capital B).")
        return replace(v, message=f"{v.message} (You answered in bits: {conv}.)")
    if given.unit != key.unit:
        return replace(v, message=f"{v.message} ({conv}.)")
    return v



def plain(v: Any) -> Any:
    if isinstance(v, frozenset | set):
        return sorted(v)
    if isinstance(v, tuple):
        return [plain(x) for x in v]
    return v



def invalid(message: str, key: Key, accepted: str = "") -> Verdict:
    return Verdict(False, 0.0, "invalid", message, accepted=accepted, expected=stored_key_value(key), invalid=True)



def _inverses(key: NumericKey | IntegerKey, misconceptions: list[Misconception]) -> list[Misconception]:
    """The inverse slips a family names (a numeric MCQ offers each as an option), as mistakes."""
    if not any(m.inverse for m in misconceptions):
        return []
    from question_bank.numeric_mcq import inverse_mistakes

    return inverse_mistakes(key, misconceptions)


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
        if not v.correct and v.misconception is None and (inv := _inverses(key, misconceptions)):
            w = _grade_numeric(key, value, written, inv)  # a named inverse slip, after the mistakes themselves
            v = w if w.misconception is not None else v
    elif isinstance(key, IntegerKey):
        v = _grade_integer(key, value, misconceptions)
        if not v.correct and v.misconception is None and (inv := _inverses(key, misconceptions)):
            w = _grade_integer(key, value, inv)
            v = w if w.misconception is not None else v
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
    x = to_float(value)
    if x is None or x == 0 or not in_range(x * 100, key.lo, key.hi):
        return v
    return replace(v, status="wrong_unit", precision=None,
                   message=f"Not right: the question asks for a percentage, and {fmt(x)} is a fraction "
                           f"(× 100 = {fmt(x * 100)} %).")



def _n_options(target: Any) -> int | None:
    opts = getattr(target, "options", None)
    return len(opts) if opts else None



_NUMBERED = ("", "One", "Two", "Three", "Four", "Five", "Six")


def named(found: list[Misconception]) -> tuple[Misconception, str]:
    """The misconception a verdict names, and its message, for the typical mistakes ``found``
    that all give the student's value: one is named as itself; several are named together (one
    :class:`Misconception` whose id joins theirs with ``+``, whose label joins their labels with
    "or", and whose feedback gives each), since the grader cannot tell which one the student
    made. This is the one place that happens, for every key type and every caller."""
    seen: dict[str, Misconception] = {}
    for m in found:
        seen.setdefault(m.id, m)
    ms = list(seen.values())
    if len(ms) == 1:
        return ms[0], f"Not right. {ms[0].feedback}"
    count = _NUMBERED[len(ms)] if len(ms) < len(_NUMBERED) else str(len(ms))
    feedback = (f"{count} typical mistakes give this same value; yours is one of them: "
                + " ".join(f"({i}) {m.feedback}" for i, m in enumerate(ms, start=1)))
    # the inverse mistake of the value (issue 38): that of the first of them that names one, with its value
    inv = next((m for m in ms if m.inverse), None)
    combined = Misconception("+".join(m.id for m in ms), " or ".join(m.label for m in ms), feedback, ms[0].value,
                             inv and inv.inverse, inv and inv.inverse_value)
    return combined, f"Not right. {feedback}"


def _mistake(found: list[Misconception], score: float = 0.0, **base: Any) -> Verdict:
    m, message = named(found)
    ms = tuple(dict((x.id, x) for x in found).values())
    return Verdict(False, score, "misconception", message, misconception=m, misconceptions=ms, **base)


_POWER_WORDS = {3: "a thousand", 6: "a million", 9: "a billion", 12: "a trillion", 15: "10¹⁵"}
#: 10³ⁿ slips looked for: n = ±1 … ±5 (a thousand up to 10¹⁵ either way)
SCALE_SLIPS = tuple(k * s for k in (3, 6, 9, 12, 15) for s in (1, -1))


def scale_slip(key: NumericKey | IntegerKey, exponent: int) -> Misconception:
    """The named misconception of an answer ``10^exponent`` times the key (``exponent`` a
    non-zero multiple of 3): a slip of the scale (thousands, millions, billions)."""
    word = _POWER_WORDS.get(abs(exponent), f"10^{abs(exponent)}")
    how = f"{word} times the answer" if exponent > 0 else f"the answer divided by {word}"
    unit = (key.unit or "").split("(")[0].strip()
    asked = f"The question asks for it in {unit}" if unit and unit not in ("parameters", "tokens") else \
        "The question asks for the plain number in the unit it names"
    return Misconception(
        f"scale_slip_{'up' if exponent > 0 else 'down'}{abs(exponent)}",
        f"off by a factor of 10^{exponent} (a slip of the scale)",
        f"This is {how}: a slip of the scale (thousand, million, billion, trillion: each step is 10³). "
        f"{asked}; count the zeros again.",
        None,
    )


def _slip_of(v: float, fits: Any, key: NumericKey | IntegerKey) -> Misconception | None:
    """The 10³ⁿ slip that ``v`` is (``fits(x)``: x is right), or None."""
    if v == 0:
        return None
    for e in SCALE_SLIPS:
        if fits(v / 10.0**e):
            return scale_slip(key, e)
    return None


def _written_in_unit(written: str | None, factor: Fraction) -> str | None:
    """``written`` (a full count as typed, ``12879925248`` or ``1.288e10``) with its digits
    restated in the key's unit of ``factor`` (a power of ten): ``1.288e10`` for billions is
    ``12.88`` (two decimals), so precision is judged in the asked unit."""
    if written is None:
        return None
    m = re.fullmatch(r"\s*[+-]?(\d[\d,_]*)?(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*", written)
    if not m or not (m.group(1) or m.group(2)):
        return None
    power = math.log10(factor) if factor > 0 else None
    if power is None or not float(power).is_integer():
        return None
    places = len(m.group(2) or "") - int(m.group(3) or 0) + int(power)
    if places < 0:
        return None
    mantissa = Decimal((m.group(1) or "0").replace(",", "").replace("_", "") + "." + (m.group(2) or "0"))
    value = mantissa.scaleb(int(m.group(3) or 0) - int(power))
    return f"{value:.{places}f}"


def misconception_range(value: float, key: NumericKey) -> tuple[float, float]:
    """The answers that count as the misconception whose value is ``value``: the key's own rule
    around it (its NAT range at the key's decimals, or the key's width). Moodle's ranges for a
    misconception's feedback are these (``drills.sheets.moodle``)."""
    if key.decimals is not None:
        return nat_range(value, key.decimals)
    width = (key.hi - key.lo) / 2
    return value - width, value + width


def _match_misconception_numeric(v: float, key: NumericKey, misconceptions: list[Misconception]) -> list[Misconception]:
    """Every misconception whose value ``v`` equals under the key's rule."""
    found = []
    for m in misconceptions:
        mv = to_float(m.value)
        if mv is not None and in_range(v, *misconception_range(mv, key)):
            found.append(m)
    return found


def _rounds_to_zero(m: Misconception, key: NumericKey) -> bool:
    """Whether misconception ``m``'s value rounds to 0 at the key's precision (its range holds 0): any
    tiny number matches it, so it names nothing about an answer that is a slip of the scale."""
    mv = to_float(m.value)
    return mv is not None and in_range(0.0, *misconception_range(mv, key))


def _slip_first(v: float, typed: float, key: NumericKey, found: list[Misconception]) -> Misconception | None:
    """Issue 38: the 10³ⁿ slip ``typed`` (or its reading ``v``) is, when every mistake it matched rounds to
    0 at the asked precision (110.59 typed for 0.11 GB matched "counted one layer", 0.0039 GB)."""
    if not found or not all(_rounds_to_zero(m, key) for m in found):
        return None
    fits = lambda x: in_range(x, key.lo, key.hi)  # noqa: E731
    return _slip_of(typed, fits, key) or (_slip_of(v, fits, key) if v != typed else None)


def _reading(v: float, key: NumericKey, misconceptions: list[Misconception]) -> tuple[float, Fraction | None]:
    """The value a number typed for ``key`` stands for in the key's unit: itself, or, when the
    key's unit is a scaled count (billions, GB, units of 10²⁰) and the number read as a full count
    (``12879925248`` or ``1.288e10`` for 12.88 billion) is right, or is a typical mistake while the
    number as typed is neither, or is much nearer the key, that count divided by the unit
    (returned with the unit's factor)."""
    factor = key_factor(key)
    kv = float(key.value)
    if factor is None or factor == 1 or v == 0:
        return v, None
    scaled = v / float(factor)
    if in_range(v, key.lo, key.hi):
        return v, None
    if in_range(scaled, key.lo, key.hi):
        return scaled, factor
    if _match_misconception_numeric(v, key, misconceptions):
        return v, None
    if [m for m in _match_misconception_numeric(scaled, key, misconceptions) if not _rounds_to_zero(m, key)]:
        return scaled, factor
    near = (kv != 0 and (v > 0) == (kv > 0) and all(math.isfinite(x) and x != 0 for x in (scaled / kv, v / kv)))
    if near and abs(math.log(abs(scaled / kv))) < abs(math.log(abs(v / kv))):  # 1e-300 / 1e9 is 0: no log
        return scaled, factor
    return v, None



def _grade_numeric(key: NumericKey, value: Any, written: str | None, misconceptions: list[Misconception]) -> Verdict:
    d = key.decimals
    rd = range_digits(key)
    accepted = f"{fmt(key.lo, rd)} ≤ x ≤ {fmt(key.hi, rd)}"
    if d is not None:
        r = round_half_up(key.value, d)
        if key.hi - key.lo > 2.5 * half_unit(d):  # both roundings (the value sits on a boundary)
            other = r + 2 * half_unit(d) if key.value > r else r - 2 * half_unit(d)
            both = sorted((r, other))
            accepted += (f" ({fmt(both[0], d)} or {fmt(both[1], d)} to {plural(d)}: the exact "
                         f"{key.value:.{d + 2}f} lies on the boundary)")
        else:
            accepted += f" ({fmt(r, d)} to {plural(d)})"
    base = dict(accepted=accepted, expected=key.value, lo=key.lo, hi=key.hi)
    v = to_float(value)
    if v is None:
        return invalid("expected a single number", key, accepted)
    typed = v
    v, factor = _reading(v, key, misconceptions)
    if factor is not None:  # a full count for a key in a scaled unit: digits count in that unit
        written = _written_in_unit(written, factor)
    # the digit rule (tolerance.digits_verdict): more digits than asked inside the rounding are
    # right, fewer digits than asked are rounded too early
    digits = digits_verdict(v, written, key.value, d, key.lo, key.hi) if d is not None else None
    if in_range(v, key.lo, key.hi):
        precision, msg = None, "Correct."
        if factor is not None:  # say how the full count was read
            count = f"{typed:,.0f}" if float(typed).is_integer() and abs(typed) < 1e15 else f"{typed:g}"
            shown = fmt(round_half_up(v, d), d) if d is not None else fmt(v)
            unit = key.unit or (f"in units of 10^{key.scale}" if key.scale else "in the unit asked")
            msg = f"Correct: {count} is {shown} {unit}."
        if digits in ("more_digits", "fewer_digits"):
            shown = fmt(round_half_up(key.value, d), d)
            precision = digits
            if digits == "more_digits":
                msg = f"Correct: the value is right, but the question asks for {plural(d)}, so write {shown}."
            else:
                msg = f"Correct value, but the question asks for {plural(d)}: write {shown}."
        return Verdict(True, 1.0, "correct", msg, precision=precision, **base)
    # An answer written with fewer digits than asked that is the key rounded to those digits is
    # rounded too early, before any typical mistake whose value merely rounds the same way
    # (issue 22: 1.000 typed for a key of 0.9997 is not "your calculator was in degrees", though
    # the degree-mode value 0.99999 is 1.000 too); with no digits known, the mistake is named.
    wd = decimals_written(written)
    early = digits == "too_few_digits" and wd is not None and wd < d
    found = [] if early else _match_misconception_numeric(v, key, misconceptions)
    if found:
        slip = _slip_first(v, typed, key, found)
        return _mistake([slip] if slip is not None else found, **base)
    if digits == "too_few_digits":
        k = wd if wd is not None else next(
            k for k in range(d) if abs(v - round_half_up(key.value, k)) <= FLOAT_SLACK * max(1.0, abs(v)))
        shown = fmt(round_half_up(key.value, d), d)
        return Verdict(
            False, 0.0, "too_few_digits",
            f"Right value, but rounded too early: the question asks for {plural(d)} ({shown}), "
            f"and {fmt(v, k)} is rounded to {plural(k)}.",
            precision="too_few_digits", **base,
        )
    if digits == "rounded_wrongly":
        trunc = math.trunc(key.value * 10**d) / 10**d
        how = "truncated instead of rounded off" if abs(v - trunc) < 1e-12 * max(1.0, abs(v)) and wd in (None, d) else (
            "probably from rounding the intermediate results too early"
        )
        return Verdict(
            False, 0.0, "rounded_wrongly",
            f"Right value, rounded wrongly ({how}): to {plural(d)} the answer is "
            f"{fmt(round_half_up(key.value, d), d)}.",
            precision="rounded_wrongly", **base,
        )
    slip = _slip_of(v, lambda x: in_range(x, key.lo, key.hi), key) or (
        _slip_of(typed, lambda x: in_range(x, key.lo, key.hi), key) if typed != v else None)
    if slip is not None:
        return _mistake([slip], **base)
    return Verdict(False, 0.0, "wrong", "Not right.", **base)



def _grade_integer(key: IntegerKey, value: Any, misconceptions: list[Misconception]) -> Verdict:
    accepted = "exactly" if not key.rel_tol else f"within {key.rel_tol:.3%}"
    accepted = f"{key.value:,} {accepted}".strip()
    base = dict(accepted=accepted, expected=key.value)
    v = to_float(value)
    if v is None:
        return invalid("expected a whole number", key, accepted)
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
    found = [m for m in misconceptions if (mv := to_float(m.value)) is not None
             and (same(probe, int(round(mv))) if float(mv).is_integer() else abs(v - mv) <= 1e-9 * abs(mv))]
    if found:
        return _mistake(found, **base)
    slip = _slip_of(v, lambda x: abs(x - key.value) <= 0.005 * abs(key.value), key) if key.value else None
    if slip is not None:
        return _mistake([slip], **base)
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
        rows = rows_of(value)
    except TypeError:
        return "expected a matrix (rows separated by ';')"
    if rows and all(to_float(x) is not None for x in rows):  # a flat list
        if shape[0] == 1:
            rows = [rows]
        elif shape[1] == 1:
            rows = [[x] for x in rows]
    out: list[list[float]] = []
    for r in rows:
        cells = row_list(r)
        fl = [to_float(x) for x in cells]
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
    return key.decimals is not None and in_range(x, *nat_range(exact, key.decimals))



def _grade_matrix(key: MatrixKey, value: Any, misconceptions: list[Misconception]) -> Verdict:
    d = key.decimals
    if key.abs_tol == 0 and d is None:
        accepted = "each entry exactly"
    else:
        accepted = f"each entry within ±{key.abs_tol:g} of the exact value" + (
            f" (or rounding to it at {plural(d)})" if d is not None else ""
        )
    base = dict(accepted=accepted, expected=key.value, tol=key.abs_tol)
    rows = _as_matrix(value, key)
    if isinstance(rows, str):
        return invalid(rows, key, accepted)
    cells = tuple(tuple(_cell_ok(x, e, key) for x, e in zip(r, kr, strict=True)) for r, kr in zip(rows, key.value, strict=True))
    n = sum(len(r) for r in cells)
    good = sum(sum(r) for r in cells)
    if good == n:
        return Verdict(True, 1.0, "correct", "Correct: every entry is right.", cells=cells, **base)
    found = []
    for m in misconceptions:
        mrows = m.value
        try:
            ok = all(
                _cell_ok(x, float(e), key)
                for r, mr in zip(rows, rows_of(mrows), strict=True)
                for x, e in zip(r, row_list(mr), strict=True)
            )
        except (TypeError, ValueError):
            ok = False
        if ok:
            found.append(m)
    if found:
        return _mistake(found, good / n, cells=cells, **base)
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



def _grade_choice(
    key: ChoiceKey, value: Any, misconceptions: list[Misconception], options: list[str] | None, n: int | None
) -> Verdict:
    accepted = describe_key(key, options)
    base = dict(accepted=accepted, expected=frozenset(key.correct))
    chosen = as_choice_set(value)
    if not chosen:
        return invalid("expected an option letter (a, b, …) or several separated by commas", key, accepted)
    if n is not None and any(i < 0 or i >= n for i in chosen):
        return invalid(f"there are only {n} options, ({LETTERS[0]}) to ({LETTERS[n - 1]})", key, accepted)
    if chosen == key.correct:
        return Verdict(True, 1.0, "correct", "Correct.", **base)
    found = [m for m in misconceptions if (ms := as_choice_set(m.value)) is not None and ms == chosen]
    if found:
        return _mistake(found, **base)
    if len(key.correct) > 1 and chosen < key.correct:
        return Verdict(False, 0.0, "wrong", "Not right: some correct options are missing (all must be chosen).", **base)
    return Verdict(False, 0.0, "wrong", "Not right.", **base)



def accepts(target: Problem | Part | Key, value: Any) -> bool:
    return grade(target, value).correct
