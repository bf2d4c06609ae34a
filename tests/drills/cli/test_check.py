"""``qkv check``: options and interactive input, exit statuses 0/1/2, --json, counts.

The attention example is seed 004, section 12; its exact steps (closed forms evaluated with
``math``, derived by hand in tests/solver/kernels/test_worked_example_004.py) are rounded to 3 decimals
here as a student would write them.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.kernels import numpy_ref
from tests.seed004_example import HAND, STEPS

Q = "1 0; 0 1; 1 1"
V = "1 0; 0 1; 0.5 0.5"


def text(m) -> str:
    return "; ".join(" ".join(f"{x:.3f}" for x in row) for row in np.asarray(m, dtype=float))


def solver_trace(**kwargs):
    """The solver's attention on the example with mistaken arguments (scale=1, scale=1/d_k)."""
    qk = np.array([[1, 0], [0, 1], [1, 1]])
    return numpy_ref.attention(qk, qk, np.array([[1, 0], [0, 1], [0.5, 0.5]]), return_trace=True, **kwargs)


def check(*args, input=None):
    return CliRunner().invoke(cli, ["check", *args], input=input)


def attention_args(steps: dict) -> list[str]:
    args = ["attention", "--q", Q, "--k", Q, "--v", V]
    for name, value in steps.items():
        args += [f"--{name}", text(value)]
    return args


def test_all_steps_right_exit_0():
    r = check(*attention_args(HAND))
    assert r.exit_code == 0, r.output
    assert "All 4 steps checked are right." in r.output
    assert "to 3 decimal places" in r.output


@pytest.mark.parametrize("wrong_step", STEPS)
def test_each_wrong_step_is_named(wrong_step):
    steps = {k: np.array(v, dtype=float) for k, v in HAND.items()}
    steps[wrong_step][2, 1] += 0.25
    r = check(*attention_args(steps), "--json")
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert out["ok"] is False and out["first_wrong"] == wrong_step
    assert [s["name"] for s in out["steps"] if not s["ok"]] == [wrong_step]
    assert set(out["steps"][0]) >= {"name", "given", "expected", "ok", "follow_through", "mistake"}
    np.testing.assert_allclose(next(s for s in out["steps"] if s["name"] == wrong_step)["expected"],
                               HAND[wrong_step], atol=1e-12)
    r = check(*attention_args(steps))
    assert f"First wrong step: {wrong_step}" in r.output and "Correct value of" in r.output


def test_follow_through_and_mistake_in_text():
    _, wrong = solver_trace(scale=1.0)
    their_scaled = np.round(wrong["scaled"].value, 3)
    r = check(*attention_args({"scaled": their_scaled, "weights": numpy_ref.softmax(their_scaled)}))
    assert r.exit_code == 1
    assert "First wrong step: scaled" in r.output
    assert "not scaled" in r.output
    assert "right given your previous step" in r.output


def test_interactive_over_stdin_with_a_skipped_step():
    lines = [text(HAND["scores"]), "", text(HAND["weights"]), "0.602 0.398; 0.398 0.602; 0.5 0.5"]
    r = check("attention", "--q", Q, "--k", Q, "--v", V, input="\n".join(lines) + "\n")
    assert r.exit_code == 0, r.output
    assert "QKᵀ = ?" in r.output and "QKᵀ/√dₖ = ?" in r.output
    assert "All 3 steps checked are right." in r.output


def test_interactive_reasks_an_unreadable_line_and_json_prompts_go_to_stderr():
    bad_scaled = text(solver_trace(scale=1 / 2)[1]["scaled"].value)  # ÷ d_k instead of √d_k
    lines = ["1 0 1; 0 1 1; 1 1", text(HAND["scores"]), bad_scaled, "", ""]
    r = check("attention", "--q", Q, "--k", Q, "--v", V, "--json", input="\n".join(lines) + "\n")
    assert r.exit_code == 1, r.output
    out = json.loads(r.stdout)
    assert out["first_wrong"] == "scaled" and "dₖ = 2 instead of √dₖ" in out["steps"][1]["mistake"]
    assert "cannot read that" in r.stderr


def test_interactive_end_of_input_with_nothing_given_is_exit_2():
    r = check("attention", "--q", Q, "--k", Q, "--v", V, input="")
    assert r.exit_code == 2
    assert "nothing to check" in r.output


@pytest.mark.parametrize(("args", "param"), [
    (["attention", "--q", Q, "--k", Q, "--v", V, "--scaled", "1 2; 3"], "--scaled"),
    (["attention", "--q", Q, "--k", "1 0 0; 0 1 0", "--v", V, "--scaled", "1"], "--k"),
    (["attention", "--q", Q, "--k", Q, "--v", V, "--scores", "1 0 x"], "--scores"),
    (["softmax", "--x", "1 2", "--temperature", "0", "--output", "0.5 0.5"], "--temperature"),
    (["params", "--preset", "bert-base", "--answer", "lots"], "--answer"),
])
def test_unreadable_input_exit_2_one_line_naming_the_argument(args, param):
    r = check(*args)
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and param in lines[0] and lines[0].startswith("qkv: error:")


def test_other_kernels_exit_statuses():
    assert check("softmax", "--x", "1 2 3", "--output", "0.090 0.245 0.665").exit_code == 0
    r = check("layernorm", "--x", "1 2 3 4", "--variance", "1.667")
    assert r.exit_code == 1 and "unbiased" in r.output
    assert check("rmsnorm", "--x", "3 4", "--rms", "3.536").exit_code == 0
    assert check("pe", "--pos", "1", "--d-model", "4", "--dim", "1", "--output", "0.540").exit_code == 0
    r = check("pe", "--pos", "1", "--d-model", "4", "--dim", "1", "--output", "0.841")
    assert r.exit_code == 1 and "swapped" in r.output
    assert check("rope", "--x", "1 0", "--pos", "1", "--output", "0.540 0.841").exit_code == 0


def test_params_bert_base_110m_names_the_pooler():
    pytest.importorskip("solver.counting.presets", reason="solver.counting.presets (H3's presets) is missing")
    r = check("params", "--preset", "bert-base", "--answer", "110M")
    assert r.exit_code == 0, r.output
    assert "within 0.47% of the exact 109,482,240" in r.output and "pooler" in r.output
    r = check("params", "--preset", "bert-base", "--answer", "108,891,648", "--json")  # 109,482,240 − 768² − 768
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["first_wrong"] == "params" and "without the pooler" in out["steps"][0]["mistake"]


def test_kv_cache_and_flops_conventions():
    kv = ["kv-cache", "--n-layers", "32", "--n-heads", "32", "--n-kv-heads", "8", "--d-head", "128",
          "--batch", "1", "--seq", "4096", "--dtype", "fp16"]
    # 2 · 32 · 4096 · 8 · 128 · 2 bytes = 536,870,912 = 0.5 GiB
    assert check(*kv, "--answer", "0.5 GiB").exit_code == 0
    r = check(*kv, "--answer", "2 GiB")
    assert r.exit_code == 1 and "all 32 query heads" in r.output
    r = check("flops", "--d-model", "64", "--n-layers", "1", "--n-heads", "2", "--d-ff", "256", "--vocab-size", "100",
              "--max-positions", "16", "--batch", "1", "--seq", "8", "--answer", "1", "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["first_wrong"] == "flops"


def test_check_module_imports_neither_torch_nor_sympy():
    code = ("import sys; import drills.cli.check, drills.check.steps; "
            "print(sorted(m for m in ('torch', 'sympy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_asking_for_steps_says_how_to_type_them():
    """Without step options the command asks for each step; it first says what to type, and
    the weights/output prompts name the matrix (not a bare 'softmax(·)')."""
    from click.testing import CliRunner

    from drills.cli import cli

    r = CliRunner().invoke(cli, ["check", "attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1 2; 3 4"],
                           input="1 0; 0 1\n\n\n\n")
    assert r.exit_code == 0, r.output
    assert "rows separated by ';'" in r.output and "empty line skips" in r.output
    assert "weights A = ?" in r.output and "output A·V = ?" in r.output


def test_rmsnorm_output_step_has_no_beta():
    """RMSNorm is y = γ·x/rms(x): no mean subtracted and no β, so the output step is labelled
    γ·x̂ (LayerNorm's output keeps its β)."""
    r = check("rmsnorm", "--x", "3 4", "--output", "1 1")
    assert r.exit_code == 1
    out_line = next(ln for ln in r.output.splitlines() if "output" in ln and ("✓" in ln or "✗" in ln))
    assert "γ·x̂" in out_line and "β" not in out_line
    assert "First wrong step: output (γ·x̂)" in r.output
    r = check("layernorm", "--x", "1 2 3 4", "--output", "1 1 1 1")
    assert "γ·x̂ + β" in r.output


@pytest.mark.parametrize("answer,code,words", [
    ("2 GiB", 0, "exactly right"),
    ("2 gib", 0, "exactly right"),  # all lower case reads as bytes
    ("16 Gib", 1, "you answered in bits; the key is in bytes (÷ 8): 16 Gib = 2 GiB"),
    ("17.18 Gb", 1, "you answered in bits; the key is in bytes (÷ 8)"),
    ("2 Gib", 1, "for bytes write GiB (capital B)"),
    ("3 Gb", 1, "you answered in bits: 3 Gb = 0.375 GB"),
])
def test_kv_cache_answered_in_bits(answer, code, words):
    """llama2-7b (32 layers, 32 KV heads of 128), batch 1, 4096 tokens, fp16: the cache is
    2·32·1·4096·32·128·2 = 2³¹ bytes = 2 GiB = 2.147 GB; 16 Gib = 16·2³⁰ bits = 2³¹ bytes (the key
    ×8 in bits); 17.18 Gb = 1.7180·10¹⁰ bits = 2.1475·10⁹ bytes (4 figures of 2.147483648·10⁹)."""
    args = ["--preset", "llama2-7b", "--batch", "1", "--seq", "4096", "--dtype", "fp16", "--answer", answer]
    for cmd in (["kv-cache"], ["memory", "--what", "kv-cache"]):
        r = check(*cmd, *args)
        assert r.exit_code == code, r.output
        assert words in " ".join(r.output.split())  # the lines wrap at 80 columns (issue 38)
    r = check("kv-cache", *args, "--json")
    data = json.loads(r.output)
    assert data["ok"] is (code == 0)
    if "bits" in words:
        assert words in data["unit_note"] and data["steps"][0]["mistake"] == data["unit_note"]


@pytest.mark.parametrize("columns", [80, 60])
def test_step_lines_wrap_cleanly_at_the_terminal_width(columns, monkeypatch):
    """At 80 (or 60) columns a step's tolerance note is never split by the terminal: it stays on
    the step's line when both fit, else goes on its own indented line, whole ("[" and "]" on
    the same line), and no line of the report runs past the width or starts with ")"."""
    monkeypatch.setenv("COLUMNS", str(columns))
    r = CliRunner().invoke(cli, ["check", "attention", "--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1",
                                 "--v", "1 0; 0 1; 0.5 0.5", "--scores", "1 0 1; 0 1 1; 1 1 3",
                                 "--weights", "0.4 0.2 0.4; 0.2 0.4 0.4; 0.25 0.25 0.5"])
    lines = r.output.splitlines()
    assert r.exit_code == 1 and lines
    assert all(len(line) < columns for line in lines), lines
    assert not any(line.lstrip().startswith(")") for line in lines)
    notes = [line for line in lines if "[exact" in line or "[each entry" in line]
    assert len(notes) == 2 and all(line.rstrip().endswith("]") for line in notes), lines
    for i, line in enumerate(lines):  # a note on its own line sits under its step, indented
        if line in notes and line.lstrip().startswith("["):
            assert line.startswith("      ") and lines[i - 1].startswith(("  ✗ ", "  ✓ ")), lines
