"""Logit soft-capping (Gemma 2, Gemma Team 2024 §2): y = cap·tanh(x/cap).

Gemma 2 caps the attention scores at 50.0 (before the softmax, after scaling) and the final
logits at 30.0 (HuggingFace ``Gemma2Config``: ``attn_logit_softcapping=50.0``,
``final_logit_softcapping=30.0``). Small x pass almost unchanged (tanh u ≈ u), large ones flatten
towards ±cap; the gradient dy/dx = 1 − tanh²(x/cap) shrinks as they do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from solver.errors import SolverInputError
from solver.result import Result, fmt

#: Gemma 2's caps (HuggingFace Gemma2Config defaults; Gemma Team 2024 §2)
GEMMA2_CAPS = {"attention": 50.0, "final": 30.0}


def softcap(x: Sequence[float], cap: float) -> Result:
    """cap·tanh(x/cap) of each entry, and its gradient. Answer: the capped values."""
    cap = float(cap)
    if not (cap > 0 and math.isfinite(cap)):
        raise SolverInputError(f"the cap must be positive (got {cap})", param="cap")
    xs = [float(v) for v in x]
    if not xs or not all(math.isfinite(v) for v in xs):
        raise SolverInputError("give at least one finite value", param="x")
    r = Result(answer=None, unit="", convention={"formula": "y = cap·tanh(x/cap) (Gemma 2)",
                                                 "gemma2": "attention scores capped at 50, final logits at 30"})
    u = r.step("x/cap", f"/ {fmt(cap)}", [v / cap for v in xs])
    y = r.step("y = cap·tanh(x/cap)", f"{fmt(cap)} × tanh(·)", [cap * math.tanh(t) for t in u])
    g = r.step("dy/dx = 1 − tanh²(x/cap)", "per entry", [1 - math.tanh(t) ** 2 for t in u])
    r.breakdown = {"capped": y, "gradient": g, "shrink": [a - b for a, b in zip(xs, y, strict=True)]}
    r.answer = y
    r.convention["answer"] = "soft-capped values"
    return r
