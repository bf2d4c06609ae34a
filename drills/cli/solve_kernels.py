"""``qkv solve attention|softmax|layernorm|rmsnorm|pe|rope``: one kernel, step by step.

Each command parses its arguments (:mod:`drills.cli.matrix_args`), checks the shapes so that an
error names the option to blame, runs the float kernel of :mod:`solver.kernels.numpy_ref` and, with
``--exact``, the exact one of :mod:`solver.kernels.sympy_ref`, then prints the trace in one place
(:func:`_finish`). numpy and sympy are imported inside the commands, never at module level.

``--json`` prints one object, the same keys for every command::

    {"command": "attention",
     "answer": <the asked result: number, vector or matrix>,
     "steps": {"<step name>": <value>, ...},       # in order; names as in solver.trace
     "formulas": {"<step name>": "<formula>", ...},
     "convention": {...},                           # every convention the answer depends on
     "exact": {"answer": ..., "steps": {...}}}      # only with --exact: SymPy strings

Numbers carry full double precision (with ``--exact``: the double nearest the exact value);
``--digits`` only rounds the text output.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import click

from drills.cli.help_groups import solve_command
from drills.cli.matrix_args import ArrayArg, parse_array, parse_matrix, parse_number, parse_vector
from drills.cli.numbers import Exact, Int
from drills.output import InputError, emit, emit_json

JSON_SHAPE = (
    "With --json: one object {command, answer, steps: {name: value}, formulas: {name: formula}, "
    "convention: {...}} (plus exact: {answer, steps} as SymPy strings with --exact); "
    "numbers in full double precision."
)


# --------------------------------------------------------------------------- plumbing


@dataclass
class _Job:
    """What a command computed: the float trace, maybe the exact one, and how to show it."""

    command: str
    title: str
    convention: dict[str, Any]
    float_steps: list[tuple[str, str, Any]]  # (name, formula, numpy value)
    exact_steps: list[tuple[str, Any]] | None = None  # (name, sympy value)
    given: list[tuple[str, Any]] = field(default_factory=list)  # (label, nested floats)
    answer: str = "output"


def _output_options(f: Callable) -> Callable:
    f = click.option("--json", "as_json", is_flag=True, help=JSON_SHAPE)(f)
    f = click.option(
        "--digits", type=Int(0, 17), default=4, show_default=True,
        help="Decimal places in the text output (JSON always has full precision).",
    )(f)
    f = click.option(
        "--exact", is_flag=True,
        help="Also compute exactly with SymPy (√, exp, sin, cos kept symbolic) and show the exact forms.",
    )(f)
    return f


_SOLVER_PARAMS = {  # solver argument name -> option on the command line
    "q": "--q", "k": "--k", "v": "--v", "x": "--x", "mask": "--mask", "scale": "--scale",
    "wq": "--wq", "wk": "--wk", "wv": "--wv", "wo": "--wo", "n_heads": "--heads", "heads": "--heads",
    "gamma": "--gamma", "beta": "--beta", "eps": "--eps", "temperature": "--temperature",
    "d_model": "--d-model", "dim": "--dim", "base": "--base", "layout": "--layout",
    "pairing": "--pairing", "positions": "--pos", "pos": "--pos",
}


def solver_call(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run a kernel; its SolverInputError becomes an InputError naming the option."""
    from drills.cli.lazy import float_guarded
    from solver.errors import SolverInputError

    try:
        return float_guarded(fn, *args, **kwargs)
    except SolverInputError as e:
        param = _SOLVER_PARAMS.get(e.param or "", f"--{e.param}" if e.param else None)
        message = str(e.args[0]) if e.args else "invalid input"
        full = re.match(r"row (\d+) of the mask blocks every key", message)
        if full:  # the solver counts from 0 and suggests a keyword the command line does not have
            row = int(full.group(1))
            message = (
                f"query row {row + 1} (counting from 1) may attend to no key: its softmax would be 0/0; "
                "every row of the mask needs at least one 1"
            )
        raise InputError(message, param) from None


def _flat_exact(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat_exact(v)]
    if getattr(value, "is_Matrix", False):
        return list(value)
    return [value]


def _shaped(flat: list, shape: tuple[int, ...]) -> Any:
    """A flat list back into nested lists of ``shape`` (row-major)."""
    if not shape:
        return flat[0]
    step = len(flat) // shape[0]
    return [_shaped(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _finish(job: _Job, *, exact: bool, digits: int, as_json: bool) -> None:
    """Print the job: the worked answer as text, or one JSON object."""
    import numpy as np

    names = [n for n, _, _ in job.float_steps]
    shapes = {n: np.shape(v) for n, _, v in job.float_steps}
    floats = {n: np.asarray(v, dtype=np.float64).tolist() for n, _, v in job.float_steps}
    formulas = {n: f for n, f, _ in job.float_steps}
    exact_values: dict[str, Any] = {}
    if job.exact_steps is not None:
        from solver.kernels.sympy_ref import to_floats

        for n, v in job.exact_steps:
            if n not in shapes:
                continue
            flat = _flat_exact(v)
            if len(flat) != int(np.prod(shapes[n], dtype=int)):
                raise RuntimeError(f"exact step {n!r} has {len(flat)} entries, float step has shape {shapes[n]}")
            exact_values[n] = _shaped(flat, shapes[n])
            floats[n] = _shaped([to_floats(x) for x in flat], shapes[n])
    if as_json:
        out: dict[str, Any] = {
            "command": job.command,
            "answer": floats[job.answer],
            "steps": {n: floats[n] for n in names},
            "formulas": formulas,
            "convention": job.convention,
        }
        if exact:
            strs = {n: _shaped([str(x) for x in _flat_exact(v)], shapes[n]) for n, v in exact_values.items()}
            out["exact"] = {"answer": strs.get(job.answer), "steps": strs}
        emit_json(out)
        return
    from drills.cli.render_steps import RenderedStep, render_trace

    steps = [RenderedStep(n, formulas[n], floats[n], exact_values.get(n)) for n in names]
    given = [RenderedStep(label, "", value) for label, value in job.given]
    conventions = {_key_text(k): _convention_text(v) for k, v in job.convention.items()}
    answer = next(s for s in steps if s.name == job.answer)
    emit(render_trace(steps, title=job.title, conventions=conventions, answer=answer, decimals=digits, given=given))


def _key_text(key: str) -> str:
    """A convention's key for people (``scale_rule`` -> ``scale rule``; d_model, d_k kept)."""
    for name in ("d_model", "d_k", "d_v"):
        key = key.replace(name, name.replace("_", "\0"))
    return key.replace("_", " ").replace("\0", "_")


def _convention_text(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


def _typed(a: ArrayArg) -> list:
    """Entries as short exact text for the "Given" block: 1, 0.5, 1/3."""

    def text(f: Fraction) -> str:
        if f.denominator == 1:
            return str(f.numerator)
        d = f.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        return repr(float(f)) if d == 1 and len(repr(float(f))) < 12 else f"{f.numerator}/{f.denominator}"

    rows = [[text(x) for x in r] for r in a.rows]
    return rows[0] if a.ndim == 1 else rows


def scalar_option(text: str | Fraction | None, param: str, default: str | None = None) -> Fraction | None:
    """An optional number option as an exact Fraction (already one when click's
    :class:`drills.cli.numbers.Number` read it); ``default`` (text) when it is not given."""
    if text is None:
        return None if default is None else parse_number(default, param)
    if isinstance(text, (Fraction, int)):
        return Fraction(text)
    return parse_number(text, param)


def pe_arguments(pos_text: str, d_model: int, dim: int | None, base_text: str | None):
    """``--pos``, ``--base`` and ``--dim`` of a PE command, checked: (pos, base, the dims asked)."""
    pos = scalar_option(pos_text, "--pos")
    base = base_option(base_text)
    if dim is not None and dim >= d_model:
        raise InputError(f"must be below --d-model = {d_model}, got {dim}", "--dim")
    return pos, base, [dim] if dim is not None else list(range(d_model))


def rope_arguments(x_text: str, pos_text: str, base_text: str | None):
    """``--x``, ``--pos`` and ``--base`` of a RoPE command, checked: (x, pos, base)."""
    x = parse_vector(x_text, "--x")
    if x.shape[0] % 2:
        raise InputError(f"RoPE rotates pairs: the length must be even, got {x.shape[0]}", "--x")
    return x, scalar_option(pos_text, "--pos"), base_option(base_text)


def base_option(text: str | None):
    """``--base`` of the wavelengths (PE) or frequencies (RoPE): a number > 1, default 10000."""
    base = scalar_option(text, "--base", "10000")
    if base <= 1:
        raise InputError(f"must be > 1, got {base}", "--base")
    return base


def eps_option(text: str | None, default: str):
    """``--eps`` of a norm: a number ≥ 0 (``default`` when not given)."""
    eps = scalar_option(text, "--eps", default)
    if eps < 0:
        raise InputError(f"must be ≥ 0, got {eps}", "--eps")
    return eps


def _dims(a: ArrayArg) -> str:
    return "×".join(str(s) for s in a.shape)


# --------------------------------------------------------------------------- attention

MASK_HELP = (
    "Attention mask, one row per query and one column per key: 1 = may attend, 0 = blocked "
    "(blocked scores become −∞ before the softmax). Same shape as Q·Kᵀ."
)


def parse_mask(text: str, n: int, m: int) -> ArrayArg:
    """--mask as an n×m matrix of 1 (may attend) and 0 (blocked)."""
    mask = parse_matrix(text, "--mask")
    bad = [x for row in mask.rows for x in row if x not in (0, 1)]
    if bad:
        raise InputError(f"entries must be 1 (may attend) or 0 (blocked), got {bad[0]}", "--mask")
    if mask.shape != (n, m):
        raise InputError(
            f"mask is {_dims(mask)} but the scores Q·Kᵀ are {n}×{m} (one row per query, one column per key)",
            "--mask",
        )
    return mask


#: The largest inputs ``--exact`` takes: SymPy keeps every √, exp, sin and cos symbolic, and its
#: time grows quickly with the size (a 24×24 attention takes about 7 s on a 2-core machine); these
#: sizes answer in well under a second beyond start-up, and are more than any hand calculation uses.
EXACT_LIMITS = {"softmax": 64, "pe": 128, "rope": 64, "attention": 16}
#: The widest PE vector printed whole (one coordinate of any width with --dim).
PE_VECTOR_LIMIT = 8192


def exact_limit(kind: str, got: int, param: str, what: str = "entries") -> None:
    """Refuse ``--exact`` beyond :data:`EXACT_LIMITS` in one line, before computing anything."""
    limit = EXACT_LIMITS[kind]
    if got > limit:
        raise InputError(f"--exact is for hand-sized inputs: at most {limit} {what} (got {got}); drop --exact "
                         "for the floating-point answer", param)


def exact_text_limit(kind: str, texts: dict[str, str | None], *, matrix: bool = True) -> None:
    """:func:`exact_limit` on the entries an option's text holds, counted before it is parsed
    (parsing itself takes seconds for tens of thousands of entries)."""
    limit = EXACT_LIMITS[kind]
    for param, text in texts.items():
        if text is not None:
            entries = len(_ENTRY.findall(text))
            if matrix and entries > limit * limit:
                raise InputError(f"--exact is for hand-sized inputs: at most {limit}×{limit} matrices "
                                 f"(got {entries} entries); drop --exact for the floating-point answer", param)
            if not matrix:
                exact_limit(kind, entries, param)


_ENTRY = re.compile(r"[^\s,;\[\]]+")


def _identity(d: int) -> list[list[int]]:
    return [[int(i == j) for j in range(d)] for i in range(d)]


@solve_command(
    help=(
        "Scaled dot-product attention, step by step: softmax(Q·Kᵀ·scale + M)·V, scale = 1/√d_k.\n\n"
        "Give --q, --k, --v (rows are tokens), or self-attention from embeddings: --x with "
        "--wq/--wk/--wv (default: the identity; Q = X·W_q, W is d_in×d_out) and optional --wo, "
        "--heads. On the command line --mask takes 1 = may attend and 0 = blocked. Matrices: "
        "\"1 0; 0 1\" or \"[[1,0],[0,1]]\"; entries may be fractions such as 1/2.\n\n"
        "Steps: [q, k, v], scores, scaled, [masked], weights, [concat], output. --exact takes matrices of "
        "at most 16 rows and 16 columns. " + JSON_SHAPE
    ),
    short_help="Scaled dot-product attention, step by step.",
)
@click.option("--q", "q_text", metavar="MATRIX", help="Queries Q (n×d_k).")
@click.option("--k", "k_text", metavar="MATRIX", help="Keys K (m×d_k).")
@click.option("--v", "v_text", metavar="MATRIX", help="Values V (m×d_v).")
@click.option("--x", "x_text", metavar="MATRIX", help="Embeddings X (n×d_model) for self-attention.")
@click.option("--wq", metavar="MATRIX", help="W_q (d_model×d_k·h), with --x; default identity.")
@click.option("--wk", metavar="MATRIX", help="W_k (d_model×d_k·h), with --x; default identity.")
@click.option("--wv", metavar="MATRIX", help="W_v (d_model×d_v·h), with --x; default identity.")
@click.option("--wo", metavar="MATRIX", help="W_o (d_v·h×d_out), with --x; default none.")
@click.option("--heads", "--n-heads", "heads", type=Int(1, 4096), default=1, show_default=True, help="Heads, with --x.")
@click.option("--mask", "mask_text", metavar="MATRIX", help=MASK_HELP)
@click.option("--causal", is_flag=True, help="Causal mask: query i sees keys j ≤ i (bottom-right aligned if m > n).")
@click.option("--scale", "scale_text", type=Exact(metavar="X"), metavar="X", help="Score scale instead of 1/√d_k (e.g. 1 or 1/2).")
@_output_options
def attention(q_text, k_text, v_text, x_text, wq, wk, wv, wo, heads, mask_text, causal, scale_text,
              exact, digits, as_json):
    if exact:
        exact_text_limit("attention", {"--q": q_text, "--k": k_text, "--v": v_text, "--x": x_text, "--wq": wq,
                                       "--wk": wk, "--wv": wv, "--wo": wo})
    scale = scalar_option(scale_text, "--scale")
    if x_text is not None:
        job = _self_attention(x_text, wq, wk, wv, wo, heads, mask_text, causal, scale, exact)
    else:
        for opt, val in (("--wq", wq), ("--wk", wk), ("--wv", wv), ("--wo", wo)):
            if val is not None:
                raise InputError("projections need the embeddings --x", opt)
        if heads != 1:
            raise InputError("--heads needs --x (give Q, K, V per head otherwise)", "--heads")
        job = _plain_attention(q_text, k_text, v_text, mask_text, causal, scale, exact)
    _finish(job, exact=exact, digits=digits, as_json=as_json)


def _attention_convention(scale: Fraction | None, d_k: int, mask: bool, causal: bool) -> dict[str, Any]:
    conv: dict[str, Any] = {
        "scale": float(scale) if scale is not None else 1 / d_k**0.5,
        "scale_rule": "given by --scale" if scale is not None else f"1/sqrt(d_k), d_k = {d_k}",
        "softmax_axis": "last: over the keys, one row per query",
        "layout": "rows are tokens: Q is n×d_k, K is m×d_k, V is m×d_v",
    }
    if mask:
        conv["mask"] = "1 = may attend, 0 = blocked (blocked scores set to -inf before the softmax)"
    if causal:
        conv["causal"] = "query i sees keys j <= i + (m - n) (bottom-right aligned; top-left = same when m = n)"
    return conv


def _plain_attention(q_text, k_text, v_text, mask_text, causal, scale, exact) -> _Job:
    missing = [opt for opt, t in (("--q", q_text), ("--k", k_text), ("--v", v_text)) if t is None]
    if missing:
        raise InputError("missing: give --q, --k and --v (or --x for self-attention)", missing[0])
    q, k, v = parse_matrix(q_text, "--q"), parse_matrix(k_text, "--k"), parse_matrix(v_text, "--v")
    if k.shape[1] != q.shape[1]:
        raise InputError(
            f"K is {_dims(k)} but Q is {_dims(q)}: Q and K need the same number of columns d_k", "--k"
        )
    if v.shape[0] != k.shape[0]:
        raise InputError(f"V is {_dims(v)} but K is {_dims(k)}: one value row per key row", "--v")
    n, m = q.shape[0], k.shape[0]
    if exact:
        exact_limit("attention", max(n, m, q.shape[1], v.shape[1]), "--q", "rows or columns in Q, K or V")
    mask = parse_mask(mask_text, n, m) if mask_text is not None else None

    from solver.kernels import numpy_ref

    np_mask = None if mask is None else mask.to_numpy().astype(bool)
    _, tr = solver_call(
        numpy_ref.attention, q.to_numpy(), k.to_numpy(), v.to_numpy(), np_mask,
        mask_convention="keep", causal=causal, scale=None if scale is None else float(scale), return_trace=True,
    )
    job = _Job(
        "attention",
        f"Scaled dot-product attention: Q {_dims(q)}, K {_dims(k)}, V {_dims(v)}",
        _attention_convention(scale, q.shape[1], mask is not None, causal),
        [(s.name, s.formula, s.value) for s in tr],
        given=[("Q", _typed(q)), ("K", _typed(k)), ("V", _typed(v))]
        + ([("mask (1 = may attend)", _typed(mask))] if mask is not None else []),
    )
    if exact:
        from solver.kernels import sympy_ref

        _, etr = solver_call(
            sympy_ref.attention, q.exact(), k.exact(), v.exact(),
            None if mask is None else [[int(x) for x in r] for r in mask.exact()],
            mask_convention="keep", causal=causal, scale=scale, return_trace=True,
        )
        job.exact_steps = [(s.name, s.value) for s in etr]
    return job


def _self_attention(x_text, wq, wk, wv, wo, heads, mask_text, causal, scale, exact) -> _Job:
    x = parse_matrix(x_text, "--x")
    n, d_model = x.shape
    ws: dict[str, ArrayArg | None] = {}
    for opt, text in (("--wq", wq), ("--wk", wk), ("--wv", wv)):
        if text is None:
            ws[opt] = None
            continue
        w = parse_matrix(text, opt)
        if w.shape[0] != d_model:
            raise InputError(
                f"W_{opt[3]} is {_dims(w)} but X has {d_model} columns: W needs d_model = {d_model} rows "
                "(Q = X·W, W is d_in×d_out)",
                opt,
            )
        ws[opt] = w
    cols = {opt: (w.shape[1] if w is not None else d_model) for opt, w in ws.items()}
    if cols["--wk"] != cols["--wq"]:
        raise InputError(f"W_k gives {cols['--wk']} columns but W_q gives {cols['--wq']}: Q and K need the same d_k",
                         "--wk")
    for opt in ("--wq", "--wv"):
        if cols[opt] % heads:
            raise InputError(f"{heads} heads do not divide the {cols[opt]} columns of W_{opt[3]}", "--heads")
    wo_arg = parse_matrix(wo, "--wo") if wo is not None else None
    if wo_arg is not None and wo_arg.shape[0] != cols["--wv"]:
        raise InputError(
            f"W_o is {_dims(wo_arg)} but the heads concatenate to {cols['--wv']} columns: W_o needs that many rows",
            "--wo",
        )
    if exact:
        exact_limit("attention", max(n, d_model, *cols.values(), wo_arg.shape[1] if wo_arg is not None else 0),
                    "--x", "rows or columns in X or the weights")
    mask = parse_mask(mask_text, n, n) if mask_text is not None else None

    def weights(kind: str) -> tuple[list, list]:
        w = ws[kind]
        return (w.floats(), w.exact()) if w is not None else (_identity(d_model), _identity(d_model))

    import numpy as np

    from solver.kernels import numpy_ref

    (wq_f, wq_e), (wk_f, wk_e), (wv_f, wv_e) = weights("--wq"), weights("--wk"), weights("--wv")
    np_mask = None if mask is None else mask.to_numpy().astype(bool)
    _, tr = solver_call(
        numpy_ref.multi_head_attention, x.to_numpy(), np.array(wq_f, float), np.array(wk_f, float),
        np.array(wv_f, float), None if wo_arg is None else wo_arg.to_numpy(), n_heads=heads, mask=np_mask,
        mask_convention="keep", causal=causal, scale=None if scale is None else float(scale), return_trace=True,
    )
    conv = _attention_convention(scale, cols["--wq"] // heads, mask is not None, causal)
    conv["layout"] = "rows are tokens: X is n×d_model"
    conv["projections"] = "Q = X·W_q, K = X·W_k, V = X·W_v (W is d_in×d_out); a missing W is the identity"
    conv["heads"] = heads
    if heads > 1:
        conv["head_split"] = "head i takes columns i·d_k … (i+1)·d_k − 1 of Q, K and V"
    given = [("X", _typed(x))] + [
        (f"W_{kind[3]}", _typed(ws[kind])) for kind in ("--wq", "--wk", "--wv") if ws[kind] is not None
    ]
    if wo_arg is not None:
        given.append(("W_o", _typed(wo_arg)))
    job = _Job(
        "attention",
        f"Self-attention from embeddings: X {_dims(x)}, {heads} head{'s' if heads > 1 else ''}",
        conv,
        [(s.name, s.formula, s.value) for s in tr],
        given=given,
    )
    if exact:
        if scale is not None:
            raise InputError("--exact with --x uses 1/√d_k; drop --scale or --exact", "--scale")
        from solver.kernels import sympy_ref

        _, etr = solver_call(
            sympy_ref.multi_head_attention, x.exact(), wq_e, wk_e, wv_e, None if wo_arg is None else wo_arg.exact(),
            n_heads=heads, mask=None if mask is None else [[int(v) for v in r] for r in mask.exact()],
            mask_convention="keep", causal=causal, return_trace=True,
        )
        job.exact_steps = [(s.name, s.value) for s in etr]
    return job


# --------------------------------------------------------------------------- softmax, norms


@solve_command(
    help="Softmax of a vector (or of each row of a matrix): exp(x/T − max) / Σ exp(x/T − max).\n\n"
    "Steps: [scaled], shifted, exp, sum, output. --exact takes at most 64 entries. " + JSON_SHAPE,
    short_help="Softmax of a vector (with temperature).",
)
@click.option("--x", "x_text", required=True, metavar="VECTOR", help='Scores, e.g. "1 2 3" or "[1,2,3]".')
@click.option("--temperature", "-t", "t_text", type=Exact(0, min_open=True, metavar="T"), metavar="T", help="Temperature T > 0 (default 1).")
@_output_options
def softmax(x_text, t_text, exact, digits, as_json):
    if exact:
        exact_text_limit("softmax", {"--x": x_text}, matrix=False)
    x = parse_array(x_text, "--x")
    if exact:
        exact_limit("softmax", math.prod(x.shape), "--x")
    t = scalar_option(t_text, "--temperature", "1")
    if t <= 0:
        raise InputError(f"must be > 0, got {t}", "--temperature")
    from solver.kernels import numpy_ref

    _, tr = solver_call(numpy_ref.softmax, x.to_numpy(), temperature=float(t), return_trace=True)
    job = _Job(
        "softmax",
        f"Softmax of x ({_dims(x)})" + (f" at temperature {t}" if t != 1 else ""),
        {"axis": "last (each row)", "temperature": float(t),
         "shift": "max x is subtracted before exp (same result, no overflow)"},
        [(s.name, s.formula, s.value) for s in tr],
        given=[("x", _typed(x))],
    )
    if exact:
        from solver.kernels import sympy_ref

        _, etr = solver_call(sympy_ref.softmax, x.exact(), temperature=t, return_trace=True)
        job.exact_steps = [(s.name, s.value) for s in etr]
    _finish(job, exact=exact, digits=digits, as_json=as_json)


def vector_option(text: str | None, param: str, d: int) -> ArrayArg | None:
    """An optional vector option (γ, β) that must have ``d`` entries, one per column of --x."""
    if text is None:
        return None
    v = parse_vector(text, param)
    if v.shape[0] != d:
        raise InputError(f"has {v.shape[0]} entries but each row of --x has {d}", param)
    return v


@solve_command(
    help="LayerNorm of a vector, or of each row of a matrix: γ·(x − μ)/√(σ² + ε) + β, with the "
    "biased variance (divide by d), as torch.nn.LayerNorm.\n\n"
    "Steps: mean, variance, normalised, output. " + JSON_SHAPE,
    short_help="LayerNorm of a vector or of each row of a matrix.",
)
@click.option("--x", "x_text", required=True, metavar="VECTOR|MATRIX", help="Input; a matrix is normalised row by row.")
@click.option("--gamma", metavar="VECTOR", help="Scale γ (default all ones).")
@click.option("--beta", metavar="VECTOR", help="Shift β (default all zeros).")
@click.option("--eps", "--epsilon", "eps_text", type=Exact(0, metavar="E"), metavar="E", help="ε added to the variance (default 1e-5, as PyTorch).")
@_output_options
def layernorm(x_text, gamma, beta, eps_text, exact, digits, as_json):
    x = parse_array(x_text, "--x")
    d = x.shape[-1]
    g, b = vector_option(gamma, "--gamma", d), vector_option(beta, "--beta", d)
    eps = eps_option(eps_text, "1e-5")
    from solver.kernels import numpy_ref

    _, tr = solver_call(
        numpy_ref.layer_norm, x.to_numpy(), None if g is None else g.to_numpy(), None if b is None else b.to_numpy(),
        eps=float(eps), return_trace=True,
    )
    job = _Job(
        "layernorm",
        f"LayerNorm of x ({_dims(x)})" + (", row by row" if x.ndim == 2 else ""),
        {"variance": "biased: divides by d (as torch.nn.LayerNorm)", "eps": float(eps),
         "axis": "last: each row over its features", "gamma": "given" if g else "ones",
         "beta": "given" if b else "zeros"},
        [(s.name, s.formula, s.value) for s in tr],
        given=[("x", _typed(x))] + ([("γ", _typed(g))] if g else []) + ([("β", _typed(b))] if b else []),
    )
    if exact:
        from solver.kernels import sympy_ref

        _, etr = solver_call(
            sympy_ref.layer_norm, x.exact(), None if g is None else g.exact(), None if b is None else b.exact(),
            eps=eps, return_trace=True,
        )
        job.exact_steps = [(s.name, s.value) for s in etr]
    _finish(job, exact=exact, digits=digits, as_json=as_json)


@solve_command(
    help="RMSNorm of a vector, or of each row of a matrix: γ·x/√(mean(x²) + ε) (no centring, no β).\n\n"
    "Steps: mean_square, rms, normalised, output. " + JSON_SHAPE,
    short_help="RMSNorm of a vector or of each row of a matrix.",
)
@click.option("--x", "x_text", required=True, metavar="VECTOR|MATRIX", help="Input; a matrix is normalised row by row.")
@click.option("--gamma", metavar="VECTOR", help="Scale γ (default all ones).")
@click.option("--eps", "--epsilon", "eps_text", type=Exact(0, metavar="E"), metavar="E",
              help="ε added to mean(x²) (default 1e-6; torch.nn.RMSNorm's default is the dtype's machine epsilon).")
@_output_options
def rmsnorm(x_text, gamma, eps_text, exact, digits, as_json):
    x = parse_array(x_text, "--x")
    g = vector_option(gamma, "--gamma", x.shape[-1])
    eps = eps_option(eps_text, "1e-6")
    from solver.kernels import numpy_ref

    _, tr = solver_call(
        numpy_ref.rms_norm, x.to_numpy(), None if g is None else g.to_numpy(), eps=float(eps), return_trace=True
    )
    job = _Job(
        "rmsnorm",
        f"RMSNorm of x ({_dims(x)})" + (", row by row" if x.ndim == 2 else ""),
        {"eps": float(eps), "axis": "last: each row over its features", "gamma": "given" if g else "ones"},
        [(s.name, s.formula, s.value) for s in tr],
        given=[("x", _typed(x))] + ([("γ", _typed(g))] if g else []),
    )
    if exact:
        from solver.kernels import sympy_ref

        _, etr = solver_call(
            sympy_ref.rms_norm, x.exact(), None if g is None else g.exact(), eps=eps, return_trace=True
        )
        job.exact_steps = [(s.name, s.value) for s in etr]
    _finish(job, exact=exact, digits=digits, as_json=as_json)


# --------------------------------------------------------------------------- positions

LAYOUT_HELP = (
    "interleaved: the paper's sin, cos, sin, cos, … (dim 2i = sin, 2i+1 = cos); "
    "concat: the paper's frequencies, all sines first, then all cosines; "
    "tensor2tensor: tensor2tensor's own d/2 timescales, inverse 10000^(−i/(d/2−1)), sines block then "
    "cosines block (The Illustrated Transformer's figures)."
)


@solve_command(
    help="Sinusoidal positional encoding (Vaswani et al.): PE(pos, 2i) = sin(pos/base^(2i/d)), "
    "PE(pos, 2i+1) = cos(pos/base^(2i/d)). One value with --dim, the whole vector otherwise.\n\n"
    "Steps: angle (the angle of each coordinate asked), output. The whole vector: d_model at most 8192 "
    "(128 with --exact); one coordinate (--dim) of any width. " + JSON_SHAPE,
    short_help="Sinusoidal positional encoding values.",
)
@click.option("--pos", "--position", "pos_text", type=Exact(metavar="P"), required=True, metavar="P", help="Position (0 = first token).")
@click.option("--d-model", "--d", "d_model", required=True, type=Int(1, 10**6, kind="size"), help="Model width d (4k = 4096).")
@click.option("--dim", "--i", "dim", type=Int(0, kind="size"), help="One coordinate 0 ≤ dim < d (default: all).")
@click.option("--layout", type=click.Choice(["interleaved", "concat", "tensor2tensor"]), default="interleaved",
              show_default=True, help=LAYOUT_HELP)
@click.option("--base", "base_text", type=Exact(1, min_open=True, metavar="B"), metavar="B", help="Base of the wavelengths (default 10000).")
@_output_options
def pe(pos_text, d_model, dim, layout, base_text, exact, digits, as_json):
    if dim is None and d_model > PE_VECTOR_LIMIT:
        raise InputError(f"the whole vector is shown for d_model up to {PE_VECTOR_LIMIT} (got {d_model}); "
                         "ask for one coordinate with --dim", "--d-model")
    if exact and dim is None:
        exact_limit("pe", d_model, "--d-model", "coordinates")
    pos, base, dims = pe_arguments(pos_text, d_model, dim, base_text)
    from solver.kernels import numpy_ref

    angles, values = [], []
    for j in dims:
        v, t = solver_call(numpy_ref.pe_value, float(pos), j, d_model, base=float(base), layout=layout,
                            return_trace=True)
        angles.append(t["angle"].value)
        values.append(v)
    shape = (lambda vals: vals[0]) if dim is not None else (lambda vals: vals)
    ftr = t  # the last trace carries the formulas
    job = _Job(
        "pe",
        f"Sinusoidal PE at position {pos}, d_model = {d_model}" + (f", dim {dim}" if dim is not None else ""),
        {"layout": layout, "base": float(base),
         "frequency": "angle = pos · base^(−i/(n−1)), n = ⌊d/2⌋ timescales (tensor2tensor)"
         if layout == "tensor2tensor" else "angle = pos / base^(2i/d_model), i = frequency index",
         "odd_d_model": "a zero column last (tensor2tensor)" if layout == "tensor2tensor"
         else "the last frequency has only its sine"},
        [("angle", ftr["angle"].formula if dim is not None else ("pos · base^(−i/(n−1)) for each coordinate" if layout == "tensor2tensor" else "pos / base^(2i/d) for each coordinate"),
          shape(angles)), ("output", ftr["output"].formula if dim is not None else "sin or cos of its angle",
                           shape(values))],
    )
    if exact:
        from solver.kernels import sympy_ref

        e_angles, e_values = [], []
        for j in dims:
            v, t = solver_call(sympy_ref.pe_value, pos, j, d_model, base=base, layout=layout, return_trace=True)
            e_angles.append(t["angle"].value)
            e_values.append(v)
        job.exact_steps = [("angle", e_angles), ("output", e_values)]
    _finish(job, exact=exact, digits=digits, as_json=as_json)


@solve_command(
    help="Rotary position embedding of one vector at position P: each pair (a, b) turns by P·θᵢ, "
    "θᵢ = base^(−2i/d): (a, b) → (a cos − b sin, a sin + b cos).\n\n"
    "--pairing interleaved pairs (x0, x1), (x2, x3), … (GPT-J, RoFormer); half pairs (xᵢ, x_{i+d/2}) "
    "(GPT-NeoX, LLaMA). Steps: angle, cos, sin, output. --exact takes at most 64 entries. " + JSON_SHAPE,
    short_help="Rotary position embedding of a vector.",
)
@click.option("--x", "x_text", required=True, metavar="VECTOR", help="The vector (even length d).")
@click.option("--pos", "--position", "pos_text", type=Exact(metavar="P"), required=True, metavar="P", help="Its position.")
@click.option("--pairing", type=click.Choice(["interleaved", "half"]), default="interleaved", show_default=True,
              help="Which coordinates form a rotation pair.")
@click.option("--base", "--theta", "--rope-theta", "base_text", type=Exact(1, min_open=True, metavar="B"), metavar="B",
              help="Base θ of the frequencies (default 10000; HuggingFace's rope_theta).")
@_output_options
def rope(x_text, pos_text, pairing, base_text, exact, digits, as_json):
    if exact:
        exact_text_limit("rope", {"--x": x_text}, matrix=False)
    x, pos, base = rope_arguments(x_text, pos_text, base_text)
    if exact:
        exact_limit("rope", x.shape[0], "--x")
    import numpy as np

    from solver.kernels import numpy_ref

    _, tr = solver_call(
        numpy_ref.rope, x.to_numpy()[None, :], np.array([float(pos)]), base=float(base), pairing=pairing,
        return_trace=True,
    )
    job = _Job(
        "rope",
        f"RoPE of x ({_dims(x)}) at position {pos}",
        {"pairing": pairing, "base": float(base), "theta": "theta_i = base^(-2i/d), i = 0 … d/2 − 1",
         "rotation": "(a, b) -> (a cos − b sin, a sin + b cos)"},
        [(s.name, s.formula, np.asarray(s.value)[0]) for s in tr],
        given=[("x", _typed(x))],
    )
    if exact:
        from solver.kernels import sympy_ref

        _, etr = solver_call(sympy_ref.rope, x.exact(), [pos], base=base, pairing=pairing, return_trace=True)
        job.exact_steps = [(s.name, s.value) for s in etr]
    _finish(job, exact=exact, digits=digits, as_json=as_json)
