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


# ---- activation checkpointing: the bytes autograd really keeps -----------------------------------------


def _dropout(t, p=0.1):
    return torch.native_dropout(t, p, True)[0]


class _Block(torch.nn.Module):
    """The GPT layer Korthikanti et al. count (their Fig. 2): LN → QKV → QKᵀ·(1/√d) → softmax → dropout → ·V →
    out-proj → dropout → residual → LN → h→4h → GeLU → 4h→h → dropout → residual; (s, b, h) in and out, 16-bit.
    ``checkpoint``: None, "selective" (the attention core recomputed), or "full" (the whole layer). Dropout is
    ``torch.native_dropout``, which saves a 1-byte bool mask, as F.dropout does on CUDA (on the CPU F.dropout
    multiplies by a noise tensor of the input's dtype, 2 bytes an element in bf16)."""

    def __init__(self, h, a, checkpoint=None):
        super().__init__()
        self.h, self.a, self.checkpoint = h, a, checkpoint
        self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
        self.fc1, self.fc2 = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

    def core(self, q, k, v):
        s, b, h = q.shape
        d = h // self.a
        q, k, v = (t.reshape(s, b, self.a, d).permute(1, 2, 0, 3) for t in (q, k, v))  # (b, a, s, d)
        p = _dropout(torch.softmax(q @ k.transpose(-1, -2) * d ** -0.5, dim=-1))
        return (p @ v).permute(2, 0, 1, 3).reshape(s, b, h)

    def layer(self, x):
        from torch.utils.checkpoint import checkpoint

        q, k, v = self.qkv(self.ln1(x)).split(self.h, dim=-1)
        if self.checkpoint == "selective":
            c = checkpoint(self.core, q, k, v, use_reentrant=True)
        else:
            c = self.core(q, k, v)
        x = x + _dropout(self.proj(c))
        m = self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))
        return x + _dropout(m)

    def forward(self, x):
        if self.checkpoint == "full":
            from torch.utils.checkpoint import checkpoint

            return checkpoint(self.layer, x, use_reentrant=True)
        return self.layer(x)


def _saved_bytes(block, x):
    """Bytes of the distinct storages autograd saves for the backward pass in one forward of ``block``, less the
    parameters; and, apart, LayerNorm's mean and 1/σ, shape (s, b, 1) (which Korthikanti et al. leave out)."""
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    seen: dict[int, tuple[int, torch.dtype, tuple]] = {}  # one entry a storage: q, k, v may share one

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = (st.nbytes(), t.dtype, tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x)
    stats = sum(n for n, _, shape in seen.values() if shape[-1:] == (1,))
    return sum(n for n, _, _ in seen.values()) - stats, stats


@pytest.mark.parametrize("policy", ["none", "selective", "full"])
@pytest.mark.parametrize("s,b,h,a", [(16, 2, 32, 4), (24, 3, 48, 6), (8, 1, 64, 2)])
def test_activation_bytes_are_what_autograd_saves(policy, s, b, h, a):
    """One layer's saved tensors, counted with torch.autograd.graph.saved_tensors_hooks on a bf16 block in
    training mode (dropout on, its masks 1-byte bools): s·b·h·(34 + 5·a·s/h) with no recomputation, 34·s·b·h with
    the attention core checkpointed, 2·s·b·h with the layer checkpointed (its input only); plus, when kept,
    LayerNorm's statistics, 2 norms × 2 × s·b elements, which the paper does not count."""
    from solver.registry import get_formula

    torch.manual_seed(0)
    block = _Block(h, a, checkpoint=None if policy == "none" else policy).to(torch.bfloat16).train()
    x = torch.randn(s, b, h, dtype=torch.bfloat16, requires_grad=True)
    got, stats = _saved_bytes(block, x)
    assert stats in ((0,) if policy == "full" else (2 * 2 * s * b * 2, 2 * 2 * s * b * 4))  # bf16 (CPU) or fp32
    want = {"none": s * b * h * 34 + 5 * a * s * s * b, "selective": 34 * s * b * h, "full": 2 * s * b * h}[policy]
    assert got == want
    r = get_formula("train_memory").run(dict(params=1, seq=s, micro_batch=b, d_model=h, heads=a, layers=1),
                                        {"checkpointing": policy})
    assert r.breakdown["activation_bytes"] == got
    assert activations(s, b, h, a, recompute=policy).answer == got
