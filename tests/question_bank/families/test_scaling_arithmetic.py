"""The issue-36 families (question_bank.families.scaling_arithmetic): every key recomputed a
second way from the problem's own ``given`` (the texts' formulas written out here, not the
registry), and one hand-worked draw per family."""

from __future__ import annotations

import pytest

from question_bank.family import all_families

FAMS = all_families()
LEVELS = ("easy", "medium", "hard")


def draws(fid, n=12):
    return [(lv, FAMS[fid].generate(s, lv)) for lv in LEVELS for s in range(n)]


def test_dp_batch_keys_by_hand():
    for lv, p in draws("sharding.dp_batch"):
        g = p.given
        alpha = g["peak"] / (2 * g["link"])
        want = {"easy": alpha, "medium": g.get("chips", 0) * alpha / g.get("axes", 1) / 1e6,
                "hard": 4 * alpha**2 / (2 * g.get("d_ff", 1))}[lv]
        assert p.key.value == pytest.approx(want, rel=1e-9), p.id


def test_torus_keys_by_hand():
    for _, p in draws("topology.torus_bisection"):
        g = p.given
        n, kmax = 1, max(g["shape"])
        for k in g["shape"]:
            n *= k
        cut = n // kmax * (2 if g["wraparound"] == "yes" else 1)
        assert p.key.value == pytest.approx(cut * g["link"] / 1000, rel=1e-9), p.id


def test_gpu_peak_keys_by_hand():
    for lv, p in draws("gpu.peak_from_parts"):
        g = p.given
        per_cycle = g["sms"] * 4 * g["fma"] * 2
        want = per_cycle * g["ghz"] / 1000 if lv != "hard" else g["sparse"] / 2 * 1e3 / per_cycle
        assert p.key.value == pytest.approx(want, rel=1e-9), p.id


def test_elementwise_keys_by_hand():
    bw = {"h100-sxm": 3350, "a100-80gb": 2039, "h200": 4800, "b200": 8000, "mi300x": 5300, "tpu-v5p": 2765}
    for lv, p in draws("roofline.elementwise"):
        g = p.given
        b = 2 if g["dtype"] == "bf16" else 4
        tensors = {"easy": 2, "medium": 3, "hard": 2 * (g["k"] - 1)}[lv]
        assert p.key.value == pytest.approx(g["n"] * tensors * b / (bw[g["chip"]] * 1e9) * 1e6, rel=1e-9), p.id


def test_recipe_keys_by_hand():
    per = {"mixed-fp32-master": 16, "bf16-adam": 10, "adam-8bit": 10, "sgd-momentum": 12, "fp32-adam": 16}
    for _, p in draws("memory.recipe"):
        g = p.given
        assert p.key.value == pytest.approx(g["params"] * per[g["recipe"]] / g["chips"] / 1e9, rel=1e-9), p.id


def test_decode_batch_keys_by_hand():
    nbytes = {"bf16": 2, "int8": 1, "fp8": 1, "int4": 0.5}
    for _, p in draws("inference.decode_batch"):
        g = p.given
        want = g["peak_tflops"] * 1e12 / (g["hbm_gbs"] * 1e9) * nbytes[g["weight_dtype"]] / 2 * g["experts"] / g["top_k"]
        assert p.key.value == pytest.approx(want, rel=1e-9), p.id


def test_decode_latency_keys_by_hand():
    """T = max((N·w + B·S·X)/(n·W), 2·N_active·B/(n·C)) written out; easy: the latency in ms without the cache;
    medium: B/T; hard: the B where the two times meet, N·w/W ÷ (2·N_active/C − S·X/W)."""
    for lv, p in draws("inference.decode_latency"):
        g = p.given
        C, W, n = g["peak_tflops"] * 1e12, g["hbm_gbs"] * 1e9, g["chips"]
        w, N, Na, B = {"bf16": 2, "int8": 1}[g["weight_dtype"]], g["params"], g["active_params"], g["batch"]
        SX = g["context"] * g["kv_kib"] * 1024
        t = max((N * w + B * SX) / (n * W), 2 * Na * B / (n * C))
        want = {"easy": t * 1e3, "medium": B / t, "hard": N * w / W / (2 * Na / C - SX / W)}[lv]
        assert p.key.value == pytest.approx(want, rel=1e-9), p.id
        if lv == "easy":
            assert SX == 0 and N == Na
        if lv == "hard":
            assert Na < N


def test_decode_latency_pinned():
    """Part 7's LLaMA 2-13B row as a medium draw would pose it: 8 v5e chips (197 TFLOP/s, 820 GB/s), 13e9 bf16 params,
    8 sequences of 8,192 tokens at 800 KiB a token: (26e9 + 8·8192·819,200)/(8·8.2e11) = 12.15 ms, 658.6 tokens/s."""
    from solver.registry import get_formula

    r = get_formula("decode_latency").run(dict(params=13e9, batch=8, context=8192, kv_per_token=800 * 1024, chips=8,
                                               peak=197e12, bandwidth=820e9), {})
    assert float(r.breakdown["tokens_per_second"]) == pytest.approx(8 / ((26e9 + 8 * 8192 * 819200) / 6.56e12))


def test_pinned_draws():
    # Part 5's own figures as a draw would state them: v5p 459 TFLOP/s, 90 GB/s → 2,550 tokens per chip
    from solver.registry import get_formula

    assert get_formula("dp_batch").run({"peak": 459e12, "link": 90e9}, {}).answer == 2550
    # every family's worked solution ends with its answer, and each slip is rejected (audit in test_every_family)
    for fid in ("sharding.dp_batch", "topology.torus_bisection", "gpu.peak_from_parts", "roofline.elementwise",
                "memory.recipe", "inference.decode_batch", "inference.decode_latency"):
        p = FAMS[fid].generate(0, "medium")
        assert "Answer:" in p.solution_text and p.misconceptions, fid
