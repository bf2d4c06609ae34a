"""Step traces: the named intermediate results of a computation.

Every kernel in ``solver.kernels.numpy_ref``, ``solver.kernels.torch_ref`` and ``solver.kernels.sympy_ref`` takes
``return_trace=False``; with ``return_trace=True`` it returns ``(result, trace)`` where
``trace`` is a :class:`Trace`: an ordered list of :class:`Step` that can also be indexed by
step name. Worked solutions and the hand-computation checker are built on these names, so
they are an interface; each kernel's docstring lists its step names. The common ones:

========== =====================================================================
kernel     step names, in order
========== =====================================================================
attention  [q, k, v (only when projecting from x)], scores (Q Kᵀ), scaled (scores
           × scale), masked (scaled + additive mask; only with a mask or causal),
           weights (softmax over the last axis), output (weights V)
softmax    scaled (x / T; only with a temperature), shifted (x − max x), exp, sum,
           output
layernorm  mean, variance (biased: divides by d, as PyTorch), normalised
           ((x − mean)/√(variance + eps)), output (γ·normalised + β)
rmsnorm    mean_square, rms (√(mean_square + eps)), normalised, output
pe         angle (pos / 10000^(2i/d)), output (sin or cos of the angle)
rope       angle (pos·θᵢ), cos, sin, output (the rotated vector)
========== =====================================================================
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    """One named intermediate result.

    ``name`` is the stable identifier (see the module docstring); ``formula`` is a
    plain-Unicode formula for the terminal (``S = Q·Kᵀ``) and ``latex`` the same in LaTeX.
    ``value`` is whatever the kernel computes with: a NumPy array, a Torch tensor, a SymPy
    object, or a Python number.
    """

    name: str
    value: Any
    formula: str = ""
    latex: str = ""
    note: str = ""


@dataclass
class Trace:
    """An ordered list of steps, addressable by position or by name."""

    steps: list[Step] = field(default_factory=list)

    def add(self, name: str, value: Any, formula: str = "", latex: str = "", note: str = "") -> Any:
        """Append a step and return its value, so kernels can write ``s = tr.add("scores", q @ k.T)``."""
        if name in self:
            raise KeyError(f"step {name!r} recorded twice")
        self.steps.append(Step(name, value, formula, latex, note))
        return value

    def names(self) -> list[str]:
        return [s.name for s in self.steps]

    def values(self) -> dict[str, Any]:
        return {s.name: s.value for s in self.steps}

    def __contains__(self, name: object) -> bool:
        return any(s.name == name for s in self.steps)

    def __getitem__(self, key: int | str) -> Step:
        if isinstance(key, int):
            return self.steps[key]
        for s in self.steps:
            if s.name == key:
                return s
        raise KeyError(f"no step named {key!r}; steps are {self.names()}")

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def to_json(self) -> list[dict[str, Any]]:
        """``[{"name", "formula", "value"}, ...]`` with values as nested lists of floats."""
        out = []
        for s in self.steps:
            v = s.value
            if hasattr(v, "detach"):
                v = v.detach().cpu().numpy()
            if getattr(v, "is_Matrix", False):
                v = [[float(x) for x in row] for row in v.tolist()]
            elif hasattr(v, "tolist"):
                v = v.tolist()
            elif type(v).__module__.startswith("sympy"):
                v = float(v)
            out.append({"name": s.name, "formula": s.formula, "value": v})
        return out
