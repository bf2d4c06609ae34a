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

from solver.counting.config import ModelConfig
from solver.models.layers import Linear, lora_rank, make_norm_of
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

    def __init__(self, cfg: ModelConfig, causal: bool, cross: bool = False, local: bool = False):
        super().__init__()
        # sliding window (Mistral, Gemma 2's local layers): keys outside it are dropped before the
        # matmuls and the cache keeps the last W positions (a rolling buffer); 0 = every key
        self.window = cfg.sliding_window if local else 0
        assert not (causal and cross), "cross-attention sees the whole encoder output: it is never causal"
        self.n_heads, self.n_kv_heads, self.head_size = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        assert self.n_heads % self.n_kv_heads == 0, "each KV head serves a whole group of query heads"
        self.causal, self.cross, self.pos = causal, cross, cfg.pos
        d, hs, bias = cfg.d_model, cfg.head_dim, cfg.has_attn_bias
        self.q = Linear(d, self.n_heads * hs, bias, lora_rank(cfg, "q"))
        self.k = Linear(d, self.n_kv_heads * hs, bias, lora_rank(cfg, "k"))
        self.v = Linear(d, self.n_kv_heads * hs, bias, lora_rank(cfg, "v"))
        self.o = Linear(self.n_heads * hs, d, cfg.has_attn_out_bias, lora_rank(cfg, "o"))
        # issue 20: a QK-norm (over each head, or over all heads at once), partial RoPE, sinks
        self.qk_norm = "none" if cross else cfg.qk_norm
        if self.qk_norm != "none":
            per_head = self.qk_norm == "head"
            self.q_norm = make_norm_of(cfg, hs if per_head else self.n_heads * hs)
            self.k_norm = make_norm_of(cfg, hs if per_head else self.n_kv_heads * hs)
        self.rope_dim = cfg.rope_dim  # features of each head that RoPE rotates (the rest pass through)
        self.sinks = nn.Parameter(torch.zeros(self.n_heads)) if cfg.attn_sinks and not cross else None

    def project_qk(self, x: torch.Tensor, proj: nn.Module, n: int, norm_name: str) -> torch.Tensor:
        """x → (B, n, T, hs) through ``proj``, with the QK-norm where the config has one."""
        y = proj(x)  # (B, T, n·hs)
        if self.qk_norm == "full":  # OLMo 2: one norm over every head's features together
            y = getattr(self, norm_name)(y)
        y = self.split_heads(y, n)  # (B, n, T, hs)
        if self.qk_norm == "head":  # Qwen3, Gemma 3: one norm over d_head, shared by the heads
            y = getattr(self, norm_name)(y)
        return y

    def rotate(self, x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
        """RoPE on the first ``rope_dim`` features of each head (GPT-J, Pythia); all when equal."""
        if self.rope_dim == self.head_size:
            return apply_rope(x, rope)
        return torch.cat((apply_rope(x[..., : self.rope_dim], rope), x[..., self.rope_dim:]), dim=-1)

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
        q = self.project_qk(x, self.q, self.n_heads, "q_norm")  # (B, nh, T, hs)

        if self.cross and cache is not None and cache.k is not None:
            k, v = cache.k, cache.v  # the encoder's keys and values, projected once at prefill
        else:
            source = memory if self.cross else x
            assert source is not None, "cross-attention needs the encoder output (memory)"
            k = self.project_qk(source, self.k, self.n_kv_heads, "k_norm")  # (B, nkv, S, hs)
            v = self.split_heads(self.v(source), self.n_kv_heads)  # (B, nkv, S, hs)
            if rope is not None and not self.cross:
                q, k = self.rotate(q, rope), self.rotate(k, rope)
            if cache is not None:
                if not self.cross and cache.k is not None:
                    k = torch.cat((cache.k, k), dim=2)  # (B, nkv, start + T, hs)
                    v = torch.cat((cache.v, v), dim=2)
                cache.k, cache.v = keep_window(k, self.window), keep_window(v, self.window)
            if self.window:  # the oldest query of the block sees W − 1 positions before it
                k, v = keep_window(k, self.window + T - 1), keep_window(v, self.window + T - 1)

        # GQA/MQA: each KV head serves n_heads / n_kv_heads query heads (a copy, no arithmetic)
        group = self.n_heads // self.n_kv_heads
        if group > 1:
            k = k.repeat_interleave(group, dim=1)  # (B, nh, Tk, hs)
            v = v.repeat_interleave(group, dim=1)  # (B, nh, Tk, hs)

        causal = self.causal and bias is None and T > 1  # a plain causal mask from position 0
        if bias is not None:
            bias = bias.to(q.dtype)
        if impl == "sdpa" and self.sinks is None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)  # (B, nh, T, hs)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_size)  # (B, nh, T, Tk): materialised
            if bias is not None:
                scores = scores + bias
            elif causal:
                scores = scores + causal_mask(0, T, k.shape[2], x.device)
            if self.sinks is not None:  # gpt-oss: one more logit per head in the denominator, no value
                sink = self.sinks.to(scores.dtype).view(1, -1, 1, 1).expand(B, -1, T, 1)
                p = torch.cat((scores, sink), dim=-1).softmax(dim=-1)[..., :-1]  # (B, nh, T, Tk)
            else:
                p = scores.softmax(dim=-1)
            y = p @ v  # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_size)  # (B, T, nh·hs)
        return self.o(y)  # (B, T, d_model)


def keep_window(x: torch.Tensor, n: int) -> torch.Tensor:
    """The last ``n`` positions (axis 2) of ``x``; all of them when ``n`` is 0 (no window)."""
    return x if not n or x.shape[2] <= n else x[:, :, -n:]


def self_attention_bias(cfg: ModelConfig, causal: bool, start: int, T: int, device,
                        window: int = 0) -> torch.Tensor | None:
    """The additive self-attention mask that ``is_causal`` cannot express, shared by every layer
    of a stack (one for the windowed layers, one for the others): ALiBi's −m·|i−j| (with −inf on
    future keys when causal), the causal mask of a block of T > 1 queries after ``start`` cached
    keys, or (``window`` W > 0) the band: query p sees keys p − W < j ≤ p, over the keys the layer
    keeps (the last W + T − 1 positions). None where no mask is needed."""
    Tk = start + T
    k0 = max(0, Tk - (window + T - 1)) if window else 0  # first key position the layer still holds
    q_pos = torch.arange(start, Tk, device=device)
    k_pos = torch.arange(k0, Tk, device=device)
    if cfg.pos == "alibi":
        bias = alibi_bias(cfg.n_heads, q_pos, k_pos, causal)
        return bias if not window else bias.masked_fill(_outside(q_pos, k_pos, window), float("-inf"))
    if window and T > 1:
        return causal_mask(start, T, Tk, device)[:, k0:].masked_fill(_outside(q_pos, k_pos, window), float("-inf"))
    if causal and start > 0 and T > 1:
        return causal_mask(start, T, Tk, device)
    return None


def _outside(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int) -> torch.Tensor:
    """True where key j is W or more positions before query p (outside the window): (Tq, Tk)."""
    return (q_pos[:, None] - k_pos[None, :]) >= window


def causal_mask(start: int, T: int, Tk: int, device) -> torch.Tensor:
    """0 where query i (at position start+i) may see key j (j ≤ start+i), −inf elsewhere: (T, Tk)."""
    q_pos = torch.arange(start, start + T, device=device)[:, None]
    k_pos = torch.arange(Tk, device=device)[None, :]
    return torch.zeros(T, Tk, device=device).masked_fill(k_pos > q_pos, float("-inf"))


class LatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2 §2.1), computed the plain way: every head's key and
    value are re-expanded from the cached latent at each step (no weight absorption).

    Per token: a latent c = norm(x W_DKV) of d_c and one rotary key k_R = RoPE(x W_KR) of d_R shared
    by every head are all the cache holds (``LayerKV.k`` = c, (B, 1, T, d_c); ``LayerKV.v`` = k_R,
    (B, 1, T, d_R)). Queries: q = x W_Q (or through the latent c_Q = norm(x W_DQ) of d_cq), d_h per
    head, plus a rotary part q_R of d_R per head. Keys [c W_UK ; k_R] (d_h + d_R per head), values
    c W_UV (d_v per head), output (h·d_v → d). Matmuls per layer and sequence for T queries and S
    keys: the projections on T rows, W_UK and W_UV on S rows, QKᵀ of T·S·(d_h + d_R) and AV of
    T·S·d_v per head.
    """

    def __init__(self, cfg: ModelConfig, local: bool = False):
        super().__init__()
        self.window = cfg.sliding_window if local else 0
        self.h, self.dh, self.dr, self.dv, self.dc = (cfg.n_heads, cfg.head_dim, cfg.qk_rope_head_dim,
                                                      cfg.value_head_dim, cfg.kv_lora_rank)
        d, h, bias = cfg.d_model, cfg.n_heads, cfg.has_attn_bias
        if cfg.q_lora_rank:
            self.q_a = Linear(d, cfg.q_lora_rank, bias)
            self.q_norm = make_norm_of(cfg, cfg.q_lora_rank)
            q_in = cfg.q_lora_rank
        else:
            self.q_a = self.q_norm = None
            q_in = d
        self.q_b = Linear(q_in, h * self.dh, False)
        self.q_b_rope = Linear(q_in, h * self.dr, False) if self.dr else None
        self.kv_a = Linear(d, self.dc, bias)
        self.k_rope = Linear(d, self.dr, bias) if self.dr else None
        self.kv_norm = make_norm_of(cfg, self.dc)
        self.k_b = Linear(self.dc, h * self.dh, False)
        self.v_b = Linear(self.dc, h * self.dv, False)
        self.o = Linear(h * self.dv, d, cfg.has_attn_out_bias)

    def heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, -1, n).transpose(1, 2)  # (B, heads, T, n)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, cache: LayerKV | None = None,
                rope: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                impl: str = "sdpa") -> torch.Tensor:
        """x: (B, T, d_model) → (B, T, d_model); ``rope`` rotates the d_R parts only."""
        B, T, _ = x.shape
        q_in = x if self.q_a is None else self.q_norm(self.q_a(x))
        q = self.heads(self.q_b(q_in), self.dh)  # (B, h, T, d_h)
        c = self.kv_norm(self.kv_a(x)).unsqueeze(1)  # (B, 1, T, d_c): the latent
        if self.dr:
            q_r = self.heads(self.q_b_rope(q_in), self.dr)  # (B, h, T, d_R)
            k_r = self.k_rope(x).unsqueeze(1)  # (B, 1, T, d_R): one rotary key for every head
            if rope is not None:
                q_r, k_r = apply_rope(q_r, rope), apply_rope(k_r, rope)
        else:
            q_r = q.new_zeros(B, self.h, T, 0)
            k_r = c.new_zeros(B, 1, T, 0)
        if cache is not None:
            if cache.k is not None:
                c, k_r = torch.cat((cache.k, c), dim=2), torch.cat((cache.v, k_r), dim=2)
            cache.k, cache.v = keep_window(c, self.window), keep_window(k_r, self.window)
        if self.window:
            c, k_r = keep_window(c, self.window + T - 1), keep_window(k_r, self.window + T - 1)
        S = c.shape[2]
        latent = c.squeeze(1)  # (B, S, d_c)
        k = torch.cat((self.heads(self.k_b(latent), self.dh), k_r.expand(B, self.h, S, self.dr)), dim=-1)
        v = self.heads(self.v_b(latent), self.dv)  # (B, h, S, d_v)
        q = torch.cat((q, q_r), dim=-1)  # (B, h, T, d_h + d_R)
        causal = bias is None and T > 1
        if bias is not None:
            bias = bias.to(q.dtype)
        if impl == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)  # (B, h, T, d_v)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh + self.dr)  # (B, h, T, S)
            if bias is not None:
                scores = scores + bias
            elif causal:
                scores = scores + causal_mask(0, T, S, x.device)
            y = scores.softmax(dim=-1) @ v  # (B, h, T, d_v)
        return self.o(y.transpose(1, 2).reshape(B, T, self.h * self.dv))
