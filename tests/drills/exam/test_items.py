"""Item analysis (issue 41) on a class small enough to work out by hand (the groups, D, the option
rates and the flags below are worked out in the comments, not by qkv), and the point-biserial
correlation against scipy.stats.pointbiserialr (a second, independent implementation)."""

from __future__ import annotations

import random
from fractions import Fraction
from types import SimpleNamespace as NS

import pytest
from scipy.stats import pointbiserialr

from drills.exam.items import analyse, point_biserial


def test_point_biserial_against_scipy():
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(3, 80)
        x = [rng.random() < rng.random() for _ in range(n)]
        y = [round(rng.gauss(0, 3), rng.choice((0, 2))) for _ in range(n)]
        if len(set(x)) < 2 or len(set(y)) < 2:
            assert point_biserial(x, y) is None
            continue
        assert point_biserial(x, y) == pytest.approx(pointbiserialr(x, y).statistic, abs=1e-12)
    assert point_biserial([1, 1, 1], [1, 2, 3]) is None
    assert point_biserial([0, 1, 1], [2, 2, 2]) is None


MCQ = NS(id="001.q", family=None, difficulty="easy", options=["w", "x", "y", "z"], options_text=["w", "x", "y", "z"],
         key=NS(correct=frozenset({0})), misconceptions=[])
NAT1 = NS(id="fam.one/1", family="fam.one", difficulty="easy", options=[], key=NS(), misconceptions=[])
NAT2 = NS(id="fam.two/1", family="fam.two", difficulty="hard", options=[], key=NS(), misconceptions=[])
M1 = NS(id="m1", label="mistake one")
M2 = NS(id="m2", label="mistake two")

NAT4 = NS(id="fam.four/1", family="fam.four", difficulty="medium", options=[], key=NS(), misconceptions=[])

# student: (item 1 chosen option, item 2 right or mistake, item 3 right, item 4 right)
CLASS = {
    "A": (0, True, False, True), "B": (0, True, False, True), "C": (0, True, False, True),
    "D": (0, False, False, True), "E": (0, True, False, True), "F": (0, True, True, True),
    "G": (1, False, False, False), "H": (1, M1, True, False), "I": (2, M2, True, False), "J": (1, M1, True, False),
}


def _graded():
    rows = []
    for s, (opt, two, three, four) in CLASS.items():
        r1 = opt == 0
        rows.append([
            NS(student=s, item=1, problem=MCQ, paper_type="mcq", marks=1, right=r1, chosen=frozenset({opt}),
               awarded=Fraction(1) if r1 else -Fraction(1, 3), misconception=None),
            NS(student=s, item=2, problem=NAT1, paper_type="nat", marks=1, right=two is True, chosen=None,
               awarded=Fraction(1 if two is True else 0), misconception=two if isinstance(two, NS) else None),
            NS(student=s, item=3, problem=NAT2, paper_type="nat", marks=2, right=three, chosen=None,
               awarded=Fraction(2 if three else 0), misconception=None),
            NS(student=s, item=4, problem=NAT4, paper_type="nat", marks=2, right=four, chosen=None,
               awarded=Fraction(2 if four else 0), misconception=None),
        ])
    return rows


def test_by_hand():
    a = analyse(_graded(), 6)
    # totals: F 6; A B C E 4; D 3; H I J −1/3+0+2 = 5/3; G −1/3
    assert a.students == ["F", "A", "B", "C", "E", "D", "H", "I", "J", "G"]
    it1, it2, it3, it4 = a.items
    assert (it1.right, it2.right, it3.right, it4.right) == (6, 5, 4, 6)
    assert it1.p == 0.6
    # 27 % of 10 is 3: upper F A B, lower I J G
    assert it1.d27 == pytest.approx(1)
    assert it2.d27 == pytest.approx(1)
    assert it3.d27 == pytest.approx(1 / 3 - 2 / 3)  # upper F, lower I J
    # halves: strong F A B C E, weak D H I J G
    assert (it1.p_strong, it1.p_weak) == (1.0, 0.2)
    assert (it3.p_strong, it3.p_weak) == (0.2, 0.6)
    opts = {o["option"]: (o["key"], o["chosen"], o["strong"], o["weak"]) for o in it1.options}
    assert opts == {"(a)": (True, 6, 1.0, 0.2), "(b)": (False, 3, 0.0, 0.6), "(c)": (False, 1, 0.0, 0.2),
                    "(d)": (False, 0, 0.0, 0.0)}
    assert it1.flags == ["option nobody picks: (d)"]
    assert it3.flags == ["negative discrimination", "a key most strong students miss"]
    assert it2.flags == [] and it4.flags == []
    # rest-score means: item 1 right 19/6 against wrong 6/4; item 3 right 3/4 against wrong 28/9
    assert it3.r_pb < 0 < min(it1.r_pb, it2.r_pb, it4.r_pb)
    assert a.misconceptions == [{"id": "m1", "label": "mistake one", "students": 2, "answers": 2, "items": [2]},
                                {"id": "m2", "label": "mistake two", "students": 1, "answers": 1, "items": [2]}]
    assert it2.misconceptions == {"m1": 2, "m2": 1}
