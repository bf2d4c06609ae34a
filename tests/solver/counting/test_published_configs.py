"""The published config.json of a preset, read through ``--config``, gives the preset's figures.

The files are the publishers' own (tests/solver/counting/configs/README.md says where each copy came
from). The preset is written by hand from the model's paper or card; the file is read by the
config.json reader: two routes to one model, and the published figure checks both. A third,
independent count: transformers builds each model from the same file on the meta device.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.counting import kv_cache_bytes_cfg, param_breakdown
from solver.counting.config_json import read_hf_config
from solver.counting.presets import PRESETS
from solver.errors import SolverInputError

CONFIGS = Path(__file__).parent / "configs"
FILES = {
    "qwen2.5-7b": "qwen2.5-7b.json",
    "qwen3-30b-a3b": "qwen3-30b-a3b.json",
    "gpt-oss-20b": "gpt-oss-20b.json",
    # the -Instruct checkpoint's file: same shape as the base model's (see configs/README.md)
    "qwen2.5-72b": "qwen2.5-72b-instruct.json",
    "gpt-oss-120b": "gpt-oss-120b.json",
    "deepseek-v3": "deepseek-v3.json",
    "llama3-70b": "llama3-70b.json",
    "llama3.1-405b": "llama3.1-405b.json",
    "gemma2-9b": "gemma-2-9b.json",
    # transformers 5's rendering of the Hub file (rope_parameters for rope_theta; see configs/README.md)
    "gemma2-27b": "gemma-2-27b.json",
    "phi3-mini": "phi-3-mini-4k-instruct.json",
    "olmo2-7b": "olmo-2-1124-7b-instruct.json",  # the -Instruct checkpoint's file (see configs/README.md)
    "gemma3-1b": "corpus/gemma-3-1b-it.json",  # issue 37 (source: configs/corpus/SOURCES.md)
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_config_file_gives_the_preset_figures(name):
    """Total and active parameters, and the KV cache at 32768 tokens (window included), are the
    preset's; the total is within the preset's explained distance of the published figure."""
    preset = PRESETS[name]
    cfg, _ = read_hf_config(CONFIGS / FILES[name])
    mine, theirs = param_breakdown(cfg), param_breakdown(preset.config)
    assert (mine.total, mine.active) == (theirs.total, theirs.active)
    assert abs(mine.total - preset.published) <= preset.tolerance * preset.published
    assert kv_cache_bytes_cfg(cfg, 1, 32768) == kv_cache_bytes_cfg(preset.config, 1, 32768)


@pytest.mark.parametrize("name", sorted(FILES))
def test_cli_config_route_answers_the_preset_count(name):
    """``qkv solve params --config FILE --json`` answers what ``--preset NAME`` answers."""
    runner = CliRunner()
    by_file = runner.invoke(cli, ["solve", "params", "--config", str(CONFIGS / FILES[name]), "--json"])
    by_preset = runner.invoke(cli, ["solve", "params", "--preset", name, "--json"])
    assert by_file.exit_code == 0 and by_preset.exit_code == 0, by_file.output + by_preset.output
    answer = [json.loads(line)["answer"] for line in (by_file.stdout, by_preset.stdout)]
    assert answer[0] == answer[1] == PRESETS[name].exact()


def test_phi3_attention_bias_false_is_read_and_true_refused():
    """Phi-3's published file says ``"attention_bias": false``; transformers' Phi3 builds no attention
    biases whatever the key says, so ``false`` is read and ``true`` refused by name (never counted)."""
    raw = json.loads((CONFIGS / FILES["phi3-mini"]).read_text())
    assert raw["attention_bias"] is False
    cfg, _ = read_hf_config(raw)
    assert param_breakdown(cfg).total == PRESETS["phi3-mini"].exact()
    with pytest.raises(SolverInputError, match="attention_bias"):
        read_hf_config({**raw, "attention_bias": True})


#: keys transformers' config classes take as metadata or remote code, not as arguments that shape the model
_NOT_ARGUMENTS = ("auto_map", "_name_or_path", "quantization_config", "model_type")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FILES))
def test_published_file_against_transformers_meta(name):
    """transformers builds each model from its published file (meta device, nothing downloaded) with
    exactly the parameters the file gives through ``--config``; Phi-3 without any bias tensor."""
    transformers = pytest.importorskip("transformers", minversion="5.0")
    torch = pytest.importorskip("torch")
    transformers.logging.set_verbosity_error()
    raw = json.loads((CONFIGS / FILES[name]).read_text())
    hf_config = transformers.AutoConfig.for_model(raw["model_type"],
                                                  **{k: v for k, v in raw.items() if k not in _NOT_ARGUMENTS})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    cfg, _ = read_hf_config(raw)
    assert param_breakdown(cfg).total == sum(p.numel() for p in model.parameters())
    if name == "phi3-mini":
        assert not any(n.endswith(".bias") for n, _ in model.named_parameters())


def test_gemma3_4b_preset_is_the_language_model_of_the_published_file():
    """google/gemma-3-4b-it's file names Gemma3ForConditionalGeneration (qkv counts it with transformers); the
    ``gemma3-4b`` preset is its language model: the preset's count equals transformers' Gemma3ForCausalLM
    built from the file's ``text_config`` (its defaults filling what the file leaves out) and the text part
    of the whole-checkpoint count; non-embedding parameters are the Gemma 3 report's 3,209M (Table 1) and
    the vision tower its 417M; the KV cache at 32,768 tokens is the one transformers' config gives."""
    transformers = pytest.importorskip("transformers", minversion="5.0")
    torch = pytest.importorskip("torch")
    from solver.counting.hf_meta import count_with_transformers, kv_layout

    raw = json.loads((CONFIGS / "corpus" / "gemma-3-4b-it.json").read_text())
    text = transformers.Gemma3TextConfig.from_dict(raw["text_config"])
    with torch.device("meta"):
        lm = transformers.Gemma3ForCausalLM(text)
    preset = PRESETS["gemma3-4b"]
    whole = count_with_transformers(raw)
    assert preset.exact() == sum(p.numel() for p in lm.parameters()) == whole.parts["text model"]
    non_embedding = preset.exact() - text.vocab_size * text.hidden_size
    assert abs(non_embedding - 3_209_000_000) < 500_000 and abs(whole.parts["vision tower"] - 417_000_000) < 500_000
    layout = sum(b for _, b, _ in kv_layout(raw).bytes(1, 32768, 2))
    assert kv_cache_bytes_cfg(preset.config, 1, 32768, "bf16") == layout
