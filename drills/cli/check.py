"""``qkv check``: check a hand computation, step by step, or a count.

Kernels (``attention``, ``softmax``, ``layernorm``, ``rmsnorm``, ``pe``, ``rope``): give the
inputs as for ``qkv solve`` (same parsing, :mod:`drills.cli.solve_kernels`) and the steps you
worked out (``--scores``, ``--scaled``, ...). Without any step option the command asks for
each step in turn ("QKᵀ = ?"), one matrix per line, on a terminal or from a pipe; an empty
line skips a step. The judging is :mod:`drills.check.steps`'s.

Counts (``params``, ``flops``, ``memory``, ``kv-cache``): ``--answer VALUE`` (``110M``,
``1.2G``, ``4 GiB``) and the configuration (``--preset`` and every ModelConfig flag).

Exit status: 0 when everything checked is right, 1 when something is wrong, 2 for input that
cannot be read (one line naming the argument). ``--json`` prints one object
``{"ok", "steps": [{"name", "given", "expected", "ok", "follow_through", "mistake", ...}],
"first_wrong"}``. numpy, sympy and torch are imported inside the commands only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from drills.cli.matrix_args import parse_array, parse_matrix
from drills.cli.model_flags import PARAMS_NEEDS, model_options, pop_model
from drills.cli.solve_kernels import (
    eps_option,
    parse_mask,
    pe_arguments,
    rope_arguments,
    scalar_option,
    solver_call,
    vector_option,
)
from drills.output import InputError, emit, emit_json

JSON_HELP = ('Print one JSON object: {"ok", "steps": [{"name", "given", "expected", "ok", "follow_through", '
             '"mistake", "tolerance", ...}], "first_wrong"}.')


@click.group()
def check() -> None:
    """Check a hand computation step by step (or a count).

    Give the inputs and the intermediate results you worked out; each step is marked right
    or wrong against the exact solver trace, the first wrong step is named with its likely
    mistake and its correct value. A later step that follows correctly from your own wrong
    step is marked "right given your previous step". Exit status 0: all right; 1: something
    wrong; 2: unreadable input.
    """


def _common(f: Callable) -> Callable:
    f = click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(f)
    return click.option("--digits", type=click.IntRange(0, 12), default=4, show_default=True,
                        help="Decimal places when showing correct values.")(f)


def _step_option(name: str, help_text: str, metavar: str = "M") -> Callable:
    return click.option(f"--{name.replace('_', '-')}", f"step_{name}", metavar=metavar, help=help_text)


# --------------------------------------------------------------------------- step input


def _gather(chain: Any, options: dict[str, str | None], kinds: dict[str, str], *, as_json: bool) -> dict[str, Any]:
    """The student's steps: from the options, or (none given) asked for one at a time."""
    from drills.check import ReadError, read_value

    def read(name: str, text: str) -> Any:
        import numpy as np

        kind = kinds.get(name, "matrix")
        typed = read_value(text, vector=kind == "vector", scalar=kind == "scalar")
        want = np.shape(chain.exact[name])
        if typed.values.shape != want and typed.values.size == int(np.prod(want, dtype=int)) and \
                [d for d in typed.values.shape if d != 1] == [d for d in want if d != 1]:
            # a column typed as a row (or the reverse): same entries, same order
            typed = type(typed)(typed.text, typed.values.reshape(want), typed.places.reshape(want))
        return typed

    given = {}
    texts = {n: t for n, t in options.items() if t is not None}
    for name in texts:
        if name not in chain.names:
            raise InputError(f"this computation has no {name} step (its steps: {', '.join(chain.names)})",
                             "--" + name.replace("_", "-"))
    if texts:
        for name, text in texts.items():
            try:
                given[name] = read(name, text)
            except ReadError as e:
                raise InputError(str(e), "--" + name.replace("_", "-")) from None
        return given
    click.echo("Type each step you worked out: a matrix as rows separated by ';' (0.5 0.5; 1 0), a vector "
               "as 1 2 3; an empty line skips a step.", err=as_json)
    for name in chain.names:
        label = chain.labels.get(name, name)
        while True:
            try:
                line = click.prompt(f"{label} = ?", default="", show_default=False, prompt_suffix=" ", err=as_json)
            except click.exceptions.Abort:  # end of input: the remaining steps are skipped
                return given
            if not line.strip():
                break
            try:
                given[name] = read(name, line)
                break
            except ReadError as e:
                click.echo(f"  cannot read that: {e} (an empty line skips this step)", err=True)
    return given


def _finish(chain: Any, given: dict[str, Any], *, title: str, digits: int, as_json: bool) -> None:
    from drills.check import check_chain

    if not given:
        raise InputError("nothing to check: give at least one step (" +
                         ", ".join("--" + n.replace("_", "-") for n in chain.names) + ")")
    report = check_chain(chain, given)
    if as_json:
        emit_json(report.to_json())
    else:
        emit(_report_text(report, title, digits))
    click.get_current_context().exit(0 if report.ok else 1)


def _cells(cells: list[tuple[int, ...]]) -> str:
    def one(c: tuple[int, ...]) -> str:
        return f"({', '.join(str(i + 1) for i in c)})" if c else ""

    shown = ", ".join(one(c) for c in cells[:6])
    return shown + (f" and {len(cells) - 6} more" if len(cells) > 6 else "")


def _value_lines(value: Any, digits: int) -> list[str]:
    import numpy as np

    from drills.cli.render_steps import render_value

    a = np.asarray(value, dtype=float)
    return render_value(a.tolist() if a.ndim else float(a), decimals=digits, indent="    ")


def _width() -> int:
    """The terminal's width (at most 100 columns; 80 when it is not a terminal, issue 38), less one."""
    import shutil

    return max(40, min(shutil.get_terminal_size((80, 24)).columns, 100) - 1)


def _wrapped(text: str, indent: int, width: int, hang: int = 2) -> list[str]:
    """``text`` (which starts with ``indent`` spaces) wrapped between words to ``width``, its
    continuation lines ``hang`` columns further in, never at column 0."""
    import textwrap

    pad = " " * indent
    return textwrap.wrap(text.strip(), width=width, initial_indent=pad, subsequent_indent=pad + " " * hang,
                         break_long_words=False, break_on_hyphens=False) or [pad]


def _step_lines(head: str, tolerance: str, width: int) -> list[str]:
    """A step's verdict line with its tolerance in brackets at the end; where the two do not fit
    on one line, the tolerance goes on its own line under the step's name, wrapped there."""
    tol = f"[{tolerance}]"
    if len(head) + 2 + len(tol) <= width:
        return [f"{head}  {tol}"]
    return _wrapped(head, 2, width, 4) + _wrapped(tol, 6, width, 1)


def _report_text(report: Any, title: str, digits: int, width: int | None = None) -> str:
    width = width or _width()
    lines = [title]
    if report.conventions:
        lines += _wrapped("; ".join(f"{k}: {v}" for k, v in report.conventions.items()), 2, width)
    lines.append("")
    nwidth = max(len(s.name) for s in report.steps)
    lwidth = max(len(s.label) for s in report.steps)
    for s in report.steps:
        if s.ok:
            verdict = s.note or "right"
            mark = "✓"
        else:
            where = f" at {_cells(s.wrong_cells)}" if s.wrong_cells and s.wrong_cells[0] else ""
            verdict = f"wrong{where}"
            mark = "✗"
        lines += _step_lines(f"  {mark} {s.name.ljust(nwidth)}  {s.label.ljust(lwidth)}  {verdict}", s.tolerance, width)
        if not s.ok and s.mistake and s is not report.first_wrong:
            lines += _wrapped(f"likely: {s.mistake}", 6, width, 8)
    fw = report.first_wrong
    lines.append("")
    if fw is None:
        n = len(report.steps)
        lines.append(f"All {n} step{'s' if n != 1 else ''} checked are right.")
        return "\n".join(lines)
    lines.append(f"First wrong step: {fw.name} ({fw.label})")
    lines.append(f"Likely mistake: {fw.mistake}" if fw.mistake else "Likely mistake: none of the usual ones matches")
    lines.append(f"Correct value of {fw.name}:")
    lines += _value_lines(fw.expected, digits)
    lines.append("You gave:")
    lines += _value_lines(fw.given.values, digits)
    later = [s for s in report.steps if s.follow_through]
    if later:
        lines.append("Right given your previous step: " + ", ".join(s.name for s in later)
                     + " (judged against what follows from your own earlier values).")
    wrong = sum(not s.ok for s in report.steps)
    lines.append(f"{wrong} of {len(report.steps)} steps wrong.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- attention


@check.command()
@click.option("--q", "q_text", required=True, metavar="MATRIX", help="Queries Q (n×d_k), rows are tokens.")
@click.option("--k", "k_text", required=True, metavar="MATRIX", help="Keys K (m×d_k).")
@click.option("--v", "v_text", required=True, metavar="MATRIX", help="Values V (m×d_v).")
@click.option("--mask", "mask_text", metavar="MATRIX", help="1 = may attend, 0 = blocked (n×m).")
@click.option("--causal", is_flag=True, help="Causal mask: query i sees keys j ≤ i.")
@click.option("--scale", "scale_text", metavar="X", help="Score scale instead of 1/√d_k.")
@_step_option("scores", "Your Q·Kᵀ.")
@_step_option("scaled", "Your Q·Kᵀ/√d_k.")
@_step_option("masked", "Your scaled scores plus the mask (−inf where blocked); with --mask/--causal.")
@_step_option("weights", "Your softmax of each row.")
@_step_option("output", "Your weights·V.")
@_common
def attention(q_text, k_text, v_text, mask_text, causal, scale_text, digits, as_json, **steps):
    """Check softmax(Q·Kᵀ/√d_k + M)·V step by step.

    Matrices as "1 0; 0 1; 1 1" or "[[1,0],[0,1],[1,1]]"; your steps may hold fractions,
    sqrt(2)/2 or -inf. Example:

      qkv check attention --q "1 0; 0 1; 1 1" --k "1 0; 0 1; 1 1" --v "1 0; 0 1; 0.5 0.5"
      --scaled "0.707 0 0.707; 0 0.707 0.707; 0.707 0.707 1.414"
    """
    q, k, v = parse_matrix(q_text, "--q"), parse_matrix(k_text, "--k"), parse_matrix(v_text, "--v")
    if k.shape[1] != q.shape[1]:
        raise InputError(f"K has {k.shape[1]} columns but Q has {q.shape[1]}: they need the same d_k", "--k")
    if v.shape[0] != k.shape[0]:
        raise InputError(f"V has {v.shape[0]} rows but K has {k.shape[0]}: one value row per key", "--v")
    if mask_text is not None and causal:
        raise InputError("give --mask or --causal, not both", "--mask")
    mask = parse_mask(mask_text, q.shape[0], k.shape[0]) if mask_text is not None else None
    scale = scalar_option(scale_text, "--scale")
    from drills.check import attention_chain
    from solver.kernels import numpy_ref

    np_mask = None if mask is None else mask.to_numpy().astype(bool)
    sc = None if scale is None else float(scale)
    solver_call(numpy_ref.attention, q.to_numpy(), k.to_numpy(), v.to_numpy(), np_mask, causal=causal, scale=sc)
    chain = attention_chain(q.to_numpy(), k.to_numpy(), v.to_numpy(), np_mask, causal=causal, scale=sc)
    given = _gather(chain, _steps_of(steps), {}, as_json=as_json)
    title = f"Checking attention: Q {_dims(q.shape)}, K {_dims(k.shape)}, V {_dims(v.shape)}"
    _finish(chain, given, title=title, digits=digits, as_json=as_json)


def _steps_of(kwargs: dict[str, Any]) -> dict[str, str | None]:
    return {k.removeprefix("step_"): v for k, v in kwargs.items() if k.startswith("step_")}


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(str(s) for s in shape)


# --------------------------------------------------------------------------- softmax, norms


@check.command()
@click.option("--x", "x_text", required=True, metavar="VECTOR", help="Scores x (a vector, or a matrix row by row).")
@click.option("--temperature", "t_text", metavar="T", help="Temperature T > 0 (default 1).")
@_step_option("scaled", "Your x/T (with a temperature).", "V")
@_step_option("shifted", "Your x − max x.", "V")
@_step_option("exp", "Your exponentials (shifted or not).", "V")
@_step_option("sum", "Your sum of the exponentials.", "X")
@_step_option("output", "Your softmax.", "V")
@_common
def softmax(x_text, t_text, digits, as_json, **steps):
    """Check softmax(x/T) step by step: [scaled], shifted, exp, sum, output.

    exp and sum are accepted with or without subtracting max x first (the same softmax).
    """
    x = parse_array(x_text, "--x")
    t = scalar_option(t_text, "--temperature", "1")
    if t <= 0:
        raise InputError(f"must be > 0, got {t}", "--temperature")
    from drills.check import softmax_chain
    from solver.kernels import numpy_ref

    solver_call(numpy_ref.softmax, x.to_numpy(), temperature=float(t))
    chain = softmax_chain(x.to_numpy(), float(t))
    given = _gather(chain, _steps_of(steps), _kinds(chain), as_json=as_json)
    _finish(chain, given, title=f"Checking softmax of x ({_dims(x.shape)})" + (f" at T = {t}" if t != 1 else ""),
            digits=digits, as_json=as_json)


def _kinds(chain: Any, ndim: int = 0) -> dict[str, str]:
    """How each step is typed, from the shape of its exact value."""
    import numpy as np

    kinds = {0: "scalar", 1: "vector"}
    return {n: kinds.get(np.ndim(chain.exact[n]), "matrix") for n in chain.names}


def _flatten_vector_chain(chain: Any) -> Any:
    """For a vector input, present reductions (kept as (1,) arrays) as plain numbers."""
    import numpy as np

    for n, v in list(chain.exact.items()):
        a = np.asarray(v)
        if a.shape == (1,) and n in ("sum", "mean", "variance", "mean_square", "rms"):
            chain.exact[n] = a.reshape(())
    return chain


@check.command()
@click.option("--x", "x_text", required=True, metavar="VECTOR|MATRIX", help="Input (a matrix: row by row).")
@click.option("--gamma", metavar="VECTOR", help="Scale γ (default ones).")
@click.option("--beta", metavar="VECTOR", help="Shift β (default zeros).")
@click.option("--eps", "eps_text", metavar="E", help="ε (default 1e-5, as PyTorch).")
@_step_option("mean", "Your mean μ (one per row).", "X")
@_step_option("variance", "Your variance σ² (biased: divide by d).", "X")
@_step_option("normalised", "Your (x − μ)/√(σ² + ε).", "V")
@_step_option("output", "Your γ·x̂ + β.", "V")
@_common
def layernorm(x_text, gamma, beta, eps_text, digits, as_json, **steps):
    """Check LayerNorm step by step: mean, variance, normalised, output."""
    x = parse_array(x_text, "--x")
    d = x.shape[-1]
    g, b = vector_option(gamma, "--gamma", d), vector_option(beta, "--beta", d)
    eps = eps_option(eps_text, "1e-5")
    from drills.check import layernorm_chain
    from solver.kernels import numpy_ref

    xs, gs, bs = x.to_numpy(), None if g is None else g.to_numpy(), None if b is None else b.to_numpy()
    solver_call(numpy_ref.layer_norm, xs, gs, bs, eps=float(eps))
    chain = _flatten_vector_chain(layernorm_chain(xs, gs, bs, float(eps)))
    given = _gather(chain, _steps_of(steps), _kinds(chain), as_json=as_json)
    _finish(chain, given, title=f"Checking LayerNorm of x ({_dims(x.shape)})", digits=digits, as_json=as_json)


@check.command()
@click.option("--x", "x_text", required=True, metavar="VECTOR|MATRIX", help="Input (a matrix: row by row).")
@click.option("--gamma", metavar="VECTOR", help="Scale γ (default ones).")
@click.option("--eps", "eps_text", metavar="E", help="ε (default 1e-6).")
@_step_option("mean_square", "Your mean of x².", "X")
@_step_option("rms", "Your √(mean(x²) + ε).", "X")
@_step_option("normalised", "Your x / rms.", "V")
@_step_option("output", "Your γ·x/rms.", "V")
@_common
def rmsnorm(x_text, gamma, eps_text, digits, as_json, **steps):
    """Check RMSNorm step by step: mean_square, rms, normalised, output."""
    x = parse_array(x_text, "--x")
    g = vector_option(gamma, "--gamma", x.shape[-1])
    eps = eps_option(eps_text, "1e-6")
    from drills.check import rmsnorm_chain
    from solver.kernels import numpy_ref

    xs, gs = x.to_numpy(), None if g is None else g.to_numpy()
    solver_call(numpy_ref.rms_norm, xs, gs, eps=float(eps))
    chain = _flatten_vector_chain(rmsnorm_chain(xs, gs, float(eps)))
    given = _gather(chain, _steps_of(steps), _kinds(chain), as_json=as_json)
    _finish(chain, given, title=f"Checking RMSNorm of x ({_dims(x.shape)})", digits=digits, as_json=as_json)


# --------------------------------------------------------------------------- positions


@check.command()
@click.option("--pos", "pos_text", required=True, metavar="P", help="Position (0 = first token).")
@click.option("--d-model", "d_model", required=True, type=click.IntRange(1), help="Model width d.")
@click.option("--dim", type=click.IntRange(0), help="One coordinate (default: all of them).")
@click.option("--layout", type=click.Choice(["interleaved", "concat"]), default="interleaved", show_default=True)
@click.option("--base", "base_text", metavar="B", help="Base (default 10000).")
@_step_option("angle", "Your angle pos/base^(2i/d) (a vector over the dims without --dim).", "X")
@_step_option("output", "Your PE value(s).", "X")
@_common
def pe(pos_text, d_model, dim, layout, base_text, digits, as_json, **steps):
    """Check a sinusoidal positional encoding: angle, output."""
    pos, base, dims = pe_arguments(pos_text, d_model, dim, base_text)
    from drills.check import pe_chain
    from solver.kernels import numpy_ref

    solver_call(numpy_ref.pe_value, float(pos), dims[0], d_model, base=float(base), layout=layout)
    chain = pe_chain(float(pos), d_model, dims, base=float(base), layout=layout)
    given = _gather(chain, _steps_of(steps), _kinds(chain), as_json=as_json)
    where = f"dim {dim}" if dim is not None else f"all {d_model} dims"
    _finish(chain, given, title=f"Checking sinusoidal PE at position {pos}, d_model = {d_model}, {where}",
            digits=digits, as_json=as_json)


@check.command()
@click.option("--x", "x_text", required=True, metavar="VECTOR", help="The vector (even length).")
@click.option("--pos", "pos_text", required=True, metavar="P", help="Its position.")
@click.option("--pairing", type=click.Choice(["interleaved", "half"]), default="interleaved", show_default=True)
@click.option("--base", "base_text", metavar="B", help="Base (default 10000).")
@_step_option("angle", "Your angles p·θᵢ (one per pair).", "V")
@_step_option("cos", "Your cosines.", "V")
@_step_option("sin", "Your sines.", "V")
@_step_option("output", "Your rotated vector.", "V")
@_common
def rope(x_text, pos_text, pairing, base_text, digits, as_json, **steps):
    """Check a rotary position embedding: angle, cos, sin, output."""
    x, pos, base = rope_arguments(x_text, pos_text, base_text)
    import numpy as np

    from drills.check import rope_chain
    from solver.kernels import numpy_ref

    solver_call(numpy_ref.rope, x.to_numpy()[None, :], np.array([float(pos)]), base=float(base), pairing=pairing)
    chain = rope_chain(x.to_numpy(), float(pos), base=float(base), pairing=pairing)
    given = _gather(chain, _steps_of(steps), _kinds(chain), as_json=as_json)
    _finish(chain, given, title=f"Checking RoPE of x ({_dims(x.shape)}) at position {pos}", digits=digits,
            as_json=as_json)


# --------------------------------------------------------------------------- counts


def _answer(text: str, dimension: str) -> Any:
    """The answer parsed by :mod:`drills.answers`; a unit of another kind is refused."""
    from drills.answers import AnswerParseError
    from drills.answers import parse_number as parse_answer

    try:
        p = parse_answer(text)
    except AnswerParseError as e:
        raise InputError(str(e), "--answer") from None
    if p.dimension and p.dimension != dimension and not (p.dimension, dimension) == ("bits", "bytes"):
        want = f"in {dimension}" if dimension else "a plain count (no unit)"
        raise InputError(f"{text!r} is in {p.dimension}; expected {want}", "--answer")
    return p


def _count_finish(result: Any, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_json())
    else:
        width = _width()  # issue 38: wrapped between words, as the step checks are

        def say(text: str, indent: int, hang: int) -> None:
            emit("\n".join(_wrapped(" " * indent + text, indent, width, hang)))

        say(("✓ " if result.ok else "✗ ") + result.message(), 0, 2)
        say(f"tolerance: {result.tolerance}", 2, 2)
        shown = {e.text for e in result.explanations[:1]}
        for e in result.explanations[1:3]:
            if not e.equals and e.text not in shown:
                shown.add(e.text)
                say(f"also of that size: {e.text}", 2, 2)
        if result.note:
            say(f"note: {result.note}", 2, 2)
    click.get_current_context().exit(0 if result.ok else 1)


_ANSWER = click.option("--answer", "answer_text", required=True, metavar="VALUE",
                       help="Your figure: 110M, 1.2G, 109,482,240, 4 GiB, 2^20 ...")


@check.command()
@_ANSWER
@model_options
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def params(answer_text, as_json, **kw):
    """Check a parameter count, e.g. qkv check params --preset bert-base --answer 110M."""
    from drills.check import breakdown_conventions, check_count, stated_sig_figs
    from solver.counting import param_breakdown

    p = _answer(answer_text, "")
    spec = pop_model(kw)
    cfg = spec.config(PARAMS_NEEDS)
    pb = param_breakdown(cfg)
    note = None
    if spec.preset and not spec.given:
        from solver.counting.presets import get_preset

        pr = get_preset(spec.preset)
        if pr.published and p.value == pr.published:
            note = f"{pr.published_text} is the published figure ({pr.source}): {pr.note}"
    result = check_count("params", answer_text.strip(), p.value, pb.total, "parameters", stated_sig_figs(p),
                         breakdown_conventions(pb), note)
    _count_finish(result, as_json)


@check.command()
@_ANSWER
@model_options
@click.option("--batch", type=click.IntRange(min=1), required=True, help="Sequences B.")
@click.option("--seq", type=click.IntRange(min=1), required=True, help="Tokens n per sequence.")
@click.option("--mode", type=click.Choice(["forward", "decode", "train"]), default="forward", show_default=True)
@click.option("--convention", type=click.Choice(["flops", "macs"]), default="flops", show_default=True,
              help="flops: 2 per multiply-add; macs: 1.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def flops(answer_text, batch, seq, mode, convention, as_json, **kw):
    """Check a matmul FLOP count (as qkv solve flops counts it)."""
    from drills.check import check_count, flop_conventions, stated_sig_figs
    from solver.counting import matmul_flops

    p = _answer(answer_text, "FLOPs")
    cfg = pop_model(kw).config(PARAMS_NEEDS)
    rep = solver_call(matmul_flops, cfg, batch, seq, mode, convention)
    unit = "FLOPs" if convention == "flops" else "multiply-adds"
    result = check_count("flops", answer_text.strip(), p.value, rep.total, unit, stated_sig_figs(p),
                         flop_conventions(rep))
    _count_finish(result, as_json)


def _bytes_check(answer_text: str, rep: Any, dtype: str | None, as_json: bool, **kv: Any) -> None:
    from drills.check import check_bytes_in_bits, check_count, memory_conventions, stated_sig_figs
    from solver.units import dtype_bytes

    p = _answer(answer_text, "bytes")  # bits too: judged as a unit slip, with the ÷ 8 shown
    per = float(dtype_bytes(dtype)) if dtype else None
    conv = memory_conventions(rep.bytes, dtype_bytes=per, **kv)
    note = None if p.dimension else "a number without a unit is read as bytes"
    if p.dimension == "bits":
        result = check_bytes_in_bits(rep.what, answer_text.strip(), p.value, p.unit, rep.bytes, stated_sig_figs(p),
                                     conv, note)
    else:
        result = check_count(rep.what, answer_text.strip(), p.value, rep.bytes, "bytes", stated_sig_figs(p), conv,
                             note)
    _count_finish(result, as_json)


@check.command()
@_ANSWER
@model_options
@click.option("--what", type=click.Choice(["weights", "kv-cache", "attention-scores", "training"]),
              default="weights", show_default=True)
@click.option("--dtype", default=None, help="fp32, fp16, bf16, fp8, int8, int4.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Sequences B.")
@click.option("--seq", type=click.IntRange(min=1), default=None, help="Tokens n.")
@click.option("--precision", type=click.Choice(["mixed", "fp32"]), default="mixed", show_default=True,
              help="Training: mixed (fp16 + fp32 master) or fp32 Adam.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def memory(answer_text, what, dtype, batch, seq, precision, as_json, **kw):
    """Check a memory figure in bytes (answer as 4 GiB, 4.29 GB, 2^32 bytes; Gb and bits are bits)."""
    from solver import counting as counts

    spec = pop_model(kw)
    if what == "kv-cache":
        _kv(answer_text, spec, batch, seq, dtype, as_json)
        return
    if what == "attention-scores":
        n_heads = spec.config(PARAMS_NEEDS).n_heads if spec.has_base else spec.given.get("n_heads")
        miss = [m for m, v in (("n-heads", n_heads), ("batch", batch), ("seq", seq), ("dtype", dtype)) if v is None]
        if miss:
            raise InputError(f"attention scores need {', '.join('--' + m for m in miss)}", "--" + miss[0])
        rep = solver_call(counts.attention_scores_report, batch, n_heads, seq, dtype)
    else:
        cfg = spec.config(PARAMS_NEEDS)
        if what == "weights":
            if dtype is None:
                raise InputError("needs --dtype (fp32, fp16, bf16, fp8, int8, int4)", "--dtype")
            rep = solver_call(counts.weights_report, cfg, dtype)
        else:
            rep = solver_call(counts.training_report, cfg, precision)
    _bytes_check(answer_text, rep, dtype if what != "training" else None, as_json)


def _kv(answer_text, spec, batch, seq, dtype, as_json) -> None:
    """The KV cache of the one ModelConfig of any route (as ``qkv solve memory --what kv-cache``)."""
    from drills.cli.solve_counts import kv_report

    rep, cfg = kv_report(spec, batch, seq, dtype, None, False)
    _bytes_check(answer_text, rep, dtype, as_json, kv=True, n_heads=cfg.n_heads, n_kv_heads=cfg.kv_heads)


@check.command("kv-cache")
@_ANSWER
@model_options
@click.option("--dtype", default=None, help="fp32, fp16, bf16, fp8, int8, int4.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Sequences B.")
@click.option("--seq", type=click.IntRange(min=1), default=None, help="Cached tokens n.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def kv_cache(answer_text, dtype, batch, seq, as_json, **kw):
    """Check a KV-cache size: 2 × layers × batch × seq × KV heads × head size × bytes."""
    _kv(answer_text, pop_model(kw), batch, seq, dtype, as_json)
