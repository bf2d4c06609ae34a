"""Memory in bytes: KV cache, weights, attention scores and Adam state, derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.counting import (
    attention_scores_bytes,
    kv_cache_bytes,
    kv_cache_bytes_cfg,
    kv_cache_report,
    param_breakdown,
    training_bytes,
    training_report,
    weights_bytes,
)
from solver.counting.config import ModelConfig
from solver.errors import SolverInputError
from tests.config_strategies import transformer_configs

LLAMA2_7B = ModelConfig(d_model=4096, n_layers=32, n_heads=32, d_ff=11008, ffn="swiglu", norm="rmsnorm", bias=False,
                        vocab_size=32000, pos="rope", tied_embeddings=False)


def test_kv_cache_llama2_7b_by_hand():
    """2 (K, V) × 32 layers × 1 × 4096 tokens × 32 heads × 128 × 2 bytes = 2^31 bytes = 2 GiB."""
    assert kv_cache_bytes(32, 1, 4096, 32, 128, "fp16") == 2**31
    assert kv_cache_bytes_cfg(LLAMA2_7B, 1, 4096, "fp16") == 2**31


def test_kv_cache_gqa_by_hand():
    """Llama-2-70B (80 layers, 8 KV heads of 128), B 1, 4096 tokens, bf16:
    2·80·4096·8·128·2 = 1,342,177,280 bytes = 1.25 GiB, 8× less than with 64 KV heads."""
    cfg = ModelConfig(d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_ff=28672, ffn="swiglu", bias=False,
                      vocab_size=32000, pos="rope")
    rep = kv_cache_report(cfg, 1, 4096, "bf16")
    assert rep.bytes == 1_342_177_280 and rep.gib == 1.25
    assert kv_cache_bytes_cfg(cfg.replace(n_kv_heads=None), 1, 4096, "bf16") == 8 * rep.bytes


def test_kv_cache_int4_rounds_up_to_whole_bytes():
    """Two int4 values per byte: 2·1·1·1·1·3 = 6 values → 3 bytes; 1·1·3·3 = 9 score values →
    4.5 → 5 bytes (the last byte half used)."""
    assert kv_cache_bytes(1, 1, 1, 1, 3, "int4") == 3
    assert attention_scores_bytes(1, 1, 3, "int4") == 5  # 9 values → 4.5 → 5 bytes


def test_encoder_decoder_cache_is_decoder_self_attention_unless_cross_asked():
    """6 decoder layers (of 6 + 6), d 512, 8 heads, B 2, 10 target tokens, fp32:
    self 2·6·2·10·512·4 = 491,520; cross with 7 source tokens adds 2·6·2·7·512·4 = 344,064."""
    cfg = ModelConfig(arch="encoder-decoder", d_model=512, n_layers=12, n_heads=8, d_ff=2048, vocab_size=100)
    assert kv_cache_bytes_cfg(cfg, 2, 10, "fp32") == 491_520
    assert kv_cache_bytes_cfg(cfg, 2, 10, "fp32", src_seq=7, include_cross=True) == 491_520 + 344_064
    with pytest.raises(SolverInputError):
        kv_cache_report(ModelConfig(arch="encoder", lm_head=False), 1, 1, "fp16")


def test_attention_scores_by_hand():
    """B 1, 12 heads, n 4096, fp32: 12·4096²·4 = 805,306,368 bytes = 0.75 GiB; with 1024 keys a quarter."""
    assert attention_scores_bytes(1, 12, 4096, "fp32") == 805_306_368
    assert attention_scores_bytes(1, 12, 4096, "fp32", kv_seq=1024) == 805_306_368 // 4


def test_weights_by_hand():
    """Llama-2-7B has 6,738,415,616 parameters: 13,476,831,232 bytes in bf16, 3,369,207,808 in int4."""
    assert weights_bytes(LLAMA2_7B, "bf16") == 13_476_831_232
    assert weights_bytes(LLAMA2_7B, "int4") == 3_369_207_808


@given(transformer_configs(), st.sampled_from(["mixed", "fp32"]))
def test_adam_state_is_16_bytes_per_parameter_hypo(cfg, mode):
    """Both modes hold 16 bytes per (trainable) parameter, from different parts."""
    n = param_breakdown(cfg).total_with_lora
    rep = training_report(cfg, mode)
    assert training_bytes(cfg, mode) == 16 * n
    assert [i.bytes // max(n, 1) for i in rep.items] == ([2, 2, 4, 4, 4] if mode == "mixed" else [4, 4, 4, 4])


def test_gib_and_gb_are_both_views_of_the_bytes():
    rep = kv_cache_report(LLAMA2_7B, 1, 4096, "fp16")
    assert rep.gib == 2.0 and rep.gb == 2.147483648


def test_bad_dtype_is_a_clear_error():
    with pytest.raises(SolverInputError, match="dtype"):
        kv_cache_bytes(1, 1, 1, 1, 1, "fp12")
    with pytest.raises(SolverInputError, match="mode"):
        training_bytes(ModelConfig(), "fp16")
