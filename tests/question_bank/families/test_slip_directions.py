"""Issue 39: slips whose direction a test-wise student reads from the options' sizes are offered one way only.

A slip that adds or drops a term of share s moves the key to k·(1 − s) one way and k·(1 + s) the other; when s is
large (the embedding matrix: a third of the count or more) or takes a few fixed values (the scales of a group
size), the ratio between the options' two clusters says which way the slip went, hence on which side the key is.
These slips stay in the NAT forms' diagnoses; the MCQ views cross only slips that look alike either way.
"""

from __future__ import annotations

import pytest

from question_bank.family import get_family


def _slips(fid: str, level: str, n: int = 60) -> set[tuple[str, str]]:
    """Every (slip, direction) an option of the view's first ``n`` draws is made with."""
    view = get_family(fid)
    got = set()
    for s in range(n):
        for row in view.generate(s, level).given["option_slips"]:
            for sid, how in row:
                for one in sid.split("+"):
                    got.add((one, how))
    return got


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_params_model_embedding_slips_one_way(level):
    """The slips of the size of the embedding matrix (counted twice, left out, the untied head) are made only as the
    family makes them above easy, and the biases (odd in units of d when L is even) only so at hard."""
    got = _slips("counting.params_model_mcq", level)
    assert not {("tied_counted_twice", "reversed"), ("forgot_lm_head", "reversed"), ("forgot_embeddings", "reversed")} & got
    if level == "hard":
        assert ("forgot_biases", "reversed") not in got
    assert any(how == "reversed" for _, how in got)  # the small slips still go either way


def test_group_int4_hard_fixed_shares_one_way():
    """At hard the codes-only and the zero-point slips (shares fixed by the group size) are never made the other way;
    the g_idx slip (its share varies with the rows) and the unit go either way."""
    got = _slips("quantisation.group_int4_mcq", "hard")
    assert not {("no_scales", "reversed"), ("no_zeros", "reversed")} & got
    assert {("no_g_idx", "own"), ("no_g_idx", "reversed"), ("mb_for_mib", "own"), ("mb_for_mib", "reversed")} <= got


def test_group_int4_unit_slip_each_way_by_the_same_factor():
    """The unit slip's two options are the bytes over 10^6 and the MiB over 1.048576 once more, recomputed from the
    shape (codes, fp16 scales, packed zeros, int32 g_idx), each as the NAT form's grader names it."""
    from question_bank.grading import grade

    fam = get_family("quantisation.group_int4")
    seen = set()
    for s in range(40):
        for level in ("easy", "medium", "hard"):
            p = fam.generate(s, level)
            g = p.given
            rows, cols, gs = g["rows"], g["cols"], g["group_size"]
            assert rows % 128 == 0 and cols % 128 == 0 and 2048 <= rows <= 16384 and 2048 <= cols <= 32768
            groups = rows * cols // gs
            total = rows * cols // 2 + 2 * groups + (2 * groups if g["zero"] == "fp16" else groups // 2) + 4 * cols * g["g_idx"]
            for v, want in ((total / 10**6, "mb_for_mib"), (total / 2**20 * 10**6 / 2**20, "mb_for_mib_reversed")):
                got = grade(p, v).misconception
                assert got is not None and got.id == want, (p.id, v, got)
                seen.add(want)
    assert seen == {"mb_for_mib", "mb_for_mib_reversed"}


def test_params_ffn_hard_biases_one_way_layers_either_way():
    """At hard the biases slip (the weights hold more factors of 2 than the biases, so dropping them or doubling them
    both raise the count's power of 2) is never made the other way; the gate's bias and the fencepost on the layers go
    either way, and one layer too few or too many is (L ∓ 1)/L of the count."""
    got = _slips("counting.params_ffn_mcq", "hard")
    assert ("forgot_biases", "reversed") not in got
    assert {("forgot_gate_bias", "own"), ("forgot_gate_bias", "reversed"), ("one_layer_too_few", "own"),
            ("one_layer_too_few", "reversed")} <= got
    view = get_family("counting.params_ffn_mcq")
    for s in range(30):
        p = view.generate(s, "hard")
        g = p.given
        L, d, ff = g["n_layers"], g["d_model"], g["d_ff"]
        per_layer = 3 * d * ff + 2 * ff + d  # SwiGLU with every bias
        vals = p.given["option_values"]
        for row, v in zip(g["option_slips"], vals, strict=True):
            if row == [["one_layer_too_few", "own"]]:
                assert v == (L - 1) * per_layer, p.id
            if row == [["one_layer_too_few", "reversed"]]:
                assert v == (L + 1) * per_layer, p.id


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_latent_rotary_key_at_most_a_fifth(level):
    """Above easy the latent is at least 4 × the rotary width (no ×1.5 or ×4/3 slips), the rotary-key-only inverse is
    not crossed, and medium crosses the bytes-per-value slip, which goes either way."""
    fam = get_family("latent.kv_cache")
    for s in range(60):
        g = fam.generate(s, level).given
        assert g["kv_lora_rank"] >= 4 * g["qk_rope_head_dim"] + 64
    got = _slips("latent.kv_cache_mcq", level)
    assert ("latent_twice", "reversed") not in got
    if level == "medium":
        assert {("wrong_dtype_bytes", "reversed"), ("wrong_dtype_bytes", "own"), ("gib_for_gb", "own"),
                ("gib_for_gb", "reversed")} <= got


def test_window_medium_crosses_two_slips_that_go_either_way():
    """At medium (GB) the unit slip (2³⁰ for 10⁹) goes either way beside the factor 2 of K and V, so the view never
    needs the one-way window slips, which told the key's side (53 %)."""
    got = _slips("window.kv_cache_mcq", "medium")
    assert {("gib_for_gb", "own"), ("gib_for_gb", "reversed"), ("forgot_k_and_v", "own"), ("forgot_k_and_v", "reversed")} <= got


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_group_int4_keys_rarely_repeat(level):
    """Shapes in multiples of 128 from 2,048: the keys of 200 draws, rounded as asked (two decimals of a MiB), are at
    least 190 distinct values (multiples of 256 from 1,024 rows gave 170 at easy and 183 at medium, and remembering
    keys beat the view)."""
    fam = get_family("quantisation.group_int4")
    keys = {round(fam.generate(s, level).key.value, 2) for s in range(200)}
    assert len(keys) >= 190, len(keys)
