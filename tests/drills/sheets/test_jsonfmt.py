"""qkv sheet JSON: strict (the schema, and check_sheet for what a schema cannot say) and read
back (``qkv sheet --from FILE.json``), and the output file's suffix matching its format."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli
from drills.sheets import FORMATS, Sheet, render
from drills.sheets.jsonfmt import SheetFormatError, schema, sheet_from_json
from question_bank import bank as qb

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    from drills.sheets.select import select_problems

    ps = []
    for t in ("mcq", "msq", "nat", "integer", "matrix"):  # a generated problem of each type, without parts
        ps.append(next(p for p in select_problems(30, 4, types=[t]).problems if p.family and not p.parts))
    ps += [p for p in qb.curated() if p.id == "004.lab.bonus3_gqa"]
    return Sheet("JSON sheet", ps, 4, {"n": 6})


@pytest.fixture(scope="module")
def full(sheet) -> dict:
    return json.loads(render(sheet, "json", "full"))


def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def _q(obj, type_):
    return next(q for q in obj["questions"] if q["problem"]["type"] == type_ and not q["problem"]["parts"])


def test_round_trip_is_identical_in_every_format(sheet, full):
    back = sheet_from_json(render(sheet, "json", "full"))
    assert [p.id for p in back.problems] == [p.id for p in sheet.problems]
    assert [p.key for p in back.problems] == [p.key for p in sheet.problems]
    for fmt in sorted(set(FORMATS) - {"pdf", "anki"}):
        for version in ("student", "full"):
            assert render(back, fmt, version) == render(sheet, fmt, version), (fmt, version)


def test_an_edited_sheet_renders(full, tmp_path):
    edited = copy.deepcopy(full)
    qs = edited["questions"]
    edited["questions"] = [qs[2], qs[0]]  # reordered, the rest dropped
    assert edited["questions"][0]["problem"]["family"]  # a generated problem: rewording keeps its figures
    edited["questions"][0]["problem"]["statement_md"] += " (edited by the teacher)"
    edited["questions"][0]["problem"]["statement_text"] += " (edited by the teacher)"
    src = tmp_path / "edited.json"
    src.write_text(json.dumps(edited))
    out = tmp_path / "edited.md"
    r = CliRunner().invoke(cli, ["sheet", "--from", str(src), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    md = out.read_text()
    assert "(edited by the teacher)" in md.split("## Q2")[0]  # the first question now
    info = json.loads(r.stdout)
    assert [p["id"] for p in info["problems"]] == [qs[2]["problem"]["id"], qs[0]["problem"]["id"]]
    assert [p["number"] for p in info["problems"]] == [1, 2]
    assert info["total_marks"] == qs[2]["marks"] + qs[0]["marks"]
    for fmt, suffix in (("pdf", ".pdf"), ("moodle", ".xml"), ("anki", ".apkg"), ("html", ".html")):
        r = CliRunner().invoke(cli, ["sheet", "--from", str(src), "-o", str(tmp_path / f"e{suffix}"), "--format", fmt])
        assert r.exit_code == 0, (fmt, r.output)


def _broken(full, how):
    obj = copy.deepcopy(full)
    how(obj)
    return obj


def _q_number(obj, type_):
    return next(i for i, q in enumerate(obj["questions"], 1) if q["problem"]["type"] == type_ and not q["problem"]["parts"])


def _mcq_numeric(o):
    _q(o, "mcq")["problem"]["key"] = {"kind": "numeric", "value": 1.0, "lo": 0.9, "hi": 1.1, "decimals": 1, "unit": ""}


def _option_7_of_4(o):
    _q(o, "mcq")["problem"]["key"]["correct"] = [7]


def _lo_above_hi(o):
    k = _q(o, "nat")["problem"]["key"]
    k["lo"], k["hi"] = k["hi"] + 1, k["lo"]


def _ragged(o):
    rows = _q(o, "matrix")["problem"]["key"]["value"]
    rows.append([0.5] * (len(rows[0]) + 1))


def _two_mcq_answers(o):
    _q(o, "mcq")["problem"]["key"]["correct"] = [0, 1]


def _marks_disagree(o):
    o["questions"][0]["marks"] = 3 - o["questions"][0]["problem"]["marks"]


@pytest.mark.parametrize("how, schema_too", [(_mcq_numeric, True), (_two_mcq_answers, True), (_option_7_of_4, False),
                                             (_lo_above_hi, False), (_ragged, False), (_marks_disagree, False)])
def test_what_the_format_forbids_is_refused(full, how, schema_too):
    assert _validator().is_valid(full)
    bad = _broken(full, how)
    with pytest.raises(SheetFormatError):
        sheet_from_json(json.dumps(bad).encode())
    assert _validator().is_valid(bad) is not schema_too


def test_a_student_file_holds_no_answer(sheet):
    student = json.loads(render(sheet, "json", "student"))
    assert _validator().is_valid(student)
    leaky = copy.deepcopy(student)
    leaky["questions"][0]["problem"]["explanation"] = "because"
    assert not _validator().is_valid(leaky)
    with pytest.raises(SheetFormatError, match="no answers"):
        sheet_from_json(json.dumps(leaky).encode())
    with pytest.raises(SheetFormatError, match="no keys"):
        sheet_from_json(json.dumps(student).encode())


def test_bad_from_file_is_one_line(full, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_broken(full, _option_7_of_4)))
    r = subprocess.run([sys.executable, "-m", "drills", "sheet", "--from", str(bad), "-o", str(tmp_path / "x.md")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "option 7 does not exist" in r.stderr and "questions[" not in r.stderr
    assert " key.correct: " in r.stderr and f"Q{_q_number(full, 'mcq')} " in r.stderr


def test_output_suffix_and_format(tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["sheet", "-n", "2", "-o", str(tmp_path / "x.docx")])
    assert r.exit_code == 2 and not (tmp_path / "x.docx").exists()
    r = runner.invoke(cli, ["sheet", "-n", "2", "--format", "pdf", "-o", str(tmp_path / "x.docx")])
    assert r.exit_code == 2 and not (tmp_path / "x.docx").exists()
    r = runner.invoke(cli, ["sheet", "-n", "2", "--format", "md", "-o", str(tmp_path / "x.html")])
    assert r.exit_code == 2
    for suffix, fmt in ((".md", "md"), (".html", "html"), (".xml", "moodle"), (".json", "json")):
        r = runner.invoke(cli, ["sheet", "-n", "2", "-o", str(tmp_path / f"y{suffix}"), "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["format"] == fmt
    assert json.loads((tmp_path / "y.json").read_text())["format"] == "qkv-sheet"
    assert (tmp_path / "y.xml").read_bytes().startswith(b"<?xml")


def test_a_full_disk_writes_neither_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """``--answers separate`` writes two files: when the second cannot be written (a full disk),
    neither is written and no ``.tmp`` file is left behind; the error is one line."""
    import errno
    import os

    real = os.fsync
    calls = {"n": 0}

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] == 2:  # the second file written, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    r = CliRunner().invoke(cli, ["sheet", "-n", "2", "--answers", "separate", "-o", str(tmp_path / "s.md")])
    assert r.exit_code == 2 and calls["n"] == 2
    assert "No space left on device" in r.output and "nothing was written" in r.output
    assert list(tmp_path.iterdir()) == []
