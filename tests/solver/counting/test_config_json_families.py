"""Issue 20's config.json readers against transformers' own classes (offline, meta device).

For each model type a small configuration drawn by hypothesis is built by transformers' config class,
written as its ``to_dict()`` to a JSON file, read by ``read_hf_config`` and counted; the model
transformers builds from the same config object on the meta device must hold exactly that many
parameters (``parameters()`` yields a tied tensor once). For the mixture-of-experts types the
active parameters are checked against the instantiated experts too: total − (the tensors under
``experts``) + top_k / n_experts of them. Nothing is downloaded.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
transformers = pytest.importorskip("transformers", minversion="5.0")

import torch  # noqa: E402

from solver.counting import param_breakdown  # noqa: E402
from solver.counting.config_json import read_hf_config  # noqa: E402

transformers.logging.set_verbosity_error()


@st.composite
def heads(draw, even: bool = True, gqa: bool = True):
    """num_attention_heads, num_key_value_heads, hidden_size (a multiple of the heads)."""
    kv = draw(st.integers(1, 2)) if gqa else None
    h = (kv or 1) * draw(st.integers(1, 3))
    if not gqa:
        h = draw(st.integers(1, 4))
    d = h * (2 if even else 1) * draw(st.integers(1, 3))
    out = dict(num_attention_heads=h, hidden_size=d)
    if gqa:
        out["num_key_value_heads"] = kv
    return out


def common(draw, tie=True):
    out = dict(num_hidden_layers=draw(st.integers(1, 3)), vocab_size=draw(st.integers(8, 30)), pad_token_id=0,
               bos_token_id=0, eos_token_id=0)
    if tie:
        out["tie_word_embeddings"] = draw(st.booleans())
    return out


@st.composite
def gpt_neox(draw):
    h = draw(heads(gqa=False))
    return dict(**h, **common(draw), intermediate_size=draw(st.integers(1, 12)),
                use_parallel_residual=draw(st.booleans()), attention_bias=draw(st.booleans()),
                rotary_pct=draw(st.sampled_from([0.25, 0.5, 1.0])))


@st.composite
def gptj(draw):
    h = draw(heads(gqa=False))
    hd = h["hidden_size"] // h["num_attention_heads"]
    return dict(n_embd=h["hidden_size"], n_head=h["num_attention_heads"], n_layer=draw(st.integers(1, 3)),
                vocab_size=draw(st.integers(8, 30)), n_inner=draw(st.sampled_from([None, 5])),
                rotary_dim=draw(st.sampled_from([2, hd])), tie_word_embeddings=draw(st.booleans()),
                bos_token_id=0, eos_token_id=0)


@st.composite
def opt(draw):
    h = draw(heads(gqa=False))
    pre = draw(st.booleans())
    return dict(**h, **common(draw), ffn_dim=draw(st.integers(1, 12)), max_position_embeddings=draw(st.integers(4, 9)),
                word_embed_proj_dim=h["hidden_size"], do_layer_norm_before=pre, enable_bias=draw(st.booleans()),
                layer_norm_elementwise_affine=draw(st.booleans()))


@st.composite
def bloom(draw):
    h = draw(heads(gqa=False))
    return dict(hidden_size=h["hidden_size"], n_head=h["num_attention_heads"], n_layer=draw(st.integers(1, 3)),
                vocab_size=draw(st.integers(8, 30)), tie_word_embeddings=draw(st.booleans()),
                pad_token_id=0, bos_token_id=0, eos_token_id=0)


@st.composite
def falcon(draw):
    h = draw(heads(gqa=True))
    new = draw(st.booleans())
    return dict(hidden_size=h["hidden_size"], num_attention_heads=h["num_attention_heads"],
                num_kv_heads=h["num_key_value_heads"], **common(draw), new_decoder_architecture=new,
                multi_query=draw(st.booleans()), parallel_attn=draw(st.booleans()),
                num_ln_in_parallel_attn=draw(st.sampled_from([None, 1, 2])) if new else None,
                bias=draw(st.booleans()), alibi=draw(st.booleans()),
                ffn_hidden_size=draw(st.sampled_from([None, 7])))


@st.composite
def phi(draw):
    return dict(**draw(heads()), **common(draw), intermediate_size=draw(st.integers(1, 12)),
                qk_layernorm=draw(st.booleans()), partial_rotary_factor=draw(st.sampled_from([0.5, 1.0])))


@st.composite
def llama_like(draw, **extra):
    return dict(**draw(heads()), **common(draw), intermediate_size=draw(st.integers(1, 12)), **extra)


@st.composite
def with_head_dim(draw, strategy):
    out = draw(strategy)
    out["head_dim"] = 2 * draw(st.integers(1, 3))
    return out


@st.composite
def olmo(draw):
    return draw(llama_like(attention_bias=draw(st.booleans())))


@st.composite
def gemma(draw, gemma3: bool):
    out = draw(with_head_dim(llama_like(attention_bias=draw(st.booleans()))))
    n = out["num_hidden_layers"]
    out["sliding_window"] = draw(st.integers(1, 5))
    if gemma3:
        k = draw(st.integers(1, 3))
        out["layer_types"] = ["sliding_attention" if (i + 1) % k else "full_attention" for i in range(n)]
    return out


@st.composite
def qwen3(draw):
    return draw(with_head_dim(llama_like(attention_bias=draw(st.booleans()))))


@st.composite
def qwen_moe(draw, qwen2: bool):
    base = draw(qwen3()) if not qwen2 else draw(llama_like(qkv_bias=draw(st.booleans())))
    n = base["num_hidden_layers"]
    E = draw(st.integers(2, 4))
    base.update(num_experts=E, num_experts_per_tok=draw(st.integers(1, E)), moe_intermediate_size=draw(st.integers(1, 6)),
                decoder_sparse_step=draw(st.integers(1, 2)), mlp_only_layers=list(range(draw(st.integers(0, n)))))
    if qwen2:
        base["shared_expert_intermediate_size"] = draw(st.integers(1, 6))
    return base


@st.composite
def deepseek_v3(draw):
    h = draw(st.integers(1, 3))
    E = draw(st.integers(2, 4))
    return dict(**common(draw), hidden_size=draw(st.integers(2, 12)), num_attention_heads=h,
                num_key_value_heads=h, intermediate_size=draw(st.integers(1, 8)), n_routed_experts=E,
                num_experts_per_tok=draw(st.integers(1, E)), moe_intermediate_size=draw(st.integers(1, 5)),
                n_shared_experts=draw(st.integers(0, 2)), first_k_dense_replace=draw(st.integers(0, 2)),
                kv_lora_rank=draw(st.integers(1, 6)), q_lora_rank=draw(st.sampled_from([None, 3])),
                qk_rope_head_dim=2 * draw(st.integers(1, 2)), qk_nope_head_dim=draw(st.integers(1, 4)),
                v_head_dim=draw(st.integers(1, 4)), n_group=1, topk_group=1)


@st.composite
def gpt_oss(draw):
    out = draw(with_head_dim(llama_like()))
    E = draw(st.integers(2, 4))
    out.update(num_local_experts=E, num_experts_per_tok=draw(st.integers(1, E)), sliding_window=draw(st.integers(1, 5)),
               attention_bias=draw(st.booleans()))
    return out


@st.composite
def granite(draw):
    return draw(llama_like(attention_bias=draw(st.booleans()), mlp_bias=draw(st.booleans())))


@st.composite
def llama4_text(draw):
    out = draw(with_head_dim(llama_like()))
    E = draw(st.integers(2, 4))
    out.update(num_local_experts=E, num_experts_per_tok=draw(st.integers(1, E)), intermediate_size_mlp=draw(st.integers(1, 9)),
               interleave_moe_layer_step=draw(st.integers(1, 2)), attention_chunk_size=draw(st.integers(2, 6)),
               no_rope_layer_interval=draw(st.integers(1, 3)))
    return out


TYPES = {
    "gpt_neox": gpt_neox(), "gptj": gptj(), "opt": opt(), "bloom": bloom(), "falcon": falcon(), "phi": phi(),
    "phi3": llama_like(), "olmo": olmo(), "olmo2": olmo(), "gemma2": gemma(False), "gemma3_text": gemma(True),
    "qwen3": qwen3(), "qwen3_moe": qwen_moe(False), "qwen2_moe": qwen_moe(True), "deepseek_v3": deepseek_v3(),
    "gpt_oss": gpt_oss(), "granite": granite(), "llama4_text": llama4_text(),
}
MOE_TYPES = {"qwen3_moe", "qwen2_moe", "deepseek_v3", "gpt_oss", "llama4_text"}


def hf_model(kind: str, kwargs: dict):
    """transformers' causal-LM class for ``kind`` built from ``kwargs`` on the meta device."""
    hf_config = transformers.AutoConfig.for_model(kind, **kwargs)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    return hf_config, model


def read_via_file(tmp_path, hf_config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(hf_config.to_dict(), default=str))
    return read_hf_config(path)


def routed_expert_numel(model) -> int:
    """Elements of the routed experts' tensors (``...experts...``; not shared experts or routers)."""
    return sum(p.numel() for n, p in model.named_parameters() if ".experts." in n or n.endswith(".experts"))


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_reader_counts_as_transformers_hypo(kind, tmp_path_factory):
    """read_hf_config(to_dict()) counts exactly the parameters transformers' class holds; for MoE
    types the active parameters equal total − routed experts + top_k/E of them."""

    @given(kwargs=TYPES[kind])
    def check(kwargs):
        hf_config, model = hf_model(kind, kwargs)
        cfg, _ = read_via_file(tmp_path_factory.mktemp(kind), hf_config)
        pb = param_breakdown(cfg)
        total = sum(p.numel() for p in model.parameters())
        assert pb.total == total, (kind, kwargs)
        if kind in MOE_TYPES:
            routed = routed_expert_numel(model)
            E = cfg.n_experts
            assert routed % E == 0
            assert pb.active == total - routed + routed // E * cfg.top_k, (kind, kwargs)

    check()


def test_llama4_wrapper_counts_the_whole_checkpoint(tmp_path):
    """``llama4`` (the multimodal config, ``Llama4ForConditionalGeneration``): the whole checkpoint is
    counted, vision tower and projector included, by the class the file names (issue 37), and its parts
    are given; ``llama4_text`` is still read natively."""
    from click.testing import CliRunner

    from drills.cli import cli

    text = dict(vocab_size=11, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                head_dim=4, intermediate_size=8, intermediate_size_mlp=12, num_local_experts=2, num_experts_per_tok=1)
    vision = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8, image_size=28,
                  patch_size=14, vision_output_dim=16, projector_input_dim=16, projector_output_dim=16)
    hf_config = transformers.Llama4Config(text_config=text, vision_config=vision)
    raw = json.loads(json.dumps(hf_config.to_dict(), default=str))
    raw["architectures"] = ["Llama4ForConditionalGeneration"]
    f = tmp_path / "config.json"
    f.write_text(json.dumps(raw))
    with torch.device("meta"):
        model = transformers.Llama4ForConditionalGeneration(hf_config)
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(f), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["answer"] == sum(p.numel() for p in model.parameters())
    plain = CliRunner().invoke(cli, ["solve", "params", "--config", str(f)]).output
    assert "vision tower" in plain and "Llama4ForConditionalGeneration" in plain
    cfg, _ = read_hf_config({**raw["text_config"], "model_type": "llama4_text"})
    with torch.device("meta"):
        text_model = transformers.Llama4ForCausalLM(hf_config.text_config)
    assert param_breakdown(cfg).total == sum(p.numel() for p in text_model.parameters())
