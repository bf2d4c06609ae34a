"""The reference model computes what it claims: incremental decoding with the KV cache equals a
full forward pass, the sdpa and math attention paths agree, tied weights are one tensor, the
sinusoidal table is a buffer, and GQA's repeated KV heads equal explicitly shared ones."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from solver.counting.config import ModelConfig
from solver.models import build_model
from solver.models.layers import Linear
from solver.models.positions import alibi_slopes, apply_rope, rope_rotation, sinusoidal_table
from tests.config_strategies import decoding_configs, transformer_configs


def _random_init(model, seed: int = 0):
    """Non-trivial weights (LoRA's B starts at zero, which would hide a broken adapter path)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return model


def _inputs(cfg, batch, seq, seed=1):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, cfg.vocab_size, (batch, seq), generator=g)
    extra = {"src_tokens": torch.randint(0, cfg.vocab_size, (batch, seq), generator=g)} \
        if cfg.arch == "encoder-decoder" else {}
    return tokens, extra


@given(cfg=decoding_configs, batch=st.integers(1, 2), seq=st.integers(2, 6), split=st.integers(1, 5))
def test_incremental_decoding_equals_full_forward_hypo(cfg, batch, seq, split):
    """Prefill the first k tokens, then feed the rest one at a time through the cache: the
    hidden states of the last token equal those of one full forward pass."""
    model = _random_init(build_model(cfg, "cpu", dtype="fp64"))
    tokens, extra = _inputs(cfg, batch, seq)
    k = min(split, seq - 1)
    with torch.no_grad():
        full = model(tokens, **extra).hidden[:, -1]
        cache = model.new_cache()
        model(tokens[:, :k], cache=cache, **extra)
        for t in range(k, seq):
            step = model(tokens[:, t:t + 1], cache=cache)
    assert cache.length == seq
    torch.testing.assert_close(step.hidden[:, -1], full, rtol=1e-9, atol=1e-9)


@given(cfg=transformer_configs(), seq=st.integers(1, 6))
def test_sdpa_and_math_attention_agree_hypo(cfg, seq):
    model = _random_init(build_model(cfg, "cpu", dtype="fp64"))
    tokens, extra = _inputs(cfg, 2, seq)
    with torch.no_grad():
        a = model(tokens, impl="sdpa", **extra).hidden
        b = model(tokens, impl="math", **extra).hidden
    torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_causal_decoder_ignores_the_future():
    cfg = ModelConfig(d_model=8, n_layers=2, n_heads=2, d_ff=16, vocab_size=11, max_positions=8, pos="alibi")
    model = _random_init(build_model(cfg, "cpu", dtype="fp64"))
    a = torch.tensor([[1, 2, 3, 4]])
    b = torch.tensor([[1, 2, 9, 9]])
    with torch.no_grad():
        ha, hb = model(a).hidden, model(b).hidden
    torch.testing.assert_close(ha[:, :2], hb[:, :2])
    assert not torch.allclose(ha[:, 2:], hb[:, 2:])


def test_tied_head_is_the_token_embedding():
    cfg = ModelConfig(d_model=8, n_layers=1, n_heads=2, d_ff=16, vocab_size=11, max_positions=8)
    tied = build_model(cfg, "meta")
    untied = build_model(cfg.replace(tied_embeddings=False), "meta")
    assert tied.lm_head.weight is tied.tok_emb.weight
    n_tied, n_untied = (sum(p.numel() for p in m.parameters()) for m in (tied, untied))
    assert n_untied - n_tied == 11 * 8


def test_sinusoidal_table_is_a_buffer_with_the_formula():
    cfg = ModelConfig(d_model=6, n_layers=0, n_heads=2, d_ff=4, vocab_size=5, max_positions=7, pos="sinusoidal")
    model = build_model(cfg, "cpu")
    assert "pos_table" in dict(model.named_buffers())
    assert all("pos" not in name for name, _ in model.named_parameters())
    table = sinusoidal_table(7, 6)
    pos, i = 5, 1  # PE[5, 2] = sin(5 / 10000^(2/6)), PE[5, 3] = cos(...)
    assert table[pos, 2].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 6)), abs=1e-6)
    assert table[pos, 3].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 6)), abs=1e-6)


def test_alibi_slopes_of_eight_heads():
    """Press et al.: 8 heads get 1/2, 1/4, ..., 1/256."""
    assert alibi_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]


def test_gqa_equals_mha_with_shared_key_value_heads():
    """n_kv_heads = 1 (MQA) is MHA whose K and V projections repeat one head's weights."""
    mqa_cfg = ModelConfig(d_model=8, n_layers=1, n_heads=4, n_kv_heads=1, d_ff=8, vocab_size=7, max_positions=6)
    mqa = _random_init(build_model(mqa_cfg, "cpu", dtype="fp64"))
    mha = build_model(mqa_cfg.replace(n_kv_heads=None), "cpu", dtype="fp64")
    with torch.no_grad():
        for name, p in mha.named_parameters():
            src = dict(mqa.named_parameters())[name]
            if name.endswith(("attn.k.weight", "attn.v.weight", "attn.k.bias", "attn.v.bias")):
                p.copy_(src.repeat(4, *([1] * (src.dim() - 1))))  # 4 copies of the one KV head
            else:
                p.copy_(src)
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        torch.testing.assert_close(mqa(tokens).hidden, mha(tokens).hidden)


def test_moe_uses_top_k_experts_per_token():
    """With top_k = 1, each token's output is exactly its one chosen expert's FFN (weight 1)."""
    cfg = ModelConfig(d_model=8, n_layers=1, n_heads=2, d_ff=8, vocab_size=7, max_positions=6,
                      n_experts=3, top_k=1)
    moe = _random_init(build_model(cfg, "cpu", dtype="fp64")).decoder.layers[0].ffn
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    with torch.no_grad():
        chosen = moe.router(x[0]).argmax(-1)
        expected = torch.stack([moe.experts[int(e)](x[0, t]) for t, e in enumerate(chosen)])
        torch.testing.assert_close(moe(x)[0], expected)


@given(hs=st.sampled_from([2, 4, 8]), start=st.integers(0, 60), T=st.integers(1, 4), seed=st.integers(0, 99))
def test_rope_rotates_each_pair_by_position_times_theta_hypo(hs, start, T, seed):
    """(x[2j], x[2j+1]) at position p → (x·cos − y·sin, x·sin + y·cos) with angle p·10000^(−2j/hs),
    written out with math.cos/math.sin."""
    x = torch.randn(1, 2, T, hs, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out = apply_rope(x, rope_rotation(start, T, hs))
    expected = torch.empty_like(x)
    for t in range(T):
        for j in range(hs // 2):
            angle = (start + t) * 10000 ** (-2 * j / hs)
            a, b = x[..., t, 2 * j], x[..., t, 2 * j + 1]
            expected[..., t, 2 * j] = a * math.cos(angle) - b * math.sin(angle)
            expected[..., t, 2 * j + 1] = a * math.sin(angle) + b * math.cos(angle)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)  # angles are computed in float32


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), d_in=st.integers(1, 6), d_out=st.integers(1, 6),
       bias=st.booleans(), seed=st.integers(0, 99))
def test_linear_is_nn_linear_hypo(shape, d_in, d_out, bias, seed):
    """Our Linear writes y = x Wᵀ + b out; nn.Linear's own forward (one addmm) gives the same
    values, and FlopCounterMode counts the same FLOPs for both, on the CPU and on meta."""
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(seed)
    layer = _random_init(Linear(d_in, d_out, bias).double(), seed)
    x = torch.randn(*shape, d_in, generator=g, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), torch.nn.Linear.forward(layer, x), rtol=1e-12, atol=1e-12)
    n_tokens = x.numel() // d_in
    for device in ("cpu", "meta"):
        layer = layer.to(device)
        counts = []
        for forward in (Linear.forward, torch.nn.Linear.forward):
            x = x.detach().to(device).requires_grad_()
            with FlopCounterMode(display=False) as fc:
                forward(layer, x).sum().backward()  # forward, then the gradients of x and of W
            counts.append(fc.get_total_flops())
        assert counts[0] == counts[1] == 3 * 2 * n_tokens * d_in * d_out
