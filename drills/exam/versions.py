"""Versions of one paper for a class (issue 41): ``qkv sheet --versions N --paper FILE.toml`` or
``--students roster.csv``, and the combined key file that ``qkv grade`` reads.

How a version is made
---------------------
Version 1 is the paper of the blueprint and seed (what ``qkv sheet --paper`` and ``qkv exam
--paper`` give). Every other version holds the same *items*: question ``k`` of version 1 is item
``k``; in version ``v`` a family's item is another draw of the same family at the same difficulty
(a seed drawn from ``random.Random("qkv-versions:<paper>:<seed>:<v>")``; a draw with other marks or
another GATE type, or a statement already on that version, is drawn again), a curated item is the
item itself (its text cannot be redrawn), and the questions of each section are shuffled (the
blueprint's sections stay in order, with their questions and marks). Options of a curated item are
not reordered: their worked solutions name the options by letter. The same arguments give the same
versions.

The key file
------------
One JSON object (``"format": "qkv-key"``) with the blueprint (its marking and ``partial``), the
seed, and per version its id (``V01`` …), its student (id and name, from a roster) and per question
what grading needs: the item, the problem id, the family or curated item, the seed, the
difficulty, the type, the marks and the key as printed. ``qkv grade`` regenerates every problem
from it (the key is computed, never read back from the file) and warns where the bank now gives
another key.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import dataclass
from typing import Any

from drills.exam.blueprint import Blueprint, BlueprintError, _fingerprint, assemble
from drills.exam.marking import paper_type

__all__ = ["Version", "Student", "make_versions", "key_json", "read_roster", "version_id", "KEY_FORMAT",
           "MAX_VERSIONS"]

KEY_FORMAT = "qkv-key"
KEY_VERSION = 1
MAX_VERSIONS = 500
_TRIES = 40


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""


@dataclass(frozen=True)
class Version:
    """One version: its id, its student (with a roster), its questions in printed order, the item
    (1-based question number on version 1) of each, and the section of each."""

    id: str
    number: int
    problems: tuple[Any, ...]
    items: tuple[int, ...]
    sections: tuple[str, ...]
    student: Student | None = None


def version_id(number: int, total: int) -> str:
    """``V07`` (``V007`` with 100 versions or more)."""
    return f"V{number:0{max(2, len(str(total)))}d}"


def _redraw(p: Any, rng: random.Random, seen: set[str]) -> Any | None:
    """Another draw of ``p``'s family at ``p``'s difficulty with the same marks and GATE type and a
    statement not in ``seen``; None when :data:`_TRIES` draws give none."""
    from drills.exam.paper import on_paper
    from question_bank import bank

    for _ in range(_TRIES):
        s = rng.randrange(1_000_000)
        try:
            q = bank.problem(p.family, seed=s, difficulty=p.difficulty)
        except Exception:  # noqa: BLE001 - a draw the family cannot make is not used (as the paper does)
            continue
        if (on_paper(q) and q.marks == p.marks and paper_type(q.type) == paper_type(p.type)
                and _fingerprint(q) not in seen):
            return q
    return None


def make_versions(bp: Blueprint, seed: int, count: int, students: list[Student] | None = None,
                  notes: list[str] | None = None) -> list[Version]:
    """``count`` versions of the paper of ``bp`` and ``seed`` (one per student with ``students``).
    A family that gives no other draw keeps version 1's question there (said in ``notes``)."""
    paper = assemble(bp, seed)
    base = list(paper.problems)
    labels = list(paper.sections) or [""] * len(base)
    total = len(students) if students else count
    out: list[Version] = []
    for v in range(1, total + 1):
        rng = random.Random(f"qkv-versions:{bp.name}:{seed}:{v}")
        if v == 1:
            problems, items = list(base), list(range(1, len(base) + 1))
        else:
            seen = {_fingerprint(p) for p in base if p.family is None}
            drawn: list[Any] = []
            for k, p in enumerate(base, 1):
                q = p
                if p.family is not None:
                    got = _redraw(p, rng, seen)
                    if got is None:
                        if notes is not None:
                            notes.append(f"{version_id(v, total)}: {p.family} ({p.difficulty}) gave no other draw; "
                                         f"question {k} of version 1 is used again")
                    else:
                        q = got
                seen.add(_fingerprint(q))
                drawn.append(q)
            problems, items = [], []
            start = 0
            for end in range(1, len(base) + 1):  # shuffle within each section
                if end == len(base) or labels[end] != labels[start]:
                    idx = list(range(start, end))
                    rng.shuffle(idx)
                    problems += [drawn[i] for i in idx]
                    items += [i + 1 for i in idx]
                    start = end
        out.append(Version(id=version_id(v, total), number=v, problems=tuple(problems), items=tuple(items),
                           sections=tuple(labels[i - 1] for i in items),
                           student=students[v - 1] if students else None))
    return out


def key_json(bp: Blueprint, seed: int, versions: list[Version], title: str) -> dict[str, Any]:
    """The combined key file's object (see the module's docstring)."""
    from question_bank.grading import describe_key
    from question_bank.problem import key_value

    def question(n: int, item: int, p: Any, section: str) -> dict[str, Any]:
        return {"number": n, "item": item, "id": p.id, "family": p.family,
                "curated": p.id if p.family is None else None, "seed": p.seed, "difficulty": p.difficulty,
                "type": p.type, "paper_type": paper_type(p.type), "marks": p.marks, "section": section,
                "key": describe_key(p.key, p.options_text or None), "answer_key": key_value(p.key)}

    return {
        "format": KEY_FORMAT, "format_version": KEY_VERSION, "title": title, "paper": bp.name, "seed": seed,
        "blueprint": bp.to_json(),
        "marking": {t: str(f) for t, f in bp.penalties.items()},
        "partial": list(bp.partial),
        "versions": [{"id": v.id, "student": None if v.student is None else {"id": v.student.id,
                                                                              "name": v.student.name},
                      "questions": [question(n, item, p, sec) for n, (item, p, sec)
                                    in enumerate(zip(v.items, v.problems, v.sections, strict=True), 1)]}
                     for v in versions],
    }


def key_bytes(obj: dict[str, Any]) -> bytes:
    from drills.output import jsonable

    return (json.dumps(jsonable(obj), ensure_ascii=False, indent=1, sort_keys=False) + "\n").encode("utf-8")


# ----------------------------------------------------------------------------------------------
# reading CSV files a spreadsheet or a form wrote


def decode_csv(data: bytes) -> tuple[str, str | None]:
    """The text of a CSV file and a note when it was not UTF-8: UTF-8 (a byte-order mark dropped),
    else Windows-1252 (what Excel writes for "CSV" on Western systems)."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "not UTF-8: read as Windows-1252"


def csv_rows(text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and ``(line, cells)`` of each non-blank row; the delimiter is the header line's
    comma, semicolon (spreadsheets with a decimal comma) or tab."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    counts = {d: first.count(d) for d in (",", ";", "\t")}
    delim = max(counts, key=lambda d: counts[d]) if any(counts.values()) else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    rows: list[tuple[int, list[str]]] = []
    header: list[str] | None = None
    try:
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if header is None:
                header = [c.strip() for c in cells]
            else:
                rows.append((reader.line_num, cells))
    except csv.Error as e:
        raise ValueError(f"unreadable CSV (line {reader.line_num}): {e}") from None
    return header or [], rows


def column(header: list[str], names: tuple[str, ...]) -> int | None:
    """The index of the first header cell that is one of ``names`` (case, spaces, ``_`` and ``-``
    ignored)."""
    def norm(s: str) -> str:
        return re.sub(r"[\s_\-]", "", s.lower())

    want = [norm(n) for n in names]
    for w in want:
        for i, h in enumerate(header):
            if norm(h) == w:
                return i
    return None


STUDENT_COLUMNS = ("student", "student id", "studentid", "id", "roll", "roll number", "roll no", "email",
                   "email address", "username", "user")
NAME_COLUMNS = ("name", "student name", "full name")


def read_roster(data: bytes, where: str) -> list[Student]:
    """The students of a roster CSV (a header naming the id column: student, id, roll number,
    email …; a name column optional; other columns ignored). A row without an id or an id given
    twice is refused (one line naming the line): a paper is never made for half a roster."""
    text, _ = decode_csv(data)
    try:
        header, rows = csv_rows(text)
    except ValueError as e:
        raise BlueprintError(f"{where}: {e}") from None
    ci = column(header, STUDENT_COLUMNS)
    if ci is None:
        raise BlueprintError(f"{where}: the header names no student column (student, id, roll number, email); "
                             f"it has {', '.join(repr(h[:30]) for h in header[:6]) or 'nothing'}")
    ni = column(header, NAME_COLUMNS)
    out: list[Student] = []
    seen: dict[str, int] = {}
    for line, cells in rows:
        sid = cells[ci].strip() if ci < len(cells) else ""
        if not sid:
            raise BlueprintError(f"{where}: line {line}: no student id")
        if sid in seen:
            raise BlueprintError(f"{where}: line {line}: student {sid[:40]!r} is on line {seen[sid]} too")
        seen[sid] = line
        name = cells[ni].strip() if ni is not None and ni < len(cells) else ""
        out.append(Student(sid[:200], name[:200]))
    if not out:
        raise BlueprintError(f"{where}: no students")
    if len(out) > MAX_VERSIONS:
        raise BlueprintError(f"{where}: {len(out)} students; at most {MAX_VERSIONS} versions")
    return out
