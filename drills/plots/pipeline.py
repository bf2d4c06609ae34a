"""A pipeline schedule as a timeline: stages × time slots, forward and backward blocks, the bubble blank.

The blocks come from :func:`solver.systems.pipeline_schedule.pipeline_timeline` (a simulation of
the schedule); the bubble fraction printed beside them from
:func:`solver.systems.parallelism.pipeline_bubble`, the figure ``qkv solve pipeline`` prints. The tests
check that the simulation's idle fraction equals that formula.
"""

from __future__ import annotations

from typing import Any

from drills.plots import fit

FWD, BWD = "#0072B2", "#E69F00"


def data(timeline, bubble) -> dict[str, Any]:
    """``timeline``: a Timeline; ``bubble``: the pipeline_bubble Result for the same schedule."""
    return {"schedule": timeline.schedule, "stages": timeline.stages, "microbatches": timeline.microbatches,
            "chunks": timeline.chunks, "makespan": timeline.makespan,
            "blocks": [{"stage": b.stage, "kind": b.kind, "microbatch": b.microbatch + 1, "chunk": b.chunk,
                        "start": b.start, "end": b.end} for b in timeline.blocks],
            "bubble_fraction": float(bubble.answer), "bubble_text": str(bubble.answer)}


def _title(d: dict[str, Any]) -> str:
    name = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved 1F1B (v = {d['chunks']})"}[d["schedule"]]
    return (f"{name}: p = {d['stages']} stages, m = {d['microbatches']} microbatches; "
            f"bubble = {d['bubble_text']} = {100 * d['bubble_fraction']:.1f}% of the step")


def figure(d: dict[str, Any], plt):
    from matplotlib.patches import Patch

    p, T = d["stages"], d["makespan"]
    fig, ax = plt.subplots(figsize=(7.5, max(2.2, 0.45 * p + 1.4)), layout="constrained")
    many = len(d["blocks"]) > 160
    # one bar collection per stage, kind and shade, not one per block: at the 20,000-block limit one
    # artist per block took minutes and hundreds of MB (issue 42); the same bars
    groups: dict[tuple[int, str, float], list[tuple[int, int]]] = {}
    for b in d["blocks"]:
        alpha = 1.0 if b["chunk"] % 2 == 0 else 0.6
        groups.setdefault((b["stage"], b["kind"], alpha), []).append((b["start"], b["end"] - b["start"]))
    for (stage, kind, alpha), ranges in groups.items():
        ax.broken_barh(ranges, (stage - 0.4, 0.8), facecolors=FWD if kind == "F" else BWD,
                       edgecolors="white", linewidth=0.6 if not many else 0.2, alpha=alpha)
    for b in d["blocks"]:
        if not many:
            ax.text((b["start"] + b["end"]) / 2, b["stage"], f"{b['kind']}{b['microbatch']}", ha="center",
                    va="center", fontsize=6.5, color="white" if b["kind"] == "F" else "black")
    ax.set_xlim(0, T)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_yticks(range(p), [f"stage {s + 1}" for s in range(p)])
    unit = "one chunk's forward" if d["chunks"] > 1 else "one forward"
    ax.set_xlabel(f"time (units of {unit}; a backward takes twice as long); blank = bubble")
    ax.grid(False)
    ax.set_title(_title(d))
    ax.legend(handles=[Patch(color=FWD, label="forward"), Patch(color=BWD, label="backward")],
              loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def sketch(d: dict[str, Any], width: int = 80) -> str:
    p, T = d["stages"], d["makespan"]
    cols = width - 11
    scale = max(1, -(-T // cols))  # time units per character
    n = -(-T // scale)
    rows = [[" "] * n for _ in range(p)]
    for b in d["blocks"]:
        if scale == 1:
            mark = str(b["microbatch"] % 10) if b["kind"] == "F" else "abcdefghij"[(b["microbatch"] - 1) % 10]
        else:
            mark = b["kind"]
        for t in range(b["start"], b["end"]):
            rows[b["stage"]][t // scale] = mark
    name = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved (v={d['chunks']})"}[d["schedule"]]
    out = [f"{name}: p={d['stages']} stages, m={d['microbatches']} microbatches; "
           f"bubble {d['bubble_text']} = {100 * d['bubble_fraction']:.1f}% of the step"]
    for s, row in enumerate(rows):
        out.append(f"stage {s + 1:<2}|" + "".join(row).replace(" ", ".") + "|")
    if scale == 1:
        out.append("digit: forward of microbatch 1-9,0; letter a-j: its backward; . = bubble")
    else:
        out.append(f"F forward, B backward, . = bubble; 1 column = {scale} time units")
    return fit(out, width)


def typst(d: dict[str, Any], width_pt: float = 400.0) -> str:
    """The timeline as Typst code for the PDF sheets (no plotting library): one row per stage, each
    block placed at its start, forward blue, backward orange, the bubble left white; the bubble
    fraction in the caption."""
    p, T = d["stages"], d["makespan"]
    u = width_pt / T  # points per time unit
    rows = []
    for s in range(p):
        blocks = []
        for b in (b for b in d["blocks"] if b["stage"] == s):
            w = (b["end"] - b["start"]) * u
            fill = 'rgb("#0072B2")' if b["kind"] == "F" else 'rgb("#E69F00")'
            label = f'align(center + horizon, text(size: 5.5pt, fill: {"white" if b["kind"] == "F" else "black"})' \
                    f'[{b["kind"]}{b["microbatch"]}])' if w >= 9 else "none"
            stroke = "0.3pt + white" if w >= 2 else "none"
            blocks.append(f"place(dx: {b['start'] * u:.2f}pt, box(width: {w:.2f}pt, height: 9pt, fill: {fill}, "
                          f"stroke: {stroke}, {label}))")
        rows.append(f"align(right + horizon, text(size: 7pt)[stage {s + 1}]), "
                    f"box(width: {width_pt:.0f}pt, height: 9pt, stroke: (bottom: 0.3pt + gray), {{ {'; '.join(blocks)} }})")
    caption = (f"{_title(d)}: time runs left to right, forward blue, backward orange (twice as long), "
               "white = the bubble")
    caption = caption.replace("[", "(").replace("]", ")").replace("#", "").replace("*", "×").replace("_", " ")
    return (f"#figmark(figure(grid(columns: (34pt, {width_pt:.0f}pt), rows: 10pt, row-gutter: 2pt, "
            f"column-gutter: 4pt, {', '.join(rows)}), caption: [{caption}], kind: \"picture\", "
            "supplement: none, numbering: none))")
