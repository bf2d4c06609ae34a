"""Units of ``qkv calc``: every factor against a hand-written one and against pint (a units
library that shares no code with ours), and mixing incompatible units refused."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.registry.calc import evaluate_unit
from solver.registry.quantity import Quantity, unit

# (unit as typed, its size in bytes / FLOP / seconds, written out by hand)
HAND = [
    ("B", 1), ("kB", 1000), ("KB", 1000), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12), ("PB", 10**15),
    ("KiB", 1024), ("MiB", 1024 * 1024), ("GiB", 1024**3), ("TiB", 1024**4),
    ("bit", Fraction(1, 8)), ("Gb", Fraction(10**9, 8)), ("Gbit", Fraction(10**9, 8)),
    ("FLOP", 1), ("TFLOP", 10**12), ("PFLOP", 10**15), ("TFLOPS", 10**12),
    ("s", 1), ("ms", Fraction(1, 1000)), ("us", Fraction(1, 10**6)), ("µs", Fraction(1, 10**6)),
    ("ns", Fraction(1, 10**9)), ("min", 60), ("h", 3600), ("hour", 3600), ("day", 24 * 3600),
    ("days", 24 * 3600), ("week", 7 * 24 * 3600),
]


@pytest.mark.parametrize(("name", "factor"), HAND)
def test_factor_is_the_hand_written_one(name, factor):
    f, _ = unit(name)
    assert f == Fraction(factor)


# pint's names for ours (bytes as pint's "byte", FLOP as a counted "count" would lose the
# dimension, so FLOP is checked by hand above and pint checks bytes, bits and time)
PINT = [("GB", "gigabyte"), ("GiB", "gibibyte"), ("MiB", "mebibyte"), ("TB", "terabyte"), ("kB", "kilobyte"),
        ("Gb", "gigabit"), ("bit", "bit"), ("ms", "millisecond"), ("us", "microsecond"), ("ns", "nanosecond"),
        ("min", "minute"), ("h", "hour"), ("day", "day"), ("week", "week"), ("GB/s", "gigabyte/second"),
        ("Gb/s", "gigabit/second"), ("TB/s", "terabyte/second")]


@pytest.mark.parametrize(("ours", "theirs"), PINT)
def test_factor_agrees_with_pint(ours, theirs):
    pint = pytest.importorskip("pint")
    ureg = pint.UnitRegistry()
    q = evaluate_unit(ours)
    base = "byte" if q.dims[0] else ""
    base += ("/second" if q.dims[2] == -1 else "") if base else ("second" if q.dims[2] == 1 else "")
    assert float(q.magnitude) == pytest.approx(ureg(theirs).to(base).magnitude, rel=1e-12)


@given(st.sampled_from([h[0] for h in HAND]), st.sampled_from([h[0] for h in HAND]))
def test_mixing_units_is_refused_unless_their_kinds_agree(a, b):
    """a + b works exactly when both units measure the same thing; the refusal names both."""
    qa, qb = evaluate_unit(a), evaluate_unit(b)
    if qa.dims == qb.dims:
        assert (qa + qb).magnitude == qa.magnitude + qb.magnitude
    else:
        with pytest.raises(SolverInputError, match="cannot add"):
            _ = qa + qb


@given(st.fractions(min_value=-10**6, max_value=10**6), st.fractions(min_value=Fraction(1, 10**6), max_value=10**6))
def test_exact_arithmetic_stays_exact(a, b):
    q = Quantity(a, (1, 0, 0)) / Quantity(b, (0, 0, 1))
    assert q.magnitude == a / b and q.dims == (1, 0, -1) and q.exact


def test_powers_are_bounded_before_they_are_computed():
    with pytest.raises(SolverInputError, match="too large"):
        Quantity(Fraction(10)).power(Quantity(Fraction(10**6)))
    with pytest.raises(SolverInputError, match="whole power"):
        evaluate_unit("GB").power(Quantity(Fraction(1, 2)))
