"""The families of experts, latent attention and sliding windows (issue 10): sound for every
difficulty (audit: key accepted, each misconception rejected and diagnosed as itself), deterministic,
and each key recomputed from the reference model: parameters from numel, the cache from the
tensors a model on the meta device allocates for n cached positions (bf16)."""

from __future__ import annotations

import functools
from fractions import Fraction

import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import audit_problem, grade
from solver.counting.config import ModelConfig
from solver.counting.presets import get_preset
from solver.models import build_model
from solver.models.ffn import MixtureOfExperts
from tests.family_helpers import easy, variants

MODULES = ("question_bank.families.moe", "question_bank.families.latent_attention",
           "question_bank.families.sliding_window")
IDS = sorted(fid for fid, f in FAMILIES.items() if f.build.__module__ in MODULES)
UNITS = {"GB": 10**9, "GiB": 2**30}


def test_family_list():
    assert IDS == sorted(["moe.active_params", "moe.decode_weight_bytes", "latent.kv_cache", "window.kv_cache"])


@pytest.mark.parametrize("fid", IDS)
def test_sound_and_deterministic(fid):
    for p in variants(fid, per_difficulty=4):
        assert audit_problem(p) == [], p.id
        assert p.misconceptions, p.id
        for m in p.misconceptions:
            v = grade(p, m.value)
            assert not v.correct and m.id in {x.id for x in v.misconceptions}, (p.id, m.id)
        assert p.solution_text.strip().splitlines()[-1].startswith("Answer")
    a, b = FAMILIES[fid].generate(5, "hard"), FAMILIES[fid].generate(5, "hard")
    assert (a.statement_md, a.key) == (b.statement_md, b.key)


@functools.cache
def _module_counts(name: str, n_experts: int, top_k: int) -> tuple[int, int, int, int]:
    """(total numel, one routed expert's numel, routed experts per MoE layer, MoE layers) of the preset's module,
    with the number of routed experts and the top-k the problem drew (issue 22)."""
    model = build_model(get_preset(name).config.replace(n_experts=n_experts, top_k=top_k), "meta")
    moes = [m for m in model.modules() if isinstance(m, MixtureOfExperts)]
    one = sum(p.numel() for p in moes[0].experts[0].parameters())
    return sum(p.numel() for p in model.parameters()), one, len(moes[0].experts), len(moes)


def test_moe_keys_from_the_module():
    for p in variants("moe.active_params", per_difficulty=4):
        total, one, E, L_M = _module_counts(p.given["preset"], p.given["n_experts"], p.given["top_k"])
        k = p.given["top_k"]
        expect = total if p.given["ask"] == "total" else total - L_M * (E - k) * one
        assert p.key.value == pytest.approx(expect / 1e9, rel=1e-12), p.id
    for p in variants("moe.decode_weight_bytes", per_difficulty=4):
        total, one, E, L_M = _module_counts(p.given["preset"], p.given["n_experts"], p.given["top_k"])
        k, B = p.given["top_k"], p.given["batch"]
        touched = E * (1 - (1 - Fraction(k, E)) ** B)
        # issue 21: the untied input embedding is a lookup, B rows of it read (from the module's own table)
        import torch

        model = build_model(get_preset(p.given["preset"]).config, "meta")
        emb = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding))
        rows = emb.weight.shape[1] * B
        expect = 2 * (total - L_M * E * one + L_M * touched * one - emb.weight.numel() + rows)
        assert p.key.value == pytest.approx(float(expect) / UNITS[p.given["unit"]], rel=1e-12), p.id


def _cache_bytes(cfg: ModelConfig, batch: int, seq: int) -> int:
    return build_model(cfg.replace(vocab_size=8), "meta", dtype="bf16").new_cache(batch, seq).nbytes()


def test_latent_and_window_keys_from_the_cache_tensors():
    base = get_preset("deepseek-v2-lite").config.replace(n_experts=2, top_k=1, n_shared_experts=0,
                                                         first_dense_layers=0, d_ff_expert=None)
    for p in variants("latent.kv_cache", per_difficulty=3):
        g = p.given
        cfg = base.replace(kv_lora_rank=g["kv_lora_rank"], qk_rope_head_dim=g["qk_rope_head_dim"])
        assert p.key.value == pytest.approx(_cache_bytes(cfg, g["batch"], g["seq"]) / UNITS[g["unit"]], rel=1e-12)
    for p in variants("window.kv_cache", per_difficulty=3):
        g = p.given
        cfg = ModelConfig(d_model=8, n_layers=g["n_layers"], n_heads=2 * g["n_kv_heads"], n_kv_heads=g["n_kv_heads"],
                          d_head=g["d_head"], d_ff=4, pos="rope", sliding_window=g["window"],
                          global_every=g["global_every"])
        assert p.key.value == pytest.approx(_cache_bytes(cfg, g["batch"], g["seq"]) / UNITS[g["unit"]], rel=1e-12)


def test_pin_latent_cache():
    """DeepSeek-V2-Lite's widths at level 0: 27 layers × (512 + 64) × 2 bytes = 31,104 bytes per token; B = 1,
    n = 4,096 (issue 22: any multiple of 1,024): 31,104 × 4,096 = 127,401,984 bytes = 0.13 GB; as MHA
    27 × 4,096 × 2·16·128 × 2 = 905,969,664 bytes = 0.91 GB."""
    p = easy("latent.kv_cache")
    g = p.given
    assert (g["kv_lora_rank"], g["qk_rope_head_dim"], g["n_layers"]) == (512, 64, 27)
    assert (g["batch"], g["seq"], g["unit"]) == (1, 4096, "GB") and grade(p, 0.13).correct
    assert "counted_as_mha" in grade(p, 0.91).misconception.id.split("+")
    nbytes = 27 * g["batch"] * g["seq"] * 576 * 2
    assert grade(p, round(nbytes / UNITS[g["unit"]], 2)).correct
    mha = 27 * g["batch"] * g["seq"] * 2 * 16 * 128 * 2
    assert "counted_as_mha" in grade(p, round(mha / UNITS[g["unit"]], 2)).misconception.id.split("+")
