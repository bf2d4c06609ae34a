"""Blueprints of mock papers: what a teacher writes to say how a paper is made (issue 26).

A blueprint is a TOML file (a built-in one in ``drills/exam/blueprints/``, named by its file name
without ``.toml``, or any file a teacher writes)::

    name = "gate"
    title = "GATE-style mock paper: 65 questions, 100 marks, 180 minutes"
    source = "where the proportions come from"
    minutes = 180
    partial = []         # ["msq"]: an MSQ with some right options and no wrong one earns that share

    [marking]            # the fraction of a question's marks a wrong answer costs, per type
    mcq = "1/3"
    msq = "0"
    nat = "0"

    [[section]]
    name = "A: 1-mark questions"
    topics = []          # empty: every topic; else the bank's topics (or family prefixes, tags)
    questions = [ { type = "mcq", marks = 1, count = 16 }, { type = "nat", marks = 1, count = 10 } ]

Types are GATE's three (``nat`` also takes qkv's exact-integer questions, marked as NAT); marks 1
or 2. :func:`assemble` draws the paper: each row's questions from the section's topics, at most one
per family or curated item while the bank allows, then more variants of the same families (never
the same statement twice); the same blueprint and seed always give the same paper.
"""

from __future__ import annotations

import random
import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from drills.exam.marking import GATE_TYPES, MARK_VALUES

__all__ = ["Row", "Section", "Blueprint", "BlueprintError", "builtin_names", "load", "parse", "assemble"]

BUILTIN_DIR = Path(__file__).with_name("blueprints")
#: A blueprint file is read only up to this size, and only this deeply nested (issue 42: a file
#: nested 5,000 deep ended in an internal error).
MAX_BYTES = 1 << 20
MAX_NESTING = 16
#: A marking fraction is written as 1/3, 0.25 or 0: a few digits (issue 42: "1e-100000000" was a
#: number with a hundred million digits to build before anything could be refused).
_FRACTION = re.compile(r"\s*(\d{1,6}(\s*/\s*\d{1,6})?|\d{0,6}\.\d{1,6})\s*")
#: Draws tried per question a row asks for, before the bank is declared too small for it.
_TRIES_PER_QUESTION = 40


class BlueprintError(ValueError):
    """A blueprint that cannot be read or cannot be filled from the bank (one line, names the field)."""


@dataclass(frozen=True)
class Row:
    type: str  # mcq | msq | nat
    marks: int  # 1 | 2
    count: int
    #: the type that makes up the row when the bank offers fewer questions of ``type`` (a GATE paper's
    #: split between types is the setter's choice; choice levels a test-wise student games are not
    #: offered, question_bank.choice_record); "" for none: the paper is refused
    fill: str = ""


@dataclass(frozen=True)
class Section:
    name: str
    rows: tuple[Row, ...]
    topics: tuple[str, ...] = ()

    @property
    def questions(self) -> int:
        return sum(r.count for r in self.rows)

    @property
    def marks(self) -> int:
        return sum(r.count * r.marks for r in self.rows)


@dataclass(frozen=True)
class Blueprint:
    name: str
    title: str
    minutes: float
    sections: tuple[Section, ...]
    penalties: dict[str, Fraction] = field(default_factory=lambda: {"mcq": Fraction(1, 3), "msq": Fraction(0),
                                                                     "nat": Fraction(0)})
    source: str = ""
    #: GATE types whose answers earn partial credit (``partial = ["msq"]``; issue 41): an MSQ
    #: answered with some of the right options and no wrong one earns that share of its marks
    partial: tuple[str, ...] = ()

    @property
    def questions(self) -> int:
        return sum(s.questions for s in self.sections)

    @property
    def marks(self) -> int:
        return sum(s.marks for s in self.sections)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "minutes": self.minutes, "source": self.source,
                "questions": self.questions, "marks": self.marks,
                "marking": {t: str(f) for t, f in self.penalties.items()}, "partial": list(self.partial),
                "sections": [{"name": s.name, "topics": list(s.topics), "questions": s.questions, "marks": s.marks,
                              "rows": [{"type": r.type, "marks": r.marks, "count": r.count, **({"fill": r.fill} if r.fill else {})}
                                       for r in s.rows]}
                             for s in self.sections]}


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def load(name_or_path: str) -> Blueprint:
    """A built-in blueprint by name, or a blueprint file by path."""
    path = Path(name_or_path)
    if not path.suffix and (BUILTIN_DIR / f"{name_or_path}.toml").is_file():
        path = BUILTIN_DIR / f"{name_or_path}.toml"
    elif not path.is_file():
        raise BlueprintError(f"no blueprint {name_or_path!r}: give a file, or one of {', '.join(builtin_names())}")
    from drills.files import read_capped
    from drills.output import InputError

    try:
        text = read_capped(path, MAX_BYTES, "--paper").decode("utf-8")
    except InputError as e:
        raise BlueprintError(e.message.removeprefix("--paper: ")) from None
    except UnicodeDecodeError as e:
        raise BlueprintError(f"cannot read {path}: {e}") from None
    depth = max((len(m) for m in re.findall(r"[\[{]+", text)), default=0)
    if depth > MAX_NESTING:  # tomllib recurses once per level: refused before it reads
        raise BlueprintError(f"{path.name}: nested {depth} levels deep; a blueprint needs at most {MAX_NESTING}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BlueprintError(f"{path.name}: not TOML: {e}") from None
    except RecursionError:
        raise BlueprintError(f"{path.name}: nested too deep for a blueprint") from None
    return parse(data, default_name=path.stem, where=path.name)


def _fraction(v: Any, where: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, str | int | float) or not _FRACTION.fullmatch(str(v)):
        raise BlueprintError(f"{where}: a fraction such as \"1/3\", \"0.25\" or \"0\", not {_shown(v)}")
    try:
        f = Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        raise BlueprintError(f"{where}: not a fraction: {v!r}") from None
    if not 0 <= f <= 1:
        raise BlueprintError(f"{where}: a penalty is a fraction of the marks between 0 and 1, not {v}")
    return f


def _shown(v: Any) -> str:
    """A value from the file, for a message: short, and no control character reaches the terminal."""
    from drills.output import strip_controls

    text = repr(v) if not isinstance(v, str) else repr(v[:60] + ("…" if len(v) > 60 else ""))
    return strip_controls(text[:80], keep="")


def _int(v: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise BlueprintError(f"{where}: a whole number from {lo} to {hi}, not {v!r}")
    return v


#: The fields of a ``[[section]]``.
SECTION_FIELDS = frozenset({"name", "topics", "questions"})


def _text(v: Any, where: str) -> str:
    """A name or title from the file, as plain text: control characters (escape sequences) dropped."""
    from drills.output import strip_controls

    if not isinstance(v, str):
        raise BlueprintError(f"{where}: a string, not {_shown(v)}")
    return strip_controls(v, keep="")[:200]


def _parse_fields(data: dict[str, Any], *, default_name: str = "paper", where: str = "blueprint") -> Blueprint:
    """A :class:`Blueprint` from TOML data; :class:`BlueprintError` names the field at fault."""
    known = {"name", "title", "source", "minutes", "marking", "section"}
    extra = sorted(set(data) - known)
    if extra:
        raise BlueprintError(f"{where}: unknown field {extra[0]!r} (fields: {', '.join(sorted(known))})")
    minutes = data.get("minutes")
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not 0 < minutes <= 24 * 60:
        raise BlueprintError(f"{where}: minutes: a number of minutes from 1 to 1440, not {minutes!r}")
    penalties = {"mcq": Fraction(1, 3), "msq": Fraction(0), "nat": Fraction(0)}
    marking = data.get("marking", {})
    if not isinstance(marking, dict):
        raise BlueprintError(f"{where}: [marking] is a table of type = fraction")
    for t, v in marking.items():
        if t not in GATE_TYPES:
            raise BlueprintError(f"{where}: marking.{t}: types are {', '.join(GATE_TYPES)}")
        penalties[t] = _fraction(v, f"{where}: marking.{t}")
    sections = []
    raw = data.get("section")
    if not isinstance(raw, list) or not raw:
        raise BlueprintError(f"{where}: at least one [[section]]")
    for i, s in enumerate(raw, 1):
        at = f"{where}: section {i}"
        if not isinstance(s, dict):
            raise BlueprintError(f"{at}: a table")
        unknown = sorted(set(s) - SECTION_FIELDS)
        if unknown:  # a misspelt "topic =" would otherwise give a paper on every topic
            raise BlueprintError(f"{at}: unknown field {_shown(unknown[0])} (fields: {', '.join(sorted(SECTION_FIELDS))})")
        topics = s.get("topics", [])
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise BlueprintError(f"{at}: topics: a list of topic names")
        rows = []
        qs = s.get("questions")
        if not isinstance(qs, list) or not qs:
            raise BlueprintError(f"{at}: questions: a list of {{ type, marks, count }}")
        for j, r in enumerate(qs, 1):
            rat = f"{at}, row {j}"
            if not isinstance(r, dict) or set(r) - {"type", "marks", "count", "fill"}:
                raise BlueprintError(f"{rat}: {{ type = \"mcq\", marks = 1, count = 5 }} (optionally fill = \"nat\")")
            if r.get("type") not in GATE_TYPES:
                raise BlueprintError(f"{rat}: type: one of {', '.join(GATE_TYPES)}, not {r.get('type')!r}")
            fill = r.get("fill", "")
            if fill and (fill not in GATE_TYPES or fill == r["type"]):
                raise BlueprintError(f"{rat}: fill: another of {', '.join(GATE_TYPES)}, not {_shown(fill)}")
            marks = _int(r.get("marks"), f"{rat}: marks", min(MARK_VALUES), max(MARK_VALUES))
            rows.append(Row(r["type"], marks, _int(r.get("count"), f"{rat}: count", 1, 200), fill))
        sections.append(Section(_text(s.get("name") or f"Section {i}", f"{at}: name"), tuple(rows), tuple(topics)))
    return Blueprint(name=_text(data.get("name") or default_name, f"{where}: name"),
                     title=_text(data.get("title") or default_name, f"{where}: title"),
                     minutes=float(minutes), sections=tuple(sections), penalties=penalties,
                     source=_text(data.get("source", ""), f"{where}: source"))


def _fingerprint(p: Any) -> str:
    return " ".join(p.statement_md.split()) + "\x00" + "\x00".join(p.options)


def _skill(c: Any, p: Any) -> str:
    """What a question practises, for a paper to ask it once (issue 38): a family's id without its view
    suffix (``counting.kv_cache`` and ``counting.kv_cache_mcq``, ``concept.mask_pairs`` and ``_one``
    are one skill), or for a curated item its topic and first tag (the bank's six "count an encoder
    layer's parameters" items are one skill)."""
    import re

    if c.difficulty is not None:  # a family
        return re.sub(r"_(mcq|one)$", "", c.ref)
    return f"curated:{p.topic}:{p.tags[0] if p.tags else c.ref}"


def assemble(bp: Blueprint, seed: int) -> Any:
    """The paper of ``bp`` for ``seed`` (a :class:`drills.exam.paper.Paper` with its sections,
    time and marking), the same for the same arguments. :class:`BlueprintError` when the bank
    cannot fill a row (it names the row and how many it found)."""
    from drills.exam.marking import PAPER_TYPES, paper_type
    from drills.exam.paper import Paper, _Candidate, _candidates, _materialise
    from question_bank import bank

    kinds = {e.id: {PAPER_TYPES[t] for t in e.types if t in PAPER_TYPES} for e in bank.entries()}
    rng = random.Random(f"qkv-paper:{bp.name}:{seed}")
    problems: list[Any] = []
    labels: list[str] = []
    seen: set[str] = set()
    used: set[str] = set()
    skills: set[str] = set()
    for s in bp.sections:
        pool = _candidates(s.topics, rng)
        rng.shuffle(pool)

        def take(rtype: str, count: int, marks: int, *, must: bool, repeat: bool = True, pool: list = pool, s: Any = s) -> int:
            """Draw up to ``count`` questions of ``rtype`` and ``marks`` marks: how many were found
            (``repeat``: a skill the paper already asks may be asked again when the bank has no other)."""
            got = 0
            tries = 0
            rounds = 0
            fits = [c for c in pool if rtype in kinds.get(c.ref, ())]
            if not fits and must:  # a topic that matches nothing, or no question of this type on it
                topics = f" on {', '.join(_shown(t) for t in s.topics)}" if s.topics else ""
                raise BlueprintError(f"{bp.name}: section {s.name!r} asks for {rtype.upper()} questions{topics}; "
                                     "the bank has none (`qkv bank list` shows the topics)")
            queue = [c for c in fits if c.ref not in used]
            while got < count:
                if not queue:
                    rounds += 1
                    if rounds > 4 or (rounds >= 2 and not repeat):
                        break
                    # more variants of the families (fresh seeds), once each family has been used
                    queue = [_Candidate(c.ref, c.difficulty, rng.randrange(1_000_000)) for c in fits if c.difficulty]
                    rng.shuffle(queue)
                    # a skill the paper has not asked yet first (popped from the end), then the others
                    queue.sort(key=lambda c: re.sub(r"_(mcq|one)$", "", c.ref) not in skills)
                if not queue:
                    continue
                c = queue.pop()
                tries += 1
                if tries > _TRIES_PER_QUESTION * count * 6:
                    break
                if rounds == 0 and c.ref in used:
                    continue
                p = _materialise(c)
                if p is None or p.marks != marks or paper_type(p.type) != rtype or _fingerprint(p) in seen:
                    continue
                if rounds < 2 and _skill(c, p) in skills:  # the same skill twice only when the bank has no other
                    continue
                problems.append(p)
                labels.append(s.name)
                seen.add(_fingerprint(p))
                skills.add(_skill(c, p))
                used.add(c.ref)
                got += 1
            return got

        for row in s.rows:
            # a row with a fill type takes the fill before it asks a skill twice
            got = take(row.type, row.count, row.marks, must=not row.fill, repeat=not row.fill)
            if got < row.count and row.fill:
                got += take(row.fill, row.count - got, row.marks, must=True)
            if got < row.count:
                topics = f" on {', '.join(s.topics)}" if s.topics else ""
                kind = row.type.upper() + (f" (or {row.fill.upper()})" if row.fill else "")
                raise BlueprintError(f"{bp.name}: section {s.name!r} asks for {row.count} {kind} questions "
                                     f"of {row.marks} mark{'s' if row.marks > 1 else ''}{topics}; the bank gave {got}")
    return Paper(problems=tuple(problems), seed=seed, topics=(), sections=tuple(labels), minutes=bp.minutes,
                 penalties=dict(bp.penalties), blueprint=bp.name, title=bp.title, partial=tuple(bp.partial))


def parse(data: dict[str, Any], *, default_name: str = "paper", where: str = "blueprint") -> Blueprint:
    """A :class:`Blueprint` from TOML data; :class:`BlueprintError` names the field at fault. The
    optional ``partial`` (issue 41: the types that earn partial credit, ``["msq"]`` or ``[]``) is
    read here, every other field by :func:`_parse_fields`."""
    import dataclasses

    if not isinstance(data, dict) or "partial" not in data:
        return _parse_fields(data, default_name=default_name, where=where)
    partial = data["partial"]
    if not isinstance(partial, list) or any(t != "msq" for t in partial):
        raise BlueprintError(f"{where}: partial: a list of the types that earn partial credit: [\"msq\"] or []")
    bp = _parse_fields({k: v for k, v in data.items() if k != "partial"}, default_name=default_name, where=where)
    return dataclasses.replace(bp, partial=tuple(dict.fromkeys(partial)))
