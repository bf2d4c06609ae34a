"""Rooflines: FLOPs, bytes moved, arithmetic intensity and time of a matmul and of attention.

Conventions (every function here follows them):

- FLOPs count 2 per multiply-add, as the hardware peaks are quoted (and as
  ``torch.utils.flop_counter.FlopCounterMode`` counts).
- Bytes moved are the *minimum* traffic to HBM: every operand read once and every output
  written once (perfect on-chip reuse). Real kernels move at least this much, so the roofline
  time is a lower bound.
- Arithmetic intensity I = FLOPs / bytes. The hardware's critical intensity is
  I* = peak FLOP/s ÷ bandwidth bytes/s; I < I* is memory-bound, I > I* compute-bound, I = I*
  balanced. Roofline time t = max(FLOPs / peak, bytes / bandwidth).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.systems.chips import Chip
from solver.units import dtype_bytes

MATMUL_MODES = ("forward", "train")
ATTENTION_MODES = ("prefill", "decode")
FFN_MATRICES = {"relu": 2, "gelu": 2, "swiglu": 3}


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SolverInputError(f"must be a positive integer (got {value!r})", param=name)
    return value


# ---------------------------------------------------------------------------------------
# The pieces
# ---------------------------------------------------------------------------------------


def matmul_flops(batch: int, d_in: int, d_out: int, mode: str = "forward") -> int:
    """FLOPs of Y = X[B,D] @ W[D,F]: forward 2BDF; train adds dX = dY Wᵀ and dW = Xᵀ dY: 6BDF."""
    if mode not in MATMUL_MODES:
        raise SolverInputError(f"must be forward or train (got {mode!r})", param="mode")
    return (2 if mode == "forward" else 6) * batch * d_in * d_out


def matmul_bytes(batch: int, d_in: int, d_out: int, act_bytes: Fraction, weight_bytes: Fraction,
                 mode: str = "forward") -> Fraction:
    """Bytes of Y = X @ W: a·BD (read X) + w·DF (read W) + a·BF (write Y).

    Training runs three matmuls that each read two operands and write one: the forward
    (X, W → Y), dX = dY·Wᵀ (dY, W → dX) and dW = Xᵀ·dY (X, dY → dW, written at the weight
    dtype), i.e. exactly three times the forward traffic.
    """
    forward = act_bytes * batch * d_in + weight_bytes * d_in * d_out + act_bytes * batch * d_out
    return forward if mode == "forward" else 3 * forward


def critical_intensity(peak_flops: float, bandwidth: float) -> float:
    """I* = peak FLOP/s ÷ bandwidth bytes/s (FLOP/byte)."""
    return peak_flops / bandwidth


def bound(intensity: float | Fraction, critical: float) -> str:
    """'memory' below the critical intensity, 'compute' above, 'balanced' exactly at it."""
    if intensity < critical:
        return "memory"
    if intensity > critical:
        return "compute"
    return "balanced"


def critical_batch(d_in: int, d_out: int, act_bytes: Fraction, weight_bytes: Fraction,
                   critical: float) -> float:
    """Exact B* where I(B) = 2BDF / (a·BD + w·DF + a·BF) equals I* (activation and output bytes included).

    I(B) rises with B towards 2DF / (a·(D + F)); when that limit is at or below I* no batch is
    compute-bound and B* is ``inf`` (also when the limit exceeds I* by less than a part in 10⁹:
    B* would be astronomically large, beyond what floating point can place). (The same B* holds for training: all three terms scale by 3.)
    """
    denominator = 2 * d_in * d_out - critical * float(act_bytes) * (d_in + d_out)
    if denominator <= 1e-9 * 2 * d_in * d_out:  # the limit is I* to 9 digits: no batch that exists crosses it
        return float("inf")
    return critical * float(weight_bytes) * d_in * d_out / denominator


def roofline_time(flops: float | Fraction, n_bytes: float | Fraction, peak_flops: float,
                  bandwidth: float) -> tuple[float, float, float]:
    """(t, t_compute, t_memory) with t = max(FLOPs / peak, bytes / bandwidth), in seconds."""
    t_compute = float(flops) / peak_flops
    t_memory = float(n_bytes) / bandwidth
    return max(t_compute, t_memory), t_compute, t_memory


# ---------------------------------------------------------------------------------------
# A matmul on a chip
# ---------------------------------------------------------------------------------------


ACTIVATIONS = ("read", "resident")


def matmul(batch: int, d_in: int, d_out: int, *, mode: str = "forward", dtype: str = "bf16",
           weight_dtype: str | None = None, chip: Chip | None = None, activations: str = "read") -> Result:
    """Roofline of X[B,D] @ W[D,F]: FLOPs, bytes, intensity (exact and B ≪ D,F), bound, time.

    ``activations="resident"``: X is already on chip (kept in SRAM or VMEM from the previous
    operation, as the TPU texts assume for a weight-streaming matmul), so only W is read and
    Y written: bytes = w·D·F + a·B·F (forward only)."""
    B, D, F = _positive("batch", batch), _positive("d_in", d_in), _positive("d_out", d_out)
    if activations not in ACTIVATIONS:
        raise SolverInputError(f"must be read or resident (got {activations!r})", param="activations")
    if activations == "resident" and mode != "forward":
        raise SolverInputError("resident activations are modelled for the forward matmul", param="activations")
    wdt = weight_dtype or dtype
    a, w = dtype_bytes(dtype), dtype_bytes(wdt)
    chip = chip or Chip()
    r = Result(answer=None, unit="s", convention={
        "flops": "2 per multiply-add", "mode": mode, "activation_dtype": dtype, "weight_dtype": wdt,
        "bytes": "minimum HBM traffic: each operand read once, each output written once",
        "hardware": chip.origin})
    k = 2 if mode == "forward" else 6
    flops = r.step("FLOPs = 2·B·D·F" if mode == "forward" else "FLOPs = 3 matmuls × 2·B·D·F = 6·B·D·F",
                   f"{k} × {B} × {D} × {F}", matmul_flops(B, D, F, mode), "FLOP")
    fwd_bytes = matmul_bytes(B, D, F, a, w, "forward")
    if activations == "resident":
        r.convention["bytes"] = "X already on chip (resident): W read once, Y written once"
        fwd_bytes = w * D * F + a * B * F
        n_bytes = r.step("bytes = w·D·F + a·B·F   (X resident on chip)", f"{fmt(w)}×{D}×{F} + {fmt(a)}×{B}×{F}",
                         fwd_bytes, "bytes")
    else:
        n_bytes = r.step("bytes = a·B·D + w·D·F + a·B·F" + (" (×3 for train)" if mode == "train" else ""),
                         f"{'3 × (' if mode == 'train' else ''}{fmt(a)}×{B}×{D} + {fmt(w)}×{D}×{F} + "
                         f"{fmt(a)}×{B}×{F}{')' if mode == 'train' else ''}",
                         matmul_bytes(B, D, F, a, w, mode), "bytes")
    intensity = r.step("I = FLOPs / bytes", f"{fmt(flops)} / {fmt(n_bytes)}", Fraction(flops) / n_bytes,
                       "FLOP/byte")
    limit = r.step("I ≈ 2·B / w   (B ≪ D, F: the weight read dominates)", f"2 × {B} / {fmt(w)}",
                   Fraction(2 * B) / w, "FLOP/byte")
    r.breakdown.update(flops=flops, bytes=n_bytes, forward_bytes=fwd_bytes, intensity=float(intensity),
                       intensity_small_batch_limit=float(limit))
    if chip.peak_flops is not None and chip.bandwidth is not None:
        peak, bw = chip.need("peak_flops"), chip.need("bandwidth")
        crit = r.step("I* = peak / bandwidth", f"{fmt(peak)} / {fmt(bw)}", critical_intensity(peak, bw),
                      "FLOP/byte")
        b_approx = r.step("B* ≈ I*·w / 2   (B ≪ D, F approximation: 2B/w reaches I*)",
                          f"{fmt(crit)} × {fmt(w)} / 2", crit * float(w) / 2, "rows")
        if activations == "resident":
            b_star = r.step("B* exact: 2·B·D·F = I*·(w·D·F + a·B·F) → B* = I*·w·D·F / (2·D·F − I*·a·F)",
                            f"{fmt(crit)} × {fmt(w)} × {D} × {F} / (2 × {D} × {F} − {fmt(crit)} × {fmt(a)} × {F})",
                            _critical_batch_resident(D, F, a, w, crit), "rows")
        else:
            b_star = r.step("B* exact: 2·B·D·F = I*·(a·B·D + w·D·F + a·B·F) → B* = I*·w·D·F / (2·D·F − I*·a·(D + F))",
                            f"{fmt(crit)} × {fmt(w)} × {D} × {F} / (2 × {D} × {F} − {fmt(crit)} × {fmt(a)} × ({D} + {F}))",
                            critical_batch(D, F, a, w, crit), "rows")
        which = bound(intensity, crit)
        t, tc, tm = roofline_time(flops, n_bytes, peak, bw)
        r.step("t_compute = FLOPs / peak", f"{fmt(flops)} / {fmt(peak)}", tc, "s")
        r.step("t_memory = bytes / bandwidth", f"{fmt(n_bytes)} / {fmt(bw)}", tm, "s")
        r.step("t = max(t_compute, t_memory)", f"max({fmt(tc)}, {fmt(tm)})  → {which}-bound", t, "s")
        r.answer = t
        r.breakdown.update(critical_intensity=crit, critical_batch=b_star, critical_batch_approx=b_approx,
                           bound=which, time_s=t,
                           compute_time_s=tc, memory_time_s=tm, peak_flops=peak, bandwidth=bw)
    else:  # no hardware: the intensity is the answer
        r.answer, r.unit = float(intensity), "FLOP/byte"
    return r


def _critical_batch_resident(d_in: int, d_out: int, a: Fraction, w: Fraction, crit: float) -> float:
    """B* with X resident: 2·B·D·F = I*·(w·D·F + a·B·F); ``inf`` when no batch reaches I*."""
    den = 2 * d_in * d_out - crit * float(a) * d_out
    return float("inf") if den <= 1e-9 * 2 * d_in * d_out else crit * float(w) * d_in * d_out / den


def roofline(chip: Chip, weight_dtype: str = "bf16") -> Result:
    """The chip's critical intensity I* = peak / bandwidth and the batch B* = I*·w/2 that reaches it."""
    peak, bw = chip.need("peak_flops"), chip.need("bandwidth")
    w = dtype_bytes(weight_dtype)
    r = Result(answer=None, unit="FLOP/byte", convention={
        "flops": "2 per multiply-add; dense peak (not the with-sparsity figure)",
        "weight_dtype": weight_dtype, "hardware": chip.origin})
    crit = r.step("I* = peak / bandwidth", f"{fmt(peak)} / {fmt(bw)}", critical_intensity(peak, bw),
                  "FLOP/byte")
    b_star = r.step("B* ≈ I*·w / 2   (B ≪ D, F approximation: X[B,D]@W[D,F] has I ≈ 2B/w)",
                    f"{fmt(crit)} × {fmt(w)} / 2", crit * float(w) / 2, "rows")
    r.answer = crit
    r.convention["critical_batch"] = "B ≪ D, F approximation (activation and output bytes neglected)"
    r.breakdown.update(critical_intensity=crit, critical_batch=b_star, peak_flops=peak, bandwidth=bw)
    return r


# ---------------------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------------------


def attention_flops(batch: int, queries: int, keys: int, n_heads: int, d_head: int) -> int:
    """FLOPs of softmax(QKᵀ)V over all heads: QKᵀ 2·B·N·T·S·H + weights·V 2·B·N·T·S·H = 4·B·N·T·S·H.

    The full T×S score matrix is counted (no causal halving), as a dense kernel computes it and
    as FlopCounterMode counts it; softmax, scaling and masking are not matmul FLOPs.
    """
    return 4 * batch * n_heads * queries * keys * d_head


def attention_bytes(batch: int, queries: int, keys: int, n_heads: int, n_kv_heads: int, d_head: int,
                    act_bytes: Fraction) -> Fraction:
    """Bytes of attention without materialising scores: read Q, K, V once, write O once.

    a·(B·N·T·H [Q] + 2·B·G·S·H [K and V: both cached] + B·N·T·H [O]).
    """
    return act_bytes * (2 * batch * n_heads * queries * d_head + 2 * batch * n_kv_heads * keys * d_head)


def projection_flops_per_token(d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> int:
    """Q, K, V, O projections per token and layer: 2·d·N·H + 2·(2·d·G·H) + 2·N·H·d = 4·d·H·(N + G)."""
    return 4 * d_model * d_head * (n_heads + n_kv_heads)


def ffn_flops_per_token(d_model: int, d_ff: int, ffn: str = "gelu") -> int:
    """FFN per token and layer: 2·m·d·d_ff with m = 2 matrices (relu/gelu) or 3 (swiglu)."""
    if ffn not in FFN_MATRICES:
        raise SolverInputError(f"must be one of {', '.join(FFN_MATRICES)} (got {ffn!r})", param="ffn")
    return 2 * FFN_MATRICES[ffn] * d_model * d_ff


def attention(batch: int, seq: int, n_heads: int, d_head: int, *, kv_seq: int | None = None,
              n_kv_heads: int | None = None, mode: str = "prefill", dtype: str = "bf16",
              d_model: int | None = None, d_ff: int | None = None, ffn: str = "gelu",
              chip: Chip | None = None) -> Result:
    """Attention FLOPs, bytes and intensity for one layer; the crossover lengths with the matmuls.

    prefill: T = ``seq`` queries attend to S = ``kv_seq`` (default ``seq``) keys.
    decode: one new query per sequence attends to S = ``kv_seq`` (default ``seq``) cached keys.
    """
    if mode not in ATTENTION_MODES:
        raise SolverInputError(f"must be prefill or decode (got {mode!r})", param="mode")
    B, N, H = _positive("batch", batch), _positive("n_heads", n_heads), _positive("d_head", d_head)
    S = _positive("kv_seq" if kv_seq is not None else "seq", kv_seq if kv_seq is not None else seq)
    T = _positive("seq", seq) if mode == "prefill" else 1
    G = N if n_kv_heads is None else _positive("n_kv_heads", n_kv_heads)
    if N % G:
        raise SolverInputError(f"n_heads ({N}) must be divisible by n_kv_heads ({G})", param="n_kv_heads")
    d = d_model if d_model is not None else N * H
    a = dtype_bytes(dtype)
    kind = "MHA" if G == N else ("MQA" if G == 1 else f"GQA ({N // G} query heads per KV head)")
    chip = chip or Chip()
    r = Result(answer=None, unit="FLOP", convention={
        "flops": "2 per multiply-add; full T×S score matrix (no causal halving); softmax not counted",
        "bytes": "Q, K, V read once and O written once; scores stay on chip (flash-style)",
        "mode": mode, "attention": kind, "dtype": dtype, "per": "one layer",
        "d_model": "given" if d_model is not None else "n_heads·d_head", "hardware": chip.origin})
    flops = r.step("FLOPs = QKᵀ + A·V = 4·B·N·T·S·H", f"4 × {B} × {N} × {T} × {S} × {H}",
                   attention_flops(B, T, S, N, H), "FLOP")
    n_bytes = r.step("bytes = a·(2·B·N·T·H + 2·B·G·S·H)   (Q and O; K and V)",
                     f"{fmt(a)} × (2×{B}×{N}×{T}×{H} + 2×{B}×{G}×{S}×{H})",
                     attention_bytes(B, T, S, N, G, H, a), "bytes")
    kv_bytes = 2 * B * G * S * H * a
    intensity = r.step("I = FLOPs / bytes", f"{fmt(flops)} / {fmt(n_bytes)}", Fraction(flops) / n_bytes,
                       "FLOP/byte")
    scores = B * N * T * S * a
    r.breakdown.update(flops=flops, bytes=n_bytes, kv_bytes=kv_bytes, intensity=float(intensity),
                       score_matrix_bytes=scores, queries=T, keys=S)
    if mode == "decode":
        lim = r.step("I ≈ 4·N·S·H / (2·G·S·H·a) = 2·(N/G)/a   (the K,V read dominates)",
                     f"2 × {N}/{G} / {fmt(a)}", Fraction(2 * N, G) / a, "FLOP/byte")
        r.breakdown["intensity_kv_limit"] = float(lim)
    proj = projection_flops_per_token(d, N, G, H)
    s_proj = r.step("S where attention = projections: 4·S·N·H = 4·d·H·(N+G) → S = d·(N+G)/N",
                    f"{d} × ({N}+{G}) / {N}", Fraction(d * (N + G), N), "tokens")
    r.breakdown.update(projection_flops_per_token=proj, crossover_seq_projections=s_proj)
    ff = d_ff if d_ff is not None else 4 * d
    ffn_f = ffn_flops_per_token(d, ff, ffn)
    s_all = r.step("S where attention = all matmuls: 4·S·N·H = 4·d·H·(N+G) + 2·m·d·d_ff",
                   f"({fmt(proj)} + {fmt(ffn_f)}) / (4 × {N} × {H})", Fraction(proj + ffn_f, 4 * N * H), "tokens")
    r.breakdown.update(ffn_flops_per_token=ffn_f, crossover_seq_all_matmuls=s_all, d_ff=ff)
    r.convention["d_ff"] = "given" if d_ff is not None else "4·d_model"
    r.answer = flops
    if chip.peak_flops is not None and chip.bandwidth is not None:
        peak, bw = chip.need("peak_flops"), chip.need("bandwidth")
        crit = critical_intensity(peak, bw)
        t, tc, tm = roofline_time(flops, n_bytes, peak, bw)
        which = bound(intensity, crit)
        r.step("t = max(FLOPs/peak, bytes/bandwidth)", f"max({fmt(tc)}, {fmt(tm)})  → {which}-bound", t, "s")
        r.breakdown.update(critical_intensity=crit, bound=which, time_s=t, compute_time_s=tc, memory_time_s=tm)
    return r


# ---------------------------------------------------------------------------------------
# The registry's description (solver.registry): qkv calc's matmul(...) and qkv solve matmul.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

ACTIVATION_TRAFFIC = Convention("activations", "Whether the input X is read from HBM.", {
    "read": Choice("X read from HBM once: bytes = a·B·D + w·D·F + a·B·F", "the roofline model (Williams et al. 2009)"),
    "resident": Choice("X already on chip: bytes = w·D·F + a·B·F",
                       "Austin et al., How to Scale Your Model (2025), Part 1 'Rooflines'")}, "read")


@formula("matmul", "Roofline of X[B,D] @ W[D,F]: FLOPs, bytes, intensity, bound and time on a chip.",
         (Input("batch", "B: rows of X (tokens)", kind="count", integer=True, minimum=1, aliases=("B", "M", "m")),
          Input("d_in", "D: the contracted size", kind="count", integer=True, minimum=1, aliases=("D", "K", "k")),
          Input("d_out", "F: columns of W", kind="count", integer=True, minimum=1, aliases=("F", "N", "n")),
          Input("dtype", "activation dtype", kind="dtype", default="bf16"),
          Input("weight_dtype", "weight dtype (default: dtype)", kind="dtype", default=None),
          Input("chip", "a chip preset (h100): its peak at the dtype and its HBM bandwidth", kind="chip",
                default=None, aliases=("hw",)),
          Input("peak", "peak FLOP/s (instead of a chip)", unit="FLOP/s", default=None, aliases=("peak_flops",)),
          Input("bandwidth", "HBM bytes/s (instead of a chip)", unit="B/s", default=None, aliases=("hbm_bandwidth",))),
         (Output("time", "s", "roofline time max(FLOPs/peak, bytes/bandwidth)", ("chip",), key="time_s"),
          Output("flops", "FLOP", "2·B·D·F"),
          Output("bytes", "B", "HBM bytes moved"),
          Output("intensity", "FLOP/B", "FLOPs per byte"),
          Output("critical_batch", "", "B* where the matmul turns compute-bound", ("chip",))),
         conventions=(ACTIVATION_TRAFFIC,), solve="matmul", source="Williams et al. 2009 (roofline)")
def _matmul_formula(batch, d_in, d_out, dtype, weight_dtype, chip, peak, bandwidth, activations="read"):
    from solver.systems.chips import resolve_chip

    c = resolve_chip(chip, dtype, peak_flops=None if peak is None else float(peak),
                     bandwidth=None if bandwidth is None else float(bandwidth))
    return matmul(batch, d_in, d_out, dtype=dtype, weight_dtype=weight_dtype, chip=c, activations=activations)


FORMULAS = (_matmul_formula.formula,)


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): qkv calc's roofline(...) and attention_flops(...), from qkv solve
# roofline and attention-flops.
# ---------------------------------------------------------------------------------------

_CHIP_INPUTS = (
    Input("chip", "a chip preset (h100): its peak at the dtype and its HBM bandwidth", kind="chip", default=None,
          aliases=("hw",)),
    Input("peak", "peak FLOP/s (instead of the chip's)", unit="FLOP/s", default=None, aliases=("peak_flops",)),
    Input("bandwidth", "HBM bytes/s (instead of the chip's)", unit="B/s", default=None, aliases=("hbm_bandwidth",)))


def _given_chip(chip, dtype, peak, bandwidth):
    from solver.systems.chips import resolve_chip

    return resolve_chip(chip, dtype, peak_flops=None if peak is None else float(peak),
                        bandwidth=None if bandwidth is None else float(bandwidth))


@formula("roofline", "A chip's critical intensity I* = peak / bandwidth, and the batch B* ≈ I*·w/2 that reaches it.",
         (*_CHIP_INPUTS,
          Input("dtype", "compute dtype (the chip's peak at it)", kind="dtype", default="bf16"),
          Input("weight_dtype", "weight dtype of B* (default: dtype)", kind="dtype", default=None)),
         (Output("intensity", "FLOP/B", "I* = peak / bandwidth", key="critical_intensity"),
          Output("critical_batch", "", "B* ≈ I*·w / 2 (B ≪ D, F)")),
         solve="roofline", source="Williams et al. 2009 (roofline)")
def _roofline_formula(chip, peak, bandwidth, dtype, weight_dtype):
    return roofline(_given_chip(chip, dtype, peak, bandwidth), weight_dtype=weight_dtype or dtype)


ATTENTION_MODE = Convention("mode", "Which pass the attention belongs to.", {
    "prefill": Choice("T = seq queries attend to S keys", "FlashAttention (Dao et al. 2022)"),
    "decode": Choice("one new query per sequence attends to S cached keys",
                     "Austin et al., How to Scale Your Model (2025), 'Inference'")}, "prefill")
FFN_KIND = Convention("ffn", "The FFN of the crossover with all matmuls.", {
    "gelu": Choice("two matrices d×d_ff (GPT-2, BERT)", "Vaswani et al. 2017"),
    "relu": Choice("two matrices d×d_ff", "Vaswani et al. 2017"),
    "swiglu": Choice("three matrices d×d_ff (Llama)", "Shazeer 2020, 'GLU Variants'")}, "gelu")


@formula("attention_flops", "One attention layer's FLOPs 4·B·N·T·S·H, bytes, intensity, and where it overtakes "
         "the matmuls.",
         (Input("batch", "B: sequences", kind="count", integer=True, minimum=1, aliases=("B",)),
          Input("seq", "T: query tokens (prefill) or the context (decode)", kind="count", integer=True, minimum=1,
                binary_k=True, aliases=("T", "context", "seq_len")),
          Input("n_heads", "N: query heads", kind="count", integer=True, minimum=1, aliases=("heads",)),
          Input("d_head", "H: head size", kind="count", integer=True, minimum=1, aliases=("head_dim",)),
          Input("kv_seq", "S: key/value length (default seq)", kind="count", integer=True, minimum=1, default=None,
                binary_k=True, aliases=("S",)),
          Input("n_kv_heads", "G: KV heads (default n_heads; 1 = MQA)", kind="count", integer=True, minimum=1,
                default=None, aliases=("kv_heads",)),
          Input("d_model", "d: model width (default n_heads·d_head)", kind="count", integer=True, minimum=1,
                default=None, aliases=("hidden",)),
          Input("d_ff", "FFN width (default 4·d_model)", kind="count", integer=True, minimum=1, default=None),
          Input("dtype", "activation dtype", kind="dtype", default="bf16"),
          *_CHIP_INPUTS),
         (Output("flops", "FLOP", "4·B·N·T·S·H"),
          Output("bytes", "B", "Q, K, V read and O written once"),
          Output("intensity", "FLOP/B", "FLOPs per byte"),
          Output("kv_bytes", "B", "the K and V read: 2·B·G·S·H·a"),
          Output("crossover_projections", "", "S where attention FLOPs equal the projections'",
                 key="crossover_seq_projections"),
          Output("crossover_all", "", "S where attention FLOPs equal all the matmuls'",
                 key="crossover_seq_all_matmuls"),
          Output("time", "s", "roofline time on the chip", ("chip",), key="time_s")),
         conventions=(ATTENTION_MODE, FFN_KIND), solve="attention-flops", source="Dao et al. 2022 (FlashAttention)")
def _attention_formula(batch, seq, n_heads, d_head, kv_seq, n_kv_heads, d_model, d_ff, dtype, chip, peak, bandwidth,
                       mode="prefill", ffn="gelu"):
    return attention(batch, seq, n_heads, d_head, kv_seq=kv_seq, n_kv_heads=n_kv_heads, mode=mode, dtype=dtype,
                     d_model=d_model, d_ff=d_ff, ffn=ffn, chip=_given_chip(chip, dtype, peak, bandwidth))


FORMULAS += (_roofline_formula.formula, _attention_formula.formula)  # issue 44 (more entries)
