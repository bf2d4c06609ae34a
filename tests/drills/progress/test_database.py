"""The progress store: nothing lost (SIGKILL, two writers, damaged files), migrations,
export/import, statistics computed by hand."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from drills.answers import parse_matrix, parse_number
from drills.progress import (
    DB_NAME,
    MIGRATIONS,
    REPORTS_NAME,
    SCHEMA_VERSION,
    ProgressError,
    ProgressStore,
    migrate,
)
from drills.progress.scheduling import AGAIN

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("QKV_HOME", None)
    return env


@pytest.fixture
def store(tmp_path):
    s = ProgressStore.open(tmp_path / "data", warn=lambda line: pytest.fail(f"unexpected warning: {line}"))
    yield s
    s.close()


def test_open_creates_wal_database_at_current_schema(store):
    assert store.path.name == DB_NAME and store.path.exists()
    assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_record_attempt_stores_every_field_and_updates_the_card(store):
    sid = store.start_session("quiz", args={"topic": "attention"}, now=T0)
    rec = store.record_attempt(
        problem_id="attention.by_hand/7", family="attention.by_hand", seed=7, topic="attention", type="nat",
        answer="0.60", parsed=parse_number("0.60"), correct=False, score=0.0, marks=2, negative=0.0,
        time_ms=41_000, misconception="no_sqrt_dk_scaling", misconception_label="forgot to divide by √dₖ",
        session_id=sid, now=T0 + timedelta(seconds=41))
    assert rec.rating == AGAIN and rec.due == T0 + timedelta(seconds=41, minutes=1)
    [row] = store.attempts(session_id=sid)
    assert row["uid"] == rec.uid and row["answer"] == "0.60" and row["correct"] == 0 and row["marks"] == 2
    assert row["parsed"]["exact"] == "3/5" and row["parsed"]["decimals"] == 2
    assert row["time"] == "2025-03-01T09:00:41.000000+00:00"
    assert row["misconception"] == "no_sqrt_dk_scaling" and row["rating"] == AGAIN
    [card] = store.due_items(T0 + timedelta(minutes=5))
    assert (card.kind, card.ref, card.topic, card.type, card.reps) == ("family", "attention.by_hand", "attention",
                                                                     "nat", 1)


def test_skipped_and_unreviewed_answers(store):
    skipped = store.record_attempt(problem_id="gate.q3", topic="counting", type="mcq", correct=None, now=T0)
    assert skipped.rating == AGAIN  # a skip means "I could not do it"
    exam = store.record_attempt(problem_id="gate.q4", topic="counting", type="mcq", answer="b", correct=True,
                                mode="exam", review=False, now=T0)
    assert exam.rating is None and exam.due is None
    assert set(store.cards()) == {("item", "gate.q3")}
    with pytest.raises(ValueError):
        store.record_attempt(problem_id="x", mode="practice")


def test_due_items_longest_overdue_first_and_by_topic(store):
    store.record_attempt(problem_id="a/1", family="a", topic="attention", type="nat", correct=True, now=T0)
    store.record_attempt(problem_id="b/1", family="b", topic="counting", type="nat", correct=False, now=T0)
    store.record_attempt(problem_id="c/1", family="c", topic="attention", type="nat", correct=False,
                         now=T0 + timedelta(minutes=3))
    # wrong -> due after 1 minute; right with no time -> Good -> due after 10 minutes
    assert [d.ref for d in store.due_items(T0)] == []
    assert [d.ref for d in store.due_items(T0 + timedelta(minutes=2))] == ["b"]
    assert [d.ref for d in store.due_items(T0 + timedelta(minutes=11))] == ["b", "c", "a"]
    assert [d.ref for d in store.due_items(T0 + timedelta(minutes=11), topic="attention")] == ["c", "a"]
    assert [d.ref for d in store.due_items(T0, within=timedelta(minutes=5))] == ["b", "c"]


def test_report_goes_to_table_and_jsonl(store):
    store.report("attention.by_hand/7", seed=7, family="attention.by_hand", answer="0.62",
                 key="0.60", note="the statement says two decimals", now=T0)
    [row] = store.reports()
    assert row["answer"] == "0.62" and row["note"] == "the statement says two decimals"
    lines = (store.data_dir / REPORTS_NAME).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert (line["problem_id"], line["seed"], line["answer"], line["key"]) == ("attention.by_hand/7", 7, "0.62", "0.60")


def test_stats_worked_by_hand(store):
    day = timedelta(days=1)
    store.record_attempt(problem_id="a/1", family="a", topic="attention", type="nat", correct=True, now=T0)
    store.record_attempt(problem_id="a/2", family="a", topic="attention", type="nat", correct=False,
                         misconception="m1", misconception_label="forgot √dₖ", now=T0 + timedelta(hours=1))
    store.record_attempt(problem_id="c/1", family="c", topic="counting", type="integer", correct=None,
                         now=T0 + timedelta(hours=2))
    store.record_attempt(problem_id="c/2", family="c", topic="counting", type="integer", correct=True,
                         now=T0 + day)
    store.record_attempt(problem_id="a/3", family="a", topic="attention", type="nat", correct=True,
                         now=T0 + 3 * day)
    s = store.stats(now=T0 + 3 * day + timedelta(hours=3), tz=UTC, days=4)
    # 5 attempts, 4 answered (one skipped), 3 right
    assert (s["totals"]["attempts"], s["totals"]["answered"], s["totals"]["correct"]) == (5, 4, 3)
    assert s["totals"]["accuracy"] == 0.75
    topics = {t["topic"]: t for t in s["topics"]}
    assert (topics["attention"]["answered"], topics["attention"]["correct"]) == (3, 2)
    assert (topics["counting"]["attempts"], topics["counting"]["answered"], topics["counting"]["accuracy"]) == (2, 1, 1.0)
    assert s["misconceptions"] == [{"id": "m1", "label": "forgot √dₖ", "count": 1, "topics": ["attention"]}]
    # answers on 1, 2 and 4 March: the current streak is 1 (3 March is missing), the longest 2
    assert s["streak"] == {"current": 1, "longest": 2, "last_day": "2025-03-04", "today": True}
    assert [d["day"] for d in s["daily"]] == ["2025-03-01", "2025-03-02", "2025-03-03", "2025-03-04"]
    assert [d["answered"] for d in s["daily"]] == [2, 1, 0, 1]
    assert [d["accuracy"] for d in s["daily"]] == [0.5, 1.0, None, 1.0]
    due = s["due"]
    assert due["cards"] == 2 and due["now"] <= due["today"] <= due["week"] <= 2


def test_streak_survives_until_the_end_of_the_next_day(store):
    store.record_attempt(problem_id="a/1", family="a", topic="t", type="nat", correct=True, now=T0)
    store.record_attempt(problem_id="a/2", family="a", topic="t", type="nat", correct=True, now=T0 + timedelta(days=1))
    assert store.stats(now=T0 + timedelta(days=2), tz=UTC)["streak"]["current"] == 2  # nothing yet today
    assert store.stats(now=T0 + timedelta(days=3), tz=UTC)["streak"]["current"] == 0


def test_exam_session_score(store):
    sid = store.start_session("exam", args={"minutes": 30}, now=T0)
    store.end_session(sid, score=7.67, max_score=10, negative=0.33, summary={"answered": 6}, now=T0 + timedelta(minutes=29))
    session = store.session(sid)
    assert session["score"] == 7.67 and session["summary"] == {"answered": 6}
    [exam] = store.stats(now=T0 + timedelta(hours=1), tz=UTC)["exams"]
    assert (exam["score"], exam["max_score"], exam["negative"]) == (7.67, 10, 0.33)


# -- never lose an answer ----------------------------------------------------------------------

WRITER = """
import sys
from drills.progress import ProgressStore
store = ProgressStore.open(sys.argv[1])
tag, count = sys.argv[2], int(sys.argv[3])
i = 0
while count < 0 or i < count:
    rec = store.record_attempt(problem_id=f"{tag}/{i}", family="shared.family", topic="t", type="nat",
                               answer=str(i), correct=i % 3 != 0, time_ms=1000 + i)
    print(rec.uid, flush=True)
    i += 1
"""


def test_sigkill_loses_no_confirmed_answer(tmp_path):
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(data), "k", "-1"], stdout=subprocess.PIPE,
                            text=True, env=_env())
    confirmed = []
    deadline = time.monotonic() + 30
    while len(confirmed) < 40 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        confirmed.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=10)
    confirmed += [line for line in rest.split("\n") if line]  # printed after commit: also confirmed
    assert proc.returncode == -signal.SIGKILL
    assert len(confirmed) >= 40
    with ProgressStore.open(data) as store:
        stored = {a["uid"] for a in store.attempts()}
        assert set(confirmed) <= stored
        assert len(stored) - len(confirmed) <= 1  # at most the answer committed but not yet printed
        # the card was updated in the same transaction as each answer
        assert store.cards()[("family", "shared.family")].reps == len(stored)


def test_two_processes_writing_at_once_both_record_everything(tmp_path):
    data = tmp_path / "data"
    ProgressStore.open(data).close()
    n = 60
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(data), tag, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env()) for tag in ("left", "right")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    with ProgressStore.open(data) as store:
        ids = {a["problem_id"] for a in store.attempts()}
        assert ids == {f"{tag}/{i}" for tag in ("left", "right") for i in range(n)}
        assert store.count_attempts() == 2 * n
        assert store.cards()[("family", "shared.family")].reps == 2 * n  # no lost update of the card


# -- damaged files -------------------------------------------------------------------------------

def test_garbage_file_is_reported_and_kept(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    garbage = b"this is not a database, it is a shopping list\n" * 200
    (data / DB_NAME).write_bytes(garbage)
    lines = []
    with ProgressStore.open(data, warn=lines.append) as store:
        assert store.count_attempts() == 0
        store.record_attempt(problem_id="x", correct=True)  # the new database works
    assert len(lines) == 1
    assert lines[0].startswith("the progress database was damaged; moved to progress.sqlite3.damaged-")
    assert "starting a new one (your old file is kept)" in lines[0]
    [kept] = data.glob(f"{DB_NAME}.damaged-*")
    assert kept.name in lines[0]
    assert kept.read_bytes() == garbage  # byte for byte


def test_malformed_database_is_set_aside_and_its_answers_recovered(tmp_path):
    data = tmp_path / "data"
    with ProgressStore.open(data) as store:
        for i in range(120):
            store.record_attempt(problem_id=f"p/{i}", family=f"f{i % 7}", topic="t", type="nat",
                                 answer="x" * 50, correct=i % 2 == 0, now=T0 + timedelta(minutes=i))
    path = data / DB_NAME
    raw = bytearray(path.read_bytes())
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    raw[2 * page: 2 * page + 200] = b"\xff" * 200  # wreck the third page
    path.write_bytes(bytes(raw))
    lines = []
    with ProgressStore.open(data, warn=lines.append) as store:
        recovered = store.count_attempts()
        assert store.schema_version == SCHEMA_VERSION
        assert store.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    [kept] = [p for p in data.glob(f"{DB_NAME}.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert kept.read_bytes() == bytes(raw)
    assert len(lines) == 1 and "damaged" in lines[0] and kept.name in lines[0]
    if recovered:
        assert f"{recovered} answers recovered" in lines[0]


def test_damage_is_one_line_from_the_cli(tmp_path):
    (tmp_path / DB_NAME).write_bytes(b"\x00garbage" * 100)
    env = _env()
    env["QKV_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-m", "drills", "stats"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("qkv: the progress database was damaged; moved to progress.sqlite3.damaged-")
    assert "Traceback" not in out.stderr


# -- migrations ----------------------------------------------------------------------------------

def test_migrates_an_empty_file_from_version_0(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / DB_NAME).write_bytes(b"")  # a zero-length file is a valid database at user_version 0
    with ProgressStore.open(data, warn=lambda line: pytest.fail(line)) as store:
        assert store.schema_version == SCHEMA_VERSION
        tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"sessions", "attempts", "cards", "reports"} <= tables


def test_migrates_version_1_keeping_rows(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / DB_NAME, isolation_level=None)
    assert migrate(conn, upto=1) == 1
    conn.execute("INSERT INTO attempts (uid, time, mode, problem_id, family, correct, rating) "
                 "VALUES ('u1', '2025-03-01T09:00:00.000000+00:00', 'quiz', 'a/1', 'a', 1, 3)")
    conn.close()
    with ProgressStore.open(data) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert [a["uid"] for a in store.attempts()] == ["u1"]
        store.record_attempt(problem_id="a/2", family="a", correct=True, now=T0 + timedelta(days=1))
        store.report("a/2", note="works after migration")


def test_newer_schema_is_refused_untouched(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    conn = sqlite3.connect(data / DB_NAME)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = (data / DB_NAME).read_bytes()
    with pytest.raises(ProgressError, match="newer than this qkv understands"):
        ProgressStore.open(data)
    assert (data / DB_NAME).read_bytes() == before
    assert not list(data.glob("*.damaged-*"))


# -- export and import ---------------------------------------------------------------------------

def _history(store: ProgressStore) -> None:
    sid = store.start_session("quiz", args={"topic": "attention", "count": 3}, now=T0)
    store.record_attempt(problem_id="attention.by_hand/1", family="attention.by_hand", seed=1, topic="attention",
                         type="matrix", answer="0.6 0.4; 0.4 0.6", parsed=parse_matrix("0.6 0.4; 0.4 0.6"),
                         correct=True, score=1.0, marks=1, time_ms=50_000, session_id=sid, now=T0)
    store.record_attempt(problem_id="attention.by_hand/2", family="attention.by_hand", seed=2**64 + 5,
                         topic="attention", type="nat", answer="0.7071", parsed=parse_number("0.7071"),
                         correct=False, score=0.0, marks=2, time_ms=12_345, misconception="no_sqrt_dk_scaling",
                         misconception_label="forgot √dₖ", session_id=sid, now=T0 + timedelta(minutes=2),
                         extra={"hints": 1})
    store.record_attempt(problem_id="gate.2024.q3", topic="counting", type="mcq", correct=None, session_id=sid,
                         now=T0 + timedelta(minutes=4))
    store.end_session(sid, now=T0 + timedelta(minutes=5))
    exam = store.start_session("exam", now=T0 + timedelta(days=1))
    store.record_attempt(problem_id="counting.params/9", family="counting.params", seed=9, topic="counting",
                         type="integer", answer="110M", parsed=parse_number("110M"), correct=True, score=2.0,
                         marks=2, negative=0.0, time_ms=200_000, mode="exam", session_id=exam,
                         now=T0 + timedelta(days=1, minutes=3))
    store.record_attempt(problem_id="attention.by_hand/3", family="attention.by_hand", seed=3, topic="attention",
                         type="nat", answer="0.6", correct=True, marks=1, time_ms=10_000,
                         now=T0 + timedelta(days=1, hours=1))
    store.end_session(exam, score=2.0, max_score=3.0, negative=0.0, now=T0 + timedelta(days=1, minutes=30))
    store.report("attention.by_hand/2", seed=2**64 + 5, answer="0.7071", key="0.5", note="disputed", now=T0)


def _comparable(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "exported_at"}


def test_json_export_import_round_trip_is_exact_and_idempotent(tmp_path):
    with ProgressStore.open(tmp_path / "a") as a:
        _history(a)
        exported = a.export("json")
    with ProgressStore.open(tmp_path / "b") as b:
        counts = b.import_(exported)
        assert counts == {"attempts": 5, "skipped": 0, "sessions": 2, "reports": 1, "cards": 3}
        again = b.import_(exported)
        assert again == {"attempts": 0, "skipped": 5, "sessions": 0, "reports": 0, "cards": 0}
        assert b.count_attempts() == 5
        reexported = b.export("json")
    # everything, review cards included (rebuilt by replaying the answers), comes back identical
    assert _comparable(json.loads(reexported)) == _comparable(json.loads(exported))
    assert len((tmp_path / "b" / REPORTS_NAME).read_text().splitlines()) == 1  # not appended twice


def test_csv_export_import_round_trip(tmp_path):
    with ProgressStore.open(tmp_path / "a") as a:
        _history(a)
        csv_text = a.export("csv")
        original = json.loads(a.export("json"))
    assert csv_text.splitlines()[0].startswith("uid,time,session_id,mode,problem_id")
    assert len(csv_text.splitlines()) == 6
    with ProgressStore.open(tmp_path / "b") as b:
        assert b.import_(csv_text)["attempts"] == 5
        assert b.import_(csv_text)["attempts"] == 0
        copy = json.loads(b.export("json"))
    assert copy["attempts"] == original["attempts"]
    assert copy["cards"] == original["cards"]
    assert {s["id"] for s in copy["sessions"]} == {s["id"] for s in original["sessions"]}


def test_import_merges_two_machines(tmp_path):
    with ProgressStore.open(tmp_path / "laptop") as laptop:
        laptop.record_attempt(problem_id="a/1", family="a", topic="t", type="nat", correct=True, now=T0)
        laptop_export = laptop.export()
    with ProgressStore.open(tmp_path / "desktop") as desktop:
        desktop.record_attempt(problem_id="a/2", family="a", topic="t", type="nat", correct=False,
                               now=T0 + timedelta(hours=1))
        desktop.import_(laptop_export)
        assert desktop.count_attempts() == 2
        card = desktop.cards()[("family", "a")]
        assert card.reps == 2 and card.last_review == T0 + timedelta(hours=1)  # replayed in time order


@pytest.mark.parametrize("text,message", [
    ("{not json", "not a JSON export"),
    ('{"format": "something-else"}', "not a qkv history export"),
    ('{"format": "qkv-history", "version": 99}', "newer than this qkv reads"),
    ('{"format": "qkv-history", "version": 1, "attempts": [{"uid": "u"}]}', "attempt 1: time is missing"),
    ('{"format": "qkv-history", "version": 1, "attempts": [{"uid": "u", "time": "yesterday", "problem_id": "p"}]}',
     "not an ISO date-time"),
    ("name,score\nx,1\n", "not a qkv history CSV"),
    ("[1, 2]", "not a qkv history export"),  # JSON, though not an object: not read as CSV
])
def test_import_rejects_bad_files_with_one_line(store, text, message):
    with pytest.raises(ProgressError) as err:
        store.import_(text)
    assert message in err.value.format_message() and "\n" not in err.value.format_message()
    assert store.count_attempts() == 0


# -- data directory ------------------------------------------------------------------------------

def test_data_dir_precedence(tmp_path, monkeypatch):
    from drills.progress.paths import data_dir, default_data_dir

    monkeypatch.setenv("QKV_HOME", str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env" and (tmp_path / "env").is_dir()
    assert data_dir(tmp_path / "option") == tmp_path / "option"
    monkeypatch.delenv("QKV_HOME")
    assert data_dir(create=False) == default_data_dir()
    assert default_data_dir().name == "qkv"


def test_unusable_data_dir_is_one_line(tmp_path):
    from drills.output import InputError
    from drills.progress.paths import data_dir

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot create the data directory"):
        data_dir(blocker / "sub")


def test_seeds_seen(store):
    store.record_attempt(problem_id="a/3", family="a", seed=3, correct=True, now=T0)
    store.record_attempt(problem_id="a/8", family="a", seed=8, correct=False, now=T0)
    store.record_attempt(problem_id="b/1", family="b", seed=1, correct=False, now=T0)
    assert store.seeds_seen("a") == {3, 8} and store.seeds_seen("zzz") == set()
