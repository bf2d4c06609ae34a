"""The small named mistakes added to counting.flops_attention, counting.params_ffn, counting.params_kv_proj, attention.heads,
counting.params_norm and counting.training_memory (so that their numeric MCQ views have near options to cross):
each mistake's value recomputed here from the statement's numbers with its own formula, over many draws of
every level, and the key checked against the plain formula as well."""

import pytest

import question_bank.families.counting_flops  # noqa: F401 - registers
import question_bank.families.counting_memory  # noqa: F401
import question_bank.families.counting_params  # noqa: F401
from question_bank.family import FAMILIES
from question_bank.grading import grade

SEEDS = range(40)
LEVELS = ("easy", "medium", "hard")


def draws(fid):
    f = FAMILIES[fid]
    return [f.generate(s, lv) for lv in LEVELS for s in SEEDS]


def mistakes(p):
    return {m.id: m.value for m in p.misconceptions}


def diagnosed(p, mid):
    """The judge names the mistake when a student gives its value."""
    v = grade(p, mistakes(p)[mid])
    return not v.correct and mid in {x.id for x in v.misconceptions}


def test_flops_attention_dot_product_and_batch():
    seen = set()
    for p in draws("counting.flops_attention"):
        g = p.given
        B, h, n, d = g["batch"], g["n_heads"], g["n"], g["d_model"]
        dk = d // h
        products = 2 if g["ask"] == "both" else 1
        assert p.key.value == products * 2 * B * h * n * n * dk, p.id
        m = mistakes(p)
        # d_k multiplications and d_k - 1 additions per score entry (or output entry), B·h·n² entries per product
        assert m["dot_product_minus_one"] == products * B * h * n * n * (2 * dk - 1), p.id
        assert p.key.value - m["dot_product_minus_one"] == products * B * h * n * n
        assert diagnosed(p, "dot_product_minus_one")
        if B > 1:
            assert m["forgot_batch"] * B == p.key.value, p.id
            assert diagnosed(p, "forgot_batch")
            seen.add("forgot_batch")
        else:
            assert "forgot_batch" not in m
    assert seen == {"forgot_batch"}


def test_flops_attention_wider_sizes_above_easy():
    sizes = {(p.given["d_model"], p.given["n"], p.given["batch"]) for p in draws("counting.flops_attention")
             if not p.id.split("/")[1] == "easy"}
    assert any(d % 256 for d, _, _ in sizes) and any(n % 3 == 0 for _, n, _ in sizes) and any(b in (3, 6) for *_, b in sizes)
    # issue 39: easy draws any multiple of 64 up to 2,048 (d_model and n), one sequence; the levels above go further
    easy = [FAMILIES["counting.flops_attention"].generate(s, "easy").given for s in SEEDS]
    assert all(g["d_model"] % 64 == 0 and g["d_model"] <= 2048 and g["n"] % 64 == 0 and g["n"] <= 2048 and g["batch"] == 1
               for g in easy)
    assert any(d > 2048 or n > 2048 for d, n, _ in sizes)


def test_params_ffn_bias_slips():
    seen = set()
    for p in draws("counting.params_ffn"):
        g = p.given
        d, ff, L, kind, bias = g["d_model"], g["d_ff"], g["n_layers"], g["ffn"], g["bias"]
        mats = 3 if kind == "swiglu" else 2
        biases = ((2 if kind == "swiglu" else 1) * ff + d) if bias else 0
        assert p.key.value == L * (mats * d * ff + biases), p.id
        m = mistakes(p)
        if bias:
            # every bias d_ff long: the down projection's d entries become d_ff
            assert m["down_bias_d_ff"] == L * (mats * d * ff + (mats - 1) * ff + ff), p.id
            assert m["down_bias_d_ff"] - p.key.value == L * (ff - d)
            assert diagnosed(p, "down_bias_d_ff")
            seen.add("down_bias_d_ff")
        else:
            assert "down_bias_d_ff" not in m
        if bias and kind == "swiglu":
            assert m["forgot_gate_bias"] == L * (3 * d * ff + ff + d), p.id
            assert diagnosed(p, "forgot_gate_bias")
            seen.add("forgot_gate_bias")
        else:
            assert "forgot_gate_bias" not in m
    assert seen == {"down_bias_d_ff", "forgot_gate_bias"}


def test_params_kv_proj_group_size_and_biases():
    seen = set()
    for p in draws("counting.params_kv_proj"):
        g = p.given
        d, h, kv, L = g["d_model"], g["n_heads"], g["n_kv_heads"], g["n_layers"]
        dh = d // h
        weights, biases = 2 * L * d * kv * dh, 2 * L * kv * dh
        m = mistakes(p)
        # issue 39: biases on W_K and W_V or not, as the statement says; the slip is the other reading of it
        if g["bias"]:
            assert "have a bias vector" in p.statement_text and "no biases" not in p.statement_text, p.id
            assert p.key.value == weights + biases and m["forgot_biases"] == weights, p.id
            assert "counted_biases" not in m and diagnosed(p, "forgot_biases")
        else:
            assert "no biases" in p.statement_text and "bias vector" not in p.statement_text, p.id
            assert p.key.value == weights and m["counted_biases"] == weights + biases, p.id
            assert "forgot_biases" not in m and diagnosed(p, "counted_biases")
        seen.add(("bias", g["bias"]))
        group = h // kv
        if group == kv:  # the group size equals the K/V head count: the slip gives the key, no mistake to name
            assert "group_size_for_kv_heads" not in m
        else:
            assert m["group_size_for_kv_heads"] == 2 * L * (d * group * dh + (group * dh if g["bias"] else 0)), p.id
            assert diagnosed(p, "group_size_for_kv_heads")
            seen.add("group")
    assert seen == {"group", ("bias", True), ("bias", False)}


def test_params_norm_count_slips():
    seen = set()
    for p in draws("counting.params_norm"):
        g = p.given
        d, L, final, level = g["d_model"], g["n_layers"], g["final_norm"], g["level"]
        per = 2 * d if g["norm"] == "layernorm" else d
        norms = 1 if level == 0 else 2 * L + final
        assert p.key.value == norms * per, p.id
        m = mistakes(p)
        # a BatchNorm-like running mean and running variance: 2·d more per norm
        assert m["counted_running_stats"] == norms * (per + 2 * d), p.id
        assert diagnosed(p, "counted_running_stats")
        if level:
            assert m["three_norms_per_layer"] == (3 * L + final) * per, p.id
            assert diagnosed(p, "three_norms_per_layer")
            seen.add("three")
        else:
            assert "three_norms_per_layer" not in m
        if level and not final:
            assert m["added_final_norm"] == (2 * L + 1) * per, p.id
            assert diagnosed(p, "added_final_norm")
            seen.add("final")
        else:
            assert "added_final_norm" not in m
    assert seen == {"three", "final"}


@pytest.mark.parametrize("level", LEVELS)
def test_training_memory_gradient_slips(level):
    from question_bank.families.counting_common import BYTE_UNITS

    f = FAMILIES["counting.training_memory"]
    seen = set()
    for s in range(60):
        p = f.generate(s, level)
        g = p.given
        div = BYTE_UNITS[g["unit"]][0]
        n = g["params"]
        assert p.key.value == pytest.approx(16 * n / div, rel=1e-12), p.id
        m = mistakes(p)
        mixed = g["mode"] == "mixed"
        # the gradients are 2 bytes per parameter in mixed precision, 4 in fp32
        assert m["forgot_gradients"] == pytest.approx((14 if mixed else 12) * n / div, rel=1e-12), p.id
        assert diagnosed(p, "forgot_gradients")
        if mixed:
            assert m["fp32_gradients"] == pytest.approx(18 * n / div, rel=1e-12), p.id
            assert diagnosed(p, "fp32_gradients")
            seen.add("mixed")
        else:
            assert "fp32_gradients" not in m
            seen.add("fp32")
    assert seen == {"mixed", "fp32"}


def test_heads_counted_bias():
    import question_bank.families.heads  # noqa: F401 - registers

    f = FAMILIES["attention.heads"]
    seen = 0
    for lv in ("medium", "hard"):
        for s in range(60):
            p = f.generate(s, lv)
            g = p.given
            if g["ask"] != "wq_head":
                assert "counted_bias" not in mistakes(p)
                continue
            dk = g["d_model"] // g["n_heads"]
            assert p.key.value == g["d_model"] * dk, p.id
            # one bias entry per output of W_i^Q: d_k more
            assert mistakes(p)["counted_bias"] == (g["d_model"] + 1) * dk, p.id
            assert diagnosed(p, "counted_bias")
            seen += 1
    assert seen > 20


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_params_kv_proj_view_moves_the_key_either_way_with_the_biases(level):
    """Issue 39 (round 4): "K or V only" (× 1/2) put an option one power of two below the key (or the key one below
    the "four matrices" option), and the key's power of two and magnitude showed which of the two was the key. The
    view crosses the biases instead: left out where the statement gives them (the option below the key) and counted
    where it rules them out (above), so the key is the larger of the two as often as the smaller, and its power of
    two (the count without biases has the higher one) says nothing."""
    from question_bank import numeric_mcq as nm

    view = nm.mcq_view(FAMILIES["counting.params_kv_proj"], (level,))
    above = higher_pow2 = n = 0
    for s in range(200):
        p = view.generate(s, level)
        vals = p.given["option_values"]
        key = vals[next(iter(p.key.correct))]
        slips = [{sid for sid, _ in sl} for sl in p.given["option_slips"]]
        assert not any(sl & {"forgot_k_and_v", "used_n_heads", "forgot_layers"} for sl in slips), p.id
        (alone,) = [v for v, sl in zip(vals, slips, strict=True) if sl in ({"counted_biases"}, {"forgot_biases"})]
        # the statement says which way: its biases are in the key
        assert (alone > key) == ("no biases" in p.statement_text), p.id
        above += alone > key
        v2 = lambda x: (int(x) & -int(x)).bit_length()  # noqa: E731
        higher_pow2 += v2(key) > v2(alone)
        n += 1
    assert 0.35 < above / n < 0.65 and 0.35 < higher_pow2 / n < 0.65, (above, higher_pow2, n)
