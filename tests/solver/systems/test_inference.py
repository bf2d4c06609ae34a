"""solver.systems.inference: the decode-step bound against a direct sum over a real model's tensors.

Hand-worked example (Llama-2-70B-like, bf16, 8 × H100 SXM, batch 32, context 4096):
KV bytes per token = 2 (K, V) × 80 layers × 8 KV heads × 128 × 2 bytes = 327,680;
KV cache = 32 × 4096 × 327,680 = 42,949,672,960 bytes; weights = 70·10^9 × 2 = 1.4·10^11;
total 182,949,672,960 bytes over 8 × 3.35·10^12 B/s = 6.8265 ms; FLOPs 2 × 70e9 × 32 =
4.48·10^12 over 8 × 989.5·10^12 = 0.566 ms; so the step is memory-bound at >= 6.83 ms.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.counting import kv_cache_bytes, param_count
from solver.counting.config import ModelConfig
from solver.systems.chips import Chip, resolve_chip
from solver.systems.inference import (
    decode_step,
    kv_bytes_per_token,
    kv_tokens_freed_per_step,
    min_chips,
    prefill,
)

H100 = resolve_chip("h100")


def test_70b_decode_on_8_h100_by_hand():
    r = decode_step(70 * 10**9, 32, 4096, kv_bytes_per_token(80, 8, 128, "bf16"), H100, chips=8)
    assert kv_bytes_per_token(80, 8, 128, "bf16") == 327_680
    assert r.breakdown["kv_bytes"] == 42_949_672_960
    assert r.breakdown["total_bytes"] == 182_949_672_960
    assert r.answer == pytest.approx(6.8265e-3, rel=1e-4)
    assert r.breakdown["compute_time_s"] == pytest.approx(0.566e-3, rel=1e-3)
    assert r.breakdown["bound"] == "memory"


configs = st.builds(
    lambda d_head, heads, layers, ffn: dict(d_head=d_head, heads=heads, layers=layers, ffn=ffn),
    st.sampled_from([8, 16]), st.sampled_from([(2, 2), (4, 2), (4, 1), (6, 3)]), st.integers(1, 3),
    st.sampled_from(["gelu", "swiglu"]))


@settings(max_examples=10)
@given(configs, st.integers(1, 3), st.integers(1, 12))
def test_decode_bytes_equal_the_models_parameter_and_cache_tensors(c, batch, context):
    from solver.models import build_model

    N, G = c["heads"]
    cfg = ModelConfig(d_model=N * c["d_head"], n_layers=c["layers"], n_heads=N, n_kv_heads=G, d_ff=32,
                      ffn=c["ffn"], vocab_size=50, max_positions=16, pos="rope", norm="rmsnorm", bias=False)
    model = build_model(cfg, "meta")  # fp32 weights; meta: no memory, real shapes
    cache = model.new_cache()
    model(torch.zeros(batch, context, dtype=torch.long, device="meta"), cache=cache, impl="math")
    direct = sum(p.nbytes for p in model.parameters()) + cache.nbytes()  # the tensors a step reads
    r = decode_step(param_count(cfg), batch, context, kv_bytes_per_token(c["layers"], G, c["d_head"], "fp32"),
                    Chip(peak_flops=1e12, bandwidth=1e9), weight_dtype="fp32")
    assert r.breakdown["total_bytes"] == direct
    assert r.breakdown["kv_bytes"] == cache.nbytes() == kv_cache_bytes(c["layers"], batch, context, G, c["d_head"],
                                                                       "fp32")
    assert r.answer == pytest.approx(direct / 1e9)


@given(st.integers(1, 10**12), st.integers(1, 512), st.integers(1, 10**5), st.integers(0, 10**6),
       st.integers(1, 64), st.sampled_from(["bf16", "int8", "int4", "fp32"]))
def test_decode_step_is_the_larger_bound(N, B, S, X, chips, wdt):
    r = decode_step(N, B, S, X, H100, chips=chips, weight_dtype=wdt)
    bd = r.breakdown
    assert r.answer >= bd["memory_time_s"] and r.answer >= bd["compute_time_s"]
    assert r.answer in (bd["memory_time_s"], bd["compute_time_s"])
    assert bd["total_bytes"] == N * Fraction({"bf16": 2, "int8": 1, "int4": Fraction(1, 2), "fp32": 4}[wdt]) + B * S * X


@given(st.integers(1, 10**12), st.sampled_from(["bf16", "fp16", "int8", "int4", "fp32"]),
       st.integers(10**9, 200 * 10**9), st.integers(0, 10**11))
def test_min_chips_is_the_fewest_that_fit(N, wdt, hbm, kv):
    r = min_chips(N, wdt, hbm, kv_bytes=kv)
    total = r.breakdown["total_bytes"]
    assert r.answer * hbm >= total
    assert r.answer == 1 or (r.answer - 1) * hbm < total


@given(st.integers(1, 10**12), st.sampled_from(["bf16", "int8", "int4"]), st.integers(10**9, 200 * 10**9),
       st.integers(0, 10**11), st.floats(0, 0.9))
def test_min_chips_with_a_reserve_packs_the_usable_part(N, wdt, hbm, kv, frac):
    """Fill chips one at a time with usable = hbm − reserved bytes each until weights + KV fit (a simulation)."""
    reserved = int(hbm * frac)
    r = min_chips(N, wdt, hbm, kv_bytes=kv, reserved_bytes=reserved)
    need = N * {"bf16": 2, "int8": 1, "int4": Fraction(1, 2)}[wdt] + kv
    chips, held = 1, hbm - reserved
    while held < need:
        chips, held = chips + 1, held + hbm - reserved
    assert r.answer == chips


def test_min_chips_reserve_must_leave_room():
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError):
        min_chips(10**9, "bf16", 10**9, reserved_bytes=10**9)


def test_70b_chips_by_hand():
    # bf16: 140e9 bytes / 80e9 = 1.75 -> 2 chips; int4: 35e9 (two weights per byte) -> 1 chip;
    # fp32: 280e9 / 80e9 = 3.5 -> 4 chips
    hbm = H100.hbm
    assert min_chips(70 * 10**9, "bf16", hbm).answer == 2
    assert min_chips(70 * 10**9, "int4", hbm).answer == 1
    assert min_chips(70 * 10**9, "fp32", hbm).answer == 4


@given(st.integers(1, 64), st.integers(0, 50), st.integers(1, 50), st.integers(1, 4))
def test_kv_tokens_freed_against_a_simulation(B, P, G, windows):
    """Simulate B slots of continuous batching, staggered; count freed tokens over whole windows of G steps."""
    age = [i % G for i in range(B)]  # tokens generated so far by the sequence in each slot
    freed = 0
    steps = G * windows
    for _ in range(steps):
        for i in range(B):
            age[i] += 1
            if age[i] == G:  # finished: its P + G cached tokens are freed, a new sequence starts
                freed += P + G
                age[i] = 0
    assert Fraction(freed, steps) == kv_tokens_freed_per_step(B, P, G).answer


@given(st.integers(1, 10**12), st.integers(1, 10**6), st.integers(1, 64), st.floats(0.05, 1.0))
def test_prefill_time_inverts(N, T, chips, mfu):
    r = prefill(N, T, H100, chips=chips, mfu=mfu)
    assert r.answer * chips * H100.peak_flops * mfu == pytest.approx(2 * N * T)


def test_prefill_with_exact_flops_uses_them():
    r = prefill(10, 10, Chip(peak_flops=100.0), flops=300)
    assert r.answer == 3.0 and r.breakdown["flops_rule_2NT"] == 200


def test_bad_inputs_name_their_parameter():
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError) as e:
        prefill(10, 10, H100, mfu=1.5)
    assert e.value.param == "mfu"
    with pytest.raises(SolverInputError) as e:
        min_chips(10, "int3", 1e9)
    assert e.value.param == "dtype"
    assert math.isfinite(decode_step(1, 1, 1, 0, H100).answer)
