"""Grading tables: NAT range edges, precision feedback, integers, matrices per cell, choices,
misconception diagnosis and follow-through. Expected values are derived in the docstrings."""

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from question_bank.grading import (
    audit_problem,
    choice_key,
    decimals_written,
    grade,
    grade_parts,
    integer_key,
    matrix_key,
    nat_key,
    round_half_up,
    safe_for_rounding,
    total_score,
)
from question_bank.problem import Misconception, Part, Problem


def test_nat_key_range_is_the_rounding_interval():
    """0.6024 to two decimals is 0.60; everything in [0.595, 0.605] rounds to it (ends included)."""
    k = nat_key(0.6024, 2)
    assert k.lo == pytest.approx(0.595) and k.hi == pytest.approx(0.605)
    assert k.value == 0.6024 and k.decimals == 2


@pytest.mark.parametrize(
    "value,ok",
    [(0.595, True), (0.605, True), (0.60, True), (0.6024, True), (0.5949, False), (0.6051, False), (0.61, False)],
)
def test_nat_edges(value, ok):
    assert grade(nat_key(0.6024, 2), value).correct is ok


@pytest.mark.parametrize("v,d,r", [(0.605, 2, 0.61), (2.5, 0, 3.0), (-0.125, 2, -0.13), (0.6024, 2, 0.60), (1.0005, 3, 1.001)])
def test_round_half_up(v, d, r):
    """Half away from zero on the decimal spelling: 0.605 -> 0.61 (binary 0.6049999… would give 0.60)."""
    assert round_half_up(v, d) == r


@pytest.mark.parametrize(
    "written,status,precision",
    [
        ("0.63", "correct", None),
        ("0.630", "correct", "more_digits"),
        ("0.62", "rounded_wrongly", "rounded_wrongly"),  # truncated 0.6289
        ("0.6", "too_few_digits", "too_few_digits"),  # 0.6289 to one decimal
        ("1", "too_few_digits", "too_few_digits"),  # 0.6289 to zero decimals
        ("2", "wrong", None),
        ("0.7", "wrong", None),
    ],
)
def test_precision_feedback(written, status, precision):
    """Exact 0.6289, asked to two decimals: 0.63 is right; 0.62 truncates; 0.6 has one digit too few."""
    v = grade(nat_key(0.6289, 2), float(written), written=written)
    assert (v.status, v.precision) == (status, precision)
    assert v.correct is (status == "correct")


def test_truncation_named_and_decimal_carries_digits():
    v = grade(nat_key(0.6289, 2), 0.62, written="0.62")
    assert "truncated" in v.message
    v2 = grade(nat_key(0.6289, 2), Decimal("0.630"))
    assert v2.correct and v2.precision == "more_digits" and "2 decimal places" in v2.message


@pytest.mark.parametrize("text,d", [("0.60", 2), ("6.02e-1", 3), ("3", 0), (".5", 1), ("3/5", None), ("abc", None), ("1e3", 0)])
def test_decimals_written(text, d):
    assert decimals_written(text) == d


def _nat_problem(value, mis_value):
    return Problem(
        id="t/1", family="t", seed=1, topic="t", tags=(), difficulty="easy", marks=1, type="nat",
        statement_md="s", statement_text="s", key=nat_key(value, 2), solution_md="x", solution_text="x",
        misconceptions=[Misconception("no_sqrt_dk_scaling", "forgot √dₖ", "This is the result without dividing by √dₖ.", mis_value)],
    )


def test_misconception_diagnosed_with_key_tolerance():
    """Key 0.60, mistake 0.8533 -> 0.85: any answer in [0.845, 0.855] is diagnosed."""
    p = _nat_problem(0.6024, 0.8533)
    for ans in (0.85, 0.853, 0.845):
        v = grade(p, ans)
        assert not v.correct and v.status == "misconception" and v.misconception.id == "no_sqrt_dk_scaling"
        assert "√dₖ" in v.message
    assert grade(p, 0.84).misconception is None


def test_invalid_is_not_wrong():
    v = grade(nat_key(0.5, 2), [1, 2])
    assert v.invalid and v.status == "invalid" and not v.correct
    assert grade(nat_key(0.5, 2), float("nan")).invalid


def test_integer_key():
    k = integer_key(1_048_576)
    assert grade(k, 1_048_576).correct and grade(k, 1048576.0).correct and grade(k, Fraction(1048576)).correct
    close = grade(k, 1_050_000)
    assert close.status == "close" and not close.correct
    assert grade(k, 1_000).status == "wrong"
    assert grade(integer_key(3_100_000, rel_tol=0.02), 3_150_000).correct


def test_matrix_per_cell_and_shape():
    """Key [[0.6017, 0.3983],[0.5, 0.5]] at 2 decimals: 0.60/0.40/0.50 right, 0.6 in cell (2,2) wrong."""
    k = matrix_key([[0.6017, 0.3983], [0.5, 0.5]], decimals=2)
    v = grade(k, [[0.60, 0.40], [0.50, 0.60]])
    assert not v.correct and v.status == "partial" and v.cells == ((True, True), (True, False))
    assert v.score == pytest.approx(0.75) and "(2,2)" in v.message
    assert grade(k, [[0.602, 0.398], [0.5, 0.5]]).correct
    bad = grade(k, [[0.6, 0.4]])
    assert bad.invalid and "2×2" in bad.message


def test_integer_matrix_at_zero_decimals_is_keyed_exactly():
    """QKᵀ of integer inputs is an integer matrix: 1.4 for 1 is wrong, although it rounds to 1."""
    k = matrix_key([[1, 0], [1, 1]], decimals=0)
    assert grade(k, [[1, 0], [1, 1]]).correct
    v = grade(k, [[1.4, 0], [1, 1]])
    assert not v.correct and v.cells == ((False, True), (True, True))
    assert "exactly" in v.accepted
    assert grade(matrix_key([[0.6, 1.0]], decimals=0), [[1, 1]]).correct  # non-integer keys keep the range


def test_matrix_transpose_and_flat_row():
    k = matrix_key([[1, 2], [3, 4]], decimals=None, abs_tol=1e-6)
    assert "transpose" in grade(k, [[1, 3], [2, 4]]).message
    assert grade(matrix_key([[0.25, 0.75]], decimals=2), [0.25, 0.75]).correct


def test_choice_keys():
    p = Problem(
        id="c/1", family="c", seed=1, topic="t", tags=(), difficulty="easy", marks=1, type="mcq",
        statement_md="s", statement_text="s", key=choice_key(2), solution_md="x", solution_text="x",
        options=["a", "b", "c", "d"], options_text=["a", "b", "c", "d"],
        misconceptions=[Misconception("wrong_axis", "axis", "Softmax over the wrong axis.", 1)],
    )
    assert grade(p, 2).correct and grade(p, {2}).correct
    assert "wrong_axis" in grade(p, 1).misconception.id.split("+")
    assert grade(p, 7).invalid
    msq = choice_key(0, 2)
    v = grade(msq, {0})
    assert not v.correct and "missing" in v.message
    assert grade(msq, {0, 2}).correct


def _two_part_problem():
    """(a) S = [[1, 2]]; (b) 2·S = [[2, 4]], follow-through: (b) = 2·(student's a)."""
    ka = matrix_key([[1, 2]], decimals=None, abs_tol=1e-9)
    kb = matrix_key([[2, 4]], decimals=None, abs_tol=1e-9)

    def follow(e):
        return matrix_key([[2 * x for x in e["a"][0]]], decimals=None, abs_tol=1e-9)

    parts = [Part("a", "matrix", "S", "S", ka), Part("b", "matrix", "2S", "2S", kb, follow=follow)]
    return Problem(
        id="f/1", family="f", seed=1, topic="t", tags=(), difficulty="easy", marks=2, type="matrix",
        statement_md="s", statement_text="s", key=kb, solution_md="x", solution_text="x", parts=parts,
    )


def test_follow_through():
    p = _two_part_problem()
    out = grade_parts(p, {"a": [[1, 3]], "b": [[2, 6]]})
    assert not out["a"].correct
    assert out["b"].correct and out["b"].follow_through and out["b"].status == "follow_through"
    assert "(a)" in out["b"].message and out["b"].expected == ((2.0, 4.0),)
    assert total_score(out) == pytest.approx(0.5 + 0.5 * 0.5)  # (a) has one right cell of two
    # a right (a) and a wrong (b): no follow-through
    out2 = grade_parts(p, {"a": [[1, 2]], "b": [[2, 6]]})
    assert not out2["b"].correct and not out2["b"].follow_through
    # a wrong (b) that does not follow from (a) either
    out3 = grade_parts(p, {"a": [[1, 3]], "b": [[5, 5]]})
    assert not out3["b"].correct
    # unanswered (a): (b) is judged against the key
    out4 = grade_parts(p, {"b": [[2, 4]]})
    assert out4["a"].status == "unanswered" and out4["b"].correct


def test_audit_catches_a_misconception_equal_to_the_key():
    p = _nat_problem(0.6024, 0.601)
    assert any("accepted as correct" in m for m in audit_problem(p))


@given(st.floats(-1000, 1000, allow_nan=False), st.integers(0, 4))
def test_rounded_key_accepted_and_one_unit_off_rejected(x, d):
    """Property: round(x, d) is always accepted; round(x, d) ± 1.01·10⁻ᵈ never is, except on the
    side of a boundary that x sits on (within a twentieth of a unit: both roundings accepted),
    where the neighbouring rounding is accepted and two units off is not."""
    k = nat_key(x, d)
    r = round_half_up(x, d)
    u = 10**-d
    assert grade(k, r).correct
    on_boundary = not safe_for_rounding(x, d, 0.05)
    up_ok = on_boundary and x > r
    down_ok = on_boundary and x < r
    assert grade(k, r + u).correct if up_ok else not grade(k, r + 1.01 * u).correct
    assert grade(k, r - u).correct if down_ok else not grade(k, r - 1.01 * u).correct
    assert not grade(k, r + 2.01 * u).correct and not grade(k, r - 2.01 * u).correct


@given(st.floats(0, 100, allow_nan=False), st.integers(1, 3))
def test_safe_values_survive_small_perturbations(x, d):
    """Property: a value a tenth of a unit from any rounding boundary keeps its rounding under ±0.05 units."""
    if safe_for_rounding(x, d, 0.1):
        u = 10**-d
        assert grade(nat_key(x, d), x + 0.05 * u).correct and grade(nat_key(x, d), x - 0.05 * u).correct


def _graded(key, text):
    """Grade ``text`` as the quiz does: parse, convert to the key's unit, pass the unit typed."""
    from types import SimpleNamespace

    from drills.answers import given_unit as unit_for
    from drills.answers import graded_value as value_for
    from drills.answers import parse_number

    target = SimpleNamespace(key=key, type="nat")
    parsed = parse_number(text)
    value, written = value_for(parsed, target)
    return grade(key, value, written=written, unit=unit_for(parsed, target))


@pytest.mark.parametrize("text,correct,status,words", [
    # 20 Gb = 20·10⁹ bits = 2.5·10⁹ bytes = 2.5 GB: the key in bits (×8)
    ("20 Gb", False, "wrong_unit", "you answered in bits; the key is in bytes (÷ 8): 20 Gbit = 2.5 GB"),
    ("20 Gbit", False, "wrong_unit", "you answered in bits; the key is in bytes (÷ 8)"),
    ("2e10 bits", False, "wrong_unit", "you answered in bits; the key is in bytes (÷ 8)"),
    # 2.5 Gb is the key's number with b for B: 2.5 Gb = 0.3125 GB
    ("2.5 Gb", False, "wrong_unit", "Gbit is bits, so 2.5 Gbit = 0.3125 GB; for bytes write GB"),
    # 3 Gb = 0.375 GB: just wrong, the conversion shown
    ("3 Gb", False, "wrong", "You answered in bits: 3 Gbit = 0.375 GB"),
    # all lower case reads as bytes; GiB converts: 2.33 GiB = 2.33·1.073741824 = 2.5018 GB
    ("2.5 gb", True, "correct", "Correct"),
    ("2.5 GB", True, "correct", "Correct"),
    ("2.33 GiB", True, "correct", "2.33 GiB = 2.50182 GB"),
])
def test_bits_for_a_key_in_bytes(text, correct, status, words):
    key = nat_key(2.5, 2, unit="GB")
    v = _graded(key, text)
    assert (v.correct, v.status) == (correct, status), v.message
    assert words in v.message
    assert v.score == (1.0 if correct else 0.0)


def test_bits_for_an_integer_byte_key():
    """A key of 1,024 bytes: 8192 bits is it × 8; 8 Kib = 8·1024 bits = 1,024 bytes."""
    key = integer_key(1024, unit="bytes")
    for text in ("8192 bits", "8 Kib"):
        v = _graded(key, text)
        assert v.status == "wrong_unit" and "you answered in bits" in v.message
    assert _graded(key, "1024 bytes").correct and _graded(key, "1 KiB").correct


def test_a_value_on_a_rounding_boundary_accepts_both_roundings():
    """Seed 004's worked example has weight 4.113/8.169 = 0.50349 asked to 3 decimals: with
    4-digit intermediates a careful student gets 0.503 or 0.504, so both are accepted; 0.502 and
    0.505 are not. A value clear of the boundary (0.6017 at 2 decimals) keeps one rounding."""
    k = nat_key(0.50349, 3)
    assert grade(k, 0.503).correct and grade(k, 0.504).correct
    assert not grade(k, 0.502).correct and not grade(k, 0.505).correct
    assert "0.503 or 0.504" in grade(k, 0.504).accepted
    clear = nat_key(0.6017, 2)
    assert (clear.lo, clear.hi) == pytest.approx((0.595, 0.605))
    m = matrix_key([[0.50349, 0.6017]], decimals=3)
    assert grade(m, [[0.504, 0.602]]).correct and not grade(m, [[0.505, 0.602]]).correct
