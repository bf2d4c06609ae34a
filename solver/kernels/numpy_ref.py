"""Reference kernels in NumPy: the float path of every answer the quiz shows.

Semantics shared with :mod:`solver.kernels.torch_ref` (same names, signatures and results):

* arrays have shape ``(..., n, d)``: any leading batch (and head) axes, then tokens, then
  features. Integer input is computed in float64; float32 input stays float32.
* projections follow the textbook orientation ``Y = X W``: a weight matrix is
  ``d_in × d_out``. ``torch.nn.Linear`` stores the transpose (``out_features × in_features``)
  and computes ``x @ weight.T``, so pass ``linear.weight.T`` here.
* every kernel takes ``return_trace=False``; with ``True`` it returns ``(result, trace)``,
  a :class:`solver.trace.Trace` whose step names are listed in the kernel's docstring.
* masks: see :mod:`solver.kernels.masks` (boolean with a named convention, or additive float;
  fully masked rows raise unless ``empty_rows="zero"``).
* bad input raises :class:`solver.errors.SolverInputError` naming the argument.

This module imports neither torch nor sympy (the quiz path uses it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.errors import SolverInputError
from solver.kernels import masks
from solver.trace import Trace

# ----------------------------------------------------------------------------- helpers


def _float(x: Any, param: str) -> np.ndarray:
    """``x`` as a float array (float32/float64 kept, integers and booleans to float64)."""
    try:
        a = np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise SolverInputError(f"not a rectangular array of numbers ({e})", param=param) from None
    if a.dtype.kind == "f":
        return a
    if a.dtype.kind in "biu":
        return a.astype(np.float64)
    raise SolverInputError(f"expected numbers, got an array of {a.dtype}", param=param)


def _ndim_at_least(a: np.ndarray, k: int, param: str) -> None:
    if a.ndim < k:
        raise SolverInputError(f"expected at least {k} dimensions, got shape {a.shape}", param=param)


def _project(x: np.ndarray, w: Any, b: Any, param: str) -> np.ndarray:
    """x W + b, with W (d_in × d_out)."""
    w = _float(w, param)
    if w.ndim != 2 or w.shape[0] != x.shape[-1]:
        raise SolverInputError(
            f"expected a {x.shape[-1]} × d_out matrix (rows = input features), got shape {w.shape}", param=param
        )
    y = x @ w
    if b is not None:
        y = y + _vector(b, w.shape[1], "b" + param[1:])
    return y


def _vector(v: Any, d: int, param: str) -> np.ndarray:
    a = _float(v, param)
    if a.shape != (d,):
        raise SolverInputError(f"expected a vector of length {d}, got shape {a.shape}", param=param)
    return a


def _done(result: Any, tr: Trace, return_trace: bool) -> Any:
    return (result, tr) if return_trace else result


# ----------------------------------------------------------------------------- softmax


def softmax(x: Any, axis: int = -1, temperature: float = 1.0, return_trace: bool = False) -> Any:
    """softmax(x)ᵢ = exp(xᵢ/T − max x/T) / Σⱼ exp(xⱼ/T − max x/T).

    Steps: [scaled (x / T, only when T ≠ 1)], shifted, exp, sum, output. Subtracting the
    maximum changes nothing mathematically and keeps exp from overflowing. −∞ entries get
    weight 0; a slice that is −∞ everywhere, or any NaN/+∞, raises.
    """
    tr = Trace()
    x = _float(x, "x")
    if x.size == 0:
        raise SolverInputError("softmax of an empty array", param="x")
    if not temperature > 0:
        raise SolverInputError(f"temperature must be > 0, got {temperature}", param="temperature")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise SolverInputError("x contains NaN or +inf", param="x")
    if temperature != 1.0:
        x = tr.add("scaled", x / temperature, "x / T", r"x / T")
    mx = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(mx).any():
        raise SolverInputError("every entry of a slice is -inf: its softmax is undefined", param="x")
    shifted = tr.add("shifted", x - mx, "x − max(x)", r"x - \max(x)")
    e = tr.add("exp", np.exp(shifted), "exp(x − max x)", r"e^{x - \max x}")
    s = tr.add("sum", e.sum(axis=axis, keepdims=True), "Σ exp", r"\sum_j e^{x_j - \max x}")
    return _done(tr.add("output", e / s, "exp / Σ exp", r"\frac{e^{x_i}}{\sum_j e^{x_j}}"), tr, return_trace)


def log_softmax(x: Any, axis: int = -1, return_trace: bool = False) -> Any:
    """log softmax(x)ᵢ = (xᵢ − max x) − log Σⱼ exp(xⱼ − max x).

    Steps: shifted, logsumexp (of the shifted values), output.
    """
    tr = Trace()
    x = _float(x, "x")
    if x.size == 0:
        raise SolverInputError("log_softmax of an empty array", param="x")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise SolverInputError("x contains NaN or +inf", param="x")
    mx = np.max(x, axis=axis, keepdims=True)
    if np.isneginf(mx).any():
        raise SolverInputError("every entry of a slice is -inf: its log-softmax is undefined", param="x")
    shifted = tr.add("shifted", x - mx, "x − max(x)")
    lse = tr.add("logsumexp", np.log(np.exp(shifted).sum(axis=axis, keepdims=True)), "log Σ exp(x − max x)")
    return _done(tr.add("output", shifted - lse, "(x − max x) − logsumexp"), tr, return_trace)


# ----------------------------------------------------------------------------- attention


def attention(
    q: Any,
    k: Any,
    v: Any,
    mask: Any = None,
    *,
    mask_convention: str = masks.KEEP,
    causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    rng: np.random.Generator | None = None,
    empty_rows: str = "error",
    return_trace: bool = False,
) -> Any:
    """Attention(Q, K, V) = softmax(Q Kᵀ · scale + M) V, with scale = 1/√d_k by default.

    Shapes: q (..., n, d_k), k (..., m, d_k), v (..., m, d_v) → output (..., n, d_v) and
    weights (..., n, m). ``mask`` broadcasts against (..., n, m): boolean in
    ``mask_convention`` ("keep": True = may attend; "block": True = blocked) or an additive
    float mask; ``causal`` adds the bottom-right causal mask (see :mod:`solver.kernels.masks`).
    ``dropout_p`` > 0 zeroes weights with probability p and rescales the rest by 1/(1 − p)
    (inverted dropout, drawn from ``rng``); the returned weights are those before dropout.

    Steps: scores (Q Kᵀ), scaled (× scale), [masked (scaled + M), only with a mask or
    causal], weights (softmax over keys), [dropout, only with dropout_p > 0], output.
    """
    tr = Trace()
    q, k, v = _float(q, "q"), _float(k, "k"), _float(v, "v")
    for a, name in ((q, "q"), (k, "k"), (v, "v")):
        _ndim_at_least(a, 2, name)
    if k.shape[-1] != q.shape[-1]:
        raise SolverInputError(f"keys have d_k = {k.shape[-1]} but queries have {q.shape[-1]}", param="k")
    if v.shape[-2] != k.shape[-2]:
        raise SolverInputError(f"{v.shape[-2]} values for {k.shape[-2]} keys", param="v")
    if not 0.0 <= dropout_p < 1.0:
        raise SolverInputError(f"dropout_p must lie in [0, 1), got {dropout_p}", param="dropout_p")
    n, m, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    default_scale = scale is None
    scale = 1.0 / math.sqrt(d_k) if default_scale else float(scale)

    try:
        scores = tr.add("scores", q @ np.swapaxes(k, -1, -2), "S = Q·Kᵀ", r"S = QK^\top")
    except ValueError as e:
        raise SolverInputError(f"batch shapes of q and k do not broadcast ({e})", param="k") from None
    if default_scale:
        formula, latex = f"S' = S/√dₖ = S · {scale:.6g}", r"S' = S / \sqrt{d_k}"
    else:
        formula, latex = f"S' = S · {scale:.6g} (the given scale)", rf"S' = {scale:.6g}\,S"
    scaled = tr.add("scaled", scores * np.asarray(scale, dtype=scores.dtype), formula, latex)
    bias = masks.attention_bias(mask, mask_convention, causal, n, m, like=scaled)
    masked = scaled
    if bias is not None:
        try:
            masked = scaled + bias
        except ValueError:
            raise SolverInputError(
                f"mask of shape {np.shape(bias)} does not broadcast against scores of shape {scaled.shape}",
                param="mask",
            ) from None
        tr.add("masked", masked, "S̃ = S' + M", r"\tilde S = S' + M")
    empty = masks.check_empty_rows(masked, empty_rows)
    if empty.any():
        weights = np.where(empty[..., None], 0.0, softmax(np.where(empty[..., None], 0.0, masked)))
        weights = weights.astype(masked.dtype)
    else:
        weights = softmax(masked)
    arg, arg_tex = ("S̃", r"\tilde S") if bias is not None else ("S'", "S'")
    tr.add("weights", weights, f"A = softmax({arg}) over keys", rf"A = \operatorname{{softmax}}({arg_tex})")
    used = weights
    if dropout_p > 0.0:
        rng = np.random.default_rng() if rng is None else rng
        keep = rng.random(weights.shape) >= dropout_p
        used = tr.add("dropout", weights * keep / (1.0 - dropout_p), "A ⊙ keep / (1 − p)")
    try:
        out = tr.add("output", used @ v, "O = A·V", r"O = AV")
    except ValueError as e:
        raise SolverInputError(f"batch shapes of the weights and v do not broadcast ({e})", param="v") from None
    return _done((out, weights), tr, return_trace)


def _split_heads(t: np.ndarray, heads: int) -> np.ndarray:
    """(..., n, heads·d) → (..., heads, n, d)."""
    return np.moveaxis(t.reshape(*t.shape[:-1], heads, t.shape[-1] // heads), -2, -3)


def multi_head_attention(
    x: Any,
    wq: Any,
    wk: Any,
    wv: Any,
    wo: Any = None,
    *,
    n_heads: int,
    n_kv_heads: int | None = None,
    bq: Any = None,
    bk: Any = None,
    bv: Any = None,
    bo: Any = None,
    kv: Any = None,
    mask: Any = None,
    mask_convention: str = masks.KEEP,
    causal: bool = False,
    scale: float | None = None,
    empty_rows: str = "error",
    return_trace: bool = False,
) -> Any:
    """MultiHead(X) = Concat(head₁, …, head_h) W_O, headᵢ = Attention(X W_Qⁱ, Z W_Kⁱ, Z W_Vⁱ).

    ``Z`` is ``kv`` (cross-attention: keys and values from another sequence) or ``x``.
    Weights are textbook-oriented, ``d_in × d_out`` (torch ``nn.Linear.weight`` is the
    transpose): wq is d_model × (h·d_head), wk and wv are d_kv × (h_kv·d_head) and
    d_kv × (h_kv·d_v), wo is (h·d_v) × d_out. Head i owns columns i·d_head … (i+1)·d_head − 1.
    With ``n_kv_heads`` = h_kv < h (h_kv dividing h; 1 is multi-query, otherwise grouped-query
    attention) the K/V heads are shared: query head i uses K/V head ⌊i / (h / h_kv)⌋, i.e.
    each K/V head is repeated h / h_kv times in a row (LLaMA's ``repeat_kv``).
    A mask without a head axis (ndim ≤ x.ndim) applies to every head; one with ndim =
    x.ndim + 1 has its head axis at −3. Without ``wo`` the output is the concatenation
    (plus ``bo`` if given).

    Returns (output (..., n, d_out), weights (..., h, n, m)).
    Steps: q, k, v (the projections, heads side by side), scores, scaled, [masked], weights
    (each with a head axis: (..., h, n, m)), concat (the merged head outputs), output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 2, "x")
    z = x if kv is None else _float(kv, "kv")
    _ndim_at_least(z, 2, "kv")
    h = int(n_heads)
    h_kv = h if n_kv_heads is None else int(n_kv_heads)
    if h < 1:
        raise SolverInputError(f"n_heads must be ≥ 1, got {n_heads}", param="n_heads")
    if h_kv < 1 or h % h_kv:
        raise SolverInputError(f"n_kv_heads must divide n_heads = {h}, got {n_kv_heads}", param="n_kv_heads")
    wq_a = _float(wq, "wq")
    if wq_a.ndim != 2 or wq_a.shape[1] % h:
        raise SolverInputError(f"wq has shape {wq_a.shape}: its columns must split into {h} heads", param="wq")
    d_head = wq_a.shape[1] // h
    q = tr.add("q", _project(x, wq_a, bq, "wq"), "Q = X·W_Q (+ b_Q)", r"Q = XW_Q")
    k = tr.add("k", _project(z, wk, bk, "wk"), "K = Z·W_K (+ b_K)", r"K = ZW_K")
    v = tr.add("v", _project(z, wv, bv, "wv"), "V = Z·W_V (+ b_V)", r"V = ZW_V")
    if k.shape[-1] != h_kv * d_head:
        raise SolverInputError(
            f"wk must have {h_kv}·{d_head} = {h_kv * d_head} columns ({h_kv} K/V heads of d_head = {d_head}), "
            f"got {k.shape[-1]}",
            param="wk",
        )
    if v.shape[-1] % h_kv:
        raise SolverInputError(f"wv's {v.shape[-1]} columns do not split into {h_kv} heads", param="wv")
    qh = _split_heads(q, h)
    group = h // h_kv
    kh = np.repeat(_split_heads(k, h_kv), group, axis=-3)
    vh = np.repeat(_split_heads(v, h_kv), group, axis=-3)
    if mask is not None:
        mask = np.asarray(mask)
        _ndim_at_least(mask, 2, "mask")
        if mask.ndim <= x.ndim:
            mask = mask[..., None, :, :]
    (heads, weights), sub = attention(
        qh, kh, vh, mask, mask_convention=mask_convention, causal=causal, scale=scale,
        empty_rows=empty_rows, return_trace=True,
    )
    for step in sub:
        if step.name in ("scores", "scaled", "masked", "weights"):
            tr.add(step.name, step.value, step.formula + " (per head)", step.latex)
    merged = np.moveaxis(heads, -3, -2)
    concat = tr.add("concat", merged.reshape(*merged.shape[:-2], -1), "Concat(head₁, …, head_h)")
    if wo is not None:
        out = _project(concat, wo, bo, "wo")
    else:
        out = concat if bo is None else concat + _vector(bo, concat.shape[-1], "bo")
    tr.add("output", out, "Concat(heads)·W_O (+ b_O)", r"\operatorname{Concat}(\text{heads})W_O")
    return _done((out, weights), tr, return_trace)


# ----------------------------------------------------------------------------- normalisation


def _finite(x: np.ndarray, param: str) -> None:
    if not np.all(np.isfinite(x)):
        raise SolverInputError("every entry must be a finite number (no NaN or infinity)", param=param)


def _scaled_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, x / s)`` with ``s = max |xᵢ|`` per row (1 for a row of zeros): x / s lies in [−1, 1]."""
    scale = np.abs(x).max(axis=-1, keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    return scale, x / scale


def layer_norm(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5, return_trace: bool = False) -> Any:
    """LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β over the last axis, σ² = mean((x − μ)²).

    The variance is the biased one (divide by d, not d − 1), as ``torch.nn.LayerNorm``.
    γ defaults to ones and β to zeros. Steps: mean, variance (shape (...,), one per row),
    normalised, output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    d = x.shape[-1]
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    _finite(x, "x")
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    if np.all(np.isfinite(mean)) and np.all(np.isfinite(var)):
        if np.any(var + eps == 0):
            raise SolverInputError("a row is constant and eps = 0: variance + eps is 0", param="eps")
        tr.add("mean", mean[..., 0], "μ = (1/d) Σ xᵢ", r"\mu = \frac{1}{d}\sum_i x_i")
        tr.add("variance", var[..., 0], "σ² = (1/d) Σ (xᵢ − μ)²", r"\sigma^2 = \frac{1}{d}\sum_i (x_i-\mu)^2")
        normalised = tr.add(
            "normalised", (x - mean) / np.sqrt(var + eps), "x̂ = (x − μ)/√(σ² + ε)",
            r"\hat x = \frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}"
        )
    else:  # σ² (or Σ xᵢ) is beyond the float range: the same x̂, from x / s with s = max |xᵢ|
        scale, xs = _scaled_rows(x)
        mean_s = xs.mean(axis=-1, keepdims=True)
        var_s = ((xs - mean_s) ** 2).mean(axis=-1, keepdims=True)
        with np.errstate(over="ignore", under="ignore"):
            eps_s = eps / scale**2  # ε on the scale of x / s (0 when s² overflows: ε is negligible there)
        tr.add("scale", scale[..., 0], "s = max |xᵢ| (σ² of x itself is beyond the float range)")
        tr.add("mean", mean_s[..., 0] * scale[..., 0], "μ = s · (1/d) Σ xᵢ/s", r"\mu = \frac{1}{d}\sum_i x_i")
        tr.add("scaled_variance", var_s[..., 0], "σ²/s² = (1/d) Σ (xᵢ/s − μ/s)²",
               r"\sigma^2/s^2 = \frac{1}{d}\sum_i (x_i/s-\mu/s)^2")
        if eps == 0 and np.any(var_s == 0):
            raise SolverInputError("a row is constant and eps = 0: variance + eps is 0", param="eps")
        den = np.sqrt(var_s + eps_s)  # 0 only for a constant row whose ε/s² underflowed: x̂ = 0/√ε = 0
        normalised = tr.add(
            "normalised", np.where(den > 0, (xs - mean_s) / np.where(den > 0, den, 1.0), 0.0),
            "x̂ = (x/s − μ/s)/√(σ²/s² + ε/s²)",
            r"\hat x = \frac{x/s-\mu/s}{\sqrt{\sigma^2/s^2+\epsilon/s^2}}"
        )
    out = normalised
    if gamma is not None:
        out = out * _vector(gamma, d, "gamma")
    if beta is not None:
        out = out + _vector(beta, d, "beta")
    return _done(tr.add("output", out, "y = γ ⊙ x̂ + β", r"y = \gamma \odot \hat x + \beta"), tr, return_trace)


def rms_norm(x: Any, gamma: Any = None, eps: float = 1e-6, return_trace: bool = False) -> Any:
    """RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε) over the last axis (no centring, no β).

    Steps: mean_square (shape (...,)), rms (√(mean_square + ε)), normalised, output.
    ``torch.nn.RMSNorm`` defaults eps to the dtype's machine epsilon; pass it explicitly.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    _finite(x, "x")
    with np.errstate(over="ignore", under="ignore"):
        ms = (x**2).mean(axis=-1, keepdims=True)
    if np.all(np.isfinite(ms)):
        if np.any(ms + eps == 0):
            raise SolverInputError("a row is all zeros and eps = 0: the RMS is 0", param="eps")
        tr.add("mean_square", ms[..., 0], "(1/d) Σ xᵢ²", r"\frac{1}{d}\sum_i x_i^2")
        rms = np.sqrt(ms + eps)
        tr.add("rms", rms[..., 0], "√(mean_square + ε)", r"\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}")
        normalised = tr.add("normalised", x / rms, "x / rms", r"x / \mathrm{rms}")
    else:  # Σ xᵢ² is beyond the float range: the same x / rms, from x / s with s = max |xᵢ|
        scale, xs = _scaled_rows(x)
        ms_s = (xs**2).mean(axis=-1, keepdims=True)
        with np.errstate(over="ignore", under="ignore"):
            eps_s = eps / scale**2
        tr.add("scale", scale[..., 0], "s = max |xᵢ| (Σ xᵢ² itself is beyond the float range)")
        tr.add("scaled_mean_square", ms_s[..., 0], "(1/d) Σ (xᵢ/s)²", r"\frac{1}{d}\sum_i (x_i/s)^2")
        rms_s = np.sqrt(ms_s + eps_s)
        with np.errstate(over="ignore"):
            tr.add("rms", rms_s[..., 0] * scale[..., 0], "s · √(mean_square/s² + ε/s²)",
                   r"\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}")
        normalised = tr.add("normalised", xs / rms_s, "(x/s) / (rms/s)", r"x / \mathrm{rms}")
    out = normalised if gamma is None else normalised * _vector(gamma, x.shape[-1], "gamma")
    return _done(tr.add("output", out, "γ ⊙ x / rms", r"\gamma \odot x / \mathrm{rms}"), tr, return_trace)


def batch_norm(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5, return_trace: bool = False) -> Any:
    """BN(x) = γ ⊙ (x − μ_B) / √(σ²_B + ε) + β, statistics per feature over the batch.

    Training-mode statistics: each feature (last axis) is normalised over every other axis
    (the batch, and the tokens for (B, n, d) input), with the biased variance as PyTorch
    uses for normalising. Contrast: LayerNorm normalises each token over its features.
    Steps: mean, variance (shape (d,)), normalised, output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 2, "x")
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    axes = tuple(range(x.ndim - 1))
    mean = x.mean(axis=axes)
    var = ((x - mean) ** 2).mean(axis=axes)
    if np.any(var + eps == 0):
        raise SolverInputError("a feature is constant over the batch and eps = 0", param="eps")
    tr.add("mean", mean, "μ_B = mean over the batch", r"\mu_B")
    tr.add("variance", var, "σ²_B = mean over the batch of (x − μ_B)²", r"\sigma_B^2")
    normalised = tr.add("normalised", (x - mean) / np.sqrt(var + eps), "(x − μ_B)/√(σ²_B + ε)")
    out = normalised
    if gamma is not None:
        out = out * _vector(gamma, x.shape[-1], "gamma")
    if beta is not None:
        out = out + _vector(beta, x.shape[-1], "beta")
    return _done(tr.add("output", out, "γ ⊙ x̂ + β"), tr, return_trace)


# ----------------------------------------------------------------------------- positions

#: interleaved: the paper's sin, cos, sin, cos… at base^(−2i/d); concat: the same frequencies, sines
#: first; tensor2tensor: d/2 timescales spaced geometrically from 1 to 1/base (inverse timescale
#: base^(−i/(d/2 − 1))), sines then cosines: tensor2tensor's get_timing_signal_1d, which The
#: Illustrated Transformer's figures use.
LAYOUTS = ("interleaved", "concat", "tensor2tensor")
PAIRINGS = ("interleaved", "half")


def t2t_inverse_timescales(d_model: int, base: float = 10000.0) -> np.ndarray:
    """tensor2tensor's n = ⌊d/2⌋ inverse timescales base^(−i/max(n − 1, 1)): 1 down to 1/base."""
    n = int(d_model) // 2
    return float(base) ** (-np.arange(n, dtype=np.float64) / max(n - 1, 1))


def _check_pe_args(d_model: int, base: float, layout: str) -> None:
    if int(d_model) != d_model or d_model < 1:
        raise SolverInputError(f"d_model must be a positive integer, got {d_model}", param="d_model")
    if not base > 1:
        raise SolverInputError(f"base must be > 1, got {base}", param="base")
    if layout not in LAYOUTS:
        raise SolverInputError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}", param="layout")


def sinusoidal_pe(
    n_positions: int, d_model: int, *, base: float = 10000.0, layout: str = "interleaved", return_trace: bool = False
) -> Any:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)).

    ``layout="interleaved"`` is the paper's (sin, cos, sin, cos, …);
    ``layout="concat"`` puts all ⌈d/2⌉ sines first, then the ⌊d/2⌋ cosines, at the paper's
    frequencies base^(−2i/d). ``layout="tensor2tensor"`` is tensor2tensor's own table (and The
    Illustrated Transformer's): n = ⌊d/2⌋ inverse timescales base^(−i/(n − 1)), from 1 down to
    1/base, sines block then cosines block, and a zero column last when d is odd.
    Odd d_model (paper frequencies): there are ⌈d/2⌉ frequencies; the last one, i = (d − 1)/2,
    contributes only its sine (the last column when interleaved, the last sine when concatenated).
    Steps: angle ((n_positions, ⌈d/2⌉): pos / base^(2i/d)), output ((n_positions, d)).
    """
    _check_pe_args(d_model, base, layout)
    tr = Trace()
    d = int(d_model)
    pos = np.arange(int(n_positions), dtype=np.float64)
    if layout == "tensor2tensor":
        inv = t2t_inverse_timescales(d, base)
        angle = tr.add("angle", pos[:, None] * inv[None, :], "pos · base^(−i/(n−1))", r"pos \cdot 10000^{-i/(n-1)}")
        out = np.concatenate([np.sin(angle), np.cos(angle), np.zeros((len(pos), d % 2))], axis=1)
        return _done(tr.add("output", out, "[sin | cos] of the angle (+ a zero column for odd d)"), tr,
                     return_trace)
    i = np.arange((d + 1) // 2, dtype=np.float64)
    angle = tr.add("angle", pos[:, None] / base ** (2 * i / d), "pos / base^(2i/d)", r"\frac{pos}{10000^{2i/d}}")
    sines, cosines = np.sin(angle), np.cos(angle[:, : d // 2])
    if layout == "interleaved":
        out = np.empty((len(pos), d))
        out[:, 0::2] = sines
        out[:, 1::2] = cosines
    else:
        out = np.concatenate([sines, cosines], axis=1)
    return _done(tr.add("output", out, "sin / cos of the angle"), tr, return_trace)


def pe_value(
    pos: float, dim: int, d_model: int, *, base: float = 10000.0, layout: str = "interleaved", return_trace: bool = False
) -> Any:
    """One entry PE[pos, dim] of :func:`sinusoidal_pe`: sin or cos of pos / base^(2i/d).

    Interleaved: i = ⌊dim/2⌋, sin for even dim, cos for odd. Concat: dim < ⌈d/2⌉ is the sine
    of i = dim, otherwise the cosine of i = dim − ⌈d/2⌉. tensor2tensor: n = ⌊d/2⌋, dim < n is
    sin(pos · base^(−dim/(n−1))), then the cosines, and 0 in the last column of an odd d.
    Steps: angle, output (floats).
    """
    _check_pe_args(d_model, base, layout)
    d = int(d_model)
    if int(dim) != dim or not 0 <= dim < d:
        raise SolverInputError(f"dim must be an integer in 0..{d - 1}, got {dim}", param="dim")
    dim = int(dim)
    if layout == "tensor2tensor":
        n = d // 2
        tr = Trace()
        if dim >= 2 * n:
            tr.add("angle", 0.0, "none: the zero pad column of an odd d_model")
            return _done(tr.add("output", 0.0, "the zero column of an odd d_model"), tr, return_trace)
        i, fn = (dim, "sin") if dim < n else (dim - n, "cos")
        angle = tr.add("angle", float(pos) * float(t2t_inverse_timescales(d, base)[i]),
                       f"{pos} · {base:g}^(−{i}/{max(n - 1, 1)})")
        value = math.sin(angle) if fn == "sin" else math.cos(angle)
        return _done(tr.add("output", value, f"{fn}(angle)"), tr, return_trace)
    if layout == "interleaved":
        i, fn = dim // 2, ("sin" if dim % 2 == 0 else "cos")
    else:
        n_sin = (d + 1) // 2
        i, fn = (dim, "sin") if dim < n_sin else (dim - n_sin, "cos")
    tr = Trace()
    angle = tr.add("angle", float(pos) / base ** (2 * i / d), f"{pos} / {base:g}^({2 * i}/{d})")
    value = math.sin(angle) if fn == "sin" else math.cos(angle)
    return _done(tr.add("output", value, f"{fn}(angle)"), tr, return_trace)


def learned_pe(table: Any, positions: Any, return_trace: bool = False) -> Any:
    """PE = table[positions]: a learned position embedding is a lookup in a trained table.

    ``table`` is (max_positions, d); steps: output.
    """
    table = _float(table, "table")
    if table.ndim != 2:
        raise SolverInputError(f"table must be (max_positions, d), got shape {table.shape}", param="table")
    p = np.asarray(positions)
    if p.dtype.kind not in "iu" or np.any(p < 0) or np.any(p >= table.shape[0]):
        raise SolverInputError(f"positions must be integers in 0..{table.shape[0] - 1}", param="positions")
    tr = Trace()
    return _done(tr.add("output", table[p], "table[pos]"), tr, return_trace)


def rope(
    x: Any,
    positions: Any = None,
    *,
    base: float = 10000.0,
    pairing: str = "interleaved",
    return_trace: bool = False,
) -> Any:
    """RoPE: rotate each pair (a, b) of x at position p by the angle p·θᵢ, θᵢ = base^(−2i/d).

    (a, b) ↦ (a cos pθᵢ − b sin pθᵢ, a sin pθᵢ + b cos pθᵢ), i = 0 … d/2 − 1.
    ``pairing="interleaved"`` pairs dims (2i, 2i+1) (GPT-J, the RoFormer paper);
    ``pairing="half"`` pairs (i, i + d/2) (GPT-NeoX, LLaMA's ``rotate_half``). x is
    (..., n, d) with d even; positions (n,) (default 0 … n − 1).
    Steps: angle ((n, d/2): p·θᵢ), cos, sin, output.
    """
    x = _float(x, "x")
    _ndim_at_least(x, 2, "x")
    d = x.shape[-1]
    if d % 2:
        raise SolverInputError(f"RoPE needs an even head dimension, got d = {d}", param="x")
    if pairing not in PAIRINGS:
        raise SolverInputError(f"pairing must be 'interleaved' or 'half', got {pairing!r}", param="pairing")
    if not base > 1:
        raise SolverInputError(f"base must be > 1, got {base}", param="base")
    n = x.shape[-2]
    p = np.arange(n, dtype=np.float64) if positions is None else _float(positions, "positions")
    if p.shape[-1:] != (n,):
        raise SolverInputError(f"expected {n} positions, got shape {p.shape}", param="positions")
    tr = Trace()
    theta = base ** (-2 * np.arange(d // 2, dtype=np.float64) / d)
    angle = tr.add("angle", p[..., None] * theta, "p·θᵢ, θᵢ = base^(−2i/d)", r"p\,\theta_i")
    cos = tr.add("cos", np.cos(angle).astype(x.dtype), "cos(p·θᵢ)")
    sin = tr.add("sin", np.sin(angle).astype(x.dtype), "sin(p·θᵢ)")
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., : d // 2], x[..., d // 2 :]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if pairing == "interleaved":
        out = np.stack([ra, rb], axis=-1).reshape(ra.shape[:-1] + (d,))
    else:
        out = np.concatenate([ra, rb], axis=-1)
    return _done(tr.add("output", out, "(a cos − b sin, a sin + b cos)"), tr, return_trace)


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi head slopes: for h a power of two, mₖ = 2^(−8k/h), k = 1 … h.

    The sequence is geometric, starting at and with ratio 2^(−8/h): for h = 8 the ratio is
    2^(−1), so the slopes are 1/2, 1/4, …, 1/256; for h = 16 they are 2^(−1/2), 2^(−1), …,
    2^(−8). For h not a power of two (Press et al.'s rule): take the slopes of the largest
    power of two p < h, then the odd-numbered ones (1st, 3rd, …) of the 2p-head sequence
    until there are h (those interleave between the first p slopes).
    """
    h = int(n_heads)
    if h < 1 or h != n_heads:
        raise SolverInputError(f"n_heads must be a positive integer, got {n_heads}", param="n_heads")

    def power_of_two(p: int) -> list[float]:
        return [2.0 ** (-8.0 * k / p) for k in range(1, p + 1)]

    if h & (h - 1) == 0:
        return np.array(power_of_two(h))
    p = 2 ** int(math.floor(math.log2(h)))
    return np.array(power_of_two(p) + power_of_two(2 * p)[0::2][: h - p])


def alibi_bias(n_heads: int, n: int, m: int | None = None, *, causal: bool = True) -> np.ndarray:
    """ALiBi additive bias (h, n, m): B[h, i, j] = −m_h · (i − j) for keys j ≤ i, −∞ after i.

    Added to the scaled scores in place of position embeddings. ``causal=True`` (the paper's
    decoder form) makes future keys −∞, so the bias is also the causal mask; with ``m > n``
    keys, query i sits at position i + m − n (bottom-right, as :func:`solver.kernels.masks.causal_mask`).
    ``causal=False`` gives the symmetric −m_h·|i − j| used by bidirectional variants.
    """
    m = n if m is None else m
    slopes = alibi_slopes(n_heads)
    dist = (np.arange(n)[:, None] + (m - n)) - np.arange(m)[None, :]
    if causal:
        bias = np.where(dist >= 0, -slopes[:, None, None] * dist, -np.inf)
    else:
        bias = -slopes[:, None, None] * np.abs(dist)
    return bias


# ----------------------------------------------------------------------------- feed-forward

ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


def relu(x: Any, return_trace: bool = False) -> Any:
    """ReLU(x) = max(0, x). Steps: output."""
    tr = Trace()
    x = _float(x, "x")
    return _done(tr.add("output", np.maximum(x, 0).astype(x.dtype), "max(0, x)"), tr, return_trace)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: Any, approximate: str = "none", return_trace: bool = False) -> Any:
    """GELU(x) = x·Φ(x) = x/2·(1 + erf(x/√2)); tanh form x/2·(1 + tanh(√(2/π)(x + 0.044715x³))).

    ``approximate`` is "none" (exact) or "tanh", as in ``torch.nn.functional.gelu``.
    Steps: output.
    """
    tr = Trace()
    x = _float(x, "x")
    if approximate == "none":
        out = x * 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    elif approximate == "tanh":
        out = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    else:
        raise SolverInputError(f"approximate must be 'none' or 'tanh', got {approximate!r}", param="approximate")
    return _done(tr.add("output", np.asarray(out).astype(x.dtype), "GELU(x)"), tr, return_trace)


def _silu(x: np.ndarray) -> np.ndarray:
    """SiLU(x) = x·σ(x), σ(x) = 1/(1 + e^(−x)) computed as exp(−log(1 + e^(−x)))."""
    return (x * np.exp(-np.logaddexp(0.0, -x))).astype(x.dtype)


def ffn(
    x: Any, w1: Any, b1: Any, w2: Any, b2: Any, activation: str = "relu", return_trace: bool = False
) -> Any:
    """FFN(x) = act(x W₁ + b₁) W₂ + b₂, act ∈ {relu, gelu (exact), gelu_tanh}.

    W₁ is d_model × d_ff, W₂ is d_ff × d_model; biases may be None.
    Steps: hidden (x W₁ + b₁), activated, output.
    """
    if activation not in ACTIVATIONS:
        raise SolverInputError(f"activation must be one of {ACTIVATIONS}, got {activation!r}", param="activation")
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    hidden = tr.add("hidden", _project(x, w1, b1, "w1"), "x W₁ + b₁")
    if activation == "relu":
        act = relu(hidden)
    else:
        act = gelu(hidden, approximate="none" if activation == "gelu" else "tanh")
    act = tr.add("activated", act, f"{activation}(hidden)")
    return _done(tr.add("output", _project(act, w2, b2, "w2"), "act · W₂ + b₂"), tr, return_trace)


def swiglu(x: Any, w_gate: Any, w_up: Any, w_down: Any, return_trace: bool = False) -> Any:
    """SwiGLU(x) = (SiLU(x W_gate) ⊙ x W_up) W_down, SiLU(z) = z·σ(z); no biases.

    W_gate, W_up are d_model × d_ff; W_down is d_ff × d_model.
    Steps: gate (x W_gate), silu, up (x W_up), hidden (silu ⊙ up), output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    gate = tr.add("gate", _project(x, w_gate, None, "w_gate"), "x W_gate")
    s = tr.add("silu", _silu(gate), "SiLU(gate) = gate·σ(gate)")
    up = tr.add("up", _project(x, w_up, None, "w_up"), "x W_up")
    if up.shape != gate.shape:
        raise SolverInputError(f"w_up gives shape {up.shape} but w_gate gives {gate.shape}", param="w_up")
    hidden = tr.add("hidden", s * up, "silu ⊙ up")
    return _done(tr.add("output", _project(hidden, w_down, None, "w_down"), "hidden · W_down"), tr, return_trace)
