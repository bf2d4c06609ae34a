"""Issue 12, difficulty levels (branch levels-c): the parallelism, serving and compute-optimal
families draw no statement at two levels, and their median worked solution does not get shorter
from easy to hard. Same body as ``test_levels_named_in_issue_12_are_disjoint`` in
tests/test_bank_quality.py, kept apart to merge without conflict."""

from __future__ import annotations

import pytest

from question_bank import quality
from question_bank.family import all_families

FIDS = ["parallel.allreduce_time", "parallel.bus_bandwidth", "parallel.pipeline_bubble",
        "parallel.tensor_parallel_bytes", "parallel.mfu_with_recompute", "serving.max_batch",
        "serving.speculative_tokens", "scaling.compute_optimal"]


@pytest.mark.parametrize("fid", FIDS)
def test_levels_named_in_issue_12_are_disjoint(fid):
    """Before: 4 to 17 statements of each of these families were drawn at two levels (100 draws)."""
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(60)] for diff in f.difficulties}
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0


@pytest.mark.parametrize("fid", FIDS)
def test_median_worked_solution_does_not_shrink(fid):
    """tensor_parallel_bytes' median solution went from 6 lines (medium) to 5 (hard)."""
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(60)] for diff in f.difficulties}
    _, medians = quality.difficulty_report(by_level)
    lines = [medians[diff] for diff in f.difficulties]
    assert lines == sorted(lines), (fid, medians)
