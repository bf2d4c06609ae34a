"""``qkv solve params --config`` for T5 and ViT config.json files (solver.counting.config_json.t5_vit), through
click's CliRunner, against HuggingFace's models built from the same config on the meta device
(numel, to the integer). The files are written from ``transformers``' config classes
(``to_dict()``); nothing is downloaded.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
transformers = pytest.importorskip("transformers", minversion="4.45")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from drills.cli import cli  # noqa: E402
from solver.counting.config_json.t5_vit import read_hf_own_config  # noqa: E402
from solver.errors import SolverInputError  # noqa: E402

transformers.logging.set_verbosity_error()


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", "params", *args], catch_exceptions=False)


def cli_count(tmp_path, raw: dict) -> dict:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw, default=str))
    result = run("--config", str(path), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def numel(model) -> int:
    return sum(p.numel() for p in model.parameters())


def hf_t5_numel(hc, tied: bool) -> int:
    """T5ForConditionalGeneration on the meta device; an untied head (a v1.1 checkpoint's own V × d,
    as transformers < 5 builds it) is given its own tensor where transformers ≥ 5 ties it anyway."""
    with torch.device("meta"):
        m = transformers.T5ForConditionalGeneration(hc)
        if not tied and m.lm_head.weight is m.shared.weight:
            m.lm_head.weight = nn.Parameter(torch.empty(hc.vocab_size, hc.d_model))
    return numel(m)


def t5_file(hc, tied: bool, arch: str | None = None) -> dict:
    raw = hc.to_dict()
    raw["tie_word_embeddings"] = tied  # as the v1.0 / v1.1 files on the Hub say
    if arch:
        raw["architectures"] = [arch]
    return raw


def hf_vit_numel(hc, arch: str | None) -> int:
    with torch.device("meta"):
        m = (transformers.ViTForImageClassification(hc) if arch == "ViTForImageClassification"
             else transformers.ViTModel(hc))  # ViTModel(config): with its pooler, as AutoModel builds it
    return numel(m)


def vit_file(hc, arch: str | None) -> dict:
    raw = hc.to_dict()
    if arch:
        raw["architectures"] = [arch]
    return raw


@given(d_kv=st.integers(1, 6), h=st.integers(1, 3), d=st.integers(1, 12), d_ff=st.integers(1, 12),
       le=st.integers(1, 3), ld=st.sampled_from([None, 1, 2]), nb=st.integers(1, 16),
       proj=st.sampled_from(["relu", "gelu", "gated-gelu", "gated-silu"]), tied=st.booleans(),
       vocab=st.integers(5, 40), arch=st.sampled_from([None, "T5ForConditionalGeneration", "T5WithLMHeadModel"]))
def test_t5_config_json_counts_as_huggingface_hypo(tmp_path_factory, d_kv, h, d, d_ff, le, ld, nb, proj, tied,
                                                   vocab, arch):
    hc = transformers.T5Config(vocab_size=vocab, d_model=d, d_kv=d_kv, num_heads=h, d_ff=d_ff, num_layers=le,
                               num_decoder_layers=ld, relative_attention_num_buckets=nb, feed_forward_proj=proj)
    out = cli_count(tmp_path_factory.mktemp("t5"), t5_file(hc, tied, arch))
    assert out["answer"] == hf_t5_numel(hc, tied)
    assert out["breakdown"]["relative_bias"] == 2 * nb * h  # one table per stack, read from the file
    assert out["convention"]["config"]["gated_ffn"] == proj.startswith("gated")


@pytest.mark.parametrize("name,kw,tied", [
    ("t5-small", {}, True),
    ("t5-base", dict(d_model=768, num_heads=12, d_ff=3072, num_layers=12), True),
    ("t5-v1_1-base", dict(d_model=768, num_heads=12, d_ff=2048, num_layers=12, feed_forward_proj="gated-gelu"),
     False)])
def test_t5_small_base_config_json_count_as_huggingface(tmp_path, name, kw, tied):
    hc = transformers.T5Config(**kw)  # transformers' defaults are t5-small's shapes
    out = cli_count(tmp_path, t5_file(hc, tied, "T5ForConditionalGeneration"))
    assert out["answer"] == hf_t5_numel(hc, tied)
    assert out["breakdown"]["lm_head"] == (0 if tied else hc.vocab_size * hc.d_model)


@given(image=st.sampled_from([4, 8, 12, 16]), patch=st.sampled_from([1, 2, 4]), channels=st.integers(1, 3),
       h=st.integers(1, 3), d_head=st.integers(1, 4), layers=st.integers(1, 2), d_ff=st.integers(1, 12),
       labels=st.integers(0, 5), arch=st.sampled_from([None, "ViTModel", "ViTForImageClassification"]))
def test_vit_config_json_counts_as_huggingface_hypo(tmp_path_factory, image, patch, channels, h, d_head, layers,
                                                    d_ff, labels, arch):
    hc = transformers.ViTConfig(image_size=image, patch_size=patch, num_channels=channels, hidden_size=h * d_head,
                                num_attention_heads=h, num_hidden_layers=layers, intermediate_size=d_ff,
                                num_labels=labels, encoder_stride=patch)
    out = cli_count(tmp_path_factory.mktemp("vit"), vit_file(hc, arch))
    assert out["answer"] == hf_vit_numel(hc, arch)
    classify = arch == "ViTForImageClassification"
    assert out["breakdown"]["classifier"] == (labels * (h * d_head + 1) if classify else 0)


@pytest.mark.parametrize("arch", [None, "ViTModel", "ViTForImageClassification"])
def test_vit_b16_config_json_counts_as_huggingface(tmp_path, arch):
    hc = transformers.ViTConfig(num_labels=1000)  # transformers' defaults are ViT-B/16 at 224²
    out = cli_count(tmp_path, vit_file(hc, arch))
    assert out["answer"] == hf_vit_numel(hc, arch)
    # Dosovitskiy et al. 2021, Table 1: ViT-Base 86M parameters
    assert round(out["answer"] / 1e6) in (86, 87)


def test_a_square_list_image_size_reads_as_its_side():
    raw = transformers.ViTConfig(hidden_size=8, num_attention_heads=2).to_dict()
    cfg, _ = read_hf_own_config({**raw, "image_size": [32, 32], "patch_size": [8, 8]})
    assert (cfg.image_size, cfg.patch_size) == (32, 8)


def test_every_key_is_read_named_or_refused_in_one_line(tmp_path):
    t5 = t5_file(transformers.T5Config(d_model=8, d_kv=2, num_heads=2, d_ff=4, num_layers=1), True)
    vit = transformers.ViTConfig(hidden_size=8, num_attention_heads=2).to_dict()
    cases = [({**t5, "mystery_field": 1}, "mystery_field"),
             ({**t5, "architectures": ["T5EncoderModel"]}, "T5EncoderModel"),
             ({**t5, "feed_forward_proj": "gelu-gated"}, "feed_forward_proj"),
             ({**t5, "is_gated_act": True}, "is_gated_act"),
             ({**vit, "qkv_bias": False}, "qkv_bias"),
             ({**vit, "architectures": ["ViTForMaskedImageModeling"]}, "ViTForMaskedImageModeling"),
             ({**vit, "pooler_output_size": 5}, "pooler_output_size"),
             ({**vit, "image_size": [32, 16]}, "image_size")]
    for raw, name in cases:
        with pytest.raises(SolverInputError) as e:
            read_hf_own_config(raw)
        assert name in str(e.value) and "\n" not in str(e.value)
        path = tmp_path / "config.json"
        path.write_text(json.dumps(raw))
        result = run("--config", str(path))
        assert result.exit_code != 0 and name in result.output and "Traceback" not in result.output
    _, notes = read_hf_own_config(t5)
    assert any("relative_attention_max_distance" in n and "dropout_rate" in n for n in notes)  # named, not dropped
    _, notes = read_hf_own_config(vit)
    assert any("encoder_stride" in n and "layer_norm_eps" in n for n in notes)


def test_model_flags_and_other_commands_refuse_a_t5_file_in_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(transformers.T5Config().to_dict()))
    for args in (["--d-model", "64"], ["--no-embeddings"], ["--preset", "gpt2"]):
        result = run("--config", str(path), *args)
        assert result.exit_code != 0 and result.output.count("\n") == 1, result.output
    result = CliRunner().invoke(cli, ["solve", "flops", "--config", str(path), "--seq", "8"])
    assert result.exit_code != 0 and "own T5 parameter count" in result.output
    shown = run("--config", str(path), "--explain")
    assert shown.exit_code == 0
    assert all(w in shown.stdout for w in ("answer:", "breakdown:", "worked solution:", "conventions:"))


# Files as the Hub holds them (keys of google-t5/t5-small, google/t5-v1_1-base and
# google/vit-base-patch16-224, written out here; values are their published shapes).
T5_SMALL_HUB = {"architectures": ["T5WithLMHeadModel"], "d_ff": 2048, "d_kv": 64, "d_model": 512,
                "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1, "initializer_factor": 1.0,
                "is_encoder_decoder": True, "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512,
                "num_heads": 8, "num_layers": 6, "output_past": True, "pad_token_id": 0,
                "relative_attention_num_buckets": 32, "task_specific_params": {"summarization": {"prefix": "x"}},
                "vocab_size": 32128}
T5_V11_BASE_HUB = {"architectures": ["T5ForConditionalGeneration"], "d_ff": 2048, "d_kv": 64, "d_model": 768,
                   "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1,
                   "feed_forward_proj": "gated-gelu", "initializer_factor": 1.0, "is_encoder_decoder": True,
                   "layer_norm_epsilon": 1e-06, "model_type": "t5", "num_decoder_layers": 12, "num_heads": 12,
                   "num_layers": 12, "output_past": True, "pad_token_id": 0, "relative_attention_num_buckets": 32,
                   "tie_word_embeddings": False, "vocab_size": 32128}
VIT_B16_HUB = {"architectures": ["ViTForImageClassification"], "attention_probs_dropout_prob": 0.0,
               "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "hidden_size": 768,
               "id2label": {str(i): f"class {i}" for i in range(1000)}, "image_size": 224,
               "initializer_range": 0.02, "intermediate_size": 3072,
               "label2id": {f"class {i}": i for i in range(1000)}, "layer_norm_eps": 1e-12, "model_type": "vit",
               "num_attention_heads": 12, "num_channels": 3, "num_hidden_layers": 12, "patch_size": 16,
               "qkv_bias": True, "transformers_version": "4.13.0.dev0"}


@pytest.mark.parametrize("raw", [T5_SMALL_HUB, T5_V11_BASE_HUB], ids=["t5-small", "t5-v1_1-base"])
def test_hub_style_t5_files_count_as_huggingface(tmp_path, raw):
    hc = transformers.T5Config(**{k: v for k, v in raw.items() if k != "model_type"})
    assert cli_count(tmp_path, raw)["answer"] == hf_t5_numel(hc, raw.get("tie_word_embeddings", True))


def test_hub_style_vit_b16_file_counts_as_huggingface(tmp_path):
    hc = transformers.ViTConfig(**{k: v for k, v in VIT_B16_HUB.items() if k != "model_type"})
    out = cli_count(tmp_path, VIT_B16_HUB)
    assert out["answer"] == hf_vit_numel(hc, "ViTForImageClassification")
    assert out["breakdown"]["classifier"] == 768 * 1000 + 1000


def test_non_positive_shapes_are_refused_naming_the_key():
    t5 = transformers.T5Config(d_model=8, d_kv=2, num_heads=2, d_ff=4, num_layers=1).to_dict()
    vit = transformers.ViTConfig(hidden_size=8, num_attention_heads=2).to_dict()
    for raw, key in (({**t5, "d_kv": 0}, "d_kv"), ({**t5, "num_heads": 2.5}, "num_heads"),
                     ({**vit, "patch_size": 0}, "patch_size"), ({**vit, "num_labels": -1}, "num_labels")):
        with pytest.raises(SolverInputError, match=key):
            read_hf_own_config(raw)
