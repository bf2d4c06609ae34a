"""``qkv solve collective|allreduce|tp|tp-matmul|pipeline|dp-comm|serve|generate|speculative|compute-optimal``.

The same shape as the hardware commands (:mod:`drills.cli.solve_hardware`): every figure a flag,
``answer``/``unit``/``convention``/``breakdown`` printed (``--json`` as one object), the worked
solution with ``--explain``. Link bandwidth is per direction: ``--link NAME`` takes a preset
(``nvlink4``, ``pcie5``, ``ib-ndr``, ... see solver.systems.interconnect), ``--link-bandwidth`` a figure,
and ``--hw NAME`` alone the chip preset's link (the same per-direction figure as its ``--link``). The
formulas live in ``solver.systems.collectives``, ``solver.systems.parallelism`` and ``solver.systems.serving``.
"""

from __future__ import annotations

from typing import Any

import click

from drills.cli.help_groups import mark, solve_command
from drills.cli.model_flags import model_options, name_model, preset_options, preset_spec
from drills.cli.numbers import Number
from drills.cli.plot_flag import check_plot, draw, plot_option
from drills.cli.solve_hardware import (
    BANDWIDTH,
    BYTES,
    COUNT,
    FLOPS,
    INT,
    KV_BYTES,
    SIZE,
    Int,
    Real,
    _chip,
    _kv_per_token,
    _model,
    _name_unused_figures,
    _params_or_preset,
    _solver_call,
    hardware_options,
    hbm_chip,
    output_options,
    show,
)
from drills.output import InputError, emit

#: tokens per second: a count, read as counts are (K = 10^3, M = 10^6, B = 10^9), not as bytes
RATE = Number("count")
#: α of the α-β model: seconds, or a time with its unit (5us)
LATENCY = Number("seconds", min=0, min_open=False, max=10**6)


def link_options(f):
    """--link NAME (interconnect preset), --link-bandwidth (bytes/s per direction), --latency (s per step), --hw."""
    f = click.option("--latency", "--alpha", "latency", type=LATENCY, default=0, show_default=True,
                     help="α: seconds per step (0 to 10^6; 5e-6, 5us, 1.5ms).")(f)
    f = click.option("--link-bandwidth", type=BANDWIDTH, default=None, help="β: link bytes/s per direction.")(f)
    f = click.option("--link", "link", metavar="NAME", default=None,
                     help="Interconnect preset (nvlink3, nvlink4, nvlink5, pcie4, pcie5, ib-hdr, ib-ndr, xgmi-mi300x, "
                          "ici-v4, ici-v5e, ici-v5p, ici-v6e; qkv hw links).")(f)
    f = click.option("--hw", "hw", metavar="NAME", default=None,
                     help="Chip preset: its link per direction (the same figure as its --link preset).")(f)
    return mark(f, 4, "Link")


def _link(kw: dict[str, Any], required: bool = True) -> tuple[float | None, str | None]:
    """(β per direction, where it came from): --link-bandwidth, else --link, else --hw's link."""
    given, name, hw = kw.get("link_bandwidth"), kw.get("link"), kw.get("hw")
    if given is not None and name is not None:
        raise InputError("give --link or --link-bandwidth, not both", "--link-bandwidth")
    if given is not None:
        return float(given), "given (per direction)"
    if name is not None:
        from solver.systems.interconnect import get_link

        link = get_link(name)
        return link.per_direction, (f"{link.name}: {link.per_direction / 1e9:g} GB/s per direction (printed: "
                                    f"{link.printed}; {link.scope}) ({link.source})")
    if hw is not None:
        from solver.systems.chips import get_hardware

        h = get_hardware(hw)
        return h.link_bandwidth, (f"{h.name} {h.link_name}: {h.link_bandwidth / 1e9:g} GB/s per direction "
                                  f"(= --link {h.link}; printed: {h.link_printed})")
    if required:
        raise InputError("needed here: give --link NAME, --link-bandwidth (per direction) or --hw NAME",
                         "--link-bandwidth")
    return None, None


def _convention_help(formula: str, name: str) -> str:
    """A convention's help, read from the formula registry: its meaning and the text of each choice."""
    from solver.registry import get_formula

    c = get_formula(formula).convention(name)
    parts = [f"{k}: {v.meaning}" + (f" [{v.source}]" if v.source else "") for k, v in c.choices.items()]
    return f"{c.help} " + "; ".join(parts) + "."


class _Shape(click.ParamType):
    name = "AxB"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            dims = tuple(int(x) for x in str(value).lower().replace("×", "x").split("x"))
        except ValueError:
            self.fail(f"a shape such as 4x4 or 4x4x4 (got {value!r})", param, ctx)
        if not 1 <= len(dims) <= 4 or any(not 1 <= d <= 4096 for d in dims):
            self.fail(f"1 to 4 sides, each 1 to 4096 (got {value!r})", param, ctx)
        return dims


def ring_options(f):
    """--ring unidirectional|bidirectional and --asymptotic, their help read from the registry."""
    f = click.option("--asymptotic", is_flag=True, help=_convention_help("all_gather", "factor"))(f)
    f = click.option("--ring", type=click.Choice(["unidirectional", "bidirectional"]), default="unidirectional",
                     show_default=True, help=_convention_help("all_gather", "ring"))(f)
    return f


def _with_link(r, origin: str | None) -> None:
    if origin:
        r.convention["link"] = origin


# ---------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------


def _collective(op, size, ranks, algorithm, as_json, explain, kw, plot=None):
    from solver.systems.collectives import collective as solve

    check_plot(plot, as_json)
    beta, origin = _link(kw, required=plot is not None)
    r = solve(op, size, ranks, beta, latency=kw["latency"], algorithm=algorithm, ring=kw.get("ring", "unidirectional"),
              asymptotic=kw.get("asymptotic", False), topology=kw.get("topology", "switch"), torus=kw.get("torus"))
    _with_link(r, origin)
    show(r, as_json, explain)
    if plot is not None:
        _collective_plot(r, beta, kw["latency"], plot, as_json)


def _collective_plot(r, beta: float, latency: float, plot: str, as_json: bool) -> None:
    """Ring (and, for all-reduce, tree) time over sizes from S/10⁶ to 10³·S, the asked size marked."""
    from drills.plots import collective as picture
    from solver.systems.collectives import collective as solve

    op, n, S = r.breakdown["op"], r.breakdown["ranks"], float(r.breakdown["size_bytes"])
    algorithms = ("ring", "tree") if op == "all-reduce" else ("ring",)
    sizes = [S * 10 ** (k / 4) for k in range(-24, 13)]
    series = {a: [solve(op, s, n, beta, latency=latency, algorithm=a) for s in sizes] for a in algorithms}
    marked = {a: (r if a == r.breakdown["algorithm"] else solve(op, S, n, beta, latency=latency, algorithm=a))
              for a in algorithms}
    d = picture.data(op, n, S, series, marked)
    if not as_json:
        emit("")
        for a in algorithms:
            x = d["crossover"][a]
            emit(f"{a}: at {S:.6g} bytes {d['marked'][a]['time']:.6g} s; latency term = bandwidth term at "
                 + (f"{x:.6g} bytes" if x else "no size (α = 0: give --latency)"))
    draw("collective", d, plot)


@solve_command()
@click.option("--op", type=click.Choice(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]),
              default="all-reduce", show_default=True)
@click.option("--size", "-S", type=BYTES, required=True,
              help="S as nccl-tests reports it (all-gather: the gathered output; reduce-scatter: the input).")
@click.option("--ranks", "-n", "--gpus", "ranks", type=INT, required=True, help="Ranks (GPUs) n.")
@click.option("--algorithm", type=click.Choice(["ring", "tree"]), default="ring", show_default=True)
@ring_options
@click.option("--topology", type=click.Choice(["switch", "ring", "torus"]), default="switch", show_default=True,
              help=_convention_help("all_to_all", "topology"))
@click.option("--torus", type=_Shape(), default=None, metavar="AxB[xC]",
              help="The torus shape of --topology torus (4x4, 4x4x4): its sides multiply to the ranks.")
@link_options
@plot_option
@output_options
@_solver_call
def collective(op, size, ranks, algorithm, plot, as_json, explain, **kw):
    """Time, algbw and busbw of a collective in the α-β model (ring, pairwise all-to-all, binomial tree).

    With --plot: time against message size for ring and tree (all-reduce), the latency- and
    bandwidth-bound regions shaded, the asked size marked."""
    _collective(op, size, ranks, algorithm, as_json, explain, kw, plot)


@solve_command()
@click.option("--size", "-S", type=BYTES, required=True, help="Buffer on each rank (1GB, 1e9).")
@click.option("--ranks", "-n", "--gpus", "ranks", type=INT, required=True, help="Ranks (GPUs) n.")
@click.option("--algorithm", type=click.Choice(["ring", "tree"]), default="ring", show_default=True)
@ring_options
@link_options
@output_options
@_solver_call
def allreduce(size, ranks, algorithm, as_json, explain, **kw):
    """All-reduce time, algbw and busbw (= qkv solve collective --op all-reduce)."""
    _collective("all-reduce", size, ranks, algorithm, as_json, explain, kw)


# ---------------------------------------------------------------------------------------
# Tensor, pipeline and data parallelism
# ---------------------------------------------------------------------------------------


@solve_command()
@click.option("--batch", "-b", type=COUNT, required=True, help="Micro-batch size b.")
@click.option("--seq", "-s", "--seq-len", "seq", type=SIZE, required=True, help="Sequence length s (8k = 8192).")
@click.option("--d-model", "--hidden", "--hidden-size", "d_model", type=SIZE, default=None,
              help="Hidden size h (or --preset).")
@click.option("--tp", "-t", type=INT, required=True, help="Tensor-parallel GPUs.")
@click.option("--sequence-parallel", is_flag=True, help="All-gather + reduce-scatter in place of all-reduce.")
@click.option("--mode", type=click.Choice(["train", "forward"]), default="train", show_default=True)
@click.option("--n-layers", "-L", "--layers", "n_layers", type=INT, default=1, show_default=True,
              help="Layers (1 = per layer).")
@click.option("--dtype", default="bf16", show_default=True)
@preset_options
@link_options
@output_options
@_solver_call
def tp(batch, seq, d_model, tp, sequence_parallel, mode, n_layers, dtype, as_json, explain, **kw):
    """Bytes a Megatron tensor-parallel layer all-reduces per step (and their time with a link).

    With --preset or --config, h comes from the model (still per layer unless -L is given)."""
    from solver.systems.parallelism import tensor_parallel

    spec, cfg = preset_spec(kw)
    d_model = d_model or (cfg.d_model if cfg is not None else None)
    if d_model is None:
        raise InputError("needs --d-model (the hidden size h), or --preset NAME, or --config FILE", "--d-model")

    beta, origin = _link(kw, required=False)
    r = tensor_parallel(batch, seq, d_model, tp, dtype=dtype, sequence_parallel=sequence_parallel, mode=mode,
                        n_layers=n_layers, link_bandwidth=beta, latency=kw["latency"])
    name_model(r, spec, cfg, uses=("d_model",),
               why="a Megatron layer all-reduces its b·s·h activations, whatever its attention or FFN")
    _with_link(r, origin)
    show(r, as_json, explain)


@solve_command("tp-matmul")
@click.option("--batch", "-B", "-M", "batch", type=SIZE, required=True,
              help="Rows of X (-M in GEMM notation; 4k = 4096, as the matmul's other sizes).")
@click.option("--d-in", "-D", "-K", "d_in", type=SIZE, required=True,
              help="Contracted size (-K in GEMM notation; a layer size: 4k = 4096).")
@click.option("--d-out", "-F", "-N", "d_out", type=SIZE, required=True,
              help="Columns of W (-N in GEMM notation; a layer size: 4k = 4096).")
@click.option("--tp", "-t", type=INT, required=True, help="Tensor-parallel GPUs.")
@click.option("--link", "link", metavar="NAME", default=None, help="Interconnect preset (per direction).")
@hardware_options
@output_options
@_solver_call
def tp_matmul(batch, d_in, d_out, tp, link, as_json, explain, **kw):
    """Communication roofline of a row-parallel matmul: when the all-reduce hides behind the compute."""
    from solver.systems.parallelism import sharded_matmul

    chip = _chip(kw, uses_link=True)
    beta, origin = _link(kw | {"link": link})
    r = sharded_matmul(batch, d_in, d_out, tp, peak_flops=chip.need("peak_flops"), link_bandwidth=beta,
                       dtype=kw["dtype"])
    _with_link(r, origin)
    r.convention["hardware"] = chip.origin
    show(r, as_json, explain)


@solve_command()
@click.option("--stages", "-p", "--pp", "stages", type=INT, required=True, help="Pipeline stages p.")
@click.option("--microbatches", "-m", "--num-microbatches", "microbatches", type=INT, required=True,
              help="Micro-batches m per step.")
@click.option("--schedule", type=click.Choice(["gpipe", "1f1b", "interleaved"]), default="1f1b", show_default=True)
@click.option("--chunks", "-v", "--virtual-stages", "chunks", type=INT, default=1, show_default=True,
              help="Model chunks per stage v (interleaved).")
@plot_option
@output_options
@_solver_call
def pipeline(stages, microbatches, schedule, chunks, plot, as_json, explain):
    """Pipeline bubble: (p − 1)/(m + p − 1) of the step, and (p − 1)/m of the ideal time.

    With --plot the schedule is drawn as a timeline of stages × time, forward and backward
    blocks, the bubble left blank."""
    from solver.systems.parallelism import pipeline_bubble

    check_plot(plot, as_json)
    r = pipeline_bubble(stages, microbatches, schedule=schedule, chunks=chunks)
    show(r, as_json, explain, answer_label="bubble fraction: the share of the step a stage idles")
    if plot is not None:
        from drills.plots import pipeline as picture
        from solver.systems.pipeline_schedule import pipeline_timeline

        draw("pipeline", picture.data(pipeline_timeline(stages, microbatches, schedule=schedule, chunks=chunks), r),
             plot)


@solve_command("dp-comm")
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters Ψ (or --preset).")
@click.option("--gpus", "--dp", "gpus", type=INT, required=True, help="Data-parallel GPUs.")
@click.option("--stage", type=Int(0, 3), default=0, show_default=True, help="ZeRO stage (0 = plain DP).")
@click.option("--grad-dtype", default="bf16", show_default=True)
@preset_options
@link_options
@output_options
@_solver_call
def dp_comm(params, gpus, stage, grad_dtype, as_json, explain, **kw):
    """Data-parallel / ZeRO communication per step: 2Ψ (stages 0-2) or 3Ψ (stage 3), and its time."""
    from solver.systems.parallelism import data_parallel

    params, spec, cfg = _params_or_preset(params, kw)

    if kw["latency"]:
        raise InputError("not modelled here (bandwidth term only)", "--latency")
    beta, origin = _link(kw, required=False)
    r = data_parallel(params, gpus, stage=stage, grad_dtype=grad_dtype, link_bandwidth=beta)
    name_model(r, spec, cfg, {"top_k": "every expert's gradients are reduced (all N parameters)",
                              "sliding_window": "no attention in this count", "global_every": "no attention in this count"})
    _with_link(r, origin)
    show(r, as_json, explain)


# ---------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------


from drills.cli.solve_hf_meta import layout_of, name_weights, quantized_for, weight_bytes_of  # noqa: E402


def _serving_inputs(params, kv_bytes_per_token, kw, context: int, longest: int | None = None):
    """``(params, X, spec, cfg, unused)`` of the one ModelConfig of any route (or the figures given):
    X is the model's real cache per position at ``context`` positions (a window, latent attention
    honoured). ``longest``: the longest context the command reaches (generate), which must stay within
    a sliding window for one X to hold for every step."""
    from drills.cli.solve_hardware import KV_ONLY

    spec, cfg = _model(kw, need_params=params is None, need_kv=kv_bytes_per_token is None)
    unused: dict[str, str] = {"lora_rank": "the weights are the base model's"}
    if cfg is not None:
        from solver.counting import param_count

        params = params or param_count(cfg)
        if kv_bytes_per_token is None:
            if longest is not None and cfg.sliding_window and cfg.local_layers_of(cfg.decoder_layers) \
                    and longest > cfg.sliding_window:
                raise InputError(f"a sliding window (W = {cfg.sliding_window}) caps the cache below the "
                                 f"{longest} positions this generation reaches; one X per token does not hold: "
                                 f"give --kv-bytes-per-token", "--sliding-window")
            kv_bytes_per_token = _kv_per_token(cfg, kw["dtype"], context)
        else:
            unused.update({k: "--kv-bytes-per-token given" for k in KV_ONLY})
    if params is None:
        raise InputError("give --params or --preset", "--params")
    if kv_bytes_per_token is None:
        raise InputError("give --kv-bytes-per-token (2·layers·kv_heads·d_head·bytes) or --preset",
                         "--kv-bytes-per-token")
    return params, kv_bytes_per_token, spec, cfg, unused


def _reads(cfg, kw, params, kv_given, context: int, experts: str, quant=None):
    """``B ↦ ModelRead`` when the model's step reads less than N·w and does fewer than 2·N FLOPs per token
    (a mixture of experts: the experts a batch touches, 2·N_active), as ``qkv solve decode`` prices it;
    None otherwise (or when --params / --kv-bytes-per-token replace the model's own figures)."""
    if cfg is None or params is not None or kv_given or not cfg.is_moe:
        return None
    from solver.systems.decode_read import model_read

    dtype = kw["dtype"]
    return lambda B: model_read(cfg, int(B), int(context), kw["weight_dtype"] or dtype, dtype, experts, quant)


_EXPERTS = click.option("--experts", type=click.Choice(["expected", "worst", "all"]), default="expected",
                        show_default=True, help="MoE: experts a step reads per layer (as qkv solve decode).")


_DECODE_MODEL = click.option("--model", "decode_model", type=click.Choice(["total", "kv-plus-max"]), default="total",
                             show_default=True, help="Decode-step model: total, or kv-plus-max (the scaling book).")
_HBM_FIGURE = click.option("--hbm-figure", type=click.Choice(["datasheet", "device"]), default="datasheet",
                           show_default=True, help="Preset HBM: the datasheet figure (as qkv solve chips), or "
                                                   "what the device reports (nvidia-smi, rocm-smi).")


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--context", "-S", "--seq", "context", type=SIZE, required=True,
              help="Tokens cached per sequence (8k = 8192).")
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None, help="KV-cache bytes per token (0: no cache).")
@click.option("--batch", "-B", type=COUNT, default=None, help="Default: the largest batch that fits.")
@click.option("--price-per-chip-hour", type=Real(0, min_open=True), default=None,
              help="Dollars per chip-hour (cost per 10⁶ tokens).")
@_DECODE_MODEL
@_HBM_FIGURE
@_EXPERTS
@model_options
@hardware_options
@plot_option
@output_options
@_solver_call
def serve(params, context, kv_bytes_per_token, batch, price_per_chip_hour, decode_model, hbm_figure, experts,
          plot, as_json, explain, **kw):
    """Largest batch that fits, tokens/s and per-token latency at it, compute-bound batch, cost.

    With a mixture of experts (--preset mixtral-8x7b) a step reads only the experts the batch touches
    and does 2·N_active FLOPs per token, as qkv solve decode prices it; the batch that fits holds
    every expert. With --plot: where the bytes go (weights, KV cache) against the chips' HBM."""
    from solver.systems.serving import serve as solve

    check_plot(plot, as_json)
    given_params = params
    params, kv, spec, cfg, unused = _serving_inputs(params, kv_bytes_per_token, kw, int(context))
    chip = hbm_chip(kw, hbm_figure)
    n = kw["chips"] or 1
    quant = quantized_for(spec, cfg, kw["weight_dtype"], given_params)
    read_at = _reads(cfg, kw, given_params, kv_bytes_per_token is not None, int(context), experts, layout_of(quant))
    r = solve(params, context, kv, chip, chips=n,
              weight_dtype=kw["weight_dtype"] or kw["dtype"], batch=batch, model=decode_model,
              price_per_chip_hour=price_per_chip_hour, read_at=read_at,
              weights=weight_bytes_of(quant))
    name_weights(r, quant)
    if cfg is not None and cfg.is_moe and given_params is not None:
        unused["top_k"] = "--params given: every weight read, 2·N FLOPs per token"
    name_model(r, spec, cfg, unused)
    show(r, as_json, explain)
    if plot is not None:
        from drills.plots import memory as picture

        b = r.breakdown
        hbm = n * chip.need("hbm")
        d = picture.data(f"Serving: weights and KV cache of batch {b['batch']} × {context} tokens on {n} chip"
                         f"{'s' if n > 1 else ''}", [(f"batch {b['batch']}", [("weights", b["weight_bytes"]),
                                                                              ("KV cache", b["kv_bytes"])])],
                         hbm, f"HBM ({n} × {chip.origin.get('hbm', 'given')})" if n > 1 else "HBM")
        draw("memory", d, plot)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--prompt", "-P", "--prompt-tokens", "prompt", type=SIZE, required=True,
              help="Prompt tokens per sequence (8k = 8192).")
@click.option("--new-tokens", "-n", "--max-new-tokens", "--output-tokens", "new_tokens", type=SIZE, required=True,
              help="Tokens generated per sequence.")
@click.option("--batch", "-B", type=COUNT, default=1, show_default=True)
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None, help="KV-cache bytes per token (0: no cache).")
@_DECODE_MODEL
@_EXPERTS
@model_options
@hardware_options
@output_options
@_solver_call
def generate(params, prompt, new_tokens, batch, kv_bytes_per_token, decode_model, experts, as_json, explain, **kw):
    """End-to-end time of a prompt and n new tokens: prefill, then decode steps as the cache grows.

    With a mixture of experts each step reads the experts the batch touches and does 2·N_active FLOPs
    per token (as qkv solve decode)."""
    from solver.systems.serving import generation

    given_params = params
    params, kv, spec, cfg, unused = _serving_inputs(params, kv_bytes_per_token, kw, int(prompt),
                                                    longest=int(prompt) + int(new_tokens) - 1)
    quant = quantized_for(spec, cfg, kw["weight_dtype"], given_params)  # issue 37: the file's quantization_config
    layout = layout_of(quant)
    reads = _reads(cfg, kw, given_params, kv_bytes_per_token is not None, int(prompt), experts, layout)
    if layout is not None and reads is None:
        from solver.systems.decode_read import model_read

        reads = lambda B: model_read(cfg, int(B), int(prompt), kw["dtype"], kw["dtype"], experts, layout)  # noqa: E731
    r = generation(params, prompt, new_tokens, kv, _chip(kw), batch=batch, chips=kw["chips"] or 1,
                   weight_dtype=kw["weight_dtype"] or kw["dtype"], mfu=kw["mfu"] or 1.0, model=decode_model,
                   read=reads(int(batch)) if reads else None)
    name_weights(r, quant)
    if cfg is not None and cfg.is_moe and given_params is not None:
        unused["top_k"] = "--params given: every weight read, 2·N FLOPs per token"
    name_model(r, spec, cfg, {"sliding_window": "the window holds every position this generation reaches "
                                                 "(P + n − 1 ≤ W)", **unused})
    show(r, as_json, explain)


@solve_command()
@click.option("--alpha", "-a", type=Real(0, 1), required=True, help="Acceptance probability α of a draft token.")
@click.option("--gamma", "-g", "--draft-tokens", "gamma", type=Int(0, 10**15), required=True,
              help="Draft tokens γ per step (at most 10^6).")
@click.option("--cost", "-c", type=Real(0, 10**6), default=None,
              help="c = draft step time ÷ target step time (speed-up, best γ).")
@click.option("--max-gamma", type=Int(1, 10**15), default=64, show_default=True, help="Largest γ tried for the best γ.")
@output_options
@_solver_call
def speculative(alpha, gamma, cost, max_gamma, as_json, explain):
    """Speculative decoding: expected tokens per step (1 − α^(γ+1))/(1 − α), speed-up, best γ."""
    from solver.systems.serving import speculative as solve

    show(solve(alpha, gamma, cost=cost, max_gamma=max_gamma), as_json, explain)


@solve_command("compute-optimal")
@click.option("--compute", "-C", "--flops", "--budget", "compute", type=FLOPS, default=None,
              help="FLOP budget C (1e24).")
@click.option("--method", type=click.Choice(["fitted", "besiroglu", "rule-20"]), default="fitted", show_default=True,
              help="fitted: Chinchilla's approach-3 law (Hoffmann et al. 2022); besiroglu: its refit by Besiroglu et al. "
                   "2024 (near 20 tokens per parameter); rule-20: D = 20N.")
@click.option("--params", "-N", type=COUNT, default=None, help="With --tokens: the over-training factor of a run.")
@click.option("--tokens", "-D", type=COUNT, default=None)
@plot_option
@output_options
@_solver_call
def compute_optimal(compute, method, params, tokens, plot, as_json, explain):
    """Compute-optimal N and D for a budget (fitted law or the 20:1 rule), or a run's over-training factor.

    With --plot: IsoFLOP curves of the fitted loss over N at C/10, C and 10·C, each optimum
    marked with the 20:1 rule beside it."""
    from solver.systems.serving import compute_optimal as solve
    from solver.systems.serving import overtraining

    check_plot(plot, as_json)
    if plot is not None and compute is None:
        raise InputError("the IsoFLOP curves need --compute", "--plot")

    if (params is None) != (tokens is None):
        raise InputError("the over-training factor needs both --params and --tokens", "--tokens")
    if params is not None:
        if compute is not None:
            raise InputError("give --compute, or --params with --tokens, not both", "--compute")
        show(overtraining(params, tokens, method=method), as_json, explain)
        return
    if compute is None:
        raise InputError("give --compute (or --params with --tokens)", "--compute")
    show(solve(compute, method=method), as_json, explain)
    if plot is not None:
        from drills.plots import scaling as picture
        from solver.systems.serving import FITS, chinchilla_loss

        fit = "besiroglu" if method == "besiroglu" else "fitted"  # the curves are the fitted law the answer used
        budgets = [(c, solve(c, method=fit), solve(c, method="rule-20")) for c in (compute / 10, compute, compute * 10)]
        if not as_json:
            emit("")
            emit(f"{'compute C':>12}  {'fitted N':>10} {'D':>10} {'L':>8}   {'20:1 N':>10} {'D':>10} {'L':>8}")
            for c, f, r in budgets:
                fb, rb = f.breakdown, r.breakdown
                emit(f"{c:>12.4g}  {fb['params']:>10.4g} {fb['tokens']:>10.4g} {fb['loss']:>8.4f}   "
                     f"{rb['params']:>10.4g} {rb['tokens']:>10.4g} {rb['loss']:>8.4f}")
        draw("scaling", picture.data(budgets, lambda n, d: chinchilla_loss(n, d, FITS[fit])), plot)


@solve_command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters N (or --preset).")
@click.option("--tokens-per-second", "--tokens-per-sec", "--throughput", "tokens_per_second", type=RATE,
              required=True, help="Training throughput in tokens/s, all chips together (a count: 1.2M, 0.1B).")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="none", show_default=True,
              is_flag=False, flag_value="full", help="Activation recomputation; --recompute alone means full.")
@click.option("--n-layers", "-L", "--layers", "n_layers", type=INT, default=None,
              help="With --d-model and --seq: PaLM's attention term.")
@click.option("--d-model", "--hidden", "d_model", type=SIZE, default=None, help="Hidden size (attention term).")
@click.option("--seq", "--seq-len", "seq", type=SIZE, default=None, help="Sequence length (attention term; 8k = 8192).")
@preset_options
@hardware_options
@output_options
@_solver_call
def mfu(params, tokens_per_second, recompute, n_layers, d_model, seq, as_json, explain, **kw):
    """Model FLOPs utilisation against hardware FLOPs utilisation (recomputed FLOPs count only in HFU).

    With --preset or --config: N is the model's parameter count, and with --seq the attention
    term takes the model's layers and width."""
    from solver.systems.parallelism import flops_utilisation

    spec, cfg = preset_spec(kw)
    routed = None
    if cfg is not None:
        if params is None:
            from solver.counting import param_breakdown

            # 6N counts the weights a token's forward and backward use: a mixture of experts' active ones
            pb = param_breakdown(cfg)
            params = pb.active
            if pb.active != pb.total:
                routed = (f"N = the {pb.active:,} parameters one token uses (top_k = {cfg.top_k} of "
                          f"{cfg.n_experts} routed experts), not the {pb.total:,} in all")
        if seq is not None:
            n_layers, d_model = n_layers or cfg.n_layers, d_model or cfg.d_model
    if params is None:
        raise InputError("give --params (or --preset NAME, or --config FILE)", "--params")

    attn = (n_layers, d_model, seq)
    if any(v is not None for v in attn) and not all(v is not None for v in attn):
        raise InputError("the attention term needs --n-layers, --d-model and --seq together", "--seq")
    chip = _chip(kw)
    r = flops_utilisation(params, tokens_per_second, kw["chips"] or 1, chip.need("peak_flops"), recompute=recompute,
                          n_layers=n_layers or 0, d_model=d_model or 0, seq=seq or 0)
    r.convention["hardware"] = chip.origin
    if routed:
        r.convention["params"] = routed
    name_model(r, spec, cfg, {k: "6N counts weights; the attention term (with --seq) is PaLM's, over the full "
                                 "sequence" for k in ("sliding_window", "global_every")})
    hfu = float(r.breakdown["hfu"])
    if hfu > 1:  # more FLOP/s than the chips have: a throughput, a chip count or a peak is off
        r.convention["warning"] = (f"HFU = {hfu:.6g} > 1: {tokens_per_second:g} tokens/s need more FLOP/s than "
                                   f"{kw['chips'] or 1} × {chip.need('peak_flops'):.6g} FLOP/s; check --tokens-per-second "
                                   "(all chips together), --chips and the peak")
    _name_unused_figures(r, kw, {**dict.fromkeys(("bandwidth", "hbm", "weight_dtype"), "MFU counts FLOPs against "
                                                 "the peak"), "mfu": "the MFU is the answer"})
    show(r, as_json, explain, answer_label="MFU, model FLOPs utilisation; HFU in the breakdown")
    if hfu > 1 and not as_json:
        click.echo(f"qkv: warning: {r.convention['warning']}", err=True)
