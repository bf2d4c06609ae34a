"""Rendering helpers: numbers, matrices and formulas in Markdown+LaTeX and in plain Unicode.

Families write a statement or a solution once, through a :class:`Doc`, which keeps the two
renderings side by side: ``doc.p(md)`` adds a paragraph whose Unicode text is derived from
the LaTeX by :func:`latex_to_text` (a small converter for the subset used here:
``\\sqrt{d_k}`` -> ``√dₖ``, ``QK^\\top`` -> ``QKᵀ``, ``\\frac{a}{b}`` -> ``a/b``, Greek letters,
``\\times``, ``\\cdot``, sub/superscripts), and ``doc.matrix("S", rows)`` adds a display
equation as a LaTeX ``bmatrix`` and as an aligned Unicode matrix with ⎡ ⎤ brackets.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

SUB = str.maketrans("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
SUP = str.maketrans("0123456789+-=()inT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵀ")
_SUB_OK = set("0123456789+-=()aehijklmnoprstuvx")
_SUP_OK = set("0123456789+-=()inT")

_SYMBOLS = {
    r"\top": "ᵀ", r"\times": "×", r"\cdot": "·", r"\approx": "≈", r"\le": "≤", r"\leq": "≤",
    r"\ge": "≥", r"\geq": "≥", r"\ne": "≠", r"\neq": "≠", r"\infty": "∞", r"\in": "∈",
    r"\to": "→", r"\rightarrow": "→", r"\Rightarrow": "⇒", r"\ldots": "…", r"\dots": "…",
    r"\cdots": "⋯", r"\sum": "Σ", r"\prod": "Π", r"\odot": "⊙", r"\pm": "±", r"\mid": "|",
    r"\alpha": "α", r"\beta": "β", r"\gamma": "γ", r"\delta": "δ", r"\epsilon": "ε",
    r"\varepsilon": "ε", r"\theta": "θ", r"\lambda": "λ", r"\mu": "μ", r"\sigma": "σ",
    r"\tau": "τ", r"\phi": "φ", r"\pi": "π", r"\omega": "ω", r"\Theta": "Θ", r"\Omega": "Ω",
    r"\exp": "exp", r"\sin": "sin", r"\cos": "cos", r"\log": "log", r"\ln": "ln", r"\max": "max",
    r"\min": "min", r"\quad": "  ", r"\qquad": "    ", r"\,": " ", r"\;": " ", r"\!": "",
    r"\{": "{", r"\}": "}", r"\%": "%", r"\left": "", r"\right": "", r"\big": "", r"\Big": "",
    r"\lVert": "‖", r"\rVert": "‖", r"\lfloor": "⌊", r"\rfloor": "⌋", r"\lceil": "⌈", r"\rceil": "⌉",
    r"\neg": "¬", r"\circ": "∘", r"\mapsto": "↦",
    # issue 21: commands that showed raw ("q_i \sim N(0, 1)" read "qᵢ sim N(0, 1)")
    r"\sim": "∼", r"\propto": "∝", r"\ll": "≪", r"\gg": "≫", r"\partial": "∂", r"\nabla": "∇",
    r"\forall": "∀", r"\exists": "∃", r"\div": "÷", r"\ast": "∗", r"\leftarrow": "←", r"\gets": "←",
    r"\Delta": "Δ", r"\Sigma": "Σ", r"\Lambda": "Λ", r"\Phi": "Φ", r"\Psi": "Ψ", r"\Gamma": "Γ",
    r"\psi": "ψ", r"\chi": "χ", r"\rho": "ρ", r"\eta": "η", r"\zeta": "ζ", r"\xi": "ξ", r"\kappa": "κ",
    r"\nu": "ν", r"\varphi": "φ", r"\approxeq": "≊", r"\equiv": "≡", r"\cup": "∪", r"\cap": "∩",
    r"\subseteq": "⊆", r"\subset": "⊂", r"\langle": "⟨", r"\rangle": "⟩", r"\vert": "|", r"\lvert": "|",
    r"\rvert": "|", r"\|": "‖",
}

#: Operator names set upright in LaTeX; in text they need a space from the letters around
#: them (``a\cos\phi`` -> ``a cos φ``, not ``acosφ``).
_OPERATORS = {r"\exp", r"\sin", r"\cos", r"\log", r"\ln", r"\max", r"\min"}


# --------------------------------------------------------------------------------------------
# numbers


def num(x: Any, decimals: int | None = None, *, strip: bool = False) -> str:
    """A number for display: integers as integers; otherwise ``decimals`` places (default: up
    to 4 significant decimals, trailing zeros stripped); ``-0.000`` shown as ``0.000``."""
    if isinstance(x, Fraction) and x.denominator == 1:
        x = int(x)
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int) and decimals is None:
        return str(x)
    f = float(x)
    if math.isinf(f):
        return "-∞" if f < 0 else "∞"
    if math.isnan(f):
        return "nan"
    if decimals is None:
        if f.is_integer() and abs(f) < 1e15:
            return str(int(f))
        s = f"{f:.4f}".rstrip("0").rstrip(".") if abs(f) >= 1e-3 else f"{f:.4g}"
        return "0" if s in ("-0", "") else s
    s = f"{f:.{decimals}f}"
    if strip and "." in s:
        s = s.rstrip("0").rstrip(".")
    if re.fullmatch(r"-0(\.0*)?", s):
        s = s[1:]
    return s


def frac_text(fr: Fraction) -> str:
    return str(fr.numerator) if fr.denominator == 1 else f"{fr.numerator}/{fr.denominator}"


def _cells(rows: Any, decimals: int | None, strip: bool) -> list[list[str]]:
    if hasattr(rows, "tolist") and not isinstance(rows, list | tuple):
        rows = rows.tolist()
    rows = list(rows)
    if rows and not isinstance(rows[0], list | tuple):
        rows = [rows]
    return [[num(x, decimals, strip=strip) for x in r] for r in rows]


# --------------------------------------------------------------------------------------------
# matrices


def latex_matrix(rows: Any, decimals: int | None = None, *, strip: bool = False) -> str:
    """``\\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\end{bmatrix}``; a 1-D input is one row."""
    body = r" \\ ".join(" & ".join(c.replace("∞", r"\infty") for c in r) for r in _cells(rows, decimals, strip))
    return r"\begin{bmatrix} " + body + r" \end{bmatrix}"


def text_matrix_lines(rows: Any, decimals: int | None = None, *, strip: bool = False) -> list[str]:
    """The matrix as aligned lines with ⎡ ⎢ ⎣ brackets (``[ … ]`` for one row)."""
    cells = _cells(rows, decimals, strip)
    if not cells:
        return ["[ ]"]
    widths = [max(len(r[j]) for r in cells) for j in range(len(cells[0]))]
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    if len(body) == 1:
        return [f"[ {body[0]} ]"]
    out = []
    for i, b in enumerate(body):
        lb, rb = ("⎡", "⎤") if i == 0 else ("⎣", "⎦") if i == len(body) - 1 else ("⎢", "⎥")
        out.append(f"{lb} {b} {rb}")
    return out


def text_matrix(rows: Any, decimals: int | None = None, *, strip: bool = False) -> str:
    return "\n".join(text_matrix_lines(rows, decimals, strip=strip))


def text_equation(lhs: str, *matrices_and_ops: Any, decimals: int | None = None, strip: bool = False) -> str:
    """``lhs = M₁ op M₂ …`` laid out side by side, the names on the middle line.

    Each item after ``lhs`` is either a string (an operator or a word, placed on the middle
    line) or a matrix (rows)."""
    blocks: list[list[str]] = []
    for item in ((lhs + " =") if lhs else "", *matrices_and_ops):
        if isinstance(item, str):
            blocks.append([item] if item else [])
        else:
            blocks.append(text_matrix_lines(item, decimals, strip=strip))
    blocks = [b for b in blocks if b]
    height = max(len(b) for b in blocks)
    mid = (height - 1) // 2
    cols = []
    for b in blocks:
        w = max(len(s) for s in b)
        top = mid - (len(b) - 1) // 2
        col = [" " * w] * height
        for i, s in enumerate(b):
            col[top + i] = s.ljust(w)
        cols.append(col)
    return "\n".join(" ".join(c[i] for c in cols).rstrip() for i in range(height))


# --------------------------------------------------------------------------------------------
# LaTeX -> Unicode


def _group(s: str, i: int) -> tuple[str, int]:
    """The brace group or single token starting at s[i] (spaces before it skipped, as TeX
    does: ``\\sqrt 4`` is ``\\sqrt{4}``); returns (content, next index)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i < len(s) and s[i] == "{":
        depth, j = 0, i
        while j < len(s):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return s[i + 1 : j], j + 1
            j += 1
        return s[i + 1 :], len(s)
    if i < len(s) and s[i] == "\\":
        m = re.match(r"\\[A-Za-z]+|\\.", s[i:])
        tok = m.group(0) if m else s[i]
        return tok, i + len(tok)
    return (s[i], i + 1) if i < len(s) else ("", i)


def _script(content: str, table: dict, ok: set) -> str | None:
    t = _math(content)
    if t and all(ch in ok for ch in t):
        return t.translate(table)
    return None


def _wrap(t: str) -> str:
    return t if re.fullmatch(r"[\w.√ᵀ⁰-⁹ₐ-ₜ₀-₉]+", t) else f"({t})"


#: Commands whose argument is text, not math: ``\text{lm_head}`` stays ``lm_head``.
_TEXT_ARG = (r"\text", r"\texttt", r"\textrm", r"\textit", r"\textbf", r"\mathrm", r"\operatorname", r"\mathtt")
#: Blackboard letters (``\mathbb{R}`` -> ℝ); any other letter is shown plain.
_BB = {"R": "ℝ", "E": "E", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "P": "P"}
#: Commands whose argument is math shown in another style (the style is dropped).
_MATH_ARG = (r"\mathbf", r"\mathit", r"\mathcal", r"\boldsymbol", r"\mathsf", r"\overline", r"\vec")
#: Accents kept as combining characters on a one-letter argument (``\hat x`` -> x̂, ``\tilde S`` -> S̃).
_ACCENTS = {r"\hat": "\u0302", r"\tilde": "\u0303", r"\bar": "\u0304"}

#: A bare identifier in math that LaTeX would mangle but the author meant as a name
#: (``max_seq_len``, ``lm_head``, ``d_model``): a first part of two or more letters, or a later
#: part of three or more characters. ``d_k``, ``q_ik_i``, ``h_kv`` are still subscripts.
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![A-Za-z0-9{])")


#: ``d_k`` in prose: one letter, an underscore, one subscriptable character, no more word.
_TEXT_SUB = re.compile(r"[A-Za-z]_[0-9aehijklmnoprstuvx](?![\w])")


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _is_name(word: str) -> bool:
    first, *rest = word.split("_")
    return len(first) >= 2 or any(len(r) >= 3 for r in rest)


def _math(s: str) -> str:
    """Plain Unicode for LaTeX math (the inside of ``$…$``)."""
    return _convert(s, math=True)


def _convert(s: str, *, math: bool) -> str:
    """LaTeX commands to Unicode; in ``math``, also sub/superscripts. Outside math (Markdown
    text) ``_`` and ``^`` stay as written, except a lone one-letter ``d_k``, which reads as dₖ;
    grouping braces are dropped in both."""
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            cmd = "\\" + m.group(1) if m else "\\"
            j = i + len(cmd)
            if cmd == r"\sqrt":
                arg, j = _group(s, j)
                t = _math(arg)
                out.append("√" + (t if re.fullmatch(r"[\w.ₐ-ₜ₀-₉]+", t) else f"({t})"))
            elif cmd in (r"\frac", r"\tfrac", r"\dfrac"):
                a, j = _group(s, j)
                b, j = _group(s, j)
                out.append(f"{_wrap(_math(a))}/{_wrap(_math(b))}")
            elif cmd in _TEXT_ARG:
                arg, j = _group(s, j)
                out.append(_convert(arg, math=False))
            elif cmd == r"\mathbb":
                arg, j = _group(s, j)
                out.append("".join(_BB.get(ch, ch) for ch in arg))
            elif cmd in _ACCENTS:
                arg, j = _group(s, j)
                t = _math(arg)
                out.append(t + _ACCENTS[cmd] if len(t) == 1 else t)
            elif cmd in _MATH_ARG:
                arg, j = _group(s, j)
                out.append(_math(arg))
            elif cmd == r"\begin":
                env, j = _group(s, j)
                end = s.find(r"\end{" + env + "}", j)
                body = s[j:end if end >= 0 else len(s)]
                j = (end + len(r"\end{" + env + "}")) if end >= 0 else len(s)
                rows = [r.strip() for r in body.split(r"\\") if r.strip()]
                cells = [[_math(c.strip()) for c in r.split("&")] for r in rows]
                out.append("[" + "; ".join(" ".join(r) for r in cells) + "]")
            elif cmd in _OPERATORS:
                if out and out[-1][-1:].isalnum():
                    out.append(" ")
                out.append(cmd[1:])
                k = j
                while k < len(s) and s[k] == " ":
                    k += 1
                if k < len(s) and (s[k].isalpha() or s[k] == "\\"):
                    out.append(" ")
                    j = k
            elif cmd in _SYMBOLS:
                sym = _SYMBOLS[cmd]
                out.append(sym)
                k = j
                while k < len(s) and s[k] == " ":
                    k += 1
                if math and cmd[1:].isalpha() and sym and not sym.isascii() and k > j and k < len(s) \
                        and (s[k].isalnum() or s[k] == "\\"):
                    # the space after "\cdot " only ends the command name ("\alpha x" is αx); an
                    # operator is spaced as on its left: "q\cdot k" -> q·k, "n \times d" -> n × d
                    j = k
                    if not sym.isalpha() and (i == 0 or s[i - 1] == " "):
                        out.append(" ")
            elif cmd in (r"\_", r"\$", r"\#", r"\&"):
                out.append(cmd[1])
            else:
                out.append(cmd[1:])
            i = j
        elif not math:
            if c == "_" and _TEXT_SUB.match(s, i - 1 if i else 0) and i >= 1 and (i < 2 or not _word(s[i - 2])):
                out.append(s[i + 1].translate(SUB))  # a lone "d_k" in prose reads as dₖ
                i += 2
            elif c not in "{}":  # TeX grouping ("12{,}345") is dropped as in math
                out.append(c)
                i += 1
            else:
                i += 1
        elif c.isalpha() and (i == 0 or not (s[i - 1].isalpha() or s[i - 1] == "\\")) and \
                (m := _IDENT.match(s, i)) and _is_name(m.group(0)):
            out.append(m.group(0))
            i = m.end()
        elif c in "_^":
            arg, j = _group(s, i + 1)
            table, ok = (SUB, _SUB_OK) if c == "_" else (SUP, _SUP_OK)
            if arg in (r"\top", "T", "{\\top}"):
                out.append("ᵀ")
            else:
                conv = _script(arg, table, ok)
                if conv is not None:
                    out.append(conv)
                else:
                    t = _math(arg)
                    out.append(("_" if c == "_" else "^") + (t if len(t) == 1 or re.fullmatch(r"\w+", t) and c == "_" else f"({t})"))
            i = j
        elif c in "{}":
            i += 1
        elif c == "~":
            out.append(" ")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


#: Markdown pieces: a code span (kept as written), display or inline math, or an escaped ``$``.
_MD_PIECE = re.compile(r"(`+)(.+?)\1|\$\$(.+?)\$\$|\$(.+?)\$|\\\$", re.S)


@functools.lru_cache(maxsize=8192)  # a pure function of its text; families re-render the same pieces
def latex_to_text(s: str, *, math: bool = False) -> str:
    r"""Plain Unicode for Markdown with inline LaTeX (``$…$``, ``$$…$$``); with ``math=True``,
    for a LaTeX formula without dollars (a display equation's body).

    Sub- and superscripts apply only inside math: ``$d_k$`` → ``dₖ``, ``$d_{model}$`` →
    ``d_model``, while ``max_seq_len`` in text, in a code span (kept with its backticks) or in
    ``\text{}``/``\mathrm{}``/``\texttt{}`` stays as written, and so does a bare multi-letter
    name in math that LaTeX would mangle (``$lm_head$``). ``**bold**`` marks are dropped."""
    if math:
        return _tidy(_math(s))
    out: list[str] = []
    pos = 0
    for m in _MD_PIECE.finditer(s):
        out.append(_convert(s[pos:m.start()].replace("**", ""), math=False))
        if m.group(1):
            out.append(m.group(0))
        elif m.group(3) is not None:
            out.append(_math(m.group(3)))
        elif m.group(4) is not None:
            out.append(_math(m.group(4)))
        else:
            out.append("$")
        pos = m.end()
    out.append(_convert(s[pos:].replace("**", ""), math=False))
    return _tidy("".join(out))


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r" {2,}(?=[^\s])", lambda m: m.group(0) if m.start() == 0 else " ", text)


# --------------------------------------------------------------------------------------------
# documents with two renderings


_MATH = re.compile(r"(\$\$.*?\$\$|(?<!\\)\$[^$]*?(?<!\\)\$)", re.S)


def plain_commas(md: str) -> str:
    """``{,}`` (LaTeX's thousands separator, kept tight in math) written outside ``$…$`` is a plain comma:
    Markdown, HTML and PDF print prose as typed, so "6{,}828{,}326{,}912" appeared literally (issue 38)."""
    if "{,}" not in md:
        return md
    parts = _MATH.split(md)
    return "".join(part if i % 2 else part.replace("{,}", ",") for i, part in enumerate(parts))


class Doc:
    """A statement or solution written once, rendered as Markdown+LaTeX and as Unicode text."""

    def __init__(self) -> None:
        self._md: list[str] = []
        self._text: list[str] = []

    def p(self, md: str, text: str | None = None) -> Doc:
        """A paragraph; its text is ``latex_to_text(md)`` unless given."""
        self._md.append(md)
        self._text.append(latex_to_text(md) if text is None else text)
        return self

    def eq(self, tex: str, text: str | None = None) -> Doc:
        """A display equation (``$$…$$``)."""
        self._md.append(f"$$\n{tex}\n$$")
        self._text.append("    " + (latex_to_text(tex, math=True) if text is None else text).replace("\n", "\n    "))
        return self

    def matrix(self, lhs_tex: str, rows: Any, decimals: int | None = None, *, lhs_text: str | None = None,
               strip: bool = False, rhs_tex: str = "", rhs_text: str | None = None) -> Doc:
        """``lhs = [matrix]`` as a display equation; ``rhs_tex`` is an optional trailing note."""
        tex = (f"{lhs_tex} = " if lhs_tex else "") + latex_matrix(rows, decimals, strip=strip) + (f" {rhs_tex}" if rhs_tex else "")
        lt = latex_to_text(lhs_tex, math=True) if lhs_text is None else lhs_text
        extra = (latex_to_text(rhs_tex, math=True) if rhs_text is None else rhs_text) if rhs_tex or rhs_text else ""
        items: list[Any] = [rows] + ([extra] if extra else [])
        self._md.append(f"$$\n{tex}\n$$")
        body = text_equation(lt, *items, decimals=decimals, strip=strip)
        self._text.append("    " + body.replace("\n", "\n    "))
        return self

    def bullets(self, items_md: list[str], items_text: list[str] | None = None) -> Doc:
        """A bulleted list; no items, no list (an empty one was a blank paragraph: a worked solution
        without solver steps started with blank lines)."""
        if not items_md:
            return self
        texts = items_text or [latex_to_text(m) for m in items_md]
        self._md.append("\n".join(f"- {m}" for m in items_md))
        self._text.append("\n".join(f"• {t}" for t in texts))
        return self

    def steps(self, items_md: list[str]) -> Doc:
        """A numbered list; no items, no list."""
        if not items_md:
            return self
        self._md.append("\n".join(f"{i + 1}. {m}" for i, m in enumerate(items_md)))
        self._text.append("\n".join(f"{i + 1}. {latex_to_text(m)}" for i, m in enumerate(items_md)))
        return self

    def extend(self, other: Doc) -> Doc:
        self._md.extend(other._md)
        self._text.extend(other._text)
        return self

    @property
    def md(self) -> str:
        return plain_commas("\n\n".join(b for b in self._md if b.strip()))  # an empty block is no paragraph

    @property
    def text(self) -> str:
        return "\n\n".join(b for b in self._text if b.strip())
