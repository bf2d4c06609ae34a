"""Issue 38: an MCQ's or MSQ's statement is on the page of its options (3 of 30 were split: the question on
one page, its options on the next), read from Typst's own layout through the sheet's markers."""

from __future__ import annotations

import json

import pytest

from drills.sheets import Sheet
from drills.sheets.pdf import typst_source


def _query(src: str, label: str) -> list:
    import typst

    return json.loads(typst.query(src.encode(), f"<{label}>", field="value"))


@pytest.mark.parametrize("seed", [5])
def test_choice_question_on_one_page(seed):
    from drills.sheets.select import select_problems

    ps = select_problems(30, seed, types=["mcq", "msq"]).problems
    src = typst_source(Sheet("Choices", ps, seed), "student")
    heads = {q: pg for q, pg in _query(src, "qkv-heading")}
    ends = {q: pg for q, pg in _query(src, "qkv-statement-end")}  # with the options, in one block
    assert len(heads) == len(ps) and max(heads.values()) > 3
    split = [q for q in heads if heads[q] != ends[q]]
    assert not split, split
