"""``qkv solve float-format|block-format|mx-quantize``: low-precision number formats by hand.

The work is in ``solver.kernels.float_formats`` (exact, with fractions); this module wires flags to
it and prints answer, unit, convention and breakdown (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.matrix_args import parse_vector
from drills.cli.numbers import Int, Real
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


@solve_command("quant-error")
@click.option("--values", "values_text", required=True, metavar="VECTOR|MATRIX",
              help='A vector "0.5 -1.2 3.1" or a matrix "1 -2 0.5 4; 0.1 0.2 -0.3 0.4" (rows = output channels).')
@click.option("--bits", "-b", type=Int(2, 16), default=8, show_default=True, help="Integer bits (int8: 8, int4: 4).")
@click.option("--scheme", type=click.Choice(["absmax", "zero-point"]), default="absmax", show_default=True,
              help="absmax: symmetric, codes ±(2^(b−1) − 1); zero-point: asymmetric, codes 0 … 2^b − 1.")
@click.option("--block", type=Int(1, 10**6), default=None, help="Matrix only: entries per block scale (default 2).")
@output_options
def quant_error(values_text, bits, scheme, block, as_json, explain):
    """Quantise and dequantise; the error. A matrix: per-tensor, per-channel and per-block scales compared."""
    from drills.cli.matrix_args import parse_array
    from solver.kernels.quant_error import quantize_matrix, quantize_vector

    arr = parse_array(values_text, "--values")
    if arr.ndim == 1 or len(arr.rows) == 1:
        if block is not None:
            raise InputError("--block compares scales of a matrix; give rows separated by ';'", "--block")
        r = solver_call(quantize_vector, list(arr.rows[0]), bits, scheme)
    else:
        r = solver_call(quantize_matrix, [list(row) for row in arr.rows], bits, scheme, block=block)
    show(r, as_json, explain)


@solve_command()
@click.option("--x-max", "x_text", required=True, metavar="VECTOR", help="max|X_j| per input channel j (activations).")
@click.option("--w-max", "w_text", required=True, metavar="VECTOR", help="max|W_j| per input channel j (weights).")
@click.option("--alpha", type=Real(0, 1), default=0.5, show_default=True, help="Migration strength α (paper: 0.5).")
@output_options
def smoothquant(x_text, w_text, alpha, as_json, explain):
    """SmoothQuant's s_j = max|X_j|^α / max|W_j|^(1−α), and the channel maxima after smoothing."""
    from solver.kernels.quant_error import smoothquant as solve

    xs = [float(v) for v in parse_vector(x_text, "--x-max").rows[0]]
    ws = [float(v) for v in parse_vector(w_text, "--w-max").rows[0]]
    show(solver_call(solve, xs, ws, alpha), as_json, explain)


@solve_command("fp8-memory")
@click.option("--params", "-N", "params", type=COUNT, required=True, help="Parameters N.")
@click.option("--recipe", type=click.Choice(["fp8-te", "fp8-deepseek-v3", "bf16-mixed"]), default="fp8-te",
              show_default=True, help="Which tensors stay in higher precision (see --explain).")
@output_options
def fp8_memory(params, recipe, as_json, explain):
    """Model-state memory of FP8 training: which tensors stay in bf16/fp32, bytes per parameter."""
    from solver.kernels.quant_error import fp8_training_memory

    show(solver_call(fp8_training_memory, int(params), recipe), as_json, explain)
