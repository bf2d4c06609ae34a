"""Start-up benchmark: `qkv --help` against `python -c pass`, timed in the same run.

Prints the median wall time of each over several repetitions, their ratio (target: at most
10), and the heavy modules (numpy, torch, sympy, matplotlib, rich) that ``import drills.cli``
pulls in. Run it as ``.venv/bin/python bench/startup.py [--reps N]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from qkv_script import qkv_command

HEAVY = ("numpy", "torch", "sympy", "matplotlib", "rich", "scipy", "pandas")
TARGET_RATIO = 10.0


def median_seconds(cmd: list[str], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def heavy_modules_imported(module: str = "drills.cli") -> list[str]:
    """Top-level packages from HEAVY that ``import <module>`` loads, in a fresh interpreter."""
    code = (
        f"import sys; import {module}; "
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return out.split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each command (median taken)")
    args = parser.parse_args()
    qkv = qkv_command()
    # warm the file cache once so the first timed run is not a cold start
    subprocess.run([*qkv, "--help"], stdout=subprocess.DEVNULL, check=True)
    base = median_seconds([sys.executable, "-c", "pass"], args.reps)
    helps = median_seconds([*qkv, "--help"], args.reps)
    ratio = helps / base
    print(f"python -c pass : {base * 1000:8.1f} ms (median of {args.reps})")
    print(f"qkv --help     : {helps * 1000:8.1f} ms (median of {args.reps}; {' '.join(qkv)})")
    print(f"ratio          : {ratio:8.2f}  (target <= {TARGET_RATIO:g}: {'ok' if ratio <= TARGET_RATIO else 'TOO SLOW'})")
    heavy = heavy_modules_imported()
    print(f"import drills.cli loads: {', '.join(heavy) if heavy else 'none of ' + ', '.join(HEAVY)}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
