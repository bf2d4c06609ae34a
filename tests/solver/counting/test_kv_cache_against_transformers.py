"""The KV cache of issue 20's model types against the cache transformers builds (CPU, tiny models).

A tiny model of each type (random weights) runs a prefill of n − 1 tokens and a one-token decode
step; the bytes of the keys and values its cache then holds are compared with
``kv_cache_bytes_cfg`` of the configuration ``read_hf_config`` reads from the same config:

- full attention (GQA, MQA, MHA) and latent attention (DeepSeek-V3): equal;
- a windowed layer (Gemma 2, gpt-oss, Phi-3, Llama 4's chunked layers): transformers'
  ``DynamicSlidingWindowLayer`` keeps the W − 1 positions the next token needs besides itself, where
  qkv counts Mistral's rolling buffer of W (Mistral 7B §2: a cache of fixed size W). So transformers'
  bytes equal qkv's count with the window W − 1: the difference is one position per windowed layer,
  once n ≥ W, and this test pins it.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
transformers = pytest.importorskip("transformers", minversion="5.0")

import torch  # noqa: E402

from solver.counting import kv_cache_bytes_cfg  # noqa: E402
from solver.counting.config_json import read_hf_config  # noqa: E402

transformers.logging.set_verbosity_error()

SMALL = dict(vocab_size=11, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, pad_token_id=0, bos_token_id=0,
             eos_token_id=0)


def kinds(window: int, kv: int, layers: int) -> dict[str, dict]:
    small = dict(SMALL, num_hidden_layers=layers)
    return {
        "qwen3": dict(small, intermediate_size=8, num_key_value_heads=kv, head_dim=4),
        "gemma2": dict(small, intermediate_size=8, num_key_value_heads=kv, head_dim=4, sliding_window=window),
        "gpt_oss": dict(small, intermediate_size=8, num_key_value_heads=kv, head_dim=4, sliding_window=window,
                        num_local_experts=2, num_experts_per_tok=1),
        "phi3": dict(small, intermediate_size=8, num_key_value_heads=kv, sliding_window=window),
        "falcon": dict(small, multi_query=kv == 1),
        "deepseek_v3": dict(small, num_key_value_heads=4, intermediate_size=8, n_routed_experts=2,
                            num_experts_per_tok=1, moe_intermediate_size=8, n_shared_experts=1,
                            first_k_dense_replace=1, kv_lora_rank=6, q_lora_rank=5, qk_rope_head_dim=2,
                            qk_nope_head_dim=4, v_head_dim=3, n_group=1, topk_group=1),
        "llama4_text": dict(small, intermediate_size=8, num_key_value_heads=kv, head_dim=4, num_local_experts=2,
                            num_experts_per_tok=1, intermediate_size_mlp=8, attention_chunk_size=window,
                            no_rope_layer_interval=2),
    }


def hf_cache_bytes(kind: str, kwargs: dict, batch: int, n: int) -> tuple[int, dict]:
    """Bytes of every key and value tensor in transformers' cache after a prefill of n − 1 tokens
    and one decode step, and the config's dict."""
    hf_config = transformers.AutoConfig.for_model(kind, **kwargs)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    ids = torch.zeros(batch, n, dtype=torch.long)
    with torch.no_grad():
        out = model(ids[:, : n - 1], use_cache=True)
        out = model(ids[:, n - 1:], past_key_values=out.past_key_values, use_cache=True)
    total = sum(t.numel() * t.element_size() for layer in out.past_key_values.layers
                for t in (layer.keys, layer.values) if t is not None)
    return total, json.loads(json.dumps(hf_config.to_dict(), default=str))


@pytest.mark.parametrize("kind", ["qwen3", "gemma2", "gpt_oss", "phi3", "falcon", "deepseek_v3", "llama4_text"])
def test_kv_cache_equals_the_cache_transformers_builds_hypo(kind):
    """transformers' cache after one decode step == kv_cache_bytes_cfg (window: with W − 1, see the
    module docstring), fp32."""

    @given(n=st.integers(2, 9), window=st.integers(2, 5), kv=st.sampled_from([1, 2, 4]), batch=st.integers(1, 2),
           layers=st.integers(1, 3))
    def check(n, window, kv, batch, layers):
        measured, raw = hf_cache_bytes(kind, kinds(window, kv, layers)[kind], batch, n)
        cfg, _ = read_hf_config(raw)
        if cfg.sliding_window:
            cfg = cfg.replace(sliding_window=cfg.sliding_window - 1)  # transformers keeps W − 1
        assert measured == kv_cache_bytes_cfg(cfg, batch, n, "fp32"), (kind, n, window, kv)

    check()
