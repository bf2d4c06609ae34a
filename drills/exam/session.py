"""The timed GATE-style mock exam, independent of any terminal: paper, state, clock, marking.

- :func:`assemble_paper` draws a paper from the question bank, deterministic for a seed: a
  mix of 1-mark and 2-mark MCQ, MSQ and NAT questions (``integer`` problems go on a paper as
  NAT; ``matrix`` and multi-part problems never do, see :mod:`drills.exam.marking`), the
  1-mark questions first as on a GATE paper.
- :class:`Exam` holds the state of one sitting: the response to each question, marked for
  review, visited, the time spent on each question, and the clock. :meth:`Exam.handle` applies
  one line the student typed (an answer, or a command: :data:`COMMAND_HELP`);
  :meth:`Exam.submit` ends the exam (once) and marks it.
- :class:`ExamResult`: the score out of the maximum, marks lost to negative marking, and per
  question the key, the answer, the verdict (misconception included), marks and time.
- :func:`record` stores the sitting in the progress database (a session of mode ``exam`` and
  one attempt per question).

Answers are parsed by :mod:`drills.answers` (never evaluated) and graded by
:func:`question_bank.grading.grade`; this module knows no formula.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from drills.answers import Answer, AnswerParseError, read_answer
from drills.exam.marking import PAPER_TYPES, NotOnPaper, mark, paper_type

if TYPE_CHECKING:
    from question_bank.problem import Problem

__all__ = [
    "DEFAULT_N",
    "MINUTES_PER_MARK",
    "Paper",
    "assemble_paper",
    "default_minutes",
    "Response",
    "QuestionState",
    "Exam",
    "Outcome",
    "ExamCommand",
    "parse_exam_command",
    "QuestionResult",
    "ExamResult",
    "record",
    "PALETTE",
]

DEFAULT_N = 10
#: GATE's pace: 100 marks in 180 minutes.
MINUTES_PER_MARK = 1.8

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


@dataclass(frozen=True)
class Paper:
    """The questions of one exam, in order (1-mark questions first), and how they were drawn."""

    problems: tuple[Any, ...]  # question_bank.problem.Problem
    seed: int
    topics: tuple[str, ...] = ()

    @property
    def max_marks(self) -> int:
        return sum(p.marks for p in self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "topics": list(self.topics), "max_marks": self.max_marks,
                "problems": [{"number": i + 1, "id": p.id, "type": p.type, "paper_type": paper_type(p.type),
                              "marks": p.marks, "topic": p.topic} for i, p in enumerate(self.problems)]}


def on_paper(problem: Any) -> bool:
    """True when a problem can be an exam question: a GATE type (or integer), 1 or 2 marks,
    a single answer (no parts)."""
    return problem.type in PAPER_TYPES and problem.marks in (1, 2) and not problem.parts


def default_minutes(paper: Paper) -> float:
    """GATE's pace: :data:`MINUTES_PER_MARK` minutes per mark, rounded up to a whole minute."""
    return float(math.ceil(MINUTES_PER_MARK * paper.max_marks))


@dataclass
class _Candidate:
    ref: str  # family id or curated item id
    difficulty: str | None
    seed: int
    problem: Any = None  # generated on first use
    failed: bool = False


def _candidates(topics: Sequence[str], rng: random.Random) -> list[_Candidate]:
    from question_bank import bank

    seen: dict[str, Any] = {}
    kind = None
    try:
        bank.entries(kind="curated")
    except Exception as e:  # noqa: BLE001 - a malformed data file: sit the exam on the families, as the quiz does
        if type(e).__name__ != "CuratedError":
            raise
        from drills.output import warn

        warn(f"curated items left out: {e}")
        kind = "family"
    for t in (topics or (None,)):
        for e in bank.entries(topic=t, kind=kind):
            if set(e.types) & set(PAPER_TYPES):
                seen.setdefault(e.id, e)
    out: list[_Candidate] = []
    for e in seen.values():
        if e.kind == "family":
            out.extend(_Candidate(e.id, d, rng.randrange(1_000_000)) for d in e.difficulties)
        else:
            out.append(_Candidate(e.id, None, 0))
    return out


def _materialise(c: _Candidate) -> Any:
    from question_bank import bank

    if c.problem is None and not c.failed:
        try:
            c.problem = bank.problem(c.ref, seed=c.seed, difficulty=c.difficulty) if c.difficulty else bank.problem(c.ref)
        except Exception:  # noqa: BLE001 - a family that cannot generate this draw is simply not used
            c.failed = True
        else:
            if not on_paper(c.problem):
                c.failed = True
    return None if c.failed else c.problem


def assemble_paper(n: int = DEFAULT_N, topics: Iterable[str] = (), seed: int = 0) -> Paper:
    """A paper of ``n`` questions from the bank (topics: any of them; none = all), the same for
    the same arguments.

    Every family and curated item that can produce a GATE-type question is a candidate (a
    family once per difficulty, with a seed drawn from the exam's seed); candidates are
    shuffled with ``random.Random("qkv-exam:<seed>")`` and taken in that order, at most one
    question per family or item, aiming at half 2-mark questions (``n // 2``) and no question
    type (MCQ, MSQ, NAT) above ``⌈n/3⌉ + 1`` while the pool allows, then filling up with
    whatever is left. Raises ``drills.output.InputError`` when fewer than ``n`` match."""
    from drills.output import InputError

    topics = tuple(dict.fromkeys(t for t in topics if t))
    if n < 1:
        raise InputError("an exam needs at least one question", "-n")
    rng = random.Random(f"qkv-exam:{seed}")
    cands = _candidates(topics, rng)
    rng.shuffle(cands)
    want = {2: n // 2, 1: n - n // 2}
    type_cap = math.ceil(n / 3) + 1
    chosen: list[Any] = []
    used: set[str] = set()
    by_marks = {1: 0, 2: 0}
    by_type: dict[str, int] = {}

    def take(strict_marks: bool, strict_types: bool) -> None:
        for c in cands:
            if len(chosen) >= n:
                return
            if c.ref in used:
                continue
            p = _materialise(c)
            if p is None:
                continue
            t = paper_type(p.type)
            if strict_marks and by_marks[p.marks] >= want[p.marks]:
                continue
            if strict_types and by_type.get(t, 0) >= type_cap:
                continue
            chosen.append(p)
            used.add(c.ref)
            by_marks[p.marks] += 1
            by_type[t] = by_type.get(t, 0) + 1

    take(True, True)
    take(True, False)
    take(False, False)
    if len(chosen) < n:
        where = f" on {', '.join(topics)}" if topics else ""
        raise InputError(f"the bank has only {len(chosen)} GATE-type questions{where}; ask for at most "
                         f"{len(chosen)} with -n" if chosen else f"no GATE-type (MCQ, MSQ, NAT) questions{where}; "
                         "`qkv bank list` shows the topics", "-n" if chosen else "--topic")
    ordered = sorted(chosen, key=lambda p: p.marks)  # stable: 1-mark first, draw order within
    return Paper(problems=tuple(ordered), seed=seed, topics=topics)


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
    "(mark for review, then next) | unmark | clear (erase the answer) | palette | submit | help"
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
    if rest:
        return None  # "next 3" is no command; the answer parser will say why it is no answer
    return ExamCommand(name)


# --------------------------------------------------------------------------------------------
# the sitting


@dataclass
class QuestionState:
    number: int
    problem: Any
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
    help | error | submitted | expired), a message for the student, and whether the exam is over."""

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

    def handle(self, line: str) -> Outcome:
        """Apply one line typed at the prompt (an answer or a command)."""
        if self.over:
            return Outcome("submitted", "The exam is over.", done=True)
        if self.expired():
            self.submit("time")
            return Outcome("expired", "Time is up: your answers have been submitted.", done=True)
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
                self.submit("submitted")
                return Outcome("submitted", done=True)
        except AnswerParseError as e:
            return Outcome("error", str(e))
        raise AssertionError(f"unhandled command {cmd!r}")  # pragma: no cover

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


@dataclass(frozen=True)
class QuestionResult:
    number: int
    problem: Any
    paper_type: str  # mcq | msq | nat
    marks: int  # the question's marks
    response: Response | None
    verdict: Any  # question_bank.grading.Verdict, None when unanswered
    outcome: str  # correct | wrong | unanswered
    awarded: Fraction  # signed
    negative: Fraction  # ≥ 0
    seconds: float
    marked: bool
    status: str  # palette status at the end
    changes: int

    def to_json(self) -> dict[str, Any]:
        from question_bank.grading import describe_key
        from question_bank.problem import key_value

        p = self.problem
        v = self.verdict
        return {
            "number": self.number, "id": p.id, "family": p.family, "seed": p.seed, "topic": p.topic,
            "type": p.type, "paper_type": self.paper_type, "marks": self.marks,
            "answer": None if self.response is None else self.response.text,
            "parsed": None if self.response is None else self.response.parsed,
            "outcome": self.outcome, "awarded": float(self.awarded), "negative": float(self.negative),
            "status": None if v is None else v.status, "message": None if v is None else v.message,
            "misconception": None if v is None or v.misconception is None else
            {"id": v.misconception.id, "label": v.misconception.label, "feedback": v.misconception.feedback},
            "key": describe_key(p.key, p.options_text or None), "answer_key": key_value(p.key),
            "seconds": self.seconds, "marked": self.marked, "palette": self.status, "changes": self.changes,
            "solution": p.solution_text,
        }


@dataclass(frozen=True)
class ExamResult:
    questions: tuple[QuestionResult, ...]
    reason: str  # submitted | time | end of input
    elapsed_s: float
    duration_s: float
    seed: int
    topics: tuple[str, ...] = ()
    session_id: str | None = field(default=None, compare=False)

    @property
    def score(self) -> Fraction:
        """Marks obtained, negative marks subtracted (exact)."""
        return sum((q.awarded for q in self.questions), Fraction(0))

    @property
    def max_score(self) -> int:
        return sum(q.marks for q in self.questions)

    @property
    def negative(self) -> Fraction:
        """Marks lost to negative marking (≥ 0)."""
        return sum((q.negative for q in self.questions), Fraction(0))

    def tally(self) -> dict[str, int]:
        out = {"correct": 0, "wrong": 0, "unanswered": 0}
        for q in self.questions:
            out[q.outcome] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "score": float(self.score), "max_score": self.max_score, "negative": float(self.negative),
            "positive": float(self.score + self.negative), "reason": self.reason, "elapsed_s": self.elapsed_s,
            "duration_s": self.duration_s, "seed": self.seed, "topics": list(self.topics),
            **self.tally(), "session_id": self.session_id,
            "questions": [q.to_json() for q in self.questions],
        }


def mark_exam(exam: Exam, reason: str, elapsed: float) -> ExamResult:
    """Grade every response and apply :func:`drills.exam.marking.mark`."""
    from question_bank.grading import grade

    out = []
    for q in exam.questions:
        p = q.problem
        verdict = None
        if q.response is None:
            outcome = "unanswered"
        else:
            verdict = grade(p, q.response.value, written=q.response.written, unit=q.response.unit)
            outcome = "correct" if verdict.correct else "wrong"
        try:
            m = mark(p.type, p.marks, outcome)
        except NotOnPaper as e:  # assemble_paper never puts one there
            raise AssertionError(str(e)) from None
        out.append(QuestionResult(
            number=q.number, problem=p, paper_type=paper_type(p.type), marks=p.marks, response=q.response,
            verdict=verdict, outcome=outcome, awarded=m.awarded, negative=m.negative, seconds=q.seconds,
            marked=q.marked, status=q.status, changes=q.changes))
    return ExamResult(questions=tuple(out), reason=reason, elapsed_s=elapsed, duration_s=exam.duration_s,
                      seed=exam.paper.seed, topics=exam.paper.topics)


# --------------------------------------------------------------------------------------------
# the progress database


def record(store: Any, session_id: str, result: ExamResult) -> None:
    """Store every question of a marked exam as an attempt of mode ``exam`` (``score`` = marks
    awarded, signed; ``marks`` = the question's marks; ``negative`` = marks lost), and close the
    session with the score, the maximum and the negative marks. Answered questions update the
    review card of their family or item; unanswered ones are stored without a review."""
    for q in result.questions:
        p = q.problem
        v = q.verdict
        store.record_attempt(
            problem_id=p.id, mode="exam", session_id=session_id, family=p.family, seed=p.seed, topic=p.topic,
            type=p.type, answer=None if q.response is None else q.response.text,
            parsed=None if q.response is None else q.response.parsed,
            correct=None if q.outcome == "unanswered" else q.outcome == "correct",
            score=float(q.awarded), marks=float(q.marks), negative=float(q.negative),
            time_ms=round(q.seconds * 1000),
            misconception=None if v is None or v.misconception is None else v.misconception.id,
            misconception_label=None if v is None or v.misconception is None else v.misconception.label,
            review=q.response is not None,
            extra={"number": q.number, "paper_type": q.paper_type, "marked": q.marked, "palette": q.status,
                   "status": None if v is None else v.status, "changes": q.changes},
        )
    t = result.tally()
    store.end_session(session_id, score=float(result.score), max_score=float(result.max_score),
                      negative=float(result.negative),
                      summary={"reason": result.reason, "elapsed_s": result.elapsed_s,
                               "duration_s": result.duration_s, "seed": result.seed, **t,
                               "score_exact": f"{result.score.numerator}/{result.score.denominator}"})
