"""T5 buckets against HuggingFace's ``_relative_position_bucket``; ALiBi slopes re-derived from the
paper's recipe and ALiBi attention against torch; the RoPE score as a function of m − n only."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels import numpy_ref
from solver.kernels.positions_relative import (
    alibi_attention,
    rope_score,
    t5_bias_table_params,
    t5_bucket,
    t5_bucket_matrix,
    t5_linear_bucket_mistake,
)


def hf_bucket(*args, **kwargs):
    """transformers' T5 bucketing, imported when a test calls it (not at collection: issue 40)."""
    t5_modeling = pytest.importorskip("transformers.models.t5.modeling_t5")
    return t5_modeling.T5Attention._relative_position_bucket(*args, **kwargs)


@st.composite
def bucket_settings(draw):
    """(bidirectional, num_buckets, max_distance) with max_distance beyond the exact region."""
    bidirectional = draw(st.booleans())
    nb = draw(st.sampled_from((4, 8, 16, 32, 64)))
    max_exact = (nb // 2 if bidirectional else nb) // 2
    md = draw(st.integers(max_exact + 1, 512))
    return bidirectional, nb, md


@given(bucket_settings(), st.lists(st.integers(-2000, 2000), min_size=1, max_size=40))
@example((True, 32, 128), [0, -1, 1, -7, -8, 8, 9, -12, -16, -32, -64, -127, -128, -500, 500])
@example((False, 32, 128), [3, 0, -1, -15, -16, -17, -31, -32, -64, -100, -128, -1000])
def test_t5_bucket_matches_huggingface(setting, rel):
    """Every relative position falls in the bucket HuggingFace's T5 puts it in."""
    bi, nb, md = setting
    ours = [t5_bucket(r, bidirectional=bi, num_buckets=nb, max_distance=md) for r in rel]
    theirs = hf_bucket(torch.tensor(rel), bidirectional=bi, num_buckets=nb, max_distance=md).tolist()
    assert ours == theirs


def test_t5_bucket_worked_example():
    """Bidirectional, 32 buckets, max_distance 128: 16 per direction, exact below 8.
    r = −5 → bucket 5 (exact); r = +5 → 16 + 5 = 21; r = −20 → 8 + ⌊ln(20/8)/ln(16)·8⌋ = 8 + ⌊2.64⌋ = 10;
    r = −200 → capped at 15. Causal, r = −20: 32 for the past, exact below 16 → 16 + ⌊ln(20/16)/ln 8 · 16⌋ = 17."""
    assert [t5_bucket(r) for r in (-5, 5, -20, -200)] == [5, 21, 10, 15]
    b, tr = t5_bucket(-20, bidirectional=False, return_trace=True)
    assert b == 17 and tr["region"].value == "log" and tr.names()[-1] == "bucket"
    assert t5_bucket(-5, return_trace=True)[1]["region"].value == "exact"
    assert t5_linear_bucket_mistake(-20) == 15 != t5_bucket(-20)


def test_t5_bucket_matrix_and_table():
    """The matrix is the bucket of j − i; the table is num_buckets × n_heads (T5-small: 32 × 8)."""
    m = t5_bucket_matrix(3, 4, bidirectional=False)
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    assert (m == hf_bucket(torch.tensor(j - i), bidirectional=False).numpy()).all()
    assert t5_bias_table_params(32, 8) == torch.nn.Embedding(32, 8).weight.numel()


def test_t5_bucket_bad_input_is_one_line():
    with pytest.raises(SolverInputError, match="max_distance"):
        t5_bucket(3, num_buckets=32, max_distance=8)
    with pytest.raises(SolverInputError, match="num_buckets"):
        t5_bucket(3, num_buckets=7)


def paper_slopes(n):
    """ALiBi's recipe, re-derived: for a power of two n, start = 2^(−2^(−(log2 n − 3))), ratio = start;
    otherwise the closest lower power of two's slopes, then every other slope of twice that power."""
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    c = 2 ** math.floor(math.log2(n))
    return pow2(c) + paper_slopes(2 * c)[0::2][: n - c]


@given(st.integers(1, 80))
@example(8)
@example(12)
def test_alibi_slopes_follow_the_paper(h):
    """Slopes for any head count, powers of two or not, as the paper's reference code builds them."""
    np.testing.assert_allclose(numpy_ref.alibi_slopes(h), paper_slopes(h), rtol=1e-12)


def test_alibi_slopes_eight_heads():
    """h = 8: 1/2, 1/4, …, 1/256 (the paper's example)."""
    assert numpy_ref.alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]


@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_alibi_attention_matches_torch(h, n, d, causal, seed):
    """softmax(QKᵀ/√d − m_h|i − j|) V against torch's SDPA with the bias built from the paper's slopes."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((h, n, d)) for _ in range(3))
    (out, w), tr = alibi_attention(q, k, v, causal=causal, return_trace=True)
    slopes = torch.tensor(paper_slopes(h), dtype=torch.float64)[:, None, None]
    dist = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    bias = -slopes * dist.abs()
    if causal:
        bias = bias.masked_fill(dist < 0, float("-inf"))
    ref = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), attn_mask=bias)
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    assert tr.names()[:3] == ["slopes", "distance", "bias"] and "weights" in tr


def test_alibi_sign_mistake_differs():
    """A bonus for distant keys (+m·(i − j)) gives other weights than the penalty."""
    from solver.kernels.positions_relative import alibi_sign_mistake_attention
    q = k = v = np.ones((2, 3, 2))
    _, w = alibi_attention(q, k, v)
    _, w_bad = alibi_sign_mistake_attention(q, k, v)
    assert w[0, 2, 0] < w[0, 2, 2] and w_bad[0, 2, 0] > w_bad[0, 2, 2]


@given(st.integers(1, 4), st.integers(-50, 50), st.integers(-50, 50), st.integers(-30, 30),
       st.sampled_from(("interleaved", "half")), st.integers(0, 2**32 - 1))
def test_rope_score_depends_only_on_offset(half_d, m, n, shift, pairing, seed):
    """score(m, n) = score(m + s, n + s) and equals the relative form Σ (ac + bd)cos φ − (bc − ad) sin φ."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(2 * half_d), rng.standard_normal(2 * half_d)
    s, tr = rope_score(q, k, m, n, pairing=pairing, return_trace=True)
    assert s == pytest.approx(rope_score(q, k, m + shift, n + shift, pairing=pairing), abs=1e-9)
    assert s == pytest.approx(tr["relative"].value, abs=1e-9)


def test_rope_score_against_complex_numbers():
    """Independent route: q, k as complex pairs, score = Re Σ q·conj(k)·e^{i(m−n)θ}."""
    q, k, m, n = np.array([1.0, 2.0, -1.0, 0.5]), np.array([0.5, -1.0, 2.0, 1.0]), 7, 3
    theta = 10000.0 ** (-np.arange(2) / 2)
    qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    assert rope_score(q, k, m, n) == pytest.approx(float(np.real(np.sum(qc * np.conj(kc) * np.exp(1j * (m - n) * theta)))))
