"""Student-facing text names a source by its title and section, never by a file name (issue 12);
an erratum and a rounding note are told apart where the student sees them."""

from __future__ import annotations

import re

import pytest

from drills.quiz.view import errata_lines
from drills.sheets import Sheet, render
from question_bank import bank

FILE_NAME = re.compile(r"\d{3}_[0-9a-f]{16}\.txt")


@pytest.fixture(scope="module")
def with_errata():
    items = [p for p in bank.curated() if p.errata]
    kinds = {e.kind for p in items for e in p.errata}
    assert items and kinds == {"error", "rounding"}
    return items


def test_quiz_errata_lines_name_the_title_not_the_file(with_errata):
    for p in with_errata:
        text = "\n".join(t for _, t in errata_lines(p))
        assert not FILE_NAME.search(text), text
        assert p.source_title.split(",")[0] in text
        for e in p.errata:
            assert ("Rounding note" if e.kind == "rounding" else "Erratum") in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_sheets_name_the_title_not_the_file(with_errata, fmt):
    sheet = Sheet("Errata", with_errata[:12], 1, {"n": 12})
    for version in ("student", "full"):
        out = render(sheet, fmt, version).decode("utf-8")
        assert not FILE_NAME.search(out), FILE_NAME.search(out).group(0)
    assert with_errata[0].source_title.split(",")[0] in render(sheet, fmt, "full").decode("utf-8")


@pytest.mark.parametrize("content", [b"title = \"\xff\xfe\"\n", b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n"],
                         ids=["not-utf8", "deeply-nested"])
def test_a_bank_file_that_cannot_be_read_leaves_out_only_its_items(tmp_path, content, capsys):
    """A non-UTF-8 or deeply nested data file: the quiz's catalogue keeps every other file's items
    and says in one line which file was left out; validate (no skip) names the file."""
    import shutil

    from drills.quiz.plan import Catalogue
    from question_bank import curated

    for f in curated.data_files():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "zz_broken.toml").write_bytes(content)
    good = {e.id for e in curated.index()}
    cat = Catalogue.load(tmp_path)
    assert set(cat.items) == good
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "zz_broken.toml" in err and "Traceback" not in err
    with pytest.raises(curated.CuratedError, match="zz_broken.toml"):
        curated.index(tmp_path)
