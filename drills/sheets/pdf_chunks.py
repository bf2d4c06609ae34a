"""A long sheet's PDF typeset in chunks, each in a process of its own: bounded memory (issue 40).

Typst holds the whole layout of a document while it compiles it, about 0.4 MB per kilobyte of
source (``qkv sheet -n 400``: 1.3 MB of source, 560 MB in Typst, 680 MB for the whole command),
and keeps its caches for as long as the process lives. So a sheet whose content is longer than
:data:`SINGLE_MAX` (about 60 questions with their solutions) is not compiled at once: it is cut
into chunks of about :data:`CHUNK_BYTES`, each compiled by a fresh Python process that imports
only ``typst`` and exits (its memory goes with it), one at a time, and the pages are put together
with ``pypdf``. ``qkv sheet -n 400``: 221 MB at most for the whole command (``bench/sheet_memory.py``),
in about twice the time of one compile (each chunk is laid out twice: once to count its pages,
once with the total in its footers).

Where the chunks are cut (:func:`plan`): at a question, or a worked solution, that Typst's own
layout of the chunk before places at the top of a page (its heading marker ``<qkv-heading>`` on
the first line of the page), so that each page is laid out as in the whole document; where a
chunk has no such place, at the last question or solution in it, which then starts a new page
(the only difference from one compile: some space left at the foot of that page). Every chunk
starts with the document's set-up (page, fonts, the preamble's functions), its pages numbered
from where the previous chunk ended, out of the document's total ("12 / 478"), which a first
pass finds (a layout of each chunk, no PDF written).

The pages are the same; the PDF around them differs from a one-piece compile: each chunk embeds
its own font subsets, there are no accessibility tags (Typst's tag tree does not survive the
merge), and the outline (bookmarks) is rebuilt from the chunks' own.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

SINGLE_MAX = 200_000  # a sheet's content up to this much Typst source (about 60 questions) is compiled at once
CHUNK_BYTES = 75_000  # Typst source per chunk beyond it: about 130 MB in the compiling process
TOP_SLACK_PT = 12.0  # a heading marker this close below the page's top margin is on the page's first line
MARGIN_PT = 56.6929  # 2 cm, the sheet's top margin
_PAGE_SET = '#set page(paper: "a4", margin: (x: 2cm, y: 2cm), numbering: "1 / 1", header: context { if counter(page).get().first() > 1 ['

# run by `python -c`: compiles one chunk and writes the result on stdout; imports typst only
_CHILD = r"""
import json, os, sys, tempfile, typst
req = json.loads(sys.stdin.buffer.read())
with tempfile.TemporaryDirectory(prefix="qkv-typst-") as tmp:
    path = os.path.join(tmp, "chunk.typ")
    with open(path, "w", encoding="utf-8") as f:
        f.write(req["source"])
    c = typst.Compiler(path, ignore_system_fonts=True)
    if req["mode"] == "layout":
        pages = json.loads(c.eval("query(<qkv-page>).len()"))  # the layout only: no PDF written
        marks = json.loads(c.eval("query(<qkv-heading>).map(m => (m.location().page(), m.location().position().y.pt()))"))
        out = json.dumps({"pages": pages, "marks": marks}).encode()
    elif req["mode"] == "svg":
        svgs = c.compile(format="svg")
        out = json.dumps([p.decode() for p in ([svgs] if isinstance(svgs, bytes) else svgs)]).encode()
    else:
        out = c.compile(format="pdf", pdf_tags=False)
sys.stdout.buffer.write(out)
"""


@dataclass(frozen=True)
class Chunk:
    start: int  # first piece
    end: int  # pieces [start, end) are this chunk's pages
    pages: int  # how many pages they fill
    lookahead: bool  # compiled with piece `end` after them (it starts a page: the chunk's pages are those before it)


def _compile_child(source: str, mode: str) -> Any:
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps({"source": source, "mode": mode}).encode(),
                          capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"typst (chunk): {err[-1] if err else f'exit {proc.returncode}'}")
    return proc.stdout if mode == "pdf" else json.loads(proc.stdout)


def chunk_source(pieces: list[str], head: int, start: int, end: int, offset: int, total: int | None) -> str:
    """The Typst source of pieces ``[start, end)``: the document's set-up, its pages numbered from
    ``offset + 1`` out of ``total``. Without a total (the first pass: the layout does not depend on
    it), each page carries an invisible ``<qkv-page>`` marker in its foreground, to count them."""
    setup = "".join(pieces[:head])
    if _PAGE_SET not in setup:
        raise ValueError("the sheet's page set-up is not the one the chunks renumber")
    numbering = f'numbering: (n, ..rest) => numbering("1 / 1", n + {offset}, {total or 9999})'
    setup = setup.replace(_PAGE_SET, _PAGE_SET.replace('numbering: "1 / 1"', numbering)
                          .replace("counter(page).get().first() > 1", f"counter(page).get().first() + {offset} > 1"), 1)
    probe = "" if total else "#set page(foreground: context [#metadata(here().page())<qkv-page>])\n"
    return setup + probe + "".join(pieces[start:end])


def plan(pieces: list[str], head: int, starts: set[int], marks: list[int], budget: int | None = None,
         layout: Any = None) -> list[Chunk]:
    """Cut pieces ``[head, len)`` into chunks of about ``budget`` characters, where a page starts
    (see the module's docstring). ``marks[i] & 1``: whether piece ``i`` holds a ``<qkv-heading>``
    marker; ``marks[i] & 2``: whether it starts a page whatever comes before (its marker's page is its own);
    ``layout(source) -> {"pages", "marks": [[page, y], ...]}`` (by default a child process)."""
    layout = layout or (lambda src: _compile_child(src, "layout"))
    budget = budget or CHUNK_BYTES
    n, start, offset, chunks = len(pieces), head, 0, []
    while start < n:
        end, size = start, 0
        while end < n:  # up to the budget, ending where a chunk may start (a long piece: a chunk of its own)
            if end > start and end in starts and size + len(pieces[end]) > budget:
                break
            size += len(pieces[end])
            end += 1
        got = layout(chunk_source(pieces, head, start, end, offset, None))
        if end == n:
            chunks.append(Chunk(start, n, got["pages"], False))
            break
        cut = None
        for c in sorted(s for s in starts if start < s < end):
            k = sum(m & 1 for m in marks[start:c])  # the marker of piece c: its heading
            page, y = got["marks"][k]
            if page >= 2 and (y <= MARGIN_PT + TOP_SLACK_PT or marks[c] & 2):
                cut = (c, page - 1)
        if cut is not None:
            chunks.append(Chunk(start, cut[0], cut[1], True))
            start, offset = cut[0], offset + cut[1]
        else:  # no page starts at a question or solution in this chunk: the next one starts a new page
            chunks.append(Chunk(start, end, got["pages"], False))
            start, offset = end, offset + got["pages"]
    return chunks


def render(pieces: list[str], head: int, starts: set[int], marks: list[int], *, budget: int | None = None,
           fmt: str = "pdf") -> Any:
    """The document's PDF (``fmt="svg"``: its pages as SVG, for the tests), compiled in chunks."""
    chunks = plan(pieces, head, starts, marks, budget)
    total = sum(c.pages for c in chunks)
    outs, offset = [], 0
    for c in chunks:
        src = chunk_source(pieces, head, c.start, c.end + (1 if c.lookahead else 0), offset, total)
        out = _compile_child(src, fmt)
        got = len(out) if fmt == "svg" else _page_count(out)
        if got < c.pages or (got != c.pages and not c.lookahead):
            raise RuntimeError(f"typst (chunk): {got} pages where the layout had {c.pages}")
        outs.append((out, c.pages))
        offset += c.pages
    if fmt == "svg":
        return [page for pages, k in outs for page in pages[:k]]
    return merge(outs)


def _outline(reader: Any) -> list[tuple[int, str, int]]:
    """``(depth, title, page index)`` of each bookmark, in order."""
    out: list[tuple[int, str, int]] = []

    def walk(items: list[Any], depth: int) -> None:
        for it in items:
            if isinstance(it, list):
                walk(it, depth + 1)
            else:
                out.append((depth, str(it.title), reader.get_destination_page_number(it)))

    walk(reader.outline, 0)
    return out


def _page_count(pdf: bytes) -> int:
    import pypdf

    return len(pypdf.PdfReader(io.BytesIO(pdf)).pages)


def merge(parts: list[tuple[bytes, int]]) -> bytes:
    """One PDF of the first ``k`` pages of each PDF, with their bookmarks (a level-2 one whose
    level-1 parent is in an earlier chunk goes under that parent), deterministically."""
    import hashlib

    import pypdf

    writer = pypdf.PdfWriter()
    meta = None
    parent = None  # the last level-1 bookmark: later chunks' top-level "Q..." ones go under it
    parents: dict[int, Any] = {}
    for data, k in parts:
        reader = pypdf.PdfReader(io.BytesIO(data))
        first = len(writer.pages)
        for i in range(k):
            writer.add_page(reader.pages[i])
        meta = meta or reader.metadata
        for depth, title, page in _outline(reader):
            if page >= k:
                continue
            top = depth == 0 and not title.startswith("Q")  # "Answer key", "Worked solutions"; not "Q12 ..."
            node = writer.add_outline_item(title=title, page_number=first + page,
                                           parent=None if top else parents.get(depth - 1, parent))
            parents[depth] = node
            if top:
                parent = node
    if meta:
        writer.add_metadata({key: str(v) for key, v in meta.items() if key in ("/Title", "/Creator", "/Producer")})
    buf = io.BytesIO()
    writer.write(buf)
    digest = hashlib.sha256(buf.getvalue()).digest()[:16]
    writer._ID = pypdf.generic.ArrayObject([pypdf.generic.ByteStringObject(digest)] * 2)  # no random file id
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


__all__ = ["CHUNK_BYTES", "SINGLE_MAX", "Chunk", "chunk_source", "merge", "plan", "render"]
