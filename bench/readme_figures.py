"""Print the figures the README quotes, measured now: nothing in the README is from memory.

    .venv/bin/python bench/readme_figures.py              # everything (several minutes: runs the suite)
    .venv/bin/python bench/readme_figures.py --skip-slow  # the fast parts only (about a minute)
    .venv/bin/python bench/readme_figures.py --fresh-venv # also: size and time of the main-job install

Sections:

- suite: the number of tests (``pytest --collect-only -q``) and, unless ``--skip-slow``, the time
  of the whole suite (``pytest -q`` on this machine; the README quotes it for two cores);
- start-up: ``bench/startup.py`` (``qkv --help`` against ``python -c pass``, their ratio) and
  ``bench/quiz_startup.py --no-latency`` (time to the first quiz problem against ``import numpy``);
- bank: families and curated items (``qkv bank list``); with the slow parts, the quality figures
  (``qkv bank validate --quality --draws N``, timed);
- install (``--fresh-venv`` only): a new virtual environment, ``pip install -e .`` (the README's
  main job: no torch, no matplotlib), its wall time and ``du -sh`` of the venv. pip downloads
  what it needs; run it once, not in a loop.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qkv_script import qkv_command

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent


def heading(text: str) -> None:
    print(f"\n== {text}")


def run(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=kw.pop("cwd", ROOT), **kw)
    return time.perf_counter() - t0, out


def suite(skip_slow: bool) -> None:
    heading("test suite")
    _, out = run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"])
    m = re.search(r"(\d+) tests? collected", out.stdout)
    per_file = [int(n) for n in re.findall(r"^\S+\.py: (\d+)$", out.stdout, flags=re.MULTILINE)]  # -qq form
    count = int(m.group(1)) if m else sum(per_file)
    print(f"tests collected: {count:,} in {len(per_file) or '?'} files" if count
          else f"could not count the tests:\n{out.stdout[-500:]}")
    if skip_slow:
        print("suite time: skipped (--skip-slow)")
        return
    seconds, out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                       env=dict(os.environ, HYPOTHESIS_PROFILE=os.environ.get("HYPOTHESIS_PROFILE", "ci")))
    summary = [line for line in out.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    print(f"suite: {summary[-1].strip('= ') if summary else 'no summary line'}")
    print(f"suite time: {seconds / 60:.1f} minutes on {os.cpu_count()} cores (exit status {out.returncode})")


def startup(skip_slow: bool) -> None:
    heading("start-up")
    _, out = run([sys.executable, str(BENCH / "startup.py"), "--reps", "3" if skip_slow else "7"])
    print(out.stdout.rstrip() or out.stderr.rstrip())
    cmd = [sys.executable, str(BENCH / "quiz_startup.py"), "--no-latency"]
    if skip_slow:
        cmd += ["--reps", "1", "--seeds", "1,2,3"]
    _, out = run(cmd)
    print(out.stdout.rstrip() or out.stderr.rstrip())


def bank(skip_slow: bool, draws: int) -> None:
    heading("question bank")
    qkv = qkv_command()
    _, out = run([*qkv, "bank", "list"])
    lines = [line for line in out.stdout.splitlines() if re.search(r"\d+ families", line)]
    print(lines[-1].strip() if lines else out.stdout[-300:])
    if skip_slow:
        print("quality figures: skipped (--skip-slow)")
        return
    seconds, out = run([*qkv, "bank", "validate", "--quality", "--draws", str(draws)])
    print(out.stdout.rstrip())
    print(f"(qkv bank validate --quality --draws {draws}: {seconds:.0f} s on {os.cpu_count()} cores, "
          f"exit status {out.returncode})")


def fresh_venv() -> None:
    """The README's main-job install in a throwaway venv: wall time and size."""
    heading("main-job install (fresh venv: pip install -e .)")
    with tempfile.TemporaryDirectory(prefix="qkv-venv-") as tmp:
        venv = Path(tmp) / ".venv"
        t_venv, out = run([sys.executable, "-m", "venv", str(venv)])
        if out.returncode:
            print(f"venv failed: {out.stderr.strip()}")
            return
        pip = venv / "bin" / "pip"
        t_pip, out = run([str(pip), "install", "-q", "--no-cache-dir", "-e", str(ROOT)])
        if out.returncode:
            print(f"pip install failed: {out.stderr.strip()[-500:]}")
            return
        size = subprocess.run(["du", "-sh", str(venv)], capture_output=True, text=True).stdout.split()[0]
        py = venv / "bin" / "python"
        has = subprocess.run([str(py), "-c", "import importlib.util as u; "
                              "print([m for m in ('torch', 'matplotlib') if u.find_spec(m)])"],
                             capture_output=True, text=True).stdout.strip()
        t_quiz, out = run([str(venv / "bin" / "qkv"), "solve", "params", "--preset", "llama2-7b"])
        print(f"venv: {t_venv:.1f} s; pip install -e .: {t_pip:.1f} s (no pip cache); size: {size}")
        print(f"torch/matplotlib installed there: {has}; qkv solve params --preset llama2-7b: "
              f"exit {out.returncode} in {t_quiz:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-slow", action="store_true",
                        help="skip the suite run and the bank quality run (count tests, time start-up only)")
    parser.add_argument("--draws", type=int, default=200, help="draws per family for the quality figures")
    parser.add_argument("--fresh-venv", action="store_true",
                        help="also install the main job into a new venv and report its time and size")
    parser.add_argument("--only", choices=("suite", "startup", "bank", "install"), default=None,
                        help="one section only")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    sections = {"suite": lambda: suite(args.skip_slow), "startup": lambda: startup(args.skip_slow),
                "bank": lambda: bank(args.skip_slow, args.draws), "install": fresh_venv}
    for name, fn in sections.items():
        if args.only and name != args.only:
            continue
        if name == "install" and not (args.fresh_venv or args.only == "install"):
            continue
        fn()
    print(f"\n(python {sys.version.split()[0]}, {shutil.which('qkv') or ' '.join(qkv_command())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
