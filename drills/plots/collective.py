"""Collective time against message size, ring and tree, with the latency- and bandwidth-bound regions.

Every time is a :func:`solver.systems.collectives.collective` result (the α-β model ``qkv solve
collective`` prints), at sizes spread over the decades around the asked size. A point is
latency-bound where its latency term (steps·α) is larger than its bandwidth term, bandwidth-bound
otherwise; the boundary of each algorithm is the size where the two terms are equal.
"""

from __future__ import annotations

import math
from typing import Any

from drills.plots import COLOURS, Canvas, fit, si


def data(op: str, ranks: int, asked: float, series: dict[str, list[Any]], marked: dict[str, Any]) -> dict[str, Any]:
    """``series``: algorithm → collective Results over sizes; ``marked``: algorithm → the asked size's Result."""
    out = {"op": op, "ranks": ranks, "asked": float(asked), "series": {}, "marked": {}, "crossover": {}}
    for alg, results in series.items():
        pts = [{"size": float(r.breakdown["size_bytes"]), "time": float(r.breakdown["time_s"]),
                "latency": float(r.breakdown["latency_time_s"]), "bandwidth": float(r.breakdown["bandwidth_time_s"])}
               for r in results]
        out["series"][alg] = pts
        # the size where steps·α equals the bandwidth term (which is linear in S): from any one point
        p = pts[-1]
        out["crossover"][alg] = p["size"] * p["latency"] / p["bandwidth"] if p["bandwidth"] > 0 else None
    for alg, r in marked.items():
        out["marked"][alg] = {"size": float(r.breakdown["size_bytes"]), "time": float(r.breakdown["time_s"]),
                              "busbw": float(r.breakdown["busbw"])}
    return out


def figure(d: dict[str, Any], plt):
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for i, (alg, pts) in enumerate(d["series"].items()):
        colour = COLOURS[i]
        ax.plot([p["size"] for p in pts], [p["time"] for p in pts], color=colour, lw=2, label=f"{alg}")
        x = d["crossover"][alg]
        if x:
            ax.axvline(x, color=colour, ls=":", lw=1.2)
            ax.annotate(f"{alg}: latency = bandwidth term at {si(x, 'B')}", (x, 0.02), xycoords=("data", "axes fraction"),
                        rotation=90, fontsize=7.5, color=colour, xytext=(-10, 0), textcoords="offset points",
                        va="bottom")
        m = d["marked"].get(alg)
        if m:
            ax.plot([m["size"]], [m["time"]], "o", color=colour, ms=7)
            ax.annotate(f"{alg} at {si(m['size'], 'B')}: {si(m['time'], 's')}, busbw {si(m['busbw'], 'B/s')}",
                        (m["size"], m["time"]), textcoords="offset points", xytext=(8, -12 - 12 * i), fontsize=7.5)
    xs = [p["size"] for pts in d["series"].values() for p in pts]
    lo, hi = min(xs), max(xs)
    xs_c = [x for x in d["crossover"].values() if x]
    if xs_c:
        ax.axvspan(lo, min(xs_c), color="#E69F00", alpha=0.08)
        ax.axvspan(max(xs_c), hi, color="#0072B2", alpha=0.06)
        ax.text(lo * 1.3, 0.95, "latency-bound", transform=ax.get_xaxis_transform(), fontsize=8, va="top")
        ax.text(hi / 1.3, 0.95, "bandwidth-bound", transform=ax.get_xaxis_transform(), fontsize=8, va="top",
                ha="right")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("message size S (bytes, as nccl-tests reports it)")
    ax.set_ylabel("time (s), α-β model")
    ax.set_title(f"{d['op']} on {d['ranks']} ranks: ring against binomial tree")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.88))
    return fig


def sketch(d: dict[str, Any], width: int = 80) -> str:
    xs = [p["size"] for pts in d["series"].values() for p in pts]
    ts = [p["time"] for pts in d["series"].values() for p in pts]
    cv = Canvas(width - 10, 14, (min(xs), max(xs)), (min(ts), max(ts)))
    chars = {"ring": "=", "tree": "-"}
    for alg, pts in d["series"].items():
        def at(x, pts=pts):
            for a, b in zip(pts, pts[1:], strict=False):
                if a["size"] <= x <= b["size"]:
                    t = (math.log10(x) - math.log10(a["size"])) / (math.log10(b["size"]) - math.log10(a["size"]))
                    return 10 ** (math.log10(a["time"]) + t * (math.log10(b["time"]) - math.log10(a["time"])))
            return None

        cv.curve(at, chars.get(alg, "*"))
    for alg, m in d["marked"].items():
        cv.put(m["size"], m["time"], "R" if alg == "ring" else "T")
    out = [f"{d['op']} on {d['ranks']} ranks: time (log) against message size (log)"]
    out += cv.lines((si(max(ts), "s"), si(min(ts), "s")), (si(min(xs), "B"), si(max(xs), "B")))
    for alg in d["series"]:
        x = d["crossover"][alg]
        m = d["marked"].get(alg)
        where = f"latency-bound below {si(x, 'B')}" if x else "no latency term (α = 0)"
        at = f"; {'R' if alg == 'ring' else 'T'} asked: {si(m['time'], 's')}" if m else ""
        out.append(f"  {chars.get(alg, '*')} {alg}: {where}{at}")
    return fit(out, width)
