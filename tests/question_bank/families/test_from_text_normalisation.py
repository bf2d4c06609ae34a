"""The keys of ``normalisation.layernorm`` and ``normalisation.rmsnorm``, recomputed from the text a
student reads.

x, γ, β (a scalar or a vector each) and ε are parsed from ``statement_text``; the text's conventions are
checked to be stated (the biased variance 1/d Σ (xᵢ - μ)² for LayerNorm, no mean subtraction for
RMSNorm), and torch computes the result: ``torch.nn.functional.layer_norm`` (which uses the biased
variance) and ``torch.nn.functional.rms_norm``. The key must accept it written to the decimals asked.

The named mistakes (unbiased variance, divided by the variance, no square root, the L2 norm) are recomputed
from the text too.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_kernels import (
    find,
    number,
    vector,
)


def _param(name: str, text: str, d: int) -> torch.Tensor:
    """γ or β: a vector printed as ``γ = [..]``, or one scalar ``γ = 1`` for every feature."""
    if re.search(rf"{name} = \[", text):
        v = vector(name, text)
    else:
        v = [find(rf"{name} = (-?\d+(?:\.\d+)?)", text)] * d
    if len(v) != d:
        raise Unreadable(f"{name} has {len(v)} entries for {d} features")
    return torch.tensor(v, dtype=torch.float64)


def layernorm(text: str) -> list[float]:
    if "σ² = 1/dΣᵢ (xᵢ - μ)²" not in text:
        raise Unreadable("the variance's convention is not stated")
    x = torch.tensor(vector("x", text), dtype=torch.float64)
    eps = find(r"Take ε = (-?[\d.e-]+?)\.?\s", text + " ")
    d = x.numel()
    return F.layer_norm(x, (d,), _param("γ", text, d), _param("β", text, d), eps=eps).tolist()


def rmsnorm(text: str) -> list[float]:
    if "1/dΣᵢ xᵢ²" not in text or "no mean subtraction" not in text:
        raise Unreadable("the RMS convention is not stated")
    x = torch.tensor(vector("x", text), dtype=torch.float64)
    eps = find(r"Take ε = (-?[\d.e-]+?)\.?\s", text + " ")
    return F.rms_norm(x, (x.numel(),), _param("γ", text, x.numel()), eps=eps).tolist()


#: the key is a one-row matrix
RECOMPUTE = {"normalisation.layernorm": lambda t: [layernorm(t)], "normalisation.rmsnorm": lambda t: [rmsnorm(t)]}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """x = [0 1 1 2]: μ = 1, σ² = (1+0+0+1)/4 = 1/2, so y = (x-1)·√2 = [-1.41, 0, 0, 1.41]; RMSNorm of
    [1 3 3 6]: mean square (1+9+9+36)/4 = 13.75, y₀ = 1/√13.75 = 0.27."""
    head = ("LayerNorm computes y = γ⊙ (x - μ)/(√(σ² + ε)) + β over the features, with σ² = 1/dΣᵢ (xᵢ - μ)² (the "
            "biased variance, as PyTorch). Take ε = 0.\n\n")
    y = layernorm(head + "Compute y for x = [0 1 1 2] with γ = 1, β = 0. Give the entries rounded off to two decimal "
                         "places.")
    assert [round(v, 2) for v in y] == [-1.41, 0.0, 0.0, 1.41]
    assert number("0") == 0.0
    z = rmsnorm("RMSNorm computes y = γ⊙ x/(√(1/dΣᵢ xᵢ² + ε)) (no mean subtraction, no β). Take ε = 0.\n\nCompute y "
                "for x = [1 3 3 6] with γ = 1.")
    assert round(z[0], 2) == 0.27


def _x_gamma_beta(text: str):
    x = torch.tensor(vector("x", text), dtype=torch.float64)
    return x, _param("γ", text, x.numel()), (_param("β", text, x.numel()) if "β = " in text else 0)


def _layernorm_var(text: str, var_of) -> list[float]:
    x, g, b = _x_gamma_beta(text)
    return (g * (x - x.mean()) / var_of(x) + b).tolist()


#: fid -> misconception id -> the value its label names, from the text (ε = 0 in every draw)
MISTAKES = {
    "normalisation.layernorm": {
        "unbiased_variance": lambda t: [_layernorm_var(t, lambda x: x.var(correction=1).sqrt())],
        "divided_by_variance": lambda t: [_layernorm_var(t, lambda x: x.var(correction=0))],
    },
    "normalisation.rmsnorm": {
        "no_sqrt": lambda t: [(lambda x, g, _: (g * x / (x**2).mean()).tolist())(*_x_gamma_beta(t))],
        "l2_norm": lambda t: [(lambda x, g, _: (g * x / x.norm()).tolist())(*_x_gamma_beta(t))],
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "normalisation", mistakes=MISTAKES))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
