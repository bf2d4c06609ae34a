"""Issue 27, Moodle marks: with ``--moodle-cloze formulas`` every question imports worth exactly the
sheet's marks, each box earning its share (read by tests/formulas_reader.py, a port of the
qtype_formulas plugin's import and grading code); the core cloze keeps a scalar part's
misconception answers."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from click.testing import CliRunner

from drills.cli import cli
from drills.sheets import Sheet, render
from question_bank import bank as qb
from question_bank.grading import grade
from question_bank.problem import MatrixKey, Problem
from tests.formulas_reader import evaluate
from tests.moodle_reader import read_quiz


def _problems() -> list[Problem]:
    from drills.sheets.select import select_problems

    ps = select_problems(40, 11).problems
    ps.append(qb.problem("attention.by_hand", seed=3, difficulty="hard"))  # four matrix parts, 2 marks
    ps.append(qb.problem("attention.masked_weights", seed=1, difficulty="medium"))  # 3×3, 1 mark
    for pid in ("004.lab.bonus3_gqa", "001.code.bert_sized_configs", "000.code.causal_mask", "004.ex.b5"):
        ps += [p for p in qb.curated() if p.id == pid and p.id not in {q.id for q in ps}]
    seen: set[str] = set()
    return [p for p in ps if not (p.id in seen or seen.add(p.id))]


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    sh = Sheet("Formulas sheet", _problems(), 11)
    sh.moodle_cloze = "formulas"
    return sh


def _keys(p: Problem) -> list:
    return [pt.key for pt in p.parts] if p.parts else [p.key]


def _right(key) -> list[float]:
    if isinstance(key, MatrixKey):
        return [(-1e99 if math.isinf(x) else float(x)) for row in key.value for x in row]
    return [float(key.value)]


def _per_part(q, flat: list) -> list[list]:
    """The boxes' responses (in box order) split into the question's parts."""
    out, k = [], 0
    for part in q.parts:
        out.append(list(flat[k:k + part.numbox]))
        k += part.numbox
    assert k == len(flat)
    return out


def test_the_criterion_reader_can_fail():
    assert evaluate("(abs(_0 - 2) <= 0.5 || _0 > 10) / 1", [2.4]) == 1.0
    assert evaluate("(abs(_0 - 2) <= 0.5 || _0 > 10) / 1", [2.6]) == 0.0
    assert evaluate("((1 + 0) / 2 + (1) / 1) / 2", []) == 0.75
    assert evaluate("-_0 * 2 + 1", [3]) == -5.0
    with pytest.raises(AssertionError):
        evaluate("exec(1)", [])


def test_every_question_imports_worth_its_marks_with_per_box_credit(sheet):
    data = render(sheet, "moodle", "full")
    qs = read_quiz(data)
    assert len(qs) == len(sheet.problems)
    formulas = 0
    for (i, p), q in zip(sheet.numbered(), qs, strict=True):
        assert not q.errors, (i, p.id, q.errors)
        assert q.defaultmark == p.marks, (i, p.id, q.defaultmark, p.marks)  # issue 27: exactly the sheet's marks
        if q.qtype != "formulas":
            continue
        formulas += 1
        keys = _keys(p)
        right = [x for k in keys for x in _right(k)]
        assert math.isclose(q.grade(_per_part(q, right)), 1.0, abs_tol=1e-7), p.id  # marks to 7 decimals
        assert q.grade(_per_part(q, [x + 1e6 for x in right])) == 0.0, p.id
        # one box wrong at a time: the question loses that box's share, as qkv's grading splits it
        sizes = [len(_right(k)) for k in keys]
        start = 0
        for k, n in enumerate(sizes):
            wrong = list(right)
            wrong[start] = right[start] + 1e6
            want = 1.0 - (1.0 / n) / len(keys)
            assert math.isclose(q.grade(_per_part(q, wrong)), want, rel_tol=1e-6), (p.id, k)
            start += n
        # every accepted value is one qkv accepts too (the edges of the range, cell by cell)
        for k, key in enumerate(keys):
            if isinstance(key, MatrixKey):
                continue
            assert grade(key, right[sum(sizes[:k])]).correct
    assert formulas >= 5
    big = Sheet("t", sheet.problems, 11)  # the core cloze of the same sheet: marks that differ, named
    assert any(q.defaultmark != p.marks for (_, p), q in zip(big.numbered(), read_quiz(render(big, "moodle", "full")),
                                                      strict=True))


def test_a_minus_infinity_cell():
    """A masked score matrix (no such key in today's bank, so one is made): −∞ is any number ≤ −1e30."""
    base = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    key = MatrixKey(((1.0, -math.inf), (0.5, 2.0)), abs_tol=0.005, decimals=2)
    p = dataclasses.replace(base, key=key, parts=[], misconceptions=[])
    q = read_quiz(render(Sheet("inf", [p], 0, moodle_cloze="formulas"), "moodle", "full"))[0]
    assert not q.errors and q.defaultmark == p.marks
    assert math.isclose(q.grade(_per_part(q, [1.0, -1e99, 0.5, 2.0])), 1.0, abs_tol=1e-7)
    assert math.isclose(q.grade(_per_part(q, [1.0, 0.0, 0.5, 2.0])), 0.75, abs_tol=1e-7)


def test_cloze_scalar_parts_keep_their_misconceptions():
    ps = [p for p in qb.curated() if p.id in ("004.lab.bonus3_gqa", "001.code.bert_sized_configs", "004.ex.b5")]
    assert ps
    qs = read_quiz(render(Sheet("m", ps, 0), "moodle", "full"))
    n = 0
    for p, q in zip(ps, qs, strict=True):
        assert q.qtype == "multianswer" and not q.errors
        for pt, sub in zip(p.parts, q.subs, strict=True):
            for m in pt.misconceptions:
                if not isinstance(m.value, int | float) or grade(pt.key, m.value).correct:
                    continue
                # the misconception's value matches a 0 % answer of that box, which carries its feedback
                hits = [f for a, f, t in zip(sub.answers, sub.fractions, sub.tolerances, strict=True)
                        if abs(float(m.value) - float(a)) <= t + 1e-9 * abs(float(m.value))]
                assert hits and hits[0] == 0.0, (p.id, pt.label, m.id)
                assert sub.grade(m.value) == 0.0
                n += 1
    assert n >= 4


def test_cli_formulas_export_names_no_mismatch(tmp_path):
    # a seed whose plain Moodle export has a matrix part the cloze default misgrades (and so names the option)
    seed = next(str(s) for s in range(1, 40)
                if "--moodle-cloze formulas" in CliRunner().invoke(cli, ["sheet", "-n", "24", "--seed", str(s), "-o",
                                                                        str(tmp_path / f"probe{s}.xml")]).output)
    out = tmp_path / "s.xml"
    r = CliRunner().invoke(cli, ["sheet", "-n", "24", "--seed", seed, "--moodle-cloze", "formulas", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "imports worth" not in r.output
    r2 = CliRunner().invoke(cli, ["sheet", "-n", "24", "--seed", seed, "-o", str(tmp_path / "c.xml")])
    assert "--moodle-cloze formulas" in r2.output
    sh_marks = [q.defaultmark for q in read_quiz(out.read_bytes())]
    js = CliRunner().invoke(cli, ["sheet", "-n", "24", "--seed", seed, "--format", "json", "-o", "-"])
    total = sum(q["problem"]["marks"] for q in json.loads(js.stdout)["questions"])
    assert sum(sh_marks) == total  # every question imports worth its marks: the sheet's total


def test_hostile_text_places_no_formulas_box():
    p = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    evil = dataclasses.replace(p, statement_md=p.statement_md + " {_0} {_1} {#1} {a}")
    q = read_quiz(render(Sheet("x", [evil], 0, moodle_cloze="formulas"), "moodle", "full"))[0]
    assert not q.errors and sum(pt.numbox for pt in q.parts) == len(_right(p.key))


def test_a_blank_or_unreadable_box_costs_only_its_share(sheet):
    """Issue 38: a blank box, "49,280" or a Unicode minus made the whole formulas question 0 (every box was
    one part); now each box is a part: the response loses that box's share, as the core cloze does."""
    qs = read_quiz(render(sheet, "moodle", "full"))
    checked = 0
    for (_, p), q in zip(sheet.numbered(), qs, strict=True):
        if q.qtype != "formulas":
            continue
        right = [x for k in _keys(p) for x in _right(k)]
        if len(right) < 2:
            continue
        shares = [pt.mark / q.defaultmark for pt in q.parts]
        for bad in (None, "49,280", "\u22123"):
            resp = [repr(x) for x in right]
            resp[0] = bad
            got = q.grade(_per_part(q, resp))
            assert math.isclose(got, 1.0 - shares[0], rel_tol=1e-6), (p.id, bad, got)
            assert got > 0
        checked += 1
    assert checked >= 3
