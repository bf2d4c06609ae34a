"""Refuse to build a model that would not fit, before allocating anything.

The estimate is the analytic parameter count (``solver.counting``) times the bytes of the dtype,
plus the sinusoidal position buffer; a model is refused when that exceeds 80 % of the memory
that is free on the target device (``MemAvailable`` for the CPU, ``torch.cuda.mem_get_info``
for a GPU). The meta device stores no data and takes any size.
"""

from __future__ import annotations

import math

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError
from solver.units import format_bytes

#: The fraction of free memory a model's weights may take (the rest: activations, the runtime).
HEADROOM = 0.8


def parameter_count(cfg: ModelConfig) -> int:
    """The analytic count, LoRA adapters included, when ``solver.counting`` is there; otherwise
    numel summed over a meta-device build (exact, and free)."""
    try:
        from solver.counting import param_breakdown
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


# ---- a whole run, not only the weights ---------------------------------------------------------

def run_bytes(cfg: ModelConfig, batch: int, seq: int, element_size: int = 4, *, train_layers: int | None = None,
              decode: bool = True) -> dict[str, int]:
    """An upper estimate of the bytes a forward pass, a decode step and (with ``train_layers``) a
    training step of ``cfg`` allocate at ``batch`` × ``seq``, by tensor kind.

    Per layer and token a forward pass holds the block's input, its norm, Q, K, V, the attention
    output and projection, the FFN's hidden units (two sets for a gated FFN, times ``top_k``
    for a mixture of experts) and its output; per layer the scores and softmax
    (``2 · B · h · T²``, the "math" attention verify uses); the logits ``B · T · vocab``. Without a
    backward pass a layer's activations are freed before the next layer's (one layer counted);
    a training step keeps those of ``train_layers`` layers, the logits' gradient and one
    gradient per weight. A decode step adds the KV cache of ``seq`` positions, ``2 · L · B · T ·
    kv_dim``. Keys: weights, activations, scores, logits, kv_cache, gradients, total."""
    d, h, kv, T, B = cfg.d_model, cfg.n_heads, cfg.kv_dim, seq, batch
    hidden = cfg.d_ff * (2 if cfg.ffn in ("swiglu", "geglu") else 1) * max(1, cfg.top_k)
    per_layer = B * T * (6 * d + 2 * kv + 2 * hidden)
    scores_layer = 2 * B * h * T * T
    if cfg.arch == "encoder-decoder":  # cross-attention: another set of scores and K, V per layer
        scores_layer *= 2
        per_layer += B * T * (2 * d + 2 * kv)
    layers = train_layers or 1
    out = {
        "weights": estimate_bytes(cfg, element_size),
        "activations": per_layer * layers * element_size,
        "scores": scores_layer * layers * element_size,
        "logits": B * T * cfg.vocab_size * (2 if train_layers else 1) * element_size if cfg.lm_head else 0,
        "kv_cache": 2 * cfg.n_layers * B * T * kv * element_size if decode and cfg.arch != "encoder" else 0,
        "gradients": estimate_bytes(cfg, element_size) if train_layers else 0,
    }
    out["total"] = sum(out.values())
    return out


def check_run_fits(need: int, device: str, what: str, *, param: str = "batch", detail: str = "") -> int:
    """Raise SolverInputError (one line) when ``need`` bytes exceed :data:`HEADROOM` of the memory
    free on ``device``, before anything is allocated; returns ``need``."""
    if device == "meta":
        return need
    free = available_bytes(device)
    if free is not None and need > HEADROOM * free:
        extra = f" ({detail})" if detail else ""
        raise SolverInputError(f"refusing to run {what} on {device}: it needs ~{brief_bytes(need)}{extra}, "
                               f"{device} has {brief_bytes(free)} free; use smaller sizes", param=param)
    return need


def describe(parts: dict[str, int]) -> str:
    """``weights 0.5 GB + scores 3.2 GB + …``: the largest parts of a :func:`run_bytes` estimate."""
    named = sorted(((k, v) for k, v in parts.items() if k != "total" and v), key=lambda kv: -kv[1])
    return " + ".join(f"{k} {brief_bytes(v)}" for k, v in named[:3])


def brief_bytes(n: int) -> str:
    """Bytes in three significant figures of decimal units (1 GB = 10^9 bytes): ``51.5 GB``."""
    if n >= 10**18:
        return f"10^{math.log10(n):.1f} bytes"
    for unit, scale in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
