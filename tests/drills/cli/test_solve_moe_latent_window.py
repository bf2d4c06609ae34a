"""``qkv solve params|decode|pe`` and ``--config`` for experts, latent attention and windows
(issue 10), through click's CliRunner; each figure derived a second way."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from drills.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=False)


def as_json(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_params_gives_total_and_active_and_honours_top_k():
    out = as_json("params", "--preset", "mixtral-8x7b")
    assert out["answer"] == 46_702_792_704 and out["breakdown"]["active"] == 12_879_925_248
    assert "active" in out["convention"]
    # top-1: the active count drops by one expert per layer: 32 × 3 × 4096 × 14336
    one = as_json("params", "--preset", "mixtral-8x7b", "--top-k", "1")
    assert out["breakdown"]["active"] - one["breakdown"]["active"] == 32 * 3 * 4096 * 14336
    assert one["answer"] == out["answer"]
    assert "active/token" in run("params", "--preset", "mixtral-8x7b").output


def test_decode_reads_the_touched_experts():
    expected = as_json("decode", "--preset", "mixtral-8x7b", "--batch", "1", "--context", "1024", "--hw", "h100")
    everything = as_json("decode", "--preset", "mixtral-8x7b", "--batch", "1", "--context", "1024", "--hw", "h100",
                         "--experts", "all")
    # bf16, one token: its two experts, and one row (d = 4096) of the 32000 × 4096 input embedding, a lookup
    # (issue 21: the whole table is not read)
    table = 32000 * 4096
    assert expected["breakdown"]["weight_bytes"] == (12_879_925_248 - table + 4096) * 2
    assert everything["breakdown"]["weight_bytes"] == (46_702_792_704 - table + 4096) * 2
    assert everything["answer"] / expected["answer"] > 3
    # Mistral-7B: the rolling buffer caps the cache at 4096 positions: 2·32·4096·8·128·2 bytes per sequence
    mistral = as_json("decode", "--preset", "mistral-7b", "--batch", "1", "--context", "8192", "--hw", "h100")
    assert mistral["breakdown"]["kv_bytes"] == 2 * 32 * 4096 * 8 * 128 * 2


def test_an_inconsistent_override_is_re_derived_or_refused():
    result = run("params", "--preset", "gpt3-175b", "--d-model", "25600", "--n-heads", "160")
    assert result.exit_code == 0 and "d_head re-derived" in result.stderr
    L, d, V, P = 96, 25600, 50257, 2048
    assert f"{12 * L * d * d + 13 * L * d + (V + P) * d + 2 * d:,}" in result.stdout
    refused = run("params", "--preset", "gpt3-xl", "--d-model", "4096")
    assert refused.exit_code == 2 and len(refused.stderr.strip().splitlines()) == 1


def test_config_file_counts_as_the_preset(tmp_path):
    transformers = pytest.importorskip("transformers")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(transformers.MixtralConfig(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, num_local_experts=8, num_experts_per_tok=2).to_dict()))
    assert as_json("params", "--config", str(path))["answer"] == as_json("params", "--preset", "mixtral-8x7b")["answer"]
    # issue 20: Gemma 2's four norms per layer are modelled (norm_position "sandwich"): counted as transformers does
    import torch

    path.write_text(json.dumps(transformers.Gemma2Config().to_dict()))
    with torch.device("meta"):
        gemma2 = transformers.Gemma2ForCausalLM(transformers.Gemma2Config())
    assert as_json("params", "--config", str(path))["answer"] == sum(p.numel() for p in gemma2.parameters())


def test_pe_tensor2tensor_layout_on_the_command_line():
    out = as_json("pe", "--pos", "1", "--d-model", "4", "--layout", "tensor2tensor")
    assert [round(v, 4) for v in out["answer"]] == [0.8415, 0.0001, 0.5403, 1.0]
    assert [round(v, 4) for v in as_json("pe", "--pos", "1", "--d-model", "4", "--layout", "concat")["answer"]][1] \
        == 0.01


def test_params_and_flops_conventions_are_flags_named_in_convention():
    out = as_json("params", "--preset", "llama2-7b", "--norms-per-layer", "none", "--no-embeddings")
    assert out["answer"] == 32 * (4 * 4096**2 + 3 * 4096 * 11008)  # the scaling book's 4·d² + 3·d·F per layer
    assert out["convention"]["norms"] == "none per layer" and "vocabulary 0" in out["convention"]["embeddings"]
    palm = as_json("flops", "--preset", "gpt3-175b", "--batch", "1", "--seq", "2048", "--mode", "train",
                   "--per-token", "palm")
    N = palm["breakdown"]["N"]
    assert palm["answer"] == 6 * N + 12 * 96 * 96 * 128 * 2048 and palm["convention"]["per_token_rule"] == "palm"
    half = as_json("flops", "--preset", "gpt3-175b", "--batch", "1", "--seq", "2048", "--per-token", "kaplan",
                   "--causal-halving")
    assert half["answer"] == 2 * N + 96 * 2048 * 12288
