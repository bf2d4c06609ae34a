"""Read a HuggingFace ``config.json`` (from disk, never the network) into a :class:`ModelConfig`.

``read_hf_config(path_or_dict)`` returns ``(config, notes)``. Every key of the file is accounted
for: read into a field, listed in ``notes`` as having no effect on what qkv counts (dropout
rates, token ids, initialisation, rotary base and scaling, softcapping...), or refused. A key
whose value qkv cannot honour (a structure the reference model does not have) raises
:class:`~solver.errors.SolverInputError` naming it, in one line; so does a key no rule knows.

Model types and the structure each fixes (the HuggingFace classes of ``transformers``):

- ``llama``, ``mistral``, ``mixtral``, ``qwen2``: pre-RMSNorm, SwiGLU, RoPE, final norm, LM head
  (tied per ``tie_word_embeddings``); GQA from ``num_key_value_heads``; ``head_dim`` free. Llama's
  ``attention_bias`` covers Q/K/V/O and ``mlp_bias`` the FFN; Qwen2 has Q/K/V biases and no O
  bias; Mistral/Mixtral have none. Mixtral: ``num_local_experts``/``num_experts_per_tok``.
  ``sliding_window`` (Mistral, Mixtral; Qwen2 only with ``use_sliding_window``) on every layer.
- ``gemma``: Llama's structure with a gated GELU FFN (GeGLU: three matrices, counted as swiglu)
  and a tied head.
- ``deepseek_v2``: latent attention (``kv_lora_rank``, ``q_lora_rank``, ``qk_nope_head_dim`` =
  d_head, ``qk_rope_head_dim``, ``v_head_dim``), routed and shared experts of
  ``moe_intermediate_size``, the first ``first_k_dense_replace`` layers dense.
- ``gpt2``: learned positions, pre-LayerNorm, biases everywhere, GELU, d_ff = ``n_inner`` or
  4·d, tied head (``GPT2LMHeadModel``).
- ``bert``: BertModel with its pooler (no MLM head), post-LayerNorm, segment table.

``t5`` and ``vit`` are counted by their own configs (solver.counting.t5, solver.counting.vit) and are
read by :mod:`solver.counting.config_json.t5_vit`; here they are refused in one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError

#: Keys with no effect on parameters, FLOPs or memory as qkv counts them (every model type).
NEUTRAL = {
    "_name_or_path", "architectures", "chunk_size_feed_forward", "dtype", "torch_dtype", "id2label", "label2id",
    "is_encoder_decoder", "model_type", "output_attentions", "output_hidden_states", "problem_type",
    "return_dict", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id", "initializer_range",
    "use_cache", "attention_dropout", "rope_theta", "rope_scaling", "rope_parameters", "pretraining_tp",
    "router_aux_loss_coef", "router_jitter_noise", "output_router_logits", "attn_pdrop", "embd_pdrop",
    "resid_pdrop", "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type",
    "summary_use_proj", "scale_attn_by_inverse_layer_idx", "scale_attn_weights", "reorder_and_upcast_attn",
    "attention_probs_dropout_prob", "hidden_dropout_prob", "classifier_dropout", "position_embedding_type",
    "routed_scaling_factor", "topk_method", "n_group", "topk_group", "norm_topk_prob", "aux_loss_alpha",
    "seq_aux", "scoring_func", "tie_word_embeddings", "max_window_layers", "layer_types", "use_sliding_window",
    "add_cross_attention", "is_decoder", "head_dim", "qk_head_dim", "hidden_act", "hidden_activation",
    "use_mrope",  # Qwen2.5: multimodal RoPE off (a rotation, no parameters)
}

_ROPE_DECODERS = ("llama", "mistral", "mixtral", "qwen2", "gemma")


def read_hf_config(source: str | Path | dict[str, Any]) -> tuple[ModelConfig, list[str]]:
    """``(config, notes)`` for a config.json path or its dict (see the module docstring)."""
    raw, where = load_hf_json(source)
    kind = raw.get("model_type")
    if kind in ("t5", "vit"):
        raise SolverInputError(f"{where} ({kind}): counted by its own {'T5' if kind == 't5' else 'ViT'} parameter count (qkv solve "
                               f"params --config), not as a decoder/encoder ModelConfig", param="config")
    reader = {"gpt2": _gpt2, "bert": _bert, "deepseek_v2": _deepseek_v2}.get(kind)
    if reader is None and kind in _ROPE_DECODERS:
        reader = _rope_decoder
    family_neutral: frozenset[str] = frozenset()
    if reader is None and kind in FAMILIES:  # issue 20: one module per family (config_json/<family>.py)
        reader, family_neutral = family_reader(kind)
    if reader is None:
        known = ", ".join(sorted(["gpt2", "bert", "deepseek_v2", *_ROPE_DECODERS, *FAMILIES]))
        raise SolverInputError(f"model_type {kind!r} is not read by qkv (it reads {known})", param="config")
    used: set[str] = set()
    refused: list[str] = []

    def get(key: str, default: Any = None) -> Any:
        used.add(key)
        return raw.get(key, default)

    fields, notes = reader(raw, get, refused)
    settle_keys(raw, used, refused, notes, where, family_neutral)
    try:
        return ModelConfig(**fields, name=str(raw.get("_name_or_path") or kind)), notes
    except SolverInputError as e:
        raise SolverInputError(f"{where} ({kind}): {e}", param="config") from None


#: Issue 20's model types: model_type → the module of solver.counting.config_json that reads it
#: (its ``READERS[model_type]`` and ``NEUTRAL``).
FAMILIES = {
    "gpt_neox": "gpt_neox", "gptj": "gptj", "falcon": "falcon", "phi": "phi", "phi3": "phi", "opt": "opt",
    "bloom": "bloom", "olmo": "olmo", "olmo2": "olmo", "gemma2": "gemma", "gemma3_text": "gemma",
    "qwen3": "qwen", "qwen3_moe": "qwen", "qwen2_moe": "qwen", "deepseek_v3": "deepseek_v3",
    "gpt_oss": "gpt_oss", "granite": "granite", "llama4_text": "llama4", "llama4": "llama4",
}


def family_reader(kind: str):
    """``(reader, neutral keys)`` of an issue-20 model type (imported when first needed)."""
    import importlib

    module = importlib.import_module(f"solver.counting.config_json.{FAMILIES[kind]}")
    neutral = module.NEUTRAL | getattr(module, "WRAPPER_NEUTRAL", frozenset())
    return module.READERS[kind], neutral


def load_hf_json(source: str | Path | dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``(raw dict, where)`` of a config.json path (read from disk) or a dict."""
    if isinstance(source, dict):
        return dict(source), "config"
    try:
        raw = json.loads(Path(source).read_text())
    except (OSError, ValueError) as e:
        raise SolverInputError(f"cannot read {source}: {e}", param="config") from None
    if not isinstance(raw, dict):
        raise SolverInputError(f"cannot read {source}: not a JSON object", param="config")
    return raw, str(source)


def settle_keys(raw: dict[str, Any], used: set[str], refused: list[str], notes: list[str], where: str,
                neutral: frozenset[str] | set[str] = frozenset()) -> None:
    """Every key read, or named as without effect in ``notes``, or refused: raise the refusals in one line.
    ``neutral``: the model type's own keys without effect, besides :data:`NEUTRAL`."""
    without_effect = NEUTRAL | set(neutral)
    unknown = sorted(set(raw) - used - without_effect)
    if unknown:
        refused.append(f"{', '.join(unknown)} (no rule for {'this key' if len(unknown) == 1 else 'these keys'})")
    if refused:
        raise SolverInputError(f"{where} ({raw.get('model_type')}): cannot honour " + "; ".join(refused),
                               param="config")
    idle = sorted((set(raw) & without_effect) - used)
    if idle:
        notes.append("no effect on the counts: " + ", ".join(idle))


def _req(get, key: str) -> Any:
    value = get(key)
    if value is None:
        raise SolverInputError(f"config.json has no {key!r}", param="config")
    return value


def _rope_decoder(raw: dict, get, refused: list[str]) -> tuple[dict, list[str]]:
    kind = raw["model_type"]
    notes: list[str] = []
    h = _req(get, "num_attention_heads")
    fields: dict[str, Any] = dict(
        arch="decoder", d_model=_req(get, "hidden_size"), n_layers=_req(get, "num_hidden_layers"), n_heads=h,
        n_kv_heads=get("num_key_value_heads") or h, d_head=get("head_dim"), d_ff=_req(get, "intermediate_size"),
        ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True, bias=False,
        vocab_size=_req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", kind == "gemma")), lm_head=True,
        norm_eps=float(get("rms_norm_eps", 1e-6)))
    if fields["n_kv_heads"] == h:
        fields["n_kv_heads"] = None
    act = get("hidden_act") or get("hidden_activation")
    if kind == "gemma":
        notes.append(f"FFN activation {act}: GeGLU, counted as the three-matrix gated FFN (swiglu)")
    elif act not in (None, "silu"):
        refused.append(f"hidden_act={act!r} (a gated FFN with silu is modelled)")
    if get("use_bidirectional_attention"):
        refused.append("use_bidirectional_attention=true (this decoder is modelled causal)")
    if kind == "llama":
        fields["attn_bias"] = bool(get("attention_bias", False))
        fields["ffn_bias"] = bool(get("mlp_bias", False))
    if kind == "gemma" and get("attention_bias"):
        fields["attn_bias"] = True
    if kind == "qwen2":
        fields["attn_bias"], fields["attn_out_bias"] = True, False  # Qwen2: Q/K/V biases, no O bias
        notes.append("Qwen2: biases on Q, K and V, none on O or the FFN")
    window = get("sliding_window")
    if kind == "qwen2" and not get("use_sliding_window"):
        window = None
    elif kind == "qwen2" and window:
        if (get("max_window_layers") or 0) < fields["n_layers"]:
            refused.append(f"use_sliding_window with max_window_layers={raw.get('max_window_layers')} "
                           f"< num_hidden_layers (windowed and full layers in blocks are not modelled)")
    if window:
        fields["sliding_window"] = int(window)
    if kind == "mixtral":
        fields["n_experts"] = _req(get, "num_local_experts")
        fields["top_k"] = _req(get, "num_experts_per_tok")
    return fields, notes


def _deepseek_v2(raw: dict, get, refused: list[str]) -> tuple[dict, list[str]]:
    notes = ["latent attention: the cache holds kv_lora_rank + qk_rope_head_dim per token and layer"]
    if get("num_key_value_heads") not in (None, raw.get("num_attention_heads")):
        refused.append("num_key_value_heads != num_attention_heads (latent attention has no K/V groups)")
    if get("mlp_bias"):
        refused.append("mlp_bias=true (HuggingFace merges the shared experts into one FFN with one bias)")
    fields = dict(
        arch="decoder", d_model=_req(get, "hidden_size"), n_layers=_req(get, "num_hidden_layers"),
        n_heads=_req(get, "num_attention_heads"), d_head=_req(get, "qk_nope_head_dim"),
        d_ff=_req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True,
        bias=False, attn_bias=True if get("attention_bias") else None, vocab_size=_req(get, "vocab_size"),
        max_positions=get("max_position_embeddings") or 1, pos="rope",
        tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
        norm_eps=float(get("rms_norm_eps", 1e-6)), n_experts=_req(get, "n_routed_experts"),
        top_k=_req(get, "num_experts_per_tok"), n_shared_experts=get("n_shared_experts") or 0,
        d_ff_expert=_req(get, "moe_intermediate_size"), first_dense_layers=get("first_k_dense_replace") or 0,
        kv_lora_rank=_req(get, "kv_lora_rank"), q_lora_rank=get("q_lora_rank") or 0,
        qk_rope_head_dim=_req(get, "qk_rope_head_dim"), v_head_dim=_req(get, "v_head_dim"))
    return fields, notes


def _gpt2(raw: dict, get, refused: list[str]) -> tuple[dict, list[str]]:
    d = _req(get, "n_embd")
    act = get("activation_function") or "gelu_new"
    if not act.startswith("gelu") and act != "relu":
        refused.append(f"activation_function={act!r}")
    if get("add_cross_attention"):
        refused.append("add_cross_attention=true (a GPT-2 with cross-attention is not modelled)")
    fields = dict(arch="decoder", d_model=d, n_layers=_req(get, "n_layer"), n_heads=_req(get, "n_head"),
                  d_ff=get("n_inner") or 4 * d, ffn="relu" if act == "relu" else "gelu", norm="layernorm",
                  norm_position="pre", final_norm=True, bias=True, vocab_size=_req(get, "vocab_size"),
                  max_positions=_req(get, "n_positions"), pos="learned",
                  tied_embeddings=bool(get("tie_word_embeddings", True)), lm_head=True,
                  norm_eps=float(get("layer_norm_epsilon", 1e-5)))
    return fields, ["GPT2LMHeadModel: the LM head counted (tied per tie_word_embeddings)"]


def _bert(raw: dict, get, refused: list[str]) -> tuple[dict, list[str]]:
    act = get("hidden_act") or "gelu"
    if act not in ("gelu", "relu"):
        refused.append(f"hidden_act={act!r}")
    if get("is_decoder") or get("add_cross_attention"):
        refused.append("is_decoder/add_cross_attention (BERT as a decoder is not modelled)")
    pos = get("position_embedding_type") or "absolute"
    if pos != "absolute":
        refused.append(f"position_embedding_type={pos!r} (relative position tables are not modelled here)")
    fields = dict(arch="encoder", d_model=_req(get, "hidden_size"), n_layers=_req(get, "num_hidden_layers"),
                  n_heads=_req(get, "num_attention_heads"), d_ff=_req(get, "intermediate_size"),
                  ffn=act, norm="layernorm", norm_position="post", final_norm=False, bias=True,
                  vocab_size=_req(get, "vocab_size"), max_positions=_req(get, "max_position_embeddings"),
                  pos="learned", type_vocab_size=get("type_vocab_size", 2), embedding_norm=True, pooler=True,
                  lm_head=False, tied_embeddings=False, norm_eps=float(get("layer_norm_eps", 1e-12)))
    return fields, ["BertModel with its pooler; no MLM/NSP head"]
