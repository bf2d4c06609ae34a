"""Experts, latent attention and sliding windows (issue 10), each count checked a second way.

- active parameters against the instantiated module (numel of everything but the routed experts,
  plus top_k experts' numel per MoE layer);
- E·(1 − (1 − k/E)^B) against an exact enumeration of every routing of B tokens, and the worst case
  against the experts a real router picks;
- the decode read of a MoE model at B = 1 against the active parameters, at B·k ≥ E against all;
- the band of a windowed layer against the mask the model adds, the receptive field against
  reachability through L band masks, the rolling cache against the cache tensors after decoding
  past the window;
- published figures: Mixtral's totals and actives, DeepSeek-V2-Lite's, DeepSeek-V2's statement
  that MLA caches as much as GQA with 2.25 groups.
(The parameter, FLOP and cache counts of every new field are also checked against the reference
model by the hypothesis tests of tests/solver/models/test_counts.py, whose configurations draw them.)
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.counting import kv_cache_bytes_cfg, param_breakdown
from solver.counting.config import ModelConfig
from solver.counting.memory import kv_cache_per_token_comparison
from solver.counting.presets import PRESETS
from solver.counting.window import attention_pairs, banded_attention_flops, receptive_field
from solver.errors import SolverInputError
from solver.models import build_model
from solver.models.attention import self_attention_bias
from solver.models.ffn import MixtureOfExperts
from solver.models.verify import measure_decode
from solver.systems.decode_read import expected_distinct_experts, model_read, worst_case_experts
from solver.units import dtype_bytes
from tests.config_strategies import transformer_configs

moe_configs = transformer_configs().filter(lambda c: c.is_moe)


# ---- active parameters ---------------------------------------------------------------------

def _active_from_module(cfg: ModelConfig) -> int:
    """Σ numel of the base module (no LoRA), the routed experts replaced by top_k of them per MoE layer."""
    model = build_model(cfg.replace(lora_rank=0), "meta")
    total = sum(p.numel() for p in model.parameters())
    for m in model.modules():
        if isinstance(m, MixtureOfExperts):
            one = sum(p.numel() for p in m.experts[0].parameters())
            total -= len(m.experts) * one - m.top_k * one
    return total


@given(cfg=moe_configs)
def test_active_parameters_equal_the_module_with_top_k_experts_hypo(cfg):
    assert param_breakdown(cfg).active == _active_from_module(cfg)


def test_dense_model_is_all_active():
    pb = param_breakdown(PRESETS["llama2-7b"].config)
    assert pb.active == pb.total and pb.routed_experts == 0


@pytest.mark.parametrize("name", ["mixtral-8x7b", "mixtral-8x22b", "deepseek-v2-lite"])
def test_published_total_and_active_within_the_explained_distance(name):
    p = PRESETS[name]
    assert abs(p.exact() - p.published) / p.published <= p.tolerance
    assert abs(p.exact_active() - p.published_active) / p.published_active <= p.active_tolerance
    assert p.exact_active() == _active_from_module(p.config)


def test_deepseek_v2_lite_active_without_the_input_table_is_the_published_2_4b():
    cfg = PRESETS["deepseek-v2-lite"].config
    without_lookup = param_breakdown(cfg).active - cfg.vocab_size * cfg.d_model
    assert round(without_lookup / 1e9, 1) == 2.5 and without_lookup / 2.4e9 - 1 < 0.025


# ---- experts a batch touches -----------------------------------------------------------------

def _enumerated_expectation(E: int, k: int, B: int) -> Fraction:
    """E[# distinct experts] over every equally likely choice of a k-subset by each of B tokens."""
    subsets = list(itertools.combinations(range(E), k))
    total = sum(len(set().union(*choice)) for choice in itertools.product(subsets, repeat=B))
    return Fraction(total, len(subsets) ** B)


@given(E=st.integers(1, 5), data=st.data(), B=st.integers(1, 3))
def test_expected_distinct_experts_equals_enumeration_hypo(E, data, B):
    k = data.draw(st.integers(1, E))
    assert expected_distinct_experts(E, k, B) == _enumerated_expectation(E, k, B)
    assert k <= expected_distinct_experts(E, k, B) <= worst_case_experts(E, k, B) <= E


@given(E=st.integers(2, 6), data=st.data(), B=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_a_real_router_touches_at_most_the_worst_case_hypo(E, data, B, seed):
    k = data.draw(st.integers(1, E))
    torch.manual_seed(seed)
    moe = MixtureOfExperts(ModelConfig(d_model=4, n_heads=1, d_ff=3, n_experts=E, top_k=k))
    chosen = moe.router(torch.randn(B, 4)).topk(k, dim=-1).indices
    assert k <= len(set(chosen.flatten().tolist())) <= worst_case_experts(E, k, B)


def test_decode_read_of_experts_at_its_limits():
    cfg = PRESETS["mixtral-8x7b"].config
    pb = param_breakdown(cfg)
    w = dtype_bytes("bf16")
    # issue 21: the untied input embedding (32000 × 4096) is a lookup: B rows of d = 4096 are read, not the table
    table = 32000 * 4096
    assert model_read(cfg, 1, 128).weight_bytes == (pb.active - table + 4096) * w  # one token: its k experts, one row
    assert model_read(cfg, 4, 128, experts="worst").weight_bytes == (pb.total - table + 4 * 4096) * w  # 4·2 = 8 = E
    assert model_read(cfg, 1, 128, experts="all").weight_bytes == (pb.total - table + 4096) * w
    mid = model_read(cfg, 2, 128).weight_bytes  # 8·(1 − (3/4)²) = 3.5 experts per layer
    per_expert = Fraction(pb.routed_experts, 32 * 8)
    assert mid == (pb.total - pb.routed_experts - table + 2 * 4096 + 32 * Fraction(7, 2) * per_expert) * w
    with pytest.raises(SolverInputError):
        model_read(cfg, 1, 128, experts="some")


def test_moe_decode_step_reads_the_touched_experts_not_all():
    from solver.systems.chips import resolve_chip
    from solver.systems.inference import decode_step

    cfg = PRESETS["mixtral-8x7b"].config
    chip = resolve_chip("h100-sxm")
    read = model_read(cfg, 1, 1024)
    pb = param_breakdown(cfg)
    dense = decode_step(pb.total, 1, 1024, 0, chip)
    moe = decode_step(pb.total, 1, 1024, 0, chip, read=read)
    # one token reads one row (d = 4096) of the 32000-row input embedding (issue 21), not the table
    assert moe.breakdown["weight_bytes"] == (pb.active - 32000 * 4096 + 4096) * 2
    assert moe.breakdown["flops"] == 2 * pb.active
    assert dense.answer / moe.answer > 3  # the dense reading is several times too slow


# ---- latent attention ------------------------------------------------------------------------

def test_mla_caches_what_gqa_with_two_and_a_quarter_groups_would():
    """DeepSeek-V2 §2.1.4/Table 1: with d_c = 4·d_h and d_R = d_h/2 the cache per token and layer is
    (d_c + d_R) = 4.5·d_h, 'equal to GQA with only 2.25 groups' (2 × 2.25 × d_h)."""
    cfg = PRESETS["deepseek-v2-lite"].config
    per = kv_cache_per_token_comparison(cfg)
    assert Fraction(per["mla"], 2 * cfg.head_dim) == Fraction(9, 4)
    assert per["mha"] == 2 * 16 * 128 and per["mha"] / per["mla"] > 7
    assert kv_cache_bytes_cfg(cfg, 1, 1000, "bf16") == 27 * 1000 * per["mla"] * 2


def test_mla_decode_cache_tensors_after_a_real_step():
    cfg = PRESETS["deepseek-v2-lite"].config.replace(n_layers=2, vocab_size=50, n_experts=4, top_k=2,
                                                      d_model=32, n_heads=2, d_head=8, kv_lora_rank=6,
                                                      qk_rope_head_dim=4, v_head_dim=5, d_ff=16, d_ff_expert=8)
    _, cache = measure_decode(build_model(cfg, "cpu"), 2, 7, impl="sdpa")
    assert cache.nbytes() == kv_cache_bytes_cfg(cfg, 2, 7, "fp32") == 2 * 2 * 7 * (6 + 4) * 4


# ---- sliding window --------------------------------------------------------------------------

@given(n=st.integers(1, 12), W=st.integers(0, 8), start=st.integers(0, 6))
def test_band_pairs_equal_the_unmasked_entries_of_the_models_mask_hypo(n, W, start):
    cfg = ModelConfig(d_model=4, n_heads=1, d_ff=4, sliding_window=W)
    bias = self_attention_bias(cfg, True, 0, n, "cpu", W)
    visible = n * n if bias is None else int(torch.isfinite(bias).sum())
    if bias is None:  # no mask: causal (SDPA's is_causal) over n keys
        visible = n * (n + 1) // 2
    assert visible == attention_pairs(n, W)
    # after a cache of `start` positions, each of T = 1 queries sees min(start + 1, W) keys
    one = self_attention_bias(cfg, True, start, 1, "cpu", W)
    assert one is None  # nothing to mask: the layer already dropped the keys outside the window


def test_banded_flops_of_mistral_at_8192():
    cfg = PRESETS["mistral-7b"].config
    pairs = 4096 * 4097 // 2 + 4096 * 4096
    assert banded_attention_flops(cfg, 1, 8192) == 32 * 4 * 32 * 128 * pairs


@given(L=st.integers(1, 4), W=st.integers(1, 4))
def test_receptive_field_equals_reachability_through_band_masks_hypo(L, W):
    n = L * W + 3
    band = torch.zeros(n, n, dtype=torch.int64)
    for p in range(n):
        band[p, max(0, p - W + 1):p + 1] = 1
    reach = torch.linalg.matrix_power(band, L) > 0  # who the last token depends on after L layers
    back = n - 1 - int(reach[n - 1].nonzero().min())
    cfg = ModelConfig(d_model=4, n_heads=1, d_ff=4, n_layers=L, sliding_window=W)
    assert receptive_field(cfg) == back
    assert receptive_field(cfg.replace(global_every=1)) is None


def test_mistral_cache_holds_the_window_not_the_context():
    """Mistral 7B §2: with W = 4096 the rolling buffer caps the cache at 4096 positions per layer;
    at 8192 positions it holds half of what a full cache would."""
    cfg = PRESETS["mistral-7b"].config
    full = cfg.replace(sliding_window=0)
    assert kv_cache_bytes_cfg(cfg, 1, 8192, "bf16") == 2 * 32 * 4096 * 8 * 128 * 2
    assert kv_cache_bytes_cfg(full, 1, 8192, "bf16") == 2 * kv_cache_bytes_cfg(cfg, 1, 8192, "bf16")
    assert kv_cache_bytes_cfg(cfg, 1, 100, "bf16") == kv_cache_bytes_cfg(full, 1, 100, "bf16")


@given(W=st.integers(1, 4), every=st.integers(0, 3), steps=st.integers(1, 6))
def test_rolling_cache_after_decoding_past_the_window_hypo(W, every, steps):
    """Prefill 2 tokens, decode `steps` more one at a time: each windowed layer holds the last
    min(n, W) positions (Gemma 2's global layers all n), what the formula counts."""
    cfg = ModelConfig(d_model=4, n_heads=2, d_ff=4, n_layers=3, vocab_size=7, pos="rope", max_positions=16,
                      sliding_window=W, global_every=every)
    model = build_model(cfg, "cpu")
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(1, 2, dtype=torch.long), cache=cache)
        for _ in range(steps):
            model(torch.zeros(1, 1, dtype=torch.long), cache=cache)
    n = 2 + steps
    assert [layer.length for layer in cache.self_attn] == [cfg.attended(n, i) for i in range(3)]
    assert cache.nbytes() == kv_cache_bytes_cfg(cfg, 1, n, "fp32")


@given(W=st.integers(0, 5), seq=st.integers(2, 8), latent=st.booleans(), every=st.integers(0, 2))
def test_windowed_or_latent_decode_equals_a_full_pass_hypo(W, seq, latent, every):
    """The rolling cache (and latent attention's cache of c_KV and k_R) change nothing the model
    computes: the last position's logits after decoding token by token equal those of one pass
    over the sequence (band mask)."""
    torch.manual_seed(0)
    mla = {"kv_lora_rank": 3, "q_lora_rank": 4, "qk_rope_head_dim": 2, "v_head_dim": 3} if latent else {}
    cfg = ModelConfig(d_model=8, n_heads=2, d_ff=8, n_layers=2, vocab_size=11, pos="rope", max_positions=16,
                      sliding_window=W, global_every=every if W else 0, bias=False, **mla)
    model = build_model(cfg, "cpu")
    for p in model.parameters():
        torch.nn.init.normal_(p)
    tokens = torch.randint(0, 11, (1, seq))
    with torch.no_grad():
        whole = model(tokens, impl="math").logits[0, -1]
        cache = model.new_cache()
        model(tokens[:, :1], cache=cache)
        for t in range(1, seq):
            last = model(tokens[:, t:t + 1], cache=cache).logits[0, -1]
    assert torch.allclose(whole, last, atol=1e-4)


def test_window_and_latent_fields_refuse_what_they_cannot_mean():
    for bad in ({"global_every": 2}, {"sliding_window": 4, "arch": "encoder"}, {"q_lora_rank": 4},
                {"n_shared_experts": 1}, {"kv_lora_rank": 4, "n_kv_heads": 1, "n_heads": 2}):
        with pytest.raises(SolverInputError):
            ModelConfig(**bad)


def test_window_only_reaches_decode_flops():
    """A forward pass still computes the masked rectangle; a decode step attends to min(n, W)."""
    from solver.counting import matmul_flops

    cfg = PRESETS["mistral-7b"].config
    full = cfg.replace(sliding_window=0)
    assert matmul_flops(cfg, 1, 8192).total == matmul_flops(full, 1, 8192).total
    gap = matmul_flops(full, 1, 8192, "decode").total - matmul_flops(cfg, 1, 8192, "decode").total
    assert gap == 32 * 4 * 32 * 128 * (8192 - 4096)


# ---- overriding a preset -----------------------------------------------------------------------

def test_override_re_derives_d_head_and_d_ff_or_refuses():
    from solver.counting.config import override

    gpt3 = PRESETS["gpt3-175b"].config
    cfg, notes = override(gpt3, {"d_model": 25600, "n_heads": 160})
    assert cfg.q_dim == cfg.d_model == 25600 and cfg.head_dim == 160 and cfg.d_ff == 4 * 25600
    assert any("d_head" in n for n in notes) and any("d_ff" in n for n in notes)
    # the count is the GPT-2-style model of that width: 12·L·d² + 13·L·d + (V + P)·d + 2·d
    L, d, V, P = 96, 25600, 50257, 2048
    assert param_breakdown(cfg).total == 12 * L * d * d + 13 * L * d + (V + P) * d + 2 * d
    with pytest.raises(SolverInputError):  # GPT-3 XL's d_head is its own (24·128 ≠ 2048)
        override(PRESETS["gpt3-xl"].config, {"d_model": 4096})
    with pytest.raises(SolverInputError):
        override(gpt3, {"n_heads": 100})  # 12288 / 100 is not an integer
    llama, notes = override(PRESETS["llama2-7b"].config, {"d_model": 8192, "n_heads": 64})
    assert llama.d_ff == 11008 and any("kept" in n for n in notes)
    assert override(gpt3, {"n_layers": 2})[0].head_dim == 128  # nothing derived changed
