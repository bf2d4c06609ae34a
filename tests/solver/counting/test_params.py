"""Parameter counts: a second, independent derivation, invariants, and hand-worked examples.

The check against an instantiated module (``numel()``) lives in the reference-model tests;
here the count is rederived by listing every tensor of the model, layer by layer, the way a
reader of the model code would, and summing the products of the shapes.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.counting import param_breakdown, param_count
from solver.counting.config import ModelConfig
from tests.config_strategies import transformer_configs


def tensor_shapes(cfg: ModelConfig) -> list[tuple[str, tuple[int, ...]]]:
    """Every parameter tensor of the model of ``cfg`` (solver.counting.config's docstring), one by one."""
    d, V = cfg.d_model, cfg.vocab_size
    hd = cfg.head_dim
    qw, kvw = cfg.n_heads * hd, cfg.kv_heads * hd
    out: list[tuple[str, tuple[int, ...]]] = [("tok", (V, d))]
    stacks = {"encoder": [cfg.n_layers], "decoder": [cfg.n_layers],
              "encoder-decoder": [cfg.n_encoder_layers, cfg.n_decoder_layers]}[cfg.arch]
    if cfg.type_vocab_size:
        out.append(("type", (cfg.type_vocab_size, d)))
    if cfg.cls_token:
        out.append(("cls", (d,)))

    def linear(name: str, d_in: int, d_out: int, bias: bool, lora: str | None) -> None:
        out.append((name + ".w", (d_out, d_in)))
        if bias:
            out.append((name + ".b", (d_out,)))
        if cfg.lora_rank and lora in cfg.lora_targets:
            out.append((name + ".A", (cfg.lora_rank, d_in)))
            out.append((name + ".B", (d_out, cfg.lora_rank)))

    def norm(name: str, width: int = d) -> None:
        if not cfg.norm_affine:  # OLMo: a norm without parameters
            return
        out.append((name + ".g", (width,)))
        if cfg.norm == "layernorm" and (cfg.bias if cfg.norm_bias is None else cfg.norm_bias):
            out.append((name + ".b", (width,)))

    def latent_attention(p: str) -> None:
        """DeepSeek-V2's projections as HuggingFace's DeepseekV2Attention fuses them (the nope and rope parts
        of the queries in one matrix, the latent and the rotary key in one down-projection, K and V in one
        up-projection); biases on the down-projections, O's with the output bias."""
        h, dc, dr, dv, qr = cfg.n_heads, cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.value_head_dim, cfg.q_lora_rank
        if qr:
            linear(f"{p}.q_a", d, qr, attn_b, None)
            norm(f"{p}.q_a_norm", qr)
            linear(f"{p}.q_b", qr, h * (hd + dr), False, None)
        else:
            linear(f"{p}.q", d, h * (hd + dr), False, None)
        linear(f"{p}.kv_a", d, dc + dr, attn_b, None)
        norm(f"{p}.kv_a_norm", dc)
        linear(f"{p}.kv_b", dc, h * (hd + dv), False, None)
        linear(f"{p}.o", h * dv, d, out_b, None)

    def ffn(p: str, width: int) -> None:
        if cfg.ffn == "swiglu":
            linear(f"{p}.gate", d, width, ffn_b, "ffn")
        linear(f"{p}.up", d, width, ffn_b, "ffn")
        linear(f"{p}.down", width, d, ffn_b, "ffn")

    attn_b = cfg.bias if cfg.attn_bias is None else cfg.attn_bias
    out_b = attn_b if cfg.attn_out_bias is None else cfg.attn_out_bias
    ffn_b = cfg.bias if cfg.ffn_bias is None else cfg.ffn_bias
    for index, n_layers in enumerate(stacks):
        has_cross = cfg.arch == "encoder-decoder" and index == 1
        if cfg.pos == "learned":
            out.append((f"s{index}.pos", (cfg.max_positions + cfg.position_offset, d)))
        if cfg.embedding_norm:
            norm(f"s{index}.emb_norm")
        for layer in range(n_layers):
            p = f"s{index}.l{layer}"
            for a in ("self", "cross") if has_cross else ("self",):
                if cfg.kv_lora_rank:
                    latent_attention(f"{p}.{a}")
                    norm(f"{p}.{a}.norm")
                    continue
                linear(f"{p}.{a}.q", d, qw, attn_b, "q")
                linear(f"{p}.{a}.k", d, kvw, attn_b, "k")
                linear(f"{p}.{a}.v", d, kvw, attn_b, "v")
                linear(f"{p}.{a}.o", qw, d, out_b, "o")
                if a == "self" and cfg.qk_norm != "none":
                    norm(f"{p}.q_norm", hd if cfg.qk_norm == "head" else qw)
                    norm(f"{p}.k_norm", hd if cfg.qk_norm == "head" else kvw)
                if a == "self" and cfg.attn_sinks:
                    out.append((f"{p}.sinks", (cfg.n_heads,)))
                if cfg.parallel_block != 1:  # one norm feeds both sub-layers of a GPT-J block
                    norm(f"{p}.{a}.norm")
                if cfg.norm_position == "sandwich":
                    norm(f"{p}.{a}.post_norm")
            moe_layer = layer >= cfg.first_dense_layers and (layer + 1) % cfg.moe_every == 0
            if cfg.n_experts > 1 and moe_layer:  # a MoE layer
                width = cfg.d_ff if cfg.d_ff_expert is None else cfg.d_ff_expert
                out.append((f"{p}.router", (cfg.n_experts, d)))
                if cfg.router_bias:
                    out.append((f"{p}.router.b", (cfg.n_experts,)))
                for e in range(cfg.n_experts):
                    ffn(f"{p}.e{e}", width)
                for e in range(cfg.n_shared_experts):
                    ffn(f"{p}.shared{e}", width if cfg.d_ff_shared is None else cfg.d_ff_shared)
                if cfg.shared_expert_gate:
                    out.append((f"{p}.shared_gate", (1, d)))
            else:
                ffn(f"{p}.ffn", cfg.d_ff)
            norm(f"{p}.ffn_norm")
            if cfg.norm_position == "sandwich":
                norm(f"{p}.ffn_post_norm")
        if cfg.final_norm:
            norm(f"s{index}.final")
    if cfg.lm_head:
        if not cfg.tied_embeddings:
            out.append(("lm_head.w", (V, d)))
        if cfg.lm_head_bias:
            out.append(("lm_head.b", (V,)))
    if cfg.pooler:
        linear("pooler", d, d, True, None)
    if cfg.n_classes:
        linear("classifier", d, cfg.n_classes, True, None)
    return out


def count_by_listing(cfg: ModelConfig) -> tuple[int, int]:
    """(base, lora) summed over the tensor list."""
    shapes = tensor_shapes(cfg)
    lora = sum(math.prod(s) for n, s in shapes if n.endswith((".A", ".B")))
    return sum(math.prod(s) for _, s in shapes) - lora, lora


@given(transformer_configs(max_layers=3))
def test_count_matches_tensor_listing_hypo(cfg):
    """The component formulas and a tensor-by-tensor listing agree, base and LoRA apart."""
    pb = param_breakdown(cfg)
    assert (pb.total, pb.lora) == count_by_listing(cfg)


@given(transformer_configs())
def test_totals_are_consistent_hypo(cfg):
    """total = Σ base components; embedding + non-embedding = total; every count is positive."""
    pb = param_breakdown(cfg)
    assert pb.total == sum(c.count for c in pb.components if c.group != "lora")
    assert pb.embedding + pb.non_embedding == pb.total
    assert all(c.count > 0 and c.count == c.per * c.times for c in pb.components)
    assert sum(pb.by_group().values()) == pb.total_with_lora


@given(transformer_configs(archs=("decoder",)))
def test_untying_adds_exactly_one_vocab_matrix_hypo(cfg):
    """With an LM head, untying adds V·d parameters, all of them embedding parameters."""
    cfg = cfg.replace(lm_head=True)
    tied, untied = param_breakdown(cfg.replace(tied_embeddings=True)), param_breakdown(
        cfg.replace(tied_embeddings=False))
    assert untied.total - tied.total == cfg.vocab_size * cfg.d_model
    assert untied.non_embedding == tied.non_embedding


@given(transformer_configs(archs=("decoder", "encoder")), st.integers(0, 3))
def test_count_is_affine_in_layers_hypo(cfg, L):
    """Each added group of layers adds the same number of parameters (second difference zero); a group
    is one layer, or ``moe_every`` layers when the MoE layers alternate with dense ones (Llama 4)."""
    k = cfg.moe_every if cfg.is_moe else 1
    c = [param_count(cfg.replace(n_layers=L * k + i * k)) for i in range(3)]
    assert c[2] - c[1] == c[1] - c[0] >= 0


def test_sympy_formula_substitutes_to_the_count():
    """The SymPy total, substituted, is the integer (GPT-2-like and an encoder-decoder with GQA, LoRA, MoE)."""
    for cfg in (ModelConfig(), ModelConfig(arch="encoder-decoder", n_layers=4, n_kv_heads=4, ffn="swiglu",
                                           lora_rank=4, lora_targets=("q", "ffn"), n_experts=3, top_k=2)):
        pb = param_breakdown(cfg)
        expr, subs, value = pb.formula()
        assert value == pb.total
        assert pb.formula(include_lora=True)[2] == pb.total_with_lora
        assert {str(s) for s in expr.free_symbols} <= {"V", "P", "d", "L", "L_e", "L_d", "h", "h_kv", "d_h", "d_ff",
                                                       "E", "r"}


def test_gpt2_small_by_hand():
    """GPT-2 small (d 768, 12 layers, V 50257, 1024 positions, tied head, biases, final LN):
    wte 50257·768 = 38,597,376; wpe 1024·768 = 786,432;
    per layer: LN 2·768 ×2 = 3,072; attention 4·(768² + 768) = 2,362,368;
    MLP 768·3072 + 3072 + 3072·768 + 768 = 4,722,432  →  7,087,872; ×12 = 85,054,464;
    final LN 1,536. Total 38,597,376 + 786,432 + 85,054,464 + 1,536 = 124,439,808."""
    cfg = ModelConfig(d_model=768, n_layers=12, n_heads=12, d_ff=3072, vocab_size=50257, max_positions=1024)
    pb = param_breakdown(cfg)
    assert pb.total == 124_439_808
    assert pb.embedding == 38_597_376 + 786_432


def test_original_transformer_encoder_layer_by_hand():
    """One encoder layer of the base Transformer (d 512, 8 heads, d_ff 2048, biases, 2 LNs):
    attention 4·(512² + 512) = 1,050,624; FFN 512·2048 + 2048 + 2048·512 + 512 = 2,099,712;
    LNs 2·(512 + 512) = 2,048. Total 3,152,384 (seed 004's GATE answer rounds it to ~3.15M)."""
    one = ModelConfig(arch="encoder", d_model=512, n_layers=1, n_heads=8, d_ff=2048, ffn="relu", vocab_size=1,
                      pos="none", lm_head=False, final_norm=False)
    zero = one.replace(n_layers=0)
    assert param_count(one) - param_count(zero) == 3_152_384


def test_encoder_layer_without_attention_biases_by_hand():
    """Seed 004 exercise B3 (d 256, 4 heads, d_ff 1024, attention without biases):
    4·256² = 262,144; FFN 256·1024 + 1024 + 1024·256 + 256 = 525,568; LNs 2·512 = 1,024:
    788,736."""
    one = ModelConfig(arch="encoder", d_model=256, n_layers=1, n_heads=4, d_ff=1024, ffn="relu", attn_bias=False,
                      vocab_size=1, pos="none", lm_head=False, final_norm=False)
    assert param_count(one) - param_count(one.replace(n_layers=0)) == 788_736


def test_gqa_attention_by_hand():
    """Llama-2-70B attention per layer (d 8192, 64 heads of 128, 8 KV heads, no biases):
    W_Q and W_O 8192² = 67,108,864 each; W_K and W_V 8192·1024 = 8,388,608 each: 150,994,944."""
    cfg = ModelConfig(d_model=8192, n_layers=1, n_heads=64, n_kv_heads=8, d_ff=1, bias=False, vocab_size=1,
                      pos="none", lm_head=False, final_norm=False)
    assert param_breakdown(cfg).by_group()["attention"] == 150_994_944


def test_lora_by_hand():
    """LoRA r = 8 on W_Q and W_V of 12 layers at d 768: each adapter r·(768 + 768) = 12,288;
    2 per layer × 12 = 294,912, apart from the base."""
    base = ModelConfig()
    pb = param_breakdown(base.replace(lora_rank=8, lora_targets=("q", "v")))
    assert pb.lora == 294_912
    assert pb.total == param_count(base)


def test_moe_by_hand():
    """8 experts of a bias-free SwiGLU FFN (d 64, d_ff 128) per layer, 2 layers, router 64·8:
    per layer 512 + 8·3·64·128 = 197,120; two layers 394,240."""
    cfg = ModelConfig(d_model=64, n_layers=2, n_heads=4, d_ff=128, ffn="swiglu", bias=False, n_experts=8, top_k=2,
                      vocab_size=1, pos="none", lm_head=False)
    assert param_breakdown(cfg).by_group()["ffn"] == 394_240


def test_invalid_config_is_one_clear_error():
    from solver.errors import SolverInputError

    with pytest.raises(SolverInputError, match="divisible"):
        ModelConfig(n_heads=12, n_kv_heads=5)
    with pytest.raises(SolverInputError, match="pooler"):
        ModelConfig(arch="decoder", pooler=True)
