"""Every text field a sheet file brings in, one at a time, with the same hostile strings, in every
format (issue 42): a teacher-keyed problem's part label reached Anki notes as 4 live ``<script>``
tags and Markdown raw; control characters made Moodle XML not well-formed.

For each field (title, id, statement, options, part label, part prompt, solution, misconception
label and feedback, a part's misconception, hint, explanation, each erratum field, source label)
and each hostile string (HTML and script, Markdown, Moodle cloze, XML, CSV formulas, control
characters and terminal escapes), the sheet is rendered in HTML, Markdown, Moodle XML, Anki and
JSON, and each output is read as its reader reads it: HTML by an HTML parser, Markdown rendered to
HTML by markdown-it and parsed, Moodle XML by an XML parser and the Moodle question reader
(tests/moodle_reader.py), an Anki package's notes from its SQLite collection, JSON read back.
Nothing live (a script, an event handler, an image loading ``x``, a question element) may come of
the field, the XML must be well-formed, and the JSON must give the field back exactly."""

from __future__ import annotations

import dataclasses
import io
import sqlite3
import xml.etree.ElementTree as ET
import zipfile
from html.parser import HTMLParser

import pytest

from drills.sheets import Sheet, render
from question_bank import bank as qb
from question_bank.problem import Erratum, Misconception
from tests.moodle_reader import read_quiz

HOSTILES = {
    "html": '<script>alert(1)</script> <img src=x onerror=alert(2)> "quoted" \'single\' & &amp; &lt;',
    "markdown": "**bold** `code` [link](javascript:alert(3)) | cell | <b onclick=alert(4)>b</b> _x_ \\",
    "cloze": "{1:NUMERICAL:=42:0} {#1} {_0} ]]></text></question><question type=\"cloze\"><name>",
    "formula": '=HYPERLINK("http://x") @SUM(A1) +1 -2 #panic("t") #read("/etc/passwd") $ ` * _',
    "controls": "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x1b[2J\x1b]0;pwned\x07h\x7fi\x85j\x9b31mkl\ufffe\uffff m",
}
FIELDS = ["title", "id", "statement", "option", "part label", "part prompt", "solution", "misconception label",
          "misconception feedback", "part misconception", "hint", "explanation", "erratum printed", "erratum exact",
          "erratum reason", "erratum where", "source label"]


def _with(p, field: str, h: str):
    r = dataclasses.replace
    if field == "id":
        return r(p, id=p.id + h)
    if field == "statement":
        return r(p, statement_md=h, statement_text=h)
    if field == "option":
        return r(p, options=[f"{h} {k}" for k in range(len(p.options))],
                 options_text=[f"{h} {k}" for k in range(len(p.options))])
    if field == "part label":
        return r(p, parts=[r(pt, label=f"{pt.label}{h}") for pt in p.parts])
    if field == "part prompt":
        return r(p, parts=[r(pt, prompt_md=h, prompt_text=h) for pt in p.parts])
    if field == "part misconception":
        return r(p, parts=[r(pt, misconceptions=[Misconception(m.id, h, h, m.value) for m in pt.misconceptions])
                           for pt in p.parts])
    if field == "solution":
        return r(p, solution_md=h, solution_text=h)
    if field == "misconception label":
        return r(p, misconceptions=[Misconception(m.id, h, m.feedback, m.value) for m in p.misconceptions])
    if field == "misconception feedback":
        return r(p, misconceptions=[Misconception(m.id, m.label, h, m.value) for m in p.misconceptions])
    if field == "hint":
        return r(p, hints=[h])
    if field == "explanation":
        return r(p, explanation=h)
    if field.startswith("erratum"):
        parts = {"printed": "0.399", "exact": "0.398", "reason": "rounding", "where": "Example 1"}
        parts[field.split()[1]] = h
        return r(p, errata=[Erratum(parts["where"], parts["printed"], parts["exact"], parts["reason"])])
    if field == "source label":
        return r(p, source_label=h)
    return p


@pytest.fixture(scope="module")
def base():
    mcq = next(p for p in qb.curated() if p.type == "mcq" and not p.parts and p.misconceptions)
    parts = next(p for p in qb.curated() if p.id == "004.lab.bonus3_gqa")
    mat = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    return [dataclasses.replace(p, key_source="teacher") for p in (mcq, parts, mat)]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.live: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "question" or any(k.startswith("on") for k in a) or (tag == "img" and a.get("src") == "x") \
                or (tag == "a" and (a.get("href") or "").lower().startswith("javascript")):
            self.live.append(tag)


def _live(html_text: str) -> list[str]:
    """Live elements the hostile strings could make (a script is counted only with their alert)."""
    p = _Tags()
    p.feed(html_text)
    import re

    scripts = [s for s in re.findall(r"<script[^>]*>(.*?)</script>", html_text, re.S | re.I) if "alert" in s]
    return p.live + ["script"] * len(scripts)


def _anki_fields(data: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        db = z.read("collection.anki2")
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".anki2") as f:
        f.write(db)
        f.flush()
        conn = sqlite3.connect(f.name)
        try:
            return [fld for (flds,) in conn.execute("SELECT flds FROM notes") for fld in flds.split("\x1f")]
        finally:
            conn.close()


@pytest.mark.parametrize("hostile", sorted(HOSTILES))
@pytest.mark.parametrize("field", FIELDS)
def test_every_field_every_format(base, field, hostile):
    import markdown_it

    h = HOSTILES[hostile]
    problems = [_with(p, field, h) for p in base]
    sheet = Sheet(("Title " + h) if field == "title" else "Title", problems, 0, date=None, epoch=1_750_000_000)
    for version in ("student", "full"):
        out = render(sheet, "html", version).decode()
        assert _live(out) == [], ("html", version, _live(out))
    md = render(sheet, "md", "full").decode()
    html_of_md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert _live(html_of_md) == [], ("md", _live(html_of_md))
    xml = render(sheet, "moodle", "full")
    root = ET.fromstring(xml)  # well-formed
    if not (hostile == "markdown" and "misconception" in field):
        # (with these, the test's port of Moodle's cloze ANSWER_REGEX backtracks for minutes: not read here)
        qs = read_quiz(xml)
        assert len(qs) == 3 and all(not q.errors for q in qs), [q.errors for q in qs]
        assert sorted(len(q.subs) for q in qs if q.qtype == "multianswer") == [2, 9]
    assert all("\x1b" not in (t.text or "") for t in root.iter())  # no terminal escape either
    for t in root.iter("text"):
        assert _live(t.text or "") == [], ("moodle", (t.text or "")[:300])
    for fld in _anki_fields(render(sheet, "anki", "full")):
        assert _live(fld) == [], ("anki", fld[:300])
    if hostile != "controls":  # JSON keeps the field exactly (control characters: see the reader's own tests)
        from drills.sheets.jsonfmt import sheet_from_json

        back = sheet_from_json(render(sheet, "json", "full"))
        assert back.title == sheet.title
        assert [p.id for p in back.problems] == [p.id for p in problems]
        if field == "part label":
            assert [pt.label for p in back.problems for pt in p.parts] == [pt.label for p in problems for pt in p.parts]
