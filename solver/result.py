"""The result of every formula of ``solver.systems`` (and of the T5/ViT counts): the answer, its
unit, the conventions used, a breakdown of named figures, and the worked solution as steps of
(formula, substitution, value, unit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Step:
    """One line of a worked solution: ``formula`` = ``substitution`` = ``value`` ``unit``."""

    formula: str
    substitution: str
    value: Any
    unit: str = ""


@dataclass
class Result:
    """An answer with its unit, the conventions behind it, named figures, and the worked steps."""

    answer: Any
    unit: str
    convention: dict[str, Any] = field(default_factory=dict)
    breakdown: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    def step(self, formula: str, substitution: str, value: Any, unit: str = "") -> Any:
        """Record a step and return its value (so formulas read ``t = r.step(...)``)."""
        self.steps.append(Step(formula, substitution, value, unit))
        return value

    def to_json(self) -> dict[str, Any]:
        return {"answer": as_number(self.answer), "unit": self.unit, "convention": self.convention,
                "breakdown": {k: as_number(v) for k, v in self.breakdown.items()},
                "steps": [{"formula": s.formula, "substitution": s.substitution,
                           "value": as_number(s.value), "unit": s.unit} for s in self.steps]}


def as_number(x: Any) -> Any:
    """Fractions become ints when whole, floats otherwise; everything else is left alone."""
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else float(x)
    return x


def fmt(x: Any) -> str:
    """A number for a substitution line: :func:`solver.units.format_number` (the one formatter:
    whole numbers with separators, others to 6 significant figures rounded half up)."""
    from solver.units import format_number

    x = as_number(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return format_number(x, 6)
