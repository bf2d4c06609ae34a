"""The log of a copy of this history that went on on its own is set aside and merged, never
replayed over the history (issue 42).

The fault trial's repro: history A, copied to B (the same store id); B answers more in a quiz that
is killed (its log not checkpointed, with more writes than A); A answers more on its own; B's
``-wal`` lands beside A's file. Replayed, it silently lost A's later answers (3 of 9). Here, through
the real command line: one notice line, exit 0, the file and the log set aside byte for byte, and
every answer of both, A's and B's, in the history afterwards (the next answer lands there too)."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from drills.progress import DB_NAME, ProgressStore
from tests.drills.progress.test_foreign_wal import T0, _answers, qkv


def _killed(home: Path, prefix: str, n: int) -> tuple[bytes, set[str], bytes]:
    """A quiz killed after ``n`` answers: its log as it is left (not checkpointed), and the file then."""
    store = ProgressStore.open(home)
    try:
        store.conn.execute("PRAGMA wal_autocheckpoint = 0")
        sid = store.start_session("quiz", now=T0 + timedelta(days=1))
        uids = {store.record_attempt(problem_id=f"{prefix}/{i}", correct=True, session_id=sid,
                                     now=T0 + timedelta(days=1, minutes=i)).uid for i in range(n)}
        return Path(str(store.path) + "-wal").read_bytes(), uids, store.path.read_bytes()
    finally:
        store.close()


@pytest.mark.parametrize(("first", "copy", "later"), [(3, 6, 3), (200, 40, 30), (6, 12, 1)])
def test_a_diverged_copys_log_is_merged_not_replayed(tmp_path, first, copy, later):
    a, b = tmp_path / "A", tmp_path / "B"
    mine = _answers(a, "a", first)
    b.mkdir()
    shutil.copyfile(a / DB_NAME, b / DB_NAME)  # the same store id
    wal, theirs, _ = _killed(b, "b", copy)
    mine |= _answers(a, "a2", later)  # A goes on on its own
    db = a / DB_NAME
    before = db.read_bytes()
    Path(str(db) + "-wal").write_bytes(wal)

    out = qkv("stats", "--json", home=a)
    assert out.returncode == 0, out.stderr
    [line] = [x for x in out.stderr.splitlines() if x]
    assert line.startswith("qkv: the progress database had a write-ahead log from a copy of this history that went "
                           "on on its own ("), line
    assert f"; {len(mine)} answers recovered from it; {copy} answers of the copy merged in from its log)" in line, line
    [kept] = [p for p in a.glob(f"{DB_NAME}.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert kept.read_bytes() == before
    assert Path(str(kept) + "-wal").read_bytes() == wal

    with ProgressStore.open(a) as store:
        assert {x["uid"] for x in store.attempts()} == mine | theirs
        late = store.record_attempt(problem_id="a/late", correct=True, now=T0 + timedelta(days=2)).uid
    again = qkv("stats", "--json", home=a)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    with ProgressStore.open(a, read_only=True) as store:
        assert {x["uid"] for x in store.attempts()} == mine | theirs | {late}


def test_the_files_own_longer_log_is_still_replayed(tmp_path):
    """No stranger where there is none: a killed quiz's own log, many writes past the file, replays."""
    a = tmp_path / "A"
    mine = _answers(a, "a", 5)
    wal, more, file = _killed(a, "a3", 20)
    (a / DB_NAME).write_bytes(file)  # as the kill left them: the file, and its log beside it
    Path(str(a / DB_NAME) + "-wal").write_bytes(wal)
    out = qkv("stats", "--json", home=a)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    with ProgressStore.open(a, read_only=True) as store:
        assert {x["uid"] for x in store.attempts()} == mine | more
