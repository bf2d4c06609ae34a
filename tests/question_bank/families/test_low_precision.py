"""The issue-25 families (question_bank.families.low_precision): sound at every level (audit: key
accepted, each misconception rejected and diagnosed as itself), deterministic, every key recomputed
a second way here — FP8 by PyTorch's own cast, MXFP4 and integer quantisation by NumPy code written
here, schedules by the formulas as HuggingFace and the paper write them, FSDP by a ring simulated
chunk by chunk, busbw by PERFORMANCE.md's formula — and one easy variant worked by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import audit_problem, grade
from tests.family_helpers import easy, variants

IDS = ["measurements.mfu_step", "measurements.nccl_busbw", "precision.block_bytes", "precision.nearest_value",
       "precision.quant_error", "precision.smoothquant", "training.fsdp_overlap", "training.grad_accum_bubble",
       "training.lr_schedule"]
#: link per direction (bytes/s) and dense bf16 peak, typed from the datasheets (printed bidirectional ÷ 2 ÷ ports)
CHIPS = {"a100-80gb": (300e9, 312e12), "h100-sxm": (450e9, 989.5e12), "b200": (900e9, 2250e12),
         "mi300x": (448e9, 1307.4e12), "tpu-v5p": (100e9, 459e12)}


def test_family_list():
    assert sorted(f for f, fam in FAMILIES.items() if fam.build.__module__.endswith("low_precision")) == IDS


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


def _np_mx_fp4(v):
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    scale = 2.0 ** (np.floor(np.log2(np.abs(v).max())) - 2)
    out = []
    for x in v / scale:
        a = min(abs(x), 6.0)
        dist = np.abs(grid - a)
        best = np.flatnonzero(dist == dist.min())
        k = best[0] if len(best) == 1 else [i for i in best if i % 2 == 0][0]
        out.append(math.copysign(grid[k], x))
    return np.array(out) * scale


def test_nearest_value_keys():
    dts = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    for p in variants("precision.nearest_value", per_difficulty=12):
        g = p.given
        if g["format"] == "mxfp4":
            v = np.array([float(Fraction(x)) for x in g["values"]])
            expect = _np_mx_fp4(v)[g["index"]]
        else:
            expect = torch.tensor([float(Fraction(g["x"]))], dtype=torch.float64).to(dts[g["format"]]).double().item()
        assert p.key.value == pytest.approx(expect, abs=1e-12), p.id


def _np_quant(x, bits, scheme):
    if scheme == "absmax":
        qmax = 2 ** (bits - 1) - 1
        s = np.abs(x).max() / qmax
        return np.clip(np.round(x / s), -qmax, qmax) * s
    qmax = 2**bits - 1
    lo, hi = min(x.min(), 0), max(x.max(), 0)
    s = (hi - lo) / qmax
    z = np.clip(np.round(-lo / s), 0, qmax)
    return (np.clip(np.round(x / s) + z, 0, qmax) - z) * s


def test_quant_error_keys():
    for p in variants("precision.quant_error", per_difficulty=12):
        g = p.given
        x = np.array([float(Fraction(v)) for v in g["x"]])
        deq = _np_quant(x, g["bits"], g["scheme"])
        expect = deq[g["index"]] if g["ask"] == "element" else np.abs(deq - x).max()
        assert p.key.value == pytest.approx(expect, abs=1e-9), p.id


def test_lr_schedule_keys():
    for p in variants("training.lr_schedule", per_difficulty=12):
        g, t = p.given, p.given["step"]
        if g["schedule"] == "linear":  # HuggingFace get_linear_schedule_with_warmup's lambda
            w, T = g["warmup"], g["total"]
            lr = g["peak"] * (t / w if t < w else max(0.0, (T - t) / (T - w)))
        elif g["schedule"] == "cosine":
            w, T, lo = g["warmup"], g["total"], g["min_lr"]
            lr = lo + (g["peak"] - lo) * 0.5 * (1 + math.cos(math.pi * (t - w) / (T - w)))
        else:  # Vaswani et al. (2017), eq. 3
            lr = g["d_model"] ** -0.5 * min(t**-0.5, t * g["warmup"] ** -1.5)
        assert p.key.value == pytest.approx(lr * 1e5, rel=1e-12), p.id


def _ring_all_gather(n, S, beta):
    t = 0.0
    for _ in range(n - 1):  # each step: every rank forwards one chunk of S/n to its neighbour
        t += (S / n) / beta
    return t


def test_fsdp_overlap_keys():
    for p in variants("training.fsdp_overlap", per_difficulty=12):
        g = p.given
        beta, C = CHIPS[g["hw"]]
        ag = _ring_all_gather(g["n"], 2 * g["P"], beta)
        comp = 2 * g["P"] * g["T"] / C
        level = p.id.split("/")[1]
        expect = {"easy": ag * 1e3, "medium": (ag - comp) * 1e3,
                  "hard": ag / (2 * g["P"] / C)}[level]  # T* where 2·P·T*/C equals the gather
        assert p.key.value == pytest.approx(expect, rel=1e-9), p.id


def test_nccl_busbw_keys():
    factor = {"all-reduce": lambda n: 2 * (n - 1) / n}
    for p in variants("measurements.nccl_busbw", per_difficulty=12):
        g = p.given
        f = factor.get(g["op"], lambda n: (n - 1) / n)(g["n"])
        if "algbw" in g:
            expect = g["algbw"] * f / g["link"] * 100
        else:
            expect = g["S"] / (g["t_us"] * 1e-6) * f / 1e9
        assert p.key.value == pytest.approx(expect, rel=1e-12), p.id


def _pipeline_idle_fraction(p: int, m: int) -> float:
    """GPipe-order simulation (forward 1 unit, backward 2): the share of stage-time the p stages idle."""
    f_end = [[0] * m for _ in range(p)]
    for st in range(p):
        t = 0
        for j in range(m):
            t = max(t, f_end[st - 1][j] if st else 0) + 1
            f_end[st][j] = t
    b_end = [[0] * m for _ in range(p)]
    for st in reversed(range(p)):
        t = f_end[st][m - 1]
        for j in range(m):
            t = max(t, b_end[st + 1][j] if st < p - 1 else 0) + 2
            b_end[st][j] = t
    step = max(b_end[0])
    return (step - 3 * m) / step


def test_grad_accum_and_mfu_keys():
    for p in variants("training.grad_accum_bubble", per_difficulty=8):
        g = p.given
        m = g["B"] // (g["b"] * g["d"])
        assert m == g["m"] and p.key.value == pytest.approx(_pipeline_idle_fraction(g["p"], m) * 100, rel=1e-12), p.id
    for p in variants("measurements.mfu_step", per_difficulty=8):
        g = p.given
        expect = 6 * g["N"] * g["tokens"] / (g["step"] * g["chips"] * CHIPS[g["hw"]][1]) * 100
        assert p.key.value == pytest.approx(expect, rel=1e-12), p.id


#: (element bits, block, scale bits) typed from the OCP MX v1.0 table and NVIDIA's NVFP4 description
BLOCKS = {"mxfp4": (4, 32, 8), "mxfp8-e4m3": (8, 32, 8), "nvfp4": (4, 16, 8)}


def test_block_bytes_and_smoothquant_keys():
    for p in variants("precision.block_bytes", per_difficulty=8):
        g = p.given
        eb, k, sb = BLOCKS[g["format"]]
        # hard gives the experts as layers × experts per layer × weights per expert (issue 39, round 3)
        n = g["N"] if "N" in g else g["layers"] * g["experts"] * g["per_expert"]
        blocks = -(-n // k)  # one scale per started block
        total = n * eb / 8 + blocks * sb / 8 + 2 * g["rest"]
        assert p.key.value == pytest.approx(total / (2**30 if g["unit"] == "GiB" else 1e9), rel=1e-12), p.id
    for p in variants("precision.smoothquant", per_difficulty=8):
        g = p.given
        x, w, a = np.array(g["x"], float), np.array(g["w"], float), g["alpha"]
        s = x**a / w ** (1 - a)
        X = np.diag(x)  # a batch whose row j reaches max|X_j| in channel j
        expect = s[0] if len(x) == 1 else np.abs(X / s).max()
        assert p.key.value == pytest.approx(expect, rel=1e-12), p.id


def _step_tv(down: list[float], up: list[float]) -> float:
    """Total variation between the sizes (log10 of the log step) of a slip made one way and the other,
    over 20 bins: 0 when the step's size never tells which way the slip went, 1 when it always does."""
    dn, u = np.log10(down), np.log10(up)
    edges = np.linspace(min(dn.min(), u.min()), max(dn.max(), u.max()) + 1e-9, 21)
    a, _ = np.histogram(dn, edges)
    b, _ = np.histogram(u, edges)
    return 0.5 * float(np.abs(a / len(dn) - b / len(u)).sum())


def test_block_bytes_hard_view_slips_do_not_tell_their_direction():
    """Issue 39, round 4: the hard MCQ crosses GB for GiB (× 2^30/10^9 either way) with the bf16 weights left out
    or stored in fp32 (∓ their bytes): each slip's step down, ln(k/low), and step up, ln(high/k), have sizes spread
    alike over the draws, so the step a test-wise student measures between two options does not say which way the
    slip went, nor where the key sits. The scales' slip (4 or 4.5 bits against 4.25) is left out of the view: its
    step down is always the larger and piles up at the scales' ceiling share of 1/17, so its size told the way."""
    assert set(FAMILIES["precision.block_bytes"].slips_in_view("hard")) == {"gb_for_gib", "bf16_left_out"}
    steps: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in
                                                         ("gb_for_gib", "bf16_left_out", "scales_forgotten")}
    for s in range(400):
        p = FAMILIES["precision.block_bytes"].generate(s, "hard")
        k, g = float(p.key.value), p.given
        n = g["layers"] * g["experts"] * g["per_expert"]
        # the bf16 weights are 1 % to 10 % of the checkpoint's bytes (gpt-oss-120b: 6.5 %), at least 0.2 billion
        assert 0.009 < 2 * g["rest"] / (n * 4.25 / 8 + 2 * g["rest"]) < 0.101 and g["rest"] >= 2e8, p.id
        for m in p.misconceptions:
            if m.id in steps:
                assert m.inverse, (p.id, m.id)
                other = m.inverse_value if m.inverse_value is not None else k * k / m.value
                lo, hi = sorted((m.value, other))
                assert lo < k < hi, (p.id, m.id)
                steps[m.id][0].append(math.log(k / lo))
                steps[m.id][1].append(math.log(hi / k))
    assert all(len(dn) == 400 for dn, _ in steps.values())
    assert _step_tv(*steps["gb_for_gib"]) < 0.05
    assert _step_tv(*steps["bf16_left_out"]) < 0.2
    assert _step_tv(*steps["scales_forgotten"]) > 0.5


def test_pinned_easy_variants():
    """Worked by hand. E4M3 of 3.2: binade [2, 4), spacing 2^(1−3) = 0.25, 3.2/0.25 = 12.8 → 13 → 3.25.
    int8 absmax of (−0.55, 0.54, 0.11, −0.26), element 2: 0.54·127/0.55 = 124.69 → 125 → 125·0.55/127 = 0.5413.
    Linear schedule, peak 3e-4, w = 1000, T = 20,000, t = 10,033: 3e-4·9967/19000 = 15.737 × 10⁻⁵.
    FSDP, MI300X, n = 16, P = 343.1 M: 15/16 × 686.2e6 B / 448e9 B/s = 0.9375 × 1.53170 ms = 1.436 ms.
    nccl-tests, all-reduce, n = 4, 33,554,432 B in 116.5 µs: 288.02 GB/s × 1.5 = 432.03 GB/s.
    Bubble, p = 30, m = 196: 29/(196 + 29) = 29/225 = 12.89 %. MFU, 7B on 1,024 H100s, 8,388,608 tokens in 0.67 s:
    6 × 7e9 × 8,388,608 / (0.67 × 1,024 × 989.5e12) = 51.90 %.
    MXFP4 of 40.3 billion weights: 40.3e9 × 4.25 / 8 = 21.409 GB. SmoothQuant, α = 0.5, 13 and 0.22: √13/√0.22 = 7.687."""
    assert easy("precision.nearest_value").key.value == 3.25
    assert round(easy("precision.quant_error").key.value, 4) == 0.5413
    assert round(easy("training.lr_schedule").key.value, 3) == 15.737
    assert round(easy("training.fsdp_overlap").key.value, 3) == 1.436
    assert round(easy("measurements.nccl_busbw").key.value, 2) == 432.03
    assert easy("training.grad_accum_bubble").key.value == pytest.approx(2900 / 225)
    assert round(easy("measurements.mfu_step").key.value, 2) == 51.90
    assert round(easy("precision.block_bytes").key.value, 2) == 21.41
    assert round(easy("precision.smoothquant").key.value, 3) == 7.687


def test_fsdp_overlap_easy_draws_spread():
    """Issue 39: easy's layer sizes cover 20 M to 2 B parameters (12·d² for d ≈ 1,300 to 13,000), not five clusters,
    on nine ring sizes, so that its MCQ's keys form no lattice whose ends a learned attacker reads."""
    gs = [FAMILIES["training.fsdp_overlap"].generate(s, "easy").given for s in range(200)]
    P = np.array([g["P"] for g in gs], dtype=float)
    assert P.min() >= 2e7 and P.max() <= 2e9 and P.max() / P.min() > 30
    assert len({g["n"] for g in gs}) >= 8
    assert len(set(P)) > 190


def test_lr_schedule_medium_slips_stay_between_floor_and_peak():
    """Issue 39: during the cosine decay the rate lies in [floor, peak], both printed; forgetting the ½ past the peak
    or decaying to 0 below the floor gave options no rate of the stated schedule can take, and a learned attacker
    read the key as never above the printed peak. Every wrong value offered, made or inverse, now lies inside."""
    for s in range(200):
        p = FAMILIES["training.lr_schedule"].generate(s, "medium")
        g = p.given
        lo, hi = g["min_lr"] * 1e5, g["peak"] * 1e5
        assert lo <= p.key.value <= hi, p.id
        for m in p.misconceptions:
            for v in (m.value, m.inverse_value):
                if v is not None:
                    assert lo - 1e-9 <= v <= hi + 1e-9, (p.id, m.id, v, lo, hi)


def test_grad_accum_bubble_keys_rarely_repeat():
    """Issue 39: the bubble (p − 1)/(m + p − 1) depends on m/(p − 1) alone; with few stage counts, micro-batches to
    128 and fractions 1/k (any m a multiple of p − 1) about 350 of 500 medium draws had distinct keys, and a student
    who remembered earlier keys beat chance by 6 points on fresh draws. Round 3: with two decimals of a percent and
    one bubble from several (p, m) pairs, still 422-438 distinct keys as the student reads them (5.5 points on fresh
    draws); each bubble is now a reduced fraction of its own (p, m), asked to three decimals."""
    keys, fr = set(), []
    for s in range(500):
        p = FAMILIES["training.grad_accum_bubble"].generate(s, "medium")
        g = p.given
        fr.append((g["p"] - 1, g["m"]))
        keys.add(round(p.key.value, p.key.decimals))
    assert all(math.gcd(a, m) == 1 and a > 1 for a, m in fr)
    assert len(keys) >= 450, len(keys)


def test_block_bytes_hard_options_do_not_end_in_round_digits():
    """Issue 39, round 3: with the expert weights in tenths of a billion, the value of "forgot the scales" and
    "divided by 10^9" together (N/2 + 2·rest, in GB) always ended in 0 or 5 at two decimals: that option, and the key
    diagonally across the cross from it, were told by their last digit. Now as often as any other option's (1 in 5
    by chance). Round 4: the view crosses GB for GiB with the bf16 weights left out or in fp32 (the experts' bytes
    alone in GB, together): every option of two slips is checked."""
    from question_bank import numeric_mcq as nm

    view = nm.mcq_view(FAMILIES["precision.block_bytes"])
    both, round_ = 0, 0
    for seed in range(300):
        p = view.generate(seed, "hard")
        for text, slips in zip(p.options_text, p.given["option_slips"], strict=True):
            if len(slips) == 2:
                both += 1
                round_ += text.split()[0][-1] in "05"
    assert both >= 30
    assert round_ / both < 0.35, (round_, both)


def test_grad_accum_bubble_mirrored_slips_move_the_key_by_factors_that_vary():
    """Issue 39, round 3: a slip the MCQ view may make either way (one with a named inverse) and that moves the key by
    a fixed factor ("counted the fill only", × 1/2, mirrored × 2) makes two sides of the options' cross alike in every
    draw, and the key's corner readable from the options' sizes. Every mirrored slip's factor varies with the draw."""
    factors: dict[str, set[float]] = {}
    for s in range(100):
        p = FAMILIES["training.grad_accum_bubble"].generate(s, "medium")
        for m in p.misconceptions:
            if m.inverse:
                factors.setdefault(m.id, set()).add(round(float(m.value) / float(p.key.value), 6))
    assert len(factors) >= 2
    assert all(len(f) > 10 for f in factors.values()), {k: sorted(f)[:3] for k, f in factors.items()}
