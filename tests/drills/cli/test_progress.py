"""``qkv stats`` and ``qkv history`` through click's CliRunner on a temporary QKV_HOME."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from drills.cli import cli
from drills.cli.progress import bar, sparkline
from drills.progress import ProgressStore


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("QKV_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _base_time() -> datetime:
    """Now, or just before the local midnight when now is less than 11 minutes past it: the
    session's answers (10 to 5 minutes before this time) then fall on one local day, in the past."""
    now = datetime.now(UTC)
    local = now.astimezone()
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - timedelta(seconds=1)).astimezone(UTC) if local - midnight < timedelta(minutes=11) else now


def _answered_today() -> bool:
    """Whether :func:`_fill`'s answers fall on today's local date (not when the suite runs just
    after midnight: a CI run at 00:01 failed on 'answered today')."""
    return _base_time().astimezone().date() == datetime.now().astimezone().date()


def _fill(data_dir) -> None:
    now = _base_time()
    with ProgressStore.open(data_dir) as store:
        sid = store.start_session("quiz", now=now - timedelta(minutes=10))
        for i, (topic, correct) in enumerate([("attention", True), ("attention", False), ("attention", True),
                                              ("counting", True), ("counting", None)]):
            store.record_attempt(problem_id=f"{topic}.fam/{i}", family=f"{topic}.fam", seed=i, topic=topic,
                                 type="nat", answer=None if correct is None else "0.6", correct=correct,
                                 misconception="no_sqrt_dk_scaling" if correct is False else None,
                                 misconception_label="forgot to divide by √dₖ" if correct is False else None,
                                 time_ms=30_000, session_id=sid, now=now - timedelta(minutes=9 - i))
        store.end_session(sid, now=now)


def test_stats_empty(home):
    result = run("stats")
    assert result.exit_code == 0
    assert "No answers recorded yet" in result.output and "qkv quiz" in result.output


def test_stats_text(home):
    _fill(home)
    result = run("stats")
    assert result.exit_code == 0, result.output
    out = result.output
    # 4 answered (one skipped), 3 right: 75.0%; attention 2 of 3 = 66.7%, counting 1 of 1 = 100.0%
    assert "Answers: 4 (+1 skipped)   right: 3   accuracy: 75.0%" in out
    today = "answered today" if _answered_today() else "nothing yet today"  # the streak ends yesterday then
    assert f"Streak: 1 day (longest 1); {today}" in out
    attention = next(line for line in out.splitlines() if line.strip().startswith("attention"))
    assert "66.7%" in attention and "3" in attention
    counting = next(line for line in out.splitlines() if line.strip().startswith("counting"))
    assert "100.0%" in counting
    assert "1×  forgot to divide by √dₖ  (no_sqrt_dk_scaling; attention)" in out
    assert "Review:" in out and "of 2 items seen" in out
    assert "Accuracy by day" in out


def test_stats_json_and_data_dir_option(home, tmp_path):
    other = tmp_path / "other"
    _fill(other)
    empty = json.loads(run("stats", "--json").output)  # QKV_HOME: nothing there
    assert empty["totals"]["attempts"] == 0
    result = run("stats", "--json", "--days", "3", "--data-dir", str(other))
    doc = json.loads(result.output)
    assert result.output.count("\n") == 1  # one JSON object on one line
    assert doc["totals"] == {"scope": "all", "attempts": 5, "answered": 4, "correct": 3, "accuracy": 0.75}
    assert len(doc["daily"]) == 3
    assert doc["misconceptions"][0]["id"] == "no_sqrt_dk_scaling"
    assert doc["due"]["cards"] == 2
    assert doc["data_dir"] == str(other)


def test_history_export_import_round_trip(home, tmp_path):
    _fill(home)
    for fmt in ("json", "csv"):
        target = tmp_path / f"history.{fmt}"
        result = run("history", "export", "-o", str(target))
        assert result.exit_code == 0 and f"Wrote 5 answers to {target} ({fmt})" in result.output
        fresh = tmp_path / f"fresh-{fmt}"
        result = run("history", "import", str(target), "--data-dir", str(fresh))
        assert result.exit_code == 0, result.output
        assert result.output.startswith("Imported 5 answers")
        result = run("history", "import", str(target), "--data-dir", str(fresh), "--json")
        assert json.loads(result.output)["attempts"] == 0 and json.loads(result.output)["skipped"] == 5
        with ProgressStore.open(home) as a, ProgressStore.open(fresh) as b:
            assert b.attempts() == a.attempts()


def test_history_export_to_stdout_and_import_from_stdin(home, tmp_path):
    _fill(home)
    exported = run("history", "export", "--format", "json").output
    assert json.loads(exported)["format"] == "qkv-history"
    result = run("history", "import", "-", "--data-dir", str(tmp_path / "b"), input=exported)
    assert "Imported 5 answers" in result.output


def test_history_import_errors_are_one_line(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "elsewhere"}')
    for args in (["history", "import", str(bad)], ["history", "import", str(tmp_path / "missing.json")]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert result.output.count("\n") == 1 and result.output.startswith("qkv: error: ")
        assert "Traceback" not in result.output


def test_bar_and_sparkline():
    assert bar(0.5, 10) == "█████░░░░░"
    assert bar(1.0, 4) == "████" and bar(0.0, 4) == "░░░░"
    assert bar(1 / 16, 2) == "▏░"  # 1/16 of 2 cells is 1/8 of a cell: the one-eighth block
    assert bar(0.25, 2) == "▌░"  # half a cell
    assert bar(None, 3) == "·  "
    assert sparkline([0.0, 0.5, 1.0, None]) == "▁▅█·"


def test_recent_exams_show_marks_to_two_decimals(home):
    """A mock exam of four 1-mark MCQs: 3 right and one wrong (−1/3) give 3 − 1/3 = 2.6667
    → "2.67 / 4, 0.33 lost" (a whole number of marks stays whole); --json keeps the unrounded
    values."""
    _fill(home)  # the summary needs some answers before it lists exams
    now = datetime.now(UTC)
    with ProgressStore.open(home) as store:
        sid = store.start_session("exam", now=now - timedelta(minutes=30))
        store.end_session(sid, now=now, score=3 - 1 / 3, max_score=4, negative=1 / 3)
    out = run("stats").output
    line = next(ln for ln in out.splitlines() if " UTC  " in ln)
    assert line.endswith("UTC  2.67 / 4, 0.33 lost to negative marks"), line
    exam = json.loads(run("stats", "--json").output)["exams"][0]
    assert exam["score"] == 3 - 1 / 3 and exam["negative"] == 1 / 3 and exam["max_score"] == 4


def test_one_answer_is_counted_in_the_singular(home, tmp_path):
    """One answer exported or imported is "1 answer", not "1 answers" (and so for the sessions,
    reports and review cards an import counts, and the stats' items seen)."""
    now = datetime.now(UTC)
    with ProgressStore.open(home) as store:
        sid = store.start_session("quiz", now=now - timedelta(minutes=2))
        store.record_attempt(problem_id="attention.fam/0", family="attention.fam", seed=0, topic="attention",
                             type="nat", answer="0.6", correct=True, time_ms=30_000, session_id=sid,
                             now=now - timedelta(minutes=1))
        store.end_session(sid, now=now)
    target = tmp_path / "one.json"
    result = run("history", "export", "-o", str(target))
    assert result.exit_code == 0 and f"Wrote 1 answer to {target} (json)" in result.output, result.output
    result = run("history", "import", str(target), "--data-dir", str(tmp_path / "fresh"))
    assert result.output.startswith("Imported 1 answer, 1 session, 0 reports; rebuilt 1 review card."), result.output
    assert "(of 1 item seen)" in run("stats").output
