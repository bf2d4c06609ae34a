"""issue 22: attention.why_sqrt_dk's sentence frames give a blind attacker nothing to learn. Its four options are the
2x2 cross of one frame's two slots, each filled right or wrong; at 400 draws a learned attacker trained on some frames
still found the key in 47 % of the medium draws of the others, because the right and the wrong fillers differed in
length and words (dₖ against √dₖ, "variance" against "mean") the same way from frame to frame. Now the four options of
a frame are alike to every feature the attacker reads, and every filler is the right one as often as the wrong one."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from question_bank import adversary as adv
from question_bank import quality
from question_bank.families.scaling import _WHY_FRAMES, _why_cell
from question_bank.family import all_families
from question_bank.render import latex_to_text

FID = "attention.why_sqrt_dk"
#: the columns that rank tied values by their position among the options (the key's position is drawn)
_BY_POSITION = {"position", "chars_rank", "near_rank"}


def _frames():
    return [pytest.param(lvl, f, id=f"{('easy', 'medium')[lvl]}-{i}") for lvl, frames in _WHY_FRAMES.items()
            for i, f in enumerate(frames)]


def _options(frame, x, y):
    return [latex_to_text(_why_cell(frame, x, y, xr, yr)[0]) for xr in (True, False) for yr in (True, False)]


@pytest.mark.parametrize("lvl,f", _frames())
def test_a_frame_s_four_options_look_alike_to_the_attacker(lvl, f):
    """Every feature of the learned attacker but the position is the same for the four options (so the key is as
    likely as any option to score highest), and every fixed rule of the quality check ties them all."""
    frame, x, y = f
    for right, wrong, _ in (x, y):
        r, w = latex_to_text(right), latex_to_text(wrong)
        assert len(r) == len(w) and len(r.split()) == len(w.split()), (frame, r, w)
    statement = all_families()[FID].generate(0, ("easy", "medium")[lvl]).statement_text
    opts = _options(frame, x, y)
    feats = adv.option_features(statement, opts)
    differ = [name for j, name in enumerate(adv.FEATURES) if name not in _BY_POSITION and len(np.unique(feats[:, j])) > 1]
    assert not differ, (opts[0], differ)
    picks = {name: rule(statement, opts) for name, rule in quality.STRATEGIES.items()}
    assert all(p is None or len(p) == 4 for p in picks.values()), (opts[0], picks)


@pytest.mark.parametrize("lvl", sorted(_WHY_FRAMES))
def test_each_filler_is_right_as_often_as_wrong(lvl):
    """Over a level's frames each filler string (dₖ, √dₖ, "one", "the mean", ...) fills a slot right as often as it
    fills one wrong, so no word marks the key from frame to frame; the misconceptions stay named and distinct."""
    balance: Counter[str] = Counter()
    for frame, x, y in _WHY_FRAMES[lvl]:
        for right, wrong, mistake in (x, y):
            balance[latex_to_text(right)] += 1
            balance[latex_to_text(wrong)] -= 1
            assert mistake.id and mistake.label and mistake.feedback
        assert x[2].id != y[2].id, frame
    assert not {k: v for k, v in balance.items() if v}, balance


def test_levels_share_no_frame_and_no_misconception():
    easy, medium = (_WHY_FRAMES[0], _WHY_FRAMES[1])
    assert not {f[0] for f in easy} & {f[0] for f in medium}
    ids = [{w.id for f in frames for w in (f[1][2], f[2][2])} for frames in (easy, medium)]
    assert not ids[0] & ids[1]


@pytest.mark.slow
def test_the_learned_attacker_is_at_chance_on_unseen_frames_at_400_draws():
    """The figure issue 22 found: 47 % of 94 medium draws whose frame the attacker never saw (chance 25 %).
    At issue 39's standard, 500 draws per level (its stronger learners reach 45 % of 75 at 200 draws, 23 % of
    the medium draws at 500: question_bank/data/choice_attack.json)."""
    f = all_families()[FID]
    by_level = {diff: [f.generate(s, diff) for s in range(500)] for diff in f.levels}
    fa = adv.attack_family(f, by_level, two=False)
    # the outside attacker's fixed rule (the option least or most like the others, 34-38 % of fresh draws) withdraws
    # both levels through the record; the in-house learners below still sit at chance on unseen frames
    assert not [i for i in fa.issues if "the outside attacker's rule" not in i], fa.issues
    for la in fa.levels.values():
        assert la.learned is not None and la.learned.unseen_rate is not None
        assert la.learned.unseen_rate <= la.chance + adv.LEARNED_MARGIN + adv.allowance(la.chance, la.learned.unseen_n)
