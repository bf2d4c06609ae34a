"""solver.systems.roofline against executed torch: FlopCounterMode for FLOPs, tensor nbytes for bytes.

Pinned by hand: the H100 SXM critical intensity. NVIDIA's datasheet prints 1,979 TFLOP/s BF16
*with sparsity*; dense is half, 989.5·10^12 FLOP/s. HBM3 bandwidth 3.35 TB/s = 3.35·10^12 B/s.
I* = 989.5e12 / 3.35e12 = 295.373... FLOP/byte, and the bf16 batch that reaches it is
B* = I*·2/2 = 295.37 rows. With the sparse figure one would get 590.7 (twice): wrong.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from solver.systems.chips import Chip, get_hardware, resolve_chip
from solver.systems.roofline import (
    attention,
    attention_bytes,
    attention_flops,
    bound,
    ffn_flops_per_token,
    matmul,
    matmul_bytes,
    matmul_flops,
    projection_flops_per_token,
    roofline,
    roofline_time,
)
from solver.units import dtype_bytes

dims = st.integers(1, 48)
TORCH = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8,
         "fp64": torch.float64}


def counted(fn) -> int:
    with FlopCounterMode(display=False) as c:
        fn()
    return c.get_total_flops()


@given(dims, dims, dims)
def test_matmul_forward_flops_match_flop_counter(B, D, F):
    x = torch.empty(B, D, device="meta")
    w = torch.empty(D, F, device="meta")
    assert matmul_flops(B, D, F, "forward") == counted(lambda: x @ w)


@given(dims, dims, dims)
def test_matmul_train_flops_match_flop_counter_with_backward(B, D, F):
    x = torch.empty(B, D, device="meta", requires_grad=True)
    w = torch.empty(D, F, device="meta", requires_grad=True)

    def step():
        y = x @ w
        y.backward(torch.empty(B, F, device="meta"))

    assert matmul_flops(B, D, F, "train") == counted(step)


@given(dims, dims, dims, st.sampled_from(["fp32", "bf16", "fp16"]), st.sampled_from(["fp32", "bf16", "int8"]))
def test_matmul_bytes_match_tensor_nbytes(B, D, F, act, wt):
    x = torch.empty(B, D, dtype=TORCH[act])
    w = torch.empty(D, F, dtype=TORCH[wt])
    y = torch.empty(B, F, dtype=TORCH[act])
    assert matmul_bytes(B, D, F, dtype_bytes(act), dtype_bytes(wt), "forward") == x.nbytes + w.nbytes + y.nbytes
    # training: forward (X, W -> Y), dX = dY·Wᵀ (dY, W -> dX), dW = Xᵀ·dY (X, dY -> dW at the weight dtype)
    dy, dx, dw = torch.empty_like(y), torch.empty_like(x), torch.empty_like(w)
    moved = sum(t.nbytes for t in (x, w, y, dy, w, dx, x, dy, dw))
    assert matmul_bytes(B, D, F, dtype_bytes(act), dtype_bytes(wt), "train") == moved


@given(dims, st.integers(1, 24).map(lambda k: 2 * k), dims)
def test_int4_weights_pack_two_per_byte(B, D, F):
    packed = torch.empty(D * F // 2, dtype=torch.uint8)  # how int4 weights are stored: two per byte
    x, y = torch.empty(B, D, dtype=torch.bfloat16), torch.empty(B, F, dtype=torch.bfloat16)
    assert matmul_bytes(B, D, F, dtype_bytes("bf16"), dtype_bytes("int4")) == x.nbytes + packed.nbytes + y.nbytes


@given(st.integers(1, 512), st.sampled_from(["bf16", "fp32", "int8", "int4"]))
def test_intensity_tends_to_2B_over_w_when_batch_is_small(B, wdt):
    D = F = 10**6 * B
    r = matmul(B, D, F, dtype="bf16", weight_dtype=wdt)
    exact, limit = r.breakdown["intensity"], r.breakdown["intensity_small_batch_limit"]
    assert limit == pytest.approx(2 * B / float(dtype_bytes(wdt)))
    assert exact < limit  # the activations only add bytes
    assert exact == pytest.approx(limit, rel=1e-4)


positive = st.floats(1e6, 1e18, allow_nan=False, allow_infinity=False)


@given(positive, positive, positive, positive)
def test_roofline_time_is_the_larger_bound(flops, n_bytes, peak, bw):
    t, tc, tm = roofline_time(flops, n_bytes, peak, bw)
    assert t >= flops / peak and t >= n_bytes / bw
    assert t in (tc, tm)


@given(st.integers(1, 10**6), st.integers(1, 10**6), st.integers(1, 10**4))
def test_bound_flips_exactly_at_the_critical_intensity(f, b, scale):
    intensity = Fraction(f, b)
    # bandwidth such that I* = I exactly (peak = I·bw)
    assert bound(intensity, intensity) == "balanced"
    assert bound(intensity, intensity + Fraction(1, 10**9)) == "memory"
    assert bound(intensity, intensity - Fraction(1, 10**9)) == "compute"
    # and the two views agree: compute-bound <=> FLOPs/peak > bytes/bandwidth
    peak, bw = Fraction(scale * 7), Fraction(scale * 3)
    which = bound(intensity, peak / bw)
    assert (which == "compute") == (Fraction(f) / peak > Fraction(b) / bw)
    assert (which == "memory") == (Fraction(f) / peak < Fraction(b) / bw)


def test_matmul_bound_matches_which_time_is_larger():
    chip = resolve_chip("h100")
    for B in (1, 64, 295, 296, 4096):
        r = matmul(B, 8192, 8192, chip=chip)
        bd = r.breakdown
        assert bd["bound"] == ("compute" if bd["compute_time_s"] > bd["memory_time_s"] else "memory")
        assert r.answer == max(bd["compute_time_s"], bd["memory_time_s"])


def test_h100_critical_intensity_by_hand():
    r = roofline(resolve_chip("h100-sxm"))
    assert r.answer == pytest.approx(295.3731, rel=1e-6)
    assert r.breakdown["critical_batch"] == pytest.approx(295.3731, rel=1e-6)
    assert get_hardware("h100").critical_intensity("bf16") == pytest.approx(989.5 / 3.35)


def test_given_figures_win_over_the_preset():
    chip = resolve_chip("h100", peak_flops=1e15, bandwidth=None)
    assert chip.peak_flops == 1e15 and chip.origin["peak_flops"] == "given"
    assert chip.bandwidth == 3.35e12 and chip.origin["bandwidth"] == "h100-sxm"


# ---------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------

heads = st.sampled_from([(1, 1), (2, 1), (4, 4), (4, 2), (6, 3), (8, 1)])  # (N, G)


@given(st.integers(1, 3), st.integers(1, 24), st.integers(1, 24), heads, st.integers(1, 16))
def test_attention_flops_and_bytes_against_torch(B, T, S, NG, H):
    N, G = NG
    q = torch.empty(B, N, T, H, device="meta")
    k = torch.empty(B, G, S, H, device="meta")
    v = torch.empty(B, G, S, H, device="meta")

    def attend():
        kk, vv = k.repeat_interleave(N // G, 1), v.repeat_interleave(N // G, 1)
        p = (q @ kk.transpose(-1, -2)).softmax(-1)
        return p @ vv

    assert attention_flops(B, T, S, N, H) == counted(attend)
    o = torch.empty(B, N, T, H, dtype=torch.bfloat16)
    qb, kb, vb = (torch.empty(t.shape, dtype=torch.bfloat16) for t in (q, k, v))
    assert attention_bytes(B, T, S, N, G, H, dtype_bytes("bf16")) == qb.nbytes + kb.nbytes + vb.nbytes + o.nbytes


@given(st.integers(1, 3), st.integers(1, 64), heads, st.integers(1, 16))
def test_decode_reads_both_k_and_v_of_n_kv_heads(B, S, NG, H):
    N, G = NG
    r = attention(B, S, N, H, n_kv_heads=G, mode="decode")
    assert r.breakdown["queries"] == 1 and r.breakdown["keys"] == S
    cache = torch.empty(2, B, G, S, H, dtype=torch.bfloat16)  # K and V
    assert r.breakdown["kv_bytes"] == cache.nbytes
    # the intensity approaches 2·(N/G)/a as the cache dominates
    assert r.breakdown["intensity"] <= r.breakdown["intensity_kv_limit"]


@given(st.sampled_from([(4, 4), (4, 2), (4, 1), (8, 2)]), st.sampled_from([8, 16]), st.sampled_from(["gelu", "swiglu"]))
def test_projection_and_ffn_flops_against_linear_layers(NG, H, ffn):
    N, G = NG
    d, d_ff = N * H + 8, 3 * N * H
    x = torch.empty(1, d, device="meta")
    layers = [torch.nn.Linear(d, N * H, bias=False, device="meta"), torch.nn.Linear(d, G * H, bias=False, device="meta"),
              torch.nn.Linear(d, G * H, bias=False, device="meta")]
    o = torch.nn.Linear(N * H, d, bias=False, device="meta")
    assert projection_flops_per_token(d, N, G, H) == counted(
        lambda: [lin(x) for lin in layers] + [o(torch.empty(1, N * H, device="meta"))])
    ups = 2 if ffn == "swiglu" else 1
    up = [torch.nn.Linear(d, d_ff, bias=False, device="meta") for _ in range(ups)]
    down = torch.nn.Linear(d_ff, d, bias=False, device="meta")
    assert ffn_flops_per_token(d, d_ff, ffn) == counted(
        lambda: [u(x) for u in up] + [down(torch.empty(1, d_ff, device="meta"))])


@given(heads, st.sampled_from([16, 32, 64]))
def test_crossover_lengths_equalise_the_flops(NG, H):
    N, G = NG
    d = N * H
    r = attention(1, 8, N, H, n_kv_heads=G, d_ff=4 * d)
    s_proj, s_all = r.breakdown["crossover_seq_projections"], r.breakdown["crossover_seq_all_matmuls"]
    # per token: attention over S keys costs 4·S·N·H
    assert 4 * s_proj * N * H == projection_flops_per_token(d, N, G, H)
    assert 4 * s_all * N * H == projection_flops_per_token(d, N, G, H) + ffn_flops_per_token(d, 4 * d)
    if G == N:  # the textbook MHA results: S = 2d, and 6d with d_ff = 4d
        assert (s_proj, s_all) == (2 * d, 6 * d)


def test_missing_figure_is_a_clear_error():
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError, match="bandwidth"):
        roofline(Chip(peak_flops=1e12))


def test_resident_activations_count_only_the_weights_and_the_output():
    """X already on chip: bytes = w·D·F + a·B·F (bf16: 2·4096·4096 + 2·256·4096); read: + 2·256·4096.
    B* with X resident solves 2·B·D·F = I*·(w·D·F + a·B·F): B* = I*·w·D·F / (2·D·F − I*·a·F)."""
    from solver.systems.chips import resolve_chip
    from solver.systems.roofline import matmul

    chip = resolve_chip(None, peak_flops=1e15, bandwidth=2e12)
    res = matmul(256, 4096, 4096, chip=chip, activations="resident").breakdown
    read = matmul(256, 4096, 4096, chip=chip).breakdown
    assert res["bytes"] == 2 * 4096 * 4096 + 2 * 256 * 4096
    assert read["bytes"] - res["bytes"] == 2 * 256 * 4096
    crit = 1e15 / 2e12
    assert res["critical_batch"] == pytest.approx(crit * 2 * 4096 * 4096 / (2 * 4096 * 4096 - crit * 2 * 4096))
