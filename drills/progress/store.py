"""The student's progress: every answer, quiz/exam session, review card and disputed key.

A SQLite database ``progress.sqlite3`` in the data directory (:mod:`drills.progress.paths`):

- WAL mode, ``busy_timeout`` and a retry loop, so that two quizzes in two terminals both record
  everything; ``synchronous=FULL``, and one transaction per answer (``BEGIN IMMEDIATE`` ...
  ``COMMIT`` inside :meth:`ProgressStore.record_attempt`), so that Ctrl-C, a closed terminal or
  SIGKILL lose at most the answer being typed.
- A schema version (``PRAGMA user_version``) and :data:`MIGRATIONS`, SQL steps applied in
  order inside one transaction: a database at version *n* gets steps *n+1...*; a database
  written by a newer qkv is refused with one line, never modified.
- At open, ``PRAGMA quick_check`` (and the first queries) detect a damaged file ("not a
  database", "malformed"). It is moved aside, with its ``-wal``/``-shm`` files, to
  ``progress.sqlite3.damaged-<UTC time>``; a new database is started, whatever rows can still be
  read are copied into it, and one line says so. The old file is never deleted.
- Disputed keys (``report``) go into the ``reports`` table and are appended to
  ``reports.jsonl`` in the data directory, one JSON object a line.

Times are stored as UTC ISO-8601 strings with microseconds (``2025-01-31T18:04:05.123456+00:00``),
which sort as text. Review cards are FSRS cards (:mod:`drills.progress.scheduling`) keyed by
``(kind, ref)``: ``("family", family id)`` or ``("item", curated problem id)``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import time as _time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from drills.output import InputError
from drills.progress.scheduling import AGAIN, item_key, rating_for, utc

DB_NAME = "progress.sqlite3"
REPORTS_NAME = "reports.jsonl"
EXPORT_FORMAT = "qkv-history"
EXPORT_VERSION = 1
MODES = ("quiz", "exam", "check")
BUSY_TIMEOUT_MS = 10_000
WRITE_RETRIES = 20

#: Schema steps; ``PRAGMA user_version`` is the number of steps applied. Append, never edit.
MIGRATIONS: list[str] = [
    # 1: sessions and attempts
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        mode TEXT NOT NULL CHECK (mode IN ('quiz', 'exam', 'check')),
        started_at TEXT NOT NULL,
        ended_at TEXT,
        args TEXT,              -- JSON: the options the session ran with
        score REAL,             -- exams: marks obtained (negative marks subtracted)
        max_score REAL,
        negative REAL,          -- exams: marks lost to negative marking
        summary TEXT            -- JSON: anything else worth keeping
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,          -- stable across export/import
        time TEXT NOT NULL,                -- UTC ISO-8601
        session_id TEXT,
        mode TEXT NOT NULL CHECK (mode IN ('quiz', 'exam', 'check')),
        problem_id TEXT NOT NULL,
        part TEXT,                         -- multi-part problems: the part's label
        family TEXT,
        seed,                              -- integer (text when beyond 64 bits)
        topic TEXT,
        type TEXT,
        answer TEXT,                       -- as typed (NULL when skipped)
        parsed TEXT,                       -- JSON of the parsed value
        correct INTEGER,                   -- 1, 0, NULL (skipped / unanswered)
        score REAL,
        marks REAL,
        negative REAL,
        time_ms INTEGER,
        misconception TEXT,                -- id of the misconception the answer matched
        misconception_label TEXT,
        rating INTEGER,                    -- the FSRS rating applied (1..4), NULL if none
        extra TEXT                         -- JSON
    );
    CREATE INDEX attempts_time ON attempts (time);
    CREATE INDEX attempts_topic ON attempts (topic);
    CREATE INDEX attempts_family ON attempts (family);
    CREATE INDEX attempts_session ON attempts (session_id);
    """,
    # 2: review cards
    """
    CREATE TABLE cards (
        kind TEXT NOT NULL CHECK (kind IN ('family', 'item')),
        ref TEXT NOT NULL,
        topic TEXT,
        type TEXT,
        card TEXT NOT NULL,     -- fsrs.Card.to_json()
        due TEXT NOT NULL,      -- UTC ISO-8601, a copy of the card's due date
        state INTEGER NOT NULL, -- 1 learning, 2 review, 3 relearning
        reps INTEGER NOT NULL DEFAULT 0,
        lapses INTEGER NOT NULL DEFAULT 0,
        last_review TEXT,
        PRIMARY KEY (kind, ref)
    );
    CREATE INDEX cards_due ON cards (due);
    """,
    # 3: disputed keys
    """
    CREATE TABLE reports (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        time TEXT NOT NULL,
        session_id TEXT,
        problem_id TEXT NOT NULL,
        family TEXT,
        seed,
        answer TEXT,
        key TEXT,               -- the key as shown to the student
        note TEXT,
        extra TEXT
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

_ATTEMPT_COLUMNS = ("uid", "time", "session_id", "mode", "problem_id", "part", "family", "seed", "topic",
                    "type", "answer", "parsed", "correct", "score", "marks", "negative", "time_ms",
                    "misconception", "misconception_label", "rating", "extra")
_SESSION_COLUMNS = ("id", "mode", "started_at", "ended_at", "args", "score", "max_score", "negative", "summary")
_REPORT_COLUMNS = ("uid", "time", "session_id", "problem_id", "family", "seed", "answer", "key", "note", "extra")
_CARD_COLUMNS = ("kind", "ref", "topic", "type", "card", "due", "state", "reps", "lapses", "last_review")
_JSON_COLUMNS = {"parsed", "extra", "args", "summary"}


class ProgressError(InputError):
    """A progress-store problem the user must act on (one line, exit status 2)."""


def iso(dt: datetime) -> str:
    """UTC ISO-8601 with microseconds: sorts as text."""
    return utc(dt).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return utc(dt)


def _seed_value(seed: Any) -> Any:
    if isinstance(seed, int) and not -(2**63) <= seed < 2**63:
        return str(seed)
    return seed


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    if hasattr(value, "to_json") and callable(value.to_json):
        value = value.to_json()
    from drills.output import jsonable

    return json.dumps(jsonable(value), ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Recorded:
    """What :meth:`ProgressStore.record_attempt` stored."""

    id: int
    uid: str
    rating: int | None  # the FSRS rating applied, None when the answer was not reviewed
    due: datetime | None  # when the item is due next


@dataclass(frozen=True)
class DueItem:
    """A review card: the family or curated item, and when it is due."""

    kind: str  # "family" | "item"
    ref: str  # family id or problem id
    topic: str | None
    type: str | None
    due: datetime
    state: int
    reps: int
    lapses: int
    last_review: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ref": self.ref, "topic": self.topic, "type": self.type,
                "due": iso(self.due), "state": self.state, "reps": self.reps, "lapses": self.lapses,
                "last_review": iso(self.last_review) if self.last_review else None}


def _due_item(row: sqlite3.Row) -> DueItem:
    return DueItem(kind=row["kind"], ref=row["ref"], topic=row["topic"], type=row["type"],
                   due=parse_time(row["due"]), state=row["state"], reps=row["reps"], lapses=row["lapses"],
                   last_review=parse_time(row["last_review"]) if row["last_review"] else None)


# --------------------------------------------------------------------------------------------
# connection, migrations, damage


def _is_damage(e: sqlite3.DatabaseError) -> bool:
    name = getattr(e, "sqlite_errorname", "") or ""
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(e).lower()
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


class _Damaged(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def _retrying(fn, *args):
    """Run ``fn`` again while SQLite says the database is busy or locked."""
    delay = 0.01
    for attempt in range(WRITE_RETRIES):
        try:
            return fn(*args)
        except sqlite3.OperationalError as e:
            text = str(e).lower()
            if ("locked" not in text and "busy" not in text) or attempt == WRITE_RETRIES - 1:
                raise
            _time.sleep(delay)
            delay = min(delay * 2, 0.5)
    raise AssertionError("unreachable")  # pragma: no cover


def _transaction(conn: sqlite3.Connection, fn):
    """``fn(conn)`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``, retried while the database is busy."""

    def once():
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    return _retrying(once)


def _statements(script: str) -> list[str]:
    """Split a script into statements (``;`` inside comments and strings does not split)."""
    out, pending = [], ""
    for chunk in script.split(";"):
        pending += chunk + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending)
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending)
    return out


def migrate(conn: sqlite3.Connection, upto: int | None = None) -> int:
    """Apply the missing steps of :data:`MIGRATIONS` (up to ``upto``) in one transaction.

    Returns the version reached; a database newer than this qkv raises :class:`ProgressError`."""
    target = SCHEMA_VERSION if upto is None else upto

    def step(c: sqlite3.Connection) -> int:
        version = c.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ProgressError(f"the progress database has schema version {version}, newer than this "
                                f"qkv understands ({SCHEMA_VERSION}); upgrade qkv")
        for number in range(version + 1, target + 1):
            for statement in _statements(MIGRATIONS[number - 1]):
                c.execute(statement)
            c.execute(f"PRAGMA user_version = {number}")
        return max(version, target)

    return _transaction(conn, step)


def _open_checked(path: Path) -> sqlite3.Connection:
    """Connect, set WAL, check integrity and migrate; damage raises :class:`_Damaged`."""
    conn = _connect(path)
    try:
        version = _retrying(lambda: conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:  # refuse before changing anything (even the journal mode)
            raise ProgressError(f"the progress database has schema version {version}, newer than this "
                                f"qkv understands ({SCHEMA_VERSION}); upgrade qkv")
        _retrying(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = OFF")
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        if result != ["ok"]:
            raise _Damaged("; ".join(str(r) for r in result)[:200])
        migrate(conn)
        # touch every table once: a damaged schema shows itself here
        for table in ("sessions", "attempts", "cards", "reports"):
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    except sqlite3.DatabaseError as e:
        conn.close()
        if _is_damage(e):
            raise _Damaged(str(e)) from None
        raise
    except BaseException:
        conn.close()
        raise
    return conn


def _set_aside(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists():
            os.replace(side, Path(str(target) + suffix))
    return target


def _salvage(damaged: Path, conn: sqlite3.Connection) -> int:
    """Copy whatever rows of a damaged database can still be read; returns the answers saved."""
    scratch = damaged.with_name(damaged.name + ".salvage")
    saved = 0
    try:
        shutil.copyfile(damaged, scratch)  # read a copy: the set-aside file stays as it was
        for suffix in ("-wal",):
            if Path(str(damaged) + suffix).exists():
                shutil.copyfile(Path(str(damaged) + suffix), Path(str(scratch) + suffix))
        old = sqlite3.connect(str(scratch), isolation_level=None)
        old.row_factory = sqlite3.Row
    except (OSError, sqlite3.Error):
        return 0
    try:
        for table, columns in (("sessions", _SESSION_COLUMNS), ("attempts", _ATTEMPT_COLUMNS),
                               ("reports", _REPORT_COLUMNS)):
            rows = []
            try:
                for row in old.execute(f"SELECT * FROM {table}"):
                    rows.append(row)
            except sqlite3.Error:
                pass  # keep what was read before the damage
            if not rows:
                continue
            have = [c for c in columns if c in rows[0].keys()]
            sql = f"INSERT OR IGNORE INTO {table} ({', '.join(have)}) VALUES ({', '.join('?' * len(have))})"

            def insert(c, rows=rows, have=have, sql=sql):
                n = 0
                for row in rows:
                    try:
                        n += c.execute(sql, [row[k] for k in have]).rowcount
                    except sqlite3.Error:
                        pass
                return n

            n = _transaction(conn, insert)
            if table == "attempts":
                saved = n
    finally:
        old.close()
        for p in (scratch, Path(str(scratch) + "-wal"), Path(str(scratch) + "-shm")):
            try:
                p.unlink()
            except OSError:
                pass
    return saved


# --------------------------------------------------------------------------------------------
# the store


class ProgressStore:
    """The progress database of one data directory. Open with :meth:`open`; close or use ``with``."""

    def __init__(self, conn: sqlite3.Connection, data_dir: Path, notices: list[str]):
        self.conn = conn
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        self.notices = notices  # lines reported at open (a damaged database set aside)

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str] | None = None, *, warn=None) -> ProgressStore:
        """Open (creating and migrating) the store in ``data_dir`` (resolved by
        :func:`drills.progress.paths.data_dir`: ``None`` means ``$QKV_HOME`` or the platform default).

        ``warn(line)`` reports a damaged database (default: ``drills.output.warn``)."""
        from drills.progress.paths import data_dir as resolve

        directory = resolve(data_dir)
        path = directory / DB_NAME
        notices: list[str] = []
        try:
            conn = _open_checked(path)
        except _Damaged as damage:
            try:
                target = _set_aside(path)
            except OSError as e:
                raise ProgressError(f"the progress database {str(path)!r} is damaged ({damage.reason}) and "
                                    f"could not be moved aside: {e.strerror or e}") from None
            conn = _open_checked(path)
            saved = _salvage(target, conn)
            store = cls(conn, directory, notices)
            if saved:
                store._rebuild_cards(None)
            recovered = f"; {saved} answers recovered from it" if saved else ""
            notices.append(f"the progress database was damaged; moved to {target.name}, starting a new one "
                           f"(your old file is kept{recovered})")
            (warn or _default_warn)(notices[-1])
            return store
        except sqlite3.OperationalError as e:
            raise ProgressError(f"cannot open the progress database {str(path)!r}: {e}") from None
        return cls(conn, directory, notices)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ProgressStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # -- sessions ---------------------------------------------------------------------------

    def start_session(self, mode: str = "quiz", *, args: dict[str, Any] | None = None,
                      now: datetime | None = None, session_id: str | None = None) -> str:
        """Record the start of a quiz, exam or check session; returns its id (a uuid4 hex)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        sid = session_id or uuid.uuid4().hex
        started = iso(now or utc())
        _transaction(self.conn, lambda c: c.execute(
            "INSERT INTO sessions (id, mode, started_at, args) VALUES (?, ?, ?, ?)",
            (sid, mode, started, _json_text(args))))
        return sid

    def end_session(self, session_id: str, *, score: float | None = None, max_score: float | None = None,
                    negative: float | None = None, summary: dict[str, Any] | None = None,
                    now: datetime | None = None) -> None:
        """Record the end of a session (and an exam's score)."""
        ended = iso(now or utc())
        _transaction(self.conn, lambda c: c.execute(
            "UPDATE sessions SET ended_at = ?, score = coalesce(?, score), max_score = coalesce(?, max_score),"
            " negative = coalesce(?, negative), summary = coalesce(?, summary) WHERE id = ?",
            (ended, score, max_score, negative, _json_text(summary), session_id)))

    def session(self, session_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _row_dict(row) if row else None

    # -- attempts ---------------------------------------------------------------------------

    def record_attempt(self, *, problem_id: str, mode: str = "quiz", session_id: str | None = None,
                       family: str | None = None, seed: int | None = None, topic: str | None = None,
                       type: str | None = None, part: str | None = None, answer: str | None = None,
                       parsed: Any = None, correct: bool | None = None, score: float | None = None,
                       marks: float | None = None, negative: float | None = None, time_ms: int | None = None,
                       misconception: str | None = None, misconception_label: str | None = None,
                       review: bool = True, rating: int | None = None, extra: dict[str, Any] | None = None,
                       now: datetime | None = None, uid: str | None = None) -> Recorded:
        """Store one answer, and (with ``review``) update the FSRS card of its family or item, in
        one transaction, committed before this returns.

        ``correct=None`` means skipped / unanswered (rated Again when reviewed). ``rating``
        overrides :func:`drills.progress.scheduling.rating_for`. ``parsed`` is anything with ``to_json()``
        (the parsers' results) or JSON-able data. ``now`` defaults to the current UTC time."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        when = utc(now)
        uid = uid or uuid.uuid4().hex
        if review and rating is None:
            rating = rating_for(correct, time_ms, type or "", marks or 1)
        if not review:
            rating = None
        row = {
            "uid": uid, "time": iso(when), "session_id": session_id, "mode": mode, "problem_id": problem_id,
            "part": part, "family": family, "seed": _seed_value(seed), "topic": topic, "type": type,
            "answer": answer, "parsed": _json_text(parsed),
            "correct": None if correct is None else int(bool(correct)), "score": score, "marks": marks,
            "negative": negative, "time_ms": None if time_ms is None else int(time_ms),
            "misconception": misconception, "misconception_label": misconception_label, "rating": rating,
            "extra": _json_text(extra),
        }
        sql = (f"INSERT INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(_ATTEMPT_COLUMNS))})")

        def write(c: sqlite3.Connection) -> Recorded:
            cur = c.execute(sql, [row[k] for k in _ATTEMPT_COLUMNS])
            due = None
            if rating is not None:
                due = self._review_card(c, item_key(family, problem_id), rating, when, topic, type, time_ms)
            return Recorded(id=cur.lastrowid, uid=uid, rating=rating, due=due)

        return _transaction(self.conn, write)

    def _review_card(self, c: sqlite3.Connection, key: tuple[str, str], rating: int, when: datetime,
                     topic: str | None, type_: str | None, time_ms: int | None) -> datetime:
        from drills.progress.scheduling import review

        old = c.execute("SELECT card, state, reps, lapses FROM cards WHERE kind = ? AND ref = ?", key).fetchone()
        state = review(old["card"] if old else None, rating, when, item=key, duration_ms=time_ms)
        reps = (old["reps"] if old else 0) + 1
        lapses = (old["lapses"] if old else 0) + (1 if old and rating == AGAIN and old["state"] == 2 else 0)
        c.execute(
            "INSERT INTO cards (kind, ref, topic, type, card, due, state, reps, lapses, last_review)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (kind, ref) DO UPDATE SET topic = coalesce(excluded.topic, topic),"
            " type = coalesce(excluded.type, type), card = excluded.card, due = excluded.due,"
            " state = excluded.state, reps = excluded.reps, lapses = excluded.lapses,"
            " last_review = excluded.last_review",
            (*key, topic, type_, state.card_json, iso(state.due), state.state, reps, lapses, iso(when)))
        return state.due

    def attempts(self, *, session_id: str | None = None, problem_id: str | None = None,
                 family: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Stored answers, oldest first, as dicts (``parsed``/``extra`` decoded)."""
        where, params = [], []
        for column, value in (("session_id", session_id), ("problem_id", problem_id), ("family", family)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM attempts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY time, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row_dict(r) for r in self.conn.execute(sql, params)]

    def seeds_seen(self, family: str) -> set[int]:
        """Seeds of the variants of ``family`` already answered (to draw a fresh one)."""
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT seed FROM attempts WHERE family = ? AND typeof(seed) = 'integer'", (family,))}

    def count_attempts(self) -> int:
        return self.conn.execute("SELECT count(*) FROM attempts").fetchone()[0]

    # -- reports ----------------------------------------------------------------------------

    def report(self, problem_id: str, *, seed: int | None = None, family: str | None = None,
               answer: str | None = None, key: str | None = None, note: str = "",
               session_id: str | None = None, extra: dict[str, Any] | None = None,
               now: datetime | None = None) -> str:
        """Record a disputed key in the database and in ``reports.jsonl``; returns its uid."""
        row = {"uid": uuid.uuid4().hex, "time": iso(now or utc()), "session_id": session_id,
               "problem_id": problem_id, "family": family, "seed": _seed_value(seed), "answer": answer,
               "key": key, "note": note, "extra": _json_text(extra)}
        self._insert_reports([row])
        return row["uid"]

    def _insert_reports(self, rows: list[dict[str, Any]]) -> int:
        sql = (f"INSERT OR IGNORE INTO reports ({', '.join(_REPORT_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(_REPORT_COLUMNS))})")

        def write(c: sqlite3.Connection) -> list[dict[str, Any]]:
            return [r for r in rows if c.execute(sql, [r.get(k) for k in _REPORT_COLUMNS]).rowcount]

        new = _transaction(self.conn, write)
        if new:
            lines = "".join(json.dumps(_decode_row(r), ensure_ascii=False, sort_keys=True) + "\n" for r in new)
            try:
                with open(self.data_dir / REPORTS_NAME, "a", encoding="utf-8") as f:
                    f.write(lines)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:
                _default_warn(f"could not append to {REPORTS_NAME} ({e.strerror or e}); "
                              "the report is in the database")
        return len(new)

    def reports(self) -> list[dict[str, Any]]:
        return [_row_dict(r) for r in self.conn.execute(
            f"SELECT {', '.join(_REPORT_COLUMNS)} FROM reports ORDER BY time, id")]

    # -- review cards -----------------------------------------------------------------------

    def due_items(self, now: datetime | None = None, topic: str | None = None, *,
                  within: timedelta | None = None, types: tuple[str, ...] | None = None,
                  limit: int | None = None) -> list[DueItem]:
        """Cards due at ``now`` (plus ``within``), the longest overdue first."""
        horizon = iso(utc(now) + (within or timedelta(0)))
        sql, params = "SELECT * FROM cards WHERE due <= ?", [horizon]
        if topic is not None:
            sql += " AND topic = ?"
            params.append(topic)
        if types:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        sql += " ORDER BY due, kind, ref"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_due_item(r) for r in self.conn.execute(sql, params)]

    def cards(self) -> dict[tuple[str, str], DueItem]:
        """Every review card, by ``(kind, ref)``: the items the student has already met."""
        return {(r["kind"], r["ref"]): _due_item(r) for r in self.conn.execute("SELECT * FROM cards")}

    def card_json(self, kind: str, ref: str) -> str | None:
        row = self.conn.execute("SELECT card FROM cards WHERE kind = ? AND ref = ?", (kind, ref)).fetchone()
        return row["card"] if row else None

    def _rebuild_cards(self, keys: set[tuple[str, str]] | None) -> int:
        """Replay the rated attempts of ``keys`` (all when None) to rebuild their cards."""
        from drills.progress.scheduling import review

        rows = self.conn.execute(
            "SELECT family, problem_id, topic, type, time, rating, time_ms FROM attempts"
            " WHERE rating IS NOT NULL ORDER BY time, id").fetchall()
        history: dict[tuple[str, str], list[sqlite3.Row]] = defaultdict(list)
        for r in rows:
            key = item_key(r["family"], r["problem_id"])
            if keys is None or key in keys:
                history[key].append(r)

        def write(c: sqlite3.Connection) -> int:
            for key, reviews in history.items():
                card, state, reps, lapses = None, None, 0, 0
                for r in reviews:
                    if state is not None and r["rating"] == AGAIN and state.state == 2:
                        lapses += 1
                    state = review(card, r["rating"], parse_time(r["time"]), item=key, duration_ms=r["time_ms"])
                    card = state.card_json
                    reps += 1
                last = reviews[-1]
                topic = next((r["topic"] for r in reversed(reviews) if r["topic"]), None)
                type_ = next((r["type"] for r in reversed(reviews) if r["type"]), None)
                c.execute("INSERT OR REPLACE INTO cards (kind, ref, topic, type, card, due, state, reps, lapses,"
                          " last_review) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (*key, topic, type_, card, iso(state.due), state.state, reps, lapses, last["time"]))
            return len(history)

        return _transaction(self.conn, write)

    # -- statistics -------------------------------------------------------------------------

    def stats(self, now: datetime | None = None, tz: tzinfo | None = None, days: int = 14) -> dict[str, Any]:
        """Accuracy per topic and type, top misconceptions, items due, streak, daily accuracy.

        Days are calendar days in ``tz`` (default: the local time zone). The streak counts
        consecutive days with at least one answer, ending today, or yesterday when today has
        none yet. Accuracy is correct / answered (skipped answers count as attempts only)."""
        now = utc(now)
        tz = tz or datetime.now().astimezone().tzinfo or UTC
        rows = self.conn.execute(
            "SELECT time, topic, type, correct, misconception, misconception_label FROM attempts").fetchall()

        def tally() -> dict[str, Any]:
            return {"attempts": 0, "answered": 0, "correct": 0}

        total = tally()
        by_topic: dict[str, dict[str, Any]] = defaultdict(tally)
        by_type: dict[str, dict[str, Any]] = defaultdict(tally)
        by_day: dict[date, dict[str, Any]] = defaultdict(tally)
        mistakes: Counter[str] = Counter()
        labels: dict[str, str] = {}
        mistake_topics: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            day = parse_time(r["time"]).astimezone(tz).date()
            for t in (total, by_topic[r["topic"] or "(none)"], by_type[r["type"] or "(none)"], by_day[day]):
                t["attempts"] += 1
                if r["correct"] is not None:
                    t["answered"] += 1
                    t["correct"] += r["correct"]
            if r["misconception"]:
                mistakes[r["misconception"]] += 1
                labels[r["misconception"]] = r["misconception_label"] or labels.get(r["misconception"], "")
                if r["topic"]:
                    mistake_topics[r["misconception"]].add(r["topic"])

        def finish(name: str, key: str, t: dict[str, Any]) -> dict[str, Any]:
            return {name: key, **t, "accuracy": t["correct"] / t["answered"] if t["answered"] else None}

        today = now.astimezone(tz).date()
        end_of_today = datetime.combine(today + timedelta(days=1), datetime.min.time(), tz)
        end_of_week = end_of_today + timedelta(days=6)
        due_now = self.due_items(now)
        due_today = self.due_items(end_of_today - timedelta(microseconds=1))
        due_week = self.due_items(end_of_week - timedelta(microseconds=1))
        n_cards = self.conn.execute("SELECT count(*) FROM cards").fetchone()[0]

        active = sorted(by_day)
        streak = 0
        if active:
            day = today if today in by_day else today - timedelta(days=1)
            while day in by_day:
                streak += 1
                day -= timedelta(days=1)
        longest = run = 0
        previous = None
        for day in active:
            run = run + 1 if previous is not None and day - previous == timedelta(days=1) else 1
            longest = max(longest, run)
            previous = day

        daily = []
        for i in range(days - 1, -1, -1):
            day = today - timedelta(days=i)
            daily.append(finish("day", day.isoformat(), by_day.get(day, tally())))

        exams = [
            {"session_id": r["id"], "started_at": r["started_at"], "ended_at": r["ended_at"],
             "score": r["score"], "max_score": r["max_score"], "negative": r["negative"]}
            for r in self.conn.execute(
                "SELECT * FROM sessions WHERE mode = 'exam' AND ended_at IS NOT NULL ORDER BY started_at DESC LIMIT 10")
        ]
        return {
            "data_dir": str(self.data_dir),
            "now": iso(now),
            "totals": finish("scope", "all", total),
            "topics": sorted((finish("topic", k, v) for k, v in by_topic.items()),
                             key=lambda t: (-t["attempts"], t["topic"])),
            "types": sorted((finish("type", k, v) for k, v in by_type.items()),
                            key=lambda t: (-t["attempts"], t["type"])),
            "misconceptions": [{"id": m, "label": labels.get(m, ""), "count": n,
                                "topics": sorted(mistake_topics[m])} for m, n in mistakes.most_common(10)],
            "due": {"now": len(due_now), "today": len(due_today), "week": len(due_week), "cards": n_cards,
                    "items": [d.to_json() for d in due_today[:20]]},
            "streak": {"current": streak, "longest": longest,
                       "last_day": active[-1].isoformat() if active else None,
                       "today": today in by_day},
            "daily": daily,
            "exams": exams,
        }

    # -- export and import ------------------------------------------------------------------

    def export(self, format: str = "json", *, now: datetime | None = None) -> str:
        """The whole history as text: ``json`` (sessions, attempts, cards, reports: everything
        needed to move to a new machine) or ``csv`` (one row per answer, for spreadsheets)."""
        attempts = [_row_dict(r) for r in self.conn.execute(
            f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM attempts ORDER BY time, id")]
        if format == "csv":
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(_ATTEMPT_COLUMNS)
            for a in attempts:
                writer.writerow([_csv_cell(k, a[k]) for k in _ATTEMPT_COLUMNS])
            return out.getvalue()
        if format != "json":
            raise ProgressError(f"unknown export format {format!r}; choose csv or json", "--format")
        doc = {
            "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "schema": self.schema_version,
            "exported_at": iso(now or utc()),
            "sessions": [_row_dict(r) for r in self.conn.execute(
                f"SELECT {', '.join(_SESSION_COLUMNS)} FROM sessions ORDER BY started_at, id")],
            "attempts": attempts,
            "cards": [dict(r) for r in self.conn.execute(
                f"SELECT {', '.join(_CARD_COLUMNS)} FROM cards ORDER BY kind, ref")],
            "reports": self.reports(),
        }
        return _dump_export(doc)

    def import_(self, text: str, format: str | None = None) -> dict[str, int]:
        """Merge an export (``json`` or ``csv``; guessed from the text when None) into this store.

        Rows already present (same uid / session id) are skipped, so importing twice changes
        nothing. Review cards of the items touched are rebuilt by replaying their answers.
        Returns counts: attempts, skipped, sessions, reports, cards."""
        fmt = format or ("json" if text.lstrip()[:1] in ("{", "[") else "csv")
        if fmt == "json":
            sessions, attempts, reports = _read_json_export(text)
        elif fmt == "csv":
            sessions, attempts, reports = [], _read_csv_export(text), []
        else:
            raise ProgressError(f"unknown import format {fmt!r}; choose csv or json", "--format")
        known = {s["id"] for s in sessions}
        for a in attempts:  # a CSV carries no sessions: rebuild their bare outline from the answers
            sid = a.get("session_id")
            if sid and sid not in known:
                times = [b["time"] for b in attempts if b.get("session_id") == sid]
                sessions.append({"id": sid, "mode": a.get("mode") or "quiz", "started_at": min(times),
                                 "ended_at": max(times)})
                known.add(sid)
        attempt_sql = (f"INSERT OR IGNORE INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(_ATTEMPT_COLUMNS))})")
        session_sql = (f"INSERT OR IGNORE INTO sessions ({', '.join(_SESSION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(_SESSION_COLUMNS))})")

        def write(c: sqlite3.Connection) -> tuple[int, int, set[tuple[str, str]]]:
            n_sessions = sum(c.execute(session_sql, [s.get(k) for k in _SESSION_COLUMNS]).rowcount
                             for s in sessions)
            touched: set[tuple[str, str]] = set()
            n_attempts = 0
            for a in attempts:
                if c.execute(attempt_sql, [a.get(k) for k in _ATTEMPT_COLUMNS]).rowcount:
                    n_attempts += 1
                    if a.get("rating") is not None:
                        touched.add(item_key(a.get("family"), a["problem_id"]))
            return n_sessions, n_attempts, touched

        n_sessions, n_attempts, touched = _transaction(self.conn, write)
        n_reports = self._insert_reports(reports) if reports else 0
        n_cards = self._rebuild_cards(touched) if touched else 0
        return {"attempts": n_attempts, "skipped": len(attempts) - n_attempts, "sessions": n_sessions,
                "reports": n_reports, "cards": n_cards}


# --------------------------------------------------------------------------------------------
# helpers for rows, export and import


def _default_warn(line: str) -> None:
    from drills.output import warn

    warn(line)


def _decode_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for k in _JSON_COLUMNS & out.keys():
        if isinstance(out[k], str):
            try:
                out[k] = json.loads(out[k])
            except ValueError:
                pass
    return out


def _row_dict(row: sqlite3.Row) -> dict[str, Any]:
    return _decode_row(dict(row))


def _dump_export(doc: dict[str, Any]) -> str:
    """JSON with one record a line (readable, diff-friendly, and fast: the C encoder per record)."""
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        name = json.dumps(key)
        if isinstance(value, list) and value:
            lines.append(f"{name}: [")
            last = len(value) - 1
            lines += [json.dumps(v, ensure_ascii=False) + ("," if j < last else "") for j, v in enumerate(value)]
            lines.append(f"]{comma}")
        else:
            lines.append(f"{name}: {json.dumps(value, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _csv_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column in _JSON_COLUMNS:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, float):
        return repr(value)
    return str(value)


_INT_COLUMNS = {"correct", "time_ms", "rating"}
_FLOAT_COLUMNS = {"score", "marks", "negative"}


def _bad_import(message: str) -> ProgressError:
    return ProgressError(f"cannot import: {message}")


def _clean_attempt(raw: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _bad_import(f"{where}: an answer must be an object")
    a: dict[str, Any] = {}
    for k in _ATTEMPT_COLUMNS:
        v = raw.get(k)
        if v == "":
            v = None
        a[k] = v
    for k in ("uid", "time", "problem_id"):
        if not a.get(k) or not isinstance(a[k], str):
            raise _bad_import(f"{where}: {k} is missing")
    try:
        a["time"] = iso(parse_time(a["time"]))
    except ValueError:
        raise _bad_import(f"{where}: time {a['time']!r} is not an ISO date-time") from None
    if a["mode"] not in MODES:
        a["mode"] = "quiz"
    try:
        for k in _INT_COLUMNS:
            if a[k] is not None:
                a[k] = int(a[k])
        for k in _FLOAT_COLUMNS:
            if a[k] is not None:
                a[k] = float(a[k])
        if isinstance(a["seed"], str) and a["seed"].lstrip("-").isdigit():
            a["seed"] = _seed_value(int(a["seed"]))
    except (TypeError, ValueError):
        raise _bad_import(f"{where}: a number column holds something else") from None
    if a["rating"] is not None and a["rating"] not in (1, 2, 3, 4):
        raise _bad_import(f"{where}: rating must be 1..4")
    for k in _JSON_COLUMNS & set(_ATTEMPT_COLUMNS):
        if a[k] is not None and not isinstance(a[k], str):
            a[k] = json.dumps(a[k], ensure_ascii=False, sort_keys=True)
    return a


def _read_json_export(text: str) -> tuple[list[dict], list[dict], list[dict]]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise _bad_import(f"not a JSON export ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise _bad_import(f"not a qkv history export (expected \"format\": \"{EXPORT_FORMAT}\")")
    if not isinstance(doc.get("version"), int) or doc["version"] > EXPORT_VERSION:
        raise _bad_import(f"export version {doc.get('version')!r} is newer than this qkv reads ({EXPORT_VERSION})")
    attempts = [_clean_attempt(a, f"attempt {i + 1}") for i, a in enumerate(doc.get("attempts") or [])]
    sessions = []
    for i, s in enumerate(doc.get("sessions") or []):
        if not isinstance(s, dict) or not s.get("id") or not s.get("started_at"):
            raise _bad_import(f"session {i + 1}: id and started_at are needed")
        row = {k: s.get(k) for k in _SESSION_COLUMNS}
        if row["mode"] not in MODES:
            row["mode"] = "quiz"
        for k in ("args", "summary"):
            if row[k] is not None and not isinstance(row[k], str):
                row[k] = json.dumps(row[k], ensure_ascii=False, sort_keys=True)
        sessions.append(row)
    reports = []
    for i, r in enumerate(doc.get("reports") or []):
        if not isinstance(r, dict) or not r.get("uid") or not r.get("problem_id") or not r.get("time"):
            raise _bad_import(f"report {i + 1}: uid, time and problem_id are needed")
        row = {k: r.get(k) for k in _REPORT_COLUMNS}
        if row["extra"] is not None and not isinstance(row["extra"], str):
            row["extra"] = json.dumps(row["extra"], ensure_ascii=False, sort_keys=True)
        reports.append(row)
    return sessions, attempts, reports


def _read_csv_export(text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"uid", "time", "problem_id"} <= set(reader.fieldnames):
        raise _bad_import("not a qkv history CSV (its header needs uid, time and problem_id)")
    try:
        return [_clean_attempt(row, f"line {i + 2}") for i, row in enumerate(reader)]
    except csv.Error as e:
        raise _bad_import(f"unreadable CSV: {e}") from None
