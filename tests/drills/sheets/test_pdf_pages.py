"""Issue 27, the PDF read back (pypdf, and Typst's own layout through the sheet's invisible markers):
no "space" word from LaTeX ``\\ `` in math, no marks label or ``Answer:`` line alone at a page's foot
or top, an answer grid on its question's page, Markdown escapes undone (``W\\_gate``), a solution that
opens with a list printed as a list, a 16-entry vector inside the page and the key table."""

from __future__ import annotations

import dataclasses
import io
import json
import re

import pytest

from drills.sheets import Sheet, render
from drills.sheets.pdf import typst_source
from question_bank import bank as qb
from question_bank.problem import MatrixKey

A4_WIDTH = 595.28  # pt
MARGIN = 56.69  # 2 cm


def _pages(data: bytes) -> list[str]:
    import pypdf

    return [pg.extract_text() for pg in pypdf.PdfReader(io.BytesIO(data)).pages]


def _query(src: str, label: str) -> list:
    import typst

    return json.loads(typst.query(src.encode(), f"<{label}>", field="value"))


def test_no_space_word_from_latex_in_math():
    ps = [qb.problem("positional.rope", seed=s, difficulty=d) for s in (0, 1) for d in ("medium", "hard")]
    assert any("\\ " in p.solution_md for p in ps)  # the case: "(a cos φ − b sin φ,\ a sin φ + …)"
    text = "\n".join(_pages(render(Sheet("rope", ps, 0), "pdf", "full")))
    assert not re.search(r"\bspace\b", text), re.search(r".{40}\bspace\b.{20}", text)


def test_markdown_escapes_lists_and_a_wide_vector():
    import pypdf

    p = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    vec = tuple(round(k / 7, 4) for k in range(16))
    row = " & ".join(f"{x:.4f}" for x in vec)
    q = dataclasses.replace(
        p, key=MatrixKey((vec,), 0.005, 4), misconceptions=[],
        statement_md="Give the vector. The gate is W\\_gate, the bias b\\_up.",
        solution_md=f"- first item\n- second item\n\n$$\nv = \\begin{{bmatrix}} {row} \\end{{bmatrix}}\n$$")
    data = render(Sheet("v", [q], 0), "pdf", "full")
    text = "\n".join(_pages(data))
    assert "W_gate" in text and "b_up" in text and "\\_" not in text
    assert "• first item" in text and "- first" not in text
    assert text.count("2.1429") >= 2  # the key table and the solution show all 16 entries
    for page in pypdf.PdfReader(io.BytesIO(data)).pages:
        xs: list[float] = []

        def visit(t, cm, tm, font, size, xs=xs):
            if t.strip() and not re.fullmatch(r"\[\d marks?\]", t.strip()):  # the marks label is in the margin
                xs.append(tm[4] * cm[0] + tm[5] * cm[2] + cm[4])

        page.extract_text(visitor_text=visit)
        assert max(xs) <= A4_WIDTH - MARGIN + 1, max(xs)  # nothing starts beyond the right margin


@pytest.mark.slow
def test_no_marks_label_or_answer_line_alone_on_a_page():
    from drills.sheets.select import select_problems

    ps = select_problems(60, 12).problems + [qb.problem("attention.by_hand", seed=3, difficulty="hard")]
    sheet = Sheet("Pages", ps, 12)
    src = typst_source(sheet, "student")
    heads = {q: pg for q, pg in _query(src, "qkv-heading")}
    marks = {q: pg for q, pg in _query(src, "qkv-marks")}
    ends = {q: pg for q, pg in _query(src, "qkv-statement-end")}
    spaces: dict[int, int] = {}
    for s in _query(src, "qkv-answer-space"):
        spaces.setdefault(s["q"], s["page"])  # the first answer space of each question
    assert len(heads) == len(ps) and max(heads.values()) > 5
    assert marks == heads  # the label is on the page of its question's heading
    for q, pg in spaces.items():
        assert pg == ends[q], (q, pg, ends[q])  # the answer line or grid is on its statement's page
    # and as a reader sees it: no page ends with a marks label, none starts with "Answer:"
    pages = _pages(render(sheet, "pdf", "student"))
    for k, page in enumerate(pages):
        lines = [ln.strip() for ln in page.splitlines() if ln.strip() and not re.fullmatch(r"\d+ / \d+", ln.strip())]
        if k:
            lines = lines[1:]  # the running header (the title)
        assert not re.fullmatch(r"\[\d marks?\]", lines[-1]), (k + 1, lines[-3:])
        assert not lines[0].startswith("Answer:"), (k + 1, lines[:3])
