"""Building blocks shared by every part of the reference model: linear layers (with optional
LoRA adapters) and the two norms.

Parameter names are part of the interface: a breakdown per component is read from
``model.named_parameters()`` (``...q.weight``, ``...q.lora_A.weight``, ``...attn_norm.bias``).
Modules take no ``device`` argument: :func:`solver.models.build_model` builds under
``with torch.device(...)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from solver.counting.config import ModelConfig


class Linear(nn.Linear):
    """``y = x Wᵀ + b``, plus a LoRA update ``y += B(A x)`` when ``rank > 0``.

    Shapes follow ``nn.Linear``: ``weight`` is (d_out, d_in); LoRA's ``A`` is (r, d_in) and ``B``
    is (d_out, r), so the adapters add ``r·(d_in + d_out)`` parameters and, per token,
    ``2·r·(d_in + d_out)`` FLOPs (2 per multiply-add). LoRA's scale α/r is left at 1: a scalar
    multiply changes no count.
    """

    def __init__(self, d_in: int, d_out: int, bias: bool, rank: int = 0):
        super().__init__(d_in, d_out, bias=bias)
        self.lora_A = nn.Linear(d_in, rank, bias=False) if rank else None
        self.lora_B = nn.Linear(rank, d_out, bias=False) if rank else None
        if self.lora_B is not None:
            nn.init.zeros_(self.lora_B.weight)  # LoRA starts as the identity update: B = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the formula as written (what nn.Linear computes with one fused addmm: the same numbers
        # and the same matmul FLOPs; on the meta device addmm is a slow Python decomposition)
        y = x @ self.weight.T  # (..., d_out)
        if self.bias is not None:
            y = y + self.bias
        if self.lora_A is not None:
            y = y + self.lora_B(self.lora_A(x))  # (..., r) then (..., d_out)
        return y


def lora_rank(cfg: ModelConfig, target: str) -> int:
    """The LoRA rank of the linear layers named by ``target`` (q, k, v, o or ffn); 0 = none."""
    return cfg.lora_rank if cfg.lora_rank and target in cfg.lora_targets else 0


def make_norm(cfg: ModelConfig) -> nn.Module:
    """LayerNorm (γ, and β when the config's norm bias is on) or RMSNorm (γ only), over d_model."""
    return make_norm_of(cfg, cfg.d_model)


def make_norm_of(cfg: ModelConfig, width: int) -> nn.Module:
    """The config's norm over ``width`` features (latent attention's norms are not d_model wide)."""
    affine = cfg.norm_affine  # False: no γ, no β (OLMo's LayerNorm)
    if cfg.norm == "layernorm":
        return nn.LayerNorm(width, eps=cfg.norm_eps, elementwise_affine=affine, bias=cfg.has_norm_bias)
    assert cfg.norm == "rmsnorm", f"unknown norm {cfg.norm!r}"
    return nn.RMSNorm(width, eps=cfg.norm_eps, elementwise_affine=affine)


def activation(name: str, x: torch.Tensor) -> torch.Tensor:
    """The FFN's nonlinearity (elementwise: FlopCounterMode counts none of it)."""
    if name == "relu":
        return F.relu(x)
    if name == "gelu":
        return F.gelu(x)
    raise AssertionError(f"no plain activation for ffn={name!r}")
