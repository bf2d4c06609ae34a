"""Exact reference kernels (SymPy) for the small by-hand problems of the exam.

Inputs are integers, fractions and decimals, converted by :func:`exact` to SymPy rationals
*from their decimal text* (``0.1`` is 1/10, never the double nearest to it). The kernels then
compute with exact expressions: ``exp``, ``sqrt``, ``sin`` and ``cos`` stay symbolic, so the
answer key of a by-hand problem never depends on float rounding; :func:`evalf_trace` and
:func:`to_floats` evaluate to any number of digits.

Semantics, keyword names and step names are those of :mod:`solver.kernels.numpy_ref` (see
:mod:`solver.trace`), on 2-D data: a SymPy ``Matrix`` of shape (n, d), row i = token i. A
1-D input (a flat list) is read as one row, so results are then 1×d matrices.
Masks follow :mod:`solver.kernels.masks` (conventions converted there, nowhere else).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from numbers import Integral, Rational
from typing import Any

import sympy as sp

from solver.errors import SolverInputError
from solver.kernels import masks
from solver.trace import Trace

__all__ = [
    "exact",
    "matrix",
    "softmax",
    "attention",
    "multi_head_attention",
    "layer_norm",
    "rms_norm",
    "pe_value",
    "sinusoidal_pe",
    "rope",
    "evalf_trace",
    "to_floats",
]


# --------------------------------------------------------------------------- conversion


def exact(x: Any) -> Any:
    """A number, a string such as ``"0.5"``/``"1/2"``/``"1e-5"``, or nested lists → SymPy, exactly.

    Floats are read through their shortest decimal ``repr`` (``0.1`` → 1/10), which is the
    number the user typed; ±inf becomes ±oo (an additive mask's −∞). Strings are parsed by
    :class:`fractions.Fraction`'s strict grammar, never by ``sympify``. Nested lists, tuples
    and NumPy arrays become a ``Matrix`` (1-D: one row).
    """
    if isinstance(x, sp.Basic) or isinstance(x, sp.MatrixBase):
        return x
    if isinstance(x, bool):
        return sp.Integer(int(x))
    if isinstance(x, Integral):
        return sp.Integer(int(x))
    if isinstance(x, Fraction) or (isinstance(x, Rational) and not isinstance(x, float)):
        return sp.Rational(int(x.numerator), int(x.denominator))
    if isinstance(x, str):
        try:
            f = Fraction(x.strip())
        except (ValueError, ZeroDivisionError) as e:
            raise SolverInputError(f"{x!r} is not an exact number", param="x") from e
        return sp.Rational(f.numerator, f.denominator)
    if isinstance(x, float) or type(x).__module__ == "numpy" and getattr(x, "ndim", 1) == 0:
        v = float(x)
        if v != v:
            raise SolverInputError("NaN has no exact value", param="x")
        if v in (float("inf"), float("-inf")):
            return sp.oo if v > 0 else -sp.oo
        f = Fraction(repr(v))
        return sp.Rational(f.numerator, f.denominator)
    if hasattr(x, "tolist"):
        return exact(x.tolist())
    if isinstance(x, (list, tuple)):
        return matrix(x)
    raise SolverInputError(f"cannot read {type(x).__name__} as an exact number", param="x")


def matrix(x: Any, param: str = "x") -> sp.Matrix:
    """Nested lists (2-D) or a flat list (one row) → an exact ``Matrix``."""
    if isinstance(x, sp.MatrixBase):
        return sp.Matrix(x)
    if hasattr(x, "tolist"):
        x = x.tolist()
    if not isinstance(x, (list, tuple)) or len(x) == 0:
        raise SolverInputError("expected a non-empty vector or matrix", param=param)
    if not isinstance(x[0], (list, tuple)):
        x = [x]
    width = len(x[0])
    if width == 0 or any(not isinstance(r, (list, tuple)) or len(r) != width for r in x):
        raise SolverInputError("rows must be non-empty and of equal length", param=param)
    return sp.Matrix([[exact(v) for v in row] for row in x])


def _scalar(x: Any, param: str) -> Any:
    v = exact(x)
    if isinstance(v, sp.MatrixBase):
        raise SolverInputError("expected a number", param=param)
    return v


def _tidy(expr: Any) -> Any:
    """The shorter of ``expr`` and its cancelled form (so 1/2 shows as 1/2, not a sum of fractions)."""
    c = sp.cancel(expr)
    return c if sp.count_ops(c) < sp.count_ops(expr) else expr


def _tidy_small(expr: Any, terms: int, limit: int = 4) -> Any:
    """:func:`_tidy` for a sum of at most ``limit`` terms only (its cost grows fast with them)."""
    return _tidy(expr) if terms <= limit else expr


def _row_max(row: Sequence[Any]) -> Any:
    """Largest entry of an exact row (−oo entries included)."""
    best = row[0]
    for v in row[1:]:
        if bool(v > best):
            best = v
    return best


# --------------------------------------------------------------------------- softmax


def softmax(x: Any, axis: int = -1, temperature: Any = 1, return_trace: bool = False):
    """softmax(x/T)ᵢ = exp(xᵢ/T − max x/T) / Σⱼ exp(xⱼ/T − max x/T), along ``axis`` (−1/1 rows, 0 columns).

    Steps: scaled (only when T ≠ 1), shifted, exp, sum (one per row: a column), output.
    Entries equal to −oo get weight exactly 0; a slice that is all −oo is an error.
    """
    m = matrix(x)
    if axis not in (-1, 0, 1, -2):
        raise SolverInputError(f"axis must be one of -2, -1, 0, 1 for a matrix, got {axis}", param="axis")
    t = _scalar(temperature, "temperature")
    if not bool(t > 0):
        raise SolverInputError(f"temperature must be > 0, got {t}", param="temperature")
    columns = axis in (0, -2)
    if columns:
        m = m.T
    tr = Trace()
    if t != 1:
        m = m / t
        tr.add("scaled", m.T if columns else m, "z = x / T", r"z = x / T")
    for i in range(m.rows):
        if all(v == -sp.oo for v in m.row(i)):
            raise SolverInputError(f"slice {i} is all -inf: softmax is 0/0", param="x")
    maxes = [_row_max(list(m.row(i))) for i in range(m.rows)]
    shifted = sp.Matrix(m.rows, m.cols, lambda i, j: m[i, j] - maxes[i])
    e = shifted.applyfunc(sp.exp)
    s = sp.Matrix([sum(e.row(i)) for i in range(m.rows)])
    out = sp.Matrix(m.rows, m.cols, lambda i, j: e[i, j] / s[i])
    if columns:
        shifted, e, s, out = shifted.T, e.T, s.T, out.T
    tr.add("shifted", shifted, "z − max z", r"z - \max z")
    tr.add("exp", e, "exp(z − max z)", r"e^{z - \max z}")
    tr.add("sum", s, "Σⱼ exp(zⱼ − max z)", r"\sum_j e^{z_j - \max z}")
    tr.add("output", out, "softmax(z) = exp(z − max z) / Σ", r"\mathrm{softmax}(z)")
    return (out, tr) if return_trace else out


# --------------------------------------------------------------------------- attention


def _keep_mask(mask: Any, mask_convention: str, causal: bool, n: int, m: int) -> tuple[Any, Any]:
    """(KEEP array (n, m) or None, exact additive Matrix (n, m) or None) for scores (n, m).

    Boolean or integer 0/1 arrays (and nested lists of bools/ints) are boolean masks in
    ``mask_convention``, converted by :func:`solver.kernels.masks.to_keep`; float arrays and SymPy
    matrices are additive (−inf/−oo = blocked). A single row broadcasts over the queries.
    """
    import numpy as np

    keep = additive = None
    if mask is not None:
        if isinstance(mask, sp.MatrixBase):
            additive = sp.Matrix(mask)
        else:
            arr = np.asarray(mask.tolist() if hasattr(mask, "tolist") and not isinstance(mask, np.ndarray) else mask)
            if arr.ndim == 1:
                arr = arr[None, :]
            if arr.ndim != 2 or arr.shape[1] != m or arr.shape[0] not in (1, n):
                raise SolverInputError(f"mask has shape {arr.shape}, the scores ({n}, {m})", param="mask")
            if arr.dtype.kind in "biu":
                keep = np.broadcast_to(masks.to_keep(arr, mask_convention), (n, m))
            elif arr.dtype.kind == "f":
                additive = matrix(arr.tolist(), "mask")
            else:
                raise SolverInputError("a mask must be boolean, 0/1 or additive floats", param="mask")
        if additive is not None:
            if additive.rows == 1 and n > 1:
                additive = sp.Matrix.vstack(*[additive] * n)
            if additive.shape != (n, m):
                raise SolverInputError(f"mask has shape {additive.shape}, the scores ({n}, {m})", param="mask")
    if causal:
        c = masks.causal_mask(n, m)
        keep = c if keep is None else (keep & c)
    return keep, additive


def attention(
    q: Any,
    k: Any,
    v: Any,
    mask: Any = None,
    *,
    mask_convention: str = masks.KEEP,
    causal: bool = False,
    scale: Any = None,
    empty_rows: str = "error",
    return_trace: bool = False,
):
    """Attention(Q, K, V) = softmax(Q Kᵀ · scale + M) V, scale = 1/√d_k by default, exactly.

    ``mask``: boolean/0-1 in ``mask_convention`` (``"keep"``: True = may attend; ``"block"``:
    True = blocked), or additive (exact numbers, −oo/−inf = blocked). ``causal`` adds the
    bottom-right causal mask of :func:`solver.kernels.masks.causal_mask`. A row that blocks every key
    raises ``SolverInputError(param="mask")`` (or, with ``empty_rows="zero"``, gets zero weights).
    Returns (output, weights); steps scores, scaled, masked (only with a mask or causal),
    weights, output.
    """
    Q, K, V = matrix(q, "q"), matrix(k, "k"), matrix(v, "v")
    if Q.cols != K.cols:
        raise SolverInputError(f"Q has d_k = {Q.cols} but K has d_k = {K.cols}", param="k")
    if V.rows != K.rows:
        raise SolverInputError(f"V has {V.rows} rows but K has {K.rows} (one value per key)", param="v")
    if empty_rows not in masks.EMPTY_ROWS:
        raise SolverInputError(f"empty_rows must be 'error' or 'zero', got {empty_rows!r}", param="empty_rows")
    n, m = Q.rows, K.rows
    tr = Trace()
    s = tr.add("scores", Q * K.T, "S = Q·Kᵀ", r"S = QK^\top")
    c = sp.sqrt(sp.Integer(Q.cols)) ** -1 if scale is None else _scalar(scale, "scale")
    scaled = tr.add(
        "scaled", s * c, f"S' = S · {'1/√d_k' if scale is None else 'scale'}", r"S' = S / \sqrt{d_k}"
    )
    keep, additive = _keep_mask(mask, mask_convention, causal, n, m)
    x = scaled
    if keep is not None or additive is not None:
        x = sp.Matrix(n, m, lambda i, j: scaled[i, j] + (additive[i, j] if additive is not None else 0))
        if keep is not None:
            x = sp.Matrix(n, m, lambda i, j: x[i, j] if keep[i, j] else -sp.oo)
        tr.add("masked", x, "S'' = S' + M  (M = 0 where allowed, −∞ where blocked)", r"S'' = S' + M")
    empty = [all(x[i, j] == -sp.oo for j in range(m)) for i in range(n)]
    if any(empty) and empty_rows == "error":
        i = empty.index(True)
        raise SolverInputError(
            f"row {i} of the mask blocks every key; pass empty_rows='zero' for zero weights in such rows",
            param="mask",
        )
    rows, exps, sums = [], [], []
    for i in range(n):
        if empty[i]:
            rows.append([sp.Integer(0)] * m)
            exps.append([sp.Integer(0)] * m)
            sums.append(sp.Integer(1))
        else:
            row, rtr = softmax(x.row(i), return_trace=True)
            rows.append(list(row))
            exps.append(list(rtr["exp"].value))
            sums.append(rtr["sum"].value[0])
    w = tr.add("weights", sp.Matrix(rows), "A = softmax(S'') row by row", r"A = \mathrm{softmax}(S'')")
    # closed form per entry: O_ij = Σ_k e^{s_ik − max} v_kj / Σ_k e^{s_ik − max}, one division, the
    # exponentials left as they are (cancelling A·V's sum of fractions took minutes at 8 × 8)
    out = tr.add("output", sp.Matrix(n, V.cols, lambda i, j: _tidy_small(
        sp.Add(*[exps[i][k] * V[k, j] for k in range(m)]) / sums[i], m)), "O = A·V", r"O = AV")
    return ((out, w), tr) if return_trace else (out, w)


def multi_head_attention(
    x: Any,
    wq: Any,
    wk: Any,
    wv: Any,
    wo: Any = None,
    *,
    n_heads: int = 1,
    mask: Any = None,
    mask_convention: str = masks.KEEP,
    causal: bool = False,
    return_trace: bool = False,
):
    """Self-attention from embeddings, exactly: Q = XW_q, K = XW_k, V = XW_v (y = x W, W is
    d_in×d_out), split into ``n_heads`` heads of d_k = d_out/h columns each, attend per head
    with scale 1/√d_k, concatenate, then multiply by W_o when given.

    Returns (y, weights) with weights a list of one (n, n) matrix per head. Steps as
    :func:`solver.kernels.numpy_ref.multi_head_attention`: q, k, v, then scores, scaled, [masked],
    weights, each a list of one matrix per head (NumPy's head axis), then concat, output.
    """
    X = matrix(x, "x")
    Wq, Wk, Wv = matrix(wq, "wq"), matrix(wk, "wk"), matrix(wv, "wv")
    for name, W in (("wq", Wq), ("wk", Wk), ("wv", Wv)):
        if W.rows != X.cols:
            raise SolverInputError(f"{name} has {W.rows} rows but x has {X.cols} columns", param=name)
    if Wq.cols != Wk.cols:
        raise SolverInputError(f"wk gives d = {Wk.cols} but wq gives {Wq.cols}", param="wk")
    if n_heads < 1 or Wq.cols % n_heads or Wv.cols % n_heads:
        raise SolverInputError(f"{n_heads} heads do not divide d_q = {Wq.cols} and d_v = {Wv.cols}", param="heads")
    tr = Trace()
    Q = tr.add("q", X * Wq, "Q = X·W_q", r"Q = XW_q")
    K = tr.add("k", X * Wk, "K = X·W_k", r"K = XW_k")
    V = tr.add("v", X * Wv, "V = X·W_v", r"V = XW_v")
    dk, dv = Wq.cols // n_heads, Wv.cols // n_heads
    per_head: dict[str, list] = {}
    outs, ws = [], []
    for h in range(n_heads):
        (o, w), htr = attention(
            Q[:, h * dk : (h + 1) * dk],
            K[:, h * dk : (h + 1) * dk],
            V[:, h * dv : (h + 1) * dv],
            mask,
            mask_convention=mask_convention,
            causal=causal,
            return_trace=True,
        )
        for step in htr:
            if step.name != "output":
                per_head.setdefault(step.name, []).append((step.value, step.formula, step.latex))
        outs.append(o)
        ws.append(w)
    for name, entries in per_head.items():
        tr.add(name, [e[0] for e in entries], entries[0][1] + " (per head)", entries[0][2])
    y = tr.add("concat", sp.Matrix.hstack(*outs), "concat(O_1, …, O_h)", r"\mathrm{concat}(O_1,\dots,O_h)")
    if wo is not None:
        Wo = matrix(wo, "wo")
        if Wo.rows != y.cols:
            raise SolverInputError(f"wo has {Wo.rows} rows but the heads concatenate to {y.cols}", param="wo")
        y = y * Wo
    tr.add("output", y, "Y = concat·W_o" if wo is not None else "Y = concat", r"Y = \mathrm{concat}\,W_o")
    return ((y, ws), tr) if return_trace else (y, ws)


# --------------------------------------------------------------------------- normalisation


def _gamma_beta(v: Any, d: int, param: str, default: int) -> sp.Matrix:
    if v is None:
        return sp.Matrix([[default] * d])
    g = matrix(v, param)
    if g.shape != (1, d):
        raise SolverInputError(f"{param} has {g.rows * g.cols} entries, the rows have {d}", param=param)
    return g


def layer_norm(x: Any, gamma: Any = None, beta: Any = None, eps: Any = "1e-5", return_trace: bool = False):
    """LayerNorm(x) = γ·(x − μ)/√(σ² + ε) + β per row; σ² biased (divides by d, as PyTorch).

    Steps: mean, variance (columns, one entry per row), normalised, output.
    """
    X = matrix(x)
    e = _scalar(eps, "eps")
    if bool(e < 0):
        raise SolverInputError(f"eps must be ≥ 0, got {e}", param="eps")
    d = X.cols
    g, b = _gamma_beta(gamma, d, "gamma", 1), _gamma_beta(beta, d, "beta", 0)
    tr = Trace()
    mu = tr.add("mean", sp.Matrix([sum(X.row(i)) / d for i in range(X.rows)]), "μ = (1/d) Σ xᵢ", r"\mu")
    var = tr.add(
        "variance",
        sp.Matrix([sum((X[i, j] - mu[i]) ** 2 for j in range(d)) / d for i in range(X.rows)]),
        "σ² = (1/d) Σ (xᵢ − μ)²  (biased)",
        r"\sigma^2 = \frac{1}{d}\sum_i (x_i-\mu)^2",
    )
    for i in range(X.rows):
        if var[i] + e == 0:
            raise SolverInputError(f"row {i} is constant and eps = 0: division by zero", param="eps")
    norm = tr.add(
        "normalised",
        sp.Matrix(X.rows, d, lambda i, j: (X[i, j] - mu[i]) / sp.sqrt(var[i] + e)),
        "x̂ = (x − μ) / √(σ² + ε)",
        r"\hat x = \frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}",
    )
    out = tr.add("output", sp.Matrix(X.rows, d, lambda i, j: g[j] * norm[i, j] + b[j]), "y = γ·x̂ + β", r"y")
    return (out, tr) if return_trace else out


def rms_norm(x: Any, gamma: Any = None, eps: Any = "1e-6", return_trace: bool = False):
    """RMSNorm(x) = γ·x / √(mean(x²) + ε) per row. Steps: mean_square, rms, normalised, output."""
    X = matrix(x)
    e = _scalar(eps, "eps")
    if bool(e < 0):
        raise SolverInputError(f"eps must be ≥ 0, got {e}", param="eps")
    d = X.cols
    g = _gamma_beta(gamma, d, "gamma", 1)
    tr = Trace()
    ms = tr.add(
        "mean_square",
        sp.Matrix([sum(v**2 for v in X.row(i)) / d for i in range(X.rows)]),
        "mean(x²) = (1/d) Σ xᵢ²",
        r"\frac{1}{d}\sum_i x_i^2",
    )
    for i in range(X.rows):
        if ms[i] + e == 0:
            raise SolverInputError(f"row {i} is all zeros and eps = 0: division by zero", param="eps")
    rms = tr.add("rms", ms.applyfunc(lambda v: sp.sqrt(v + e)), "rms = √(mean(x²) + ε)", r"\mathrm{rms}")
    norm = tr.add("normalised", sp.Matrix(X.rows, d, lambda i, j: X[i, j] / rms[i]), "x̂ = x / rms", r"\hat x")
    out = tr.add("output", sp.Matrix(X.rows, d, lambda i, j: g[j] * norm[i, j]), "y = γ·x̂", r"y")
    return (out, tr) if return_trace else out


# --------------------------------------------------------------------------- positions


def _pe_slot(dim: int, d_model: int, layout: str) -> tuple[int, bool]:
    """(frequency index i, is_sine) of coordinate ``dim``; see :func:`pe_value`."""
    if layout == "interleaved":
        return dim // 2, dim % 2 == 0
    if layout == "concat":
        half = (d_model + 1) // 2  # odd d_model: one more sine than cosines
        return (dim, True) if dim < half else (dim - half, False)
    raise SolverInputError(f"layout must be one of interleaved, concat, tensor2tensor, got {layout!r}",
                           param="layout")


def _t2t_value(pos: Any, dim: int, d_model: int, b: Any) -> tuple[Any, Any]:
    """(angle, value) of tensor2tensor's table: n = ⌊d/2⌋, angle = pos·b^(−i/max(n−1, 1)), sines then
    cosines, 0 in the last column of an odd d (angle None there)."""
    n = d_model // 2
    if dim >= 2 * n:
        return None, sp.Integer(0)
    i, is_sin = (dim, True) if dim < n else (dim - n, False)
    angle = _scalar(pos, "pos") * b ** (-sp.Rational(i, max(n - 1, 1)))
    return angle, (sp.sin if is_sin else sp.cos)(angle)


def _check_pe(d_model: int, base: Any) -> Any:
    if int(d_model) != d_model or d_model < 1:
        raise SolverInputError(f"d_model must be a positive integer, got {d_model}", param="d_model")
    b = _scalar(base, "base")
    if not bool(b > 1):
        raise SolverInputError(f"base must be > 1, got {b}", param="base")
    return b


def pe_value(pos: Any, dim: int, d_model: int, *, base: Any = 10000, layout: str = "interleaved",
             return_trace: bool = False):
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d)), exactly.

    ``layout="interleaved"`` (Vaswani et al.): coordinate 2i is a sine, 2i+1 its cosine.
    ``layout="concat"``: the paper's frequencies, the first ⌈d/2⌉ coordinates the sines i = 0, 1, …,
    the rest the cosines. ``layout="tensor2tensor"`` (tensor2tensor, The Illustrated Transformer):
    n = ⌊d/2⌋ angles pos·base^(−i/(n−1)), sines then cosines (0 last for an odd d). Steps: angle, output.
    """
    b = _check_pe(d_model, base)
    if int(dim) != dim or not 0 <= dim < d_model:
        raise SolverInputError(f"dim must be an integer in 0..{d_model - 1}, got {dim}", param="dim")
    if layout == "tensor2tensor":
        tr = Trace()
        angle, value = _t2t_value(pos, int(dim), int(d_model), b)
        tr.add("angle", sp.Integer(0) if angle is None else angle,
               "θ = pos · base^(−i/(n−1))" if angle is not None else "none: the zero pad column of an odd d",
               r"\theta = pos \cdot 10000^{-i/(n-1)}")
        out = tr.add("output", value, "sin θ / cos θ (0: the pad column)", "")
        return (out, tr) if return_trace else out
    i, is_sin = _pe_slot(int(dim), int(d_model), layout)
    tr = Trace()
    angle = tr.add(
        "angle",
        _scalar(pos, "pos") / b ** sp.Rational(2 * i, int(d_model)),
        f"θ = pos / {b}^(2i/d), i = {i}",
        r"\theta = pos / 10000^{2i/d}",
    )
    out = tr.add("output", sp.sin(angle) if is_sin else sp.cos(angle), "sin θ" if is_sin else "cos θ", "")
    return (out, tr) if return_trace else out


def sinusoidal_pe(n_positions: int, d_model: int, *, base: Any = 10000, layout: str = "interleaved",
                  return_trace: bool = False):
    """The (n_positions, d_model) sinusoidal table of :func:`pe_value`.

    Steps: angle ((n_positions, ⌈d/2⌉), one column per frequency i), output.
    """
    b = _check_pe(d_model, base)
    d = int(d_model)
    tr = Trace()
    if layout == "tensor2tensor":
        n = d // 2
        angle = tr.add("angle", sp.Matrix(int(n_positions), n,
                                          lambda p, i: sp.Integer(p) * b ** (-sp.Rational(i, max(n - 1, 1)))),
                       "θ[pos, i] = pos · base^(−i/(n−1))", r"\theta = pos \cdot 10000^{-i/(n-1)}")
        out = tr.add("output", sp.Matrix(int(n_positions), d, lambda p, j: _t2t_value(p, int(j), d, b)[1]),
                     "PE = [sin θ | cos θ | 0]", "")
        return (out, tr) if return_trace else out
    angle = tr.add(
        "angle",
        sp.Matrix(int(n_positions), (d + 1) // 2, lambda p, i: sp.Integer(p) / b ** sp.Rational(2 * i, d)),
        "θ[pos, i] = pos / base^(2i/d)",
        r"\theta = pos / 10000^{2i/d}",
    )
    slots = [_pe_slot(j, d, layout) for j in range(d)]
    out = tr.add(
        "output",
        sp.Matrix(int(n_positions), d, lambda p, j: (sp.sin if slots[j][1] else sp.cos)(angle[p, slots[j][0]])),
        "PE = sin θ (sine slots), cos θ (cosine slots)",
        "",
    )
    return (out, tr) if return_trace else out


def rope(x: Any, positions: Any = None, *, base: Any = 10000, pairing: str = "interleaved", return_trace: bool = False):
    """RoPE: rotate each pair (a, b) of row t by angle pos_t·θᵢ, θᵢ = base^(−2i/d), exactly.

    ``pairing="interleaved"`` (GPT-J, the RoFormer paper): pairs (x₀, x₁), (x₂, x₃), …;
    ``pairing="half"`` (GPT-NeoX, LLaMA): pairs (xᵢ, x_{i+d/2}). The rotation is
    (a, b) → (a cos − b sin, a sin + b cos); positions default to 0 … n − 1 (one number is
    accepted for one row). Steps: angle, cos, sin (each (n, d/2)), output.
    """
    X = matrix(x)
    d = X.cols
    if d % 2:
        raise SolverInputError(f"RoPE needs an even dimension, got d = {d}", param="x")
    if pairing not in ("interleaved", "half"):
        raise SolverInputError(f"pairing must be 'interleaved' or 'half', got {pairing!r}", param="pairing")
    if positions is None:
        positions = list(range(X.rows))
    if hasattr(positions, "tolist"):
        positions = positions.tolist()
    pos = [positions] if not isinstance(positions, (list, tuple)) else list(positions)
    if len(pos) != X.rows:
        raise SolverInputError(f"{len(pos)} positions for {X.rows} rows", param="positions")
    pos = [_scalar(p, "positions") for p in pos]
    b = _scalar(base, "base")
    if not bool(b > 1):
        raise SolverInputError(f"base must be > 1, got {b}", param="base")
    half = d // 2
    tr = Trace()
    angle = tr.add(
        "angle",
        sp.Matrix(X.rows, half, lambda t, i: pos[t] * b ** sp.Rational(-2 * i, d)),
        "φ = pos·θᵢ, θᵢ = base^(−2i/d)",
        r"\phi = pos\,\theta_i",
    )
    cos = tr.add("cos", angle.applyfunc(sp.cos), "cos φ", r"\cos\phi")
    sin = tr.add("sin", angle.applyfunc(sp.sin), "sin φ", r"\sin\phi")

    def pair(i: int) -> tuple[int, int]:
        return (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + half)

    out = sp.zeros(X.rows, d)
    for t in range(X.rows):
        for i in range(half):
            a, c = pair(i)
            out[t, a] = X[t, a] * cos[t, i] - X[t, c] * sin[t, i]
            out[t, c] = X[t, a] * sin[t, i] + X[t, c] * cos[t, i]
    tr.add("output", out, "(a, b) → (a cos φ − b sin φ, a sin φ + b cos φ)", "")
    return (out, tr) if return_trace else out


# --------------------------------------------------------------------------- evaluation


def _evalf(value: Any, digits: int) -> Any:
    if isinstance(value, list):
        return [_evalf(v, digits) for v in value]
    if isinstance(value, (sp.MatrixBase, sp.Basic)):
        return value.evalf(digits)
    return value


def evalf_trace(trace: Trace, digits: int = 15) -> Trace:
    """The same trace with every value evaluated to ``digits`` significant digits (SymPy Floats)."""
    out = Trace()
    for s in trace:
        out.add(s.name, _evalf(s.value, digits), s.formula, s.latex, s.note)
    return out


def to_floats(value: Any) -> Any:
    """An exact value (number, Matrix, or list of them) → float / nested lists of floats.

    Evaluates with 30 significant digits first, so each float is the double nearest to the
    exact value (±oo → ±inf).
    """
    if isinstance(value, list):
        return [to_floats(v) for v in value]
    if isinstance(value, sp.MatrixBase):
        return [[to_floats(v) for v in row] for row in value.tolist()]
    if isinstance(value, sp.Basic):
        if value == sp.oo:
            return float("inf")
        if value == -sp.oo:
            return float("-inf")
        return float(value.evalf(30))
    return float(value)
