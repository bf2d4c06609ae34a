"""issue 22: "Your calculator was in degrees" only where it applies. Typing the key rounded to fewer
decimals (``1.000`` for a key of 0.9997) is too few digits, never the degree-mode diagnosis; a
degree-mode answer far from the key still gets it."""

from __future__ import annotations

import math

from question_bank.family import get_family
from question_bank.grading import grade, round_half_up


def _degree_mode(p) -> float:
    g = p.given
    i = g["dim"] // 2
    angle = g["pos"] / 10000 ** (2 * i / g["d_model"])  # radians, as the statement defines it
    return (math.sin if g["dim"] % 2 == 0 else math.cos)(math.radians(angle))


def test_the_key_rounded_coarser_is_never_called_degrees():
    f = get_family("positional.pe_value")
    fired = 0
    for diff in f.levels:
        for s in range(120):
            p = f.generate(s, diff)
            d = p.key.decimals
            for k in range(d):
                typed = f"{round_half_up(p.key.value, k):.{k}f}"
                v = grade(p, float(typed), written=typed)
                assert v.misconception is None or v.misconception.id != "degrees", (p.id, p.key.value, typed)
            deg = _degree_mode(p)
            typed = f"{round_half_up(deg, d):.{d}f}"
            v = grade(p, float(typed), written=typed)
            if v.misconception is not None and v.misconception.id == "degrees":
                fired += 1
    assert fired > 50  # the diagnosis still fires where it applies
