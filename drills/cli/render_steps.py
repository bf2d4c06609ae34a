"""Render a step trace as a worked answer for the terminal (plain aligned text).

Input is plain data, so any command can use it: a list of :class:`RenderedStep` (name,
formula, float value as nested lists, and optionally the exact SymPy value). Numbers are
rounded here and only here (``decimals`` places); exact values are printed in a compact
one-line form (``√2/2``, ``exp(−√2/2)``) next to their decimals. SymPy is imported only when
an exact value is present.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

INDENT = "    "
MAX_WIDTH = 100  # wider exact matrices are listed entry by entry


@dataclass(frozen=True)
class RenderedStep:
    name: str
    formula: str
    value: Any  # float, nested lists of floats, or a list of matrices (one per head)
    exact: Any = None  # the SymPy value (same shape), or None


def format_number(x: Any, decimals: int = 4) -> str:
    """Fixed-point with ``decimals`` places rounded half up (the quiz's rule, solver.units.round_half_up);
    −0 prints as 0, ±inf as ±∞, integers stay short."""
    if isinstance(x, bool):
        return str(int(x))
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x)).replace("-", "−")
    from solver.units import round_half_up

    s = f"{round_half_up(x, decimals):.{decimals}f}"  # the quiz's rule: half up, 0.125 -> 0.13
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", "−")


def _nodes(expr: Any, stop: int) -> int:
    """The nodes of ``expr``'s tree, counted up to ``stop``."""
    from sympy import preorder_traversal

    n = 0
    for _ in preorder_traversal(expr):
        n += 1
        if n >= stop:
            break
    return n


@functools.lru_cache(maxsize=4096)  # a wide matrix prints each entry twice (grid, then one per line)
def exact_str(expr: Any) -> str:
    """A SymPy expression on one line: √ for square roots, · for products, −∞ for −oo."""
    from sympy import S
    from sympy.printing.str import StrPrinter

    class _Printer(StrPrinter):
        def _print_Pow(self, e, rational=False):
            if e.exp == S.Half or e.exp == -S.Half:
                base = self._print(e.base)
                root = f"√{base}" if e.base.is_Atom else f"√({base})"
                return root if e.exp == S.Half else f"1/{root}"
            return super()._print_Pow(e, rational)

    # a large expression (the exact attention output of a 16 × 16 input) is printed in the order
    # it was built: sorting its terms evaluates each numerically and took most of a minute
    large = hasattr(expr, "args") and _nodes(expr, 60) >= 60
    text = _Printer({"order": "none"} if large else {}).doprint(expr)
    return text.replace("**", "^").replace("*", "·").replace("-oo", "−∞").replace("oo", "∞").replace("-", "−")


def _depth(v: Any) -> int:
    d = 0
    while isinstance(v, (list, tuple)):
        if not v:
            return d + 1
        v = v[0]
        d += 1
    return d


def _exact_rows(exact: Any) -> Any:
    """SymPy value → nested lists of expressions with the same nesting as the float value."""
    if isinstance(exact, (list, tuple)):
        return [_exact_rows(e) for e in exact]
    if getattr(exact, "is_Matrix", False):
        return exact.tolist()
    return exact


def _grid(cells: list[list[str]], indent: str) -> list[str]:
    widths = [max(len(row[j]) for row in cells) for j in range(len(cells[0]))]
    return [indent + "[ " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " ]" for row in cells]


def _is_exactly_decimal(expr: Any, text: str) -> bool:
    """True when the expression is the number its decimal shows (an integer, say)."""
    try:
        return bool(expr.is_Integer) or (bool(expr.is_Rational) and float(expr) == float(text.replace("−", "-")))
    except AttributeError:
        return False


def _cell(value: Any, expr: Any, decimals: int) -> str:
    if isinstance(value, str):  # pre-formatted (e.g. an input as the user typed it)
        return value
    dec = format_number(value, decimals)
    if expr is None:
        return dec
    ex = exact_str(expr)
    if ex == dec or _is_exactly_decimal(expr, dec) or ex in ("∞", "−∞"):
        return dec
    return f"{ex} ≈ {dec}"


def render_value(value: Any, exact: Any = None, decimals: int = 4, indent: str = INDENT) -> list[str]:
    """Lines showing one value: a scalar, a vector, a matrix, or a list of matrices."""
    exact = _exact_rows(exact) if exact is not None else None
    depth = _depth(value)
    if depth == 0:
        return [indent + _cell(value, exact, decimals)]
    if depth == 1:
        ex = exact[0] if exact is not None and _depth(exact) == 2 else exact
        cells = [[_cell(v, ex[j] if ex is not None else None, decimals) for j, v in enumerate(value)]]
        return _fit(cells, value, ex, decimals, indent)
    if depth == 2:
        cells = [
            [_cell(v, exact[i][j] if exact is not None else None, decimals) for j, v in enumerate(row)]
            for i, row in enumerate(value)
        ]
        return _fit(cells, value, exact, decimals, indent)
    lines = []
    for h, sub in enumerate(value):
        lines.append(f"{indent}head {h + 1}:")
        lines += render_value(sub, exact[h] if exact is not None else None, decimals, indent + "  ")
    return lines


def _fit(cells: list[list[str]], value: Any, exact: Any, decimals: int, indent: str) -> list[str]:
    lines = _grid(cells, indent)
    if max(len(line) for line in lines) <= MAX_WIDTH or exact is None:
        return lines
    # too wide: decimals as a grid, then the exact entries one per line
    rows = value if _depth(value) == 2 else [value]
    ex_rows = exact if _depth(exact) == 2 else [exact]
    lines = _grid([[format_number(v, decimals) for v in row] for row in rows], indent)
    lines.append(indent + "exactly (entries counted from 1, as qkv check counts them):")
    for i, row in enumerate(ex_rows):
        for j, e in enumerate(row):
            where = f"({j + 1})" if len(rows) == 1 else f"({i + 1},{j + 1})"
            lines.append(f"{indent}  {where} = {exact_str(e)}")
    return lines


def render_trace(
    steps: list[RenderedStep],
    *,
    title: str = "",
    conventions: dict[str, str] | None = None,
    answer: RenderedStep | None = None,
    decimals: int = 4,
    given: list[RenderedStep] | None = None,
) -> str:
    """The worked answer: title, conventions, the given inputs, numbered steps (formula and
    values), and the answer."""
    lines: list[str] = []
    if title:
        lines += [title, ""]
    if conventions:
        width = max(len(k) for k in conventions)
        lines.append("Conventions:")
        lines += [f"  {k.ljust(width)}  {v}" for k, v in conventions.items()]
        lines.append("")
    if given:
        lines.append("Given:")
        for g in given:
            lines.append(f"  {g.name} =")
            lines += render_value(g.value, g.exact, decimals)
        lines.append("")
    for n, step in enumerate(steps, 1):
        head = f"Step {n}. {step.name}"
        lines.append(f"{head}:  {step.formula}" if step.formula else head)
        lines += render_value(step.value, step.exact, decimals)
        lines.append("")
    if answer is not None:
        lines.append(f"Answer ({answer.name}, rounded to {decimals} decimal places):")
        lines += render_value(answer.value, answer.exact, decimals)
    return "\n".join(lines).rstrip() + "\n"
