"""Multi-head latent attention (DeepSeek-V2 §2.1): the KV cache it holds beside MHA and GQA.

Keys are ``solver.counting.memory.kv_cache_report`` of DeepSeek-V2-Lite (and of the same model with
its latent and rotary widths drawn): per token and layer the cache holds the latent c_KV (d_c) and
ONE rotary key shared by the heads (d_R). The misconceptions: the latent cache counted as MHA's
(2·h·d_h), the rotary key forgotten, the rotary key counted per head, the latent counted twice
(once for K and once for V); at the hard level (GiB), 10^9 bytes taken for a GiB.
"""

from __future__ import annotations

from question_bank.families.counting_common import BYTE_UNITS, big, nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (latent attention); DeepSeek-V2 (DeepSeek-AI 2024) §2.1 and Table 1"


@family("latent.kv_cache", topic="counting", title="KV cache of multi-head latent attention (MLA)",
        types=("nat",), tags=("memory", "kv-cache", "mla", "deepseek"), marks=2, source=_SRC)
def kv_cache(d: Draw) -> Problem:
    """L · B · n · (d_c + d_R) · bytes: per token and layer the latent c_KV and one shared rotary key."""
    from solver.counting.memory import kv_cache_bytes_cfg
    from solver.counting.presets import get_preset

    base = get_preset("deepseek-v2-lite").config
    # Levels (issue 12: disjoint, ordered): easy, DeepSeek-V2-Lite's own widths (d_c = 512, d_R = 64), one
    # sequence, in GB; medium, drawn widths (d_c = 256 or 1024, d_R = 32 or 64) and a batch of B > 1, in GB;
    # hard, the same in GiB (one unit conversion more to track, a note more in the solution).
    for attempt in range(3000):
        if d.level == 1 and attempt % 150 == 0:
            # issue 39: at medium, the answer's size drawn first, flat in log space (0.3 to about 250 GB, with a soft
            # edge of 0.6 decades), and the length solved for it: a batch and a length drawn uniformly put most answers
            # near the top of the range, where an option ×2 above was never the key
            target = 10 ** (d.rng.uniform(-0.5, 1.8) + d.rng.uniform(0, 0.6))
        # issue 39: medium and hard draw any latent width that is a multiple of 64 from 128 to 1,024, rotary widths
        # of 32, 64 or 128, batches of 2 to 32 and lengths a multiple of 256 (two widths each and three batches gave
        # 341 distinct keys in 500 draws, which a test-wise student remembers)
        dr = d.pick((64,) if d.level == 0 else (32, 64, 128))
        # issue 39: a latent at least 4 × the rotary width (DeepSeek-V2: 512 and 64), so that the rotary key is at most
        # a fifth of the cache: with d_c = 128 and d_R = 64 the slips moved the key by ×1.5 or ×4/3, exact simple
        # ratios between options that said which way the slip went
        dc = d.pick((512,) if d.level == 0 else tuple(range(max(128, 4 * dr + 64), 1025, 64)))
        cfg = base.replace(kv_lora_rank=dc, qk_rope_head_dim=dr)
        B = 1 if d.level == 0 else d.rng.randint(2, 32)
        # issue 22: any length that is a multiple of 1,024 up to 128 Ki (four lengths gave 4 easy problems)
        unit = "GiB" if d.level == 2 else "GB"
        if d.level == 1:
            n = 256 * round(target * BYTE_UNITS[unit][0] / kv_cache_bytes_cfg(cfg, B, 256, "bf16"))
            if not 1024 <= n <= 131072:
                continue
        else:
            n = d.pick(tuple(range(1024, 131073, 1024 if d.level == 0 else 256)))
        nbytes = kv_cache_bytes_cfg(cfg, B, n, "bf16")
        value = nbytes / BYTE_UNITS[unit][0]
        if 0.01 <= value < 100_000 and safe_for_rounding(value, 2, 0.1):
            break
    else:  # never met (none in 2,000 seeds per level): a draw's figures and its key always belong together
        raise RuntimeError(f"latent.kv_cache: no draw in 3000 tries at level {d.level}")
    L, h, dh, div = cfg.n_layers, cfg.n_heads, cfg.head_dim, BYTE_UNITS[unit][0]

    def per_token(width: int) -> float:
        return L * B * n * width * 2 / div

    wrongs = [
        Wrong("counted_as_mha", "counted the cache as MHA's (K and V of every head)",
              "MLA caches the compressed latent, not per-head keys and values.", per_token(2 * h * dh)),
        Wrong("forgot_rope_key", "left out the decoupled rotary key", "RoPE cannot pass through the latent: one "
              f"rotary key of d_R = {dr} per token is cached beside it.", per_token(dc),
              inverse="cached the rotary key twice (once for K, once for V)", inverse_value=per_token(dc + 2 * dr)),
        Wrong("rope_per_head", "cached a rotary key per head", "The rotary key is shared by all heads.",
              per_token(dc + h * dr)),
        Wrong("latent_twice", "cached the latent twice (for K and for V)", "K and V are both re-expanded from the "
              "same latent.", per_token(2 * dc + dr),
              # issue 39: its inverse (the rotary key only, a tenth of the cache or less) is offered at easy only: above
              # it the options sit within a factor √10 of the key, so only the slip made upwards was ever crossed, and
              # it told the key's side
              inverse="cached the rotary key only (left out the latent)" if d.level == 0 else None,
              inverse_value=per_token(dr) if d.level == 0 else None),
    ]
    if d.level == 1:
        # issue 39: at medium (GB) two slips that go either way beside the rotary key's: 4 bytes per value (fp32)
        # where the cache is bf16, or 1 (as for an int8 or fp8 cache), and 2^30 for 10^9 (GiB for GB) or the other way:
        # with no second such slip the view crossed a one-way slip, which told the key's side (78 %); with the bytes
        # alone beside the rotary key (whose two ways, d_c and d_c + 2 d_R, are not one factor) 30 %
        wrongs.append(Wrong("wrong_dtype_bytes", "used 4 bytes per value (fp32)", "The cache is bf16: 2 bytes per value.",
                            2 * nbytes / div, inverse="used 1 byte per value (as for an int8 or fp8 cache)"))
        wrongs.append(Wrong("gib_for_gb", "divided by 2^30 (GiB) where GB was asked", "1 GB is 10^9 bytes.", nbytes / 2**30,
                            inverse="converted GiB to GB twice (the factor 2³⁰/10⁹ once too often)"))
    wrongs = [w for w in wrongs if w is not None]
    if unit == "GiB":
        wrongs.append(Wrong("gb_for_gib", "divided by 10^9 (GB) where GiB was asked", "1 GiB is 2^30 bytes.",
                            nbytes / 10**9, inverse="converted GB to GiB twice (the factor 10⁹/2³⁰ once too often)"))
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    st.p(f"A decoder with multi-head latent attention (as DeepSeek-V2) has $L = {L}$ layers and $h = {h}$ heads of "
         f"size $d_h = {dh}$. Each layer compresses keys and values into a latent of $d_c = {dc}$ and adds a decoupled "
         f"rotary key of $d_R = {dr}$ shared by all heads; at inference only these are cached.")
    st.p(f"How large is the cache in bf16 (2 bytes per value) for $B = {B}$ sequence{'s' if B > 1 else ''} of "
         f"$n = {n}$ positions? Give it in {BYTE_UNITS[unit][1]}, rounded off to two decimal places.")
    notes = [f"Per token and layer: $d_c + d_R = {dc} + {dr} = {dc + dr}$ values (MHA would cache "
             f"$2 h d_h = {2 * h * dh}$, {2 * h * dh / (dc + dr):.1f}× as many).",
             f"$L \\cdot B \\cdot n \\cdot (d_c + d_R) \\cdot 2 = {L} \\times {B} \\times {n} \\times {dc + dr} \\times 2 "
             f"= {big(nbytes)}$ bytes; in {unit}: ${value:.4f}$."]
    if B > 1:
        notes.insert(1, f"Each of the $B = {B}$ sequences keeps its own cache: the batch multiplies it by {B}.")
    if unit == "GiB":
        notes.append(f"1 GiB = $2^{{30}}$ = {2**30:,} bytes (not $10^9$): {big(nbytes)} / {2**30:,} = {value:.4f} GiB.")
    return nat_problem(d, st, key, [], wrongs, given={"n_layers": L, "n_heads": h, "d_head": dh, "kv_lora_rank": dc,
                                                      "qk_rope_head_dim": dr, "batch": B, "seq": n, "unit": unit},
                       notes=notes)
