"""Named computations that a curated item calls for its answer (the TOML never types a key).

A curated item writes ``answer = { compute = "attention", q = [...], k = [...], v = [...],
part = "output" }``; :func:`run` looks the name up in :data:`COMPUTATIONS`, calls the solver,
and returns a :class:`Computed`: the value, the worked-solution lines (from the solver's step
traces and formula breakdowns), and the typical mistakes recomputed with the mistake applied.

Every computation here delegates the arithmetic to ``solver`` (``sympy_ref`` for the small
by-hand kernels, ``numpy_ref`` for seeded random demos and tables, ``counting`` for
parameters, ``units`` and ``masks`` for conventions). Solver modules are imported inside the
function that needs them (``qkv --help`` stays fast; torch is never imported here). An item that
names a computation this module does not have raises :class:`SolverMissing` naming it.

Conventions are arguments, never implicit: ``convention = "flops"`` (2 per multiply-add) or
``"macs"``; byte units ``"bytes" | "GB" | "GiB"``; masks ``"keep"`` (1 = may attend) or
``"block"`` (1 = blocked).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from question_bank.problem import Wrong
from solver.errors import SolverInputError


class SolverMissing(RuntimeError):
    """A computation needs a solver function that is not (yet) available."""

    def __init__(self, function: str):
        super().__init__(f"solver function {function} is not available")
        self.function = function


@dataclass(frozen=True)
class Line:
    """One line of a worked solution, in Markdown (with LaTeX) and in plain Unicode."""

    md: str
    text: str


@dataclass
class Computed:
    """``value``: an ``int`` (kind ``integer``), a ``float`` (``number``) or rows of floats
    (``matrix``). ``steps`` make the worked solution; ``wrong`` the misconceptions."""

    value: Any
    kind: str
    steps: list[Line] = field(default_factory=list)
    wrong: list[Wrong] = field(default_factory=list)
    unit: str = ""

    def solution_md(self) -> str:
        return "\n\n".join(s.md for s in self.steps)

    def solution_text(self) -> str:
        return "\n".join(s.text for s in self.steps)


# --------------------------------------------------------------------------- formatting


def fmt(x: Any, decimals: int = 4) -> str:
    """An integer with thousands separators, a float rounded for display."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    x = float(x)
    if x != 0 and (abs(x) >= 1e7 or abs(x) < 10 ** -decimals):
        return f"{x:.{decimals}g}"
    return f"{x:.{decimals}f}"


def fmt_matrix(rows: Any, decimals: int = 4) -> str:
    return "[" + ", ".join("[" + ", ".join(fmt(float(v), decimals) for v in r) + "]" for r in rows) + "]"


def _rows(x: Any) -> tuple[tuple[float, ...], ...]:
    """A SymPy Matrix, NumPy array or nested list → rows of floats (exact values evaluated)."""
    if hasattr(x, "is_Matrix") and getattr(x, "is_Matrix", False):
        from solver.kernels import sympy_ref

        x = sympy_ref.to_floats(x)
    elif hasattr(x, "tolist"):
        x = x.tolist()
    if x and not isinstance(x[0], (list, tuple)):
        x = [x]
    return tuple(tuple(float(v) for v in r) for r in x)


def _line(md: str, text: str | None = None) -> Line:
    return Line(md, md if text is None else text)


def _plain(formula: str) -> str:
    """A solver trace's plain formula for the terminal: a lone ``d_k`` reads as dₖ."""
    return re.sub(r"(?<![\w])d_k(?![\w])", "dₖ", formula)


def _matrix_line(label_md: str, label_text: str, rows: Any, decimals: int, whole: bool = True) -> Line:
    """``label = matrix``: a LaTeX ``bmatrix`` and, for the terminal, an aligned matrix with
    the label on its middle line (one row stays on one line). ``whole``: a matrix of whole
    numbers is shown without decimals."""
    from question_bank.render import latex_matrix, text_equation

    r = _rows(rows)
    d: int | None = None if whole and all(x.is_integer() for row in r for x in row) else decimals
    return Line(f"{label_md} = ${latex_matrix(r, d)}$", text_equation(label_text, r, decimals=d))


def matrix_step(label: str, rows: Any, decimals: int = 4, whole: bool = True) -> Line:
    """A worked-solution line ``label = matrix`` (the label is plain text)."""
    return _matrix_line(label, label, rows, decimals, whole)


def _trace_lines(trace: Any, decimals: int = 4, replace: dict[str, str] | None = None) -> list[Line]:
    """One line per step of a solver trace: its formula and its value (a matrix aligned).
    ``replace``: substitutions in the formulas (e.g. ``S''`` → ``S'`` when nothing was masked)."""
    out = []
    for s in trace:
        v = s.value
        formula, tex = s.formula, s.latex
        for a, b in (replace or {}).items():
            formula, tex = formula.replace(a, b), (tex or "").replace(a, b)
        latex = f"${tex}$" if tex else formula
        text = _plain(formula)
        if isinstance(v, list):
            shown = "; ".join(fmt_matrix(_rows(m), decimals) for m in v)
        elif getattr(v, "is_Matrix", False) or hasattr(v, "shape") and getattr(v, "ndim", 0) > 0:
            out.append(_matrix_line(f"**{s.name}**: {latex}", f"{s.name}: {text}", v, decimals))
            continue
        else:
            shown = fmt(float(v), decimals)
        out.append(Line(f"**{s.name}**: {latex} = `{shown}`", f"{s.name}: {text} = {shown}"))
    return out


# --------------------------------------------------------------------------- attention family


ATTENTION_PARTS = ("scores", "scaled", "masked", "weights", "output")


def _exact_attention(q, k, v, mask, mask_convention, causal, scale):
    from solver.kernels import sympy_ref

    sc = None if scale is None else sympy_ref.exact(scale)
    return sympy_ref.attention(q, k, v, mask, mask_convention=mask_convention, causal=causal, scale=sc,
                               return_trace=True)


def attention(q: Any, k: Any, v: Any, *, part: str = "output", mask: Any = None, mask_convention: str = "keep",
              causal: bool = False, scale: Any = None) -> Computed:
    """softmax(QKᵀ/√d_k + M)V, exactly (``solver.kernels.sympy_ref.attention``); ``part`` picks the step."""
    if part not in ATTENTION_PARTS:
        raise SolverInputError(f"part must be one of {ATTENTION_PARTS}", param="part")
    (_, _), tr = _exact_attention(q, k, v, mask, mask_convention, causal, scale)
    if part == "masked" and "masked" not in tr:
        part = "scaled"
    value = _rows(tr[part].value)
    # no mask step: the weights are the softmax of the scaled scores S' (the trace names S'')
    steps = _trace_lines(tr, replace=None if "masked" in tr else {"(S'')": "(S')"})
    upto = [n for n in tr.names()]
    steps = steps[: upto.index(part) + 1]
    wrong: list[Wrong] = []
    if part in ("scaled", "masked", "weights", "output"):
        d_k = len(q[0])
        for wid, label, fb, sc in (
            ("no_sqrt_dk_scaling", "forgot to divide by √dₖ",
             "This is the result without dividing the scores by √dₖ.", 1),
            ("divided_by_dk", "divided by dₖ instead of √dₖ",
             "This is what you get dividing the scores by dₖ instead of √dₖ.", f"1/{d_k}"),
        ):
            if scale is not None:
                break
            (_, _), t2 = _exact_attention(q, k, v, mask, mask_convention, causal, sc)
            wrong.append(Wrong(wid, label, fb, _rows(t2[part if part in t2 else "scaled"].value)))
    if part in ("weights", "output") and mask is None and not causal:
        from solver.kernels import sympy_ref

        scaled = tr["scaled"].value
        w_cols = sympy_ref.softmax(scaled, axis=0)
        val = w_cols if part == "weights" else w_cols * sympy_ref.matrix(v)
        wrong.append(Wrong("softmax_wrong_axis", "softmax over the wrong axis (columns)",
                           "This is the result of normalising each column (axis 0) instead of each row.",
                           _rows(val)))
    return Computed(value, "matrix", steps, wrong)


def softmax(x: Any, *, temperature: Any = 1, part: str = "output") -> Computed:
    """softmax(x/T) (``solver.kernels.sympy_ref.softmax``); ``part`` ``output`` or ``max`` (largest weight)."""
    from solver.kernels import sympy_ref

    out, tr = sympy_ref.softmax(x, temperature=sympy_ref.exact(temperature), return_trace=True)
    rows = _rows(out)
    steps = _trace_lines(tr)
    if part == "max":
        value = max(max(r) for r in rows)
        steps.append(_line(f"largest weight = {fmt(value)}"))
        return Computed(value, "number", steps)
    return Computed(rows, "matrix", steps)


def layer_norm(x: Any, *, gamma: Any = None, beta: Any = None, eps: Any = "1e-5", part: str = "output") -> Computed:
    """γ·(x − μ)/√(σ² + ε) + β (``solver.kernels.sympy_ref.layer_norm``); ``part`` a step name."""
    from solver.kernels import sympy_ref

    out, tr = sympy_ref.layer_norm(x, gamma, beta, eps=sympy_ref.exact(eps), return_trace=True)
    names = tr.names()
    steps = _trace_lines(tr)[: names.index(part) + 1]
    value = _rows(tr[part].value)
    if part in ("mean", "variance"):
        value = tuple(tuple(r) for r in value)
    wrong = []
    X = sympy_ref.matrix(x)
    if part in ("normalised", "output") and X.cols > 1:
        # the classic slip: the unbiased variance (divide by d − 1); recomputed by scaling the
        # input's deviations, since LN(μ + c·(x − μ)) with variance·d/(d − 1) is the same kernel
        import sympy as sp

        d = X.cols
        mu, var = tr["mean"].value, tr["variance"].value
        g = sympy_ref.matrix(gamma if gamma is not None else [1] * d)
        b = sympy_ref.matrix(beta if beta is not None else [0] * d)
        e = sympy_ref.exact(eps)
        alt = sp.Matrix(X.rows, d, lambda i, j: g[j] * (X[i, j] - mu[i]) / sp.sqrt(var[i] * d / (d - 1) + e) + b[j])
        if part == "normalised":
            alt = sp.Matrix(X.rows, d, lambda i, j: (X[i, j] - mu[i]) / sp.sqrt(var[i] * d / (d - 1) + e))
        wrong.append(Wrong("unbiased_variance", "divided by d − 1 (unbiased variance)",
                           "LayerNorm uses the biased variance (divide by d), not d − 1.", _rows(alt)))
    return Computed(value, "matrix", steps, wrong)


def causal_mask(n: int, *, convention: str = "keep") -> Computed:
    """The n×n causal mask as 0/1 in ``convention`` (``solver.kernels.masks.causal_mask`` is KEEP)."""
    from solver.kernels import masks

    keep = masks.causal_mask(int(n))
    if convention not in masks.CONVENTIONS:
        raise SolverInputError(f"convention must be one of {masks.CONVENTIONS}", param="convention")
    m = keep if convention == masks.KEEP else ~keep
    rows = tuple(tuple(float(int(v)) for v in r) for r in m)
    other = tuple(tuple(1.0 - v for v in r) for r in rows)
    steps = [_line(f"query i may attend to keys j ≤ i; entry (i, j) = {'1 if j ≤ i' if convention == 'keep' else '1 if j > i'}"
                   f" ({'1 = may attend' if convention == 'keep' else '1 = blocked'})"),
             matrix_step("mask", rows, 0)]
    wrong = [Wrong("mask_convention_flipped", "keep/block convention flipped",
                   "This is the mask in the opposite convention (True = keep vs True = blocked).", other)]
    return Computed(rows, "matrix", steps, wrong)


def head_dim(d_model: int, n_heads: int) -> Computed:
    """d_k = d_model / h (``solver.counting.config.ModelConfig.head_dim``)."""
    from solver.counting.config import ModelConfig

    cfg = ModelConfig(d_model=int(d_model), n_heads=int(n_heads), d_ff=4 * int(d_model))
    dk = cfg.head_dim
    steps = [_line(f"$d_k = d_{{model}}/h = {d_model}/{n_heads} = {dk}$", f"dₖ = d_model / h = {d_model}/{n_heads} = {dk}")]
    wrong = [Wrong("no_head_split", "used d_model as the head size",
                   "Each head works in d_model/h dimensions, not d_model.", int(d_model))]
    return Computed(dk, "integer", steps, wrong)


def dot_product_std(d_k: int, *, part: str = "std") -> Computed:
    """q·k of i.i.d. N(0,1) components: Var = d_k (a sum of d_k unit-variance products), std = √d_k.

    Evaluated with ``solver.kernels.sympy_ref.exact`` so the square root is exact before rounding."""
    import sympy as sp

    var = sp.Integer(int(d_k))
    std = sp.sqrt(var)
    steps = [_line("$\\mathrm{Var}(q_ik_i) = E[q_i^2]E[k_i^2] - 0 = 1$", "Var(qᵢkᵢ) = E[qᵢ²]E[kᵢ²] − 0 = 1"),
             _line(f"$\\mathrm{{Var}}(q\\cdot k) = d_k = {d_k}$, std $= \\sqrt{{{d_k}}} = {fmt(float(std))}$",
                   f"Var(q·k) = dₖ = {d_k}, std = √{d_k} = {fmt(float(std))}")]
    if part == "variance":
        return Computed(int(var), "integer", steps)
    return Computed(float(std), "number", steps,
                    [Wrong("variance_for_std", "gave the variance", "That is the variance dₖ; the std is √dₖ.",
                           float(var))])


# --------------------------------------------------------------------------- positions


def pe(d_model: int, *, positions: Any = None, n_positions: int | None = None, part: str = "rows",
       pair: Any = None, dims: Any = None) -> Computed:
    """Sinusoidal PE table rows (``solver.kernels.numpy_ref.sinusoidal_pe``).

    ``part``: ``rows`` (the rows at ``positions``, optionally the columns ``dims``), ``dot``
    (PE[a]·PE[b] for ``pair = [a, b]``), ``min``/``max`` over the first ``n_positions`` rows."""
    from solver.kernels import numpy_ref

    positions = list(positions or [])
    n = int(n_positions or (max(positions + list(pair or [0])) + 1))
    table, tr = numpy_ref.sinusoidal_pe(n, int(d_model), return_trace=True)
    steps = [_line(f"$PE(pos, 2i) = \\sin(pos/10000^{{2i/{d_model}}})$, $PE(pos, 2i+1) = \\cos(pos/10000^{{2i/{d_model}}})$",
                   f"PE(pos, 2i) = sin(pos/10000^(2i/{d_model})), PE(pos, 2i+1) = cos(pos/10000^(2i/{d_model}))")]
    if part == "rows":
        cols = list(dims) if dims is not None else list(range(int(d_model)))
        rows = tuple(tuple(float(table[p, c]) for c in cols) for p in positions)
        if len(rows) == 1:
            steps.append(matrix_step(f"PE[{positions[0]}]", rows, 4, whole=False))
        else:  # one aligned table, a row per position
            run = positions == list(range(positions[0], positions[0] + len(positions)))
            label = f"PE[{positions[0]}..{positions[-1]}]" if run else f"PE rows {', '.join(map(str, positions))}"
            steps.append(matrix_step(label, rows, 4, whole=False))
        return Computed(rows, "matrix", steps)
    if part == "dot":
        a, b = (int(x) for x in pair)
        value = float(table[a] @ table[b])
        steps.append(_line(f"PE[{a}]·PE[{b}] = Σⱼ PE[{a}, j]·PE[{b}, j] = {fmt(value)}"))
        return Computed(value, "number", steps)
    if part in ("min", "max"):
        value = float(table.min() if part == "min" else table.max())
        steps.append(_line(f"{part} over positions 0..{n - 1} = {fmt(value, 6)}"))
        return Computed(value, "number", steps)
    raise SolverInputError("part must be rows, dot, min or max", param="part")


def pe_wavelength(d_model: int, i: int) -> Computed:
    """Wavelength of pair (2i, 2i+1): 2π/ω with ω the angle at pos = 1 (``sympy_ref.pe_value``)."""
    import sympy as sp

    from solver.kernels import sympy_ref

    _, tr = sympy_ref.pe_value(1, 2 * int(i), int(d_model), return_trace=True)
    omega = tr["angle"].value
    lam = 2 * sp.pi / omega
    value = float(lam)
    steps = [_line(f"$\\omega_i = 1/10000^{{2i/d}} = 10000^{{-{2 * i}/{d_model}}}$",
                   f"ωᵢ = 10000^(−{2 * i}/{d_model}) = {fmt(float(omega), 6)}"),
             _line(f"$\\lambda_i = 2\\pi/\\omega_i = 2\\pi\\cdot 10000^{{{2 * i}/{d_model}}} = {fmt(value, 3)}$",
                   f"λᵢ = 2π·10000^({2 * i}/{d_model}) = {fmt(value, 3)}")]
    wrong = [Wrong("limit_2pi_10000", "used 2π·10000", "2π·10000 is the limit i → d/2, which no pair reaches.",
                   float(2 * sp.pi * 10000))]
    return Computed(value, "number", steps, wrong)


# --------------------------------------------------------------------------- counting


def _counts() -> Any:
    """The counting engine (imported on first use: the quiz's first problem needs none of it)."""
    import solver.counting

    return solver.counting


def _config(preset: str | None, config: dict[str, Any] | None) -> Any:
    from solver.counting.config import ModelConfig

    if preset:
        from solver.counting.presets import get_preset

        cfg = get_preset(preset)
        cfg = getattr(cfg, "config", cfg)
        return cfg.replace(**(config or {})) if config else cfg
    cfg = dict(config or {})
    if "lora_targets" in cfg:
        cfg["lora_targets"] = tuple(cfg["lora_targets"])
    return ModelConfig(**cfg)


_LAYER_GROUPS = ("attention", "cross_attention", "ffn")

_SCOPES = ("total", "layer", "layers", "attention", "ffn", "norms", "head", "embedding", "lora", "non_embedding")


def _param_value(counts: Any, cfg: Any, scope: str, stack: str) -> tuple[int, list[Line]]:
    """The count of ``scope`` and its breakdown lines (see :func:`params`)."""
    bd = counts.param_breakdown(cfg)
    steps: list[Line] = []
    if scope in ("total", "embedding", "non_embedding", "lora", "head"):
        for c in bd.components:
            if scope == "lora" and c.group != "lora" or scope != "lora" and c.group == "lora":
                continue
            if scope == "head" and c.group != "head":
                continue
            shape = "×".join(str(s) for s in c.shape)
            times = f" × {c.times}" if c.times != 1 else ""
            tex = re.sub(r"_([A-Za-z0-9]{2,})", r"_{\1}", c.formula_text())  # h_kv -> h_{kv} in LaTeX
            steps.append(Line(f"- {c.label}: ${tex}$ = {shape}{times} = {c.count:,}",
                              f"  {c.label}: {c.formula_text()} = {shape}{times} = {c.count:,}"))
        value = {"total": bd.total, "embedding": bd.embedding, "non_embedding": bd.non_embedding,
                 "lora": bd.lora, "head": sum(c.count for c in bd.components if c.group == "head")}[scope]
        steps.append(_line(f"**{scope}** = {value:,}", f"{scope} = {value:,}"))
    else:
        L = {"": cfg.n_layers, "encoder": cfg.encoder_layers, "decoder": cfg.decoder_layers}[stack]
        groups = {"layer": (*_LAYER_GROUPS, "norm"), "layers": (*_LAYER_GROUPS, "norm"),
                  "attention": ("attention",), "ffn": ("ffn",), "norms": ("norm",)}[scope]
        value = 0
        for c in bd.components:
            if c.group not in groups or c.stack != stack or c.name.startswith(("final_norm", "embedding_norm")):
                continue
            per_layer = c.count // L
            value += per_layer
            shape = "×".join(str(s) for s in c.shape)
            mult = per_layer // c.per
            times = f" × {mult}" if mult != 1 else ""
            steps.append(Line(f"- {c.label}: {shape}{times} = {per_layer:,}", f"  {c.label}: {shape}{times} = {per_layer:,}"))
        if scope == "layers":
            steps.append(_line(f"× {L} layers"))
            value *= L
            steps.append(_line(f"**all {L} layers** = {value:,}", f"all {L} layers = {value:,}"))
        else:
            steps.append(_line(f"**one layer, {scope}** = {value:,}", f"one layer, {scope} = {value:,}"))
    return int(value), steps


def params(*, preset: str | None = None, config: dict[str, Any] | None = None, scope: str = "total",
           stack: str = "") -> Computed:
    """Exact parameters (``solver.counting.params.param_breakdown``); conventions are the config's.

    ``scope``: ``total`` (the model), ``layer`` (one layer of ``stack``: attention, FFN and its
    norms), ``attention``/``ffn``/``norms`` (that part of one layer), ``embedding``,
    ``non_embedding``, ``lora`` (the adapters)."""
    if scope not in _SCOPES:
        raise SolverInputError(f"scope must be one of {_SCOPES}", param="scope")
    counts = _counts()
    cfg = _config(preset, config)
    value, steps = _param_value(counts, cfg, scope, stack)
    # the slips a student makes are the conventions ``qkv check params`` names, computed from
    # the same components (question_bank.conventions): the quiz, the exam and the checker then
    # name a slip in the same words
    from question_bank.conventions import param_conventions

    bd = counts.param_breakdown(cfg)
    comps = _scope_components(bd, cfg, scope, stack)
    whole = scope == "total"
    convs = param_conventions(comps, value, config=cfg if whole else None,
                              embedding=bd.embedding if whole else 0, non_embedding=bd.non_embedding if whole else 0)
    wrong = [Wrong(c.id, f"counted {c.alt}", c.feedback, int(c.value)) for c in convs if scope != "lora"]
    return Computed(int(value), "integer", steps, wrong, unit="parameters")


def _scope_components(bd: Any, cfg: Any, scope: str, stack: str) -> list[Any]:
    """The components counted in ``scope`` (as :func:`_param_value` counts them), each with its
    count in that scope: the whole model's for ``total``, one layer's (or all layers') otherwise."""
    from types import SimpleNamespace

    if scope in ("total", "embedding", "non_embedding", "lora", "head"):
        keep = {"total": lambda c: c.group != "lora", "lora": lambda c: c.group == "lora",
                "head": lambda c: c.group == "head", "embedding": lambda c: c.group == "embedding",
                "non_embedding": lambda c: c.group not in ("embedding", "lora")}[scope]
        return [c for c in bd.components if keep(c)]
    L = {"": cfg.n_layers, "encoder": cfg.encoder_layers, "decoder": cfg.decoder_layers}[stack]
    groups = {"layer": (*_LAYER_GROUPS, "norm"), "layers": (*_LAYER_GROUPS, "norm"),
              "attention": ("attention",), "ffn": ("ffn",), "norms": ("norm",)}[scope]
    times = L if scope == "layers" else 1
    return [SimpleNamespace(name=c.name, group=c.group, count=c.count // L * times) for c in bd.components
            if c.group in groups and c.stack == stack and not c.name.startswith(("final_norm", "embedding_norm"))]


def preset_field(preset: str, field: str) -> Computed:
    """A field of a preset of the zoo (``solver.counting.presets``), e.g. the layer count of GPT-3."""
    cfg = _config(preset, None)
    value = getattr(cfg, field)
    return Computed(int(value), "integer", [_line(f"{preset}: {field} = {value}")])


def lora_trainable(in_features: int, out_features: int, rank: int, *, frozen_after: bool = False) -> Computed:
    """Trainable parameters of one LoRA-wrapped linear layer: A (r × d_in) and B (d_out × r).

    ``frozen_after``: the seed's code calls ``self.requires_grad_(False)`` AFTER creating A and B,
    which freezes every parameter of the module, the adapters included: 0 trainable."""
    counts = _counts()
    d = int(in_features)
    if int(out_features) != d:
        raise SolverInputError("this computation covers square layers (d_in = d_out)", param="out_features")
    cfg = _config(None, {"d_model": d, "n_heads": 1, "d_ff": d, "n_layers": 1, "lora_rank": int(rank),
                         "lora_targets": ["q"], "vocab_size": 1, "pos": "none"})
    adapters = counts.param_breakdown(cfg).lora
    if frozen_after:  # the seed's listing: lora_A = randn(in_features, rank), lora_B = zeros(rank, out_features)
        steps = [_line(f"lora_A: in_features × rank = {d}×{rank}, lora_B: rank × out_features = {rank}×{d} "
                       f"→ {adapters:,} adapter parameters")]
    else:  # the paper's W + BA: A is r × d_in, B is d_out × r
        steps = [_line(f"A: {rank}×{d}, B: {d}×{rank} → {adapters:,} adapter parameters")]
    if frozen_after:
        steps.append(_line("`requires_grad_(False)` runs after A and B are registered, so it freezes them too: 0 trainable"))
        return Computed(0, "integer", steps, [Wrong("intended_lora", "the intended adapter count",
                                                    "That is what LoRA intends, but this code freezes A and B too.",
                                                    adapters)])
    return Computed(int(adapters), "integer", steps)


# --------------------------------------------------------------------------- FLOPs and memory


def _matmul_flops(m: int, k: int, n: int, convention: str) -> int:
    """(m×k)·(k×n): m·n·k multiply-adds, 2 FLOPs each (``solver.units.per_convention``)."""
    from solver.units import per_convention

    return per_convention(2 * m * k * n, convention)


def attention_flops(n: int, d: int, *, part: str = "both", convention: str = "flops", batch: int = 1,
                    n_heads: int = 1, n_kv_heads: int | None = None) -> Computed:
    """Matmul FLOPs of QKᵀ ((n×d)(d×n)) and of A·V ((n×n)(n×d)): 2·n²·d each (2 per multiply-add).

    Taken from ``solver.counting.matmul_flops`` (terms ``attn.scores`` and ``attn.context``) of a
    one-layer model of width d with ``n_heads`` query heads and ``n_kv_heads`` K/V heads (default:
    one head; neither the split into heads nor sharing K/V (MQA/GQA) changes these two terms)."""
    counts = _counts()
    cfg = _config(None, {"d_model": int(d), "n_heads": int(n_heads), "n_kv_heads": n_kv_heads, "n_layers": 1,
                         "d_ff": int(d), "vocab_size": 1, "pos": "none", "lm_head": False})
    rep = counts.matmul_flops(cfg, int(batch), int(n), "forward", "flops")
    terms = {t.name: t.forward for t in rep.terms}
    from solver.units import per_convention

    qk, av = per_convention(terms["attn.scores"], convention), per_convention(terms["attn.context"], convention)
    value = {"qk": qk, "av": av, "both": qk + av}[part]
    word = "FLOPs (2 per multiply-add)" if convention == "flops" else "multiply-adds"
    two = "2" if convention == "flops" else ""
    steps = [_line(f"$QK^\\top$: $(n\\times d)(d\\times n)$ → ${two}n^2d = {qk:,}$ {word}",
                   f"QKᵀ: (n×d)(d×n) → {two + '·' if two else ''}n²d = {two + '·' if two else ''}{n}²·{d} = {qk:,} {word}"),
             _line(f"$AV$: $(n\\times n)(n\\times d)$ → ${two}n^2d = {av:,}$ {word}",
                   f"AV: (n×n)(n×d) → {two + '·' if two else ''}n²d = {av:,} {word}")]
    if part == "both":
        steps.append(_line(f"total = {qk:,} + {av:,} = {value:,}"))
    alt = value // 2 if convention == "flops" else value * 2
    wrong = [Wrong("macs_vs_flops", "counted multiply-adds as FLOPs (or the reverse)",
                   "One multiply-add is 2 FLOPs; this figure is off by that factor 2.", alt)]
    return Computed(value, "integer", steps, wrong, unit=word)


def rnn_flops(n: int, d: int, *, convention: str = "flops") -> Computed:
    """A vanilla RNN's recurrent matmuls, as the seed counts them: per step h·W_hh (d×d), 2·d² FLOPs."""
    per = _matmul_flops(1, int(d), int(d), convention)
    value = int(n) * per
    steps = [_line(f"per step $h_{{t-1}}W_{{hh}}$: $2d^2 = {per:,}$", f"per step h·W_hh: 2d² = {per:,}"),
             _line(f"{n} steps: {n}·{per:,} = {value:,}")]
    return Computed(value, "integer", steps, unit="FLOPs")


def ratio(*, numerator: dict[str, Any], denominator: dict[str, Any]) -> Computed:
    """The ratio of two computations (e.g. attention FLOPs / RNN FLOPs)."""
    a, b = run(numerator), run(denominator)
    value = float(a.value) / float(b.value)
    steps = [*a.steps, *b.steps, _line(f"ratio = {fmt(a.value)} / {fmt(b.value)} = {fmt(value)}")]
    return Computed(value, "number", steps)


def attention_scores_bytes(batch: int, heads: int, n: int, *, dtype: str = "fp32", unit: str = "bytes") -> Computed:
    """Memory of the attention matrices B·h·n²·bytes (``solver.counting.attention_scores_bytes``)."""
    from solver.units import GB, GiB, dtype_bytes, format_bytes

    nbytes = int(_counts().attention_scores_bytes(int(batch), int(heads), int(n), dtype))
    div = {"bytes": 1, "GB": GB, "GiB": GiB}[unit]
    steps = [_line(f"$B\\cdot h\\cdot n^2\\cdot$ bytes $= {batch}\\cdot{heads}\\cdot{n}^2\\cdot{dtype_bytes(dtype)}$",
                   f"B·h·n²·bytes = {batch}·{heads}·{n}²·{dtype_bytes(dtype)}"),
             _line(format_bytes(nbytes))]
    if unit == "bytes":
        return Computed(nbytes, "integer", steps, unit="bytes")
    other = {"GB": GiB, "GiB": GB}[unit]
    wrong = [Wrong("gb_vs_gib", "mixed up GB (10⁹) and GiB (2³⁰)", "GB is 10⁹ bytes, GiB is 2³⁰ bytes.",
                   nbytes / other)]
    return Computed(nbytes / div, "number", steps, wrong, unit=unit)


def kv_cache_ratio(n_heads: int, n_kv_heads: int, *, n_layers: int = 1, batch: int = 1, seq: int = 1,
                   d_head: int = 64, dtype: str = "fp16") -> Computed:
    """KV cache of MHA over that of MQA/GQA (``solver.counting.kv_cache_bytes``):
    (2·L·B·n·h·d_h·bytes)/(2·L·B·n·h_kv·d_h·bytes) = h/h_kv."""
    kv = _counts().kv_cache_bytes
    full = int(kv(n_layers, batch, seq, int(n_heads), d_head, dtype))
    shared = int(kv(n_layers, batch, seq, int(n_kv_heads), d_head, dtype))
    value = full / shared
    steps = [_line(f"MHA: 2·L·B·n·h·d_h·bytes with h = {n_heads}: {full:,} bytes"),
             _line(f"with {n_kv_heads} K/V head(s): {shared:,} bytes"), _line(f"ratio = {fmt(value, 2)}")]
    wrong = [Wrong("forgot_k_and_v", "thought only K (or only V) shrinks", "Both K and V are shared; the ratio is h/h_kv.",
                   value / 2)]
    return Computed(value, "number", steps, wrong)


def entries(n: int) -> Computed:
    """Entries of the n×n attention matrix: n²."""
    value = int(n) ** 2
    return Computed(value, "integer", [_line(f"$n^2 = {n}^2 = {value:,}$", f"n² = {n}² = {value:,}")])


def bert_masking(n_tokens: int, *, rate: Any = "0.15", to_mask: Any = "0.8", to_random: Any = "0.1",
                 part: str = "selected") -> Computed:
    """BERT's MLM corruption: select ``rate`` of the tokens; of those 80% [MASK], 10% random, 10% kept."""
    from fractions import Fraction

    r, m, x = Fraction(str(rate)), Fraction(str(to_mask)), Fraction(str(to_random))
    sel = r * int(n_tokens)
    vals = {"selected": sel, "mask": sel * m, "random": sel * x, "unchanged": sel * (1 - m - x)}
    value = vals[part]
    # issue 12: each part shows its own step (the three results all stood under part (a) before)
    share = {"mask": ("[MASK]", m), "random": ("random", x), "unchanged": ("unchanged", 1 - m - x)}
    steps = [_line(f"selected = {r}·{n_tokens} = {float(sel):g}")]
    if part in share:
        name, f = share[part]
        steps.append(_line(f"{name} = {f}·{float(sel):g} = {float(value):g}"))
    out = int(value) if value.denominator == 1 else float(value)
    return Computed(out, "integer" if isinstance(out, int) else "number", steps)


def power_law_factor(exponent: Any, factor: Any = 10) -> Computed:
    """L ∝ N^(−α): scaling N by ``factor`` multiplies the loss by factor^(−α)."""
    value = float(factor) ** -float(exponent)
    steps = [_line(f"$L_2/L_1 = {factor}^{{-{exponent}}} = {fmt(value)}$", f"L₂/L₁ = {factor}^(−{exponent}) = {fmt(value)}")]
    return Computed(value, "number", steps)


def word_positions(words: list[str], a: str, b: str, *, part: str = "between") -> Computed:
    """1-based positions of two words in a sentence and how many tokens lie between them."""
    ia, ib = words.index(a) + 1, words.index(b) + 1
    vals = {"a": ia, "b": ib, "between": abs(ib - ia) - 1}
    steps = [_line(f"'{a}' is token {ia}, '{b}' is token {ib} of {len(words)}; between them: {vals['between']}")]
    return Computed(vals[part], "integer", steps)


# --------------------------------------------------------------------------- seeded code listings


def seed004_attention_demo(*, part: str = "weights", causal: bool = False) -> Computed:
    """§13.1 of seed 004: ``np.random.seed(42)``; Q, K, V = randn(4, 8) ×3; attention (numpy_ref)."""
    import numpy as np

    from solver.kernels import numpy_ref

    rng = np.random.RandomState(42)
    q, k, v = rng.randn(4, 8), rng.randn(4, 8), rng.randn(4, 8)
    (out, w), tr = numpy_ref.attention(q, k, v, causal=causal, return_trace=True)
    value = _rows(w if part == "weights" else out)
    steps = [_line("Q, K, V = three draws of randn(4, 8) after np.random.seed(42) (legacy RandomState)"),
             matrix_step(f"weights = softmax(QKᵀ/√8{' + causal mask' if causal else ''})", value, 3)]
    return Computed(value, "matrix", steps)


def seed004_block_stats(*, layer: int, stat: str = "mean") -> Computed:
    """§13.3 of seed 004: six post-norm NumPy encoder blocks (d=64, h=8, d_ff=256), seed 42.

    Replays the listing's random draws in order (per block W_Q, W_K, W_V, W_O, then W1, W2;
    then X) and runs it with ``numpy_ref`` kernels; returns the mean or std of layer ``layer``."""
    import numpy as np

    from solver.kernels import numpy_ref

    d, h, d_ff, n = 64, 8, 256, 10
    rng = np.random.RandomState(42)
    blocks = []
    for _ in range(6):
        s = np.sqrt(2.0 / (d + d // h))
        wq, wk, wv, wo = (rng.randn(d, d) * s for _ in range(4))
        w1 = rng.randn(d, d_ff) * np.sqrt(2.0 / (d + d_ff))
        w2 = rng.randn(d_ff, d) * np.sqrt(2.0 / (d_ff + d))
        blocks.append((wq, wk, wv, wo, w1, w2))
    x = rng.randn(n, d) * 0.1
    stats = []
    for wq, wk, wv, wo, w1, w2 in blocks:
        attn = numpy_ref.multi_head_attention(x, wq, wk, wv, wo, n_heads=h)
        attn = attn[0] if isinstance(attn, tuple) else attn
        x = numpy_ref.layer_norm(x + attn, eps=1e-6)
        f = numpy_ref.ffn(x, w1, np.zeros(d_ff), w2, np.zeros(d))
        x = numpy_ref.layer_norm(x + f, eps=1e-6)
        stats.append((float(x.mean()), float(x.std())))
    mean, std = stats[int(layer) - 1]
    value = mean if stat == "mean" else std
    steps = [_line("post-norm: x ← LN(x + MHA(x)), x ← LN(x + FFN(x)), γ = 1, β = 0, ε = 1e-6"),
             _line("each row of a LayerNorm output has mean 0 and variance σ²/(σ² + ε) < 1, so the whole "
                   "matrix has mean 0 (to rounding) and std just below 1"),
             _line(f"layer {layer}: mean = {mean:.3e}, std = {std:.6f}")]
    return Computed(value, "number", steps)


#: name -> function; a TOML ``compute = "name"`` picks one, the other keys are its arguments.
COMPUTATIONS: dict[str, Callable[..., Computed]] = {
    "attention": attention,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "causal_mask": causal_mask,
    "head_dim": head_dim,
    "dot_product_std": dot_product_std,
    "pe": pe,
    "pe_wavelength": pe_wavelength,
    "params": params,
    "preset_field": preset_field,
    "lora_trainable": lora_trainable,
    "attention_flops": attention_flops,
    "rnn_flops": rnn_flops,
    "ratio": ratio,
    "attention_scores_bytes": attention_scores_bytes,
    "kv_cache_ratio": kv_cache_ratio,
    "entries": entries,
    "bert_masking": bert_masking,
    "power_law_factor": power_law_factor,
    "word_positions": word_positions,
    "seed004_attention_demo": seed004_attention_demo,
    "seed004_block_stats": seed004_block_stats,
}


def run(spec: dict[str, Any]) -> Computed:
    """Run ``spec["compute"]`` with the remaining keys as keyword arguments."""
    args = {k: v for k, v in spec.items() if k not in ("compute", "choose", "option_values")}
    name = spec.get("compute")
    if name not in COMPUTATIONS:
        raise SolverInputError(f"unknown computation {name!r}; known: {', '.join(sorted(COMPUTATIONS))}",
                               param="compute")
    try:
        return COMPUTATIONS[name](**args)
    except TypeError as e:
        raise SolverInputError(f"{name}: {e}", param="compute") from e
