"""``qkv solve moe-all-to-all|expert-capacity|router-loss`` (issue 24): expert-parallel
communication, expert capacity and dropped tokens, the router's auxiliary losses.

The formulas live in ``solver.systems.moe_systems`` and ``solver.kernels.router_loss``.
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import COUNT, INT, SIZE, Real
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_parallel import _link, link_options
from drills.cli.solve_relative import solver_call
from drills.output import InputError


@solve_command("moe-all-to-all")
@click.option("--tokens", "-T", "tokens", type=COUNT, required=True, help="Tokens on each device (batch × sequence).")
@click.option("--d-model", "--hidden", "-d", "d_model", type=SIZE, required=True, help="Model width d.")
@click.option("--top-k", "-k", "top_k", type=INT, default=2, show_default=True, help="Experts per token.")
@click.option("--ep", "--expert-parallel", "ep", type=INT, required=True, help="Expert-parallel degree (devices).")
@click.option("--experts", "-E", "experts", type=INT, default=None, help="Experts in all (checked: divisible by --ep).")
@click.option("--dtype", "--dispatch-dtype", "dtype", default="bf16", show_default=True,
              help="Activation dtype sent in the dispatch (and the combine, unless --combine-dtype).")
@click.option("--combine-dtype", default=None,
              help="The combine's dtype when it differs (DeepSeek-V3: dispatch fp8, combine bf16).")
@click.option("--count-local", is_flag=True, help="Count the vectors that stay on their device too.")
@link_options
@output_options
def moe_all_to_all(tokens, d_model, top_k, ep, experts, dtype, combine_dtype, count_local, as_json, explain, **kw):
    """Expert-parallel all-to-all of one MoE layer: dispatch + combine bytes per device, and time."""
    from solver.systems.moe_systems import expert_all_to_all

    beta, origin = _link(kw, required=False)
    r = solver_call(expert_all_to_all, tokens, d_model, top_k, ep, dtype=dtype, combine_dtype=combine_dtype,
                    link_bandwidth=beta,
                    latency=kw.get("latency") or 0, count_local=count_local, experts=experts)
    if origin:
        r.convention["link"] = origin
    show(r, as_json, explain, answer_label="bytes each device sends per MoE layer (dispatch + combine, forward)")


@solve_command("expert-capacity")
@click.option("--tokens", "-T", "tokens", type=COUNT, required=True, help="Tokens in the batch routed together.")
@click.option("--experts", "-E", "experts", type=INT, required=True)
@click.option("--capacity-factor", "--cf", "capacity_factor", type=Real(0, 1000, min_open=True), default=1.0,
              show_default=True)
@click.option("--top-k", "-k", "top_k", type=INT, default=1, show_default=True)
@click.option("--per", type=click.Choice(["tokens", "assignments"]), default="tokens", show_default=True,
              help="C = cf·T/E (Switch) or cf·k·T/E (top-k assignments).")
@click.option("--rounding", type=click.Choice(["floor", "ceil"]), default="floor", show_default=True)
@click.option("--routed", metavar="LIST", default=None,
              help="Tokens routed to each expert ('6 2 3 1', 0 allowed): gives the tokens dropped.")
@output_options
def expert_capacity(tokens, experts, capacity_factor, top_k, per, rounding, routed, as_json, explain):
    """Expert capacity (capacity factor × tokens ÷ experts) and the tokens dropped for a stated routing."""
    from drills.cli.matrix_args import parse_vector
    from solver.systems.moe_systems import expert_capacity as ec

    counts = None
    if routed is not None:
        v = parse_vector(routed, "--routed").exact()
        if any(x.denominator != 1 or x < 0 for x in v) or len(v) > 100_000:
            raise InputError("one whole number ≥ 0 per expert", "--routed")
        counts = [int(x) for x in v]
    r = solver_call(ec, tokens, experts, capacity_factor, top_k=top_k, per=per, rounding=rounding, routed=counts)
    show(r, as_json, explain, answer_label="tokens dropped" if counts is not None else "expert capacity")


@solve_command("router-loss")
@click.option("--logits", metavar="MATRIX", required=True, help="Router logits, tokens × experts: '1 2 0; 0 0 3'.")
@click.option("--top-k", "-k", "top_k", type=INT, default=1, show_default=True)
@click.option("--alpha", type=Real(0, 10**6, min_open=True), default=1.0, show_default=True,
              help="Load-balancing coefficient α (1e-2 in Switch).")
@click.option("--z-coef", type=Real(0, 10**6, min_open=True), default=1.0, show_default=True,
              help="z-loss coefficient (1e-3 in ST-MoE).")
@click.option("--f-per", type=click.Choice(["assignments", "tokens"]), default="assignments", show_default=True,
              help="f_i over T·k (uniform gives α) or over T (HF Mixtral's function).")
@output_options
def router_loss(logits, top_k, alpha, z_coef, f_per, as_json, explain):
    """Switch Transformer load-balancing loss and router z-loss, by hand from router logits."""
    from drills.cli.matrix_args import parse_matrix
    from solver.kernels.router_loss import router_losses

    x = parse_matrix(logits, "--logits").as_matrix()
    if x.shape[0] * x.shape[1] > 10**6:
        raise InputError("at most 10^6 logits", "--logits")
    r = solver_call(router_losses, x.floats(), top_k=top_k, alpha=alpha, z_coef=z_coef, f_per=f_per)
    show(r, as_json, explain, answer_label="load-balancing loss")
