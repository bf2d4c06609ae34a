"""MLA decode (solver.counting.mla_decode): the naive and absorbed orders written here as real
NumPy matrix products that count their own FLOPs; same output, the solver's FLOPs."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from solver.counting.mla_decode import mla_decode, mla_decode_parts


class Counter:
    def __init__(self):
        self.flops = 0

    def mm(self, a, b):
        """a @ b, counting 2·m·k·n."""
        a, b = np.atleast_2d(a), np.atleast_2d(b)
        self.flops += 2 * a.shape[0] * a.shape[1] * b.shape[1]
        return a @ b


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def one_step(rng, d, h, dc, dr, dh, dv, S, dq):
    x = rng.normal(size=(1, d))
    C = rng.normal(size=(S - 1, dc))       # cached latents
    KR = rng.normal(size=(S - 1, dr))      # cached rotary keys (already rotated)
    W_DKV, W_KR = rng.normal(size=(d, dc)), rng.normal(size=(d, dr))
    W_UK, W_UV = rng.normal(size=(h, dc, dh)), rng.normal(size=(h, dc, dv))
    W_DQ = rng.normal(size=(d, dq)) if dq else None
    W_Q = rng.normal(size=(dq or d, h * (dh + dr)))
    W_O = rng.normal(size=(h * dv, d))
    scale = 1 / np.sqrt(dh + dr)

    def shared(cnt):
        cq = cnt.mm(x, W_DQ) if dq else x
        q = cnt.mm(cq, W_Q).reshape(h, dh + dr)
        c_new, kr_new = cnt.mm(x, W_DKV), cnt.mm(x, W_KR)
        return q[:, :dh], q[:, dh:], np.vstack([C, c_new]), np.vstack([KR, kr_new])

    naive = Counter()
    qc, qr, Call, KRall = shared(naive)
    heads = []
    for i in range(h):
        K = naive.mm(Call, W_UK[i])             # S × d_h
        V = naive.mm(Call, W_UV[i])             # S × d_v
        s = (naive.mm(qc[i][None], K.T) + naive.mm(qr[i][None], KRall.T))[0] * scale
        heads.append(naive.mm(softmax(s)[None], V)[0])
    out_naive = naive.mm(np.concatenate(heads)[None], W_O)

    ab = Counter()
    qc, qr, Call, KRall = shared(ab)
    heads = []
    for i in range(h):
        qt = ab.mm(qc[i][None], W_UK[i].T)     # 1 × d_c
        s = (ab.mm(qt, Call.T) + ab.mm(qr[i][None], KRall.T))[0] * scale
        lat = ab.mm(softmax(s)[None], Call)     # 1 × d_c
        heads.append(ab.mm(lat, W_UV[i])[0])
    out_abs = ab.mm(np.concatenate(heads)[None], W_O)
    return out_naive, naive.flops, out_abs, ab.flops


@given(d=st.integers(2, 12), h=st.integers(1, 4), dc=st.integers(1, 8), dr=st.integers(1, 4), dh=st.integers(1, 6),
       dv=st.integers(1, 6), S=st.integers(2, 10), dq=st.sampled_from([0, 3]), seed=st.integers(0, 999))
def test_absorbed_equals_naive_with_the_counted_flops(d, h, dc, dr, dh, dv, S, dq, seed):
    out_n, flops_n, out_a, flops_a = one_step(np.random.default_rng(seed), d, h, dc, dr, dh, dv, S, dq)
    np.testing.assert_allclose(out_a, out_n, rtol=1e-9, atol=1e-9)
    parts = mla_decode_parts(d, h, dc, dr, dh, dv, S, q_rank=dq)
    shared = sum(parts["shared"].values())
    assert flops_n == shared + sum(parts["naive"].values())
    assert flops_a == shared + sum(parts["absorbed"].values())


def test_deepseek_v2_lite_at_32k():
    """DeepSeek-V2-Lite widths (d 2048, 16 heads, d_c 512, d_R 64, d_h = d_v = 128), S = 32,768:
    naive per layer = 2·S·512·16·256 + 2·S·16·(128 + 64 + 128); absorbed = 2·16·128·512 +
    2·S·16·(1024 + 64) + 2·16·512·128. The cache the absorbed order reads is S·576 elements."""
    S = 32_768
    r = mla_decode(2048, 16, 512, 64, 128, 128, S, order="naive")
    shared = 2 * 2048 * 16 * 192 + 2 * 2048 * 576 + 2 * 16 * 128 * 2048
    assert r.answer == shared + 2 * S * 512 * 16 * 256 + 2 * S * 16 * 320
    assert r.breakdown["absorbed_flops"] == shared + 2 * 16 * 128 * 512 + 2 * S * 16 * 1088 + 2 * 16 * 512 * 128
    assert r.breakdown["cache_bytes"] == S * 576 * 2
    assert r.breakdown["flop_ratio_naive_over_absorbed"] > 3
