"""The mistakes added for the numeric MCQ views (issue 26) to loss.cross_entropy, training.fsdp_overlap and
precision.quant_error: each value recomputed here a second way (NumPy's log-sum-exp, the ring and
quantisation formulas written out, identities between the mistake and the key) over many seeds; and the
wider draws (chips, one-decimal logits) that came with them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES

SEEDS = range(40)
#: link per direction (bytes/s), typed from the datasheets (printed bidirectional ÷ 2)
LINK = {"a100-80gb": 300e9, "h100-sxm": 450e9, "b200": 900e9, "mi300x": 448e9, "tpu-v5p": 100e9}


def _mis(p) -> dict[str, float]:
    return {m.id: float(m.value) for m in p.misconceptions}


def _lse(z) -> float:
    z = np.asarray(z, dtype=float)
    m = z.max()
    return float(m + np.log(np.exp(z - m).sum()))


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_cross_entropy_new_mistakes(level):
    seen = set()
    for s in SEEDS:
        p = FAMILIES["loss.cross_entropy"].generate(s, level)
        z, y, eps = p.given["z"], p.given["y"], p.given["label_smoothing"]
        lse = _lse(z)
        nll = lse - z[y]
        mis = _mis(p)
        if "forgot_target_logit" in mis:
            assert mis["forgot_target_logit"] == pytest.approx(lse, rel=1e-12)
        if "one_based_target" in mis:
            assert y >= 1
            assert mis["one_based_target"] == pytest.approx(lse - z[y - 1], rel=1e-12, abs=1e-12)
        if "class_after_target" in mis:  # issue 39, round 4: 1 added to the class number, where none is before
            assert y == 0
            assert mis["class_after_target"] == pytest.approx(lse - z[1], rel=1e-12, abs=1e-12)
        if eps:
            # the key is (1 − ε)·nll + ε·mean(−ln p): dropping the uniform term leaves (1 − ε)·nll, weighting the
            # target 1 adds ε·nll to the key
            if "dropped_uniform" in mis:
                assert mis["dropped_uniform"] == pytest.approx((1 - eps) * nll, rel=1e-12)
            if "target_weight_one" in mis:
                assert mis["target_weight_one"] == pytest.approx(float(p.key.value) + eps * nll, rel=1e-12)
                smooth = float(np.mean([lse - zc for zc in z]))
                assert mis["target_weight_one"] == pytest.approx(nll + eps * smooth, rel=1e-12)
        else:
            assert "dropped_uniform" not in mis and "target_weight_one" not in mis
        seen |= mis.keys()
    assert "forgot_target_logit" in seen and "one_based_target" in seen and "class_after_target" in seen
    if level == "hard":
        assert {"dropped_uniform", "target_weight_one"} <= seen


def test_fsdp_shard_only():
    chips = set()
    for s in SEEDS:
        p = FAMILIES["training.fsdp_overlap"].generate(s, "easy")
        g = p.given
        mis = _mis(p)
        n, P, beta = g["n"], g["P"], LINK[g["hw"]]
        # the ring all-gather, chunk by chunk: n − 1 steps of one 2P/n-byte shard each
        ring = sum(2 * P / n / beta for _ in range(n - 1)) * 1e3
        assert float(p.key.value) == pytest.approx(ring, rel=1e-9)
        assert mis["shard_only"] == pytest.approx(2 * P / n / beta * 1e3, rel=1e-12)
        assert mis["shard_only"] * (n - 1) == pytest.approx(float(p.key.value), rel=1e-9)
        chips.add(g["hw"])
    assert chips == set(LINK)  # five chips at easy


def test_mistake_values_finite():
    for fid in ("loss.cross_entropy", "training.fsdp_overlap", "precision.quant_error"):
        for level in ("easy", "medium", "hard"):
            for s in range(10):
                for m in FAMILIES[fid].generate(s, level).misconceptions:
                    assert math.isfinite(float(m.value)), (fid, level, s, m.id)


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_quant_error_half_step_bound(level):
    for s in SEEDS:
        p = FAMILIES["precision.quant_error"].generate(s, level)
        x = np.array([float(Fraction(v)) for v in p.given["x"]])
        if level == "medium":  # absmax int4: codes −7 … 7
            scale = np.abs(x).max() / 7
        else:  # zero-point int4: the range widened to hold 0, codes 0 … 15
            scale = (max(x.max(), 0.0) - min(x.min(), 0.0)) / 15
        mis = _mis(p)
        assert mis["half_step_bound"] == pytest.approx(scale / 2, rel=1e-12)
        if level == "medium":  # nothing clamps under absmax: the bound holds
            assert float(p.key.value) <= scale / 2 + 1e-12
    for s in range(10):
        assert "half_step_bound" not in _mis(FAMILIES["precision.quant_error"].generate(s, "easy"))


def test_wider_draws():
    chips = {FAMILIES["training.fsdp_overlap"].generate(s, "easy").given["hw"] for s in range(60)}
    assert chips == set(LINK)
    z = [v for s in range(20) for v in FAMILIES["loss.cross_entropy"].generate(s, "medium").given["z"]]
    assert any(v != int(v) for v in z)
    assert all(v == int(v) for s in range(20) for v in FAMILIES["loss.cross_entropy"].generate(s, "easy").given["z"])
