"""The practice set as Moodle XML, ready to import into a course's question bank.

- NAT (a :class:`NumericKey`): a ``numerical`` question whose answer is the centre of the
  key's accepted range ``[lo, hi]`` with tolerance ``(hi − lo)/2``, so Moodle accepts
  exactly what qkv accepts. An integer key: ``numerical`` with tolerance 0 (or its relative
  tolerance times the value).
- Every misconception with a numeric value becomes an extra answer with fraction 0 and its
  feedback, its tolerance the same rule ``question_bank.grading`` matches it with (half a
  unit of the asked decimals around its rounded value). Moodle takes the first answer that
  matches, and the correct one comes first; the audit guarantees that no misconception is
  accepted as correct.
- MCQ: ``multichoice`` with ``single`` true. MSQ (GATE: all or nothing) has two encodings
  (``Sheet.moodle_msq``, ``qkv sheet --moodle-msq``):

  * ``multichoice`` (default, core Moodle): ``single`` false, each correct option
    ``100/k`` %, each wrong one −100 %. Moodle sums the ticked options' fractions and
    clamps the sum to [0, 1], so one wrong tick scores 0 whatever else is ticked; but a
    proper subset of the right options earns ``j/k`` of the marks. No choice of core
    fractions avoids that (a correct option must carry a positive fraction), so it is the
    closest core encoding.
  * ``allornothing``: ``multichoiceset``, the all-or-nothing multiple-choice question
    type (plugin qtype_multichoiceset, which must be installed on the site): an answer
    with a non-zero fraction is a correct one, and the question scores 1 only for exactly
    the set of correct options, else 0: GATE's rule.

  Options keep their order (``shuffleanswers`` 0) because solutions name them by letter;
  a misconception that leads to an option is that option's feedback.
- Matrix problems and multi-part problems: ``cloze`` with one NUMERICAL sub-question per
  matrix cell (a SHORTANSWER one for a −∞ cell of a masked matrix, since Moodle's numbers
  have no infinity) and one per scalar part. A cell takes what ``question_bank.grading``
  accepts: two 100 % answers, within ``abs_tol`` of the exact value and (with ``decimals``)
  the interval that rounds to it (``grading.nat_range``). Weights: Moodle reads a cloze question's mark
  as the sum of its sub-questions' weights ``{w:…}``, which must be whole numbers
  (``qtype_multianswer_extract_question``: ``\\{([0-9]*):``; the ``defaultgrade`` element
  is not read for a cloze), and grades it ``Σ fraction·w / Σ w``. :func:`box_weights`
  gives every part the same share and every cell of a part the same share of it, as
  ``question_bank.grading.total_score`` and the matrix grader do, in the smallest whole
  numbers; when the sheet's marks are a multiple of that sum they are scaled up to make
  the sum the sheet's marks exactly (a two-part 2-mark problem: ``{1:…}{1:…}``). Otherwise
  (a 3×3 matrix worth 2 marks: nine equal whole weights cannot sum to 2) the question
  imports worth the sum (9): :func:`mark_mismatches` lists them, ``qkv sheet`` says so,
  and the question's name carries the sheet's marks so that the teacher can set the
  question's maximum mark in the quiz (Moodle then scales the same fraction).
- ``--moodle-cloze formulas`` (``Sheet.moodle_cloze``): the matrix and multi-part questions are
  written for the plugin qtype_formulas instead (it must be installed on the site): one part per
  answer box (a cell, a scalar part), each worth its share of the sheet's marks, so the question
  imports worth exactly them and a blank or unreadable box costs only its share (issue 38: with every
  box in one part, qtype_formulas scored the whole question 0 for it); see the section below. The
  scalar parts of a core cloze keep their misconception answers (0 %, with the feedback).
- Text from a sheet file is escaped for where it lands (issue 28): a ``{`` that could open a cloze
  box (``{1:NUMERICAL:…}``) is written ``&#123;`` in the text around the boxes, a box's feedback and
  options are HTML-escaped, then cloze-escaped; names and the category are escaped too.
- The worked solution is the ``generalfeedback``. Math stays LaTeX between ``\\( \\)`` /
  ``\\[ \\]`` for Moodle's MathJax filter.

The student version keeps the keys (Moodle needs them to mark) but drops the worked
solutions and the misconception feedback.
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from functools import reduce

from drills.sheets import marks_label
from drills.sheets.html import inline_to_html, mathjax, md_to_html
from question_bank.grading import misconception_range, named, nat_range
from question_bank.problem import (
    ChoiceKey,
    IntegerKey,
    MatrixKey,
    NumericKey,
    Problem,
    erratum_heading,
    erratum_place,
    extra_explanation,
)

MSQ_ENCODINGS = ("multichoice", "allornothing")
_MOODLE_FRACTIONS = {1: "100", 2: "50", 3: "33.33333", 4: "25", 5: "20", 6: "16.66667", 7: "14.28571", 8: "12.5",
                     9: "11.11111", 10: "10"}


def _r(x: float) -> str:
    """A number as Moodle reads it: 12 significant digits (0.0005, not the float artefact
    0.0004999999999999449 of hi − lo), integers as integers."""
    if float(x).is_integer() and abs(x) < 1e17:
        return str(int(x))
    return f"{float(x):.12g}"


def numeric_answer(key: NumericKey | IntegerKey) -> tuple[str, str]:
    """``(answer, tolerance)`` such that Moodle accepts exactly the key's range."""
    if isinstance(key, IntegerKey):
        return str(key.value), _r(abs(key.value) * key.rel_tol)
    return _r((key.lo + key.hi) / 2), _r((key.hi - key.lo) / 2)


def misconception_answer(key: NumericKey | IntegerKey, value: float) -> tuple[str, str]:
    """``(answer, tolerance)`` of a misconception's feedback: the answers the judge names as that
    misconception (:func:`question_bank.grading.misconception_range`), so Moodle's feedback and
    qkv's diagnosis agree."""
    if isinstance(key, NumericKey):
        lo, hi = misconception_range(float(value), key)
        return _r((lo + hi) / 2), _r((hi - lo) / 2)
    return _r(float(value)), _r(abs(key.value) * key.rel_tol)


def _text(parent: ET.Element, tag: str, text: str, fmt: str | None = "html") -> ET.Element:
    el = ET.SubElement(parent, tag, {"format": fmt} if fmt else {})
    ET.SubElement(el, "text").text = text
    return el


def _statement(p: Problem) -> str:
    return md_to_html(p.statement_md.strip(), mathjax)


def _solution(p: Problem) -> str:
    out = [md_to_html(p.solution_md.strip(), mathjax)]
    if extra := extra_explanation(p):
        out.append(md_to_html(extra, mathjax))
    for e in p.errata:
        out.append(f"<p><i>{erratum_heading(e)} ({html.escape(erratum_place(p, e))}): printed {html.escape(e.printed)}; exact "
                   f"{html.escape(e.exact)}. {html.escape(e.reason)}</i></p>")
    return "\n".join(out)


def _numeric_value(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _common(q: ET.Element, i: int, p: Problem, text: str, full: bool, mark: int | None = None) -> None:
    name = ET.SubElement(q, "name")
    # a name is shown through Moodle's format_string (HTML): the id is text (issue 28)
    ET.SubElement(name, "text").text = html.escape(f"Q{i:02d} {p.id} ({marks_label(p.marks)})", quote=False)
    _text(q, "questiontext", text)
    _text(q, "generalfeedback", _solution(p) if full else "")
    ET.SubElement(q, "defaultgrade").text = str(p.marks if mark is None else mark)
    ET.SubElement(q, "penalty").text = "0"
    ET.SubElement(q, "hidden").text = "0"
    ET.SubElement(q, "idnumber").text = p.id[:100]


def _answer(q: ET.Element, fraction: str, text: str, feedback: str = "", tolerance: str | None = None,
            fmt: str = "moodle_auto_format") -> None:
    a = ET.SubElement(q, "answer", {"fraction": fraction, "format": fmt})
    ET.SubElement(a, "text").text = text
    if tolerance is not None:
        ET.SubElement(a, "tolerance").text = tolerance
    _text(a, "feedback", feedback)


def _numerical(q: ET.Element, p: Problem, full: bool) -> None:
    key = p.key
    assert isinstance(key, NumericKey | IntegerKey)
    ans, tol = numeric_answer(key)
    _answer(q, "100", ans, "Correct." if full else "", tol)
    if full:
        # mistakes that give the same answer are one Moodle answer naming them all (issue 21: as the judge does)
        groups: dict[tuple[str, str], list] = {}
        for m in p.misconceptions:
            v = _numeric_value(m.value)
            if v is None:
                continue
            groups.setdefault(misconception_answer(key, v), []).append(m)
        for (mv, mtol), ms in groups.items():
            _answer(q, "0", mv, html.escape(named(ms)[0].feedback), mtol)
    unit = key.unit
    ET.SubElement(q, "unitgradingtype").text = "0"
    ET.SubElement(q, "unitpenalty").text = "0"
    ET.SubElement(q, "showunits").text = "3"  # no unit input: the number alone is marked
    ET.SubElement(q, "unitsleft").text = "0"
    if unit:
        units = ET.SubElement(q, "units")
        u = ET.SubElement(units, "unit")
        ET.SubElement(u, "multiplier").text = "1"
        ET.SubElement(u, "unit_name").text = unit


#: the grades Moodle offers an answer (question_bank_get_grade_options: ± these), as it writes them
_MOODLE_GRADES = (100, 90, 83.33333, 80, 75, 70, 66.66667, 60, 50, 40, 33.33333, 30, 25, 20, 16.66667, 14.28571,
                  12.5, 11.11111, 10, 5, 0)


def penalty_fraction(penalty: str) -> str:
    """A wrong MCQ option's grade in a paper whose section costs ``penalty`` (a fraction of the marks,
    ``"1/3"``) for a wrong MCQ: ``-33.33333``, Moodle's nearest grade; ``"0"`` for no penalty."""
    from fractions import Fraction

    x = float(Fraction(str(penalty))) * 100
    if x <= 0:
        return "0"
    g = min(_MOODLE_GRADES, key=lambda v: abs(v - x))
    return "-" + (str(int(g)) if float(g).is_integer() else str(g))


def _multichoice(q: ET.Element, p: Problem, full: bool, allornothing: bool = False, wrong_mcq: str = "0") -> None:
    """``multichoice`` (MCQ; MSQ with summed fractions), or ``multichoiceset`` for an
    all-or-nothing MSQ (``allornothing``): there a non-zero fraction marks a correct option."""
    key = p.key
    assert isinstance(key, ChoiceKey)
    single = p.type == "mcq"
    if not allornothing:
        ET.SubElement(q, "single").text = "true" if single else "false"
    ET.SubElement(q, "shuffleanswers").text = "0"
    ET.SubElement(q, "answernumbering").text = "abc"
    if allornothing:
        _text(q, "correctfeedback", "")
        _text(q, "incorrectfeedback", "")
    by_option: dict[int, list] = {}
    for m in p.misconceptions if full else []:
        if isinstance(m.value, int):
            by_option.setdefault(m.value, []).append(m)
    feedback = {j: named(ms)[0].feedback for j, ms in by_option.items()}
    good = "100" if allornothing else _MOODLE_FRACTIONS[len(key.correct)]
    for j, o in enumerate(p.options):
        frac = good if j in key.correct else (wrong_mcq if single else "0" if allornothing else "-100")
        _answer(q, frac, inline_to_html(o, mathjax), html.escape(feedback.get(j, "")), fmt="html")


def _cloze_escape(s: str) -> str:
    for ch in "\\}#~/\"":
        s = s.replace(ch, "\\" + ch)
    return s


#: Where Moodle starts an answer box in a cloze question's text (question/type/multianswer/
#: questiontype.php, ``ANSWER_START_REGEX`` = ``\{([0-9]*):(TYPES):``): any ``{`` followed by
#: digits and a colon is written ``&#123;`` in the text around the boxes (issue 28: cloze syntax in a
#: statement, a prompt or a label must not become a box); the browser shows ``{``.
_BOX_START = re.compile(r"\{(?=[0-9]*:)")


def cloze_text(html_text: str) -> str:
    """HTML for the text of a cloze question around its boxes: no box can start in it."""
    return _BOX_START.sub("&#123;", html_text)


def _cloze_feedback(text: str) -> str:
    """A plain-text feedback or option inside a cloze box: HTML-escaped (Moodle shows it as HTML),
    then cloze-escaped (``}``, ``#``, ``~``... end or split a box)."""
    return _cloze_escape(html.escape(text, quote=False))


def _boxes(key) -> int:
    return len(key.value) * len(key.value[0]) if isinstance(key, MatrixKey) else 1


def box_weights(p: Problem) -> list[int]:
    """The whole-number weight of each cloze box, in the order they appear (parts in order,
    a matrix row by row): every part the same share, every cell of a part the same share of
    it; scaled to sum to the problem's marks when that is possible (see the module docstring)."""
    sizes = [_boxes(pt.key) for pt in p.parts] if p.parts else [_boxes(p.key)]
    share = reduce(math.lcm, sizes)  # each part's total weight
    weights = [share // n for n in sizes for _ in range(n)]
    g = reduce(math.gcd, weights)
    weights = [w // g for w in weights]
    total = sum(weights)
    if p.marks % total == 0:
        weights = [w * (p.marks // total) for w in weights]
    return weights


def moodle_mark(p: Problem) -> int:
    """The maximum mark Moodle gives the imported question."""
    return sum(box_weights(p)) if is_cloze(p) else p.marks


def is_cloze(p: Problem) -> bool:
    return bool(p.parts) or p.type == "matrix"


def mark_mismatches(sheet) -> list[tuple[int, Problem, int]]:
    """``[(number, problem, Moodle's mark)]`` for the cloze questions whose whole-number
    weights cannot sum to the sheet's marks (none with ``--moodle-cloze formulas``)."""
    if getattr(sheet, "moodle_cloze", "cloze") == "formulas":
        return []
    return [(i, p, moodle_mark(p)) for i, p in sheet.numbered() if moodle_mark(p) != p.marks]


def cell_intervals(x: float, key: MatrixKey) -> list[tuple[str, str]]:
    """``[(answer, tolerance)]``: what ``question_bank.grading`` accepts for a matrix cell: within
    ``abs_tol`` of the exact value, or (with ``decimals``) what rounds to it (``nat_range``)."""
    out = [(_r(x), _r(key.abs_tol))]
    if key.decimals is not None:
        lo, hi = nat_range(x, key.decimals)
        out.append((_r((lo + hi) / 2), _r((hi - lo) / 2)))
    return out


def _cloze_numeric(value: float, tol: str | list[tuple[str, str]], weight: int,
                   wrong: list[tuple[float, str, str]] = ()) -> str:
    if math.isinf(value):  # Moodle's numbers have no infinity: a short answer that takes -inf, −∞, -infinity
        sign = "-" if value < 0 else ""
        alts = [f"%100%{sign}inf", f"%100%{sign}infinity", f"%100%{sign}∞"] + (["%100%−∞"] if sign else [])
        return "{" + f"{weight}:SHORTANSWER:" + "~".join(alts) + "}"
    right = tol if isinstance(tol, list) else [(_r(value), tol)]
    parts = [f"%100%{a}:{t}" for a, t in right]
    parts += [f"%0%{_r(v)}:{t}#{_cloze_feedback(fb)}" for v, t, fb in wrong]
    return "{" + f"{weight}:NUMERICAL:" + "~".join(parts) + "}"


def _cloze_key(key, options_text: list[str], misconceptions, full: bool, weights: list[int]) -> str:
    """The cloze fields for one key: a table of cells for a matrix, one field otherwise."""
    if isinstance(key, MatrixKey):
        tol = _r(key.abs_tol)
        rows = []
        for r, row in enumerate(key.value):
            cells = []
            for c, x in enumerate(row):
                wrong = []
                if full and not math.isinf(float(x)):
                    for m in misconceptions:
                        try:
                            mv = float(m.value[r][c])
                        except (TypeError, ValueError, IndexError):
                            continue
                        if not math.isinf(mv) and abs(mv - float(x)) > 2 * key.abs_tol:
                            wrong.append((mv, tol, m.label))
                right = cell_intervals(float(x), key) if not math.isinf(float(x)) else tol
                cells.append(f"<td>{_cloze_numeric(float(x), right, weights.pop(0), wrong)}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return '<table class="matrix">' + "".join(rows) + "</table>"
    w = weights.pop(0)
    if isinstance(key, NumericKey | IntegerKey):
        ans, tol = numeric_answer(key)
        alts = [f"%100%{ans}:{tol}"]
        if full:  # issue 27: a scalar part keeps its misconception answers, as a numerical question does
            for m in misconceptions:
                v = _numeric_value(m.value)
                if v is None or math.isinf(v) or math.isnan(v):
                    continue
                mv, mtol = misconception_answer(key, v)
                alts.append(f"%0%{mv}:{mtol}#{_cloze_feedback(m.feedback)}")
        return "{" + f"{w}:NUMERICAL:" + "~".join(alts) + "}"
    assert isinstance(key, ChoiceKey)
    if len(key.correct) == 1:
        opts = [f"{'%100%' if j in key.correct else ''}{_cloze_feedback(o)}" for j, o in enumerate(options_text or [])]
        return "{" + f"{w}:MULTICHOICE:" + "~".join(opts) + "}"
    # explicit fractions: Moodle then keeps the wrong options at −100 % (with '=' it would give −1/k)
    opts = [f"{'%100%' if j in key.correct else '%-100%'}{_cloze_feedback(o)}" for j, o in enumerate(options_text or [])]
    return "{" + f"{w}:MULTIRESPONSE:" + "~".join(opts) + "}"


def _cloze(p: Problem, full: bool) -> str:
    out = [cloze_text(_statement(p))]
    weights = box_weights(p)
    if p.parts:
        for pt in p.parts:
            out.append(cloze_text(f"<p>({html.escape(pt.label)}) {inline_to_html(pt.prompt_md, mathjax)}</p>"))
            out.append(_cloze_key(pt.key, [], pt.misconceptions, full, weights))
    else:
        out.append(_cloze_key(p.key, p.options_text, p.misconceptions, full, weights))
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# qtype_formulas (``--moodle-cloze formulas``): matrix and multi-part questions worth exactly their marks
#
# Source: FormulasQuestion/moodle-qtype_formulas (6.3.2), questiontype.php ``import_from_xml``: every
# ``<answers>`` element is a part with the fields PART_BASIC_FIELDS (placeholder, answermark,
# answertype, numbox, vars1, answer, answernotunique, vars2, correctness, unitpenalty, postunit,
# ruleid, otherrule; a missing one is an import error), and the question's default mark is
# ``array_sum(answermark)``: parts whose answermarks add up to the sheet's marks make the mark exact.
# classes/local/formulas_part.php ``grade``: the grading criterion ``correctness`` is evaluated with
# the student's numbers as ``_0``, ``_1``... and clamped to [0, 1]: it is the part's fraction; a part
# with a blank or unreadable box scores 0 whole. So each box is a part of its own (placeholder ``#k``
# in the question text, ``{_0}`` in the part's text), worth its share (each part of a problem the same
# share, each cell of a part the same share of it, as ``question_bank.grading`` does). Answer type 0 (a number). Formulas
# numbers have no infinity: a −∞ cell (a masked score) is any number ≤ −10³⁰ (the part says so).

FORMULAS_NEG_INF = -1e99
_FORMULAS_INF_BOUND = -1e30


def _fnum(x: float) -> str:
    return _r(x) if not math.isinf(x) else _r(FORMULAS_NEG_INF)


def formulas_boxes(p: Problem) -> list[tuple[int, list[tuple[float, float]] | None, float]]:
    """One entry per answer box, in order: ``(part index, accepted [(centre, tolerance)] or None
    for a −∞ cell, the exact value)``."""
    out = []
    keys = [pt.key for pt in p.parts] if p.parts else [p.key]
    for k, key in enumerate(keys):
        if isinstance(key, MatrixKey):
            for row in key.value:
                for x in row:
                    x = float(x)
                    if math.isinf(x):
                        out.append((k, None, x))
                    else:
                        out.append((k, [(float(a), float(t)) for a, t in cell_intervals(x, key)], x))
        else:
            assert isinstance(key, NumericKey | IntegerKey)
            a, t = numeric_answer(key)
            out.append((k, [(float(a), float(t))], float(key.value)))
    return out


def _no_placeholders(html_text: str) -> str:
    """Text shown by qtype_formulas: ``{`` is its placeholder and variable syntax (``{_0}``, ``{#1}``,
    ``{a}``); written ``&#123;`` so that text from a sheet file places no box (issue 28)."""
    return html_text.replace("{", "&#123;")


#: what qtype_formulas reads in a box of answer type "number": plain digits, ``.``, an exponent and an ASCII
#: sign; a box it cannot read scores 0 (only that box, as each box is a part of its own)
FORMULAS_HINT = ("<p><small>Type plain numbers: 49280 (no thousands separators), -3 (the minus on the "
                 "keyboard), 1.5e-3.</small></p>")


def formulas_shares(p: Problem) -> list[Fraction]:
    """Each box's share of the question, in box order: every part the same share, every cell of a part
    the same share of it (as ``question_bank.grading`` splits a multi-part or matrix answer)."""
    boxes = formulas_boxes(p)
    n_parts = max(b[0] for b in boxes) + 1
    per_part = [sum(1 for b in boxes if b[0] == k) for k in range(n_parts)]
    return [Fraction(1, n_parts * per_part[k]) for k, _, _ in boxes]


def _answermarks(p: Problem) -> list[str]:
    """Each box's part mark, seven decimals as Moodle stores marks, the last taking what rounding left so
    that they add up to the sheet's marks exactly (``import_from_xml``: defaultmark = Σ answermark)."""
    shares = formulas_shares(p)
    marks = [round(float(sh * p.marks), 7) for sh in shares]
    marks[-1] = round(p.marks - sum(marks[:-1]), 7)
    return [_r(m) for m in marks]


def _formulas_layout(p: Problem) -> str:
    """The question text after the statement: each part's prompt, and each box's placeholder ``{#k}``
    (a matrix as a table of them) where qtype_formulas puts that box's part."""
    out = []
    j = 0
    keys = [(f"({html.escape(pt.label)}) " + inline_to_html(pt.prompt_md, mathjax), pt.key) for pt in p.parts] \
        if p.parts else [("", p.key)]
    for prompt, key in keys:
        if prompt:
            out.append(f"<p>{_no_placeholders(prompt)}</p>")
        if isinstance(key, MatrixKey):
            rows = []
            for row in key.value:
                rows.append("<tr>" + "".join(f"<td>{{#{j + c + 1}}}</td>" for c in range(len(row))) + "</tr>")
                j += len(row)
            out.append('<table class="matrix">' + "".join(rows) + "</table>")
            if any(math.isinf(float(x)) for r in key.value for x in r):
                out.append("<p><small>Type −∞ as -1e99 (any number ≤ -1e30).</small></p>")
        else:
            out.append(f"<p>{{#{j + 1}}}</p>")
            j += 1
    out.append(FORMULAS_HINT)
    return "\n".join(out)


def _formulas(q: ET.Element, i: int, p: Problem, full: bool) -> None:
    """Issue 38: one qtype_formulas part per box (placeholder ``#k``, one ``{_0}``), each worth its share of
    the marks: a blank or unreadable box costs that box only (one part holding every box scored 0 for it)."""
    _common(q, i, p, _no_placeholders(_statement(p)) + "\n" + _formulas_layout(p), full, p.marks)
    for tag in ("correctfeedback", "partiallycorrectfeedback", "incorrectfeedback"):
        _text(q, tag, "")
    ET.SubElement(ET.SubElement(q, "varsrandom"), "text").text = ""
    ET.SubElement(ET.SubElement(q, "varsglobal"), "text").text = ""
    ET.SubElement(ET.SubElement(q, "answernumbering"), "text").text = "none"
    for k, ((_, acc, x), mark) in enumerate(zip(formulas_boxes(p), _answermarks(p), strict=True)):
        ok = (f"(_0 <= {_r(_FORMULAS_INF_BOUND)})" if acc is None
              else "(" + " || ".join(f"abs(_0 - {_r(c)}) <= {_r(t)}" for c, t in acc) + ")")
        part = ET.SubElement(q, "answers")
        fields = {
            "partindex": str(k),
            "placeholder": f"#{k + 1}",
            "answermark": mark,
            "answertype": "0",
            "numbox": "1",
            "vars1": "",
            "answer": f"[{_fnum(x)}]",
            "answernotunique": "1",
            "vars2": "",
            "correctness": ok,
            "unitpenalty": "1",
            "postunit": "",
            "ruleid": "1",
            "otherrule": "",
        }
        for tag, value in fields.items():
            ET.SubElement(ET.SubElement(part, tag), "text").text = value
        _text(part, "subqtext", "{_0}")
        for tag in ("feedback", "correctfeedback", "partiallycorrectfeedback", "incorrectfeedback"):
            _text(part, tag, "")


MOODLE_CLOZE = ("cloze", "formulas")


def quiz_element(sheet, version: str) -> ET.Element:
    full = version != "student"
    allornothing = getattr(sheet, "moodle_msq", "multichoice") == "allornothing"
    formulas = getattr(sheet, "moodle_cloze", "cloze") == "formulas"
    quiz = ET.Element("quiz")
    cat = ET.SubElement(quiz, "question", {"type": "category"})
    # a category path: "/" separates categories, "//" is a slash in a name (qformat_default::split_category_path)
    top = "$course$/top/qkv/" + html.escape(sheet.title, quote=False).replace("/", "//")
    _text(cat, "category", top, fmt=None)
    for i, p in sheet.numbered():
        if sec := sheet.section_at(i):  # a paper's section (issue 26): a subcategory of the sheet's
            sub = ET.SubElement(quiz, "question", {"type": "category"})
            _text(sub, "category", top + "/" + html.escape(sec.name, quote=False).replace("/", "//"), fmt=None)
            _text(sub, "info", html.escape(sec.heading()))
        if is_cloze(p) and formulas:
            q = ET.SubElement(quiz, "question", {"type": "formulas"})
            _formulas(q, i, p, full)
        elif is_cloze(p):
            q = ET.SubElement(quiz, "question", {"type": "cloze"})
            _common(q, i, p, _cloze(p, full), full, moodle_mark(p))
        elif p.type in ("nat", "integer"):
            q = ET.SubElement(quiz, "question", {"type": "numerical"})
            _common(q, i, p, _statement(p), full)
            _numerical(q, p, full)
        else:
            aon = allornothing and p.type == "msq"
            q = ET.SubElement(quiz, "question", {"type": "multichoiceset" if aon else "multichoice"})
            _common(q, i, p, _statement(p), full)
            sec = sheet.section_of(i)  # a paper's section: a wrong MCQ costs what its heading says (issue 38)
            _multichoice(q, p, full, aon, penalty_fraction(sec.mcq_penalty) if sec is not None else "0")
    return quiz


def render(sheet, version: str) -> bytes:
    root = quiz_element(sheet, version)
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode", xml_declaration=False)
    # characters XML 1.0 does not allow anywhere, not even as &#n; (C0 controls but tab, LF, CR;
    # U+FFFE, U+FFFF), from a sheet file's text: written U+FFFD, so that the file stays well-formed
    text = _NOT_XML.sub("\ufffd", text)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + text.encode("utf-8") + b"\n"


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
