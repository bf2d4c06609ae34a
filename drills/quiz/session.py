"""The quiz session, independent of how it is shown: what to ask, in which order, and what to keep.

:func:`plan` picks the problems of a session from the bank: review cards that are due first
(the longest overdue first), then items the student has never met (shuffled), then items met
before but not yet due (the soonest due first); then, if ``count`` is still not reached, more
variants of the families. Filters: ``topics`` (a topic, a dotted id prefix such as
``attention`` or ``004``, or a tag), ``type`` and ``difficulty``. The order is a function of
``seed`` and of the review cards in the database, so the same seed on the same history gives
the same problems.

:class:`Quiz` runs the session against a *view* (``drills.quiz.view``: rich terminal, plain
text, or JSON events), which shows things and reads lines. For each problem it presents it,
reads an answer, grades it (:mod:`question_bank.grading`), records it in the progress store
(one transaction per answer, before the verdict is shown, so an answer on screen is an answer
on disk) and shows the verdict. Multi-part problems are asked part by part and graded with
follow-through; a problem's score is the mean over its parts (parts carry no marks of their own),
and it earns that fraction of its marks. Skipping (or revealing) at a later part scores that part
and the ones after it 0 while the parts already answered keep their credit; the review is then
Again. Leaving a problem after some of its parts (``quit``, ``another``, Ctrl-C, end of input) is
the same as a skip there (one row for the part on screen with ``extra.action`` naming how it was
left; the summary counts it as ``unfinished``). The summary, the stored rows (``extra.problem_score`` on the problem's last row), the JSON
events (``problem_score``, ``marks_earned``) and the header ("score 2.5/4 marks") agree. An answer
that cannot be read, or a value the grader cannot use (a matrix of
the wrong shape), gets a one-line message and is asked again; nothing is recorded for it.

A right answer given after a ``hint`` keeps its score but is rated Hard at most in the schedule
(a weaker recall: it comes back sooner than an unaided one); the verdict and the summary say so
(``Summary.hinted``).

After a problem's last answer, when it is not all right, the view shows the worked solution with
the verdict; a terminal view shows it first, so that the verdict and the problem's score stay on
screen at the next prompt (80×24 included).

Commands at the prompt (``drills.answers.parse_command``): ``hint``, ``skip``, ``solution``
(show the worked solution; the problem counts as not known), ``another`` (a fresh variant of
the same family, nothing recorded), ``report [note]`` (dispute a key: the problem on screen, or
at the pause after a verdict in a terminal the problem just judged; ``report last [note]``
reports the previous problem, the one whose verdict was shown last; recorded with its seed and
the answers given), ``quit`` and ``help``. Plain and terminal mode agree: piped input has no
pause, so a ``report`` typed at a new problem's first prompt is about that new problem.

Speed. The first problem must be on screen fast, and most generators use the SymPy path of the
solver (SymPy takes the better part of a second to import). So :meth:`ProblemSource.start`
looks, among the first few problems of the session's first group (due, else new), for one whose
generation needs none of :data:`SLOW_MODULES` (tried with an import guard that stops such an
import), moves it to the front, and the next problem is generated in a background thread while
the student reads and answers. The set of problems and the group order do not change.
Curated items are listed from their TOML files without building them (building one runs its
computations); only the items asked are built.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from drills.progress.schema import ProgressError
from drills.quiz.plan import SEED_RANGE, Catalogue, Pick, QuizOptions, plan
from drills.quiz.source import (
    ProblemSource,
)

if TYPE_CHECKING:
    from drills.answers import Command
    from drills.progress import ProgressStore
    from question_bank.grading import Verdict
    from question_bank.problem import Part, Problem

__all__ = ["Quiz", "Summary", "run_quiz"]

CHOICE_TYPES = ("mcq", "msq")


# --------------------------------------------------------------------------------------------
# what to ask


# --------------------------------------------------------------------------------------------
# generating the problems: the first fast, the next in the background


# --------------------------------------------------------------------------------------------
# answers


def _expected_text(target: Problem | Part, problem: Problem) -> str:
    from question_bank.grading import answer_text

    return answer_text(target.key, problem.options_text or None)


# --------------------------------------------------------------------------------------------
# the session


@dataclass
class _Outcome:
    action: str  # "answered" | "skip" | "solution" | "another" | "quit" | "eof"
    text: str | None = None


@dataclass
class Summary:
    session_id: str
    seed: int
    asked: int = 0  # problems shown and finished (answered, skipped or revealed)
    answered: int = 0
    correct: int = 0
    score: float = 0.0  # sum over problems of each problem's score in [0, 1] (mean over its parts)
    marks: float = 0.0  # marks earned: sum of score x the problem's marks (GATE counts marks)
    max_marks: float = 0.0  # marks of the problems asked
    skipped: int = 0
    unfinished: int = 0  # multi-part problems left partway (quit, another, Ctrl-C, end of input)
    revealed: int = 0
    hinted: int = 0  # problems answered right after a hint (rated Hard at most: they come back sooner)
    reports: int = 0
    seconds: float = 0.0
    misconceptions: Counter = field(default_factory=Counter)  # (id, label) -> count
    due_next: list[Any] = field(default_factory=list)  # DueItem
    interrupted: bool = False
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id, "seed": self.seed, "asked": self.asked, "answered": self.answered,
            "correct": self.correct, "score": self.score, "marks": self.marks, "max_marks": self.max_marks,
            "skipped": self.skipped, "unfinished": self.unfinished, "revealed": self.revealed, "hinted": self.hinted,
            "reports": self.reports, "seconds": self.seconds, "interrupted": self.interrupted,
            "problems": list(self.problems),
            "misconceptions": [{"id": i, "label": lab, "count": n} for (i, lab), n in self.misconceptions.most_common()],
            "due_next": [d.to_json() for d in self.due_next],
        }


class Quiz:
    """One quiz session. ``view`` shows and reads (``drills.quiz.view``); ``store`` is a
    :class:`drills.progress.ProgressStore`; ``clock`` is monotonic seconds (tests pass a fake)."""

    def __init__(self, store: ProgressStore, catalogue: Catalogue, source: ProblemSource, view: Any, opts: QuizOptions,
                 *, seed: int, clock: Any = time.monotonic):
        self.store = store
        self.catalogue = catalogue
        self.source = source
        self.view = view
        self.opts = opts
        self.seed = seed
        self.clock = clock
        self.rng = random.Random(f"qkv-quiz-another:{seed}")
        self.session_id = ""
        self.summary: Summary | None = None
        self._last: tuple[Any, dict[str, str]] | None = None  # last graded problem and its answers
        self._started = 0.0
        self._warm = False

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> Summary:
        self._started = self.clock()
        self.session_id = self.store.start_session("quiz", args={**self.opts.to_json(), "seed": self.seed})
        s = self.summary = Summary(self.session_id, self.seed)
        try:
            self.source.start()
            self.view.start({"count": len(self.source), "seed": self.seed, "session_id": self.session_id,
                             "due": sum(p.due for p in self.source.picks), "options": self.opts.to_json()})
            total = len(self.source)
            for i in range(total):
                problem = self.source.get(i)
                if problem is None:
                    self.view.message(f"skipped a problem that could not be built ({self.source.errors.get(i)})")
                    continue
                action = self._problem(problem, i, total, last=i == total - 1)
                if action in ("quit", "eof"):
                    break
        except KeyboardInterrupt:
            s.interrupted = True
        except ProgressError:
            # the store cannot take the answer (a full disk, a read-only file): what was saved
            # stays saved; close the session if the store still can, then the one-line error
            self._finish(quiet=True)
            raise
        self._finish()
        return s

    def _finish(self, quiet: bool = False) -> None:
        """Close the session in the store and show the summary (``quiet``: after a store error,
        close it if the store still can, and show nothing more)."""
        s = self.summary
        assert s is not None
        s.seconds = self.clock() - self._started
        try:
            from drills.progress.scheduling import utc

            s.due_next = self.store.due_items(utc() + timedelta(days=7), limit=5)
            # in marks, like the summary and like an exam's session (the score in problems is in the summary)
            self.store.end_session(self.session_id, score=s.marks, max_score=float(s.max_marks),
                                   summary=s.to_json())
        except KeyboardInterrupt:
            s.interrupted = True
        except ProgressError:
            if not quiet:
                raise
        if not quiet:
            self.view.end(s)

    def _header(self, i: int, total: int) -> dict[str, Any]:
        s = self.summary
        return {"index": i + 1, "total": total, "score": s.score, "asked": s.asked,
                "marks_scored": s.marks, "max_marks": s.max_marks}

    def _problem(self, problem: Problem, i: int, total: int, *, last: bool) -> str:
        """Ask one problem (all its parts); returns the action that ended it."""
        while True:
            self.view.problem(problem, self._header(i, total))
            # only now (the problem is on screen) build the next one and warm up FSRS, in the
            # background, while the student reads
            self.source.prefetch(i + 1)
            if not self._warm:
                self._warm = True
                _warm_up()
                gc.enable()  # held off by drills.cli.main for the start-up: the first question is on screen
            result = self._ask_problem(problem)
            if result == "another":
                fresh = self._another(problem)
                if fresh is not None:
                    problem = fresh
                continue
            if result in ("answered", "skip", "solution"):
                self.view.errata(problem)
                if self.view.interactive:
                    return self._pause(problem, last=last)
            return result

    def _another(self, problem: Problem) -> Any:
        if not problem.family:
            self.view.message("This is a curated item: it has no other variants ('skip' moves on).")
            return None
        pick = Pick("family", problem.family, self.rng.randrange(SEED_RANGE), problem.difficulty)
        try:
            return self.catalogue.build(pick, self.opts.type)
        except Exception as e:  # noqa: BLE001
            self.view.message(f"could not make another variant: {e}")
            return None

    def _pause(self, problem: Problem, *, last: bool) -> str:
        """After a verdict (interactive only): Enter goes on; solution, report, quit work here."""
        from drills.answers import AnswerParseError, parse_command
        while True:
            try:
                line = self.view.read("pause", last=last)
            except EOFError:
                return "eof"
            text = line.strip()
            if not text:
                return "answered"
            try:
                cmd = parse_command(text, letters_are_answers=False)
            except AnswerParseError as e:
                self.view.invalid(text, str(e))
                continue
            if cmd is None:
                self.view.invalid(text, "press Enter for the next question (or: solution, report [note], quit)")
            elif cmd.name == "quit":
                return "quit"
            elif cmd.name == "solution":
                self.view.solution(problem)
            elif cmd.name == "report":
                # at the pause the problem on screen is the one just judged ('last' is the same one)
                _, note = _report_target(cmd)
                texts = self._last[1] if self._last is not None and self._last[0] is problem else {}
                self._report(note, problem, texts)
            elif cmd.name == "help":
                self.view.message("Enter: next question · solution · report [note] (this problem) · quit")
            else:
                self.view.message(f"'{cmd.name}' works while a question is open; press Enter to go on")

    def _ask_problem(self, problem: Problem) -> str:
        targets = problem.parts or [problem]
        answers: dict[str, Any] = {}
        written: dict[str, str] = {}
        texts: dict[str, str] = {}
        verdicts: dict[str, Verdict] = {}
        hints = [0]
        problem_start = self.clock()
        try:
            return self._ask_parts(problem, targets, answers, written, texts, verdicts, hints, problem_start)
        except KeyboardInterrupt:
            # Ctrl-C after some parts of a multi-part problem: they count, as for a skip
            if verdicts and len(verdicts) < len(targets):
                target = targets[len(verdicts)]
                self._give_up(problem, target, target.label, "interrupt", verdicts, len(targets), problem_start)
            raise

    def _ask_parts(self, problem: Problem, targets: list[Any], answers: dict[str, Any], written: dict[str, str],
                   texts: dict[str, str], verdicts: dict[str, Verdict], hints: list[int], problem_start: float) -> str:
        from drills.answers import AnswerParseError, read_answer
        s = self.summary
        for k, target in enumerate(targets):
            label = target.label if problem.parts else None
            if label is not None:
                self.view.part(problem, target, k, len(targets))
            start = self.clock()
            while True:
                out = self._read_answer(problem, target, label, hints, texts)
                if out.action != "answered":
                    break
                try:
                    ans = read_answer(target, out.text or "", n_options=len(problem.options) or None)
                except AnswerParseError as e:
                    msg = str(e)
                    if "expected" not in msg and not (target.type in CHOICE_TYPES and "option" in msg):
                        msg = f"{msg}; {_expected_for(target, problem)}"
                    self.view.invalid(out.text or "", msg)
                    continue
                parsed, value, wtext = ans.parsed, ans.value, ans.written
                verdict = self._grade(problem, target, label, value, wtext, answers, written, ans.unit)
                if verdict.invalid:
                    self.view.invalid(out.text or "", verdict.message)
                    continue
                break
            if out.action != "answered":
                if out.action in ("skip", "solution") or verdicts:
                    # quit, another or end of input after some parts: those parts count, as for a skip
                    self._give_up(problem, target, label, out.action, verdicts, len(targets), problem_start)
                    self._last = (problem, dict(texts))  # its answer was shown: 'report' may follow
                return out.action
            time_ms = int(round((self.clock() - start) * 1000))
            texts[label or ""] = out.text or ""
            answers[label or ""] = value
            if wtext is not None:
                written[label or ""] = wtext
            verdicts[label or ""] = verdict
            final = k == len(targets) - 1
            rating = None
            all_right = all(v.correct for v in verdicts.values())
            if final:
                from drills.progress.scheduling import rating_for

                # the whole problem's time for a multi-part one; a hint makes a right answer Hard
                ms = int(round((self.clock() - problem_start) * 1000)) if problem.parts else time_ms
                rating = rating_for(all_right, ms, problem.type, problem.marks, hints=hints[0])
            problem_score = problem_score_of(verdicts, len(targets)) if final else None
            m = verdict.misconception
            recorded = self.store.record_attempt(
                problem_id=problem.id, session_id=self.session_id, family=problem.family, seed=problem.seed,
                topic=problem.topic, type=target.type, part=label, answer=out.text, parsed=parsed,
                correct=verdict.correct, score=verdict.score, marks=problem.marks, time_ms=time_ms,
                misconception=m.id if m else None, misconception_label=m.label if m else None,
                review=final, rating=rating,
                extra={"status": verdict.status, "hints": hints[0], "difficulty": problem.difficulty,
                       "follow_through": verdict.follow_through,
                       **({"problem_score": problem_score} if final else {})})
            if m is not None:
                s.misconceptions[(m.id, m.label)] += 1
            self.view.answer(problem, label, out.text or "", parsed)
            # after the last answer of a problem not all right the worked solution comes with the
            # verdict; a terminal view shows it first, so that the verdict and the problem's score
            # are what is on screen at the next prompt
            self.view.verdict(problem, target, verdict, text=out.text or "", parsed=parsed, value=value,
                              expected=_expected_text(target, problem), recorded=recorded, time_ms=time_ms,
                              problem_score=problem_score, solution=final and not all_right,
                              hinted=final and all_right and hints[0] > 0)
            if final:
                self._last = (problem, dict(texts))
                self._count(problem, problem_score)
                s.answered += 1
                s.correct += int(all_right)
                if all_right and hints[0]:
                    s.hinted += 1
        return "answered"

    def _grade(self, problem: Problem, target: Problem | Part, label: str | None, value: Any, wtext: str | None,
               answers: dict[str, Any], written: dict[str, str], unit: Any = None) -> Any:
        from question_bank.grading import grade, grade_parts

        if label is None:
            return grade(problem, value, written=wtext, unit=unit)
        trial = {**answers, label: value}
        wr = {**written, **({label: wtext} if wtext is not None else {})}
        return grade_parts(problem, trial, written=wr, units={label: unit} if unit is not None else None)[label]

    def _count(self, problem: Problem, problem_score: float) -> None:
        """Add a finished problem to the summary: its score in [0, 1] and its marks."""
        s = self.summary
        s.asked += 1
        s.score += problem_score
        s.marks += problem_score * problem.marks
        s.max_marks += problem.marks
        s.problems.append(problem.id)

    def _give_up(self, problem: Problem, target: Problem | Part, label: str | None, action: str, verdicts: dict[str, Verdict],
                 n_parts: int, problem_start: float) -> None:
        """Skip (or reveal) the rest of a problem. This part and the parts after it score 0;
        the parts already answered keep their credit (the problem's score is the mean over all
        its parts), and the review is Again, since the problem was not known in full.

        Leaving a multi-part problem after some parts (``quit``, ``another``, end of input, or
        ``interrupt`` for Ctrl-C) is the same as a skip at the part on screen, counted in the
        summary as ``unfinished`` instead of ``skipped``."""
        s = self.summary
        problem_score = problem_score_of(verdicts, n_parts)
        self.store.record_attempt(
            problem_id=problem.id, session_id=self.session_id, family=problem.family, seed=problem.seed,
            topic=problem.topic, type=target.type, part=label, answer=None, correct=None, score=0.0,
            marks=problem.marks, time_ms=int(round((self.clock() - problem_start) * 1000)), review=True,
            extra={"action": action, "difficulty": problem.difficulty, "problem_score": problem_score})
        self._count(problem, problem_score)
        if action == "skip":
            s.skipped += 1
            self.view.skipped(problem, _expected_text(problem, problem), label=label,
                              problem_score=problem_score if verdicts else None)
        elif action != "solution":
            s.unfinished += 1
            self.view.skipped(problem, _expected_text(problem, problem), label=label,
                              problem_score=problem_score, action=action)
        else:
            s.revealed += 1
            self.view.solution(problem, problem_score=problem_score if verdicts else None)

    def _read_answer(self, problem: Problem, target: Problem | Part, label: str | None, hints: list[int],
                     texts: dict[str, str]) -> _Outcome:
        """Read lines until an answer (a whole matrix, maybe row by row) or a command that ends
        the problem; hint, help and report are handled here."""
        from drills.answers import AnswerParseError, MatrixReader, key_shape, parse_command
        reader = MatrixReader(key_shape(target.key)) if target.type == "matrix" else None
        choice = target.type in CHOICE_TYPES
        while True:
            kind = "row" if reader is not None and reader.rows else "answer"
            try:
                line = self.view.read(kind, row=reader.prompt() if reader is not None and reader.rows else None)
            except EOFError:
                return _Outcome("eof")
            text = line.strip()
            try:
                cmd = parse_command(text, letters_are_answers=choice)
            except AnswerParseError as e:
                self.view.invalid(text, str(e))
                continue
            if cmd is not None:
                done = self._command(cmd, problem, hints, texts)
                if done is not None:
                    return _Outcome(done)
                continue
            if reader is None:
                if not text:
                    self.view.invalid(text, _expected_for(target, problem))
                    continue
                return _Outcome("answered", text)
            try:
                complete = reader.feed(line)
            except AnswerParseError as e:
                self.view.invalid(text, str(e))
                continue
            if complete:
                joined = "; ".join(reader.lines) if len(reader.lines) > 1 else (reader.lines[0] if reader.lines else text)
                return _Outcome("answered", joined)

    def _command(self, cmd: Command, problem: Problem, hints: list[int], texts: dict[str, str]) -> str | None:
        from drills.answers import COMMAND_HELP, REPORT_HELP
        if cmd.name == "hint":
            if hints[0] < len(problem.hints):
                from question_bank.render import latex_to_text

                self.view.hint(latex_to_text(problem.hints[hints[0]]), hints[0] + 1, len(problem.hints))
                hints[0] += 1
            else:
                self.view.message("No more hints for this one." if problem.hints else "No hint for this one.")
            return None
        if cmd.name == "help":
            self.view.message(f"{COMMAND_HELP}\n{REPORT_HELP}")
            return None
        if cmd.name == "another" and not problem.family:
            # nothing to swap in: stay at this prompt (going back would ask part (a) again)
            self.view.message("This is a curated item: it has no other variants ('skip' moves on).")
            return None
        if cmd.name == "report":
            # the problem on screen, in a terminal and in plain mode alike; 'report last' the
            # previous one (the last verdict shown)
            last, note = _report_target(cmd)
            if not last:
                self._report(note, problem, texts)
            elif self._last is None:
                self.view.message("No earlier problem to report ('report' alone reports this one).")
            else:
                self._report(note, *self._last)
            return None
        return cmd.name  # skip, solution, another, quit

    def _report(self, note: str, problem: Problem, texts: dict[str, str]) -> None:
        answer = "; ".join(f"({k}) {v}" if k else v for k, v in texts.items()) or None
        expected = _expected_text(problem, problem)
        uid = self.store.report(problem.id, seed=problem.seed, family=problem.family, answer=answer,
                                key=expected, note=note, session_id=self.session_id,
                                extra={"difficulty": problem.difficulty, "source": problem.source})
        self.summary.reports += 1
        self.view.reported(problem, answer, uid, self.store.data_dir)


def _report_target(cmd: Command) -> tuple[bool, str]:
    """``(previous, note)`` of a report command: ``report last [note]`` is about the previous
    problem; anything else after ``report`` is the note."""
    head, _, rest = cmd.arg.partition(" ")
    if head.lower() in ("last", "previous", "prev"):
        return True, rest.strip()
    return False, cmd.arg


def problem_score_of(verdicts: dict[str, Verdict], n_parts: int) -> float:
    """A problem's score in [0, 1]: the mean of its parts' scores, a part not answered (skipped,
    or after a skip) counting 0. Parts weigh the same (they carry no marks of their own); the
    marks earned are this times the problem's marks."""
    return sum(v.score for v in verdicts.values()) / max(n_parts, 1)


def _expected_for(target: Problem | Part, problem: Problem) -> str:
    from drills.answers import key_shape
    if target.type == "mcq":
        return f"expected one option letter, a to {chr(ord('a') + max(len(problem.options), 1) - 1)}"
    if target.type == "msq":
        return "expected one or more option letters, e.g. a,c"
    if target.type == "matrix":
        shape = key_shape(target.key)
        return f"expected a {shape[0]}×{shape[1]} matrix, e.g. rows separated by ';'" if shape else "expected a matrix"
    return "expected a number, e.g. 0.6, 3/5, 2^20 or 1.2G"


def _warm_up() -> None:
    """Import what reading, grading and recording the first answer need (the answer parser,
    FSRS) in the background, while the student reads the first problem."""

    def work() -> None:
        try:
            import fsrs  # noqa: F401

            import drills.answers  # noqa: F401
            import question_bank.grading  # noqa: F401
        except Exception:  # noqa: BLE001 - imported again, with its error, when needed
            pass

    threading.Thread(target=work, name="qkv-warm-up", daemon=True).start()


# --------------------------------------------------------------------------------------------
# entry point for the command


def run_quiz(store: ProgressStore, opts: QuizOptions, view: Any, *, catalogue: Catalogue | None = None) -> Summary:
    """Plan a session with ``opts`` on ``store``'s history and run it through ``view``."""
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(SEED_RANGE)
    opts = QuizOptions(opts.topics, opts.type, opts.difficulty, opts.count, seed)
    catalogue = catalogue or Catalogue.load()
    picks = plan(catalogue, store, opts)
    source = ProblemSource(catalogue, picks, opts.type)
    return Quiz(store, catalogue, source, view, opts, seed=seed).run()
