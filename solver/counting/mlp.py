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


# ---------------------------------------------------------------------------------------
# issue 44: the registry's description (solver.registry): qkv calc's mlp(...), from qkv solve mlp.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

_ON_OFF = {"on": Choice("counted"), "off": Choice("not counted")}


@formula("mlp", "Parameters and forward FLOPs of a plain fully connected network n₀ → n₁ → … → n_k.",
         (Input("sizes", "the layer widths n₀ … n_k ([784, 256, 10])", kind="vector", integer=True, minimum=1,
                maximum=10**9, aliases=("layers", "widths")),
          Input("batch", "examples (for the FLOPs)", kind="count", integer=True, minimum=1, default=1,
                aliases=("B",))),
         (Output("params", "", "Σ n_{i−1}·n_i (+ n_i biases)"),
          Output("flops", "", "forward FLOPs (or MACs) for the batch"),
          Output("weights", "", "the weights alone"),
          Output("biases", "", "the biases alone")),
         conventions=(Convention("bias", "Biases in every layer (as nn.Linear).", _ON_OFF, "on"),
                      Convention("convention", "What one multiply-add counts.", {
                          "flops": Choice("2 FLOPs per multiply-add"), "macs": Choice("1 per multiply-add (MACs)")},
                          "flops"),
                      Convention("bias_adds", "The bias additions as FLOPs (1 each).", _ON_OFF, "off")),
         solve="mlp", source="Goodfellow et al. 2016, ch. 6")
def _mlp_formula(sizes, batch=1, bias="on", convention="flops", bias_adds="off"):
    if len(sizes) < 2:
        raise SolverInputError("give at least two widths (input and output)", param="sizes")
    if len(sizes) > 1000:
        raise SolverInputError("at most 1,000 widths", param="sizes")
    p = mlp_params(sizes, bias=bias == "on")
    f = mlp_flops(sizes, batch=batch, convention=convention, count_bias_adds=bias_adds == "on")
    p.steps += f.steps
    p.breakdown.update(params=p.answer, flops=f.answer)
    return p


FORMULAS = (_mlp_formula.formula,)
