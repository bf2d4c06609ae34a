"""Issue 38, Anki: a problem corrected by editing its ``given`` in a ``--from`` file updates its note
(the official ``anki`` library imports both decks); tags are as the README says (the sheet whose deck
last updated a shared note)."""

from __future__ import annotations

import copy
import json

import pytest

from drills.sheets import Sheet, render
from drills.sheets.anki import sheet_tag
from drills.sheets.jsonfmt import sheet_from_json
from question_bank.family import get_family

anki_collection = pytest.importorskip("anki.collection")


def _import(col, data: bytes, path):
    path.write_bytes(data)
    req = anki_collection.ImportAnkiPackageRequest(package_path=str(path),
                                                   options=anki_collection.ImportAnkiPackageOptions())
    return col.import_anki_package(req).log


def test_edited_given_updates_the_note(tmp_path):
    ffn = get_family("counting.params_ffn").generate(764469, "medium")
    mha = get_family("counting.params_mha").generate(3, "easy")
    first = Sheet("Edits", [ffn, mha], 0, {}, epoch=1_750_000_000)
    obj = json.loads(render(first, "json", "full"))
    edited = copy.deepcopy(obj)
    edited["questions"][0]["problem"]["given"]["d_model"] = 1536  # d_ff = 8d/3 follows
    second = sheet_from_json(json.dumps(edited).encode(), notes=[])
    assert second.problems[0].id.startswith(ffn.id + "~")  # a rebuilt problem, as rebuild names it
    second.epoch = 1_750_000_300  # the edited file is newer
    new_key = second.problems[0].key.value
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        assert len(_import(col, render(first, "anki", "full"), tmp_path / "a.apkg").new) == 2
        log = _import(col, render(second, "anki", "full"), tmp_path / "b.apkg")
        assert not log.new and len(log.updated) == 2, log  # the newer deck updates both
        notes = [col.get_note(n) for n in col.find_notes("")]
        assert len(notes) == 2  # no stale note beside the corrected one
        answers = " ".join(n["Answer"] for n in notes)
        assert f"{new_key:,}" in answers or str(new_key) in answers
    finally:
        col.close()


def test_shared_note_tag_is_the_last_sheets(tmp_path):
    ps = [get_family("counting.params_ffn").generate(s, "easy") for s in range(3)]
    a = Sheet("Sheet A", ps[:2], 0, epoch=1_750_000_000)
    b = Sheet("Sheet B", ps[1:], 0, epoch=1_750_000_100)
    col = anki_collection.Collection(str(tmp_path / "c.anki2"))
    try:
        _import(col, render(a, "anki", "full"), tmp_path / "a.apkg")
        _import(col, render(b, "anki", "full"), tmp_path / "b.apkg")
        assert len(col.find_notes(f'"tag:{sheet_tag("Sheet B")}"')) == 2
        assert len(col.find_notes(f'"tag:{sheet_tag("Sheet A")}"')) == 1
    finally:
        col.close()
