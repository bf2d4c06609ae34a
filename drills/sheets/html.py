"""The practice set as one self-contained HTML page that works offline, and the Markdown→HTML
conversion that the Anki and Moodle writers share.

Math in the page is rendered to Unicode and HTML, not MathML and not MathJax: inline math
through ``question_bank.render.latex_to_text`` (the converter the terminal uses: QKᵀ/√dₖ),
matrices (``bmatrix``) as bracketed HTML tables. That needs no script, no web font and no
network, prints as it shows, and reads the same in every browser and in a text-mode one.
(MathML would typeset fractions better, but needs a second LaTeX converter for little gain
on this bank, whose formulas are short.) Attention weights and masks are drawn as coloured
HTML tables, like the PDF's pictures.

:func:`md_to_html` takes a ``math`` callback, so that Anki and Moodle can keep the LaTeX
for MathJax (``\\( … \\)`` and ``\\[ … \\]``) instead.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable

from drills.sheets import (
    MARKDOWN_INLINE,
    TYPE_NAMES,
    TYPE_RULES,
    info_line,
    key_lines,
    marks_label,
    part_prompts,
)
from question_bank.grading import LETTERS, describe_key
from question_bank.problem import (
    ChoiceKey,
    MatrixKey,
    Problem,
    erratum_heading,
    erratum_place,
    extra_explanation,
    source_shown,
)
from question_bank.render import latex_to_text, num

MathFn = Callable[[str, bool], str]  # (tex, display) -> HTML

_ENV = re.compile(r"\\begin\{(b|p|v)?matrix\}(.*?)\\end\{(?:b|p|v)?matrix\}", re.S)


def mathjax(tex: str, display: bool) -> str:
    """LaTeX kept for MathJax (Anki, Moodle): ``\\(…\\)`` inline, ``\\[…\\]`` display."""
    t = html.escape(tex.strip(), quote=False)
    return f"\\[{t}\\]" if display else f"\\({t}\\)"


#: Multi-letter subscripts the bank writes without braces (``h_kv``, ``d_ff``): one subscript each.
WORD_SUBSCRIPTS = ("model", "head", "kv", "ff", "up", "down", "out", "in")
_WORD_SUB = re.compile(r"_(" + "|".join(WORD_SUBSCRIPTS) + r")(?![A-Za-z])")
_ACCENTS = {"hat": "\u0302", "tilde": "\u0303", "bar": "\u0304", "vec": "\u20d7"}
_ACCENT = re.compile(r"\\(" + "|".join(_ACCENTS) + r")\s*(?:\{([^{}]*)\}|([A-Za-z]))")
_SHORT = 32  # inline math up to this many characters of LaTeX is kept on one line


def _script_end(tex: str, i: int) -> int:
    """The end of the sub/superscript that starts at ``tex[i]``: a ``{group}``, a command or one character."""
    if tex[i] == "{":
        depth = 0
        for j in range(i, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return j + 1
        return len(tex)
    if tex[i] == "\\":
        m = re.match(r"\\[A-Za-z]+|\\.", tex[i:])
        return i + (len(m.group(0)) if m else 1)
    return i + 1


#: Symbols ``latex_to_text`` leaves as their names (``\sim`` would read "sim"): their characters.
SYMBOLS = {
    "sim": "∼", "propto": "∝", "varphi": "φ", "partial": "∂", "nabla": "∇", "forall": "∀", "exists": "∃",
    "cap": "∩", "cup": "∪", "subset": "⊂", "langle": "⟨", "rangle": "⟩", "ell": "ℓ", "Delta": "Δ", "Gamma": "Γ",
    "Lambda": "Λ", "Phi": "Φ", "Pi": "Π", "Psi": "Ψ", "Sigma": "Σ", "Xi": "Ξ", "chi": "χ", "eta": "η", "iota": "ι",
    "kappa": "κ", "nu": "ν", "psi": "ψ", "rho": "ρ", "upsilon": "υ", "xi": "ξ", "zeta": "ζ",
}
_SYMBOL = re.compile(r"\\(" + "|".join(SYMBOLS) + r")(?![A-Za-z])")


def _formula_html(tex: str) -> str:
    """A formula without matrices as HTML: Unicode symbols (``latex_to_text``, and
    :data:`SYMBOLS`), and every sub/superscript outside a command's argument as
    ``<sub>``/``<sup>``, so that ``d_{model}`` reads d<sub>model</sub>, not d_model."""
    tex = _SYMBOL.sub(lambda m: SYMBOLS[m.group(1)], tex)
    tex = _WORD_SUB.sub(r"_{\1}", tex)
    tex = _ACCENT.sub(lambda m: "{" + (m.group(2) or m.group(3)) + _ACCENTS[m.group(1)] + "}", tex)
    out: list[str] = []
    base = 0
    depth = 0
    i = 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c in "_^" and depth == 0:
            out.append(html.escape(latex_to_text(tex[base:i], math=True), quote=False))
            j = i + 1
            while j < len(tex) and tex[j] == " ":
                j += 1
            if j >= len(tex):
                base = i = j
                break
            end = _script_end(tex, j)
            body = tex[j:end]
            if body.startswith("{") and body.endswith("}"):
                body = body[1:-1]
            tag = "sub" if c == "_" else "sup"
            inner = "T" if body.strip() in ("\\top", "\\intercal") else _formula_html(body)
            out.append(f"<{tag}>{inner}</{tag}>")
            base = i = end
            continue
        i += 1
    out.append(html.escape(latex_to_text(tex[base:], math=True), quote=False))
    return "".join(out)


def _matrix_html(body: str, delim: str | None) -> str:
    """A matrix as inline spans laid out as a table (a ``<table>`` would end the paragraph)."""
    rows = [r for r in body.split("\\\\") if r.strip()]
    cells = "".join(
        '<span class="mr">' + "".join(f'<span class="mc">{_formula_html(c.strip())}</span>' for c in r.split("&")) + "</span>"
        for r in rows
    )
    cls = "mat" if delim in (None, "b") else "mat paren"
    return f'<span class="{cls}">{cells}</span>'


def unicode_math(tex: str, display: bool) -> str:
    """Math as Unicode text with ``<sub>``/``<sup>`` scripts and matrices in brackets."""
    out = []
    pos = 0
    for m in _ENV.finditer(tex):
        out.append(_formula_html(tex[pos : m.start()]))
        out.append(_matrix_html(m.group(2), m.group(1)))
        pos = m.end()
    out.append(_formula_html(tex[pos:]))
    inner = "".join(out).strip()
    if display:
        return f'<div class="eq">{inner}</div>'
    return f'<span class="m">{inner}</span>' if len(tex) <= _SHORT or "matrix}" in tex else f'<span class="ml">{inner}</span>'


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # Markdown's backslash escape of ASCII punctuation


def _text(s: str) -> str:
    return html.escape(_ESCAPED.sub(r"\1", s), quote=False)


def inline_to_html(text: str, math_fn: MathFn) -> str:
    out: list[str] = []
    pos = 0
    for m in MARKDOWN_INLINE.finditer(text):
        out.append(_text(text[pos : m.start()]))
        if m.group("code"):
            out.append(f"<code>{html.escape(m.group('code')[1:-1], quote=False)}</code>")
        elif m.group("dmath") is not None:
            out.append(math_fn(m.group("dbody"), True))
        elif m.group("imath") is not None:
            out.append(math_fn(m.group("ibody"), False))
        elif m.group("bold") is not None:
            out.append(f"<b>{inline_to_html(m.group('bbody'), math_fn)}</b>")
        else:
            out.append(f"<i>{inline_to_html(m.group('ibody2'), math_fn)}</i>")
        pos = m.end()
    out.append(_text(text[pos:]))
    return "".join(out)


def md_to_html(md: str, math_fn: MathFn = unicode_math) -> str:
    """HTML for the bank's Markdown: paragraphs, ``$$`` blocks, lists, code blocks, quotes."""
    blocks: list[str] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""

    def flush() -> None:
        nonlocal list_tag
        if para:
            blocks.append("<p>" + inline_to_html(" ".join(para), math_fn) + "</p>")
            para.clear()
        if items:
            blocks.append(f"<{list_tag}>" + "".join(f"<li>{inline_to_html(t, math_fn)}</li>" for t in items) + f"</{list_tag}>")
            items.clear()
            list_tag = ""

    lines = md.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("$$") and not (s.endswith("$$") and len(s) > 4):
            flush()
            body = [s[2:]]
            i += 1
            while i < len(lines) and not lines[i].strip().endswith("$$"):
                body.append(lines[i])
                i += 1
            if i < len(lines):
                body.append(lines[i].strip()[:-2])
            blocks.append(math_fn("\n".join(body), True))
        elif s.startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            blocks.append("<pre><code>" + html.escape("\n".join(code), quote=False) + "</code></pre>")
        elif not s:
            nxt = next((t for t in lines[i + 1 :] if t.strip()), "")
            if not (items and re.match(r"\s*([-*]|\d+\.)\s+", nxt)):
                flush()
        elif m := re.match(r"\s*([-*]|\d+\.)\s+(.*)", line):
            tag = "ul" if m.group(1) in "-*" else "ol"
            if para or (items and tag != list_tag):
                flush()
            list_tag = tag
            items.append(m.group(2))
        elif s.startswith(">"):
            flush()
            blocks.append("<blockquote>" + inline_to_html(s.lstrip("> "), math_fn) + "</blockquote>")
        elif items:
            items[-1] += " " + s
        else:
            para.append(s)
        i += 1
    flush()
    return "\n".join(blocks)


def key_html(key, math_fn: MathFn = unicode_math) -> str:
    if isinstance(key, MatrixKey):
        tex = "\\begin{bmatrix} " + " \\\\ ".join(" & ".join(num(x, key.decimals).replace("∞", "\\infty") for x in r)
                                                   for r in key.value) + " \\end{bmatrix}"
        return math_fn(tex, False)
    if isinstance(key, ChoiceKey):
        return ", ".join(f"({LETTERS[i]})" for i in sorted(key.correct))
    return html.escape(describe_key(key), quote=False)


def key_block(p: Problem, math_fn: MathFn = unicode_math) -> str:
    return "<br>".join((html.escape(lab) + " " if lab else "") + key_html(k, math_fn) for lab, k in key_lines(p))


# --------------------------------------------------------------------------------------------
# pictures as coloured tables


def _weights_table(rows) -> str:
    def cell(x: float) -> str:
        t = max(0.0, min(1.0, x))
        r, g, b = (int(255 + (c - 255) * t) for c in (29, 79, 145))
        fg = "#fff" if t > 0.55 else "#000"
        return f'<td style="background:#{r:02x}{g:02x}{b:02x};color:{fg}">{num(x, 2)}</td>'

    return '<table class="heat">' + "".join("<tr>" + "".join(cell(float(x)) for x in r) + "</tr>" for r in rows) + "</table>"


def _mask_table(vals, keep) -> str:
    def cell(v: float, k: bool) -> str:
        shown = "−∞" if v == -math.inf else num(v)
        return f'<td class="{"keep" if k else "block"}">{shown}</td>'

    return '<table class="heat">' + "".join(
        "<tr>" + "".join(cell(v, k) for v, k in zip(r, kr, strict=True)) + "</tr>" for r, kr in zip(vals, keep, strict=True)) + "</table>"


def statement_pictures_html(p: Problem) -> str:
    """The statement's pictures, as in the PDF: the causal mask of a masked-attention problem."""
    from drills.sheets.pdf import causal_size

    if (n := causal_size(p)) is None:
        return ""
    keep = [[j <= i for j in range(n)] for i in range(n)]
    vals = [[1.0 if k else 0.0 for k in r] for r in keep]
    return (f"<figure>{_mask_table(vals, keep)}<figcaption>causal mask: query i may attend to key j ≤ i"
            "</figcaption></figure>")


def _pe_colour(v: float) -> str:
    """Diverging: blue at −1, white at 0, red at +1 (as the PDF's heatmap)."""
    t = max(-1.0, min(1.0, v))
    r, g, b = ((214, 96, 77) if t > 0 else (67, 147, 195))
    a = abs(t)
    return f"#{int(255 + (r - 255) * a):02x}{int(255 + (g - 255) * a):02x}{int(255 + (b - 255) * a):02x}"


def pe_heatmap_html(p: Problem) -> str:
    """The sinusoidal-PE heatmap of a PE problem's solution, as in the PDF (the same window of
    positions and dimensions, the asked entry outlined), or ""."""
    from drills.sheets.pdf import pe_dims, pe_values

    if (d := pe_dims(p)) is None:
        return ""
    pe, (p0, n_pos, d0, n_dim, asked) = pe_values(p.given, d)
    rows = []
    for r in range(n_pos):
        cells = []
        for c in range(n_dim):
            v = float(pe[r, c])
            cls = ' class="hit"' if asked is not None and (p0 + r, d0 + c) == asked else ""
            cells.append(f'<td{cls} style="background:{_pe_colour(v)}" '
                         f'title="PE({p0 + r}, {d0 + c}) = {v:.3f}"></td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    shown = "all dimensions" if n_dim == d else f"dimensions {d0} to {d0 + n_dim - 1} of {d}"
    what = ""
    if asked is not None:
        what = f"; outlined: PE({asked[0]}, {asked[1]}) = {float(pe[asked[0] - p0, asked[1] - d0]):.3f}"
    return (f'<figure><table class="pe" data-positions="{p0}-{p0 + n_pos - 1}" data-dims="{d0}-{d0 + n_dim - 1}">'
            + "".join(rows) + f"</table><figcaption>sinusoidal PE: positions {p0} to {p0 + n_pos - 1} (rows), {shown} "
            f"(columns); red +1, blue −1{what}</figcaption></figure>")


def pictures_html(p: Problem) -> str:
    from drills.sheets.pdf import is_attention_weights, mask_like

    out = []
    for label, key in key_lines(p):
        if not isinstance(key, MatrixKey):
            continue
        lab = f" {label}" if label else ""
        vals = [list(r) for r in key.value]
        if mask_like(p, vals):
            if any(x == -math.inf for r in vals for x in r):
                keep = [[x != -math.inf for x in r] for r in vals]
            elif p.given.get("convention") == "block":
                keep = [[x == 0 for x in r] for r in vals]
            else:
                keep = [[x == 1 for x in r] for r in vals]
            out.append(f"<figure>{_mask_table(vals, keep)}<figcaption>the mask{html.escape(lab)}: green = may attend, "
                       "dark = blocked; row i is query i</figcaption></figure>")
        elif is_attention_weights(p, label, vals):
            out.append(f"<figure>{_weights_table(vals)}<figcaption>attention weights{html.escape(lab)}: row i is query i, "
                       "column j key j</figcaption></figure>")
    if pe := pe_heatmap_html(p):
        out.append(pe)
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# the page

CSS = """
body{font-family:Georgia,'Times New Roman',serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.5;color:#111}
h1{text-align:center;margin-bottom:.2em} .info{text-align:center;color:#555;font-size:.9em}
.q{margin:1.4em 0;break-inside:avoid;position:relative} .qh{font-weight:bold} .qh small{font-weight:normal;color:#555;margin-left:.6em}
.qm{position:absolute;right:-5.5em;top:0;width:5em;font-size:.85em;font-weight:bold;text-align:left}
@media (max-width:60em){.qm{position:static;float:right;width:auto}}
.name{display:flex;gap:.6em;margin:1em 0} .name span{flex:1;border-bottom:1px solid #888} .name span.id{flex:0 0 10em}
table.grid{border-collapse:collapse;margin:.3em 0 .8em} table.grid td{border:1px solid #888;width:3.2em;height:1.7em}
.part{margin:.6em 0 .2em} p,li{line-height:1.6}
ol.opts{list-style:none;padding-left:1em} ol.opts li{margin:.25em 0;padding-left:2em;text-indent:-2em}
.m{white-space:nowrap} .eq{text-align:center;margin:.6em 0;overflow-x:auto;overflow-y:hidden;padding:.2em 0}
sub,sup{font-size:.72em;line-height:0} .mc sub,.mc sup{font-size:.8em}
.mat{display:inline-table;position:relative;vertical-align:middle;margin:.35em .3em;padding:0 .25em;
 border-left:1.5px solid #222;border-right:1.5px solid #222;text-indent:0;white-space:nowrap}
.mat::before,.mat::after{content:"";position:absolute;top:0;bottom:0;width:.3em;border-top:1.5px solid #222;
 border-bottom:1.5px solid #222} .mat::before{left:0} .mat::after{right:0}
.mat.paren{border-radius:.6em/1.2em;border-top:0;border-bottom:0} .mat.paren::before,.mat.paren::after{content:none}
.mr{display:table-row} .mc{display:table-cell;text-align:right;padding:.05em .35em;line-height:1.3}
table.key{border-collapse:collapse;width:100%} table.key>tbody>tr>td,table.key>tbody>tr>th{border:1px solid #bbb;
 padding:.3em .5em;text-align:left;vertical-align:top}
table.heat{border-collapse:collapse;margin:.5em auto;font-size:.75em} table.heat td{width:2.6em;height:2.2em;
 text-align:center;border:1px solid #fff}
td.keep{background:#b7e1a1} td.block{background:#444;color:#fff}
table.pe{border-collapse:collapse;margin:.5em auto} table.pe td{width:.55em;height:.55em;padding:0;border:0}
table.pe td.hit{outline:2px solid #000;outline-offset:-1px}
figure{text-align:center;margin:.8em 0;break-inside:avoid} figcaption{font-size:.85em;color:#333}
blockquote{border-left:3px solid #c0392b;margin:.6em 0;padding-left:.8em;color:#333}
code,pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.88em} pre{background:#f4f4f4;padding:.5em;
 overflow-x:auto;white-space:pre-wrap}
.answer{margin-top:.5em;color:#444} .src{color:#666;font-size:.85em;font-weight:normal}
h2.sec{font-size:1.1em;border-bottom:1px solid #888;margin:1.6em 0 .4em;break-after:avoid}
.sol{break-inside:auto} .sol h3{break-after:avoid}
@page{margin:18mm 16mm}
@media print{body{margin:0;max-width:none;font-size:11pt} a{color:inherit;text-decoration:none}
 table.heat td,table.pe td,td.keep,td.block{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 h2.keyh{break-before:page} table.key tr{break-inside:avoid} .eq{overflow:visible;white-space:normal}}
"""


def _grid(rows: int, cols: int) -> str:
    return '<table class="grid">' + ("<tr>" + "<td></td>" * cols + "</tr>") * rows + "</table>"


def _space(key) -> str:
    """An empty grid of the key's shape (a matrix), else an answer line."""
    if isinstance(key, MatrixKey):
        return _grid(len(key.value), len(key.value[0]))
    return '<span class="answer">Answer: ______________</span>'


def _question(i: int, p: Problem) -> str:
    out = [f'<section class="q" id="q{i}"><div class="qm">[{marks_label(p.marks)}]</div>'
           f'<div class="qh">Q{i}.<small>{html.escape(TYPE_NAMES[p.type])}: {html.escape(TYPE_RULES[p.type])}</small></div>',
           md_to_html(p.statement_md.strip())]
    if pics := statement_pictures_html(p):
        out.append(pics)
    if p.options:
        out.append('<ol class="opts">' + "".join(f"<li>({LETTERS[j]}) {inline_to_html(o, unicode_math)}</li>"
                                                for j, o in enumerate(p.options)) + "</ol>")
    elif p.parts:
        for (lab, md), pt in zip(part_prompts(p), p.parts, strict=True):
            sep = "<br>" if isinstance(pt.key, MatrixKey) else " "
            out.append(f'<div class="part" data-part="{html.escape(pt.label)}">{html.escape(lab)} '
                       f"{inline_to_html(md, unicode_math)}{sep}{_space(pt.key)}</div>")
    elif isinstance(p.key, MatrixKey):
        out.append(f'<div class="part" data-part="">{_space(p.key)}</div>')
    elif p.type in ("nat", "integer"):
        out.append('<div class="answer">Answer: ______________</div>')
    out.append("</section>")
    return "\n".join(out)


def _answers(sheet, version: str) -> str:
    rows = "".join(f'<tr><td><a href="#q{i}">Q{i}</a></td><td>{p.marks}</td><td>{html.escape(TYPE_NAMES[p.type])}</td>'
                   f"<td>{key_block(p)}</td></tr>" for i, p in sheet.numbered())
    out = ['<h2 class="keyh">Answer key</h2>' if version == "full" else "<h2>Answer key</h2>", '<table class="key"><tr><th>Q</th><th>Marks</th><th>Type</th><th>Answer</th></tr>'
           + rows + "</table>", "<h2>Worked solutions</h2>"]
    for i, p in sheet.numbered():
        src = "generated" if p.source == "generated" else f"{p.source_label}, {source_shown(p)}"
        out.append(f'<section class="sol"><h3>Q{i} <span class="src">{html.escape(p.id)} · {html.escape(src)}</span></h3>')
        out.append(md_to_html(p.solution_md.strip()))
        if extra := extra_explanation(p):
            out.append(md_to_html(extra))
        out.append(pictures_html(p))
        if p.misconceptions:
            out.append("<p><b>Typical mistakes.</b></p><ul>" + "".join(
                f"<li>{html.escape(m.label)}: {html.escape(m.feedback)}</li>" for m in p.misconceptions) + "</ul>")
        for e in p.errata:
            out.append(f"<blockquote><b>{erratum_heading(e)}</b> ({html.escape(erratum_place(p, e))}): printed {html.escape(e.printed)}; "
                       f"exact {html.escape(e.exact)}. {html.escape(e.reason)}</blockquote>")
        out.append("</section>")
    return "\n".join(out)


def render(sheet, version: str) -> bytes:
    title = sheet.title + (": answers" if version == "answers" else "")
    info = info_line(sheet)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>", f'<p class="info">{html.escape(info)}</p>']
    if version != "answers":
        parts.append("<p><small>MCQ: one correct option. MSQ: one or more correct options, all of them and no other. "
                     "NAT: type the number, rounded as the question asks.</small></p><hr>")
        parts.append('<div class="name">Name: <span></span> ID: <span class="id"></span></div>')
        for i, p in sheet.numbered():
            if sec := sheet.section_at(i):  # a paper's section (issue 26): its one-line heading first
                parts.append(f'<h2 class="sec">{html.escape(sec.heading())}</h2>')
            parts.append(_question(i, p))
    if version in ("full", "answers"):
        parts.append(_answers(sheet, version))
    parts.append("</body></html>")
    return ("\n".join(parts) + "\n").encode("utf-8")
