"""Quiz start-up benchmark: from `qkv quiz` to the first problem on screen.

Runs ``qkv quiz --seed S -n 5 --data-dir TMP`` with stdin from a pipe holding ``quit`` (the
plain view, as for a script) and measures, per run, the wall time until the first problem's
header line is on stdout and until the process has exited; against ``python -c "import
numpy"`` timed in the same run. Each seed gets a fresh data directory (a new student: no card
is due, so the first problem is a new one). One warm-up run first (warm disk cache), then
medians over ``--reps`` rounds. Target (issue 5): at most 0.8 s to the first problem on a
2-core machine.

``--tty`` measures the same through a pseudo-terminal (the rich view), with pexpect.

    .venv/bin/python bench/quiz_startup.py [--reps 5] [--seeds 1,2,3,4,5] [--tty]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.8
HEADER = b"Question 1 of"


def qkv_command() -> list[str]:
    script = Path(sys.executable).with_name("qkv")
    if script.exists():
        return [str(script)]
    found = shutil.which("qkv")
    return [found] if found else [sys.executable, "-m", "drills"]


def numpy_seconds() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    return time.perf_counter() - t0


def quiz_pipe(seed: int) -> tuple[float, float]:
    """(seconds to the first problem's header on stdout, seconds to exit) over a pipe."""
    with tempfile.TemporaryDirectory(prefix="qkv-bench-") as tmp:
        env = {**os.environ, "QKV_HOME": tmp}
        t0 = time.perf_counter()
        proc = subprocess.Popen([*qkv_command(), "quiz", "--seed", str(seed), "-n", "5", "--data-dir", tmp],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"quit\n")
        proc.stdin.close()
        first = None
        for line in proc.stdout:
            if first is None and HEADER in line:
                first = time.perf_counter() - t0
        proc.wait()
        total = time.perf_counter() - t0
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0 or first is None:
            raise SystemExit(f"qkv quiz --seed {seed} failed (exit {proc.returncode}): {err.strip()}")
        return first, total


def quiz_tty(seed: int) -> float:
    """Seconds to the first problem's header in a pseudo-terminal (rich view)."""
    import pexpect

    with tempfile.TemporaryDirectory(prefix="qkv-bench-") as tmp:
        cmd = qkv_command()
        t0 = time.perf_counter()
        child = pexpect.spawn(cmd[0], [*cmd[1:], "quiz", "--seed", str(seed), "-n", "5", "--data-dir", tmp],
                              env={**os.environ, "QKV_HOME": tmp, "TERM": "xterm-256color"},
                              dimensions=(40, 120), timeout=30)
        child.expect("Question 1 of")
        first = time.perf_counter() - t0
        child.sendline("quit")
        child.sendline("")
        child.expect(pexpect.EOF)
        return first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="rounds over the seeds (medians taken)")
    parser.add_argument("--seeds", default="1,2,3,4,5,6,7,8", help="comma-separated quiz seeds")
    parser.add_argument("--tty", action="store_true", help="also time the rich view in a pseudo-terminal")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    quiz_pipe(seeds[0])  # warm the disk cache
    numpy_seconds()
    base: list[float] = []
    firsts: dict[int, list[float]] = {s: [] for s in seeds}
    totals: dict[int, list[float]] = {s: [] for s in seeds}
    ttys: dict[int, list[float]] = {s: [] for s in seeds}
    for _ in range(args.reps):
        base.append(numpy_seconds())
        for s in seeds:
            f, t = quiz_pipe(s)
            firsts[s].append(f)
            totals[s].append(t)
            if args.tty:
                ttys[s].append(quiz_tty(s))
    numpy_med = statistics.median(base)
    print(f"cores: {os.cpu_count()}   reps: {args.reps}")
    print(f"python -c 'import numpy'       : {numpy_med * 1000:7.1f} ms (median)")
    print(f"{'seed':>6} {'first problem':>14} {'exit':>9} {'ratio':>7}" + ("   tty first" if args.tty else ""))
    meds = []
    for s in seeds:
        f, t = statistics.median(firsts[s]), statistics.median(totals[s])
        meds.append(f)
        tty = f"   {statistics.median(ttys[s]) * 1000:7.1f} ms" if args.tty else ""
        print(f"{s:>6} {f * 1000:11.1f} ms {t * 1000:6.1f} ms {f / numpy_med:7.2f}{tty}")
    worst, med = max(meds), statistics.median(meds)
    print(f"qkv quiz -> first problem      : {med * 1000:7.1f} ms median over seeds, {worst * 1000:.1f} ms worst "
          f"(target {TARGET_S * 1000:.0f} ms)")
    print(f"ratio to 'import numpy'        : {med / numpy_med:7.2f} median, {worst / numpy_med:.2f} worst")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
