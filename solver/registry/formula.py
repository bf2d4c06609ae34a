"""One description per formula: inputs, outputs and conventions, from which ``qkv calc`` and
``qkv solve`` read their arguments, help, JSON and worked solution.

A :class:`Formula` is data. Its ``compute`` takes the inputs by name (values in base units:
bytes, FLOP, seconds, or plain numbers; a model as its ``ModelConfig``, a chip as its
``Hardware``, a convention as its chosen name) and returns a :class:`solver.result.Result`
whose ``breakdown`` holds every output that the given inputs allow. An output lists the inputs
it ``needs``; an input is demanded only when an asked output needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solver.errors import SolverInputError

REQUIRED = object()

#: input kinds that are not quantities
KINDS = ("quantity", "count", "fraction", "model", "chip", "dtype", "shape", "vector", "matrix")

#: the most entries a vector input takes, and the most rows and entries a matrix input takes
MAX_VECTOR = 4096
MAX_ROWS = 256
MAX_MATRIX = 65536


@dataclass(frozen=True)
class Input:
    """One input: ``unit`` is a unit expression (``B``, ``B/s``, ``s``, ``FLOP/s``) for a quantity,
    ``""`` for a plain number; ``kind`` says how it is read. A ``vector`` (``[1, 2, 3]``) or a
    ``matrix`` (``[[1, 0], [0, 1]]``, a list of rows) holds plain numbers, each within
    ``minimum`` and ``maximum``; the compute function gets a list of numbers (a Fraction where the
    figure was typed exactly, else a float; an int for an ``integer`` input), a matrix as a list of rows."""

    name: str
    help: str
    unit: str = ""
    kind: str = "quantity"
    default: Any = REQUIRED
    aliases: tuple[str, ...] = ()
    minimum: float | None = 0
    maximum: float | None = None
    integer: bool = False
    #: sequence lengths: ``8k`` is 8,192 here, as "an 8k context" is meant
    binary_k: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "kind": self.kind, "help": self.help,
                "required": self.required, "default": None if self.required else self.default,
                "aliases": list(self.aliases), "minimum": self.minimum, "maximum": self.maximum,
                "integer": self.integer, "k_means_1024": self.binary_k}


@dataclass(frozen=True)
class Choice:
    """One choice of a convention: what it means and which text uses it."""

    meaning: str
    source: str = ""


@dataclass(frozen=True)
class Convention:
    """A named choice (``ring``: ``unidirectional`` or ``bidirectional``); ``default`` is one key."""

    name: str
    help: str
    choices: dict[str, Choice]
    default: str

    def check(self, value: str) -> str:
        v = str(value).strip().lower().replace("_", "-")
        if v not in self.choices:
            from difflib import get_close_matches

            near = get_close_matches(v, list(self.choices), 1)
            raise SolverInputError(f"must be one of {', '.join(self.choices)} (got {value!r})"
                                   + (f"; did you mean {near[0]}?" if near else ""), param=self.name)
        return v

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "help": self.help, "default": self.default,
                "choices": {k: {"meaning": c.meaning, "source": c.source} for k, c in self.choices.items()}}


@dataclass(frozen=True)
class Output:
    """One output: a key of the result's breakdown, its unit, and the inputs it needs."""

    name: str
    unit: str
    help: str
    needs: tuple[str, ...] = ()
    key: str = ""  # the result's breakdown key, when it differs from the name
    #: what the figure is: a number (with ``unit``), a vector or a matrix (plain numbers), or either
    kind: str = "number"

    @property
    def breakdown_key(self) -> str:
        return self.key or self.name

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "help": self.help, "needs": list(self.needs),
                "breakdown_key": self.breakdown_key, "kind": self.kind}


@dataclass(frozen=True)
class Formula:
    """A formula: its name in ``qkv calc``, what it computes, and how."""

    name: str
    summary: str
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    compute: Callable[..., Any]
    conventions: tuple[Convention, ...] = ()
    #: the ``qkv solve`` command made from (or reading) this entry, as it is typed
    solve: str | None = None
    source: str = ""
    module: str = field(default="", compare=False)

    def input(self, name: str) -> Input:
        for i in self.inputs:
            if name == i.name or name in i.aliases:
                return i
        raise KeyError(name)

    def convention(self, name: str) -> Convention:
        for c in self.conventions:
            if c.name == name:
                return c
        raise KeyError(name)

    def output(self, name: str) -> Output:
        for o in self.outputs:
            if o.name == name:
                return o
        raise KeyError(name)

    def missing(self, output: str, given: set[str]) -> list[str]:
        """The inputs ``output`` needs that are not in ``given``."""
        return [n for n in self.output(output).needs if n not in given]

    def parameter_names(self) -> list[str]:
        return [i.name for i in self.inputs] + [c.name for c in self.conventions]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "solve": self.solve, "source": self.source,
                "module": self.module, "inputs": [i.as_json() for i in self.inputs],
                "outputs": [o.as_json() for o in self.outputs],
                "conventions": [c.as_json() for c in self.conventions]}

    def run(self, values: dict[str, Any], conventions: dict[str, str] | None = None):
        """Check the inputs against the description, fill defaults, and compute."""
        kw: dict[str, Any] = {}
        for i in self.inputs:
            if i.name in values and values[i.name] is not None:
                kw[i.name] = values[i.name]
            elif not i.required:
                kw[i.name] = i.default
        unknown = set(values) - {i.name for i in self.inputs}
        if unknown:
            raise SolverInputError(f"{self.name} takes no input {sorted(unknown)[0]}", param=sorted(unknown)[0])
        chosen = dict(conventions or {})
        for c in self.conventions:
            kw[c.name] = c.check(chosen.pop(c.name, c.default))
        if chosen:
            raise SolverInputError(f"{self.name} has no convention {sorted(chosen)[0]}", param=sorted(chosen)[0])
        return self.compute(**kw)


def formula(name: str, summary: str, inputs, outputs, *, conventions=(), solve=None, source=""):
    """Decorator: describe ``compute`` as the formula ``name`` (kept in the module's ``FORMULAS``)."""

    def wrap(fn):
        f = Formula(name, summary, tuple(inputs), tuple(outputs), fn, tuple(conventions), solve, source,
                    module=fn.__module__)
        fn.formula = f
        return fn

    return wrap
