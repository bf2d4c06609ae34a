"""GPT-J (``gptj``): ``GPTJForCausalLM`` of transformers.

One LayerNorm (γ, β) feeds attention and the FFN in parallel (``parallel_block`` 1); Q, K, V and
O without biases; a GELU FFN (``n_inner``, default 4·d) with biases; RoPE on the first
``rotary_dim`` features of each head; learned nothing else; final LayerNorm; an untied LM head
with a bias (``lm_head_bias``).
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import GELUS, check_act, gelu_or_relu, req, rotary_dim_of

NEUTRAL = frozenset({"layer_norm_epsilon", "n_ctx", "gradient_checkpointing", "task_specific_params"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    d, h = req(get, "n_embd"), req(get, "n_head")
    act = get("activation_function") or "gelu_new"
    check_act(act, GELUS, "activation_function", refused)
    rotary = get("rotary_dim")
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "n_layer"), n_heads=h, d_ff=get("n_inner") or 4 * d,
                  ffn=gelu_or_relu(act), norm="layernorm", norm_position="pre", final_norm=True, bias=True,
                  attn_bias=False, attn_out_bias=False, ffn_bias=True, norm_bias=True,
                  vocab_size=req(get, "vocab_size"), max_positions=get("n_positions") or 1, pos="rope",
                  tied_embeddings=bool(get("tie_word_embeddings", False)), lm_head=True, lm_head_bias=True,
                  parallel_block=1, norm_eps=float(get("layer_norm_epsilon") or 1e-5))
    if rotary and h and d % h == 0:
        fields["rotary_dim"] = rotary_dim_of(d // h, rotary / (d // h), notes)
    notes.append("GPT-J: attention and FFN in parallel from one LayerNorm; the LM head has a bias")
    return fields, notes


READERS = {"gptj": read}
