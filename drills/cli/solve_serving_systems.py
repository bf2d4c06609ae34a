"""``qkv solve paged-kv|batching|disaggregation`` (issue 24): PagedAttention's blocks, static against
continuous batching, the KV cache a disaggregated prefill hands over.

The formulas live in ``solver.systems.paged_serving``; this module wires flags to them and prints
as every solve command does (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.model_flags import preset_config, preset_options
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


def kv_per_token(kv_bytes_per_token, dtype: str, kw) -> tuple[object, str]:
    """X from --kv-bytes-per-token, else from --preset/--config (2·layers·kv_heads·d_head·bytes)."""
    cfg = preset_config(kw)
    if kv_bytes_per_token is not None:
        if cfg is not None:
            raise InputError("give --kv-bytes-per-token or --preset/--config, not both", "--kv-bytes-per-token")
        return kv_bytes_per_token, "given"
    if cfg is None:
        raise InputError("needed: --kv-bytes-per-token, or --preset/--config for the model's KV size",
                         "--kv-bytes-per-token")
    from solver.systems.inference import kv_bytes_per_token as kvb

    layers = cfg.decoder_layers or cfg.n_layers
    x = solver_call(kvb, layers, cfg.kv_heads, cfg.head_dim, dtype)
    return x, f"{cfg.name}: 2 × {layers} layers × {cfg.kv_heads} KV heads × {cfg.head_dim} × {dtype} bytes"


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
    X, origin = kv_per_token(kv_bytes_per_token, dtype, kw)
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
    X, origin = kv_per_token(kv_bytes_per_token, dtype, kw)
    r = solver_call(dg, prompt, X, beta, batch=batch, latency=kw.get("latency") or 0, n_layers=n_layers,
                    prefill_time=prefill_time)
    r.convention["kv_origin"] = origin
    r.convention["link_origin"] = link_origin
    show(r, as_json, explain, answer_label="KV-cache transfer time")
