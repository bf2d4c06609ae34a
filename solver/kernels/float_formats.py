"""Low-precision number formats by hand, exactly (``Fraction``): the largest normal, the smallest
normal and subnormal, the spacing near a value, the nearest representable value, and the bytes per
parameter of a block-scaled format.

Formats (sign, exponent bits e, mantissa bits m, bias):

- ``fp32`` e8m23 bias 127, ``fp16`` e5m10 bias 15, ``bf16`` e8m7 bias 127 (IEEE 754 style: the
  all-ones exponent holds ±inf and NaN).
- ``e5m2`` (FP8, bias 15): IEEE style, ±inf and NaN in the all-ones exponent; largest normal
  1.75 · 2^15 = 57,344. ``e4m3`` (FP8, bias 7, PyTorch's ``float8_e4m3fn``): **no infinities**; only
  S.1111.111 is NaN, so the all-ones exponent holds normal numbers with mantissas 000 … 110 and the
  largest normal is 1.75 · 2^8 = 448. Source: OCP 8-bit Floating Point Specification (OFP8) rev 1.0
  (2023), Table 1; Micikevicius et al., "FP8 Formats for Deep Learning" (2022), Table 1.
- ``fp4`` = ``e2m1`` (bias 1), the element of MXFP4: no inf, no NaN; its eight magnitudes are
  0, 0.5, 1, 1.5, 2, 3, 4, 6. Source: OCP Microscaling Formats (MX) Specification v1.0 (2023), §5.3.3.

Conventions (each named in the results):

- subnormals: exponent field 0 gives 0.m · 2^(1 − bias); the smallest subnormal is 2^(1 − bias − m).
- spacing near x ("ulp"): 2^(max(⌊log₂|x|⌋, 1 − bias) − m), the gap from x's binade to the next value
  away from zero (at an exact power of two the gap below is half of it).
- rounding: to nearest, ties to even (IEEE 754's default, and what PyTorch's casts do). A value whose
  rounding (with the exponent range unbounded above) exceeds the largest normal overflows, by the
  ``overflow`` convention: "pytorch" (default; what PyTorch 2.x's casts do: ±inf where the format has
  one, else ±largest normal, so float8_e4m3fn saturates at ±448), "ieee" (±inf where the format has
  one, else NaN: the OCP non-saturating conversion) or "saturate" (±largest normal: OCP's saturating
  conversion, the one MX uses).
- block-scaled formats (MX): a block of k elements shares one scale; bits per parameter =
  element bits + scale bits / k. MXFP4: 4 + 8/32 = 4.25 bits (E8M0 power-of-two scale per 32 elements,
  as gpt-oss stores its MoE weights); MXFP8: 8 + 8/32; NVFP4 (NVIDIA): 4 + 8/16 (an E4M3 scale per 16,
  plus one fp32 per tensor, not counted).
- MX quantisation of a block (OCP MX v1.0 §6.3): shared exponent = ⌊log₂ max|v|⌋ − emax_elem, where
  emax_elem is the exponent of the element's largest normal (2 for FP4 e2m1, 8 for e4m3, 15 for e5m2);
  each element is v / 2^shared rounded to the element format, saturating.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt

OFP8 = "OCP 8-bit Floating Point Specification (OFP8) rev 1.0; Micikevicius et al. 2022, Table 1"
OCP_MX = "OCP Microscaling Formats (MX) Specification v1.0 (2023)"


@dataclass(frozen=True)
class FloatFormat:
    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool  # IEEE style: the all-ones exponent is inf/NaN only
    has_nan: bool
    source: str

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal: 1 − bias."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest normal."""
        top = 2**self.exponent_bits - 1  # all-ones exponent field
        return (top - 1 if self.has_inf else top) - self.bias

    @property
    def max_normal(self) -> Fraction:
        m = self.mantissa_bits
        if self.has_inf or not self.has_nan:
            frac = 2 - Fraction(1, 2**m)  # all mantissa bits set
        else:  # e4m3fn: S.1111.111 is NaN, so the top mantissa is one step below all ones
            frac = 2 - Fraction(2, 2**m)
        return frac * Fraction(2) ** self.emax

    @property
    def min_normal(self) -> Fraction:
        return Fraction(2) ** self.emin

    @property
    def min_subnormal(self) -> Fraction:
        return Fraction(2) ** (self.emin - self.mantissa_bits)


FORMATS: dict[str, FloatFormat] = {
    "fp32": FloatFormat("fp32", 8, 23, 127, True, True, "IEEE 754 binary32"),
    "fp16": FloatFormat("fp16", 5, 10, 15, True, True, "IEEE 754 binary16"),
    "bf16": FloatFormat("bf16", 8, 7, 127, True, True, "bfloat16 (Google Brain): fp32's exponent, 7 mantissa bits"),
    "e5m2": FloatFormat("e5m2", 5, 2, 15, True, True, OFP8),
    "e4m3": FloatFormat("e4m3", 4, 3, 7, False, True, OFP8 + " (E4M3: no infinities, one NaN mantissa)"),
    "fp4": FloatFormat("fp4", 2, 1, 1, False, False, OCP_MX + " §5.3.3 (FP4 E2M1)"),
}
ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "fp8-e5m2": "e5m2",
           "float8_e5m2": "e5m2", "fp8-e4m3": "e4m3", "float8_e4m3fn": "e4m3", "e4m3fn": "e4m3", "e2m1": "fp4",
           "fp4-e2m1": "fp4", "mxfp4": "fp4"}


def get_format(name: str) -> FloatFormat:
    key = name.strip().lower().replace("_", "-") if name else ""
    key = ALIASES.get(key, ALIASES.get(key.replace("-", "_"), key))
    if key not in FORMATS:
        raise SolverInputError(f"unknown format {name!r}; choose from {', '.join(FORMATS)} (aliases: e4m3fn, e2m1, mxfp4)",
                               param="format")
    return FORMATS[key]


def _floor_log2(a: Fraction) -> int:
    """⌊log₂ a⌋ for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def _round_half_even(q: Fraction) -> int:
    fl = q.numerator // q.denominator
    rest = q - fl
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and fl % 2 == 1):
        return fl + 1
    return fl


def spacing(fmt_: FloatFormat, x: Fraction) -> Fraction:
    """2^(max(⌊log₂|x|⌋, emin) − m): the gap between neighbours in x's binade."""
    a = abs(Fraction(x))
    e = fmt_.emin if a == 0 else max(_floor_log2(a), fmt_.emin)
    return Fraction(2) ** (e - fmt_.mantissa_bits)


OVERFLOW = ("pytorch", "ieee", "saturate")


def round_to_format(fmt_: FloatFormat, x, overflow: str = "pytorch") -> Fraction | float:
    """The nearest representable value (ties to even); overflow by the named convention (OVERFLOW)."""
    x = Fraction(x)
    if overflow not in OVERFLOW:
        raise SolverInputError(f"must be one of {', '.join(OVERFLOW)} (got {overflow!r})", param="overflow")
    a, sign = abs(x), (-1 if x < 0 else 1)
    if a == 0:
        return Fraction(0)
    q = spacing(fmt_, a)
    k = _round_half_even(a / q)
    r = k * q
    if r > fmt_.max_normal:
        if overflow == "saturate" or (overflow == "pytorch" and not fmt_.has_inf):
            return sign * fmt_.max_normal
        if fmt_.has_inf:
            return sign * float("inf")
        return float("nan")
    return sign * r


def encode(fmt_: FloatFormat, value: Fraction) -> tuple[int, int, int]:
    """(sign, exponent field, mantissa field) of a representable finite value."""
    s = 1 if value < 0 else 0
    a = abs(Fraction(value))
    m = fmt_.mantissa_bits
    if a < fmt_.min_normal:
        return s, 0, int(a / fmt_.min_subnormal)
    e = _floor_log2(a)
    return s, e + fmt_.bias, int((a / Fraction(2) ** e - 1) * 2**m)


def _pow2(e: int) -> str:
    return f"2^{e}"


ASKS = ("max-normal", "min-normal", "min-subnormal", "spacing", "nearest")


def float_format(name: str, value=None, *, ask: str | None = None, overflow: str = "pytorch") -> Result:
    """A format's figures, and with ``value`` the spacing near it and its nearest representable value."""
    f = get_format(name)
    if ask is None:
        ask = "nearest" if value is not None else "max-normal"
    if ask not in ASKS:
        raise SolverInputError(f"must be one of {', '.join(ASKS)} (got {ask!r})", param="ask")
    if ask in ("spacing", "nearest") and value is None:
        raise SolverInputError(f"--ask {ask} needs a value", param="value")
    m, b = f.mantissa_bits, f.bias
    r = Result(answer=None, unit="", convention={
        "format": f"{f.name}: 1 sign, {f.exponent_bits} exponent, {m} mantissa bits, bias {b} ({f.source})",
        "special_values": ("IEEE style: the all-ones exponent is ±inf and NaN" if f.has_inf else
                           "no infinities; only S.1111.111 is NaN (the all-ones exponent holds normals)" if f.has_nan
                           else "no inf, no NaN: every bit pattern is a number"),
        "subnormals": f"exponent field 0: 0.m × 2^(1 − bias) = 0.m × 2^{f.emin}",
        "spacing": "2^(max(⌊log₂|x|⌋, 1 − bias) − m): the gap in x's binade, to the next value away from zero",
        "rounding": "to nearest, ties to even; overflow " + (
            "saturates to ±max" if overflow == "saturate" or (overflow == "pytorch" and not f.has_inf) else
            "to ±inf" if f.has_inf else "to NaN (OCP non-saturating)") + f" ({overflow} convention)"})
    top = f"2 − 2^-{m}" if (f.has_inf or not f.has_nan) else f"2 − 2·2^-{m}"
    emax_field = (2**f.exponent_bits - 2) if f.has_inf else (2**f.exponent_bits - 1)
    emax = r.step("emax = largest usable exponent field − bias", f"{emax_field} − {b}", f.emax)
    mx = r.step(f"largest normal = ({top}) × 2^emax", f"{fmt(2 - (Fraction(1, 2**m) if top == f'2 − 2^-{m}' else Fraction(2, 2**m)))} × 2^{emax}",
                f.max_normal)
    mn = r.step("smallest normal = 2^(1 − bias)", f"2^(1 − {b})", f.min_normal)
    sub = r.step("smallest subnormal = 2^(1 − bias − m)", f"2^(1 − {b} − {m})", f.min_subnormal)
    r.breakdown.update(format=f.name, bits=f.bits, exponent_bits=f.exponent_bits, mantissa_bits=m, bias=b,
                       emax=emax, emin=f.emin, max_normal=mx, min_normal=mn, min_subnormal=sub,
                       max_normal_exact=f"({top}) × 2^{emax}" + (f" = {mx}" if mx < 10**7 else ""), min_normal_exact=f"{_pow2(f.emin)} = {mn}",
                       min_subnormal_exact=f"{_pow2(f.emin - m)} = {sub}")
    answer = {"max-normal": mx, "min-normal": mn, "min-subnormal": sub}.get(ask)
    if value is not None:
        x = Fraction(value)
        a = abs(x)
        e = f.emin if a == 0 else max(_floor_log2(a), f.emin)
        r.step("binade exponent E = max(⌊log₂|x|⌋, 1 − bias)", f"max(⌊log₂ {fmt(a)}⌋, {f.emin})", e)
        q = r.step("spacing = 2^(E − m)", f"2^({e} − {m})", spacing(f, x))
        k = r.step("k = |x| / spacing, rounded to nearest (ties to even)", f"{fmt(a)} / {fmt(q)} = {fmt(a / q)}",
                   _round_half_even(a / q) if a else 0)
        near = round_to_format(f, x, overflow)
        if isinstance(near, float):  # overflow: a word, not a number the output would refuse
            near = "nan" if near != near else ("inf" if near > 0 else "-inf")
        if isinstance(near, str) or k * q > mx:
            r.step("k × spacing exceeds the largest normal: overflow", f"{k} × {fmt(q)} > {fmt(mx)}", near)
        else:
            r.step("nearest = sign × k × spacing", f"{'−' if x < 0 else ''}{k} × {fmt(q)}", near)
        r.breakdown.update(value=x, spacing=q, spacing_exact=f"{_pow2(e - m)} = {q}", nearest=near,
                           nearest_exact=str(near))
        if not isinstance(near, str):
            err = r.step("rounding error = nearest − x", f"{fmt(near)} − {fmt(x)}", near - x)
            r.breakdown["rounding_error"] = err
            r.breakdown["relative_error"] = (err / x) if x else Fraction(0)
            s, ef, mf = encode(f, near)
            r.breakdown["bits_pattern"] = f"{s} {ef:0{f.exponent_bits}b} {mf:0{m}b}"
        answer = {"spacing": q, "nearest": near}.get(ask, answer)
    r.answer = answer
    r.convention["answer"] = ask.replace("-", " ")
    return r


# ---------------------------------------------------------------------------------------
# Block-scaled formats: bytes per parameter, and the MX quantisation of one block
# ---------------------------------------------------------------------------------------

#: name: (element format, element bits, block size, scale bits, scale kind, source)
BLOCK_FORMATS = {
    "mxfp4": ("fp4", 4, 32, 8, "E8M0 (power of two)", OCP_MX + ", Table 1 (MXFP4)"),
    "mxfp8-e4m3": ("e4m3", 8, 32, 8, "E8M0 (power of two)", OCP_MX + ", Table 1 (MXFP8)"),
    "mxfp8-e5m2": ("e5m2", 8, 32, 8, "E8M0 (power of two)", OCP_MX + ", Table 1 (MXFP8)"),
    "nvfp4": ("fp4", 4, 16, 8, "E4M3 (plus one fp32 per tensor, not counted)",
              "NVIDIA Blackwell NVFP4 (TransformerEngine NVFP4BlockScaling: 16 elements per E4M3 scale)"),
}


def block_format_bytes(name: str = "mxfp4", params: int | None = None, *, block: int | None = None,
                       scale_bits: int | None = None, element_bits: int | None = None) -> Result:
    """Bits and bytes per parameter of a block-scaled format (element + its share of the scale)."""
    key = name.strip().lower()
    if key not in BLOCK_FORMATS and None in (block, scale_bits, element_bits):
        raise SolverInputError(f"unknown block format {name!r}; choose from {', '.join(BLOCK_FORMATS)} "
                               "or give --block, --scale-bits and --element-bits", param="format")
    elem, eb, k, sb, kind, src = BLOCK_FORMATS.get(key, (key, element_bits, block, scale_bits, "given", "given"))
    eb, k, sb = element_bits or eb, block or k, scale_bits if scale_bits is not None else sb
    for nm, v in (("block", k), ("element_bits", eb)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SolverInputError(f"must be a positive integer (got {v!r})", param=nm)
    if isinstance(sb, bool) or not isinstance(sb, int) or sb < 0:
        raise SolverInputError(f"must be an integer >= 0 (got {sb!r})", param="scale_bits")
    r = Result(answer=None, unit="bytes per parameter", convention={
        "format": f"{key}: {eb}-bit elements, one {sb}-bit {kind} scale per block of {k} ({src})",
        "counts": "element bits + scale bits / block size; per-tensor constants not counted"})
    bits = r.step("bits per parameter = element bits + scale bits / block", f"{eb} + {sb}/{k}", Fraction(eb) + Fraction(sb, k),
                  "bits")
    per = r.step("bytes per parameter = bits / 8", f"{fmt(bits)} / 8", bits / 8, "bytes")
    r.answer = per
    r.breakdown.update(format=key, element_bits=eb, block=k, scale_bits=sb, bits_per_parameter=bits,
                       bytes_per_parameter=per, naive_bytes_per_parameter=Fraction(eb, 8))
    if params is not None:
        if isinstance(params, bool) or not isinstance(params, int) or params < 1:
            raise SolverInputError(f"must be a positive integer (got {params!r})", param="params")
        blocks = r.step("blocks = ⌈N / block⌉", f"⌈{params:,} / {k}⌉", -(-params // k))
        total = r.step("bytes = ⌈N·element bits / 8⌉ + blocks × scale bits / 8", f"⌈{params:,} × {eb} / 8⌉ + {blocks:,} × {sb}/8",
                       -(-params * eb // 8) + Fraction(blocks * sb, 8), "bytes")
        r.answer = total
        r.unit = "bytes"
        r.breakdown.update(params=params, blocks=blocks, total_bytes=total)
    return r


def mx_quantize(values, element: str = "fp4") -> Result:
    """One MX block: shared power-of-two scale from the block's absmax, elements rounded (saturating)."""
    f = get_format(element)
    xs = [Fraction(v) for v in values]
    if not xs:
        raise SolverInputError("give at least one value", param="values")
    amax = max(abs(x) for x in xs)
    r = Result(answer=None, unit="", convention={
        "scale": "shared exponent = ⌊log₂ max|v|⌋ − emax_elem; scale = 2^shared (E8M0) (" + OCP_MX + " §6.3)",
        "elements": f"v / scale rounded to {f.name}, ties to even, saturating at ±{fmt(f.max_normal)}",
        "error": "dequantised − original, per element; max |error| is the answer"})
    am = r.step("amax = max |v|", ", ".join(fmt(abs(x)) for x in xs), amax)
    if amax == 0:
        shared = 0
        r.step("all zero: any scale; 2^0 taken", "", 0)
    else:
        shared = r.step("shared exponent = ⌊log₂ amax⌋ − emax_elem", f"⌊log₂ {fmt(am)}⌋ − {f.emax}", _floor_log2(amax) - f.emax)
    scale = Fraction(2) ** shared
    codes = [round_to_format(f, x / scale, "saturate") for x in xs]
    r.step("elements = round(v / 2^shared)", f"v / {fmt(scale)}", [float(c) for c in codes])
    deq = [c * scale for c in codes]
    r.step("dequantised = element × 2^shared", f"× {fmt(scale)}", [float(d) for d in deq])
    errs = [d - x for d, x in zip(deq, xs, strict=True)]
    worst = max(abs(e) for e in errs)
    r.answer = r.step("max |error|", "max |dequantised − v|", worst)
    r.convention["answer"] = "max |error|"
    r.breakdown.update(element=f.name, amax=amax, shared_exponent=shared, scale=scale,
                       elements=[float(c) for c in codes], dequantised=[float(d) for d in deq],
                       errors=[float(e) for e in errs], max_abs_error=worst)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's
# block_format(...), from qkv solve block-format.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402


@formula("block_format", "Bytes per parameter of a block-scaled format (MXFP4, MXFP8, NVFP4): element bits + scale "
         "bits / block, and the bytes of N parameters.",
         (Input("format", "mxfp4, mxfp8_e4m3, mxfp8_e5m2, nvfp4, or any name with block, scale_bits, element_bits",
                kind="choice", default="mxfp4", aliases=("f", "name")),
          Input("params", "N: parameters (the total bytes)", kind="count", integer=True, minimum=1, default=None,
                aliases=("N",)),
          Input("block", "elements per shared scale (MX: 32)", kind="count", integer=True, minimum=1, maximum=10**6,
                default=None),
          Input("scale_bits", "bits of each scale (MX: 8, E8M0)", kind="count", integer=True, minimum=0, maximum=64,
                default=None),
          Input("element_bits", "bits of each element (FP4: 4)", kind="count", integer=True, minimum=1, maximum=64,
                default=None)),
         (Output("bytes_per_parameter", "B", "(element bits + scale bits / block) / 8"),
          Output("bits_per_parameter", "", "element bits + scale bits / block"),
          Output("bytes", "B", "⌈N·element bits / 8⌉ + blocks × scale bits / 8", ("params",), key="total_bytes")),
         solve="block-format", source=OCP_MX)
def _block_format_formula(format, params, block, scale_bits, element_bits):
    name = str(format).strip().lower().replace("_", "-")
    return block_format_bytes(name, params, block=block, scale_bits=scale_bits, element_bits=element_bits)


OVERFLOW_CONVENTION = Convention("overflow", "What a value past the largest normal becomes.", {
    "pytorch": Choice("as PyTorch's cast: inf where the format has one, else saturate", "torch.Tensor.to"),
    "ieee": Choice("inf (or NaN where the format has no inf)", "IEEE 754 round to nearest"),
    "saturate": Choice("the largest normal, with its sign", "OCP 8-bit Floating Point Specification (OFP8)")},
    "pytorch")


@formula("float_format", "A float format's largest normal, smallest normal and subnormal; with a value, the spacing "
         "near it and its nearest representable value.",
         (Input("format", "fp32, fp16, bf16, e5m2, e4m3 (e4m3fn), fp4 (e2m1)", kind="choice", aliases=("f", "name")),
          Input("value", "x: a number (its spacing and nearest value)", kind="fraction", default=None, minimum=None,
                aliases=("x",))),
         (Output("max_normal", "", "the largest normal value"),
          Output("min_normal", "", "the smallest normal value 2^(1 − bias)"),
          Output("min_subnormal", "", "the smallest subnormal value 2^(1 − bias − m)"),
          Output("spacing", "", "the gap between values near x", ("value",)),
          Output("nearest", "", "the representable value nearest x (not a number past the range)", ("value",)),
          Output("rounding_error", "", "nearest − x", ("value",))),
         conventions=(OVERFLOW_CONVENTION,), solve="float-format", source="IEEE 754; OFP8; " + OCP_MX)
def _float_format_formula(format, value, overflow="pytorch"):
    r = float_format(str(format), value, overflow=overflow)
    if isinstance(r.breakdown.get("nearest"), str):  # inf or nan: a word, no quantity
        del r.breakdown["nearest"]
    return r


@formula("mx_quantize", "One MX block: the shared power-of-two scale, the elements, dequantised values and the error.",
         (Input("values", "one block of at most 32 values ([0.1, -0.7, 2.5, 3.9])", kind="vector", minimum=-10**30,
                maximum=10**30),),
         (Output("error", "", "the largest |x − dequantised|", key="max_abs_error"),
          Output("dequantised", "", "scale × element", kind="vector"),
          Output("elements", "", "each value / scale, in the element format", kind="vector"),
          Output("scale", "", "the shared scale 2^e"),
          Output("shared_exponent", "", "e of the E8M0 scale")),
         conventions=(Convention("element", "The element format.", {
             "fp4": Choice("MXFP4: fp4 e2m1", OCP_MX), "e4m3": Choice("MXFP8 e4m3", OCP_MX),
             "e5m2": Choice("MXFP8 e5m2", OCP_MX)}, "fp4"),),
         solve="mx-quantize", source=OCP_MX)
def _mx_quantize_formula(values, element="fp4"):
    if len(values) > 32:
        raise SolverInputError(f"an MX block holds at most 32 values (got {len(values)})", param="values")
    return mx_quantize(values, element)


FORMULAS = (_block_format_formula.formula, _float_format_formula.formula, _mx_quantize_formula.formula)
