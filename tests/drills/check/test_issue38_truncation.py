"""Issue 38: `qkv check softmax` names truncation as the quiz does ("truncated instead of rounded off")."""

from __future__ import annotations

import math

from click.testing import CliRunner

from drills.cli.check import check as main


def _softmax(xs):
    e = [math.exp(x - max(xs)) for x in xs]
    return [v / sum(e) for v in e]


def test_check_softmax_names_truncation():
    xs = [1, 2, 3]
    cut = [math.trunc(v * 100) / 100 for v in _softmax(xs)]  # 0.09 0.24 0.66 (rounded: 0.09 0.24 0.67)
    r = CliRunner().invoke(main, ["softmax", "--x", str(xs), "--output", str(cut)])
    assert r.exit_code == 1
    assert "Likely mistake: truncated instead of rounded off" in r.output


def test_rounded_answer_right_and_other_errors_not_called_truncation():
    xs = [1, 2, 3]
    rounded = [round(v, 2) for v in _softmax(xs)]
    assert CliRunner().invoke(main, ["softmax", "--x", str(xs), "--output", str(rounded)]).exit_code == 0
    r = CliRunner().invoke(main, ["softmax", "--x", str(xs), "--output", "[0.09, 0.24, 0.62]"])
    assert r.exit_code == 1 and "truncated" not in r.output


def test_the_quiz_judge_uses_the_same_words():
    from question_bank.grading import grade
    from question_bank.problem import NumericKey

    v = grade(NumericKey(value=0.6652, lo=0.665, hi=0.675, decimals=2), 0.66, written="0.66")
    assert "truncated instead of rounded off" in v.message


def test_check_lines_fit_80_columns():
    """Issue 38: `qkv check` at 80 columns (a pipe or an 80-column terminal) wraps between words."""
    runs = [["softmax", "--x", "[1,2,3]", "--output", "[0.09,0.24,0.66]"],
            ["params", "--preset", "gpt2", "--answer", "100M"],
            ["params", "--preset", "llama2-7b", "--answer", "6.5B"],
            ["layernorm", "--x", "[1,2,3,4]", "--output", "[1,2,3,4]"]]
    for args in runs:
        r = CliRunner(env={"COLUMNS": "80"}).invoke(main, args)
        long = [line for line in r.output.splitlines() if len(line) > 80]
        assert not long, (args, long)
        words = r.output.split()
        assert "counts" in words or args[0] != "params" or r.exit_code == 0
