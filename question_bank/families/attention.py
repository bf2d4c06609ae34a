"""Attention by hand: the four-part computation, one attention weight, and masked softmax.

Keys come from ``solver.kernels.sympy_ref`` (exact, then evaluated), the worked solutions from its
step trace, and every misconception from ``solver.kernels.numpy_ref`` with the mistake applied:

- ``kq_transposed``: computed K·Qᵀ (the transpose of the scores);
- ``no_scaling``: forgot the 1/√dₖ;  ``divided_by_dk``: divided by dₖ instead of √dₖ;
- ``softmax_wrong_axis``: normalised each column (over the queries) instead of each row;
- ``mask_zero``: wrote 0 instead of −∞ into the blocked entries before the softmax;
- ``mask_after_softmax``: zeroed the blocked weights after the softmax without renormalising;
- ``mask_wrong_direction``: blocked the past instead of the future (kept j ≥ i);
- ``forgot_softmax``: multiplied the scaled scores by V.
"""

from __future__ import annotations

import math
from typing import Any

from question_bank.family import Draw, Wrong, family, keep_distinct, safe_call
from question_bank.grading import (
    ENTRY_MARGIN,
    answer_text,
    matrix_key,
    nat_key,
    round_half_up,
    safe_for_rounding,
    values_coincide,
)
from question_bank.problem import Part, Problem
from question_bank.render import Doc, latex_matrix, num, text_equation

LABELS = "abcdefgh"

def rows(a: Any) -> tuple[tuple[float, ...], ...]:
    """A NumPy/SymPy 2-D value as a tuple of tuples of floats."""
    if hasattr(a, "tolist"):
        a = a.tolist()
    return tuple(tuple(float(x) for x in r) for r in a)


def _draw_matrix(d: Draw, n: int, m: int, values: tuple[int, ...]) -> list[list[int]]:
    while True:
        a = [[d.pick(values) for _ in range(m)] for _ in range(n)]
        if all(any(x != 0 for x in r) for r in a):
            return a


def _draw_inputs(d: Draw) -> dict[str, Any]:
    """Q, K, V, d_k and the mask kind for the by-hand families."""
    level = d.level
    n = 2 if level == 0 else 3
    d_k = d.pick((4,) if level == 0 else (2, 4))
    vals = (0, 1, 1, 2, -1) if level else (0, 1, 1, 2)
    q = _draw_matrix(d, n, d_k, vals)
    k = _draw_matrix(d, n, d_k, vals)
    v = _draw_matrix(d, n, 2, (0, 1, 2, -1) if level == 2 else (0, 1, 2))
    mask = None
    if level == 2:
        mask = d.pick(("causal", "padding"))
    return {"q": q, "k": k, "v": v, "d_k": d_k, "n": n, "mask": mask}


def _keep(inp: dict[str, Any]):
    import numpy as np

    n = inp["n"]
    if inp["mask"] == "causal":
        return np.tril(np.ones((n, n), dtype=bool))
    if inp["mask"] == "padding":
        keep = np.ones((n, n), dtype=bool)
        keep[:, n - 1] = False
        return keep
    return np.ones((n, n), dtype=bool)


def _softmax_rows(x, axis: int = -1):
    from solver.kernels import numpy_ref

    return numpy_ref.softmax(x, axis=axis)


def _exact_attention(inp: dict[str, Any], scale: Any):
    """(exact trace evaluated to floats, as a dict name -> rows) via solver.kernels.sympy_ref."""
    import sympy as sp

    from solver.kernels import sympy_ref

    kw: dict[str, Any] = {"return_trace": True}
    if scale is not None:
        kw["scale"] = scale
    if inp["mask"] == "causal":
        kw["causal"] = True
    elif inp["mask"] == "padding":
        kw["mask"] = [[1] * (inp["n"] - 1) + [0]]
    v = [[sp.Integer(x) for x in r] for r in inp["v"]]
    (_out, _w), tr = sympy_ref.attention(inp["q"], inp["k"], v, **kw)
    return {s.name: sympy_ref.to_floats(s.value) for s in tr}, tr


def _mask_sentence(inp: dict[str, Any]) -> tuple[str, str]:
    if inp["mask"] == "causal":
        return (
            r"Use a **causal mask**: token $i$ may attend only to tokens $j \le i$ (blocked scores are set to $-\infty$ before the softmax).",
            "causal",
        )
    if inp["mask"] == "padding":
        n = inp["n"]
        return (
            rf"Token {n} is **padding**: the key mask is $m = [{', '.join(['1'] * (n - 1) + ['0'])}]$ (1 = may attend); "
            r"blocked scores are set to $-\infty$ before the softmax.",
            "padding",
        )
    return "", ""


def _dot_lines(q: list[list[int]], k: list[list[int]], first: int = 0) -> list[str]:
    out = []
    for i, qi in enumerate(q, start=first):
        terms = []
        for j, kj in enumerate(k):
            expansion = " + ".join(f"({a})({b})" if a < 0 or b < 0 else f"{a}\\cdot{b}" for a, b in zip(qi, kj, strict=True))
            terms.append(f"$q_{i + 1}\\cdot k_{j + 1} = {expansion} = {sum(a * b for a, b in zip(qi, kj, strict=True))}$")
        out.append(f"row {i + 1}: " + ", ".join(terms))
    return out


def _r3(x: float) -> float:
    """A value as the worked solution shows it (3 decimal places, half up), and computes on with."""
    return round_half_up(x, 3)


def _softmax_rows_shown(x: list[list[float]], keep, first: int = 0) -> tuple[list[str], list[list[float]]]:
    """The softmax lines of a worked solution and the weights as they show them. Each line
    computes from the values it shows: e^x to 3 places, their sum from those, each weight the
    shown e^x over the shown sum (so a student who checks a line gets the line's figure)."""
    out, rows = [], []
    for i, row in enumerate(x, start=first):
        finite = [(j, v) for j, v in enumerate(row) if keep[i - first][j]]
        mx = max(v for _, v in finite)
        exps = {j: _r3(math.exp(v - mx)) for j, v in finite}
        total = _r3(sum(exps.values()))
        weights = [_r3(exps[j] / total) if j in exps else 0.0 for j in range(len(row))]
        e_shown = ", ".join(num(exps[j], 3) if j in exps else "0" for j in range(len(row)))
        w_shown = ", ".join(num(weights[j], 3) if j in exps else "0" for j in range(len(row)))
        shift = f" (after subtracting the row maximum {num(mx, 3)})" if abs(mx) > 1e-12 else ""
        out.append(
            f"row {i + 1}: $e^{{x}}$ = [{e_shown}]{shift}, sum = {num(total, 3)}, weights = [{w_shown}]"
        )
        rows.append(weights)
    return out, rows


def _softmax_lines(x: list[list[float]], keep, first: int = 0) -> list[str]:
    return _softmax_rows_shown(x, keep, first)[0]


def _out_rows_shown(w: list[list[float]], v: list[list[int]],
                    exact: Any = None) -> tuple[list[str], list[list[float]]]:
    """The lines of O = AV with the weights shown to 3 places, and the rows they give: computed
    from the ``exact`` weights when given (issue 21: a worked solution shows rounded values and
    computes from exact ones), else from the weights as shown."""
    out, rows = [], []
    src = w if exact is None else [[float(a) for a in r] for r in exact]
    for i, (wi, ei) in enumerate(zip(w, src, strict=True)):
        terms = " + ".join(f"{num(a, 3)}\\times[{', '.join(str(x) for x in vj)}]" for a, vj in zip(wi, v, strict=True))
        res = [_r3(sum((a if exact is not None else _r3(a)) * vj[c] for a, vj in zip(ei, v, strict=True)))
               for c in range(len(v[0]))]
        out.append(f"row {i + 1}: ${terms} = [{', '.join(num(x, 3) for x in res)}]$")
        rows.append(res)
    return out, rows


@family(
    "attention.by_hand",
    topic="attention",
    title="Attention by hand, step by step",
    types=("matrix",),
    tags=("attention", "by-hand", "softmax", "mask", "multi-part"),
    marks=2,
    source="004_83489721195aedaa.txt §12 Worked Example 1",
    # dₖ = 1 made the scaling a step with nothing to do; a symmetric Q·Kᵀ (5 of 40 easy draws) made K·Qᵀ right
    told_apart=("no_scaling", "divided_by_dk", "kq_transposed"),
)
def attention_by_hand(d: Draw) -> Problem:
    """Scaled dot-product attention of small integer Q, K, V in four parts (QKᵀ, scaled,
    weights, output), with a causal or padding mask at the hard level, follow-through marked."""
    import numpy as np

    while True:
        inp = _draw_inputs(d)
        scaled_variant = not (d.level >= 1 and d.rng.random() < 0.2)
        d_k = inp["d_k"]
        scale = None if scaled_variant else 1
        keep = _keep(inp)
        q, k, v = (np.array(inp[x], dtype=float) for x in ("q", "k", "v"))
        c = 1 / math.sqrt(d_k) if scaled_variant else 1.0
        scores = q @ k.T
        blocked = np.where(keep, 0.0, -np.inf)
        # humane numbers: no keyed entry (scaled scores, weights, output) near a rounding boundary
        w_np = _softmax_rows(scores * c + blocked)
        if not all(safe_for_rounding(m, 2, ENTRY_MARGIN) for m in (scores * c, w_np, w_np @ v)):
            continue
        vals, trace = _exact_attention(inp, scale)
        # a row must keep a spread of weights for the misconceptions to be distinguishable
        if np.allclose(vals["weights"], np.array(vals["weights"])[:, :1]) and inp["mask"] is None:
            continue
        break

    def weights_of(s: Any) -> Any:
        return _softmax_rows(np.asarray(s, dtype=float) + blocked)

    # ---- keys (exact)
    k_scores = matrix_key(vals["scores"], decimals=None, abs_tol=1e-6)
    int_scaled = all(float(x).is_integer() for r in vals["scaled"] for x in r)
    k_scaled = matrix_key(vals["scaled"], decimals=None if int_scaled else 2, abs_tol=1e-6 if int_scaled else None)
    k_weights = matrix_key(vals["weights"], decimals=2)
    k_output = matrix_key(vals["output"], decimals=2)

    # ---- misconceptions, computed with the mistake applied
    w_scores = [Wrong("kq_transposed", "computed K·Qᵀ", "This is K·Qᵀ, the transpose of Q·Kᵀ: row i must hold query i's scores.",
                      rows(k @ q.T))]
    w_scaled = []
    if scaled_variant:
        w_scaled = [
            Wrong("no_scaling", "forgot to divide by √dₖ", "This is QKᵀ without dividing by √dₖ.", rows(scores)),
            Wrong("divided_by_dk", "divided by dₖ instead of √dₖ", f"You divided by dₖ = {d_k}; the scale is 1/√dₖ = 1/{num(math.sqrt(d_k), 3)}.",
                  rows(scores / d_k)),
        ]
    else:
        w_scaled = [Wrong("scaled_anyway", "divided by √dₖ though the question says unscaled",
                          "This divides by √dₖ; the question asks for unscaled dot-product attention.", rows(scores / math.sqrt(d_k)))]
    scaled = scores * c
    weight_mistakes: list[tuple[str, str, str, Any]] = []
    if scaled_variant:
        weight_mistakes += [
            ("no_scaling", "forgot to divide by √dₖ", "These are the weights without dividing the scores by √dₖ.", safe_call(lambda: weights_of(scores))),
            ("divided_by_dk", "divided by dₖ instead of √dₖ", f"These are the weights after dividing by dₖ = {d_k} instead of √dₖ.",
             safe_call(lambda: weights_of(scores / d_k))),
        ]
    else:
        weight_mistakes.append(("scaled_anyway", "divided by √dₖ though the question says unscaled",
                                "These weights divide the scores by √dₖ; the question says unscaled.",
                                safe_call(lambda: weights_of(scores / math.sqrt(d_k)))))
    weight_mistakes.append((
        "softmax_wrong_axis", "softmax over the wrong axis",
        "Each column of your matrix sums to 1: the softmax runs over the keys, so each row must sum to 1.",
        safe_call(lambda: _softmax_rows(scaled + blocked, axis=0)),
    ))
    if inp["mask"] is not None:
        weight_mistakes += [
            ("mask_zero", "masked with 0 instead of −∞", "This is what you get by setting blocked scores to 0 instead of −∞: e⁰ = 1 still gives them weight.",
             safe_call(lambda: _softmax_rows(np.where(keep, scaled, 0.0)))),
            ("mask_after_softmax", "masked after the softmax without renormalising",
             "You zeroed the blocked weights after the softmax, so the rows no longer sum to 1; mask before the softmax.",
             safe_call(lambda: _softmax_rows(scaled) * keep)),
        ]
        if inp["mask"] == "causal":
            weight_mistakes.append((
                "mask_wrong_direction", "blocked the past instead of the future",
                "You blocked the earlier tokens; a causal mask blocks the later ones (j > i).",
                safe_call(lambda: _softmax_rows(scaled + np.where(keep.T, 0.0, -np.inf))),
            ))
    w_weights = [Wrong(i, lab, fb, rows(val) if val is not None else None) for i, lab, fb, val in weight_mistakes]
    w_output = [
        Wrong(i, lab, fb.replace("These are the weights", "This is the output").replace("These weights", "This output"),
              rows(np.asarray(val) @ v) if val is not None else None)
        for i, lab, fb, val in weight_mistakes
    ]
    w_output.append(Wrong("forgot_softmax", "multiplied the scores by V without the softmax",
                          "This is the scaled scores times V: the softmax turns the scores into weights first.",
                          safe_call(lambda: rows(np.where(keep, scaled, 0.0) @ v))))

    # ---- parts with follow-through
    def follow_scaled(e: dict[str, Any]):
        return matrix_key(np.asarray(e["a"], dtype=float) * c, decimals=k_scaled.decimals, abs_tol=k_scaled.abs_tol)

    lab_scores, lab_scaled = "a", "b"
    lab_w = "c" if scaled_variant else "b"
    lab_o = "d" if scaled_variant else "c"
    src_w = lab_scaled if scaled_variant else lab_scores

    def follow_weights(e: dict[str, Any]):
        return matrix_key(weights_of(np.asarray(e[src_w], dtype=float)), decimals=2)

    def follow_output(e: dict[str, Any]):
        return matrix_key(np.asarray(e[lab_w], dtype=float) @ v, decimals=2)

    parts = [Part(lab_scores, "matrix", r"the score matrix $S = QK^\top$", "the score matrix S = QKᵀ", k_scores,
                  keep_distinct(k_scores, w_scores))]
    if scaled_variant:
        parts.append(Part(lab_scaled, "matrix", r"the scaled scores $S/\sqrt{d_k}$ (two decimal places)",
                          "the scaled scores S/√dₖ (two decimal places)", k_scaled, keep_distinct(k_scaled, w_scaled), follow_scaled))
    parts.append(Part(lab_w, "matrix", "the attention weights $A$ (two decimal places)", "the attention weights A (two decimal places)",
                      k_weights, keep_distinct(k_weights, w_weights), follow_weights))
    parts.append(Part(lab_o, "matrix", "the output $AV$ (two decimal places)", "the output AV (two decimal places)",
                      k_output, keep_distinct(k_output, w_output), follow_output))

    # ---- statement
    st = Doc()
    mask_md, _ = _mask_sentence(inp)
    formula = r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V" if scaled_variant else r"\mathrm{softmax}(QK^\top + M)\,V"
    if inp["mask"] is None:
        formula = formula.replace(" + M", "")
    kind = "scaled dot-product attention" if scaled_variant else "**unscaled** dot-product attention (no division by $\\sqrt{d_k}$)"
    st.p(f"Compute {kind} $\\mathrm{{Attention}}(Q,K,V) = {formula}$ for {inp['n']} tokens with $d_k = {d_k}$:")
    st.eq(rf"Q = {latex_matrix(inp['q'])},\quad K = {latex_matrix(inp['k'])},\quad V = {latex_matrix(inp['v'])}",
          text_equation("Q", inp["q"], "  K =", inp["k"], "  V =", inp["v"]))
    if mask_md:
        st.p(mask_md)
    st.p("Give " + "; ".join(f"({p.label}) {p.prompt_md}" for p in parts) + ". Row $i$ belongs to token $i$.")

    # ---- worked solution from the exact trace
    sol = Doc()
    sol.p(f"**({lab_scores}) Scores.** $S = QK^\\top$: entry $(i, j)$ is the dot product of query $i$ with key $j$.")
    sol.bullets(_dot_lines(inp["q"], inp["k"]))
    sol.matrix(r"S = QK^\top", vals["scores"])
    if scaled_variant:
        sol.p(f"**({lab_scaled}) Scaling.** Divide every score by $\\sqrt{{d_k}} = \\sqrt{{{d_k}}} = {num(math.sqrt(d_k), 3)}$.")
        sol.matrix(r"S/\sqrt{d_k}", vals["scaled"], None if int_scaled else 3)
    x = vals["masked"] if "masked" in vals else vals["scaled"]
    if "masked" in vals:
        sol.p("**Mask.** Add $0$ where attending is allowed and $-\\infty$ where it is blocked:")
        sol.matrix(r"S'", vals["masked"], None if int_scaled else 3)
    sol.p(f"**({lab_w}) Softmax, row by row** (each row sums to 1; $e^{{-\\infty}} = 0$):")
    w_lines, w_shown = _softmax_rows_shown(x, keep.tolist())
    sol.bullets(w_lines)
    sol.matrix("A", w_shown, 3)
    sol.p(f"**({lab_o}) Output** $O = AV$: row $i$ is the weighted average of the value rows (the weights are "
          "shown to 3 places; each result is computed from the exact weights, then rounded).")
    o_lines, o_shown = _out_rows_shown(w_shown, inp["v"], vals["weights"])
    sol.bullets(o_lines)
    sol.matrix("O = AV", o_shown, 3)
    sol.p("**Answers (two decimal places).** " + "; ".join(
        f"({p.label}) {answer_text(p.key)}" for p in parts))
    given = {"q": inp["q"], "k": inp["k"], "v": inp["v"], "d_k": d_k, "mask": inp["mask"], "scaled": scaled_variant,
             "trace": [s.name for s in trace]}
    return d.problem(
        type="matrix", statement=st, key=k_output, solution=sol, given=given, marks=2,
        misconceptions=parts[-1].misconceptions, parts=parts,
        hints=[r"Row $i$ of $QK^\top$ holds query $i$'s dot products with every key.",
               "Softmax runs along each row (over the keys); blocked entries get −∞ first."],
    )


@family(
    "attention.one_weight",
    topic="attention",
    title="One attention weight",
    types=("nat",),
    tags=("attention", "softmax", "nat"),
    source="004_83489721195aedaa.txt §12 Worked Example 1",
    told_apart=("no_scaling", "divided_by_dk", "mask_zero"),  # two equal scores made every scaling give 0.5
)
def attention_one_weight(d: Draw) -> Problem:
    """A single attention weight α_ij = softmax_j(q_i·k_j/√dₖ), rounded to two (hard: three)
    decimal places."""
    import numpy as np


    decimals = 3 if d.level == 2 else 2
    for _ in range(200):
        inp = _draw_inputs(d)
        n = inp["n"]
        i = d.rng.randrange(n)
        keep = _keep(inp)
        allowed = [j for j in range(n) if keep[i][j]]
        if len(allowed) < 2:
            continue
        j = d.pick(allowed)
        vals, trace = _exact_attention(inp, None)
        value = vals["weights"][i][j]
        key = nat_key(value, decimals)
        if not safe_for_rounding(value, decimals, 0.15):
            continue
        q, k = np.array(inp["q"], dtype=float), np.array(inp["k"], dtype=float)
        scores = q @ k.T
        scaled = scores / math.sqrt(inp["d_k"])
        blocked = np.where(keep, 0.0, -np.inf)
        wrongs = [
            Wrong("no_scaling", "forgot to divide by √dₖ", "This is the weight without dividing the scores by √dₖ.",
                  safe_call(lambda s=scores, b=blocked, i=i, j=j: _softmax_rows(s + b)[i][j])),
            Wrong("divided_by_dk", "divided by dₖ instead of √dₖ", "This is the weight after dividing by dₖ instead of √dₖ.",
                  safe_call(lambda s=scores, b=blocked, i=i, j=j, dk=inp["d_k"]: _softmax_rows(s / dk + b)[i][j])),
            Wrong("softmax_wrong_axis", "softmax over the wrong axis",
                  "This normalises over the queries (a column); α_ij normalises over the keys (row i).",
                  safe_call(lambda s=scaled, b=blocked, i=i, j=j: _softmax_rows(s + b, axis=0)[i][j])),
        ]
        if inp["mask"] is not None:
            wrongs.append(Wrong("mask_zero", "masked with 0 instead of −∞", "This sets blocked scores to 0 instead of −∞.",
                                safe_call(lambda s=scaled, kp=keep, i=i, j=j: _softmax_rows(np.where(kp, s, 0.0))[i][j])))
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2 and all(not values_coincide(m.value, value, key) for m in mis):
            break
    mask_md, _ = _mask_sentence(inp)
    st = Doc()
    st.p(f"In scaled dot-product attention with $d_k = {inp['d_k']}$, the queries and keys of {n} tokens are (row $t$ = token $t$):")
    st.eq(rf"Q = {latex_matrix(inp['q'])},\quad K = {latex_matrix(inp['k'])}", text_equation("Q", inp["q"], "  K =", inp["k"]))
    if mask_md:
        st.p(mask_md)
    st.p(f"What is the attention weight $\\alpha_{{{i + 1}{j + 1}}}$ that token {i + 1} gives to token {j + 1}? "
         f"Round off to {decimals} decimal places.")
    row_s = [int(x) for x in scores[i]]
    sol = Doc()
    sol.p(f"Only row {i + 1} matters: $\\alpha_{{{i + 1}j}} = \\mathrm{{softmax}}_j(q_{i + 1}\\cdot k_j/\\sqrt{{d_k}})$.")
    sol.bullets(_dot_lines([inp["q"][i]], inp["k"], first=i))
    sol.p(f"Scores of row {i + 1}: [{', '.join(str(s) for s in row_s)}]; divided by $\\sqrt{{{inp['d_k']}}} = {num(math.sqrt(inp['d_k']), 4)}$: "
          f"[{', '.join(num(s, 4) for s in scaled[i])}]" + (" (blocked entries become −∞)." if inp["mask"] else "."))
    xs = (vals["masked"] if "masked" in vals else vals["scaled"])
    sol.bullets(_softmax_lines([xs[i]], [keep[i].tolist()], first=i))
    sol.p(f"So $\\alpha_{{{i + 1}{j + 1}}} = {num(value, 6)} \\approx$ **{answer_text(key)}**.")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"q": inp["q"], "k": inp["k"], "d_k": inp["d_k"], "mask": inp["mask"], "i": i, "j": j,
                            "trace": [s.name for s in trace],
                            # an attention weight lies in [0, 1]: the MCQ view offers no option outside it (a slip such
                            # as a missed scale or a sign can give 1.03, which no softmax weight can be)
                            "key_range": (0.0, 1.0)},
                     hints=["Compute only row i of QKᵀ, scale it, and take its softmax."])


@family(
    "attention.masked_weights",
    topic="attention",
    title="Masked softmax: causal and padding masks",
    types=("matrix",),
    tags=("attention", "mask", "attention-mask", "masking", "causal", "padding", "softmax"),
    source="004_83489721195aedaa.txt, 000_77b679b0197eab2d.txt (masking)",
)
def masked_weights(d: Draw) -> Problem:
    """Attention weights from given scaled scores under a causal or padding mask."""
    import numpy as np

    from solver.kernels import sympy_ref

    n = 3 if d.level < 2 else 4
    kind = d.pick(("causal", "padding")) if d.level else "causal"
    while True:
        s = [[d.pick((0, 1, 2, -1, 1)) for _ in range(n)] for _ in range(n)]
        if kind == "causal":
            keep = np.tril(np.ones((n, n), dtype=bool))
        else:
            length = n - 1
            keep = np.ones((n, n), dtype=bool)
            keep[:, length:] = False
        if any(len({s[i][j] for j in range(n) if keep[i][j]}) < 2 for i in range(1, n)):
            continue
        x = np.array(s, dtype=float)
        if not safe_for_rounding(_softmax_rows(x + np.where(keep, 0.0, -np.inf)), 2, ENTRY_MARGIN):
            continue
        out, trace = sympy_ref.softmax(
            sympy_ref.matrix([[v if keep[i][j] else float("-inf") for j, v in enumerate(r)] for i, r in enumerate(s)]),
            return_trace=True,
        )
        value = sympy_ref.to_floats(out)
        key = matrix_key(value, decimals=2)
        wrongs = [
            Wrong("mask_zero", "masked with 0 instead of −∞",
                  "This sets blocked scores to 0 instead of −∞ before the softmax: e⁰ = 1 still gives them weight.",
                  rows(_softmax_rows(np.where(keep, x, 0.0)))),
            Wrong("mask_after_softmax", "masked after the softmax without renormalising",
                  "You zeroed the blocked weights after the softmax, so the rows no longer sum to 1.",
                  rows(_softmax_rows(x) * keep)),
            Wrong("no_mask", "ignored the mask", "This is the softmax without the mask.", rows(_softmax_rows(x))),
        ]
        if kind == "causal":
            wrongs.append(Wrong("mask_wrong_direction", "blocked the past instead of the future",
                                "You blocked the earlier tokens; a causal mask blocks the later ones (j > i).",
                                rows(_softmax_rows(x + np.where(keep.T, 0.0, -np.inf)))))
        else:
            query_blocked = _softmax_rows(x)
            query_blocked[length:, :] = 0.0
            wrongs.append(Wrong("mask_query_not_key", "masked the padding token's row instead of its column",
                                "You blocked the padding token as a query (its row); a padding mask blocks it as a key "
                                "(its column), so no token attends to it.", rows(query_blocked)))
        mis = keep_distinct(key, wrongs)
        if len(mis) >= 2:
            break
    st = Doc()
    st.p(f"The scaled attention scores $S' = QK^\\top/\\sqrt{{d_k}}$ of {n} tokens are")
    st.matrix("S'", s)
    if kind == "causal":
        st.p(r"Apply a **causal mask** (token $i$ attends only to $j \le i$) and the row-wise softmax. "
             "Give the attention weight matrix, entries rounded off to two decimal places.")
    else:
        st.p(f"Token {n} is padding: the key mask is $m = [{', '.join(['1'] * (n - 1) + ['0'])}]$ (1 = may attend). "
             "Apply it and the row-wise softmax; give the attention weight matrix, entries rounded off to two decimal places.")
    masked = [[(v if keep[i][j] else float("-inf")) for j, v in enumerate(r)] for i, r in enumerate(s)]
    sol = Doc()
    sol.p(r"Blocked entries become $-\infty$ (so $e^{-\infty} = 0$); the others are unchanged:")
    sol.matrix("S''", masked)
    sol.p("Softmax of each row (subtract the row maximum, exponentiate, divide by the sum):")
    sol.bullets(_softmax_lines(masked, keep.tolist()))
    sol.matrix("A", value, 3)
    sol.p(f"Rounded: $A \\approx {latex_matrix(value, 2)}$. Every row sums to 1 and blocked entries are exactly 0.")
    return d.problem(type="matrix", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"scores": s, "mask": kind, "trace": [t.name for t in trace]},
                     hints=["Replace blocked scores by −∞ before the softmax, not 0."])
