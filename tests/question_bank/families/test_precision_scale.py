"""The issue-25 families of question_bank.families.precision_scale: sound at every level (audit: key accepted,
each misconception rejected and diagnosed as itself), deterministic, every key recomputed a second way here —
3D fit from the activation tensors of a layer listed one by one (Korthikanti et al. 2022, §4.1) and a 1F1B
schedule run on the first stage, FP8 memory from a table of tensors typed here, a run's FLOPs from the
datasheet peaks typed here, quantisation scales by NumPy on the matrix — and one easy variant worked by hand."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import audit_problem, grade
from tests.family_helpers import easy, variants

IDS = ["measurements.run_flops", "precision.fp8_memory", "precision.quant_granularity", "training.fit_3d"]


def test_family_list():
    assert sorted(f for f, fam in FAMILIES.items() if fam.build.__module__.endswith("precision_scale")) == IDS


@pytest.mark.parametrize("fid", IDS)
def test_sound_and_deterministic(fid):
    for p in variants(fid, per_difficulty=6):
        assert audit_problem(p) == [], p.id
        assert p.misconceptions, p.id
        for m in p.misconceptions:
            v = grade(p, m.value)
            assert not v.correct and m.id in v.misconception.id.split("+"), (p.id, m.id)
        assert p.solution_text.strip().splitlines()[-1].startswith("Answer")
    a, b = FAMILIES[fid].generate(7, "hard"), FAMILIES[fid].generate(7, "hard")
    assert (a.statement_md, a.key) == (b.statement_md, b.key)


# ---------------------------------------------------------------------------------------
# 3D fit
# ---------------------------------------------------------------------------------------

#: one transformer layer's stored activations (Korthikanti et al. 2022, §4.1), in units of s·b·h bytes (16-bit
#: values, 1-byte masks): (tensor, size, split by tensor parallelism alone); the a·s²·b score tensors are left out
#: (selective recomputation recomputes them)
LAYER_TENSORS = [
    ("attention LayerNorm input", 2, False), ("QKV matmul input", 2, False), ("Q and K for QKᵀ", 4, True),
    ("V", 2, True), ("output projection input", 2, True), ("attention dropout mask", 1, False),
    ("MLP LayerNorm input", 2, False), ("first MLP matmul input", 2, False), ("GeLU input", 8, True),
    ("second MLP matmul input", 8, True), ("MLP dropout mask", 1, False),
]
#: HBM capacities as the datasheets print them (GB = 10⁹ bytes)
HBM = {"h100-sxm": 80e9, "h200": 141e9, "mi300x": 192e9}


def _one_f_one_b_peak(p: int, m: int) -> int:
    """Run the first stage's 1F1B order (p − 1 warm-up forwards, then one forward and one backward in turn, then
    the remaining backwards) and count the most micro-batches whose activations are alive at once."""
    warm = min(p - 1, m)
    ops = ["F"] * warm
    fwd_left, bwd_left = m - warm, m
    while bwd_left:
        if fwd_left:
            ops.append("F")
            fwd_left -= 1
        ops.append("B")
        bwd_left -= 1
    alive = peak = 0
    for op in ops:
        alive += 1 if op == "F" else -1
        assert alive >= 0
        peak = max(peak, alive)
    return peak


def _fit_3d_bytes(g):
    P, t, p, d, zero = g["P"], g["t"], g["p"], g["d"], g["zero"]
    per_gpu = Fraction(P, t * p)
    states = per_gpu * (Fraction(2, d if zero >= 3 else 1) + Fraction(2, d if zero >= 2 else 1) + Fraction(12, d))
    sbh = g["s"] * g["b"] * g["h"]
    layer = sum(Fraction(size * sbh, t if (split or g["sp"]) else 1) for _, size, split in LAYER_TENSORS)
    acts = (g["L"] // p) * _one_f_one_b_peak(p, g["m"]) * layer
    return states, acts


def test_layer_tensor_table_is_korthikanti():
    assert sum(s for _, s, split in LAYER_TENSORS if not split) == 10
    assert sum(s for _, s, split in LAYER_TENSORS if split) == 24
    assert [_one_f_one_b_peak(4, m) for m in (1, 2, 3, 4, 9)] == [1, 2, 3, 4, 4]


def _read_statement(text: str) -> dict:
    """The figures of a fit-3d statement, read back from what the student sees."""
    num = lambda pat: int(re.search(pat, text).group(1).replace(",", ""))  # noqa: E731
    out = {"P": num(r"A (\d+)B-parameter") * 10**9, "L": num(r"\((\d+) layers"), "h": num(r"d_model = ([\d,]+)"),
           "t": num(r"tensor parallelism t = (\d+)"), "p": num(r"pipeline parallelism p = (\d+)"),
           "d": num(r"data parallelism d = (\d+)"), "sp": "and without sequence parallelism" not in text}
    if "ZeRO stage" in text:
        out["zero"] = num(r"ZeRO stage (\d)")
    if "Sequences are" in text:
        out.update(s=num(r"s = ([\d,]+) tokens"), b=num(r"b = (\d+) sequence"), m=num(r"m = (\d+) micro"))
    return out


def test_fit_3d_keys():
    for p in variants("training.fit_3d", per_difficulty=12):
        g = p.given
        seen = _read_statement(p.statement_text)
        assert {k: g[k] for k in seen} == seen, p.id  # the key is computed from what the statement says
        states, acts = _fit_3d_bytes(g)
        expect = {"states": states, "activations": acts}.get(g["ask"])
        if expect is None:
            hw = next(k for k in HBM if HBM[k] == g["hbm"])
            assert str(int(HBM[hw] / 1e9)) + " GB" in p.statement_text, p.id
            expect = HBM[hw] - states - acts
        assert p.key.value == pytest.approx(float(expect) / 1e9, rel=1e-12, abs=1e-9), p.id


# ---------------------------------------------------------------------------------------
# FP8 memory
# ---------------------------------------------------------------------------------------

#: (bytes per parameter, an optimizer tensor that ZeRO-1 shards) per tensor, typed from the recipes' descriptions:
#: Transformer Engine keeps bf16 mixed precision's states and adds the FP8 weight copy; DeepSeek-V3 (§3.3) keeps
#: fp32 master weights and gradients and bf16 Adam moments
RECIPES = {
    "fp8-te": {"bf16 weights": (2, False), "fp8 weights": (1, False), "fp32 master": (4, True),
               "bf16 gradients": (2, False), "m fp32": (4, True), "v fp32": (4, True)},
    "fp8-deepseek-v3": {"fp8 weights": (1, False), "fp32 master": (4, True), "fp32 gradients": (4, False),
                        "m bf16": (2, True), "v bf16": (2, True)},
}


def test_fp8_memory_keys():
    for p in variants("precision.fp8_memory", per_difficulty=12):
        g = p.given
        text = p.statement_text
        assert f"{g['N'] / 1e9:g}-billion" in text and ("Transformer Engine" in text) == (g["recipe"] == "fp8-te"), p.id
        assert all(f"{k} = {g[k]}" in text for k in ("d", "t", "p") if g[k] > 1), p.id
        per_param = sum(Fraction(b, g["d"] if sharded else 1) for b, sharded in RECIPES[g["recipe"]].values())
        expect = g["N"] * per_param / (g["t"] * g["p"]) / (2**30 if g["unit"] == "GiB" else 10**9)
        assert p.key.value == pytest.approx(float(expect), rel=1e-12), p.id


def test_fp8_master_weights_mistake_is_offered():
    for p in variants("precision.fp8_memory", per_difficulty=4):
        assert "master_fp8" in {m.id for m in p.misconceptions}, p.id


# ---------------------------------------------------------------------------------------
# A run's FLOPs
# ---------------------------------------------------------------------------------------

#: dense bf16 FLOP/s per chip, typed from the datasheets (NVIDIA: the with-sparsity figure / 2)
PEAK = {"a100-80gb": 624e12 / 2, "h100-sxm": 1979e12 / 2, "h200": 1979e12 / 2, "mi300x": 1307.4e12, "tpu-v5p": 459e12}


def test_run_flops_keys():
    for p in variants("measurements.run_flops", per_difficulty=12):
        g = p.given
        peak = PEAK[g["hw"]]
        if g["sparse_printed"]:  # the statement prints the with-sparsity figure, twice the dense peak
            assert f"{2 * peak / 1e12:g} TFLOP/s" in p.statement_text, p.id
        else:
            assert f"{peak / 1e12:g} TFLOP/s" in p.statement_text, p.id
        seconds = g["gpu_hours"] * 3600 if g["gpu_hours"] else g["days"] * 24 * 3600 * g["chips"]
        flops = seconds * peak * g["mfu"]
        if g["N"]:
            assert p.key.value == pytest.approx(flops / (6 * g["N"]) / 1e9, rel=1e-12), p.id
        else:
            assert p.key.value == pytest.approx(flops / 10 ** g["exp"], rel=1e-12), p.id
            assert 1 <= p.key.value < 10, p.id


# ---------------------------------------------------------------------------------------
# Per-tensor, per-channel, per-block scales
# ---------------------------------------------------------------------------------------


def _np_absmax(groups: np.ndarray, qmax: int = 7) -> np.ndarray:
    """Quantise and dequantise each row of ``groups`` with its own absmax scale (np.round: half to even)."""
    scale = np.abs(groups).max(axis=1, keepdims=True) / qmax
    return np.clip(np.round(groups / scale), -qmax, qmax) * scale


def _np_errors(W: np.ndarray) -> dict[str, np.ndarray]:
    return {"tensor": _np_absmax(W.reshape(1, -1)).reshape(W.shape) - W,
            "channel": _np_absmax(W) - W,
            "block": _np_absmax(W.reshape(-1, 2)).reshape(W.shape) - W}


def test_quant_granularity_keys():
    for p in variants("precision.quant_granularity", per_difficulty=12):
        W = np.array([[float(Fraction(x)) for x in row] for row in p.given["W"]])
        err = _np_errors(W)
        for row in W:  # the statement prints the matrix it keys
            assert all(f"{x:.2f}" in p.statement_text for x in row), p.id
        expect = {"channel_max": np.abs(err["channel"]).max(), "block_max": np.abs(err["block"]).max(),
                  "mse_ratio": (err["tensor"] ** 2).mean() / (err["channel"] ** 2).mean()}[p.given["ask"]]
        assert p.key.value == pytest.approx(expect, rel=1e-9, abs=1e-12), p.id


def test_finer_scales_never_coarser_than_the_bound():
    """An invariant the family leans on: every error is at most half its group's scale."""
    for p in variants("precision.quant_granularity", per_difficulty=6):
        W = np.array([[float(Fraction(x)) for x in row] for row in p.given["W"]])
        err = _np_errors(W)
        assert np.all(np.abs(err["channel"]) <= np.abs(W).max(axis=1, keepdims=True) / 14 + 1e-12)
        assert np.all(np.abs(err["tensor"]) <= np.abs(W).max() / 14 + 1e-12)


def test_pinned_easy_variants():
    """Worked by hand (seed 0, easy).

    3D fit: 65B on t = 4, p = 8, d = 4, ZeRO-1: 65e9 / 32 = 2.03125e9 parameters per GPU × (2 + 2 + 12/4) bytes
    = 14.21875e9 bytes = 14.22 GB.
    FP8 (Transformer Engine): 74.9e9 parameters × (2 + 1 + 4 + 2 + 4 + 4) = 17 bytes = 1,273.3 GB.
    Run FLOPs: 2,852,000 TPU v5p chip-hours × 3,600 s × 459e12 FLOP/s × 0.51 = 2.4034e24 → 2.40 × 10²⁴.
    Per-channel int4 of [[1.13, −1.10, 2.17, −0.63], [−0.75, −0.64, −0.78, −0.17]]: row 1 scale 2.17/7 = 0.31,
    −1.10/0.31 = −3.55 → −4 → −1.24, error 0.14 (the row's largest); row 2 scale 0.78/7 = 0.11143, −0.17 → −1.53
    → −2 → −0.2229, error 0.0529. Largest: 0.1400."""
    fit = easy("training.fit_3d")
    assert re.search(r"65B-parameter .* t = 4, .*p = 8 .*d = 4", fit.statement_text)
    assert round(fit.key.value, 2) == 14.22
    fp8 = easy("precision.fp8_memory")
    assert "74.9-billion" in fp8.statement_text and "Transformer Engine" in fp8.statement_text
    assert round(fp8.key.value, 2) == 1273.30
    run = easy("measurements.run_flops")
    assert "2,852,000 TPU v5p chip-hours" in run.statement_text and "51 %" in run.statement_text
    assert round(run.key.value, 2) == 2.40 and run.key.scale == 24
    q = easy("precision.quant_granularity")
    assert q.given["W"][0] == ["113/100", "-11/10", "217/100", "-63/100"]
    assert round(q.key.value, 4) == 0.14


def test_run_flops_hard_tokens_spread():
    """Issue 39: hard's runs are drawn by their tokens (100 billion to 40 trillion, log-uniform), the model size, the
    chips (any multiple of 32 from 256 to 16,384) and the days (3 to 150) fitted to them: the keys spread over the
    whole range in log space, neither piled at the top nor thin at the bottom."""
    ps = [FAMILIES["measurements.run_flops"].generate(s, "hard") for s in range(300)]
    tokens = np.log10([p.key.value for p in ps])  # billions
    assert all(3 <= p.given["days"] <= 150 for p in ps)
    assert all(256 <= p.given["chips"] <= 16384 and p.given["chips"] % 32 == 0 for p in ps)
    assert tokens.min() >= 2 and tokens.max() <= np.log10(40_000)
    thirds = np.histogram(tokens, bins=np.linspace(2, np.log10(40_000), 4))[0] / len(ps)
    assert thirds.min() > 0.25, thirds  # about a third in each third of the decades


def test_run_flops_hard_runs_do_not_repeat_without_their_mfu():
    """Issue 39: with the chips among seven powers of two and the model among seven sizes, the FLOPs a run would
    compute at full peak (days × chips × peak, the MCQ's "left out the MFU" option) took few values, and the same
    option text came back in draw after draw, never as the key. Recomputed here from the run's figures: few
    repeats in 400 draws now."""
    ps = [FAMILIES["measurements.run_flops"].generate(s, "hard") for s in range(400)]
    full_peak = [round(p.given["days"] * 86400 * p.given["chips"] * PEAK[p.given["hw"]] / (6 * p.given["N"]) / 1e9, 1)
                 for p in ps]
    assert len(set(full_peak)) >= 370, len(set(full_peak))  # 336 with the powers of two
    assert len({p.given["N"] for p in ps}) >= 15  # model sizes from 1 to 540 billion parameters


def test_run_flops_hard_mcq_options_stay_in_the_plausible_range():
    """Issue 39: the hard level's tokens are a plausible pre-training run's, 100 billion to 40 trillion; its MCQ
    view offers no option outside that range either (an option of 30 billion or 200 trillion tokens, one slip past an
    end, was never the key), and crosses the MFU with the factor 2 (the with-sparsity peak or 3N), each either way."""
    fam = FAMILIES["measurements.run_flops_mcq"]
    ends = 0
    for s in range(150):
        p = fam.generate(s, "hard")
        vals = [float(o.split()[0]) for o in p.options_text]
        assert all(100 <= v <= 40_000 for v in vals), (p.id, vals)
        ends += min(vals) < 200 or max(vals) > 20_000
        for slips in p.given["option_slips"]:
            assert {name for name, _ in slips} <= {"no_mfu", "sparse_peak+macs_vs_flops", "macs_vs_flops"}, slips
    assert ends >= 10  # options reach near both ends: the bound is met, not avoided


def test_run_flops_hard_key_fraction_uniform_near_whole_units():
    """Issue 39: keeping out only the keys whose last digit sits near a half (so that they round one way) left the
    fraction within 1/4 of a whole unit in 62 % of the keys, and a doubled key then rounded to exactly twice the key's
    text more often than any other option did: in the MCQ view the option with an exact ×2 partner was the key. The
    fraction is near a whole unit in about half the keys now, as for any number."""
    ps = [FAMILIES["measurements.run_flops"].generate(s, "hard") for s in range(400)]
    off = [min(f, 1 - f) for f in (p.key.value * 10 % 1 for p in ps)]
    assert max(off) <= 0.4  # still safe for rounding
    share = np.mean([o < 0.25 for o in off])
    assert 0.42 < share < 0.58, share
