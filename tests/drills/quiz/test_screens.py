"""The real quiz and exam in a pseudo-terminal of 80×24, as a terminal draws them (issue 23).

pexpect runs ``qkv`` in a pty of 24 rows and 80 columns; pyte, a terminal emulator, turns what
it writes into the 24 lines a student sees (scrolling, cursor moves, the cursor saved and
restored). The assertions are about that final screen:

- after a multi-part problem whose last part is wrong, the last part's verdict and the
  "Problem score" line are on screen at the next prompt (the worked solution above them);
- Ctrl-C at a multi-part problem's prompt, with text typed: "Interrupted at (b)" starts a line
  of its own;
- the exam's countdown moves while the prompt waits (the typed text stays after the prompt),
  and a warning comes before zero;
- ``submit`` asks first: the exam goes on after "no"; after "yes" the score is on the screen.

The answers typed are computed from the problem objects (the keys), never copied from output.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from drills.progress import ProgressStore
from drills.quiz.plan import Catalogue, Pick
from question_bank.problem import key_value
from tests.child_signals import default_signals

pexpect = pytest.importorskip("pexpect")
pyte = pytest.importorskip("pyte")

REPO = Path(__file__).resolve().parents[3]
QKV = Path(sys.executable).with_name("qkv")
ROWS, COLS = 24, 80
ITEM = "000.code.scaling_demo"  # a curated item of three NAT parts

pytestmark = pytest.mark.skipif(not QKV.exists(), reason="the qkv console script is not installed in this venv")


class Terminal:
    """``qkv args`` in a pty of ROWS×COLS, drawn by pyte."""

    def __init__(self, args: list[str], home: Path):
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        env = {**os.environ, "QKV_HOME": str(home), "TERM": "xterm-256color", "COLUMNS": str(COLS),
               "LINES": str(ROWS)}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        self.child = pexpect.spawn(str(QKV), [*args, "--data-dir", str(home)], env=env, dimensions=(ROWS, COLS),
                                   timeout=60, preexec_fn=default_signals)
        self.raw = bytearray()  # everything the program wrote, for lines a long next question scrolls off the screen

    def pump(self, wait: float = 0.05) -> None:
        try:
            while True:
                chunk = self.child.read_nonblocking(65536, timeout=wait)
                self.raw += chunk
                self.stream.feed(chunk)
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    @property
    def transcript(self) -> str:
        """Everything written so far as plain lines (escape sequences dropped): what scrolled by too."""
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", self.raw.decode("utf-8", "replace"))
        return "\n".join(ln.rstrip() for ln in re.split(r"\r?\n|\r", text))

    def wait_for_written(self, pattern: str, timeout: float = 60) -> re.Match:
        """:meth:`wait_for` on the :attr:`transcript`: a line that was on the screen, even if it scrolled off."""
        end = time.monotonic() + timeout
        while True:
            self.pump()
            m = re.search(pattern, self.transcript, re.M)
            if m:
                return m
            if time.monotonic() > end:
                raise AssertionError(f"{pattern!r} never written:\n{self.transcript[-3000:]}")

    @property
    def lines(self) -> list[str]:
        return [ln.rstrip() for ln in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        end = time.monotonic() + timeout
        while True:
            self.pump()
            m = re.search(pattern, self.text, re.M)
            if m:
                return m
            if time.monotonic() > end:
                raise AssertionError(f"{pattern!r} not on the screen:\n{self.text}")

    def close(self) -> None:
        self.child.close(force=True)


def _num(value: float) -> str:
    return repr(float(value))


def _reading(pid: int) -> bool | None:
    """Whether ``pid`` sleeps waiting for terminal input (see tests/drills/quiz/test_terminal.py)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return None
    if not wchan or wchan == "0":
        return None
    return any(w in wchan for w in ("poll", "select", "tty_read", "wait_woken"))


def _wait_reading(child) -> None:
    deadline = time.monotonic() + 10
    while _reading(child.pid) is False and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture(scope="module")
def item():
    return Catalogue.load().build(Pick("item", ITEM))


def test_multi_part_verdict_and_score_are_on_the_last_screen(tmp_path, item):
    """(a) and (b) right, (c) wrong: the worked solution (over 20 lines) comes, and the screen
    at the pause still shows "✗ (c)" and the problem's score, 2 of 3 parts: 0.67 of 1, and
    2/3 of the item's marks."""
    a, b, c = item.parts
    term = Terminal(["quiz", "--topic", ITEM, "-n", "1", "--seed", "1"], tmp_path)
    try:
        for part, text in ((a, _num(key_value(a.key))), (b, _num(key_value(b.key))), (c, _num(key_value(c.key) + 0.25))):
            term.wait_for(rf"\({part.label}\) ")
            term.wait_for(r"answer ›\s*$")
            term.child.sendline(text)
            term.wait_for(re.escape(f"({part.label})") + r" (Correct|Not right)")
        term.wait_for("Enter: finish")
        term.pump(0.3)
        screen = term.lines
        marks = f"{item.marks * 2 / 3:.2f}".rstrip("0").rstrip(".")
        assert any(ln.startswith("✗ (c)") for ln in screen), term.text
        score = [ln for ln in screen if ln.startswith("Problem score")]
        assert score == [f"Problem score 0.67 of 1 · {marks}/{item.marks} marks"], term.text
        # the solution was shown, above the verdict: its panel's bottom border is above it
        bottom = max(i for i, ln in enumerate(screen) if ln.startswith("╰"))
        verdict = next(i for i, ln in enumerate(screen) if ln.startswith("✗ (c)"))
        assert bottom < verdict < screen.index(score[0])
        term.child.sendline("")
        term.wait_for("Session over: 0 of 1 right")
    finally:
        term.close()


def test_ctrl_c_in_a_multi_part_problem_starts_a_line_of_its_own(tmp_path, item):
    a = item.parts[0]
    term = Terminal(["quiz", "--topic", ITEM, "-n", "1", "--seed", "1"], tmp_path)
    try:
        term.wait_for(r"answer ›\s*$")
        term.child.sendline(_num(key_value(a.key)))
        term.wait_for(r"\(b\) ")
        term.wait_for(r"answer ›\s*$")
        term.child.send("0.4")  # typed, not sent
        term.wait_for(r"answer › 0\.4")
        _wait_reading(term.child)
        term.child.sendintr()
        try:
            term.wait_for("Goodbye", 15)
        except AssertionError:  # the one SIGINT landed in readline's set-up window (see test_quiz_pty)
            term.child.sendintr()
            term.wait_for("Goodbye")
        term.pump(0.3)
        hit = [ln for ln in term.lines if "Interrupted at (b)" in ln]
        assert hit and all(ln.startswith("Interrupted at (b)") for ln in hit), term.text
        assert not any("answer ›" in ln and "Interrupted" in ln for ln in term.lines)
    finally:
        term.close()


def _clock(term: Terminal) -> int:
    m = term.wait_for(r"Q1 \[(\d\d):(\d\d) left\]>")
    return int(m.group(1)) * 60 + int(m.group(2))


@pytest.mark.slow
def test_exam_countdown_moves_while_the_prompt_waits_and_warns_before_zero(tmp_path):
    """A 15-second exam: the prompt's clock goes down with nothing sent (the digits typed stay
    after the prompt), the 10-second warning comes (what was typed and not sent goes with the
    old prompt: the answer sent after it is what the new prompt shows), then time runs out."""
    from drills.exam.paper import assemble_paper

    # a seed whose Q1 is a NAT question (typed digits are an answer), found rather than pinned: the bank's
    # families change their draws
    seed = next(s for s in range(200) if assemble_paper(2, (), s).problems[0].type == "nat")
    term = Terminal(["exam", "-n", "2", "--seed", str(seed), "--minutes", "0.25"], tmp_path)
    try:
        first = _clock(term)
        term.child.send("12")
        time.sleep(2.5)
        later = _clock(term)
        assert later <= first - 2, term.text
        assert re.search(r"Q1 \[\d\d:\d\d left\]> 12", term.text), term.text
        term.wait_for(r"⚠ 00:1\d left", 15)
        # "12" was typed before the warning and never sent: it is gone with the old prompt, so
        # what is sent now is what the new prompt shows
        term.wait_for(r"Q1 \[\d\d:\d\d left\]>$")
        term.child.sendline("3")
        # the line that confirms it (a long Q2 may scroll it off the 24 rows in the same write: read what was written)
        term.wait_for_written(r"^Saved: 3$")
        term.wait_for("Time ran out: the exam was submitted automatically", 20)  # the summary, last on screen
        assert "Score: " in term.text
    finally:
        term.close()
    with ProgressStore.open(tmp_path) as store:
        assert [r["answer"] for r in store.attempts()][0] == "3"


def test_exam_submit_asks_first(tmp_path):
    term = Terminal(["exam", "-n", "2", "--seed", "1", "--minutes", "5"], tmp_path)
    try:
        term.wait_for(r"Q1 \[")
        term.child.sendline("submit")
        term.wait_for(r"Submit\? \(yes/no\)>")
        assert "Submit the exam now? 0 answered, 2 not answered" in " ".join(term.lines)
        assert "Score:" not in term.text
        term.child.sendline("no")
        term.wait_for("Not submitted")
        term.wait_for(r"Q1 \[\d\d:\d\d left\]>$")
        term.child.sendline("submit")
        term.wait_for(r"Submit\? \(yes/no\)>$")
        term.child.sendline("yes")
        term.wait_for("review of each question is above")
        term.pump(0.3)
        screen = term.text
        assert "Score: 0 / " in screen and "Right 0, wrong 0, unanswered 2" in screen
    finally:
        term.close()
