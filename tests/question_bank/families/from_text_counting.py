"""Readers of the statements of the counting audits (test_from_text_counting_*.py, latent_attention, moe,
sliding_window, vision_mlp): a number a pattern captures, and whether the text says something. What the audits
share otherwise (the acceptance rule, the seed blocks, the tests and the sweep) is in ``from_text_audit``.
"""

from __future__ import annotations

import re

from tests.question_bank.families.from_text_audit import number_in  # noqa: F401  (re-exported)


def has(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None
