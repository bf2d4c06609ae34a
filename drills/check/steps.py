"""Check a hand computation step by step against the solver's trace.

A student gives the inputs of a kernel (attention, softmax, LayerNorm, RMSNorm, sinusoidal PE,
RoPE) and whichever intermediate results they worked out, named as in :mod:`solver.trace`.
Each given step is judged against the exact step of the solver's trace; a step that is wrong
is then

* re-judged by **follow-through**: when an earlier step the student gave was wrong, a later
  step is also compared with what follows from *their* earlier values (weights judged as the
  softmax of *their* scaled scores); matching it, the step counts as right "given your
  previous step" and the first wrong step stays the earlier one;
* **diagnosed**: the step is recomputed with typical mistakes applied (scores not scaled,
  softmax over the columns, biased/unbiased variance, sin and cos swapped, ...) by calling
  the solver kernels with the mistaken arguments (``scale=1``, ``axis=-2``, ``layout=...``);
  the first variant that matches names the likely mistake.

Tolerances (the named comparators below, with their edge cases spelt out):

* an entry typed as a decimal with *k* places (``0.707``) is right when it is within half a
  unit of its last place of the exact value, plus a float slack of ``1e-9·max(1, |exact|)``:
  exactly the values that are a correct rounding of the exact value to *k* places, ties
  included. A matrix is judged at the most places any of its entries shows, so the ``0`` in
  ``0.707 0 0.707`` is judged to 3 places, not to 0;
* a step typed with integers only (``1 0 1``) or with expressions (``sqrt(2)/2``) is compared
  exactly (to the float slack);
* −∞ (typed ``-inf`` or ``−∞``) matches only −∞; the usual stand-in −1e9 (anything ≤ −1e9)
  is accepted for a −∞ entry and said so; NaN is never right.

Counts (``params``, ``flops``, ``memory``, ``kv-cache``) are judged by significant figures
(:func:`check_count`): ``110M`` states 2 of them, so it is right when the exact count rounds
to 110M; when it is close but not equal the report says which convention (a component of the
breakdown, GB vs GiB, bits vs bytes, MACs vs FLOPs) could account for the gap.

This module imports numpy at the top (the check path needs it) but neither torch nor sympy.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solver import numpy_ref

# ============================================================================ comparators

FLOAT_SLACK = 1e-9
MINUS_INF_STANDIN = -1e9  # an entry at or below this stands for −∞
_TYPED_MINUS_INF = -1e300  # what "-inf" is read as, before being turned back into −∞


def slack(exact: float) -> float:
    """The float slack added to every tolerance: 1e-9·max(1, |exact|)."""
    return FLOAT_SLACK * max(1.0, abs(exact))


def _within(given: float, exact: float, tolerance: float) -> bool:
    """|given − exact| ≤ tolerance + slack.

    Edge cases: NaN on either side is never right; an infinite exact value is matched only by
    the same infinity (−∞ also by a stand-in ≤ −1e9); an infinite given value never matches a
    finite one. 0 is an ordinary value (no relative test near 0).
    """
    if math.isnan(given) or math.isnan(exact):
        return False
    if math.isinf(exact):
        return given == exact or (exact < 0 and given <= MINUS_INF_STANDIN)
    if math.isinf(given):
        return False
    return abs(given - exact) <= tolerance + slack(exact)


def is_correct_decimals(given: float, exact: float, decimals: int) -> bool:
    """Right to ``decimals`` places: |given − exact| ≤ ½·10⁻ᵏ + slack (edge cases: ``_within``)."""
    return _within(given, exact, 0.5 * 10.0 ** (-decimals))


def is_correct_exact(given: float, exact: float) -> bool:
    """Equal up to the float slack (integers and expressions typed exactly); edge cases as
    ``is_correct_decimals``."""
    return _within(given, exact, 0.0)


def is_correct_sig_figs(given: float, exact: float, sig: int) -> bool:
    """``given`` is ``exact`` rounded to ``sig`` significant figures (within ½ unit of the last
    figure of ``given``, plus slack). Edge cases: 0 is right only for 0; NaN/inf never."""
    if not (math.isfinite(given) and math.isfinite(exact)):
        return False
    if given == 0 or exact == 0:
        return given == exact
    unit = 10.0 ** (math.floor(math.log10(abs(given))) - sig + 1)
    return abs(given - exact) <= 0.5 * unit + slack(exact)


def tolerance_text(decimals: int | None) -> str:
    if decimals is None:
        return "exact (integers or expressions: compared to 1e-9)"
    return f"to {decimals} decimal place{'s' if decimals != 1 else ''} (within ±{0.5 * 10.0 ** -decimals:g})"


# ============================================================================ typed values


@dataclass(frozen=True)
class Typed:
    """A step value as the student typed it: floats, and the places each entry shows
    (−1 for an integer or an expression)."""

    text: str
    values: np.ndarray
    places: np.ndarray

    @property
    def decimals(self) -> int | None:
        """The places the step is judged at (None: exactly)."""
        k = int(self.places.max()) if self.places.size else -1
        return k if k > 0 else None


class ReadError(ValueError):
    """A step value that cannot be read; ``str(e)`` is one line."""


_INF = re.compile(r"(?<![\w.])([-−]?)\s*(?:inf(?:inity)?|∞)", re.IGNORECASE)
_DECIMAL_TOKEN = re.compile(r"[+-]?(\d*)\.(\d+)(?:[eE]([+-]?\d+))?|[+-]?\d+[eE]([+-]?\d+)")


def _places(token: str) -> int:
    m = _DECIMAL_TOKEN.fullmatch(token.strip())
    if not m:
        return -1
    if m.group(2) is not None:
        return max(0, len(m.group(2)) - int(m.group(3) or 0))
    return max(0, -int(m.group(4)))


def read_value(text: str, *, vector: bool = False, scalar: bool = False) -> Typed:
    """Read a matrix, vector or number typed by the student (never evaluated: see
    :mod:`drills.answers`). ``-inf``/``−∞`` are allowed as entries."""
    from drills.answers import AnswerParseError, parse_matrix, parse_number, parse_vector

    clean = _INF.sub(lambda m: "-1e300" if m.group(1) else "1e300", text.strip())
    try:
        if scalar:
            p = parse_number(clean)
            if p.dimension or p.unit:
                raise ReadError("a plain number is expected here (no unit)")
            values = np.array(float(p.value))
            tokens = [clean]
        else:
            pm = parse_vector(clean) if vector else parse_matrix(clean)
            values = np.array(pm.rows, dtype=float)
            if vector:
                values = values[0]
            tokens = [t for t in re.split(r"[\s,;\[\]]+", clean) if t]
    except AnswerParseError as e:
        raise ReadError(str(e)) from None
    values = np.where(values <= _TYPED_MINUS_INF, -np.inf, np.where(values >= -_TYPED_MINUS_INF, np.inf, values))
    if len(tokens) == values.size:
        places = np.array([_places(t) for t in tokens]).reshape(values.shape)
    else:  # entries that are expressions with inner spaces: judge exactly
        places = np.full(values.shape, -1)
    places = np.where(np.isfinite(values), places, -1)
    return Typed(text.strip(), values, places)


def judge(given: Typed, expected: Any) -> tuple[bool, list[tuple[int, ...]], str]:
    """(right?, wrong entries (indices), tolerance text) of ``given`` against ``expected``.

    Each decimal entry is judged to the places it shows; an integer entry in a step that has
    decimals is judged to the most places of the step (the ``0`` in ``0.707 0 0.707``); a step
    of integers or expressions only is compared exactly."""
    exp = np.asarray(expected, dtype=float)
    k = given.decimals
    if given.values.shape != exp.shape:
        return False, [], f"shape {_shape(given.values)} given, {_shape(exp)} expected"
    wrong, used = [], set()
    for idx in np.ndindex(exp.shape):
        g, e = float(given.values[idx]), float(exp[idx])
        places = int(given.places[idx]) if given.places[idx] > 0 else (k if _plain_int(g) else None)
        ok = is_correct_decimals(g, e, places) if places is not None else is_correct_exact(g, e)
        used.add(places)
        if not ok:
            wrong.append(idx)
    decs = sorted(p for p in used if p is not None)
    if len(decs) > 1:
        tol = f"each entry to the decimal places it shows ({decs[0]} to {decs[-1]})"
    else:
        tol = tolerance_text(decs[0] if decs else None)
    return not wrong, wrong, tol


def _plain_int(x: float) -> bool:
    return math.isfinite(x) and float(x).is_integer()


def _shape(a: np.ndarray) -> str:
    return "×".join(str(s) for s in a.shape) if a.ndim else "scalar"


def matches(given: Typed, candidate: Any) -> bool:
    try:
        c = np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return c.shape == given.values.shape and judge(given, c)[0]


# ============================================================================ the report


@dataclass
class StepCheck:
    """The verdict on one step."""

    name: str
    label: str
    given: Typed
    expected: Any
    ok: bool
    tolerance: str
    follow_through: bool = False
    from_previous: Any = None  # what follows from the student's earlier values, when used
    mistake: str | None = None
    wrong_cells: list[tuple[int, ...]] = field(default_factory=list)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "label": self.label, "given": _jsonable(self.given.values),
            "given_text": self.given.text, "expected": _jsonable(self.expected), "ok": self.ok,
            "follow_through": self.follow_through, "mistake": self.mistake, "tolerance": self.tolerance,
            "expected_from_your_previous": None if self.from_previous is None else _jsonable(self.from_previous),
            "wrong_cells": [list(c) for c in self.wrong_cells], "note": self.note,
        }


def _jsonable(v: Any) -> Any:
    a = np.asarray(v, dtype=float)
    return a.tolist() if a.ndim else float(a)


@dataclass
class CheckReport:
    kernel: str
    steps: list[StepCheck]
    conventions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    @property
    def first_wrong(self) -> StepCheck | None:
        return next((s for s in self.steps if not s.ok), None)

    def to_json(self) -> dict[str, Any]:
        fw = self.first_wrong
        return {"ok": self.ok, "kernel": self.kernel, "steps": [s.to_json() for s in self.steps],
                "first_wrong": None if fw is None else fw.name, "conventions": self.conventions}


# ============================================================================ chains

Mistakes = list[tuple[str, Any]]


@dataclass
class Chain:
    """A kernel's steps, its exact values, and how to recompute a step from the student's work.

    ``follow(name, theirs)`` returns what step ``name`` should be given the student's values
    ``theirs`` (name → array of the steps they gave before it), or None when nothing of theirs
    feeds it. ``mistakes(name, theirs)`` lists (description, value) of typical mistakes.
    ``alternatives(name)`` lists (description, value) of other *right* conventions (an
    unshifted exp in softmax).
    """

    kernel: str
    names: list[str]
    labels: dict[str, str]
    exact: dict[str, Any]
    follow: Callable[[str, dict[str, np.ndarray]], Any]
    mistakes: Callable[[str, dict[str, np.ndarray]], Mistakes]
    alternatives: Callable[[str], Mistakes] = lambda name: []
    conventions: dict[str, str] = field(default_factory=dict)


def check_chain(chain: Chain, given: dict[str, Typed]) -> CheckReport:
    """Judge every given step of ``chain`` (in the chain's order); see the module docstring."""
    unknown = [n for n in given if n not in chain.names]
    if unknown:
        raise ValueError(f"no step {unknown[0]!r} in {chain.kernel}; steps are {chain.names}")
    steps: list[StepCheck] = []
    theirs: dict[str, np.ndarray] = {}
    any_wrong_before = False
    for name in chain.names:
        if name not in given:
            continue
        g = given[name]
        expected = chain.exact[name]
        ok, wrong, tol = judge(g, expected)
        sc = StepCheck(name, chain.labels.get(name, name), g, expected, ok, tol, wrong_cells=wrong)
        if not ok:
            for desc, alt in chain.alternatives(name):
                if matches(g, alt):
                    sc.ok, sc.wrong_cells, sc.note = True, [], f"right ({desc})"
                    break
        if not sc.ok and theirs:
            ft = _safe(lambda name=name: chain.follow(name, dict(theirs)))
            if ft is not None and matches(g, ft):
                sc.from_previous = ft
                if any_wrong_before:
                    sc.ok, sc.follow_through, sc.wrong_cells = True, True, []
                    sc.note = "right given your previous step"
                else:
                    sc.mistake = ("rounding carried: your value follows from your own rounded earlier step, "
                                  "but not from the exact one; keep more digits in intermediate steps")
        if not sc.ok and sc.mistake is None:
            for desc, variant in _safe(lambda name=name: chain.mistakes(name, dict(theirs))) or []:
                if variant is not None and matches(g, variant) and not matches(g, expected):
                    sc.mistake = desc
                    break
        if not sc.ok:
            any_wrong_before = True
        theirs[name] = g.values
        steps.append(sc)
    return CheckReport(chain.kernel, steps, chain.conventions)


def _safe(fn: Callable[[], Any]) -> Any:
    """Run a recomputation; a mistaken variant the solver refuses (a shape that does not fit,
    a row the flipped mask blocks entirely) is simply not a candidate."""
    from solver.errors import SolverInputError

    try:
        with np.errstate(all="ignore"):
            return fn()
    except (SolverInputError, ValueError, FloatingPointError, IndexError, ZeroDivisionError):
        return None


def _steps(call: Callable[[], Any]) -> dict[str, Any]:
    """The trace of a solver call as {name: value} (empty when the solver refuses)."""
    out = _safe(call)
    return {} if out is None else out[1].values()


def _latest(theirs: dict[str, np.ndarray], names: list[str], before: str) -> tuple[str, np.ndarray] | None:
    """The last step the student gave before ``before`` (among ``names``)."""
    earlier = names[: names.index(before)]
    for n in reversed(earlier):
        if n in theirs:
            return n, theirs[n]
    return None


# ---------------------------------------------------------------------------- attention

ATTENTION_LABELS = {"scores": "QKᵀ", "scaled": "QKᵀ/√dₖ", "masked": "QKᵀ/√dₖ + M", "weights": "weights A",
                    "output": "output A·V"}


def attention_chain(q: Any, k: Any, v: Any, mask: Any = None, *, causal: bool = False,
                    scale: float | None = None) -> Chain:
    """The attention chain: scores, scaled, [masked], weights, output (mask: 1 = may attend)."""
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    keep = None if mask is None else np.asarray(mask).astype(bool)
    d_k = q.shape[-1]
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    def run(q_=q, k_=k, v_=v, keep_=keep, scale_=s, convention="keep", causal_=causal):
        return _steps(lambda: numpy_ref.attention(q_, k_, v_, keep_, mask_convention=convention, causal=causal_,
                                                  scale=scale_, return_trace=True))

    exact = run()
    names = [n for n in ("scores", "scaled", "masked", "weights", "output") if n in exact]
    masked_name = "masked" if "masked" in names else "scaled"
    eye = np.eye(k.shape[-2])

    def from_step(name: str, value: np.ndarray, *, scale_: float = 1.0, masked: bool = True) -> dict[str, Any]:
        """Carry on the solver's pipeline from a student's value of ``name``: attention with
        Q = their matrix and K = I reproduces it as the scores (S·I = S)."""
        if name == "weights":
            return {"output": value @ v}
        if name == "output":
            return {}
        use_scale = scale_ if name == "scores" else 1.0
        use_mask = keep if (masked and name in ("scores", "scaled")) else None
        out = run(q_=value, k_=eye, keep_=use_mask, scale_=use_scale, causal_=causal and name != "masked")
        if name == "scaled":
            out.pop("scaled", None)
        return out

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = _latest(theirs, names, name)
        if last is None:
            return None
        return from_step(last[0], last[1], scale_=s).get(name)

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        last = _latest(theirs, names, name)
        base_name, base = last if last is not None else (None, None)
        prev = names[names.index(name) - 1] if names.index(name) > 0 else None
        if base_name != prev:  # only a value of the step right before can be the base
            base_name, base = prev, exact.get(prev) if prev else None
        out: Mistakes = []
        # one-step mistakes, from the student's previous step (or the exact one)
        if name == "scores":
            out.append(("scores transposed: you computed K·Qᵀ instead of Q·Kᵀ", run(q_=k, k_=q, v_=q).get("scores")))
            out.append(("used V instead of K: Q·Vᵀ", run(k_=v, v_=v).get("scores") if v.shape == k.shape else None))
        if name == "scaled" and base is not None:
            for desc, sc in ((f"not scaled: the scores were not divided by √dₖ = √{d_k}", 1.0),
                             (f"divided by dₖ = {d_k} instead of √dₖ", 1.0 / d_k),
                             ("multiplied by √dₖ instead of dividing", math.sqrt(d_k))):
                out.append((desc, from_step("scores", base, scale_=sc).get("scaled")))
        if name == "masked" and base is not None:
            blocked = ~_kept(keep, causal, base.shape)
            out.append(("blocked entries set to 0 instead of −∞", np.where(blocked, 0.0, base)))
            out.append(("mask not applied", base))
            out.append(("mask read the wrong way round (1 taken as blocked)",
                        run(convention="block", causal_=False).get("masked") if keep is not None else None))
        if name == "weights" and base is not None:
            out.append(("softmax over the wrong axis: each column sums to 1 instead of each row",
                        _safe(lambda: numpy_ref.softmax(base, axis=-2))))
            out.append(("weights transposed", _safe(lambda: numpy_ref.softmax(base).T)))
            blocked = ~_kept(keep, causal, base.shape)
            if blocked.any():
                out.append(("masked with 0 instead of −∞ before the softmax",
                            _safe(lambda: numpy_ref.softmax(np.where(blocked, 0.0, exact["scaled"])))))
        if name == "output" and base is not None:
            out.append(("weights transposed: you computed Aᵀ·V", base.T @ v if base.shape[0] == base.shape[1] else None))
            col = _safe(lambda: numpy_ref.softmax(exact[masked_name], axis=-2))
            out.append(("softmax over the wrong axis (columns) before multiplying by V", None if col is None else col @ v))
        # mistakes made earlier and carried to this step, from the inputs
        pipelines = [
            (f"not scaled: softmax of Q·Kᵀ without dividing by √dₖ = √{d_k}", run(scale_=1.0)),
            (f"divided by dₖ = {d_k} instead of √dₖ", run(scale_=1.0 / d_k)),
            ("multiplied by √dₖ instead of dividing", run(scale_=math.sqrt(d_k))),
            ("scores transposed (K·Qᵀ)", run(q_=k, k_=q) if q.shape == k.shape else {}),
        ]
        if keep is not None or causal:
            pipelines.append(("mask not applied", run(keep_=None, causal_=False)))
        if keep is not None:
            pipelines.append(("mask read the wrong way round (1 taken as blocked)", run(convention="block")))
        col_w = _safe(lambda: numpy_ref.softmax(exact[masked_name], axis=-2))
        if col_w is not None:
            pipelines.append(("softmax over the wrong axis (columns)", {"weights": col_w, "output": col_w @ v}))
        out += [(desc, steps.get(name)) for desc, steps in pipelines if name in steps]
        return out

    conventions = {"scale": f"1/√dₖ = 1/√{d_k}" if scale is None else f"{s:g} (given)",
                   "softmax": "over each row (over the keys)"}
    if keep is not None or causal:
        conventions["mask"] = ("causal: query i sees keys j ≤ i" if causal else
                               "1 = may attend, 0 = blocked") + " (−∞ before the softmax)"
    return Chain("attention", names, ATTENTION_LABELS, exact, follow, mistakes, conventions=conventions)


def _kept(keep: np.ndarray | None, causal: bool, shape: tuple[int, ...]) -> np.ndarray:
    """Where the scores are kept (True) for this mask/causal setting, from :mod:`solver.masks`."""
    from solver import masks

    n, m = shape[-2], shape[-1]
    bias = masks.attention_bias(keep, masks.KEEP, causal, n, m, like=np.zeros(shape))
    return np.ones(shape, dtype=bool) if bias is None else np.broadcast_to(~np.isneginf(bias), shape)


# ---------------------------------------------------------------------------- softmax

SOFTMAX_LABELS = {"scaled": "x/T", "shifted": "x − max x", "exp": "exp", "sum": "Σ exp", "output": "softmax"}


def softmax_chain(x: Any, temperature: float = 1.0) -> Chain:
    """softmax: [scaled], shifted, exp, sum, output. exp and sum may be given unshifted
    (exp(xᵢ/T) and their sum), the way most people compute by hand: both are right."""
    x = np.asarray(x, dtype=float)
    t = float(temperature)

    def trace(x_=x, t_=t, axis=-1) -> dict[str, Any]:
        return _steps(lambda: numpy_ref.softmax(x_, axis=axis, temperature=t_, return_trace=True))

    exact = trace()
    sum_shape = () if x.ndim == 1 else np.shape(exact["sum"])
    exact["sum"] = np.reshape(exact["sum"], sum_shape)  # a vector's sum is one number
    names = [n for n in ("scaled", "shifted", "exp", "sum", "output") if n in exact]
    top = np.max(exact.get("scaled", x), axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # huge x: the unshifted alternative is inf and matches nothing
        unshift = np.exp(top)  # exp(max): the factor between exp(x) and exp(x − max x)
    unshift_sum = np.reshape(unshift, sum_shape)

    def alternatives(name: str) -> Mistakes:
        if name == "exp":
            return [("unshifted: exp(xᵢ/T) instead of exp(xᵢ/T − max); the same softmax", exact["exp"] * unshift)]
        if name == "sum":
            return [("unshifted: Σ exp(xᵢ/T); the same softmax", exact["sum"] * unshift_sum)]
        return []

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = _latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        if prev in ("scaled", "shifted"):
            return trace(x_=val, t_=1.0).get(name)
        if prev == "exp":
            if name == "sum":
                return np.reshape(val.sum(axis=-1), sum_shape)
            return val / val.sum(axis=-1, keepdims=True)
        if prev == "sum" and name == "output":
            e = theirs.get("exp")
            if e is None:  # their sum with the exact exp, in whichever convention the sum is closer to
                shifted_closer = np.max(abs(val - exact["sum"])) < np.max(abs(val - exact["sum"] * unshift_sum))
                e = exact["exp"] if shifted_closer else exact["exp"] * unshift
            return e / np.reshape(val, np.shape(val) + (1,) * (np.ndim(e) - np.ndim(val)))
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = []
        if t != 1.0:
            wrong_t = trace(t_=1.0 / t)
            out.append((f"temperature multiplied instead of divided: x·{t:g} instead of x/{t:g}",
                        wrong_t.get(name) if name != "exp" else None))
            no_t = trace(t_=1.0)
            out.append(("temperature ignored", no_t.get(name)))
        if name == "output":
            if np.all(x > 0):  # softmax(log x) = x/Σx: normalising without exponentiating
                out.append(("forgot to exponentiate: divided x by Σx", _safe(lambda: numpy_ref.softmax(np.log(x)))))
            if x.ndim == 2:
                out.append(("softmax over the wrong axis (columns)", trace(axis=-2).get("output")))
        if name == "exp":
            out.append(("exp of the unshifted but unscaled x", trace(t_=1.0).get("exp")))
        return out

    conv = {"axis": "last (each row)", "temperature": f"{t:g}",
            "shift": "exp and sum accepted with or without subtracting max x"}
    return Chain("softmax", names, SOFTMAX_LABELS, exact, follow, mistakes, alternatives, conv)


# ---------------------------------------------------------------------------- norms

NORM_LABELS = {"mean": "μ", "variance": "σ²", "normalised": "x̂", "output": "γ·x̂ + β"}
RMSNORM_LABELS = {"mean_square": "mean(x²)", "rms": "rms", "normalised": "x̂", "output": "γ·x̂"}  # RMSNorm has no β


def layernorm_chain(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5) -> Chain:
    """LayerNorm: mean, variance (biased), normalised, output."""
    x = np.asarray(x, dtype=float)
    g = None if gamma is None else np.asarray(gamma, dtype=float)
    b = None if beta is None else np.asarray(beta, dtype=float)

    def trace(x_=x, g_=g, b_=b, eps_=eps) -> dict[str, Any]:
        return _steps(lambda: numpy_ref.layer_norm(x_, g_, b_, eps=eps_, return_trace=True))

    exact = trace()
    names = ["mean", "variance", "normalised", "output"]
    d = x.shape[-1]

    def affine(normalised: np.ndarray) -> np.ndarray:
        # the output step from a normalised vector: LayerNorm of an already normalised row with
        # ε = 0 returns it unchanged up to rounding, so apply γ, β through the solver
        return normalised * (1.0 if g is None else g) + (0.0 if b is None else b)

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = _latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        mean = theirs.get("mean", exact["mean"])
        var = theirs.get("variance", exact["variance"])
        if name == "variance" and prev == "mean":
            return ((x - np.asarray(val)[..., None]) ** 2).mean(axis=-1)
        if name == "normalised":
            return (x - np.asarray(mean)[..., None]) / np.sqrt(np.asarray(var)[..., None] + eps)
        if name == "output":
            if prev == "normalised":
                return affine(val)
            return affine((x - np.asarray(mean)[..., None]) / np.sqrt(np.asarray(var)[..., None] + eps))
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = []
        bessel = d / (d - 1) if d > 1 else None
        if name == "variance":
            if bessel:
                out.append((f"unbiased variance: divided by d − 1 = {d - 1} instead of d = {d} (LayerNorm uses "
                            "the biased one)", exact["variance"] * bessel))
            out.append(("standard deviation instead of variance", np.sqrt(exact["variance"])))
        if name in ("normalised", "output"):
            if bessel:
                v_u = exact["variance"] * bessel
                nu = (x - exact["mean"][..., None]) / np.sqrt(v_u[..., None] + eps)
                out.append((f"unbiased variance (divided by d − 1 = {d - 1}) in the normalisation",
                            nu if name == "normalised" else affine(nu)))
            nv = (x - exact["mean"][..., None]) / (exact["variance"][..., None] + eps)
            out.append(("divided by the variance instead of the standard deviation",
                        nv if name == "normalised" else affine(nv)))
            out.append(("ε left out", trace(eps_=0.0).get(name)))
            out.append(("RMSNorm instead of LayerNorm (mean not subtracted)",
                        _steps(lambda: numpy_ref.rms_norm(x, g, eps=eps, return_trace=True)).get(name)))
        if name == "output":
            out.append(("γ and β not applied", exact["normalised"]))
            if b is not None:
                out.append(("β not added", trace(b_=None).get("output")))
        return out

    conv = {"variance": "biased (divide by d), as torch.nn.LayerNorm", "eps": f"{eps:g}"}
    return Chain("layernorm", names, NORM_LABELS, exact, follow, mistakes, conventions=conv)


def rmsnorm_chain(x: Any, gamma: Any = None, eps: float = 1e-6) -> Chain:
    """RMSNorm: mean_square, rms, normalised, output."""
    x = np.asarray(x, dtype=float)
    g = None if gamma is None else np.asarray(gamma, dtype=float)

    def trace(x_=x, g_=g, eps_=eps) -> dict[str, Any]:
        return _steps(lambda: numpy_ref.rms_norm(x_, g_, eps=eps_, return_trace=True))

    exact = trace()
    names = ["mean_square", "rms", "normalised", "output"]

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = _latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        rms = theirs.get("rms")
        if name == "rms" and prev == "mean_square":
            return np.sqrt(val + eps)
        if name == "normalised":
            r = rms if rms is not None else np.sqrt(theirs["mean_square"] + eps)
            return x / np.asarray(r)[..., None]
        if name == "output":
            n = theirs.get("normalised")
            if n is None:
                r = rms if rms is not None else np.sqrt(theirs["mean_square"] + eps)
                n = x / np.asarray(r)[..., None]
            return n * (1.0 if g is None else g)
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        ln = _steps(lambda: numpy_ref.layer_norm(x, g, eps=eps, return_trace=True))
        out: Mistakes = [("ε left out", trace(eps_=0.0).get(name))]
        if name == "rms":
            out.append(("square root not taken (the mean square itself)", exact["mean_square"]))
            out.append(("mean subtracted first (the LayerNorm standard deviation)", np.sqrt(ln["variance"] + eps)))
        if name in ("normalised", "output"):
            out.append(("mean subtracted first (LayerNorm instead of RMSNorm)", ln.get(name)))
            ms = exact["mean_square"][..., None]
            div = x / (ms + eps)
            out.append(("divided by the mean square instead of its root", div if name == "normalised" else
                        div * (1.0 if g is None else g)))
        if name == "output":
            out.append(("γ not applied", exact["normalised"]))
        return out

    conv = {"eps": f"{eps:g}", "centring": "none (no mean subtracted, no β)"}
    return Chain("rmsnorm", names, RMSNORM_LABELS, exact, follow, mistakes, conventions=conv)


# ---------------------------------------------------------------------------- positions

PE_LABELS = {"angle": "pos/10000^(2i/d)", "output": "sin/cos(angle)"}
ROPE_LABELS = {"angle": "p·θᵢ", "cos": "cos(p·θᵢ)", "sin": "sin(p·θᵢ)", "output": "rotated x"}


def pe_chain(pos: float, d_model: int, dims: list[int], *, base: float = 10000.0,
             layout: str = "interleaved") -> Chain:
    """Sinusoidal PE at ``pos`` for the coordinates ``dims``: angle, output (vectors over dims;
    one number when one dim is asked)."""

    def values(pos_=pos, d_=d_model, dims_=None, layout_=layout, base_=base) -> dict[str, Any]:
        dims_ = dims if dims_ is None else dims_
        got = [_steps(lambda j=j: numpy_ref.pe_value(pos_, j, d_, base=base_, layout=layout_, return_trace=True))
               for j in dims_]
        if any(not s for s in got):
            return {}
        shape = (lambda a: np.array(a[0])) if len(dims) == 1 else np.array
        return {n: shape([s[n] for s in got]) for n in ("angle", "output")}

    exact = values()
    names = ["angle", "output"]
    other_layout = "concat" if layout == "interleaved" else "interleaved"

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        if name != "output" or "angle" not in theirs:
            return None
        # sin or cos of their angle: the kernel at position = their angle and i = 0 (angle = pos)
        ang = np.atleast_1d(theirs["angle"])
        out = [_steps(lambda a=a, j=j: numpy_ref.pe_value(float(a), j % 2 if layout == "interleaved" else
                                                          (0 if j < (d_model + 1) // 2 else (d_model + 1) // 2),
                                                          d_model, base=base, layout=layout,
                                                          return_trace=True)).get("output")
               for a, j in zip(ang, dims, strict=False)]
        if any(o is None for o in out) or len(out) != len(dims):
            return None
        return np.array(out[0]) if len(dims) == 1 else np.array(out)

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        swapped = [j ^ 1 for j in dims] if layout == "interleaved" and all((j ^ 1) < d_model for j in dims) else None
        out: Mistakes = []
        if swapped is not None and name == "output":
            out.append(("sin and cos swapped (sin belongs to even dims 2i, cos to odd 2i+1)",
                        values(dims_=swapped).get("output")))
        out.append((f"{other_layout} layout instead of {layout}", values(layout_=other_layout).get(name)))
        out.append(("used i instead of 2i in the exponent: pos/10000^(i/d)", values(d_=2 * d_model).get(name)))
        out.append(("used the dimension index itself in the exponent: pos/10000^(dim/d)",
                    values(d_=2 * d_model, dims_=[2 * j for j in dims]).get(name) if name == "angle" else None))
        if name == "output":
            out.append(("calculator in degrees: sin/cos of the angle read in degrees",
                        values(pos_=pos * math.pi / 180).get("output")))
        return out

    conv = {"layout": layout, "base": f"{base:g}", "angle": "pos / base^(2i/d_model), i = frequency index"}
    return Chain("pe", names, PE_LABELS, exact, follow, mistakes, conventions=conv)


def rope_chain(x: Any, pos: float, *, base: float = 10000.0, pairing: str = "interleaved") -> Chain:
    """RoPE of one vector at ``pos``: angle, cos, sin, output (vectors)."""
    x = np.asarray(x, dtype=float)

    def trace(x_=x, pos_=pos, base_=base, pairing_=pairing) -> dict[str, Any]:
        got = _steps(lambda: numpy_ref.rope(x_[None, :], np.array([float(pos_)]), base=base_, pairing=pairing_,
                                            return_trace=True))
        return {n: np.asarray(v)[0] for n, v in got.items()}

    exact = trace()
    names = ["angle", "cos", "sin", "output"]
    other = "half" if pairing == "interleaved" else "interleaved"

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        if "angle" in theirs and name in ("cos", "sin"):
            return np.cos(theirs["angle"]) if name == "cos" else np.sin(theirs["angle"])
        if name == "output" and ("cos" in theirs or "sin" in theirs or "angle" in theirs):
            ang = theirs.get("angle", exact["angle"])
            c = theirs.get("cos", np.cos(ang))
            s = theirs.get("sin", np.sin(ang))
            if pairing == "interleaved":
                a, b = x[0::2], x[1::2]
                return np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(-1)
            a, b = x[: x.size // 2], x[x.size // 2:]
            return np.concatenate([a * c - b * s, a * s + b * c])
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = [
            ("rotated the wrong way (by −pθᵢ)", trace(pos_=-pos).get(name) if name != "angle" else None),
            (f"{other} pairing instead of {pairing}", trace(pairing_=other).get(name) if name == "output" else None),
            ("used i instead of 2i in θᵢ = base^(−2i/d)", trace(base_=math.sqrt(base)).get(name)),
            ("calculator in degrees", trace(pos_=pos * math.pi / 180).get(name) if name != "angle" else None),
        ]
        if name in ("cos", "sin"):
            out.append(("cos and sin swapped", exact["sin" if name == "cos" else "cos"]))
        return out

    conv = {"pairing": pairing, "base": f"{base:g}", "theta": "θᵢ = base^(−2i/d)"}
    return Chain("rope", names, ROPE_LABELS, exact, follow, mistakes, conventions=conv)


# ============================================================================ counts


@dataclass(frozen=True)
class Convention:
    """Another way of counting: ``value`` is the count under it; ``counted`` says what the exact
    figure does (shown when the gap is of its size), ``alt`` what the answer did (shown when the
    answer equals ``value``)."""

    counted: str
    alt: str
    value: float


@dataclass(frozen=True)
class Explanation:
    convention: Convention
    equals: bool  # the answer equals the count under the convention (at the answer's precision)

    @property
    def text(self) -> str:
        c = self.convention
        return f"your figure is the count {c.alt}: {c.value:,.0f}" if self.equals else c.counted


@dataclass
class CountCheck:
    """The verdict on a count (``params``, ``flops``, ``memory``, ``kv-cache``)."""

    quantity: str
    unit: str
    given_text: str
    given: float
    exact: int
    sig_figs: int | None
    ok: bool
    tolerance: str
    explanations: list[Explanation] = field(default_factory=list)
    note: str | None = None
    unit_note: str | None = None  # an answer in bits for a count in bytes (see check_bytes_in_bits)

    @property
    def relative(self) -> float:
        return (self.given - self.exact) / self.exact if self.exact else math.inf

    @property
    def mistake(self) -> str | None:
        if self.unit_note and not self.ok:
            return self.unit_note
        eq = [e for e in self.explanations if e.equals]
        return eq[0].text if eq and not self.ok else None

    def message(self) -> str:
        """One line: the verdict, the relative difference, the likely convention."""
        ex = f"{self.exact:,}"
        if self.unit_note:
            return f"{self.unit_note}; the exact figure is {ex} {self.unit}"
        if self.given == self.exact:
            return f"your {self.given_text} is exactly right: {ex} {self.unit}"
        rel = abs(self.relative)
        if rel < 0.01:
            head = f"your {self.given_text} is within {_pct(rel)} of the exact {ex} {self.unit}"
        else:
            side = "above" if self.given > self.exact else "below"
            head = f"your {self.given_text} is {_pct(rel)} {side} the exact {ex} {self.unit}"
        parts = [head]
        if self.ok:
            parts.append(f"right to the {self.sig_figs} significant figures you gave")
        eq = [e for e in self.explanations if e.equals]
        parts += [e.text for e in (eq or self.explanations)[:1]]
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": [{"name": self.quantity, "given": self.given, "given_text": self.given_text,
                       "expected": self.exact, "ok": self.ok, "follow_through": False, "mistake": self.mistake,
                       "tolerance": self.tolerance}],
            "first_wrong": None if self.ok else self.quantity,
            "unit": self.unit, "relative_difference": self.relative, "significant_figures": self.sig_figs,
            "explanations": [{"text": e.text, "value": e.convention.value, "equals": e.equals}
                             for e in self.explanations],
            "message": self.message(), "note": self.note, "unit_note": self.unit_note,
        }


def _pct(r: float) -> str:
    return f"{r:.2%}" if r < 0.01 else f"{r:.1%}"


def stated_sig_figs(parsed: Any) -> int | None:
    """Significant figures an answer states; trailing zeros of an integer are not counted
    (``110M`` states 2, ``1.10G`` states 3, ``109,482,240`` states 8). None for an expression."""
    sig = getattr(parsed, "sig_digits", None)
    if sig is None:
        return None
    magnitude = abs(parsed.magnitude if parsed.magnitude is not None else parsed.value)
    if getattr(parsed, "decimals", None) == 0 and magnitude != 0:
        lead = round(magnitude / 10.0 ** (math.floor(math.log10(magnitude)) - sig + 1))
        while sig > 1 and lead % 10 == 0:
            lead //= 10
            sig -= 1
    return sig


MIN_SIG_FIGS = 2


def check_count(quantity: str, given_text: str, given: float, exact: int, unit: str, sig: int | None,
                conventions: list[Convention], note: str | None = None) -> CountCheck:
    """Judge a count: exact, or ``exact`` rounded to the answer's significant figures (at least
    :data:`MIN_SIG_FIGS` of them). Conventions the answer equals, or whose difference from the
    exact count is of the size of the gap (between half and twice it), become explanations."""
    if given == exact:
        ok, tol = True, "exact"
    elif sig is None:
        ok, tol = is_correct_exact(given, exact), "exact (an expression was given)"
    else:
        ok = sig >= MIN_SIG_FIGS and is_correct_sig_figs(given, exact, sig)
        tol = f"to the {sig} significant figure{'s' if sig != 1 else ''} given"
        if sig < MIN_SIG_FIGS:
            tol += f" (too rough: give at least {MIN_SIG_FIGS})"
    at = max(sig or 0, MIN_SIG_FIGS)
    gap = given - exact
    ranked = []
    for c in conventions:
        if c.value is None or c.value == exact:
            continue
        equals = given == c.value or (sig is not None and is_correct_sig_figs(given, c.value, at)
                                      and not is_correct_sig_figs(given, exact, at))
        if sig is None and not equals:
            equals = is_correct_exact(given, c.value)
        size = abs(c.value - exact)
        near = gap != 0 and 0.5 <= size / abs(gap) <= 2.0
        if equals or near:
            ranked.append((not equals, abs(size - abs(gap)), Explanation(c, equals)))
    ranked.sort(key=lambda t: (t[0], t[1]))
    return CountCheck(quantity, unit, given_text, given, exact, sig, ok, tol, [e for *_, e in ranked], note)


def check_bytes_in_bits(quantity: str, given_text: str, given_bits: float, unit: str, exact: int,
                        sig: int | None, conventions: list[Convention], note: str | None = None) -> CountCheck:
    """Judge a byte count answered in bits (``16 Gb``; ``unit`` is the parser's spelling,
    ``Gbit``). The answer is never right as it stands: the count is asked in bytes. The
    report says which slip it is: the bits figure is the exact count × 8 ("you answered in
    bits; the key is in bytes (÷ 8)"), or the number typed is the exact count in the byte
    unit of the same prefix (``Gb`` typed for ``GB``), or neither (the conversion is shown)."""
    from drills.answers import unit_info

    given_bytes = given_bits / 8
    base = check_count(quantity, given_text, given_bytes, exact, "bytes", sig, conventions, note)
    byte_unit = "bytes" if unit == "bits" else unit.replace("bit", "B")  # Gbit -> GB, Gibit -> GiB
    shown = f"{given_text} = {given_bytes / float(unit_info(byte_unit)[1]):,.6g} {byte_unit}"
    explanations: list[Explanation] = []
    if base.ok:
        text = f"you answered in bits; the key is in bytes (÷ 8): {shown}, right once divided by 8"
    elif check_count(quantity, given_text, given_bits, exact, "bytes", sig, []).ok:
        text = f"{given_text} is in bits ({unit}), so {shown}; for bytes write {byte_unit} (capital B)"
    else:
        text = f"you answered in bits: {shown}"
        explanations = base.explanations
    return CountCheck(quantity, "bytes", given_text, given_bytes, exact, sig, False, base.tolerance,
                      explanations, note, unit_note=text)


def param_conventions(pb: Any) -> list[Convention]:
    """Counts a student could reach under another convention, from a parameter breakdown."""
    total = pb.total
    comps = [c for c in pb.components if c.group != "lora"]

    def summed(pred: Callable[[Any], bool]) -> int:
        return sum(c.count for c in comps if pred(c))

    out: list[Convention] = []

    def part(what: str, n: int) -> None:
        if n:
            out.append(Convention(f"the exact figure counts {what} ({n:,})", f"without {what}", total - n))

    part("the pooler", summed(lambda c: c.name.startswith("pooler.")))
    part("the classifier", summed(lambda c: c.name.startswith("classifier.")))
    part("the biases of the linear layers", summed(lambda c: c.name.endswith(".bias") and c.group != "norm"))
    part("the norms' γ and β", summed(lambda c: c.group == "norm"))
    part("the untied LM head", summed(lambda c: c.name == "lm_head.weight"))
    part("the learned position table", summed(lambda c: c.name == "position_embedding"))
    part("the segment table", summed(lambda c: c.name == "type_embedding"))
    cfg = pb.config
    if getattr(cfg, "tied_embeddings", False) and getattr(cfg, "lm_head", False):
        tok = summed(lambda c: c.name == "token_embedding")
        out.append(Convention(f"the LM head is tied to the token embedding and counted once ({tok:,})",
                              "with the tied LM head counted twice", total + tok))
    if pb.embedding and pb.non_embedding:
        out.append(Convention(f"the exact figure counts the embeddings ({pb.embedding:,})",
                              "without the embeddings (Kaplan's non-embedding count)", pb.non_embedding))
    return out


def memory_conventions(exact_bytes: int, *, dtype_bytes: float | None = None, kv: bool = False,
                       n_heads: int | None = None, n_kv_heads: int | None = None) -> list[Convention]:
    """Byte counts under the usual slips: GB for GiB and back, bits, another dtype, K or V only."""
    out = [
        Convention("1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes", "in GB written as GiB (divided by 10⁹, labelled GiB)",
                   exact_bytes * 2**30 / 10**9),
        Convention("1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes", "in GiB written as GB (divided by 2³⁰, labelled GB)",
                   exact_bytes * 10**9 / 2**30),
        Convention("the count is in bytes, not bits", "in bits, not bytes (× 8)", exact_bytes * 8),
    ]
    if kv:
        out.append(Convention("K and V are both cached (the factor 2)", "of K or V alone (the factor 2 left out)",
                              exact_bytes / 2))
        if n_heads and n_kv_heads and n_heads != n_kv_heads:
            out.append(Convention(f"only the {n_kv_heads} KV heads are cached, not all {n_heads}",
                                  f"with all {n_heads} query heads cached", exact_bytes * n_heads / n_kv_heads))
    if dtype_bytes:
        from solver.units import DTYPE_BYTES

        for name, b in DTYPE_BYTES.items():
            if float(b) != dtype_bytes and name not in ("tf32", "bf16", "fp64"):
                out.append(Convention(f"{dtype_bytes:g} bytes per element", f"at {float(b):g} bytes per element "
                                      f"({name})", exact_bytes * float(b) / dtype_bytes))
    return out


def flop_conventions(report: Any) -> list[Convention]:
    """FLOP counts under the usual slips: MACs for FLOPs, forward for training, a rule of thumb."""
    total = report.total
    out = [Convention("the count is 2 FLOPs per multiply-add", "in multiply-adds (MACs), not FLOPs", total / 2)]
    if report.mode == "train":
        out.append(Convention("training = forward + backward (3 × forward)", "of the forward pass alone",
                              report.value(report.forward_flops)))
    else:
        out.append(Convention(f"this is a {report.mode} pass, not a training step", "of a training step (× 3)",
                              total * 3))
    att = report.by_group().get("attention_scores")
    if att:
        out.append(Convention(f"the exact figure counts QKᵀ and A·V ({att:,})", "without the attention matmuls",
                              total - att))
        out.append(Convention("attention is counted over the full n×n, causal or not",
                              "with causal attention counted as half", total - att / 2))
    tb = getattr(report, "textbook", None) or {}
    if tb.get("rule_value"):
        out.append(Convention(f"the rule {tb.get('rule')} gives {tb['rule_value']:,} (an estimate)",
                              f"of the rule {tb.get('rule')}", tb["rule_value"]))
    return out
