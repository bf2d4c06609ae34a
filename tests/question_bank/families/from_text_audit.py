"""What every outsider's audit (``test_from_text_<module>.py``) shares, written once: the seed blocks, the rule
"does the key accept what the text gives", the failure message, the tests made from a table of recomputations,
and the sweep run by ``python -m tests.question_bank.families.test_from_text_<module>`` and
``bench/from_text_sweep.py``.

An audit file keeps only what is its own: for each family, how to recompute the key (and the named mistakes)
from the text a student reads. Nothing here reads ``Problem.given``, a solution or the solver, nor imports a
family's module or ``question_bank.numeric_mcq``: a recomputation receives ``statement_text`` (or, marked with
:func:`shown`, the problem, for its ``options_text`` and its parts' ``prompt_text``), and this module compares
the value it returns with the key, the way :func:`question_bank.grading.grade` marks a student.

The acceptance rule, by the kind of key (:func:`disagreement`):

- NAT (``NumericKey``): the value rounded half away from zero to the decimals the text asks (0 when it asks
  none and the value is whole) is accepted as typed, the exact value is accepted, the key's value is the
  value (relative 1e-9) and the key rounds to the decimals the text asks;
- integer (``IntegerKey``): the value is whole, accepted, and is the key's value;
- numeric MCQ (``ChoiceKey``, a number): exactly one option prints the value rounded as the text asks (or, when
  it asks nothing, to the decimals that option prints), and it is the keyed one;
- options judged one by one (the recomputation returns the set of indices of the options the text makes
  true): an MCQ has exactly one, and the keyed set is that set (MCQ and MSQ);
- matrix (``MatrixKey``): the entries rounded as the part (or the text) asks, and the exact entries, are
  accepted;
- parts (the recomputation returns ``{label: value}``): each part judged against its own key and prompt, and
  the problem's key is its last part's.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import NamedTuple

import numpy as np

import question_bank.families  # noqa: F401  (registers every family)
from question_bank.family import FAMILIES
from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, Problem

#: the fixed block every audit checks per level in the suite (a slow family may pass fewer, and says why)
SEEDS = range(40)
#: the seeds per level the named mistakes are checked on
MISTAKE_SEEDS = range(20)
#: the sweep: two windows of 300 seeds per level, from 0 and from 70,000
SWEEP_SEEDS = (*range(300), *range(70_000, 70_300))
#: the seeds per level whose keys :func:`spoiled` moves, to show that an audit can fail
SPOIL_SEEDS = range(3)

_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NUM = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?")


class Unreadable(AssertionError):
    """The text does not give what the answer needs (a number or a convention is missing)."""


# --- reading a number as printed: the one reader every audit uses ------------------------------------------------

_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_PRINTED = re.compile(r"([-−+]?(?:\d[\d,]*)?(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s+(thousand|million|billion|trillion))?")


def num(s: str) -> float:
    """A number as a student reads it: '13,015,864,320' -> 13015864320.0, '2.7 trillion' -> 2.7e12, '−0.5' (the
    minus sign) -> -0.5, '1.5e22'; Unreadable for anything else."""
    m = _PRINTED.fullmatch(s.strip())
    if not m or not re.search(r"\d", m[1]):
        raise Unreadable(f"not a number: {s!r}")
    x = float(m[1].replace(",", "").replace("−", "-"))
    return x * _SCALE_WORDS[m[2]] if m[2] else x


def number_in(pattern: str, text: str) -> int | float:
    """The number the first group of ``pattern`` captures in ``text`` (by :func:`num`), an int when printed
    whole; Unreadable, with the text, when the statement does not give it."""
    m = re.search(pattern, text)
    if not m:
        raise Unreadable(f"the text does not give {pattern!r}:\n{text}")
    x = num(m[1])
    return int(x) if re.fullmatch(r"[-−+]?[\d,]+", m[1].strip()) else x


# --- reading what the question asks for ------------------------------------------------------------------------


def asked_decimals(text: str) -> int | None:
    """The decimals the text asks the answer in: "Round off to 3 decimal places", "(two decimal places)", "to the
    nearest integer" or "a whole number" (0); None when it asks for no rounding. An instruction to round wins over
    a precision stated for a step ("cos(ωk) computed to four decimal places")."""
    if re.search(r"[Rr]ound(?:ed)?(?: it)?(?: off)? to (?:the nearest (?:integer|whole number)|a whole number)", text):
        return 0
    for pattern in (r"[Rr]ound(?:ed)?(?: it)?(?: off)? to (\w+) decimal places?", r"\((\w+) decimal places?\)",
                    r"\bto (\w+) decimal places?", r"\b(\w+) decimal places?"):
        for m in re.finditer(pattern, text):
            w = m[1].lower()
            if w in _WORDS or w.isdigit():
                return _WORDS[w] if w in _WORDS else int(w)
    if re.search(r"whole number|nearest integer|[Rr]ound(?:ed)? off to the nearest\b", text):
        return 0
    return None


def rounded(x, d: int) -> Decimal:
    """``x`` rounded half away from zero to ``d`` decimals, as a student writes it on paper: a Fraction exactly, a
    float from its shortest decimal form."""
    q = Decimal(1).scaleb(-d)
    if isinstance(x, Fraction):
        return (Decimal(x.numerator) / Decimal(x.denominator)).quantize(q, rounding=ROUND_HALF_UP)
    return Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP)


def _whole(x) -> bool:
    return Fraction(x).denominator == 1 if isinstance(x, int | Fraction) else float(x).is_integer()


def printed_number(option: str, *, leading: bool = False) -> Decimal | None:
    """The first number an option prints ('1,024 GB' -> 1024), or None for an option in words (with ``leading``:
    one that does not begin with its number)."""
    m = _NUM.match(option.strip()) if leading else _NUM.search(option)
    return Decimal(m[0].replace(",", "").replace("−", "-")) if m else None


def _places(d: Decimal) -> int:
    return max(0, -d.as_tuple().exponent)


# --- the acceptance rule ---------------------------------------------------------------------------------------


def disagreement(p: Problem, value, *, part=None) -> list[str]:
    """How the key of ``p`` (of ``part``, a part of ``p``) disagrees with ``value``, the answer recomputed from the
    text; [] when it agrees. The cases are the module docstring's."""
    if isinstance(value, Mapping):
        return _parts(p, value)
    target = part if part is not None else p
    key = target.key
    text = p.statement_text + ("\n" + part.prompt_text if part is not None else "")
    if isinstance(value, set | frozenset):
        return _options_judged(p, target, value)
    if isinstance(key, MatrixKey):
        return _matrix(p, part, key, value, text)
    if isinstance(key, ChoiceKey):
        return _numeric_choice(p, value)
    if isinstance(key, IntegerKey):
        return _integer(target, key, value)
    if isinstance(key, NumericKey):
        return _nat(target, key, value, text)
    return [f"a key of type {type(key).__name__}"]


def _nat(target, key: NumericKey, value, text: str) -> list[str]:
    asked = asked_decimals(text)
    d = asked
    if d is None:
        if not _whole(value):
            return [f"the text asks for no rounding, but the value {float(value)!r} is not whole"]
        d = 0
    written = str(rounded(value, d))
    out = []
    if not grade(target, Decimal(written), written=written).correct:
        out.append(f"the key [{key.lo}, {key.hi}] rejects {written} (the value rounded to {d} places)")
    if not grade(target, float(value)).correct:
        out.append(f"the key [{key.lo}, {key.hi}] rejects the exact value")
    if not math.isclose(float(key.value), float(value), rel_tol=1e-9, abs_tol=1e-12):
        out.append(f"the key's value {key.value!r} is not the text's")
    if asked is not None and key.decimals != asked:
        out.append(f"the text asks for {asked} decimal places, the key keeps {key.decimals}")
    return out


def _integer(target, key: IntegerKey, value) -> list[str]:
    if not _whole(value):
        return [f"the count {float(value)!r} is not whole"]
    n = int(value)
    out = []
    if not grade(target, n).correct:
        out.append(f"the key rejects {n}")
    if key.value != n:
        out.append(f"the key's value {key.value} is not the text's {n}")
    return out


def _numeric_choice(p: Problem, value) -> list[str]:
    asked = asked_decimals(p.statement_text)
    hits, shown = set(), []
    for i, o in enumerate(p.options_text):
        x = printed_number(o)
        if x is None:
            return [f"an option without a number: {o!r}"]
        want = rounded(value, asked if asked is not None else _places(x))
        shown.append(str(x))
        if x == want:
            hits.add(i)
    out = []
    if len(hits) != 1:
        out.append(f"{len(hits)} options print the value rounded as asked (options {shown})")
    if hits != set(p.key.correct):
        out.append(f"options printing the value: {sorted(hits)}, keyed: {sorted(p.key.correct)}")
    elif not grade(p, set(hits)).correct:
        out.append("grade rejects the keyed option")
    return out


def _options_judged(p: Problem, target, true: set) -> list[str]:
    out = []
    if p.type == "mcq" and len(true) != 1:
        out.append(f"{len(true)} options are true by the text")
    if set(true) != set(target.key.correct):
        out.append(f"true by the text: {sorted(true)}, keyed: {sorted(target.key.correct)}")
    elif not grade(target, set(true)).correct:
        out.append("grade rejects the keyed options")
    return out


def _matrix(p: Problem, part, key: MatrixKey, rows, text: str) -> list[str]:
    d = asked_decimals(part.prompt_text) if part is not None else None
    d = asked_decimals(text) if d is None else d
    rows = [[float(x) for x in r] for r in rows]
    target = part if part is not None else p
    written = [[float(rounded(x, d)) for x in r] for r in rows] if d is not None else rows
    out = []
    if not grade(target, written).correct:
        out.append(f"the key rejects the matrix written to {d} decimals: {written}")
    if d is not None and not grade(target, rows).correct:
        out.append("the key rejects the exact matrix")
    return out


def _parts(p: Problem, values: Mapping) -> list[str]:
    labels = [pt.label for pt in p.parts]
    if list(values) != labels:
        return [f"the problem has parts {labels}, the text's answers {list(values)}"]
    out = [f"({pt.label}) {why}" for pt in p.parts for why in disagreement(p, values[pt.label], part=pt)]
    if p.parts[-1].key != p.key:
        out.append("the problem's key is not its last part's")
    return out


# --- one problem: recompute, judge, report ---------------------------------------------------------------------


def shown(f):
    """Mark a recomputation (or a named mistake's) that reads the problem as shown (its options, its parts'
    prompts) rather than the statement text alone: it is called with the problem."""
    f.reads_problem = True
    return f


def call(f, p: Problem):
    """``f`` on what it reads: the problem (marked :func:`shown`) or its statement text."""
    return f(p) if getattr(f, "reads_problem", False) else f(p.statement_text)


def report(p: Problem, value, reasons: list[str]) -> str:
    """One failure's message: the problem id, the reasons, the statement (and options) and both values."""
    key = p.key
    keyed = (key.value if isinstance(key, NumericKey | IntegerKey | MatrixKey)
             else [p.options_text[i] for i in sorted(key.correct)] if isinstance(key, ChoiceKey) else key)
    opts = "".join(f"\n  ({chr(97 + i)}) {o}" for i, o in enumerate(p.options_text))
    return (f"{p.id}: {'; '.join(reasons)}\n--- statement ---\n{p.statement_text}{opts}\n"
            f"--- from the text: {value!r}; key: {keyed!r}")


def audit(p: Problem, recompute: Callable) -> str | None:
    """The failure message when ``p``'s key disagrees with ``recompute`` (on the text), else None; a text the
    recomputation cannot read is a disagreement too."""
    try:
        value = call(recompute, p)
    except (Unreadable, LookupError, AssertionError) as e:
        return report(p, None, [f"cannot recompute from the text: {type(e).__name__}: {e}"])
    reasons = disagreement(p, value)
    return report(p, value, reasons) if reasons else None


def recompute_for(table: Mapping[str, Callable], fid: str) -> Callable:
    """The recomputation of ``fid`` in ``table``: its own, or its base family's for an MCQ view."""
    return table[fid] if fid in table else table[fid.removesuffix("_mcq")]


def with_views(fids: Iterable[str]) -> list[str]:
    """The family ids and their MCQ views (``FID_mcq``) where the bank has one."""
    return [f for fid in fids for f in (fid, f"{fid}_mcq") if f in FAMILIES]


def generate(fid: str, seed: int, level: str) -> Problem:
    return FAMILIES[fid].generate(seed, level)


def audit_many(fid: str, level: str, seeds: Iterable[int], table: Mapping[str, Callable], draw=generate) -> list[str]:
    """The failure messages of ``fid`` at ``level`` over ``seeds`` (drawn by ``draw(fid, seed, level)``)."""
    recompute = recompute_for(table, fid)
    return [msg for s in seeds if (msg := audit(draw(fid, s, level), recompute)) is not None]


# --- the named mistakes ----------------------------------------------------------------------------------------


def _mistake_values(p: Problem, table) -> Mapping:
    """mistake id -> the callable giving its wrong value, or (a table that is a function of the text) the values."""
    return call(table, p) if callable(table) else table


def mistake_disagreements(p: Problem, table, seen: set | None = None) -> tuple[int, list[str]]:
    """The named mistakes of ``p`` that ``table`` knows (mistake id -> f(text) -> the wrong value that mistake gives
    on the numbers shown, None or NaN where it does not apply; or one f(text) -> {id: value}): how many were
    checked, and the reasons of those whose value is not that. A NAT or matrix misconception carries the value
    (relative 1e-9); in a choice item, the option it leads to prints the value rounded as asked (or as that
    option is printed). A merged id ('a+b') passes when any mistake it names gives its value. The ids compared
    are added to ``seen``."""
    known = _mistake_values(p, table)
    asked = asked_decimals(p.statement_text)
    checked, out = 0, []
    choice = isinstance(p.key, ChoiceKey)
    for m in p.misconceptions:
        # a merged NAT id ('a+b': mistakes that give the same value) passes when any of them gives it; an option's id
        # joined from several ('a+b_reversed_and_c') names mistakes made together: judged only when the table knows it
        ids = ([m.id] if m.id in known else []) if choice else [i for i in m.id.split("+") if i in known]
        if not ids or m.value is None:
            continue
        wants = [w for i in ids if (w := known[i] if callable(table) else _want(known[i], p, m)) is not None
                 and not (isinstance(w, float) and math.isnan(w))]
        if not wants:
            continue
        if choice:
            x = printed_number(p.options_text[m.value], leading=True) if isinstance(m.value, int) and \
                0 <= m.value < len(p.options_text) else None
            if x is None:
                continue  # an option that states a claim in words: not judged here
            ok = any(x == rounded(w, asked if asked is not None else _places(x)) for w in wants)
            shown_value = p.options_text[m.value]
        else:
            ok = any(np.allclose(np.asarray(m.value, dtype=float), np.asarray(w, dtype=float), rtol=1e-9, atol=1e-12)
                     for w in wants)
            shown_value = m.value
        checked += 1
        if seen is not None:
            seen.update(ids)
        if not ok:
            out.append(f"misconception {m.id} ({m.label}) carries {shown_value!r}; the text gives {wants!r}")
    return checked, out


def _want(f, p: Problem, m):
    if getattr(f, "reads_label", False):
        return f(p, m.label)
    return call(f, p)


def with_right_value(table: Mapping[str, Mapping[str, Callable]], recompute: Mapping[str, Callable]) -> dict:
    """A mistakes table whose entries take (text, the right value recomputed from the text) as one of f(text)."""
    return {fid: {mid: (lambda t, f=f, r=recompute_for(recompute, fid): f(t, r(t))) for mid, f in mistakes.items()}
            for fid, mistakes in table.items()}


def mistakes_many(fid: str, table, seeds: Iterable[int], draw=generate) -> tuple[int, list[str], set]:
    """Every level of ``fid`` over ``seeds``: (mistakes checked, failure messages, the ids met)."""
    seen, checked, out = set(), 0, []
    for level in FAMILIES[fid].levels:
        for s in seeds:
            p = draw(fid, s, level)
            try:
                n, reasons = mistake_disagreements(p, table, seen)
            except (Unreadable, LookupError, AssertionError) as e:
                n, reasons = 0, [f"cannot recompute the mistakes from the text: {type(e).__name__}: {e}"]
            checked += n
            out += [report(p, None, [r]) for r in reasons]
    return checked, out, seen


def mistake_views(mistakes: Mapping, fid: str) -> list[str]:
    """The families whose named mistakes ``mistakes[fid]`` checks: ``fid`` and its MCQ view, unless the table gives
    the view a table of its own."""
    return [fid, *(v for v in with_views([fid])[1:] if v not in mistakes)]


# --- a key made wrong on purpose -------------------------------------------------------------------------------


def spoiled(p: Problem) -> Problem:
    """A copy of ``p`` whose key is wrong by more than its tolerance (a choice item's keyed option moved; the last
    part's key too, for a multi-part problem): an audit must report it."""

    def bad(key, n_options):
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
            if len(key.correct) > 1:
                return replace(key, correct=key.correct ^ {0})
            return replace(key, correct=frozenset({(i + 1) % n_options for i in key.correct}))
        raise TypeError(type(key).__name__)

    if p.parts:
        last = replace(p.parts[-1], key=bad(p.parts[-1].key, len(p.options_text)))
        return replace(p, key=last.key, parts=[*p.parts[:-1], last])
    return replace(p, key=bad(p.key, len(p.options_text)))


class Audit(NamedTuple):
    """What an audit file audits, for the sweep: its recomputations, its families, its named mistakes."""

    recompute: Mapping[str, Callable]
    fids: list[str]
    mistakes: Mapping


# --- the tests of an audit file --------------------------------------------------------------------------------


def key_tests(recompute: Mapping[str, Callable], fids: Iterable[str], module: str | None = None, *,
              mistakes: Mapping | None = None, seeds=SEEDS, seeds_for: Mapping[str, Iterable[int]] | None = None,
              mistake_seeds=MISTAKE_SEEDS) -> dict:
    """The tests of an audit file, for its families ``fids`` (each recomputed by ``recompute[fid]``, an MCQ view by
    its base family's): bind them in the file with ``globals().update(key_tests(...))`` so that pytest collects
    them there (with ``CASES``, the (family, level) pairs, and ``AUDIT``, what :func:`sweep` needs).

    - ``test_every_family_of_the_module_is_audited`` (with ``module``): every family that
      ``question_bank.families.<module>`` builds is among ``fids``;
    - ``test_keys_from_text[fid-level]``: the fixed block ``seeds`` (``seeds_for[fid]`` for a slow family);
    - ``test_keys_from_text_any_seed``: any seed, level and family (hypothesis);
    - ``test_the_audit_catches_a_wrong_key[fid]``: every key of a few draws moved past its tolerance is reported;
    - ``test_named_mistakes_from_text[fid]`` (with ``mistakes``, fid -> that family's table): the named mistakes
      carry the value the text gives with that mistake made, in the family and its MCQ view (unless the table
      gives the view its own), and each mistake the table names is met at least once.

    Drawing is most of their time: the draws of the seeds the later tests use again (the wrong-key seeds and the
    named mistakes' seeds) are kept from the key test until the last test that reads them has run.
    """
    import pytest
    from hypothesis import given
    from hypothesis import strategies as st

    fids = list(fids)
    cases = [(fid, lv) for fid in fids for lv in FAMILIES[fid].levels]
    seeds_for = dict(seeds_for or {})
    with_mistakes = {v for f in mistakes or {} for v in mistake_views(mistakes, f)}
    reused = {*SPOIL_SEEDS, *((*mistake_seeds, *(s for b in seeds_for.values() for s in b)) if with_mistakes else ())}
    kept: dict[tuple[str, int, str], Problem] = {}

    def draw(fid: str, seed: int, level: str) -> Problem:
        if seed not in reused:
            return generate(fid, seed, level)
        if (fid, seed, level) not in kept:
            kept[fid, seed, level] = generate(fid, seed, level)
        return kept[fid, seed, level]

    def done_with(fid: str) -> None:
        for k in [k for k in kept if k[0] == fid]:
            del kept[k]
    tests: dict[str, object] = {"CASES": cases, "AUDIT": Audit(recompute, fids, dict(mistakes or {}))}

    if module is not None:
        def test_every_family_of_the_module_is_audited():
            mod = {f for f, fam in FAMILIES.items() if fam.build.__module__ == f"question_bank.families.{module}"}
            assert mod <= set(fids), f"not audited: {sorted(mod - set(fids))}"

        tests[test_every_family_of_the_module_is_audited.__name__] = test_every_family_of_the_module_is_audited

    @pytest.mark.parametrize(("fid", "level"), cases)
    def test_keys_from_text(fid, level):
        """A fixed block of seeds per level: the key is what the text gives."""
        block = tuple(seeds_for.get(fid.removesuffix("_mcq"), seeds))
        bad = audit_many(fid, level, block, recompute, draw)
        assert not bad, f"{len(bad)} of {len(block)} draws disagree; the first:\n{bad[0]}"

    @given(st.integers(0, 10**6), st.sampled_from(cases))
    def test_keys_from_text_any_seed(seed, case):
        """Any seed: the same check."""
        fid, level = case
        msg = audit(FAMILIES[fid].generate(seed, level), recompute_for(recompute, fid))
        assert msg is None, msg

    @pytest.mark.parametrize("fid", fids)
    def test_the_audit_catches_a_wrong_key(fid):
        """The audit can fail: each key of a few draws, moved past its tolerance, is reported."""
        r = recompute_for(recompute, fid)
        missed = [p.id for lv in FAMILIES[fid].levels for s in SPOIL_SEEDS
                  if audit(spoiled(p := draw(fid, s, lv)), r) is None]
        if fid not in with_mistakes:
            done_with(fid)
        assert not missed, f"a wrong key not reported: {missed}"

    tests |= {t.__name__: t for t in (test_keys_from_text, test_keys_from_text_any_seed,
                                      test_the_audit_catches_a_wrong_key)}

    if mistakes:
        @pytest.mark.parametrize("fid", list(mistakes))
        def test_named_mistakes_from_text(fid):
            """The feedback is right for the numbers on the screen: each named mistake carries the value the text
            gives with that mistake made."""
            block = tuple(seeds_for.get(fid.removesuffix("_mcq"), mistake_seeds))
            checked, bad, met = 0, [], set()
            for view in mistake_views(mistakes, fid):
                n, b, seen = mistakes_many(view, mistakes[fid], block, draw)
                checked, bad, met = checked + n, bad + b, met | seen
                done_with(view)
            assert checked and not bad, f"{len(bad)} of {checked} disagree; the first:\n{bad[0] if bad else ''}"
            never = [] if callable(mistakes[fid]) else sorted(set(mistakes[fid]) - met)
            assert not never, f"{fid}: the mistakes {never} were never met over these seeds (the check would be empty)"

        tests[test_named_mistakes_from_text.__name__] = test_named_mistakes_from_text
    return tests


# --- the sweep -------------------------------------------------------------------------------------------------


def sweep(recompute: Mapping[str, Callable], fids: Iterable[str], *, mistakes: Mapping | None = None,
          seeds: Iterable[int] = SWEEP_SEEDS, keys: bool = True, out=None) -> int:
    """Every level of every family over ``seeds`` (and the named mistakes, when given; only those with ``keys``
    false): one line per family and level with its draws and disagreements, the first three in full; returns how
    many disagreements in all."""
    out = out or sys.stdout
    seeds = tuple(seeds)
    draws = total = 0
    for fid in fids if keys else ():
        for level in FAMILIES[fid].levels:
            t0 = time.perf_counter()
            bad = audit_many(fid, level, seeds, recompute)
            draws, total = draws + len(seeds), total + len(bad)
            print(f"{fid} {level}: {len(seeds):,} draws, {len(bad)} disagreements ({time.perf_counter() - t0:.0f} s)",
                  file=out, flush=True)
            for msg in bad[:3]:
                print("    " + msg.replace("\n", "\n    "), file=out)
    for fid, table in (mistakes or {}).items():
        checked, bad = 0, []
        for view in mistake_views(mistakes, fid):
            n, b, _ = mistakes_many(view, table, seeds)
            checked, bad = checked + n, bad + b
            draws += len(seeds) * len(FAMILIES[view].levels)
        total += len(bad)
        print(f"{fid} named mistakes: {checked:,} checked, {len(bad)} disagreements", file=out, flush=True)
        for msg in bad[:3]:
            print("    " + msg.replace("\n", "\n    "), file=out)
    print(f"in all: {draws:,} draws, {total} disagreements", file=out)
    return total


def sweep_main(recompute: Mapping[str, Callable], fids: Iterable[str], mistakes: Mapping | None = None,
               argv: list[str] | None = None) -> int:
    """The script mode of an audit file: ``[N] [FAMILY-PREFIX ...]``: seeds 0..N-1 and 70,000..70,000+N-1 (N = 300
    by default) for the families whose id starts with a prefix given (all by default); exit status 1 when any
    disagrees."""
    args = sys.argv[1:] if argv is None else argv
    n = next((int(a) for a in args if a.isdigit()), 300)
    prefixes = [a for a in args if not a.isdigit()]
    chosen = [f for f in fids if not prefixes or any(f.startswith(a) for a in prefixes)]
    table = {f: t for f, t in (mistakes or {}).items() if f in chosen or f.removesuffix("_mcq") in chosen}
    return 1 if sweep(recompute, chosen, mistakes=table, seeds=(*range(n), *range(70_000, 70_000 + n))) else 0


def check(recompute: Mapping[str, Callable], fid: str, seed: int, level: str) -> None:
    """Draw (fid, seed, level) and fail with :func:`report`'s message when the key disagrees with the text."""
    msg = audit(FAMILIES[fid].generate(seed, level), recompute_for(recompute, fid))
    assert msg is None, msg



def shown_all(table: Mapping) -> dict:
    """``table`` (fid -> f, or fid -> mistake id -> f) with every f marked :func:`shown` (it reads the problem)."""
    return {k: shown_all(v) if isinstance(v, Mapping) else shown(v) for k, v in table.items()}


def true_options(p: Problem, truth: Callable[[str], bool]) -> set[int]:
    """The indices of the options that ``truth(option_text)`` finds true: a choice item judged option by option."""
    return {i for i, o in enumerate(p.options_text) if truth(o)}
