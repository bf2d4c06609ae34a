"""Every number a ``qkv solve`` option takes: a finite answer or a one-line refusal.

A template (a valid call) for each of the ``qkv solve`` subcommands; the property replaces
the value of one number option (found by introspection: every option of type
:class:`drills.cli.numbers.Number`, the model flags and hardware figures included, and the
kernels' number-text options) with float or integer text — NaN, ±inf, subnormal, huge,
negative, zero, 401 digits, or any double ``repr`` — and asks that the command either

- exits 0 with no ``nan``, ``inf`` or ``∞`` anywhere in its output, or
- exits 2 with exactly one error line on stderr, ``qkv: error: ...`` (besides any ``note:``
  that reading a preset printed first);

never a traceback, never "internal error" (issue 28, "False answers with exit 0").
"""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drills.cli import SOLVE_COMMANDS, cli, solve
from drills.cli.numbers import Number

# A valid call of every solve subcommand (words after "qkv solve NAME").
TEMPLATES: dict[str, list[str]] = {
    "attention": ["--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1 2; 3 4", "--scale", "1/2"],
    "softmax": ["--x", "1 2 3", "--temperature", "2"],
    "layernorm": ["--x", "1 2 3", "--eps", "1e-5"],
    "rmsnorm": ["--x", "1 2; 3 4", "--eps", "1e-6"],
    "pe": ["--pos", "3", "--d-model", "4", "--dim", "1", "--base", "10000"],
    "rope": ["--x", "1 0 0 1", "--pos", "2", "--base", "10000"],
    "params": ["--preset", "gpt2"],
    "flops": ["--preset", "gpt2", "--batch", "1", "--seq", "16"],
    "memory": ["--preset", "gpt2", "--what", "kv-cache", "--batch", "1", "--seq", "16", "--dtype", "bf16"],
    "matmul": ["-B", "16", "-D", "1024", "-F", "1024", "--hw", "h100"],
    "roofline": ["--hw", "h100"],
    "attention-flops": ["-B", "1", "-T", "2048", "--n-heads", "32", "--d-head", "128", "--hw", "h100"],
    "prefill": ["-N", "7B", "-T", "2048", "--hw", "h100", "--mfu", "0.5"],
    "decode": ["-N", "7B", "-B", "1", "-S", "1024", "--kv-bytes-per-token", "512K", "--hw", "h100"],
    "train": ["-N", "7B", "-D", "1.4T", "--hw", "h100", "--chips", "8", "--mfu", "0.4"],
    "zero": ["-N", "7.5B", "--gpus", "64", "--stage", "2", "--hbm", "80GB"],
    "activations": ["-s", "2048", "-b", "1", "--d-model", "4096", "--n-heads", "32"],
    "chips": ["-N", "70B", "--hw", "h100", "-B", "1", "-S", "4096", "--kv-bytes-per-token", "327680"],
    "collective": ["-S", "1GB", "-n", "8", "--link-bandwidth", "450GB/s", "--latency", "5e-6"],
    "allreduce": ["-S", "1GB", "-n", "8", "--hw", "h100", "--latency", "5e-6"],
    "tp": ["-b", "1", "-s", "2048", "--d-model", "8192", "-t", "8", "--hw", "h100", "--latency", "1e-6"],
    "tp-matmul": ["-B", "2048", "-D", "8192", "-F", "8192", "-t", "8", "--hw", "h100"],
    "pipeline": ["-p", "8", "-m", "32", "--schedule", "interleaved", "-v", "2"],
    "dp-comm": ["-N", "7B", "--gpus", "8", "--stage", "3", "--link-bandwidth", "100GB/s"],
    "serve": ["-N", "70B", "-S", "4096", "--kv-bytes-per-token", "327680", "--hw", "h100", "--chips", "8",
              "--price-per-chip-hour", "2"],
    "generate": ["-N", "7B", "-P", "512", "-n", "16", "--kv-bytes-per-token", "512K", "--hw", "h100"],
    "speculative": ["-a", "0.8", "-g", "4", "-c", "0.1", "--max-gamma", "16"],
    "compute-optimal": ["-C", "1e24"],
    "mfu": ["-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100"],
    "alibi": ["--heads", "8", "--head", "2", "--query", "3", "--key", "1"],
    "t5-buckets": ["--r", "-20", "--num-buckets", "32", "--max-distance", "128", "--n-heads", "8"],
    "cross-entropy": ["--logits", "2 1 0", "--target", "0", "--label-smoothing", "0.1"],
    "sampling": ["--logits", "2 1 0.5 0", "--temperature", "0.7", "--top-k", "3", "--top-p", "0.9"],
    "quant": ["--format", "q4_0", "--weights", "7B"],
    # issue 25
    "float-format": ["-f", "e4m3", "-x", "0.3"],
    "block-format": ["-f", "mxfp4", "-N", "7B", "--block", "32", "--scale-bits", "8"],
    "mx-quantize": ["--values", "0.1 -0.7 2.5 3.9"],
    "quant-error": ["--values", "0.5 -1.2 3.1 0.05", "--bits", "4"],
    "smoothquant": ["--x-max", "16 1", "--w-max", "1 4", "--alpha", "0.5"],
    "fp8-memory": ["-N", "7B"],
    "lr": ["--schedule", "cosine", "-t", "1500", "--lr", "3e-4", "-w", "1000", "--total", "11000", "--min-lr", "3e-5"],
    "fsdp": ["-P", "200M", "-n", "8", "-T", "4096", "-L", "32", "--hw", "h100", "--efficiency", "0.5"],
    "grad-accum": ["-B", "1024", "-b", "2", "-d", "64", "-p", "8"],
    "fit-3d": ["-N", "70B", "-L", "80", "--d-model", "8192", "-a", "64", "-s", "4096", "-t", "8", "-p", "4", "-d", "32",
               "--hbm", "80GB"],
    "busbw": ["-n", "16", "-S", "10737418240", "--time-us", "90330", "--link-bandwidth", "300GB/s"],
    "run-flops": ["--gpu-hours", "1000", "--mfu", "0.4", "--peak-flops", "989.5e12", "-N", "7B"],
    "mfu-step": ["-N", "7B", "-T", "4194304", "--step-time", "12", "--chips", "64", "--peak-flops", "989.5e12"],
    # issue 24
    "flash-attention": ["-N", "4096", "-d", "128", "--sram-bytes", "192KiB", "--batch", "2", "--heads", "8"],
    "online-softmax": ["--block", "1 2", "--block", "3 0", "--values", "1 0; 0 1; 1 1; 2 2"],
    "mla-decode": ["--preset", "deepseek-v2-lite", "-S", "4k", "--batch", "2"],
    "rope-scaling": ["-d", "128", "--method", "yarn", "-s", "4", "--original", "4096", "--base", "10000"],
    "ring-attention": ["-N", "1M", "-P", "8", "--n-heads", "32", "--d-head", "128", "--link-bandwidth", "50GB/s",
                       "--peak-flops", "989T", "--mfu", "0.5"],
    "ulysses": ["-N", "32k", "-P", "8", "--n-heads", "32", "--d-head", "128", "--link-bandwidth", "50GB/s"],
    "sliding-window": ["--window", "4096", "--layers", "32", "--sinks", "4", "--seq", "32k"],
    "softcap": ["--x", "10 60 -100", "--cap", "50"],
    "mlp": ["--sizes", "784 256 10", "--what", "flops", "--batch", "32"],
    "rope-score": ["--q", "1 0 0 1", "--k", "0 1 1 0", "-m", "5", "-n", "2", "--base", "10000"],
    "perplexity": ["--loss", "2.5"],
    "paged-kv": ["--lengths", "1000 37", "-b", "16", "-X", "524288", "--budget", "40GB", "--max-len", "4096"],
    "batching": ["--outputs", "1 10 3 5", "-B", "2", "--step-time", "0.01", "--prefill-time", "0.05"],
    "disaggregation": ["-P", "4096", "-X", "524288", "--link-bandwidth", "50GB/s", "--layers", "32",
                       "--prefill-time", "0.2"],
    "moe-all-to-all": ["-T", "4096", "-d", "4096", "-k", "2", "--ep", "8", "-E", "64", "--link-bandwidth", "50GB/s"],
    "expert-capacity": ["-T", "12", "-E", "4", "--cf", "1.25", "-k", "1"],
    "router-loss": ["--logits", "1 2 0; 0 0 3", "-k", "2", "--alpha", "0.01", "--z-coef", "0.001"],
    "transfer": ["--size", "1GB", "--link", "50GB/s", "--latency", "5us"],
    # issue 36 (registry-made commands)
    "dp-batch": ["--hw", "tpu-v5p", "--axes", "3", "--chips", "8960", "--batch", "16e6"],
    "tp-max": ["-F", "28672", "--hw", "h100", "--ring", "unidirectional"],
    "fsdp-tp-batch": ["-F", "32768", "--peak", "459TFLOP/s", "--link", "90GB/s"],
    "fsdp-opt": ["-B", "48000", "-F", "32768", "-N", "64"],
    "ep-d-ff": ["-Z", "64", "-k", "8", "--peak", "990TFLOP/s", "--link", "400GB/s", "-F", "2048"],
    "pipeline-batch": ["-p", "8", "-f", "0.05", "--microbatch", "4096", "--dp", "16"],
    "tp-decode-max": ["-F", "16384", "-B", "32", "--hw", "tpu-v5e"],
    "decode-batch": ["--hw", "h100", "--experts", "8", "--top-k", "2", "--heads", "32", "--kv-heads", "8"],
    "decode-latency": ["-N", "70e9", "-B", "64", "-S", "8k", "--kv-per-token", "320KiB", "--hw", "h100", "--chips",
                       "8"],
    "kv-budget": ["--weights", "16GB", "--kv-per-token", "128KiB", "--hw", "h100", "--context", "8k", "--batch", "4"],
    "sharded-matmul": ["-I", "1024", "-J", "4096", "-K", "8192", "--case", "both", "--link", "45GB/s"],
    "weight-stationary": ["-B", "256", "-D", "8192", "-F", "32768", "-N", "128", "--link", "45GB/s"],
    "chip-figures": ["--chip", "tpu-v5p", "--figures", "hsm"],
    "gpu-peak": ["--sms", "132", "--flops-per-cycle", "1024", "--clock", "1.83GHz", "--chip", "h100"],
    "warps-resident": ["--registers-per-thread", "64", "--warps-per-block", "8", "--smem-per-block", "48KiB",
                       "--smem-per-sm", "228KiB"],
    "elementwise": ["-n", "1073741824", "--inputs", "2", "--hw", "h100"],
    "reduction": ["--rows", "8192", "--cols", "8192", "--hw", "h100", "--dtype", "bf16"],
    "torus": ["--shape", "16x16x16", "--link", "90GB/s"],
    "pod": ["--chips", "8960", "--chip", "tpu-v5p"],
    "node": ["--node", "gb200-nvl72"],
    "two-level-all-reduce": ["--size", "1GB", "-g", "8", "-m", "16", "--intra", "450GB/s", "--inter", "50GB/s"],
    "train-memory": ["-N", "70e9", "--chips", "64", "--recipe", "bf16-adam", "--hbm", "80GB"],
}

#: More starting calls, down the paths that loop over layers (experts, sliding windows, latent KV).
MORE = [
    ("decode", ["--preset", "mixtral-8x7b", "-B", "4", "-S", "8k", "--hw", "h100"]),
    ("memory", ["--preset", "mistral-7b", "--what", "kv-cache", "--batch", "1", "--seq", "8k", "--dtype", "bf16"]),
    ("serve", ["--preset", "deepseek-v2-lite", "-S", "4k", "--hw", "h200"]),
    ("flops", ["--preset", "mixtral-8x7b", "--batch", "1", "--seq", "1k", "--mode", "decode"]),
]
STARTS = [*TEMPLATES.items(), *MORE]

#: Kernel options that take one number as text (read by drills.cli.matrix_args.parse_number).
NUMBER_TEXT = {"--temperature", "--eps", "--base", "--pos", "--scale"}

#: Values that must be refused or answered finitely.
HOSTILE = ["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e400", "-1e400", "1e-320", "4.9e-324",
           "1e-300", "-1e-300", "1e300", "-1e300", "1e30", "1e31", "1e-31", "-1", "-0", "0", "0.0", "-5",
           "9" * 401, "-" + "9" * 401, "2^1000", "2^-1000", "1/3", "0.5", "1e18", "1e19", str(2**63),
           "1.7976931348623157e308"]

_values = st.one_of(
    st.sampled_from(HOSTILE),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.integers(min_value=10**18, max_value=10**500).map(str),
)

_NON_FINITE = re.compile(r"(?i)\bnan\b|\binf(inity)?\b|∞")


def number_options(name: str) -> list[str]:
    """The options of ``qkv solve NAME`` that take a number (their first spelling)."""
    cmd = solve.get_command(click.Context(solve), name)
    out = []
    for p in cmd.params:
        if isinstance(p, click.Option) and not p.is_flag and p.opts[0].startswith("-"):
            if isinstance(p.type, Number) or p.opts[0] in NUMBER_TEXT:
                out.append(p.opts[0])
    return out


CASES = [(i, opt) for i, (name, _) in enumerate(STARTS) for opt in number_options(name)]


def _with(args: list[str], opt: str, value: str) -> list[str]:
    """``args`` with ``opt`` set to ``value`` (replaced where present, else added); ``opt=VALUE``
    so that a value starting with '-' is not read as an option."""
    out, i = [], 0
    while i < len(args):
        if args[i] == opt:
            i += 2
            continue
        out.append(args[i])
        i += 1
    return [*out, f"{opt}={value}"] if opt.startswith("--") else [*out, opt, value]


def run(args: list[str]):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=True)


def assert_finite_or_refused(args: list[str], result) -> None:
    out, err = result.stdout or "", result.stderr or ""
    where = f"qkv solve {args!r} -> exit {result.exit_code}:\n{out}{err}"
    assert result.exception is None or isinstance(result.exception, SystemExit), f"{where}\n{result.exception!r}"
    assert "Traceback" not in out + err and "internal error" not in out + err, where
    assert result.exit_code in (0, 2), where
    if result.exit_code == 0:
        assert not _NON_FINITE.search(out), where
    else:  # one error line (a "note:" the model reader printed before may precede it)
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("note: ")]
        assert len(lines) == 1 and lines[0].startswith("qkv: error: "), where


def test_every_solve_command_has_a_template():
    assert set(TEMPLATES) == set(SOLVE_COMMANDS)


@pytest.mark.parametrize("name,args", STARTS, ids=[f"{n}#{i}" for i, (n, _) in enumerate(STARTS)])
def test_templates_answer_finitely(name, args):
    """The starting calls work and print no non-finite figure (so a failure below is the value's)."""
    result = run([name, *args])
    assert result.exit_code == 0, f"{name}: {result.stdout}{result.stderr}"
    assert not _NON_FINITE.search(result.stdout), result.stdout


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_number_text_gives_a_finite_answer_or_one_line(data):
    """Any float or integer text in any number option: a finite answer or one line, exit 2."""
    start, opt = data.draw(st.sampled_from(CASES), label="option")
    value = data.draw(_values, label="value")
    name, base = STARTS[start]
    args = _with([name, *base], opt, value)
    assert_finite_or_refused(args, run(args))


# The cases issue 28 names, each pinned: refused in one line naming the option.
ISSUE_28 = [
    (["collective", "-S", "1GB", "-n", "8", "--link-bandwidth", "450GB/s", "--latency", "nan"], "--latency"),
    (["allreduce", "-S", "1GB", "-n", "8", "--hw", "h100", "--latency", "inf"], "--latency"),
    (["allreduce", "-S", "1GB", "-n", "8", "--hw", "h100", "--latency", "1e400"], "--latency"),
    (["collective", "-S", "1GB", "-n", "8", "--link-bandwidth", "1e-300"], "--link-bandwidth"),
    (["speculative", "-a", "0.8", "-g", "4", "-c", "nan"], "--cost"),
    (["tp", "-b", "1", "-s", "2048", "--d-model", "8192", "-t", "8", "--hw", "h100", "--latency", "nan"], "--latency"),
    (["speculative", "-a", "0.8", "-g", "9" * 401], "--gamma"),
    (["alibi", "--heads", "9" * 401], "--heads"),
    (["t5-buckets", "--r", "9" * 401], "--r"),
    (["cross-entropy", "--logits", "2 1 0", "--target", "9" * 401], "--target"),
    (["sampling", "--logits", "2 1 0.5 0", "--temperature", "1e-320", "--top-p", "0.9"], "--temperature"),
]


@pytest.mark.parametrize("args,flag", ISSUE_28, ids=[" ".join(a[:1] + [f]) for a, f in ISSUE_28])
def test_issue_28_cases_are_refused_in_one_line(args, flag):
    result = run(args)
    assert result.exit_code == 2, result.stdout + result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"qkv: error: {flag}"), result.stderr
