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
    try:
        hf_config = config_cls.from_dict({k: v for k, v in raw.items() if k != "auto_map"})
        with torch.device("meta"):
            try:
                model = transformers.AutoModelForCausalLM.from_config(hf_config)
            except ValueError:  # no causal-LM head for this type: the bare model
                model = transformers.AutoModel.from_config(hf_config)
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError, AssertionError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SolverInputError(f"transformers cannot build {kind!r} from this config.json: {first}",
                               param="config") from None
    by_module: dict[str, int] = {}
    total = 0
    for name, p in model.named_parameters():  # a tied tensor once
        total += p.numel()
        key = fold(name)
        by_module[key] = by_module.get(key, 0) + p.numel()
    return HFMetaCount(kind, type(model).__name__, transformers.__version__, total, by_module)
