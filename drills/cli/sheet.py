"""``qkv sheet``: write a practice set (PDF, Markdown, HTML, Anki, Moodle XML or JSON).

Thin: the selection is ``drills.sheets.select``, the formats are ``drills.sheets.<format>``;
nothing heavy (typst, genanki, numpy, the bank) is imported until the command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from drills.output import InputError, emit, emit_json, warn
from solver.units import plural

FORMAT_NAMES = ("pdf", "md", "html", "anki", "moodle", "json")
_BY_SUFFIX = {".pdf": "pdf", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".apkg": "anki",
              ".xml": "moodle", ".json": "json"}
MAX_QUESTIONS = 500  # as -n allows: the PDF engine is known to hold this many
FROM_MAX_BYTES = 16 * 2**20  # a 500-question sheet in JSON is about 2 MiB
_SUFFIX_OF = {"pdf": ".pdf", "md": ".md", "html": ".html", "anki": ".apkg", "moodle": ".xml", "json": ".json"}


def format_for(output: Path, fmt: str | None) -> str:
    """The format: ``--format`` if given (the file's suffix must then be that format's), else
    the one the suffix names; a suffix that names no format is refused."""
    from drills.sheets import FORMATS

    suffix = output.suffix.lower()
    by_suffix = _BY_SUFFIX.get(suffix)
    if fmt is None:
        if by_suffix is None:
            known = ", ".join(sorted(_BY_SUFFIX))
            raise InputError(f"cannot tell the format from {output.name!r}: give --format, or a file ending in {known}",
                             "-o")
        return by_suffix
    if by_suffix != fmt:
        want = FORMATS[fmt][1]
        raise InputError(f"{output.name!r} does not end in {want}, the suffix of --format {fmt}", "-o")
    return fmt


def write_all(files: dict[Path, bytes]) -> None:
    """Write every file or none (:func:`drills.files.write_files`: a regular file or a new name
    only, through temporary files created exclusively beside them)."""
    from drills.files import write_files

    write_files(files, "-o")


@click.command()
@click.option("--topic", "topics", multiple=True, metavar="T", help="Only this topic (attention, counting, ...), family or item id (moe.active_params, 004.gate.q3), "
              "id prefix (004) or tag; repeatable (`qkv bank list` shows them).")
@click.option("--type", "types", multiple=True, type=click.Choice(["mcq", "msq", "nat", "integer", "matrix"]),
              help="Only this problem type (repeatable).")
@click.option("--difficulty", "difficulties", multiple=True, type=click.Choice(["easy", "medium", "hard"]),
              help="Only this difficulty (repeatable).")
@click.option("-n", "n", type=click.IntRange(1, MAX_QUESTIONS), default=10, show_default=True, help="Number of problems.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw: same seed, same sheet.")
@click.option("--title", default=None, help="Title of the sheet (and of the Anki deck) [default: qkv practice set, "
                                            "or the title in the --from file].")
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES), default=None,
              help="Output format (default: the one the file name's suffix names; when given, the suffix must agree).")
@click.option("--answers", type=click.Choice(["none", "end", "separate"]), default="end", show_default=True,
              help="none: student version; end: answer key and worked solutions at the end; "
                   "separate: a second file NAME.answers.EXT with them.")
@click.option("--date", default=None, metavar="YYYY-MM-DD",
              help="Print this date on the sheet ('today' for today). Without it the file carries no date.")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The file to write: a regular file or a new name (- with --format: standard output).")
@click.option("--moodle-msq", "moodle_msq", type=click.Choice(["multichoice", "allornothing"]), default="multichoice",
              show_default=True,
              help="Moodle encoding of MSQ: multichoice (core; one wrong tick scores 0, a subset of the right "
                   "options earns part) or allornothing (the multichoiceset plugin: GATE's all or nothing).")
@click.option("--moodle-cloze", "moodle_cloze", type=click.Choice(["cloze", "formulas"]), default="cloze",
              show_default=True,
              help="Moodle encoding of matrix and multi-part questions: cloze (core; a question imports worth the "
                   "sum of its boxes' whole weights) or formulas (the qtype_formulas plugin, which must be installed: "
                   "worth exactly its marks, every box its share).")
@click.option("--anki-notes", "anki_notes", type=click.Choice(["shared", "per-sheet"]), default="shared",
              show_default=True,
              help="Anki: shared (a problem is one note in every sheet: a later deck updates it, and a problem "
                   "already imported stays in its first deck; every note is tagged qkv_sheet::TITLE) or per-sheet "
                   "(each sheet's deck gets notes of its own).")
@click.option("--from", "source", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE.json",
              help="Render the problems of a sheet written with --format json (full or answers version), edited or "
                   "not: reorder, drop or edit its questions, then print it again in any format. No -n or filters.")
@click.option("--paper", "paper_name", default=None, metavar="NAME|FILE.toml",
              help="The paper of a blueprint, as `qkv exam --paper` sets it (same name and seed, same questions): "
                   "built-in gate or short, or a blueprint file. No -n or filters with it.")
@click.option("--versions", "versions", type=click.IntRange(1, 500), default=None, metavar="N",
              help="With --paper: N versions of the paper for a class (the same items, other draws of the same "
                   "families at the same level, questions shuffled within each section), each with its id printed, "
                   "its answer key (NAME.VNN.answers.EXT), and one key file NAME.key.json for qkv grade.")
@click.option("--students", "roster", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="ROSTER.csv",
              help="With --paper: one version per student of this CSV (a column student/id/roll number/email, "
                   "a name column optional), the student's id and name printed on it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object {files, problems, total_marks}.")
@click.pass_context
def sheet(ctx: click.Context, topics: tuple[str, ...], types: tuple[str, ...], difficulties: tuple[str, ...], n: int,
          seed: int, title: str | None, fmt: str | None, answers: str, date: str | None, output: Path,
          moodle_msq: str, moodle_cloze: str, anki_notes: str, source: Path | None, paper_name: str | None,
          versions: int | None, roster: Path | None, as_json: bool) -> None:
    """Write a practice set: numbered problems with marks, an answer key and worked solutions.

    The same arguments always give the same problems and byte-identical files."""
    from drills.files import check_output, is_stdout, write_stdout
    from drills.sheets import Sheet, content_epoch, outputs
    from drills.sheets.select import SelectionError, select_problems

    to_stdout = is_stdout(output)
    if versions is not None or roster is not None:
        from drills.cli.sheet_versions import write_versions

        write_versions(ctx, versions=versions, roster=roster, paper_name=paper_name, source=source, seed=seed,
                       title=title, fmt=fmt, answers=answers, date=date, output=output, moodle_msq=moodle_msq,
                       moodle_cloze=moodle_cloze, anki_notes=anki_notes, as_json=as_json)
        return
    if to_stdout:
        if fmt is None:
            raise InputError("-o - writes to standard output: give --format", "-o")
        if answers == "separate":
            raise InputError("--answers separate writes two files; -o - is one stream", "-o")
        output = Path("sheet" + _SUFFIX_OF[fmt])
    else:
        check_output(output, "-o")
    fmt = format_for(output, fmt)
    if date == "today":
        import datetime

        date = datetime.date.today().isoformat()
    if date is not None:
        import datetime

        try:
            datetime.date.fromisoformat(date)
        except ValueError:
            raise InputError(f"not a date (YYYY-MM-DD): {date!r}", "--date") from None
    if not output.parent.exists():
        raise InputError(f"no such directory: {output.parent}", "-o")
    if paper_name is not None:
        from click.core import ParameterSource

        from drills.exam.blueprint import BlueprintError, assemble, load

        given = [f"--{name}" if name != "n" else "-n" for name in ("topics", "types", "difficulties", "n", "from")
                 if (name == "from" and source is not None)
                 or (name != "from" and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE)]
        if given:
            raise InputError(f"the blueprint chooses the questions: {', '.join(given)} cannot go with it", "--paper")
        try:
            bp = load(paper_name)
            paper = assemble(bp, seed)
        except BlueprintError as e:
            raise InputError(str(e), "--paper") from None
        from drills.sheets import paper_sections, with_partial

        sections = with_partial(paper_sections(paper.sections, list(paper.problems), paper.penalties),
                                list(paper.problems), paper.penalties, bp.partial)
        args = {"paper": bp.name, "minutes": bp.minutes, "n": len(paper),
                "sections": [[sec, i + 1] for i, sec in enumerate(paper.sections)],
                "marking": {t: str(f) for t, f in (paper.penalties or {}).items()}}
        sh = Sheet(title=title or bp.title, problems=list(paper.problems), seed=seed,
                   arguments=args, date=date, moodle_msq=moodle_msq, epoch=content_epoch(), sections=sections)
    elif source is not None:
        from click.core import ParameterSource

        given = [f"--{name.replace('_', '-')}" if name != "n" else "-n" for name in ("topics", "types", "difficulties", "n",
                                                                                   "seed")
                 if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]
        if given:
            raise InputError(f"the problems come from {source.name}: {', '.join(given)} cannot choose them", "--from")
        from drills.files import read_capped
        from drills.sheets.jsonfmt import SheetFormatError, sheet_from_json

        data = read_capped(source, FROM_MAX_BYTES, "--from")
        notes: list[str] = []
        try:
            sh = sheet_from_json(data, title=title, notes=notes, max_questions=MAX_QUESTIONS)
        except SheetFormatError as e:
            raise InputError(f"{source.name}: {e}", "--from") from None
        for note in notes:
            warn(f"{source.name}: {note}")
        sh.date = date if date is not None else sh.date
        sh.moodle_msq = moodle_msq
        sh.epoch = content_epoch(source)
    else:
        try:
            sel = select_problems(n, seed, topics=topics, types=types, difficulties=difficulties)
        except SelectionError as e:
            raise InputError(str(e)) from None
        for note in sel.notes:
            warn(note)
        args = {"topics": list(topics), "types": list(types), "difficulties": list(difficulties), "n": n}
        sh = Sheet(title=title or "qkv practice set", problems=sel.problems, seed=seed, arguments=args, date=date,
                   moodle_msq=moodle_msq, epoch=content_epoch())
    sh.anki_notes = anki_notes
    sh.moodle_cloze = moodle_cloze
    if fmt == "moodle":
        from drills.sheets.moodle import mark_mismatches

        for i, p, m in mark_mismatches(sh):
            warn(f"Q{i:02d} {p.id} imports worth {plural(m, 'mark')} in Moodle, not {p.marks}: a cloze question's marks are "
                 f"the sum of its boxes' whole-number weights; set its maximum mark to {p.marks} in the quiz, "
                 "or export with --moodle-cloze formulas (plugin qtype_formulas: exact marks)")
    try:
        files = outputs(sh, fmt, answers, output)
    except (ValueError, ArithmeticError, TypeError, AssertionError, RecursionError) as e:
        if source is None:
            raise  # the bank's own problems: a bug, shown as one
        # a value the reader let through and a format cannot hold: one line, never a traceback
        raise InputError(f"{source.name}: cannot be written as {fmt}: {type(e).__name__}: {str(e)[:120]}",
                         "--from") from None
    if to_stdout:
        write_stdout(files[output])
        return
    write_all(files)
    if as_json:
        emit_json({"format": fmt, "files": [str(p) for p in files], "total_marks": sh.total_marks,
                   "problems": [{"number": i, "id": p.id, "marks": p.marks, "type": p.type} for i, p in sh.numbered()]})
        return
    what = f"{plural(len(sh.problems), 'question')}, {plural(sh.total_marks, 'mark')}"
    for k, path in enumerate(files):
        emit(f"wrote {path} ({what}{', answers' if k == 1 else ''}; {fmt})")
