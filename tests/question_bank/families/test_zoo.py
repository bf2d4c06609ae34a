"""Concept questions from the zoo (issue 26): each key checked against the presets' fields, with the
facts re-read here from the configs, and the most-cited facts checked against what the papers say
(typed below from the sources, not read from solver.counting.presets)."""

from __future__ import annotations

import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.grading import audit_problem
from solver.counting.presets import get_preset
from tests.family_helpers import variants

IDS = ("zoo.which_models", "zoo.which_model")

#: Each fact re-read from a config's fields (written apart from the family's FACTS).
RULES = {
    "decoder_only": lambda c: c.arch == "decoder",
    "has_encoder": lambda c: c.arch in ("encoder", "encoder-decoder"),
    "learned_pos": lambda c: c.pos == "learned",
    "sinusoidal_pos": lambda c: c.pos == "sinusoidal",
    "rope": lambda c: c.pos == "rope",
    "pre_norm": lambda c: c.norm_position == "pre",
    "post_norm": lambda c: c.norm_position == "post",
    "gqa": lambda c: c.kv_lora_rank == 0 and (c.n_kv_heads or c.n_heads) not in (1, c.n_heads),
    "mha": lambda c: c.kv_lora_rank == 0 and (c.n_kv_heads or c.n_heads) == c.n_heads,
    "rmsnorm": lambda c: c.norm == "rmsnorm",
    "layernorm": lambda c: c.norm == "layernorm",
    "swiglu": lambda c: c.ffn == "swiglu",
    "gelu": lambda c: c.ffn == "gelu",
    "moe": lambda c: c.n_experts > 1,
    "window": lambda c: c.sliding_window > 0,
    "tied": lambda c: c.lm_head and c.tied_embeddings,
    "untied": lambda c: c.lm_head and not c.tied_embeddings,
    "mla": lambda c: c.kv_lora_rank > 0,
}

#: What the sources say (paper, released config): name -> facts that hold, facts that do not.
PUBLISHED = {
    # Vaswani et al. 2017: encoder-decoder, sinusoidal encodings (§3.5), post-LN "LayerNorm(x + Sublayer(x))"
    # (§3.1), ReLU FFN (§3.3), shared embedding and pre-softmax weights (§3.4)
    "transformer-base": ({"has_encoder", "sinusoidal_pos", "post_norm", "layernorm", "mha", "tied"},
                         {"decoder_only", "rope", "gelu", "swiglu"}),
    # Devlin et al. 2019: encoder only, learned positions, GELU, post-LN as the Transformer
    "bert-base": ({"has_encoder", "learned_pos", "post_norm", "gelu"}, {"decoder_only", "pre_norm", "tied", "untied"}),
    # Radford et al. 2019 (GPT-2 §2.3): layer norm moved to the input of each sub-block; learned wpe; tied wte
    "gpt2": ({"decoder_only", "learned_pos", "pre_norm", "gelu", "tied", "mha"}, {"rope", "post_norm", "rmsnorm"}),
    # Touvron et al. 2023 (Llama 2 §2.2, Table 1): RMSNorm pre-norm, SwiGLU, RoPE; GQA for 34B/70B only
    "llama2-7b": ({"rope", "rmsnorm", "pre_norm", "swiglu", "mha", "untied"}, {"gqa", "learned_pos", "tied"}),
    "llama2-70b": ({"rope", "rmsnorm", "swiglu", "gqa"}, {"mha", "moe"}),
    # Jiang et al. 2023 (Mistral 7B Table 1): GQA with 8 KV heads, sliding window 4096
    "mistral-7b": ({"gqa", "window", "rope"}, {"moe", "mha"}),
    # Jiang et al. 2024 (Mixtral Table 1): 8 experts, top 2
    "mixtral-8x7b": ({"moe", "gqa"}, {"window", "mha"}),
    # DeepSeek-V2: multi-head latent attention, DeepSeekMoE
    "deepseek-v2-lite": ({"mla", "moe"}, {"gqa", "mha"}),
}


def _checked(p):
    fact = p.given["fact"]
    for i, name in enumerate(p.given["option_values"]):
        c = get_preset(name).config
        assert RULES[fact](c) == (i in p.key.correct), (p.id, name, fact)


@pytest.mark.parametrize("fid", IDS)
def test_keys_are_the_presets_fields(fid):
    for p in variants(fid, per_difficulty=12):
        assert audit_problem(p) == [], p.id
        _checked(p)
        assert len({get_preset(n).family for n in p.given["option_values"]}) == 4  # one model per family
        assert not any(get_preset(n).family == "seed" for n in p.given["option_values"])
        if p.type == "mcq":
            assert len(p.key.correct) == 1
        else:
            assert 1 <= len(p.key.correct) <= 4
        for name in p.given["option_values"]:
            assert get_preset(name).source.split(",")[0] in p.solution_text  # each option cites its source


def test_every_fact_is_asked():
    asked = {p.given["fact"] for fid in IDS for p in variants(fid, per_difficulty=25)}
    assert asked == set(RULES)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_presets_agree_with_the_papers(name):
    holds, fails = PUBLISHED[name]
    c = get_preset(name).config
    for f in holds:
        assert RULES[f](c), (name, f)
    for f in fails:
        assert not RULES[f](c), (name, f)


def test_pinned_gqa_question():
    """By hand: of gpt2 (12 heads, 12 K/V), llama2-70b (64 heads, 8 K/V), mistral-7b (32, 8) and
    bert-base (12, 12), grouped-query attention is llama2-70b's and mistral-7b's."""
    from question_bank.families.zoo import FACTS

    gqa = next(f for f in FACTS if f.id == "gqa")
    got = {n for n in ("gpt2", "llama2-70b", "mistral-7b", "bert-base") if gqa.holds(get_preset(n).config)}
    assert got == {"llama2-70b", "mistral-7b"}


def test_hard_models_are_keys_about_as_often_as_not():
    """Issue 39: a test-wise student who never reads the question remembers which model names were keys.
    Over 400 hard draws every model offered 30 times or more is a true option in 20 % to 70 % of its
    appearances (without the even odds ``bert-large`` was never true, ``gpt-oss-20b`` true 80 % of the time)."""
    from collections import Counter

    from question_bank.family import FAMILIES

    shown, true = Counter(), Counter()
    for seed in range(400):
        p = FAMILIES["zoo.which_models"].generate(seed, "hard")
        for i, name in enumerate(p.given["option_values"]):
            shown[name] += 1
            true[name] += i in p.key.correct
    rates = {name: true[name] / n for name, n in shown.items() if n >= 30}
    assert len(rates) >= 10
    assert all(0.2 <= r <= 0.7 for r in rates.values()), sorted(rates.items(), key=lambda kv: kv[1])
