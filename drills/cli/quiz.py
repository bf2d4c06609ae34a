"""``qkv quiz``: drill problems in the terminal, with spaced repetition.

A thin command: options are turned into :class:`drills.quiz.plan.QuizOptions`, the view is chosen
(:func:`drills.quiz.view.make_view`) and :func:`drills.quiz.session.run_quiz` does the rest. Heavy
modules are imported inside the function, so that ``qkv --help`` stays cheap.
"""

from __future__ import annotations

from pathlib import Path

import click

from drills.progress.paths import data_dir_option

PROBLEM_TYPES = ("mcq", "msq", "nat", "integer", "matrix")  # question_bank.problem.PROBLEM_TYPES
DIFFICULTIES = ("easy", "medium", "hard")


@click.command(name="quiz")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC",
              help="Only this topic (attention, counting, ...), family or item id (moe.active_params, 004.gate.q3), "
              "id prefix (004) or tag; repeatable (`qkv bank list` shows them).")
@click.option("--type", "type_", type=click.Choice(PROBLEM_TYPES), default=None, help="Only this problem type.")
@click.option("--difficulty", type=click.Choice(DIFFICULTIES), default=None, help="Only this difficulty.")
@click.option("-n", "--count", type=click.IntRange(1, 500), default=10, show_default=True,
              help="Number of questions.")
@click.option("--seed", type=int, default=None,
              help="Seed of the draw: the same seed on the same history asks the same problems.")
@click.option("--json", "as_json", is_flag=True, help="One JSON event per line (problem, answer, verdict, end).")
@click.option("--plain", is_flag=True, help="Plain text even in a terminal (no colour, no panels).")
@data_dir_option
def quiz(topics: tuple[str, ...], type_: str | None, difficulty: str | None, count: int, seed: int | None,
         as_json: bool, plain: bool, data_dir: Path | None) -> None:
    """Drill problems: due reviews first, then new ones; answers saved as you go.

    At the prompt: an answer (0.6, 3/5, 2^20, 537M, 4 GiB, sqrt(2)/2; a matrix as
    "0.6 0.4; 0.4 0.6"; options as b or a,c), or hint, skip, solution, another,
    report [note], quit, help. Ctrl-C ends the session; every answer given is kept (a
    multi-part problem left partway keeps the parts answered; the rest score 0 and it comes
    back for review). A right answer after a hint counts as a weaker recall: it comes back
    sooner.
    """
    from drills.progress import ProgressStore
    from drills.quiz.plan import QuizOptions
    from drills.quiz.session import run_quiz
    from drills.quiz.view import make_view

    view = make_view(as_json=as_json, plain=plain)
    opts = QuizOptions(topics=tuple(topics), type=type_, difficulty=difficulty, count=count, seed=seed)
    store = ProgressStore.open(data_dir)
    try:
        run_quiz(store, opts, view)
    finally:
        import gc

        gc.enable()  # on since the first question (drills.cli.LATE_GC); also when none was shown
        store.close()
