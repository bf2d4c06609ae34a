"""One Transformer layer: self-attention, (in a decoder of an encoder-decoder) cross-attention,
and the FFN, each wrapped in a residual connection and a norm.

pre-norm  (GPT-2, Llama):             x = x + sublayer(norm(x))
post-norm (original Transformer, BERT): x = norm(x + sublayer(x))
sandwich  (Gemma 2/3):                x = x + norm_out(sublayer(norm(x)))
reordered (OLMo 2):                   x = x + norm(sublayer(x))
parallel, one norm (GPT-J, Falcon-7B, Phi-2): h = norm(x); x = x + attn(h) + ffn(h)
parallel, two norms (GPT-NeoX, Falcon-40B):   x = x + attn(norm_a(x)) + ffn(norm_f(x))
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from solver.counting.config import ModelConfig
from solver.models.attention import Attention, LatentAttention, LayerKV
from solver.models.ffn import FeedForward, MixtureOfExperts
from solver.models.layers import make_norm


class Block(nn.Module):
    """A layer with ``attn_norm``/``attn``, optionally ``cross_norm``/``cross_attn``, and ``ffn_norm``/``ffn``."""

    def __init__(self, cfg: ModelConfig, causal: bool, cross: bool, index: int = 0):
        super().__init__()
        self.position = cfg.norm_position  # pre | post | sandwich | reordered
        self.parallel = cfg.parallel_block  # 0, or the number of norms feeding attention and FFN
        self.local = cfg.is_local_layer(index)  # attends within cfg.sliding_window (its own bias)
        self.attn_norm = make_norm(cfg)
        self.attn = LatentAttention(cfg, local=self.local) if cfg.is_mla else Attention(cfg, causal=causal, local=self.local)
        self.cross_norm = make_norm(cfg) if cross else None
        self.cross_attn = Attention(cfg, causal=False, cross=True) if cross else None
        self.ffn_norm = None if self.parallel == 1 else make_norm(cfg)
        sandwich = self.position == "sandwich"
        self.attn_post_norm = make_norm(cfg) if sandwich else None  # on the sub-layer's output (Gemma 2)
        self.ffn_post_norm = make_norm(cfg) if sandwich else None
        self.ffn = MixtureOfExperts(cfg) if cfg.is_moe_layer(index) else FeedForward(cfg)

    def residual(self, x: torch.Tensor, norm: nn.Module, sublayer: Callable[[torch.Tensor], torch.Tensor],
                 out_norm: nn.Module | None = None):
        if self.position == "pre":
            return x + sublayer(norm(x))
        if self.position == "sandwich":
            return x + out_norm(sublayer(norm(x)))
        if self.position == "reordered":
            return x + norm(sublayer(x))
        return norm(x + sublayer(x))

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None,
                cache: tuple[LayerKV, LayerKV | None] | None = None,
                rope: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                impl: str = "sdpa") -> torch.Tensor:
        """x: (B, T, d_model) → (B, T, d_model); ``cache`` = (self-attention KV, cross-attention KV);
        ``rope`` and ``bias`` are the self-attention's, computed once per stack."""
        self_kv, cross_kv = cache if cache is not None else (None, None)
        if self.parallel:  # attention and FFN read the same x; both outputs join the residual
            h = self.attn_norm(x)
            return x + self.attn(h, cache=self_kv, rope=rope, bias=bias, impl=impl) \
                + self.ffn(h if self.ffn_norm is None else self.ffn_norm(x))
        x = self.residual(x, self.attn_norm, lambda h: self.attn(h, cache=self_kv, rope=rope, bias=bias, impl=impl),
                          self.attn_post_norm)
        if self.cross_attn is not None:
            x = self.residual(x, self.cross_norm,
                              lambda h: self.cross_attn(h, memory=memory, cache=cross_kv, impl=impl))
        return self.residual(x, self.ffn_norm, self.ffn, self.ffn_post_norm)
