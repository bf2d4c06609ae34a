"""Issue 37's refusal policy: a key is refused only when it would change a figure and cannot be
honoured; every other key no rule knows is named in one ``not read: ...`` note, and where it may
change a count (a ``*``) the count is checked against transformers' class built on the meta device
(a difference reported, never hidden), or refused without transformers. The reader is chosen by
``architectures`` first, ``model_type`` second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.counting import param_breakdown
from solver.counting.config_json import read_hf_config, unread_of

CONFIGS = Path(__file__).parent / "configs"


def _load(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def _params(tmp_path, raw, *args):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    return CliRunner().invoke(cli, ["solve", "params", "--config", str(path), "--json", *args])


# The keys the issue found refusing real files (each changes no count as the file sets it).
HARMLESS = [("deepseek-v3.json", {"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                                          "quant_method": "fp8", "weight_block_size": [128, 128]}}),
            ("llama3-70b.json", {"qkv_bias": False, "mlp_bias": False, "is_llama_config": True}),
            ("llama3-70b.json", {"internal_version": "1.0", "activation_dropout": 0.0}),
            ("gpt2.json", {"n_inner": None}),
            ("qwen3-30b-a3b.json", {"use_qk_norm": True, "lm_head_bias": False})]


@pytest.mark.parametrize("name, extra", HARMLESS, ids=[f"{n}:{','.join(e)}" for n, e in HARMLESS])
def test_keys_that_change_no_count_are_named_not_refused(name, extra):
    raw = _load(name)
    cfg0, _ = read_hf_config(raw)
    cfg, notes = read_hf_config({**raw, **extra})
    assert param_breakdown(cfg).total == param_breakdown(cfg0).total  # removing them changes nothing
    unread, _ = unread_of(notes)
    assert set(unread) <= set(extra), notes  # read (mlp_bias, n_inner), or named as not read


def test_a_key_that_may_change_a_count_is_checked_against_transformers(tmp_path):
    pytest.importorskip("transformers", minversion="5.0")
    raw = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
           "max_position_embeddings": 32, "use_fancy_gate": True}
    r = _params(tmp_path, raw)
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["convention"]["config_file_notes"]
    assert "not read: use_fancy_gate* (no rule for this key; * may change a count: checked against " \
           "transformers' class)" in notes
    assert any(n.startswith("checked: transformers ") and "LlamaForCausalLM counts the same" in n for n in notes)
    plain = CliRunner().invoke(cli, ["solve", "params", "--config", str(tmp_path / "config.json")])
    lines = plain.stdout.splitlines()  # under the answer, on stdout
    assert lines[0].startswith("answer: ") and lines[-2].startswith("not read: use_fancy_gate*")
    assert lines[-1].startswith("checked: transformers ")


def test_a_difference_from_transformers_is_reported(tmp_path):
    """The check itself: a qkv count that transformers' class does not confirm is said so."""
    pytest.importorskip("transformers", minversion="5.0")
    from drills.cli.solve_hf_meta import check_unread

    raw = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100, "extra_layers": 3}
    cfg, notes = read_hf_config(raw)
    assert check_unread("f.json", raw, cfg, notes).startswith("checked: ")
    wrong = cfg.replace(n_layers=3)  # as if a reader had missed a layer-count key
    line = check_unread("f.json", raw, wrong, notes)
    assert line.startswith("DIFFERENCE: ") and "extra_layers" in line and f"{-param_breakdown(wrong).total + param_breakdown(cfg).total:+,}" in line


def test_without_transformers_a_key_that_may_count_is_refused_in_one_line(tmp_path):
    path = tmp_path / "config.json"
    raw = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 32}
    code = ("import sys; sys.modules['transformers'] = None; from drills.cli import main; "
            f"sys.argv = ['qkv', 'solve', 'params', '--config', {str(path)!r}]; main()")
    path.write_text(json.dumps({**raw, "use_fancy_gate": True}))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{path}: use_fancy_gate: not read by qkv and may change the count" in done.stderr
    assert "pip install transformers" in done.stderr
    path.write_text(json.dumps({**raw, "internal_version": "2"}))  # a key that changes no count: answered
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "not read: internal_version" in done.stderr, done.stderr


def test_the_reader_is_chosen_by_architectures_first():
    """Kimi-K2-like: a new model_type whose class is DeepSeek-V3's is read as deepseek_v3 (same count)."""
    raw = _load("deepseek-v3.json")
    cfg0, _ = read_hf_config(raw)
    cfg, notes = read_hf_config({**raw, "model_type": "kimi_k2"})
    assert param_breakdown(cfg).total == param_breakdown(cfg0).total == 671_026_404_352
    assert notes[0] == ("architectures names DeepseekV3ForCausalLM: read as 'deepseek_v3' (model_type 'kimi_k2' is "
                        "not one qkv reads)")


def test_a_refusal_names_the_file_as_given_and_no_list_of_types(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("my config.json").write_text(json.dumps({"model_type": "mystery", "hidden_size": 4}))
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError) as e:
        read_hf_config("my config.json")
    assert e.value.args[0].startswith("my config.json: model_type 'mystery' is not one qkv reads (")
    assert "gpt_neox" not in str(e.value)
