"""window.kv_cache at medium and hard (issue 39, round 4): the keys' sizes spread flat in log space over the range
the family names, every option of its MCQ view inside that range, and the key's last digit as likely to make an
exact double as a distractor's.

Each figure is recomputed here from the draw's printed figures (the cache formula written out, not the solver's),
and the options from their texts."""

from __future__ import annotations

import math
from collections import Counter

import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.family import all_families

UNITS = {"GB": 10**9, "GiB": 2**30}
LEVELS = ("medium", "hard")


def _cache(g: dict) -> float:
    """The KV cache in the draw's unit: K and V, bf16, the odd-numbered layers windowed (min(n, W) positions)."""
    local = (g["n_layers"] + 1) // 2
    per = 2 * g["batch"] * g["n_kv_heads"] * g["d_head"] * 2
    return per * (local * min(g["seq"], g["window"]) + (g["n_layers"] - local) * g["seq"]) / UNITS[g["unit"]]


@pytest.mark.parametrize("level", LEVELS)
def test_keys_are_flat_in_log_space_over_the_named_range(level):
    """The cache's size is drawn first, log-uniformly: each third of the named range (in decades) holds about a third
    of the keys (the six figures drawn each on its own piled the keys up in a bell about 9 GiB, 0.6 decades wide, and
    a rule that knows the bell took the lowest of four options above its middle: +4.6 points)."""
    fam = all_families()["window.kv_cache"]
    ps = [fam.generate(s, level) for s in range(300)]
    lo, hi = ps[0].given["key_range"]
    assert 0 < lo < hi
    keys = [_cache(p.given) for p in ps]
    assert all(k == pytest.approx(p.key.value, rel=1e-12) for k, p in zip(keys, ps, strict=True))
    assert all(lo <= k <= hi for k in keys), (min(keys), max(keys))
    width = math.log10(hi / lo)
    thirds = Counter(min(int(3 * math.log10(k / lo) / width), 2) for k in keys)
    assert all(70 <= thirds[t] <= 130 for t in range(3)), thirds  # 100 each when flat


@pytest.mark.parametrize("level", LEVELS)
def test_the_view_offers_no_option_outside_the_keys_range(level):
    """An option outside the range the keys are drawn from is never the key: the view keeps every option inside it
    (a cross a third of a decade wide at the range's ends otherwise struck out one or two options)."""
    fams = all_families()
    view = fams["window.kv_cache_mcq"]
    for s in range(120):
        p = view.generate(s, level)
        lo, hi = p.given["key_range"]
        values = [float(o.split()[0]) for o in p.options_text]
        assert all(lo - 0.005 <= v <= hi + 0.005 for v in values), (p.id, p.options_text)
        # the key is the cache of the printed figures, and the two slips crossed go either way (a value two mistakes
        # share, as the window everywhere and K and V forgotten when n = 3W, is named "a+b")
        key = values[next(iter(p.key.correct))]
        assert key == pytest.approx(_cache(p.given), abs=0.005), p.id
        for row in p.given["option_slips"]:
            assert all(set(name.split("+")) & {"forgot_k_and_v", "gib_for_gb", "gb_for_gib"} for name, _ in row), p.id


@pytest.mark.parametrize("level", LEVELS)
def test_keys_last_digit_is_away_from_a_half_and_from_a_whole_unit(level):
    """The key's third decimal (what rounding to two drops) lies in [0.1, 0.4] or [0.6, 0.9] of a unit: kept away
    from a half only, a doubled key read as exactly twice the key's text in 62 % of draws (a doubled distractor in
    50 %), and the exact ×2 pair of options held the key."""
    fam = all_families()["window.kv_cache"]
    for s in range(150):
        v = _cache(fam.generate(s, level).given)
        frac = v * 100 % 1
        assert 0.1 - 1e-9 <= frac <= 0.4 + 1e-9 or 0.6 - 1e-9 <= frac <= 0.9 + 1e-9, (s, v)
