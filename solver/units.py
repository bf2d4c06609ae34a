"""Units and dtypes: bytes per element, GB (10^9) versus GiB (2^30), FLOP conventions.

Every memory figure qkv prints is an exact number of bytes first; GB and GiB are two views of
it, always shown together, because mixing them up is one of the commonest exam mistakes
(1 GiB = 1.073741824 GB).
"""

from __future__ import annotations

from fractions import Fraction

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


def _sig(x: float) -> str:
    """About four significant figures: 279,397 / 1.074 / 0.0004883 / 5.12e-07."""
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"
