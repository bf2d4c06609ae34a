"""Qwen3 (``qwen3``), Qwen-MoE (``qwen2_moe``) and Qwen3-MoE (``qwen3_moe``): ``Qwen3ForCausalLM``,
``Qwen2MoeForCausalLM``, ``Qwen3MoeForCausalLM`` of transformers.

All: pre-RMSNorm, SwiGLU, RoPE, free ``head_dim`` (Qwen3), GQA, final norm, LM head tied per
``tie_word_embeddings``. Qwen3 and Qwen3-MoE: a QK-norm over d_head (``qk_norm`` "head") and Q/K/V/O
biases per ``attention_bias``. Qwen-MoE: Q/K/V biases per ``qkv_bias`` (default true), none on O.

Experts (``num_experts``, ``num_experts_per_tok``, width ``moe_intermediate_size``) on layer i when
``(i + 1) % decoder_sparse_step == 0`` and i is not in ``mlp_only_layers`` (a dense FFN of
``intermediate_size`` there): ``moe_every`` = decoder_sparse_step; ``mlp_only_layers`` must be the
first k layers (``first_dense_layers``). Qwen-MoE adds one shared expert of
``shared_expert_intermediate_size`` with its own d → 1 sigmoid gate.
A sliding window (``use_sliding_window``) on some layers only (``max_window_layers`` below the depth)
is refused, as for Qwen2.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import check_act, first, kv_heads, req

NEUTRAL = frozenset({"rms_norm_eps", "max_window_layers", "use_sliding_window", "norm_topk_prob", "use_mrope",
                     "router_aux_loss_coef", "output_router_logits"})


def _base(raw: dict, get, refused: list[str]) -> dict[str, Any]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    n_layers = req(get, "num_hidden_layers")
    fields: dict[str, Any] = dict(
        arch="decoder", d_model=d, n_layers=n_layers, n_heads=h, n_kv_heads=kv_heads(get, h), d_head=get("head_dim"),
        d_ff=req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True,
        bias=False, vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
        norm_eps=float(get("rms_norm_eps") or 1e-6))
    window = get("sliding_window")
    if get("use_sliding_window") and window:
        if (get("max_window_layers") or 0) < n_layers:
            refused.append(f"use_sliding_window with max_window_layers={raw.get('max_window_layers')} < "
                           "num_hidden_layers (windowed and full layers in blocks are not modelled)")
        fields["sliding_window"] = int(window)
    return fields


def _experts(raw: dict, get, refused: list[str], fields: dict[str, Any]) -> None:
    n_experts = first(get, "num_experts", "num_local_experts") or 0
    step = get("decoder_sparse_step") or 1
    only = get("mlp_only_layers") or []
    if n_experts <= 1:
        return
    if list(only) != list(range(len(only))):
        refused.append(f"mlp_only_layers={only} (dense layers other than the first k are not modelled)")
    fields.update(n_experts=n_experts, top_k=req(get, "num_experts_per_tok"),
                  d_ff_expert=req(get, "moe_intermediate_size"), first_dense_layers=len(only), moe_every=int(step))


def read_qwen3(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    fields = _base(raw, get, refused)
    fields.update(qk_norm="head", attn_bias=bool(get("attention_bias", False)))
    if fields["d_head"] is None:  # Qwen3Config's own default (not hidden_size / heads): found by issue 37's check
        fields["d_head"] = 128
    return fields, ["Qwen3: QK-norm (RMSNorm over d_head on Q and K)"]


def read_qwen3_moe(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    fields, notes = read_qwen3(raw, get, refused)
    _experts(raw, get, refused, fields)
    return fields, notes


def read_qwen2_moe(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    fields = _base(raw, get, refused)
    qkv_bias = get("qkv_bias")
    fields.update(attn_bias=True if qkv_bias is None else bool(qkv_bias), attn_out_bias=False)
    _experts(raw, get, refused, fields)
    shared = get("shared_expert_intermediate_size")
    if fields.get("n_experts") and shared:
        fields.update(n_shared_experts=1, d_ff_shared=shared, shared_expert_gate=True)
    return fields, ["Qwen-MoE: one shared expert of shared_expert_intermediate_size with a d_model → 1 sigmoid gate"]


READERS = {"qwen3": read_qwen3, "qwen3_moe": read_qwen3_moe, "qwen2_moe": read_qwen2_moe}
