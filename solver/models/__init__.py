"""Reference PyTorch models built from a :class:`~solver.counting.config.ModelConfig`.

``build_model(cfg, device)`` returns a :class:`Transformer`; on ``cpu``/``cuda`` it first checks
that the weights fit (:mod:`solver.models.guard`), on ``meta`` it takes any size and allocates
nothing. Importing this package imports no torch: the names below load their module (and torch)
when first used (PEP 562), so a size check of ``solver.models.guard`` or ``solver.models.verify``
answers before torch is imported (``qkv models verify`` with sizes it refuses, issue 28).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Attention", "KVCache", "LayerKV", "ModelOutput", "Stack", "Transformer", "build_model"]

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}

#: where each name of the package lives
_HOME = {"Attention": "attention", "LayerKV": "attention", "KVCache": "transformer", "ModelOutput": "transformer",
         "Stack": "transformer", "Transformer": "transformer", "build_model": "build", "check_fits": "guard"}

if TYPE_CHECKING:
    from solver.models.attention import Attention, LayerKV
    from solver.models.build import build_model
    from solver.models.guard import check_fits  # noqa: F401
    from solver.models.transformer import KVCache, ModelOutput, Stack, Transformer


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        value = getattr(importlib.import_module(f"solver.models.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'solver.models' has no attribute {name!r}")
