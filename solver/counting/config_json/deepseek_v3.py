"""DeepSeek-V3 (``deepseek_v3``): ``DeepseekV3ForCausalLM`` of transformers.

DeepSeek-V2's structure (latent attention; routed and shared experts of ``moe_intermediate_size``;
the first ``first_k_dense_replace`` layers dense, of ``intermediate_size``), read as
``solver.counting.config_json`` reads ``deepseek_v2``. The router's ``e_score_correction_bias``
(aux-loss-free balancing, one per routed expert) is a buffer in transformers, not a parameter, and
is not counted; the multi-token-prediction module (``num_nextn_predict_layers``) is not built by
transformers and not counted (DeepSeek-V3's 671B excludes it; the released checkpoint's 685B holds it).
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import kv_heads, req

NEUTRAL = frozenset({"num_nextn_predict_layers", "rope_interleave", "rms_norm_eps", "ep_size"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    from solver.counting.config_json import q_lora_rank

    early: list[str] = []
    h = req(get, "num_attention_heads")
    if kv_heads(get, h) is not None:
        refused.append("num_key_value_heads != num_attention_heads (latent attention has no K/V groups)")
    freq = get("moe_layer_freq")
    if freq not in (None, 1):
        refused.append(f"moe_layer_freq={freq} (MoE on every layer after the dense ones is modelled)")
    fields = dict(
        arch="decoder", d_model=req(get, "hidden_size"), n_layers=req(get, "num_hidden_layers"), n_heads=h,
        d_head=req(get, "qk_nope_head_dim"), d_ff=req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm",
        norm_position="pre", final_norm=True, bias=False, attn_bias=True if get("attention_bias") else None,
        vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
        norm_eps=float(get("rms_norm_eps") or 1e-6), n_experts=req(get, "n_routed_experts"),
        top_k=req(get, "num_experts_per_tok"), n_shared_experts=get("n_shared_experts") or 0,
        d_ff_expert=req(get, "moe_intermediate_size"), first_dense_layers=get("first_k_dense_replace") or 0,
        kv_lora_rank=req(get, "kv_lora_rank"), q_lora_rank=q_lora_rank(raw, get, early, "DeepseekV3Config"),
        qk_rope_head_dim=req(get, "qk_rope_head_dim"), v_head_dim=req(get, "v_head_dim"))
    notes = ["latent attention: the cache holds kv_lora_rank + qk_rope_head_dim per token and layer",
             "DeepSeek-V3: the router's e_score_correction_bias is a buffer (not counted); the multi-token-prediction "
             "layers (num_nextn_predict_layers) are not part of the model transformers builds (not counted)", *early]
    return fields, notes


READERS = {"deepseek_v3": read}
