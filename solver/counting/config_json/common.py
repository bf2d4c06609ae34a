"""Pieces shared by the readers of issue 20's model types (one module per family beside this one).

Each family module defines ``READERS`` (model_type → ``reader(raw, get, refused) -> (fields,
notes)``, the protocol of :func:`solver.counting.config_json.read_hf_config`) and ``NEUTRAL`` (the
family's own keys without effect on the counts, besides the shared ``NEUTRAL``).
"""

from __future__ import annotations

from typing import Any

from solver.errors import SolverInputError


def req(get, key: str) -> Any:
    """The value of ``key``; refused in one line when the file has none."""
    value = get(key)
    if value is None:
        raise SolverInputError(f"config.json has no {key!r}", param="config")
    return value


def first(get, *keys: str, default: Any = None) -> Any:
    """The value of the first of ``keys`` the file has (every one is marked read)."""
    values = [get(k) for k in keys]
    return next((v for v in values if v is not None), default)


def kv_heads(get, n_heads: int) -> int | None:
    """``num_key_value_heads`` as ModelConfig's ``n_kv_heads`` (None = as many as the query heads)."""
    kv = get("num_key_value_heads")
    return None if kv in (None, n_heads) else kv


def rope_fraction(raw: dict, get, default: float = 1.0) -> float:
    """The fraction of each head that RoPE rotates: ``partial_rotary_factor`` (top level, or in
    ``rope_parameters``/``rope_scaling`` as transformers ≥ 5 writes it) or GPT-NeoX's ``rotary_pct``."""
    for key in ("partial_rotary_factor", "rotary_pct"):
        if raw.get(key) is not None:
            return float(get(key))
    for key in ("rope_parameters", "rope_scaling"):
        nested = raw.get(key)
        if isinstance(nested, dict) and nested.get("partial_rotary_factor") is not None:
            return float(nested["partial_rotary_factor"])
    return default


def rotary_dim_of(head_dim: int, fraction: float, notes: list[str]) -> int:
    """ModelConfig's ``rotary_dim`` for RoPE on ``fraction`` of a head: int(d_h · fraction) as
    HuggingFace computes it; 0 (= the whole head) at 1. Partial RoPE has no parameters and no
    matmul: a width qkv cannot model (odd, or 0) is noted and changes no count."""
    if fraction >= 1:
        return 0
    dim = int(head_dim * fraction)
    if dim <= 0 or dim % 2:
        notes.append(f"RoPE on {dim} of {head_dim} features per head: not modelled in the reference model "
                     "(no parameters, no matmul: no effect on the counts)")
        return 0
    return dim


def window_fields(raw: dict, get, refused: list[str], n_layers: int, window: Any,
                  default_pattern: int = 0) -> dict[str, Any]:
    """``sliding_window`` and ``global_every`` from a window and the layer pattern: ``layer_types``
    (a list of "sliding_attention"/"full_attention"), or ``sliding_window_pattern`` k (every k-th layer
    global, Gemma 3), or ``default_pattern`` (the class's own). A pattern other than "every k-th layer
    global" is refused by name."""
    if not window:
        get("layer_types")
        get("sliding_window_pattern")
        return {}
    types = get("layer_types")
    pattern = first(get, "sliding_window_pattern", "_sliding_window_pattern", default=default_pattern)
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            refused.append(f"layer_types (needs one entry per layer, {n_layers})")
            return {}
        local = [t in ("sliding_attention", "chunked_attention") for t in types]
        if not any(local):
            return {}
        if all(local):
            return {"sliding_window": int(window), "global_every": 0}
        full = [i + 1 for i, is_local in enumerate(local) if not is_local]  # 1-based global layers
        if full != list(range(full[0], n_layers + 1, full[0])):
            refused.append("layer_types (a pattern other than every k-th layer global is not modelled)")
            return {}
        return {"sliding_window": int(window), "global_every": full[0]}
    return {"sliding_window": int(window), "global_every": int(pattern or 0)}


def check_act(act: Any, allowed: tuple[str, ...], key: str, refused: list[str]) -> None:
    if act is not None and act not in allowed:
        refused.append(f"{key}={act!r} (modelled: {', '.join(allowed)})")


def gelu_or_relu(act: Any) -> str:
    return "relu" if act == "relu" else "gelu"


GELUS = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate", "relu")
