"""Llama 4's text model (``llama4_text``, or ``llama4``'s ``text_config``): ``Llama4ForCausalLM`` of
transformers.

Pre-RMSNorm, GQA, free ``head_dim``, no biases (``attention_bias``), final norm, untied head. Its
QK-norm (``use_qk_norm``) is an L2 norm without parameters. Layers listed in ``moe_layers`` (every
``interleave_moe_layer_step``-th: ``moe_every``) hold ``num_local_experts`` SwiGLU experts of
``intermediate_size``, a router without bias (top ``num_experts_per_tok``) and one shared expert of
the same width without a gate; the other layers a dense SwiGLU FFN of ``intermediate_size_mlp``.
Attention: chunked (``attention_chunk_size`` C) on the layers ``no_rope_layers`` marks 1, global
(no RoPE) on the others (every ``no_rope_layer_interval``-th): counted as a window of C
(``sliding_window``, ``global_every``), which is what transformers' cache holds per chunked layer; a
decode step there attends to (n − 1) mod C + 1 ≤ min(n, C) positions, so its attention FLOPs are an
upper bound. ``llama4``: the text model only (the vision encoder and projector are not counted).
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import check_act, kv_heads, req

NEUTRAL = frozenset({"rms_norm_eps", "attn_temperature_tuning", "attn_scale", "floor_scale", "router_jitter_noise",
                     "no_rope_layer_interval", "for_llm_compressor", "use_qk_norm", "cache_implementation",
                     "rope_scaling"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    n_layers = req(get, "num_hidden_layers")
    step = get("interleave_moe_layer_step") or 1
    moe_layers = get("moe_layers")
    if moe_layers is not None and list(moe_layers) != [i for i in range(n_layers) if (i + 1) % step == 0]:
        refused.append("moe_layers (other than every interleave_moe_layer_step-th layer)")
    fields: dict[str, Any] = dict(
        arch="decoder", d_model=d, n_layers=n_layers, n_heads=h, n_kv_heads=kv_heads(get, h), d_head=get("head_dim"),
        d_ff=req(get, "intermediate_size_mlp"), ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True,
        bias=False, attn_bias=bool(get("attention_bias", False)), vocab_size=req(get, "vocab_size"),
        max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
        norm_eps=float(get("rms_norm_eps") or 1e-5), n_experts=req(get, "num_local_experts"),
        top_k=req(get, "num_experts_per_tok"), n_shared_experts=1, d_ff_expert=req(get, "intermediate_size"),
        moe_every=int(step))
    notes = ["Llama 4: MoE layers with one shared expert; the QK-norm (L2) has no parameters"]
    chunk = get("attention_chunk_size")
    no_rope = get("no_rope_layers")
    if chunk:
        interval = raw.get("no_rope_layer_interval") or 4
        if no_rope is None:
            no_rope = [int((i + 1) % interval != 0) for i in range(n_layers)]
        full = [i + 1 for i, chunked in enumerate(no_rope) if not chunked]
        if full and full != list(range(full[0], n_layers + 1, full[0])):
            refused.append("no_rope_layers (global layers other than every k-th are not modelled)")
        elif any(no_rope):
            fields.update(sliding_window=int(chunk), global_every=full[0] if full else 0)
            notes.append(f"chunked attention (C = {chunk}) counted as a window of C: the KV cache transformers "
                         "holds; decode attention FLOPs an upper bound")
    return fields, notes


def read_llama4(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``llama4`` (the multimodal wrapper): read its ``text_config`` (the rest is refused by
    :func:`solver.counting.config_json.read_hf_config` only if it is not in ``WRAPPER_NEUTRAL``)."""
    from solver.counting.config_json import read_hf_config

    text = get("text_config")
    if not isinstance(text, dict):
        refused.append("text_config (needs the text model's config object)")
        return {}, []
    for key in raw:
        if key in WRAPPER_NEUTRAL:
            get(key)
    cfg, notes = read_hf_config({"model_type": "llama4_text", **{k: v for k, v in text.items() if k != "model_type"}})
    fields = {k: v for k, v in cfg.to_dict().items() if k != "name"}
    fields["lora_targets"] = tuple(fields["lora_targets"])
    return fields, ["llama4: the text model only (text_config); the vision encoder and projector are not counted",
                    *notes]


#: Keys of the ``llama4`` wrapper around the text model (image tokens, the vision model).
WRAPPER_NEUTRAL = frozenset({"vision_config", "boi_token_index", "eoi_token_index", "image_token_index",
                             "vision_feature_layer", "vision_feature_select_strategy", "tie_word_embeddings"})

READERS = {"llama4_text": read}
