"""Named counting conventions (solver.counting.conventions) against the module and the exact FLOP count.

Parameters: the module's own numel with the norms (or the vocabulary tables) filtered out by the
parameters' names. FLOPs per token: the attention term of each convention against the QKᵀ and AV
terms of ``solver.counting.flops.matmul_flops`` (which the reference model's FlopCounterMode checks),
divided by the tokens of the step.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.counting import matmul_flops, param_breakdown
from solver.counting.config import ModelConfig
from solver.counting.conventions import flops_per_token, params_under
from solver.errors import SolverInputError
from solver.models import build_model
from solver.models.blocks import Block
from tests.config_strategies import transformer_configs


def _module_params(cfg: ModelConfig, keep) -> int:
    model = build_model(cfg.replace(lora_rank=0), "meta")
    return sum(p.numel() for name, p in model.named_parameters() if keep(name))


def _is_vocabulary(name: str) -> bool:
    return name.startswith(("tok_emb.", "type_emb.", "cls")) or ".pos_emb." in name or name == "lm_head.weight"


@given(cfg=transformer_configs())
def test_params_without_norms_or_vocabulary_equal_the_module_filtered_hypo(cfg):
    assert params_under(cfg, "none")[0] == _module_params(cfg, lambda n: "norm" not in n)
    assert params_under(cfg, embeddings=False)[0] == _module_params(cfg, lambda n: not _is_vocabulary(n))
    assert params_under(cfg)[0] == param_breakdown(cfg).total
    model = build_model(cfg.replace(lora_rank=0), "meta")
    # "one": every norm of a layer but its attention norm dropped (FFN, cross-attention and Gemma 2's post-norms)
    extra = sum(p.numel() for m in model.modules() if isinstance(m, Block)
                for sub in (m.ffn_norm, m.cross_norm, m.attn_post_norm, m.ffn_post_norm) if sub is not None
                for p in sub.parameters())
    assert params_under(cfg, "one")[0] == param_breakdown(cfg).total - extra


@given(cfg=transformer_configs(archs=("decoder",)), batch=st.integers(1, 3), seq=st.integers(1, 8))
def test_attention_terms_against_the_exact_scores_hypo(cfg, batch, seq):
    tokens = batch * seq
    for mode in ("forward", "train"):
        exact = matmul_flops(cfg, batch, seq, mode)
        scores = sum(t.total for t in exact.terms if t.group == "attention_scores")
        full = flops_per_token(cfg, seq, mode, "full")
        assert full.attention == Fraction(scores, tokens)
        assert flops_per_token(cfg, seq, mode, "full", causal_halving=True).attention == Fraction(scores, 2 * tokens)
        if not cfg.is_mla:  # PaLM's 12·L·H·Q·T is the full QKᵀ and AV of a training step; Kaplan's half of it
            assert flops_per_token(cfg, seq, mode, "palm").attention == full.attention
            assert flops_per_token(cfg, seq, mode, "kaplan").attention == full.attention / 2
        none = flops_per_token(cfg, seq, mode, "none")
        assert none.flops == (6 if mode == "train" else 2) * none.n_params


def test_six_n_and_palm_on_a_named_model():
    """GPT-3 175B at T = 2048: 6N and 6N + 12·L·H·Q·T per training token, by hand."""
    from solver.counting.presets import PRESETS

    cfg = PRESETS["gpt3-175b"].config
    pt = flops_per_token(cfg, 2048, "train", "palm")
    N = param_breakdown(cfg).non_embedding
    assert pt.flops == 6 * N + 12 * 96 * 96 * 128 * 2048
    with pytest.raises(SolverInputError):
        flops_per_token(cfg, 2048, "train", "chinchilla")
