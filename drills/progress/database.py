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
- :func:`stale_wal` finds a ``-wal`` file that is not this database's (another page size, a lower
  schema version, lost tables, another store id) before SQLite would replay it.
- Dropped tables are rebuilt from what they derive from (cards and sessions from the answers,
  reports from ``reports.jsonl``); :func:`open_read_only` opens for reading commands and writes
  nothing (tables the file lacks become empty TEMP tables).
- :func:`environment_error` turns a read-only file, a full disk, no memory or an I/O error into one line.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import time as _time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from drills.progress.schema import (
    ATTEMPT_COLUMNS,
    MIGRATIONS,
    REPORT_COLUMNS,
    REPORTS_NAME,
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
            _touch_store(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite rolled back already (a full disk, an I/O error)
            raise
        return result

    try:
        return retrying(once)
    except sqlite3.Error as e:
        said = environment_error(e, _file_of(conn))
        if said is None:
            raise
        raise said from None


def _touch_store(conn: sqlite3.Connection) -> None:
    """Raise the store's write count: every transaction's log then holds this history's id."""
    try:
        conn.execute("UPDATE store SET writes = writes + 1")
    except sqlite3.OperationalError as e:
        # an older schema still being migrated; or a read-only connection writing only TEMP tables
        # (a write to the file itself would have failed before this)
        if "no such" not in str(e).lower() and "readonly" not in str(e).lower():
            raise


def _file_of(conn: sqlite3.Connection) -> Path:
    try:
        return Path(next(r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main") or ":memory:")
    except (sqlite3.Error, StopIteration):
        return Path("progress.sqlite3")


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


def environment_error(e: sqlite3.Error, path: Path) -> ProgressError | None:
    """One line for an error the computer causes (read-only file, full disk, no memory), else None."""
    name = getattr(e, "sqlite_errorname", "") or ""
    text = str(e).lower()
    where = f"the progress database {str(path)!r}"
    if name.startswith("SQLITE_READONLY") or "readonly database" in text or "read-only" in text:
        return ProgressError(f"{where} is read-only; make it and its folder writable (chmod u+w) or choose "
                             "another --data-dir; nothing was saved by this command")
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return ProgressError(f"the disk holding {where} is full; free some space and run the command again "
                             "(what was saved before is kept)")
    if name.startswith("SQLITE_NOMEM") or "out of memory" in text:
        return ProgressError(f"out of memory while using {where}; close other programs and try again")
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")) or "unable to open" in text:
        return ProgressError(f"cannot open {where} ({e}); check its permissions or choose another --data-dir")
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        return ProgressError(f"the disk holding {where} gave an I/O error ({e}); check the disk, or choose "
                             "another --data-dir")
    return None


# -- the write-ahead log beside the file --------------------------------------------------------

_WAL_MAGIC = (0x377F0682, 0x377F0683)
_SQLITE_HEADER = b"SQLite format 3\x00"


def _database_page_size(path: Path) -> int | None:
    """The page size in the header of the database file itself (None: no valid header)."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError:
        return None
    if len(header) < 100 or not header.startswith(_SQLITE_HEADER):
        return None
    size = int.from_bytes(header[16:18], "big")
    return 65536 if size == 1 else size


def _wal_frames(wal: Path) -> tuple[int, int] | None:
    """``(page size, frames)`` of a write-ahead log SQLite would read, else None (no file, or a
    header SQLite ignores)."""
    try:
        with open(wal, "rb") as f:
            header = f.read(32)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return None
    if len(header) < 32 or int.from_bytes(header[:4], "big") not in _WAL_MAGIC:
        return None
    page = int.from_bytes(header[8:12], "big")
    if page < 512 or page > 65536 or page & (page - 1):
        return None
    return page, (size - 32) // (24 + page)


def _view(uri: str) -> tuple[int, frozenset[str], str | None, int | None]:
    """``(user_version, tables, store id, store write count)`` as a read-only connection to ``uri``
    sees them (the count is None in a file older than schema step 5)."""
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("BEGIN")  # one snapshot for all the reads
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        marker, writes = None, None
        if "store" in tables:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(store)")}
            row = conn.execute(f"SELECT id, {'writes' if 'writes' in columns else 'NULL'} FROM store LIMIT 1"
                               ).fetchone()
            if row:
                marker, writes = row
        conn.execute("COMMIT")
        return version, tables, marker, (writes if isinstance(writes, int) else None)
    finally:
        conn.close()


#: The start of :func:`stale_wal`'s reason for the log of a copy of this history that went on on its
#: own: its answers are merged into the history, not replayed over it.
DIVERGED = "it comes from a copy of this history that went on on its own"


def _keys(uri: str) -> set[tuple[str, str]]:
    """Every row a write never removes, as the connection to ``uri`` sees them: answers and reports
    by uid, sessions by id (and whether they ended)."""
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("BEGIN")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        out: set[tuple[str, str]] = set()
        if "attempts" in tables:
            out |= {("a", str(r[0])) for r in conn.execute("SELECT uid FROM attempts")}
        if "reports" in tables:
            out |= {("r", str(r[0])) for r in conn.execute("SELECT uid FROM reports")}
        if "sessions" in tables:
            for sid, ended in conn.execute("SELECT id, ended_at FROM sessions"):
                out.add(("s", str(sid)))
                if ended is not None:
                    out.add(("e", str(sid)))
        conn.execute("COMMIT")
        return out
    finally:
        conn.close()


def _rows_lost(base: str) -> int:
    """How many rows of the file alone the database read with its log no longer holds (0: none, or
    either cannot be read, which the integrity check then judges)."""
    try:
        alone = _keys(base + "?mode=ro&immutable=1")
        logged = _keys(base + "?mode=ro")
    except sqlite3.Error:
        return 0
    return len(alone - logged)


def _checksum(data: bytes, s0: int, s1: int, big: bool) -> tuple[int, int]:
    """SQLite's write-ahead-log checksum of ``data`` continued from ``(s0, s1)`` (file format, §4.3)."""
    words = struct.unpack((">" if big else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def _wal_changes_file(wal: Path, path: Path, page: int) -> bool | None:
    """Whether a committed frame of ``wal`` (one SQLite would replay: its salts and running
    checksum right, up to the last commit frame) holds a page unlike that page of the file
    ``path``. None: the log has no valid header (SQLite ignores it). Layout: sqlite.org/fileformat2.html
    "The Write-Ahead Log"."""
    try:
        with open(wal, "rb") as f, open(path, "rb") as db:
            header = f.read(32)
            if len(header) < 32:
                return None
            big = bool(int.from_bytes(header[:4], "big") & 1)
            s0, s1 = _checksum(header[:24], 0, 0, big)
            if (s0, s1) != struct.unpack(">II", header[24:32]):
                return None
            pending: dict[int, int] = {}
            committed: dict[int, int] = {}
            offset = 32
            while True:
                frame = f.read(24)
                body = f.read(page)
                if len(frame) < 24 or len(body) < page or frame[8:16] != header[16:24]:
                    break
                s0, s1 = _checksum(frame[:8], s0, s1, big)
                s0, s1 = _checksum(body, s0, s1, big)
                if (s0, s1) != struct.unpack(">II", frame[16:24]):
                    break
                pending[int.from_bytes(frame[:4], "big")] = offset + 24
                if int.from_bytes(frame[4:8], "big"):  # a commit frame
                    committed.update(pending)
                    pending.clear()
                offset += 24 + page
            for number, at in committed.items():
                f.seek(at)
                db.seek((number - 1) * page)
                if f.read(page) != db.read(page):
                    return True
            return False
    except (OSError, struct.error):
        return None


def _foreign(path: Path, wal: Path, wal_page: int) -> str | None:
    """One look at the log beside ``path``: why it is not the file's own (None: it is, or no verdict)."""
    page = _database_page_size(path)
    if page is None:
        return None  # not a database at all: the integrity check says so
    if page != wal_page:
        return f"its page size is {wal_page} bytes, the database's {page}"
    base = path.resolve().as_uri()
    try:
        alone = _view(base + "?mode=ro&immutable=1")
    except sqlite3.Error:
        return None
    try:
        logged = _view(base + "?mode=ro")
    except sqlite3.DatabaseError as e:
        if is_damage(e):  # the file alone reads, with the log it is damaged: the log is the cause
            return f"the database read with it is damaged: {str(e)[:80]}"
        return None
    if logged[0] < alone[0]:
        return f"it holds schema version {logged[0]}, the database {alone[0]}"
    if alone[1] - logged[1]:
        return f"tables {', '.join(sorted(alone[1] - logged[1]))} are missing from it"
    if alone[2] is not None and logged[2] != alone[2]:
        return "it was written by another history (store id differs)"
    if alone[3] is None:
        return None  # a file older than the write count: the checks above are all there is
    if logged[3] is None or logged[3] < alone[3]:
        return "it holds an older state of the store than the database file"
    if logged[3] > alone[3]:
        # it holds later writes of this history; a log of this very file never loses a row the file
        # holds (answers, sessions and reports are only ever added), a copy's log that went on on its own does
        lost = _rows_lost(base)
        if lost:
            return f"{DIVERGED}: {lost} of the file's rows are not in it"
        return None
    if _wal_changes_file(wal, path, page):
        return "it changes the database but holds none of this history's writes"
    return None


def stale_wal(path: Path) -> str | None:
    """Why the ``-wal`` file beside ``path`` does not belong to it (None: no log, or its own).

    A log left from another history, or copied along with an older file, would be replayed by
    SQLite over this database. Every write transaction raises the store's write count
    (:func:`transaction`), so a log of this file holds the store's row with this file's id and a
    count above the file's. Compared: the log's page size with the file's; then the database as
    the file alone shows it (``immutable=1`` ignores the log) with the database as the log shows
    it: a log of this file never damages it, never lowers the schema version, never loses a
    table, never changes the store's id and never lowers its write count; a log that leaves the
    count as it is may only hold pages the file already has (frames a checkpoint copied). A
    verdict against the log is taken twice, the log unchanged in between, so that a quiz writing
    at the same moment is never taken for a stranger. Anything that cannot be read is left to the
    integrity check."""
    wal = Path(str(path) + "-wal")
    frames = _wal_frames(wal)
    if frames is None or frames[1] == 0:
        return None
    try:
        empty = path.stat().st_size == 0
    except OSError:
        return None
    if empty:
        return "the database file is empty"
    for _ in range(3):
        try:
            before = wal.stat()
        except OSError:
            return None
        first = _foreign(path, wal, frames[0])
        if first is None:
            return None
        _time.sleep(0.05)
        second = _foreign(path, wal, frames[0])
        try:
            after = wal.stat()
        except OSError:
            return None
        if second is None:
            return None
        if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns):
            return first
    return None  # a log that keeps changing belongs to a quiz writing now


# -- opening -------------------------------------------------------------------------------------


def _created_by(table: str, upto: int | None = None) -> tuple[int, list[str]]:
    """The schema step that creates ``table`` and its statements (the table, its indexes and the
    columns later steps add; with ``upto``, those of the steps up to that one)."""
    first, mine = 0, []
    for number, script in enumerate(MIGRATIONS, start=1):
        here = [st for st in _statements(script)
                if f"CREATE TABLE {table} (" in st or f" ON {table} (" in st or f"INTO {table} (" in st
                or f"ALTER TABLE {table} " in st]
        if here and not first:
            first = number
        if upto is None or number <= upto:
            mine += here
    if not first:
        raise KeyError(table)
    return first, mine


def _tables(conn: sqlite3.Connection, schema: str = "main") -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")}


def missing_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables the file's schema version promises and the file lacks (someone dropped them)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    have = _tables(conn)
    return [t for t in TABLES if t not in have and _created_by(t)[0] <= version]


def _reports_from_jsonl(conn: sqlite3.Connection, directory: Path) -> int:
    """Refill ``reports`` from ``reports.jsonl`` (its copy of every report); returns the rows added."""
    import json

    try:
        lines = (directory / REPORTS_NAME).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0
    sql = f"INSERT OR IGNORE INTO reports ({', '.join(REPORT_COLUMNS)}) VALUES ({', '.join('?' * len(REPORT_COLUMNS))})"
    n = 0
    for line in lines:
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not row.get("uid") or not row.get("problem_id") or not row.get("time"):
                continue
            if row.get("extra") is not None and not isinstance(row["extra"], str):
                row["extra"] = json.dumps(row["extra"], ensure_ascii=False, sort_keys=True)
            n += conn.execute(sql, [row.get(k) if isinstance(row.get(k), str | int | float | type(None)) else None
                                    for k in REPORT_COLUMNS]).rowcount
        except (ValueError, sqlite3.Error):
            continue
    return n


def _rebuild_missing(conn: sqlite3.Connection, missing: list[str], directory: Path) -> list[str]:
    """Recreate ``missing`` tables (cards are replayed by the caller); returns what was done, said in words."""
    said: list[str] = []

    def step(c: sqlite3.Connection) -> None:
        said.clear()  # a busy database runs this again
        version = c.execute("PRAGMA user_version").fetchone()[0]
        for table in missing:
            for statement in _created_by(table, version)[1]:
                c.execute(statement)
            if table == "sessions":
                n = c.execute(
                    "INSERT OR IGNORE INTO sessions (id, mode, started_at, ended_at)"
                    " SELECT session_id, min(mode), min(time), max(time) FROM attempts"
                    " WHERE session_id IS NOT NULL GROUP BY session_id").rowcount
                said.append(f"the sessions table was missing; rebuilt {n} sessions from your answers "
                            "(exam scores it held are lost)")
            elif table == "reports":
                n = _reports_from_jsonl(c, directory)
                said.append(f"the reports table was missing; rebuilt {n} reports from {REPORTS_NAME}")
            elif table == "cards":
                said.append("the review cards table was missing; rebuilt it from your answers")
            elif table == "store":
                pass  # a new id: nothing the student needs to hear about

    transaction(conn, step)
    return said


def open_checked(path: Path) -> tuple[sqlite3.Connection, list[str]]:
    """Connect, set WAL, check integrity, migrate and recreate dropped tables; returns the
    connection and lines saying what was rebuilt. Damage raises :class:`Damaged`; a missing
    ``attempts`` table is damage (the answers are not derived from anything)."""
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
        missing = missing_tables(conn)
        if "attempts" in missing:
            raise Damaged("its attempts table is missing")
        said = _rebuild_missing(conn, missing, path.parent) if missing else []
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
    return conn, said


def open_read_only(path: Path) -> tuple[sqlite3.Connection, list[str]]:
    """A connection that cannot write the file (``mode=ro``), for reading commands.

    Tables the file lacks (an older schema, or dropped) are made as empty TEMP tables, so that
    reads see what the file holds and nothing else; returns the tables so made. Damage raises
    :class:`Damaged`, a newer schema :class:`ProgressError`."""
    base = path.resolve().as_uri()
    try:
        conn = sqlite3.connect(base + "?mode=ro", uri=True, isolation_level=None,
                               timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as e:
        if is_damage(e):
            raise Damaged(str(e)) from None
        if not isinstance(e, sqlite3.OperationalError) or Path(str(path) + "-wal").exists():
            raise
        # a read-only folder cannot hold the -shm file; with no log there is nothing it would tell
        conn = sqlite3.connect(base + "?mode=ro&immutable=1", uri=True, isolation_level=None,
                               check_same_thread=False)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = retrying(lambda: conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise ProgressError(f"the progress database has schema version {version}, newer than this "
                                f"qkv understands ({SCHEMA_VERSION}); upgrade qkv")
        result = [r[0] for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
        if result != ["ok"]:
            raise Damaged("; ".join(str(r) for r in result)[:200])
        have = _tables(conn)
        if "attempts" not in have and _created_by("attempts")[0] <= version:
            raise Damaged("its attempts table is missing")
        made = [t for t in TABLES if t not in have]
        for table in made:
            for statement in _created_by(table)[1]:
                if statement.lstrip().upper().startswith("CREATE TABLE"):
                    conn.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
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
    return conn, made


def set_aside(path: Path) -> Path:
    """Move ``path`` and its ``-wal``/``-shm`` files to ``<name>.damaged-<UTC time>``; returns the new path."""
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


def salvage(damaged: Path, conn: sqlite3.Connection, *, with_wal: bool = True, sound_only: bool = False) -> int:
    """Copy whatever rows of a set-aside database can still be read (with its log, unless the log
    is not its own); returns the answers saved (rows already there, by uid, are kept as they are).
    ``sound_only``: copy nothing unless the database read with its log passes SQLite's integrity
    check (a diverged copy's log read over this file: only whole, consistent rows are merged)."""
    scratch = damaged.with_name(damaged.name + ".salvage")
    saved = 0
    try:
        shutil.copyfile(damaged, scratch)  # read a copy: the set-aside file stays as it was
        if with_wal and Path(str(damaged) + "-wal").exists():
            shutil.copyfile(Path(str(damaged) + "-wal"), Path(str(scratch) + "-wal"))
        old = sqlite3.connect(str(scratch), isolation_level=None)
        old.row_factory = sqlite3.Row
    except (OSError, sqlite3.Error):
        return 0
    try:
        if sound_only:
            try:
                if [r[0] for r in old.execute("PRAGMA integrity_check(1)")] != ["ok"]:
                    return 0
            except sqlite3.Error:
                return 0
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
