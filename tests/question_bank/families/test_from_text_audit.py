"""The shared scaffolding of the from-text audits (``from_text_audit``) can fail: a key planted 1 % off, an MCQ whose
key names the wrong option, a part whose key is moved and a misconception carrying the wrong value are reported
with the problem id, the statement and both values. And its rounding is a student's, checked against an
independent one."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from question_bank.family import FAMILIES
from question_bank.problem import ChoiceKey, Misconception, NumericKey
from tests.question_bank.families import test_from_text_attention, test_from_text_hardware
from tests.question_bank.families.from_text_audit import (
    Unreadable,
    asked_decimals,
    audit,
    disagreement,
    key_tests,
    mistake_disagreements,
    num,
    number_in,
    rounded,
    sweep,
)

GPU_DAYS = test_from_text_hardware.RECOMPUTE["hardware.gpu_days"]


class Planted:
    """A stand-in for a registered family: the real draws, with ``plant`` applied to each problem."""

    def __init__(self, fid: str, plant):
        self.family, self.plant = FAMILIES[fid], plant
        self.levels, self.build = self.family.levels, self.family.build

    def generate(self, seed, level=None):
        return self.plant(self.family.generate(seed, level))


def one_percent_up(p):
    k = p.key
    return replace(p, key=replace(k, value=k.value * 1.01, lo=k.lo * 1.01, hi=k.hi * 1.01))


def next_option(p):
    (k,) = p.key.correct
    return replace(p, key=ChoiceKey(frozenset({(k + 1) % len(p.options_text)})))


def _factory_test(fid: str, name: str):
    return key_tests({fid.removesuffix("_mcq"): GPU_DAYS}, [fid], seeds=range(2))[name]


def test_the_factory_reports_a_key_planted_one_percent_off(monkeypatch):
    """hardware.gpu_days with every key 1 % too high: the fixed-seed test fails, naming the problem, quoting the
    statement and giving both values."""
    _factory_test("hardware.gpu_days", "test_keys_from_text")("hardware.gpu_days", "medium")  # the real family passes
    monkeypatch.setitem(FAMILIES, "hardware.gpu_days", Planted("hardware.gpu_days", one_percent_up))
    with pytest.raises(AssertionError) as e:
        _factory_test("hardware.gpu_days", "test_keys_from_text")("hardware.gpu_days", "medium")
    msg = str(e.value)
    p = FAMILIES["hardware.gpu_days"].generate(0, "medium")
    assert "2 of 2 draws disagree" in msg and p.id in msg and p.statement_text in msg
    assert f"from the text: {GPU_DAYS(p.statement_text)!r}; key: {p.key.value!r}" in msg


def test_the_factory_reports_a_mislabelled_mcq(monkeypatch):
    """hardware.gpu_days_mcq keyed to the option after the right one: reported, by the fixed seeds and by any seed."""
    fid = "hardware.gpu_days_mcq"
    level = FAMILIES[fid].levels[0]
    monkeypatch.setitem(FAMILIES, fid, Planted(fid, next_option))
    with pytest.raises(AssertionError, match=r"options printing the value: \[\d\], keyed: \[\d\]"):
        _factory_test(fid, "test_keys_from_text")(fid, level)
    with pytest.raises(AssertionError, match="keyed"):
        _factory_test(fid, "test_keys_from_text_any_seed")()


def test_the_wrong_key_test_fails_for_an_audit_that_reads_the_key():
    """The factory's own check that an audit can fail: a "recomputation" that echoes the key accepts every planted
    key, and that check says so."""
    echo = key_tests({"hardware.gpu_days": _reads_the_key}, ["hardware.gpu_days"])
    with pytest.raises(AssertionError, match="a wrong key not reported"):
        echo["test_the_audit_catches_a_wrong_key"]("hardware.gpu_days")


def _reads_the_key(p):
    return p.key.value


_reads_the_key.reads_problem = True


def test_a_part_and_a_misconception_planted_wrong_are_reported():
    """attention.by_hand with its second part's key moved: the audit names the part; attention.one_weight with a
    misconception's value moved: the mistakes check names it."""
    p = FAMILIES["attention.by_hand"].generate(0, "easy")
    by_hand = test_from_text_attention.RECOMPUTE["attention.by_hand"]
    assert audit(p, by_hand) is None
    part = p.parts[1]
    rows = [list(r) for r in part.key.value]
    rows[0][0] += 0.5
    moved = replace(p, parts=[p.parts[0], replace(part, key=replace(part.key, value=tuple(map(tuple, rows)))),
                              *p.parts[2:]])
    assert f"({part.label}) the key rejects the matrix" in audit(moved, by_hand)

    q = FAMILIES["attention.one_weight"].generate(0, "medium")
    table = test_from_text_attention.MISTAKES["attention.one_weight"]
    checked, bad = mistake_disagreements(q, table)
    assert checked and not bad
    wrong = [replace(m, value=m.value + 0.1) if m.id in table else m for m in q.misconceptions]
    checked, bad = mistake_disagreements(replace(q, misconceptions=wrong), table)
    assert len(bad) == checked > 0 and "misconception" in bad[0]


def test_a_named_mistake_never_met_is_reported():
    """A table naming a mistake no draw offers would check nothing for it: the factory says so."""
    table = dict(test_from_text_hardware.MISTAKES["hardware.gpu_days"], no_such_mistake=lambda t: 0.0)
    test = key_tests({"hardware.gpu_days": GPU_DAYS}, ["hardware.gpu_days"], mistakes={"hardware.gpu_days": table},
                     mistake_seeds=range(3))["test_named_mistakes_from_text"]
    with pytest.raises(AssertionError, match=r"\['no_such_mistake'\] were never met"):
        test("hardware.gpu_days")


def test_nat_rule_cases():
    """The NAT rule by hand: a key of 12.5 ± 0.005 asked to two places accepts 12.5 and rejects 12.6; a key keeping
    three places where the text asks two is reported; no rounding asked and a value that is not whole is reported."""
    p = FAMILIES["hardware.gpu_days"].generate(0, "medium")
    text = "How many days? Round off to two decimal places."
    nat = replace(p, statement_text=text, key=NumericKey(12.5, 12.495, 12.505, decimals=2))
    assert disagreement(nat, 12.5) == []
    assert any("rejects 12.60" in r for r in disagreement(nat, 12.6))
    assert any("keeps 3" in r for r in disagreement(replace(nat, key=replace(nat.key, decimals=3)), 12.5))
    assert "not whole" in disagreement(replace(nat, statement_text="How many days?"), 12.5)[0]


def test_misconception_rule_on_a_merged_nat_id():
    """A NAT misconception 'a+b' passes when either named mistake gives its value."""
    p = FAMILIES["hardware.gpu_days"].generate(0, "medium")
    m = Misconception(id="a+b", label="a or b", value=2.0, feedback="")
    q = replace(p, misconceptions=[m])
    assert mistake_disagreements(q, {"a": lambda t: 1.0, "b": lambda t: 2.0}) == (1, [])
    assert mistake_disagreements(q, {"a": lambda t: 1.0})[0] == 1


@pytest.mark.parametrize(("text", "want"), [
    ("Round off to 3 decimal places.", 3),
    ("cos(ωk) and sin(ωk) (computed to four decimal places, radians) ... Round off to 3 decimal places.", 3),
    ("Give it in GiB, rounded off to two decimal places.", 2),
    ("What is the probability (4 decimal places)?", 4),
    ("Round off to the nearest integer.", 0),
    ("Give a whole number of chips.", 0),
    ("How many parameters does it have?", None),
])
def test_asked_decimals(text, want):
    assert asked_decimals(text) == want


@given(st.fractions(min_value=-10**6, max_value=10**6, max_denominator=10**6), st.integers(0, 6))
def test_rounded_is_half_away_from_zero(x, d):
    """Against an independent rounding: |x|·10ᵈ + ½, floored, with x's sign (exact, in fractions)."""
    scaled = abs(x) * 10**d + Fraction(1, 2)
    want = (1 if x >= 0 else -1) * Fraction(math.floor(scaled), 10**d)
    assert Fraction(rounded(x, d)) == want


@given(st.integers(-10**13, 10**13), st.integers(0, 4))
def test_a_number_reads_back_as_printed_with_separators_signs_and_scale_words(n, d):
    """The audits' one reader, against Python's own formatting: thousands commas, the minus sign U+2212 a
    statement prints, decimals, an exponent and a scale word each give the number written."""
    x = n / 10**d
    assert num(f"{x:,.{d}f}") == pytest.approx(x, rel=1e-12, abs=1e-12)
    assert num(f"{x:.{d}f}".replace("-", "\u2212")) == pytest.approx(x, rel=1e-12, abs=1e-12)
    assert num(f"{x:.6e}") == pytest.approx(float(f"{x:.6e}"))
    assert num(f"{abs(x):.{d}f} trillion") == pytest.approx(abs(x) * 1e12)
    got = number_in(r"N = ([\d,]+)", f"a model of N = {abs(n):,} parameters")
    assert got == abs(n) and isinstance(got, int)


@pytest.mark.parametrize("text", ["", "-", "1.2.3", "12 apples", "two", "1,5 e"])
def test_what_is_no_number_is_unreadable(text):
    with pytest.raises(Unreadable):
        num(text)


def test_the_sweep_counts_and_prints_a_planted_key(monkeypatch, capsys):
    monkeypatch.setitem(FAMILIES, "hardware.gpu_days", Planted("hardware.gpu_days", one_percent_up))
    n = sweep({"hardware.gpu_days": GPU_DAYS}, ["hardware.gpu_days"], seeds=range(2))
    out = capsys.readouterr().out
    assert n == 2 * len(FAMILIES["hardware.gpu_days"].levels)
    assert "hardware.gpu_days medium: 2 draws, 2 disagreements" in out and "--- statement ---" in out


def test_the_audits_import_neither_the_solver_nor_a_family_module():
    """Independence is the point: the shared module, the readers and every audit file import no solver, no family's
    module and not the numeric MCQ builder, and the shared module reads no ``given`` or solution."""
    import ast
    from pathlib import Path

    here = Path(__file__).parent
    files = sorted({here / "key_from_text.py", *here.glob("from_text*.py"), *here.glob("test_from_text_*.py")})
    bad = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{f.name}: {n}" for n in names if n.split(".")[0] == "solver" or n == "question_bank.numeric_mcq"
                    or n.startswith("question_bank.families.")]
    assert not bad, bad
    shared = (here / "from_text_audit.py").read_text()
    assert ".given" not in shared.replace("``Problem.given``", "") and ".solution" not in shared
