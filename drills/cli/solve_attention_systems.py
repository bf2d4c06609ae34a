"""``qkv solve flash-attention|online-softmax`` (issue 24): FlashAttention's tiling and the online
softmax by hand.

The formulas live in ``solver.systems.flash_attention`` and ``solver.kernels.online_softmax``;
this module wires flags to them and prints as every solve command does (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import BYTES, INT, SIZE
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_relative import solver_call
from drills.output import InputError


@solve_command("flash-attention")
@click.option("--seq", "-N", "seq", type=SIZE, required=True, help="Sequence length N (8k = 8192).")
@click.option("--d-head", "-d", "d_head", type=SIZE, required=True, help="Head size d.")
@click.option("--sram", "-M", "sram", type=SIZE, default=None,
              help="On-chip SRAM size M in elements (the paper's unit).")
@click.option("--sram-bytes", type=BYTES, default=None,
              help="On-chip SRAM in bytes (100KiB, 192KB); M = bytes ÷ bytes per --dtype element.")
@click.option("--block-rows", "--br", "block_rows", type=INT, default=None, help="B_r (default: min(⌈M/4d⌉, d)).")
@click.option("--block-cols", "--bc", "block_cols", type=INT, default=None, help="B_c (default: ⌈M/4d⌉).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True)
@click.option("--heads", "--n-heads", "heads", type=INT, default=1, show_default=True)
@click.option("--version", type=click.Choice(["1", "2"]), default="1", show_default=True,
              help="FlashAttention-1 (K,V outer) or FlashAttention-2 (Q outer).")
@click.option("--unit", type=click.Choice(["elements", "bytes"]), default="elements", show_default=True,
              help="Count HBM traffic in elements (as the paper) or in bytes of --dtype.")
@click.option("--dtype", default="bf16", show_default=True, help="Bytes per element for --unit bytes and --sram-bytes.")
@click.option("--no-init", is_flag=True, help="Leave out Algorithm 1 line 2's initial writes of O, ℓ, m.")
@output_options
def flash_attention(seq, d_head, sram, sram_bytes, block_rows, block_cols, batch, heads, version, unit, dtype,
                    no_init, as_json, explain):
    """Block sizes, blocks and HBM reads/writes of FlashAttention against standard attention (Dao et al. 2022)."""
    from solver.systems.flash_attention import flash_attention as fa
    from solver.units import dtype_bytes

    if sram is not None and sram_bytes is not None:
        raise InputError("give --sram (elements) or --sram-bytes, not both", "--sram-bytes")
    if sram_bytes is not None:
        w = solver_call(dtype_bytes, dtype)
        sram = int(sram_bytes // w)
        if sram < 1:
            raise InputError("holds less than one element", "--sram-bytes")
    r = solver_call(fa, seq, d_head, sram=sram, block_rows=block_rows, block_cols=block_cols, batch=batch,
                    heads=heads, version=version, unit=unit, dtype=dtype, count_init=not no_init)
    if sram_bytes is not None:
        r.convention["sram"] += f"; here M = {sram} elements from {sram_bytes} bytes of {dtype}"
    show(r, as_json, explain, answer_label=f"HBM {unit} read and written by FlashAttention-{version}")


def _plain(x):
    """A SymPy value as text and float; floats and ints as they are (for printing and JSON)."""
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    return f"{x} ≈ {float(x):.6g}"


@solve_command("online-softmax")
@click.option("--block", "blocks", metavar="VECTOR", multiple=True, required=True,
              help="One block of scores, in order (repeat: --block '1 2' --block '3 0').")
@click.option("--values", "--v", "values", metavar="MATRIX", default=None,
              help="Value rows, one per score (for the rescaled partial output o).")
@click.option("--exact", is_flag=True, help="Exact arithmetic (SymPy): exponentials kept symbolic.")
@output_options
def online_softmax(blocks, values, exact, as_json, explain):
    """One row's softmax block by block: running max m, running sum ℓ, the partial output rescaled."""
    from drills.cli.matrix_args import parse_matrix, parse_vector
    from solver.kernels.online_softmax import online_softmax as osm

    parsed = [parse_vector(b, "--block") for b in blocks]
    n = sum(p.shape[0] for p in parsed)
    if n > (12 if exact else 4096):
        raise InputError(f"{n} scores: at most {12 if exact else 4096}{' with --exact' if exact else ''}", "--block")
    pick = (lambda a: a.exact()) if exact else (lambda a: a.floats())
    vals = None
    if values is not None:
        v = parse_matrix(values, "--values").as_matrix()
        vals = pick(v)
    r = solver_call(osm, [pick(p) for p in parsed], vals, exact=exact)
    if exact:
        r.answer = _plain(r.answer)
        r.breakdown = _plain(r.breakdown)
        r.steps = [type(s)(s.formula, s.substitution, _plain(s.value), s.unit) for s in r.steps]
    show(r, as_json, explain, answer_label="softmax weights of the whole row, in order", unit_text="")
