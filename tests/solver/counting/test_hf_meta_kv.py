"""Issue 37: the KV cache of types qkv does not read, derived from transformers' own config
(:func:`solver.counting.hf_meta.kv_layout`), against the cache transformers builds: a tiny model of
each type (random weights, CPU) runs a prefill longer than the window and one decode step, and the
bytes its cache holds are compared with the layout's. As in test_kv_cache_against_transformers.py,
transformers' sliding-window layer keeps W − 1 positions besides the new token where qkv counts a
rolling buffer of W: the comparison uses W − 1, and a full layer's count is exact. Linear-attention
layers (Qwen3-Next) keep a fixed-size state, not a KV cache: counted as none, as transformers' cache
holds no keys for them.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers", minversion="5.0")
torch = pytest.importorskip("torch")

from drills.cli import cli  # noqa: E402
from solver.counting.hf_meta import kv_layout  # noqa: E402

SMALL = dict(vocab_size=11, hidden_size=16, num_attention_heads=4, num_key_value_heads=2, head_dim=4,
             intermediate_size=8, pad_token_id=0, bos_token_id=0, eos_token_id=0)
W = 3
KINDS = {
    "cohere2": dict(SMALL, num_hidden_layers=4, sliding_window=W, layer_types=["sliding_attention"] * 3 + ["full_attention"]),
    "olmo3": dict(SMALL, num_hidden_layers=4, sliding_window=W),
    "exaone4": dict(SMALL, num_hidden_layers=4, sliding_window=W, sliding_window_pattern=2),
    "ministral": dict(SMALL, num_hidden_layers=2, sliding_window=W),
    "qwen3_next": dict(SMALL, num_hidden_layers=4, linear_num_value_heads=2, linear_num_key_heads=2,
                       linear_key_head_dim=4, linear_value_head_dim=4, num_experts=2, num_experts_per_tok=1,
                       moe_intermediate_size=8, shared_expert_intermediate_size=8, full_attention_interval=2),
}


def _measured(kind: str, raw: dict, batch: int, n: int) -> tuple[int, dict]:
    conf = transformers.AutoConfig.for_model(kind, **raw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(conf).eval()
    ids = torch.zeros(batch, n, dtype=torch.long)
    with torch.no_grad():
        out = model(ids[:, : n - 1], use_cache=True)
        out = model(ids[:, n - 1:], past_key_values=out.past_key_values, use_cache=True)
    total = 0
    for layer in out.past_key_values.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor) and t.numel():
                total += t.numel() * t.element_size()
    return total, {"model_type": kind, **json.loads(json.dumps(conf.to_dict(), default=str))}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kv_cache_of_a_type_qkv_does_not_read_equals_transformers_cache(kind):
    batch, n = 2, 7  # n > W: the windowed layers are full
    measured, raw = _measured(kind, KINDS[kind], batch, n)
    layout = kv_layout(raw)
    kinds = {layer[0] for layer in layout.layers}
    shifted = type(layout)(layout.model_type, layout.config_class, layout.transformers_version,
                           tuple((k, kv, hd, None if w is None else w - 1) for k, kv, hd, w in layout.layers))
    assert measured == sum(b for _, b, _ in shifted.bytes(batch, n, 4)), (kind, layout)
    # every type here but Ministral (all layers windowed) mixes two kinds of layers
    assert len(kinds) == (1 if kind == "ministral" else 2), layout


def test_the_cli_answers_the_kv_cache_of_a_type_qkv_does_not_read(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "cohere2", **KINDS["cohere2"], "sliding_window": 8}))
    r = CliRunner().invoke(cli, ["solve", "memory", "--what", "kv-cache", "--config", str(path), "--batch", "1",
                                 "--seq", "100", "--dtype", "bf16", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    # by hand: 3 windowed layers keep 8 positions, 1 full layer 100; K and V of 2 heads of 4, 2 B each
    assert out["answer"] == 2 * (3 * 8 + 100) * 2 * 4 * 2
    assert "Cohere2Config" in out["convention"]["counted_by"]
