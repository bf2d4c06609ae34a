"""solver.systems.training against the ZeRO paper's worked example, real optimizer state, real tensors.

ZeRO (Rajbhandari et al. 2020, Figure 1): Ψ = 7.5·10^9 parameters, N_d = 64 GPUs, mixed-
precision Adam with K = 12 (fp32 master weights, momentum, variance: 3 × 4 bytes). In GB:
- baseline: (2 + 2 + 12)·Ψ = 16 × 7.5 = 120 GB
- P_os: 2Ψ + 2Ψ + 12Ψ/64 = 15 + 15 + 90/64 = 31.40625 -> "31.4GB"
- P_os+g: 2Ψ + 14Ψ/64 = 15 + 105/64 = 16.640625 -> "16.6GB"
- P_os+g+p: 16Ψ/64 = 120/64 = 1.875 -> "1.9GB" in the figure (1.88 to three figures)

GPT-3 175B by hand: C = 6 × 175·10^9 × 300·10^9 = 3.15·10^23 FLOPs = 3.15e23 / 8.64e19 =
3645.8 PF-days (the paper's table, which uses its exact N, prints 3.14e23 and 3640).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.systems.chips import Chip, resolve_chip
from solver.systems.training import activations, kaplan_forward_flops, train, zero

PSI, ND = 7_500_000_000, 64


@pytest.mark.parametrize("stage, paper_gb, places", [(0, 120, 0), (1, 31.4, 1), (2, 16.6, 1), (3, 1.88, 2)])
def test_zero_paper_example(stage, paper_gb, places):
    r = zero(PSI, ND, stage)
    assert round(r.breakdown["GB"], places) == paper_gb
    assert r.answer == r.breakdown["GB"] * 10**9


def test_zero_exact_bytes_of_the_example():
    assert [zero(PSI, ND, s).answer for s in range(4)] == [
        120 * 10**9, Fraction(31_406_250_000), Fraction(16_640_625_000), Fraction(1_875_000_000)]


@given(st.integers(1, 6), st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 1, 2, 3]))
def test_zero_against_real_adam_state_sharded_over_ranks(k, nd, stage):
    """Build fp16 weights and grads and a real fp32 Adam state, shard what the stage shards, sum rank 0's bytes."""
    psi = 8 * k * nd
    master = torch.zeros(psi, dtype=torch.float32, requires_grad=True)
    master.grad = torch.zeros_like(master)
    opt = torch.optim.Adam([master])
    opt.step()
    state = opt.state[master]
    optimizer_tensors = [master.detach(), state["exp_avg"], state["exp_avg_sq"]]  # 12 bytes / param
    weights16, grads16 = torch.zeros(psi, dtype=torch.float16), torch.zeros(psi, dtype=torch.float16)

    def rank0(t: torch.Tensor, sharded: bool) -> int:
        return t.chunk(nd)[0].nbytes if sharded else t.nbytes

    per_gpu = (rank0(weights16, stage >= 3) + rank0(grads16, stage >= 2)
               + sum(rank0(t, stage >= 1) for t in optimizer_tensors))
    assert zero(psi, nd, stage).answer == per_gpu


@given(st.integers(1, 10**12), st.integers(1, 4096), st.integers(1, 32))
def test_zero_invariants(psi, nd, K):
    s = [zero(psi, nd, st_, optimizer_bytes=K).answer for st_ in range(4)]
    assert s[0] >= s[1] >= s[2] >= s[3]
    assert s[3] * nd == s[0] == (4 + K) * psi
    assert [zero(psi, 1, st_, optimizer_bytes=K).answer for st_ in range(4)] == [s[0]] * 4


@given(st.integers(1, 64), st.integers(1, 4), st.sampled_from([(64, 4), (128, 8), (96, 3)]))
def test_activation_terms_against_tensor_sizes(s, b, ha):
    h, a = ha
    full = activations(s, b, h, a).answer
    sel = activations(s, b, h, a, recompute="selective").answer
    ckpt = activations(s, b, h, a, recompute="full").answer
    # the 5·a·s²·b that selective recomputation drops: softmax output (16-bit), dropout mask
    # (1 byte), dropout output (16-bit), each of shape (b, a, s, s)
    scores16 = torch.empty(b, a, s, s, dtype=torch.bfloat16, device="meta")
    mask = torch.empty(b, a, s, s, dtype=torch.bool, device="meta")
    assert full - sel == 2 * scores16.nbytes + mask.nbytes
    assert Fraction(full) == Fraction(s * b * h) * (34 + Fraction(5 * a * s, h))
    # full recomputation keeps the layer input only: one 16-bit (s, b, h) tensor
    assert ckpt == torch.empty(s, b, h, dtype=torch.bfloat16, device="meta").nbytes
    assert ckpt < sel < full
    assert activations(s, b, h, a, n_layers=3).answer == 3 * full


def test_activations_gpt3_by_hand():
    # s = 2048, b = 1, h = 12288, a = 96: 34sbh = 855,638,016; 5as²b = 2,013,265,920; sum 2,868,903,936
    assert activations(2048, 1, 12288, 96).answer == 2_868_903_936
    assert activations(2048, 1, 12288, 96, recompute="selective").answer == 855_638_016


def test_gpt3_compute_by_hand():
    r = train(175 * 10**9, tokens=300 * 10**9)
    assert r.answer == 315 * 10**21
    assert r.breakdown["pf_days"] == pytest.approx(3645.83, rel=1e-5)


@given(st.integers(10**6, 10**12), st.integers(10**6, 10**13), st.integers(1, 10**4), st.floats(0.05, 1.0))
def test_train_days_and_mfu_round_trip(N, D, chips, mfu):
    chip = resolve_chip("h100")
    r = train(N, tokens=D, chip=chip, chips=chips, mfu=mfu)
    hours = r.breakdown["days"] * 24 * chips
    back = train(N, tokens=D, chip=chip, gpu_hours=hours)
    assert back.breakdown["mfu"] == pytest.approx(mfu)
    assert train(N, compute=r.answer).breakdown["tokens"] == pytest.approx(D)


@given(st.integers(1, 4), st.integers(1, 32), st.sampled_from([8, 16, 32]))
def test_kaplan_attention_term_is_half_the_full_score_matmuls(L, T, d):
    """2·n_layer·n_ctx·d_attn per token = half of QKᵀ and A·V over the full n_ctx × n_ctx (causal)."""
    from torch.utils.flop_counter import FlopCounterMode

    q = torch.empty(T, d, device="meta")
    with FlopCounterMode(display=False) as c:
        for _ in range(L):
            (q @ q.T) @ q
    per_token_full = Fraction(c.get_total_flops(), T)
    assert kaplan_forward_flops(10, L, T, d).breakdown["attention_flops"] == per_token_full / 2


def test_train_needs_tokens_or_compute():
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError):
        train(10)
    with pytest.raises(SolverInputError):
        train(10, tokens=1, compute=6.0)
    with pytest.raises(SolverInputError):
        train(10, tokens=1, gpu_hours=1.0, chip=Chip())
