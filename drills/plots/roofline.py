"""The roofline: attainable FLOP/s = min(peak, I·bandwidth) against arithmetic intensity I, log-log.

The roofs and ridge points come from :func:`solver.systems.roofline.roofline` results, and each marked
operation from a :func:`solver.systems.roofline.matmul` or :func:`solver.systems.roofline.attention` result: its
intensity (FLOPs / bytes) and its attained FLOP/s = FLOPs / roofline time, the figures the
command prints.
"""

from __future__ import annotations

import math
from typing import Any

from drills.plots import COLOURS, Canvas, fit, si


def data(chips: list[tuple[str, Any]], points: list[tuple[str, Any]]) -> dict[str, Any]:
    """``chips``: (name, roofline Result); ``points``: (label, matmul, attention or decode-step Result on
    the first chip)."""
    roofs = [{"name": name, "peak": float(r.breakdown["peak_flops"]), "bandwidth": float(r.breakdown["bandwidth"]),
              "ridge": float(r.breakdown["critical_intensity"]), "critical_batch": float(r.breakdown["critical_batch"])}
             for name, r in chips]
    marks = []
    for label, r in points:
        b = r.breakdown
        flops = float(b["flops"])
        # a decode step (solver.systems.inference.decode_step) gives total_bytes and its time as the answer
        intensity = float(b["intensity"]) if "intensity" in b else flops / float(b["total_bytes"])
        t = float(b["time_s"]) if "time_s" in b else float(r.answer)
        chips = int(b.get("chips", 1))  # over several chips: FLOP/s attained per chip, against one chip's roof
        marks.append({"label": label, "intensity": intensity, "attained": flops / t / chips, "bound": b["bound"],
                      "time_s": t})
    return {"chips": roofs, "points": marks}


def _range(d: dict[str, Any]) -> tuple[float, float, float, float]:
    xs = [c["ridge"] for c in d["chips"]] + [p["intensity"] for p in d["points"]]
    x0 = 10 ** math.floor(math.log10(min(xs) / 4))
    x1 = 10 ** math.ceil(math.log10(max(xs) * 8))
    peak = max(c["peak"] for c in d["chips"])
    low = min(min(c["bandwidth"] * x0 for c in d["chips"]), min((p["attained"] for p in d["points"]), default=peak))
    return x0, x1, 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(peak * 1.5))


def figure(d: dict[str, Any], plt):
    x0, x1, y0, y1 = _range(d)
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for i, c in enumerate(d["chips"]):
        colour = COLOURS[i % len(COLOURS)]
        xs = [x0, c["ridge"], x1]
        ys = [c["bandwidth"] * x0, c["peak"], c["peak"]]
        ax.plot(xs, ys, color=colour, lw=2,
                label=f"{c['name']}: peak {si(c['peak'], 'FLOP/s')}, {si(c['bandwidth'], 'B/s')}")
        ax.plot([c["ridge"]], [c["peak"]], "o", color=colour, ms=6, mfc="white", mew=2)
        ax.annotate(f"ridge I* = {c['ridge']:.4g} FLOP/B", (c["ridge"], c["peak"]), textcoords="offset points",
                    xytext=(-8, 6), ha="right", fontsize=8, color=colour)
    for j, p in enumerate(d["points"]):
        marker = "s" if p["bound"] == "memory" else "^"
        ax.plot([p["intensity"]], [p["attained"]], marker, color="black", ms=6)
        near = sum(1 for q in d["points"][:j] if abs(math.log10(q["intensity"] / p["intensity"])) < 1.5)
        ax.annotate(f"{p['label']}: I = {p['intensity']:.4g}, {si(p['attained'], 'FLOP/s')}",
                    (p["intensity"], p["attained"]), textcoords="offset points",
                    xytext=(8, -14 - 11 * near), fontsize=7.5)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel("arithmetic intensity I (FLOP per byte of HBM traffic)")
    ax.set_ylabel("attainable FLOP/s = min(peak, I × bandwidth)")
    ax.set_title("Roofline: memory-bound (■) left of the ridge, compute-bound (▲) right of it")
    ax.legend(loc="lower right")
    return fig


def sketch(d: dict[str, Any], width: int = 80) -> str:
    x0, x1, y0, y1 = _range(d)
    cv = Canvas(width - 13, 16, (x0, x1), (y0, y1))
    for i, c in enumerate(d["chips"]):
        ch = "=-~:"[i % 4]
        cv.curve(lambda x, c=c: min(c["peak"], c["bandwidth"] * x), ch)
        cv.put(c["ridge"], c["peak"], "R")
    for j, p in enumerate(d["points"]):
        cv.put(p["intensity"], p["attained"], str(j + 1) if j < 9 else "*")
    out = ["roofline (log-log): attainable FLOP/s against intensity (FLOP/byte)"]
    out += cv.lines((si(y1, "FLOP/s"), si(y0, "FLOP/s")), (f"I={x0:g}", f"I={x1:g}"), margin=13)
    for i, c in enumerate(d["chips"]):
        out.append(f"  {'=-~:'[i % 4]} {c['name']}: peak {si(c['peak'], 'FLOP/s')}, "
                   f"{si(c['bandwidth'], 'B/s')}, R = ridge I* {c['ridge']:.4g} FLOP/B")
    for j, p in enumerate(d["points"]):
        out.append(f"  {j + 1 if j < 9 else '*'} {p['label']}: I = {p['intensity']:.4g}, "
                   f"{si(p['attained'], 'FLOP/s')}, {p['bound']}-bound")
    return fit(out, width)


def typst(d: dict[str, Any], width_pt: float = 340.0, height_pt: float = 170.0) -> str:
    """The roofline as Typst code for the PDF sheets (no plotting library): log-log axes with a
    line at each decade, each chip's roof and ridge point, each operation as a labelled square."""
    x0, x1, y0, y1 = _range(d)

    def X(v: float) -> float:
        return (math.log10(v) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * width_pt

    def Y(v: float) -> float:
        return height_pt - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * height_pt

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    items = []
    for k in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = X(10 ** k)
        items.append(f"place(dx: {x:.1f}pt, dy: 0pt, line(start: (0pt, 0pt), end: (0pt, {height_pt:.0f}pt), "
                     "stroke: 0.3pt + luma(220)))")
        items.append(f'place(dx: {x - 10:.1f}pt, dy: {height_pt + 3:.0f}pt, text(size: 6.5pt)[$10^({k})$])')
    for k in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = Y(10 ** k)
        items.append(f"place(dx: 0pt, dy: {y:.1f}pt, line(start: (0pt, 0pt), end: ({width_pt:.0f}pt, 0pt), "
                     "stroke: 0.3pt + luma(220)))")
        items.append(f'place(dx: -34pt, dy: {y - 4:.1f}pt, text(size: 6.5pt, "{esc(si(10 ** k, "FLOP/s"))}"))')
    colours = ("#0072B2", "#D55E00", "#009E73", "#CC79A7")
    for i, c in enumerate(d["chips"]):
        col = f'rgb("{colours[i % len(colours)]}")'
        (ax, ay), (bx, by), (cx, cy) = (X(x0), Y(c["bandwidth"] * x0)), (X(c["ridge"]), Y(c["peak"])), \
            (X(x1), Y(c["peak"]))
        for (sx, sy), (ex, ey) in (((ax, ay), (bx, by)), ((bx, by), (cx, cy))):
            items.append(f"place(line(start: ({sx:.1f}pt, {sy:.1f}pt), end: ({ex:.1f}pt, {ey:.1f}pt), "
                         f"stroke: 1.4pt + {col}))")
        items.append(f"place(dx: {bx - 3:.1f}pt, dy: {by - 3:.1f}pt, circle(radius: 3pt, fill: white, "
                     f"stroke: 1pt + {col}))")
        items.append(f'place(dx: {bx - 90:.1f}pt, dy: {by - 12 - 9 * i:.1f}pt, text(size: 7pt, fill: {col}, '
                     f'"{esc(c["name"])}: ridge I* = {c["ridge"]:.4g} FLOP/B"))')
    for j, p in enumerate(d["points"]):
        px, py = X(p["intensity"]), Y(p["attained"])
        items.append(f"place(dx: {px - 2.5:.1f}pt, dy: {py - 2.5:.1f}pt, square(size: 5pt, fill: black))")
        items.append(f'place(dx: {px + 5:.1f}pt, dy: {py + 2 + 9 * j:.1f}pt, text(size: 7pt, '
                     f'"{esc(p["label"])}: I = {p["intensity"]:.4g}, {esc(si(p["attained"], "FLOP/s"))}"))')
    body = "; ".join(items)
    caption = ("the roofline (log-log): attainable FLOP/s = min(peak, I × bandwidth) against the arithmetic "
               "intensity I; left of the ridge memory-bound, right of it compute-bound")
    return (f"#figmark(figure(pad(left: 36pt, bottom: 14pt, box(width: {width_pt:.0f}pt, height: {height_pt:.0f}pt, "
            f"stroke: 0.5pt + gray, clip: false, {{ {body} }})), caption: [{caption}], "
            'kind: "picture", supplement: none, numbering: none))')
