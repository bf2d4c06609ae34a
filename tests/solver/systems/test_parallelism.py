"""solver.systems.parallelism against references that run: a NumPy Megatron layer sharded over t ranks
(the partial sums it must all-reduce, forward and backward, counted as tensors), a ring
simulation of those all-reduces (bytes on every link), a discrete-event simulation of the
pipeline schedules (GPipe, 1F1B, interleaved 1F1B; idle time counted per stage), and the ZeRO
paper's volumes (Rajbhandari et al. 2020, §7: 2Ψ, and 3Ψ = 1.5× for stage 3).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.parallelism import data_parallel, pipeline_bubble, sharded_matmul, tensor_parallel
from tests.solver.systems.test_collectives import simulate_ring_all_reduce

# ---------------------------------------------------------------------------------------
# Tensor parallelism: a sharded layer, run
# ---------------------------------------------------------------------------------------


def relu(x):
    return np.maximum(x, 0)


def megatron_layer(x, wq, wk, wv, wo, w1, w2, heads, t):
    """One layer (attention then ReLU MLP, residuals, no norms) run on t shards; returns the output,
    the input gradient for dL/dout = 1, and the list of tensors all-reduced (forward and backward)."""
    n, h = x.shape
    hd = h // heads
    exchanged = []

    def all_reduce(parts):
        exchanged.append(parts[0].shape)
        return sum(parts)

    # --- forward, attention: heads split across shards (column-parallel Q, K, V; row-parallel O)
    cols = np.array_split(np.arange(h), t)  # each shard owns heads // t heads
    ctx_parts, caches = [], []
    for c in cols:
        q, k, v = x @ wq[:, c], x @ wk[:, c], x @ wv[:, c]
        outs, probs = [], []
        for j in range(len(c) // hd):
            sl = slice(j * hd, (j + 1) * hd)
            s = q[:, sl] @ k[:, sl].T / np.sqrt(hd)
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            outs.append(p @ v[:, sl])
            probs.append(p)
        o = np.concatenate(outs, 1)
        ctx_parts.append(o @ wo[c, :])
        caches.append((q, k, v, o, probs))
    x1 = x + all_reduce(ctx_parts)  # g: forward all-reduce 1
    # --- forward, MLP: column-parallel W1, row-parallel W2
    fcols = np.array_split(np.arange(w1.shape[1]), t)
    z = [x1 @ w1[:, c] for c in fcols]
    y = x1 + all_reduce([relu(zi) @ w2[c, :] for zi, c in zip(z, fcols, strict=True)])  # g: forward all-reduce 2
    # --- backward with dL/dy = 1
    dy = np.ones_like(y)
    dx1 = dy + all_reduce([((dy @ w2[c, :].T) * (zi > 0)) @ w1[:, c].T for zi, c in zip(z, fcols, strict=True)])  # f: backward 1
    dx_parts = []
    for c, (q, k, v, _o, probs) in zip(cols, caches, strict=True):
        do = dx1 @ wo[c, :].T
        dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
        for j, p in enumerate(probs):
            sl = slice(j * hd, (j + 1) * hd)
            dp = do[:, sl] @ v[:, sl].T
            dv[:, sl] = p.T @ do[:, sl]
            ds = p * (dp - (dp * p).sum(1, keepdims=True)) / np.sqrt(hd)
            dq[:, sl], dk[:, sl] = ds @ k[:, sl], ds.T @ q[:, sl]
        dx_parts.append(dq @ wq[:, c].T + dk @ wk[:, c].T + dv @ wv[:, c].T)
    dx = dx1 + all_reduce(dx_parts)  # f: backward all-reduce 2
    return y, dx, exchanged


@given(t=st.sampled_from([2, 4]), b=st.integers(1, 2), s=st.integers(1, 5), heads=st.sampled_from([4, 8]),
       sp=st.booleans(), dtype=st.sampled_from(["bf16", "fp32"]))
def test_tensor_parallel_bytes_vs_a_sharded_layer(t, b, s, heads, sp, dtype):
    """The sharded layer equals the unsharded one; it all-reduces 2 b·s·h tensors forward and 2 backward."""
    rng = np.random.default_rng(t * 100 + b * 10 + s)
    h, ff = 2 * heads, 4 * 2 * heads
    x = rng.standard_normal((b * s, h))
    w = [rng.standard_normal(shape) * 0.3 for shape in [(h, h)] * 4 + [(h, ff), (ff, h)]]
    y, dx, exchanged = megatron_layer(x, *w, heads, t)
    y1, dx1, _ = megatron_layer(x, *w, heads, 1)  # the same layer on one rank: nothing to exchange
    assert np.allclose(y, y1) and np.allclose(dx, dx1)
    a = {"bf16": 2, "fp32": 4}[dtype]
    r = tensor_parallel(b, s, h, t, dtype=dtype, sequence_parallel=sp)
    assert r.breakdown["all_reduces_per_layer"] == len(exchanged) == 4
    assert all(shape == (b * s, h) for shape in exchanged)
    assert r.breakdown["message_bytes"] == b * s * h * a
    assert r.answer == sum(np.prod(sh) for sh in exchanged) * a
    assert tensor_parallel(b, s, h, t, dtype=dtype, mode="forward").answer == r.answer / 2
    # bytes each rank sends: a simulated ring all-reduce of a float32 tensor t times as long (so it splits evenly),
    # rescaled to one b·s·h tensor at the dtype's bytes; four of them per layer
    _, link_bytes, _ = simulate_ring_all_reduce(np.zeros((t, t * b * s * h), dtype=np.float32))
    per_tensor = Fraction(int(link_bytes[0]), t * 4) * a
    assert r.breakdown["bytes_sent_per_rank"] == 4 * per_tensor


def test_tensor_parallel_by_hand():
    """b = 1, s = 2048, h = 8192, bf16, t = 8: M = 33,554,432 B; 4 per layer = 134,217,728 B;
    each rank sends 4 × 2·7/8 × M = 234,881,024 B; over NVLink 4 (450 GB/s) 0.52196 ms per layer."""
    r = tensor_parallel(1, 2048, 8192, 8, link_bandwidth=450e9)
    assert r.breakdown["message_bytes"] == 33_554_432 and r.answer == 134_217_728
    assert r.breakdown["bytes_sent_per_rank"] == 234_881_024
    assert r.breakdown["time_s"] == pytest.approx(234_881_024 / 450e9)
    sp = tensor_parallel(1, 2048, 8192, 8, sequence_parallel=True)
    assert sp.breakdown["bytes_sent_per_rank"] == r.breakdown["bytes_sent_per_rank"]
    assert sp.breakdown["collectives_per_layer"] == 8


@given(B=st.integers(1, 4096), D=st.integers(128, 65536), F=st.integers(128, 65536), t=st.integers(2, 16),
       C=st.floats(1e14, 2e15), bw=st.floats(2e10, 1e12))
def test_sharded_matmul_hides_exactly_above_the_width(B, D, F, t, C, bw):
    """t_comp = 2BDF/(tC) against t_comm = (ring bytes of Y[B,F])/β: compute-bound iff D ≥ (t − 1)·a·C/β."""
    r = sharded_matmul(B, D, F, t, peak_flops=C, link_bandwidth=bw)
    tc, tm = 2 * B * D * F / (t * C), 2 * (t - 1) / t * B * F * 2 / bw
    assert r.breakdown["compute_time_s"] == pytest.approx(tc) and r.breakdown["comm_time_s"] == pytest.approx(tm)
    edge = (t - 1) * 2 * C / bw
    if abs(D - edge) > 1e-6 * edge:
        assert r.breakdown["bound"] == ("compute" if D > edge else "communication")


# ---------------------------------------------------------------------------------------
# Pipeline: a discrete-event simulation of each schedule
# ---------------------------------------------------------------------------------------


def schedule_ops(kind, p, m, v=1):
    """Per stage, the order of its (F|B, microbatch, chunk) ops, as each schedule issues them."""
    if kind == "gpipe":
        return [[("F", i, 0) for i in range(m)] + [("B", i, 0) for i in reversed(range(m))] for _ in range(p)]
    if kind == "1f1b":
        out = []
        for s in range(p):
            warm = min(p - s - 1, m)
            ops = [("F", i, 0) for i in range(warm)]
            for i in range(m - warm):
                ops += [("F", warm + i, 0), ("B", i, 0)]
            ops += [("B", i, 0) for i in range(m - warm, m)]
            out.append(ops)
        return out
    # interleaved 1F1B (Narayanan et al. 2021, §2.2): groups of p microbatches per chunk
    fwd = [("F", (k // (p * v)) * p + k % p, (k // p) % v) for k in range(m * v)]
    bwd = [("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v) for k in range(m * v)]
    out = []
    for s in range(p):
        warm = min((p - s - 1) * 2 + (v - 1) * p, m * v)
        ops = fwd[:warm]
        for i in range(m * v - warm):
            ops += [fwd[warm + i], bwd[i]]
        out.append(ops + bwd[m * v - warm:])
    return out


def simulate_pipeline(kind, p, m, tf, tb, v=1):
    """Run each stage's ops in order as soon as their inputs exist; return (makespan, idle time per stage)."""
    ops = schedule_ops(kind, p, m, v)
    done, free, busy = {}, [0.0] * p, [0.0] * p
    ptr = [0] * p
    cost = {"F": tf / v, "B": tb / v}
    while any(ptr[s] < len(ops[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            if ptr[s] == len(ops[s]):
                continue
            op, i, c = ops[s][ptr[s]]
            vs = c * p + s  # virtual stage
            if op == "F":
                dep = [("F", i, vs - 1)] if vs > 0 else []
            else:
                dep = [("B", i, vs + 1)] if vs < p * v - 1 else []
                dep.append(("F", i, vs))
            if not all(d in done for d in dep):
                continue
            start = max([free[s]] + [done[d] for d in dep])
            free[s] = done[(op, i, vs)] = start + cost[op]
            busy[s] += cost[op]
            ptr[s] += 1
            progressed = True
        assert progressed, "the schedule deadlocked"
    makespan = max(free)
    return makespan, [makespan - b for b in busy]


@given(p=st.integers(1, 8), m=st.integers(1, 16), tb_over_tf=st.sampled_from([1, 2, 3]),
       kind=st.sampled_from(["gpipe", "1f1b"]))
def test_bubble_vs_simulation(p, m, tb_over_tf, kind):
    makespan, idle = simulate_pipeline(kind, p, m, 1.0, float(tb_over_tf))
    r = pipeline_bubble(p, m, schedule=kind)
    assert all(i / makespan == pytest.approx(float(r.answer), abs=1e-12) for i in idle)
    ideal = m * (1 + tb_over_tf)
    assert (makespan - ideal) / ideal == pytest.approx(float(r.breakdown["bubble_over_ideal"]), abs=1e-12)


@given(p=st.integers(2, 6), groups=st.integers(1, 4), v=st.integers(1, 4), tb_over_tf=st.sampled_from([1, 2]))
def test_interleaved_bubble_vs_simulation(p, groups, v, tb_over_tf):
    m = p * groups
    makespan, idle = simulate_pipeline("interleaved", p, m, 1.0, float(tb_over_tf), v)
    r = pipeline_bubble(p, m, schedule="interleaved", chunks=v)
    assert max(idle) / makespan == pytest.approx(float(r.answer), abs=1e-12)
    assert (makespan - m * (1 + tb_over_tf)) / (m * (1 + tb_over_tf)) == pytest.approx(float(r.breakdown["bubble_over_ideal"]))


def test_bubble_by_hand():
    """p = 8, m = 32: 7/39 = 0.1795 of the step; 7/32 = 0.21875 of the ideal time (the (p − 1)/m form)."""
    r = pipeline_bubble(8, 32)
    assert r.answer == Fraction(7, 39) and r.breakdown["bubble_over_ideal"] == Fraction(7, 32)
    assert pipeline_bubble(8, 32, schedule="gpipe").breakdown["first_stage_microbatches_held"] == 32
    assert r.breakdown["first_stage_microbatches_held"] == 8
    with pytest.raises(SolverInputError, match="microbatches"):
        pipeline_bubble(8, 12, schedule="interleaved", chunks=2)


# ---------------------------------------------------------------------------------------
# Data parallel and ZeRO
# ---------------------------------------------------------------------------------------


@given(P=st.integers(1, 10**12), n=st.integers(2, 4096), stage=st.integers(0, 3))
def test_zero_volumes(P, n, stage):
    """2Ψ for stages 0-2 and 3Ψ (1.5× the baseline) for stage 3 (ZeRO §7); exact ring bytes (n − 1)/n of that."""
    r = data_parallel(P, n, stage=stage)
    parts = 3 if stage == 3 else 2
    assert r.answer == parts * P and r.breakdown["ratio_to_data_parallel"] == Fraction(parts, 2)
    assert r.breakdown["bytes_sent_per_gpu"] == Fraction(parts * (n - 1) * P * 2, n)


@given(n=st.integers(2, 8), c=st.integers(1, 4))
def test_data_parallel_bytes_vs_ring_simulation(n, c):
    grads = np.ones((n, n * c), dtype=np.float32)
    _, link_bytes, _ = simulate_ring_all_reduce(grads)
    r = data_parallel(n * c, n, grad_dtype="fp32", link_bandwidth=1e9)
    assert r.breakdown["bytes_sent_per_gpu"] == link_bytes[0]
    assert r.breakdown["time_s"] == pytest.approx(link_bytes[0] / 1e9)


# ---------------------------------------------------------------------------------------
# Activation memory with tensor / sequence parallelism, from the named tensors of a layer
# ---------------------------------------------------------------------------------------

#: (tensor, bytes as a function of s, b, h, a, what splits it): Korthikanti et al. §4.1's inventory.
#: "tp": split by tensor parallelism; "sp": replicated under TP, split by sequence parallelism.
LAYER_TENSORS = [
    ("layernorm 1 input", lambda s, b, h, a: 2 * s * b * h, "sp"),
    ("QKV matmul input", lambda s, b, h, a: 2 * s * b * h, "sp"),
    ("Q and K for QKᵀ", lambda s, b, h, a: 4 * s * b * h, "tp"),
    ("softmax output", lambda s, b, h, a: 2 * a * s * s * b, "tp-scores"),
    ("softmax dropout mask", lambda s, b, h, a: a * s * s * b, "tp-scores"),
    ("dropout output for ·V", lambda s, b, h, a: 2 * a * s * s * b, "tp-scores"),
    ("V", lambda s, b, h, a: 2 * s * b * h, "tp"),
    ("output projection input", lambda s, b, h, a: 2 * s * b * h, "tp"),
    ("attention dropout mask", lambda s, b, h, a: s * b * h, "sp"),
    ("layernorm 2 input", lambda s, b, h, a: 2 * s * b * h, "sp"),
    ("MLP input", lambda s, b, h, a: 2 * s * b * h, "sp"),
    ("GeLU input (4h)", lambda s, b, h, a: 8 * s * b * h, "tp"),
    ("GeLU output (4h)", lambda s, b, h, a: 8 * s * b * h, "tp"),
    ("MLP dropout mask", lambda s, b, h, a: s * b * h, "sp"),
]


@given(s=st.integers(1, 4096), b=st.integers(1, 16), heads=st.sampled_from([8, 16, 32]), t=st.sampled_from([1, 2, 4, 8]),
       sp=st.booleans(), recompute=st.sampled_from(["none", "selective"]))
def test_activations_parallel_vs_tensor_inventory(s, b, heads, t, sp, recompute):
    from solver.systems.parallelism import activations_parallel
    from solver.systems.training import activations

    h = 128 * heads
    total = Fraction(0)
    for _, size, split in LAYER_TENSORS:
        if recompute == "selective" and split == "tp-scores":
            continue
        divide = t if split in ("tp", "tp-scores") or (split == "sp" and sp) else 1
        total += Fraction(size(s, b, h, heads), divide)
    r = activations_parallel(s, b, h, heads, tp=t, sequence_parallel=sp, recompute=recompute)
    assert r.answer == total
    if t == 1:  # no parallelism: the existing single-GPU formula
        assert r.answer == activations(s, b, h, heads, recompute=recompute).answer


def test_recomputation_flops_vs_flop_counter():
    """FlopCounterMode on a stack of Linear layers (N weights, T tokens): forward + backward = 6·N·T, and with
    torch.utils.checkpoint around the stack 8·N·T; so HFU/MFU = 8/6 with full recomputation (no attention term).
    (Reentrant checkpointing reruns the whole forward; the non-reentrant kind stops early and skips the last
    matmul, whose output the backward pass does not need.)"""
    import torch
    from torch.utils.checkpoint import checkpoint
    from torch.utils.flop_counter import FlopCounterMode

    from solver.systems.parallelism import flops_utilisation

    T, dims = 16, [32, 64, 48, 32]
    layers = torch.nn.Sequential(*[torch.nn.Linear(i, o, bias=False) for i, o in zip(dims, dims[1:], strict=False)])
    N = sum(p.numel() for p in layers.parameters())
    counted = {}
    for mode in ("none", "full"):
        x = torch.randn(T, dims[0], requires_grad=True)
        with FlopCounterMode(display=False) as c:
            y = checkpoint(layers, x, use_reentrant=True) if mode == "full" else layers(x)
            y.sum().backward()
        counted[mode] = c.get_total_flops() / T
    assert counted["none"] == 6 * N and counted["full"] == 8 * N
    for mode in ("none", "full"):
        r = flops_utilisation(N, 1000.0, 1, 1e9, recompute=mode)
        assert r.breakdown["hardware_flops_per_token"] == counted[mode]
        assert r.breakdown["mfu"] == pytest.approx(6 * N * 1000 / 1e9)
        assert r.breakdown["hfu"] == pytest.approx(counted[mode] * 1000 / 1e9)
