"""Benchmark: ``qkv models verify --device meta`` over the whole zoo, time and peak memory.

Target (issue 3): every preset, GPT-3 175B and Llama-2-70B included, in under 30 s and 2 GB
on a 2-core machine. Runs the command in a child process (so that its start-up, torch's import
included, is counted; on meta it verifies in one worker process per core, at most 4) and reads
the peak resident set size of the largest process from ``getrusage(RUSAGE_CHILDREN)`` (the
workers are alike: the total is at most workers × that). Not a test: run it by hand,

    .venv/bin/python bench/zoo_verify.py [--seq 128] [--batch 1] [--full-train]

Where the time goes (meta device, torch 2.13): every op on meta is a shape computation, and for
most elementwise ops (add, LayerNorm, GELU, addmm, ...) torch runs it as a Python decomposition,
0.1 to 2 ms each, whatever the shapes (a smaller batch or seq saves nothing). So the cost is ops
× layers × passes, plus about 3 s per worker process to import torch and torch._dynamo. What
``qkv models verify`` does about it (solver/models/verify.py): FlopCounterMode without its per-module
table, the model's "math" attention (sdpa's mask costs more elementwise ops on meta), a forward
pass under no_grad, and the train FLOPs of stacks deeper than 2 layers from slices of 1 and 2
layers (``--full-train``: a backward pass of the whole model instead).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

TARGET_SECONDS = 30.0
TARGET_BYTES = 2 * 10**9  # 2 GB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--full-train", action="store_true", help="pass --full-train to the command")
    args = parser.parse_args()

    command = [sys.executable, "-m", "drills", "models", "verify", "--device", "meta",
               "--seq", str(args.seq), "--batch", str(args.batch)] + (["--full-train"] if args.full_train else [])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = usage.ru_maxrss * 1024  # Linux reports KiB: the largest single process (workers are alike)
    cpu = usage.ru_utime + usage.ru_stime

    print(done.stdout, end="")
    if done.stderr:
        print(done.stderr, end="", file=sys.stderr)
    load = os.getloadavg()[0]
    print(f"\nzoo verify on meta: {seconds:.1f} s (target < {TARGET_SECONDS:.0f} s), "
          f"peak RSS {peak / 1e9:.2f} GB = {peak / 2**30:.2f} GiB (target < {TARGET_BYTES / 1e9:.0f} GB); "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, exit status {done.returncode}")
    print(f"CPU time of the command and its worker processes: {cpu:.1f} s (on an idle machine the wall time is "
          f"about this divided by the number of workers)")
    ok = done.returncode == 0 and seconds < TARGET_SECONDS and peak < TARGET_BYTES
    print("within target" if ok else "NOT within target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
