"""Issue 38: a javascript: (or data:, vbscript:) link from a sheet file does not pass into the Markdown
export as a link; read back with a CommonMark parser (markdown-it), as GitHub or a static-site tool would."""

from __future__ import annotations

import dataclasses

from markdown_it import MarkdownIt

from drills.sheets import Sheet, render
from question_bank import bank as qb

LINKS = ("[click](javascript:alert(1)) [b]( JaVa&#115;cript:alert(2)) [c](data:text/html,<b>x</b>) "
         "[d](vbscript:msgbox(3)) [ok](https://example.org/a) [frag](#q1)\n\n[ref]: javascript:alert(4)\n\n[use][ref]")


def _hrefs(md: str) -> list[str]:
    """Every link a permissive CommonMark renderer makes (markdown-it's own scheme filter switched off: not
    every renderer a teacher uses has one)."""
    parser = MarkdownIt("commonmark")
    parser.validateLink = lambda url: True
    hrefs = []
    for tok in parser.parse(md):
        for child in tok.children or []:
            if child.type == "link_open":
                hrefs.append(child.attrs.get("href", ""))
    return hrefs


def test_markdown_export_has_no_script_links():
    base = qb.problem("attention.masked_weights", seed=1, difficulty="medium")
    mcq = next(p for p in qb.curated() if p.type == "mcq" and not p.parts)
    probs = [dataclasses.replace(base, statement_md=LINKS, solution_md=LINKS),
             dataclasses.replace(mcq, options=[LINKS.split("\n")[0]] * len(mcq.options))]
    out = render(Sheet("links", probs, 0, date=None, epoch=1_750_000_000), "md", "full").decode()
    hrefs = _hrefs(out)
    assert hrefs, out  # the safe links stay links
    assert all(h.startswith(("https:", "#")) for h in hrefs), hrefs
    assert "https://example.org/a" in hrefs
