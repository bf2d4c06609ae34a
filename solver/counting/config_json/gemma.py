"""Gemma 2 (``gemma2``) and Gemma 3's text model (``gemma3_text``): ``Gemma2ForCausalLM``,
``Gemma3ForCausalLM`` of transformers.

Four RMSNorms per layer, before and after each sub-layer (``norm_position`` "sandwich":
x + post_norm(f(pre_norm(x)))); a gated GELU FFN (GeGLU: three matrices, counted as swiglu); free
``head_dim``; GQA; RoPE; a tied head (default). A sliding window on the layers ``layer_types``
marks "sliding_attention" (Gemma 2: every other layer; Gemma 3: five of every six,
``sliding_window_pattern``). Gemma 3 adds a QK-norm over d_head (``qk_norm`` "head"). Logit
softcapping and the query scale have no parameters.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import kv_heads, req, window_fields

NEUTRAL = frozenset({"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "rms_norm_eps",
                     "cache_implementation", "rope_local_base_freq", "sliding_window_size", "hidden_activation",
                     "hidden_act"})


def _read(raw: dict, get, refused: list[str], gemma3: bool) -> tuple[dict[str, Any], list[str]]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    act = get("hidden_activation") or get("hidden_act")
    if get("use_bidirectional_attention"):
        refused.append("use_bidirectional_attention=true (this decoder is modelled causal)")
    n_layers = req(get, "num_hidden_layers")
    fields: dict[str, Any] = dict(
        arch="decoder", d_model=d, n_layers=n_layers, n_heads=h, n_kv_heads=kv_heads(get, h),
        d_head=get("head_dim") or 256, d_ff=req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm",
        norm_position="sandwich", final_norm=True, bias=False, attn_bias=bool(get("attention_bias", False)),
        vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", True)), lm_head=True,
        norm_eps=float(get("rms_norm_eps") or 1e-6))
    if gemma3:
        fields["qk_norm"] = "head"
    fields.update(window_fields(raw, get, refused, n_layers, get("sliding_window"), default_pattern=6 if gemma3 else 2))
    notes = [f"FFN activation {act}: GeGLU, counted as the three-matrix gated FFN (swiglu)",
             "Gemma 2/3: four RMSNorms per layer (before and after attention and FFN)"]
    return fields, notes


def read_gemma2(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    return _read(raw, get, refused, gemma3=False)


def read_gemma3(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    return _read(raw, get, refused, gemma3=True)


READERS = {"gemma2": read_gemma2, "gemma3_text": read_gemma3}
