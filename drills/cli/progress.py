"""``qkv stats`` and ``qkv history export|import``: what the progress store knows, and moving it.

Thin commands: the numbers come from :meth:`drills.progress.ProgressStore.stats`; this module
only lays them out (plain text with Unicode bars, no colour needed) and prints through
:mod:`drills.output`.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

import click

from drills.output import emit, emit_json, strip_controls
from drills.progress.paths import data_dir_option
from solver.units import plural

BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar(fraction: float | None, width: int = BAR_WIDTH) -> str:
    """A horizontal bar ``width`` cells wide, filled to ``fraction`` (0..1) in eighths of a cell."""
    if fraction is None:
        return "·".ljust(width)
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text + "░" * (width - len(text))


def sparkline(values: list[float | None]) -> str:
    """One character a value in 0..1 (``▁`` to ``█``); ``·`` where there is none."""
    ticks = "▁▂▃▄▅▆▇█"
    return "".join("·" if v is None else ticks[min(7, int(max(0.0, min(1.0, v)) * 8))] for v in values)


def _percent(x: float | None) -> str:
    return "  —  " if x is None else f"{100 * x:5.1f}%"


def _ago(when: datetime, now: datetime) -> str:
    seconds = (now - when).total_seconds()
    if seconds < 0:
        seconds = -seconds
        suffix = "from now"
    else:
        suffix = "overdue"
    if seconds < 3600:
        amount = f"{max(1, round(seconds / 60))} min"
    elif seconds < 86400 * 2:
        amount = f"{round(seconds / 3600)} h"
    else:
        amount = f"{round(seconds / 86400)} days"
    return f"{amount} {suffix}"


def render_stats(stats: dict[str, Any]) -> str:
    """The text of ``qkv stats`` from :meth:`ProgressStore.stats`'s dict."""
    from drills.progress import parse_time

    lines: list[str] = []
    total = stats["totals"]
    unfinished = [f"Unfinished mock exam (started {e['started_at'][:16].replace('T', ' ')} UTC): {e['answered']} of "
                  f"{e['questions']} answered, saved; `qkv exam` resumes it" for e in stats.get("unfinished_exams", [])]
    if total["attempts"] == 0:
        return (f"No answers recorded yet in {stats['data_dir']}.\n"
                + "".join(line + "\n" for line in unfinished)
                + "Run `qkv quiz` to start; every answer is kept here.\n" + data_line(stats["data_dir"]))
    skipped = total["attempts"] - total["answered"]
    lines.append(f"Answers: {total['answered']}" + (f" (+{skipped} skipped)" if skipped else "")
                 + f"   right: {total['correct']}   accuracy: {_percent(total['accuracy']).strip()}")
    streak = stats["streak"]
    today = "answered today" if streak["today"] else "nothing yet today"
    lines.append(f"Streak: {plural(streak['current'], 'day')} (longest {streak['longest']}); {today}")

    lines += ["", "By topic" + " " * 16 + "answers  accuracy"]
    width = max([len(t["topic"]) for t in stats["topics"]] + [20])
    for t in stats["topics"]:
        lines.append(f"  {t['topic']:<{width}}  {t['answered']:>6}   {_percent(t['accuracy'])}  {bar(t['accuracy'])}")

    if stats["misconceptions"]:
        lines += ["", "Mistakes you make most"]
        for m in stats["misconceptions"]:
            where = ", ".join(m["topics"])
            detail = "; ".join(x for x in ((m["id"] if m["label"] else ""), where) if x)
            lines.append(f"  {m['count']:>3}×  {m['label'] or m['id']}" + (f"  ({detail})" if detail else ""))

    due = stats["due"]
    lines += ["", f"Review: {due['now']} due now, {due['today']} today, {due['week']} this week "
                  f"(of {plural(due['cards'], 'item')} seen)"]
    now = parse_time(stats["now"])
    for item in due["items"][:8]:
        topic = f" ({item['topic']})" if item["topic"] else ""
        lines.append(f"  {item['ref']}{topic}: {_ago(parse_time(item['due']), now)}")

    daily = stats["daily"]
    if daily:
        first, last = daily[0]["day"], daily[-1]["day"]
        lines += ["", f"Accuracy by day, {first} to {last} (· no answers)",
                  "  " + sparkline([d["accuracy"] for d in daily])]
        if not any(d["attempts"] for d in daily):
            lines.append(f"  no answers in {'this day' if len(daily) == 1 else f'these {len(daily)} days'}")
        for d in daily:
            if d["answered"] or d["attempts"]:
                label = date.fromisoformat(d["day"]).strftime("%a %d %b")
                lines.append(f"  {label}  {bar(d['accuracy'])} {_percent(d['accuracy'])}  ({d['answered']})")

    if stats["exams"]:
        lines += ["", "Recent mock exams"]
        for e in stats["exams"][:5]:
            score = "—" if e["score"] is None else _marks(e["score"])
            out_of = "" if e["max_score"] is None else f" / {_marks(e['max_score'])}"
            lost = f", {_marks(e['negative'])} lost to negative marks" if e["negative"] else ""
            lines.append(f"  {e['started_at'][:16].replace('T', ' ')} UTC  {score}{out_of}{lost}")
    if unfinished:
        lines += ["", *unfinished]
    lines += ["", data_line(stats["data_dir"])]
    return "\n".join(lines)


def data_line(directory: str) -> str:
    """Where the data lives (the README promises that `qkv stats` says)."""
    from drills.progress import DB_NAME, REPORTS_NAME

    return (f"Data: {Path(directory) / DB_NAME} (disputed keys: {REPORTS_NAME}; "
            "move it with --data-dir or QKV_HOME)")


def _marks(x: float) -> str:
    """Marks for display: two decimals as GATE shows them (2.67, 0.33, 1.50), a whole number
    as itself (9); ``--json`` keeps full precision."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.2f}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--days", type=click.IntRange(1, 366), default=14, show_default=True,
              help="Days shown in the accuracy chart.")
@data_dir_option
def stats(as_json: bool, days: int, data_dir: Path | None) -> None:
    """Accuracy per topic, your most frequent mistakes, items due, streak, accuracy by day."""
    from drills.progress import ProgressStore

    with ProgressStore.open(data_dir, read_only=True) as store:  # a read: nothing written
        result = store.stats(days=days)
    if as_json:
        emit_json(result)
    else:
        emit(strip_controls(render_stats(result)))  # a history may hold control characters: never to the terminal


@click.group()
def history() -> None:
    """Export or import your answer history (to move it to another machine)."""


@history.command("export")
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default=None,
              help="json: everything (sessions, answers, review cards, reports); csv: one row per answer. "
                   "Default: from the file name, else json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write: a regular file or a new name (default, or -: standard output).")
@data_dir_option
def export(fmt: str | None, output: Path | None, data_dir: Path | None) -> None:
    """Write your whole history as JSON or CSV."""
    from drills.files import check_output, is_stdout, write_files
    from drills.progress import ProgressStore

    if is_stdout(output):
        output = None
    if fmt is None:
        fmt = "csv" if output is not None and output.suffix.lower() == ".csv" else "json"
    if output is not None:
        check_output(output, "--output")  # before the history is read: a device or a link is refused at once
    with ProgressStore.open(data_dir, read_only=True) as store:
        text = store.export(fmt)
        n = store.count_attempts()
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_files({output: text.encode("utf-8")}, "--output")
    emit(f"Wrote {plural(n, 'answer')} to {output} ({fmt}).")


@history.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default=None,
              help="Default: guessed from the content.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as one JSON object.")
@data_dir_option
def import_(file: Path, fmt: str | None, as_json: bool, data_dir: Path | None) -> None:
    """Merge an exported history into yours (answers already present are skipped).

    All or nothing: every field of every record is checked as `qkv history export` writes it,
    and the first one that is not refuses the whole file (nothing is stored). A file may be at
    most 64 MiB (about 100,000 answers).
    """
    from drills.progress import ProgressStore
    from drills.progress.history_format import read_history_file

    text = read_history_file(file)
    with ProgressStore.open(data_dir) as store:
        counts = store.import_(text, fmt)
    if as_json:
        emit_json(counts)
        return
    already = f" ({counts['skipped']} already there)" if counts["skipped"] else ""
    emit(f"Imported {plural(counts['attempts'], 'answer')}{already}, {plural(counts['sessions'], 'session')}, "
         f"{plural(counts['reports'], 'report')}; rebuilt {plural(counts['cards'], 'review card')}.")
