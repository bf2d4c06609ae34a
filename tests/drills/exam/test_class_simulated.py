"""The whole path for a class (issue 41), end to end on a simulated class whose answers come from
known abilities and known mistakes: ``qkv sheet --versions`` writes the versions and the key file,
a class of 60 answers them (P(right) logistic in ability − difficulty; a wrong answer is one of the
item's named mistakes where it has one), ``qkv grade`` grades them, and the report's figures are
checked against what was simulated: every item's share right, every misconception's count, each
student's score (marked here by GATE's rules, not by qkv), the point-biserial discrimination
(recomputed by scipy from the simulated answers), positive for the items that behave and flagged
negative for the one simulated to misbehave (the strong students miss it)."""

from __future__ import annotations

import csv
import io
import json
import math
import random
import subprocess
import sys
from collections import Counter, defaultdict
from fractions import Fraction

import pytest

from question_bank import bank
from question_bank.grading import LETTERS, as_choice_set, round_half_up, to_float
from question_bank.problem import ChoiceKey, IntegerKey, NumericKey

N_STUDENTS = 60
VERSIONS = 4
BAD_ITEM = 5  # the strong students miss it, the weak ones get it
_UNITS = {"GB", "GiB", "MiB", "MB", "TB", "ms", "s"}


def _qkv(args, cwd):
    r = subprocess.run([sys.executable, "-m", "drills", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def _separated(a: float, b: float, d: int | None) -> bool:
    unit = 10.0 ** -(d or 0) if d is not None else 0.0
    return abs(a - b) > max(0.02 * max(abs(a), abs(b)), 3 * unit)


def _clean_mistakes(p):
    """The item's named mistakes that one answer stands for alone: another value than the key's and
    than every other mistake's (compared here, not by the judge)."""
    k = p.key
    out = []
    for m in p.misconceptions:
        if isinstance(k, ChoiceKey):
            ms = as_choice_set(m.value)
            if not ms or ms == k.correct or (p.type == "mcq" and len(ms) != 1):
                continue
            if any(as_choice_set(o.value) == ms for o in p.misconceptions if o is not m):
                continue
            out.append(m)
        else:
            mv = to_float(m.value)
            d = k.decimals if isinstance(k, NumericKey) else 0
            if mv is None or mv == 0 or not _separated(mv, float(k.value), d):
                continue
            if any((ov := to_float(o.value)) is not None and not _separated(mv, ov, d)
                   for o in p.misconceptions if o is not m):
                continue
            if any(abs(mv / float(k.value) - 10.0 ** e) < 0.01 * 10.0 ** e for e in (-15, -12, -9, -6, -3, 3, 6, 9, 12, 15)):
                continue
            out.append(m)
    return out


def _number(v: float, k) -> str:
    if isinstance(k, IntegerKey):
        return str(int(round(v))) if float(v).is_integer() else repr(float(v))
    return f"{round_half_up(v, k.decimals):.{k.decimals}f}" if k.decimals is not None else repr(float(v))


def _right_text(p, s: int) -> str:
    """The key written the ways students write it: units, fractions, thousands, option text or letters."""
    k = p.key
    if isinstance(k, ChoiceKey):
        letters = [LETTERS[i] for i in sorted(k.correct)]
        if p.type == "mcq":
            if p.family is None and s % 3 == 0:
                return p.options_text[sorted(k.correct)[0]]
            return f"({letters[0].upper()})" if s % 2 else letters[0]
        return ", ".join(letters) if s % 2 else "".join(letters).upper()
    if isinstance(k, IntegerKey):
        return f"{k.value:,}" if s % 2 else str(k.value)
    text = _number(k.value, k)
    if k.unit in _UNITS and s % 3 == 1:
        return f"{text} {k.unit}"
    if not k.unit and k.decimals is not None and s % 3 == 2:
        f = Fraction(text)
        return f"{f.numerator}/{f.denominator}"
    return text


def _wrong(p, rng):
    """A wrong answer and the mistake it stands for (None: no named mistake)."""
    k = p.key
    clean = _clean_mistakes(p)
    if clean and rng.random() < 0.8:
        m = rng.choice(clean)
        if isinstance(k, ChoiceKey):
            return ", ".join(LETTERS[i] for i in sorted(as_choice_set(m.value))), m.id
        return _number(to_float(m.value), k), m.id
    if isinstance(k, ChoiceKey):
        named = {frozenset(as_choice_set(m.value) or ()) for m in p.misconceptions}
        if p.type == "mcq":
            free = [i for i in range(len(p.options)) if i not in k.correct and frozenset({i}) not in named]
            if free:
                return LETTERS[rng.choice(free)], None
            if clean:
                m = rng.choice(clean)
                return LETTERS[min(as_choice_set(m.value))], m.id
            return None, None
        wrong = next(i for i in range(len(p.options)) if i not in k.correct)
        pick = frozenset({wrong})
        if pick in named:
            return None, None
        return LETTERS[wrong], None
    v = float(k.value) * 1.37
    if any((mv := to_float(m.value)) is not None and not _separated(v, mv, getattr(k, "decimals", 0))
           for m in p.misconceptions):
        return None, None
    return (str(int(round(v))) if isinstance(k, IntegerKey) else _number(v, k)), None


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("class")
    _qkv(["sheet", "--paper", "short", "--seed", "7", "--versions", str(VERSIONS), "-o", "c.md"], d)
    key = json.loads((d / "c.key.json").read_text())
    rng = random.Random(41)
    n_items = len(key["versions"][0]["questions"])
    difficulty = {k: -1.2 + 2.4 * (k - 1) / (n_items - 1) for k in range(1, n_items + 1)}
    problems = {}
    truth = {"right": Counter(), "mistakes": Counter(), "mistake_students": defaultdict(set), "x": defaultdict(dict),
             "awarded": defaultdict(dict)}
    out = io.StringIO(newline="")
    w = csv.writer(out)
    w.writerow(["Timestamp", "Student ID", "Version", "Question", "Answer", "Notes"])
    for s in range(N_STUDENTS):
        sid = f"st{s:03d}"
        theta = rng.gauss(0, 1)
        v = key["versions"][s % VERSIONS]
        for q in v["questions"]:
            ref = (q["family"], q["seed"], q["difficulty"], q["curated"])
            if ref not in problems:
                problems[ref] = bank.problem(q["family"], seed=q["seed"], difficulty=q["difficulty"]) if q["family"] \
                    else bank.problem(q["curated"])
            p = problems[ref]
            item = q["item"]
            z = 2.5 * (theta - difficulty[item])
            if item == BAD_ITEM:
                z = -2.5 * theta
            right = rng.random() < 1 / (1 + math.exp(-z))
            text, mistake = (_right_text(p, s), None) if right else _wrong(p, rng)
            if text is None:  # no wrong answer to give that stands for one thing only: left blank
                right, mistake = False, None
            truth["x"][sid][item] = int(right)
            marks = q["marks"]
            if right:
                awarded = Fraction(marks)
            elif text is not None and q["paper_type"] == "mcq":
                awarded = -Fraction(marks, 3)
            else:
                awarded = Fraction(0)
            truth["awarded"][sid][item] = awarded
            truth["right"][item] += right
            if mistake:
                truth["mistakes"][mistake] += 1
                truth["mistake_students"][mistake].add(sid)
            w.writerow(["2026-11-29 10:00", sid, v["id"].lower() if s % 5 == 0 else v["id"], f"Q{q['number']}"
                        if s % 7 == 0 else q["number"], text or "", "" if s % 3 else "=1+1"])
    (d / "answers.csv").write_bytes(b"\xef\xbb\xbf" + out.getvalue().encode())
    r = _qkv(["grade", "c.key.json", "answers.csv", "-o", "results.csv", "--report", "report.json",
                 "--plot", "items.svg"], d)
    report = json.loads((d / "report.json").read_text())
    return d, key, truth, report, r


def test_every_answer_read(simulated):
    _, _, _, report, r = simulated
    assert report["unread"] == [] and report["absent"] == []
    assert report["students"] == N_STUDENTS
    assert "columns not used: 'Timestamp', 'Notes'" in r.stderr
    d = simulated[0]
    assert (d / "items.svg").read_bytes().startswith(b"<?xml")
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_shares_right_as_simulated(simulated):
    _, _, truth, report, _ = simulated
    for it in report["items"]:
        assert it["right"] == truth["right"][it["item"]], it["item"]
        assert it["p"] == pytest.approx(truth["right"][it["item"]] / N_STUDENTS)


def test_misconception_counts_as_simulated(simulated):
    _, _, truth, report, _ = simulated
    got = {m["id"]: (m["answers"], m["students"]) for m in report["misconceptions"]}
    want = {m: (n, len(truth["mistake_students"][m])) for m, n in truth["mistakes"].items()}
    assert got == want
    assert sum(n for n, _ in want.values()) >= 30  # the check has something to count


def test_scores_marked_by_gate_rules(simulated):
    d, _, truth, report, _ = simulated
    rows = list(csv.DictReader(io.StringIO((d / "results.csv").read_text())))
    assert len(rows) == N_STUDENTS
    for row in rows:
        want = sum(truth["awarded"][row["student"]].values(), Fraction(0))
        assert float(row["score"]) == pytest.approx(float(want), abs=1e-4), row["student"]
    scores = {x["student"]: x["score"] for x in report["results"]}
    assert all(scores[s] == pytest.approx(float(sum(a.values(), Fraction(0)))) for s, a in truth["awarded"].items())


def test_discrimination_against_scipy_and_flags(simulated):
    from scipy.stats import pointbiserialr

    _, _, truth, report, _ = simulated
    students = sorted(truth["x"])
    totals = {s: sum(truth["awarded"][s].values(), Fraction(0)) for s in students}
    for it in report["items"]:
        k = it["item"]
        x = [truth["x"][s][k] for s in students]
        rest = [float(totals[s] - truth["awarded"][s][k]) for s in students]
        want = pointbiserialr(x, rest).statistic
        assert it["r_pb_rest"] == pytest.approx(want, abs=1e-9), k
        if k == BAD_ITEM:
            assert it["r_pb_rest"] < 0 and "negative discrimination" in it["flags"]
            assert it["d27"] < 0
        else:
            assert it["r_pb_rest"] > 0, k
            assert "negative discrimination" not in it["flags"]
    normal = [it["d27"] for it in report["items"] if it["item"] != BAD_ITEM]
    assert sum(normal) / len(normal) > 0.3

