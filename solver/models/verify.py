"""Check the analytic counts (``solver.counting``) against the reference model (``solver.models``).

Each check compares two numbers obtained independently:

- parameters: the analytic breakdown versus ``sum(p.numel() for p in model.parameters())`` of
  the model built on the meta device (``parameters()`` yields a shared tensor once, so a tied
  LM head is counted once); also per group (embedding, attention, ffn, norm, head, lora);
- FLOPs: the analytic matmul count versus ``torch.utils.flop_counter.FlopCounterMode`` around
  a real call of the model (2 FLOPs per multiply-add; FlopCounterMode counts matmuls only):
  ``forward`` = one pass over ``batch × seq`` tokens, ``decode`` = one new token per sequence
  after a prefill of ``seq − 1`` tokens (it attends to ``seq`` positions, the cache holds
  ``seq`` after the step), ``train`` = the forward pass plus the backward pass of a scalar
  that depends on every output, every parameter trainable;
- KV cache: the analytic bytes versus the bytes of the cache tensors after that decode step.

The counter is :class:`solver.models.flop_counter.TotalFlopCounter`: FlopCounterMode without its
per-module table (the same dispatch mode and matmul formulas; the tests check that both count
alike). Decode is always measured on the model itself. Forward and train are too, in one pass
with one backward pass, when no stack is deeper than two layers (or with ``train="full"``); a
deeper model's forward and train FLOPs are measured on slices of its own configuration, the same
runs for both (issue 20: the full-depth forward pass of DeepSeek-V3 on meta cost more than the
slices), see :func:`measure_forward_and_train_by_layers`.

FLOPs are counted with the model's explicit "math" attention (QKᵀ, softmax, then AV: the two
matmuls that the analytic count holds). On the meta device every tensor is a shape without
data, so GPT-3 175B costs no memory; ``scaled_dot_product_attention`` would run there as the
same two matmuls, only with more elementwise work for the mask (and every elementwise op on meta
is a Python shape computation). On the CPU the fused attention kernel is invisible to
FlopCounterMode, and on CUDA its registered backward counts a recomputation of QKᵀ. On CUDA the
record also holds the peak memory of a forward pass with the score matrix materialised
("math") and not (flash/efficient), :func:`forward_peak_memory`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError

DEVICES = ("meta", "cpu", "cuda")
FLOP_MODES = ("forward", "decode", "train")

#: Groups of ``solver.counting``' breakdown, and how a reference-model parameter name maps to one.
GROUPS = ("embedding", "attention", "cross_attention", "ffn", "norm", "head", "lora")


def group_of(name: str) -> str:
    """The breakdown group of a parameter of :class:`solver.models.Transformer` by its name."""
    parts = name.split(".")
    if "lora_A" in parts or "lora_B" in parts:
        return "lora"
    if parts[0] in ("tok_emb", "type_emb", "cls") or "pos_emb" in parts:
        return "embedding"
    if parts[0] in ("lm_head", "pooler", "classifier"):
        return "head"
    if parts[-2:-1] and parts[-2].endswith("norm"):  # attn_norm, cross_norm, ffn_norm, emb_norm, final_norm
        return "norm"
    if "cross_attn" in parts:
        return "cross_attention"
    if "attn" in parts:
        return "attention"
    if "ffn" in parts:
        return "ffn"
    raise AssertionError(f"parameter {name!r} belongs to no group")


def instantiated_breakdown(model) -> dict[str, int]:
    """Elements of the model's unique parameters, per group."""
    out: dict[str, int] = {}
    for name, p in model.named_parameters():  # shared tensors once (a tied LM head is tok_emb)
        g = group_of(name)
        out[g] = out.get(g, 0) + p.numel()
    return out


def analytic():
    """``solver.counting``, the analytic side (imported when first needed)."""
    import solver.counting as counts

    return counts


# ---- measuring the model --------------------------------------------------------------------

def flop_counter():
    """A fresh FlopCounterMode that keeps the total only (:mod:`solver.models.flop_counter`)."""
    from solver.models.flop_counter import TotalFlopCounter

    return TotalFlopCounter()


def _inputs(model, batch: int, seq: int) -> tuple[Any, dict[str, Any]]:
    import torch

    device = next(model.parameters()).device
    tokens = torch.zeros(batch, seq, dtype=torch.long, device=device)
    extra = {"src_tokens": tokens} if model.cfg.arch == "encoder-decoder" else {}
    return tokens, extra


def measure_forward(model, batch: int, seq: int, impl: str = "math", counter=flop_counter) -> int:
    """FlopCounterMode's FLOPs of one forward pass (under ``no_grad``: no graph for a backward)."""
    import torch

    tokens, extra = _inputs(model, batch, seq)
    with torch.no_grad(), counter() as c:
        model(tokens, impl=impl, **extra)
    return int(c.get_total_flops())


def measure_forward_and_train(model, batch: int, seq: int, impl: str = "math",
                              counter=flop_counter) -> tuple[int, int]:
    """FlopCounterMode's FLOPs of a forward pass, and of the same pass plus its backward pass:
    one run, the counter read before and after ``backward()``."""
    tokens, extra = _inputs(model, batch, seq)
    with counter() as c:
        out = model(tokens, impl=impl, **extra)
        forward = c.get_total_flops()
        out.scalar().backward()
    model.zero_grad(set_to_none=True)
    return int(forward), int(c.get_total_flops())


def measure_decode(model, batch: int, seq: int, impl: str = "math", prefill: str = "run", counter=flop_counter):
    """FlopCounterMode's FLOPs of one decode step that attends to ``seq`` positions, and the
    cache after it. ``prefill="run"`` fills the cache by running the model on ``seq − 1``
    tokens; ``"zeros"`` starts from a cache that already holds ``seq − 1`` positions of zeros
    (the same shapes, without the cost of the prefill)."""
    import torch

    if seq < 2:
        raise SolverInputError("a decode step needs seq >= 2 (a cache of seq - 1 positions first)", param="seq")
    assert prefill in ("run", "zeros"), f"prefill must be 'run' or 'zeros', got {prefill!r}"
    tokens, extra = _inputs(model, batch, seq)
    with torch.no_grad():
        if prefill == "run":
            cache = model.new_cache()
            model(tokens[:, : seq - 1], cache=cache, impl=impl, **extra)
        else:
            cache = model.new_cache(batch, seq - 1, src_length=seq)
        with counter() as c:
            model(tokens[:, seq - 1:], cache=cache, impl=impl)
    assert cache.length == seq, f"the cache should hold {seq} positions, holds {cache.length}"
    return int(c.get_total_flops()), cache


def measure_flops(model, batch: int, seq: int, mode: str, impl: str = "math") -> int:
    """FlopCounterMode's FLOPs of one ``mode`` step of ``model`` (see the module docstring)."""
    assert mode in FLOP_MODES, f"mode must be one of {FLOP_MODES}, got {mode!r}"
    if mode == "decode":
        return measure_decode(model, batch, seq, impl)[0]
    if mode == "forward":
        return measure_forward(model, batch, seq, impl)
    return measure_forward_and_train(model, batch, seq, impl)[1]


def measure_kv_cache_bytes(model, batch: int, seq: int, cross: bool = False) -> int:
    """Bytes of the self-attention cache (plus the cross-attention one if ``cross``) that the
    model holds after a prefill of ``seq − 1`` tokens and one decode step: ``seq`` positions."""
    return measure_decode(model, batch, seq)[1].nbytes(cross=cross)


# ---- train FLOPs of a deep model, from slices of it --------------------------------------------

#: A stack deeper than this is measured for train on slices of one and two layers.
SLICE_ABOVE = 2


def stack_layers(cfg: ModelConfig) -> dict[str, int]:
    """Layers per stack: ``{"encoder": L_e, "decoder": L_d}`` for the stacks that ``cfg`` has."""
    return {stack: n for stack, n in (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers))
            if stack in cfg.arch}


def with_layers(cfg: ModelConfig, layers: dict[str, int]) -> ModelConfig:
    """``cfg`` with the given layers per stack (everything else as it is)."""
    if cfg.arch == "encoder-decoder":
        return cfg.replace(n_encoder_layers=layers["encoder"], n_decoder_layers=layers["decoder"])
    return cfg.replace(n_layers=layers[cfg.arch])


def sliced_stacks(cfg: ModelConfig) -> list[str]:
    """The stacks whose train FLOPs :func:`measure_train_by_layers` takes from slices."""
    if cfg.moe_every > 1:  # dense and MoE layers interleaved: the layers are not alike, measure whole
        return []
    return [stack for stack, n in stack_layers(cfg).items() if n > SLICE_ABOVE]


def measure_train_by_layers(cfg: ModelConfig, batch: int, seq: int, impl: str = "math",
                            device: str = "meta") -> int:
    """The train FLOPs of :func:`measure_forward_and_train_by_layers`."""
    return measure_forward_and_train_by_layers(cfg, batch, seq, impl, device)[1]


def measure_forward_and_train_by_layers(cfg: ModelConfig, batch: int, seq: int, impl: str = "math",
                                        device: str = "meta") -> tuple[int, int]:
    """FlopCounterMode's train FLOPs of ``cfg``, measured on slices of it with fewer layers.

    Every layer of a stack is built from the same config and gets inputs of the same shapes
    ((B, T, d_model), the same RoPE/mask, the encoder's output in cross-attention), and
    FlopCounterMode counts a matmul from its shapes alone; so each layer of a stack adds the
    same FLOPs, in the forward pass and in the backward pass. With ``T(…)`` the measured train
    FLOPs of the same config at other depths, a stack of ``L`` layers (the others held fixed) has

        T(L) = T(1) + (L − 1) · (T(2) − T(1)),

    where ``T(2) − T(1)`` is one layer and ``T(1) − (T(2) − T(1))`` everything else (embeddings,
    norms, heads). For an encoder-decoder both stacks are sliced this way from the same base
    (both at one layer): three measurements. A stack of at most :data:`SLICE_ABOVE` layers is
    kept at its own depth. ``tests/solver/models/test_counts.py`` checks the identity against the
    whole model's backward pass for random configurations and small presets."""
    from solver.models import build_model

    full = stack_layers(cfg)
    sliced = sliced_stacks(cfg)
    base = {stack: 1 if stack in sliced else n for stack, n in full.items()}
    if "decoder" in sliced and cfg.arch == "decoder" and cfg.is_moe and cfg.first_dense_layers:
        # dense first layers (DeepSeek): the slices start after them, where the layers are alike
        base["decoder"] = max(1, min(cfg.first_dense_layers, full["decoder"] - 1))

    def train_at(layers: dict[str, int]) -> tuple[int, int]:
        model = build_model(with_layers(cfg, layers), device)
        return measure_forward_and_train(model, batch, seq, impl)

    at_base = train_at(base)
    forward, total = at_base
    for stack in sliced:
        more = train_at({**base, stack: base[stack] + 1})
        forward += (full[stack] - base[stack]) * (more[0] - at_base[0])  # the forward pass: the same identity
        total += (full[stack] - base[stack]) * (more[1] - at_base[1])
    return forward, total


# ---- one model, every check -----------------------------------------------------------------

@dataclass
class Check:
    quantity: str  # "params", "params[attention]", "flops[forward]", "kv_cache_bytes", ...
    analytic: int | None
    measured: int | None
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.analytic is not None and self.analytic == self.measured

    def to_json(self) -> dict[str, Any]:
        return {"quantity": self.quantity, "analytic": self.analytic, "measured": self.measured,
                "ok": self.ok, "note": self.note}


@dataclass
class VerifyRecord:
    name: str
    device: str
    batch: int
    seq: int
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # timings, peak memory (cpu/cuda)

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    def get(self, quantity: str) -> Check:
        for c in self.checks:
            if c.quantity == quantity:
                return c
        raise KeyError(quantity)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "device": self.device, "batch": self.batch, "seq": self.seq, "ok": self.ok,
                "seconds": self.seconds, "error": self.error, "checks": [c.to_json() for c in self.checks],
                **self.extra}


def default_seq(cfg: ModelConfig, seq: int) -> int:
    """``seq`` clipped to the position table (learned or sinusoidal)."""
    if cfg.pos in ("learned", "sinusoidal"):
        return max(2, min(seq, cfg.max_positions))
    return seq


TRAIN_METHODS = ("by-layers", "full")


def verify(cfg: ModelConfig, device: str = "meta", batch: int = 1, seq: int = 128,
           modes: tuple[str, ...] = FLOP_MODES, name: str | None = None, prefill: str = "run",
           train: str = "by-layers") -> VerifyRecord:
    """Build ``cfg`` on ``device`` and compare every analytic count with the model.

    ``prefill`` is how the decode step's cache of ``seq − 1`` positions is made (see
    :func:`measure_decode`): ``"run"`` (the default) or ``"zeros"`` (faster, for the whole zoo).
    ``train`` is how the train FLOPs of a model with a stack deeper than two layers are measured:
    ``"by-layers"`` (:func:`measure_train_by_layers`, the default) or ``"full"`` (one backward
    pass of the whole model)."""
    from solver.models import build_model

    if device not in DEVICES:
        raise SolverInputError(f"choose one of {', '.join(DEVICES)} (got {device!r})", param="device")
    if train not in TRAIN_METHODS:
        raise SolverInputError(f"choose one of {', '.join(TRAIN_METHODS)} (got {train!r})", param="train")
    require_device(device)
    seq = default_seq(cfg, seq)
    if name and not cfg.name:
        cfg = cfg.replace(name=name)  # the memory guard's message names the model
    record = VerifyRecord(name or cfg.name or "model", device, batch, seq)
    t0 = time.perf_counter()
    counts = analytic()
    from solver.models.guard import check_describable, run_bytes

    check_describable(run_bytes(cfg, batch, seq, 4), f"{cfg.name or 'the model'} at batch {batch} × seq {seq}")
    # (the same bound as :func:`beyond_describable`, which ``qkv models verify`` checks for every model first)
    if device != "meta":  # every tensor of the run, not only the weights, before allocating any
        from solver.models.guard import check_fits, check_run_fits, check_run_time, describe

        check_fits(cfg, device)  # the weights alone first: the plainer message when they do not fit
        layers = cfg.n_layers if "train" in modes and (train == "full" or not sliced_stacks(cfg)) else 2
        parts = run_bytes(cfg, batch, seq, 4, train_layers=min(layers, cfg.n_layers) if "train" in modes else None)
        check_run_fits(parts["total"], device, f"{cfg.name or 'the model'} at batch {batch} × seq {seq}",
                       param="batch", detail=describe(parts))
        check_run_time(run_flops(cfg, batch, seq, modes, train), device,
                       f"{cfg.name or 'the model'} at batch {batch} × seq {seq}")
    model = build_model(cfg, device)

    # parameters: total, and per group (a mismatch in a group says where to look)
    breakdown = counts.param_breakdown(cfg)
    mine = instantiated_breakdown(model)
    record.checks.append(Check("params", breakdown.total_with_lora, sum(mine.values()),
                               "LoRA adapters included" if cfg.lora_rank else ""))
    theirs = breakdown.by_group()
    for g in GROUPS:
        if theirs.get(g, 0) or mine.get(g, 0):
            record.checks.append(Check(f"params[{g}]", theirs.get(g, 0), mine.get(g, 0)))

    # FLOPs with the explicit "math" attention (see the module docstring)
    impl = "math"

    def flop_check(mode: str, measured: int, note: str = "") -> None:
        if mode in modes:
            expected = counts.matmul_flops(cfg, batch=batch, seq=seq, mode=mode).total
            record.checks.append(Check(f"flops[{mode}]", int(expected), measured, note))

    if "train" in modes and (train == "full" or not sliced_stacks(cfg)):
        forward, train_flops = measure_forward_and_train(model, batch, seq, impl)  # one pass: both
        flop_check("forward", forward)
        flop_check("train", train_flops)
    elif "train" in modes:  # a deep stack: forward and train from the same 1- and 2-layer slices
        forward, train_flops = measure_forward_and_train_by_layers(cfg, batch, seq, impl, device)
        if "forward" in modes:
            flop_check("forward", forward, "measured on 1- and 2-layer slices, scaled by the layers")
        flop_check("train", train_flops, "measured on 1- and 2-layer slices, scaled by the layers")
    elif "forward" in modes:
        flop_check("forward", measure_forward(model, batch, seq, impl))

    # one decode step after a cache of seq - 1 positions, and the KV cache it leaves (fp32)
    if cfg.arch != "encoder" and seq >= 2:
        decode, cache = measure_decode(model, batch, seq, impl, prefill=prefill)
        flop_check("decode", decode)
        expected = counts.kv_cache_bytes_cfg(cfg, batch=batch, seq=seq, dtype="fp32")
        record.checks.append(Check("kv_cache_bytes", int(expected), cache.nbytes()))
        if cfg.arch == "encoder-decoder":
            expected = counts.kv_cache_bytes_cfg(cfg, batch=batch, seq=seq, dtype="fp32", include_cross=True)
            record.checks.append(Check("kv_cache_bytes[+cross]", int(expected), cache.nbytes(cross=True)))

    if device != "meta":
        record.extra["forward_seconds"] = time_forward(model, batch, seq)
    if device.startswith("cuda"):
        record.extra["peak_memory"] = forward_peak_memory(model, batch, seq)
    record.seconds = time.perf_counter() - t0
    return record


def run_flops(cfg: ModelConfig, batch: int, seq: int, modes: tuple[str, ...] = FLOP_MODES,
              train: str = "by-layers") -> int:
    """A low estimate of the matmul FLOPs :func:`verify` runs on cpu/cuda: three forward passes
    (the prefill of the decode step and :func:`time_forward`'s two), the train step (forward and
    backward) or, on 1- and 2-layer slices of a deep stack, ``3 / layers`` of the whole model's
    (the slices cost 2·E + 3·X with E the layers' outside and X one layer, at least 3·(E + L·X) / L
    from L = 2 on). The analytic counts of ``solver.counting``."""
    counts = analytic()
    forward = int(counts.matmul_flops(cfg, batch=batch, seq=seq, mode="forward").total)
    total = 3 * forward
    if "train" in modes:
        whole = int(counts.matmul_flops(cfg, batch=batch, seq=seq, mode="train").total)
        total += whole if train == "full" or not sliced_stacks(cfg) else whole * 3 // max(2, cfg.n_layers)
    elif "forward" in modes:
        total += forward
    return total


def beyond_describable(cfg: ModelConfig, batch: int, seq: int) -> dict[str, int]:
    """The tensor kinds of a :func:`verify` run of ``cfg`` at ``batch`` × ``seq`` (``seq`` clipped as
    verify clips it) that torch cannot describe even on the meta device: the check
    :func:`verify` makes before building, from the analytic sizes alone (no torch, about 0.2 ms).
    Empty when the run can be described."""
    from solver.models.guard import DESCRIBABLE_BYTES, run_bytes

    parts = run_bytes(cfg, batch, default_seq(cfg, seq), 4)
    return {k: v for k, v in parts.items() if k != "total" and v >= DESCRIBABLE_BYTES}


def largest_describable(cfgs: list[ModelConfig], batch: int, seq: int, vary: str = "seq") -> int | None:
    """The largest ``seq`` (``vary="seq"``, at ``batch``) or ``batch`` (``vary="batch"``, at ``seq``),
    at most the one given, at which every config of ``cfgs`` passes :func:`beyond_describable`;
    None when even the smallest (seq 2, batch 1) does not. A bisection: every size grows with both."""
    def fits(n: int) -> bool:
        b, s = (batch, n) if vary == "seq" else (n, seq)
        return not any(beyond_describable(c, b, s) for c in cfgs)

    lo = 2 if vary == "seq" else 1
    hi = min(seq if vary == "seq" else batch, 2**62)  # 2^62 of anything is past the bound
    if not fits(lo):
        return None
    if fits(hi):
        return hi
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def time_forward(model, batch: int, seq: int) -> float:
    """Wall-clock seconds of one forward pass (after a warm-up pass)."""
    import torch

    tokens, extra = _inputs(model, batch, seq)
    with torch.no_grad():
        model(tokens, **extra)
        sync = torch.cuda.synchronize if tokens.is_cuda else (lambda: None)
        sync()
        t = time.perf_counter()
        model(tokens, **extra)
        sync()
    return time.perf_counter() - t


def require_device(device: str) -> None:
    """Raise SolverInputError (one line) when ``device`` is cuda and no GPU is visible."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SolverInputError("no CUDA GPU on this machine (torch.cuda.is_available() is False); "
                                   "use --device meta or cpu", param="device")


# ---- the O(n²) memory claim, measured -------------------------------------------------------

def forward_peak_memory(model, batch: int, seq: int) -> dict[str, int]:
    """Peak CUDA memory of one forward pass of ``model`` (bytes above what was allocated before
    it, ``torch.cuda.max_memory_allocated``) with the "math" attention, which materialises the
    (B, nh, n, n) score matrix, and with ``scaled_dot_product_attention`` (flash/efficient
    kernels), which does not; ``score_matrix_bytes`` is the size of one layer's matrix."""
    import torch

    device = next(model.parameters()).device
    tokens, extra = _inputs(model, batch, seq)
    out: dict[str, int] = {}
    for impl in ("math", "sdpa"):
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        with torch.no_grad():
            model(tokens, impl=impl, **extra)
        torch.cuda.synchronize(device)
        out[impl] = int(torch.cuda.max_memory_allocated(device) - base)
    element = model.tok_emb.weight.element_size()
    out["score_matrix_bytes"] = batch * model.cfg.n_heads * seq * seq * element
    return out


def attention_peak_memory(cfg: ModelConfig, batch: int = 1, seq: int = 1024, device: str = "cuda",
                          dtype: str = "fp16") -> dict[str, int]:
    """:func:`forward_peak_memory` of ``cfg`` built on a GPU at ``dtype`` (flash attention needs
    fp16 or bf16). Raises SolverInputError without a GPU."""
    from solver.models import build_model

    require_device(device)
    if not device.startswith("cuda"):
        raise SolverInputError("peak memory is measured with torch.cuda: use --device cuda", param="device")
    model = build_model(cfg, device, dtype=dtype).eval()
    return forward_peak_memory(model, batch, default_seq(cfg, seq))


# ---- many models ------------------------------------------------------------------------------

# ---- a model too large for the device: built smaller, and named -------------------------------

def reduced_layers(cfg: ModelConfig) -> dict[str, int]:
    """The fewest layers per stack that keep every kind of layer ``cfg`` has: its dense first layers
    and one MoE layer, a local and a global layer, and at least 2 (so a layer's FLOPs show)."""
    keep = max(2, cfg.first_dense_layers + max(1, cfg.moe_every) if cfg.is_moe else 2, cfg.global_every)
    return {stack: min(n, keep) for stack, n in stack_layers(cfg).items()}


def fewer_experts(cfg: ModelConfig, free: int | None) -> ModelConfig | None:
    """``cfg`` at its reduced depth with the fewest halvings of its experts (never below top_k) that
    let fp32 weights and gradients (and as much again for the run) take at most 80 % of ``free``
    bytes; None for a dense model, an unknown memory or when nothing fits. Every kind of layer is
    still built; the counts are exact for the config built."""
    from solver.counting import param_breakdown

    if not cfg.is_moe or free is None:
        return None
    n = cfg.n_experts
    while n // 2 >= max(cfg.top_k, 2):
        n //= 2
        built = with_layers(cfg.replace(n_experts=n), reduced_layers(cfg))
        if fp32_training_fits(param_breakdown(built).total_with_lora, free):
            return built
    return None


def fp32_training_fits(params: int, free: int) -> bool:
    """fp32 weights and gradients, and as much again for the run (12 bytes per parameter), in at most
    80 % of ``free`` bytes: the rule :func:`fewer_experts` halves by (and bench/gpu.py plans its time by)."""
    return 3 * 4 * params <= 0.8 * free


def _fits_message(error: str) -> bool:
    """A refusal that a smaller build mends: the memory or the time guard's (not a bad input)."""
    return error.startswith(("refusing to run", "refusing to build"))


def verify_fitted(cfg: ModelConfig, device: str = "meta", batch: int = 1, seq: int = 128,
                  name: str | None = None, prefill: str = "run", train: str = "by-layers"
                  ) -> tuple[VerifyRecord, ModelConfig]:
    """:func:`verify` of ``cfg``; where the memory or time guard refuses it (or the device runs out
    of memory), again at :func:`reduced_layers`, then with :func:`fewer_experts`. Returns the record
    and the config built: the record's ``extra["built"]`` names its layers and experts beside the
    full model's whenever they differ (``qkv models verify --fit``, ``bench/gpu.py``)."""
    from solver.models.guard import available_bytes

    reduced = with_layers(cfg, reduced_layers(cfg))
    candidates = [lambda: cfg] + ([lambda: reduced] if reduced != cfg else [])
    if device != "meta":  # the experts' count matters only where memory does
        candidates.append(lambda: fewer_experts(cfg, available_bytes(device)))
    record = None
    built = cfg
    for make in candidates:
        attempt = make()
        if attempt is None:
            break
        built = attempt
        try:
            record = verify(built, device, batch=batch, seq=seq, name=name, prefill=prefill, train=train)
        except SolverInputError as e:
            record = VerifyRecord(name or cfg.name or "model", device, batch, default_seq(cfg, seq),
                                  error=_as_built(built, cfg) + e.args[0])
            if not _fits_message(e.args[0]):
                break
            continue
        except RuntimeError as e:  # the device ran out of memory after all: smaller, if it can be
            if "out of memory" not in str(e):
                raise
            _release(device)
            record = VerifyRecord(name or cfg.name or "model", device, batch, default_seq(cfg, seq),
                                  error=_as_built(built, cfg) + f"out of memory on {device}: "
                                                                  f"{str(e).splitlines()[0][:160]}")
            continue
        if record.error is None or not _fits_message(record.error):
            break
    if record is not None and record.error is None and built is not cfg:
        record.extra["built"] = what_was_built(built, cfg)
    return record, built


def what_was_built(built: ModelConfig, cfg: ModelConfig) -> dict[str, Any]:
    """The record's ``built``: the layers per stack built and the full model's, and the experts where
    they were halved."""
    return {"layers": stack_layers(built), "full_layers": stack_layers(cfg),
            **({"experts": built.n_experts, "full_experts": cfg.n_experts} if built.n_experts != cfg.n_experts else {})}


def built_label(built: dict[str, Any]) -> str:
    """``4/61 layers, 128/256 experts`` (``2/6 encoder layers, 2/6 decoder layers``) for a record's ``built``."""
    layers, full = built["layers"], built["full_layers"]
    parts = [f"{layers[k]}/{full[k]}{' ' + k if len(full) > 1 else ''} layers" for k in layers]
    if "experts" in built:
        parts.append(f"{built['experts']}/{built['full_experts']} experts")
    return ", ".join(parts)


def _as_built(built: ModelConfig, cfg: ModelConfig) -> str:
    """``"at 4/61 layers, 8/256 experts: "`` before the refusal of a smaller build (nothing for the model itself)."""
    return "" if built is cfg else f"at {built_label(what_was_built(built, cfg))}: "


def _release(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _verify_job(args: tuple) -> VerifyRecord:
    cfg, device, batch, seq, name, prefill, train, fit = args
    if fit:
        return verify_fitted(cfg, device, batch=batch, seq=seq, name=name, prefill=prefill, train=train)[0]
    try:
        return verify(cfg, device, batch=batch, seq=seq, name=name, prefill=prefill, train=train)
    except SolverInputError as e:  # e.g. the memory guard: the model is not built
        return VerifyRecord(name, device, batch, default_seq(cfg, seq), error=e.args[0])


def verify_many(named: list[tuple[str, ModelConfig]], device: str = "meta", batch: int = 1, seq: int = 128,
                jobs: int = 1, prefill: str = "run", train: str = "by-layers", on_done=None,
                fit: bool = False) -> list[VerifyRecord]:
    """:func:`verify` for each ``(name, config)``, in that order, in ``jobs`` processes (meta
    only: real builds stay in this process); ``on_done(record)`` is called as each finishes.
    A model refused by the memory guard gets a record with ``error`` set instead of checks; with
    ``fit``, it is first built smaller (:func:`verify_fitted`)."""
    work = [(cfg, device, batch, seq, name, prefill, train, fit) for name, cfg in named]
    if jobs <= 1 or device != "meta" or len(work) < 2:
        records = []
        for w in work:
            records.append(_verify_job(w))
            if device != "meta":
                _release(device)  # the model just verified, before the next one's memory check
            if on_done:
                on_done(records[-1])
        return records

    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # the largest first (longest-processing-time scheduling), results back in the given order
    order = sorted(range(len(work)), key=lambda i: -work[i][0].n_layers * work[i][0].d_model)
    done: dict[int, VerifyRecord] = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_verify_job, work[i]): i for i in order}
        for future in as_completed(futures):
            done[futures[future]] = record = future.result()
            if on_done:
                on_done(record)
    return [done[i] for i in range(len(work))]
