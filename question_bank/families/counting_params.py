"""Parameter counts: an MHA layer, an FFN, the norms, one encoder/decoder layer, a whole model,
LoRA adapters and the K/V projections of MQA/GQA.

Every key is ``solver.counting.params.param_breakdown`` of a :class:`~solver.counting.config.ModelConfig`
that says exactly what the statement says (biases on or off, tied or untied embeddings, the
norm kind...), summed over the components the question asks for. Every misconception is the
same breakdown with the mistake applied to the configuration (``bias=False``,
``n_kv_heads=None``, ``tied_embeddings=False``, ``final_norm=False``...) or with a part left
out (the norms, W_O, the B factor of LoRA). The worked solution lists the components with
their monomials (``d·h·d_h``), the substitution and the exact integer.

Conventions (from ``solver.counting.config``): W_Q is d × h·d_h, W_K and W_V are d × h_kv·d_h, W_O is
h·d_h × d; a bias has one entry per output; LayerNorm has γ and β (2d), RMSNorm γ only (d).
"""

from __future__ import annotations

from typing import Any

from question_bank.families.counting_common import add_components, big
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, integer_key
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "004_83489721195aedaa.txt §15.3, §15.5 (parameter counts); 003_f22b31e216cc5b5a.txt (LoRA, SwiGLU, GQA)"


def _cfg(**kw: Any):
    """A configuration with no embeddings or heads to speak of (vocab 1, no positions)."""
    from solver.counting.config import ModelConfig

    base = dict(arch="encoder", n_layers=1, vocab_size=1, pos="none", final_norm=False, lm_head=False,
                tied_embeddings=False)
    base.update(kw)
    return ModelConfig(**base)


def _parts(cfg: Any, groups: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[Any]:
    """The components of ``cfg`` in ``groups`` whose key contains none of ``skip``."""
    from solver.counting.params import param_breakdown

    return [c for c in param_breakdown(cfg).components
            if c.group in groups and not any(s in c.key for s in skip)]


def _count(cfg: Any, groups: tuple[str, ...], skip: tuple[str, ...] = ()) -> int:
    return sum(c.count for c in _parts(cfg, groups, skip))


def _dims(d: Draw, models: tuple[int, ...], heads: tuple[int, ...] = (8, 12, 16)) -> tuple[int, int]:
    while True:
        dm, h = d.pick(models), d.pick(heads)
        if dm % h == 0:
            return dm, h


def _width(d: Draw, lo: int, hi: int, heads: tuple[int, ...] = (8, 12, 16, 32)) -> tuple[int, int]:
    """issue 22: a width that is any multiple of 64 from 64·lo to 64·hi, and a head count that divides it
    (a few fixed widths gave fewer than 50 distinct problems per level). Drawn with ``d.pick`` over the widths, so that
    a teacher's edit of d_model replays (issue 27: the trace logs the value picked)."""
    while True:
        dm, h = d.pick(tuple(range(64 * lo, 64 * hi + 1, 64))), d.pick(heads)
        if dm % h == 0:
            return dm, h


def _finish(d: Draw, st: Doc, sol: Doc, value: int, wrongs: list[Wrong], given: dict[str, Any],
            hints: list[str]) -> Problem:
    key = integer_key(value)
    mis = keep_distinct(key, wrongs)
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis, given=given, hints=hints)


#: issue 38: the inverse of each bias slip, a mistake of its own (None: none that a student makes)
_BIAS_INVERSE = {True: "counted every bias twice", False: None}

_BIAS_WRONG = {
    True: ("forgot_biases", "forgot the biases", "The statement says the layers have biases: add one bias entry per output."),
    False: ("counted_biases", "counted biases that are not there", "These layers have no biases: count the weight matrices only."),
}


@family("counting.params_mha", topic="counting", title="Parameters of a multi-head attention layer",
        types=("integer",), tags=("parameters", "multi-head", "biases"), source=_SRC)
def params_mha(d: Draw) -> Problem:
    """W_Q, W_K, W_V, W_O of d × d each: 4d² weights, plus 4d biases when there are biases."""
    # issue 39: any width that is a multiple of 64 up to 8,192 (up to 2,560 gave 37 distinct easy keys in 200 draws)
    d_model, h = _width(d, 4, 128, (8, 12, 16, 32, 64)) if d.level < 2 else _width(d, 8, 128, (8, 12, 16, 32, 64))
    # Levels (issue 12: disjoint, ordered): easy, one layer without biases (4d²); medium, one layer
    # with biases (+4d); hard, several layers with biases (× L).
    d.rng.random()  # the former bias coin, kept so that the draws after it stay as they were
    bias = d.level == 1 or (d.level == 2 and d.rng.random() < 0.7)
    layers = d.pick(tuple(range(4, 97))) if d.level == 2 else 1
    cfg = _cfg(d_model=d_model, n_heads=h, d_ff=4 * d_model, bias=bias, n_layers=layers)
    comps = _parts(cfg, ("attention",))
    bid, blabel, bfb = _BIAS_WRONG[bias]
    wrongs = [
        Wrong(bid, blabel, bfb, _count(cfg.replace(bias=not bias), ("attention",)), inverse=_BIAS_INVERSE[bias]),
        Wrong("forgot_output_projection", "forgot the output projection W_O",
              "Multi-head attention ends with W_O (h·dₖ × d_model) that mixes the heads.",
              _count(cfg, ("attention",), skip=(".o.",))),
        Wrong("full_width_heads", "gave every head d_model-wide projections",
              "The heads split d_model: each head's W_Qᵢ is d_model × d_model/h, so all heads together are d_model × d_model.",
              _count(cfg.replace(d_head=d_model), ("attention",)),
              inverse="counted one head's projections only (d_model × d_k each)",
              inverse_value=_count(cfg.replace(d_head=d_model // h, n_heads=1), ("attention",), skip=(".bias",))
              if not bias else None),
        Wrong("forgot_layers", "counted one layer only", f"There are {layers} layers: multiply by {layers}.",
              _count(cfg.replace(n_layers=1), ("attention",)) if layers > 1 else None,
              inverse=f"multiplied by the {layers} layers twice", inverse_value=_count(cfg, ("attention",)) * layers),
    ]
    st = Doc()
    what = "A multi-head self-attention layer" if layers == 1 else f"Each of the {layers} layers of an encoder has a multi-head self-attention sub-layer; it"
    st.p(f"{what} has $d_{{model}} = {d_model}$ and $h = {h}$ heads with $d_k = d_v = d_{{model}}/h$. The query, key and "
         r"value projections $W_Q, W_K, W_V$ and the output projection $W_O$ "
         + ("**have biases**." if bias else "have **no biases**."))
    st.p("How many trainable parameters do the attention sub-layers have in total?" if layers > 1 else
         "How many trainable parameters does this layer have?")
    sol = Doc()
    sol.p(f"$d_h = d_{{model}}/h = {d_model}/{h} = {cfg.head_dim}$, so all heads of $W_Q$ together map "
          f"${d_model} \\to {h} \\times {cfg.head_dim} = {cfg.q_dim}$; the same for $W_K$, $W_V$; $W_O$ maps back.")
    value = add_components(sol, comps)
    return _finish(d, st, sol, value, wrongs, {"d_model": d_model, "n_heads": h, "bias": bias, "n_layers": layers},
                   ["Four projections of d_model × d_model each; biases add d_model each."])


@family("counting.params_ffn", topic="counting", title="Parameters of a feed-forward network (ReLU/GELU or SwiGLU)",
        types=("integer",), tags=("parameters", "ffn", "swiglu"), source=_SRC)
def params_ffn(d: Draw) -> Problem:
    """ReLU/GELU: 2·d·d_ff (+ d_ff + d biases); SwiGLU: 3·d·d_ff (+ 2·d_ff + d biases).

    Misconceptions: the biases forgotten (or counted where there are none), SwiGLU with two matrices
    (or a ReLU/GELU FFN with three), one matrix only, one layer only (or one layer too few or too many),
    the down projection's bias taken d_ff long (+ (d_ff − d) per layer), and SwiGLU's gate bias forgotten
    (the d_ff + d biases of a two-matrix FFN: − d_ff per layer)."""
    # Levels (issue 12: disjoint, ordered): easy, one ReLU/GELU FFN (two matrices); medium, one SwiGLU
    # FFN (three matrices, d_ff = 8d/3) with biases; hard, the same over several layers (× L).
    kind = d.pick((("relu", "gelu"), ("swiglu",), ("swiglu",))[d.level])
    # issue 22: any width that is a multiple of 96 (SwiGLU: 8d/3 whole) or 64, and more depths (four fixed
    # widths gave fewer than 50 distinct problems per level)
    if kind == "swiglu":
        # issue 39: d_ff any multiple of 64 near 8d/3 (LLaMA rounds 8d/3 up to a multiple of 256: 11,008 for
        # d = 4,096), so that the key is not fixed by d alone (105 distinct medium keys in 200 draws)
        d_model = d.pick(tuple(range(384, 12289, 96)))
        d_ff = d.pick(tuple(range(64 * -(-5 * d_model // 128), 64 * (7 * d_model // 128) + 1, 64)))  # traced: an edit replays
    else:
        d_model = d.pick(tuple(range(256, 2561, 64)))
        d_ff = 4 * d_model
    coin = d.rng.random() < (0.3 if kind == "swiglu" else 0.6)
    bias = coin if d.level == 0 else True  # medium and hard: every bias to count as well
    layers = d.pick(tuple(range(4, 81))) if d.level == 2 else 1
    cfg = _cfg(d_model=d_model, n_heads=1, d_ff=d_ff, ffn=kind, bias=bias, n_layers=layers)
    comps = _parts(cfg, ("ffn",))
    bid, blabel, bfb = _BIAS_WRONG[bias]
    wrongs = [
        # issue 39, round 3: not mirrored at hard: the weights 3·d·d_ff hold more factors of 2 than the biases
        # 2·d_ff + d, so the count without biases and the count with them twice both have more trailing zero bits than
        # the key ("the option with the fewest factors of 2" found the key in 42 % of the draws); there the gate's bias
        # and the fencepost slip on the layers go either way
        Wrong(bid, blabel, bfb, _count(cfg.replace(bias=not bias), ("ffn",)),
              inverse=_BIAS_INVERSE[bias] if d.level < 2 else None),
        Wrong("swiglu_two_matrices", "counted SwiGLU with two matrices",
              "SwiGLU has three matrices: the gate W₁ and the up projection W₃ (d → d_ff) and the down projection W₂.",
              _count(cfg.replace(ffn="gelu"), ("ffn",)) if kind == "swiglu" else None),
        Wrong("three_matrices", "counted a gated (SwiGLU) FFN", f"A {kind.upper()} FFN has two matrices, d → d_ff → d.",
              _count(cfg.replace(ffn="swiglu"), ("ffn",)) if kind != "swiglu" else None),
        Wrong("one_matrix", "counted one matrix only", "The FFN expands to d_ff and projects back: count both directions.",
              _count(cfg, ("ffn",), skip=("down", "gate"))),
        Wrong("forgot_layers", "counted one layer only", f"There are {layers} layers: multiply by {layers}.",
              _count(cfg.replace(n_layers=1), ("ffn",)) if layers > 1 else None,
              inverse=f"multiplied by the {layers} layers twice", inverse_value=_count(cfg, ("ffn",)) * layers),
        # issue 39, round 3: a fencepost slip on the layers, each way (× (L − 1)/L or × (L + 1)/L: a step that varies with
        # L, and whose factors of 2 go up or down with L's parity)
        Wrong("one_layer_too_few", "counted one layer too few", f"There are {layers} layers, not {layers - 1}.",
              _count(cfg.replace(n_layers=layers - 1), ("ffn",)) if layers > 1 else None,
              inverse="counted one layer too many"),
        # every bias taken d_ff long: the down projection's bias has d entries (one per output), not d_ff
        Wrong("down_bias_d_ff", "gave the down projection a d_ff-long bias",
              f"A bias has one entry per output: W₂ maps back to d = {d_model}, so its bias has {d_model} entries, not d_ff.",
              sum(c.times * d_ff if c.name == "ffn.down.bias" else c.count for c in comps) if bias else None),
        # the biases of a two-matrix FFN (d_ff + d) carried over to SwiGLU: the gate's bias left out
        Wrong("forgot_gate_bias", "forgot the gate's bias (counted d_ff + d biases)",
              "SwiGLU's gate W₁ and up projection W₃ each have a d_ff-long bias: 2·d_ff + d biases per layer.",
              _count(cfg, ("ffn",), skip=("gate.bias",)) if bias and kind == "swiglu" else None,
              inverse="counted the gate's d_ff-long bias twice"),
    ]
    st = Doc()
    if kind == "swiglu":
        body = (r"a SwiGLU feed-forward network $\mathrm{FFN}(x) = W_2\,(\mathrm{SiLU}(W_1 x) \odot W_3 x)$ with "
                f"$W_1, W_3$ mapping $d = {d_model} \\to d_{{ff}} = {d_ff}$ and $W_2$ mapping back")
    else:
        act = "ReLU" if kind == "relu" else "GELU"
        body = (f"a position-wise feed-forward network $d = {d_model} \\to d_{{ff}} = {d_ff} \\to d$ with a {act} "
                "in between")
    st.p(("A Transformer layer has " if layers == 1 else f"Each of the {layers} layers of a model has ") + body
         + (". **Every linear map has a bias.**" if bias else ". The linear maps have **no biases**."))
    st.p("How many trainable parameters does the feed-forward network have" + (" in all layers together?" if layers > 1 else "?"))
    sol = Doc()
    sol.p(("Three" if kind == "swiglu" else "Two") + f" weight matrices of ${d_model} \\times {d_ff}$"
          + (" and a bias per output" if bias else "") + ":")
    value = add_components(sol, comps)
    return _finish(d, st, sol, value, wrongs, {"d_model": d_model, "d_ff": d_ff, "ffn": kind, "bias": bias,
                                               "n_layers": layers},
                   ["Count d_in × d_out for every matrix, and d_out for every bias."])


@family("counting.params_norm", topic="counting", title="Parameters of LayerNorm and RMSNorm",
        types=("integer",), tags=("parameters", "layernorm", "rmsnorm"), source=_SRC)
def params_norm(d: Draw) -> Problem:
    """LayerNorm has γ and β (2d), RMSNorm only γ (d); a pre-norm model has 2 per layer plus a final one.

    Misconceptions: LayerNorm with γ only, RMSNorm with a β, the final norm forgotten (or added where
    the statement has none), one norm per layer (or three, as in an encoder-decoder's decoder), a d × d
    matrix for one norm, and BatchNorm's running mean and variance counted (+ 2d per norm)."""
    norm = d.pick(("layernorm", "rmsnorm"))
    # issue 22: any width that is a multiple of 64 up to 8192, and more depths (five widths gave five easy problems)
    d_model = 64 * d.rng.randint(4, 128)
    if d.level == 0:
        layers, final = 1, False
    else:  # levels (issue 12: disjoint, ordered): medium, 2 norms per layer; hard, plus a final norm
        layers = d.pick(tuple(range(4, 97)))  # issue 39: any depth (twelve gave 351 distinct medium keys in 500 draws)
        d.rng.random()  # the former final-norm coin, kept so that the draws after it stay as they were
        final = d.level == 2
    cfg = _cfg(arch="decoder", d_model=d_model, n_heads=8, d_ff=4 * d_model, norm=norm, n_layers=layers,
               final_norm=final, bias=(norm == "layernorm"))
    comps = _parts(cfg, ("norm",))
    per = 2 * d_model if norm == "layernorm" else d_model
    n_norms = 2 * layers + final

    def norms(c: Any) -> int:  # level 0 asks for ONE norm: the per-tensor sizes; otherwise all of them
        parts = _parts(c, ("norm",))
        return sum(p.per for p in parts) if d.level == 0 else sum(p.count for p in parts)

    wrongs = [
        # issue 38: each slip's inverse, where a student makes it, named as that mistake is named here
        Wrong("layernorm_without_beta", "counted LayerNorm with γ only", "LayerNorm has a scale γ AND a shift β: 2·d per norm.",
              norms(cfg.replace(norm_bias=False)) if norm == "layernorm" else None,
              inverse="counted a running mean and variance (as in BatchNorm)", inverse_value=2 * norms(cfg)),
        Wrong("rmsnorm_with_beta", "gave RMSNorm a β", "RMSNorm has only the scale γ (no mean subtraction, no shift): d per norm.",
              norms(cfg.replace(norm="layernorm", norm_bias=True)) if norm == "rmsnorm" else None),
        Wrong("forgot_final_norm", "forgot the final norm", "A pre-norm model has one more norm after the last layer.",
              norms(cfg.replace(final_norm=False)) if final else None),
        Wrong("one_norm_per_layer", "counted one norm per layer", "Each layer has two norms: before attention and before the FFN.",
              (norms(cfg) - layers * per) if d.level else None, inverse="counted three norms per layer"),
        Wrong("counted_d_squared", "counted a d × d matrix", "A norm's parameters are vectors of length d, not matrices.",
              d_model * d_model if d.level == 0 else None),
        # BatchNorm's running mean and variance (buffers, not trainable, and LayerNorm/RMSNorm keep none) counted
        Wrong("counted_running_stats", "counted a running mean and variance (as in BatchNorm)",
              "LayerNorm and RMSNorm compute their statistics from each token on the fly: they keep no running mean or "
              "variance (BatchNorm does, as buffers, not trainable parameters).",
              norms(cfg) + (1 if d.level == 0 else n_norms) * 2 * d_model),
        # a third norm per layer, as in the decoder of an encoder-decoder (before its cross-attention)
        Wrong("three_norms_per_layer", "counted three norms per layer",
              "A decoder-only layer has two sub-layers (attention and the FFN), hence two norms; only the decoder of an "
              "encoder-decoder has a third (before cross-attention).",
              norms(cfg) + layers * per if d.level else None),
        Wrong("added_final_norm", "added a final norm the statement rules out",
              "The statement says there is no final norm: count the two norms of each layer only.",
              norms(cfg.replace(final_norm=True)) if d.level and not final else None, inverse="counted one norm too few"),
    ]
    st = Doc()
    name = "LayerNorm" if norm == "layernorm" else "RMSNorm"
    if d.level == 0:
        st.p(f"How many trainable parameters does one {name} over $d_{{model}} = {d_model}$ features have "
             + ("(with its usual elementwise affine parameters)?" if norm == "layernorm" else "(with its learned scale)?"))
    else:
        st.p(f"A pre-norm decoder-only Transformer with $d_{{model}} = {d_model}$ has {layers} layers, each with "
             f"{'an' if norm == 'rmsnorm' else 'a'} {name} "
             "before the attention sub-layer and one before the FFN"
             + (f", and a final {name} after the last layer." if final else "; there is no final norm.")
             + (" Each LayerNorm has its usual γ and β." if norm == "layernorm" else " Each RMSNorm has a learned scale."))
        st.p(f"How many trainable parameters do all the {name}s hold together?")
    sol = Doc()
    sol.p(f"One {name} over $d = {d_model}$ has " + (f"$\\gamma$ and $\\beta$: $2d = {per}$." if norm == "layernorm"
                                                    else f"only $\\gamma$: $d = {per}$."))
    if d.level == 0:  # one norm: the per-tensor sizes of the layer's norm components
        value = sum(c.per for c in comps)
        sol.p(" + ".join(f"{c.label.split(' ')[-1]}: ${c.per}$" for c in comps) + f" $= {value}$")
    else:
        value = add_components(sol, comps)
    return _finish(d, st, sol, value, wrongs, {"d_model": d_model, "norm": norm, "n_layers": layers, "final_norm": final,
                                               "level": d.level},
                   ["LayerNorm: 2·d (γ, β). RMSNorm: d (γ)."])


@family("counting.params_layer", topic="counting", title="Parameters of one encoder or decoder layer",
        types=("integer",), tags=("parameters", "encoder", "decoder", "cross-attention"), marks=2, source=_SRC)
def params_layer(d: Draw) -> Problem:
    """Encoder layer: MHA + FFN + 2 LayerNorms; decoder layer of an encoder-decoder: + cross-attention + a third norm.

    Levels (issue 12: disjoint, ordered): easy, an encoder layer without biases (LayerNorms γ only:
    the weight matrices and γ); medium, an encoder layer with every bias and β (twice the terms);
    hard, a decoder layer of an encoder-decoder (a second attention block and a third norm to
    remember), with every bias in about 7 draws in 10 and without biases (γ only) in the others."""
    # issue 39: any width that is a multiple of 64 up to 4,096 and any d_ff that is a multiple of 64 from 2d to 4d
    # (d_ff = 4d fixed the key by d alone: 29 distinct medium keys in 200 draws)
    d_model, h = _width(d, 4, 64)
    d_ff = d.pick(tuple(range(2 * d_model, 4 * d_model + 1, 64)))  # traced: an edit replays
    kind = "decoder" if d.level == 2 else "encoder"
    bias = d.level == 1 or (d.level == 2 and d.rng.random() < 0.7)
    if kind == "encoder":
        cfg = _cfg(d_model=d_model, n_heads=h, d_ff=d_ff, ffn="relu", bias=bias, norm_position="post")
        groups: tuple[str, ...] = ("attention", "ffn", "norm")
    else:
        cfg = _cfg(arch="encoder-decoder", n_layers=1, n_encoder_layers=0, n_decoder_layers=1, d_model=d_model,
                   n_heads=h, d_ff=d_ff, ffn="relu", bias=bias, norm_position="post")
        groups = ("attention", "cross_attention", "ffn", "norm")
    comps = _parts(cfg, groups)
    enc_like = _cfg(d_model=d_model, n_heads=h, d_ff=d_ff, ffn="relu", bias=bias)
    wrongs = [
        Wrong("forgot_norm_params", "forgot the LayerNorm parameters",
              "Each LayerNorm has γ and β of d_model each" + ("." if bias else " (γ only here)."),
              _count(cfg, groups[:-1]),
              inverse=("counted a running mean and variance in every LayerNorm (as in BatchNorm)" if bias
                       else "gave the γ-only LayerNorms a β as well")),
        Wrong("forgot_biases", "forgot the biases", "Every linear map and LayerNorm here has a bias.",
              _count(cfg.replace(bias=False), groups) if bias else None, inverse="counted every bias twice"),
        Wrong("forgot_cross_attention", "forgot the cross-attention sub-layer",
              "A decoder layer of an encoder-decoder also attends to the encoder output: a second MHA and a third norm.",
              _count(enc_like, ("attention", "ffn", "norm")) if kind == "decoder" else None),
        Wrong("forgot_ffn_biases_only", "counted the FFN without biases", "The FFN's two linear maps have biases too.",
              _count(cfg, groups, skip=("ffn.up.bias", "ffn.down.bias")) if bias else None,
              inverse="counted the FFN's two biases twice"),
    ]
    st = Doc()
    b = ("every linear map has a bias and every LayerNorm has γ and β" if bias
         else "no linear map has a bias and every LayerNorm has γ only (no β)")
    if kind == "encoder":
        st.p(f"One layer of a Transformer **encoder** (as in Vaswani et al.): multi-head self-attention with $d_{{model}} = {d_model}$, "
             f"$h = {h}$ (projections $W_Q, W_K, W_V, W_O$), a ReLU feed-forward network ${d_model} \\to {d_ff} \\to {d_model}$, "
             f"and two LayerNorms (one after each sub-layer); {b}.")
    else:
        st.p(f"One **decoder** layer of an encoder-decoder Transformer (as in Vaswani et al.): masked multi-head self-attention, "
             f"multi-head cross-attention over the encoder output, a ReLU feed-forward network ${d_model} \\to {d_ff} \\to {d_model}$, "
             f"and three LayerNorms; $d_{{model}} = {d_model}$, $h = {h}$, each attention has $W_Q, W_K, W_V, W_O$; {b}.")
    st.p("How many trainable parameters does this one layer have?")
    sol = Doc()
    value = add_components(sol, comps)
    return _finish(d, st, sol, value, wrongs, {"kind": kind, "d_model": d_model, "n_heads": h, "d_ff": d_ff, "bias": bias},
                   [_layer_hint(kind, bias)])


def _layer_hint(kind: str, bias: bool) -> str:
    """The hint for this draw (issue 12: "each LayerNorm 2d" was wrong for γ-only draws, and one
    attention block was counted where a decoder layer has two)."""
    attn = "4·d² + 4d" if bias else "4·d²"
    ffn = "2·d·d_ff + d_ff + d" if bias else "2·d·d_ff"
    each = "2d (γ, β)" if bias else "d (γ only)"
    if kind == "encoder":
        return f"One attention block: {attn}; FFN: {ffn}; two LayerNorms: {each} each."
    return f"Two attention blocks (self and cross): {attn} each; FFN: {ffn}; three LayerNorms: {each} each."


@family("counting.params_model", topic="counting", title="Parameters of a whole decoder-only model",
        types=("integer",), tags=("parameters", "embeddings", "tied-embeddings", "lm-head"), marks=2, source=_SRC)
def params_model(d: Draw) -> Problem:
    """Token (and position) embeddings, L layers, final norm, LM head tied (counted once) or not."""
    from solver.counting.config import ModelConfig
    from solver.counting.params import param_breakdown

    # Levels (issue 12: disjoint, ordered): easy, RoPE and no biases (LayerNorms γ only): token
    # embedding, the layers' matrices and γ's, the head; medium, learned positions, every bias and β,
    # a tied head (a position table, biases and the tying to track); hard, the same with an untied
    # head of its own, and wider or deeper models.
    # issue 39: any width that is a multiple of 64, any depth in a range, a vocabulary of any size (a tokeniser's
    # is any count: GPT-2's 50,257, BERT's 30,522) and more context lengths: three widths, three depths and three
    # vocabularies gave about 70 distinct keys in 500 draws, which a test-wise student remembers; and the count's
    # last digits (its factors of 2) no longer tell the key from a slip that adds or drops the odd norm term.
    d_model, h = _width(d, 4, 16, (4, 8, 16)) if d.level < 2 else _width(d, 8, 24, (8, 12, 16))
    layers = d.pick(tuple(range(2, 9)) if d.level < 2 else tuple(range(6, 33)))
    vocab = d.rng.randint(20000, 130000)
    pos = "rope" if d.level == 0 else "learned"
    n_ctx = d.pick((512, 1024, 1536, 2048, 4096))
    coin = d.rng.random() < 0.5
    tied = coin if d.level == 0 else d.level == 1
    bias = pos == "learned"
    cfg = ModelConfig(arch="decoder", d_model=d_model, n_layers=layers, n_heads=h, d_ff=4 * d_model, ffn="gelu",
                      norm="layernorm", norm_position="pre", final_norm=True, bias=bias, vocab_size=vocab,
                      max_positions=n_ctx, pos=pos, tied_embeddings=tied, lm_head=True)
    pb = param_breakdown(cfg)
    norms = pb.by_group().get("norm", 0)

    def big_inverse(label: str) -> str | None:
        # issue 39: above easy, no inverse for a slip that moves the count by the embedding matrix (a third to
        # nine tenths of it): k·(1 + s) one way and k·(1 − s) the other are told apart by their ratio, so the view
        # crossed with it placed the key by size (32-34 %); the slips of a few percent (positions, norms, biases)
        # look alike either way
        return label if d.level == 0 else None

    # issue 38: a mistake made the other way round is offered only with its own name (``inverse``), each a
    # mistake a student makes: the norms' parameters counted twice over is a β given to γ-only LayerNorms
    # (easy: +d per norm), or BatchNorm's running mean and variance counted (medium, hard: +2d per norm)
    wrongs = [
        Wrong("tied_counted_twice", "counted the tied embedding twice",
              "The LM head IS the token embedding matrix (tied): count it once.",
              param_breakdown(cfg.replace(tied_embeddings=False)).total if tied else None,
              inverse=big_inverse("left the tied embedding matrix out altogether (counted neither it nor the head)")),
        Wrong("forgot_lm_head", "forgot the untied LM head", "The LM head has its own d_model × V matrix here (not tied).",
              param_breakdown(cfg.replace(tied_embeddings=True)).total if not tied else None,
              inverse=big_inverse("counted the untied head's V × d_model matrix twice")),
        Wrong("forgot_position_table", "forgot the position embedding", "A learned position table has max_positions × d_model entries.",
              param_breakdown(cfg.replace(pos="none")).total if pos == "learned" else None,
              inverse="counted the position table twice (once with the embeddings, once more)"),
        Wrong("forgot_norm_params", "forgot the LayerNorm parameters", "Every LayerNorm has parameters (2 per layer plus the final one).",
              pb.total - norms,
              inverse=("gave the γ-only LayerNorms a β as well" if not bias
                       else "counted a running mean and variance in every LayerNorm (as in BatchNorm)")),
        Wrong("forgot_biases", "forgot the biases", "The linear maps and LayerNorms have biases here.",
              param_breakdown(cfg.replace(bias=False)).total if bias else None,
              # issue 39: not mirrored at hard: with an untied head the count is d·(2V + n_ctx + L·(12d + 13) + 2), odd
              # in units of d exactly when L is, and the biases (11L + 1)·d are odd when L is even: crossed with it,
              # the key was always in the pair of options with more factors of 2 (30 %)
              inverse="counted every bias twice" if d.level < 2 else None),
        Wrong("forgot_embeddings", "counted the layers only", "The token embedding is V × d_model parameters.",
              pb.non_embedding, inverse=None if tied else big_inverse("counted the embedding and the untied head twice each")),
    ]
    st = Doc()
    st.p(f"A decoder-only (GPT-style) Transformer has a vocabulary of $V = {big(vocab)}$ tokens, $d_{{model}} = {d_model}$, "
         f"$L = {layers}$ layers and $h = {h}$ heads.")
    items = ["a token embedding $V \\times d_{model}$;"]
    items.append(f"a learned position embedding for {n_ctx} positions;" if pos == "learned"
                 else "rotary position embeddings (RoPE: no parameters);")
    items.append(r"in each layer: multi-head self-attention ($W_Q, W_K, W_V, W_O$, each $d_{model} \times d_{model}$), "
                 f"a GELU FFN ${d_model} \\to {4 * d_model} \\to {d_model}$, and two LayerNorms;")
    items.append("a final LayerNorm after the last layer;")
    items.append("an output (LM) head $d_{model} \\to V$ without bias, "
                 + ("**tied** to the token embedding (the same matrix)." if tied else "with its **own** weight matrix (not tied)."))
    st.bullets(items)
    st.p(("Every linear map has a bias and every LayerNorm has γ and β." if bias
          else "No linear map has a bias, and the LayerNorms have γ only (no β).")
         + " How many trainable parameters does the model have?")
    sol = Doc()
    if tied:
        sol.p("The LM head shares the token embedding's matrix, so it adds nothing.")
    value = add_components(sol, list(pb.components))
    return _finish(d, st, sol, value, wrongs, {"config": cfg.to_dict()},
                   ["Embeddings + L × (attention + FFN + 2 norms) + final norm + (untied) head."])


@family("counting.params_lora", topic="counting", title="LoRA adapter parameters",
        types=("integer",), tags=("parameters", "lora", "fine-tuning"), source="003_f22b31e216cc5b5a.txt (LoRA)")
def params_lora(d: Draw) -> Problem:
    """Rank r on a d_in × d_out matrix adds A (r × d_in) and B (d_out × r): r·(d_in + d_out), 2·r·d when square."""
    from solver.counting.config import ModelConfig
    from solver.counting.params import param_breakdown

    # issue 39: any width that is a multiple of 256 and any depth from 12 to 80 (five widths and three depths gave
    # 62 distinct hard keys in 200 draws)
    d_model = d.pick(tuple(range(512, 8193, 256)))
    h = d.pick((8, 16, 32) if d_model % 512 == 0 else (8, 16))
    layers = d.pick(tuple(range(12, 81)))
    # Levels (issue 12: disjoint, ordered): easy, ranks 4 or 8 on W_Q and W_V of an MHA model; medium,
    # ranks 16 or 32 (larger products); hard, a GQA/MQA model (W_K, W_V are d × h_kv·d_h, not square).
    r = d.pick(((4, 8), (16, 32), (4, 8, 16, 32))[d.level])
    targets = ("q", "v") if d.level < 2 else d.pick((("q", "v"), ("q", "k", "v", "o")))
    kv = h if d.level < 2 else d.pick((h // 4, 1))
    cfg = ModelConfig(arch="decoder", d_model=d_model, n_layers=layers, n_heads=h, n_kv_heads=kv, d_ff=4 * d_model,
                      bias=False, vocab_size=32000, pos="rope", lora_rank=r, lora_targets=targets)
    pb = param_breakdown(cfg)
    lora = [c for c in pb.components if c.group == "lora"]
    value = pb.lora
    wrongs = [
        Wrong("one_factor_only", "counted only one of A and B", "LoRA adds two matrices per target: A (r × d_in) and B (d_out × r).",
              sum(c.count for c in lora if c.key.endswith(".A"))),
        Wrong("forgot_layers", "counted one layer only", f"Every one of the {layers} layers gets its adapters.",
              param_breakdown(cfg.replace(n_layers=1)).lora,
              inverse=f"multiplied by the {layers} layers twice", inverse_value=value * layers),
        Wrong("all_four_projections", "adapted all four projections", "Only the listed projections get adapters.",
              param_breakdown(cfg.replace(lora_targets=("q", "k", "v", "o"))).lora if targets == ("q", "v") else None),
        Wrong("full_matrices", "counted the full matrices", "The adapters are low-rank: r·(d_in + d_out), not d_in·d_out.",
              sum(c.count for c in pb.components if c.group == "attention" and c.key.split(".")[1] in targets)),
        Wrong("used_n_heads", "used n_heads for the K/V width", "W_K and W_V map to n_kv_heads·d_head, so their B factors are narrower.",
              param_breakdown(cfg.replace(n_kv_heads=None)).lora if kv != h and ({"k", "v"} & set(targets)) else None),
    ]
    names = {"q": "W_Q", "k": "W_K", "v": "W_V", "o": "W_O"}
    st = Doc()
    st.p(f"A decoder-only model has $L = {layers}$ layers, $d_{{model}} = {d_model}$ and $h = {h}$ heads of size "
         f"$d_h = {cfg.head_dim}$" + (f", with grouped-query attention: {kv} key/value head{'s' if kv > 1 else ''} "
                                      f"(so $W_K, W_V$ map ${d_model} \\to {kv * cfg.head_dim}$)" if kv != h else "") + ".")
    st.p(f"It is fine-tuned with LoRA of rank $r = {r}$ on " + ", ".join(f"${names[t]}$" for t in targets)
         + r" of every layer: each adapted $d_{in} \to d_{out}$ matrix $W$ becomes $W + BA$ with $A$ of shape $r \times d_{in}$ "
         r"and $B$ of shape $d_{out} \times r$. How many trainable adapter parameters are added?")
    sol = Doc()
    sol.p(r"Each adapted matrix adds $r \cdot d_{in} + d_{out} \cdot r = r(d_{in} + d_{out})$, "
          r"which is $2 r d$ for a square $d \times d$ matrix.")
    add_components(sol, lora)
    return _finish(d, st, sol, value, wrongs, {"config": cfg.to_dict()},
                   ["Per adapted matrix: r·(d_in + d_out); times the matrices per layer; times the layers."])


@family("counting.params_kv_proj", topic="counting", title="K/V projection parameters with MQA and GQA",
        types=("integer",), tags=("parameters", "mqa", "gqa"), source="004_83489721195aedaa.txt §15.8 (MQA); issue 7",
        told_apart=("group_size_for_kv_heads",),
        # issue 39, its MCQ view: one layer too few (or too many) and the biases left out where the statement gives
        # them or counted where it rules them out (each statement one way, half the draws each); not "K or V only"
        # (× 1/2, an option one power of two below the key and 0.3 decades off a bounded range) nor the × h, × L slips
        view_slips=("one_layer_too_few", "counted_biases", "forgot_biases"))
def params_kv_proj(d: Draw) -> Problem:
    """W_K and W_V map d_model → n_kv_heads·d_head: 2·d·h_kv·d_h per layer, plus 2·h_kv·d_h when the
    projections have biases (as Qwen2's do: Qwen2-7B prints ``k_proj: Linear(in_features=3584, out_features=512,
    bias=True)``, source: the module printout in github.com/Retruth/deontic nlp_models/qwen2/README.md).

    Misconceptions: n_heads used for n_kv_heads, K or V only, one layer only, one head's width
    (d_head) for the K/V width, the group size h/h_kv taken for the number of K/V heads, and biases
    counted that the statement rules out or left out that it gives (2·h_kv·d_h per layer)."""
    # issue 22: any width that is a multiple of 512 up to 8,192 and 16 to 64 query heads (three widths gave
    # fewer than 50 distinct problems per level)
    # issue 39: any multiple of 16·h (heads of a multiple of 16 wide; widths a step of 512 gave 280 distinct medium
    # keys in 500 draws)
    h = d.pick((16, 32, 64))
    d_model = d.pick(tuple(range(1024, 8193, max(128, 16 * h))))
    # Levels (issue 12: disjoint, ordered): easy, one layer with MQA or 8 K/V heads; medium, the same over
    # L layers (× L); hard, L layers of GQA with 2 or 4 K/V heads.
    kv = d.pick((2, 4)) if d.level == 2 else d.pick((1, 8))
    layers = 1 if d.level == 0 else d.pick(tuple(range(12, 97)))
    # issue 39 (round 4): biases on the projections or not, a coin drawn last (the draws before it stay as they were).
    # The K/V count is d·h_kv·d_h·2L, a multiple of a high power of two, and "K or V only" (× 1/2) puts its option one
    # power of two below the key and 0.3 decades off a bounded range: with the options' positions, the key's power of
    # two and magnitude gave it away (about +3 points each on 4,000 draws). The bias term 2L·h_kv·d_h is 1/d of the
    # count; left out where the statement gives it or counted where it rules it out, it moves the key down or up as the
    # statement says, and the option without biases is the key as often as the one with them.
    bias = d.pick((False, True))
    cfg = _cfg(arch="decoder", d_model=d_model, n_heads=h, n_kv_heads=kv, d_ff=4 * d_model, bias=bias, n_layers=layers)
    comps = _parts(cfg, ("attention",), skip=(".q.", ".o."))
    wrongs = [
        Wrong("used_n_heads", "used n_heads instead of n_kv_heads", f"Only {kv} K/V head(s) are projected, not {h}.",
              _count(cfg.replace(n_kv_heads=None), ("attention",), skip=(".q.", ".o."))),
        Wrong("forgot_k_and_v", "counted K or V only", "Both W_K and W_V are needed: two matrices.",
              _count(cfg, ("attention",), skip=(".q.", ".o.", ".v.")),
              inverse="counted four matrices (W_Q, W_K, W_V, W_O) at the K/V width",
              inverse_value=2 * _count(cfg, ("attention",), skip=(".q.", ".o."))),
        Wrong("forgot_layers", "counted one layer only", f"Multiply by the {layers} layers.",
              _count(cfg.replace(n_layers=1), ("attention",), skip=(".q.", ".o.")) if layers > 1 else None,
              inverse=f"multiplied by the {layers} layers twice",
              inverse_value=layers * _count(cfg, ("attention",), skip=(".q.", ".o."))),
        # issue 39: a fencepost slip, each way (a small step down and up, so that the key can be the largest option)
        Wrong("one_layer_too_few", "counted one layer too few", f"There are {layers} layers, not {layers - 1}.",
              _count(cfg.replace(n_layers=layers - 1), ("attention",), skip=(".q.", ".o.")) if layers > 1 else None,
              inverse="counted one layer too many"),
        Wrong("one_head_width", "used d_head alone for W_K", "The K/V width is n_kv_heads·d_head.",
              _count(cfg.replace(n_kv_heads=1), ("attention",), skip=(".q.", ".o.")) if kv > 1 else None),
        # the group size (query heads per K/V head, h/h_kv) taken for the number of K/V heads
        Wrong("group_size_for_kv_heads", "used the group size h/h_kv as the number of K/V heads",
              f"{h // kv} query heads share each K/V head; there are {kv} K/V head(s), so W_K and W_V are d × {kv}·d_h.",
              _count(cfg.replace(n_kv_heads=h // kv), ("attention",), skip=(".q.", ".o."))),
        Wrong("counted_biases", "counted biases that are not there",
              "The projections have no biases: count the weight matrices only.",
              None if bias else _count(cfg.replace(bias=True), ("attention",), skip=(".q.", ".o."))),
        Wrong("forgot_biases", "forgot the biases",
              f"The projections have biases: b_K and b_V add {kv}·d_h entries each per layer.",
              _count(cfg.replace(bias=False), ("attention",), skip=(".q.", ".o.")) if bias else None),
    ]
    name = "multi-query attention (MQA)" if kv == 1 else f"grouped-query attention (GQA) with {kv} key/value heads"
    st = Doc()
    who = "A decoder layer uses" if layers == 1 else f"Each of the {layers} layers of a decoder uses"
    st.p(f"{who} {name}: $d_{{model}} = {d_model}$, $h = {h}$ query heads of size "
         f"$d_h = {cfg.head_dim}$; " + ("$W_K$ and $W_V$ each have a bias vector." if bias else "the projections have no biases."))
    st.p("How many parameters do the key and value projections $W_K$ and $W_V$ hold"
         + (f" in all {layers} layers together?" if layers > 1 else " in this layer?"))
    sol = Doc()
    if d.level == 2:  # grouped-query attention: which heads are projected
        sol.p(f"The $h = {h}$ query heads share $h_{{kv}} = {kv}$ key/value heads, {h // kv} query heads to each: $W_K$ "
              f"and $W_V$ project the {kv} K/V heads only, and the group size {h // kv} enters no count.")
    sol.p(f"$W_K$ and $W_V$ map $d_{{model}} \\to h_{{kv}} \\cdot d_h = {kv} \\times {cfg.head_dim} = {big(cfg.kv_dim)}$:")
    value = add_components(sol, comps)
    if d.level == 2:
        per = 2 * d_model * cfg.kv_dim + (2 * cfg.kv_dim if bias else 0)
        sol.p(f"Check, layer by layer: $2 \\times {big(d_model)} \\times {big(cfg.kv_dim)}"
              + (f" + 2 \\times {big(cfg.kv_dim)}" if bias else "") + f" = {big(per)}$ per layer, "
              f"$\\times {layers}$ layers $= {big(per * layers)}$.")
    return _finish(d, st, sol, value, wrongs,
                   {"d_model": d_model, "n_heads": h, "n_kv_heads": kv, "n_layers": layers, "bias": bias},
                   ["K and V: 2 × d_model × (n_kv_heads · d_head) per layer"
                    + (", plus 2 × n_kv_heads · d_head biases." if bias else ".")])
