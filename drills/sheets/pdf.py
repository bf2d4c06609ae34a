"""The practice set as a PDF, typeset by Typst (the ``typst`` package from PyPI bundles the
compiler and its fonts: no TeX installation, no system fonts, the same bytes on every machine).

The Typst source is built here:

- :func:`tex_to_typst` converts the LaTeX subset of the bank (``\\frac``, ``\\sqrt``, ``^``,
  ``_``, ``\\top``, ``\\mathrm``, ``\\cdot``, ``\\times``, Greek letters, ``bmatrix``, ...) to
  Typst math; :func:`md_to_typst` converts the Markdown around it (paragraphs, ``-``/``1.``
  lists, ``**bold**``, ``*italic*``, ``code``) to Typst markup with every special character
  escaped.
- Pictures are drawn natively as grids of coloured cells: attention-weight matrices (a
  matrix key that the problem calls attention weights, :func:`is_attention_weights`, not
  any matrix whose rows happen to sum to 1: the output ``AV`` of a one-hot ``V`` does too),
  0/1 masks (mask keys, and the causal mask a statement names), and the sinusoidal
  positional encoding (computed by the solver, ``solver.kernels.numpy_ref.sinusoidal_pe``), sized
  to fit the page, with the asked entry outlined and stated in the caption. Every figure
  carries an invisible ``metadata`` marker (``<qkv-fig>``) with its position on the page and
  its measured height, so a test can check from Typst's own layout that it lies inside the
  page.
- The questions: marks in the right margin; a name/ID line on top; under a matrix question,
  and under each part of a multi-part one, its (a)–(d) prompt and an empty grid of the
  answer's shape (a scalar part, an answer line), each with a ``<qkv-answer-space>`` marker.

The document carries no date (``date: none``) unless the sheet has one, so the same sheet
gives byte-identical PDFs.
"""

from __future__ import annotations

import math
import re
from typing import Any

from drills.sheets import MARKDOWN_INLINE, TYPE_NAMES, TYPE_RULES, info_line, key_lines, marks_label
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
from question_bank.render import num

# --------------------------------------------------------------------------------------------
# LaTeX -> Typst math

_GREEK = {
    "alpha", "beta", "gamma", "delta", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
    "pi", "rho", "sigma", "tau", "upsilon", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi",
    "Pi", "Sigma", "Phi", "Psi", "Omega",
}
_TEX_SYMBOLS = {
    "epsilon": "epsilon.alt", "varepsilon": "epsilon", "phi": "phi.alt", "varphi": "phi",
    "top": "top", "times": "times", "cdot": "dot.op", "approx": "approx", "le": "<=", "leq": "<=",
    "ge": ">=", "geq": ">=", "ne": "!=", "neq": "!=", "infty": "infinity", "in": "in", "to": "->",
    "rightarrow": "->", "Rightarrow": "=>", "mapsto": "|->", "ldots": "dots", "dots": "dots",
    "cdots": "dots.c", "sum": "sum", "prod": "product", "odot": "⊙", "pm": "plus.minus",
    "mid": "bar.v", "sim": "tilde.op", "propto": "prop", "circ": "compose", "neg": "not",
    "exp": "exp", "sin": "sin", "cos": "cos", "log": "log", "ln": "ln", "max": "max", "min": "min",
    "arg": "arg", "tan": "tan", "lVert": "‖", "rVert": "‖", "lfloor": "⌊", "rfloor": "⌋",
    "lceil": "⌈", "rceil": "⌉", "quad": "quad", "qquad": "wide", "partial": "partial", "nabla": "nabla",
    "forall": "forall", "exists": "exists", "cap": "∩", "cup": "∪", "subset": "subset",
    "langle": "⟨", "rangle": "⟩", "ell": "ell",
}
_SPACES = {",": "thin", ";": "med", ":": "med", " ": "space", "!": "", "{": "\\{", "}": "\\}", "%": "\\%",
           "_": "\\_", "#": "\\#", "&": "\\&", "$": "\\$", "|": "‖"}
_DROP = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "displaystyle",
         "textstyle", "limits", "nolimits"}
_WRAP = {"mathbf": "bold", "boldsymbol": "bold", "bm": "bold", "mathit": "italic", "mathcal": "cal",
         "mathbb": "bb", "hat": "hat", "widehat": "hat", "tilde": "tilde", "widetilde": "tilde",
         "bar": "overline", "overline": "overline", "vec": "arrow", "underline": "underline"}
_TEXTLIKE = {"mathrm", "text", "textrm", "textbf", "texttt", "textit", "mathsf", "mathtt", "operatorname"}
_MATRIX_DELIMS = {"bmatrix": '"["', "pmatrix": '"("', "vmatrix": '"|"', "Bmatrix": '"{"', "matrix": "#none",
                  "smallmatrix": "#none"}


def _brace_group(s: str, i: int) -> tuple[str, int]:
    """The content of the brace group at s[i] (``s[i] == "{"``) and the index after it."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif s[j] == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return s[i + 1 : j], j + 1
    return s[i + 1 :], len(s)


def _arg(s: str, i: int) -> tuple[str, int]:
    """One argument: a brace group, a control word, or one character (spaces skipped)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        return "", i
    if s[i] == "{":
        return _brace_group(s, i)
    if s[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", s[i:])
        tok = m.group(0) if m else "\\"
        return tok, i + len(tok)
    return s[i], i + 1


def _split_top(s: str, sep: str) -> list[str]:
    """Split at ``sep`` outside brace groups (``sep`` is ``&`` or ``\\\\``)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c == "\\" and s.startswith(sep, i) and depth == 0 and sep == "\\\\":
            out.append(s[start:i])
            i += 2
            start = i
            continue
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == sep and depth == 0:
            out.append(s[start:i])
            start = i + 1
        i += 1
    out.append(s[start:])
    return out


def _typst_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tex_to_typst(s: str, *, in_args: bool = False) -> str:
    """Typst math for a LaTeX math string of the bank's subset. ``in_args``: the result goes
    inside a Typst function call, where ``,`` and ``;`` would separate arguments."""
    out: list[str] = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            if not m:
                i += 1
                continue
            name = m.group(1)
            i += len(m.group(0))
            if name in ("frac", "tfrac", "dfrac"):
                a, i = _arg(s, i)
                b, i = _arg(s, i)
                out.append(f"frac({tex_to_typst(a, in_args=True)}, {tex_to_typst(b, in_args=True)})")
            elif name == "sqrt":
                if i < n and s[i] == "[":
                    j = s.index("]", i)
                    idx = s[i + 1 : j]
                    a, i = _arg(s, j + 1)
                    out.append(f"root({tex_to_typst(idx, in_args=True)}, {tex_to_typst(a, in_args=True)})")
                else:
                    a, i = _arg(s, i)
                    out.append(f"sqrt({tex_to_typst(a, in_args=True)})")
            elif name in _TEXTLIKE:
                a, i = _arg(s, i)
                if name == "operatorname":
                    out.append(f"op({_typst_str(a)})")
                elif re.fullmatch(r"[^\\$^_{}]*", a):
                    fn = {"textbf": "bold", "texttt": "mono", "textit": "italic", "mathsf": "sans", "mathtt": "mono"}.get(name)
                    inner = f"upright({_typst_str(a)})" if fn != "italic" else f"italic({_typst_str(a)})"
                    out.append(f"{fn}({inner})" if fn and fn != "italic" else inner)
                else:
                    out.append(f"upright({tex_to_typst(a, in_args=True)})")
            elif name in _WRAP:
                a, i = _arg(s, i)
                out.append(f"{_WRAP[name]}({tex_to_typst(a, in_args=True)})")
            elif name == "begin":
                env, i = _arg(s, i)
                end = s.find("\\end{" + env + "}", i)
                body = s[i : end if end >= 0 else n]
                i = end + len("\\end{" + env + "}") if end >= 0 else n
                rows = [r for r in _split_top(body, "\\\\") if r.strip()]
                cells = [[tex_to_typst(c.strip(), in_args=True) or "" for c in _split_top(r, "&")] for r in rows]
                if env in _MATRIX_DELIMS:
                    inner = "; ".join(", ".join(c if c else "#none" for c in row) for row in cells)
                    out.append(f"mat(delim: {_MATRIX_DELIMS[env]}, {inner})")
                elif env == "cases":
                    out.append("cases(" + ", ".join(" & ".join(row) for row in cells) + ")")
                else:  # aligned, align*, array: lines with alignment points
                    out.append(" \\ ".join(" & ".join(row) for row in cells))
            elif name in _DROP:
                if name in ("left", "right") and i < n and s[i] == ".":
                    i += 1
            elif name in _GREEK:
                out.append(name)
            elif name in _TEX_SYMBOLS:
                out.append(_TEX_SYMBOLS[name])
            elif name in _SPACES:
                out.append(_SPACES[name])
            elif name == "\\":
                out.append("\\ ")
            elif name == "mathbb":
                a, i = _arg(s, i)
                out.append(f"bb({tex_to_typst(a, in_args=True)})")
            else:  # an unknown command: its name, upright, rather than a Typst error
                out.append(f"upright({_typst_str(name)})")
            out.append(" ")
        elif c in "^_":
            a, i = _arg(s, i + 1)
            conv = tex_to_typst(a, in_args=True).strip()
            if re.fullmatch(r"[A-Za-z0-9]|[0-9]+|top|[a-z]+", conv) and " " not in conv:
                out.append(f"{c}{conv} ")
            else:
                out.append(f"{c}({conv}) ")
        elif c == "{":
            a, i = _brace_group(s, i)
            inner = tex_to_typst(a, in_args=in_args)
            # a group that is just a comma ({,} in 12{,}288) is a thousands separator: no space
            if a in (",", "{,}"):
                if out and out[-1] == " ":
                    out.pop()
                out.append("\\," if in_args else ",")
            else:
                out.append(inner)
        elif c == "}":
            i += 1
        elif c.isdigit() and not c.isascii():  # ², ٣ (Arabic-Indic), …: a character, as text
            out.append(_typst_str(c) + " ")
            i += 1
        elif c.isdigit():
            m = re.match(r"[0-9]{1,3}(?:(?:\{,\}|,)[0-9]{3})+(?![0-9])|[0-9]+(?:\.[0-9]+)?", s[i:])
            assert m is not None
            tok = m.group(0)
            out.append((_typst_str(tok.replace("{,}", ",")) if "," in tok else tok) + " ")
            i += len(tok)
        elif c.isalpha():
            # a whitespace-separated word of five or more letters ("70 billion") is prose: upright
            m = re.match(r"[A-Za-z]{5,}(?![A-Za-z])", s[i:])
            if m and (i == 0 or s[i - 1] in " ~") and c.isascii():
                out.append(f"upright({_typst_str(m.group(0))}) ")
                i += len(m.group(0))
                continue
            out.append(c + " ")
            i += 1
        elif c in " \t\n":
            i += 1
        elif c in ",;" and in_args:
            out.append("\\" + c + " ")
            i += 1
        elif c in "/#\"$*@&`\\":
            out.append("\\" + c + " ") if c != "&" else out.append(" & ")
            i += 1
        elif c == "~":
            out.append(" space ")
            i += 1
        elif c == "'":
            if out and out[-1] == " ":
                out.pop()
            out.append("' ")
            i += 1
        else:
            out.append(c + " ")
            i += 1
    text = "".join(out)
    return re.sub(r" {2,}", " ", text).strip()


# --------------------------------------------------------------------------------------------
# Markdown -> Typst markup

_MARKUP_SPECIAL = set("\\*_#$@<>`[]~/=+-'\"")


def escape_markup(text: str) -> str:
    """Plain text for Typst markup: every character with a meaning is escaped."""
    out = []
    for ch in text:
        if ch in _MARKUP_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _raw(code: str) -> str:
    return "#raw(" + _typst_str(code) + ")"


#: Markdown's backslash escape of ASCII punctuation (``W\_gate``, ``\*``): the character itself
_MD_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def _md_text(text: str) -> str:
    r"""Plain Markdown text as Typst markup: Markdown's escapes undone (issue 27: ``W\_gate`` printed
    its backslash), then every character with a meaning in Typst escaped."""
    return escape_markup(_MD_ESCAPED.sub(r"\1", text))


def inline_to_typst(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in MARKDOWN_INLINE.finditer(text):
        out.append(_md_text(text[pos : m.start()]))
        if m.group("code"):
            out.append(_raw(m.group("code")[1:-1]))
        elif m.group("dmath") is not None:
            out.append("#fit[$ " + tex_to_typst(m.group("dbody")) + " $]")
        elif m.group("imath") is not None:
            body = tex_to_typst(m.group("ibody"))
            if "mat(" in body:  # a matrix in running text at full size
                body = f"display({body})"
            out.append("$" + body + "$" if body else "")
        elif m.group("bold") is not None:
            out.append("#strong[" + inline_to_typst(m.group("bbody")) + "]")
        else:
            out.append("#emph[" + inline_to_typst(m.group("ibody2")) + "]")
        pos = m.end()
    out.append(_md_text(text[pos:]))
    return "".join(out)


def md_to_typst(md: str) -> str:
    """Typst markup for the bank's Markdown: paragraphs, display math, lists, quotes (display math uses
    ``fit`` of :data:`PREAMBLE`)."""
    lines = md.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("$$") and not (stripped.endswith("$$") and len(stripped) > 4):
            body = [stripped[2:]]
            i += 1
            while i < len(lines) and not lines[i].strip().endswith("$$"):
                body.append(lines[i])
                i += 1
            if i < len(lines):
                body.append(lines[i].strip()[:-2])
            out.append("#fit[$ " + tex_to_typst("\n".join(body)) + " $]")
            i += 1
            continue
        if stripped.startswith("```"):
            code = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            out.append("#raw(block: true, " + _typst_str("\n".join(code)) + ")")
            i += 1
            continue
        m = re.match(r"(\s*)([-*]|\d+\.)\s+(.*)", line)
        if m:
            indent = "  " * (len(m.group(1)) // 2)
            marker = "-" if m.group(2) in "-*" else "+"
            out.append(f"{indent}{marker} {inline_to_typst(m.group(3))}")
        elif stripped.startswith(">"):
            out.append("#quote(block: true)[" + inline_to_typst(stripped.lstrip("> ")) + "]")
        else:
            out.append(inline_to_typst(line))
        i += 1
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# pictures


def _f(x: float, digits: int = 4) -> str:
    if math.isinf(x):
        return "-1e9" if x < 0 else "1e9"
    s = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _array(rows: list[list[float]], digits: int = 4) -> str:
    def tup(items: list[str]) -> str:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    return tup([tup([_f(float(x), digits) for x in r]) for r in rows])


def _floats(rows: Any) -> list[list[float]] | None:
    try:
        out = [[float(x) for x in r] for r in rows]
    except (TypeError, ValueError):
        return None
    return out if out and all(len(r) == len(out[0]) for r in out) else None


def is_weight_matrix(rows: Any) -> bool:
    """Every row a probability distribution over at least two keys (an attention-weight matrix)."""
    m = _floats(rows)
    if m is None or len(m[0]) < 2:
        return False
    return all(all(-1e-9 <= x <= 1 + 1e-9 for x in r) and abs(sum(r) - 1) < 1e-6 for r in m)


_WEIGHT_WORDS = re.compile(r"weight|softmax|heatmap", re.I)
_NOT_WEIGHTS = re.compile(r"output|multiply|\bA ?V\b|\$AV\$|by \$V\$|Attention\(Q", re.I)


def is_attention_weights(p: Problem, label: str, rows: Any) -> bool:
    """The matrix is attention weights: the problem (or the part) says so, and every row is a
    probability distribution. Rows summing to 1 alone do not make weights (O = AV with a
    one-hot V has them too)."""
    if not is_weight_matrix(rows):
        return False
    if label:
        pt = next((pt for pt in p.parts if f"({pt.label})" == label), None)
        text = pt.prompt_md if pt is not None else ""
    else:
        text = " ".join((p.id, p.statement_md))
    return bool(_WEIGHT_WORDS.search(text)) and not _NOT_WEIGHTS.search(text)


def mask_like(p: Problem, rows: Any) -> bool:
    m = _floats(rows)
    if m is None or len(m) < 2 or len(m[0]) < 2:
        return False
    if not all(x in (0.0, 1.0) or x == -math.inf for r in m for x in r):
        return False
    words = " ".join((p.id, p.topic, *p.tags)).lower()
    return "mask" in words or "convention" in p.given


def pictures(p: Problem) -> tuple[list[str], list[str]]:
    """Typst pictures for a problem: ``(in the statement, in the solution)``."""
    stmt: list[str] = []
    sol: list[str] = []
    g = p.given
    if (n := causal_size(p)) is not None:
        from solver.kernels.masks import causal_mask

        keep = causal_mask(n).astype(float).tolist()
        stmt.append(f"#maskmap({_array(keep, 0)}, {_array(keep, 0)}, caption: [causal mask: query $i$ may attend to key $j <= i$])")
    for label, key in key_lines(p):
        if not isinstance(key, MatrixKey):
            continue
        lab = f" {label}" if label else ""
        if mask_like(p, key.value):
            vals = [list(r) for r in key.value]
            if any(x == -math.inf for r in vals for x in r):
                keep = [[float(x != -math.inf) for x in r] for r in vals]
            elif g.get("convention") == "block":
                keep = [[float(x == 0) for x in r] for r in vals]
            else:
                keep = [[float(x == 1) for x in r] for r in vals]
            sol.append(f"#maskmap({_array(vals, 0)}, {_array(keep, 0)}, caption: [the mask{escape_markup(lab)}: "
                       "green = may attend, dark = blocked; row $i$ is query $i$])")
        elif is_attention_weights(p, label, key.value):
            sol.append(f"#heat({_array([list(r) for r in key.value], 3)}, caption: [attention weights{escape_markup(lab)}: "
                       f"row $i$ is query $i$, column $j$ key $j$])")
    if (d := pe_dims(p)) is not None:
        sol.append(_pe_picture(g, d))
    if p.family == "parallel.pipeline_bubble" and {"stages", "microbatches", "schedule"} <= set(g):
        sol.append(_pipeline_picture(g))  # issue 29: the schedule the answer is about
    if p.family == "hardware.matmul_bound" and {"hw", "batch", "d_in", "d_out"} <= set(g):
        sol.append(_roofline_picture(g))  # issue 29: the matmul on its chip's roofline
    if p.family == "hardware.zero_memory" and {"params", "gpus", "stage"} <= set(g):
        sol.append(_zero_picture(g))  # issue 29: where the bytes go under each ZeRO stage
    return stmt, sol


def _zero_picture(g: dict[str, Any]) -> str:
    """Model states per GPU under ZeRO stages 0-3 (drills.plots.memory, drawn by Typst)."""
    from drills.plots import memory as picture
    from solver.systems.training import zero

    bars = []
    for s in range(4):
        b = zero(g["params"], g["gpus"], s).breakdown
        bars.append((f"stage {s}" + (" (asked)" if s == g["stage"] else ""),
                     [("weights", b["weights_bytes"]), ("gradients", b["gradients_bytes"]),
                      ("optimizer states", b["optimizer_bytes"])]))
    return picture.typst(picture.data(f"model states per GPU, {g['params']:,} parameters on {g['gpus']} GPUs "
                                      "(mixed-precision Adam)", bars, None))


def _roofline_picture(g: dict[str, Any]) -> str:
    """The chip's roofline with the problem's bf16 matmul on it (drills.plots.roofline, drawn by Typst)."""
    from drills.plots import roofline as picture
    from solver.systems.chips import resolve_chip
    from solver.systems.roofline import matmul, roofline

    chip = resolve_chip(g["hw"], "bf16")
    r = matmul(g["batch"], g["d_in"], g["d_out"], dtype="bf16", chip=chip)
    return picture.typst(picture.data([(g["hw"], roofline(chip))],
                                      [(f"[{g['batch']},{g['d_in']}]@[{g['d_in']},{g['d_out']}]", r)]))


def _pipeline_picture(g: dict[str, Any]) -> str:
    """The pipeline schedule's timeline (drills.plots.pipeline, drawn by Typst: no plotting library)."""
    from drills.plots import pipeline as picture
    from solver.systems.parallelism import pipeline_bubble
    from solver.systems.pipeline_schedule import pipeline_timeline

    p, m, schedule, v = g["stages"], g["microbatches"], g["schedule"], g.get("chunks", 1)
    return picture.typst(picture.data(pipeline_timeline(p, m, schedule=schedule, chunks=v),
                                      pipeline_bubble(p, m, schedule=schedule, chunks=v)))
def causal_size(p: Problem) -> int | None:
    """The size of the causal mask a statement pictures (``given["mask"] == "causal"``), or None."""
    g = p.given
    if g.get("mask") == "causal":
        n = len(g.get("q") or g.get("scores") or [])
        if n >= 2:
            return n
    return None


def pe_dims(p: Problem) -> int | None:
    """d_model of a sinusoidal-PE problem whose solution pictures the PE (not RoPE, not learned), or None."""
    d = p.given.get("d_model")
    if p.topic == "positional" and isinstance(d, int) and d >= 2 and "rope" not in p.id and "learned" not in p.id:
        return d
    return None


#: the largest picture, in points (A4 with 2 cm margins is 481 × 728 pt: room is left for the caption)
PICTURE_WIDTH, PICTURE_HEIGHT = 440.0, 380.0


#: the most positions (rows) and dimensions (columns) a PE heatmap shows
PE_MAX_POSITIONS, PE_MAX_DIMS = 48, 64


def pe_window(g: dict[str, Any], d: int) -> tuple[int, int, int, int, tuple[int, int] | None]:
    """``(first position shown, positions shown, first dimension shown, dimensions shown, the asked
    (pos, dim) or None)``: at least 16 and at most 48 positions, starting at 0 when the asked ones
    fit, else a window around the asked position (issue 27: PE(50, ·) was neither shown nor
    outlined); at most 64 dimensions, a window that takes in the asked one. The asked entry, when
    the problem names one, is always inside the window."""
    pos, dim = g.get("pos", g.get("p")), g.get("dim")
    if all(isinstance(g.get(k), int) for k in ("p", "k", "i")) and "dim" not in g:
        # positional.pe_rotation: from PE(p, 2i), PE(p, 2i+1) to the asked PE(p + k, 2i)
        pos, dim = g["p"] + g["k"], 2 * g["i"]
    poss = [int(x) for x in g.get("positions") or [] if isinstance(x, int | float)]
    top = max([int(pos)] if isinstance(pos, int | float) else poss or [0])
    n_pos = min(max(16, top + 1), PE_MAX_POSITIONS)
    p0 = 0
    if top >= n_pos:  # a window of 48 positions with the asked ones in it
        if not isinstance(pos, int | float) and poss and max(poss) - min(poss) < PE_MAX_POSITIONS:
            p0 = min(poss)
        else:  # the asked position in the window's last quarter (context above it)
            p0 = top - (3 * PE_MAX_POSITIONS) // 4
    n_dim = min(d, PE_MAX_DIMS)
    d0 = 0
    if isinstance(dim, int) and dim >= n_dim:
        d0 = min(d - n_dim, (dim // 2) * 2 - n_dim // 2)  # an even start keeps sin/cos pairs together
    asked = (int(pos), int(dim)) if isinstance(pos, int) and isinstance(dim, int) else None
    return p0, n_pos, d0, n_dim, asked


def pe_values(g: dict[str, Any], d: int):
    """The PE heatmap's values (rows: positions p0.., columns: dimensions d0..) and its window."""
    from solver.kernels.numpy_ref import sinusoidal_pe

    p0, n_pos, d0, n_dim, asked = pe_window(g, d)
    return sinusoidal_pe(p0 + n_pos, d)[p0:, d0 : d0 + n_dim], (p0, n_pos, d0, n_dim, asked)


def _pe_picture(g: dict[str, Any], d: int) -> str:
    pe, (p0, n_pos, d0, n_dim, asked) = pe_values(g, d)
    cell = min(16.0, PICTURE_WIDTH / n_dim, PICTURE_HEIGHT / n_pos)
    mark = f"({asked[0] - p0}, {asked[1] - d0})" if asked else "none"
    shown = "all" if n_dim == d else f"dimensions {d0} to {d0 + n_dim - 1} of {d}"
    what = f"; outlined: $P E({asked[0]}, {asked[1]}) = {float(pe[asked[0] - p0, asked[1] - d0]):.3f}$" if asked else ""
    return (f"#heat({_array(pe.tolist(), 3)}, lo: -1.0, hi: 1.0, cell: {cell:.2f}pt, labels: {'true' if cell >= 16 else 'false'}, "
            f"diverging: true, mark: {mark}, "
            f"caption: [sinusoidal PE: positions {p0} to {p0 + n_pos - 1} (rows), {shown} (columns); "
            f"red $+1$, blue $-1${what}])")


# --------------------------------------------------------------------------------------------
# the document

PREAMBLE = r"""
#let figmark(body) = layout(size => {
  let h = measure(block(width: size.width, body)).height
  block(breakable: false, width: 100%)[#context [#metadata((at: here().position(), height: h))<qkv-fig>]#body]
})
#let heat(data, lo: 0.0, hi: 1.0, cell: 16pt, labels: true, diverging: false, mark: none, caption: none) = {
  let g = if diverging { gradient.linear(..color.map.vlag) } else { gradient.linear(white, rgb("#1d4f91")) }
  let ncol = data.at(0).len()
  let cells = ()
  for (r, row) in data.enumerate() {
    for (c, v) in row.enumerate() {
      let t = calc.clamp((v - lo) / (hi - lo), 0, 1)
      let hit = mark != none and mark.at(0) == r and mark.at(1) == c
      cells.push(box(width: cell, height: cell, fill: g.sample(t * 100%),
        stroke: if hit { 1.2pt + black } else { none },
        if labels { align(center + horizon, text(size: 6.5pt, fill: if (diverging and calc.abs(t - 0.5) > 0.3) or (not diverging and t > 0.55) { white } else { black },
          str(calc.round(v, digits: 2)))) }))
    }
  }
  figmark(figure(grid(columns: (cell,) * ncol, rows: cell, ..cells), caption: caption, kind: "picture", supplement: none, numbering: none))
}
#let maskmap(data, keep, caption: none) = {
  let ncol = data.at(0).len()
  let shown(v) = if v < -1e8 { "−∞" } else { str(v) }
  let f = figure(grid(columns: (13pt,) * ncol, rows: 13pt, stroke: 0.4pt + gray,
    ..data.flatten().zip(keep.flatten()).map(((v, k)) => box(width: 13pt, height: 13pt,
      fill: if k > 0.5 { rgb("#b7e1a1") } else { rgb("#444444") },
      align(center + horizon, text(size: 6.5pt, fill: if k > 0.5 { black } else { white }, shown(v)))))),
    caption: caption, kind: "picture", supplement: none, numbering: none)
  figmark(f)
}
#let fit(body) = layout(size => {
  // a display equation or a key wider than its line (a 16-entry vector) is scaled down to fit it
  let w = measure(body).width
  if w > size.width { scale(x: size.width / w * 100%, y: size.width / w * 100%, reflow: true, body) } else { body }
})
#let question(num, marks, kind, body) = block(breakable: true, above: 1.1em, below: 0.6em, width: 100%)[
  #block(sticky: true, above: 0pt, below: 0.5em, width: 100%)[
    // the marks label sits in the margin of the heading's own (sticky) block: never alone at a page foot
    #place(top + right, dx: 1.95cm, box(width: 1.8cm, align(right, text(size: 8.5pt, weight: "bold")[\[#marks\]#context [#metadata((num, here().page()))<qkv-marks>]])))

    #text(weight: "bold")[Q#num.] #h(0.4em) #text(size: 8.5pt, fill: rgb("#555555"))[#kind]#context [#metadata((num, here().page()))<qkv-heading>]]
  #context [#metadata((num, here().page()))<qkv-after-heading>]
  #body
]
#let options(..items) = grid(columns: 1, row-gutter: 0.35em, ..items.pos().enumerate().map(((i, it)) =>
  grid(columns: (2em, 1fr), ..([(#"abcdefghij".at(i))], it).map(c => block(above: 0pt, below: 0pt, inset: (y: 0.3em), c)))))
#let answerline = [#v(0.3em) Answer: #box(width: 5cm, stroke: (bottom: 0.5pt + gray))[#h(1pt)]]
#let qkvspace(q, part, rows, cols) = context [#metadata((q: q, part: part, rows: rows, cols: cols, page: here().page()))<qkv-answer-space>]
#let stmtend(q) = context [#metadata((q, here().page()))<qkv-statement-end>]
#let answergrid(q, part, rows, cols, prompt) = block(breakable: false, above: 0.7em, below: 0.5em)[
  #qkvspace(q, part, rows, cols)
  #if prompt != none [#prompt #v(0.15em)]
  #let w = calc.min(1.5cm, 15cm / cols)
  #grid(columns: (w,) * cols, rows: (0.75cm,) * rows, stroke: 0.5pt + rgb("#888888"), ..((none,) * (rows * cols)))
]
#let partline(q, part, prompt) = block(breakable: false, above: 0.7em, below: 0.4em)[
  #qkvspace(q, part, 1, 1)
  #prompt #h(0.6em) Answer: #box(width: 4cm, stroke: (bottom: 0.5pt + gray))[#h(1pt)]
]
#let nameline = block(above: 0.8em, below: 0.8em, grid(columns: (auto, 1fr, auto, 5cm), column-gutter: 0.5em, align: bottom,
  [Name:], box(width: 100%, stroke: (bottom: 0.5pt + gray))[#h(1pt)], [ID:], box(width: 100%, stroke: (bottom: 0.5pt + gray))[#h(1pt)]))
"""


def _key_typst(key: Any, options_text: list[str]) -> str:
    if isinstance(key, MatrixKey):
        rows = "; ".join(", ".join(num(x, key.decimals) .replace("∞", "infinity") for x in r) for r in key.value)
        return f'#fit[$mat(delim: "[", {rows})$]'
    if isinstance(key, ChoiceKey):
        return escape_markup(", ".join(f"({LETTERS[i]})" for i in sorted(key.correct)))
    return escape_markup(describe_key(key))


def _last_paragraph(typst: str) -> tuple[str, str]:
    """``(everything before, the last paragraph)`` of Typst markup from :func:`md_to_typst`: split
    at the last blank line that is not inside a raw block or a content block."""
    for k in range(len(typst) - 1, -1, -1):
        if typst.startswith("\n\n", k):
            head = typst[:k]
            if _balanced(head):
                return head, typst[k + 2:]
    return "", typst


def _balanced(t: str) -> bool:
    """No ``[``/``(`` left open in ``t`` (escaped brackets and strings aside)."""
    depth, k, in_str = 0, 0, False
    while k < len(t):
        c = t[k]
        if c == "\\":
            k += 2
            continue
        if c == '"':
            in_str = not in_str
        elif not in_str and c in "[(":
            depth += 1
        elif not in_str and c in "])":
            depth -= 1
        k += 1
    return depth == 0 and not in_str


def _question(i: int, p: Problem) -> str:
    stmt, _ = pictures(p)
    kind = f"{marks_label(p.marks)} · {TYPE_NAMES[p.type]}: {TYPE_RULES[p.type]}"
    # issue 27: the statement's last paragraph, its pictures and the first answer (options, a line, a
    # grid) form one unbreakable block: no "Answer:" line or grid alone at the top of a page
    head, last = _last_paragraph(md_to_typst(p.statement_md.strip()))
    if p.options and not stmt and len(p.statement_text) + sum(map(len, p.options_text or p.options)) < 2500:
        # issue 38: a choice question that fits on a page is one block with its options (the statement's
        # first paragraphs on one page and the options on the next split 3 questions of 30)
        head, last = "", (head + "\n\n" + last if head else last)
    body = [head] if head else []
    keep = [last + f"#stmtend({i})", *stmt]
    if p.options:
        body.append("#options(" + ", ".join("[" + inline_to_typst(o) + "]" for o in p.options) + ")")
    elif p.parts:
        for pt in p.parts:
            prompt = f"[({escape_markup(pt.label)}) {inline_to_typst(pt.prompt_md)}]"
            body.append(_space(i, pt.label, pt.key, prompt))
    elif isinstance(p.key, MatrixKey):
        body.append(_space(i, "", p.key, "none"))
    elif p.type in ("nat", "integer"):
        body.append(f"#qkvspace({i}, \"\", 1, 1)#answerline")
    answers = body[1 if head else 0:]
    body = body[: 1 if head else 0]
    first, rest = answers[:1], answers[1:]
    body.append("#block(breakable: false, width: 100%)[\n" + "\n\n".join(keep + first) + "\n]")
    body += rest
    return f"#question({i}, {_typst_str(marks_label(p.marks))}, {_typst_str(kind.split(' · ', 1)[1])})[\n" + "\n\n".join(body) + "\n]\n"


def _space(i: int, label: str, key: Any, prompt: str) -> str:
    """An answer grid of the key's shape (a matrix), else an answer line."""
    if isinstance(key, MatrixKey):
        return f"#answergrid({i}, {_typst_str(label)}, {len(key.value)}, {len(key.value[0])}, {prompt})"
    return f"#partline({i}, {_typst_str(label)}, {prompt})"


def _answers(sheet) -> tuple[list[str], list[int]]:
    """The answer key and worked solutions as items joined by blank lines, and the items where a
    chunk of a long document may start: the page break before the worked solutions, then each
    solution's heading but the first."""
    out = ["= Answer key", ""]
    heads: list[int] = []
    cells = []
    for i, p in sheet.numbered():
        ans = " #h(0.8em) ".join((escape_markup(lab) + " " if lab else "") + _key_typst(k, p.options_text) for lab, k in key_lines(p))
        cells.append(f"[Q{i}], [{p.marks}], [{escape_markup(TYPE_NAMES[p.type])}], [{ans}]")
    out.append("#table(columns: (auto, auto, auto, 1fr), stroke: 0.4pt + gray, inset: 5pt, align: left + horizon,\n"
               "  table.header([*Q*], [*Marks*], [*Type*], [*Answer*]),\n  " + ",\n  ".join(cells) + ")")
    heads.append(len(out) + 1)  # the worked solutions start a page (a chunk may start there)
    out += ["", "#pagebreak(weak: true)", "= Worked solutions", ""]
    for i, p in sheet.numbered():
        _, sol_pics = pictures(p)
        src = "generated" if p.source == "generated" else f"{p.source_label}, {source_shown(p)}"
        if i > 1:
            heads.append(len(out))
        out.append(f"== Q{i} #h(0.5em) #text(size: 8pt, weight: \"regular\", fill: rgb(\"#666666\"))[{escape_markup(p.id)} · {escape_markup(src)}]"
                   f"#context [#metadata(({i}, here().page()))<qkv-heading>]")
        # the heading is sticky; this marker, at the start of what follows it, lets a test check they share a page
        # on a line of its own: a solution that opens with a list must start its line with "- " (issue 27)
        out.append(f"#context [#metadata(({i}, here().page()))<qkv-after-heading>]\n" + md_to_typst(p.solution_md.strip()))
        if extra := extra_explanation(p):
            out.append(md_to_typst(extra))
        out += sol_pics
        if p.misconceptions:
            out.append("*Typical mistakes.*\n" + "\n".join(
                f"- {inline_to_typst(m.label)}: {inline_to_typst(m.feedback)}" for m in p.misconceptions))
        for e in p.errata:
            out.append(f"#block(inset: (left: 6pt), stroke: (left: 1.5pt + rgb(\"#c0392b\")))[*{erratum_heading(e)}* ({escape_markup(erratum_place(p, e))}): "
                       f"printed {escape_markup(e.printed)}; exact {escape_markup(e.exact)}. {escape_markup(e.reason)}]")
        out.append("")
    return out, heads


def typst_source(sheet, version: str) -> str:
    return "".join(typst_pieces(sheet, version)[0])


def typst_pieces(sheet, version: str) -> tuple[list[str], int, set[int], list[int]]:
    """The Typst source of the sheet as pieces (their concatenation is the source), the number of
    pieces that only set things up (no content: every chunk of a long document starts with them),
    the pieces where a chunk may start (:mod:`drills.sheets.pdf_chunks`): a question that
    follows a question, a worked solution that follows a solution; and per piece, how many
    ``<qkv-heading>`` markers it holds (one per question and per solution), plus 2 where the piece
    starts a page whatever comes before (the worked solutions, after a page break)."""
    title = sheet.title + (": answers" if version == "answers" else "")
    date = "none"
    parts = [
        f"#set document(title: {_typst_str(title)}, author: (), date: {date})",
        "#set page(paper: \"a4\", margin: (x: 2cm, y: 2cm), numbering: \"1 / 1\", "
        f"header: context {{ if counter(page).get().first() > 1 [#text(size: 8pt, fill: gray)[{escape_markup(title)}]] }})",
        "#set text(font: \"Libertinus Serif\", size: 10.5pt, lang: \"en\")",
        "#set par(justify: false, leading: 0.6em)",
        "#show raw: set text(font: \"DejaVu Sans Mono\", size: 8.5pt)",
        "#show heading.where(level: 1): set block(above: 1.4em, below: 0.8em)",
        "#show heading: set block(sticky: true)",  # a heading never ends a page: it goes with what follows
        PREAMBLE,
    ]
    head = len(parts)
    starts: set[int] = set()
    heading_at: set[int] = set()  # the pieces holding one <qkv-heading> marker
    new_page: set[int] = set()  # the pieces that start a page whatever comes before
    parts.append(f"#align(center)[#text(size: 17pt, weight: \"bold\")[{escape_markup(title)}]]")
    info = info_line(sheet)
    parts.append(f"#align(center)[#text(size: 9pt, fill: rgb(\"#555555\"))[{escape_markup(info)}]]")
    if version != "answers":
        parts.append("#text(size: 8.5pt)[MCQ: one correct option. MSQ: one or more correct options, all of them and no other. "
                     "NAT: type the number, rounded as the question asks.]")
        parts.append("#nameline")
        parts.append("#line(length: 100%, stroke: 0.4pt + gray)")
        for i, p in sheet.numbered():
            if sec := sheet.section_at(i):  # a paper's section (issue 26): its one-line heading, kept with Q{i}
                parts.append("#block(sticky: true, above: 1.4em, below: 0.7em, width: 100%)[#text(size: 11.5pt, "
                             f"weight: \"bold\")[{escape_markup(sec.heading())}]]")
            elif i > 1:
                starts.add(len(parts))
            heading_at.add(len(parts))
            parts.append(_question(i, p))
    if version in ("full", "answers"):
        if version == "full":
            parts.append("#pagebreak()")
        items, heads = _answers(sheet)
        # the items joined by blank lines, cut before each solution's heading: one piece each
        cuts = [0, *heads, len(items)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            if a:
                starts.add(len(parts))
            if a == heads[0]:
                new_page.add(len(parts))
            if a != 0 and sheet.problems:  # a solution's heading (the first: after "Worked solutions")
                heading_at.add(len(parts))
            parts.append("\n\n".join(items[a:b]) + ("\n\n" if b < len(items) else ""))
    pieces = [p + "\n" for p in parts]
    # the answers were one part: their cut pieces end in the blank line that joined them, not in "\n"
    if version in ("full", "answers"):
        n = len(pieces)
        k = n - (len(heads) + 1)
        for j in range(k, n - 1):
            pieces[j] = parts[j]
    return pieces, head, starts, [int(j in heading_at) + 2 * int(j in new_page) for j in range(len(pieces))]


def compile_typst(source: str, fmt: str = "pdf", ppi: float | None = None) -> bytes | list[bytes]:
    import typst

    kw: dict[str, Any] = {"format": fmt, "ignore_system_fonts": True}
    if ppi is not None:
        kw["ppi"] = ppi
    return typst.compile(source.encode("utf-8"), **kw)


def render(sheet, version: str) -> bytes:
    from drills.sheets import pdf_chunks

    pieces, head, starts, marks = typst_pieces(sheet, version)
    if sum(map(len, pieces[head:])) > pdf_chunks.SINGLE_MAX:  # a long sheet: in chunks, memory bounded
        return pdf_chunks.render(pieces, head, starts, marks)
    out = compile_typst("".join(pieces))
    assert isinstance(out, bytes)
    return out
