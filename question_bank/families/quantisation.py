"""Quantised weights and caches: ggml block formats with their scales, group-wise int4 (GPTQ/AWQ),
QLoRA's NF4 with double quantisation, and a KV cache in int8 with per-head scales.

Keys come from ``solver.systems.quant`` (block byte sizes from llama.cpp's ggml-common.h, the QLoRA
paper's constants). Misconceptions: the codes without their scales (Q4_0 as a flat 4 bits),
a scale per weight, fp32 scales where fp16 are stored, GB for GiB; the constants' overhead
without double quantisation, the second-level constants forgotten.
"""

from __future__ import annotations

from question_bank.families.counting_common import BYTE_UNITS, OTHER_UNIT, big, nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (quantised weights: ggml-common.h; Frantar et al. 2023 GPTQ; Dettmers et al. 2023 QLoRA)"


@family("quantisation.ggml_bytes", topic="quantisation", title="Bytes of a weight matrix in a ggml format (Q4_0, Q8_0, K-quants)",
        types=("nat",), tags=("quantisation", "gguf", "memory"), source=_SRC,
        told_apart=("fp32_scale",),
        # issue 39, its MCQ view at hard (the K-quants; easy and medium cross every slip of the draw): the unit (GB for
        # GiB, MB for MiB) and the fp16 super-block scales taken as fp32 or left out, each either way by alike steps.
        # Not the scales forgotten (Q4_K's 144 bytes a block as 128) or counted twice (160): a fixed share s per
        # format, and the step down, ln 1/(1 − s), larger than the step up, ln(1 + s), told the slip's way and the
        # key's corner
        view_slips={"hard": ("unit", "fp32_scale")})
def ggml_bytes(d: Draw) -> Problem:
    """n weights in blocks: (n / block) × block bytes; easy: Q4_0 (18 bytes per 32), hard: the K-quants' super-blocks.

    Levels (issue 12: disjoint, ordered): easy, one matrix in Q4_0, in MiB; medium, a matrix in each
    of 24 to 80 layers in Q4_0 or Q8_0, in GiB or GB (a product and a unit more); hard, the K-quants'
    256-weight super-blocks (Q4_K, Q5_K, Q6_K: more fields to add up), one matrix, 32 or 40 layers."""
    from solver.systems.quant import GGML_FORMATS
    from solver.systems.quant import ggml_bytes as gb

    for _ in range(300):
        fmt = d.pick(("q4_0",) if d.level == 0 else ("q4_0", "q8_0") if d.level == 1 else ("q4_K", "q5_K", "q6_K"))
        # issue 22: eight row and eight column counts (multiples of 256) and more depths: three of each gave
        # fewer than 50 distinct problems per level
        # issue 39: any shape in multiples of 256 (log-uniform: 1,024 to 16,384 rows, 2,048 to 32,768 columns) and any
        # layer count, so that keys rarely repeat across draws and a slip leaves no trace in the key's size
        rows = 256 * round(d.log_uniform(4, 64, None))
        cols = 256 * round(d.log_uniform(8, 128, None))
        layers = (1, d.pick(range(12, 97)), d.pick((1, 1, *range(24, 81))))[d.level]
        unit = d.pick(("MiB",) if layers == 1 else ("GiB", "GB"))
        n = rows * cols * layers
        r = gb(n, fmt)
        f = GGML_FORMATS[fmt]
        sup = [name.split(" ")[0] for name, _ in f.fields if name.split(" ")[0] in ("d", "dmin")]  # the fp16 super-block scales
        div = BYTE_UNITS[unit][0]
        value = r.answer / div
        if not safe_for_rounding(value, 2, 0.1):
            continue
        other_name, other_div = OTHER_UNIT[unit]
        wrongs = [
            Wrong("no_scales", "counted the quantised codes only (no scales)",
                  f"Each block of {f.block} weights also stores its scales: {f.block_bytes} bytes per block, "
                  f"{float(f.bits_per_weight)} bits per weight.", float(r.breakdown["code_bytes"]) / div,
                  inverse="counted the scales twice", inverse_value=float(2 * r.answer - r.breakdown["code_bytes"]) / div),
            Wrong("fp32_scale", "took the block scale as fp32", "ggml stores the block scale d as fp16 (2 bytes).",
                  (r.answer + 2 * r.breakdown["blocks"]) / div, inverse="took the block scale as one byte (fp8)",
                  inverse_value=(r.answer - r.breakdown["blocks"]) / div) if fmt in ("q4_0", "q8_0") else
            # issue 39, round 4b: the K-quants' fp16 super-block scales (d, and dmin in Q4_K/Q5_K) taken as fp32, or left
            # out (the 6-bit or int8 sub-block scales counted, the super-block's own forgotten): the same bytes either way
            # (± 2 per fp16 field), so the step up and the step down are alike in size (they differ by the share squared,
            # under 0.1 %), where the scales forgotten (− 1/9 of Q4_K's bytes) against counted twice (+ 1/9) told the
            # slip's way by the step's size, and the key's place with it (boosted trees 40 % against 25 % at hard)
            Wrong("fp32_scale", f"took the super-block scale{'s' if len(sup) > 1 else ''} {' and '.join(sup)} as fp32",
                  f"The K-quants store the super-block scale{'s' if len(sup) > 1 else ''} {' and '.join(sup)} as fp16 "
                  f"(2 bytes each), beside the packed sub-block scales.",
                  (r.answer + 2 * len(sup) * r.breakdown["blocks"]) / div,
                  inverse=f"left out the super-block scale{'s' if len(sup) > 1 else ''} {' and '.join(sup)}",
                  inverse_value=(r.answer - 2 * len(sup) * r.breakdown["blocks"]) / div),
            Wrong("unit", f"gave {other_name} for {unit}", f"{unit}: divide by {div:,}.", r.answer / other_div,
                  inverse=f"converted to {unit} twice (× {other_div / div:.4g} once more)"),
        ]
        key = nat_key(value, 2, unit=unit)
        break
    st = Doc()
    shape = f"${rows} \\times {cols}$ weight matri" + ("x" if layers == 1 else f"ces, one in each of {layers} layers,")
    st.p(f"{'A' if layers == 1 else 'A set of'} {shape} is stored in llama.cpp's **{fmt.upper()}** format: "
         f"blocks of {f.block} weights, each block a struct of " + " + ".join(f"{name}: {b} B" for name, b in f.fields) + ".")
    st.p(f"How much memory do the quantised weights take, in {BYTE_UNITS[unit][1]}? Round off to two decimal places.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"format": fmt, "rows": rows, "cols": cols, "layers": layers, "unit": unit},
                       notes=[f"$= {big(r.answer)}$ bytes $= {value:.4f}$ {unit}."])


@family("quantisation.group_int4", topic="quantisation", title="Group-wise int4 (GPTQ/AWQ): bytes with scales and zeros",
        types=("nat",), tags=("quantisation", "gptq", "awq", "memory"), source=_SRC)
def group_int4(d: Draw) -> Problem:
    """codes n/2 bytes + one fp16 scale (and a zero) per group of g input weights of each output row.

    Levels (issue 12: disjoint, ordered by the conventions to track): easy, groups of 128 with an
    fp16 zero point (4 bytes per group); medium, groups of 32, 64 or 128 with a packed 4-bit zero
    (half a byte per group); hard, the same plus AutoGPTQ's g_idx (one int32 per input feature: a
    term more).

    Misconceptions: the codes only, the zero points forgotten (or counted twice), MB for MiB (or the MiB
    divided by 1.048576 once more), one scale per group of the matrix's columns only, and at hard the
    g_idx forgotten (or counted twice)."""
    from solver.systems.quant import group_quant_bytes as gq

    for _ in range(300):
        # issue 22: nine row and eight column counts (multiples of 128): two and three gave fewer than 50
        # distinct problems per level
        # issue 39: any shape in multiples of 256, log-uniform, so that keys rarely repeat across draws
        # issue 39, round 3: in multiples of 128 (as many shapes are: 1,408, 2,688, 5,504), 2,048 to 16,384 rows and
        # 2,048 to 32,768 input features: multiples of 256 from 1,024 rows repeated a key in 1 draw of 3 at easy (331
        # distinct keys in 500 draws; small matrices' keys a hundredth of a MiB apart), and remembering keys scored
        # 49-51 % there
        rows = 128 * round(d.log_uniform(16, 128, None))
        cols = 128 * round(d.log_uniform(16, 256, None))
        g = d.pick((128,) if d.level == 0 else (32, 64, 128))
        zero = "fp16" if d.level == 0 else "int4"
        g_idx = d.level == 2
        r = gq(rows, cols, group_size=g, zero=zero, g_idx=g_idx)
        value = float(r.answer) / 2**20
        if not safe_for_rounding(value, 2, 0.1):
            continue
        flat = float(r.breakdown["code_bytes"]) / 2**20
        wrongs = [
            # issue 39: never mirrored: the scales' and zeros' share of the bytes is one of three fixed fractions (one per
            # group size), and k·(1 − s) one way against k·(1 + s) the other ("counted everything beside the codes
            # twice") are unequal steps in log space: the step told which way the slip went, so the key's side (boosted
            # trees 66 % at medium on one block of 500 draws)
            Wrong("no_scales", "counted the 4-bit codes only", "Every group also stores a scale and a zero point.", flat),
            Wrong("no_zeros", "forgot the zero points", "Asymmetric quantisation stores a zero point per group beside the scale.",
                  float(r.answer - r.breakdown["zero_bytes"]) / 2**20,
                  # not mirrored at hard, for the same reason (a fixed share, ±z unequal in log space); there the g_idx
                  # slip, whose share varies with the rows, and the unit go either way
                  inverse="counted the zero points twice" if not g_idx else None,
                  inverse_value=float(r.answer + r.breakdown["zero_bytes"]) / 2**20 if not g_idx else None),
            # issue 39, round 3: the unit, either way by the same factor (1.048576 = 2²⁰/10⁶): decimal megabytes, or the
            # MiB divided by 1.048576 once more, as one who converts "to MiB" a figure already in MiB
            Wrong("mb_for_mib", "gave MB (10⁶ bytes) for MiB", "MiB: divide the bytes by 2²⁰ = 1,048,576, not by 10⁶.",
                  float(r.answer) / 10**6, inverse="converted to MiB twice (÷ 1.048576 once more)"),
            Wrong("groups_per_matrix", "used one scale per group of the whole matrix's columns only",
                  "Groups run along the input features of every output row: rows × cols/g groups.",
                  float(r.breakdown["code_bytes"] + (r.breakdown["scale_bytes"] + r.breakdown["zero_bytes"]) / rows
                        + r.breakdown["g_idx_bytes"]) / 2**20),
            Wrong("no_g_idx", "forgot the g_idx", "AutoGPTQ also stores each input feature's group index (int32).",
                  float(r.answer - r.breakdown["g_idx_bytes"]) / 2**20, inverse="counted g_idx twice (8 bytes per input feature)",
                  inverse_value=float(r.answer + r.breakdown["g_idx_bytes"]) / 2**20) if g_idx else None,
        ]
        key = nat_key(value, 2, unit="MiB")
        break
    st = Doc()
    zt = "an fp16 zero point" if zero == "fp16" else "a 4-bit zero point (packed, half a byte)"
    st.p(f"A linear layer's ${rows} \\times {cols}$ weight matrix ({rows} output rows, {cols} input features) is quantised to "
         f"int4 group-wise: each group of {g} consecutive input weights of a row shares one fp16 scale and {zt}."
         + (" As in AutoGPTQ, the layer also stores g_idx, the group index of each input feature, as one int32 per "
            "input feature." if g_idx else ""))
    st.p("How many MiB ($2^{20}$ bytes) does the quantised matrix take? Round off to two decimal places.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"rows": rows, "cols": cols, "group_size": g, "zero": zero, "g_idx": g_idx},
                       notes=[f"$= {float(r.answer):,.0f}$ bytes $= {value:.4f}$ MiB.".replace(",", "{,}")])


@family("quantisation.nf4_bits", topic="quantisation", title="QLoRA's NF4: bits per parameter with double quantisation",
        types=("nat",), tags=("quantisation", "qlora", "nf4"), source=_SRC,
        small_pool="one format (QLoRA's NF4): the bits per parameter depend only on the two block sizes, which vary "
                   "(the block of 64 at easy, 128 or 256 at medium; the group of constants from 64 to 1024)")
def nf4_bits(d: Draw) -> Problem:
    """4 + c₂/64 + 32/(64·256) bits per parameter (QLoRA §3); medium/hard: other block sizes, or GB for a model.

    Levels (issue 12: disjoint, ordered): easy, the paper's block of 64, bits per parameter;
    medium, blocks of 128 or 256 (other fractions), bits per parameter; hard, the GB of a whole
    model (bits per parameter, then × N / 8 and a unit), blocks of 64 or 128."""
    from solver.systems.quant import nf4_bits_per_param, nf4_bytes

    # issue 22: the second-level group size is drawn too (it was always 256: easy held one problem, and typing
    # 4.127 won every easy draw); QLoRA's own choice, 256, is one of them
    dqb = d.pick((64, 128, 256, 512, 1024))
    ask_gb = d.level == 2
    for _ in range(300):  # issue 21: the key at least 0.1 of a unit from a rounding edge (was unguarded)
        bs = (64, d.pick((128, 256)), d.pick((64, 128)))[d.level]
        n = d.pick((7, 13, 33, 65)) * 10**9
        if not ask_gb or safe_for_rounding(float(nf4_bytes(n, blocksize=bs, dq_blocksize=dqb)) / 10**9, 2, 0.1):
            break
    r = nf4_bits_per_param(blocksize=bs, dq_blocksize=dqb)
    plain = nf4_bits_per_param(blocksize=bs, double_quant=False).answer
    # bits per parameter: 4 decimals, or 5 where 4 would sit on an edge (block 64: 4.126953125 is 0.03 of a
    # unit from 4.1269|4.1270); 3 would not tell 4.127 from the 4.125 of "forgot the second level"
    decimals = next(k for k in (4, 5, 6) if safe_for_rounding(float(r.answer), k, 0.1))
    if ask_gb:
        value = float(nf4_bytes(n, blocksize=bs, dq_blocksize=dqb)) / 10**9
        wrongs = [
            Wrong("flat_4bit", "counted 4 bits per weight only", "The quantisation constants add storage too.", n / 2 / 10**9),
            Wrong("no_double_quant", "kept the fp32 constants", "Double quantisation stores the block constants in fp8.",
                  float(plain * n / 8) / 10**9),
            Wrong("gib", "gave GiB for GB", "GB: 10⁹ bytes.", float(nf4_bytes(n, blocksize=bs, dq_blocksize=dqb)) / 2**30),
        ]
        decimals = 2
    else:
        value = float(r.answer)
        wrongs = [
            Wrong("no_double_quant", "kept the fp32 constants (no double quantisation)",
                  "Double quantisation stores each block constant in 8 bits.", float(plain)),
            Wrong("forgot_second_level", "forgot the second-level fp32 constants",
                  f"The fp8 constants themselves need one fp32 scale per {dqb} of them.", 4 + 8 / bs),
            Wrong("flat_4bit", "counted 4 bits per weight only", "The constants add storage too.", 4.0),
        ]
    key = nat_key(value, decimals, unit="GB" if ask_gb else "bits")
    st = Doc()
    st.p(f"QLoRA stores weights in 4-bit NormalFloat (NF4) with one absmax constant per block of {bs} weights. With double "
         f"quantisation, those constants are stored in 8-bit floats, and each group of {dqb} of them shares one fp32 constant.")
    if ask_gb:
        st.p(f"How many GB ($10^9$ bytes) does a model of $N$ = {n // 10**9} billion parameters take in this format? "
             f"Round off to {decimals} decimal places.")
    else:
        st.p(f"How many bits per parameter does this take, the constants included? Round off to {decimals} decimal places.")
    notes = [f"$= {value:.6f}$" + (" GB." if ask_gb else " bits.")]
    if ask_gb:
        notes.insert(0, f"bytes $= {float(r.answer):.6f} \\times {n // 10**9} \\times 10^9 / 8 = "
                        f"{float(nf4_bytes(n, blocksize=bs, dq_blocksize=dqb)):,.0f}$".replace(",", "{,}"))
    return nat_problem(d, st, key, r.steps, wrongs, given={"blocksize": bs, "dq_blocksize": dqb, "n": n if ask_gb else None},
                       notes=notes)


@family("quantisation.kv_int8", topic="quantisation", title="A KV cache in int8 with per-head scales",
        types=("nat",), tags=("quantisation", "kv-cache", "memory"), source=_SRC)
def kv_int8(d: Draw) -> Problem:
    """2·L·B·S·h_kv·d_h bytes of int8 codes + one fp16 scale per token, head and K/V.

    Levels (issue 12: disjoint, ordered by the conventions to track): easy, int8 for llama2-7b
    (as many K/V heads as query heads); medium, int8 for a GQA model (llama3-8b, mistral-7b: the
    K/V heads, not the query heads); hard, int4 (two values per byte) for any of them."""
    from solver.counting.presets import get_preset
    from solver.systems.quant import kv_cache_quant_bytes

    for _ in range(300):
        name = d.pick((("llama2-7b",), ("llama3-8b", "mistral-7b"), ("llama2-7b", "llama3-8b", "mistral-7b"))[d.level])
        cfg = get_preset(name).config
        # issue 22: eight batches and eight lengths (four and three gave fewer than 50 distinct problems per level)
        # issue 39: any batch up to 32 and any length in multiples of 128 up to the model's context (log-uniform), so
        # that keys rarely repeat across draws
        B, S = d.pick(range(1, 33)), 128 * round(d.log_uniform(4, {"llama2-7b": 32, "llama3-8b": 64}.get(name, 256), None))
        dtype = "int4" if d.level == 2 else "int8"
        r = kv_cache_quant_bytes(cfg.n_layers, B, S, cfg.kv_heads, cfg.head_dim, dtype, scale_group=cfg.head_dim)
        value = float(r.answer) / 2**30
        if safe_for_rounding(value, 3, 0.1):
            break
    flat = float(r.breakdown["code_bytes"]) / 2**30
    wrongs = [
        Wrong("no_scales", "forgot the scales", "Each token's K and V in each head carry an fp16 scale.", flat,
              inverse="counted the scales twice", inverse_value=2 * value - flat),
        Wrong("only_k", "cached K only", "Both K and V are cached.", value / 2,
              inverse="counted K and V twice each (four cached tensors per layer)"),
        Wrong("n_heads", "used the query heads", f"Only {cfg.kv_heads} K/V heads are cached.",
              float(kv_cache_quant_bytes(cfg.n_layers, B, S, cfg.n_heads, cfg.head_dim, dtype, scale_group=cfg.head_dim).answer)
              / 2**30) if cfg.kv_heads != cfg.n_heads else None,
    ]
    key = nat_key(value, 3, unit="GiB")
    st = Doc()
    st.p(f"{name} has $L = {cfg.n_layers}$ layers and {cfg.kv_heads} K/V heads of size $d_h = {cfg.head_dim}$. Its KV cache for "
         f"$B = {B}$ sequences of $S = {S}$ tokens is stored in **{dtype}**"
         + (" (two values per byte)" if dtype == "int4" else "")
         + ", with one fp16 scale per token, layer, head and K/V vector (one per $d_h$ values).")
    st.p("How many GiB ($2^{30}$ bytes) does the cache take, scales included? Round off to three decimal places.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"model": name, "B": B, "S": S, "dtype": dtype},
                       notes=[f"$= {value:.6f}$ GiB."])
