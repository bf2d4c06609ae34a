"""Hypothesis strategies for the attention domain: shapes, Q/K/V arrays, masks, head layouts.

Sizes stay small (a few tokens, a few features) so that every property runs in
milliseconds; the bugs these tests hunt (a transposed mask, an off-by-one causal diagonal,
a wrong head split) show up at n = 3 as well as at n = 3000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DTYPES = ("float32", "float64")
dtypes = st.sampled_from(DTYPES)

# absolute/relative tolerances for comparing two float implementations in a dtype
TOL = {"float32": dict(rtol=1e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


def tol(dtype) -> dict:
    return TOL[np.dtype(dtype).name]


def finite_arrays(shape, dtype="float64", bound: float = 3.0):
    """Arrays of the given shape with entries in [−bound, bound], exactly representable in
    float32: half of the draws are generic (uniform from a drawn seed, so no two entries tie
    and a transposed or mis-ordered operand shows), half come from Hypothesis' own array
    strategy (zeros, repeated values and other edge cases, with shrinking)."""
    dt = np.dtype(dtype)
    generic = st.integers(0, 2**32 - 1).map(
        lambda seed: np.random.default_rng(seed).uniform(-bound, bound, shape).astype(np.float32).astype(dt)
    )
    edgy = hnp.arrays(dt, shape, elements=st.floats(-bound, bound, width=32, allow_subnormal=False))
    return st.one_of(generic, edgy)


batch_shapes = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)


@dataclass(frozen=True)
class AttentionShape:
    batch: tuple[int, ...]
    n: int  # queries
    m: int  # keys
    d_k: int
    d_v: int

    @property
    def scores(self) -> tuple[int, ...]:
        return (*self.batch, self.n, self.m)


@st.composite
def attention_shapes(draw, max_tokens: int = 6, max_dim: int = 6, square: bool | None = None) -> AttentionShape:
    """Batch shape, n queries, m keys, d_k, d_v; ``square=True`` forces n == m (self-attention)."""
    batch = draw(batch_shapes)
    n = draw(st.integers(1, max_tokens))
    m = n if square else draw(st.integers(1, max_tokens))
    return AttentionShape(batch, n, m, draw(st.integers(1, max_dim)), draw(st.integers(1, max_dim)))


@st.composite
def qkv_arrays(draw, shape=None, dtype: str | None = None, bound: float = 3.0):
    """(shape, dtype, q, k, v) with q (..., n, d_k), k (..., m, d_k), v (..., m, d_v);
    ``shape`` is an AttentionShape, a strategy for one, or None (any)."""
    if shape is None:
        shape = attention_shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    dtype = dtype or draw(dtypes)
    b = shape.batch
    q = draw(finite_arrays((*b, shape.n, shape.d_k), dtype, bound))
    k = draw(finite_arrays((*b, shape.m, shape.d_k), dtype, bound))
    v = draw(finite_arrays((*b, shape.m, shape.d_v), dtype, bound))
    return shape, dtype, q, k, v


@st.composite
def keep_masks(draw, scores_shape: tuple[int, ...], allow_empty_rows: bool = False) -> np.ndarray:
    """A KEEP mask (True = may attend) with the trailing (n, m) of ``scores_shape``, possibly
    with some of its batch axes, and (unless ``allow_empty_rows``) at least one key kept per row."""
    *batch, n, m = scores_shape
    # a mask may carry the full batch shape, or only its trailing part (it broadcasts)
    lead = draw(st.integers(0, len(batch)))
    shape = (*batch[len(batch) - lead :], n, m)
    mask = draw(hnp.arrays(np.bool_, shape))
    if not allow_empty_rows:
        cols = draw(hnp.arrays(np.int64, shape[:-1], elements=st.integers(0, m - 1)))
        np.put_along_axis(mask, cols[..., None], True, axis=-1)
    return mask


@st.composite
def additive_masks(draw, scores_shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    """An additive float mask: finite biases in [−4, 4] and −∞ where a KEEP mask blocks."""
    keep = draw(keep_masks(scores_shape))
    bias = draw(finite_arrays(keep.shape, dtype, 4.0))
    return np.where(keep, bias, -np.inf).astype(dtype)


@st.composite
def mask_cases(draw, scores_shape: tuple[int, ...], dtype: str = "float64"):
    """(kind, mask, keep) for kind in none / keep / block / additive; ``keep`` is the KEEP
    mask the case stands for (None for none; for additive, where the mask is finite)."""
    kind = draw(st.sampled_from(["none", "keep", "block", "additive"]))
    if kind == "none":
        return kind, None, None
    if kind == "additive":
        mask = draw(additive_masks(scores_shape, dtype))
        return kind, mask, np.isfinite(mask)
    keep = draw(keep_masks(scores_shape))
    return kind, (keep if kind == "keep" else ~keep), keep


@st.composite
def causal_masks(draw, max_tokens: int = 6) -> tuple[int, int, np.ndarray]:
    """(n, m, keep) for a bottom-right causal mask with m ≥ n (no fully masked row)."""
    n = draw(st.integers(1, max_tokens))
    m = draw(st.integers(n, max_tokens))
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    return n, m, j - (m - n) <= i  # written out here, not via solver.kernels.masks


@dataclass(frozen=True)
class HeadConfig:
    n_heads: int
    n_kv_heads: int
    d_head: int

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_head


@st.composite
def head_configs(draw, max_kv_heads: int = 3, max_group: int = 3, max_d_head: int = 3, gqa: bool = True) -> HeadConfig:
    """K/V heads, query heads per K/V head (1: MHA; all heads on one K/V head: MQA; else GQA)
    and head dimension. Drawn as h_kv and the group size so that grouped cases are common;
    ``gqa=False`` gives plain multi-head attention (h_kv = h)."""
    h_kv = draw(st.integers(1, max_kv_heads))
    group = draw(st.integers(1, max_group))
    h = h_kv * group
    return HeadConfig(h, h_kv if gqa else h, draw(st.integers(1, max_d_head)))


@st.composite
def rope_vectors(draw, max_pairs: int = 4, dtype: str = "float64"):
    """A query/key pair of vectors with even dimension d (d/2 rotation pairs)."""
    d = 2 * draw(st.integers(1, max_pairs))
    q = draw(finite_arrays((1, d), dtype))
    k = draw(finite_arrays((1, d), dtype))
    return q, k
