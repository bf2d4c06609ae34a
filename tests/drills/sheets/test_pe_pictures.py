"""Issue 27: the PE heatmap shows and outlines the asked entry wherever it is (PE(pos ≥ 48, ·) too), in
the PDF and in the HTML, and the HTML has the causal-mask picture the PDF has. The outlined value is
checked against the sinusoidal formula written out here (Vaswani et al. 2017, §3.5:
PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…)), not against the solver."""

from __future__ import annotations

import math
import re

import pytest

from drills.sheets import Sheet, render
from drills.sheets.pdf import pe_window, typst_source
from question_bank.family import get_family


def _pe(pos: int, dim: int, d: int) -> float:
    angle = pos / 10000 ** (2 * (dim // 2) / d)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def _asked(g: dict) -> tuple[int, int]:
    """What the problem asks, from its statement's parameters: PE(pos, dim), or PE(p + k, 2i)."""
    return (g["pos"], g["dim"]) if "pos" in g else (g["p"] + g["k"], 2 * g["i"])


@pytest.fixture(scope="module")
def draws():
    out = []
    for fid in ("positional.pe_value", "positional.pe_rotation"):
        f = get_family(fid)
        out += [f.generate(s, d) for d in f.levels for s in range(40)]
    return out


def test_the_window_holds_the_asked_entry(draws):
    far = 0
    for p in draws:
        pos, dim = _asked(p.given)
        p0, n_pos, d0, n_dim, asked = pe_window(p.given, p.given["d_model"])
        assert asked == (pos, dim), p.id
        assert p0 <= pos < p0 + n_pos <= p0 + 48 and d0 <= dim < d0 + n_dim <= d0 + 64, p.id
        far += pos >= 48
    assert far >= 5  # the case of the issue: positions beyond the first 48


def test_pdf_and_html_outline_the_asked_value(draws):
    far = [p for p in draws if _asked(p.given)[0] >= 48][:3] + [draws[0]]
    sheet = Sheet("PE", far, 0)
    src = typst_source(sheet, "answers")
    page = render(sheet, "html", "answers").decode()
    for p in far:
        pos, dim = _asked(p.given)
        want = _pe(pos, dim, p.given["d_model"])
        assert f"outlined: $P E({pos}, {dim}) = {want:.3f}$" in src, p.id
        hit = re.findall(r'<td class="hit" style="[^"]*" title="PE\((\d+), (\d+)\) = (-?[\d.]+)"', page)
        assert (str(pos), str(dim), f"{want:.3f}") in hit, p.id
    assert page.count('<table class="pe"') == len(far)
    assert page.count('<td class="hit"') == len(far)


def test_html_has_the_causal_mask_picture():
    p = get_family("attention.masked_weights").generate(1, "easy")
    n = len(p.given.get("q") or p.given.get("scores"))
    page = render(Sheet("mask", [p], 0), "html", "student").decode()
    fig = re.search(r"<figure>(.*?)</figure>", page, re.S)
    assert fig and "causal mask" in fig.group(1)
    cells = re.findall(r'<td class="(keep|block)">', fig.group(1))
    assert len(cells) == n * n
    assert [c == "keep" for c in cells] == [j <= i for i in range(n) for j in range(n)]
    assert "causal mask" in typst_source(Sheet("mask", [p], 0), "student")  # as the PDF
