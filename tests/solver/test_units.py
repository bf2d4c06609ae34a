"""solver.units: dtype sizes and the byte views every memory figure is shown in."""

import re

from hypothesis import given
from hypothesis import strategies as st

from solver.units import DTYPE_BYTES, GB, GiB, dtype_bytes, format_bytes, per_convention


@given(st.integers(min_value=0, max_value=10**16))
def test_format_bytes_always_shows_the_exact_bytes_and_both_gb_and_gib(n):
    """Every memory figure is shown in bytes, in GB (10⁹) and in GiB (2³⁰): both, always."""
    text = format_bytes(n)
    assert text.startswith(f"{n:,} bytes = ")
    gb = re.search(r"= ([\d,.e+-]+) GB\b", text)
    gib = re.search(r"= ([\d,.e+-]+) GiB\b", text)
    assert gb and gib, text
    for shown, unit in ((gb, GB), (gib, GiB)):
        value = float(shown.group(1).replace(",", ""))
        assert abs(value - n / unit) <= max(5e-4 * n / unit, 0.5 if n / unit >= 1000 else 0), text


def test_dtype_sizes_and_conventions():
    """int4 packs two values per byte; bf16 and fp16 are 2 bytes; a multiply-add is 2 FLOPs."""
    assert dtype_bytes("int4") * 2 == 1 and dtype_bytes("bfloat16") == dtype_bytes("fp16") == 2
    assert set(DTYPE_BYTES) >= {"fp32", "fp16", "bf16", "int8", "int4"}
    assert per_convention(2 * 7, "macs") == 7 and per_convention(14, "flops") == 14
