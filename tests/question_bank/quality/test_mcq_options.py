"""Property: every MCQ/MSQ a family can produce, at any seed and difficulty, is a fair choice
question.

- options are pairwise distinct as a student reads them: text compared after normalising case
  and whitespace, every number in it compared as a number at the precision it is shown with
  ("63.0" and "63" coincide, "1,024" and "1024" coincide); where the family records the options'
  values (``given["option_values"]``), those too are pairwise distinct at the displayed precision;
- an MCQ has exactly one correct option, an MSQ at least one, all indices in range;
- every misconception offered as a distractor is rejected by the grader (and, for an MCQ, is not
  the keyed option), so no distractor is also right.

Families are found in the registry (every family whose declared types include mcq or msq), so a
new choice family is covered without editing this file. Seeds are drawn from 0..10⁹.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from question_bank.family import all_families
from question_bank.grading import grade

CHOICE_FAMILIES = sorted(fid for fid, f in all_families().items() if {"mcq", "msq"} & set(f.types))
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])[-−]?\d+(?:\.\d+)?")


def test_choice_families_found():
    """The registry has choice families to test (the property below would be vacuous otherwise)."""
    assert len(CHOICE_FAMILIES) >= 3, CHOICE_FAMILIES


def reading(option: str) -> tuple:
    """How a student reads an option: its words (case and whitespace normalised) and its numbers as
    numbers, each at the number of decimals it is printed with."""
    numbers = [float(m.replace(",", "").replace("−", "-")) for m in _NUMBER.findall(option)]
    words = " ".join(_NUMBER.sub("#", option).lower().split())
    return words, tuple(numbers)


def shown_decimals(option: str) -> list[int]:
    return [len(m.split(".")[1]) if "." in m else 0 for m in _NUMBER.findall(option)]


def _flat(v) -> list:
    if isinstance(v, list | tuple):
        return [x for item in v for x in _flat(item)]
    return [v]


def _value_reading(value, decimals: list[int]) -> tuple:
    """An option's recorded value at the precision its text shows (numbers rounded, text normalised)."""
    items = _flat(value)
    nums = [x for x in items if isinstance(x, int | float) and not isinstance(x, bool)]
    d = decimals + [max(decimals, default=6)] * (len(nums) - len(decimals))
    out = []
    it = iter(d)
    for x in items:
        if isinstance(x, int | float) and not isinstance(x, bool):
            q = next(it)
            out.append(math.floor(abs(x) * 10**q + 0.5) / 10**q * (1 if x >= 0 else -1))
        else:
            out.append(" ".join(str(x).lower().split()))
    return tuple(out)


@pytest.mark.parametrize("fid", CHOICE_FAMILIES)
@given(data=st.data(), seed=st.integers(0, 10**9))
def test_choice_options_fair(fid, data, seed):
    fam = all_families()[fid]
    difficulty = data.draw(st.sampled_from(fam.levels), label="difficulty")
    p = fam.generate(seed, difficulty)
    assume(p.type in ("mcq", "msq"))

    # the options as read: pairwise distinct
    for texts in (p.options_text, p.options):
        read = [reading(o) for o in texts]
        assert len(set(read)) == len(read), (p.id, texts)
    values = p.given.get("option_values")
    if values is not None and len(values) == len(p.options_text):
        shown = [_value_reading(v, shown_decimals(t)) for v, t in zip(values, p.options_text, strict=True)]
        assert len(set(shown)) == len(shown), (p.id, values)

    # the key
    n = len(p.options_text)
    correct = set(p.key.correct)
    assert correct and all(0 <= i < n for i in correct), (p.id, correct)
    if p.type == "mcq":
        assert len(correct) == 1, (p.id, correct)

    # no distractor is also right
    for m in p.misconceptions:
        if p.type == "mcq":
            assert m.value not in correct, (p.id, m.id)
        v = grade(p, m.value)
        assert not v.correct, (p.id, m.id, m.value)


def test_reading_tells_options_apart_and_together():
    """The normaliser itself: equal readings for the same figure printed two ways, different for
    different figures or words."""
    assert reading("I ≈ 63.0 <  I*") == reading("i ≈ 63 < I*")
    assert reading("1,024 FLOPs") == reading("1024 flops")
    assert reading("Memory-bound: 63.0") != reading("Compute-bound: 63.0")
    assert reading("2 × 5") != reading("5 × 2")
    assert reading("O(n² d)") != reading("O(n d²)")
