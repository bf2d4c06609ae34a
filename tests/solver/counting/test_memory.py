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


# ---- the math SDPA backend's workspace, against the allocations PyTorch makes -------------------

def _traced_peak(q, k, v, causal: bool) -> int:
    """The most bytes alive at once among the tensors PyTorch's math SDPA backend allocates beyond
    Q, K, V, traced op by op on a CPU (each output storage counted from its op until it is freed)."""
    import weakref

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Peak(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live = self.peak = 0
            self.seen = {t.untyped_storage().data_ptr() for t in (q, k, v)}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                key, n = storage.data_ptr(), storage.nbytes()
                if key in self.seen or n == 0:
                    continue
                self.seen.add(key)
                self.live += n

                def freed(n=n, key=key):
                    self.live -= n
                    self.seen.discard(key)
                weakref.finalize(storage, freed)
            self.peak = max(self.peak, self.live)
            return out

    tracker = Peak()
    with sdpa_kernel(SDPBackend.MATH), tracker:
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return tracker.peak


@given(batch=st.integers(1, 2), heads=st.integers(1, 4), seq=st.integers(16, 64), d_head=st.sampled_from([2, 4]),
       half=st.booleans(), causal=st.booleans())
def test_sdpa_math_workspace_bounds_the_allocations_traced(batch, heads, seq, d_head, half, causal):
    """Two fp32 score tensors are alive at once whatever the input dtype (bf16 is upcast; a bf16
    score matrix would be 2 bytes), and the estimate is the traced peak but for the 1-byte flag per
    score, a kernel's own temporary the trace cannot see (the H200 run measures it)."""
    import torch

    from solver.counting import sdpa_math_workspace

    torch.manual_seed(0)
    dt = torch.bfloat16 if half else torch.float32
    q, k, v = (torch.randn(batch, heads, seq, d_head, dtype=dt) for _ in range(3))
    parts = sdpa_math_workspace(batch, heads, seq, d_head, 2 if half else 4, causal)
    peak = _traced_peak(q, k, v, causal)
    scores = batch * heads * seq * seq
    assert peak >= 8 * scores
    assert sum(parts.values()) - scores <= peak <= sum(parts.values())
    assert parts["scores and softmax (fp32)"] == 8 * scores and parts["causal mask (fp32)"] == (4 * seq * seq if causal else 0)


def test_sdpa_math_workspace_refuses_a_zero_size():
    from solver.counting import sdpa_math_workspace

    with pytest.raises(SolverInputError):
        sdpa_math_workspace(1, 0, 16, 8, 2)
