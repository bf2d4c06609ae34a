"""Multi-token-prediction (MTP) layers a checkpoint ships and transformers' class does not build are named in the
count of a type qkv does not read, never left out silently (:func:`solver.counting.hf_meta.unbuilt_mtp`).

GLM-4.5-Air's file says ``num_nextn_predict_layers`` 1: its checkpoint holds a 47th layer that
``Glm4MoeForCausalLM`` never builds and drops on load. Qwen3-Next's file names no MTP count, but its class drops
``mtp.*`` weights on load. The independent side of each check is transformers' own class: its load-time ignore
list matches the checkpoint names, and the model built on the meta device holds no such parameter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli

transformers = pytest.importorskip("transformers", minversion="5.0")
torch = pytest.importorskip("torch")

CORPUS = Path(__file__).parent / "configs" / "corpus"


def _solve(path: Path) -> dict:
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(path), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _built_names(raw: dict) -> list[str]:
    cls = getattr(transformers, raw["architectures"][0])
    conf = cls.config_class.from_dict({k: v for k, v in raw.items() if k != "model_type"})
    with torch.device("meta"):
        return [name for name, _ in cls(conf).named_parameters()]


def test_glm_4_5_air_names_the_mtp_layer_its_class_does_not_build():
    raw = json.loads((CORPUS / "glm-4.5-air.json").read_text())
    out = _solve(CORPUS / "glm-4.5-air.json")
    notes = out["convention"]["notes"]
    assert any(n.startswith("num_nextn_predict_layers=1") and "not counted" in n for n in notes), notes
    # independently: the layer after the 46 decoder layers is in no parameter of the class, and the class drops
    # the checkpoint's weights of that layer when it loads them
    names = _built_names(raw)
    assert not any(".layers.46." in n for n in names) and any(".layers.45." in n for n in names)
    ignored = transformers.Glm4MoeForCausalLM._keys_to_ignore_on_load_unexpected
    assert any(re.search(p, "model.layers.46.mlp.gate.weight") for p in ignored)
    assert out["answer"] == out["breakdown"]["total"]


def test_qwen3_next_names_the_mtp_weights_its_class_drops():
    out = _solve(CORPUS / "qwen3-next-80b-a3b-instruct.json")
    notes = [n for n in out["convention"].get("notes", []) if n.startswith("multi-token prediction")]
    assert len(notes) == 1 and "Qwen3NextForCausalLM" in notes[0], out["convention"]
    ignored = transformers.Qwen3NextForCausalLM._keys_to_ignore_on_load_unexpected
    assert any(re.search(p, "mtp.fc.weight") for p in ignored)


def test_a_file_without_mtp_whose_class_drops_none_has_no_mtp_note():
    out = _solve(CORPUS / "smollm3-3b.json")
    assert not any("multi-token" in n for n in out["convention"].get("notes", [])), out["convention"]


class _WithMTP(torch.nn.Module):
    """A class that builds its MTP layer: a parameter named ``mtp`` (or a layer past the decoder's)."""

    def __init__(self, name: str):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
        if name == "mtp":
            self.mtp = torch.nn.Linear(2, 2)


@pytest.mark.parametrize("built", ["mtp", "layer past the decoder"])
def test_mtp_layers_the_class_builds_are_counted_and_not_named(built):
    from solver.counting.hf_meta import unbuilt_mtp

    raw = {"num_hidden_layers": 3 if built == "mtp" else 2, "num_nextn_predict_layers": 1}
    assert unbuilt_mtp(raw, _WithMTP(built)) == []


def test_a_zero_mtp_count_is_not_named():
    from solver.counting.hf_meta import unbuilt_mtp

    raw = {"num_hidden_layers": 3, "num_nextn_predict_layers": 0}
    assert unbuilt_mtp(raw, _WithMTP("none")) == []
    assert unbuilt_mtp({**raw, "num_nextn_predict_layers": 2}, _WithMTP("none"))[0].startswith(
        "num_nextn_predict_layers=2: the checkpoint's 2 multi-token-prediction layers")
