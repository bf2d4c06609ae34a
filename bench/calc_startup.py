"""`qkv calc "1+1"` against `python3 -c "import numpy"`, timed in the same run (target: at most 1.5×).

Runs the two interleaved, several times each, and prints each median and the ratio. Run it as
``.venv/bin/python bench/calc_startup.py [--reps N]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from qkv_script import qkv_command

TARGET_RATIO = 1.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    runs = {"calc": [*qkv_command(), "calc", "1+1"], "numpy": [sys.executable, "-c", "import numpy"]}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.reps):
        for name, cmd in runs.items():  # interleaved: a load that comes and goes hits both alike
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["calc"] / med["numpy"]
    print(f"qkv calc \"1+1\": {med['calc'] * 1000:.0f} ms (median of {args.reps})")
    print(f"import numpy:   {med['numpy'] * 1000:.0f} ms")
    print(f"ratio: {ratio:.2f} (target at most {TARGET_RATIO})  {'ok' if ratio <= TARGET_RATIO else 'OVER'}")


if __name__ == "__main__":
    main()
