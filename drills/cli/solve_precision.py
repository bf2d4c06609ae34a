"""``qkv solve float-format|block-format|mx-quantize``: low-precision number formats by hand.

The work is in ``solver.kernels.float_formats`` (exact, with fractions); this module wires flags to
it and prints answer, unit, convention and breakdown (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.matrix_args import parse_vector
from drills.cli.numbers import Int
from drills.cli.solve_hardware import COUNT, output_options, show
from drills.cli.solve_relative import solver_call
from drills.output import InputError

FORMAT_NAMES = ["fp32", "fp16", "bf16", "e5m2", "e4m3", "fp4", "e4m3fn", "e2m1", "mxfp4"]


def _one_value(text: str | None, flag: str):
    if text is None:
        return None
    row = parse_vector(text, flag).rows[0]
    if len(row) != 1:
        raise InputError(f"give one number (got {len(row)})", flag)
    return row[0]


@solve_command("float-format")
@click.option("--format", "-f", "name", type=click.Choice(FORMAT_NAMES, case_sensitive=False), required=True,
              help="fp32, fp16, bf16, e5m2 / e4m3 (FP8, OCP), fp4 (e2m1, MXFP4's element).")
@click.option("--value", "-x", "value_text", default=None, metavar="NUMBER",
              help='A number (exact: "0.3", "1/3", "-2.7e2"): its spacing and nearest representable value.')
@click.option("--ask", type=click.Choice(["max-normal", "min-normal", "min-subnormal", "spacing", "nearest"]),
              default=None, help="Which figure is the answer (default: nearest with --value, else max-normal).")
@click.option("--overflow", type=click.Choice(["pytorch", "ieee", "saturate"]), default="pytorch", show_default=True,
              help="Past the largest normal: PyTorch's cast (inf, or saturate where no inf), inf/NaN, or saturate.")
@output_options
def float_format(name, value_text, ask, overflow, as_json, explain):
    """Largest normal, smallest normal and subnormal, spacing near a value, nearest representable value."""
    from solver.kernels.float_formats import float_format as solve

    value = _one_value(value_text, "--value")
    r = solver_call(solve, name, value, ask=ask, overflow=overflow)
    show(r, as_json, explain)


@solve_command("block-format")
@click.option("--format", "-f", "name", default="mxfp4", show_default=True,
              help="mxfp4, mxfp8-e4m3, mxfp8-e5m2, nvfp4, or any name with --block/--scale-bits/--element-bits.")
@click.option("--params", "-N", "params", type=COUNT, default=None, help="Parameters N: total bytes instead of bytes each.")
@click.option("--block", type=Int(1, 10**6), default=None, help="Elements per shared scale (MX: 32).")
@click.option("--scale-bits", type=Int(0, 64), default=None, help="Bits of each scale (MX: 8, E8M0).")
@click.option("--element-bits", type=Int(1, 64), default=None, help="Bits of each element (FP4: 4).")
@output_options
def block_format(name, params, block, scale_bits, element_bits, as_json, explain):
    """Bytes per parameter of a block-scaled format, the shared scales counted."""
    from solver.kernels.float_formats import block_format_bytes

    r = solver_call(block_format_bytes, name, int(params) if params is not None else None, block=block,
                    scale_bits=scale_bits, element_bits=element_bits)
    show(r, as_json, explain)


@solve_command("mx-quantize")
@click.option("--values", "values_text", required=True, metavar="VECTOR", help='One block, e.g. "0.1 -0.7 2.5 3.9".')
@click.option("--element", type=click.Choice(["fp4", "e4m3", "e5m2"]), default="fp4", show_default=True,
              help="Element format (MXFP4: fp4 e2m1; MXFP8: e4m3 or e5m2).")
@output_options
def mx_quantize(values_text, element, as_json, explain):
    """One MX block: the shared power-of-two scale, the elements, dequantised values and the error."""
    from solver.kernels.float_formats import mx_quantize as solve

    values = list(parse_vector(values_text, "--values").rows[0])
    if len(values) > 32:
        raise InputError(f"an MX block holds at most 32 values (got {len(values)})", "--values")
    show(solver_call(solve, values, element), as_json, explain)
