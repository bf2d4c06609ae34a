"""``qkv solve flash-attention|online-softmax`` (issue 24) through click's CliRunner; each figure
derived a second way in the test."""

from __future__ import annotations

import json
import math

from click.testing import CliRunner

from drills.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=False)


def as_json(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_flash_attention_blocks_from_sram_bytes():
    """100 KiB of bf16 = 51,200 elements; d = 64: B_c = 200, B_r = 64."""
    out = as_json("flash-attention", "-N", "1k", "-d", "64", "--sram-bytes", "100KiB")
    assert out["breakdown"]["block_cols"] == math.ceil(51_200 / 256) and out["breakdown"]["block_rows"] == 64
    n, d, tc = 1024, 64, 6
    assert out["answer"] == 2 * n * d + tc * (2 * n * d + 2 * n) + (tc + 1) * (n * d + 2 * n)
    assert out["unit"] == "elements" and "sram" in out["convention"]


def test_flash_attention_bytes_and_version_2():
    """FlashAttention-2 with given blocks 128/64: reads Nd + T_r·2Nd, writes Nd + N, in fp16 bytes."""
    out = as_json("flash-attention", "-N", "4096", "-d", "128", "--br", "128", "--bc", "64", "--version", "2",
                  "--unit", "bytes", "--dtype", "fp16")
    n, d = 4096, 128
    assert out["answer"] == 2 * (n * d + (n // 128) * 2 * n * d + n * d + n)
    assert "FlashAttention-2" in out["convention"]["flash"]


def test_flash_attention_explain_and_errors():
    text = run("flash-attention", "-N", "512", "-d", "64", "-M", "32768", "--explain").output
    assert "B_c = ⌈M/4d⌉" in text and "recomputes" in text
    bad = run("flash-attention", "-N", "512", "-d", "64")
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1
    both = run("flash-attention", "-N", "512", "-d", "64", "-M", "100", "--sram-bytes", "1KB")
    assert both.exit_code == 2


def test_online_softmax_matches_full_softmax():
    out = as_json("online-softmax", "--block", "1 2", "--block", "3 0", "--values", "1 0; 0 1; 1 1; 2 2")
    x = [1, 2, 3, 0]
    z = sum(math.exp(t) for t in x)
    assert all(math.isclose(a, math.exp(t) / z, rel_tol=1e-12) for a, t in zip(out["answer"], x, strict=True))
    w = [math.exp(t) / z for t in x]
    assert math.isclose(out["breakdown"]["output"][0], w[0] + w[2] + 2 * w[3], rel_tol=1e-12)
    assert out["breakdown"]["final_max"] == 3


def test_online_softmax_exact():
    out = as_json("online-softmax", "--block", "1/2 0", "--block", "1", "--exact")
    assert out["breakdown"]["equal_to_full_softmax"] is True
    assert "exp" in out["answer"][2] or "E" in out["answer"][2]
    bad = run("online-softmax", "--block", "1 x")
    assert bad.exit_code == 2


def test_online_softmax_explain_shows_the_real_substitution():
    """Blocks (1, 2) and (2, 5), values (1 0; 0 1; 1 1; 2 0). Block 1: m₁ = 2, ℓ₁ = e^(1−2) + e^(2−2)
    = 1.36788, o₁ = (e^(1−2)·1 + e^(2−2)·0, e^(1−2)·0 + e^(2−2)·1). Block 2: m₂ = 5, rescale
    e^(2−5) = 0.0497871, ℓ₂ = 0.0497871·1.36788 + e^(2−5) + e^(5−5) = 1.11789 (the old sum is in the
    value, so it is in the line), o₂ = rescale·o₁ + e^(2−5)·v₃ + e^(5−5)·v₄; the output o₂/ℓ₂."""
    result = run("online-softmax", "--block", "1 2", "--block", "2 5", "--values", "1 0; 0 1; 1 1; 2 0",
                 "--explain")
    out = result.output
    assert result.exit_code == 0, out
    assert "      = e^(1 − 2) + e^(2 − 2)\n      = 1.36788\n" in out
    assert "      = 0.0497871·1.36788 + e^(2 − 5) + e^(5 − 5)\n      = 1.11789\n" in out
    assert "unnormalised partial output" not in out and "divide once at the end" not in out
    assert "      = [e^(1 − 2)·1 + e^(2 − 2)·0, e^(1 − 2)·0 + e^(2 − 2)·1]\n" in out
    assert ("      = [0.0497871·0.367879 + e^(2 − 5)·1 + e^(5 − 5)·2, "
            "0.0497871·1 + e^(2 − 5)·1 + e^(5 − 5)·0]\n      = [2.0681, 0.0995741]\n") in out
    assert "      = [2.0681/1.11789, 0.0995741/1.11789]\n" in out
    # a long block: the partial output's line names its terms instead of spelling out every product
    long = run("online-softmax", "--block", " ".join(["1"] * 20), "--values", "; ".join(["1 2 3"] * 20), "--explain")
    line = next(ln for ln in long.output.splitlines() if ln.startswith("      = ") and "·v" in ln)
    assert len(line) < 120 and "20 scores" in line, line


def test_paged_kv_from_a_preset():
    """Llama 2 7B: X = 2·32·32·128·2 = 524,288 bytes per token."""
    out = as_json("paged-kv", "--lengths", "1000 17", "--preset", "llama2-7b", "-b", "16")
    assert out["answer"] == math.ceil(1000 / 16) + math.ceil(17 / 16)
    assert out["breakdown"]["kv_bytes"] == 1017 * 2 * 32 * 32 * 128 * 2
    assert run("paged-kv", "--lengths", "10 x", "-X", "100").exit_code == 2
    # blocks need no KV size: ⌈1300/16⌉ = 82 blocks, 12 empty slots; bytes and a budget do
    out = as_json("paged-kv", "--lengths", "1300")
    assert out["answer"] == 82 and out["breakdown"]["empty_slots"] == 82 * 16 - 1300 and "kv_bytes" not in out["breakdown"]
    assert run("paged-kv", "--lengths", "10", "--budget", "1GB").exit_code == 2


def test_batching_and_disaggregation():
    out = as_json("batching", "--outputs", "1 10 3 5", "-B", "2", "--step-time", "1")
    assert out["answer"] == 19 / 10 and out["breakdown"]["static_throughput"] == 19 / 15
    d = as_json("disaggregation", "-P", "4k", "-X", "524288", "--link-bandwidth", "50GB/s")
    assert d["breakdown"]["kv_bytes"] == 4096 * 524_288 and math.isclose(d["answer"], 4096 * 524_288 / 50e9)
    assert run("disaggregation", "-P", "4k", "-X", "524288").exit_code == 2


def test_moe_commands():
    out = as_json("moe-all-to-all", "-T", "4096", "-d", "4096", "-k", "2", "--ep", "8")
    assert out["answer"] == 2 * 4096 * 2 * 7 // 8 * 4096 * 2
    assert run("moe-all-to-all", "-T", "8", "-d", "8", "--ep", "3", "-E", "8").exit_code == 2
    cap = as_json("expert-capacity", "-T", "12", "-E", "4", "--cf", "1.25", "--routed", "6 2 3 1")
    assert cap["breakdown"]["capacity"] == 3 and cap["answer"] == 3
    loss = as_json("router-loss", "--logits", "0 0; 0 0")
    assert math.isclose(loss["answer"], 2 * (1 * 1 / 2 + 0 * 1 / 2), rel_tol=1e-12)  # E·Σf·P: both to expert 1
    assert math.isclose(loss["breakdown"]["z_loss"], math.log(2) ** 2, rel_tol=1e-12)


def test_mla_decode_from_the_preset_and_flags():
    """DeepSeek-V2-Lite (27 layers): the absorbed answer is 27 × the per-layer count written out here."""
    S = 4096
    out = as_json("mla-decode", "--preset", "deepseek-v2-lite", "-S", "4k")
    shared = 2 * 2048 * 16 * 192 + 2 * 2048 * 576 + 2 * 16 * 128 * 2048
    absorbed = 2 * 16 * 128 * 512 + 2 * S * 16 * (2 * 512 + 64) + 2 * 16 * 512 * 128
    assert out["answer"] == 27 * (shared + absorbed)
    flags = as_json("mla-decode", "-S", "4k", "--d-model", "2048", "--heads", "16", "--d-c", "512", "--d-r", "64",
                    "--d-head", "128", "--layers", "27", "--order", "naive")
    assert flags["answer"] == out["breakdown"]["naive_flops"]
    assert run("mla-decode", "-S", "10", "--preset", "llama2-7b").exit_code == 2


def test_long_context_commands():
    out = as_json("rope-scaling", "-d", "4", "--method", "ntk", "-s", "4")
    assert math.isclose(out["breakdown"]["new_base"], 10_000 * 4 ** 2)
    assert math.isclose(out["answer"][1], 2 * math.pi * 400)
    assert run("rope-scaling", "-d", "5").exit_code == 2
    ring = as_json("ring-attention", "-N", "1M", "-P", "8", "--preset", "llama2-7b")
    assert ring["answer"] == 2 * (2**20 // 8) * 32 * 128 * 2
    uly = as_json("ulysses", "-N", "32k", "-P", "8", "--n-heads", "32", "--d-head", "128")
    assert uly["answer"] == 7 * 4096 * 4 * 32 * 128 * 2 // 8
    win = as_json("sliding-window", "--preset", "mistral-7b", "--convention", "span")
    assert win["answer"] == 32 * 4096
    cap = as_json("softcap", "--x", "60", "--gemma2", "attention")
    assert math.isclose(cap["answer"][0], 50 * math.tanh(60 / 50))
    assert run("softcap", "--x", "1").exit_code == 2
