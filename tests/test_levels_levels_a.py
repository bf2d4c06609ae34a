"""Issue 12, difficulty levels: the families of branch levels-a draw no statement at two levels.

Same body as ``test_levels_named_in_issue_12_are_disjoint`` in tests/test_bank_quality.py, kept in its own
file so that the lists of the branches merge without conflict. Before: latent.kv_cache drew 16 statements
at two levels (of 100 draws), moe.decode_weight_bytes 14, loss.perplexity 8, window.kv_cache 4,
moe.active_params 3, sampling.top_p 1 (and 28 of its 102 keys were a blind guess: a set of 1 token, or a
number printed in the statement)."""

from __future__ import annotations

import pytest

from question_bank import quality
from question_bank.family import all_families

FAMILIES = ["latent.kv_cache", "moe.active_params", "moe.decode_weight_bytes", "window.kv_cache",
            "loss.perplexity", "sampling.top_p"]


@pytest.mark.parametrize("fid", FAMILIES)
def test_levels_of_branch_levels_a_are_disjoint(fid):
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(60)] for diff in f.difficulties}
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0


@pytest.mark.parametrize("fid", FAMILIES)
def test_levels_of_branch_levels_a_are_ordered_and_keys_not_blind(fid):
    """The median worked solution does not shrink from easy to hard, and no key is won by typing 0, 1 or a
    number of the statement (none of these families declares blind_key_ok)."""
    f = all_families()[fid]
    assert not f.blind_key_ok
    by_level = {diff: [f.generate(s, diff) for s in range(40)] for diff in f.difficulties}
    _, medians = quality.difficulty_report(by_level)
    levels = [medians[d] for d in f.difficulties]
    assert levels == sorted(levels), medians
    blind = [p.id for ps in by_level.values() for p in ps if quality.blind_key_guess(p) is not None]
    assert blind == []


def test_top_p_level_keys_are_not_one_value():
    """A level whose key is almost always the same count is a guess too: no count holds more than 3/4 of a level."""
    from collections import Counter

    f = all_families()["sampling.top_p"]
    for diff in f.difficulties:
        c = Counter(f.generate(s, diff).key.value for s in range(40))
        assert max(c.values()) <= 30, (diff, c)
