"""Parallelism arithmetic: tensor (Megatron), pipeline, data parallel and ZeRO communication.

Conventions (every function here follows them):

- Communication is priced with :mod:`solver.systems.collectives` (α-β model, ring algorithms, β per
  direction). "Bytes sent" is what each rank puts on its outgoing link.
- Tensor parallelism as in Megatron-LM (Shoeybi et al. 2019, §3): the attention block and the
  MLP each end in a row-parallel matmul whose partial outputs are all-reduced ("g"), and each
  begins with a column-parallel matmul whose input gradient is all-reduced in the backward
  pass ("f"). Per layer: 2 all-reduces of the activation b·s·h forward, 2 backward.
  Sequence parallelism (Korthikanti et al. 2022, §4.2.2) replaces each all-reduce by an
  all-gather and a reduce-scatter of the same tensor: the same bytes on the ring, but the
  LayerNorm and dropout activations are sharded.
- Pipeline bubble, two conventions, both named: the fraction of the step the stages idle,
  (p − 1)/(m + p − 1) (GPipe and 1F1B), (p − 1)/(v·m + p − 1) (interleaved, v chunks per
  stage); and the bubble over the ideal compute time as Narayanan et al. 2021 (§2.2) write it,
  (p − 1)/m, (p − 1)/(v·m) interleaved.
- ZeRO (Rajbhandari et al. 2020, §7): plain data parallelism all-reduces the gradients, 2Ψ
  elements sent per GPU (reduce-scatter Ψ + all-gather Ψ); ZeRO-1 and 2 the same 2Ψ; ZeRO-3
  adds a parameter all-gather in the forward and again in the backward pass: 3Ψ. The exact
  ring figure is (n − 1)/n of each.
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.systems.collectives import ring_cost
from solver.units import dtype_bytes

SCHEDULES = ("gpipe", "1f1b", "interleaved")
TP_MODES = ("train", "forward")


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return value


def _pos(name: str, value, zero: bool = False) -> float:
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return value


# ---------------------------------------------------------------------------------------
# Tensor parallelism
# ---------------------------------------------------------------------------------------


def tensor_parallel(batch: int, seq: int, d_model: int, tp: int, *, dtype: str = "bf16",
                    sequence_parallel: bool = False, mode: str = "train", n_layers: int = 1,
                    link_bandwidth: float | None = None, latency: float = 0.0) -> Result:
    """Bytes a Megatron tensor-parallel layer all-reduces per step (forward 2, backward 2 of b·s·h).

    With ``link_bandwidth`` (per direction) the time of that communication on a ring, not
    overlapped with compute.
    """
    b, s, h, t = _int("batch", batch), _int("seq", seq), _int("d_model", d_model), _int("tp", tp, 2)
    L = _int("n_layers", n_layers)
    if mode not in TP_MODES:
        raise SolverInputError(f"must be train or forward (got {mode!r})", param="mode")
    a = dtype_bytes(dtype)
    r = Result(answer=None, unit="bytes", convention={
        "source": "Megatron-LM (Shoeybi et al. 2019, §3); sequence parallelism: Korthikanti et al. 2022",
        "per": "layer" if L == 1 else f"{L} layers", "mode": mode, "dtype": dtype,
        "collective": ("all-gather + reduce-scatter per all-reduce (sequence parallel)" if sequence_parallel
                       else "all-reduce"),
        "bytes_sent": "ring: each rank sends 2(t−1)/t of each all-reduced tensor (AG + RS: (t−1)/t each)"})
    m = r.step("message M = b·s·h·a (one activation tensor)", f"{b} × {s} × {h} × {fmt(a)}", b * s * h * a, "bytes")
    per_pass = 2
    count = r.step("all-reduces per layer = 2 forward" + (" + 2 backward" if mode == "train" else ""),
                   "2 + 2" if mode == "train" else "2", per_pass * (2 if mode == "train" else 1), "all-reduces")
    volume = r.step("all-reduced per layer = count·M", f"{count} × {fmt(m)}", count * m, "bytes")
    _, sent_one = ring_cost("all-reduce", m, t)
    sent = r.step("sent per rank per layer = count·2(t−1)/t·M", f"{count} × 2 × ({t} − 1)/{t} × {fmt(m)}",
                  count * sent_one, "bytes")
    if L > 1:
        volume = r.step("all-reduced, all layers = L·(per layer)", f"{L} × {fmt(volume)}", L * volume, "bytes")
        sent = r.step("sent per rank, all layers", f"{L} × {fmt(sent)}", L * sent, "bytes")
    r.answer = volume
    r.breakdown.update(message_bytes=m, collectives_per_layer=count * (2 if sequence_parallel else 1),
                       all_reduces_per_layer=count, all_reduced_bytes=volume, bytes_sent_per_rank=sent)
    if sequence_parallel:
        r.breakdown.update(all_gathers_per_layer=count, reduce_scatters_per_layer=count)
    if link_bandwidth is not None:
        bw, alpha = _pos("link_bandwidth", link_bandwidth), _pos("latency", latency, True)
        steps = L * count * 2 * (t - 1)
        tt = r.step("t = steps·α + sent/β   (not overlapped)", f"{steps} × {fmt(alpha)} + {fmt(sent)} / {fmt(bw)}",
                    steps * alpha + float(sent) / bw, "s")
        r.breakdown.update(time_s=tt, link_bandwidth=bw)
    return r


def sharded_matmul(batch: int, d_in: int, d_out: int, tp: int, *, peak_flops: float, link_bandwidth: float,
                   dtype: str = "bf16") -> Result:
    """Communication roofline of a row-parallel matmul X[B, D/t] @ W[D/t, F] followed by an all-reduce of Y[B, F].

    t_compute = 2·B·D·F / (t·C); t_comm = 2(t−1)/t·B·F·a / β (ring, per direction). The transfer can
    hide behind the compute when t_compute ≥ t_comm, i.e. D ≥ (t − 1)·a·C/β, independent of B;
    below that width the matmul is communication-bound whatever the batch.
    """
    B, D, F, t = _int("batch", batch), _int("d_in", d_in), _int("d_out", d_out), _int("tp", tp, 2)
    C, bw = _pos("peak_flops", peak_flops), _pos("link_bandwidth", link_bandwidth)
    a = dtype_bytes(dtype)
    r = Result(answer=None, unit="s", convention={
        "layout": "row-parallel (Megatron): each chip holds D/t rows of W and X[B, D/t]; Y partial sums all-reduced",
        "flops": "2 per multiply-add", "bandwidth": "β per direction; ring all-reduce; α neglected",
        "overlap": "perfect: t = max(t_compute, t_comm)", "dtype": dtype})
    tc = r.step("t_compute = 2·B·D·F / (t·C)", f"2 × {B} × {D} × {F} / ({t} × {fmt(C)})", 2 * B * D * F / (t * C), "s")
    _, sent = ring_cost("all-reduce", B * F * a, t)
    tm = r.step("t_comm = 2(t−1)/t · B·F·a / β", f"2 × ({t} − 1)/{t} × {B} × {F} × {fmt(a)} / {fmt(bw)}",
                float(sent) / bw, "s")
    d_min = r.step("hidden when D ≥ (t − 1)·a·C / β", f"({t} − 1) × {fmt(a)} × {fmt(C)} / {fmt(bw)}",
                   (t - 1) * float(a) * C / bw, "")
    which = "compute" if tc >= tm else "communication"
    tt = r.step("t = max(t_compute, t_comm)", f"max({fmt(tc)}, {fmt(tm)})  → {which}-bound", max(tc, tm), "s")
    r.answer = tt
    r.breakdown.update(compute_time_s=tc, comm_time_s=tm, bound=which, min_d_in=d_min,
                       min_shard_width=d_min / t, bytes_sent_per_rank=sent, time_s=tt)
    return r


# ---------------------------------------------------------------------------------------
# Pipeline parallelism
# ---------------------------------------------------------------------------------------


def pipeline_bubble(stages: int, microbatches: int, *, schedule: str = "1f1b", chunks: int = 1) -> Result:
    """Bubble of a pipeline step: (p − 1)/(m + p − 1) of the step; (p − 1)/m of the ideal time (Narayanan et al.)."""
    p, m = _int("stages", stages), _int("microbatches", microbatches)
    if schedule not in SCHEDULES:
        raise SolverInputError(f"must be one of {', '.join(SCHEDULES)} (got {schedule!r})", param="schedule")
    v = _int("chunks", chunks) if schedule == "interleaved" else 1
    if schedule != "interleaved" and chunks != 1:
        raise SolverInputError("chunks (v) applies to the interleaved schedule only", param="chunks")
    if schedule == "interleaved" and m % p:
        raise SolverInputError(f"the interleaved schedule needs microbatches divisible by stages ({m} % {p} ≠ 0)",
                               param="microbatches")
    r = Result(answer=None, unit="", convention={
        "answer": "fraction of the step that a stage idles",
        "model": "every microbatch takes the same forward and backward time on every stage; no communication time",
        "ratio": "bubble ÷ ideal compute time, as Narayanan et al. 2021 (§2.2) write it, in the breakdown",
        "schedule": {"gpipe": "GPipe: all forwards, then all backwards",
                     "1f1b": "1F1B (PipeDream-Flush): one forward, one backward in the steady state",
                     "interleaved": f"interleaved 1F1B, v = {v} model chunks per stage"}[schedule]})
    if schedule == "interleaved":
        frac = r.step("bubble fraction = (p − 1)/(v·m + p − 1)", f"({p} − 1)/({v} × {m} + {p} − 1)",
                      Fraction(p - 1, v * m + p - 1), "")
        ratio = r.step("bubble / ideal = (p − 1)/(v·m)", f"({p} − 1)/({v} × {m})", Fraction(p - 1, v * m), "")
    else:
        frac = r.step("bubble fraction = (p − 1)/(m + p − 1)", f"({p} − 1)/({m} + {p} − 1)",
                      Fraction(p - 1, m + p - 1), "")
        ratio = r.step("bubble / ideal = (p − 1)/m", f"({p} − 1)/{m}", Fraction(p - 1, m), "")
    held = {"gpipe": m, "1f1b": min(p, m), "interleaved": None}[schedule]
    r.answer = frac
    r.breakdown.update(bubble_fraction=frac, bubble_over_ideal=ratio, efficiency=1 - frac, stages=p,
                       microbatches=m, chunks=v)
    if held is not None:
        r.step("microbatches whose activations stage 1 holds at most" + (" = m" if schedule == "gpipe" else " = min(p, m)"),
               str(m) if schedule == "gpipe" else f"min({p}, {m})", held, "microbatches")
        r.breakdown["first_stage_microbatches_held"] = held
    return r


# ---------------------------------------------------------------------------------------
# Data parallelism and ZeRO
# ---------------------------------------------------------------------------------------


def data_parallel(params: int, gpus: int, *, stage: int = 0, grad_dtype: str = "bf16",
                  link_bandwidth: float | None = None) -> Result:
    """Elements each GPU communicates per step: 2Ψ (DP, ZeRO-1, ZeRO-2) or 3Ψ (ZeRO-3), and the exact ring bytes."""
    P, n = _int("params", params), _int("gpus", gpus, 2)
    if stage not in (0, 1, 2, 3):
        raise SolverInputError(f"must be 0, 1, 2 or 3 (got {stage!r})", param="stage")
    g = dtype_bytes(grad_dtype)
    r = Result(answer=None, unit="elements", convention={
        "source": "Rajbhandari et al. 2020 (ZeRO), §7: 2Ψ for data parallel and ZeRO-1/2, 3Ψ for ZeRO-3",
        "count": "elements each GPU sends per step, the paper's round figure (n ≫ 1); exact ring bytes beside",
        "stage": ["0: plain data parallel", "1: P_os", "2: P_os+g", "3: P_os+g+p"][stage], "dtype": grad_dtype})
    if stage < 3:
        vol = r.step("volume = 2Ψ (reduce-scatter Ψ + all-gather Ψ of the gradients)", f"2 × {fmt(P)}", 2 * P, "elements")
        parts = 2
    else:
        vol = r.step("volume = 3Ψ (gradients reduce-scattered Ψ; parameters all-gathered in forward Ψ and backward Ψ)",
                     f"3 × {fmt(P)}", 3 * P, "elements")
        parts = 3
    exact = r.step(f"bytes sent per GPU = {parts}·(n − 1)/n·Ψ·b", f"{parts} × ({n} − 1)/{n} × {fmt(P)} × {fmt(g)}",
                   Fraction(parts * (n - 1), n) * P * g, "bytes")
    r.answer = vol
    r.breakdown.update(elements=vol, bytes_sent_per_gpu=exact, round_bytes=vol * g, ratio_to_data_parallel=Fraction(parts, 2))
    if link_bandwidth is not None:
        bw = _pos("link_bandwidth", link_bandwidth)
        t = r.step("t = bytes sent / β   (α neglected, not overlapped)", f"{fmt(exact)} / {fmt(bw)}", float(exact) / bw, "s")
        r.breakdown["time_s"] = t
    return r


# ---------------------------------------------------------------------------------------
# Activation memory with tensor and sequence parallelism; FLOPs with recomputation
# ---------------------------------------------------------------------------------------

RECOMPUTE = ("none", "selective", "full")


def activations_parallel(seq: int, batch: int, d_model: int, n_heads: int, *, tp: int = 1,
                         sequence_parallel: bool = False, recompute: str = "none", n_layers: int = 1) -> Result:
    """Activation bytes per layer per GPU, Korthikanti et al. 2022 (Table 2), 16-bit values, 1-byte masks.

    none: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence parallelism s·b·h·(34/t + 5·a·s/(h·t)).
    selective (the score-matrix part recomputed): s·b·h·(10 + 24/t), or 34·s·b·h/t with sequence parallelism.
    full (only each layer's input kept): 2·s·b·h. The 10·s·b·h are the LayerNorm inputs, the inputs of
    the QKV and first MLP matmuls and the two dropout masks, which tensor parallelism replicates and
    sequence parallelism splits; the 24·s·b·h and 5·a·s²·b are split by tensor parallelism.
    """
    s, b, h, a = _int("seq", seq), _int("batch", batch), _int("d_model", d_model), _int("n_heads", n_heads)
    t, L = _int("tp", tp), _int("n_layers", n_layers)
    if recompute not in RECOMPUTE:
        raise SolverInputError(f"must be none, selective or full (got {recompute!r})", param="recompute")
    r = Result(answer=None, unit="bytes", convention={
        "source": "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, Table 2",
        "dtype": "16-bit activations, 1-byte dropout masks", "per": "GPU, " + ("layer" if L == 1 else f"{L} layers"),
        "parallelism": f"t = {t}" + (", sequence parallel" if sequence_parallel else ""), "recompute": recompute})
    sbh = s * b * h
    replicated = Fraction(10 * sbh, t) if sequence_parallel else Fraction(10 * sbh)
    split = Fraction(24 * sbh, t)
    scores = Fraction(5 * a * s * s * b, t)
    sp = "/t" if sequence_parallel else ""
    if recompute == "full":
        per = r.step("A = 2·s·b·h   (only the layer input kept)", f"2 × {s} × {b} × {h}", Fraction(2 * sbh), "bytes")
    elif recompute == "selective":
        per = r.step(f"A = 10·s·b·h{sp} + 24·s·b·h/t   (score-matrix activations recomputed)",
                     f"{fmt(replicated)} + {fmt(split)}", replicated + split, "bytes")
    else:
        per = r.step(f"A = 10·s·b·h{sp} + 24·s·b·h/t + 5·a·s²·b/t",
                     f"{fmt(replicated)} + {fmt(split)} + {fmt(scores)}", replicated + split + scores, "bytes")
    total = per if L == 1 else r.step("total = L·A", f"{L} × {fmt(per)}", L * per, "bytes")
    r.answer = total
    r.breakdown.update(per_layer_bytes=per, total_bytes=total, replicated_bytes=replicated, split_bytes=split,
                       score_bytes=scores)
    return r


def flops_utilisation(params: int, tokens_per_second: float, chips: int, peak_flops: float, *,
                      recompute: str = "none", n_layers: int = 0, d_model: int = 0, seq: int = 0) -> Result:
    """Model FLOPs utilisation (MFU) against hardware FLOPs utilisation (HFU) with recomputation.

    Model FLOPs per token: 6N, plus PaLM's attention term 12·L·h·s when n_layers, d_model and seq are
    given (Chowdhery et al. 2022, Appendix B). Hardware FLOPs add what recomputation runs again:
    full, one more forward pass (2N + 4·L·h·s); selective, the attention scores' forward (4·L·h·s).
    MFU = model FLOPs/s ÷ (chips·peak); HFU = hardware FLOPs/s ÷ (chips·peak).
    """
    N, n = _int("params", params), _int("chips", chips)
    tps, peak = _pos("tokens_per_second", tokens_per_second), _pos("peak_flops", peak_flops)
    if recompute not in RECOMPUTE:
        raise SolverInputError(f"must be none, selective or full (got {recompute!r})", param="recompute")
    L, h, s = (_int(k, v, 0) for k, v in (("n_layers", n_layers), ("d_model", d_model), ("seq", seq)))
    r = Result(answer=None, unit="", convention={
        "flops": "2 per multiply-add; model FLOPs = 6N per token" + (" + 12·L·h·s (PaLM's attention term)" if L else
                                                                     " (attention term not included)"),
        "recompute": recompute, "answer": "MFU (HFU in the breakdown)"})
    attn = 12 * L * h * s
    model = r.step("model FLOPs/token = 6N + 12·L·h·s", f"6 × {fmt(N)} + 12 × {L} × {h} × {s}", 6 * N + attn, "FLOP")
    extra = {"none": 0, "selective": 4 * L * h * s, "full": 2 * N + 4 * L * h * s}[recompute]
    hw = r.step("hardware FLOPs/token = model + recomputed", f"{fmt(model)} + {fmt(extra)}", model + extra, "FLOP")
    mfu = r.step("MFU = model FLOPs/token · tokens/s ÷ (chips·peak)", f"{fmt(model)} × {fmt(tps)} / ({n} × {fmt(peak)})",
                 model * tps / (n * peak), "")
    hfu = r.step("HFU = hardware FLOPs/token · tokens/s ÷ (chips·peak)", f"{fmt(hw)} × {fmt(tps)} / ({n} × {fmt(peak)})",
                 hw * tps / (n * peak), "")
    r.answer = mfu
    r.breakdown.update(mfu=mfu, hfu=hfu, model_flops_per_token=model, hardware_flops_per_token=hw,
                       recomputed_flops_per_token=extra)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's tp(...),
# tp_matmul(...), pipeline(...) and dp_comm(...), from the qkv solve commands of those names.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

_LINK = Input("link", "β: link bandwidth per direction", unit="B/s", default=None,
              aliases=("link_bandwidth", "bandwidth", "bw", "beta"))
_MODEL = Input("model", "a model preset or config (instead of the sizes given by hand)", kind="model", default=None,
               aliases=("preset", "config"))

TP_MODE = Convention("mode", "Which passes the tensor-parallel layer runs.", {
    "train": Choice("forward and backward: 2 + 2 all-reduces per layer", "Shoeybi et al. 2019 (Megatron-LM), §3"),
    "forward": Choice("forward only (inference): 2 all-reduces per layer", "Shoeybi et al. 2019, §3")}, "train")
TP_SEQUENCE_PARALLEL = Convention("sequence_parallel", "What each all-reduce becomes.", {
    "off": Choice("all-reduces of b·s·h", "Shoeybi et al. 2019"),
    "on": Choice("each all-reduce an all-gather + a reduce-scatter, the same bytes",
                 "Korthikanti et al. 2022, §4.2.2")}, "off")


@formula("tp", "Bytes a Megatron tensor-parallel layer all-reduces per step (4 × b·s·h·a in training), and their "
         "time on a link.",
         (Input("batch", "b: micro-batch size", kind="count", integer=True, minimum=1, aliases=("b",)),
          Input("seq", "s: sequence length", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("s", "seq_len")),
          Input("d_model", "h: hidden size (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("h", "hidden", "hidden_size")),
          Input("tp", "t: tensor-parallel GPUs", kind="count", integer=True, minimum=2, aliases=("t",)),
          Input("layers", "L: layers (1 = per layer)", kind="count", integer=True, minimum=1, default=1,
                aliases=("n_layers", "L")),
          Input("dtype", "activation dtype", kind="dtype", default="bf16"),
          _LINK, Input("latency", "α: seconds per step", unit="s", default=0, aliases=("alpha",)), _MODEL),
         (Output("bytes", "B", "bytes all-reduced (L layers)", key="all_reduced_bytes"),
          Output("sent_per_rank", "B", "bytes each rank sends (ring)", key="bytes_sent_per_rank"),
          Output("message", "B", "one all-reduce's message b·s·h·a", key="message_bytes"),
          Output("time", "s", "steps·α + sent/β, not overlapped", ("link",), key="time_s")),
         conventions=(TP_MODE, TP_SEQUENCE_PARALLEL), solve="tp", source="Shoeybi et al. 2019 (Megatron-LM)")
def _tp_formula(batch, seq, d_model, tp, layers, dtype, link, latency, model, mode="train", sequence_parallel="off"):
    d_model = d_model or (model.d_model if model is not None else None)
    if d_model is None:
        raise SolverInputError("needs d_model (the hidden size h), or a model", param="d_model")
    return tensor_parallel(batch, seq, d_model, tp, dtype=dtype, sequence_parallel=sequence_parallel == "on",
                           mode=mode, n_layers=layers, link_bandwidth=None if link is None else float(link),
                           latency=float(latency))


@formula("tp_matmul", "Row-parallel X[B,D/t] @ W[D/t,F] then an all-reduce of Y[B,F]: when the communication hides "
         "behind the compute.",
         (Input("batch", "B: rows of X", kind="count", integer=True, minimum=1, aliases=("B", "M")),
          Input("d_in", "D: the contracted size", kind="count", integer=True, minimum=1, aliases=("D", "K")),
          Input("d_out", "F: columns of W", kind="count", integer=True, minimum=1, aliases=("F", "N")),
          Input("tp", "t: tensor-parallel GPUs", kind="count", integer=True, minimum=2, aliases=("t",)),
          Input("chip", "a chip preset: its peak at the dtype (and its link)", kind="chip", default=None,
                aliases=("hw",)),
          Input("peak", "peak FLOP/s per chip (instead of the chip's)", unit="FLOP/s", default=None,
                aliases=("peak_flops",)),
          _LINK, Input("dtype", "activation dtype", kind="dtype", default="bf16")),
         (Output("time", "s", "max(t_compute, t_comm)", key="time"),
          Output("compute_time", "s", "2·B·D·F / (t·C)", key="compute_time_s"),
          Output("comm_time", "s", "2(t−1)/t · B·F·a / β", key="comm_time_s"),
          Output("min_d_in", "", "the D above which the compute hides the all-reduce")),
         solve="tp-matmul", source="Austin et al., How to Scale Your Model (2025), Part 3")
def _tp_matmul_formula(batch, d_in, d_out, tp, chip, peak, link, dtype):
    from solver.systems.chips import resolve_chip

    c = resolve_chip(chip, dtype, peak_flops=None if peak is None else float(peak),
                     link_bandwidth=None if link is None else float(link))
    r = sharded_matmul(batch, d_in, d_out, tp, peak_flops=c.need("peak_flops"), link_bandwidth=c.need("link_bandwidth"),
                       dtype=dtype)
    r.breakdown["time"] = r.answer
    return r


PIPELINE_SCHEDULE = Convention("schedule", "The pipeline schedule.", {
    "1f1b": Choice("one forward, one backward: bubble (p − 1)/(m + p − 1), p micro-batches held",
                   "Narayanan et al. 2021 (PipeDream-Flush), §2.2"),
    "gpipe": Choice("all forwards then all backwards: the same bubble, m micro-batches held", "Huang et al. 2019"),
    "interleaved": Choice("v model chunks per stage: bubble (p − 1)/(v·m + p − 1)", "Narayanan et al. 2021, §2.2")},
    "1f1b")


@formula("pipeline", "Pipeline bubble: (p − 1)/(m + p − 1) of the step ((p − 1)/m of the ideal time).",
         (Input("stages", "p: pipeline stages", kind="count", integer=True, minimum=1, aliases=("p", "pp")),
          Input("microbatches", "m: micro-batches per step", kind="count", integer=True, minimum=1,
                aliases=("m", "num_microbatches")),
          Input("chunks", "v: model chunks per stage (interleaved)", kind="count", integer=True, minimum=1, default=1,
                aliases=("v", "virtual_stages"))),
         (Output("bubble", "", "share of the step a stage idles", key="bubble_fraction"),
          Output("bubble_over_ideal", "", "bubble ÷ the ideal compute time"),
          Output("efficiency", "", "1 − bubble")),
         conventions=(PIPELINE_SCHEDULE,), solve="pipeline", source="Narayanan et al. 2021")
def _pipeline_formula(stages, microbatches, chunks, schedule="1f1b"):
    return pipeline_bubble(stages, microbatches, schedule=schedule, chunks=chunks)


@formula("dp_comm", "Data-parallel / ZeRO communication per step: 2Ψ elements (stages 0-2) or 3Ψ (stage 3).",
         (Input("params", "Ψ: parameters (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("N", "psi")),
          Input("gpus", "data-parallel GPUs", kind="count", integer=True, minimum=2, aliases=("dp", "chips")),
          Input("stage", "ZeRO stage: 0 (plain DP), 1, 2 or 3", kind="count", integer=True, minimum=0, maximum=3,
                default=0),
          Input("grad_dtype", "gradient dtype", kind="dtype", default="bf16", aliases=("dtype",)),
          _LINK, _MODEL),
         (Output("elements", "", "elements each GPU communicates per step"),
          Output("bytes_sent", "B", "the exact ring bytes each GPU sends", key="bytes_sent_per_gpu"),
          Output("time", "s", "bytes sent / β", ("link",), key="time_s")),
         solve="dp-comm", source="Rajbhandari et al. 2020 (ZeRO), §7")
def _dp_comm_formula(params, gpus, stage, grad_dtype, link, model):
    if params is not None and model is not None:
        raise SolverInputError("give params= or a model, not both", param="params")
    if model is not None:
        from solver.counting import param_count

        params = param_count(model)
    if params is None:
        raise SolverInputError("give params= (or a model)", param="params")
    return data_parallel(params, gpus, stage=stage, grad_dtype=grad_dtype,
                         link_bandwidth=None if link is None else float(link))


FORMULAS = (_tp_formula.formula, _tp_matmul_formula.formula, _pipeline_formula.formula, _dp_comm_formula.formula)

MFU_RECOMPUTE = Convention("recompute", "What the backward pass recomputes (counted in HFU only).", {
    "none": Choice("nothing: HFU = MFU", "Chowdhery et al. 2022 (PaLM), App. B"),
    "selective": Choice("the attention scores' forward again: + 4·L·h·s per token", "Korthikanti et al. 2022, §4.2"),
    "full": Choice("the whole forward again: + 2N + 4·L·h·s per token", "Korthikanti et al. 2022, §5")}, "none")


@formula("mfu", "Model FLOPs utilisation (6N per token, plus PaLM's attention term) against hardware FLOPs "
         "utilisation (recomputation counted).",
         (Input("params", "N: parameters (or a model: the parameters one token uses)", kind="count", integer=True,
                minimum=1, default=None, aliases=("N",)),
          Input("tokens_per_second", "training throughput, all chips together", unit="tokens/s",
                aliases=("throughput", "tokens_per_sec")),
          Input("chips", "chips", kind="count", integer=True, minimum=1, default=1, aliases=("gpus",)),
          Input("chip", "a chip preset: its dense peak at the dtype", kind="chip", default=None, aliases=("hw",)),
          Input("peak", "dense FLOP/s per chip (instead of the chip's)", unit="FLOP/s", default=None,
                aliases=("peak_flops",)),
          Input("dtype", "the dtype of the chip's peak", kind="dtype", default="bf16"),
          Input("layers", "L: layers (PaLM's attention term, with d_model and seq)", kind="count", integer=True,
                minimum=1, default=None, aliases=("n_layers", "L")),
          Input("d_model", "h: hidden size (attention term)", kind="count", integer=True, minimum=1, default=None,
                aliases=("hidden",)),
          Input("seq", "s: sequence length (attention term)", kind="count", integer=True, minimum=1, default=None,
                binary_k=True, aliases=("seq_len",)),
          _MODEL),
         (Output("mfu", "", "model FLOPs/s ÷ (chips · peak)"),
          Output("hfu", "", "hardware FLOPs/s ÷ (chips · peak)")),
         conventions=(MFU_RECOMPUTE,), solve="mfu", source="Chowdhery et al. 2022 (PaLM), App. B")
def _mfu_formula(params, tokens_per_second, chips, chip, peak, dtype, layers, d_model, seq, model, recompute="none"):
    from solver.systems.chips import resolve_chip

    if model is not None:
        if params is None:
            from solver.counting import param_breakdown

            params = param_breakdown(model).active
        if seq is not None:
            layers, d_model = layers or model.n_layers, d_model or model.d_model
    if params is None:
        raise SolverInputError("give params= (or a model)", param="params")
    attn = (layers, d_model, seq)
    if any(v is not None for v in attn) and not all(v is not None for v in attn):
        raise SolverInputError("the attention term needs layers, d_model and seq together", param="seq")
    c = resolve_chip(chip, dtype, peak_flops=None if peak is None else float(peak))
    return flops_utilisation(params, float(tokens_per_second), chips, c.need("peak_flops"), recompute=recompute,
                             n_layers=layers or 0, d_model=d_model or 0, seq=seq or 0)


FORMULAS += (_mfu_formula.formula,)  # issue 44 (more entries)
