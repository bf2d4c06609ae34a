"""The memory keys (question_bank/families/counting_memory.py), recomputed from the text.

Sizes, bytes per value (as the statement prints them: "bf16 (2 bytes)") and the unit asked ("GiB (1 GiB
= 2³⁰ bytes)" or "GB (1 GB = 10⁹ bytes)") are parsed from the plain statement with regular expressions;
the bytes are counted here:

* attention scores: B·h·n² values per layer, times the layers when "in all L layers";
* KV cache: K and V for every layer, sequence, cached position and K/V head (all heads under multi-head
  attention, nₖᵥ under grouped-query attention), each dₕ values; a sliding window of W keeps min(n, W)
  positions per layer;
* training model states: weights, gradients and Adam's momentum and variance at the bytes the statement
  prints for each precision, plus fp32 master weights under mixed precision;
  plain data parallelism keeps all of them on each GPU.

For the KV cache the count is also checked against the size torch gives the cache itself: the K and V
tensors of one layer built on the meta device (``nbytes``). Exact integers until the division by the
unit; the key must accept the value rounded as asked (MCQ: the keyed option is the one option printing
it). Nothing here reads ``given`` or imports the solver. ``python -m tests.question_bank.families.
test_from_text_counting_memory`` sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import re
from fractions import Fraction

import torch

from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    has,
    number_in,
)

TORCH_DTYPE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}


def unit(text: str, *, swapped: bool = False) -> int:
    """The unit the answer is asked in, as the statement defines it (``swapped``: the other one)."""
    if "GiB (1 GiB = 2³⁰ bytes)" in text:
        return 10**9 if swapped else 2**30
    assert "GB (1 GB = 10⁹ bytes)" in text, f"no unit defined:\n{text}"
    return 2**30 if swapped else 10**9


def stored_bytes(text: str) -> int:
    """'stored in fp16 (2 bytes)', 'in int8 (1 byte)': the bytes per value, as printed."""
    return number_in(r"(?:fp32|fp16|bf16|int8|fp8) \((\d+) bytes?\)", text)


def in_unit(nbytes: int, text: str, swapped: bool = False) -> float:
    return float(Fraction(nbytes, unit(text, swapped=swapped)))


def attention_memory(text: str, p=None, *, swapped: bool = False) -> float:
    B, n, h = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) tokens", text), number_in(r"h = (\d+) heads", text)
    layers = number_in(r"in all (\d+) layers", text) if has(r"in all \d+ layers", text) else 1
    assert layers > 1 or "in one layer" in text, f"how many layers is not said:\n{text}"
    return in_unit(B * h * n * n * stored_bytes(text) * layers, text, swapped)


def kv_cache(text: str, p=None, *, swapped: bool = False, all_heads: bool = False) -> float:
    L, h, dh = number_in(r"L = (\d+) layers", text), number_in(r"h = (\d+) query heads", text), number_in(r"dₕ = (\d+)", text)
    B, n = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) positions", text)
    if all_heads or "multi-head attention (every head has its own K and V)" in text:
        kv = h
    else:
        kv = number_in(r"nₖᵥ = (\d+) K/V heads", text)
    kept = n
    if "sliding-window attention" in text:
        W = number_in(r"\(W = ([\d,]+)\) in every layer", text)
        assert "rolling buffer of the last W positions" in text
        kept = min(n, W)
    per_value = stored_bytes(text)
    count = 2 * L * B * kept * kv * dh * per_value
    dtype = re.search(r"KV cache in (\w+) \(", text)[1]
    if dtype in TORCH_DTYPE:  # one layer's K and V as tensors: torch's size agrees with the count
        k = torch.empty(B, kv, kept, dh, dtype=TORCH_DTYPE[dtype], device="meta")
        assert 2 * L * k.nbytes == count, (k.nbytes, count)
    return in_unit(count, text, swapped)


def training_memory(text: str, p=None, *, swapped: bool = False, gradients: bool = True) -> float:
    N = number_in(r"N = ([\d,]+) parameters", text)
    assert "trained with Adam" in text
    if "in full fp32 precision" in text:
        assert "fp32 (4 bytes) weights, gradients, momentum and variance" in text and "no separate master copy" in text
        per_param = 4 + 4 * gradients + 4 + 4
    else:
        m = re.search(r"(?:fp16|bf16) \((\d) bytes\) weights and gradients, and fp32 \((\d) bytes\) master weights, "
                      r"momentum and variance", text)
        assert m and "mixed precision" in text, f"precisions or their bytes not said:\n{text}"
        half, full = int(m[1]), int(m[2])
        per_param = half + half * gradients + 3 * full
    if has(r"plain data parallelism on \d+ GPUs \(no ZeRO, no sharding\)", text):
        assert "on each GPU" in text  # every GPU keeps a full copy: the GPU count does not divide
    return in_unit(N * per_param, text, swapped)


RECOMPUTE = {
    "counting.attention_memory": attention_memory, "counting.kv_cache": kv_cache,
    "counting.training_memory": training_memory,
}
FIDS = with_views(RECOMPUTE)


def _sizes(text: str) -> dict[str, int]:
    """The plain integers the statement names (B, h, L, n, N, layers), for the slips' divisions."""
    out = {k: int(v.replace(",", "")) for k, v in re.findall(r"\b(B|h|L|N) = ([\d,]+)", text)}
    if m := re.search(r"in all (\d+) layers", text):
        out["layers"] = int(m[1])
    return out


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "counting.attention_memory": {
        "forgot_heads": lambda t: attention_memory(t) / _sizes(t)["h"],
        "forgot_batch": lambda t: attention_memory(t) / _sizes(t)["B"],
        "forgot_layers": lambda t: attention_memory(t) / _sizes(t)["layers"],
        "gb_vs_gib": lambda t: attention_memory(t, swapped=True),
    },
    "counting.kv_cache": {
        "forgot_k_and_v": lambda t: kv_cache(t) / 2,
        "forgot_layers": lambda t: kv_cache(t) / _sizes(t)["L"],
        "gb_vs_gib": lambda t: kv_cache(t, swapped=True),
        "used_n_heads": lambda t: kv_cache(t, all_heads=True),
    },
    "counting.training_memory": {
        "forgot_gradients": lambda t: training_memory(t, gradients=False),
        "weights_only": lambda t: in_unit(number_in(r"(?:fp32|fp16|bf16) \((\d) bytes\) weights", t) * _sizes(t)["N"], t),
        "gb_vs_gib": lambda t: training_memory(t, swapped=True),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "counting_memory", mistakes=SLIPS))





if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
