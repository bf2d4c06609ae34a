"""Semantic audit of the counting, scaling and hardware families and of seed 004's items: what a
statement asks must be what its key computes, every convention the key depends on must be stated,
NAT keys must survive a student's rounding, misconceptions must carry the value their label names.

Expected values are derived here from the statements' own figures (chip data typed from the
datasheets, formulas written out), never read back from the family code. Seeds are few and
sizes small: the whole module runs in a few seconds.
"""

import functools
import math
import re
from pathlib import Path

import pytest

import question_bank.families.counting_flops  # noqa: F401 - registers
import question_bank.families.counting_memory  # noqa: F401
import question_bank.families.counting_params  # noqa: F401
import question_bank.families.counting_scaling  # noqa: F401
import question_bank.families.hardware  # noqa: F401
from question_bank.family import FAMILIES
from question_bank.grading import grade
from question_bank.problem import NumericKey
from tests.family_helpers import CHIPS, W_BYTES
from tests.family_helpers import variants as family_variants

MODULES = ("counting_params", "counting_flops", "counting_memory", "counting_scaling", "hardware")
IDS = sorted(fid for fid, f in FAMILIES.items() if f.build.__module__.rsplit(".", 1)[-1] in MODULES)
SEEDS = 8  # per difficulty


def variants(fid):
    return family_variants(fid, SEEDS)


def test_ids():
    assert len(IDS) == 21


# ------------------------------------------------------------------ conventions stated


@pytest.mark.parametrize("fid", ["counting.params_mha", "counting.params_ffn", "counting.params_layer",
                                 "counting.params_model", "counting.params_kv_proj"])
def test_parameter_statements_state_the_bias_convention(fid):
    for p in variants(fid):
        assert "bias" in p.statement_text, p.id


@pytest.mark.parametrize("fid", ["counting.flops_attention", "counting.flops_forward", "counting.flops_training",
                                 "counting.attention_vs_rnn", "hardware.gpu_days"])
def test_flop_statements_state_two_flops_per_multiply_add(fid):
    for p in variants(fid):
        assert "2 FLOPs per multiply-add" in p.statement_text, p.id


@pytest.mark.parametrize("fid", ["counting.attention_memory", "counting.kv_cache", "counting.training_memory",
                                 "hardware.zero_memory"])
def test_memory_statements_define_the_unit_and_the_bytes_per_value(fid):
    for p in variants(fid):
        t = p.statement_text
        assert re.search(r"GB \(1 GB = 10⁹ bytes\)|GB \(10⁹ bytes\)|GiB \(1 GiB = 2³⁰ bytes\)|GiB \(2³⁰ bytes\)", t), p.id
        assert re.search(r"\(\d bytes?\)|\d-byte|fp32 master|bf16 weights", t), p.id


def test_plain_text_has_no_latex_names():
    for fid in IDS:
        for p in variants(fid):
            assert "Psi" not in p.statement_text and " a RMSNorm" not in p.statement_text, p.id


def test_kv_projection_statement_names_the_layers_it_sums():
    for p in variants("counting.params_kv_proj"):
        L = p.given["n_layers"]
        first = p.statement_text.split("\n")[0]
        assert L == 1 or f"{L} layers" in first, p.id


# ------------------------------------------------------------------ NAT keys survive rounding


def test_nat_keys_clear_of_rounding_boundaries():
    """A student who keeps 4 significant intermediate digits must land in the key's range: the exact
    value sits at least 0.1 of a last-digit unit away from a rounding boundary."""
    for fid in IDS:
        for p in variants(fid):
            if isinstance(p.key, NumericKey):
                scaled = abs(p.key.value) * 10 ** p.key.decimals
                assert abs(scaled - math.floor(scaled) - 0.5) >= 0.1 - 1e-9, (p.id, p.key)


# ------------------------------------------------------------------ keys mean what the statement asks


def test_critical_batch_is_where_two_b_over_w_meets_i_star():
    """B* = I*·w/2 with I* = dense peak / bandwidth, to one decimal: not "the batch from which it is
    compute-bound" rounded to the nearest integer (103.07 → 103 is still memory-bound)."""
    seen = set()
    for p in variants("hardware.critical_intensity"):
        g = p.given
        peak, bw, _ = CHIPS[g["hw"]]
        if g["ask"] == "batch":
            seen.add(g["weight_dtype"])
            assert "equals I*" in p.statement_text and "one decimal" in p.statement_text, p.id
            assert p.key.value == pytest.approx(peak / bw * W_BYTES[g["weight_dtype"]] / 2, rel=1e-12)
        else:
            assert p.key.value == pytest.approx(peak / bw, rel=1e-12)
        assert p.key.decimals == 1
    assert seen


def test_chinchilla_forgot_square_root_carries_c_over_120():
    """N² = C/120; a student who stops there answers C/120 parameters, in billions C/120/10⁹."""
    n = 0
    for p in variants("scaling.chinchilla"):
        if p.given["ask"] != "optimal_n":
            continue
        mis = {m.id: m.value for m in p.misconceptions}
        C = p.given["compute"]
        if "no_square_root" in mis:
            n += 1
            assert mis["no_square_root"] == pytest.approx(C / 120 / 1e9, rel=1e-12), p.id
        assert mis["forgot_backward"] == pytest.approx(math.sqrt(C / 40) / 1e9, rel=1e-12)
    assert n


def test_decode_steps_fit_in_the_chips():
    """bf16 weights (2N) plus every sequence's KV cache must fit in chips × HBM, or the step is fiction
    (before: llama2-13b, B = 64, S = 8192 on 4 × 80 GB needed 456 GB). A sliding-window model (Mistral 7B)
    holds only min(S, W) positions per layer (issue 10's rolling buffer)."""
    f = FAMILIES["hardware.decode_step"]
    for p in (f.generate(s, diff) for diff in f.levels for s in range(40)):
        g = p.given
        kv_per_token = 2 * g["n_layers"] * g["n_kv_heads"] * g["d_head"] * 2
        held = min(g["context"], g["window"]) if g["window"] else g["context"]
        need = 2 * g["params"] + g["batch"] * held * kv_per_token
        assert need <= g["chips"] * CHIPS[g["hw"]][2], p.id


def test_gpu_days_forgetting_the_mfu_is_its_own_mistake():
    """With MFU = 0.5 ignoring it gives the same days as the 2× sparse peak: the grader would name the
    wrong mistake. Every variant must keep both, at different values."""
    for p in variants("hardware.gpu_days"):
        mis = {m.id: m.value for m in p.misconceptions}
        assert {"forgot_mfu", "sparse_peak"} <= set(mis), p.id
        days = p.key.value
        assert mis["forgot_mfu"] == pytest.approx(days * p.given["mfu"], rel=1e-12)
        assert mis["sparse_peak"] == pytest.approx(days / 2, rel=1e-12)


def test_named_presets_are_near_their_published_size():
    """A statement that names a model ("gpt3-xl, about 1.5 billion") must not contradict its published size."""
    from solver.counting.presets import get_preset

    for fid in ("counting.training_memory", "counting.kv_cache", "hardware.decode_step", "hardware.min_chips"):
        for p in variants(fid):
            name = p.given.get("preset") or p.given.get("model")
            pr = get_preset(name)
            if pr.published:
                from solver.counting.params import param_count

                assert abs(param_count(pr.config) / pr.published - 1) < 0.05, (p.id, name)


def test_min_chips_feedback_makes_no_vendor_unit_claim():
    for p in variants("hardware.min_chips"):
        for m in p.misconceptions:
            assert "NVIDIA's 80GB is" not in m.feedback


# ------------------------------------------------------------------ seed 004: every printed figure recomputed

SEED004 = Path("/work/shared/seeds/004_83489721195aedaa.txt")


@functools.cache
def seed004_printed():
    from question_bank.curated import check_printed

    return [c for c in check_printed() if c.item.startswith("004.")]


@pytest.mark.skipif(not SEED004.exists(), reason="seed text not present")
def test_every_block_stat_line_of_13_3_is_checked():
    text = SEED004.read_text(encoding="utf-8")
    lines = re.findall(r"Layer (\d) output — mean: (-?\d\.\d+), std: (\d\.\d+)", text)
    assert len(lines) == 6
    checked = [c.where for c in seed004_printed() if c.item == "004.code.block_stats"]
    for layer, _, _ in lines:
        for stat in ("mean", "std"):
            assert any(w.endswith(f": Layer {layer} {stat}") for w in checked), (layer, stat)


def test_block_stats_every_printed_mean_and_std_is_an_erratum():
    """Every row of a post-norm LayerNorm output (γ = 1, β = 0, ε = 1e-6) has mean 0 and variance
    σ²/(σ²+ε): the code prints 0.0000 and 1.0000 for every layer; the chapter prints neither."""
    rows = [c for c in seed004_printed() if c.item == "004.code.block_stats"]
    assert len(rows) == 12
    for c in rows:
        assert not c.agrees and c.reason, c.where
        if "mean" in c.where:
            assert abs(c.exact_value) < 1e-12
        else:
            assert 0.99999 < c.exact_value < 1.0


def test_gpt3_depth_48_is_an_erratum_and_96_agrees():
    rows = {c.where.split("(layers): ", 1)[1]: c for c in seed004_printed() if c.item == "004.s10.gpt_depth"}
    assert not rows["GPT architecture: GPT-3 depth"].agrees and rows["GPT architecture: GPT-3 depth"].reason
    assert rows["§17 timeline: GPT-3 depth"].agrees and rows["§17 timeline: GPT-2 depth"].agrees
    # 175B and 117M are the exact counts rounded: 174,604,259,328 and 116,534,784 (GPT-1: V = 40,478, 512
    # positions, 12 × 7,087,872 per layer, tied head) -> agree at the printed precision
    assert rows["§10 table and §17 timeline: GPT-3 size"].agrees and rows["§10 table and §17 timeline: GPT-1 size"].agrees
    gpt1 = 40478 * 768 + 512 * 768 + 12 * (4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768)
    assert rows["§10 table and §17 timeline: GPT-1 size"].exact_value == gpt1


def test_mqa_does_not_cut_attention_flops():
    """MQA/GQA share K and V; h query heads of n²·d/h each still make n²·d: the ratio is 1, and the
    chapter's O(n²·d/h) is an erratum."""
    from question_bank.curated import build

    p = build("004.s11.mqa_cost")
    (ci,) = p.key.correct
    assert p.options[ci].startswith("1")
    assert grade(p, ci).correct
    (c,) = [c for c in seed004_printed() if c.item == "004.s11.mqa_cost"]
    assert not c.agrees and c.reason
