"""``qkv solve mlp|rope-score|perplexity`` (issue 24): computations the bank used, now commands.

The formulas are ``solver.counting.mlp`` (parameters and FLOPs of a fully connected network),
``solver.kernels.positions_relative.rope_score`` (q·k of RoPE-rotated vectors, computed directly
and through m − n) and ``solver.kernels.loss`` (cross-entropy, perplexity).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import INT, Real
from drills.cli.solve_hardware import output_options, show
from drills.cli.solve_relative import solver_call, trace_result
from drills.output import InputError


@solve_command()
@click.option("--sizes", "--layers", "sizes", metavar="LIST", required=True,
              help="Layer widths n₀ → n₁ → … → n_k: '784 256 10'.")
@click.option("--what", type=click.Choice(["params", "flops"]), default="params", show_default=True)
@click.option("--no-bias", is_flag=True, help="No biases (counted by default, as nn.Linear).")
@click.option("--batch", "-B", "batch", type=INT, default=1, show_default=True, help="Examples (FLOPs).")
@click.option("--convention", type=click.Choice(["flops", "macs"]), default="flops", show_default=True,
              help="FLOPs: 2 per multiply-add, or MACs: 1.")
@click.option("--bias-adds", is_flag=True, help="Count the bias additions as FLOPs (1 each).")
@output_options
def mlp(sizes, what, no_bias, batch, convention, bias_adds, as_json, explain):
    """Parameters or forward FLOPs of a plain fully connected network."""
    from drills.cli.solve_serving_systems import int_list
    from solver.counting.mlp import mlp_flops, mlp_params

    s = int_list(sizes, "--sizes", limit=1000)
    if len(s) < 2:
        raise InputError("give at least two widths (input and output)", "--sizes")
    p = solver_call(mlp_params, s, bias=not no_bias)
    if what == "params":
        f = solver_call(mlp_flops, s, batch=batch, convention=convention, count_bias_adds=bias_adds)
        p.breakdown["forward_" + ("flops" if convention == "flops" else "macs")] = f.answer
        show(p, as_json, explain, answer_label="parameters")
        return
    f = solver_call(mlp_flops, s, batch=batch, convention=convention, count_bias_adds=bias_adds)
    f.breakdown["params"] = p.answer
    show(f, as_json, explain, answer_label=f"forward {f.unit} for {batch} example(s)")


@solve_command("rope-score")
@click.option("--q", "q_text", metavar="VECTOR", required=True, help="Query vector (even length).")
@click.option("--k", "k_text", metavar="VECTOR", required=True, help="Key vector.")
@click.option("--m", "-m", "m", type=Real(-10**9, 10**9), required=True, help="Query position m.")
@click.option("--n", "-n", "n", type=Real(-10**9, 10**9), required=True, help="Key position n.")
@click.option("--base", type=Real(1, 10**12, min_open=True), default=10000, show_default=True)
@click.option("--pairing", type=click.Choice(["interleaved", "half"]), default="interleaved", show_default=True,
              help="Pairs (2i, 2i+1) as the paper, or (i, i + d/2) as HF's rotate_half.")
@output_options
def rope_score(q_text, k_text, m, n, base, pairing, as_json, explain):
    """The score RoPE(q, m)·RoPE(k, n), directly and through m − n only."""
    from drills.cli.matrix_args import parse_vector
    from solver.kernels.positions_relative import rope_score as rsc

    q, k = parse_vector(q_text, "--q"), parse_vector(k_text, "--k")
    if q.shape != k.shape:
        raise InputError(f"--q has {q.shape[0]} entries and --k {k.shape[0]}", "--k")
    if q.shape[0] % 2 or q.shape[0] > 65536:
        raise InputError("RoPE rotates pairs: give an even number of entries (at most 65,536)", "--q")
    score, tr = solver_call(rsc, q.floats(), k.floats(), m, n, base=base, pairing=pairing, return_trace=True)
    conv = {"rotation": "θ_i = base^(−2i/d), pair i turned by position·θ_i",
            "pairing": "interleaved (2i, 2i+1), as Su et al." if pairing == "interleaved" else
                       "rotate-half (i, i + d/2), as HuggingFace",
            "relative": "the same score from m − n alone: Σ (a c + b d) cos φ − (b c − a d) sin φ, φ = (m − n)θ"}
    r = trace_result(score, "", conv, tr)
    show(r, as_json, explain, answer_label=f"score q·k at positions m = {m:g}, n = {n:g}")


@solve_command()
@click.option("--logprobs", metavar="VECTOR", default=None, help="Each token's log-probability: '-1.2 -0.3 -2'.")
@click.option("--log-base", type=click.Choice(["e", "2"]), default="e", show_default=True,
              help="Base of --logprobs (natural, as PyTorch; or bits).")
@click.option("--logits", "logits_text", metavar="MATRIX", default=None, help="One row of logits per token.")
@click.option("--targets", metavar="LIST", default=None, help="The target class of each row of --logits (from 0).")
@click.option("--loss", type=Real(0, 10**4), default=None, help="A mean loss already computed (nats or --log-base 2).")
@output_options
def perplexity(logprobs, log_base, logits_text, targets, loss, as_json, explain):
    """A sequence's perplexity exp(−mean log p) from log-probabilities, logits and targets, or a loss."""
    import math

    from solver.kernels.loss import perplexity as ppl

    given = [x is not None for x in (logprobs, logits_text, loss)]
    if sum(given) != 1:
        raise InputError("give one of --logprobs, --logits (with --targets) or --loss", "--logprobs")
    unit = "nats" if log_base == "e" else "bits"
    extra = {}
    if logprobs is not None:
        from drills.cli.matrix_args import parse_vector

        lp = parse_vector(logprobs, "--logprobs").floats()
        if any(x > 0 for x in lp):
            raise InputError("a log-probability is ≤ 0", "--logprobs")
        loss = -sum(lp) / len(lp)
        extra = {"tokens": len(lp), "sum_log_prob": sum(lp), "mean_nll": loss}
    elif logits_text is not None:
        from drills.cli.matrix_args import parse_matrix, parse_vector
        from solver.kernels.loss import cross_entropy

        if targets is None:
            raise InputError("--logits needs --targets", "--targets")
        if log_base != "e":
            raise InputError("logits give natural log-probabilities; --log-base applies to --logprobs", "--log-base")
        z = parse_matrix(logits_text, "--logits").as_matrix()
        t = parse_vector(targets, "--targets").exact()
        if len(t) != z.shape[0] or any(v.denominator != 1 or v < 0 for v in t):
            raise InputError(f"give one whole-number target (from 0) per row of --logits ({z.shape[0]})", "--targets")
        y = [int(v) for v in t]
        if any(t >= z.shape[1] for t in y):
            raise InputError(f"a target is outside the {z.shape[1]} classes", "--targets")
        per = solver_call(cross_entropy, z.floats(), y, reduction="none")
        loss = float(sum(per) / len(per))
        extra = {"tokens": len(y), "nll_per_token": [float(v) for v in per], "mean_nll": loss}
    r = solver_call(ppl, loss, unit=unit)
    r.breakdown.update(extra)
    r.convention["average"] = "mean negative log-likelihood per token, then exp (token-level perplexity)"
    if math.isinf(r.answer):
        raise InputError("the perplexity overflows for this loss", "--loss")
    show(r, as_json, explain, answer_label="perplexity")
