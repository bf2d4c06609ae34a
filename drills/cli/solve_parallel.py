"""``qkv solve collective|allreduce|tp|tp-matmul|pipeline|dp-comm|serve|generate|speculative|compute-optimal``.

The same shape as the hardware commands (:mod:`drills.cli.solve_hardware`): every figure a flag,
``answer``/``unit``/``convention``/``breakdown`` printed (``--json`` as one object), the worked
solution with ``--explain``. Link bandwidth is per direction: ``--link NAME`` takes a preset
(``nvlink4``, ``pcie5``, ``ib-ndr``, ... see solver.systems.interconnect), ``--link-bandwidth`` a figure,
and ``--hw NAME`` alone the chip preset's printed (bidirectional) link figure halved. The
formulas live in ``solver.systems.collectives``, ``solver.systems.parallelism`` and ``solver.systems.serving``.
"""

from __future__ import annotations

from typing import Any

import click

from drills.cli.model_flags import model_options
from drills.cli.solve_hardware import (
    BANDWIDTH,
    BYTES,
    COUNT,
    INT,
    KV_BYTES,
    POSITIVE,
    _chip,
    _kv_per_token,
    _model,
    _solver_call,
    _with_model,
    hardware_options,
    hbm_chip,
    output_options,
    show,
)
from drills.output import InputError


def link_options(f):
    """--link NAME (interconnect preset), --link-bandwidth (bytes/s per direction), --latency (s per step), --hw."""
    f = click.option("--latency", type=float, default=0.0, show_default=True, help="α: seconds per step.")(f)
    f = click.option("--link-bandwidth", type=BANDWIDTH, default=None, help="β: link bytes/s per direction.")(f)
    f = click.option("--link", "link", metavar="NAME", default=None,
                     help="Interconnect preset (nvlink3, nvlink4, pcie4, pcie5, ib-hdr, ib-ndr, ici-v5e, ici-v5p).")(f)
    return click.option("--hw", "hw", metavar="NAME", default=None,
                        help="Chip preset: its printed link figure halved (per direction).")(f)


def _link(kw: dict[str, Any], required: bool = True) -> tuple[float | None, str | None]:
    """(β per direction, where it came from): --link-bandwidth, else --link, else --hw's link halved."""
    given, name, hw = kw.get("link_bandwidth"), kw.get("link"), kw.get("hw")
    if given is not None and name is not None:
        raise InputError("give --link or --link-bandwidth, not both", "--link-bandwidth")
    if given is not None:
        return float(given), "given (per direction)"
    if name is not None:
        from solver.systems.interconnect import get_link

        link = get_link(name)
        return link.per_direction, f"{link.name}: {link.printed}; {link.scope} ({link.source})"
    if hw is not None:
        from solver.systems.chips import get_hardware

        h = get_hardware(hw)
        return h.link_bandwidth / 2, f"{h.name} {h.link_name}: {h.link_bandwidth / 1e9:g} GB/s bidirectional, halved"
    if required:
        raise InputError("needed here: give --link NAME, --link-bandwidth (per direction) or --hw NAME",
                         "--link-bandwidth")
    return None, None


def _with_link(r, origin: str | None) -> None:
    if origin:
        r.convention["link"] = origin


# ---------------------------------------------------------------------------------------
# Collectives
# ---------------------------------------------------------------------------------------


def _collective(op, size, ranks, algorithm, as_json, explain, kw):
    from solver.systems.collectives import collective as solve

    beta, origin = _link(kw)
    r = solve(op, size, ranks, beta, latency=kw["latency"], algorithm=algorithm)
    _with_link(r, origin)
    show(r, as_json, explain)


@click.command()
@click.option("--op", type=click.Choice(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]),
              default="all-reduce", show_default=True)
@click.option("--size", "-S", type=BYTES, required=True,
              help="S as nccl-tests reports it (all-gather: the gathered output; reduce-scatter: the input).")
@click.option("--ranks", "-n", type=INT, required=True)
@click.option("--algorithm", type=click.Choice(["ring", "tree"]), default="ring", show_default=True)
@link_options
@output_options
@_solver_call
def collective(op, size, ranks, algorithm, as_json, explain, **kw):
    """Time, algbw and busbw of a collective in the α-β model (ring, pairwise all-to-all, binomial tree)."""
    _collective(op, size, ranks, algorithm, as_json, explain, kw)


@click.command()
@click.option("--size", "-S", type=BYTES, required=True, help="Buffer on each rank (1GB, 1e9).")
@click.option("--ranks", "-n", type=INT, required=True)
@click.option("--algorithm", type=click.Choice(["ring", "tree"]), default="ring", show_default=True)
@link_options
@output_options
@_solver_call
def allreduce(size, ranks, algorithm, as_json, explain, **kw):
    """All-reduce time, algbw and busbw (= qkv solve collective --op all-reduce)."""
    _collective("all-reduce", size, ranks, algorithm, as_json, explain, kw)


# ---------------------------------------------------------------------------------------
# Tensor, pipeline and data parallelism
# ---------------------------------------------------------------------------------------


@click.command()
@click.option("--batch", "-b", type=COUNT, required=True)
@click.option("--seq", "-s", type=COUNT, required=True)
@click.option("--d-model", type=INT, required=True, help="Hidden size h.")
@click.option("--tp", "-t", type=INT, required=True, help="Tensor-parallel GPUs.")
@click.option("--sequence-parallel", is_flag=True, help="All-gather + reduce-scatter in place of all-reduce.")
@click.option("--mode", type=click.Choice(["train", "forward"]), default="train", show_default=True)
@click.option("--n-layers", "-L", type=INT, default=1, show_default=True)
@click.option("--dtype", default="bf16", show_default=True)
@link_options
@output_options
@_solver_call
def tp(batch, seq, d_model, tp, sequence_parallel, mode, n_layers, dtype, as_json, explain, **kw):
    """Bytes a Megatron tensor-parallel layer all-reduces per step (and their time with a link)."""
    from solver.systems.parallelism import tensor_parallel

    beta, origin = _link(kw, required=False)
    r = tensor_parallel(batch, seq, d_model, tp, dtype=dtype, sequence_parallel=sequence_parallel, mode=mode,
                        n_layers=n_layers, link_bandwidth=beta, latency=kw["latency"])
    _with_link(r, origin)
    show(r, as_json, explain)


@click.command("tp-matmul")
@click.option("--batch", "-B", type=COUNT, required=True)
@click.option("--d-in", "-D", type=COUNT, required=True)
@click.option("--d-out", "-F", type=COUNT, required=True)
@click.option("--tp", "-t", type=INT, required=True)
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


@click.command()
@click.option("--stages", "-p", type=INT, required=True)
@click.option("--microbatches", "-m", type=INT, required=True)
@click.option("--schedule", type=click.Choice(["gpipe", "1f1b", "interleaved"]), default="1f1b", show_default=True)
@click.option("--chunks", "-v", type=INT, default=1, show_default=True, help="Model chunks per stage (interleaved).")
@output_options
@_solver_call
def pipeline(stages, microbatches, schedule, chunks, as_json, explain):
    """Pipeline bubble: (p − 1)/(m + p − 1) of the step, and (p − 1)/m of the ideal time."""
    from solver.systems.parallelism import pipeline_bubble

    show(pipeline_bubble(stages, microbatches, schedule=schedule, chunks=chunks), as_json, explain)


@click.command("dp-comm")
@click.option("--params", "-N", type=COUNT, required=True, help="Parameters Ψ.")
@click.option("--gpus", type=INT, required=True)
@click.option("--stage", type=click.IntRange(0, 3), default=0, show_default=True, help="ZeRO stage (0 = plain DP).")
@click.option("--grad-dtype", default="bf16", show_default=True)
@link_options
@output_options
@_solver_call
def dp_comm(params, gpus, stage, grad_dtype, as_json, explain, **kw):
    """Data-parallel / ZeRO communication per step: 2Ψ (stages 0-2) or 3Ψ (stage 3), and its time."""
    from solver.systems.parallelism import data_parallel

    if kw["latency"]:
        raise InputError("not modelled here (bandwidth term only)", "--latency")
    beta, origin = _link(kw, required=False)
    r = data_parallel(params, gpus, stage=stage, grad_dtype=grad_dtype, link_bandwidth=beta)
    _with_link(r, origin)
    show(r, as_json, explain)


# ---------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------


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


def _reads(cfg, kw, params, kv_given, context: int, experts: str):
    """``B ↦ ModelRead`` when the model's step reads less than N·w and does fewer than 2·N FLOPs per token
    (a mixture of experts: the experts a batch touches, 2·N_active), as ``qkv solve decode`` prices it;
    None otherwise (or when --params / --kv-bytes-per-token replace the model's own figures)."""
    if cfg is None or params is not None or kv_given or not cfg.is_moe:
        return None
    from solver.systems.decode_read import model_read

    dtype = kw["dtype"]
    return lambda B: model_read(cfg, int(B), int(context), kw["weight_dtype"] or dtype, dtype, experts)


_EXPERTS = click.option("--experts", type=click.Choice(["expected", "worst", "all"]), default="expected",
                        show_default=True, help="MoE: experts a step reads per layer (as qkv solve decode).")


_DECODE_MODEL = click.option("--model", "decode_model", type=click.Choice(["total", "kv-plus-max"]), default="total",
                             show_default=True, help="Decode-step model: total, or kv-plus-max (the scaling book).")
_HBM_FIGURE = click.option("--hbm-figure", type=click.Choice(["datasheet", "device"]), default="datasheet",
                           show_default=True, help="Preset HBM: the datasheet figure (as qkv solve chips), or "
                                                   "what nvidia-smi reports.")


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--context", "-S", type=COUNT, required=True, help="Tokens cached per sequence.")
@click.option("--kv-bytes-per-token", type=KV_BYTES, default=None, help="KV-cache bytes per token (0: no cache).")
@click.option("--batch", "-B", type=COUNT, default=None, help="Default: the largest batch that fits.")
@click.option("--price-per-chip-hour", type=POSITIVE, default=None, help="Dollars per chip-hour (cost per 10⁶ tokens).")
@_DECODE_MODEL
@_HBM_FIGURE
@_EXPERTS
@model_options
@hardware_options
@output_options
@_solver_call
def serve(params, context, kv_bytes_per_token, batch, price_per_chip_hour, decode_model, hbm_figure, experts,
          as_json, explain, **kw):
    """Largest batch that fits, tokens/s and per-token latency at it, compute-bound batch, cost.

    With a mixture of experts (--preset mixtral-8x7b) a step reads only the experts the batch touches
    and does 2·N_active FLOPs per token, as qkv solve decode prices it; the batch that fits holds
    every expert."""
    from solver.systems.serving import serve as solve

    given_params = params
    params, kv, spec, cfg, unused = _serving_inputs(params, kv_bytes_per_token, kw, int(context))
    r = solve(params, context, kv, hbm_chip(kw, hbm_figure), chips=kw["chips"] or 1,
              weight_dtype=kw["weight_dtype"] or kw["dtype"], batch=batch, model=decode_model,
              price_per_chip_hour=price_per_chip_hour,
              read_at=_reads(cfg, kw, given_params, kv_bytes_per_token is not None, int(context), experts))
    if cfg is not None and cfg.is_moe and given_params is not None:
        unused["top_k"] = "--params given: every weight read, 2·N FLOPs per token"
    _with_model(r, spec, cfg, unused)
    show(r, as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters (70e9, 70B).")
@click.option("--prompt", "-P", type=COUNT, required=True, help="Prompt tokens per sequence.")
@click.option("--new-tokens", "-n", type=COUNT, required=True, help="Tokens generated per sequence.")
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
    reads = _reads(cfg, kw, given_params, kv_bytes_per_token is not None, int(prompt), experts)
    r = generation(params, prompt, new_tokens, kv, _chip(kw), batch=batch, chips=kw["chips"] or 1,
                   weight_dtype=kw["weight_dtype"] or kw["dtype"], mfu=kw["mfu"] or 1.0, model=decode_model,
                   read=reads(int(batch)) if reads else None)
    if cfg is not None and cfg.is_moe and given_params is not None:
        unused["top_k"] = "--params given: every weight read, 2·N FLOPs per token"
    _with_model(r, spec, cfg, {"sliding_window": "the window holds every position this generation reaches "
                                                 "(P + n − 1 ≤ W)", **unused})
    show(r, as_json, explain)


@click.command()
@click.option("--alpha", "-a", type=float, required=True, help="Acceptance probability of a draft token.")
@click.option("--gamma", "-g", type=click.IntRange(min=0), required=True, help="Draft tokens per step.")
@click.option("--cost", "-c", type=float, default=None, help="Draft step time ÷ target step time (speed-up, best γ).")
@click.option("--max-gamma", type=click.IntRange(min=1), default=64, show_default=True)
@output_options
@_solver_call
def speculative(alpha, gamma, cost, max_gamma, as_json, explain):
    """Speculative decoding: expected tokens per step (1 − α^(γ+1))/(1 − α), speed-up, best γ."""
    from solver.systems.serving import speculative as solve

    show(solve(alpha, gamma, cost=cost, max_gamma=max_gamma), as_json, explain)


@click.command("compute-optimal")
@click.option("--compute", "-C", type=POSITIVE, default=None, help="FLOP budget (1e24).")
@click.option("--method", type=click.Choice(["fitted", "rule-20"]), default="fitted", show_default=True,
              help="fitted: Chinchilla's approach-3 law; rule-20: D = 20N.")
@click.option("--params", "-N", type=COUNT, default=None, help="With --tokens: the over-training factor of a run.")
@click.option("--tokens", "-D", type=COUNT, default=None)
@output_options
@_solver_call
def compute_optimal(compute, method, params, tokens, as_json, explain):
    """Compute-optimal N and D for a budget (fitted law or the 20:1 rule), or a run's over-training factor."""
    from solver.systems.serving import compute_optimal as solve
    from solver.systems.serving import overtraining

    if (params is None) != (tokens is None):
        raise InputError("the over-training factor needs both --params and --tokens", "--tokens")
    if params is not None:
        if compute is not None:
            raise InputError("give --compute, or --params with --tokens, not both", "--compute")
        show(overtraining(params, tokens), as_json, explain)
        return
    if compute is None:
        raise InputError("give --compute (or --params with --tokens)", "--compute")
    show(solve(compute, method=method), as_json, explain)


@click.command()
@click.option("--params", "-N", type=COUNT, required=True)
@click.option("--tokens-per-second", type=POSITIVE, required=True, help="Training throughput, all chips together.")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="none", show_default=True)
@click.option("--n-layers", "-L", type=INT, default=None, help="With --d-model and --seq: PaLM's attention term.")
@click.option("--d-model", type=INT, default=None)
@click.option("--seq", type=COUNT, default=None)
@hardware_options
@output_options
@_solver_call
def mfu(params, tokens_per_second, recompute, n_layers, d_model, seq, as_json, explain, **kw):
    """Model FLOPs utilisation against hardware FLOPs utilisation (recomputed FLOPs count only in HFU)."""
    from solver.systems.parallelism import flops_utilisation

    attn = (n_layers, d_model, seq)
    if any(v is not None for v in attn) and not all(v is not None for v in attn):
        raise InputError("the attention term needs --n-layers, --d-model and --seq together", "--seq")
    chip = _chip(kw)
    r = flops_utilisation(params, tokens_per_second, kw["chips"] or 1, chip.need("peak_flops"), recompute=recompute,
                          n_layers=n_layers or 0, d_model=d_model or 0, seq=seq or 0)
    r.convention["hardware"] = chip.origin
    show(r, as_json, explain)
