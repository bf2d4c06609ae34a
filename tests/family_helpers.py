"""Helpers shared by the question-family tests: each family's variants over a few seeds (cached),
the easy variant a pinned test works by hand, and chip figures typed from the datasheets (not
read from solver.systems.chips, so a test that uses them checks the presets too)."""

import functools

from question_bank.family import FAMILIES

T = 1e12
#: (dense bf16 FLOP/s, HBM bytes/s, HBM bytes): NVIDIA dense = the datasheet's with-sparsity figure / 2
CHIPS = {
    "a100-40gb": (624 * T / 2, 1555e9, 40 * 10**9), "a100-80gb": (624 * T / 2, 2039e9, 80 * 10**9),
    "h100-sxm": (1979 * T / 2, 3350e9, 80 * 10**9), "h200": (1979 * T / 2, 4800e9, 141 * 10**9),
    "tpu-v4": (275 * T, 1200e9, 32 * 2**30), "tpu-v5e": (197 * T, 819e9, 16 * 10**9), "tpu-v5p": (459 * T, 2765e9, 95 * 2**30),
    # Cloud TPU v6e page (918 TFLOPs bf16, 32 GB at 1638 GBps); HGX B200 datasheet ÷ 8 GPUs (36 PF bf16 with
    # sparsity, 1.4 TB HBM3e at 64 TB/s); AMD MI300X datasheet (1,307.4 TFLOPS bf16 dense, 192 GB at 5.3 TB/s)
    "tpu-v6e": (918 * T, 1638e9, 32 * 10**9), "b200": (4500 * T / 2, 8000e9, 180 * 10**9),
    "mi300x": (1307.4 * T, 5300e9, 192 * 10**9),
}
#: bytes per weight
W_BYTES = {"bf16": 2, "int8": 1, "fp8": 1, "int4": 0.5}


@functools.cache
def variants(fid, per_difficulty=9):
    """The family's problems for seeds 0 .. per_difficulty-1 at each of its difficulties."""
    f = FAMILIES[fid]
    return tuple(f.generate(s, diff) for diff in f.levels for s in range(per_difficulty))


def easy(fid, seed=0):
    """The easy variant for ``seed``: the one a pinned test works by hand."""
    return FAMILIES[fid].generate(seed, "easy")
