"""``qkv solve paged-kv|batching|disaggregation`` (issue 24): PagedAttention's blocks, static against
continuous batching, the KV cache a disaggregated prefill hands over.

The formulas live in ``solver.systems.paged_serving``; this module wires flags to them and prints
as every solve command does (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.model_flags import preset_options, preset_spec
from drills.cli.numbers import BYTES, INT, SIZE, Int, Real
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_parallel import _link, link_options
from drills.cli.solve_relative import solver_call
from drills.output import InputError


def int_list(text: str, param: str, limit: int = 100_000) -> list[int]:
    """'100 37 250' or '100,37,250' -> [100, 37, 250]; positive whole numbers, at most ``limit`` of them."""
    from drills.cli.matrix_args import parse_vector

    v = parse_vector(text, param)
    if v.shape[0] > limit:
        raise InputError(f"at most {limit:,} entries (got {v.shape[0]:,})", param)
    out = []
    for x in v.exact():
        if x.denominator != 1 or x < 1 or x > 10**12:
            raise InputError(f"entries must be whole numbers from 1 to 10^12 (got {x})", param)
        out.append(int(x))
    return out


def kv_per_token(kv_bytes_per_token, dtype: str, kw, lengths: list[int], *,
                 whole: bool = False, hint: str = "") -> tuple[object, str]:
    """X from --kv-bytes-per-token, else the model's own cache per token (--preset/--config), the same
    cache ``qkv solve memory --what kv-cache`` counts: latent attention d_c + d_R per layer, grouped KV
    heads, and a window's rolling buffer (solver.systems.inference.kv_bytes_per_token_at).

    A windowed model's cache per token is not one figure once a sequence passes the window (a layer
    keeps its last W positions): ``lengths`` past it are refused, naming the field, not counted as if
    the cache grew with every token; ``whole``: one length whose whole cache is all that is asked
    (B·S·X with X its cache ÷ S, exact past the window too)."""
    spec, cfg = preset_spec(kw)
    if kv_bytes_per_token is not None:
        if cfg is not None:
            raise InputError("give --kv-bytes-per-token or --preset/--config, not both", "--kv-bytes-per-token")
        return kv_bytes_per_token, "given"
    if cfg is None:
        raise InputError("needed: --kv-bytes-per-token, or --preset/--config for the model's KV size",
                         "--kv-bytes-per-token")
    from solver.systems.inference import kv_bytes_per_token_at

    longest = max(lengths)
    window = cfg.sliding_window
    past = bool(window and longest > window)
    if past and not whole:
        raise InputError(f"{cfg.name or 'this model'} has a sliding window (sliding_window = {window:,}): past it a "
                         f"layer keeps its last {window:,} positions, so the cache per token is not one figure; "
                         f"{hint or f'give lengths up to {window:,}'}, or --kv-bytes-per-token",
                         "--preset" if spec.preset else "--config")
    x = solver_call(kv_bytes_per_token_at, cfg, longest, dtype)
    layers = cfg.decoder_layers or cfg.n_layers
    if cfg.is_mla:
        how = (f"{layers} layers × (kv_lora_rank {cfg.kv_lora_rank} + qk_rope_head_dim {cfg.qk_rope_head_dim}) × "
               f"{dtype} bytes (latent attention)")
    else:
        how = f"2 × {layers} layers × {cfg.kv_heads} KV heads × {cfg.head_dim} × {dtype} bytes"
    if past:
        how = (f"its cache at {longest:,} tokens ÷ {longest:,}: windowed layers hold their last {window:,} "
               f"positions ({how} per cached position)")
    elif window:
        how += f"; every length within the {window:,}-token window"
    return x, f"{cfg.name}: {how} (the cache qkv solve memory --what kv-cache counts)"


@solve_command("paged-kv")
@click.option("--lengths", "--seq-len", "lengths", metavar="LIST", required=True,
              help="Sequence length(s) in tokens: '1000' or '100 37 250'.")
@click.option("--block-size", "-b", "block_size", type=INT, default=16, show_default=True,
              help="Tokens per KV block (vLLM's default is 16).")
@click.option("--kv-bytes-per-token", "-X", type=BYTES, default=None, help="KV bytes per token (or --preset).")
@click.option("--dtype", default="bf16", show_default=True, help="KV dtype, with --preset.")
@click.option("--budget", type=BYTES, default=None, help="KV-cache budget in bytes (40GB, 40GiB).")
@click.option("--max-len", type=SIZE, default=None,
              help="Length a contiguous allocator reserves per sequence (default: the longest given).")
@click.option("--last-block", type=click.Choice(["counted", "full-only"]), default="counted", show_default=True,
              help="Count the partly filled last block (allocated) or full blocks only.")
@preset_options
@output_options
def paged_kv(lengths, block_size, kv_bytes_per_token, dtype, budget, max_len, last_block, as_json, explain, **kw):
    """PagedAttention: KV blocks per sequence, internal fragmentation, sequences that fit paged vs contiguous."""
    from solver.systems.paged_serving import paged_kv as pk

    Ls = int_list(lengths, "--lengths")
    if kv_bytes_per_token is None and budget is None and preset_spec(dict(kw))[1] is None:  # blocks need no bytes
        X, origin = None, "not given (blocks only)"
    else:
        X, origin = kv_per_token(kv_bytes_per_token, dtype, kw, [*Ls, max_len or 0])
    r = solver_call(pk, Ls, block_size, X, budget=budget, max_len=max_len, last_block=last_block)
    r.convention["kv_origin"] = origin
    show(r, as_json, explain, answer_label="KV blocks")


@solve_command()
@click.option("--outputs", metavar="LIST", required=True,
              help="Tokens each request generates, in arrival order: '1 10 3 5'.")
@click.option("--batch", "-B", "batch", type=INT, required=True, help="Slots (requests served at once).")
@click.option("--step-time", "t_step", type=Real(0, 10**6, min_open=True), required=True,
              help="Seconds per decode iteration of the batch.")
@click.option("--prefill-time", "t_prefill", type=Real(0, 10**6), default=0, show_default=True,
              help="Seconds a request's prefill adds to the iteration it joins.")
@click.option("--policy", type=click.Choice(["continuous", "static"]), default="continuous", show_default=True)
@output_options
def batching(outputs, batch, t_step, t_prefill, policy, as_json, explain):
    """Static against continuous batching: throughput, makespan and latency in a stated step model."""
    from solver.systems.paged_serving import batching as bt

    outs = int_list(outputs, "--outputs", limit=10_000)
    if sum(outs) > 10**5:
        raise InputError("at most 10^5 tokens in all (the schedule is simulated iteration by iteration)", "--outputs")
    r = solver_call(bt, outs, batch, t_step, t_prefill=t_prefill, policy=policy)
    show(r, as_json, explain, answer_label=f"throughput with {policy} batching")


@solve_command()
@click.option("--prompt", "-P", "prompt", type=SIZE, required=True, help="Prompt tokens prefilled (8k = 8192).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True, help="Prompts handed over.")
@click.option("--kv-bytes-per-token", "-X", type=BYTES, default=None, help="KV bytes per token (or --preset).")
@click.option("--dtype", default="bf16", show_default=True, help="KV dtype, with --preset.")
@click.option("--layers", "n_layers", type=Int(1, 10**6), default=None,
              help="With --prefill-time: send layer by layer as the prefill goes (the exposed time).")
@click.option("--prefill-time", type=Real(0, 10**6, min_open=True), default=None, help="Seconds of the prefill.")
@preset_options
@link_options
@output_options
def disaggregation(prompt, batch, kv_bytes_per_token, dtype, n_layers, prefill_time, as_json, explain, **kw):
    """Prefill/decode disaggregation: KV-cache bytes a prompt hands to the decode machine, time over the link."""
    from solver.systems.paged_serving import disaggregation as dg

    if (n_layers is None) != (prefill_time is None):
        raise InputError("the layer-by-layer figure needs --layers and --prefill-time together", "--layers")
    beta, link_origin = _link(kw)
    # the layer-by-layer figure splits the cache evenly over the layers: only the whole cache past a window
    X, origin = kv_per_token(kv_bytes_per_token, dtype, kw, [prompt], whole=n_layers is None,
                             hint="the layer-by-layer figure splits the cache evenly over the layers: drop --layers "
                                  "and --prefill-time, or give a prompt within the window")
    r = solver_call(dg, prompt, X, beta, batch=batch, latency=kw.get("latency") or 0, n_layers=n_layers,
                    prefill_time=prefill_time)
    r.convention["kv_origin"] = origin
    r.convention["link_origin"] = link_origin
    show(r, as_json, explain, answer_label="KV-cache transfer time")
