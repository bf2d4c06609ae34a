"""Judging a family's key against a value recomputed from the text a student reads.

Used by the ``test_from_text_*`` files: each of them parses the numbers of ``statement_text`` (and, for a
choice item, ``options_text``) with regular expressions and applies its own formula; this module only says
whether the key agrees with that value, the way a student would be graded:

- a NAT key must accept the value itself and the value rounded half away from zero to the decimals the
  statement asks for (typed as the student types it), through ``question_bank.grading.grade``;
- a numeric MCQ must key exactly the one option whose printed figure is the value rounded to the option's
  own decimals (no second option within that half unit).

Nothing here reads ``given`` or the solution, nor imports the solver or a family module; the misconceptions are read
only by ``misconception_disagreements``, which checks their values against the text's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_UP, Decimal

import question_bank.families  # noqa: F401 (registers the families)
from question_bank.family import FAMILIES
from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, NumericKey, Problem

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def num(s: str) -> float:
    """A number as printed: thousands commas allowed."""
    return float(s.replace(",", ""))


def find(pattern: str, text: str, flags: int = 0) -> re.Match:
    """The first match of ``pattern`` in ``text``; a statement that lacks it is a finding (the text does not
    give what the answer needs), reported with the pattern."""
    m = re.search(pattern, text, flags)
    if m is None:
        raise LookupError(f"the text does not say {pattern!r}")
    return m


def asked_decimals(text: str) -> int | None:
    """The decimals the statement asks for: "rounded off to two decimal places", "(3 decimal places)",
    "to the nearest integer" (0); None when it asks for no rounding."""
    if m := re.search(r"to (\w+) decimal places?", text):
        w = m[1].lower()
        return _WORDS[w] if w in _WORDS else int(w)
    if m := re.search(r"\((\d+) decimal places?\)", text):
        return int(m[1])
    if re.search(r"nearest (?:whole number|integer)", text):
        return 0
    return None


def rounded(x: float, d: int) -> Decimal:
    """``x`` rounded half away from zero to ``d`` decimals, as written on paper."""
    return Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)


def option_values(p: Problem) -> list[tuple[float, int]]:
    """Each option's printed figure and its number of decimals."""
    out = []
    for o in p.options_text:
        m = _NUMBER.search(o)
        assert m, f"{p.id}: option {o!r} has no figure"
        s = m[0].replace(",", "")
        out.append((float(s), len(s.split(".")[1]) if "." in s else 0))
    return out


def disagreement(p: Problem, value: float) -> str | None:
    """Why the key of ``p`` does not agree with ``value`` (recomputed from the text), or None."""
    key = p.key
    if isinstance(key, ChoiceKey):
        opts = option_values(p)
        near = [i for i, (v, d) in enumerate(opts) if abs(v - value) <= 0.5 * 10.0 ** -d + 1e-9 * max(1.0, abs(value))]
        if near != sorted(key.correct) or len(near) != 1:
            return f"options {p.options_text} match {near}, keyed {sorted(key.correct)}"
        return None
    if isinstance(key, IntegerKey):
        if not grade(p, round(value)).correct:
            return f"key {key.value} does not accept {round(value)}"
        return None
    assert isinstance(key, NumericKey), f"{p.id}: a key of type {type(key).__name__}"
    if not grade(p, value).correct:
        return f"key [{key.lo}, {key.hi}] (value {key.value}) does not accept the exact {value!r}"
    if not math.isclose(key.value, value, rel_tol=1e-9, abs_tol=1e-12):
        return f"key value {key.value!r} is not what the printed numbers give, {value!r} (though its range accepts it)"
    d = asked_decimals(p.statement_text)
    if d is not None:
        r = rounded(value, d)
        if not grade(p, r, written=str(r)).correct:
            return f"key [{key.lo}, {key.hi}] (value {key.value}) does not accept {r}, the value {value!r} rounded to {d}"
    return None


def draws(fid: str, seeds: Iterable[int]) -> Iterable[tuple[str, Problem]]:
    f = FAMILIES[fid]
    for level in f.levels:
        for s in seeds:
            yield level, f.generate(s, level)


def views(fids: Iterable[str]) -> list[tuple[str, str]]:
    """(family, its base family) for each family and each of its MCQ views that exists."""
    out = []
    for fid in fids:
        out += [(v, fid) for v in (fid, fid + "_mcq") if v in FAMILIES]
    return out


def audit(p: Problem, recompute: Callable[[Problem], float]) -> str | None:
    """A report of the disagreement between ``p``'s key and ``recompute(p)`` (the text's value), or None."""
    try:
        value = recompute(p)
    except (LookupError, AssertionError) as e:
        return f"{p.id}: {e}\n{p.statement_text}"
    why = disagreement(p, value)
    return None if why is None else f"{p.id}: from the text {value!r}; {why}\n{p.statement_text}"


def audit_many(fid: str, level: str, seeds: Iterable[int], recompute: Callable[[Problem], float]) -> list[str]:
    f = FAMILIES[fid]
    return [r for s in seeds if (r := audit(f.generate(s, level), recompute)) is not None]


def question(text: str) -> str:
    """The paragraph that asks the question (the last with a question mark), where the unit is named."""
    return [para for para in text.split("\n\n") if "?" in para][-1]


def misconception_disagreements(fid: str, seeds: Iterable[int], wrongs: dict[str, Callable[[Problem], float]],
                                rel: float = 1e-9) -> tuple[int, list[str]]:
    """(values checked, reports): each misconception of ``fid``'s draws whose id ``wrongs`` names must have the value
    that mistake gives on the numbers printed (``wrongs[id](p)``, recomputed from the text), so that the feedback is
    right for the numbers on the screen."""
    f, checked, bad = FAMILIES[fid], 0, []
    for level in f.levels:
        for s in seeds:
            p = f.generate(s, level)
            for m in p.misconceptions:
                if m.id not in wrongs:
                    continue
                checked += 1
                fn = wrongs[m.id]  # (p) or, marked ``reads_label``, (p, label): the value the label's own formula names
                want = fn(p, m.label) if getattr(fn, "reads_label", False) else fn(p)
                if isinstance(p.key, ChoiceKey):  # the option the mistake picks shows the mistake's value
                    v, d = option_values(p)[m.value]
                    if abs(v - want) > 0.5 * 10.0 ** -d + 1e-9 * max(1.0, abs(want)):
                        bad.append(f"{p.id}: misconception {m.id} ({m.label}) picks option {p.options_text[m.value]!r}; "
                                   f"from the text {want!r}\n{p.statement_text}")
                elif not math.isclose(float(m.value), want, rel_tol=rel, abs_tol=1e-12):
                    bad.append(f"{p.id}: misconception {m.id} ({m.label}) has {m.value!r}; from the text {want!r}\n"
                               f"{p.statement_text}")
    return checked, bad
