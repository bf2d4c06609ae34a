"""Units and dtypes: bytes per element, GB (10^9) versus GiB (2^30), FLOP conventions.

Every memory figure qkv prints is an exact number of bytes first; GB and GiB are two views of
it, always shown together, because mixing them up is one of the commonest exam mistakes
(1 GiB = 1.073741824 GB).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from typing import Any

#: Bytes per element. int4 packs two values per byte (0.5 byte each).
DTYPE_BYTES: dict[str, Fraction] = {
    "fp64": Fraction(8),
    "fp32": Fraction(4),
    "tf32": Fraction(4),  # stored as 32 bits
    "fp16": Fraction(2),
    "bf16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "int4": Fraction(1, 2),
}

DTYPE_ALIASES = {
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32",
    "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8",
}

GB = 10**9
GiB = 2**30
MB = 10**6
MiB = 2**20

#: FLOP conventions: "flops" counts a multiply-add as 2 FLOPs (the default everywhere in qkv,
#: and what torch.utils.flop_counter counts); "macs" counts it as 1.
FLOP_CONVENTIONS = ("flops", "macs")


def dtype_bytes(dtype: str) -> Fraction:
    """Bytes per element of ``dtype`` (exact: int4 is 1/2)."""
    from solver.errors import SolverInputError

    name = DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
    if name not in DTYPE_BYTES:
        raise SolverInputError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPE_BYTES)}", param="dtype")
    return DTYPE_BYTES[name]


def per_convention(flops: int, convention: str = "flops") -> int:
    """Convert a FLOP count (2 per multiply-add) to the asked convention."""
    from solver.errors import SolverInputError

    if convention == "flops":
        return flops
    if convention == "macs":
        if flops % 2:
            raise ValueError("an odd FLOP count has no whole number of multiply-adds")
        return flops // 2
    raise SolverInputError(f"unknown convention {convention!r}; choose flops or macs", param="convention")


def bytes_views(n_bytes: int | float | Fraction) -> dict[str, float]:
    """``{"bytes": n, "GB": n/1e9, "GiB": n/2^30, "MB": ..., "MiB": ...}``."""
    n = float(n_bytes)
    return {"bytes": n_bytes if isinstance(n_bytes, int) else n, "MB": n / MB, "MiB": n / MiB,
            "GB": n / GB, "GiB": n / GiB}


def format_bytes(n_bytes: int | float | Fraction) -> str:
    """``'1,073,741,824 bytes = 1.074 GB = 1 GiB'``: the exact bytes, then GB and GiB, always
    both; below 0.1 GB, MB and MiB come first, where the figure is easier to read."""
    n = float(n_bytes)
    exact = f"{int(n_bytes):,}" if n.is_integer() else f"{n:,.1f}"
    views = f"{_sig(n / GB)} GB = {_sig(n / GiB)} GiB"
    if abs(n) >= GB / 10:  # negative figures (memory left over) read like positive ones
        return f"{exact} bytes = {views}"
    return f"{exact} bytes = {_sig(n / MB)} MB = {_sig(n / MiB)} MiB = {views}"


#: SI prefixes of a bandwidth (powers of 10, as nccl-tests and the datasheets print GB/s)
_RATE_PREFIXES = ((10**15, "PB/s"), (10**12, "TB/s"), (10**9, "GB/s"), (10**6, "MB/s"), (10**3, "kB/s"))


def format_bandwidth(bytes_per_s: int | float | Fraction) -> str:
    """``'185.05 GB/s'``: a bandwidth in the SI unit that puts 1 to 999 before it, the number by
    :func:`format_number`'s rule (6 significant figures, no trailing zeros). A measured figure
    such as 185,049,963,175.4 bytes/s is not printed as ``185,050,000,000``, whose zeros would
    read as measured digits. Below 1 kB/s: ``B/s``."""
    v = float(bytes_per_s)
    if not math.isfinite(v):
        return f"{format_number(v)} B/s"
    for k, (scale, unit) in enumerate(_RATE_PREFIXES):
        if abs(v) >= scale:
            if k and format_number(abs(v) / scale) == "1,000":  # 999.9999995 GB/s rounds up: 1 TB/s
                scale, unit = _RATE_PREFIXES[k - 1]
            return f"{format_number(v / scale)} {unit}"
    return f"{format_number(v)} B/s"


def _sig(x: float) -> str:
    """About four significant figures: 279,397 / 1.074 / 0.0004883 / 5.12e-07 (half up)."""
    return format_number(x, 4)


# ---------------------------------------------------------------------------------------
# The one number formatter (every human-readable figure qkv prints goes through here)
# ---------------------------------------------------------------------------------------


def round_half_up(value: float, decimals: int) -> float:
    """``value`` rounded half away from zero to ``decimals`` places, on its shortest decimal
    spelling (``repr``): 0.605 -> 0.61, 2.5 -> 3, -0.125 -> -0.13, 13.125 -> 13.13 at 2.

    The quiz's rule (question_bank.grading re-exports it): what a student rounds by hand."""
    if not math.isfinite(value):
        return value
    q = Decimal(1).scaleb(-decimals)
    d = Decimal(repr(float(value)))
    digits = max(d.adjusted(), 0) + decimals + 2  # enough figures for the quantized value (1e24 to 4 places)
    return float(d.quantize(q, rounding=ROUND_HALF_UP, context=Context(prec=max(28, digits))))


def _decimal(x: Any) -> Decimal:
    if isinstance(x, Fraction):
        return Decimal(x.numerator) / Decimal(x.denominator)
    if isinstance(x, int):
        return Decimal(x)
    return Decimal(repr(float(x)))


def format_number(x: Any, sig: int = 6) -> str:
    """A number for people, one rule everywhere: whole numbers below 10^15 in full with
    thousands separators (450,000,000,000); other numbers to ``sig`` significant figures,
    rounded half up (the quiz's rule), with separators (257,142,857,143; 13.125 -> 13.13 at 4
    figures) and no trailing zeros; scientific (1.5e-05, 2.5e+17) below 10^-4 or from 10^15.
    Booleans read yes/no, NaN as nan and infinities as ∞ / −∞."""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, Fraction) and x.denominator == 1:
        x = x.numerator
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("∞" if x > 0 else "-∞")
    if not isinstance(x, (int, float, Fraction)):
        try:
            x = float(x)  # numpy scalars
        except (TypeError, ValueError):
            return str(x)
        return format_number(x, sig)
    if isinstance(x, float) and x.is_integer() and abs(x) < 10**15:
        x = int(x)
    if isinstance(x, int) and abs(x) < 10**15:
        return f"{x:,}"
    d = _decimal(x)
    if d == 0:
        return "0"
    exp = d.adjusted()
    r = d.quantize(Decimal(1).scaleb(exp - sig + 1), rounding=ROUND_HALF_UP)
    if r.adjusted() != exp:  # 9.9999995 -> 10.00000: one figure more to the left
        exp = r.adjusted()
        r = d.quantize(Decimal(1).scaleb(exp - sig + 1), rounding=ROUND_HALF_UP)
    if exp >= 15 or exp < -4:
        mant = (r.scaleb(-exp)).normalize()
        text = f"{mant:f}"
        return f"{text}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    text = f"{r:,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def plural(n: Any, word: str, words: str | None = None) -> str:
    """``1 chip``, ``2 chips``, ``1.5 chips``: the count and the word in the right number."""
    return f"{format_number(n)} {word if n == 1 else (words or word + 's')}"
