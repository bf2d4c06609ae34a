"""``qkv calc`` as a user runs it: the README's examples, --json, --list, --explain, the prompt,
and refusals as one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from drills.cli import cli


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["calc", *args], input=input)


def test_bytes_over_bandwidth_in_ms_is_exact():
    r = run("70e9 * 2 B / 3.35 TB/s -> ms")
    assert r.exit_code == 0 and r.output.startswith("41.791 ms") and "2800/67" in r.output


def test_json_is_one_object_with_value_unit_and_base():
    r = run("--json", "llama-3-70b.params * 2 B -> GiB")
    d = json.loads(r.output)
    assert d["unit"] == "GiB" and d["base"]["unit"] == "B" and d["base"]["value"] % 2 == 0
    assert d["value"] == pytest.approx(d["base"]["value"] / 2**30)


def test_explain_shows_the_formula_and_the_substitution():
    r = run("--explain", "6 * 70e9 * 2e12 FLOP / (1024 * h100.bf16 * 0.4) -> days")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert "h100.bf16" in lines[0] and "989.5 TFLOP/s" in lines[1]


def test_refusal_is_one_line_naming_both_units():
    r = run("3 s + 2 GB")
    assert r.exit_code == 2 and r.output.strip() == "qkv: error: cannot add 3 s and 2 GB"


def test_python_is_never_run():
    r = run("__import__('os').system('echo pwned')")
    assert r.exit_code == 2 and "pwned" not in r.output and len(r.output.strip().splitlines()) == 1


def test_list_json_is_the_registry_and_names_each_solve_command():
    from drills.cli import SOLVE_COMMANDS

    d = json.loads(run("--list", "--json").output)
    names = {f["name"] for f in d["formulas"]}
    assert {"all_gather", "kv_cache", "train", "matmul", "transfer"} <= names
    for f in d["formulas"]:
        assert f["solve"].split()[0] in SOLVE_COMMANDS
        for c in f["conventions"]:
            assert c["default"] in c["choices"]


def test_list_text_and_one_entry():
    out = run("--list").output
    assert "all_gather" in out and "bidirectional" in out and "GiB" in out
    one = run("--list", "all_gather").output
    assert "ring=" in one and "How to Scale Your Model" in one


def test_the_prompt_keeps_variables_and_answers_help():
    r = run(input="x = 3 GB\nx * 2 -> GB\nhelp transfer\nbogus(1)\nquit\n")
    assert r.exit_code == 0
    assert "6 GB" in r.output and "transfer:" in r.output and "error: unknown function 'bogus'" in r.output


def test_calc_starts_without_torch_or_sympy():
    code = ("import sys\nfrom drills.cli import main\nsys.argv=['qkv','calc','1+1']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch','sympy','numpy','rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines() == ["2", "[]"]


@pytest.mark.parametrize(("flags", "expected_us"), [
    ([], 34.95), (["--ring", "bidirectional"], 17.48), (["--ring", "bidirectional", "--asymptotic"], 23.30)])
def test_solve_collective_takes_the_tpu_texts_conventions(flags, expected_us):
    r = CliRunner().invoke(cli, ["solve", "collective", "--op", "all-gather", "--size", "2097152", "--ranks", "4",
                                 "--link-bandwidth", "45e9", *flags, "--json"])
    assert round(json.loads(r.output)["answer"] * 1e6, 2) == expected_us


def test_each_solve_command_names_the_registry_entries_it_is_made_from():
    from solver.registry import formulas

    for f in formulas().values():
        words = f.solve.split()
        out = CliRunner().invoke(cli, ["solve", words[0], "--help"]).output
        section = out.split("Formula registry:")[-1]
        assert "Formula registry:" in out and f.name in section, (f.name, words[0])


def test_a_config_file_is_a_model_and_its_notes_are_shown(tmp_path):
    """The reader's notes on a file (keys with no effect) come with the answer, never dropped."""
    import pathlib

    src = pathlib.Path(__file__).parents[2] / "solver" / "counting" / "configs" / "llama3-70b.json"
    r = run(f'params("{src}") - llama-3-70b.params')
    assert r.exit_code == 0 and r.output.splitlines()[0] == "0"
    assert any(line.startswith("note:") for line in r.output.splitlines()[1:])
