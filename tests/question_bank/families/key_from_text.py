"""Readers of the statements of the low-precision, parallelism, precision-scale and quantisation audits: a number
as printed, a pattern the text must contain, the paragraph that asks the question. What the audits share otherwise
(the acceptance rule, the seed blocks, the tests and the sweep) is in ``from_text_audit``.
"""

from __future__ import annotations

import re

from tests.question_bank.families.from_text_audit import num  # noqa: F401  (num: re-exported)


def find(pattern: str, text: str, flags: int = 0) -> re.Match:
    """The first match of ``pattern`` in ``text``; a statement that lacks it is a finding (the text does not
    give what the answer needs), reported with the pattern."""
    m = re.search(pattern, text, flags)
    if m is None:
        raise LookupError(f"the text does not say {pattern!r}")
    return m


def question(text: str) -> str:
    """The paragraph that asks the question (the last with a question mark), where the unit is named."""
    return [para for para in text.split("\n\n") if "?" in para][-1]
