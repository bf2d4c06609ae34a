"""Read a HuggingFace T5 or ViT ``config.json`` (from disk, never the network) into qkv's own
:class:`~solver.counting.t5.T5Config` / :class:`~solver.counting.vit.ViTConfig`.

T5 and ViT are not :class:`~solver.counting.config.ModelConfig` models (T5's shared relative-bias tables,
ViT's patch embedding and class token), so they have their own small configs and counts;
``read_hf_own_config(path_or_dict)`` returns ``(config, notes)`` for them, with the same rule as
:func:`solver.counting.config_json.read_hf_config`: every key is read, named in ``notes`` as having no
effect on the count, or refused in one line naming it (:class:`~solver.errors.SolverInputError`).

Which model is counted (the HuggingFace class of ``transformers``), from ``architectures``:

- ``t5``: ``T5ForConditionalGeneration`` (also the old name ``T5WithLMHeadModel``, or no
  ``architectures``): encoder, decoder and LM head, tied per ``tie_word_embeddings`` (v1.0 true,
  v1.1 false); ``feed_forward_proj`` "ACT" or "gated-ACT" (v1.1's "gated-gelu": two input
  matrices); the activation itself has no effect on the count. Other T5 classes (``T5Model``,
  ``T5EncoderModel``, the classification heads) are refused. ``tie_word_embeddings`` is taken as
  written: v1.1's files say false (their checkpoints hold a V × d head; transformers < 5 builds it
  untied), while transformers ≥ 5 ties every T5 and writes true.
- ``vit``: ``ViTForImageClassification``: the encoder (no pooler) and a classifier of
  ``num_labels`` = len(``id2label``) classes; ``ViTModel`` or no ``architectures``: the encoder with
  its pooler, as ``ViTModel(config)`` (and ``AutoModel``) builds it, and no classifier.
  ``ViTForMaskedImageModeling`` is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from solver.counting.config_json import bad_values, load_hf_json, refuse_non_finite, settle_keys
from solver.counting.t5 import T5Config
from solver.counting.vit import ViTConfig
from solver.errors import SolverInputError

#: model_type values counted by their own config here.
OWN_MODEL_TYPES = ("t5", "vit")

#: T5 keys with no effect on the parameter count (besides solver.counting.config_json.NEUTRAL).
T5_NEUTRAL = frozenset({
    "relative_attention_max_distance",  # where the buckets turn logarithmic, not how many there are
    "dropout_rate", "layer_norm_epsilon", "initializer_factor", "scale_decoder_outputs", "n_positions",
    "decoder_start_token_id", "task_specific_params", "output_past", "gradient_checkpointing",
})

#: ViT keys with no effect on the parameter count (besides solver.counting.config_json.NEUTRAL).
VIT_NEUTRAL = frozenset({
    "layer_norm_eps", "pooler_act",
    "encoder_stride",  # only ViTForMaskedImageModeling's decoder uses it (that class is refused)
})

_T5_COUNTED = ("T5ForConditionalGeneration", "T5WithLMHeadModel")


def read_hf_own_config(source: str | Path | dict[str, Any]) -> tuple[T5Config | ViTConfig, list[str]]:
    """``(config, notes)`` for a T5 or ViT config.json path or its dict (see the module docstring)."""
    raw, where = load_hf_json(source)
    kind = raw.get("model_type")
    if kind not in OWN_MODEL_TYPES:
        raise SolverInputError(f"{where}: model_type {kind!r} is not T5 or ViT", param="config")
    used: dict[str, None] = {"model_type": None}  # the keys read, in order
    refused: list[str] = []

    def get(key: str, default: Any = None) -> Any:
        used[key] = None
        return raw.get(key, default)

    reader, neutral = (_t5, T5_NEUTRAL) if kind == "t5" else (_vit, VIT_NEUTRAL)
    with bad_values(raw, used, where):
        fields, notes = reader(get, refused)
    refuse_non_finite(raw, used, where)
    settle_keys(raw, set(used), refused, notes, where, neutral, strict=True)
    with bad_values(raw, used, where):
        return (T5Config if kind == "t5" else ViTConfig)(**fields), notes


def _req(get, key: str) -> Any:
    value = get(key)
    if value is None:
        raise SolverInputError(f"config.json has no {key!r}", param="config")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SolverInputError(f"config.json: {key} must be a positive integer, got {value!r}", param="config")
    return value


def _architecture(get, refused: list[str], counted: tuple[str, ...], default: str) -> str:
    archs = get("architectures") or [default]
    if not isinstance(archs, list) or len(archs) != 1:
        refused.append(f"architectures={archs!r} (one class is counted)")
        return default
    if archs[0] not in counted:
        refused.append(f"architectures={archs!r} (qkv counts {', '.join(counted)})")
        return default
    return archs[0]


def _t5(get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    _architecture(get, refused, _T5_COUNTED, "T5ForConditionalGeneration")
    proj = get("feed_forward_proj") or "relu"
    parts = str(proj).split("-")
    gated = len(parts) == 2 and parts[0] == "gated"
    if len(parts) > 2 or (len(parts) == 2 and not gated):
        refused.append(f"feed_forward_proj={proj!r} (expected 'ACT' or 'gated-ACT')")
    if get("is_gated_act") not in (None, gated):
        refused.append(f"is_gated_act={get('is_gated_act')!r} disagrees with feed_forward_proj={proj!r}")
    act = get("dense_act_fn")
    tied = get("tie_word_embeddings", True)
    if get("is_decoder"):
        refused.append("is_decoder=true (a T5 stack alone is not counted; the encoder-decoder is)")
    n_layers = _req(get, "num_layers")
    dec = get("num_decoder_layers")
    fields = dict(vocab_size=_req(get, "vocab_size"), d_model=_req(get, "d_model"), d_kv=_req(get, "d_kv"),
                  n_heads=_req(get, "num_heads"), d_ff=_req(get, "d_ff"), n_layers=n_layers,
                  n_decoder_layers=None if dec is None or dec == n_layers else _req(get, "num_decoder_layers"),
                  num_buckets=_req(get, "relative_attention_num_buckets"), gated_ffn=gated,
                  tie_embeddings=bool(tied))
    notes = [f"T5ForConditionalGeneration: encoder, decoder and LM head ({'tied' if tied else 'untied'}, "
             f"tie_word_embeddings={str(bool(tied)).lower()})",
             f"feed_forward_proj={proj!r}: {'gated, two input matrices' if gated else 'one input matrix'}; the "
             f"activation ({act or parts[-1]}) has no effect on the count"]
    if tied and get("scale_decoder_outputs") is False:
        # transformers >= 5 writes tie_word_embeddings=true for every T5 and marks v1.1 by this key instead
        notes.append("scale_decoder_outputs=false: a v1.1 model saved by transformers >= 5, which ties the LM "
                     "head; counted tied, as the file says (the v1.1 checkpoints themselves hold an untied head)")
    return fields, notes


def _side(get, key: str) -> int:
    """image_size / patch_size: an integer, or a square [h, w]."""
    value = get(key)
    if isinstance(value, (list, tuple)) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    if value is None or isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SolverInputError(f"config.json: {key} must be a positive integer (or a square [n, n]), got {value!r}",
                               param="config")
    return value


def _vit(get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    arch = _architecture(get, refused, ("ViTForImageClassification", "ViTModel"), "ViTModel")
    d = _req(get, "hidden_size")
    if get("qkv_bias", True) is not True:
        refused.append("qkv_bias=false (the ViT count has Q, K, V biases)")
    labels = get("id2label")
    n_labels = get("num_labels")
    if n_labels is None:
        n_labels = len(labels) if isinstance(labels, dict) else 2  # PretrainedConfig's default: 2 labels
    elif isinstance(n_labels, bool) or not isinstance(n_labels, int) or n_labels < 0:
        refused.append(f"num_labels={n_labels!r} (a count of classes, 0 or more)")
        n_labels = 0
    elif isinstance(labels, dict) and len(labels) != n_labels:
        refused.append(f"num_labels={n_labels} disagrees with id2label ({len(labels)} labels)")
    get("label2id")
    classify = arch == "ViTForImageClassification"
    pooled = get("pooler_output_size")
    if not classify and pooled not in (None, d):
        refused.append(f"pooler_output_size={pooled} != hidden_size={d} (the pooler is counted d × d)")
    fields = dict(image_size=_side(get, "image_size"), patch_size=_side(get, "patch_size"),
                  channels=_req(get, "num_channels") if get("num_channels") is not None else 3, d_model=d,
                  n_layers=_req(get, "num_hidden_layers"), n_heads=_req(get, "num_attention_heads"),
                  d_ff=_req(get, "intermediate_size"), n_classes=n_labels if classify else 0, pooler=not classify)
    head = (f"ViTForImageClassification: a classifier of num_labels = {n_labels} classes, no pooler"
            if classify else "ViTModel (architectures " + ("given" if get("architectures") else "absent")
            + "): the encoder with its pooler (d² + d), no classifier (id2label has no effect)")
    notes = [head]
    if not classify and pooled is not None:
        notes.append("pooler_output_size = hidden_size: the pooler is d × d")
    elif pooled is not None:
        notes.append("pooler_output_size: no effect (ViTForImageClassification has no pooler)")
    return fields, notes
