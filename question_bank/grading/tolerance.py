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
