"""Every registered family passes ``qkv bank validate --quality``'s checks (key positions,
answer-blind rules, blind-guess keys, disjoint and ordered levels) on a 100-draw sample, except
the checks a family is listed for in ``quality.PENDING`` (known, reported as pending). A family
added later is checked here without being named (issue 12: "no future family regresses")."""

from __future__ import annotations

from question_bank import quality
from question_bank.family import all_families


def test_every_family_passes_the_quality_checks():
    rep = quality.run_quality(100, include_curated=False)
    assert len(rep.families) == len(all_families())
    assert rep.ok, "\n".join(rep.issues)
