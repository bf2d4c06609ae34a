"""Answers at the ends of the floats are judged, never an internal error (issue 42: ``1e-300`` ended
the quiz in 3 families; divided by a key's unit it became 0, whose logarithm does not exist).

Every numeric family of the bank, read and judged through the quiz's own reader, with the extreme
numbers a student can type; and the trial's command through the real command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from drills.answers import AnswerParseError, read_answer
from question_bank import bank
from question_bank.grading import grade

ROOT = Path(__file__).resolve().parents[3]
EXTREMES = ["1e-300", "-1e-300", "5e-324", "1e300", "-1e300", "1.7e308", "0", "1e-300 GB", "2.2e-308"]


def _numeric_problems():
    for _fid, fam in sorted(bank.families().items()):
        for diff in fam.levels:
            try:
                p = fam.generate(1, diff)
            except Exception:  # noqa: BLE001 - a family that cannot draw seed 1 at this level is not this test's
                continue
            if p.type in ("nat", "integer") and not p.parts:
                yield p


def test_extreme_answers_are_judged_in_every_numeric_family():
    judged = 0
    for p in _numeric_problems():
        for text in EXTREMES:
            try:
                a = read_answer(p, text)
            except AnswerParseError:
                continue
            v = grade(p, a.value, written=a.written, unit=a.unit)
            assert isinstance(v.correct, bool), (p.id, text)
            judged += 1
    assert judged > 300


def test_the_trials_quiz_answer(tmp_path):
    out = subprocess.run([sys.executable, "-m", "drills", "quiz", "--plain", "--topic", "measurements.run_flops", "-n", "1",
                          "--seed", "1"], input="1e-300\n", capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), QKV_HOME=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    assert "internal error" not in out.stderr and "Not right" in out.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["cross-entropy", "--logits", "0,710", "-y", "0", "--json"], '"perplexity": null'),
    (["cross-entropy", "--logits", "0,5000", "-y", "0"], "answer: 5,000 nats"),
    (["perplexity", "--loss", "709"], "8.21841e+307"),
])
def test_losses_of_710_and_more(args, words):
    out = subprocess.run([sys.executable, "-m", "drills", "solve", *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert words in out.stdout, out.stdout


@pytest.mark.parametrize("args", [["--loss", "710"], ["--logprobs", "-710,-800"],
                                  ["--loss", "1025", "--log-base", "2"]])
def test_a_perplexity_beyond_the_floats_is_one_line(args):
    out = subprocess.run([sys.executable, "-m", "drills", "solve", "perplexity", *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 2, (out.returncode, out.stderr)
    [line] = out.stderr.splitlines()
    assert "beyond the largest number this computes with" in line
