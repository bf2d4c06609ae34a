"""Cross-entropy of logits, label smoothing, perplexity and bits per token or per character.

Conventions (stated, because each is a classic exam trap):

* the loss is in **nats** (natural log), as ``torch.nn.functional.cross_entropy`` computes it;
  ``loss_bits = loss_nats / ln 2``;
* perplexity = e^(loss in nats) = 2^(loss in bits): the same number either way; 2^(nats) is
  the mistake;
* bits per character = (total loss in bits over the text) / (characters) =
  bits per token × tokens / characters;
* label smoothing ε (PyTorch's): the target distribution is (1 − ε)·one-hot + ε/C over all C
  classes (the true class too), so loss = (1 − ε)·(−log p_y) + ε·mean_c(−log p_c).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.trace import Trace

REDUCTIONS = ("mean", "sum", "none")


def cross_entropy(logits: Any, target: Any, *, label_smoothing: float = 0.0, reduction: str = "mean",
                  return_trace: bool = False) -> Any:
    """CE = −log softmax(z)_y = logsumexp(z) − z_y (in nats), per row of logits (..., C).

    ``target`` holds class indices (shape logits.shape[:-1]). Steps: shifted (z − max z),
    logsumexp (max z + log Σ e^(z − max z)), log_probs (z − logsumexp), nll (−log p_y),
    [smooth (−mean_c log p_c) and smoothed ((1 − ε)·nll + ε·smooth), only with ε > 0],
    output (reduced: mean over rows, sum, or none).
    """
    z = np.asarray(logits, dtype=float)
    if z.ndim < 1 or z.shape[-1] < 1:
        raise SolverInputError(f"expected logits with a class axis, got shape {z.shape}", param="logits")
    y = np.asarray(target)
    if y.shape != z.shape[:-1]:
        raise SolverInputError(f"expected targets of shape {z.shape[:-1]}, got {y.shape}", param="target")
    if y.dtype.kind not in "iu" and not (y.size and np.all(np.mod(y, 1) == 0)):
        raise SolverInputError("targets are class indices (integers)", param="target")
    y = y.astype(np.int64)
    C = z.shape[-1]
    if np.any((y < 0) | (y >= C)):
        raise SolverInputError(f"class indices must lie in 0 … {C - 1}", param="target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise SolverInputError(f"label smoothing must lie in [0, 1], got {label_smoothing}", param="label_smoothing")
    if reduction not in REDUCTIONS:
        raise SolverInputError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}", param="reduction")
    tr = Trace()
    mx = z.max(axis=-1, keepdims=True)
    shifted = tr.add("shifted", z - mx, "z − max z")
    lse = tr.add("logsumexp", (mx + np.log(np.exp(shifted).sum(axis=-1, keepdims=True)))[..., 0],
                 "logsumexp(z) = max z + ln Σ e^(z − max z)")
    logp = tr.add("log_probs", z - lse[..., None], "ln pᵢ = zᵢ − logsumexp(z)")
    nll = tr.add("nll", -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0], "−ln p_y")
    per = nll
    if label_smoothing > 0:
        smooth = tr.add("smooth", -logp.mean(axis=-1), "−(1/C)·Σ_c ln p_c")
        per = tr.add("smoothed", (1 - label_smoothing) * nll + label_smoothing * smooth, "(1 − ε)·nll + ε·smooth")
    out = {"mean": lambda a: float(a.mean()), "sum": lambda a: float(a.sum()), "none": lambda a: a}[reduction](per)
    tr.add("output", out, f"{reduction} over rows" if reduction != "none" else "per row")
    return (out, tr) if return_trace else out


#: The largest x whose e^x is a float (ln of 1.797e308).
MAX_EXP_NATS = 709.78


def perplexity(loss: float, *, unit: str = "nats", tokens: int | None = None, chars: int | None = None) -> Result:
    """Perplexity, nats and bits per token, and (with ``tokens`` and ``chars``) bits per character, from a mean loss.

    ``unit`` says what the loss is in: "nats" (natural log, PyTorch) or "bits" (log base 2).
    Answer: the perplexity. Breakdown: nats_per_token, bits_per_token, perplexity,
    [bits_per_char, nats_per_char], and the mistaken figure ``ppl_wrong_base`` (2^nats or e^bits).
    """
    if unit not in ("nats", "bits"):
        raise SolverInputError(f"unit must be 'nats' or 'bits', got {unit!r}", param="unit")
    loss = float(loss)
    if not math.isfinite(loss) or loss < 0:
        raise SolverInputError(f"a cross-entropy loss is a finite number ≥ 0, got {loss}", param="loss")
    nats_of = loss if unit == "nats" else loss * math.log(2)
    if nats_of > MAX_EXP_NATS:  # e^(nats) would be beyond the largest float (an OverflowError before)
        raise SolverInputError(f"a loss of {loss:g} {unit} gives a perplexity of e^{nats_of:.6g}, beyond the largest "
                               f"number this computes with (about 1.8e308, a loss of {MAX_EXP_NATS} nats or "
                               f"{MAX_EXP_NATS / math.log(2):.2f} bits)", param="loss")
    if (tokens is None) != (chars is None):
        raise SolverInputError("bits per character needs both the token count and the character count", param="chars")
    r = Result(answer=None, unit="", convention={"loss_unit": unit, "log": "natural (nats)" if unit == "nats" else "base 2 (bits)"})
    ln2 = math.log(2)
    if unit == "nats":
        nats = r.step("loss (nats per token)", "given", loss, "nats")
        bits = r.step("bits per token = nats / ln 2", f"{fmt(loss)} / {ln2:.6f}", loss / ln2, "bits")
        wrong = 2 ** nats  # finite: nats ≤ 709.78 < 1024
    else:
        bits = r.step("loss (bits per token)", "given", loss, "bits")
        nats = r.step("nats per token = bits × ln 2", f"{fmt(loss)} × {ln2:.6f}", loss * ln2, "nats")
        wrong = math.exp(bits) if bits <= MAX_EXP_NATS else None  # the mistaken figure: none beyond a float
    ppl = r.step("perplexity = e^(nats) = 2^(bits)", f"e^{fmt(nats)}", math.exp(nats))
    r.breakdown = {"nats_per_token": nats, "bits_per_token": bits, "perplexity": ppl, "ppl_wrong_base": wrong}
    if tokens is not None:
        if int(tokens) != tokens or tokens < 1 or int(chars) != chars or chars < 1:
            raise SolverInputError("token and character counts are positive integers", param="tokens")
        bpc = r.step("bits per character = bits per token × tokens / characters",
                     f"{fmt(bits)} × {fmt(int(tokens))} / {fmt(int(chars))}", bits * tokens / chars, "bits")
        r.breakdown["bits_per_char"] = bpc
        r.breakdown["nats_per_char"] = nats * tokens / chars
    r.answer = ppl
    return r
