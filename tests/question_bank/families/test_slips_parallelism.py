"""The mistakes and draws added to parallel.mfu_with_recompute for its MCQ view (branch slips_e),
each recomputed here from the statement's figures by a formula of its own, over many seeds.

Independent references:
- MFU = model FLOPs per token × tokens/s ÷ (chips × dense peak), the dense peak half the datasheet's
  with-sparsity figure (tests.family_helpers.CHIPS); PaLM's model FLOPs per token 6N + 12·L·h·s
  (Chowdhery et al. 2022, Appendix B);
- "left out the attention term": the same MFU with 6N per token only, i.e. the key times
  6N / (6N + 12·L·h·s).
"""

import math

import pytest

import question_bank.families.parallelism  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import grade
from tests.family_helpers import CHIPS

FID = "parallel.mfu_with_recompute"
SEEDS = range(60)


def _mis(p, mid):
    return next((m for m in p.misconceptions if m.id == mid), None)


def _mfu_percent(g, flops_per_token):
    return 100 * flops_per_token * g["tokens_per_second"] / (g["chips"] * CHIPS[g["hw"]][0])


@pytest.mark.parametrize("seed", SEEDS)
def test_forgot_attention_term_is_6n_only(seed):
    """Hard (PaLM's convention): the slip's value is the MFU of 6N FLOPs per token, a factor
    6N/(6N + 12·L·h·s) (about 0.93 for Llama-2-70B at s = 4096) below the key; a student who
    types it is told that mistake."""
    p = FAMILIES[FID].generate(seed, "hard")
    g = p.given
    assert g["n_layers"] == 80 and g["d_model"] == 8192 and g["seq"] == 4096
    m = _mis(p, "forgot_attention_term")
    assert m is not None, p.id
    assert m.value == pytest.approx(_mfu_percent(g, 6 * g["params"]), rel=1e-12), p.id
    attn = 12 * g["n_layers"] * g["d_model"] * g["seq"]
    assert m.value == pytest.approx(p.key.value * 6 * g["params"] / (6 * g["params"] + attn), rel=1e-12), p.id
    assert 0.9 < m.value / p.key.value < 0.95
    v = grade(p, m.value)
    assert not v.correct and "forgot_attention_term" in {x.id for x in v.misconceptions}, p.id


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_no_attention_slip_without_the_term(level):
    """Below hard the statement counts 6N only: there is no attention term to leave out."""
    for seed in range(30):
        p = FAMILIES[FID].generate(seed, level)
        assert p.given["n_layers"] == 0
        assert _mis(p, "forgot_attention_term") is None, p.id


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_throughput_three_significant_figures_and_keys_not_round(level):
    """tokens/s is printed to three significant figures (not rounded to hundreds: for a small model that
    gave back the round MFU target, 56.00 %); the key is the formula on that printed figure, and the
    keys spread over the MFU range rather than sitting on a few round targets."""
    keys = []
    for seed in SEEDS:
        p = FAMILIES[FID].generate(seed, level)
        g = p.given
        tps = g["tokens_per_second"]
        assert tps == int(tps) and tps > 0, p.id
        digits = str(int(tps)).rstrip("0")
        assert len(digits) <= 3, (p.id, tps)
        assert f"{int(tps):,}" in p.statement_text, p.id
        model = 6 * g["params"] + 12 * g["n_layers"] * g["d_model"] * g["seq"]
        assert p.key.value == pytest.approx(_mfu_percent(g, model), rel=1e-12), p.id
        assert 5 < p.key.value < 90
        keys.append(round(p.key.value, 2))
    whole = sum(1 for k in keys if math.isclose(k, round(k), abs_tol=1e-9))
    assert whole <= len(keys) // 5, keys
    assert len(set(keys)) >= len(keys) * 0.9, keys
    assert max(keys) / min(keys) > 2.5, keys


@pytest.mark.parametrize("seed", range(30))
def test_other_slips_recomputed(seed):
    """The slips the view crosses with the new one, recomputed from the printed figures: the HFU (8N per
    token with full recomputation; 6N + 16·L·h·s with selective), the with-sparsity peak (half the MFU)."""
    for level in ("easy", "hard"):
        p = FAMILIES[FID].generate(seed, level)
        g = p.given
        L, h, s, N = g["n_layers"], g["d_model"], g["seq"], g["params"]
        hw_flops = 6 * N + 12 * L * h * s + ({"full": 2 * N + 4 * L * h * s, "selective": 4 * L * h * s}[g["recompute"]])
        assert _mis(p, "hardware_flops").value == pytest.approx(_mfu_percent(g, hw_flops), rel=1e-12), p.id
        assert _mis(p, "sparse_peak").value == pytest.approx(p.key.value / 2, rel=1e-12), p.id
