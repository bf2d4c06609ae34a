"""``qkv solve rope-scaling|ring-attention|ulysses|sliding-window|softcap`` (issue 24): long context.

The formulas live in ``solver.kernels.rope_scaling``, ``solver.systems.context_parallel``,
``solver.counting.window`` and ``solver.kernels.softcap``.
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.model_flags import name_model, preset_options, preset_spec
from drills.cli.numbers import FLOPS, INT, SIZE, Int, Real
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_parallel import _link, link_options
from drills.cli.solve_relative import solver_call
from drills.output import InputError


@solve_command("rope-scaling")
@click.option("--d-head", "--rotary-dim", "-d", "d_head", type=Int(2, 65536), required=True,
              help="Rotary size d of a head (even).")
@click.option("--base", "--theta", "base", type=Real(1, 10**12, min_open=True), default=10000, show_default=True,
              help="RoPE base (rope_theta).")
@click.option("--method", type=click.Choice(["linear", "ntk", "dynamic", "yarn", "none"]), default="linear",
              show_default=True, help="linear = position interpolation; ntk = NTK-aware base change; dynamic = HF "
                                      "dynamic NTK; yarn = NTK-by-parts ramp + temperature.")
@click.option("--factor", "-s", "factor", type=Real(1, 10**6), default=1, show_default=True,
              help="Scale s: target context ÷ original.")
@click.option("--original", "--original-context", "original", type=SIZE, default=4096, show_default=True,
              help="Original (pre-training) context L.")
@click.option("--seq-len", type=SIZE, default=None, help="Current length n (dynamic only).")
@click.option("--beta-fast", type=Real(0, 10**6, min_open=True), default=32, show_default=True)
@click.option("--beta-slow", type=Real(0, 10**6, min_open=True), default=1, show_default=True)
@click.option("--no-truncate", is_flag=True, help="YaRN: do not floor/ceil the ramp ends (HF truncates by default).")
@click.option("--pair", type=Int(0), default=None, help="One pair i's wavelength as the answer.")
@output_options
def rope_scaling(d_head, base, method, factor, original, seq_len, beta_fast, beta_slow, no_truncate, pair, as_json,
                 explain):
    """RoPE context extension by hand: each pair's θ and wavelength before and after the scaling."""
    from solver.kernels.rope_scaling import rope_scaling as rs

    if seq_len is not None and method != "dynamic":
        raise InputError("only the dynamic method depends on the current length", "--seq-len")
    r = solver_call(rs, d_head, base=base, method=method, factor=factor, original=original, seq_len=seq_len,
                    beta_fast=beta_fast, beta_slow=beta_slow, truncate=not no_truncate, pair=pair)
    show(r, as_json, explain, answer_label="wavelengths in positions, pair 0 first" if pair is None else None)


#: Why a context-parallel layer's bytes (ring attention, Ulysses) ignore these fields of a model.
_LATENT_HEADS = "the heads' own K and V move between devices (not the latent vector)"
_CP_UNUSED = {"sliding_window": "every key block attended (a window would let the ring skip far blocks)",
              "global_every": "every layer attends to every key block",
              **{k: _LATENT_HEADS for k in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim")},
              **{k: "attention only: the FFN moves nothing here" for k in ("n_experts", "top_k", "n_shared_experts",
                                                                          "d_ff_expert", "first_dense_layers")},
              "lora_rank": "attention activations only"}


def _heads(n_heads, d_head, kv_heads, kw, kv_enough: bool = False):
    """``(n_heads, d_head, kv_heads, spec, cfg)``: the flags, else the model's (--preset/--config).
    ``kv_enough``: the K/V heads alone will do (the bytes need no query heads)."""
    spec, cfg = preset_spec(kw)
    if cfg is not None:
        n_heads = n_heads or cfg.n_heads
        d_head = d_head or cfg.head_dim
        kv_heads = kv_heads or cfg.kv_heads
    if d_head is None or (n_heads is None and not (kv_enough and kv_heads is not None)):
        raise InputError("needed: --n-heads (or --kv-heads for the bytes alone) and --d-head (or --preset)"
                         if kv_enough else "needed: --n-heads and --d-head (or --preset)", "--n-heads")
    return n_heads, d_head, kv_heads, spec, cfg


@solve_command("ring-attention")
@click.option("--seq", "-N", "seq", type=SIZE, required=True, help="Sequence length N (1M = 2^20).")
@click.option("--devices", "--cp", "-P", "devices", type=INT, required=True, help="Devices in the ring.")
@click.option("--n-heads", "--heads", "n_heads", type=INT, default=None)
@click.option("--d-head", "d_head", type=INT, default=None)
@click.option("--kv-heads", "--n-kv-heads", "kv_heads", type=INT, default=None, help="K/V heads (default: --n-heads).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True)
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--peak-flops", type=FLOPS, default=None, help="Peak FLOP/s per device (989T), for the overlap.")
@click.option("--mfu", type=Real(0, 1, min_open=True), default=1, show_default=True)
@preset_options
@link_options
@output_options
def ring_attention(seq, devices, n_heads, d_head, kv_heads, batch, dtype, peak_flops, mfu, as_json, explain, **kw):
    """Ring attention: K/V bytes passed per step and layer, and whether they hide behind the block's compute."""
    from solver.systems.context_parallel import ring_attention as ra

    n_heads, d_head, kv_heads, spec, cfg = _heads(n_heads, d_head, kv_heads, kw, kv_enough=True)
    beta, origin = _link(kw, required=False)
    if peak_flops is None and kw.get("hw"):
        from solver.systems.chips import resolve_chip

        peak_flops = solver_call(resolve_chip, kw["hw"], dtype).peak_flops
    r = solver_call(ra, seq, devices, n_heads, d_head, kv_heads=kv_heads, batch=batch, dtype=dtype,
                    link_bandwidth=beta, peak_flops=peak_flops if beta is not None else None, mfu=mfu,
                    latency=kw.get("latency") or 0)
    if origin:
        r.convention["link"] = origin
    name_model(r, spec, cfg, _CP_UNUSED)
    show(r, as_json, explain, answer_label="K/V bytes each device sends per ring step")


@solve_command()
@click.option("--seq", "-N", "seq", type=SIZE, required=True, help="Sequence length N.")
@click.option("--devices", "--sp", "-P", "devices", type=INT, required=True, help="Sequence-parallel devices.")
@click.option("--n-heads", "--heads", "n_heads", type=INT, default=None)
@click.option("--d-head", "d_head", type=INT, default=None)
@click.option("--kv-heads", "--n-kv-heads", "kv_heads", type=INT, default=None)
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True)
@click.option("--dtype", default="bf16", show_default=True)
@click.option("--count-local", is_flag=True, help="Count the device's own share too.")
@preset_options
@link_options
@output_options
def ulysses(seq, devices, n_heads, d_head, kv_heads, batch, dtype, count_local, as_json, explain, **kw):
    """Ulysses sequence parallelism: all-to-all bytes per device per layer (Q, K, V in; O out)."""
    from solver.systems.context_parallel import ulysses as ul

    n_heads, d_head, kv_heads, spec, cfg = _heads(n_heads, d_head, kv_heads, kw)
    beta, origin = _link(kw, required=False)
    r = solver_call(ul, seq, devices, n_heads, d_head, kv_heads=kv_heads, batch=batch, dtype=dtype,
                    count_local=count_local, link_bandwidth=beta, latency=kw.get("latency") or 0)
    if origin:
        r.convention["link"] = origin
    name_model(r, spec, cfg, _CP_UNUSED)
    show(r, as_json, explain, answer_label="bytes each device sends per layer")


@solve_command("sliding-window")
@click.option("--window", "-W", "window", type=SIZE, default=None, help="Window W (tokens, the query included).")
@click.option("--layers", "-L", "layers", type=INT, default=None, help="Windowed layers stacked.")
@click.option("--convention", type=click.Choice(["strict", "span"]), default="strict", show_default=True,
              help="strict: L·(W − 1) positions back; span: L·W (Mistral 7B's 'k × W').")
@click.option("--sinks", type=Int(0), default=0, show_default=True, help="Attention-sink tokens kept (StreamingLLM).")
@click.option("--seq", "-n", "seq", type=SIZE, default=None, help="Sequence length, for the KV cache per layer.")
@preset_options
@output_options
def sliding_window(window, layers, convention, sinks, seq, as_json, explain, **kw):
    """A stack of sliding-window layers: receptive field (both conventions), sinks, KV cache per layer."""
    from solver.counting.window import window_stack

    spec, cfg = preset_spec(kw)
    if cfg is not None:
        if not cfg.sliding_window and window is None:
            raise InputError(f"{cfg.name} has no sliding window; give --window", "--window")
        n_layers = cfg.decoder_layers or cfg.n_layers
        if cfg.local_layers_of(n_layers) < n_layers and layers is None:
            raise InputError(f"{cfg.name} has global layers: the receptive field is the whole prefix", "--preset")
        window = window or cfg.sliding_window
        layers = layers or n_layers
    if window is None or layers is None:
        raise InputError("needed: --window and --layers (or --preset)", "--window")
    r = solver_call(window_stack, layers, window, convention=convention, sinks=sinks, seq=seq)
    name_model(r, spec, cfg, uses=("sliding_window", "global_every"),
               why="the receptive field reads only the window and the layers")
    show(r, as_json, explain, answer_label=f"receptive field in positions before the token ({convention})")


@solve_command()
@click.option("--x", "x_text", metavar="VECTOR", required=True, help="Logits or scores: '10 60 -100'.")
@click.option("--cap", type=Real(0, 10**6, min_open=True), default=None,
              help="Cap (Gemma 2: 50 for attention scores, 30 for final logits).")
@click.option("--gemma2", type=click.Choice(["attention", "final"]), default=None, help="Gemma 2's cap for that place.")
@output_options
def softcap(x_text, cap, gemma2, as_json, explain):
    """Logit soft-capping (Gemma 2): cap·tanh(x/cap) and its gradient."""
    from drills.cli.matrix_args import parse_vector
    from solver.kernels.softcap import GEMMA2_CAPS
    from solver.kernels.softcap import softcap as sc

    if (cap is None) == (gemma2 is None):
        raise InputError("give --cap or --gemma2 (one of them)", "--cap")
    cap = GEMMA2_CAPS[gemma2] if gemma2 else cap
    x = parse_vector(x_text, "--x")
    if x.shape[0] > 10_000:
        raise InputError("at most 10,000 values", "--x")
    r = solver_call(sc, x.floats(), cap)
    show(r, as_json, explain, answer_label=f"values capped at ±{cap:g}")
