"""The PDF's layout, read back from Typst's own layout (``typst.query`` of the invisible
markers the sheet places: every figure's top and bottom, every answer space) and from the
PDF (pypdf): figures inside the page, an answer space for every part of the shape of its
key, prompts printed, captions by meaning, a name/ID line and the marks in the margin."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from drills.sheets import Sheet
from drills.sheets.pdf import compile_typst, is_attention_weights, typst_source
from question_bank import bank as qb
from question_bank.problem import MatrixKey

A4_HEIGHT = 841.89  # pt
MARGIN = 56.69  # 2 cm


def _problems():
    from drills.sheets.select import select_problems

    ps = select_problems(1, 7, types=["nat"]).problems
    ps.append(qb.problem("attention.by_hand", seed=3, difficulty="hard"))
    ps.append(qb.problem("attention.by_hand", seed=3, difficulty="medium"))  # (c) is the output AV
    ps.append(qb.problem("attention.masked_weights", seed=1, difficulty="medium"))
    ps += [qb.problem("positional.pe_value", seed=s, difficulty="hard") for s in range(4)]  # up to 48 rows
    ps.append(qb.problem("positional.pe_value", seed=2, difficulty="medium"))  # d = 512, dim 7
    far = qb.problem("positional.pe_value", seed=3, difficulty="hard")  # the picture's extremes: 48 rows, 4 columns
    ps.append(dataclasses.replace(far, given={**far.given, "pos": 47, "dim": 1, "d_model": 4}))
    ps += [p for p in qb.curated() if p.id in ("004.lab.bonus3_gqa", "004.we.attention_by_hand", "004.code.pe_row",
                                              "004.ex.b1")]
    return ps


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    return Sheet("Layout", _problems(), 7)


def _query(src: str, label: str) -> list:
    import typst

    return json.loads(typst.query(src.encode(), f"<{label}>", field="value"))


def _pt(s: str) -> float:
    assert s.endswith("pt")
    return float(s[:-2])


def test_every_figure_lies_inside_the_page(sheet):
    src = typst_source(sheet, "full")
    figs = _query(src, "qkv-fig")
    n_pe = sum(1 for p in sheet.problems if p.topic == "positional")
    assert len(figs) >= n_pe + 3
    for f in figs:
        top, height = _pt(f["at"]["y"]), _pt(f["height"])
        assert MARGIN - 0.5 <= top and top + height <= A4_HEIGHT - MARGIN + 0.5, f


def test_the_pe_heatmap_shows_the_asked_entry(sheet):
    from drills.sheets.pdf import pe_window

    for p in sheet.problems:
        if p.topic != "positional" or "pos" not in p.given:
            continue
        p0, n_pos, d0, n_dim, asked = pe_window(p.given, p.given["d_model"])
        assert asked == (p.given["pos"], p.given["dim"])
        assert p0 <= asked[0] < p0 + n_pos and d0 <= asked[1] < d0 + n_dim and n_dim <= 64 and n_pos <= 48
    assert typst_source(sheet, "answers").count("; outlined: $P E(") == sum(p.topic == "positional" and "pos" in p.given for p in sheet.problems)


def test_every_part_has_its_answer_space(sheet):
    for version in ("student", "full"):
        spaces = _query(typst_source(sheet, version), "qkv-answer-space")
        got = {(s["q"], s["part"]): (s["rows"], s["cols"]) for s in spaces}
        assert len(got) == len(spaces)
        want = {}
        for i, p in sheet.numbered():
            for label, key in ([(pt.label, pt.key) for pt in p.parts] or [("", p.key)]):
                if isinstance(key, MatrixKey):
                    want[(i, label)] = (len(key.value), len(key.value[0]))
                elif p.parts or p.type in ("nat", "integer"):
                    want[(i, label)] = (1, 1)
        assert got == want


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def test_prompts_name_line_and_margin_marks(sheet):
    text = _pdf_text(compile_typst(typst_source(sheet, "student")))
    gqa = next(p for p in sheet.problems if p.id == "004.lab.bonus3_gqa")
    for pt in gqa.parts:
        assert f"({pt.label})" in text
    assert "Name:" in text and "ID:" in text
    assert text.count("[2 marks]") == sum(p.marks == 2 for p in sheet.problems)
    assert text.count("[1 mark]") == sum(p.marks == 1 for p in sheet.problems)
    assert "#nameline" not in typst_source(sheet, "answers")


def test_captions_by_meaning():
    """attention.by_hand medium: (b) the weights A, (c) the output AV: both have rows summing to 1."""
    p = qb.problem("attention.by_hand", seed=3, difficulty="medium")
    labels = {pt.label: pt for pt in p.parts}
    assert is_attention_weights(p, "(b)", labels["b"].key.value)
    from drills.sheets.pdf import is_weight_matrix

    assert is_weight_matrix(labels["c"].key.value)  # the trap: AV's rows sum to 1 too
    assert not is_attention_weights(p, "(c)", labels["c"].key.value)
    src = typst_source(Sheet("x", [p], 0), "answers")
    assert src.count("caption: [attention weights") == 1


# --------------------------------------------------------------------------------------------
# HTML and Markdown: the same answer spaces, prompts and captions


def test_html_answer_spaces_prompts_and_symbols(sheet):
    import re
    from html.parser import HTMLParser

    from drills.sheets import render

    page = render(sheet, "html", "student").decode()

    class Spaces(HTMLParser):
        def __init__(self):
            super().__init__()
            self.q, self.part, self.found, self.rows, self.cols = None, None, {}, 0, 0

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "section" and a.get("id", "").startswith("q"):
                self.q = int(a["id"][1:])
            if tag == "div" and "data-part" in a:
                self.part = a["data-part"]
                self.found[(self.q, self.part)] = (1, 1)
                self.rows = self.cols = 0
            if tag == "tr" and self.part is not None:
                self.rows, self.cols = self.rows + 1, 0
            if tag == "td" and self.part is not None:
                self.cols += 1
                self.found[(self.q, self.part)] = (self.rows, self.cols)

        def handle_endtag(self, tag):
            if tag == "div" and self.part is not None:
                self.part = None

    parser = Spaces()
    parser.feed(page)
    for i, p in sheet.numbered():
        for label, key in [(pt.label, pt.key) for pt in p.parts] or ([("", p.key)] if isinstance(p.key, MatrixKey) else []):
            want = (len(key.value), len(key.value[0])) if isinstance(key, MatrixKey) else (1, 1)
            assert parser.found.get((i, label)) == want, (i, label)
    gqa = next(p for p in sheet.problems if p.id == "004.lab.bonus3_gqa")
    assert all(f"({pt.label})" in page for pt in gqa.parts)
    assert "Name:" in page and "ID:" in page
    assert len(re.findall(r'class="qm">\[\d marks?\]', page)) == len(sheet.problems)
    from drills.sheets.html import unicode_math

    assert unicode_math(r"x \sim \mathcal{N}(0, 1)", False).count("∼") == 1 and "sim" not in unicode_math(r"a \sim b", False)


def test_html_captions_by_meaning():
    from drills.sheets import render

    p = qb.problem("attention.by_hand", seed=3, difficulty="medium")
    page = render(Sheet("x", [p], 0), "html", "answers").decode()
    assert page.count("<figcaption>attention weights") == 1


def test_markdown_prints_part_prompts(sheet):
    from drills.sheets import render

    md = render(sheet, "md", "student").decode()
    for p in sheet.problems:
        for pt in p.parts:
            assert f"**({pt.label})**" in md


@pytest.mark.slow
def test_no_heading_ends_a_page():
    """A question's heading (Q3. …) and a worked solution's heading are on the page where
    what they head starts (a long sheet, so that some fall near a page foot)."""
    from drills.sheets.select import select_problems

    long = Sheet("Headings", select_problems(40, 12).problems, 12)
    src = typst_source(long, "full")
    heads, after = _query(src, "qkv-heading"), _query(src, "qkv-after-heading")
    assert len(heads) == len(after) == 80
    assert max(p for _, p in heads) > 3
    assert heads == after
