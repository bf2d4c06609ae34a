"""Readers of the statements of the hardware and scaling audits (test_from_text_hardware*.py,
test_from_text_scaling_arithmetic.py): numbers written as a student reads them ('2.7 trillion'), a datasheet's
peak and bandwidth, the bytes of a storage type. What the audits share otherwise (the acceptance rule, the seed
blocks, the tests and the sweep) is in ``from_text_audit``.
"""

from __future__ import annotations

import re

from tests.question_bank.families.from_text_audit import Unreadable, num  # noqa: F401  (num: re-exported)

#: bytes per value of each storage type, as a student knows them (not read from qkv)
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}



def grab(pattern: str, text: str, what: str = "") -> re.Match:
    """The first match of ``pattern`` in ``text``; Unreadable when the text does not state it."""
    m = re.search(pattern, text)
    if not m:
        raise Unreadable(f"the text does not state {what or pattern!r}")
    return m


def number(pattern: str, text: str, what: str = "") -> float:
    """The number in the first group of ``pattern`` (a plain number or '2.7 trillion')."""
    return num(grab(pattern, text, what)[1])


_TB = 1e12


def dense_peak(text: str) -> float:
    """The chip's dense bf16 peak in FLOP/s, as the text gives it (a with-sparsity figure is halved)."""
    if m := re.search(r"lists BF16 tensor throughput as ([\d.]+) TFLOP/s with 2:4 structured sparsity", text):
        return float(m[1]) * _TB / 2
    return number(r"dense (?:BF16|bf16) peak (?:is )?([\d.]+) TFLOP/s", text, "the dense peak") * _TB


def hbm_bw(text: str) -> float:
    return number(r"HBM bandwidth ([\d.]+) TB/s \(10¹² bytes/s\)", text, "the HBM bandwidth") * _TB
