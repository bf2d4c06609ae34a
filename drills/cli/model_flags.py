"""Click options generated from :class:`~solver.counting.config.ModelConfig`: every field is a flag.

``n_kv_heads`` is ``--n-kv-heads``; booleans are pairs (``--bias/--no-bias``,
``--tied-embeddings/--untied-embeddings``); ``--preset NAME`` starts from a preset and the
flags given override it. Every flag defaults to "not given" (``None``), so a command knows
what the user stated and can ask only for the fields its quantity depends on.

Reuse: decorate a command with ``@model_options`` and call
``model_config(kwargs, needs=PARAMS_NEEDS)`` (or ``given_fields(kwargs)`` for a command that
needs only a few fields, as the KV cache does).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

import click

from drills.output import InputError
from solver.counting.config import (
    ARCHS,
    FFNS,
    LORA_TARGETS,
    NORM_POSITIONS,
    NORMS,
    POSITIONS,
    QK_NORMS,
    ModelConfig,
)

#: The second name of a boolean pair (default: ``--no-<name>``).
_FALSE_NAMES = {"tied_embeddings": "--untied-embeddings"}

_CHOICES = {"arch": ARCHS, "ffn": FFNS, "norm": NORMS, "norm_position": NORM_POSITIONS, "pos": POSITIONS,
            "qk_norm": QK_NORMS}

_HELP = {
    "arch": "encoder (BERT), decoder (GPT) or encoder-decoder (Transformer, T5).",
    "d_model": "Model width d.",
    "n_layers": "Layers (encoder-decoder: encoder + decoder).",
    "n_heads": "Attention (query) heads h.",
    "n_kv_heads": "Key/value heads (1 = MQA, between = GQA; default n_heads).",
    "d_head": "Head size (default d_model / n_heads).",
    "d_ff": "FFN hidden width.",
    "ffn": "relu | gelu (two matrices) | swiglu (three).",
    "norm": "layernorm | rmsnorm.",
    "norm_position": "pre | post | sandwich (pre and post each sub-layer: Gemma 2) | reordered (on the output: OLMo 2).",
    "final_norm": "A norm after the last layer.",
    "bias": "Biases in linear layers and norms.",
    "attn_bias": "Q/K/V biases (default: --bias).",
    "attn_out_bias": "Output-projection bias (default: the Q/K/V choice).",
    "ffn_bias": "FFN biases (default: --bias).",
    "norm_bias": "LayerNorm β (default: --bias).",
    "vocab_size": "Vocabulary size V.",
    "max_positions": "Rows of a learned position table.",
    "pos": "learned | sinusoidal | rope | alibi | none.",
    "tied_embeddings": "LM head shares the token embedding.",
    "lm_head": "An output projection to the vocabulary.",
    "lm_head_bias": "A bias on the LM head.",
    "embedding_norm": "A norm after the embeddings (BERT).",
    "type_vocab_size": "Segment (token type) table rows (BERT: 2).",
    "pooler": "BERT's pooler (d×d + bias).",
    "n_classes": "Classifier outputs on the pooled vector (encoder).",
    "cls_token": "A learned [CLS] vector prepended (encoder).",
    "n_encoder_layers": "Encoder layers (encoder-decoder).",
    "n_decoder_layers": "Decoder layers (encoder-decoder).",
    "lora_rank": "LoRA rank r (0 = none).",
    "lora_targets": "LoRA targets, comma-separated from q,k,v,o,ffn.",
    "n_experts": "MoE experts per layer (1 = dense).",
    "top_k": "Experts active per token.",
    "norm_eps": "Norm epsilon (no effect on counts).",
    # issue 10 (first half): experts, latent attention, sliding window
    "n_shared_experts": "MoE: shared experts every token runs through (DeepSeek).",
    "d_ff_expert": "MoE: hidden width of each expert (default d_ff).",
    "first_dense_layers": "MoE: the first k layers keep a dense FFN of d_ff.",
    "kv_lora_rank": "Latent attention (MLA): compressed KV width d_c (0 = none).",
    "q_lora_rank": "MLA: compressed query width (0 = none).",
    "qk_rope_head_dim": "MLA: decoupled RoPE width d_R per head.",
    "v_head_dim": "MLA: value head size (default d_head).",
    "sliding_window": "Sliding window W: a token sees itself and W-1 before (0 = none).",
    "global_every": "With a window: every k-th layer attends globally (Gemma 2: 2).",
    # issue 20: the architectures people bring
    "parallel_block": "Attention and FFN in parallel: 0 = no, 1 = from one norm (GPT-J), 2 = two norms (GPT-NeoX).",
    "rotary_dim": "RoPE on the first k features of each head only (0 = all).",
    "norm_affine": "Norms with γ (and β); --no-norm-affine: parameter-free norms (OLMo).",
    "qk_norm": "none | head (a norm over d_head on Q and K: Qwen3) | full (over all heads: OLMo 2).",
    "position_offset": "Extra rows of the learned position table (OPT: 2).",
    "d_ff_shared": "MoE: hidden width of each shared expert (default: the expert width).",
    "shared_expert_gate": "MoE: a d_model -> 1 gate on the shared experts (Qwen-MoE).",
    "router_bias": "MoE: a bias on the router (gpt-oss).",
    "moe_every": "MoE on every k-th layer after the dense first layers (1 = all).",
    "attn_sinks": "A learned sink logit per head and layer (gpt-oss).",
}

#: Fields a parameter count needs when no preset is given.
PARAMS_NEEDS = ("d_model", "n_layers", "n_heads", "d_ff", "vocab_size")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


class _Targets(click.ParamType):
    name = "LIST"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        items = tuple(t.strip() for t in str(value).split(",") if t.strip())
        bad = [t for t in items if t not in LORA_TARGETS]
        if bad or not items:
            raise InputError(f"choose from {','.join(LORA_TARGETS)} (got {value!r})", "--lora-targets")
        return items


def _option(f: Any) -> Any:
    """The click option of one dataclass field."""
    name, kind = f.name, str(f.type)
    help_text = _HELP.get(name, "")
    if kind.startswith("bool"):
        off = _FALSE_NAMES.get(name, "--no-" + name.replace("_", "-"))
        return click.option(f"{flag(name)}/{off}", name, default=None, help=help_text)
    if name in _CHOICES:
        return click.option(flag(name), name, type=click.Choice(_CHOICES[name]), default=None, help=help_text)
    if name == "lora_targets":
        return click.option(flag(name), name, type=_Targets(), default=None, help=help_text)
    if kind.startswith("float"):
        return click.option(flag(name), name, type=float, default=None, help=help_text)
    return click.option(flag(name), name, type=click.IntRange(min=0), default=None, metavar="INT", help=help_text)


def model_fields() -> list[Any]:
    """The dataclass fields that are flags (all but ``name``)."""
    return [f for f in fields(ModelConfig) if f.name != "name"]


def model_options(func: Any) -> Any:
    """Add ``--preset`` and one flag per ModelConfig field."""
    for f in reversed(model_fields()):
        func = _option(f)(func)
    func = click.option("--config", "config_file", metavar="FILE", default=None,
                        type=click.Path(exists=True, dir_okay=False),
                        help="Start from a HuggingFace config.json on disk; flags override it.")(func)
    return click.option("--preset", metavar="NAME", default=None,
                        help="Start from a preset (qkv models list); flags override it.")(func)


def given_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ModelConfig fields the user stated (not ``None``)."""
    names = {f.name for f in model_fields()}
    return {k: v for k, v in kwargs.items() if k in names and v is not None}


def pop_model_kwargs(kwargs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Remove ``preset`` and the field flags from ``kwargs``; return (preset, fields given)."""
    names = {f.name for f in model_fields()}
    preset = kwargs.pop("preset", None)
    config_file = kwargs.pop("config_file", None)
    given = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    given = {k: v for k, v in given.items() if v is not None}
    if config_file:
        if preset:
            raise InputError("give --preset or --config, not both", "--config")
        return None, _from_config_file(config_file, given)
    return preset, given


def _from_config_file(path: str, given: dict[str, Any]) -> dict[str, Any]:
    """Every field of the HuggingFace config.json at ``path`` (solver.counting.config_json), the flags
    given on top of it (re-deriving what they change); the reader's notes go to stderr."""
    from solver.counting.config import override
    from solver.counting.config_json import read_hf_config
    from solver.errors import SolverInputError

    try:
        cfg, notes = read_hf_config(path)
        cfg, more = override(cfg, given)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    for note in (*notes, *more):
        click.echo(f"note: {note}", err=True)
    return {k: v for k, v in cfg.to_dict().items() if k != "name"}


def missing_message(missing: list[str], extra: str = "") -> str:
    flags = ", ".join(flag(m) for m in missing)
    return f"needs {flags}{extra} (or --preset NAME)"


def model_config(preset: str | None, given: dict[str, Any], needs: tuple[str, ...] = PARAMS_NEEDS) -> ModelConfig:
    """The configuration: the preset with the given flags on top, or the flags alone.

    Without a preset every field in ``needs`` must be given (a learned position table also
    needs ``--max-positions``); the other fields take ModelConfig's defaults, which
    :func:`assumed_defaults` lists so the output can say so.
    """
    if preset:
        from solver.counting.config import override
        from solver.counting.presets import get_config

        base = get_config(preset)
        if not given:
            return base
        cfg, notes = override(base, given)  # re-derives d_head / d_ff, or refuses in one line
        for note in notes:
            click.echo(f"note: {note}", err=True)
        return cfg
    missing = [n for n in needs if n not in given]
    pos = given.get("pos", ModelConfig.pos)
    if "max_positions" not in given and pos == "learned" and "max_positions" not in missing:
        missing.append("max_positions")
    if missing:
        raise InputError(missing_message(missing))
    return ModelConfig(**given)


def assumed_defaults(preset: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """Fields that took ModelConfig's default value because neither a preset nor a flag set them."""
    if preset:
        return {}
    out = {}
    for f in model_fields():
        if f.name not in given and f.default is not MISSING:
            out[f.name] = f.default
    return out
