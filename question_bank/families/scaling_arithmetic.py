"""The arithmetic of scaling texts (Austin et al., How to Scale Your Model, 2025; ZeRO; the EleutherAI
cookbook): one family per area of issue 36, each keyed by a registered formula
(:mod:`solver.systems.sharding`, :mod:`solver.systems.parts`) and worked from its steps.

- ``sharding.dp_batch``: the batch above which data parallelism (FSDP, FSDP with tensor
  parallelism) is compute-bound;
- ``topology.torus_bisection``: a TPU slice's bisection bandwidth;
- ``gpu.peak_from_parts``: a GPU's dense peak from SMs, tensor cores and clock;
- ``roofline.elementwise``: the time of a chain of elementwise kernels, fused or not;
- ``memory.recipe``: training memory per chip under a named recipe;
- ``inference.decode_batch``: the batch above which decode's weight matmuls are compute-bound;
- ``inference.decode_latency``: a decode step's latency, its throughput, and where it turns compute-bound.

Misconceptions are the same formula with the named slip applied.
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.grading.tolerance import asked_decimals, round_off
from question_bank.problem import Problem
from question_bank.render import Doc

_BOOK = "Austin et al., How to Scale Your Model (2025)"


def _run(name: str, conventions: dict | None = None, **values):
    from solver.registry import get_formula

    return get_formula(name).run(values, conventions or {})


def _ok(value: float, lo: float, hi: float) -> bool:
    return lo <= value <= hi and safe_for_rounding(value, asked_decimals(value, 2), 0.1)


# ---- sharding thresholds --------------------------------------------------------------------------

_PEAKS = (197, 275, 312, 459, 667, 918, 989.5, 1307, 2250)  # TFLOP/s (dense bf16 of real chips)
_LINKS = (25, 45, 50, 90, 100, 150, 200, 225, 450)  # GB/s each way, one link


@family("sharding.dp_batch", topic="parallelism", title="Batch above which data parallelism is compute-bound",
        types=("nat",), tags=("data-parallel", "fsdp", "tensor-parallel", "ici", "critical-batch"), marks=2,
        source=_BOOK + ", Part 5 'Training'")
def dp_batch(d: Draw) -> Problem:
    """B/X > C/W with W = 2β·axes (the text's bidirectional ring); FSDP with tensor parallelism:
    B/N > 4α²/(M_X·M_Y·F), α = C/(2β).

    Levels (disjoint, ordered): easy, the least per-chip batch of data parallelism over one axis;
    medium, the least global batch (millions of tokens) over X chips and 2 or 3 axes; hard, the
    least per-chip batch of FSDP (2 axes) with tensor parallelism (1 axis) for an MLP width F."""
    for _ in range(400):
        C, beta = d.pick(_PEAKS) * 1e12, d.pick(_LINKS) * 1e9
        if d.level == 0:
            r = _run("dp_batch", peak=C, link=beta)
            value, unit = float(r.answer), "tokens"
            one_way = float(_run("dp_batch", {"ring": "unidirectional"}, peak=C, link=beta).answer)
            wrongs = [Wrong("one_way", "divided by one direction's bandwidth", "Half the bytes go each way round the "
                            "ring: W = 2β.", one_way)]
            lo, hi = 50, 100000
        elif d.level == 1:
            axes, X = d.pick((2, 3)), d.pick((256, 512, 1024, 2048, 4096, 6144, 8192, 8960))
            r = _run("dp_batch", peak=C, link=beta, axes=axes, chips=X)
            value, unit = float(r.breakdown["global_batch"]) / 1e6, "M tokens"
            wrongs = [Wrong("forgot_axes", "used one axis's bandwidth", f"The gradients reduce over {axes} axes at "
                            f"once: W = 2β · {axes}.", value * axes),
                      Wrong("one_way", "divided by one direction's bandwidth", "W = 2β: both directions.", value * 2)]
            # the per-chip batch as a named mistake only where it is not read as a slip of 10³ (X near 1,000)
            # and does not round to 0 at the asked decimals
            if abs(math.log10(X) - 3) > 0.05 and round(value / X, 2) > 0:
                wrongs.append(Wrong("per_chip", "gave the per-chip batch", "The question asks the global batch: "
                                    "X · C/W.", value / X))
            lo, hi = 0.05, 1000
        else:
            F = d.pick((8192, 11008, 13824, 14336, 16384, 20480, 28672, 32768, 49152, 53248))
            r = _run("fsdp_tp_batch", d_ff=F, peak=C, link=beta)
            value, unit = float(r.answer), "tokens"
            alpha = float(r.breakdown["alpha"])
            wrongs = [Wrong("fsdp_alone", "gave FSDP's threshold over 3 axes", "With tensor parallelism the comms "
                            "shrink as √B: the threshold is 4α²/(M_X M_Y F), not α/3.", alpha / 3),
                      Wrong("alpha_not_squared", "did not square α", "Both comms terms carry α: 4α²/(M_X M_Y F).",
                            4 * alpha / (2 * F)),
                      Wrong("one_way", "took W as one direction", "W = 2β; α doubles and the threshold quadruples.",
                            value * 4)]
            lo, hi = 1, 100000
        if _ok(value, lo, hi):
            break
    key = nat_key(value, 2, unit=unit, digits_rule=True)
    st = Doc()
    st.p(f"A chip does $C$ = {C / 1e12:g} TFLOP/s (bf16, dense); each ICI link carries β = {beta / 1e9:g} GB/s in each "
         "direction, and a ring collective sends half its bytes each way (W = 2β per axis). Count only the MLP's two "
         "matmuls and their bf16 weights, as Austin et al.'s How to Scale Your Model does in its chapter on training"
         # the audit from the text (tests/.../test_from_text_scaling_arithmetic.py): "as the text does" named no text,
         # and which pass the comms overlap sets the threshold (the whole step's FLOPs would give two thirds of C/W)
         + ("; the gradients' all-reduce overlaps the backward pass, so compare it with the backward pass's FLOPs."
            if d.level < 2 else ", and model the forward pass only: FSDP all-gathers the weights, tensor parallelism "
            "all-gathers and reduce-scatters the activations, and both overlap the FLOPs."))
    if d.level == 0:
        st.p(f"With pure data parallelism over one axis, what is the least batch per chip (tokens) for a training "
             f"step to stay compute-bound? {round_off(key.decimals)}")
    elif d.level == 1:
        st.p(f"Data parallelism runs over {axes} mesh axes of a slice of X = {X:,} chips. What is the least global "
             f"batch, in millions of tokens, for which the step stays compute-bound? {round_off(key.decimals)}")
    else:
        st.p(f"The model's MLP width is F = {F:,}. With FSDP over 2 mesh axes and tensor parallelism over 1 (the "
             f"optimal split of the chips), what is the least batch per chip (tokens) for the step to stay "
             f"compute-bound? {round_off(key.decimals)}")
    notes = ["Compute grows with the batch per chip, the gradients' (or weights') bytes do not: the step is "
             "compute-bound once B/X exceeds C/W."]
    if d.level >= 1:
        notes.append("Each extra axis adds a link to the collective, so W grows with the axes.")
    if d.level == 2:
        notes.append("FSDP moves weights (∝ F/Y), tensor parallelism moves activations (∝ B/X); at the best X the "
                     "comms grow as √B while the FLOPs grow as B, so the threshold is 4α²/(M_X M_Y F).")
    return nat_problem(d, st, key, r.steps, wrongs, given={"peak": C, "link": beta, **(
        {"axes": axes, "chips": X} if d.level == 1 else {"d_ff": F} if d.level == 2 else {})}, notes=notes)


# ---- topology -----------------------------------------------------------------------------------------


@family("topology.torus_bisection", topic="hardware", title="Bisection bandwidth of a TPU slice",
        types=("nat",), tags=("tpu", "torus", "ici", "bisection"), marks=2, source=_BOOK + ", Part 2 'TPUs'")
def torus_bisection(d: Draw) -> Problem:
    """Halve the longest axis: N/k_max links cross the cut, twice as many with wraparound (each
    ring is cut twice); bandwidth one way = links · β.

    Levels (disjoint, ordered): easy, a 2D torus with wraparound; medium, a 3D torus with
    wraparound; hard, a 3D mesh without wraparound, in an odd shape (the longest axis to find; it is even, so that a
    plane across it halves the chips)."""
    for _ in range(400):
        if d.level == 0:
            shape = [d.pick((4, 8, 16, 32)), d.pick((4, 8, 16, 32))]
        else:
            shape = [d.pick((2, 4, 8, 16) if d.level == 1 else (3, 4, 5, 6, 8, 10, 12, 16)) for _ in range(3)]
            # the audit from the text: the narrowest cut halves the longest axis only when it is even; a plane across
            # an odd one (5 × 4 × 3: 12 links) leaves 24 chips on one side and 36 on the other, not a bisection (15)
            if d.level == 2 and (len(set(shape)) < 3 or max(shape) % 2):
                continue
        wrap = "no" if d.level == 2 else "yes"
        beta = d.pick(tuple(range(20, 255, 5)))
        r = _run("torus", {"wraparound": wrap}, shape=tuple(shape), link=beta * 1e9)
        value = float(r.breakdown["bisection_bandwidth"]) / 1e12
        if _ok(value, 0.01, 1000) and max(shape) > 2:
            break
    n, kmax, kmin = 1, max(shape), min(shape)
    for k in shape:
        n *= k
    links = int(r.breakdown["bisection_links"])
    wrongs = [Wrong("both_directions", "added both directions", "The bisection is asked one way: links · β.",
                    value * 2),
              Wrong("shortest_axis", "cut across the shortest axis", "The narrowest cut halves the longest axis.",
                    n / kmin * (2 if wrap == "yes" and kmin > 2 else 1) * beta / 1000) if kmin != kmax else None,
              Wrong("wraparound", "forgot the wraparound links" if wrap == "yes" else "counted wraparound links",
                    "A ring is cut in two places; an open line in one.",
                    value / 2 if wrap == "yes" else value * 2)]
    key = nat_key(value, 2, unit="TB/s", digits_rule=True)
    st = Doc()
    kind = "torus (every axis wraps around)" if wrap == "yes" else "mesh (no wraparound links)"
    st.p(f"A TPU slice of shape {' × '.join(map(str, shape))} is wired as a {kind}; each link carries "
         f"β = {beta} GB/s in each direction.")
    st.p(f"What is its bisection bandwidth, one way across the narrowest cut that splits the chips into two equal halves, "
         f"in TB/s? "
         f"{round_off(key.decimals)}")
    notes = [f"The narrowest cut halves the longest axis ({kmax}): N/k_max = {n}/{kmax} = {n // kmax} lines of chips "
             f"cross it{', each a ring cut twice' if wrap == 'yes' else ''}: {links} links."]
    if d.level >= 1:
        notes.append("In 3D the lines along the longest axis are the product of the two other sides.")
    if d.level == 2:
        notes.append("Without wraparound each line is cut once.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"shape": shape, "wraparound": wrap, "link": beta},
                       notes=notes)


# ---- GPU parts ------------------------------------------------------------------------------------------


@family("gpu.peak_from_parts", topic="hardware", title="A GPU's peak from its SMs, tensor cores and clock",
        types=("nat",), tags=("gpu", "sm", "tensor-core", "peak"), marks=2, source=_BOOK + ", Part 12 'GPUs'")
def peak_from_parts(d: Draw) -> Problem:
    """peak = SMs × tensor cores per SM × FLOPs per tensor core per cycle × clock, 2 FLOPs per
    multiply-add.

    Levels (disjoint, ordered): easy, FLOPs per SM per cycle given; medium, multiply-adds per
    tensor core per cycle and 4 tensor cores per SM; hard, the clock that gives a datasheet's
    peak printed with 2:4 sparsity (to halve first)."""
    for _ in range(400):
        sms = d.pick(tuple(range(60, 161, 4)))
        fma = d.pick((256, 512, 1024))
        ghz = d.pick(tuple(x / 100 for x in range(110, 201, 5)))
        if d.level == 0:
            r = _run("gpu_peak", sms=sms, flops_per_cycle=fma * 2, tensor_cores=4, clock=ghz * 1e9)
            per_sm = fma * 2 * 4
            value, unit = float(r.answer) / 1e12, "TFLOP/s"
            wrongs = [Wrong("ghz_as_mhz", "took the clock in MHz", "GHz is 10⁹ cycles per second.", value / 1000)]
        elif d.level == 1:
            r = _run("gpu_peak", sms=sms, flops_per_cycle=fma * 2, tensor_cores=4, clock=ghz * 1e9)
            value, unit = float(r.answer) / 1e12, "TFLOP/s"
            wrongs = [Wrong("macs_not_flops", "counted multiply-adds, not FLOPs", "A multiply-add is 2 FLOPs.",
                            value / 2),
                      Wrong("one_tensor_core", "counted one tensor core per SM", "Each SM has 4 tensor cores.",
                            value / 4)]
        else:
            sparse = d.pick((624, 989, 1979, 1513, 2250, 4500, 1307, 2615))
            per_cycle = sms * 4 * fma * 2
            value, unit = sparse * 1e12 / 2 / per_cycle / 1e9, "GHz"
            r = _run("gpu_peak", sms=sms, flops_per_cycle=fma * 2, tensor_cores=4, clock=value * 1e9)
            wrongs = [Wrong("sparse_peak", "used the with-sparsity peak", "NVIDIA prints 2:4-sparse peaks: halve first.",
                            value * 2),
                      Wrong("one_tensor_core", "counted one tensor core per SM", "Each SM has 4 tensor cores.",
                            value * 4)]
        if _ok(value, 0.5, 5000) if d.level < 2 else _ok(value, 0.8, 2.5):
            break
    key = nat_key(value, 2, unit=unit, digits_rule=True)
    st = Doc()
    if d.level == 0:
        st.p(f"A GPU has {sms} streaming multiprocessors; each SM's tensor cores together do {per_sm:,} dense bf16 "
             f"FLOPs per cycle, at a clock of {ghz:g} GHz.")
        st.p(f"What is its dense bf16 peak, in TFLOP/s? {round_off(key.decimals)}")
    elif d.level == 1:
        st.p(f"A GPU has {sms} streaming multiprocessors of 4 tensor cores each; a tensor core does {fma:,} dense bf16 "
             f"multiply-adds per cycle, at a clock of {ghz:g} GHz.")
        st.p(f"What is its dense bf16 peak, in TFLOP/s? {round_off(key.decimals)}")
    else:
        st.p(f"A GPU has {sms} streaming multiprocessors of 4 tensor cores each; a tensor core does {fma:,} dense bf16 "
             f"multiply-adds per cycle. Its datasheet prints {sparse:,} TFLOP/s bf16 \"with sparsity\".")
        st.p(f"At what clock, in GHz, do the parts give the datasheet's dense peak? {round_off(key.decimals)}")
    notes = ["peak = SMs × tensor cores × FLOPs per tensor core per cycle × clock."]
    if d.level >= 1:
        notes.append("A multiply-add counts 2 FLOPs, as the peak does.")
    if d.level == 2:
        notes.append(f"The dense peak is half the sparse figure: {sparse / 2:g} TFLOP/s; clock = dense peak ÷ FLOPs per "
                     "cycle.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"sms": sms, "fma": fma, "ghz": ghz if d.level < 2 else None,
                                                           **({"sparse": sparse} if d.level == 2 else {})},
                       notes=notes)


# ---- elementwise rooflines ---------------------------------------------------------------------------------

def _peak(chip: str) -> float:
    from solver.systems.chips import get_hardware

    return get_hardware(chip).peak("bf16")


_BW = {"h100-sxm": 3350, "a100-80gb": 2039, "h200": 4800, "b200": 8000, "mi300x": 5300, "tpu-v5p": 2765}


@family("roofline.elementwise", topic="hardware", title="Time of elementwise kernels, fused or not",
        types=("nat",), tags=("roofline", "elementwise", "fusion", "memory-bound"), marks=2,
        source="Williams et al. 2009 (roofline); " + _BOOK + ", Part 12 'GPUs'")
def elementwise(d: Draw) -> Problem:
    """Memory-bound: time = n · (tensors read + written) · bytes / W_hbm.

    Levels (disjoint, ordered): easy, one unary kernel (1 read, 1 write); medium, a fused
    add-and-activate (2 reads, 1 write); hard, the same k unary ops unfused (k kernels, each
    reading and writing), and the time fusing saves."""
    for _ in range(400):
        chip = d.pick(tuple(_BW))
        n = d.pick((2**20, 2**22, 2**24, 2**26, 2**28, 2**30, 3 * 2**24, 5 * 2**22, 3 * 2**28))
        dtype = d.pick(("bf16", "fp32"))
        if d.level < 2:
            inputs = 1 if d.level == 0 else 2
            r = _run("elementwise", elements=n, inputs=inputs, outputs=1, dtype=dtype, peak=_peak(chip),
                     bandwidth=_BW[chip] * 10**9, flops_per_element=d.pick((1, 2, 4, 8)))
            value = float(r.breakdown["time_s"]) * 1e6
            k = 1
        else:
            k = d.pick((2, 3, 4, 5))
            one = _run("elementwise", elements=n, inputs=1, outputs=1, dtype=dtype, peak=_peak(chip),
                       bandwidth=_BW[chip] * 10**9)
            r = one
            value = (k - 1) * float(one.breakdown["time_s"]) * 1e6
        if _ok(value, 1, 100000):
            break
    b = 2 if dtype == "bf16" else 4
    W = _BW[chip] * 1e9
    if d.level < 2:
        wrongs = [Wrong("reads_only", "counted only the reads", "The output is written to HBM too.",
                        value * inputs / (inputs + 1)),
                  Wrong("wrong_bytes", "took the other dtype's bytes", "bf16 is 2 bytes, fp32 4.",
                        value * (2 if b == 2 else 0.5))]
    else:
        wrongs = [Wrong("unfused_time", "gave the unfused chain's time, not the saving", "The saving is the unfused "
                        "time less the fused kernel's.", value * k / (k - 1)),
                  Wrong("saved_k", "counted k kernels saved", f"Fusing {k} kernels into one saves {k - 1}.",
                        value * k / (k - 1) if k > 2 else None)]
        wrongs = [w for w in wrongs if w.value is not None] + [
            Wrong("reads_only", "counted only the reads", "Each unfused kernel reads and writes the tensor.", value / 2)]
    key = nat_key(value, 2, unit="µs", digits_rule=True)
    st = Doc()
    name = {"h100-sxm": "an H100 SXM", "a100-80gb": "an A100 80GB", "h200": "an H200", "b200": "a B200",
            "mi300x": "an MI300X", "tpu-v5p": "a TPU v5p"}[chip]
    st.p(f"On {name} (HBM {_BW[chip]:,} GB/s), a tensor of n = {n:,} {dtype} elements goes through "
         + ("one elementwise kernel (it reads the tensor and writes the result)." if d.level == 0 else
            "one fused kernel that adds a second tensor of the same shape and applies an activation." if d.level == 1
            else f"{k} elementwise operations in a row."))
    if d.level < 2:
        st.p(f"Assuming the kernel is memory-bound and each tensor is read or written once, how long does it take, "
             f"in µs? {round_off(key.decimals)}")
    else:
        st.p(f"Run as {k} separate kernels, each reads its input from HBM and writes its output; fused, one kernel "
             f"reads once and writes once. How much time does fusing save, in µs (memory-bound)? "
             f"{round_off(key.decimals)}")
    notes = [f"Elementwise work does a few FLOPs per byte: far below the chip's FLOPs per byte, so the time is "
             f"bytes / {W / 1e9:g} GB/s."]
    if d.level >= 1:
        notes.append("Every tensor read and every tensor written crosses HBM once.")
    if d.level == 2:
        notes.append(f"Unfused: {k} × (read + write); fused: 1 × (read + write): {k - 1} × {value / (k - 1):.6g} µs "
                     f"= {value:.6g} µs saved.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"chip": chip, "n": n, "dtype": dtype, "k": k},
                       notes=notes)


# ---- training memory recipes -------------------------------------------------------------------------------

_RECIPE_TEXT = {"mixed-fp32-master": "mixed precision with Adam: bf16 weights and gradients, an fp32 master copy and "
                                     "fp32 Adam moments",
                # the audit from the text: "gradients not kept whole" left open what the gradients cost (nothing)
                "bf16-adam": "bf16 weights with fp32 Adam moments (no fp32 master copy; each gradient is applied as "
                             "it is computed, never stored)",
                "adam-8bit": "mixed precision with an 8-bit Adam: bf16 weights and gradients, an fp32 master copy, "
                             "1-byte moments",
                "sgd-momentum": "mixed precision with SGD and momentum: bf16 weights and gradients, an fp32 master "
                                "copy and an fp32 momentum",
                "fp32-adam": "full fp32 training with Adam: fp32 weights, gradients and moments"}


@family("memory.recipe", topic="hardware", title="Training memory per chip by recipe",
        types=("nat",), tags=("training-memory", "adam", "zero", "fsdp"), marks=2,
        source="Rajbhandari et al. 2020 (ZeRO) §3.1; Dettmers et al. 2022; EleutherAI cookbook calc_transformer_mem.py")
def recipe(d: Draw) -> Problem:
    """bytes = N × bytes per parameter of the recipe, ÷ chips under ZeRO-3 / FSDP.

    Levels (disjoint, ordered): easy, mixed precision with Adam (16 bytes) on one chip; medium, the
    other recipes on one chip; hard, any recipe sharded over chips (ZeRO-3 / FSDP)."""
    for _ in range(400):
        N = d.pick(tuple(range(5, 4100, 5))) / 10 * 1e9
        # medium leaves out fp32 Adam: its 16 bytes are easy's, a remembered easy answer would do
        name = "mixed-fp32-master" if d.level == 0 else d.pick(("bf16-adam", "adam-8bit", "sgd-momentum")
                                                                if d.level == 1 else tuple(_RECIPE_TEXT))
        chips = 1 if d.level < 2 else d.pick((8, 16, 32, 64, 128, 256, 512))
        r = _run("train_memory", {"recipe": name}, params=int(N), chips=chips)
        value = float(r.breakdown["per_chip"]) / 1e9
        if _ok(value, 0.1, 100000):
            break
    per = int(r.breakdown["per_param"])
    wrongs = [Wrong("sixteen_always", "used 16 bytes per parameter", "16 bytes is mixed precision with Adam; this "
                    "recipe differs.", value * 16 / per) if per != 16 else None,
              Wrong("weights_only", "counted only the weights", "Training keeps gradients and optimizer states too.",
                    value * (4 if name == "fp32-adam" else 2) / per),
              Wrong("gib", "divided by 2³⁰", "GB here is 10⁹ bytes.", value * 1e9 / 2**30),
              Wrong("not_sharded", "did not divide by the chips", "ZeRO-3 / FSDP shards every state.",
                    value * chips) if chips > 1 else None]
    key = nat_key(value, 2, unit="GB", digits_rule=True)
    st = Doc()
    st.p(f"A model of N = {N / 1e9:g} billion parameters is trained with {_RECIPE_TEXT[name]}"
         + (f", its states sharded evenly over {chips} chips (ZeRO-3 / FSDP)." if chips > 1 else ", on one chip."))
    st.p(f"How much memory do the model states (no activations) take per chip, in GB (a billion bytes)? "
         f"{round_off(key.decimals)}")
    notes = [f"The recipe costs {per} bytes per parameter ({r.convention['source']})."]
    if d.level >= 1:
        notes.append("Count each copy the recipe keeps: weights, gradients, master copy, optimizer states.")
    if d.level == 2:
        notes.append("ZeRO-3 / FSDP shards weights, gradients and optimizer states alike: divide by the chips.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"params": N, "recipe": name, "chips": chips}, notes=notes)


# ---- inference thresholds ----------------------------------------------------------------------------------


@family("inference.decode_batch", topic="hardware", title="Batch above which decode is compute-bound",
        types=("nat",), tags=("decode", "roofline", "critical-batch", "moe", "quantisation"), marks=2,
        source=_BOOK + ", Part 7 'Inference'")
def decode_batch(d: Draw) -> Problem:
    """B_crit = (C/W_hbm) · bytes per weight / 2, × E/k for a mixture of experts.

    Levels (disjoint, ordered): easy, bf16 weights; medium, int8, fp8 or int4 weights computed in
    bf16; hard, a mixture of E experts with top-k routing (bf16 or int8 weights)."""
    for _ in range(400):
        # drawn figures (a table of real chips held too few problems a level)
        name = "An accelerator"
        tf, gbs = d.pick(tuple(range(100, 2501, 25))), d.pick(tuple(range(800, 8001, 100)))
        wd = "bf16" if d.level == 0 else d.pick(("int8", "fp8", "int4")) if d.level == 1 else d.pick(("bf16", "int8"))
        E, k = (1, 1) if d.level < 2 else (d.pick((8, 16, 32, 64, 128, 256)), d.pick((1, 2, 4, 6, 8)))
        if E > 1 and k >= E:
            continue
        r = _run("decode_batch", peak=tf * 1e12, bandwidth=gbs * 1e9, weight_dtype=wd, experts=E, top_k=k)
        value = float(r.answer)
        if _ok(value, 10, 1e6):
            break
    ratio = tf * 1e12 / (gbs * 1e9)
    wrongs = [Wrong("one_flop_per_weight", "counted one FLOP per weight", "Each weight is a multiply-add: 2 FLOPs per "
                    "token.", value * 2)]
    if d.level == 1:
        wrongs.append(Wrong("ignored_bytes", "ignored the weights' format", "Fewer bytes per weight: the same FLOPs "
                            "need fewer bytes, so the crossover batch falls.", ratio))
    if d.level == 2:
        wrongs += [Wrong("dense", "left out the routing", "Each expert sees only B·k/E of the tokens.", value * k / E),
                   Wrong("k_over_e", "multiplied by k/E", "Each expert's batch is B·k/E: B must be E/k times larger.",
                         value * k / E * k / E)]
    key = nat_key(value, 2, unit="sequences", digits_rule=True)
    st = Doc()
    st.p(f"{name} does {tf:g} TFLOP/s (bf16, dense) and reads HBM at {gbs:,} GB/s. A decoder "
         + ("stores its weights in bf16" if wd == "bf16" else f"stores its weights in {wd} and computes in bf16")
         + (f"; each MLP is a mixture of E = {E} experts, each token routed to k = {k}." if E > 1 else "."))
    st.p(f"Neglecting the activations' and the cache's bytes, above what batch (sequences, one new token each) are "
         f"the {'expert ' if E > 1 else ''}weight matmuls of a decode step compute-bound? {round_off(key.decimals)}")
    notes = ["Each step reads every weight once and does 2 FLOPs per weight per token: compute-bound once "
             "2B/(bytes per weight) exceeds C/W_hbm."]
    if d.level >= 1:
        notes.append("The FLOPs do not depend on the weights' format; the bytes do.")
    if d.level == 2:
        notes.append("At a large batch every expert is read, but each computes for only B·k/E tokens.")
    return nat_problem(d, st, key, r.steps, wrongs, given={"peak_tflops": tf, "hbm_gbs": gbs, "weight_dtype": wd,
                                                           "experts": E, "top_k": k},
                       notes=notes)


# ---- inference: latency against throughput at a batch -------------------------------------------------------

_N_DENSE = (7e9, 8e9, 13e9, 30e9, 34e9, 70e9, 175e9)  # parameters of dense decoders people quote
_N_MOE = ((47e9, 13e9), (141e9, 39e9), (236e9, 21e9), (671e9, 37e9), (235e9, 22e9))  # (total, active)


@family("inference.decode_latency", topic="hardware", title="Decode latency and throughput at a batch",
        types=("nat",), tags=("decode", "latency", "throughput", "roofline", "kv-cache", "moe"), marks=2,
        source=_BOOK + ", Part 7 'Inference' ('Theoretical estimates for LLM latency and throughput')")
def decode_latency(d: Draw) -> Problem:
    """A decode step takes T = max((N·w + B·S·X)/(n·W_hbm), 2·N_active·B/(n·C)); each sequence waits T for its
    token, the chips make B/T tokens a second.

    Levels (disjoint, ordered): easy, the per-token latency (ms) of a dense model at a small batch, the cache
    neglected; medium, the throughput (tokens/s) with each sequence's cache read; hard, the batch at which a
    mixture of experts' step turns compute-bound with the cache read (N_active FLOPs, all N weights read)."""
    for _ in range(400):
        tf, gbs = d.pick(tuple(range(200, 2501, 50))), d.pick(tuple(range(1000, 8001, 100)))
        C, W = tf * 1e12, gbs * 1e9
        n = d.pick((1, 2, 4, 8))
        wd = d.pick(("bf16", "int8"))
        S, X_kib = 0, 0
        if d.level == 2:
            N, Na = d.pick(_N_MOE)
        else:
            N = Na = d.pick(_N_DENSE)
        if d.level == 0:
            B = d.pick((1, 2, 4, 8, 16))
            r = _run("decode_latency", {"kv": "ignored"}, params=N, batch=B, chips=n, peak=C, bandwidth=W,
                     weight_dtype=wd)
            value, unit, lo, hi = float(r.answer) * 1e3, "ms", 0.5, 2000
            t_math = float(r.breakdown["compute_time_s"]) * 1e3
            wrongs = [Wrong("compute_time", "gave the FLOPs' time", "At a small batch the step waits on HBM: "
                            "T = max(bytes/W, FLOPs/C).", t_math),
                      Wrong("one_chip", "forgot the chips", f"The weights are read by {n} chips at once.", value * n)
                      if n > 1 else None,
                      Wrong("one_byte_weight", "took one byte a bf16 weight", "bf16 is 2 bytes a weight.",
                            value / 2) if wd == "bf16" else None]
        else:
            B = d.pick((8, 16, 32, 64, 128, 256, 512)) if d.level == 1 else 1  # hard: B* does not depend on B
            S, X_kib = d.pick((1024, 2048, 4096, 8192, 16384, 32768)), d.pick((32, 64, 128, 160, 256, 320, 512, 800))
            X = X_kib * 1024
            r = _run("decode_latency", params=N, active_params=Na, batch=B, context=S, kv_per_token=X, chips=n,
                     peak=C, bandwidth=W, weight_dtype=wd)
            no_kv = _run("decode_latency", {"kv": "ignored"}, params=N, active_params=Na, batch=B, chips=n, peak=C,
                         bandwidth=W, weight_dtype=wd)
            if d.level == 1:
                value, unit, lo, hi = float(r.breakdown["tokens_per_second"]), "tokens/s", 10, 1e6
                wrongs = [Wrong("no_kv", "left out the cache's read", "Each sequence's S·X bytes of cache are read "
                                "every step too.", float(no_kv.breakdown["tokens_per_second"])),
                          Wrong("per_sequence", "gave one sequence's tokens/s", "The batch makes B tokens a step: "
                                "throughput = B/T.", value / B)]
            else:
                crit = r.breakdown.get("critical_batch")
                if crit is None:
                    continue
                value, unit, lo, hi = float(crit), "sequences", 10, 1e5
                wrongs = [Wrong("no_kv", "left out the cache's read", "The cache read grows with B as the FLOPs do: "
                                "B* = N·w/W ÷ (2·N_active/C − S·X/W).", float(no_kv.breakdown["critical_batch"])),
                          Wrong("total_flops", "counted every expert's FLOPs", "A token multiplies only its k experts: "
                                "2·N_active FLOPs, while all N weights are read.",
                                float(_run("decode_latency", params=N, batch=B, context=S, kv_per_token=X, chips=n,
                                           peak=C, bandwidth=W, weight_dtype=wd).breakdown.get("critical_batch")
                                      or 0) or None)]
                wrongs = [x for x in wrongs if x.value]
        if _ok(value, lo, hi):
            break
    key = nat_key(value, 2, unit=unit, digits_rule=True)
    st = Doc()
    model = (f"a {N / 1e9:g}B-parameter dense decoder" if N == Na else
             f"a mixture-of-experts decoder of {N / 1e9:g}B parameters, {Na / 1e9:g}B of them active per token")
    st.p((f"{n} accelerators, each doing" if n > 1 else "One accelerator doing") + f" {tf:g} TFLOP/s (bf16, dense) "
         f"and reading HBM at {gbs:,} GB/s, serve{'' if n > 1 else 's'} {model}, its weights in {wd}"
         + (" and computed in bf16" if wd != "bf16" else "")
         + (", spread evenly over the chips (no communication time)." if n > 1 else "."))
    if d.level == 0:
        st.p(f"A decode step generates one token for each of B = {B} sequence{'s' if B > 1 else ''}; the KV cache's "
             "bytes are negligible. "
             "Assuming the weights' reads and the FLOPs overlap perfectly, what is each sequence's latency per "
             f"token, in ms? {round_off(key.decimals)}")
    else:
        st.p((f"B = {B} sequences decode together" if d.level == 1 else "Sequences decode together")
             + f", each with S = {S:,} cached tokens of {X_kib} KiB each (all layers); every step reads all the "
             "weights and every sequence's cache, and a step's time is the larger of its HBM time and its FLOP time "
             "(2 FLOPs per active weight per token; attention's FLOPs neglected).")
        st.p(("What throughput, in tokens per second, do the chips sustain?" if d.level == 1 else
              "Above what batch (sequences) does the step become compute-bound?") + f" {round_off(key.decimals)}")
    notes = ["The step's time is the larger of bytes ÷ HBM bandwidth and FLOPs ÷ peak; each sequence gets one token "
             "a step, so the per-token latency is the step's time and the throughput B ÷ step."]
    if d.level >= 1:
        notes.append("The cache's bytes grow with the batch as the FLOPs do, so they count in the HBM time at every "
                     "batch: the throughput tends to chips ÷ max(2·N_active/C, S·X/W_hbm) and never passes it.")
    if d.level == 2:
        notes.append("The weights are read once a step whatever B is; the cache grows with B just as the FLOPs do, so "
                     "it raises the crossover batch (and with a long enough cache there is none).")
    return nat_problem(d, st, key, r.steps, wrongs,
                       given={"peak_tflops": tf, "hbm_gbs": gbs, "chips": n, "weight_dtype": wd, "params": N,
                              "active_params": Na, "batch": B, "context": S, "kv_kib": X_kib},
                       notes=notes)
