"""``qkv exam``: a timed GATE-style mock exam (thin: :mod:`drills.exam.session` does the work,
:mod:`drills.exam.view` the drawing)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import click

from drills.exam.paper import DEFAULT_N
from drills.output import emit_json
from drills.progress.paths import data_dir_option


@click.command()
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True, max=24 * 60), default=None,
              help="Time allowed (default: GATE's pace, 1.8 minutes per mark, rounded up).")
@click.option("-n", "n", type=click.IntRange(1, 100), default=DEFAULT_N, show_default=True,
              help="Number of questions.")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC",
              help="Only this topic (attention, counting, ...), family or item id (moe.active_params, 004.gate.q3), "
              "id prefix (004) or tag; repeatable (`qkv bank list` shows them).")
@click.option("--seed", type=int, default=None, help="The same seed gives the same paper (default: a new one).")
@click.option("--paper", "paper_name", default=None, metavar="NAME|FILE.toml",
              help="A full paper from a blueprint: a built-in one (gate: 65 questions, 100 marks, 180 minutes, "
                   "GATE's proportions; short: a fifth of it) or a blueprint file (sections, questions of each "
                   "type and mark, topics, minutes, marking). No -n or --topic with it.")
@click.option("--plain", is_flag=True, help="Plain text, one line per answer, even in a terminal.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the result as one JSON object on stdout (the exam itself goes to stderr).")
@data_dir_option
@click.pass_context
def exam(ctx: click.Context, minutes: float | None, n: int, topics: tuple[str, ...], seed: int | None,
         paper_name: str | None, plain: bool, as_json: bool, data_dir: Path | None) -> None:
    """A timed GATE-style mock exam: 1- and 2-mark MCQ, MSQ and NAT questions, GATE's marking.

    Wrong MCQ answers cost 1/3 of their marks; MSQ (all or nothing) and NAT have no negative
    marks; unanswered questions cost nothing. At the prompt type an answer (saved, then the
    next question) or a command: next, prev, goto N, mark [answer], unmark, clear, palette,
    submit (it asks first: answer yes; `submit yes` does not ask). The countdown runs in the
    prompt, with warnings before zero; at zero the exam submits itself. The result, a review
    of every question followed by the score, is kept in your progress (`qkv stats`).

    When stdin is not a terminal, the exam runs in plain text: each question is printed and
    one line is read per prompt (a script answers `submit` with a `yes` line, or sends
    `submit yes`); the timer still runs, and the end of input submits.
    """
    from drills.exam.paper import assemble_paper, default_minutes
    from drills.exam.result import record
    from drills.exam.session import Exam
    from drills.exam.view import LineReader, PlainView, RichView, run
    from drills.progress import ProgressStore

    seeded = seed is not None
    if seed is None:
        seed = secrets.randbelow(1_000_000)
    paper = None
    if paper_name is not None:
        paper = paper_from_blueprint(ctx, paper_name, seed)
    with ProgressStore.open(data_dir) as store:
        paper = paper or assemble_paper(n, topics, seed)
        duration = 60.0 * (minutes if minutes is not None else default_minutes(paper))
        sitting = Exam(paper, duration)
        interactive = not plain and sys.stdin.isatty() and (sys.stdout.isatty() or as_json)
        view = RichView(err=as_json) if interactive else PlainView(err=as_json)
        args = {"minutes": duration / 60, "n": len(paper), "topics": list(paper.topics), "seed": seed,
                "problems": [p.id for p in paper.problems], **({"paper": paper.blueprint} if paper.blueprint else {})}
        session_id = store.start_session("exam", args=args)
        view.intro(sitting, seed, seeded)
        result = run(sitting, view, LineReader(sys.stdin))
        record(store, session_id, result)
    view.show_result(result)
    if as_json:
        out = result.to_json()
        out["session_id"] = session_id
        emit_json(out)


def paper_from_blueprint(ctx: click.Context, name: str, seed: int) -> object:
    """The paper of blueprint ``name`` (built-in or a file) for ``seed``; -n and --topic are refused
    beside it (the blueprint says how many questions, and on what). One line on any error."""
    from click.core import ParameterSource

    from drills.exam.blueprint import BlueprintError, assemble, load
    from drills.output import InputError

    given = [flag for flag, param in (("-n", "n"), ("--topic", "topics"))
             if ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE]
    if given:
        raise InputError(f"the blueprint says how many questions and on what: {', '.join(given)} cannot go with it",
                         "--paper")
    try:
        bp = load(name)
        paper = assemble(bp, seed)
    except BlueprintError as e:
        raise InputError(str(e), "--paper") from None
    if bp.partial:  # issue 41: partial credit is qkv grade's (a class's paper); the exam marks as GATE does
        from drills.output import warn

        warn(f"{bp.name}: partial credit for {', '.join(t.upper() for t in bp.partial)} is applied by qkv grade; "
             "qkv exam marks them all or nothing")
    return paper
