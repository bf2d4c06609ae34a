"""Issue 28, "markup from a sheet file": one hostile set (Typst code, HTML and script, Moodle cloze
syntax, XML, CSV formulas) in every text field of a sheet (title, id, statement, options, part labels
and prompts, solution, misconceptions, hints, explanation, errata, source label), rendered in every
format: each field arrives as text, escaped for the format it lands in."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser

import pytest

from drills.sheets import Sheet, render
from question_bank import bank as qb
from question_bank.problem import Erratum, Misconception
from tests.moodle_reader import read_quiz

HOSTILE = ('#panic("typst") #read("/etc/passwd") ] [ <script>alert(1)</script> <img src=x onerror=alert(2)> '
           '{1:NUMERICAL:=42:0} {_0} {#1} ]]></text></question><question type="cloze"> &amp; &lt; '
           '=HYPERLINK("http://x") @SUM(A1) +1 -2 \\ $ ` * _')


def _hostile_problems():
    mcq = next(p for p in qb.curated() if p.type == "mcq" and not p.parts)
    parts = next(p for p in qb.curated() if p.id == "004.lab.bonus3_gqa")
    mat = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    out = []
    for p in (mcq, parts, mat):
        mis = [Misconception(m.id, HOSTILE, HOSTILE, m.value) for m in p.misconceptions]
        pts = [dataclasses.replace(pt, label=f"{pt.label}{HOSTILE[:40]}", prompt_md=HOSTILE, prompt_text=HOSTILE,
                                   misconceptions=[Misconception(m.id, HOSTILE, HOSTILE, m.value)
                                                   for m in pt.misconceptions]) for pt in p.parts]
        out.append(dataclasses.replace(
            p, id=p.id + HOSTILE, statement_md=HOSTILE, statement_text=HOSTILE, solution_md=HOSTILE,
            solution_text=HOSTILE, options=[f"{HOSTILE} {k}" for k in range(len(p.options))],
            options_text=[f"{HOSTILE} {k}" for k in range(len(p.options))], misconceptions=mis, parts=pts,
            hints=[HOSTILE], explanation=HOSTILE, source_label=HOSTILE,
            errata=[Erratum(HOSTILE, HOSTILE, HOSTILE, HOSTILE)], key_source="teacher"))
    return out


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    return Sheet("Title " + HOSTILE, _hostile_problems(), 0, date=None, epoch=1_750_000_000)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _live(html_text: str) -> list[str]:
    """The elements a browser would run or load from the hostile text: script, img with onerror, question."""
    p = _Tags()
    p.feed(html_text)
    return [t for t, a in p.tags if t in ("script", "question") or "onerror" in a or (t == "img" and a.get("src") == "x")]


def test_html(sheet):
    for version in ("student", "full"):
        out = render(sheet, "html", version).decode()
        # the page's own scripts (MathJax) are there; none of the hostile text's
        live = [t for t in _live(out) if t != "script"] + [
            "script" for s in re.findall(r"<script[^>]*>(.*?)</script>", out, re.S) if "alert" in s]
        assert live == [], (version, live)
        assert "&lt;script&gt;alert(1)" in out


def test_markdown(sheet):
    out = render(sheet, "md", "full").decode()
    assert "<script>" not in out and "<img src=x" not in out


def test_json_keeps_every_field_exactly(sheet):
    from drills.sheets.jsonfmt import sheet_from_json

    obj = json.loads(render(sheet, "json", "full"))
    assert obj["title"] == sheet.title
    back = sheet_from_json(render(sheet, "json", "full"))
    assert [p.statement_md for p in back.problems] == [HOSTILE] * 3
    assert [p.id for p in back.problems] == [p.id for p in sheet.problems]


def test_pdf_prints_the_text_and_runs_nothing(sheet):
    import io

    import pypdf

    data = render(sheet, "pdf", "full")
    text = "".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages)
    flat = re.sub(r"\s+", "", text)
    assert 'panic("typst")' in flat and "/etc/passwd" in flat and "HYPERLINK" in flat
    assert "root:" not in text  # nothing was read


def test_moodle(sheet):
    data = render(sheet, "moodle", "full")
    qs = read_quiz(data)
    assert len(qs) == 3 and all(not q.errors for q in qs)  # no question injected, none broken
    boxes = {q.name: len(q.subs) for q in qs if q.qtype == "multianswer"}
    # the cloze questions have exactly their own boxes: 2 parts, a 3×3 matrix
    assert sorted(boxes.values()) == [2, 9], boxes
    import xml.etree.ElementTree as ET

    root = ET.fromstring(data)
    for q in root.findall("question"):
        for t in q.iter("text"):
            assert not _live(t.text or ""), (q.findtext("name/text"), t.text[:200])
    for q in qs:
        for sub in q.subs:
            for a in sub.answers:  # a cloze multichoice option or feedback never carries live HTML
                assert not _live(a)
    # the feedback of a cloze box: escaped HTML
    cloze_text = "".join(t.text or "" for t in root.iter("text"))
    assert "<script>alert" not in cloze_text and "&lt;script&gt;" in cloze_text
    formulas = render(dataclasses.replace(sheet, moodle_cloze="formulas"), "moodle", "full")
    fq = [q for q in read_quiz(formulas) if q.qtype == "formulas"]
    assert len(fq) == 2 and all(not q.errors for q in fq)


anki_collection = pytest.importorskip("anki.collection")


def test_anki(sheet, tmp_path):
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        path = tmp_path / "h.apkg"
        path.write_bytes(render(sheet, "anki", "full"))
        req = anki_collection.ImportAnkiPackageRequest(package_path=str(path),
                                                       options=anki_collection.ImportAnkiPackageOptions())
        col.import_anki_package(req)
        cards = col.find_cards("")
        assert len(cards) == 3
        for cid in cards:
            card = col.get_card(cid)
            for html_text in (card.question(), card.answer()):
                assert not _live(html_text), html_text[:400]
            note = card.note()
            assert HOSTILE.split(" <script>")[0] in note["Question"] or "panic" in note["Question"]
    finally:
        col.close()
