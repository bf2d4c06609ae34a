"""Issue 27, Anki, with the official ``anki`` library: figures as wide as the PDF's text (not a
12 pt sliver), a corrected deck updating the notes even with a future ``--date``, and decks across
sheets (a shared problem stays in its first deck; ``--anki-notes per-sheet`` gives each deck its own)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from drills.sheets import Sheet, render
from drills.sheets.anki import sheet_tag, timestamp
from question_bank import bank as qb

anki_collection = pytest.importorskip("anki.collection")

#: A4 (595.28 pt) less 2 cm margins on each side: the width a statement has in the PDF
STATEMENT_WIDTH_PT = 595.28 - 2 * (2 / 2.54 * 72)


def _import(col, data: bytes, path):
    path.write_bytes(data)
    req = anki_collection.ImportAnkiPackageRequest(package_path=str(path),
                                                   options=anki_collection.ImportAnkiPackageOptions())
    return col.import_anki_package(req).log


def _pt(s: str) -> float:
    m = re.fullmatch(r"([\d.]+)(pt)?", s)
    assert m, s
    return float(m.group(1))


@pytest.fixture(scope="module")
def pic_problems():
    return [qb.problem("attention.masked_weights", seed=1, difficulty="medium"),
            qb.problem("positional.pe_value", seed=2, difficulty="medium")]


def test_every_figure_is_as_wide_as_a_statement(pic_problems, tmp_path):
    sheet = Sheet("Figures", pic_problems, 1, epoch=1_750_000_000)
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        _import(col, render(sheet, "anki", "full"), tmp_path / "f.apkg")
        media = sorted((tmp_path / "c.media").glob("*.svg"))
        assert len(media) >= 3  # causal mask, weights, PE heatmap
        for f in media:
            head = f.read_text()[:600]
            w = re.search(r'<svg[^>]*\bwidth="([^"]+)"', head)
            h = re.search(r'<svg[^>]*\bheight="([^"]+)"', head)
            assert w and h, head
            width, height = _pt(w.group(1)), _pt(h.group(1))
            assert abs(width - STATEMENT_WIDTH_PT) < 1.0, (f.name, width)  # issue 27: was 12pt
            assert 40 < height < 1.5 * width, (f.name, height)  # a caption on a few lines, not a word a line

        refs = {n for nid in col.find_notes("") for fld in col.get_note(nid).fields
                for n in re.findall(r'<img src="([^"]+)"', fld)}
        assert refs == {f.name for f in media}
    finally:
        col.close()


def test_a_future_date_does_not_hide_a_correction(tmp_path):
    ps = [qb.problem("counting.params_mha", seed=s, difficulty="easy") for s in range(3)]
    exam = Sheet("Exam deck", ps, 0, date="2031-06-30", epoch=1_750_000_000)
    assert timestamp(exam) == 1_750_000_000  # the printed date is not the note's time
    fixed = [dataclasses.replace(ps[0], solution_md=ps[0].solution_md + "\n\nCorrected."), *ps[1:]]
    later = Sheet("Exam deck", fixed, 0, date="2031-06-30", epoch=1_750_000_300)
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        log = _import(col, render(exam, "anki", "full"), tmp_path / "a.apkg")
        assert len(log.new) == 3
        log = _import(col, render(later, "anki", "full"), tmp_path / "b.apkg")
        assert len(log.updated) == 3 and not log.duplicate and not log.new, log
        assert len(col.find_notes("")) == 3
        assert any("Corrected." in col.get_note(n)["Answer"] for n in col.find_notes(""))
    finally:
        col.close()


def test_decks_across_sheets(tmp_path):
    ps = [qb.problem("counting.params_ffn", seed=s, difficulty="easy") for s in range(5)]
    a = Sheet("Sheet A", ps[:4], 0, epoch=1_750_000_000)
    b = Sheet("Sheet B", ps[1:], 0, epoch=1_750_000_000)  # shares 3 problems with A
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        _import(col, render(a, "anki", "full"), tmp_path / "a.apkg")
        assert len(col.find_notes(f'"tag:{sheet_tag("Sheet A")}"')) == 4
        _import(col, render(b, "anki", "full"), tmp_path / "b.apkg")
        # shared (the default): a note belongs to one deck; the shared three stay in A's
        assert len(col.find_cards('"deck:Sheet B"')) == 1 and len(col.find_cards('"deck:Sheet A"')) == 4
        assert len(col.find_notes("")) == 5
    finally:
        col.close()
    col = anki_collection.Collection(str(tmp_path / "d.anki2"))
    try:
        a.anki_notes = b.anki_notes = "per-sheet"
        _import(col, render(a, "anki", "full"), tmp_path / "a2.apkg")
        _import(col, render(b, "anki", "full"), tmp_path / "b2.apkg")
        assert len(col.find_cards('"deck:Sheet B"')) == 4 and len(col.find_cards('"deck:Sheet A"')) == 4
        assert len(col.find_notes(f'"tag:{sheet_tag("Sheet B")}"')) == 4
    finally:
        col.close()
