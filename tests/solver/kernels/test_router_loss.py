"""Router losses (solver.kernels.router_loss) against loops written here and against HuggingFace's
Mixtral ``load_balancing_loss_func`` (test-only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from solver.kernels.router_loss import router_losses


def by_loops(x, k, alpha, f_per):
    T, E = len(x), len(x[0])
    counts, P, z = [0] * E, [0.0] * E, 0.0
    for row in x:
        lse = math.log(sum(math.exp(v) for v in row))
        z += lse * lse / T
        for i, v in enumerate(row):
            P[i] += math.exp(v - lse) / T
        for i in sorted(range(E), key=lambda i: (-row[i], i))[:k]:
            counts[i] += 1
    div = T * k if f_per == "assignments" else T
    return alpha * E * sum(c / div * p for c, p in zip(counts, P, strict=True)), z


logits = st.tuples(st.integers(1, 6), st.integers(2, 6)).flatmap(
    lambda s: hnp.arrays(np.float64, s, elements=st.floats(-8, 8)))


@given(logits, st.data())
def test_losses_match_loops(x, data):
    k = data.draw(st.integers(1, x.shape[1]))
    f_per = data.draw(st.sampled_from(["assignments", "tokens"]))
    lb, z = by_loops(x.tolist(), k, 0.01, f_per)
    r = router_losses(x, top_k=k, alpha=0.01, f_per=f_per)
    assert r.answer == pytest.approx(lb, rel=1e-9, abs=1e-15)
    assert r.breakdown["z_loss"] == pytest.approx(z, rel=1e-9)


def test_uniform_routing_gives_alpha():
    """Each of E tokens goes to a different expert with equal router probabilities... f = P = 1/E."""
    x = np.eye(4) * 1e-9  # argmax differs per row, probabilities ≈ 1/4
    assert router_losses(x, alpha=0.01).answer == pytest.approx(0.01, rel=1e-6)


def test_worked_example():
    """Logits [[1, 2, 0], [0, 0, 3]], top-1: token 1 → expert 2, token 2 → expert 3; f = (0, ½, ½).
    P_2 = (e²/(1+e+e²) + 1/(2+e³))/2, P_3 = (1/(1+e+e²) + e³/(2+e³))/2; loss = 3·(P_2 + P_3)/2."""
    e = math.e
    P2 = (e**2 / (1 + e + e**2) + 1 / (2 + e**3)) / 2
    P3 = (1 / (1 + e + e**2) + e**3 / (2 + e**3)) / 2
    r = router_losses([[1, 2, 0], [0, 0, 3]])
    assert r.answer == pytest.approx(3 * (P2 + P3) / 2, rel=1e-12)
    z = (math.log(1 + e + e**2) ** 2 + math.log(2 + e**3) ** 2) / 2
    assert r.breakdown["z_loss"] == pytest.approx(z, rel=1e-12)


def test_against_transformers_mixtral():
    torch = pytest.importorskip("torch")
    mixtral = pytest.importorskip("transformers.models.mixtral.modeling_mixtral")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 8))
    hf = mixtral.load_balancing_loss_func((torch.tensor(x, dtype=torch.float32),), 8, 2)
    assert router_losses(x, top_k=2, f_per="tokens").answer == pytest.approx(float(hf), rel=1e-5)
