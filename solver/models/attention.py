"""Multi-head attention with separate Q, K, V, O projections, GQA/MQA, RoPE/ALiBi, a KV cache,
and two ways to compute it: ``F.scaled_dot_product_attention`` ("sdpa": PyTorch picks the
flash/efficient kernel where it can, so the n×n score matrix need never exist) and "math", which
materialises the (B, nh, Tq, Tk) score matrix on purpose, for the memory comparison.

Both paths do the same two batched matmuls, QKᵀ and (softmax)V: 2·B·nh·Tq·Tk·hs multiply-adds
in all, which FlopCounterMode counts as 4·B·nh·Tq·Tk·hs FLOPs (the full rectangle, causal or not:
masking does not make the matmuls smaller).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from solver.config import ModelConfig
from solver.models.layers import Linear, lora_rank
from solver.models.positions import alibi_bias, apply_rope

ATTENTION_IMPLS = ("sdpa", "math")


@dataclass
class LayerKV:
    """One attention layer's cache: keys and values of every position seen so far,
    (B, n_kv_heads, T, hs) each: the KV heads are stored once, not repeated per query head."""

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.k, self.v) if t is not None)


class Attention(nn.Module):
    """softmax(Q Kᵀ / √hs + bias) V, per head, then the output projection O.

    Parameters (weights (d_out, d_in); Q/K/V biases when ``cfg.has_attn_bias``, the O bias when
    ``cfg.has_attn_out_bias``):
      q: d_model → n_heads·hs      k, v: d_model → n_kv_heads·hs      o: n_heads·hs → d_model
    With ``cross=True`` keys and values come from the encoder's output (``memory``).
    """

    def __init__(self, cfg: ModelConfig, causal: bool, cross: bool = False):
        super().__init__()
        assert not (causal and cross), "cross-attention sees the whole encoder output: it is never causal"
        self.n_heads, self.n_kv_heads, self.head_size = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        assert self.n_heads % self.n_kv_heads == 0, "each KV head serves a whole group of query heads"
        self.causal, self.cross, self.pos = causal, cross, cfg.pos
        d, hs, bias = cfg.d_model, cfg.head_dim, cfg.has_attn_bias
        self.q = Linear(d, self.n_heads * hs, bias, lora_rank(cfg, "q"))
        self.k = Linear(d, self.n_kv_heads * hs, bias, lora_rank(cfg, "k"))
        self.v = Linear(d, self.n_kv_heads * hs, bias, lora_rank(cfg, "v"))
        self.o = Linear(self.n_heads * hs, d, cfg.has_attn_out_bias, lora_rank(cfg, "o"))

    def split_heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, n, self.head_size).transpose(1, 2)  # (B, n, T, hs)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, cache: LayerKV | None = None,
                rope: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                impl: str = "sdpa") -> torch.Tensor:
        """x: (B, T, d_model) → (B, T, d_model).

        ``cache`` is read and extended in place; ``rope`` = the rotation of x's positions (from
        :func:`~solver.models.positions.rope_rotation`); ``bias`` is an additive mask (ALiBi, or
        the causal mask of a block of queries after a cache, see :func:`self_attention_bias`).
        Without ``bias`` a causal layer masks as if x started at position 0."""
        assert impl in ATTENTION_IMPLS, f"impl must be one of {ATTENTION_IMPLS}, got {impl!r}"
        B, T, _ = x.shape
        q = self.split_heads(self.q(x), self.n_heads)  # (B, nh, T, hs)

        if self.cross and cache is not None and cache.k is not None:
            k, v = cache.k, cache.v  # the encoder's keys and values, projected once at prefill
        else:
            source = memory if self.cross else x
            assert source is not None, "cross-attention needs the encoder output (memory)"
            k = self.split_heads(self.k(source), self.n_kv_heads)  # (B, nkv, S, hs)
            v = self.split_heads(self.v(source), self.n_kv_heads)  # (B, nkv, S, hs)
            if rope is not None and not self.cross:
                q, k = apply_rope(q, rope), apply_rope(k, rope)
            if cache is not None:
                if not self.cross and cache.k is not None:
                    k = torch.cat((cache.k, k), dim=2)  # (B, nkv, start + T, hs)
                    v = torch.cat((cache.v, v), dim=2)
                cache.k, cache.v = k, v

        # GQA/MQA: each KV head serves n_heads / n_kv_heads query heads (a copy, no arithmetic)
        group = self.n_heads // self.n_kv_heads
        if group > 1:
            k = k.repeat_interleave(group, dim=1)  # (B, nh, Tk, hs)
            v = v.repeat_interleave(group, dim=1)  # (B, nh, Tk, hs)

        causal = self.causal and bias is None and T > 1  # a plain causal mask from position 0
        if bias is not None:
            bias = bias.to(q.dtype)
        if impl == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)  # (B, nh, T, hs)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_size)  # (B, nh, T, Tk): materialised
            if bias is not None:
                scores = scores + bias
            elif causal:
                scores = scores + causal_mask(0, T, k.shape[2], x.device)
            y = scores.softmax(dim=-1) @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_size)  # (B, T, nh·hs)
        return self.o(y)  # (B, T, d_model)


def self_attention_bias(cfg: ModelConfig, causal: bool, start: int, T: int, device) -> torch.Tensor | None:
    """The additive self-attention mask that ``is_causal`` cannot express, shared by every layer
    of a stack: ALiBi's −m·|i−j| (with −inf on future keys when causal), or the causal mask of
    a block of T > 1 queries after ``start`` cached keys. None otherwise."""
    Tk = start + T
    if cfg.pos == "alibi":
        q_pos = torch.arange(start, Tk, device=device)
        return alibi_bias(cfg.n_heads, q_pos, torch.arange(Tk, device=device), causal)
    if causal and start > 0 and T > 1:
        return causal_mask(start, T, Tk, device)
    return None


def causal_mask(start: int, T: int, Tk: int, device) -> torch.Tensor:
    """0 where query i (at position start+i) may see key j (j ≤ start+i), −inf elsewhere: (T, Tk)."""
    q_pos = torch.arange(start, start + T, device=device)[:, None]
    k_pos = torch.arange(Tk, device=device)[None, :]
    return torch.zeros(T, Tk, device=device).masked_fill(k_pos > q_pos, float("-inf"))
