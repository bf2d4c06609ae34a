"""Our exact parameter counts against HuggingFace ``transformers`` model classes (an independent check).

Where ``transformers`` is installed (the ``hf`` and ``test`` extras), each preset whose structure a
HuggingFace class can express is built from the SAME configuration (our ``ModelConfig`` fields, mapped
by hand below, never a checkpoint's defaults) on the meta device, so GPT-3 175B and Llama-2 70B cost
no memory and nothing is downloaded, and ``solver.counting.param_count(cfg)`` must equal
``sum(p.numel() for p in model.parameters())`` (``parameters()`` yields a tied tensor once).

A mapping refuses a configuration it cannot express (raises :class:`Unmappable` with the reasons);
a preset no class expresses is skipped with those reasons. The presets in ``MUST_MAP`` must map.

Classes and the structure each one fixes:

- ``GPT2LMHeadModel``/``GPT2Model``: learned positions, pre-LayerNorm with β, final ``ln_f``, biases
  on every Conv1D (c_attn = fused Q/K/V, c_proj, c_fc, c_proj), LM head without bias, tied or not;
  ``n_heads · d_head = d_model`` and no GQA;
- ``GPTNeoForCausalLM``: as GPT-2 but bias-free q/k/v projections and an ``out_proj`` with bias;
- ``GPTNeoXForCausalLM``/``GPTNeoXModel``: pre-LayerNorm with β, final LayerNorm, rotary positions
  (no parameters), ``attention_bias`` on fused Q/K/V and the output ``dense`` together, FFN biases;
  used for parameter-free-position models (its causal mask and rotary tables have no parameters,
  so a bidirectional encoder with a sinusoidal buffer holds the same tensors);
- ``LlamaForCausalLM``/``MistralForCausalLM``: RMSNorm (γ only), SwiGLU (gate/up/down), RoPE, final
  norm, ``head_dim`` free, GQA through ``num_key_value_heads``; Llama's ``attention_bias`` covers
  q/k/v/o together and ``mlp_bias`` the FFN; Mistral has neither;
- ``BertModel``: word + position + token-type tables, embedding LayerNorm, post-LayerNorm layers with
  biases everywhere, no final norm, optional pooler (``add_pooling_layer``);
- ``MarianMTModel``: one table shared by encoder, decoder and LM head, sinusoidal positions,
  post-LayerNorm, biases everywhere, no final or embedding norm. Tied only: with
  ``tie_word_embeddings=False`` transformers 5 also unties the encoder's and decoder's input tables
  from ``shared`` (three vocabulary tables and a head), where our encoder-decoder keeps one table.

Structural differences that are not in our model are subtracted by name where they occur
(``_Built.corrections``), never as a constant: Marian keeps its sinusoidal tables as frozen
``nn.Parameter`` s (``embed_positions.weight``, ``requires_grad=False``) where our model has a buffer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from tests.timing import assert_within, seconds_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may touch the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# 4.45: LlamaConfig/MistralConfig head_dim independent of hidden_size (4.40 ignores it: counts differ)
transformers = pytest.importorskip("transformers", minversion="4.45")

import torch  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from solver.counting import param_count  # noqa: E402
from solver.counting.config import ModelConfig  # noqa: E402
from solver.counting.presets import PRESETS  # noqa: E402

transformers.logging.set_verbosity_error()  # token-id range warnings for tiny vocabularies


class Unmappable(Exception):
    """The configuration has features the HuggingFace class cannot express (``problems``)."""

    def __init__(self, cls: str, problems: list[str]):
        super().__init__(f"{cls}: " + ", ".join(problems))
        self.problems = problems


@dataclass
class _Built:
    model: torch.nn.Module
    cls: str
    #: ``(tensor, numel)`` to add to HF's count: positive for a tensor our model has and the HF
    #: class lacks, negative for an HF parameter our model does not have.
    corrections: list[tuple[str, int]] = field(default_factory=list)

    def count(self) -> int:
        return sum(p.numel() for p in self.model.parameters()) + sum(n for _, n in self.corrections)


_PLAIN = {"type_vocab_size": 0, "pooler": False, "n_classes": 0, "cls_token": False, "n_experts": 1,
          "embedding_norm": False, "lm_head_bias": False, "kv_lora_rank": 0}  # kv_lora_rank: no MLA (issue 10)
# issue 20: the new blocks at their defaults (a mapping below accepts one where the class has it)
_PLAIN.update({"parallel_block": 0, "norm_affine": True, "qk_norm": "none", "position_offset": 0, "d_ff_shared": None,
               "shared_expert_gate": False, "router_bias": False, "moe_every": 1, "attn_sinks": False})

def _problem(cfg: ModelConfig, check: str) -> str | None:
    """A check shared by several classes: what ``cfg`` has that the class cannot express, or None."""
    if check == "ffn" and cfg.ffn not in ("gelu", "relu"):
        return f"ffn={cfg.ffn!r} (needs a two-matrix FFN, gelu or relu)"
    if check == "heads" and (cfg.q_dim != cfg.d_model or cfg.kv_heads != cfg.n_heads):
        return (f"n_heads·d_head = {cfg.n_heads}·{cfg.head_dim} = {cfg.q_dim}, d_model = {cfg.d_model}, "
                f"n_kv_heads = {cfg.kv_heads} (needs n_heads·d_head = d_model, no GQA)")
    if check == "one_attention_bias" and cfg.has_attn_out_bias != cfg.has_attn_bias:
        return "attn_bias != attn_out_bias (one switch covers the Q/K/V and O biases)"
    if check == "heads_divide_d_model" and cfg.d_model % cfg.n_heads:  # HF validates it even with head_dim
        return f"d_model {cfg.d_model} is not a multiple of n_heads {cfg.n_heads}"
    return None


def _require(cfg: ModelConfig, cls: str, checks: tuple[str, ...] = (), **need: object) -> None:
    """Raise :class:`Unmappable` naming every field (or derived property) of ``cfg`` that differs
    from what ``cls`` hard-wires (``need``), and every failed shared check."""
    problems = [f"{k}={getattr(cfg, k)!r} (needs {v!r})" for k, v in need.items() if getattr(cfg, k) != v]
    problems += [p for p in (_problem(cfg, c) for c in checks) if p]
    if problems:
        raise Unmappable(cls, problems)


def _meta(build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    with torch.device("meta"):
        return build()


def hf_gpt2(cfg: ModelConfig) -> _Built:
    cls = "GPT2LMHeadModel" if cfg.lm_head else "GPT2Model"
    _require(cfg, cls, ("ffn", "heads"), arch="decoder", norm="layernorm", has_norm_bias=True,
             norm_position="pre", final_norm=True, has_attn_bias=True, has_attn_out_bias=True, has_ffn_bias=True,
             pos="learned", **_PLAIN)
    hf = transformers.GPT2Config(vocab_size=cfg.vocab_size, n_positions=cfg.max_positions, n_embd=cfg.d_model,
                                 n_layer=cfg.n_layers, n_head=cfg.n_heads, n_inner=cfg.d_ff,
                                 activation_function={"gelu": "gelu_new", "relu": "relu"}[cfg.ffn],
                                 layer_norm_epsilon=cfg.norm_eps, tie_word_embeddings=cfg.tied_embeddings,
                                 bos_token_id=0, eos_token_id=0)
    model_cls = transformers.GPT2LMHeadModel if cfg.lm_head else transformers.GPT2Model
    return _Built(_meta(lambda: model_cls(hf)), cls)


def hf_gpt_neo(cfg: ModelConfig) -> _Built:
    cls = "GPTNeoForCausalLM"
    plain = dict(_PLAIN, lm_head_bias=cfg.lm_head_bias)  # an LM head bias is added below
    _require(cfg, cls, ("ffn", "heads"), arch="decoder", norm="layernorm", has_norm_bias=True,
             norm_position="pre", final_norm=True, has_attn_bias=False, has_attn_out_bias=True, has_ffn_bias=True,
             pos="learned", lm_head=True, **plain)
    hf = transformers.GPTNeoConfig(vocab_size=cfg.vocab_size, max_position_embeddings=cfg.max_positions,
                                   hidden_size=cfg.d_model, num_layers=cfg.n_layers,
                                   attention_types=[[["global"], cfg.n_layers]], num_heads=cfg.n_heads,
                                   intermediate_size=cfg.d_ff, activation_function=cfg.ffn,
                                   layer_norm_epsilon=cfg.norm_eps, tie_word_embeddings=cfg.tied_embeddings,
                                   bos_token_id=0, eos_token_id=0)
    built = _Built(_meta(lambda: transformers.GPTNeoForCausalLM(hf)), cls)
    assert built.model.lm_head.bias is None
    if cfg.lm_head_bias:
        # lm_head.bias (vocab_size): our head is nn.Linear(d, V) with a bias; GPT-Neo's has none
        built.corrections.append(("lm_head.bias", cfg.vocab_size))
    return built


def hf_gpt_neox(cfg: ModelConfig) -> _Built:
    cls = "GPTNeoXForCausalLM" if cfg.lm_head else "GPTNeoXModel"
    problems = []
    if cfg.arch not in ("decoder", "encoder"):
        problems.append(f"arch={cfg.arch!r} (needs one stack)")
    if cfg.pos == "learned":
        problems.append("pos='learned' (needs positions without parameters: its own are rotary)")
    try:
        # two norms per layer, in sequence or (Pythia) in parallel: the same tensors
        _require(cfg, cls, ("ffn", "heads", "one_attention_bias"), norm="layernorm",
                 has_norm_bias=True, norm_position="pre", final_norm=True, has_ffn_bias=True,
                 **dict(_PLAIN, parallel_block=cfg.parallel_block if cfg.parallel_block in (0, 2) else 0))
    except Unmappable as e:
        problems += e.problems
    if problems:
        raise Unmappable(cls, problems)
    hf = transformers.GPTNeoXConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model,
                                    num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                                    intermediate_size=cfg.d_ff, hidden_act=cfg.ffn,
                                    max_position_embeddings=cfg.max_positions, layer_norm_eps=cfg.norm_eps,
                                    tie_word_embeddings=cfg.tied_embeddings, use_parallel_residual=False,
                                    attention_bias=cfg.has_attn_bias, bos_token_id=0, eos_token_id=0)
    model_cls = transformers.GPTNeoXForCausalLM if cfg.lm_head else transformers.GPTNeoXModel
    return _Built(_meta(lambda: model_cls(hf)), cls)


_LLAMA_LIKE = dict(arch="decoder", norm="rmsnorm", norm_position="pre", final_norm=True, ffn="swiglu", pos="rope",
                   lm_head=True, **_PLAIN)


def hf_llama(cfg: ModelConfig) -> _Built:
    cls = "LlamaForCausalLM"
    _require(cfg, cls, ("heads_divide_d_model", "one_attention_bias"), **_LLAMA_LIKE)
    hf = transformers.LlamaConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.d_ff,
                                  num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                                  num_key_value_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                                  max_position_embeddings=cfg.max_positions, rms_norm_eps=cfg.norm_eps,
                                  tie_word_embeddings=cfg.tied_embeddings, attention_bias=cfg.has_attn_bias,
                                  mlp_bias=cfg.has_ffn_bias, bos_token_id=0, eos_token_id=0)
    return _Built(_meta(lambda: transformers.LlamaForCausalLM(hf)), cls)


def hf_mistral(cfg: ModelConfig) -> _Built:
    cls = "MistralForCausalLM"
    _require(cfg, cls, ("heads_divide_d_model",), has_attn_bias=False, has_attn_out_bias=False, has_ffn_bias=False,
             **_LLAMA_LIKE)
    hf = transformers.MistralConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, intermediate_size=cfg.d_ff,
                                    num_hidden_layers=cfg.n_layers, num_attention_heads=cfg.n_heads,
                                    num_key_value_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                                    max_position_embeddings=cfg.max_positions, rms_norm_eps=cfg.norm_eps,
                                    tie_word_embeddings=cfg.tied_embeddings, bos_token_id=0, eos_token_id=0)
    return _Built(_meta(lambda: transformers.MistralForCausalLM(hf)), cls)


def hf_bert(cfg: ModelConfig) -> _Built:
    cls = "BertModel"
    _require(cfg, cls, ("ffn", "heads"), arch="encoder", norm="layernorm", has_norm_bias=True,
             norm_position="post", final_norm=False, embedding_norm=True, has_attn_bias=True,
             has_attn_out_bias=True, has_ffn_bias=True, pos="learned", lm_head=False, n_classes=0,
             cls_token=False, n_experts=1)
    hf = transformers.BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
                                 num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff, hidden_act=cfg.ffn,
                                 max_position_embeddings=cfg.max_positions, type_vocab_size=cfg.type_vocab_size,
                                 layer_norm_eps=cfg.norm_eps, pad_token_id=0)
    return _Built(_meta(lambda: transformers.BertModel(hf, add_pooling_layer=cfg.pooler)), cls)


def hf_marian(cfg: ModelConfig) -> _Built:
    cls = "MarianMTModel"
    _require(cfg, cls, ("ffn", "heads"), arch="encoder-decoder", norm="layernorm",
             has_norm_bias=True, norm_position="post", final_norm=False, has_attn_bias=True, has_attn_out_bias=True,
             has_ffn_bias=True, pos="sinusoidal", lm_head=True, tied_embeddings=True, **_PLAIN)
    hf = transformers.MarianConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model,
                                   encoder_layers=cfg.n_encoder_layers, decoder_layers=cfg.n_decoder_layers,
                                   encoder_attention_heads=cfg.n_heads, decoder_attention_heads=cfg.n_heads,
                                   encoder_ffn_dim=cfg.d_ff, decoder_ffn_dim=cfg.d_ff, activation_function=cfg.ffn,
                                   max_position_embeddings=cfg.max_positions, share_encoder_decoder_embeddings=True,
                                   tie_word_embeddings=True, pad_token_id=0, decoder_start_token_id=0,
                                   bos_token_id=0, eos_token_id=0, forced_eos_token_id=0)
    built = _Built(_meta(lambda: transformers.MarianMTModel(hf)), cls)
    m = built.model.model
    assert m.encoder.embed_tokens.weight is m.shared.weight is m.decoder.embed_tokens.weight
    assert built.model.lm_head.weight is m.shared.weight
    assert "final_logits_bias" not in dict(built.model.named_parameters())  # a buffer in Marian
    for stack_name, stack in (("encoder", m.encoder), ("decoder", m.decoder)):
        table = stack.embed_positions.weight
        assert not table.requires_grad  # frozen: the sinusoidal table, a buffer in our model
        # model.{encoder,decoder}.embed_positions.weight: Marian's sinusoidal table is an nn.Parameter
        built.corrections.append((f"model.{stack_name}.embed_positions.weight", -table.numel()))
    return built


#: Tried in this order for a preset whose family has no class of its own.
BUILDERS: dict[str, Callable[[ModelConfig], _Built]] = {
    "gpt2": hf_gpt2, "gpt-neo": hf_gpt_neo, "gpt-neox": hf_gpt_neox, "llama": hf_llama,
    "mistral": hf_mistral, "bert": hf_bert, "marian": hf_marian,
}
FAMILY_BUILDER = {"gpt2": "gpt2", "gpt3": "gpt2", "bert": "bert", "llama": "llama", "mistral": "mistral",
                  "transformer": "marian"}

#: Presets that must map to a class (a preset change that breaks the mapping fails, never skips).
MUST_MAP = {
    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-2.7b",
    "gpt3-6.7b", "gpt3-175b", "bert-base", "bert-large", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
    "mistral-7b", "transformer-base", "transformer-big", "seed000-encoder", "seed000-minigpt",
    "seed001-mini-encoder", "seed001-bert-tiny", "seed001-bert-small", "seed001-bert-base",
    "seed001-bert-large", "seed004-minigpt",
}


def build_hf(cfg: ModelConfig, family: str = "") -> _Built:
    """The HF model for ``cfg``: its family's class, else the first class that expresses it (else
    the refusal of the class that comes nearest)."""
    if family in FAMILY_BUILDER:
        return BUILDERS[FAMILY_BUILDER[family]](cfg)
    refusals = []
    for build in BUILDERS.values():
        try:
            return build(cfg)
        except Unmappable as e:
            refusals.append(e)
    raise min(refusals, key=lambda e: len(e.problems))  # the nearest class says what is missing


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_count_equals_huggingface(name: str) -> None:
    preset = PRESETS[name]
    try:
        built = build_hf(preset.config, preset.family)
    except Unmappable as e:
        if name in MUST_MAP:
            raise AssertionError(f"{name} no longer maps to a HuggingFace class: {e}") from e
        pytest.skip(f"no HuggingFace class expresses {name}: {e}")
    assert param_count(preset.config) == built.count(), (name, built.cls, built.corrections)


def test_gpt3_presets_with_a_different_attention_width_are_refused() -> None:
    """GPT-3 XL (24·128 = 3072 ≠ 2048) and 13B (40·128 = 5120 ≠ 5140): GPT2Config ties the
    attention width to n_embd, so these are not expressible (and must not be forced)."""
    for name in ("gpt3-xl", "gpt3-13b"):
        with pytest.raises(Unmappable, match="n_heads·d_head"):
            build_hf(PRESETS[name].config, PRESETS[name].family)


def test_mappings_refuse_what_they_cannot_express() -> None:
    """A mapping that silently dropped a feature would make the comparison vacuous."""
    gpt2 = PRESETS["gpt2"].config
    for change in ({"norm": "rmsnorm"}, {"attn_bias": False}, {"pos": "rope"}, {"n_kv_heads": 4},
                   {"ffn": "swiglu"}, {"norm_position": "post"}, {"lm_head_bias": True}, {"n_experts": 2, "top_k": 1}):
        with pytest.raises(Unmappable):
            hf_gpt2(gpt2.replace(**change))
    llama = PRESETS["llama2-7b"].config
    for change in ({"norm": "layernorm"}, {"ffn": "gelu"}, {"attn_bias": True, "attn_out_bias": False},
                   {"pos": "learned"}):
        with pytest.raises(Unmappable):
            hf_llama(llama.replace(**change))
    with pytest.raises(Unmappable):
        hf_mistral(llama.replace(bias=True))
    with pytest.raises(Unmappable):
        hf_bert(PRESETS["bert-base"].config.replace(norm_position="pre"))
    for change in ({"pos": "learned"}, {"tied_embeddings": False}):
        with pytest.raises(Unmappable):
            hf_marian(PRESETS["transformer-base"].config.replace(**change))


def test_large_presets_build_cheaply_on_meta() -> None:
    """GPT-3 175B and Llama-2 70B on the meta device: no storage, well under the suite's budget."""
    build_hf(PRESETS["gpt2"].config, PRESETS["gpt2"].family)  # transformers' imports, untimed
    reference = seconds_of(lambda: build_hf(PRESETS["gpt2"].config, PRESETS["gpt2"].family))
    start = time.perf_counter()
    for name in ("gpt3-175b", "llama2-70b"):
        built = build_hf(PRESETS[name].config, PRESETS[name].family)
        assert all(p.is_meta for p in built.model.parameters())
    # 96 and 80 layers against GPT-2's 12 on meta: the layers' count, not their storage (a ratio, issue 40)
    assert_within(time.perf_counter() - start, reference, 40, "GPT-3 175B and Llama-2 70B on meta, against GPT-2", slack=0)


# ---- random configurations -------------------------------------------------------------------------
@st.composite
def gpt2_like(draw) -> ModelConfig:
    n_heads = draw(st.integers(1, 4))
    return ModelConfig(arch="decoder", d_model=n_heads * draw(st.integers(1, 6)), n_layers=draw(st.integers(0, 3)),
                       n_heads=n_heads, d_ff=draw(st.integers(1, 40)), ffn=draw(st.sampled_from(["gelu", "relu"])),
                       norm="layernorm", norm_position="pre", final_norm=True, bias=True,
                       vocab_size=draw(st.integers(1, 60)), max_positions=draw(st.integers(1, 20)), pos="learned",
                       tied_embeddings=draw(st.booleans()), lm_head=draw(st.booleans()))


@st.composite
def llama_like(draw) -> ModelConfig:
    n_kv = draw(st.integers(1, 3))
    n_heads = n_kv * draw(st.integers(1, 3))
    return ModelConfig(arch="decoder", d_model=n_heads * draw(st.integers(1, 5)), n_layers=draw(st.integers(0, 3)),
                       n_heads=n_heads, n_kv_heads=n_kv, d_head=2 * draw(st.integers(1, 5)),
                       d_ff=draw(st.integers(1, 40)), ffn="swiglu", norm="rmsnorm", norm_position="pre",
                       final_norm=True, bias=False, attn_bias=draw(st.booleans()), ffn_bias=draw(st.booleans()),
                       vocab_size=draw(st.integers(1, 60)), max_positions=draw(st.integers(1, 20)), pos="rope",
                       tied_embeddings=draw(st.booleans()), lm_head=True)


@st.composite
def bert_like(draw) -> ModelConfig:
    n_heads = draw(st.integers(1, 4))
    return ModelConfig(arch="encoder", d_model=n_heads * draw(st.integers(1, 6)), n_layers=draw(st.integers(0, 3)),
                       n_heads=n_heads, d_ff=draw(st.integers(1, 40)), ffn="gelu", norm="layernorm",
                       norm_position="post", final_norm=False, bias=True, vocab_size=draw(st.integers(1, 60)),
                       max_positions=draw(st.integers(1, 20)), pos="learned",
                       type_vocab_size=draw(st.integers(0, 3)), embedding_norm=True, pooler=draw(st.booleans()),
                       lm_head=False, tied_embeddings=False)


@st.composite
def marian_like(draw) -> ModelConfig:
    n_heads = draw(st.integers(1, 4))
    return ModelConfig(arch="encoder-decoder", d_model=n_heads * draw(st.integers(1, 6)), n_layers=0,
                       n_encoder_layers=draw(st.integers(0, 3)), n_decoder_layers=draw(st.integers(0, 3)),
                       n_heads=n_heads, d_ff=draw(st.integers(1, 40)), ffn=draw(st.sampled_from(["gelu", "relu"])),
                       norm="layernorm", norm_position="post", final_norm=False, bias=True,
                       vocab_size=draw(st.integers(2, 60)), max_positions=draw(st.integers(2, 20)),
                       pos="sinusoidal", tied_embeddings=True, lm_head=True)


@given(gpt2_like())
def test_random_gpt2_like_counts_equal(cfg: ModelConfig) -> None:
    assert param_count(cfg) == hf_gpt2(cfg).count()


@given(llama_like())
def test_random_llama_like_counts_equal(cfg: ModelConfig) -> None:
    """GQA, a head size independent of d_model / n_heads, biases on or off, tied or untied."""
    assert param_count(cfg) == hf_llama(cfg).count()


@given(bert_like())
def test_random_bert_like_counts_equal(cfg: ModelConfig) -> None:
    assert param_count(cfg) == hf_bert(cfg).count()


@given(marian_like())
def test_random_marian_like_counts_equal(cfg: ModelConfig) -> None:
    """Encoder and decoder depths drawn apart; cross-attention and the third norm per decoder layer."""
    assert param_count(cfg) == hf_marian(cfg).count()
