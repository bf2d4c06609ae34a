"""Count a config.json of a type qkv does not model by building transformers' own class on the meta device.

``count_with_transformers(raw)`` builds the class the file names (``architectures[0]``, when
transformers has it) on PyTorch's meta device: every parameter has a shape and no storage, nothing
is downloaded and no weight is read. Where that class cannot be built, ``AutoModelForCausalLM`` (or
the bare ``AutoModel``) is built instead and :attr:`HFMetaCount.fallback` says why and what that
leaves out (issue 37: a vision-language file counted as its text model alone was silently wrong).
The count is ``sum(p.numel() for p in model.parameters())`` (a tied tensor once) with a per-module
breakdown (layer indices folded: ``model.layers.*.self_attn.q_proj``), the checkpoint's parts (text
model, vision tower, projector, heads, ...) and, for a mixture of experts, the parameters one token
uses (the experts found among the modules, top-k from the router or the config). It is
transformers' count of the class its installed version builds, not qkv's derivation: the output
says so.

No config causes a network request, a token read or a download (issue 42): the build runs with
the Hub's offline switch on, pretrained backbones off, a backbone named only by a Hub name refused
in one line, and an audit hook that refuses any socket, subprocess or read under the Hugging Face
home (tokens, caches) while it runs. ``auto_map`` is dropped (no module beside the config is
imported) and no file but the config.json is read.

Imported only by the command that needs it; ``transformers`` is imported inside the function.
Without it the refusal names what to install.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from solver.errors import SolverInputError

INSTALL_HINT = "pip install transformers torch (or the project's hf extra: pip install -e '.[hf]')"

# Bounds on the build (issue 28): transformers makes one Python module object per layer (and per
# expert), about 4,000 a second on the shared 2-core machine (a 1,000-layer GPTBigCode, 12,007
# modules: 3.0 s); before these bounds a config.json with n_layer 100000 or 10^20 ran past 2 minutes.
#: A layer count above this is refused before building (published models have at most a few hundred).
MAX_LAYERS = 1000
#: The build stops, refused in one line, past this many modules or seconds (MoE experts, sub-configs).
MAX_MODULES = 200_000
MAX_BUILD_S = 60.0
_LAYER_KEY = re.compile(r"(^|_)(n_layer|layers)$")
_CLASS_NAME = re.compile(r"[A-Z][A-Za-z0-9_]{0,99}")


class _TooBig(Exception):
    """Raised from the module registration hook to stop a build past MAX_MODULES or MAX_BUILD_S."""


# ---- issue 42: no network, no token, no download ------------------------------------------------
_SEALED = threading.local()
_HOOKED = [False]
#: Environment switches set before transformers/huggingface_hub are imported by this module.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "DISABLE_TELEMETRY": "1"}


def _hf_homes() -> tuple[str, ...]:
    """Folders a Hub client reads tokens or cached downloads from (none of which a count may read)."""
    home = os.path.expanduser("~")
    dirs = {os.path.join(home, ".cache", "huggingface"), os.path.join(home, ".huggingface")}
    for var in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_TOKEN_PATH"):
        if os.environ.get(var):
            dirs.add(os.environ[var])
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        dirs.add(os.path.join(xdg, "huggingface"))
    return tuple(os.path.realpath(d) for d in dirs)


def _audit(event: str, args: tuple) -> None:
    if not getattr(_SEALED, "on", False):
        return
    blocked = None
    if event.startswith("socket.") or event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                                                "urllib.Request", "http.client.connect"):
        blocked = event
    elif event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        real = os.path.realpath(path) if os.path.isabs(path) else os.path.realpath(os.path.join(os.getcwd(), path))
        if any(real == d or real.startswith(d + os.sep) for d in _SEALED.homes) or os.path.basename(real) in (
                "token", "stored_tokens", ".netrc", "_netrc"):
            blocked = f"open {path}"
    if blocked:
        _SEALED.blocked.append(blocked)
        raise PermissionError(f"qkv counts a config.json offline: {blocked} refused")


@contextmanager
def sealed() -> Iterator[list[str]]:
    """While inside: any socket, subprocess, or open under the Hugging Face home (tokens, caches) raises
    PermissionError in the caller and is recorded in the list yielded (issue 42)."""
    if not _HOOKED[0]:
        sys.addaudithook(_audit)
        _HOOKED[0] = True
    _SEALED.blocked, _SEALED.homes = [], _hf_homes()
    _SEALED.on = True
    try:
        yield _SEALED.blocked
    finally:
        _SEALED.on = False


@contextmanager
def quiet() -> Iterator[None]:
    """While inside: Python warnings transformers raises on reading a file (a deprecated key such as
    ``rope_scaling``) are not printed: qkv's output names what it cannot honour itself, in its own lines."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _import_offline():
    """``(torch, transformers)`` with the Hub's offline switches on (also when imported before)."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    with sealed():
        import torch
        import transformers
    try:
        import huggingface_hub.constants as hub_constants

        hub_constants.HF_HUB_OFFLINE = True
        hub_constants.HF_HUB_DISABLE_IMPLICIT_TOKEN = True
        hub_constants.HF_HUB_DISABLE_TELEMETRY = True
    except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
        pass
    return torch, transformers


def _no_downloads(raw: dict[str, Any], where: str = "config.json") -> dict[str, Any]:
    """The config dict with every pretrained-loading switch off and ``auto_map`` dropped; a backbone
    named only by a checkpoint name (its sizes not in this file) is refused in one line."""
    out = {k: v for k, v in raw.items() if k != "auto_map"}

    def walk(d: dict[str, Any], path: str) -> None:
        if isinstance(d.get("backbone"), str) and d["backbone"] and not d.get("backbone_config"):
            raise SolverInputError(f"{where}: {path}backbone names another checkpoint ({d['backbone'][:60]!r}) "
                                   "whose sizes this file does not give; qkv never downloads it (give "
                                   "backbone_config)", param="config")
        for key in ("use_pretrained_backbone", "use_timm_backbone"):
            if key in d:
                d[key] = False
        d.pop("auto_map", None)
        for key, value in list(d.items()):
            if isinstance(value, dict):
                d[key] = dict(value)
                walk(d[key], f"{path}{key}.")

    walk(out, "")
    return out


def check_layers(values: dict[str, Any], where: str = "config.json") -> None:
    """Refuse (one line naming the key) a layer count above :data:`MAX_LAYERS` or below 0 (transformers
    builds ``range(-1)``: no layer, and the count of a model without them): ``num_hidden_layers``,
    ``n_layer``, ``encoder_layers``, ``num_decoder_layers``, ... at the top level of ``values``."""
    for key, value in values.items():
        if (isinstance(key, str) and _LAYER_KEY.search(key) and isinstance(value, int) and not isinstance(value, bool)
                and not 0 <= value <= MAX_LAYERS):
            shown = f"{value:,}" if abs(value) < 10**15 else f"about {'-' if value < 0 else ''}10^{len(str(abs(value))) - 1}"
            raise SolverInputError(f"{where}: {key} is {shown}; transformers' class is built here for 0 to "
                                   f"{MAX_LAYERS:,} layers", param="config")


@dataclass(frozen=True)
class HFMetaCount:
    """transformers' parameter count of one config: ``total``, the class built, and its breakdowns.

    ``named_class``: ``architectures[0]`` of the file (None if it names none); ``fallback``: None when
    the named class was built, else why it was not and what was built instead (a sentence);
    ``parts``: the checkpoint's parts (text model, vision tower, projector, heads, ...);
    ``active``: the parameters one token uses (None: no experts found); ``experts``: how they were found.
    """

    model_type: str
    model_class: str
    transformers_version: str
    total: int
    by_module: dict[str, int] = field(default_factory=dict)
    named_class: str | None = None
    fallback: str | None = None
    parts: dict[str, int] = field(default_factory=dict)
    active: int | None = None
    experts: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "model_type": self.model_type, "model_class": self.model_class,
                "named_class": self.named_class, "fallback": self.fallback, "notes": list(self.notes),
                "transformers_version": self.transformers_version, "parts": self.parts, "active": self.active,
                "experts": self.experts, "by_module": self.by_module}


def fold(name: str, depth: int = 4) -> str:
    """A parameter name with layer indices folded and its tensor name dropped:
    ``model.layers.3.mlp.up_proj.weight`` → ``model.layers.*.mlp.up_proj``; at most ``depth`` parts."""
    parts = [("*" if re.fullmatch(r"\d+", p) else p) for p in name.split(".")[:-1]] or [name]
    return ".".join(parts[:depth])


_PART_WORDS = (("vision tower", ("vision", "visual", "image", "vit", "patch_embed", "pixel")),
               ("audio tower", ("audio", "speech", "sound")),
               ("projector", ("projector", "mm_proj", "connector", "aligner", "adapter", "resampler")))
_HEADS = ("lm_head", "score", "classifier", "qa_outputs", "cls", "pooler", "head", "heads", "mtp", "proj_out")


def part_of(name: str) -> str:
    """The part of a checkpoint a parameter name belongs to: "vision tower", "audio tower", "projector",
    "heads" (LM head, classifier, pooler), "text model" (a multimodal class's language model) or "model"
    (everything else: the body of a single-tower class)."""
    segs = name.lower().split(".")[:-1] or [name.lower()]
    for seg in segs[:3]:
        for part, words in _PART_WORDS:
            if any(w in seg for w in words):
                return part
    top = segs[1] if segs[0] == "model" and len(segs) > 1 and segs[1] in _HEADS else segs[0]
    if top in _HEADS or top.endswith("_head"):
        return "heads"
    return "text model" if any(w in seg for seg in segs[:3] for w in ("language_model", "text", "llm")) else "model"


_TOPK_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_topk", "top_k",
              "num_selected_experts", "moe_top_k", "router_top_k")
_NEXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "n_experts")


def _config_value(config: Any, keys: tuple[str, ...]) -> int | None:
    for cfg in (config, getattr(config, "get_text_config", lambda: None)()):
        for key in keys:
            value = getattr(cfg, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def active_params(model: Any, total: int) -> tuple[int | None, dict[str, Any] | None]:
    """``(active, how)``: the parameters one token uses, from the expert modules the model holds (a
    module named ``experts``: a ModuleList of E experts or fused tensors of leading size E) and top-k
    (the router's ``top_k`` or the config's ``num_experts_per_tok``...); ``(None, None)`` without experts."""
    top_k_cfg = _config_value(model.config, _TOPK_KEYS)
    n_cfg = _config_value(model.config, _NEXPERT_KEYS)
    removed, layers, seen = 0, 0, set()
    found: dict[str, Any] = {}
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] != "experts":
            continue
        params = [p for p in module.parameters() if id(p) not in seen]
        seen.update(id(p) for p in params)
        if not params:
            continue
        if hasattr(module, "__len__") and hasattr(module, "__getitem__"):
            n = len(module)
        else:
            n = getattr(module, "num_experts", None) or n_cfg
            if not n or any(p.dim() < 1 or p.shape[0] != n for p in params):
                n = n_cfg if n_cfg and all(p.dim() >= 1 and p.shape[0] == n_cfg for p in params) else None
        if not n:
            return None, {"unresolved": f"{fold(name + '.x')}: the number of experts is not in the module or the config"}
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        k = None
        for child in parent.children():
            k = k or getattr(child, "top_k", None)
        k = getattr(parent, "top_k", None) or k or top_k_cfg
        if not isinstance(k, int) or not 0 < k <= n:
            return None, {"unresolved": f"{fold(name + '.x')}: top-k is not in the router or the config"}
        size = sum(p.numel() for p in params)
        removed += size - size * k // n
        layers += 1
        found.setdefault("experts", n)
        found.setdefault("top_k", k)
        if (n, k) != (found["experts"], found["top_k"]):
            found["varies"] = True
    if not layers:
        return None, None
    found["moe_layers"] = layers
    return total - removed, found


def _build(transformers: Any, hf_config: Any, raw: dict[str, Any], dtype: Any = None) -> tuple[Any, str | None, str | None]:
    """``(model, named, fallback)``: the class ``architectures[0]`` names, else an Auto class and why."""
    archs = raw.get("architectures")
    named = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    why = "the file names no class (architectures)"
    if named is not None:
        cls = getattr(transformers, named, None) if _CLASS_NAME.fullmatch(named) else None
        if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
            why = f"transformers {transformers.__version__} has no class {named!r}"
        else:
            try:
                return (cls._from_config(hf_config, dtype=dtype) if dtype is not None else cls._from_config(hf_config)), named, None
            except _TooBig:
                raise
            except Exception as e:  # noqa: BLE001 - the class refuses this config: say so, count the Auto class
                why = f"{named} cannot be built from this config ({(str(e).splitlines() or [type(e).__name__])[0][:120]})"
    extra = {"dtype": dtype} if dtype is not None else {}
    model = None
    # the class transformers registers for the type, with its head: a causal LM, else an image-text-to-text model (a
    # vision-language file whose remote-code class transformers spells otherwise: Kimi-K2.5's
    # KimiK25ForConditionalGeneration is Kimi_K25ForConditionalGeneration), else the bare model (no head, said below)
    for auto in ("AutoModelForCausalLM", "AutoModelForImageTextToText"):
        auto_cls = getattr(transformers, auto, None)
        if auto_cls is None:
            continue
        try:
            model = auto_cls.from_config(hf_config, **extra)
            break
        except ValueError:  # no such head registered for this type
            continue
    if model is None:
        model = transformers.AutoModel.from_config(hf_config, **extra)
    if named is None:
        return model, None, None  # nothing named: the Auto class is the count (said in counted_by)
    return model, named, f"{why}; counted {type(model).__name__} instead"


def _config_class(transformers: Any, raw: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(config class, raw)``: transformers' config class of ``model_type``, or, for a model_type
    transformers does not know (Kimi-K2's ``kimi_k2``), that of the class ``architectures[0]`` names
    (raw then carries that class's model_type: the file's class decides, issue 37)."""
    kind = raw.get("model_type")
    if isinstance(kind, str) and kind in transformers.CONFIG_MAPPING:
        return transformers.CONFIG_MAPPING[kind], raw
    archs = raw.get("architectures")
    named = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    cls = getattr(transformers, named, None) if _CLASS_NAME.fullmatch(named) else None
    if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel) and \
            getattr(cls.config_class, "model_type", ""):
        return cls.config_class, {**raw, "model_type": cls.config_class.model_type}
    raise SolverInputError(f"model_type {kind!r} is known neither to qkv nor to transformers "
                           f"{transformers.__version__}", param="config")


def build_meta(raw: dict[str, Any], dtype: Any = None) -> tuple[Any, str, str | None, str | None, Any]:
    """``(model, kind, named, fallback, transformers)``: the class the file names (or the Auto class) built on
    the meta device, offline and bounded (see the module docstring)."""
    try:
        torch, transformers = _import_offline()
    except ImportError:
        raise SolverInputError(f"counting a model type qkv does not read needs transformers: {INSTALL_HINT}",
                               param="config") from None
    kind = raw.get("model_type")
    if not isinstance(kind, str):
        raise SolverInputError("config.json has no model_type", param="config")
    transformers.logging.set_verbosity_error()
    config_cls, raw = _config_class(transformers, raw)
    import time

    check_layers(raw)
    clean = _no_downloads(raw)
    modules, deadline = [0], time.monotonic() + MAX_BUILD_S
    notes: list[str] = []

    def bounded(*_args) -> None:  # called on each submodule registered: the build's bound
        modules[0] += 1
        if modules[0] > MAX_MODULES or time.monotonic() > deadline:
            raise _TooBig

    hook = torch.nn.modules.module.register_module_module_registration_hook(bounded)
    try:
        with sealed() as blocked, quiet():
            try:
                hf_config = config_cls.from_dict(clean)
                check_layers(hf_config.to_dict())  # attribute maps: n_layer read as num_hidden_layers
                _tie_as_the_text_model(raw, hf_config, notes)
                with torch.device("meta"):
                    model, named, fallback = _build(transformers, hf_config, raw, dtype)
            finally:
                if blocked:
                    raise SolverInputError(f"this config.json asks transformers for what qkv never does while "
                                           f"counting ({blocked[0][:80]}): refused", param="config")
    except SolverInputError:
        raise
    except _TooBig:
        raise SolverInputError(f"transformers' {kind!r} class of this config.json is too large to build here "
                               f"(more than {MAX_MODULES:,} modules or {MAX_BUILD_S:g} s); check its sizes",
                               param="config") from None
    except Exception as e:  # noqa: BLE001 - any failure of transformers' own checks (ValueError, TypeError,
        # huggingface_hub's StrictDataclassFieldValidationError for "n_positions": "true", ...) is the file's
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        first = " ".join(lines[:2])[:300] if lines else type(e).__name__
        raise SolverInputError(f"transformers cannot build {kind!r} from this config.json: {first}",
                               param="config") from None
    finally:
        hook.remove()
    _NOTES[id(model)] = notes
    return model, kind, named, fallback, transformers


#: Notes of the last builds (model id -> notes), read back by :func:`count_with_transformers`.
_NOTES: dict[int, list[str]] = {}


def _tie_as_the_text_model(raw: dict[str, Any], hf_config: Any, notes: list[str]) -> None:
    """A wrapper (vision-language) file that sets no top-level ``tie_word_embeddings`` ties its LM head as
    its text model says: transformers 5 defaults some wrappers to True (Mistral3Config), which would tie
    an untied checkpoint's head (Mistral-Small-3.1-24B: 671,088,640 parameters left out, issue 37)."""
    if "tie_word_embeddings" in raw or not isinstance(raw.get("text_config"), dict):
        return
    text = hf_config.get_text_config()
    if text is hf_config or not hasattr(hf_config, "tie_word_embeddings"):
        return
    own = getattr(text, "tie_word_embeddings", None)
    if isinstance(own, bool) and own != hf_config.tie_word_embeddings:
        hf_config.tie_word_embeddings = own
        notes.append(f"tie_word_embeddings: not set at the top of the file; its text model's {str(own).lower()} "
                     f"followed (transformers' {type(hf_config).__name__} would default to "
                     f"{str(not own).lower()})")


def count_with_transformers(raw: dict[str, Any]) -> HFMetaCount:
    """transformers' count of the model a config.json dict describes (see the module docstring)."""
    model, kind, named, fallback, transformers = build_meta(raw)
    notes = _NOTES.pop(id(model), [])
    by_module: dict[str, int] = {}
    parts: dict[str, int] = {}
    total = 0
    for name, p in model.named_parameters():  # a tied tensor once
        total += p.numel()
        key = fold(name)
        by_module[key] = by_module.get(key, 0) + p.numel()
        part = part_of(name)
        parts[part] = parts.get(part, 0) + p.numel()
    active, experts = active_params(model, total)
    notes += unbuilt_mtp(raw, model)
    return HFMetaCount(kind, type(model).__name__, transformers.__version__, total, by_module, named, fallback,
                       parts, active, experts, tuple(notes))


#: Keys that give the number of multi-token-prediction (MTP, "next-n") layers a checkpoint ships after its
#: decoder layers (GLM-4.5's ``num_nextn_predict_layers``, Qwen3.5's ``mtp_num_hidden_layers``, ...).
MTP_KEYS = ("num_nextn_predict_layers", "num_mtp_layers", "mtp_num_hidden_layers", "mtp_num_layers")


def unbuilt_mtp(raw: dict[str, Any], model: Any) -> list[str]:
    """Notes on multi-token-prediction (MTP) layers the count leaves out, never silently: each MTP key of the file
    (or its ``text_config``) set above 0 whose layers the class built does not hold (no parameter named ``mtp`` or
    ``nextn``, none in a layer at or past ``num_hidden_layers``); else, where the file names none, the class's own
    rule for dropping MTP weights when it loads a checkpoint (its ``_keys_to_ignore_on_load_unexpected``)."""
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    given = {k: src[k] for src in (raw, text) for k in MTP_KEYS
             if isinstance(src.get(k), int) and not isinstance(src.get(k), bool) and src[k] > 0}
    n_layers = text.get("num_hidden_layers") or raw.get("num_hidden_layers")
    layer_at = re.compile(r"(?:^|\.)layers\.(\d+)\.")
    for name, _ in model.named_parameters():
        hit = layer_at.search(name)
        if "mtp" in name or "nextn" in name or (hit and isinstance(n_layers, int) and int(hit.group(1)) >= n_layers):
            return []  # the class builds them: counted
    cls = type(model).__name__
    if given:
        return [f"{key}={value}: the checkpoint's {value} multi-token-prediction layer{'s' if value > 1 else ''} "
                f"(after the {n_layers} decoder layers) {'are' if value > 1 else 'is'} not built by transformers' "
                f"{cls} (dropped when it loads the weights): not counted" for key, value in given.items()]
    dropped = [p for p in getattr(type(model), "_keys_to_ignore_on_load_unexpected", None) or ()
               if isinstance(p, str) and "mtp" in p.lower()]
    return [f"multi-token prediction: transformers' {cls} drops checkpoint weights matching "
            f"{', '.join(repr(p) for p in dropped)} when it loads them (the file names no MTP layer count): "
            "a checkpoint that ships them holds more parameters than this count"] if dropped else []


# ---- issue 37: the KV cache of a type qkv does not read, from transformers' own config --------------------

#: Layer kinds that keep a key and a value per position (full), per position within a window, or none
#: (linear attention and state-space layers keep a fixed-size state, not a KV cache).
_FULL = ("full_attention", "attention", "global_attention", "global", "indexed_attention")
_WINDOWED = ("sliding_attention", "chunked_attention", "local_attention", "sliding", "local")
_NO_KV = ("linear_attention", "mamba", "mamba2", "ssm", "conv", "recurrent", "rwkv", "lightning_attention",
          "short_conv", "moe_linear_attention", "delta_net", "gated_deltanet", "mlp", "moe")


#: Model types without attention (every layer a state-space or recurrent block).
_STATE_SPACE = ("mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm")


@dataclass(frozen=True)
class HFKVLayout:
    """Per decoder layer: ``(kind, kv_heads, head_dim, window)``; ``window`` None = every position kept."""

    model_type: str
    config_class: str
    transformers_version: str
    layers: tuple[tuple[str, int, int, int | None], ...]

    def bytes(self, batch: int, seq: int, elem: float) -> list[tuple[str, int, str]]:
        """``[(name, bytes, formula)]`` by layer kind, for ``batch`` sequences of ``seq`` positions."""
        groups: dict[tuple, int] = {}
        for layer in self.layers:
            groups[layer] = groups.get(layer, 0) + 1
        out = []
        for (kind, kv, hd, window), n in groups.items():
            if kv == 0:
                out.append((f"{kind} layers ({n})", 0, "no KV cache (a fixed-size state, not counted here)"))
                continue
            pos = seq if window is None else min(seq, window)
            span = f"{pos:,}" if window is None else f"min({seq:,}, window {window:,})"
            if kind.startswith(LATENT):  # one latent vector per position (its width in the kind), no K and V heads
                size = int(n * batch * pos * hd * elem)
                out.append((f"{kind} layers ({n})", size, f"{n} × {batch} × {span} × {hd} × {float(elem):g} B"))
                continue
            size = int(2 * n * batch * pos * kv * hd * elem)
            out.append((f"{kind} layers ({n})", size, f"2 × {n} × {batch} × {span} × {kv} × {hd} × {float(elem):g} B"))
        return out


#: The kind of a layer whose cache is one latent vector per position (multi-head latent attention).
LATENT = "latent attention"


def kv_layout(raw: dict[str, Any]) -> HFKVLayout:
    """The KV cache layout of the decoder transformers builds from ``raw`` (its text config): per layer,
    full or windowed attention (``layer_types``, ``sliding_window``, ``attention_chunk_size``,
    ``sliding_window_pattern``), grouped heads and ``head_dim``, read per layer where transformers' config
    varies them by layer (Gemma 4's global layers); a latent-attention layer keeps one vector of
    ``kv_lora_rank`` + ``qk_rope_head_dim`` (+ a DSA indexer's ``index_head_dim``) per position, as transformers'
    cache holds it; linear-attention and state-space layers keep none. What no rule here reads (layers sharing
    another's cache, K and V of different widths, compressed attention) is refused in one line naming it."""
    try:
        _torch, transformers = _import_offline()
    except ImportError:
        raise SolverInputError(f"the KV cache of a model type qkv does not read needs transformers: {INSTALL_HINT}",
                               param="config") from None
    transformers.logging.set_verbosity_error()
    config_cls, raw = _config_class(transformers, raw)
    kind = raw.get("model_type")
    check_layers(raw)
    try:
        with sealed(), quiet():
            config = config_cls.from_dict(_no_downloads(raw))
            text = config.get_text_config(decoder=True)
    except SolverInputError:
        raise
    except Exception as e:  # noqa: BLE001 - transformers' own checks of the file
        raise SolverInputError(f"transformers cannot read {kind!r} from this config.json: "
                               f"{(str(e).splitlines() or [type(e).__name__])[0][:200]}", param="config") from None

    def attr(*names: str) -> Any:
        for name in names:
            try:
                value = getattr(text, name, None)
            except Exception:  # noqa: BLE001 - transformers 5.2x refuses a global read of an attribute that varies
                value = None   # by layer (Gemma 4's KV heads and head size): read per layer below
            if value is not None:
                return value
        return None

    #: transformers' per-layer view of a heterogeneous config (Gemma 4: sliding layers of 16 KV heads × 256,
    #: full layers of num_global_key_value_heads × global_head_dim); None where every layer is alike
    per_layer = attr("per_layer_config")

    def at(i: int, name: str, default: Any) -> Any:
        """Layer ``i``'s own value of ``name`` (its per-layer config), else ``default``."""
        if per_layer is None:
            return default
        try:
            value = getattr(per_layer[i], name, None)
        except Exception:  # noqa: BLE001 - no per-layer value: the global one
            value = None
        return default if value is None else value

    for key in ("num_kv_shared_layers", "kv_sharing", "cross_layer_attention"):
        if attr(key):
            raise SolverInputError(f"{kind}: {key}={attr(key)!r}: this cache layout (layers sharing another's "
                                   "cache) is not derived for a type qkv does not read", param="config")
    # multi-head latent attention (DeepSeek-V2 §2.1): transformers caches, per attention layer and position, the
    # compressed c_KV (kv_lora_rank) and the shared RoPE key (qk_rope_head_dim); DeepSeek-V3.2's sparse attention
    # adds its indexer's key (index_head_dim) per position
    rank, rope, index = attr("kv_lora_rank"), attr("qk_rope_head_dim"), attr("index_head_dim")
    latent = None
    if rank:
        parts = [rank, rope or 0] + ([index] if index else [])
        names = "kv_lora_rank + qk_rope_head_dim" + (" + index_head_dim" if index else "")
        latent = (f"{LATENT} ({names} = {' + '.join(str(p) for p in parts)})", sum(parts))
    n_layers, heads = attr("num_hidden_layers", "n_layer", "num_layers"), attr("num_attention_heads", "n_head")
    if kind in _STATE_SPACE and heads is None and isinstance(n_layers, int):
        # an attention-free state-space model: every layer keeps a fixed-size state, no KV cache
        return HFKVLayout(kind, type(text).__name__, transformers.__version__,
                          tuple(("state-space", 0, 0, None) for _ in range(n_layers)))
    if not isinstance(n_layers, int) or not isinstance(heads, int) or heads <= 0:
        raise SolverInputError(f"{kind}: the text config gives no layer or head count transformers' cache follows",
                               param="config")
    kv = attr("num_key_value_heads", "num_kv_heads") or heads
    hd = attr("head_dim") or attr("hidden_size") // heads
    v_hd = attr("v_head_dim")
    if v_hd not in (None, hd) and latent is None:
        raise SolverInputError(f"{kind}: v_head_dim {v_hd} != head_dim {hd}: not derived here", param="config")
    window = attr("sliding_window")
    chunk = attr("attention_chunk_size")
    types = attr("layer_types")
    if types is None:
        pattern = attr("sliding_window_pattern", "_sliding_window_pattern")
        if window and pattern:
            types = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(n_layers)]
        else:
            types = ["sliding_attention" if window else "full_attention"] * n_layers
    if not isinstance(types, (list, tuple)) or len(types) != n_layers:
        raise SolverInputError(f"{kind}: layer_types needs one entry per layer ({n_layers})", param="config")
    layers = []
    for i, t in enumerate(types):
        kv_i, hd_i = at(i, "num_key_value_heads", kv), at(i, "head_dim", hd)
        if latent is not None and (t in _FULL or t in _WINDOWED):
            w = None if t in _FULL else (chunk if t == "chunked_attention" and chunk else window)
            layers.append((latent[0], 1, latent[1], int(w) if w else None))
        elif t in _FULL:
            layers.append(("full attention", kv_i, hd_i, None))
        elif t in _WINDOWED:
            w = chunk if t == "chunked_attention" and chunk else window
            if not w:
                raise SolverInputError(f"{kind}: layer type {t!r} without a window size", param="config")
            layers.append((t.replace("_", " "), kv_i, hd_i, int(w)))
        elif t in _NO_KV:
            layers.append((t.replace("_", " "), 0, 0, None))
        else:
            raise SolverInputError(f"{kind}: layer type {t!r}: its cache is not derived here", param="config")
    return HFKVLayout(kind, type(text).__name__, transformers.__version__, tuple(layers))



# ---- issue 37: the weight bytes a quantization_config gives --------------------------------------------------

_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16", "half": "float16",
           "float32": "float32", "fp32": "float32", "float": "float32"}


@dataclass(frozen=True)
class QuantizedWeights:
    """The bytes of a checkpoint's weights as transformers holds them under its ``quantization_config``."""

    method: str
    model_class: str
    transformers_version: str
    by_dtype: dict[str, tuple[int, int]]  # dtype -> (elements, bytes)

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.by_dtype.values())


def quantized_weights(raw: dict[str, Any]) -> QuantizedWeights:
    """Issue 37: the class the file names built on the meta device at the file's ``torch_dtype``, then
    converted by transformers' own quantizer for the file's ``quantization_config`` (as
    ``from_pretrained`` converts a pre-quantized checkpoint: FP8 weights with their block scales,
    MXFP4 blocks with their exponents, ...); the bytes of every parameter, by dtype. A method whose
    quantizer cannot convert here (a package it needs, a GPU) is refused in one line naming it."""
    q = raw.get("quantization_config")
    if not isinstance(q, dict) or not isinstance(q.get("quant_method"), str):
        raise SolverInputError("quantization_config has no quant_method", param="config")
    method = q["quant_method"]
    try:
        torch, transformers = _import_offline()
    except ImportError:
        raise SolverInputError(f"the weight bytes of quantization_config ({method}) need transformers: {INSTALL_HINT}",
                               param="config") from None
    name = raw.get("torch_dtype") or raw.get("dtype") or "bfloat16"
    dtype = getattr(torch, _DTYPES.get(str(name), "bfloat16"))
    model, _kind, _named, _fallback, _ = build_meta(raw, dtype)
    _NOTES.pop(id(model), None)
    from transformers.quantizers import AutoHfQuantizer

    try:
        with sealed(), torch.device("meta"):
            quantizer = AutoHfQuantizer.from_config(model.config.quantization_config, pre_quantized=True)
            quantizer.preprocess_model(model, device_map=None, keep_in_fp32_modules=[])
    except Exception as e:  # noqa: BLE001 - the quantizer's own refusal (a package, a device), in one line
        first = (str(e).splitlines() or [type(e).__name__])[0][:160]
        raise SolverInputError(f"quantization_config ({method}): transformers' quantizer cannot lay out these "
                               f"weights here ({first}); give --dtype for one precision", param="config") from None
    by: dict[str, tuple[int, int]] = {}
    for p in model.parameters():
        key = str(p.dtype).replace("torch.", "")
        n, b = by.get(key, (0, 0))
        by[key] = (n + p.numel(), b + p.numel() * p.element_size())
    if set(by) <= {str(dtype).replace("torch.", ""), "float32"} and getattr(quantizer, "pre_quantized", True):
        # nothing was laid out quantized: the quantizer dequantizes here (MXFP4 without its kernels, ...)
        raise SolverInputError(f"quantization_config ({method}): transformers' quantizer keeps these weights "
                               f"unquantized on this machine, so its stored layout is not derived; give --dtype for "
                               "one precision", param="config")
    return QuantizedWeights(method, type(model).__name__, transformers.__version__, by)
