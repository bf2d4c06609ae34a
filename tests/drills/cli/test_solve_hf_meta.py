"""``qkv solve params --config FILE`` beyond qkv's model types: transformers' own class on the meta device.

A config of a type qkv does not read (Mamba here) is counted by transformers and said so, with a
per-module breakdown whose parts sum to the answer; ``--compare-transformers`` on the published
configs of qkv's presets names no difference; without transformers the refusal says what to install.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli

CONFIGS = Path(__file__).parents[2] / "solver" / "counting" / "configs"
MAMBA = {"model_type": "mamba", "hidden_size": 16, "num_hidden_layers": 2, "vocab_size": 50, "state_size": 4,
         "expand": 2, "conv_kernel": 4, "tie_word_embeddings": True}


@pytest.fixture
def mamba_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA))
    return path


def test_unknown_type_is_counted_by_transformers_on_meta(mamba_file):
    transformers = pytest.importorskip("transformers", minversion="4.45")
    import torch

    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(mamba_file), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "meta device" in out["convention"]["counted_by"] and "MambaForCausalLM" in out["convention"]["counted_by"]
    assert sum(out["breakdown"]["by_module"].values()) == out["answer"]
    # Mamba by hand (MambaMixer, d = 16, inner 2·16 = 32, state 4, conv 4, dt_rank ceil(16/16) = 1):
    # in_proj 16·64 = 1024; conv1d 32·4 + 32 = 160; x_proj 32·(1 + 2·4) = 288; dt_proj 1·32 + 32 = 64;
    # A_log 32·4 = 128; D 32; out_proj 32·16 = 512 → 2208 per layer; norm 16 per layer;
    # embeddings 50·16 = 800 (tied head); final norm 16.  2·(2208 + 16) + 800 + 16 = 5264
    assert out["answer"] == 5264
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.MambaConfig(**MAMBA))
    assert out["answer"] == sum(p.numel() for p in model.parameters())
    text = CliRunner().invoke(cli, ["solve", "params", "--config", str(mamba_file)])
    assert text.exit_code == 0 and "counted by transformers, not by qkv" in text.output


@pytest.mark.parametrize("name", ["qwen2.5-7b.json", "qwen3-30b-a3b.json", "gpt-oss-20b.json"])
def test_compare_transformers_names_no_difference_on_published_configs(name):
    pytest.importorskip("transformers", minversion="5.0")
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(CONFIGS / name), "--compare-transformers",
                                 "--json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.stdout)["comparison"]
    assert cmp["difference"] == 0 and cmp["qkv"] == cmp["transformers"], cmp


def test_without_transformers_the_refusal_says_what_to_install(mamba_file):
    """A child process where ``import transformers`` fails: exit 2, one line naming the install."""
    code = ("import sys; sys.modules['transformers'] = None; from drills.cli import main; "
            f"sys.argv = ['qkv', 'solve', 'params', '--config', {str(mamba_file)!r}]; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pip install transformers" in done.stderr and "Traceback" not in done.stderr


BIGCODE = {"model_type": "gpt_bigcode", "n_embd": 64, "n_head": 4, "vocab_size": 100, "n_positions": 64}


@pytest.mark.parametrize("key, layers, shown", [("n_layer", 100_000, "100,000"), ("n_layer", 10**20, "about 10^20"),
                                                ("num_hidden_layers", 5000, "5,000"), ("n_layer", -1, "-1")])
def test_a_layer_count_past_the_bound_is_refused_before_building(tmp_path, key, layers, shown):
    """Issue 28: n_layer 100000 or 10^20 in a type qkv does not read ran past 2 minutes inside
    transformers (one module object per layer), and n_layer -1 answered the count of no layer (exit
    0); now one line at once, naming the key."""
    import time

    pytest.importorskip("transformers")
    from tests.timing import assert_within, seconds_of

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BIGCODE, "n_layer": 2}))
    CliRunner().invoke(cli, ["solve", "params", "--config", str(path)])  # transformers' imports, untimed
    reference = seconds_of(lambda: CliRunner().invoke(cli, ["solve", "params", "--config", str(path)]))  # 2 layers
    path.write_text(json.dumps({**BIGCODE, key: layers}))
    t0 = time.monotonic()
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(path)])
    assert r.exit_code == 2
    assert_within(time.monotonic() - t0, reference, 10, "refused, against the same model with 2 layers", slack=0.2)
    assert r.stderr.strip().splitlines() == [f"qkv: error: --config: config.json: {key} is {shown}; transformers' "
                                             "class is built here for 0 to 1,000 layers"]


def test_the_build_stops_past_its_module_bound(monkeypatch):
    """A build past MAX_MODULES stops inside transformers (the registration hook), in one line; the
    hook is removed afterwards (the next build counts as before: 2 layers of GPTBigCode at d=64)."""
    pytest.importorskip("transformers")
    from solver.counting import hf_meta
    from solver.errors import SolverInputError

    monkeypatch.setattr(hf_meta, "MAX_MODULES", 100)
    with pytest.raises(SolverInputError, match="too large to build here .more than 100 modules"):
        hf_meta.count_with_transformers({**BIGCODE, "n_layer": 50})
    monkeypatch.setattr(hf_meta, "MAX_MODULES", 200_000)
    two = hf_meta.count_with_transformers({**BIGCODE, "n_layer": 2}).total
    one = hf_meta.count_with_transformers({**BIGCODE, "n_layer": 1}).total
    # a GPTBigCode block at d=64 (multi-query: K and V of one head, 16 wide): ln 2·64, c_attn 64·(64+2·16)+96,
    # c_proj 64·64+64, ln 2·64, c_fc 64·256+256, c_proj 256·64+64
    assert two - one == 128 + 64 * 96 + 96 + 64 * 64 + 64 + 128 + 64 * 256 + 256 + 256 * 64 + 64


@pytest.mark.parametrize("key, value", [("n_positions", "true"), ("vocab_size", "Infinity"), ("n_embd", True),
                                        ("n_embd", []), ("n_layer", -1.7e16), ("n_head", 0), ("n_embd", -64)])
def test_a_value_transformers_refuses_is_one_line(tmp_path, key, value):
    """Found by tests/drills/cli/test_config_fuzz.py: huggingface_hub's StrictDataclassFieldValidationError
    (a string, a boolean, a list or a float where transformers wants an int) came out as "internal
    error"; now one line naming the field."""
    pytest.importorskip("transformers")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**BIGCODE, "n_layer": 2, key: value}))
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(path)])
    lines = r.stderr.splitlines()
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert lines[0].startswith("qkv: error: --config: transformers cannot build 'gpt_bigcode' from this config.json: ")
    assert "internal error" not in r.output
