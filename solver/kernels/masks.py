"""Attention masks: the one place where mask conventions are converted.

Three conventions are in use, and mixing them up is the most common source of wrong
attention answers:

============ ============================ ==============================================
convention   meaning of an entry          who uses it
============ ============================ ==============================================
``KEEP``     boolean, True = may attend   ``torch.nn.functional.scaled_dot_product_attention``
                                          (``attn_mask``); the builders in this module
``BLOCK``    boolean, True = blocked      ``torch.nn.MultiheadAttention`` (``attn_mask``,
                                          ``key_padding_mask``), ``nn.Transformer``
additive     float, added to the scaled   textbooks and most hand-written code: 0 where
             scores before the softmax    attending is allowed, −∞ (or −1e9) where not
============ ============================ ==============================================

Boolean masks carry their convention by name (``mask_convention="keep"`` or ``"block"``);
there is no default guess from the values. Integer arrays of 0 and 1 count as boolean (the
command line writes masks as 1 = may attend, 0 = blocked). Float arrays are always additive
and pass through unchanged. :func:`to_keep` turns any boolean convention into a KEEP mask,
:func:`to_additive` turns a KEEP/BLOCK mask into 0/−∞, and :func:`from_additive` reads an
additive mask back as KEEP.

Shapes: a mask broadcasts against the scores, shape ``(..., n, m)`` for ``n`` queries and
``m`` keys (row i = query i, column j = key j). :func:`padding_mask` returns ``(B, 1, m)``
(one row per sequence, broadcast over queries); with a head axis, index it as
``mask[:, None]`` to get ``(B, 1, 1, m)``.

Fully masked rows. When a query row blocks every key, the masked scores of that row are all
−∞ and the softmax is 0/0. The kernels never let that become a silent NaN:

* ``empty_rows="error"`` (the default) raises
  ``SolverInputError("row i of the mask blocks every key", param="mask")``;
* ``empty_rows="zero"`` gives that row zero weights and therefore a zero output row (what
  recent PyTorch ``scaled_dot_product_attention`` returns for such a row; older versions
  returned NaN).

Why −∞ and −1e9 differ. With −∞, a blocked weight is exactly ``exp(−∞) = 0``, and a fully
blocked row is detectable (all entries −∞). With a finite −1e9 the blocked weights of a
partly masked row still underflow to 0, but a fully masked row becomes ``score_j − 1e9`` for
every j: the shift cancels in the softmax and the row silently attends to *all* keys as if
unmasked (in float32, where 1e9 swallows the scores, uniformly). Such a row is not detected
here: a finite additive entry is a bias, not a block. Use boolean masks or −∞ to get the
check. Likewise :func:`from_additive` treats only −∞ as blocked unless given a threshold.

Causal alignment. :func:`causal_mask` with ``m > n`` keys aligns the queries with the
*last* ``n`` keys (bottom-right: query i sits at position ``i + m − n``), the convention of
decoding with a KV cache and of FlashAttention ≥ 2.1. PyTorch's ``is_causal=True`` aligns
top-left (``torch.ones(n, m).tril()``); pass ``align="top_left"`` to get that one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.errors import SolverInputError

KEEP = "keep"
BLOCK = "block"
CONVENTIONS = (KEEP, BLOCK)
EMPTY_ROWS = ("error", "zero")


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _is_bool(mask: Any) -> bool:
    if _is_torch(mask):
        return mask.dtype.is_floating_point is False and mask.dtype.is_complex is False
    return np.asarray(mask).dtype.kind in "biu"


def _check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise SolverInputError(
            f"unknown mask convention {convention!r}; use 'keep' (True = may attend) or 'block' (True = blocked)",
            param="mask_convention",
        )


def to_keep(mask: Any, convention: str = KEEP) -> Any:
    """Boolean mask in ``convention`` → KEEP mask (True = may attend); ``None`` stays ``None``."""
    if mask is None:
        return None
    _check_convention(convention)
    if not _is_bool(mask):
        raise SolverInputError(
            "a boolean (or 0/1) mask is expected here; read an additive float mask with from_additive",
            param="mask",
        )
    if _is_torch(mask):
        import torch

        if mask.dtype != torch.bool:
            if bool(((mask != 0) & (mask != 1)).any()):
                raise SolverInputError("an integer mask must hold only 0 and 1", param="mask")
            mask = mask != 0
    else:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            if np.any((mask != 0) & (mask != 1)):
                raise SolverInputError("an integer mask must hold only 0 and 1", param="mask")
            mask = mask != 0
    return mask if convention == KEEP else ~mask


def to_additive(mask: Any, convention: str = KEEP, dtype: Any = None) -> Any:
    """Boolean mask → additive mask: 0 where attending is allowed, −∞ where blocked.

    A float mask is already additive and passes through (cast to ``dtype`` when given).
    NumPy in, NumPy out (default float64); Torch in, Torch out (default float32).
    """
    if mask is None:
        return None
    if _is_torch(mask):
        import torch

        if mask.dtype.is_floating_point:
            return mask if dtype is None else mask.to(dtype)
        keep = to_keep(mask, convention)
        out = torch.zeros(keep.shape, dtype=dtype or torch.get_default_dtype(), device=keep.device)
        return out.masked_fill(~keep, float("-inf"))
    arr = np.asarray(mask)
    if arr.dtype.kind == "f":
        return arr if dtype is None else arr.astype(dtype)
    keep = to_keep(arr, convention)
    return np.where(keep, 0.0, -np.inf).astype(dtype or np.float64)


def from_additive(mask: Any, *, threshold: float = float("-inf")) -> Any:
    """Additive mask → KEEP mask: an entry is blocked when it is ≤ ``threshold``.

    With the default threshold only −∞ counts as blocked; pass ``threshold=-1e9`` to read a
    textbook −1e9 mask as blocking.
    """
    if mask is None:
        return None
    if _is_torch(mask):
        return mask > threshold
    return np.asarray(mask) > threshold


def causal_mask(n: int, m: int | None = None, *, align: str = "bottom_right") -> np.ndarray:
    """KEEP mask (n, m) with keep[i, j] = (j ≤ i + m − n): no query sees a later key.

    ``align="bottom_right"`` (default) puts query i at key position ``i + m − n``; with
    ``m < n`` the first ``n − m`` rows then block every key. ``align="top_left"`` is
    ``j ≤ i``, PyTorch's ``is_causal`` convention. For ``m == n`` both are the lower triangle.
    """
    m = n if m is None else m
    if n < 1 or m < 1:
        raise SolverInputError(f"causal mask needs n, m ≥ 1, got n={n}, m={m}", param="n")
    if align not in ("bottom_right", "top_left"):
        raise SolverInputError(f"align must be 'bottom_right' or 'top_left', got {align!r}", param="align")
    offset = m - n if align == "bottom_right" else 0
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    return j <= i + offset


def padding_mask(lengths: Any, n: int) -> np.ndarray:
    """KEEP mask (B, 1, n) with keep[b, 0, j] = (j < lengths[b]): padded keys are blocked."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise SolverInputError("lengths must be a 1-D sequence of integers", param="lengths")
    if np.any(lengths < 1) or np.any(lengths > n):
        raise SolverInputError(f"every length must lie in 1..{n}, got {lengths.tolist()}", param="lengths")
    return (np.arange(n)[None, :] < lengths[:, None])[:, None, :]


def sliding_window_mask(n: int, window: int, causal: bool = True) -> np.ndarray:
    """KEEP mask (n, n) for local attention: causal keeps i − window < j ≤ i, else |i − j| < window.

    ``window`` counts the query itself: with ``causal=True`` each query sees itself and the
    ``window − 1`` keys before it. (Mistral's "positions between i − W and i" is W + 1 keys,
    i.e. ``window = W + 1`` here.) With ``causal=False`` it sees ``window − 1`` keys on each side.
    """
    if window < 1:
        raise SolverInputError(f"window must be ≥ 1, got {window}", param="window")
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    if causal:
        return (j <= i) & (j > i - window)
    return np.abs(i - j) < window


def combine(*masks: Any) -> Any:
    """Logical AND of KEEP masks (broadcast together); ``None`` entries are skipped."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = to_keep(present[0])
    for m in present[1:]:
        out = out & to_keep(m)
    return out


def attention_bias(
    mask: Any, convention: str, causal: bool, n: int, m: int, like: Any
) -> Any:
    """The additive bias for scores of shape (..., n, m): the mask as 0/−∞ (or as given, if
    float), plus the bottom-right causal mask when ``causal``; ``None`` when there is neither.

    ``like`` is the scores array: the bias takes its library, dtype and device.
    """
    if mask is None and not causal:
        return None
    torch_like = _is_torch(like)
    if torch_like:
        import torch

        if mask is not None and not _is_torch(mask):
            mask = torch.as_tensor(np.asarray(mask), device=like.device)
        bias = to_additive(mask, convention, dtype=like.dtype) if mask is not None else None
        if causal:
            c = torch.as_tensor(causal_mask(n, m), device=like.device)
            cb = to_additive(c, KEEP, dtype=like.dtype)
            bias = cb if bias is None else bias + cb
        return bias
    if mask is not None and _is_torch(mask):
        mask = mask.detach().cpu().numpy()
    bias = to_additive(mask, convention, dtype=like.dtype) if mask is not None else None
    if causal:
        cb = to_additive(causal_mask(n, m), KEEP, dtype=like.dtype)
        bias = cb if bias is None else bias + cb
    return bias


def empty_rows_of(masked_scores: Any) -> Any:
    """Boolean (..., n): True where every entry of the row is −∞ (a fully masked query)."""
    if _is_torch(masked_scores):
        import torch

        return torch.isneginf(masked_scores).all(dim=-1)
    return np.isneginf(masked_scores).all(axis=-1)


def check_empty_rows(masked_scores: Any, empty_rows: str) -> Any:
    """Apply the fully-masked-row policy; returns the empty-row indicator (..., n).

    ``"error"`` raises on the first fully masked row; ``"zero"`` lets the caller zero it.
    """
    if empty_rows not in EMPTY_ROWS:
        raise SolverInputError(f"empty_rows must be 'error' or 'zero', got {empty_rows!r}", param="empty_rows")
    empty = empty_rows_of(masked_scores)
    if empty_rows == "error" and bool(empty.any()):
        idx = np.argwhere(np.asarray(empty.cpu() if _is_torch(empty) else empty))[0]
        where = f" (batch index {tuple(int(t) for t in idx[:-1])})" if len(idx) > 1 else ""
        raise SolverInputError(
            f"row {int(idx[-1])} of the mask blocks every key{where}; "
            "pass empty_rows='zero' for zero weights in such rows",
            param="mask",
        )
    return empty
