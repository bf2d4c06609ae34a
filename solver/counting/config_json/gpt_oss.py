"""gpt-oss (``gpt_oss``): ``GptOssForCausalLM`` of transformers.

Pre-RMSNorm layers; attention with Q/K/V/O biases (``attention_bias``, default true), free
``head_dim`` (64 heads of 64 at d_model 2880), GQA, RoPE, and one learned sink logit per head and
layer (``attn_sinks``); a sliding window of ``sliding_window`` on the layers ``layer_types`` marks
"sliding_attention" (every other layer: ``global_every`` 2). Every layer is a mixture of
``num_local_experts`` SwiGLU experts of ``intermediate_size`` (gate and up fused, biases on every
expert matrix) with a router that has a bias (``router_bias``), ``num_experts_per_tok`` per token;
final RMSNorm; an untied head. The clamped SwiGLU (``swiglu_limit``, α) changes no count.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import check_act, kv_heads, req, window_fields

NEUTRAL = frozenset({"rms_norm_eps", "swiglu_limit", "swiglu_alpha", "initial_context_length",
                     "quantization_config", "experts_per_token"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    n_layers = req(get, "num_hidden_layers")
    bias = get("attention_bias")
    fields: dict[str, Any] = dict(
        arch="decoder", d_model=d, n_layers=n_layers, n_heads=h, n_kv_heads=kv_heads(get, h), d_head=get("head_dim") or 64,
        d_ff=req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True,
        bias=False, attn_bias=True if bias is None else bool(bias), ffn_bias=True,
        vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
        norm_eps=float(get("rms_norm_eps") or 1e-5), n_experts=req(get, "num_local_experts"),
        top_k=req(get, "num_experts_per_tok"), router_bias=True, attn_sinks=True)
    fields.update(window_fields(raw, get, refused, n_layers, get("sliding_window"), default_pattern=2))
    notes = ["gpt-oss: every layer MoE (experts with biases, a router with a bias), one sink logit per head and "
             "layer; the sinks add nothing to the KV cache"]
    if raw.get("quantization_config"):
        notes.append("quantization_config (how the checkpoint stores the experts): counted as parameters here; its bytes in "
                     "qkv solve memory and serve")
    return fields, notes


READERS = {"gpt_oss": read}
