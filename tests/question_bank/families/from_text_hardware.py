"""Helpers of the outsider's audit of the hardware and scaling families (test_from_text_hardware*.py,
test_from_text_scaling_arithmetic.py): numbers read back from the plain text a student reads, and the
checks that the key accepts the value recomputed from them.

Nothing here reads ``p.given``, a solution or a misconception, nor imports the solver or a family
module: the value an auditor passes in is computed from ``statement_text`` (and ``options_text``) by
formulas written in the test files, with the conventions the statement states.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, NumericKey

#: bytes per value of each storage type, as a student knows them (not read from qkv)
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


class Unreadable(AssertionError):
    """The text does not give a number or a convention the answer needs."""


def num(s: str) -> float:
    """'13,015,864,320' -> 13015864320.0; '2.7 trillion' -> 2.7e12."""
    s = s.strip()
    m = re.fullmatch(r"(\d[\d,]*(?:\.\d+)?)(?:\s+(thousand|million|billion|trillion))?", s)
    if not m:
        raise Unreadable(f"not a number: {s!r}")
    x = float(m[1].replace(",", ""))
    return x * _SCALE_WORDS[m[2]] if m[2] else x


def grab(pattern: str, text: str, what: str = "") -> re.Match:
    """The first match of ``pattern`` in ``text``; Unreadable when the text does not state it."""
    m = re.search(pattern, text)
    if not m:
        raise Unreadable(f"the text does not state {what or pattern!r}")
    return m


def number(pattern: str, text: str, what: str = "") -> float:
    """The number in the first group of ``pattern`` (a plain number or '2.7 trillion')."""
    return num(grab(pattern, text, what)[1])


def asked_decimals(text: str) -> int:
    """The rounding the statement asks for, in decimal places."""
    t = text.lower()
    if re.search(r"to (?:a|the nearest) whole number|to the nearest integer|nearest integer", t):
        return 0
    words = {"one": 1, "two": 2, "three": 3, "four": 4}
    m = re.search(r"(one|two|three|four|\d) decimal places?", t)
    if not m:
        raise Unreadable("the text asks for no rounding")
    return words.get(m[1]) or int(m[1])


def rounded_text(x: float, decimals: int) -> str:
    """``x`` rounded half away from zero to ``decimals`` places, as a student writes it."""
    q = Decimal(1).scaleb(-decimals)
    return str(Decimal(repr(x)).quantize(q, rounding=ROUND_HALF_UP))


def nat_disagreements(p, value: float, *, decimals: int | None = None) -> list[str]:
    """For a NAT key: the student's answer (``value`` rounded as the statement asks) and the exact
    value must both be accepted, and the key's value must be ``value`` (to 1e-9)."""
    out = []
    key = p.key
    if not isinstance(key, NumericKey):
        return [f"{p.id}: a {type(key).__name__}, not a NAT key"]
    d = asked_decimals(p.statement_text) if decimals is None else decimals
    written = rounded_text(value, d)
    if not grade(p, Decimal(written), written=written).correct:
        out.append(f"the key [{key.lo}, {key.hi}] rejects {written} (= {value!r} rounded to {d} places)")
    if not math.isclose(key.value, value, rel_tol=1e-9, abs_tol=1e-12):
        out.append(f"the key's value {key.value!r} is not the text's {value!r}")
    if key.decimals != d:
        out.append(f"the key rounds to {key.decimals} places, the text asks for {d}")
    return out


def integer_disagreements(p, value: int) -> list[str]:
    key = p.key
    if not isinstance(key, IntegerKey):
        return [f"{p.id}: a {type(key).__name__}, not an integer key"]
    out = []
    if not grade(p, value).correct:
        out.append(f"the key rejects {value}")
    if key.value != value:
        out.append(f"the key's value {key.value} is not the text's {value}")
    return out


def option_number(opt: str) -> float:
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", opt)
    if not m:
        raise Unreadable(f"an option with no number: {opt!r}")
    return float(m[0].replace(",", ""))


def numeric_mcq_disagreements(p, value: float, decimals: int) -> list[str]:
    """A numeric MCQ ('Choose the correct value'): the keyed option is the one whose printed number is
    ``value`` rounded to ``decimals`` places (within half a unit), and no other option is."""
    if not isinstance(p.key, ChoiceKey) or len(p.key.correct) != 1:
        return [f"{p.id}: not a one-answer choice key"]
    half = 0.5 * 10**-decimals * (1 + 1e-9)
    match = [i for i, o in enumerate(p.options_text) if abs(option_number(o) - value) <= half + 1e-12 * abs(value)]
    (k,) = p.key.correct
    out = []
    if match != [k]:
        out.append(f"options matching {value!r} to {decimals} places: {match}, keyed: {k}")
    if not grade(p, {k}).correct:
        out.append("grade rejects the keyed option")
    return out


def report(p, value, problems: list[str]) -> str:
    """One failure's message: the problem id, the statement and both values."""
    key = p.key
    shown = (key.value if isinstance(key, NumericKey | IntegerKey)
             else [p.options_text[i] for i in sorted(key.correct)] if isinstance(key, ChoiceKey) else key)
    return (f"{p.id}: {'; '.join(problems)}\n--- statement ---\n{p.statement_text}\n"
            + (("--- options ---\n" + "\n".join(p.options_text) + "\n") if p.options_text else "")
            + f"--- from the text: {value!r}; key: {shown!r}")


_TB = 1e12


def dense_peak(text: str) -> float:
    """The chip's dense bf16 peak in FLOP/s, as the text gives it (a with-sparsity figure is halved)."""
    if m := re.search(r"lists BF16 tensor throughput as ([\d.]+) TFLOP/s with 2:4 structured sparsity", text):
        return float(m[1]) * _TB / 2
    return number(r"dense (?:BF16|bf16) peak (?:is )?([\d.]+) TFLOP/s", text, "the dense peak") * _TB


def hbm_bw(text: str) -> float:
    return number(r"HBM bandwidth ([\d.]+) TB/s \(10¹² bytes/s\)", text, "the HBM bandwidth") * _TB


def check(disagreements, fid: str, seed: int, level: str) -> None:
    """Draw (fid, seed, level) and fail with the statement and both values when the key disagrees."""
    from question_bank.family import FAMILIES

    p = FAMILIES[fid].generate(seed, level)
    v, problems = disagreements(p)
    assert not problems, report(p, v, problems)


def sweep(disagreements, cases, n: int) -> None:
    """The script mode of the audit files: seeds 0..n-1 and 70,000..70,000+n-1 for every (fid, level), the
    count of disagreements per level and the first three in full."""
    from question_bank.family import FAMILIES

    for fid, level in cases:
        bad = 0
        for seed in [*range(n), *range(70_000, 70_000 + n)]:
            try:
                p = FAMILIES[fid].generate(seed, level)
            except Exception as e:  # noqa: BLE001 - a draw that fails is a finding too
                bad += 1
                print(f"{fid}/{level}/{seed}: generation failed: {type(e).__name__}: {e}\n")
                continue
            v, problems = disagreements(p)
            if problems:
                bad += 1
                if bad <= 3:
                    print(report(p, v, problems), "\n")
        print(f"{fid} {level}: {2 * n} draws, {bad} disagreements", flush=True)


def mistake_disagreements(p, value, mistakes) -> tuple[int, list[str]]:
    """The stretch of the audit: for each misconception of ``p`` that ``mistakes`` (id -> f(text, value)) knows,
    its ``m.value`` must be the wrong value the label names, recomputed from the text (``value`` is the right one,
    recomputed from the text). Returns (how many were checked, the disagreements)."""
    checked, out = 0, []
    for m in p.misconceptions:
        if m.id not in mistakes:
            continue
        want = mistakes[m.id](p.statement_text, value)
        checked += 1
        if not math.isclose(float(m.value), float(want), rel_tol=1e-9, abs_tol=1e-12):
            out.append(f"misconception {m.id} ({m.label}) has value {m.value!r}; the text gives {want!r}")
    return checked, out


def check_mistakes(disagreements, mistakes, fid: str, seeds, levels) -> None:
    """Every named mistake of ``mistakes[fid]`` checked on the seeds; at least one of them met."""
    from question_bank.family import FAMILIES

    checked = 0
    for level in levels:
        for seed in seeds:
            p = FAMILIES[fid].generate(seed, level)
            v, problems = disagreements(p)
            assert not problems, report(p, v, problems)
            n, bad = mistake_disagreements(p, v, mistakes[fid])
            checked += n
            assert not bad, report(p, v, bad)
    assert checked, f"{fid}: none of {sorted(mistakes[fid])} met"


def text_audit(audit):
    """``disagreements(p)`` for a module whose families (and their MCQ views) each have one recomputation in
    ``audit`` (family id -> f(text)): NAT keys against the value, MCQ views against their options."""

    def disagreements(p) -> tuple[object, list[str]]:
        try:
            v = audit[p.family.removesuffix("_mcq")](p.statement_text)
            if p.family.endswith("_mcq"):
                return v, numeric_mcq_disagreements(p, v, asked_decimals(p.statement_text))
            return v, nat_disagreements(p, v)
        except Unreadable as e:
            return None, [f"unreadable: {e}"]

    return disagreements


def key_tests(disagreements, fids, module: str):
    """The three key tests of an audit file, for its module's families ``fids`` (bound to module-level ``test_``
    names there, so pytest collects them in that file): every family of ``question_bank.families.<module>`` is
    audited; a fixed block of 40 seeds per level; any seed (hypothesis)."""
    import pytest
    from hypothesis import given
    from hypothesis import strategies as st

    from question_bank.family import FAMILIES

    cases = [(fid, lv) for fid in fids for lv in FAMILIES[fid].levels]

    def test_every_family_of_the_module_is_audited():
        mod = {f for f, fam in FAMILIES.items() if fam.build.__module__ == f"question_bank.families.{module}"}
        assert mod <= set(fids), mod - set(fids)

    @pytest.mark.parametrize(("fid", "level"), cases)
    def test_keys_from_text(fid, level):
        """A fixed block of seeds per level: the key is what the text gives."""
        for seed in range(40):
            check(disagreements, fid, seed, level)

    @given(st.integers(0, 10**6), st.sampled_from(cases))
    def test_keys_from_text_any_seed(seed, case):
        check(disagreements, case[0], seed, case[1])

    return cases, test_every_family_of_the_module_is_audited, test_keys_from_text, test_keys_from_text_any_seed
