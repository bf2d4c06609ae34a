"""qkv sheet: selection, the six formats, determinism, and the files' own validity.

Expected values come from the problems' keys (computed by the solver) and from the file
formats' own readers (pypdf, zipfile + sqlite3, xml.etree, jsonschema), never from the
renderers under test.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from drills.cli import cli
from drills.sheets import FORMATS, Sheet, answers_path, outputs, render
from drills.sheets.select import SelectionError, select_problems
from question_bank import bank as qb
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey

ROOT = Path(__file__).resolve().parents[3]


def _one_of_each_type() -> list:
    """One problem of each type, a causal-mask attention problem, a padding-mask weights
    problem and a PE value: every renderer path and every picture."""
    ps = []
    for t in ("mcq", "msq", "nat", "integer", "matrix"):
        ps += select_problems(1, 7, types=[t]).problems
    ps.append(qb.problem("attention.by_hand", seed=3, difficulty="hard"))
    ps.append(qb.problem("attention.masked_weights", seed=1, difficulty="medium"))
    ps.append(qb.problem("positional.pe_value", seed=2, difficulty="medium"))
    return ps


@pytest.fixture(scope="module")
def sheet() -> Sheet:
    return Sheet("Test sheet", _one_of_each_type(), 7, {"n": 8})


# --------------------------------------------------------------------------------------------
# selection


def test_selection_is_deterministic_and_filtered():
    a = select_problems(12, 42, topics=["attention"], types=["nat", "matrix"])
    b = select_problems(12, 42, topics=["attention"], types=["nat", "matrix"])
    assert [p.id for p in a.problems] == [p.id for p in b.problems]
    assert len(a.problems) == 12 and len({p.id for p in a.problems}) == 12
    assert all(p.type in ("nat", "matrix") for p in a.problems)
    fam_ok = {e.id for e in qb.entries(topic="attention")}
    assert all((p.family or p.id) in fam_ok for p in a.problems)
    marks = [p.marks for p in a.problems]
    assert marks == sorted(marks)  # 1-mark questions first, as on a GATE paper
    c = select_problems(12, 43, topics=["attention"], types=["nat", "matrix"])
    assert [p.id for p in c.problems] != [p.id for p in a.problems]


def test_selection_difficulty_and_shortfall():
    s = select_problems(5, 0, difficulties=["hard"])
    assert s.problems and all(p.difficulty == "hard" for p in s.problems)
    with pytest.raises(SelectionError):
        select_problems(3, 0, topics=["no-such-topic"])
    curated_only = [e for e in qb.entries(kind="curated") if e.topic == "scaling"]
    if curated_only and not any(e.kind == "family" for e in qb.entries(topic="scaling")):
        s = select_problems(50, 0, topics=["scaling"])
        assert len(s.problems) == len(qb.entries(topic="scaling")) and s.notes


def test_a_sheet_never_repeats_a_problem():
    """No two problems of a sheet are the same question (statement and options), even where a
    family gives few distinct variants; a shortfall is said."""
    def same(p):
        return (p.statement_md.split(), sorted(o.split() for o in p.options))

    s = select_problems(500, 0, types=["mcq"])
    assert len(s.problems) == 500
    assert len({repr(same(p)) for p in s.problems}) == 500
    m = select_problems(500, 0, types=["msq"])  # issue 26: MSQs of computed statements, endless variants
    assert len({repr(same(p)) for p in m.problems}) == len(m.problems) == 500
    few = select_problems(50, 0, types=["msq"], topics=["004"])  # one source text's curated MSQs only: a shortfall
    assert len({repr(same(p)) for p in few.problems}) == len(few.problems) < 50
    assert any(f"only {len(few.problems)} distinct problems" in note for note in few.notes)


# --------------------------------------------------------------------------------------------
# determinism: every format, every version, bytes identical even when the clock moves


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_is_byte_identical(fmt, sheet, monkeypatch):
    first = {v: render(sheet, fmt, v) for v in ("student", "full", "answers")}
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 86400 * 400)
    again = Sheet(sheet.title, list(sheet.problems), sheet.seed, dict(sheet.arguments))
    second = {v: render(again, fmt, v) for v in ("student", "full", "answers")}
    assert first == second
    assert first["student"] != first["full"]


def test_cli_twice_gives_identical_files(tmp_path):
    runner = CliRunner()
    for fmt, suffix in (("md", ".md"), ("anki", ".apkg"), ("json", ".json")):
        outs = []
        for run in range(2):
            out = tmp_path / f"s{run}{suffix}"
            r = runner.invoke(cli, ["sheet", "-n", "4", "--seed", "11", "--topic", "attention", "--format", fmt,
                                    "--answers", "separate", "-o", str(out)])
            assert r.exit_code == 0, r.output
            outs.append((out.read_bytes(), answers_path(out).read_bytes()))
        assert outs[0] == outs[1]


# --------------------------------------------------------------------------------------------
# PDF


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    assert data.startswith(b"%PDF-")
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def _fmt(x: float, decimals: int | None) -> str:
    if decimals is None:
        return f"{x:g}" if not float(x).is_integer() else str(int(x))
    q = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    s = f"{q:f}"
    return s[1:] if s.startswith("-") and float(q) == 0 else s


def _key_strings(key) -> list[str]:
    """What the key looks like in print, derived from the key's values alone."""
    if isinstance(key, ChoiceKey):
        return [f"({'abcdefgh'[i]})" for i in sorted(key.correct)]
    if isinstance(key, IntegerKey):
        return [f"{key.value:,}"]
    if isinstance(key, NumericKey):
        return [_fmt(key.value, key.decimals)] if key.decimals is not None else []
    assert isinstance(key, MatrixKey)
    return [_fmt(x, key.decimals) for r in key.value for x in r if not math.isinf(x)]


def test_pdf_has_every_question_and_every_key(sheet):
    student = _pdf_text(render(sheet, "pdf", "student"))
    full = _pdf_text(render(sheet, "pdf", "full"))
    answers = _pdf_text(render(sheet, "pdf", "answers"))
    for i, p in sheet.numbered():
        assert f"Q{i}." in student and f"Q{i}" in full
        keys = [pt.key for pt in p.parts] or [p.key]
        for k in keys:
            for s in _key_strings(k):
                norm = s.replace("-", "−")
                assert s in answers or norm in answers, (p.id, s)
    assert "Answer key" not in student and "Worked solutions" not in student
    assert "Answer key" in full and "Worked solutions" in full


def test_pdf_pictures_are_drawn(sheet):
    from drills.sheets.pdf import typst_source

    src = typst_source(sheet, "full")
    assert src.count("#maskmap(") >= 1  # the causal mask of attention.by_hand (hard)
    assert "#heat(" in src and "diverging: true" in src  # weights and the PE
    mw = next(p for p in sheet.problems if p.family == "attention.masked_weights")
    first_row = ", ".join(f"{x:.3f}".rstrip("0").rstrip(".") for x in mw.key.value[0])
    assert f"#heat((({first_row})" in src.replace("(0,", "(0,")


@given(st.lists(st.lists(st.floats(0.01, 10), min_size=2, max_size=5), min_size=1, max_size=5).filter(
    lambda rows: len({len(r) for r in rows}) == 1))
def test_weight_matrix_detection(rows):
    from drills.sheets.pdf import is_weight_matrix

    norm = [[x / sum(r) for x in r] for r in rows]
    assert is_weight_matrix(norm)
    assert not is_weight_matrix([[x * 1.5 for x in r] for r in norm])  # rows sum to 1.5


def test_tex_to_typst_pinned():
    from drills.sheets.pdf import tex_to_typst

    assert tex_to_typst(r"\frac{a}{b}") == "frac(a, b)"
    assert tex_to_typst(r"\sqrt{d_k}") == "sqrt(d _k)"
    assert tex_to_typst(r"QK^\top") == "Q K ^top"
    assert tex_to_typst(r"\begin{bmatrix} 1 & -2 \\ 3 & 4 \end{bmatrix}") == 'mat(delim: "[", 1, - 2; 3, 4)'
    assert tex_to_typst(r"\mathrm{softmax}(x)") == 'upright("softmax") ( x )'
    assert tex_to_typst(r"a \cdot b \times c") == "a dot.op b times c"
    assert tex_to_typst(r"12{,}288") == '"12,288"'
    assert tex_to_typst(r"x/2") == "x \\/ 2"  # a slash, not a Typst fraction


def test_markup_is_escaped_and_math_compiles():
    from drills.sheets.pdf import PREAMBLE, compile_typst, md_to_typst

    md = ("Code `a_b // c` and text with # $x_1 = \\frac{1}{\\sqrt{2}}$ @ref <lbl> [x] ~ // not a comment "
          "and *emph* **bold**\n\n- item $M = \\begin{bmatrix} 1 & 0 \\\\ 0 & 1 \\end{bmatrix}$\n\n$$\nS = QK^\\top\n$$")
    src = "#set document(date: none)\n" + PREAMBLE + md_to_typst(md)  # display math uses the preamble's fit
    text = _pdf_text(compile_typst(src))
    for s in ("a_b // c", "with #", "@ref <lbl> [x]", "// not a comment", "emph", "bold", "item"):
        assert s in text, s


# --------------------------------------------------------------------------------------------
# Anki


def _anki_notes(data: bytes, tmp_path: Path) -> list[tuple]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert z.testzip() is None
        media = json.loads(z.read("media"))
        assert set(z.namelist()) == {"collection.anki2", "media", *media}  # numbered media files, as Anki packs them
        db = tmp_path / "col.anki2"
        db.write_bytes(z.read("collection.anki2"))
    con = sqlite3.connect(db)
    try:
        return con.execute("select guid, mid, flds from notes order by id").fetchall()
    finally:
        con.close()


def test_anki_one_note_per_problem_with_stable_guids(sheet, tmp_path):
    notes = _anki_notes(render(sheet, "anki", "full"), tmp_path)
    assert len(notes) == len(sheet.problems)
    assert len({g for g, _, _ in notes}) == len(notes)
    # the same problem in another sheet (other title, seed, position) keeps its guid: an update, not a duplicate
    other = Sheet("Another title", list(reversed(sheet.problems[:3])), 999)
    notes2 = _anki_notes(render(other, "anki", "full"), tmp_path)
    by_id = {f.split("\x1f")[2]: g for g, _, f in notes}
    assert {f.split("\x1f")[2]: g for g, _, f in notes2} == {p.id: by_id[p.id] for p in sheet.problems[:3]}
    assert {m for _, m, _ in notes} == {m for _, m, _ in notes2}  # one note type
    flds = [f.split("\x1f") for _, _, f in notes]
    assert all(f[1] for f in flds)  # the back holds the answer in the full deck
    assert any("\\(" in f[0] or "\\[" in f[0] for f in flds)  # MathJax delimiters
    assert all("$" not in f[0].replace("$course$", "") for f in flds)
    student = _anki_notes(render(sheet, "anki", "student"), tmp_path)
    assert [g for g, _, _ in student] == [g for g, _, _ in notes]
    assert all(f.split("\x1f")[1] == "" for _, _, f in student)


# --------------------------------------------------------------------------------------------
# Moodle


def test_moodle_xml_parses_and_carries_tolerances(sheet):
    root = ET.fromstring(render(sheet, "moodle", "full"))
    qs = [q for q in root.findall("question") if q.get("type") != "category"]
    assert len(qs) == len(sheet.problems)
    for q, p in zip(qs, sheet.problems, strict=True):
        assert q.find("idnumber").text == p.id
        kind = q.get("type")
        if kind != "cloze":  # a cloze's marks: tests/drills/sheets/test_moodle.py
            assert q.find("defaultgrade").text == str(p.marks)
        if p.parts or p.type == "matrix":
            assert kind == "cloze"
            text = q.find("questiontext/text").text
            keys = [pt.key for pt in p.parts] or [p.key]
            cells = sum(len(k.value) * len(k.value[0]) if isinstance(k, MatrixKey) else 1 for k in keys)
            assert text.count(":NUMERICAL:") + text.count(":MULTICHOICE:") + text.count(":MULTIRESPONSE:") == cells
        elif p.type in ("nat", "integer"):
            assert kind == "numerical"
            answers = q.findall("answer")
            assert answers and all(a.find("tolerance") is not None for a in answers)
            right = [a for a in answers if a.get("fraction") == "100"]
            assert len(right) == 1
            v, tol = float(right[0].find("text").text), float(right[0].find("tolerance").text)
            if isinstance(p.key, NumericKey):
                assert math.isclose(v - tol, p.key.lo, rel_tol=1e-12, abs_tol=1e-12)
                assert math.isclose(v + tol, p.key.hi, rel_tol=1e-12, abs_tol=1e-12)
            else:
                assert v == p.key.value and tol == abs(p.key.value) * p.key.rel_tol
            wrong = [a for a in answers if a.get("fraction") == "0"]
            assert len(wrong) == sum(isinstance(m.value, int | float) for m in p.misconceptions)
            for a in wrong:  # a misconception's range never contains the key
                w, wt = float(a.find("text").text), float(a.find("tolerance").text)
                assert not (w - wt <= p.key.value <= w + wt)
        else:
            assert kind == "multichoice"
            assert q.find("single").text == ("true" if p.type == "mcq" else "false")
            fr = [float(a.get("fraction")) for a in q.findall("answer")]
            assert [i for i, f in enumerate(fr) if f > 0] == sorted(p.key.correct)
            assert math.isclose(sum(f for f in fr if f > 0), 100, abs_tol=1e-3)
        assert (q.find("generalfeedback/text").text or "").strip()
    student = ET.fromstring(render(sheet, "moodle", "student"))
    assert all(not (q.findtext("generalfeedback/text") or "") for q in student.findall("question")
               if q.get("type") != "category")


# --------------------------------------------------------------------------------------------
# JSON


def test_json_validates_against_its_schema(sheet):
    import jsonschema

    from drills.sheets.jsonfmt import schema

    validator = jsonschema.Draft202012Validator(schema())
    jsonschema.Draft202012Validator.check_schema(schema())
    full = json.loads(render(sheet, "json", "full"))
    student = json.loads(render(sheet, "json", "student"))
    validator.validate(full)
    validator.validate(student)
    assert [q["problem"]["id"] for q in full["questions"]] == [p.id for p in sheet.problems]
    assert all("key" not in q["problem"] and "solution_md" not in q["problem"] for q in student["questions"])
    # the schema can fail: a full sheet without a key, or a student sheet with one, is rejected
    broken = json.loads(json.dumps(full))
    del broken["questions"][0]["problem"]["key"]
    assert not validator.is_valid(broken)
    leaky = json.loads(json.dumps(student))
    leaky["questions"][0]["problem"]["answer"] = 1
    assert not validator.is_valid(leaky)


# --------------------------------------------------------------------------------------------
# Markdown and HTML


def test_markdown_and_html(sheet):
    md = render(sheet, "md", "full").decode()
    page = render(sheet, "html", "full").decode()
    for i, _ in sheet.numbered():
        assert f"## Q{i} " in md and f'id="q{i}"' in page
    assert "\\begin{bmatrix}" in md and "# Answer key" in md
    assert "<script" not in page and "http" not in page  # offline: nothing to fetch
    assert "$" not in page.replace("$course$", "")  # math rendered, not left as LaTeX
    student = render(sheet, "md", "student").decode()
    assert "Answer key" not in student


def test_answers_separate_writes_two_files(sheet, tmp_path):
    files = outputs(sheet, "md", "separate", tmp_path / "set.md")
    assert list(files) == [tmp_path / "set.md", tmp_path / "set.answers.md"]
    assert b"Answer key" not in files[tmp_path / "set.md"] and b"Answer key" in files[tmp_path / "set.answers.md"]


# --------------------------------------------------------------------------------------------
# the command


def test_cli_errors_are_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "drills", "sheet", "--topic", "nope", "-o", str(tmp_path / "x.md")],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("qkv: error:") and len(r.stderr.strip().splitlines()) == 1
    r = CliRunner().invoke(cli, ["sheet", "-n", "2", "--date", "yesterday", "-o", str(tmp_path / "x.md")])
    assert r.exit_code == 2


def test_sheet_cmd_imports_nothing_heavy():
    code = ("import sys, drills.cli.sheet; bad = [m for m in ('typst', 'genanki', 'torch', 'numpy', 'question_bank') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_every_symbol_of_the_converter_exists_in_typst():
    from drills.sheets.pdf import _GREEK, _TEX_SYMBOLS, _WRAP, compile_typst

    body = " ".join([*_TEX_SYMBOLS.values(), *_GREEK, *(f"{v}(x)" for v in _WRAP.values())])
    assert compile_typst(f"${body}$").startswith(b"%PDF-")


def test_whole_bank_typesets():
    """Every curated item and every family at each difficulty (seed 0) compiles: no LaTeX the
    converter turns into invalid Typst, no Markdown character left unescaped."""
    from drills.sheets.pdf import compile_typst, typst_source

    ps = list(qb.curated())
    for f in qb.families().values():
        ps += [f.generate(0, d) for d in f.levels]
    pdf = compile_typst(typst_source(Sheet("Everything", ps, 0), "full"))
    assert pdf.startswith(b"%PDF-")


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_conceptual_explanation_is_written_once(fmt):
    """GATE Q4's explanation is its whole worked solution: a sheet shows it once, not twice."""
    p = qb.problem("004.gate.q4")
    assert p.explanation and p.explanation.strip() in p.solution_md
    text = render(Sheet("x", [p], 0, {}), fmt, "full").decode()
    probe = "Large scores push softmax towards a one-hot vector"
    assert text.count(probe) == 1


def test_html_math_reads_as_math():
    """Scripts become <sub>/<sup> (d_{model} is not left as "d_model"; h_kv is h with subscript kv,
    not h_k then v), hats survive, and Markdown's escaped underscore prints as one."""
    from drills.sheets.html import inline_to_html, unicode_math

    assert unicode_math("d_{model}/h", False) == '<span class="m">d<sub>model</sub>/h</span>'
    assert "h<sub>kv</sub>·d<sub>h</sub>" in unicode_math("L·d·h_kv·d_h", False)
    assert "Q<sub>i</sub>K<sub>i</sub><sup>T</sup>" in unicode_math("Q_iK_i^\\top", False)
    assert "x\u0302" in unicode_math("\\hat x = x/\\mathrm{RMS}", False)
    assert inline_to_html("attention W\\_Q: $x$", unicode_math).startswith("attention W_Q: ")


def test_html_matrix_stays_inside_its_paragraph():
    """A <table> inside <p> ends the paragraph in every browser, so the matrix would drop to its
    own line: matrices are inline spans, and the page holds no table but the key and heatmaps."""
    import re as _re

    from drills.sheets.html import md_to_html

    page = md_to_html("Compute $y$ for $x = \\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}$ with $\\gamma = 1$.")
    assert page.startswith("<p>") and page.endswith("</p>") and "<table" not in page
    assert _re.findall(r'<span class="mc">([^<]*)</span>', page) == ["1", "2", "3", "4"]
    assert page.count('<span class="mr">') == 2


def test_html_loose_list_is_one_list():
    from drills.sheets.html import md_to_html

    assert md_to_html("- a\n\n- b\n\n- c\n\nafter").count("<ul>") == 1


def test_markdown_math_survives_github():
    """GitHub parses Markdown before MathJax: inline math holding ``\\\\``, ``\\{``, ``*`` or ``|``
    must be in ``$`…`$``, display math in a fenced ``math`` block, key-table rows must have
    exactly their five bare pipes, and ``h_kv`` must be ``h_{kv}`` (else LaTeX reads h_k v)."""
    import re as _re

    from drills.sheets.markdown import github_md, inline_math

    assert inline_math("d_k") == "$d_k$"
    assert inline_math("L·d·h_kv·d_ff") == "$L·d·h_{kv}·d_{ff}$"
    assert inline_math("\\begin{bmatrix}1\\\\2\\end{bmatrix}") == "$`\\begin{bmatrix}1\\\\2\\end{bmatrix}`$"
    assert github_md("a\n$$\nx = 1\n$$\nb") == "a\n```math\nx = 1\n```\nb"
    ps = [qb.problem(i) for i in ("004.gate.q4",)] + [f.generate(0, d) for k, f in qb.families().items()
                                                      for d in f.levels if k.startswith("attention")][:12]
    md = render(Sheet("x", ps, 0, {}), "md", "full").decode()
    plain = _re.sub(r"\$`[^`]*`\$", "", md)
    for body in _re.findall(r"(?<![$`])\$([^$`\n]+)\$(?!`)", plain):
        assert not _re.search(r"\\[\\{},;|]|[*|]", body), body
    assert not _re.search(r"^\s*\$\$\s*$", md, _re.M)
    for row in (r for r in md.splitlines() if r.startswith("| Q")):
        assert len(_re.findall(r"(?<!\\)\|", row)) == 5, row


def test_counts_say_one_question_and_one_mark_in_the_singular(tmp_path):
    """One question worth one mark is "1 question · 1 mark", not "1 questions · 1 marks": the
    sheet's info line, a section heading and the CLI's "wrote" line all count with ``plural``."""
    from dataclasses import replace

    from drills.sheets import SheetSection, info_line

    one = replace(select_problems(1, 7, types=["nat"]).problems[0], marks=1)
    sec = [SheetSection("A", 1, 1, 1, "rule")]  # a paper: its time is printed
    line = info_line(Sheet("t", [one], 7, {"minutes": 1}, sections=sec))
    assert line.startswith("1 question · 1 mark · 1 minute · seed 7"), line
    two = info_line(Sheet("t", [one, replace(one, marks=2)], 7, {"minutes": 90.0}, sections=sec))
    assert two.startswith("2 questions · 3 marks · 90 minutes · seed 7"), two
    assert " · 1 question · 1 mark · " in sec[0].heading()
    r = CliRunner().invoke(cli, ["sheet", "-n", "1", "-o", str(tmp_path / "x.md")])
    assert r.exit_code == 0 and "(1 question, " in r.output, r.output
    assert "1 question · " in (tmp_path / "x.md").read_text(encoding="utf-8")
