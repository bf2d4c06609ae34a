"""Issue 38, the terminal at 80×24 (read with pyte from a pty, as tests/drills/quiz/test_screens.py does):
a tall numeric MCQ keeps the question's first line on the screen at the answer prompt; the GATE paper's
palette takes one row before a question, not eight."""

from __future__ import annotations

import pytest

from tests.drills.quiz.test_screens import Terminal

pytest.importorskip("pexpect")
pytest.importorskip("pyte")


def test_tall_numeric_mcq_shows_its_first_line(tmp_path):
    """context.ulysses_mcq hard (the tallest numeric MCQ the bank offers, 870 characters of statement
    and options at seed 0; moe.decode_weight_bytes_mcq hard, 29 rows in a panel before, is withdrawn)."""
    term = Terminal(["quiz", "--topic", "context.ulysses_mcq", "--difficulty", "hard", "-n", "1",
                     "--seed", "0"], tmp_path)
    try:
        term.wait_for(r"answer ›")
        screen = " ".join(term.text.split())
        assert "Question 1 of 1" in screen and "DeepSpeed-Ulysses spreads" in screen, term.text  # header, first line
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
