"""How a quiz looks: the rich terminal view, the plain view, and the ``--json`` event stream.

The session (:mod:`drills.quiz.session`) calls the same methods on each view: ``start``, ``problem``,
``part``, ``read``, ``invalid``, ``answer``, ``verdict``, ``solution``, ``skipped``, ``hint``,
``errata``, ``reported``, ``message`` and ``end``. The content is composed once, as lines
tagged with a style (:func:`verdict_lines`, :func:`summary_lines`, ...); :class:`PlainView`
prints them as text with ✓/✗ marks, :class:`RichView` with colour through ``rich``, and
:class:`JsonView` prints one JSON object per line instead (``{"event": "problem", ...}``,
``"answer"``, ``"verdict"``, ... and ``"end"`` with the session summary), flushed as it goes.

- :class:`RichView` (stdin and stdout are terminals): a header rule "Question 3 of 10 · score
  2.5/4 marks" (marks earned over the marks of the problems finished, as GATE counts; a
  multi-part problem earns the mean of its parts' scores times its marks), the statement in a panel (math already in Unicode: QKᵀ/√dₖ, matrices drawn with ⎡ ⎤),
  lettered options, type and marks; the prompt reads with line editing (``readline``). After
  each verdict it waits for Enter, so the verdict stays on screen (and ``solution``/``report``
  can be typed there).
- :class:`PlainView`: the same text without colour; when stdin is not a terminal it echoes each
  line it reads after the prompt, so the output reads as a transcript, and it never pauses.
- ``rich`` is imported only by :class:`RichView`.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from drills.output import emit_json, valid_utf8
from question_bank.problem import erratum_heading, erratum_place
from solver.units import plural  # the one count-plus-noun helper (re-exported: drills.quiz.view.plural)

if TYPE_CHECKING:
    from drills.answers import Parsed, ParsedChoice, ParsedMatrix
    from drills.quiz.session import Summary
    from question_bank.grading import Verdict
    from question_bank.problem import Part, Problem

__all__ = ["PlainView", "RichView", "JsonView", "make_view", "verdict_lines", "summary_lines", "relative_time"]

LETTERS = "abcdefghijklmnopqrstuvwxyz"
TYPE_LABELS = {
    "mcq": "MCQ · one answer",
    "msq": "MSQ · one or more answers",
    "nat": "NAT · a number",
    "integer": "integer",
    "matrix": "matrix",
}
PAUSE_TEXT = "Enter: next · solution · report [note] · quit"

Line = tuple[str, str]  # (style, text); styles: ok bad warn key dim title text


# --------------------------------------------------------------------------------------------
# content, composed once


def fmt_score(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")


def marks_text(scored: float, possible: float) -> str:
    """``2.5/4 marks``: marks earned over the marks of the problems finished (as GATE counts)."""
    return f"{fmt_score(scored)}/{fmt_score(possible)} mark" + ("" if possible == 1 else "s")


def header_text(h: dict[str, Any]) -> str:
    return f"Question {h['index']} of {h['total']} · score {marks_text(h['marks_scored'], h['max_marks'])}"


STOPPED = {"skip": "Skipped ({})", "another": "Left at ({}) for another variant:",
           "quit": "Stopped at ({}):", "eof": "Input ended at ({}):", "interrupt": "Interrupted at ({}):"}


def problem_score_line(problem: Problem, score: float, *, skipped: str | None = None, action: str = "skip") -> str:
    """After a multi-part problem: its score (the mean over its parts) and the marks it earned;
    ``skipped`` names the part where the student stopped (later parts score 0 as well), and
    ``action`` how (skip, another, quit, eof, interrupt)."""
    kept = ""
    if skipped:
        where = STOPPED.get(action, STOPPED["skip"]).format(skipped)
        kept = f"{where} {'and' if action == 'skip' else 'it and'} the parts after it score 0; earlier parts keep their credit. "
    return (f"{kept}Problem score {fmt_score(score)} of 1 · "
            f"{marks_text(score * problem.marks, problem.marks)}")


PANEL_MAX = 100  # columns of a panel at most


def panel_titles(problem: Problem, width: int) -> tuple[str, str, str]:
    """``(title, subtitle, above)`` of a problem's panel ``width`` columns wide: the type,
    marks, topic and difficulty as the title, the id (or the source's label) as the subtitle;
    whichever would not fit whole on the border (rich would cut it: "counting.attention_me…")
    goes on a line of its own above the panel instead."""
    text = meta_text(problem)
    origin = problem.source_label if problem.family is None and problem.source_label else problem.id
    head = text[: -len(origin) - 3] if origin and text.endswith(" · " + origin) else text
    room = width - 6  # corners, a space each side, and one column of border
    title, subtitle, above = (head, origin, "") if len(head) <= room else ("", origin, head)
    if len(subtitle) > room:
        above, subtitle = (f"{above} · {subtitle}" if above else subtitle), ""
    return title, subtitle, above


def meta_text(problem: Problem) -> str:
    marks = f"{problem.marks} mark" + ("" if problem.marks == 1 else "s")
    origin = problem.source_label if problem.family is None and problem.source_label else problem.id
    bits = [TYPE_LABELS.get(problem.type, problem.type), marks, problem.topic, problem.difficulty, origin]
    if problem.parts:
        bits.insert(1, f"{len(problem.parts)} parts")
    return " · ".join(b for b in bits if b)


def shortfall(info: dict[str, Any]) -> str:
    """`` (only 1 matches the filters, 3 asked)`` when the filters leave fewer than ``-n``."""
    asked = (info.get("options") or {}).get("count")
    n = info.get("count", 0)
    return f" (only {n} match{'es' if n == 1 else ''} the filters, {asked} asked)" if asked and n < asked else ""


def option_lines(problem: Problem) -> list[str]:
    opts = problem.options_text or problem.options
    return [f"({LETTERS[i]}) {o}" for i, o in enumerate(opts)]


def answer_hint(target: Problem | Part, problem: Problem) -> str:
    if target.type == "mcq":
        if "numeric-mcq" in problem.tags:  # the options are values: one may be typed as written (60 for 60.00)
            return "Answer with a letter (b), a number (2) or the option's value."
        return "Answer with a letter (b) or a number (2)."
    if target.type == "msq":
        return "One or more letters, e.g. a,c."
    if target.type == "matrix":
        from drills.answers import key_shape

        shape = key_shape(target.key)
        dims = f"{shape[0]}×{shape[1]} " if shape else ""
        return f"A {dims}matrix: rows separated by ';' (0.6 0.4; 0.4 0.6), as JSON, or one row per line."
    return "A number: 0.6, 3/5, 2^20, 1.2G, 4 GiB, sqrt(2)/2 …"


def relative_time(when: datetime, now: datetime | None = None) -> str:
    from drills.progress.scheduling import utc

    seconds = (utc(when) - utc(now)).total_seconds()
    if seconds <= 0:
        return "now"
    if seconds < 3600:
        return f"in {max(1, round(seconds / 60))} min"
    if seconds < 86400:
        return f"in {round(seconds / 3600)} h"
    days = round(seconds / 86400)
    return "tomorrow" if days == 1 else f"in {days} days"


def duration_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    m, s = divmod(seconds, 60)
    if m < 60:
        return f"{m} min {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def _cell_grid(rows: list[list[float]], cells: Any, decimals: int | None) -> list[str]:
    """The student's matrix aligned, each wrong entry followed by ✗."""
    from question_bank.render import num

    body = [[num(x, decimals) if decimals is not None else num(x) for x in r] for r in rows]
    marks = [[" " if ok else "✗" for ok in r] for r in cells]
    widths = [max(len(r[j]) for r in body) for j in range(len(body[0]))]
    lines = ["  ".join(f"{c.rjust(w)}{m}" for c, m, w in zip(r, mr, widths, strict=True)) for r, mr in zip(body, marks, strict=True)]
    if len(lines) == 1:
        return [f"[ {lines[0]} ]"]
    out = []
    for i, b in enumerate(lines):
        lb, rb = ("⎡", "⎤") if i == 0 else ("⎣", "⎦") if i == len(lines) - 1 else ("⎢", "⎥")
        out.append(f"{lb} {b} {rb}")
    return out


def verdict_lines(problem: Problem, target: Problem | Part, verdict: Verdict, *, value: Any, expected: str,
                  recorded: Any = None, hinted: bool = False) -> list[Line]:
    """The verdict as styled lines: mark and message, the misconception, per-cell marks, what
    was accepted, the exact answer, and when the item comes back (``hinted``: right after a
    hint, which the schedule counts as a weaker recall)."""
    from question_bank.problem import MatrixKey

    label = f"({verdict.label}) " if verdict.label else ""
    out: list[Line] = [("ok" if verdict.correct else "bad", f"{'✓' if verdict.correct else '✗'} {label}{verdict.message}")]
    if verdict.misconception is not None:
        m = verdict.misconception
        out.append(("warn", f"  Misconception: {m.label} [{m.id}]"))
    key = target.key
    if verdict.cells is not None and not all(all(r) for r in verdict.cells) and isinstance(value, list):
        out.append(("text", "  Your matrix (✗ = wrong entry):"))
        out.extend(("text", "    " + ln) for ln in _cell_grid(value, verdict.cells, getattr(key, "decimals", None)))
    if verdict.accepted and (verdict.correct or not _restates(verdict.accepted, expected)):
        out.append(("dim", f"  Accepted: {verdict.accepted}"))
    if not verdict.correct:
        if isinstance(key, MatrixKey):
            from question_bank.render import text_matrix_lines

            out.append(("key", "  Answer:"))
            out.extend(("key", "    " + ln) for ln in text_matrix_lines(key.value, key.decimals))
        else:
            out.append(("key", f"  Answer: {expected}"))
    if recorded is not None and getattr(recorded, "due", None) is not None:
        weaker = " (right after a hint: a weaker recall, so sooner)" if hinted else ""
        out.append(("dim", f"  Saved · this comes back {relative_time(recorded.due)}{weaker}"))
    return out


MIN_TAIL = 12  # a wrapped line's last piece is at least this long (no lone "3" on a line of its own)


def wrap_line(line: str, width: int) -> list[str]:
    """``line`` wrapped at spaces to ``width`` columns. The continuation lines of an indented
    line (a step of a worked solution) hang two columns further in; prose is not indented. The
    lines are balanced so that the last piece is not a word or two alone (a lone "3"): at least
    ``MIN_TAIL`` columns, where a narrower wrap with as many lines allows it."""
    import textwrap

    if len(line) <= width or width < 20:
        return [line]
    body = line.lstrip(" ")
    indent = " " * (len(line) - len(body))
    hang = indent + "  " if indent else ""  # an indented step hangs under itself; prose does not

    def wrap(w: int) -> list[str]:
        return textwrap.wrap(body, width=w, initial_indent=indent, subsequent_indent=hang,
                             break_on_hyphens=False)

    best = wrap(width)
    if len(best) > 1 and len(best[-1].strip()) < MIN_TAIL:
        for w in range(width - 1, max(len(hang) + MIN_TAIL, width * 2 // 3) - 1, -1):  # down to 2/3 of the width
            trial = wrap(w)
            if len(trial) != len(best):
                break
            if len(trial[-1].strip()) >= MIN_TAIL:
                return trial
    return best


def wrap_text(text: str, width: int) -> str:
    """Every line of ``text`` wrapped with :func:`wrap_line`."""
    return "\n".join(w for line in text.splitlines() for w in wrap_line(line, width))


def wrapped_text(text: str, width: int) -> Any:
    """``text`` as a rich Text, wrapped by :func:`wrap_text` (rich would not wrap it again)."""
    from rich.text import Text

    return Text(wrap_text(text, width))


def _restates(accepted: str, expected: str) -> bool:
    """True when "Accepted: ..." would only repeat "Answer: ..." (an option, "65,536 exactly")."""
    a, e = accepted.strip(), expected.strip()
    return bool(e) and (a == e or a.startswith(e + " ") or e.startswith(a))


def solution_lines(problem: Problem) -> list[Line]:
    return [("title", "Worked solution:")] + [("text", "  " + ln) for ln in problem.solution_text.splitlines()]


def errata_lines(problem: Problem) -> list[Line]:
    out: list[Line] = []
    for e in problem.errata:
        out.append(("warn", f"{erratum_heading(e)} on the source ({erratum_place(problem, e)}): printed {e.printed}; "
                            f"exact {e.exact}."))
        out.append(("dim", f"  {e.reason}"))
    return out


def summary_lines(s: Any) -> list[Line]:
    out: list[Line] = [("title", f"Session over: {s.correct} of {s.asked} right · score {marks_text(s.marks, s.max_marks)} · "
                                 f"{duration_text(s.seconds)}")]
    counts = ((s.skipped, f"{s.skipped} skipped"), (getattr(s, "unfinished", 0), f"{getattr(s, 'unfinished', 0)} left partway"),
              (s.revealed, f"{plural(s.revealed, 'solution')} shown"), (s.reports, f"{plural(s.reports, 'key')} reported"))
    extras = [text for n, text in counts if n]
    if extras:
        out.append(("dim", "  " + " · ".join(extras)))
    hinted = getattr(s, "hinted", 0)
    if hinted:
        out.append(("dim", f"  {hinted} right after a hint: {'a weaker recall' if hinted == 1 else 'weaker recalls'} "
                           f"(rated Hard), so {'it comes' if hinted == 1 else 'they come'} back sooner"))
    if s.misconceptions:
        by_label: Counter[str] = Counter()
        for (_, lab), n in s.misconceptions.items():  # two families may name one mistake alike
            by_label[lab] += n
        hit = "; ".join(f"{lab}" + (f" (×{n})" if n > 1 else "") for lab, n in by_label.most_common())
        out.append(("warn", f"  Misconceptions hit: {hit}"))
    if s.due_next:
        due = "; ".join(f"{d.ref} {relative_time(d.due)}" for d in s.due_next)
        out.append(("text", f"  Due next: {due}"))
    else:
        out.append(("text", "  Nothing due in the next 7 days."))
    out.append(("dim", f"  Seed {s.seed} · all answers saved"))
    return out


def goodbye_line(s: Any) -> str:
    misc = f" · {plural(sum(s.misconceptions.values()), 'misconception')} hit" if s.misconceptions else ""
    return (f"Goodbye: {s.correct} of {s.asked} right (score {marks_text(s.marks, s.max_marks)}) in "
            f"{duration_text(s.seconds)}{misc} · all answers given are saved.")


# --------------------------------------------------------------------------------------------
# plain text


class PlainView:
    """Text without colour. Reads lines from ``stdin``; ``interactive`` when it is a terminal."""

    MARKS = {"ok": "", "bad": "", "warn": "", "key": "", "dim": "", "title": "", "text": ""}

    def __init__(self, stdin: Any = None):
        self.stdin = stdin if stdin is not None else sys.stdin
        try:
            self.interactive = bool(self.stdin.isatty())
        except (AttributeError, ValueError):
            self.interactive = False

    # output
    def out(self, text: str = "") -> None:
        click.echo(text)

    def lines(self, lines: list[Line]) -> None:
        for _style, text in lines:
            self.out(text)

    def start(self, info: dict[str, Any]) -> None:
        due = f" ({info['due']} due for review)" if info.get("due") else ""
        self.out(f"qkv quiz · {info['count']} question{'s' if info['count'] != 1 else ''}{shortfall(info)}{due} · "
                 f"seed {info['seed']} · type help for commands")

    def problem(self, problem: Problem, header: dict[str, Any]) -> None:
        self.out("")
        self.out(f"── {header_text(header)} ── {meta_text(problem)}")
        self.out(problem.statement_text)
        opts = option_lines(problem)
        if opts:
            self.out("")
            for o in opts:
                self.out(o)
        if problem.errata:
            self.out("(Note: the source of this item prints a figure qkv disagrees with; shown with the answer.)")
        if not problem.parts:
            self.out(answer_hint(problem, problem))

    def part(self, problem: Problem, part: Part, k: int, n: int) -> None:
        self.out(f"Part ({part.label}) of {n}: {part.prompt_text}  [{TYPE_LABELS.get(part.type, part.type)}]")
        if k == 0 or part.type != problem.parts[k - 1].type:  # what to type, once per kind of part
            self.out(answer_hint(part, problem))

    # input
    def prompt_text(self, kind: str, row: str | None = None, last: bool = False) -> str:
        if kind == "row":
            return f"{row}> "
        if kind == "pause":
            return f"[{PAUSE_TEXT.replace('next', 'finish' if last else 'next')}] "
        return "answer> "

    def read(self, kind: str, *, row: str | None = None, last: bool = False) -> str:
        click.echo(self.prompt_text(kind, row, last), nl=False)
        try:
            line = self.stdin.readline()
        except KeyboardInterrupt:
            self.out("")  # what follows starts on a line of its own, not after the typed text
            raise
        if not line:
            self.out("")
            raise EOFError
        if not self.interactive:
            self.out(line.rstrip("\n"))
        return line.rstrip("\r\n")

    def invalid(self, text: str, message: str) -> None:
        self.out(f"  ? {message} (nothing counted; answer again)")

    def answer(self, problem: Problem, label: str | None, text: str, parsed: Parsed | ParsedMatrix | ParsedChoice) -> None:
        pass

    def verdict(self, problem: Problem, target: Problem | Part, verdict: Verdict, *, text: str, parsed: Parsed | ParsedMatrix | ParsedChoice, value: Any,
                expected: str, recorded: Any, time_ms: int, problem_score: float | None = None,
                solution: bool = False, hinted: bool = False) -> None:
        """The verdict, the problem's score after its last part, and (``solution``) the worked
        solution. In a terminal the solution comes first, so that the verdict and the score are
        the last lines on screen at the next prompt; a transcript (input not a terminal) reads
        in the order things happened: verdict, score, solution."""
        if solution and self.interactive:
            self.show_solution(problem)
        self.lines(verdict_lines(problem, target, verdict, value=value, expected=expected, recorded=recorded,
                                 hinted=hinted))
        if problem_score is not None and problem.parts:
            self.lines([("title", problem_score_line(problem, problem_score))])
        if solution and not self.interactive:
            self.show_solution(problem)

    def show_solution(self, problem: Problem) -> None:
        self.lines(solution_lines(problem))

    def solution(self, problem: Problem, problem_score: float | None = None) -> None:
        """The worked solution (``solution`` typed), then the problem's score when parts were
        answered before it (last, so that it stays on screen)."""
        self.show_solution(problem)
        if problem_score is not None:
            self.lines([("title", problem_score_line(problem, problem_score))])

    def skipped(self, problem: Problem, expected: str, *, label: str | None = None,
                problem_score: float | None = None, action: str = "skip") -> None:
        """A skip (shows the key), or a multi-part problem left partway by ``action`` (another,
        quit, eof, interrupt: its score only)."""
        if action == "skip":
            self.out(f"Skipped. Answer: {expected}")
        if problem_score is not None:
            self.lines([("title", problem_score_line(problem, problem_score, skipped=label, action=action))])

    def hint(self, text: str, i: int, n: int) -> None:
        self.out(f"Hint {i}/{n}: {text}")

    def errata(self, problem: Problem) -> None:
        self.lines(errata_lines(problem))

    def reported(self, problem: Problem, answer: str | None, uid: str, data_dir: Any) -> None:
        yours = f" with your answer {answer!r}" if answer else ""
        self.out(f"Reported {problem.id}{yours} for review (saved to {data_dir}/reports.jsonl).")

    def message(self, text: str) -> None:
        self.out(text)

    def end(self, summary: Summary) -> None:
        if summary.interrupted:
            self.out("")
            self.out(goodbye_line(summary))
            return
        self.out("")
        self.lines(summary_lines(summary))


# --------------------------------------------------------------------------------------------
# rich terminal


class RichView(PlainView):
    """The terminal view: colour, a header rule, the statement in a panel."""

    STYLES = {"ok": "bold green", "bad": "bold red", "warn": "yellow", "key": "bold", "dim": "dim",
              "title": "bold cyan", "text": ""}

    def __init__(self, stdin: Any = None, console: Any = None):
        super().__init__(stdin)
        from rich.console import Console

        self.console = console or Console(highlight=False, soft_wrap=False)
        try:
            import readline  # noqa: F401 - line editing and history for input()
        except ImportError:  # pragma: no cover - Windows
            pass

    def out(self, text: str = "") -> None:
        from rich.text import Text

        self.console.print(Text(text))

    def panel_width(self) -> int:
        """Every panel (statement, worked solution) is this wide: the terminal's width, at most
        :data:`PANEL_MAX` columns (so that panels line up on a wide terminal)."""
        return max(20, min(self.console.width, PANEL_MAX))

    def lines(self, lines: list[Line]) -> None:
        from rich.padding import Padding
        from rich.text import Text

        for style, text in lines:
            body = text.lstrip(" ")
            indent = len(text) - len(body)
            t = Text(body, style=self.STYLES.get(style, ""))
            # an indented line that wraps keeps its indent (no continuation at column 0)
            self.console.print(Padding(t, (0, 0, 0, indent)) if indent else t)

    def start(self, info: dict[str, Any]) -> None:
        from rich.text import Text

        due = f" · {info['due']} due for review" if info.get("due") else ""
        n = info["count"]
        self.console.print(Text(f"qkv quiz · {n} question{'s' if n != 1 else ''}{shortfall(info)}{due} · "
                                "type help for commands", style="dim"))

    def problem(self, problem: Problem, header: dict[str, Any]) -> None:
        from rich.panel import Panel
        from rich.text import Text

        self.console.print()
        from rich.rule import Rule

        # as wide as the panels (the terminal's width up to PANEL_MAX columns)
        self.console.print(Rule(Text(header_text(header), style="bold"), align="left"), width=self.panel_width())
        width = self.panel_width()
        title, subtitle, above = panel_titles(problem, width)
        opts = problem.options_text or problem.options

        def panel(compact: bool, border: bool = True) -> Any:
            from rich.console import Group
            from rich.padding import Padding
            from rich.table import Table

            text = problem.statement_text
            if compact:  # paragraphs without the blank line between them
                text = re.sub(r"\n\s*\n", "\n", text.strip())
            body: Any = wrapped_text(text, width - 4 if border else width - 1)
            if opts:
                grid = Table.grid(padding=(0, 1))  # a long option wraps under itself, not under its letter
                per_row = 1
                if compact:  # issue 38: short options side by side, so the question keeps its first lines
                    cell = max(len(o) for o in opts) + 5
                    per_row = next((k for k in (4, 2) if k * cell <= width - (4 if border else 1)), 1)
                for _ in range(per_row):
                    grid.add_column(style="bold", no_wrap=True)
                    grid.add_column()
                for r in range(0, len(opts), per_row):
                    row: list[Any] = []
                    for i in range(r, min(r + per_row, len(opts))):
                        row += [f"({LETTERS[i]})", Text(opts[i] + ("   " if per_row > 1 else ""))]
                    grid.add_row(*row)
                body = Group(body, grid) if compact else Group(body, Text(""), grid)
            if not border:  # the titles on a line of their own, the text without a frame
                head = " · ".join(x for x in (title, subtitle) if x)
                return Group(Text(head, style="cyan"), Padding(body, (0, 0, 0, 1)))
            return Panel(body, title=Text(title, style="cyan") if title else None, title_align="left",
                         subtitle=Text(subtitle, style="dim cyan") if subtitle else None,
                         subtitle_align="right", width=width, padding=(0, 1))

        # issue 38: at 24 rows the header rule, the question and the answer line must all show: a question
        # too tall for the terminal gets its options side by side, then loses the panel's frame
        room = self.console.height - 3 - (1 if above else 0) - (1 if problem.errata else 0) - (0 if problem.parts else 1)
        shown = panel(False)
        for compact, border in ((True, True), (True, False)):
            if self._rows(shown, width) <= room:
                break
            shown = panel(compact, border)
        if above:
            self.console.print(Text(above, style="cyan"))
        self.console.print(shown, width=width)
        if problem.errata:
            self.console.print(Text("Note: the source of this item prints a figure qkv disagrees with; "
                                    "it is shown with the answer.", style="yellow"))
        if not problem.parts:
            self.console.print(Text(answer_hint(problem, problem), style="dim"))

    def _rows(self, renderable: Any, width: int) -> int:
        """The rows ``renderable`` takes on this console at ``width`` columns."""
        return len(self.console.render_lines(renderable, self.console.options.update(width=width), pad=False))

    def part(self, problem: Problem, part: Part, k: int, n: int) -> None:
        from rich.text import Text

        t = Text()
        t.append(f"({part.label}) ", style="bold")
        t.append(part.prompt_text)
        t.append(f"   part {k + 1} of {n} · {TYPE_LABELS.get(part.type, part.type)}", style="dim")
        self.console.print(t)
        if k == 0 or part.type != problem.parts[k - 1].type:  # what to type, once per kind of part
            self.console.print(Text(answer_hint(part, problem), style="dim"))

    def read(self, kind: str, *, row: str | None = None, last: bool = False) -> str:
        prompt = self.prompt_text(kind, row, last)
        if kind == "pause":
            from rich.text import Text

            self.console.print(Text(PAUSE_TEXT.replace("next", "finish" if last else "next"), style="dim"))
            prompt = "› "
        elif kind == "answer":
            prompt = "answer › "
        try:
            return self.console.input(prompt)
        except (EOFError, KeyboardInterrupt):
            self.console.print()  # what follows starts on a line of its own, not after the typed text
            raise

    def invalid(self, text: str, message: str) -> None:
        from rich.padding import Padding
        from rich.text import Text

        self.console.print(Padding(Text(f"? {message} (nothing counted; answer again)", style="yellow"), (0, 0, 0, 2)))

    def show_solution(self, problem: Problem) -> None:
        from rich.panel import Panel

        width = self.panel_width()
        body = wrapped_text(problem.solution_text, width - 4)  # border and padding: 4 columns
        self.console.print(Panel(body, title="Worked solution", title_align="left", border_style="cyan",
                                 width=width))

    def hint(self, text: str, i: int, n: int) -> None:
        from rich.text import Text

        self.console.print(Text(f"Hint {i}/{n}: {text}", style="cyan"))

    def end(self, summary: Summary) -> None:
        from rich.text import Text

        if summary.interrupted:
            self.console.print()
            self.console.print(Text(goodbye_line(summary), style="bold"))
            return
        self.console.print()
        from rich.rule import Rule

        self.console.print(Rule(style="dim"), width=self.panel_width())
        self.lines(summary_lines(summary))


# --------------------------------------------------------------------------------------------
# JSON events


class JsonView:
    """One JSON object per line on stdout; answers read one per line from stdin, no prompts."""

    interactive = False

    def __init__(self, stdin: Any = None):
        self.stdin = stdin if stdin is not None else sys.stdin
        self._problem_id: str | None = None
        self._part: str | None = None

    def _emit(self, event: str, **data: Any) -> None:
        emit_json({"event": event, **data})

    def start(self, info: dict[str, Any]) -> None:
        self._emit("start", **info)

    def problem(self, problem: Problem, header: dict[str, Any]) -> None:
        self._problem_id, self._part = problem.id, None
        self._emit(
            "problem", **header, id=problem.id, family=problem.family, seed=problem.seed, type=problem.type,
            topic=problem.topic, difficulty=problem.difficulty, marks=problem.marks, tags=list(problem.tags),
            statement=problem.statement_text, statement_md=problem.statement_md,
            options=list(problem.options_text or problem.options),
            shape=_shape(problem),
            parts=[{"label": p.label, "type": p.type, "prompt": p.prompt_text, "shape": _shape(p)}
                   for p in problem.parts],
            source=problem.source, source_label=problem.source_label, hints=len(problem.hints),
            errata=len(problem.errata),
        )

    def part(self, problem: Problem, part: Part, k: int, n: int) -> None:
        self._part = part.label
        self._emit("part", problem_id=problem.id, label=part.label, type=part.type, prompt=part.prompt_text,
                   shape=_shape(part), index=k + 1, of=n)

    def read(self, kind: str, *, row: str | None = None, last: bool = False) -> str:
        line = self.stdin.readline()
        if not line:
            raise EOFError
        # undecodable input bytes (lone surrogates) become U+FFFD here, so a message that quotes the
        # answer (``unexpected '…'``) quotes that, not a Python escape such as '\\udcff'
        return valid_utf8(line.rstrip("\r\n"))

    def invalid(self, text: str, message: str) -> None:
        self._emit("answer", problem_id=self._problem_id, part=self._part, text=text, valid=False, message=message)

    def answer(self, problem: Problem, label: str | None, text: str, parsed: Parsed | ParsedMatrix | ParsedChoice) -> None:
        self._emit("answer", problem_id=problem.id, part=label, text=text, valid=True, parsed=parsed)

    def verdict(self, problem: Problem, target: Problem | Part, verdict: Verdict, *, text: str, parsed: Parsed | ParsedMatrix | ParsedChoice, value: Any,
                expected: str, recorded: Any, time_ms: int, problem_score: float | None = None,
                solution: bool = False, hinted: bool = False) -> None:
        data = verdict.to_json()
        data.update(problem_id=problem.id, part=getattr(target, "label", None) if problem.parts else None,
                    answer=text, expected_text=expected, time_ms=time_ms,
                    recorded_id=getattr(recorded, "id", None), rating=getattr(recorded, "rating", None),
                    due=recorded.due.isoformat() if getattr(recorded, "due", None) else None)
        if problem_score is not None:  # the problem's last answer: its score and marks
            data.update(problem_score=problem_score, marks_earned=problem_score * problem.marks,
                        marks=problem.marks)
        if hinted:
            data["hinted"] = True
        self._emit("verdict", **data)
        if solution:
            self.solution(problem)

    def solution(self, problem: Problem, problem_score: float | None = None) -> None:
        extra = {} if problem_score is None else {"problem_score": problem_score,
                                                  "marks_earned": problem_score * problem.marks,
                                                  "marks": problem.marks}
        self._emit("solution", problem_id=problem.id, text=problem.solution_text, **extra)

    def skipped(self, problem: Problem, expected: str, *, label: str | None = None,
                problem_score: float | None = None, action: str = "skip") -> None:
        score = problem_score or 0.0
        self._emit("skip", problem_id=problem.id, part=label, action=action, expected_text=expected,
                   problem_score=score, marks_earned=score * problem.marks, marks=problem.marks)

    def hint(self, text: str, i: int, n: int) -> None:
        self._emit("hint", problem_id=self._problem_id, text=text, index=i, of=n)

    def errata(self, problem: Problem) -> None:
        for e in problem.errata:
            self._emit("erratum", problem_id=problem.id, where=e.where, printed=e.printed, exact=e.exact,
                       reason=e.reason, kind=e.kind, place=erratum_place(problem, e))

    def reported(self, problem: Problem, answer: str | None, uid: str, data_dir: Any) -> None:
        self._emit("report", problem_id=problem.id, seed=problem.seed, answer=answer, uid=uid,
                   file=f"{data_dir}/reports.jsonl")

    def message(self, text: str) -> None:
        self._emit("message", problem_id=self._problem_id, text=text)

    def end(self, summary: Summary) -> None:
        self._emit("end", **summary.to_json())


def _shape(target: Problem | Part) -> list[int] | None:
    """``[rows, columns]`` of a matrix answer (what a script must send), else None."""
    from drills.answers import key_shape

    shape = key_shape(target.key) if target.type == "matrix" else None
    return list(shape) if shape else None


def make_view(*, as_json: bool = False, plain: bool = False, stdin: Any = None) -> Any:
    """JSON when asked; the rich view when stdin and stdout are terminals (unless ``plain``);
    the plain view otherwise."""
    stdin = stdin if stdin is not None else sys.stdin
    if as_json:
        return JsonView(stdin)
    try:
        tty = stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty and not plain:
        return RichView(stdin)
    return PlainView(stdin)
