"""Position information without parameters: the sinusoidal table, rotary embeddings (RoPE) and
ALiBi's linear biases. None of them has a weight, and none of them is a matmul, so they add
nothing to a parameter count or to FlopCounterMode's FLOPs.
"""

from __future__ import annotations

import math

import torch


def sinusoidal_table(n_positions: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)); (n_positions, d_model)."""
    pos = torch.arange(n_positions, dtype=torch.float32).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(d/2),)
    angle = pos / torch.pow(10000.0, two_i / d_model)  # (P, ceil(d/2))
    table = torch.zeros(n_positions, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # an odd d_model has one more sine column
    return table


def rope_angles(start: int, T: int, head_size: int, device=None, base: float = 10000.0):
    """cos and sin of p·θ_i for positions p = start..start+T−1 and θ_i = base^(−2i/hs): (T, hs/2) each.

    Computed once per forward pass and shared by every layer (it depends on positions only)."""
    assert head_size % 2 == 0, f"RoPE needs an even head size, got {head_size}"
    theta = base ** (-torch.arange(0, head_size, 2, dtype=torch.float32, device=device) / head_size)  # (hs/2,)
    p = torch.arange(start, start + T, dtype=torch.float32, device=device)  # (T,)
    angle = p[:, None] * theta[None, :]  # (T, hs/2): an outer product by broadcasting, not a matmul
    return angle.cos(), angle.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2i], x[2i+1]) at position p by the angle p·θ_i.

    x: (B, nh, T, hs); cos, sin: (T, hs/2) from :func:`rope_angles`. Interleaved pairs as in the
    RoFormer paper (GPT-NeoX rotates halves instead: a different permutation, the same count).
    """
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, nh, T, hs/2) each
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, nh, T, hs/2, 2)
    return out.flatten(-2)  # (B, nh, T, hs)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's head slopes: 2^(-8h/n) for h = 1..n when n is a power of two; otherwise the slopes of
    the nearest smaller power of two followed by every other slope of the next one (Press et al.)."""

    def powers(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    if math.log2(n_heads).is_integer():
        return torch.tensor(powers(n_heads))
    below = 2 ** math.floor(math.log2(n_heads))
    return torch.tensor(powers(below) + powers(2 * below)[0::2][: n_heads - below])


def alibi_bias(n_heads: int, q_positions: torch.Tensor, k_positions: torch.Tensor, causal: bool) -> torch.Tensor:
    """Additive attention bias −m_h·|i − j| (and −inf above the diagonal when causal): (1, nh, Tq, Tk)."""
    distance = (q_positions[:, None] - k_positions[None, :]).abs().float()  # (Tq, Tk)
    slopes = alibi_slopes(n_heads).to(distance.device)  # (nh,)
    bias = -slopes[:, None, None] * distance  # (nh, Tq, Tk)
    if causal:
        future = k_positions[None, :] > q_positions[:, None]  # (Tq, Tk): True = block
        bias = bias.masked_fill(future, float("-inf"))
    return bias.unsqueeze(0)
