"""``qkv calc``: arithmetic with units, presets and every registered formula (solver.registry).

The language and its limits are in :mod:`solver.registry.calc`; this module only reads the
command line or the prompt and prints. Nothing typed is evaluated as Python.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import click

from drills.output import emit

#: seconds one expression may take before it is refused
TIME_LIMIT = 10


def _answer(ev, value) -> dict[str, Any]:
    """The answer as data: value in the asked (or readable) unit, exact form, base units, calls."""
    from fractions import Fraction

    from solver.registry.calc import Record, unit_quantity, unit_text
    from solver.registry.display import exact_text, readable_unit
    from solver.registry.quantity import NONE, _dims_text

    out: dict[str, Any] = {}
    if isinstance(value, Record) and (value.primary is None or value.primary not in value.fields):
        out["record"] = value.name
        out["fields"] = {k: _answer(ev, v)["value_text"] for k, v in value.fields.items()}
        if value.missing:
            out["not_computed"] = dict(value.missing)
        return out
    arr = _array(value)
    if arr is not None:
        from solver.registry.calc import array_text

        if ev.target is not None:
            from solver.registry.calc import CalcError

            raise CalcError("a vector or a matrix has no unit to convert")
        return {"value": arr.nested(), "shape": list(arr.shape), "unit": "", "kind": arr.kind,
                "value_text": array_text(arr)}
    q = ev.quantity(value)
    if ev.target is not None:
        m, name = q.to(unit_quantity(ev.target), unit_text(ev.target)), unit_text(ev.target)
    elif q.dims == NONE:
        m, name = q.magnitude, ""
    else:
        name, factor = readable_unit(q)
        m = q.magnitude / factor if isinstance(q.magnitude, Fraction) else float(q.magnitude) / float(factor)
    from solver.registry.display import number, views

    out["value"] = int(m) if isinstance(m, Fraction) and m.denominator == 1 else float(m)
    out["unit"] = name
    out["exact"] = exact_text(m)
    out["exact_value"] = isinstance(m, Fraction)
    out["base"] = {"value": float(q.magnitude) if not (isinstance(q.magnitude, Fraction) and
                                                      q.magnitude.denominator == 1) else int(q.magnitude),
                   "unit": _dims_text(q.dims)}
    out["value_text"] = f"{number(m)} {name}".strip()
    # other readings, not the answer again ("10 s", not "10 s  = 10 s")
    out["views"] = [] if ev.target is not None else [v for v in views(q) if v != out["value_text"]]
    return out


def _array(value):
    """The vector or matrix ``value`` stands for (a formula's result whose first output is one, a
    list of plain numbers), else None."""
    from solver.registry.calc import Array, Record, as_array
    from solver.registry.quantity import NONE, Quantity

    if isinstance(value, Record) and value.primary in value.fields:
        value = value.fields[value.primary]
    if isinstance(value, Array):
        return value
    if isinstance(value, list):
        def plain(v):
            if isinstance(v, list):
                return [plain(x) for x in v]
            if isinstance(v, Quantity) and v.dims == NONE:
                return v.magnitude
            return None
        return as_array(plain(value))
    return None


def _print(ev, value, explain: bool, as_json: bool, expression: str) -> None:
    a = _answer(ev, value)
    if as_json:
        from drills.output import jsonable

        calls = [{"call": c, "result": r.to_json()} for c, r in ev.trace.calls]
        emit(json.dumps(jsonable({"expression": expression, **{k: v for k, v in a.items() if k != "value_text"},
                                  "calls": calls, "notes": list(ev.notes)}), ensure_ascii=False))
        return
    if explain:
        for call, r in ev.trace.calls:
            emit(f"{call}:")
            from solver.result import fmt

            for s in r.steps:
                emit(f"  {s.formula} = {s.substitution} = {fmt(s.value)} {s.unit}".rstrip())
            for k, v in r.convention.items():
                if isinstance(v, str):
                    emit(f"  convention {k}: {v}")
        if ev.trace.calls:
            emit("")
        if ev.last is not None:
            from solver.registry.calc import substitution

            calls = list(ev.trace.calls)
            read, values = substitution(ev, ev.last)
            ev.trace.calls[:] = calls
            emit(read)
            if values != read:
                emit("  = " + values)
    if "record" in a:
        emit(a["record"] + ":")
        width = max(map(len, a["fields"]), default=0)
        for k, v in a["fields"].items():
            emit(f"  {k:<{width}}  {v}")
        for k, why in a.get("not_computed", {}).items():
            emit(f"  {k:<{width}}  not computed: {why}")
        return
    line = a["value_text"]
    if "shape" in a:
        emit(line)
        for n in ev.notes:
            emit(f"note: {n}")
        return
    if a["exact"]:
        line += f"  (exactly {a['exact']}{' ' + a['unit'] if a['unit'] else ''})"
    if a["views"]:
        line += "  = " + " = ".join(a["views"])
    emit(line)
    for n in ev.notes:
        emit(f"note: {n}")


def _alarm(signum, frame):
    from solver.registry.calc import CalcError

    raise CalcError(f"the expression took more than {TIME_LIMIT} s")


def evaluate(expression: str, ev=None):
    from solver.registry.calc import Evaluator

    ev = ev or Evaluator()
    old = None
    if hasattr(signal, "SIGALRM"):
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIME_LIMIT)
    try:
        value = ev.run(expression)
    except RecursionError:
        from solver.registry.calc import CalcError

        raise CalcError("the expression is nested too deep") from None
    finally:
        if old is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return ev, value


def listing(name: str | None = None) -> list[str]:
    """``qkv calc --list``: every formula, preset kind, unit and function (or one of them)."""
    from solver.registry import formulas
    from solver.registry.calc import CONSTANTS, FUNCTIONS
    from solver.registry.quantity import UNIT_HELP

    table = formulas()
    lines: list[str] = []
    if name is not None and name in table:
        return _formula_lines(table[name])
    if name is not None and name in FUNCTIONS:
        return [f"{name}(x): {FUNCTIONS[name][1]}"]
    if name is not None:
        from solver.registry.calc import preset_record, presets

        if name.lower() in presets():
            rec = preset_record(name)
            ev_lines = [f"{rec.name} ({rec.kind}):"]
            from solver.registry.display import short

            ev_lines += [f"  .{k}  {short(v)}" for k, v in rec.fields.items()]
            return ev_lines
        from difflib import get_close_matches

        from solver.registry.calc import CalcError

        near = get_close_matches(name, list(table) + list(FUNCTIONS), 1, 0.6)
        raise CalcError(f"no formula, function or preset {name!r}" + (f"; did you mean {near[0]}?" if near else ""))
    lines.append("Formulas (name(inputs...); conventions as name=choice; .field for any output):")
    for f in table.values():
        lines += ["", *_formula_lines(f)]
    lines += ["", "Presets (a name as a value; .field for its figures):",
              "  models: " + ", ".join(_preset_names("model")),
              "    fields: params, active_params, layers, d_model, heads, kv_heads, d_head, d_ff, vocab, experts, "
              "top_k, max_positions",
              "  chips: " + ", ".join(_preset_names("chip")),
              "    fields: bf16, fp16, fp8, ... (peak FLOP/s, dense), peak (= bf16), hbm (bytes), hbm_bw, link "
              "(bytes/s per direction)",
              "  links: " + ", ".join(_preset_names("link")),
              "    fields: bw (= per_direction), bidirectional",
              "  a config.json: its path in quotes where a model goes (params(\"./config.json\"))",
              "", "Units:"]
    lines += [f"  {k}: {v}" for k, v in UNIT_HELP.items()]
    lines += ["", "Functions: " + "; ".join(f"{k}: {v[1]}" for k, v in FUNCTIONS.items()),
              "Constants: " + ", ".join(CONSTANTS),
              "", "Syntax: + - * / ^ ( ); 'x -> unit' (or 'to', 'in') converts; 'x = ...; x / 2' keeps a variable; "
                  "8k = 8,000 (8,192 where a formula takes a sequence length)."]
    return lines


def _preset_names(kind: str) -> list[str]:
    from solver.registry.calc import presets

    return sorted({name for k, name in presets().values() if k == kind})


def _formula_lines(f) -> list[str]:
    out = [f"{f.name}: {f.summary}" + (f"   [qkv solve {f.solve}]" if f.solve else "")]
    for i in f.inputs:
        extra = []
        if i.unit:
            extra.append(i.unit)
        if i.kind not in ("quantity", "count", "fraction"):
            extra.append(i.kind)
        extra.append("required" if i.required else f"default {i.default}")
        if i.aliases:
            extra.append("also " + ", ".join(i.aliases))
        out.append(f"  {i.name}: {i.help} ({'; '.join(extra)})")
    for c in f.conventions:
        out.append(f"  {c.name}= {c.help} Default {c.default}.")
        for k, ch in c.choices.items():
            out.append(f"      {k}: {ch.meaning}" + (f" [{ch.source}]" if ch.source else ""))
    out.append("  outputs: " + "; ".join(f".{o.name} ({o.unit or o.kind})" + (f", needs {', '.join(o.needs)}"
                                                                               if o.needs else "") for o in f.outputs))
    if f.source:
        out.append(f"  source: {f.source}")
    return out


def registry_json() -> dict[str, Any]:
    from solver.registry import formulas
    from solver.registry.calc import CONSTANTS, FUNCTIONS
    from solver.registry.quantity import UNIT_HELP, unit_names

    return {"formulas": [f.as_json() for f in formulas().values()],
            "functions": {k: v[1] for k, v in FUNCTIONS.items()}, "constants": list(CONSTANTS),
            "units": {"names": unit_names(), "help": UNIT_HELP},
            "presets": {k: _preset_names(k) for k in ("model", "chip", "link")}}


def _history_file() -> str | None:
    try:
        from drills.progress.paths import data_dir

        return os.path.join(str(data_dir()), "calc_history")
    except Exception:  # noqa: BLE001 - history is a convenience, never a reason to fail
        return None


def _prompt(explain: bool, as_json: bool) -> None:
    from solver.errors import SolverInputError
    from solver.registry.calc import Evaluator

    try:
        import readline  # noqa: F401 - line editing and history at the prompt
    except ImportError:  # pragma: no cover - Windows without pyreadline
        readline = None
    hist = _history_file()
    if readline is not None and hist and os.path.exists(hist):
        try:
            readline.read_history_file(hist)
        except OSError:
            pass
    ev = Evaluator()
    interactive = sys.stdin.isatty()
    if interactive:
        emit("qkv calc · 70e9 * 2 B / 3.35 TB/s -> ms · help NAME · list · quit")
    while True:
        try:
            line = input("calc> " if interactive else "")
        except EOFError:
            break
        except KeyboardInterrupt:
            emit("")
            break
        line = line.strip()
        if not line:
            continue
        if line in ("quit", "exit", "q"):
            break
        if line in ("list", "help"):
            for x in listing():
                emit(x)
            continue
        if line.startswith("help "):
            try:
                for x in listing(line[5:].strip()):
                    emit(x)
            except SolverInputError as e:
                emit(f"error: {e}")
            continue
        ev.trace.calls.clear()
        ev.notes.clear()
        ev.steps = 0
        try:
            _, value = evaluate(line, ev)
            _print(ev, value, explain, as_json, line)
        except SolverInputError as e:
            emit(f"error: {e}")
        except (ArithmeticError, ValueError, OverflowError) as e:
            emit(f"error: {e}")
    if readline is not None and hist:
        try:
            os.makedirs(os.path.dirname(hist), exist_ok=True)
            readline.set_history_length(1000)
            readline.write_history_file(hist)
        except OSError:
            pass


class _CalcCommand(click.Command):
    """``qkv calc "-1 B -> GiB"``: an expression that starts with a minus sign is the expression,
    not an unknown option (a typo such as ``--jsn`` is still refused as an option)."""

    def parse_args(self, ctx, args):
        args = [(" " + a) if a[:1] == "-" and a[1:2] in "0123456789.( " and a[1:2] else a for a in args]
        return super().parse_args(ctx, args)


@click.command(cls=_CalcCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("expression", required=False)
@click.option("--explain", is_flag=True, help="Each formula's worked steps and conventions.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: value, unit, exact form, base units, calls.")
@click.option("--list", "show_list", is_flag=True, help="Every formula, preset, unit and function (with --json: "
                                                          "the registry as data).")
def calc(expression, explain, as_json, show_list):
    """Arithmetic with units over presets and every registered formula.

    \b
      qkv calc "70e9 * 2 B / 3.35 TB/s -> ms"
      qkv calc "llama-3-70b.params * 2 B -> GiB"
      qkv calc "kv_cache(llama-3-8b, seq=8k, batch=16, dtype=bf16) / h100.hbm"
      qkv calc "all_gather(2 MiB, ranks=4, link=45 GB/s, ring=bidirectional) -> us"
      qkv calc "6 * 70e9 * 2e12 FLOP / (1024 * h100.bf16 * 0.4) -> days"
      qkv calc "x = flops(llama-2-7b, seq=2048, batch=8); x / a100.bf16 -> ms"

    Without an expression: a prompt with history (help NAME, list, quit). Units: B, bit, FLOP,
    FLOP/s, s, ms, us, h, days, tokens, params; prefixes k M G T P (10³ⁿ) and Ki Mi Gi Ti (2¹⁰ⁿ).
    """
    from drills.output import emit_json

    if show_list:
        if expression:
            for line in listing(expression):
                emit(line)
            return
        if as_json:
            emit_json(registry_json())
            return
        for line in listing():
            emit(line)
        return
    if expression is None:
        _prompt(explain, as_json)
        return
    expression = expression.strip()
    ev, value = evaluate(expression)
    _print(ev, value, explain, as_json, expression)
