"""``FlopCounterMode`` with the global total only: what ``solver.models.verify`` reads.

``torch.utils.flop_counter.FlopCounterMode`` also attributes every FLOP to the modules it was
spent in; to know them it enters a ``ModuleTracker``, which hooks every module call (forward and
backward) and costs about a fifth of a pass on the meta device, where every op is a shape
computation. :class:`TotalFlopCounter` is the same class with that tracker replaced by one that
only ever reports the "Global" parent: the same dispatch mode, the same registry of matmul
formulas, the same ``get_total_flops()``; ``get_flop_counts()`` has the "Global" entry alone.
``tests/solver/models/test_counts.py`` checks that it counts what the plain ``FlopCounterMode`` counts.
"""

from __future__ import annotations

from torch.utils.flop_counter import FlopCounterMode


class _GlobalOnly:
    """Stands in for ``ModuleTracker``: FlopCounterMode adds each op's FLOPs to every name in
    ``parents``; here that is always just "Global" (the total)."""

    parents = frozenset({"Global"})

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class TotalFlopCounter(FlopCounterMode):
    """A ``FlopCounterMode(display=False)`` that keeps the total, not the per-module table."""

    def __init__(self) -> None:
        super().__init__(display=False)
        self.mod_tracker = _GlobalOnly()
