"""The command that starts qkv, for the benchmarks in this folder (run as scripts, so they
import this module by its plain name)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def qkv_command() -> list[str]:
    """The console script next to this interpreter, else ``qkv`` on PATH, else ``python -m drills``."""
    script = Path(sys.executable).with_name("qkv")
    if script.exists():
        return [str(script)]
    found = shutil.which("qkv")
    return [found] if found else [sys.executable, "-m", "drills"]
