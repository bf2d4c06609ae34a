"""Readers of the statements of the counting audits (test_from_text_counting_*.py, latent_attention, moe,
sliding_window, vision_mlp): a number a pattern captures, and whether the text says something. What the audits
share otherwise (the acceptance rule, the seed blocks, the tests and the sweep) is in ``from_text_audit``.
"""

from __future__ import annotations

import re


def num(pattern: str, text: str) -> int | float:
    """The number the first group of ``pattern`` captures in ``text`` (commas as thousands
    separators); fails with the text when the statement does not give it."""
    m = re.search(pattern, text)
    assert m, f"the text does not give {pattern!r}:\n{text}"
    s = m[1].replace(",", "")
    return float(s) if re.search(r"[.eE]", s) else int(s)


def has(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None
