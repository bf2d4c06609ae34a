"""Difficulty levels (issue 12): the families whose levels were redefined draw no statement at two
levels, their median worked solution does not get shorter from easy to hard, no key is won blind,
and each level draws what its family's docstring defines.

``tests/question_bank/quality/test_every_family_quality.py`` runs the same checks on every family at
100 draws; these name the families whose levels were once shared, with the figures from before the
fix in the docstrings, and pin each level's definition read from the problem's own ``given``."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from question_bank import quality
from question_bank.family import all_families

#: Families whose levels were redefined. Statements two levels once shared (100 draws unless said):
#: latent.kv_cache 16, moe.decode_weight_bytes 14, loss.perplexity 8, window.kv_cache 4, moe.active_params 3,
#: sampling.top_p 1; t5_bucket 5, t5_bias_params 3, alibi_bias 2, rope_relative_score 1, ggml_bytes 4,
#: group_int4 17, nf4_bits 1, kv_int8 20; the parallelism, serving and compute-optimal families 4 to 17 each;
#: why_sqrt_dk 4, attention_variants 1 (of 200), attention_vs_rnn 11, pe_rotation 11; flops_attention 3,
#: flops_forward 8, params_layer 13, params_model 4; activation_memory 11, attention_crossover 24,
#: decode_attention_intensity 26, decode_step 13, matmul_bound 2 (of 200).
REDEFINED = [
    "latent.kv_cache", "moe.active_params", "moe.decode_weight_bytes", "window.kv_cache", "loss.perplexity",
    "sampling.top_p", "positional.t5_bucket", "positional.t5_bias_params", "positional.alibi_bias",
    "positional.rope_relative_score", "quantisation.ggml_bytes", "quantisation.group_int4",
    "quantisation.nf4_bits", "quantisation.kv_int8", "parallel.allreduce_time", "parallel.bus_bandwidth",
    "parallel.pipeline_bubble", "parallel.tensor_parallel_bytes", "parallel.mfu_with_recompute",
    "serving.max_batch", "serving.speculative_tokens", "scaling.compute_optimal", "attention.why_sqrt_dk",
    "complexity.attention_variants", "counting.attention_vs_rnn", "positional.pe_rotation",
    "counting.flops_attention", "counting.flops_forward", "counting.params_layer", "counting.params_model",
    "hardware.activation_memory", "hardware.attention_crossover", "hardware.decode_attention_intensity",
    "hardware.decode_step", "hardware.matmul_bound",
]


def _by_level(fid, draws=60):
    f = all_families()[fid]
    return f, {diff: [f.generate(s, diff) for s in range(draws)] for diff in f.levels}


@pytest.mark.parametrize("fid", sorted(REDEFINED))
def test_levels_are_disjoint(fid):
    """No statement (with its options and parts) is drawn at two levels (figures from before: above)."""
    _, by_level = _by_level(fid)
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0


@pytest.mark.parametrize("fid", sorted(REDEFINED))
def test_median_worked_solution_does_not_shrink(fid):
    """Harder levels ask for more work: e.g. tensor_parallel_bytes' median solution once went from
    6 lines (medium) to 5 (hard), params_layer's from 24 to 13."""
    f, by_level = _by_level(fid)
    _, medians = quality.difficulty_report(by_level)
    lines = [medians[diff] for diff in f.levels]
    assert lines == sorted(lines), (fid, medians)


@pytest.mark.parametrize("fid", ["latent.kv_cache", "moe.active_params", "moe.decode_weight_bytes",
                                 "window.kv_cache", "loss.perplexity", "sampling.top_p"])
def test_no_key_is_won_blind(fid):
    """No key is won by typing 0, 1 or a number of the statement (none of these declares blind_key_ok;
    28 of 102 top_p keys once were: a set of 1 token, or a printed number)."""
    f, by_level = _by_level(fid, 40)
    assert not f.blind_key_ok
    assert [p.id for ps in by_level.values() for p in ps if quality.blind_key_guess(p) is not None] == []


def test_top_p_level_keys_are_not_one_value():
    """A level whose key is almost always the same count is a guess too: no count holds more than 3/4 of a level."""
    f = all_families()["sampling.top_p"]
    for diff in f.levels:
        c = Counter(f.generate(s, diff).key.value for s in range(40))
        assert max(c.values()) <= 30, (diff, c)


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
                                lambda g: g["format"] in ("q4_0", "q8_0") and g["layers"] > 1,  # issue 22: 24 to 80
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


@pytest.mark.parametrize("fid", sorted(DEFINITIONS))
def test_each_level_draws_what_it_defines(fid):
    """Every draw satisfies its own level's definition and no other's (so the levels stay disjoint by
    construction, not only on the seeds drawn)."""
    preds = DEFINITIONS[fid]
    for i, ps in enumerate(_by_level(fid, 30)[1].values()):
        for p in ps:
            assert [pred(p.given) for pred in preds] == [j == i for j in range(3)], (p.id, p.given)


def test_why_sqrt_dk_medium_distractors_are_the_variance_slips():
    """Easy's wrong options confuse the scale with another part of the layer; medium's get the
    variance wrong (Var(q·k/√dₖ) = dₖ/dₖ = 1, mean 0 unchanged): the two sets of ids share none."""
    _, by_level = _by_level("attention.why_sqrt_dk", 40)
    ids = {diff: {m.id for p in ps for m in p.misconceptions} for diff, ps in by_level.items()}
    assert ids["easy"] and ids["medium"] and not ids["easy"] & ids["medium"]
    assert {"zero_mean", "variance_grows_sqrt", "variance_by_sqrt"} & ids["medium"]


def test_attention_vs_rnn_levels_are_mcq_rnn_with_its_own_width_and_lstm():
    """issue 22: easy is the MCQ (h = d); medium a plain RNN and hard an LSTM, both with a hidden width
    h ≠ d, so the key is not the ratio of two printed numbers (n/d was the key in every draw)."""
    _, by_level = _by_level("counting.attention_vs_rnn", 40)
    assert all(p.type == "mcq" for p in by_level["easy"])
    assert all(p.type == "nat" and p.given["h"] != p.given["d"] and p.given["gates"] == 1 for p in by_level["medium"])
    assert all(p.type == "nat" and p.given["h"] != p.given["d"] and p.given["gates"] == 4 for p in by_level["hard"])
    for p in by_level["medium"] + by_level["hard"]:
        n, d = p.given["n"], p.given["d"]
        assert not math.isclose(p.key.value, n / d, rel_tol=5e-3) and not math.isclose(p.key.value, d / n, rel_tol=5e-3)


def test_pe_rotation_hard_leaves_cos_and_sin_to_the_student():
    """Hard: d = 8, ω = 10000^(−2i/8) ∈ {0.1, 0.01}; the statement shows neither ω nor cos ωk, sin ωk,
    and the solution's cos ωk, sin ωk are math.cos/sin of ωk to four places."""
    _, by_level = _by_level("positional.pe_rotation", 40)
    for p in by_level["hard"]:
        g = p.given
        omega = 10000 ** (-2 * g["i"] / 8)
        assert g["d_model"] == 8 and round(omega, 12) in (0.1, 0.01)
        _, _, c, s = g["shown"]
        assert c == pytest.approx(math.cos(omega * g["k"]), abs=5e-5) and s == pytest.approx(math.sin(omega * g["k"]), abs=5e-5)
        for shown in (r"\cos(\omega k) =", r"\sin(\omega k) =", r"\omega = 10000^{-2i/d} ="):
            assert shown not in p.statement_md, (shown, p.statement_md)
        assert f"{c:.4f}" in p.solution_md and f"{s:.4f}" in p.solution_md


@pytest.mark.slow
@pytest.mark.parametrize("fid", ["positional.rope", "attention.masked_weights", "normalisation.rmsnorm", "attention.shapes"])
def test_levels_that_repeated_at_600_draws_are_disjoint(fid):
    """issue 22: at `--draws 600` (200 a level) rope drew 27 statements at two levels, masked_weights 12, rmsnorm 4
    (medium and hard were the same problem) and shapes 1."""
    f = all_families()[fid]
    by_level = {diff: [f.generate(s, diff) for s in range(600 // len(f.levels))] for diff in f.levels}
    shared, _ = quality.difficulty_report(by_level)
    assert shared == 0
