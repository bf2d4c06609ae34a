"""Quantised bytes against real byte layouts: a Q4_0/Q8_0 packer written here in NumPy (and the
``gguf`` package's quantiser when installed), GPTQ's tensors built with their AutoGPTQ shapes,
NF4's constants counted tensor by tensor, and KV caches as actual int8 tensors plus scales."""

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from solver.errors import SolverInputError
from solver.systems.quant import (
    GGML_FORMATS,
    ggml_bytes,
    group_quant_bytes,
    kv_cache_quant_bytes,
    nf4_bits_per_param,
)

Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # one fp16 scale, 32 nibbles
Q8_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "i1", (32,))])


def pack_q4_0(x):
    """Quantise x (rows × 32k) to Q4_0 blocks: d = max|x|/−8 signed as ggml does, q = round(x/d) + 8 in 0..15."""
    blocks = x.reshape(-1, 32)
    amax_i = np.abs(blocks).argmax(axis=1)
    d = blocks[np.arange(len(blocks)), amax_i] / -8
    inv = np.where(d != 0, 1 / np.where(d != 0, d, 1), 0)
    q = np.clip(np.floor(blocks * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    out = np.zeros(len(blocks), dtype=Q4_0_BLOCK)
    out["d"] = d.astype(np.float16)
    out["qs"] = q[:, :16] | (q[:, 16:] << 4)
    return out


def pack_q8_0(x):
    blocks = x.reshape(-1, 32)
    d = np.abs(blocks).max(axis=1) / 127
    out = np.zeros(len(blocks), dtype=Q8_0_BLOCK)
    out["d"] = d.astype(np.float16)
    out["qs"] = np.round(blocks / np.where(d == 0, 1, d)[:, None]).astype(np.int8)
    return out


@given(st.integers(1, 64), st.sampled_from(("q4_0", "q8_0")), st.integers(0, 2**32 - 1))
@example(128, "q4_0", 0)
def test_ggml_bytes_match_a_packed_tensor(blocks, fmt, seed):
    """The packed array's nbytes is the count; Q4_0 is 4.5 bits per weight, Q8_0 8.5."""
    x = np.random.default_rng(seed).standard_normal(32 * blocks).astype(np.float32)
    packed = (pack_q4_0 if fmt == "q4_0" else pack_q8_0)(x)
    r = ggml_bytes(x.size, fmt)
    assert r.answer == packed.nbytes
    assert r.breakdown["bits_per_weight"] == Fraction(8 * packed.nbytes, x.size)
    assert r.breakdown["code_bytes"] < r.answer  # codes alone are not the whole story


def test_q4_0_packer_round_trips():
    """The packer above is a real Q4_0 quantiser: dequantised values are within half a step, one step at
    the clipped end (the extreme maps to −8, so +8 steps on the other side clip to +7)."""
    x = np.random.default_rng(1).standard_normal(256).astype(np.float32)
    p = pack_q4_0(x)
    q = np.concatenate([p["qs"] & 15, p["qs"] >> 4], axis=1).astype(np.float32)
    deq = (p["d"].astype(np.float32)[:, None] * (q - 8)).reshape(-1)
    step = np.repeat(np.abs(p["d"].astype(np.float32)), 32)
    err = np.abs(deq - x)
    assert np.all(err <= step + 1e-3) and np.mean(err <= step * 0.5 + 1e-3) > 0.95


def test_ggml_against_gguf_package():
    """The gguf package (llama.cpp's gguf-py): its Q4_0/Q8_0 quantiser's nbytes, and its block table for all."""
    gguf = pytest.importorskip("gguf")
    from gguf import quants

    x = np.random.default_rng(0).standard_normal((3, 256)).astype(np.float32)
    for name in ("Q4_0", "Q8_0"):
        assert quants.quantize(x, getattr(gguf.GGMLQuantizationType, name)).nbytes == ggml_bytes(x.size, name).answer
    for name, f in GGML_FORMATS.items():
        assert gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, name.upper())] == (f.block, f.block_bytes)


def test_ggml_published_bits_per_weight():
    """ggml-common.h's comments: Q4_K 'effectively 4.5 bits per weight', Q5_K 5.5, Q6_K 6.5625, Q3_K 3.4375, Q2_K 2.625."""
    want = {"q4_K": 4.5, "q5_K": 5.5, "q6_K": 6.5625, "q3_K": 3.4375, "q2_K": 2.625, "q4_0": 4.5, "q8_0": 8.5}
    assert {k: float(GGML_FORMATS[k].bits_per_weight) for k in want} == want


def test_ggml_whole_blocks_only():
    with pytest.raises(SolverInputError, match="multiple of 256"):
        ggml_bytes(1000, "q4_K")
    with pytest.raises(SolverInputError, match="unknown ggml format"):
        ggml_bytes(32, "q7_0")


@given(st.integers(1, 16), st.integers(1, 12), st.sampled_from((32, 64, 128)), st.sampled_from(("int4", "fp16", "none")),
       st.booleans())
def test_group_quant_against_autogptq_tensors(out8, in_groups, g, zero, g_idx):
    """Build AutoGPTQ's buffers (qweight int32 (in/8, out), qzeros int32 (in/g, out/8), scales fp16 (in/g, out),
    g_idx int32 (in)) on the meta device and sum their nbytes."""
    out_f, in_f = 8 * out8, g * in_groups
    tensors = [torch.empty(in_f // 8, out_f, dtype=torch.int32, device="meta"),
               torch.empty(in_f // g, out_f, dtype=torch.float16, device="meta")]
    if zero == "int4":
        tensors.append(torch.empty(in_f // g, out_f // 8, dtype=torch.int32, device="meta"))
    elif zero == "fp16":
        tensors.append(torch.empty(in_f // g, out_f, dtype=torch.float16, device="meta"))
    if g_idx:
        tensors.append(torch.empty(in_f, dtype=torch.int32, device="meta"))
    measured = sum(t.numel() * t.element_size() for t in tensors)
    assert group_quant_bytes(out_f, in_f, group_size=g, zero=zero, g_idx=g_idx).answer == measured


def test_group_quant_bits_per_weight():
    """g = 128, fp16 scale and fp16 zero: 4 + 32/128 = 4.25 bits; with a 4-bit zero: 4 + 20/128 = 4.15625."""
    assert group_quant_bytes(4096, 4096, zero="fp16").breakdown["bits_per_weight"] == Fraction(17, 4)
    assert group_quant_bytes(4096, 4096).breakdown["bits_per_weight"] == Fraction(133, 32)


def test_nf4_double_quant_against_counted_tensors():
    """QLoRA §3: 0.5 bits per parameter of constants without DQ, 8/64 + 32/(64·256) ≈ 0.127 with it.
    Counted from the tensors bitsandbytes keeps for a 2^20-weight matrix: codes uint8 (n/2), absmax
    uint8 (n/64), its fp32 scales (n/64/256) and one fp32 offset (the mean subtracted before the fp8 step,
    which the paper's 0.127 leaves out)."""
    n = 2**20
    codes, absmax8, scales2 = n // 2, n // 64, 4 * (n // 64 // 256)
    measured_bits = Fraction(8 * (codes + absmax8 + scales2), n)
    r = nf4_bits_per_param()
    assert r.answer == measured_bits
    assert round(float(r.breakdown["const_bits"]), 3) == 0.127  # the paper's figure
    assert nf4_bits_per_param(double_quant=False).answer == Fraction(8 * (codes + 4 * (n // 64)), n)
    assert round(float(r.breakdown["overhead_saved"]), 3) == 0.373  # "reduces … from 0.5 to 0.127": 0.373 saved


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 9), st.integers(1, 4), st.sampled_from((2, 4, 8)),
       st.sampled_from(("int8", "fp8", "int4")), st.sampled_from((None, 1, 2, 4)))
def test_kv_quant_against_cache_tensors(L, B, S, H, D, dtype, per):
    """The cache as tensors: K and V codes (int4 packed two per byte) + fp16 scales, one per `per` values."""
    codes = 2 * L * B * S * H * D
    code_bytes = math.ceil(codes / 2) if dtype == "int4" else torch.empty(codes, dtype=torch.int8).nbytes
    scale_bytes = 0 if per is None else torch.empty(math.ceil(codes / per), dtype=torch.float16).nbytes
    r = kv_cache_quant_bytes(L, B, S, H, D, dtype, scale_group=per)
    assert r.answer == code_bytes + scale_bytes


def test_kv_int8_per_token_head_scale():
    """Llama-2-7B (32 layers, 32 KV heads of 128), 4096 tokens, int8 with one fp16 scale per token and head:
    2·32·4096·32·128 = 1,073,741,824 bytes of codes + 2·32·4096·32·2 = 16,777,216 of scales."""
    r = kv_cache_quant_bytes(32, 1, 4096, 32, 128, "int8", scale_group=128)
    assert r.answer == 1_073_741_824 + 16_777_216
