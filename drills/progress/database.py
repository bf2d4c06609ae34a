"""Opening the progress database: connection, transactions, migrations, integrity, damage.

- WAL mode, ``busy_timeout`` and a retry loop (:func:`retrying`), so that two quizzes in two
  terminals both record everything; ``synchronous=FULL``, and one ``BEGIN IMMEDIATE`` ...
  ``COMMIT`` per write (:func:`transaction`), so that Ctrl-C, a closed terminal or SIGKILL lose
  at most the answer being typed.
- :func:`migrate` applies the missing steps of :data:`drills.progress.schema.MIGRATIONS` in one
  transaction; a database written by a newer qkv is refused with one line, never modified.
- :func:`open_checked` runs ``PRAGMA quick_check`` and touches every table: damage ("not a
  database", "malformed") raises :class:`Damaged`; the caller moves the file aside with
  :func:`set_aside` (never deleting it) and copies what can still be read with :func:`salvage`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time as _time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from drills.progress.schema import (
    ATTEMPT_COLUMNS,
    MIGRATIONS,
    REPORT_COLUMNS,
    SCHEMA_VERSION,
    SESSION_COLUMNS,
    TABLES,
    ProgressError,
)

BUSY_TIMEOUT_MS = 10_000
WRITE_RETRIES = 20
T = TypeVar("T")


def is_damage(e: sqlite3.DatabaseError) -> bool:
    name = getattr(e, "sqlite_errorname", "") or ""
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return True
    text = str(e).lower()
    return "not a database" in text or "malformed" in text or "file is encrypted" in text


class Damaged(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def retrying(fn: Callable[..., T], *args: object) -> T:
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


def transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn(conn)`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``, retried while the database is busy."""

    def once() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    return retrying(once)


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

    return transaction(conn, step)


def open_checked(path: Path) -> sqlite3.Connection:
    """Connect, set WAL, check integrity and migrate; damage raises :class:`_Damaged`."""
    conn = connect(path)
    try:
        version = retrying(lambda: conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:  # refuse before changing anything (even the journal mode)
            raise ProgressError(f"the progress database has schema version {version}, newer than this "
                                f"qkv understands ({SCHEMA_VERSION}); upgrade qkv")
        retrying(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = OFF")
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        if result != ["ok"]:
            raise Damaged("; ".join(str(r) for r in result)[:200])
        migrate(conn)
        # touch every table once: a damaged schema shows itself here
        for table in TABLES:
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    except sqlite3.DatabaseError as e:
        conn.close()
        if is_damage(e):
            raise Damaged(str(e)) from None
        raise
    except BaseException:
        conn.close()
        raise
    return conn


def set_aside(path: Path) -> Path:
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


def salvage(damaged: Path, conn: sqlite3.Connection) -> int:
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
        for table, columns in (("sessions", SESSION_COLUMNS), ("attempts", ATTEMPT_COLUMNS),
                               ("reports", REPORT_COLUMNS)):
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

            n = transaction(conn, insert)
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
