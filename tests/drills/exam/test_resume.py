"""An exam saves every answer, change, mark and clear as it is given, and a restarted ``qkv exam``
resumes it (issue 42).

The fault trial's repro: ``qkv exam`` said "Saved: 1" and a SIGHUP lost every answer. Here the real
command line sits a 5-question paper through a pipe, one command at a time, and is killed after each
command with SIGKILL, SIGHUP or SIGTERM (the child's own default signal handlers restored, whatever
the test runner ignores); the next ``qkv exam`` with the same arguments resumes it, and is killed in
turn after the next command. The state expected after every command is computed here by a model
of the commands written from the documented command list, not by the exam's code; at the end the
last resumed exam submits and its JSON must show every answer and mark the model says, and the
progress store must hold them as exam attempts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from drills.exam.paper import assemble_paper
from drills.progress import ProgressStore

ROOT = Path(__file__).resolve().parents[3]
ARGS = ["exam", "--plain", "-n", "5", "--seed", "3", "--minutes", "120"]
PROMPT = re.compile(r"Q(\d+) \[[0-9:]+ left\]> ")
PATIENCE = 300.0  # a loaded machine: this is how long a prompt may take to come, not a bound on anything


def _answers() -> dict[int, list[str]]:
    """Two different answers per question of the paper (seed 3, 5 questions), as the student types them."""
    out = {}
    for i, p in enumerate(assemble_paper(5, (), 3).problems, 1):
        if p.type == "mcq":
            out[i] = ["b", "c"]
        elif p.type == "msq":
            out[i] = ["a,c", "b"]
        else:
            out[i] = ["7", "12.5"]
    return out


def _script(ans: dict[int, list[str]]) -> list[str]:
    return [ans[1][0], f"mark {ans[2][0]}", ans[3][0], "goto 1", "clear", ans[1][1], "unmark", "goto 5", "mark",
            "goto 4", ans[4][1], "prev", ans[4][0]]


def _model(commands: list[str]) -> tuple[dict[int, tuple[str | None, bool]], int]:
    """Per question (answer, marked) and the current question after ``commands`` (written from
    the command list: an answer saves and goes on; mark [answer] marks, saves, goes on; goto N;
    prev; clear; unmark; next from the last question wraps to the first)."""
    state = {i: (None, False) for i in range(1, 6)}
    cur = 1
    for c in commands:
        word, _, rest = c.partition(" ")
        a, m = state[cur]
        if word == "goto":
            cur = int(rest)
        elif word == "prev":
            cur = max(1, cur - 1)
        elif word == "clear":
            state[cur] = (None, m)
        elif word == "unmark":
            state[cur] = (a, False)
        elif word == "mark":
            state[cur] = (rest or a, True)
            cur = cur % 5 + 1
        else:
            state[cur] = (c, m)
            cur = cur % 5 + 1
    return state, cur


def _default_signals() -> None:
    for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


class _Exam:
    """One ``qkv exam`` process fed through a pipe; its output collected as it comes."""

    def __init__(self, home: Path, *extra: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "drills", *ARGS, "--data-dir", str(home), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
            env={**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": str(ROOT)}, preexec_fn=_default_signals)
        self.out = b""
        self.err = b""
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=("out",), daemon=True).start()
        threading.Thread(target=self._read, args=("err",), daemon=True).start()

    def _read(self, which: str) -> None:
        stream = self.proc.stdout if which == "out" else self.proc.stderr
        while chunk := os.read(stream.fileno(), 65536):
            with self.lock:
                setattr(self, which, getattr(self, which) + chunk)

    def text(self) -> str:
        with self.lock:
            return self.out.decode("utf-8", "replace")

    def prompts(self) -> list[str]:
        with self.lock:  # the exam is on stdout, or on stderr beside --json
            return PROMPT.findall(self.out.decode("utf-8", "replace") + self.err.decode("utf-8", "replace"))

    def wait_prompts(self, n: int) -> list[str]:
        """Wait until ``n`` prompts have been written (the one after a command means it was handled)."""
        end = time.monotonic() + PATIENCE
        while len(self.prompts()) < n:
            if self.proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"prompt {n} never came; out:\n{self.text()}\nerr:\n{self.err.decode()}")
            time.sleep(0.02)
        return self.prompts()

    def send(self, line: str) -> None:
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def kill(self, sig: int) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=PATIENCE)
        time.sleep(0.05)  # the reader threads take the last bytes
        return rc


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP, signal.SIGTERM], ids=["KILL", "HUP", "TERM"])
def test_an_exam_killed_after_every_command_resumes_with_every_answer(tmp_path, sig):
    ans = _answers()
    script = _script(ans)
    home = tmp_path / "home"
    for k, command in enumerate(script):
        exam = _Exam(home)
        try:
            prompts = exam.wait_prompts(1)
            expected_before, current = _model(script[:k])
            if k:  # a resumed exam: it says so, with the answers it saved, at the question it was on
                answered = sum(a is not None for a, _ in expected_before.values())
                assert f"Resuming the unfinished exam (seed 3: {answered} of 5 answered" in exam.text(), exam.text()
                assert "marked for review" in exam.text().split("\n")[0] or not any(m for _, m in expected_before.values())
            assert prompts[0] == str(current), (k, exam.text())
            exam.send(command)
            exam.wait_prompts(2)
            rc = exam.kill(sig)
        finally:
            if exam.proc.poll() is None:
                exam.proc.kill()
                exam.proc.wait()
        if sig == signal.SIGKILL:
            assert rc == -signal.SIGKILL
        else:  # the exam's own handler: it says the answers are saved, and ends with 128 + the signal
            assert rc == 128 + sig, exam.err.decode()
            assert "its answers are saved: `qkv exam` resumes it" in exam.err.decode()
            assert "Traceback" not in exam.err.decode()

    final = _Exam(home, "--json")
    final.wait_prompts(1)
    final.send("submit yes")
    final.proc.stdin.close()
    assert final.proc.wait(timeout=PATIENCE) == 0, final.err.decode()
    time.sleep(0.05)
    result = json.loads(final.text().strip().splitlines()[-1])
    expected, _ = _model(script)
    assert {q["number"]: (q["answer"], q["marked"]) for q in result["questions"]} == expected
    assert result["reason"] == "submitted"
    # the store: one exam session, ended, its attempts exactly the answers given
    with ProgressStore.open(home, read_only=True) as store:
        rows = store.attempts(session_id=result["session_id"])
        session = store.session(result["session_id"])
        assert store.unfinished_exams() == []
    assert session["ended_at"] is not None and session["mode"] == "exam"
    assert {json.loads(r["extra"])["number"] if isinstance(r["extra"], str) else r["extra"]["number"]: r["answer"]
            for r in rows} == {n: a for n, (a, _) in expected.items()}
    assert len(rows) == 5


def test_a_second_exam_never_takes_over_one_being_sat(tmp_path):
    """Two terminals: the second ``qkv exam`` does not resume the first's live sitting (it starts its own)."""
    home = tmp_path / "home"
    first = _Exam(home)
    try:
        first.wait_prompts(1)
        first.send(_answers()[1][0])
        first.wait_prompts(2)
        second = subprocess.run([sys.executable, "-m", "drills", *ARGS, "--data-dir", str(home), "--json"],
                                input="submit yes\n", capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert second.returncode == 0, second.stderr
        assert "Resuming" not in second.stderr
        assert all(q["answer"] is None for q in json.loads(second.stdout)["questions"])
        first.send("submit yes")
        first.proc.stdin.close()
        assert first.proc.wait(timeout=PATIENCE) == 0
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
            first.proc.wait()
    assert "Saved:" in first.text()


def test_another_paper_asked_for_is_refused_while_one_is_unfinished_and_submit_unfinished(tmp_path):
    home = tmp_path / "home"
    exam = _Exam(home)
    exam.wait_prompts(1)
    exam.send(_answers()[1][0])
    exam.wait_prompts(2)
    exam.kill(signal.SIGKILL)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stats = subprocess.run([sys.executable, "-m", "drills", "stats", "--json", "--data-dir", str(home)],
                           capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE, env=env)
    [waiting] = json.loads(stats.stdout)["unfinished_exams"]
    assert (waiting["answered"], waiting["questions"]) == (1, 5)
    other = subprocess.run([sys.executable, "-m", "drills", "exam", "--plain", "--seed", "4", "--data-dir", str(home)],
                           input="", capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE, env=env)
    assert other.returncode == 2
    [line] = other.stderr.splitlines()
    assert "an unfinished exam is saved in this history" in line and "--seed" in line
    done = subprocess.run([sys.executable, "-m", "drills", "exam", "--submit-unfinished", "--json",
                           "--data-dir", str(home)], capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["questions"][0]["answer"] == _answers()[1][0]
    stats = subprocess.run([sys.executable, "-m", "drills", "stats", "--json", "--data-dir", str(home)],
                           capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE, env=env)
    assert json.loads(stats.stdout)["unfinished_exams"] == []
    again = subprocess.run([sys.executable, "-m", "drills", "exam", "--submit-unfinished", "--data-dir", str(home)],
                           capture_output=True, text=True, cwd=ROOT, timeout=PATIENCE, env=env)
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "no unfinished exam" in again.stderr
