"""The counting engine: exact parameters, matmul FLOPs and memory of any ``ModelConfig``.

One import for everything (no torch, no sympy at import time: the quiz path uses it):

- ``param_breakdown(cfg) -> ParamBreakdown``, ``param_count(cfg) -> int`` (solver.counting.params)
- ``matmul_flops(cfg, batch, seq, mode, convention) -> FlopReport`` (solver.counting.flops)
- memory (solver.counting.memory): ``*_bytes`` return an exact int of bytes, ``*_report`` a
  ``MemoryReport`` (items, formula, convention, ``.bytes``/``.gb``/``.gib``):
  ``weights_bytes(cfg, dtype)``/``weights_report``, ``kv_cache_bytes(n_layers, batch, seq,
  n_kv_heads, d_head, dtype)``, ``kv_cache_bytes_cfg(cfg, batch, seq, dtype)``/
  ``kv_cache_report``, ``attention_scores_bytes(batch, n_heads, seq, dtype, kv_seq)``/
  ``attention_scores_report``, ``training_bytes(cfg, mode)``/``training_report``

The conventions are in each module's docstring; the model they describe is the one in
``solver.counting.config``'s docstring, built by ``solver.models``.
"""

from solver.counting.flops import FlopReport, FlopTerm, OtherOp, matmul_flops
from solver.counting.memory import (
    ADAM_BYTES,
    MemoryItem,
    MemoryReport,
    attention_scores_bytes,
    attention_scores_report,
    kv_cache_bytes,
    kv_cache_bytes_cfg,
    kv_cache_report,
    sdpa_math_workspace,
    training_bytes,
    training_report,
    weights_bytes,
    weights_report,
)
from solver.counting.params import ParamBreakdown, ParamComponent, param_breakdown, param_count, symbol_values

__all__ = [
    "ADAM_BYTES", "FlopReport", "FlopTerm", "MemoryItem", "MemoryReport", "OtherOp", "ParamBreakdown",
    "ParamComponent", "attention_scores_bytes", "attention_scores_report", "sdpa_math_workspace", "kv_cache_bytes", "kv_cache_bytes_cfg",
    "kv_cache_report", "matmul_flops", "param_breakdown", "param_count", "symbol_values", "training_bytes",
    "training_report", "weights_bytes", "weights_report",
]
