"""The exam in a terminal: the countdown, the question palette, navigation, the final review.

Two views of the same :class:`drills.exam.session.Exam`:

- :class:`PlainView` (stdin is not a terminal, or ``--plain``): plain lines, for scripts and
  tests. Each question is printed with its number, type, marks and the time left; one line is
  read per prompt (an answer or a command).
- :class:`RichView` (a real terminal): the same, drawn with ``rich``: a header with the
  countdown, the palette in GATE's colours (green answered, red not answered, purple marked for
  review, grey not visited; marks ✓ ○ ? · as well, for a terminal without colour), the
  question in a panel. The countdown in the prompt ("Q3 [04:59 left]>") moves once a second
  while the prompt waits (redrawn in place: what is being typed stays), turns red in the last
  minute, and a warning line comes at 5 minutes, 1 minute and 10 seconds left (those shorter
  than the exam); the terminal's title bar shows the time left too.

At the end the review of every question comes first and the summary (score, table) last, so
that the summary is on screen when the exam ends.

:func:`run` is the loop: lines come from a reader thread (:class:`LineReader`), and the loop
waits for each with the time left as its timeout, so the exam submits itself at zero even
while the student is typing (plain mode included); at the end of input it submits too.
"""

from __future__ import annotations

import queue
import re
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

import click

from drills.exam.result import ExamResult
from drills.exam.session import COMMAND_HELP, PALETTE, Exam, Outcome
from drills.quiz.view import PANEL_MAX, answer_hint, option_lines  # the quiz's question layout, shared

if TYPE_CHECKING:
    from question_bank.problem import Problem

LETTERS = "abcdefghijklmnopqrstuvwxyz"
TYPE_LABEL = {"mcq": "MCQ", "msq": "MSQ", "nat": "NAT", "integer": "NAT"}
#: Palette marks, readable without colour. "Not answered" (seen, left blank) is an open circle,
#: not ✗: during the exam nothing is judged yet, and ✗ reads as "wrong".
PALETTE_MARK = {"not_visited": "·", "not_answered": "○", "answered": "✓", "marked": "?", "answered_marked": "✓?"}
LEGEND = {"not_visited": "not visited", "not_answered": "seen, not answered", "answered": "answered",
          "marked": "marked", "answered_marked": "answered & marked (evaluated)"}
WARN_AT = (300.0, 60.0, 10.0)  # seconds left when the terminal view warns (those below the exam's length)


def clock_text(seconds: float, hours: bool = False) -> str:
    """``h:mm:ss`` or ``mm:ss`` (rounded up: "00:00" only when the time is really up);
    ``hours``: always ``h:mm:ss`` (a prompt redrawn in place keeps one width for the whole exam)."""
    s = max(0, int(-(-seconds // 1)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h or hours else f"{m:02d}:{s:02d}"


def duration_text(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}:{s % 60:02d}"


def marks_text(x: Any) -> str:
    """Marks to two decimal places, as GATE reports them (``-0.67``, ``2``)."""
    f = float(x)
    s = f"{f:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


#: How an MSQ is marked on a paper whose blueprint gives it partial credit (``partial = ["msq"]``):
#: the words the printed sheets use (drills.sheets.marking_rule)
PARTIAL_MSQ = "a share of the marks for some right options and no wrong one"


def type_line(problem: Problem, penalties: dict[str, Any] | None = None, partial: tuple[str, ...] = ()) -> str:
    """The question's type, marks and marking; ``penalties`` (a blueprint's, per GATE type: the
    fraction of the marks a wrong answer costs) in place of GATE's; ``partial`` (a blueprint's:
    the types that earn partial credit) says so for an MSQ."""
    from fractions import Fraction

    t = TYPE_LABEL.get(problem.type, problem.type.upper())
    how = {"mcq": "one option", "msq": "one or more options", "nat": "a number",
           "integer": "a whole number"}.get(problem.type, "")
    m = "1 mark" if problem.marks == 1 else f"{problem.marks} marks"
    if penalties is not None:
        lost = Fraction(penalties.get("nat" if problem.type == "integer" else problem.type, 0)) * problem.marks
        neg = f", wrong answer −{lost}" if lost else ", no negative marks"
    else:
        neg = (", wrong answer −" + ("1/3" if problem.marks == 1 else "2/3") if problem.type == "mcq"
               else ", no negative marks")
    if problem.type == "msq" and "msq" in partial:
        neg = f", {PARTIAL_MSQ}{neg}"
    return f"{t} · {m} ({how}{neg})"


def marking_intro(penalties: dict[str, Any] | None = None, partial: tuple[str, ...] = ()) -> str:
    """The exam's opening line on marking: GATE's (a wrong MCQ costs 1/3 of its marks), or a
    blueprint's ``penalties`` (per GATE type, the fraction of the marks a wrong answer costs) and
    ``partial`` credit (an MSQ's share of the marks for some right options and no wrong one)."""
    from fractions import Fraction

    pen = {"mcq": Fraction(1, 3), "msq": Fraction(0), "nat": Fraction(0), **(penalties or {})}

    def rule(t: str) -> str:
        f = Fraction(str(pen[t]))
        return f"a wrong answer costs {f} of its marks" if f else "no negative marks"

    msq = f"all the right options ({PARTIAL_MSQ})" if "msq" in partial else "all the right options"
    return (f"MCQ: one option, {rule('mcq')}; MSQ: {msq}, {rule('msq')}; "
            f"NAT: a number, {rule('nat')}.")


def question_lines(exam: Exam) -> list[str]:
    q = exam.question
    p = q.problem
    section = exam.paper.section_of(q.number - 1)
    lines = [f"── {section + ' · ' if section else ''}Question {q.number} of {len(exam.questions)} · "
             f"{type_line(p, exam.paper.penalties, exam.paper.partial)} · {clock_text(exam.remaining())} left ──",
             p.statement_text.rstrip()]
    opts = option_lines(p)
    if opts:
        lines.append("")
        lines += ["  " + o for o in opts]
    unit = getattr(p.key, "unit", "") or ""
    lines.append(answer_hint(p, p) + (f" (in {unit})" if p.type in ("nat", "integer") and unit else ""))
    state = []
    if q.response is not None:
        state.append(f"your answer: {_answer_shown(q.response)}")
    if q.marked:
        state.append("marked for review")
    if state:
        lines.append("[" + "; ".join(state) + "]")
    return lines


def _answer_shown(r: Any) -> str:
    if r is None:
        return "—"
    letters = getattr(r.parsed, "letters", None)
    if letters:
        return "(" + ") (".join(letters.split(",")) + ")"
    return r.text


def palette_lines(exam: Exam) -> list[str]:
    groups: dict[str, list[str]] = {k: [] for k in PALETTE}
    for n, status in exam.palette():
        groups[status].append(str(n))
    return [f"  {PALETTE[k]}: {', '.join(v) if v else '—'}" for k, v in groups.items()]


def legend_lines(width: int) -> list[str]:
    """The palette's legend in lines of at most ``width`` columns, broken between entries (at 80
    columns "(evaluated)" used to wrap onto a line of its own)."""
    out: list[str] = []
    line = ""
    for k in PALETTE:
        entry = f"{PALETTE_MARK[k]} {LEGEND[k]}"
        candidate = f"{line}   {entry}" if line else f"  {entry}"
        if line and len(candidate) > width:
            out.append(line)
            candidate = f"  {entry}"
        line = candidate
    return [*out, line]


def prompt_clock(exam: Exam) -> str:
    """``Q3 [04:59 left]``: the prompt without its ``> `` (one width for the whole exam)."""
    return f"Q{exam.question.number} [{clock_text(exam.remaining(), exam.duration_s >= 3600)} left]"


def prompt_text(exam: Exam) -> str:
    if exam.confirming:
        return "Submit? (yes/no)> "
    return prompt_clock(exam) + "> "


# --------------------------------------------------------------------------------------------
# the final review


def result_lines(result: ExamResult) -> list[str]:
    """The review of every question, then the summary: last, so that at the end of the exam the
    score and the table are what is on screen (the review scrolls above them)."""
    return review_section(result) + [""] + summary_lines(result)


def review_section(result: ExamResult) -> list[str]:
    lines = ["Review (every question, with the key and the worked solution; the summary follows)"]
    for q in result.questions:
        lines += [""] + review_lines(q)
    return lines


def summary_lines(result: ExamResult) -> list[str]:
    t = result.tally()
    part = bool(result.partial or t["partial"])  # a paper with partial credit: its own count and column
    partly = f"partial {t['partial']}, " if part else ""
    reason = {"time": "Time ran out: the exam was submitted automatically.",
              "end of input": "End of input: the exam was submitted.",
              "interrupted": "Interrupted: the exam was submitted with the answers given so far.",
              "submitted": "Submitted."}.get(result.reason, result.reason)
    lines = [reason, "",
             f"Score: {marks_text(result.score)} / {result.max_score}"
             f"   (marks for right answers {marks_text(result.score + result.negative)}, "
             f"lost to negative marking {marks_text(result.negative)})",
             f"Right {t['correct']}, {partly}wrong {t['wrong']}, unanswered {t['unanswered']}; "
             f"time used {duration_text(result.elapsed_s)} of {duration_text(result.duration_s)}", "",
             " Q   type  marks  result        awarded  time  topic"]
    for q in result.questions:
        res = {"correct": "right", "partial": "partial", "wrong": "wrong", "unanswered": "unanswered"}[q.outcome]
        if q.verdict is not None and q.verdict.misconception is not None:
            res = "mistake"
        lines.append(f"{q.number:>2}   {TYPE_LABEL[q.problem.type]:<4}  {q.marks:>5}  {res:<12}  "
                     f"{marks_text(q.awarded):>7}  {duration_text(q.seconds):>4}  {q.problem.topic}")
    for by in ("section", "topic"):
        if by == "section" and not result.sections:
            continue
        rows = result.breakdown(by)
        lines += ["", f"{'By ' + by:<28}  score      right  {'part  ' if part else ''}wrong  blank  time"]
        for name, r in rows.items():
            cell = f"{r['partial']:>4}  " if part else ""
            lines.append(f"{name[:28]:<28}  {marks_text(r['score']):>5} / {r['max']:<3}  {r['correct']:>5}  {cell}"
                         f"{r['wrong']:>5}  {r['unanswered']:>5}  {duration_text(r['seconds']):>4}")
    lines += ["", "The review of each question is above (scroll back); `qkv stats` keeps the score."]
    return lines


def review_lines(q: Any) -> list[str]:
    from question_bank.grading import describe_key

    p = q.problem
    sign = {"correct": "✓", "partial": "◐", "wrong": "✗", "unanswered": "–"}[q.outcome]
    head = (f"{sign} Question {q.number} · {type_line(p)} · awarded {marks_text(q.awarded)} of {q.marks} · "
            f"{duration_text(q.seconds)} · {p.id}")
    out = [head, _indent(p.statement_text.rstrip())]
    out += ["    " + o for o in option_lines(p)]
    out.append(f"  Your answer: {_answer_shown(q.response) if q.response is not None else '(not answered)'}")
    out.append(f"  Key: {describe_key(p.key, [o.strip() for o in p.options_text] or None)}")
    v = q.verdict
    if v is not None:
        out.append(f"  {v.message}")
        if v.misconception is not None:
            out.append(f"  Mistake: {v.misconception.label} ({v.misconception.id})")
    if q.outcome == "partial":  # a blueprint's partial credit (issue 41)
        k, n = len(q.response.parsed.indices), len(p.key.correct)
        out.append(f"  Partial credit: {k} of the {n} right options and no wrong one: {k}/{n} of {q.marks} marks "
                   f"= {marks_text(q.awarded)}")
    if q.negative:
        out.append(f"  Negative marking: −{marks_text(q.negative)}")
    out.append("  Worked solution:")
    out.append(_indent(p.solution_text.rstrip(), 4))
    return out


def _indent(text: str, n: int = 2) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


# --------------------------------------------------------------------------------------------
# views

_HANG = re.compile(r"(\([a-z]\)|[-•*]|\d+[.)])\s+")


def indented(lines: list[str]) -> Any:
    """``lines`` as rich renderables that keep their indentation when they wrap: a line that
    starts with spaces is padded on the left, and an option ``(a) …`` or a list item ``- …``
    wraps under its own text, not under its label."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for line in lines:
        body = line.lstrip(" ")
        pad = len(line) - len(body)
        m = _HANG.match(body)
        if m:
            grid = Table.grid(padding=(0, 1, 0, 0))
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold")
            grid.add_row(Text(m.group(1)), Text(body[m.end():]))
            item: Any = grid
        else:
            item = Text(body)
        out.append(Padding(item, (0, 0, 0, pad)) if pad else item)
    return Group(*out)



class PlainView:
    """Plain lines on ``out`` (stdout, or stderr when the result goes to stdout as JSON)."""

    interactive = False

    def __init__(self, out: TextIO | None = None, err: bool = False):
        self.out = out
        self.err = err

    def echo(self, text: str = "", nl: bool = True) -> None:
        click.echo(text, nl=nl, err=self.err, file=self.out)

    def intro(self, exam: Exam, seed: int, seeded: bool) -> None:
        p = exam.paper
        again = "" if seeded else f" (`qkv exam --seed {seed}` gives this paper again)"
        self.echo(f"Mock exam: {len(p)} question{'' if len(p) == 1 else 's'}, {p.max_marks} mark{'' if p.max_marks == 1 else 's'}, "
                  f"{clock_text(exam.duration_s)} "
                  f"(seed {seed}{again}).")
        self.echo(marking_intro(p.penalties, p.partial))
        self.echo("Commands: " + COMMAND_HELP)

    def show_question(self, exam: Exam) -> None:
        self.echo("")
        for line in question_lines(exam):
            self.echo(line)

    def prompt(self, exam: Exam) -> None:
        self.echo(prompt_text(exam), nl=False)
        if self.out is not None:
            self.out.flush()

    def after(self, exam: Exam, outcome: Outcome) -> None:
        """What to show after a line: the message, then the question now current."""
        if outcome.kind == "palette":
            self.show_palette(exam)
            return
        if outcome.message:
            self.echo(outcome.message)
        if outcome.wrapped:
            self.echo("That was the last question: back to question 1 (submit to finish).")
        if outcome.kind in ("answered", "moved", "marked"):
            self.show_question(exam)

    def show_palette(self, exam: Exam) -> None:
        for line in palette_lines(exam):
            self.echo(line)

    def warn(self, text: str) -> None:
        self.echo("")
        self.echo(text)

    def tick(self, exam: Exam) -> None:
        """Called about once a second while waiting for a line (nothing to do in plain text)."""

    def finish(self) -> None:
        """Called when the exam is over, before the result."""

    def show_result(self, result: ExamResult) -> None:
        self.echo("")
        for line in result_lines(result):
            self.echo(line)


class RichView(PlainView):
    """The terminal view: rich panels, the coloured palette, the countdown in the title bar."""

    interactive = True
    STYLE = {"not_visited": "black on grey70", "not_answered": "white on red3", "answered": "white on green4",
             "marked": "white on purple4", "answered_marked": "white on purple4"}

    def __init__(self, err: bool = False):
        super().__init__(None, err)
        from rich.console import Console

        self.console = Console(stderr=err, highlight=False)
        self._title = sys.stdout.isatty() and not err
        self._drawn: str | None = None  # the prompt on screen (tick redraws it when its clock changes)
        self._legend_shown = False

    def echo(self, text: str = "", nl: bool = True) -> None:
        # rich wraps long lines at word boundaries (soft_wrap would leave it to the terminal,
        # which breaks words: "no negative mark|s"); an indented line wraps under itself
        if not nl:
            self.console.print(text, end="", markup=False, soft_wrap=True)
            return
        self.console.print(indented(text.split("\n")))

    def _palette(self, exam: Exam, room: int | None = None) -> Any:
        """The palette; with ``room`` (columns) only the questions around the current one that fit on
        one line, "…" standing for the others (issue 38: all 65 took 8 of 24 rows before every question;
        ``palette`` shows them all)."""
        from rich.text import Text

        cells = list(exam.palette())
        lo, hi = 0, len(cells)
        if room is not None:
            size = [len(f" {n}{PALETTE_MARK[st]} ") + 1 for n, st in cells]
            cur = next((i for i, (n, _) in enumerate(cells) if n == exam.question.number), 0)
            lo, hi, used = cur, cur + 1, size[cur] + 4  # room for "… " on both sides
            while True:
                grew = False
                for side in (1, -1):
                    if side == 1 and hi < len(cells) and used + size[hi] <= room:
                        used, hi, grew = used + size[hi], hi + 1, True
                    elif side == -1 and lo > 0 and used + size[lo - 1] <= room:
                        used, lo, grew = used + size[lo - 1], lo - 1, True
                if not grew:
                    break
        t = Text()
        if lo > 0:
            t.append("… ", style="dim")
        for n, status in cells[lo:hi]:
            label = f" {n}{PALETTE_MARK[status]} "  # the legend's marks: readable without colour too
            style = self.STYLE[status] + (" bold underline" if n == exam.question.number else "")
            t.append(label, style=style)
            t.append(" ")
        if hi < len(cells):
            t.append("…", style="dim")
        return t

    def show_question(self, exam: Exam) -> None:
        from rich.panel import Panel
        from rich.text import Text

        left = exam.remaining()
        head = Text()
        clock = f" Time left {clock_text(left)} "
        head.append(clock, style="bold white on red" if left < 60 else "bold reverse")
        head.append("   ")
        head.append_text(self._palette(exam, room=self.console.width - len(clock) - 4))
        self.console.print()
        self.console.print(head, no_wrap=True, overflow="ignore")
        if not self._legend_shown:  # the legend once (and with `palette`): two rows less on every question
            self._legend_shown = True
            for line in legend_lines(self.console.width):
                self.console.print(Text(line, style="dim"))
        lines = question_lines(exam)
        q = exam.question
        section = exam.paper.section_of(q.number - 1)
        self.console.print(Panel(indented(lines[1:]),
                                 title=f"{section + ' · ' if section else ''}Question {q.number} of {len(exam.questions)}",
                                 subtitle=type_line(q.problem, exam.paper.penalties, exam.paper.partial),
                                 title_align="left",
                                 width=min(self.console.width, PANEL_MAX)))

    def show_palette(self, exam: Exam) -> None:
        self.console.print(self._palette(exam))
        for line in legend_lines(self.console.width):
            self.console.print(line, style="dim")
        super().show_palette(exam)

    def _prompt_ansi(self, exam: Exam) -> str:
        """The prompt as the terminal draws it (bold; red in the last minute; plain where rich
        would use no colour: NO_COLOR, a dumb terminal)."""
        if self.console.no_color or self.console.color_system is None:
            return prompt_text(exam)
        if exam.confirming:
            return "\x1b[1;33m" + prompt_text(exam)[:-2] + "\x1b[0m> "
        colour = "1;31" if exam.remaining() < 60 else "1"
        return f"\x1b[{colour}m{prompt_clock(exam)}\x1b[0m> "

    def prompt(self, exam: Exam) -> None:
        self.console.file.write(self._prompt_ansi(exam))
        self.console.file.flush()
        self._drawn = prompt_text(exam)

    def tick(self, exam: Exam) -> None:
        """Redraw the prompt's countdown in place, once a second, while the prompt waits: save
        the cursor (what is being typed stays where it is), go to the start of the line, draw
        the prompt again (the same width), restore the cursor; in one write, so that no key's
        echo lands in between. (An answer typed past the end of the line would see the line
        below redrawn; exam answers are short.) The title bar shows the time left too."""
        now = prompt_text(exam)
        if now != self._drawn and not exam.confirming:
            data = "\x1b7\r" + self._prompt_ansi(exam) + "\x1b8"
            self.console.file.write(data)
            self.console.file.flush()
            self._drawn = now
        if self._title:
            sys.stdout.write(f"\x1b]0;qkv exam: {clock_text(exam.remaining())} left\x07")
            sys.stdout.flush()

    def warn(self, text: str) -> None:
        """A warning line, then (the loop) a fresh prompt. What was typed at the old prompt and
        not yet sent is discarded (the terminal's input queue flushed): the new prompt shows
        nothing, and a line sent now must not carry characters no longer on screen ("1" typed
        before the warning and "2.5" after would send "12.5")."""
        try:
            import termios

            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
        except (ImportError, OSError, ValueError, AttributeError):  # not a terminal, or no termios (Windows)
            pass
        except Exception:  # noqa: BLE001 - termios.error: nothing to flush
            pass
        super().warn(text)

    def finish(self) -> None:
        if self._title:
            sys.stdout.write("\x1b]0;qkv\x07")
            sys.stdout.flush()

    def show_result(self, result: ExamResult) -> None:
        from rich.rule import Rule

        self.console.print()
        self.console.print(Rule("Review"))
        for line in review_section(result):
            self.echo(line)
        self.console.print()
        self.console.print(Rule("Result"))
        for line in summary_lines(result):
            self.echo(line)


# --------------------------------------------------------------------------------------------
# reading lines against the clock

EOF = object()
TIMEOUT = object()


class LineReader:
    """Lines of ``stream`` read by a daemon thread, so that the exam can wait for one with a
    deadline; :data:`EOF` at the end of input."""

    def __init__(self, stream: TextIO):
        self._q: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True, name="qkv-exam-stdin")
        self._thread.start()

    def _run(self, stream: TextIO) -> None:
        try:
            while True:
                line = stream.readline()
                if not line:
                    break
                self._q.put(line.rstrip("\r\n"))
        except (OSError, ValueError, UnicodeDecodeError):
            pass
        self._q.put(EOF)

    def get(self, timeout: float) -> Any:
        """The next line, :data:`EOF`, or :data:`TIMEOUT` after ``timeout`` seconds."""
        try:
            return self._q.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return TIMEOUT


class Stopped(BaseException):  # noqa: N818 - not an error: a signal to end the process, the exam saved
    """Raised in the main thread by SIGHUP or SIGTERM (a closed terminal, ``kill``): the exam is not
    submitted; its state, saved as each line was given, is saved once more and kept for
    ``qkv exam`` to resume."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def run(exam: Exam, view: PlainView, lines: LineReader,
        save: Any = None) -> ExamResult:
    """Sit the exam: show, read, apply, until submitted, out of time or out of input.

    ``save(exam)``, when given, is called after every line that changed the sitting (an answer,
    a change, a mark or a clear, a move) and before its message is shown, so that what the
    screen says is saved is saved; and once more when :class:`Stopped` ends the process."""
    exam.start()
    try:
        return _run(exam, view, lines, save)
    except Stopped:
        if save is not None and not exam.over:
            save(exam)
        raise


def _run(exam: Exam, view: PlainView, lines: LineReader, save: Any) -> ExamResult:
    view.show_question(exam)
    warned = {w for w in WARN_AT if exam.duration_s <= w}  # no "1 minute left" at the start of a 1-minute exam
    try:
        while not exam.over:
            view.prompt(exam)
            item: Any = TIMEOUT
            while item is TIMEOUT:
                left = exam.remaining()
                if left <= 0:
                    break
                view.tick(exam)
                for w in WARN_AT:
                    if view.interactive and w not in warned and left <= w:
                        warned.add(w)
                        view.warn(f"⚠ {clock_text(left)} left: at 00:00 the exam submits itself.")
                        view.prompt(exam)
                item = lines.get(min(left, 1.0) if view.interactive else left)
            if item is TIMEOUT or exam.expired():
                exam.submit("time")
                view.warn("Time is up: your answers have been submitted.")
                break
            if item is EOF:
                view.echo("")
                exam.submit("end of input")
                break
            if not view.interactive:
                view.echo(item)  # echo the line read, so that a transcript reads like a session
            outcome = exam.handle(item)
            if save is not None and not outcome.done and outcome.kind not in ("palette", "help", "error"):
                save(exam)
            if outcome.done:
                if outcome.kind == "expired":
                    view.warn(outcome.message)
                break
            view.after(exam, outcome)
    except KeyboardInterrupt:
        exam.submit("interrupted")
    finally:
        view.finish()
    assert exam.result is not None
    return exam.result
