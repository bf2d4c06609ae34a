"""The registry's description (solver.registry) of the perplexity of a mean loss: qkv calc's
perplexity(...), from qkv solve perplexity --loss (issue 44).

Kept apart from :mod:`solver.kernels.loss` (its solver function), which imports NumPy: listing the
registry must not (``qkv calc`` starts without it); the function is imported when asked.
"""

from __future__ import annotations

import math

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Input, Output, formula

LOSS_UNIT = Convention("unit", "What the loss is in.", {
    "nats": Choice("natural log, as PyTorch's cross_entropy: perplexity = e^loss", "PyTorch"),
    "bits": Choice("log base 2: perplexity = 2^loss", "Shannon 1948")}, "nats")


@formula("perplexity", "Perplexity of a mean per-token loss: e^(nats) = 2^(bits); the loss in bits and nats.",
         (Input("loss", "the mean cross-entropy per token", kind="fraction", minimum=0, maximum=10**4,
                aliases=("nll",)),),
         (Output("perplexity", "", "e^(nats) = 2^(bits)"),
          Output("bits_per_token", "", "the loss in bits"),
          Output("nats_per_token", "", "the loss in nats")),
         conventions=(LOSS_UNIT,), solve="perplexity", source="Jelinek et al. 1977; Jurafsky & Martin, ch. 3")
def _perplexity_formula(loss, unit="nats"):
    from solver.kernels.loss import perplexity

    r = perplexity(float(loss), unit=unit)
    if math.isinf(r.answer):
        raise SolverInputError("the perplexity overflows for this loss", param="loss")
    return r


FORMULAS = (_perplexity_formula.formula,)
