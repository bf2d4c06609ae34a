"""One decode step of multi-head latent attention (DeepSeek-V2 §2.1.2-2.1.3), in two orders.

Per layer the cache holds, per token, the latent c_KV (d_c) and one rotary key k^R (d_R) shared
by the h heads. Head i's key is [c·W_UK_i (d_h), k^R], its value c·W_UV_i (d_v). Two orders
compute the same output for a new token against S cached tokens:

- **naive** (decompress): up-project the whole cache, K = C·W_UK (S × h·d_h) and V = C·W_UV
  (S × h·d_v), then ordinary attention, then W_O;
- **absorbed** (DeepSeek-V2 §2.1.2: "W_UK can be absorbed into W_Q, and W_UV into W_O"): q̃_i =
  q_i^C·W_UK_iᵀ (d_h → d_c) so each score is q̃_i·c_j + q_i^R·k_j^R; the weighted sum of latents
  (d_c) is then mapped by W_UV_i and W_O (applied one after the other; the merged W_UV·W_O is
  named in the breakdown).

FLOPs count 2 per multiply-add (matmuls only: no softmax, RoPE or norms); the parts both orders
share (query projections, the new token's down-projection to c and k^R, W_O) are counted in
``shared``. Bytes of one step per layer: the cache read (B·S·(d_c + d_R) elements), the attention
weights read (W_UK, W_UV: h·d_c·(d_h + d_v)), and for the naive order the decompressed K and V
written and read back once (2·B·S·h·(d_h + d_v)), as an unfused implementation does.
"""

from __future__ import annotations

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import dtype_bytes


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def mla_decode_parts(d_model: int, n_heads: int, kv_rank: int, rope_dim: int, nope_dim: int, v_dim: int,
                     context: int, *, q_rank: int = 0, batch: int = 1) -> dict[str, dict[str, int]]:
    """FLOPs of each matmul of one decode step (one layer), by order: {"shared", "naive", "absorbed"}."""
    d, h, dc, dr = (_int("d_model", d_model), _int("n_heads", n_heads), _int("kv_lora_rank", kv_rank),
                    _int("qk_rope_head_dim", rope_dim, 0))
    dh, dv, S = _int("qk_nope_head_dim", nope_dim), _int("v_head_dim", v_dim), _int("context", context)
    dq, B = _int("q_lora_rank", q_rank, 0), _int("batch", batch)
    q = (2 * d * dq + 2 * dq * h * (dh + dr)) if dq else 2 * d * h * (dh + dr)
    shared = {"query": B * q, "kv_down": B * 2 * d * (dc + dr), "w_o": B * 2 * h * dv * d}
    naive = {"k_up": B * 2 * S * dc * h * dh, "v_up": B * 2 * S * dc * h * dv,
             "scores": B * 2 * S * h * (dh + dr), "weighted_values": B * 2 * S * h * dv}
    absorbed = {"q_absorb": B * 2 * h * dh * dc, "scores": B * 2 * S * h * (dc + dr),
                "weighted_latents": B * 2 * S * h * dc, "v_up": B * 2 * h * dc * dv}
    return {"shared": shared, "naive": naive, "absorbed": absorbed}


def mla_decode(d_model: int, n_heads: int, kv_rank: int, rope_dim: int, nope_dim: int, v_dim: int, context: int, *,
               q_rank: int = 0, batch: int = 1, n_layers: int = 1, dtype: str = "bf16", order: str = "absorbed") -> Result:
    """FLOPs and bytes of one MLA decode step, absorbed against naive. Answer: FLOPs of ``order``
    (all layers); breakdown: both orders' FLOPs and bytes, their ratios, each matmul."""
    if order not in ("absorbed", "naive"):
        raise SolverInputError(f"order must be absorbed or naive (got {order!r})", param="order")
    L = _int("n_layers", n_layers)
    parts = mla_decode_parts(d_model, n_heads, kv_rank, rope_dim, nope_dim, v_dim, context, q_rank=q_rank, batch=batch)
    d, h, dc, dr, dh, dv, S, B = d_model, n_heads, kv_rank, rope_dim, nope_dim, v_dim, context, batch
    b = dtype_bytes(dtype)
    r = Result(answer=None, unit="FLOPs", convention={
        "source": "DeepSeek-V2 (DeepSeek-AI 2024) §2.1.2-2.1.3: W_UK absorbed into the query, W_UV into W_O",
        "flops": "2 per multiply-add; matmuls only (no softmax, RoPE, norms)",
        "context": f"S = {fmt(S)} cached tokens attended (the new token's included)",
        "absorbed": "scores q̃_i·c_j + q_i^R·k_j^R against the latent cache; W_UV then W_O after the weighted sum",
        "naive": "the whole cache up-projected to K, V every step, written and read back once (unfused)",
        "bytes": f"{dtype} ({fmt(b)} per element): cache read + W_UK, W_UV read (+ naive: K, V written and read)",
        "scope": f"{L} layer(s), batch {B}"})
    sh, nv, ab = (sum(parts[k].values()) for k in ("shared", "naive", "absorbed"))
    r.step("shared = query + new token's c, k^R + W_O", " + ".join(fmt(v) for v in parts["shared"].values()), sh, "FLOPs")
    r.step("naive = 2·B·S·d_c·h·(d_h + d_v) + 2·B·S·h·(d_h + d_R + d_v)",
           f"2·{B}·{fmt(S)}·{dc}·{h}·({dh} + {dv}) + 2·{B}·{fmt(S)}·{h}·({dh} + {dr} + {dv})", nv, "FLOPs")
    r.step("absorbed = 2·B·h·d_h·d_c + 2·B·S·h·(2·d_c + d_R) + 2·B·h·d_c·d_v",
           f"2·{B}·{h}·{dh}·{dc} + 2·{B}·{fmt(S)}·{h}·(2·{dc} + {dr}) + 2·{B}·{h}·{dc}·{dv}", ab, "FLOPs")
    naive_total = r.step("naive step = L·(shared + naive)", f"{L} × ({fmt(sh)} + {fmt(nv)})", L * (sh + nv), "FLOPs")
    abs_total = r.step("absorbed step = L·(shared + absorbed)", f"{L} × ({fmt(sh)} + {fmt(ab)})", L * (sh + ab), "FLOPs")
    cache = B * S * (dc + dr)
    weights = h * dc * (dh + dv)
    kv = 2 * B * S * h * (dh + dv)
    abs_bytes = r.step("absorbed bytes = L·(B·S·(d_c + d_R) + h·d_c·(d_h + d_v))·b",
                       f"{L} × ({fmt(cache)} + {fmt(weights)}) × {fmt(b)}", L * (cache + weights) * b, "bytes")
    naive_bytes = r.step("naive bytes = absorbed + L·2·B·S·h·(d_h + d_v)·b", f"{fmt(abs_bytes)} + {L} × {fmt(kv)} × {fmt(b)}",
                         abs_bytes + L * kv * b, "bytes")
    r.breakdown = {"naive_flops": naive_total, "absorbed_flops": abs_total,
                   "flop_ratio_naive_over_absorbed": naive_total / abs_total,
                   "naive_bytes": naive_bytes, "absorbed_bytes": abs_bytes,
                   "cache_bytes": L * cache * b,
                   "absorbed_intensity": abs_total / abs_bytes, "naive_intensity": naive_total / naive_bytes,
                   "merged_w_uv_w_o_flops": L * B * 2 * h * dc * d,
                   **{f"shared_{k}": L * v for k, v in parts["shared"].items()},
                   **{f"naive_{k}": L * v for k, v in parts["naive"].items()},
                   **{f"absorbed_{k}": L * v for k, v in parts["absorbed"].items()}}
    r.convention["merged"] = ("merged_w_uv_w_o_flops: W_UV·W_O precomputed (h·d_c × d) replaces W_UV then W_O: "
                              "2·B·h·d_c·d per layer")
    r.answer = abs_total if order == "absorbed" else naive_total
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's mla_decode(...),
# from qkv solve mla-decode.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

MLA_ORDER = Convention("order", "Which order's FLOPs are the answer (both are in the outputs).", {
    "absorbed": Choice("W_UK folded into the query and W_UV into the output: attention over the latent cache",
                       "DeepSeek-AI 2024 (DeepSeek-V2), §2.1.2"),
    "naive": Choice("each head's K and V expanded from the latent cache first", "DeepSeek-AI 2024, §2.1.2")},
    "absorbed")


def _size(name, help_, aliases=(), minimum=1, default=None):
    return Input(name, help_, kind="count", integer=True, minimum=minimum, default=default, aliases=aliases)


@formula("mla_decode", "One MLA decode step (DeepSeek-V2): FLOPs and bytes with W_UK/W_UV absorbed against the "
         "naive order.",
         (Input("context", "S: cached tokens attended", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("S",)),
          _size("d_model", "d: model width (or a model)", ("hidden",)),
          _size("n_heads", "h: heads (or a model)", ("heads",)),
          _size("kv_rank", "d_c: the latent width (or a model)", ("kv_lora_rank", "d_c")),
          _size("rope_dim", "d_R: the shared rotary key width (or a model)", ("d_r",)),
          _size("nope_dim", "d_h: the per-head non-rotary q/k size (or a model)", ("d_head",)),
          _size("v_dim", "d_v: the value head size (default d_h)"),
          _size("q_rank", "the query latent width (0: none)", ("q_lora_rank",), minimum=0),
          _size("batch", "B: sequences", ("B",), default=1),
          _size("layers", "L: layers (default 1, or the model's)", ("n_layers",)),
          Input("dtype", "cache and weight dtype", kind="dtype", default="bf16"),
          Input("model", "a model preset or config with latent attention (deepseek-v2-lite)", kind="model",
                default=None, aliases=("preset", "config"))),
         (Output("flops", "FLOP", "FLOPs of the step in the chosen order"),
          Output("absorbed_flops", "FLOP", "FLOPs, absorbed order"),
          Output("naive_flops", "FLOP", "FLOPs, naive order"),
          Output("absorbed_bytes", "B", "bytes read, absorbed order"),
          Output("naive_bytes", "B", "bytes read, naive order"),
          Output("cache_bytes", "B", "the latent cache read")),
         conventions=(MLA_ORDER,), solve="mla-decode", source="DeepSeek-AI 2024 (DeepSeek-V2), §2.1")
def _mla_formula(context, d_model, n_heads, kv_rank, rope_dim, nope_dim, v_dim, q_rank, batch, layers, dtype, model,
                 order="absorbed"):
    vals = {"d_model": d_model, "n_heads": n_heads, "kv_rank": kv_rank, "rope_dim": rope_dim, "nope_dim": nope_dim,
            "v_dim": v_dim, "q_rank": q_rank, "layers": layers}
    if model is not None:
        if not model.is_mla:
            raise SolverInputError(f"{model.name} has no latent attention (kv_lora_rank = 0)", param="model")
        own = {"d_model": model.d_model, "n_heads": model.n_heads, "kv_rank": model.kv_lora_rank,
               "rope_dim": model.qk_rope_head_dim, "nope_dim": model.head_dim, "v_dim": model.value_head_dim,
               "q_rank": model.q_lora_rank, "layers": model.decoder_layers or model.n_layers}
        vals = {k: (v if v is not None else own[k]) for k, v in vals.items()}
    missing = [k for k in ("d_model", "n_heads", "kv_rank", "rope_dim", "nope_dim") if vals[k] is None]
    if missing:
        raise SolverInputError(f"needs {', '.join(missing)} (or a model: deepseek-v2-lite)", param=missing[0])
    r = mla_decode(vals["d_model"], vals["n_heads"], vals["kv_rank"], vals["rope_dim"], vals["nope_dim"],
                   vals["v_dim"] if vals["v_dim"] is not None else vals["nope_dim"], context, q_rank=vals["q_rank"] or 0,
                   batch=batch, n_layers=vals["layers"] or 1, dtype=dtype, order=order)
    r.breakdown["flops"] = r.answer
    return r


FORMULAS = (_mla_formula.formula,)
