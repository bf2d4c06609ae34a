"""Exact parameter counts of a :class:`~solver.counting.config.ModelConfig`, component by component.

Conventions (the model is the one described in ``solver.counting.config``'s docstring):

- a parameter is one trainable scalar; ``total`` is the base model, each shared tensor counted
  once (``sum(p.numel() for p in model.parameters())`` of the reference model built with
  ``lora_rank = 0``; with LoRA the adapters add ``lora``, so the module holds
  ``total_with_lora``);
- ``embedding`` = the token, position and segment tables, the [CLS] vector and an *untied* LM
  head weight (the vocabulary matrices, Kaplan et al. 2020's exclusion);
  ``non_embedding = total − embedding`` (norms and biases included);
- buffers (sinusoidal tables, masks, RoPE frequencies) are not parameters.

Every component is a monomial in the configuration's symbols (``V·d``, ``2·L·d``...), so a
worked solution can show the formula, the substitution and the integer; SymPy is imported
only inside :meth:`ParamBreakdown.formula`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from solver.counting.config import ModelConfig

#: Symbol name -> (what it stands for, how to read it from a config).
SYMBOLS: dict[str, str] = {
    "V": "vocab_size",
    "P": "max_positions",
    "T": "type_vocab_size",
    "d": "d_model",
    "L": "n_layers",
    "L_e": "n_encoder_layers",
    "L_d": "n_decoder_layers",
    "h": "n_heads",
    "h_kv": "n_kv_heads",
    "d_h": "d_head",
    "d_ff": "d_ff",
    "E": "n_experts",
    "r": "lora_rank",
    "C": "n_classes",
    # issue 10: experts, latent attention
    "E_s": "n_shared_experts",
    "d_fe": "d_ff_expert",
    "L_D": "first_dense_layers",
    "L_M": "MoE layers (n_layers - first_dense_layers, every moe_every-th)",
    "d_c": "kv_lora_rank",
    "d_cq": "q_lora_rank",
    "d_R": "qk_rope_head_dim",
    "d_v": "v_head_dim",
    "k": "top_k",
    # issue 20
    "P_o": "position_offset",
    "d_fs": "d_ff_shared",
    "n_norm": "norms per layer",
    "d_r": "rotary_dim",
}


def symbol_values(cfg: ModelConfig) -> dict[str, int]:
    """The integer each symbol takes for ``cfg`` (defaults resolved: ``h_kv``, ``d_h``)."""
    return {
        "V": cfg.vocab_size, "P": cfg.max_positions, "T": cfg.type_vocab_size, "d": cfg.d_model,
        "L": cfg.n_layers, "L_e": cfg.encoder_layers, "L_d": cfg.decoder_layers,
        "h": cfg.n_heads, "h_kv": cfg.kv_heads, "d_h": cfg.head_dim, "d_ff": cfg.d_ff,
        "E": cfg.n_experts, "r": cfg.lora_rank, "C": cfg.n_classes,
        "E_s": cfg.n_shared_experts, "d_fe": cfg.expert_ff, "L_D": cfg.dense_layers_of(cfg.n_layers),
        "L_M": cfg.n_layers - cfg.dense_layers_of(cfg.n_layers), "d_c": cfg.kv_lora_rank, "d_cq": cfg.q_lora_rank,
        "d_R": cfg.qk_rope_head_dim, "d_v": cfg.value_head_dim, "k": cfg.top_k,
        "P_o": cfg.position_offset, "d_fs": cfg.shared_ff, "n_norm": cfg.norms_per_layer, "d_r": cfg.rope_dim,
    }


Factor = int | str  # an integer coefficient or a symbol name of SYMBOLS


@dataclass(frozen=True)
class ParamComponent:
    """One kind of tensor, ``times`` occurrences of ``per`` parameters each.

    ``name`` is stable (``"attn.q.weight"``, ``"ffn.up.bias"``, ``"token_embedding"``...);
    ``label`` is for people; ``group`` is one of embedding, attention, cross_attention, ffn,
    norm, head, lora; ``stack`` is "" (one stack), "encoder" or "decoder"; ``shape`` is the
    shape of one tensor; ``per_factors``/``times_factors`` are the monomials
    (integers and symbol names) whose products are ``per`` and ``times``.
    """

    name: str
    label: str
    group: str
    stack: str
    shape: tuple[int, ...]
    per: int
    times: int
    per_factors: tuple[Factor, ...]
    times_factors: tuple[Factor, ...]

    @property
    def count(self) -> int:
        return self.per * self.times

    @property
    def key(self) -> str:
        return f"{self.stack}.{self.name}" if self.stack else self.name

    def formula_text(self) -> str:
        """Plain-Unicode monomial, e.g. ``L·d·h·d_h``."""
        factors = [f for f in (*self.times_factors, *self.per_factors) if f != 1]
        return "·".join(str(f) for f in factors) or "1"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.key, "label": self.label, "group": self.group, "shape": list(self.shape),
                "per": self.per, "times": self.times, "count": self.count, "formula": self.formula_text()}


@dataclass(frozen=True)
class ParamBreakdown:
    """Ordered components and the totals of one configuration (see the module docstring)."""

    config: ModelConfig
    components: tuple[ParamComponent, ...]

    @property
    def total(self) -> int:
        """Parameters of the base model (LoRA adapters excluded)."""
        return sum(c.count for c in self.components if c.group != "lora")

    @property
    def lora(self) -> int:
        """Parameters of the LoRA adapters alone."""
        return sum(c.count for c in self.components if c.group == "lora")

    @property
    def total_with_lora(self) -> int:
        return self.total + self.lora

    @property
    def active(self) -> int:
        """Parameters one token's forward pass uses (base model): the routed experts count
        ``top_k / n_experts`` of their total; everything else (router and shared experts
        included) counts whole. Equal to ``total`` without experts. Embedding tables count
        whole too (the convention of Mixtral's 12.9B and DeepSeek-V2's 21B active)."""
        cfg = self.config
        routed = sum(c.count for c in self.components if c.group == "ffn" and c.name.startswith("ffn.expert."))
        if not routed:
            return self.total
        assert routed % cfg.n_experts == 0
        return self.total - routed + routed // cfg.n_experts * cfg.top_k

    @property
    def routed_experts(self) -> int:
        """Parameters of all routed experts together (0 without experts)."""
        return sum(c.count for c in self.components if c.name.startswith("ffn.expert."))

    @property
    def embedding(self) -> int:
        """Token/position/segment tables, the [CLS] vector and an untied LM head weight."""
        return sum(c.count for c in self.components
                   if c.group == "embedding" or c.name == "lm_head.weight")

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    def by_group(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.components:
            out[c.group] = out.get(c.group, 0) + c.count
        return out

    def get(self, key: str) -> ParamComponent:
        for c in self.components:
            if c.key == key:
                return c
        raise KeyError(key)

    def formula(self, include_lora: bool = False) -> tuple[Any, dict[Any, int], int]:
        """``(expression, substitution, value)``: the total as a SymPy expression in the
        config's symbols, the symbol → integer substitution, and the exact integer."""
        import sympy

        syms = {name: sympy.Symbol(name, positive=True, integer=True) for name in SYMBOLS}
        values = symbol_values(self.config)

        def mono(factors: tuple[Factor, ...]) -> Any:
            return sympy.Mul(*[syms[f] if isinstance(f, str) else sympy.Integer(f) for f in factors])

        parts = [c for c in self.components if include_lora or c.group != "lora"]
        expr = sympy.Add(*[mono(c.times_factors) * mono(c.per_factors) for c in parts])
        used = {syms[n]: values[n] for n in SYMBOLS if syms[n] in expr.free_symbols}
        value = int(expr.subs(used))
        return expr, used, value

    def table(self) -> list[tuple[str, str, str, int]]:
        """Rows ``(component, shape × times, formula, count)`` for display."""
        rows = []
        for c in self.components:
            shape = "×".join(str(s) for s in c.shape)
            rows.append((c.label, f"{shape} × {c.times}" if c.times != 1 else shape, c.formula_text(), c.count))
        return rows

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "active": self.active, "embedding": self.embedding, "non_embedding": self.non_embedding,
                "lora": self.lora, "total_with_lora": self.total_with_lora, "by_group": self.by_group(),
                "components": [c.to_json() for c in self.components]}


class _Builder:
    """Collects components; ``add`` multiplies the factor lists out to integers."""

    def __init__(self, cfg: ModelConfig):
        self.values = symbol_values(cfg)
        self.items: list[ParamComponent] = []

    def _product(self, factors: tuple[Factor, ...]) -> int:
        return math.prod(self.values[f] if isinstance(f, str) else f for f in factors)

    def add(self, name: str, label: str, group: str, stack: str,
            shape: tuple[Factor | tuple[Factor, ...], ...], times: tuple[Factor, ...] = (1,)) -> None:
        """``shape``: one entry per tensor axis, a factor or a tuple of factors (``("h", "d_h")``)."""
        axes = [axis if isinstance(axis, tuple) else (axis,) for axis in shape]
        dims = tuple(self._product(axis) for axis in axes)
        per_factors = tuple(f for axis in axes for f in axis)
        per = math.prod(dims)
        n = self._product(times)
        if per == 0 or n == 0:
            return
        self.items.append(ParamComponent(name, label, group, stack, dims, per, n, per_factors, times))


def _stacks(cfg: ModelConfig) -> list[tuple[str, str]]:
    """``[(stack name, layer-count symbol)]``: ``[("", "L")]`` or encoder and decoder."""
    if cfg.arch == "encoder-decoder":
        return [("encoder", "L_e"), ("decoder", "L_d")]
    return [("", "L")]


def _latent_attention(b: _Builder, cfg: ModelConfig, stack: str, L: str) -> None:
    """Multi-head latent attention (DeepSeek-V2 §2.1; the projections of HuggingFace's
    DeepseekV2Attention): queries from d (or through a d_cq bottleneck with its norm), one
    down-projection to the latent c_KV (d_c) plus the shared rotary key (d_R), the latent's
    norm, one up-projection to every head's key (d_h) and value (d_v), and O. Biases (with
    ``has_attn_bias``) on the two down-projections only, O's with ``has_attn_out_bias``."""
    g = "attention"
    if cfg.q_lora_rank:
        b.add("attn.q_a.weight", "MLA W_DQ (query down)", g, stack, ("d", "d_cq"), (L,))
        if cfg.has_attn_bias:
            b.add("attn.q_a.bias", "MLA b_DQ", g, stack, ("d_cq",), (L,))
        _norm_of(b, cfg, "attn.q_norm", "MLA query-latent norm", stack, "d_cq", (L,))
        b.add("attn.q_b.weight", "MLA W_UQ (query up, with rotary part)", g, stack,
              ("d_cq", ("h", "d_h")), (L,))
        b.add("attn.q_b_rope.weight", "MLA W_QR (rotary queries)", g, stack, ("d_cq", ("h", "d_R")), (L,))
    else:
        b.add("attn.q.weight", "MLA W_Q", g, stack, ("d", ("h", "d_h")), (L,))
        b.add("attn.q_rope.weight", "MLA W_QR (rotary queries)", g, stack, ("d", ("h", "d_R")), (L,))
    b.add("attn.kv_a.weight", "MLA W_DKV (KV down, to the latent)", g, stack, ("d", "d_c"), (L,))
    b.add("attn.k_rope.weight", "MLA W_KR (shared rotary key)", g, stack, ("d", "d_R"), (L,))
    if cfg.has_attn_bias:
        b.add("attn.kv_a.bias", "MLA b_DKV", g, stack, ("d_c",), (L,))
        b.add("attn.k_rope.bias", "MLA b_KR", g, stack, ("d_R",), (L,))
    _norm_of(b, cfg, "attn.kv_norm", "MLA KV-latent norm", stack, "d_c", (L,))
    b.add("attn.k_b.weight", "MLA W_UK (key up)", g, stack, ("d_c", ("h", "d_h")), (L,))
    b.add("attn.v_b.weight", "MLA W_UV (value up)", g, stack, ("d_c", ("h", "d_v")), (L,))
    b.add("attn.o.weight", "MLA W_O", g, stack, (("h", "d_v"), "d"), (L,))
    if cfg.has_attn_out_bias:
        b.add("attn.o.bias", "MLA b_O", g, stack, ("d",), (L,))


def _attention(b: _Builder, cfg: ModelConfig, stack: str, L: str, prefix: str, group: str) -> None:
    if cfg.is_mla and group == "attention":
        _latent_attention(b, cfg, stack, L)
        return
    word = "cross-attention" if group == "cross_attention" else "attention"
    b.add(f"{prefix}.q.weight", f"{word} W_Q", group, stack, ("d", ("h", "d_h")), (L,))
    b.add(f"{prefix}.k.weight", f"{word} W_K", group, stack, ("d", ("h_kv", "d_h")), (L,))
    b.add(f"{prefix}.v.weight", f"{word} W_V", group, stack, ("d", ("h_kv", "d_h")), (L,))
    b.add(f"{prefix}.o.weight", f"{word} W_O", group, stack, (("h", "d_h"), "d"), (L,))
    if cfg.has_attn_bias:
        b.add(f"{prefix}.q.bias", f"{word} b_Q", group, stack, (("h", "d_h"),), (L,))
        b.add(f"{prefix}.k.bias", f"{word} b_K", group, stack, (("h_kv", "d_h"),), (L,))
        b.add(f"{prefix}.v.bias", f"{word} b_V", group, stack, (("h_kv", "d_h"),), (L,))
    if cfg.has_attn_out_bias:
        b.add(f"{prefix}.o.bias", f"{word} b_O", group, stack, ("d",), (L,))
    if group == "attention":
        _attention_extras(b, cfg, stack, L)


def _attention_extras(b: _Builder, cfg: ModelConfig, stack: str, L: str) -> None:
    """Issue 20: a QK-norm (one norm on the queries and one on the keys, per layer: over d_h,
    shared by the heads, or over the whole h·d_h / h_kv·d_h) and attention sinks (one learned
    logit per head and layer)."""
    if cfg.qk_norm == "head":
        _norm_of(b, cfg, "attn.q_norm", "QK-norm on queries (per head)", stack, "d_h", (L,))
        _norm_of(b, cfg, "attn.k_norm", "QK-norm on keys (per head)", stack, "d_h", (L,))
    elif cfg.qk_norm == "full":
        _norm_of(b, cfg, "attn.q_norm", "QK-norm on queries (all heads)", stack, ("h", "d_h"), (L,))
        _norm_of(b, cfg, "attn.k_norm", "QK-norm on keys (all KV heads)", stack, ("h_kv", "d_h"), (L,))
    if cfg.attn_sinks:
        b.add("attn.sinks", "attention sink logits", "attention", stack, ("h",), (L,))


def _ffn_matrices(cfg: ModelConfig) -> list[tuple[str, Factor, Factor]]:
    """``[(name, d_in, d_out)]`` of one FFN."""
    if cfg.ffn == "swiglu":
        return [("gate", "d", "d_ff"), ("up", "d", "d_ff"), ("down", "d_ff", "d")]
    return [("up", "d", "d_ff"), ("down", "d_ff", "d")]


def _ffn(b: _Builder, cfg: ModelConfig, stack: str, L: str) -> None:
    """Dense layers: one FFN of d_ff. MoE layers (all but the first ``first_dense_layers``):
    a router, E routed experts (``ffn.expert.*``) and E_s shared experts (``ffn.shared.*``),
    each an FFN of width d_fe."""
    if not cfg.is_moe:
        _ffn_one(b, cfg, stack, "ffn", "FFN", (L,), "d_ff")
        return
    split = cfg.arch == "decoder" and cfg.dense_layers_of(cfg.n_layers) > 0  # dense first / interleaved layers
    dense: tuple[Factor, ...] = ("L_D",) if split else ()
    moe: tuple[Factor, ...] = ("L_M",) if split else (L,)
    if dense:
        _ffn_one(b, cfg, stack, "ffn.dense", "dense FFN", dense, "d_ff")
    width = "d_ff" if cfg.d_ff_expert is None else "d_fe"
    shared_width = width if cfg.d_ff_shared is None else "d_fs"
    b.add("ffn.router.weight", "MoE router", "ffn", stack, ("d", "E"), moe)
    if cfg.router_bias:
        b.add("ffn.router.bias", "MoE router bias", "ffn", stack, ("E",), moe)
    _ffn_one(b, cfg, stack, "ffn.expert", "routed expert", (*moe, "E"), width)
    _ffn_one(b, cfg, stack, "ffn.shared", "shared expert", (*moe, "E_s"), shared_width)
    if cfg.shared_expert_gate:
        b.add("ffn.shared_gate.weight", "shared-expert gate", "ffn", stack, ("d",), moe)


def _ffn_one(b: _Builder, cfg: ModelConfig, stack: str, prefix: str, label: str, times: tuple[Factor, ...],
             width: str) -> None:
    for name, d_in, d_out in _ffn_matrices(cfg):
        d_in, d_out = (width if x == "d_ff" else x for x in (d_in, d_out))  # type: ignore[assignment]
        b.add(f"{prefix}.{name}.weight", f"{label} W_{name}", "ffn", stack, (d_in, d_out), times)
        if cfg.has_ffn_bias:
            b.add(f"{prefix}.{name}.bias", f"{label} b_{name}", "ffn", stack, (d_out,), times)


def _norm(b: _Builder, cfg: ModelConfig, name: str, label: str, stack: str, times: tuple[Factor, ...]) -> None:
    _norm_of(b, cfg, name, label, stack, "d", times)


def _norm_of(b: _Builder, cfg: ModelConfig, name: str, label: str, stack: str,
             width: Factor | tuple[Factor, ...], times: tuple[Factor, ...]) -> None:
    if not cfg.norm_affine:  # a norm without γ or β (OLMo) holds no parameters
        return
    b.add(f"{name}.weight", f"{label} γ", "norm", stack, (width,), times)
    if cfg.has_norm_bias:
        b.add(f"{name}.bias", f"{label} β", "norm", stack, (width,), times)


def _lora(b: _Builder, cfg: ModelConfig, stack: str, L: str, cross: bool) -> None:
    if cfg.lora_rank == 0:
        return
    shapes: dict[str, tuple[Any, Any]] = {"q": ("d", ("h", "d_h")), "k": ("d", ("h_kv", "d_h")),
                                          "v": ("d", ("h_kv", "d_h")), "o": (("h", "d_h"), "d")}
    prefixes = ["attn"] + (["cross_attn"] if cross else [])
    for prefix in prefixes:
        for t in ("q", "k", "v", "o"):
            if t not in cfg.lora_targets:
                continue
            d_in, d_out = shapes[t]
            b.add(f"lora.{prefix}.{t}.A", f"LoRA A ({prefix}.{t})", "lora", stack, ("r", d_in), (L,))
            b.add(f"lora.{prefix}.{t}.B", f"LoRA B ({prefix}.{t})", "lora", stack, (d_out, "r"), (L,))
    if "ffn" in cfg.lora_targets:
        experts: tuple[Factor, ...] = (L,) if cfg.n_experts == 1 else (L, "E")
        for name, d_in, d_out in _ffn_matrices(cfg):
            b.add(f"lora.ffn.{name}.A", f"LoRA A (ffn.{name})", "lora", stack, ("r", d_in), experts)
            b.add(f"lora.ffn.{name}.B", f"LoRA B (ffn.{name})", "lora", stack, (d_out, "r"), experts)


def param_breakdown(cfg: ModelConfig) -> ParamBreakdown:
    """Every parameter tensor kind of ``cfg``, in model order, with exact counts."""
    b = _Builder(cfg)
    stacks = _stacks(cfg)
    n_stacks = len(stacks)
    # embeddings
    b.add("token_embedding", "token embedding", "embedding", "", ("V", "d"))
    if cfg.pos == "learned":
        b.add("position_embedding", "position embedding", "embedding", "", ("P", "d"), (n_stacks,))
        if cfg.position_offset:  # OPT's table has max_positions + 2 rows (positions start at 2)
            b.add("position_embedding_offset", "position table's offset rows", "embedding", "", ("P_o", "d"),
                  (n_stacks,))
    if cfg.type_vocab_size:
        b.add("type_embedding", "segment (type) embedding", "embedding", "", ("T", "d"))
    if cfg.cls_token:
        b.add("cls_token", "[CLS] vector", "embedding", "", ("d",))
    if cfg.embedding_norm:
        _norm(b, cfg, "embedding_norm", "embedding norm", "", (n_stacks,))
    # layers, stack by stack
    for stack, L in stacks:
        cross = stack == "decoder"
        _attention(b, cfg, stack, L, "attn", "attention")
        if cross:
            _attention(b, cfg, stack, L, "cross_attn", "cross_attention")
        _ffn(b, cfg, stack, L)
        n_norms = cfg.norms_per_layer + (1 if cross else 0)
        _norm(b, cfg, "layer_norms", f"{n_norms} norms per layer", stack, (n_norms, L))
        if cfg.final_norm:
            _norm(b, cfg, "final_norm", "final norm", stack, (1,))
    # heads
    if cfg.lm_head and not cfg.tied_embeddings:
        b.add("lm_head.weight", "LM head W (untied)", "head", "", ("d", "V"))
    if cfg.lm_head_bias:
        b.add("lm_head.bias", "LM head bias", "head", "", ("V",))
    if cfg.pooler:
        b.add("pooler.weight", "pooler W", "head", "", ("d", "d"))
        b.add("pooler.bias", "pooler bias", "head", "", ("d",))
    if cfg.n_classes:
        b.add("classifier.weight", "classifier W", "head", "", ("d", "C"))
        b.add("classifier.bias", "classifier bias", "head", "", ("C",))
    for stack, L in stacks:
        _lora(b, cfg, stack, L, cross=stack == "decoder")
    return ParamBreakdown(cfg, tuple(b.items))


def param_count(cfg: ModelConfig) -> int:
    """Exact parameters of the base model (LoRA adapters excluded; see ``param_breakdown``)."""
    return param_breakdown(cfg).total
