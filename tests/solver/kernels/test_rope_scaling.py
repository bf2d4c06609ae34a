"""RoPE scaling (solver.kernels.rope_scaling) against the rope initialisation functions of
HuggingFace transformers (test-only), method by method, and the wavelengths by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.kernels.rope_scaling import rope_scaling

torch = pytest.importorskip("torch")
rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig


def hf_inv_freq(fn, d, base, params, max_pos, seq_len=None):
    cfg = LlamaConfig(hidden_size=d * 2, num_attention_heads=2, head_dim=d, max_position_embeddings=max_pos,
                      rope_parameters={"rope_theta": base, **params})
    inv, att = fn(cfg, "cpu", seq_len)
    return inv.double().numpy(), float(att)


heads = st.sampled_from([8, 16, 64, 128])
bases = st.sampled_from([10_000.0, 500_000.0, 1_000_000.0])
factors = st.sampled_from([2.0, 4.0, 8.0, 16.0, 32.0])


@given(heads, bases, factors)
def test_linear_matches_transformers(d, base, s):
    inv, _ = hf_inv_freq(rope_utils._compute_linear_scaling_rope_parameters, d, base,
                         {"rope_type": "linear", "factor": s}, 4096)
    r = rope_scaling(d, base=base, method="linear", factor=s, original=4096)
    np.testing.assert_allclose(r.breakdown["scaled_theta"], inv, rtol=1e-6)


@given(heads, bases, factors, st.integers(4096, 4 * 32768))
def test_dynamic_ntk_matches_transformers(d, base, s, n):
    inv, _ = hf_inv_freq(rope_utils._compute_dynamic_ntk_parameters, d, base,
                         {"rope_type": "dynamic", "factor": s}, 4096, seq_len=n)
    r = rope_scaling(d, base=base, method="dynamic", factor=s, original=4096, seq_len=n)
    np.testing.assert_allclose(r.breakdown["scaled_theta"], inv, rtol=1e-5)


@given(heads, factors)
def test_static_ntk_is_dynamic_at_the_length_giving_alpha_s(d, s):
    """Static NTK base·s^(d/(d−2)) equals HF's dynamic at n with s·n/L − (s − 1) = s, i.e. n = L(2s − 1)/s."""
    L = 4096
    n = L * (2 * s - 1) / s
    inv, _ = hf_inv_freq(rope_utils._compute_dynamic_ntk_parameters, d, 10_000.0,
                         {"rope_type": "dynamic", "factor": s}, L, seq_len=n)
    np.testing.assert_allclose(rope_scaling(d, method="ntk", factor=s, original=L).breakdown["scaled_theta"], inv,
                               rtol=1e-5)


@given(heads, bases, factors, st.sampled_from([2048, 4096, 8192]), st.booleans())
def test_yarn_matches_transformers(d, base, s, L, truncate):
    inv, att = hf_inv_freq(rope_utils._compute_yarn_parameters, d, base,
                           {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L,
                            "truncate": truncate}, int(L * s))
    r = rope_scaling(d, base=base, method="yarn", factor=s, original=L, truncate=truncate)
    np.testing.assert_allclose(r.breakdown["scaled_theta"], inv, rtol=1e-5)
    assert r.breakdown["attention_factor"] == pytest.approx(att, rel=1e-12)


def test_wavelengths_by_hand():
    """d = 4, base 10,000: θ = (1, 1/100), λ = (2π, 200π). NTK with s = 4: base' = 10⁴·4^(4/2) =
    160,000, so pair 1's θ' = 1/400 (interpolated by exactly s) and pair 0 unchanged."""
    r = rope_scaling(4, method="ntk", factor=4)
    assert r.breakdown["wavelength"] == pytest.approx([2 * math.pi, 200 * math.pi])
    assert r.breakdown["new_base"] == pytest.approx(160_000)
    assert r.breakdown["scaled_theta"] == pytest.approx([1, 1 / 400])
    assert rope_scaling(4, method="linear", factor=4, pair=1).answer == pytest.approx(800 * math.pi)


def test_odd_size_refused():
    with pytest.raises(SolverInputError):
        rope_scaling(7)
