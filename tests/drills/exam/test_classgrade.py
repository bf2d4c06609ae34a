"""``qkv grade`` (issue 41): the CSV a spreadsheet or a form exports, read whole; every row that
cannot be read listed with why; GATE marking (and a blueprint's partial credit); the judge's
diagnosis; CSV cells escaped. Expected marks are worked out here from GATE's rules, not by qkv."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from fractions import Fraction

import pytest

from drills.answers import read_answer
from drills.exam.blueprint import parse
from drills.exam.classgrade import KeyFileError, grade_class, load_key, read_answers
from drills.exam.versions import Student, key_bytes, key_json, make_versions
from question_bank.grading import LETTERS, as_choice_set, grade

BP = {"name": "mini", "title": "mini paper", "minutes": 20, "partial": ["msq"],
      "section": [{"name": "A", "topics": [], "questions": [{"type": "mcq", "marks": 1, "count": 2},
                                                           {"type": "msq", "marks": 2, "count": 1},
                                                           {"type": "nat", "marks": 2, "count": 2}]}]}
ROSTER = [Student("s1", "Ann"), Student("s2", "<b>Bo</b>"), Student("s3", "<i>Cy</i>"), Student("s4", "Absent Al")]


@pytest.fixture(scope="module")
def key_data():
    bp = parse(BP)
    versions = make_versions(bp, 3, 0, ROSTER)
    return key_bytes(key_json(bp, 3, versions, bp.title))


@pytest.fixture(scope="module")
def key(key_data):
    return load_key(key_data, "k.json")


def _q(key, vid, n):
    return key.versions[vid].questions[n - 1]


def _right(p):
    if p.type in ("mcq", "msq"):
        return ",".join(LETTERS[i] for i in sorted(p.key.correct))
    return repr(float(p.key.value)) if p.type == "nat" else str(p.key.value)


def _wrong_option(p):
    return next(LETTERS[i] for i in range(len(p.options)) if i not in p.key.correct)


def test_spreadsheet_csv_and_marks(key):
    v1 = key.students["s1"]
    qs = key.versions[v1].questions
    mcq = [q for q in qs if q.paper_type == "mcq"]
    msq = next(q for q in qs if q.paper_type == "msq")
    nats = [q for q in qs if q.paper_type == "nat"]
    subset = sorted(msq.problem.key.correct)[:1] if len(msq.problem.key.correct) > 1 else None
    lines = ["\ufeffEmail;Student ID;Question;Answer;Extra",
             f"x@y;s1;Q{mcq[0].number};{_right(mcq[0].problem).upper()};",
             f"x@y;s1;{mcq[1].number};\"{_wrong_option(mcq[1].problem)}\";z",
             f"x@y;s1;{nats[0].number};\"{_right(nats[0].problem)}\";",
             f"x@y;s1;{msq.number};\"{', '.join(LETTERS[i] for i in subset) if subset else 'zz'}\";"]
    got = read_answers("\n".join(lines).encode("utf-8"), key, "a.csv")
    assert any("'Email'" in n and "'Extra'" in n for n in got.notes)
    graded = grade_class(key, got)
    [row] = graded
    by = {g.number: g for g in row}
    assert by[mcq[0].number].awarded == mcq[0].marks
    assert by[mcq[1].number].outcome == "wrong" and by[mcq[1].number].awarded == -Fraction(mcq[1].marks, 3)
    assert by[nats[0].number].awarded == nats[0].marks
    assert by[nats[1].number].outcome == "unanswered" and by[nats[1].number].awarded == 0
    assert subset  # the blueprint's partial credit: a right subset earns its share
    if subset:
        assert by[msq.number].outcome == "partial"
        assert by[msq.number].awarded == Fraction(msq.marks * len(subset), len(msq.problem.key.correct))
    assert {a.id for a in got.absent} == {"s2", "s3", "s4"}


def test_same_diagnosis_as_the_quiz(key):
    """A named mistake is named as the quiz names it (the quiz's reader, the one judge)."""
    for v in key.versions.values():
        for q in v.questions:
            p = q.problem
            for m in p.misconceptions:
                if p.type in ("mcq", "msq"):
                    text = ",".join(LETTERS[i] for i in sorted(as_choice_set(m.value) or ()))
                else:
                    text = repr(float(m.value))
                if not text:
                    continue
                sid = v.student.id
                got = read_answers(f"student,question,answer\n{sid},{q.number},\"{text}\"\n".encode(), key, "a.csv")
                g = next(g for g in grade_class(key, got)[0] if g.number == q.number)
                a = read_answer(p, text)
                want = grade(p, a.value, written=a.written, unit=a.unit)
                assert (g.verdict.status, getattr(g.misconception, "id", None)) == \
                    (want.status, getattr(want.misconception, "id", None))
                return
    pytest.skip("no misconception on this paper")


def test_rows_not_read_are_listed_with_why(key):
    v1, v2 = key.students["s1"], key.students["s2"]
    other = next(v for v in key.versions if v != v1)
    rows = ["student,version,question,answer",
            ",V01,1,a",                        # no student
            "s1,V99,1,a",                      # no such version
            f"s1,{other},1,a",                 # not the roster's version
            f"s1,{v1},99,a",                   # no such question
            f"s1,{v1},1,a",
            f"s1,{v1},1,b",                    # a second answer
            f"s2,{v2},1,not an option at all",  # the reader refuses it
            "s9,,1,a"]                         # no version, not on the roster
    got = read_answers("\n".join(rows).encode(), key, "a.csv")
    grade_class(key, got)
    whys = {u.line: u.why for u in got.unread}
    assert set(whys) == {2, 3, 4, 5, 7, 8, 9}
    assert "no student id" in whys[2]
    assert "'V99'" in whys[3]
    assert "roster" in whys[4]
    assert "1 to 5" in whys[5]
    assert "second answer" in whys[7] and "line 6" in whys[7]
    assert whys[8].startswith("Q1: ")
    assert "roster" in whys[9]
    assert [a.id for a in got.absent] == ["s3", "s4"]


def test_form_export_one_column_per_question(key):
    v3 = key.students["s3"]
    qs = key.versions[v3].questions
    head = "Timestamp,Roll No,Name," + ",".join(f"Question {q.number}" for q in qs)
    row = "t,s3,Cy," + ",".join(f"\"{_right(q.problem)}\"" for q in qs)
    got = read_answers(f"{head}\n{row}\n".encode(), key, "form.csv")
    [row_g] = grade_class(key, got)
    assert got.unread == []
    assert all(g.outcome == "correct" for g in row_g)
    assert sum(g.awarded for g in row_g) == sum(q.marks for q in qs)


def test_key_file_refusals(key_data):
    obj = json.loads(key_data)
    q = obj["versions"][1]["questions"][0]
    q["marks"] = 3 - q["marks"]
    edited = json.dumps(obj).encode()
    obj["versions"][0]["questions"][0]["family"] = obj["versions"][0]["questions"][0]["curated"] = None
    for data, words in [(b"{", "not a JSON key file"), (b'{"format": "other"}', "not a qkv key file"),
                        (edited, "version 2.*is worth"), (json.dumps(obj).encode(), "neither a family")]:
        with pytest.raises(KeyFileError, match=words):
            load_key(data, "k.json")


def _cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "drills", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_cli_files_escaped_and_one_line_errors(tmp_path, key_data, key):
    (tmp_path / "k.json").write_bytes(key_data)
    v2 = key.students["s2"]
    # the formula answers a choice question (a row not read); "-3" answers a NAT question (read)
    qf = next(q.number for q in key.versions[v2].questions if q.paper_type in ("mcq", "msq"))
    qc = next(q.number for q in key.versions[v2].questions if q.paper_type == "nat")
    (tmp_path / "a.csv").write_text("student,version,question,answer\n"
                                    f"s2,{v2},{qf},=HYPERLINK(\"http://x\")\n"
                                    f"s2,{v2},{qc},\"-3\"\n")
    r = _cli(["grade", "k.json", "a.csv", "-o", "r.csv", "--report", "r.md"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.questions.csv").read_text())))
    answers = {row["question"]: row["answer"] for row in rows}
    assert answers[str(qf)] == "'=HYPERLINK(\"http://x\")" and answers[str(qc)] == "'-3"
    students = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert [s["student"] for s in students] == ["s2", "s1", "s3", "s4"]  # the absent listed, with no score
    assert students[1]["score"] == ""
    report = (tmp_path / "r.md").read_text()
    assert "<i>" not in report and "&lt;i>Cy&lt;/i>" in report  # a roster's name, escaped
    assert "Rows not read (1)" in report and "Students with no row (3)" in report
    assert "Absent Al" in report
    for args, words in [(["grade", "k.json", "missing.csv"], "cannot read"),
                        (["grade", "a.csv", "a.csv"], "not a JSON key file"),
                        (["grade", "k.json", "a.csv", "-o", "r.txt"], ".csv"),
                        (["grade", "k.json", "a.csv", "-o", "a.csv"], "reads")]:
        r = _cli(args, tmp_path)
        assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _cli(["grade", "k.json", "a.csv", "--json"], tmp_path)
    obj = json.loads(r.stdout)
    assert obj["students"] == 1 and obj["unread"][0]["line"] == 2


def test_partial_credit_printed_on_the_paper():
    from drills.sheets import marking_rule

    assert "all or nothing" in marking_rule(["msq"], None)
    said = marking_rule(["mcq", "msq"], None, ("msq",))
    assert "all or nothing" not in said and "a share of the marks" in said


def test_blueprint_partial_field(tmp_path):
    from drills.exam.blueprint import BlueprintError, load

    assert parse(BP).partial == ("msq",)
    assert parse({k: v for k, v in BP.items() if k != "partial"}).partial == ()
    with pytest.raises(BlueprintError, match="partial"):
        parse(BP | {"partial": ["nat"]})
    f = tmp_path / "p.toml"
    f.write_text('name = "p"\nminutes = 10\npartial = ["msq"]\n[[section]]\nquestions = [{ type = "msq", marks = 2, '
                 'count = 1 }]\n')
    assert load(str(f)).partial == ("msq",) and load(str(f)).to_json()["partial"] == ["msq"]


def test_partial_credit_in_the_versions_heading(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('name = "p"\nminutes = 10\npartial = ["msq"]\n[[section]]\nname = "S"\nquestions = [{ type = "msq", '
                 'marks = 2, count = 1 }, { type = "mcq", marks = 1, count = 1 }]\n')
    r = _cli(["sheet", "--paper", str(f), "--versions", "2", "-o", "c.md"], tmp_path)
    assert r.returncode == 0, r.stderr
    for v in ("V01", "V02"):
        heading = next(ln for ln in (tmp_path / f"c.{v}.md").read_text().splitlines() if ln.startswith("# S · "))
        assert "a share of the marks" in heading and "all or nothing" not in heading
    assert json.loads((tmp_path / "c.key.json").read_text())["partial"] == ["msq"]
