"""The real interactive quiz, driven through a pseudo-terminal (pexpect): the rich view shows
the problem, reads an answer typed at the prompt, shows the verdict, waits for Enter; Ctrl-C
ends the session with a one-line goodbye and keeps the answers already given.

The answer typed is written from the problem object the quiz asks (rebuilt with the same
planner on an equally empty history; with ``-n 1`` nothing is reordered)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from drills.progress import ProgressStore
from drills.quiz import Catalogue, QuizOptions, plan
from question_bank.grading import round_half_up
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, key_value

pexpect = pytest.importorskip("pexpect")

REPO = Path(__file__).resolve().parents[1]
QKV = Path(sys.executable).with_name("qkv")
TIMEOUT = 60
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

pytestmark = pytest.mark.skipif(not QKV.exists(), reason="the qkv console script is not installed in this venv")


def _text_for(key, value) -> str:
    if isinstance(key, NumericKey):
        return repr(float(value)) if key.decimals is None else f"{round_half_up(float(value), key.decimals):.{key.decimals}f}"
    if isinstance(key, IntegerKey):
        return str(int(value))
    if isinstance(key, MatrixKey):
        return "; ".join(" ".join(repr(float(x)) for x in row) for row in value)
    assert isinstance(key, ChoiceKey)
    return ",".join("abcdefghij"[i] for i in sorted(value))


def _first_problem(seed: int, tmp: Path):
    catalogue = Catalogue.load()
    with ProgressStore.open(tmp) as store:
        (pick,) = plan(catalogue, store, QuizOptions(count=1, seed=seed))
    return catalogue.build(pick)


def _spawn(args: list[str], home: Path):
    env = {**os.environ, "QKV_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return pexpect.spawn(str(QKV), ["quiz", *args, "--data-dir", str(home)], env=env, encoding="utf-8",
                         dimensions=(50, 160), timeout=TIMEOUT)


def _answer(child, problem) -> None:
    for target in problem.parts or [problem]:
        child.expect("answer ›")
        child.sendline(_text_for(target.key, key_value(target.key)))


def test_interactive_quiz_through_a_pty(tmp_path):
    problem = _first_problem(1, tmp_path / "predict")
    home = tmp_path / "home"
    child = _spawn(["--seed", "1", "-n", "1"], home)
    child.expect_exact("Question 1 of 1")
    first_words = " ".join(problem.statement_text.split()[:4])
    child.expect_exact(first_words)  # the statement is on screen
    _answer(child, problem)
    child.expect("✓")  # the verdict: right
    child.expect("Enter: finish")
    screen = ANSI.sub("", child.before)
    assert "Correct" in screen
    child.sendline("")
    child.expect("Session over: 1 of 1 right")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    with ProgressStore.open(home) as store:
        rows = store.attempts()
    assert [r["problem_id"] for r in rows] == [problem.id] * max(1, len(problem.parts))
    assert all(r["correct"] == 1 for r in rows)


def test_ctrl_c_says_goodbye_and_keeps_the_answers(tmp_path):
    problem = _first_problem(1, tmp_path / "predict")
    home = tmp_path / "home"
    child = _spawn(["--seed", "1", "-n", "1"], home)
    _answer(child, problem)
    child.expect("Enter: finish")
    child.sendintr()  # Ctrl-C while the verdict is on screen
    child.expect("Goodbye: 1 of 1 right")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in ANSI.sub("", child.before or "")
    with ProgressStore.open(home) as store:
        assert store.count_attempts() == max(1, len(problem.parts))
