"""``qkv solve matmul|roofline|attention-flops|prefill|decode|train|zero|activations|chips``.

Every figure is a flag, so a question that states its own numbers is solved as stated;
``--hw NAME`` fills in only the hardware figures not given. Numbers accept plain and
scientific forms (``989e12``, ``3.35e12``) and suffixes: ``989T`` or ``989TFLOPS`` (FLOP/s),
``80GB`` / ``80GiB`` (bytes), ``3.35TB/s`` (bytes/s), ``70B`` / ``1.4T`` (counts: params,
tokens). The formulas live in ``solver.systems.roofline``, ``solver.systems.inference`` and ``solver.systems.training``.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Any

import click

from drills.cli.matrix_args import parse_number
from drills.cli.model_flags import model_options
from drills.output import InputError, emit, emit_json

# ---------------------------------------------------------------------------------------
# Numbers with units
# ---------------------------------------------------------------------------------------

_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_COUNT = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_UNITS = {
    "flops": r"(?:flop/s|flops|flop)?",
    "bytes": r"(?:b|bytes?)?",
    "bandwidth": r"(?:b/s|bps|bytes?/s)?",
    "count": r"",
    "plain": r"",
}
_QTY = re.compile(r"^(?P<num>[-+0-9.eE/]+?)\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTPEB]?)\s*(?P<unit>[A-Za-z/]*)$")


def parse_quantity(text: str, kind: str, param: str) -> Fraction:
    """``'80GB'`` → 80·10^9, ``'80GiB'`` → 80·2^30, ``'989T'`` → 989·10^12, ``'70B'`` (a count) → 7·10^10."""
    m = _QTY.match(text.strip())
    if not m:
        raise InputError(f"{text!r} is not a number (examples: 989e12, 989T, 80GB, 3.35TB/s, 70B)", param)
    value = parse_number(m["num"], param)
    prefix, unit = m["prefix"], m["unit"]
    if kind == "count":
        if prefix not in _COUNT or unit:
            raise InputError(f"{text!r}: use a plain number or a suffix K, M, B (billion) or T", param)
        return value * _COUNT[prefix]
    if prefix == "B" and not unit:  # '80B' for bytes means 80 bytes
        prefix, unit = "", "B"
    if not re.fullmatch(_UNITS[kind], unit, flags=re.IGNORECASE):
        raise InputError(f"{text!r}: unit {unit!r} does not fit here", param)
    scale = _BIN.get(prefix) or _SI.get(prefix)
    if scale is None or (prefix in _BIN and kind not in ("bytes", "bandwidth")):
        raise InputError(f"{text!r}: unknown prefix {prefix!r}", param)
    return value * scale


class Quantity(click.ParamType):
    name = "number"

    def __init__(self, kind: str = "plain", integer: bool = False, zero: bool = False):
        self.kind, self.integer, self.zero = kind, integer, zero

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float, Fraction)):
            return value
        flag = param.opts[0] if param is not None else "value"
        q = parse_quantity(str(value), self.kind, flag)
        if q < 0 or (q == 0 and not self.zero):
            raise InputError(f"must be {'>= 0' if self.zero else 'positive'} (got {value})", flag)
        if self.integer:
            if q.denominator != 1:
                raise InputError(f"must be a whole number (got {value})", flag)
            return int(q)
        return int(q) if q.denominator == 1 else float(q)


FLOPS, BYTES, BANDWIDTH = Quantity("flops"), Quantity("bytes"), Quantity("bandwidth")
COUNT, INT = Quantity("count", integer=True), Quantity("plain", integer=True)
POSITIVE = Quantity("plain")
KV_BYTES = Quantity("bytes", zero=True)  # issue 20: 0 = no KV cache (a model without one, or left out)

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
        click.option("--chips", type=INT, default=None, help="Number of chips (default 1)."),
        click.option("--mfu", type=POSITIVE, default=None, help="Model FLOPs utilisation, 0 < MFU <= 1."),
        click.option("--dtype", default="bf16", show_default=True,
                     help="Activation / compute / KV-cache dtype (its peak is used)."),
        click.option("--weight-dtype", default=None, help="Weight dtype (default: --dtype); int4 = 1/2 byte."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def output_options(f):
    f = click.option("--explain", is_flag=True, help="Print the worked solution.")(f)
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")(f)


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


def _with_model(r, spec, cfg, unused: dict[str, str]) -> None:
    """Name the model's route and the fields this command had no use for in ``r.convention``."""
    from drills.cli.model_flags import ignored_fields

    if cfg is None:
        return
    r.convention.update(spec.convention())
    ignored = ignored_fields(cfg, spec, unused)
    if ignored:
        r.convention["ignored"] = ignored


# ---------------------------------------------------------------------------------------
# Printing
# ---------------------------------------------------------------------------------------


def human_value(key: str, value: Any) -> str:
    """A breakdown value for display, by its key's suffix: bytes (``*_bytes``), seconds (``*_s``), else a number."""
    from solver.result import as_number, fmt
    from solver.units import format_bytes

    value = as_number(value)
    if isinstance(value, (dict, list, str)) or value is None or isinstance(value, bool):
        return str(value)
    if key == "bytes" or key.endswith("_bytes") or key == "hbm":
        return format_bytes(value) if value >= 0 else "−" + format_bytes(-value)
    if key.endswith("_s") or key == "s":
        v = float(value)
        for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
            if abs(v) >= scale or unit == "ns":
                return f"{fmt(value)} s ({v / scale:.4g} {unit})" if unit != "s" else f"{v:.6g} s"
    return fmt(value)


def show(result, as_json: bool, explain: bool) -> None:
    """Print a ``solver.result.Result``: JSON, the worked solution, or the answer and breakdown."""
    from solver.result import fmt

    if as_json:
        d = result.to_json()
        emit_json({k: d[k] for k in ("answer", "unit", "convention", "breakdown")})
        return
    unit = result.unit
    emit(f"answer: {human_value(unit, result.answer)}" + ("" if unit in ("s", "bytes") else f" {unit}"))
    if result.convention.get("ignored"):
        from drills.cli.model_flags import ignored_text

        emit(ignored_text(result.convention["ignored"]))
    if explain:
        emit("")
        emit("worked solution:")
        for s in result.steps:
            emit(f"  {s.formula}")
            emit(f"      = {s.substitution}")
            emit(f"      = {fmt(s.value)}{(' ' + s.unit) if s.unit else ''}")
    emit("")
    emit("breakdown:")
    width = max((len(k) for k in result.breakdown), default=0)
    for k, v in result.breakdown.items():
        emit(f"  {k.ljust(width)}  {human_value(k, v)}")
    if explain:
        emit("")
        emit("conventions:")
        for k, v in result.convention.items():
            if isinstance(v, dict):
                v = "; ".join(f"{a}: {b}" for a, b in v.items()) or "(none)"
            elif isinstance(v, list):
                v = "; ".join(str(x) for x in v)
            emit(f"  {k}: {v}")


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


@click.command()
@click.option("--batch", "-B", type=COUNT, required=True, help="Rows of X (tokens in the batch).")
@click.option("--d-in", "-D", type=COUNT, required=True, help="Columns of X = rows of W.")
@click.option("--d-out", "-F", type=COUNT, required=True, help="Columns of W.")
@click.option("--mode", type=click.Choice(["forward", "train"]), default="forward", show_default=True)
@hardware_options
@output_options
@_solver_call
def matmul(batch, d_in, d_out, mode, as_json, explain, **kw):
    """FLOPs, bytes, intensity, critical intensity, bound and roofline time of X[B,D] @ W[D,F]."""
    from solver.systems.roofline import matmul as solve

    r = solve(batch, d_in, d_out, mode=mode, dtype=kw["dtype"], weight_dtype=kw["weight_dtype"], chip=_chip(kw))
    show(r, as_json, explain)


@click.command()
@hardware_options
@output_options
@_solver_call
def roofline(as_json, explain, **kw):
    """Critical arithmetic intensity (peak / bandwidth) and the batch that reaches it."""
    from solver.systems.roofline import roofline as solve

    r = solve(_chip(kw), weight_dtype=kw["weight_dtype"] or kw["dtype"])
    show(r, as_json, explain)


@click.command("attention-flops")
@click.option("--batch", "-B", type=COUNT, required=True)
@click.option("--seq", "-T", type=COUNT, required=True,
              help="Prefill: query tokens (and keys unless --kv-seq). Decode: the context length.")
@click.option("--kv-seq", "-S", type=COUNT, default=None, help="Key/value length (default --seq).")
@click.option("--n-heads", type=INT, required=True)
@click.option("--d-head", type=INT, required=True)
@click.option("--n-kv-heads", type=INT, default=None, help="KV heads (default n_heads; 1 = MQA).")
@click.option("--mode", type=click.Choice(["prefill", "decode"]), default="prefill", show_default=True)
@click.option("--d-model", type=INT, default=None, help="For the crossover lengths (default n_heads·d_head).")
@click.option("--d-ff", type=INT, default=None, help="For the crossover with all matmuls (default 4·d_model).")
@click.option("--ffn", type=click.Choice(["relu", "gelu", "swiglu"]), default="gelu", show_default=True)
@hardware_options
@output_options
@_solver_call
def attention_flops(batch, seq, kv_seq, n_heads, d_head, n_kv_heads, mode, d_model, d_ff, ffn, as_json,
                    explain, **kw):
    """Attention FLOPs and intensity (one layer), and where attention overtakes the matmuls."""
    from solver.systems.roofline import attention

    r = attention(batch, seq, n_heads, d_head, kv_seq=kv_seq, n_kv_heads=n_kv_heads, mode=mode,
                  dtype=kw["dtype"], d_model=d_model, d_ff=d_ff, ffn=ffn, chip=_chip(kw))
    show(r, as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--tokens", "-T", type=COUNT, required=True, help="Prompt tokens to prefill.")
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
    _with_model(r, spec, cfg, {"sliding_window": SPAN_FULL, "global_every": SPAN_FULL,
                               "lora_rank": "the prefill FLOPs are the base model's"})
    show(r, as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--batch", "-B", type=COUNT, required=True, help="Sequences decoded together.")
@click.option("--context", "-S", type=COUNT, required=True, help="Cached tokens per sequence.")
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
@output_options
@_solver_call
def decode(params, batch, context, kv_bytes_per_token, decode_model, experts, as_json, explain, **kw):
    """Lower bound of one decode step, in either named model (--model), over all chips.

    With a mixture of experts (--preset mixtral-8x7b) only the experts the batch touches are
    read; a sliding window caps each windowed layer's cache at W positions; latent attention
    caches d_c + d_R per token and layer."""
    from solver.systems.inference import decode_step

    (spec, cfg), attn = _model(kw, need_params=params is None, need_kv=kv_bytes_per_token is None), 0
    if cfg is not None and params is None and kv_bytes_per_token is None and \
            (cfg.is_moe or cfg.sliding_window or cfg.is_mla):  # issue 10: what the step really reads
        from solver.systems.decode_read import model_read

        dtype = kw["dtype"]
        read = model_read(cfg, int(batch), int(context), kw["weight_dtype"] or dtype, dtype, experts)
        B, L = int(batch), cfg.decoder_layers or cfg.n_layers
        per_key = 2 * cfg.n_heads * (cfg.qk_head_dim + cfg.value_head_dim)  # QKᵀ and AV, 2 per multiply-add
        attn = B * per_key * sum(cfg.attended(int(context), i) for i in range(L))
        r = decode_step(read.flop_params, batch, context, 0, _chip(kw), chips=kw["chips"] or 1,
                        weight_dtype=kw["weight_dtype"] or dtype, attention_flops=attn, read=read,
                        model=decode_model)
        _with_model(r, spec, cfg, {"lora_rank": "the step reads the base model's weights"})
        show(r, as_json, explain)
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
            sum(cfg.attended(int(context), i) for i in range(L))
    if params is None:
        raise InputError("give --params or --preset", "--params")
    if kv_bytes_per_token is None:
        raise InputError("give --kv-bytes-per-token (2·layers·kv_heads·d_head·bytes) or --preset",
                         "--kv-bytes-per-token")
    r = decode_step(params, batch, context, kv_bytes_per_token, _chip(kw), chips=kw["chips"] or 1,
                    weight_dtype=kw["weight_dtype"] or kw["dtype"], attention_flops=attn, model=decode_model)
    _with_model(r, spec, cfg, unused)
    show(r, as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--tokens", "-D", type=COUNT, default=None, help="Training tokens (1.4e12, 1.4T).")
@click.option("--compute", "-C", type=POSITIVE, default=None, help="Compute budget in FLOPs (3.14e23).")
@click.option("--gpu-hours", type=POSITIVE, default=None, help="GPU-hours spent (gives the MFU).")
@click.option("--seq", type=COUNT, default=None, help="With --preset: sequence length of the exact count.")
@model_options
@hardware_options
@output_options
@_solver_call
def train(params, tokens, compute, gpu_hours, seq, as_json, explain, **kw):
    """C = 6·N·D, PF-days, days at an MFU on some chips, tokens from a budget, MFU from GPU-hours."""
    from solver.systems.training import train as solve

    (spec, cfg), exact = _model(kw, need_params=True, need_kv=False), None
    if cfg is not None:
        from fractions import Fraction as Fr

        from solver.counting import matmul_flops, param_count

        params = params or param_count(cfg)
        n = int(seq or cfg.max_positions)
        exact = Fr(matmul_flops(cfg, 1, n, "train").flops, n)
    if params is None:
        raise InputError("give --params or --preset", "--params")
    r = solve(params, tokens=tokens, compute=compute, chip=_chip(kw), chips=kw["chips"], mfu=kw["mfu"],
              gpu_hours=gpu_hours, exact_flops_per_token=exact)
    _with_model(r, spec, cfg, {"sliding_window": SPAN_FULL, "global_every": SPAN_FULL})
    show(r, as_json, explain)


def hbm_options(f):
    """--hw and --hbm only: the memory commands need the HBM size, nothing else of the chip."""
    f = click.option("--hbm", type=BYTES, help="HBM bytes per GPU (80e9, 80GB, 80GiB); reports what is left.")(f)
    return click.option("--hw", "hw", metavar="NAME", help="Hardware preset (qkv hw list) for the HBM size.")(f)


def _hbm(hw: str | None, hbm) -> tuple[Any, str | None]:
    """(HBM bytes per GPU, where it came from), or (None, None) when neither flag is given."""
    if hw is None and hbm is None:
        return None, None
    chip = _chip({"hw": hw, "hbm": hbm})
    origin = chip.origin.get("hbm")
    if "hbm_figure" in chip.origin:
        origin += f", {chip.origin['hbm_figure']} figure"
    return chip.need("hbm"), origin


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters Ψ (7.5e9, 7.5B); or a model (--preset).")
@click.option("--gpus", type=INT, required=True, help="Data-parallel GPUs N_d.")
@click.option("--stage", type=click.IntRange(0, 3), required=True, help="0 (plain DP), 1, 2 or 3.")
@click.option("--optimizer-bytes", "-K", type=INT, default=12, show_default=True,
              help="Optimizer-state bytes per parameter (Adam, mixed precision: 12).")
@model_options
@hbm_options
@output_options
@_solver_call
def zero(params, gpus, stage, optimizer_bytes, hw, hbm, as_json, explain, **kw):
    """Model-state bytes per GPU with mixed-precision Adam under ZeRO stage 0-3 (and what HBM leaves).

    Ψ is --params, or the exact parameter count of a model (--preset, --config or the field flags;
    LoRA adapters included, every parameter trained)."""
    from solver.systems.training import zero as solve

    spec, cfg = _model(kw, need_params=params is None, need_kv=False)
    if cfg is not None and params is None:
        from solver.counting import param_breakdown

        params = param_breakdown(cfg).total_with_lora
    if params is None:
        raise InputError("give --params or --preset", "--params")
    size, origin = _hbm(hw, hbm)
    r = solve(params, gpus, stage, optimizer_bytes=optimizer_bytes, hbm=size, hbm_origin=origin)
    _with_model(r, spec, cfg, {**{k: "ZeRO's model states hold every parameter" for k in ("top_k",)},
                               **{k: NO_KV for k in KV_ONLY}})
    show(r, as_json, explain)


@click.command()
@click.option("--seq", "-s", type=COUNT, required=True)
@click.option("--batch", "-b", type=COUNT, required=True)
@click.option("--d-model", type=INT, required=True, help="Hidden size h.")
@click.option("--n-heads", "-a", type=INT, required=True)
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="none", show_default=True)
@click.option("--n-layers", "-L", type=INT, default=1, show_default=True, help="Layers (1 = per layer).")
@click.option("--tp", "-t", type=INT, default=1, show_default=True, help="Tensor-parallel GPUs (per-GPU bytes).")
@click.option("--sequence-parallel", is_flag=True, help="With --tp: sequence parallelism splits the rest.")
@hbm_options
@output_options
@_solver_call
def activations(seq, batch, d_model, n_heads, recompute, n_layers, tp, sequence_parallel, hw, hbm, as_json, explain):
    """Activation bytes per layer: s·b·h·(34 + 5·a·s/h) (Korthikanti et al.), with recomputation and --tp."""
    from solver.systems.training import activations as solve

    if tp > 1 or sequence_parallel:
        from solver.systems.parallelism import activations_parallel

        if hw is not None or hbm is not None:
            raise InputError("with --tp the HBM headroom is not computed; drop --hw/--hbm", "--hbm")
        show(activations_parallel(seq, batch, d_model, n_heads, tp=tp, sequence_parallel=sequence_parallel,
                                  recompute=recompute, n_layers=n_layers), as_json, explain)
        return
    size, origin = _hbm(hw, hbm)
    show(solve(seq, batch, d_model, n_heads, recompute=recompute, n_layers=n_layers, hbm=size, hbm_origin=origin),
         as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--batch", "-B", type=COUNT, default=None, help="With --context: add the KV cache.")
@click.option("--context", "-S", type=COUNT, default=None, help="Cached tokens per sequence.")
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None, help="KV-cache bytes per token (0: no cache).")
@click.option("--hbm-figure", type=click.Choice(["datasheet", "device"]), default="datasheet", show_default=True,
              help="Preset HBM: the datasheet figure, or what nvidia-smi reports.")
@model_options
@hardware_options
@output_options
@_solver_call
def chips(params, batch, context, kv_bytes_per_token, hbm_figure, as_json, explain, **kw):
    """Fewest chips whose HBM holds the weights (and the KV cache): ⌈(N·w + KV) / HBM⌉."""
    from solver.systems.inference import min_chips

    wants_kv = batch is not None and kv_bytes_per_token is None
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
    r = min_chips(params, kw["weight_dtype"] or kw["dtype"], hbm, kv_bytes=kv)
    r.convention["hbm"] = f"{int(hbm):,} bytes per chip ({chip.origin.get('hbm', 'given')}" + \
        (f", {chip.origin['hbm_figure']} figure" if "hbm_figure" in chip.origin else "") + ")"
    _with_model(r, spec, cfg, unused)
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
