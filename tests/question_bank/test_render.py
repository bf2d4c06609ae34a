"""question_bank.render: LaTeX/Markdown to plain Unicode, and aligned text matrices.

Expected strings are written by hand from the rule: sub- and superscripts only inside math
(``$…$``, ``$$…$$``, or ``math=True``); names with underscores in prose, in code spans and in
``\\text{}``/``\\mathrm{}``/``\\texttt{}`` stay as written.
"""

from __future__ import annotations

import re
import tomllib

import pytest

from question_bank import curated
from question_bank.family import all_families
from question_bank.render import Doc, latex_to_text, text_matrix_lines

CASES = [
    # undelimited arguments, operator names and arrows (TeX skips the space in "\sqrt 4")
    ("$\\sqrt 4$", "√4"),
    ("$\\sqrt x$", "√x"),
    ("$a\\cos\\phi - b\\sin\\phi$", "a cos φ - b sin φ"),
    ("$(a, b) \\mapsto (b, a)$", "(a, b) ↦ (b, a)"),
    ("$\\exp(x_i)$", "exp(xᵢ)"),
    ("$\\hat x = x / \\mathrm{RMS}(x)$", "x̂ = x / RMS(x)"),
    ("$\\tilde S$", "S̃"),
    # math: subscripts, superscripts, roots, fractions, transposes
    ("$d_k$", "dₖ"),
    ("$QK^\\top/\\sqrt{d_k}$", "QKᵀ/√dₖ"),
    ("$\\frac{QK^T}{\\sqrt{d_k}}$", "QKᵀ/√dₖ"),
    ("$d_{model}$", "d_model"),
    ("$d_{model} / h$", "d_model / h"),
    ("$x_i$ and $x_{12}$", "xᵢ and x₁₂"),
    ("$10^{-6}$", "10⁻⁶"),
    ("$2^{30}$ bytes", "2³⁰ bytes"),
    ("$q_ik_i$", "qᵢkᵢ"),  # LaTeX: q_i k_i
    ("$h_{kv}$", "hₖᵥ"),
    ("$W_{xh}x_t$", "Wₓₕxₜ"),
    ("$n \\times d$", "n × d"),
    ("$\\mathrm{Var}(q\\cdot k)$", "Var(q·k)"),
    ("$\\gamma = 1$, $\\beta = 0$", "γ = 1, β = 0"),
    ("$q, k \\in \\mathbb{R}^{64}$", "q, k ∈ ℝ⁶⁴"),
    ("$\\mathbb{E}[q_i^2]$", "E[qᵢ²]"),
    # names in math that LaTeX would mangle stay names
    ("$lm_head$", "lm_head"),
    ("$max_seq_len \\times d_model$", "max_seq_len × d_model"),
    ("$\\text{lm\\_head}$", "lm_head"),
    ("$\\mathrm{max\\_seq\\_len}$", "max_seq_len"),
    ("$\\texttt{vocab_size}$", "vocab_size"),
    ("$\\text{n_heads} \\cdot d_k$", "n_heads · dₖ"),
    # prose: underscores stay; a lone one-letter d_k still reads as dₖ
    ("nn.Embedding(max_seq_len, d_model)", "nn.Embedding(max_seq_len, d_model)"),
    ("self.requires_grad_(False)", "self.requires_grad_(False)"),
    ("divide by √d_k", "divide by √dₖ"),
    ("seq_q and seq_k", "seq_q and seq_k"),
    ("10^(-0.076)", "10^(-0.076)"),
    # code spans are kept verbatim, backticks included
    ("`lm_head = nn.Linear(128, 65)`", "`lm_head = nn.Linear(128, 65)`"),
    ("`2**20` and **bold**", "`2**20` and bold"),
    ("`d_k per head`", "`d_k per head`"),
    ("``a `b` c_d``", "``a `b` c_d``"),
    # markdown and TeX leftovers
    ("~500K", "~500K"),
    ("N = 3{,}159{,}552", "N = 3,159,552"),
    ("costs \\$5 and $x^2$", "costs $5 and x²"),
    ("$$\nS = QK^\\top\n$$", "\nS = QKᵀ\n"),
    ("$Q = \\begin{bmatrix}1&0\\\\0&1\\end{bmatrix}$", "Q = [1 0; 0 1]"),
]


@pytest.mark.parametrize(("md", "text"), CASES)
def test_latex_to_text(md: str, text: str):
    assert latex_to_text(md) == text


@pytest.mark.parametrize(("tex", "text"), [
    ("d_k", "dₖ"),
    ("S/\\sqrt{d_k}", "S/√dₖ"),
    ("\\text{max\\_len} \\cdot d_{model}", "max_len · d_model"),
    ("O = AV", "O = AV"),
])
def test_math_mode(tex: str, text: str):
    assert latex_to_text(tex, math=True) == text


def test_doc_equation_and_matrix_label_are_math():
    doc = Doc().eq("x_t = W_{xh} h_{t-1}").matrix("S/\\sqrt{d_k}", [[1, 2], [3, 4]])
    lines = doc.text.split("\n")
    assert lines[0] == "    xₜ = Wₓₕ hₜ₋₁"
    assert "S/√dₖ = ⎡ 1  2 ⎤" in doc.text or "S/√dₖ = ⎣ 3  4 ⎦" in doc.text


def test_text_matrix_is_aligned():
    lines = text_matrix_lines([[1, -0.25], [10, 3]], 2)
    assert lines == ["⎡  1.00  -0.25 ⎤", "⎣ 10.00   3.00 ⎦"]
    assert len({len(s) for s in lines}) == 1


# --------------------------------------------------------------------------- over the whole bank

SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"
#: a name with an underscore and at least three letters, as written in the Markdown source
_NAME = re.compile(r"(?<![\w\\])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?!\w)")
_LATEX_CMD = re.compile(r"\\(frac|sqrt|top|times|cdot|mathrm|text|texttt|begin|end|left|right|infty|alpha|sigma)\b"
                        r"|\b(mathbb|mathrm|mathbf|operatorname|texttt|tfrac|dfrac|bmatrix)\b")


def _mangled(md: str, text: str) -> list[str]:
    """Names of the Markdown source (``max_seq_len``, ``lm_head``: an underscore, 3+ letters,
    not the LaTeX idiom ``q_ik_i`` of one-letter symbols) that the text shows with a subscript
    character in place of ``_x`` (``maxₛeqₗen``): each mangled form is the name with ``_c``
    replaced by the subscript of ``c``."""
    bad = []
    for m in _NAME.finditer(md):
        name = m.group(0)
        parts = name.split("_")
        if sum(ch.isalpha() for ch in name) < 3 or all(len(p) == 1 for p in parts) or \
                (len(parts[0]) == 1 and all(len(p) <= 2 for p in parts[1:])):
            continue
        mangled = re.sub(r"_([0-9aehijklmnoprstuvx])", lambda g: g.group(1).translate(str.maketrans(
            "0123456789aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")), name)
        if mangled != name and mangled in text:
            bad.append(f"{name} -> {mangled}")
    return bad


def _curated_texts():
    for path in curated.data_files():
        data = tomllib.loads(path.read_text())
        for it in data["item"]:
            yield it["id"], "statement", it["statement"]
            for k in ("explanation",):
                if it.get(k):
                    yield it["id"], k, it[k]
            for o in it.get("options", []):
                yield it["id"], "option", o
            for h in it.get("hints", []):
                yield it["id"], "hint", h
            for p in it.get("parts", []):
                yield it["id"], f"part {p['label']}", p["prompt"]


def test_mangled_check_catches_the_old_bug():
    assert _mangled("`nn.Embedding(max_seq_len, d_model)`", "nn.Embedding(maxₛeqₗen, dₘodel)") == \
        ["max_seq_len -> maxₛeqₗen", "d_model -> dₘodel"]
    assert _mangled("$q_ik_i$", "qᵢkᵢ") == []


def test_no_curated_text_mangles_a_name():
    bad = []
    for iid, where, md in _curated_texts():
        text = latex_to_text(md)
        bad += [f"{iid} {where}: {b}" for b in _mangled(md, text)]
        assert not _LATEX_CMD.search(text), (iid, where, text)
        assert "$" not in text.replace("\\$", ""), (iid, where, text)
    assert not bad, "\n".join(bad)


def test_built_curated_statements_are_clean():
    """What the quiz shows (``statement_text``, ``options_text``, prompts) after the loader."""
    by_id = {}
    for iid, _, md in _curated_texts():
        by_id.setdefault(iid, []).append(md)
    for p in curated.load_curated():
        shown = "\n".join([p.statement_text, *p.options_text, *(pt.prompt_text for pt in p.parts)])
        for md in by_id[p.id]:
            assert not _mangled(md, shown), (p.id, _mangled(md, shown))
        assert not _LATEX_CMD.search(shown), (p.id, shown)


@pytest.mark.parametrize("fid", sorted(all_families()))
def test_family_text_has_no_mangled_names_or_leftover_latex(fid: str):
    fam = all_families()[fid]
    for diff in fam.levels:
        for seed in (0, 3):
            p = fam.generate(seed, diff)
            md = "\n".join([p.statement_md, *p.options, *(pt.prompt_md for pt in p.parts)])
            text = "\n".join([p.statement_text, *p.options_text, *(pt.prompt_text for pt in p.parts)])
            assert not _mangled(md, text), (p.id, _mangled(md, text))
            assert not _LATEX_CMD.search(text), (p.id, text)


@pytest.mark.parametrize(("md", "text"), [
    ("$q\\cdot k$", "q·k"),
    ("$n \\times d$", "n × d"),
    ("$4096\\times 4096$", "4096×4096"),
    ("variance $\\approx d_k$", "variance ≈ dₖ"),
    ("$\\log n$", "log n"),
    ("$\\alpha x$", "αx"),
])
def test_spacing_after_commands(md: str, text: str):
    """The space that ends a command name is not output; an operator is spaced as on its left."""
    assert latex_to_text(md) == text
