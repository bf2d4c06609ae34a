"""Quantisation error by hand: absmax (symmetric) and zero-point (asymmetric) integer quantisation of
a small vector, per-tensor / per-channel / per-block scales, SmoothQuant's migration scales, and
the model-state memory of FP8 training.

Conventions (each named in the results):

- absmax (symmetric), b bits: scale = max|x| / (2^(b−1) − 1) (int8: / 127, the symmetric range
  −127 … 127); q = clamp(round(x / scale), −(2^(b−1) − 1), 2^(b−1) − 1); x̂ = q · scale.
- zero-point (asymmetric), b bits, unsigned codes 0 … 2^b − 1: the range [min, max] is first
  widened to hold 0 (as PyTorch's MinMaxObserver does, so 0 is exact); scale = (max − min)/(2^b − 1);
  zero point z = clamp(round(−min / scale), 0, 2^b − 1); q = clamp(round(x / scale) + z, 0, 2^b − 1);
  x̂ = (q − z) · scale.
- round: half to even (``torch.round``, ``numpy.round``).
- error: x̂ − x per element; the answer is the largest |error| (the mean squared error beside it).
- granularity of a matrix W (rows = output channels): per-tensor (one scale), per-channel (one
  scale per row), per-block (one scale per ``block`` consecutive entries of a row).
- SmoothQuant (Xiao et al. 2023, eq. 4): s_j = max|X_j|^α / max|W_j|^(1−α) for input channel j,
  X' = X·diag(s)^−1, W' = diag(s)·W (W here is d_in × d_out, as in the paper: W_j is row j).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt

SCHEMES = ("absmax", "zero-point")
GRANULARITIES = ("tensor", "channel", "block")


def round_half_even(q: Fraction) -> int:
    fl = q.numerator // q.denominator
    rest = q - fl
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and fl % 2 == 1):
        return fl + 1
    return fl


def _bits(bits) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 16:
        raise SolverInputError(f"must be an integer from 2 to 16 (got {bits!r})", param="bits")
    return bits


def quantize_group(xs: list[Fraction], bits: int, scheme: str):
    """(scale, zero point, codes, dequantised) of one group sharing one scale."""
    if scheme == "absmax":
        qmax = 2 ** (bits - 1) - 1
        amax = max(abs(x) for x in xs)
        scale = amax / qmax if amax else Fraction(1)
        codes = [max(-qmax, min(qmax, round_half_even(x / scale))) for x in xs]
        return scale, 0, codes, [q * scale for q in codes]
    if scheme == "zero-point":
        qmax = 2**bits - 1
        lo, hi = min(min(xs), 0), max(max(xs), 0)
        scale = (hi - lo) / qmax if hi > lo else Fraction(1)
        z = max(0, min(qmax, round_half_even(-lo / scale)))
        codes = [max(0, min(qmax, round_half_even(x / scale) + z)) for x in xs]
        return scale, z, codes, [(q - z) * scale for q in codes]
    raise SolverInputError(f"must be one of {', '.join(SCHEMES)} (got {scheme!r})", param="scheme")


def quantize_vector(values, bits: int = 8, scheme: str = "absmax") -> Result:
    """Quantise and dequantise a vector with one scale; the error of each element."""
    xs = [Fraction(v) for v in values]
    if not xs:
        raise SolverInputError("give at least one value", param="values")
    b = _bits(bits)
    r = Result(answer=None, unit="", convention={
        "scheme": ("absmax (symmetric): scale = max|x| / (2^(b−1) − 1), codes −(2^(b−1) − 1) … 2^(b−1) − 1"
                   if scheme == "absmax" else
                   "zero-point (asymmetric): range widened to hold 0, scale = (max − min)/(2^b − 1), "
                   "z = round(−min/scale), codes 0 … 2^b − 1"),
        "round": "half to even (torch.round)", "answer": "max |error|"})
    scale, z, codes, deq = quantize_group(xs, b, scheme)
    if scheme == "absmax":
        qmax = 2 ** (b - 1) - 1
        amax = r.step("amax = max |x|", ", ".join(fmt(abs(x)) for x in xs), max(abs(x) for x in xs))
        r.step(f"scale = amax / {qmax}", f"{fmt(amax)} / {qmax}", scale)
        r.step("q = clamp(round(x / scale))", f"x / {fmt(scale)}", codes)
        r.step("x̂ = q × scale", f"q × {fmt(scale)}", [float(d) for d in deq])
    else:
        qmax = 2**b - 1
        lo, hi = min(min(xs), 0), max(max(xs), 0)
        r.step("min, max (0 included)", f"min({fmt(min(xs))}, 0), max({fmt(max(xs))}, 0)", [float(lo), float(hi)])
        r.step(f"scale = (max − min) / {qmax}", f"({fmt(hi)} − {fmt(lo)}) / {qmax}", scale)
        r.step("z = round(−min / scale)", f"round({fmt(-lo)} / {fmt(scale)})", z)
        r.step("q = clamp(round(x / scale) + z, 0, 2^b − 1)", f"x / {fmt(scale)} + {z}", codes)
        r.step("x̂ = (q − z) × scale", f"(q − {z}) × {fmt(scale)}", [float(d) for d in deq])
    errs = [d - x for d, x in zip(deq, xs, strict=True)]
    worst = r.step("max |error| = max |x̂ − x|", ", ".join(fmt(abs(e)) for e in errs), max(abs(e) for e in errs))
    mse = sum(e * e for e in errs) / len(errs)
    r.answer = worst
    r.breakdown.update(scheme=scheme, bits=b, scale=scale, zero_point=z, codes=codes,
                       dequantised=[float(d) for d in deq], errors=[float(e) for e in errs], max_abs_error=worst,
                       mse=mse)
    return r


def quantize_matrix(rows, bits: int = 8, scheme: str = "absmax", *, block: int | None = None) -> Result:
    """Max |error| and MSE of a matrix under per-tensor, per-channel (row) and per-block scales."""
    W = [[Fraction(v) for v in row] for row in rows]
    if not W or not W[0] or any(len(row) != len(W[0]) for row in W):
        raise SolverInputError("give a non-empty matrix with rows of equal length", param="values")
    b = _bits(bits)
    cols = len(W[0])
    k = block if block is not None else min(cols, 2)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1 or cols % k:
        raise SolverInputError(f"block must divide the row length {cols} (got {k!r})", param="block")
    r = Result(answer=None, unit="", convention={
        "scheme": scheme, "rows": "output channels: per-channel = one scale per row",
        "block": f"per-block: one scale per {k} consecutive entries of a row",
        "answer": "max |error| per granularity (per-tensor is the answer)"})
    out = {}
    for g in GRANULARITIES:
        if g == "tensor":
            groups = [[(i, j) for i in range(len(W)) for j in range(cols)]]
        elif g == "channel":
            groups = [[(i, j) for j in range(cols)] for i in range(len(W))]
        else:
            groups = [[(i, j) for j in range(s, s + k)] for i in range(len(W)) for s in range(0, cols, k)]
        errs, scales = [], []
        for grp in groups:
            xs = [W[i][j] for i, j in grp]
            scale, _, _, deq = quantize_group(xs, b, scheme)
            scales.append(scale)
            errs += [d - x for d, x in zip(deq, xs, strict=True)]
        worst = max(abs(e) for e in errs)
        mse = sum(e * e for e in errs) / len(errs)
        r.step(f"per-{g}: {len(groups)} scale(s), max |error|", ", ".join(fmt(s) for s in scales), worst)
        out[g] = (worst, mse, scales)
        r.breakdown.update({f"max_abs_error_per_{g}": worst, f"mse_per_{g}": mse, f"scales_per_{g}": len(scales)})
    r.answer = out["tensor"][0]
    return r


def _per_channel(terms, shown: int = 8) -> str:
    """``[16^0.5 / 1^0.5, 1^0.5 / 4^0.5]``: a step's arithmetic channel by channel; past ``shown``
    channels, the first few and how many more (a substitution line stays one readable line)."""
    terms = list(terms)
    if len(terms) > shown:
        terms = [*terms[:shown - 2], f"… {len(terms) - shown + 2} more"]
    return "[" + ", ".join(terms) + "]"


def smoothquant(x_absmax, w_absmax, alpha: float = 0.5) -> Result:
    """SmoothQuant's migration scales s_j = max|X_j|^α / max|W_j|^(1−α), and the maxima after smoothing."""
    xa, wa = [float(v) for v in x_absmax], [float(v) for v in w_absmax]
    if not xa or len(xa) != len(wa):
        raise SolverInputError("give one activation max and one weight max per input channel", param="w_absmax")
    if any(v <= 0 for v in xa + wa):
        raise SolverInputError("every channel maximum must be positive", param="x_absmax")
    if not 0 <= alpha <= 1:
        raise SolverInputError(f"must be in [0, 1] (got {alpha!r})", param="alpha")
    r = Result(answer=None, unit="", convention={
        "scales": "s_j = max|X_j|^α / max|W_j|^(1−α) (Xiao et al. 2023, SmoothQuant, eq. 4)",
        "transform": "X' = X·diag(s)^−1, W' = diag(s)·W: the product XW is unchanged",
        "answer": "the scales s_j"})
    s = [x**alpha / w ** (1 - alpha) for x, w in zip(xa, wa, strict=True)]
    a, b = fmt(alpha), fmt(1 - alpha)
    r.step("s_j = max|X_j|^α / max|W_j|^(1−α)", _per_channel(f"{fmt(x)}^{a} / {fmt(w)}^{b}" for x, w in zip(xa, wa, strict=True)), s)
    x_after = [x / sj for x, sj in zip(xa, s, strict=True)]
    w_after = [w * sj for w, sj in zip(wa, s, strict=True)]
    r.step("max|X'_j| = max|X_j| / s_j", _per_channel(f"{fmt(x)} / {fmt(sj)}" for x, sj in zip(xa, s, strict=True)), x_after)
    r.step("max|W'_j| = max|W_j| · s_j", _per_channel(f"{fmt(w)} · {fmt(sj)}" for w, sj in zip(wa, s, strict=True)), w_after)
    r.answer = s
    r.breakdown.update(alpha=alpha, scales=s, x_absmax_after=x_after, w_absmax_after=w_after,
                       x_range_ratio_before=max(xa) / min(xa), x_range_ratio_after=max(x_after) / min(x_after))
    return r


# ---------------------------------------------------------------------------------------
# FP8 training: which tensors stay in higher precision (a stated recipe)
# ---------------------------------------------------------------------------------------

#: recipe: [(tensor, bytes per parameter, why)]
FP8_RECIPES = {
    "bf16-mixed": [("bf16 weights (used by the matmuls)", 2, "compute copy"),
                   ("fp32 master weights", 4, "the optimizer updates these"),
                   ("bf16 gradients", 2, "reduced in bf16"),
                   ("Adam m (fp32)", 4, "first moment"), ("Adam v (fp32)", 4, "second moment")],
    "fp8-te": [("bf16 weights", 2, "kept: non-matmul use and the source of each FP8 cast"),
               ("fp8 weight copy", 1, "the GEMM operand, cast once per step with its scale"),
               ("fp32 master weights", 4, "the optimizer updates these"),
               ("bf16 gradients", 2, "weight gradients leave the GEMM in bf16"),
               ("Adam m (fp32)", 4, "first moment"), ("Adam v (fp32)", 4, "second moment")],
    "fp8-deepseek-v3": [("fp8 weights", 1, "the GEMM operand, block-scaled"),
                        ("fp32 master weights", 4, "kept in fp32"),
                        ("fp32 gradients", 4, "accumulated in fp32"),
                        ("Adam m (bf16)", 2, "first moment in bf16"), ("Adam v (bf16)", 2, "second moment in bf16")],
}
FP8_SOURCES = {
    "bf16-mixed": "mixed precision with fp32 master weights (Micikevicius et al. 2018): 2 + 4 + 2 + 8 bytes",
    "fp8-te": "NVIDIA Transformer Engine FP8 recipe: FP8 only as GEMM operands; weights, master copy, grads "
              "and optimizer states as in bf16 mixed precision, plus the FP8 weight copy",
    "fp8-deepseek-v3": "DeepSeek-V3 technical report §3.3: FP8 GEMM operands; master weights and gradients fp32, "
                       "AdamW moments in bf16",
}


def fp8_training_memory(params: int, recipe: str = "fp8-te") -> Result:
    """Model-state bytes per parameter (and total) of a named FP8 (or bf16) training recipe."""
    if recipe not in FP8_RECIPES:
        raise SolverInputError(f"must be one of {', '.join(FP8_RECIPES)} (got {recipe!r})", param="recipe")
    if isinstance(params, bool) or not isinstance(params, int) or params < 1:
        raise SolverInputError(f"must be a positive integer (got {params!r})", param="params")
    rows = FP8_RECIPES[recipe]
    r = Result(answer=None, unit="bytes", convention={
        "recipe": f"{recipe}: {FP8_SOURCES[recipe]}",
        "counts": "model states only (weights, master copy, gradients, Adam moments); activations apart",
        "higher_precision": ", ".join(n for n, b, _ in rows if b >= 2)})
    per = r.step("bytes per parameter = " + " + ".join(n for n, _, _ in rows), " + ".join(str(b) for _, b, _ in rows),
                 sum(b for _, b, _ in rows), "bytes")
    total = r.step("model states = N × bytes per parameter", f"{params:,} × {per}", params * per, "bytes")
    r.answer = total
    r.breakdown.update(recipe=recipe, params=params, bytes_per_parameter=per, total_bytes=total,
                       **{n.split(" (")[0].lower().replace(" ", "_").replace("-", "_") + "_bytes": params * b for n, b, _ in rows})
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's fp8_memory(...),
# from qkv solve fp8-memory.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

FP8_RECIPE = Convention("recipe", "Which tensors stay in higher precision.", {
    "fp8-te": Choice("bf16 weights and an fp8 copy, fp32 master weights, Adam m and v in fp32",
                     "NVIDIA Transformer Engine (FP8 training recipe)"),
    "fp8-deepseek-v3": Choice("fp8 weights, fp32 master weights and gradients, Adam m and v in bf16",
                              "DeepSeek-AI 2024 (DeepSeek-V3 technical report), §3.3"),
    "bf16-mixed": Choice("bf16 weights and gradients, fp32 master weights and Adam m, v: 16 bytes per parameter",
                         "Micikevicius et al. 2018 (mixed precision)")}, "fp8-te")


@formula("fp8_memory", "Model-state bytes of FP8 training: which tensors stay in bf16 or fp32, bytes per parameter.",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N",)),),
         (Output("bytes", "B", "N × bytes per parameter", key="total_bytes"),
          Output("bytes_per_parameter", "B", "bytes each parameter's states take")),
         conventions=(FP8_RECIPE,), solve="fp8-memory", source="NVIDIA Transformer Engine; DeepSeek-V3 report")
def _fp8_memory_formula(params, recipe="fp8-te"):
    return fp8_training_memory(params, recipe)


_ENTRY = dict(kind="vector", minimum=-10**12, maximum=10**12)


@formula("quant_error", "Quantise and dequantise a vector (or a matrix: per-tensor, per-channel and per-block scales "
         "compared); the largest error.",
         (Input("values", "a vector of values ([0.5, -1.2, 3.1])", default=None, **_ENTRY),
          Input("matrix", "or a matrix, rows = output channels ([[1, -2], [0.1, 0.2]])", default=None,
                **{**_ENTRY, "kind": "matrix"}),
          Input("bits", "integer bits (int8: 8, int4: 4)", kind="count", integer=True, minimum=2, maximum=16,
                default=8, aliases=("b",)),
          Input("block", "matrix only: entries per block scale (default 2)", kind="count", integer=True, minimum=1,
                maximum=10**6, default=None)),
         (Output("error", "", "the largest |x − dequantised| (a matrix: per tensor)"),
          Output("dequantised", "", "a vector's dequantised values", kind="vector"),
          Output("codes", "", "a vector's integer codes", kind="vector"),
          Output("scale", "", "a vector's scale"),
          Output("mse", "", "a vector's mean squared error"),
          Output("per_channel", "", "a matrix's largest error with one scale per row",
                 key="max_abs_error_per_channel"),
          Output("per_block", "", "a matrix's largest error with one scale per block", key="max_abs_error_per_block")),
         conventions=(Convention("scheme", "How the codes are laid out.", {
             "absmax": Choice("symmetric, codes ±(2^(b−1) − 1)", "Dettmers et al. 2022 (LLM.int8())"),
             "zero-point": Choice("asymmetric, codes 0 … 2^b − 1", "Jacob et al. 2018")}, "absmax"),),
         solve="quant-error", source="Dettmers et al. 2022; Jacob et al. 2018")
def _quant_error_formula(values=None, matrix=None, bits=8, block=None, scheme="absmax"):
    if (values is None) == (matrix is None):
        raise SolverInputError("give values= (a vector) or matrix= (a list of rows), one of them", param="values")
    if matrix is not None and len(matrix) == 1:  # one row is a vector, as qkv solve reads it
        values, matrix = matrix[0], None
    if values is not None:
        if block is not None:
            raise SolverInputError("block= compares the scales of a matrix", param="block")
        r = quantize_vector(values, bits, scheme)
    else:
        r = quantize_matrix(matrix, bits, scheme, block=block)
    r.breakdown["error"] = r.answer
    return r


@formula("smoothquant", "SmoothQuant's s_j = max|X_j|^α / max|W_j|^(1−α), and the channel maxima after smoothing.",
         (Input("x_max", "max|X_j| per input channel j (activations)", kind="vector", minimum=0, maximum=10**12),
          Input("w_max", "max|W_j| per input channel j (weights)", kind="vector", minimum=0, maximum=10**12),
          Input("alpha", "migration strength α (paper: 0.5)", kind="fraction", minimum=0, maximum=1, default=0.5)),
         (Output("scales", "", "s_j per channel", kind="vector"),
          Output("x_after", "", "max|X_j| / s_j", key="x_absmax_after", kind="vector"),
          Output("w_after", "", "max|W_j| · s_j", key="w_absmax_after", kind="vector"),
          Output("x_range_before", "", "largest over smallest max|X_j|", key="x_range_ratio_before"),
          Output("x_range_after", "", "the same after smoothing", key="x_range_ratio_after")),
         solve="smoothquant", source="Xiao et al. 2023 (SmoothQuant), §4")
def _smoothquant_formula(x_max, w_max, alpha=0.5):
    return smoothquant(x_max, w_max, float(alpha))


FORMULAS = (_fp8_memory_formula.formula, _quant_error_formula.formula, _smoothquant_formula.formula)
