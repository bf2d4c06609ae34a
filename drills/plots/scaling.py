"""IsoFLOP curves: the fitted loss L(N, D = C/(6N)) over N at fixed compute C, the optimum marked,
the 20:1 rule beside it.

Every loss is :func:`solver.systems.serving.chinchilla_loss` (Hoffmann et al. 2022, approach 3); the
optima are :func:`solver.systems.serving.compute_optimal` results (fitted, and ``rule-20``), the figures
``qkv solve compute-optimal`` prints.
"""

from __future__ import annotations

import math
from typing import Any

from drills.plots import COLOURS, Canvas, count, fit

POINTS = 61  # samples of each curve, evenly spaced in log N over two decades either side of the optimum


def data(budgets: list[tuple[float, Any, Any]], loss) -> dict[str, Any]:
    """``budgets``: (C, fitted Result, rule-20 Result); ``loss``: L(N, D) (solver.systems.serving.chinchilla_loss)."""
    curves = []
    for C, fitted, rule in budgets:
        n_opt = float(fitted.breakdown["params"])
        ns = [n_opt * 10 ** (-2 + 4 * i / (POINTS - 1)) for i in range(POINTS)]
        curves.append({
            "compute": float(C), "N": ns, "L": [loss(n, C / (6 * n)) for n in ns],
            "optimum": {"N": n_opt, "D": float(fitted.breakdown["tokens"]), "L": float(fitted.breakdown["loss"])},
            "rule20": {"N": float(rule.breakdown["params"]), "D": float(rule.breakdown["tokens"]),
                       "L": float(rule.breakdown["loss"])}})
    return {"curves": curves}


def figure(d: dict[str, Any], plt):
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    ax.set_xscale("log")
    for i, c in enumerate(d["curves"]):
        colour = COLOURS[i % len(COLOURS)]
        ax.plot(c["N"], c["L"], color=colour, lw=1.8, label=f"C = {c['compute']:.3g} FLOP")
        o, r = c["optimum"], c["rule20"]
        ax.plot([o["N"]], [o["L"]], "o", color=colour, ms=7)
        ax.annotate(f"optimum N = {count(o['N'])}, D = {count(o['D'])}, L = {o['L']:.4f}", (o["N"], o["L"]),
                    textcoords="offset points", xytext=(0, -14), ha="center", fontsize=7.5, color=colour)
        ax.plot([r["N"]], [r["L"]], "D", color=colour, ms=6, mfc="white", mew=1.5)
        ax.annotate(f"20:1 rule N = {count(r['N'])}, L = {r['L']:.4f}", (r["N"], r["L"]), textcoords="offset points",
                    xytext=(8, 6), fontsize=7.5, color=colour)
    lows = [c["optimum"]["L"] for c in d["curves"]]
    ax.set_ylim(min(lows) - 0.08, max(lows) + 0.6)
    ax.set_xlabel("parameters N (tokens D = C / 6N)")
    ax.set_ylabel("fitted loss L(N, D) (nats/token)")
    ax.set_title("IsoFLOP curves, Chinchilla fit (Hoffmann et al. 2022): ● fitted optimum, ◇ 20 tokens/param")
    ax.legend(loc="upper right")
    return fig


def sketch(d: dict[str, Any], width: int = 80) -> str:
    curves = d["curves"]
    x0 = min(c["N"][0] for c in curves)
    x1 = max(c["N"][-1] for c in curves)
    lows = [c["optimum"]["L"] for c in curves]
    y0, y1 = min(lows) - 0.05, max(lows) + 0.6
    cv = Canvas(width - 9, 14, (x0, x1), (y0, y1), log_x=True, log_y=False)
    for i, c in enumerate(curves):
        ch = "-=~:"[i % 4]
        pts = list(zip(c["N"], c["L"], strict=True))

        def at(n, pts=pts):
            for (na, la), (nb, lb) in zip(pts, pts[1:], strict=False):
                if na <= n <= nb:
                    t = (math.log10(n) - math.log10(na)) / (math.log10(nb) - math.log10(na))
                    return la + t * (lb - la)
            return None

        cv.curve(at, ch)
    for c in curves:
        cv.put(c["rule20"]["N"], c["rule20"]["L"], "R")
        cv.put(c["optimum"]["N"], c["optimum"]["L"], "O")
    out = ["IsoFLOP curves: fitted loss L against parameters N (log) at fixed compute C"]
    out += cv.lines((f"{y1:.2f}", f"{y0:.2f}"), (f"N={count(x0)}", f"N={count(x1)}"), margin=9)
    for i, c in enumerate(curves):
        o, r = c["optimum"], c["rule20"]
        out.append(f"  {'-=~:'[i % 4]} C={c['compute']:.3g}: O optimum N={count(o['N'])} L={o['L']:.4f}; "
                   f"R 20:1 N={count(r['N'])} L={r['L']:.4f}")
    return fit(out, width)
