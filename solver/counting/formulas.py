"""The registry's descriptions of the counting engine (solver.registry): ``params``,
``active_params``, ``weights``, ``kv_cache`` and ``flops`` of a model, in ``qkv calc`` as
``kv_cache(llama3-8b, seq=8k, batch=16, dtype=bf16)`` and in ``qkv solve params|memory|flops``.

A model is a preset name, a config.json given by path (``"./config.json"``), or a preset's
value; its counts are the exact ones of :mod:`solver.counting` (conventions there).
"""

from __future__ import annotations

from solver.registry.formula import Input, Output, formula
from solver.result import Result, fmt

_MODEL = Input("model", "a model: a preset (llama3-8b) or a config.json by path in quotes", kind="model")


@formula("params", "Exact parameter count of a model (every parameter; the experts included).",
         (_MODEL,), (Output("params", "", "parameters"), Output("active", "", "parameters one token uses")),
         solve="params --preset", source="solver.counting.params")
def _params(model):
    from solver.counting import param_breakdown

    b = param_breakdown(model)
    r = Result(answer=b.total, unit="params", convention={"count": "every parameter of the base model, "
                                                                    "tied matrices once; LoRA adapters excluded"})
    r.step("parameters = Σ components", f"{len(b.components)} components", b.total, "params")
    r.breakdown.update(params=b.total, active=b.active)
    return r


@formula("weights", "Bytes of a model's weights at one dtype.",
         (_MODEL, Input("dtype", "element type (bf16, fp8, int4 ...)", kind="dtype")),
         (Output("bytes", "B", "weight bytes"),), solve="memory --what weights", source="solver.counting.memory")
def _weights(model, dtype):
    from solver.counting import weights_report

    rep = weights_report(model, dtype)
    r = Result(answer=rep.bytes, unit="bytes", convention={"bytes": rep.convention})
    r.step(rep.formula, "; ".join(i.formula for i in rep.items), rep.bytes, "bytes")
    r.breakdown["bytes"] = rep.bytes
    return r


@formula("kv_cache", "Bytes of a model's KV cache: 2 × L × B × n × h_kv × d_h × bytes (latent and windowed "
         "layers as the model has them).",
         (_MODEL,
          Input("seq", "n: positions cached per sequence (8k = 8,192)", kind="count", integer=True, minimum=1,
                aliases=("context", "n", "tokens"), binary_k=True),
          Input("batch", "B: sequences", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
          Input("dtype", "element type of the cache (bf16, fp8 ...)", kind="dtype")),
         (Output("bytes", "B", "KV cache bytes"), Output("per_token", "B", "bytes per cached token (all layers)")),
         solve="memory --what kv-cache", source="solver.counting.memory")
def _kv_cache(model, seq, batch, dtype):
    from solver.counting import kv_cache_report

    rep = kv_cache_report(model, batch, seq, dtype)
    r = Result(answer=rep.bytes, unit="bytes", convention={"cache": rep.convention})
    for i in rep.items:
        r.step(i.name, i.formula, i.bytes, "bytes")
    r.breakdown.update(bytes=rep.bytes, per_token=rep.bytes / (batch * seq))
    return r


@formula("flops", "Exact matmul FLOPs of a forward pass (or a training step) of B sequences of s tokens.",
         (_MODEL,
          Input("seq", "s: tokens per sequence (8k = 8,192)", kind="count", integer=True, minimum=1,
                aliases=("n", "tokens", "context"), binary_k=True),
          Input("batch", "B: sequences", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
          Input("mode", "forward | decode | train", kind="choice", default="forward")),
         (Output("flops", "FLOP", "matmul FLOPs (2 per multiply-add)"),),
         solve="flops --preset", source="solver.counting.flops")
def _flops(model, seq, batch, mode):
    from solver.counting import matmul_flops

    rep = matmul_flops(model, batch, seq, mode)
    r = Result(answer=rep.flops, unit="FLOP", convention={"flops": "2 per multiply-add, matmuls only; attention's "
                                                                    "QKᵀ and A·V counted in full (no causal halving)"})
    r.step(f"FLOPs of one {mode} step", f"B = {fmt(batch)}, s = {fmt(seq)}", rep.flops, "FLOP")
    r.breakdown["flops"] = rep.flops
    return r


FORMULAS = (_params.formula, _weights.formula, _kv_cache.formula, _flops.formula)
