"""Cross-entropy against F.cross_entropy (label smoothing too), perplexity identities, and the
sampling sets against HuggingFace's Temperature/TopK/TopP logits warpers."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, example, given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels.loss import cross_entropy, perplexity
from solver.kernels.sampling import sampling_set

logits_rows = st.integers(2, 8).flatmap(
    lambda c: st.lists(st.lists(st.floats(-10, 10, allow_nan=False), min_size=c, max_size=c), min_size=1, max_size=5))


@given(logits_rows, st.data(), st.sampled_from((0.0, 0.1, 0.25, 1.0)), st.sampled_from(("mean", "sum", "none")))
def test_cross_entropy_matches_torch(rows, data, eps, reduction):
    """CE (nats) with PyTorch's label smoothing: (1 − ε)·(−ln p_y) + ε·mean(−ln p)."""
    C = len(rows[0])
    y = data.draw(st.lists(st.integers(0, C - 1), min_size=len(rows), max_size=len(rows)))
    ours = cross_entropy(rows, y, label_smoothing=eps, reduction=reduction)
    ref = F.cross_entropy(torch.tensor(rows, dtype=torch.float64), torch.tensor(y), label_smoothing=eps, reduction=reduction)
    np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_worked_example():
    """z = (2, 1, 0), y = 0: logsumexp = 2 + ln(1 + e⁻¹ + e⁻²) = 2.407606; CE = 0.407606 nats."""
    loss, tr = cross_entropy([[2.0, 1.0, 0.0]], [0], return_trace=True)
    assert loss == pytest.approx(0.4076059644)
    assert tr.names() == ["shifted", "logsumexp", "log_probs", "nll", "output"]


def test_cross_entropy_bad_target():
    with pytest.raises(SolverInputError, match="target"):
        cross_entropy([[1.0, 2.0]], [2])


@given(st.floats(0.01, 12), st.integers(1, 10**6), st.integers(1, 10**7))
@example(2.0, 100, 400)
def test_perplexity_identities(loss, tokens, chars):
    """e^nats = 2^bits; the same loss given in bits gives the same perplexity; bpc = total bits / characters."""
    r = perplexity(loss, tokens=tokens, chars=chars)
    assert r.answer == pytest.approx(2 ** r.breakdown["bits_per_token"], rel=1e-12)
    assert perplexity(r.breakdown["bits_per_token"], unit="bits").answer == pytest.approx(r.answer, rel=1e-12)
    total_bits = loss * tokens / math.log(2)
    assert r.breakdown["bits_per_char"] == pytest.approx(total_bits / chars, rel=1e-12)
    assert r.breakdown["ppl_wrong_base"] == pytest.approx(2**loss) != r.answer


def hf_set(logits, temperature, top_k, top_p):
    """The tokens HF's warpers leave finite, in generate's order (temperature, top-k, top-p)."""
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    s = torch.tensor([logits], dtype=torch.float64)
    s = TemperatureLogitsWarper(temperature)(None, s)
    if top_k is not None:
        s = TopKLogitsWarper(top_k)(None, s)
    if top_p is not None:
        s = TopPLogitsWarper(top_p)(None, s)
    return set(torch.nonzero(torch.isfinite(s[0])).flatten().tolist())


@given(st.lists(st.integers(-40, 40), min_size=2, max_size=10, unique=True), st.sampled_from((0.5, 0.7, 1.0, 1.5, 2.0)),
       st.one_of(st.none(), st.integers(1, 6)), st.one_of(st.none(), st.floats(0.05, 0.99)))
def test_sampling_set_matches_huggingface(ints, temperature, top_k, top_p):
    """Our kept set equals the tokens HuggingFace's warpers keep (crossing token included)."""
    pytest.importorskip("transformers")
    logits = [x / 8 for x in ints]
    (kept, probs), tr = sampling_set(logits, temperature=temperature, top_k=top_k, top_p=top_p, return_trace=True)
    if top_p is not None:  # a cumulative sum within rounding of p: the border is decided by float noise
        assume(np.min(np.abs(tr["cumulative"].value - top_p)) > 1e-9)
    assert set(kept) == hf_set(logits, temperature, top_k, top_p)
    assert probs.sum() == pytest.approx(1.0)


def test_top_p_worked_example():
    """p = (0.5, 0.3, 0.15, 0.05) (logits ln p), top-p 0.7: 0.5 < 0.7, 0.5 + 0.3 = 0.8 crosses 0.7 → {0, 1},
    renormalised 0.625, 0.375. Leaving the crossing token out gives {0}."""
    z = np.log([0.5, 0.3, 0.15, 0.05])
    kept, probs = sampling_set(z, top_p=0.7)
    assert kept == [0, 1] and probs[:2] == pytest.approx([0.625, 0.375])
    assert sampling_set(z, top_p=0.7, crossing="exclude")[0] == [0]


def test_temperature_sharpens():
    """T < 1 sharpens: at T = 0.5 the top probability of (0.5, 0.3, 0.2) rises to 25/38."""
    _, probs = sampling_set(np.log([0.5, 0.3, 0.2]), temperature=0.5)
    assert probs[0] == pytest.approx(0.25 / 0.38)


def test_top_k_keeps_ties():
    """HF's top-k keeps every logit equal to the k-th largest: top-1 of (1, 2, 2, 0) keeps both 2s."""
    assert sampling_set([1.0, 2.0, 2.0, 0.0], top_k=1)[0] == [1, 2] and hf_set([1.0, 2.0, 2.0, 0.0], 1.0, 1, None) == {1, 2}
    assert sorted(sampling_set([1.0, 2.0, 1.0, 0.0], top_k=2)[0]) == [0, 1, 2]
