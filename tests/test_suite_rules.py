"""Issue 40, rules for the suite itself:

- the README's test command and ``.ci/run`` run the same thing: .ci/run runs the README's command
  word for word and sets nothing that changes what the tests do (no environment variable: the
  Hypothesis profile CI uses is the default one, tests/conftest.py);
- a test that signals a child process starts it with :func:`tests.child_signals.default_signals`,
  so that a suite started in the background (SIGINT ignored) still interrupts its children."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"Set up and run the whole test suite[^\n]*\n+```sh\n(.+?)\n```", text, re.S)
    assert m, "the README's test command is not where it was"
    return m.group(1).strip()


def test_ci_runs_the_readme_test_command_and_nothing_else_changes_it():
    cmd = _readme_test_command()
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in run.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert cmd in lines, (cmd, lines)
    before = lines[:lines.index(cmd)]
    assert not [ln for ln in before if re.match(r"(export\s+)?[A-Z_][A-Z0-9_]*=", ln)], before
    assert "pytest" in cmd and "HYPOTHESIS_PROFILE" not in cmd


def test_the_default_hypothesis_profile_is_ci():
    import os

    from hypothesis import settings

    if "HYPOTHESIS_PROFILE" not in os.environ:
        assert settings.default.max_examples == 30 and settings.default.derandomize


def test_a_child_started_with_default_signals_takes_ctrl_c_when_the_suite_ignores_it():
    """Started from a process that ignores SIGINT (as a background job does), a Python child gets
    KeyboardInterrupt's handler only through default_signals."""
    import subprocess
    import sys

    code = ("import signal, subprocess, sys\n"
            "from tests.child_signals import default_signals\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "probe = [sys.executable, '-c', 'import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)']\n"
            "print(subprocess.run(probe, capture_output=True, text=True).stdout.strip())\n"
            "print(subprocess.run(probe, capture_output=True, text=True, preexec_fn=default_signals).stdout.strip())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["False", "True"], out


def test_every_test_that_signals_a_child_sets_its_signals():
    """sendintr / send_signal(SIGINT|SIGTERM|SIGHUP) / os.kill with those: the file starts its
    children with default_signals (SIGKILL needs nothing: it cannot be ignored)."""
    sends = re.compile(r"sendintr\(|send_signal\(signal\.SIG(INT|TERM|HUP|QUIT)|os\.kill\([^)]*SIG(INT|TERM|HUP|QUIT)")
    missing = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != "test_suite_rules.py" and sends.search(text) and "preexec_fn=default_signals" not in text:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, missing
