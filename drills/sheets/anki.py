"""The practice set as an Anki deck (``.apkg``, written with ``genanki``): one note per problem,
statement and options on the front, the answer key and the worked solution on the back, math
in Anki's MathJax syntax (``\\( … \\)`` inline, ``\\[ … \\]`` display).

Stable identities, so that importing a re-generated deck updates its cards instead of
duplicating them: the note type (model) id is a constant; the deck id is derived from the
sheet's title; every note's guid is ``genanki.guid_for("qkv", problem id, problem seed)``
(the same problem has the same note in every sheet).

Updates: Anki's importer updates an existing note (same guid, same note type) only when the
incoming note's modification time is newer. Every note's time is ``sheet.epoch`` (when the
content last changed: the newest source file of the bank, the solver and these writers, or
the JSON of ``--from``; see ``drills.sheets.content_epoch``), or 2024-01-01 without it, never
the printed ``--date`` (a future exam date would make every later correction look older); the versions that carry the answers (``full`` and
``answers``) are one second newer than the student version. So the answers deck of
``--answers separate`` fills the Answer field of the student deck's notes (and re-importing
the student deck does not empty it), a deck made after a correction updates the notes, and
an unchanged deck re-imported changes nothing. The zip entries carry a fixed 1980-01-01 date,
so the same content gives byte-identical files.

Decks across sheets: a note belongs to one deck, and Anki keeps an imported note in the deck
it first came with. So a problem that two sheets share (same guid) stays in the first sheet's
deck when the second is imported; every note carries the tag ``qkv_sheet::<title>`` of the
sheet that last wrote it (Anki replaces a note's tags when it updates the note and leaves a note
that is not newer as it is, so tags do not add up across sheets), to search a sheet's notes by tag.
A problem whose ``given`` was edited (its id gains ``~parameters``) keeps its note's guid, so the
corrected deck updates the note. ``--anki-notes per-sheet`` gives
each sheet notes of its own instead (the guid takes in the title: every sheet's deck is whole,
at the price of reviewing a shared problem once per sheet).

Figures (the mask, attention-weight and positional-encoding heatmaps the PDF draws) are
SVG media files (compiled by Typst from the same pictures as the PDF), named by their
content's hash; statement figures on the front, solution figures on the back. The student
version leaves the back empty; the answers version is the full deck.
"""

from __future__ import annotations

import hashlib
import html
import io
import itertools
import json
import os
import re
import sqlite3
import tempfile
import zipfile

from drills.sheets import TYPE_NAMES, marks_label, part_prompts
from drills.sheets.html import inline_to_html, key_block, mathjax, md_to_html
from question_bank.grading import LETTERS
from question_bank.problem import Problem, extra_explanation

MODEL_ID = 1_742_031_178  # fixed forever: changing it makes Anki see a new note type
DEFAULT_TIMESTAMP = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
FIELDS = ("Question", "Answer", "Id", "Marks")

CSS = """.card{font-family:Georgia,serif;font-size:18px;text-align:left;color:#111;background:#fff}
.meta{color:#666;font-size:.8em} ol.opts{list-style:none;padding-left:.5em} table.key td{padding:.2em .5em}
pre{background:#f4f4f4;padding:.4em} .mis{color:#444;font-size:.9em} .fig{text-align:center;margin:.5em 0}
.fig img{max-width:100%}"""


def deck_id(title: str) -> int:
    """A stable deck id from the title (Anki deck ids are positive 63-bit integers; we keep 31 bits + 2^30)."""
    return (1 << 30) + int(hashlib.sha256(("qkv-deck:" + title).encode()).hexdigest()[:7], 16)


def note_guid(p: Problem, sheet_title: str | None = None) -> str:
    """The note's guid: the problem's (shared by every sheet), or with ``sheet_title`` the
    problem's in that sheet (``--anki-notes per-sheet``: a note of its own in each sheet's deck)."""
    import genanki

    pid = note_identity(p)
    if sheet_title is not None:
        return genanki.guid_for("qkv", "sheet", sheet_title, pid, "" if p.seed is None else p.seed)
    return genanki.guid_for("qkv", pid, "" if p.seed is None else p.seed)


def note_identity(p: Problem) -> str:
    """The id a note is known by: the problem's id without the ``~parameters`` tag that an edited
    ``given`` adds (drills.sheets.rebuild). Issue 38: a corrected problem (its ``given`` edited in the
    ``--from`` file) updates its note instead of adding one beside the stale one."""
    return p.id.split("~", 1)[0]


def sheet_tag(title: str) -> str:
    """The tag every note of a sheet carries: ``qkv_sheet::<title>`` (spaces as ``_``; Anki's tag
    separator is a space, and ``::`` makes a tag tree)."""
    slug = re.sub(r"[\s\"]+", "_", title.strip()) or "untitled"
    return f"qkv_sheet::{slug}"


def section_tag(name: str) -> str:
    """The tag of a paper's section: ``qkv_section::<name>`` (spaces as ``_``, as :func:`sheet_tag`)."""
    return "qkv_section::" + (re.sub(r"[\s\"]+", "_", name.strip()) or "untitled")


def timestamp(sheet, version: str = "student") -> float:
    """The notes' modification time (see the module docstring): when the content last changed,
    never the printed ``--date`` (issue 27: a future exam date would hide every later correction)."""
    ts = DEFAULT_TIMESTAMP
    if sheet.epoch:
        ts = max(ts, float(sheet.epoch))
    return ts + (1 if version != "student" else 0)


#: A figure's SVG page: the text width of the PDF (A4, 2 cm margins: 595.28 − 2·56.69 pt) and a margin.
FIGURE_PAGE_WIDTH = 481.89
FIGURE_MARGIN = 6


def figure_svgs(p: Problem) -> tuple[list[bytes], list[bytes]]:
    """The problem's pictures as standalone SVGs: ``(statement, solution)``."""
    from drills.sheets.pdf import PREAMBLE, compile_typst, pictures

    def svg(pic: str) -> bytes:
        # the page is as wide as the PDF's text (issue 27: with an automatic width, the figure's
        # ``width: 100%`` is 0 and Anki showed a 12 pt sliver); the image scales down to the card
        src = (f"#set page(width: {FIGURE_PAGE_WIDTH}pt, height: auto, margin: {FIGURE_MARGIN}pt)\n"
               "#set text(font: \"Libertinus Serif\", size: 10pt)\n" + PREAMBLE + pic + "\n")
        out = compile_typst(src, "svg")
        return out if isinstance(out, bytes) else out[0]

    stmt, sol = pictures(p)
    return [svg(x) for x in stmt], [svg(x) for x in sol]


def media_name(data: bytes) -> str:
    return f"qkv-{hashlib.sha256(data).hexdigest()[:16]}.svg"


def _imgs(svgs: list[bytes]) -> str:
    return "".join(f'<div class="fig"><img src="{media_name(d)}"></div>' for d in svgs)


def _front(i: int, p: Problem, figs: list[bytes] = ()) -> str:
    out = [f'<div class="meta">Q{i} · {marks_label(p.marks)} · {TYPE_NAMES[p.type]}</div>',
           md_to_html(p.statement_md.strip(), mathjax)]
    if prompts := part_prompts(p):
        out.append('<ol class="opts">' + "".join(f"<li>{html.escape(lab)} {inline_to_html(md, mathjax)}</li>"
                                                   for lab, md in prompts)
                   + "</ol>")
    if p.options:
        out.append('<ol class="opts">' + "".join(f"<li>({LETTERS[j]}) {inline_to_html(o, mathjax)}</li>"
                                                for j, o in enumerate(p.options)) + "</ol>")
    if figs:
        out.append(_imgs(list(figs)))
    return "\n".join(out)


_ANSWER_LINE = re.compile(r"^\s*(\*\*)?Answer\s*:.*$")


def _without_answer_line(md: str) -> str:
    """The solution without its own "Answer: …" paragraph (the back states the key once, on top)."""
    paras = re.split(r"\n\s*\n", md.strip())
    return "\n\n".join(x for x in paras if not (_ANSWER_LINE.match(x) and "\n" not in x.strip()))


def _back(p: Problem, figs: list[bytes] = ()) -> str:
    out = [f"<p><b>Answer:</b> {key_block(p, mathjax)}</p>", md_to_html(_without_answer_line(p.solution_md), mathjax)]
    if extra := extra_explanation(p):
        out.append(md_to_html(extra, mathjax))
    if figs:
        out.append(_imgs(list(figs)))
    if p.misconceptions:
        out.append('<div class="mis"><b>Typical mistakes:</b><ul>' + "".join(
            f"<li>{html.escape(m.label)}: {html.escape(m.feedback)}</li>" for m in p.misconceptions) + "</ul></div>")
    return "\n".join(out)


def build_package(sheet, version: str):
    """``(genanki.Package, {media name: bytes})``."""
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
    media: dict[str, bytes] = {}
    used: set[str] = set()
    for i, p in sheet.numbered():
        stmt, sol = figure_svgs(p)
        if version == "student":
            sol = []
        for d in stmt + sol:
            media[media_name(d)] = d
        back = _back(p, sol) if version != "student" else ""
        tags = [t.replace(" ", "_") for t in (f"qkv::{p.topic}", f"type::{p.type}", f"difficulty::{p.difficulty}")]
        tags.append(sheet_tag(sheet.title))
        if sec := sheet.section_of(i):  # a paper's section (issue 26), as a tag under the sheet's
            tags.append(section_tag(sec.name))
        guid = note_guid(p, sheet.title if getattr(sheet, "anki_notes", "shared") == "per-sheet" else None)
        if guid in used:  # the same draw twice in one sheet, once with edited parameters: a note each
            guid = genanki.guid_for("qkv", p.id, "" if p.seed is None else p.seed, i)
        used.add(guid)
        # every field is HTML to Anki: the id is text, escaped (issue 28: an id is the teacher's in --from)
        deck.add_note(genanki.Note(model=model, fields=[_front(i, p, stmt), back, html.escape(p.id),
                                                        marks_label(p.marks)], guid=guid, tags=tags))
    return genanki.Package(deck), media


def render(sheet, version: str) -> bytes:
    pkg, media = build_package(sheet, version)
    ts = timestamp(sheet, version)
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
    names = sorted(media)
    entries = [("collection.anki2", db), ("media", json.dumps({str(k): n for k, n in enumerate(names)}).encode())]
    entries += [(str(k), media[n]) for k, n in enumerate(names)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    return buf.getvalue()
