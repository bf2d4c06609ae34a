"""Time bounds as ratios (issue 40): no test asserts a wall-clock bound, which a loaded machine
breaks. A test that must show that a command answers "at once" (refuses before the work) compares
its time with a reference measured in the same test, on the same machine under the same load:
a fresh Python that imports what the command must import anyway."""

from __future__ import annotations

import subprocess
import sys
import time


def reference_seconds(code: str = "import torch") -> float:
    """Wall seconds of a fresh ``python -c code`` (default: importing torch, which every ``measure``
    and ``models verify`` command does before it can refuse anything)."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=600)
    return time.monotonic() - t0


def assert_within(took: float, reference: float, ratio: float, what: str = "", slack: float = 0.5) -> None:
    """``took`` at most ``ratio`` × ``reference``, plus ``slack`` seconds (a process's start; 0 for
    work timed in this process)."""
    assert took <= ratio * reference + slack, (f"{what}: {took:.1f} s, more than {ratio:g} × the {reference:.1f} s "
                                            f"of the reference measured in the same test")


def seconds_of(fn) -> float:
    """Wall seconds of ``fn()`` in this process."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
