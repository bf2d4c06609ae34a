"""LayerNorm and RMSNorm by hand.

LN(x) = γ ⊙ (x − μ)/√(σ² + ε) + β with the *biased* variance σ² = (1/d)Σ(xᵢ − μ)² (as
PyTorch); RMSNorm(x) = γ ⊙ x/√(mean(x²) + ε). Statements set ε = 0 so that the hand
computation is exact (with ε = 1e-5 the difference is below the rounding asked).
"""

from __future__ import annotations

import math

from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import ENTRY_MARGIN, matrix_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc, latex_matrix, num


def _vec(d: Draw, dim: int) -> list[int]:
    while True:
        x = [d.rng.randint(-2, 6) for _ in range(dim)]
        if len(set(x)) >= 3:
            return x


@family(
    "normalisation.layernorm",
    topic="normalisation",
    title="LayerNorm by hand",
    types=("matrix",),
    tags=("layernorm", "normalisation"),
    source="004_83489721195aedaa.txt formula sheet (LayerNorm)",
    told_apart=("no_centering",),  # a row of mean 0 gave the key to a student who skipped the mean
)
def layernorm(d: Draw) -> Problem:
    """LayerNorm of a small integer vector (mean an integer), with γ and β at medium/hard."""
    import numpy as np

    from solver.kernels import sympy_ref

    dim = 4 if d.level < 2 else 5
    for _ in range(500):
        x = _vec(d, dim)
        if sum(x) % dim:
            continue
        gamma = [1] * dim if d.level == 0 else [d.pick((1, 2, -1)) for _ in range(dim)]
        beta = [0] * dim if d.level == 0 else [d.pick((0, 1, -1)) for _ in range(dim)]
        out, tr = sympy_ref.layer_norm([x], gamma, beta, eps=0, return_trace=True)
        value = sympy_ref.to_floats(out)
        if not safe_for_rounding(value, 2, ENTRY_MARGIN):
            continue
        key = matrix_key(value, decimals=2)
        xa = np.array(x, dtype=float)
        g, b = np.array(gamma, dtype=float), np.array(beta, dtype=float)
        mu = xa.mean()
        var = ((xa - mu) ** 2).mean()
        wrongs = [
            Wrong("unbiased_variance", "used the unbiased variance (÷ (d−1))",
                  "LayerNorm uses the biased variance: divide the squared deviations by d, not d − 1.",
                  [list(g * (xa - mu) / math.sqrt(((xa - mu) ** 2).sum() / (dim - 1)) + b)]),
            Wrong("divided_by_variance", "divided by the variance instead of the standard deviation",
                  "Divide by √(σ² + ε), the standard deviation, not by σ².", [list(g * (xa - mu) / var + b)]),
            Wrong("no_centering", "did not subtract the mean", "LayerNorm centres first: x − μ.",
                  [list(g * xa / math.sqrt(var) + b)]),
            Wrong("forgot_affine", "forgot γ and β", "The normalised vector is then scaled by γ and shifted by β.",
                  [list((xa - mu) / math.sqrt(var))] if d.level else None),
            Wrong("beta_before_gamma", "added β before multiplying by γ", "y = γ·x̂ + β: scale first, then shift.",
                  [list(g * ((xa - mu) / math.sqrt(var) + b))] if d.level else None),
        ]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 3:
            break
    mean = sum(x) // dim
    dev = [v - mean for v in x]
    ssq = sum(t * t for t in dev)
    st = Doc()
    affine = d.level > 0
    st.p(r"LayerNorm computes $y = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta$ over the features, with "
         r"$\sigma^2 = \frac{1}{d}\sum_i (x_i - \mu)^2$ (the biased variance, as PyTorch). Take $\epsilon = 0$.")
    if affine:
        st.p(f"Compute $y$ for $x = {latex_matrix(x)}$, $\\gamma = {latex_matrix(gamma)}$, $\\beta = {latex_matrix(beta)}$. "
             "Give the entries rounded off to two decimal places.")
    else:
        st.p(f"Compute $y$ for $x = {latex_matrix(x)}$ with $\\gamma = 1$, $\\beta = 0$. Give the entries rounded off to two decimal places.")
    sol = Doc()
    sol.p(f"Mean: $\\mu = ({' + '.join(str(v) for v in x)})/{dim} = {mean}$.")
    sol.p(f"Deviations $x - \\mu = {latex_matrix(dev)}$; squares sum to ${ssq}$; "
          f"$\\sigma^2 = {ssq}/{dim} = {num(ssq / dim, 4)}$, $\\sigma = {num(math.sqrt(ssq / dim), 4)}$.")
    norm = [t / math.sqrt(ssq / dim) for t in dev]
    sol.p(f"Normalised: $\\hat x = (x - \\mu)/\\sigma = {latex_matrix(norm, 4)}$.")
    if affine:
        sol.p(r"Scale and shift: $y_i = \gamma_i \hat x_i + \beta_i$.")
    sol.matrix("y", value, 4)
    sol.p(f"Rounded: $y \\approx {latex_matrix(value, 2)}$.")
    return d.problem(type="matrix", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"x": x, "gamma": gamma, "beta": beta, "eps": 0, "trace": tr.names()},
                     hints=["Mean, then the biased variance (÷ d), then (x − μ)/σ, then γ and β."])


@family(
    "normalisation.rmsnorm",
    topic="normalisation",
    title="RMSNorm by hand",
    types=("matrix",),
    tags=("rmsnorm", "normalisation", "llama"),
    source="003_f22b31e216cc5b5a.txt (RMSNorm in modern LLMs)",
    told_apart=("forgot_gamma",),  # where γ is given, a γ of ones left it untested
)
def rmsnorm(d: Draw) -> Problem:
    """RMSNorm of a small integer vector, γ at medium/hard; hard has six entries (issue 22: medium and hard
    were the same problem, four entries with γ, and drew the same statements)."""
    import numpy as np

    from solver.kernels import sympy_ref

    dim = 6 if d.level == 2 else 4
    for _ in range(500):
        x = _vec(d, dim)
        gamma = [1] * dim if d.level == 0 else [d.pick((1, 2, -1)) for _ in range(dim)]
        out, tr = sympy_ref.rms_norm([x], gamma, eps=0, return_trace=True)
        value = sympy_ref.to_floats(out)
        if not safe_for_rounding(value, 2, ENTRY_MARGIN):
            continue
        key = matrix_key(value, decimals=2)
        xa, g = np.array(x, dtype=float), np.array(gamma, dtype=float)
        ms = (xa ** 2).mean()
        mu = xa.mean()
        wrongs = [
            Wrong("subtracted_mean", "subtracted the mean (that is LayerNorm)", "RMSNorm does not centre: divide x itself by its RMS.",
                  [list(g * (xa - mu) / math.sqrt(((xa - mu) ** 2).mean()))]),
            Wrong("no_sqrt", "divided by the mean square, not its root", "Divide by √(mean(x²)), the root mean square.",
                  [list(g * xa / ms)]),
            Wrong("l2_norm", "divided by the L2 norm (forgot the mean)", "RMS = √(Σx²/d), not √(Σx²).",
                  [list(g * xa / math.sqrt((xa ** 2).sum()))]),
            Wrong("forgot_gamma", "forgot γ", "Multiply the normalised vector by γ.", [list(xa / math.sqrt(ms))] if d.level else None),
        ]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 3:
            break
    sq = sum(v * v for v in x)
    st = Doc()
    st.p(r"RMSNorm computes $y = \gamma \odot \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}}$ (no mean subtraction, no $\beta$). Take $\epsilon = 0$.")
    st.p(f"Compute $y$ for $x = {latex_matrix(x)}$" + (f", $\\gamma = {latex_matrix(gamma)}$" if d.level else r" with $\gamma = 1$")
         + ". Give the entries rounded off to two decimal places.")
    sol = Doc()
    sol.p(f"Mean square: $({' + '.join(f'{v}^2' if v >= 0 else f'({v})^2' for v in x)})/{dim} = {sq}/{dim} = {num(sq / dim, 4)}$; "
          f"RMS $= \\sqrt{{{num(sq / dim, 4)}}} = {num(math.sqrt(sq / dim), 4)}$.")
    sol.p(f"$\\hat x = x/\\mathrm{{RMS}} = {latex_matrix([v / math.sqrt(sq / dim) for v in x], 4)}$" + (r"; then $y_i = \gamma_i \hat x_i$." if d.level else "."))
    sol.matrix("y", value, 4)
    sol.p(f"Rounded: $y \\approx {latex_matrix(value, 2)}$.")
    return d.problem(type="matrix", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"x": x, "gamma": gamma, "eps": 0, "trace": tr.names()},
                     hints=["RMS = √(mean of the squares); no centring."])
