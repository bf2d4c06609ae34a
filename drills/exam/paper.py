"""The paper of a mock exam: questions drawn from the bank as GATE sets them (1- and 2-mark, MCQ,
MSQ and NAT), in order of marks, and the time it allows."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drills.exam.marking import PAPER_TYPES, paper_type

if TYPE_CHECKING:
    from question_bank.problem import Problem

DEFAULT_N = 10


#: GATE's pace: 100 marks in 180 minutes.
MINUTES_PER_MARK = 1.8


@dataclass(frozen=True)
class Paper:
    """The questions of one exam, in order (1-mark questions first), and how they were drawn."""

    problems: tuple[Any, ...]  # question_bank.problem.Problem
    seed: int
    topics: tuple[str, ...] = ()
    # issue 26: a paper drawn from a blueprint (drills.exam.blueprint) has sections (one name per
    # question), its own time, its marking (fraction of the marks a wrong answer costs, per GATE type)
    sections: tuple[str, ...] = ()
    minutes: float | None = None
    penalties: dict[str, Any] | None = None
    blueprint: str = ""
    title: str = ""
    #: the GATE types that earn partial credit on a blueprint's paper (``partial = ["msq"]``; issue
    #: 41), marked by :func:`drills.exam.marking.paper_marks` as ``qkv grade`` marks them
    partial: tuple[str, ...] = ()

    @property
    def max_marks(self) -> int:
        return sum(p.marks for p in self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    def to_json(self) -> dict[str, Any]:
        out = {"seed": self.seed, "topics": list(self.topics), "max_marks": self.max_marks,
               "problems": [{"number": i + 1, "id": p.id, "type": p.type, "paper_type": paper_type(p.type),
                             "marks": p.marks, "topic": p.topic} for i, p in enumerate(self.problems)]}
        if self.blueprint:
            out.update(blueprint=self.blueprint, title=self.title, minutes=self.minutes,
                       marking={t: str(f) for t, f in (self.penalties or {}).items()}, partial=list(self.partial))
            for q, sec in zip(out["problems"], self.sections, strict=True):
                q["section"] = sec
        return out

    def section_of(self, i: int) -> str:
        """The section of question ``i`` (0-based); "" on a paper without sections."""
        return self.sections[i] if i < len(self.sections) else ""


def on_paper(problem: Problem) -> bool:
    """True when a problem can be an exam question: a GATE type (or integer), 1 or 2 marks,
    a single answer (no parts)."""
    return problem.type in PAPER_TYPES and problem.marks in (1, 2) and not problem.parts


def default_minutes(paper: Paper) -> float:
    """The blueprint's time, else GATE's pace: :data:`MINUTES_PER_MARK` minutes per mark, rounded up
    to a whole minute."""
    if paper.minutes is not None:
        return float(paper.minutes)
    return float(math.ceil(MINUTES_PER_MARK * paper.max_marks))


@dataclass
class _Candidate:
    ref: str  # family id or curated item id
    difficulty: str | None
    seed: int
    problem: Problem | None = None  # generated on first use
    failed: bool = False


def _candidates(topics: Sequence[str], rng: random.Random) -> list[_Candidate]:
    """One candidate per family or curated item that can give a GATE-type question (a family
    with a difficulty and a seed drawn from ``rng``), in a fixed order (by id): every family and
    every item is equally likely to come first in the shuffle."""
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
    for e in sorted(seen.values(), key=lambda e: e.id):
        if e.kind == "family":
            out.append(_Candidate(e.id, rng.choice(tuple(e.difficulties)), rng.randrange(1_000_000)))
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

    Every family and curated item that can produce a GATE-type question is one candidate (a
    family with a difficulty and a seed drawn from the exam's seed); candidates are shuffled
    with ``random.Random("qkv-exam:<seed>")`` and taken in that order, at most one question per
    family or item, aiming at half 2-mark questions (``n // 2``), taken as they come, then the
    1-mark questions with no question type (MCQ, MSQ, NAT) above ``⌈n/2⌉ + 1`` on the paper
    while the pool allows, then filling up with whatever is left.

    Why so: the bank has few 2-mark MCQ and MSQ questions (6 of 35 2-mark families and items).
    A cap of ``⌈n/3⌉ + 1`` per type over the whole paper, with one candidate per family *and
    difficulty*, forced two or three of those six onto most papers: over 60 seeds
    ``hardware.matmul_bound`` sat on 51 papers, and seeds 7 and 11 shared their 2-mark MCQs
    (issue 23). Raises ``drills.output.InputError`` when fewer than ``n`` match."""
    from drills.output import InputError

    topics = tuple(dict.fromkeys(t for t in topics if t))
    if n < 1:
        raise InputError("an exam needs at least one question", "-n")
    rng = random.Random(f"qkv-exam:{seed}")
    cands = _candidates(topics, rng)
    rng.shuffle(cands)
    want = {2: n // 2, 1: n - n // 2}
    type_cap = math.ceil(n / 2) + 1
    chosen: list[Any] = []
    used: set[str] = set()
    by_marks = {1: 0, 2: 0}
    by_type: dict[str, int] = {}

    def take(strict_marks: bool, strict_types: bool, only: int | None = None) -> None:
        for c in cands:
            if len(chosen) >= n:
                return
            if c.ref in used:
                continue
            p = _materialise(c)
            if p is None or (only is not None and p.marks != only):
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

    take(True, False, only=2)  # the 2-mark questions as they come (their pool is small: no cap)
    take(True, True)  # the 1-mark questions balance the types (their pool is large)
    take(True, False)
    take(False, False)
    if len(chosen) < n:
        where = f" on {', '.join(topics)}" if topics else ""
        raise InputError(f"the bank has only {len(chosen)} GATE-type questions{where}; ask for at most "
                         f"{len(chosen)} with -n" if chosen else f"no GATE-type (MCQ, MSQ, NAT) questions{where}; "
                         "`qkv bank list` shows the topics", "-n" if chosen else "--topic")
    ordered = sorted(chosen, key=lambda p: p.marks)  # stable: 1-mark first, draw order within
    return Paper(problems=tuple(ordered), seed=seed, topics=topics)
