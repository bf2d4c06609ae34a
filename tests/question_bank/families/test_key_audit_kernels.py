"""Semantic audit of the kernel-topic families and the curated items of seeds 000-003.

The family tests check keys against independent recomputations; these check what such tests
cannot: that the numbers stay humane for a hand computation (no keyed entry near a rounding
boundary, so 4-significant-digit intermediates round the same way), that the plain-text
statement names its conventions without LaTeX residue, and that curated keys agree with the
seed text they are drawn from (or record an erratum where the seed is wrong)."""

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from question_bank.family import all_families
from question_bank.grading import grade
from question_bank.problem import MatrixKey, NumericKey

FAMS = all_families()
MATRIX_FAMILIES = ("attention.by_hand", "attention.masked_weights", "normalisation.layernorm",
                   "normalisation.rmsnorm", "positional.rope")
NAT_FAMILIES = ("attention.one_weight", "softmax.temperature", "positional.pe_value", "positional.pe_rotation",
                "attention.variance_qk", "pretraining.bert_masking")
KERNEL_FAMILIES = MATRIX_FAMILIES + NAT_FAMILIES + (
    "attention.heads", "attention.shapes", "attention.why_sqrt_dk", "complexity.attention_variants", "scaling.chinchilla")
SEEDS = range(8)


def _problems(fid):
    f = FAMS[fid]
    return [f.generate(s, diff) for diff in f.levels for s in SEEDS]


def _distance_to_boundary(x: float, decimals: int) -> float:
    """How far x lies from the nearest x.xx5 (in units of 10⁻ᵈ), computed with Decimal."""
    scaled = abs(Decimal(repr(float(x)))) * Decimal(10) ** decimals
    frac = scaled - int(scaled)
    return float(abs(frac - Decimal("0.5")))


@pytest.mark.parametrize("fid", MATRIX_FAMILIES + NAT_FAMILIES)
def test_keyed_values_are_away_from_rounding_boundaries(fid):
    """Every rounded key entry is ≥ 0.05 units of its last place from a .5 boundary (0.665 24 is not)."""
    for p in _problems(fid):
        for key in [pt.key for pt in p.parts] or [p.key]:
            if isinstance(key, MatrixKey) and key.decimals is not None:
                cells = [x for r in key.value for x in r]
            elif isinstance(key, NumericKey) and key.decimals is not None:
                cells = [key.value]
            else:
                continue
            for x in cells:
                assert _distance_to_boundary(x, key.decimals) >= 0.05, (p.id, x)


def _round_sig(a, sig=4):
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore"):
        mag = np.where(a == 0, 0, np.floor(np.log10(np.abs(np.where(a == 0, 1, a)))))
    return np.round(a / 10**mag, sig - 1) * 10**mag


def test_by_hand_with_four_digit_intermediates_is_accepted():
    """A student who keeps 4 significant digits of the exponentials and the weights, and of
    the scaled scores, gets every part accepted (no follow-through needed)."""
    for p in _problems("attention.by_hand"):
        g = p.given
        q, k, v = (np.array(g[x], dtype=float) for x in ("q", "k", "v"))
        n = q.shape[0]
        keep = np.ones((n, n), dtype=bool)
        if g["mask"] == "causal":
            keep = np.tril(keep)
        elif g["mask"] == "padding":
            keep[:, -1] = False
        s = q @ k.T
        scaled = _round_sig(s / np.sqrt(q.shape[1])) if g["scaled"] else s
        e = np.where(keep, _round_sig(np.exp(scaled - scaled.max(axis=1, keepdims=True))), 0.0)
        w = _round_sig(e / _round_sig(e.sum(axis=1, keepdims=True)))
        out = w @ v
        answers = [s, scaled, w, out] if g["scaled"] else [s, w, out]
        for part, ans in zip(p.parts, answers, strict=True):
            d = part.key.decimals
            shown = [[float(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP)) for x in r]
                     for r in ans] if d is not None else ans.tolist()
            assert grade(part, shown).correct, (p.id, part.label, shown)


@pytest.mark.parametrize("fid", KERNEL_FAMILIES)
def test_plain_statement_has_no_latex_residue(fid):
    """The terminal statement and options carry no LaTeX command names (\\mapsto read as 'mapsto')."""
    for p in _problems(fid)[:8]:
        for text in [p.statement_text, *p.options_text]:
            assert "\\" not in text and "mapsto" not in text and "frac" not in text, (p.id, text)


# ---------------------------------------------------------------- curated items of seeds 000-003

def _curated_problems():
    from question_bank import curated

    return [curated.build(e.id) for e in curated.index() if e.id[:4] in ("000.", "001.", "002.", "003.")]


def test_curated_plain_text_has_no_empty_radicand_or_latex():
    r"""`\sqrt 4` (no braces) rendered as '√( )4' in the terminal; statements and options must read cleanly."""
    for p in _curated_problems():
        for text in [p.statement_text, *p.options_text]:
            assert "√( )" not in text and "\\" not in text, (p.id, text)


def test_curated_rounded_keys_are_away_from_rounding_boundaries():
    """max softmax([1,2,3,4]/2) = 0.455054 asked to four decimals was 0.05 units from 0.45505."""
    for p in _curated_problems():
        for key in [pt.key for pt in p.parts] or [p.key]:
            if isinstance(key, NumericKey) and key.decimals:
                assert _distance_to_boundary(key.value, key.decimals) >= 0.1, (p.id, key.value)


def test_causal_mask_options_name_no_triangle_that_depends_on_the_convention():
    """'upper-triangular causal mask' is true only for the block convention (001 Ex. 1 calls the keep
    mask lower-triangular): a true MSQ option must not depend on an unstated convention."""
    for p in _curated_problems():
        for i in (p.key.correct if p.type in ("mcq", "msq") else ()):
            opt = p.options_text[i].lower()
            assert not ("triangular" in opt and "mask" in opt and "1 =" not in opt), (p.id, opt)
