"""Issue 40: the README's test command and ``.ci/run`` run the same thing. .ci/run runs the README's
command word for word, and sets nothing that changes what the tests do (no environment variable:
the Hypothesis profile CI uses is the default one, tests/conftest.py)."""

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
