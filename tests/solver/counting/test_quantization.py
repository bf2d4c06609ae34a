"""The weight bytes a config.json's ``quantization_config`` gives (``solver.counting.quantization``), checked
three ways that do not use its formulas:

- per format, a small NumPy reference quantiser packs a random weight matrix into the arrays a checkpoint
  stores (MXFP4 blocks and E8M0 exponents, AWQ/GPTQ int32-packed weights, zeros, fp16 scales and g_idx,
  FP8 codes and fp32 block scales, NF4 codes with their absmax) and the arrays' ``nbytes`` are summed;
- against published checkpoint sizes (tests/solver/counting/configs/quant/SOURCES.md): gpt-oss-20b and
  gpt-oss-120b to the byte, DeepSeek-V3 within 0.01 % (what differs is named);
- properties: smaller groups never take fewer bytes; a tensor the blocks tile exactly takes the nominal
  bits (MXFP4 4.25, QLoRA's double quantisation 4.127 bits); and through ``qkv solve memory`` and
  ``qkv solve serve``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from drills.cli import cli
from solver.counting.config_json import read_hf_config
from solver.counting.quantization import (
    fp8_blocks,
    fp8_per_channel,
    int_groups,
    mxfp4,
    nf4,
    quantized_weights,
    scheme_of,
)
from solver.errors import SolverInputError

CONFIGS = Path(__file__).parent / "configs"
RNG = np.random.default_rng(37)

# ---- reference quantisers (NumPy): the arrays a checkpoint stores ----------------------------------------

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])  # FP4 E2M1 magnitudes (OCP MX v1.0 §5.3.3)


def _pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """Two 4-bit codes per byte along the last axis (padded to even)."""
    if codes.shape[-1] % 2:
        codes = np.concatenate([codes, np.zeros((*codes.shape[:-1], 1), codes.dtype)], axis=-1)
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def mx_pack(w: np.ndarray) -> dict[str, np.ndarray]:
    """MXFP4 as gpt-oss stores it (``*_blocks`` of (out, blocks, 16) bytes: a row's last block padded
    with zeros): per row, blocks of 32 along the input; shared exponent
    ⌊log₂ amax⌋ − 2 (E2M1's emax) as a biased E8M0 byte; elements rounded to the nearest E2M1 value."""
    out, inp = w.shape
    nb = -(-inp // 32)
    padded = np.zeros((out, nb * 32))
    padded[:, :inp] = w
    blocks = padded.reshape(out, nb, 32)
    amax = np.abs(blocks).max(axis=-1)
    shared = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2, 0).astype(int)
    scaled = blocks / (2.0 ** shared)[..., None]
    mag = np.abs(np.clip(scaled, -6, 6))
    idx = np.abs(mag[..., None] - E2M1).argmin(axis=-1)
    codes = (idx | ((scaled < 0) << 3)).astype(np.uint8).reshape(out, nb, 32)
    return {"blocks": _pack_nibbles(codes), "scales": (shared + 127).astype(np.uint8)}


def int_group_pack(w: np.ndarray, group: int, layout: str) -> dict[str, np.ndarray]:
    """Asymmetric int4 per group of ``group`` input columns (round(w/s) + z, clipped to 0..15), packed
    eight per int32: AWQ along the output (qweight (in, out/8)), GPTQ along the input (qweight (in/8, out)),
    qzeros (groups, out/8) in both, fp16 scales (groups, out), and GPTQ's int32 g_idx (in)."""
    out, inp = w.shape
    wt = w.T  # (in, out), the layout both store
    groups = -(-inp // group)
    g = np.arange(inp) // group
    lo = np.stack([wt[g == k].min(axis=0) for k in range(groups)])
    hi = np.stack([wt[g == k].max(axis=0) for k in range(groups)])
    scale = np.maximum(hi - lo, 1e-8) / 15
    zero = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint32)
    q = np.clip(np.round(wt / scale[g]) + zero[g], 0, 15).astype(np.uint32)

    def pack8(a: np.ndarray, axis: int) -> np.ndarray:
        a = np.moveaxis(a, axis, -1)
        n = a.shape[-1]
        if n % 8:
            a = np.concatenate([a, np.zeros((*a.shape[:-1], 8 - n % 8), a.dtype)], axis=-1)
        a = a.reshape(*a.shape[:-1], -1, 8)
        packed = np.zeros(a.shape[:-1], np.uint32)
        for i in range(8):
            packed |= a[..., i] << (4 * i)
        return np.moveaxis(packed.view(np.int32), -1, axis)

    arrays = {"qweight": pack8(q, 1 if layout == "awq" else 0), "qzeros": pack8(zero, 1),
              "scales": scale.astype(np.float16)}
    if layout == "gptq":
        arrays["g_idx"] = g.astype(np.int32)
    return arrays


def fp8_block_pack(w: np.ndarray, rows: int = 128, cols: int = 128) -> dict[str, np.ndarray]:
    """FP8 codes (one byte each; NumPy has no float8, so uint8 stands for the code) and one fp32 scale
    per rows×cols block: amax / 448 (e4m3's largest normal)."""
    out, inp = w.shape
    br, bc = -(-out // rows), -(-inp // cols)
    scales = np.zeros((br, bc), np.float32)
    for i in range(br):
        for j in range(bc):
            scales[i, j] = np.abs(w[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols]).max() / 448
    return {"weight": np.zeros((out, inp), np.uint8), "weight_scale_inv": scales}


def nf4_pack(w: np.ndarray, double_quant: bool) -> dict[str, np.ndarray]:
    """bitsandbytes 4-bit: the flattened tensor in blocks of 64, an fp32 absmax per block, codes two per
    byte; with double quantisation the absmax in uint8, one fp32 scale per 256 of them and one fp32 offset."""
    flat = w.ravel()
    nb = -(-flat.size // 64)
    padded = np.zeros(nb * 64)
    padded[:flat.size] = flat
    absmax = np.abs(padded.reshape(nb, 64)).max(axis=1).astype(np.float32)
    codes = np.zeros(flat.size, np.uint8)  # the NF4 code values do not change the layout
    arrays = {"weight": _pack_nibbles(codes[None, :])[0]}
    if not double_quant:
        arrays["absmax"] = absmax
        return arrays
    offset = absmax.mean()
    n2 = -(-nb // 256)
    centred = np.zeros(n2 * 256, np.float32)
    centred[:nb] = absmax - offset
    second = np.abs(centred.reshape(n2, 256)).max(axis=1).astype(np.float32)
    arrays["absmax"] = np.zeros(nb, np.uint8)
    arrays["nested_absmax"] = second
    arrays["offset"] = np.array([offset], np.float32)
    return arrays


def _nbytes(arrays: dict[str, np.ndarray]) -> int:
    return sum(a.nbytes for a in arrays.values())


SHAPES = [(64, 64), (96, 160), (300, 200), (2880, 64), (130, 257)]


@pytest.mark.parametrize("out,inp", SHAPES)
def test_mxfp4_bytes_are_the_packed_arrays(out, inp):
    w = RNG.normal(size=(out, inp))
    packed = mx_pack(w)
    assert mxfp4().tensor_bytes(out, inp) == _nbytes(packed)
    # the packing is a real one: decoding it gives every element within half an E2M1 step of the block
    codes = np.stack([packed["blocks"] & 15, packed["blocks"] >> 4], axis=-1).reshape(out, -1)[:, :inp]
    value = np.where(codes & 8, -1, 1) * E2M1[codes & 7]
    scale = 2.0 ** (np.repeat(packed["scales"].astype(int) - 127, 32, axis=1)[:, :inp])
    assert np.all(np.abs(value * scale - np.clip(w, -6 * scale, 6 * scale)) <= scale + 1e-12)


@pytest.mark.parametrize("out,inp", [(64, 128), (96, 256), (3584, 512), (512, 384)])
@pytest.mark.parametrize("group", [32, 64, 128])
def test_awq_and_gptq_bytes_are_the_packed_arrays(out, inp, group):
    w = RNG.normal(size=(out, inp))
    assert int_groups(4, group, 4).tensor_bytes(out, inp) == _nbytes(int_group_pack(w, group, "awq"))
    gptq = int_groups(4, group, 4, index_bits=32, method="gptq")
    assert gptq.tensor_bytes(out, inp) == _nbytes(int_group_pack(w, group, "gptq"))


@pytest.mark.parametrize("out,inp", SHAPES + [(7168, 1536)])
def test_fp8_block_bytes_are_the_codes_and_scales(out, inp):
    w = RNG.normal(size=(out, inp)) if out * inp < 10**6 else np.ones((out, inp))
    assert fp8_blocks().tensor_bytes(out, inp) == _nbytes(fp8_block_pack(w))
    assert fp8_per_channel().tensor_bytes(out, inp) == out * inp + 4 * out  # (out, 1) fp32 scales


@pytest.mark.parametrize("out,inp", SHAPES)
@pytest.mark.parametrize("double_quant", [False, True])
def test_nf4_bytes_are_the_codes_and_absmax(out, inp, double_quant):
    w = RNG.normal(size=(out, inp))
    assert nf4(double_quant).tensor_bytes(out, inp) == _nbytes(nf4_pack(w, double_quant))


def test_nominal_bits_are_the_published_figures():
    """MXFP4: 4 + 8/32 = 4.25 bits (OCP MX v1.0); QLoRA §3: double quantisation costs 8/64 + 32/(64·256)
    ≈ 0.127 bits per parameter instead of 32/64 = 0.5."""
    assert mxfp4().nominal_bits() == Fraction(17, 4)
    assert float(nf4(True).nominal_bits() - 4) == pytest.approx(0.127, abs=5e-4)
    assert nf4(False).nominal_bits() - 4 == Fraction(1, 2)


# ---- properties -------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(out=st.integers(1, 4096), inp=st.integers(1, 4096), k=st.integers(0, 4), bits=st.sampled_from([2, 3, 4, 8]),
       base=st.sampled_from([16, 32, 64]))
def test_smaller_groups_never_take_fewer_bytes(out, inp, k, bits, base):
    """Halving the group size (same bits, zeros, scales) never lowers a tensor's bytes."""
    big, small = int_groups(bits, base * 2 ** (k + 1), bits), int_groups(bits, base * 2 ** k, bits)
    assert small.tensor_bytes(out, inp) >= big.tensor_bytes(out, inp)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 64), cols=st.integers(1, 64), m=st.integers(1, 8), n=st.integers(1, 8))
def test_a_tensor_the_blocks_tile_takes_the_nominal_bits(rows, cols, m, n):
    """Ideal case: an (m·32) × (n·32) tensor in MXFP4, and an (m·rows) × (n·cols) one in FP8 blocks, take
    exactly nominal bits / 8 bytes per element."""
    for f, out, inp in ((mxfp4(), m * rows, n * 32), (fp8_blocks(rows, cols), m * rows, n * cols)):
        assert Fraction(8 * f.tensor_bytes(out, inp), out * inp) == f.nominal_bits()


@settings(max_examples=40, deadline=None)
@given(out=st.integers(1, 3000), inp=st.integers(1, 3000))
def test_bytes_lie_between_the_elements_and_one_byte_more_per_block(out, inp):
    """An FP8 tensor takes at least one byte per weight, and at most 4 more bytes per 128×128 block."""
    f = fp8_blocks()
    n_blocks = math.ceil(out / 128) * math.ceil(inp / 128)
    assert out * inp < f.tensor_bytes(out, inp) == out * inp + 4 * n_blocks


# ---- published checkpoint sizes ---------------------------------------------------------------------------

def _weights(path: Path, q: dict | None = None, **override):
    raw = json.loads(path.read_text())
    raw.update(override)
    if q is not None:
        raw["quantization_config"] = q
    cfg, _ = read_hf_config(raw)
    return quantized_weights(cfg, raw["quantization_config"], raw)


def test_gpt_oss_20b_is_its_index_total_size_to_the_byte():
    """model.safetensors.index.json of openai/gpt-oss-20b: total_size 13,761,264,768 (SOURCES.md): MXFP4
    blocks and E8M0 scales of the experts, every other tensor (expert biases included) in bf16."""
    qw = _weights(CONFIGS / "quant" / "gpt-oss-20b.json")
    assert qw.bytes == 13_761_264_768
    assert qw.summary() == "MXFP4 (4.25 bits) for the experts, bf16 elsewhere"


def test_gpt_oss_120b_is_its_tensor_bytes_to_the_byte():
    """openai/gpt-oss-120b: 65,248,815,744 bytes of tensors (SOURCES.md)."""
    assert _weights(CONFIGS / "gpt-oss-120b.json").bytes == 65_248_815_744


def test_deepseek_v3_with_its_mtp_layer_is_its_weight_files_within_0_01_percent():
    """deepseek-ai/DeepSeek-V3's weight files hold 688,586,727,753 bytes (SOURCES.md). They hold the
    61 layers qkv counts plus the multi-token-prediction layer 61, which qkv does not build: laid out
    here as one more MoE layer of the same layout, its own copies of the embedding and the head (bf16),
    its eh_proj (2d → d, bf16) and three norms. What is left (≈ 12 MB, 0.002 %) is the files' JSON
    headers, which name some 92,000 tensors."""
    q = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
    path = CONFIGS / "deepseek-v3.json"
    main = _weights(path, q).bytes
    one_layer = _weights(path, q, num_hidden_layers=62).bytes - main
    d, V = 7168, 129_280
    mtp = one_layer + 2 * V * d * 2 + 2 * d * d * 2 + 3 * d * 2
    published = 688_586_727_753
    assert 0 < published - (main + mtp) < 1e-4 * published


def test_qwen3_30b_a3b_fp8_is_its_checkpoint_report():
    """Qwen3-30B-A3B-Thinking-2507-FP8 as a report of the downloaded checkpoint lists it (SOURCES.md):
    30,533,947,392 elements in all tensors (the parameters and one weight_scale_inv per 128×128 block) and
    29.03 GiB of tensors. Its quantization_config leaves lm_head and, layer by layer, mlp.gate (the router)
    and the two norms in bf16. That checkpoint stores its scales in bf16 where qkv counts fp32 (as
    transformers' FP8 linear layer holds them and DeepSeek-V3 stores them): 3.6 MB, under the report's
    0.01 GiB."""
    skip = ["lm_head"] + [f"model.layers.{i}.{m}" for i in range(48)
                          for m in ("input_layernorm", "mlp.gate", "post_attention_layernorm")]
    q = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "modules_to_not_convert": skip,
         "weight_block_size": [128, 128]}
    qw = _weights(CONFIGS / "qwen3-30b-a3b.json", q)
    scales = qw.by_dtype()["float32"][0]
    assert qw.elements + scales == 30_533_947_392
    assert round(qw.bytes / 2**30, 2) == 29.03
    router = next(i for i in qw.items if i.key == "ffn.router.weight")
    assert router.quantised == 0 and router.bytes == 48 * 128 * 2048 * 2


#: TheBloke's GPTQ repositories: (bits, group_size (-1: none), the branch's size in GB as its README's
#: "Provided files" table prints it, to 0.01 GB). SOURCES.md names the README copies.
MISTRAL_7B_GPTQ = [(4, 128, 4.16), (4, 32, 4.57), (8, 128, 7.68), (8, 32, 8.17)]
STABLEBELUGA2_70B_GPTQ = [(4, -1, 35.33), (4, 32, 40.66), (4, 64, 37.99), (4, 128, 36.65), (3, 128, 28.03),
                          (3, -1, 26.78), (3, 64, 29.30)]


@pytest.mark.parametrize("which", ["mistral-7b", "llama2-70b"])
def test_gptq_branches_differ_from_their_published_sizes_by_one_small_constant(which):
    """Every branch of one GPTQ repository holds the same non-weight files (tokenizer, configs: about 2.3 MB)
    and, where AutoGPTQ wrote them, the same fp16 bias buffers of its quantised layers: so published − qkv
    must be one constant c for all branches, up to the table's rounding (±0.005 GB), with 0 ≤ c ≤ 0.02 GB.
    Scales, zeros and g_idx that scale with the group size or the bits, or a constant part left out (g_idx
    alone is 22.6 MB in the 70B), break it."""
    if which == "mistral-7b":
        raw = json.loads((CONFIGS / "mistral-7b-v0.1.json").read_text())
        cfg, _ = read_hf_config(raw)
        table = MISTRAL_7B_GPTQ
    else:
        from solver.counting.presets import get_preset

        cfg, raw, table = get_preset("llama2-70b").config, None, STABLEBELUGA2_70B_GPTQ
    diffs = [size - quantized_weights(cfg, {"quant_method": "gptq", "bits": bits, "group_size": group,
                                             "desc_act": True}, raw).bytes / 1e9 for bits, group, size in table]
    lo, hi = max(d - 0.005 for d in diffs), min(d + 0.005 for d in diffs)
    assert lo <= hi and hi >= 0 and lo <= 0.02, diffs


# ---- the scheme: what is honoured and what is refused -----------------------------------------------------

def test_layer_specific_skips_leave_those_layers_at_16_bit():
    """A skip entry naming one layer's module (as Qwen's FP8 MoE releases list their routers) keeps that
    layer's tensor at 16-bit; the other layers stay quantised."""
    path = CONFIGS / "qwen2.5-7b.json"
    q = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    base = _weights(path, q)
    skipped = _weights(path, {**q, "modules_to_not_convert": ["model.layers.3.mlp.down_proj", "lm_head"]})
    down = next(i for i in skipped.items if i.key == "ffn.down.weight")
    assert down.quantised == down.tensors - 1
    d, ff = 3584, 18_944
    assert skipped.bytes - base.bytes == 2 * d * ff - fp8_blocks().tensor_bytes(d, ff)


@pytest.mark.parametrize("q,words", [
    ({"quant_method": "hqq"}, "not modelled"),
    ({"quant_method": "gptq"}, "no bits"),
    ({"quant_method": "awq", "bits": 5}, "bits 5"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "weight_block_size"),
    ({"quant_method": "bitsandbytes"}, "neither load_in_4bit"),
])
def test_what_cannot_be_honoured_is_refused_by_name(q, words):
    with pytest.raises(SolverInputError, match=words) as e:
        scheme_of(q)
    assert f"({q['quant_method']})" in e.value.args[0]


# ---- through the command line -----------------------------------------------------------------------------

def _run(*args):
    return CliRunner().invoke(cli, ["solve", *args])


def test_memory_names_the_format_and_its_bits():
    r = _run("memory", "--config", str(CONFIGS / "quant" / "gpt-oss-20b.json"))
    assert r.exit_code == 0, r.output
    assert "answer: 13,761,264,768 B = 13.76 GB" in r.stdout
    assert "(weights: MXFP4 (4.25 bits) for the experts, bf16 elsewhere)" in r.stdout
    js = json.loads(_run("memory", "--config", str(CONFIGS / "quant" / "gpt-oss-20b.json"), "--json").stdout)
    assert js["answer"] == 13_761_264_768 and js["breakdown"]["by_dtype"]["e8m0"]["bytes"] == 597_196_800


def test_serve_holds_the_quantised_bytes_and_says_so():
    """The batch that fits is computed beside the checkpoint's 13.76 GB, not 2 bytes per parameter."""
    path = str(CONFIGS / "quant" / "gpt-oss-20b.json")
    args = ["serve", "--config", path, "--hw", "h100", "--context", "8k", "--json"]
    js = json.loads(_run(*args).stdout)
    assert js["breakdown"]["weight_bytes"] == 13_761_264_768
    assert js["breakdown"]["weight_format"] == "MXFP4 (4.25 bits) for the experts, bf16 elsewhere"
    assert "MXFP4" in js["convention"]["weights"]
    as_bf16 = json.loads(_run(*args, "--weight-dtype", "bf16").stdout)
    assert as_bf16["breakdown"]["weight_bytes"] == 2 * 20_914_757_184
    assert js["breakdown"]["max_batch"] > as_bf16["breakdown"]["max_batch"]


def test_serve_of_a_dense_quantised_model_reads_its_bytes_every_step(tmp_path):
    """A dense model's step reads every weight once: the quantised bytes (the decode step's weight read)."""
    raw = json.loads((CONFIGS / "qwen2.5-7b.json").read_text())
    raw["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
                                  "version": "gemm"}
    raw["torch_dtype"] = "float16"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(raw))
    r = _run("serve", "--config", str(path), "--hw", "h100", "--context", "4096", "--batch", "8", "--json",
             "--explain")
    assert r.exit_code == 0, r.output
    js = json.loads(r.stdout)
    cfg, _ = read_hf_config(raw)
    qw = quantized_weights(cfg, raw["quantization_config"], raw).bytes
    assert js["breakdown"]["weight_bytes"] == qw
    assert "int4 AWQ" in js["breakdown"]["weight_format"]
    # the step reads those bytes: against every weight in fp16 (2·N bytes), a memory-bound step is shorter
    # by exactly (2·N − quantised bytes) / bandwidth
    fp16 = json.loads(_run("serve", "--config", str(path), "--hw", "h100", "--context", "4096", "--batch", "8",
                           "--json", "--weight-dtype", "fp16").stdout)
    from solver.counting import param_count
    from solver.systems.chips import get_hardware

    bw = get_hardware("h100").hbm_bandwidth
    assert js["breakdown"]["bound"] == fp16["breakdown"]["bound"] == "memory"
    saved = fp16["breakdown"]["step_time_s"] - js["breakdown"]["step_time_s"]
    assert saved == pytest.approx((2 * param_count(cfg) - qw) / bw, rel=1e-9)


@pytest.mark.parametrize("q,why", [({"quant_method": "hqq", "nbits": 4}, "(hqq): its layout is not modelled"),
                                   ({"quant_method": "gptq"}, "(gptq): no bits or w_bit given")])
def test_serve_names_a_quantization_config_it_cannot_lay_out(tmp_path, q, why):
    """Never dropped silently: the weights are at --dtype, and the answer says the file's quantization_config
    was not applied, and why."""
    raw = json.loads((CONFIGS / "qwen2.5-7b.json").read_text())
    raw["quantization_config"] = q
    path = tmp_path / "c.json"
    path.write_text(json.dumps(raw))
    r = _run("serve", "--config", str(path), "--hw", "h100", "--context", "4096")
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.stdout.splitlines() if "weight format" in ln)
    assert f"quantization_config {why}" in line and "not applied, every weight at --dtype" in line
    js = json.loads(_run("serve", "--config", str(path), "--hw", "h100", "--context", "4096", "--json").stdout)
    cfg, _ = read_hf_config(raw)
    from solver.counting import param_count

    assert js["breakdown"]["weight_bytes"] == 2 * param_count(cfg)  # bf16, the --dtype default


def test_the_moe_read_of_all_experts_is_every_weight_but_the_lookup_table():
    """``model_read`` with a quantised layout: reading every expert reads every quantised byte, except that
    the untied input table is a lookup of B rows at the file's dtype."""
    from solver.systems.decode_read import model_read

    raw = json.loads((CONFIGS / "quant" / "gpt-oss-20b.json").read_text())
    cfg, _ = read_hf_config(raw)
    qw = quantized_weights(cfg, raw["quantization_config"], raw)
    B = 16
    read = model_read(cfg, B, 1024, "bf16", "bf16", "all", qw)
    table = cfg.vocab_size * cfg.d_model * 2
    assert read.weight_bytes == qw.bytes - table + B * cfg.d_model * 2


def test_fp8_layout_equals_transformers_quantizer_on_meta():
    """Independent of qkv's formulas: transformers' own FP8 quantizer lays a tiny Llama out on the meta
    device (``solver.counting.hf_meta.quantized_weights``); qkv's layout gives the same bytes by dtype."""
    pytest.importorskip("transformers", minversion="5.0")
    from solver.counting.hf_meta import quantized_weights as hf_quantized

    raw = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256,
           "intermediate_size": 320, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 100, "max_position_embeddings": 32, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
           "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                   "weight_block_size": [128, 128]}}
    cfg, _ = read_hf_config(raw)
    ours = quantized_weights(cfg, raw["quantization_config"], raw).by_dtype()
    theirs = hf_quantized(raw).by_dtype
    assert {k: b for k, (_, b) in ours.items()} == {k: b for k, (_, b) in theirs.items()}


@pytest.mark.parametrize("command", [["decode", "--batch", "8", "--context", "4096"], ["chips"],
                                     ["chips", "--batch", "4", "--context", "4096"]])
def test_decode_and_chips_hold_the_quantised_bytes(command, tmp_path):
    """``decode`` reads, and ``chips`` holds, the checkpoint's bytes (qkv's layout), not N·w at --dtype."""
    raw = json.loads((CONFIGS / "qwen2.5-7b.json").read_text())
    raw["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(raw))
    r = _run(*command, "--config", str(path), "--hw", "h100", "--json")
    assert r.exit_code == 0, r.output
    cfg, _ = read_hf_config(raw)
    js = json.loads(r.stdout)
    assert js["breakdown"]["weight_bytes"] == quantized_weights(cfg, raw["quantization_config"], raw).bytes
    assert js["breakdown"]["weight_format"].startswith("int4 GPTQ (groups of 128")
    as_bf16 = json.loads(_run(*command, "--config", str(path), "--hw", "h100", "--json", "--weight-dtype", "bf16").stdout)
    assert "weight_format" not in as_bf16["breakdown"]


def test_generate_reads_the_quantised_bytes_every_step(tmp_path):
    """A memory-bound generation of n tokens at batch 1 is shorter than at bf16 by n·(2·N − W)/bandwidth
    (every step reads every weight once; the prefill does not read them in this model)."""
    raw = json.loads((CONFIGS / "qwen2.5-7b.json").read_text())
    raw["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(raw))
    args = ["generate", "--config", str(path), "--hw", "h100", "--prompt", "512", "--new-tokens", "64", "--json"]
    q, bf16 = (json.loads(_run(*args, *extra).stdout) for extra in ([], ["--weight-dtype", "bf16"]))
    from solver.counting import param_count
    from solver.systems.chips import get_hardware

    cfg, _ = read_hf_config(raw)
    W = quantized_weights(cfg, raw["quantization_config"], raw).bytes
    bw = get_hardware("h100").hbm_bandwidth
    assert q["breakdown"]["compute_bound_steps"] == bf16["breakdown"]["compute_bound_steps"] == 0
    saved = bf16["breakdown"]["decode_s"] - q["breakdown"]["decode_s"]
    assert saved == pytest.approx(64 * (2 * param_count(cfg) - W) / bw, rel=1e-9)
