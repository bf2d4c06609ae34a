"""Exact parameter counts of a :class:`~solver.config.ModelConfig`, component by component.

Conventions (the model is the one described in ``solver.config``'s docstring):

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

from solver.config import ModelConfig

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
}


def symbol_values(cfg: ModelConfig) -> dict[str, int]:
    """The integer each symbol takes for ``cfg`` (defaults resolved: ``h_kv``, ``d_h``)."""
    return {
        "V": cfg.vocab_size, "P": cfg.max_positions, "T": cfg.type_vocab_size, "d": cfg.d_model,
        "L": cfg.n_layers, "L_e": cfg.encoder_layers, "L_d": cfg.decoder_layers,
        "h": cfg.n_heads, "h_kv": cfg.kv_heads, "d_h": cfg.head_dim, "d_ff": cfg.d_ff,
        "E": cfg.n_experts, "r": cfg.lora_rank, "C": cfg.n_classes,
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
        return {"total": self.total, "embedding": self.embedding, "non_embedding": self.non_embedding,
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


def _attention(b: _Builder, cfg: ModelConfig, stack: str, L: str, prefix: str, group: str) -> None:
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


def _ffn_matrices(cfg: ModelConfig) -> list[tuple[str, Factor, Factor]]:
    """``[(name, d_in, d_out)]`` of one FFN."""
    if cfg.ffn == "swiglu":
        return [("gate", "d", "d_ff"), ("up", "d", "d_ff"), ("down", "d_ff", "d")]
    return [("up", "d", "d_ff"), ("down", "d_ff", "d")]


def _ffn(b: _Builder, cfg: ModelConfig, stack: str, L: str) -> None:
    experts: tuple[Factor, ...] = (L,) if cfg.n_experts == 1 else (L, "E")
    if cfg.n_experts > 1:
        b.add("ffn.router.weight", "MoE router", "ffn", stack, ("d", "E"), (L,))
    for name, d_in, d_out in _ffn_matrices(cfg):
        b.add(f"ffn.{name}.weight", f"FFN W_{name}", "ffn", stack, (d_in, d_out), experts)
        if cfg.has_ffn_bias:
            b.add(f"ffn.{name}.bias", f"FFN b_{name}", "ffn", stack, (d_out,), experts)


def _norm(b: _Builder, cfg: ModelConfig, name: str, label: str, stack: str, times: tuple[Factor, ...]) -> None:
    b.add(f"{name}.weight", f"{label} γ", "norm", stack, ("d",), times)
    if cfg.has_norm_bias:
        b.add(f"{name}.bias", f"{label} β", "norm", stack, ("d",), times)


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
        _norm(b, cfg, "layer_norms", f"{3 if cross else 2} norms per layer", stack, (3 if cross else 2, L))
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
