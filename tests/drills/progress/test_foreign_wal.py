"""A write-ahead log that is not the history's own never replaces the history (issue 28).

The fault trial's repro: answer 6 questions in history A; in history B answer 4, then kill a quiz
mid-session; copy B's ``-wal`` beside A; ``qkv stats``; one more answer in A. Here the log comes
every way the trial made it: another history's killed quiz (written by this qkv, and by one that
did not yet raise the store's write count, so the log holds only data pages), a new history, and
another program's database. Each time, through the real command line: one notice line, exit 0,
A's answers exactly (the right "N answers recovered"), the set-aside file and log kept byte for
byte, and the next answer lands in A's history."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from drills.progress import DB_NAME, ProgressStore
from drills.progress import database as dbmod

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def qkv(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QKV_HOME=str(home), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _answers(home: Path, prefix: str, n: int) -> set[str]:
    """``n`` answers in one finished session (the store closed: its log checkpointed away)."""
    with ProgressStore.open(home) as store:
        sid = store.start_session("quiz", now=T0)
        uids = {store.record_attempt(problem_id=f"{prefix}/{i}", correct=True, session_id=sid,
                                     now=T0 + timedelta(minutes=i)).uid for i in range(n)}
        store.end_session(sid, now=T0 + timedelta(hours=1))
    return uids


def _killed_quiz_wal(home: Path) -> bytes:
    """The log a quiz killed mid-session leaves: a session started and one answer, not checkpointed."""
    store = ProgressStore.open(home)
    try:
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        sid = store.start_session("quiz", now=T0 + timedelta(days=1))
        store.record_attempt(problem_id="killed/1", correct=True, session_id=sid, now=T0 + timedelta(days=1))
        return Path(str(store.path) + "-wal").read_bytes()
    finally:
        store.close()


def _other_program_wal(tmp: Path) -> bytes:
    """Another program's database (same page size): its log holds data pages only, no page 1."""
    path = tmp / "other.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("y" * 50,)] * 40)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE t SET x = 'zzz'")
    wal = Path(str(path) + "-wal").read_bytes()
    conn.close()
    return wal


def _wal_of(source: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    other = tmp / "B"
    if source == "another history's killed quiz":
        _answers(other, "b", 4)
        return _killed_quiz_wal(other)
    if source == "an older qkv's killed quiz (data pages only)":
        with monkeypatch.context() as m:  # a qkv that did not raise the write count
            m.setattr(dbmod, "_touch_store", lambda conn: None)
            _answers(other, "b", 4)
            wal = _killed_quiz_wal(other)
        return wal
    if source == "a new history":
        return _killed_quiz_wal(other)
    return _other_program_wal(tmp)


SOURCES = ["another history's killed quiz", "an older qkv's killed quiz (data pages only)", "a new history",
           "another program's database"]


@pytest.mark.parametrize("size", [6, 300])
@pytest.mark.parametrize("source", SOURCES)
def test_a_foreign_log_never_replaces_the_history(tmp_path, monkeypatch, source, size):
    home = tmp_path / "A"
    mine = _answers(home, "a", size)
    db = home / DB_NAME
    before = db.read_bytes()
    wal = _wal_of(source, tmp_path, monkeypatch)
    Path(str(db) + "-wal").write_bytes(wal)

    out = qkv("stats", "--json", home=home)
    assert out.returncode == 0, out.stderr
    [line] = [x for x in out.stderr.splitlines() if x]
    assert line.startswith("qkv: the progress database had a write-ahead log that is not its own ("), line
    assert f"; {size} answers recovered from it)" in line, line
    [kept] = [p for p in home.glob(f"{DB_NAME}.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert kept.read_bytes() == before
    assert Path(str(kept) + "-wal").read_bytes() == wal

    with ProgressStore.open(home) as store:  # the next answer lands in A's history
        assert {a["uid"] for a in store.attempts()} == mine
        late = store.record_attempt(problem_id="a/late", correct=True, now=T0 + timedelta(days=2)).uid
    again = qkv("stats", "--json", home=home)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    with ProgressStore.open(home, read_only=True) as store:
        assert {a["uid"] for a in store.attempts()} == mine | {late}


def test_own_log_of_a_killed_quiz_is_replayed(tmp_path):
    """The history's own log (the quiz killed after its answers were committed) is kept: no notice."""
    home = tmp_path / "A"
    mine = _answers(home, "a", 6)
    crashed = tmp_path / "crashed"
    store = ProgressStore.open(home)
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")
    late = store.record_attempt(problem_id="a/late", correct=True, now=T0 + timedelta(days=1)).uid
    crashed.mkdir()
    shutil.copyfile(home / DB_NAME, crashed / DB_NAME)  # as SIGKILL leaves them
    shutil.copyfile(Path(str(home / DB_NAME) + "-wal"), crashed / (DB_NAME + "-wal"))
    store.close()
    out = qkv("stats", "--json", home=crashed)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    with ProgressStore.open(crashed, read_only=True) as s:
        assert {a["uid"] for a in s.attempts()} == mine | {late}


def test_own_log_already_copied_into_the_file_is_not_a_stranger(tmp_path):
    """A log whose frames a checkpoint has copied (the write count equal in both) is the file's own."""
    home = tmp_path / "A"
    mine = _answers(home, "a", 6)
    store = ProgressStore.open(home)
    store.conn.execute("PRAGMA wal_autocheckpoint = 0")
    late = store.record_attempt(problem_id="a/late", correct=True, now=T0 + timedelta(days=1)).uid
    store.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # copied into the file, the log left in place
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    shutil.copyfile(home / DB_NAME, crashed / DB_NAME)
    shutil.copyfile(Path(str(home / DB_NAME) + "-wal"), crashed / (DB_NAME + "-wal"))
    store.close()
    assert dbmod._wal_frames(crashed / (DB_NAME + "-wal"))[1] > 0
    assert dbmod.stale_wal(crashed / DB_NAME) is None
    with ProgressStore.open(crashed, read_only=True) as s:
        assert {a["uid"] for a in s.attempts()} == mine | {late}


def test_every_write_transaction_raises_the_store_write_count(tmp_path):
    """The proof the log check relies on: each write leaves the store's row in the log."""
    with ProgressStore.open(tmp_path) as store:
        count = store.conn.execute("SELECT writes FROM store").fetchone()[0]
        store.record_attempt(problem_id="x/1", correct=True, now=T0)
        store.start_session("quiz", now=T0)
        assert store.conn.execute("SELECT writes FROM store").fetchone()[0] == count + 2
