"""Interview systems questions (issue 24): FlashAttention's tiling, PagedAttention's blocks, expert
capacity and the expert-parallel all-to-all, MLA's absorbed decode, RoPE context extension, Ulysses
sequence parallelism, Gemma 2's logit soft-capping, the router losses (Switch load balancing, z-loss).

Every key is a solver figure: ``solver.systems.flash_attention``, ``solver.systems.paged_serving``,
``solver.systems.moe_systems``, ``solver.counting.mla_decode``, ``solver.kernels.rope_scaling``,
``solver.systems.context_parallel``, ``solver.kernels.softcap``, ``solver.kernels.router_loss``;
every misconception is the same solver call with the mistake applied (a floor for a ceiling, a
factor forgotten, the wrong convention), so it is computed, never typed in.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from question_bank.families.counting_common import big, nat_problem, sci
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC_FA = "issue 24; Dao et al. 2022 (FlashAttention), Algorithm 0, Algorithm 1 and Theorem 2"
_SRC_PA = "issue 24; Kwon et al. 2023 (PagedAttention / vLLM) §3, §4.2"
_SRC_MOE = "issue 24; Fedus et al. 2022 (Switch Transformer) §2.2; Lepikhin et al. 2021 (GShard)"
_SRC_MLA = "issue 24; DeepSeek-V2 (DeepSeek-AI 2024) §2.1.2-2.1.3"
_SRC_ROPE = "issue 24; Chen et al. 2023 (position interpolation); bloc97 2023 (NTK-aware); Peng et al. 2023 (YaRN)"


# ---------------------------------------------------------------------------------------
# FlashAttention
# ---------------------------------------------------------------------------------------


@family("flash.tiling_hbm", topic="attention", title="FlashAttention: block sizes, blocks and HBM traffic",
        types=("nat",), tags=("flash-attention", "hbm", "io-aware", "tiling"), marks=2, source=_SRC_FA)
def flash_tiling(d: Draw) -> Problem:
    """B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d), T_c = ⌈N/B_c⌉; HBM accesses of Algorithm 1 (reads 2Nd + T_c(2Nd + 2N),
    writes (T_c + 1)(Nd + 2N)) against Algorithm 0's 4Nd + 4N²."""
    from solver.systems.flash_attention import block_sizes, flash_attention, flash_hbm, standard_hbm

    # Levels (disjoint): easy, the number of key/value blocks T_c; medium, FlashAttention-1's HBM accesses of one
    # head (millions of elements); hard, how many times fewer accesses than standard attention (two decimals).
    for _ in range(300):
        # issue 39: any sequence length (log-uniform, 512 to 32k; a multiple of 8 above easy) and any SRAM size in
        # multiples of 1,024 elements (16k to 128k), so that keys rarely repeat across draws (with multiples of 128,
        # the short sequences of one block gave a few dozen medium keys, which a student remembered)
        N = round(d.log_uniform(512, 32768, None)) if d.level == 0 else 8 * round(d.log_uniform(64, 4096, None))
        dh = d.pick((64, 80, 96, 128))
        M = 1024 * d.pick(range(16, 129))
        br, bc = block_sizes(M, dh)
        r = flash_attention(N, dh, sram=M)
        tc = r.breakdown["col_blocks"]
        if d.level == 0:
            value = tc
            if tc in (1, N, dh, M, bc) or tc < 2:
                continue
            break
        if d.level == 1:
            value = float(r.answer) / 1e6
        else:
            value = float(r.breakdown["ratio_standard_over_flash"])
        if safe_for_rounding(value, 2, 0.1):
            break
    std = standard_hbm(N, dh)
    fl = flash_hbm(N, dh, br, bc)
    no_stats = 2 * N * dh + tc * 2 * N * dh + (tc + 1) * N * dh  # ℓ, m forgotten
    total = fl["reads"] + fl["writes"]
    fa2 = sum(flash_hbm(N, dh, br, bc, version="2").values())
    st = Doc()
    st.p(f"FlashAttention (Dao et al. 2022, Algorithm 1) runs one attention head with sequence length $N = {N}$ and "
         f"head size $d = {dh}$ on a chip with on-chip SRAM of $M = {M}$ elements. It picks blocks of "
         "$B_c = \\lceil M/4d \\rceil$ key/value rows and $B_r = \\min(\\lceil M/4d \\rceil, d)$ query rows.")
    if d.level == 0:
        st.p("Into how many key/value blocks $T_c$ is the sequence split?")
        key = nat_key(value, 0, unit="blocks")
        wrongs = [
            Wrong("forgot_four", "used B_c = ⌈M/d⌉ (forgot the 4: Q, K, V and O share the SRAM)",
                  "The SRAM holds four blocks (Q_i, K_j, V_j, O_i): B_c = ⌈M/4d⌉.", math.ceil(N / math.ceil(M / dh)),
                  inverse="used B_c = ⌈M/16d⌉ (divided by 4 twice)",
                  inverse_value=math.ceil(N / max(1, math.ceil(M / (16 * dh))))),
            Wrong("row_blocks", "divided N by B_r (the query blocks)", "T_c counts key/value blocks of B_c rows.",
                  math.ceil(N / br)) if br != bc else None,
            Wrong("floor_blocks", "rounded N/B_c down", "A last, partial block is still a block: ⌈N/B_c⌉.",
                  N // bc) if N % bc else None,
            Wrong("kv_only", "used B_c = ⌈M/2d⌉ (only K and V in the SRAM)",
                  "The SRAM holds four blocks (Q_i, K_j, V_j, O_i): B_c = ⌈M/4d⌉.", math.ceil(N / math.ceil(M / (2 * dh))),
                  inverse="used B_c = ⌈M/8d⌉ (each of the four blocks counted twice)",
                  inverse_value=math.ceil(N / max(1, math.ceil(M / (8 * dh))))),
        ]
        notes = [f"$B_c = \\lceil {M}/(4 \\times {dh}) \\rceil = {bc}$ (and $B_r = \\min({bc}, {dh}) = {br}$).",
                 f"$T_c = \\lceil {N}/{bc} \\rceil = {tc}$."]
    else:
        wrongs_common = [
            Wrong("forgot_stats", "left out the running statistics ℓ and m",
                  "Algorithm 1 reads and writes ℓ_i and m_i (N each) with O_i on every outer step.",
                  no_stats / 1e6 if d.level == 1 else (4 * N * dh + 4 * N * N) / no_stats,
                  inverse="counted the statistics ℓ and m twice", inverse_value=(2 * total - no_stats) / 1e6 if d.level == 1
                  else (4 * N * dh + 4 * N * N) / (2 * total - no_stats)),
            Wrong("q_once", "read Q and O once (FlashAttention-2's loop order)",
                  "In Algorithm 1 the outer loop is over K/V blocks: Q_i, O_i, ℓ_i, m_i are loaded again on each of "
                  "the T_c outer steps.",
                  sum(flash_hbm(N, dh, br, bc, version="2").values()) / 1e6 if d.level == 1 else
                  (4 * N * dh + 4 * N * N) / sum(flash_hbm(N, dh, br, bc, version="2").values()),
                  inverse="counted the reloads of Q, O, ℓ and m twice on each outer step",
                  inverse_value=(2 * total - fa2) / 1e6 if d.level == 1 else (4 * N * dh + 4 * N * N) / (2 * total - fa2)),
        ]
        if d.level == 1:
            st.p("Counting every element Algorithm 1 loads from or stores to HBM (line 2's initial writes of "
                 "$O$, $\\ell$, $m$ included; no dropout, no mask), how many HBM accesses does the forward pass make? "
                 "Give millions of elements, rounded off to two decimal places.")
            key = nat_key(value, 2, unit="million elements")
            no_init = sum(flash_hbm(N, dh, br, bc, count_init=False).values())
            # issue 39: at this level two small slips that go either way by nearly the same factor (ℓ, m and line
            # 2's writes); reading Q once is made its own way only here: "counted the reloads twice" adds what it
            # removes, so its two sides sat at unequal factors and the wider gap told which pair held the key
            wrongs_common[1] = dataclasses.replace(wrongs_common[1], inverse=None, inverse_value=None)
            wrongs = [*wrongs_common,
                      Wrong("forgot_init", "left out line 2's initial writes of O, ℓ and m",
                            "Line 2 writes O = 0, ℓ = 0 and m = −∞ to HBM before the loops: Nd + 2N elements.",
                            no_init / 1e6, inverse="counted line 2's initial writes of O, ℓ and m twice",
                            inverse_value=(2 * total - no_init) / 1e6),
                      Wrong("standard_count", "counted standard attention (S and P through HBM)",
                            "That is Algorithm 0's 4Nd + 4N²; Algorithm 1 never writes S or P.",
                            (std["reads"] + std["writes"]) / 1e6)]
        else:
            st.p("Standard attention (Algorithm 0) writes $S = QK^T$ and $P = \\mathrm{softmax}(S)$ to HBM and reads "
                 "them back. Counting every element each algorithm loads or stores (for Algorithm 1, line 2's initial "
                 "writes included), what is the ratio of standard attention's HBM accesses to FlashAttention's "
                 "(standard divided by FlashAttention: above 1 when FlashAttention makes fewer, below 1 when it makes "
                 "more)? Round off to two decimal places.")
            key = nat_key(value, 2, unit="times")
            wrongs = [*wrongs_common,
                      Wrong("theta_ratio", "used the orders of Theorem 2, (Nd + N²)/(N²d²/M)",
                            "Θ(·) drops the constants: count the accesses exactly.",
                            (N * dh + N * N) / (N * N * dh * dh / M))]
        notes = [f"$B_c = \\lceil {M}/{4 * dh} \\rceil = {bc}$, $B_r = {br}$, $T_c = \\lceil {N}/{bc} \\rceil = {tc}$.",
                 f"Reads: K, V once ($2Nd = {big(2 * N * dh)}$), then on each of the {tc} outer steps all of Q, O, "
                 f"ℓ, m ($2Nd + 2N = {big(2 * N * dh + 2 * N)}$): ${big(fl['reads'])}$.",
                 f"Writes: line 2 and each outer step write O, ℓ, m ($Nd + 2N = {big(N * dh + 2 * N)}$), "
                 f"{tc + 1} times: ${big(fl['writes'])}$; in all ${big(fl['reads'] + fl['writes'])}$."]
        if d.level == 2:
            notes.append(f"Standard: reads $3Nd + 2N^2 = {big(std['reads'])}$, writes $Nd + 2N^2 = "
                         f"{big(std['writes'])}$, in all ${big(std['reads'] + std['writes'])}$; ratio "
                         f"${big(std['reads'] + std['writes'])}/{big(fl['reads'] + fl['writes'])} = {value:.4f}$.")
    return nat_problem(d, st, key, [], wrongs, given={"N": N, "d": dh, "M": M}, notes=notes)


# ---------------------------------------------------------------------------------------
# PagedAttention
# ---------------------------------------------------------------------------------------


@family("paged.kv_blocks", topic="serving", title="PagedAttention: KV blocks, fragmentation, sequences that fit",
        types=("nat",), tags=("paged-attention", "vllm", "kv-cache", "serving"), marks=2, source=_SRC_PA,
        told_apart=("no_blocks", "floor_blocks"))
def paged_blocks(d: Draw) -> Problem:
    """⌈L/B⌉ blocks per sequence, ⌈L/B⌉·B − L empty slots; ⌊K/(B·X)⌋ physical blocks hold ⌊blocks/⌈L/B⌉⌋
    sequences, against ⌊K/(L_max·X)⌋ reserved at the maximum length."""
    from solver.systems.paged_serving import paged_kv

    # Levels (disjoint): easy, the empty slots of a few sequences; medium, sequences that fit paged in a budget
    # (GB); hard, how many more fit paged than reserved contiguously at the maximum length (GiB budget).
    for _ in range(300):
        B = d.pick((8, 16, 32))
        if d.level == 0:
            Ls = [d.rng.randint(20, 900) for _ in range(d.pick((3, 4)))]
            r = paged_kv(Ls, B, 1)
            value = r.breakdown["empty_slots"]
            if value > 1 and value not in Ls:
                break
            continue
        L = d.rng.randint(300, 3000)
        # issue 39: any KV footprint per token in multiples of 16 KiB (64 KiB to 640 KiB) and any budget of 8 to 80
        # units, so that keys rarely repeat across draws
        X = 16_384 * d.pick(range(4, 41))
        Lmax = d.pick((4096, 8192))
        unit = "GB" if d.level == 1 else "GiB"
        Kb = round(d.log_uniform(8, 80, None)) * (10**9 if unit == "GB" else 2**30)
        r = paged_kv([L], B, X, budget=Kb, max_len=Lmax)
        value = r.breakdown["paged_sequences"] - (r.breakdown["contiguous_sequences"] if d.level == 2 else 0)
        # hard: L not a whole number of blocks, so that rounding the blocks down is a slip of its own
        if value > 1 and value not in (L, B, Lmax) and (d.level < 2 or L % B):
            break
    st = Doc()
    if d.level == 0:
        st.p(f"A server stores the KV cache in blocks of $B = {B}$ token slots (PagedAttention); a sequence takes "
             "whole blocks, filling its last one only partly. Sequences of " + ", ".join(map(str, Ls))
             + " tokens are in the cache. How many token slots stand empty in their blocks (internal fragmentation)?")
        key = nat_key(value, 0, unit="slots")
        floor_blocks = sum((L // B) * B for L in Ls)
        wrongs = [Wrong("per_sequence_b_minus_one", "took B − 1 empty slots per sequence (the worst case)",
                        "Each sequence wastes only what its last block leaves empty: ⌈L/B⌉·B − L.", (B - 1) * len(Ls)),
                  Wrong("floor_blocks", "counted full blocks only and took the overflow as waste",
                        "The partly filled last block is allocated; its empty slots are the waste.",
                        sum(Ls) - floor_blocks)]
        notes = ["Blocks: " + ", ".join(f"$\\lceil {L}/{B} \\rceil = {math.ceil(L / B)}$" for L in Ls) + ".",
                 "Empty slots: " + " + ".join(f"({math.ceil(L / B)}·{B} − {L})" for L in Ls) + f" = {value}."]
        return nat_problem(d, st, key, [], wrongs, given={"B": B, "lengths": Ls}, notes=notes)
    nb = math.ceil(L / B)
    phys = r.breakdown["physical_blocks"]
    budget_words = f"{Kb // 10**9} GB ($10^9$ bytes each)" if unit == "GB" else f"{Kb // 2**30} GiB ($2^{{30}}$ bytes each)"
    st.p(f"A model's KV cache takes $X = {big(X)}$ bytes per token. The server has {budget_words} for the cache and "
         f"stores it in blocks of $B = {B}$ tokens (PagedAttention). Every request has exactly $L = {L}$ tokens.")
    if d.level == 1:
        st.p("How many such sequences fit in the cache at once?")
        key = nat_key(value, 0, unit="sequences")
        wrongs = [Wrong("no_blocks", "divided the budget by L·X (no block rounding)",
                        "Each sequence holds whole blocks: ⌈L/B⌉·B token slots.", int(Kb // (L * X))),
                  Wrong("contiguous", "reserved the maximum length for each sequence",
                        "Paged allocation takes only the blocks a sequence fills.",
                        r.breakdown["contiguous_sequences"])]
    else:
        st.p(f"A system without paging reserves the maximum length $L_{{max}} = {Lmax}$ for every request. How many "
             "more sequences fit at once with paging than without?")
        key = nat_key(value, 0, unit="sequences")
        gb = paged_kv([L], B, X, budget=Kb * 10**9 // 2**30, max_len=Lmax)
        big_gib = paged_kv([L], B, X, budget=Kb * 2**30 // 10**9, max_len=Lmax)
        wrongs = [Wrong("gib_as_gb", "took a GiB for 10^9 bytes", "1 GiB = 2^30 bytes.",
                        gb.breakdown["paged_sequences"] - gb.breakdown["contiguous_sequences"],
                        inverse="converted the GiB budget the wrong way (× 2^30/10^9 once more)",
                        inverse_value=big_gib.breakdown["paged_sequences"] - big_gib.breakdown["contiguous_sequences"]),
                  # issue 39: ignoring the rounding moves the count up by a part of B/L that varies with the draw, its
                  # inverse (a block too many) down by about B/L: the unequal sides told which held the key (+14
                  # points on fresh draws). Rounding the blocks down (⌊L/B⌋) and one block too many move it by
                  # about B/L either way; ignoring the rounding stays, one way only
                  Wrong("floor_blocks", "rounded the blocks per sequence down (⌊L/B⌋ blocks)",
                        "The last, partly filled block is a whole block: ⌈L/B⌉ blocks per sequence.",
                        phys // (L // B) - r.breakdown["contiguous_sequences"],
                        inverse="gave each sequence one block too many (⌈L/B⌉ + 1 blocks)",
                        inverse_value=phys // (nb + 1) - r.breakdown["contiguous_sequences"]),
                  Wrong("no_blocks", "ignored the block rounding in the paged count",
                        "Each sequence holds ⌈L/B⌉ whole blocks.", int(Kb // (L * X)) - r.breakdown["contiguous_sequences"])]
    notes = [f"Physical blocks: $\\lfloor {big(Kb)} / ({B} \\times {big(X)}) \\rfloor = {big(phys)}$.",
             f"Blocks per sequence: $\\lceil {L}/{B} \\rceil = {nb}$; sequences: $\\lfloor {phys}/{nb} \\rfloor = "
             f"{r.breakdown['paged_sequences']}$."]
    if d.level == 2:
        notes.append(f"Contiguous: $\\lfloor {big(Kb)} / ({Lmax} \\times {big(X)}) \\rfloor = "
                     f"{r.breakdown['contiguous_sequences']}$; difference {value}.")
    return nat_problem(d, st, key, [], wrongs, given={"B": B, "L": L, "X": X, "budget": Kb, "L_max": Lmax},
                       notes=notes)


# ---------------------------------------------------------------------------------------
# MoE: capacity, drops, all-to-all
# ---------------------------------------------------------------------------------------


@family("moe.capacity_all_to_all", topic="parallelism", title="Expert capacity, dropped tokens, expert-parallel all-to-all",
        types=("nat",), tags=("moe", "expert-parallel", "all-to-all", "capacity-factor"), marks=2, source=_SRC_MOE)
def moe_capacity(d: Draw) -> Problem:
    """C = ⌊cf·T/E⌋; dropped = Σ max(0, n_e − C); all-to-all bytes per device = 2·T·k·d·b·(ep − 1)/ep."""
    from solver.systems.moe_systems import expert_all_to_all, expert_capacity

    # Levels (disjoint): easy, the expert capacity; medium, the tokens dropped for a stated routing; hard, the
    # bytes each device sends per MoE layer (dispatch and combine, MB).
    for _ in range(300):
        if d.level < 2:
            E = d.pick((4, 8, 16))
            T = d.pick((64, 96, 100, 128, 200, 256, 320, 500)) if d.level == 0 else E * d.pick((6, 8, 10, 12))
            cf = d.pick((1.0, 1.25, 1.5, 2.0)) if d.level == 0 else d.pick((1.0, 1.25))
            routed = None
            if d.level == 1:
                w = [d.rng.random() ** 2 for _ in range(E)]
                counts = [int(T * x / sum(w)) for x in w]
                counts[0] += T - sum(counts)
                routed = counts
            r = expert_capacity(T, E, cf, routed=routed)
            value = r.answer
            if value > 1 and value not in (T, E) and (d.level == 0 or value != r.breakdown["capacity"]):
                break
            continue
        T = d.pick((2048, 4096, 8192))
        dm = d.pick((2048, 4096, 5120, 7168))
        k = d.pick((1, 2, 8))
        ep = d.pick((4, 8, 16, 64))
        r = expert_all_to_all(T, dm, k, ep)
        value = float(r.answer) / 1e6
        if safe_for_rounding(value, 2, 0.1):
            break
    st = Doc()
    if d.level < 2:
        C = r.breakdown["capacity"]
        st.p(f"A Switch-style MoE layer (top-1 routing) has $E = {E}$ experts and sees $T = {T}$ tokens per batch, "
             f"with capacity factor {cf:g}: each expert takes at most $C = \\lfloor \\mathrm{{cf}} \\cdot T/E "
             "\\rfloor$ tokens.")
        if d.level == 0:
            st.p("What is the expert capacity $C$ (tokens)?")
            key = nat_key(value, 0, unit="tokens")
            wrongs = [Wrong("forgot_cf", "left out the capacity factor", "C = cf·T/E.", T // E) if cf != 1 else None,
                      Wrong("ceil", "rounded up", "The capacity is rounded down (int() in the Switch code).",
                            math.ceil(cf * T / E)) if cf * T % E else None,
                      Wrong("times_E", "multiplied by the experts", "C is per expert: tokens ÷ experts × cf.",
                            int(cf * T * E))]
            notes = [f"$C = \\lfloor {cf:g} \\times {T}/{E} \\rfloor = \\lfloor {cf * T / E:g} \\rfloor = {C}$."]
        else:
            st.p("The router sends " + ", ".join(f"{n}" for n in routed) + " tokens to experts 1 … "
                 f"{E}. Tokens beyond an expert's capacity are dropped (they skip the layer). How many are dropped?")
            key = nat_key(value, 0, unit="tokens")
            no_cf = expert_capacity(T, E, 1.0, routed=routed).answer
            wrongs = [Wrong("forgot_cf", "used T/E as the capacity (forgot the capacity factor)",
                            f"C = {cf:g}·T/E.", no_cf) if cf != 1 else None,
                      Wrong("net_overflow", "subtracted total capacity from total tokens",
                            "An expert under capacity cannot take another expert's tokens: sum the overflow expert by "
                            "expert.", max(0, T - C * E))]
            notes = [f"$C = \\lfloor {cf:g} \\times {T}/{E} \\rfloor = {C}$.",
                     "Dropped: " + " + ".join(f"max(0, {n} − {C})" for n in routed) + f" = {value}."]
        return nat_problem(d, st, key, [], wrongs, given={"T": T, "E": E, "cf": cf, "routed": routed}, notes=notes)
    st.p(f"An MoE layer is spread over $ep = {ep}$ devices by expert parallelism (experts split evenly). Each device "
         f"holds $T = {T}$ tokens of width $d = {dm}$ in bf16 (2 bytes); each token goes to its top-{k} experts, "
         "chosen uniformly at random. The dispatch all-to-all sends each (token, expert) vector to the expert's "
         "device; the combine sends the results back.")
    st.p("On average, how many bytes does each device send per layer (dispatch and combine, forward pass; vectors "
         "whose expert is on the same device are not sent)? Give MB ($10^6$ bytes), rounded off to two decimal places.")
    key = nat_key(value, 2, unit="MB")
    wrongs = [Wrong("count_local", "counted the vectors that stay on the device", "A fraction 1/ep of the experts is "
                    "local: only (ep − 1)/ep of the vectors leave.",
                    float(expert_all_to_all(T, dm, k, ep, count_local=True).answer) / 1e6),
              Wrong("dispatch_only", "counted the dispatch only", "The combine sends the same volume back.",
                    float(r.answer) / 2e6),
              Wrong("forgot_top_k", "sent each token once (forgot top-k)", f"Each token goes to {k} experts.",
                    float(expert_all_to_all(T, dm, 1, ep).answer) / 1e6) if k > 1 else None]
    notes = [f"Vectors leaving a device per phase: $T \\cdot k \\cdot (ep - 1)/ep = {T} \\times {k} \\times "
             f"{ep - 1}/{ep} = {sci(T * k * (ep - 1) / ep, 6)}$.",
             f"Bytes per phase: $\\times {dm} \\times 2 = {big(int(r.breakdown['dispatch_bytes']))}$; dispatch and "
             f"combine: ${big(int(r.answer))}$ bytes $= {value:.4f}$ MB."]
    return nat_problem(d, st, key, [], wrongs, given={"T": T, "d": dm, "k": k, "ep": ep}, notes=notes)


# ---------------------------------------------------------------------------------------
# MLA decode, absorbed
# ---------------------------------------------------------------------------------------


@family("mla.absorbed_decode", topic="hardware", title="Latent attention decode: absorbed against naive FLOPs",
        types=("nat",), tags=("mla", "deepseek", "decode", "flops"), marks=2, source=_SRC_MLA)
def mla_absorbed(d: Draw) -> Problem:
    """Per layer and token, S cached latents: naive 2·S·d_c·h·(d_h + d_v) + 2·S·h·(d_h + d_R + d_v); absorbed
    2·h·d_h·d_c + 2·S·h·(2d_c + d_R) + 2·h·d_c·d_v (query, KV down and W_O shared, not counted here)."""
    from solver.counting.mla_decode import mla_decode_parts

    # Levels (disjoint): easy, the absorbed order's attention FLOPs (MFLOPs); medium, the naive order's (GFLOPs);
    # hard, how many times more the naive order spends (two decimals).
    for _ in range(300):
        h = d.pick((16, 32, 128))
        dc = d.pick((256, 512))
        dr = d.pick((32, 64))
        dh = d.pick((64, 128))
        S = d.pick((1024, 2048, 4096, 8192))
        p = mla_decode_parts(2048, h, dc, dr, dh, dh, S)
        ab, nv = sum(p["absorbed"].values()), sum(p["naive"].values())
        value = ab / 1e6 if d.level == 0 else nv / 1e9 if d.level == 1 else nv / ab
        if safe_for_rounding(value, 2, 0.1):
            break
    st = Doc()
    st.p(f"A multi-head latent attention layer (DeepSeek-V2) caches per token a latent $c$ of $d_c = {dc}$ and one "
         f"rotary key of $d_R = {dr}$ shared by its $h = {h}$ heads. Head $i$'s key is $[c W^{{UK}}_i, k^R]$ with "
         f"$W^{{UK}}_i$ of $d_c \\times d_h$, $d_h = {dh}$, and its value $c W^{{UV}}_i$ ($d_c \\times d_v$, "
         f"$d_v = {dh}$). One new token attends to $S = {S}$ cached tokens. Count 2 FLOPs per multiply-add, matmuls "
         "only, and leave out the query projection, the new token's own down-projection and $W^O$ (the same in "
         "both orders).")
    absorbed_text = ("The absorbed order maps each head's query through $W^{UK}_i$ into the latent space, scores it "
                     "against the cached latents (plus the rotary part), sums the latents with the weights, then "
                     "applies $W^{UV}_i$.")
    naive_text = ("The naive order up-projects every cached latent to each head's key and value, then runs ordinary "
                  "attention.")
    wrong_scores = 2 * S * h * (dh + dr) + 2 * S * h * dc + p["absorbed"]["q_absorb"] + p["absorbed"]["v_up"]
    if d.level == 0:
        st.p(absorbed_text + " How many FLOPs does it spend? Give MFLOPs ($10^6$), rounded off to two decimal places.")
        key = nat_key(value, 2, unit="MFLOPs")
        wrongs = [Wrong("scores_in_dh", "scored in the head size d_h instead of the latent d_c",
                        "After absorption the query lives in the latent space: each score costs d_c + d_R.",
                        wrong_scores / 1e6),
                  Wrong("no_rope", "left out the rotary part of the scores", "Each score adds q^R·k^R (d_R).",
                        (ab - 2 * S * h * dr) / 1e6),
                  Wrong("naive", "counted the naive order", "The absorbed order never up-projects the cache.",
                        nv / 1e6)]
    elif d.level == 1:
        st.p(naive_text + " How many FLOPs does it spend? Give GFLOPs ($10^9$), rounded off to two decimal places.")
        key = nat_key(value, 2, unit="GFLOPs")
        wrongs = [Wrong("k_only", "up-projected the keys only", "The values are decompressed too: W^UV on every latent.",
                        (nv - p["naive"]["v_up"]) / 1e9),
                  Wrong("one_head", "up-projected once for all heads", "Each head has its own W^UK_i and W^UV_i.",
                        (nv - (p["naive"]["k_up"] + p["naive"]["v_up"]) * (h - 1) / h) / 1e9),
                  Wrong("absorbed", "counted the absorbed order", "Naive decompresses the whole cache every step.",
                        ab / 1e9)]
    else:
        st.p(naive_text + " " + absorbed_text + " How many times more FLOPs does the naive order spend than the "
             "absorbed one? Round off to two decimal places.")
        key = nat_key(value, 2, unit="times")
        wrongs = [Wrong("scores_in_dh", "scored the absorbed order in d_h instead of d_c",
                        "After absorption each score costs d_c + d_R.", nv / wrong_scores),
                  Wrong("k_only", "decompressed only the keys in the naive order", "W^UV runs on every latent too.",
                        (nv - p["naive"]["v_up"]) / ab)]
    notes = [f"Absorbed: $2 h d_h d_c + 2 S h (2 d_c + d_R) + 2 h d_c d_v = {big(p['absorbed']['q_absorb'])} + "
             f"{big(p['absorbed']['scores'] + p['absorbed']['weighted_latents'])} + {big(p['absorbed']['v_up'])} = "
             f"{big(ab)}$."]
    if d.level >= 1:
        notes.append(f"Naive: $2 S d_c h (d_h + d_v) + 2 S h (d_h + d_R + d_v) = "
                     f"{big(p['naive']['k_up'] + p['naive']['v_up'])} + "
                     f"{big(p['naive']['scores'] + p['naive']['weighted_values'])} = {big(nv)}$.")
    if d.level == 2:
        notes.append(f"Ratio: ${big(nv)} / {big(ab)} = {value:.4f}$.")
    return nat_problem(d, st, key, [], wrongs, given={"h": h, "d_c": dc, "d_R": dr, "d_h": dh, "S": S}, notes=notes)


# ---------------------------------------------------------------------------------------
# RoPE context extension
# ---------------------------------------------------------------------------------------


@family("rope.context_extension", topic="positional", title="RoPE context extension: PI, NTK-aware base, YaRN",
        types=("nat",), tags=("rope", "long-context", "yarn", "ntk", "position-interpolation"), marks=2,
        source=_SRC_ROPE)
def rope_extension(d: Draw) -> Problem:
    """Wavelength λ_i = 2π·base^(2i/d); PI: θ_i/s; NTK-aware: base' = base·s^(d/(d−2)); YaRN: a ramp γ over the
    pair index between the pairs turning β_fast = 32 and β_slow = 1 times over the original context."""
    from solver.kernels.rope_scaling import rope_scaling

    # Levels (disjoint): easy, a pair's wavelength after position interpolation; medium, after the NTK-aware change
    # of base; hard, YaRN's frequency of a pair inside the ramp (radians per position × 10^3).
    for _ in range(300):
        dh = d.pick((16, 32, 64) if d.level < 2 else (32, 64, 128))
        s = d.pick((2, 4, 8))
        L = d.pick((2048, 4096))
        base = 10000.0
        if d.level < 2:
            i = d.rng.randint(1, dh // 2 - 1)
            r = rope_scaling(dh, base=base, method="linear" if d.level == 0 else "ntk", factor=s, original=L, pair=i)
            value = r.answer
            if safe_for_rounding(value, 1, 0.1) and 1 < value < 1e7:
                break
            continue
        r = rope_scaling(dh, base=base, method="yarn", factor=s, original=L)
        inside = [j for j, g in enumerate(r.breakdown["ramp"]) if 0 < g < 1]
        if not inside:
            continue
        i = d.pick(inside)
        value = r.breakdown["scaled_theta"][i] * 1e3
        if safe_for_rounding(value, 3, 0.1) and value > 0.01:
            break
    theta = base ** (-2 * i / dh)
    st = Doc()
    st.p(f"A model uses RoPE with base {base:g} and rotary head size $d = {dh}$: pair $i$ turns by "
         f"$\\theta_i = \\mathrm{{base}}^{{-2i/d}}$ radians per position. It was trained on $L = {L}$ tokens and is "
         f"extended by a factor $s = {s}$.")
    if d.level == 0:
        st.p(f"With position interpolation ($\\theta_i' = \\theta_i / s$), what is the wavelength (positions per full "
             f"turn) of pair $i = {i}$? Round off to one decimal place.")
        key = nat_key(value, 1, unit="positions")
        wrongs = [Wrong("no_two_pi", "took 1/θ for the wavelength (forgot 2π)", "A full turn is 2π radians: λ = 2π/θ.",
                        s / theta),
                  Wrong("times_s", "multiplied θ by s", "Interpolation slows every pair: θ/s, so λ grows by s.",
                        2 * math.pi / (theta * s)),
                  Wrong("original", "gave the original wavelength", "The interpolated pair turns s times slower.",
                        2 * math.pi / theta)]
        notes = [f"$\\theta_{i} = {base:g}^{{-{2 * i}/{dh}}} = {sci(theta, 6)}$; $\\lambda_{i} = 2\\pi/\\theta_{i} = "
                 f"{sci(2 * math.pi / theta, 6)}$.", f"Interpolated: $\\lambda_{i}' = s \\lambda_{i} = {value:.4f}$."]
    elif d.level == 1:
        nb = r.breakdown["new_base"]
        st.p(f"With the NTK-aware change of base, $\\mathrm{{base}}' = \\mathrm{{base}} \\cdot s^{{d/(d-2)}}$, what is "
             f"the wavelength of pair $i = {i}$? Round off to one decimal place.")
        key = nat_key(value, 1, unit="positions")
        wrongs = [Wrong("base_times_s", "took base·s as the new base (no exponent d/(d−2))",
                        "The exponent d/(d−2) makes the last pair interpolate by exactly s.",
                        2 * math.pi * (base * s) ** (2 * i / dh)),
                  Wrong("pi_instead", "interpolated every pair by s (position interpolation)",
                        "NTK-aware scaling stretches low pairs little and high pairs up to s.",
                        2 * math.pi * s / theta),
                  Wrong("no_two_pi", "forgot the 2π", "λ = 2π/θ'.", nb ** (2 * i / dh))]
        notes = [f"$\\mathrm{{base}}' = {base:g} \\times {s}^{{{dh}/{dh - 2}}} = {sci(nb, 7)}$.",
                 f"$\\theta_{i}' = \\mathrm{{base}}'^{{-{2 * i}/{dh}}}$, $\\lambda_{i}' = 2\\pi \\cdot "
                 f"\\mathrm{{base}}'^{{{2 * i}/{dh}}} = {value:.4f}$."]
    else:
        low, high = r.breakdown["ramp_low"], r.breakdown["ramp_high"]
        g = r.breakdown["ramp"][i]
        st.p("YaRN keeps the pairs that turn more than $\\beta_{fast} = 32$ times over $L$, interpolates "
             "($\\theta/s$) those that turn less than $\\beta_{slow} = 1$ time, and in between blends them with a "
             "linear ramp over the pair index: the ramp runs from $\\mathrm{low} = \\lfloor i(32) \\rfloor$ to "
             "$\\mathrm{high} = \\lceil i(1) \\rceil$, where $i(\\beta) = d \\ln(L/(2\\pi\\beta)) / (2 \\ln "
             "\\mathrm{base})$, $\\gamma_i = (i - \\mathrm{low})/(\\mathrm{high} - \\mathrm{low})$ clamped to [0, 1], "
             "and $\\theta_i' = (1 - \\gamma_i)\\theta_i + \\gamma_i \\theta_i / s$.")
        st.p(f"What is $\\theta_{{{i}}}'$? Give it in units of $10^{{-3}}$ radians per position, rounded off to three "
             "decimal places.")
        key = nat_key(value, 3, unit="10^-3 rad/position")
        wrongs = [Wrong("ramp_inverted", "weighted the interpolated frequency by 1 − γ",
                        "γ = 1 at the slow end means fully interpolated: θ' = (1 − γ)θ + γθ/s.",
                        ((g * theta) + (1 - g) * theta / s) * 1e3),
                  Wrong("pi_instead", "interpolated the pair fully (θ/s)", "Inside the ramp the pair is only partly "
                        "interpolated.", theta / s * 1e3),
                  Wrong("no_truncate", "did not floor/ceil the ramp ends", "The ends are floored and ceiled (HF's "
                        "default).", rope_scaling(dh, base=base, method="yarn", factor=s, original=L,
                                                  truncate=False).breakdown["scaled_theta"][i] * 1e3)]
        notes = [f"$i(32) = {dh} \\ln({L}/(2\\pi \\cdot 32)) / (2 \\ln {base:g})$ → low = {low}; $i(1)$ → high = {high}.",
                 f"$\\gamma_{{{i}}} = ({i} - {low})/({high} - {low}) = {g:.6g}$; $\\theta_{{{i}}} = {sci(theta, 6)}$.",
                 f"$\\theta_{{{i}}}' = (1 - {g:.6g}) \\cdot {sci(theta, 6)} + {g:.6g} \\cdot {sci(theta, 6)}/{s} = "
                 f"{sci(value / 1e3, 6)}$ = {value:.5f} × 10^-3."]
    return nat_problem(d, st, key, [], wrongs, given={"d": dh, "s": s, "L": L, "pair": i}, notes=notes)


# ---------------------------------------------------------------------------------------
# Online softmax
# ---------------------------------------------------------------------------------------

_SRC_OSM = "issue 24; Milakov & Gimelshein 2018 (online softmax); Dao et al. 2022 Algorithm 1 lines 9-12"


@family("flash.online_softmax", topic="attention", title="Online softmax over two blocks (FlashAttention's inner loop)",
        types=("nat",), tags=("flash-attention", "online-softmax", "softmax"), marks=2, source=_SRC_OSM)
def online_softmax_two_blocks(d: Draw) -> Problem:
    """m₂ = max(m₁, max x₂); ℓ₂ = e^(m₁ − m₂)·ℓ₁ + Σ e^(x₂ − m₂); o₂ = e^(m₁ − m₂)·o₁ + Σ e^(x₂ − m₂)·v; the
    weights e^(x − m₂)/ℓ₂ and the output o₂/ℓ₂ are the full softmax's."""
    from solver.kernels.online_softmax import online_softmax

    # Levels (disjoint): easy, the running sum ℓ after the second block; medium, the final weight of one score;
    # hard, the attention output (one value per key) after the two blocks.
    for _ in range(300):
        b1 = [d.rng.randint(-3, 2) for _ in range(2)]
        b2 = [d.rng.randint(-2, 4) for _ in range(2)]
        if max(b2) <= max(b1):
            continue  # the second block must raise the maximum: the rescale is the point
        vals = [[d.rng.randint(-4, 6)] for _ in range(4)] if d.level == 2 else None
        r = online_softmax([b1, b2], vals)
        j = d.rng.randint(0, 3)
        value = (r.breakdown["final_sum"] if d.level == 0 else r.answer[j] if d.level == 1
                 else r.breakdown["output"][0])
        printed = b1 + b2 + ([v[0] for v in vals] if vals else [])
        if safe_for_rounding(value, 3, 0.1) and abs(value) > 0.001 and round(value, 3) not in printed:
            break
    m1, m2 = max(b1), max(b1 + b2)
    l1 = r.breakdown["blocks"][0]["l"]
    new = sum(math.exp(x - m2) for x in b2)
    st = Doc()
    st.p(f"One query's scores arrive in two blocks, $x^{{(1)}} = ({b1[0]}, {b1[1]})$ then $x^{{(2)}} = ({b2[0]}, "
         f"{b2[1]})$, and are softmaxed online as in FlashAttention: after each block the running maximum $m$ and "
         "the running sum $\\ell = \\sum e^{x - m}$ are updated, the old sum (and partial output) rescaled by "
         "$e^{m_{old} - m_{new}}$.")
    if d.level == 0:
        st.p("What is $\\ell$ after the second block? Round off to three decimal places.")
        key = nat_key(value, 3)
        wrongs = [Wrong("no_rescale", "added the new terms to the old sum without rescaling it",
                        "The old sum was taken at the old maximum: multiply it by e^(m₁ − m₂).", l1 + new),
                  Wrong("rescale_up", "rescaled by e^(m₂ − m₁)", "The maximum grew: old terms shrink, e^(m₁ − m₂) < 1.",
                        math.exp(m2 - m1) * l1 + new),
                  Wrong("block_max", "took each block's terms at its own maximum",
                        "Every term must be at the same (final) maximum m₂.",
                        l1 + sum(math.exp(x - max(b2)) for x in b2) if max(b2) != m2 else None)]
        wrongs = [w for w in wrongs if w.value is not None]
    elif d.level == 1:
        st.p(f"At the end the weight of a score $x$ is $e^{{x - m}}/\\ell$. What is the weight of score number {j + 1} "
             f"(the value {(b1 + b2)[j]})? Round off to three decimal places.")
        key = nat_key(value, 3)
        x = (b1 + b2)[j]
        wrongs = [Wrong("no_rescale", "divided by a sum whose first block was not rescaled",
                        "ℓ₁ was taken at m₁: rescale it by e^(m₁ − m₂) before adding block 2.",
                        math.exp(x - m2) / (l1 + new)),
                  Wrong("rescale_up", "divided by a sum whose first block was rescaled by e^(m₂ − m₁)",
                        "The maximum grew: the old terms shrink, multiply ℓ₁ by e^(m₁ − m₂) < 1.",
                        math.exp(x - m2) / (math.exp(m2 - m1) * l1 + new)),
                  Wrong("block_weight", "normalised within the score's own block",
                        "The weights are over the whole row: divide by the final ℓ.",
                        math.exp(x - max(b1 if j < 2 else b2)) / sum(math.exp(y - max(b1 if j < 2 else b2))
                                                                     for y in (b1 if j < 2 else b2)))]
    else:
        v = [row[0] for row in vals]
        st.p(f"The keys' values are $v = ({', '.join(map(str, v))})$ (one number per key, in order). The partial output "
             "$o = \\sum e^{x - m} v$ is kept unnormalised and divided by $\\ell$ at the end. What is the attention "
             "output after the two blocks? Round off to three decimal places.")
        key = nat_key(value, 3)
        o1 = sum(math.exp(x - m1) * vv for x, vv in zip(b1, v[:2], strict=True))
        o_new = sum(math.exp(x - m2) * vv for x, vv in zip(b2, v[2:], strict=True))
        l2 = r.breakdown["final_sum"]
        wrongs = [Wrong("no_rescale_o", "did not rescale the partial output",
                        "o₁ was taken at m₁ too: multiply it by e^(m₁ − m₂).", (o1 + o_new) / l2),
                  Wrong("average_blocks", "averaged the two blocks' outputs",
                        "Blocks are not equal in weight: combine them through m and ℓ.",
                        (o1 / l1 + o_new / new) / 2)]
    notes = [f"Block 1: $m_1 = {m1}$, $\\ell_1 = " + " + ".join(f"e^{{{x - m1}}}" for x in b1) + f" = {l1:.6f}$.",
             f"Block 2: $m_2 = \\max({m1}, {max(b2)}) = {m2}$; rescale $e^{{{m1 - m2}}} = {math.exp(m1 - m2):.6f}$; "
             f"$\\ell_2 = {math.exp(m1 - m2):.6f} \\times {l1:.6f} + " + " + ".join(f"e^{{{x - m2}}}" for x in b2)
             + f" = {r.breakdown['final_sum']:.6f}$."]
    if d.level >= 1:
        notes.append("The same as the full softmax: every term is now $e^{x - m_2}$.")
    if d.level == 1:
        notes.append(f"Weight: $e^{{{(b1 + b2)[j]} - {m2}}} / {r.breakdown['final_sum']:.6f} = {value:.6f}$.")
    if d.level == 2:
        notes.append(f"$o_1 = {o1:.6f}$; $o_2 = e^{{{m1 - m2}}} \\cdot {o1:.6f} + {o_new:.6f} = "
                     f"{math.exp(m1 - m2) * o1 + o_new:.6f}$; output $o_2/\\ell_2 = {value:.6f}$.")
    return nat_problem(d, st, key, [], wrongs, given={"block1": b1, "block2": b2, "values": vals, "pick": j},
                       notes=notes)


# ---------------------------------------------------------------------------------------
# Ring attention
# ---------------------------------------------------------------------------------------

_SRC_RING = "issue 24; Liu et al. 2023 (Ring Attention with Blockwise Transformers)"


@family("context.ring_attention", topic="parallelism", title="Ring attention: bytes per step and when they hide",
        types=("nat",), tags=("ring-attention", "context-parallel", "long-context", "overlap"), marks=2,
        source=_SRC_RING)
def ring_overlap(d: Draw) -> Problem:
    """Per step a device sends 2·c·h_kv·d_h·b bytes (its K and V block) while computing 4·c²·h·d_h FLOPs; the send
    hides when c ≥ c* = F·h_kv·b/(2·h·β)."""
    from solver.systems.context_parallel import ring_attention

    # Levels (disjoint): easy, the bytes sent per step (MB); medium, one step's time with the send overlapped (ms);
    # hard, the smallest chunk per device whose send hides (grouped K/V heads, tokens, rounded up).
    for _ in range(300):
        # issue 39: chunks, heads, chip and link figures drawn wide (log-uniform where they multiply into the key), so
        # that keys rarely repeat across draws and a slip's factor leaves no trace in the key's size
        P = d.pick((2, 4, 8, 16, 32, 64))
        c = 256 * round(d.log_uniform(4, 256, None)) if d.level < 2 else 1024
        h = d.pick((16, 24, 32, 40, 48, 64, 96, 128))
        hk = h if d.level < 2 else d.pick(tuple(k for k in (1, 2, 4, 8, 16) if k < h))
        dh = d.pick((64, 80, 96, 128)) if d.level == 0 else 128
        F = d.log_uniform(100, 2000) * 10**12
        beta = d.log_uniform(10, 900) * 10**9
        r = ring_attention(P * c, P, h, dh, kv_heads=hk, link_bandwidth=beta, peak_flops=F)
        if d.level == 0:
            value = float(r.answer) / 1e6
        elif d.level == 1:
            value = float(max(r.breakdown["compute_s"], r.breakdown["send_s"])) * 1e3
            # issue 39: one side clearly sets the step (the other at most a tenth of it, below): adding the two, or taking
            # the longer minus the shorter, then moves the key by nearly one factor either way, and each ×2 slip
            # (one matmul, K only) falls on the side that sets it; with the two sides close, the difference sat far
            # below the key and the sum at most twice above it, and the wider gap told which pair held the key; and at
            # least 0.3 ms, so that two slips down (a fifth and a half of it) still read as a number, not 0.00 ms
            tc_s, tm_s = float(r.breakdown["compute_s"]), float(r.breakdown["send_s"])
            # issue 39 (round 3): the shorter side at most a tenth of the longer (s), rarely near a tenth: the sum moves
            # the key up by 1 + s, the difference down by 1 − s, a larger step in log space; with s up to a fifth, and
            # as often near its top as lower, a gap between the near options wider than any sum gives was a difference
            # (the key the upper one); and at least 0.05 ms, so that both still differ from the key when rounded
            s = min(tc_s, tm_s) / max(tc_s, tm_s)
            if s > 0.1 or (s > 0.06 and d.rng.random() < (s - 0.06) / 0.04) or min(tc_s, tm_s) < 5e-5 or value < 0.3:
                continue
        else:
            value = math.ceil(r.breakdown["min_chunk_to_hide"])
        # issue 39: at medium the third decimal as far from 0 as from 5 (safe from x.xx5 only, the key's text was exactly
        # half its ×2 option's in 5 draws of 8, the other pair's in 1 of 2, which told the key's pair)
        if (d.level == 2 and value > 2 and value not in (P, h, hk, dh)) or (d.level < 2 and safe_for_rounding(value, 2, 0.1)
                                                                            and (d.level == 0 or safe_for_rounding(value + 0.005, 2, 0.1))):
            break
    N = P * c
    st = Doc()
    spread = (f"a sequence of $N = {N}$ tokens over $P = {P}$ devices ($c = N/P$ tokens each)" if d.level < 2 else
              "a long sequence over devices, $c$ tokens each")
    st.p(f"Ring attention spreads {spread}. Each "
         f"layer has $h = {h}$ query heads and $h_{{kv}} = {hk}$ key/value heads of size $d_h = {dh}$, in bf16 (2 "
         "bytes). At each step a device computes its query block's attention against the K/V block it holds "
         "($4 c^2 h d_h$ FLOPs: $QK^T$ and $AV$, no mask) while it sends that K/V block to the next device.")
    if d.level == 0:
        st.p("How many bytes does a device send per step? Give MB ($10^6$ bytes), rounded off to two decimal places.")
        key = nat_key(value, 2, unit="MB")
        wrongs = [Wrong("k_only", "sent K only", "The block passed on holds K and V.", value / 2,
                        inverse="counted K and V twice each (a factor 4)"),
                  Wrong("whole_sequence", "sent K/V of the whole sequence", "A device holds and sends its block of "
                        "c = N/P tokens.", value * P),
                  Wrong("query_heads", "used the query heads for K/V", "K/V have h_kv heads.", value * h / hk)
                  if hk != h else None]
        notes = [f"$c = {N}/{P} = {c}$; bytes $= 2 \\cdot c \\cdot h_{{kv}} \\cdot d_h \\cdot 2 = 2 \\times {c} \\times "
                 f"{hk} \\times {dh} \\times 2 = {big(int(r.answer))}$ = {value:.4f} MB."]
    elif d.level == 1:
        st.p(f"Each device runs at $F = {F / 1e12:g}$ TFLOP/s and its link sends $\\beta = {beta / 1e9:g}$ GB/s. How long "
             "does one ring step take when the send overlaps the compute? Give milliseconds, rounded off to two "
             "decimal places.")
        key = nat_key(value, 2, unit="ms")
        tc, tm = float(r.breakdown["compute_s"]) * 1e3, float(r.breakdown["send_s"]) * 1e3
        wrongs = [Wrong("no_overlap", "added compute and send", "They overlap: the step takes the longer of the two.",
                      tc + tm, inverse="took the longer minus the shorter (the overlap subtracted)",
                      inverse_value=abs(tc - tm)),
                  Wrong("send_only", "took the send time", "The compute is part of the step.", tm) if tm < tc else
                  Wrong("compute_only", "took the compute time", "The send is longer: it sets the step.", tc),
                  Wrong("k_only", "sent K only", "The block passed on holds K and V.", max(tc, tm / 2),
                        inverse="sent K and V twice each", inverse_value=max(tc, 2 * tm)),
                  Wrong("one_matmul", "counted 2c²hd_h FLOPs (QKᵀ only)", "AV is a second matmul of the same size: "
                        "4c²hd_h.", max(tc / 2, tm), inverse="counted 8c²hd_h FLOPs (each matmul twice)",
                        inverse_value=max(2 * tc, tm))]
        notes = [f"Compute: $4 \\times {c}^2 \\times {h} \\times {dh} / {F:.3g} = {tc:.5f}$ ms.",
                 f"Send: $2 \\times {c} \\times {hk} \\times {dh} \\times 2 / {beta:.3g} = {tm:.5f}$ ms.",
                 f"Step: the longer, {value:.5f} ms."]
    else:
        st.p(f"Each device runs at $F = {F / 1e12:g}$ TFLOP/s and its link sends $\\beta = {beta / 1e9:g}$ GB/s. What "
             "is the smallest chunk $c$ (tokens per device) for which the send hides behind the compute (takes no longer "
             "than it)? Give a whole number of tokens.")
        key = nat_key(value, 0, unit="tokens")
        cstar = float(r.breakdown["min_chunk_to_hide"])
        wrongs = [Wrong("query_heads", "used the query heads for K/V (as if no GQA)", "K/V have h_kv heads.",
                        math.ceil(cstar * h / hk)),
                  Wrong("k_only", "counted K only in the send", "K and V are both sent.", math.ceil(cstar / 2),
                        inverse="counted K and V twice each in the send", inverse_value=math.ceil(2 * cstar)),
                  Wrong("floor", "rounded down", "Below c* the send is exposed: round up.", math.floor(cstar),
                        inverse="rounded up and added one (⌈c*⌉ + 1)", inverse_value=math.ceil(cstar) + 1)
                  if cstar != int(cstar) else None]
        notes = ["Hide when $4 c^2 h d_h / F \\ge 2 c h_{kv} d_h b / \\beta$, i.e. $c \\ge F h_{kv} b / (2 h \\beta)$.",
                 f"$c^* = {F:.3g} \\times {hk} \\times 2 / (2 \\times {h} \\times {beta:.3g}) = {cstar:.4f}$; rounded up: "
                 f"{value}.",
                 f"Check at $c = {value}$: compute $4 c^2 h d_h / F = {4 * value**2 * h * dh / F * 1e3:.5f}$ ms, send "
                 f"$2 c h_{{kv}} d_h \\cdot 2 / \\beta = {4 * value * hk * dh / beta * 1e3:.5f}$ ms.",
                 "With grouped K/V heads ($h_{kv} < h$) the block sent is smaller, so shorter chunks already hide."]
    given = {"N": N, "P": P} if d.level < 2 else {}
    return nat_problem(d, st, key, [], wrongs, given={**given, "h": h, "h_kv": hk, "d_h": dh, "F": F, "beta": beta},
                       notes=notes)


# ---------------------------------------------------------------------------------------
# Static against continuous batching
# ---------------------------------------------------------------------------------------

_SRC_BATCH = "issue 24; Yu et al. 2022 (Orca: iteration-level scheduling); Kwon et al. 2023 (vLLM)"


@family("serving.continuous_batching", topic="serving", title="Static against continuous batching",
        types=("nat",), tags=("serving", "continuous-batching", "static-batching", "throughput"), marks=2,
        source=_SRC_BATCH)
def continuous_batching(d: Draw) -> Problem:
    """Static: batches of B in order, each as long as its longest request; continuous: a freed slot takes the next
    request at the next iteration. A request wanting o tokens holds a slot for o iterations."""
    from solver.systems.paged_serving import batching

    # Levels (disjoint): easy, the iterations static batching needs; medium, those continuous batching needs;
    # hard, continuous batching's throughput over static's when each prefill stalls its iteration.
    for _ in range(300):
        B = d.pick((2, 3))
        n = d.pick((5, 6, 7))
        # issue 39: easy and medium draw output lengths from 16 to 400 tokens (a chat reply's range), so that the
        # iteration counts are not a pool of a few dozen small numbers; hard keeps its short requests
        outs = [d.rng.randint(1, 12) if d.level == 2 else d.rng.randint(16, 400) for _ in range(n)]
        tp = 0 if d.level < 2 else d.pick((1, 2, 3))
        r = batching(outs, B, 1, t_prefill=tp)
        static_it, cont_it = r.breakdown["static_iterations"], r.breakdown["iterations"]
        value = static_it if d.level == 0 else cont_it if d.level == 1 else float(r.breakdown["continuous_speedup"])
        # issue 39: nor a key that one operation on two printed numbers gives (two requests' lengths added: a student
        # spots the sum without scheduling anything); the key is then a sum of three or more lengths
        printed = [B, n, *outs]
        one_op = {f(a, b) for a, b in itertools.permutations(printed, 2)
                  for f in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b)} | {2 * a for a in printed}
        if (d.level < 2 and value not in outs and value not in (B, n) and static_it != cont_it
                and value not in one_op):
            break
        if d.level == 2 and safe_for_rounding(value, 2, 0.1) and abs(value - 1) > 0.02:
            break
    st = Doc()
    st.p(f"A server has $B = {B}$ slots. {n} requests wait at time 0, in this order, wanting "
         + ", ".join(map(str, outs)) + " output tokens. Each iteration gives every running request one token (a "
         "request's first iteration, its prefill, gives its first token), so a request wanting $o$ tokens holds a "
         "slot for $o$ iterations.")
    perfect = -(-sum(outs) // B)
    def prefill_off_by_one(count: str) -> Wrong:
        """o − 1 iterations per request, or o + 1: the schedule's ``count`` (static or continuous) either way."""
        return Wrong("decode_only", "counted o − 1 iterations per request (left out the prefill's token)",
                     "The prefill iteration gives the first token: a request holds its slot for o iterations.",
                     batching([o - 1 for o in outs], B, 1).breakdown[count],
                     inverse="counted o + 1 iterations per request (a prefill iteration before the first token)",
                     inverse_value=batching([o + 1 for o in outs], B, 1).breakdown[count])

    if d.level == 0:
        st.p("With static batching (the first B requests run together; the next batch starts only when all of them "
             "have finished), how many iterations does it take to serve every request?")
        key = nat_key(value, 0, unit="iterations")
        mean_batches = sum(round(sum(outs[k:k + B]) / len(outs[k:k + B])) for k in range(0, n, B))
        batches = -(-n // B)
        # issue 39: the two off-by-one slips come with their real inverses (each moves the key by a count that varies
        # with the draw, either way), so that the options sit around the key; the mean and perfect-packing slips stay
        # for the grader's diagnosis
        wrongs = [prefill_off_by_one("static_iterations"),
                  Wrong("batch_gap", "left an idle iteration between one batch and the next",
                        "The next batch starts in the iteration right after the last one ends.", value + batches - 1,
                        inverse="started the next batch in the iteration the last one ended",
                        inverse_value=value - (batches - 1)),
                  Wrong("mean_not_max", "took each batch's mean length", "A static batch lasts as long as its "
                        "longest request.", mean_batches),
                  Wrong("perfect_packing", "divided the tokens by the slots", "That is perfect packing, which static "
                        "batching does not do.", perfect)]
        notes = ["Batches: " + "; ".join(f"{outs[k:k + B]} → {max(outs[k:k + B])}" for k in range(0, n, B)) + ".",
                 f"Total: {value} iterations."]
    elif d.level == 1:
        st.p("With continuous batching (a slot freed at the end of an iteration takes the next waiting request in "
             "the following iteration), how many iterations does it take to serve every request?")
        key = nat_key(value, 0, unit="iterations")
        # issue 39: the two off-by-one slips come with their real inverses (each moves the key by a count that varies
        # with the draw, either way), so that the options sit around the key; static batching and perfect packing
        # stay for the grader's diagnosis
        def refilled(step: int) -> int:
            return batching(outs[:B] + [o + step for o in outs[B:]], B, 1).breakdown["iterations"]

        wrongs = [prefill_off_by_one("iterations"),
                  Wrong("refill_gap", "left a freed slot idle for one iteration before it takes the next request",
                        "The freed slot takes the next request in the very next iteration.", refilled(1),
                        inverse="let a freed slot take the next request in the iteration it was freed",
                        inverse_value=refilled(-1)),
                  Wrong("perfect_packing", "divided the tokens by the slots", "Slots idle at the end, while the last "
                        "requests finish.", perfect),
                  Wrong("static", "batched statically", "Continuous batching refills a slot at once.", static_it)]
        from solver.systems.paged_serving import schedule

        start = {}
        for it, (joined, _) in enumerate(schedule(outs, B, "continuous"), start=1):
            for i in joined:
                start[i] = it
        notes = ["Fill slots as they free up: each request starts at the earliest free slot and holds it for its "
                 "length.",
                 "Requests (start–end iteration): " + "; ".join(f"{i + 1}: {start[i]}–{start[i] + o - 1}"
                                                               for i, o in enumerate(outs)) + ".",
                 f"The last request ends after iteration {value} (static batching: {static_it})."]
    else:
        st.p(f"An iteration takes 1 time unit plus {tp} unit(s) for each request whose prefill runs in it (the batch "
             "waits for the prefills). Static batching starts the next batch only when all of the current one have "
             "finished; continuous batching refills a freed slot at the next iteration. How many times higher is "
             "continuous batching's throughput (tokens per unit time)? Round off to two decimal places.")
        key = nat_key(value, 2, unit="times")
        free = batching(outs, B, 1)
        wrongs = [Wrong("no_prefill_cost", "ignored the prefill cost", "Both schedules pay one prefill per request, "
                        "but it changes the times they are compared on.", float(free.breakdown["continuous_speedup"]))
                  if abs(float(free.breakdown["continuous_speedup"]) - value) > 0.01 else None,
                  Wrong("iterations_ratio", "compared iteration counts", "Iterations with prefills take longer.",
                        static_it / cont_it)]
        notes = [f"Static: {static_it} iterations + {n} prefills × {tp} = {float(r.breakdown['static_makespan_s']):g} "
                 "units.",
                 f"Continuous: {cont_it} iterations + {n} × {tp} = {float(r.breakdown['makespan_s']):g} units.",
                 f"Same tokens ({sum(outs)}): ratio {float(r.breakdown['static_makespan_s']):g} / "
                 f"{float(r.breakdown['makespan_s']):g} = {value:.4f}."]
    return nat_problem(d, st, key, [], wrongs, given={"B": B, "outputs": outs, "t_prefill": tp}, notes=notes)


# ---------------------------------------------------------------------------------------
# Prefill/decode disaggregation
# ---------------------------------------------------------------------------------------

_SRC_DISAGG = "issue 24; DistServe (Zhong et al. 2024); Splitwise (Patel et al. 2024)"


@family("serving.disaggregation", topic="serving", title="Prefill/decode disaggregation: the KV cache handed over",
        types=("nat",), tags=("serving", "disaggregation", "kv-cache", "interconnect"), marks=2, source=_SRC_DISAGG)
def disaggregation_handover(d: Draw) -> Problem:
    """Bytes = P·2·L·h_kv·d_h·b; time = bytes/β; sent layer by layer as the prefill goes, the last share ends at
    max(t_p/L + L·s, t_p + s) with s = bytes/(L·β), so only that minus t_p is exposed."""
    from solver.systems.inference import kv_bytes_per_token
    from solver.systems.paged_serving import disaggregation

    # Levels (disjoint): easy, the KV bytes one prompt hands over (GB); medium, the time over the link (ms); hard,
    # the time left exposed when each layer's K, V leave as soon as that layer's prefill is done (ms).
    for _ in range(300):
        # issue 39: any layer count, prompt length, link and prefill time (log-uniform, two significant figures), so
        # that keys rarely repeat across draws
        L = d.pick(range(16, 97))
        hk = d.pick((1, 2, 4, 8, 16))
        dh = d.pick((64, 80, 96, 128, 256))
        # prompts of any length (powers of two made every 2^30 slip a round number, told apart by its digits)
        P = round(d.log_uniform(1000, 32000, 3))
        beta = d.log_uniform(10, 400, 2) * 10**9
        tpf = d.log_uniform(0.05, 2.0, 2)
        X = kv_bytes_per_token(L, hk, dh, "bf16")
        r = disaggregation(P, X, beta, n_layers=L, prefill_time=tpf)
        value = (float(r.breakdown["kv_bytes"]) / 1e9 if d.level == 0 else float(r.answer) * 1e3 if d.level == 1
                 else float(r.breakdown["layerwise_exposed_s"]) * 1e3)
        # easy: three decimals of a GB (issue 39: two decimals of the many prompts of a few tenths of a GB repeated
        # across draws, and a student who remembered earlier keys picked them)
        dec = 3 if d.level == 0 else 2
        # the 2^30 slip a whole number ("1.00 GB") is the odd one out
        slip = value * 1e9 / 2**30
        if round(slip, dec) == round(slip):
            continue
        # hard: at least 0.5 ms (a share of a few hundredths of a ms, given to two decimals, is one digit)
        if safe_for_rounding(value, dec, 0.1) and value > (0.5 if d.level == 2 else 0.05):
            break
    nbytes = float(r.breakdown["kv_bytes"])
    st = Doc()
    st.p(f"A prefill machine processes a prompt of $P = {P}$ tokens for a model with $L = {L}$ layers, "
         f"$h_{{kv}} = {hk}$ key/value heads of size $d_h = {dh}$, KV cache in bf16 (2 bytes), and hands the whole KV "
         "cache to a decode machine.")
    if d.level == 0:
        st.p("How many bytes does it send? Give GB ($10^9$ bytes), rounded off to three decimal places.")
        key = nat_key(value, dec, unit="GB")
        wrongs = [Wrong("forgot_kv_two", "forgot the factor 2 (K and V)", "Both K and V are cached.", value / 2,
                        inverse="counted K and V twice each (a factor 4)"),
                  Wrong("gib", "divided by 2^30", "GB is 10^9 bytes.", nbytes / 2**30,
                        inverse="multiplied the GB by 1.0737 (converted GiB to GB the wrong way)"),
                  Wrong("one_layer", "counted one layer", "Every layer has its own K and V.", value / L)]
        notes = [f"Per token: $2 \\cdot L \\cdot h_{{kv}} \\cdot d_h \\cdot 2 = 2 \\times {L} \\times {hk} \\times {dh} "
                 f"\\times 2 = {big(int(X))}$ bytes.", f"Prompt: ${P} \\times {big(int(X))} = {big(int(nbytes))}$ bytes "
                 f"= {value:.4f} GB."]
    else:
        st.p(f"The link between the machines carries $\\beta = {beta / 1e9:g}$ GB/s ($10^9$ bytes per second; no latency).")
        tm = nbytes / beta * 1e3
        if d.level == 1:
            st.p("How long does the transfer take after the prefill? Give milliseconds, rounded off to two decimal "
                 "places.")
            key = nat_key(value, 2, unit="ms")
            wrongs = [Wrong("bits", "took the link figure in bits per second", "GB/s is bytes per second.", tm * 8,
                            inverse="divided the time by 8 (took the bytes for bits)"),
                      Wrong("forgot_kv_two", "sent K only", "K and V are both sent.", tm / 2,
                            inverse="counted K and V twice each (a factor 4)"),
                      Wrong("gib", "took a GB as 2^30 bytes", "GB/s is 10^9 bytes per second.", tm * 1e9 / 2**30,
                            inverse="converted β to GiB/s (÷ 1.0737) but counted the bytes in GB (mixed GiB and GB)")]
            notes = [f"Bytes: $P \\cdot 2 L h_{{kv}} d_h \\cdot 2 = {big(int(nbytes))}$.",
                     f"Time: ${big(int(nbytes))} / {beta:.3g} = {tm:.5f}$ ms."]
        else:
            st.p(f"The prefill takes {tpf:g} s, spread evenly over the layers; each layer's K and V are sent as soon as "
                 "that layer is done, one layer's share after another on the link. How long after the prefill ends "
                 "does the last byte arrive? Give milliseconds, rounded off to two decimal places.")
            key = nat_key(value, 2, unit="ms")
            share = tm / L
            tp_ms = tpf * 1e3

            def exposed(t_all: float) -> float:
                # the last share ends at max(first share ready + every share queued, prefill end + one share)
                return max(tp_ms / L + t_all, tp_ms + t_all / L) - tp_ms

            wrongs = [Wrong("no_overlap", "sent everything after the prefill", "Layers leave while later layers are "
                            "still being prefilled.", tm),
                      Wrong("one_share_always", "took one layer's share as the exposed time",
                            "When the link is slower than the prefill, the shares queue up.", share)
                      if abs(share - value) > 0.01 else None,
                      Wrong("forgot_kv_two", "sent K only (forgot the factor 2)", "Each layer sends both its K and its "
                            "V: twice the bytes of K alone.", exposed(tm / 2)),
                      Wrong("gib", "took a GB/s as 2^30 bytes per second", "GB/s is 10^9 bytes per second.",
                            exposed(tm * 1e9 / 2**30)),
                      Wrong("transfer_minus_prefill", "took the transfer time minus the prefill time",
                            "The first layer's K and V leave only once that layer is prefilled (at t_p/L), the last "
                            "layer's only after the prefill: the last byte arrives at max(t_p/L + L·s, t_p + s).",
                            tm - tp_ms) if tm > tp_ms else None]
            notes = [f"Bytes: ${big(int(nbytes))}$; all at once: {tm:.5f} ms; one layer's share: $s = {share:.5f}$ ms.",
                     f"Layer $l$ is ready at $l \\cdot {tpf * 1e3:g}/{L}$ ms; with the shares queued, the last ends at "
                     f"$\\max(t_p/L + L s, t_p + s)$.",
                     f"$= \\max({tpf * 1e3 / L:.5f} + {tm:.5f}, {tpf * 1e3:g} + {share:.5f})$ ms; minus "
                     f"$t_p$: {value:.5f} ms."]
    return nat_problem(d, st, key, [], wrongs, given={"P": P, "L": L, "h_kv": hk, "d_h": dh, "beta": beta,
                                                      "t_prefill": tpf}, notes=notes)


# ---------------------------------------------------------------------------------------
# Sliding-window stacks: receptive field, attention sinks
# ---------------------------------------------------------------------------------------

_SRC_WIN = "issue 24; Mistral 7B (Jiang et al. 2023) §2; StreamingLLM (Xiao et al. 2023)"


@family("window.receptive_field", topic="attention", title="Receptive field of stacked sliding windows, with sinks",
        types=("nat",), tags=("sliding-window", "receptive-field", "attention-sinks", "long-context"), marks=2,
        source=_SRC_WIN)
def window_receptive_field(d: Draw) -> Problem:
    """Each windowed layer reaches W − 1 positions further back (the window counts the query itself), so after L
    layers the field is L·(W − 1) positions (Mistral's 'k × W' counts L·W); s sink tokens stay visible to all."""
    from solver.counting.window import window_stack

    # Levels (disjoint): easy, the receptive field; medium, the earlier positions of a sequence that cannot
    # influence its last token; hard, the same with attention sinks kept in every window.
    for _ in range(300):
        L = d.pick((2, 3, 4, 6, 8, 12, 16, 24, 32))
        W = d.pick((128, 256, 512, 1000, 1024, 2048, 4096))
        s = d.pick((1, 2, 4)) if d.level == 2 else 0
        n = L * (W - 1) + d.rng.randint(50, 5000)
        r = window_stack(L, W, sinks=s, seq=n)
        value = r.answer if d.level == 0 else r.breakdown["beyond_reach"]
        if value > 1 and value not in (L, W, n, s):
            break
    st = Doc()
    st.p(f"A decoder stacks $L = {L}$ sliding-window attention layers of window $W = {W}$: in each layer the token at "
         f"position $p$ attends to positions $p - W < j \\le p$ (itself and the $W - 1$ before it).")
    field = L * (W - 1)
    if d.level == 0:
        st.p("Information from how many positions back (at most) can reach a token through the whole stack?")
        key = nat_key(value, 0, unit="positions")
        wrongs = [Wrong("span", "counted L·W", "Each layer reaches W − 1 positions back, not W (the window counts the "
                        "query itself); L·W is Mistral's rounded 'k × W'.", L * W,
                        inverse="took W − 2 positions per layer (left out both ends of the window)", inverse_value=L * (W - 2)),
                  Wrong("one_layer", "took one layer's reach", "Layers compose: each adds W − 1.", W - 1)]
        notes = [f"One layer: $W - 1 = {W - 1}$ positions back.", f"$L$ layers: $L (W - 1) = {L} \\times {W - 1} = "
                 f"{field}$."]
    else:
        sink = (f" The model also keeps $s = {s}$ attention-sink tokens (positions 0 … {s - 1}): every query in every "
                "layer attends to them as well.") if s else ""
        st.p(f"A sequence has $n = {n}$ tokens (positions 0 … {n - 1}).{sink} How many earlier positions can have no "
             "influence at all on the last token's output?")
        key = nat_key(value, 0, unit="positions")
        wrongs = [Wrong("span", "used the field L·W", "Each layer reaches W − 1 back.", max(0, n - 1 - L * W - s),
                        inverse="took W − 2 positions per layer (left out both ends of the window)",
                        inverse_value=n - 1 - L * (W - 2) - s),
                  Wrong("self_counted", "left out the token itself", "Positions before the last one: n − 1 of them.",
                        value + 1, inverse="took n − 2 earlier positions (one too few)", inverse_value=value - 1)]
        if s:
            wrongs.append(Wrong("forgot_sinks", "forgot the sinks", "Sink tokens are visible from every query.",
                                n - 1 - field, inverse="subtracted the sinks twice", inverse_value=value - s))
        notes = [f"Field: $L (W - 1) = {field}$ positions before the last token ({n - 1 - field} … {n - 2}).",
                 f"Earlier positions: $n - 1 = {n - 1}$; out of reach: ${n - 1} - {field}" + (f" - {s}" if s else "")
                 + f" = {value}$."]
        if s:
            notes.append(f"The {s} sinks sit at the start, far outside the window, yet one layer reaches them.")
    return nat_problem(d, st, key, [], wrongs, given={"L": L, "W": W, "n": n, "sinks": s}, notes=notes)


# ---------------------------------------------------------------------------------------
# Ulysses sequence parallelism
# ---------------------------------------------------------------------------------------

_SRC_ULY = "issue 24; Jacobs et al. 2023 (DeepSpeed Ulysses) §3"


@family("context.ulysses", topic="parallelism", title="Ulysses sequence parallelism: all-to-all bytes and time",
        types=("nat",), tags=("ulysses", "sequence-parallel", "all-to-all", "long-context"), marks=2,
        source=_SRC_ULY)
def ulysses_all_to_all(d: Draw) -> Problem:
    """Each device holds c = N/P tokens; before attention an all-to-all regroups Q, K, V from sequence shards to
    head shards, after it one more returns O: a device sends B·c·(h + 2·h_kv)·d_h·b + B·c·h·d_h·b bytes, times
    (P − 1)/P (its own share stays); with latency α per all-to-all, a layer takes 2α + bytes/β."""
    from solver.systems.context_parallel import ulysses

    # Levels (disjoint): easy, the bytes a device sends per layer with full multi-head attention (MB); medium, the
    # same with grouped K/V heads and a batch (MB); hard, the forward pass's all-to-all time over L layers (ms).
    for _ in range(300):
        # issue 39: lengths, head shapes, batches, layers and link figures drawn wide (log-uniform where they multiply
        # into the key), so that keys rarely repeat across draws
        P = d.pick((2, 4, 8, 16) if d.level == 0 else (2, 4, 8))
        h = d.pick((16, 24, 32, 40, 48, 64, 96))
        hk = h if d.level == 0 else d.pick((8, 16, 24, 32))
        if h % P or hk % P or (d.level and hk >= h):
            continue
        dh = d.pick((64, 80, 96, 128))
        N = 1024 * round(d.log_uniform(8, 128, None)) if d.level < 2 else 1024 * round(d.log_uniform(32, 128, None))
        B = 1 if d.level == 0 else d.pick(range(1, 9))
        L = d.pick(range(16, 97)) if d.level == 2 else 1
        beta = d.log_uniform(25, 900, 2) * 10**9 if d.level == 2 else None
        alpha = d.pick(range(2, 31)) * 1e-6 if d.level == 2 else 0
        r = ulysses(N, P, h, dh, kv_heads=hk, batch=B, link_bandwidth=beta, latency=alpha)
        value = float(r.answer) / 1e6 if d.level < 2 else L * float(r.breakdown["time_s"]) * 1e3
        if safe_for_rounding(value, 2, 0.1):
            break
    c = N // P
    sent = float(r.answer)
    everything = float(ulysses(N, P, h, dh, kv_heads=hk, batch=B, count_local=True).answer)
    qkv, o = float(r.breakdown["qkv_bytes_sent"]), float(r.breakdown["o_bytes_sent"])
    st = Doc()
    batch = f"a batch of $B = {B}$ sequences" if B > 1 else "one sequence"
    st.p(f"DeepSpeed-Ulysses spreads {batch} of $N = {N}$ tokens over $P = {P}$ devices, $N/P$ tokens each. "
         f"Each attention layer has $h = {h}$ query heads" + (" and as many key/value heads" if hk == h else
                                                              f" and $h_{{kv}} = {hk}$ key/value heads")
         + f" of size $d_h = {dh}$, activations in bf16 (2 bytes). Before attention an all-to-all turns each "
         "device's Q, K and V from a slice of the sequence into a slice of the heads (all tokens, $h/P$ heads); after "
         "attention a second all-to-all turns the output O back into a slice of the sequence.")
    if d.level < 2:
        st.p("How many bytes does each device send per layer in these all-to-alls (forward pass; the part of its data "
             "that stays on the device is not sent)? Give MB ($10^6$ bytes), rounded off to two decimal places.")
        key = nat_key(value, 2, unit="MB")
        wrongs = [Wrong("one_tensor", "counted one all-to-all of one tensor per layer",
                        "Q, K and V go in (h + 2·h_kv heads of d_h) and O comes back (h heads): four tensors' worth "
                        "when K/V have all the heads.", float(r.breakdown["o_bytes_sent"]) / 1e6),
                  Wrong("count_local", "forgot the factor (P − 1)/P", "A 1/P share of each tensor already sits on the "
                        "device that needs it: it is not sent.", everything / 1e6,
                        inverse="applied (P − 1)/P twice"),
                  Wrong("total", "gave the total over all devices", "The question asks what one device sends.",
                        sent * P / 1e6, inverse="divided by the P devices once more"),
                  Wrong("no_output", "left out the output all-to-all", "O is sent back to sequence shards after "
                        "attention.", qkv / 1e6)]
        if hk != h:
            wrongs.append(Wrong("query_heads", "gave K and V the query heads", f"K and V have h_kv = {hk} heads.",
                                float(ulysses(N, P, h, dh, batch=B).answer) / 1e6))
        notes = [f"Tokens per device: $c = N/P = {N}/{P} = {c}$.",
                 f"Q, K, V per device: $B c (h + 2 h_{{kv}}) d_h \\cdot 2 = {B} \\times {c} \\times ({h} + 2 \\times {hk})"
                 f" \\times {dh} \\times 2 = {big(int(qkv * P / (P - 1)))}$ bytes; O: $B c h d_h \\cdot 2 = "
                 f"{big(int(o * P / (P - 1)))}$ bytes.",
                 f"Sent (all but the own $1/P$): $({big(int(everything))}) \\times {P - 1}/{P} = {big(int(sent))}$ bytes "
                 f"= {value:.4f} MB."]
        return nat_problem(d, st, key, [], wrongs, given={"N": N, "P": P, "h": h, "h_kv": hk, "d_h": dh, "B": B},
                           notes=notes)
    st.p(f"The model has $L = {L}$ such layers. Each device's link sends $\\beta = {beta / 1e9:g}$ GB/s and each "
         f"all-to-all (the one for Q, K, V together and the one for O) pays a latency $\\alpha = {alpha * 1e6:g}$ µs "
         "once. Sends are not overlapped with compute, and only what leaves a device is sent. How long do the "
         "all-to-alls of one forward pass take? Give milliseconds, rounded off to two decimal places.")
    key = nat_key(value, 2, unit="ms")
    per_layer = float(r.breakdown["time_s"]) * 1e3
    wrongs = [Wrong("one_layer", "gave one layer's time", f"Every one of the {L} layers runs both all-to-alls.",
                    per_layer),
              Wrong("count_local", "forgot the factor (P − 1)/P", "The device's own 1/P share is not sent.",
                    L * (2 * alpha + everything / beta) * 1e3, inverse="applied (P − 1)/P twice",
                    inverse_value=L * (2 * alpha + sent * (P - 1) / P / beta) * 1e3),
              Wrong("one_latency", "paid the latency once per layer", "Two all-to-alls per layer, each pays α.",
                    L * (alpha + sent / beta) * 1e3, inverse="paid the latency three times per layer",
                    inverse_value=L * (3 * alpha + sent / beta) * 1e3),
              Wrong("bits", "took the link figure in bits per second", "GB/s is bytes per second.",
                    L * (2 * alpha + 8 * sent / beta) * 1e3),
              Wrong("no_output", "left out the output all-to-all", "O goes back to sequence shards: that is the second "
                    "all-to-all.", L * (alpha + qkv / beta) * 1e3)]
    notes = [f"Tokens per device: $c = {N}/{P} = {c}$.",
             f"Per layer, a device holds $B c (h + 2 h_{{kv}}) d_h \\cdot 2 + B c h d_h \\cdot 2 = {big(int(everything))}$"
             f" bytes of Q, K, V and O and sends $(P - 1)/P$ of it: ${big(int(sent))}$ bytes.",
             f"One layer: $2 \\alpha + \\mathrm{{bytes}}/\\beta = 2 \\times {alpha * 1e6:g}$ µs $+ {big(int(sent))} / "
             f"{beta:.3g}$ s $= {per_layer:.5f}$ ms.",
             f"{L} layers: ${L} \\times {per_layer:.5f} = {value:.4f}$ ms."]
    return nat_problem(d, st, key, [], wrongs, given={"N": N, "P": P, "h": h, "h_kv": hk, "d_h": dh, "B": B, "L": L,
                                                      "beta": beta, "alpha": alpha}, notes=notes)


# ---------------------------------------------------------------------------------------
# Logit soft-capping (Gemma 2)
# ---------------------------------------------------------------------------------------

_SRC_CAP = ("issue 24; Gemma Team 2024 (Gemma 2) §2, HuggingFace Gemma2Config: attn_logit_softcapping = 50.0, "
            "final_logit_softcapping = 30.0")


@family("softcap.gemma2", topic="attention", title="Logit soft-capping (Gemma 2): cap·tanh(x/cap)",
        types=("nat",), tags=("softcap", "gemma-2", "logits", "tanh"), marks=2, source=_SRC_CAP)
def softcap_gemma2(d: Draw) -> Problem:
    """y = cap·tanh(x/cap): near x for |x| ≪ cap, flat towards ±cap beyond it. Gemma 2 caps the attention scores
    after the 1/√d_h scaling at 50 and the final logits at 30."""
    from solver.kernels.numpy_ref import softmax
    from solver.kernels.softcap import GEMMA2_CAPS, softcap

    def sc(xs, cap):
        return [float(v) for v in softcap(xs, cap).answer]

    def top_prob(xs):
        return float(softmax(xs)[0])

    # Levels (disjoint): easy, one capped value; medium, an attention score scaled by 1/√d_h and then capped at 50;
    # hard, the final-logit cap (30) and the softmax probability of the top token after it.
    for _ in range(300):
        if d.level == 0:
            cap = d.pick((20, 30, 50))
            x = d.rng.randint(cap // 2, 3 * cap) * d.pick((1, 1, -1))
            value = sc([x], cap)[0]
        elif d.level == 1:
            cap = GEMMA2_CAPS["attention"]
            dh = d.pick((64, 128, 256))
            s = d.rng.randint(int(20 * math.sqrt(dh)), int(160 * math.sqrt(dh))) * d.pick((1, 1, -1))
            value = sc([s / math.sqrt(dh)], cap)[0]
        else:
            cap = GEMMA2_CAPS["final"]
            top = d.rng.randint(32, 90)
            rest = d.rng.sample(range(-10, top), 3)
            xs = [top, *sorted(rest, reverse=True)]
            value = top_prob(sc(xs, cap))
            if not 0.05 < value < 0.98:
                continue
        if safe_for_rounding(value, 3, 0.1):
            break
    st = Doc()
    st.p("Gemma 2 soft-caps logits: $y = \\mathrm{cap} \\cdot \\tanh(x/\\mathrm{cap})$, which leaves small values "
         "almost as they are and squeezes large ones towards $\\pm\\mathrm{cap}$.")
    if d.level == 0:
        st.p(f"With a cap of {cap}, what does a logit $x = {x}$ become? Round off to three decimal places.")
        key = nat_key(value, 3)
        wrongs = [Wrong("tanh_only", "applied tanh(x) without the cap", "Divide by the cap inside tanh and multiply "
                        "by it outside: the output keeps the logit's scale.", math.tanh(x)),
                  Wrong("no_outer_cap", "forgot to multiply by the cap", "tanh(x/cap) lies in (−1, 1): times cap "
                        "gives the capped logit.", math.tanh(x / cap)),
                  Wrong("clip", "clipped hard at ±cap", "Soft-capping is smooth: tanh bends values below the cap too.",
                        math.copysign(min(abs(x), cap), x))]
        notes = [f"$x/\\mathrm{{cap}} = {x}/{cap} = {x / cap:.6f}$; $\\tanh({x / cap:.6f}) = {math.tanh(x / cap):.6f}$.",
                 f"$y = {cap} \\times {math.tanh(x / cap):.6f} = {value:.5f}$."]
        return nat_problem(d, st, key, [], wrongs, given={"x": x, "cap": cap}, notes=notes)
    if d.level == 1:
        z = s / math.sqrt(dh)
        st.p(f"In each attention layer the score $q \\cdot k$ is scaled by $1/\\sqrt{{d_h}}$ and then capped at "
             f"{cap:g} (before the softmax). A head of size $d_h = {dh}$ has $q \\cdot k = {s}$. What score enters the "
             "softmax? Round off to three decimal places.")
        key = nat_key(value, 3)
        wrongs = [Wrong("cap_then_scale", "capped before scaling by 1/√d_h", "Gemma 2 caps the scaled score: "
                        "scale first, then cap.", sc([s], cap)[0] / math.sqrt(dh)),
                  Wrong("no_cap", "left the cap out", f"The scaled score {z:.3f} is still capped.", z),
                  Wrong("no_outer_cap", "forgot to multiply by the cap", "tanh(x/cap) lies in (−1, 1): times cap.",
                        math.tanh(z / cap)),
                  Wrong("final_cap", "used the final-logit cap 30", "Attention scores are capped at 50; 30 is for the "
                        "final logits.", sc([z], GEMMA2_CAPS["final"])[0])]
        notes = [f"Scale: $q \\cdot k/\\sqrt{{d_h}} = {s}/\\sqrt{{{dh}}} = {z:.6f}$.",
                 f"Cap: ${cap:g} \\tanh({z:.6f}/{cap:g}) = {cap:g} \\times {math.tanh(z / cap):.6f} = {value:.5f}$."]
        return nat_problem(d, st, key, [], wrongs, given={"qk": s, "d_h": dh, "cap": cap}, notes=notes)
    capped = sc(xs, cap)
    st.p(f"Gemma 2 caps the final logits at {cap:g} before the softmax over the vocabulary. Four candidate tokens "
         "have logits " + ", ".join(map(str, xs)) + " (all other tokens have far lower ones: leave them out). What "
         "probability does the softmax give the first token after capping? Round off to three decimal places.")
    key = nat_key(value, 3)
    wrongs = [Wrong("no_cap", "took the softmax of the raw logits", "The logits are capped first: the gaps shrink.",
                    top_prob(xs)),
              Wrong("no_outer_cap", "took the softmax of tanh(x/cap) (forgot to multiply by the cap)",
                    "cap·tanh(x/cap) keeps the logit scale; tanh alone squeezes all into (−1, 1).",
                    top_prob([math.tanh(v / cap) for v in xs])),
              Wrong("clip", "clipped hard at the cap", "Soft-capping bends values below the cap too.",
                    top_prob([min(v, cap) for v in xs])),
              Wrong("attention_cap", "used the attention cap 50", "Final logits are capped at 30.",
                    top_prob(sc(xs, GEMMA2_CAPS["attention"])))]
    e = [math.exp(v - capped[0]) for v in capped]
    notes = ["Capped: " + ", ".join(f"${cap:g} \\tanh({v}/{cap:g}) = {y:.5f}$" for v, y in zip(xs, capped, strict=True))
             + ".",
             "Softmax: $e^{y_j - y_1}$ = " + ", ".join(f"{t:.5f}" for t in e) + f"; sum {sum(e):.5f}.",
             f"First token: $1/{sum(e):.5f} = {value:.5f}$ (raw logits would give {top_prob(xs):.5f}: the cap "
             "narrows the gaps)."]
    return nat_problem(d, st, key, [], wrongs, given={"logits": xs, "cap": cap}, notes=notes)


# ---------------------------------------------------------------------------------------
# Router losses: Switch load balancing, ST-MoE z-loss
# ---------------------------------------------------------------------------------------

_SRC_ROUTER = "issue 24; Fedus et al. 2022 (Switch Transformer) §2.2 eq. 4-6; Zoph et al. 2022 (ST-MoE) eq. 5"


@family("moe.router_losses", topic="architecture", title="Router losses: Switch load balancing and the z-loss",
        types=("nat",), tags=("moe", "router", "load-balancing", "z-loss", "switch-transformer"), marks=2,
        source=_SRC_ROUTER)
def router_loss_family(d: Draw) -> Problem:
    """Load balancing: E·Σ f_i·P_i with f_i the fraction of assignments to expert i (top-k, over T·k) and P_i the
    mean router probability; z-loss: mean over tokens of (log Σ_j e^(x_j))²."""
    import numpy as np

    from solver.kernels.router_loss import router_losses

    # Levels (disjoint): easy, the z-loss; medium, the top-1 load-balancing loss; hard, top-2 routing's auxiliary
    # loss α·L_lb + c_z·L_z with Switch's α = 10⁻² and ST-MoE's c_z = 10⁻³ (in units of 10⁻³).
    for _ in range(300):
        E = d.pick((3, 4)) if d.level < 2 else 4
        T = d.pick((2, 3)) if d.level == 0 else d.pick((4, 5, 6))
        X = [d.rng.sample(range(-2, 5), E) for _ in range(T)]
        k = 2 if d.level == 2 else 1
        r = router_losses(X, top_k=k)
        lb, zl = r.breakdown["load_balancing_loss"], r.breakdown["z_loss"]
        value = zl if d.level == 0 else lb if d.level == 1 else 10 * lb + zl
        if safe_for_rounding(value, 3 if d.level < 2 else 2, 0.1) and abs(value - 1) > 0.01:
            break
    x = np.asarray(X, dtype=float)
    lse = np.asarray(r.breakdown["logsumexp"])
    f, P, n = np.asarray(r.breakdown["f"]), np.asarray(r.breakdown["P"]), np.asarray(r.breakdown["assignments"])
    st = Doc()
    st.p(f"A mixture-of-experts router gives $T = {T}$ tokens logits over $E = {E}$ experts (one row per token):")
    st.matrix("X", X)
    lse_note = "Log-sum-exp per token: " + ", ".join(f"{v:.5f}" for v in lse) + "."
    p_note = ("Router probabilities (softmax of each row), mean over tokens: $P = (" + ", ".join(f"{v:.5f}" for v in P)
              + ")$.")
    if d.level == 0:
        st.p("The router z-loss (ST-MoE) is $L_z = (1/T) \\sum_x \\left(\\log \\sum_j e^{x_j}\\right)^2$. What "
             "is it for these logits? Round off to three decimal places.")
        key = nat_key(value, 3)
        wrongs = [Wrong("no_square", "left out the square", "Each token's log-sum-exp is squared before the mean.",
                        float(lse.mean())),
                  Wrong("sum_not_mean", "summed over the tokens", "The z-loss averages over the T tokens.",
                        float((lse**2).sum())),
                  Wrong("max_logit", "took the largest logit for the log-sum-exp", "log Σ e^x exceeds the maximum "
                        "by log Σ e^(x − max).", float((x.max(axis=1) ** 2).mean())),
                  Wrong("square_of_mean", "squared the mean of the log-sum-exps", "Square each token's log-sum-exp "
                        "first, then average: the mean of the squares is not the square of the mean.",
                        float(lse.mean() ** 2)),
                  Wrong("over_experts", "divided by the number of experts E", f"The z-loss averages over the T = {T} "
                        f"tokens, not the E = {E} experts.", float((lse**2).sum() / E)) if E != T else None]
        notes = [lse_note, "Squares: " + ", ".join(f"{v * v:.5f}" for v in lse) + f"; mean {value:.5f}."]
        return nat_problem(d, st, key, [], wrongs, given={"logits": X}, notes=notes)
    if d.level == 1:
        st.p("Each token goes to its top-1 expert. The Switch Transformer's load-balancing loss is "
             "$L = E \\sum_i f_i P_i$, where $f_i$ is the fraction of the tokens dispatched to expert $i$ and $P_i$ "
             "the mean over tokens of the router probability (softmax over the experts) of expert $i$. What is $L$? "
             "Round off to three decimal places.")
        key = nat_key(value, 3)
        wrongs = [Wrong("no_E", "left out the factor E", "E·Σ f·P is 1 at uniform routing: the factor E is part of "
                        "the loss.", lb / E),
                  Wrong("probs_not_fractions", "used the probabilities for f too", "f_i counts the tokens actually "
                        "dispatched (argmax), which is not differentiable; P_i carries the gradient.",
                        float(E * (P @ P))),
                  Wrong("counts", "used token counts instead of fractions", "f_i = tokens to expert i divided by T.",
                        float(E * (n @ P)))]
        notes = ["Top-1 expert per token: " + ", ".join(str(int(i) + 1) for i in x.argmax(axis=1))
                 + f"; counts {n.tolist()}, $f = $ counts$/{T}$.", p_note,
                 f"$L = {E} \\times (" + " + ".join(f"{a:.4f} \\cdot {b:.4f}" for a, b in zip(f, P, strict=True))
                 + f") = {value:.5f}$."]
        return nat_problem(d, st, key, [], wrongs, given={"logits": X}, notes=notes)
    st.p("Each token goes to its top-2 experts. The load-balancing loss is $L_{lb} = E \\sum_i f_i P_i$, where $f_i$ "
         "is the share of the $T \\cdot k$ token-expert assignments that go to expert $i$ (so perfectly even routing "
         "gives 1) and $P_i$ the mean over tokens of the router probability (softmax over the experts) of expert $i$. "
         "The z-loss is $L_z = (1/T) \\sum_x (\\log \\sum_j e^{x_j})^2$. Training adds $\\alpha L_{lb} + c_z "
         "L_z$ with $\\alpha = 10^{-2}$ (Switch) and $c_z = 10^{-3}$ (ST-MoE). What is this auxiliary loss? Give it "
         "in units of $10^{-3}$, rounded off to two decimal places.")
    key = nat_key(value, 2, unit="× 10⁻³")
    top1 = router_losses(X, top_k=1).breakdown["load_balancing_loss"]
    wrongs = [Wrong("f_over_T", "divided the assignments by T, not T·k", "The stated f is a share of the T·k "
                    "assignments (HF's Mixtral function divides by T: k times larger).",
                    10 * router_losses(X, top_k=2, f_per="tokens").answer + zl),
              Wrong("no_E", "left out the factor E", "L_lb = E·Σ f·P.", 10 * lb / E + zl),
              Wrong("probs_not_fractions", "used the probabilities for f too", "f counts the dispatched assignments.",
                    10 * E * float(P @ P) + zl),
              Wrong("top1", "dispatched each token to its top-1 expert only", "With top-2 each token counts for two "
                    "experts.", 10 * top1 + zl),
              Wrong("z_no_square", "left out the z-loss's square", "(log Σ e^x)² per token, then the mean.",
                    10 * lb + float(lse.mean()))]
    top2 = np.argsort(-x, axis=1, kind="stable")[:, :2]
    notes = ["Top-2 experts per token: " + "; ".join(f"{a + 1}, {b + 1}" for a, b in top2.tolist())
             + f"; assignments per expert {n.tolist()}, $f = $ assignments$/({T} \\cdot 2)$.", p_note,
             f"$L_{{lb}} = {E} \\times (" + " + ".join(f"{a:.4f} \\cdot {b:.4f}" for a, b in zip(f, P, strict=True))
             + f") = {lb:.5f}$.",
             lse_note + f" $L_z$ = mean of the squares = {zl:.5f}.",
             f"$10^{{-2}} \\times {lb:.5f} + 10^{{-3}} \\times {zl:.5f} = {value:.4f} \\times 10^{{-3}}$."]
    return nat_problem(d, st, key, [], wrongs, given={"logits": X}, notes=notes)
