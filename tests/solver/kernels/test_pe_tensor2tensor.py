"""The tensor2tensor sinusoid layout: its own timescales, and the figure that claims it.

tensor2tensor's ``get_timing_signal_1d`` (common_attention.py) spaces n = channels // 2 timescales
geometrically between min_timescale = 1 and max_timescale = 1e4: log_timescale_increment =
log(max/min) / max(n − 1, 1), inv_timescales = min · exp(−i · increment), signal = [sin | cos] of
position × inv_timescales, padded with one zero column when channels is odd. The test re-derives it
that way (logs and exponentials, not the powers the solver uses) and compares the NumPy, Torch and
SymPy references with it.

The Illustrated Transformer (Alammar 2018), "a real example of positional encoding with a toy
embedding size of 4": position 1 is [0.84, 0.0001, 0.54, 1] (printed to 2 or 4 digits). The
paper's frequencies give 0.01 in the second column (10000^(−2/4)), so only the tensor2tensor
layout produces the figure.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.kernels import numpy_ref as N
from solver.kernels import sympy_ref as R
from solver.kernels import torch_ref as T


def t2t_signal(length: int, channels: int, min_timescale: float = 1.0, max_timescale: float = 1e4) -> np.ndarray:
    n = channels // 2
    increment = math.log(max_timescale / min_timescale) / max(n - 1, 1)
    inv = min_timescale * np.exp(np.arange(n) * -increment)
    scaled = np.arange(length)[:, None] * inv[None, :]
    signal = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    return np.pad(signal, [[0, 0], [0, channels % 2]])


@given(n=st.integers(1, 6), d=st.integers(1, 9))
def test_tensor2tensor_layout_equals_its_get_timing_signal_1d_hypo(n, d):
    expected = t2t_signal(n, d)
    np.testing.assert_allclose(N.sinusoidal_pe(n, d, layout="tensor2tensor"), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(T.sinusoidal_pe(n, d, layout="tensor2tensor").numpy(), expected, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(np.array(R.sinusoidal_pe(n, d, layout="tensor2tensor")).astype(float), expected,
                               rtol=1e-12, atol=1e-12)
    for pos in range(n):
        for dim in range(d):
            assert N.pe_value(pos, dim, d, layout="tensor2tensor") == pytest.approx(expected[pos, dim], abs=1e-12)
            assert float(R.pe_value(pos, dim, d, layout="tensor2tensor")) == pytest.approx(expected[pos, dim],
                                                                                           abs=1e-12)


def test_the_illustrated_transformers_figure_comes_from_the_tensor2tensor_layout():
    figure_row_1 = [0.84, 0.0001, 0.54, 1.0]
    digits = [2, 4, 2, 2]
    t2t = N.sinusoidal_pe(2, 4, layout="tensor2tensor")[1]
    assert [round(v, k) for v, k in zip(t2t, digits, strict=True)] == figure_row_1
    paper = N.sinusoidal_pe(2, 4, layout="concat")[1]  # the paper's frequencies, sines first
    assert [round(v, k) for v, k in zip(paper, digits, strict=True)] != figure_row_1
    assert round(paper[1], 4) == 0.01
