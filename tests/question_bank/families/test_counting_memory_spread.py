"""Issue 39: the answers of counting.attention_memory and counting.kv_cache are spread flat in log space.

A test-wise student who never computes learns where a level's answers lie: when the answers pile up at the top
of their range (a product of figures each drawn uniformly), an option one slip ×2 above the largest answers is
never the key, and the option's size alone beats chance. The families draw the answer's size first, flat over
the decades the level reaches, and solve the length for it; these tests read only the drawn problems.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from question_bank.family import get_family

LEVELS = ("easy", "medium", "hard")


def _log_keys(fid: str, level: str, n: int = 300) -> np.ndarray:
    fam = get_family(fid)
    return np.log10([float(fam.generate(s, level).key.value) for s in range(n)])


@pytest.mark.parametrize("fid", ["counting.attention_memory", "counting.kv_cache"])
@pytest.mark.parametrize("level", LEVELS)
def test_answers_spread_flat_in_log_space(fid, level):
    """The middle half of the answers spans more than 1.2 decades (a draw of uniform figures spanned 0.7-0.8 at
    easy), and of the middle 80 % each half of its log range holds 40-60 % of them (it held 33-39 % below)."""
    ks = _log_keys(fid, level)
    q10, q25, q75, q90 = np.quantile(ks, [0.1, 0.25, 0.75, 0.9])
    assert q75 - q25 > 1.2
    inner = ks[(ks >= q10) & (ks <= q90)]
    assert 0.4 <= np.mean(inner < (q10 + q90) / 2) <= 0.6


@pytest.mark.parametrize("level", LEVELS)
def test_attention_memory_figures_stay_in_the_level_ranges(level):
    """The length solved for the drawn size stays in the level's range, and the key is B·h·n²·bytes·L over the unit
    (recomputed here from the given figures)."""
    fam = get_family("counting.attention_memory")
    n_lo, n_hi = {"easy": (1024, 4096), "medium": (8192, 16384), "hard": (2048, 16384)}[level]
    for s in range(60):
        p = fam.generate(s, level)
        g = p.given
        assert n_lo <= g["seq"] <= n_hi and 1 <= g["batch"] <= 64 and g["n_heads"] % 2 == 0
        nbytes = g["n_layers"] * g["batch"] * g["n_heads"] * g["seq"] ** 2 * {"fp32": 4, "fp16": 2, "bf16": 2}[g["dtype"]]
        assert math.isclose(float(p.key.value), nbytes / {"GB": 1e9, "GiB": 2**30}[g["unit"]], rel_tol=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_kv_cache_lengths_stay_in_range(level):
    """The length solved for the drawn size is a length the statement allows (512 to 32,768) and the batch 1 to 64."""
    fam = get_family("counting.kv_cache")
    for s in range(60):
        g = fam.generate(s, level).given
        assert 512 <= g["seq"] <= 32768 and 1 <= g["batch"] <= 64
