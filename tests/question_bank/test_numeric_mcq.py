"""Numeric MCQs (issue 26): a numeric family's view ``<family>_mcq`` keys the base problem's own
value, its wrong options are the 2×2 cross of two of the base problem's mistakes (each made its way
or the other way round, recomputed here as k²/v or 2k − v; both together as the product of factors
or the sum of counts), the options are sorted by value, distinct as displayed and written to the
statement's decimals, the feedback on each wrong option is its misconception (the base family's own
for a slip made its way, as the NAT form grades it), and the key's place is balanced."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import pytest

from question_bank import bank, numeric_mcq
from question_bank.family import all_families
from question_bank.grading import grade
from question_bank.problem import IntegerKey, NumericKey

FAMS = all_families()
VIEWS = sorted(fid + numeric_mcq.SUFFIX for fid in numeric_mcq.NUMERIC_MCQ)


def _draws(fid, per_level=4):
    f = FAMS[fid]
    return [f.generate(s, lv) for lv in f.levels for s in range(per_level)]


def test_views_are_registered_and_many():
    # issue 26: 57 of the 84 numeric families pass issue 22's adversary as MCQs (the others, each with its figure, in NUMERIC_MCQ)
    assert len(VIEWS) >= 55
    for v in VIEWS:
        assert FAMS[v].types == ("mcq",)
        assert set(FAMS[v].levels) <= set(FAMS[numeric_mcq.base_of(v)].levels)
    mcq_families = {e.id for e in bank.entries(type="mcq", kind="family")}
    # a view is offered at the levels its record passes (question_bank.choice_record), and only then
    assert {v for v in VIEWS if FAMS[v].difficulties} == set(VIEWS) & mcq_families


def test_type_mcq_draws_from_offered_families_only():
    """``--type mcq`` draws from the families (views folded into their base family) that offer an MCQ at
    some level; issue 26's "most of the bank" gave way to issue 39's withdrawal of the levels a
    test-wise student games (their floor: tests/question_bank/quality/test_test_wise_student.py)."""
    families = {e.id for e in bank.entries(kind="family")}
    base = {f for f in families if numeric_mcq.base_of(f) is None}
    drawn = {numeric_mcq.base_of(e.id) or e.id for e in bank.entries(type="mcq", kind="family")}
    assert drawn <= base
    assert all(FAMS[e.id].difficulties for e in bank.entries(type="mcq", kind="family"))


def _moved(base_key, k: float, m, how: str) -> float:
    """The key moved by one slip, recomputed here: the mistake's own value, or the inverse mistake the
    family names beside it (issue 38): its own value when the family computes one, else the same step
    the other way round (k²/w for a NAT key, 2k − w for an integer one)."""
    w = float(m.value)
    if how == "own":
        return w
    assert m.inverse, (m.id, "made the other way round without a named inverse mistake")
    if m.inverse_value is not None:
        return float(m.inverse_value)
    return 2 * k - w if isinstance(base_key, IntegerKey) else k * k / w


@pytest.mark.parametrize("view", VIEWS)
def test_view_keys_and_distractors(view):
    """Each wrong option is the key moved by one of two slips or by both (the 2×2 cross), each slip
    one of the base problem's own mistakes made its way or the other way round; the feedback names
    them; a slip made the family's way gets the base family's own misconception id."""
    for p in _draws(view, 3):
        base = bank.problem(p.given["base_problem"])
        assert isinstance(base.key, NumericKey | IntegerKey)
        vals = p.given["option_values"]
        assert vals == sorted(vals) and len(vals) == 4
        (at,) = p.key.correct
        k = float(base.key.value)
        assert vals[at] == k
        mistakes = {m.id: m for m in base.misconceptions}
        by_index = {m.value: m for m in p.misconceptions}
        assert set(by_index) == set(range(4)) - {at}
        slips = p.given["option_slips"]
        assert slips[at] == [] and sorted(len(slips[i]) for i in by_index) == [1, 1, 2]
        singles = [tuple(slips[i][0]) for i in by_index if len(slips[i]) == 1]
        (both,) = [i for i in by_index if len(slips[i]) == 2]
        assert sorted(map(tuple, slips[both])) == sorted(singles)  # the cross: A, B, and A with B
        assert singles[0][0] != singles[1][0]
        for i, m in by_index.items():
            # mistakes giving one value are one option, named together as the grader names them ("a+b")
            moved = [_moved(base.key, k, mistakes[sid.split("+")[0]], how) for sid, how in slips[i]]
            if isinstance(base.key, IntegerKey):
                want = k + sum(w - k for w in moved)
                # a slip that scales the whole count (× p/q, small whole p and q) scales the other's count too
                scaled = any(Fraction(int(w), int(k)).numerator <= 128 and Fraction(int(w), int(k)).denominator <= 128
                             for w in moved)
                if len(moved) == 2 and scaled and (int(moved[0]) * int(moved[1])) % int(k) == 0:
                    want = int(moved[0]) * int(moved[1]) // int(k)
            else:
                want = k * math.prod(w / k for w in moved)
            assert vals[i] == pytest.approx(want, rel=1e-9), (p.id, m.id)
            ids = [sid if how == "own" else f"{sid}_reversed" for sid, how in slips[i]]
            own = grade(base, vals[i]).misconception  # a value the NAT form names as one of its mistakes
            if own is not None and numeric_mcq.option_text(base.key, float(own.value)) != p.options[i]:
                own = None  # named only through a boundary's two roundings: the option does not print its value
            if own is not None and m.id != "_and_".join(ids):
                # issue 38, one mistake one diagnosis: an inverse slip (or two slips) landing on a value the
                # family's own mistake gives is named as the NAT form names that value
                assert m.id == own.id and "other way round" not in m.label, (p.id, m.id, own.id)
                continue
            assert m.id == "_and_".join(ids), (p.id, m.id)
            for sid, how in slips[i]:  # issue 38: each slip is named as a mistake, never "the other way round"
                named = mistakes[sid.split("+")[0]].label if how == "own" else mistakes[sid.split("+")[0]].inverse
                assert named and named in m.label and "other way round" not in m.label, (p.id, m.label)
            verdict = grade(p, {i})
            assert not verdict.correct and verdict.misconception.id == m.id
            assert verdict.misconception.feedback
            if len(slips[i]) == 1 and slips[i][0][1] == "own":  # the NAT form names the same mistake
                typed = base_answer(base.key, vals[i])
                nat = grade(base, Decimal(typed), written=typed)
                assert not nat.correct and nat.misconception is not None and nat.misconception.id == m.id, (p.id, m.id)
        assert len(set(p.options)) == 4
        assert grade(p, {at}).correct
        if isinstance(base.key, NumericKey) and base.key.decimals:
            for o in p.options:  # written to the statement's decimals, trailing zeros kept
                number = o.split(" ")[0]
                assert len(number.split(".")[1]) == base.key.decimals, (p.id, p.options)


def base_answer(key, v: float) -> str:
    """The value an option shows, typed as a NAT answer."""
    return numeric_mcq.option_text(key, v).split(" ")[0]


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


def _with_mistakes(factors):
    """A real NAT draw (counting.params_model) given mistakes at ``factors`` × its key."""
    import dataclasses as dc

    from question_bank.problem import Misconception

    p = FAMS["counting.params_model"].generate(0, "easy")
    k = float(p.key.value)
    ms = [Misconception(f"m{i}", f"mistake {i}", "feedback", k * f, f"mistake {i} inverted") for i, f in enumerate(factors)]
    return dc.replace(p, key=NumericKey(k, k * 0.999, k * 1.001, None), misconceptions=ms)


def test_options_stay_within_a_factor_of_root_ten_when_the_slips_allow():
    """Slips of ×0.5 and ×1.3 (and a ×50 one): every option within 0.5 decades of the key, the key at
    each rank; with one small slip only, the large one is used (no draw refused)."""
    import random

    p = _with_mistakes([0.5, 50.0, 1.3])
    k = float(p.key.value)

    class D:
        rng = random.Random(7)

    for rank in range(4):
        for _ in range(20):
            got = numeric_mcq._choose(D.rng, p, rank)
            vals = [v for v, _, _ in got]
            assert max(abs(math.log10(v / k)) for v in vals) <= 0.5
            assert sum(v < k for v in vals) == rank
    p = _with_mistakes([0.5, 50.0])
    got = numeric_mcq._choose(D.rng, p, 0)
    assert got is not None and max(v for v, _, _ in got) > 10 * k


def test_a_declared_key_range_with_the_key_as_a_corner_keeps_every_option_in_it_and_says_which_ranks_fit():
    """Opt-in (issue 39): a draw whose ``given`` names a ``key_range`` and ``key_as_corner`` is offered only crosses
    of two either-way slips whose options all lie in the range. Slips ×2 and ×3 (each with an inverse) in (k/3.01, 3.01k): the key can be the
    second (k/2, 3k/2, 3k) or third (k/3, 2k/3, 2k) of the sorted options, never the first (6k) or the last (k/6)."""
    import dataclasses as dc
    import random

    p = _with_mistakes([2.0, 3.0])
    k = float(p.key.value)
    p = dc.replace(p, given={**p.given, "key_range": (k / 3.01, 3.01 * k), "key_as_corner": True})

    class D:
        rng = random.Random(3)

    assert [r for r in range(4) if numeric_mcq._crosses(p, r)] == [1, 2]
    for rank in (1, 2):
        for _ in range(10):
            vals = [v for v, _, _ in numeric_mcq._choose(D.rng, p, rank)]
            assert all(k / 3.01 <= v <= 3.01 * k for v in vals), vals
            assert sum(v < k for v in vals) == rank
    assert numeric_mcq._choose(D.rng, p, 0) is None and numeric_mcq._choose(D.rng, p, 3) is None
    # without the range, the same draw can put the key first (its options 2k, 3k and 6k)
    free = dc.replace(p, given={x: v for x, v in p.given.items() if x not in ("key_range", "key_as_corner")})
    assert numeric_mcq._choose(D.rng, free, 0) is not None


#: Issue 39: base families whose draws were widened so that keys rarely repeat (key-pool memory beat their views).
WIDENED = {
    "parallel.allreduce_time": ("easy", "medium", "hard"), "parallel.bus_bandwidth": ("medium", "hard"),
    "parallel.tensor_parallel_bytes": ("medium", "hard"), "parallel.pipeline_bubble": ("easy", "medium"),
    "quantisation.ggml_bytes": ("easy", "medium", "hard"), "quantisation.group_int4": ("easy", "medium", "hard"),
    "quantisation.kv_int8": ("medium", "hard"), "context.ring_attention": ("medium", "hard"),
    "flash.tiling_hbm": ("medium",), "hardware.gpu_days": ("easy", "medium", "hard"),
    "serving.max_batch": ("easy", "medium", "hard"), "training.grad_accum_bubble": ("medium",),
}


@pytest.mark.parametrize("fid", sorted(WIDENED))
def test_widened_levels_rarely_repeat_a_key(fid):
    """Issue 39: at least 100 distinct keys in 300 draws at each widened level (the issue asks 100 in 1,000);
    kv_int8 medium had 16 in 500, tensor_parallel_bytes 35."""
    for lv in WIDENED[fid]:
        keys = {FAMS[fid].generate(s, lv).key.value for s in range(300)}
        assert len(keys) >= 100, (fid, lv, len(keys))


@pytest.mark.parametrize("view", VIEWS)
def test_no_share_above_one_hundred_percent(view):
    """Issue 39: a share of a whole (a key in % of at most 100) has no option above 100 %."""
    for p in _draws(view, 3):
        base = bank.problem(p.given["base_problem"])
        if getattr(base.key, "unit", "") == "%" and float(base.key.value) <= 100:
            assert max(p.given["option_values"]) <= 100, (p.id, p.options)


def test_log_uniform_draws_are_in_range_rounded_and_flat_in_log():
    """Draw.log_uniform: inside [lo, hi] (up to the rounding), to the asked significant figures, and as many
    draws in each decade of [1, 1000] (a linear draw would put 90 % in the top decade)."""
    from question_bank.family import Draw

    fam = FAMS["counting.params_model"]
    d = Draw(fam, 0, "easy")
    xs = [d.log_uniform(1, 1000, 3) for _ in range(3000)]
    assert all(0.995 <= x <= 1000.5 for x in xs)
    assert all(float(f"{x:.3g}") == x for x in xs)
    per_decade = Counter(min(int(math.log10(x)), 2) for x in xs)
    assert all(800 <= per_decade[k] <= 1200 for k in range(3)), per_decade


#: The families that name the only slips their view crosses (``@family(..., view_slips=...)``)
SLIPPED = sorted(fid for fid, f in FAMS.items() if f.view_slips)


def test_some_families_name_their_views_slips():
    """The declarations are read from the families (twelve and more did in issue 39), one of them for a level alone."""
    assert len(SLIPPED) >= 12
    assert any(len(FAMS[fid].view_slips) < len(FAMS[fid].levels) for fid in SLIPPED)


@pytest.mark.parametrize("fid", SLIPPED)
def test_view_slips_name_slips_the_family_draws_and_the_view_crosses_only_them(fid):
    """A family's ``view_slips`` names mistakes its draws make at the levels its view is listed at (a renamed slip
    would drop out of the view unnoticed), and each option of its view is the key moved by those slips alone (or by
    a mistake that gives the same value, named beside it)."""
    listed: set[str] = set()
    seen: set[str] = set()
    for lv, ids in FAMS[fid].view_slips:
        if lv not in numeric_mcq.NUMERIC_MCQ[fid]:
            continue
        listed |= set(ids)
        for s in range(30):
            base = FAMS[fid].generate(s, lv)
            seen |= {i for _, m in numeric_mcq.wrong_values(base) for i in m.id.split("+")} & set(ids)
            p = FAMS[fid + numeric_mcq.SUFFIX].generate(s, lv)
            for slips in p.given["option_slips"]:  # a value two mistakes share is one slip named "a+b"
                assert all(set(name.split("+")) & set(ids) for name, _ in slips), (p.id, slips)
    assert listed, f"{fid}: view_slips names no level its view is listed at"
    assert seen == listed, f"{fid}: view_slips names {sorted(listed - seen)}, which no draw makes"


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_no_attention_weight_option_above_one(level):
    """Issue 39: an attention weight is a softmax output, in [0, 1]; the view offered 1.03 (seed 1, easy) from a
    slip, an option a student strikes out without computing. Read from the options as printed."""
    view = all_families()["attention.one_weight_mcq"]
    for s in range(150):
        p = view.generate(s, level)
        assert all(0 < float(o.split()[0]) <= 1 for o in p.options_text), (p.id, p.options_text)
