"""Issue 38, the terminal at 80×24 (read with pyte from a pty, as tests/drills/quiz/test_screens.py does):
a tall numeric MCQ keeps the question's first line on the screen at the answer prompt; the GATE paper's
palette takes one row before a question, not eight."""

from __future__ import annotations

import pytest

from tests.drills.quiz.test_screens import Terminal

pytest.importorskip("pexpect")
pytest.importorskip("pyte")


def _tallest_offered_numeric_mcq() -> tuple[str, str, str]:
    """(view, level, the statement's first words) of the offered numeric MCQ whose seed-0 draw has the most text:
    the bank's offer changes as levels are withdrawn, so the test picks the tallest one offered today."""
    from question_bank.family import all_families
    from question_bank.numeric_mcq import SUFFIX

    best = None
    for fid, fam in all_families().items():
        if not fid.endswith(SUFFIX):
            continue
        for lv in fam.difficulties:
            p = fam.generate(0, lv)
            size = len(p.statement_text) + sum(len(o) for o in (p.options_text or p.options))
            if best is None or size > best[0]:
                best = (size, fid, lv, " ".join(p.statement_text.split()[:3]))
    assert best is not None and best[0] > 600, best  # a tall one (870 characters when this test was written)
    return best[1], best[2], best[3]


def test_tall_numeric_mcq_shows_its_first_line(tmp_path):
    """The tallest numeric MCQ the bank offers (870 characters of statement and options at seed 0 when it was
    context.ulysses_mcq hard; moe.decode_weight_bytes_mcq hard, 29 rows in a panel before, is withdrawn) shows its
    header and its first line above the options."""
    view, level, first = _tallest_offered_numeric_mcq()
    term = Terminal(["quiz", "--topic", view, "--difficulty", level, "-n", "1", "--seed", "0"], tmp_path)
    try:
        term.wait_for(r"answer ›")
        screen = " ".join(term.text.split())
        assert "Question 1 of 1" in screen and first in screen, term.text  # header, first line
        assert "(a)" in screen and "(d)" in screen
    finally:
        term.close()


def test_gate_palette_takes_one_row(tmp_path):
    term = Terminal(["exam", "--paper", "gate", "--seed", "1"], tmp_path)
    try:
        term.wait_for(r"Q1 \[", 120)
        rows = term.lines
        head = [i for i, ln in enumerate(rows) if "Time left" in ln]
        assert head, term.text
        top = head[-1]
        q = next(i for i in range(top, len(rows)) if "Question 1 of 65" in rows[i])
        assert q - top <= 3, term.text  # the clock and palette row, the legend (first question only)
        assert not any(" 65" in ln for ln in rows[top:q]), "the whole palette again"
    finally:
        term.close()
