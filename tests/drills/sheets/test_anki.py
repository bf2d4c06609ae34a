"""The .apkg as Anki reads it: imported with the official Anki library (PyPI ``anki``, the
desktop app's own backend) into a fresh collection, with the importer's default options
(update a note only if the incoming one is newer)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from drills.sheets import Sheet, render
from drills.sheets.anki import note_guid
from question_bank import bank as qb

anki_collection = pytest.importorskip("anki.collection")


def _problems():
    from drills.sheets.select import select_problems

    ps = select_problems(1, 7, types=["mcq"]).problems
    ps.append(qb.problem("attention.masked_weights", seed=1, difficulty="medium"))  # a weights heatmap
    ps.append(qb.problem("positional.pe_value", seed=2, difficulty="medium"))  # the PE heatmap
    ps += [p for p in qb.curated() if p.id == "004.lab.bonus3_gqa"]  # (a), (b) prompts
    return ps


@pytest.fixture(scope="module")
def problems():
    return _problems()


def _import(col, data: bytes, path) -> object:
    path.write_bytes(data)
    req = anki_collection.ImportAnkiPackageRequest(package_path=str(path),
                                                   options=anki_collection.ImportAnkiPackageOptions())
    out = col.import_anki_package(req)
    log = out.log
    # nothing the importer would warn about
    assert not (log.conflicting or log.missing_notetype or log.missing_deck or log.empty_first_field
                or log.first_field_match), log
    return out


def _notes(col) -> dict[str, object]:
    return {col.get_note(n).guid: col.get_note(n) for n in col.find_notes("")}


def test_decks_import_update_and_render(problems, tmp_path):
    sheet = Sheet("Anki test", problems, 7, epoch=1_750_000_000)
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        _import(col, render(sheet, "anki", "student"), tmp_path / "s.apkg")
        notes = _notes(col)
        assert set(notes) == {note_guid(p) for p in problems}
        by_id = {n["Id"]: n for n in notes.values()}
        for p in problems:
            n = by_id[p.id]
            assert n["Question"] and n["Marks"] and n["Answer"] == ""
        gqa = by_id["004.lab.bonus3_gqa"]
        assert "(a)" in gqa["Question"] and "(b)" in gqa["Question"]
        # the figures are media files in the collection, referenced from the notes
        media_dir = tmp_path / "c.media"
        pe_id = next(p.id for p in problems if p.topic == "positional")
        # the answers deck: the same notes get their Answer field, no duplicates
        log = _import(col, render(sheet, "anki", "answers"), tmp_path / "a.apkg").log
        assert len(log.updated) == len(problems) and not log.new and not log.duplicate
        notes = _notes(col)
        assert len(notes) == len(problems)
        by_id = {n["Id"]: n for n in notes.values()}
        for p in problems:
            back = by_id[p.id]["Answer"]
            assert back
            assert len(re.findall(r"Answer\s*:", back)) == 1, back[:300]  # once
        pics = re.findall(r'<img src="([^"]+)"', by_id[pe_id]["Answer"])
        assert pics and all((media_dir / f).is_file() and (media_dir / f).stat().st_size > 1000 for f in pics)
        # the student deck again does not empty the answers (it is older)
        _import(col, render(sheet, "anki", "student"), tmp_path / "s.apkg")
        assert all(n["Answer"] for n in _notes(col).values())
        # a changed deck (a corrected statement, made later) updates the note; an unchanged one is skipped
        changed = dataclasses.replace(problems[0], statement_md=problems[0].statement_md + " (corrected)")
        later = Sheet("Anki test", [changed, *problems[1:]], 7, epoch=1_750_000_500)
        log = _import(col, render(later, "anki", "answers"), tmp_path / "b.apkg").log
        assert len(log.updated) == len(problems) and not log.new
        assert "(corrected)" in _notes(col)[note_guid(changed)]["Question"]
        log = _import(col, render(later, "anki", "answers"), tmp_path / "b.apkg").log
        assert not log.updated and not log.new
        # every card renders, front and back
        for cid in col.find_cards(""):
            card = col.get_card(cid)
            q, a = card.question(), card.answer()
            assert q and a and "{{" not in q and "{{" not in a
    finally:
        col.close()


def test_note_times_follow_the_content(tmp_path, monkeypatch):
    """The CLI stamps notes with when the content last changed: an edited --from file is newer."""
    import io
    import json
    import os
    import sqlite3
    import zipfile

    from click.testing import CliRunner

    from drills.cli import cli
    from drills.sheets import content_epoch

    def mods(path):
        with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as z:
            db = tmp_path / "x.anki2"
            db.write_bytes(z.read("collection.anki2"))
        con = sqlite3.connect(db)
        try:
            return {m for (m,) in con.execute("select mod from notes")}
        finally:
            con.close()

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    src = tmp_path / "s.json"
    runner = CliRunner()
    assert runner.invoke(cli, ["sheet", "-n", "3", "--seed", "2", "-o", str(src)]).exit_code == 0
    os.utime(src, (1_800_000_000, 1_800_000_000))
    r = runner.invoke(cli, ["sheet", "--from", str(src), "-o", str(tmp_path / "a.apkg"), "--answers", "separate"])
    assert r.exit_code == 0, r.output
    assert mods(tmp_path / "a.apkg") == {1_800_000_000}
    assert mods(tmp_path / "a.answers.apkg") == {1_800_000_001}  # the answers fill the student notes
    obj = json.loads(src.read_text())
    obj["questions"].reverse()
    src.write_text(json.dumps(obj))
    os.utime(src, (1_800_000_600, 1_800_000_600))
    assert runner.invoke(cli, ["sheet", "--from", str(src), "-o", str(tmp_path / "b.apkg")]).exit_code == 0
    assert mods(tmp_path / "b.apkg") == {1_800_000_601}
    assert content_epoch() < 1_800_000_000  # the sources themselves are older than these
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert content_epoch(src) == 1_700_000_000
