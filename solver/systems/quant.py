"""Bytes of quantised weights and caches, block scales included.

A quantised tensor stores its low-bit codes *and* the scales (and zeros/mins) that turn them
back into numbers; "int4 = half a byte" forgets the second part. Every figure here is exact
(``Fraction`` bits per weight, integer bytes) and names what it counts.

* ggml / llama.cpp block formats: a block of ``block`` weights is one C struct of
  ``block_bytes`` bytes; a row must hold a whole number of blocks. The struct fields below are
  those of ``ggml/src/ggml-common.h`` (llama.cpp; read in the copy vendored at
  Samsung/ONE ``runtime/3rdparty/ggml/src/ggml-common.h``), whose ``static_assert`` lines fix the sizes:
  Q4_0 = fp16 d + 16 bytes of nibbles (18 B / 32 weights = 4.5 bits), Q8_0 = fp16 d + 32 int8
  (34 B / 32 = 8.5 bits), Q4_K = fp16 d, dmin + 12 bytes of 6-bit sub-block scales and mins +
  128 bytes of nibbles (144 B / 256 = 4.5 bits), Q5_K = the same + 32 bytes of high bits
  (176 B / 256 = 5.5 bits), Q6_K = 128 B low 4 bits + 64 B high 2 bits + 16 int8 scales + fp16 d
  (210 B / 256 = 6.5625 bits).
* group-wise int4 (GPTQ, AWQ): each group of ``group_size`` consecutive input weights of an
  output channel shares one fp16 scale and one zero point; the zero is stored packed in 4 bits
  (``qzeros``, as AutoGPTQ and AutoAWQ store it) or as fp16 (``zero="fp16"``), or absent
  (symmetric, ``zero="none"``). AutoGPTQ also stores ``g_idx`` (one int32 per input channel),
  counted only with ``g_idx=True``.
* QLoRA's NF4 (Dettmers et al. 2023, §3 "Double Quantization"): 4-bit codes, one fp32 absmax
  per block of 64 (32/64 = 0.5 bits per weight); double quantisation stores those constants in
  fp8 with one fp32 constant per 256 of them: 8/64 + 32/(64·256) bits per weight.
* KV caches in int8, fp8 or int4, with one scale (fp16 or fp32) per ``scale_group`` values when stated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from solver.counting.memory import kv_cache_bytes
from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import dtype_bytes

GGML_SOURCE = "llama.cpp ggml/src/ggml-common.h (block_q4_0 … block_q6_K and their static_asserts)"
QK_K = 256  # super-block size of the K-quants (ggml-common.h: #define QK_K 256)


@dataclass(frozen=True)
class BlockFormat:
    """One ggml block: ``block`` weights stored in the named ``fields`` (name, bytes)."""

    name: str
    block: int
    fields: tuple[tuple[str, int], ...]
    layout: str  # how the weight is rebuilt

    @property
    def block_bytes(self) -> int:
        return sum(b for _, b in self.fields)

    @property
    def bits_per_weight(self) -> Fraction:
        return Fraction(8 * self.block_bytes, self.block)


#: The ggml formats, field by field (ggml-common.h).
GGML_FORMATS: dict[str, BlockFormat] = {f.name: f for f in (
    BlockFormat("q4_0", 32, (("d (fp16 scale)", 2), ("qs (32 × 4-bit)", 32 // 2)), "x = d·(q − 8)"),
    BlockFormat("q4_1", 32, (("d (fp16 scale)", 2), ("m (fp16 min)", 2), ("qs (32 × 4-bit)", 32 // 2)), "x = d·q + m"),
    BlockFormat("q5_0", 32, (("d (fp16 scale)", 2), ("qh (32 high bits)", 4), ("qs (32 × 4 low bits)", 32 // 2)),
                "x = d·(q − 16)"),
    BlockFormat("q5_1", 32, (("d (fp16 scale)", 2), ("m (fp16 min)", 2), ("qh (32 high bits)", 4), ("qs (32 × 4 low bits)", 16)),
                "x = d·q + m"),
    BlockFormat("q8_0", 32, (("d (fp16 scale)", 2), ("qs (32 × int8)", 32)), "x = d·q"),
    BlockFormat("q2_K", QK_K, (("scales (16 × 4-bit scale + 4-bit min)", QK_K // 16), ("qs (256 × 2-bit)", QK_K // 4),
                               ("d (fp16)", 2), ("dmin (fp16)", 2)), "16 sub-blocks of 16: x = a·q + b"),
    BlockFormat("q3_K", QK_K, (("hmask (256 high bits)", QK_K // 8), ("qs (256 × 2 low bits)", QK_K // 4),
                               ("scales (16 × 6-bit)", 12), ("d (fp16)", 2)), "16 sub-blocks of 16: x = a·q"),
    BlockFormat("q4_K", QK_K, (("d (fp16 super-block scale)", 2), ("dmin (fp16 super-block min scale)", 2),
                               ("scales (8 sub-block scales + 8 mins, 6 bits each)", 12), ("qs (256 × 4-bit)", QK_K // 2)),
                "8 sub-blocks of 32: x = a·q + b"),
    BlockFormat("q5_K", QK_K, (("d (fp16 super-block scale)", 2), ("dmin (fp16 super-block min scale)", 2),
                               ("scales (8 sub-block scales + 8 mins, 6 bits each)", 12), ("qh (256 high bits)", QK_K // 8),
                               ("qs (256 × 4 low bits)", QK_K // 2)), "8 sub-blocks of 32: x = a·q + b"),
    BlockFormat("q6_K", QK_K, (("ql (256 × 4 low bits)", QK_K // 2), ("qh (256 × 2 high bits)", QK_K // 4),
                               ("scales (16 × int8 sub-block scale)", QK_K // 16), ("d (fp16 super-block scale)", 2)),
                "16 sub-blocks of 16: x = a·q"),
)}


def _count(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer ≥ {minimum}, got {value}", param=name)
    return int(value)


def ggml_format(name: str) -> BlockFormat:
    key = name.lower().replace("-", "_")
    key = key[:-2] + "_K" if key.endswith("_k") else key
    if key not in GGML_FORMATS:
        raise SolverInputError(f"unknown ggml format {name!r}; known: {', '.join(GGML_FORMATS)}", param="format")
    return GGML_FORMATS[key]


def ggml_bytes(n_weights: int, fmt_name: str = "q4_0") -> Result:
    """Bytes of ``n_weights`` weights in a ggml block format: (n / block) × block_bytes.

    ggml quantises whole blocks along a row: n must be a multiple of the block size.
    Breakdown: blocks, bytes_per_block, code_bytes (the quants alone: n × bits / 8, the "flat" figure
    that forgets the scales), scale_bytes (everything else), bits_per_weight.
    """
    n = _count("n_weights", n_weights)
    f = ggml_format(fmt_name)
    if n % f.block:
        raise SolverInputError(f"{f.name} stores whole blocks of {f.block} weights; {n:,} is not a multiple of {f.block}",
                               param="n_weights")
    r = Result(answer=None, unit="bytes", convention={"format": f.name, "block": f.block, "source": GGML_SOURCE,
                                                       "layout": f.layout})
    block_bytes = r.step("block bytes = " + " + ".join(name for name, _ in f.fields),
                         " + ".join(str(b) for _, b in f.fields), f.block_bytes, "bytes")
    blocks = r.step("blocks = n / block", f"{fmt(n)} / {f.block}", n // f.block)
    total = r.step("bytes = blocks × block bytes", f"{fmt(blocks)} × {block_bytes}", blocks * block_bytes, "bytes")
    bpw = r.step("bits per weight = 8 × block bytes / block", f"8 × {block_bytes} / {f.block}", f.bits_per_weight, "bits")
    codes = sum(b for name, b in f.fields if name.startswith(("qs", "ql", "qh", "hmask"))) * blocks
    r.breakdown = {"blocks": blocks, "bytes_per_block": block_bytes, "code_bytes": codes, "scale_bytes": total - codes,
                   "bits_per_weight": bpw}
    r.answer = total
    return r


ZEROS = ("int4", "fp16", "none")


def group_quant_bytes(rows: int, cols: int, *, group_size: int = 128, bits: int = 4, scale_dtype: str = "fp16",
                      zero: str = "int4", g_idx: bool = False) -> Result:
    """Bytes of a rows × cols weight (cols = input features) quantised group-wise (GPTQ/AWQ).

    codes: rows·cols·bits/8; groups: rows·⌈cols/group_size⌉, each with one scale
    (``scale_dtype``) and one zero (packed ``bits``-bit ints, fp16, or none);
    ``g_idx``: cols int32 (AutoGPTQ's group index). Breakdown: code_bytes, groups,
    scale_bytes, zero_bytes, g_idx_bytes, bits_per_weight.
    """
    rows, cols = _count("rows", rows), _count("cols", cols)
    g = _count("group_size", group_size)
    b = _count("bits", bits)
    if b > 8:
        raise SolverInputError(f"group-wise formats here pack at most 8 bits, got {b}", param="bits")
    if zero not in ZEROS:
        raise SolverInputError(f"zero must be one of {', '.join(ZEROS)}, got {zero!r}", param="zero")
    sb = dtype_bytes(scale_dtype)
    r = Result(answer=None, unit="bytes", convention={"group_size": g, "bits": b, "scale_dtype": scale_dtype,
                                                       "zero": zero, "g_idx": g_idx, "groups_along": "input features (cols)"})
    n = rows * cols
    codes = r.step("code bytes = rows × cols × bits / 8", f"{fmt(rows)} × {fmt(cols)} × {b} / 8", Fraction(n * b, 8), "bytes")
    groups = r.step("groups = rows × ⌈cols / group⌉", f"{fmt(rows)} × ⌈{fmt(cols)} / {g}⌉", rows * math.ceil(cols / g))
    scales = r.step(f"scale bytes = groups × {sb} ({scale_dtype})", f"{fmt(groups)} × {sb}", groups * sb, "bytes")
    zb = {"int4": Fraction(b, 8), "fp16": Fraction(2), "none": Fraction(0)}[zero]
    zeros = r.step(f"zero bytes = groups × {fmt(zb)} ({zero})", f"{fmt(groups)} × {fmt(zb)}", groups * zb, "bytes")
    gi = r.step("g_idx bytes = cols × 4 (int32)", f"{fmt(cols)} × 4", 4 * cols if g_idx else 0, "bytes") if g_idx else 0
    total = r.step("bytes = codes + scales + zeros" + (" + g_idx" if g_idx else ""),
                   " + ".join(fmt(x) for x in ((codes, scales, zeros, gi) if g_idx else (codes, scales, zeros))),
                   codes + scales + zeros + gi, "bytes")
    r.breakdown = {"code_bytes": codes, "groups": groups, "scale_bytes": scales, "zero_bytes": zeros, "g_idx_bytes": gi,
                   "bits_per_weight": Fraction(8) * total / n}
    r.answer = total
    return r


def nf4_bits_per_param(*, blocksize: int = 64, double_quant: bool = True, dq_blocksize: int = 256,
                       const_bits: int = 32, dq_const_bits: int = 8) -> Result:
    """QLoRA's storage per weight: 4-bit NF4 codes + quantisation constants.

    Without double quantisation: 4 + const_bits/blocksize (fp32 absmax per block of 64: 0.5).
    With it: 4 + dq_const_bits/blocksize + const_bits/(blocksize·dq_blocksize) (fp8 constants,
    one fp32 per 256 of them: 8/64 + 32/16384 ≈ 0.127). Answer: bits per parameter.
    Breakdown: code_bits, const_bits (overhead), overhead_saved (vs no double quantisation).
    """
    bs, dqb = _count("blocksize", blocksize), _count("dq_blocksize", dq_blocksize)
    r = Result(answer=None, unit="bits per parameter",
               convention={"blocksize": bs, "double_quant": double_quant, "dq_blocksize": dqb if double_quant else None,
                           "const_bits": const_bits, "dq_const_bits": dq_const_bits if double_quant else None,
                           "source": "Dettmers et al. 2023, QLoRA, §3 Double Quantization"})
    plain = Fraction(const_bits, bs)
    if double_quant:
        over = r.step("constant bits = c₂ bits / block + c₁ bits / (block × dq block)",
                      f"{dq_const_bits}/{bs} + {const_bits}/({bs} × {dqb})",
                      Fraction(dq_const_bits, bs) + Fraction(const_bits, bs * dqb), "bits")
    else:
        over = r.step("constant bits = c bits / block", f"{const_bits}/{bs}", plain, "bits")
    total = r.step("bits per parameter = 4 + constant bits", f"4 + {fmt(over)}", 4 + over, "bits")
    r.breakdown = {"code_bits": 4, "const_bits": over, "overhead_saved": plain - over}
    r.answer = total
    return r


def nf4_bytes(n_weights: int, **kw) -> Fraction:
    """Bytes of n weights in NF4 (bits per parameter × n / 8, exact)."""
    return nf4_bits_per_param(**kw).answer * _count("n_weights", n_weights) / 8


KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")


def kv_cache_quant_bytes(n_layers: int, batch: int, seq: int, n_kv_heads: int, d_head: int, dtype: str = "int8", *,
                         scale_group: int | None = None, scale_dtype: str = "fp16") -> Result:
    """KV cache bytes in a low-precision dtype, with one ``scale_dtype`` scale per ``scale_group`` values.

    values = 2 (K and V) · L · B · S · h_kv · d_h; codes = values × dtype bytes (int4: ⌈values/2⌉);
    scales = ⌈values / scale_group⌉ × scale bytes (none when ``scale_group`` is None, e.g.
    fp8 with one per-tensor scale). Breakdown: values, code_bytes, scales, scale_bytes.
    """
    dims = {k: _count(k, v) for k, v in (("n_layers", n_layers), ("batch", batch), ("seq", seq),
                                          ("n_kv_heads", n_kv_heads), ("d_head", d_head))}
    if dtype not in KV_DTYPES:
        raise SolverInputError(f"dtype must be one of {', '.join(KV_DTYPES)}, got {dtype!r}", param="dtype")
    r = Result(answer=None, unit="bytes", convention={"dtype": dtype, "scale_group": scale_group,
                                                       "scale_dtype": scale_dtype if scale_group else None,
                                                       "kv": "K and V both cached"})
    values = r.step("values = 2 × L × B × S × h_kv × d_h",
                    " × ".join(["2"] + [fmt(v) for v in dims.values()]), 2 * math.prod(dims.values()))
    codes = r.step(f"code bytes = values × {fmt(dtype_bytes(dtype))} ({dtype})", f"{fmt(values)} × {fmt(dtype_bytes(dtype))}",
                   kv_cache_bytes(dims["n_layers"], dims["batch"], dims["seq"], dims["n_kv_heads"], dims["d_head"], dtype),
                   "bytes")
    n_scales = scale_bytes = 0
    if scale_group is not None:
        sg = _count("scale_group", scale_group)
        sb = dtype_bytes(scale_dtype)
        n_scales = r.step("scales = ⌈values / group⌉", f"⌈{fmt(values)} / {sg}⌉", -(-values // sg))
        scale_bytes = r.step(f"scale bytes = scales × {sb} ({scale_dtype})", f"{fmt(n_scales)} × {sb}", n_scales * sb, "bytes")
    total = r.step("bytes = codes + scales", f"{fmt(codes)} + {fmt(scale_bytes)}", codes + scale_bytes, "bytes")
    r.breakdown = {"values": values, "code_bytes": codes, "scales": n_scales, "scale_bytes": scale_bytes}
    r.answer = total
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's quant(...),
# from qkv solve quant.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

QUANT_ZERO = Convention("zero", "group-int4: how the zero points are stored.", {
    "int4": Choice("packed 4-bit zero points, one per group (AutoGPTQ, AWQ)", "AutoGPTQ qzeros"),
    "fp16": Choice("fp16 zero points, one per group", ""),
    "none": Choice("symmetric: no zero points", "")}, "int4")
QUANT_G_IDX = Convention("g_idx", "group-int4: whether AutoGPTQ's int32 g_idx per input feature counts.", {
    "off": Choice("no g_idx (act-order off, or not stored)", ""),
    "on": Choice("one int32 per input feature (AutoGPTQ with desc_act)", "AutoGPTQ")}, "off")
QUANT_DOUBLE = Convention("double_quant", "nf4: whether the block constants are themselves quantised.", {
    "on": Choice("8-bit constants with an fp32 constant per 256 of them", "Dettmers et al. 2023 (QLoRA), §3"),
    "off": Choice("one fp32 constant per block", "Dettmers et al. 2023, §3")}, "on")


@formula("quant", "Bytes of quantised weights, their block or group scales included: ggml blocks (q4_0 … q6_K), "
         "group-int4 (GPTQ/AWQ) or nf4 (QLoRA).",
         (Input("weights", "N: weights (or a model: its parameter count)", kind="count", integer=True, minimum=1,
                default=None, aliases=("N", "params")),
          Input("format", "q4_0, q4_1, q5_0, q5_1, q8_0, q2_K … q6_K, group_int4 (gptq, awq) or nf4", kind="choice",
                aliases=("fmt",)),
          Input("rows", "group-int4: output rows", kind="count", integer=True, minimum=1, default=None),
          Input("cols", "group-int4: input features (the groups run along them)", kind="count", integer=True,
                minimum=1, default=None),
          Input("group_size", "group-int4: the group size", kind="count", integer=True, minimum=1, default=128),
          Input("blocksize", "nf4: the block size", kind="count", integer=True, minimum=1, default=64,
                aliases=("block_size",)),
          Input("model", "a model preset or config: its parameter count", kind="model", default=None,
                aliases=("preset", "config"))),
         (Output("bytes", "B", "the quantised weights' bytes, scales included (nf4: needs weights)"),
          Output("bits_per_weight", "", "bits per weight, scales included")),
         conventions=(QUANT_ZERO, QUANT_G_IDX, QUANT_DOUBLE), solve="quant",
         source=GGML_SOURCE + "; Frantar et al. 2022 (GPTQ); Dettmers et al. 2023 (QLoRA)")
def _quant_formula(weights, format, rows, cols, group_size, blocksize, model, zero="int4", g_idx="off",
                   double_quant="on"):
    key = str(format).lower().replace("_", "-")
    name = key if key in ("group-int4", "gptq", "awq", "nf4") else str(format)
    if model is not None:
        if weights is not None:
            raise SolverInputError("give weights= or a model, not both", param="weights")
        if name in ("group-int4", "gptq", "awq"):
            raise SolverInputError("group-int4 counts one matrix: give rows and cols, not a model", param="model")
        from solver.counting import param_count

        weights = param_count(model)
    if name in ("group-int4", "gptq", "awq"):
        if rows is None or cols is None:
            raise SolverInputError("group-int4 needs rows and cols (the groups run along the input features)",
                                   param="rows")
        r = group_quant_bytes(rows, cols, group_size=group_size, zero=zero, g_idx=g_idx == "on")
        r.breakdown["bytes"] = r.answer
    elif name == "nf4":
        r = nf4_bits_per_param(blocksize=blocksize, double_quant=double_quant == "on")
        r.breakdown["bits_per_weight"] = r.answer
        if weights is not None:
            r.breakdown["bytes"] = r.answer * int(weights) / 8
    else:
        n = weights if weights is not None else (rows * cols if rows is not None and cols is not None else None)
        if n is None:
            raise SolverInputError("give weights= (or rows and cols)", param="weights")
        r = ggml_bytes(int(n), name)
        r.breakdown["bytes"] = r.answer
    return r


FORMULAS = (_quant_formula.formula,)
