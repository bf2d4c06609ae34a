"""Falcon (``falcon``): ``FalconForCausalLM`` of transformers.

Attention: fused Q/K/V and ``dense``, biases on every linear layer per ``bias`` (LayerNorms always
have γ and β). K/V heads: ``num_kv_heads`` with ``new_decoder_architecture`` (Falcon-40B/180B), 1 with
``multi_query`` (Falcon-7B), else as many as the query heads. Block: with ``parallel_attn`` attention
and the GELU FFN (``ffn_hidden_size``, default 4·d) read the same input, from one LayerNorm
(``input_layernorm``) or, with the new architecture and ``num_ln_in_parallel_attn`` 2 (its default),
from two (``ln_attn``, ``ln_mlp``); without it, two LayerNorms one after the other. RoPE, or ALiBi
with ``alibi``; final LayerNorm; LM head tied per ``tie_word_embeddings`` (default true).
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import GELUS, check_act, gelu_or_relu, req

NEUTRAL = frozenset({"hidden_dropout", "layer_norm_epsilon", "rope_theta", "apply_residual_connection_post_layernorm",
                     "n_head", "n_layer"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    act = get("activation") or "gelu"
    check_act(act, GELUS, "activation", refused)
    if get("apply_residual_connection_post_layernorm"):
        refused.append("apply_residual_connection_post_layernorm=true (a residual from the normed input)")
    new = bool(get("new_decoder_architecture"))
    mq = get("multi_query")
    mq = True if mq is None else bool(mq)
    kv = get("num_kv_heads") or h
    kv_heads = kv if (new or not mq) else 1
    if not new and not mq:
        kv_heads = h  # the old architecture without multi_query projects 3·d_model: full K/V heads
    parallel = get("parallel_attn")
    parallel = True if parallel is None else bool(parallel)
    n_ln = get("num_ln_in_parallel_attn")
    if n_ln is None and new:
        n_ln = 2
    block = 0 if not parallel else (2 if n_ln == 2 else 1)
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                  n_kv_heads=None if kv_heads == h else kv_heads, d_ff=get("ffn_hidden_size") or 4 * d,
                  ffn=gelu_or_relu(act), norm="layernorm", norm_position="pre", final_norm=True,
                  bias=bool(get("bias")), norm_bias=True, vocab_size=req(get, "vocab_size"),
                  max_positions=get("max_position_embeddings") or 1, pos="alibi" if get("alibi") else "rope",
                  tied_embeddings=bool(get("tie_word_embeddings", True)), lm_head=True, parallel_block=block,
                  norm_eps=float(get("layer_norm_epsilon") or 1e-5))
    notes = [f"Falcon: {kv_heads} K/V heads; attention and FFN "
             + ({0: "one after the other", 1: "in parallel from one LayerNorm",
                 2: "in parallel, each from its own LayerNorm"}[block])]
    return fields, notes


READERS = {"falcon": read, "RefinedWeb": read, "RefinedWebModel": read}
