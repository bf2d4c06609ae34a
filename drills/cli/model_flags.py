"""Click options generated from :class:`~solver.counting.config.ModelConfig`: every field is a flag.

``n_kv_heads`` is ``--n-kv-heads``; booleans are pairs (``--bias/--no-bias``,
``--tied-embeddings/--untied-embeddings``); ``--preset NAME`` starts from a preset and the
flags given override it. Every flag defaults to "not given" (``None``), so a command knows
what the user stated and can ask only for the fields its quantity depends on.

Reuse: decorate a command with ``@model_options``, then ``spec = pop_model(kwargs)`` and
``cfg = spec.config(PARAMS_NEEDS)`` (or ``spec.kv_config()`` for a command that needs only the KV
cache's fields). Issue 20: every route (``--preset``, ``--config FILE``, the flags alone, a preset or a
config with flags on top) gives ONE :class:`ModelConfig`, and a command computes from it alone;
``ignored_fields`` names what the command had no use for (``ignored: sliding_window (no KV cache in
this count)``), so no field is dropped without a word.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from dataclasses import field as dc_field
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

#: Names people guess for a field, beside ``--d-model`` etc.: HuggingFace config.json keys
#: (``hidden_size``, ``num_attention_heads``, ...) and the short words of papers and books.
ALIASES = {
    "d_model": ("--hidden-size", "--hidden"),
    "n_layers": ("--num-hidden-layers", "--layers"),
    "n_heads": ("--num-attention-heads", "--heads"),
    "n_kv_heads": ("--num-key-value-heads", "--kv-heads"),
    "d_head": ("--head-dim",),
    "d_ff": ("--intermediate-size", "--ffn-dim"),
    "vocab_size": ("--vocab",),
    "max_positions": ("--max-position-embeddings",),
    "n_experts": ("--num-experts",),
    "top_k": ("--num-experts-per-tok",),
}

#: Integer fields measured in tokens or features (suffix k = 1024: ``--d-model 4k``); the
#: vocabulary takes no suffix (drills.cli.numbers); the rest are plain counts.
SIZE_FIELDS = {"d_model", "d_head", "d_ff", "max_positions", "d_ff_expert", "sliding_window", "kv_lora_rank",
               "q_lora_rank", "qk_rope_head_dim", "v_head_dim"}
EXACT_FIELDS = {"vocab_size", "type_vocab_size"}
#: Layer counts are looped over (per-layer windows and experts): at most this many.
LAYER_FIELDS = {"n_layers", "n_encoder_layers", "n_decoder_layers", "first_dense_layers", "global_every"}
MAX_LAYERS = 100_000

#: The help section the model flags are listed under (drills.cli.help_groups).
GROUP = "Model (--preset, --config, or each field)"

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
    from drills.cli.numbers import Int, Real

    if kind.startswith("float"):
        return click.option(flag(name), *ALIASES.get(name, ()), name, type=Real(min=0), default=None, help=help_text)
    kind = "size" if name in SIZE_FIELDS else "exact" if name in EXACT_FIELDS else "plain"
    most = MAX_LAYERS if name in LAYER_FIELDS else None
    return click.option(flag(name), *ALIASES.get(name, ()), name, type=Int(0, most, kind=kind), default=None,
                        help=help_text)


def model_fields() -> list[Any]:
    """The dataclass fields that are flags (all but ``name``)."""
    return [f for f in fields(ModelConfig) if f.name != "name"]


def _grouped(func: Any, n: int) -> Any:
    """Mark the last ``n`` options added to ``func`` as model flags (their own help section)."""
    for p in getattr(func, "__click_params__", [])[-n:]:
        p.help_group = GROUP
    return func


def preset_options(func: Any, what: str = "flags override it") -> Any:
    """Add ``--preset NAME`` and ``--config FILE`` only (a command with its own size flags)."""
    func = click.option("--config", "config_file", metavar="FILE", default=None,
                        type=click.Path(exists=True, dir_okay=False),
                        help=f"Start from a HuggingFace config.json on disk; {what}.")(func)
    func = click.option("--preset", "--like", "preset", metavar="NAME", default=None,
                        help=f"Start from a preset (qkv models list); {what}. --like NAME: that model's structure "
                             "(FFN, norms, positions, biases, tying) with your sizes.")(func)
    return _grouped(func, 2)


def model_options(func: Any) -> Any:
    """Add ``--preset``, ``--config`` and one flag per ModelConfig field."""
    fs = model_fields()
    for f in reversed(fs):
        func = _option(f)(func)
    func = _grouped(func, len(fs))
    return preset_options(func)


def preset_spec(kw: dict[str, Any]) -> tuple[ModelSpec, ModelConfig | None]:
    """Pop ``--preset``/``--config`` from ``kw``: the description and the one ModelConfig it names
    (None when neither), for a command whose own flags (``--d-model``, ``--n-heads``, ...) win over
    the model's fields. The description names, with :func:`name_model`, what the command ignores."""
    preset, path = kw.pop("preset", None), kw.pop("config_file", None)
    if preset and path:
        raise InputError("give --preset or --config, not both", "--config")
    spec = ModelSpec(preset=preset, config_file=path)
    return spec, spec.base()


def name_model(r: Any, spec: ModelSpec, cfg: ModelConfig | None, unused: dict[str, str] | None = None, *,
               uses: tuple[str, ...] | None = None, why: str = "") -> None:
    """Name the model's route and the fields this command had no use for in ``r.convention``
    (``ignored``): those of ``unused`` (field -> why), or with ``uses`` every notable field outside it
    (each with ``why``). Never a field dropped without a word (issue 20)."""
    if cfg is None:
        return
    r.convention.update(spec.convention())
    ignored = ignored_fields(cfg, spec, unused, uses=uses, why=why)
    if ignored:
        r.convention["ignored"] = ignored


def given_fields(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ModelConfig fields the user stated (not ``None``)."""
    names = {f.name for f in model_fields()}
    return {k: v for k, v in kwargs.items() if k in names and v is not None}


def pop_model_kwargs(kwargs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Remove ``preset`` and the field flags from ``kwargs``; return (preset, fields given).

    Kept for callers that want the two parts; a ``--config`` file is read into ``given`` (every
    field). Commands use :func:`pop_model` and :meth:`ModelSpec.config` (one ModelConfig per route)."""
    spec = pop_model(kwargs)
    if spec.config_file:
        cfg = spec.config()
        return None, {k: v for k, v in cfg.to_dict().items() if k != "name"}
    return spec.preset, spec.given


@dataclass
class ModelSpec:
    """How the user described a model: ``--preset``, ``--config FILE``, field flags, or a base with
    flags on top. :meth:`config` turns every route into one :class:`ModelConfig` (issue 20)."""

    preset: str | None = None
    config_file: str | None = None
    given: dict[str, Any] = dc_field(default_factory=dict)
    _base: ModelConfig | None = dc_field(default=None, repr=False)
    #: what the config.json reader said (keys without effect on the counts, conventions it applied)
    notes: list[str] = dc_field(default_factory=list)

    @property
    def stated(self) -> bool:
        return bool(self.preset or self.config_file or self.given)

    @property
    def route(self) -> str:
        """``preset``, ``config``, ``flags``, ``preset+flags`` or ``config+flags`` (``none``)."""
        head = "preset" if self.preset else "config" if self.config_file else ""
        if not head:
            return "flags" if self.given else "none"
        return head + ("+flags" if self.given else "")

    @property
    def has_base(self) -> bool:
        return bool(self.preset or self.config_file)

    def base(self) -> ModelConfig | None:
        """The preset's or the config file's ModelConfig (before the flags), or None."""
        if self._base is None and self.has_base:
            if self.preset:
                from solver.counting.presets import get_config

                self._base = get_config(self.preset)
            else:
                self._base, self.notes = _read_config_file(str(self.config_file))
        return self._base

    def convention(self) -> dict[str, Any]:
        """``{"model": route, "config_file_notes": [...]}`` for a command's convention (``--explain``)."""
        out: dict[str, Any] = {"model": self.route + (f" ({self.preset or self.config_file})" if self.has_base
                                                      else "")}
        if self.notes:
            out["config_file_notes"] = list(self.notes)
        return out

    def config(self, needs: tuple[str, ...] = PARAMS_NEEDS, *, positions_matter: bool = True) -> ModelConfig:
        """The one ModelConfig of this description: the base with the flags on top (re-deriving what
        they change, or refused in one line), or the flags alone (every field of ``needs`` given; a
        learned position table also needs ``--max-positions`` unless ``positions_matter`` is False)."""
        from solver.counting.config import override
        from solver.errors import SolverInputError

        base = self.base()
        if base is not None:
            if not self.given:
                return base
            try:
                cfg, notes = override(base, self.given)
            except SolverInputError as e:
                where = "--config" if self.config_file else (flag(e.param) if e.param else None)
                raise InputError(e.args[0], where) from None
            for note in notes:
                click.echo(f"note: {note}", err=True)
            return cfg.replace(name=f"{base.name} with flags" if base.name else "")
        given = dict(self.given)
        missing = [n for n in needs if n not in given]
        if not positions_matter:
            given.setdefault("pos", "none")  # positions change no KV size: spare --max-positions
        pos = given.get("pos", ModelConfig.pos)
        if "max_positions" not in given and pos == "learned" and "max_positions" not in missing:
            missing.append("max_positions")
        if missing:
            raise InputError(missing_message(missing))
        try:
            return ModelConfig(**given)
        except SolverInputError as e:
            raise InputError(e.args[0], flag(e.param) if e.param else None) from None

    def kv_config(self, also: tuple[str, ...] = ()) -> ModelConfig:
        """The ModelConfig a KV-cache size needs: from a base, or from ``--n-layers``, the heads
        (``--n-kv-heads`` or ``--n-heads``) and the head size (``--d-head``, or ``--d-model`` with
        ``--n-heads``); the other fields keep ModelConfig's defaults (no effect on the cache). ``also``:
        flags the command misses besides, named in the same line."""
        if self.has_base or self.given.get("arch") == "encoder-decoder":
            return self.config(("n_layers", "n_heads", "d_model"), positions_matter=False)
        if self.given.get("arch") == "encoder":
            raise InputError("an encoder has no KV cache (it does not decode)", "--arch")
        g = self.given
        mla = bool(g.get("kv_lora_rank"))
        need = []
        if "n_layers" not in g:
            need.append("--n-layers")
        if "n_kv_heads" not in g and "n_heads" not in g and not mla:
            need.append("--n-kv-heads (or --n-heads)")
        if "d_head" not in g and not ("d_model" in g and "n_heads" in g) and not mla:
            need.append("--d-head (or --d-model and --n-heads)")
        if need:
            raise InputError(f"the KV cache needs {', '.join([*need, *also])} (or --preset NAME)")
        given = dict(g)
        if "n_heads" not in given:  # the query heads change no cache size: take them as the KV heads
            given["n_heads"] = given.get("n_kv_heads", 1)
        if "d_head" not in given and "d_model" not in given:
            given["d_model"] = given["n_heads"] * 2  # latent attention: the cache needs no head size
        return ModelSpec(given=given).config(("n_layers", "n_heads"), positions_matter=False)


def pop_model(kwargs: dict[str, Any]) -> ModelSpec:
    """Remove ``--preset``, ``--config`` and the field flags from ``kwargs``: the user's model description."""
    names = {f.name for f in model_fields()}
    preset = kwargs.pop("preset", None)
    config_file = kwargs.pop("config_file", None)
    given = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    given = {k: v for k, v in given.items() if v is not None}
    if config_file and preset:
        raise InputError("give --preset or --config, not both", "--config")
    return ModelSpec(preset=preset, config_file=config_file, given=given)


def resolve_model(kwargs: dict[str, Any], needs: tuple[str, ...] = PARAMS_NEEDS) -> tuple[ModelSpec, ModelConfig]:
    """``pop_model`` then ``ModelSpec.config``: the one ModelConfig of any route."""
    spec = pop_model(kwargs)
    return spec, spec.config(needs)


def _read_config_file(path: str) -> tuple[ModelConfig, list[str]]:
    """The ModelConfig of the HuggingFace config.json at ``path`` (solver.counting.config_json) and the
    reader's notes (also printed to stderr)."""
    from solver.counting.config_json import read_hf_config
    from solver.errors import SolverInputError

    try:
        cfg, notes = read_hf_config(path)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    notes = list(notes)
    from solver.counting.config_json import unread_of

    if unread_of(notes)[1]:  # issue 37: keys not read that may change a count: checked against transformers' class
        from drills.cli.solve_hf_meta import _raw, check_unread

        raw = _raw(path)
        checked = check_unread(path, raw, cfg, notes) if raw is not None else None
        if checked:
            notes.append(checked)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    return cfg, notes


#: Fields worth naming when a count has no use for them although the model sets them (a preset or a
#: config.json sets every field; these are the ones a reader could expect to change the figure).
NOTABLE = ("sliding_window", "global_every", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim",
           "n_experts", "top_k", "n_shared_experts", "d_ff_expert", "first_dense_layers", "lora_rank")

#: Fields that change no count qkv makes (never named).
NO_COUNT = ("norm_eps",)

#: What the KV cache reads of a ModelConfig.
KV_USES = ("arch", "n_layers", "n_encoder_layers", "n_decoder_layers", "n_heads", "n_kv_heads", "d_head", "d_model",
           "kv_lora_rank", "qk_rope_head_dim", "sliding_window", "global_every")

#: Why a parameter count (and the weights and Adam state built on it) ignores the attention span.
SPAN_UNUSED = {"sliding_window": "a window changes which positions attend, not a parameter",
               "global_every": "a window changes which positions attend, not a parameter"}


def ignored_fields(cfg: ModelConfig, spec: ModelSpec, unused: dict[str, str] | None = None, *,
                   uses: tuple[str, ...] | None = None, why: str = "") -> dict[str, str]:
    """``{field: why}`` for the fields the model sets that this count has no use for: every flag the
    user gave and every :data:`NOTABLE` field away from its default, among ``unused`` (field → why)
    or, with ``uses``, outside it (then ``why`` for each)."""
    defaults = {f.name: f.default for f in model_fields() if f.default is not MISSING}
    set_fields = [n for n in NOTABLE if getattr(cfg, n) != defaults.get(n)] + list(spec.given)
    out: dict[str, str] = {}
    for name in dict.fromkeys(set_fields):
        if name in NO_COUNT:  # stated by the user: named, never dropped without a word
            out[name] = "it changes no count qkv makes"
            continue
        if unused is not None and name in unused:
            out[name] = unused[name]
        elif uses is not None and name not in uses:
            out[name] = why
    return out


def ignored_text(ignored: dict[str, str]) -> str:
    """``ignored: sliding_window (why); n_experts, top_k (why)``: fields that share a reason, once."""
    by_why: dict[str, list[str]] = {}
    for k, v in ignored.items():
        by_why.setdefault(v, []).append(k)
    return "ignored: " + "; ".join(f"{', '.join(ks)} ({v})" for v, ks in by_why.items())


def missing_message(missing: list[str], extra: str = "") -> str:
    flags = ", ".join(flag(m) for m in missing)
    return f"needs {flags}{extra} (or --preset NAME)"


def model_config(preset: str | None, given: dict[str, Any], needs: tuple[str, ...] = PARAMS_NEEDS) -> ModelConfig:
    """The configuration: the preset with the given flags on top, or the flags alone
    (:meth:`ModelSpec.config`; kept for callers holding the two parts)."""
    return ModelSpec(preset=preset, given=given).config(needs)


def assumed_defaults(preset: str | None, given: dict[str, Any]) -> dict[str, Any]:
    """Fields that took ModelConfig's default value because neither a preset nor a flag set them."""
    if preset:
        return {}
    out = {}
    for f in model_fields():
        if f.name not in given and f.default is not MISSING:
            out[f.name] = f.default
    return out
