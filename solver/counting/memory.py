"""Exact bytes of weights, the KV cache, the attention score matrix and Adam training state.

Every figure is an integer number of bytes first (``MemoryReport.bytes``); GB (10⁹) and GiB
(2³⁰) are two views of it. ``int4`` packs two values per byte: an odd element count rounds up
to whole bytes (the last byte half used), so int4 figures are ``ceil(elements / 2)``.
Activations are not part of ``training_bytes`` (they depend on batch, length and
recomputation: see the hardware helpers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from solver.counting.config import ModelConfig
from solver.counting.params import param_breakdown
from solver.errors import SolverInputError
from solver.units import bytes_views, dtype_bytes, format_bytes, plural

TRAINING_MODES = ("mixed", "fp32")


def _bytes(elements: int, dtype: str) -> int:
    """Whole bytes holding ``elements`` values of ``dtype`` (int4 rounds up)."""
    return math.ceil(elements * dtype_bytes(dtype))


def _positive(name: str, value: Any, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)


@dataclass(frozen=True)
class MemoryItem:
    """One part of a memory figure: ``bytes`` from ``formula`` (plain Unicode)."""

    name: str
    bytes: int
    formula: str


@dataclass(frozen=True)
class MemoryReport:
    """An exact byte count, its parts, and the convention that produced it."""

    what: str
    items: tuple[MemoryItem, ...]
    formula: str
    convention: str

    @property
    def bytes(self) -> int:
        return sum(i.bytes for i in self.items)

    @property
    def gb(self) -> float:
        return self.bytes / 10**9

    @property
    def gib(self) -> float:
        return self.bytes / 2**30

    def text(self) -> str:
        return format_bytes(self.bytes)

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "bytes": self.bytes, "views": bytes_views(self.bytes), "formula": self.formula,
                "convention": self.convention,
                "items": [{"name": i.name, "bytes": i.bytes, "formula": i.formula} for i in self.items]}


# ---- weights -------------------------------------------------------------------------
def weights_bytes(cfg: ModelConfig, dtype: str = "fp16") -> int:
    """Bytes of all parameters at one dtype: ``(total + lora) × bytes/element``."""
    return weights_report(cfg, dtype).bytes


def weights_report(cfg: ModelConfig, dtype: str = "fp16") -> MemoryReport:
    """Bytes of all parameters at one dtype: ``(total + lora) × bytes/element``, by part.

    LoRA adapters, when present, are held too, so they are included (as their own item).
    """
    pb = param_breakdown(cfg)
    b = dtype_bytes(dtype)

    def product(n: int) -> str:  # int4: an odd count's last byte is half used, said as ⌈n × 1/2⌉
        return f"{n:,} × {_fmt(b)} B" if (n * b).denominator == 1 else f"⌈{n:,} × {_fmt(b)}⌉ B"

    items = [MemoryItem("base weights", _bytes(pb.total, dtype), product(pb.total))]
    if pb.lora:
        items.append(MemoryItem("LoRA adapters", _bytes(pb.lora, dtype), product(pb.lora)))
    detail = f"dtype {dtype}: {_fmt(b)} B/param"
    if b.denominator != 1:
        detail += " (two values a byte: an odd count rounds up to a whole byte)"
    return MemoryReport("weights", tuple(items), "N × bytes per parameter", detail)


# ---- KV cache --------------------------------------------------------------------------
def kv_cache_bytes(n_layers: int, batch: int, seq: int, n_kv_heads: int, d_head: int, dtype: str = "fp16") -> int:
    """KV cache = 2 (K and V) × layers × B × n × kv_heads × d_head × bytes/element."""
    for name, value in (("n_layers", n_layers), ("batch", batch), ("seq", seq), ("n_kv_heads", n_kv_heads),
                        ("d_head", d_head)):
        _positive(name, value, 0 if name == "n_layers" else 1)
    return _bytes(2 * n_layers * batch * seq * n_kv_heads * d_head, dtype)


def kv_cache_bytes_cfg(cfg: ModelConfig, batch: int, seq: int, dtype: str = "fp16", *,
                       src_seq: int | None = None, include_cross: bool = False) -> int:
    """``kv_cache_bytes`` for ``cfg`` (which layers cache: see ``kv_cache_report``)."""
    return kv_cache_report(cfg, batch, seq, dtype, src_seq=src_seq, include_cross=include_cross).bytes


def kv_cache_report(cfg: ModelConfig, batch: int, seq: int, dtype: str = "fp16", *, src_seq: int | None = None,
                    include_cross: bool = False) -> MemoryReport:
    """The KV cache of ``cfg`` holding ``seq`` positions per sequence.

    Which layers cache: every layer of a decoder; for an encoder-decoder, the decoder's
    self-attention layers (the default; the cross-attention K/V of the encoder output,
    ``2 × L_d × B × s × kv_heads × d_head`` elements with ``s = src_seq`` (default ``seq``), are
    computed once per sequence and counted only with ``include_cross=True``). An encoder has
    no KV cache.
    """
    if cfg.arch == "encoder":
        raise SolverInputError("an encoder has no KV cache (it does not decode)", param="arch")
    L = cfg.decoder_layers
    b = dtype_bytes(dtype)
    if cfg.is_mla or cfg.sliding_window:
        return _kv_cache_latent_or_window(cfg, batch, seq, dtype)
    items = [MemoryItem("self-attention K and V", kv_cache_bytes(L, batch, seq, cfg.kv_heads, cfg.head_dim, dtype),
                        f"2 × {L} × {batch} × {seq} × {cfg.kv_heads} × {cfg.head_dim} × {_fmt(b)} B")]
    if include_cross and cfg.arch == "encoder-decoder":
        s = src_seq if src_seq is not None else seq
        items.append(MemoryItem("cross-attention K and V", kv_cache_bytes(L, batch, s, cfg.kv_heads, cfg.head_dim, dtype),
                                f"2 × {L} × {batch} × {s} × {cfg.kv_heads} × {cfg.head_dim} × {_fmt(b)} B"))
    return MemoryReport("kv-cache", tuple(items), "2 × L × B × n × h_kv × d_h × bytes",
                        f"K and V both cached, {L} layers; n_kv_heads = {cfg.kv_heads}"
                        + (f" (not n_heads = {cfg.n_heads})" if cfg.kv_heads != cfg.n_heads else "")
                        + ("; decoder self-attention only (cross-attention K/V: --include-cross)"
                           if cfg.arch == "encoder-decoder" and not include_cross else "")
                        + f"; dtype {dtype}")


def _kv_cache_latent_or_window(cfg: ModelConfig, batch: int, seq: int, dtype: str) -> MemoryReport:
    """The cache of latent attention and/or of windowed layers (issue 10).

    Latent attention (DeepSeek-V2 §2.1.2) caches, per token and layer, the latent c_KV (d_c) and
    the one rotary key shared by the heads (d_R): (d_c + d_R) elements, where MHA caches
    2·h·d_h. A layer with a sliding window W keeps the last min(n, W) positions (a rolling
    buffer; Mistral 7B §2), a global layer all n."""
    _positive("batch", batch)
    _positive("seq", seq)
    L = cfg.decoder_layers
    b = dtype_bytes(dtype)
    per_token = cfg.kv_lora_rank + cfg.qk_rope_head_dim if cfg.is_mla else 2 * cfg.kv_heads * cfg.head_dim
    per_sym = "(d_c + d_R)" if cfg.is_mla else "2 × h_kv × d_h"
    per_txt = (f"({cfg.kv_lora_rank} + {cfg.qk_rope_head_dim})" if cfg.is_mla
               else f"2 × {cfg.kv_heads} × {cfg.head_dim}")
    local = cfg.local_layers_of(L)
    items = []
    if local:
        held = min(seq, cfg.sliding_window)
        items.append(MemoryItem(f"{plural(local, 'windowed layer')} (last min(n, W) = {plural(held, 'position')})",
                                _bytes(local * batch * held * per_token, dtype),
                                f"{local} × {batch} × {held} × {per_txt} × {_fmt(b)} B"))
    if L - local:
        items.append(MemoryItem(f"{plural(L - local, 'layer')} over "
                                + (f"all {seq} positions" if seq != 1 else "its 1 position"),
                                _bytes((L - local) * batch * seq * per_token, dtype),
                                f"{L - local} × {batch} × {seq} × {per_txt} × {_fmt(b)} B"))
    what = "latent c_KV and the shared rotary key" if cfg.is_mla else "K and V"
    conv = (f"latent attention: {what} cached, d_c = {cfg.kv_lora_rank}, d_R = {cfg.qk_rope_head_dim} "
            f"(MHA of the same heads would cache 2 × {cfg.n_heads} × {cfg.head_dim} = "
            f"{2 * cfg.n_heads * cfg.head_dim} per token and layer)" if cfg.is_mla else
            f"K and V both cached; n_kv_heads = {cfg.kv_heads}")
    if cfg.sliding_window:
        conv += (f"; sliding window W = {cfg.sliding_window} on {local} of {plural(L, 'layer')} "
                 f"(rolling buffer of min(n, W) positions)")
    return MemoryReport("kv-cache", tuple(items),
                        f"Σ_layers B × n_layer × {per_sym} × bytes (n_layer = min(n, W) in a windowed layer)",
                        conv + f"; dtype {dtype}")


def kv_cache_per_token_comparison(cfg: ModelConfig) -> dict[str, int]:
    """Cache elements per token and layer of ``cfg``'s attention beside MHA, GQA and MQA of the
    same heads (n_heads × d_head): what DeepSeek-V2's Table 1 compares."""
    h, dh = cfg.n_heads, cfg.head_dim
    out = {"mha": 2 * h * dh, "mqa": 2 * dh}
    if cfg.kv_heads not in (h, 1):
        out["gqa"] = 2 * cfg.kv_heads * dh
    if cfg.is_mla:
        out["mla"] = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    return out


# ---- attention scores ----------------------------------------------------------------
def attention_scores_bytes(batch: int, n_heads: int, seq: int, dtype: str = "fp16", kv_seq: int | None = None) -> int:
    """One layer's materialised score matrix: B × heads × n × n_k × bytes (n_k = kv_seq or n)."""
    nk = seq if kv_seq is None else kv_seq
    for name, value in (("batch", batch), ("n_heads", n_heads), ("seq", seq), ("kv_seq", nk)):
        _positive(name, value)
    return _bytes(batch * n_heads * seq * nk, dtype)


def attention_scores_report(batch: int, n_heads: int, seq: int, dtype: str = "fp16",
                            kv_seq: int | None = None) -> MemoryReport:
    nk = seq if kv_seq is None else kv_seq
    b = dtype_bytes(dtype)
    item = MemoryItem("scores B×h×n×n_k", attention_scores_bytes(batch, n_heads, seq, dtype, kv_seq),
                      f"{batch} × {n_heads} × {seq} × {nk} × {_fmt(b)} B")
    return MemoryReport("attention-scores", (item,), "B × h × n × n_k × bytes",
                        f"one layer, one matrix (the softmax output is another of the same size); dtype {dtype}")


def sdpa_math_workspace(batch: int, n_heads: int, seq: int, d_head: int, element: int,
                        causal: bool = False) -> dict[str, int]:
    """Bytes PyTorch's *math* SDPA backend allocates beyond Q, K and V at its peak, by part.

    Convention (PyTorch >= 2.5, ``_scaled_dot_product_attention_math``): fp16/bf16 inputs are
    upcast, so the scores are fp32 whatever ``element`` (the input's bytes) is. At the peak two
    fp32 B×h×T×T tensors are alive (the masked scores and their softmax) with one byte per score
    (the safe softmax's check for rows that are all masked); a causal call adds its T×T mask as
    fp32; and fp32 T×d tensors of 16 bytes per element of Q when upcast (copies of Q, K, V and the
    output), 4 otherwise (the output), for T >= 4·d_head. Measured on an H200 (bench/gpu.py: within 0.01 % from 1k to 16k
    tokens); its op-by-op allocations are traced on a CPU by tests/solver/counting/test_memory.py."""
    for name, value in (("batch", batch), ("n_heads", n_heads), ("seq", seq), ("d_head", d_head)):
        _positive(name, value)
    scores = batch * n_heads * seq * seq
    rows = batch * n_heads * seq * d_head
    return {"scores and softmax (fp32)": 8 * scores, "all-masked-row flags (1 byte per score)": scores,
            "causal mask (fp32)": 4 * seq * seq if causal else 0,
            "fp32 T×d tensors": (16 if element < 4 else 4) * rows}


# ---- training state ------------------------------------------------------------------
#: Adam model-state bytes per parameter, by part.
ADAM_BYTES: dict[str, tuple[tuple[str, int], ...]] = {
    "mixed": (("fp16/bf16 weights", 2), ("fp16/bf16 gradients", 2), ("fp32 master weights", 4),
              ("fp32 Adam m (momentum)", 4), ("fp32 Adam v (variance)", 4)),
    "fp32": (("fp32 weights", 4), ("fp32 gradients", 4), ("fp32 Adam m (momentum)", 4),
             ("fp32 Adam v (variance)", 4)),
}


def training_bytes(cfg: ModelConfig, mode: str = "mixed") -> int:
    """Bytes of Adam model states (16 per parameter in both modes; see ``training_report``)."""
    return training_report(cfg, mode).bytes


def training_report(cfg: ModelConfig, mode: str = "mixed") -> MemoryReport:
    """Model states of Adam training (activations excluded), every parameter trainable.

    mixed precision: 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter (Rajbhandari et al. 2020,
    ZeRO §3.1); fp32: 4 + 4 + 4 + 4 = 16 bytes too, without the master copy.
    """
    if mode not in TRAINING_MODES:
        raise SolverInputError(f"must be one of {', '.join(TRAINING_MODES)} (got {mode!r})", param="mode")
    n = param_breakdown(cfg).total_with_lora
    items = tuple(MemoryItem(part, n * k, f"{n:,} × {k} B") for part, k in ADAM_BYTES[mode])
    per = sum(k for _, k in ADAM_BYTES[mode])
    parts = " + ".join(str(k) for _, k in ADAM_BYTES[mode])
    return MemoryReport("training", items, f"N × ({parts}) = {per}·N bytes",
                        f"Adam, {mode} precision; {per} bytes/parameter; activations not included")


def _fmt(b: Fraction) -> str:
    return str(b.numerator) if b.denominator == 1 else f"{b.numerator}/{b.denominator}"
