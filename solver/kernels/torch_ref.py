"""Reference kernels in Torch: the same names, signatures and semantics as solver.kernels.numpy_ref.

Everything documented in :mod:`solver.kernels.numpy_ref` holds here, with ``torch.Tensor`` in place of
NumPy arrays (NumPy arrays and nested lists are accepted and converted; integer input is
computed in float64, float tensors keep their dtype and device). The kernels are written
from their formulas with elementary ops; they deliberately do not call
``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``, ``nn.LayerNorm``,
``F.softmax`` or ``F.gelu``, which the tests use as independent oracles.
Masks are converted by :mod:`solver.kernels.masks`, the one place that knows the conventions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from solver.errors import SolverInputError
from solver.kernels import masks
from solver.kernels.numpy_ref import ACTIVATIONS, LAYOUTS, PAIRINGS
from solver.kernels.numpy_ref import alibi_slopes as _np_alibi_slopes
from solver.kernels.numpy_ref import pe_value as pe_value  # a scalar: the same code serves both
from solver.trace import Trace

# ----------------------------------------------------------------------------- helpers


def _float(x: Any, param: str) -> torch.Tensor:
    """``x`` as a float tensor (float dtypes kept, integers and booleans to float64)."""
    if not isinstance(x, torch.Tensor):
        try:
            a = np.asarray(x)
        except ValueError as e:
            raise SolverInputError(f"not a rectangular array of numbers ({e})", param=param) from None
        if a.dtype.kind not in "biuf":
            raise SolverInputError(f"expected numbers, got an array of {a.dtype}", param=param)
        x = torch.from_numpy(np.ascontiguousarray(a))
    if x.dtype.is_floating_point:
        return x
    if x.dtype.is_complex:
        raise SolverInputError("expected real numbers", param=param)
    return x.to(torch.float64)


def _ndim_at_least(a: torch.Tensor, k: int, param: str) -> None:
    if a.ndim < k:
        raise SolverInputError(f"expected at least {k} dimensions, got shape {tuple(a.shape)}", param=param)


def _vector(v: Any, d: int, param: str, like: torch.Tensor) -> torch.Tensor:
    a = _float(v, param).to(device=like.device)
    if tuple(a.shape) != (d,):
        raise SolverInputError(f"expected a vector of length {d}, got shape {tuple(a.shape)}", param=param)
    return a


def _project(x: torch.Tensor, w: Any, b: Any, param: str) -> torch.Tensor:
    """x W + b, with W (d_in × d_out)."""
    w = _float(w, param).to(device=x.device)
    if w.ndim != 2 or w.shape[0] != x.shape[-1]:
        raise SolverInputError(
            f"expected a {x.shape[-1]} × d_out matrix (rows = input features), got shape {tuple(w.shape)}",
            param=param,
        )
    xs, w = _same_dtype(x, w)
    y = xs @ w
    if b is not None:
        y = y + _vector(b, w.shape[1], "b" + param[1:], y)
    return y


def _done(result: Any, tr: Trace, return_trace: bool) -> Any:
    return (result, tr) if return_trace else result


def _same_dtype(*ts: torch.Tensor) -> list[torch.Tensor]:
    """Promote to a common dtype, as NumPy would (torch matmul refuses mixed dtypes)."""
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = torch.promote_types(dt, t.dtype)
    return [t.to(dt) for t in ts]


# ----------------------------------------------------------------------------- softmax


def softmax(x: Any, axis: int = -1, temperature: float = 1.0, return_trace: bool = False) -> Any:
    """softmax(x)ᵢ = exp(xᵢ/T − max x/T) / Σⱼ exp(xⱼ/T − max x/T).

    Steps: [scaled (only when T ≠ 1)], shifted, exp, sum, output.
    """
    tr = Trace()
    x = _float(x, "x")
    if x.numel() == 0:
        raise SolverInputError("softmax of an empty array", param="x")
    if not temperature > 0:
        raise SolverInputError(f"temperature must be > 0, got {temperature}", param="temperature")
    if bool(torch.isnan(x).any()) or bool(torch.isposinf(x).any()):
        raise SolverInputError("x contains NaN or +inf", param="x")
    if temperature != 1.0:
        x = tr.add("scaled", x / temperature, "x / T", r"x / T")
    mx = x.amax(dim=axis, keepdim=True)
    if bool(torch.isneginf(mx).any()):
        raise SolverInputError("every entry of a slice is -inf: its softmax is undefined", param="x")
    shifted = tr.add("shifted", x - mx, "x − max(x)", r"x - \max(x)")
    e = tr.add("exp", torch.exp(shifted), "exp(x − max x)", r"e^{x - \max x}")
    s = tr.add("sum", e.sum(dim=axis, keepdim=True), "Σ exp", r"\sum_j e^{x_j - \max x}")
    return _done(tr.add("output", e / s, "exp / Σ exp", r"\frac{e^{x_i}}{\sum_j e^{x_j}}"), tr, return_trace)


def log_softmax(x: Any, axis: int = -1, return_trace: bool = False) -> Any:
    """log softmax(x)ᵢ = (xᵢ − max x) − log Σⱼ exp(xⱼ − max x). Steps: shifted, logsumexp, output."""
    tr = Trace()
    x = _float(x, "x")
    if x.numel() == 0:
        raise SolverInputError("log_softmax of an empty array", param="x")
    if bool(torch.isnan(x).any()) or bool(torch.isposinf(x).any()):
        raise SolverInputError("x contains NaN or +inf", param="x")
    mx = x.amax(dim=axis, keepdim=True)
    if bool(torch.isneginf(mx).any()):
        raise SolverInputError("every entry of a slice is -inf: its log-softmax is undefined", param="x")
    shifted = tr.add("shifted", x - mx, "x − max(x)")
    lse = tr.add("logsumexp", torch.log(torch.exp(shifted).sum(dim=axis, keepdim=True)), "log Σ exp(x − max x)")
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
    rng: torch.Generator | None = None,
    empty_rows: str = "error",
    return_trace: bool = False,
) -> Any:
    """Attention(Q, K, V) = softmax(Q Kᵀ · scale + M) V, with scale = 1/√d_k by default.

    See :func:`solver.kernels.numpy_ref.attention`; ``rng`` is a ``torch.Generator``.
    Steps: scores, scaled, [masked], weights, [dropout], output.
    """
    tr = Trace()
    q, k, v = _same_dtype(_float(q, "q"), _float(k, "k"), _float(v, "v"))
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
        scores = tr.add("scores", q @ k.transpose(-1, -2), "S = Q·Kᵀ", r"S = QK^\top")
    except RuntimeError as e:
        raise SolverInputError(f"batch shapes of q and k do not broadcast ({e})", param="k") from None
    if default_scale:
        formula, latex = f"S' = S/√dₖ = S · {scale:.6g}", r"S' = S / \sqrt{d_k}"
    else:
        formula, latex = f"S' = S · {scale:.6g} (the given scale)", rf"S' = {scale:.6g}\,S"
    scaled = tr.add("scaled", scores * scale, formula, latex)
    bias = masks.attention_bias(mask, mask_convention, causal, n, m, like=scaled)
    masked = scaled
    if bias is not None:
        try:
            masked = scaled + bias
        except RuntimeError:
            raise SolverInputError(
                f"mask of shape {tuple(bias.shape)} does not broadcast against scores of shape {tuple(scaled.shape)}",
                param="mask",
            ) from None
        tr.add("masked", masked, "S̃ = S' + M", r"\tilde S = S' + M")
    empty = masks.check_empty_rows(masked, empty_rows)
    if bool(empty.any()):
        e = empty[..., None]
        weights = softmax(masked.masked_fill(e, 0.0)).masked_fill(e, 0.0)
    else:
        weights = softmax(masked)
    arg, arg_tex = ("S̃", r"\tilde S") if bias is not None else ("S'", "S'")
    tr.add("weights", weights, f"A = softmax({arg}) over keys", rf"A = \operatorname{{softmax}}({arg_tex})")
    used = weights
    if dropout_p > 0.0:
        keep = torch.rand(weights.shape, generator=rng, dtype=weights.dtype, device=weights.device) >= dropout_p
        used = tr.add("dropout", weights * keep / (1.0 - dropout_p), "A ⊙ keep / (1 − p)")
    try:
        out = tr.add("output", used @ v, "O = A·V", r"O = AV")
    except RuntimeError as e:
        raise SolverInputError(f"batch shapes of the weights and v do not broadcast ({e})", param="v") from None
    return _done((out, weights), tr, return_trace)


def _split_heads(t: torch.Tensor, heads: int) -> torch.Tensor:
    """(..., n, heads·d) → (..., heads, n, d)."""
    return t.reshape(*t.shape[:-1], heads, t.shape[-1] // heads).movedim(-2, -3)


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

    See :func:`solver.kernels.numpy_ref.multi_head_attention` (weights are d_in × d_out: pass
    ``linear.weight.T`` for a ``torch.nn.Linear``). Returns (output, weights (..., h, n, m)).
    Steps: q, k, v, scores, scaled, [masked], weights, concat, output.
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
    wq_t = _float(wq, "wq")
    if wq_t.ndim != 2 or wq_t.shape[1] % h:
        raise SolverInputError(
            f"wq has shape {tuple(wq_t.shape)}: its columns must split into {h} heads", param="wq"
        )
    d_head = wq_t.shape[1] // h
    q = tr.add("q", _project(x, wq_t, bq, "wq"), "Q = X·W_Q (+ b_Q)", r"Q = XW_Q")
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
    kh = _split_heads(k, h_kv).repeat_interleave(group, dim=-3)
    vh = _split_heads(v, h_kv).repeat_interleave(group, dim=-3)
    if mask is not None:
        if not isinstance(mask, torch.Tensor):
            mask = torch.as_tensor(np.asarray(mask), device=x.device)
        _ndim_at_least(mask, 2, "mask")
        if mask.ndim <= x.ndim:
            mask = mask.unsqueeze(-3)
    (heads, weights), sub = attention(
        qh, kh, vh, mask, mask_convention=mask_convention, causal=causal, scale=scale,
        empty_rows=empty_rows, return_trace=True,
    )
    for step in sub:
        if step.name in ("scores", "scaled", "masked", "weights"):
            tr.add(step.name, step.value, step.formula + " (per head)", step.latex)
    merged = heads.movedim(-3, -2)
    concat = tr.add("concat", merged.reshape(*merged.shape[:-2], -1), "Concat(head₁, …, head_h)")
    if wo is not None:
        out = _project(concat, wo, bo, "wo")
    else:
        out = concat if bo is None else concat + _vector(bo, concat.shape[-1], "bo", concat)
    tr.add("output", out, "Concat(heads)·W_O (+ b_O)", r"\operatorname{Concat}(\text{heads})W_O")
    return _done((out, weights), tr, return_trace)


# ----------------------------------------------------------------------------- normalisation


def layer_norm(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5, return_trace: bool = False) -> Any:
    """LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β over the last axis, σ² biased (÷ d, as PyTorch).

    Steps: mean, variance (shape (...,)), normalised, output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    d = x.shape[-1]
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    if bool((var + eps == 0).any()):
        raise SolverInputError("a row is constant and eps = 0: variance + eps is 0", param="eps")
    tr.add("mean", mean[..., 0], "μ = (1/d) Σ xᵢ", r"\mu = \frac{1}{d}\sum_i x_i")
    tr.add("variance", var[..., 0], "σ² = (1/d) Σ (xᵢ − μ)²", r"\sigma^2 = \frac{1}{d}\sum_i (x_i-\mu)^2")
    normalised = tr.add(
        "normalised", (x - mean) / torch.sqrt(var + eps), "x̂ = (x − μ)/√(σ² + ε)",
        r"\hat x = \frac{x-\mu}{\sqrt{\sigma^2+\epsilon}}",
    )
    out = normalised
    if gamma is not None:
        out = out * _vector(gamma, d, "gamma", x)
    if beta is not None:
        out = out + _vector(beta, d, "beta", x)
    return _done(tr.add("output", out, "y = γ ⊙ x̂ + β", r"y = \gamma \odot \hat x + \beta"), tr, return_trace)


def rms_norm(x: Any, gamma: Any = None, eps: float = 1e-6, return_trace: bool = False) -> Any:
    """RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε) over the last axis. Steps: mean_square, rms, normalised, output."""
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    ms = (x**2).mean(dim=-1, keepdim=True)
    if bool((ms + eps == 0).any()):
        raise SolverInputError("a row is all zeros and eps = 0: the RMS is 0", param="eps")
    tr.add("mean_square", ms[..., 0], "(1/d) Σ xᵢ²", r"\frac{1}{d}\sum_i x_i^2")
    rms = torch.sqrt(ms + eps)
    tr.add("rms", rms[..., 0], "√(mean_square + ε)", r"\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}")
    normalised = tr.add("normalised", x / rms, "x / rms", r"x / \mathrm{rms}")
    out = normalised if gamma is None else normalised * _vector(gamma, x.shape[-1], "gamma", x)
    return _done(tr.add("output", out, "γ ⊙ x / rms", r"\gamma \odot x / \mathrm{rms}"), tr, return_trace)


def batch_norm(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5, return_trace: bool = False) -> Any:
    """BN(x) = γ ⊙ (x − μ_B) / √(σ²_B + ε) + β, per feature (last axis) over all other axes.

    Training-mode statistics, biased variance. Steps: mean, variance (shape (d,)), normalised, output.
    """
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 2, "x")
    if eps < 0:
        raise SolverInputError(f"eps must be ≥ 0, got {eps}", param="eps")
    dims = tuple(range(x.ndim - 1))
    mean = x.mean(dim=dims)
    var = ((x - mean) ** 2).mean(dim=dims)
    if bool((var + eps == 0).any()):
        raise SolverInputError("a feature is constant over the batch and eps = 0", param="eps")
    tr.add("mean", mean, "μ_B = mean over the batch", r"\mu_B")
    tr.add("variance", var, "σ²_B = mean over the batch of (x − μ_B)²", r"\sigma_B^2")
    normalised = tr.add("normalised", (x - mean) / torch.sqrt(var + eps), "(x − μ_B)/√(σ²_B + ε)")
    out = normalised
    if gamma is not None:
        out = out * _vector(gamma, x.shape[-1], "gamma", x)
    if beta is not None:
        out = out + _vector(beta, x.shape[-1], "beta", x)
    return _done(tr.add("output", out, "γ ⊙ x̂ + β"), tr, return_trace)


# ----------------------------------------------------------------------------- positions


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
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)) (float64).

    See :func:`solver.kernels.numpy_ref.sinusoidal_pe` for the layouts and odd d_model. Steps: angle, output.
    """
    _check_pe_args(d_model, base, layout)
    tr = Trace()
    d = int(d_model)
    pos = torch.arange(int(n_positions), dtype=torch.float64)
    if layout == "tensor2tensor":  # n = d//2 timescales, inverse base^(−i/(n−1)); [sin | cos | 0]
        n = d // 2
        inv = float(base) ** (-torch.arange(n, dtype=torch.float64) / max(n - 1, 1))
        angle = tr.add("angle", pos[:, None] * inv[None, :], "pos · base^(−i/(n−1))", r"pos \cdot 10000^{-i/(n-1)}")
        out = torch.cat([torch.sin(angle), torch.cos(angle), torch.zeros(len(pos), d % 2, dtype=torch.float64)], 1)
        return _done(tr.add("output", out, "[sin | cos] of the angle (+ a zero column for odd d)"), tr,
                     return_trace)
    i = torch.arange((d + 1) // 2, dtype=torch.float64)
    angle = tr.add("angle", pos[:, None] / base ** (2 * i / d), "pos / base^(2i/d)", r"\frac{pos}{10000^{2i/d}}")
    sines, cosines = torch.sin(angle), torch.cos(angle[:, : d // 2])
    if layout == "interleaved":
        out = torch.empty((len(pos), d), dtype=torch.float64)
        out[:, 0::2] = sines
        out[:, 1::2] = cosines
    else:
        out = torch.cat([sines, cosines], dim=1)
    return _done(tr.add("output", out, "sin / cos of the angle"), tr, return_trace)


def learned_pe(table: Any, positions: Any, return_trace: bool = False) -> Any:
    """PE = table[positions], a lookup in a trained (max_positions, d) table. Steps: output."""
    table = _float(table, "table")
    if table.ndim != 2:
        raise SolverInputError(f"table must be (max_positions, d), got shape {tuple(table.shape)}", param="table")
    p = positions if isinstance(positions, torch.Tensor) else torch.as_tensor(np.asarray(positions))
    if p.dtype.is_floating_point or p.dtype == torch.bool or bool((p < 0).any()) or bool((p >= table.shape[0]).any()):
        raise SolverInputError(f"positions must be integers in 0..{table.shape[0] - 1}", param="positions")
    tr = Trace()
    return _done(tr.add("output", table[p.to(table.device)], "table[pos]"), tr, return_trace)


def rope(
    x: Any,
    positions: Any = None,
    *,
    base: float = 10000.0,
    pairing: str = "interleaved",
    return_trace: bool = False,
) -> Any:
    """RoPE: rotate each pair (a, b) of x at position p by p·θᵢ, θᵢ = base^(−2i/d).

    See :func:`solver.kernels.numpy_ref.rope` (interleaved = GPT-J pairs (2i, 2i+1); half = GPT-NeoX /
    LLaMA pairs (i, i + d/2)). Steps: angle, cos, sin, output.
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
    if positions is None:
        p = torch.arange(n, dtype=torch.float64, device=x.device)
    else:
        p = _float(positions, "positions").to(device=x.device, dtype=torch.float64)
    if tuple(p.shape[-1:]) != (n,):
        raise SolverInputError(f"expected {n} positions, got shape {tuple(p.shape)}", param="positions")
    tr = Trace()
    theta = base ** (-2 * torch.arange(d // 2, dtype=torch.float64, device=x.device) / d)
    angle = tr.add("angle", p[..., None] * theta, "p·θᵢ, θᵢ = base^(−2i/d)", r"p\,\theta_i")
    cos = tr.add("cos", torch.cos(angle).to(x.dtype), "cos(p·θᵢ)")
    sin = tr.add("sin", torch.sin(angle).to(x.dtype), "sin(p·θᵢ)")
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., : d // 2], x[..., d // 2 :]
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if pairing == "interleaved":
        out = torch.stack([ra, rb], dim=-1).reshape(*ra.shape[:-1], d)
    else:
        out = torch.cat([ra, rb], dim=-1)
    return _done(tr.add("output", out, "(a cos − b sin, a sin + b cos)"), tr, return_trace)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi head slopes mₖ = 2^(−8k/h) (h a power of two; see numpy_ref for the general rule)."""
    return torch.from_numpy(_np_alibi_slopes(n_heads))


def alibi_bias(n_heads: int, n: int, m: int | None = None, *, causal: bool = True) -> torch.Tensor:
    """ALiBi additive bias (h, n, m): −m_h·(i − j) for j ≤ i, −∞ after (bottom-right aligned)."""
    m = n if m is None else m
    slopes = alibi_slopes(n_heads)
    dist = (torch.arange(n)[:, None] + (m - n)) - torch.arange(m)[None, :]
    dist = dist.to(torch.float64)
    if causal:
        return torch.where(dist >= 0, -slopes[:, None, None] * dist, torch.tensor(-math.inf, dtype=torch.float64))
    return -slopes[:, None, None] * dist.abs()


# ----------------------------------------------------------------------------- feed-forward


def relu(x: Any, return_trace: bool = False) -> Any:
    """ReLU(x) = max(0, x). Steps: output."""
    tr = Trace()
    x = _float(x, "x")
    return _done(tr.add("output", torch.clamp(x, min=0), "max(0, x)"), tr, return_trace)


def gelu(x: Any, approximate: str = "none", return_trace: bool = False) -> Any:
    """GELU(x) = x/2·(1 + erf(x/√2)); tanh form x/2·(1 + tanh(√(2/π)(x + 0.044715x³))). Steps: output."""
    tr = Trace()
    x = _float(x, "x")
    if approximate == "none":
        out = x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    elif approximate == "tanh":
        out = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    else:
        raise SolverInputError(f"approximate must be 'none' or 'tanh', got {approximate!r}", param="approximate")
    return _done(tr.add("output", out, "GELU(x)"), tr, return_trace)


def ffn(x: Any, w1: Any, b1: Any, w2: Any, b2: Any, activation: str = "relu", return_trace: bool = False) -> Any:
    """FFN(x) = act(x W₁ + b₁) W₂ + b₂. Steps: hidden, activated, output."""
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
    """SwiGLU(x) = (SiLU(x W_gate) ⊙ x W_up) W_down. Steps: gate, silu, up, hidden, output."""
    tr = Trace()
    x = _float(x, "x")
    _ndim_at_least(x, 1, "x")
    gate = tr.add("gate", _project(x, w_gate, None, "w_gate"), "x W_gate")
    s = tr.add("silu", gate * torch.sigmoid(gate), "SiLU(gate) = gate·σ(gate)")
    up = tr.add("up", _project(x, w_up, None, "w_up"), "x W_up")
    if up.shape != gate.shape:
        raise SolverInputError(f"w_up gives shape {tuple(up.shape)} but w_gate gives {tuple(gate.shape)}", param="w_up")
    hidden = tr.add("hidden", s * up, "silu ⊙ up")
    return _done(tr.add("output", _project(hidden, w_down, None, "w_down"), "hidden · W_down"), tr, return_trace)
