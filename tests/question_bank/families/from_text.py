"""What the from-text audits share: reading numbers out of a statement, the rounding a student does,
and the judgement "does the key accept what the text asks for".

Nothing here reads ``Problem.given``, the solution, the misconceptions, the solver or a family's module:
an audit recomputes the answer from ``statement_text`` (and ``options_text``) with formulas written in its
own test file, and this module only compares that value with the key, the way a student is graded.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from question_bank.grading import grade
from question_bank.problem import ChoiceKey, Problem

#: a fixed block of seeds per level: 20 small ones and 20 from a window no other test draws
SEEDS = tuple(range(20)) + tuple(range(70_000, 70_020))

_NUM = r"-?\d[\d,]*(?:\.\d+)?"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


class Unreadable(AssertionError):
    """The text does not give what the answer needs (or says it in a way this audit cannot read)."""


def num(s: str) -> float:
    return float(s.replace(",", ""))


def frac(s: str) -> Fraction:
    return Fraction(s.replace(",", ""))


def field(text: str, name: str, pattern: str = _NUM) -> str:
    """The value printed as ``name = value`` (first occurrence); Unreadable if the text has none."""
    m = re.search(rf"(?<![\w']){re.escape(name)} = ({pattern})", text)
    if not m:
        raise Unreadable(f"no '{name} = …' in the text")
    return m[1]


def fnum(text: str, name: str) -> Fraction:
    return frac(field(text, name))


def search(text: str, pattern: str, what: str) -> re.Match:
    m = re.search(pattern, text)
    if not m:
        raise Unreadable(f"the text does not say {what} (pattern {pattern!r})")
    return m


def decimals_asked(text: str) -> int | None:
    """The rounding the question asks for: d decimal places, 0 for a whole number, None if it asks none."""
    if m := re.search(r"[Rr]ound(?:ed)? off to (one|two|three|four|five|six) decimal places?", text):
        return _WORDS[m[1]]
    if re.search(r"whole number|nearest integer|[Rr]ound(?:ed)? off to the nearest", text):
        return 0
    return None


def rounded(x: Fraction | float, d: int) -> Decimal:
    """x rounded half away from zero to d decimals, as a student writes it on paper."""
    q = Decimal(1).scaleb(-d)
    return Decimal(str(float(x))).quantize(q, rounding=ROUND_HALF_UP) if isinstance(x, float) else \
        (Decimal(x.numerator) / Decimal(x.denominator)).quantize(q, rounding=ROUND_HALF_UP)


def disagreement(p: Problem, value: Fraction | float) -> str | None:
    """None if the key accepts ``value`` (the audit's own answer from the text), else what is wrong.

    NAT: the answer rounded as the question asks (or the integer, when it asks no rounding and the
    value is whole) must be graded correct, and so must the unrounded value. MCQ: the one option whose
    printed number is the audit's value rounded to the asked decimals must be the keyed option, and no
    other option may print that number."""
    d = decimals_asked(p.statement_text)
    if isinstance(p.key, ChoiceKey):
        if d is None:
            if Fraction(value).denominator != 1:
                return f"the question asks no rounding but the answer {float(value)} is not whole"
            d = 0
        want = rounded(value, d)
        printed = []
        for o in p.options_text:
            m = re.match(rf"\s*({_NUM})", o)
            if not m:
                return f"an option without a number: {o!r}"
            printed.append(Decimal(m[1].replace(",", "")))
        hits = {i for i, x in enumerate(printed) if x == want}
        if hits != set(p.key.correct):
            return (f"audit {float(value)!r} -> {want}; options {[str(x) for x in printed]}; "
                    f"matching {sorted(hits)}, keyed {sorted(p.key.correct)}")
        return None
    if d is None:
        if Fraction(value).denominator != 1:
            return f"the question asks no rounding but the answer {float(value)} is not whole"
        d = 0
    written = str(rounded(value, d))
    v = grade(p, Decimal(written), written=written)
    if not v.correct:
        return f"audit {float(value)!r}, written {written}: graded {v.status} ({v.accepted}); key {p.key}"
    v = grade(p, float(value))
    if not v.correct:
        return f"audit {float(value)!r} unrounded: graded {v.status} ({v.accepted}); key {p.key}"
    return None


def report(p: Problem, why: str) -> str:
    opts = "".join(f"\n  ({chr(97 + i)}) {o}" for i, o in enumerate(p.options_text))
    return f"{p.id}: {why}\n--- statement ---\n{p.statement_text}{opts}"


def audit(p: Problem, answer) -> str | None:
    """Run ``answer(statement_text) -> value`` and judge the key; a failure message, or None."""
    try:
        value = answer(p.statement_text)
    except Unreadable as e:
        return report(p, f"cannot recompute from the text: {e}")
    why = disagreement(p, value)
    return report(p, why) if why else None


def misconception_mismatches(p: Problem, wrong: dict[str, float | Fraction]) -> list[str]:
    """Each misconception of ``p`` whose id ``wrong`` recomputes from the text must carry that value
    (relative 1e-9): the feedback names a mistake the numbers on the screen really give."""
    out = []
    for m in p.misconceptions:
        if m.id in wrong and m.value is not None:
            want = float(wrong[m.id])
            if not math.isclose(float(m.value), want, rel_tol=1e-9, abs_tol=1e-12):
                out.append(report(p, f"misconception {m.id} ({m.label}): value {m.value!r}, the text gives {want!r}"))
    return out
