"""Issue 38: a mock paper exported to Moodle marks a wrong MCQ option as the paper says (GATE: −1/3 of the
question's marks), not 0 %; a practice sheet (no paper) keeps 0 %."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from click.testing import CliRunner

from drills.cli.sheet import sheet as sheet_cmd
from tests.moodle_reader import valid_grade


def _single_mcqs(path):
    root = ET.parse(path).getroot()
    out = []
    for q in root.iter("question"):
        if q.get("type") == "multichoice" and q.findtext("single") == "true":
            out.append([float(a.get("fraction")) for a in q.findall("answer")])
    return out


def test_paper_mcq_wrong_options_lose_a_third(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_HOME", str(tmp_path))
    out = tmp_path / "paper.xml"
    r = CliRunner().invoke(sheet_cmd, ["--paper", "short", "--format", "moodle", "-o", str(out), "--seed", "1"])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "wrong MCQ −1/3 of its marks" in text  # the heading the paper prints
    mcqs = _single_mcqs(out)
    assert mcqs
    for fracs in mcqs:
        assert sorted(fracs)[-1] == 100
        wrong = [f for f in fracs if f != 100]
        assert wrong and all(abs(f + 33.33333) < 1e-4 for f in wrong), fracs
        assert all(valid_grade(f / 100) for f in fracs)


def test_practice_sheet_mcq_wrong_options_stay_zero(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_HOME", str(tmp_path))
    out = tmp_path / "s.xml"
    r = CliRunner().invoke(sheet_cmd, ["-n", "6", "--type", "mcq", "--format", "moodle", "-o", str(out), "--seed", "2"])
    assert r.exit_code == 0, r.output
    for fracs in _single_mcqs(out):
        assert all(f in (0, 100) for f in fracs), fracs
