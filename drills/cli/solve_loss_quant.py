"""``qkv solve cross-entropy|sampling|quant``: loss, sampling sets and quantised bytes.

The work is in ``solver.kernels.loss``, ``solver.kernels.sampling`` and ``solver.systems.quant``; this module wires
flags to them and prints answer, unit, convention and breakdown (``--json``, ``--explain``).
"""

from __future__ import annotations

import click

from drills.cli.help_groups import solve_command
from drills.cli.matrix_args import parse_vector
from drills.cli.model_flags import name_model, preset_options, preset_spec
from drills.cli.numbers import Int, Real
from drills.cli.solve_hardware import COUNT, output_options, show
from drills.cli.solve_relative import solver_call, trace_result
from drills.output import InputError


def _logits(text: str) -> list[float]:
    return [float(x) for x in parse_vector(text, "--logits").rows[0]]


#: The largest x whose e^x is a float (ln of 1.797e308).
MAX_EXP = 709.78


@solve_command("cross-entropy")
@click.option("--logits", "logits_text", required=True, metavar="VECTOR", help='Logits z, e.g. "2 1 0".')
@click.option("--target", "--label", "-y", "target", type=Int(0), required=True,
              help="Target class y (counting from 0, as PyTorch's targets).")
@click.option("--label-smoothing", type=Real(0, 1), default=0, show_default=True,
              help="PyTorch's ε: (1 − ε)·one-hot + ε/C over all C classes.")
@output_options
def cross_entropy(logits_text, target, label_smoothing, as_json, explain):
    """Cross-entropy −ln softmax(z)_y in nats, with bits and the perplexity of that one token."""
    import math

    from solver.kernels.loss import cross_entropy as ce

    z = _logits(logits_text)
    loss, tr = solver_call(ce, [z], [target], label_smoothing=label_smoothing, return_trace=True)
    conv = {"log": "natural (nats), as torch.nn.functional.cross_entropy",
            "label_smoothing": f"ε = {label_smoothing}: (1 − ε)·nll + ε·mean(−ln p)" if label_smoothing else "none",
            "perplexity": "e^(nats) = 2^(bits)"}
    r = trace_result(loss, "nats", conv, tr)
    r.breakdown["bits"] = loss / math.log(2)
    if loss <= MAX_EXP:
        r.breakdown["perplexity"] = math.exp(loss)
    else:  # e^loss is beyond the largest float: said, not shown as a number
        r.breakdown["perplexity"] = None
        r.convention["perplexity"] = f"e^(nats) = 2^(bits); e^{loss:.6g} is beyond the largest float (about 1.8e308)"
    show(r, as_json, explain)


@solve_command()
@click.option("--logits", "logits_text", required=True, metavar="VECTOR", help='Logits z, e.g. "2 1 0.5 0".')
@click.option("--temperature", "-t", "temperature", type=Real(0, min_open=True), default=1, show_default=True,
              help="Temperature T > 0: softmax(z / T).")
@click.option("--top-k", "-k", "top_k", type=Int(1), default=None, help="Keep the k largest (ties with the k-th kept).")
@click.option("--top-p", "-p", "top_p", type=Real(0, 1, min_open=True), default=None,
              help="Nucleus: the smallest set whose mass reaches p (0 < p ≤ 1).")
@click.option("--crossing", type=click.Choice(["include", "exclude"]), default="include", show_default=True,
              help="The token that crosses p: in the set (HuggingFace's TopPLogitsWarper) or out.")
@output_options
def sampling(logits_text, temperature, top_k, top_p, crossing, as_json, explain):
    """The tokens temperature, top-k and top-p leave, and their renormalised probabilities."""
    from solver.kernels.sampling import sampling_set

    (kept, probs), tr = solver_call(sampling_set, _logits(logits_text), temperature=temperature, top_k=top_k, top_p=top_p,
                                    crossing=crossing, return_trace=True)
    conv = {"order": "temperature, then top-k, then top-p (HuggingFace generate)",
            "top_k_ties": "logits equal to the k-th largest are kept",
            "top_p_crossing": "the token that crosses p is included" if crossing == "include" else
                              "the token that crosses p is left out (at least one kept)",
            "indices": "tokens numbered from 0"}
    r = trace_result(kept, "tokens", conv, tr)
    r.breakdown["set_size"] = len(kept)
    show(r, as_json, explain)


@solve_command()
@click.option("--format", "fmt_name", required=True,
              help="q4_0, q4_1, q5_0, q5_1, q8_0, q2_K … q6_K (ggml), group-int4 (GPTQ/AWQ) or nf4 (QLoRA).")
@click.option("--weights", "-N", "--params", "weights", type=COUNT, default=None,
              help="Number of weights (7B, 4096*4096 as 16777216; or --preset).")
@click.option("--rows", type=COUNT, default=None, help="group-int4: output rows.")
@click.option("--cols", type=COUNT, default=None, help="group-int4: input features (the groups run along them).")
@click.option("--group-size", type=Int(1), default=128, show_default=True, help="group-int4 group size.")
@click.option("--zero", type=click.Choice(["int4", "fp16", "none"]), default="int4", show_default=True,
              help="group-int4 zero points: packed 4-bit (AutoGPTQ/AWQ), fp16, or none (symmetric).")
@click.option("--g-idx", is_flag=True, help="group-int4: count AutoGPTQ's int32 g_idx per input feature.")
@click.option("--blocksize", "--block-size", "blocksize", type=Int(1), default=64, show_default=True,
              help="nf4: block size.")
@click.option("--no-double-quant", is_flag=True, help="nf4: fp32 constants (no double quantisation).")
@preset_options
@output_options
def quant(fmt_name, weights, rows, cols, group_size, zero, g_idx, blocksize, no_double_quant, as_json, explain, **kw):
    """Bytes of quantised weights, the block or group scales included.

    With --preset or --config, N is the model's parameter count: every parameter quantised (real
    files often keep norms, and sometimes embeddings, at higher precision; say so in --weights)."""
    from solver.systems import quant as q

    name = fmt_name.lower()
    spec, cfg = preset_spec(kw)
    if cfg is not None:
        if weights is not None:
            raise InputError("give --weights or --preset/--config, not both", "--weights")
        if name in ("group-int4", "gptq", "awq"):
            raise InputError("group-int4 counts one matrix: give --rows and --cols, not a model", "--preset")
        from solver.counting import param_count

        weights = param_count(cfg)
    if name in ("group-int4", "gptq", "awq"):
        if rows is None or cols is None:
            raise InputError("group-int4 needs --rows and --cols (the groups run along the input features)", "--rows")
        r = solver_call(q.group_quant_bytes, int(rows), int(cols), group_size=group_size, zero=zero, g_idx=g_idx)
    elif name == "nf4":
        r = solver_call(q.nf4_bits_per_param, blocksize=blocksize, double_quant=not no_double_quant)
        if weights is not None:
            bits = r.answer
            r.breakdown["bytes"] = r.step("bytes = N × bits / 8", f"{int(weights):,} × {float(bits):.6g} / 8",
                                          bits * int(weights) / 8, "bytes")
    else:
        n = weights if weights is not None else (rows * cols if rows is not None and cols is not None else None)
        if n is None:
            raise InputError("give --weights (or --rows and --cols)", "--weights")
        r = solver_call(q.ggml_bytes, int(n), name)
    name_model(r, spec, cfg, {"top_k": "every expert's weights are stored, routed or not",
                              **{k: "weights only: no KV cache in this count" for k in ("sliding_window", "global_every")}})
    show(r, as_json, explain)
