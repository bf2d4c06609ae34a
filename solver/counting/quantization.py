"""The weight bytes of a quantised checkpoint: what a config.json's ``quantization_config`` stores.

One :class:`QuantFormat` per storage layout, as data with its source; :func:`scheme_of` reads a
``quantization_config`` into a :class:`Scheme` (the format, and the modules it leaves alone), or refuses
it in one line; :func:`quantized_weights` lays a :class:`~solver.counting.config.ModelConfig`'s tensors
out under it (:func:`solver.counting.params.param_breakdown` gives every tensor kind and its shape).

Conventions (the checkpoint's layout, as its files store it):

- A quantised tensor of shape (out, in) stores ``⌈out·in·bits / 8⌉`` bytes of packed elements (MXFP4: each
  row padded to whole blocks of 32, as its ``*_blocks`` tensors of (out, in/32, 16) bytes are), one scale
  per block (``⌈out / rows⌉ · ⌈in / cols⌉`` blocks, or one per tensor, or one per ``flat`` consecutive
  elements), a zero point per block where the format keeps one, and GPTQ's ``g_idx`` (one int32 per input
  column). Shapes that do not divide the packing word are rounded up to whole bytes per tensor.
- Which tensors: the 2-D weights of linear layers inside the decoder layers (attention projections,
  dense FFN, routed and shared experts; the MoE router where it is a linear layer) that no
  ``modules_to_not_convert`` / ``ignore`` / ``ignored_layers`` / ``exclude_modules`` /
  ``llm_int8_skip_modules`` entry names. The token (and position) tables, the LM head (unless the
  config quantises it: GPTQ's ``lm_head: true``), norms, biases and attention sinks stay at the file's
  ``torch_dtype`` (bf16 where it names none). A MoE router that is a plain parameter rather than a
  linear layer (DeepSeek-V2/V3's ``MoEGate``) stays there too.
- A module name is matched as transformers' HuggingFace names spell it (``model.layers.3.self_attn.q_proj``,
  ``model.layers.3.mlp.experts.0.down_proj``, ``lm_head``): an entry matches a whole dotted part of the
  name, ``*`` stands for one part, ``re:`` starts a regular expression (compressed-tensors).
- FP8 block scales are counted in fp32, as transformers' FP8 linear layer holds them and DeepSeek-V3's
  checkpoint stores them (Qwen3's FP8 checkpoints store them in bf16: 2 bytes less per 128×128 block).
- Multi-head latent attention is laid out as HuggingFace's ``DeepseekV3Attention`` stores it: the query
  up-projection with its rotary part is one tensor (``q_b_proj``), the KV down-projection with the
  shared rotary key one (``kv_a_proj_with_mqa``), the key and value up-projections one (``kv_b_proj``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError

OCP_MX = "OCP Microscaling Formats (MX) Specification v1.0 (2023), Table 1 (MXFP4: FP4 E2M1 elements, k = 32, E8M0 scale)"
DEEPSEEK_FP8 = ("DeepSeek-V3 config.json quantization_config (fp8, e4m3, weight_block_size [128, 128]) and its "
                "README_WEIGHTS.md: 128×128 weight blocks, one fp32 weight_scale_inv per block")
AUTOGPTQ = ("AutoGPTQ / GPTQModel QuantLinear: qweight int32 (in·bits/32, out), qzeros int32 (groups, out·bits/32), "
            "scales fp16 (groups, out), g_idx int32 (in); qzeros are stored with sym true as well")
AUTOAWQ = ("AutoAWQ WQLinear_GEMM: qweight int32 (in, out·bits/32), qzeros int32 (groups, out·bits/32) with "
           "zero_point, scales fp16 (groups, out)")
FBGEMM = "transformers FbgemmFp8Linear: weight float8_e4m3fn (out, in), weight_scale float32 (out, 1): one per row"
QLORA = ("Dettmers et al. 2023 (QLoRA) §2-3 and bitsandbytes Params4bit: 4-bit NF4/FP4, blocks of 64 with an fp32 "
         "absmax; double quantisation stores the absmax in 8 bits with one fp32 per 256 of them "
         "(8/64 + 32/(64·256) = 0.127 bits per parameter)")
BNB8 = "bitsandbytes Int8Params (LLM.int8(), Dettmers et al. 2022): int8 weight (out, in), fp32 SCB per row"

_STORED = {"bfloat16": ("bf16", 2), "bf16": ("bf16", 2), "float16": ("fp16", 2), "fp16": ("fp16", 2),
           "half": ("fp16", 2), "float32": ("fp32", 4), "fp32": ("fp32", 4), "float": ("fp32", 4)}


@dataclass(frozen=True)
class QuantFormat:
    """How one quantised weight tensor of shape (out, in) is stored.

    ``block``: the (rows along out, columns along in) one scale covers; 0 means the whole axis (so
    ``(1, 0)`` is one scale per output row); ``None`` with ``flat = 0``: one scale per tensor.
    ``flat``: blocks of that many consecutive elements of the flattened tensor (bitsandbytes).
    ``scale_bits`` / ``zero_bits``: per block; ``index_bits``: per input column (GPTQ's g_idx);
    ``second_level``: (blocks per second-level scale, its bits) for double quantisation."""

    name: str  # for people: "MXFP4", "FP8 e4m3 (128×128 blocks)"
    bits: int  # bits of one stored element
    block: tuple[int, int] | None
    scale_bits: int
    source: str
    zero_bits: int = 0
    index_bits: int = 0
    flat: int = 0
    second_level: tuple[int, int] | None = None
    tensor_extra_bits: int = 0  # per tensor: a static activation scale (fp32)
    whole_blocks: bool = False  # each row padded to whole blocks (MXFP4's blocks: (out, in/32, 16) bytes)
    element: str = ""  # the stored element's dtype name (by_dtype)
    scale: str = "float32"  # the scale's dtype name

    def blocks(self, out: int, inp: int) -> int:
        """Scales one (out, in) tensor stores."""
        if self.flat:
            return -(-out * inp // self.flat)
        if self.block is None:
            return 1
        rows, cols = self.block
        return -(-out // (rows or out)) * -(-inp // (cols or inp))

    def parts(self, out: int, inp: int) -> dict[str, int]:
        """Bytes of one (out, in) tensor by part: ``weight`` (packed elements), ``scales``, ``zeros``,
        ``index``."""
        n = out * (-(-inp // self.block[1]) * self.block[1] if self.whole_blocks and self.block else inp)
        nb = self.blocks(out, inp)
        scale_bits = nb * self.scale_bits + self.tensor_extra_bits
        if self.second_level:
            per, bits = self.second_level
            scale_bits += -(-nb // per) * bits + 32  # the second level's scales and its one fp32 offset
        return {"weight": -(-n * self.bits // 8), "scales": -(-scale_bits // 8),
                "zeros": -(-nb * self.zero_bits // 8), "index": inp * self.index_bits // 8}

    def tensor_bytes(self, out: int, inp: int) -> int:
        """Bytes of one quantised (out, in) tensor, every part together."""
        return sum(self.parts(out, inp).values())

    def bits_per_weight(self, out: int, inp: int) -> Fraction:
        """Stored bits per weight of one (out, in) tensor (scales and zeros included)."""
        return Fraction(8 * self.tensor_bytes(out, inp), out * inp)

    def nominal_bits(self) -> Fraction:
        """Bits per weight of a tensor the blocks tile exactly (``block`` rows·cols elements per scale)."""
        if self.flat:
            per = Fraction(self.flat)
        elif self.block is None or 0 in self.block:
            return Fraction(self.bits)
        else:
            per = Fraction(self.block[0] * self.block[1])
        extra = Fraction(self.scale_bits + self.zero_bits, 1)
        if self.second_level:
            extra += Fraction(self.second_level[1], self.second_level[0])
        return self.bits + extra / per


def mxfp4() -> QuantFormat:
    """MXFP4 (OCP MX v1.0): 32 FP4 E2M1 elements along the input share one 8-bit E8M0 scale: 4.25 bits."""
    from solver.kernels.float_formats import BLOCK_FORMATS

    _elem, bits, k, scale_bits, _kind, _src = BLOCK_FORMATS["mxfp4"]
    return QuantFormat("MXFP4", bits, (1, k), scale_bits, OCP_MX, whole_blocks=True, element="fp4_e2m1 (2 per byte)",
                       scale="e8m0")


def fp8_blocks(rows: int = 128, cols: int = 128, fmt: str = "e4m3", static: bool = False) -> QuantFormat:
    """FP8 weights with one fp32 scale per rows×cols block (DeepSeek-V3; transformers' FineGrainedFP8)."""
    return QuantFormat(f"FP8 {fmt} ({rows}×{cols} blocks, fp32 scales)", 8, (rows, cols), 32, DEEPSEEK_FP8,
                       tensor_extra_bits=32 if static else 0, element=_fp8_name(fmt))


def fp8_per_channel(fmt: str = "e4m3") -> QuantFormat:
    """FP8 weights with one fp32 scale per output row (fbgemm_fp8)."""
    return QuantFormat(f"FP8 {fmt} (one fp32 scale per output row)", 8, (1, 0), 32, FBGEMM, element=_fp8_name(fmt))


def int_groups(bits: int = 4, group: int = 128, zero_bits: int = 4, index_bits: int = 0, source: str = AUTOAWQ,
               method: str = "awq") -> QuantFormat:
    """int``bits`` weights, one fp16 scale (and a packed ``zero_bits`` zero point) per ``group`` input
    columns of each output row (AWQ, GPTQ); ``group`` 0: one group per row."""
    where = f"groups of {group}" if group else "one group per row"
    zero = f", {zero_bits}-bit zeros" if zero_bits else ", no zeros"
    return QuantFormat(f"int{bits} {method.upper()} ({where}, fp16 scales{zero})", bits, (1, group), 16, source,
                       zero_bits=zero_bits, index_bits=index_bits, element=f"int{bits}" + (" (packed)" if bits < 8 else ""),
                       scale="float16")


def nf4(double_quant: bool = False, quant_type: str = "nf4") -> QuantFormat:
    """bitsandbytes 4-bit (QLoRA): blocks of 64 elements, an fp32 absmax each, or 8-bit absmax with one
    fp32 per 256 of them (double quantisation)."""
    dq = " with double quantisation" if double_quant else ""
    if double_quant:
        return QuantFormat(f"{quant_type.upper()} (blocks of 64{dq})", 4, None, 8, QLORA, flat=64,
                           second_level=(256, 32), element=f"{quant_type} (2 per byte)", scale="uint8 absmax")
    return QuantFormat(f"{quant_type.upper()} (blocks of 64, fp32 absmax)", 4, None, 32, QLORA, flat=64,
                       element=f"{quant_type} (2 per byte)")


def int8_rows() -> QuantFormat:
    """bitsandbytes 8-bit (LLM.int8()): int8 weights, one fp32 scale per output row."""
    return QuantFormat("int8 (LLM.int8(), one fp32 scale per row)", 8, (1, 0), 32, BNB8, element="int8")


def _fp8_name(fmt: str) -> str:
    return "float8_e5m2" if fmt == "e5m2" else "float8_e4m3fn"


# ---- reading a quantization_config ------------------------------------------------------------------------

_SKIP_KEYS = ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules", "llm_int8_skip_modules")


@dataclass(frozen=True)
class Scheme:
    """A ``quantization_config`` as qkv honours it: the format, the modules left alone, and whether
    the LM head is quantised."""

    method: str
    format: QuantFormat
    skip: tuple[str, ...] = ()
    lm_head: bool = False
    notes: tuple[str, ...] = field(default=(), compare=False)


class NotModelled(SolverInputError):
    """A ``quant_method`` whose layout qkv does not model (a caller may ask transformers' quantizer)."""


def _refuse(method: str, why: str) -> SolverInputError:
    return SolverInputError(f"quantization_config ({method}): {why}", param="config")


def _int(q: dict[str, Any], method: str, *keys: str, default: int | None = None) -> int:
    for k in keys:
        if k in q and q[k] is not None:
            v = q[k]
            if isinstance(v, bool) or not isinstance(v, int):
                raise _refuse(method, f"{k} {v!r} is not an integer")
            return v
    if default is None:
        raise _refuse(method, f"no {' or '.join(keys)} given")
    return default


def scheme_of(q: dict[str, Any]) -> Scheme:
    """The :class:`Scheme` of a ``quantization_config``; a method or setting qkv does not model is
    refused in one line that names it."""
    if not isinstance(q, dict) or not isinstance(q.get("quant_method"), str):
        raise SolverInputError("quantization_config has no quant_method", param="config")
    method = q["quant_method"].lower()
    skip: list[str] = []
    for k in _SKIP_KEYS:
        v = q.get(k)
        if isinstance(v, str):
            skip.append(v)
        elif isinstance(v, list):
            skip.extend(str(x) for x in v)
    lm_head = False
    if method == "mxfp4":
        fmt = mxfp4()
    elif method == "fp8":
        kind = q.get("fmt", "e4m3")
        if kind not in ("e4m3", "e5m2"):
            raise _refuse(method, f"fmt {kind!r} is not an FP8 format")
        block = q.get("weight_block_size", [128, 128])  # transformers' FineGrainedFP8Config default
        if block is None:
            raise _refuse(method, "per-tensor scales (weight_block_size null) are not modelled")
        if not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and not isinstance(b, bool)
                                                                     and b > 0 for b in block)):
            raise _refuse(method, f"weight_block_size {block!r} is not two positive integers")
        fmt = fp8_blocks(block[0], block[1], kind, static=q.get("activation_scheme") == "static")
    elif method == "fbgemm_fp8":
        fmt = fp8_per_channel()
    elif method in ("awq", "gptq"):
        bits = _int(q, method, "bits", "w_bit")
        if bits not in (2, 3, 4, 8):
            raise _refuse(method, f"bits {bits} is not modelled (2, 3, 4 or 8)")
        group = _int(q, method, "group_size", "q_group_size", default=128)
        if group == -1:
            group = 0
        if group < 0:
            raise _refuse(method, f"group_size {group} is not positive (or -1)")
        if method == "awq":
            version = str(q.get("version", "gemm")).lower()
            if version not in ("gemm", "gemv", "gemv_fast"):
                raise _refuse(method, f"version {version!r} is not modelled (gemm, gemv)")
            zero = bits if q.get("zero_point", True) else 0
            fmt = int_groups(bits, group, zero, source=AUTOAWQ, method="awq")
        else:
            if q.get("checkpoint_format", "gptq") not in ("gptq", "gptq_v2"):
                raise _refuse(method, f"checkpoint_format {q.get('checkpoint_format')!r} is not modelled")
            fmt = int_groups(bits, group, bits, index_bits=32, source=AUTOGPTQ, method="gptq")
            lm_head = bool(q.get("lm_head", False))
    elif method == "bitsandbytes":
        if q.get("load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "fp4")
            if kind not in ("nf4", "fp4"):
                raise _refuse(method, f"bnb_4bit_quant_type {kind!r} is not modelled")
            fmt = nf4(bool(q.get("bnb_4bit_use_double_quant")), kind)
        elif q.get("load_in_8bit"):
            fmt = int8_rows()
        else:
            raise _refuse(method, "neither load_in_4bit nor load_in_8bit")
    else:
        raise NotModelled(f"quantization_config ({method}): this method's layout is not modelled (fp8, "
                          "fbgemm_fp8, mxfp4, awq, gptq, bitsandbytes are)", param="config")
    return Scheme(method, fmt, tuple(skip), lm_head)


# ---- the tensors of a ModelConfig, as HuggingFace names them ------------------------------------------------

#: qkv's tensor kind -> (HuggingFace module under a layer, its aliases). Latent attention's merged tensors
#: are listed under the first part's kind (see :data:`_MERGED`).
_LINEAR = {
    "attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj", "attn.v": "self_attn.v_proj",
    "attn.o": "self_attn.o_proj", "attn.q_a": "self_attn.q_a_proj", "attn.q_b": "self_attn.q_b_proj",
    "attn.kv_a": "self_attn.kv_a_proj_with_mqa", "attn.k_b": "self_attn.kv_b_proj",
    "cross_attn.q": "encoder_attn.q_proj", "cross_attn.k": "encoder_attn.k_proj",
    "cross_attn.v": "encoder_attn.v_proj", "cross_attn.o": "encoder_attn.o_proj",
    "ffn.gate": "mlp.gate_proj", "ffn.up": "mlp.up_proj", "ffn.down": "mlp.down_proj",
    "ffn.dense.gate": "mlp.gate_proj", "ffn.dense.up": "mlp.up_proj", "ffn.dense.down": "mlp.down_proj",
    "ffn.expert.gate": "mlp.experts.0.gate_proj", "ffn.expert.up": "mlp.experts.0.up_proj",
    "ffn.expert.down": "mlp.experts.0.down_proj",
    "ffn.shared.gate": "mlp.shared_experts.gate_proj", "ffn.shared.up": "mlp.shared_experts.up_proj",
    "ffn.shared.down": "mlp.shared_experts.down_proj",
    "ffn.router": "mlp.gate",
}
#: Other spellings of the same module (a skip entry naming any of them skips it).
_ALIASES = {
    "ffn.router": ("mlp.router", "block_sparse_moe.gate"),
    "ffn.expert.gate": ("mlp.experts.gate_up_proj", "block_sparse_moe.experts.0.w1"),
    "ffn.expert.up": ("mlp.experts.gate_up_proj", "block_sparse_moe.experts.0.w3"),
    "ffn.expert.down": ("mlp.experts.down_proj", "block_sparse_moe.experts.0.w2"),
    "ffn.shared.gate": ("mlp.shared_expert.gate_proj",), "ffn.shared.up": ("mlp.shared_expert.up_proj",),
    "ffn.shared.down": ("mlp.shared_expert.down_proj",),
}
#: Latent attention: qkv's kinds that HuggingFace stores as one tensor (outputs concatenated).
_MERGED = {"attn.q_b_rope": "attn.q_b", "attn.q_rope": "attn.q", "attn.k_rope": "attn.kv_a", "attn.v_b": "attn.k_b"}
#: Model types whose MoE router is a plain parameter, not a linear layer (never quantised).
_PARAM_ROUTER = ("deepseek_v2", "deepseek_v3", "kimi_k2")
_LAYERS = ("L", "L_e", "L_d", "L_D", "L_M")


def _matches(entry: str, name: str) -> bool:
    if entry.startswith("re:"):
        try:
            return re.search(entry[3:], name) is not None
        except re.error:
            return False
    rx = re.escape(entry).replace(r"\*", r"[^.]*")
    return re.search(rf"(?:^|\.){rx}(?:\.|$)", name) is not None


def _in_layer_set(cfg: ModelConfig, symbol: str, i: int, count: int) -> bool:
    if not 0 <= i < count and symbol not in ("L_D", "L_M"):
        return False
    if symbol == "L_M":
        return 0 <= i < cfg.n_layers and cfg.is_moe_layer(i)
    if symbol == "L_D":
        return 0 <= i < cfg.n_layers and not cfg.is_moe_layer(i)
    return True


def _skipped_layers(cfg: ModelConfig, skip: tuple[str, ...], modules: tuple[str, ...], symbol: str,
                    count: int) -> int:
    """How many of the ``count`` layers of ``symbol`` have the module skipped by an entry of ``skip``
    (closed form: an entry naming no layer index skips all or none; one naming layer k skips that one)."""
    stack = "model.decoder.layers" if symbol == "L_d" else "model.encoder.layers" if symbol == "L_e" else "model.layers"
    named: set[int] = set()
    for entry in skip:
        far = [f"{stack}.{10**9 + 7}.{m}" for m in modules]
        near = [f"{stack}.0.{m}" for m in modules]
        hit_far, hit_near = any(_matches(entry, n) for n in far), any(_matches(entry, n) for n in near)
        if hit_far and hit_near:
            return count
        for k in {int(x) for x in re.findall(r"layers\.(\d+)\.", entry + ".")}:
            if _in_layer_set(cfg, symbol, k, count) and any(_matches(entry, f"{stack}.{k}.{m}") for m in modules):
                named.add(k)
        if hit_near and not hit_far and not re.findall(r"layers\.(\d+)\.", entry + "."):
            raise SolverInputError(f"quantization_config: the entry {entry!r} names some layers only; not "
                                   "modelled", param="config")
    return len(named)


@dataclass(frozen=True)
class QuantPart:
    """One tensor kind: ``quantised`` of its ``tensors`` stored in the format, the rest at the file's dtype."""

    key: str
    label: str
    elements: int  # all tensors of this kind together
    tensors: int
    quantised: int  # how many of the tensors are quantised
    bytes: int
    parts: dict[str, int]  # weight, scales, zeros, index (quantised tensors), stored (the rest)


@dataclass(frozen=True)
class QuantWeights:
    """The bytes of every weight of a model under a :class:`Scheme` (see the module docstring)."""

    scheme: Scheme
    stored: str  # the file's dtype for the tensors left alone (bf16)
    stored_bytes: int
    items: tuple[QuantPart, ...]

    @property
    def bytes(self) -> int:
        return sum(i.bytes for i in self.items)

    @property
    def elements(self) -> int:
        return sum(i.elements for i in self.items)

    @property
    def quantised_elements(self) -> int:
        return sum(i.elements * i.quantised // i.tensors for i in self.items if i.quantised)

    @property
    def quantised_bytes(self) -> int:
        return sum(i.bytes - i.parts.get("stored", 0) for i in self.items)

    def part_total(self, part: str) -> int:
        return sum(i.parts.get(part, 0) for i in self.items)

    @property
    def bits_per_quantised_weight(self) -> Fraction:
        q = self.quantised_elements
        return Fraction(8 * self.quantised_bytes, q) if q else Fraction(0)

    def which(self) -> str:
        """``the experts`` / ``the linear layers``: what the format covers, in words."""
        kinds = [i.key.split(".", 1)[-1] if i.key.startswith(("encoder.", "decoder.")) else i.key
                 for i in self.items if i.quantised]
        if kinds and all(k.startswith(("ffn.expert.", "ffn.shared.")) for k in kinds):
            return "the experts"
        return "the linear layers"

    def by_dtype(self) -> dict[str, tuple[int, int]]:
        """``dtype -> (elements, bytes)``: packed elements, scales, zeros, g_idx, and the stored rest."""
        f = self.scheme.format
        out: dict[str, list[int]] = {}

        def add(k: str, n: int, b: int) -> None:
            e = out.setdefault(k, [0, 0])
            e[0] += n
            e[1] += b

        q = self.quantised_elements
        add(f.element, q, self.part_total("weight"))
        for part, dtype, bits in (("scales", f.scale, f.scale_bits), ("zeros", f"int{f.zero_bits} zeros (packed)",
                                                                      f.zero_bits), ("index", "int32 g_idx", 32)):
            b = self.part_total(part)
            if b:
                add(dtype, b * 8 // bits if bits else 0, b)
        stored_name = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[self.stored]
        rest = self.part_total("stored")
        add(stored_name, rest // self.stored_bytes, rest)
        return {k: (v[0], v[1]) for k, v in out.items() if v[1]}

    def summary(self) -> str:
        """``MXFP4 (4.25 bits) for the experts, bf16 elsewhere``."""
        bits = self.bits_per_quantised_weight
        shown = f"{float(bits):.4g}" if bits.denominator != 1 else str(bits.numerator)
        return f"{self.scheme.format.name} ({shown} bits) for {self.which()}, {self.stored} elsewhere"

    def to_json(self) -> dict[str, Any]:
        return {"format": self.scheme.format.name, "method": self.scheme.method, "source": self.scheme.format.source,
                "bits_per_quantised_weight": float(self.bits_per_quantised_weight),
                "quantised_weights": self.quantised_elements, "elsewhere": self.stored,
                "skip": list(self.scheme.skip), "bytes": self.bytes,
                "items": [{"name": i.key, "label": i.label, "elements": i.elements, "tensors": i.tensors,
                           "quantised": i.quantised, "bytes": i.bytes, **{f"{k}_bytes": v for k, v in i.parts.items()}}
                          for i in self.items]}


def stored_dtype(raw: dict[str, Any] | None) -> tuple[str, int]:
    """``(name, bytes)`` of the dtype a config.json stores its unquantised tensors in (bf16 if none)."""
    raw = raw or {}
    name = raw.get("torch_dtype") or raw.get("dtype")
    if name is None and isinstance(raw.get("text_config"), dict):
        name = raw["text_config"].get("torch_dtype") or raw["text_config"].get("dtype")
    return _STORED.get(str(name or "bfloat16").lower(), ("bf16", 2))


def quantized_weights(cfg: ModelConfig, q: dict[str, Any], raw: dict[str, Any] | None = None) -> QuantWeights:
    """Every weight of ``cfg`` as a checkpoint with the ``quantization_config`` ``q`` stores it (the
    module docstring's conventions); ``raw``: the config.json (its ``torch_dtype`` and ``model_type``)."""
    from solver.counting.params import param_breakdown, symbol_values

    scheme = scheme_of(q)
    stored, sb = stored_dtype(raw)
    kind = (raw or {}).get("model_type")
    values = symbol_values(cfg)
    comps = [c for c in param_breakdown(cfg).components if c.group != "lora"]
    shapes: dict[str, list[Any]] = {}  # weight kind -> [component, extra out rows merged into it]
    for c in comps:
        base = c.name[: -len(".weight")] if c.name.endswith(".weight") else None
        if cfg.is_mla and base in _MERGED and c.group == "attention":
            shapes[(c.stack, _MERGED[base])][1] += c.shape[1]  # type: ignore[index]
            continue
        if base is not None:
            shapes[(c.stack, base)] = [c, 0]  # type: ignore[index]
    items = []
    for c in comps:
        base = c.name[: -len(".weight")] if c.name.endswith(".weight") else None
        if cfg.is_mla and base in _MERGED and c.group == "attention":
            continue  # counted with the tensor it is stored in
        quant_kind = base in _LINEAR and len(c.shape) == 2 and not (base == "ffn.router" and kind in _PARAM_ROUTER)
        if base == "lm_head":
            quant_kind = scheme.lm_head
        if not quant_kind:
            items.append(QuantPart(c.key, c.label, c.count, c.times, 0, c.count * sb, {"stored": c.count * sb}))
            continue
        extra = shapes[(c.stack, base)][1]  # type: ignore[index]
        inp, out = c.shape[0], c.shape[1] + extra
        per_tensor = inp * out
        modules = (_LINEAR.get(base, "lm_head"), *_ALIASES.get(base, ()))
        symbol = c.times_factors[0] if c.times_factors and c.times_factors[0] in _LAYERS else None
        if base == "lm_head":
            skipped_tensors = c.times if any(_matches(e, "lm_head") for e in scheme.skip) else 0
        elif symbol is None:
            skipped_tensors = 0
        else:
            layers = values[symbol]
            per_layer = c.times // layers
            skipped_tensors = _skipped_layers(cfg, scheme.skip, modules, symbol, layers) * per_layer
        kept = c.times - skipped_tensors
        parts = {k: v * kept for k, v in scheme.format.parts(out, inp).items()}
        parts["stored"] = skipped_tensors * per_tensor * sb
        parts = {k: v for k, v in parts.items() if v}
        label = c.label + (" (with its rotary part, one tensor)" if extra else "")
        items.append(QuantPart(c.key, label, c.times * per_tensor, c.times, kept, sum(parts.values()), parts))
    return QuantWeights(scheme, stored, sb, tuple(items))


def weights_line(qw: QuantWeights) -> str:
    """``weights: MXFP4 (4.25 bits) for the experts, bf16 elsewhere: 13.76 GB``."""
    return f"weights: {qw.summary()}: {qw.bytes / 1e9:.4g} GB"


__all__ = ["QuantFormat", "Scheme", "QuantWeights", "QuantPart", "scheme_of", "quantized_weights", "mxfp4",
           "fp8_blocks", "fp8_per_channel", "int_groups", "nf4", "int8_rows", "stored_dtype", "weights_line"]
