"""``qkv models verify --fit`` (and bench/gpu.py): a model too large for the device is built at the
fewest layers that keep every kind it has, then with its experts halved; the record names what was
built, and its counts are exact for that config."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import solver.counting as counts
import solver.models.verify as verify_module
from drills.cli import cli
from solver.counting.config import ModelConfig
from solver.counting.presets import get_preset
from solver.errors import SolverInputError
from solver.models.verify import fewer_experts, reduced_layers, stack_layers, verify_fitted, with_layers

MOE = ModelConfig(d_model=32, n_layers=6, n_heads=4, d_ff=64, vocab_size=64, n_experts=8, top_k=2,
                  first_dense_layers=1, ffn="swiglu", norm="rmsnorm", pos="rope", bias=False, name="toy-moe")


def refusing_above(layers: int, experts: int, calls: list):
    """verify as it is, but refusing (as the memory guard words it) any build deeper or wider."""
    real = verify_module.verify

    def fake(cfg, device="meta", **kw):
        calls.append((cfg.n_layers, cfg.n_experts))
        if cfg.n_layers > layers or cfg.n_experts > experts:
            raise SolverInputError(f"refusing to run {cfg.name} on {device}: it needs ~1 TB", param="batch")
        return real(cfg, device, **kw)
    return fake


def test_reduced_layers_keep_the_dense_first_layers_and_one_moe_layer():
    assert reduced_layers(MOE) == {"decoder": 2}
    assert reduced_layers(get_preset("deepseek-v3").config) == {"decoder": 4}  # 3 dense first layers + 1 MoE
    assert reduced_layers(get_preset("gemma2-9b").config) == {"decoder": 2}  # a local and a global layer
    assert reduced_layers(get_preset("transformer-base").config) == {"encoder": 2, "decoder": 2}


def test_a_model_that_fits_is_built_whole_and_says_nothing_more(monkeypatch):
    calls = []
    monkeypatch.setattr(verify_module, "verify", refusing_above(99, 99, calls))
    record, built = verify_fitted(MOE, "cpu", batch=1, seq=8)
    assert built is MOE and calls == [(6, 8)] and record.ok and "built" not in record.extra


def test_too_deep_is_built_at_reduced_depth_and_named(monkeypatch):
    calls = []
    monkeypatch.setattr(verify_module, "verify", refusing_above(2, 99, calls))
    record, built = verify_fitted(MOE, "cpu", batch=1, seq=8)
    assert calls == [(6, 8), (2, 8)] and record.ok
    assert record.extra["built"] == {"layers": {"decoder": 2}, "full_layers": {"decoder": 6}}
    assert record.get("params").measured == counts.param_breakdown(with_layers(MOE, {"decoder": 2})).total_with_lora


def test_too_wide_is_built_with_experts_halved_and_named(monkeypatch):
    calls = []
    monkeypatch.setattr(verify_module, "verify", refusing_above(2, 4, calls))
    monkeypatch.setattr("solver.models.guard.available_bytes", lambda device: 10**12)
    record, built = verify_fitted(MOE, "cpu", batch=1, seq=8)
    assert calls == [(6, 8), (2, 8), (2, 4)] and record.ok and built.n_experts == 4
    assert record.extra["built"] == {"layers": {"decoder": 2}, "full_layers": {"decoder": 6}, "experts": 4,
                                     "full_experts": 8}
    assert record.get("params").measured == counts.param_breakdown(built).total_with_lora


def test_what_cannot_be_built_says_at_what_size_it_was_refused(monkeypatch):
    calls = []
    monkeypatch.setattr(verify_module, "verify", refusing_above(1, 1, calls))
    monkeypatch.setattr("solver.models.guard.available_bytes", lambda device: 10**12)
    record, built = verify_fitted(MOE, "cpu", batch=1, seq=8)
    assert not record.ok and record.error.startswith("at 2/6 layers, 4/8 experts: refusing to run")
    assert built is not MOE and calls == [(6, 8), (2, 8), (2, 4)]


def test_a_bad_input_is_not_retried_smaller(monkeypatch):
    calls = []

    def bad(cfg, device="meta", **kw):
        calls.append(cfg.n_layers)
        raise SolverInputError("choose one of meta, cpu, cuda", param="device")
    monkeypatch.setattr(verify_module, "verify", bad)
    record, _ = verify_fitted(MOE, "cpu")
    assert calls == [6] and record.error == "choose one of meta, cpu, cuda"


def test_models_verify_fit_names_the_build_in_the_table_and_the_json(monkeypatch):
    calls = []
    monkeypatch.setattr(verify_module, "verify", refusing_above(2, 99, calls))
    name = "seed004-minigpt"
    full = stack_layers(get_preset(name).config)["decoder"]
    out = CliRunner().invoke(cli, ["models", "verify", name, "--device", "cpu", "--fit", "--seq", "8", "--json"])
    assert out.exit_code == 0, out.output
    model = json.loads(out.stdout)["models"][0]
    assert model["ok"] and model["built"] == {"layers": {"decoder": 2}, "full_layers": {"decoder": full}}
    table = CliRunner().invoke(cli, ["models", "verify", name, "--device", "cpu", "--fit", "--seq", "8"])
    assert f"{name} (2/{full} layers)" in table.stdout
    plain = CliRunner().invoke(cli, ["models", "verify", name, "--device", "cpu", "--seq", "8", "--json"])
    assert plain.exit_code == 2 and "refusing to run" in plain.output  # without --fit: not built, one line


@pytest.mark.parametrize("name", ["deepseek-v3", "kimi-k2"])
def test_fewer_experts_halves_only_until_fp32_weights_and_gradients_fit(name):
    """The largest MoE presets on one H200 (149 GB free, as the run read it): the fewest halvings of
    the experts after which 12 bytes per parameter take at most 80 % of the memory, never below
    top_k, at the reduced depth; every other field as the preset has it."""
    cfg = get_preset(name).config
    free = 149 * 10**9
    built = fewer_experts(cfg, free)
    assert built is not None and cfg.top_k <= built.n_experts < cfg.n_experts
    assert cfg.n_experts % built.n_experts == 0 and (cfg.n_experts // built.n_experts) & 1 == 0
    assert 12 * counts.param_breakdown(built).total_with_lora <= 0.8 * free
    twice = with_layers(cfg.replace(n_experts=2 * built.n_experts), reduced_layers(cfg))
    assert 12 * counts.param_breakdown(twice).total_with_lora > 0.8 * free  # one halving fewer would not fit
    assert stack_layers(built) == reduced_layers(cfg)
    assert built.replace(n_experts=cfg.n_experts, n_layers=cfg.n_layers) == cfg


def test_fewer_experts_leaves_a_dense_model_and_an_unknown_memory_alone():
    assert fewer_experts(get_preset("llama2-7b").config, 149 * 10**9) is None
    assert fewer_experts(get_preset("deepseek-v3").config, None) is None
    assert fewer_experts(get_preset("deepseek-v3").config, 10**6) is None  # nothing fits
