"""Issue 21: no statement, option, hint or solution of any family or curated item holds a control
character (a ``\\t`` that a non-raw string made of ``\\times``) or an unconverted LaTeX command
(``\\sim`` shown raw) in its plain text; a softmax solution ends with its answer line."""

from __future__ import annotations

import re

import pytest

from question_bank import bank
from question_bank.family import all_families
from question_bank.render import latex_to_text

#: C0 controls but the newline, DEL and the C1 controls
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
#: a backslash command left in plain text (``\sim``, ``\frac``, ``\times``)
LATEX = re.compile(r"\\[A-Za-z]+")
SEEDS = (0, 7)


def _texts(p):
    yield "statement", p.statement_text
    yield "solution", p.solution_text
    for i, o in enumerate(p.options_text):
        yield f"option {i}", o
    for h in p.hints:
        yield "hint", latex_to_text(h)  # hints are shown through latex_to_text
    for pt in p.parts:
        yield f"part ({pt.label})", pt.prompt_text


def _bad(p):
    out = []
    for where, text in _texts(p):
        if CONTROL.search(text or ""):
            out.append((p.id, where, "control character", repr(CONTROL.search(text).group(0)), text[:80]))
        m = LATEX.search(text or "")
        if m:
            out.append((p.id, where, "LaTeX command", m.group(0), text[max(0, m.start() - 40):m.end() + 20]))
    return out


def test_no_family_text_holds_a_control_character_or_raw_latex():
    bad = []
    for _fid, fam in sorted(all_families().items()):
        for diff in fam.levels:
            for s in SEEDS:
                bad += _bad(fam.generate(s, diff))
    assert not bad, bad[:15]


@pytest.mark.slow
def test_no_curated_text_holds_a_control_character_or_raw_latex():
    bad = []
    for p in bank.curated():
        bad += _bad(p)
    assert not bad, bad[:15]


def test_the_renderer_converts_what_showed_raw():
    assert latex_to_text(r"$q_i \sim N(0, 1)$") == "qᵢ ∼ N(0, 1)"
    assert "×" in latex_to_text(r"$n\times k$") and "\t" not in latex_to_text(r"$n\times k$")


@pytest.mark.parametrize("fid", sorted(f for f in all_families() if f.startswith("softmax.")))
def test_softmax_solutions_state_the_answer(fid):
    fam = all_families()[fid]
    for diff in fam.levels:
        p = fam.generate(3, diff)
        assert "Answer:" in p.solution_text, p.id
