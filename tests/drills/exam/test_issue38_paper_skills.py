"""Issue 38: a paper asks each skill once: no family twice (its numeric-MCQ view or its "which one"
MCQ counts as the family), no two curated items of one topic and first tag (the bank's "count an encoder
layer's parameters" items), while the bank has other questions to give."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from drills.exam.blueprint import assemble, load


def _skill(p) -> str:
    if re.fullmatch(r"[\w.]+/(easy|medium|hard)/\d+", p.id):
        return re.sub(r"_(mcq|one)$", "", p.id.split("/")[0])
    return f"curated:{p.topic}:{p.tags[0] if p.tags else p.id}"


@pytest.mark.parametrize("seed", [1])
def test_gate_paper_asks_each_skill_once(seed):
    paper = assemble(load("gate"), seed)
    assert len(paper.problems) == 65
    twice = {k: n for k, n in Counter(_skill(p) for p in paper.problems).items() if n > 1}
    assert not twice, twice
