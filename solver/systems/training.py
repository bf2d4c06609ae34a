"""Training at scale: compute (6ND), time, MFU, PF-days; ZeRO model states; activation memory.

Conventions: FLOPs count 2 per multiply-add; "days" are 86,400 s; a petaflop/s-day is
10^15 FLOP/s × 86,400 s = 8.64·10^19 FLOPs; GB = 10^9 bytes (the ZeRO paper's unit).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.systems.chips import Chip
from solver.units import GB

DAY = 86_400
PF_DAY = 10**15 * DAY
RECOMPUTE = ("none", "selective", "full")


def _pos(name: str, value, integer: bool = False):
    if value is None or isinstance(value, bool) or value <= 0 or (integer and int(value) != value):
        raise SolverInputError(f"must be {'a positive integer' if integer else 'positive'} (got {value!r})",
                               param=name)
    return int(value) if integer else value


#: FLOPs per token per parameter of a training step, by recomputation policy
RECOMPUTE_FACTOR = {"none": 6, "selective": 6, "full": 8}


def train(params: int | None, *, tokens: int | None = None, compute: float | None = None, chip: Chip | None = None,
          chips: int | None = None, mfu: float | None = None, gpu_hours: float | None = None,
          exact_flops_per_token: int | Fraction | None = None, recompute: str = "none",
          layers: int | None = None, seq: int | None = None, d_model: int | None = None) -> Result:
    """C = 6·N·D (forward 2N + backward 4N per token); days, PF-days, tokens from C, MFU from GPU-hours.

    ``recompute``: ``none`` (6N per token), ``full`` (the forward again in the backward: 8N,
    Korthikanti et al. 2022 §5 and the MFU/HFU distinction of Chowdhery et al. 2022 App. B), or
    ``selective`` (only the attention core again: 6N + 4·L·s·d per token, its QKᵀ and A·V
    multiply-adds, no causal halving; needs ``layers``, ``seq`` and ``d_model``). With
    ``compute`` given, ``params`` is needed only to get tokens from it.
    ``exact_flops_per_token``, when given (from the counting engine), is shown beside 6N.
    """
    if recompute not in RECOMPUTE_FACTOR:
        raise SolverInputError(f"must be one of {', '.join(RECOMPUTE_FACTOR)} (got {recompute!r})", param="recompute")
    N = None if params is None else _pos("params", params, integer=True)
    if (tokens is None) == (compute is None):
        raise SolverInputError("give exactly one of --tokens and --compute", param="tokens")
    if N is None and tokens is not None:
        raise SolverInputError("C = 6·N·D needs the parameters N: give --params (or --preset)", param="params")
    chip = chip or Chip()
    r = Result(answer=None, unit="FLOP", convention={
        "flops": "2 per multiply-add; training = forward (2N) + backward (4N) per token",
        "day": "86,400 s", "pf_day": "1e15 FLOP/s for one day = 8.64e19 FLOP", "hardware": chip.origin})
    k = RECOMPUTE_FACTOR[recompute]
    extra = 0
    if recompute == "full":
        r.convention["recompute"] = ("full: the forward runs again in the backward, 8N per token "
                                     "(Korthikanti et al. 2022; MFU counts 6N, HFU 8N)")
    elif recompute == "selective":
        for name, v in (("layers", layers), ("seq", seq), ("d_model", d_model)):
            if v is None:
                raise SolverInputError("selective recomputation adds the attention core's 4·L·s·d FLOPs per token: "
                                       "give the layers, sequence length and d_model (or a model)", param=name)
        L, sq, d = _pos("layers", layers, True), _pos("seq", seq, True), _pos("d_model", d_model, True)
        r.convention["recompute"] = ("selective: the attention core (QKᵀ, softmax, A·V) runs again, 4·L·s·d "
                                     "FLOPs per token more (Korthikanti et al. 2022, §4.2; no causal halving)")
        extra = r.step("recomputed per token = 4·L·s·d", f"4 × {L} × {sq} × {d}", 4 * L * sq * d, "FLOP")
    if tokens is not None:
        D = _pos("tokens", tokens, integer=True)
        if recompute == "none":
            C = r.step("C = 6·N·D", f"6 × {fmt(N)} × {fmt(D)}", 6 * N * D, "FLOP")
        elif recompute == "full":
            C = r.step("C = 8·N·D", f"8 × {fmt(N)} × {fmt(D)}", 8 * N * D, "FLOP")
        else:
            C = r.step("C = (6·N + 4·L·s·d)·D", f"(6 × {fmt(N)} + {fmt(extra)}) × {fmt(D)}", (6 * N + extra) * D,
                       "FLOP")
    else:
        C = _pos("compute", compute)
        D = None
        if N is not None:
            per = k * N + extra
            D = r.step(f"D = C / ({'6·N' if recompute == 'none' else ('8·N' if k == 8 else '6·N + 4·L·s·d')})",
                       f"{fmt(C)} / {fmt(per)}", C / per, "tokens")
    r.answer = C
    r.breakdown.update(compute_flops=C)
    if D is not None:
        r.breakdown.update(tokens=D, flops_per_token_6N=6 * N)
    if recompute != "none" and N is not None:
        r.breakdown["flops_per_token"] = k * N + extra
    if exact_flops_per_token is not None and D is not None:
        ex = r.step("C_exact = (exact training FLOPs per token)·D", f"{fmt(exact_flops_per_token)} × {fmt(D)}",
                    Fraction(exact_flops_per_token) * Fraction(D), "FLOP")
        r.breakdown.update(exact_flops_per_token=exact_flops_per_token, compute_exact_flops=ex,
                           ratio_exact_to_6N=float(Fraction(exact_flops_per_token) / (6 * N)))
    pfd = r.step("PF-days = C / (10^15 · 86,400)", f"{fmt(C)} / {fmt(PF_DAY)}", C / PF_DAY, "PF-days")
    r.breakdown["pf_days"] = pfd
    if chip.peak_flops is not None and chips is not None and mfu is not None:
        n, u, peak = _pos("chips", chips, integer=True), _pos("mfu", mfu), chip.need("peak_flops")
        if u > 1:
            raise SolverInputError(f"must be in (0, 1] (got {u})", param="mfu")
        days = r.step("days = C / (chips · peak · MFU · 86,400)", f"{fmt(C)} / ({n} × {fmt(peak)} × {u} × 86,400)",
                      C / (n * peak * u * DAY), "days")
        r.breakdown.update(days=days, gpu_hours_needed=days * 24 * n)
    if gpu_hours is not None:
        h, peak = _pos("gpu_hours", gpu_hours), chip.need("peak_flops")
        m = r.step("MFU = C / (GPU-hours · 3,600 · peak)", f"{fmt(C)} / ({fmt(h)} × 3,600 × {fmt(peak)})",
                   C / (h * 3600 * peak), "")
        r.breakdown["mfu"] = m
    return r


def kaplan_forward_flops(n_params: int, n_layer: int, n_ctx: int, d_attn: int) -> Result:
    """Kaplan et al. (2020): forward FLOPs per token C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn.

    N counts non-embedding parameters; the second term is Kaplan et al.'s Table 1 row for attention
    (the QKᵀ logits: 2 FLOPs per multiply-add over n_ctx keys of d_attn). The paper says nothing of a
    causal average; the reading that QKᵀ and A·V over n_ctx/2 keys on average give the same
    2·n_layer·n_ctx·d_attn is ours, not theirs (issue 21).
    """
    N, L = _pos("params", n_params, integer=True), _pos("n_layer", n_layer, integer=True)
    T, d = _pos("n_ctx", n_ctx, integer=True), _pos("d_attn", d_attn, integer=True)
    r = Result(answer=None, unit="FLOP/token", convention={
        "source": "Kaplan et al. 2020, Table 1", "params": "non-embedding", "flops": "2 per multiply-add"})
    weights = r.step("2N", f"2 × {fmt(N)}", 2 * N, "FLOP")
    attn = r.step("2·n_layer·n_ctx·d_attn", f"2 × {L} × {T} × {d}", 2 * L * T * d, "FLOP")
    total = r.step("C_forward = 2N + 2·n_layer·n_ctx·d_attn", f"{fmt(weights)} + {fmt(attn)}", weights + attn,
                   "FLOP")
    r.answer = total
    r.breakdown.update(weights_flops=weights, attention_flops=attn, attention_share=attn / total,
                       training_per_token=3 * total)
    return r


def _headroom(r: Result, used, hbm, what: str, hbm_origin: str | None = None) -> None:
    """Add the HBM left per GPU (HBM − ``used``), in bytes, GB and GiB, and whether it fits."""
    hbm = Fraction(_pos("hbm", hbm))
    left = r.step(f"left per GPU = HBM − {what}", f"{fmt(hbm)} − {fmt(used)}", hbm - used, "bytes")
    fits = left >= 0
    r.convention["hbm"] = f"{fmt(hbm)} bytes per GPU" + (f" ({hbm_origin})" if hbm_origin else "") + \
        "; all of it usable (no framework overhead, buffers or fragmentation)"
    r.breakdown.update(hbm_bytes=hbm, left_bytes=left, left_GB=float(left) / GB, left_GiB=float(left) / 2**30,
                       fits=fits)


def zero(params: int, gpus: int, stage: int, *, optimizer_bytes: int = 12, hbm: float | None = None,
         hbm_origin: str | None = None) -> Result:
    """Model-state bytes per GPU with mixed-precision Adam under ZeRO stage 0-3 (Rajbhandari et al.).

    Per parameter: 2 bytes fp16 weights, 2 bytes fp16 gradients, K bytes optimizer state
    (K = 12 for Adam: fp32 master weights, momentum and variance, 4 bytes each). With Ψ
    parameters over N_d data-parallel GPUs:

    - stage 0 (plain data parallelism): (2 + 2 + K)·Ψ
    - stage 1 (P_os, optimizer states partitioned): 2Ψ + 2Ψ + K·Ψ/N_d
    - stage 2 (P_os+g, gradients too): 2Ψ + (2 + K)·Ψ/N_d
    - stage 3 (P_os+g+p, parameters too): (2 + 2 + K)·Ψ/N_d

    With ``hbm`` (bytes per GPU) the breakdown adds the memory left per GPU, HBM − model states
    (``left_bytes``, ``left_GB``, ``left_GiB``; negative when they do not fit) and ``fits``.

    The paper's worked example (Figure 1), Ψ = 7.5·10^9, N_d = 64, K = 12, in GB = 10^9 bytes:
    16 × 7.5 = 120 GB; 4 × 7.5 + 12 × 7.5/64 = 30 + 1.40625 = 31.40625 ≈ 31.4 GB;
    2 × 7.5 + 14 × 7.5/64 = 15 + 1.640625 = 16.640625 ≈ 16.6 GB; 16 × 7.5/64 = 1.875 ≈ 1.88 GB.
    """
    P = _pos("params", params, integer=True)
    Nd = _pos("gpus", gpus, integer=True)
    K = _pos("optimizer_bytes", optimizer_bytes, integer=True)
    if stage not in (0, 1, 2, 3):
        raise SolverInputError(f"must be 0, 1, 2 or 3 (got {stage!r})", param="stage")
    r = Result(answer=None, unit="bytes", convention={
        "precision": "mixed: fp16 weights (2 B) and gradients (2 B), optimizer states K B per parameter",
        "K": f"{K} (Adam: fp32 master copy + momentum + variance)" if K == 12 else str(K),
        "counts": "model states only: no activations, buffers or fragmentation",
        "stage": ["0: plain data parallel", "1: P_os", "2: P_os+g", "3: P_os+g+p"][stage]})
    w = Fraction(2 * P, Nd) if stage == 3 else Fraction(2 * P)
    g = Fraction(2 * P, Nd) if stage >= 2 else Fraction(2 * P)
    o = Fraction(K * P, Nd) if stage >= 1 else Fraction(K * P)
    formula = ["(2 + 2 + K)·Ψ", "2Ψ + 2Ψ + K·Ψ/N_d", "2Ψ + (2 + K)·Ψ/N_d", "(2 + 2 + K)·Ψ/N_d"][stage]
    subst = [f"(2 + 2 + {K}) × {fmt(P)}", f"4 × {fmt(P)} + {K} × {fmt(P)}/{Nd}",
             f"2 × {fmt(P)} + {2 + K} × {fmt(P)}/{Nd}", f"{4 + K} × {fmt(P)}/{Nd}"][stage]
    total = r.step(f"bytes per GPU = {formula}", subst, w + g + o, "bytes")
    r.answer = total
    r.breakdown.update(weights_bytes=w, gradients_bytes=g, optimizer_bytes=o, total_bytes=total,
                       GB=float(total) / GB, GiB=float(total) / 2**30, baseline_bytes=(4 + K) * P)
    if hbm is not None:
        _headroom(r, total, hbm, "model states", hbm_origin)
    return r


def activations(seq: int, batch: int, d_model: int, n_heads: int, *, recompute: str = "none",
                n_layers: int = 1, hbm: float | None = None, hbm_origin: str | None = None) -> Result:
    """Activation bytes per layer, Korthikanti et al. (2022): s·b·h·(34 + 5·a·s/h).

    Assumes 16-bit activations, 1-byte dropout masks, no tensor or sequence parallelism.
    The 34·s·b·h part is the linear-in-s activations (attention block 11sbh, MLP 19sbh, two
    LayerNorms 4sbh); 5·a·s²·b is the softmax input/output and dropout mask of the scores.
    recompute: "none" keeps everything; "selective" recomputes the score-matrix part (34·s·b·h);
    "full" keeps only each layer's input, 2·s·b·h bytes (one 16-bit s×b×h tensor), and
    recomputes the rest of the layer during the backward pass.
    With ``hbm`` (bytes per GPU) the breakdown adds HBM − activations (``left_bytes`` etc.) and ``fits``.
    """
    s, b = _pos("seq", seq, integer=True), _pos("batch", batch, integer=True)
    h, a = _pos("d_model", d_model, integer=True), _pos("n_heads", n_heads, integer=True)
    L = _pos("n_layers", n_layers, integer=True)
    if recompute not in RECOMPUTE:
        raise SolverInputError(f"must be none, selective or full (got {recompute!r})", param="recompute")
    r = Result(answer=None, unit="bytes", convention={
        "source": "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models",
        "dtype": "16-bit activations, 1-byte dropout masks", "parallelism": "none (t = 1)",
        "recompute": recompute, "per": "layer" if L == 1 else f"{L} layers"})
    linear = 34 * s * b * h
    quadratic = 5 * a * s * s * b
    if recompute == "none":
        per_layer = r.step("A = s·b·h·(34 + 5·a·s/h) = 34·s·b·h + 5·a·s²·b",
                           f"34×{s}×{b}×{h} + 5×{a}×{s}²×{b}", linear + quadratic, "bytes")
    elif recompute == "selective":
        per_layer = r.step("A = 34·s·b·h   (score-matrix activations recomputed)", f"34×{s}×{b}×{h}", linear,
                           "bytes")
    else:
        per_layer = r.step("A = 2·s·b·h   (only the layer input kept, 16-bit)", f"2×{s}×{b}×{h}",
                           2 * s * b * h, "bytes")
    total = per_layer
    if L > 1:
        total = r.step("total = L·A", f"{L} × {fmt(per_layer)}", L * per_layer, "bytes")
    r.answer = total
    r.breakdown.update(per_layer_bytes=per_layer, total_bytes=total, linear_term_bytes=linear,
                       score_term_bytes=quadratic, no_recompute_bytes=L * (linear + quadratic))
    if hbm is not None:
        _headroom(r, total, hbm, "activations", hbm_origin)
    return r


# ---------------------------------------------------------------------------------------
# The registry's description (solver.registry): qkv calc's train(...) and qkv solve train.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

RECOMPUTATION = Convention("recompute", "What the backward pass recomputes.", {
    "none": Choice("every activation kept: 6N FLOPs per token (2N forward, 4N backward)",
                   "Kaplan et al. 2020 §2.1; Hoffmann et al. 2022 (Chinchilla)"),
    "selective": Choice("the attention core (QKᵀ, softmax, A·V) again: 6N + 4·L·s·d per token",
                        "Korthikanti et al. 2022, 'Reducing Activation Recomputation', §4.2"),
    "full": Choice("the whole forward again: 8N per token (what HFU counts)",
                   "Korthikanti et al. 2022 §5; Chowdhery et al. 2022 (PaLM) App. B")}, "none")


@formula("train", "Training compute C = 6·N·D (8·N·D with full recomputation), and its time on some chips.",
         (Input("params", "N: parameters", kind="count", integer=True, default=None, aliases=("N", "n_params")),
          Input("tokens", "D: training tokens", kind="count", integer=True, default=None, aliases=("D",)),
          Input("compute", "C: a compute budget instead of the tokens", unit="FLOP", default=None,
                aliases=("C", "flops")),
          Input("chips", "chips (GPUs) training together", kind="count", integer=True, default=None,
                aliases=("gpus", "n_chips")),
          Input("peak", "each chip's peak FLOP/s (a chip preset's field, h100.bf16)", unit="FLOP/s", default=None,
                aliases=("peak_flops",)),
          Input("mfu", "model FLOPs utilisation, 0 to 1", kind="fraction", default=None, maximum=1,
                aliases=("utilisation", "utilization")),
          Input("layers", "L: layers (selective recomputation)", kind="count", integer=True, default=None),
          Input("seq", "s: sequence length (selective recomputation)", kind="count", integer=True, default=None,
                binary_k=True),
          Input("d_model", "d: model width (selective recomputation)", kind="count", integer=True, default=None)),
         (Output("compute", "FLOP", "training FLOPs", ("params", "tokens"), key="compute_flops"),
          Output("time", "days", "wall-clock time: C / (chips · peak · MFU)", ("chips", "peak", "mfu"), key="days"),
          Output("tokens", "", "tokens the budget buys", ("compute", "params")),
          Output("pf_days", "", "petaflop/s-days: C / (10¹⁵ · 86,400)"),
          Output("gpu_hours", "h", "GPU-hours: days × 24 × chips", ("chips", "peak", "mfu"), key="gpu_hours_needed")),
         conventions=(RECOMPUTATION,), solve="train", source="Kaplan et al. 2020; Korthikanti et al. 2022")
def _train_formula(params, tokens, compute, chips, peak, mfu, layers, seq, d_model, recompute="none"):
    return train(params, tokens=tokens, compute=compute, chips=chips, mfu=mfu,
                 chip=Chip(peak_flops=None if peak is None else float(peak), origin={"peak_flops": "given"}),
                 recompute=recompute, layers=layers, seq=seq, d_model=d_model)


FORMULAS = (_train_formula.formula,)


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): qkv calc's zero(...) and activations(...), from qkv solve zero and
# activations.
# ---------------------------------------------------------------------------------------

_MODEL_INPUT = Input("model", "a model preset or config (instead of the sizes given by hand)", kind="model",
                     default=None, aliases=("preset", "config"))


@formula("zero", "Model-state bytes per GPU, mixed-precision Adam, ZeRO stage 0-3: (2 + 2 + K)·Ψ partitioned.",
         (Input("params", "Ψ: parameters (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("N", "psi")),
          Input("gpus", "N_d: data-parallel GPUs", kind="count", integer=True, minimum=1, aliases=("dp", "chips")),
          Input("stage", "ZeRO stage: 0 (plain DP), 1, 2 or 3", kind="count", integer=True, minimum=0, maximum=3),
          Input("optimizer_bytes", "K: optimizer-state bytes per parameter (Adam: 12)", kind="count", integer=True,
                minimum=1, default=12, aliases=("K",)),
          _MODEL_INPUT,
          Input("chip", "a chip preset: its HBM", kind="chip", default=None, aliases=("hw",)),
          Input("hbm", "HBM bytes per GPU (what is left)", unit="B", default=None)),
         (Output("bytes", "B", "model-state bytes per GPU", key="total_bytes"),
          Output("weights", "B", "weight bytes per GPU", key="weights_bytes"),
          Output("gradients", "B", "gradient bytes per GPU", key="gradients_bytes"),
          Output("optimizer", "B", "optimizer-state bytes per GPU", key="optimizer_bytes"),
          Output("left", "B", "HBM − model states", ("hbm",), key="left_bytes")),
         solve="zero", source="Rajbhandari et al. 2020 (ZeRO), Figure 1")
def _zero_formula(params, gpus, stage, optimizer_bytes, model, chip, hbm):
    if params is not None and model is not None:
        raise SolverInputError("Ψ is params= or the model's parameter count: give one", param="params")
    if model is not None:
        from solver.counting import param_breakdown

        params = param_breakdown(model).total_with_lora
    if params is None:
        raise SolverInputError("give params= or a model", param="params")
    size, origin = None, None
    if chip is not None or hbm is not None:
        from solver.systems.chips import resolve_chip

        c = resolve_chip(chip, hbm=None if hbm is None else float(hbm))
        size, origin = c.need("hbm"), c.origin.get("hbm")
        if "hbm_figure" in c.origin:
            origin += f", {c.origin['hbm_figure']} figure"
    return zero(params, gpus, stage, optimizer_bytes=optimizer_bytes, hbm=size, hbm_origin=origin)


ACTIVATION_RECOMPUTE = Convention("recompute", "Which activations the backward pass recomputes.", {
    "none": Choice("every activation kept: s·b·h·(34 + 5·a·s/h)", "Korthikanti et al. 2022, Eq. 1"),
    "selective": Choice("the score-matrix part recomputed: 34·s·b·h", "Korthikanti et al. 2022, §4.2"),
    "full": Choice("only each layer's 16-bit input kept: 2·s·b·h", "Korthikanti et al. 2022, §4")}, "none")
SEQUENCE_PARALLEL = Convention("sequence_parallel", "Whether sequence parallelism splits what tensor parallelism "
                               "replicates.", {
    "off": Choice("LayerNorm and dropout activations replicated on every tensor-parallel GPU",
                  "Korthikanti et al. 2022, Table 2"),
    "on": Choice("those split over the t GPUs too", "Korthikanti et al. 2022, §4.2.2")}, "off")


@formula("activations", "Activation bytes per layer (per GPU): s·b·h·(34 + 5·a·s/h), with recomputation and "
         "tensor / sequence parallelism.",
         (Input("seq", "s: sequence length", kind="count", integer=True, minimum=1, binary_k=True,
                aliases=("s", "seq_len")),
          Input("batch", "b: micro-batch size", kind="count", integer=True, minimum=1, aliases=("b",)),
          Input("d_model", "h: hidden size (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("h", "hidden")),
          Input("n_heads", "a: attention heads (or a model)", kind="count", integer=True, minimum=1, default=None,
                aliases=("a", "heads")),
          Input("layers", "L: layers (1 = per layer)", kind="count", integer=True, minimum=1, default=1,
                aliases=("n_layers", "L")),
          Input("tp", "t: tensor-parallel GPUs", kind="count", integer=True, minimum=1, default=1, aliases=("t",)),
          _MODEL_INPUT),
         (Output("bytes", "B", "activation bytes (L layers)", key="total_bytes"),
          Output("per_layer", "B", "activation bytes of one layer", key="per_layer_bytes")),
         conventions=(ACTIVATION_RECOMPUTE, SEQUENCE_PARALLEL), solve="activations",
         source="Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models")
def _activations_formula(seq, batch, d_model, n_heads, layers, tp, model, recompute="none", sequence_parallel="off"):
    if model is not None:
        d_model, n_heads = d_model or model.d_model, n_heads or model.n_heads
    if d_model is None or n_heads is None:
        raise SolverInputError("needs d_model (h) and n_heads (a), or a model",
                               param="d_model" if d_model is None else "n_heads")
    if tp > 1 or sequence_parallel == "on":
        from solver.systems.parallelism import activations_parallel

        return activations_parallel(seq, batch, d_model, n_heads, tp=tp, sequence_parallel=sequence_parallel == "on",
                                    recompute=recompute, n_layers=layers)
    return activations(seq, batch, d_model, n_heads, recompute=recompute, n_layers=layers)


FORMULAS += (_zero_formula.formula, _activations_formula.formula)  # issue 44 (more entries)
