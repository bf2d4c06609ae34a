"""``qkv solve lr|fsdp|grad-accum|fit-3d|busbw|run-flops|mfu-step`` (issue 25). Values worked by hand."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from drills.cli import cli


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def run_json(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


def test_lr():
    """Cosine, peak 3e-4, w = 1000, total 11,000, floor 0: at t = 6000, p = 0.5, lr = 1.5e-4; warmup t = 250: 7.5e-5."""
    assert run_json("solve", "lr", "--schedule", "cosine", "-t", "6000", "--lr", "3e-4", "-w", "1000",
                    "--total", "11000")["answer"] == pytest.approx(1.5e-4)
    assert run_json("solve", "lr", "--schedule", "linear", "-t", "250", "--lr", "3e-4", "-w", "1000")["answer"] \
        == pytest.approx(7.5e-5)
    code, out = run("solve", "lr", "--schedule", "cosine", "-t", "5", "--lr", "1e-3")
    assert code == 2 and "--total" in out and "Traceback" not in out
