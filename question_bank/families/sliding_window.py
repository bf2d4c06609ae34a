"""Sliding-window attention: the rolling-buffer KV cache, with every layer windowed (Mistral 7B) or
local and global layers alternating (Gemma 2).

Keys are ``solver.counting.memory.kv_cache_report``: a windowed layer keeps min(n, W) positions, a
global one all n. The misconceptions: the window ignored (n positions everywhere), the window
applied to the global layers too, the factor 2 of K and V forgotten; at the hard level (GiB),
10^9 bytes taken for a GiB.
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import BYTE_UNITS, big, nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (sliding window); Mistral 7B (Jiang et al. 2023) §2; Gemma 2 (Gemma Team 2024) §2"


#: Issue 39, round 4 (medium, hard): the cache sizes drawn, in the level's unit (GB or GiB): log-uniform over this range
_SIZE_RANGE = (0.5, 100.0)
#: How far (a factor) a drawn configuration's cache may lie from the size drawn
_SIZE_FIT = 1.03


def _even_rounding(value: float, decimals: int, margin: float = 0.1) -> bool:
    """The last printed digit's fraction in [0.1, 0.4] or [0.6, 0.9]: ``safe_for_rounding`` keeps it away from a half;
    a band of the same width kept out near the whole units too leaves a doubled (halved) key as likely to read as
    exactly twice (half) the key's text as a doubled distractor is (issue 39, as ``measurements.run_flops``)."""
    frac = abs(value) * 10**decimals % 1
    return margin <= frac <= 0.5 - margin or 0.5 + margin <= frac <= 1 - margin


def _sized(d: Draw, div: int) -> tuple[tuple[int, int, int], int, int, int]:
    """A configuration for medium and hard: ``((h_kv, d_h, W), L, B, n)`` whose KV cache (local and global layers
    alternating, bf16) is within :data:`_SIZE_FIT` of a size drawn log-uniformly over :data:`_SIZE_RANGE` (in bytes
    over ``div``): a model (any even depth 24-64, 2 to 16 K/V heads of 64 to 256) and a window (512 to 8192) drawn
    until some batch (1-16) and length (a multiple of 500 above 2W, up to 32,000) give that size, then one of those
    pairs. The solver computes the key from the figures; this estimate only chooses them."""
    for attempt in range(4000):
        if attempt % 50 == 0:  # a size near the top of the range fits few models: after 50, another size
            target = d.log_uniform(*_SIZE_RANGE, None)
        L = d.pick(tuple(range(24, 65, 2)))
        kv, dh = d.pick((2, 4, 8, 16)), d.pick((64, 128, 256))
        W = d.pick((512, 1024, 2048, 4096, 8192))
        local = L - L // 2
        fits = []
        for B in range(1, 17):
            # the lengths n (multiples of 500 above 2W, up to 32,000) nearest the one that gives the size with B
            per_pos = 2 * 2 * B * kv * dh * (L - local) / div  # what one more position adds (global layers)
            exact = (target - 2 * 2 * B * kv * dh * local * W / div) / per_pos
            for m in (math.floor(exact / 500), math.floor(exact / 500) + 1):
                n = 500 * m
                if 2 * W < n <= 32_000 and abs(math.log(2 * 2 * B * kv * dh * (local * W + (L - local) * n) / div / target)) <= math.log(_SIZE_FIT):
                    fits.append((B, n))
        if fits:
            B, n = d.pick(fits)
            return (kv, dh, W), L, B, n
    raise AssertionError("no configuration found for 200 sizes")  # never: a size of 1 fits most models


@family("window.kv_cache", topic="counting", title="KV cache with a sliding window (all layers or alternating)",
        types=("nat",), tags=("memory", "kv-cache", "sliding-window", "mistral", "gemma"), marks=2, source=_SRC,
        # issue 39, its MCQ view (medium, hard): the factor 2 of K and V and the unit (GB for GiB or GiB for GB), each
        # either way, kept inside the keys' range (given["key_range"]); not a window slip, which goes one way only and
        # told the key's side
        view_slips=("forgot_k_and_v", "gib_for_gb", "gb_for_gib"))
def kv_cache(d: Draw) -> Problem:
    """2 · B · h_kv · d_h · bytes · (L_local · min(n, W) + L_global · n): a windowed layer's rolling buffer."""
    from solver.counting.config import ModelConfig
    from solver.counting.memory import kv_cache_bytes_cfg

    # Levels (issue 12: disjoint, ordered): easy, every layer windowed (as Mistral 7B) with W = 4096, in GB;
    # medium, local and global layers alternating (as Gemma 2: two kinds of layer to count), in GB; hard, the
    # same in GiB (a unit conversion more, a note more in the solution).
    unit = "GiB" if d.level == 2 else "GB"
    div = BYTE_UNITS[unit][0]
    for _ in range(300):
        if d.level == 0:
            # issue 39: any even depth from 24 to 64, 2 to 16 K/V heads of 64 to 256, any length that is a multiple
            # of 500 and batches up to 16 (three models, three windows and eight lengths gave 197 distinct hard keys
            # in 500 draws, which a test-wise student remembers)
            L = d.pick(tuple(range(24, 65, 2)))
            kv, dh = d.pick((2, 4, 8, 16)), d.pick((64, 128, 256))
            W = d.pick((4096,))
            # contexts of any length (with powers of two only, a GiB key was a round number: "5.00", "10.00")
            n = 500 * d.rng.randint(2 * W // 500 + 1, 64)
            B = d.rng.randint(1, 16)
        else:
            # issue 39, round 4: the cache's size drawn first, log-uniformly over 0.5 to 100 (GB or GiB), then a model,
            # a window and a (batch, length) pair among those that give it. With the six figures drawn each on its own
            # the keys' log sizes piled up in a bell (a spread of 0.6 decades about 9 GiB), and an attacker who knows
            # the bell takes the lowest of four options lying above its middle and the highest below it: the 2×2
            # cross spans a factor 2.15, a third of a decade (a Bayes rule on the keys' density alone: +4.6 points)
            size, L, B, n = _sized(d, div)
            kv, dh, W = size
        cfg = ModelConfig(d_model=kv * dh * 2, n_layers=L, n_heads=2 * kv, n_kv_heads=kv, d_head=dh, d_ff=8,
                          pos="rope", sliding_window=W, global_every=0 if d.level == 0 else 2)
        nbytes = kv_cache_bytes_cfg(cfg, B, n, "bf16")
        value = nbytes / div
        # issue 39, round 4 (medium, hard): the key's last-digit fraction kept out of a band near a whole unit too, not
        # only near a half (safe_for_rounding): otherwise a doubled key rounds to exactly twice the key's text more
        # often than a doubled distractor does, and the exact ×2 pair of options holds the key
        # and (medium, hard) no key that reads as a figure of the statement (1, 2, 3, B, L, …): it would be won blind
        printed = (1, 2, 3, L, kv, dh, W, B, n)
        if safe_for_rounding(value, 2, 0.1) and (d.level == 0 or (
                _even_rounding(value, 2) and all(abs(round(value, 2) - x) > 0.006 for x in printed)
                and _SIZE_RANGE[0] <= value <= _SIZE_RANGE[1])):
            break
    every = cfg.global_every
    local = cfg.local_layers_of(L)

    def cache(local_pos: int, global_pos: int, factor: int = 2) -> float:
        return factor * B * kv * dh * 2 * (local * local_pos + (L - local) * global_pos) / div

    wrongs = [
        Wrong("window_ignored", "cached all n positions (ignored the window)",
              f"A windowed layer's rolling buffer keeps only the last W = {W} positions.", cache(n, n)),
        Wrong("window_everywhere", "applied the window to the global layers too",
              "The global layers attend to (and cache) every position.", 2 * B * kv * dh * 2 * L * W / div)
        if local < L else None,
        Wrong("forgot_k_and_v", "forgot the factor 2 for K and V", "Both K and V are cached.", cache(W, n, 1),
              inverse="counted K and V twice each (a factor 4)"),
        Wrong("gb_for_gib", "divided by 10^9 (GB) where GiB was asked", "1 GiB is 2^30 bytes.", nbytes / 10**9,
              inverse="converted GB to GiB twice (the factor 10⁹/2³⁰ once too often)")
        if unit == "GiB" else
        # issue 39: at medium (GB) the unit slip the other way, so that two slips go either way (with the factor 2 of K
        # and V alone the view crossed a one-way slip, the window ignored, which told the key's side: 53 %)
        Wrong("gib_for_gb", "divided by 2^30 (GiB) where GB was asked", "1 GB is 10^9 bytes.", nbytes / 2**30,
              inverse="converted GiB to GB twice (the factor 2³⁰/10⁹ once too often)")
        if d.level == 1 else None,
    ]
    key = nat_key(value, 2, unit=unit)
    layers = (f"every one of its $L = {L}$ layers uses a sliding window of $W = {W}$" if not every else
              f"its $L = {L}$ layers alternate: the odd-numbered ones (1st, 3rd, …) attend within a sliding window of "
              f"$W = {W}$, the even-numbered ones globally")
    st = Doc()
    st.p(f"A decoder has grouped-query attention with $h_{{kv}} = {kv}$ K/V heads of size $d_h = {dh}$; {layers} (a "
         "token sees itself and the W − 1 positions before it, and a windowed layer's cache is a rolling buffer of "
         "the last W positions).")
    st.p(f"How large is the KV cache in bf16 (2 bytes per value) for $B = {B}$ sequence{'s' if B > 1 else ''} "
         f"of $n = {n}$ positions? Give it in {BYTE_UNITS[unit][1]}, rounded off to two decimal places.")
    notes = [f"Windowed layers: {local}, each $\\min(n, W) = {min(n, W)}$ positions; global layers: {L - local}, "
             f"each {n}.",
             f"$2 \\cdot B \\cdot h_{{kv}} \\cdot d_h \\cdot 2 \\cdot ({local} \\times {min(n, W)} + {L - local} \\times {n}) "
             f"= {big(nbytes)}$ bytes; in {unit}: ${value:.4f}$."]
    if unit == "GiB":
        notes.append(f"1 GiB = $2^{{30}}$ = {2**30:,} bytes (not $10^9$): {big(nbytes)} / {2**30:,} = {value:.4f} GiB.")
    return nat_problem(d, st, key, [], wrongs,
                       given={"n_layers": L, "n_kv_heads": kv, "d_head": dh, "window": W, "global_every": every,
                              "batch": B, "seq": n, "unit": unit,
                              # issue 39: the range the keys are drawn from (medium, hard): the MCQ view offers no option
                              # outside it, where no key lies (numeric_mcq, key_range)
                              **({"key_range": list(_SIZE_RANGE)} if d.level else {})}, notes=notes)
