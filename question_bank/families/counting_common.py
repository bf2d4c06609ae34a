"""Shared pieces of the counting and hardware families: worked solutions from the solver's
breakdowns, unit wording, and drawing NAT values that stay clear of rounding boundaries.

Nothing here computes an answer: parameter counts come from ``solver.counting.params``
(components with their monomials), FLOPs from ``solver.counting.flops`` and ``solver.systems.roofline``,
bytes from ``solver.counting.memory``, hardware figures from ``solver.systems.chips``/``inference``/
``training`` (each a ``Result`` with worked steps). This module only writes them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from question_bank.family import Draw, Wrong, keep_distinct
from question_bank.grading import answer_text
from question_bank.problem import Key, Problem
from question_bank.render import Doc

GB, GIB, MIB = 10**9, 2**30, 2**20

#: unit name -> (bytes per unit, how a statement says it)
BYTE_UNITS: dict[str, tuple[int, str]] = {
    "GB": (GB, r"GB ($1\,\mathrm{GB} = 10^9$ bytes)"),
    "GiB": (GIB, r"GiB ($1\,\mathrm{GiB} = 2^{30}$ bytes)"),
    "MiB": (MIB, r"MiB ($1\,\mathrm{MiB} = 2^{20}$ bytes)"),
}
OTHER_UNIT = {"GB": ("GiB", GIB), "GiB": ("GB", GB), "MiB": ("MB", 10**6)}


def _tex_factor(f: Any) -> str:
    names = {"d": "d", "L": "L", "L_e": "L_e", "L_d": "L_d", "h": "h", "h_kv": "h_{kv}", "d_h": "d_h",
             "d_ff": "d_{ff}", "V": "V", "P": "P", "T": "T", "E": "E", "r": "r", "C": "C"}
    return names.get(f, str(f)) if isinstance(f, str) else str(f)


def component_formula(c: Any) -> str:
    """A component's monomial in LaTeX (``L\\cdot d\\cdot h\\cdot d_h``)."""
    factors = [f for f in (*c.times_factors, *c.per_factors) if f != 1]
    return r" \cdot ".join(_tex_factor(f) for f in factors) or "1"


def component_substitution(c: Any) -> str:
    shape = r" \times ".join(f"{s:,}".replace(",", r"{,}") for s in c.shape)
    return shape if c.times == 1 else f"{c.times} \\times {shape}"


def component_bullets(components: Sequence[Any]) -> list[str]:
    """One bullet per component: label, formula, substitution and exact count."""
    out = []
    for c in components:
        sub = component_substitution(c)
        mid = "" if sub == big(c.count) else f" = {sub}"
        out.append(f"{c.label.replace('_', chr(92) + '_')}: ${component_formula(c)}{mid} = {big(c.count)}$")
    return out


def add_components(sol: Doc, components: Sequence[Any], total_label: str = "total") -> int:
    """Bullets of the components, then their sum; returns the sum."""
    total = sum(c.count for c in components)
    sol.bullets(component_bullets(components))
    sol.p(f"{total_label} $= " + " + ".join(big(c.count) for c in components) + f" = {big(total)}$")
    return total


def big(x: int) -> str:
    """An integer with thin separators for LaTeX (``1{,}048{,}576``)."""
    return f"{int(x):,}".replace(",", "{,}")


def sci(x: float, digits: int = 4) -> str:
    """``1.2 \\times 10^{22}`` (LaTeX); plain numbers below 10⁶ as they are."""
    x = float(x)
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e6:
        s = f"{x:.{digits}g}"
        return s
    m, e = f"{x:.{digits - 1}e}".split("e")
    m = m.rstrip("0").rstrip(".")
    return f"{m} \\times 10^{{{int(e)}}}"


def result_steps(sol: Doc, steps: Iterable[Any], unit_words: dict[str, str] | None = None) -> None:
    """A solver ``Result``'s worked steps as bullets: formula = substitution = value unit."""
    items = []
    for s in steps:
        v = s.value
        try:
            fv = float(v)
            val = big(int(fv)) if fv.is_integer() and abs(fv) < 1e15 else sci(fv, 5)
        except (TypeError, ValueError):
            val = str(v)
        unit = (unit_words or {}).get(s.unit, s.unit)
        items.append(f"{s.formula} = {s.substitution} = ${val}$ {unit}".rstrip())
    sol.bullets(items)


def nat_problem(d: Draw, statement: Doc, key: Key, steps: Iterable[Any], wrongs: Iterable[Wrong | None],
                given: dict[str, Any], notes: Sequence[str] = ()) -> Problem:
    """A NAT problem whose worked solution is the solver's ``steps`` as bullets, then each of ``notes``
    as a paragraph, then the answer line; the misconceptions are the ``wrongs`` (None: not asked
    here) that a grader can tell apart from the key and from each other."""
    sol = Doc()
    result_steps(sol, steps)
    for note in notes:
        sol.p(note)
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=statement, key=key, solution=sol,
                     misconceptions=keep_distinct(key, [w for w in wrongs if w]), given=given)


def tokens_text(n: int) -> str:
    """``7 billion`` / ``125 million`` / ``1.5 trillion`` for a round count."""
    for div, word in ((10**12, "trillion"), (10**9, "billion"), (10**6, "million")):
        if n >= div:
            q = n / div
            return f"{q:g} {word}"
    return f"{n:,}"
