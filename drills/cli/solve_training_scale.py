"""``qkv solve lr|fsdp|grad-accum|fit-3d|busbw|run-flops|mfu-step``: training at scale, learning-rate
schedules, and figures read off measurements.

The work is in ``solver.systems.lr_schedules``, ``solver.systems.training_scale`` and
``solver.systems.measurements``; this module wires flags to them (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import Int, Real
from drills.cli.solve_hardware import output_options, show
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
