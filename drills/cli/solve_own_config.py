"""``qkv solve params --config FILE`` for a T5 or ViT config.json: their own counts
(``solver.counting.t5.t5_params``, ``solver.counting.vit.vit_params``), printed as every solve
command prints (``answer``, ``unit``, ``convention``, ``breakdown``, ``--json``, ``--explain``).

The ModelConfig flags and the scaling-book conventions do not apply to these counts: given with
such a file they are refused in one line (edit the file instead).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click

from drills.cli.model_flags import given_fields
from drills.output import InputError


def own_model_type(path: str | None) -> str | None:
    """``"t5"`` or ``"vit"`` when ``path`` is such a config.json; ``None`` otherwise (or unreadable:
    the ModelConfig reader then says why)."""
    from solver.counting.config_json.t5_vit import OWN_MODEL_TYPES

    if not path:
        return None
    from solver.counting.config_json import read_config_bytes
    from solver.errors import SolverInputError

    try:
        kind = json.loads(read_config_bytes(path)).get("model_type")
    except (SolverInputError, ValueError, AttributeError, RecursionError):
        return None  # the ModelConfig reader says why, in one line
    return kind if kind in OWN_MODEL_TYPES else None


def own_config_params(kw: dict[str, Any], as_json: bool, explain: bool, norms_per_layer: str,
                      no_embeddings: bool) -> bool:
    """Print the count when ``--config`` is a T5/ViT file and return True; False for any other file."""
    from drills.cli.solve_hardware import show
    from solver.counting.config_json.t5_vit import read_hf_own_config
    from solver.counting.t5 import t5_params
    from solver.counting.vit import vit_params
    from solver.errors import SolverInputError

    path = kw.get("config_file")
    kind = own_model_type(path)
    if kind is None:
        return False
    if kw.get("preset"):
        raise InputError("give --preset or --config, not both", "--config")
    flags = sorted(given_fields(kw))
    if norms_per_layer != "two":
        flags.append("norms_per_layer")
    if no_embeddings:
        flags.append("no_embeddings")
    if flags:
        names = ", ".join("--" + f.replace("_", "-") for f in flags)
        raise InputError(f"{names}: not read with a {'T5' if kind == 't5' else 'ViT'} config.json (its own count); edit the file",
                         "--config")
    try:
        cfg, notes = read_hf_own_config(path)
        r = (t5_params if kind == "t5" else vit_params)(cfg)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    for note in notes:
        click.echo(f"note: {note}", err=True)
    r.convention["counted"] = "trainable scalars; a shared (tied) tensor once"
    r.convention["config"] = {"read_from": str(path), "model_type": kind, **asdict(cfg)}
    show(r, as_json, explain)
    return True
