r"""The practice set as Markdown with LaTeX math that GitHub renders (``$…$`` inline,
``$$…$$`` display blocks on their own lines, ``bmatrix``): the problems' own ``statement_md``
and ``solution_md``, numbered, with marks, an answer key table and the worked solutions.

GitHub runs its Markdown parser over ``$…$`` before MathJax sees it: ``\\`` (a matrix row),
``\{``, ``\,`` lose their backslash and ``*``/``_`` can turn into emphasis. :func:`github_md`
therefore writes such inline math in GitHub's ``$`…`$`` form, which the parser leaves alone,
and a display block as a fenced ``math`` block."""

from __future__ import annotations

import re

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
from question_bank.render import latex_matrix

#: Multi-letter subscripts the bank writes without braces (``h_kv``, ``d_ff``): braced for LaTeX.
_WORD_SUB = re.compile(r"_(model|head|kv|ff|up|down|out|in)(?![A-Za-z])")
#: What GitHub's Markdown parser would eat inside ``$…$``: a backslash before punctuation,
#: ``*``, ``|``, or an ``_`` that could open emphasis (one not preceded by a letter or digit).
_FRAGILE = re.compile(r"\\[!-/:-@\[-`{-~]|[*|]|(?<![A-Za-z0-9])_")


def inline_math(tex: str) -> str:
    """``$tex$``, or ``$`tex`$`` when plain dollars would not survive GitHub's Markdown parser."""
    tex = _WORD_SUB.sub(r"_{\1}", tex.strip())
    return f"$`{tex}`$" if _FRAGILE.search(tex) else f"${tex}$"


def md_text(text: str) -> str:
    """Plain text for Markdown: ``<`` written ``&lt;`` (issue 28: Markdown renderers pass raw HTML
    through, so a ``<script>`` or ``<img onerror>`` from a sheet file would be live)."""
    return text.replace("<", "&lt;")


def md_label(text: str) -> str:
    """A part's label as literal Markdown text (a teacher's, from a sheet file): no HTML, and no
    emphasis, code, link or table cell boundary it could open or close."""
    return re.sub(r"([\\`*_\[\]|~])", r"\\\1", md_text(text))


def _inline(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in MARKDOWN_INLINE.finditer(text):
        out.append(md_text(text[pos : m.start()]))
        if m.group("imath") is not None:
            out.append(inline_math(m.group("ibody")))
        elif m.group("dmath") is not None:
            out.append("$$" + _WORD_SUB.sub(r"_{\1}", m.group("dbody")) + "$$")
        else:
            out.append(m.group(0))
        pos = m.end()
    out.append(md_text(text[pos:]))
    return "".join(out)


def github_md(md: str) -> str:
    """The bank's Markdown made safe for GitHub: fragile inline math in ``$`…`$``, and ``$$``
    blocks on their own lines as fenced ``math`` blocks; code blocks are left as they are."""
    out: list[str] = []
    lines = md.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("```"):
            out.append(line)
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                out.append(lines[i])
                i += 1
            if i < len(lines):
                out.append(lines[i])
        elif s.startswith("$$") and (s == "$$" or not s.endswith("$$") or s.count("$$") == 2 and s.endswith("$$")):
            body = [s[2:]]
            if s.count("$$") == 2 and len(s) > 4:
                body = [s[2:-2]]
            else:
                i += 1
                while i < len(lines) and not lines[i].strip().endswith("$$"):
                    body.append(lines[i])
                    i += 1
                if i < len(lines):
                    body.append(lines[i].strip()[:-2])
            indent = line[: len(line) - len(line.lstrip())]
            tex = "\n".join(b for b in body if b.strip())
            out += [f"{indent}```math", *(indent + b.strip() for b in _WORD_SUB.sub(r"_{\1}", tex).split("\n")),
                    f"{indent}```"]
        else:
            out.append(_inline(line))
        i += 1
    return "\n".join(out)


def key_md(key, options_text: list[str]) -> str:
    """The keyed answer for the key table: a matrix as inline ``bmatrix`` in ``$`…`$``, the rest
    as ``describe_key``; ``|`` escaped, since a table cell ends at the first bare one."""
    if isinstance(key, MatrixKey):
        return "$`" + latex_matrix(key.value, key.decimals).replace("|", "\\|") + "`$"
    if isinstance(key, ChoiceKey):
        return ", ".join(f"({LETTERS[i]})" for i in sorted(key.correct))
    return describe_key(key).replace("|", "\\|")


def _header(sheet) -> list[str]:
    out = [f"# {md_text(sheet.title)}", ""]
    out += [info_line(sheet), ""]
    return out


def _question(i: int, p: Problem) -> list[str]:
    out = [f"## Q{i} ({marks_label(p.marks)}, {TYPE_NAMES[p.type]}: {TYPE_RULES[p.type]})", "", github_md(p.statement_md.strip()), ""]
    for j, o in enumerate(p.options):
        out.append(f"- **({LETTERS[j]})** {_inline(o)}")
    for lab, md in part_prompts(p):
        out.append(f"- **{md_label(lab)}** {_inline(md)}")
    if p.options or p.parts:
        out.append("")
    return out


def _answers(sheet) -> list[str]:
    out = ["# Answer key", "", "| Q | Marks | Type | Answer |", "|---|---|---|---|"]
    for i, p in sheet.numbered():
        cells = "<br>".join(f"{md_label(lab)} {key_md(k, p.options_text)}".strip() for lab, k in key_lines(p))
        out.append(f"| Q{i} | {p.marks} | {TYPE_NAMES[p.type]} | {cells} |")
    out += ["", "# Worked solutions", ""]
    for i, p in sheet.numbered():
        src = source_shown(p) if p.source == "generated" else p.source_label + ", " + source_shown(p)
        out += [f"## Q{i}", "", f"*{md_text(p.id)}* — {md_text(src)}", ""]
        out += [github_md(p.solution_md.strip()), ""]
        if extra := extra_explanation(p):
            out += [github_md(extra), ""]
        if p.misconceptions:
            out += ["**Typical mistakes:**", ""]
            out += [f"- {md_text(m.label)}: {md_text(m.feedback)}" for m in p.misconceptions]
            out.append("")
        for e in p.errata:
            out += [f"> **{erratum_heading(e)}** ({md_text(erratum_place(p, e))}): printed {md_text(e.printed)}, exact "
                    f"{md_text(e.exact)}. {md_text(e.reason)}", ""]
    return out


#: link targets a Markdown renderer would make live: any scheme but http(s) and mailto (javascript:, data:,
#: vbscript:, file:), read as a browser reads it (entities decoded, whitespace and control characters dropped)
_SAFE_SCHEMES = ("http:", "https:", "mailto:")
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)")
_REF_DEF = re.compile(r"^(\s{0,3})\[([^\]]+)\]:\s*<?(\S*)", re.M)


def _live_target(dest: str) -> bool:
    import html

    d = re.sub(r"[\s\x00-\x1f\\]", "", html.unescape(html.unescape(dest))).lower()
    scheme = re.match(r"[a-z][a-z0-9+.-]*:", d)
    return bool(scheme) and scheme.group(0) not in _SAFE_SCHEMES


def defuse_links(md: str) -> str:
    """Issue 38: a link from a sheet file (``[x](javascript:alert(1))``, a reference definition
    ``[x]: javascript:…``) whose target is not http(s) or mailto is written as text: the ``(`` or the
    ``[`` escaped, so no renderer makes it a link. Other links are left as they are."""
    md = _INLINE_LINK.sub(lambda m: "]\\(" + m.group(0)[2:] if _live_target(m.group(1)) else m.group(0), md)
    return _REF_DEF.sub(lambda m: m.group(1) + "\\" + m.group(0)[len(m.group(1)):] if _live_target(m.group(3))
                        else m.group(0), md)


def render(sheet, version: str) -> bytes:
    lines = _header(sheet)
    if version == "answers":
        lines[0] = f"# {md_text(sheet.title)}: answers"
    else:
        for i, p in sheet.numbered():
            if sec := sheet.section_at(i):  # a paper's section (issue 26): its one-line heading first
                lines += [f"# {md_text(sec.heading())}", ""]
            lines += _question(i, p)
    if version in ("full", "answers"):
        lines += _answers(sheet)
    return (defuse_links("\n".join(lines)).rstrip() + "\n").encode("utf-8")
