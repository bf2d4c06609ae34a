"""Issue 12: disjoint, ordered difficulty levels for the relative-position and quantisation families.

The same check as ``test_levels_named_in_issue_12_are_disjoint`` (tests/test_bank_quality.py) for
the families whose levels were redefined on this branch, plus the order of the work (the median
worked solution does not shrink from easy to hard) and each level's definition, read from the
problem's own ``given`` (what the docstring of each family promises)."""

from __future__ import annotations

import pytest

from question_bank import quality
from question_bank.family import all_families

LEVELS_B = ["positional.t5_bucket", "positional.t5_bias_params", "positional.alibi_bias",
            "positional.rope_relative_score", "quantisation.ggml_bytes", "quantisation.group_int4",
            "quantisation.nf4_bits", "quantisation.kv_int8"]


def _by_level(fid, n=60):
    f = all_families()[fid]
    return {diff: [f.generate(s, diff) for s in range(n)] for diff in f.difficulties}


@pytest.mark.parametrize("fid", LEVELS_B)
def test_levels_named_in_issue_12_are_disjoint(fid):
    """Before: 5 t5_bucket, 3 t5_bias_params, 2 alibi_bias, 1 rope_relative_score, 4 ggml_bytes,
    17 group_int4, 1 nf4_bits and 20 kv_int8 statements appeared at two levels (100 draws)."""
    shared, medians = quality.difficulty_report(_by_level(fid))
    assert shared == 0
    work = list(medians.values())
    assert work == sorted(work), medians


def _t5_default(g):
    return g["bidirectional"] and (g["num_buckets"], g["max_distance"]) == (32, 128)


#: Per family: (easy, medium, hard) predicates on ``given``, each true of its own level only.
DEFINITIONS = {
    "positional.t5_bucket": (lambda g: _t5_default(g) and g["r"] < 0,
                             lambda g: _t5_default(g) and g["r"] > 0,
                             lambda g: not _t5_default(g)),
    "positional.t5_bias_params": (lambda g: g["stacks"] == 1 and g["dtype"] is None,
                                  lambda g: g["stacks"] == 2 and g["dtype"] is None,
                                  lambda g: g["stacks"] == 2 and g["dtype"] in ("fp32", "bf16")),
    "positional.alibi_bias": (lambda g: g["H"] == 8, lambda g: g["H"] in (16, 32), lambda g: g["H"] & (g["H"] - 1) != 0),
    "positional.rope_relative_score": (lambda g: len(g["q"]) == 2 and g["n"] == 0,
                                       lambda g: len(g["q"]) == 2 and g["n"] >= 1,
                                       lambda g: len(g["q"]) == 4),
    "quantisation.ggml_bytes": (lambda g: g["format"] == "q4_0" and g["layers"] == 1 and g["unit"] == "MiB",
                                lambda g: g["format"] in ("q4_0", "q8_0") and g["layers"] == 32,
                                lambda g: g["format"].endswith("_K")),
    "quantisation.group_int4": (lambda g: g["zero"] == "fp16" and g["group_size"] == 128 and not g["g_idx"],
                                lambda g: g["zero"] == "int4" and not g["g_idx"],
                                lambda g: g["zero"] == "int4" and g["g_idx"]),
    "quantisation.nf4_bits": (lambda g: g["n"] is None and g["blocksize"] == 64,
                              lambda g: g["n"] is None and g["blocksize"] in (128, 256),
                              lambda g: g["n"] is not None),
    "quantisation.kv_int8": (lambda g: g["model"] == "llama2-7b" and g["dtype"] == "int8",
                             lambda g: g["model"] != "llama2-7b" and g["dtype"] == "int8",
                             lambda g: g["dtype"] == "int4"),
}


@pytest.mark.parametrize("fid", LEVELS_B)
def test_each_level_draws_what_it_defines(fid):
    """Every draw satisfies its own level's definition and no other's (so the levels stay disjoint by
    construction, not only on the seeds drawn)."""
    preds = DEFINITIONS[fid]
    for i, ps in enumerate(_by_level(fid, 30).values()):
        for p in ps:
            assert [pred(p.given) for pred in preds] == [j == i for j in range(3)], (p.id, p.given)
