"""Issue 21: every transcript in README.md is the program's real output.

A transcript is a ```text block whose first line is ``$ qkv …``; each ``$ qkv`` command in it
(with ``\\`` continuation lines) is run again through the real CLI (``python -m drills``, a fresh
progress store; a quiz reads the ``answer>`` lines it shows as its input) and its output is
compared line by line with the block. Only trailing spaces and the session's wall time
(``· 4 s``) are not compared."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TIME = re.compile(r"(score [^·]+ · )\d+ s$")


def transcripts() -> list[tuple[str, list[str], list[str]]]:
    """(command, its lines, the output lines the README shows) for every ``$ qkv`` command."""
    lines = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "```text" and i + 1 < len(lines) and lines[i + 1].startswith("$ qkv"):
            j = i + 1
            block = []
            while lines[j] != "```":
                block.append(lines[j])
                j += 1
            k = 0
            while k < len(block):
                cmd = [block[k]]
                while cmd[-1].endswith("\\"):
                    k += 1
                    cmd.append(block[k])
                k += 1
                shown = []
                while k < len(block) and not block[k].startswith("$ qkv"):
                    shown.append(block[k])
                    k += 1
                while shown and shown[-1] == "":
                    shown.pop()
                out.append((" ".join(c.rstrip("\\").strip() for c in cmd)[2:], cmd, shown))
            i = j
        i += 1
    return out


def _normal(lines: list[str]) -> list[str]:
    return [_TIME.sub(r"\1N s", ln.rstrip()) for ln in lines]


TRANSCRIPTS = transcripts()


def test_the_readme_has_transcripts():
    assert len(TRANSCRIPTS) >= 3
    assert {shlex.split(c)[1] for c, _, _ in TRANSCRIPTS} >= {"quiz", "check"}


@pytest.mark.slow
@pytest.mark.parametrize("command,cmd_lines,shown", TRANSCRIPTS, ids=[c[:60] for c, _, _ in TRANSCRIPTS])
def test_readme_transcript_is_the_real_output(command, cmd_lines, shown, tmp_path):
    args = shlex.split(command)
    assert args[0] == "qkv"
    stdin = "".join(ln.split("answer> ", 1)[1] + "\n" for ln in shown if ln.startswith("answer> "))
    env = dict(os.environ, PYTHONPATH=ROOT, QKV_HOME=str(tmp_path), NO_COLOR="1", COLUMNS="100")
    env.pop("QKV_DEBUG", None)
    extra = ["--plain"] if args[1] == "quiz" and "--plain" not in args else []
    r = subprocess.run([sys.executable, "-m", "drills", *args[1:], *extra], input=stdin, capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=300)
    got = r.stdout.rstrip("\n").split("\n")
    assert _normal(got) == _normal(shown), "\n".join(got)
