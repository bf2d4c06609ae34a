"""An outsider's reading of a problem, for the audits of the attention, norm, positional, loss, sampling and
complexity families (``test_from_text_<module>.py``): numbers and ⎡ ⎤-drawn matrices parsed from the text a
student sees, and the key asked whether it accepts the answer a student would write.

Nothing here reads a problem's ``given``, its solution or its misconceptions (except
:func:`check_mistakes`, which checks them), and nothing is imported from ``solver`` or from the families'
modules: the numbers come from ``statement_text`` (and ``options_text``, a part's ``prompt_text``) by
regular expressions, and the formulas are written in each audit file. A disagreement is returned as one
line that names the problem, quotes the statement and gives both values (:func:`report`). (The other
from-text audits share ``from_text.py``, ``from_text_hardware.py`` and ``key_from_text.py``.)
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import numpy as np

import question_bank.families  # noqa: F401  (registers every family)
from question_bank.family import FAMILIES
from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, Problem

#: seeds of the fixed block each audit checks per level (the sweep of the report used 0..299 and
#: 70,000..70,299)
BLOCK = range(40)
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_OPEN, _CLOSE = "⎡⎢⎣[", "⎤⎥⎦]"
_SEG = re.compile(r"[⎡⎢⎣]([^⎤⎥⎦⎡⎢⎣]*)[⎤⎥⎦]")
_NUM = r"-?\d+(?:\.\d+)?(?:/\d+)?"


class Unreadable(AssertionError):
    """The text does not give what the answer needs (a number or a convention is missing)."""


def draws(fid: str, seeds=BLOCK):
    f = FAMILIES[fid]
    for lv in f.levels:
        for s in seeds:
            yield f.generate(s, lv)


def number(s: str) -> float:
    s = s.replace(",", "").replace("−", "-")
    if "/" in s:
        return float(Fraction(s))
    return float(s)


def find(pattern: str, text: str, conv=number, group: int = 1):
    """The first match of ``pattern`` in ``text``, converted; Unreadable when there is none."""
    m = re.search(pattern, text)
    if m is None:
        raise Unreadable(f"the text does not say {pattern!r}")
    return conv(m[group])


def vector(name: str, text: str) -> list[float]:
    """``x = [1 6 3 -2]`` or ``m = [1, 1, 0]``."""
    m = re.search(rf"(?<![\w']){re.escape(name)} = \[([^\]]*)\]", text)
    if m is None:
        raise Unreadable(f"no vector {name} in the text")
    return [number(t) for t in re.split(r"[,\s]+", m[1].strip()) if t]


def matrices(text: str) -> dict[str, list[list[float]]]:
    """The matrices drawn with ⎡ ⎢ ⎣ brackets side by side (``Q = ⎡ 1 0 ⎤   K = ⎡ … ⎤``): the k-th
    bracketed segment of each line belongs to the k-th name, names ordered by their column."""
    lines = [ln for ln in text.splitlines() if _SEG.search(ln)]
    if not lines:
        raise Unreadable("no matrix drawn in the text")
    names: list[tuple[int, str]] = []
    for ln in lines:
        names += [(m.start(), m[1]) for m in re.finditer(r"(\S+) = [⎡⎢⎣]", ln)]
    names.sort()
    out: dict[str, list[list[float]]] = {n: [] for _, n in names}
    for ln in lines:
        segs = _SEG.findall(ln)
        if len(segs) != len(names):
            raise Unreadable(f"a matrix line with {len(segs)} rows for {len(names)} names: {ln!r}")
        for (_, n), seg in zip(names, segs, strict=True):
            out[n].append([number(t) for t in seg.split()])
    return out


def decimals_asked(text: str) -> int:
    m = re.search(r"(?:[Rr]ound(?:ed)? off to|rounded to|round to) (\w+) decimal places?", text) or \
        re.search(r"\((\w+) decimal places?\)", text)
    if m is None:
        raise Unreadable("the text asks for no rounding")
    return WORDS.get(m[1]) or int(m[1])


def round_half_up(x: float, d: int) -> Decimal:
    """x rounded half away from zero to d decimals, from its shortest decimal form (on paper)."""
    return Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)


def report(p: Problem, what: str, mine, key) -> str:
    return f"{p.id}: {what}: recomputed from the text {mine!r}, key {key!r}\n    statement: {p.statement_text!r}"


def check_nat(p: Problem, value: float, target=None) -> list[str]:
    """The key accepts ``value`` written to the decimals the text asks (and the unrounded value)."""
    t = target if target is not None else p
    key = t.key
    text = p.statement_text + " " + getattr(t, "prompt_text", "")
    if not isinstance(key, NumericKey):
        return [report(p, f"a {type(key).__name__} where the text asks for a rounded number", value, key)]
    d = decimals_asked(text)
    written = str(round_half_up(value, d))
    out = []
    if not grade(key, Decimal(written), written=written).correct:
        out.append(report(p, f"the key refuses {written} (to {d} decimals)", value, (key.value, key.lo, key.hi)))
    if key.decimals != d:
        out.append(report(p, f"the text asks {d} decimals, the key keeps {key.decimals}", value, key.value))
    return out


def check_int(p: Problem, value: int, target=None) -> list[str]:
    key = (target if target is not None else p).key
    if isinstance(key, IntegerKey):
        ok = grade(key, int(value)).correct
    elif isinstance(key, NumericKey):
        ok = grade(key, Decimal(int(value)), written=str(int(value))).correct
    else:
        return [report(p, f"a {type(key).__name__} for a count", value, key)]
    return [] if ok else [report(p, "the key refuses the count", int(value), key_value(key))]


def check_matrix(p: Problem, rows, target=None, text: str = "") -> list[str]:
    """The key accepts every entry written to the decimals the text asks (exact when it asks none)."""
    t = target if target is not None else p
    key = t.key
    if not isinstance(key, MatrixKey):
        return [report(p, f"a {type(key).__name__} for a matrix", rows, key)]
    text = text or (p.statement_text + " " + getattr(t, "prompt_text", ""))
    try:
        d = decimals_asked(getattr(t, "prompt_text", "") or text)
    except Unreadable:
        d = None
    written = [[float(round_half_up(x, d)) if d is not None else float(x) for x in r] for r in rows]
    if not grade(key, written).correct:
        return [report(p, f"the key refuses the matrix written to {d} decimals", written, key.value)]
    return []


def key_value(key):
    return getattr(key, "value", None)


def check_choice(p: Problem, value: float, d: int | None = None) -> list[str]:
    """The one option that ``value`` rounds to (to the text's decimals) is the keyed one."""
    d = decimals_asked(p.statement_text) if d is None else d
    r = round_half_up(value, d)
    hits = {i for i, o in enumerate(p.options_text) if Decimal(o.strip()) == r}
    out = []
    if len(hits) != 1:
        out.append(report(p, f"{len(hits)} options equal {r} (options {p.options_text})", value, sorted(p.key.correct)))
    elif not isinstance(p.key, ChoiceKey) or set(p.key.correct) != hits:
        out.append(report(p, f"the option equal to {r} is not the keyed one (options {p.options_text})", sorted(hits),
                          sorted(p.key.correct)))
    return out


def check_truths(p: Problem, truth) -> list[str]:
    """A choice item judged option by option: ``truth(option_text) -> bool``; MCQ wants one true option."""
    mine = {i for i, o in enumerate(p.options_text) if truth(o)}
    if p.type == "mcq" and len(mine) != 1:
        return [report(p, f"{len(mine)} true options (options {p.options_text})", sorted(mine), sorted(p.key.correct))]
    if mine != set(p.key.correct):
        return [report(p, f"keyed options differ (options {p.options_text})", sorted(mine), sorted(p.key.correct))]
    return []


def audit_one(p: Problem, audit) -> list[str]:
    """The disagreements of ``audit`` (problem -> list of lines) on one problem; an unreadable text is
    a disagreement too."""
    try:
        return audit(p)
    except Unreadable as e:
        return [report(p, f"unreadable: {e}", None, key_value(p.key))]


def audit_all(fid: str, audit, seeds=BLOCK) -> list[str]:
    """Every disagreement of ``audit`` over ``seeds`` at every level of the family."""
    return [line for p in draws(fid, seeds) for line in audit_one(p, audit)]


def spoiled(p: Problem) -> Problem:
    """A copy of ``p`` whose key is wrong by more than its tolerance (the last part's too, for a multi-part
    problem): an audit must report it, which shows the audit can fail."""

    def bad(key):
        if isinstance(key, NumericKey):
            step = 3 * 10.0 ** -(key.decimals or 0) + 0.01 * abs(key.value)
            return replace(key, value=key.value + step, lo=key.lo + step, hi=key.hi + step)
        if isinstance(key, IntegerKey):
            return replace(key, value=key.value + 1 + int(abs(key.value) * 0.02))
        if isinstance(key, MatrixKey):
            rows = [list(r) for r in key.value]
            rows[0][0] += 0.1 + 10 * key.abs_tol
            return replace(key, value=tuple(tuple(r) for r in rows))
        if isinstance(key, ChoiceKey):
            n = len(key.correct) if len(key.correct) > 1 else 0
            return replace(key, correct=frozenset({(i + 1) % 4 for i in key.correct}) if not n else
                           key.correct ^ {0})
        raise TypeError(type(key).__name__)

    if p.parts:
        last = replace(p.parts[-1], key=bad(p.parts[-1].key))
        return replace(p, key=last.key, parts=[*p.parts[:-1], last])
    return replace(p, key=bad(p.key))


def audit_catches_wrong_keys(audits: dict, seeds=range(3)) -> list[str]:
    """The problems (fid, id) whose spoiled key some audit did not report."""
    return [p.id for fid, audit in audits.items() for p in draws(fid, seeds) if not audit_one(spoiled(p), audit)]


def check_mistakes(p: Problem, mistakes: dict, seen: set | None = None) -> list[str]:
    """The feedback is right for the numbers on the screen: each misconception that ``mistakes`` (id ->
    text -> value, None where the mistake does not apply) knows carries the value the mistake it names
    gives, recomputed from the text (for an MCQ: the option it points to prints that value, rounded as
    asked); the ids compared are added to ``seen``."""
    out = []
    for m in p.misconceptions:
        if m.id in mistakes:
            mine = mistakes[m.id](p.statement_text)
            if mine is None:
                continue
            if seen is not None:
                seen.add(m.id)
            if p.type == "mcq":  # the value is the option the mistake leads to: it must print the mistake's value
                r = round_half_up(mine, decimals_asked(p.statement_text))
                if not (isinstance(m.value, int) and 0 <= m.value < len(p.options_text)
                        and Decimal(p.options_text[m.value].strip()) == r):
                    out.append(report(p, f"misconception {m.id} ({m.label}) leads to {r}, options {p.options_text}",
                                      r, m.value))
            elif not np.allclose(np.asarray(m.value, dtype=float), np.asarray(mine, dtype=float), rtol=1e-9, atol=1e-9):
                out.append(report(p, f"misconception {m.id} ({m.label})", mine, m.value))
    return out


def mistakes_all(fid: str, mistakes: dict, seeds=BLOCK) -> list[str]:
    """Every misconception of the table that disagrees with the text over ``seeds``; a table entry never
    compared in these draws is reported too (the check would be empty)."""
    seen: set = set()
    out = [line for p in draws(fid, seeds) for line in audit_one(p, lambda q: check_mistakes(q, mistakes, seen))]
    return out + [f"{fid}: misconception {k} was never compared over these seeds" for k in mistakes if k not in seen]
