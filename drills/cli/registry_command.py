"""``qkv solve`` commands made from a formula's registry entry (solver.registry).

Each input becomes an option (``--name`` and its aliases), each convention a choice with the
registry's meaning and source as its help, and ``--json``/``--explain`` print the formula's
Result as every other solve command does. A quantity takes a unit (``45GB/s``, ``2 MiB``,
``3 us``) or a plain number in base units (bytes, FLOP, seconds); the unit must match.
"""

from __future__ import annotations

import click

from drills.cli.help_groups import SolveCommand
from drills.output import InputError


class QuantityType(click.ParamType):
    """A number with an optional unit, read by qkv calc's parser and checked against the input's unit."""

    name = "QUANTITY"

    def __init__(self, unit: str, count: bool = False, integer: bool = False, binary_k: bool = False):
        self.unit, self.count, self.integer, self.binary_k = unit, count, integer, binary_k

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        from fractions import Fraction

        from solver.errors import SolverInputError
        from solver.registry.calc import Evaluator, Parser, evaluate_unit
        from solver.registry.quantity import NONE

        text = value.strip()
        try:
            node = Parser(text).sum()
            ev = Evaluator()
            q = ev.number(node, binary=True) if node.kind == "num" and node.suffix and self.binary_k else \
                ev.quantity(ev.eval(node))
            if q.dims == NONE and self.unit:
                q = q * evaluate_unit(self.unit)  # a plain number is in base units
            want = evaluate_unit(self.unit).dims if self.unit else NONE
            if q.dims != want:
                from solver.registry.quantity import dims_name

                self.fail(f"{dims_name(want)} expected, got {dims_name(q.dims)} ({value!r})", param, ctx)
        except SolverInputError as e:
            self.fail(f"{e} ({value!r})", param, ctx)
        m = q.magnitude
        if self.integer:
            if not (isinstance(m, Fraction) and m.denominator == 1):
                self.fail(f"a whole number (got {value!r})", param, ctx)
            return int(m)
        return int(m) if isinstance(m, Fraction) and m.denominator == 1 else m


def make_command(name: str) -> click.Command:
    """The click command of the registered formula ``name``."""
    from solver.registry import get_formula

    f = get_formula(name)
    params: list[click.Parameter] = []
    for i in f.inputs:
        # -h is help in every command: an input whose alias is h (a width named h) keeps it in calc only
        flags = [f"--{i.name.replace('_', '-')}"] + [("-" if len(a) == 1 else "--") + a.replace("_", "-")
                                                     for a in i.aliases if a != "h"]
        unit = f" [{i.unit}]" if i.unit else ""
        if i.kind in ("quantity", "count", "fraction"):
            typ = QuantityType(i.unit, i.kind != "quantity", i.integer, i.binary_k)
        else:
            typ = click.STRING
        params.append(click.Option([*flags, i.name], type=typ, required=i.required, default=None,
                                   help=f"{i.help}{unit}" + ("" if i.required or i.default is None
                                                             else f" (default {i.default})")))
    for c in f.conventions:
        meaning = "; ".join(f"{k}: {v.meaning}" + (f" [{v.source}]" if v.source else "") for k, v in c.choices.items())
        params.append(click.Option([f"--{c.name}", c.name], type=click.Choice(list(c.choices)), default=c.default,
                                   show_default=True, help=f"{c.help} {meaning}."))
    params.append(click.Option(["--json", "as_json"], is_flag=True, help="Print one JSON object."))
    params.append(click.Option(["--explain", "explain"], is_flag=True, help="Print the worked solution."))

    def callback(as_json, explain, **kw):
        from drills.cli.solve_hardware import show
        from solver.errors import SolverInputError

        conventions = {c.name: kw.pop(c.name) for c in f.conventions}
        values = {k: v for k, v in kw.items() if v is not None}
        try:
            r = f.run(values, conventions)
        except SolverInputError as e:
            raise InputError(str(e.args[0]), f"--{e.param.replace('_', '-')}" if e.param else None) from e
        r.convention.setdefault("formula", f"{f.name} (qkv calc: {f.name}(...))")
        show(r, as_json, explain)

    return SolveCommand(name=name, params=params, callback=callback,
                        help=f"{f.summary}\n\nMade from the registry entry {f.name} (qkv calc --list {f.name}).")


transfer = make_command("transfer")
# sharding and inference thresholds (solver.systems.sharding)
dp_batch = make_command("dp_batch")
tp_max = make_command("tp_max")
fsdp_tp_batch = make_command("fsdp_tp_batch")
fsdp_opt = make_command("fsdp_opt")
tp_decode_max = make_command("tp_decode_max")
decode_batch = make_command("decode_batch")
decode_latency = make_command("decode_latency")
kv_budget = make_command("kv_budget")
sharded_matmul = make_command("sharded_matmul")
weight_stationary = make_command("weight_stationary")
# machine parts, topology and training memory recipes (solver.systems.parts)
gpu_peak = make_command("gpu_peak")
elementwise = make_command("elementwise")
reduction = make_command("reduction")
torus = make_command("torus")
pod = make_command("pod")
node = make_command("node")
two_level_all_reduce = make_command("two_level_all_reduce")
train_memory = make_command("train_memory")
ep_d_ff = make_command("ep_d_ff")
chip_figures = make_command("chip_figures")
pipeline_batch = make_command("pipeline_batch")
warps_resident = make_command("warps_resident")
