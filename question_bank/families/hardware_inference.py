"""Hardware arithmetic of inference: prefill time at an MFU, the arithmetic intensity of
attention in a decode step (MHA against GQA/MQA: the K/V read dominates), and the context
length at which attention's FLOPs equal the projections' (or all the matmuls') FLOPs.

Keys are ``solver.systems.inference.prefill`` and ``solver.systems.roofline.attention`` results on figures the
statement states; the worked solution is the result's steps. Misconceptions are the same calls
with the mistake applied: the with-sparsity peak, the MFU ignored or multiplied in, 6N (the
training count) for a forward pass, one chip's peak, ``n_heads`` in place of ``n_kv_heads``,
only K cached (the factor 2 of K and V forgotten), multiply-adds for FLOPs, the prefill
intensity (all S queries) for the decode one, QKᵀ without A·V, the FFN forgotten or counted
with two matrices for SwiGLU.
"""

from __future__ import annotations

from fractions import Fraction

from question_bank.families.counting_common import nat_problem, tokens_text
from question_bank.families.hardware import CHIP_NAMES, peak_text, resolved_chip, sparse_chip
from question_bank.family import Draw, Wrong, family
from question_bank.grading import asked_decimals, nat_key, rounded_off, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 7 (hardware arithmetic)"

#: The with-sparsity peak and one FLOP per multiply-add halve the FLOP count per peak FLOP/s alike (the same value),
#: so one misconception names both.
SPARSE_OR_MACS = ("sparse_peak", "used the with-sparsity peak, or counted multiply-adds as FLOPs (both a factor 2)",
                  "The datasheet's figure with 2:4 sparsity is twice the dense peak, and a dense matmul gets only half of "
                  "it; the peak counts 2 FLOPs per multiply-add, so the work must too.")


@family("hardware.prefill_time", topic="hardware", title="Prefill time at an MFU",
        types=("nat",), tags=("inference", "prefill", "mfu", "hardware"), source=_SRC)
def prefill_time(d: Draw) -> Problem:
    """t = 2·N·T / (chips · dense peak · MFU): a forward pass costs 2N FLOPs per prompt token."""
    from solver.systems.inference import prefill

    for _ in range(300):
        # Levels (issue 12: disjoint, ordered): easy, a 1B to 13B model on one chip, prompts up to 4096;
        # medium, the same models split over 2-8 chips (the chips to count) with long prompts; hard, a 34B or
        # 70B model on 8 chips, any prompt.
        # issue 22: medium's prompts were powers of two over 2, 4 or 8 chips, so T/chips was an easy prompt and
        # remembering the easy answers gave 25 % of medium keys; they are now round thousands (T/chips never an easy
        # prompt), and more sizes, prompts and MFUs give each level at least 50 problems in 1,000 draws.
        n_b = d.pick((1, 3, 7, 8, 13)) if d.level < 2 else d.pick((34, 70))
        N = n_b * 10**9
        easy_T, long_T = (512, 1024, 1536, 2048, 3072, 4096), (6000, 10000, 12000, 20000, 30000, 50000)
        T = d.pick((easy_T, long_T, easy_T + long_T)[d.level])
        hw = d.pick(("a100-80gb", "h100-sxm", "h200"))
        chips = d.pick((2, 3, 4, 8)) if d.level == 1 else (8 if d.level == 2 else 1)
        mfu = d.pick((0.35, 0.4, 0.45, 0.55, 0.6))  # not 0.5: ignoring it would equal the sparse-peak mistake
        chip = resolved_chip(hw)
        r = prefill(N, T, chip, chips=chips, mfu=mfu)
        value = r.answer * 1e3
        # issue 22: the digit rule asks at most four significant figures (1234.57 ms is asked as 1235)
        if 1 <= value < 100_000 and safe_for_rounding(value, asked_decimals(value, 2), 0.1):
            break
    ms = 1e3
    wrongs = [
        Wrong(*SPARSE_OR_MACS, prefill(N, T, sparse_chip(hw), chips=chips, mfu=mfu).answer * ms),
        Wrong("forgot_mfu", "ignored the MFU", f"Only {mfu:.0%} of the peak is achieved: divide by the MFU.",
              prefill(N, T, chip, chips=chips, mfu=1.0).answer * ms),
        Wrong("mfu_multiplied", "multiplied by the MFU", "A utilisation below 1 makes the run slower: divide by the MFU, "
              "do not multiply.", prefill(N, T, chip, chips=chips, mfu=1.0).answer * mfu * ms),
        Wrong("counted_backward", "used 6N per token (the training count)",
              "A prefill is a forward pass only: 2N FLOPs per token, not 6N (forward + backward).",
              prefill(3 * N, T, chip, chips=chips, mfu=mfu).answer * ms),
        Wrong("one_chip", "used one chip", f"The prompt is processed by {chips} chips whose peaks add up.",
              prefill(N, T, chip, chips=1, mfu=mfu).answer * ms) if chips > 1 else None,
    ]
    key = nat_key(value, 2, unit="ms", digits_rule=True)
    st = Doc()
    # one chip is "one NVIDIA H200", and there is no work to share (issue 23)
    on = f"{chips} × {CHIP_NAMES[hw]}" if chips > 1 else f"one {CHIP_NAMES[hw]}"
    share = "; the chips share the work perfectly" if chips > 1 else ""
    st.p(f"A dense model with $N$ = {tokens_text(N)} parameters processes a prompt of $T = {T}$ tokens (the prefill) on "
         f"{on} ({peak_text(hw)}) at a model FLOPs utilisation (MFU) of {mfu:.0%}; the model "
         "runs in BF16.")
    st.p("Count 2 FLOPs per multiply-add and $2N$ FLOPs per token for a forward pass (ignore attention's "
         f"sequence-length term){share}. How long does the prefill take? "
         f"Give it in milliseconds, {rounded_off(key.decimals)}.")
    return nat_problem(d, st, key, r.steps, wrongs,
                       given={"params": N, "tokens": T, "hw": hw, "chips": chips, "mfu": mfu},
                       notes=[f"$= {value:.4f}$ ms."])


def _attention_kind(n: int, g: int) -> str:
    if g == n:
        return "multi-head attention (MHA: every head has its own K and V)"
    if g == 1:
        return "multi-query attention (MQA: one K/V head shared by all query heads)"
    return f"grouped-query attention (GQA) with $G = {g}$ K/V heads"


@family("hardware.decode_attention_intensity", topic="hardware",
        title="Arithmetic intensity of attention in a decode step (MHA, GQA, MQA)",
        types=("nat",), tags=("inference", "decode", "kv-cache", "arithmetic-intensity", "gqa"), marks=2, source=_SRC,
        blind_key_ok="the lesson is that I ≈ 2·(N/G)/a: about 1 FLOP/byte for bf16 MHA and the group size for GQA, "
                     "so a key of 1 or of a number in the statement is what the student should come to expect")
def decode_attention_intensity(d: Draw) -> Problem:
    """I = 4·B·N·S·H / (a·(2·B·N·H + 2·B·G·S·H)) ≈ 2·(N/G)/a: one query per sequence reads the whole K and V cache.

    Levels (issue 12: disjoint, ordered): easy, multi-head attention (G = N) in bf16 with a short context S ≤ 96;
    medium, GQA or MQA (G < N: the K/V heads to tell from the query heads) in bf16 with S up to 4096;
    hard, fp8 (1 byte per value: the bytes convention to track as well), any of the three kinds."""
    from solver.systems.roofline import attention

    for _ in range(300):
        N = d.pick((16, 32, 64))
        G = d.pick(((N,), (8, 1), (N, 8, 1))[d.level])
        H = d.pick((64, 128))
        B = d.pick((1, 8, 16, 32))
        # issue 22: easy's key was S/(S + 1) ≈ 1.00 for S of 256 and more (one number typed won every draw); easy
        # takes short contexts, where reading Q and writing O still count: S/(S + 1) from 0.80 to 0.99
        S = d.pick((256, 512, 1024, 2048, 4096) if d.level else (4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 96))
        dtype = "fp8" if d.level == 2 else "bf16"
        r = attention(B, S, N, H, n_kv_heads=G, mode="decode", dtype=dtype)
        value = float(r.breakdown["intensity"])
        if safe_for_rounding(value, 2, 0.1):
            break
    flops, n_bytes, kv = Fraction(r.breakdown["flops"]), Fraction(r.breakdown["bytes"]), Fraction(r.breakdown["kv_bytes"])
    wrongs = [
        Wrong("used_n_heads", "used n_heads instead of n_kv_heads",
              f"Only {G} K/V head{'s' if G > 1 else ''} per layer {'are' if G > 1 else 'is'} cached and read, not {N}.",
              float(attention(B, S, N, H, n_kv_heads=N, mode="decode", dtype=dtype).breakdown["intensity"]))
        if G != N else None,
        Wrong("forgot_k_and_v", "read K only (forgot that V is cached too)",
              "Both K and V are cached and both are read every step: 2·B·G·S·H values.", float(flops / (n_bytes - kv / 2))),
        Wrong("macs_vs_flops", "counted multiply-adds, not FLOPs", "QKᵀ and A·V cost 2 FLOPs per multiply-add.",
              float(flops / 2 / n_bytes)),
        Wrong("prefill_intensity", "treated the step as a prefill (S queries)",
              "In a decode step each sequence has one new query; S queries is the prefill, which is compute-heavy.",
              float(attention(B, S, N, H, n_kv_heads=G, mode="prefill", dtype=dtype).breakdown["intensity"])),
    ]
    key = nat_key(value, 2, unit="FLOP/byte")
    a = {"bf16": 2, "fp8": 1}[dtype]
    st = Doc()
    st.p(f"One attention layer has $N = {N}$ query heads of size $H = {H}$ and uses {_attention_kind(N, G)}. "
         f"A decode step runs for a batch of $B = {B}$ sequence{'s' if B > 1 else ''}, each with $S = {S}$ cached tokens: every sequence's one new "
         f"query attends to its $S$ cached keys and values. All tensors are {dtype} ({a} byte{'s' if a > 1 else ''} per value).")
    st.p("Count the FLOPs of $QK^\\top$ and of $A \\cdot V$ (2 FLOPs per multiply-add; softmax not counted) and the HBM bytes "
         "of reading $Q$, the cached $K$ and $V$, and writing the output $O$, each once (the score matrix stays on chip). "
         "What is the arithmetic intensity (FLOPs per byte)? Round off to two decimal places.")
    steps = [s for s in r.steps if not s.formula.startswith("S where")]
    return nat_problem(d, st, key, steps, wrongs,
                       given={"batch": B, "context": S, "n_heads": N, "n_kv_heads": G, "d_head": H, "dtype": dtype},
                       notes=[f"For long contexts the K/V read dominates: $I \\approx 2 \\cdot (N/G)/a = {float(r.breakdown['intensity_kv_limit']):g}$ — "
                              "far below any accelerator's critical intensity, so decode attention is memory-bound; fewer K/V heads "
                              "(GQA/MQA) raise the intensity by $N/G$."])


_CROSS_SHAPES = ((2048, 16), (4096, 32), (5120, 40), (8192, 64))
_CROSS_HEADS = (8, 12, 16, 20, 24, 28, 32, 40, 48, 56, 64, 96)
_CROSS_HEAD_SIZES = (64, 80, 96, 128, 160)


@family("hardware.attention_crossover", topic="hardware",
        title="Context length where attention FLOPs equal the matmul FLOPs",
        types=("nat",), tags=("flops", "attention", "long-context", "gqa"), marks=2, source=_SRC)
def attention_crossover(d: Draw) -> Problem:
    """Per token and layer, attention costs 4·S·N·H; projections 4·d·H·(N + G); the FFN 2·m·d·d_ff (m = 2, or 3 for SwiGLU).

    Levels (issue 12: disjoint, ordered): easy, multi-head attention against the four projections;
    medium, GQA or MQA (G < N: the smaller K and V projections) against the four projections; hard,
    against all matmuls, the feed-forward block too (GELU or SwiGLU, one more term), any of the three kinds."""
    from solver.systems.roofline import FFN_MATRICES, attention, attention_flops

    # issue 22: many shapes (four gave four easy problems), and the head size is left for the student to work
    # out (H = d/N): with H printed, medium's S = d + G·H was d + H, one addition, for MQA.
    for _ in range(300):
        N, H = d.pick(_CROSS_HEADS), d.pick(_CROSS_HEAD_SIZES)
        dm = N * H
        G = d.pick(((N,), tuple(g for g in (1, 2, 4, 8) if g < N and N % g == 0), tuple(g for g in (N, 8, 4, 1) if N % g == 0))[d.level])
        against = "all" if d.level == 2 else "projections"
        ffn = d.pick(("gelu", "swiglu")) if against == "all" else "gelu"
        d_ff = 4 * dm if ffn == "gelu" else d.pick(((8 * dm // 3 + 255) // 256 * 256, 3 * dm))
        r = attention(1, 1, N, H, n_kv_heads=G, mode="decode", d_model=dm, d_ff=d_ff, ffn=ffn)
        field = "crossover_seq_projections" if against == "projections" else "crossover_seq_all_matmuls"
        value = float(r.breakdown[field])
        if safe_for_rounding(value, 0, 0.1):
            break

    def crossing(**kw) -> float:
        args = dict(n_kv_heads=G, d_ff=d_ff, ffn=ffn) | kw
        return float(attention(1, 1, N, H, mode="decode", d_model=dm, **args).breakdown[field])

    per_key = attention_flops(1, 1, 1, N, H)  # 4·N·H FLOPs per cached key
    other = float(r.breakdown["crossover_seq_projections"])
    wrongs = [
        Wrong("used_n_heads", "used n_heads instead of n_kv_heads for the K and V projections",
              f"K and V are projected to {G} head{'s' if G > 1 else ''}, not {N}.", crossing(n_kv_heads=N)) if G != N else None,
        Wrong("forgot_av", "counted QKᵀ only (forgot A·V)", "Attention has two matmuls per key: q·k and the weighted sum of v.",
              value * per_key / (per_key / 2)),
        Wrong("forgot_ffn", "left out the FFN", "All matmuls include the feed-forward block.", other)
        if against == "all" else None,
        Wrong("swiglu_two_matrices", "counted two FFN matrices for SwiGLU", "SwiGLU has three d×d_ff matrices (gate, up, down).",
              crossing(ffn="gelu")) if ffn == "swiglu" else None,
        Wrong("forgot_kv_projections", "counted only the Q and O projections",
              "K and V are projections too: 2·d·G·H FLOPs each per token.",
              float(Fraction(4 * dm * H * N + (FFN_MATRICES[ffn] * 2 * dm * d_ff if against == "all" else 0), per_key))),
    ]
    key = nat_key(value, 0, unit="tokens")
    ffn_text = (f"a SwiGLU feed-forward block (three $d \\times d_{{ff}}$ matrices) with $d_{{ff}} = {d_ff}$" if ffn == "swiglu"
                else f"a feed-forward block of two matrices with $d_{{ff}} = {d_ff}$")
    st = Doc()
    st.p(f"A decoder layer has $d = {dm}$, $N = {N}$ query heads of size $H = d/N$, {_attention_kind(N, G)}, and {ffn_text}. "
         "No biases.")
    goal = ("the four projections $Q, K, V, O$" if against == "projections"
            else "all of its other matmuls (the projections $Q, K, V, O$ and the feed-forward block)")
    st.p(f"For one token that attends to $S$ keys, at what $S$ do the FLOPs of $QK^\\top$ and $A \\cdot V$ equal the FLOPs of {goal}? "
         "(2 FLOPs per multiply-add; all $S$ keys counted, no causal halving.) Round off to the nearest integer.")
    steps = [s for s in r.steps if s.formula.startswith("S where")][: 1 if against == "projections" else 2]
    return nat_problem(d, st, key, steps, wrongs,
                       given={"d_model": dm, "n_heads": N, "n_kv_heads": G, "d_head": H, "d_ff": d_ff, "ffn": ffn,
                              "against": against})
