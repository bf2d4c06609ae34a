"""Readers of the statements of the attention-systems and serving audits (test_from_text_attention_systems.py,
test_from_text_serving.py): ``name = value`` fields and exact numbers. What the audits share otherwise (the
acceptance rule, the seed blocks, the tests and the sweep) is in ``from_text_audit``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from tests.question_bank.families.from_text_audit import Unreadable, num  # noqa: F401  (num: re-exported)

_NUM = r"-?\d[\d,]*(?:\.\d+)?"


def frac(s: str) -> Fraction:
    return Fraction(s.replace(",", ""))


def field(text: str, name: str, pattern: str = _NUM) -> str:
    """The value printed as ``name = value`` (first occurrence); Unreadable if the text has none."""
    m = re.search(rf"(?<![\w']){re.escape(name)} = ({pattern})", text)
    if not m:
        raise Unreadable(f"no '{name} = …' in the text")
    return m[1]


def fnum(text: str, name: str) -> Fraction:
    return frac(field(text, name))


def search(text: str, pattern: str, what: str) -> re.Match:
    m = re.search(pattern, text)
    if not m:
        raise Unreadable(f"the text does not say {what} (pattern {pattern!r})")
    return m
