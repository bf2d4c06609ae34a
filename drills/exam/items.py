"""What a class's answers say about the items (issue 41): classical test theory item analysis.

Reference: L. Crocker and J. Algina, *Introduction to Classical and Modern Test Theory* (1986),
chapter 14 (item analysis): the item's difficulty is the share of examinees who answer it right
(``p``); its discrimination is the point-biserial correlation of the item score (1 right, 0
otherwise) with the *rest score* (the total without the item: the "corrected" item-total
correlation, so the item does not correlate with itself), and the upper-lower index ``D = p_upper
− p_lower`` of the top and bottom 27 % by total score (T. L. Kelley, 1939). R. L. Ebel's reading
of ``D`` (0.40 and above very good, 0.30–0.39 good, 0.20–0.29 marginal, below 0.20 poor) is the
usual one; a negative value means the weaker students did better on the item than the stronger
ones: the key, or the item, is wrong.

Conventions: students are ranked by total score (negative marks included), ties by student id,
so the groups are the same on every run; the strong and weak halves are the top and bottom
``N // 2`` (the middle student left out when ``N`` is odd); the 27 % groups hold
``max(1, round(0.27 N))`` students each. An unanswered or unread answer counts as not right. An
MCQ's options are named by what they are, since other draws of a family have other numbers: a
curated item's by its letter, a family's as ``key`` or the mistakes the option stands for (made
either way round); an option's pick rates in each half are over the students of that half who were
shown it, and an option is flagged as picked by nobody only when :data:`MIN_SHOWN` students or more
were shown it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

__all__ = ["point_biserial", "analyse", "ItemStats", "Analysis"]

REFERENCE = ("Crocker & Algina, Introduction to Classical and Modern Test Theory (1986), ch. 14; "
             "upper/lower 27 % groups after Kelley (1939); Ebel's guide to D: ≥ 0.40 very good, 0.30–0.39 good, "
             "0.20–0.29 marginal, < 0.20 poor")
UPPER_SHARE = 0.27
#: an option is flagged as picked by nobody only when at least this many students were shown it
MIN_SHOWN = 10


def point_biserial(x: list[int] | list[bool], y: list[float]) -> float | None:
    """The point-biserial correlation of the 0/1 scores ``x`` with ``y`` (Pearson's r with one
    dichotomous variable): ``(M₁ − M₀)/s · √(p q)``, with ``s`` the population standard deviation of
    ``y``; None when either does not vary."""
    n = len(x)
    if n != len(y) or n < 2:
        return None
    ones = [b for a, b in zip(x, y, strict=True) if a]
    zeros = [b for a, b in zip(x, y, strict=True) if not a]
    if not ones or not zeros:
        return None
    mean = sum(y) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in y) / n)
    if s == 0:
        return None
    p = len(ones) / n
    return (sum(ones) / len(ones) - sum(zeros) / len(zeros)) / s * math.sqrt(p * (1 - p))


@dataclass
class ItemStats:
    item: int
    label: str  # family (difficulty) or curated item id
    type: str  # GATE type
    marks: int
    n: int
    right: int
    p: float  # share right
    mean_marks: float
    r_pb: float | None  # with the rest score
    d27: float | None
    p_strong: float | None
    p_weak: float | None
    options: list[dict[str, Any]] = field(default_factory=list)  # MCQ: label, key, chosen, strong, weak
    misconceptions: dict[str, int] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "label": self.label, "type": self.type, "marks": self.marks, "n": self.n,
                "right": self.right, "p": self.p, "mean_marks": self.mean_marks, "r_pb_rest": self.r_pb,
                "d27": self.d27, "p_strong_half": self.p_strong, "p_weak_half": self.p_weak,
                "options": self.options, "misconceptions": self.misconceptions, "flags": self.flags}


@dataclass
class Analysis:
    students: list[str]  # ranked, strongest first
    totals: dict[str, Fraction]
    max_marks: int
    items: list[ItemStats]
    misconceptions: list[dict[str, Any]]  # id, label, students, answers, items

    def to_json(self) -> dict[str, Any]:
        scores = [float(self.totals[s]) for s in self.students]
        return {"students": len(self.students), "max_marks": self.max_marks, "scores": summary(scores),
                "reference": REFERENCE, "items": [i.to_json() for i in self.items],
                "misconceptions": self.misconceptions}


def summary(scores: list[float]) -> dict[str, float | None]:
    if not scores:
        return {"mean": None, "sd": None, "median": None, "min": None, "max": None}
    n = len(scores)
    mean = sum(scores) / n
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / n)
    srt = sorted(scores)
    median = srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2
    return {"mean": mean, "sd": sd, "median": median, "min": srt[0], "max": srt[-1]}


def option_label(p: Any, index: int) -> str:
    """What option ``index`` of an MCQ is, the same across versions: a curated item's letter, a
    family's ``key`` or the misconception(s) it stands for."""
    from question_bank.grading import LETTERS, as_choice_set

    if p.family is None:
        return f"({LETTERS[index]})"
    if index in p.key.correct:
        return "key"
    ids = [m.id for m in p.misconceptions if as_choice_set(m.value) == frozenset({index})]
    # a family's distractor is a mistake, or two together, made one way or "the other way round":
    # named by the mistakes, so that every draw's option for the same mistakes has one name
    parts = sorted({part.removesuffix("_reversed") for i in ids for part in i.split("_and_")})
    return " + ".join(parts) if parts else "other"


def analyse(graded: list[list[Any]], max_marks: int) -> Analysis:
    """The item analysis of a graded class (:func:`drills.exam.classgrade.grade_class`)."""
    from question_bank.grading import LETTERS

    totals = {row[0].student: sum((g.awarded for g in row), Fraction(0)) for row in graded if row}
    ranked = sorted(totals, key=lambda s: (-totals[s], s))
    n = len(ranked)
    half = n // 2
    strong, weak = set(ranked[:half]), set(ranked[n - half:]) if half else set()
    k27 = max(1, round(UPPER_SHARE * n)) if n else 0
    upper, lower = set(ranked[:k27]), set(ranked[n - k27:])
    by_item: dict[int, list[Any]] = defaultdict(list)
    for row in graded:
        for g in row:
            by_item[g.item].append(g)
    items = []
    mis_students: dict[str, set[str]] = defaultdict(set)
    mis_answers: Counter[str] = Counter()
    mis_items: dict[str, set[int]] = defaultdict(set)
    mis_label: dict[str, str] = {}
    for item in sorted(by_item):
        gs = by_item[item]
        first = gs[0]
        p0 = first.problem
        label = p0.id if p0.family is None else f"{p0.family} ({p0.difficulty})"
        x = [1 if g.right else 0 for g in gs]
        rest = [float(totals[g.student] - g.awarded) for g in gs]
        right = sum(x)

        def share(group: set[str], gs=gs) -> float | None:
            sel = [g for g in gs if g.student in group]
            return sum(g.right for g in sel) / len(sel) if sel else None

        pu, pl = share(upper), share(lower)
        st = ItemStats(item=item, label=label, type=first.paper_type, marks=first.marks, n=len(gs), right=right,
                       p=right / len(gs), mean_marks=float(sum((g.awarded for g in gs), Fraction(0)) / len(gs)),
                       r_pb=point_biserial(x, rest), d27=None if pu is None or pl is None else pu - pl,
                       p_strong=share(strong), p_weak=share(weak))
        for g in gs:
            m = g.misconception
            if m is not None:
                st.misconceptions[m.id] = st.misconceptions.get(m.id, 0) + 1
                mis_students[m.id].add(g.student)
                mis_answers[m.id] += 1
                mis_items[m.id].add(item)
                mis_label[m.id] = m.label
        if first.paper_type == "mcq":
            key_of: dict[str, bool] = {}
            shown, shown_s, shown_w = Counter(), Counter(), Counter()
            chosen, cs, cw = Counter(), Counter(), Counter()
            for g in gs:
                labs = {option_label(g.problem, i): i in g.problem.key.correct for i in range(len(g.problem.options))}
                for lab, is_key in labs.items():
                    key_of.setdefault(lab, is_key)
                    shown[lab] += 1
                    shown_s[lab] += g.student in strong
                    shown_w[lab] += g.student in weak
                if g.chosen:
                    lab = option_label(g.problem, min(g.chosen))
                    chosen[lab] += 1
                    cs[lab] += g.student in strong
                    cw[lab] += g.student in weak
            texts = {}
            if p0.family is None:
                texts = {f"({LETTERS[i]})": t for i, t in enumerate(p0.options_text)}
            for lab, is_key in sorted(key_of.items(), key=lambda kv: (not kv[1], kv[0])):
                st.options.append({"option": lab, "key": is_key, "text": texts.get(lab, ""), "shown": shown[lab],
                                   "chosen": chosen[lab],
                                   "strong": cs[lab] / shown_s[lab] if shown_s[lab] else None,
                                   "weak": cw[lab] / shown_w[lab] if shown_w[lab] else None})
                if not is_key and chosen[lab] == 0 and shown[lab] >= MIN_SHOWN:
                    st.flags.append(f"option nobody picks: {lab}")
        if st.r_pb is not None and st.r_pb < 0:
            st.flags.insert(0, "negative discrimination")
        if st.p_strong is not None and st.p_strong < 0.5:
            st.flags.append("a key most strong students miss")
        items.append(st)
    mis = [{"id": m, "label": mis_label[m], "students": len(mis_students[m]), "answers": mis_answers[m],
            "items": sorted(mis_items[m])}
           for m in sorted(mis_answers, key=lambda m: (-len(mis_students[m]), m))]
    return Analysis(students=ranked, totals=totals, max_marks=max_marks, items=items, misconceptions=mis)
