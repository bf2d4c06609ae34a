"""FlashAttention's block sizes and HBM counts (solver.systems.flash_attention) against a tiled
attention written here in NumPy that counts every element it moves between "HBM" and "SRAM"."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.flash_attention import block_sizes, flash_attention


class HBM:
    """Arrays in 'HBM': every slice read or written is counted, element by element."""

    def __init__(self):
        self.reads = self.writes = 0

    def load(self, a):
        self.reads += a.size
        return a.copy()

    def store(self, dst, idx, a):
        self.writes += np.asarray(a).size
        dst[idx] = a


def flash_v1(q, k, v, br, bc, hbm):
    """Dao et al. 2022, Algorithm 1 (no dropout, no mask), loads and stores through ``hbm``."""
    n, d = q.shape
    o, ell, m = np.empty((n, d)), np.empty(n), np.empty(n)
    hbm.store(o, slice(None), np.zeros((n, d)))
    hbm.store(ell, slice(None), np.zeros(n))
    hbm.store(m, slice(None), np.full(n, -np.inf))
    for j in range(0, n, bc):
        kj, vj = hbm.load(k[j:j + bc]), hbm.load(v[j:j + bc])
        for i in range(0, n, br):
            rows = slice(i, i + br)
            qi, oi, li, mi = hbm.load(q[rows]), hbm.load(o[rows]), hbm.load(ell[rows]), hbm.load(m[rows])
            s = qi @ kj.T
            mt = s.max(axis=1)
            p = np.exp(s - mt[:, None])
            lt = p.sum(axis=1)
            mn = np.maximum(mi, mt)
            ln = np.exp(mi - mn) * li + np.exp(mt - mn) * lt
            on = ((li * np.exp(mi - mn))[:, None] * oi + np.exp(mt - mn)[:, None] * (p @ vj)) / ln[:, None]
            hbm.store(o, rows, on)
            hbm.store(ell, rows, ln)
            hbm.store(m, rows, mn)
    return o


def flash_v2(q, k, v, br, bc, hbm):
    """FlashAttention-2 forward: Q outer, K/V inner, O and logsumexp L written once per row block."""
    n, d = q.shape
    o, lse = np.empty((n, d)), np.empty(n)
    for i in range(0, n, br):
        qi = hbm.load(q[i:i + br])
        acc, mi, li = np.zeros((qi.shape[0], d)), np.full(qi.shape[0], -np.inf), np.zeros(qi.shape[0])
        for j in range(0, n, bc):
            kj, vj = hbm.load(k[j:j + bc]), hbm.load(v[j:j + bc])
            s = qi @ kj.T
            mn = np.maximum(mi, s.max(axis=1))
            p = np.exp(s - mn[:, None])
            li = np.exp(mi - mn) * li + p.sum(axis=1)
            acc = np.exp(mi - mn)[:, None] * acc + p @ vj
            mi = mn
        hbm.store(o, slice(i, i + br), acc / li[:, None])
        hbm.store(lse, slice(i, i + br), mi + np.log(li))
    return o


def standard(q, k, v, hbm):
    """Algorithm 0: S, P materialised in HBM."""
    n = q.shape[0]
    S, P, O = np.empty((n, n)), np.empty((n, n)), np.empty_like(q)
    hbm.store(S, slice(None), hbm.load(q) @ hbm.load(k).T)
    s = hbm.load(S)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    hbm.store(P, slice(None), e / e.sum(axis=1, keepdims=True))
    hbm.store(O, slice(None), hbm.load(P) @ hbm.load(v))
    return O


def reference(q, k, v):
    s = q @ k.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


@given(n=st.integers(1, 40), d=st.integers(1, 8), sram=st.integers(4, 600), version=st.sampled_from(["1", "2"]),
       seed=st.integers(0, 2**16))
def test_counted_tiled_attention_matches_the_formula(n, d, sram, version, seed):
    """The simulated kernel's own reads and writes equal the solver's, and its output is attention's."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
    br, bc = block_sizes(sram, d)
    hbm = HBM()
    out = (flash_v1 if version == "1" else flash_v2)(q, k, v, br, bc, hbm)
    np.testing.assert_allclose(out, reference(q, k, v), rtol=1e-9, atol=1e-12)
    r = flash_attention(n, d, sram=sram, version=version)
    assert (r.breakdown["flash_reads"], r.breakdown["flash_writes"]) == (hbm.reads, hbm.writes)
    assert r.breakdown["row_blocks"] == math.ceil(n / br) and r.breakdown["col_blocks"] == math.ceil(n / bc)
    std = HBM()
    standard(q, k, v, std)
    assert (r.breakdown["standard_reads"], r.breakdown["standard_writes"]) == (std.reads, std.writes)


@given(M=st.integers(1, 10**6), d=st.integers(1, 512))
def test_blocks_fit_the_papers_budget(M, d):
    """B_c = ⌈M/4d⌉ is the least B with 4·B·d ≥ M, and B_r ≤ d."""
    br, bc = block_sizes(M, d)
    assert 4 * bc * d >= M > 4 * (bc - 1) * d and br == min(bc, d)


def test_worked_example_a100_like():
    """N = 1024, d = 64, M = 51,200 elements (100 KiB of bf16): B_c = ⌈51200/256⌉ = 200, B_r = 64,
    T_c = ⌈1024/200⌉ = 6. Reads 2·65,536 + 6·(131,072 + 2,048) = 929,792; writes
    (65,536 + 2,048)·7 = 473,088. Standard: 4·65,536 + 4·1,048,576 = 4,456,448."""
    r = flash_attention(1024, 64, sram=51_200)
    assert (r.breakdown["block_rows"], r.breakdown["block_cols"], r.breakdown["col_blocks"]) == (64, 200, 6)
    assert r.answer == 929_792 + 473_088
    assert r.breakdown["standard_total"] == 4_456_448
    b = flash_attention(1024, 64, sram=51_200, unit="bytes", dtype="fp16", batch=2, heads=3)
    assert b.answer == 6 * 2 * r.answer
    assert flash_attention(1024, 64, sram=51_200, count_init=False).answer == r.answer - (65_536 + 2_048)


def test_flash_traffic_grows_as_the_paper_says():
    """Θ(N²d²/M): doubling M (blocks still dividing N) roughly halves the Q/O passes."""
    a = flash_attention(8192, 64, sram=2**16).breakdown["flash_reads"]
    b = flash_attention(8192, 64, sram=2**17).breakdown["flash_reads"]
    assert 1.8 < a / b < 2.1


def test_missing_sram_is_refused():
    with pytest.raises(SolverInputError):
        flash_attention(128, 64)
