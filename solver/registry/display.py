"""How a quantity is shown: in the unit asked for, or in the readable unit of its kind.

Bytes are shown in SI units with the binary figure beside them (GB and GiB are both asked in
exams), times in the largest unit that keeps the figure at 1 or more, rates per second.
"""

from __future__ import annotations

from fractions import Fraction

from solver.registry.quantity import NONE, Quantity, _dims_text
from solver.units import format_number

_SI = [("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3), ("", 1)]
_TIMES = [("days", 86400), ("h", 3600), ("min", 60), ("s", 1), ("ms", Fraction(1, 10**3)),
          ("µs", Fraction(1, 10**6)), ("ns", Fraction(1, 10**9))]
_BINARY = [("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)]


def _scaled(m, ladder, suffix: str = "") -> tuple[str, Fraction | int]:
    a = abs(float(m))
    for name, factor in ladder:
        if a >= factor:
            return name + suffix, factor
    return ladder[-1][0] + suffix, ladder[-1][1]


def readable_unit(q: Quantity) -> tuple[str, Fraction | int]:
    """(unit name, its size in base units) that shows ``q`` best."""
    d, m = q.dims, q.magnitude
    if d == (1, 0, 0):
        return _scaled(m, _SI, "B")
    if d == (0, 1, 0):
        return _scaled(m, _SI, "FLOP")
    if d == (0, 0, 1):
        a = abs(float(m))
        if 0 < a < 1:
            return _scaled(m, _TIMES[4:])
        if a < 120:
            return "s", 1
        if a < 7200:
            return "min", 60
        if a < 2 * 86400:
            return "h", 3600
        return "days", 86400
    if d == (1, 0, -1):
        return _scaled(m, _SI, "B/s")
    if d == (0, 1, -1):
        return _scaled(m, _SI, "FLOP/s")
    if d == (-1, 1, 0):
        return "FLOP/B", 1
    return _dims_text(d), 1


def number(x: Fraction | float | int, sig: int = 6) -> str:
    return format_number(x, sig)


def _div(a, b):
    return a / b if isinstance(a, Fraction | int) and isinstance(b, Fraction | int) else float(a) / float(b)


def short(q: Quantity) -> str:
    """``3 s``, ``2 GB``: the figure in its readable unit, six significant figures."""
    if q.dims == NONE:
        return number(q.magnitude)
    name, factor = readable_unit(q)
    return f"{number(_div(q.magnitude, factor))} {name}"


def exact_text(x) -> str | None:
    """``2800/67`` for a fraction that is not whole (small enough to read), else None."""
    if isinstance(x, Fraction) and x.denominator != 1 and x.denominator < 10**6 and abs(x.numerator) < 10**6:
        return f"{x.numerator}/{x.denominator}"
    return None


def views(q: Quantity) -> list[str]:
    """Other readings worth a glance: GiB beside GB, the exact base-unit figure."""
    out = []
    if q.dims == (1, 0, 0) and abs(float(q.magnitude)) >= 1024:
        name, factor = _scaled(q.magnitude, _BINARY)
        out.append(f"{number(_div(q.magnitude, factor))} {name}")
    if q.dims != NONE:
        base = _dims_text(q.dims)
        m = q.magnitude
        if isinstance(m, Fraction) and m.denominator == 1 and abs(m) < 10**18:
            out.append(f"{int(m):,} {base}")
    return out
