"""What the outsider's key audits (``test_from_text_*.py``) share: drawing problems, reading numbers
from the plain text a student reads, and asking the key whether it accepts a recomputed value.

Nothing here reads ``p.given``, the worked solution or the misconceptions, and nothing is imported from
the solver or from a family's module: the audits recompute every key from ``statement_text`` (and
``options_text``) with formulas written in the test files, so that they share no reading of the problem
with the code under test. The same files check the misconceptions too: each named slip's value must be
the wrong value that slip gives on the numbers in the statement (:func:`slip_disagreements`). Run a test
file as a script (``python -m tests.question_bank.families.test_from_text_counting_params``) to sweep 300
seeds per level from 0 and from 70,000 and print every disagreement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_UP, Decimal

import question_bank.families  # noqa: F401  (registers the families)
from question_bank.family import FAMILIES
from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, NumericKey, Problem

#: the seeds every audit checks in the suite; the sweep adds 300 per level from 0 and from 70,000
FIXED_SEEDS = range(40)
SWEEP_SEEDS = (*range(300), *range(70_000, 70_300))
_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4}


def with_views(fids: Iterable[str]) -> list[str]:
    """The family ids and their MCQ views (``FID_mcq``) where the bank has one."""
    return [f for fid in fids for f in (fid, f"{fid}_mcq") if f in FAMILIES]


def draws(fids: Iterable[str], seeds: Iterable[int]) -> Iterable[tuple[str, int, str]]:
    """(family id, seed, level) for every level of every family."""
    seeds = tuple(seeds)
    for fid in fids:
        for lv in FAMILIES[fid].levels:
            for s in seeds:
                yield fid, s, lv


def num(pattern: str, text: str) -> int | float:
    """The number the first group of ``pattern`` captures in ``text`` (commas as thousands
    separators); fails with the text when the statement does not give it."""
    m = re.search(pattern, text)
    assert m, f"the text does not give {pattern!r}:\n{text}"
    s = m[1].replace(",", "")
    return float(s) if re.search(r"[.eE]", s) else int(s)


def has(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


def asked_decimals(text: str) -> int | None:
    """The rounding the statement asks for: 'to two decimal places' -> 2, 'nearest integer' -> 0."""
    if m := re.search(r"to (\w+) decimal places?", text):
        return _WORDS[m[1]] if m[1] in _WORDS else int(m[1])
    if "nearest integer" in text:
        return 0
    return None


def rounded(value: float, decimals: int) -> Decimal:
    """Rounded half away from zero, as on paper, from the value's shortest decimal repr."""
    return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def option_number(opt: str) -> Decimal:
    m = re.match(r"\s*(-?[\d,]*\.?\d+)", opt)
    assert m, f"an option without a number: {opt!r}"
    return Decimal(m[1].replace(",", ""))


def describe(p: Problem) -> str:
    opts = "".join(f"\n  ({chr(97 + i)}) {o}" for i, o in enumerate(p.options_text))
    return f"{p.id}\n{p.statement_text}{opts}"


def disagreement(p: Problem, value: float | int) -> str | None:
    """None when the key accepts ``value`` (recomputed from the text) as a student would type it;
    otherwise one paragraph: the problem, the statement and both values.

    NAT: the value rounded as the statement asks must be accepted, and so must the exact value.
    Integer: the exact count. MCQ: the keyed option is the one option whose printed number equals the
    value (rounded as asked, or exactly for a count), and no other option prints that number too."""
    key = p.key
    ndp = asked_decimals(p.statement_text)
    if isinstance(key, IntegerKey):
        if value != int(value):
            return f"{describe(p)}\nrecomputed {value} is not a whole number; key {key.value}"
        if not grade(p, int(value)).correct:
            return f"{describe(p)}\nkey {key.value} does not accept recomputed {int(value)}"
        return None
    if isinstance(key, NumericKey):
        if ndp is None:
            return f"{describe(p)}\nthe statement asks for no rounding; key {key.value}, recomputed {value}"
        typed = rounded(value, ndp)
        v = grade(p, typed, written=str(typed))
        if not v.correct:
            return (f"{describe(p)}\nkey {key.value} [{key.lo}, {key.hi}] rejects the recomputed {value!r} "
                    f"rounded as asked: {typed}")
        if not grade(p, float(value)).correct:
            return f"{describe(p)}\nkey {key.value} [{key.lo}, {key.hi}] rejects the exact recomputed {value!r}"
        return None
    if isinstance(key, ChoiceKey):
        target = Decimal(int(value)) if ndp is None and value == int(value) else rounded(value, ndp or 0)
        if ndp is None and value != int(value):
            return f"{describe(p)}\nthe statement asks for no rounding; recomputed {value}"
        hits = {i for i, o in enumerate(p.options_text) if option_number(o) == target}
        if hits != set(key.correct):
            return (f"{describe(p)}\nkeyed {sorted(key.correct)}, but the options printing the recomputed "
                    f"{value!r} (as {target}) are {sorted(hits)}")
        return None
    return f"{describe(p)}\nan unexpected key type {type(key).__name__}"


def audit(fid: str, seed: int, level: str, recompute: Callable[[str, Problem], float | int]) -> str | None:
    """Draw one problem and compare its key with ``recompute(text, problem)``; the problem is passed
    only for its options and parts (the recomputation reads ``statement_text``)."""
    p = FAMILIES[fid].generate(seed, level)
    try:
        value = recompute(p.statement_text, p)
    except AssertionError as e:
        return f"{describe(p)}\ncannot recompute from the text: {e}"
    return disagreement(p, value)


def sweep(fids: Iterable[str], check: Callable[[str, int, str], str | None], seeds=SWEEP_SEEDS,
          slips: dict[str, dict] | None = None) -> int:
    """Print every disagreement ``check(fid, seed, level)`` reports over ``seeds`` at every level of
    each family and its MCQ view (the first three in full), then those of the misconceptions named in
    ``slips`` (family id -> slip id -> wrong value from the text); return how many there were."""
    bad = 0
    for fid, wrongs in (slips or {}).items():
        checked, found = slip_block(with_views([fid]), lambda f, w=wrongs: w, seeds)
        for msg in found[:3]:
            print(msg, "\n")
        print(f"{fid} misconceptions: {checked} checked, {len(found)} disagreements")
        bad += len(found)
    for fid in with_views(fids):
        n_bad = 0
        for _, s, lv in draws([fid], seeds):
            if (msg := check(fid, s, lv)) is not None:
                n_bad += 1
                if n_bad <= 3:
                    print(msg, "\n")
        print(f"{fid}: {len(tuple(seeds)) * len(FAMILIES[fid].levels)} draws, {n_bad} disagreements")
        bad += n_bad
    print(f"{bad} disagreements in all")
    return bad


def slip_disagreements(p: Problem, wrongs: dict[str, Callable[[str], float | int]]) -> tuple[int, list[str]]:
    """The misconceptions of ``p`` named in ``wrongs`` (a slip id -> the wrong value that slip gives,
    recomputed from the statement text): how many were checked, and one paragraph for each whose value is
    not that (NAT: the exact wrong value, or the same after the asked rounding; MCQ: the option it names
    prints the wrong value). A merged id ('a+b') passes when any named slip gives its value (NAT only)."""
    checked, bad = 0, []
    ndp = asked_decimals(p.statement_text)
    for m in p.misconceptions:
        ids = [i for i in m.id.split("+") if i in wrongs]
        if not ids or isinstance(p.key, ChoiceKey) and (
                m.id not in wrongs or not re.match(r"\s*-?[\d,]*\.?\d", p.options_text[m.value])):
            continue  # an MCQ option named after several slips or a slip reversed, or a claim in words: not judged here
        checked += 1
        wants = [wrongs[i](p.statement_text) for i in ids]
        if isinstance(p.key, ChoiceKey):
            shown = option_number(p.options_text[m.value])
            ok = any(shown == (Decimal(int(w)) if ndp is None else rounded(w, ndp)) for w in wants)
        else:
            ok = any(abs(float(m.value) - float(w)) <= 1e-9 * max(1.0, abs(float(w))) for w in wants) or (
                ndp is not None and any(rounded(float(m.value), ndp) == rounded(w, ndp) for w in wants))
        if not ok:
            bad.append(f"{describe(p)}\nmisconception {m.id} ({m.label}): value {m.value!r}, "
                       f"recomputed from the text {wants!r}")
    return checked, bad


def slip_block(fids: Iterable[str], wrongs_for: Callable[[str], dict], seeds: Iterable[int]) -> tuple[int, list[str]]:
    """slip_disagreements over every level of ``fids`` at ``seeds``: (slips checked, disagreements)."""
    checked, bad = 0, []
    for fid, s, lv in draws(fids, seeds):
        c, b = slip_disagreements(FAMILIES[fid].generate(s, lv), wrongs_for(fid))
        checked += c
        bad += b
    return checked, bad
