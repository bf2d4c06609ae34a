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


def rope_rotation(start: int, T: int, head_size: int, device=None, base: float = 10000.0) -> torch.Tensor:
    """e^{i·p·θ_j} for positions p = start..start+T−1 and θ_j = base^(−2j/hs): complex, (T, hs/2).

    Computed once per forward pass and shared by every layer (it depends on positions only)."""
    assert head_size % 2 == 0, f"RoPE needs an even head size, got {head_size}"
    theta = base ** (-torch.arange(0, head_size, 2, dtype=torch.float32, device=device) / head_size)  # (hs/2,)
    p = torch.arange(start, start + T, dtype=torch.float32, device=device)  # (T,)
    angle = p[:, None] * theta[None, :]  # (T, hs/2): an outer product by broadcasting, not a matmul
    return torch.polar(torch.ones_like(angle), angle)  # cos(angle) + i·sin(angle)


def apply_rope(x: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2j], x[2j+1]) at position p by the angle p·θ_j:

        (x[2j], x[2j+1]) → (x[2j]·cos − x[2j+1]·sin, x[2j]·sin + x[2j+1]·cos),

    one complex multiplication per pair. x: (B, nh, T, hs); rotation: (T, hs/2) from
    :func:`rope_rotation`. Interleaved pairs as in the RoFormer paper (GPT-NeoX rotates halves
    instead: a different permutation, the same count). Elementwise: FlopCounterMode counts none.
    """
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()  # no complex half types
    pairs = torch.view_as_complex(work.unflatten(-1, (-1, 2)))  # (B, nh, T, hs/2) complex
    return torch.view_as_real(pairs * rotation).flatten(-2).to(x.dtype)  # (B, nh, T, hs)


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
