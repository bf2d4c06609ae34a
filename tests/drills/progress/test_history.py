"""``qkv history import`` under bad input: every field checked as export writes it, the whole
file or nothing, a bounded read; ``history export --format csv`` safe to open in a spreadsheet.

Properties: whatever file is imported, ``qkv stats`` can read the store afterwards, and the
store holds either the whole file or exactly what it held before."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from drills.cli import cli
from drills.cli.progress import render_stats
from drills.progress import ProgressError, ProgressStore
from drills.progress.history_format import MAX_IMPORT_BYTES
from tests.timing import assert_within, reference_seconds

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FAR_ZONES = (timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)), UTC)


def _attempt(i: int, **changes: Any) -> dict[str, Any]:
    """An answer exactly as ``history export`` writes one."""
    row = {"uid": f"u{i:04d}", "time": (T0 + timedelta(minutes=i)).isoformat(timespec="microseconds"),
           "session_id": "s1", "mode": "quiz", "problem_id": f"attention.f/{i}", "part": None,
           "family": "attention.f", "seed": i, "topic": "attention", "type": "nat", "answer": "0.6",
           "parsed": {"value": 0.6}, "correct": i % 2, "score": 1.0, "marks": 1.0, "negative": 0.0,
           "time_ms": 12000, "misconception": None, "misconception_label": None, "rating": 3, "extra": None}
    row.update(changes)
    return row


def _session(**changes: Any) -> dict[str, Any]:
    row = {"id": "s1", "mode": "exam", "started_at": T0.isoformat(), "ended_at": (T0 + timedelta(hours=1)).isoformat(),
           "args": {"n": 3}, "score": 2.67, "max_score": 5.0, "negative": 0.33, "summary": None}
    row.update(changes)
    return row


def _report(**changes: Any) -> dict[str, Any]:
    row = {"uid": "r1", "time": T0.isoformat(), "session_id": "s1", "problem_id": "attention.f/1",
           "family": "attention.f", "seed": 1, "answer": "0.6", "key": "0.5", "note": "?", "extra": None}
    row.update(changes)
    return row


def _doc(sessions=(), attempts=(), reports=(), **header: Any) -> str:
    doc = {"format": "qkv-history", "version": 1, "schema": 4, "exported_at": T0.isoformat(), **header,
           "sessions": list(sessions), "attempts": list(attempts), "cards": [], "reports": list(reports)}
    return json.dumps(doc)


def _import(home: Path, text: str | bytes):
    path = home.parent / "history.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    return CliRunner().invoke(cli, ["history", "import", str(path), "--data-dir", str(home)])


def _state(home: Path) -> str:
    with ProgressStore.open(home, read_only=True) as store:
        return store.export("json", now=T0)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    with ProgressStore.open(home) as store:
        store.record_attempt(problem_id="counting.g/1", family="counting.g", topic="counting", type="nat",
                             correct=True, now=T0 - timedelta(days=1))
    return home


BAD = [
    ("session score 'abc'", _doc([_session(score="abc")], [_attempt(1)]), "session 1: score must be a finite number"),
    ("time of year 1", _doc(attempts=[_attempt(1, time="0001-01-01T00:00:00+00:00")]),
     "attempt 1: time '0001-01-01T00:00:00+00:00' is outside the years 1970..2200"),
    ("time of year 9999", _doc(attempts=[_attempt(1, time="9999-12-31T23:59:59+00:00")]),
     "attempt 1: time '9999-12-31T23:59:59+00:00' is outside the years 1970..2200"),
    ("time without offset", _doc(attempts=[_attempt(1, time="2025-03-01T09:00:00")]), "has no UTC offset"),
    ("correct 5", _doc(attempts=[_attempt(1), _attempt(2, correct=5)]), "attempt 2: correct must be 0 or 1"),
    ("correct '1'", _doc(attempts=[_attempt(1, correct="1")]), "attempt 1: correct must be 0 or 1"),
    ("rating 7", _doc(attempts=[_attempt(1, rating=7)]), "attempt 1: rating must be 1, 2, 3 or 4"),
    ("mode", _doc(attempts=[_attempt(1, mode="hack")]), "attempt 1: mode must be one of quiz, exam, check"),
    ("negative time", _doc(attempts=[_attempt(1, time_ms=-5)]), "attempt 1: time_ms must be a whole number"),
    ("NaN score", _doc(attempts=[_attempt(1, score=float("nan"))]), "attempt 1: score must be a finite number"),
    ("seed text", _doc(attempts=[_attempt(1, seed="abc")]), "attempt 1: seed must be an integer"),
    ("uid number", _doc(attempts=[_attempt(1, uid=7)]), "attempt 1: uid must be text"),
    ("unknown field", _doc(attempts=[_attempt(1, owner="x")]), "attempt 1: unknown field 'owner'"),
    ("lone surrogate", _doc(attempts=[_attempt(1, answer="\ud800")]),
     "attempt 1: answer holds a character that is not valid Unicode"),
    ("report time", _doc(attempts=[_attempt(1)], reports=[_report(time="soon")]), "report 1: time 'soon'"),
    ("session end", _doc([_session(ended_at=5)]), "session 1: ended_at an ISO-8601"),
    ("records before format", '{"attempts": [], "format": "qkv-history", "version": 1}',
     "expected \"format\": \"qkv-history\" first"),
    ("deep nesting", '{"format": "qkv-history", "version": 1, "attempts": [' + "[" * 100_000 + "]" * 100_000 + "]}",
     "not a JSON export (nested too deeply)"),
    ("not UTF-8", b'{"format": "qkv-history", "version": 1, "attempts": [{"uid": "\xff"}]}', "is not UTF-8"),
    ("CSV correct 5", "uid,time,problem_id,correct\nu1,2025-03-01T09:00:00+00:00,p/1,5\n",
     "line 2: correct must be 0 or 1"),
    ("CSV unknown column", "uid,time,problem_id,owner\nu1,2025-03-01T09:00:00+00:00,p/1,x\n",
     "unknown column 'owner'"),
]


@pytest.mark.parametrize("case,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_record_refuses_the_whole_file_in_one_line(home, case, text, message):
    before = _state(home)
    result = _import(home, text)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("qkv: error: cannot import: ")
    assert message in result.output
    assert _state(home) == before  # nothing stored, not even the good records before the bad one
    assert CliRunner().invoke(cli, ["stats", "--data-dir", str(home)]).exit_code == 0


def test_a_bad_report_at_the_end_leaves_nothing_half_imported(home):
    """Attempts, sessions and cards come before reports in the file: all are rolled back."""
    text = _doc([_session()], [_attempt(i) for i in range(50)], [_report(), _report(uid="r2", seed="x")])
    before = _state(home)
    result = _import(home, text)
    assert result.exit_code == 2 and "report 2: seed must be an integer" in result.output
    assert _state(home) == before


def test_a_good_file_imports_whole(home):
    text = _doc([_session()], [_attempt(i) for i in range(20)], [_report()])
    result = _import(home, text)
    assert result.exit_code == 0, result.output
    with ProgressStore.open(home, read_only=True) as store:
        assert store.count_attempts() == 21
        assert store.session("s1")["score"] == 2.67
        assert store.cards()[("family", "attention.f")].reps == 20
        assert [r["uid"] for r in store.reports()] == ["r1"]
    assert (home / "reports.jsonl").read_text().count("\n") == 1


def test_csv_export_escapes_formulas_and_round_trips(home, tmp_path):
    answers = ["=HYPERLINK(\"http://x\")", "+1+2", "-3", "@SUM(A1)", "\tx", "\rx", "'quoted", "0.6"]
    with ProgressStore.open(home) as store:
        for i, a in enumerate(answers):
            store.record_attempt(problem_id=f"=p/{i}", family="f", topic="-topic", answer=a, correct=False,
                                 score=-0.33, now=T0 + timedelta(minutes=i))
        before = store.attempts()
    out = tmp_path / "h.csv"
    result = CliRunner().invoke(cli, ["history", "export", "-o", str(out), "--data-dir", str(home)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode("utf-8"), newline="")))
    for row in rows:  # no text cell a spreadsheet would run as a formula
        for column, cell in row.items():
            if column not in ("score", "marks", "negative", "correct", "time_ms", "rating", "seed"):
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (column, cell)
    assert {r["answer"] for r in rows} >= {"'=HYPERLINK(\"http://x\")", "'+1+2", "'-3", "''quoted", "0.6"}
    assert {r["score"] for r in rows if r["problem_id"].startswith("'=p")} == {"-0.33"}  # numbers stay numbers
    other = tmp_path / "other"
    assert CliRunner().invoke(cli, ["history", "import", str(out), "--data-dir", str(other)]).exit_code == 0
    with ProgressStore.open(other, read_only=True) as store:
        after = store.attempts()
    assert [(a["uid"], a["answer"], a["problem_id"], a["topic"], a["score"]) for a in after] == \
           [(a["uid"], a["answer"], a["problem_id"], a["topic"], a["score"]) for a in before]


# -- size: refused before it costs anything ------------------------------------------------------

# VmHWM, the peak RSS of this process's own memory (ru_maxrss would carry the parent's peak over
# fork + exec: a long test session's)
MEASURED = """
import sys
from drills.cli import main
try:
    main()
finally:
    peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print("maxrss_kib", peak, file=sys.stderr)
"""


def _measured(args: list[str], home: Path, stdin=None) -> tuple[subprocess.CompletedProcess[str], float, int]:
    env = dict(os.environ, QKV_HOME=str(home), PYTHONPATH=str(REPO))
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", MEASURED, *args], capture_output=True, text=True, env=env,
                         stdin=stdin, timeout=60)
    rss = int(out.stderr.rsplit("maxrss_kib", 1)[1].split()[0])
    return out, time.monotonic() - start, rss


def test_endless_input_is_cut_at_the_limit(home):
    with open("/dev/zero", "rb") as zero:
        out, seconds, rss_kib = _measured(["history", "import", "-"], home, stdin=zero)
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == ("qkv: error: cannot import: standard input is longer than the "
                                         f"{MAX_IMPORT_BYTES:,} bytes a history file may be (64 MiB); split it, "
                                         "or import its CSV in parts")
    assert_within(seconds, reference_seconds("import drills.cli"), 10, "cut at the limit")
    assert rss_kib < 250 * 1024  # the limit plus the interpreter; /dev/zero itself never ends


def test_an_oversized_file_is_refused_unread(home, tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(110 * 10**6)  # sparse: 110 MB that cost nothing to make
    out, seconds, rss_kib = _measured(["history", "import", str(big)], home)
    assert out.returncode == 2 and "is 110,000,000 bytes, more than the 67,108,864" in out.stderr
    assert rss_kib < 150 * 1024
    assert_within(seconds, reference_seconds("import drills.cli"), 5, "refused unread")


# -- property: stats can always read the store, and a file is imported whole or not at all -------

_NASTY = ["0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59+14:00", "2025-03-01T09:00:00", "abc", "", "exam",
          "1969-12-31T23:00:00-05:00", 5, -1, 2**64, 1e308, float("nan"), float("inf"), True, "\ud800", [1], {}]
_field_values = st.one_of(
    st.sampled_from(_NASTY), st.none(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_FIELDS = ["uid", "time", "mode", "correct", "score", "seed", "rating", "time_ms", "answer", "parsed",
           "id", "started_at", "ended_at", "max_score", "problem_id", "note"]


@st.composite
def history_files(draw) -> tuple[str, int]:
    """A JSON export of a few records, some with one field replaced by an arbitrary value."""
    n = draw(st.integers(1, 6))
    attempts = [_attempt(100 + i, session_id=draw(st.sampled_from(["s1", "s2", None]))) for i in range(n)]
    sessions = [_session()]
    reports = [_report()] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 2))):
        record = draw(st.sampled_from(attempts + sessions + reports))
        record[draw(st.sampled_from([f for f in _FIELDS if f in record]))] = draw(_field_values)
    return _doc(sessions, attempts, reports), n


@given(history_files(), st.sampled_from(["json", "csv"]))
@example((_doc(attempts=[_attempt(1, time="0001-01-01T00:00:00+00:00")]), 1), "json")
@example((_doc(attempts=[_attempt(1, correct=5)]), 1), "csv")
@example((_doc([_session(score="abc")], [_attempt(1)]), 1), "json")
def test_import_is_whole_or_nothing_and_stats_can_always_read(file, fmt):
    text, n = file
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        with ProgressStore.open(home) as store:
            store.record_attempt(problem_id="counting.g/1", family="counting.g", correct=True, now=T0)
            if fmt == "csv":  # the same answers through the CSV reader
                try:
                    attempts = json.loads(text)["attempts"]
                except ValueError:
                    return
                buf = io.StringIO()
                writer = csv.writer(buf, lineterminator="\n")
                columns = list(_attempt(0))
                writer.writerow(columns)
                for a in attempts:
                    writer.writerow(["" if a.get(k) is None else (json.dumps(a[k]) if k in ("parsed", "extra")
                                                                   else str(a[k])) for k in columns])
                text = buf.getvalue()
            before = store.export("json", now=T0)
            try:
                counts = store.import_(text)
            except ProgressError:
                assert store.export("json", now=T0) == before  # nothing at all
            else:
                assert counts["attempts"] + counts["skipped"] == n
                assert store.count_attempts() == 1 + counts["attempts"]
        with ProgressStore.open(home, read_only=True) as store:
            for tz in FAR_ZONES:
                render_stats(store.stats(now=T0, tz=tz))
            store.export("csv")
