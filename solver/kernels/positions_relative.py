"""Relative positions by hand: T5's relative-position buckets, ALiBi-biased attention, and the
RoPE score that depends only on m − n.

* T5 (Raffel et al. 2020, §2.1; the bucket function of Mesh TensorFlow, which HuggingFace's
  ``T5Attention._relative_position_bucket`` adapts): the relative position r = key − query is
  mapped to one of ``num_buckets`` buckets; each head learns one scalar bias per bucket (a
  ``num_buckets × n_heads`` table, held by the first layer of each stack and shared by all its
  layers). Bidirectional (encoder): half the buckets for r ≤ 0, half (offset by nb/2) for r > 0.
  Causal (decoder): r > 0 is clamped to 0, all buckets for the past. Within a half of n
  buckets, distances below max_exact = n/2 get a bucket each (the *exact* region); larger
  ones share logarithmically wider buckets up to ``max_distance`` (the *logarithmic* region):
  bucket = max_exact + ⌊ln(|r|/max_exact) / ln(max_distance/max_exact) · (n − max_exact)⌋,
  capped at n − 1. Computed here in float64; the reference code computes it in float32 (the
  tests compare both over thousands of distances).
* ALiBi (Press et al. 2022): scores q·k/√d − m_h·(i − j), slopes m_h from
  :func:`solver.kernels.numpy_ref.alibi_slopes` (geometric with ratio 2^(−8/h); the paper's rule for h
  not a power of two).
* RoPE (Su et al. 2021): after rotating q at position m and k at n, the score is
  Σᵢ (aᵢcᵢ + bᵢdᵢ) cos((m − n)θᵢ) − (bᵢcᵢ − aᵢdᵢ) sin((m − n)θᵢ) for the pairs
  q = (aᵢ, bᵢ), k = (cᵢ, dᵢ): a function of m − n only.

Every kernel takes ``return_trace`` (see :mod:`solver.trace`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.errors import SolverInputError
from solver.kernels import numpy_ref
from solver.trace import Trace

# ----------------------------------------------------------------------------- T5 buckets


def _t5_args(num_buckets: int, max_distance: int, bidirectional: bool) -> int:
    """Check the bucket parameters; return max_exact."""
    if int(num_buckets) != num_buckets or num_buckets < 2:
        raise SolverInputError(f"num_buckets must be an integer ≥ 2, got {num_buckets}", param="num_buckets")
    if bidirectional and num_buckets % 2:
        raise SolverInputError(f"a bidirectional table splits its buckets in two halves: num_buckets must be even, got {num_buckets}",
                               param="num_buckets")
    half = num_buckets // 2 if bidirectional else num_buckets
    max_exact = half // 2
    if max_exact < 1:
        raise SolverInputError(f"num_buckets = {num_buckets} leaves no exact region", param="num_buckets")
    if int(max_distance) != max_distance or max_distance <= max_exact:
        raise SolverInputError(f"max_distance must be an integer above the exact region's end ({max_exact}), got {max_distance}",
                               param="max_distance")
    return max_exact


def t5_bucket(relative_position: int, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128,
              return_trace: bool = False) -> Any:
    """T5's bucket for one relative position r = key position − query position.

    Steps: half (buckets per direction: nb/2 bidirectional, nb causal), offset (nb/2 when
    bidirectional and r > 0, else 0), distance (|r| bidirectional; max(−r, 0) causal),
    max_exact (half/2), region ("exact" when distance < max_exact, else "log"),
    [log_position (max_exact + (ln(distance/max_exact)/ln(max_distance/max_exact))·(half − max_exact),
    only in the log region)], bucket (offset + distance, or offset + min(⌊log_position⌋, half − 1)).
    """
    if int(relative_position) != relative_position:
        raise SolverInputError(f"a relative position is an integer, got {relative_position}", param="relative_position")
    r = int(relative_position)
    max_exact = _t5_args(num_buckets, max_distance, bidirectional)
    tr = Trace()
    half = tr.add("half", num_buckets // 2 if bidirectional else num_buckets,
                  "buckets per direction: nb/2 (bidirectional)" if bidirectional else "buckets for the past: nb (causal)")
    if bidirectional:
        offset = tr.add("offset", half if r > 0 else 0, "nb/2 if r > 0 (key after query) else 0")
        dist = tr.add("distance", abs(r), "|r|")
    else:
        offset = tr.add("offset", 0, "0 (causal: one direction)")
        dist = tr.add("distance", max(-r, 0), "max(−r, 0): a future key counts as distance 0")
    tr.add("max_exact", max_exact, "half / 2")
    if dist < max_exact:
        tr.add("region", "exact", "distance < max_exact: one bucket per distance")
        bucket = offset + dist
    else:
        tr.add("region", "log", "distance ≥ max_exact: logarithmically wider buckets")
        pos = tr.add("log_position",
                     max_exact + math.log(dist / max_exact) / math.log(max_distance / max_exact) * (half - max_exact),
                     "max_exact + ln(distance/max_exact)/ln(max_distance/max_exact)·(half − max_exact)")
        bucket = offset + min(int(pos), half - 1)
    bucket = tr.add("bucket", bucket, "offset + bucket within the half (capped at half − 1)")
    return (bucket, tr) if return_trace else bucket


def t5_bucket_matrix(query_length: int, key_length: int, *, bidirectional: bool = True, num_buckets: int = 32,
                     max_distance: int = 128) -> np.ndarray:
    """The (query_length × key_length) integer matrix of buckets for r = j − i."""
    _t5_args(num_buckets, max_distance, bidirectional)
    return np.array([[t5_bucket(j - i, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
                      for j in range(key_length)] for i in range(query_length)], dtype=np.int64)


def t5_linear_bucket_mistake(relative_position: int, *, bidirectional: bool = True, num_buckets: int = 32) -> int:
    """The students' mistake: one bucket per distance all the way (no logarithmic region), capped at the last bucket."""
    r = int(relative_position)
    half = num_buckets // 2 if bidirectional else num_buckets
    offset = half if bidirectional and r > 0 else 0
    dist = abs(r) if bidirectional else max(-r, 0)
    return offset + min(dist, half - 1)


def t5_bias_table_params(num_buckets: int, n_heads: int) -> int:
    """Parameters of one relative-attention-bias table: num_buckets × n_heads (one scalar per bucket and head)."""
    return int(num_buckets) * int(n_heads)


# ----------------------------------------------------------------------------- ALiBi


def alibi_attention(q: Any, k: Any, v: Any, *, causal: bool = True, scale: float | None = None,
                    return_trace: bool = False) -> Any:
    """ALiBi attention: softmax(Q Kᵀ/√d − m_h·(i − j)) V per head h, future keys −∞ when causal.

    q (h, n, d), k and v (h, m, d) with h heads (the slopes depend on h). Returns (output,
    weights). Steps: slopes (m_h), distance (i − j, query i at position i + m − n),
    bias (−m_h·(i − j), −∞ after i when causal; −m_h·|i − j| otherwise), scores, scaled,
    masked (scaled + bias), weights, output.
    """
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    if q.ndim != 3 or k.ndim != 3:
        raise SolverInputError(f"expected q and k of shape (heads, tokens, d), got {q.shape} and {k.shape}", param="q")
    h, n, m = q.shape[0], q.shape[1], k.shape[1]
    if k.shape[0] != h:
        raise SolverInputError(f"q has {h} heads but k has {k.shape[0]}", param="k")
    tr = Trace()
    tr.add("slopes", numpy_ref.alibi_slopes(h), "m_h = 2^(−8h/H) (H a power of two; Press et al.'s rule otherwise)")
    tr.add("distance", (np.arange(n)[:, None] + (m - n)) - np.arange(m)[None, :], "i − j")
    bias = tr.add("bias", numpy_ref.alibi_bias(h, n, m, causal=causal),
                  "−m_h·(i − j), −∞ for j > i" if causal else "−m_h·|i − j|")
    (out, w), at = numpy_ref.attention(q, k, v, bias, scale=scale, return_trace=True)
    for s in at:
        tr.add(s.name, s.value, s.formula, s.latex)
    return ((out, w), tr) if return_trace else (out, w)


def alibi_sign_mistake_attention(q: Any, k: Any, v: Any, *, causal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The mistake: +m_h·(i − j) (a bonus for distant keys) in place of the penalty."""
    q = np.asarray(q, dtype=float)
    h, n, m = q.shape[0], q.shape[1], np.asarray(k).shape[1]
    bias = numpy_ref.alibi_bias(h, n, m, causal=causal)
    flipped = np.where(np.isfinite(bias), -bias, bias)
    return numpy_ref.attention(q, k, v, flipped)


# ----------------------------------------------------------------------------- RoPE score


def rope_score(q: Any, k: Any, m: float, n: float, *, base: float = 10000.0, pairing: str = "interleaved",
               return_trace: bool = False) -> Any:
    """The dot product of q rotated to position m and k rotated to position n, computed twice.

    Directly: RoPE(q, m) · RoPE(k, n). Relatively: with pairs q = (aᵢ, bᵢ), k = (cᵢ, dᵢ) and
    φᵢ = (m − n)θᵢ, Σᵢ (aᵢcᵢ + bᵢdᵢ) cos φᵢ − (bᵢcᵢ − aᵢdᵢ) sin φᵢ, which sees m and n only
    through m − n. Steps: q_rotated, k_rotated, score (the direct dot product), theta,
    phi ((m − n)·θᵢ), dot_pairs (aᵢcᵢ + bᵢdᵢ), cross_pairs (bᵢcᵢ − aᵢdᵢ), relative (the
    second form; equal to score up to rounding).
    """
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    if q.ndim != 1 or q.shape != k.shape:
        raise SolverInputError(f"expected q and k as vectors of one length, got shapes {q.shape} and {k.shape}", param="k")
    d = q.shape[0]
    tr = Trace()
    qr = tr.add("q_rotated", numpy_ref.rope(q[None], [m], base=base, pairing=pairing)[0], "RoPE(q, m)")
    kr = tr.add("k_rotated", numpy_ref.rope(k[None], [n], base=base, pairing=pairing)[0], "RoPE(k, n)")
    score = tr.add("score", float(qr @ kr), "RoPE(q, m)·RoPE(k, n)")
    theta = tr.add("theta", base ** (-2 * np.arange(d // 2) / d), "θᵢ = base^(−2i/d)")
    phi = tr.add("phi", (m - n) * theta, "φᵢ = (m − n)·θᵢ")
    if pairing == "interleaved":
        a, b, c, e = q[0::2], q[1::2], k[0::2], k[1::2]
    else:
        a, b, c, e = q[: d // 2], q[d // 2:], k[: d // 2], k[d // 2:]
    dot = tr.add("dot_pairs", a * c + b * e, "aᵢcᵢ + bᵢdᵢ")
    cross = tr.add("cross_pairs", b * c - a * e, "bᵢcᵢ − aᵢdᵢ")
    tr.add("relative", float(np.sum(dot * np.cos(phi) - cross * np.sin(phi))),
           "Σᵢ (aᵢcᵢ + bᵢdᵢ) cos φᵢ − (bᵢcᵢ − aᵢdᵢ) sin φᵢ")
    return (score, tr) if return_trace else score
