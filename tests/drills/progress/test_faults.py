"""The progress store under faults, through the real command line: a write-ahead log that is not
the database's, a 0-byte file, a dropped table, a read command on an old file, a read-only file,
a full disk. Each case: one line on stderr, the exit status, and the answers still there."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from drills.progress import DB_NAME, MIGRATIONS, SCHEMA_VERSION, ProgressStore, migrate

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def qkv(*args: str, home: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``qkv ARGS`` in a fresh interpreter with ``QKV_HOME=home``."""
    env = dict(os.environ, QKV_HOME=str(home), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env,
                          input=input, timeout=120)


def _history(data: Path, n: int = 12) -> set[str]:
    """``n`` answers in ``data`` (store closed: its log checkpointed away); returns their uids."""
    with ProgressStore.open(data) as store:
        sid = store.start_session("quiz", now=T0)
        uids = {store.record_attempt(problem_id=f"attention.f/{i}", family="attention.f", seed=i, topic="attention",
                                     type="nat", answer="0.6", correct=i % 3 != 0, time_ms=20_000,
                                     session_id=sid, now=T0 + timedelta(minutes=i)).uid for i in range(n)}
        store.end_session(sid, now=T0 + timedelta(hours=1))
    return uids


def _uids(data: Path) -> set[str]:
    with ProgressStore.open(data, read_only=True) as store:
        return {a["uid"] for a in store.attempts()}


def _live_wal(directory: Path, setup: str) -> bytes:
    """The bytes of the -wal file of a database built by ``setup`` (SQL), copied while it is open."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "other.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(setup)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE scratch (x)")
    conn.execute("INSERT INTO scratch VALUES (1)")
    wal = Path(str(path) + "-wal").read_bytes()
    conn.close()
    return wal


def _another_history_wal(tmp: Path) -> bytes:
    """The live log of another qkv history (same schema, other store id, other answers)."""
    other = tmp / "other-home"
    with ProgressStore.open(other) as store:
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        store.record_attempt(problem_id="other/1", correct=True, now=T0)
        wal = Path(str(store.path) + "-wal").read_bytes()
    return wal


def _notice_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line]


# -- a write-ahead log that is not the database's ------------------------------------------------

@pytest.mark.parametrize("source", ["another history", "an empty database", "another page size"])
def test_foreign_wal_is_set_aside_with_the_database_and_nothing_is_lost(tmp_path, source):
    home = tmp_path / "home"
    uids = _history(home)
    db = home / DB_NAME
    before = db.read_bytes()
    if source == "another history":
        wal = _another_history_wal(tmp_path)
    elif source == "an empty database":
        wal = _live_wal(tmp_path / "x", "")
    else:
        wal = _live_wal(tmp_path / "x", "PRAGMA page_size = 1024;")
    Path(str(db) + "-wal").write_bytes(wal)

    out = qkv("stats", "--json", home=home)  # a reading command is enough to trigger SQLite's replay
    assert out.returncode == 0, out.stderr
    [line] = _notice_lines(out.stderr)
    assert line.startswith("qkv: the progress database had a write-ahead log that is not its own (")
    assert "moved to progress.sqlite3.damaged-" in line and "(with the -wal file)" in line
    assert f"{len(uids)} answers recovered" in line
    assert _uids(home) == uids  # the whole history, from the file alone
    [kept] = [p for p in home.glob(f"{DB_NAME}.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert kept.read_bytes() == before
    assert Path(str(kept) + "-wal").read_bytes() == wal
    again = qkv("stats", home=home)
    assert again.returncode == 0 and again.stderr == ""  # said once, fixed for good


def test_own_wal_after_a_crash_is_replayed_not_set_aside(tmp_path):
    """The log a killed quiz leaves is the database's own: its answers count, no notice."""
    home = tmp_path / "home"
    uids = _history(home, 5)
    db = home / DB_NAME
    store = ProgressStore.open(home)
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")
    late = store.record_attempt(problem_id="late/1", correct=True, now=T0 + timedelta(days=1)).uid
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copyfile(db, crashed / DB_NAME)  # the file and its log as SIGKILL leaves them
    shutil.copyfile(Path(str(db) + "-wal"), crashed / (DB_NAME + "-wal"))
    store.close()
    out = qkv("stats", "--json", home=crashed)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert _uids(crashed) == uids | {late}
    assert not list(crashed.glob("*.damaged-*"))


# -- a 0-byte file, a dropped table --------------------------------------------------------------

def test_zero_byte_database_is_said_and_replaced(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = home / DB_NAME
    db.write_bytes(b"")
    old = datetime.now().timestamp() - 3600
    os.utime(db, (old, old))
    out = qkv("stats", home=home)
    assert out.returncode == 0
    [line] = _notice_lines(out.stderr)
    assert line == f"qkv: the progress database {str(db)!r} was an empty file (0 bytes: nothing in it to " \
                   "recover); starting a new one"
    assert db.read_bytes() == b""  # a reading command wrote nothing


def test_dropped_cards_table_is_rebuilt_from_the_answers(tmp_path):
    home = tmp_path / "home"
    _history(home)
    with ProgressStore.open(home) as store:
        cards = {k: (c.reps, c.due) for k, c in store.cards().items()}
    assert cards[("family", "attention.f")][0] == 12
    conn = sqlite3.connect(home / DB_NAME)
    conn.execute("DROP TABLE cards")
    conn.commit()
    conn.close()

    out = qkv("stats", "--json", home=home)  # read-only: computed in memory, the file untouched
    assert out.returncode == 0, out.stderr
    assert '"cards": 1' in out.stdout
    assert "cards" not in {r[0] for r in sqlite3.connect(home / DB_NAME).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}

    lines: list[str] = []
    with ProgressStore.open(home, warn=lines.append) as store:  # a writing command repairs the file
        assert {k: (c.reps, c.due) for k, c in store.cards().items()} == cards
    assert lines == ["the review cards table was missing; rebuilt it from your answers"]


def test_dropped_sessions_and_reports_tables_are_rebuilt(tmp_path):
    home = tmp_path / "home"
    _history(home, 4)
    with ProgressStore.open(home) as store:
        store.report("attention.f/1", note="key looks wrong", now=T0)
        sessions = [s["id"] for s in store.conn.execute("SELECT id FROM sessions")]
    conn = sqlite3.connect(home / DB_NAME)
    conn.executescript("DROP TABLE sessions; DROP TABLE reports;")
    conn.close()
    lines: list[str] = []
    with ProgressStore.open(home, warn=lines.append) as store:
        assert [s["id"] for s in store.conn.execute("SELECT id FROM sessions")] == sessions
        assert [r["note"] for r in store.reports()] == ["key looks wrong"]
    assert lines == ["the sessions table was missing; rebuilt 1 sessions from your answers (exam scores it held "
                     "are lost)", "the reports table was missing; rebuilt 1 reports from reports.jsonl"]


# -- reads do not write -------------------------------------------------------------------------

def test_stats_on_an_old_schema_reads_it_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = home / DB_NAME
    conn = sqlite3.connect(db, isolation_level=None)
    migrate(conn, upto=1)  # sessions and answers only: no cards, no reports, no store id
    conn.execute("INSERT INTO attempts (uid, time, mode, problem_id, topic, correct, rating) VALUES "
                 "('u1', '2025-03-01T09:00:00.000000+00:00', 'quiz', 'p/1', 'attention', 1, 3)")
    conn.close()
    before, stamp = db.read_bytes(), db.stat().st_mtime_ns
    out = qkv("stats", "--json", home=home)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert '"answered": 1' in out.stdout and '"cards": 1' in out.stdout
    assert db.read_bytes() == before and db.stat().st_mtime_ns == stamp
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 1
    assert qkv("history", "export", home=home).returncode == 0
    assert db.read_bytes() == before


def test_stats_on_no_database_creates_nothing(tmp_path):
    home = tmp_path / "home"
    out = qkv("stats", home=home)
    assert out.returncode == 0 and "No answers recorded yet" in out.stdout
    assert not home.exists()


def test_schema_version_is_the_number_of_steps():
    assert SCHEMA_VERSION == len(MIGRATIONS)


# -- the computer's faults: a read-only file, a full disk, undecodable input -----------------------

def _run(*args: str, input: str | None = None):
    from click.testing import CliRunner

    from drills.cli import cli

    return CliRunner().invoke(cli, list(args), input=input)


@pytest.fixture
def read_only_db(monkeypatch):
    """Calling it makes every connection the store opens SQLite's read-only mode (the tests run as
    root, whom chmod does not stop; SQLite's mode=ro does)."""
    import drills.progress.database as database

    def connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    return lambda: monkeypatch.setattr(database, "connect", connect)


@pytest.fixture
def full_disk(monkeypatch):
    """Calling it stops the database from growing by one more page: SQLite's own SQLITE_FULL, as
    on a full disk."""
    import drills.progress.database as database

    real = database.connect

    def connect(path: Path) -> sqlite3.Connection:
        conn = real(path)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return conn

    return lambda: monkeypatch.setattr(database, "connect", connect)


def test_read_only_database_is_one_line_and_keeps_the_history(tmp_path, read_only_db):
    home = tmp_path / "home"
    uids = _history(home, 3)
    read_only_db()
    result = _run("quiz", "-n", "1", "--seed", "1", "--plain", "--data-dir", str(home), input="0.6\nquit\n")
    assert result.exit_code == 2
    [line] = [x for x in result.output.splitlines() if x.startswith("qkv:")]
    assert line == (f"qkv: error: the progress database {str(home / DB_NAME)!r} is read-only; make it and its "
                    "folder writable (chmod u+w) or choose another --data-dir; nothing was saved by this command")
    assert "Traceback" not in result.output
    assert _uids(home) == uids


def test_full_disk_during_import_is_one_line_and_imports_nothing(tmp_path, full_disk):
    home = tmp_path / "home"
    uids = _history(home, 3)
    with ProgressStore.open(tmp_path / "big") as big:
        for i in range(300):
            big.record_attempt(problem_id=f"p/{i}", answer="x" * 200, correct=True, now=T0 + timedelta(seconds=i))
        (tmp_path / "big.json").write_text(big.export())
    full_disk()
    result = _run("history", "import", str(tmp_path / "big.json"), "--data-dir", str(home))
    assert result.exit_code == 2
    assert result.output == (f"qkv: error: the disk holding the progress database {str(home / DB_NAME)!r} is "
                             "full; free some space and run the command again (what was saved before is kept)\n")
    assert _uids(home) == uids


def test_full_disk_while_answering_loses_only_the_answer_being_written(tmp_path, full_disk):
    from drills.progress import ProgressError

    home = tmp_path / "home"
    _history(home, 1)
    full_disk()
    confirmed = []
    with ProgressStore.open(home) as store, pytest.raises(ProgressError, match="is full; free some space"):
        for i in range(10_000):
            confirmed.append(store.record_attempt(problem_id=f"p/{i}", answer="y" * 300, correct=True).uid)
    assert 0 < len(confirmed) < 10_000
    assert set(confirmed) <= _uids(home)


def test_undecodable_bytes_in_a_report_note_are_kept_as_replacement_characters(tmp_path):
    home = tmp_path / "home"
    with ProgressStore.open(home) as store:
        note = b"the key \xff is wrong".decode("utf-8", "surrogateescape")  # as a terminal passes them
        store.report("p/1", note=note, answer="0.6\udcfe")
        [row] = store.reports()
    assert row["note"] == "the key \ufffd is wrong" and row["answer"] == "0.6\ufffd"
    assert "\ufffd" in (home / "reports.jsonl").read_text(encoding="utf-8")


def test_full_disk_during_a_quiz_is_one_line_and_keeps_earlier_answers(tmp_path, full_disk):
    home = tmp_path / "home"
    uids = _history(home, 2)
    full_disk()
    result = _run("quiz", "-n", "40", "--seed", "1", "--plain", "--data-dir", str(home), input="skip\n" * 40)
    assert result.exit_code == 2
    [line] = [x for x in result.output.splitlines() if x.startswith("qkv:")]
    assert line == (f"qkv: error: the disk holding the progress database {str(home / DB_NAME)!r} is full; free "
                    "some space and run the command again (what was saved before is kept)")
    assert uids <= _uids(home)


def test_a_store_error_mid_quiz_closes_the_session_when_the_store_still_can(tmp_path, monkeypatch):
    """The store refuses one answer (as a full disk does) but can still write the session's end:
    the quiz stops with the one-line error, the answers before it are kept and the session row is
    closed (it used to stay open)."""
    import sqlite3 as sq

    from drills.progress import ProgressError, recording

    home = tmp_path / "home"
    real = recording.ProgressStore.record_attempt
    calls = {"n": 0}

    def record_attempt(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ProgressError("the disk holding the progress database is full (simulated)")
        return real(self, *a, **kw)

    monkeypatch.setattr(recording.ProgressStore, "record_attempt", record_attempt)
    result = _run("quiz", "-n", "6", "--seed", "1", "--plain", "--data-dir", str(home), input="skip\n" * 6)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert [x for x in result.output.splitlines() if x.startswith("qkv:")] == [
        "qkv: error: the disk holding the progress database is full (simulated)"]
    with sq.connect(home / DB_NAME) as conn:
        rows = conn.execute("SELECT ended_at FROM sessions WHERE mode = 'quiz'").fetchall()
        n_attempts = conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    assert len(rows) == 1 and rows[0][0] is not None
    assert n_attempts == 2
