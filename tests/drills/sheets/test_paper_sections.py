"""A paper printed by ``qkv sheet --paper`` carries its sections (issue 26): every format that prints
questions (Markdown, HTML, PDF) prints each section's one-line heading (name, questions, marks,
marking) once, in the blueprint's order, before exactly the blueprint's questions with the marks the
blueprint says, numbered on across sections; Anki tags and Moodle categories carry the section.

The expected figures come from the blueprint (its rows), never from the sheet code: the printed
files are parsed back (the PDF through pypdf's text extraction)."""

from __future__ import annotations

import io
import json
import re
import sqlite3
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.exam.blueprint import assemble, load, parse
from drills.sheets import Sheet, marking_rule, paper_sections, render

TINY = {
    "name": "tiny", "title": "tiny paper", "minutes": 12,
    "marking": {"mcq": "1/4", "nat": "1/2"},
    "section": [
        {"name": "Attention", "topics": ["attention"], "questions": [{"type": "mcq", "marks": 1, "count": 2},
                                                                     {"type": "nat", "marks": 2, "count": 1}]},
        {"name": "Anything", "topics": [], "questions": [{"type": "msq", "marks": 2, "count": 1},
                                                         {"type": "nat", "marks": 1, "count": 2}]},
        {"name": "Last one", "topics": [], "questions": [{"type": "mcq", "marks": 2, "count": 1}]},
    ],
}


def _blueprint(name):
    return parse(TINY) if name == "tiny" else load(name)


def _sheet(bp, seed):
    paper = assemble(bp, seed)
    return Sheet(title=bp.title, problems=list(paper.problems), seed=seed,
                 arguments={"paper": bp.name, "minutes": bp.minutes},
                 sections=paper_sections(paper.sections, list(paper.problems), paper.penalties))


def _expected_rule_bits(bp, s):
    """What the heading must say of the marking, from the blueprint's own fields."""
    types = {r.type for r in s.rows}
    bits = []
    for t in ("mcq", "msq", "nat"):
        if t in types:
            f = bp.penalties[t]
            bits.append(f"wrong {t.upper()} −{f} of its marks" if f else t.upper())
    return bits


def _events_md(text):
    out = []
    for line in text.splitlines():
        if m := re.match(r"## Q(\d+) \((\d) marks?,", line):
            out.append(("q", int(m[1]), int(m[2])))
        elif line.startswith("# ") and " · Q" in line:
            out.append(("sec", line[2:]))
    return out


def _events_html(text):
    out = []
    for m in re.finditer(r'<h2 class="sec">([^<]*)</h2>|<div class="qm">\[(\d) marks?\]</div><div class="qh">Q(\d+)\.',
                         text):
        if m[1] is not None:
            import html

            out.append(("sec", html.unescape(m[1])))
        else:
            out.append(("q", int(m[3]), int(m[2])))
    return out


def _events_pdf(data, bp):
    import pypdf

    text = " ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages)
    text = re.sub(r"\s+", " ", text)
    names = "|".join(re.escape(s.name) for s in bp.sections)
    pat = re.compile(rf"\[(\d) marks?\] ?Q(\d+)\.|((?:{names}) · Q\d+(?:–Q\d+)? · \d+ questions? · \d+ marks? · [^\[]*?)"
                     r"(?= ?\[\d marks?\])")
    out = []
    for m in pat.finditer(text):
        if m[3] is not None:
            out.append(("sec", m[3].strip()))
        else:
            out.append(("q", int(m[2]), int(m[1])))
    return out


def _check(events, bp):
    """Each section heading once, in order, then exactly its questions with the blueprint's marks."""
    secs = [e for e in events if e[0] == "sec"]
    assert len(secs) == len(bp.sections), secs
    nums = [e[1] for e in events if e[0] == "q"]
    assert nums == list(range(1, bp.questions + 1))  # numbered on across sections, as the exam does
    k = 0
    first = 1
    for s in bp.sections:
        assert events[k][0] == "sec", events[k]
        head = events[k][1]
        n = s.questions  # from the blueprint's rows
        want_marks = sum(r.count * r.marks for r in s.rows)
        assert head.startswith(f"{s.name} · "), head
        assert f" · {n} question{'s' if n > 1 else ''} · {want_marks} mark{'s' if want_marks > 1 else ''} · " in head
        where = f"Q{first}–Q{first + n - 1}" if n > 1 else f"Q{first}"
        assert f" · {where} · " in head
        for bit in _expected_rule_bits(bp, s):
            assert bit in head, (bit, head)
        qs = events[k + 1: k + 1 + n]
        assert all(e[0] == "q" for e in qs), qs
        assert Counter(e[2] for e in qs) == Counter({m: sum(r.count for r in s.rows if r.marks == m)
                                                     for m in {r.marks for r in s.rows}})
        k += 1 + n
        first += n
    assert k == len(events)


@pytest.mark.parametrize("name, seed", [("tiny", 0), ("tiny", 3), ("tiny", 11), ("short", 0), ("short", 5),
                                        ("gate", 2)])
def test_markdown_and_html_papers_print_their_sections(name, seed):
    bp = _blueprint(name)
    sh = _sheet(bp, seed)
    for version in ("student", "full"):
        _check(_events_md(render(sh, "md", version).decode()), bp)
        _check(_events_html(render(sh, "html", version).decode()), bp)
    md = render(sh, "md", "student").decode()
    assert f"{bp.questions} questions · {bp.marks} marks · {bp.minutes:g} minutes" in md
    # the answers alone print no questions, hence no section headings
    assert _events_md(render(sh, "md", "answers").decode()) == []


@pytest.mark.slow
@pytest.mark.parametrize("name, seed", [("tiny", 1), ("short", 2), ("short", 9)])
def test_pdf_paper_prints_its_sections(name, seed):
    bp = _blueprint(name)
    _check(_events_pdf(render(_sheet(bp, seed), "pdf", "student"), bp), bp)


def test_the_marking_rule_names_each_types_penalty():
    from fractions import Fraction

    assert marking_rule(["mcq", "nat"], {"mcq": Fraction(1, 3), "msq": 0, "nat": 0}) == \
        "wrong MCQ −1/3 of its marks; NAT no negative marks"
    assert marking_rule(["integer", "msq"], None) == "MSQ and NAT no negative marks; MSQ all or nothing"
    assert marking_rule(["nat", "mcq"], {"mcq": Fraction(1, 4), "nat": Fraction(1, 2)}) == \
        "wrong MCQ −1/4 of its marks; wrong NAT −1/2 of its marks"


def test_a_practice_set_has_no_sections(tmp_path):
    from drills.cli import cli

    r = CliRunner().invoke(cli, ["sheet", "-n", "4", "--seed", "1", "-o", str(tmp_path / "s.md")])
    assert r.exit_code == 0, r.output
    events = _events_md((tmp_path / "s.md").read_text())
    assert [e for e in events if e[0] == "sec"] == [] and len(events) == 4


def _write_tiny(tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text('name = "tiny"\ntitle = "tiny paper"\nminutes = 12\n[marking]\nmcq = "1/4"\nnat = "1/2"\n'
                 '[[section]]\nname = "Attention"\ntopics = ["attention"]\n'
                 'questions = [ { type = "mcq", marks = 1, count = 2 }, { type = "nat", marks = 2, count = 1 } ]\n'
                 '[[section]]\nname = "Anything"\ntopics = []\n'
                 'questions = [ { type = "msq", marks = 2, count = 1 }, { type = "nat", marks = 1, count = 2 } ]\n'
                 '[[section]]\nname = "Last one"\ntopics = []\n'
                 'questions = [ { type = "mcq", marks = 2, count = 1 } ]\n')
    return f


def test_cli_paper_in_every_format_and_back_from_json(tmp_path):
    from drills.cli import cli

    bp = parse(TINY)
    f = _write_tiny(tmp_path)
    run = CliRunner()
    for suffix in ("md", "html", "xml", "apkg", "json"):
        r = run.invoke(cli, ["sheet", "--paper", str(f), "--seed", "4", "-o", str(tmp_path / f"p.{suffix}")])
        assert r.exit_code == 0, r.output
    _check(_events_md((tmp_path / "p.md").read_text()), bp)
    _check(_events_html((tmp_path / "p.html").read_text()), bp)

    # Moodle: a category per section (under the sheet's), before its questions
    quiz = ET.parse(tmp_path / "p.xml").getroot()
    cats, per_cat = [], Counter()
    for q in quiz:
        if q.get("type") == "category":
            cats.append(q.find("category/text").text)
        else:
            per_cat[cats[-1]] += 1
    assert cats[0] == "$course$/top/qkv/tiny paper"
    assert cats[1:] == [f"$course$/top/qkv/tiny paper/{s.name}" for s in bp.sections]
    assert [per_cat[c] for c in cats[1:]] == [s.questions for s in bp.sections]

    # Anki: every note tagged with its section
    with zipfile.ZipFile(tmp_path / "p.apkg") as z, tempfile.TemporaryDirectory() as d:
        db = Path(d) / "c.anki2"
        db.write_bytes(z.read("collection.anki2"))
        con = sqlite3.connect(db)
        tags = [t for (t,) in con.execute("select tags from notes")]
        con.close()
    got = Counter(next(x for x in t.split() if x.startswith("qkv_section::")) for t in tags)
    assert got == Counter({"qkv_section::" + s.name.replace(" ", "_"): s.questions for s in bp.sections})

    # JSON: the sections travel in arguments; --from prints them again
    obj = json.loads((tmp_path / "p.json").read_text())
    assert [lab for lab, _ in obj["arguments"]["sections"]] == [s.name for s in bp.sections for _ in range(s.questions)]
    r = run.invoke(cli, ["sheet", "--from", str(tmp_path / "p.json"), "-o", str(tmp_path / "again.md")])
    assert r.exit_code == 0, r.output
    _check(_events_md((tmp_path / "again.md").read_text()), bp)
    # a question dropped: the sections no longer fit; the sheet is printed without headings, with a note
    obj["questions"].pop()
    (tmp_path / "cut.json").write_text(json.dumps(obj))
    r = run.invoke(cli, ["sheet", "--from", str(tmp_path / "cut.json"), "-o", str(tmp_path / "cut.md")])
    assert r.exit_code == 0, r.output
    assert "no section headings" in r.output
    assert [e for e in _events_md((tmp_path / "cut.md").read_text()) if e[0] == "sec"] == []
