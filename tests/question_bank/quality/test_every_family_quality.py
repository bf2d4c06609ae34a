"""Every registered family passes ``qkv bank validate --quality``'s checks (key positions,
answer-blind rules, blind-guess keys, disjoint and ordered levels) on a 100-draw sample, except
the checks a family is listed for in ``quality.PENDING`` (known, reported as pending). A family
added later is checked here without being named (issue 12: "no future family regresses").

The draws are shared with ``test_validate_many.py``, which audits each of them (conftest.py)."""

from __future__ import annotations

from question_bank import quality
from question_bank.family import all_families

DRAWS = 100


def test_every_family_passes_the_quality_checks(shared_draws):
    rep = quality.run_quality(DRAWS, include_curated=False, generate=shared_draws)
    # every family with a level on offer (a family whose every choice level is withdrawn is not offered)
    assert set(rep.families) == {fid for fid, f in all_families().items() if f.difficulties}
    assert all(f.draws >= DRAWS for f in rep.families.values()), {k: f.draws for k, f in rep.families.items()
                                                                  if f.draws < DRAWS}
    assert rep.ok, "\n".join(rep.issues)
