"""Issue 37: a config.json's ``quantization_config`` sets the weight bytes of ``memory --what weights``
(without ``--dtype``): transformers' own quantizer lays the class out on the meta device, as
``from_pretrained`` loads the checkpoint. Checked by hand on a tiny FP8-block Llama; with ``--dtype``
the answer is at that precision and says the file's quantization is not applied; a method whose
quantizer cannot lay the weights out here is refused in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from drills.cli import cli

pytest.importorskip("transformers", minversion="5.0")

TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "max_position_embeddings": 32, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
        "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                "weight_block_size": [32, 32]}}


def _memory(tmp_path, raw, *args):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return CliRunner().invoke(cli, ["solve", "memory", "--what", "weights", "--config", str(path), *args])


def test_fp8_blocks_with_their_scales_by_hand(tmp_path):
    r = _memory(tmp_path, TINY, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # per layer, 1 byte per weight of q 64·64, k 32·64, v 32·64, o 64·64, gate/up 128·64, down 64·128 = 36,864;
    # one fp32 scale per 32×32 block: 4 + 2 + 2 + 4 + 8 + 8 + 8 = 36 → 144 B; in bf16 the embedding and the
    # untied head (2 · 100 · 64) and the norms (2 · 2 · 64 + 64): 13,120 elements → 26,240 B
    fp8, scales, bf16 = 2 * 36_864, 2 * 36 * 4, 2 * (2 * 6_400 + 2 * 2 * 64 + 64)
    assert out["answer"] == fp8 + scales + bf16 == 100_256
    assert out["breakdown"]["by_dtype"]["float8_e4m3fn"] == {"elements": fp8, "bytes": fp8}
    assert out["breakdown"]["by_dtype"]["float32"]["bytes"] == scales
    assert "fp8" in out["convention"]["quantization_config"]


def test_with_dtype_the_quantization_is_named_as_not_applied(tmp_path):
    r = _memory(tmp_path, TINY, "--dtype", "bf16")
    assert r.exit_code == 0, r.output
    assert "quantization_config (fp8, fmt e4m3, weight_block_size [32, 32]) not applied: every weight at --dtype bf16" \
        in r.stdout


def test_a_method_transformers_cannot_lay_out_here_is_one_line(tmp_path):
    # (gptq is laid out by qkv itself since: tests/solver/counting/test_quantization.py; hqq is not, and its
    # quantizer needs the hqq package)
    raw = {**TINY, "quantization_config": {"quant_method": "hqq"}}
    r = _memory(tmp_path, raw)
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.output
    assert "quantization_config (hqq)" in r.stderr and "give --dtype" in r.stderr
