"""The practice set as an Anki deck (``.apkg``, written with ``genanki``): one note per problem,
statement and options on the front, the answer key and the worked solution on the back, math
in Anki's MathJax syntax (``\\( … \\)`` inline, ``\\[ … \\]`` display).

Stable identities, so that importing a re-generated deck updates its cards instead of
duplicating them: the note type (model) id is a constant; the deck id is derived from the
sheet's title; every note's guid is ``genanki.guid_for("qkv", problem id, problem seed)``
(the same problem has the same note in every sheet).

Determinism: genanki stamps notes, cards and the collection with a time; we pass a fixed
one (2024-01-01 00:00 UTC, or midnight UTC of ``--date`` when given, so that a deck made
with a later ``--date`` counts as newer for Anki's "update if newer"), and the zip entries
carry a fixed 1980-01-01 date. The student version leaves the back empty but for the
problem id; the answers version is the full deck.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import sqlite3
import tempfile
import zipfile
from datetime import UTC, datetime

from drills.sheets import TYPE_NAMES, marks_label
from drills.sheets.html import key_block, mathjax, md_to_html
from question_bank.grading import LETTERS
from question_bank.problem import Problem, extra_explanation

MODEL_ID = 1_742_031_178  # fixed forever: changing it makes Anki see a new note type
DEFAULT_TIMESTAMP = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
FIELDS = ("Question", "Answer", "Id", "Marks")

CSS = """.card{font-family:Georgia,serif;font-size:18px;text-align:left;color:#111;background:#fff}
.meta{color:#666;font-size:.8em} ol.opts{list-style:none;padding-left:.5em} table.key td{padding:.2em .5em}
pre{background:#f4f4f4;padding:.4em} .mis{color:#444;font-size:.9em}"""


def deck_id(title: str) -> int:
    """A stable deck id from the title (Anki deck ids are positive 63-bit integers; we keep 31 bits + 2^30)."""
    return (1 << 30) + int(hashlib.sha256(("qkv-deck:" + title).encode()).hexdigest()[:7], 16)


def note_guid(p: Problem) -> str:
    import genanki

    return genanki.guid_for("qkv", p.id, "" if p.seed is None else p.seed)


def timestamp(date: str | None) -> float:
    if not date:
        return DEFAULT_TIMESTAMP
    try:
        return datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return DEFAULT_TIMESTAMP


def _front(i: int, p: Problem) -> str:
    out = [f'<div class="meta">Q{i} · {marks_label(p.marks)} · {TYPE_NAMES[p.type]}</div>',
           md_to_html(p.statement_md.strip(), mathjax)]
    if p.options:
        from drills.sheets.html import inline_to_html

        out.append('<ol class="opts">' + "".join(f"<li>({LETTERS[j]}) {inline_to_html(o, mathjax)}</li>"
                                                for j, o in enumerate(p.options)) + "</ol>")
    return "\n".join(out)


def _back(p: Problem) -> str:
    out = [f"<p><b>Answer:</b> {key_block(p, mathjax)}</p>", md_to_html(p.solution_md.strip(), mathjax)]
    if extra := extra_explanation(p):
        out.append(md_to_html(extra, mathjax))
    if p.misconceptions:
        import html

        out.append('<div class="mis"><b>Typical mistakes:</b><ul>' + "".join(
            f"<li>{html.escape(m.label)}: {html.escape(m.feedback)}</li>" for m in p.misconceptions) + "</ul></div>")
    return "\n".join(out)


def build_package(sheet, version: str):
    import genanki

    model = genanki.Model(
        MODEL_ID, "qkv problem",
        fields=[{"name": f} for f in FIELDS],
        templates=[{
            "name": "Problem",
            "qfmt": "{{Question}}",
            "afmt": '{{FrontSide}}<hr id="answer">{{Answer}}<div class="meta">{{Id}} · {{Marks}}</div>',
        }],
        css=CSS,
    )
    deck = genanki.Deck(deck_id(sheet.title), sheet.title)
    for i, p in sheet.numbered():
        back = _back(p) if version != "student" else ""
        tags = [t.replace(" ", "_") for t in (f"qkv::{p.topic}", f"type::{p.type}", f"difficulty::{p.difficulty}")]
        deck.add_note(genanki.Note(model=model, fields=[_front(i, p), back, p.id, marks_label(p.marks)],
                                   guid=note_guid(p), tags=tags))
    return genanki.Package(deck)


def render(sheet, version: str) -> bytes:
    pkg = build_package(sheet, version)
    ts = timestamp(sheet.date)
    fd, dbname = tempfile.mkstemp(suffix=".anki2")
    os.close(fd)
    try:
        conn = sqlite3.connect(dbname)
        pkg.write_to_db(conn.cursor(), ts, itertools.count(int(ts * 1000)))
        conn.commit()
        conn.close()
        with open(dbname, "rb") as f:
            db = f.read()
    finally:
        os.unlink(dbname)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in (("collection.anki2", db), ("media", json.dumps({}).encode())):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    return buf.getvalue()
