"""``qkv solve flash-attention|online-softmax|mla-decode`` (issue 24): FlashAttention's tiling, the
online softmax by hand, latent attention's decode step in two orders.

The formulas live in ``solver.systems.flash_attention`` and ``solver.kernels.online_softmax``;
this module wires flags to them and prints as every solve command does (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.model_flags import name_model, preset_options, preset_spec
from drills.cli.numbers import BYTES, INT, SIZE, Int
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_relative import solver_call
from drills.output import InputError


@solve_command("flash-attention")
@click.option("--seq", "-N", "seq", type=SIZE, required=True, help="Sequence length N (8k = 8192).")
@click.option("--d-head", "-d", "d_head", type=SIZE, required=True, help="Head size d.")
@click.option("--sram", "-M", "sram", type=SIZE, default=None,
              help="On-chip SRAM size M in elements (the paper's unit).")
@click.option("--sram-bytes", type=BYTES, default=None,
              help="On-chip SRAM in bytes (100KiB, 192KB); M = bytes ÷ bytes per --dtype element.")
@click.option("--block-rows", "--br", "block_rows", type=INT, default=None, help="B_r (default: min(⌈M/4d⌉, d)).")
@click.option("--block-cols", "--bc", "block_cols", type=INT, default=None, help="B_c (default: ⌈M/4d⌉).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True)
@click.option("--heads", "--n-heads", "heads", type=INT, default=1, show_default=True)
@click.option("--version", type=click.Choice(["1", "2"]), default="1", show_default=True,
              help="FlashAttention-1 (K,V outer) or FlashAttention-2 (Q outer).")
@click.option("--unit", type=click.Choice(["elements", "bytes"]), default="elements", show_default=True,
              help="Count HBM traffic in elements (as the paper) or in bytes of --dtype.")
@click.option("--dtype", default="bf16", show_default=True, help="Bytes per element for --unit bytes and --sram-bytes.")
@click.option("--no-init", is_flag=True, help="Leave out Algorithm 1 line 2's initial writes of O, ℓ, m.")
@output_options
def flash_attention(seq, d_head, sram, sram_bytes, block_rows, block_cols, batch, heads, version, unit, dtype,
                    no_init, as_json, explain):
    """Block sizes, blocks and HBM reads/writes of FlashAttention against standard attention (Dao et al. 2022)."""
    from solver.systems.flash_attention import flash_attention as fa
    from solver.units import dtype_bytes

    if sram is not None and sram_bytes is not None:
        raise InputError("give --sram (elements) or --sram-bytes, not both", "--sram-bytes")
    if sram_bytes is not None:
        w = solver_call(dtype_bytes, dtype)
        sram = int(sram_bytes // w)
        if sram < 1:
            raise InputError("holds less than one element", "--sram-bytes")
    r = solver_call(fa, seq, d_head, sram=sram, block_rows=block_rows, block_cols=block_cols, batch=batch,
                    heads=heads, version=version, unit=unit, dtype=dtype, count_init=not no_init)
    if sram_bytes is not None:
        r.convention["sram"] += f"; here M = {sram} elements from {sram_bytes} bytes of {dtype}"
    show(r, as_json, explain, answer_label=f"HBM {unit} read and written by FlashAttention-{version}")


def _plain(x):
    """A SymPy value as text and float; floats and ints as they are (for printing and JSON)."""
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    return f"{x} ≈ {float(x):.6g}"


@solve_command("online-softmax")
@click.option("--block", "blocks", metavar="VECTOR", multiple=True, required=True,
              help="One block of scores, in order (repeat: --block '1 2' --block '3 0').")
@click.option("--values", "--v", "values", metavar="MATRIX", default=None,
              help="Value rows, one per score (for the rescaled partial output o).")
@click.option("--exact", is_flag=True, help="Exact arithmetic (SymPy): exponentials kept symbolic.")
@output_options
def online_softmax(blocks, values, exact, as_json, explain):
    """One row's softmax block by block: running max m, running sum ℓ, the partial output rescaled."""
    from drills.cli.matrix_args import parse_matrix, parse_vector
    from solver.kernels.online_softmax import online_softmax as osm

    parsed = [parse_vector(b, "--block") for b in blocks]
    n = sum(p.shape[0] for p in parsed)
    if n > (12 if exact else 4096):
        raise InputError(f"{n} scores: at most {12 if exact else 4096}{' with --exact' if exact else ''}", "--block")
    pick = (lambda a: a.exact()) if exact else (lambda a: a.floats())
    vals = None
    if values is not None:
        v = parse_matrix(values, "--values").as_matrix()
        vals = pick(v)
    r = solver_call(osm, [pick(p) for p in parsed], vals, exact=exact)
    if exact:
        r.answer = _plain(r.answer)
        r.breakdown = _plain(r.breakdown)
        r.steps = [type(s)(s.formula, s.substitution, _plain(s.value), s.unit) for s in r.steps]
    show(r, as_json, explain, answer_label="softmax weights of the whole row, in order", unit_text="")


@solve_command("mla-decode")
@click.option("--context", "-S", "context", type=SIZE, required=True, help="Cached tokens attended (32k = 32768).")
@click.option("--d-model", "--hidden", "d_model", type=SIZE, default=None, help="Model width d.")
@click.option("--n-heads", "--heads", "n_heads", type=INT, default=None, help="Heads h.")
@click.option("--kv-lora-rank", "--d-c", "kv_rank", type=INT, default=None, help="Latent width d_c.")
@click.option("--rope-dim", "--d-r", "rope_dim", type=INT, default=None, help="Rotary key width d_R (shared).")
@click.option("--nope-dim", "--d-head", "nope_dim", type=INT, default=None, help="Per-head non-rotary q/k size d_h.")
@click.option("--v-dim", "v_dim", type=INT, default=None, help="Value head size d_v (default d_h).")
@click.option("--q-lora-rank", "q_rank", type=Int(0), default=None, help="Query latent width (0: none).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True)
@click.option("--layers", "n_layers", type=INT, default=None, help="Layers (default 1, or the preset's).")
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--order", type=click.Choice(["absorbed", "naive"]), default="absorbed", show_default=True,
              help="Which order's FLOPs is the answer (both are in the breakdown).")
@preset_options
@output_options
def mla_decode(context, d_model, n_heads, kv_rank, rope_dim, nope_dim, v_dim, q_rank, batch, n_layers, dtype, order,
               as_json, explain, **kw):
    """MLA decode step (DeepSeek-V2): FLOPs and bytes with W_UK/W_UV absorbed against the naive order."""
    from solver.counting.mla_decode import mla_decode as md

    spec, cfg = preset_spec(kw)
    if cfg is not None and not cfg.is_mla:
        raise InputError(f"{cfg.name} has no latent attention (kv_lora_rank = 0)", "--preset")
    vals = {"d_model": d_model, "n_heads": n_heads, "kv_rank": kv_rank, "rope_dim": rope_dim, "nope_dim": nope_dim,
            "v_dim": v_dim, "q_rank": q_rank, "n_layers": n_layers}
    if cfg is not None:
        from_cfg = {"d_model": cfg.d_model, "n_heads": cfg.n_heads, "kv_rank": cfg.kv_lora_rank,
                    "rope_dim": cfg.qk_rope_head_dim, "nope_dim": cfg.head_dim, "v_dim": cfg.value_head_dim,
                    "q_rank": cfg.q_lora_rank, "n_layers": cfg.decoder_layers or cfg.n_layers}
        vals = {k: (v if v is not None else from_cfg[k]) for k, v in vals.items()}
    vals["v_dim"] = vals["v_dim"] if vals["v_dim"] is not None else vals["nope_dim"]
    vals["q_rank"] = vals["q_rank"] or 0
    vals["n_layers"] = vals["n_layers"] or 1
    flags = {"d_model": "--d-model", "n_heads": "--n-heads", "kv_rank": "--kv-lora-rank", "rope_dim": "--rope-dim",
             "nope_dim": "--nope-dim"}
    missing = [f for k, f in flags.items() if vals[k] is None]
    if missing:
        raise InputError(f"needed: {', '.join(missing)} (or --preset deepseek-v2-lite)", missing[0])
    r = solver_call(md, vals["d_model"], vals["n_heads"], vals["kv_rank"], vals["rope_dim"], vals["nope_dim"],
                    vals["v_dim"], context, q_rank=vals["q_rank"], batch=batch, n_layers=vals["n_layers"],
                    dtype=dtype, order=order)
    name_model(r, spec, cfg, {**{k: "the attention of the step only: the FFN is not counted"
                                 for k in ("n_experts", "top_k", "n_shared_experts", "d_ff_expert", "first_dense_layers")},
                              "sliding_window": "all S cached tokens attended", "global_every": "all S cached tokens attended",
                              "lora_rank": "the base weights only"})
    show(r, as_json, explain, answer_label=f"FLOPs of one decode step, {order} order")
