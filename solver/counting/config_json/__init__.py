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
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
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
    # issue 20: keys that describe no architecture. Code location and metadata:
    "auto_map", "custom_pipelines", "tokenizer_class", "prefix", "finetuning_task", "task_specific_params",
    "_commit_hash", "name_or_path", "model_name", "license", "language",
    # special-token ids and the tokenizer's own figures (the vocabulary is vocab_size):
    "sep_token_id", "cls_token_id", "unk_token_id", "mask_token_id", "decoder_start_token_id",
    "forced_bos_token_id", "forced_eos_token_id", "n_special", "predict_special_tokens", "suppress_tokens",
    "begin_suppress_tokens",
    # training, parallelism and runtime settings:
    "gradient_checkpointing", "use_return_dict", "torchscript", "tf_legacy_loss", "use_bfloat16",
    "attn_implementation", "_attn_implementation", "_attn_implementation_autoset", "ep_size",
    "output_scores", "return_dict_in_generate", "pruned_heads", "tie_encoder_decoder", "cross_attention_hidden_size",
    "dropout", "hidden_dropout", "attention_probs_dropout", "embd_dropout", "initializer_factor", "init_std",
    "layerdrop", "use_flash_attention", "use_flash_attn", "fused_bias_fc", "fused_mlp",
    "fused_dropout_add_ln", "residual_in_fp32",
    # generation settings (transformers' GenerationConfig):
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty",
    "temperature", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "exponential_decay_length_penalty",
    "remove_invalid_values",
    # GPT-2's context of its causal-mask buffer (a buffer, not a parameter; the table is n_positions):
    "n_ctx",
    "use_mrope",  # Qwen2.5: multimodal RoPE off (a rotation, no parameters)
}

#: Issue 20: the type of every key a reader turns into a count or a switch. A value of another type,
#: a boolean where a number goes, a fraction where a count goes, a non-finite or out-of-range number,
#: or the string "false" where a boolean goes, is refused in one line naming the key. ``null`` is the
#: key's default (as transformers reads it).
COUNT_KEYS = frozenset({
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "max_position_embeddings", "n_embd", "n_layer", "n_head", "n_inner",
    "n_positions", "num_local_experts", "num_experts_per_tok", "n_routed_experts", "moe_intermediate_size",
    "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
    "max_window_layers", "moe_layer_freq", "num_experts", "num_labels",
    # keys of the model types other readers add (typed here once for all of them)
    "num_kv_heads", "rotary_dim", "ffn_dim", "word_embed_proj_dim", "shared_expert_intermediate_size",
    "decoder_sparse_step", "sliding_window_pattern", "n_layers", "n_heads", "d_model", "num_layers",
})
COUNT0_KEYS = frozenset({"n_shared_experts", "first_k_dense_replace", "type_vocab_size", "num_shared_experts",
                         "sliding_window"})  # 0: no window (Qwen2-MoE files with use_sliding_window false)
BOOL_KEYS = frozenset({
    "tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window", "use_bidirectional_attention",
    "add_cross_attention", "is_decoder",
    "parallel_attn", "use_parallel_residual", "new_decoder_architecture", "multi_query", "bias", "alibi",
    "qk_layernorm", "use_qk_norm", "do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine",
    "use_shared_expert_gate",
})
FRACTION_KEYS = frozenset({"partial_rotary_factor", "rotary_pct"})  # in (0, 1]
EPS_KEYS = frozenset({"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps"})
STR_KEYS = frozenset({"hidden_act", "hidden_activation", "activation_function", "position_embedding_type"})


def check_type(key: str, value: Any, where: str = "config") -> Any:
    """``value`` when it has ``key``'s type (:data:`COUNT_KEYS` ...); otherwise SolverInputError naming
    the key. Keys outside those sets: a non-finite number is refused, anything else passes."""
    import math

    def bad(what: str) -> SolverInputError:
        return SolverInputError(f"{where}: {key} must be {what} (got {json.dumps(value)[:40]})", param="config")

    if value is None:
        return value
    is_bool = isinstance(value, bool)
    if key in COUNT_KEYS or key in COUNT0_KEYS:
        low = 1 if key in COUNT_KEYS else 0
        if is_bool or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
            raise bad(f"a whole number >= {low}")
        if value < low or value > 2**53:
            raise bad(f"a whole number >= {low}")
        return int(value)
    if key in BOOL_KEYS:
        if not is_bool:
            raise bad("true or false")
        return value
    if key in EPS_KEYS:
        if is_bool or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise bad("a finite number > 0")
        return float(value)
    if key in FRACTION_KEYS:
        if is_bool or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise bad("a number in (0, 1]")
        return value
    if key in STR_KEYS:
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise bad("a finite number")
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        raise bad(f"the JSON boolean {value.strip().lower()}, not a string")
    return value

_ROPE_DECODERS = ("llama", "mistral", "mixtral", "qwen2", "gemma")


def read_hf_config(source: str | Path | dict[str, Any]) -> tuple[ModelConfig, list[str]]:
    """``(config, notes)`` for a config.json path or its dict (see the module docstring)."""
    raw, where = load_hf_json(source)
    kind = raw.get("model_type")
    if not isinstance(kind, str):
        raise SolverInputError(f"{where}: model_type must be a string (got {json.dumps(kind)[:40]})", param="config")
    chosen = type_of(raw)
    arch_note = None
    if chosen != kind:
        arch_note = (f"architectures names {raw['architectures'][0]}: read as {chosen!r} (model_type {kind!r} "
                     f"{'is not one qkv reads' if not reads_type(kind) else 'names another type'})")
        raw = {**raw, "model_type": chosen}
        kind = chosen
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
        raise SolverInputError(f"{where}: model_type {kind!r} is not one qkv reads ({len(KNOWN_TYPES)} types: "
                               "qkv solve params counts the others with transformers installed)", param="config")
    used: dict[str, None] = {"model_type": None}  # the keys read, in order (model_type chose the reader)
    refused: list[str] = []

    def get(key: str, default: Any = None) -> Any:
        used[key] = None
        value = check_type(key, raw.get(key), where)
        return default if value is None else value

    with bad_values(raw, used, where):
        fields, notes = reader(raw, get, refused)
        freq = get("moe_layer_freq")
    if freq not in (None, 1) and not any(r.startswith("moe_layer_freq") for r in refused):
        # every moe_layer_freq-th layer an MoE layer: only 1 (all) is modelled
        refused.append(f"moe_layer_freq={freq} (MoE layers only every {freq}th layer are not modelled; 1 is)")
    refuse_non_finite(raw, used, where)
    used["architectures"] = None
    settle_keys(raw, set(used), refused, notes, where, family_neutral)
    if arch_note:
        notes.insert(0, arch_note)
    try:
        with bad_values(raw, used, where):
            return ModelConfig(**fields, name=str(raw.get("_name_or_path") or kind)), notes
    except SolverInputError as e:
        raise SolverInputError(f"{where} ({kind}): {_key_of(e.param)}: {e.args[0]}", param="config") from None


#: The config.json key (of the types read here) behind a ModelConfig field, for error messages.
_FIELD_KEYS = {"d_model": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
               "n_kv_heads": "num_key_value_heads", "d_head": "head_dim", "d_ff": "intermediate_size",
               "max_positions": "max_position_embeddings", "n_experts": "num_local_experts / n_routed_experts",
               "top_k": "num_experts_per_tok", "d_ff_expert": "moe_intermediate_size",
               "first_dense_layers": "first_k_dense_replace", "norm_eps": "rms_norm_eps / layer_norm_eps"}


def _key_of(param: str | None) -> str:
    """``key (field)`` for a ModelConfig field (the key a reader filled it from), or the field."""
    if not param:
        return "config"
    key = _FIELD_KEYS.get(param)
    return f"{key} (ModelConfig.{param})" if key else param


#: The largest config.json read (a real one is a few KiB; with a long ``id2label`` a few hundred).
CONFIG_MAX_BYTES = 4 * 2**20


def read_config_bytes(path: str | Path, limit: int = CONFIG_MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a device (a link to
    ``/dev/zero``), a FIFO or a larger file is refused in one line before it is read."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise SolverInputError(f"cannot read {path}: {e.strerror or e}", param="config") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SolverInputError(f"cannot read {path}: not a regular file", param="config")
        if st.st_size > limit:
            raise SolverInputError(f"cannot read {path}: {st.st_size:,} bytes, more than the {limit // 2**20} MiB "
                                   "a config.json may hold", param="config")
        data = os.read(fd, limit + 1)
        while len(data) <= limit and (more := os.read(fd, limit + 1 - len(data))):
            data += more
        if len(data) > limit:
            raise SolverInputError(f"cannot read {path}: it grew past {limit // 2**20} MiB", param="config")
        return data
    except OSError as e:
        raise SolverInputError(f"cannot read {path}: {e.strerror or e}", param="config") from None
    finally:
        os.close(fd)


#: Keys whose value is text, a list or an object in real config.json files; any other key read
#: holding one of those is a suspect when the reader fails.
_STRUCTURED = frozenset({
    "_name_or_path", "activation_function", "hidden_act", "hidden_activation", "position_embedding_type",
    "model_type", "dense_act_fn", "feed_forward_proj", "torch_dtype", "dtype", "topk_method", "scoring_func",
    "architectures", "layer_types", "rope_scaling", "rope_parameters", "id2label", "label2id",
    "transformers_version", "problem_type", "summary_type", "summary_activation"})


def _suspects(raw: dict[str, Any], keys: Any) -> list[str]:
    """The keys among ``keys`` holding what no count can use: NaN, ±inf, an integer beyond 2^62,
    or text, a list or an object where real files hold a number or a boolean."""
    out = []
    for key in keys:
        value = raw.get(key)
        if isinstance(value, float) and not math.isfinite(value):
            out.append(key)
        elif isinstance(value, str | list | dict) and key not in _STRUCTURED:
            out.append(key)
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**62:
            out.append(key)
    return out


def refuse_non_finite(raw: dict[str, Any], used: dict[str, None], where: str) -> None:
    """One line naming the keys read whose value is NaN or infinite (JSON has neither; Python's
    reader takes ``NaN``/``Infinity``), or a decimal number beyond 2**53 (no count is exact there)."""
    bad = [f"{k}={raw[k]!r}" for k in used if isinstance(raw.get(k), float) and not math.isfinite(raw[k])]
    if bad:
        raise SolverInputError(f"{where} ({raw.get('model_type')}): {', '.join(bad)}: not a finite number",
                               param="config")
    huge = [f"{k}={raw[k]!r}" for k in used if isinstance(raw.get(k), float) and abs(raw[k]) > 2.0**53]
    if huge:
        raise SolverInputError(f"{where} ({raw.get('model_type')}): {', '.join(huge)}: a decimal number beyond "
                               "2**53 (write a whole number, if one is meant)", param="config")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@contextmanager
def bad_values(raw: dict[str, Any], used: dict[str, None], where: str) -> Iterator[None]:
    """Turn a value the reader cannot use (text where a number goes, NaN, a list, a number too
    large) into one line naming the key: the keys read that hold such values, else the last
    key read (the reader fails right after reading the value it cannot use)."""
    try:
        yield
    except SolverInputError:
        raise
    except (TypeError, ValueError, OverflowError, ArithmeticError, AssertionError) as e:
        keys = _suspects(raw, used) or list(used)[-1:]
        named = ", ".join(f"{k}={_shown(raw.get(k))}" for k in keys) or "a value"
        raise SolverInputError(f"{where} ({raw.get('model_type')}): {named}: not a usable value "
                               f"({str(e)[:100] or type(e).__name__})", param="config") from None


#: Issue 20's model types: model_type → the module of solver.counting.config_json that reads it
#: (its ``READERS[model_type]`` and ``NEUTRAL``).
FAMILIES = {
    "gpt_neox": "gpt_neox", "gptj": "gptj", "falcon": "falcon", "phi": "phi", "phi3": "phi", "opt": "opt",
    "bloom": "bloom", "olmo": "olmo", "olmo2": "olmo", "gemma2": "gemma", "gemma3_text": "gemma",
    "qwen3": "qwen", "qwen3_moe": "qwen", "qwen2_moe": "qwen", "deepseek_v3": "deepseek_v3",
    "gpt_oss": "gpt_oss", "granite": "granite", "llama4_text": "llama4",
}


#: Every model_type read here (the T5/ViT reader reads ``t5`` and ``vit`` besides).
KNOWN_TYPES = frozenset({"gpt2", "bert", "deepseek_v2", *_ROPE_DECODERS, *FAMILIES})

#: Issue 37: the reader is chosen by ``architectures[0]`` first (the class transformers builds), by
#: ``model_type`` second: a file of a new model_type whose class qkv reads (Kimi-K2's ``kimi_k2`` with
#: ``DeepseekV3ForCausalLM``) is read as that class's type.
ARCH_TYPES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2", "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text", "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen2MoeForCausalLM": "qwen2_moe", "DeepseekV2ForCausalLM": "deepseek_v2", "DeepseekV3ForCausalLM": "deepseek_v3",
    "GPT2LMHeadModel": "gpt2", "BertModel": "bert", "GPTNeoXForCausalLM": "gpt_neox", "GPTJForCausalLM": "gptj",
    "FalconForCausalLM": "falcon", "PhiForCausalLM": "phi", "Phi3ForCausalLM": "phi3", "OPTForCausalLM": "opt",
    "BloomForCausalLM": "bloom", "OlmoForCausalLM": "olmo", "Olmo2ForCausalLM": "olmo2", "GptOssForCausalLM": "gpt_oss",
    "GraniteForCausalLM": "granite", "Llama4ForCausalLM": "llama4_text",
}


def reads_type(kind: Any) -> bool:
    return isinstance(kind, str) and (kind in KNOWN_TYPES or kind in ("t5", "vit"))


def type_of(raw: dict[str, Any]) -> Any:
    """The model type whose reader reads ``raw``: the type of the class ``architectures[0]`` names where
    qkv reads that class and the file's own model_type is not that class's type... (issue 37), else
    ``model_type``. A file whose class and model_type are both read but disagree keeps its model_type
    only when they agree; otherwise the class decides."""
    kind = raw.get("model_type")
    archs = raw.get("architectures")
    named = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    by_class = ARCH_TYPES.get(named) if named else None
    if by_class is None or by_class == kind:
        return kind
    return by_class


def family_reader(kind: str):
    """``(reader, neutral keys)`` of an issue-20 model type (imported when first needed)."""
    import importlib

    module = importlib.import_module(f"solver.counting.config_json.{FAMILIES[kind]}")
    neutral = module.NEUTRAL | getattr(module, "WRAPPER_NEUTRAL", frozenset())
    return module.READERS[kind], neutral


def load_hf_json(source: str | Path | dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``(raw dict, where)`` of a config.json path (read from disk, at most
    :data:`CONFIG_MAX_BYTES`) or a dict."""
    if isinstance(source, dict):
        return dict(source), "config"
    data = read_config_bytes(source)
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise SolverInputError(f"cannot read {source}: {str(e)[:160]}", param="config") from None
    if not isinstance(raw, dict):
        raise SolverInputError(f"cannot read {source}: not a JSON object", param="config")
    return raw, str(source)


#: Issue 37: an unread key whose name says it may add parameters or change a size (a bias, a norm, an
#: expert, a layer, a width...) and whose value is set (not null, false, 0 or empty). Such a key is
#: checked against transformers' own class where transformers is installed, and refused where it is not.
_MAY_COUNT = ("bias", "norm", "expert", "layer", "head", "hidden", "size", "dim", "vocab", "window", "rank", "proj",
              "embed", "shared", "moe", "dense", "lora", "kv", "ffn", "mlp", "inner", "intermediate")

#: The prefix of the note that names the keys a reader did not read (issue 37).
NOT_READ = "not read: "


def unread_of(notes: list[str]) -> tuple[list[str], list[str]]:
    """``(unread, may_count)``: the keys the reader's ``notes`` name as not read, and those of them that
    may change a count (see :data:`_MAY_COUNT`)."""
    for note in notes:
        if note.startswith(NOT_READ):
            body = note[len(NOT_READ):]
            keys = body.split(" (")[0].split(", ")
            marked = [k.rstrip("*") for k in keys]
            return marked, [k.rstrip("*") for k in keys if k.endswith("*")]
    return [], []


def may_count(key: str, value: Any) -> bool:
    """Whether an unread ``key`` holding ``value`` may change a parameter count or a size."""
    if value is True:  # a switch turned on: a structure the reader may not build
        return True
    if value in (None, False, 0, "", [], {}) or isinstance(value, str):
        return False
    return any(w in key.lower() for w in _MAY_COUNT)


def settle_keys(raw: dict[str, Any], used: set[str], refused: list[str], notes: list[str], where: str,
                neutral: frozenset[str] | set[str] = frozenset(), strict: bool = False) -> None:
    """Every key read, named as without effect in ``notes``, named as not read, or refused: raise the
    refusals in one line. ``neutral``: the model type's own keys without effect, besides :data:`NEUTRAL`.

    Issue 37's policy: a key is refused only when it would change a figure and cannot be honoured (the
    reader's ``refused``). A key no rule knows is not refused: it is named in one ``not read: ...`` note
    (a ``*`` marks those that may change a count, :func:`may_count`; the command checks its count
    against transformers' class for them, or refuses them where transformers is not installed).
    ``strict``: refuse every key no rule knows (the T5/ViT reader, whose counts no transformers check follows)."""
    without_effect = NEUTRAL | set(neutral)
    unknown = sorted(set(raw) - used - without_effect)
    if strict and unknown:
        shown = [k if k.isprintable() else ascii(k) for k in unknown]
        refused.append(f"{', '.join(shown)} (no rule for {'this key' if len(unknown) == 1 else 'these keys'})")
    if refused:
        raise SolverInputError(f"{where} ({raw.get('model_type')}): cannot honour " + "; ".join(refused),
                               param="config")
    idle = sorted((set(raw) & without_effect) - used)
    if idle:
        notes.append("no effect on the counts: " + ", ".join(idle))
    if unknown:
        # a key is named as written, or as Python writes it where it holds a control or other unprintable
        # character (a record separator would break the one-line note in two)
        shown = [(k if k.isprintable() else ascii(k)) + ("*" if may_count(k, raw[k]) else "") for k in unknown]
        why = "no rule for these keys" if len(unknown) > 1 else "no rule for this key"
        star = "; * may change a count: checked against transformers' class" if any(s.endswith("*") for s in shown) else ""
        notes.append(f"{NOT_READ}{', '.join(shown)} ({why}{star})")


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
        # True, or None = follow bias (False): the preset's own form, so every route gives one ModelConfig
        fields["attn_bias"] = True if get("attention_bias", False) else None
        fields["ffn_bias"] = True if get("mlp_bias", False) else None
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
        kv_lora_rank=_req(get, "kv_lora_rank"), q_lora_rank=q_lora_rank(raw, get, notes, "DeepseekV2Config"),
        qk_rope_head_dim=_req(get, "qk_rope_head_dim"), v_head_dim=_req(get, "v_head_dim"))
    return fields, notes


#: The query compression rank transformers' DeepseekV2Config and DeepseekV3Config take when a file
#: leaves ``q_lora_rank`` out (transformers 5.x, both classes' ``__init__`` default); ``null`` means none.
Q_LORA_RANK_DEFAULT = 1536


def q_lora_rank(raw: dict, get, notes: list[str], cls: str) -> int:
    """The file's ``q_lora_rank`` (``null``: queries not compressed, 0); absent, the class's default,
    named in the notes (the model transformers builds from the file has it)."""
    if "q_lora_rank" not in raw:
        get("q_lora_rank")
        notes.append(f"q_lora_rank not given: {Q_LORA_RANK_DEFAULT}, {cls}'s default, as transformers builds the file")
        return Q_LORA_RANK_DEFAULT
    return get("q_lora_rank") or 0


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
