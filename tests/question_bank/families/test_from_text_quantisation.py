"""The keys of question_bank/families/quantisation.py recomputed from the text a student reads.

For each family and its MCQ view, the numbers are parsed from ``statement_text`` with regular expressions and
the answer computed here by the formula the statement states (``key_from_text`` then asks the grader whether
the key accepts it, exact and rounded as asked; for an MCQ, whether the keyed option is the one it matches):

- ``quantisation.ggml_bytes``: (weights / block size) × the block's bytes, the bytes being the sum of the
  struct's printed fields, which must also equal llama.cpp's own block size (``GGML_BLOCK_BYTES``);
- ``quantisation.group_int4``: rows × cols / 2 bytes of codes + one fp16 scale (and the stated zero point) per
  group of a row + the int32 ``g_idx`` per input feature when stated;
- ``quantisation.kv_int8``: 2 (K and V) × L × heads × B × S vectors of dₕ codes (1 byte, or ½ in int4) plus one
  2-byte fp16 scale each;
- ``quantisation.nf4_bits``: 4 + 8 / block + 32 / (block × group) bits per parameter (× N / 8 bytes).

Nothing is read from ``given``, the solution or the misconceptions; nothing is imported from the solver.
"""

from __future__ import annotations

import re

from tests.question_bank.families.from_text_audit import (
    key_tests,
    shown_all,
    sweep_main,
    with_views,
)
from tests.question_bank.families.key_from_text import (
    find,
    num,
    question,
)

#: bytes of one block of each ggml format, from llama.cpp ggml/src/ggml-common.h (the static_asserts on
#: sizeof(block_q4_0) = 2 + 16, block_q8_0 = 2 + 32, block_q4_K = 2·2 + 12 + 128, block_q5_K = 2·2 + 12 + 32 + 128,
#: block_q6_K = 128 + 64 + 16 + 2), with the block's weight count (QK4_0 = QK8_0 = 32, QK_K = 256)
GGML_BLOCK_BYTES = {"Q4_0": (32, 18), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210)}
BYTE_UNITS = {"MiB": 2**20, "GiB": 2**30, "GB": 10**9, "MB": 10**6}


OTHER_UNIT = {"MiB": "MB", "MB": "MiB", "GiB": "GB", "GB": "GiB"}


def _unit(question: str, other: bool = False) -> int:
    m = find(r"\b(MiB|GiB|GB|MB)\b", question)
    return BYTE_UNITS[OTHER_UNIT[m[1]] if other else m[1]]


def ggml_bytes(p, codes_only: bool = False, other_unit: bool = False) -> float:
    t = p.statement_text
    m = find(r"A (?:set of )?(\d+) × (\d+) weight matri(?:x|ces, one in each of (\d+) layers,)", t)
    rows, cols, layers = int(m[1]), int(m[2]), int(m[3] or 1)
    fmt = find(r"llama\.cpp's (\w+) format", t)[1]
    block = int(find(r"blocks of (\d+) weights", t)[1])
    fields = find(r"each block a struct of (.*?)\.\n", t + "\n")[1]
    block_bytes = sum(int(b) for b in re.findall(r": (\d+) B\b", fields))
    codes = sum(int(b) for b in re.findall(r"\bq[slh] \([^)]*\): (\d+) B\b", fields))
    assert (block, block_bytes) == GGML_BLOCK_BYTES[fmt.upper()], f"{p.id}: the struct printed is not llama.cpp's {fmt}"
    assert cols % block == 0, f"{p.id}: a row of {cols} is not whole blocks of {block}"
    per_block = codes if codes_only else block_bytes
    return rows * cols * layers // block * per_block / _unit(question(t), other_unit)


def group_int4(p, zeros: bool = True, g_idx: bool = True, other_unit: bool = False) -> float:
    t = p.statement_text
    m = find(r"(\d+) × (\d+) weight matrix \((\d+) output rows, (\d+) input features\)", t)
    rows, cols = int(m[1]), int(m[2])
    assert (int(m[3]), int(m[4])) == (rows, cols)
    g = int(find(r"each group of (\d+) consecutive input weights", t)[1])
    scale = find(r"shares one (fp16|fp32|bf16) scale", t)[1]
    per_group = {"fp16": 2, "bf16": 2, "fp32": 4}[scale]
    if "an fp16 zero point" in t:
        per_group += 2 * zeros
    elif "a 4-bit zero point" in t:
        per_group += 0.5 * zeros
    else:
        assert "zero point" not in t, f"{p.id}: a zero point this file cannot read"
    assert cols % g == 0, f"{p.id}: {cols} input features are not whole groups of {g}"
    total = rows * cols / 2 + rows * (cols // g) * per_group
    if "g_idx" in t and g_idx:
        find(r"g_idx, the group index of each input feature, as one int32 per input feature", t)
        total += 4 * cols
    return total / _unit(question(t), other_unit)


def kv_int8(p, scales: bool = True, tensors: int = 2) -> float:
    t = p.statement_text
    layers = int(find(r"L = (\d+) layers", t)[1])
    heads = int(find(r"(\d+) K/V heads", t)[1])
    dh = int(find(r"dₕ = (\d+)", t)[1])
    b, s = int(find(r"B = (\d+) sequences", t)[1]), int(find(r"S = (\d+) tokens", t)[1])
    code = {"int8": 1, "int4 (two values per byte)": 0.5}[find(r"stored in (int8|int4 \(two values per byte\))", t)[1]]
    find(r"one fp16 scale per token, layer, head and K/V vector \(one per dₕ values\)", t)
    return tensors * layers * heads * b * s * (dh * code + 2 * scales) / _unit(question(t))


def nf4_bits(p, first: int = 8, second: bool = True) -> float:
    t = p.statement_text
    block = int(find(r"one absmax constant per block of (\d+) weights", t)[1])
    find(r"those constants are stored in 8-bit floats", t)
    group = int(find(r"each group of (\d+) of them shares one fp32 constant", t)[1])
    bits = 4 + first / block + 32 / (block * group) * second
    if m := re.search(r"a model of N = ([\d.]+) billion parameters", t):
        return num(m[1]) * 1e9 * bits / 8 / _unit(question(t))
    find(r"How many bits per parameter", t)
    return bits


RECOMPUTE = shown_all({"quantisation.ggml_bytes": ggml_bytes, "quantisation.group_int4": group_int4,
             "quantisation.kv_int8": kv_int8, "quantisation.nf4_bits": nf4_bits})
FIDS = with_views(RECOMPUTE)



#: the commonest mistakes, each recomputed from the text with the slip its label names
WRONGS = shown_all({
    "quantisation.ggml_bytes": {"no_scales": lambda p: ggml_bytes(p, codes_only=True),
                                "unit": lambda p: ggml_bytes(p, other_unit=True)},
    "quantisation.group_int4": {"no_zeros": lambda p: group_int4(p, zeros=False), "no_g_idx": lambda p: group_int4(p, g_idx=False),
                                "mb_for_mib": lambda p: group_int4(p, other_unit=True)},
    "quantisation.kv_int8": {"no_scales": lambda p: kv_int8(p, scales=False), "only_k": lambda p: kv_int8(p, tensors=1)},
    "quantisation.nf4_bits": {"flat_4bit": lambda p: nf4_bits(p, first=0, second=False),
                              "no_double_quant": lambda p: nf4_bits(p, first=32, second=False),
                              "forgot_second_level": lambda p: nf4_bits(p, second=False)},
})


globals().update(key_tests(RECOMPUTE, FIDS, "quantisation", mistakes=WRONGS))



if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, WRONGS))
