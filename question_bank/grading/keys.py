"""Keys: how an answer is keyed (NAT ranges, exact integers, matrices, options), how a key is
stated, and when two answers would be graded alike."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from question_bank.grading.tolerance import (
    FLOAT_SLACK,
    asked_decimals,
    half_unit,
    in_range,
    nat_range,
    round_half_up,
)
from question_bank.problem import (
    ChoiceKey,
    IntegerKey,
    Key,
    MatrixKey,
    NumericKey,
)

LETTERS = "abcdefghijklmnopqrstuvwxyz"



def nat_key(value: float, decimals: int, unit: str = "", scale: int = 0, *, digits_rule: bool = False) -> NumericKey:
    """The NAT key for "round off to ``decimals`` decimal places": ``[r − ½·10⁻ᵈ, r + ½·10⁻ᵈ]``
    around ``r = round_half_up(value, decimals)``, both roundings when the value sits on a
    boundary (see the module docstring and :func:`nat_range`). ``scale``: the power of ten one
    unit of the answer stands for when ``unit`` does not say it (20 for "in units of 10²⁰
    FLOPs"), so that the full count is accepted too (:func:`key_factor`).

    ``digits_rule=True``: the digit rule (:func:`~question_bank.grading.tolerance.asked_decimals`)
    applies: the key's ``decimals`` are the ones asked, never more than four significant figures'
    worth, and the statement says them in the rule's words (``rounded_off(key.decimals)``).
    Issue 22 moves families onto it one by one (hardware.prefill_time first); without it the
    decimals are kept as given (a curated item's source text fixes its own)."""
    if decimals < 0:
        raise ValueError("decimals must be >= 0")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"a NAT key needs a finite value, got {value}")
    if digits_rule:
        decimals = asked_decimals(value, decimals)
    lo, hi = nat_range(value, decimals)
    return NumericKey(value=value, lo=lo, hi=hi, decimals=decimals, unit=unit, scale=scale)



#: Words that scale a count ("billion parameters", "million tokens").
SCALE_WORDS = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_SI_POWER = {"": 0, "K": 3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_POWER = {"K": 10, "M": 20, "G": 30, "T": 40, "P": 50}
_SI_UNIT = re.compile(r"([KkMGTPE]?)(B|bytes|FLOPs?|FLOP|B/s|FLOP/s)")
_BIN_UNIT = re.compile(r"([KMGTP])iB(/s)?")
_TIMES_POWER = re.compile(r"×\s*10\^?\{?([⁻⁺-]?[⁰¹²³⁴⁵⁶⁷⁸⁹0-9]+)\}?(?:\s|$)")
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def key_factor(key: Key) -> Fraction | None:
    """How many of the counted things (parameters, tokens, bytes, FLOPs, bytes/s, FLOP/s) one
    unit of the answer stands for: 10⁹ for "billion parameters" and for GB, 2³⁰ for GiB, 10²⁰
    for a key whose ``scale`` is 20 ("give C in units of 10²⁰ FLOPs"), 1 for a plain count; None
    for a unit that is not a scaled count (ms, %, days, PF-days, FLOP/byte).

    The reader uses it to read ``12.88B`` as 12.88 for a key in billions, and the judge to
    accept the full count (``12,879,925,248``, ``1.288e10``) for it."""
    if isinstance(key, NumericKey) and key.scale:
        return Fraction(10) ** key.scale
    unit = getattr(key, "unit", None)
    if unit is None:
        return None
    word = unit.split("(")[0].strip()
    if not word:
        return Fraction(1)
    m = _TIMES_POWER.match(word)  # "× 10⁻⁵", "× 10^-3": a key in units of a power of ten (issue 38)
    if m:
        return Fraction(10) ** int(m.group(1).translate(_SUPERSCRIPT))
    first = word.split()[0]
    if first.lower() in SCALE_WORDS:
        return Fraction(10) ** SCALE_WORDS[first.lower()]
    m = _SI_UNIT.fullmatch(first)
    if m:
        return Fraction(10) ** _SI_POWER[m.group(1)]
    m = _BIN_UNIT.fullmatch(first)
    if m:
        return Fraction(2) ** _BIN_POWER[m.group(1)]
    if first in ("parameters", "params", "tokens", "sequences", "chips", "bits", "rows", "bytes", "FLOPs", "×"):
        return Fraction(1)
    return None


def integer_key(value: int, unit: str = "", rel_tol: float = 0.0) -> IntegerKey:
    if int(value) != value:
        raise ValueError(f"an integer key needs an integer, got {value}")
    return IntegerKey(value=int(value), unit=unit, rel_tol=rel_tol)



def matrix_key(rows: Any, decimals: int | None = 2, abs_tol: float | None = None) -> MatrixKey:
    """A matrix keyed entrywise. An entry is accepted when it is within ``abs_tol`` of the
    exact entry (default ½·10⁻ᵈ) or when it lies in the NAT range of that entry at ``decimals``."""
    tup = tuple(tuple(float(x) for x in row_list(r)) for r in rows_of(rows))
    if decimals == 0 and abs_tol is None and all(x.is_integer() for r in tup for x in r):
        # an integer matrix (QKᵀ of integer inputs) is keyed exactly: 1.4 does not "round to" 1 here
        return MatrixKey(value=tup, abs_tol=0.0, decimals=None)
    if abs_tol is None:
        abs_tol = half_unit(decimals) if decimals is not None else 5e-3
    return MatrixKey(value=tup, abs_tol=abs_tol, decimals=decimals)



def choice_key(*correct: int) -> ChoiceKey:
    return ChoiceKey(correct=frozenset(int(c) for c in correct))



def to_float(x: Any) -> float | None:
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



def rows_of(x: Any) -> list:
    if hasattr(x, "tolist") and not isinstance(x, list | tuple):
        x = x.tolist()
    return list(x)



def row_list(r: Any) -> list:
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



def fmt(x: float, decimals: int | None = None) -> str:
    if decimals is not None:
        return f"{x:.{decimals}f}"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"



def plural(d: int) -> str:
    return f"{d} decimal place" + ("" if d == 1 else "s")



def describe_key(key: Key, options_text: list[str] | None = None) -> str:
    """The keyed answer as one line: ``0.60 (accepted 0.595 to 0.605)``, ``(c) O(n²·d)``, ..."""
    if isinstance(key, NumericKey):
        shown = fmt(round_half_up(key.value, key.decimals), key.decimals) if key.decimals is not None else fmt(key.value)
        unit = f" {key.unit}" if key.unit else ""
        return f"{shown}{unit} (accepted {fmt(key.lo, range_digits(key))} to {fmt(key.hi, range_digits(key))})"
    if isinstance(key, IntegerKey):
        unit = f" {key.unit}" if key.unit else ""
        tol = f" (within {key.rel_tol:.2%})" if key.rel_tol else ""
        return f"{key.value:,}{unit}{tol}"
    if isinstance(key, MatrixKey):
        return "; ".join(" ".join(fmt(x, key.decimals) for x in row) for row in key.value)
    letters = ", ".join(f"({LETTERS[i]})" for i in sorted(key.correct))
    if options_text:
        return "; ".join(f"({LETTERS[i]}) {options_text[i]}" for i in sorted(key.correct) if i < len(options_text))
    return letters



def range_digits(key: NumericKey) -> int | None:
    return None if key.decimals is None else key.decimals + 1



def values_coincide(a: Any, b: Any, key: Key) -> bool:
    """True when answer ``a`` and answer ``b`` would be graded alike under ``key``'s tolerance
    (used to keep misconceptions and MCQ options apart from the key and from each other)."""
    if isinstance(key, NumericKey):
        fa, fb = to_float(a), to_float(b)
        if fa is None or fb is None:
            return False
        if key.decimals is None:
            width = (key.hi - key.lo) / 2
            return abs(fa - fb) <= width + FLOAT_SLACK * max(1.0, abs(fa))
        return round_half_up(fa, key.decimals) == round_half_up(fb, key.decimals) or in_range(
            fb, *nat_range(fa, key.decimals)
        )
    if isinstance(key, IntegerKey):
        fa, fb = to_float(a), to_float(b)
        if fa is None or fb is None:
            return False
        return abs(fa - fb) <= key.rel_tol * max(abs(fa), abs(fb)) or fa == fb
    if isinstance(key, MatrixKey):
        try:
            ra = [[float(x) for x in row_list(r)] for r in rows_of(a)]
            rb = [[float(x) for x in row_list(r)] for r in rows_of(b)]
        except (TypeError, ValueError):
            return False
        if [len(r) for r in ra] != [len(r) for r in rb]:
            return False
        return all(abs(x - y) <= key.abs_tol + 1e-12 for r1, r2 in zip(ra, rb, strict=True) for x, y in zip(r1, r2, strict=True))
    return as_choice_set(a) == as_choice_set(b)



def as_choice_set(value: Any) -> frozenset[int] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return frozenset({value})
    if isinstance(value, set | frozenset | list | tuple):
        if all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            return frozenset(value)
    return None



def answer_text(key: Key, options_text: list[str] | None = None) -> str:
    """The answer as a solution's last line states it (``describe_key`` without the range)."""
    if isinstance(key, NumericKey):
        s = fmt(round_half_up(key.value, key.decimals), key.decimals) if key.decimals is not None else fmt(key.value)
        return s + (f" {key.unit}" if key.unit else "")
    if isinstance(key, IntegerKey):
        return f"{key.value:,}" + (f" {key.unit}" if key.unit else "")
    return describe_key(key, options_text)
