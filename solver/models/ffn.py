"""The position-wise feed-forward network, dense or as a mixture of experts.

Dense (``relu``/``gelu``): down(act(up(x))), two matrices d_model×d_ff.
``swiglu``: down(silu(gate(x)) ⊙ up(x)), three matrices d_model×d_ff.
Biases (d_ff on up/gate, d_model on down) when ``cfg.has_ffn_bias``.

Mixture of experts: a router (d_model → n_experts, no bias) scores every token, the ``top_k``
best experts each run their own FFN on it, and the outputs are mixed with the softmax of the
top-k scores (Mixtral's rule). Per token the FFN matmuls cost top_k dense FFNs plus the router.
Each expert is an FFN of ``cfg.expert_ff`` (``d_ff_expert`` or ``d_ff``). Shared experts
(DeepSeek's ``n_shared_experts``) run on every token, unweighted, each its own FFN (HuggingFace's
DeepseekV2Moe builds them as one FFN ``n_shared_experts`` times as wide: the same FLOPs, and the
same parameters without FFN biases, which DeepSeek has none of). The first ``first_dense_layers`` layers keep a dense
FFN of ``d_ff`` (``solver.models.blocks.Block`` picks which).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from solver.counting.config import ModelConfig
from solver.models.layers import Linear, activation, lora_rank


class FeedForward(nn.Module):
    """One dense FFN: (N, d_model) → (N, d_model), or any leading shape."""

    def __init__(self, cfg: ModelConfig, d_ff: int | None = None):
        super().__init__()
        d, bias, r = cfg.d_model, cfg.has_ffn_bias, lora_rank(cfg, "ffn")
        d_ff = cfg.d_ff if d_ff is None else d_ff
        self.kind = cfg.ffn
        self.gate = Linear(d, d_ff, bias, r) if cfg.ffn == "swiglu" else None
        self.up = Linear(d, d_ff, bias, r)
        self.down = Linear(d_ff, d, bias, r)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate is not None:
            h = F.silu(self.gate(x)) * self.up(x)  # (..., d_ff)
        else:
            h = activation(self.kind, self.up(x))  # (..., d_ff)
        return self.down(h)  # (..., d_model)


class ExpertBank(nn.Module):
    """``n`` FFNs of one shape with their weights stacked (as transformers' fused experts hold them):
    ``up``/``gate`` (n, width, d_model), ``down`` (n, d_model, width), biases (n, width) and
    (n, d_model). The same parameters and, per expert call, the same matmuls as ``n`` separate
    :class:`FeedForward` modules, built as three tensors instead of 3·n modules (DeepSeek-V3's 14,848
    routed experts build in a fraction of the time on the meta device). ``bank[e]`` is expert e: a
    callable with ``parameters()``, as a FeedForward."""

    def __init__(self, cfg: ModelConfig, n: int, width: int):
        super().__init__()
        d, bias = cfg.d_model, cfg.has_ffn_bias
        self.kind, self.n = cfg.ffn, n
        self.gate = nn.Parameter(torch.empty(n, width, d)) if cfg.ffn == "swiglu" else None
        self.up = nn.Parameter(torch.empty(n, width, d))
        self.down = nn.Parameter(torch.empty(n, d, width))
        self.gate_bias = nn.Parameter(torch.empty(n, width)) if bias and self.gate is not None else None
        self.up_bias = nn.Parameter(torch.empty(n, width)) if bias else None
        self.down_bias = nn.Parameter(torch.empty(n, d)) if bias else None
        if not self.up.is_meta:  # nn.Linear's initialisation, U(−1/√fan_in, 1/√fan_in), expert by expert
            for w, fan_in in ((self.gate, d), (self.up, d), (self.down, width), (self.gate_bias, d),
                              (self.up_bias, d), (self.down_bias, width)):
                if w is not None:
                    nn.init.uniform_(w, -fan_in ** -0.5, fan_in ** -0.5)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, e: int) -> _Expert:
        if not -self.n <= e < self.n:
            raise IndexError(f"expert {e} of {self.n}")
        return _Expert(self, e % self.n)

    def __iter__(self):
        return (_Expert(self, e) for e in range(self.n))

    def expert_forward(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """FFN e on x (..., d_model) → (..., d_model): x·W_upᵀ as a Linear computes it."""

        def linear(w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
            y = x_in @ w[e].T
            return y if b is None else y + b[e]

        x_in = x
        if self.gate is not None:
            h = F.silu(linear(self.gate, self.gate_bias)) * linear(self.up, self.up_bias)  # (..., width)
        else:
            h = activation(self.kind, linear(self.up, self.up_bias))  # (..., width)
        x_in = h
        return linear(self.down, self.down_bias)  # (..., d_model)


class _Expert:
    """Expert ``e`` of an :class:`ExpertBank`: call it on (..., d_model); ``parameters()`` yields its slices."""

    def __init__(self, bank: ExpertBank, e: int):
        self.bank, self.e = bank, e

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.bank.expert_forward(self.e, x)

    def parameters(self):
        return (p[self.e] for p in self.bank.parameters())


class MixtureOfExperts(nn.Module):
    """Top-k routing over ``n_experts`` FFNs: (B, T, d_model) → (B, T, d_model)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.top_k = cfg.top_k
        self.router = Linear(cfg.d_model, cfg.n_experts, cfg.router_bias)  # gpt-oss: with a bias
        if lora_rank(cfg, "ffn"):  # LoRA adapters beside each expert's matrices: one module per expert
            self.experts: nn.Module = nn.ModuleList(FeedForward(cfg, cfg.expert_ff) for _ in range(cfg.n_experts))
        else:
            self.experts = ExpertBank(cfg, cfg.n_experts, cfg.expert_ff)
        self.shared = nn.ModuleList(FeedForward(cfg, cfg.shared_ff) for _ in range(cfg.n_shared_experts))
        # Qwen-MoE: sigmoid(x·w) scales the shared experts' output, per token
        self.shared_gate = Linear(cfg.d_model, 1, False) if cfg.shared_expert_gate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.routed(x)
        shared = None
        for expert in self.shared:  # every token
            y = expert(x)
            shared = y if shared is None else shared + y
        if shared is not None:
            out = out + (shared if self.shared_gate is None else torch.sigmoid(self.shared_gate(x)) * shared)
        return out

    def routed(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        flat = x.reshape(B * T, d)  # (N, d)
        N, k = B * T, self.top_k
        scores, chosen = self.router(flat).topk(k, dim=-1)  # (N, k) each
        weights = scores.softmax(dim=-1)  # (N, k): mixing weights of the chosen experts
        out = torch.zeros_like(flat)  # (N, d)

        if flat.is_meta:
            # Values (and so the routing) do not exist on the meta device. Every expert has the
            # same shapes and a matmul's FLOPs are linear in its rows, so the N·k (token, slot)
            # pairs are run through one expert in one call: exactly the matmul FLOPs of any real
            # routing of them, at 1/E of the meta device's per-op cost (64 experts × 26 layers
            # would take tens of seconds one by one). Every expert's parameters exist all the same.
            pairs = torch.arange(N * k, device=x.device)
            token, slot = pairs // k, pairs % k
            out.index_add_(0, token, self.experts[0](flat[token]) * weights[token, slot, None])
            return out.view(B, T, d)

        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)  # the tokens that chose expert e
            if token.numel():
                out.index_add_(0, token, expert(flat[token]) * weights[token, slot, None])
        return out.view(B, T, d)  # each token: Σ over its k experts of weight · FFN_e(x)
