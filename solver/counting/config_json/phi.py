"""Phi-1/1.5/2 (``phi``) and Phi-3 (``phi3``): ``PhiForCausalLM``, ``Phi3ForCausalLM`` of transformers.

``phi``: one LayerNorm (γ, β) feeds attention and the FFN in parallel (``parallel_block`` 1);
Q, K, V and ``dense`` with biases; optional ``qk_layernorm`` (a LayerNorm over d_head on Q and on
K); a GELU FFN (fc1, fc2) with biases; RoPE on ``partial_rotary_factor`` (default 0.5) of each head;
final LayerNorm; an untied LM head with a bias.

``phi3``: Llama's structure with fused Q/K/V and gate/up projections (no biases; the same counts as
separate matrices), RMSNorm, SwiGLU, untied head; ``sliding_window`` on every layer. Phi-3's
published files carry ``"attention_bias": false`` (microsoft/Phi-3-mini-4k-instruct): transformers'
``Phi3Attention`` builds its projections without biases whatever the key says, so ``false`` is read
(no biases) and ``true`` is refused by name (biases the file asks for that the model does not build).
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import (
    GELUS,
    check_act,
    gelu_or_relu,
    kv_heads,
    req,
    rope_fraction,
    rotary_dim_of,
)

NEUTRAL = frozenset({"layer_norm_eps", "rms_norm_eps", "resid_pdrop", "embd_pdrop", "original_max_position_embeddings",
                     "partial_rotary_factor", "lm_head_dropout", "full_attn_mod", "sliding_window"})


def read_phi(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    act = get("hidden_act") or "gelu_new"
    check_act(act, GELUS, "hidden_act", refused)
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                  n_kv_heads=kv_heads(get, h), d_ff=req(get, "intermediate_size"), ffn=gelu_or_relu(act),
                  norm="layernorm", norm_position="pre", final_norm=True, bias=True,
                  vocab_size=req(get, "vocab_size"), max_positions=get("max_position_embeddings") or 1, pos="rope",
                  tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True, lm_head_bias=True,
                  parallel_block=1, qk_norm="head" if get("qk_layernorm") else "none",
                  norm_eps=float(get("layer_norm_eps") or 1e-5))
    if h and d % h == 0:
        fields["rotary_dim"] = rotary_dim_of(d // h, rope_fraction(raw, get, 0.5), notes)
    notes.append("Phi: attention and FFN in parallel from one LayerNorm; the LM head has a bias")
    return fields, notes


def read_phi3(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = ["Phi-3: fused Q/K/V and gate/up projections, counted as separate matrices (the same numbers)"]
    d, h = req(get, "hidden_size"), req(get, "num_attention_heads")
    check_act(get("hidden_act"), ("silu",), "hidden_act", refused)
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"), n_heads=h,
                  n_kv_heads=kv_heads(get, h), d_ff=req(get, "intermediate_size"), ffn="swiglu", norm="rmsnorm",
                  norm_position="pre", final_norm=True, bias=False, vocab_size=req(get, "vocab_size"),
                  max_positions=get("max_position_embeddings") or 1, pos="rope",
                  tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True,
                  norm_eps=float(get("rms_norm_eps") or 1e-5))
    if h and d % h == 0:
        fields["rotary_dim"] = rotary_dim_of(d // h, rope_fraction(raw, get, 1.0), notes)
    if get("attention_bias"):
        refused.append("attention_bias=true (Phi-3's attention projections have no biases in transformers)")
    window = get("sliding_window")
    if window:
        fields["sliding_window"] = int(window)
    return fields, notes


READERS = {"phi": read_phi, "phi3": read_phi3}
