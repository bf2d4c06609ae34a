"""The real interactive quiz, driven through a pseudo-terminal (pexpect): the rich view shows
the problem, reads an answer typed at the prompt, shows the verdict, waits for Enter; Ctrl-C
ends the session with a one-line goodbye and keeps the answers already given.

The answer typed is written from the problem object the quiz asks (rebuilt with the same
planner on an equally empty history; with ``-n 1`` nothing is reordered)."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from drills.progress import ProgressStore
from drills.quiz.plan import Catalogue, Pick, QuizOptions, plan
from question_bank.grading import round_half_up
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, key_value
from tests.child_signals import default_signals

pexpect = pytest.importorskip("pexpect")

REPO = Path(__file__).resolve().parents[3]
QKV = Path(sys.executable).with_name("qkv")
TIMEOUT = 120  # a loaded two-core machine can take long to start the quiz (torch-free, but sympy in the background)
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
                         dimensions=(50, 160), timeout=TIMEOUT, preexec_fn=default_signals)


def _reading(pid: int) -> bool | None:
    """Whether process ``pid`` is blocked waiting for terminal input (Linux: its kernel wait
    channel is a poll/select or a tty read); None where /proc cannot say."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return None
    if not wchan or wchan == "0":
        return None
    return any(w in wchan for w in ("poll", "select", "tty_read", "wait_woken"))


def _interrupt(child) -> None:
    """Ctrl-C, typed once the quiz waits at its prompt.

    Why wait: CPython's ``input()`` with readline checks for signals only when ``select()`` on
    the terminal is interrupted. A SIGINT that arrives after the prompt is printed but before
    ``select()`` starts (readline setting up the terminal: a few system calls, where a loaded
    machine may switch away) is noted and acted on only at the next key press, so the test
    waited 60 s for "Goodbye" once. A person never types Ctrl-C in that microsecond window; a
    test that types it the instant the text appears may. So wait (at most 10 s) until the
    process sleeps in select/poll; where /proc cannot tell, go on at once."""
    deadline = time.monotonic() + 10
    while _reading(child.pid) is False and time.monotonic() < deadline:
        time.sleep(0.01)
    child.sendintr()


def _interrupt_until(child, pattern: str) -> None:
    """Ctrl-C at the prompt, then wait for ``pattern``. On a loaded machine the one SIGINT can
    still land in readline's window before ``select()`` (see :func:`_interrupt`), where CPython
    acts on it only at the next key: then type Ctrl-C once more, as a person would."""
    _interrupt(child)
    if child.expect([pattern, pexpect.TIMEOUT], timeout=15) == 1:
        child.sendintr()
        child.expect(pattern)


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
    _interrupt_until(child, "Goodbye: 1 of 1 right")  # Ctrl-C while the verdict is on screen
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in ANSI.sub("", child.before or "")
    with ProgressStore.open(home) as store:
        assert store.count_attempts() == max(1, len(problem.parts))


def test_ctrl_c_partway_through_a_multi_part_problem_keeps_the_parts_answered(tmp_path):
    """Part (a) of a three-part item right, Ctrl-C at (b): (a) keeps its credit, the rest
    scores 0, so 1/3 of the item's marks; the goodbye line says so and the database holds
    (a) and a row for (b) with the action 'interrupt' and the problem's score (one review)."""
    iid = "000.code.scaling_demo"
    problem = Catalogue.load().build(Pick("item", iid))
    n = len(problem.parts)
    assert n >= 2
    home = tmp_path / "home"
    child = _spawn(["--topic", iid, "-n", "1", "--seed", "1"], home)
    child.expect("answer ›")
    a = problem.parts[0]
    child.sendline(_text_for(a.key, key_value(a.key)))
    child.expect(r"\(b\)")
    child.expect("answer ›")
    marks = f"{problem.marks / n:.2f}".rstrip("0").rstrip(".")
    _interrupt_until(child, re.escape(f"Goodbye: 0 of 1 right (score {marks}/{problem.marks} marks)"))
    child.expect(pexpect.EOF)
    child.close()
    screen = ANSI.sub("", child.before or "")
    assert "Traceback" not in screen
    with ProgressStore.open(home) as store:
        rows = store.attempts()
    assert [r["part"] for r in rows] == [a.label, problem.parts[1].label]
    assert rows[1]["extra"]["action"] == "interrupt"
    assert rows[1]["extra"]["problem_score"] == pytest.approx(1 / n)
    assert [r["rating"] for r in rows] == [None, 1]
