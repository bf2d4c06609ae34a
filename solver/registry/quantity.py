"""Quantities: an exact magnitude and a unit, for ``qkv calc`` and the formula registry.

A :class:`Quantity` is a magnitude (a ``Fraction`` while every input was exact, a ``float``
once an inexact step such as a square root came in) times a product of three base units:

- ``B``     bytes (``bit`` = 1/8 B);
- ``FLOP``  floating-point operations (a multiply-add is 2 FLOP, as everywhere in qkv);
- ``s``     seconds.

Counts (``tokens``, ``params``, ranks, layers) are plain numbers: ``70e9 params × 2 B`` is
140 GB, as people write it. Prefixes: ``k M G T P E`` are powers of 10³, ``Ki Mi Gi Ti Pi Ei``
powers of 2¹⁰. ``FLOPS`` (capital S) and ``FLOP/s`` are a rate; ``FLOPs`` is a count.

Why not pint: it takes about 0.35 s to import and build its registry (four times ``import
numpy``), and it computes in floats; qkv keeps 1 GiB = 1,073,741,824 B exact. The tests hold
every factor here against pint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from solver.errors import SolverInputError

#: base dimensions, in this order in every exponent tuple
BASE = ("B", "FLOP", "s")
Dims = tuple[int, int, int]
NONE: Dims = (0, 0, 0)

#: largest magnitude a quantity may take (a number past this is refused, never overflows)
LIMIT = Fraction(10) ** 300
#: largest numerator or denominator, in bits, of an exact magnitude before it becomes a float
EXACT_BITS = 2048

SI = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
SMALL = {"m": Fraction(1, 10**3), "u": Fraction(1, 10**6), "µ": Fraction(1, 10**6), "μ": Fraction(1, 10**6),
         "n": Fraction(1, 10**9), "p": Fraction(1, 10**12)}

# name -> (factor, dims, takes prefixes)
_UNITS: dict[str, tuple[Fraction, Dims, str]] = {
    "B": (Fraction(1), (1, 0, 0), "big"), "byte": (Fraction(1), (1, 0, 0), ""), "bytes": (Fraction(1), (1, 0, 0), ""),
    "bit": (Fraction(1, 8), (1, 0, 0), "big"), "bits": (Fraction(1, 8), (1, 0, 0), ""),
    "b": (Fraction(1, 8), (1, 0, 0), "si"),
    "FLOP": (Fraction(1), (0, 1, 0), "big"), "FLOPs": (Fraction(1), (0, 1, 0), "big"),
    "flop": (Fraction(1), (0, 1, 0), ""),
    "FLOPS": (Fraction(1), (0, 1, -1), "big"),
    "s": (Fraction(1), (0, 0, 1), "small"), "sec": (Fraction(1), (0, 0, 1), ""),
    "second": (Fraction(1), (0, 0, 1), ""), "seconds": (Fraction(1), (0, 0, 1), ""),
    "min": (Fraction(60), (0, 0, 1), ""), "minute": (Fraction(60), (0, 0, 1), ""),
    "minutes": (Fraction(60), (0, 0, 1), ""),
    "h": (Fraction(3600), (0, 0, 1), ""), "hour": (Fraction(3600), (0, 0, 1), ""),
    "hours": (Fraction(3600), (0, 0, 1), ""), "hr": (Fraction(3600), (0, 0, 1), ""),
    "day": (Fraction(86400), (0, 0, 1), ""), "days": (Fraction(86400), (0, 0, 1), ""),
    "d": (Fraction(86400), (0, 0, 1), ""),
    "week": (Fraction(7 * 86400), (0, 0, 1), ""), "weeks": (Fraction(7 * 86400), (0, 0, 1), ""),
    "year": (Fraction(36525 * 864), (0, 0, 1), ""), "years": (Fraction(36525 * 864), (0, 0, 1), ""),
    "token": (Fraction(1), NONE, ""), "tokens": (Fraction(1), NONE, ""),
    "param": (Fraction(1), NONE, ""), "params": (Fraction(1), NONE, ""),
    "Hz": (Fraction(1), (0, 0, -1), "big"),
    "%": (Fraction(1, 100), NONE, ""),
}
#: the unit names people read first, for the one-line descriptions of units
UNIT_HELP = {
    "B": "byte (kB, MB, GB, TB = 10³ⁿ B; KiB, MiB, GiB, TiB = 2¹⁰ⁿ B)", "bit, b": "1/8 byte (Gb/s, Gbit/s)",
    "FLOP, FLOPs": "one floating-point operation (a multiply-add is 2); TFLOP, PFLOP",
    "FLOPS, FLOP/s": "a rate: FLOP per second (TFLOPS = 10¹² FLOP/s)",
    "s": "second (ms, us, µs, ns); min, h, hour, day (86,400 s), week, year (365.25 days)",
    "tokens, params": "counts: plain numbers (70e9 params × 2 B = 140 GB)", "%": "1/100",
}


PREFIXES = {"big": {**SI, **BINARY}, "si": SI, "small": SMALL, "": {}}
_BY_LENGTH = sorted({**SI, **BINARY, **SMALL}, key=len, reverse=True)


def unit(name: str) -> tuple[Fraction, Dims] | None:
    """(factor to base units, dims) of a unit name with its prefix, or None if it is no unit."""
    if name in _UNITS:
        f, d, _ = _UNITS[name]
        return f, d
    for p in _BY_LENGTH:
        rest = name[len(p):]
        if name.startswith(p) and rest in _UNITS and p in PREFIXES[_UNITS[rest][2]]:
            f, d, _ = _UNITS[rest]
            return PREFIXES[_UNITS[rest][2]][p] * f, d
    return None


def unit_names() -> list[str]:
    return sorted(_UNITS)


def _dims_text(d: Dims) -> str:
    num = [b if e == 1 else f"{b}^{e}" for b, e in zip(BASE, d, strict=True) if e > 0]
    den = [b if e == -1 else f"{b}^{-e}" for b, e in zip(BASE, d, strict=True) if e < 0]
    if not num and not den:
        return ""
    text = "·".join(num) or "1"
    if den:
        text += "/" + ("·".join(den) if len(den) == 1 else "(" + "·".join(den) + ")")
    return text


#: the name each dimension is shown with, and what it is called in a refusal
DIM_NAMES = {(1, 0, 0): "bytes", (0, 1, 0): "FLOP", (0, 0, 1): "seconds", (1, 0, -1): "bytes/s",
             (0, 1, -1): "FLOP/s", (-1, 1, 0): "FLOP/byte", NONE: "a plain number"}


def dims_name(d: Dims) -> str:
    return DIM_NAMES.get(d) or _dims_text(d)


def _bounded(m: Fraction | float) -> Fraction | float:
    if isinstance(m, Fraction):
        if abs(m) > LIMIT:
            raise SolverInputError("a number is too large (more than 10^300)")
        if m.numerator.bit_length() > EXACT_BITS or m.denominator.bit_length() > EXACT_BITS:
            m = float(m)
    if isinstance(m, float) and (not math.isfinite(m) or abs(m) > 1e300):
        raise SolverInputError("a number is too large (more than 10^300)")
    if m != 0 and abs(m) < 1e-300:
        raise SolverInputError("a number is too small (less than 10^-300)")
    return m


@dataclass(frozen=True)
class Quantity:
    """``magnitude`` × base units ``dims`` (bytes, FLOP, seconds exponents)."""

    magnitude: Fraction | float
    dims: Dims = NONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "magnitude", _bounded(self.magnitude))

    @property
    def exact(self) -> bool:
        return isinstance(self.magnitude, Fraction)

    # arithmetic -----------------------------------------------------------------------
    def _same(self, other: Quantity, verb: str) -> None:
        if self.dims != other.dims:
            raise SolverInputError(f"cannot {verb} {describe(self)} and {describe(other)}")

    def __add__(self, other: Quantity) -> Quantity:
        self._same(other, "add")
        return Quantity(self.magnitude + other.magnitude, self.dims)

    def __sub__(self, other: Quantity) -> Quantity:
        self._same(other, "subtract")
        return Quantity(self.magnitude - other.magnitude, self.dims)

    def __mul__(self, other: Quantity) -> Quantity:
        return Quantity(self.magnitude * other.magnitude,
                        tuple(a + b for a, b in zip(self.dims, other.dims, strict=True)))

    def __truediv__(self, other: Quantity) -> Quantity:
        if other.magnitude == 0:
            raise SolverInputError("division by zero")
        return Quantity(_div(self.magnitude, other.magnitude),
                        tuple(a - b for a, b in zip(self.dims, other.dims, strict=True)))

    def __neg__(self) -> Quantity:
        return Quantity(-self.magnitude, self.dims)

    def power(self, exponent: Quantity) -> Quantity:
        if exponent.dims != NONE:
            raise SolverInputError(f"an exponent must be a plain number, not {describe(exponent)}")
        e, base = exponent.magnitude, self.magnitude
        whole = isinstance(e, Fraction) and e.denominator == 1
        if self.dims != NONE and not (whole and abs(e) <= 12):
            raise SolverInputError("a unit can only be raised to a whole power of at most 12")
        if base == 0:
            if e <= 0:
                raise SolverInputError("0 to a power that is not positive")
            return Quantity(Fraction(0), tuple(int(a * e) for a in self.dims))
        if base < 0 and not whole:
            raise SolverInputError("a negative number to a fractional power")
        if abs(float(e) * math.log10(abs(float(base)))) > 300:
            raise SolverInputError("a number is too large or too small (past 10^±300)")
        if whole:
            k = int(e)
            return Quantity(base ** k, tuple(a * k for a in self.dims))
        return Quantity(float(base) ** float(e))

    def to(self, target: Quantity, name: str) -> float | Fraction:
        """The magnitude in the unit ``target`` (a quantity of 1 ``name``)."""
        if self.dims != target.dims:
            raise SolverInputError(f"cannot convert {describe(self)} to {name} ({dims_name(target.dims)})")
        return _div(self.magnitude, target.magnitude)

    def float(self) -> float:
        return float(self.magnitude)


def _div(a, b):
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a / b
    return float(a) / float(b)


def describe(q: Quantity) -> str:
    """``3 s``, ``2 GB``: a quantity as a refusal names it."""
    from solver.registry.display import short

    return short(q)
