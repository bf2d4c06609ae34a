"""GPT-NeoX / Pythia (``gpt_neox``): ``GPTNeoXForCausalLM`` of transformers.

Pre-LayerNorm (γ and β) before attention and before the FFN; with ``use_parallel_residual`` (the
default, Pythia) both read the same input and add into the residual together (``parallel_block``
2), otherwise one after the other. Fused Q/K/V and the output ``dense`` carry biases per
``attention_bias`` (default true); the GELU FFN (``intermediate_size``) always has biases. RoPE on
``rotary_pct`` (default 0.25) of each head; final LayerNorm; LM head ``embed_out`` untied unless
``tie_word_embeddings``.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import (
    GELUS,
    check_act,
    gelu_or_relu,
    req,
    rope_fraction,
    rotary_dim_of,
)

NEUTRAL = frozenset({"hidden_dropout", "rotary_emb_base", "classifier_dropout",
                     "layer_norm_eps", "rope_theta", "rotary_pct"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    act = get("hidden_act") or "gelu"
    check_act(act, GELUS, "hidden_act", refused)
    parallel = get("use_parallel_residual")
    bias = get("attention_bias")
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                  d_ff=req(get, "intermediate_size"), ffn=gelu_or_relu(act), norm="layernorm", norm_position="pre",
                  final_norm=True, bias=True, attn_bias=True if bias is None else bias, ffn_bias=True, norm_bias=True,
                  vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
                  tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
                  parallel_block=2 if (parallel is None or parallel) else 0,
                  norm_eps=float(get("layer_norm_eps") or 1e-5))
    if h and d % h == 0:
        fields["rotary_dim"] = rotary_dim_of(d // h, rope_fraction(raw, get, 0.25), notes)
    notes.append("GPT-NeoX: attention and FFN " + ("in parallel, each from its own LayerNorm"
                                                    if fields["parallel_block"] else "one after the other"))
    return fields, notes


READERS = {"gpt_neox": read}
