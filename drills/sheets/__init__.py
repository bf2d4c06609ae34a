"""Practice sets: one selection of problems written as PDF, Markdown, HTML, Anki, Moodle or JSON.

A :class:`Sheet` holds the numbered problems and the arguments that chose them; each format
module has ``render(sheet, version) -> bytes`` where ``version`` is

- ``"student"``: statements and options only;
- ``"full"``: the same, then the answer key and the worked solutions at the end;
- ``"answers"``: the answer key and the worked solutions alone (the second file of
  ``--answers separate``).

:func:`outputs` maps ``--answers none|end|separate`` to the files to write. Every renderer
is a pure function of the sheet: no clock, no random state, no absolute paths, so the same
arguments give byte-identical files.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from question_bank.problem import Problem
from solver.units import plural

FORMATS: dict[str, tuple[str, str]] = {  # name -> (module, file suffix)
    "pdf": ("drills.sheets.pdf", ".pdf"),
    "md": ("drills.sheets.markdown", ".md"),
    "html": ("drills.sheets.html", ".html"),
    "anki": ("drills.sheets.anki", ".apkg"),
    "moodle": ("drills.sheets.moodle", ".xml"),
    "json": ("drills.sheets.jsonfmt", ".json"),
}
ANSWERS = ("none", "end", "separate")

#: The inline Markdown the problems use: a code span, $$display$$ or $inline$ math, **bold**,
#: *italic*. Every renderer walks a text with this one pattern.
MARKDOWN_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<dmath>\$\$(?P<dbody>.+?)\$\$)"
    r"|(?P<imath>\$(?P<ibody>[^$\n]+?)\$)"
    r"|(?P<bold>\*\*(?P<bbody>.+?)\*\*)"
    r"|(?P<ital>(?<![\w*])\*(?P<ibody2>[^*\s][^*\n]*?)\*(?![\w*]))",
    re.S,
)
TYPE_NAMES = {"mcq": "MCQ", "msq": "MSQ", "nat": "NAT", "integer": "NAT (integer)", "matrix": "NAT (matrix)"}
TYPE_RULES = {
    "mcq": "one correct option",
    "msq": "one or more correct options; all of them and no other",
    "nat": "a number; give it to the precision asked",
    "integer": "an exact integer",
    "matrix": "every entry of the matrix",
}


@dataclass(frozen=True)
class SheetSection:
    """A section of a paper (issue 26): its name, the number of its first question (1-based, the
    numbering runs on across sections as the exam's does), how many questions and marks it holds,
    and its marking rule in one phrase (:func:`marking_rule`)."""

    name: str
    first: int
    count: int
    marks: int
    rule: str
    #: the fraction of its marks a wrong MCQ costs in this section (issue 38: the Moodle export gives
    #: a wrong option this negative grade, as the heading says)
    mcq_penalty: str = "0"

    @property
    def last(self) -> int:
        return self.first + self.count - 1

    def heading(self) -> str:
        """The one line every format prints before the section's first question, e.g.
        ``A: 1-mark questions · Q1–Q30 · 30 questions · 30 marks · wrong MCQ −1/3 of its marks;
        MSQ and NAT no negative marks``."""
        where = f"Q{self.first}" if self.count == 1 else f"Q{self.first}–Q{self.last}"
        return f"{self.name} · {where} · {plural(self.count, 'question')} · {marks_label(self.marks)} · {self.rule}"


#: GATE's marking when a paper names none (drills.exam.marking): a wrong MCQ costs 1/3 of its marks.
_GATE_PENALTIES = {"mcq": "1/3", "msq": "0", "nat": "0"}


def marking_rule(types: list[str], penalties: dict[str, Any] | None = None, partial: tuple[str, ...] = ()) -> str:
    """The marking of a section holding questions of ``types`` (qkv types; ``integer`` is marked as
    NAT) under ``penalties`` (per GATE type, the fraction of its marks a wrong answer costs; GATE's
    when ``None``), in one phrase: ``wrong MCQ −1/3 of its marks; MSQ and NAT no negative marks``."""
    from fractions import Fraction

    pen = {**_GATE_PENALTIES, **(penalties or {})}
    present = [t for t in ("mcq", "msq", "nat") if t in {"nat" if x == "integer" else x for x in types}]
    lose = [f"wrong {t.upper()} −{Fraction(str(pen[t]))} of its marks" for t in present if Fraction(str(pen[t]))]
    free = [t.upper() for t in present if not Fraction(str(pen[t]))]
    out = list(lose)
    if free:
        out.append(" and ".join([", ".join(free[:-1]), free[-1]] if len(free) > 1 else free) + " no negative marks")
    if "msq" in present:
        out.append("MSQ: a share of the marks for some right options and no wrong one" if "msq" in partial
                   else "MSQ all or nothing")
    return "; ".join(out) if out else "no negative marks"


def paper_sections(labels: list[str] | tuple[str, ...], problems: list[Problem],
                   penalties: dict[str, Any] | None = None) -> list[SheetSection]:
    """The sections of a paper whose question ``i`` lies in section ``labels[i]``: one per run of
    equal labels, in order, numbered on from the section before. ``[]`` when there are no labels."""
    if not labels:
        return []
    if len(labels) != len(problems):
        raise ValueError(f"{len(labels)} section labels for {len(problems)} questions")
    out: list[SheetSection] = []
    start = 0
    for k in range(1, len(labels) + 1):
        if k == len(labels) or labels[k] != labels[start]:
            ps = problems[start:k]
            out.append(SheetSection(str(labels[start]), start + 1, k - start, sum(p.marks for p in ps),
                                    marking_rule([p.type for p in ps], penalties),
                                    str({**_GATE_PENALTIES, **(penalties or {})}["mcq"])))
            start = k
    return out


@dataclass
class Sheet:
    title: str
    problems: list[Problem]
    seed: int
    arguments: dict[str, Any] = field(default_factory=dict)  # the filters, as given
    date: str | None = None  # printed only when asked for (``--date``)
    moodle_msq: str = "multichoice"  # or "allornothing" (``--moodle-msq``, see drills.sheets.moodle)
    #: when the content was last changed (seconds since the epoch; see :func:`content_epoch`): the Anki
    #: notes' modification time. ``None``: a fixed 2024-01-01.
    epoch: int | None = None
    #: Anki note identity (``--anki-notes``): "shared" (a problem's note is the same in every sheet) or
    #: "per-sheet" (a note of its own in each sheet's deck); see drills.sheets.anki
    anki_notes: str = "shared"
    #: Moodle encoding of matrix and multi-part questions (``--moodle-cloze``): "cloze" (core Moodle; whole
    #: weights, see drills.sheets.moodle) or "formulas" (plugin qtype_formulas: worth exactly their marks)
    moodle_cloze: str = "cloze"
    #: a paper's sections (``qkv sheet --paper``, issue 26): each format prints a section's heading
    #: before its first question; empty on a practice set
    sections: list[SheetSection] = field(default_factory=list)

    def section_at(self, number: int) -> SheetSection | None:
        """The section whose first question is ``number`` (1-based), else ``None``."""
        return next((s for s in self.sections if s.first == number), None)

    def section_of(self, number: int) -> SheetSection | None:
        """The section that holds question ``number`` (1-based), else ``None``."""
        return next((s for s in self.sections if s.first <= number <= s.last), None)

    @property
    def total_marks(self) -> int:
        return sum(p.marks for p in self.problems)

    def numbered(self) -> list[tuple[int, Problem]]:
        return list(enumerate(self.problems, 1))


def content_epoch(*extra: Path) -> int:
    """The newest modification time (whole seconds) of the files that make a sheet's content:
    the question bank, the solver and the sheet writers (and ``extra`` files, e.g. the JSON of
    ``--from``). Unchanged sources give the same value (byte-identical files, no churn in
    Anki); editing any of them (a corrected key) gives a later one, so Anki's "update if
    newer" takes the new notes. ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention), when
    set, is used instead: the same bytes on every machine, for a builder who sets it anew
    with each change."""
    import os

    if (env := os.environ.get("SOURCE_DATE_EPOCH", "").strip()).isdigit():
        return int(env)
    here = Path(__file__).resolve().parent
    roots = [here, here.parents[1] / "question_bank", here.parents[1] / "solver"]
    newest = 0.0
    for root in roots:
        for f in root.rglob("*"):
            if f.suffix in (".py", ".toml", ".json") and "__pycache__" not in f.parts:
                newest = max(newest, f.stat().st_mtime)
    for f in extra:
        newest = max(newest, f.stat().st_mtime)
    return int(newest)


def part_prompts(p: Problem) -> list[tuple[str, str]]:
    """``[("(a)", prompt Markdown)]`` for a multi-part problem, else ``[]``."""
    return [(f"({pt.label})", pt.prompt_md) for pt in p.parts]


def answers_path(out: Path) -> Path:
    """``sheet.pdf`` -> ``sheet.answers.pdf`` (next to it)."""
    return out.with_name(f"{out.stem}.answers{out.suffix}")


def render(sheet: Sheet, fmt: str, version: str) -> bytes:
    module, _ = FORMATS[fmt]
    return importlib.import_module(module).render(sheet, version)


def outputs(sheet: Sheet, fmt: str, answers: str, out: Path) -> dict[Path, bytes]:
    """The files that ``--answers`` asks for: ``{path: bytes}``."""
    if answers == "none":
        return {out: render(sheet, fmt, "student")}
    if answers == "end":
        return {out: render(sheet, fmt, "full")}
    if answers == "separate":
        return {out: render(sheet, fmt, "student"), answers_path(out): render(sheet, fmt, "answers")}
    raise ValueError(f"answers must be one of {ANSWERS}")


def info_line(sheet: Sheet) -> str:
    """The line under the title: questions, marks (a paper's time), seed, date."""
    info = f"{plural(len(sheet.problems), 'question')} · {marks_label(sheet.total_marks)}"
    minutes = sheet.arguments.get("minutes") if sheet.sections else None
    if isinstance(minutes, int | float) and not isinstance(minutes, bool) and minutes > 0:
        info += f" · {plural(minutes, 'minute')}"
    info += f" · seed {sheet.seed}"
    if sheet.date:
        info += f" · {sheet.date}"
    return info


def marks_label(m: int) -> str:
    return plural(m, "mark")


def key_lines(p: Problem) -> list[tuple[str, Any]]:
    """``[(label, key)]``: one line per part of a multi-part problem, else one for the problem."""
    if p.parts:
        return [(f"({pt.label})", pt.key) for pt in p.parts]
    return [("", p.key)]


def with_partial(sections: list[SheetSection], problems: list[Problem], penalties: dict[str, Any] | None,
                 partial: tuple[str, ...]) -> list[SheetSection]:
    """``sections`` with their marking rule restated for a blueprint's partial credit (issue 41:
    ``partial = ["msq"]``); the same sections when there is none."""
    if not partial:
        return sections
    import dataclasses

    return [dataclasses.replace(s, rule=marking_rule([p.type for p in problems[s.first - 1:s.last]], penalties,
                                                     partial)) for s in sections]
