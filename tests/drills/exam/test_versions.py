"""``qkv sheet --versions N --paper`` and ``--students`` (issue 41): versions of one paper for a class.

Checked from the files written (the key file read as JSON, the papers as text) and from the bank
itself (every question regenerated from its family, seed and difficulty), never from the code that
made them."""

from __future__ import annotations

import html as html_mod
import json
import subprocess
import sys
from collections import Counter

import pytest

from drills.exam.blueprint import assemble, load
from question_bank import bank
from question_bank.problem import key_value


def _run(args, cwd):
    return subprocess.run([sys.executable, "-m", "drills", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("versions")
    r = _run(["sheet", "--paper", "short", "--seed", "5", "--versions", "4", "-o", str(d / "c.md"), "--json"], d)
    assert r.returncode == 0, r.stderr
    return d, json.loads(r.stdout)


def test_files_and_same_bytes(made, tmp_path):
    d, out = made
    names = sorted(p.name for p in d.iterdir())
    assert names == sorted([f"c.V0{i}.md" for i in range(1, 5)] + [f"c.V0{i}.answers.md" for i in range(1, 5)]
                           + ["c.key.json"])
    r = _run(["sheet", "--paper", "short", "--seed", "5", "--versions", "4", "-o", str(tmp_path / "c.md")], tmp_path)
    assert r.returncode == 0, r.stderr
    for p in d.iterdir():
        assert (tmp_path / p.name).read_bytes() == p.read_bytes(), p.name
    # the student's paper has no key; its own id is printed on it; the answers file has the key
    for i in range(1, 5):
        text = (d / f"c.V0{i}.md").read_text()
        assert f"version V0{i}" in text.splitlines()[0]
        assert "Answer key" not in text and "answer key" not in text.lower()
        assert f"version V0{i}" in (d / f"c.V0{i}.answers.md").read_text()


def test_versions_hold_the_same_items(made):
    d, _ = made
    key = json.loads((d / "c.key.json").read_text())
    bp = load("short")
    base = assemble(bp, 5)
    assert key["format"] == "qkv-key" and key["paper"] == "short" and key["seed"] == 5
    assert key["marking"] == {"mcq": "1/3", "msq": "0", "nat": "0"}
    v1 = key["versions"][0]
    assert [q["id"] for q in v1["questions"]] == [p.id for p in base.problems]  # version 1 is the paper
    sections = [s["questions"] for s in key["blueprint"]["sections"]]
    redrawn = 0
    for v in key["versions"]:
        qs = v["questions"]
        assert sorted(q["item"] for q in qs) == list(range(1, len(base.problems) + 1))
        assert [q["number"] for q in qs] == list(range(1, len(qs) + 1))
        # questions stay in their section
        start = 0
        for n in sections:
            assert sorted(q["item"] for q in qs[start:start + n]) == list(range(start + 1, start + n + 1))
            start += n
        seen = set()
        for q in qs:
            p0 = base.problems[q["item"] - 1]
            assert (q["marks"], q["paper_type"], q["difficulty"]) == (p0.marks, {"integer": "nat"}.get(p0.type, p0.type),
                                                                    p0.difficulty)
            assert q["family"] == p0.family
            # the key is the bank's: regenerate the problem
            p = bank.problem(q["family"], seed=q["seed"], difficulty=q["difficulty"]) if q["family"] else \
                bank.problem(q["curated"])
            assert json.loads(json.dumps(key_value(p.key))) == q["answer_key"]
            assert p.statement_md not in seen
            seen.add(p.statement_md)
            if q["family"] and v["id"] != "V01":
                redrawn += q["seed"] != p0.seed
    assert redrawn >= 3 * sum(1 for p in base.problems if p.family) - 1
    # not every version in the same order
    assert len({tuple(q["item"] for q in v["questions"]) for v in key["versions"]}) > 1


def test_roster_one_version_each_escaped(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_bytes("\ufeffRoll No,Name,Email\n"
                       "s1,<b>Ann</b> & *Bo*,a@x\n"
                       "s2,\"Lee, Chi\",c@x\n".encode())
    r = _run(["sheet", "--paper", "short", "--students", str(roster), "-o", str(tmp_path / "c.html")], tmp_path)
    assert r.returncode == 0, r.stderr
    key = json.loads((tmp_path / "c.key.json").read_text())
    assert [(v["id"], v["student"]) for v in key["versions"]] == [("V01", {"id": "s1", "name": "<b>Ann</b> & *Bo*"}),
                                                                  ("V02", {"id": "s2", "name": "Lee, Chi"})]
    page = (tmp_path / "c.V01.html").read_text()
    assert "<b>Ann</b>" not in page and html_mod.escape("<b>Ann</b>") in page
    assert "Lee, Chi" in (tmp_path / "c.V02.html").read_text()


@pytest.mark.parametrize("fmt,ext", [("json", "json"), ("moodle", "xml")])
def test_other_formats(tmp_path, fmt, ext):
    r = _run(["sheet", "--paper", "short", "--versions", "2", "-o", str(tmp_path / f"c.{ext}")], tmp_path)
    assert r.returncode == 0, r.stderr
    got = Counter(p.name.split(".")[1] for p in tmp_path.iterdir())
    assert got == Counter({"V01": 2, "V02": 2, "key": 1})
    if fmt == "json":
        s = json.loads((tmp_path / "c.V02.json").read_text())
        assert "version V02" in s["title"]


def test_refusals(tmp_path):
    roster = tmp_path / "r.csv"
    roster.write_text("id,name\na,A\na,B\n")
    cases = [
        (["sheet", "--versions", "3", "-o", "x.md"], "--paper"),
        (["sheet", "--paper", "short", "--versions", "3", "-o", "-", "--format", "md"], "several files"),
        (["sheet", "--paper", "short", "--students", str(roster), "-o", "x.md"], "line 3"),
        (["sheet", "--paper", "short", "--versions", "2", "--students", str(roster), "-o", "x.md"], "not both"),
    ]
    for args, words in cases:
        r = _run(args, tmp_path)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def test_one_pdf_with_a_hostile_name(tmp_path):
    """A roster's name reaches the PDF as text, never as Typst markup (one PDF: they are slow)."""
    import pypdf

    name = "#set page(width: 1cm) $x^2$ \\ *b* [l](u) <i>"
    roster = tmp_path / "r.csv"
    roster.write_text('id,name\nx1,"' + name + '"\n')
    r = _run(["sheet", "--paper", "short", "--students", str(roster), "--answers", "none", "-o", str(tmp_path / "c.pdf")],
             tmp_path)
    assert r.returncode == 0, r.stderr
    text = pypdf.PdfReader(tmp_path / "c.V01.pdf").pages[0].extract_text()
    assert "x1 " + name in " ".join(text.split("\n"))
