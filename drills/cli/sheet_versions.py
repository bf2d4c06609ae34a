"""``qkv sheet --versions N --paper FILE`` and ``--students ROSTER.csv`` (issue 41): a version of the
paper per student, each in the format asked for, and one key file for ``qkv grade``.

Files, for ``-o class.pdf``: ``class.V01.pdf`` … (the student's paper), ``class.V01.answers.pdf`` …
(its answer key and worked solutions; ``--answers`` is ``separate`` unless given) and
``class.key.json`` (every version's key, :mod:`drills.exam.versions`). Every file or none is written.
"""

from __future__ import annotations

from pathlib import Path

import click

from drills.output import InputError, emit, emit_json, warn
from solver.units import plural

ROSTER_MAX_BYTES = 4 * 2**20


def version_path(output: Path, vid: str) -> Path:
    """``class.pdf`` -> ``class.V07.pdf``."""
    return output.with_name(f"{output.stem}.{vid}{output.suffix}")


def key_path(output: Path) -> Path:
    """``class.pdf`` -> ``class.key.json``."""
    return output.with_name(f"{output.stem}.key.json")


def write_versions(ctx: click.Context, *, versions: int | None, roster: Path | None, paper_name: str | None,
                   source: Path | None, seed: int, title: str | None, fmt: str | None, answers: str,
                   date: str | None, output: Path, moodle_msq: str, moodle_cloze: str, anki_notes: str,
                   as_json: bool) -> None:
    from click.core import ParameterSource

    from drills.cli.sheet import format_for
    from drills.exam.blueprint import BlueprintError, load
    from drills.exam.versions import key_bytes, key_json, make_versions, read_roster
    from drills.files import check_output, is_stdout, read_capped, write_files
    from drills.sheets import Sheet, content_epoch, outputs, paper_sections, with_partial

    flag = "--students" if roster is not None else "--versions"
    if versions is not None and roster is not None:
        raise InputError("--students makes one version per student: give --versions or --students, not both",
                         "--versions")
    if paper_name is None:
        raise InputError("versions are versions of a paper: give --paper NAME|FILE.toml", flag)
    if source is not None:
        raise InputError("versions are drawn from the blueprint, not from a --from file", flag)
    given = [f"--{name}" if name != "n" else "-n" for name in ("topics", "types", "difficulties", "n")
             if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]
    if given:
        raise InputError(f"the blueprint chooses the questions: {', '.join(given)} cannot go with it", "--paper")
    if is_stdout(output):
        raise InputError("versions are several files: give a file name (class.pdf gives class.V01.pdf, …)", "-o")
    check_output(output, "-o")
    fmt = format_for(output, fmt)
    if not output.parent.exists():
        raise InputError(f"no such directory: {output.parent}", "-o")
    if date is not None:
        import datetime

        if date == "today":
            date = datetime.date.today().isoformat()
        try:
            datetime.date.fromisoformat(date)
        except ValueError:
            raise InputError(f"not a date (YYYY-MM-DD): {date!r}", "--date") from None
    if ctx.get_parameter_source("answers") != ParameterSource.COMMANDLINE:
        answers = "separate"  # a student's paper carries no key
    if ctx.get_parameter_source("anki_notes") != ParameterSource.COMMANDLINE:
        anki_notes = "per-sheet"  # each version's deck its own notes
    try:
        bp = load(paper_name)
        students = None
        if roster is not None:
            students = read_roster(read_capped(roster, ROSTER_MAX_BYTES, "--students"), roster.name)
        notes: list[str] = []
        made = make_versions(bp, seed, versions or 0, students, notes)
    except BlueprintError as e:
        raise InputError(str(e), flag if "roster" in str(e) or (roster and roster.name in str(e)) else "--paper") \
            from None
    for note in notes:
        warn(note)
    base_title = title or bp.title
    epoch = content_epoch()
    files: dict[Path, bytes] = {}
    per_version = []
    for v in made:
        label = f"version {v.id}"
        if v.student is not None:
            label += f" · {v.student.id}" + (f" {v.student.name}" if v.student.name else "")
        problems = list(v.problems)
        args = {"paper": bp.name, "minutes": bp.minutes, "n": len(problems), "version": v.id,
                "sections": [[sec, i + 1] for i, sec in enumerate(v.sections)],
                "marking": {t: str(f) for t, f in bp.penalties.items()}}
        if v.student is not None:
            args["student"] = {"id": v.student.id, "name": v.student.name}
        sh = Sheet(title=f"{base_title} · {label}", problems=problems, seed=seed, arguments=args, date=date,
                   moodle_msq=moodle_msq, epoch=epoch,
                   sections=with_partial(paper_sections(v.sections, problems, bp.penalties), problems,
                                               bp.penalties, bp.partial))
        sh.anki_notes = anki_notes
        sh.moodle_cloze = moodle_cloze
        got = outputs(sh, fmt, answers, version_path(output, v.id))
        files.update(got)
        per_version.append({"id": v.id, "student": None if v.student is None else v.student.id,
                            "files": [str(p) for p in got]})
    kp = key_path(output)
    if kp in files:
        raise InputError(f"{kp.name} would be both a version and the key file; choose another -o name", "-o")
    files[kp] = key_bytes(key_json(bp, seed, made, base_title))
    write_files(files, "-o")
    marks = sum(p.marks for p in made[0].problems)
    if as_json:
        emit_json({"format": fmt, "files": [str(p) for p in files], "key": str(kp), "versions": per_version,
                   "total_marks": marks, "questions": len(made[0].problems)})
        return
    span = per_version[0]["files"][0] + (f" … {per_version[-1]['files'][0]}" if len(per_version) > 1 else "")
    emit(f"wrote {plural(len(made), 'version')} of {bp.name} ({plural(len(made[0].problems), 'question')}, "
         f"{plural(marks, 'mark')}; {fmt}): {span}"
         + (", with their answer keys" if answers == "separate" else ""))
    emit(f"wrote {kp} (the key of every version: qkv grade {kp} ANSWERS.csv)")
