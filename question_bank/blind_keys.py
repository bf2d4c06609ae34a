"""The blind guesses a numeric key must not accept (issue 12): ``0``, ``1`` or a number printed in the
statement. :func:`blind_key_guess` runs on every problem a family draws
(:meth:`question_bank.family.Family.generate` draws again when a key accepts one), so it lives
apart from :mod:`question_bank.quality` (which re-exports these names): drawing the quiz's first
problem imports this small module, not the quality checks (issue 40).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from question_bank.problem import IntegerKey, NumericKey, Problem

__all__ = ["numbers_in", "printed_numbers", "blind_guess_accepted", "blind_key_guess"]

_NUM = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:\s*[×x]\s*10\^?[-−]?\d+|[eE][-+]?\d+)?")


def numbers_in(text: str) -> list[float]:
    """The numbers written in ``text`` (``1,024``, ``0.5``, ``3×10^9``, ``2e-3``), in order."""
    out = []
    for m in _NUM.finditer(text.replace("\u2009", "").replace("⁻", "-")):
        s = m.group(0).replace("−", "-").replace(",", "").replace(" ", "")
        s = re.sub(r"[×x]10\^?", "e", s)
        try:
            out.append(float(s))
        except ValueError:
            continue
    return out


_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SUPS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"
_TOKEN = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:\s*[×x]\s*10\^?[-−]?\d+|[eE][-+]?\d+)?"
                    rf"|(?<=ℝ)[{_SUPS}]+|(?<=\d)[{_SUPS}]+|(?<=\^)\{{?-?\d+\}}?")


def printed_numbers(text: str) -> list[float]:
    """The numbers a student reads in ``text``: ``1,024``, ``0.5``, ``3×10^9``, ``2e-3``, and the
    exponents written as superscripts or LaTeX powers, read twice: ``ℝ⁶⁴`` gives 64, ``2¹⁰`` gives
    2, 10 and 1024, ``10^{9}`` gives 10, 9 and 1e9. A lone ``²`` after a letter (σ²) is a square,
    not a number."""
    text = text.replace("\u2009", "").replace("\u202f", "")
    out: list[float] = []
    prev: float | None = None
    prev_end = -1
    for m in _TOKEN.finditer(text):
        s = m.group(0)
        sup = s[0] in _SUPS or s.startswith("^") or s.startswith("{")
        s = s.translate(_SUP).replace("−", "-").replace(",", "").replace(" ", "").strip("^{}")
        s = re.sub(r"[×x]10\^?", "e", s)
        try:
            v = float(s)
        except ValueError:
            continue
        out.append(v)
        if sup and prev is not None and m.start() == prev_end and abs(v) < 80 and prev != 0:
            try:
                out.append(float(prev**v))
            except OverflowError:
                pass
        prev, prev_end = v, m.end()
    return out


def blind_guess_accepted(key: Any, numbers: Iterable[float] = ()) -> str | None:
    """The blind guess a NAT/integer ``key`` accepts: ``"0"``, ``"1"``, or ``"a number in the
    statement (64)"`` for one of ``numbers``; None when it accepts none (a family can call this
    while drawing, to draw again)."""
    from question_bank.grading import accepts

    if not isinstance(key, NumericKey | IntegerKey):
        return None
    for g in (0, 1):
        if accepts(key, g):
            return str(g)
    for v in dict.fromkeys(numbers):
        if v not in (0, 1) and accepts(key, v):
            return f"a number in the statement ({v:g})"
    return None


def blind_key_guess(p: Problem) -> str | None:
    """The blind guess that a NAT/integer problem's key accepts (``"0"``, ``"1"``, ``"a number
    in the statement (64)"``), or None. Multi-part problems: any part."""
    keys = [(pt.key, pt.prompt_text) for pt in p.parts] or [(p.key, "")]
    st_nums = printed_numbers(p.statement_text)  # issue 22: superscripts too (d_k printed only as ℝ⁶⁴)
    for key, prompt in keys:
        g = blind_guess_accepted(key, st_nums + printed_numbers(prompt))
        if g is not None:
            return g
    return None
