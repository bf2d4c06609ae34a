"""``qkv solve lr|fsdp|grad-accum|fit-3d|busbw|run-flops|mfu-step``: training at scale, learning-rate
schedules, and figures read off measurements.

The work is in ``solver.systems.lr_schedules``, ``solver.systems.training_scale`` and
``solver.systems.measurements``; this module wires flags to them (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import Int, Real
from drills.cli.solve_hardware import BANDWIDTH, BYTES, COUNT, FLOPS, output_options, show
from drills.cli.solve_parallel import _link, link_options
from drills.cli.solve_relative import solver_call


@solve_command("lr")
@click.option("--schedule", type=click.Choice(["linear", "inverse-sqrt", "cosine"]), required=True,
              help="linear: warmup then linear decay; inverse-sqrt: Vaswani et al. eq. 3; cosine: warmup then cosine.")
@click.option("--step", "-t", "step", type=Int(0, 10**12), required=True, help="Step t (from 0; inverse-sqrt from 1).")
@click.option("--peak-lr", "--lr", "peak", type=Real(0, 10, min_open=True), default=None, help="Peak learning rate.")
@click.option("--warmup", "-w", type=Int(0, 10**12), default=0, show_default=True, help="Warmup steps w.")
@click.option("--total", type=Int(1, 10**12), default=None, help="Step where the decay ends (linear: 0; cosine: min).")
@click.option("--min-lr", type=Real(0, 10), default=0, show_default=True, help="Cosine floor (CosineAnnealingLR eta_min).")
@click.option("--start-factor", type=Real(0, 1), default=0, show_default=True,
              help="Warmup starts at peak × s (PyTorch LinearLR start_factor; HuggingFace: 0).")
@click.option("--d-model", type=Int(1, 10**7), default=None, help="inverse-sqrt: the paper's d_model^−0.5 scale.")
@output_options
def lr(schedule, step, peak, warmup, total, min_lr, start_factor, d_model, as_json, explain):
    """The learning rate at a step: linear warmup/decay, inverse square root, cosine with warmup."""
    from solver.systems.lr_schedules import learning_rate

    r = solver_call(learning_rate, schedule, step, peak=peak, warmup=warmup, total=total, min_lr=min_lr,
                    start_factor=start_factor, d_model=d_model)
    show(r, as_json, explain)


def _peak(peak_flops, hw, dtype="bf16"):
    if peak_flops is not None:
        return float(peak_flops)
    if hw is None:
        from drills.output import InputError

        raise InputError("needed here: give --peak-flops, or --hw NAME to take it from a preset", "--peak-flops")
    from solver.systems.chips import get_hardware

    return get_hardware(hw).peak(dtype)


@solve_command()
@click.option("--layer-params", "-P", type=COUNT, required=True, help="Parameters of one layer P.")
@click.option("--ranks", "-n", type=Int(2, 10**7), required=True, help="Data-parallel (sharding) ranks n.")
@click.option("--tokens", "-T", type=COUNT, required=True, help="Tokens per GPU per micro-batch step (b × s).")
@click.option("--layers", "-L", type=Int(1, 10**6), default=1, show_default=True, help="Layers L.")
@click.option("--peak-flops", type=FLOPS, default=None, help="FLOP/s per GPU (else --hw's dense bf16 peak).")
@click.option("--efficiency", "--mfu", "efficiency", type=Real(0, 1, min_open=True), default=1, show_default=True,
              help="Fraction of the peak the layer's matmuls reach.")
@click.option("--param-bytes", type=Int(1, 8), default=2, show_default=True, help="Bytes per gathered parameter.")
@click.option("--grad-bytes", type=Int(1, 8), default=2, show_default=True, help="Bytes per reduced gradient.")
@link_options
@output_options
def fsdp(layer_params, ranks, tokens, layers, peak_flops, efficiency, param_bytes, grad_bytes, as_json, explain, **kw):
    """FSDP / ZeRO-3: per-layer all-gather and reduce-scatter bytes, and whether they hide behind compute."""
    from solver.systems.training_scale import fsdp_overlap

    beta, origin = _link(kw)
    r = solver_call(fsdp_overlap, int(layer_params), ranks, int(tokens), link_bandwidth=beta,
                    peak_flops=_peak(peak_flops, kw.get("hw")), efficiency=efficiency, param_bytes=param_bytes,
                    grad_bytes=grad_bytes, layers=layers)
    if origin:
        r.convention["link"] = origin
    show(r, as_json, explain)


@solve_command("grad-accum")
@click.option("--global-batch", "-B", type=Int(1, 10**9), required=True, help="Sequences per optimizer step.")
@click.option("--micro-batch", "-b", type=Int(1, 10**6), required=True, help="Sequences per micro-batch.")
@click.option("--dp", "-d", type=Int(1, 10**7), required=True, help="Data-parallel degree.")
@click.option("--pp", "-p", "stages", type=Int(1, 10**4), default=1, show_default=True, help="Pipeline stages.")
@output_options
def grad_accum(global_batch, micro_batch, dp, stages, as_json, explain):
    """Gradient-accumulation steps from the global batch, and the pipeline bubble they leave."""
    from solver.systems.training_scale import grad_accumulation

    show(solver_call(grad_accumulation, global_batch, micro_batch, dp, stages=stages), as_json, explain)


@solve_command("fit-3d")
@click.option("--params", "-N", type=COUNT, required=True, help="Parameters P.")
@click.option("--layers", "-L", type=Int(1, 10**5), required=True)
@click.option("--d-model", "--hidden", "d_model", type=Int(1, 10**6), required=True,
              help="Hidden size h (-h is help, as on every command).")
@click.option("--heads", "-a", "n_heads", type=Int(1, 10**5), required=True)
@click.option("--seq", "-s", type=Int(1, 10**8), required=True)
@click.option("--micro-batch", "-b", type=Int(1, 10**6), default=1, show_default=True)
@click.option("--tp", "-t", type=Int(1, 10**4), default=1, show_default=True)
@click.option("--pp", "-p", type=Int(1, 10**4), default=1, show_default=True)
@click.option("--dp", "-d", type=Int(1, 10**7), default=1, show_default=True)
@click.option("--zero", "zero_stage", type=click.Choice(["0", "1", "2", "3"]), default="1", show_default=True)
@click.option("--microbatches", "-m", type=Int(1, 10**6), default=None, help="Micro-batches per step (default p).")
@click.option("--sequence-parallel/--no-sequence-parallel", default=True, show_default=True)
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]), default="selective", show_default=True)
@click.option("--hbm", type=BYTES, default=None, help="HBM bytes per GPU (else --hw's datasheet figure).")
@click.option("--hw", default=None, metavar="NAME", help="Chip preset for the HBM capacity.")
@output_options
def fit_3d(params, layers, d_model, n_heads, seq, micro_batch, tp, pp, dp, zero_stage, microbatches,
           sequence_parallel, recompute, hbm, hw, as_json, explain):
    """Does a TP × PP × DP configuration fit? Model states under ZeRO plus 1F1B's activations on stage 1."""
    from solver.systems.training_scale import fit_3d as solve

    if hbm is None and hw is not None:
        from solver.systems.chips import get_hardware

        hbm = get_hardware(hw).hbm_bytes
    r = solver_call(solve, int(params), layers, d_model, n_heads, seq, micro_batch, tp=tp, pp=pp, dp=dp,
                    zero_stage=int(zero_stage), microbatches=microbatches, sequence_parallel=sequence_parallel,
                    recompute=recompute, hbm=float(hbm) if hbm is not None else None)
    show(r, as_json, explain)


@solve_command()
@click.option("--op", type=click.Choice(["all-reduce", "all-reduce-in-network", "reduce-scatter", "all-gather",
                                         "all-to-all", "broadcast", "reduce"]), default="all-reduce", show_default=True)
@click.option("--ranks", "-n", "--gpus", "ranks", type=Int(2, 10**7), required=True, help="Ranks n of the run.")
@click.option("--size", "-S", type=BYTES, default=None, help="nccl-tests' size column (bytes).")
@click.option("--time", "time_s", type=Real(0, 10**6, min_open=True), default=None, help="Time in seconds.")
@click.option("--time-us", type=Real(0, 10**12, min_open=True), default=None, help="Time in µs, as nccl-tests prints it.")
@click.option("--algbw", type=BANDWIDTH, default=None, help="algbw instead of size and time (e.g. 118.87GB/s).")
@link_options
@output_options
def busbw(op, ranks, size, time_s, time_us, algbw, as_json, explain, **kw):
    """nccl-tests' output to bus bandwidth (and the fraction of a link it reaches)."""
    from drills.output import InputError
    from solver.systems.measurements import nccl_busbw

    if time_s is not None and time_us is not None:
        raise InputError("give --time or --time-us, not both", "--time-us")
    t = time_s if time_us is None else time_us * 1e-6
    if algbw is None and (size is None or t is None):
        raise InputError("give --size and --time-us (or --time), or --algbw", "--size")
    beta, origin = _link(kw, required=False)
    r = solver_call(nccl_busbw, op, ranks, size=float(size) if size is not None else None, time=t,
                    algbw=float(algbw) if algbw is not None else None, link_bandwidth=beta)
    if origin:
        r.convention["link"] = origin
    show(r, as_json, explain)


@solve_command("run-flops")
@click.option("--gpu-hours", type=Real(0, 10**12, min_open=True), default=None, help="GPU-hours of the run.")
@click.option("--days", type=Real(0, 10**6, min_open=True), default=None, help="Wall-clock days (with --chips).")
@click.option("--chips", type=Int(1, 10**8), default=None, help="Chips (with --days).")
@click.option("--mfu", type=Real(0, 1, min_open=True), required=True, help="Model FLOPs utilisation.")
@click.option("--peak-flops", type=FLOPS, default=None, help="Dense FLOP/s per chip (else --hw's).")
@click.option("--hw", default=None, metavar="NAME", help="Chip preset (dense peak at --dtype).")
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--params", "-N", type=COUNT, default=None, help="Parameters N: the tokens D = FLOPs/(6N) too.")
@output_options
def run_flops(gpu_hours, days, chips, mfu, peak_flops, hw, dtype, params, as_json, explain):
    """A run's FLOPs from GPU-hours (or days × chips) × dense peak × MFU."""
    from solver.systems.measurements import run_flops as solve

    show(solver_call(solve, _peak(peak_flops, hw, dtype), mfu, gpu_hours=gpu_hours, days=days, chips=chips,
                     params=float(params) if params is not None else None), as_json, explain)


@solve_command("mfu-step")
@click.option("--params", "-N", type=COUNT, required=True, help="Parameters N.")
@click.option("--tokens", "-T", type=COUNT, required=True, help="Tokens per optimizer step (global batch × seq).")
@click.option("--step-time", type=Real(0, 10**7, min_open=True), required=True, help="Logged seconds per step.")
@click.option("--chips", type=Int(1, 10**8), required=True)
@click.option("--peak-flops", type=FLOPS, default=None, help="Dense FLOP/s per chip (else --hw's).")
@click.option("--hw", default=None, metavar="NAME", help="Chip preset (dense peak at --dtype).")
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--attention-flops", type=Real(0, 10**20), default=0, show_default=True,
              help="Attention-score FLOPs per token added to 6N (PaLM's 12·L·h·s; 0 leaves them out).")
@output_options
def mfu_step(params, tokens, step_time, chips, peak_flops, hw, dtype, attention_flops, as_json, explain):
    """MFU from a logged step time: 6·N·tokens / (step time × chips × dense peak)."""
    from solver.systems.measurements import mfu_from_step

    show(solver_call(mfu_from_step, float(params), float(tokens), step_time, chips, _peak(peak_flops, hw, dtype),
                     attention_flops_per_token=attention_flops), as_json, explain)
