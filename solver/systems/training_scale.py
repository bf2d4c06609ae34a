"""Training at scale: FSDP / ZeRO-3 per-layer communication against compute, gradient accumulation
and the pipeline bubble, and whether a 3D-parallel configuration fits a chip's memory.

Conventions (named in every result):

- FSDP / ZeRO-3 (full sharding over n data-parallel ranks, parameters re-gathered in the backward,
  as FSDP's ``reshard_after_forward=True``): per layer of P parameters at b bytes, the forward
  all-gathers S = P·b bytes (nccl-tests' S: the gathered output), the backward all-gathers them again
  and reduce-scatters the gradients (S = P·g bytes, the input). On a ring each costs (n − 1)/n·S/β
  with β the link bandwidth per direction; in the backward the all-gather and the reduce-scatter share
  the link one after the other.
- compute per layer: 2·P FLOPs per token forward, 4·P backward (matmuls with the layer's weights; the
  attention-score FLOPs are left out), at ``peak × efficiency``.
- overlap: the gather of layer i + 1 runs while layer i computes (one layer of prefetch). Over L
  layers of communication a and compute c each: time = a + c + (L − 1)·max(a, c) (the first gather
  and the last compute are never hidden); the communication hides when a ≤ c, i.e. when each GPU's
  tokens reach T* = (n − 1)/n · b · C / (2·β) in the forward (independent of P).
- gradient accumulation: m = B / (b·d) micro-batches per optimizer step (B the global batch in
  sequences, b the micro-batch, d the data-parallel degree; must divide). The pipeline bubble of
  1F1B (or GPipe) with p stages is (p − 1)/(m + p − 1) of the step: more accumulation, smaller bubble.
- 3D fit, per GPU of the first pipeline stage: model states of P/(t·p) parameters (bf16 weights 2 B,
  bf16 gradients 2 B, optimizer K = 12 B: fp32 master, Adam m, v), sharded over d by ZeRO stage 1
  (optimizer), 2 (+ gradients), 3 (+ weights); activations per layer from Korthikanti et al. 2022
  (``solver.systems.parallelism.activations_parallel``) for L/p layers, times the micro-batches 1F1B
  keeps in flight on the first stage: min(p, m).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt


def _int(name: str, v, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise SolverInputError(f"must be an integer >= {lo} (got {v!r})", param=name)
    return v


def _pos(name: str, v) -> float:
    if v is None or isinstance(v, bool) or not v > 0:
        raise SolverInputError(f"must be positive (got {v!r})", param=name)
    return v


def overlapped_time(comm: float, compute: float, layers: int) -> float:
    """a + c + (L − 1)·max(a, c): L layers, the next layer's communication during this layer's compute."""
    return comm + compute + (layers - 1) * max(comm, compute)


def fsdp_overlap(layer_params: int, ranks: int, tokens: int, *, link_bandwidth: float, peak_flops: float,
                 efficiency: float = 1.0, param_bytes: int = 2, grad_bytes: int = 2, layers: int = 1) -> Result:
    """Per-layer all-gather / reduce-scatter bytes and times of FSDP (ZeRO-3) against the layer's compute."""
    P, n, T = _int("layer_params", layer_params), _int("ranks", ranks, 2), _int("tokens", tokens)
    L = _int("layers", layers)
    beta, C = _pos("link_bandwidth", link_bandwidth), _pos("peak_flops", peak_flops)
    if not 0 < efficiency <= 1:
        raise SolverInputError(f"must be in (0, 1] (got {efficiency!r})", param="efficiency")
    pb, gb = _int("param_bytes", param_bytes), _int("grad_bytes", grad_bytes)
    r = Result(answer=None, unit="s", convention={
        "sharding": "FSDP / ZeRO-3 over n ranks; parameters gathered in the forward and again in the backward",
        "bytes": "S as nccl-tests reports it: all-gather S = the gathered layer, reduce-scatter S = the full gradient",
        "ring": "each collective (n − 1)/n·S/β, β per direction; backward all-gather and reduce-scatter one after the other",
        "compute": "2·P FLOPs per token forward, 4·P backward, at peak × efficiency (attention scores left out)",
        "overlap": "one layer of prefetch: L layers take a + c + (L − 1)·max(a, c)",
        "answer": "exposed communication per step (forward + backward) over L layers"})
    C_eff = C * efficiency
    ag = r.step("all-gather S = P × bytes per parameter", f"{P:,} × {pb}", P * pb, "bytes")
    rs = r.step("reduce-scatter S = P × bytes per gradient", f"{P:,} × {gb}", P * gb, "bytes")
    f = Fraction(n - 1, n)
    t_ag = r.step("t_AG = (n − 1)/n × S / β", f"{fmt(f)} × {fmt(ag)} / {fmt(beta)}", float(f) * ag / beta, "s")
    t_rs = r.step("t_RS = (n − 1)/n × S / β", f"{fmt(f)} × {fmt(rs)} / {fmt(beta)}", float(f) * rs / beta, "s")
    c_f = r.step("forward compute = 2·P·T / (C·η)", f"2 × {P:,} × {T:,} / {fmt(C_eff)}", 2 * P * T / C_eff, "s")
    c_b = r.step("backward compute = 4·P·T / (C·η)", f"4 × {P:,} × {T:,} / {fmt(C_eff)}", 4 * P * T / C_eff, "s")
    a_b = t_ag + t_rs
    fwd = r.step("forward time = a + c + (L − 1)·max(a, c)", f"{fmt(t_ag)} + {fmt(c_f)} + {L - 1} × {fmt(max(t_ag, c_f))}",
                 overlapped_time(t_ag, c_f, L), "s")
    bwd = r.step("backward time = a + c + (L − 1)·max(a, c), a = t_AG + t_RS",
                 f"{fmt(a_b)} + {fmt(c_b)} + {L - 1} × {fmt(max(a_b, c_b))}", overlapped_time(a_b, c_b, L), "s")
    exposed = r.step("exposed = (forward + backward) − L·(c_fwd + c_bwd)", f"{fmt(fwd)} + {fmt(bwd)} − {L} × {fmt(c_f + c_b)}",
                     fwd + bwd - L * (c_f + c_b), "s")
    t_star = r.step("T* (forward hides) = (n − 1)/n × b × C·η / (2β)", f"{fmt(f)} × {pb} × {fmt(C_eff)} / (2 × {fmt(beta)})",
                    float(f) * pb * C_eff / (2 * beta), "tokens")
    r.answer = exposed
    r.breakdown.update(all_gather_bytes=ag, reduce_scatter_bytes=rs, all_gather_time_s=t_ag, reduce_scatter_time_s=t_rs,
                       forward_compute_s=c_f, backward_compute_s=c_b, forward_hidden=t_ag <= c_f,
                       backward_hidden=a_b <= c_b, forward_s=fwd, backward_s=bwd, exposed_s=exposed,
                       tokens_to_hide_forward=t_star, layers=L)
    return r


def grad_accumulation(global_batch: int, micro_batch: int, dp: int, *, stages: int = 1) -> Result:
    """Micro-batches per optimizer step m = B/(b·d), and the 1F1B bubble (p − 1)/(m + p − 1) with p stages."""
    from solver.systems.parallelism import pipeline_bubble

    B, b, d, p = _int("global_batch", global_batch), _int("micro_batch", micro_batch), _int("dp", dp), _int("stages", stages)
    if B % (b * d):
        raise SolverInputError(f"the global batch {B} is not a multiple of micro-batch × DP = {b * d}", param="global_batch")
    r = Result(answer=None, unit="steps", convention={
        "batch": "B sequences per optimizer step = micro-batch b × data-parallel d × accumulation steps m",
        "bubble": "1F1B (or GPipe) with p stages: (p − 1)/(m + p − 1) of the step idle",
        "answer": "gradient-accumulation steps m (micro-batches per optimizer step per pipeline)"})
    m = r.step("m = B / (b × d)", f"{B} / ({b} × {d})", B // (b * d), "steps")
    r.answer = m
    r.breakdown.update(accumulation_steps=m, sequences_per_micro_batch=b, dp=d, stages=p)
    if p > 1:
        bub = pipeline_bubble(p, m)
        frac = r.step("bubble = (p − 1)/(m + p − 1)", f"({p} − 1)/({m} + {p} − 1)", bub.breakdown["bubble_fraction"])
        r.breakdown.update(bubble_fraction=frac, efficiency=1 - frac)
    return r


def fit_3d(params: int, layers: int, d_model: int, n_heads: int, seq: int, micro_batch: int, *, tp: int, pp: int,
           dp: int, zero_stage: int = 1, microbatches: int | None = None, sequence_parallel: bool = True,
           recompute: str = "selective", hbm: float | None = None, optimizer_bytes: int = 12) -> Result:
    """Memory per GPU on the first pipeline stage of a TP × PP × DP run: model states + activations."""
    from solver.systems.parallelism import activations_parallel

    P, L = _int("params", params), _int("layers", layers)
    t, p, d = _int("tp", tp), _int("pp", pp), _int("dp", dp)
    if L % p:
        raise SolverInputError(f"{L} layers do not split evenly over {p} stages", param="pp")
    if zero_stage not in (0, 1, 2, 3):
        raise SolverInputError(f"must be 0, 1, 2 or 3 (got {zero_stage!r})", param="zero_stage")
    m = p if microbatches is None else _int("microbatches", microbatches)
    K = _int("optimizer_bytes", optimizer_bytes)
    r = Result(answer=None, unit="bytes", convention={
        "model_states": f"bf16 weights 2 B + bf16 gradients 2 B + optimizer {K} B per parameter, P/(t·p) per GPU, "
                        f"ZeRO stage {zero_stage} shards " + ["nothing", "the optimizer states", "optimizer states and "
                        "gradients", "optimizer states, gradients and weights"][zero_stage] + " over d",
        "parameters": "split evenly by tensor and pipeline parallelism (embeddings not set apart)",
        "activations": "Korthikanti et al. 2022 per layer, "
                       f"{'sequence parallel' if sequence_parallel else 'no sequence parallelism'}, recompute {recompute}",
        "in_flight": "1F1B keeps min(p, m) micro-batches' activations on the first stage",
        "answer": "bytes per GPU on the first stage"})
    shard = Fraction(P, t * p)
    ps = r.step("parameters per GPU = P / (t·p)", f"{P:,} / ({t} × {p})", shard)
    w = r.step("weights = 2 × P/(t·p)" + (" / d" if zero_stage == 3 else ""), f"2 × {fmt(ps)}" + (f" / {d}" if zero_stage == 3 else ""),
               2 * ps / (d if zero_stage == 3 else 1), "bytes")
    g = r.step("gradients = 2 × P/(t·p)" + (" / d" if zero_stage >= 2 else ""), f"2 × {fmt(ps)}" + (f" / {d}" if zero_stage >= 2 else ""),
               2 * ps / (d if zero_stage >= 2 else 1), "bytes")
    o = r.step(f"optimizer = {K} × P/(t·p)" + (" / d" if zero_stage >= 1 else ""), f"{K} × {fmt(ps)}" + (f" / {d}" if zero_stage >= 1 else ""),
               K * ps / (d if zero_stage >= 1 else 1), "bytes")
    act = activations_parallel(seq, micro_batch, d_model, n_heads, tp=t, sequence_parallel=sequence_parallel,
                               recompute=recompute)
    per_layer = r.step("activations per layer (Korthikanti et al.)", act.steps[0].substitution, act.answer, "bytes")
    inflight = r.step("micro-batches in flight on stage 1 = min(p, m)", f"min({p}, {m})", min(p, m))
    a = r.step("activations = (L/p) × in flight × per layer", f"{L // p} × {inflight} × {fmt(per_layer)}",
               Fraction(L // p) * inflight * per_layer, "bytes")
    total = r.step("total = weights + gradients + optimizer + activations", f"{fmt(w)} + {fmt(g)} + {fmt(o)} + {fmt(a)}",
                   w + g + o + a, "bytes")
    r.answer = total
    r.breakdown.update(params_per_gpu=ps, weights_bytes=w, gradients_bytes=g, optimizer_bytes=o,
                       activations_per_layer_bytes=per_layer, microbatches_in_flight=inflight,
                       activations_bytes=a, total_bytes=total, gpus=t * p * d)
    if hbm is not None:
        hb = _pos("hbm", hbm)
        r.breakdown.update(hbm_bytes=hb, left_bytes=hb - total, fits=total <= hb)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's fsdp(...) and
# grad_accum(...), from qkv solve fsdp and grad-accum.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402


@formula("fsdp", "FSDP / ZeRO-3: per-layer all-gather and reduce-scatter bytes and times against the layer's compute, "
         "and the time they leave exposed.",
         (Input("layer_params", "P: parameters of one layer", kind="count", integer=True, minimum=1, aliases=("P",)),
          Input("ranks", "n: sharding ranks", kind="count", integer=True, minimum=2, aliases=("n", "gpus")),
          Input("tokens", "T: tokens per GPU per micro-batch step (b × s)", kind="count", integer=True, minimum=1,
                aliases=("T",)),
          Input("link", "β: link bandwidth per direction (default: the chip's)", unit="B/s", default=None,
                aliases=("link_bandwidth", "bandwidth", "bw")),
          Input("chip", "a chip preset: its dense bf16 peak and its link", kind="chip", default=None, aliases=("hw",)),
          Input("peak", "FLOP/s per GPU (instead of the chip's)", unit="FLOP/s", default=None,
                aliases=("peak_flops",)),
          Input("efficiency", "η: the share of the peak reached, 0 to 1", kind="fraction", default=1, maximum=1,
                aliases=("mfu",)),
          Input("param_bytes", "bytes per gathered parameter", kind="count", integer=True, minimum=1, maximum=8,
                default=2),
          Input("grad_bytes", "bytes per reduced gradient", kind="count", integer=True, minimum=1, maximum=8,
                default=2),
          Input("layers", "L: layers", kind="count", integer=True, minimum=1, default=1, aliases=("L",))),
         (Output("exposed", "s", "communication time not hidden behind compute", key="exposed_s"),
          Output("all_gather_bytes", "B", "bytes each rank receives per layer's all-gather"),
          Output("reduce_scatter_bytes", "B", "bytes each rank sends per layer's reduce-scatter"),
          Output("tokens_to_hide_forward", "", "T* above which the forward's all-gather hides")),
         solve="fsdp", source="Zhao et al. 2023 (PyTorch FSDP); Rajbhandari et al. 2020 (ZeRO-3)")
def _fsdp_formula(layer_params, ranks, tokens, link, chip, peak, efficiency, param_bytes, grad_bytes, layers):
    from solver.errors import SolverInputError

    if peak is None:
        if chip is None:
            raise SolverInputError("needed here: give peak= or a chip", param="peak")
        peak = chip.peak("bf16")
    if link is None:
        if chip is None:
            raise SolverInputError("needed here: give link= (per direction) or a chip", param="link")
        link = chip.link_bandwidth
    return fsdp_overlap(layer_params, ranks, tokens, link_bandwidth=float(link), peak_flops=float(peak),
                        efficiency=float(efficiency), param_bytes=param_bytes, grad_bytes=grad_bytes, layers=layers)


@formula("grad_accum", "Gradient-accumulation steps m = B / (b·d) of a global batch, and the 1F1B bubble they leave.",
         (Input("global_batch", "B: sequences per optimizer step", kind="count", integer=True, minimum=1,
                maximum=10**9, aliases=("B",)),
          Input("micro_batch", "b: sequences per micro-batch", kind="count", integer=True, minimum=1, maximum=10**6,
                aliases=("b",)),
          Input("dp", "d: data-parallel degree", kind="count", integer=True, minimum=1, maximum=10**7, aliases=("d",)),
          Input("stages", "p: pipeline stages", kind="count", integer=True, minimum=1, maximum=10**4, default=1,
                aliases=("pp", "p"))),
         (Output("steps", "", "m: micro-batches per optimizer step", key="accumulation_steps"),
          Output("bubble", "", "the 1F1B bubble (p − 1)/(m + p − 1)", ("stages",), key="bubble_fraction")),
         solve="grad-accum", source="Narayanan et al. 2021")
def _grad_accum_formula(global_batch, micro_batch, dp, stages):
    return grad_accumulation(global_batch, micro_batch, dp, stages=stages)


FIT_RECOMPUTE = Convention("recompute", "Which activations the backward pass recomputes.", {
    "selective": Choice("the score-matrix part recomputed (Megatron's default)", "Korthikanti et al. 2022, §4.2"),
    "none": Choice("every activation kept", "Korthikanti et al. 2022, Table 2"),
    "full": Choice("only each layer's input kept", "Korthikanti et al. 2022, §4")}, "selective")
FIT_SEQUENCE_PARALLEL = Convention("sequence_parallel", "Whether sequence parallelism splits what tensor parallelism "
                                   "replicates.", {
    "on": Choice("LayerNorm and dropout activations split over the t GPUs too", "Korthikanti et al. 2022, §4.2.2"),
    "off": Choice("those replicated on every tensor-parallel GPU", "Korthikanti et al. 2022, Table 2")}, "on")


@formula("fit_3d", "Does a TP × PP × DP run fit? ZeRO-sharded model states plus 1F1B's activations on the first "
         "stage, bytes per GPU.",
         (Input("params", "P: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),
          Input("layers", "L: layers", kind="count", integer=True, minimum=1, maximum=10**5, aliases=("L",)),
          Input("d_model", "h: hidden size", kind="count", integer=True, minimum=1, maximum=10**6, aliases=("hidden",)),
          Input("n_heads", "a: attention heads", kind="count", integer=True, minimum=1, maximum=10**5,
                aliases=("heads", "a")),
          Input("seq", "s: sequence length", kind="count", integer=True, minimum=1, maximum=10**8, binary_k=True,
                aliases=("s",)),
          Input("micro_batch", "b: sequences per micro-batch", kind="count", integer=True, minimum=1, maximum=10**6,
                default=1, aliases=("b",)),
          Input("tp", "t: tensor-parallel GPUs", kind="count", integer=True, minimum=1, maximum=10**4, default=1,
                aliases=("t",)),
          Input("pp", "p: pipeline stages", kind="count", integer=True, minimum=1, maximum=10**4, default=1,
                aliases=("p",)),
          Input("dp", "d: data-parallel GPUs", kind="count", integer=True, minimum=1, maximum=10**7, default=1,
                aliases=("d",)),
          Input("zero", "ZeRO stage over d: 0, 1, 2 or 3", kind="count", integer=True, minimum=0, maximum=3, default=1,
                aliases=("zero_stage",)),
          Input("microbatches", "m: micro-batches per step (default p)", kind="count", integer=True, minimum=1,
                maximum=10**6, default=None, aliases=("m",)),
          Input("chip", "a chip preset: its HBM (datasheet)", kind="chip", default=None, aliases=("hw",)),
          Input("hbm", "HBM bytes per GPU (instead of the chip's)", unit="B", default=None)),
         (Output("bytes", "B", "bytes per GPU on the first stage", key="total_bytes"),
          Output("activations", "B", "the activations 1F1B keeps in flight", key="activations_bytes"),
          Output("model_states", "B", "weights + gradients + optimizer states", key="model_states_bytes"),
          Output("left", "B", "HBM − bytes", ("hbm",), key="left_bytes")),
         conventions=(FIT_RECOMPUTE, FIT_SEQUENCE_PARALLEL), solve="fit-3d",
         source="Narayanan et al. 2021; Korthikanti et al. 2022; Rajbhandari et al. 2020")
def _fit_3d_formula(params, layers, d_model, n_heads, seq, micro_batch, tp, pp, dp, zero, microbatches, chip, hbm,
                    recompute="selective", sequence_parallel="on"):
    if hbm is None and chip is not None:
        hbm = chip.hbm_bytes
    r = fit_3d(params, layers, d_model, n_heads, seq, micro_batch, tp=tp, pp=pp, dp=dp, zero_stage=zero,
               microbatches=microbatches, sequence_parallel=sequence_parallel == "on", recompute=recompute,
               hbm=None if hbm is None else float(hbm))
    b = r.breakdown
    b["model_states_bytes"] = b["weights_bytes"] + b["gradients_bytes"] + b["optimizer_bytes"]
    return r


FORMULAS = (_fsdp_formula.formula, _grad_accum_formula.formula, _fit_3d_formula.formula)
