"""Parameters and FLOPs of a plain multilayer perceptron (fully connected layers n₀ → n₁ → … → n_k).

Layer i maps n_{i−1} inputs to n_i outputs: n_{i−1}·n_i weights and n_i biases. Conventions,
each named in the result:

* ``bias``: biases counted (the usual exam answer, and ``nn.Linear``'s default) or not;
* FLOPs of a forward pass per example: 2 per multiply-add (``flops``) or 1 (``macs``); the bias
  additions (n_i per layer) are counted with ``count_bias_adds=True``, as one FLOP each;
  activations are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import FLOP_CONVENTIONS


def _sizes(sizes: Sequence[int]) -> list[int]:
    s = list(sizes)
    if len(s) < 2 or any(isinstance(n, bool) or int(n) != n or n < 1 for n in s):
        raise SolverInputError(f"an MLP needs at least two positive integer layer widths, got {s}", param="sizes")
    return [int(n) for n in s]


def mlp_params(sizes: Sequence[int], *, bias: bool = True) -> Result:
    """Σᵢ n_{i−1}·n_i (+ n_i with biases). Breakdown: weights, biases, and layer_i for each layer."""
    s = _sizes(sizes)
    r = Result(answer=None, unit="parameters", convention={"bias": "counted" if bias else "not counted"})
    layers = {}
    for i, (a, b) in enumerate(zip(s[:-1], s[1:], strict=True), start=1):
        layers[f"layer_{i}"] = r.step(f"layer {i} = {a}·{b}" + (f" + {b}" if bias else ""),
                                      f"{fmt(a * b)}" + (f" + {fmt(b)}" if bias else ""), a * b + (b if bias else 0))
    weights = sum(a * b for a, b in zip(s[:-1], s[1:], strict=True))
    biases = sum(s[1:]) if bias else 0
    total = r.step("total = Σ layers", " + ".join(fmt(v) for v in layers.values()), weights + biases)
    r.breakdown = {"weights": weights, "biases": biases, **layers}
    r.answer = total
    return r


def mlp_flops(sizes: Sequence[int], *, batch: int = 1, convention: str = "flops", count_bias_adds: bool = False) -> Result:
    """Forward FLOPs: batch · Σᵢ (c·n_{i−1}·n_i [+ n_i]), c = 2 (flops) or 1 (macs)."""
    s = _sizes(sizes)
    if int(batch) != batch or batch < 1:
        raise SolverInputError(f"must be a positive integer, got {batch}", param="batch")
    if convention not in FLOP_CONVENTIONS:
        raise SolverInputError(f"convention must be one of {', '.join(FLOP_CONVENTIONS)}, got {convention!r}", param="convention")
    c = 2 if convention == "flops" else 1
    r = Result(answer=None, unit="FLOPs" if convention == "flops" else "MACs",
               convention={"multiply_add": "2 FLOPs" if c == 2 else "1 MAC", "bias_adds": count_bias_adds,
                           "activations": "not counted", "batch": int(batch)})
    macs = sum(a * b for a, b in zip(s[:-1], s[1:], strict=True))
    per = r.step(f"per example = {c}·Σ n_(i−1)·n_i" + (" + Σ n_i" if count_bias_adds else ""),
                 f"{c} × {fmt(macs)}" + (f" + {fmt(sum(s[1:]))}" if count_bias_adds else ""),
                 c * macs + (sum(s[1:]) if count_bias_adds else 0))
    total = r.step("total = batch × per example", f"{int(batch)} × {fmt(per)}", int(batch) * per)
    r.breakdown = {"multiply_adds": macs * int(batch), "per_example": per}
    r.answer = total
    return r
