"""Issue 37: the KV cache of every model type in the corpus of published config.json files
(configs/*.json and configs/corpus/*.json), against the cache transformers builds.

For each model type, the corpus's first file of that type is shrunk by the rule in ``SHRINK`` below (data,
not code: layers, heads, widths and experts made tiny; the attention pattern kept: ``layer_types`` cut to
the tiny depth, the window made ``W``, the ratio of query heads to KV heads, latent ranks, the
state-space layers and their period). The class the file names is built from the tiny file on the CPU
with random weights; it runs a prefill of ``n − 1 > W`` tokens and one decode step, and the bytes of the
keys and values its cache then holds (every cache layer's ``keys``/``values``, or a hybrid cache's
``key_cache``/``value_cache``) are compared with qkv's answer to

    qkv solve memory --what kv-cache --config TINY.json --batch B --seq n --dtype fp32 --json

(the command a user runs on the real file: qkv's native reader for the types it reads, transformers'
config for the others). As in test_kv_cache_against_transformers.py, transformers' sliding-window layer
keeps ``W − 1`` positions besides the new token where qkv counts a rolling buffer of ``W`` (Mistral 7B
§2): qkv is asked about the same tiny file with ``sliding_window`` (Llama 4: ``attention_chunk_size``) ``W − 1``.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers", minversion="5.0")
torch = pytest.importorskip("torch")

from drills.cli import cli  # noqa: E402

transformers.logging.set_verbosity_error()

HERE = Path(__file__).parent / "configs"
W, BATCH, N = 3, 2, 7  # window, sequences, positions (n − 1 > W: every windowed layer is full)

#: The text model made tiny: keys set wherever the file (or its ``text_config``) has them.
TINY_TEXT = {"hidden_size": 16, "intermediate_size": 8, "moe_intermediate_size": 8, "shared_expert_intermediate_size": 8,
             "intermediate_size_mlp": 8, "vocab_size": 32, "max_position_embeddings": 64, "n_positions": 64,
             "n_embd": 16, "n_inner": 8, "max_window_layers": 1, "num_experts": 4, "num_local_experts": 4,
             "n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
             "first_k_dense_replace": 1, "kv_lora_rank": 6, "qk_rope_head_dim": 2, "qk_nope_head_dim": 4,
             "v_head_dim": 4, "mamba_d_state": 4, "mamba_dt_rank": 2, "state_size": 4, "time_step_rank": 2,
             "rotary_dim": 4, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
#: The vision tower made tiny (built, never run: the forward is text only).
TINY_VISION = {"hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
               "depth": 1, "num_heads": 2, "projection_dim": 16, "image_size": 28, "patch_size": 14, "head_dim": 8}

#: Per model type: ``layers`` (the tiny depth: a multiple of the file's period of local/global or
#: attention/state-space layers), ``head_dim`` (wide enough for partial rotary), ``kv`` (tiny KV heads;
#: query heads keep the file's ratio up to 4), and ``set``/``drop`` (keys the tiny model needs set or
#: removed, each with its reason), ``vision`` (keys of the tiny vision tower), ``forward`` (the submodule
#: that runs, where the class's own forward cannot), ``no_cache`` (why the type has none to compare).
SHRINK: dict[str, dict] = {
    "bert": {"no_cache": "an encoder: no KV cache (qkv refuses the question in one line)"},
    "cohere": {}, "gemma": {}, "gpt_neox": {}, "llama": {}, "mistral": {}, "mixtral": {}, "olmo2": {},
    "qwen2": {}, "qwen3": {}, "qwen3_moe": {}, "qwen2_moe": {}, "starcoder2": {}, "gpt2": {}, "gpt_bigcode": {},
    "gptj": {},
    "gpt_oss": {"layers": 2},  # sliding, full
    "gemma2": {"layers": 2},  # sliding, full
    "gemma3_text": {"layers": 6},  # 5 sliding : 1 full (sliding_window_pattern 6)
    "gemma3": {"layers": 6, "set": {"mm_tokens_per_image": 4}, "vision": {"head_dim": 8}},  # 2×2 image tokens of 2×2 patches
    "phi3": {"drop": ["rope_scaling"]},  # longrope factors are per rotary frequency of the real head_dim
    "stablelm": {"head_dim": 8},  # partial_rotary_factor 0.25 of a head of 8: 2 rotary dims
    "deepseek_v2": {"layers": 2, "set": {"q_lora_rank": None}},  # one dense layer, one MoE layer
    "deepseek_v3": {"layers": 2, "set": {"q_lora_rank": 5}},
    "kimi_k2": {"layers": 2, "set": {"q_lora_rank": 5, "head_dim": 2}},  # the copy's head_dim is its rotary width
    "jamba": {"layers": 8, "set": {"attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
                                   "expert_layer_offset": 1, "use_mamba_kernels": False}},
    "falcon_mamba": {"layers": 2, "set": {"expand": 2}},
    "exaone4": {"layers": 4},  # 3 sliding : 1 full (sliding_window_pattern 4)
    "llama4": {"layers": 4, "set": {"attention_chunk_size": W},  # 3 chunked : 1 global NoPE, MoE every 2nd layer
               "vision": {"projector_input_dim": 16, "projector_output_dim": 16, "vision_output_dim": 16},
               # transformers 5.24's Llama4ForConditionalGeneration.forward fails on every input (it reads
               # image_outputs from its language model's output); the class's own language_model runs the decoder
               "forward": "language_model"},
    "llava": {"layers": 2},
    "mistral3": {"layers": 2, "vision": {"head_dim": 8}},
    "qwen2_5_vl": {"head_dim": 8, "set": {"rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]}},
                   "vision": {"out_hidden_size": 32, "fullatt_block_indexes": [0], "window_size": 28}},
    "glm4v_moe": {"head_dim": 8, "set": {"rope_scaling": {"rope_type": "default", "mrope_section": [1, 0, 1]}},
                  "vision": {"out_hidden_size": 32}},
    "smollm3": {"layers": 4, "set": {"no_rope_layers": [1, 1, 1, 0]}},  # NoPE every 4th layer, as the file's 36
    "olmoe": {},
    "glm4_moe": {"layers": 2},  # one dense layer, one MoE layer
    # 3 Gated DeltaNet layers : 1 full-attention layer (full_attention_interval 4); the linear heads made tiny
    "qwen3_next": {"layers": 4, "head_dim": 8, "set": {"linear_num_key_heads": 2, "linear_num_value_heads": 4,
                                                       "linear_key_head_dim": 4, "linear_value_head_dim": 4}},
    # one Mamba-2 layer, one attention layer, one MLP layer (the file's M, *, - of hybrid_override_pattern)
    "nemotron_h": {"layers": 3, "set": {"hybrid_override_pattern": "M*-", "attention_head_dim": 4, "mamba_num_heads": 4,
                                        "mamba_head_dim": 4, "n_groups": 1, "ssm_state_size": 4, "chunk_size": 4,
                                        "use_mamba_kernels": False}},
    "minimax_m2": {"set": {"rotary_dim": 2, "attn_type_list": [1, 1]}, "drop": ["quantization_config"]},
    # latent attention: the cache keeps c_KV (kv_lora_rank) and the RoPE key per position, and DeepSeek-V3.2's
    # indexer its own key (index_head_dim)
    "deepseek_v32": {"layers": 2, "set": {"q_lora_rank": 5, "index_n_heads": 2, "index_head_dim": 4, "index_topk": 4},
                     "drop": ["quantization_config"]},
    "glm4_moe_lite": {"layers": 2, "set": {"q_lora_rank": 5}},
    # Kimi-K2.5: DeepSeek-V3's latent attention under a vision-language wrapper whose remote-code class name
    # (KimiK25ForConditionalGeneration) transformers spells Kimi_K25ForConditionalGeneration
    "kimi_k25": {"class": "Kimi_K25ForConditionalGeneration", "layers": 2, "set": {"q_lora_rank": 5},
                 "drop": ["quantization_config"],
                 "vision": {"vt_hidden_size": 16, "vt_intermediate_size": 8, "vt_num_attention_heads": 2,
                            "vt_num_hidden_layers": 1, "mm_hidden_size": 16, "init_pos_emb_height": 4,
                            "init_pos_emb_width": 4, "text_hidden_size": 8}},
    "qwen3_vl_moe": {"head_dim": 8, "set": {"rope_scaling": {"rope_type": "default", "mrope_section": [2, 1, 1],
                                                             "mrope_interleaved": True}},
                     "vision": {"out_hidden_size": 32, "depth": 1, "deepstack_visual_indexes": [0]}},
    # compressed sparse attention (compress_ratios 4 and 128 beside a 128-token window, an indexer on the ratio-4
    # layers): a cache layout qkv does not derive; refused in one line naming the layer kind
    "deepseek_v4": {"refused": "heavily_compressed_attention"},
    "glm_moe_dsa": {"layers": 2, "set": {"q_lora_rank": 5, "index_n_heads": 2, "index_head_dim": 4, "index_topk": 4,
                                         "qk_head_dim": 6, "head_dim": 2}},  # the file's head_dim is its RoPE width
    # 3 Kimi Delta Attention layers : 1 latent-attention layer (linear_attn_config, 1-based layer numbers)
    "kimi_linear": {"layers": 4, "set": {"head_dim": 4, "num_experts_per_token": 2, "linear_attn_config": {
        "full_attn_layers": [4], "kda_layers": [1, 2, 3], "head_dim": 4, "num_heads": 2, "short_conv_kernel_size": 4}}},
    "qwen3_5": {"layers": 4, "head_dim": 8, "set": {"linear_num_key_heads": 2, "linear_num_value_heads": 4,
                                                    "linear_key_head_dim": 4, "linear_value_head_dim": 4,
                                                    "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 0],
                                                                        "partial_rotary_factor": 0.25}},
                "vision": {"out_hidden_size": 32, "depth": 1}},
    "qwen3_5_moe": {"layers": 4, "head_dim": 8, "set": {"linear_num_key_heads": 2, "linear_num_value_heads": 4,
                                                        "linear_key_head_dim": 4, "linear_value_head_dim": 4,
                                                        "rope_parameters": {"rope_type": "default",
                                                                            "mrope_section": [1, 1, 0],
                                                                            "partial_rotary_factor": 0.25}},
                    "vision": {"out_hidden_size": 32, "depth": 1}},
    # 5 sliding : 1 full; full layers of num_global_key_value_heads × global_head_dim, K shared as V (attention_k_eq_v)
    "gemma4": {"layers": 6, "set": {"global_head_dim": 8, "num_global_key_value_heads": 1},
               "vision": {"head_dim": 8, "global_head_dim": 8, "position_embedding_size": 64}},
}


def _first_file_of_each_type() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(HERE.glob("*.json")) + sorted((HERE / "corpus").glob("*.json")):
        out.setdefault(json.loads(path.read_text())["model_type"], path)
    return out


FILES = _first_file_of_each_type()


def shrink(raw: dict, rule: dict) -> dict:
    """The tiny file of ``raw`` by ``rule`` (see ``SHRINK``); same classes, same attention pattern."""
    raw = copy.deepcopy(raw)
    text = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    layers = rule.get("layers", 2)
    # heads as transformers reads the file (its defaults where the file is silent)
    conf = named_class(raw, rule).config_class.from_dict(
        {k: v for k, v in raw.items() if k != "model_type"}).get_text_config()
    def get(name):  # transformers 5.2x refuses a global read of a per-layer attribute (Gemma 4's KV heads)
        try:
            return getattr(conf, name, None)
        except Exception:  # noqa: BLE001
            return getattr(conf.per_layer_config[0], name, None)

    heads = get("num_attention_heads") or get("n_head") or 1  # 1: no attention
    kv_file = get("num_key_value_heads") or (1 if get("multi_query") else heads)
    kv = rule.get("kv", min(kv_file, 2))
    heads_tiny = kv * min(heads // kv_file, 4)
    head_dim = rule.get("head_dim", 4)
    for key, value in TINY_TEXT.items():
        if key in text:
            text[key] = value
    text.update({"num_hidden_layers": layers, "num_attention_heads": heads_tiny, "hidden_size": heads_tiny * head_dim})
    if "n_layer" in text or "n_head" in text:  # GPT-2 / GPT-J / GPTBigCode names
        text.update({"n_layer": layers, "n_head": heads_tiny, "n_embd": heads_tiny * head_dim})
        text.pop("num_hidden_layers"), text.pop("num_attention_heads"), text.pop("hidden_size")
    if "num_key_value_heads" in text or kv != kv_file:
        text["num_key_value_heads"] = kv
    if "head_dim" in text or text.get("model_type") in ("gemma3_text", "gemma2", "gemma"):
        text["head_dim"] = head_dim
    if text.get("sliding_window") is not None:
        text["sliding_window"] = W
    if isinstance(text.get("layer_types"), list):
        text["layer_types"] = text["layer_types"][:layers]
    if isinstance(text.get("mlp_only_layers"), list):
        text["mlp_only_layers"] = [i for i in text["mlp_only_layers"] if i < layers]
    for key in rule.get("drop", ()):
        text.pop(key, None), raw.pop(key, None)
    for key, value in rule.get("set", {}).items():
        (raw if key in raw and key not in text else text)[key] = value
    if isinstance(raw.get("vision_config"), dict):
        vision, extra = raw["vision_config"], rule.get("vision", {})
        for key, value in {**TINY_VISION, **extra}.items():
            if key in vision or key in extra:
                vision[key] = value
        vision["hidden_size"] = TINY_VISION["hidden_size"]
        if "out_hidden_size" in vision:
            vision["out_hidden_size"] = text["hidden_size"]
    for key in ("image_token_index", "image_token_id", "video_token_id"):
        if key in raw:
            raw[key] = 1
    for conf in (raw, text, raw.get("vision_config") or {}):  # fp32 throughout: the question asks fp32
        conf.pop("torch_dtype", None), conf.pop("dtype", None)
    return raw


def named_class(raw: dict, rule: dict) -> type:
    """The class the file names, or the one its rule gives (``class``: a remote-code name transformers spells
    otherwise)."""
    return getattr(transformers, rule.get("class", raw["architectures"][0]))


def measured_cache(raw: dict, forward: str | None = None, rule: dict | None = None) -> int:
    """Bytes of keys and values in transformers' cache after a prefill of N − 1 tokens and one decode step
    (of the class the file names, or of its submodule ``forward``)."""
    cls = named_class(raw, rule or {})
    conf = cls.config_class.from_dict({k: v for k, v in raw.items() if k != "model_type"})
    torch.manual_seed(0)
    model = cls(conf).eval()
    if forward:
        model = getattr(model, forward)
    ids = torch.zeros(BATCH, N, dtype=torch.long)
    with torch.no_grad():
        out = model(input_ids=ids[:, : N - 1], use_cache=True)
        out = model(input_ids=ids[:, N - 1:], past_key_values=out.past_key_values, use_cache=True)
    cache = out.past_key_values
    tensors, indexer = [], []
    for layer in getattr(cache, "layers", ()):
        tensors += [getattr(layer, "keys", None), getattr(layer, "values", None)]
        indexer.append(getattr(layer, "indexer_keys", None))  # DeepSeek-V3.2's sparse-attention indexer: (B, n, d)
    tensors += list(getattr(cache, "key_cache", ())) + list(getattr(cache, "value_cache", ()))
    return (sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor) and t.dim() == 4)
            + sum(t.numel() * t.element_size() for t in indexer if isinstance(t, torch.Tensor)))


def qkv_answer(raw: dict, tmp_path: Path) -> int:
    """qkv's KV cache of the tiny file (window W − 1: transformers' convention, see the module docstring)."""
    raw = copy.deepcopy(raw)
    text = raw["text_config"] if isinstance(raw.get("text_config"), dict) else raw
    for key in ("sliding_window", "attention_chunk_size"):  # a chunk is a window for the cache (llama4)
        if text.get(key) is not None:
            text[key] -= 1
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--config", str(path), "--batch", str(BATCH),
                                 "--seq", str(N), "--dtype", "fp32", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["answer"]


def test_every_type_in_the_corpus_has_a_shrink_rule():
    assert sorted(FILES) == sorted(SHRINK)


@pytest.mark.parametrize("kind", sorted(k for k in FILES if not {"no_cache", "refused"} & set(SHRINK.get(k, {}))))
def test_kv_cache_of_each_corpus_type_equals_transformers_cache(kind, tmp_path):
    raw = shrink(json.loads(FILES[kind].read_text()), SHRINK[kind])
    assert qkv_answer(raw, tmp_path) == measured_cache(raw, SHRINK[kind].get("forward"), SHRINK[kind]), (
        kind, FILES[kind].name)


@pytest.mark.parametrize("kind", sorted(k for k in FILES if "refused" in SHRINK.get(k, {})))
def test_a_cache_layout_qkv_does_not_derive_is_refused_in_one_line(kind, tmp_path):
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--config", str(FILES[kind]), "--batch", "1",
                                 "--seq", "8", "--dtype", "bf16"])
    errors = [line for line in r.output.splitlines() if line.startswith("qkv: error:")]
    assert r.exit_code == 2 and len(errors) == 1 and SHRINK[kind]["refused"] in errors[0], r.output
    assert "Traceback" not in r.output


def test_an_encoder_in_the_corpus_is_refused_in_one_line(tmp_path):
    """BERT (all-MiniLM-L6-v2): no KV cache; the question is refused in one error line (after the reader's notes)."""
    raw = json.loads(FILES["bert"].read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--config", str(path), "--batch", "1",
                                 "--seq", "8", "--dtype", "fp32"])
    errors = [line for line in r.output.splitlines() if line.startswith("qkv: error:")]
    assert r.exit_code == 2 and len(errors) == 1 and "an encoder has no KV cache" in errors[0], r.output


#: Corpus files added for model types of 2025-2026 (hybrids, latent attention, per-layer KV shapes, MTP): their KV
#: cache at 4,096 tokens in bf16, worked out below from the file's own keys alone (no transformers config, no qkv code).
FROM_THE_FILE = ["smollm3-3b.json", "olmoe-1b-7b-0125-instruct.json", "qwen3-next-80b-a3b-instruct.json",
                 "glm-4.5-air.json", "nemotron-h-8b-base-8k.json", "minimax-m2.7.json", "deepseek-v3.2.json",
                 "glm-4.7-flash.json", "kimi-linear-48b-a3b-instruct.json", "qwen3.5-4b.json", "qwen3.5-35b-a3b.json",
                 "gemma-4-31b-it.json", "glm-5.1.json", "qwen3-vl-30b-a3b-instruct.json",
                 "kimi-k2.5.json"]


def layer_kinds_of(text: dict) -> list[str]:
    """Per layer, "full", "sliding" or "none" (no KV cache), read from the file as its model card describes it:
    Nemotron-H's ``hybrid_override_pattern`` (``*`` attention, ``M`` Mamba-2, ``-`` MLP), Kimi-Linear's
    ``linear_attn_config.full_attn_layers`` (numbered from 1; the rest Kimi Delta Attention), ``layer_types``
    where given (linear attention keeps none), Qwen3-Next's ``full_attention_interval`` (every k-th layer full, the
    rest Gated DeltaNet), else every layer full."""
    n = text["num_hidden_layers"]
    if "hybrid_override_pattern" in text:
        assert len(text["hybrid_override_pattern"]) == n
        return ["full" if c == "*" else "none" for c in text["hybrid_override_pattern"]]
    if "linear_attn_config" in text:
        full = {i - 1 for i in text["linear_attn_config"]["full_attn_layers"]}
        return ["full" if i in full else "none" for i in range(n)]
    if "layer_types" in text:
        assert len(text["layer_types"]) == n
        return [{"full_attention": "full", "sliding_attention": "sliding"}.get(t, "none") for t in text["layer_types"]]
    if "full_attention_interval" in text:
        return ["full" if (i + 1) % text["full_attention_interval"] == 0 else "none" for i in range(n)]
    return ["full"] * n


def cache_bytes_from_the_file(raw: dict, seq: int = 4096, elem: int = 2) -> int:
    """Batch 1. A GQA layer keeps K and V (2) × KV heads × head size per position (a sliding layer at most
    ``sliding_window`` positions); Gemma 4's full layers use ``num_global_key_value_heads`` × ``global_head_dim``.
    A latent-attention layer (``kv_lora_rank``, DeepSeek-V2 §2.1) keeps one vector of kv_lora_rank +
    qk_rope_head_dim per position, DeepSeek-V3.2's also its indexer key (``index_head_dim``). Head size:
    ``head_dim`` (Nemotron-H: ``attention_head_dim``), else hidden_size / num_attention_heads."""
    text = raw.get("text_config") or raw
    heads = text["num_attention_heads"]
    kv = text.get("num_key_value_heads") or heads
    head = text.get("head_dim") or text.get("attention_head_dim") or text["hidden_size"] // heads
    total = 0
    for kind in layer_kinds_of(text):
        if kind == "none":
            continue
        pos = min(seq, text["sliding_window"]) if kind == "sliding" else seq
        if text.get("kv_lora_rank"):
            total += pos * (text["kv_lora_rank"] + text["qk_rope_head_dim"] + text.get("index_head_dim", 0)) * elem
        elif kind == "full" and text.get("global_head_dim"):
            total += 2 * pos * text["num_global_key_value_heads"] * text["global_head_dim"] * elem
        else:
            total += 2 * pos * kv * head * elem
    return total


@pytest.mark.parametrize("name", FROM_THE_FILE)
def test_kv_cache_at_4096_tokens_is_what_the_file_says(name):
    path = HERE / "corpus" / name
    expected = cache_bytes_from_the_file(json.loads(path.read_text()))
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--config", str(path), "--seq", "4096",
                                 "--batch", "1", "--dtype", "bf16", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answer"] == expected, (name, expected)


def test_the_worked_cache_of_three_files_by_hand():
    """The rule above, pinned on three files by hand: Qwen3-Next 12 full layers × 2 KV heads × 256 (the other 36
    Gated DeltaNet); Gemma 4 31B 50 sliding layers × min(4096, 1024) × 16 × 256 and 10 full × 4096 × 4 × 512;
    DeepSeek-V3.2 61 layers × 4096 × (512 + 64 + 128)."""
    read = lambda n: json.loads((HERE / "corpus" / n).read_text())  # noqa: E731
    assert cache_bytes_from_the_file(read("qwen3-next-80b-a3b-instruct.json")) == 2 * 12 * 2 * 256 * 4096 * 2
    assert cache_bytes_from_the_file(read("gemma-4-31b-it.json")) == (2 * 50 * 1024 * 16 * 256 + 2 * 10 * 4096 * 4 * 512) * 2
    assert cache_bytes_from_the_file(read("deepseek-v3.2.json")) == 61 * 4096 * (512 + 64 + 128) * 2
