"""Kernels at the edges of the float range (issue 28): a subnormal temperature, LayerNorm and
RMSNorm of numbers whose squares overflow. Each answer is checked against an independent
computation in 60-digit decimal arithmetic (``decimal``), and through the real command line: the
answer printed, and no NumPy warning on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from solver.kernels.numpy_ref import layer_norm, rms_norm
from solver.kernels.sampling import sampling_set

REPO = Path(__file__).resolve().parents[3]


def qkv(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env, timeout=120)


def _ln_decimal(x: list[float], eps: float) -> list[float]:
    with localcontext() as ctx:
        ctx.prec = 60
        d = [Decimal(v) for v in x]
        mu = sum(d) / len(d)
        var = sum((v - mu) ** 2 for v in d) / len(d)
        den = (var + Decimal(eps)).sqrt()
        return [float((v - mu) / den) for v in d]


def _rms_decimal(x: list[float], eps: float) -> list[float]:
    with localcontext() as ctx:
        ctx.prec = 60
        d = [Decimal(v) for v in x]
        den = (sum(v * v for v in d) / len(d) + Decimal(eps)).sqrt()
        return [float(v / den) for v in d]


finite_rows = st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e308, max_value=1e308),
                       min_size=2, max_size=6)


@given(finite_rows, st.sampled_from([1e-5, 1e-6, 0.1]))
def test_layernorm_of_any_finite_row_matches_decimal(x, eps):
    """LN(x) over the whole float range equals the 60-digit decimal value, to 1e-9 or to what float64
    can hold for the row: subtracting the mean loses about max|x|/σ units in the last place (a row of
    5e59 ± 1.5e52 keeps only 1e-8 of the difference), so the tolerance grows with that ratio."""
    want = _ln_decimal(x, eps)
    sigma = float(np.std(np.array(x, dtype=np.longdouble))) or 1.0
    cond = max(abs(v) for v in x) / sigma if sigma else 1.0
    rtol = max(1e-9, 16 * 2.0**-52 * cond)
    np.testing.assert_allclose(layer_norm(np.array(x), eps=eps), want, rtol=rtol, atol=rtol)  # outputs are O(1)


@given(finite_rows, st.sampled_from([1e-5, 1e-6, 0.1]))
def test_rmsnorm_of_any_finite_row_matches_decimal(x, eps):
    np.testing.assert_allclose(rms_norm(np.array(x), eps=eps), _rms_decimal(x, eps), rtol=1e-9, atol=1e-12)


def test_the_trial_cases_through_the_command_line():
    out = qkv("solve", "layernorm", "--x", "1e300 -1e300 1e300", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    np.testing.assert_allclose(json.loads(out.stdout)["answer"], [2**-0.5, -(2**0.5), 2**-0.5], rtol=1e-12)
    out = qkv("solve", "rmsnorm", "--x", "1e300 1e300", "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    np.testing.assert_allclose(json.loads(out.stdout)["answer"], [1.0, 1.0], rtol=1e-12)
    # a subnormal temperature is refused by the command line's number type (issue 23's one rule: no
    # magnitude below 1e-30); the kernel itself is stable there (the property below)
    out = qkv("solve", "sampling", "--logits", "2 1 0.5 0", "--temperature", "1e-320", "--top-p", "0.9", "--json")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--temperature" in out.stderr, out.stderr


@given(st.lists(st.integers(-50, 50), min_size=2, max_size=6, unique=True),
       st.floats(min_value=5e-324, max_value=1e-300))
def test_a_tiny_temperature_keeps_the_largest_logit_only(logits, t):
    """As T → 0, softmax(z/T) puts all its mass on the largest logit (distinct integers)."""
    kept, probs = sampling_set(logits, temperature=t, top_p=0.9)
    assert kept == [int(np.argmax(logits))]
    assert probs[np.argmax(logits)] == 1.0


def test_top_k_under_a_tiny_temperature_keeps_k_tokens():
    """Overflow makes no ties: top-2 of distinct logits keeps exactly two tokens."""
    kept, _ = sampling_set([2, 1, 0.5, 0], temperature=1e-320, top_k=2)
    assert sorted(kept) == [0, 1]


def test_an_overflowing_kernel_is_one_line_not_a_warning():
    out = qkv("solve", "attention", "--q", "1e200 1e200", "--k", "1e200 1e200", "--v", "1 2")
    assert out.returncode == 2
    [line] = out.stderr.splitlines()
    assert line.startswith("qkv: error: the numbers are beyond what 64-bit floats hold here")
