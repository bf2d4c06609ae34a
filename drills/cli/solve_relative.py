"""``qkv solve alibi|t5-buckets``: relative positions by hand.

The kernels are ``solver.kernels.numpy_ref.alibi_slopes`` / ``alibi_bias`` and
``solver.kernels.positions_relative.t5_bucket``; this module wires flags to them and prints the
answer, unit, convention and breakdown as every solve command does (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.numbers import Int
from drills.cli.solve_hardware import output_options, show
from drills.output import InputError, strip_controls

#: solver parameter names that are not the flag's name
FLAGS = {"n_weights": "--weights", "relative_position": "--r", "n_heads": "--heads"}


def solver_call(fn, *args, **kwargs):
    """Run a solver function; its SolverInputError becomes one line naming the flag."""
    from drills.cli.lazy import float_guarded
    from solver.errors import SolverInputError

    try:
        return float_guarded(fn, *args, **kwargs)
    except SolverInputError as e:
        flag = FLAGS.get(e.param or "", f"--{e.param.replace('_', '-')}" if e.param else None)
        raise InputError(str(e.args[0]) if e.args else "invalid input", flag) from None


def trace_result(answer, unit, convention, trace):
    """A Result whose steps are a kernel's trace (name, formula, value) and whose breakdown is the trace's values."""
    from solver.result import Result

    r = Result(answer=answer, unit=unit, convention=convention)
    for s in trace:
        v = s.value.tolist() if hasattr(s.value, "tolist") else s.value
        r.step(s.name, s.formula, v)
        r.breakdown[s.name] = v
    return r


@solve_command()
@click.option("--heads", "--n-heads", "n_heads", type=Int(1, 10**6), required=True,
              help="Number of heads H (any, not only powers of two; at most 10^6).")
@click.option("--head", type=Int(1), default=None, help="Head h (counting from 1) for one bias value.")
@click.option("--query", "--i", "-i", "query", type=Int(0), default=None, help="Query position i.")
@click.option("--key", "--j", "-j", "key", type=Int(0), default=None, help="Key position j (≤ i when causal).")
@click.option("--bidirectional", is_flag=True, help="Symmetric −m·|i − j| (no causal −∞).")
@click.option("--q", "q_text", metavar="MATRIX", default=None, help="With --head, --k, --v: head h's queries (n×d), for attention.")
@click.option("--k", "k_text", metavar="MATRIX", default=None, help="Keys (m×d).")
@click.option("--v", "v_text", metavar="MATRIX", default=None, help="Values (m×d_v).")
@output_options
def alibi(n_heads, head, query, key, bidirectional, q_text, k_text, v_text, as_json, explain):
    """ALiBi slopes (the paper's rule for any head count), one head's bias −m_h·(i − j), or its biased attention."""
    from solver.kernels import numpy_ref
    from solver.result import Result

    slopes = solver_call(numpy_ref.alibi_slopes, n_heads)
    if any(t is not None for t in (q_text, k_text, v_text)):
        return _alibi_attention(n_heads, head, bidirectional, q_text, k_text, v_text, as_json, explain)
    conv = {"slopes": "m_h = 2^(−8h/H) for H a power of two; otherwise the closest lower power of two's slopes, "
                      "then every other slope of twice that power (Press et al. 2022)",
            "sign": "bias = −m_h·(i − j): distant keys are penalised",
            "form": "bidirectional −m_h·|i − j|" if bidirectional else "causal: keys after the query are −∞"}
    r = Result(answer=None, unit="", convention=conv)
    r.step("slopes m_1 … m_H", f"H = {n_heads}", [float(s) for s in slopes])
    r.breakdown["slopes"] = [float(s) for s in slopes]
    given = [x is not None for x in (head, query, key)]
    if any(given) and not all(given):
        raise InputError("one bias value needs --head, --query and --key together", "--head")
    if all(given):
        if head > n_heads:
            raise InputError(f"head {head} does not exist: there are {n_heads}", "--head")
        if key > query and not bidirectional:
            raise InputError(f"key {key} is after query {query}: the causal bias is −∞ there (use --bidirectional)", "--key")
        m = float(slopes[head - 1])
        dist = abs(query - key)
        r.answer = r.step(f"bias = −m_{head}·(i − j)", f"−{m:.6g} × {dist}", -m * dist)
        r.breakdown["slope"] = m
        r.breakdown["distance"] = dist
        show(r, as_json, explain, answer_label=f"ALiBi bias of head {head} for query {query}, key {key}: "
                                               "added to the score before the softmax")
        return
    r.answer = [float(s) for s in slopes]
    r.unit = "slopes"
    show(r, as_json, explain, answer_label=f"slopes m_1 … m_{n_heads}")


@solve_command("t5-buckets")
@click.option("--r", "-r", "--relative-position", "relative", type=Int(None), required=True,
              help="Relative position r = key − query (negative: key before).")
@click.option("--causal", is_flag=True, help="Decoder (unidirectional) buckets; default bidirectional (encoder).")
@click.option("--num-buckets", type=Int(2, 10**6), default=None, help="Buckets n_b (default 32, or the config's).")
@click.option("--max-distance", type=Int(1), default=None, help="Where the buckets stop growing (default 128, or the config's).")
@click.option("--n-heads", "--heads", "n_heads", type=Int(1, 10**6), default=None,
              help="Heads, for the bias table's parameters.")
@click.option("--config", "config_file", metavar="FILE", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A T5 config.json: relative_attention_num_buckets, relative_attention_max_distance and "
                   "num_heads (flags given win).")
@output_options
def t5_buckets(relative, causal, num_buckets, max_distance, n_heads, config_file, as_json, explain):
    """T5's relative-position bucket of r: exact region, then logarithmic, capped."""
    from solver.kernels.positions_relative import t5_bias_table_params, t5_bucket

    if config_file:
        num_buckets, max_distance, n_heads = _t5_config(config_file, num_buckets, max_distance, n_heads)
    num_buckets = 32 if num_buckets is None else num_buckets
    max_distance = 128 if max_distance is None else max_distance

    b, tr = solver_call(t5_bucket, relative, bidirectional=not causal, num_buckets=num_buckets,
                        max_distance=max_distance, return_trace=True)
    conv = {"relative_position": "r = key position − query position",
            "direction": "causal (decoder): all buckets for the past" if causal else
                         "bidirectional (encoder): half the buckets per direction, keys after the query offset by nb/2",
            "log_region": "distances ≥ max_exact share logarithmically wider buckets up to max_distance",
            "arithmetic": "float64 (the reference code uses float32; they agree on the tested range)"}
    r = trace_result(b, "bucket", conv, tr)
    if n_heads:
        r.breakdown["bias_table_params"] = t5_bias_table_params(num_buckets, n_heads)
        r.convention["bias_table"] = "num_buckets × n_heads, one per stack, shared by its layers"
    show(r, as_json, explain, answer_label=f"bucket index, counting from 0, of {num_buckets} buckets", unit_text="")


#: model_type of the configs whose attention uses T5's relative-position buckets (HuggingFace transformers).
T5_TYPES = frozenset({"t5", "mt5", "umt5", "longt5", "switch_transformers", "pop2piano", "udop"})


def _t5_config(path: str, num_buckets, max_distance, n_heads):
    """The bucket figures of a T5 config.json (``relative_attention_num_buckets``,
    ``relative_attention_max_distance``, ``num_heads``; T5's defaults 32 and 128 when absent), each
    replaced by the flag when one is given."""
    from solver.counting.config_json import load_hf_json
    from solver.errors import SolverInputError

    try:
        raw, _ = load_hf_json(path)
    except SolverInputError as e:
        raise InputError(e.args[0], "--config") from None
    if not isinstance(raw, dict):
        raise InputError("not a config.json object", "--config")
    model_type = raw.get("model_type")
    if "relative_attention_num_buckets" not in raw and model_type not in T5_TYPES:
        # a config of another model would silently give T5's defaults (32 buckets, 128) as its own
        shown = strip_controls(repr(model_type)[:40], keep="") if model_type is not None else "none"
        raise InputError(f"not a T5 config: model_type {shown} and no relative_attention_num_buckets "
                         f"(T5's buckets are in {', '.join(sorted(T5_TYPES))})", "--config")

    def read(key: str, default: int | None, low: int) -> int | None:
        value = raw.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10**6:
            raise InputError(f"{key} must be a whole number from {low} to 1,000,000 (got {str(value)[:40]})", "--config")
        return value

    return (num_buckets if num_buckets is not None else read("relative_attention_num_buckets", 32, 2),
            max_distance if max_distance is not None else read("relative_attention_max_distance", 128, 1),
            n_heads if n_heads is not None else read("num_heads", None, 1))


def _alibi_attention(n_heads, head, bidirectional, q_text, k_text, v_text, as_json, explain):
    """softmax(Q Kᵀ/√d − m_h·(i − j)) V for one head h of H."""
    from drills.cli.matrix_args import parse_matrix
    from solver.kernels import numpy_ref

    if head is None or None in (q_text, k_text, v_text):
        raise InputError("ALiBi attention needs --head, --q, --k and --v together", "--head")
    if head > n_heads:
        raise InputError(f"head {head} does not exist: there are {n_heads}", "--head")
    q, k, v = ([[float(x) for x in row] for row in parse_matrix(t, f).rows]
               for t, f in ((q_text, "--q"), (k_text, "--k"), (v_text, "--v")))
    bias = numpy_ref.alibi_bias(n_heads, len(q), len(k), causal=not bidirectional)[head - 1] + 0.0  # no −0.0
    (out, _), tr = solver_call(numpy_ref.attention, q, k, v, bias, return_trace=True)
    conv = {"slope": f"m_{head} = {float(numpy_ref.alibi_slopes(n_heads)[head - 1]):.6g} of H = {n_heads} heads (Press et al. 2022)",
            "bias": "−m_h·|i − j|" if bidirectional else "−m_h·(i − j), −∞ for keys after the query (bottom-right when m > n)",
            "scale": "1/√d_k, the bias added after scaling"}
    r = trace_result(out.tolist(), "matrix", conv, tr)
    r.breakdown = {"bias": bias.tolist(), **r.breakdown}
    show(r, as_json, explain)
