"""The multi-head latent attention cache keys (question_bank/families/latent_attention.py), recomputed
from the text.

The statement says what is cached: per layer and position, the latent of d_c values and the decoupled
rotary key of d_R values shared by all heads (the heads' own K and V are not cached, so h and dₕ do not
enter). The cache is L·B·n·(d_c + d_R) values at the printed bytes per value; its size is also taken from
torch (the per-layer latent and rotary-key tensors built on the meta device, ``nbytes``). The unit is the
one the statement defines (GB = 10⁹ bytes, GiB = 2³⁰ bytes). The key must accept the value rounded as
asked (MCQ: the keyed option is the one option printing it). Nothing here reads ``given`` or imports the
solver. ``python -m tests.question_bank.families.test_from_text_latent_attention`` sweeps 300 seeds per
level from 0 and from 70,000.
"""

from __future__ import annotations

from fractions import Fraction

import torch

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


def mla_cache(text: str, p=None, *, per_position=None, swapped: bool = False) -> float:
    """``per_position(d_c, d_R, h, dₕ)``: the values cached per layer and position (a slip's, or the
    statement's d_c + d_R)."""
    L, dc, dr = number_in(r"L = (\d+) layers", text), number_in(r"latent of d_c = (\d+)", text), number_in(r"rotary key of d_R = (\d+)", text)
    B, n = number_in(r"B = (\d+) sequences?", text), number_in(r"n = ([\d,]+) positions", text)
    per_value = number_in(r"in bf16 \((\d+) bytes per value\)", text)
    assert "at inference only these are cached" in text and "shared by all heads" in text
    count = L * B * n * (dc + dr) * per_value
    latent = torch.empty(B, n, dc, dtype=torch.bfloat16, device="meta")
    rope_key = torch.empty(B, n, dr, dtype=torch.bfloat16, device="meta")
    assert per_value != 2 or L * (latent.nbytes + rope_key.nbytes) == count
    if per_position is not None:
        h, dh = number_in(r"h = (\d+) heads", text), number_in(r"dₕ = (\d+)", text)
        count = L * B * n * per_position(dc, dr, h, dh) * per_value
    return float(Fraction(count, unit(text, swapped)))


RECOMPUTE = {"latent.kv_cache": mla_cache}
FIDS = with_views(RECOMPUTE)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "latent.kv_cache": {
        "counted_as_mha": lambda t: mla_cache(t, per_position=lambda dc, dr, h, dh: 2 * h * dh),
        "forgot_rope_key": lambda t: mla_cache(t, per_position=lambda dc, dr, h, dh: dc),
        "latent_twice": lambda t: mla_cache(t, per_position=lambda dc, dr, h, dh: 2 * dc + dr),
        "rope_per_head": lambda t: mla_cache(t, per_position=lambda dc, dr, h, dh: dc + h * dr),
        "gb_for_gib": lambda t: mla_cache(t, swapped=True),
        "gib_for_gb": lambda t: mla_cache(t, swapped=True),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "latent_attention", mistakes=SLIPS))





if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
