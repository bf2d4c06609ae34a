"""A key a config.json leaves out takes the default of the class transformers builds from the file,
and the answer names it: DeepSeek-V2/V3 without ``q_lora_rank`` compress queries at rank 1536
(``DeepseekV2Config``/``DeepseekV3Config``), not "no compression"."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner

from drills.cli import cli

CORPUS = pathlib.Path(__file__).parent / "configs" / "corpus"


def _meta_count(cls_name: str, raw: dict) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config_cls = getattr(transformers, cls_name.replace("ForCausalLM", "Config"))
    cfg = config_cls(**{k: v for k, v in raw.items() if k not in ("architectures", "auto_map", "quantization_config")})
    with torch.device("meta"):
        model = getattr(transformers, cls_name)(cfg)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name, cls", [("deepseek-v2-lite.json", "DeepseekV2ForCausalLM")])
def test_an_absent_q_lora_rank_is_the_classes_default_and_is_named(tmp_path, name, cls):
    raw = json.loads((CORPUS / name).read_text())
    assert "q_lora_rank" in raw
    raw.pop("q_lora_rank")
    f = tmp_path / "c.json"
    f.write_text(json.dumps(raw))
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(f), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answer"] == _meta_count(cls, raw)
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(f)])
    assert "q_lora_rank not given: 1536" in r.output
