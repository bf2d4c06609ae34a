"""Counting conventions that textbooks state differently, each named, beside the exact count.

Parameters (the JAX scaling book's accounting, "How to Scale Your Model", Transformer math):

- ``norms``: ``"two"`` per layer (the model as built: the pre-attention and pre-FFN norms, with
  the final norm), ``"one"`` per layer (a parallel block, GPT-J/PaLM: one norm feeds attention and
  FFN), ``"none"`` (every norm left out, latent-attention norms and the final norm included);
- ``embeddings=False``: no vocabulary tables at all (vocabulary 0: token, position and segment
  tables and the untied LM head left out).

FLOPs per token (N = non-embedding parameters, ACTIVE ones for a mixture of experts; n = the
context T; d_attn = n_heads·d_head; L layers):

- ``"none"``: 2N forward, 6N training (the attention scores left out);
- ``"kaplan"``: Kaplan et al. 2020, Table 1: C_forward = 2N + 2·L·n·d_attn (training 3×);
- ``"palm"``: Chowdhery et al. 2022 (PaLM), Appendix B: 6N + 12·L·H·Q·T for training (H heads of
  size Q, T the sequence; forward 2N + 4·L·H·Q·T);
- ``"full"``: QKᵀ and AV as the reference model computes them, 2 matmuls × 2 FLOPs per multiply-add
  over the full n × n rectangle: 4·L·h·n·d_h forward (with latent attention 2·L·h·n·(d_h + d_R +
  d_v)), what ``solver.counting.flops`` holds; training 3×.

``causal_halving=True`` halves the attention term (only the causal half of the scores is needed;
the exact triangle has n(n + 1)/2 pairs, ``solver.counting.window.attention_pairs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from solver.counting.config import ModelConfig
from solver.counting.params import param_breakdown
from solver.errors import SolverInputError

NORM_CONVENTIONS = ("two", "one", "none")
ATTENTION_TERMS = ("none", "kaplan", "palm", "full")


def params_under(cfg: ModelConfig, norms: str = "two", embeddings: bool = True) -> tuple[int, dict[str, Any]]:
    """``(count, convention)``: the base model's parameters under the norm and vocabulary conventions."""
    if norms not in NORM_CONVENTIONS:
        raise SolverInputError(f"must be one of {', '.join(NORM_CONVENTIONS)} (got {norms!r})", param="norms")
    pb = param_breakdown(cfg)
    total = pb.total
    dropped: dict[str, int] = {}
    if not embeddings:
        dropped["vocabulary tables (vocabulary 0)"] = pb.embedding
    if norms == "none":
        dropped["every norm"] = sum(c.count for c in pb.components if c.group == "norm")
    elif norms == "one":
        layer = [c for c in pb.components if c.name.startswith("layer_norms.")]
        # one of the two (three with cross-attention) norms per layer is kept
        dropped["all but one norm per layer"] = sum(c.count - c.count // c.times_factors[0] for c in layer
                                                     if isinstance(c.times_factors[0], int))
    count = total - sum(dropped.values())
    return count, {"norms": f"{norms} per layer", "embeddings": "counted" if embeddings else "none (vocabulary 0)",
                   "left_out": dropped}


@dataclass(frozen=True)
class PerToken:
    """FLOPs per token under one attention convention: ``2·mult·N + attention``."""

    n_params: int
    attention: Fraction
    mode: str
    term: str
    causal_halving: bool

    @property
    def flops(self) -> Fraction:
        mult = 3 if self.mode == "train" else 1
        return 2 * mult * self.n_params + self.attention

    def to_json(self) -> dict[str, Any]:
        return {"flops_per_token": float(self.flops), "N": self.n_params, "attention": float(self.attention),
                "attention_term": self.term, "causal_halving": self.causal_halving, "mode": self.mode}


def flops_per_token(cfg: ModelConfig, seq: int, mode: str = "forward", term: str = "full",
                    causal_halving: bool = False, norms: str = "two") -> PerToken:
    """FLOPs per token at context ``seq`` (see the module docstring for each ``term``); N counts the
    norms per ``norms`` (:func:`params_under`: ``"none"`` is Kaplan et al.'s N, which leaves norms out)."""
    if term not in ATTENTION_TERMS:
        raise SolverInputError(f"must be one of {', '.join(ATTENTION_TERMS)} (got {term!r})", param="attention_term")
    if mode not in ("forward", "train"):
        raise SolverInputError("must be forward or train", param="mode")
    if not isinstance(seq, int) or seq < 1:
        raise SolverInputError(f"must be an integer >= 1 (got {seq!r})", param="seq")
    pb = param_breakdown(cfg)
    _, named = params_under(cfg, norms, True)
    N = pb.active - pb.embedding - sum(named["left_out"].values())  # non-embedding, active, norms per ``norms``
    L = cfg.n_layers
    mult = 3 if mode == "train" else 1
    if term == "none":
        attn = Fraction(0)
    elif term == "kaplan":
        attn = Fraction(mult * 2 * L * seq * cfg.q_dim)
    elif term == "palm":
        attn = Fraction(mult * 4 * L * cfg.n_heads * cfg.head_dim * seq)
    else:
        attn = Fraction(mult * 2 * L * cfg.n_heads * seq * (cfg.qk_head_dim + cfg.value_head_dim))
    if causal_halving:
        attn /= 2
    return PerToken(N, attn, mode, term, causal_halving)
