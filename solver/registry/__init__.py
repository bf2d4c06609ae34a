"""The formula registry: every formula ``qkv calc`` and the registry-made ``qkv solve`` flags
know, described once next to its code (each module's ``FORMULAS``).

Importing this package imports no formula; :func:`formulas` imports the modules below the
first time it is asked.
"""

from __future__ import annotations

from importlib import import_module

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Formula, Input, Output, formula

#: the modules whose ``FORMULAS`` make up the registry, in the order ``qkv calc --list`` shows them
MODULES = ("solver.counting.formulas", "solver.systems.collectives", "solver.systems.training",
           "solver.systems.roofline", "solver.systems.moe_systems", "solver.systems.sharding",
           "solver.systems.parts", "solver.systems.nodes",
           "solver.systems.inference", "solver.systems.parallelism", "solver.systems.serving",
           "solver.systems.training_scale", "solver.systems.measurements", "solver.systems.lr_schedules",
           "solver.systems.flash_attention", "solver.counting.mla_decode", "solver.systems.context_parallel",
           "solver.systems.paged_serving", "solver.systems.quant", "solver.kernels.float_formats",
           "solver.kernels.quant_error", "solver.kernels.loss_formulas", "solver.counting.window",
           "solver.kernels.rope_scaling", "solver.kernels.vector_formulas", "solver.counting.mlp",
           "solver.kernels.online_softmax")

_CACHE: dict[str, Formula] = {}


def formulas() -> dict[str, Formula]:
    """Every registered formula by name."""
    if not _CACHE:
        for m in MODULES:
            for f in import_module(m).FORMULAS:
                if f.name in _CACHE:
                    raise RuntimeError(f"formula {f.name} is registered twice")
                _CACHE[f.name] = f
    return _CACHE


def get_formula(name: str) -> Formula:
    table = formulas()
    if name in table:
        return table[name]
    from difflib import get_close_matches

    near = get_close_matches(name, list(table), 1)
    raise SolverInputError(f"no formula {name!r}" + (f"; did you mean {near[0]}?" if near else ""), param=None)


__all__ = ["Choice", "Convention", "Formula", "Input", "Output", "formula", "formulas", "get_formula"]
