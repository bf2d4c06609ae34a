"""The sliding-window KV cache keys (question_bank/families/sliding_window.py), recomputed from the text.

As the statement says: a windowed layer's cache is a rolling buffer of the last W positions, so it holds
min(n, W) positions; a global layer holds all n; when the layers alternate, the odd-numbered ones (1st,
3rd, …) are windowed. The cache is simulated here position by position for one layer of each kind (a
``collections.deque(maxlen=W)`` fed n positions), then counted: K and V, hₖᵥ heads of dₕ values, B
sequences, at the printed bytes per value, in the unit the statement defines. The key must accept the
value rounded as asked (MCQ: the keyed option is the one option printing it). Nothing here reads
``given`` or imports the solver. ``python -m tests.question_bank.families.test_from_text_sliding_window``
sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import functools
from collections import deque
from fractions import Fraction

from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    number_in,
)


def unit(text: str, swapped: bool = False) -> int:
    if "GiB (1 GiB = 2³⁰ bytes)" in text:
        return 10**9 if swapped else 2**30
    assert "GB (1 GB = 10⁹ bytes)" in text, f"no unit defined:\n{text}"
    return 2**30 if swapped else 10**9


@functools.cache
def positions_kept(n: int, window: int | None) -> int:
    """Feed n positions to a layer's cache (a rolling buffer of W, or unbounded) and count what it holds."""
    buf: deque[int] = deque(maxlen=window)
    buf.extend(range(n))
    return len(buf)


def window_cache(text: str, p=None, *, windowed_layers: str | None = None, swapped: bool = False) -> float:
    """``windowed_layers``: 'none' or 'all' for a slip's reading; None for the statement's."""
    kv, dh = number_in(r"hₖᵥ = (\d+) K/V heads", text), number_in(r"of size dₕ = (\d+)", text)
    L, W = number_in(r"L = (\d+) layers", text), number_in(r"sliding window of W = ([\d,]+)", text)
    B, n = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) positions", text)
    per_value = number_in(r"in bf16 \((\d+) bytes per value\)", text)
    assert "a windowed layer's cache is a rolling buffer of the last W positions" in text
    if "every one of its" in text:
        windowed = list(range(1, L + 1))
    else:
        assert "the odd-numbered ones (1st, 3rd, …) attend within a sliding window" in text
        assert "the even-numbered ones globally" in text
        windowed = [i for i in range(1, L + 1) if i % 2 == 1]
    if windowed_layers is not None:
        windowed = list(range(1, L + 1)) if windowed_layers == "all" else []
    kept = sum(positions_kept(n, W if i in windowed else None) for i in range(1, L + 1))
    return float(Fraction(2 * B * kept * kv * dh * per_value, unit(text, swapped)))


RECOMPUTE = {"window.kv_cache": window_cache}
FIDS = with_views(RECOMPUTE)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "window.kv_cache": {
        "window_ignored": lambda t: window_cache(t, windowed_layers="none"),
        "window_everywhere": lambda t: window_cache(t, windowed_layers="all"),
        "forgot_k_and_v": lambda t: window_cache(t) / 2,
        "gb_for_gib": lambda t: window_cache(t, swapped=True),
        "gib_for_gb": lambda t: window_cache(t, swapped=True),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "sliding_window", mistakes=SLIPS))





if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
