"""The sharding and inference thresholds (solver.systems.sharding) checked a second way: each
against the step times of Austin et al., "How to Scale Your Model" (2025), Parts 3, 5 and 7,
written out here and solved numerically (bisection, a grid over the FSDP degree), against the
project's collectives, and against the text's own printed figures (v5p: C = 4.59e14 FLOP/s,
one ICI link 9e10 B/s each way, W_ici = 1.8e11 bidirectional; v5e: 1.97e14 FLOP/s, 8.2e11 B/s)."""

from __future__ import annotations

import math

import pytest

from solver.registry import get_formula
from solver.registry.calc import Evaluator

C5P, BETA5P = 4.59e14, 9e10
W5P = 2 * BETA5P


def calc(expr: str) -> float:
    ev = Evaluator()
    return float(ev.quantity(ev.run(expr)).magnitude)


def run(name, **kw):
    conv = {c.name: kw.pop(c.name) for c in get_formula(name).conventions if c.name in kw}
    return get_formula(name).run(kw, conv)


def bisect(f, lo, hi, n=200):
    """The x in [lo, hi] where f turns from False to True."""
    for _ in range(n):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if f(mid) else (mid, hi)
    return hi


# ---- Part 5: data parallelism and FSDP -------------------------------------------------


@pytest.mark.parametrize("strategy", ["dp", "fsdp"])
@pytest.mark.parametrize("axes", [1, 2, 3])
def test_dp_threshold_is_where_the_step_times_cross(strategy, axes):
    D, F, X = 8192, 28672, 256
    W = W5P * axes

    def compute_bound(B):  # the text's per-layer times, the backward pass (DP) or forward + backward (FSDP)
        t_math = (2 * 2 * 2 + 2 * 2 * (strategy == "fsdp")) * B * D * F / (X * C5P)
        t_comm = (2 * 2 * 2 + 2 * 2 * (strategy == "fsdp")) * D * F / W
        return t_math >= t_comm

    crossing = bisect(compute_bound, 1, 1e9) / X
    got = run("dp_batch", peak=C5P, link=BETA5P, axes=axes, strategy=strategy).answer
    assert float(got) == pytest.approx(crossing, rel=1e-9)


def test_dp_printed_figures():
    # "our batch size per chip must be at least 2,550"; "BS=850 per TPU or 7.6M tokens per batch per pod (of 8960)"
    assert calc("dp_batch(peak=4.59e14 FLOP/s, link=9e10 B/s)") == 2550
    assert calc("dp_batch(peak=4.59e14 FLOP/s, link=9e10 B/s, axes=3)") == 850
    assert calc("dp_batch(peak=4.59e14 FLOP/s, link=9e10 B/s, axes=3, chips=8960).global_batch") == 7_616_000
    # "split a batch of 16M tokens over roughly 16e6 / (2550 / 3) = 18,823 chips"
    assert calc("dp_batch(peak=4.59e14 FLOP/s, link=9e10 B/s, axes=3, batch=16e6).max_chips") == \
        pytest.approx(18823.5, abs=0.1)
    # a one-way ring halves W: the threshold doubles
    assert calc("dp_batch(peak=4.59e14 FLOP/s, link=9e10 B/s, ring=unidirectional)") == 5100


def test_dp_from_a_preset_uses_its_link_figure():
    # the tpu-v5p preset's ICI port is 100 GB/s each way (1,200 GB/s per chip over 6 ports, bidirectional), not the
    # text's 90 GB/s: 4.59e14 / 2e11
    assert calc("dp_batch(chip=tpu-v5p)") == pytest.approx(2295)


# ---- Part 5: tensor parallelism -------------------------------------------------------------


@pytest.mark.parametrize("F,axes", [(28672, 1), (32768, 3), (13824, 2)])
def test_tp_max_is_where_the_step_times_cross(F, axes):
    B, D = 1e6, 8192

    def comm_bound(Y):
        return 2 * 2 * B * D / (W5P * axes) > 4 * B * D * F / (Y * C5P)

    crossing = bisect(comm_bound, 1, 1e6)
    assert float(run("tp_max", d_ff=F, peak=C5P, link=BETA5P, axes=axes).answer) == pytest.approx(crossing, rel=1e-9)


def test_tp_printed_figures():
    # "The required F for 8 way model sharding is 20k": 8 · 2550 = 20,400
    assert calc("8 * tp_max(1, peak=4.59e14 FLOP/s, link=9e10 B/s).f_needed_per_way") == 20400
    # LLaMA 3-70B, F ≈ 30,000: 8-way fine, 16-way comms-bound
    assert 8 < calc("tp_max(30000, peak=4.59e14 FLOP/s, link=9e10 B/s)") < 16
    # Gemma 7B, F ≈ 50k: "we become communication bound with 19-way model parallelism"
    assert calc("tp_max(50000, peak=4.59e14 FLOP/s, link=9e10 B/s).whole") == 19
    assert calc("tp_max(20400, peak=4.59e14 FLOP/s, link=9e10 B/s).whole") == 7  # exactly 8 is the boundary


# ---- Part 5: FSDP with tensor parallelism -------------------------------------------------


def _t_comms(B, F, N, X, mx, my, alpha):
    """The text's T_comms in units of 4D/W: F/(Y·M_X) + B/(X·M_Y), Y = N/X; T_math = B·F/(N·α)."""
    return F * X / (N * mx) + B / (X * my)


@pytest.mark.parametrize("B,F,N,mx,my", [(48000, 32768, 64, 2, 1), (3e6, 13824, 4096, 2, 1), (1e6, 8192, 512, 1, 2)])
def test_fsdp_opt_minimises_the_comms_on_a_grid(B, F, N, mx, my):
    grid = [1 + i * (N - 1) / 200000 for i in range(200001)]
    best = min(grid, key=lambda X: _t_comms(B, F, N, X, mx, my, 1))
    got = run("fsdp_opt", batch=B, d_ff=F, chips=N, mx=mx, my=my)
    assert got.answer == pytest.approx(best, abs=(N - 1) / 200000)
    assert got.breakdown["y"] == pytest.approx(N / got.answer)


@pytest.mark.parametrize("F,mx,my", [(32768, 2, 1), (13824, 2, 1), (30000, 1, 1)])
def test_fsdp_tp_threshold_is_the_least_batch_some_split_keeps_compute_bound(F, mx, my):
    alpha, N = 2550, 4096

    def compute_bound(b):  # b = B/N; is there an X with T_comms ≤ T_math?
        B = b * N
        X = math.sqrt(B / F * mx / my * N)
        return _t_comms(B, F, N, X, mx, my, alpha) <= B * F / (N * alpha)

    crossing = bisect(compute_bound, 1, 1e7)
    got = run("fsdp_tp_batch", d_ff=F, peak=C5P, link=BETA5P, mx=mx, my=my).answer
    assert float(got) == pytest.approx(crossing, rel=1e-9)


def test_fsdp_tp_printed_figures():
    # "plug in F=32,768, α=2550, M_X M_Y=2 ... gives roughly B/N > 400"
    assert calc("fsdp_tp_batch(32768, peak=4.59e14 FLOP/s, link=9e10 B/s)") == pytest.approx(396.9, abs=0.05)
    # Problem 3 (LLaMA-2 13B, F = 13,824): "2 · 2550² / F = 940"
    assert math.floor(calc("fsdp_tp_batch(13824, peak=4.59e14 FLOP/s, link=9e10 B/s)")) == 940
    # "N = 64, B = 48,000, F = 32,768 gives roughly X ≈ 13.9": 13.69 (13.86 with F = 32,000; see worked_checks)
    assert calc("fsdp_opt(48000, 32768, 64)") == pytest.approx(13.693, abs=1e-3)


# ---- Part 7: inference ----------------------------------------------------------------------


def test_decode_batch_printed_figures():
    # "1.97E+14 / 8.20E+11 = 240"; int8 weights, bf16 compute: 120; int8 × int8 at 394 TOP/s: back to 240
    v5e = "peak=1.97e14 FLOP/s, bandwidth=8.2e11 B/s"
    assert calc(f"decode_batch({v5e})") == pytest.approx(240.24, abs=0.01)
    assert calc(f"decode_batch({v5e}, weight_dtype=int8)") == pytest.approx(120.12, abs=0.01)
    assert calc("decode_batch(peak=3.94e14 FLOP/s, bandwidth=8.2e11 B/s, weight_dtype=int8)") == \
        pytest.approx(240.24, abs=0.01)


def test_decode_batch_moe_is_where_each_experts_matmul_turns_compute_bound():
    # E experts, top-k: each expert's matmul sees B·k/E tokens and reads its D·F weights; the roofline of
    # solver.systems.roofline.matmul with huge D = F (activation bytes negligible) crosses at B·k/E = C/W · b/2
    from solver.systems.chips import Chip
    from solver.systems.roofline import matmul

    E, k, C, W = 8, 2, 9.895e14, 3.35e12
    chip = Chip(peak_flops=C, bandwidth=W)

    def compute_bound(B):
        tokens = max(1, round(B * k / E))
        r = matmul(tokens, 2**22, 2**22, dtype="bf16", chip=chip)
        return r.breakdown["flops"] / C >= r.breakdown["bytes"] / W

    crossing = bisect(compute_bound, 1, 1e6)
    got = calc(f"decode_batch(peak={C} FLOP/s, bandwidth={W} B/s, experts={E}, top_k={k})")
    assert got == pytest.approx(crossing, rel=E / k / crossing + 1e-3)


def test_attention_intensity_by_counting():
    # GQA: per cached position and layer, QKᵀ and A·V cost 2·2·N·d_h FLOPs; K and V are 2·K·d_h elements
    N, K, dh, b = 32, 8, 128, 2
    assert calc(f"decode_batch(chip=h100, heads={N}, kv_heads={K}).attention_intensity") == \
        pytest.approx(4 * N * dh / (2 * K * dh * b))
    # MLA (DeepSeek-V3: 128 heads, d_c = 512, d_r = 64), absorbed: scores 2·N·(d_c + d_r), values 2·N·d_c FLOPs
    # per cached position over (d_c + d_r) bf16 elements
    flops, cached = 2 * 128 * (512 + 64) + 2 * 128 * 512, (512 + 64) * 2
    assert calc("decode_batch(chip=h100, heads=128, latent=512, rope_dim=64).attention_intensity") == \
        pytest.approx(flops / cached)
    # ~242 FLOP/B: sixty times GQA's 4, yet still under an H100's 295 (C/W_hbm), so still memory-bound there
    assert 4 < flops / cached < calc("decode_batch(chip=h100).chip_intensity")


def test_kv_budget_by_hand():
    # Part 7 worked problems: 18.4e9 int8 weights on a v5e 4x4 (16 × 16 GB); int8 KV 2·L·K·H = 2·64·8·256 bytes/token
    per_token = 2 * 64 * 8 * 256
    free = 16 * 16e9 - 18.4e9
    assert calc(f"kv_budget(18.4 GB, {per_token} B, hbm=16 GB, chips=16)") == pytest.approx(free)
    assert calc(f"kv_budget(18.4 GB, {per_token} B, hbm=16 GB, chips=16, context=8192).max_batch") == \
        math.floor(free / (per_token * 8192))
    assert calc(f"kv_budget(18.4 GB, {per_token} B, hbm=16 GB, chips=16, batch=32).max_context") == \
        math.floor(free / (per_token * 32))
    assert calc(f"kv_budget(300 GB, {per_token} B, hbm=16 GB, chips=16).tokens") == 0


# ---- Part 3: sharded matmuls ------------------------------------------------------------------


@pytest.mark.parametrize("case,op,size", [("one", "all_gather", "I*J"), ("both", "all_reduce", "I*K"),
                                          ("both_scatter", "reduce_scatter", "I*K")])
def test_sharded_matmul_time_is_the_collectives(case, op, size):
    I, J, K, beta = 1024, 4096, 8192, 4.5e10
    V = eval(size) * 2
    assert calc(f"sharded_matmul({I}, {J}, {K}, case={case}, link={beta} B/s)") == V
    assert calc(f"sharded_matmul({I}, {J}, {K}, case={case}, link={beta} B/s).time") == pytest.approx(
        calc(f"{op}({V} B, ranks=8, link={beta} B/s, ring=bidirectional, factor=asymptotic).time"), rel=1e-12)


def test_sharded_matmul_cases():
    assert calc("sharded_matmul(1024, 4096, 8192, case=none, link=1e11 B/s).time") == 0
    # Case 4 gathers the smaller input: A[I_X, J] is I·J, B[J, K_X] is J·K
    assert calc("sharded_matmul(1024, 4096, 8192, case=same_axis)") == 1024 * 4096 * 2
    assert calc("sharded_matmul(8192, 4096, 1024, case=same_axis)") == 1024 * 4096 * 2


def test_sharded_matmul_printed_figures():
    # Part 3, Question 2, TPU v4p 4x4x4 (9e10 B/s bidirectional): AllGather_X([B_X, D_Y]), B = 1024, D = 4096:
    # "2BD / (9e10 · Y) = 23 µs" — the gathered array is [B, D_Y]: I = 1024, J = 4096 / 4
    t = calc("sharded_matmul(1024, 1024, 1, case=one, link=4.5e10 B/s).time")
    assert t == pytest.approx(23.3e-6, abs=0.05e-6)
    # AllGather_XY: "2BD / (2 · 9e10) = 46 µs" (46.6: the text truncates)
    assert calc("sharded_matmul(1024, 4096, 1, case=one, link=4.5e10 B/s, axes=2).time") == \
        pytest.approx(46.6e-6, abs=0.05e-6)


# ---- Part 12: GPUs (W = one GPU's or one node's egress, one way) ----------------------------------


def test_gpu_dp_printed_figures():
    h100 = "peak=990e12 FLOP/s, ring=unidirectional"
    assert calc(f"dp_batch({h100}, link=450e9 B/s)") == 2200  # "within a node ... 990e12 / 450e9 = 2200"
    assert calc(f"dp_batch({h100}, link=400e9 B/s)") == 2475  # "within an SU or at the spine level ... 2475"
    assert calc(f"dp_batch({h100}, link=400e9 B/s, experts=128, top_k=4)") == 79200  # "32 * 2475 = 79,200"
    assert calc(f"dp_batch({h100}, link=400e9 B/s, ring_ranks=2)") == 1237.5  # "B / N > 1237"


@pytest.mark.parametrize("E,k", [(8, 2), (128, 4), (256, 8)])
def test_moe_dp_threshold_is_where_the_step_times_cross(E, k):
    D, F, X, C, W = 4096, 14336, 64, 990e12, 400e9

    def compute_bound(B):  # the text's MoE step: k experts' FLOPs per token, E experts' gradients
        return 2 * 2 * 2 * k * B * D * F / (X * C) >= 2 * 2 * 2 * E * D * F / W

    crossing = bisect(compute_bound, 1, 1e12) / X
    got = run("dp_batch", peak=C, link=W, experts=E, top_k=k, ring="unidirectional").answer
    assert float(got) == pytest.approx(crossing, rel=1e-9)


@pytest.mark.parametrize("Z,k", [(16, 8), (64, 8), (64, 2), (256, 1), (1024, 4)])
def test_ep_d_ff_is_where_the_step_times_cross(Z, k):
    B, D, C, W = 1e6, 7168, 990e12, 400e9

    def compute_bound(F):  # Part 12's T_math and T_comms, written out
        t_math = 4 * B * k * D * F / (Z * C)
        t_comm = 4 * B * D * (Z - 8) / (W * Z) * min(8 * k / Z, 1)
        return t_math >= t_comm

    crossing = bisect(compute_bound, 0, 1e7)
    assert float(run("ep_d_ff", ep=Z, top_k=k, peak=C, link=W).answer) == pytest.approx(crossing, rel=1e-9)


def test_ep_limits_the_text_states():
    # "Z >> k and F > 8α"; "k > Z/8 with F > α (Z − 8)/k"; inside a node nothing leaves it
    alpha = 990e12 / 400e9
    assert calc("ep_d_ff(1000000, 1, peak=990e12 FLOP/s, link=400e9 B/s)") == pytest.approx(8 * alpha, rel=1e-4)
    assert calc("ep_d_ff(32, 8, peak=990e12 FLOP/s, link=400e9 B/s)") == pytest.approx(alpha * 24 / 8)
    assert calc("ep_d_ff(8, 2, peak=990e12 FLOP/s, link=400e9 B/s)") == 0


# ---- pipeline: the microbatches that hide the bubble, against the simulated schedule -----------------------


@pytest.mark.parametrize("p,f,schedule,v", [(4, 0.2, "1f1b", 1), (8, 0.05, "1f1b", 1), (4, 0.1, "gpipe", 1),
                                            (6, 0.25, "1f1b", 1), (4, 0.1, "interleaved", 2),
                                            (8, 0.05, "interleaved", 4)])
def test_pipeline_batch_is_the_least_m_the_simulation_keeps_under_f(p, f, schedule, v):
    from fractions import Fraction

    from solver.systems.pipeline_schedule import pipeline_timeline

    m = run("pipeline_batch", stages=p, bubble=f, chunks=v, schedule=schedule).answer
    step = p if schedule == "interleaved" else 1
    assert pipeline_timeline(p, m, schedule=schedule, chunks=v).idle_fraction <= Fraction(repr(f))
    if m - step >= 1:
        assert pipeline_timeline(p, m - step, schedule=schedule, chunks=v).idle_fraction > Fraction(repr(f))


# ---- decode: latency against throughput at a batch ------------------------------------------------------

def _step_by_hand(N, Na, B, S, X, w, C, W, n=1, kv=True, split=False):
    """The step written out from Part 7: weights N·w and (kv) each sequence's S·X cache read, 2·N_active FLOPs
    per token; 'max' overlaps everything, 'split' adds the cache read to max(weight read, FLOPs)."""
    t_w, t_kv, t_c = N * w / (n * W), (B * S * X / (n * W) if kv else 0), 2 * Na * B / (n * C)
    return t_kv + max(t_w, t_c) if split else max(t_w + t_kv, t_c)


def test_decode_latency_llama2_13b_on_8_v5e_by_hand():
    """Part 7's LLaMA 2-13B table: 13e9 bf16 params, X = 2·2·128·40·40 = 819,200 B a token, 8,192 cached tokens,
    8 v5e chips (8.2e11 B/s, 1.97e14 FLOP/s each): batch 1 reads 26e9 + 6.71e9 bytes at 6.56e12 B/s."""
    X = 2 * 2 * 128 * 40 * 40
    for B in (1, 8, 16, 32, 64, 240):
        want = (26e9 + B * 8192 * X) / 6.56e12
        got = calc(f"decode_latency(13e9, {B}, context=8192, kv_per_token={X} B, chips=8, peak=1.97e14 FLOP/s, "
                   "bandwidth=8.2e11 B/s)")
        assert got == pytest.approx(want, rel=1e-12)
        assert calc(f"decode_latency(13e9, {B}, context=8192, kv_per_token={X} B, chips=8, peak=1.97e14 FLOP/s, "
                    "bandwidth=8.2e11 B/s).throughput") == pytest.approx(B / want, rel=1e-12)
    # 1.97e14 · 2 / (2 · 8.2e11) = 240.24 without the cache (the text's B_crit); with an 8k cache never compute-bound
    assert calc("decode_latency(13e9, 1, peak=1.97e14 FLOP/s, bandwidth=8.2e11 B/s).critical_batch") == \
        pytest.approx(1.97e14 / 8.2e11, rel=1e-12)
    assert run("decode_latency", params=13e9, batch=1, context=8192, kv_per_token=X, peak=1.97e14,
               bandwidth=8.2e11).breakdown.get("critical_batch") is None


def test_decode_latency_pop_quiz_both_step_models():
    """Part 7's pop quiz: 30e9 int8 params, 100 kB a token at 8,192 tokens, 16 v5e chips (8.1e11 B/s, 1.97e14)."""
    args = "context=8192, kv_per_token=100e3 B, chips=16, peak=1.97e14 FLOP/s, bandwidth=8.1e11 B/s, weight_dtype=int8"
    W16, C16 = 16 * 8.1e11, 16 * 1.97e14
    assert calc(f"decode_latency(30e9, 4, {args})") == pytest.approx((4 * 819.2e6 + 30e9) / W16)
    split = 256 * 819.2e6 / W16 + 2 * 256 * 30e9 / C16  # the text's 21 ms: compute-bound MLP plus the cache read
    assert calc(f"decode_latency(30e9, 256, {args}, step=kv_plus_max)") == pytest.approx(split)
    assert calc(f"decode_latency(30e9, 256, {args})") == pytest.approx((256 * 819.2e6 + 30e9) / W16)


@pytest.mark.parametrize("kv_model", [("counted", "total"), ("counted", "kv-plus-max")])
def test_decode_latency_matches_the_decode_command(kv_model):
    """The decode formula (solver.systems.inference.decode_step) is the second way for the dense case."""
    step = "max" if kv_model[1] == "total" else "kv-plus-max"
    for B, S, X in ((1, 4096, 524288), (64, 8192, 131072), (512, 1, 0), (2048, 32768, 4096)):
        a = calc(f"decode_latency(7e9, {B}, context={S}, kv_per_token={X} B, chip=h100, chips=2, "
                 f"step={step.replace('-', '_')})")
        b = calc(f"decode(7e9, {B}, {S}, {X} B, chip=h100, chips=2, model=\"{kv_model[1]}\")")
        assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("E,k", [(1, 1), (8, 2), (64, 6), (256, 8)])
def test_decode_latency_without_the_cache_turns_where_decode_batch_says(E, k):
    """kv=ignored, N/N_active = E/k (the weights all read, k of E experts' FLOPs): B* is decode_batch's B_crit."""
    Na = 1e9 * k
    got = calc(f"decode_latency({1e9 * E}, 1, active_params={Na}, chip=h100, kv=ignored).critical_batch")
    assert got == pytest.approx(calc(f"decode_batch(chip=h100, experts={E}, top_k={k})"), rel=1e-12)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(N=st.integers(10**6, 10**12), frac=st.fractions(0, 1).filter(lambda f: f > 0), S=st.integers(0, 65536),
       X=st.integers(0, 2**19), n=st.integers(1, 16), C=st.integers(10**13, 10**16), W=st.integers(10**11, 10**13),
       B=st.integers(1, 4096), step=st.sampled_from(["max", "kv-plus-max"]))
def test_decode_latency_hypo(N, frac, S, X, n, C, W, B, step):
    """Throughput never falls as the batch grows; the step is the hand-written one; without the cache the latency
    is flat up to B* and 2·N_active·B/(n·C), a line through 0, above it; at B* the two times meet."""
    Na = max(1, int(N * frac))
    kw = dict(params=N, active_params=Na, context=S, kv_per_token=X, chips=n, peak=C, bandwidth=W, step=step)
    r1, r2 = run("decode_latency", batch=B, **kw), run("decode_latency", batch=B + 1, **kw)
    assert float(r1.answer) == pytest.approx(_step_by_hand(N, Na, B, S, X, 2, C, W, n, split=step != "max"), rel=1e-9)
    assert r2.breakdown["tokens_per_second"] >= r1.breakdown["tokens_per_second"] * (1 - 1e-12)
    assert r1.breakdown["tokens_per_second"] <= r1.breakdown["max_throughput"] * (1 + 1e-12)
    flat = run("decode_latency", batch=1, **{**kw, "step": "max"}, kv="ignored")
    bstar = float(flat.breakdown["critical_batch"])
    t = float(run("decode_latency", batch=B, **{**kw, "step": "max"}, kv="ignored").answer)
    if B <= bstar:
        assert t == pytest.approx(float(flat.answer), rel=1e-12)
    else:
        assert t == pytest.approx(2 * Na * B / (n * C), rel=1e-12)
    crit = run("decode_latency", batch=B, **kw).breakdown.get("critical_batch")
    if crit is not None and step == "max":  # T_mem and T_math meet at B* (the line through it)
        b = float(crit)
        assert (N * 2 + b * S * X) / (n * W) == pytest.approx(2 * Na * b / (n * C), rel=1e-9)


# ---- inference: the 2D weight-stationary layout (Part 7, Question 7 and Appendix B) ---------------------------


@pytest.mark.parametrize("B,D,F,N,X", [(256, 8192, 32768, 128, 4), (32, 4096, 14336, 64, 4), (1, 1024, 4096, 64, 8),
                                       (512, 12288, 49152, 256, 16)])
def test_weight_stationary_2d_is_its_three_collectives(B, D, F, N, X):
    """The algorithm's collectives, each timed by solver.systems.collectives (bidirectional ring, (n−1)/n dropped,
    a collective over k axes given k links; rings of 3 or more, as a ring of 2 has one link):
    AllGather_YZ of In[B, D_X], AllReduce_X of Tmp[B, F_YZ],
    ReduceScatter_YZ back to Out[B, D_XYZ]; and the 1D layout's all-gather and reduce-scatter over all 3 axes."""
    from solver.systems.collectives import collective

    beta, YZ = 4.5e10, N // X

    def t(op, size, ranks, axes):
        return collective(op, size, ranks, beta * axes, ring="bidirectional", asymptotic=True).answer

    two_d = t("all-gather", 2 * B * D / X, YZ, 2) + t("all-reduce", 2 * B * F / YZ, X, 1) + \
        t("reduce-scatter", 2 * B * D / X, YZ, 2)
    one_d = t("all-gather", 2 * B * D, N, 3) + t("reduce-scatter", 2 * B * D, N, 3)
    r = run("weight_stationary", batch=B, d_model=D, d_ff=F, chips=N, x=X, link=beta)
    assert float(r.breakdown["time_2d_s"]) == pytest.approx(float(two_d), rel=1e-12)
    assert float(r.breakdown["time_1d_s"]) == pytest.approx(float(one_d), rel=1e-12)


@pytest.mark.parametrize("D,F,N", [(8192, 32768, 128), (4096, 14336, 512), (1024, 4096, 72), (5120, 13824, 256)])
def test_weight_stationary_best_x_minimises_and_the_text_closed_form(D, F, N):
    """X_opt beats every X on a fine grid; at F = 4D the text's T = √128·B·D/(√N·W_ici)."""
    B, beta = 128, 4.5e10
    r = run("weight_stationary", batch=B, d_model=D, d_ff=F, chips=N, link=beta)
    best = float(r.breakdown["time_2d_opt_s"])
    for i in range(1, 400):
        X = 1 + (N - 1) * i / 400
        assert float(run("weight_stationary", batch=B, d_model=D, d_ff=F, chips=N, x=X, link=beta).answer) >= \
            best * (1 - 1e-12)
    if F == 4 * D:
        assert best == pytest.approx(math.sqrt(128) * B * D / (math.sqrt(N) * 2 * beta), rel=1e-12)
        assert float(r.breakdown["x_opt"]) == pytest.approx(math.sqrt(N / 8), rel=1e-12)


def test_weight_stationary_crossover_is_where_the_layouts_tie():
    """18·F/D chips (the text's 'N > 32·(F/D)·(3/4)²'): 72 at F = 4D, where 1D and the best 2D tie."""
    D, F = 1024, 4096
    assert calc(f"weight_stationary(64, {D}, {F}, 8).crossover_chips") == 72
    for N, sign in ((71, -1), (72, 0), (73, 1)):
        r = run("weight_stationary", batch=64, d_model=D, d_ff=F, chips=N, link=4.5e10)
        diff = float(r.breakdown["time_1d_s"]) - float(r.breakdown["time_2d_opt_s"])
        assert (diff == pytest.approx(0, abs=1e-18)) if sign == 0 else (diff * sign > 0)


@pytest.mark.parametrize("model,X", [("llama2-7b", 2 * 32 * 32 * 128 * 2),  # MHA: 2·L·K·d_h·bytes, K = 32
                                     ("mistral-7b", 2 * 32 * 8 * 128 * 2),  # GQA: 8 KV heads
                                     ("deepseek-v2-lite", 27 * (512 + 64) * 2)])  # MLA: L·(d_c + d_r)·bytes
def test_decode_latency_from_a_model_reads_its_cache_by_hand(model, X):
    """With a model the cache a token adds is the hand formula of its attention (a short context, so no window
    applies), and the step equals the one given those figures by hand."""
    r = run("decode_latency", model=model, batch=16, context=2048, peak=989.5e12, bandwidth=3.35e12)
    assert r.breakdown["kv_bytes"] == 16 * 2048 * X
    by_hand = run("decode_latency", params=float(r.breakdown["weight_bytes"]) / 2,
                  active_params=float(r.breakdown["flops"]) / 32, batch=16, context=2048, kv_per_token=X,
                  peak=989.5e12, bandwidth=3.35e12)
    assert float(r.answer) == pytest.approx(float(by_hand.answer), rel=1e-12)


def test_decode_latency_from_a_moe_model_uses_its_active_parameters():
    """Mixtral 8x7B: every expert read, 2 of 8 used: N_active = N − 6 experts · 32 layers · 3 · 4096 · 14336."""
    from solver.counting import param_count
    from solver.counting.presets import get_config

    N = param_count(get_config("mixtral-8x7b"))
    r = run("decode_latency", model="mixtral-8x7b", batch=1, peak=989.5e12, bandwidth=3.35e12)
    assert r.breakdown["flops"] == 2 * (N - 6 * 32 * 3 * 4096 * 14336)
