"""Issue 38: one mistake, one diagnosis. A numeric MCQ offers a family's named inverse slip ("divided by
h twice" for "forgot to divide by h") as an option; typing that option's value into the NAT form of the
same draw names the same mistake, with the same id and label, as choosing the option does."""

from __future__ import annotations

import pytest

from question_bank import numeric_mcq
from question_bank.bank import problem
from question_bank.family import all_families
from question_bank.grading import grade

FAMS = all_families()
VIEWS = sorted(f for f in FAMS if numeric_mcq.base_of(f))


def _checked(view: str, seeds=range(6)) -> int:
    f = FAMS[view]
    n = 0
    for lv in f.levels:
        for s in seeds:
            p = f.generate(s, lv)
            base = problem(p.given["base_problem"])
            for i, slips in enumerate(p.given["option_slips"]):
                if len(slips) != 1 or slips[0][1] != "reversed":
                    continue
                opt = next(m for m in p.misconceptions if m.value == i)  # choosing option i names this
                typed = float(p.options_text[i].split()[0].replace(",", ""))
                v = grade(base, typed)
                assert not v.correct, (p.id, i)
                assert v.misconception is not None and (v.misconception.id, v.misconception.label) == (opt.id, opt.label), \
                    (p.id, p.options_text[i], opt.id, v.misconception and v.misconception.id)
                n += 1
    return n


@pytest.mark.parametrize("view", VIEWS)
def test_a_reversed_option_typed_in_the_nat_form_names_the_same_mistake(view):
    _checked(view)


def test_the_check_above_has_reversed_options_to_check():
    assert sum(_checked(v, range(2)) for v in VIEWS) >= 20
