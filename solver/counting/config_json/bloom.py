"""BLOOM (``bloom``): ``BloomForCausalLM`` of transformers.

ALiBi (no position table), a LayerNorm on the word embeddings (``embedding_norm``), pre-LayerNorm
layers with biases everywhere (fused Q/K/V, ``dense``, a GELU FFN of 4·d), final LayerNorm, LM head
tied per ``tie_word_embeddings`` (default true). ``apply_residual_connection_post_layernorm`` true
(the residual taken after the norm) is refused.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import first, req

NEUTRAL = frozenset({"hidden_dropout", "layer_norm_epsilon", "slow_but_exact", "pretraining_tp", "offset_alibi",
                     "masked_softmax_fusion", "seq_length", "unk_token_id", "skip_bias_add", "skip_bias_add_qkv",
                     "bias_dropout_fusion", "attention_softmax_in_fp32"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    if get("apply_residual_connection_post_layernorm"):
        refused.append("apply_residual_connection_post_layernorm=true (a residual from the normed input)")
    d = first(get, "hidden_size", "n_embed")
    if d is None:
        d = req(get, "hidden_size")
    fields = dict(arch="decoder", d_model=d, n_layers=first(get, "n_layer", "num_hidden_layers") or req(get, "n_layer"),
                  n_heads=first(get, "n_head", "num_attention_heads") or req(get, "n_head"), d_ff=4 * d, ffn="gelu",
                  norm="layernorm", norm_position="pre", final_norm=True, bias=True, embedding_norm=True,
                  vocab_size=req(get, "vocab_size"), max_positions=1, pos="alibi",
                  tied_embeddings=bool(get("tie_word_embeddings", True)), lm_head=True,
                  norm_eps=float(get("layer_norm_epsilon") or 1e-5))
    return fields, ["BLOOM: ALiBi, a LayerNorm on the word embeddings, d_ff = 4·d"]


READERS = {"bloom": read}
