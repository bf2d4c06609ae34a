"""Blueprint files that hung qkv, ended it with an internal error or were silently misread (issue 42),
through the real command line: each is one line naming the field, exit status 2, and no escape
sequence from the file reaches the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SECTION = '[[section]]\nname = "A"\ntopics = []\nquestions = [ { type = "mcq", marks = 1, count = 1 } ]\n'


def qkv(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QKV_HOME=str(cwd / "home"))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          input="", timeout=timeout)


def _one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    [line] = out.stderr.splitlines()
    assert line.startswith("qkv: error: --paper: "), line
    assert "\x1b" not in out.stderr and "\x9b" not in out.stderr
    return line


CASES = {
    "a penalty with a hundred million digits": (
        'minutes = 10\n[marking]\nmcq = "1e-100000000"\n' + SECTION, "marking.mcq: a fraction such as"),
    "a penalty as a huge float": ('minutes = 10\n[marking]\nmcq = 1e-300\n' + SECTION, "marking.mcq: a fraction such as"),
    "nested 5,000 deep": ("minutes = 10\nx = " + "[" * 5000 + "]" * 5000 + "\n" + SECTION, "nested 5000 levels deep"),
    "a topic that matches nothing": (SECTION.replace("topics = []", 'topics = ["no.such.topic"]').replace(
        "[[section]]", "minutes = 10\n[[section]]"), "the bank has none"),
    "a misspelt topics key": (SECTION.replace("topics = []", 'topic = ["attention"]').replace(
        "[[section]]", "minutes = 10\n[[section]]"), "section 1: unknown field 'topic'"),
    "a larger file than any blueprint": ("minutes = 10\n" + SECTION + "# " + "x" * (2 << 20) + "\n", "larger than"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_blueprint_files_are_one_line(tmp_path, case):
    text, words = CASES[case]
    path = tmp_path / "bp.toml"
    path.write_text(text)
    for command in (["exam", "--plain"], ["sheet", "--format", "json", "-o", "-"]):
        line = _one_line(qkv(*command, "--paper", str(path), cwd=tmp_path))
        assert words in line, line


def test_escape_sequences_in_a_section_name_never_reach_the_screen(tmp_path):
    path = tmp_path / "bp.toml"
    path.write_text('minutes = 10\ntitle = "T\\u001b]0;pwned\\u0007"\n'
                    + SECTION.replace('name = "A"', 'name = "A\\u001b[2J\\u009b31mB"'))
    out = qkv("exam", "--plain", "--paper", str(path), "--seed", "1", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "A[2J31mB · Question 1 of 1" in out.stdout  # the escapes' control characters dropped: inert text
    assert "\x1b" not in out.stdout + out.stderr and "\x9b" not in out.stdout + out.stderr
