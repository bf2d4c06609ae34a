"""Refuse to build a model that would not fit, before allocating anything.

The estimate is the analytic parameter count (``solver.counting``) times the bytes of the dtype,
plus the sinusoidal position buffer; a model is refused when that exceeds 80 % of the memory
that is free on the target device (for the CPU the least of ``MemAvailable``, what the
process's memory cgroup still allows and what ``ulimit -v`` leaves; ``torch.cuda.mem_get_info``
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
    """Free memory on ``device`` (None when unknown). On a GPU, what the driver reports free plus
    the blocks PyTorch's caching allocator holds for this process and no tensor uses (a model
    verified before this one leaves its memory there, free to reuse: found on an H200)."""
    if device.startswith("cuda"):
        import torch

        dev = torch.device(device)
        free, _total = torch.cuda.mem_get_info(dev)
        cached = torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
        return int(free) + max(0, int(cached))
    limits = [n for n in (_mem_available(), _cgroup_free(), _address_space_free()) if n is not None]
    return min(limits) if limits else None


def _mem_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` (the machine's, blind to a container's limit)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_free(root: str = "/sys/fs/cgroup") -> int | None:
    """What this process's memory cgroup still allows: ``memory.max − memory.current`` (cgroup v2)
    or ``memory.limit_in_bytes − memory.usage_in_bytes`` (v1), the tightest over the cgroup and its
    parents; None without a limit. Paths: Linux, Documentation/admin-guide/cgroup-v2.rst."""
    import os

    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best: int | None = None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # v2: memory.max, memory.current
            names, base = ("memory.max", "memory.current"), root
        elif "memory" in controllers.split(","):
            names, base = ("memory.limit_in_bytes", "memory.usage_in_bytes"), os.path.join(root, "memory")
        else:
            continue
        parts = [x for x in path.strip("/").split("/") if x]
        for depth in range(len(parts), -1, -1):
            folder = os.path.join(base, *parts[:depth])
            try:
                with open(os.path.join(folder, names[0])) as f:
                    limit_text = f.read().strip()
                with open(os.path.join(folder, names[1])) as f:
                    used = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if limit_text == "max" or not limit_text.isdigit() or int(limit_text) >= 2**60:
                continue
            free = max(0, int(limit_text) - used)
            best = free if best is None else min(best, free)
    return best


def _address_space_free() -> int | None:
    """``ulimit -v`` (RLIMIT_AS) less the address space this process already maps; None without one."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return max(0, soft - int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return soft


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
            f"{device} has {_short(free)} free, of which weights may take {HEADROOM:.0%} "
            f"(use --device meta to count without allocating)",
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
                               f"{device} has {brief_bytes(free)} free; use smaller sizes (a run may take "
                               f"{HEADROOM:.0%} of the free memory)", param=param)
    return need


# ---- time: a run on cpu/cuda, estimated before building ----------------------------------------

#: The longest ``verify`` may run one model on cpu/cuda, estimated before it is built (seconds).
RUN_BUDGET_S = 120.0
#: Runs are estimated at this many times the FLOP/s of the probe (a 512² matmul runs slower per
#: FLOP than a model's larger ones: measured on the shared 2-core machine 8-11 against 18 GFLOP/s
#: for a 1024² one), so the estimate errs low and what it refuses is surely too slow.
PROBE_MARGIN = 2
_SPEED: dict[str, float] = {}


def matmul_speed(device: str) -> float:
    """FLOP/s of a 512² fp32 matmul on ``device``: the fastest of 3 to 10 runs after a warm-up
    (under 50 ms of runs; once per process and device)."""
    import time

    import torch

    if device not in _SPEED:
        n = 512
        a = torch.ones(n, n, device=device)
        b = torch.ones(n, n, device=device)
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        a @ b
        sync()
        best, began, k = float("inf"), time.perf_counter(), 0
        while k < 3 or (k < 10 and time.perf_counter() - began < 0.05):
            t0 = time.perf_counter()
            a @ b
            sync()
            best, k = min(best, time.perf_counter() - t0), k + 1
        _SPEED[device] = 2 * n**3 / max(best, 1e-9)
    return _SPEED[device]


def check_run_time(flops: float, device: str, what: str, *, param: str = "batch") -> float:
    """Raise SolverInputError (one line) when ``flops`` would take more than :data:`RUN_BUDGET_S`
    on ``device`` even at :data:`PROBE_MARGIN` × the probe's speed; returns the estimate (s)."""
    if device == "meta" or flops <= 0:
        return 0.0
    speed = PROBE_MARGIN * matmul_speed(device)
    seconds = float(flops) / speed
    if seconds > RUN_BUDGET_S:
        raise SolverInputError(f"refusing to run {what} on {device}: its ~{float(flops):.3g} matmul FLOPs would take "
                               f"at least ~{seconds:.3g} s here (at {PROBE_MARGIN} × the {speed / PROBE_MARGIN:.3g} "
                               f"FLOP/s of a probe matmul), more than the {RUN_BUDGET_S:g} s a model may take; use "
                               "smaller sizes, or --device meta (counts without running)", param=param)
    return seconds


#: torch describes a tensor's size in bytes with a signed 64-bit integer: even the meta device,
#: which stores nothing, refuses a tensor of 2^63 bytes or more ("Storage size calculation overflowed").
DESCRIBABLE_BYTES = 2**62


def check_describable(parts: dict[str, int], what: str) -> None:
    """One line, on any device, when a tensor kind of a run would pass :data:`DESCRIBABLE_BYTES`."""
    big = {k: v for k, v in parts.items() if k != "total" and v >= DESCRIBABLE_BYTES}
    if big:
        raise SolverInputError(f"{what} is beyond what torch can describe even on the meta device "
                               f"({describe(big)}; a tensor's size must stay below 2^63 bytes); "
                               "use a smaller --batch or --seq", param="batch")


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
