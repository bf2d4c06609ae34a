"""``qkv solve params|flops|memory`` through click's CliRunner; figures derived by hand."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from drills.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=False)


def as_json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_params_preset_json_shape():
    """GPT-2 small: 124,439,808 (tests/solver/counting/test_params.py::test_gpt2_small_by_hand)."""
    d = as_json("params", "--preset", "gpt2")
    assert set(d) == {"answer", "unit", "convention", "breakdown"}
    assert d["answer"] == 124_439_808 and d["unit"] == "parameters"


def test_flags_override_the_preset():
    """Untying GPT-2's head adds 50257·768 = 38,597,376; --no-bias removes 12·(4·768 + 3072 + 768)
    = 82,944 linear biases and 25·768 = 19,200 LayerNorm β: 124,439,808 − 102,144 = 124,337,664."""
    assert as_json("params", "--preset", "gpt2", "--untied-embeddings")["answer"] == 124_439_808 + 38_597_376
    assert as_json("params", "--preset", "gpt2", "--no-bias")["answer"] == 124_337_664


def test_params_from_flags_alone():
    """The base Transformer's shapes, encoder only, no head: 37000·512 = 18,944,000 + 6·3,152,384
    (one layer by hand in test_counts_params) = 37,858,304 with --no-final-norm."""
    d = as_json("params", "--arch", "encoder", "--d-model", "512", "--n-layers", "6", "--n-heads", "8",
                "--d-ff", "2048", "--vocab-size", "37000", "--pos", "sinusoidal", "--no-lm-head",
                "--no-final-norm", "--ffn", "relu")
    assert d["answer"] == 37_858_304
    assert "arch" not in d["convention"]["assumed_defaults"]  # given, so not assumed
    assert d["convention"]["assumed_defaults"]["bias"] is True


def test_missing_fields_are_named_in_one_line():
    r = CliRunner().invoke(cli, ["solve", "params", "--d-model", "64"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "--n-layers" in lines[0] and "--vocab-size" in lines[0]


def test_kv_cache_asks_only_for_what_it_needs():
    """No vocabulary, no d_ff: 2·32·1·8192·8·128·2 bytes = 2^30 (1 GiB)."""
    d = as_json("memory", "--what", "kv-cache", "--n-layers", "32", "--n-kv-heads", "8", "--d-head", "128",
                "--batch", "1", "--seq", "8192", "--dtype", "bf16")
    assert d["answer"] == 2**30 and d["breakdown"]["views"]["GiB"] == 1.0
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--n-layers", "32"])
    assert r.exit_code == 2 and "--dtype" in r.output and "--vocab-size" not in r.output


def test_memory_training_and_weights():
    """GPT-2 small: 16 bytes × 124,439,808 = 1,991,036,928; fp16 weights 248,879,616."""
    assert as_json("memory", "--preset", "gpt2", "--what", "training")["answer"] == 1_991_036_928
    assert as_json("memory", "--preset", "gpt2", "--dtype", "fp16")["answer"] == 248_879_616


def test_flops_json_and_convention():
    """GPT-2 small forward at n = 1024: 291,648,307,200 FLOPs (test_counts_flops), half in MACs."""
    d = as_json("flops", "--preset", "gpt2", "--batch", "1", "--seq", "1024")
    assert d["answer"] == 291_648_307_200 and d["unit"] == "FLOPs"
    m = as_json("flops", "--preset", "gpt2", "--batch", "1", "--seq", "1024", "--convention", "macs")
    assert m["answer"] == 291_648_307_200 // 2


def test_explain_shows_formula_substitution_and_conventions():
    r = run("params", "--preset", "bert-base", "--explain")
    assert r.exit_code == 0
    for word in ("formula:", "substitution:", "breakdown:", "conventions:", "109,482,240"):
        assert word in r.output
    r = run("flops", "--preset", "gpt2", "--batch", "1", "--seq", "8", "--mode", "train", "--explain")
    assert "not in the total" in r.output and "backward" in r.output


def test_solver_errors_are_one_line():
    r = CliRunner().invoke(cli, ["solve", "params", "--preset", "gpt2", "--n-kv-heads", "5"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "divisible" in r.output
    r = CliRunner().invoke(cli, ["solve", "params", "--preset", "nope"])
    assert r.exit_code == 2 and "unknown preset" in r.output


def test_commands_import_neither_torch_nor_sympy():
    code = ("import sys, drills.cli.solve_counts, solver.counting, solver.counting.presets; "
            "assert 'torch' not in sys.modules and 'sympy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
