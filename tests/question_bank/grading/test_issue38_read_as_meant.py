"""Issue 38: answers read as meant. A key in units of 10⁻ⁿ takes the value in any form; a slip of
10³ is named as a slip before a mistake whose value rounds to zero at the asked precision."""

from __future__ import annotations

import re

from drills.answers import read_answer
from question_bank.family import all_families
from question_bank.grading import grade
from question_bank.problem import NumericKey

FAMS = all_families()


def graded(p, text):
    a = read_answer(p, text)
    return grade(p, a.value, written=a.written, unit=a.unit)


def test_negative_power_units_take_every_form():
    """lr_schedule (units of 10⁻⁵) and the MoE auxiliary loss (10⁻³): the rounded key typed as asked, as
    the value itself in e-notation, in another mantissa and as a plain decimal are all right."""
    checked = 0
    for fid in ("training.lr_schedule", "moe.router_losses"):
        if fid not in FAMS:
            continue
        for level in FAMS[fid].levels:
            p = FAMS[fid].generate(0, level)
            m = re.search(r"units of 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", p.statement_text)
            if not m or not isinstance(p.key, NumericKey) or not m[1].startswith("⁻"):
                continue
            n = int(m[1][1:].translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")))
            d = p.key.decimals
            shown = f"{p.key.value:.{d}f}"
            value = float(shown) * 10.0**-n
            for text in (shown, f"{shown}e-{n}", f"{value:.{d + 1}e}".replace("e-0", "e-"), f"{value:.{d + n}f}"):
                v = graded(p, text)
                assert v.correct, (p.id, text, v.message)
            checked += 1
    assert checked


def test_lr_schedule_issue_repro():
    """The issue's figures: key 58.158 (units of 10⁻⁵): 58.158e-5, 5.8158e-4 and 0.00058158 are right."""
    key = NumericKey(value=58.1581, lo=58.1575, hi=58.1585, decimals=3, unit="× 10⁻⁵")
    for text, value in (("58.158e-5", 58.158e-5), ("5.8158e-4", 5.8158e-4), ("0.00058158", 0.00058158)):
        v = grade(key, value, written=text)
        assert v.correct, (text, v.message)
    assert not grade(key, 58.2e-5, written="58.2e-5").correct


def test_scale_slip_named_before_a_mistake_that_rounds_to_zero():
    """serving.disaggregation easy: a thousand times the key (GB typed as MB) is a slip of the scale, not
    "counted one layer", whose value 1/L of the key rounds to 0.00 GB."""
    named = 0
    for seed in range(400):
        if named == 2:
            break
        p = FAMS["serving.disaggregation"].generate(seed, "easy")
        one = [m for m in p.misconceptions if m.id == "one_layer"]
        if not one or round(float(one[0].value), 2) != 0:
            continue
        text = f"{p.key.value * 1000:.2f}"
        v = graded(p, text)
        assert v.misconception is not None and v.misconception.id.startswith("scale_slip_up3"), (p.id, v.message)
        named += 1
    assert named
