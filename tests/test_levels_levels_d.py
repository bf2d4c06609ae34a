"""Issue 12, difficulty levels (branch levels-d): why √dₖ, the complexity classes, attention versus
an RNN and the rotation property of sinusoidal encodings draw no statement at two levels, and their
median worked solution does not get shorter from easy to hard. Same body as
``test_levels_named_in_issue_12_are_disjoint`` in tests/test_bank_quality.py, kept apart to merge
without conflict."""

from __future__ import annotations

import math

import pytest

from question_bank import quality
from question_bank.family import all_families

FIDS = ["attention.why_sqrt_dk", "complexity.attention_variants", "counting.attention_vs_rnn",
        "positional.pe_rotation"]


def _by_level(fid, draws=60):
    f = all_families()[fid]
    return f, {diff: [f.generate(s, diff) for s in range(draws)] for diff in f.difficulties}


@pytest.mark.parametrize("fid", FIDS)
def test_levels_named_in_issue_12_are_disjoint(fid):
    """Before (100 draws): 4, 1 (at 200), 11 and 11 statements were drawn at two levels."""
    _, by_level = _by_level(fid)
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0


@pytest.mark.parametrize("fid", FIDS)
def test_median_worked_solution_does_not_shrink(fid):
    f, by_level = _by_level(fid)
    _, medians = quality.difficulty_report(by_level)
    lines = [medians[diff] for diff in f.difficulties]
    assert lines == sorted(lines), (fid, medians)


def test_why_sqrt_dk_medium_distractors_are_the_variance_slips():
    """Easy's wrong options confuse the scale with another part of the layer; medium's get the
    variance wrong (Var(q·k/√dₖ) = dₖ/dₖ = 1, mean 0 unchanged): the two sets of ids share none."""
    f, by_level = _by_level("attention.why_sqrt_dk", 40)
    ids = {diff: {m.id for p in ps for m in p.misconceptions} for diff, ps in by_level.items()}
    assert ids["easy"] and ids["medium"] and not ids["easy"] & ids["medium"]
    assert {"zero_mean", "variance_grows_sqrt", "variance_by_sqrt"} & ids["medium"]


def test_attention_vs_rnn_medium_is_powers_of_two_and_hard_is_not():
    _, by_level = _by_level("counting.attention_vs_rnn", 40)

    def pow2(x):
        return x & (x - 1) == 0

    assert all(pow2(p.given["n"]) and pow2(p.given["d"]) for p in by_level["medium"])
    assert not any(pow2(p.given["n"]) and pow2(p.given["d"]) for p in by_level["hard"])
    assert all(p.type == "mcq" for p in by_level["easy"]) and all(p.type == "nat" for p in by_level["hard"])


def test_pe_rotation_hard_leaves_cos_and_sin_to_the_student():
    """Hard: d = 8, ω = 10000^(−2i/8) ∈ {0.1, 0.01}; the statement shows neither ω nor cos ωk, sin ωk,
    and the solution's cos ωk, sin ωk are math.cos/sin of ωk to four places."""
    _, by_level = _by_level("positional.pe_rotation", 40)
    for p in by_level["hard"]:
        g = p.given
        omega = 10000 ** (-2 * g["i"] / 8)
        assert g["d_model"] == 8 and round(omega, 12) in (0.1, 0.01)
        _, _, c, s = g["shown"]
        assert c == pytest.approx(math.cos(omega * g["k"]), abs=5e-5) and s == pytest.approx(math.sin(omega * g["k"]), abs=5e-5)
        for shown in (r"\cos(\omega k) =", r"\sin(\omega k) =", r"\omega = 10000^{-2i/d} ="):
            assert shown not in p.statement_md, (shown, p.statement_md)
        assert f"{c:.4f}" in p.solution_md and f"{s:.4f}" in p.solution_md
