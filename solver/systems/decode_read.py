"""What one decode step reads from memory: the weights of the experts a batch touches, the cache
the layers really hold (sliding window, latent attention), and the parameters its FLOPs use.

A dense model reads every weight once per step. A mixture-of-experts layer reads the router,
its shared experts and only the routed experts that at least one of the batch's B tokens picked;
a mixture-of-experts model's (untied) input embedding is a lookup, read one row per token of the
batch (B·d_model values), while its LM head reads its whole matrix (issue 21).
Under uniform routing (each token picks a uniformly random set of k of the E experts,
independently of the other tokens) an expert is missed by one token with probability 1 − k/E,
so the expected number of distinct experts per layer is

    E · (1 − (1 − k/E)^B),

between k (B = 1) and E; the worst case is min(E, B·k) (every token picks experts no other
token picked). ``experts="all"`` is the dense reading (every expert), an upper bound.

Conventions: parameters are the base model's (``solver.counting.params``: LoRA adapters left out);
weights are read at ``weight_dtype``, the cache at ``kv_dtype``; FLOPs are 2 per multiply-add on
the ACTIVE parameters (``ParamBreakdown.active``: top_k of the E routed experts) per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from solver.counting.config import ModelConfig
from solver.counting.memory import kv_cache_report
from solver.counting.params import param_breakdown
from solver.errors import SolverInputError
from solver.units import dtype_bytes

if TYPE_CHECKING:  # issue 37
    from solver.counting.quantization import QuantWeights

EXPERT_CASES = ("expected", "worst", "all")


def expected_distinct_experts(n_experts: int, top_k: int, batch: int) -> Fraction:
    """E·(1 − (1 − k/E)^B): the expected number of experts B uniformly routed tokens touch.

    Exact for B ≤ 4096; above, (1 − k/E)^B is taken in double precision (the exact power of a
    batch of 10^18 would have ~10^18 digits), which is within 1 ulp of the exact value."""
    _check(n_experts, top_k, batch)
    miss = 1 - Fraction(top_k, n_experts)
    if batch > 4096:
        return n_experts * (1 - Fraction(float(miss) ** batch))
    return n_experts * (1 - miss**batch)


def worst_case_experts(n_experts: int, top_k: int, batch: int) -> int:
    """min(E, B·k): the most experts B tokens can touch."""
    _check(n_experts, top_k, batch)
    return min(n_experts, batch * top_k)


def _check(E: int, k: int, B: int) -> None:
    for name, value in (("n_experts", E), ("top_k", k), ("batch", B)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SolverInputError(f"must be an integer >= 1 (got {value!r})", param=name)
    if k > E:
        raise SolverInputError(f"must be at most n_experts ({E})", param="top_k")


@dataclass(frozen=True)
class ModelRead:
    """Bytes one decode step reads and the parameters its FLOPs use (see the module docstring)."""

    weight_bytes: Fraction
    weights_formula: str
    weights_substituted: str
    kv_bytes: Fraction
    kv_formula: str
    kv_substituted: str
    flop_params: int
    experts_per_layer: Fraction | None = None
    convention: dict[str, Any] = field(default_factory=dict)


def model_read(cfg: ModelConfig, batch: int, context: int, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
               experts: str = "expected", quant: QuantWeights | None = None) -> ModelRead:
    """The weights and cache one decode step of ``batch`` sequences at ``context`` cached
    positions (the new token's own included) reads, and 2·N_active FLOPs per token.

    ``quant`` (issue 37): a quantised checkpoint's layout (:func:`solver.counting.quantization.quantized_weights`):
    each tensor kind read at its own bytes (the experts a batch touches at the experts' bytes per expert,
    the embedding rows at the file's dtype) instead of N·w."""
    if experts not in EXPERT_CASES:
        raise SolverInputError(f"must be one of {', '.join(EXPERT_CASES)} (got {experts!r})", param="experts")
    pb = param_breakdown(cfg)
    w = dtype_bytes(weight_dtype)
    kv = kv_cache_report(cfg, batch, context, kv_dtype)
    conv: dict[str, Any] = {"kv_cache": kv.convention}
    if quant is not None:
        return _quant_read(cfg, pb, quant, batch, experts, kv, conv)
    if not cfg.is_moe:
        return ModelRead(pb.total * w, "weight bytes = N·w", f"{pb.total:,} × {w}", Fraction(kv.bytes),
                         f"KV bytes = {kv.formula}", " + ".join(i.formula for i in kv.items) or "0",
                         pb.total, None, conv)
    E, k = cfg.n_experts, cfg.top_k
    moe_layers = cfg.n_layers - cfg.dense_layers_of(cfg.n_layers)  # every stack's MoE layers
    routed_all = pb.routed_experts
    per_expert = Fraction(routed_all, moe_layers * E) if moe_layers else Fraction(0)
    touched = {"expected": expected_distinct_experts(E, k, batch), "worst": Fraction(worst_case_experts(E, k, batch)),
               "all": Fraction(E)}[experts]
    # issue 21: the input embedding is a lookup (as `qkv models show` calls it): a step reads one row
    # (d_model values) per token of the batch, not the whole table; a tied table is read whole by the LM head
    table = 0 if cfg.tied_embeddings else next((c.count for c in pb.components if c.name == "token_embedding"), 0)
    rows = min(batch, table // cfg.d_model) * cfg.d_model if table else 0
    read_params = pb.total - routed_all - table + rows + moe_layers * touched * per_expert
    rule = {"expected": "E·(1 − (1 − k/E)^B) experts per layer (uniform routing, expected)",
            "worst": "min(E, B·k) experts per layer (worst case)",
            "all": "all E experts per layer (dense reading, an upper bound)"}[experts]
    conv["experts"] = rule
    conv["flops"] = f"2 per multiply-add on the active parameters (top_k = {k} of E = {E} routed experts)"
    conv["embedding"] = ("the input embedding is a lookup: one row of d_model values per token is read"
                         if table else "the embedding table is tied to the LM head, which reads it whole")
    if table:
        formula = "weight bytes = (N − N_routed − N_embedding + B·d_model + L_M · experts_read · N_expert) · w"
        sub = (f"({pb.total:,} − {routed_all:,} − {table:,} + {batch} × {cfg.d_model} + {moe_layers} × "
               f"{float(touched):.6g} × {per_expert}) × {w}")
    else:
        formula = "weight bytes = (N − N_routed + L_M · experts_read · N_expert) · w"
        sub = (f"({pb.total:,} − {routed_all:,} + {moe_layers} × {float(touched):.6g} × {per_expert}) × {w}")
    return ModelRead(read_params * w, formula, sub, Fraction(kv.bytes), f"KV bytes = {kv.formula}",
                     " + ".join(i.formula for i in kv.items) or "0", pb.active, touched, conv)


def _quant_read(cfg: ModelConfig, pb: Any, quant: QuantWeights, batch: int, experts: str, kv: Any,
                conv: dict[str, Any]) -> ModelRead:
    """Issue 37: :func:`model_read` of a quantised checkpoint: the bytes of each tensor kind as the
    layout stores them; the routed experts a step touches at their bytes per expert, a lookup table's
    rows at the file's dtype."""
    conv["weights"] = quant.summary()
    kv_formula, kv_sub = f"KV bytes = {kv.formula}", " + ".join(i.formula for i in kv.items) or "0"
    if not cfg.is_moe:
        return ModelRead(Fraction(quant.bytes), "weight bytes = the quantised checkpoint's bytes", f"{quant.bytes:,}",
                         Fraction(kv.bytes), kv_formula, kv_sub, pb.total, None, conv)
    by = {i.key: i.bytes for i in quant.items}
    E, k = cfg.n_experts, cfg.top_k
    moe_layers = cfg.n_layers - cfg.dense_layers_of(cfg.n_layers)
    routed = sum(b for key, b in by.items() if key.split(".", 1)[-1].startswith("ffn.expert.")
                 or key.startswith("ffn.expert."))
    per_expert = Fraction(routed, moe_layers * E) if moe_layers else Fraction(0)
    touched = {"expected": expected_distinct_experts(E, k, batch), "worst": Fraction(worst_case_experts(E, k, batch)),
               "all": Fraction(E)}[experts]
    table = 0 if cfg.tied_embeddings else by.get("token_embedding", 0)
    rows = min(batch, cfg.vocab_size) * cfg.d_model * quant.stored_bytes if table else 0
    read = quant.bytes - routed - table + rows + moe_layers * touched * per_expert
    conv["experts"] = {"expected": "E·(1 − (1 − k/E)^B) experts per layer (uniform routing, expected)",
                       "worst": "min(E, B·k) experts per layer (worst case)",
                       "all": "all E experts per layer (dense reading, an upper bound)"}[experts]
    conv["flops"] = f"2 per multiply-add on the active parameters (top_k = {k} of E = {E} routed experts)"
    formula = ("weight bytes = W − W_routed" + (" − W_embedding + B·d_model·w" if table else "")
               + " + L_M · experts_read · W_expert (W: the quantised checkpoint's bytes)")
    sub = (f"{quant.bytes:,} − {routed:,}" + (f" − {table:,} + {rows:,}" if table else "")
           + f" + {moe_layers} × {float(touched):.6g} × {float(per_expert):.6g}")
    return ModelRead(read, formula, sub, Fraction(kv.bytes), kv_formula, kv_sub, pb.active, touched, conv)
