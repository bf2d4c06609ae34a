"""Issue 39: precision.fp8_memory's MCQ view (medium and hard, per GPU) crosses the unit's slip (GB for GiB or GiB for
GB, and its inverse, the conversion made twice) with Adam's moments in the other recipe's precision (Transformer
Engine's fp32 m and v taken as bf16, DeepSeek-V3's bf16 taken as fp32). Checked here against the recipes' tensors
typed out again (tests/question_bank/families/test_precision_scale.py:RECIPES): every option is one recipe's bytes in
one unit, so the moments' step is one factor, down for one recipe and up for the other, and no option's size or digits
say which recipe or which unit the question asked."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank import numeric_mcq
from question_bank.adversary import printed_numbers
from question_bank.family import FAMILIES
from tests.question_bank.families.test_precision_scale import RECIPES

GIB, GB = 2**30, 10**9


def _bytes(recipe: str, g: dict) -> Fraction:
    """Per GPU, in bytes: the replicated tensors whole, the sharded ones over d, all over t·p."""
    per = sum(Fraction(b, g["d"] if sharded else 1) for b, sharded in RECIPES[recipe].values())
    return g["N"] * per / (g["t"] * g["p"])


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_every_option_is_a_recipe_in_a_unit(level):
    view = numeric_mcq.mcq_view(FAMILIES["precision.fp8_memory"])
    asked_unit = GIB if level == "hard" else GB
    other = GB if asked_unit == GIB else GIB
    ranks = [0] * 4
    for s in range(120):
        p = view.generate(s, level)
        g = p.given
        corners = {(rc, u): float(_bytes(rc, g)) / u for rc in RECIPES
                   for u in (asked_unit, other, asked_unit * asked_unit / other)}
        vals = g["option_values"]
        key_at = min(p.key.correct)
        ranks[key_at] += 1
        assert vals[key_at] == pytest.approx(corners[(g["recipe"], asked_unit)], rel=1e-9), p.id
        named = []
        for text in p.options:
            # as printed (two decimals: a small key's moments' slip can print as another slip of the same draw)
            hits = [c for c, cv in corners.items() if f"{cv:.2f}" == text.split()[0].replace(",", "")]
            assert len(hits) == 1, (p.id, text, corners)
            named.append(hits[0])
        # both recipes, and the key's unit with one other (GB or the conversion twice): the 2 x 2 cross
        assert {rc for rc, _ in named} == set(RECIPES), p.id
        assert len({u for _, u in named}) == 2 and asked_unit in {u for _, u in named}, p.id
        # the moments' slip: Transformer Engine's goes down, DeepSeek-V3's up, by the same factor
        other_recipe = next(rc for rc in RECIPES if rc != g["recipe"])
        step = corners[(other_recipe, asked_unit)] / corners[(g["recipe"], asked_unit)]
        assert (step < 1) == (g["recipe"] == "fp8-te"), p.id
        # every option kept off a half-way third decimal, not only the key (whether a draw is kept says nothing of
        # which of the four the question asked)
        assert all(abs((corners[c] * 100) % 1 - 0.5) > 0.05 for c in named), (p.id, vals)
    assert min(ranks) >= 20, ranks


def test_the_recipes_print_the_same_numbers():
    """No figure in one recipe's words only (DeepSeek-V3's report section printed beside its recipe told the recipe,
    and with it the moments' slip's way): the statement's printed numbers are N, the parallel sizes and ZeRO's stage."""
    for s in range(60):
        p = FAMILIES["precision.fp8_memory"].generate(s, "hard")
        g = p.given
        rest = printed_numbers(p.statement_text)
        for v in (g["N"] / 1e9, g["t"], g["p"], g["d"]):
            rest.remove(v)
        assert sorted(rest) == [1.0, 2.0, 30.0, 2.0**30], (p.id, rest)  # ZeRO's stage 1 and GiB's 2^30


def test_hard_view_leaves_out_the_pipeline_slip():
    """"t only" (× p) or its inverse (÷ p) put a printed number between the options' two columns."""
    assert set(FAMILIES["precision.fp8_memory"].slips_in_view("hard")) == {"gb_for_gib", "gib_for_gb", "moments_bf16",
                                                                            "moments_fp32"}
    view = numeric_mcq.mcq_view(FAMILIES["precision.fp8_memory"])
    for s in range(40):
        p = view.generate(s, "hard")
        vals = p.given["option_values"]
        assert not any(math.isclose(a / b, p.given["p"], rel_tol=1e-6) for a in vals for b in vals), p.id
