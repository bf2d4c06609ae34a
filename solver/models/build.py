"""``build_model``: the reference model of a :class:`~solver.counting.config.ModelConfig` on a device
(split out of ``solver/models/__init__.py`` so that importing the package imports no torch)."""

from __future__ import annotations

from contextlib import nullcontext

import torch
from torch.overrides import TorchFunctionMode

from solver.counting.config import ModelConfig
from solver.models import DTYPES
from solver.models.guard import check_fits
from solver.models.transformer import Transformer


def build_model(cfg: ModelConfig, device: str = "meta", dtype: str = "fp32") -> Transformer:
    """The reference model of ``cfg`` on ``device`` (meta, cpu, cuda) with ``dtype`` weights."""
    from solver.errors import SolverInputError

    if dtype not in DTYPES:
        raise SolverInputError(f"choose one of {', '.join(DTYPES)} (got {dtype!r})", param="dtype")
    torch_dtype = getattr(torch, DTYPES[dtype])
    check_fits(cfg, device, torch.tensor([], dtype=torch_dtype).element_size())
    try:
        with torch.device(device), (_SkipInit() if device == "meta" else nullcontext()):
            model = Transformer(cfg)
    except RuntimeError as e:
        raise SolverInputError(f"cannot build the model on {device}: {str(e).splitlines()[0]}",
                               param="device") from None
    return model.to(torch_dtype)


class _SkipInit(TorchFunctionMode):
    """Skips ``torch.nn.init`` while building on the meta device, where there are no values to
    initialise (it halves the build time of a large model)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", "") == "torch.nn.init":
            return args[0] if args else (kwargs or {}).get("tensor")
        return func(*args, **(kwargs or {}))
