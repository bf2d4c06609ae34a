"""Hypothesis strategies for model configurations: small, valid, and across every option.

``transformer_configs()`` draws a :class:`~solver.counting.config.ModelConfig` small enough to build and
run on the CPU in milliseconds, covering every field: arch, ffn, norm, norm position, final and
embedding norms, every bias switch, every position scheme, tied or untied LM head (or none,
with or without its bias), BERT's segment table, [CLS] vector, pooler and classifier, MHA, GQA
and MQA, a head size that differs from d_model / n_heads, LoRA on any targets, and MoE; and
(issue 10) shared experts, an expert width of its own, dense first layers, latent attention
(with and without query compression and a rotary part) and sliding windows with global layers.
"""

from __future__ import annotations

from hypothesis import strategies as st

from solver.counting.config import ARCHS, FFNS, LORA_TARGETS, NORM_POSITIONS, NORMS, POSITIONS, ModelConfig

optional_bool = st.sampled_from([None, True, False])


@st.composite
def attention_heads(draw, rope: bool) -> dict:
    """n_heads, n_kv_heads (None = MHA, 1 = MQA, in between = GQA), d_head, d_model."""
    n_kv = draw(st.integers(1, 3))
    group = draw(st.integers(1, 3))
    n_heads = n_kv * group
    n_kv_heads = draw(st.sampled_from([None, n_kv])) if group > 1 or n_kv == 1 else None
    step = 2 if rope else 1
    if draw(st.booleans()):  # d_head given, n_heads·d_head need not be d_model
        d_head = step * draw(st.integers(1, 4))
        d_model = draw(st.integers(2, 16))
    else:
        d_head = None
        d_model = n_heads * step * draw(st.integers(1, 4))
    return {"n_heads": n_heads, "n_kv_heads": n_kv_heads, "d_head": d_head, "d_model": d_model}


@st.composite
def transformer_configs(draw, archs=ARCHS, max_layers: int = 2, min_layers: int = 0) -> ModelConfig:
    """A small valid ModelConfig (max_positions is at least 8: enough for seq ≤ 8), each stack
    with ``min_layers`` to ``max_layers`` layers."""
    arch = draw(st.sampled_from(archs))
    pos = draw(st.sampled_from(POSITIONS))
    heads = draw(attention_heads(rope=pos == "rope"))
    encoder = arch == "encoder"
    lm_head = draw(st.booleans())
    n_experts = draw(st.sampled_from([1, 1, 2, 3]))
    lora_rank = draw(st.sampled_from([0, 0, 1, 2]))
    layers = {}
    if arch == "encoder-decoder":
        layers = {"n_encoder_layers": draw(st.integers(min_layers, max_layers)),
                  "n_decoder_layers": draw(st.integers(min_layers, max_layers))}
    extra = draw(issue10_fields(arch, pos, heads, n_experts, lora_rank))
    if extra.get("kv_lora_rank"):
        lora_rank = 0
    norm_position = draw(st.sampled_from(NORM_POSITIONS if arch == "decoder" else ("pre", "post")))
    extra.update(draw(issue20_fields(arch, pos, heads, norm_position, extra, n_experts, lora_rank)))
    return ModelConfig(
        **extra,
        arch=arch,
        n_layers=draw(st.integers(min_layers, max_layers)),
        **layers,
        **heads,
        d_ff=draw(st.integers(1, 24)),
        ffn=draw(st.sampled_from(FFNS)),
        norm=draw(st.sampled_from(NORMS)),
        norm_position=norm_position,
        final_norm=draw(st.booleans()),
        embedding_norm=draw(st.booleans()),
        bias=draw(st.booleans()),
        attn_bias=draw(optional_bool),
        attn_out_bias=draw(optional_bool),
        ffn_bias=draw(optional_bool),
        norm_bias=draw(optional_bool),
        vocab_size=draw(st.integers(1, 40)),
        max_positions=draw(st.integers(8, 12)),
        pos=pos,
        tied_embeddings=draw(st.booleans()),
        lm_head=lm_head,
        lm_head_bias=lm_head and draw(st.booleans()),
        type_vocab_size=draw(st.integers(0, 3)),
        pooler=encoder and draw(st.booleans()),
        n_classes=draw(st.integers(0, 4)) if encoder else 0,
        cls_token=encoder and draw(st.booleans()),
        lora_rank=lora_rank,
        lora_targets=tuple(draw(st.lists(st.sampled_from(LORA_TARGETS), min_size=1, max_size=5, unique=True))),
        n_experts=n_experts,
        top_k=draw(st.integers(1, n_experts)),
    )


@st.composite
def issue10_fields(draw, arch: str, pos: str, heads: dict, n_experts: int, lora_rank: int) -> dict:
    """Experts, latent attention and the window; each off more often than on."""
    out: dict = {}
    if n_experts > 1 and draw(st.booleans()):
        out["n_shared_experts"] = draw(st.integers(0, 2))
        out["d_ff_expert"] = draw(st.sampled_from([None, 1, 5]))
        if arch == "decoder":
            out["first_dense_layers"] = draw(st.integers(0, 2))
        if lora_rank and (out["n_shared_experts"] or out.get("first_dense_layers") or out["d_ff_expert"]):
            out["n_shared_experts"], out["d_ff_expert"], out["first_dense_layers"] = 0, None, 0
    if arch != "decoder":
        return out
    if heads["n_kv_heads"] is None and draw(st.integers(0, 2)) == 0:
        out["kv_lora_rank"] = draw(st.integers(1, 6))
        out["q_lora_rank"] = draw(st.sampled_from([0, 3]))
        out["qk_rope_head_dim"] = draw(st.sampled_from([2, 4]) if pos == "rope" else st.sampled_from([0, 2]))
        out["v_head_dim"] = draw(st.sampled_from([None, 3]))
    if draw(st.integers(0, 2)) == 0:
        out["sliding_window"] = draw(st.integers(1, 6))
        out["global_every"] = draw(st.integers(0, 2))
    return out


@st.composite
def issue20_fields(draw, arch: str, pos: str, heads: dict, norm_position: str, extra: dict, n_experts: int,
                   lora_rank: int) -> dict:
    """Issue 20's blocks: parallel attention and FFN, partial RoPE, parameter-free norms, QK-norm,
    a position offset, shared-expert width and gate, router bias, MoE every k-th layer, sinks."""
    out: dict = {}
    mla = bool(extra.get("kv_lora_rank"))
    if arch == "decoder" and norm_position == "pre" and draw(st.integers(0, 2)) == 0:
        out["parallel_block"] = draw(st.sampled_from([1, 2]))
    d_head = heads["d_head"] if heads["d_head"] is not None else heads["d_model"] // heads["n_heads"]
    if pos == "rope" and not mla and d_head >= 4 and draw(st.booleans()):
        out["rotary_dim"] = draw(st.sampled_from([2, d_head - d_head % 2]))
    if draw(st.integers(0, 4)) == 0:
        out["norm_affine"] = False
    if not mla:
        out["qk_norm"] = draw(st.sampled_from(["none", "none", "head", "full"]))
    if pos == "learned":
        out["position_offset"] = draw(st.sampled_from([0, 0, 2]))
    if arch == "decoder" and not mla:
        out["attn_sinks"] = draw(st.booleans())
    if n_experts > 1:
        out["router_bias"] = draw(st.booleans())
    if n_experts > 1 and not lora_rank:  # LoRA on the FFN is modelled for plain routed experts only
        if extra.get("n_shared_experts"):
            out["d_ff_shared"] = draw(st.sampled_from([None, 3]))
            out["shared_expert_gate"] = draw(st.booleans())
        if arch == "decoder":
            out["moe_every"] = draw(st.sampled_from([1, 1, 2]))
    return out


#: A decoder-bearing configuration (something that can decode with a KV cache).
decoding_configs = transformer_configs(archs=("decoder", "encoder-decoder"))
