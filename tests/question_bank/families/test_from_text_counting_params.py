"""The parameter-count keys (question_bank/families/counting_params.py), recomputed from the text.

For every ``counting.params_*`` family and its MCQ view, the numbers are parsed from the plain
statement with regular expressions, and the layers the statement describes are built as torch modules
on the meta device (``nn.Linear``, ``nn.MultiheadAttention``, ``nn.LayerNorm``, ``nn.RMSNorm``,
``nn.Embedding``): the count is the sum of their ``numel()``, with biases, β and tying as the
statement says. The key must accept that count (MCQ: the keyed option is the one printing it). Nothing
here reads ``given`` or imports the solver. ``python -m tests.question_bank.families.
test_from_text_counting_params`` sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    has,
    number_in,
)

META = torch.device("meta")


def numel(*modules: nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def linear(i: int, o: int, bias: bool) -> nn.Linear:
    return nn.Linear(i, o, bias=bias, device=META)


def layer_count(text: str) -> int:
    """'Each of the 58 layers ...' -> 58; a statement about one layer -> 1."""
    return number_in(r"Each of the (\d+) layers", text) if has(r"Each of the \d+ layers", text) else 1


def linear_bias(text: str) -> bool:
    if has(r"[Nn]o linear map has a bias|have no biases|the projections have no biases", text):
        return False
    assert has(r"[Ee]very linear map has a bias|have biases|each have a bias", text), f"bias not said:\n{text}"
    return True


def ln_beta(text: str) -> bool:
    if has(r"γ only \(no β\)", text):
        return False
    assert has(r"γ and β|usual elementwise affine", text), f"LayerNorm parameters not said:\n{text}"
    return True


def ffn(text: str, p=None, *, bias: bool | None = None) -> int:
    """A ReLU/GELU FFN d → d_ff → d, or a SwiGLU one with W₁, W₃: d → d_ff and W₂ back."""
    d, dff = number_in(r"d = ([\d,]+)", text), number_in(r"d_ff = ([\d,]+)", text)
    b = linear_bias(text) if bias is None else bias
    mats = [linear(d, dff, b), linear(dff, d, b)]
    if "SwiGLU" in text:
        mats.append(linear(d, dff, b))
    return layer_count(text) * numel(*mats)


def kv_proj(text: str, p=None, *, all_heads: bool = False) -> int:
    d, dh = number_in(r"d_model = ([\d,]+)", text), number_in(r"dₕ = ([\d,]+)", text)
    g = 1 if "multi-query attention (MQA)" in text else number_in(r"with (\d+) key/value heads", text)
    if all_heads:  # the slip: as many K/V heads as query heads
        g = number_in(r"h = (\d+) query heads", text)
    b = linear_bias(text)
    return layer_count(text) * numel(linear(d, g * dh, b), linear(d, g * dh, b))


def mha(text: str, p=None) -> int:
    d, h, b = number_in(r"d_model = ([\d,]+)", text), number_in(r"h = (\d+) heads", text), linear_bias(text)
    return layer_count(text) * numel(nn.MultiheadAttention(d, h, bias=b, device=META))


def encoder_layer(text: str, p=None, *, norms: bool = True) -> int:
    """Vaswani et al.'s encoder layer (self-attention, FFN, two LayerNorms), or its decoder layer
    (masked self-attention, cross-attention, FFN, three LayerNorms)."""
    d, h = number_in(r"d_model = ([\d,]+)", text), number_in(r"h = (\d+)", text)
    dff = number_in(rf"feed-forward network {d} → ([\d,]+) → {d}", text)
    b, beta = linear_bias(text), ln_beta(text)
    decoder = "cross-attention" in text
    n_att, n_ln = (2, 3) if decoder else (1, 2)
    assert has(rf"{('two', 'three')[decoder]} LayerNorms", text)
    mods = [nn.MultiheadAttention(d, h, bias=b, device=META) for _ in range(n_att)]
    mods += [linear(d, dff, b), linear(dff, d, b)]
    mods += [nn.LayerNorm(d, bias=beta, device=META) for _ in range(n_ln * norms)]
    return numel(*mods)


def lora(text: str, p=None, *, full: bool = False) -> int:
    """Every adapted dᵢₙ → dₒᵤₜ matrix gains A (r × dᵢₙ) and B (dₒᵤₜ × r)."""
    L, d = number_in(r"L = (\d+) layers", text), number_in(r"d_model = ([\d,]+)", text)
    h, dh, r = number_in(r"h = (\d+) heads", text), number_in(r"dₕ = (\d+)", text), number_in(r"rank r = (\d+)", text)
    g = number_in(r"(\d+) key/value heads?", text) if "key/value head" in text else h
    shapes = {"W_Q": (d, h * dh), "W_K": (d, g * dh), "W_V": (d, g * dh), "W_O": (h * dh, d)}
    m = re.search(r"LoRA of rank r = \d+ on ((?:W_[QKVO](?:, )?)+) of every layer", text)
    assert m, f"which matrices are adapted is not said:\n{text}"
    adapted = m[1].split(", ")
    adapters = [mod for w in adapted for mod in (linear(shapes[w][0], r, False), linear(r, shapes[w][1], False))]
    if full:  # the slip: the adapted matrices themselves
        adapters = [linear(*shapes[w], False) for w in adapted]
    return L * numel(*adapters)


def model(text: str, p=None) -> int:
    """A GPT-style decoder: embedding, positions, L layers, final LayerNorm, LM head (tied or not)."""
    V, d = number_in(r"V = ([\d,]+) tokens", text), number_in(r"d_model = ([\d,]+)", text)
    L = number_in(r"L = (\d+) layers", text)
    dff = number_in(rf"FFN {d} → ([\d,]+) → {d}", text)
    b, beta = linear_bias(text), ln_beta(text)
    mods: list[nn.Module] = [nn.Embedding(V, d, device=META)]
    if has(r"learned position embedding for ([\d,]+) positions", text):
        mods.append(nn.Embedding(number_in(r"learned position embedding for ([\d,]+) positions", text), d, device=META))
    else:
        assert "RoPE: no parameters" in text, f"positions not said:\n{text}"
    assert "two LayerNorms" in text and "final LayerNorm" in text
    layer = [linear(d, d, b) for _ in range(4)] + [linear(d, dff, b), linear(dff, d, b)]
    layer += [nn.LayerNorm(d, bias=beta, device=META) for _ in range(2)]
    mods.append(nn.LayerNorm(d, bias=beta, device=META))
    if "with its own weight matrix (not tied)" in text:
        mods.append(linear(d, V, False))
    else:
        assert "tied to the token embedding" in text, f"tying not said:\n{text}"
    return numel(*mods) + L * numel(*layer)  # the L layers are alike: one built, counted L times


def norms(text: str, p=None, *, beta: bool | None = None, final: bool = True) -> int:
    d = number_in(r"d_model = ([\d,]+)", text)
    if has(r"one LayerNorm over d_model", text):
        assert "usual elementwise affine" in text
        return numel(nn.LayerNorm(d, bias=beta is not False, device=META))
    if has(r"one RMSNorm over d_model", text):
        assert "learned scale" in text
        return numel(nn.RMSNorm(d, device=META))
    L = number_in(r"has (\d+) layers", text)
    stated_final = 1 if has(r"and a final (LayerNorm|RMSNorm) after the last layer", text) else 0
    assert stated_final or "there is no final norm" in text, f"final norm not said:\n{text}"
    final = stated_final and final
    if "RMSNorm" in text:
        assert "learned scale" in text
        one = nn.RMSNorm(d, device=META)
    else:
        one = nn.LayerNorm(d, bias=ln_beta(text) if beta is None else beta, device=META)
    return (2 * L + final) * numel(one)


RECOMPUTE = {
    "counting.params_ffn": ffn, "counting.params_kv_proj": kv_proj, "counting.params_layer": encoder_layer,
    "counting.params_lora": lora, "counting.params_mha": mha, "counting.params_model": model,
    "counting.params_norm": norms,
}
FIDS = with_views(RECOMPUTE)


def recompute_for(fid: str):
    return RECOMPUTE[fid.removesuffix("_mcq")]


def _model_sizes(text: str) -> tuple[int, int, int]:
    positions = re.search(r"learned position embedding for ([\d,]+) positions", text)
    return (number_in(r"V = ([\d,]+) tokens", text), number_in(r"d_model = ([\d,]+)", text),
            int(positions[1].replace(",", "")) if positions else 0)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "counting.params_ffn": {
        "forgot_biases": lambda t: ffn(t, bias=False),
        "forgot_layers": lambda t: ffn(t) // layer_count(t),
    },
    "counting.params_kv_proj": {
        "used_n_heads": lambda t: kv_proj(t, all_heads=True),
        "forgot_k_and_v": lambda t: kv_proj(t) // 2,
        "forgot_layers": lambda t: kv_proj(t) // layer_count(t),
    },
    "counting.params_mha": {
        "forgot_output_projection": lambda t: mha(t) * 3 // 4,
        "forgot_layers": lambda t: mha(t) // layer_count(t),
    },
    "counting.params_layer": {"forgot_norm_params": lambda t: encoder_layer(t, norms=False)},
    "counting.params_lora": {
        "full_matrices": lambda t: lora(t, full=True),
        "forgot_layers": lambda t: lora(t) // number_in(r"L = (\d+) layers", t),
    },
    "counting.params_model": {
        "forgot_position_table": lambda t: model(t) - _model_sizes(t)[2] * _model_sizes(t)[1],
        "tied_counted_twice": lambda t: model(t) + _model_sizes(t)[0] * _model_sizes(t)[1],
        "forgot_lm_head": lambda t: model(t) - _model_sizes(t)[0] * _model_sizes(t)[1],
    },
    "counting.params_norm": {
        "layernorm_without_beta": lambda t: norms(t, beta=False),
        "forgot_final_norm": lambda t: norms(t, final=False),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "counting_params", mistakes=SLIPS))




if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
