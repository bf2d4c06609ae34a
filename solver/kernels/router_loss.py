"""The router's auxiliary losses by hand, from router logits (tokens × experts).

- Switch Transformer load-balancing loss (Fedus et al. 2022, §2.2, eq. 4-6):
  loss = α · E · Σ_i f_i · P_i, where f_i = fraction of the tokens dispatched to expert i (top-1:
  its argmax) and P_i = (1/T) Σ_x p_i(x), the mean router probability (softmax over the experts).
  With top-k > 1 two normalisations of f are in use, both offered, named: ``f_per="assignments"``,
  f_i = (tokens whose top-k includes i)/(T·k), so the loss is α at perfectly uniform routing; and
  ``f_per="tokens"``, the same count over T (HuggingFace's ``load_balancing_loss_func`` for Mixtral),
  k times larger.
- Router z-loss (Zoph et al. 2022, ST-MoE, eq. 5): (1/T) Σ_x (log Σ_j e^(x_j))², times its
  coefficient (1e-3 in the paper); it keeps logits small.

Ties in the top-k are broken towards the lower expert index (NumPy's stable argsort order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.errors import SolverInputError
from solver.result import Result, fmt


def _logits(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2 or not np.isfinite(a).all():
        raise SolverInputError("router logits are a finite tokens × experts matrix with at least 2 experts",
                               param="logits")
    return a


def router_losses(logits: Any, *, top_k: int = 1, alpha: float = 1.0, z_coef: float = 1.0,
                  f_per: str = "assignments") -> Result:
    """Load-balancing loss (answer) and z-loss of router logits; f, P, the log-sum-exps in the breakdown."""
    x = _logits(logits)
    T, E = x.shape
    if int(top_k) != top_k or not 1 <= top_k <= E:
        raise SolverInputError(f"top-k must be from 1 to {E}", param="top_k")
    k = int(top_k)
    if f_per not in ("assignments", "tokens"):
        raise SolverInputError(f"f_per must be assignments or tokens (got {f_per!r})", param="f_per")
    div = T * k if f_per == "assignments" else T
    r = Result(answer=None, unit="", convention={
        "load_balance": "α·E·Σ f_i·P_i (Switch Transformer eq. 4)",
        "f": ("assignments to expert i over T·k (uniform routing gives α)" if f_per == "assignments" else
              "assignments to expert i over T (HF Mixtral's load_balancing_loss_func; uniform gives k·α)"),
        "P": "mean over tokens of the softmax probability of expert i",
        "z_loss": "(1/T)·Σ_x (logsumexp x)² (ST-MoE eq. 5), times its coefficient",
        "ties": "top-k ties go to the lower expert index",
        "coefficients": f"α = {fmt(alpha)}, z coefficient = {fmt(z_coef)}"})
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    p = np.exp(x - lse[:, None])
    chosen = np.argsort(-x, axis=1, kind="stable")[:, :k]
    counts = np.bincount(chosen.ravel(), minlength=E)
    f = counts / div
    P = p.mean(axis=0)
    r.step("f_i = assignments to i / " + ("(T·k)" if f_per == "assignments" else "T"),
           f"counts {counts.tolist()} / {div}", f.tolist())
    r.step("P_i = mean_x softmax(x)_i", f"{T} tokens", P.tolist())
    lb = r.step("load-balancing loss = α·E·Σ f_i·P_i", f"{fmt(alpha)} × {E} × {fmt(float(f @ P))}",
                float(alpha * E * (f @ P)))
    r.step("logsumexp per token", f"{T} tokens", lse.tolist())
    z = r.step("z-loss = coef·(1/T)·Σ (logsumexp)²", f"{fmt(z_coef)} × {fmt(float((lse ** 2).mean()))}",
               float(z_coef * (lse ** 2).mean()))
    r.breakdown = {"load_balancing_loss": lb, "z_loss": z, "f": f.tolist(), "P": P.tolist(),
                   "assignments": counts.tolist(), "logsumexp": lse.tolist(), "uniform_value": float(alpha) * (1 if f_per == "assignments" else k)}
    r.answer = lb
    r.convention["answer"] = "load-balancing loss"
    return r
