"""RoPE context extension by hand: each dimension pair's frequency and wavelength, before and after.

Pair i (i = 0 … d/2 − 1) of a head of rotary size d turns by θ_i = base^(−2i/d) radians per
position; its wavelength is λ_i = 2π/θ_i = 2π·base^(2i/d) positions, and over the original
context L it makes r_i = L/λ_i turns. A model trained to L sees every pair's angle only up to
θ_i·L; the methods below keep a longer context s·L inside (or near) that range:

- ``linear`` — position interpolation (Chen et al. 2023): θ_i' = θ_i/s for every pair.
- ``ntk`` — "NTK-aware" change of base (bloc97, Reddit 2023): base' = base·s^(d/(d−2)), so the
  first pair is unchanged and the last one is interpolated by exactly s.
- ``dynamic`` — dynamic NTK (HuggingFace's "dynamic" rope type): the same change of base with
  α = s·n/L − (s − 1) for the current length n ≥ L (α = 1 at n = L).
- ``yarn`` — YaRN (Peng et al. 2023, "NTK-by-parts" + temperature): pairs that turn more than
  β_fast = 32 times over L keep θ_i (extrapolation), pairs that turn fewer than β_slow = 1 times
  are interpolated θ_i/s, and between them a linear ramp γ over the pair index blends the two:
  θ_i' = (1 − γ_i)·θ_i + γ_i·θ_i/s. The ramp's ends are the pair indices where r_i = β:
  i(β) = d·ln(L/(2πβ))/(2·ln base), floored/ceiled when ``truncate`` (HF's default) or not.
  The attention logits are scaled by t with √t = 0.1·ln s + 1 (HF returns that √t as the
  "attention_factor", applied to cos and sin, so to q and k both).

Sources of the code conventions: HuggingFace ``transformers.modeling_rope_utils``
(``_compute_linear_scaling_rope_parameters``, ``_compute_dynamic_ntk_parameters``,
``_compute_yarn_parameters``), which the tests check against.
"""

from __future__ import annotations

import math

from solver.errors import SolverInputError
from solver.result import Result, fmt

METHODS = ("none", "linear", "ntk", "dynamic", "yarn")


def _check(d: int, base: float, factor: float) -> None:
    if isinstance(d, bool) or int(d) != d or d < 2 or d % 2:
        raise SolverInputError(f"the rotary size must be an even integer ≥ 2 (got {d})", param="d_head")
    if not (base > 1 and math.isfinite(base)):
        raise SolverInputError(f"the base must be > 1 (got {base})", param="base")
    if not (factor >= 1 and math.isfinite(factor)):
        raise SolverInputError(f"the scale factor must be ≥ 1 (got {factor})", param="factor")


def yarn_range(d: int, base: float, original: int, beta_fast: float = 32, beta_slow: float = 1,
               truncate: bool = True) -> tuple[float, float]:
    """(low, high) pair indices of YaRN's ramp: where the pair turns β_fast and β_slow times over L."""

    def dim(rot):
        return d * math.log(original / (rot * 2 * math.pi)) / (2 * math.log(base))

    low, high = dim(beta_fast), dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, d - 1)


def rope_scaling(d_head: int, *, base: float = 10000.0, method: str = "linear", factor: float = 1.0,
                 original: int = 4096, seq_len: int | None = None, beta_fast: float = 32, beta_slow: float = 1,
                 truncate: bool = True, pair: int | None = None) -> Result:
    """Every pair's θ_i, λ_i and turns over the original context, then θ_i' and λ_i' under ``method``.

    Answer: the scaled wavelengths λ_i' (or pair ``pair``'s). Breakdown: the per-pair lists, the
    new base (ntk, dynamic), the ramp (yarn) and the attention factor (yarn)."""
    d = int(d_head)
    base, factor = float(base), float(factor)
    _check(d, base, factor)
    if method not in METHODS:
        raise SolverInputError(f"method must be one of {', '.join(METHODS)} (got {method!r})", param="method")
    if int(original) != original or original < 1:
        raise SolverInputError(f"must be a positive integer (got {original})", param="original")
    half = d // 2
    if pair is not None and not (0 <= pair < half):
        raise SolverInputError(f"pair must be from 0 to {half - 1}", param="pair")
    theta = [base ** (-2 * i / d) for i in range(half)]
    lam = [2 * math.pi / t for t in theta]
    turns = [original / x for x in lam]
    r = Result(answer=None, unit="positions", convention={
        "pairs": "pair i = dimensions (2i, 2i+1) interleaved, or (i, i + d/2) rotate-half: the same θ_i",
        "frequency": "θ_i = base^(−2i/d) radians per position; wavelength λ_i = 2π/θ_i",
        "turns": f"r_i = L/λ_i turns over the original context L = {fmt(int(original))}"})
    r.step("θ_i = base^(−2i/d)", f"base = {fmt(base)}, d = {d}", theta)
    r.step("λ_i = 2π/θ_i = 2π·base^(2i/d)", "per pair", lam, "positions")
    r.breakdown = {"theta": theta, "wavelength": lam, "turns_over_original": turns}
    attention_factor = 1.0
    if method == "none":
        new = theta
    elif method == "linear":
        r.convention["method"] = "position interpolation (Chen et al. 2023): θ_i' = θ_i/s"
        new = r.step("θ_i' = θ_i/s", f"s = {fmt(factor)}", [t / factor for t in theta])
    elif method in ("ntk", "dynamic"):
        if method == "dynamic":
            n = max(int(seq_len or original), int(original))
            alpha = r.step("α = s·n/L − (s − 1)", f"{fmt(factor)} × {fmt(n)}/{fmt(int(original))} − {fmt(factor - 1)}",
                           factor * n / original - (factor - 1))
            r.convention["method"] = ("dynamic NTK (HF 'dynamic'): base' = base·α^(d/(d−2)), α = s·n/L − (s − 1) "
                                      "for the current length n (n < L counts as L)")
        else:
            alpha = factor
            r.convention["method"] = "NTK-aware change of base: base' = base·s^(d/(d−2)) (bloc97 2023)"
        new_base = r.step("base' = base·α^(d/(d−2))", f"{fmt(base)} × {fmt(alpha)}^({d}/{d - 2})",
                          base * alpha ** (d / (d - 2)) if d > 2 else math.inf)
        if not math.isfinite(new_base):
            raise SolverInputError("the change of base needs a rotary size d > 2", param="d_head")
        new = r.step("θ_i' = base'^(−2i/d)", f"base' = {fmt(new_base)}", [new_base ** (-2 * i / d) for i in range(half)])
        r.breakdown["new_base"] = new_base
        r.breakdown["alpha"] = alpha
    else:
        low, high = yarn_range(d, base, int(original), beta_fast, beta_slow, truncate)
        r.step("ramp ends i(β) = d·ln(L/(2πβ))/(2·ln base)", f"β_fast = {fmt(beta_fast)}, β_slow = {fmt(beta_slow)}"
               + (", floored/ceiled" if truncate else ""), [low, high])
        hi = high if high != low else high + 0.001  # HF's guard against a zero-width ramp
        gamma = [min(max((i - low) / (hi - low), 0.0), 1.0) for i in range(half)]
        r.step("γ_i = clamp((i − low)/(high − low), 0, 1)", "0: keep θ_i (fast pairs), 1: θ_i/s (slow pairs)", gamma)
        new = r.step("θ_i' = (1 − γ_i)·θ_i + γ_i·θ_i/s", f"s = {fmt(factor)}",
                     [(1 - g) * t + g * t / factor for g, t in zip(gamma, theta, strict=True)])
        attention_factor = r.step("√t = 0.1·ln s + 1 (1 when s ≤ 1)", f"0.1 × ln {fmt(factor)} + 1",
                                  0.1 * math.log(factor) + 1 if factor > 1 else 1.0)
        r.breakdown.update({"ramp_low": low, "ramp_high": high, "ramp": gamma, "attention_factor": attention_factor,
                            "logit_scale": attention_factor ** 2})
        r.convention["method"] = (f"YaRN (Peng et al. 2023): β_fast = {fmt(beta_fast)}, β_slow = {fmt(beta_slow)}, "
                                  "ramp over the pair index, " + ("truncated (HF default)" if truncate else "not truncated")
                                  + "; attention factor √t = 0.1·ln s + 1 on cos and sin")
    new_lam = r.step("λ_i' = 2π/θ_i'", "per pair", [2 * math.pi / t for t in new], "positions")
    r.breakdown.update({"scaled_theta": new, "scaled_wavelength": new_lam,
                        "stretch": [a / b for a, b in zip(new_lam, lam, strict=True)]})
    r.convention["factor"] = f"s = {fmt(factor)} (target context s·L = {fmt(factor * original)})"
    r.answer = new_lam if pair is None else new_lam[pair]
    if pair is not None:
        r.convention["answer"] = f"wavelength of pair {pair} after {method}"
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's
# rope_scaling(...), one pair's wavelength, from qkv solve rope-scaling --pair.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

ROPE_METHOD = Convention("method", "How RoPE is stretched to a longer context.", {
    "linear": Choice("position interpolation: θ_i/s for every pair", "Chen et al. 2023 (PI)"),
    "ntk": Choice("NTK-aware: the base times s^(d/(d−2))", "bloc97 2023 (NTK-aware scaled RoPE)"),
    "dynamic": Choice("dynamic NTK: the base grows with the current length", "HuggingFace transformers"),
    "yarn": Choice("NTK-by-parts ramp over the pairs and a temperature", "Peng et al. 2023 (YaRN)"),
    "none": Choice("no scaling", "Su et al. 2021 (RoFormer)")}, "linear")
ROPE_TRUNCATE = Convention("truncate", "YaRN: whether the ramp's ends are floored and ceiled.", {
    "on": Choice("floor/ceil the ramp ends (HuggingFace's default)", "HuggingFace transformers"),
    "off": Choice("the ramp ends as computed (--no-truncate)", "Peng et al. 2023")}, "on")


@formula("rope_scaling", "RoPE context extension (PI, NTK, dynamic, YaRN): pair i's wavelength 2π/θ_i' after the "
         "scaling.",
         (Input("d_head", "d: rotary size of a head (even)", kind="count", integer=True, minimum=2, maximum=65536,
                aliases=("rotary_dim", "d")),
          Input("pair", "i: the pair (from 0)", kind="count", integer=True, minimum=0, aliases=("i",)),
          Input("base", "the RoPE base (rope_theta)", kind="fraction", default=10000, minimum=1, maximum=10**12,
                aliases=("theta",)),
          Input("factor", "s: target context ÷ original", kind="fraction", default=1, minimum=1, maximum=10**6,
                aliases=("s",)),
          Input("original", "L: the original (pre-training) context", kind="count", integer=True, minimum=1,
                default=4096, binary_k=True, aliases=("original_context",)),
          Input("seq_len", "n: the current length (dynamic only)", kind="count", integer=True, minimum=1,
                default=None, binary_k=True),
          Input("beta_fast", "YaRN's β_fast", kind="fraction", default=32, maximum=10**6),
          Input("beta_slow", "YaRN's β_slow", kind="fraction", default=1, maximum=10**6)),
         (Output("wavelength", "", "pair i's wavelength after the scaling, in positions", key="pair_wavelength"),
          Output("new_base", "", "the changed base (ntk, dynamic)"),
          Output("attention_factor", "", "YaRN's attention temperature factor")),
         conventions=(ROPE_METHOD, ROPE_TRUNCATE), solve="rope-scaling",
         source="Chen et al. 2023 (PI); Peng et al. 2023 (YaRN)")
def _rope_scaling_formula(d_head, pair, base, factor, original, seq_len, beta_fast, beta_slow, method="linear",
                          truncate="on"):
    if seq_len is not None and method != "dynamic":
        raise SolverInputError("only the dynamic method depends on the current length", param="seq_len")
    r = rope_scaling(d_head, base=float(base), method=method, factor=float(factor), original=original,
                     seq_len=seq_len, beta_fast=float(beta_fast), beta_slow=float(beta_slow),
                     truncate=truncate == "on", pair=pair)
    r.breakdown["pair_wavelength"] = r.answer
    return r


FORMULAS = (_rope_scaling_formula.formula,)
