"""When a sharded training or inference step stops being compute-bound: the thresholds of
Austin et al., *How to Scale Your Model* (2025), Part 3 "Sharded matrices", Part 5 "Training"
and Part 7 "Inference", stated as the text states them and registered (``qkv calc`` functions,
``qkv solve`` commands).

Conventions, named where they are used:

- C is one chip's peak FLOP/s; β the link bandwidth **per direction** (the project's convention,
  :mod:`solver.systems.chips`). The text's W_ici is the *bidirectional* figure of one ICI link,
  2β ("W = 2 * 9e10" for TPU v5p), because its rings send half each way; the ``ring`` choice
  ``unidirectional`` uses W = β instead (an NCCL ring, one way round).
- ``axes``: the number of mesh axes a collective runs over at once; each adds a link's
  bandwidth, so W is multiplied by it ("2550 / n_axes").
- Only the MLP's two matmuls are counted (W_in[D, F], W_out[F, D]), in bf16, as the text does;
  a collective's time is bytes / W (its (n−1)/n dropped, the text's asymptotic form).
- A batch B is in tokens; "per chip" is B divided by the chips the batch is sharded over.
"""

from __future__ import annotations

import math
from fractions import Fraction

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Input, Output, formula
from solver.result import Result, fmt

BOOK = "Austin et al., How to Scale Your Model (2025)"
PART3 = BOOK + ", Part 3 'Sharded matrices'"
PART5 = BOOK + ", Part 5 'Training'"
PART7 = BOOK + ", Part 7 'Inference'"

RING = Convention("ring", "Which bandwidth W a ring collective divides by.", {
    "bidirectional": Choice("W = 2β: half the bytes go each way round the ring (the text's W_ici, 'bidirectional')",
                            PART5),
    "unidirectional": Choice("W = β: the whole message goes one way round the ring (NCCL's ring)",
                             "NVIDIA/nccl-tests doc/PERFORMANCE.md")}, "bidirectional")


def _pos(name: str, value, zero: bool = False):
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return value


def _num(x):
    """A Fraction when exact (ints, Fractions), else a float."""
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return Fraction(x)
    return float(x)


def _chip_figures(chip, dtype="bf16", peak=None, link=None, bandwidth=None, hbm=None):
    from solver.systems.chips import resolve_chip

    return resolve_chip(chip, dtype, peak_flops=None if peak is None else float(peak),
                        link_bandwidth=None if link is None else float(link),
                        bandwidth=None if bandwidth is None else float(bandwidth),
                        hbm=None if hbm is None else float(hbm))


def _peak_and_link(r: Result, chip, peak, link, ring, axes, dtype="bf16"):
    c = _chip_figures(chip, dtype, peak, link)
    C = _num(peak) if peak is not None else c.need("peak_flops")
    beta = _num(link) if link is not None else c.need("link_bandwidth")
    _pos("peak", C)
    _pos("link", beta)
    _pos("axes", axes)
    dirs = 2 if ring == "bidirectional" else 1
    W = r.step("W = directions · β · axes", f"{dirs} · {fmt(beta)} · {fmt(axes)}", dirs * beta * axes, "B/s")
    alpha = r.step("α = C / W (the network's arithmetic intensity)", f"{fmt(C)} / {fmt(W)}", C / W, "FLOP/B")
    r.breakdown.update(peak_flops=C, link_bandwidth=beta, w_ici=W, alpha=alpha)
    r.convention.update(ring=ring, axes=axes, source=PART5)
    return C, W, alpha


_CHIP = Input("chip", "a chip preset (tpu-v5p, h100): its peak and link figures", kind="chip", default=None,
              aliases=("hw",))
_PEAK = Input("peak", "C: peak FLOP/s per chip (instead of a chip)", unit="FLOP/s", default=None,
              aliases=("peak_flops", "C"))
_LINK = Input("link", "β: one link's bandwidth per direction (instead of a chip)", unit="B/s", default=None,
              aliases=("link_bandwidth", "bw", "beta"))
_AXES = Input("axes", "mesh axes the collective runs over (each adds a link), 1 to 3 on a TPU torus", kind="count",
              default=1, minimum=1, aliases=("n_axes",))
_DFF = Input("d_ff", "F: the MLP's hidden width", kind="count", integer=True, minimum=1, aliases=("F",))

STRATEGY = Convention("strategy", "Which data-parallel scheme (the threshold is the same; the bytes differ).", {
    "dp": Choice("pure data parallelism: each layer all-reduces its gradients in the backward pass (8DF bytes)",
                 PART5 + ", 'Data Parallelism'"),
    "fsdp": Choice("FSDP / ZeRO-3: weights all-gathered forward and backward, gradients reduce-scattered "
                   "(4DF + 8DF bytes; the same FLOPs-to-bytes ratio)", PART5 + ", 'Fully-Sharded Data Parallelism'")},
    "dp")


@formula("dp_batch", "Data parallelism or FSDP: the per-chip batch (tokens) above which a training step is "
         "compute-bound, B/X > C/W.",
         (_CHIP, _PEAK, _LINK, _AXES,
          Input("chips", "X: chips the batch is sharded over", kind="count", integer=True, default=None, minimum=1,
                aliases=("X", "n_chips")),
          Input("batch", "B: the global batch in tokens", kind="count", default=None, aliases=("B", "tokens")),
          Input("experts", "E: experts per MoE layer (the weights grow E-fold, the FLOPs k-fold)", kind="count",
                integer=True, default=1, minimum=1, aliases=("E",)),
          Input("top_k", "k: experts each token uses", kind="count", integer=True, default=1, minimum=1,
                aliases=("k",)),
          Input("ring_ranks", "ranks of the ring, to keep its (n−1)/n factor (2 nodes: half the threshold); "
                "omitted: the large-n limit", kind="count", integer=True, default=None, minimum=2,
                aliases=("nodes",))),
         (Output("batch_per_chip", "", "the least per-chip batch that stays compute-bound, C/W"),
          Output("global_batch", "", "the least global batch over X chips, X·C/W", ("chips",)),
          Output("max_chips", "", "the most chips a batch B can be spread over, B·W/C", ("batch",)),
          Output("ratio", "", "T_math / T_comms = (B/X) / (C/W): above 1 compute-bound", ("batch", "chips"))),
         conventions=(STRATEGY, RING), solve="dp-batch", source=PART5)
def _dp_batch(chip, peak, link, axes, chips, batch, experts, top_k, ring_ranks, strategy="dp",
              ring="bidirectional"):
    r = Result(answer=None, unit="tokens per chip")
    C, W, alpha = _peak_and_link(r, chip, peak, link, ring, axes)
    r.convention["strategy"] = strategy
    comms = "2·2·2·D·F" if strategy == "dp" else "2·2·D·F forward, 2·2·2·D·F backward"
    r.convention["model"] = (f"per layer T_math = 2·2·2·B·D·F/(X·C) (backward), T_comms = {comms} / W: "
                             "compute-bound when B/X > C/W")
    if top_k > experts:
        raise SolverInputError(f"top_k ({top_k}) exceeds experts ({experts})", param="top_k")
    alpha = r.step("B/X > C/W", f"{fmt(C)} / {fmt(W)}", alpha, "tokens")
    if experts > 1:
        r.convention["moe"] = "E experts' weights (T_comms × E) against k experts' FLOPs (T_math × k)"
        alpha = r.step("× E/k (MoE)", f"{fmt(alpha)} · {experts}/{top_k}", alpha * Fraction(experts, top_k),
                       "tokens")
    if ring_ranks is not None:
        r.convention["factor"] = f"(n−1)/n of a ring of {ring_ranks}"
        alpha = r.step("× (n−1)/n", f"{fmt(alpha)} · {ring_ranks - 1}/{ring_ranks}",
                       alpha * Fraction(ring_ranks - 1, ring_ranks), "tokens")
    r.answer = alpha
    r.breakdown["batch_per_chip"] = alpha
    if chips is not None:
        r.breakdown["global_batch"] = r.step("B_min = X · C/W", f"{fmt(chips)} · {fmt(alpha)}", chips * alpha, "tokens")
    if batch is not None:
        _pos("batch", batch)
        r.breakdown["max_chips"] = r.step("X_max = B / (C/W)", f"{fmt(batch)} / {fmt(alpha)}", batch / alpha, "chips")
        if chips is not None:
            r.breakdown["ratio"] = r.step("T_math/T_comms = (B/X) / (C/W)", f"({fmt(batch)}/{fmt(chips)}) / {fmt(alpha)}",
                                          _num(batch) / chips / alpha)
    return r


@formula("tp_max", "Tensor (Megatron) parallelism: the largest degree Y before a training step is "
         "communication-bound, Y < n_axes · F · W / C (independent of the batch).",
         (_DFF, _CHIP, _PEAK, _LINK, _AXES),
         (Output("degree", "", "Y_max = axes · F / (C/W), as a real number"),
          Output("whole", "", "the largest whole degree below it"),
          Output("f_needed_per_way", "", "the F each way of tensor parallelism needs, C/W")),
         conventions=(RING,), solve="tp-max", source=PART5 + ", 'Tensor Parallelism'")
def _tp_max(d_ff, chip, peak, link, axes, ring="bidirectional"):
    r = Result(answer=None, unit="ways")
    _pos("d_ff", d_ff)
    C, W, alpha = _peak_and_link(r, chip, peak, link, ring, 1)
    _pos("axes", axes)
    r.convention["axes"] = axes
    r.convention["model"] = ("per layer (forward) T_math = 4·B·D·F/(Y·C), T_comms = 2·2·B·D/(W·axes) (all-gather "
                             "the input, reduce-scatter the output): compute-bound while Y < axes · F/(C/W)")
    y = r.step("Y_max = axes · F / (C/W)", f"{fmt(axes)} · {fmt(d_ff)} / {fmt(alpha)}", axes * d_ff / alpha, "ways")
    r.answer = y
    whole = math.ceil(y) - 1 if float(y).is_integer() else math.floor(y)
    r.breakdown.update(degree=y, whole=max(whole, 0), f_needed_per_way=alpha)
    return r


_MX = Input("mx", "M_X: mesh axes given to FSDP", kind="count", default=2, minimum=0, aliases=("M_X",))
_MY = Input("my", "M_Y: mesh axes given to tensor parallelism", kind="count", default=1, minimum=0, aliases=("M_Y",))


@formula("fsdp_tp_batch", "FSDP with tensor parallelism at the best split: the per-chip batch above which training "
         "is compute-bound, B/N > 4α²/(M_X·M_Y·F), α = C/W.",
         (_DFF, _CHIP, _PEAK, _LINK, _MX, _MY),
         (Output("batch_per_chip", "", "the least per-chip batch B/N that stays compute-bound"),
          Output("alpha", "", "α = C/W, the network's arithmetic intensity")),
         conventions=(RING,), solve="fsdp-tp-batch", source=PART5 + ", 'Mixed FSDP and Tensor Parallelism'")
def _fsdp_tp_batch(d_ff, chip, peak, link, mx, my, ring="bidirectional"):
    r = Result(answer=None, unit="tokens per chip")
    _pos("d_ff", d_ff)
    _pos("mx", mx)
    _pos("my", my)
    C, W, alpha = _peak_and_link(r, chip, peak, link, ring, 1)
    r.convention.update(axes=f"M_X = {mx}, M_Y = {my}", model=(
        "forward only; T_FSDP = 4DF/(Y·W·M_X), T_MP = 4BD/(X·W·M_Y), T_math = 4BDF/(N·C), comms on X and Y "
        "not overlapped, X at its optimum √(B/F · M_X/M_Y · N)"))
    b = r.step("B/N > 4α² / (M_X·M_Y·F)", f"4 · {fmt(alpha)}² / ({fmt(mx)} · {fmt(my)} · {fmt(d_ff)})",
               4 * alpha * alpha / (mx * my * d_ff), "tokens")
    r.answer = b
    r.breakdown["batch_per_chip"] = b
    return r


@formula("fsdp_opt", "FSDP with tensor parallelism on N chips: the FSDP degree X that minimises the step's "
         "communication, X_opt = √(B/F · M_X/M_Y · N), and Y = N/X.",
         (Input("batch", "B: the global batch in tokens", kind="count", minimum=1, aliases=("B", "tokens")),
          _DFF,
          Input("chips", "N: chips (N = X·Y)", kind="count", integer=True, minimum=1, aliases=("N", "n_chips")),
          _MX, _MY),
         (Output("x", "", "X_opt: the FSDP degree (a real number; round to a divisor of N)"),
          Output("y", "", "Y = N / X_opt: the tensor-parallel degree")),
         solve="fsdp-opt", source=PART5 + ", 'Mixed FSDP and Tensor Parallelism'")
def _fsdp_opt(batch, d_ff, chips, mx, my):
    r = Result(answer=None, unit="ways",
               convention={"model": "T_comms(X) ∝ F·X/(N·M_X) + B/(X·M_Y), minimised at dT/dX = 0", "source": PART5})
    for n, v in (("batch", batch), ("d_ff", d_ff), ("chips", chips), ("mx", mx), ("my", my)):
        _pos(n, v)
    inside = r.step("B/F · M_X/M_Y · N", f"{fmt(batch)}/{fmt(d_ff)} · {fmt(mx)}/{fmt(my)} · {fmt(chips)}",
                    _num(batch) / d_ff * _num(mx) / _num(my) * chips)
    x = r.step("X_opt = √(…)", f"√{fmt(inside)}", math.sqrt(inside), "ways")
    y = r.step("Y = N / X_opt", f"{fmt(chips)} / {fmt(x)}", chips / x, "ways")
    r.answer = x
    r.breakdown.update(x=x, y=y)
    return r


@formula("tp_decode_max", "Tensor parallelism in decode: the degree Y above which ICI time exceeds the time to "
         "load the weights from HBM, Y > F / (B · W_hbm/W).",
         (_DFF, Input("batch", "B: sequences decoding together (one token each)", kind="count", minimum=1,
                      aliases=("B",)),
          _CHIP, Input("bandwidth", "W_hbm: HBM bytes/s per chip (instead of a chip)", unit="B/s", default=None,
                       aliases=("hbm_bandwidth",)), _LINK),
         (Output("degree", "", "Y = F / (B·β_ratio), β_ratio = W_hbm / W_ici"),
          Output("hbm_to_ici", "", "W_hbm / W_ici")),
         conventions=(RING,), solve="tp-decode-max", source=PART7 + ", 'Generation'")
def _tp_decode_max(d_ff, batch, chip, bandwidth, link, ring="bidirectional"):
    r = Result(answer=None, unit="ways")
    _pos("d_ff", d_ff)
    _pos("batch", batch)
    c = _chip_figures(chip, "bf16", None, link, bandwidth)
    hbm = _num(bandwidth) if bandwidth is not None else c.need("bandwidth")
    beta = _num(link) if link is not None else c.need("link_bandwidth")
    _pos("bandwidth", hbm)
    _pos("link", beta)
    dirs = 2 if ring == "bidirectional" else 1
    W = r.step("W_ici = directions · β", f"{dirs} · {fmt(beta)}", dirs * beta, "B/s")
    ratio = r.step("β_ratio = W_hbm / W_ici", f"{fmt(hbm)} / {fmt(W)}", hbm / W)
    r.convention.update(ring=ring, source=PART7, model="T_HBM = 2DF/(Y·W_hbm) (weights), T_ICI = 2BD/W_ici "
                        "(activations): ICI dominates once Y > F/(B·β_ratio)")
    y = r.step("Y = F / (B · β_ratio)", f"{fmt(d_ff)} / ({fmt(batch)} · {fmt(ratio)})", d_ff / (batch * ratio), "ways")
    r.answer = y
    r.breakdown.update(degree=y, hbm_to_ici=ratio)
    return r



_BW = Input("bandwidth", "W_hbm: HBM bytes/s per chip (instead of a chip)", unit="B/s", default=None,
            aliases=("hbm_bandwidth",))


@formula("decode_batch", "Decode: the batch (sequences, one token each) above which a step's weight matmuls are "
         "compute-bound, B > (C/W_hbm) · bytes per weight / 2 · E/k; and the attention's FLOPs per KV byte "
         "(MHA/GQA/MQA, or MLA with latent=).",
         (_CHIP, _PEAK, _BW,
          Input("weight_dtype", "the weights' element type (bf16, int8, fp8, int4)", kind="dtype", default="bf16"),
          Input("dtype", "the compute dtype whose peak C is used", kind="dtype", default="bf16"),
          Input("experts", "E: experts per MoE layer (1 for a dense model)", kind="count", integer=True, default=1,
                minimum=1, aliases=("E",)),
          Input("top_k", "k: experts each token uses", kind="count", integer=True, default=1, minimum=1,
                aliases=("k",)),
          Input("heads", "N: query heads (for the attention's intensity)", kind="count", integer=True, default=None,
                minimum=1, aliases=("n_heads",)),
          Input("kv_heads", "K: key/value heads (GQA; = heads for MHA, 1 for MQA)", kind="count", integer=True,
                default=None, minimum=1, aliases=("n_kv_heads",)),
          Input("kv_dtype", "the KV cache's element type", kind="dtype", default="bf16"),
          Input("latent", "d_c: MLA's cached latent width (with heads=, instead of kv_heads)", kind="count",
                integer=True, default=None, minimum=1, aliases=("d_c", "kv_lora_rank")),
          Input("rope_dim", "d_r: MLA's cached decoupled RoPE key width", kind="count", integer=True, default=0,
                minimum=0, aliases=("d_r",))),
         (Output("batch", "", "B_crit: the least batch at which the weight matmuls are compute-bound"),
          Output("chip_intensity", "FLOP/B", "C / W_hbm"),
          Output("attention_intensity", "FLOP/B", "decode attention's FLOPs per KV-cache byte (does not grow "
                 "with the batch)", ("heads",))),
         solve="decode-batch", source=PART7 + ", 'Linear operations: what bottlenecks us?'")
def _decode_batch(chip, peak, bandwidth, weight_dtype, dtype, experts, top_k, heads, kv_heads, kv_dtype, latent,
                  rope_dim):
    from solver.units import dtype_bytes

    r = Result(answer=None, unit="sequences", convention={
        "model": "weights read once per step (all experts' once the batch is large), 2 FLOPs per weight per token "
                 "that uses it; activations' bytes neglected (B ≪ D, F)", "source": PART7})
    c = _chip_figures(chip, dtype, peak, None, bandwidth)
    C = _num(peak) if peak is not None else c.need("peak_flops")
    W = _num(bandwidth) if bandwidth is not None else c.need("bandwidth")
    _pos("peak", C)
    _pos("bandwidth", W)
    if top_k > experts:
        raise SolverInputError(f"top_k ({top_k}) exceeds experts ({experts})", param="top_k")
    bw = dtype_bytes(weight_dtype)
    ai = r.step("C / W_hbm", f"{fmt(C)} / {fmt(W)}", C / W, "FLOP/B")
    b = r.step("B_crit = (C/W_hbm) · bytes per weight / 2", f"{fmt(ai)} · {fmt(bw)} / 2", ai * bw / 2, "sequences")
    if experts > 1:
        b = r.step("B_crit · E/k (each expert sees B·k/E tokens)", f"{fmt(b)} · {experts}/{top_k}",
                   b * Fraction(experts, top_k), "sequences")
    r.answer = b
    r.breakdown.update(batch=b, chip_intensity=ai, weight_bytes=bw)
    if heads is not None:
        bk = dtype_bytes(kv_dtype)
        if latent is not None:
            r.convention["attention"] = "MLA, absorbed: scores over d_c + d_r, values over d_c, per head"
            att = r.step("I = 2N(2d_c + d_r) / ((d_c + d_r) · bytes)",
                         f"2·{heads}·(2·{latent} + {rope_dim}) / (({latent} + {rope_dim}) · {fmt(bk)})",
                         Fraction(2 * heads * (2 * latent + rope_dim)) / ((latent + rope_dim) * bk), "FLOP/B")
        else:
            K = heads if kv_heads is None else kv_heads
            if heads % K:
                raise SolverInputError(f"heads ({heads}) is not a multiple of kv_heads ({K})", param="kv_heads")
            r.convention["attention"] = "MHA/GQA/MQA: 4·N·d_h FLOPs over 2·K·d_h·bytes per cached position"
            att = r.step("I = 4·N·d_h / (2·K·d_h·bytes) = 2N/(K·bytes)", f"2·{heads} / ({K} · {fmt(bk)})",
                         Fraction(2 * heads) / (K * bk), "FLOP/B")
        r.breakdown["attention_intensity"] = att
    return r


KV_READ = Convention("kv", "Whether the step reads the batch's KV cache (bytes that grow with the batch).", {
    "counted": Choice("bytes = weights + B·S·X: each sequence's whole cache read every step", PART7 + ", 'What about "
                      "attention?'"),
    "ignored": Choice("bytes = weights only: the text's B_crit rule (its 'B ≪ D, F', short contexts)",
                      PART7 + ", 'Linear operations: what bottlenecks us?'")}, "counted")

STEP = Convention("step", "How the step's reads and FLOPs combine.", {
    "max": Choice("T = max((N·w + B·S·X)/W_hbm, FLOPs/C): one roofline for the step, every read overlapping the "
                  "FLOPs", "Williams et al. 2009 (roofline)"),
    "kv-plus-max": Choice("T = B·S·X/W_hbm + max(N·w/W_hbm, FLOPs/C): attention (the cache read) never compute-bound "
                          "and not overlapped; the MLP's weights read against its FLOPs",
                          PART7 + ", 'Theoretical estimates for LLM latency and throughput'")}, "max")


@formula("decode_latency", "Latency against throughput of a decode step at batch B: step time = max(bytes / HBM "
         "bandwidth, FLOPs / peak), bytes = weights (+ the batch's KV cache), FLOPs = 2·N_active·B; the per-token "
         "latency, tokens/s, and the batch where the step turns compute-bound.",
         (Input("params", "N: parameters read each step (an MoE: all experts'; or a model)", kind="count",
                default=None, minimum=1, aliases=("N",)),
          Input("batch", "B: sequences decoding together (one token each per step)", kind="count", integer=True,
                minimum=1, aliases=("B",)),
          Input("active_params", "N_active: parameters each token uses (an MoE's shared + k experts'; default N)",
                kind="count", default=None, minimum=1, aliases=("N_active", "active")),
          Input("context", "S: cached tokens per sequence (8k = 8,192)", kind="count", integer=True, default=0,
                minimum=0, binary_k=True, aliases=("S", "seq")),
          Input("kv_per_token", "X: KV-cache bytes per cached token, all layers (MHA, GQA: 2·L·K·d_h·bytes; MLA: "
                "L·(d_c + d_r)·bytes)", unit="B", default=0, aliases=("kv_bytes_per_token", "X")),
          _CHIP, _PEAK, _BW,
          Input("chips", "chips the weights, cache and FLOPs are spread over (no communication time)", kind="count",
                integer=True, default=1, minimum=1, aliases=("n_chips", "gpus")),
          Input("weight_dtype", "the weights' element type (bf16, int8, fp8, int4)", kind="dtype", default="bf16"),
          Input("dtype", "the compute dtype whose peak C is used (and the cache's, with a model)", kind="dtype",
                default="bf16"),
          Input("model", "a model preset or config: N, N_active and X from it (GQA, latent attention, windows, "
                "experts as qkv solve memory counts them)", kind="model", default=None, aliases=("preset",))),
         (Output("time", "s", "the step: max(T_mem, T_math); each sequence's per-token latency", key="time_s"),
          Output("throughput", "tokens/s", "B / step time", key="tokens_per_second"),
          Output("memory_time", "s", "(N·w + B·S·X) / (chips·W_hbm)", key="memory_time_s"),
          Output("compute_time", "s", "2·N_active·B / (chips·C)", key="compute_time_s"),
          Output("critical_batch", "", "the B where T_math = T_mem: N·w·C / (2·N_active·W_hbm − S·X·C); none "
                 "when one sequence's cache read outlasts its FLOPs"),
          Output("max_throughput", "tokens/s", "the ceiling as B grows: chips / max(2·N_active/C, S·X/W_hbm)"),
          Output("weight_bytes", "B", "N·w"),
          Output("kv_bytes", "B", "B·S·X (0 when ignored)"),
          Output("flops", "FLOP", "2·N_active·B")),
         conventions=(KV_READ, STEP), solve="decode-latency", source=PART7 + ", 'Linear operations' and 'What about "
         "attention?'; Williams et al. 2009 (roofline)")
def _decode_latency(params, batch, active_params, context, kv_per_token, chip, peak, bandwidth, chips, weight_dtype,
                    dtype, model=None, kv="counted", step="max"):
    from solver.units import dtype_bytes

    r = Result(answer=None, unit="s", convention={
        "model": "2 FLOPs per weight per token; attention's own FLOPs and the activations' bytes not counted",
        "kv": kv, "step": STEP.choices[step].meaning,
        "latency": "every sequence gets one token per step: per-token latency = step time", "source": PART7})
    c = _chip_figures(chip, dtype, peak, None, bandwidth)
    C = _num(peak) if peak is not None else c.need("peak_flops")
    W = _num(bandwidth) if bandwidth is not None else c.need("bandwidth")
    _pos("peak", C)
    _pos("bandwidth", W)
    if model is not None:
        from solver.systems.decode_read import model_read
        from solver.systems.inference import kv_bytes_per_token_at
        from solver.units import dtype_bytes as _db

        if isinstance(model, str):  # the registry-made command passes the preset's name
            from solver.counting.presets import get_config

            model = get_config(model)
        read = model_read(model, batch, max(context, 1), weight_dtype, dtype, experts="all")
        if params is None:
            params = read.weight_bytes / _db(weight_dtype)
        if active_params is None:
            active_params = read.flop_params
        if not kv_per_token and context:
            kv_per_token = kv_bytes_per_token_at(model, context, dtype)
        r.convention["from_model"] = ("N: the weights one step reads (every expert; the input embedding a lookup of "
                                      "B rows), N_active: the parameters a token's FLOPs use, X: the cache a "
                                      "sequence of S positions holds ÷ S (grouped heads, latent attention, windows)")
    if params is None:
        raise SolverInputError("give params= (N) or a model", param="params")
    N, Na = _num(params), _num(params if active_params is None else active_params)
    _pos("params", N)
    if Na > N:
        raise SolverInputError(f"active_params ({fmt(Na)}) exceeds params ({fmt(N)})", param="active_params")
    B, n = batch, chips
    w = dtype_bytes(weight_dtype)
    X = _num(kv_per_token) if kv == "counted" else 0
    _pos("kv_per_token", X, zero=True)
    S = context if kv == "counted" else 0
    wb = r.step("weight bytes = N·w", f"{fmt(N)} · {fmt(w)}", N * w, "B")
    kvb = r.step("KV bytes = B·S·X" + ("" if kv == "counted" else " (ignored)"), f"{B} · {S} · {fmt(X)}", B * S * X,
                 "B")
    fl = r.step("FLOPs = 2·N_active·B", f"2 · {fmt(Na)} · {B}", 2 * Na * B, "FLOP")
    tm = r.step("T_mem = (N·w + B·S·X) / (chips·W_hbm)", f"({fmt(wb)} + {fmt(kvb)}) / ({n} · {fmt(W)})",
                (wb + kvb) / (n * W), "s")
    tc = r.step("T_math = FLOPs / (chips·C)", f"{fmt(fl)} / ({n} · {fmt(C)})", fl / (n * C), "s")
    if step == "max":
        t = r.step("T = max(T_mem, T_math): the step, and each sequence's per-token latency",
                   f"max({fmt(tm)}, {fmt(tc)})", max(tm, tc), "s")
    else:
        tk = r.step("T_KV = B·S·X / (chips·W_hbm)", f"{fmt(kvb)} / ({n} · {fmt(W)})", kvb / (n * W), "s")
        tw = r.step("T_weights = N·w / (chips·W_hbm)", f"{fmt(wb)} / ({n} · {fmt(W)})", wb / (n * W), "s")
        t = r.step("T = T_KV + max(T_weights, T_math): the step, and each sequence's per-token latency",
                   f"{fmt(tk)} + max({fmt(tw)}, {fmt(tc)})", tk + max(tw, tc), "s")
    tps = r.step("throughput = B / T", f"{B} / {fmt(t)}", B / t, "tokens/s")
    r.answer = t
    r.convention["bound"] = "compute" if tc > (tm if step == "max" else wb / (n * W)) else "memory"
    r.breakdown.update(time_s=t, tokens_per_second=tps, memory_time_s=tm, compute_time_s=tc, weight_bytes=wb,
                       kv_bytes=kvb, flops=fl, peak_flops=C, hbm_bandwidth=W, bound=r.convention["bound"])
    per_seq_math, per_seq_kv = 2 * Na / C, S * X / W  # seconds per sequence (times chips) each adds
    if step == "kv-plus-max":  # the MLP turns compute-bound where its FLOPs outlast the weights' read
        r.breakdown["critical_batch"] = r.step("B* = (N·w/W_hbm) / (2·N_active/C) (the cache read is apart)",
                                               f"({fmt(wb)}/{fmt(W)}) / (2·{fmt(Na)}/{fmt(C)})",
                                               wb / W / per_seq_math, "sequences")
        r.breakdown["max_throughput"] = r.step("throughput → chips / (2·N_active/C + S·X/W_hbm) as B grows",
                                               f"{n} / ({fmt(per_seq_math)} + {fmt(per_seq_kv)})",
                                               n / (per_seq_math + per_seq_kv), "tokens/s")
        return r
    den = r.step("2·N_active/C − S·X/W_hbm (each sequence's compute time minus its cache-read time)",
                 f"2·{fmt(Na)}/{fmt(C)} − {S}·{fmt(X)}/{fmt(W)}", per_seq_math - per_seq_kv, "s")
    if den > 0:
        r.breakdown["critical_batch"] = r.step("B* = (N·w/W_hbm) / (2·N_active/C − S·X/W_hbm)",
                                               f"({fmt(wb)}/{fmt(W)}) / {fmt(den)}", wb / W / den, "sequences")
    else:
        r.convention["critical_batch"] = ("none: one sequence's cache read takes at least its compute time, so the "
                                          "step stays memory-bound at every batch")
    r.breakdown["max_throughput"] = r.step("throughput → chips / max(2·N_active/C, S·X/W_hbm) as B grows",
                                           f"{n} / max({fmt(per_seq_math)}, {fmt(per_seq_kv)})",
                                           n / max(per_seq_math, per_seq_kv), "tokens/s")
    return r


@formula("kv_budget", "The HBM left for the KV cache after the weights, and the largest batch or context it holds.",
         (Input("weights", "the weights' bytes (weights(model, dtype=...))", unit="B"),
          Input("kv_per_token", "KV-cache bytes per cached token, all layers (kv_cache(...).per_token)", unit="B"),
          _CHIP, Input("hbm", "HBM bytes per chip (instead of a chip)", unit="B", default=None),
          Input("chips", "chips the weights and cache are sharded over", kind="count", integer=True, default=1,
                minimum=1, aliases=("n_chips",)),
          Input("reserve", "fraction of HBM kept back (activations, workspace), 0 to 1", kind="fraction", default=0,
                maximum=1),
          Input("context", "tokens cached per sequence (8k = 8,192)", kind="count", integer=True, default=None,
                minimum=1, binary_k=True, aliases=("seq",)),
          Input("batch", "sequences held at once", kind="count", integer=True, default=None, minimum=1,
                aliases=("B",))),
         (Output("free", "B", "HBM left for the cache: chips·HBM·(1 − reserve) − weights"),
          Output("tokens", "", "cached tokens that fit, ⌊free / per token⌋"),
          Output("max_batch", "", "sequences of the given context that fit", ("context",)),
          Output("max_context", "", "tokens per sequence that fit at the given batch", ("batch",))),
         solve="kv-budget", source=PART7 + ", 'What about memory?'")
def _kv_budget(weights, kv_per_token, chip, hbm, chips, reserve, context, batch):
    r = Result(answer=None, unit="bytes", convention={"hbm": "the chip preset's datasheet capacity unless hbm= "
                                                             "is given; the cache sharded evenly over the chips"})
    c = _chip_figures(chip, hbm=hbm)
    H = _num(hbm) if hbm is not None else c.need("hbm")
    _pos("hbm", H)
    _pos("weights", weights, zero=True)
    _pos("kv_per_token", kv_per_token)
    if not 0 <= reserve < 1:
        raise SolverInputError(f"must be from 0 up to (not) 1 (got {reserve})", param="reserve")
    total = r.step("HBM = chips · HBM per chip · (1 − reserve)", f"{chips} · {fmt(H)} · (1 − {fmt(reserve)})",
                   chips * H * (1 - _num(reserve)), "B")
    free = r.step("free = HBM − weights", f"{fmt(total)} − {fmt(weights)}", total - _num(weights), "B")
    r.answer = free
    r.breakdown["free"] = free
    if free <= 0:
        r.breakdown.update(tokens=0, max_batch=0 if context else None, max_context=0 if batch else None)
        r.step("the weights alone fill the HBM", "", 0)
        return r
    r.breakdown["tokens"] = r.step("tokens = ⌊free / per token⌋", f"⌊{fmt(free)} / {fmt(kv_per_token)}⌋",
                                   math.floor(free / _num(kv_per_token)))
    if context is not None:
        r.breakdown["max_batch"] = r.step("batch = ⌊free / (per token · context)⌋",
                                          f"⌊{fmt(free)} / ({fmt(kv_per_token)} · {context})⌋",
                                          math.floor(free / (_num(kv_per_token) * context)), "sequences")
    if batch is not None:
        r.breakdown["max_context"] = r.step("context = ⌊free / (per token · batch)⌋",
                                            f"⌊{fmt(free)} / ({fmt(kv_per_token)} · {batch})⌋",
                                            math.floor(free / (_num(kv_per_token) * batch)), "tokens")
    return r


CASE = Convention("case", "How A[I, J] and B[J, K] are sharded (the contracting dimension is J).", {
    "none": Choice("Case 1, A[I_X, J] · B[J, K_Y] → C[I_X, K_Y]: no contracting dimension sharded; no collective",
                   PART3),
    "one": Choice("Case 2, A[I, J_X] · B[J, K]: one input sharded on J; all-gather it first (V = I·J·bytes)", PART3),
    "both": Choice("Case 3, A[I, J_X] · B[J_X, K] → C[I, K]{U_X}: multiply the shards, all-reduce the partial sums "
                   "(V = I·K·bytes, twice an all-gather's time)", PART3),
    "both-scatter": Choice("Case 3 ending sharded: reduce-scatter the partial sums to C[I, K_X] (V = I·K·bytes)",
                           PART3),
    "same-axis": Choice("Case 4, A[I_X, J] · B[J, K_X]: both non-contracting dimensions on one axis; all-gather "
                        "the smaller input first", PART3)}, "none")


@formula("sharded_matmul", "A sharded matmul A[I, J] · B[J, K] (the cases of A[I_X, J] · B[J, K_Y]): which collective "
         "it needs, its bytes and its time (bytes / (W·axes), the text's bandwidth-bound form).",
         (Input("i", "I: rows of A", kind="count", integer=True, minimum=1, aliases=("I",)),
          Input("j", "J: the contracting dimension", kind="count", integer=True, minimum=1, aliases=("J",)),
          Input("k", "K: columns of B", kind="count", integer=True, minimum=1, aliases=("K",)),
          Input("dtype", "element type", kind="dtype", default="bf16"),
          _CHIP, _LINK, _AXES),
         (Output("bytes", "B", "V: the array the collective moves (the whole of it)"),
          Output("time", "s", "the collective's time, V/(W·axes) (all-reduce: 2V/(W·axes))", ("link",), key="time_s"),
          Output("flops", "FLOP", "the whole matmul's FLOPs, 2·I·J·K")),
         conventions=(CASE, RING), solve="sharded-matmul", source=PART3)
def _sharded_matmul(i, j, k, dtype, chip, link, axes, case="none", ring="bidirectional"):
    from solver.units import dtype_bytes

    b = dtype_bytes(dtype)
    r = Result(answer=None, unit="B", convention={"case": case, "ring": ring, "source": PART3})
    r.breakdown["flops"] = r.step("FLOPs = 2·I·J·K", f"2·{i}·{j}·{k}", 2 * i * j * k, "FLOP")
    factor = 1
    if case == "none":
        V, what = 0, "none: each chip multiplies its shards"
    elif case == "one":
        V, what = r.step("V = I·J·bytes (all-gather A over X)", f"{i}·{j}·{fmt(b)}", i * j * b, "B"), "all-gather"
    elif case in ("both", "both-scatter"):
        V = r.step("V = I·K·bytes (the partial sums C[I, K]{U_X})", f"{i}·{k}·{fmt(b)}", i * k * b, "B")
        what, factor = ("all-reduce", 2) if case == "both" else ("reduce-scatter", 1)
    else:
        small = "A" if i <= k else "B"
        V = r.step(f"V = min(I·J, J·K)·bytes (all-gather {small})", f"min({i}·{j}, {j}·{k})·{fmt(b)}",
                   min(i, k) * j * b, "B")
        what = "all-gather"
    r.convention["collective"] = what
    r.answer = V
    r.breakdown["bytes"] = V
    c = _chip_figures(chip, dtype, None, link)
    beta = _num(link) if link is not None else c.link_bandwidth
    if beta is not None:
        _pos("link", beta)
        _pos("axes", axes)
        dirs = 2 if ring == "bidirectional" else 1
        W = r.step("W = directions · β · axes", f"{dirs} · {fmt(beta)} · {fmt(axes)}", dirs * _num(beta) * axes, "B/s")
        r.breakdown["time_s"] = r.step(f"T = {'2·' if factor == 2 else ''}V / W",
                                       f"{factor} · {fmt(V)} / {fmt(W)}", factor * V / W, "s")
    return r


@formula("weight_stationary", "An MLP layer in inference sharded weight-stationary over N chips: the 2D layout "
         "(W_in[D_X, F_YZ]: all-gather the input over YZ, all-reduce over X, reduce-scatter the output over YZ) against "
         "the 1D (Megatron) one; each one's communication time, the best X, and the chips above which 2D moves less.",
         (Input("batch", "B: tokens in the step (a decode batch: sequences)", kind="count", minimum=1, aliases=("B",)),
          Input("d_model", "D: the model width", kind="count", integer=True, minimum=1, aliases=("D",)),
          _DFF, Input("chips", "N = X·Y·Z: chips the weights are sharded over", kind="count", integer=True, minimum=1,
                      aliases=("N", "n_chips")),
          Input("x", "X: the ways D is sharded (default: the best, √(N·D/(2F)), a real number)", kind="count",
                default=None, minimum=1, aliases=("X",)),
          Input("dtype", "the activations' element type", kind="dtype", default="bf16"),
          _CHIP, _LINK, _PEAK,
          Input("axes_x", "mesh axes X spans (the text: 1 of a 3D torus)", kind="count", default=1, minimum=1),
          Input("axes_yz", "mesh axes YZ spans (the text: 2)", kind="count", default=2, minimum=1),
          Input("axes_1d", "mesh axes the 1D layout's collectives run over (the text: 3)", kind="count", default=3,
                minimum=1)),
         (Output("time_2d", "s", "b·B·D/(X·W·axes_yz) · 2 (gather in, scatter out) + 2·b·B·F/(YZ·W·axes_x) "
                 "(the all-reduce)", ("link",), key="time_2d_s"),
          Output("time_1d", "s", "2·b·B·D/(W·axes_1d): all-gather the input, reduce-scatter the output", ("link",),
                 key="time_1d_s"),
          Output("bytes_2d", "B", "per chip: the gathered input b·B·D/X, twice, and the all-reduced b·B·F/YZ"),
          Output("bytes_1d", "B", "per chip: the gathered input b·B·D, twice"),
          Output("x_opt", "", "the X minimising the 2D time, √(N·D·axes_x/(F·axes_yz)) (the text: √(N/8) at F = 4D)"),
          Output("yz", "", "Y·Z = N / X"),
          Output("time_2d_opt", "s", "the 2D time at X_opt", ("link",), key="time_2d_opt_s"),
          Output("crossover_chips", "", "N above which 2D at its best moves less than 1D, 4·axes_1d²·F/(D·axes_x·axes_yz) "
                 "(the text's axes: 18F/D)"),
          Output("math_time", "s", "4·B·D·F / (N·C): the layer's FLOPs, fully sharded", ("peak",), key="math_time_s")),
         conventions=(RING,), solve="weight-stationary", source=PART7 + ", Question 7 and Appendix B; Pope et al. 2022 "
         "(Efficiently Scaling Transformer Inference), §3.2")
def _weight_stationary(batch, d_model, d_ff, chips, x, dtype, chip, link, peak, axes_x, axes_yz, axes_1d,
                       ring="bidirectional"):
    from solver.units import dtype_bytes

    b = dtype_bytes(dtype)
    B, D, F, N = _num(batch), d_model, d_ff, chips
    for name, v in (("batch", B), ("axes_x", axes_x), ("axes_yz", axes_yz), ("axes_1d", axes_1d)):
        _pos(name, v)
    r = Result(answer=None, unit="s", convention={
        "layout": "2D: In[B, D_XYZ] → AllGather_YZ → In[B, D_X]; W_in[D_X, F_YZ] → AllReduce_X → Tmp[B, F_YZ]; "
                  "W_out[F_YZ, D_X] → ReduceScatter_YZ → Out[B, D_XYZ]. 1D: weights sharded over F only, the input "
                  "all-gathered and the output reduce-scattered over every axis",
        "time": "bytes / (W · axes) per collective, an all-reduce twice an all-gather ((n−1)/n dropped)",
        "ring": ring, "source": PART7})
    opt = r.step("X_opt = √(N·D·axes_x / (F·axes_yz)) (where the two terms of T_2D are equal)",
                 f"√({N}·{D}·{fmt(axes_x)} / ({F}·{fmt(axes_yz)}))", math.sqrt(N * D * float(axes_x) / (F * float(axes_yz))))
    X = opt if x is None else _num(x)
    if X > N:
        raise SolverInputError(f"x ({fmt(X)}) exceeds the chips ({N})", param="x")
    yz = r.step("Y·Z = N / X", f"{N} / {fmt(X)}", N / X)
    gath = r.step("gathered input per chip = b·B·D/X", f"{fmt(b)}·{fmt(B)}·{D}/{fmt(X)}", b * B * D / X, "B")
    red = r.step("all-reduced partial sums per chip = b·B·F/(Y·Z)", f"{fmt(b)}·{fmt(B)}·{F}/{fmt(yz)}", b * B * F / yz,
                 "B")
    one = r.step("1D: the gathered input per chip = b·B·D", f"{fmt(b)}·{fmt(B)}·{D}", b * B * D, "B")
    cross = r.step("N* = 4·axes_1d²·F / (D·axes_x·axes_yz) (T_1D = T_2D at X_opt; axes 1, 2, 3: 18·F/D)",
                   f"4·{fmt(axes_1d)}²·{F} / ({D}·{fmt(axes_x)}·{fmt(axes_yz)})",
                   4 * _num(axes_1d) ** 2 * F / (D * _num(axes_x) * _num(axes_yz)))
    r.answer = 2 * gath + red
    r.breakdown.update(bytes_2d=2 * gath + red, bytes_1d=2 * one, x_opt=opt, x=X, yz=yz, crossover_chips=cross)
    c = _chip_figures(chip, dtype, peak, link)
    beta = _num(link) if link is not None else c.link_bandwidth
    if beta is not None:
        _pos("link", beta)
        dirs = 2 if ring == "bidirectional" else 1
        W = r.step("W = directions · β (one mesh axis)", f"{dirs} · {fmt(beta)}", dirs * _num(beta), "B/s")
        t2 = r.step("T_2D = 2 · b·B·D/(X·W·axes_yz) + 2 · b·B·F/(YZ·W·axes_x)",
                    f"2·{fmt(gath)}/({fmt(W)}·{fmt(axes_yz)}) + 2·{fmt(red)}/({fmt(W)}·{fmt(axes_x)})",
                    2 * gath / (W * _num(axes_yz)) + 2 * red / (W * _num(axes_x)), "s")
        t1 = r.step("T_1D = 2 · b·B·D/(W·axes_1d)", f"2·{fmt(one)}/({fmt(W)}·{fmt(axes_1d)})",
                    2 * one / (W * _num(axes_1d)), "s")
        yo = N / opt
        topt = r.step("T_2D at X_opt", f"X = {fmt(opt)}",
                      2 * b * B * D / opt / (W * _num(axes_yz)) + 2 * b * B * F / yo / (W * _num(axes_x)), "s")
        r.breakdown.update(time_2d_s=t2, time_1d_s=t1, time_2d_opt_s=topt)
        r.answer = t2
    C = _num(peak) if peak is not None else c.peak_flops
    if C is not None:
        _pos("peak", C)
        r.breakdown["math_time_s"] = r.step("T_math = 4·B·D·F / (N·C)", f"4·{fmt(B)}·{D}·{F} / ({N}·{fmt(C)})",
                                            4 * B * D * F / (N * C), "s")
    return r


PART12 = BOOK + ", Part 12 'How to Think About GPUs'"


@formula("ep_d_ff", "Expert parallelism over Z GPUs (nodes of 8): the least expert width F for which the MLP's "
         "FLOPs hide its two all-to-alls, F > α · (Z − 8)/Z · min(8k/Z, 1) · Z/k, α = C/W_node.",
         (Input("ep", "Z: the expert-parallel degree (GPUs)", kind="count", integer=True, minimum=1,
                aliases=("Z", "gpus")),
          Input("top_k", "k: experts each token uses", kind="count", integer=True, minimum=1, aliases=("k",)),
          _CHIP, _PEAK,
          Input("link", "W: each GPU's share of the node's egress (400 GB/s on an H100 SuperPod)", unit="B/s",
                default=None, aliases=("node_egress", "bw")),
          Input("gpus_per_node", "GPUs per node (their all-to-all stays inside; 8 in an HGX node)", kind="count",
                integer=True, default=8, minimum=1, aliases=("per_node",)),
          Input("d_ff", "F: the expert's hidden width, for the compute/comms ratio", kind="count", integer=True,
                default=None, minimum=1, aliases=("F",))),
         (Output("d_ff_min", "", "the least F that stays compute-bound"),
          Output("ratio", "", "T_math / T_comms at the given F", ("d_ff",))),
         solve="ep-d-ff", source=PART12 + ", 'Expert Parallelism'")
def _ep_d_ff(ep, top_k, chip, peak, link, gpus_per_node, d_ff):
    r = Result(answer=None, unit="", convention={
        "model": "T_math = 4·B·k·D·F/(Z·C); T_comms = 4·B·D·(Z − g)/(W·Z) · min(g·k/Z, 1) (two all-to-alls leaving "
                 "the node, g GPUs per node)", "source": PART12})
    c = _chip_figures(chip, "bf16", peak, link)
    C = _num(peak) if peak is not None else c.need("peak_flops")
    W = _num(link) if link is not None else c.need("link_bandwidth")
    _pos("peak", C)
    _pos("link", W)
    g, Z, k = gpus_per_node, ep, top_k
    alpha = r.step("α = C / W", f"{fmt(C)} / {fmt(W)}", C / W, "FLOP/B")
    if Z <= g:
        f = r.step("Z ≤ GPUs per node: nothing leaves the node", f"{Z} ≤ {g}", 0)
    else:
        m = min(Fraction(g * k, Z), Fraction(1))
        f = r.step("F_min = α · (Z − g)/k · min(g·k/Z, 1)", f"{fmt(alpha)} · ({Z} − {g})/{k} · {fmt(m)}",
                   alpha * Fraction(Z - g, k) * m)
    r.answer = f
    r.breakdown.update(d_ff_min=f, alpha=alpha)
    if d_ff is not None and f > 0:  # inside a node there is no cross-node time to compare with
        r.breakdown["ratio"] = r.step("T_math/T_comms = F / F_min", f"{d_ff} / {fmt(f)}", d_ff / f)
    return r


SCHEDULE = Convention("schedule", "The pipeline schedule.", {
    "1f1b": Choice("1F1B (PipeDream-Flush): bubble (p − 1)/(m + p − 1), as GPipe's", "Narayanan et al. 2021, §2.2"),
    "gpipe": Choice("GPipe: all forwards, then all backwards; the same bubble, more activations held",
                    "Huang et al. 2019"),
    "interleaved": Choice("interleaved 1F1B with v chunks per stage: (p − 1)/(v·m + p − 1); m a multiple of p",
                          "Narayanan et al. 2021, §2.2")}, "1f1b")


@formula("pipeline_batch", "Pipeline parallelism: the fewest microbatches (and the batch) that keep the bubble "
         "at or under a fraction of the step, v·m ≥ (p − 1)(1 − f)/f.",
         (Input("stages", "p: pipeline stages", kind="count", integer=True, minimum=1, aliases=("p",)),
          Input("bubble", "f: the largest bubble allowed, a fraction of the step (0.05)", kind="fraction",
                maximum=1, aliases=("f", "max_bubble")),
          Input("chunks", "v: model chunks per stage (interleaved)", kind="count", integer=True, default=1,
                minimum=1, aliases=("v",)),
          Input("microbatch", "tokens (or sequences) per microbatch, for the batch", kind="count", default=None,
                aliases=("microbatch_size",)),
          Input("dp", "data-parallel replicas, for the global batch", kind="count", integer=True, default=1,
                minimum=1)),
         (Output("microbatches", "", "m: the fewest microbatches per step"),
          Output("bubble_at_m", "", "the bubble fraction at that m"),
          Output("batch", "", "m · microbatch · dp: the batch that hides the bubble", ("microbatch",))),
         conventions=(SCHEDULE,), solve="pipeline-batch", source="Narayanan et al. 2021 §2.2; Huang et al. 2019")
def _pipeline_batch(stages, bubble, chunks, microbatch, dp, schedule="1f1b"):
    r = Result(answer=None, unit="microbatches", convention={
        "model": "equal stages, no communication time; bubble = idle fraction of the step", "schedule": schedule})
    p = stages
    f = Fraction(repr(bubble)) if isinstance(bubble, float) else Fraction(bubble)  # 0.05 read as 1/20, exactly
    if not 0 < f < 1:
        raise SolverInputError(f"must be between 0 and 1 (got {bubble})", param="bubble")
    v = chunks if schedule == "interleaved" else 1
    if schedule != "interleaved" and chunks != 1:
        raise SolverInputError("chunks (v) applies to the interleaved schedule only", param="chunks")
    need = r.step("v·m ≥ (p − 1)(1 − f)/f", f"({p} − 1)(1 − {fmt(f)})/{fmt(f)}", (p - 1) * (1 - f) / f)
    m = max(1, math.ceil(need / v))
    m = r.step("m = ⌈(p − 1)(1 − f)/(f·v)⌉", f"⌈{fmt(need)}/{v}⌉", m, "microbatches")
    if schedule == "interleaved" and m % p:
        m = r.step("rounded up to a multiple of p (the interleaved schedule)", f"{p}·⌈m/{p}⌉", p * -(-m // p),
                   "microbatches")
    frac = r.step("bubble = (p − 1)/(v·m + p − 1)", f"({p} − 1)/({v}·{m} + {p} − 1)", Fraction(p - 1, v * m + p - 1))
    r.answer = m
    r.breakdown.update(microbatches=m, bubble_at_m=frac)
    if microbatch is not None:
        r.breakdown["batch"] = r.step("batch = m · microbatch · dp", f"{m} · {fmt(microbatch)} · {dp}",
                                      m * _num(microbatch) * dp)
    return r


FORMULAS = (_pipeline_batch.formula, _ep_d_ff.formula, _dp_batch.formula, _tp_max.formula, _fsdp_tp_batch.formula, _fsdp_opt.formula, _tp_decode_max.formula,
            _decode_batch.formula, _decode_latency.formula, _kv_budget.formula, _sharded_matmul.formula,
            _weight_stationary.formula)
