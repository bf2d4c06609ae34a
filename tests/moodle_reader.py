"""Moodle's own reading of a Moodle XML question file, redone in Python for the tests.

An independent reading of what ``drills.sheets.moodle`` writes: it follows Moodle's source,
not ours (moodle/moodle, question/format/xml/format.php ``qformat_xml::import_headers`` /
``import_multianswer``; question/type/multianswer/questiontype.php
``qtype_multianswer_extract_question`` and ``qtype_multianswer_validate_question`` with its
regular expressions; question/type/multianswer/question.php ``grade_response``;
question/type/multichoice/question.php (multi: the ticked fractions summed and clamped to
[0, 1]); lib/questionlib.php ``question_bank::fraction_options_full`` and
``match_grade_options``; plugin jmvedrine/moodle-qtype_multichoiceset questiontype.php
``import_from_xml``: an answer with a non-zero fraction is a correct one, all or nothing).

:func:`read_quiz` returns one :class:`MoodleQuestion` per question with its maximum mark
(``defaultmark`` as Moodle stores it) and a :meth:`MoodleQuestion.grade` that scores a
response the way the question engine would.
"""

from __future__ import annotations

import html
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

# question/type/multianswer/questiontype.php (Python's re needs one fixed width per look-behind:
# PCRE's (?<!\\|&|&amp;) is written as three look-behinds, the same condition)
ALT_FRACTION = r"=|%(-?[0-9]+(?:[.,][0-9]*)?)%"
ALT_ANSWER = r".+?(?<!\\)(?<!&)(?<!&amp;)(?=[~#}]|$)"
ALT_FEEDBACK = r".*?(?<!\\)(?=[~}]|$)"
ALT = f"({ALT_FRACTION})?({ALT_ANSWER})(#({ALT_FEEDBACK}))?"
NUMBER = r"-?(([0-9]+[.,]?[0-9]*|[.,][0-9]+)([eE][-+]?[0-9]+)?)"
NUMERICAL_ALT = f"^({NUMBER})(:{NUMBER})?$"
TYPES = ("(NUMERICAL|NM)|(MULTICHOICE|MC)|(MULTICHOICE_V|MCV)|(MULTICHOICE_H|MCH)|"
         "(SHORTANSWER|SA|MW)|(SHORTANSWER_C|SAC|MWC)|"
         "(MULTICHOICE_S|MCS)|(MULTICHOICE_VS|MCVS)|(MULTICHOICE_HS|MCHS)|"
         "(MULTIRESPONSE|MR)|(MULTIRESPONSE_H|MRH)|(MULTIRESPONSE_S|MRS)|(MULTIRESPONSE_HS|MRHS)")
ANSWER = r"\{([0-9]*):(" + TYPES + "):(" + ALT + "(~" + ALT + r")*)\}"
# group numbers, as the PHP constants name them
NORM, NUMERICAL, SHORTANSWER, SHORTANSWER_C, ALTERNATIVES = 1, 3, 7, 8, 16
MULTICHOICE_SINGLE = (4, 5, 6, 9, 10, 11)
MULTIRESPONSE = (12, 13, 14, 15)

# question_bank::ensure_fraction_options_initialised: the grades an answer may carry
_RAW = (0.9, 0.8333333, 0.8, 0.75, 0.7, 0.6666667, 0.6, 0.5, 0.4, 0.3333333, 0.3, 0.25, 0.2,
        0.1666667, 0.1428571, 0.125, 0.1111111, 0.1, 0.05)
GRADE_OPTIONS = (0.0, 1.0, -1.0) + _RAW + tuple(-f for f in _RAW)


def valid_grade(fraction: float) -> bool:
    """``match_grade_options(..., 'error')``: the fraction must be one of the standard grades."""
    return any(abs(fraction - g) < 1e-5 for g in GRADE_OPTIONS)


@dataclass
class Sub:
    """One answer box: a wrapped numerical, shortanswer or multichoice question."""

    qtype: str
    weight: float
    single: bool = True
    answers: list[str] = field(default_factory=list)
    fractions: list[float] = field(default_factory=list)
    tolerances: list[float] = field(default_factory=list)

    def grade(self, response: Any) -> float:
        if response is None:
            return 0.0
        if self.qtype == "numerical":
            x = float(response)
            for a, f, t in zip(self.answers, self.fractions, self.tolerances, strict=True):
                if abs(x - float(a.replace(",", "."))) <= t + 1e-12 * max(1.0, abs(x)):
                    return f
            return 0.0
        if self.qtype == "shortanswer":
            for a, f in zip(self.answers, self.fractions, strict=True):
                pattern = "^" + ".*".join(re.escape(s) for s in a.split("*")) + "$"
                if re.match(pattern, str(response).strip(), re.I):
                    return f
            return 0.0
        if self.single:  # response: an option index
            return self.fractions[response]
        return min(1.0, max(0.0, sum(self.fractions[i] for i in response)))


@dataclass
class MoodleQuestion:
    qtype: str
    name: str
    idnumber: str
    defaultmark: float
    subs: list[Sub] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def grade(self, responses: list[Any]) -> float:
        """The fraction (0..1) Moodle gives these responses (one per box; for a whole
        question, a list of one)."""
        if self.qtype == "multianswer":  # question.php grade_response
            total = sum(s.weight for s in self.subs)
            return sum(s.grade(r) * s.weight for s, r in zip(self.subs, responses, strict=True)) / total
        return self.subs[0].grade(responses[0])


def extract_cloze(text: str) -> tuple[float, list[Sub], list[str]]:
    """``qtype_multianswer_extract_question`` + ``qtype_multianswer_validate_question``."""
    subs: list[Sub] = []
    errors: list[str] = []
    mark = 0.0
    while m := re.search(ANSWER, text, re.S):
        weight = float(m.group(NORM)) if m.group(NORM) != "" else 1.0
        if m.group(NUMERICAL):
            sub = Sub("numerical", weight)
        elif m.group(SHORTANSWER) or m.group(SHORTANSWER_C):
            sub = Sub("shortanswer", weight)
        elif any(m.group(g) for g in MULTICHOICE_SINGLE):
            sub = Sub("multichoice", weight, single=True)
        else:
            assert any(m.group(g) for g in MULTIRESPONSE)
            sub = Sub("multichoice", weight, single=False)
        specific = False
        rest = m.group(ALTERNATIVES)
        while alt := re.search("~?" + ALT, rest, re.S):
            if alt.group(1) == "=":
                frac = 1.0
            elif alt.group(2):
                frac = 0.01 * float(alt.group(2).replace(",", "."))
                specific = True
            else:
                frac = 0.0
            ans = alt.group(3)
            num = re.match(NUMERICAL_ALT, ans, re.S) if sub.qtype == "numerical" else None
            if num:
                sub.answers.append(num.group(1))
                sub.tolerances.append(float(num.group(6)) if num.group(6) else 0.0)
            else:
                sub.answers.append(html.unescape(ans).replace("\\}", "}").replace("\\#", "#"))
                sub.tolerances.append(0.0)
            sub.fractions.append(frac)
            rest = rest.split(alt.group(0), 1)[1]
        if not sub.single:  # positive fractions add up to 1
            pos = sum(f for f in sub.fractions if f > 0)
            if pos:
                sub.fractions = [f / pos if f > 0 else (f if specific else -1.0 / pos) for f in sub.fractions]
        mark += weight
        subs.append(sub)
        text = text.replace(m.group(0), f"{{#{len(subs)}}}", 1)
    if not subs:
        errors.append("questionsmissing")
    for k, sub in enumerate(subs, 1):
        if sub.qtype == "numerical" and not all(re.match(f"^{NUMBER}$", a) for a in sub.answers):
            errors.append(f"sub {k}: answermustbenumberorstar")
        if sub.qtype == "multichoice" and len(sub.answers) < 2:
            errors.append(f"sub {k}: notenoughanswers")
        if not any(f == 1 for f in sub.fractions) and not (not sub.single and any(f > 0 for f in sub.fractions)):
            errors.append(f"sub {k}: fractionsnomax")
    return mark, subs, errors


def read_quiz(data: bytes) -> list[MoodleQuestion]:
    root = ET.fromstring(data)
    out = []
    for q in root.findall("question"):
        kind = q.get("type")
        if kind == "category":
            continue
        name = q.findtext("name/text") or ""
        idnumber = q.findtext("idnumber") or ""
        if kind == "formulas":  # plugin qtype_formulas: tests/formulas_reader.py
            from tests.formulas_reader import read_formulas

            out.append(read_formulas(q))
            continue
        if kind == "cloze":  # import_multianswer: no import_headers, no <defaultgrade>
            mark, subs, errors = extract_cloze((q.findtext("questiontext/text") or "").strip())
            out.append(MoodleQuestion("multianswer", name, idnumber, mark, subs, errors))
            continue
        mark = float(q.findtext("defaultgrade") or 1)  # import_headers
        errors = []
        answers = q.findall("answer")
        fractions = [float(a.get("fraction", 0)) / 100 for a in answers]
        if kind == "numerical":
            sub = Sub("numerical", mark, answers=[a.findtext("text").strip() for a in answers], fractions=fractions,
                      tolerances=[float(a.findtext("tolerance") or 0) for a in answers])
        elif kind == "multichoice":
            single = (q.findtext("single") or "true").strip() != "false"
            sub = Sub("multichoice", mark, single=single, answers=[a.findtext("text") for a in answers],
                      fractions=fractions)
        elif kind == "multichoiceset":  # all or nothing: the correct set is the non-zero fractions
            correct = [f != 0 for f in fractions]
            sub = Sub("multichoiceset", mark, single=False, answers=[a.findtext("text") for a in answers],
                      fractions=[1.0 if c else 0.0 for c in correct])
            sub.grade = lambda chosen, c=correct: float(  # type: ignore[method-assign]
                chosen is not None and set(chosen) == {i for i, x in enumerate(c) if x})
            fractions = []  # multichoiceset's import sets correctanswer, not fraction
        else:
            raise AssertionError(f"question type the tests do not read: {kind}")
        errors += [f"invalid grade {f}" for f in fractions if not valid_grade(f)]
        if not math.isfinite(mark) or mark <= 0:
            errors.append("bad defaultgrade")
        out.append(MoodleQuestion(kind, name, idnumber, mark, [sub], errors))
    return out
