"""Issue 20: one model, one answer. Every command that takes a model gets the same answer and the same
breakdown from every route that describes the same model:

- ``--preset NAME``;
- every field as a flag (``--d-model ... --sliding-window ...``);
- ``--config FILE``, a HuggingFace config.json written here from the preset's fields (in the key names
  of its model type, as transformers writes them), read back by ``solver.counting.config_json``;
- another preset with the fields that differ given as flags (``--preset gpt2-medium --d-model 768 ...``).

The models: dense MHA (GPT-2), GQA (Llama-3-8B), MQA (Llama-2-7B with one KV head), a sliding window
(Mistral-7B), latent attention with experts (DeepSeek-V2-Lite), MoE (Mixtral-8x7B). Route-dependent
fields (which route, the config file's notes, the preset's published figure, the fields named as
ignored, a preset's name) are left out of the comparison; everything else must be equal.

The test can fail: before issue 20, ``memory --what kv-cache`` by flags ignored ``--sliding-window`` and
``--kv-lora-rank`` and by ``--config`` asked for ``--n-kv-heads``; ``chips`` and ``serve`` counted
Mistral's cache without its window.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.counting.config import ModelConfig
from solver.counting.config_json import read_hf_config
from solver.counting.presets import get_config

_FALSE = {"tied_embeddings": "--untied-embeddings"}

#: name -> (preset, another preset to override, an override turning the preset into the model)
MODELS = {
    "mha": ("gpt2", "gpt2-medium", {}),
    "gqa": ("llama3-8b", "llama2-7b", {}),
    "mqa": ("llama2-7b", "llama3-8b", {"n_kv_heads": 1}),
    "window": ("mistral-7b", "llama2-7b", {}),
    "mla": ("deepseek-v2-lite", "gpt2-medium", {}),
    "moe": ("mixtral-8x7b", "mixtral-8x22b", {}),
}


def target(name: str) -> ModelConfig:
    preset, _, extra = MODELS[name]
    return get_config(preset).replace(**extra)


def flags_of(cfg: ModelConfig, only: set[str] | None = None) -> list[str]:
    """``cfg`` as command-line flags (every field not None, or only those in ``only``)."""
    out: list[str] = []
    for f in fields(ModelConfig):
        if f.name == "name" or (only is not None and f.name not in only):
            continue
        v = getattr(cfg, f.name)
        if v is None:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else _FALSE.get(f.name, "--no-" + f.name.replace("_", "-")))
        elif isinstance(v, tuple):
            out += [flag, ",".join(v)]
        else:
            out += [flag, repr(v) if isinstance(v, float) else str(v)]
    return out


def hf_json(cfg: ModelConfig) -> dict:
    """The config.json transformers would write for ``cfg`` (gpt2, llama, mistral, mixtral, deepseek_v2)."""
    if cfg.pos == "learned":  # GPT-2
        return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": cfg.d_model,
                "n_layer": cfg.n_layers, "n_head": cfg.n_heads, "n_positions": cfg.max_positions,
                "n_inner": None if cfg.d_ff == 4 * cfg.d_model else cfg.d_ff, "vocab_size": cfg.vocab_size,
                "activation_function": "gelu_new", "layer_norm_epsilon": cfg.norm_eps,
                "tie_word_embeddings": cfg.tied_embeddings, "n_ctx": cfg.max_positions, "use_cache": True}
    common = {"hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
              "intermediate_size": cfg.d_ff, "vocab_size": cfg.vocab_size, "hidden_act": "silu",
              "max_position_embeddings": cfg.max_positions, "rms_norm_eps": cfg.norm_eps,
              "tie_word_embeddings": cfg.tied_embeddings, "torch_dtype": "bfloat16", "use_cache": True,
              "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2}
    if cfg.is_mla:
        return {**common, "model_type": "deepseek_v2", "num_key_value_heads": cfg.n_heads,
                "qk_nope_head_dim": cfg.head_dim, "n_routed_experts": cfg.n_experts,
                "num_experts_per_tok": cfg.top_k, "n_shared_experts": cfg.n_shared_experts,
                "moe_intermediate_size": cfg.expert_ff, "first_k_dense_replace": cfg.first_dense_layers,
                "kv_lora_rank": cfg.kv_lora_rank, "q_lora_rank": cfg.q_lora_rank or None,
                "qk_rope_head_dim": cfg.qk_rope_head_dim, "v_head_dim": cfg.value_head_dim, "moe_layer_freq": 1,
                "ep_size": 1, "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV2Config"}}
    out = {**common, "num_key_value_heads": cfg.kv_heads, "head_dim": cfg.d_head}
    if cfg.is_moe:
        return {**out, "model_type": "mixtral", "num_local_experts": cfg.n_experts,
                "num_experts_per_tok": cfg.top_k, "sliding_window": cfg.sliding_window or None}
    if cfg.sliding_window:
        return {**out, "model_type": "mistral", "sliding_window": cfg.sliding_window}
    return {**out, "model_type": "llama", "attention_bias": False, "mlp_bias": False}


def routes(name: str, tmp_path) -> dict[str, list[str]]:
    preset, other, extra = MODELS[name]
    cfg = target(name)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(hf_json(cfg)))
    base = get_config(other)
    differ = {f.name for f in fields(ModelConfig) if f.name != "name" and getattr(base, f.name) != getattr(cfg, f.name)}
    return {"preset": ["--preset", preset, *flags_of(cfg, set(extra))],
            "flags": flags_of(cfg),
            "config": ["--config", str(path)],
            "preset+flags": ["--preset", other, *flags_of(cfg, differ)]}


def run_json(*args: str) -> dict:
    r = CliRunner().invoke(cli, [*args, "--json"])
    assert r.exit_code == 0 or (args[0] == "check" and r.exit_code == 1), (args, r.output)  # check: 1 = wrong
    return json.loads(r.stdout if hasattr(r, "stdout") else r.output)


_ROUTE_KEYS = {"model", "config_file_notes", "assumed_defaults", "ignored", "published", "name",
               "note",  # check params: a preset's published figure, named when the answer is it
               "kv_origin"}  # paged-kv, disaggregation: where X came from, with the model's name


def comparable(d: dict) -> dict:
    """The JSON without what depends on the route (see the module docstring)."""
    if isinstance(d, dict):
        return {k: comparable(v) for k, v in d.items() if k not in _ROUTE_KEYS}
    if isinstance(d, list):
        return [comparable(v) for v in d]
    return d


@pytest.mark.parametrize("name", list(MODELS))
def test_every_route_reads_the_same_model_config(tmp_path, name):
    """The routes' ModelConfigs themselves: the written config.json reads back as the preset's fields,
    and the preset plus its differences rebuilds them."""
    cfg = target(name)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(hf_json(cfg)))
    assert read_hf_config(path)[0] == cfg
    rebuilt = run_json("solve", "params", *routes(name, tmp_path)["preset+flags"])["breakdown"]["config"]
    assert rebuilt["name"].endswith("with flags")
    assert {**rebuilt, "name": ""} == {**cfg.to_dict(), "name": ""}


#: Every command that takes a model, with the arguments of one question.
COMMANDS = {
    "params": ("solve", "params"),
    "flops": ("solve", "flops", "--batch", "2", "--seq", "256"),
    "flops-decode": ("solve", "flops", "--batch", "2", "--seq", "8192", "--mode", "decode"),
    "flops-kaplan": ("solve", "flops", "--batch", "1", "--seq", "2048", "--per-token", "kaplan",
                     "--norms-per-layer", "none"),
    "memory-weights": ("solve", "memory", "--what", "weights", "--dtype", "bf16"),
    "memory-kv": ("solve", "memory", "--what", "kv-cache", "--batch", "2", "--seq", "16384", "--dtype", "bf16"),
    "memory-training": ("solve", "memory", "--what", "training"),
    "memory-scores": ("solve", "memory", "--what", "attention-scores", "--batch", "1", "--seq", "512",
                      "--dtype", "bf16"),
    "prefill": ("solve", "prefill", "--tokens", "512", "--hw", "h100"),
    "decode": ("solve", "decode", "-B", "8", "-S", "16384", "--hw", "h100"),
    "decode-kv-plus-max": ("solve", "decode", "-B", "256", "-S", "4096", "--hw", "h100", "--model", "kv-plus-max"),
    "train": ("solve", "train", "--tokens", "1T", "--seq", "2048", "--hw", "h100", "--chips", "8"),
    "zero": ("solve", "zero", "--gpus", "64", "--stage", "2", "--hw", "h100"),
    "chips": ("solve", "chips", "--batch", "8", "--context", "32768", "--hw", "h100"),
    "serve": ("solve", "serve", "--context", "16384", "--hw", "h100", "--chips", "8"),
    "generate": ("solve", "generate", "-P", "128", "-n", "16", "--hw", "h100", "--chips", "8"),
    "check-params": ("check", "params", "--answer", "7B"),
    "check-flops": ("check", "flops", "--answer", "1e12", "--batch", "1", "--seq", "128"),
    "check-memory": ("check", "memory", "--answer", "1GB", "--what", "weights", "--dtype", "bf16"),
    "check-kv-cache": ("check", "kv-cache", "--answer", "1GiB", "--batch", "1", "--seq", "16384", "--dtype", "bf16"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_gives_one_answer_by_every_route(tmp_path, command):
    """For each model, the four routes' JSON agree (answer and breakdown), command by command."""
    args = COMMANDS[command]
    for name in MODELS:
        outs = {route: comparable(run_json(*args, *flags)) for route, flags in routes(name, tmp_path).items()}
        first = outs["preset"]
        for route, out in outs.items():
            assert out == first, f"{command}, {name}: {route} differs from preset"


def test_the_window_and_the_latent_cache_count_by_every_route(tmp_path):
    """The figures the issue names: Mistral-7B's windowed cache is 32 layers × 4096 positions × 2 × 8 × 128
    × 2 B = 536,870,912 B at 16,384 tokens (not 2,147,483,648 B), by every route; DeepSeek-V2-Lite's
    latent cache is 27 layers × n × (512 + 64) × 2 B."""
    for route, flags in routes("window", tmp_path).items():
        d = run_json("solve", "memory", "--what", "kv-cache", "--batch", "1", "--seq", "16384", "--dtype", "bf16",
                     *flags)
        assert d["answer"] == 32 * 4096 * 2 * 8 * 128 * 2 == 536_870_912, route
    for route, flags in routes("mla", tmp_path).items():
        d = run_json("solve", "memory", "--what", "kv-cache", "--batch", "1", "--seq", "1000", "--dtype", "bf16",
                     *flags)
        assert d["answer"] == 27 * 1000 * (512 + 64) * 2, route
    # chips: 8 sequences of 32,768 tokens hold 8 × 4096 windowed positions per layer: 4 GiB, not 32 GiB
    d = run_json("solve", "chips", "--preset", "mistral-7b", "--batch", "8", "--context", "32768", "--hw", "h100")
    assert d["breakdown"]["kv_bytes"] == 8 * 32 * 4096 * 2 * 8 * 128 * 2 == 4 * 2**30


#: The commands with sizes of their own that also take ``--preset``/``--config`` (no field flags): a model
#: given either way is one ModelConfig, and the KV commands count the cache ``memory --what kv-cache`` counts.
PRESET_COMMANDS = {
    "paged-kv": ("solve", "paged-kv", "--lengths", "1000 3000", "--budget", "40GB"),
    "disaggregation": ("solve", "disaggregation", "--prompt", "3000", "--link", "nvlink4"),
    "mfu": ("solve", "mfu", "--tokens-per-second", "20000", "--chips", "8", "--hw", "h100"),
    "dp-comm": ("solve", "dp-comm", "--gpus", "8", "--link", "nvlink4"),
    "tp": ("solve", "tp", "--batch", "1", "--seq", "4096", "--tp", "8"),
    "attention-flops": ("solve", "attention-flops", "-B", "1", "--seq", "4096", "--hw", "h100"),
    "activations": ("solve", "activations", "--batch", "1", "--seq", "4096"),
    "ring-attention": ("solve", "ring-attention", "--seq", "1M", "--devices", "8"),
    "ulysses": ("solve", "ulysses", "--seq", "1M", "--devices", "4"),
    "quant": ("solve", "quant", "--format", "q4_0"),
}


@pytest.mark.parametrize("command", list(PRESET_COMMANDS))
def test_preset_and_config_give_one_answer_to_commands_with_sizes_of_their_own(tmp_path, command):
    """``--preset NAME`` and ``--config FILE`` of the same model agree (answer and breakdown), for every
    model; the fields the command has no use for are named in ``ignored`` either way."""
    args = PRESET_COMMANDS[command]
    for name in MODELS:
        r = routes(name, tmp_path)
        if MODELS[name][2]:  # a preset with an override: no field flags on these commands
            continue
        by_preset, by_config = run_json(*args, *r["preset"]), run_json(*args, *r["config"])
        assert comparable(by_preset) == comparable(by_config), f"{command}, {name}"
        assert by_preset["convention"].get("ignored") == by_config["convention"].get("ignored"), f"{command}, {name}"


@pytest.mark.parametrize("name", list(MODELS))
def test_paged_and_disaggregated_caches_are_the_cache_memory_counts(tmp_path, name):
    """The KV bytes of ``paged-kv`` and ``disaggregation`` from a model are ``memory --what kv-cache``'s for
    the same lengths: latent attention's d_c + d_R per layer (not 2 · heads · d_head: DeepSeek-V2 was 57×
    too large), grouped heads, and within a window the full cache (before, the window and the latent cache
    were dropped: X was 2 · layers · kv_heads · d_head · bytes for every model)."""
    flags = routes(name, tmp_path)["config"]  # a model with an override has no preset of its own
    lengths = (1000, 3000)
    mem = [run_json("solve", "memory", "--what", "kv-cache", "--batch", "1", "--seq", str(n), "--dtype", "bf16",
                    *flags)["answer"] for n in lengths]
    paged = run_json("solve", "paged-kv", "--lengths", " ".join(map(str, lengths)), *flags)
    assert paged["breakdown"]["kv_bytes"] == sum(mem)
    handed = run_json("solve", "disaggregation", "--prompt", "3000", "--link", "nvlink4", *flags)
    assert handed["breakdown"]["kv_bytes"] == mem[1]


def test_a_window_bounds_the_cache_handed_over_and_is_named_where_it_cannot_be_honoured():
    """Mistral-7B at 32,768 prompt tokens hands over its rolling buffer, 32 × 4096 × 2 × 8 × 128 × 2 B =
    536,870,912 B (as memory counts it); a paged cache past the window, or the even layer-by-layer split
    of a window's cache, is refused in one line naming sliding_window."""
    d = run_json("solve", "disaggregation", "--prompt", "32768", "--link", "nvlink4", "--preset", "mistral-7b")
    assert d["breakdown"]["kv_bytes"] == 32 * 4096 * 2 * 8 * 128 * 2 == 536_870_912
    for args in (("paged-kv", "--lengths", "1000 5000"),
                 ("disaggregation", "--prompt", "32768", "--link", "nvlink4", "--layers", "32", "--prefill-time", "1")):
        r = CliRunner().invoke(cli, ["solve", *args, "--preset", "mistral-7b"])
        assert r.exit_code == 2 and "sliding_window" in r.output and len(r.output.strip().splitlines()) == 1, r.output
