"""``qkv solve float-format|block-format|mx-quantize`` (issue 25). Values worked by hand in the docstrings."""

from __future__ import annotations

import json

from click.testing import CliRunner

from drills.cli import cli


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def run_json(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


def test_float_format_nearest_and_extremes():
    """BF16 of 1/3: ⌊log₂⌋ = −2, spacing 2^(−2−7) = 1/512, (1/3)·512 = 170.67 → 171 → 171/512."""
    d = run_json("solve", "float-format", "-f", "bf16", "-x", "1/3")
    assert d["answer"] == 171 / 512 and d["breakdown"]["spacing_exact"] == "2^-9 = 1/512"
    assert run_json("solve", "float-format", "-f", "fp16")["answer"] == 65504  # (2 − 2^-10)·2^15
    d = run_json("solve", "float-format", "-f", "e4m3fn", "--ask", "min-subnormal")
    assert d["answer"] == 2**-9 and "no infinities" in d["convention"]["special_values"]
    code, out = run("solve", "float-format", "-f", "e5m2", "-x", "1e6")
    assert code == 0 and "answer: inf" in out
    code, out = run("solve", "float-format", "-f", "e4m3", "--ask", "spacing")
    assert code == 2 and "value" in out and "Traceback" not in out
    code, out = run("solve", "float-format", "-f", "e4m3", "-x", "__import__('os')")
    assert code == 2 and "Traceback" not in out


def test_block_format_and_mx_quantize():
    """MXFP4 of 10⁹ weights: 10⁹·4/8 + 10⁹/32 scale bytes = 531,250,000 bytes. MX FP4 block [1, 2, 3, 7]:
    ⌊log₂ 7⌋ − 2 = 0, scale 1; 7 saturates to 6 (error 1); 1, 2, 3 exact."""
    assert run_json("solve", "block-format", "-N", "1e9")["answer"] == 531_250_000
    d = run_json("solve", "mx-quantize", "--values", "1 2 3 7")
    assert d["breakdown"]["elements"] == [1, 2, 3, 6] and d["answer"] == 1
    code, out = run("solve", "block-format", "-f", "int3")
    assert code == 2 and "--format" in out


def test_quant_error_smoothquant_fp8_memory():
    """int8 absmax of [1, −2, 0.5, 4]: scale 4/127; 31.75 → 32, −63.5 → −64 (half to even), 15.875 → 16, 127;
    SmoothQuant α = 0.5 on max|X| = (16, 1), max|W| = (1, 4): s = (4, 0.5), both maxima become (4, 2)."""
    d = run_json("solve", "quant-error", "--values", "1 -2 0.5 4")
    assert d["breakdown"]["codes"] == [32, -64, 16, 127]
    d = run_json("solve", "quant-error", "--values", "1 -2; 0.5 4", "--block", "1")
    assert d["breakdown"]["max_abs_error_per_block"] == 0  # one scale per value: each value is its own absmax
    d = run_json("solve", "smoothquant", "--x-max", "16 1", "--w-max", "1 4")
    assert d["answer"] == [4, 0.5] and d["breakdown"]["w_absmax_after"] == [4, 2]
    assert run_json("solve", "fp8-memory", "-N", "1e9", "--recipe", "bf16-mixed")["answer"] == 16e9
    code, out = run("solve", "quant-error", "--values", "1 2", "--block", "2")
    assert code == 2 and "--block" in out


def test_smoothquant_explain_shows_each_steps_arithmetic():
    """No step of --explain is an empty ``=`` line: s_j, max|X'_j| and max|W'_j| show their numbers
    (α = 0.5 on max|X| = (16, 1), max|W| = (1, 4): s = 16^0.5/1^0.5 = 4, 1^0.5/4^0.5 = 0.5)."""
    code, out = run("solve", "smoothquant", "--x-max", "16 1", "--w-max", "1 4", "--explain")
    assert code == 0, out
    assert [ln for ln in out.splitlines() if ln.strip() == "="] == [], out
    assert "= [16^0.5 / 1^0.5, 1^0.5 / 4^0.5]" in out
    assert "= [16 / 4, 1 / 0.5]" in out and "= [1 · 4, 4 · 0.5]" in out


def test_a_step_without_a_substitution_prints_no_empty_line():
    """A solver step whose substitution is empty (lr-schedule past the end: 't ≥ total: lr = 0')
    prints its formula and value, never a bare ``=``."""
    import click

    from drills.cli.solve_hardware import show
    from solver.result import Result

    r = Result(answer=0.0, unit="")
    r.step("t ≥ total: lr = 0", "", 0.0)

    @click.command()
    def explain() -> None:
        show(r, False, True)

    res = CliRunner().invoke(explain, [])
    assert "t ≥ total: lr = 0\n      = 0\n" in res.output, res.output
    assert [ln for ln in res.output.splitlines() if ln.strip() == "="] == []
