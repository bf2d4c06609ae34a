"""Sliding-window attention: the rolling-buffer KV cache, with every layer windowed (Mistral 7B) or
local and global layers alternating (Gemma 2).

Keys are ``solver.counting.memory.kv_cache_report``: a windowed layer keeps min(n, W) positions, a
global one all n. The misconceptions: the window ignored (n positions everywhere), the window
applied to the global layers too, the factor 2 of K and V forgotten; at the hard level (GiB),
10^9 bytes taken for a GiB.
"""

from __future__ import annotations

from question_bank.families.counting_common import BYTE_UNITS, big, nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (sliding window); Mistral 7B (Jiang et al. 2023) §2; Gemma 2 (Gemma Team 2024) §2"


@family("window.kv_cache", topic="counting", title="KV cache with a sliding window (all layers or alternating)",
        types=("nat",), tags=("memory", "kv-cache", "sliding-window", "mistral", "gemma"), marks=2, source=_SRC)
def kv_cache(d: Draw) -> Problem:
    """2 · B · h_kv · d_h · bytes · (L_local · min(n, W) + L_global · n): a windowed layer's rolling buffer."""
    from solver.counting.config import ModelConfig
    from solver.counting.memory import kv_cache_bytes_cfg

    # Levels (issue 12: disjoint, ordered): easy, every layer windowed (as Mistral 7B) with W = 4096, in GB;
    # medium, local and global layers alternating (as Gemma 2: two kinds of layer to count), in GB; hard, the
    # same in GiB (a unit conversion more, a note more in the solution).
    for _ in range(300):
        # issue 39: any even depth from 24 to 64, 2 to 16 K/V heads of 64 to 256, more windows, any length that is a
        # multiple of 500 and batches up to 16 (three models, three windows and eight lengths gave 197 distinct hard
        # keys in 500 draws, which a test-wise student remembers)
        L = d.pick(tuple(range(24, 65, 2)))
        kv, dh = d.pick((2, 4, 8, 16)), d.pick((64, 128, 256))
        W = d.pick((4096,) if d.level == 0 else (512, 1024, 2048, 4096, 8192))
        every = 0 if d.level == 0 else 2
        # contexts of any length (with powers of two only, a GiB key was a round number: "5.00", "10.00")
        n = 500 * d.rng.randint(2 * W // 500 + 1, 64)
        B = d.rng.randint(1, 16)
        unit = "GiB" if d.level == 2 else "GB"
        cfg = ModelConfig(d_model=kv * dh * 2, n_layers=L, n_heads=2 * kv, n_kv_heads=kv, d_head=dh, d_ff=8,
                          pos="rope", sliding_window=W, global_every=every)
        nbytes = kv_cache_bytes_cfg(cfg, B, n, "bf16")
        value = nbytes / BYTE_UNITS[unit][0]
        if safe_for_rounding(value, 2, 0.1):
            break
    local = cfg.local_layers_of(L)
    div = BYTE_UNITS[unit][0]

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
                              "batch": B, "seq": n, "unit": unit}, notes=notes)
