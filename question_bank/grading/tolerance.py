"""Tolerances: the named comparators every verdict in qkv uses (quiz, exam, checker, Moodle
ranges), the NAT rounding rule and its ranges, and how many digits a student wrote."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

# The quiz's rounding rule lives with the one number formatter (solver.units), so that every
# figure qkv prints and every key the quiz checks round the same way.
from solver.units import round_half_up  # noqa: F401 - re-exported

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



#: The most significant figures a NAT answer is ever asked for (the digit rule, :func:`asked_decimals`).
MAX_SIG_FIGS = 4

_DIGIT_WORDS = ("no", "one", "two", "three", "four", "five", "six")


def asked_decimals(value: float, decimals: int) -> int:
    """THE digit rule of a NAT answer (one place, every family: :func:`~question_bank.grading.keys.nat_key`).

    A family asks for ``decimals`` places; the answer is asked to that many, but never to more
    than :data:`MAX_SIG_FIGS` significant figures: ``min(decimals, 3 − ⌊log₁₀|r|⌋)`` (not below
    0), with ``r`` the value rounded to ``decimals`` places. So 0.61234 is asked to two places
    (0.61), 1234.5678 ms to none (1235), 12.3456 to two (12.35): an answer written to four
    significant figures always has at least the digits asked (a key of 10⁴ or more is a whole
    number). The statement says the result in :func:`rounded_off`'s words, and the judge
    (:func:`digits_verdict`) holds an answer to it:

    * an answer that rounds to the key at the asked places is right (the key's range);
    * an answer with more digits than asked is right when it lies within that rounding (a note
      says what to write);
    * an answer with fewer digits than asked is "rounded too early" (``too_few_digits``), named
      as such, even when it is the exact value rounded correctly to its own places."""
    if decimals <= 0:
        return max(0, decimals)
    r = abs(round_half_up(float(value), decimals))
    if not math.isfinite(r) or r == 0:
        return decimals
    return max(0, min(decimals, MAX_SIG_FIGS - 1 - math.floor(math.log10(r))))


def precision_words(decimals: int) -> str:
    """``two decimal places`` / ``one decimal place`` / ``a whole number`` (the statement's words)."""
    if decimals == 0:
        return "a whole number"
    word = _DIGIT_WORDS[decimals] if decimals < len(_DIGIT_WORDS) else str(decimals)
    return f"{word} decimal place" + ("" if decimals == 1 else "s")


def rounded_off(decimals: int) -> str:
    """The rule's words in a statement: ``rounded off to two decimal places`` (after "Give it in
    ms, "), the same in every family; :func:`round_off` is the sentence form."""
    return f"rounded off to {precision_words(decimals)}"


def round_off(decimals: int) -> str:
    """``Round off to two decimal places.``: the rule's sentence (see :func:`rounded_off`)."""
    return f"Round off to {precision_words(decimals)}."


#: How a statement may say the rule (checked for every NAT draw of every family).
PRECISION_PHRASE = re.compile(r"round(?:ed)? off to (a whole number|\w+ decimal places?)", re.IGNORECASE)


def digits_verdict(given: float, written: str | None, exact: float, decimals: int, lo: float, hi: float) -> str | None:
    """How :func:`asked_decimals`' rule judges the digits of an answer ``given`` (as ``written``)
    for ``exact`` asked to ``decimals`` places with accepted range ``[lo, hi]``:

    ``"right"`` (in the range, the digits asked), ``"more_digits"`` (in the range, more digits
    than asked: right), ``"fewer_digits"`` (in the range, fewer digits written, e.g. ``1234`` for
    1234.0: right), ``"too_few_digits"`` (out of the range, but the exact value rounded to fewer
    places than asked: rounded too early), ``"rounded_wrongly"`` (out of the range, within one
    unit of the last asked digit: truncated or rounded from rounded intermediates), or None
    (none of these: the answer is wrong, or another diagnosis applies)."""
    wd = decimals_written(written)
    if in_range(given, lo, hi):
        if wd is None or wd == decimals:
            return "right"
        return "more_digits" if wd > decimals else "fewer_digits"
    for k in range(0, decimals):
        if wd is not None and wd != k:
            continue
        if abs(given - round_half_up(exact, k)) <= FLOAT_SLACK * max(1.0, abs(given)):
            return "too_few_digits"
    if abs(given - exact) <= 10.0 ** (-decimals) * (1 + 1e-9):
        return "rounded_wrongly"
    return None



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






def half_unit(decimals: int) -> float:
    return 0.5 * 10.0 ** (-decimals)


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



def in_range(v: float, lo: float, hi: float) -> bool:
    s = FLOAT_SLACK * max(1.0, abs(lo), abs(hi))
    return lo - s <= v <= hi + s


#: An exact value closer than this (in units of the last asked digit) to a rounding boundary
#: is keyed with both roundings. Families stay further away (:data:`ENTRY_MARGIN`, 0.1).
BOUNDARY_MARGIN = 0.05



def nat_range(value: float, decimals: int) -> tuple[float, float]:
    """What rounding ``value`` to ``decimals`` places accepts: ``[r − h, r + h]`` with h half a
    unit; for a value within :data:`BOUNDARY_MARGIN` of the boundary, the neighbouring rounding's
    interval too."""
    r = round_half_up(value, decimals)
    h = half_unit(decimals)
    lo, hi = r - h, r + h
    if not safe_for_rounding(value, decimals, BOUNDARY_MARGIN):
        if value > r:
            hi = r + 3 * h  # up to the next rounding's upper edge
        else:
            lo = r - 3 * h
    return lo, hi
