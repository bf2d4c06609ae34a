"""The problem families; importing this package registers them in ``question_bank.family.FAMILIES``.

Each module keeps statement, answer, solution, misconceptions and metadata of its families
together. Solver modules (numpy, sympy) are imported inside the generators, so this import
stays cheap (no numpy, sympy or torch at import time).

The quiz imports only the modules of the families it asks (``question_bank.family_index``): it
imports this package with ``question_bank.family._partial_import`` set, which leaves the modules
out; :func:`load_all` (what :func:`question_bank.family.all_families` calls) imports them all then.
"""

import importlib
import threading

from question_bank import family as _family

#: Every family module, in the order they register their families.
MODULES = (
    "attention",
    "attention_systems",
    "complexity",
    "computed_statements",
    "concepts",
    "counting_flops",
    "counting_memory",
    "counting_params",
    "counting_scaling",
    "hardware",
    "hardware_inference",
    "hardware_training",
    "heads",
    "latent_attention",
    "loss_sampling",
    "low_precision",
    "moe",
    "normalisation",
    "parallelism",
    "positional",
    "positional_relative",
    "precision_scale",
    "pretraining",
    "quantisation",
    "scaling",
    "scaling_arithmetic",
    "serving",
    "sliding_window",
    "vision_mlp",
    "zoo",
)

_LOCK = threading.RLock()
_complete = False
#: whether the package was imported without its modules (then some families registered out of order)
_partial = _family._partial_import


def _register_views() -> None:
    """Issue 26: the numeric families listed in ``question_bank.numeric_mcq.NUMERIC_MCQ`` are drawn
    as MCQs too (their views ``<family>.mcq``), registered after the families they view."""
    from question_bank import numeric_mcq
    from question_bank.family import FAMILIES

    numeric_mcq.register(FAMILIES)


def _canonical_order() -> None:
    """``FAMILIES`` in the order a plain import registers them (every module in :data:`MODULES`
    order, then the views), also after some families were loaded first (``question_bank.family_index``)."""
    from question_bank.family import FAMILIES
    from question_bank.family_index import FAMILY_INDEX

    rank = {fid: i for i, fid in enumerate(FAMILY_INDEX)}
    order = sorted(FAMILIES, key=lambda fid: rank.get(fid, len(rank)))  # stable: unknown ids keep their order
    if order != list(FAMILIES):
        for fid in order:  # moved to the end one by one: each stays registered throughout
            FAMILIES[fid] = FAMILIES.pop(fid)


def load_all() -> None:
    """Import every family module and register the views (once)."""
    global _complete
    if _complete:
        return
    with _LOCK:
        if _complete:
            return
        for name in MODULES:
            importlib.import_module(f"{__name__}.{name}")
        _register_views()
        if _partial:
            _canonical_order()
        _complete = True


if not _partial:
    load_all()
