"""Refuse to build a model that would not fit, before allocating anything.

The estimate is the analytic parameter count (``solver.counts``) times the bytes of the dtype,
plus the sinusoidal position buffer; a model is refused when that exceeds 80 % of the memory
that is free on the target device (``MemAvailable`` for the CPU, ``torch.cuda.mem_get_info``
for a GPU). The meta device stores no data and takes any size.
"""

from __future__ import annotations

import math

from solver.config import ModelConfig
from solver.errors import SolverInputError
from solver.units import format_bytes

#: The fraction of free memory a model's weights may take (the rest: activations, the runtime).
HEADROOM = 0.8


def parameter_count(cfg: ModelConfig) -> int:
    """The analytic count, LoRA adapters included, when ``solver.counts`` is there; otherwise
    numel summed over a meta-device build (exact, and free)."""
    try:
        from solver.counts import param_breakdown
    except ImportError:
        return meta_numel(cfg)
    return int(param_breakdown(cfg).total_with_lora)


def meta_numel(cfg: ModelConfig) -> int:
    """Elements of the unique parameters of the model built on the meta device."""
    import torch

    from solver.models.transformer import Transformer

    try:
        with torch.device("meta"):
            model = Transformer(cfg)
    except RuntimeError as e:  # a tensor too large even to describe: numel overflows int64
        raise SolverInputError(f"the model is too large to build even on the meta device ({e})",
                               param="d_model") from None
    return sum(p.numel() for p in model.parameters())


def estimate_bytes(cfg: ModelConfig, element_size: int) -> int:
    """Bytes that building ``cfg`` allocates: parameters and buffers."""
    buffers = cfg.max_positions * cfg.d_model if cfg.pos == "sinusoidal" else 0
    return (parameter_count(cfg) + buffers) * element_size


def available_bytes(device: str) -> int | None:
    """Free memory on ``device`` (None when unknown)."""
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(cfg: ModelConfig, device: str, element_size: int = 4) -> int:
    """Raise SolverInputError (one line) when ``cfg`` would not fit on ``device``; return the estimate."""
    if device == "meta":
        return 0
    need = estimate_bytes(cfg, element_size)
    free = available_bytes(device)
    if free is not None and need > HEADROOM * free:
        what = f"{cfg.name} " if cfg.name else ""
        raise SolverInputError(
            f"refusing to build {what}on {device}: its weights need ~{_short(need)}, "
            f"{device} has {_short(free)} free (use --device meta to count without allocating)",
            param="device")
    return need


def _short(n: int) -> str:
    if n >= 10**15:
        return f"10^{math.log10(n):.1f} bytes"
    return format_bytes(n)
