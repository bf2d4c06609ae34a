"""The one formatter for human-readable numbers (solver.units.format_number) and what
``qkv solve`` prints with it: the quiz's rounding (half up), labels, plurals, no snake_case.

The rounding is checked against Python's ``decimal`` module with ROUND_HALF_UP on the
shortest decimal spelling — an independent statement of the rule — and pinned on the cases
issue 23 names (13.125 GB shown as 13.13, not 13.12).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from drills.cli import cli
from drills.cli.render_steps import format_number as fixed
from solver.units import format_bytes, format_number, plural, round_half_up


def _plain(text: str) -> float:
    return float(text.replace(",", ""))


def test_quiz_and_output_share_one_rounding_rule():
    from question_bank.grading import round_half_up as quiz_rule

    assert quiz_rule is round_half_up


@pytest.mark.parametrize("x,sig,text", [
    (13.125, 4, "13.13"),  # issue 23: half-even gave 13.12
    (0.125, 2, "0.13"),
    (-0.125, 2, "-0.13"),
    (2.5, 1, "3"),
    (450_000_000_000, 6, "450,000,000,000"),
    (2.5714285714285e11, 6, "257,143,000,000"),  # not 2.57143e+11 beside 450,000,000,000
    (0.5792585299413737, 6, "0.579259"),  # no 16-digit floats
    (1e24, 6, "1e+24"),
    (6.94487e-05, 6, "6.94487e-05"),
    (9.9999996, 6, "10"),
    (-0.0, 6, "0"),
    (True, 6, "yes"),
    (float("inf"), 6, "∞"),
])
def test_pinned(x, sig, text):
    assert format_number(x, sig) == text


def test_bytes_round_half_up():
    assert "13.13 GB" in format_bytes(13_125_000_000)


def test_fixed_decimals_of_the_kernels_round_half_up():
    """--digits in qkv solve attention etc.: 0.125 to 2 places is 0.13, as the quiz keys round."""
    assert fixed(0.125, 2) == "0.13" and fixed(-0.125, 2) == "−0.13" and fixed(2.675, 2) == "2.68"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300), st.integers(1, 12))
def test_format_number_is_half_up_rounding_to_sig_figures(x, sig):
    """The text, read back, is x rounded half up to ``sig`` significant figures (decimal's ROUND_HALF_UP)."""
    text = format_number(x, sig)
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        assert _plain(text) == x
        return
    d = Decimal(repr(x))
    if d == 0:
        assert text == "0"
        return
    want = d.quantize(Decimal(1).scaleb(d.adjusted() - sig + 1), rounding=ROUND_HALF_UP)
    assert _plain(text) == float(want)


@given(st.integers(min_value=-(10**15) + 1, max_value=10**15 - 1))
def test_whole_numbers_in_full_with_separators(n):
    text = format_number(n)
    assert int(text.replace(",", "")) == n
    assert re.fullmatch(r"-?\d{1,3}(,\d{3})*", text)


@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(0, 10))
def test_round_half_up_stays_within_half_a_unit(x, decimals):
    r = round_half_up(x, decimals)
    assert math.isfinite(r)
    assert abs(Decimal(repr(r)) - Decimal(repr(x))) <= Decimal(5).scaleb(-decimals - 1) * (1 + Decimal("1e-12")) + \
        Decimal(abs(r)) * Decimal("1e-15")


def test_plural():
    assert plural(1, "chip") == "1 chip" and plural(2, "chip") == "2 chips" and plural(1.5, "chip") == "1.5 chips"


def _solve(*args: str) -> str:
    r = CliRunner().invoke(cli, ["solve", *args])
    assert r.exit_code == 0, r.stdout + r.stderr
    return r.stdout


def _breakdown_labels(out: str) -> list[str]:
    lines = out.split("breakdown:\n", 1)[1].splitlines()
    return [re.split(r"\s{2,}", ln.strip())[0] for ln in lines if ln.startswith("  ") and ln.strip()]


@pytest.mark.parametrize("args", [
    ("pipeline", "-p", "8", "-m", "32"),
    ("mfu", "-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100"),
    ("serve", "-N", "70B", "-S", "4096", "--kv-bytes-per-token", "327680", "--hw", "h100", "--chips", "8"),
    ("collective", "-S", "1GB", "-n", "8", "--hw", "h100", "--latency", "5e-6"),
    ("sampling", "--logits", "2 1 0.5 0", "--top-p", "0.9"),
    ("zero", "-N", "7.5B", "--gpus", "64", "--stage", "1"),
])
def test_breakdowns_read_as_text(args):
    """No snake_case key, no 'e+NN' beside a separated integer, no float of more than 6 figures."""
    out = _solve(*args)
    labels = _breakdown_labels(out)
    assert labels and not any("_" in k for k in labels), labels
    body = out.split("breakdown:\n", 1)[1]
    assert not (re.search(r"\de\+\d", body) and re.search(r"\d,\d{3}", body)), body
    assert not re.search(r"\.\d{10,}", out), out  # no 16-digit floats


@pytest.mark.parametrize("args,label", [
    (("pipeline", "-p", "8", "-m", "32"), "bubble fraction"),
    (("mfu", "-N", "70B", "--tokens-per-second", "1e6", "--chips", "1024", "--hw", "h100"), "MFU"),
    (("alibi", "--heads", "8", "--head", "1", "--query", "1", "--key", "0"), "ALiBi bias"),
    (("t5-buckets", "-r", "126"), "bucket index"),
])
def test_unitless_answers_carry_a_label(args, label):
    first = _solve(*args).splitlines()[0]
    assert first.startswith("answer: ") and label in first, first


def test_plurals_in_answers():
    assert _solve("chips", "-N", "7B", "--hw", "h100").splitlines()[0] == "answer: 1 chip"
    assert "31 bucket" not in _solve("t5-buckets", "-r", "126")
    kv = _solve("memory", "--preset", "gpt2", "--what", "kv-cache", "--batch", "1", "--seq", "1", "--dtype", "bf16")
    assert "1 positions" not in kv and "over all 1 " not in kv


def test_exact_entries_are_counted_from_1():
    out = _solve("softmax", "--x", "1 2 3 4 5 6", "--exact")
    assert "(1) = " in out and "(6) = " in out and "[0]" not in out


def test_zero_rounds_half_up_as_the_quiz():
    """ZeRO-1 of 7.5B on 8 GPUs: weights+gradients 4Ψ = 30 GB, optimizer 12Ψ/8 = 11.25 GB; 41.25 GB in all."""
    out = _solve("zero", "-N", "7.5B", "--gpus", "8", "--stage", "1")
    assert out.splitlines()[0] == "answer: 41,250,000,000 bytes = 41.25 GB = 38.42 GiB"
    # ZeRO-3: 16Ψ/N_d = 16 × 6.5625e9 / 8 = 13.125e9 bytes: 13.13 GB (half up), not 13.12 (half even)
    out = _solve("zero", "-N", "6.5625B", "--gpus", "8", "--stage", "3")
    assert out.splitlines()[0].startswith("answer: 13,125,000,000 bytes = 13.13 GB")


def test_format_bandwidth():
    """A bandwidth in the SI unit that puts 1 to 999 before it, 6 significant figures by
    format_number's rule: a measured 185,049,963,175.4 bytes/s reads 185.05 GB/s, not
    185,050,000,000 (zeros that look measured); a rounding carry moves up a unit."""
    from solver.units import format_bandwidth

    assert format_bandwidth(185_049_963_175.4) == "185.05 GB/s"
    assert format_bandwidth(450e9) == "450 GB/s" and format_bandwidth(3.35e12) == "3.35 TB/s"
    assert format_bandwidth(999.9999999e9) == "1 TB/s" and format_bandwidth(512) == "512 B/s"
