"""``qkv solve params|flops|memory``: exact counts of a Transformer, with their conventions.

Thin commands over ``solver.counting``; every ModelConfig field is a flag (``drills.cli.model_flags``),
``--preset NAME`` starts from the zoo. ``--json`` prints ``{"answer", "unit", "convention",
"breakdown"}``; ``--explain`` prints the formula, the substitution, the breakdown table and
the conventions.
"""

from __future__ import annotations

from typing import Any

import click

from drills.cli.help_groups import solve_command
from drills.cli.model_flags import (
    KV_USES,
    PARAMS_NEEDS,
    SPAN_UNUSED,
    ModelSpec,
    assumed_defaults,
    flag,
    ignored_fields,
    ignored_text,
    missing_message,
    model_options,
    pop_model,
)
from drills.cli.numbers import COUNT, SIZE
from drills.cli.plot_flag import check_plot, plot_option
from drills.cli.solve_hardware import label as key_label
from drills.output import InputError, emit, emit_json
from solver.units import format_number


def per_convention_fraction(flops: Any, convention: str) -> Any:
    """FLOPs in the asked convention (half for MACs), kept exact."""
    return flops if convention == "flops" else flops / 2

#: Defaults worth naming when a count used them (the conventions an examiner could catch).
_CONVENTION_FIELDS = ("arch", "n_kv_heads", "d_head", "ffn", "norm", "norm_position", "final_norm", "bias", "pos",
                      "tied_embeddings", "lm_head", "type_vocab_size", "pooler", "embedding_norm", "n_experts",
                      "lora_rank")

_DTYPES = "fp32, fp16, bf16, fp8, int8, int4"


def output_options(f: Any) -> Any:
    f = click.option("--explain", is_flag=True, help="Print the worked solution.")(f)
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(f)


def _table(rows: list[tuple[Any, ...]], header: tuple[str, ...], right: set[int]) -> list[str]:
    cells = [tuple(f"{c:,}" if isinstance(c, int) else str(c) for c in row) for row in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    out = []
    for k, row in enumerate(cells):
        parts = [c.rjust(w) if i in right and k else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(parts).rstrip())
    return out


def _assumed(spec: ModelSpec) -> dict[str, Any]:
    d = assumed_defaults("base" if spec.has_base else None, spec.given)
    return {k: d[k] for k in _CONVENTION_FIELDS if k in d}


#: Structure a flag-given model takes by default that changes a parameter count (issue 37: printed
#: with the plain answer, not only under --explain).
_COUNTED_DEFAULTS = ("ffn", "norm", "final_norm", "bias", "pos", "tied_embeddings", "lm_head")


def assumed_line(spec: ModelSpec) -> str | None:
    """``assumed (no flag set them): ffn gelu, ...`` for a model given by flags alone, or None."""
    if spec.has_base:
        return None
    d = _assumed(spec)
    shown = [f"{flag(k)} {str(d[k]).lower() if isinstance(d[k], bool) else d[k]}" for k in _COUNTED_DEFAULTS if k in d]
    if not shown:
        return None
    return ("assumed (no flag set them; each changes the count): " + ", ".join(shown)
            + " — or give the model's structure in one flag: --like PRESET (e.g. --like llama2-7b)")


def params_breakdown_json(pb: Any, answer: int, left_out: dict[str, int] | None = None,
                          no_embeddings: bool = False) -> dict[str, Any]:
    """``pb.to_json()`` of the count as stated: under a convention that leaves parts out (``left_out``),
    ``total``, ``embedding``, ``non_embedding`` and ``by_group`` are of the answer and the model as built
    is under ``as_built`` (so ``breakdown.total == answer`` always)."""
    bd = pb.to_json()
    if answer == pb.total:
        return bd
    norms = sum(v for k, v in (left_out or {}).items() if "norm" in k)
    groups = dict(bd["by_group"])
    if no_embeddings:
        groups["embedding"] = 0
    if "norm" in groups:
        groups["norm"] -= norms
    bd["as_built"] = {k: bd[k] for k in ("total", "embedding", "non_embedding", "by_group")}
    bd.update(total=answer, embedding=0 if no_embeddings else pb.embedding,
              non_embedding=pb.non_embedding - norms, by_group=groups, left_out=dict(left_out or {}))
    return bd


def _published(spec: ModelSpec, exact: int) -> dict[str, Any] | None:
    preset = spec.preset
    if not preset or spec.given:
        return None
    from solver.counting.presets import get_preset

    p = get_preset(preset)
    gap = (exact - p.published) / p.published if p.published else None
    return {"preset": p.name, "published": p.published, "published_text": p.published_text, "source": p.source,
            "note": p.note, "relative_gap": gap, "published_active": p.published_active,
            "published_active_text": p.published_active_text}


def _subst_text(subs: dict[Any, int]) -> str:
    return ", ".join(f"{k} = {v:,}" for k, v in subs.items())


def _expr_text(expr: Any) -> str:
    return str(expr).replace("**", "^").replace("*", "·")


# ---------------------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------------------
@solve_command()
@model_options
@click.option("--norms-per-layer", type=click.Choice(["two", "one", "none"]), default="two", show_default=True,
              help="Count two norms per layer (as built), one (parallel block), or none (the scaling book).")
@click.option("--no-embeddings", is_flag=True, help="Count no vocabulary tables (vocabulary 0, the scaling book).")
@click.option("--compare-transformers", is_flag=True,
              help="With --config: count with transformers' own class on the meta device too, and name any difference.")
@output_options
def params(as_json: bool, explain: bool, norms_per_layer: str, no_embeddings: bool, compare_transformers: bool = False,
           **kw: Any) -> None:
    """Exact parameter count of a Transformer, component by component.

    Counts every trainable scalar once (a tied LM head shares the token embedding); LoRA
    adapters are reported apart from the base model. Examples:

      qkv solve params --preset gpt2
      qkv solve params --d-model 512 --n-layers 6 --n-heads 8 --d-ff 2048 --vocab-size 37000 --pos sinusoidal
      qkv solve params --config config.json [--compare-transformers]

    A config.json of a model type qkv does not read is counted by transformers' own class on the
    meta device (where transformers is installed), and the output says so.
    """
    from drills.cli.solve_hf_meta import hf_meta_params
    from drills.cli.solve_own_config import own_config_params
    from solver.counting import param_breakdown

    if hf_meta_params(kw, as_json, explain, compare_transformers):  # issue 20: a type qkv does not read
        return
    if own_config_params(kw, as_json, explain, norms_per_layer, no_embeddings):  # T5, ViT: their own counts
        return
    spec = pop_model(kw)
    if no_embeddings and not spec.has_base and "vocab_size" not in spec.given:  # no vocabulary tables: vocabulary 0
        cfg = ModelSpec(given={**spec.given, "vocab_size": 0}).config(PARAMS_NEEDS)
    else:
        cfg = spec.config(PARAMS_NEEDS)
    pb = param_breakdown(cfg)
    published = _published(spec, pb.total)
    convention = {
        "counted": "trainable scalars; a shared (tied) tensor once; buffers (sinusoidal table, masks) are not "
                   "parameters",
        "embedding": "token, position and segment tables, [CLS] vector, untied LM head weight",
        "lora": "adapters counted apart from the base (answer excludes them)",
        "assumed_defaults": _assumed(spec),
        **spec.convention(),
    }
    if cfg.is_moe:  # issue 10: total and active side by side
        convention["active"] = (f"parameters one token uses: top_k = {cfg.top_k} of the E = {cfg.n_experts} routed "
                                f"experts per MoE layer, everything else (router, shared experts, embeddings, "
                                f"head) whole")
    answer = pb.total
    left_out: dict[str, int] = {}
    if norms_per_layer != "two" or no_embeddings:  # issue 10: the scaling book's accounting, named
        from solver.counting.conventions import params_under

        answer, named = params_under(cfg, norms_per_layer, not no_embeddings)
        convention.update(norms=named["norms"], embeddings=named["embeddings"], left_out=named["left_out"])
        left_out = named["left_out"]
        published = None
    unused = dict(SPAN_UNUSED)
    if no_embeddings:
        unused["vocab_size"] = "--no-embeddings counts no vocabulary tables"
    ignored = ignored_fields(cfg, spec, unused)
    if ignored:
        convention["ignored"] = ignored
    if as_json:
        bd = params_breakdown_json(pb, answer, left_out, no_embeddings)
        bd["config"] = cfg.to_dict()
        bd["published"] = published
        emit_json({"answer": answer, "unit": "parameters", "convention": convention, "breakdown": bd})
        return
    if answer != pb.total:
        emit(f"answer: {answer:,} parameters ({convention['norms']}, embeddings {convention['embeddings']}; "
             f"as built: {pb.total:,})")
        for what, n in convention["left_out"].items():
            emit(f"  left out: {what} {n:,}")
        if ignored:
            emit(ignored_text(ignored))
        if explain:
            _emit_conventions(convention)
        return
    label = f" ({cfg.name})" if cfg.name and not spec.given else ""
    emit(f"answer: {pb.total:,} parameters{label}")
    if (line := assumed_line(spec)) is not None:
        emit(f"  {line}")
    emit(f"  embedding      {pb.embedding:>18,}")
    emit(f"  non-embedding  {pb.non_embedding:>18,}")
    if cfg.is_moe:
        emit(f"  active/token   {pb.active:>18,}  (top-{cfg.top_k} of {cfg.n_experts} routed experts)")
        if published and published.get("published_active"):
            emit(f"  published      {published['published_active_text']:>18}  active; exact is "
                 f"{(pb.active - published['published_active']) / published['published_active']:+.2%}")
    if pb.lora:
        emit(f"  LoRA adapters  {pb.lora:>18,}  (not in the answer; with them {pb.total_with_lora:,})")
    if published and published["published"]:
        emit(f"  published      {published['published_text']:>18}  ({published['source']}); exact is "
             f"{published['relative_gap']:+.2%}")
        emit(f"  why: {published['note']}")
    if ignored:
        emit(ignored_text(ignored))
    for note in spec.notes:  # issue 37: the keys not read, and their check against transformers, under the answer
        if note.startswith(("not read: ", "checked: ", "DIFFERENCE: ", "architectures names ")):
            emit(note)
    if explain:
        expr, subs, value = pb.formula()
        emit("")
        emit("formula:")
        emit(f"  N = {_expr_text(expr)}")
        emit("substitution:")
        emit(f"  {_subst_text(subs)}")
        emit(f"  N = {value:,}")
        emit("")
        emit("breakdown:")
        for line in _table(pb.table(), ("component", "shape × times", "formula", "count"), {3}):
            emit(line)
        emit("")
        emit("by group:")
        for g, n in pb.by_group().items():
            emit(f"  {key_label(g):<16} {n:>18,}")
        _emit_conventions(convention)


def _emit_conventions(convention: dict[str, Any]) -> None:
    emit("")
    emit("conventions:")
    for k, v in convention.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}={b}" for a, b in v.items()) or "(none: every field given)"
        elif isinstance(v, list):
            v = "; ".join(str(x) for x in v)
        emit(f"  {k.replace('_', ' ')}: {v}")


# ---------------------------------------------------------------------------------------
# flops
# ---------------------------------------------------------------------------------------
@solve_command()
@model_options
@click.option("--batch", type=COUNT, default=None, help="Sequences B.")
@click.option("--seq", "--seq-len", "seq", type=SIZE, default=None,
              help="Tokens n per sequence (decode: positions attended, cache included).")
@click.option("--src-seq", type=SIZE, default=None, help="Encoder length s (encoder-decoder).")
@click.option("--mode", type=click.Choice(["forward", "decode", "train"]), default="forward", show_default=True)
@click.option("--convention", type=click.Choice(["flops", "macs"]), default="flops", show_default=True,
              help="flops: 2 per multiply-add; macs: 1.")
@click.option("--attention-kernel", type=click.Choice(["explicit", "fused"]), default="explicit",
              show_default=True, help="fused: flash/efficient SDPA backward (recomputes QKᵀ).")
@click.option("--per-token", "per_token", type=click.Choice(["none", "kaplan", "palm", "full"]), default=None,
              help="Answer in FLOPs per token by a named rule: none (2N/6N), kaplan (+2·L·n·d_attn), "
                   "palm (6N + 12·L·H·Q·T), full (QKᵀ and AV); N non-embedding (active).")
@click.option("--causal-halving", is_flag=True, help="With --per-token: halve the attention term (causal).")
@click.option("--norms-per-layer", type=click.Choice(["two", "one", "none"]), default="two", show_default=True,
              help="With --per-token: the norms N counts: two per layer (as built), one, or none (Kaplan's N).")
@output_options
def flops(batch: int | None, seq: int | None, src_seq: int | None, mode: str, convention: str,
          attention_kernel: str, per_token: str | None, causal_halving: bool, norms_per_layer: str, as_json: bool,
          explain: bool, **kw: Any) -> None:
    """Exact matmul FLOPs of a forward pass, a decode step or a training step.

    Counts what torch.utils.flop_counter.FlopCounterMode counts: matmuls only, attention
    over the full n × n (causal or not). Softmax, norms, activations and the mask are listed
    apart, as estimates. Example: qkv solve flops --preset gpt2 --batch 1 --seq 1024
    """
    from solver.counting import matmul_flops

    spec = pop_model(kw)
    missing = [n for n, v in (("batch", batch), ("seq", seq)) if v is None]
    if missing:
        try:
            spec.config(PARAMS_NEEDS)
        except InputError as e:
            raise InputError(f"{e.format_message().removesuffix(' (or --preset NAME)')}, "
                             f"{', '.join('--' + m for m in missing)} (or --preset NAME)") from None
        raise InputError(missing_message(missing).replace(" (or --preset NAME)", ""))
    if norms_per_layer != "two" and not per_token:
        raise InputError("--norms-per-layer names the N of a --per-token rule (the exact count is of matmuls, "
                         "norms do none)", "--norms-per-layer")
    cfg = spec.config(PARAMS_NEEDS)
    rep = matmul_flops(cfg, batch, seq, mode, convention, src_seq=src_seq, attention_kernel=attention_kernel)
    unit = "FLOPs" if convention == "flops" else "multiply-adds"
    conv = {
        "count": "2 FLOPs per multiply-add" if convention == "flops" else "1 per multiply-add (MACs)",
        "what": "matmuls only, as torch.utils.flop_counter.FlopCounterMode counts them; softmax, norms, "
                "activations, mask, residual adds not in the total",
        "attention": "QKᵀ and AV over the full n×n even when causal",
        "mode": {"forward": "prefill: B·n tokens, logits on every position",
                 "decode": "one new token per sequence, attending to n cached positions (its own included)",
                 "train": "forward + backward; backward = 2 × forward per matmul"
                          + (" (fused attention: QKᵀ recomputed)" if attention_kernel == "fused" else "")}[mode],
        "assumed_defaults": _assumed(spec),
        **spec.convention(),
    }
    span = ("QKᵀ and AV counted over the full n×n (the window is a mask), as FlopCounterMode counts them"
            if mode != "decode" or per_token else "")
    ignored = ignored_fields(cfg, spec, {"sliding_window": span, "global_every": span} if span else {})
    if ignored:
        conv["ignored"] = ignored
    if cfg.pos == "learned" and cfg.max_positions and seq > cfg.max_positions:  # gpt2 at 1M tokens: not a model
        conv["note"] = (f"{cfg.name or 'this model'} has {cfg.max_positions:,} learned positions: n = {seq:,} is past "
                        "its table (counted as if the table were longer)")
    if per_token:  # issue 10: a named per-token rule instead of the exact count
        from solver.counting.conventions import flops_per_token

        if mode == "decode":
            raise InputError("--per-token rules are for forward or train", "--per-token")
        pt = flops_per_token(cfg, seq, mode, per_token, causal_halving, norms_per_layer)
        conv.update(per_token_rule=per_token, causal_halving=causal_halving,
                    N="non-embedding parameters (active ones with experts)"
                      + {"two": "", "one": ", one norm per layer", "none": ", no norms (Kaplan et al.)"}[norms_per_layer],
                    norms=f"{norms_per_layer} per layer")
        value = per_convention_fraction(pt.flops, convention)
        if as_json:
            emit_json({"answer": float(value), "unit": unit + "/token", "convention": conv,
                       "breakdown": {**pt.to_json(), "exact_per_token": rep.total / (batch * seq)}})
            return
        emit(f"answer: {format_number(float(value))} {unit}/token ({per_token} rule, {mode}, n={seq}"
             + (", causal halving" if causal_halving else "") + ")")
        emit(f"  {2 * (3 if mode == 'train' else 1)}·N = {2 * (3 if mode == 'train' else 1) * pt.n_params:,} "
             f"(N = {pt.n_params:,}); attention {format_number(float(pt.attention))}")
        emit(f"  exact matmul count per token: {format_number(rep.total / (batch * seq))}")
        if ignored:
            emit(ignored_text(ignored))
        if "note" in conv:
            emit(f"note: {conv['note']}")
        if explain:
            _emit_conventions(conv)
        return
    if as_json:
        emit_json({"answer": rep.total, "unit": unit, "convention": conv, "breakdown": rep.to_json()})
        return
    emit(f"answer: {rep.total:,} {unit} ({mode}, B={batch}, n={seq}"
         + (f", s={rep.src_seq}" if cfg.arch == "encoder-decoder" else "") + ")")
    if mode == "train":
        emit(f"  forward {rep.value(rep.forward_flops):,} + backward {rep.value(rep.backward_flops):,}")
    emit("by group:")
    for g, n in rep.by_group().items():
        emit(f"  {key_label(g):<26} {n:>22,}")
    tb = rep.textbook
    emit(f"textbook rule {tb['rule']}: {tb['rule_value']:,} (N = {tb['N_non_embedding']:,} non-embedding, "
         f"D = {tb['D_tokens']:,} tokens); exact/rule = {format_number(tb['ratio_exact_to_rule'], 5)}")
    emit("  gap: " + ", ".join(f"{k.replace('_', ' ')} {v:+,}" for k, v in tb["gap"].items()))
    if ignored:
        emit(ignored_text(ignored))
    if "note" in conv:
        emit(f"note: {conv['note']}")
    if explain:
        emit("")
        emit("breakdown (forward formula; terms in " + unit + "):")
        rows = [((f"{t.stack}." if t.stack else "") + t.name, t.formula, rep.value(t.forward), rep.value(t.backward))
                for t in rep.terms]
        header = ("matmul", "formula", "forward", "backward")
        if mode != "train":
            rows, header = [r[:3] for r in rows], header[:3]
        for line in _table(rows, header, {2, 3}):
            emit(line)
        emit("")
        emit("not in the total (estimates, FLOPs):")
        rows2 = [(o.name, o.elements, o.per_element, o.flops_estimate, o.note) for o in rep.other]
        for line in _table(rows2, ("operation", "elements", "ops/elem", "≈ FLOPs", "assumption"), {1, 2, 3}):
            emit(line)
        _emit_conventions(conv)


# ---------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------
_WHAT = ("weights", "kv-cache", "attention-scores", "training")


@solve_command()
@model_options
@click.option("--what", type=click.Choice(_WHAT), default="weights", show_default=True)
@click.option("--dtype", default=None, help=f"Element type: {_DTYPES}.")
@click.option("--batch", type=COUNT, default=None, help="Sequences B.")
@click.option("--seq", "--seq-len", "--context", "seq", type=SIZE, default=None,
              help="Tokens n (cached, or queries; 8k = 8192).")
@click.option("--kv-seq", type=SIZE, default=None, help="Keys n_k of the score matrix (default n).")
@click.option("--src-seq", type=SIZE, default=None, help="Encoder length (cross-attention cache).")
@click.option("--include-cross/--no-include-cross", default=False,
              help="Encoder-decoder: add the cross-attention K/V cache.")
@click.option("--precision", type=click.Choice(["mixed", "fp32"]), default="mixed", show_default=True,
              help="Training: mixed (fp16 + fp32 master) or fp32 Adam.")
@click.option("--hw", "hw", metavar="NAME", default=None,
              help="With --plot: the chip preset whose HBM the bytes are drawn against.")
@click.option("--hbm", "hbm", default=None, help="With --plot: HBM bytes to draw the bytes against (80GB, 80GiB).")
@plot_option
@output_options
def memory(what: str, dtype: str | None, batch: int | None, seq: int | None, kv_seq: int | None,
           src_seq: int | None, include_cross: bool, precision: str, hw: str | None, hbm: str | None,
           plot: str | None, as_json: bool, explain: bool, **kw: Any) -> None:
    """Exact bytes of the weights, the KV cache, the attention scores or Adam training state.

    Always bytes first, then GB (10⁹) and GiB (2³⁰). Each quantity asks only for what it
    depends on: a KV cache needs layers, KV heads, head size, batch, length and dtype.
    """
    from solver import counting as counts

    spec = pop_model(kw)
    if what == "weights":
        from drills.cli.solve_hf_meta import hf_quantized_weights, native_quantized_weights

        if native_quantized_weights(spec, dtype, as_json, plot, explain):  # issue 37: qkv's own layout
            return
        if hf_quantized_weights(spec, dtype, as_json, plot):  # issue 37: the file's quantization_config
            return
    if what in ("weights", "training"):
        need_dtype = what == "weights"
        missing_extra = ["dtype"] if need_dtype and dtype is None else []
        miss = [n for n in PARAMS_NEEDS if n not in spec.given] if not spec.has_base else []
        if miss:
            raise InputError(missing_message(miss + missing_extra))
        cfg = spec.config(PARAMS_NEEDS)
        if missing_extra:
            raise InputError("needs --dtype (" + _DTYPES + ")")
        rep = counts.weights_report(cfg, dtype) if what == "weights" else counts.training_report(cfg, precision)
        ignored = ignored_fields(cfg, spec, {**SPAN_UNUSED, "top_k": "every expert is held, not only the active "
                                                                   "ones"})
    elif what == "kv-cache":
        from drills.cli.solve_hf_meta import hf_meta_kv

        if hf_meta_kv(spec, batch, seq, dtype, as_json, plot):  # issue 37: a type qkv does not read
            return
        rep, cfg = kv_report(spec, batch, seq, dtype, src_seq, include_cross)
        ignored = kv_ignored(cfg, spec)
    else:
        cfg = None
        n_heads = spec.given.get("n_heads")
        if spec.has_base:
            cfg = spec.config(PARAMS_NEEDS)
            n_heads = cfg.n_heads
        miss = [m for m, v in (("n_heads", n_heads), ("batch", batch), ("seq", seq), ("dtype", dtype)) if v is None]
        if miss:
            raise InputError(f"attention scores need {', '.join('--' + m.replace('_', '-') for m in miss)}")
        rep = counts.attention_scores_report(batch, n_heads, seq, dtype, kv_seq)
        ignored = {k: "one layer's score matrix needs only the query heads" for k in spec.given if k != "n_heads"}
        if cfg is not None:
            ignored.update(ignored_fields(cfg, spec, uses=("n_heads",), why="one layer's score matrix needs only "
                                                                            "the query heads"))
    check_plot(plot, as_json)
    if (hw is not None or hbm is not None) and plot is None:
        raise InputError("draws on the picture: give --plot FILE (or --plot -)", "--hw" if hw else "--hbm")
    conv = {"unit": "bytes; GB = 10^9 bytes, GiB = 2^30 bytes", "detail": rep.convention, **spec.convention()}
    if what in ("weights", "training"):
        conv["assumed_defaults"] = _assumed(spec)
    qline = None
    if what == "weights":
        from drills.cli.solve_hf_meta import quant_line

        qline = quant_line(spec, dtype)
        if qline:
            conv["quantization_config"] = qline
    if ignored:
        conv["ignored"] = ignored
    if as_json:
        emit_json({"answer": rep.bytes, "unit": "bytes", "convention": conv, "breakdown": rep.to_json()})
        return
    emit(f"answer: {rep.text()}")
    for item in rep.items:
        emit(f"  {item.name:<26} {item.bytes:>22,} B   {item.formula}")
    if qline:
        emit(f"  {qline}")
    if ignored:
        emit(ignored_text(ignored))
    if explain:
        emit("")
        emit("formula:")
        emit(f"  {rep.formula}")
        _emit_conventions(conv)
    if plot is not None:
        _memory_plot(rep, what, hw, hbm, plot)


def _memory_plot(rep, what: str, hw: str | None, hbm: str | None, plot: str) -> None:
    """The report's items as one stacked bar, against the HBM of --hw or --hbm when given."""
    from drills.cli.plot_flag import draw
    from drills.plots import memory as picture

    size = None
    if hw is not None or hbm is not None:
        from drills.cli.solve_hardware import BYTES, _chip

        given = BYTES.convert(hbm, None, None) if hbm is not None else None
        size = _chip({"hw": hw, "hbm": given}).need("hbm")
    d = picture.data(f"qkv solve memory --what {what}: {rep.text()}",
                     [(what, [(item.name, item.bytes) for item in rep.items])], size,
                     f"HBM ({hw})" if hw else "HBM")
    draw("memory", d, plot)


def kv_report(spec: ModelSpec, batch: int | None, seq: int | None, dtype: str | None, src_seq: int | None,
              include_cross: bool):
    """``(report, config)``: the KV cache of the one ModelConfig of any route (a preset, a config.json,
    the few flags it needs, or a base with flags on top): a window, latent attention and grouped heads
    honoured alike (``solver.counting.memory.kv_cache_report``)."""
    from solver import counting as counts
    from solver.errors import SolverInputError

    missing = ["--" + m for m, v in (("batch", batch), ("seq", seq), ("dtype", dtype)) if v is None]
    cfg = spec.kv_config(tuple(missing))
    if missing:
        raise InputError(f"the KV cache needs {', '.join(missing)}")
    try:
        return counts.kv_cache_report(cfg, batch, seq, dtype, src_seq=src_seq, include_cross=include_cross), cfg
    except SolverInputError as e:
        raise InputError(e.args[0], "--" + e.param.replace("_", "-") if e.param else None) from None


def kv_ignored(cfg: Any, spec: ModelSpec) -> dict[str, str]:
    """The fields a KV-cache size has no use for (named in the output)."""
    return ignored_fields(cfg, spec, uses=KV_USES, why="the KV cache does not depend on it")
