"""Issue 20, "the same model gets different answers by route": the single findings, each with a figure
derived by hand (the cross-route property is tests/drills/cli/test_model_routes.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli

CONFIGS = Path(__file__).parents[2] / "solver" / "counting" / "configs"


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def as_json(*args: str) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads([x for x in r.output.splitlines() if not x.startswith("note: ")][-1])


def walk(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v)
    else:
        yield obj


def test_kv_cache_flags_honour_the_window_and_the_latent_cache():
    """--sliding-window 4096 at 16,384 tokens: 32 × 4096 × 2 × 8 × 128 × 2 B = 536,870,912 (not 2^31);
    --kv-lora-rank 512 --qk-rope-head-dim 64: 27 × 1000 × 576 × 2 B, no head count needed."""
    d = as_json("solve", "memory", "--what", "kv-cache", "--n-layers", "32", "--n-kv-heads", "8", "--d-head", "128",
                "--sliding-window", "4096", "--batch", "1", "--seq", "16384", "--dtype", "bf16")
    assert d["answer"] == 536_870_912
    d = as_json("solve", "memory", "--what", "kv-cache", "--n-layers", "27", "--kv-lora-rank", "512",
                "--qk-rope-head-dim", "64", "--batch", "1", "--seq", "1000", "--dtype", "bf16")
    assert d["answer"] == 27 * 1000 * 576 * 2
    d = as_json("check", "kv-cache", "--answer", "512MiB", "--config", str(CONFIGS / "mistral-7b-v0.1.json"),
                "--batch", "1", "--seq", "16384", "--dtype", "bf16")
    assert d["ok"] is True


def test_kv_cache_from_a_config_with_as_many_kv_heads_as_heads():
    """Gemma-7B: 2 × 28 × 16,384 × 16 × 256 × 2 B = 7,516,192,768 (the file gives both head counts)."""
    d = as_json("solve", "memory", "--what", "kv-cache", "--config", str(CONFIGS / "gemma-7b.json"), "--batch", "1",
                "--seq", "16384", "--dtype", "bf16")
    assert d["answer"] == 7_516_192_768


def test_serve_and_chips_take_one_hbm_figure_and_say_which():
    """H100 SXM by default: the datasheet's 80 GB in both (nvidia-smi's 85.52 GB only when asked for)."""
    chips = as_json("solve", "chips", "-N", "70B", "--hw", "h100")
    serve = as_json("solve", "serve", "-N", "70B", "--kv-bytes-per-token", "327680", "--context", "4096",
                    "--hw", "h100", "--chips", "8")
    assert chips["breakdown"]["hbm_bytes"] == 80 * 10**9 and "datasheet" in chips["convention"]["hbm"]
    assert serve["breakdown"]["weight_bytes"] == 140 * 10**9 and "datasheet" in serve["convention"]["hbm"]
    assert serve["breakdown"]["max_batch"] == (8 * 80 * 10**9 - 140 * 10**9) // (4096 * 327680) == 372


def test_serve_never_writes_inf():
    """At 100,000 tokens of 4 MB each, one sequence's cache read (0.4 TB / 3.35 TB/s) outlasts its
    2·N FLOPs: never compute-bound; null with a note, not the string "inf"."""
    d = as_json("solve", "serve", "-N", "7B", "--context", "100000", "--kv-bytes-per-token", "4MB", "--hw", "h100",
                "--chips", "8")
    assert d["breakdown"]["compute_bound_batch"] is None and d["breakdown"]["compute_bound_note"].startswith("never")
    assert not any(v in ("inf", "-inf", "nan") or (isinstance(v, float) and not math.isfinite(v)) for v in walk(d))


def test_no_embeddings_needs_no_vocabulary_and_accepts_zero():
    """6 layers of d = 512, h = 8, d_ff = 2048, GELU, LayerNorm with β, RoPE: per layer 4·512² + 4·512 +
    2·512·2048 + 2048 + 512 + 4·512 = 3,152,384; × 6 + the final norm's 1,024 = 18,915,328."""
    base = ("solve", "params", "--d-model", "512", "--n-layers", "6", "--n-heads", "8", "--d-ff", "2048", "--pos",
            "rope", "--no-embeddings")
    assert as_json(*base)["answer"] == 18_915_328
    d = as_json(*base, "--vocab-size", "0")
    assert d["answer"] == d["breakdown"]["total"] == 18_915_328


@pytest.mark.parametrize("norms,dropped", [("none", 25 * 2 * 768), ("one", 12 * 2 * 768)])
def test_norms_per_layer_breakdown_total_is_the_answer(norms, dropped):
    """GPT-2 small: 25 LayerNorms (2 per layer + the final) of γ and β, 768 each: none drops all 38,400,
    one drops one per layer (12 × 1,536)."""
    d = as_json("solve", "params", "--preset", "gpt2", "--norms-per-layer", norms)
    assert d["answer"] == d["breakdown"]["total"] == 124_439_808 - dropped
    assert d["breakdown"]["as_built"]["total"] == 124_439_808
    assert d["breakdown"]["embedding"] + d["breakdown"]["non_embedding"] == d["answer"]


def test_flops_states_kaplans_n_without_norms():
    """GPT-2 small's non-embedding N is 85,056,000, 38,400 of it norms: Kaplan's N = 85,017,600; forward
    per token at n = 1024: 2N + 2·12·1024·768."""
    d = as_json("solve", "flops", "--preset", "gpt2", "--batch", "1", "--seq", "1024", "--per-token", "kaplan",
                "--norms-per-layer", "none")
    assert d["breakdown"]["N"] == 85_017_600
    assert d["answer"] == 2 * 85_017_600 + 2 * 12 * 1024 * 768
    r = run("solve", "flops", "--preset", "gpt2", "--batch", "1", "--seq", "8", "--norms-per-layer", "none")
    assert r.exit_code == 2 and "--norms-per-layer" in r.output


def test_kv_bytes_per_token_zero_where_meaningful():
    """No cache: the decode step reads the 14 GB of weights alone; chips hold the weights alone; serve
    needs a batch (any batch fits) and then serves it."""
    d = as_json("solve", "decode", "-N", "7B", "-B", "8", "-S", "1000", "--kv-bytes-per-token", "0",
                "--peak-flops", "1e15", "--bandwidth", "2e12")
    assert d["breakdown"]["kv_bytes"] == 0 and d["answer"] == pytest.approx(14e9 / 2e12)
    assert as_json("solve", "chips", "-N", "7B", "--batch", "8", "--context", "100", "--kv-bytes-per-token", "0",
                   "--hw", "h100")["breakdown"]["kv_bytes"] == 0
    r = run("solve", "serve", "-N", "7B", "--context", "100", "--kv-bytes-per-token", "0", "--hw", "h100")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "--batch" in r.output
    d = as_json("solve", "serve", "-N", "7B", "--context", "100", "--kv-bytes-per-token", "0", "--hw", "h100",
                "--batch", "4")
    assert d["breakdown"]["batch"] == 4 and d["breakdown"]["max_batch"] is None
    assert run("solve", "generate", "-N", "7B", "-P", "10", "-n", "5", "--kv-bytes-per-token", "0",
               "--hw", "h100").exit_code == 0
    assert run("solve", "decode", "-N", "7B", "-B", "8", "-S", "1000", "--kv-bytes-per-token", "-1",
               "--hw", "h100").exit_code == 2


def test_kv_plus_max_labels_the_bound_by_what_dominates():
    """B = 1024, S = 4096, X = 22,888 B, N = 7B at 1 PFLOP/s and 2 TB/s: t_KV = 1024·4096·22888 / 2e12 =
    48.0 ms, t_weights = 7 ms, t_compute = 2·7e9·1024 / 1e15 = 14.3 ms; the step is 48.0 + 14.3 ms and the
    KV read is 77 % of it: memory-bound, though the compute beats the weight read."""
    d = as_json("solve", "decode", "-N", "7B", "-B", "1024", "-S", "4096", "--kv-bytes-per-token", "22888",
                "--peak-flops", "1e15", "--bandwidth", "2e12", "--model", "kv-plus-max")
    t_kv, tc = 1024 * 4096 * 22888 / 2e12, 2 * 7e9 * 1024 / 1e15
    assert d["answer"] == pytest.approx(t_kv + tc)
    assert d["breakdown"]["bound"] == "memory"
    assert d["breakdown"]["bound_by"] == f"KV read: {t_kv / (t_kv + tc):.0%} of the step" == "KV read: 77% of the step"
    small = as_json("solve", "decode", "-N", "7B", "-B", "1024", "-S", "16", "--kv-bytes-per-token", "22888",
                    "--peak-flops", "1e15", "--bandwidth", "2e12", "--model", "kv-plus-max")
    assert small["breakdown"]["bound"] == "compute" and small["breakdown"]["bound_by"].startswith("compute")


def test_a_field_a_command_has_no_use_for_is_named():
    r = run("solve", "chips", "--preset", "mistral-7b", "--hw", "h100")
    assert r.exit_code == 0 and "ignored: sliding_window (no KV cache in this count)" in r.output
    d = as_json("solve", "memory", "--what", "weights", "--preset", "mixtral-8x7b", "--dtype", "bf16")
    assert "top_k" in d["convention"]["ignored"]
    d = as_json("solve", "memory", "--what", "kv-cache", "--n-layers", "2", "--n-heads", "4", "--d-model", "64",
                "--d-ff", "256", "--batch", "1", "--seq", "8", "--dtype", "fp32")
    assert d["answer"] == 2 * 2 * 8 * 4 * 16 * 4 and set(d["convention"]["ignored"]) == {"d_ff"}
    assert "ignored: sliding_window" in run("solve", "params", "--preset", "mistral-7b").output


def test_a_preset_with_overrides_and_a_config_with_overrides():
    """--config plus flags: the file's model with the flag on top (Mistral's window off: 2^31 B)."""
    d = as_json("solve", "memory", "--what", "kv-cache", "--config", str(CONFIGS / "mistral-7b-v0.1.json"),
                "--sliding-window", "0", "--batch", "1", "--seq", "16384", "--dtype", "bf16")
    assert d["answer"] == 2 * 32 * 16384 * 8 * 128 * 2 == 2**31
    r = run("solve", "params", "--preset", "gpt2", "--config", str(CONFIGS / "gpt2.json"))
    assert r.exit_code == 2 and "--config" in r.output


def test_serve_and_generate_price_a_step_as_decode_does():
    """Mixtral-8x7B at batch 16, 4096 tokens, 8 H100: serve's step is decode's step (the experts 16 tokens
    touch, 2·N_active FLOPs), and a generation of one token is the prefill plus that step."""
    model = ("--preset", "mixtral-8x7b", "--hw", "h100", "--chips", "8")
    step = as_json("solve", "decode", "-B", "16", "-S", "4096", *model)["answer"]
    served = as_json("solve", "serve", "--batch", "16", "--context", "4096", *model)
    assert served["breakdown"]["step_time_s"] == pytest.approx(step, rel=1e-12)
    assert served["breakdown"]["compute_bound_batch"] is None
    gen = as_json("solve", "generate", "-B", "16", "-P", "4096", "-n", "1", *model)
    assert gen["breakdown"]["decode_s"] == pytest.approx(step, rel=1e-12)


def test_mfu_of_a_mixture_of_experts_counts_the_parameters_a_token_uses():
    """Mixtral-8x7B by hand: per layer Q and O 2 × 4096², K and V 2 × 4096 × 1024, two of eight experts
    2 × 3 × 4096 × 14336, router 4096 × 8, two norms 2 × 4096: 394,305,536; × 32 layers + two 32000 × 4096
    tables + the final norm = 12,879,925,248 (the published 12.9B). 6N per token uses that N, not the
    46.7B of all experts (before: MFU 3.6× too high for the same throughput)."""
    per_layer = 2 * 4096**2 + 2 * 4096 * 1024 + 2 * 3 * 4096 * 14336 + 4096 * 8 + 2 * 4096
    active = 32 * per_layer + 2 * 32000 * 4096 + 4096
    assert active == 12_879_925_248
    d = as_json("solve", "mfu", "--preset", "mixtral-8x7b", "--tokens-per-second", "20000", "--chips", "8",
                "--hw", "h100")
    assert d["breakdown"]["model_flops_per_token"] == 6 * active
    assert d["answer"] == pytest.approx(6 * active * 20000 / (8 * 989.5e12), rel=1e-12)
    assert "12,879,925,248" in d["convention"]["params"]


def test_commands_with_sizes_of_their_own_name_the_fields_they_ignore():
    """A preset's window, latent widths or experts are named where a command does not use them."""
    cases = [(("solve", "tp", "--batch", "1", "--seq", "4096", "--tp", "8", "--preset", "deepseek-v2"), "kv_lora_rank"),
             (("solve", "attention-flops", "-B", "1", "--seq", "4096", "--preset", "mixtral-8x7b"), "top_k"),
             (("solve", "activations", "--batch", "1", "--seq", "4096", "--preset", "mistral-7b"), "sliding_window"),
             (("solve", "ring-attention", "--seq", "1M", "--devices", "8", "--preset", "mistral-7b"), "sliding_window"),
             (("solve", "quant", "--format", "q4_0", "--preset", "mixtral-8x7b"), "top_k"),
             (("solve", "dp-comm", "--gpus", "8", "--preset", "mixtral-8x7b"), "top_k")]
    for args, field in cases:
        r = run(*args)
        assert r.exit_code == 0, r.output
        assert any(line.startswith("ignored: ") and field in line for line in r.output.splitlines()), (args, r.output)
