"""``qkv grade KEYFILE answers.csv``: a class's answers graded by the one judge, with an item analysis.

Thin: reading and grading are :mod:`drills.exam.classgrade`, the analysis :mod:`drills.exam.items`,
the files :mod:`drills.exam.class_report`."""

from __future__ import annotations

from pathlib import Path

import click

from drills.output import InputError, emit, emit_json, strip_controls, warn
from solver.units import plural

MAX_BYTES = 32 * 2**20


def questions_path(out: Path) -> Path:
    """``results.csv`` -> ``results.questions.csv``."""
    return out.with_name(f"{out.stem}.questions{out.suffix}")


@click.command()
@click.argument("keyfile", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("answers", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="RESULTS.csv",
              help="Write the results: RESULTS.csv (a row per student: score, counts, marks per item) and "
                   "RESULTS.questions.csv (a row per student and question: answer, verdict, misconception, marks).")
@click.option("--report", "report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE.md",
              help="Write the report (Markdown) to FILE instead of printing it; FILE.json writes it as JSON.")
@click.option("--plot", "plot", default=None, metavar="FILE",
              help="Draw the score distribution and the item map: FILE.png or FILE.svg (needs matplotlib: the "
                   "'plot' extra).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
def grade(keyfile: Path, answers: Path, output: Path | None, report: Path | None, plot: str | None,
          as_json: bool) -> None:
    """Grade a class: KEYFILE from qkv sheet --versions/--students, ANSWERS a CSV.

    \b
    ANSWERS: one row per student and question, with columns student (or id, roll number,
    email), version (V07; may be left out with a roster or one version), question (3 or Q3)
    and answer, in any order, other columns ignored; or a form's export, one row per student
    and a column per question (Q1, Q2, ...). Answers as the quiz reads them: 0.60, 3/5, 12 GB,
    537M, b or (b) or the option's text, a,c for MSQ, matrices. Marked by the blueprint:
    a wrong MCQ costs its penalty, MSQ and NAT none, partial credit where it says. A row
    that cannot be read is listed with why; a student of the roster with no row is listed."""
    from drills.exam.class_report import answers_csv, picture_bytes, report_md, students_csv
    from drills.exam.classgrade import KeyFileError, grade_class, load_key, read_answers
    from drills.exam.items import analyse
    from drills.files import check_output, read_capped, write_files

    targets: dict[str, Path] = {}
    if output is not None:
        if output.suffix.lower() != ".csv":
            raise InputError(f"{output.name!r}: the results are CSV; give a file ending in .csv", "-o")
        check_output(output, "-o", stdout_ok=False)
        targets["-o"] = output
    if report is not None:
        if report.suffix.lower() not in (".md", ".txt", ".json"):
            raise InputError(f"{report.name!r}: give a .md (or .txt) or .json file", "--report")
        check_output(report, "--report", stdout_ok=False)
    if plot is not None:
        if Path(plot).suffix.lower() not in (".png", ".svg"):
            raise InputError(f"{plot!r}: give a .png or .svg file", "--plot")
        check_output(Path(plot), "--plot", stdout_ok=False)
        from drills.plots import pyplot

        pyplot()  # matplotlib missing: one line now, before any work
    notes: list[str] = []
    try:
        key = load_key(read_capped(keyfile, MAX_BYTES, "KEYFILE"), keyfile.name, notes)
    except KeyFileError as e:
        raise InputError(str(e), "KEYFILE") from None
    try:
        got = read_answers(read_capped(answers, MAX_BYTES, "ANSWERS"), key, answers.name)
    except ValueError as e:
        raise InputError(str(e), "ANSWERS") from None
    notes = got.notes + notes
    graded = grade_class(key, got)
    max_marks = sum(q.marks for q in next(iter(key.versions.values())).questions)
    analysis = analyse(graded, max_marks)
    text = report_md(key, got, analysis, notes)
    obj = analysis.to_json() | {
        "paper": key.paper, "seed": key.seed, "versions": len(key.versions),
        "unread": [{"line": u.line, "student": u.student, "question": u.question, "why": u.why, "row": u.row}
                   for u in got.unread],
        "absent": [{"id": a.id, "name": a.name} for a in got.absent], "notes": notes,
        "results": [{"student": row[0].student, "version": row[0].version,
                     "score": float(analysis.totals[row[0].student])} for row in graded]}
    files: dict[Path, bytes] = {}
    if output is not None:
        files[output] = students_csv(key, graded, got.absent)
        files[questions_path(output)] = answers_csv(graded)
    if report is not None:
        import json

        from drills.output import jsonable

        files[report] = (json.dumps(jsonable(obj), ensure_ascii=False, indent=1) + "\n").encode() \
            if report.suffix.lower() == ".json" else text.encode("utf-8")
    if plot is not None:
        files[Path(plot)] = picture_bytes(analysis, Path(plot).suffix.lower())
    if len(files) != len({p.resolve() for p in files}):
        raise InputError("two of the files to write are the same file; give other names", "-o")
    inputs = {keyfile.resolve(), answers.resolve()}
    clash = next((p for p in files if p.resolve() in inputs), None)
    if clash is not None:
        raise InputError(f"{clash} is a file this command reads; nothing was written", "-o")
    if files:
        write_files(files, "-o")
    for note in notes:
        warn(strip_controls(note, keep=""))
    if not graded:
        warn(f"{answers.name}: no student's answers to grade")
    if got.unread:
        warn(f"{plural(len(got.unread), 'row')} not read (each listed with why in the report)")
    if got.absent:
        warn(f"{plural(len(got.absent), 'student')} of the roster with no row: "
             + ", ".join(strip_controls(a.id, keep="")[:40] for a in got.absent[:10])
             + (" …" if len(got.absent) > 10 else ""))
    if as_json:
        emit_json(obj)
        return
    if report is None:
        emit(strip_controls(text))
    for p in files:
        emit(f"wrote {p}")
