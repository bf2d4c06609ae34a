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
@click.option("--submit-unfinished", is_flag=True,
              help="Submit the exam left unfinished in this history (a killed qkv exam, a closed terminal) "
                   "with the answers it saved, and show its result, instead of resuming it.")
@data_dir_option
@click.pass_context
def exam(ctx: click.Context, minutes: float | None, n: int, topics: tuple[str, ...], seed: int | None,
         paper_name: str | None, plain: bool, as_json: bool, submit_unfinished: bool, data_dir: Path | None) -> None:
    """A timed GATE-style mock exam: 1- and 2-mark MCQ, MSQ and NAT questions, GATE's marking.

    Wrong MCQ answers cost 1/3 of their marks; MSQ (all or nothing) and NAT have no negative
    marks; unanswered questions cost nothing. A blueprint (--paper) may set its own marking and
    partial credit for MSQ (some right options and no wrong one: that share of the marks). At the prompt type an answer (saved, then the
    next question) or a command: next, prev, goto N, mark [answer], unmark, clear, palette,
    submit (it asks first: answer yes; `submit yes` does not ask). The countdown runs in the
    prompt, with warnings before zero; at zero the exam submits itself. The result, a review
    of every question followed by the score, is kept in your progress (`qkv stats`).

    Every answer, change, mark and clear is saved in your progress as it is given. An exam cut
    short (the terminal closed, the process killed) is resumed by the next `qkv exam`: the same
    paper, its answers and the time it had left (`--submit-unfinished` submits it instead).

    When stdin is not a terminal, the exam runs in plain text: each question is printed and
    one line is read per prompt (a script answers `submit` with a `yes` line, or sends
    `submit yes`); the timer still runs, and the end of input submits.
    """
    from drills.exam.paper import assemble_paper, default_minutes
    from drills.exam.session import Exam
    from drills.exam.view import PlainView, RichView
    from drills.output import InputError
    from drills.progress import ProgressStore

    seeded = seed is not None
    if seed is None:
        seed = secrets.randbelow(1_000_000)
    with ProgressStore.open(data_dir) as store:
        found = _unfinished(store)
        interactive = not plain and sys.stdin.isatty() and (sys.stdout.isatty() or as_json)
        view = RichView(err=as_json) if interactive else PlainView(err=as_json)
        if submit_unfinished:
            if found is None:
                raise InputError("no unfinished exam in this history to submit", "--submit-unfinished")
            session_id, sitting, lock = found
            with lock:
                view.echo(f"Submitting the unfinished exam {_described(sitting)}.")
                result = _finish(store, session_id, sitting, "submitted")
        elif found is not None:
            session_id, sitting, lock = found
            _refuse_other_paper(ctx, store, sitting)
            with lock:
                view.echo(f"Resuming the unfinished exam {_described(sitting)}.")
                view.intro(sitting, sitting.paper.seed, True)
                result = _sit(store, session_id, sitting, view)
        else:
            paper = paper_from_blueprint(ctx, paper_name, seed) if paper_name is not None else None
            paper = paper or assemble_paper(n, topics, seed)
            duration = 60.0 * (minutes if minutes is not None else default_minutes(paper))
            sitting = Exam(paper, duration)
            args = {"minutes": duration / 60, "n": len(paper), "topics": list(paper.topics), "seed": seed,
                    "problems": [p.id for p in paper.problems], **({"paper": paper.blueprint} if paper.blueprint else {})}
            session_id = store.start_session("exam", args=args)
            with _SittingLock(store.data_dir, session_id) as lock:
                lock.acquire()
                store.save_exam_state(session_id, sitting.state())
                view.intro(sitting, seed, seeded)
                result = _sit(store, session_id, sitting, view)
    view.show_result(result)
    if as_json:
        out = result.to_json()
        out["session_id"] = session_id
        emit_json(out)


def _described(sitting: object) -> str:
    e = sitting  # drills.exam.session.Exam
    answered = sum(q.response is not None for q in e.questions)
    marked = sum(q.marked for q in e.questions)
    from drills.exam.session import clock_text_short

    return (f"(seed {e.paper.seed}{', ' + e.paper.blueprint if e.paper.blueprint else ''}: {answered} of "
            f"{len(e.questions)} answered{f', {marked} marked for review' if marked else ''}, "
            f"{clock_text_short(e.remaining())} left)")


def _sit(store: object, session_id: str, sitting: object, view: object) -> object:
    """Sit the exam, saving its state after every line; SIGHUP and SIGTERM save it and end the
    process (the next ``qkv exam`` resumes it); the result is stored when it is submitted."""
    from drills.exam.view import LineReader, Stopped, run

    def save(e: object) -> None:
        store.save_exam_state(session_id, e.state())

    previous = _stop_on_signals()
    try:
        run(sitting, view, LineReader(sys.stdin), save=save)
        return _finish(store, session_id, sitting, None)
    except Stopped as s:
        _restore_signals(previous)
        said = ("its submission is saved: the next `qkv exam` finishes it" if sitting.over else
                "its answers are saved: `qkv exam` resumes it, `qkv exam --submit-unfinished` submits it")
        try:
            click.echo(f"qkv: the exam was stopped (signal {s.signum}); {said}", err=True)
        except OSError:
            pass  # the terminal is gone
        sys.exit(128 + s.signum)
    finally:
        _restore_signals(previous)


def _finish(store: object, session_id: str, sitting: object, reason: str | None) -> object:
    """Submit (when ``reason``), mark that the submission began, store every question, end the session."""
    from drills.exam.result import record

    result = sitting.submit(reason) if reason else sitting.result
    state = sitting.state()
    state["submitted"] = result.reason
    store.save_exam_state(session_id, state)
    record(store, session_id, result)
    return result


def _unfinished(store: object) -> tuple[str, object, object] | None:
    """The newest unfinished exam no running ``qkv exam`` holds, rebuilt: ``(session id, sitting, lock)``.

    One whose saved state says its submission had begun is submitted at once (its result stored);
    one whose time ran out while nobody sat it is submitted as timed out."""
    from drills.exam.session import Exam
    from drills.output import InputError, warn

    for session_id, _args, state in store.unfinished_exams():
        lock = _SittingLock(store.data_dir, session_id)
        if not lock.acquire():
            continue  # another qkv exam is sitting it now
        if session_id not in {sid for sid, _, _ in store.unfinished_exams()}:
            lock.release()  # submitted in the meantime
            continue
        try:
            sitting = Exam.resume(state)
        except ValueError as e:
            lock.release()
            raise InputError(f"the unfinished exam {session_id[:8]} cannot be resumed: {e}; it is kept in your "
                             "progress") from None
        if state.get("submitted"):
            with lock:
                result = _finish(store, session_id, sitting, str(state["submitted"]))
            warn(f"an exam whose submission was cut short has been submitted: {marks(result)}")
            continue
        return session_id, sitting, lock
    return None


def marks(result: object) -> str:
    from drills.exam.view import marks_text

    return f"score {marks_text(result.score)} / {result.max_score}"


def _refuse_other_paper(ctx: click.Context, store: object, sitting: object) -> None:
    """A paper option on the command line that differs from the unfinished exam's: one line, nothing changed."""
    from click.core import ParameterSource

    from drills.output import InputError

    p = sitting.paper
    differ = []
    given = {name: ctx.params[name] for name in ("n", "topics", "seed", "paper_name", "minutes")
             if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE}
    if "n" in given and given["n"] != len(p):
        differ.append("-n")
    if "topics" in given and tuple(dict.fromkeys(t for t in given["topics"] if t)) != tuple(p.topics):
        differ.append("--topic")
    if "seed" in given and given["seed"] != p.seed:
        differ.append("--seed")
    if "paper_name" in given and not _same_blueprint(given["paper_name"], p.blueprint):
        differ.append("--paper")
    if "minutes" in given and abs(given["minutes"] * 60 - sitting.duration_s) > 1e-6:
        differ.append("--minutes")
    if differ:
        raise InputError(f"an unfinished exam is saved in this history {_described(sitting)}, and {', '.join(differ)} "
                         "asks for another paper: `qkv exam` alone resumes it, `qkv exam --submit-unfinished` "
                         "submits it", differ[0])


def _same_blueprint(name: str, blueprint: str) -> bool:
    """Whether ``--paper NAME`` names the blueprint the unfinished exam's paper was drawn from."""
    from drills.exam.blueprint import BlueprintError, load

    if not blueprint:
        return False
    try:
        return load(name).name == blueprint
    except BlueprintError:
        return False


def _stop_on_signals() -> dict[int, object]:
    """SIGHUP and SIGTERM raise :class:`drills.exam.view.Stopped` in the main thread."""
    import signal
    import threading

    from drills.exam.view import Stopped

    if threading.current_thread() is not threading.main_thread():
        return {}

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    previous = {}
    for name in ("SIGHUP", "SIGTERM"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        previous[sig] = signal.getsignal(sig)
        if previous[sig] == signal.SIG_IGN:  # nohup: the student asked for the exam to outlive the terminal
            del previous[sig]
            continue
        signal.signal(sig, stop)
    return previous


def _restore_signals(previous: dict[int, object]) -> None:
    import signal

    for sig, handler in previous.items():
        signal.signal(sig, handler)


class _SittingLock:
    """Held while a ``qkv exam`` sits a session, so that a second ``qkv exam`` never resumes an
    exam still being sat (released by the system when the process dies, however it dies)."""

    def __init__(self, data_dir: Path, session_id: str):
        self.path = Path(data_dir) / f".exam-{session_id}.lock"
        self.fd: int | None = None

    def acquire(self) -> bool:
        import os

        try:
            import fcntl
        except ImportError:  # Windows: no lock; one exam at a time
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError:
            return True  # no lock file can be made (a read-only folder fails later with one line)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        import os

        if self.fd is not None:
            try:
                self.path.unlink()
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> _SittingLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


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
    return paper  # its partial credit (issue 41) is marked as qkv grade marks it (drills.exam.marking.paper_marks)
