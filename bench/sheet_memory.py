"""Peak memory of ``qkv sheet -n N`` in each format, against the 250 MB target (issue 40).

Run: ``.venv/bin/python bench/sheet_memory.py [-n 400] [--seed 0] [--formats pdf,md,html,anki,moodle]``.

Each format runs ``qkv sheet -n N --seed S -o TMP/sheet.EXT`` in a fresh process and reports two
figures: the whole job's peak (the resident memory of the process and of every process it
started, summed, sampled from ``/proc`` every 5 ms: what the machine must hold at once), and
the largest single process's peak (``ru_maxrss``, what ``/usr/bin/time -v`` prints as "Maximum
resident set size"). Memory in MB (10^6 bytes would read smaller: these are MiB, as ``time -v``'s
kbytes / 1024). Not a timed test: the figures hold on a loaded machine too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qkv_script import qkv_command

TARGET_MB = 250
SUFFIX = {"pdf": "pdf", "md": "md", "html": "html", "anki": "apkg", "moodle": "xml", "json": "json"}
PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree_rss(root: int) -> int:
    """Bytes resident in ``root`` and all its descendants now (0 once it is gone)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * PAGE
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def measure(args: list[str]) -> tuple[float, float, float, int]:
    """(whole job's peak MiB, largest process's peak MiB, seconds, exit status) of ``qkv ARGS``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*qkv_command(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while True:
        peak = max(peak, _tree_rss(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # the rusage of this child and its own children
        if pid:
            break
        time.sleep(0.005)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        print(f"qkv {' '.join(args)} failed: {err.strip()}", file=sys.stderr)
    return peak / 2**20, usage.ru_maxrss / 1024, seconds, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--formats", default="pdf,md,html,anki,moodle")
    args = ap.parse_args()
    worst = 0.0
    print(f"qkv sheet -n {args.n} --seed {args.seed}: peak resident memory (target {TARGET_MB} MB)")
    print(f"{'format':>7} {'whole job':>10} {'largest process':>16} {'time':>7}")
    with tempfile.TemporaryDirectory(prefix="qkv-bench-") as tmp:
        for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
            out = Path(tmp) / f"sheet.{SUFFIX[fmt]}"
            job, single, secs, rc = measure(["sheet", "-n", str(args.n), "--seed", str(args.seed), "-o", str(out)])
            print(f"{fmt:>7} {job:7.0f} MB {single:13.0f} MB {secs:6.1f} s" + ("" if rc == 0 else f"  (exit {rc})"))
            worst = max(worst, job)
    print(f"worst whole-job peak: {worst:.0f} MB, {worst / TARGET_MB:.2f} x the {TARGET_MB} MB target")
    return 0 if worst <= TARGET_MB else 1


if __name__ == "__main__":
    sys.exit(main())
