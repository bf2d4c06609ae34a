"""``qkv grade KEYFILE answers.csv`` (issue 41): a class's answers graded by the one judge.

- :func:`load_key` reads a key file that ``qkv sheet --versions``/``--students`` wrote and
  regenerates every question from the bank (family, seed and difficulty, or the curated item): the
  key is computed, never read back; where the bank now gives another key than the file printed, a
  note says so.
- :func:`read_answers` reads the CSV a spreadsheet or a form exports: a byte-order mark, quoting,
  a comma, semicolon or tab, columns in any order and extra columns (named by header) are all fine.
  Long form: one row per student and question (columns student, version, question, answer; the
  version may be left out when a roster gives it or there is one version). Wide form (a form's
  export): one row per student, a column per question (``Q1``, ``Question 2`` …). A row that
  cannot be read is kept in :attr:`Answers.unread` with why, never dropped.
- :func:`grade_class` reads each answer with the quiz's reader (:func:`drills.answers.read_answer`:
  units, scales, fractions, option letters or text, matrices), grades it with
  :func:`question_bank.grading.grade` and marks it by the blueprint
  (:func:`drills.exam.marking.paper_marks`: negative marks for a wrong MCQ, none for MSQ and NAT
  unless the blueprint says otherwise, partial credit where it names ``partial``). An answer the
  reader or the judge cannot use scores 0 and is listed as unread with the reader's words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from drills.exam.marking import GATE_TYPES, paper_marks, paper_type
from drills.exam.versions import KEY_FORMAT, STUDENT_COLUMNS, Student, column, csv_rows, decode_csv

__all__ = ["KeyFileError", "ClassKey", "load_key", "read_answers", "grade_class", "Graded", "Unread"]

VERSION_COLUMNS = ("version", "version id", "paper", "paper id", "set", "paper version")
QUESTION_COLUMNS = ("question", "question number", "q", "qno", "q no", "number", "question no")
ANSWER_COLUMNS = ("answer", "response", "answer given", "your answer")
NAME_COLUMNS = ("name", "student name", "full name")
_WIDE = re.compile(r"^\s*(?:q|question)\s*(?:no\.?|#)?\s*(\d{1,3})\b", re.I)


class KeyFileError(ValueError):
    """A key file that cannot be read (one line)."""


@dataclass(frozen=True)
class KeyQuestion:
    number: int
    item: int
    problem: Any
    marks: int
    paper_type: str
    section: str


@dataclass(frozen=True)
class KeyVersion:
    id: str
    student: Student | None
    questions: tuple[KeyQuestion, ...]


@dataclass
class ClassKey:
    title: str
    paper: str
    seed: int
    penalties: dict[str, Fraction]
    partial: tuple[str, ...]
    versions: dict[str, KeyVersion]
    students: dict[str, str] = field(default_factory=dict)  # student id -> version id (roster)
    names: dict[str, str] = field(default_factory=dict)

    @property
    def items(self) -> int:
        return len(next(iter(self.versions.values())).questions)

    def version(self, text: str) -> str | None:
        """The version id that ``text`` names: ``V07``, ``v7``, ``7``, ``07``."""
        t = text.strip().upper()
        if t in self.versions:
            return t
        m = re.fullmatch(r"(?:V(?:ERSION)?\s*)?0*(\d+)", t)
        if m:
            n = int(m.group(1))
            for vid in self.versions:
                if int(vid[1:]) == n:
                    return vid
        return None


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise KeyFileError(f"{where}: {what}")


def load_key(data: bytes, where: str, notes: list[str] | None = None) -> ClassKey:
    """The key of a class (see the module's docstring); :class:`KeyFileError` names what is wrong."""
    from question_bank import bank
    from question_bank.problem import key_value

    try:
        obj = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KeyFileError(f"{where}: not a JSON key file ({str(e)[:80]})") from None
    _need(isinstance(obj, dict) and obj.get("format") == KEY_FORMAT, where,
          "not a qkv key file (qkv sheet --versions N --paper FILE writes one: NAME.key.json)")
    _need(isinstance(obj.get("versions"), list) and obj["versions"], where, "no versions")
    penalties: dict[str, Fraction] = {}
    for t, f in (obj.get("marking") or {}).items():
        try:
            penalties[t] = Fraction(str(f))
        except (ValueError, ZeroDivisionError):
            raise KeyFileError(f"{where}: marking.{t}: not a fraction: {f!r}") from None
        _need(t in GATE_TYPES and 0 <= penalties[t] <= 1, where, f"marking.{t}: a fraction from 0 to 1")
    partial = obj.get("partial") or []
    _need(isinstance(partial, list) and all(t in ("msq",) for t in partial), where, "partial: a list of [\"msq\"]")
    cache: dict[tuple, Any] = {}
    versions: dict[str, KeyVersion] = {}
    students: dict[str, str] = {}
    names: dict[str, str] = {}
    n_items = None
    for vi, v in enumerate(obj["versions"], 1):
        at = f"{where}: version {vi}"
        _need(isinstance(v, dict) and isinstance(v.get("id"), str) and v["id"], at, "no id")
        vid = v["id"].strip().upper()
        _need(vid not in versions, at, f"id {vid!r} twice")
        qs = v.get("questions")
        _need(isinstance(qs, list) and qs, at, "no questions")
        out = []
        for qi, q in enumerate(qs, 1):
            qat = f"{at} ({vid}), question {qi}"
            _need(isinstance(q, dict), qat, "not an object")
            fam, cur = q.get("family"), q.get("curated")
            _need(isinstance(fam, str) or isinstance(cur, str), qat, "neither a family nor a curated item")
            ref = (fam, q.get("seed"), q.get("difficulty")) if fam else (None, cur, None)
            if ref not in cache:
                try:
                    cache[ref] = bank.problem(fam, seed=q.get("seed"), difficulty=q.get("difficulty")) if fam \
                        else bank.problem(cur)
                except Exception as e:  # noqa: BLE001 - an id the bank no longer knows: one line
                    raise KeyFileError(f"{qat}: the bank cannot make {fam or cur!r}: {str(e)[:100]}") from None
            p = cache[ref]
            marks = q.get("marks")
            _need(marks in (1, 2), qat, "marks: 1 or 2")
            if marks != p.marks:
                raise KeyFileError(f"{qat}: {p.id} is worth {p.marks} in the bank, {marks} in the key file")
            if notes is not None and "answer_key" in q and \
                    json.loads(json.dumps(key_value(p.key))) != q["answer_key"]:
                notes.append(f"{vid} Q{qi} ({p.id}): the bank now keys {json.dumps(key_value(p.key))}, the key "
                             f"file printed {json.dumps(q['answer_key'])[:60]}; graded by the bank's key")
            item = q.get("item", qi)
            _need(isinstance(item, int) and item >= 1, qat, "item: a question number of version 1")
            out.append(KeyQuestion(number=qi, item=item, problem=p, marks=p.marks, paper_type=paper_type(p.type),
                                   section=str(q.get("section") or "")))
        if n_items is None:
            n_items = len(out)
        _need(len(out) == n_items and sorted(q.item for q in out) == list(range(1, n_items + 1)), at,
              "its questions are not the items of version 1")
        st = v.get("student")
        student = None
        if isinstance(st, dict) and str(st.get("id") or "").strip():
            student = Student(str(st["id"]).strip(), str(st.get("name") or ""))
            _need(student.id not in students, at, f"student {student.id!r} has two versions")
            students[student.id] = vid
            names[student.id] = student.name
        versions[vid] = KeyVersion(vid, student, tuple(out))
    seed = obj.get("seed")
    return ClassKey(title=str(obj.get("title") or ""), paper=str(obj.get("paper") or ""),
                    seed=seed if isinstance(seed, int) else 0, penalties=penalties, partial=tuple(partial),
                    versions=versions, students=students, names=names)


# ----------------------------------------------------------------------------------------------
# the answers


@dataclass(frozen=True)
class Unread:
    """A row (or one answer of a wide row) that could not be used, and why."""

    line: int
    why: str
    row: str  # the cells as read, joined by " | " (cut to 200 characters)
    student: str = ""
    question: int | None = None


@dataclass
class Sitting:
    student: str
    name: str
    version: str
    answers: dict[int, tuple[int, str]] = field(default_factory=dict)  # question number -> (line, text)


@dataclass
class Answers:
    sittings: dict[str, Sitting]
    unread: list[Unread]
    notes: list[str]
    absent: list[Student]  # students of the roster with no row


def _cells(cells: list[str]) -> str:
    t = " | ".join(c.strip() for c in cells)
    return t[:200] + ("…" if len(t) > 200 else "")


def read_answers(data: bytes, key: ClassKey, where: str) -> Answers:
    """The class's answers (see the module's docstring). Raises :class:`ValueError` (one line) only
    for a file whose header names no student or no answer column."""
    text, note = decode_csv(data)
    notes = [f"{where}: {note}"] if note else []
    header, rows = csv_rows(text)
    si = column(header, STUDENT_COLUMNS)
    if si is None:
        raise ValueError(f"{where}: the header names no student column (student, id, roll number, email); it has "
                         f"{', '.join(repr(h[:30]) for h in header[:6]) or 'nothing'}")
    vi = column(header, VERSION_COLUMNS)
    qi = column(header, QUESTION_COLUMNS)
    ai = column(header, ANSWER_COLUMNS)
    ni = column(header, NAME_COLUMNS)
    wide = {int(m.group(1)): i for i, h in enumerate(header) if (m := _WIDE.match(h)) and i not in (si, vi, ni)}
    if qi is None or ai is None:
        if not wide:
            raise ValueError(f"{where}: the header needs student, question and answer columns (one row per "
                             "question), or a column per question (Q1, Q2, …)")
    else:
        wide = {}
    used = {i for i in (si, vi, qi, ai, ni) if i is not None} | set(wide.values())
    extra = [h for i, h in enumerate(header) if i not in used and h]
    if extra:
        notes.append(f"{where}: columns not used: {', '.join(repr(h[:30]) for h in extra[:8])}")
    sittings: dict[str, Sitting] = {}
    unread: list[Unread] = []
    n = key.items

    def cell(cells: list[str], i: int | None) -> str:
        return cells[i].strip() if i is not None and i < len(cells) else ""

    def sitting_for(line: int, cells: list[str]) -> Sitting | None:
        sid = cell(cells, si)
        if not sid:
            unread.append(Unread(line, "no student id", _cells(cells)))
            return None
        given = cell(cells, vi)
        vid = key.version(given) if given else None
        if given and vid is None:
            unread.append(Unread(line, f"no version {given[:20]!r} in the key ({', '.join(list(key.versions)[:4])}"
                                       f"{' …' if len(key.versions) > 4 else ''})", _cells(cells), sid))
            return None
        roster = key.students.get(sid)
        if roster is not None and vid is not None and vid != roster:
            unread.append(Unread(line, f"student {sid[:40]!r} sat {roster} (the roster), not {vid}", _cells(cells), sid))
            return None
        vid = vid or roster
        if vid is None:
            if len(key.versions) == 1:
                vid = next(iter(key.versions))
            else:
                unread.append(Unread(line, f"no version given and {sid[:40]!r} is on no roster of the key",
                                     _cells(cells), sid))
                return None
        s = sittings.get(sid)
        if s is None:
            s = sittings[sid] = Sitting(sid, cell(cells, ni) or key.names.get(sid, ""), vid)
        elif s.version != vid:
            unread.append(Unread(line, f"student {sid[:40]!r} answered {s.version} on an earlier line", _cells(cells),
                                 sid))
            return None
        return s

    def put(s: Sitting, line: int, number: int, answer: str, cells: list[str]) -> None:
        if number in s.answers:
            unread.append(Unread(line, f"a second answer to Q{number} (line {s.answers[number][0]} was graded)",
                                 _cells(cells), s.student, number))
            return
        s.answers[number] = (line, answer)

    for line, cells in rows:
        s = sitting_for(line, cells)
        if s is None:
            continue
        if wide:
            for number, i in sorted(wide.items()):
                if not 1 <= number <= n:
                    if cell(cells, i):
                        unread.append(Unread(line, f"column {header[i][:20]!r}: the paper has Q1 to Q{n}",
                                             _cells(cells), s.student))
                    continue
                put(s, line, number, cell(cells, i), cells)
            continue
        qtext = cell(cells, qi)
        m = re.fullmatch(r"(?:q(?:uestion)?\s*)?0*(\d{1,4})(?:\.0+)?", qtext.lower())
        if not m or not 1 <= int(m.group(1)) <= n:
            unread.append(Unread(line, f"question {qtext[:20]!r}: a number from 1 to {n}", _cells(cells), s.student))
            continue
        put(s, line, int(m.group(1)), cell(cells, ai), cells)
    absent = [Student(sid, key.names.get(sid, "")) for sid in key.students if sid not in sittings]
    return Answers(sittings=sittings, unread=unread, notes=notes, absent=absent)


# ----------------------------------------------------------------------------------------------
# grading


@dataclass(frozen=True)
class Graded:
    """One student's answer to one question, graded and marked."""

    student: str
    name: str
    version: str
    number: int
    item: int
    problem: Any
    paper_type: str
    marks: int
    answer: str  # as written ("" unanswered)
    outcome: str  # correct | partial | wrong | unanswered | unread
    verdict: Any  # question_bank.grading.Verdict, None when unanswered or unread
    awarded: Fraction
    negative: Fraction
    chosen: frozenset[int] | None = None  # an MCQ/MSQ's options, as read
    why: str = ""  # for an unread answer: the reader's or the judge's words

    @property
    def right(self) -> bool:
        return self.outcome == "correct"

    @property
    def misconception(self) -> Any:
        v = self.verdict
        return None if v is None else v.misconception


def grade_class(key: ClassKey, answers: Answers) -> list[list[Graded]]:
    """Per student (in the order of the file), per question of their version: the graded answer.
    An answer that cannot be read is added to ``answers.unread`` and scores 0."""
    from drills.answers import AnswerParseError, read_answer
    from question_bank.grading import grade

    out = []
    for s in answers.sittings.values():
        v = key.versions[s.version]
        row = []
        for q in v.questions:
            p = q.problem
            line, text = s.answers.get(q.number, (0, ""))
            base = dict(student=s.student, name=s.name, version=s.version, number=q.number, item=q.item, problem=p,
                        paper_type=q.paper_type, marks=q.marks, answer=text)
            if not text.strip():
                row.append(Graded(**base, outcome="unanswered", verdict=None, awarded=Fraction(0),
                                  negative=Fraction(0)))
                continue
            why = ""
            try:
                ans = read_answer(p, text)
            except AnswerParseError as e:
                why = str(e)
            else:
                verdict = grade(p, ans.value, written=ans.written, unit=ans.unit)
                if verdict.invalid:
                    why = verdict.message
            if why:
                answers.unread.append(Unread(line, f"Q{q.number}: {why}", text[:200], s.student, q.number))
                row.append(Graded(**base, outcome="unread", verdict=None, awarded=Fraction(0), negative=Fraction(0),
                                  why=why))
                continue
            chosen = None
            if p.type in ("mcq", "msq"):
                chosen = frozenset(ans.parsed.indices)
            outcome = "correct" if verdict.correct else "wrong"
            m = paper_marks(p.type, p.marks, outcome, key.penalties, key.partial, chosen,
                            getattr(p.key, "correct", None))
            row.append(Graded(**base, outcome=m.outcome, verdict=verdict, awarded=m.awarded, negative=m.negative,
                              chosen=chosen))
        out.append(row)
    answers.unread.sort(key=lambda u: (u.line, u.question or 0))
    return out
