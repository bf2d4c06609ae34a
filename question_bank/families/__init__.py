"""The problem families; importing this package registers them in ``question_bank.family.FAMILIES``.

Each module keeps statement, answer, solution, misconceptions and metadata of its families
together. Solver modules (numpy, sympy) are imported inside the generators, so this import
stays cheap (no numpy, sympy or torch at import time).
"""

from question_bank.families import (  # noqa: F401 - importing registers the families
    attention,
    attention_systems,
    complexity,
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
    pretraining,
    quantisation,
    scaling,
    serving,
    sliding_window,
    vision_mlp,
)
