"""Sampling sets by hand: temperature, top-k and top-p (nucleus), in HuggingFace's order.

Conventions (those of ``transformers``' logits warpers, which ``generate`` applies in the order
temperature → top-k → top-p):

* temperature T: p = softmax(z / T);
* top-k: keep the k largest logits; a logit equal to the k-th largest is kept too
  (``TopKLogitsWarper`` removes only scores strictly below the k-th), so ties can keep more;
* top-p, crossing token **included** (``TopPLogitsWarper``: sort ascending, drop tokens whose
  ascending cumulative probability is ≤ 1 − p): in descending order a token is kept when the
  mass of the tokens before it is < p, so the set is the smallest prefix whose mass reaches p,
  the token that crosses p included; at least one token is always kept. The alternative
  ("exclude": keep only while the cumulative mass stays ≤ p) is offered, named, as the mistake
  it usually is;
* with both, top-p works on the probabilities renormalised over the top-k set.
Ties in probability are ordered by index (a stable sort), which only matters for ties at the border.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solver.errors import SolverInputError
from solver.trace import Trace

CROSSING = ("include", "exclude")


def _logits(z: Any) -> np.ndarray:
    a = np.asarray(z, dtype=float)
    if a.ndim != 1 or a.size < 1:
        raise SolverInputError(f"expected one vector of logits, got shape {a.shape}", param="logits")
    return a


def _softmax(z: np.ndarray) -> np.ndarray:
    """softmax over the entries; −∞ (a shifted logit beyond the float range) has probability 0."""
    finite = np.isfinite(z)
    with np.errstate(under="ignore"):
        e = np.where(finite, np.exp(np.where(finite, z, 0) - z[finite].max()), 0.0)
    return e / e.sum()


def sampling_set(logits: Any, *, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
                 crossing: str = "include", return_trace: bool = False) -> Any:
    """The tokens a sampler may draw and their renormalised probabilities.

    Returns (kept, probs): the kept token indices in descending order of probability, and the
    full probability vector after filtering (0 outside the set). Steps: scaled (z / T),
    probs (softmax), [top_k_threshold, after_top_k (renormalised), only with top_k],
    [order (indices by descending probability), sorted_probs, cumulative (inclusive),
    before (mass before each token), in_top_p, only with top_p], kept, output.
    """
    z = _logits(logits)
    if not temperature > 0:
        raise SolverInputError(f"temperature must be > 0, got {temperature}", param="temperature")
    if crossing not in CROSSING:
        raise SolverInputError(f"crossing must be 'include' or 'exclude', got {crossing!r}", param="crossing")
    if not np.all(np.isfinite(z)):
        raise SolverInputError("every logit must be a finite number (no NaN or infinity)", param="logits")
    tr = Trace()
    with np.errstate(over="ignore", under="ignore"):
        plain = z / temperature
        if np.all(np.isfinite(plain)):
            scaled = tr.add("scaled", plain, "z / T")
        else:  # a tiny T: z / T is beyond the float range, (z − max z) / T only runs to −∞ (a probability of 0)
            scaled = tr.add("scaled", (z - z.max()) / temperature, "(z − max z) / T (z / T is beyond the float "
                            "range; softmax is unchanged by the shift)")
    probs = tr.add("probs", _softmax(scaled), "softmax(z / T)")
    keep = np.ones(z.size, dtype=bool)
    if top_k is not None:
        if int(top_k) != top_k or top_k < 1:
            raise SolverInputError(f"top_k must be a positive integer, got {top_k}", param="top_k")
        k = min(int(top_k), z.size)
        tr.add("top_k_threshold", float(np.sort(scaled)[::-1][k - 1]), "the k-th largest logit (ties kept)")
        keep &= z >= np.sort(z)[::-1][k - 1]  # on z: T > 0 keeps the order, and no tie is made by overflow
        probs = tr.add("after_top_k", np.where(keep, probs, 0.0) / probs[keep].sum(), "renormalised over the top k")
    if top_p is not None:
        if not 0.0 < top_p <= 1.0:
            raise SolverInputError(f"top_p must lie in (0, 1], got {top_p}", param="top_p")
        order = tr.add("order", np.argsort(-probs, kind="stable"), "indices by descending probability")
        sp = tr.add("sorted_probs", probs[order], "p sorted descending")
        cum = tr.add("cumulative", np.cumsum(sp), "Σ of p up to and including each token")
        before = tr.add("before", cum - sp, "mass before each token")
        if crossing == "include":
            inside = before < top_p
            note = "kept while the mass before the token is < p (the crossing token included)"
        else:
            inside = cum <= top_p
            inside[0] = True
            note = "kept while the cumulative mass is ≤ p (the crossing token left out; at least one)"
        inside &= sp > 0
        tr.add("in_top_p", inside, note)
        nucleus = np.zeros(z.size, dtype=bool)
        nucleus[order[inside]] = True
        keep &= nucleus
    final = np.where(keep, probs, 0.0)
    final = final / final.sum()
    kept = tr.add("kept", [int(i) for i in np.argsort(-final, kind="stable") if keep[i]], "the sampling set")
    tr.add("output", final, "p renormalised over the set")
    return ((kept, final), tr) if return_trace else (kept, final)
