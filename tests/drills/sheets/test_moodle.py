"""Moodle XML as Moodle reads it: every question imports without an error, worth the sheet's
marks where Moodle's whole-number cloze weights allow it, and graded as qkv's key grades.

The reading is tests/moodle_reader.py, a port of Moodle's import code (not of ours); the
expected scores come from ``question_bank.grading`` (the one judge) and from the keys.
"""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from drills.cli import cli
from drills.sheets import Sheet, render
from drills.sheets.moodle import mark_mismatches
from question_bank import bank as qb
from question_bank.grading import grade, grade_parts, total_score
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, Part, Problem
from tests.moodle_reader import extract_cloze, read_quiz


def _problems() -> list[Problem]:
    from drills.sheets.select import select_problems

    ps = []
    for t in ("mcq", "msq", "nat", "integer"):
        ps += select_problems(2, 5, types=[t]).problems
    ps.append(qb.problem("attention.by_hand", seed=3, difficulty="hard"))  # four matrix parts, 2 marks
    ps.append(qb.problem("attention.masked_weights", seed=1, difficulty="medium"))  # a 3×3 weights matrix, 1 mark
    for pid in ("004.lab.bonus3_gqa", "000.code.scaling_demo", "001.code.bert_sized_configs", "000.code.causal_mask"):
        ps += [p for p in qb.curated() if p.id == pid]
    return ps


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    return Sheet("Moodle sheet", _problems(), 5)


def _right(key) -> list:
    """One response per box that the key accepts (the key's own values)."""
    if isinstance(key, MatrixKey):
        return [("-inf" if math.isinf(x) and x < 0 else x) for row in key.value for x in row]
    if isinstance(key, ChoiceKey):
        return [sorted(key.correct) if len(key.correct) > 1 else min(key.correct)]
    return [key.value]


def _keys(p: Problem) -> list:
    return [pt.key for pt in p.parts] if p.parts else [p.key]


def test_the_reader_can_fail():
    """The port of Moodle's regexes rejects what Moodle rejects and reads weights as Moodle does."""
    assert extract_cloze("{0.5:NUMERICAL:%100%1:0.1}")[1] == []  # a decimal weight is no field at all
    mark, subs, errors = extract_cloze("a {2:NUMERICAL:%100%1:0.1} b {:NM:=3} c {NM:=4}")
    assert mark == 3 and [s.weight for s in subs] == [2, 1] and not errors  # {NM:…} is no field
    mark, subs, errors = extract_cloze("{1:NUMERICAL:%100%-inf:0.005}")
    assert errors  # Moodle's numbers have no infinity
    mark, subs, errors = extract_cloze("{1:MULTIRESPONSE:%100%a~%100%b~%-100%c}")
    assert subs[0].grade([0]) == 0.5 and subs[0].grade([0, 2]) == 0 and subs[0].grade([0, 1]) == 1


@pytest.mark.parametrize("version", ["full", "student"])
def test_every_question_imports_and_is_worth_the_sheets_marks(sheet, version):
    qs = read_quiz(render(sheet, "moodle", version))
    assert len(qs) == len(sheet.problems)
    odd = {p.id: m for _, p, m in mark_mismatches(sheet)}
    for q, p in zip(qs, sheet.problems, strict=True):
        assert not q.errors, (p.id, q.errors)
        assert q.idnumber == p.id
        if p.id in odd:  # Moodle's whole-number weights cannot make this cloze worth p.marks
            boxes = sum(len(k.value) * len(k.value[0]) if isinstance(k, MatrixKey) else 1 for k in _keys(p))
            assert boxes > p.marks and q.defaultmark == odd[p.id] and f"({p.marks} mark" in q.name
        else:
            assert q.defaultmark == p.marks, (p.id, q.defaultmark, p.marks)
    # the two-part 2-mark problem imports worth 2, the 4-part 3-mark... whatever the bank holds: worth its marks
    gqa = next(q for q, p in zip(qs, sheet.problems, strict=True) if p.id == "004.lab.bonus3_gqa")
    assert gqa.defaultmark == 2 and [s.weight for s in gqa.subs] == [1, 1]


def test_moodle_grades_as_the_key_does(sheet):
    qs = read_quiz(render(sheet, "moodle", "full"))
    for q, p in zip(qs, sheet.problems, strict=True):
        if q.qtype == "multianswer":
            keys = _keys(p)
            right = [r for k in keys for r in _right(k)]
            assert q.grade(right) == pytest.approx(1.0), p.id
            assert q.grade([None] * len(right)) == 0
            # only the first part (or the first cell) right: Moodle's fraction is qkv's score
            sizes = [len(_right(k)) for k in keys]
            first_only = right[: sizes[0]] + [None] * (len(right) - sizes[0])
            if p.parts:
                answers = {p.parts[0].label: _answer_value(p.parts[0])}
                expected = total_score(grade_parts(_no_follow(p), answers))
            else:
                expected = 1.0
            assert q.grade(first_only) == pytest.approx(expected), p.id
            if isinstance(keys[0], MatrixKey) and sizes[0] > 1:
                one_cell = right[:1] + [None] * (len(right) - 1)
                assert q.grade(one_cell) == pytest.approx(1 / sizes[0] / len(keys)), p.id
        elif p.type in ("nat", "integer"):
            key = p.key
            assert q.grade([key.value]) == 1
            if isinstance(key, NumericKey):  # Moodle's range is the key's range
                assert q.grade([key.lo]) == 1 and q.grade([key.hi]) == 1
                span = key.hi - key.lo
                assert q.grade([key.hi + span / 10]) == 0 and q.grade([key.lo - span / 10]) == 0
                assert grade(p, key.hi + span / 10).correct is False
            else:
                assert isinstance(key, IntegerKey)
                assert q.grade([key.value + 1]) == (1 if grade(p, key.value + 1).correct else 0)
        elif p.type == "mcq":
            (c,) = p.key.correct
            assert q.grade([c]) == 1 and all(q.grade([j]) == 0 for j in range(len(p.options)) if j != c)
        else:  # MSQ, default encoding: a wrong tick scores 0, the full set 1
            correct = sorted(p.key.correct)
            wrong = [j for j in range(len(p.options)) if j not in p.key.correct]
            assert q.grade([correct]) == pytest.approx(1, abs=1e-6)  # 3 × 0.3333333: Moodle's "right" (> 0.999999)
            for w in wrong:
                assert q.grade([correct + [w]]) == 0 and q.grade([[w]]) == 0


def _answer_value(pt: Part):
    k = pt.key
    return [list(r) for r in k.value] if isinstance(k, MatrixKey) else k.value


def _no_follow(p: Problem) -> Problem:
    """The problem without follow-through (Moodle has none: a part is right only against its key)."""
    from dataclasses import replace

    return replace(p, parts=[replace(pt, follow=None) for pt in p.parts])


def test_a_cell_accepts_what_the_grader_accepts(sheet):
    """Every matrix cell box: Moodle's verdict on values around the cell is the judge's
    (question_bank.grading.grade on a one-cell key with the same tolerance and rounding)."""
    qs = read_quiz(render(sheet, "moodle", "full"))
    n = 0
    for q, p in zip(qs, sheet.problems, strict=True):
        if q.qtype != "multianswer":
            continue
        subs = iter(q.subs)
        for key in _keys(p):
            if not isinstance(key, MatrixKey):
                next(subs)
                continue
            for row in key.value:
                for x in row:
                    sub = next(subs)
                    cell = MatrixKey(((x,),), abs_tol=key.abs_tol, decimals=key.decimals)
                    h = 0.5 * 10.0 ** -(key.decimals if key.decimals is not None else 3)
                    for off in (0, 0.9, -0.9, 1.1, -1.1, 1.9, -1.9, 2.9, -2.9, 3.1, -3.1):
                        for step in (key.abs_tol, h):
                            v = x + off * step
                            assert (sub.grade(v) == 1) == grade(cell, [[v]]).correct, (p.id, x, v)
                            n += 1
    assert n > 100


def test_msq_all_or_nothing_uses_multichoiceset(sheet):
    aon = Sheet(sheet.title, sheet.problems, sheet.seed, moodle_msq="allornothing")
    qs = read_quiz(render(aon, "moodle", "full"))
    msqs = [(q, p) for q, p in zip(qs, sheet.problems, strict=True) if p.type == "msq"]
    assert msqs
    for q, p in msqs:
        assert q.qtype == "multichoiceset" and q.defaultmark == p.marks and not q.errors
        correct = sorted(p.key.correct)
        assert q.grade([correct]) == 1
        if len(correct) > 1:  # a proper subset: 0 here, partial credit in the core encoding
            assert q.grade([correct[:1]]) == 0
            core = read_quiz(render(sheet, "moodle", "full"))[sheet.problems.index(p)]
            assert core.grade([correct[:1]]) == pytest.approx(1 / len(correct))
    assert all(q.qtype != "multichoiceset" for q, p in zip(qs, sheet.problems, strict=True) if p.type != "msq")


def test_an_infinite_cell_imports(sheet):
    """No key in the bank holds −∞ today, but a masked-scores key may: Moodle's numbers have
    none, so such a cell is a short answer (a NUMERICAL "-inf" would stop the import)."""
    from dataclasses import replace

    base = next(p for p in sheet.problems if p.id == "000.code.causal_mask")
    rows = tuple(tuple(-math.inf if c > r else 0.5 for c in range(3)) for r in range(3))
    p = replace(base, key=MatrixKey(rows, abs_tol=5e-3, decimals=2), misconceptions=[])
    (q,) = read_quiz(render(Sheet("inf", [p], 0), "moodle", "full"))
    assert not q.errors and any(s.qtype == "shortanswer" for s in q.subs)
    right = _right(p.key)
    assert q.grade(right) == pytest.approx(1.0)
    assert q.grade(["−∞" if r == "-inf" else r for r in right]) == pytest.approx(1.0)
    assert q.grade([0 if r == "-inf" else r for r in right]) < 1


def test_cli_moodle_msq_option_and_mark_warning(tmp_path):
    out = tmp_path / "q.xml"
    r = CliRunner().invoke(cli, ["sheet", "-n", "6", "--seed", "3", "--type", "msq", "--type", "matrix",
                                 "--moodle-msq", "allornothing", "-o", str(out)])
    assert r.exit_code == 0, r.output
    qs = read_quiz(out.read_bytes())
    assert any(q.qtype == "multichoiceset" for q in qs)
    odd = [q for q in qs if q.qtype == "multianswer" and f"({int(q.defaultmark)} mark" not in q.name]
    for q in odd:
        assert q.name.split()[0] in r.output  # "Q03 ... imports worth 9 marks in Moodle"
