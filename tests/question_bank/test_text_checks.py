"""Public texts' worked figures (question_bank.text_checks): each recomputed by a qkv calc
expression; a figure without a reason must agree to its printed figures, one with a reason must
not (so a fix in qkv or a wrong record shows), and the disagreements reach ``qkv bank errata``."""

from __future__ import annotations

import pytest

from question_bank.text_checks import CHECKS, TEXTS, errata_rows


@pytest.mark.parametrize("check", CHECKS, ids=[c.id for c in CHECKS])
def test_each_check_agrees_exactly_when_it_has_no_reason(check):
    assert check.agrees() == (not check.reason), (check.id, check.exact(), check.value)
    assert check.id.split(".")[0] in TEXTS and check.where.startswith(check.id[:3] + "_")


def test_disagreements_are_rows_of_bank_errata():
    from question_bank import bank as qb

    rows = {r["item"]: r for r in qb.errata_table()}
    mine = errata_rows()
    assert {r["item"] for r in mine} == {c.id for c in CHECKS if c.reason}
    for r in mine:
        assert rows[r["item"]] == r
    assert rows["hsm.p3.q2-allreduce"]["kind"] == "error" and rows["hsm.p3.q2-46us"]["kind"] == "rounding"


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_readme_counts_are_the_checks(key):
    """The README states each text's count: its figures, those agreeing, those listed (and How to Scale's
    roundings)."""
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    checks = [c for c in CHECKS if c.id.split(".")[0] == key]
    mine = [r for r in errata_rows() if r["item"].split(".")[0] == key]
    agree = len(checks) - len(mine)
    assert f"{len(checks)} figures, {agree} agreeing to the digits printed; the other {len(mine)} are listed" in text
    if key == "hsm":
        assert f"({sum(r['kind'] == 'rounding' for r in mine)} roundings" in text
