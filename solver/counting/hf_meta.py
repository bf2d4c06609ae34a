"""Count a config.json of a type qkv does not model by building transformers' own class on the meta device.

``count_with_transformers(raw)`` instantiates ``transformers.AutoModelForCausalLM.from_config`` (or
``AutoModel`` where the type has no causal-LM head) on PyTorch's meta device: every parameter has a
shape and no storage, nothing is downloaded and no weight is read. The count is
``sum(p.numel() for p in model.parameters())`` (a tied tensor once) with a per-module breakdown
(layer indices folded: ``model.layers.*.self_attn.q_proj``). It is transformers' count of the class
its installed version builds, not qkv's derivation: the output says so.

Imported only by the command that needs it; ``transformers`` is imported inside the function.
Without it the refusal names what to install.
"""

from __future__ import annotations

import re
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


class _TooBig(Exception):
    """Raised from the module registration hook to stop a build past MAX_MODULES or MAX_BUILD_S."""


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
    """transformers' parameter count of one config: ``total``, the class, and ``by_module``."""

    model_type: str
    model_class: str
    transformers_version: str
    total: int
    by_module: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "model_type": self.model_type, "model_class": self.model_class,
                "transformers_version": self.transformers_version, "by_module": self.by_module}


def fold(name: str, depth: int = 4) -> str:
    """A parameter name with layer indices folded and its tensor name dropped:
    ``model.layers.3.mlp.up_proj.weight`` → ``model.layers.*.mlp.up_proj``; at most ``depth`` parts."""
    parts = [("*" if re.fullmatch(r"\d+", p) else p) for p in name.split(".")[:-1]] or [name]
    return ".".join(parts[:depth])


def count_with_transformers(raw: dict[str, Any]) -> HFMetaCount:
    """transformers' count of the model a config.json dict describes (see the module docstring)."""
    try:
        import torch
        import transformers
    except ImportError:
        raise SolverInputError(f"counting a model type qkv does not read needs transformers: {INSTALL_HINT}",
                               param="config") from None
    kind = raw.get("model_type")
    if not isinstance(kind, str):
        raise SolverInputError("config.json has no model_type", param="config")
    transformers.logging.set_verbosity_error()
    try:
        config_cls = transformers.CONFIG_MAPPING[kind]
    except KeyError:
        raise SolverInputError(f"model_type {kind!r} is known neither to qkv nor to transformers "
                               f"{transformers.__version__}", param="config") from None
    import time

    check_layers(raw)
    modules, deadline = [0], time.monotonic() + MAX_BUILD_S

    def bounded(*_args) -> None:  # called on each submodule registered: the build's bound
        modules[0] += 1
        if modules[0] > MAX_MODULES or time.monotonic() > deadline:
            raise _TooBig

    hook = torch.nn.modules.module.register_module_module_registration_hook(bounded)
    try:
        hf_config = config_cls.from_dict({k: v for k, v in raw.items() if k != "auto_map"})
        check_layers(hf_config.to_dict())  # attribute maps: n_layer read as num_hidden_layers
        with torch.device("meta"):
            try:
                model = transformers.AutoModelForCausalLM.from_config(hf_config)
            except ValueError:  # no causal-LM head for this type: the bare model
                model = transformers.AutoModel.from_config(hf_config)
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
    by_module: dict[str, int] = {}
    total = 0
    for name, p in model.named_parameters():  # a tied tensor once
        total += p.numel()
        key = fold(name)
        by_module[key] = by_module.get(key, 0) + p.numel()
    return HFMetaCount(kind, type(model).__name__, transformers.__version__, total, by_module)
