"""Readers of the statements of the attention, norm, positional, loss, sampling and complexity audits: numbers
(fractions and '−' too), ``x = [1 6 3 -2]`` vectors and the matrices drawn with ⎡ ⎢ ⎣ brackets side by side. What
the audits share otherwise (the acceptance rule, the seed blocks, the tests and the sweep) is in
``from_text_audit``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from tests.question_bank.families.from_text_audit import Unreadable

_SEG = re.compile(r"[⎡⎢⎣]([^⎤⎥⎦⎡⎢⎣]*)[⎤⎥⎦]")


def number(s: str) -> float:
    s = s.replace(",", "").replace("−", "-")
    if "/" in s:
        return float(Fraction(s))
    return float(s)


def find(pattern: str, text: str, conv=number, group: int = 1):
    """The first match of ``pattern`` in ``text``, converted; Unreadable when there is none."""
    m = re.search(pattern, text)
    if m is None:
        raise Unreadable(f"the text does not say {pattern!r}")
    return conv(m[group])


def vector(name: str, text: str) -> list[float]:
    """``x = [1 6 3 -2]`` or ``m = [1, 1, 0]``."""
    m = re.search(rf"(?<![\w']){re.escape(name)} = \[([^\]]*)\]", text)
    if m is None:
        raise Unreadable(f"no vector {name} in the text")
    return [number(t) for t in re.split(r"[,\s]+", m[1].strip()) if t]


def matrices(text: str) -> dict[str, list[list[float]]]:
    """The matrices drawn with ⎡ ⎢ ⎣ brackets side by side (``Q = ⎡ 1 0 ⎤   K = ⎡ … ⎤``): the k-th
    bracketed segment of each line belongs to the k-th name, names ordered by their column."""
    lines = [ln for ln in text.splitlines() if _SEG.search(ln)]
    if not lines:
        raise Unreadable("no matrix drawn in the text")
    names: list[tuple[int, str]] = []
    for ln in lines:
        names += [(m.start(), m[1]) for m in re.finditer(r"(\S+) = [⎡⎢⎣]", ln)]
    names.sort()
    out: dict[str, list[list[float]]] = {n: [] for _, n in names}
    for ln in lines:
        segs = _SEG.findall(ln)
        if len(segs) != len(names):
            raise Unreadable(f"a matrix line with {len(segs)} rows for {len(names)} names: {ln!r}")
        for (_, n), seg in zip(names, segs, strict=True):
            out[n].append([number(t) for t in seg.split()])
    return out
