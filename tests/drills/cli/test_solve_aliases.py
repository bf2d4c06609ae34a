"""The names people guess for ``qkv solve`` options (issue 23), and size suffixes, through the real CLI.

Each alias is checked against the canonical spelling: the same question asked both ways gives
the same JSON answer (so an alias mapped to the wrong flag, e.g. GEMM's -K to the output
width, fails). Suffixes are checked against the number written out.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from drills.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=False)


def answer(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def refused(*args: str) -> str:
    r = run(*args)
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("qkv: error: "), r.stderr
    return lines[0]


# (alias spelling, canonical spelling): the same question both ways
SAME = [
    (["compute-optimal", "--flops", "1e24"], ["compute-optimal", "-C", "1e24"]),
    (["compute-optimal", "--budget", "1e24"], ["compute-optimal", "--compute", "1e24"]),
    (["train", "-N", "7B", "--flops", "1e23"], ["train", "-N", "7B", "--compute", "1e23"]),
    # GEMM notation (M×K)·(K×N): M rows, K contracted, N columns = the command's B, D, F
    (["matmul", "-M", "2048", "-K", "4096", "-N", "1024", "--hw", "h100"],
     ["matmul", "-B", "2048", "-D", "4096", "-F", "1024", "--hw", "h100"]),
    (["tp-matmul", "-M", "2048", "-K", "8192", "-N", "1024", "-t", "8", "--hw", "h100"],
     ["tp-matmul", "--batch", "2048", "--d-in", "8192", "--d-out", "1024", "-t", "8", "--hw", "h100"]),
    (["tp", "--hidden", "8192", "-b", "1", "-s", "2048", "-t", "8"],
     ["tp", "--d-model", "8192", "-b", "1", "-s", "2048", "-t", "8"]),
    (["tp", "--hidden-size", "8192", "-b", "1", "-s", "2048", "-t", "8", "--layers", "4"],
     ["tp", "--d-model", "8192", "-b", "1", "-s", "2048", "-t", "8", "-L", "4"]),
    (["alibi", "--heads", "8", "--head", "2", "--i", "9", "--j", "0"],
     ["alibi", "--heads", "8", "--head", "2", "--query", "9", "--key", "0"]),
    (["alibi", "--n-heads", "8", "--head", "2", "-i", "9", "-j", "3"],
     ["alibi", "--heads", "8", "--head", "2", "--query", "9", "--key", "3"]),
    (["t5-buckets", "-r", "126"], ["t5-buckets", "--r", "126"]),
    (["t5-buckets", "--relative-position", "-126"], ["t5-buckets", "--r", "-126"]),
    (["mfu", "-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100", "--recompute"],
     ["mfu", "-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100", "--recompute", "full"]),
    (["mfu", "-N", "70B", "--throughput", "1e6", "--gpus", "1024", "--hw", "h100"],
     ["mfu", "-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100"]),
    (["activations", "-s", "2048", "-b", "1", "--hidden", "4096", "--heads", "32", "--recompute"],
     ["activations", "-s", "2048", "-b", "1", "--d-model", "4096", "-a", "32", "--recompute", "full"]),
    (["pipeline", "--pp", "8", "--num-microbatches", "32"], ["pipeline", "-p", "8", "-m", "32"]),
    (["zero", "-N", "7.5B", "--dp", "64", "--stage", "3"], ["zero", "-N", "7.5B", "--gpus", "64", "--stage", "3"]),
    (["dp-comm", "-N", "7B", "--dp", "8"], ["dp-comm", "-N", "7B", "--gpus", "8"]),
    (["collective", "-S", "1GB", "--gpus", "8", "--hw", "h100"], ["collective", "-S", "1GB", "-n", "8", "--hw", "h100"]),
    (["collective", "-S", "1GB", "-n", "8", "--hw", "h100", "--alpha", "5e-6"],
     ["collective", "-S", "1GB", "-n", "8", "--hw", "h100", "--latency", "5e-6"]),
    (["decode", "-N", "7B", "-B", "1", "--seq", "1024", "--kv-bytes-per-token", "512K", "--hw", "h100"],
     ["decode", "-N", "7B", "-B", "1", "--context", "1024", "--kv-bytes-per-token", "512K", "--hw", "h100"]),
    (["generate", "-N", "7B", "--prompt-tokens", "512", "--max-new-tokens", "16", "--kv-bytes-per-token", "512K",
      "--hw", "h100"],
     ["generate", "-N", "7B", "-P", "512", "-n", "16", "--kv-bytes-per-token", "512K", "--hw", "h100"]),
    (["speculative", "-a", "0.8", "--draft-tokens", "4"], ["speculative", "--alpha", "0.8", "--gamma", "4"]),
    (["cross-entropy", "--logits", "2 1 0", "--label", "1"], ["cross-entropy", "--logits", "2 1 0", "--target", "1"]),
    (["sampling", "--logits", "2 1 0.5 0", "-t", "0.7", "-k", "3", "-p", "0.9"],
     ["sampling", "--logits", "2 1 0.5 0", "--temperature", "0.7", "--top-k", "3", "--top-p", "0.9"]),
    (["quant", "--format", "q4_0", "--params", "7B"], ["quant", "--format", "q4_0", "--weights", "7B"]),
    (["params", "--hidden-size", "768", "--num-hidden-layers", "12", "--num-attention-heads", "12",
      "--intermediate-size", "3072", "--vocab", "50257", "--max-position-embeddings", "1024"],
     ["params", "--d-model", "768", "--n-layers", "12", "--n-heads", "12", "--d-ff", "3072", "--vocab-size", "50257",
      "--max-positions", "1024"]),
    # --preset/--config where a command needs a model's sizes (GPT-2: d = 768, h = 12, L = 12)
    (["attention-flops", "--preset", "gpt2", "-B", "1", "-T", "1024", "--hw", "h100"],
     ["attention-flops", "--n-heads", "12", "--d-head", "64", "--d-model", "768", "--d-ff", "3072", "-B", "1",
      "-T", "1024", "--hw", "h100"]),
    (["activations", "--preset", "gpt2", "-s", "1024", "-b", "4"],
     ["activations", "--d-model", "768", "--n-heads", "12", "-s", "1024", "-b", "4"]),
    (["tp", "--preset", "gpt2", "-b", "1", "-s", "1024", "-t", "4"],
     ["tp", "--d-model", "768", "-b", "1", "-s", "1024", "-t", "4"]),
    (["quant", "--format", "q8_0", "--preset", "gpt2"], ["quant", "--format", "q8_0", "--weights", "124439808"]),
    (["zero", "--preset", "gpt2", "--gpus", "8", "--stage", "2"], ["zero", "-N", "124439808", "--gpus", "8", "--stage", "2"]),
    (["dp-comm", "--preset", "gpt2", "--gpus", "8"], ["dp-comm", "-N", "124439808", "--gpus", "8"]),
    (["mfu", "--preset", "gpt2", "--tokens-per-second", "1e5", "--hw", "h100"],
     ["mfu", "-N", "124439808", "--tokens-per-second", "1e5", "--hw", "h100"]),
    # size suffixes: sequence lengths and layer sizes k = 1024; counts K = 1000
    (["attention-flops", "-B", "1", "--seq", "8k", "--n-heads", "32", "--d-head", "128", "--hw", "h100"],
     ["attention-flops", "-B", "1", "--seq", "8192", "--n-heads", "32", "--d-head", "128", "--hw", "h100"]),
    (["flops", "--preset", "gpt2", "--batch", "1", "--seq", "1k"], ["flops", "--preset", "gpt2", "--batch", "1", "--seq", "1024"]),
    (["memory", "--preset", "gpt2", "--what", "kv-cache", "--batch", "1", "--seq", "32K", "--dtype", "bf16"],
     ["memory", "--preset", "gpt2", "--what", "kv-cache", "--batch", "1", "--seq", "32768", "--dtype", "bf16"]),
    (["decode", "-N", "7B", "-B", "1", "-S", "1M", "--kv-bytes-per-token", "512K", "--hw", "h100"],
     ["decode", "-N", "7B", "-B", "1", "-S", "1048576", "--kv-bytes-per-token", "512000", "--hw", "h100"]),
    (["params", "--d-model", "4k", "--n-layers", "2", "--n-heads", "32", "--d-ff", "11k", "--vocab-size", "32000",
      "--pos", "rope"],
     ["params", "--d-model", "4096", "--n-layers", "2", "--n-heads", "32", "--d-ff", "11264", "--vocab-size", "32000",
      "--pos", "rope"]),
    (["train", "-N", "70B", "-D", "1.4T"], ["train", "-N", "70000000000", "-D", "1400000000000"]),
    (["tp", "--hidden", "8k", "-b", "1", "-s", "2k", "-t", "8"], ["tp", "--d-model", "8192", "-b", "1", "-s", "2048", "-t", "8"]),
]


@pytest.mark.parametrize("alias,canonical", SAME, ids=[" ".join(a[:3]) for a, _ in SAME])
def test_alias_asks_the_same_question(alias, canonical):
    a, c = answer(*alias), answer(*canonical)
    assert a["answer"] == c["answer"] and a.get("breakdown") == c.get("breakdown")


def test_gemm_letters_keep_their_meaning():
    """-K is the contracted size: swapping it with -N changes the bytes (the weight is K×N)."""
    kn = answer("matmul", "-M", "16", "-K", "4096", "-N", "1024")
    nk = answer("matmul", "-M", "16", "-K", "1024", "-N", "4096")
    assert kn["breakdown"]["flops"] == nk["breakdown"]["flops"] == 2 * 16 * 4096 * 1024
    # bytes = 2·(M·K + K·N + M·N) at bf16
    assert kn["breakdown"]["bytes"] == 2 * (16 * 4096 + 4096 * 1024 + 16 * 1024)
    assert nk["breakdown"]["bytes"] == 2 * (16 * 1024 + 1024 * 4096 + 16 * 4096)


def test_seq_suffix_is_binary_and_count_suffix_decimal():
    """8k tokens of context = 8192 (binary); 8K parameters = 8000 (decimal)."""
    seq = answer("attention-flops", "-B", "1", "--seq", "8k", "--n-heads", "1", "--d-head", "1")
    # prefill, one head of size 1: QKᵀ and AV, 2 FLOPs per multiply-add each: 4·T·S
    assert seq["answer"] == 4 * 8192 * 8192
    count = answer("train", "-N", "8K", "-D", "1K")
    assert count["answer"] == 6 * 8000 * 1000


def test_vocabulary_takes_no_suffix():
    line = refused("params", "--d-model", "64", "--n-layers", "1", "--n-heads", "1", "--d-ff", "64",
                   "--vocab-size", "32k", "--pos", "rope")
    assert "--vocab-size" in line and "write the number out" in line


def test_preset_and_own_flags_together():
    """A flag given wins over the preset's field (activations: --n-heads with --preset)."""
    mine = answer("activations", "--preset", "gpt2", "--n-heads", "24", "-s", "1024", "-b", "1")
    plain = answer("activations", "--d-model", "768", "--n-heads", "24", "-s", "1024", "-b", "1")
    assert mine["answer"] == plain["answer"]


def test_preset_and_params_refused_together():
    assert "--params" in refused("zero", "-N", "7B", "--preset", "gpt2", "--gpus", "8", "--stage", "1")


def test_missing_sizes_name_the_preset_route():
    assert "--preset" in refused("attention-flops", "-B", "1", "-T", "1024")
    assert "--preset" in refused("activations", "-s", "1024", "-b", "1")


def test_serve_help_lists_own_options_first():
    """Grouped help: the command's own options, then hardware, output, and the model flags last."""
    r = CliRunner().invoke(cli, ["solve", "serve", "--help"])
    text = r.stdout
    own, hw, model = text.index("--context"), text.index("Hardware options:"), text.index("Model (")
    assert own < hw < model
    assert text.index("--n-kv-heads") > model and text.index("--price-per-chip-hour") < hw


def test_solve_help_states_the_suffix_rule():
    text = CliRunner().invoke(cli, ["solve", "--help"]).stdout
    assert "k = 1024" in text and "B = 10^9" in text


def test_dash_h_prints_help_for_every_solve_command():
    """``-h`` is the CLI's help alias (context_settings); no ``qkv solve`` subcommand may take it
    for an option of its own (fit-3d's --d-model did, so ``qkv solve fit-3d -h`` asked for a value)."""
    import click
    from click.testing import CliRunner

    from drills.cli import cli, solve

    ctx = click.Context(solve, info_name="solve")
    names = solve.list_commands(ctx)
    assert "fit-3d" in names and len(names) > 50
    bad = {}
    for name in names:
        r = CliRunner().invoke(cli, ["solve", name, "-h"], prog_name="qkv")
        if r.exit_code != 0 or f"Usage: qkv solve {name} [OPTIONS]" not in r.output or "-h, --help" not in r.output:
            bad[name] = r.output[-200:]
    assert bad == {}
