"""Online softmax by hand: one row of scores seen block by block (Milakov & Gimelshein 2018; the
inner loop of FlashAttention, Dao et al. 2022, Algorithm 1 lines 9-12).

After each block j of scores x_j (and, optionally, the value rows v of those keys) the running
figures are

    m_new = max(m_old, max_k x_jk)                         running maximum
    ℓ_new = e^(m_old − m_new)·ℓ_old + Σ_k e^(x_jk − m_new)  running sum, the old one rescaled
    o_new = e^(m_old − m_new)·o_old + Σ_k e^(x_jk − m_new)·v_k   unnormalised partial output

starting from m = −∞, ℓ = 0, o = 0 (e^(−∞) = 0). At the end the weights are e^(x − m)/ℓ and the
output o/ℓ: exactly the full softmax's weights and softmax(x)·V, because every term was rescaled
to the same final maximum. (FlashAttention-1 keeps o normalised, diag(ℓ)^-1·o, and rescales by
ℓ_old/ℓ_new too; FlashAttention-2, §3.1, divides once at the end, as here.)

Two arithmetics: float (``math.exp``) and exact (``exact=True``: the scores are Fractions or
integers, the exponentials stay symbolic in SymPy, so the final weights are provably the full
softmax's; SymPy is imported only then).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from solver.errors import SolverInputError
from solver.result import Result, fmt


def _blocks(blocks: Sequence[Sequence[Any]]) -> list[list[Any]]:
    b = [list(x) for x in blocks]
    if not b or any(len(x) == 0 for x in b):
        raise SolverInputError("give at least one block, each with at least one score", param="blocks")
    return b


def _text(x: Any) -> str:
    return fmt(x) if isinstance(x, (int, float)) else str(x)


def _factor(x: Any, denominator: bool = False) -> str:
    """``x`` as a factor of a product or quotient: a sum (an exact ``exp(-1/2) + 1``) or a negative
    number in parentheses, and, as a denominator, a product or quotient too."""
    t = _text(x)
    compound = t.startswith(("-", "−")) or " + " in t or " - " in t or (denominator and any(c in t for c in "*/·"))
    return f"({t})" if compound else t


#: at most this many products in a partial output's substitution line (columns × terms each); a
#: larger block's line names its terms instead of spelling every product out
SPELLED_OUT = 24


def _output_substitution(j: int, scale: Any, o_old: list[Any] | None, xs: list[Any], m_new: Any,
                         vs: list[list[Any]]) -> str:
    """``o_j = rescale·o_(j−1) + Σ e^(x − m_j)·v`` with its numbers, column by column:
    ``[0.0497871·0.367879 + e^(2 − 5)·1 + e^(5 − 5)·2, …]`` (block 1 has no old term). A block
    too large to spell out reads ``0.0497871·o_1 + Σ e^(x_k − 5)·v_k over its 20 scores``."""
    cols = len(vs[0])
    if cols * (len(xs) + (o_old is not None)) > SPELLED_OUT:
        old = "" if o_old is None else f"{_factor(scale)}·o_{j - 1} + "
        return f"{old}Σ e^(x_k − {_text(m_new)})·v_k over its {len(xs)} scores"
    parts = []
    for c in range(cols):
        terms = [] if o_old is None else [f"{_factor(scale)}·{_factor(o_old[c])}"]
        terms += [f"e^({_text(x)} − {_text(m_new)})·{_factor(v[c])}" for x, v in zip(xs, vs, strict=True)]
        parts.append(" + ".join(terms))
    return "[" + ", ".join(parts) + "]"


def online_softmax(blocks: Sequence[Sequence[Any]], values: Sequence[Sequence[Any]] | None = None, *,
                   exact: bool = False) -> Result:
    """One row's softmax computed block by block with a running max and sum (and, with ``values``,
    the rescaled partial output). Answer: the final weights. Breakdown: per block the running
    ``m``, ``ℓ`` (and ``o``), the rescale factor e^(m_old − m_new), the final weights, the full
    softmax's weights, and the output o/ℓ when values are given."""
    b = _blocks(blocks)
    scores = [x for blk in b for x in blk]
    n = len(scores)
    if values is not None:
        values = [list(v) for v in values]
        if len(values) != n or len({len(v) for v in values}) != 1 or not values[0]:
            raise SolverInputError(f"give one value row per score ({n}), all of the same length", param="values")
    if exact:
        import sympy as sp

        exp = sp.exp

        def num(x):
            return sp.nsimplify(x) if isinstance(x, float) else sp.Rational(x)

        scores_n = [num(x) for x in scores]
        vals = None if values is None else [[num(x) for x in v] for v in values]
        zero, simplify = sp.Integer(0), sp.simplify
    else:
        for x in scores:
            if not math.isfinite(float(x)):
                raise SolverInputError(f"scores must be finite (got {x})", param="blocks")
        exp = math.exp
        scores_n = [float(x) for x in scores]
        vals = None if values is None else [[float(x) for x in v] for v in values]
        zero = 0.0

        def simplify(e):
            return e

    r = Result(answer=None, unit="weights", convention={
        "algorithm": "online softmax: running max m and running sum ℓ, old terms rescaled by e^(m_old − m_new) "
                     "(Milakov & Gimelshein 2018; FlashAttention Algorithm 1 lines 9-12)",
        "start": "m = −∞, ℓ = 0, o = 0",
        "normalisation": "the output o is kept unnormalised and divided by ℓ once at the end (FlashAttention-2 §3.1)",
        "arithmetic": "exact (SymPy, exponentials kept symbolic)" if exact else "float64"})
    m = None
    ell = zero
    o = None if vals is None else [zero] * len(vals[0])
    pos = 0
    per_block = []
    for j, blk in enumerate(b, start=1):
        xs = scores_n[pos:pos + len(blk)]
        vs = None if vals is None else vals[pos:pos + len(blk)]
        pos += len(blk)
        block_max = max(xs)
        m_new = block_max if m is None else max(m, block_max)
        r.step(f"block {j}: m_{j} = max(m_{j - 1}, max x)",
               f"max({'−∞' if m is None else _text(m)}, {_text(block_max)})", m_new)
        scale = zero if m is None else simplify(exp(m - m_new))
        if m is not None:
            r.step(f"block {j}: rescale = e^(m_{j - 1} − m_{j})", f"e^({_text(m)} − {_text(m_new)})", scale)
        terms = [simplify(exp(x - m_new)) for x in xs]
        old_ell = [] if m is None else [f"{_factor(scale)}·{_factor(ell)}"]  # block 1: ℓ_0 = 0, no old term
        ell = simplify(scale * ell + sum(terms, zero))
        r.step(f"block {j}: ℓ_{j} = rescale·ℓ_{j - 1} + Σ e^(x − m_{j})",
               " + ".join(old_ell + [f"e^({_text(x)} − {_text(m_new)})" for x in xs]), ell)
        if o is not None:
            sub = _output_substitution(j, scale, None if m is None else o, xs, m_new, vs)
            o = [simplify(scale * o[c] + sum((t * v[c] for t, v in zip(terms, vs, strict=True)), zero))
                 for c in range(len(o))]
            r.step(f"block {j}: o_{j} = rescale·o_{j - 1} + Σ e^(x − m_{j})·v", sub, list(o))
        per_block.append({"m": m_new, "l": ell, "rescale": scale, **({} if o is None else {"o": list(o)})})
        m = m_new
    weights = [simplify(exp(x - m) / ell) for x in scores_n]
    r.step("weights = e^(x − m)/ℓ", f"m = {_text(m)}, ℓ = {_text(ell)}", weights)
    full_max = max(scores_n)
    full_sum = sum((exp(x - full_max) for x in scores_n), zero)
    full = [simplify(exp(x - full_max) / full_sum) for x in scores_n]
    r.breakdown = {"blocks": per_block, "final_max": m, "final_sum": ell, "weights": weights, "full_softmax": full}
    if exact:
        r.breakdown["equal_to_full_softmax"] = all(sp.simplify(a - c) == 0 for a, c in zip(weights, full, strict=True))
    else:
        r.breakdown["max_difference_from_full_softmax"] = max(abs(a - c) for a, c in zip(weights, full, strict=True))
    if o is not None:
        out = [simplify(x / ell) for x in o]
        sub = ("[" + ", ".join(f"{_factor(x)}/{_factor(ell, denominator=True)}" for x in o) + "]" if len(o) <= SPELLED_OUT
               else f"each of the {len(o)} entries of o divided by ℓ = {_text(ell)}")
        r.step("output = o/ℓ", sub, out)
        r.breakdown["output"] = out
    r.answer = weights
    return r


# ---------------------------------------------------------------------------------------
# issue 44: the registry's description (solver.registry): qkv calc's online_softmax(...), from
# qkv solve online-softmax. calc takes the row and a block size (blocks of that many scores in
# order, the last one shorter), where the command takes each block (--block, repeated).
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Input, Output, formula  # noqa: E402


@formula("online_softmax", "One row's softmax block by block: running max m, running sum ℓ, the output rescaled.",
         (Input("scores", "the whole row of scores, in order", kind="vector", minimum=-10**6, maximum=10**6,
                aliases=("x",)),
          Input("block", "scores per block (the last block may be shorter)", kind="count", integer=True, minimum=1,
                maximum=4096, aliases=("block_size",)),
          Input("values", "value rows, one per score (for the output o)", kind="matrix", default=None,
                minimum=-10**6, maximum=10**6, aliases=("v",))),
         (Output("weights", "", "the softmax weights of the whole row, in order", kind="vector"),
          Output("final_max", "", "m after the last block"),
          Output("final_sum", "", "ℓ after the last block"),
          Output("output", "", "o / ℓ: the attention output", ("values",), kind="vector"),
          Output("max_difference", "", "the largest |online − full softmax|", key="max_difference_from_full_softmax")),
         solve="online-softmax", source="Milakov & Gimelshein 2018; Dao et al. 2022 (FlashAttention), Algorithm 1")
def _online_softmax_formula(scores, block, values=None):
    xs = [float(x) for x in scores]
    blocks = [xs[i:i + block] for i in range(0, len(xs), block)]
    return online_softmax(blocks, None if values is None else [[float(x) for x in r] for r in values])


FORMULAS = (_online_softmax_formula.formula,)
