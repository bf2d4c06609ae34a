"""qtype_formulas' reading and grading of a ``<question type="formulas">``, redone in Python for the
tests, from the plugin's source (FormulasQuestion/moodle-qtype_formulas 6.3.2), not from ours:

- questiontype.php ``import_from_xml``: each ``<answers>`` element is a part; every field of
  ``PART_BASIC_FIELDS`` but ``answernotunique`` must be there (else "error_import_missing_field");
  the question's default mark is ``array_sum(answermark)``.
- classes/local/formulas_part.php ``scan_for_answer_boxes``: the boxes are ``{_0}``, ``{_1}``...
  (regex below; a duplicate is an error); ``grade``: the student's numbers become ``_0``, ``_1``...,
  the criterion ``correctness`` is evaluated and clamped to [0, 1]: the part's fraction.
- classes/local/functions.php: the operators (``||``, ``&&``, comparisons give 1 or 0) and
  evaluator.php's PHP functions (``abs``); lexer.php: numbers with an exponent.

:func:`read_formulas` gives the maximum mark and a grader of a list of responses (one per box);
the expression language is parsed here (a small precedence parser), never evaluated by Python.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

PART_BASIC_FIELDS = ("placeholder", "answermark", "answertype", "numbox", "vars1", "answer", "answernotunique",
                     "vars2", "correctness", "unitpenalty", "postunit", "ruleid", "otherrule")
#: answer type 0 ("number", classes/local/answer_parser.php): an ASCII sign, digits, a point, an exponent
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
BOX = re.compile(r"\{(_u|_\d+)(:\s*([A-Za-z][A-Za-z_0-9]*)\s*(:(MC|MCE|MCS|MCES))?)?((\|[A-Za-z0-9_ .=#]*)*)\}")
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<var>_\d+)|(?P<fn>abs)"
                    r"|(?P<op>\|\||&&|<=|>=|==|!=|[-+*/()<>]))")
_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6}


def tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        assert m and m.end() > pos, f"not in the criterion language the tests read: {expr[pos:pos + 30]!r}"
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def evaluate(expr: str, values: list[float]) -> float:
    """The criterion's value for ``_k = values[k]``."""
    toks = tokens(expr)
    i = 0

    def primary() -> float:
        nonlocal i
        kind, t = toks[i]
        i += 1
        if kind == "num":
            return float(t)
        if kind == "var":
            return float(values[int(t[1:])])
        if kind == "fn":
            assert toks[i] == ("op", "(")
            i += 1
            v = binary(0)
            assert toks[i] == ("op", ")")
            i += 1
            return abs(v)
        if t == "(":
            v = binary(0)
            assert toks[i] == ("op", ")")
            i += 1
            return v
        if t == "-":
            return -primary()
        raise AssertionError(f"unexpected {t!r}")

    def apply(op: str, a: float, b: float) -> float:
        return {"||": lambda: float(bool(a) or bool(b)), "&&": lambda: float(bool(a) and bool(b)),
                "==": lambda: float(a == b), "!=": lambda: float(a != b), "<": lambda: float(a < b),
                "<=": lambda: float(a <= b), ">": lambda: float(a > b), ">=": lambda: float(a >= b),
                "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b}[op]()

    def binary(min_prec: int) -> float:
        nonlocal i
        left = primary()
        while i < len(toks) and toks[i][0] == "op" and _BINARY.get(toks[i][1], 0) > min_prec:
            op = toks[i][1]
            i += 1
            right = binary(_BINARY[op])
            left = apply(op, left, right)
        return left

    v = binary(0)
    assert i == len(toks), "trailing tokens"
    return v


@dataclass
class FormulasPart:
    mark: float
    numbox: int
    answers: list[float]
    correctness: str
    boxes: list[str] = field(default_factory=list)

    def grade(self, responses: list[float | str | None]) -> float:
        """formulas_part.php ``grade``: the criterion clamped to [0, 1]; a part with a blank box or one
        that answer type "number" cannot read (``49,280``, a Unicode minus) scores 0 whole."""
        values = []
        for r in responses:
            if isinstance(r, str):
                if not NUMBER.fullmatch(r.strip()):
                    return 0.0
                r = float(r)
            if r is None:
                return 0.0
            values.append(r)
        return min(1.0, max(0.0, evaluate(self.correctness, values)))


@dataclass
class FormulasQuestion:
    qtype: str
    name: str
    idnumber: str
    defaultmark: float
    parts: list[FormulasPart]
    errors: list[str]

    def grade(self, responses: list[list[float | str | None]]) -> float:
        """The question's fraction: the parts' fractions weighted by their marks (one list of box
        responses per part)."""
        return sum(p.grade(r) * p.mark for p, r in zip(self.parts, responses, strict=True)) / self.defaultmark


def read_formulas(q: ET.Element) -> FormulasQuestion:
    errors: list[str] = []
    parts = []
    for a in q.findall("answers"):
        got = {}
        for f in PART_BASIC_FIELDS:
            t = a.find(f"{f}/text")
            if t is None and f != "answernotunique":
                errors.append(f"error_import_missing_field {f}")
            got[f] = (t.text or "") if t is not None else "1"
        sub = a.findtext("subqtext/text") or ""
        boxes = [m.group(1) for m in BOX.finditer(sub)]
        if len(set(boxes)) != len(boxes):
            errors.append("error_answerbox_duplicate")
        numbox = int(got["numbox"] or 0)
        if sorted(boxes, key=lambda b: int(b[1:])) != [f"_{k}" for k in range(numbox)]:
            errors.append(f"boxes {boxes} are not _0.._{numbox - 1}")
        if got["answertype"] != "0":
            errors.append("answer type is not number")
        answers = [float(x) for x in got["answer"].strip().strip("[]").split(",")] if got["answer"].strip() else []
        if len(answers) != numbox:
            errors.append("answer count is not numbox")
        parts.append(FormulasPart(float(got["answermark"]), numbox, answers, got["correctness"], boxes))
    if not parts:
        errors.append("error_import_missing_parts")
    text = q.findtext("questiontext/text") or ""
    for a in q.findall("answers"):  # edit_formulas_form validation: a part's placeholder is in the text once
        ph = a.findtext("placeholder/text") or ""
        if ph and text.count("{" + ph + "}") != 1:
            errors.append(f"placeholder {ph} not in the question text once")
    # import_from_xml: defaultmark = array_sum(answermark), stored as Moodle stores marks (7 decimals)
    mark = round(sum(p.mark for p in parts), 7)
    return FormulasQuestion("formulas", q.findtext("name/text") or "", q.findtext("idnumber") or "", mark, parts, errors)
