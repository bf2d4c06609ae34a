"""Numeric MCQs (issue 26): a numeric family's view ``<family>_mcq`` keys the base problem's own
value, its wrong options are the base problem's mistakes (or a mistake made the other way round,
recomputed here as k²/v or 2k − v), the options are sorted by value and distinct as displayed, the
feedback on each wrong option is its misconception, and the key's place is balanced."""

from __future__ import annotations

from collections import Counter

import pytest

from question_bank import bank, numeric_mcq
from question_bank.family import all_families
from question_bank.grading import grade
from question_bank.problem import IntegerKey, NumericKey

FAMS = all_families()
VIEWS = sorted(fid + numeric_mcq.SUFFIX for fid in numeric_mcq.NUMERIC_MCQ)


def _draws(fid, per_level=4):
    f = FAMS[fid]
    return [f.generate(s, lv) for lv in f.difficulties for s in range(per_level)]


def test_views_are_registered_and_many():
    # issue 22 left out the views a learned attacker beat at 100, 200 or 400 draws (each with its figure in NUMERIC_MCQ)
    assert len(VIEWS) >= 10
    for v in VIEWS:
        assert FAMS[v].types == ("mcq",)
        assert set(FAMS[v].difficulties) <= set(FAMS[numeric_mcq.base_of(v)].difficulties)
    mcq_families = {e.id for e in bank.entries(type="mcq", kind="family")}
    assert set(VIEWS) <= mcq_families


@pytest.mark.parametrize("view", VIEWS)
def test_view_keys_and_distractors(view):
    for p in _draws(view, 3):
        base = bank.problem(p.given["base_problem"])
        assert isinstance(base.key, NumericKey | IntegerKey)
        vals = p.given["option_values"]
        assert vals == sorted(vals) and len(vals) == 4
        (at,) = p.key.correct
        k = float(base.key.value)
        assert vals[at] == k
        mistakes = {m.id: float(m.value) for m in base.misconceptions}
        by_index = {m.value: m for m in p.misconceptions}
        assert set(by_index) == set(range(4)) - {at}
        for i, m in by_index.items():
            v = vals[i]
            if m.id.endswith("_reversed"):
                w = mistakes[m.id.removesuffix("_reversed")]
                want = 2 * k - w if isinstance(base.key, IntegerKey) else k * k / w
                assert v == pytest.approx(want, rel=1e-12), (p.id, m.id)
            else:
                assert v == pytest.approx(mistakes[m.id], rel=1e-12), (p.id, m.id)
            verdict = grade(p, {i})
            assert not verdict.correct and verdict.misconception.id == m.id
            assert verdict.misconception.feedback
        assert len(set(p.options)) == 4
        assert grade(p, {at}).correct


@pytest.mark.slow
def test_key_place_is_balanced():
    """Over the views, the key is each letter about a quarter of the time (sorted options: its rank)."""
    c = Counter()
    for v in VIEWS:
        for p in _draws(v, 4):
            c.update(p.key.correct)
    total = sum(c.values())
    assert all(0.15 < c[i] / total < 0.35 for i in range(4)), c


def test_mirror_is_the_same_step_the_other_way():
    """k = 8: a mistake giving 4 (half) mirrors to 16 (double); an integer 100 missing 7 (93) mirrors to 107."""
    assert numeric_mcq.mirror(NumericKey(8.0, 7.99, 8.01, 2), 4.0) == 16.0
    assert numeric_mcq.mirror(IntegerKey(100), 93.0) == 107.0
    assert numeric_mcq.mirror(IntegerKey(100), 250.0) is None


def test_family_without_three_mistakes_is_refused():
    """A draw with fewer than three distinct mistakes gives no MCQ (a one-line ValueError)."""
    fid = next(f for f in numeric_mcq.candidates(FAMS) if f not in numeric_mcq.NUMERIC_MCQ
               and FAMS[f].id == "pretraining.bert_masking")
    view = numeric_mcq.mcq_view(FAMS[fid])
    with pytest.raises(ValueError, match="distinct mistakes"):
        view.generate(0)
