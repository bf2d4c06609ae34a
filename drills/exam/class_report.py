"""The files of ``qkv grade``: the results CSVs (per student, per answer), the report (Markdown) and
the picture (score distribution and item map).

Text that came from the answers file (student ids, names, answers) is made safe for where it goes:
a CSV cell that a spreadsheet would run as a formula (beginning with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return, or ``'`` itself) gets a leading ``'``; in the Markdown report Markdown
and HTML punctuation is escaped and control characters are dropped."""

from __future__ import annotations

import csv
import io
import re
from fractions import Fraction
from typing import Any

from drills.output import strip_controls

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_text(value: Any) -> str:
    """A cell of text from the answers file, safe in a spreadsheet."""
    t = strip_controls("" if value is None else str(value), keep="")
    return "'" + t if t.startswith(_FORMULA_START) else t


def num(x: Fraction | float | None, places: int = 2) -> str:
    if x is None:
        return ""
    v = round(float(x), places)
    return f"{v:.{places}f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def md(text: Any) -> str:
    """Text from a file, safe in Markdown (and the HTML a Markdown viewer makes of it)."""
    t = strip_controls(str(text), keep="").replace("\n", " ").replace("&", "&amp;").replace("<", "&lt;")
    return re.sub(r"([\\`*_\[\]#|])", r"\\\1", t)


def _write(rows: list[list[str]]) -> bytes:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def students_csv(key: Any, graded: list[list[Any]], absent: list[Any]) -> bytes:
    """One row per student: total, counts, then the marks of each item (item k = question k of V01)."""
    n = key.items
    head = ["student", "name", "version", "score", "max", "right", "partial", "wrong", "unanswered", "unread",
            "negative"] + [f"item {k}" for k in range(1, n + 1)]
    rows = [head]
    for row in graded:
        g0 = row[0]
        out = Counter_of(row)
        by_item = {g.item: g for g in row}
        rows.append([csv_text(g0.student), csv_text(g0.name), g0.version, num(sum((g.awarded for g in row),
                                                                                    Fraction(0)), 4),
                     str(sum(g.marks for g in row)), *(str(out[k]) for k in ("correct", "partial", "wrong",
                                                                               "unanswered", "unread")),
                     num(sum((g.negative for g in row), Fraction(0)), 4),
                     *(num(by_item[k].awarded, 4) for k in range(1, n + 1))])
    for s in absent:
        rows.append([csv_text(s.id), csv_text(s.name), key.students.get(s.id, ""), "", "", "", "", "", "", "", "",
                     *([""] * n)])
    return _write(rows)


def Counter_of(row: list[Any]) -> dict[str, int]:  # noqa: N802 - a small tally
    out = {"correct": 0, "partial": 0, "wrong": 0, "unanswered": 0, "unread": 0}
    for g in row:
        out[g.outcome] += 1
    return out


def answers_csv(graded: list[list[Any]]) -> bytes:
    """One row per student and question: the answer, the judge's verdict and the marks."""
    from question_bank.grading import describe_key

    rows = [["student", "name", "version", "question", "item", "problem", "type", "marks", "answer", "outcome",
             "status", "misconception", "misconception_label", "awarded", "negative", "key", "message"]]
    for row in graded:
        for g in row:
            v = g.verdict
            m = g.misconception
            rows.append([csv_text(g.student), csv_text(g.name), g.version, str(g.number), str(g.item), g.problem.id,
                         g.paper_type, str(g.marks), csv_text(g.answer), g.outcome,
                         "" if v is None else v.status, "" if m is None else m.id, "" if m is None else m.label,
                         num(g.awarded, 4), num(g.negative, 4),
                         csv_text(describe_key(g.problem.key, g.problem.options_text or None)),
                         csv_text(g.why if v is None else v.message)])
    return _write(rows)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def _r(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def report_md(key: Any, answers: Any, analysis: Any, notes: list[str]) -> str:
    """The short report: scores, rows not read, students with no row, the items, the misconceptions."""
    from drills.exam.items import REFERENCE, summary

    scores = [float(analysis.totals[s]) for s in analysis.students]
    s = summary(scores)
    out = [f"# Results: {md(key.title or key.paper)}", ""]
    out.append(f"Paper {md(key.paper)}, seed {key.seed}, {len(key.versions)} version(s); "
               f"{len(analysis.students)} student(s) graded out of {analysis.max_marks} marks.")
    if scores:
        out.append(f"Score: mean {s['mean']:.2f}, median {s['median']:.2f}, sd {s['sd']:.2f}, "
                   f"lowest {s['min']:.2f}, highest {s['max']:.2f}.")
    out.append("")
    if answers.unread:
        out += [f"## Rows not read ({len(answers.unread)})", "",
                "Each scores 0 until corrected in the answers file.", "",
                "| line | student | why | as read |", "|---|---|---|---|"]
        out += [f"| {u.line} | {md(u.student)} | {md(u.why)} | {md(u.row)} |" for u in answers.unread]
        out.append("")
    if answers.absent:
        out += [f"## Students with no row ({len(answers.absent)})", ""]
        out += [f"- {md(a.id)} {md(a.name)} ({key.students.get(a.id, '')})".rstrip() for a in answers.absent]
        out.append("")
    if notes:
        out += ["## Notes", ""] + [f"- {md(n)}" for n in notes] + [""]
    out += ["## Items", "",
            "p: share right; r: point-biserial correlation with the rest score; D: upper minus lower 27 %; "
            "strong/weak: share right in the top and bottom halves.", "",
            "| item | question | type | marks | p | r | D | strong | weak | flags |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for it in analysis.items:
        out.append(f"| {it.item} | {md(it.label)} | {it.type.upper()} | {it.marks} | {it.p:.2f} | {_r(it.r_pb)} | "
                   f"{_r(it.d27)} | {_pct(it.p_strong)} | {_pct(it.p_weak)} | {md('; '.join(it.flags))} |")
    out.append("")
    mcqs = [it for it in analysis.items if it.options]
    if mcqs:
        out += ["## MCQ options: chosen by the strong and the weak half", ""]
        for it in mcqs:
            out.append(f"- item {it.item} ({md(it.label)}): " + "; ".join(
                f"{md(o['option'])}{' (key)' if o['key'] else ''} {_pct(o['strong'])} / {_pct(o['weak'])}"
                for o in it.options))
        out.append("")
    if analysis.misconceptions:
        out += ["## Misconceptions", "", "| misconception | students | answers | items |", "|---|---|---|---|"]
        out += [f"| {md(m['label'])} ({md(m['id'])}) | {m['students']} | {m['answers']} | "
                f"{', '.join(str(i) for i in m['items'])} |" for m in analysis.misconceptions]
        out.append("")
    out += [f"Reference: {REFERENCE}.", ""]
    return "\n".join(out)


def picture(analysis: Any) -> Any:
    """A figure (matplotlib): the score distribution, and the item map (share right against
    discrimination, each item by its number; a flagged item in the second colour, an item whose
    discrimination is undefined (everyone or no one right) on the zero line, hollow)."""
    from drills.plots import COLOURS, pyplot

    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.5, 3.6))
    scores = [float(analysis.totals[s]) for s in analysis.students]
    from matplotlib.ticker import MaxNLocator

    lo = min([0.0, *scores])
    a.hist(scores, bins=min(20, max(5, len(scores) // 3)), range=(lo, max(analysis.max_marks, lo + 1)),
           color=COLOURS[0])
    a.yaxis.set_major_locator(MaxNLocator(integer=True))
    a.set_xlabel(f"score (of {analysis.max_marks})")
    a.set_ylabel("students")
    a.set_title("Score distribution")
    for it in analysis.items:
        y = it.r_pb if it.r_pb is not None else 0.0
        colour = COLOURS[1] if it.flags else COLOURS[0]
        b.scatter([it.p], [y], s=18, **({"color": colour} if it.r_pb is not None else
                                        {"facecolors": "none", "edgecolors": colour}))
        b.annotate(str(it.item), (it.p, y), fontsize=7, xytext=(3, 2), textcoords="offset points")
    b.axhline(0, color="#999999", lw=0.8)
    b.set_xlim(-0.05, 1.05)
    b.set_xlabel("share right (p)")
    b.set_ylabel("point-biserial r (rest score)")
    b.set_title("Item map")
    fig.tight_layout()
    return fig


def picture_bytes(analysis: Any, suffix: str) -> bytes:
    """The picture as PNG or SVG bytes, the same on every run (see :mod:`drills.plots`)."""
    from drills.plots import DPI, STYLE, pyplot

    plt = pyplot()
    with plt.rc_context(STYLE):
        fig = picture(analysis)
        buf = io.BytesIO()
        meta = {"Date": None, "Creator": None} if suffix == ".svg" else {"Software": None}
        try:
            fig.savefig(buf, format=suffix[1:], metadata=meta, dpi=DPI)
        finally:
            plt.close(fig)
    return buf.getvalue()
