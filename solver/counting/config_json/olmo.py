"""OLMo (``olmo``) and OLMo 2 (``olmo2``): ``OlmoForCausalLM``, ``Olmo2ForCausalLM`` of transformers.

``olmo``: Llama's structure (SwiGLU, RoPE, untied head unless ``tie_word_embeddings``) with
LayerNorms that have no parameters (``norm_affine`` false: OlmoLayerNorm, neither γ nor β), before
each sub-layer and at the end; Q/K/V/O biases per ``attention_bias``.

``olmo2``: RMSNorm on each sub-layer's output inside the residual (``norm_position`` "reordered":
x + norm(f(x))), a QK-norm over all heads at once (q_norm over h·d_h, k_norm over h_kv·d_h:
``qk_norm`` "full"), final RMSNorm.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import check_act, kv_heads, req

NEUTRAL = frozenset({"clip_qkv", "rms_norm_eps"})


def _common(get, refused: list[str]) -> dict[str, Any]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    return dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                n_kv_heads=kv_heads(get, h), d_ff=req(get, "intermediate_size"), ffn="swiglu", norm_position="pre",
                final_norm=True, bias=False, attn_bias=bool(get("attention_bias", False)),
                vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
                tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True)


def read_olmo(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    fields = _common(get, refused)
    fields.update(norm="layernorm", norm_affine=False)
    return fields, ["OLMo: LayerNorms without parameters (no γ, no β)"]


def read_olmo2(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    fields = _common(get, refused)
    fields.update(norm="rmsnorm", norm_position="reordered", qk_norm="full",
                  norm_eps=float(get("rms_norm_eps") or 1e-6))
    return fields, ["OLMo 2: RMSNorm on each sub-layer's output (x + norm(f(x))), QK-norm over all heads"]


READERS = {"olmo": read_olmo, "olmo2": read_olmo2}
