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


def test_group_int4_hard_codes_only_one_way():
    """At hard the codes-only slip (the scales' share, one of three fixed fractions) is never made the other way."""
    got = _slips("quantisation.group_int4_mcq", "hard")
    assert ("no_scales", "reversed") not in got
    assert {("no_zeros", "reversed"), ("no_g_idx", "reversed")} <= got


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
