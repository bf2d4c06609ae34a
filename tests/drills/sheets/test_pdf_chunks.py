"""A long sheet's PDF typeset in chunks (drills.sheets.pdf_chunks): the same pages as one compile.

The chunk size is made small here, so that a 20-question sheet is cut in several chunks; what is
checked against one compile of the whole source (as every sheet under SINGLE_MAX is made): each
page drawn as SVG by Typst (body, header, "k / N" footer), the text of each PDF page, the outline
(bookmarks), and that two runs give the same bytes. The memory it saves is measured by
bench/sheet_memory.py (qkv sheet -n 400: 680 MB before, 221 MB after, whole command).
"""

from __future__ import annotations

import io

import pytest

from drills.sheets import Sheet, render
from drills.sheets import pdf_chunks as pc
from drills.sheets.pdf import compile_typst, typst_pieces, typst_source
from drills.sheets.select import select_problems

BUDGETS = (18_000, 16_000, 20_000)


@pytest.fixture(scope="module")
def chosen():
    """The first 20-question sheet (seed 1, 2, ...) and chunk budget that cut it in 3 chunks or more,
    each where a page starts: which seed does depends on the bank's draws, so it is searched for
    (a sheet with a forced cut, a question longer than a chunk, is the documented exception)."""
    for seed in range(1, 21):
        sheet = Sheet("Chunk test", select_problems(20, seed).problems, seed, {"n": 20})
        ps, head, starts, marks = typst_pieces(sheet, "full")
        for budget in BUDGETS:
            chunks = pc.plan(ps, head, starts, marks, budget)
            if len(chunks) >= 3 and all(c.lookahead for c in chunks[:-1]):
                return sheet, budget
    pytest.fail("no sheet of seeds 1-20 is cut at page starts only")


@pytest.fixture(scope="module")
def sheet(chosen):
    return chosen[0]


@pytest.fixture(scope="module")
def BUDGET(chosen):  # noqa: N802 - the chunk budget the tests below cut with
    return chosen[1]


@pytest.fixture(scope="module")
def pieces(sheet):
    return typst_pieces(sheet, "full")


def _outline(data: bytes) -> list[tuple[int, str, int]]:
    import pypdf

    return pc._outline(pypdf.PdfReader(io.BytesIO(data)))


def _untagged(source: str) -> bytes:
    """One compile without accessibility tags, as the chunks are (tags add math's alternative text)."""
    import typst

    return typst.compile(source.encode(), format="pdf", ignore_system_fonts=True, pdf_tags=False)


def _texts(data: bytes) -> list[str]:
    import pypdf

    return [pg.extract_text() for pg in pypdf.PdfReader(io.BytesIO(data)).pages]


def _words(data: bytes) -> list[list[str]]:
    """Each page's words and numbers of 3 characters or more: what reading the text depends on. (A
    chunk embeds its own font subsets, so the text extraction's guesses differ around math: spaces
    around "=", the codes of a tall bracket's pieces, a run of one glyph read as "ccc" in one subset
    and "MMM" in another; the pages themselves are drawn the same, as the SVG test checks.)"""
    import re

    # words: letters only, not a run of one glyph
    return [[w for w in re.findall(r"[A-Za-z]{3,}", t) if len(set(w)) > 1] for t in _texts(data)]


def _digits(data: bytes) -> list[str]:
    """Each page's digits in order, spaces ignored (one subset reads "0.4472 0" where another reads
    "0.44720")."""
    import re

    return ["".join(re.findall(r"\d", t)) for t in _texts(data)]


def _same_digits(a: list[str], b: list[str]) -> bool:
    """The same pages' digits, up to a tall bracket's pieces: one font subset extracts a matrix's
    bracket pieces as digits ("111" before the entries, "4445" after them), another as nothing; so one
    page's digits are the other's with at most a few inserted, never one changed or moved."""
    def within(short: str, long: str) -> bool:
        it = iter(long)
        return len(long) - len(short) <= 16 and all(c in it for c in short)

    return len(a) == len(b) and all(within(x, y) if len(x) <= len(y) else within(y, x) for x, y in zip(a, b, strict=True))


def test_pieces_are_the_source(sheet, pieces):
    """The pieces put together are the source a one-piece compile gets, in every version."""
    for version in ("student", "full", "answers"):
        ps, head, starts, marks = typst_pieces(sheet, version)
        assert "".join(ps) == typst_source(sheet, version)
        assert len(marks) == len(ps) and head < min(starts)
    ps, head, starts, marks = pieces
    assert sum(m & 1 for m in marks) == 2 * len(sheet.problems)  # a heading marker per question and per solution
    def heading(p: str) -> bool:  # a question (its heading marker is in the preamble's #question) or a solution
        return p.startswith("#question(") or "<qkv-heading>" in p

    assert [i for i in range(head, len(ps)) if heading(ps[i])] == [i for i, m in enumerate(marks) if m & 1]
    assert [i for i, m in enumerate(marks) if m & 2] == [min(i for i in range(head, len(ps)) if "= Worked solutions" in ps[i])]


def test_chunked_pages_are_those_of_one_compile(pieces, BUDGET):
    """Cut where a page starts, each chunk numbered from the previous one's end out of the total:
    every page, drawn as SVG, is the one-piece compile's."""
    ps, head, starts, marks = pieces
    chunks = pc.plan(ps, head, starts, marks, BUDGET)
    assert len(chunks) >= 3 and all(c.lookahead for c in chunks[:-1])  # this sheet: cut at page starts only
    single = compile_typst("".join(ps), "svg")
    single = [p.decode() for p in ([single] if isinstance(single, bytes) else single)]
    chunked = pc.render(ps, head, starts, marks, budget=BUDGET, fmt="svg")
    assert len(chunked) == len(single) == sum(c.pages for c in chunks)
    differ = [i + 1 for i, (a, b) in enumerate(zip(single, chunked, strict=True)) if a != b]
    assert differ == [], f"pages {differ} differ"


def test_chunked_pdf_reads_as_one_compile(pieces, BUDGET):
    """The merged PDF: the same words on each page (footers "k / N" included) and bookmarks as one
    compile, and the same bytes from one run to the next."""
    ps, head, starts, marks = pieces
    single = _untagged("".join(ps))
    merged = pc.render(ps, head, starts, marks, budget=BUDGET)
    assert _words(merged) == _words(single)
    assert _same_digits(_digits(merged), _digits(single))
    assert _outline(merged) == _outline(single) and len(_outline(single)) == 2 + 20
    assert pc.render(ps, head, starts, marks, budget=BUDGET) == merged


def test_a_long_sheet_is_compiled_in_chunks(sheet, monkeypatch, BUDGET):
    """render() goes through the chunks above SINGLE_MAX (made small here) and its pages read as
    the one-piece compile's; typst is never imported in the process that holds the sheet."""
    calls = []
    child = pc._compile_child
    monkeypatch.setattr(pc, "SINGLE_MAX", 10_000)
    monkeypatch.setattr(pc, "CHUNK_BYTES", BUDGET)
    monkeypatch.setattr(pc, "_compile_child", lambda src, mode: calls.append(mode) or child(src, mode))
    data = render(sheet, "pdf", "answers")
    assert calls.count("pdf") >= 2 and calls.count("layout") == calls.count("pdf")
    one = _untagged(typst_source(sheet, "answers"))
    assert _words(data) == _words(one) and _same_digits(_digits(data), _digits(one))


def test_a_sheet_under_single_max_is_one_compile(sheet, monkeypatch):
    monkeypatch.setattr(pc, "_compile_child", lambda src, mode: pytest.fail("compiled in chunks"))
    assert sum(map(len, typst_pieces(sheet, "student")[0])) < pc.SINGLE_MAX
    assert render(sheet, "pdf", "student") == compile_typst(typst_source(sheet, "student"))


def test_same_digits_allows_bracket_pieces_but_not_a_changed_number():
    single = ["12 / 3", "0000100011001110 7"]
    assert _same_digits(single, ["12 / 3", "111 0000100011001110 4445 7"])
    assert not _same_digits(single, ["12 / 3", "0000100011001111 7"])  # one entry changed
    assert not _same_digits(single, ["13 / 3", "0000100011001110 7"])  # a footer changed
    assert not _same_digits(single, ["12 / 3"])  # a page lost


def test_a_chunk_with_no_page_start_ends_a_page(pieces):
    """Smaller chunks, some with no question or solution at a page's top: the next chunk starts a
    new page (a page ends early, the only difference); pages are numbered 1 / N to N / N and every
    question and solution comes once, in order."""
    import re

    ps, head, starts, marks = pieces
    chunks = pc.plan(ps, head, starts, marks, 10_000)
    assert not all(c.lookahead for c in chunks[:-1])  # the case
    texts = _texts(pc.render(ps, head, starts, marks, budget=10_000))
    n = len(texts)
    assert n >= len(_texts(compile_typst("".join(ps))))
    assert [t.strip().splitlines()[-1] for t in texts] == [f"{k} / {n}" for k in range(1, n + 1)]
    assert re.findall(r"^\[\d+ marks?\]Q(\d+)\.", "\n".join(texts), re.M) == [str(i) for i in range(1, 21)]
    assert re.findall(r"^Q(\d+) \S+ · ", "\n".join(texts), re.M) == [str(i) for i in range(1, 21)]  # the solutions
