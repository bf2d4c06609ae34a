"""The progress store: every answer, quiz/exam session, review card and disputed key.

A SQLite database ``progress.sqlite3`` in the data directory (:mod:`drills.progress.paths`), laid
out in :mod:`drills.progress.schema` and opened, checked and salvaged by
:mod:`drills.progress.database`. :class:`ProgressStore` is the one object commands use; this
module holds its opening and its writes (one transaction per answer, committed before
:meth:`ProgressStore.record_attempt` returns); its reads are :class:`drills.progress.statistics.StoreReads`
and its export/import :class:`drills.progress.history.HistoryTransfer`.

Disputed keys (``report``) go into the ``reports`` table and are appended to ``reports.jsonl`` in
the data directory, one JSON object a line. Review cards are FSRS cards
(:mod:`drills.progress.scheduling`) keyed by ``(kind, ref)``: ``("family", family id)`` or
``("item", curated problem id)``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time as _time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from drills.progress.database import (
    DIVERGED,
    Damaged,
    environment_error,
    migrate,
    open_checked,
    open_read_only,
    salvage,
    set_aside,
    stale_wal,
    transaction,
)
from drills.progress.history import HistoryTransfer
from drills.progress.rows import Recorded, decode_row, iso, json_text, parse_time, safe_row, seed_value
from drills.progress.scheduling import AGAIN, item_key, rating_for, utc
from drills.progress.schema import (
    ATTEMPT_COLUMNS,
    DB_NAME,
    MODES,
    REPORT_COLUMNS,
    REPORTS_NAME,
    ProgressError,
)
from drills.progress.statistics import StoreReads


def _default_warn(line: str) -> None:
    from drills.output import warn

    warn(line)


def _is_empty_file(path: Path) -> bool:
    """A 0-byte file left lying there (not one another qkv has just created: older than 2 s)."""
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_size == 0 and _time.time() - st.st_mtime > 2


def _empty_history() -> sqlite3.Connection:
    """An empty store in memory, for reading commands where no file exists (none is created)."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    return conn


class ProgressStore(StoreReads, HistoryTransfer):
    """The progress database of one data directory. Open with :meth:`open`; close or use ``with``."""

    def __init__(self, conn: sqlite3.Connection, data_dir: Path, notices: list[str]):
        self.conn = conn
        self.data_dir = data_dir
        self.path = data_dir / DB_NAME
        self.notices = notices  # lines reported at open (a damaged database set aside)

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str] | None = None, *, read_only: bool = False,
             warn: Callable[[str], None] | None = None) -> ProgressStore:
        """Open the store in ``data_dir`` (resolved by :func:`drills.progress.paths.data_dir`:
        ``None`` means ``$QKV_HOME`` or the platform default), creating and migrating it.

        With ``read_only`` (``qkv stats``, ``history export``) nothing is created, migrated or
        written: a missing file reads as an empty history, an older schema as what it holds
        (review cards it lacks are computed in memory). Either way, what would otherwise lose
        data is handled first, with one line through ``warn(line)`` (default
        ``drills.output.warn``): a write-ahead log that is not this file's (:func:`stale_wal`) and
        a damaged file are moved aside (never deleted) and what can be read is copied into a new
        file; a 0-byte file is replaced; a dropped table is rebuilt from what it derives from."""
        from drills.progress.paths import data_dir as resolve

        say = warn or _default_warn
        directory = resolve(data_dir, create=not read_only)
        path = directory / DB_NAME
        notices: list[str] = []
        reason = stale_wal(path)
        if reason is not None and reason.startswith(DIVERGED):
            return cls._replace(directory, f"had a write-ahead log from a copy of this history that went on on "
                                f"its own ({reason[len(DIVERGED) + 2:]})", notices, say, with_wal=False, merge=True)
        if reason is not None:
            return cls._replace(directory, f"had a write-ahead log that is not its own ({reason})", notices, say,
                                with_wal=False)
        if _is_empty_file(path):
            notices.append(f"the progress database {str(path)!r} was an empty file (0 bytes: nothing in it "
                           "to recover); starting a new one")
            say(notices[-1])
            if read_only:
                return cls(_empty_history(), directory, notices)
        try:
            if read_only:
                if not path.exists():
                    return cls(_empty_history(), directory, notices)
                conn, made = open_read_only(path)
                store = cls(conn, directory, notices)
                if "cards" in made:
                    store._rebuild_cards(None)  # into the TEMP table: the file is not touched
                return store
            conn, said = open_checked(path)
        except Damaged:
            return cls._replace(directory, "was damaged", notices, say, with_wal=True)
        except sqlite3.Error as e:
            raise environment_error(e, path) or ProgressError(
                f"cannot open the progress database {str(path)!r}: {e}") from None
        store = cls(conn, directory, notices)
        if any(line.startswith("the review cards table") for line in said):
            store._rebuild_cards(None)
        for line in said:
            notices.append(line)
            say(line)
        return store

    @classmethod
    def _replace(cls, directory: Path, why: str, notices: list[str], say: Callable[[str], None], *,
                 with_wal: bool, merge: bool = False) -> ProgressStore:
        """Move the database (and its -wal/-shm) aside, start a new one, copy what can be read;
        ``merge``: then add the rows the file read with its log holds (a diverged copy's answers)."""
        path = directory / DB_NAME
        try:
            target = set_aside(path)
        except OSError as e:
            raise ProgressError(f"the progress database {str(path)!r} {why} and could not be moved aside: "
                                f"{e.strerror or e}") from None
        try:
            conn, _ = open_checked(path)
        except sqlite3.Error as e:
            raise environment_error(e, path) or ProgressError(
                f"cannot create the progress database {str(path)!r}: {e}") from None
        saved = salvage(target, conn, with_wal=with_wal)
        merged = salvage(target, conn, with_wal=True, sound_only=True) if merge else 0
        store = cls(conn, directory, notices)
        if saved or merged:
            store._rebuild_cards(None)
        moved = target.name + (" (with the -wal file)" if Path(str(target) + "-wal").exists() else "")
        recovered = f"; {saved} answers recovered from it" if saved else ""
        if merge:
            recovered += f"; {merged} answers of the copy merged in from its log"
        notices.append(f"the progress database {why}; moved to {moved}, starting a new one "
                       f"(your old file is kept{recovered})")
        say(notices[-1])
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ProgressStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------

    def start_session(self, mode: str = "quiz", *, args: dict[str, Any] | None = None,
                      now: datetime | None = None, session_id: str | None = None) -> str:
        """Record the start of a quiz, exam or check session; returns its id (a uuid4 hex)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        sid = session_id or uuid.uuid4().hex
        started = iso(now or utc())
        transaction(self.conn, lambda c: c.execute(
            "INSERT INTO sessions (id, mode, started_at, args) VALUES (?, ?, ?, ?)",
            (sid, mode, started, json_text(args))))
        return sid

    def end_session(self, session_id: str, *, score: float | None = None, max_score: float | None = None,
                    negative: float | None = None, summary: dict[str, Any] | None = None,
                    now: datetime | None = None) -> None:
        """Record the end of a session (and an exam's score)."""
        ended = iso(now or utc())
        transaction(self.conn, lambda c: c.execute(
            "UPDATE sessions SET ended_at = ?, score = coalesce(?, score), max_score = coalesce(?, max_score),"
            " negative = coalesce(?, negative), summary = coalesce(?, summary) WHERE id = ?",
            (ended, score, max_score, negative, json_text(summary), session_id)))

    # -- an exam in progress (issue 42) ------------------------------------------------------

    #: The key of a session's ``summary`` that holds an exam still being sat (replaced by the
    #: exam's summary when it is submitted).
    EXAM_STATE = "exam_in_progress"

    def save_exam_state(self, session_id: str, state: dict[str, Any]) -> None:
        """Write the state of an exam being sat (every answer, change, mark and clear as given),
        committed before this returns; a submitted exam's session is never changed."""
        text = json.dumps({self.EXAM_STATE: state}, ensure_ascii=False, sort_keys=True)
        transaction(self.conn, lambda c: c.execute(
            "UPDATE sessions SET summary = ? WHERE id = ? AND mode = 'exam' AND ended_at IS NULL",
            (text, session_id)))

    def unfinished_exams(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """``(session id, args, saved state)`` of every exam started and neither submitted nor
        finished, newest first (a killed ``qkv exam``, a closed terminal)."""
        out = []
        for r in self.conn.execute("SELECT id, args, summary FROM sessions WHERE mode = 'exam' AND ended_at IS NULL"
                                   " AND summary IS NOT NULL ORDER BY started_at DESC, rowid DESC"):
            try:
                summary = json.loads(r["summary"])
                args = json.loads(r["args"]) if r["args"] else {}
            except (TypeError, ValueError):
                continue
            state = summary.get(self.EXAM_STATE) if isinstance(summary, dict) else None
            if isinstance(state, dict):
                out.append((r["id"], args if isinstance(args, dict) else {}, state))
        return out

    def recorded_numbers(self, session_id: str) -> set[int]:
        """The question numbers of an exam session already stored as attempts (a submission cut
        short by a kill is finished without storing any twice)."""
        out = set()
        for r in self.conn.execute("SELECT extra FROM attempts WHERE session_id = ?", (session_id,)):
            try:
                n = json.loads(r["extra"] or "{}").get("number")
            except (ValueError, AttributeError):
                continue
            if isinstance(n, int):
                out.add(n)
        return out

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
            "part": part, "family": family, "seed": seed_value(seed), "topic": topic, "type": type,
            "answer": answer, "parsed": json_text(parsed),
            "correct": None if correct is None else int(bool(correct)), "score": score, "marks": marks,
            "negative": negative, "time_ms": None if time_ms is None else int(time_ms),
            "misconception": misconception, "misconception_label": misconception_label, "rating": rating,
            "extra": json_text(extra),
        }
        row = safe_row(row)
        sql = (f"INSERT INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})")

        def write(c: sqlite3.Connection) -> Recorded:
            cur = c.execute(sql, [row[k] for k in ATTEMPT_COLUMNS])
            due = None
            if rating is not None:
                due = self._review_card(c, item_key(family, problem_id), rating, when, topic, type, time_ms)
            return Recorded(id=cur.lastrowid, uid=uid, rating=rating, due=due)

        return transaction(self.conn, write)

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

    # -- reports ----------------------------------------------------------------------------

    def report(self, problem_id: str, *, seed: int | None = None, family: str | None = None,
               answer: str | None = None, key: str | None = None, note: str = "",
               session_id: str | None = None, extra: dict[str, Any] | None = None,
               now: datetime | None = None) -> str:
        """Record a disputed key in the database and in ``reports.jsonl``; returns its uid."""
        row = {"uid": uuid.uuid4().hex, "time": iso(now or utc()), "session_id": session_id,
               "problem_id": problem_id, "family": family, "seed": seed_value(seed), "answer": answer,
               "key": key, "note": note, "extra": json_text(extra)}
        row = safe_row(row)
        new = transaction(self.conn, lambda c: self._insert_report_rows(c, [row]))
        self._append_reports_file(new)
        return row["uid"]

    def _insert_report_rows(self, c: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Insert report rows inside the caller's transaction; returns those that were new."""
        sql = (f"INSERT OR IGNORE INTO reports ({', '.join(REPORT_COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(REPORT_COLUMNS))})")
        return [r for r in rows if c.execute(sql, [r.get(k) for k in REPORT_COLUMNS]).rowcount]

    def _append_reports_file(self, rows: list[dict[str, Any]]) -> None:
        """Append committed reports to ``reports.jsonl`` (a warning, not an error, when it cannot be)."""
        if not rows:
            return
        lines = "".join(json.dumps(decode_row(r), ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        try:
            with open(self.data_dir / REPORTS_NAME, "a", encoding="utf-8") as f:
                f.write(lines)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            _default_warn(f"could not append to {REPORTS_NAME} ({e.strerror or e}); "
                          "the report is in the database")

    def _rebuild_cards(self, keys: set[tuple[str, str]] | None) -> int:
        """Replay the rated attempts of ``keys`` (all when None) to rebuild their cards."""
        return transaction(self.conn, lambda c: self._replay_cards(c, keys))

    def _replay_cards(self, c: sqlite3.Connection, keys: set[tuple[str, str]] | None) -> int:
        """:meth:`_rebuild_cards` inside the caller's transaction."""
        from drills.progress.scheduling import review

        rows = c.execute(
            "SELECT family, problem_id, topic, type, time, rating, time_ms FROM attempts"
            " WHERE rating IS NOT NULL ORDER BY time, id").fetchall()
        history: dict[tuple[str, str], list[sqlite3.Row]] = defaultdict(list)
        for r in rows:
            key = item_key(r["family"], r["problem_id"])
            if keys is None or key in keys:
                history[key].append(r)
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
