"""The slowest tests and their share of the suite (issue 40).

Runs the suite (or the tests named after ``--``) with a JUnit report, or reads a report a run
already wrote, and prints the 30 slowest tests (setup, call and teardown together): seconds, their
share of the sum over every test, and the running share, so that it is plain where a run's time
goes. The shares are ratios within the same run, so a loaded machine changes the seconds, not the
picture. Run it as

    .venv/bin/python bench/slowest_tests.py                     # the whole suite, then the table
    .venv/bin/python bench/slowest_tests.py --junit report.xml  # a report written before
    .venv/bin/python bench/slowest_tests.py -- tests/drills     # a part of the suite
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def read_report(path: Path) -> list[tuple[str, float, str]]:
    """``(test id, seconds, outcome)`` for every test case of a JUnit XML report."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname", "")
        name = case.get("name", "")
        module = cls.replace(".", "/")
        test_id = f"{module}.py::{name}" if cls else name
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        rows.append((test_id, float(case.get("time", 0.0)), outcome))
    return rows


def table(rows: list[tuple[str, float, str]], top: int) -> str:
    total = sum(s for _, s, _ in rows)
    slow = sorted(rows, key=lambda r: -r[1])[:top]
    out = [f"{len(rows):,} tests, {total:,.0f} s in all "
           f"({sum(o == 'passed' for *_, o in rows):,} passed, {sum(o == 'failed' for *_, o in rows):,} failed, "
           f"{sum(o == 'skipped' for *_, o in rows):,} skipped)",
           f"the {len(slow)} slowest: {sum(s for _, s, _ in slow):,.0f} s, "
           f"{sum(s for _, s, _ in slow) / total:.0%} of the time" if total else "no time recorded",
           "",
           f"{'#':>3} {'seconds':>8} {'share':>6} {'running':>8}  test"]
    running = 0.0
    for i, (test_id, s, outcome) in enumerate(slow, 1):
        running += s
        mark = "" if outcome == "passed" else f"  [{outcome}]"
        out.append(f"{i:>3} {s:>8.1f} {s / total:>6.1%} {running / total:>8.1%}  {test_id}{mark}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--junit", type=Path, help="read this JUnit XML report instead of running the tests")
    ap.add_argument("--top", type=int, default=30, help="how many tests to list (default 30)")
    ap.add_argument("pytest_args", nargs="*", help="after --: what to pass to pytest (default: the whole suite)")
    args = ap.parse_args()
    if args.junit:
        rows = read_report(args.junit)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.xml"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}",
                            "-o", "junit_duration_report=total", *args.pytest_args], cwd=ROOT)
            wall = time.perf_counter() - t0
            rows = read_report(report)
        print(f"\npytest's wall time: {wall:,.0f} s")
    print(table(rows, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
