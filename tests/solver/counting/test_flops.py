"""Matmul FLOPs: hand-worked figures, invariants of the conventions, and the textbook gap.

The equality with ``FlopCounterMode`` on the executed reference model is asserted in the
reference-model tests; here the figures are rederived from matmul shapes by hand and the
conventions (train = 3 × forward, MACs = FLOPs / 2, linearity in the batch) are checked.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from solver.counting import matmul_flops
from solver.counting.config import ModelConfig
from solver.errors import SolverInputError
from tests.config_strategies import transformer_configs


def decoder_forward_by_shapes(cfg: ModelConfig, B: int, n: int) -> int:
    """Σ 2·m·k·n over the matmuls of a dense decoder's forward pass, written out layer by layer."""
    d, hd = cfg.d_model, cfg.head_dim
    rows = B * n
    mm = []
    for _ in range(cfg.n_layers):
        mm += [(rows, d, cfg.n_heads * hd), (rows, d, cfg.kv_heads * hd), (rows, d, cfg.kv_heads * hd)]
        for _ in range(B * cfg.n_heads):
            mm += [(n, hd, n), (n, n, hd)]  # q·kᵀ, p·v for one head of one sequence
        mm.append((rows, cfg.n_heads * hd, d))
        if cfg.ffn == "swiglu":
            mm.append((rows, d, cfg.d_ff))
        mm += [(rows, d, cfg.d_ff), (rows, cfg.d_ff, d)]
    if cfg.lm_head:
        mm.append((rows, d, cfg.vocab_size))
    return sum(2 * a * b * c for a, b, c in mm)


@given(transformer_configs(archs=("decoder",)), st.integers(1, 3), st.integers(1, 6))
def test_dense_decoder_matches_matmul_listing_hypo(cfg, B, n):
    """A dense decoder without LoRA: the report equals the sum over its listed matmuls."""
    assume(not cfg.is_mla)  # latent attention has its own listing (tests/solver/models/test_counts.py measures it)
    cfg = cfg.replace(n_experts=1, top_k=1, lora_rank=0, n_shared_experts=0, first_dense_layers=0, d_ff_expert=None,
                      router_bias=False, d_ff_shared=None, shared_expert_gate=False, moe_every=1)
    assert matmul_flops(cfg, B, n).total == decoder_forward_by_shapes(cfg, B, n)


@given(transformer_configs(), st.integers(1, 3), st.integers(1, 6))
def test_conventions_hypo(cfg, B, n):
    """train = 3 × forward (explicit attention); MACs = FLOPs / 2; forward is linear in B."""
    fwd = matmul_flops(cfg, B, n)
    train = matmul_flops(cfg, B, n, "train")
    assert train.total == 3 * fwd.total and train.forward_flops == fwd.total
    assert matmul_flops(cfg, B, n, convention="macs").total * 2 == fwd.total
    assert matmul_flops(cfg, 2 * B, n).total == 2 * fwd.total


@given(transformer_configs(archs=("decoder",)), st.integers(1, 3), st.integers(1, 6))
def test_fused_attention_backward_adds_one_score_matmul_hypo(cfg, B, n):
    """The fused SDPA backward recomputes QKᵀ: train(fused) − train(explicit) = forward QKᵀ."""
    explicit = matmul_flops(cfg, B, n, "train")
    fused = matmul_flops(cfg, B, n, "train", attention_kernel="fused")
    qk = sum(t.forward for t in explicit.terms if t.name == "attn.scores")
    assert fused.total - explicit.total == qk


@given(transformer_configs(archs=("decoder", "encoder-decoder")), st.integers(1, 3), st.integers(1, 6))
def test_decode_attention_is_linear_in_context_hypo(cfg, B, n):
    """One decode step: the attention terms grow by a constant per extra cached position;
    every other term does not depend on the context (latent attention re-expands keys and values from
    every cached latent: W_UK and W_UV grow with it too). A sliding window stops the growth at W
    (tests/solver/counting/test_moe_mla_window.py)."""
    assume(not cfg.sliding_window)
    a, b, c = (matmul_flops(cfg, B, n + i, "decode", src_seq=3) for i in range(3))
    assert c.total - b.total == b.total - a.total >= 0
    grows = ("attn.k_b", "attn.v_b")
    fixed = [sum(t.forward for t in r.terms if not t.group.endswith("scores") and t.name not in grows) for r in (a, b)]
    assert fixed[0] == fixed[1]


@given(transformer_configs(), st.integers(1, 3), st.integers(1, 6))
def test_textbook_gap_sums_to_exact_hypo(cfg, B, n):
    """rule + every gap item = the exact figure, in both conventions."""
    for conv in ("flops", "macs"):
        tb = matmul_flops(cfg, B, n, "train", conv).textbook
        assert tb["rule_value"] + sum(tb["gap"].values()) == tb["exact_value"]


def test_gpt2_small_forward_by_hand():
    """GPT-2 small, B = 1, n = 1024: matmul weights per layer 4·768² + 2·768·3072 = 7,077,888,
    ×12 = 84,934,656, ×2·1024 = 173,946,175,488; attention 4·L·n²·d = 4·12·1024²·768 =
    38,654,705,664; LM head 2·1024·768·50257 = 79,047,426,048. Total 291,648,307,200."""
    rep = matmul_flops(ModelConfig(), 1, 1024)
    assert rep.total == 291_648_307_200
    assert rep.by_group()["attention_scores"] == 38_654_705_664
    assert rep.textbook["gap"]["rest"] == 0  # a plain decoder: nothing the four items leave out


def test_llama2_7b_decode_by_hand():
    """Llama-2-7B, one token at context 4096, B = 1: weights per layer 4·4096² + 3·4096·11008 =
    202,375,168; ×32 ×2 = 12,952,010,752; attention 4·32·4096·4096 = 2,147,483,648;
    LM head 2·4096·32000 = 262,144,000. Total 15,361,638,400 FLOPs."""
    cfg = ModelConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=11008, ffn="swiglu", norm="rmsnorm", bias=False,
                      vocab_size=32000, pos="rope", tied_embeddings=False)
    assert matmul_flops(cfg, 1, 4096, "decode").total == 15_361_638_400


def test_encoder_decoder_forward_by_hand():
    """d 4, 1+1 layers, 1 head, d_ff 8, V 10, B 1, source 3, target 2 (biases do not count):
    encoder: 4 projections 2·3·16 = 96 each → 384; QKᵀ and AV 2·3·3·4 = 72 each → 144;
    FFN 2·2·3·4·8 = 384 → 912. Decoder self: projections 4·2·2·16 = 256, attention 2·2·2·2·4 = 64;
    cross: Q, O 2·2·16 = 64 each, K, V from 3 encoder rows 96 each, attention 2·2·2·3·4 = 96;
    FFN 2·2·2·4·8 = 256; LM head 2·2·4·10 = 160. Total 912 + 320 + 416 + 256 + 160 = 2064."""
    cfg = ModelConfig(arch="encoder-decoder", d_model=4, n_layers=2, n_heads=1, d_ff=8, vocab_size=10)
    assert matmul_flops(cfg, 1, 2, src_seq=3).total == 2064


def test_bad_inputs_are_one_line_errors():
    enc = ModelConfig(arch="encoder", lm_head=False)
    with pytest.raises(SolverInputError, match="encoder"):
        matmul_flops(enc, 1, 4, "decode")
    with pytest.raises(SolverInputError):
        matmul_flops(ModelConfig(), 0, 4)
    with pytest.raises(SolverInputError):
        matmul_flops(ModelConfig(), 1, 4, "backward")
