"""Where the bytes go: stacked bars of weights, KV cache, gradients, optimizer states, activations,
against the chip's HBM.

The parts come from the solver results the command prints: ``solver.systems.serving.serve``
(weights and KV cache), ``solver.systems.training.zero`` (weights, gradients, optimizer states per GPU,
one bar per ZeRO stage), ``solver.counting`` memory reports (``qkv solve memory``'s items).
"""

from __future__ import annotations

from typing import Any

from drills.plots import COLOURS, fit, si

#: a fixed colour per kind of bytes, so the same part has the same colour in every picture
PART_COLOURS = {"weights": COLOURS[0], "KV cache": COLOURS[1], "gradients": COLOURS[2],
                "optimizer states": COLOURS[3], "activations": COLOURS[4]}
GLYPHS = "#%=+*@&$"


def data(title: str, bars: list[tuple[str, list[tuple[str, float]]]], hbm: float | None,
         hbm_label: str = "HBM") -> dict[str, Any]:
    """``bars``: (label, [(part name, bytes)]); ``hbm``: the bytes the bars are held against, or None."""
    out = []
    for label, parts in bars:
        ps = [{"name": n, "bytes": float(b)} for n, b in parts]
        out.append({"label": label, "parts": ps, "total": sum(p["bytes"] for p in ps)})
    return {"title": title, "bars": out, "hbm": None if hbm is None else float(hbm), "hbm_label": hbm_label}


def _names(d: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(p["name"] for b in d["bars"] for p in b["parts"]))


def figure(d: dict[str, Any], plt):
    bars, names = d["bars"], _names(d)
    colours = {n: PART_COLOURS.get(n, COLOURS[(4 + i) % len(COLOURS)]) for i, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(7.5, max(2.4, 0.6 * len(bars) + 1.8)), layout="constrained")
    scale = 1e9
    for i, b in enumerate(bars):
        left = 0.0
        for p in b["parts"]:
            ax.barh(i, p["bytes"] / scale, left=left, color=colours[p["name"]], edgecolor="white",
                    label=p["name"] if i == 0 or p["name"] not in [q["name"] for c in bars[:i] for q in c["parts"]]
                    else None)
            left += p["bytes"] / scale
        ax.text(left, i, f" {si(b['total'], 'B')}", va="center", fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
    if d["hbm"] is not None:
        ax.axvline(d["hbm"] / scale, color="black", ls="--", lw=1.2)
        ax.annotate(f"{d['hbm_label']} {si(d['hbm'], 'B')}", (d["hbm"] / scale, 1.0),
                    xycoords=("data", "axes fraction"), xytext=(4, -12), textcoords="offset points", fontsize=8)
    top = max([b["total"] for b in bars] + [d["hbm"] or 0]) / scale
    ax.set_xlim(0, top * 1.25)
    ax.set_ylim(len(bars) - 0.4, -0.6)
    ax.set_yticks(range(len(bars)), [b["label"] for b in bars])
    ax.set_xlabel("GB (10⁹ bytes)")
    ax.set_title(d["title"])
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", visible=False)
    return fig


def sketch(d: dict[str, Any], width: int = 80) -> str:
    bars, names = d["bars"], _names(d)
    glyph = {n: GLYPHS[i % len(GLYPHS)] for i, n in enumerate(names)}
    label_w = min(16, max(len(b["label"]) for b in bars))
    cols = width - label_w - 13
    top = max([b["total"] for b in bars] + [d["hbm"] or 0])
    out = [d["title"][:width]]
    hbm_col = None if d["hbm"] is None else min(cols - 1, round(d["hbm"] / top * cols))
    for b in bars:
        cells, acc = [], 0.0
        for p in b["parts"]:
            start, acc = round(acc / top * cols), acc + p["bytes"]
            cells += [glyph[p["name"]]] * (round(acc / top * cols) - start)
        row = "".join(cells).ljust(cols)
        if hbm_col is not None:
            row = row[:hbm_col] + ("|" if row[hbm_col] == " " else "!") + row[hbm_col + 1:]
        out.append(f"{b['label'][:label_w]:>{label_w}} {row.rstrip():<{cols}} {si(b['total'], 'B'):>9}")
    out.append("  " + ", ".join(f"{glyph[n]} {n}" for n in names))
    if d["hbm"] is not None:
        out.append(f"  | {d['hbm_label']} {si(d['hbm'], 'B')} (! where the bytes cross it)")
    return fit(out, width)


def typst(d: dict[str, Any], width_pt: float = 330.0) -> str:
    """The bars as Typst code for the PDF sheets (no plotting library), the HBM as a dashed line."""
    bars, names = d["bars"], _names(d)
    colours = {n: PART_COLOURS.get(n, COLOURS[(4 + i) % len(COLOURS)]) for i, n in enumerate(names)}
    top = max([b["total"] for b in bars] + [d["hbm"] or 0]) * 1.05
    rows = []
    for b in bars:
        segs, x = [], 0.0
        for p in b["parts"]:
            w = p["bytes"] / top * width_pt
            segs.append(f'place(dx: {x:.2f}pt, box(width: {w:.2f}pt, height: 11pt, fill: rgb("{colours[p["name"]]}")))')
            x += w
        segs.append(f'place(dx: {x + 3:.2f}pt, dy: 2pt, text(size: 7pt, "{si(b["total"], "B")}"))')
        if d["hbm"] is not None:
            hx = d["hbm"] / top * width_pt
            segs.append(f"place(dx: {hx:.2f}pt, dy: -2pt, line(start: (0pt, 0pt), end: (0pt, 15pt), "
                        'stroke: (paint: black, thickness: 0.8pt, dash: "dashed")))')
        rows.append(f'align(right + horizon, text(size: 7pt, "{b["label"]}")), '
                    f"box(width: {width_pt:.0f}pt, height: 11pt, {{ {'; '.join(segs)} }})")
    legend = "; ".join(f'box(width: 7pt, height: 7pt, fill: rgb("{colours[n]}")) + h(2pt) + text(size: 7pt, "{n}") '
                       f"+ h(8pt)" for n in names)
    hbm = f", dashed line: {d['hbm_label']} {si(d['hbm'], 'B')}" if d["hbm"] is not None else ""
    caption = f"{d['title']}{hbm}".replace("[", "(").replace("]", ")").replace("#", "").replace("_", " ")
    return (f"#figmark(figure(stack(spacing: 5pt, grid(columns: (44pt, {width_pt + 40:.0f}pt), rows: 12pt, "
            f"row-gutter: 4pt, column-gutter: 4pt, {', '.join(rows)}), {{ {legend} }}), caption: [{caption}], "
            'kind: "picture", supplement: none, numbering: none))')
