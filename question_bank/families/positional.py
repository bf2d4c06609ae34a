"""Sinusoidal positional encodings (values, the rotation property) and RoPE by hand.

PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(pos/10000^(2i/d)) (Vaswani et al.,
interleaved layout; ``solver.kernels.sympy_ref.pe_value``). Rotation property: with ω = 10000^(−2i/d)
and a = PE(p, 2i), b = PE(p, 2i+1),
PE(p+k, 2i) = a·cos ωk + b·sin ωk and PE(p+k, 2i+1) = b·cos ωk − a·sin ωk: a fixed rotation
by ωk, whatever p. RoPE rotates each pair (x₂ᵢ, x₂ᵢ₊₁) of a query/key at position p by p·θᵢ,
θᵢ = 10000^(−2i/d) (``solver.kernels.sympy_ref.rope``, pairing "interleaved"; "half" pairs i with i+d/2).
"""

from __future__ import annotations

import math

from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import (
    ENTRY_MARGIN,
    answer_text,
    in_range,
    matrix_key,
    misconception_range,
    nat_key,
    round_half_up,
    safe_for_rounding,
)
from question_bank.problem import Problem
from question_bank.render import Doc, latex_matrix, num


@family(
    "positional.pe_value",
    topic="positional",
    title="Sinusoidal positional encoding: one value",
    types=("nat",),
    tags=("positional-encoding", "sinusoidal"),
    source="004_83489721195aedaa.txt formula sheet; 001_8ec5306c4a732c7b.txt (PE)",
    told_apart=("concat_layout",),  # an index where the interleaved and concatenated layouts agree tests neither
)
def pe_value(d: Draw) -> Problem:
    """PE(pos, dim) for a small d_model, to three (hard: four) decimal places."""
    from solver.kernels import numpy_ref, sympy_ref

    decimals = 4 if d.level == 2 else 3
    for _ in range(300):
        # Levels (issue 12: disjoint, ordered): easy, d_model 4 or 8 (few frequencies); medium, 16 or 512
        # (exponents 2i/d_model to work out); hard, any d_model, positions up to 60 and four decimals.
        d_model = d.pick(((4, 8), (16, 512), (4, 8, 16, 512))[d.level])
        pos = d.rng.randint(1, 10 if d.level < 2 else 60)
        dim = d.rng.randrange(min(d_model, 8))
        ex, tr = sympy_ref.pe_value(pos, dim, d_model, return_trace=True)
        value = float(sympy_ref.to_floats(ex))
        if not safe_for_rounding(value, decimals, 0.15):
            continue
        key = nat_key(value, decimals)
        i = dim // 2
        angle = pos / 10000 ** (2 * i / d_model)
        other = math.cos(angle) if dim % 2 == 0 else math.sin(angle)
        # issue 22: "your calculator was in degrees" only where it applies: not when the degree-mode value
        # is also the key rounded to fewer decimals (1.000 for a key of 0.9997 is too few digits)
        deg = (math.sin if dim % 2 == 0 else math.cos)(math.radians(angle))
        if any(in_range(round_half_up(value, k), *misconception_range(deg, key)) for k in range(decimals)):
            deg = None
        wrongs = [
            Wrong("concat_layout", "used the concatenated (sines first) layout",
                  "That is the value in the layout with all sines first, then all cosines; the paper interleaves "
                  "them: even dimensions sin, odd dimensions cos.",
                  numpy_ref.pe_value(pos, dim, d_model, layout="concat")),
            Wrong("degrees", "calculator in degree mode", "Your calculator was in degrees; the angle is in radians.",
                  deg),
            Wrong("sin_cos_swapped", "swapped sin and cos", "Even dimensions take the sine, odd dimensions the cosine.", other),
            Wrong("exponent_dim", "used dim/d instead of 2i/d in the exponent",
                  "For dimension 2i+1 the frequency index is still i: the exponent is 2i/d, not (2i+1)/d.",
                  math.cos(pos / 10000 ** (dim / d_model)) if dim % 2 else None),
        ]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2:
            break
    fn = "sin" if dim % 2 == 0 else "cos"
    st = Doc()
    st.p(r"The sinusoidal positional encoding is $PE(pos, 2i) = \sin(pos/10000^{2i/d})$ and "
         r"$PE(pos, 2i+1) = \cos(pos/10000^{2i/d})$, with dimensions numbered from 0 and angles in radians.")
    st.p(f"For $d = d_{{model}} = {d_model}$, compute $PE({pos}, {dim})$. Round off to {decimals} decimal places.")
    sol = Doc()
    sol.p(f"Dimension {dim} is {'even' if dim % 2 == 0 else 'odd'}: $2i{'' if dim % 2 == 0 else '+1'} = {dim}$, so $i = {i}$ and we take the "
          f"{'sine' if fn == 'sin' else 'cosine'}.")
    sol.p(f"Angle $= {pos}/10000^{{{2 * i}/{d_model}}} = {pos}/{num(10000 ** (2 * i / d_model), 4)} = {num(angle, 6)}$ rad.")
    sol.p(f"$PE({pos}, {dim}) = \\{fn}({num(angle, 6)}) = {num(value, 6)} \\approx$ **{answer_text(key)}**.")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"pos": pos, "dim": dim, "d_model": d_model, "trace": tr.names()},
                     hints=["Find i from the dimension (dim = 2i or 2i+1), then the angle pos/10000^(2i/d) in radians."])


@family(
    "positional.pe_rotation",
    topic="positional",
    title="The rotation property of sinusoidal encodings",
    types=("nat",),
    tags=("positional-encoding", "relative-position", "rotation"),
    source="004_83489721195aedaa.txt (PE: relative positions as linear functions)",
)
def pe_rotation(d: Draw) -> Problem:
    """PE(p+k, 2i) from PE(p, 2i), PE(p, 2i+1) and the rotation by ωk, using the four
    rounded values the statement shows (the key is computed from those same numbers)."""
    from solver.kernels import sympy_ref

    decimals = 3
    for _ in range(300):
        # issue 12, disjoint levels: easy ω = 1 (i = 0, d = 4) with cos ωk, sin ωk shown; medium
        # ω = 0.01 (i = 1, d = 4: the pair (2, 3), larger p and k), shown too; hard d = 8, i = 1 or 2
        # (ω = 0.1 or 0.01), and the student computes ω, ωk, cos ωk and sin ωk (two steps more).
        if d.level == 0:
            d_model, i = 4, 0
        elif d.level == 1:
            d_model, i = 4, 1
        else:
            d_model, i = 8, d.pick((1, 2))
        omega = 10000 ** (-2 * i / d_model)
        # issue 22: easy p from 1 to 20 and k from 1 to 9 (1 to 6 and 1 to 4 gave 17 easy problems in 1,000 draws)
        p = d.rng.randint(1, 20) if omega == 1 else d.rng.randint(2, 30) if omega > 0.05 else d.rng.randint(10, 90)
        k = d.rng.randint(1, 9) if omega == 1 else d.rng.randint(2, 20) if omega > 0.05 else d.rng.randint(10, 60)
        a = round_half_up(float(sympy_ref.to_floats(sympy_ref.pe_value(p, 2 * i, d_model))), 4)
        b = round_half_up(float(sympy_ref.to_floats(sympy_ref.pe_value(p, 2 * i + 1, d_model))), 4)
        c = round_half_up(math.cos(omega * k), 4)
        s = round_half_up(math.sin(omega * k), 4)
        value = a * c + b * s
        exact = float(sympy_ref.to_floats(sympy_ref.pe_value(p + k, 2 * i, d_model)))
        if abs(value - exact) > 2e-4 or not safe_for_rounding(value, decimals, 0.2):
            continue
        key = nat_key(value, decimals)
        wrongs = [
            Wrong("rotated_backwards", "rotated the wrong way", "a·cos − b·sin gives PE(p − k): sin(x + y) = sin x cos y + cos x sin y.",
                  a * c - b * s),
            Wrong("additive", "assumed PE(p+k) = PE(p) + PE(k)", "Encodings do not add; they rotate: PE(p+k) is a rotation of PE(p).",
                  a + s),
            Wrong("cos_entry", "computed the cosine entry", "b·cos − a·sin is PE(p+k, 2i+1), the cosine entry; the question asks for the sine entry.",
                  b * c - a * s),
        ]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2:
            break
    st = Doc()
    sol = Doc()
    if d.level < 2:
        st.p(rf"With $d_{{model}} = {d_model}$ and frequency index $i = {i}$ ($\omega = 10000^{{-2i/d}} = {num(omega, 4)}$), the encoding of "
             rf"position $p = {p}$ has $PE(p, {2 * i}) = \sin(\omega p) = {num(a, 4)}$ and $PE(p, {2 * i + 1}) = \cos(\omega p) = {num(b, 4)}$. "
             rf"Also $\cos(\omega k) = {num(c, 4)}$ and $\sin(\omega k) = {num(s, 4)}$ for $k = {k}$.")
        st.p(f"Using only these numbers and the rotation property, compute $PE(p + k, {2 * i}) = PE({p + k}, {2 * i})$. "
             f"Round off to {decimals} decimal places.")
    else:
        st.p(rf"With $d_{{model}} = {d_model}$ and frequency index $i = {i}$ ($\omega = 10000^{{-2i/d}}$), the encoding of "
             rf"position $p = {p}$ has $PE(p, {2 * i}) = \sin(\omega p) = {num(a, 4)}$ and $PE(p, {2 * i + 1}) = \cos(\omega p) = {num(b, 4)}$.")
        st.p(rf"Using these two numbers, $\cos(\omega k)$ and $\sin(\omega k)$ for $k = {k}$ (computed to four decimal places, radians) "
             f"and the rotation property, compute $PE(p + k, {2 * i}) = PE({p + k}, {2 * i})$. Round off to {decimals} decimal places.")
        sol.p(f"$\\omega = 10000^{{-{2 * i}/{d_model}}} = {num(omega, 4)}$, so $\\omega k = {num(omega, 4)} \\times {k} = {num(omega * k, 4)}$ rad.")
        sol.p(f"$\\cos(\\omega k) = \\cos({num(omega * k, 4)}) = {num(c, 4)}$ and $\\sin(\\omega k) = \\sin({num(omega * k, 4)}) = {num(s, 4)}$.")
    sol.p(r"$\sin(\omega(p+k)) = \sin(\omega p)\cos(\omega k) + \cos(\omega p)\sin(\omega k)$: the pair "
          r"$(PE(p,2i), PE(p,2i+1))$ is rotated by the angle $\omega k$, whatever $p$ is.")
    sol.p(f"$PE({p + k}, {2 * i}) = {num(a, 4)} \\times {num(c, 4)} + {num(b, 4)} \\times {num(s, 4)} = {num(a * c, 6)} + {num(b * s, 6)} "
          f"= {num(value, 6)} \\approx$ **{answer_text(key)}**.")
    sol.p(f"Check: $\\sin({num(omega * (p + k), 4)}) = {num(exact, 6)}$.")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"p": p, "k": k, "i": i, "d_model": d_model, "shown": [a, b, c, s]},
                     hints=["sin(x + y) = sin x cos y + cos x sin y."])


@family(
    "positional.rope",
    topic="positional",
    title="RoPE by hand",
    types=("matrix",),
    tags=("rope", "rotary", "positional-encoding"),
    source="003_f22b31e216cc5b5a.txt (RoPE)",
)
def rope(d: Draw) -> Problem:
    """Rotate a small integer vector at position p: pairs (x₂ᵢ, x₂ᵢ₊₁) by p·θᵢ, θᵢ = 10000^(−2i/d)."""
    import numpy as np

    from solver.kernels import numpy_ref, sympy_ref

    # issue 22: hard drew the medium problem in half its draws (interleaved pairs of a 4-vector); now hard is the
    # half-split pairing of a 4-vector, or the interleaved pairs of a 6-vector (three frequencies)
    half = d.level == 2 and d.rng.random() < 0.5
    dim = (2, 4, 4 if half else 6)[d.level]
    pairing = "half" if half else "interleaved"
    for _ in range(300):
        x = [d.pick((1, 2, -1, 3, 0)) for _ in range(dim)]
        if all(v == 0 for v in x[0::2]) or all(v == 0 for v in x[1::2]) or x.count(0) > 1:
            continue
        p = d.rng.randint(1, 6) if dim == 2 else d.rng.randint(1, 60)  # issue 22: easy 1 to 6 (1 to 3: ~40 problems)
        out, tr = sympy_ref.rope([x], [p], pairing=pairing, return_trace=True)
        value = sympy_ref.to_floats(out)
        if not safe_for_rounding(value, 2, ENTRY_MARGIN):
            continue
        key = matrix_key(value, decimals=2)
        xa = np.array([x], dtype=float)
        other = "half" if pairing == "interleaved" else "interleaved"
        wrongs = [
            Wrong("rotated_backwards", "rotated by −pθ", "You rotated clockwise; RoPE maps (a, b) to (a cos − b sin, a sin + b cos).",
                  numpy_ref.rope(xa, [-p], pairing=pairing).tolist()),
            Wrong("wrong_pairing",
                  "paired dimension i with i + d/2" if other == "half" else "paired adjacent dimensions (2i, 2i+1)",
                  "The question pairs " + ("adjacent dimensions (2i, 2i+1)." if pairing == "interleaved" else "dimension i with i + d/2."),
                  numpy_ref.rope(xa, [p], pairing=other).tolist() if dim > 2 else None),
            Wrong("degrees", "calculator in degree mode", "The angles are in radians.",
                  numpy_ref.rope(xa, [math.radians(p)], pairing=pairing).tolist()),
        ]
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2:
            break
    theta = [10000 ** (-2 * i / dim) for i in range(dim // 2)]
    st = Doc()
    pair_md = r"$(x_{2i}, x_{2i+1})$" if pairing == "interleaved" else r"$(x_i, x_{i+d/2})$"
    st.p(rf"Rotary position embedding (RoPE) rotates each pair {pair_md} of a {dim}-dimensional query at position $p$ by the angle "
         r"$p\,\theta_i$, $\theta_i = 10000^{-2i/d}$: $(a, b) \to (a \cos\phi - b \sin\phi,\ a \sin\phi + b \cos\phi)$ (radians).")
    st.p(f"Apply RoPE to $x = {latex_matrix(x)}$ at position $p = {p}$. Give the rotated vector, entries rounded off to two decimal places.")
    sol = Doc()
    sol.p("Frequencies: " + ", ".join(f"$\\theta_{i} = {num(t, 4)}$" for i, t in enumerate(theta)) + "; angles "
          + ", ".join(f"$\\phi_{i} = {p}\\times{num(t, 4)} = {num(p * t, 4)}$" for i, t in enumerate(theta)) + ".")
    lines = []
    for i, t in enumerate(theta):
        ia, ib = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + dim // 2)
        a, b = x[ia], x[ib]
        ph = p * t
        ra, rb = a * math.cos(ph) - b * math.sin(ph), a * math.sin(ph) + b * math.cos(ph)
        lines.append(f"pair $(x_{ia}, x_{ib}) = ({a}, {b})$: $\\cos\\phi_{i} = {num(math.cos(ph), 4)}$, $\\sin\\phi_{i} = {num(math.sin(ph), 4)}$; "
                     f"$({a}\\cdot{num(math.cos(ph), 4)} - ({b})\\cdot{num(math.sin(ph), 4)},\\ {a}\\cdot{num(math.sin(ph), 4)} + ({b})\\cdot{num(math.cos(ph), 4)}) "
                     f"= ({num(ra, 4)}, {num(rb, 4)})$")
    sol.bullets(lines)
    sol.matrix("x'", value, 4)
    sol.p(f"Rounded: $x' \\approx {latex_matrix(value, 2)}$; the length is unchanged ($\\lVert x\\rVert^2 = {sum(v * v for v in x)}$).")
    return d.problem(type="matrix", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"x": x, "p": p, "pairing": pairing, "trace": tr.names()},
                     hints=["Each pair is rotated by its own angle p·θᵢ; θ₀ = 1."])
