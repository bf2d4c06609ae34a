"""Issue 12, difficulty levels (branch levels-e): the FLOP- and parameter-counting families draw no
statement at two levels, and their median worked solution does not get shorter from easy to hard.
Same body as ``test_levels_named_in_issue_12_are_disjoint`` in tests/test_bank_quality.py, kept
apart to merge without conflict."""

from __future__ import annotations

import pytest

from question_bank import quality
from question_bank.family import all_families

FIDS = ["counting.flops_attention", "counting.flops_forward", "counting.params_layer", "counting.params_model"]


@pytest.mark.parametrize("fid", FIDS)
def test_levels_named_in_issue_12_are_disjoint(fid):
    """Before: 3, 8, 13 and 4 statements of these families were drawn at two levels (100 draws)."""
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(60)] for diff in f.difficulties}
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0


@pytest.mark.parametrize("fid", FIDS)
def test_median_worked_solution_does_not_shrink(fid):
    """Before: flops_attention's median went 4 → 3 lines, params_layer's 24 → 13, params_model's 21 → 12."""
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(60)] for diff in f.difficulties}
    _, medians = quality.difficulty_report(by_level)
    lines = [medians[diff] for diff in f.difficulties]
    assert lines == sorted(lines), (fid, medians)
