"""The timed GATE-style mock exam, independent of any terminal: paper, state, clock, marking.

- :func:`assemble_paper` draws a paper from the question bank, deterministic for a seed: a
  mix of 1-mark and 2-mark MCQ, MSQ and NAT questions (``integer`` problems go on a paper as
  NAT; ``matrix`` and multi-part problems never do, see :mod:`drills.exam.marking`), the
  1-mark questions first as on a GATE paper.
- :class:`Exam` holds the state of one sitting: the response to each question, marked for
  review, visited, the time spent on each question, and the clock. :meth:`Exam.handle` applies
  one line the student typed (an answer, or a command: :data:`COMMAND_HELP`);
  :meth:`Exam.submit` ends the exam (once) and marks it. The ``submit`` command asks first,
  as GATE's interface does ("Submit the exam now? 7 answered, 3 not answered ..."): ``yes``
  submits, anything else goes back; ``submit yes`` submits without asking (for scripts; the end
  of input submits too).
- :class:`ExamResult`: the score out of the maximum, marks lost to negative marking, and per
  question the key, the answer, the verdict (misconception included), marks and time.
- :func:`record` stores the sitting in the progress database (a session of mode ``exam`` and
  one attempt per question).

Answers are parsed by :mod:`drills.answers` (never evaluated) and graded by
:func:`question_bank.grading.grade`; this module knows no formula.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drills.answers import Answer, AnswerParseError, read_answer
from drills.exam.paper import (
    Paper,
)
from drills.exam.result import ExamResult, mark_exam

if TYPE_CHECKING:
    from question_bank.problem import Problem

__all__ = [
    "Response",
    "QuestionState",
    "Exam",
    "Outcome",
    "ExamCommand",
    "parse_exam_command",
    "PALETTE",
]


#: The palette statuses, as GATE shows them (and the legend's words).
PALETTE: dict[str, str] = {
    "not_visited": "Not visited",
    "not_answered": "Not answered",
    "answered": "Answered",
    "marked": "Marked for review",
    "answered_marked": "Answered & marked for review (will be evaluated)",
}


# --------------------------------------------------------------------------------------------
# the paper


# --------------------------------------------------------------------------------------------
# responses


#: An exam answer is the quiz's: the one reader (:func:`drills.answers.read_answer`) reads it and
#: converts it for the one judge, so the exam marks what the quiz would (an answer in bits for a
#: key in bytes is taken and marked wrong with the quiz's diagnosis, not refused with a hint).
Response = Answer


def parse_response(problem: Problem, text: str) -> Response:
    """Read ``text`` as an answer to ``problem``; raises :class:`AnswerParseError` (one line)."""
    return read_answer(problem, text)


# --------------------------------------------------------------------------------------------
# commands

COMMAND_HELP = (
    "an answer (saved, then the next question) | next / skip | prev | goto N | mark [answer] "
    "(mark for review, then next) | unmark | clear (erase the answer) | palette | submit (asks first; "
    "submit yes does not) | help"
)

_WORDS = {
    "next": "next", "skip": "next", "n": "next", "prev": "prev", "previous": "prev", "back": "prev",
    "p": "prev", "goto": "goto", "go": "goto", "g": "goto", "mark": "mark", "m": "mark", "review": "mark",
    "unmark": "unmark", "u": "unmark", "clear": "clear", "c": "clear", "erase": "clear",
    "submit": "submit", "s": "submit", "finish": "submit", "end": "submit", "quit": "submit",
    "exit": "submit", "q": "submit", "palette": "palette", "list": "palette", "status": "palette",
    "help": "help", "?": "help", "h": "help",
}
_BARE_SHORT = {"n", "p", "g", "m", "u", "c", "s", "q", "h"}  # single letters: only with a colon


CONFIRM_WORDS = frozenset({"y", "yes", "submit", "submit yes"})  # what answers "Submit the exam now?" with yes


def clock_text_short(seconds: float) -> str:
    """``mm:ss`` or ``h:mm:ss`` (rounded up), for messages."""
    s = max(0, int(-(-seconds // 1)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


@dataclass(frozen=True)
class ExamCommand:
    """``name``: next | prev | goto | mark | unmark | clear | submit | palette | help;
    ``arg``: the question number of ``goto``, the answer given with ``mark``."""

    name: str
    arg: str = ""


def parse_exam_command(text: str) -> ExamCommand | None:
    """The exam command in ``text``, or ``None`` when the line is an answer.

    Commands are whole words (``next``, ``goto 3``, ``mark b``) or a colon and a letter or word
    (``:n``, ``:g 3``); a bare letter is always an answer (option ``c``), and so is a bare
    number. ``#3`` goes to question 3. Raises :class:`AnswerParseError` for a command with a
    bad argument (``goto x``)."""
    raw = text.strip()
    if not raw:
        return None
    m = re.fullmatch(r"#\s*(\d+)", raw)
    if m:
        return ExamCommand("goto", m.group(1))
    head, _, rest = raw.partition(" ")
    word = head.lower()
    colon = word.startswith(":") and len(word) > 1
    if colon:
        word = word[1:]
    name = _WORDS.get(word)
    if name is None or (not colon and word in _BARE_SHORT):
        if colon:
            raise AnswerParseError(f"unknown command {head!r}; {COMMAND_HELP}")
        return None
    rest = rest.strip()
    if name == "goto":
        if not re.fullmatch(r"\d+", rest):
            raise AnswerParseError("goto needs a question number: goto 3")
        return ExamCommand("goto", rest)
    if name == "mark":
        return ExamCommand("mark", rest)
    if name == "submit" and rest.lower() in ("yes", "y", "now", "!"):
        return ExamCommand("submit", "yes")  # submit without the question (scripts)
    if rest:
        return None  # "next 3" is no command; the answer parser will say why it is no answer
    return ExamCommand(name)


# --------------------------------------------------------------------------------------------
# the sitting


@dataclass
class QuestionState:
    number: int
    problem: Problem
    response: Response | None = None
    marked: bool = False
    visited: bool = False
    seconds: float = 0.0
    changes: int = 0  # times the response was set, changed or cleared

    @property
    def status(self) -> str:
        """The palette status (a key of :data:`PALETTE`)."""
        if not self.visited:
            return "not_visited"
        if self.response is not None:
            return "answered_marked" if self.marked else "answered"
        return "marked" if self.marked else "not_answered"


@dataclass(frozen=True)
class Outcome:
    """What one line did: ``kind`` (answered | moved | marked | unmarked | cleared | palette |
    help | error | confirm (``submit`` asks first) | resumed (not confirmed) | submitted |
    expired), a message for the student, and whether the exam is over."""

    kind: str
    message: str = ""
    done: bool = False
    wrapped: bool = False  # "next" from the last question went back to question 1


class Exam:
    """One sitting of a paper, against a clock (``clock``: seconds, monotonic; injectable)."""

    def __init__(self, paper: Paper, duration_s: float, *, clock: Callable[[], float] = time.monotonic):
        if duration_s <= 0:
            raise ValueError("the exam needs a positive duration")
        self.paper = paper
        self.duration_s = float(duration_s)
        self.clock = clock
        self.questions = [QuestionState(i + 1, p) for i, p in enumerate(paper.problems)]
        self.current = 0
        self.started: float | None = None
        self._entered: float | None = None
        self._lock = threading.Lock()
        self.result: ExamResult | None = None
        self.confirming = False  # "submit" asked "Submit now?": the next line answers it

    # -- the clock --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the clock and show question 1."""
        if self.started is None:
            self.started = self.clock()
            self._entered = self.started
            self.questions[0].visited = True

    @property
    def deadline(self) -> float:
        if self.started is None:
            raise RuntimeError("the exam has not started")
        return self.started + self.duration_s

    def remaining(self) -> float:
        """Seconds left (0 when time is up)."""
        if self.started is None:
            return self.duration_s
        return max(0.0, self.deadline - self.clock())

    def expired(self) -> bool:
        return self.started is not None and self.clock() >= self.deadline

    @property
    def over(self) -> bool:
        return self.result is not None

    def _book_time(self, until: float | None = None) -> None:
        """Add the time since the current question was entered to it."""
        now = self.clock() if until is None else until
        if self._entered is not None:
            self.questions[self.current].seconds += max(0.0, now - self._entered)
        self._entered = now

    # -- moving and answering ---------------------------------------------------------------

    @property
    def question(self) -> QuestionState:
        return self.questions[self.current]

    def go(self, index: int) -> None:
        """Show question ``index`` (0-based)."""
        if not 0 <= index < len(self.questions):
            raise AnswerParseError(f"there are questions 1 to {len(self.questions)}")
        self._book_time()
        self.current = index
        self.questions[index].visited = True

    def next(self) -> bool:
        """Go to the next question; from the last one, back to question 1 (GATE's "Save & Next").
        Returns True when it wrapped around."""
        wrapped = self.current == len(self.questions) - 1
        self.go(0 if wrapped else self.current + 1)
        return wrapped

    def prev(self) -> None:
        self.go(max(0, self.current - 1))

    def answer(self, text: str) -> Response:
        """Save ``text`` as the current question's response (parsed; raises AnswerParseError)."""
        r = parse_response(self.question.problem, text)
        self.question.response = r
        self.question.changes += 1
        return r

    def clear(self) -> None:
        if self.question.response is not None:
            self.question.changes += 1
        self.question.response = None

    def palette(self) -> list[tuple[int, str]]:
        return [(q.number, q.status) for q in self.questions]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(PALETTE, 0)
        for q in self.questions:
            out[q.status] += 1
        return out

    def confirm_text(self) -> str:
        """What ``submit`` asks first (as GATE's interface does), with the palette's counts."""
        c = self.counts()
        answered = c["answered"] + c["answered_marked"]
        blank = len(self.questions) - answered
        marked = c["marked"] + c["answered_marked"]
        bits = [f"{answered} answered", f"{blank} not answered"] + ([f"{marked} marked for review"] if marked else [])
        return (f"Submit the exam now? {', '.join(bits)}; {clock_text_short(self.remaining())} left. "
                "Type yes to submit; anything else goes back to the exam.")

    def handle(self, line: str) -> Outcome:
        """Apply one line typed at the prompt (an answer or a command)."""
        if self.over:
            return Outcome("submitted", "The exam is over.", done=True)
        if self.expired():
            self.submit("time")
            return Outcome("expired", "Time is up: your answers have been submitted.", done=True)
        if self.confirming:
            self.confirming = False
            if line.strip().lower() in CONFIRM_WORDS:
                self.submit("submitted")
                return Outcome("submitted", done=True)
            if line.strip().lower() in ("", "n", "no"):
                return Outcome("resumed", "Not submitted: the exam goes on.")
            # anything else: not submitted, and the line is handled as usual (an answer, a command)
        try:
            cmd = parse_exam_command(line)
        except AnswerParseError as e:
            return Outcome("error", str(e))
        try:
            if cmd is None:
                if not line.strip():
                    return Outcome("error", "type an answer, or a command: " + COMMAND_HELP)
                r = self.answer(line)
                wrapped = self.next()
                return Outcome("answered", f"Saved: {_shown(r)}", wrapped=wrapped)
            if cmd.name == "next":
                return Outcome("moved", wrapped=self.next())
            if cmd.name == "prev":
                self.prev()
                return Outcome("moved")
            if cmd.name == "goto":
                self.go(int(cmd.arg) - 1)
                return Outcome("moved")
            if cmd.name == "mark":
                saved = ""
                if cmd.arg:
                    saved = f"Saved: {_shown(self.answer(cmd.arg))}; "
                self.question.marked = True
                n = self.question.number
                wrapped = self.next()
                return Outcome("marked", f"{saved}question {n} marked for review", wrapped=wrapped)
            if cmd.name == "unmark":
                self.question.marked = False
                return Outcome("unmarked", f"question {self.question.number} unmarked")
            if cmd.name == "clear":
                self.clear()
                return Outcome("cleared", f"answer to question {self.question.number} cleared")
            if cmd.name == "palette":
                return Outcome("palette")
            if cmd.name == "help":
                return Outcome("help", COMMAND_HELP)
            if cmd.name == "submit":
                if cmd.arg:  # "submit yes": no question asked (scripts)
                    self.submit("submitted")
                    return Outcome("submitted", done=True)
                self.confirming = True
                return Outcome("confirm", self.confirm_text())
        except AnswerParseError as e:
            return Outcome("error", str(e))
        raise AssertionError(f"unhandled command {cmd!r}")  # pragma: no cover

    # -- saving and resuming (issue 42) -------------------------------------------------------

    def used(self) -> float:
        """Seconds of the exam's time used so far (0 before the start)."""
        return self.duration_s - self.remaining() if self.started is not None else 0.0

    def state(self) -> dict[str, Any]:
        """Everything a restarted ``qkv exam`` needs to go on with this sitting: the paper (its
        problem ids, sections and marking), the time used, and per question the answer as typed,
        the review mark, visited, time spent and changes. Plain JSON."""
        now = self.clock()
        qs = []
        for i, q in enumerate(self.questions):
            seconds = q.seconds
            if i == self.current and self._entered is not None and self.result is None:
                seconds += max(0.0, min(now, self.deadline) - self._entered)
            qs.append({"answer": None if q.response is None else q.response.text, "marked": q.marked,
                       "visited": q.visited, "seconds": round(seconds, 3), "changes": q.changes})
        p = self.paper
        return {"version": 1, "duration_s": self.duration_s, "used_s": round(self.used(), 3),
                "current": self.current, "questions": qs,
                "paper": {"seed": p.seed, "topics": list(p.topics), "problems": [x.id for x in p.problems],
                          "sections": list(p.sections), "minutes": p.minutes, "blueprint": p.blueprint,
                          "title": p.title,
                          "penalties": None if p.penalties is None else {t: str(f) for t, f in p.penalties.items()},
                          "partial": list(p.partial)}}

    @classmethod
    def resume(cls, state: dict[str, Any], *, clock: Callable[[], float] = time.monotonic) -> Exam:
        """The sitting saved by :meth:`state`, its clock running again with the time it had left.
        Raises ``ValueError`` (one line) when the saved state cannot be read or its paper rebuilt."""
        from fractions import Fraction

        from question_bank import bank

        try:
            pj = state["paper"]
            ids = [str(i) for i in pj["problems"]]
            if not ids or len(ids) > 1000 or len(state["questions"]) != len(ids):
                raise ValueError("its questions do not match its paper")
            problems = []
            for i in ids:
                try:
                    problems.append(bank.problem(i))
                except Exception as e:  # noqa: BLE001 - a bank that no longer has it: said in one line
                    raise ValueError(f"question {i!r} cannot be rebuilt ({str(e)[:120]})") from None
            got = [p.id for p in problems]
            if got != ids:
                raise ValueError("the bank now builds other questions for its ids")
            pen = pj.get("penalties")
            # a sitting saved before the exam applied partial credit has no "partial": it goes on
            # marked all or nothing, as that exam said it would be
            partial = pj.get("partial") or []
            if not isinstance(partial, list) or any(t != "msq" for t in partial):
                raise ValueError(f"its partial credit cannot be read ({str(partial)[:60]})")
            paper = Paper(problems=tuple(problems), seed=int(pj["seed"]), topics=tuple(pj.get("topics") or ()),
                          sections=tuple(pj.get("sections") or ()), minutes=pj.get("minutes"),
                          penalties=None if pen is None else {t: Fraction(str(f)) for t, f in pen.items()},
                          blueprint=str(pj.get("blueprint") or ""), title=str(pj.get("title") or ""),
                          partial=tuple(dict.fromkeys(partial)))
            exam = cls(paper, float(state["duration_s"]), clock=clock)
            for q, saved in zip(exam.questions, state["questions"], strict=True):
                if saved.get("answer") is not None:
                    q.response = parse_response(q.problem, str(saved["answer"]))
                q.marked = bool(saved.get("marked"))
                q.visited = bool(saved.get("visited"))
                q.seconds = float(saved.get("seconds") or 0.0)
                q.changes = int(saved.get("changes") or 0)
            used = min(max(float(state.get("used_s") or 0.0), 0.0), exam.duration_s)
            current = int(state.get("current") or 0)
        except ValueError:
            raise
        except (KeyError, TypeError, AttributeError, AnswerParseError, ArithmeticError) as e:
            raise ValueError(f"its saved state cannot be read ({type(e).__name__}: {str(e)[:120]})") from None
        now = exam.clock()
        exam.started = now - used
        exam._entered = now
        exam.current = current if 0 <= current < len(exam.questions) else 0
        exam.questions[exam.current].visited = True
        return exam

    # -- the end ----------------------------------------------------------------------------

    def submit(self, reason: str = "submitted") -> ExamResult:
        """End the exam and mark it (once; later calls return the same result).

        ``reason``: ``submitted`` (by the student), ``time`` (the clock ran out: time is booked
        only up to the deadline) or ``end of input``."""
        with self._lock:
            if self.result is not None:
                return self.result
            if self.started is None:
                self.start()
            now = self.clock()
            end = min(now, self.deadline)
            self._book_time(end)
            self._entered = None
            self.result = mark_exam(self, reason, elapsed=end - self.started)
            return self.result


def _shown(r: Response) -> str:
    if hasattr(r.parsed, "letters"):
        return "(" + ") (".join(r.parsed.letters.split(",")) + ")"
    return r.text


# --------------------------------------------------------------------------------------------
# marking


# --------------------------------------------------------------------------------------------
# the progress database


