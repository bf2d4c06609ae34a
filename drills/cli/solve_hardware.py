"""``qkv solve matmul|roofline|attention-flops|prefill|decode|train|zero|activations|chips``.

Every figure is a flag, so a question that states its own numbers is solved as stated;
``--hw NAME`` fills in only the hardware figures not given. Numbers accept plain and
scientific forms (``989e12``, ``3.35e12``) and suffixes: ``989T`` or ``989TFLOPS`` (FLOP/s),
``80GB`` / ``80GiB`` (bytes), ``3.35TB/s`` (bytes/s), ``70B`` / ``1.4T`` (counts: params,
tokens), ``8k`` = 8192 (sequence lengths and layer sizes); the rule and the range checks are
:mod:`drills.cli.numbers`. The formulas live in ``solver.systems.roofline``, ``solver.systems.inference`` and
``solver.systems.training``. Printing (:func:`show`) goes through the one number formatter,
``solver.units.format_number``; a non-finite answer is refused in one line (:func:`check_finite`).
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import click

from drills.cli.help_groups import mark, solve_command
from drills.cli.model_flags import model_options, name_model, preset_options, preset_spec

# Numbers: one option type (drills.cli.numbers), re-exported here for the other solve modules.
from drills.cli.numbers import (  # noqa: F401
    BANDWIDTH,
    BYTES,
    COUNT,
    FLOPS,
    INT,
    KV_BYTES,
    POSITIVE,
    SIZE,
    Int,
    Number,
    Real,
    parse_quantity,
)
from drills.cli.plot_flag import check_plot, draw, plot_option
from drills.output import InputError, emit, emit_json

# ---------------------------------------------------------------------------------------
# Shared flags
# ---------------------------------------------------------------------------------------


def hardware_options(f):
    """--hw, --peak-flops, --bandwidth, --hbm, --link-bandwidth, --chips, --mfu, --dtype, --weight-dtype."""
    opts = [
        click.option("--hw", "hw", metavar="NAME", help="Hardware preset (qkv hw list); fills only figures not given."),
        click.option("--peak-flops", type=FLOPS, help="Dense peak FLOP/s per chip (989e12, 989T)."),
        click.option("--bandwidth", type=BANDWIDTH, help="HBM bandwidth per chip in bytes/s (3.35e12, 3.35TB/s)."),
        click.option("--hbm", type=BYTES, help="HBM bytes per chip (80e9, 80GB, 80GiB)."),
        click.option("--link-bandwidth", type=BANDWIDTH,
                     help="Chip-to-chip bandwidth per direction, bytes/s (collective, tp, dp-comm); refused by "
                          "commands whose model has no communication."),
        click.option("--chips", "--gpus", "chips", type=INT, default=None, help="Number of chips (default 1)."),
        click.option("--mfu", type=Real(0, 1, min_open=True), default=None,
                     help="Model FLOPs utilisation, 0 < MFU <= 1."),
        click.option("--dtype", default="bf16", show_default=True,
                     help="Activation / compute / KV-cache dtype (its peak is used)."),
        click.option("--weight-dtype", default=None, help="Weight dtype (default: --dtype); int4 = 1/2 byte."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return mark(f, len(opts), "Hardware")


def output_options(f):
    f = click.option("--explain", is_flag=True, help="Print the worked solution.")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(f)
    return mark(f, 2, "Output")


def _chip(kw: dict[str, Any], uses_link: bool = False, hbm_figure: str = "datasheet"):
    """The Chip of the hardware flags. ``--link-bandwidth`` is refused unless the command's model
    has communication (``uses_link``): a figure the answer ignores would mislead."""
    from solver.systems.chips import resolve_chip

    if kw.get("link_bandwidth") is not None and not uses_link:
        raise InputError("not used here: this command's model has no chip-to-chip communication "
                         "(see qkv solve collective, tp, tp-matmul, dp-comm)", "--link-bandwidth")
    return resolve_chip(kw.get("hw"), kw.get("dtype") or "bf16", peak_flops=kw.get("peak_flops"),
                        bandwidth=kw.get("bandwidth"), hbm=kw.get("hbm"),
                        link_bandwidth=kw.get("link_bandwidth"), hbm_figure=hbm_figure)


def _name_unused_figures(r, kw: dict[str, Any], unused: dict[str, str]) -> None:
    """Name, on the ``ignored:`` line, each hardware figure given on the command line that this
    answer does not use (``{option: why}``), as a model field the count has no use for is named."""
    given = {f"--{k.replace('_', '-')}": why for k, why in unused.items() if kw.get(k) is not None}
    if given:
        r.convention["ignored"] = {**(r.convention.get("ignored") or {}), **given}


def _model(kw: dict[str, Any], need_params: bool, need_kv: bool):
    """``(spec, cfg)``: the one ModelConfig of --preset, --config and the field flags
    (drills.cli.model_flags), or ``(spec, None)`` when none is given.

    Pops those flags from ``kw``. ``need_params``: the parameter count is asked of the config;
    ``need_kv``: only the KV size is (layers, heads and head size suffice).
    """
    from drills.cli.model_flags import PARAMS_NEEDS, pop_model

    spec = pop_model(kw)
    if not spec.stated:
        return spec, None
    if not need_params and need_kv:
        return spec, spec.kv_config()
    return spec, spec.config(PARAMS_NEEDS)


def _kv_per_token(cfg, dtype: str, context: int):
    """X of B·S·X for ``cfg`` at ``context`` cached positions: the model's real cache per position (a window
    holds min(S, W) positions, latent attention d_c + d_R per layer; solver.systems.inference)."""
    from solver.systems.inference import kv_bytes_per_token_at

    return kv_bytes_per_token_at(cfg, int(context), dtype)


#: Why a command that counts no KV cache ignores the fields that only shape it.
NO_KV = "no KV cache in this count"
KV_ONLY = ("sliding_window", "global_every")  # the latent widths shape the weights too
SPAN_FULL = "attention FLOPs over the full n×n (the window is a mask), as FlopCounterMode counts them"
#: What Korthikanti et al.'s activation formula reads of a model (``activations``).
KORTHIKANTI_READS = ("Korthikanti et al.'s per-layer formula reads h and a only: a GPT layer with multi-head "
                     "attention, a 4h two-matrix FFN and the full s×s scores")
_EXPERTS_ONE_FFN = "the crossover counts one dense FFN of d_ff per token"
_LATENT_NAIVE = "the heads' own K and V (the naive order; qkv solve mla-decode counts the absorbed one)"
#: Why one attention layer's FLOPs and bytes (``attention-flops``) ignore these fields of a model.
ATTENTION_LAYER_UNUSED = {
    "sliding_window": "all S keys counted (the window is a mask)", "global_every": "all S keys counted in every layer",
    **{k: _LATENT_NAIVE for k in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim")},
    **{k: _EXPERTS_ONE_FFN for k in ("n_experts", "top_k", "n_shared_experts", "d_ff_expert", "first_dense_layers")},
    "lora_rank": "adapters are not in the crossover's matmuls"}


# ---------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------


#: Count units whose singular reads better after 1 ("1 chip").
_SINGULAR = {"chips": "chip", "sequences": "sequence", "parameters": "parameter", "elements": "element",
             "tokens": "token", "slopes": "slope", "bits": "bit", "nats": "nat", "buckets": "bucket"}
_BYTE_VIEWS = ("GB", "GiB", "MB", "MiB")


_WORDS = {"mfu": "MFU", "hfu": "HFU", "kv": "KV", "hbm": "HBM", "flops": "FLOPs", "flop": "FLOP", "tp": "TP",
          "dp": "DP", "pf": "PF", "gpu": "GPU", "gpus": "GPUs", "ffn": "FFN", "mlp": "MLP", "qkv": "QKV",
          "mla": "MLA", "moe": "MoE", "ppl": "perplexity", "nll": "NLL", "algbw": "algbw", "busbw": "busbw"}


def label(key: str) -> str:
    """A breakdown key as people read it: ``bubble_fraction`` -> ``bubble fraction``,
    ``model_flops_per_token`` -> ``model FLOPs per token`` (JSON keeps the key)."""
    return " ".join(_WORDS.get(w, w) for w in key.split("_"))


def unit_word(unit: str, value: Any) -> str:
    """``chips`` after 1 reads ``chip``; other units as they are."""
    try:
        one = value == 1
    except Exception:  # noqa: BLE001 - arrays and the like
        one = False
    return _SINGULAR.get(unit, unit) if one is True else unit


def human_value(key: str, value: Any) -> str:
    """A value for display, by its key: bytes (``*_bytes``), seconds (``*_s``), GB/GiB views, lists
    entry by entry; every number through the one formatter (solver.units.format_number)."""
    from solver.result import as_number
    from solver.units import format_bandwidth, format_bytes, format_number

    value = as_number(value)
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(human_value("", v) for v in value) + "]"
    if isinstance(value, dict):
        return "; ".join(f"{label(str(k))}: {human_value(str(k), v)}" for k, v in value.items()) or "(none)"
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "bytes" or key.endswith("_bytes") or key == "hbm":
        # a negative figure (memory left over) carries its sign in every view: −111 GB, not 111 GB
        return format_bytes(value) if value >= 0 else format_bytes(value).replace("-", "−")
    if key in NEVER and value == float("inf"):
        return NEVER[key]
    if key in _BYTE_VIEWS:
        return f"{format_number(value, 4)} {key}"
    if key.endswith("bandwidth") or key in ("algbw", "busbw", "bytes/s"):
        # in GB/s (TB/s, ...): a figure rounded to 6 significant figures never reads as exact bytes/s
        return format_bandwidth(value)
    if (key.endswith("_s") and not key.endswith("per_s")) or key in ("s", "latency"):
        v = float(value)
        for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if abs(v) >= scale or unit == "ns":
                if unit == "s":
                    return f"{format_number(v)} s"
                return f"{format_number(v)} s ({format_number(v / scale, 4)} {unit})"
    return format_number(value)


def _finite(value: Any, allow_minus_inf: bool) -> bool:
    """No NaN, no +∞ (and in a scalar no −∞): a masked entry of a matrix may be −∞."""
    import math

    from solver.result import as_number

    value = as_number(value)
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return all(_finite(v, True) for v in value)
    if isinstance(value, dict):
        return all(_finite(v, allow_minus_inf) for v in value.values())
    if isinstance(value, float):
        return not (math.isnan(value) or value == math.inf or (value == -math.inf and not allow_minus_inf))
    return True


#: Breakdown figures whose +∞ is a true answer, "never" (the solver's convention), shown in words.
NEVER = {"compute_bound_batch": "none: no batch is compute-bound (the KV read grows as fast as the compute)",
         "critical_batch": "none: no batch is compute-bound (the intensity never reaches the critical one)"}


def check_finite(result) -> None:
    """Refuse in one line an answer that overflowed (inf) or is undefined (NaN) for these inputs;
    a +∞ of :data:`NEVER` is a true answer and stays."""
    import math

    named = [("answer", result.answer), *result.breakdown.items()]
    named += [(s.formula, s.value) for s in result.steps if not any(k in s.formula for k in ("B*", "b_c"))]
    for name, value in named:
        if name in NEVER and isinstance(value, float) and value == math.inf:
            continue
        if not _finite(value, False):
            raise InputError(f"{label(name)} is not a finite number for these inputs: a value is too large or too "
                             "small for the formula (overflow); give figures of a realistic size")


def show(result, as_json: bool, explain: bool, *, answer_label: str | None = None, unit_text: str | None = None) -> None:
    """Print a ``solver.result.Result``: JSON, the worked solution, or the answer and breakdown.

    The answer line always carries its unit or a label: ``answer_label``, else the result's
    ``convention["answer"]``, else the name of the breakdown figure equal to the answer.
    ``unit_text`` replaces the unit in the text only (JSON keeps ``result.unit``)."""
    from solver.result import fmt

    check_finite(result)
    if as_json:
        d = result.to_json()
        emit_json({k: d[k] for k in ("answer", "unit", "convention", "breakdown")})
        return
    unit = result.unit if unit_text is None else unit_text
    text = human_value(result.unit, result.answer)
    if unit in ("s", "bytes", "bytes/s"):  # the text carries its unit
        line = text
    elif unit:
        line = f"{text} {unit_word(unit, result.answer)}"
    else:
        line = text
    name = answer_label or _answer_name(result)
    emit(f"answer: {line}" + (f"  ({name})" if name and not unit else ""))
    if result.convention.get("ignored"):
        from drills.cli.model_flags import ignored_text

        emit(ignored_text(result.convention["ignored"]))
    if explain:
        emit("")
        emit("worked solution:")
        for s in result.steps:
            emit(f"  {s.formula}")
            if s.substitution.strip():  # a step with nothing to substitute: formula, then value
                emit(f"      = {s.substitution}")
            if s.unit == "bytes/s":  # the text carries its unit (185.05 GB/s)
                emit(f"      = {human_value(s.unit, s.value)}")
                continue
            value = fmt(s.value) if not isinstance(s.value, (list, tuple)) else human_value("", s.value)
            emit(f"      = {value}{(' ' + unit_word(s.unit, s.value)) if s.unit else ''}")
    emit("")
    emit("breakdown:")
    rows = [(_row_label(k), human_value(k, v)) for k, v in result.breakdown.items()]
    width = max((len(k) for k, _ in rows), default=0)
    for k, v in rows:
        emit(f"  {k.ljust(width)}  {v}")
    if explain:
        emit("")
        emit("conventions:")
        for k, v in result.convention.items():
            if isinstance(v, dict):
                v = "; ".join(f"{label(str(a))}: {b}" for a, b in v.items()) or "(none)"
            emit(f"  {label(k)}: {v}")


def _row_label(key: str) -> str:
    """A breakdown row's name; the unit its value shows (``time_s`` -> ``time``: "0.004 s") is left out."""
    for suffix in ("_s", "_bytes"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return label(key[: -len(suffix)])
    return label(key)


def _answer_name(result) -> str | None:
    """What a unitless answer is: ``convention["answer"]``, else the breakdown key equal to it."""
    said = result.convention.get("answer")
    if isinstance(said, str) and said:
        return said
    for k, v in result.breakdown.items():
        try:
            if v is result.answer or (not isinstance(v, (list, dict)) and v == result.answer):
                return label(k)
        except Exception:  # noqa: BLE001 - arrays compare element-wise
            continue
    return None


def _solver_call(fn):
    """Turn the solver's input errors into one-line CLI errors naming the flag."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from solver.errors import SolverInputError

        try:
            return fn(*args, **kwargs)
        except SolverInputError as e:
            param = f"--{e.param.replace('_', '-')}" if e.param else None
            raise InputError(str(e.args[0]), param) from e

    return wrapper


# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------


@solve_command()
@click.option("--batch", "-B", "-M", "batch", type=SIZE, required=True,
              help="Rows of X (tokens in the batch); -M in the (M×K)·(K×N) notation of GEMM. A matmul's sizes "
                   "read k = 1024 (-M 4k -K 4k -N 4k is 4096 × 4096 × 4096).")
@click.option("--d-in", "-D", "-K", "d_in", type=SIZE, required=True,
              help="Columns of X = rows of W (the contracted size; -K in GEMM notation; a layer size: 4k = 4096).")
@click.option("--d-out", "-F", "-N", "d_out", type=SIZE, required=True,
              help="Columns of W (-N in GEMM notation; a layer size: 4k = 4096).")
@click.option("--mode", type=click.Choice(["forward", "train"]), default="forward", show_default=True)
@click.option("--activations", type=click.Choice(["read", "resident"]), default="read", show_default=True,
              help="read: X is read from HBM (a·B·D bytes counted); resident: X is already on chip (SRAM/VMEM, "
                   "the TPU texts' weight-streaming matmul), only W read and Y written.")
@hardware_options
@plot_option
@output_options
@_solver_call
def matmul(batch, d_in, d_out, mode, activations, plot, as_json, explain, **kw):
    """FLOPs, bytes, intensity, critical intensity, bound and roofline time of X[B,D] @ W[D,F].

    With --plot: the chip's roofline with this matmul marked on it."""
    from solver.systems.roofline import matmul as solve

    check_plot(plot, as_json)
    chip = _chip(kw)
    r = solve(batch, d_in, d_out, mode=mode, dtype=kw["dtype"], weight_dtype=kw["weight_dtype"], chip=chip,
              activations=activations)
    if kw.get("hw") and chip.peak_flops is None:  # e.g. --hw h100 --dtype int4: the answer is not a time
        r.convention["note"] = (f"{kw['hw']} has no {kw['dtype']} peak: the answer is the intensity, not the time; "
                                "give --peak-flops for the time and the bound")
    _name_unused_figures(r, kw, dict.fromkeys(("hbm", "mfu", "chips"), "the roofline of one chip at its peak (no MFU, no capacity)"))
    show(r, as_json, explain)
    if "note" in r.convention and not as_json:
        click.echo(f"qkv: note: {r.convention['note']}", err=True)
    if plot is not None:
        _one_point_plot(chip, kw, f"matmul [{batch},{d_in}]@[{d_in},{d_out}] {mode}", r, plot)


def _one_point_plot(chip, kw, label: str, r, plot: str) -> None:
    """The chip's roofline with the command's one operation marked (its figures are printed above)."""
    from drills.plots import roofline as picture
    from solver.systems.roofline import roofline as solve

    roof = solve(chip, weight_dtype=kw["weight_dtype"] or kw["dtype"])
    draw("roofline", picture.data([(kw.get("hw") or "this chip", roof)], [(label, r)]), plot)


@solve_command()
@hardware_options
@click.option("--compare", "compare", metavar="NAME", multiple=True,
              help="With --plot: another chip preset's roofline beside this one (repeatable).")
@click.option("--mark-batch", type=COUNT, multiple=True,
              help="With --plot: mark X[B,D] @ W[D,D] at this batch (repeatable; default 1, ⌈B*⌉ and 8·⌈B*⌉).")
@click.option("--mark-d", type=COUNT, default=8192, show_default=True,
              help="With --plot: D of the marked matmuls (and d_model of the marked decode attention).")
@plot_option
@output_options
@_solver_call
def roofline(compare, mark_batch, mark_d, plot, as_json, explain, **kw):
    """Critical arithmetic intensity (peak / bandwidth) and the batch that reaches it.

    With --plot the roofline is drawn with its ridge point, and the operations marked on it
    (matmuls at a few batches, a decode step's attention) are computed and printed too."""
    from solver.systems.roofline import roofline as solve

    check_plot(plot, as_json)
    if (compare or mark_batch) and plot is None:
        raise InputError("draws on the picture: give --plot FILE (or --plot -)", "--compare" if compare else
                         "--mark-batch")
    chip = _chip(kw)
    wdt = kw["weight_dtype"] or kw["dtype"]
    r = solve(chip, weight_dtype=wdt)
    _name_unused_figures(r, kw, dict.fromkeys(("hbm", "mfu", "chips"), "the roofline of one chip at its peak (no MFU, no capacity)"))
    show(r, as_json, explain)
    if plot is not None:
        _roofline_plot(r, chip, wdt, compare, mark_batch, mark_d, plot, as_json, kw)


def _roofline_plot(r, chip, wdt, compare, mark_batch, mark_d, plot, as_json, kw) -> None:
    """The operations marked on the roofline, computed by the solver, printed, then drawn."""
    import math

    from drills.plots import roofline as picture
    from solver.systems.chips import resolve_chip
    from solver.systems.roofline import attention, matmul
    from solver.systems.roofline import roofline as solve

    dtype = kw["dtype"]
    name = kw.get("hw") or "this chip"
    chips = [(name, r)] + [(other, solve(resolve_chip(other, dtype), weight_dtype=wdt)) for other in compare]
    b_star = math.ceil(float(r.breakdown["critical_batch"]))
    batches = list(dict.fromkeys(int(b) for b in mark_batch)) or sorted({1, b_star, 8 * b_star})
    points = [(f"matmul B={b}", matmul(b, mark_d, mark_d, dtype=dtype, weight_dtype=wdt, chip=chip)) for b in batches]
    heads = max(1, mark_d // 128)
    points.append((f"decode attention B=8 S=4096 ({heads}×128)",
                   attention(8, 4096, heads, 128, mode="decode", dtype=dtype, chip=chip)))
    d = picture.data(chips, points)
    if not as_json:
        emit("")
        emit(f"marked on the roofline (D = {mark_d}, weights {wdt}, activations {dtype}):")
        for p in d["points"]:
            emit(f"  {p['label']:<42} I = {p['intensity']:<10.5g} attained {p['attained']:.4g} FLOP/s "
                 f"({p['bound']}-bound)")
        for c in d["chips"][1:]:
            emit(f"  {c['name']:<42} ridge I* = {c['ridge']:.5g} FLOP/byte")
    draw("roofline", d, plot)


@solve_command("attention-flops")
@click.option("--batch", "-B", type=COUNT, required=True)
@click.option("--seq", "-T", "--context", "--seq-len", "seq", type=SIZE, required=True,
              help="Prefill: query tokens (and keys unless --kv-seq). Decode: the context length (8k = 8192).")
@click.option("--kv-seq", "-S", type=SIZE, default=None, help="Key/value length (default --seq).")
@click.option("--n-heads", "--heads", "n_heads", type=INT, default=None, help="Query heads (or --preset).")
@click.option("--d-head", "--head-dim", "d_head", type=SIZE, default=None, help="Head size (or --preset).")
@click.option("--n-kv-heads", "--kv-heads", "n_kv_heads", type=INT, default=None,
              help="KV heads (default n_heads; 1 = MQA).")
@click.option("--mode", type=click.Choice(["prefill", "decode"]), default="prefill", show_default=True)
@click.option("--d-model", "--hidden", "d_model", type=SIZE, default=None,
              help="For the crossover lengths (default n_heads·d_head).")
@click.option("--d-ff", type=SIZE, default=None, help="For the crossover with all matmuls (default 4·d_model).")
@click.option("--ffn", type=click.Choice(["relu", "gelu", "swiglu"]), default=None,
              help="FFN of the crossover: relu | gelu (two matrices) | swiglu (three). Default gelu, or the preset's.")
@preset_options
@hardware_options
@plot_option
@output_options
@_solver_call
def attention_flops(batch, seq, kv_seq, n_heads, d_head, n_kv_heads, mode, d_model, d_ff, ffn, plot, as_json,
                    explain, **kw):
    """Attention FLOPs and intensity (one layer), and where attention overtakes the matmuls.

    With --preset or --config the heads, head size, KV heads, width and FFN come from the model;
    flags given win. With --plot (and a chip): the roofline with this attention marked on it."""
    from solver.systems.roofline import attention

    check_plot(plot, as_json)
    spec, cfg = preset_spec(kw)
    if cfg is not None:
        n_heads = n_heads or cfg.n_heads
        d_head = d_head or cfg.head_dim
        n_kv_heads = n_kv_heads or cfg.kv_heads
        d_model = d_model or cfg.d_model
        d_ff = d_ff or cfg.d_ff
        ffn = ffn or cfg.ffn
    if n_heads is None or d_head is None:
        raise InputError("needs --n-heads and --d-head (or --preset NAME, or --config FILE)",
                         "--n-heads" if n_heads is None else "--d-head")
    ffn = ffn or "gelu"
    chip = _chip(kw)
    r = attention(batch, seq, n_heads, d_head, kv_seq=kv_seq, n_kv_heads=n_kv_heads, mode=mode,
                  dtype=kw["dtype"], d_model=d_model, d_ff=d_ff, ffn=ffn, chip=chip)
    name_model(r, spec, cfg, ATTENTION_LAYER_UNUSED)
    show(r, as_json, explain)
    if plot is not None:
        if "bound" not in r.breakdown:
            raise InputError("the roofline needs the chip: give --hw NAME (or --peak-flops and --bandwidth)", "--plot")
        _one_point_plot(chip, kw, f"attention {mode} B={batch} T={seq}", r, plot)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--tokens", "-T", "--prompt", "--seq", "tokens", type=SIZE, required=True,
              help="Prompt tokens to prefill (8k = 8192).")
@model_options
@hardware_options
@output_options
@_solver_call
def prefill(params, tokens, as_json, explain, **kw):
    """Time of a prefill: 2·N·T / (chips · peak · MFU) (exact matmul FLOPs with a model config)."""
    from solver.systems.inference import prefill as solve

    (spec, cfg), flops = _model(kw, need_params=params is None, need_kv=False), None
    if cfg is not None:
        from solver.counting import matmul_flops, param_count

        params = params or param_count(cfg)
        flops = matmul_flops(cfg, 1, int(tokens), "forward").flops
    if params is None:
        raise InputError("give --params or --preset", "--params")
    r = solve(params, tokens, _chip(kw), chips=kw["chips"] or 1, mfu=kw["mfu"] or 1.0, flops=flops)
    if kw["mfu"] is None:
        r.convention["mfu"] = "1 (peak; give --mfu for a realistic time)"
    name_model(r, spec, cfg, {"sliding_window": SPAN_FULL, "global_every": SPAN_FULL,
                               "lora_rank": "the prefill FLOPs are the base model's"})
    _name_unused_figures(r, kw, {"bandwidth": "a prefill is timed by its FLOPs alone",
                                 "weight_dtype": "a prefill is timed by its FLOPs alone",
                                 "hbm": "nothing here is held against the HBM"})
    show(r, as_json, explain)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--batch", "-B", type=COUNT, required=True, help="Sequences decoded together.")
@click.option("--context", "-S", "--seq", "context", type=SIZE, required=True,
              help="Cached tokens per sequence (8k = 8192).")
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None,
              help="KV-cache bytes per token: 2·layers·kv_heads·d_head·bytes (0: no cache).")
@click.option("--model", "decode_model", type=click.Choice(["total", "kv-plus-max"]), default="total",
              show_default=True, help="total: max(all bytes/bandwidth, FLOPs/peak); kv-plus-max (the scaling "
                                      "book): KV read + max(weight read, compute).")
@click.option("--experts", type=click.Choice(["expected", "worst", "all"]), default="expected", show_default=True,
              help="MoE: experts read per layer: expected E·(1−(1−k/E)^B) under uniform routing, the worst "
                   "case min(E, B·k), or all E.")
@model_options
@hardware_options
@plot_option
@output_options
@_solver_call
def decode(params, batch, context, kv_bytes_per_token, decode_model, experts, plot, as_json, explain, **kw):
    """Lower bound of one decode step, in either named model (--model), over all chips.

    With a mixture of experts (--preset mixtral-8x7b) only the experts the batch touches are
    read; a sliding window caps each windowed layer's cache at W positions; latent attention
    caches d_c + d_R per token and layer.

    With --plot: the chip's roofline with this decode step marked (FLOP/s attained per chip)."""
    from solver.systems.inference import decode_step

    check_plot(plot, as_json)

    (spec, cfg), attn = _model(kw, need_params=params is None, need_kv=kv_bytes_per_token is None), 0
    from drills.cli.solve_hf_meta import layout_of, name_weights, quantized_for

    quant = quantized_for(spec, cfg, kw["weight_dtype"], params)  # issue 37: the file's quantization_config
    layout = layout_of(quant)
    if cfg is not None and params is None and kv_bytes_per_token is None and \
            (cfg.is_moe or cfg.sliding_window or cfg.is_mla or layout is not None):  # issue 10: what a step reads
        from solver.systems.decode_read import model_read

        dtype = kw["dtype"]
        read = model_read(cfg, int(batch), int(context), kw["weight_dtype"] or dtype, dtype, experts, layout)
        B, L = int(batch), cfg.decoder_layers or cfg.n_layers
        per_key = 2 * cfg.n_heads * (cfg.qk_head_dim + cfg.value_head_dim)  # QKᵀ and AV, 2 per multiply-add
        attn = B * per_key * cfg.attended_over(int(context), L)
        r = decode_step(read.flop_params, batch, context, 0, _chip(kw), chips=kw["chips"] or 1,
                        weight_dtype=kw["weight_dtype"] or dtype, attention_flops=attn, read=read,
                        model=decode_model)
        name_weights(r, quant)
        name_model(r, spec, cfg, {"lora_rank": "the step reads the base model's weights"})
        _name_unused_figures(r, kw, {"mfu": "a decode step's lower bound runs at the peak and the full bandwidth",
                                     "hbm": "nothing here is held against the HBM"})
        show(r, as_json, explain)
        if plot is not None:
            _one_point_plot(_chip(kw), kw, f"decode step B={batch} S={context}", r, plot)
        return
    unused: dict[str, str] = {}
    if cfg is not None:
        from solver.counting import param_count

        if params is not None:
            unused.update({k: "--params given: the parameter count is not the model's" for k in
                           ("n_experts", "top_k", "n_shared_experts", "d_ff_expert", "first_dense_layers")})
        params = params or param_count(cfg)
        if kv_bytes_per_token is None:
            kv_bytes_per_token = _kv_per_token(cfg, kw["dtype"], context)
        else:
            unused.update({k: "--kv-bytes-per-token given" for k in KV_ONLY})
        L = cfg.decoder_layers or cfg.n_layers
        attn = 2 * int(batch) * cfg.n_heads * (cfg.qk_head_dim + cfg.value_head_dim) * \
            cfg.attended_over(int(context), L)
    if params is None:
        raise InputError("give --params or --preset", "--params")
    if kv_bytes_per_token is None:
        raise InputError("give --kv-bytes-per-token (2·layers·kv_heads·d_head·bytes) or --preset",
                         "--kv-bytes-per-token")
    from drills.cli.solve_hf_meta import weight_bytes_of

    r = decode_step(params, batch, context, kv_bytes_per_token, _chip(kw), chips=kw["chips"] or 1,
                    weight_dtype=kw["weight_dtype"] or kw["dtype"], attention_flops=attn, model=decode_model,
                    weights=weight_bytes_of(quant))
    name_weights(r, quant)
    name_model(r, spec, cfg, unused)
    _name_unused_figures(r, kw, {"mfu": "a decode step's lower bound runs at the peak and the full bandwidth",
                                 "hbm": "nothing here is held against the HBM"})
    show(r, as_json, explain)
    if plot is not None:
        _one_point_plot(_chip(kw), kw, f"decode step B={batch} S={context}", r, plot)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--tokens", "-D", type=COUNT, default=None, help="Training tokens (1.4e12, 1.4T).")
@click.option("--compute", "-C", "--flops", "compute", type=FLOPS, default=None,
              help="Compute budget in FLOPs (3.14e23).")
@click.option("--gpu-hours", type=POSITIVE, default=None, help="GPU-hours spent (gives the MFU).")
@click.option("--seq", "--seq-len", "seq", type=SIZE, default=None, help="With --preset: sequence length of the exact count (8k = 8192).")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="none", show_default=True,
              help="Activation recomputation: none (6ND), full (8ND: the forward again; Korthikanti et al. 2022, "
                   "the HFU of Chowdhery et al. 2022), selective (6ND + 4·L·s·d·D; needs --preset or "
                   "--layers/--d-model and --seq).")
@model_options
@hardware_options
@plot_option
@output_options
@_solver_call
def train(params, tokens, compute, gpu_hours, seq, recompute, plot, as_json, explain, **kw):
    """C = 6·N·D, PF-days, days at an MFU on some chips, tokens from a budget, MFU from GPU-hours.

    With --plot: where a GPU's bytes go in mixed-precision Adam training with plain data
    parallelism (weights, gradients, optimizer states: qkv solve zero --stage 0) against its HBM."""
    from solver.systems.training import train as solve

    check_plot(plot, as_json)

    layers, d_model = kw.get("n_layers"), kw.get("d_model")
    if params is not None and recompute == "selective":  # the two sizes feed the recomputed term, not a model
        kw = {**kw, "n_layers": None, "d_model": None}
    (spec, cfg), exact = _model(kw, need_params=True, need_kv=False), None
    if cfg is not None:
        from fractions import Fraction as Fr

        from solver.counting import matmul_flops, param_count

        params = params or param_count(cfg)
        n = int(seq or cfg.max_positions)
        exact = Fr(matmul_flops(cfg, 1, n, "train").flops, n) if recompute == "none" else None
        layers, d_model, seq = layers or cfg.n_layers, d_model or cfg.d_model, seq or n
    if params is None and (tokens is not None or compute is None):
        raise InputError("give --params or --preset", "--params")
    chip = _chip(kw)
    r = solve(params, tokens=tokens, compute=compute, chip=chip, chips=kw["chips"], mfu=kw["mfu"],
              gpu_hours=gpu_hours, exact_flops_per_token=exact, recompute=recompute, layers=layers,
              seq=None if seq is None else int(seq), d_model=None if d_model is None else int(d_model))
    name_model(r, spec, cfg, {"sliding_window": SPAN_FULL, "global_every": SPAN_FULL})
    _name_unused_figures(r, kw, {"bandwidth": "training time is FLOPs / (chips · peak · MFU)",
                                 "weight_dtype": "training time is FLOPs / (chips · peak · MFU)",
                                 **({} if plot is not None else {"hbm": "used only by --plot (the memory picture)"})})
    show(r, as_json, explain)
    if plot is not None:
        from solver.systems.training import zero as states

        z = states(int(params), kw["chips"] or 1, 0, hbm=chip.hbm)
        _zero_plot([z], f"Training {si_count(params)} params: model states per GPU (mixed-precision Adam, "
                   "plain DP)", chip.hbm, as_json, plot)


def _params_or_preset(params, kw: dict[str, Any]):
    """``(N, spec, cfg)``: ``--params``, or the parameter count of ``--preset``/``--config``
    (solver.counting; every parameter, the experts included) with the model's description."""
    spec, cfg = preset_spec(kw)
    if params is not None:
        if cfg is not None:
            raise InputError("give --params or --preset/--config, not both", "--params")
        return params, spec, cfg
    if cfg is None:
        raise InputError("give --params (or --preset NAME, or --config FILE)", "--params")
    from solver.counting import param_count

    return param_count(cfg), spec, cfg


def hbm_options(f):
    """--hw and --hbm only: the memory commands need the HBM size, nothing else of the chip."""
    f = click.option("--hbm", type=BYTES, help="HBM bytes per GPU (80e9, 80GB, 80GiB); reports what is left.")(f)
    f = click.option("--hw", "hw", metavar="NAME", help="Hardware preset (qkv hw list) for the HBM size.")(f)
    return mark(f, 2, "Hardware")


def _hbm(hw: str | None, hbm) -> tuple[Any, str | None]:
    """(HBM bytes per GPU, where it came from), or (None, None) when neither flag is given."""
    if hw is None and hbm is None:
        return None, None
    chip = _chip({"hw": hw, "hbm": hbm})
    origin = chip.origin.get("hbm")
    if "hbm_figure" in chip.origin:
        origin += f", {chip.origin['hbm_figure']} figure"
    return chip.need("hbm"), origin


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters Ψ (7.5e9, 7.5B); or a model (--preset).")
@click.option("--gpus", "--dp", "gpus", type=INT, required=True, help="Data-parallel GPUs N_d.")
@click.option("--stage", type=Int(0, 3), required=True, help="0 (plain DP), 1, 2 or 3.")
@click.option("--optimizer-bytes", "-K", type=INT, default=12, show_default=True,
              help="Optimizer-state bytes per parameter (Adam, mixed precision: 12).")
@model_options
@hbm_options
@plot_option
@output_options
@_solver_call
def zero(params, gpus, stage, optimizer_bytes, hw, hbm, plot, as_json, explain, **kw):
    """Model-state bytes per GPU with mixed-precision Adam under ZeRO stage 0-3 (and what HBM leaves).

    Ψ is --params, or the exact parameter count of a model (--preset, --config or the field flags;
    LoRA adapters included, every parameter trained). With --plot: where the bytes go under every
    stage, side by side, against the HBM."""
    from solver.systems.training import zero as solve

    check_plot(plot, as_json)
    spec, cfg = _model(kw, need_params=params is None, need_kv=False)
    if params is not None and cfg is not None:
        raise InputError("Ψ is --params or the model's parameter count: give one (--params, or --preset/--config)",
                         "--params")
    if cfg is not None:
        from solver.counting import param_breakdown

        params = param_breakdown(cfg).total_with_lora
    if params is None:
        raise InputError("give --params or --preset", "--params")
    size, origin = _hbm(hw, hbm)
    r = solve(params, gpus, stage, optimizer_bytes=optimizer_bytes, hbm=size, hbm_origin=origin)
    name_model(r, spec, cfg, {**{k: "ZeRO's model states hold every parameter" for k in ("top_k",)},
                               **{k: NO_KV for k in KV_ONLY}})
    show(r, as_json, explain)
    if plot is not None:
        results = [solve(params, gpus, s, optimizer_bytes=optimizer_bytes, hbm=size, hbm_origin=origin)
                   for s in range(4)]
        _zero_plot(results, f"ZeRO: model states per GPU, {si_count(params)} parameters on {gpus} GPUs "
                   f"(stage {stage} asked)", size, as_json, plot)


def si_count(n) -> str:
    """70e9 → '70B' (parameters in titles)."""
    from drills.plots import count

    return count(float(n))


def _zero_plot(results, title: str, hbm, as_json: bool, plot: str) -> None:
    """Print each result's parts, then draw them as bars (one per ZeRO stage) against ``hbm``."""
    from drills.plots import memory as picture
    from drills.plots import si

    def format_bytes(v) -> str:
        return f"{int(v):,} B ({si(float(v), 'B')})"

    bars = []
    if not as_json and len(results) > 1:
        emit("")
        emit("model states per GPU under each stage:")
    for z in results:
        b = z.breakdown
        label = z.convention["stage"].split(":")[0]
        bars.append((f"stage {label}", [("weights", b["weights_bytes"]), ("gradients", b["gradients_bytes"]),
                                        ("optimizer states", b["optimizer_bytes"])]))
        if not as_json and len(results) > 1:
            emit(f"  stage {label}: weights {format_bytes(b['weights_bytes'])}, gradients "
                 f"{format_bytes(b['gradients_bytes'])}, optimizer {format_bytes(b['optimizer_bytes'])}")
    if not as_json and len(results) == 1:
        b = results[0].breakdown
        emit("")
        emit(f"model states per GPU (stage 0): weights {format_bytes(b['weights_bytes'])}, gradients "
             f"{format_bytes(b['gradients_bytes'])}, optimizer {format_bytes(b['optimizer_bytes'])}")
    draw("memory", picture.data(title, bars, hbm), plot)


@solve_command()
@click.option("--seq", "-s", "--seq-len", "seq", type=SIZE, required=True, help="Sequence length s (8k = 8192).")
@click.option("--batch", "-b", type=COUNT, required=True, help="Micro-batch size b.")
@click.option("--d-model", "--hidden", "d_model", type=SIZE, default=None, help="Hidden size h (or --preset).")
@click.option("--n-heads", "-a", "--heads", "n_heads", type=INT, default=None, help="Attention heads a (or --preset).")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="none", show_default=True,
              is_flag=False, flag_value="full", help="Recomputation; --recompute alone means full.")
@click.option("--n-layers", "-L", "--layers", "n_layers", type=INT, default=1, show_default=True,
              help="Layers (1 = per layer).")
@click.option("--tp", "-t", type=INT, default=1, show_default=True, help="Tensor-parallel GPUs (per-GPU bytes).")
@click.option("--sequence-parallel", is_flag=True, help="With --tp: sequence parallelism splits the rest.")
@preset_options
@hbm_options
@output_options
@_solver_call
def activations(seq, batch, d_model, n_heads, recompute, n_layers, tp, sequence_parallel, hw, hbm, as_json, explain,
                **kw):
    """Activation bytes per layer: s·b·h·(34 + 5·a·s/h) (Korthikanti et al.), with recomputation and --tp.

    With --preset or --config, h and a come from the model (still per layer unless -L is given)."""
    from solver.systems.training import activations as solve

    spec, cfg = preset_spec(kw)
    if cfg is not None:
        d_model, n_heads = d_model or cfg.d_model, n_heads or cfg.n_heads
    if d_model is None or n_heads is None:
        raise InputError("needs --d-model (h) and --n-heads (a), or --preset NAME, or --config FILE",
                         "--d-model" if d_model is None else "--n-heads")

    if tp > 1 or sequence_parallel:
        from solver.systems.parallelism import activations_parallel

        if hw is not None or hbm is not None:
            raise InputError("with --tp the HBM headroom is not computed; drop --hw/--hbm", "--hbm")
        r = activations_parallel(seq, batch, d_model, n_heads, tp=tp, sequence_parallel=sequence_parallel,
                                 recompute=recompute, n_layers=n_layers)
    else:
        size, origin = _hbm(hw, hbm)
        r = solve(seq, batch, d_model, n_heads, recompute=recompute, n_layers=n_layers, hbm=size, hbm_origin=origin)
    name_model(r, spec, cfg, uses=("d_model", "n_heads"), why=KORTHIKANTI_READS)
    show(r, as_json, explain)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--batch", "-B", type=COUNT, default=None, help="With --context: add the KV cache.")
@click.option("--context", "-S", "--seq", "context", type=SIZE, default=None,
              help="Cached tokens per sequence (8k = 8192).")
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None, help="KV-cache bytes per token (0: no cache).")
@click.option("--hbm-figure", type=click.Choice(["datasheet", "device"]), default="datasheet", show_default=True,
              help="Preset HBM: the datasheet figure, or what the device reports (nvidia-smi, rocm-smi).")
@model_options
@hardware_options
@output_options
@_solver_call
def chips(params, batch, context, kv_bytes_per_token, hbm_figure, as_json, explain, **kw):
    """Fewest chips whose HBM holds the weights (and the KV cache): ⌈(N·w + KV) / HBM⌉."""
    from solver.systems.inference import min_chips

    wants_kv = batch is not None and kv_bytes_per_token is None
    given_params = params
    spec, cfg = _model(kw, need_params=params is None, need_kv=wants_kv)
    unused = {"top_k": "every expert is held, not only the active ones",
              "lora_rank": "the weights held are the base model's"}
    kv: Any = 0
    if cfg is not None:
        from solver.counting import param_count

        params = params or param_count(cfg)
    if params is None:
        raise InputError("give --params or --preset", "--params")
    if batch is not None or context is not None:
        if batch is None or context is None or (kv_bytes_per_token is None and cfg is None):
            raise InputError("the KV cache needs --batch, --context and --kv-bytes-per-token (or --preset)",
                             "--context")
        if kv_bytes_per_token is None:  # issue 20: the model's own cache (window, latent attention honoured)
            from solver.systems.inference import kv_cache_bytes_of

            kv = Fraction(kv_cache_bytes_of(cfg, int(batch), int(context), kw["dtype"]))
        else:
            kv = Fraction(batch) * Fraction(context) * Fraction(kv_bytes_per_token)
            unused.update({k: "--kv-bytes-per-token given" for k in KV_ONLY})
    else:
        unused.update({k: NO_KV for k in KV_ONLY})
    chip = hbm_chip(kw, hbm_figure)
    hbm = chip.need("hbm")
    from drills.cli.solve_hf_meta import name_weights, quantized_for, weight_bytes_of

    quant = quantized_for(spec, cfg, kw["weight_dtype"], given_params)  # issue 37: the file's quantization_config
    r = min_chips(params, kw["weight_dtype"] or kw["dtype"], hbm, kv_bytes=kv, weights=weight_bytes_of(quant))
    name_weights(r, quant)
    r.convention["hbm"] = f"{int(hbm):,} bytes per chip ({chip.origin.get('hbm', 'given')}" + \
        (f", {chip.origin['hbm_figure']} figure" if "hbm_figure" in chip.origin else "") + ")"
    name_model(r, spec, cfg, unused)
    _name_unused_figures(r, kw, {**dict.fromkeys(("bandwidth", "peak_flops", "mfu"), "holding the bytes needs no "
                                                 "FLOP/s or bandwidth"), "chips": "the chips are the answer"})
    show(r, as_json, explain)


def hbm_chip(kw, figure: str):
    """The chip with HBM from the preset's ``figure``; a preset without a device figure falls back, said so.
    ``serve`` and ``chips`` both take their HBM here, with the same default figure (datasheet)."""
    from solver.errors import SolverInputError

    try:
        return _chip(kw, hbm_figure=figure)
    except SolverInputError:
        if figure != "device":
            raise
        chip = _chip(kw, hbm_figure="datasheet")
        chip.origin["hbm_figure"] = "datasheet (no device figure known for this preset)"
        return chip
