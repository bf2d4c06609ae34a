"""Granite (``granite``): ``GraniteForCausalLM`` of transformers: Llama's structure (pre-RMSNorm,
SwiGLU, RoPE, GQA, final norm; Q/K/V/O biases per ``attention_bias``, FFN biases per ``mlp_bias``;
LM head tied per ``tie_word_embeddings``). Its four multipliers (embedding, residual, attention,
logits scaling) are scalars without parameters.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import check_act, kv_heads, req

NEUTRAL = frozenset({"embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling",
                     "rms_norm_eps"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                  n_kv_heads=kv_heads(get, h), d_head=get("head_dim"), d_ff=req(get, "intermediate_size"), ffn="swiglu",
                  norm="rmsnorm", norm_position="pre", final_norm=True, bias=False,
                  attn_bias=bool(get("attention_bias", False)), ffn_bias=bool(get("mlp_bias", False)),
                  vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
                  tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
                  norm_eps=float(get("rms_norm_eps") or 1e-6))
    return fields, ["Granite: the embedding/residual/attention/logit multipliers have no parameters"]


READERS = {"granite": read}
