"""Absurd sizes are refused in one line before anything is allocated or computed: ``models
verify`` and ``measure`` estimate every tensor of the run against the free memory; ``solve``'s
by-hand and exact computations stop at the sizes their --help states.

Through the real command line: the exit status, the one line, and the process's peak RSS and
wall time (a refusal costs the start-up and nothing more)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli
from solver.counting.config import ModelConfig
from solver.models.guard import brief_bytes, run_bytes
from tests.timing import assert_within, reference_seconds, seconds_of

REPO = Path(__file__).resolve().parents[3]
# VmHWM, the peak RSS of this process's own memory (ru_maxrss would carry the parent's peak over
# fork + exec: a long test session's)
MEASURED = """
import sys
from drills.cli import main
try:
    main()
finally:
    peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print("maxrss_kib", peak, file=sys.stderr)
"""


def qkv_measured(*args: str) -> tuple[int, str, float, int]:
    """(exit status, stderr without the RSS line, seconds, peak RSS in MiB) of ``qkv ARGS``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", MEASURED, *args], capture_output=True, text=True, env=env,
                         timeout=120)
    seconds = time.monotonic() - start
    err, _, rss = out.stderr.rpartition("maxrss_kib")
    return out.returncode, err, seconds, int(rss.split()[0]) // 1024


# -- the estimate, checked against independent formulas -------------------------------------------

def test_run_bytes_kv_cache_and_scores_match_the_formulas():
    from solver import counting as counts

    cfg = ModelConfig(d_model=64, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=256, vocab_size=100, pos="rope")
    parts = run_bytes(cfg, batch=2, seq=16, element_size=4, train_layers=3)
    assert parts["kv_cache"] == counts.kv_cache_bytes_cfg(cfg, batch=2, seq=16, dtype="fp32")
    assert parts["scores"] == 3 * 2 * (2 * 4 * 16 * 16) * 4  # layers · (scores + softmax) · B·h·T² · 4 bytes
    assert parts["logits"] == 2 * 16 * 100 * 2 * 4  # logits and their gradient
    assert parts["gradients"] == parts["weights"] == counts.param_breakdown(cfg).total * 4
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")


PEAK = """
import torch
from solver.counting.config import ModelConfig
from solver.models import build_model
torch.manual_seed(0)
cfg = ModelConfig(d_model=128, n_layers=2, n_heads=8, d_ff=512, vocab_size=8000, max_positions=512)
model = build_model(cfg, "cpu")
tokens = torch.randint(0, 8000, (4, 512))
model(tokens[:, :8], impl="math").logits.sum().backward()  # warm-up: the allocator and lazy init
model.zero_grad(set_to_none=True)
def peak():  # VmHWM in bytes: this process's own peak RSS
    return int(next(x.split()[1] for x in open("/proc/self/status") if x.startswith("VmHWM:"))) * 1024
before = peak()
model(tokens, impl="math").logits.sum().backward()
print(peak() - before)
"""


@pytest.mark.slow
def test_run_bytes_bounds_the_memory_a_real_training_step_takes():
    """Peak RSS growth of a real forward + backward on the CPU (weights already built) stays
    below the estimate of everything but the weights: activations, scores, logits, gradients."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    grown = int(subprocess.run([sys.executable, "-c", PEAK], capture_output=True, text=True, env=env, check=True,
                               timeout=120).stdout)
    cfg = ModelConfig(d_model=128, n_layers=2, n_heads=8, d_ff=512, vocab_size=8000, max_positions=512)
    parts = run_bytes(cfg, 4, 512, 4, train_layers=2, decode=False)
    estimate = parts["total"] - parts["weights"]
    assert parts["scores"] > 10**8  # the T² term dominates here: the check is about it
    assert 0 < grown <= estimate


@pytest.mark.parametrize("n,text", [(999, "999 bytes"), (51_503_851_520, "51.5 GB"), (10**19, "10^19.0 bytes")])
def test_brief_bytes(n, text):
    assert brief_bytes(n) == text


def test_refusal_names_bytes_needed_and_free(monkeypatch):
    import solver.models.guard as guard
    from solver.counting.presets import get_preset

    monkeypatch.setattr(guard, "available_bytes", lambda device: 10**9)
    result = CliRunner().invoke(cli, ["models", "verify", "gpt2", "--device", "cpu", "--batch", "8", "--seq", "512"])
    assert result.exit_code == 2
    parts = run_bytes(get_preset("gpt2").config, 8, 512, 4, train_layers=2)  # 12 layers: trained on 2-layer slices
    assert result.output.startswith(f"qkv: error: refusing to run gpt2 at batch 8 × seq 512 on cpu: it needs "
                                    f"~{brief_bytes(parts['total'])} (logits ")
    assert result.output.endswith(", cpu has 1 GB free; use smaller sizes (a run may take 80% of the free memory)\n")
    assert result.output.count("\n") == 1


# -- through the real command line: refused at once, small and fast --------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("args,start", [
    (["models", "verify", "gpt2", "--device", "cpu", "--batch", "4096", "--seq", "1024"],
     "qkv: error: refusing to run gpt2 at batch 4096 × seq 1024 on cpu: it needs ~"),
    (["measure", "attention", "-B", "64", "-T", "1000000"],
     "qkv: error: --batch/--seq/--n-heads: refusing to run attention at B=64 heads=8 T=1000000"),
])
def test_absurd_sizes_are_refused_before_allocating(args, start):
    status, err, seconds, rss_mib = qkv_measured(*args)
    assert status == 2
    assert err.count("\n") == 1 and err.startswith(start) and " free; use smaller sizes" in err
    assert rss_mib < 1024  # torch's import, no tensor of the run
    assert_within(seconds, reference_seconds(), 10, "refused before allocating")


@pytest.mark.parametrize("args,message", [
    (["measure", "matmul", "-B", "1000000", "-D", "1000000", "-F", "1000"],
     "--batch/--d-in/--d-out: refusing to run a [1000000,1000000] @ [1000000,1000] matmul (forward) on cpu: "
     "it needs ~4.01 TB (X 4 TB + W 4 GB + Y 4 GB), cpu has "),
    (["measure", "forward", "-B", "1000", "-T", "100000", "--d-model", "100000"],
     "--batch/--seq/--d-model: refusing to run a forward pass of 1000 × 100000 tokens on cpu: it needs ~"),
    (["measure", "matmul", "--copy-bytes", "1P"],
     "--peak-size/--copy-bytes: refusing to run the calibration on cpu: it needs ~2 PB (copy 2 PB + peak matmul "
     "12.6 MB), cpu has "),
    (["solve", "pe", "--pos", "1", "--d-model", "100000"],
     "--d-model: the whole vector is shown for d_model up to 8192 (got 100000); ask for one coordinate with --dim"),
    (["solve", "pe", "--pos", "1", "--d-model", "20000", "--dim", "19999"], None),  # one coordinate: answered
    (["solve", "pe", "--pos", "1", "--d-model", "500", "--exact"],
     "--d-model: --exact is for hand-sized inputs: at most 128 coordinates (got 500)"),
    (["solve", "softmax", "--x", " ".join(str(i % 7) for i in range(3000)), "--exact"],
     "--x: --exact is for hand-sized inputs: at most 64 entries (got 3000)"),
    (["solve", "rope", "--x", " ".join(str(i % 5) for i in range(30000)), "--pos", "3", "--exact"],
     "--x: --exact is for hand-sized inputs: at most 64 entries (got 30000)"),
    (["solve", "attention", *[a for o in ("--q", "--k", "--v") for a in
                              (o, "; ".join(" ".join(str((i * j) % 3) for j in range(200)) for i in range(200)))],
      "--exact"], "--q: --exact is for hand-sized inputs: at most 16×16 matrices (got 40000 entries)"),
    (["solve", "attention", "--x", "; ".join("1 0" for _ in range(17)), "--exact"],
     "--x: --exact is for hand-sized inputs: at most 16 rows or columns in X or the weights (got 17)"),
])
def test_sizes_are_bounded_in_process(args, message):
    """In this process (torch already imported by other tests, or imported here once): the
    refusal itself takes well under a second."""
    import torch  # noqa: F401 - imported before the clock starts: the refusal is timed, not the import

    CliRunner().invoke(cli, ["solve", "pe", "--pos", "1", "--d-model", "8"])  # the commands' imports, untimed
    reference = seconds_of(lambda: CliRunner().invoke(cli, ["solve", "pe", "--pos", "1", "--d-model", "8"]))
    start = time.monotonic()
    result = CliRunner().invoke(cli, args)
    seconds = time.monotonic() - start
    if message is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2
        assert result.output.count("\n") == 1 and result.output.startswith(f"qkv: error: {message}")
    assert_within(seconds, reference, 50, "the refusal, against a small solve pe in this process", slack=0.05)


@pytest.mark.parametrize("command,limit", [("softmax", "64 entries"), ("rope", "64 entries"),
                                           ("pe", "8192"), ("attention", "16 rows and 16 columns")])
def test_limits_are_stated_in_help(command, limit):
    text = " ".join(CliRunner().invoke(cli, ["solve", command, "--help"]).output.split())
    assert limit in text


def test_gpu_memory_free_counts_the_blocks_torch_holds_unused(monkeypatch):
    """A model verified before leaves its blocks in PyTorch's caching allocator: the driver reports
    them used, but they are free to this process (the second of two models was refused on an H200
    with 27 GB of the first one's weights still cached)."""
    import torch

    from solver.models import guard

    gib = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (122 * gib, 141 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 30 * gib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 3 * gib)
    assert guard.available_bytes("cuda") == 149 * gib
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: 30 * gib)
    assert guard.available_bytes("cuda") == 122 * gib
