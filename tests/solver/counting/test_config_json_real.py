"""Issue 20: real published config.json files (tests/solver/counting/configs/, sources in its README) are
read, every key accounted for; counts checked against transformers' own classes built on the meta device
(nothing downloaded); mutated files are refused in one line naming the key, or counted as before.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drills.cli import cli
from solver.counting import param_count
from solver.counting.config_json import read_hf_config
from solver.counting.presets import get_config
from solver.errors import SolverInputError

CONFIGS = Path(__file__).parent / "configs"
FILES = sorted(p.name for p in CONFIGS.glob("*.json"))


def raw(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def qkv(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_the_fixtures_are_the_files_named_in_the_readme():
    readme = (CONFIGS / "README.md").read_text()
    assert len(FILES) >= 7 and all(f"`{f}`" in readme for f in FILES)


@pytest.mark.parametrize("name", FILES)
def test_every_real_file_is_read_and_every_key_accounted_for(name):
    """Read, counted, and every key either read or named as without effect (the notes --explain lists)."""
    cfg, notes = read_hf_config(CONFIGS / name)
    assert param_count(cfg) > 0
    idle = next((n for n in notes if n.startswith("no effect on the counts: ")), "")
    listed = set(idle.removeprefix("no effect on the counts: ").split(", ")) if idle else set()
    for key in ("auto_map", "ep_size", "n_ctx", "task_specific_params", "n_special", "predict_special_tokens",
                "gradient_checkpointing", "use_cache", "torch_dtype", "bos_token_id"):
        if key in raw(name):
            assert key in listed, (name, key)


def test_explain_lists_the_ignored_keys():
    r = qkv("solve", "params", "--config", str(CONFIGS / "deepseek-v2.json"), "--explain")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("config file notes:"))
    for key in ("auto_map", "ep_size", "torch_dtype", "use_cache"):
        assert key in line


def test_published_figures():
    """GPT-2 small 124,439,808 and medium 354,823,168 (the GPT2LMHeadModel counts, tied head); Mistral-7B
    7,241,732,096 = the preset; DeepSeek-V2 within 0.2 % of its published 236B; all-MiniLM-L6-v2 22.7M."""
    count = {n: param_count(read_hf_config(CONFIGS / n)[0]) for n in FILES}
    assert count["gpt2.json"] == 124_439_808 and count["gpt2-medium.json"] == 354_823_168
    assert count["mistral-7b-v0.1.json"] == param_count(get_config("mistral-7b")) == 7_241_732_096
    assert abs(count["deepseek-v2.json"] / 236e9 - 1) < 0.002
    assert count["all-minilm-l6-v2.json"] == 22_713_216


def _hf_count(data: dict) -> int:
    import torch

    transformers = pytest.importorskip("transformers", minversion="4.45")
    transformers.logging.set_verbosity_error()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    kind = data["model_type"]
    conf = transformers.CONFIG_MAPPING[kind](**{k: v for k, v in data.items() if k not in ("auto_map",)})
    cls = {"gpt2": transformers.GPT2LMHeadModel, "bert": transformers.BertModel}.get(kind,
                                                                                     transformers.AutoModelForCausalLM)
    with torch.device("meta"):
        model = cls(conf) if cls is not transformers.AutoModelForCausalLM else cls.from_config(conf)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_real_files_count_as_transformers_builds_them(name):
    """transformers' class built from the same file on the meta device, to the integer (DeepSeek-V2 at 3
    layers, the first dense: 60 layers of 160 experts take minutes to build even on the meta device)."""
    data = raw(name)
    if data["model_type"] == "deepseek_v2":
        data = {**data, "num_hidden_layers": 3}
    assert param_count(read_hf_config(data)[0]) == _hf_count(data)


def test_kv_cache_from_the_files():
    """Mistral's window, Gemma's and CodeLlama's MHA (num_key_value_heads = num_attention_heads): bf16,
    batch 1, 16,384 tokens; 2 × L × n × h_kv × d_h × 2 B (a window: n → min(n, W) = 4096)."""
    def kv(name):
        r = qkv("solve", "memory", "--what", "kv-cache", "--config", str(CONFIGS / name), "--batch", "1", "--seq",
                "16384", "--dtype", "bf16", "--json")
        assert r.exit_code == 0, r.output
        return json.loads(r.output.splitlines()[-1])["answer"]

    assert kv("mistral-7b-v0.1.json") == 2 * 32 * 4096 * 8 * 128 * 2 == 536_870_912
    assert kv("gemma-7b.json") == 2 * 28 * 16384 * 16 * 256 * 2
    assert kv("codellama-7b-hf.json") == 2 * 32 * 16384 * 32 * 128 * 2
    assert kv("deepseek-v2.json") == 60 * 16384 * (512 + 64) * 2


def test_kv_cache_without_num_key_value_heads(tmp_path):
    """A file without num_key_value_heads is MHA (transformers' default): CodeLlama-7B's figure again."""
    data = raw("codellama-7b-hf.json")
    del data["num_key_value_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    r = qkv("solve", "memory", "--what", "kv-cache", "--config", str(path), "--batch", "1", "--seq", "16384",
            "--dtype", "bf16", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.splitlines()[-1])["answer"] == 2 * 32 * 16384 * 32 * 128 * 2


def test_a_key_that_cannot_be_honoured_is_refused_by_name(tmp_path):
    data = {**raw("deepseek-v2.json"), "moe_layer_freq": 2}
    with pytest.raises(SolverInputError, match="moe_layer_freq=2"):
        read_hf_config(data)


# ---- mutations (the fault trial of issue 20, as a property) ------------------------------------------
#: Values never valid where a count, a switch, an epsilon or a name goes: a JSON boolean, the string
#: "false", a fraction, a negative number, infinities and NaN, a list, an object.
BAD = [True, False, "false", 1.5, 64.5, -1, float("inf"), float("-inf"), float("nan"), [1], {"a": 1}]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_real_file_is_refused_naming_the_key_or_counted_as_before(tmp_path, data):
    """Exit 2 with one line naming the key, or exit 0 with the unmutated count (a key without effect)."""
    name = data.draw(st.sampled_from(FILES))
    original = raw(name)
    key = data.draw(st.sampled_from(sorted(original)))
    value = data.draw(st.sampled_from(BAD))
    if isinstance(value, bool) and isinstance(original[key], bool):
        value = "false"  # a boolean for a boolean is a valid value, not a fault
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**original, key: value}))
    r = qkv("solve", "params", "--config", str(path), "--json")
    lines = [x for x in r.output.splitlines() if not x.startswith("note: ")]
    if r.exit_code == 0:
        before = param_count(read_hf_config(CONFIGS / name)[0])
        got = json.loads(lines[-1])["answer"]
        assert got == before, (name, key, value)
        assert isinstance(got, int) and not isinstance(got, bool)
    else:
        assert r.exit_code == 2, (name, key, value, r.output)
        assert len(lines) == 1 and key in lines[0], (name, key, value, r.output)
        assert "internal error" not in lines[0] and "Traceback" not in r.output


@pytest.mark.parametrize("key,value", [("tie_word_embeddings", "false"), ("num_key_value_heads", 8.5),
                                       ("num_hidden_layers", True), ("vocab_size", float("inf")),
                                       ("rms_norm_eps", -1), ("sliding_window", "4096")])
def test_the_issues_faults_are_refused_in_one_line(tmp_path, key, value):
    """The kinds the fault trial found read with exit 0: the string "false" read as true, a fractional
    head count, a boolean layer count, an infinite vocabulary, a negative epsilon, a string window."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**raw("mistral-7b-v0.1.json"), key: value}))
    r = qkv("solve", "params", "--config", str(path))
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and key in r.output, r.output


@given(key=st.sampled_from(sorted(__import__("solver.counting.config_json", fromlist=["x"]).COUNT_KEYS)),
       n=st.integers(1, 2**40), bad=st.one_of(st.booleans(), st.floats(allow_nan=True).filter(
           lambda x: not (math.isfinite(x) and x.is_integer() and x >= 1)), st.text(max_size=5), st.integers(max_value=0)))
def test_check_type_of_a_count(key, n, bad):
    """A count key takes a whole number >= 1 (4096.0 reads as 4096); a boolean, a fraction, a non-finite
    number, a string or a number < 1 is refused naming the key."""
    from solver.counting.config_json import check_type

    assert check_type(key, n) == n and check_type(key, float(n)) == n
    with pytest.raises(SolverInputError, match=key):
        check_type(key, bad)


@pytest.mark.parametrize("value", ["false", "True", " true "])
def test_a_string_boolean_is_refused_on_any_key_read(value):
    from solver.counting.config_json import check_type

    with pytest.raises(SolverInputError, match="use_fancy_thing"):
        check_type("use_fancy_thing", value)
    assert check_type("hidden_act", "gelu") == "gelu"
