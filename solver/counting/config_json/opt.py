"""OPT (``opt``): ``OPTForCausalLM`` of transformers.

A learned position table of ``max_position_embeddings`` + 2 rows (positions start at offset 2:
``position_offset``), Q/K/V/O and the ReLU FFN (``ffn_dim``) with biases per ``enable_bias``,
LayerNorms (γ, β; none with ``layer_norm_elementwise_affine`` false) before each sub-layer
(``do_layer_norm_before``) or after it (OPT-350m), a final LayerNorm in the pre-norm case, LM head
tied per ``tie_word_embeddings`` (default true). ``word_embed_proj_dim`` other than
``hidden_size`` (OPT-350m's project_in/project_out) is refused.
"""

from __future__ import annotations

from typing import Any

from solver.counting.config_json.common import GELUS, check_act, gelu_or_relu, req

NEUTRAL = frozenset({"dropout", "layerdrop", "init_std", "prefix", "_remove_final_layer_norm", "scale_embedding"})


def read(raw: dict, get, refused: list[str]) -> tuple[dict[str, Any], list[str]]:
    d = req(get, "hidden_size")
    act = get("activation_function") or "relu"
    check_act(act, GELUS, "activation_function", refused)
    proj = get("word_embed_proj_dim")
    if proj not in (None, d):
        refused.append(f"word_embed_proj_dim={proj} != hidden_size={d} (project_in/project_out are not modelled)")
    pre = get("do_layer_norm_before")
    pre = True if pre is None else bool(pre)
    if raw.get("_remove_final_layer_norm"):
        refused.append("_remove_final_layer_norm=true (a pre-norm OPT without its final LayerNorm)")
    bias = get("enable_bias")
    affine = get("layer_norm_elementwise_affine")
    fields = dict(arch="decoder", d_model=d, n_layers=req(get, "num_hidden_layers"),
                  n_heads=req(get, "num_attention_heads"), d_ff=req(get, "ffn_dim"), ffn=gelu_or_relu(act),
                  norm="layernorm", norm_position="pre" if pre else "post", final_norm=pre,
                  bias=True if bias is None else bool(bias), norm_bias=True,
                  norm_affine=True if affine is None else bool(affine), vocab_size=req(get, "vocab_size"),
                  max_positions=req(get, "max_position_embeddings"), position_offset=2, pos="learned",
                  tied_embeddings=bool(get("tie_word_embeddings", True)), lm_head=True)
    return fields, ["OPT: the learned position table has max_position_embeddings + 2 rows (offset 2)"]


READERS = {"opt": read}
