"""Differential tests: solver.kernels.numpy_ref == solver.kernels.torch_ref == PyTorch's own modules.

The oracles are PyTorch's implementations, which our kernels do not call:
``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``, ``nn.LayerNorm``,
``nn.RMSNorm``, ``nn.BatchNorm1d``, ``F.gelu``, ``F.silu``, ``torch.softmax``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.nn.attention.bias import causal_lower_right

from solver.kernels import masks
from solver.kernels import numpy_ref as R
from solver.kernels import torch_ref as T
from tests.strategies import (
    AttentionShape,
    attention_shapes,
    dtypes,
    finite_arrays,
    head_configs,
    mask_cases,
    qkv_arrays,
    tol,
)

TORCH_DTYPE = {"float32": torch.float32, "float64": torch.float64}


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def close(a, b, dtype, atol: float = 0.0):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    kw = tol(dtype)
    np.testing.assert_allclose(a, b, rtol=kw["rtol"], atol=max(kw["atol"], atol))


def norm_atol(x: np.ndarray, var: np.ndarray, eps: float, gamma=None) -> float:
    """Rounding in the mean, amplified by 1/√(σ² + ε): normalising a near-constant row is
    ill-conditioned, so two correct float32 implementations differ by about u·|x|/√(σ² + ε)."""
    u = np.finfo(x.dtype).eps
    g = 1.0 if gamma is None else max(1.0, float(np.abs(gamma).max()))
    return 8 * u * g * max(1.0, float(np.abs(x).max())) / math.sqrt(float(var.min()) + eps)


# ----------------------------------------------------------------------------- attention


@given(st.data())
def test_attention_matches_sdpa_with_every_mask_kind(data):
    """numpy_ref == torch_ref == SDPA for no mask, a KEEP mask, a BLOCK mask (converted by
    solver.kernels.masks for SDPA, passed as "block" to ours) and an additive float mask."""
    shape, dtype, q, k, v = data.draw(qkv_arrays())
    kind, mask, _ = data.draw(mask_cases(shape.scores, dtype))
    scale = data.draw(st.none() | st.floats(0.1, 2.0))
    convention = masks.BLOCK if kind == "block" else masks.KEEP
    out_np, w_np = R.attention(q, k, v, mask, mask_convention=convention, scale=scale)
    out_t, w_t = T.attention(t(q), t(k), t(v), None if mask is None else t(mask), mask_convention=convention, scale=scale)
    sdpa_mask = None if mask is None else t(masks.to_keep(mask, masks.BLOCK) if kind == "block" else mask)
    expected = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=sdpa_mask, scale=scale)
    assert out_np.dtype == np.dtype(dtype) and out_t.dtype == TORCH_DTYPE[dtype]
    close(out_np, expected, dtype)
    close(out_t, expected, dtype)
    close(w_np, w_t, dtype)


@given(qkv_arrays(shape=attention_shapes(square=True)))
def test_causal_square_matches_sdpa_is_causal(case):
    """For n == m the causal flag is PyTorch's is_causal (both alignments coincide)."""
    _, dtype, q, k, v = case
    expected = F.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=True)
    close(R.attention(q, k, v, causal=True)[0], expected, dtype)
    close(T.attention(t(q), t(k), t(v), causal=True)[0], expected, dtype)


@given(st.data())
def test_causal_rectangular_is_bottom_right(data):
    """With m ≥ n keys the causal mask is aligned bottom-right, as torch's causal_lower_right."""
    n = data.draw(st.integers(1, 5))
    m = data.draw(st.integers(n, 6))
    _, dtype, q, k, v = data.draw(qkv_arrays(shape=AttentionShape((), n, m, 3, 2)))
    expected = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=causal_lower_right(n, m)._materialize())
    close(R.attention(q, k, v, causal=True)[0], expected, dtype)
    close(T.attention(t(q), t(k), t(v), causal=True)[0], expected, dtype)


@given(st.data())
def test_empty_rows_zero_matches_sdpa(data):
    """empty_rows="zero" gives what this PyTorch's SDPA gives for a fully blocked row: zeros."""
    shape, dtype, q, k, v = data.draw(qkv_arrays())
    keep = np.ones(shape.scores, dtype=bool)
    row = data.draw(st.integers(0, shape.n - 1))
    keep[..., row, :] = False
    expected = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(keep))
    out, w = R.attention(q, k, v, keep, empty_rows="zero")
    close(out, expected, dtype)
    assert np.all(w[..., row, :] == 0)
    close(T.attention(t(q), t(k), t(v), t(keep), empty_rows="zero")[0], expected, dtype)


# ----------------------------------------------------------------------------- multi-head


def _mha_module(d_model: int, h: int, bias: bool, dtype: str, seed: int) -> nn.MultiheadAttention:
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True, dtype=TORCH_DTYPE[dtype])
    if bias:  # torch initialises the in-projection bias to zero: make it count
        with torch.no_grad():
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    return mha.eval()


def _unpack(mha: nn.MultiheadAttention) -> dict:
    """nn.MultiheadAttention's packed (3E, E) in_proj_weight → our d_in × d_out matrices."""
    E = mha.embed_dim
    W = mha.in_proj_weight.detach().numpy()
    out = dict(wq=W[:E].T, wk=W[E : 2 * E].T, wv=W[2 * E :].T, wo=mha.out_proj.weight.detach().numpy().T)
    if mha.in_proj_bias is not None:
        b = mha.in_proj_bias.detach().numpy()
        out.update(bq=b[:E], bk=b[E : 2 * E], bv=b[2 * E :], bo=mha.out_proj.bias.detach().numpy())
    return out


@given(st.data())
def test_multi_head_attention_matches_nn_multiheadattention(data):
    """Our MHA with the unpacked weights == nn.MultiheadAttention (outputs and per-head
    weights), with an nn-style BLOCK attn_mask and a key_padding_mask."""
    cfg = data.draw(head_configs(gqa=False))
    dtype = data.draw(dtypes)
    B, n = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 4))
    x = data.draw(finite_arrays((B, n, cfg.d_model), dtype))
    bias = data.draw(st.booleans())
    mha = _mha_module(cfg.d_model, cfg.n_heads, bias, dtype, data.draw(st.integers(0, 1000)))
    causal = data.draw(st.booleans())
    lengths = data.draw(st.lists(st.integers(n, n) if causal else st.integers(1, n), min_size=B, max_size=B))
    pad_keep = masks.padding_mask(np.array(lengths), n)  # (B, 1, n)
    attn_block = ~masks.causal_mask(n) if causal else None
    expected, exp_w = mha(
        t(x), t(x), t(x), key_padding_mask=t(~pad_keep[:, 0, :]),
        attn_mask=None if attn_block is None else t(attn_block), need_weights=True, average_attn_weights=False,
    )
    W = _unpack(mha)
    out, w = R.multi_head_attention(x, n_heads=cfg.n_heads, mask=pad_keep, causal=causal, **W)
    close(out, expected, dtype)
    close(w, exp_w, dtype)
    out_t, w_t = T.multi_head_attention(t(x), n_heads=cfg.n_heads, mask=t(pad_keep), causal=causal, **W)
    close(out_t, expected, dtype)
    # the same mask given in nn's own convention
    out_b, _ = R.multi_head_attention(x, n_heads=cfg.n_heads, mask=~pad_keep, mask_convention="block", causal=causal, **W)
    close(out_b, expected, dtype)


@given(st.data())
def test_cross_attention_matches_nn_multiheadattention(data):
    """kv= gives keys and values from another sequence (m ≠ n), as mha(query, key, value)."""
    cfg = data.draw(head_configs(gqa=False))
    n, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    x = data.draw(finite_arrays((1, n, cfg.d_model)))
    z = data.draw(finite_arrays((1, m, cfg.d_model)))
    mha = _mha_module(cfg.d_model, cfg.n_heads, True, "float64", 0)
    expected, _ = mha(t(x), t(z), t(z), need_weights=False)
    close(R.multi_head_attention(x, kv=z, n_heads=cfg.n_heads, **_unpack(mha))[0], expected, "float64")


def _gqa_reference(x, wq, wk, wv, wo, h, h_kv):
    """Grouped-query attention head by head: query head i uses K/V head i // (h/h_kv)."""
    d_head = wq.shape[1] // h
    X = t(x)
    Q, K, V = X @ t(wq), X @ t(wk), X @ t(wv)
    heads = []
    for i in range(h):
        g = i // (h // h_kv)
        qi = Q[..., i * d_head : (i + 1) * d_head]
        ki = K[..., g * d_head : (g + 1) * d_head]
        vi = V[..., g * d_head : (g + 1) * d_head]
        heads.append(F.scaled_dot_product_attention(qi, ki, vi))
    return torch.cat(heads, dim=-1) @ t(wo)


@given(st.data())
def test_grouped_query_attention_matches_per_head_sdpa(data):
    """MQA/GQA (n_kv_heads dividing n_heads) == SDPA run head by head with the shared K/V head,
    and == SDPA's own enable_gqa."""
    cfg = data.draw(head_configs())
    dtype = data.draw(dtypes)
    n = data.draw(st.integers(2, 4))  # with one key the weights are 1 whatever K is
    d, dh, hk = cfg.d_model, cfg.d_head, cfg.n_kv_heads
    x = data.draw(finite_arrays((2, n, d), dtype))
    wq = data.draw(finite_arrays((d, d), dtype, 1.0))
    wk = data.draw(finite_arrays((d, hk * dh), dtype, 1.0))
    wv = data.draw(finite_arrays((d, hk * dh), dtype, 1.0))
    wo = data.draw(finite_arrays((d, d), dtype, 1.0))
    expected = _gqa_reference(x, wq, wk, wv, wo, cfg.n_heads, hk)
    out, w = R.multi_head_attention(x, wq, wk, wv, wo, n_heads=cfg.n_heads, n_kv_heads=hk)
    assert w.shape == (2, cfg.n_heads, n, n)
    close(out, expected, dtype)
    close(T.multi_head_attention(t(x), wq, wk, wv, wo, n_heads=cfg.n_heads, n_kv_heads=hk)[0], expected, dtype)
    # enable_gqa: heads as (B, h, n, d_head)
    split = lambda a, heads: t(a).reshape(2, n, heads, dh).transpose(1, 2)  # noqa: E731
    o = F.scaled_dot_product_attention(split(x @ wq, cfg.n_heads), split(x @ wk, hk), split(x @ wv, hk), enable_gqa=True)
    close(out, o.transpose(1, 2).reshape(2, n, d) @ t(wo), dtype)


# ----------------------------------------------------------------------------- norms


@given(st.data())
def test_layer_norm_matches_nn_layernorm(data):
    dtype = data.draw(dtypes)
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(2, 6)))
    x = data.draw(finite_arrays(shape, dtype))
    gamma = data.draw(finite_arrays(shape[-1:], dtype))
    beta = data.draw(finite_arrays(shape[-1:], dtype))
    eps = data.draw(st.sampled_from([1e-5, 1e-3, 0.5]))
    ln = nn.LayerNorm(shape[-1], eps=eps, dtype=TORCH_DTYPE[dtype])
    with torch.no_grad():
        ln.weight.copy_(t(gamma))
        ln.bias.copy_(t(beta))
    expected = ln(t(x))
    atol = norm_atol(x, x.astype(np.float64).var(axis=-1), eps, gamma)
    close(R.layer_norm(x, gamma, beta, eps=eps), expected, dtype, atol)
    close(T.layer_norm(t(x), t(gamma), t(beta), eps=eps), expected, dtype, atol)


@given(st.data())
def test_rms_norm_matches_nn_rmsnorm(data):
    dtype = data.draw(dtypes)
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(1, 6)))
    x = data.draw(finite_arrays(shape, dtype))
    gamma = data.draw(finite_arrays(shape[-1:], dtype))
    eps = data.draw(st.sampled_from([1e-6, 1e-3, 0.5]))
    rn = nn.RMSNorm(shape[-1], eps=eps, dtype=TORCH_DTYPE[dtype])
    with torch.no_grad():
        rn.weight.copy_(t(gamma))
    expected = rn(t(x))
    close(R.rms_norm(x, gamma, eps=eps), expected, dtype)
    close(T.rms_norm(t(x), t(gamma), eps=eps), expected, dtype)


@given(st.data())
def test_batch_norm_matches_nn_batchnorm1d_in_training_mode(data):
    """(B, d) input directly, and (B, n, d) as BatchNorm1d's (B, d, n) layout."""
    dtype = data.draw(dtypes)
    B, n, d = data.draw(st.integers(2, 4)), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    x = data.draw(finite_arrays((B, n, d), dtype))
    gamma = data.draw(finite_arrays((d,), dtype))
    beta = data.draw(finite_arrays((d,), dtype))
    bn = nn.BatchNorm1d(d, eps=1e-5, dtype=TORCH_DTYPE[dtype]).train()
    with torch.no_grad():
        bn.weight.copy_(t(gamma))
        bn.bias.copy_(t(beta))
    expected = bn(t(x).transpose(1, 2)).transpose(1, 2)
    atol = norm_atol(x, x.astype(np.float64).var(axis=(0, 1)), 1e-5, gamma)
    close(R.batch_norm(x, gamma, beta), expected, dtype, atol)
    close(T.batch_norm(t(x), t(gamma), t(beta)), expected, dtype, atol)
    atol = norm_atol(x, x[:, 0].astype(np.float64).var(axis=0), 1e-5, gamma)
    close(R.batch_norm(x[:, 0], gamma, beta), bn(t(x[:, 0])), dtype, atol)


# ----------------------------------------------------------------------------- softmax, activations


@given(st.data())
def test_softmax_and_log_softmax_match_torch(data):
    dtype = data.draw(dtypes)
    x = data.draw(finite_arrays(data.draw(st.tuples(st.integers(1, 3), st.integers(1, 5))), dtype, 50.0))
    axis = data.draw(st.sampled_from([0, 1, -1]))
    temp = data.draw(st.sampled_from([1.0, 0.5, 3.0]))
    expected = torch.softmax(t(x) / temp, dim=axis)
    close(R.softmax(x, axis=axis, temperature=temp), expected, dtype)
    close(T.softmax(t(x), axis=axis, temperature=temp), expected, dtype)
    close(R.log_softmax(x, axis=axis), torch.log_softmax(t(x), dim=axis), dtype)
    close(T.log_softmax(t(x), axis=axis), torch.log_softmax(t(x), dim=axis), dtype)


@given(st.data())
def test_gelu_matches_torch_in_both_modes(data):
    dtype = data.draw(dtypes)
    x = data.draw(finite_arrays((data.draw(st.integers(1, 12)),), dtype, 8.0))
    for mode in ("none", "tanh"):
        expected = F.gelu(t(x), approximate=mode)
        close(R.gelu(x, approximate=mode), expected, dtype)
        close(T.gelu(t(x), approximate=mode), expected, dtype)
    close(R.relu(x), F.relu(t(x)), dtype)


@given(st.data())
def test_ffn_and_swiglu_match_torch_modules(data):
    """FFN == Linear → activation → Linear (weights transposed into nn.Linear's layout);
    SwiGLU == F.silu(x W_gate) * (x W_up) then W_down."""
    dtype = data.draw(dtypes)
    d, d_ff = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    x = data.draw(finite_arrays((2, d), dtype))
    w1, w2 = data.draw(finite_arrays((d, d_ff), dtype)), data.draw(finite_arrays((d_ff, d), dtype))
    b1, b2 = data.draw(finite_arrays((d_ff,), dtype)), data.draw(finite_arrays((d,), dtype))
    act_name = data.draw(st.sampled_from(["relu", "gelu", "gelu_tanh"]))
    act = {"relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh")}[act_name]
    l1, l2 = nn.Linear(d, d_ff, dtype=TORCH_DTYPE[dtype]), nn.Linear(d_ff, d, dtype=TORCH_DTYPE[dtype])
    with torch.no_grad():
        l1.weight.copy_(t(w1.T))
        l1.bias.copy_(t(b1))
        l2.weight.copy_(t(w2.T))
        l2.bias.copy_(t(b2))
    expected = nn.Sequential(l1, act, l2)(t(x))
    close(R.ffn(x, w1, b1, w2, b2, activation=act_name), expected, dtype)
    close(T.ffn(t(x), t(w1), t(b1), t(w2), t(b2), activation=act_name), expected, dtype)
    wg = data.draw(finite_arrays((d, d_ff), dtype))
    expected = (F.silu(t(x) @ t(wg)) * (t(x) @ t(w1))) @ t(w2)
    close(R.swiglu(x, wg, w1, w2), expected, dtype)
    close(T.swiglu(t(x), t(wg), t(w1), t(w2)), expected, dtype)


# ----------------------------------------------------------------------------- positions


@given(st.integers(1, 12), st.integers(1, 9), st.sampled_from(["interleaved", "concat"]))
def test_sinusoidal_pe_numpy_equals_torch_and_pe_value(n, d, layout):
    pe = R.sinusoidal_pe(n, d, layout=layout)
    np.testing.assert_allclose(pe, T.sinusoidal_pe(n, d, layout=layout).numpy(), rtol=0, atol=1e-15)
    for pos in range(n):
        for dim in range(d):
            assert pe[pos, dim] == pytest.approx(R.pe_value(pos, dim, d, layout=layout), abs=1e-15)


@given(st.data())
def test_rope_numpy_equals_torch(data):
    dtype = data.draw(dtypes)
    n, d = data.draw(st.integers(1, 5)), 2 * data.draw(st.integers(1, 4))
    x = data.draw(finite_arrays((2, n, d), dtype))
    pos = np.array(data.draw(st.lists(st.integers(0, 500), min_size=n, max_size=n)))
    for pairing in ("interleaved", "half"):
        close(R.rope(x, pos, pairing=pairing), T.rope(t(x), t(pos), pairing=pairing), dtype)


@given(st.integers(1, 12), st.integers(1, 5), st.integers(0, 3))
def test_alibi_numpy_equals_torch(h, n, extra):
    np.testing.assert_array_equal(R.alibi_bias(h, n, n + extra), T.alibi_bias(h, n, n + extra).numpy())


def test_alibi_bias_reproduces_the_paper_decoder_form():
    """ALiBi adds −m·(i − j) to score (i, j), j ≤ i: with h = 2 the slopes are 2^(−4), 2^(−8)
    (2^(−8k/h)), so row 2 of head 0 is (−2/16, −1/16, 0); attending with it equals SDPA with
    that bias as an additive mask."""
    b = R.alibi_bias(2, 3)
    np.testing.assert_array_equal(b[0, 2], [-2 / 16, -1 / 16, 0.0])
    assert np.isneginf(b[1, 0, 1:]).all()
    q = np.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4)
    expected = F.scaled_dot_product_attention(t(q), t(q), t(q), attn_mask=t(b))
    close(R.attention(q, q, q, b)[0], expected, "float64")
    assert math.isclose(R.alibi_slopes(2)[1], 2**-8)
