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


def test_fsdp_grad_accum_fit_3d():
    """FSDP: T* = 7/8 × 2 × 989.5e12 / (2 × 450e9) = 1,923.96 tokens on 8 H100s over NVLink 4.
    Grad accumulation: 1024 / (2 × 64) = 8 steps; 8 stages: bubble 7/15.
    Fit: 70e9 params, t = 8, p = 4, ZeRO-1 over d = 32: weights 2 × 70e9/32 = 4.375e9 bytes."""
    d = run_json("solve", "fsdp", "-P", "1e8", "-n", "8", "-T", "4096", "--hw", "h100")
    assert d["breakdown"]["tokens_to_hide_forward"] == pytest.approx(7 / 8 * 989.5e12 / 450e9)
    d = run_json("solve", "grad-accum", "-B", "1024", "-b", "2", "-d", "64", "-p", "8")
    assert d["answer"] == 8 and d["breakdown"]["bubble_fraction"] == pytest.approx(7 / 15)
    d = run_json("solve", "fit-3d", "-N", "70e9", "-L", "80", "--hidden", "8192", "-a", "64", "-s", "4096",
                 "-t", "8", "-p", "4", "-d", "32", "--hw", "h100")
    assert d["breakdown"]["weights_bytes"] == 4.375e9 and d["breakdown"]["fits"] is True
    code, out = run("solve", "grad-accum", "-B", "1000", "-b", "3", "-d", "8")
    assert code == 2 and "multiple" in out
    code, out = run("solve", "fsdp", "-P", "1e8", "-n", "8", "-T", "4096", "--link", "nvlink4")
    assert code == 2 and "--peak-flops" in out


def test_busbw_run_flops_mfu_step():
    """nccl-tests row: 16 ranks, 10,737,418,240 B, 90,330 µs → busbw 222.88 GB/s; against NVLink 3's 300 GB/s: 74.3 %.
    Run: 1,000 GPU-hours × 3,600 × 989.5e12 × 0.5 = 1.7811e21 FLOPs. MFU: 6 × 7e9 × 4,194,304 / (12 × 64 × 989.5e12)."""
    d = run_json("solve", "busbw", "-n", "16", "-S", "10737418240", "--time-us", "90330", "--link", "nvlink3")
    assert round(d["answer"] / 1e9, 2) == 222.88 and d["breakdown"]["link_fraction"] == pytest.approx(0.74293, rel=1e-4)
    d = run_json("solve", "busbw", "-n", "8", "--algbw", "9.90GB/s")
    assert d["answer"] == pytest.approx(17.325e9)
    assert run_json("solve", "run-flops", "--gpu-hours", "1000", "--mfu", "0.5", "--hw", "h100")["answer"] \
        == pytest.approx(1000 * 3600 * 989.5e12 * 0.5)
    d = run_json("solve", "mfu-step", "-N", "7e9", "-T", "4194304", "--step-time", "12", "--chips", "64", "--hw", "h100")
    assert d["answer"] == pytest.approx(6 * 7e9 * 4194304 / (12 * 64 * 989.5e12))
    code, out = run("solve", "busbw", "-n", "8", "-S", "1GB")
    assert code == 2 and "Traceback" not in out


def test_busbw_text_does_not_print_a_rounded_bandwidth_as_an_exact_one():
    """10,737,418,240 B in 90,330 µs on 16 ranks: algbw 118.8687… GB/s, busbw 222.8788… GB/s. To
    six significant figures these are 118.869 and 222.879 GB/s, never '222,879,000,000 bytes/s'
    (zeros that read as measured digits); --json keeps the full double under the same keys."""
    import re

    args = ["solve", "busbw", "-n", "16", "-S", "10737418240", "--time-us", "90330", "--link-bandwidth", "300GB/s"]
    code, out = run(*args, "--explain")
    assert code == 0, out
    assert not re.search(r"\d,\d{3},000\b", out), out  # no figure padded with zeros to look exact
    assert "answer: 222.879 GB/s\n" in out
    assert "      = 118.869 GB/s × 1.875\n      = 222.879 GB/s\n" in out
    assert "      = 222.879 GB/s / 300 GB/s\n" in out
    assert re.search(r"\n  busbw +222\.879 GB/s\n", out) and re.search(r"\n  link bandwidth +300 GB/s\n", out)
    d = run_json(*args)
    alg = 10737418240 / (90330 * 1e-6)
    assert d["answer"] == alg * 1.875 and d["breakdown"]["algbw"] == alg and d["unit"] == "bytes/s"
    assert set(d["breakdown"]) == {"op", "ranks", "algbw", "busbw", "bus_factor", "algbw_GBps", "busbw_GBps",
                                   "link_bandwidth", "link_fraction"}
