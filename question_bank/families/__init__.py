"""The problem families; importing this package registers them in ``question_bank.family.FAMILIES``.

Each module keeps statement, answer, solution, misconceptions and metadata of its families
together. Solver modules (numpy, sympy) are imported inside the generators, so this import
stays cheap (no numpy, sympy or torch at import time).
"""

from question_bank.families import (  # noqa: F401 - importing registers the families
    attention,
    attention_systems,
    complexity,
    computed_statements,
    concepts,
    counting_flops,
    counting_memory,
    counting_params,
    counting_scaling,
    hardware,
    hardware_inference,
    hardware_training,
    heads,
    latent_attention,
    loss_sampling,
    low_precision,
    moe,
    normalisation,
    parallelism,
    positional,
    positional_relative,
    precision_scale,
    pretraining,
    quantisation,
    scaling,
    scaling_arithmetic,
    serving,
    sliding_window,
    vision_mlp,
    zoo,
)


def _register_views() -> None:
    """Issue 26: the numeric families listed in ``question_bank.numeric_mcq.NUMERIC_MCQ`` are drawn
    as MCQs too (their views ``<family>.mcq``), registered after the families they view."""
    from question_bank import numeric_mcq
    from question_bank.family import FAMILIES

    numeric_mcq.register(FAMILIES)


_register_views()
