"""What a history shows and exports is safe whatever it holds (issue 28): control characters from
an imported history never reach the terminal, ``qkv quiz --json`` prints valid UTF-8 whatever
bytes were typed, CSV cells beginning with LF or NUL are escaped, a seed below −2^63 round-trips
through CSV, and a JSON integer of more than 4,300 digits is one line. Through the real command
line (a subprocess) where a terminal or bytes matter."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from drills.cli import cli
from drills.progress import ProgressStore

REPO = Path(__file__).resolve().parents[3]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m"  # an OSC title, a clear screen, a C1 CSI


def qkv(*args: str, home: Path, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, QKV_HOME=str(home), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, env=env, input=input,
                          timeout=120)


def _export_with(tmp: Path, **fields) -> Path:
    row = {"uid": "u1", "time": "2025-03-01T09:00:00+00:00", "mode": "quiz", "problem_id": "p/1", "correct": 0,
           **fields}
    path = tmp / "in.json"
    path.write_text(json.dumps({"format": "qkv-history", "version": 1, "attempts": [row]}))
    return path


def test_control_characters_are_stripped_on_import_and_never_printed(tmp_path):
    home = tmp_path / "home"
    src = _export_with(tmp_path, problem_id="p/" + HOSTILE, topic="attn" + HOSTILE, family="f" + HOSTILE,
                       answer="0.6" + HOSTILE, misconception_label="swap" + HOSTILE)
    assert qkv("history", "import", str(src), home=home).returncode == 0
    with ProgressStore.open(home, read_only=True) as store:
        [a] = store.attempts()
    for field in ("problem_id", "topic", "family", "answer", "misconception_label"):
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in a[field]), (field, a[field])
    assert a["topic"] == "attn]0;pwned[2J31m"  # the characters around the controls are kept
    out = qkv("stats", home=home)
    assert out.returncode == 0
    assert b"\x1b" not in out.stdout and b"\x07" not in out.stdout and "\x9b".encode() not in out.stdout


def test_stats_output_strips_controls_already_in_a_database(tmp_path):
    """A history written before import stripped them (or by another program) prints clean too."""
    home = tmp_path / "home"
    with ProgressStore.open(home) as store:
        store.record_attempt(problem_id="p/1", topic="t" + HOSTILE, answer="x", correct=False,
                             misconception="m", misconception_label="label" + HOSTILE, now=T0)
    out = qkv("stats", home=home)
    assert out.returncode == 0, out.stderr
    assert b"\x1b" not in out.stdout and b"\x07" not in out.stdout and "\x9b".encode() not in out.stdout


def test_quiz_json_lines_are_valid_utf8_whatever_was_typed(tmp_path):
    out = qkv("quiz", "--json", "-n", "1", "--seed", "1", home=tmp_path / "home", input=b"ab\xff\xfe\xc3cd\n")
    lines = out.stdout.split(b"\n")
    for line in lines:
        json.loads(line.decode("utf-8")) if line else None  # every line: UTF-8 and JSON
    [answer] = [json.loads(x) for x in lines if x and json.loads(x)["event"] == "answer"]
    assert answer["text"] == "ab\ufffd\ufffd\ufffdcd"
    # the refusal quotes what it read as U+FFFD, not a Python escape of the undecoded byte ('\\udcff')
    assert "\\udc" not in answer["message"] and "\ufffd" in answer["message"], answer["message"]


def test_csv_cells_beginning_with_lf_or_nul_are_escaped_and_round_trip(tmp_path):
    home = tmp_path / "home"
    answers = ["\nx", "\x00y", "=1+1"]
    with ProgressStore.open(home) as store:
        for i, a in enumerate(answers):
            store.record_attempt(problem_id=f"p/{i}", answer=a, correct=False, now=T0 + timedelta(minutes=i))
        store.record_attempt(problem_id="p/seed", seed=-(2**63) - 1, correct=True, now=T0 + timedelta(hours=1))
        store.record_attempt(problem_id="p/seed2", seed=-(2**70), correct=True, now=T0 + timedelta(hours=2))
    out = tmp_path / "h.csv"
    assert CliRunner().invoke(cli, ["history", "export", "-o", str(out), "--data-dir", str(home)]).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode("utf-8"), newline="")))
    cells = {r["problem_id"]: r for r in rows}
    assert cells["p/0"]["answer"] == "'\nx" and cells["p/1"]["answer"] == "'\x00y"
    other = tmp_path / "other"
    r = CliRunner().invoke(cli, ["history", "import", str(out), "--data-dir", str(other)])
    assert r.exit_code == 0, r.output
    with ProgressStore.open(other, read_only=True) as store:
        got = {a["problem_id"]: a for a in store.attempts()}
    assert int(got["p/seed"]["seed"]) == -(2**63) - 1 and int(got["p/seed2"]["seed"]) == -(2**70)
    assert got["p/2"]["answer"] == "=1+1"


def test_an_integer_of_more_than_4300_digits_is_one_line(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"format": "qkv-history", "version": 1, "attempts": [{"uid": "x", "seed": ' + "9" * 4400 + "}]}")
    out = qkv("history", "import", str(path), home=tmp_path / "home")
    assert out.returncode == 2
    [line] = out.stderr.decode().splitlines()
    assert line.startswith("qkv: error:") and "4300 digits" in line and "internal" not in line
    assert not (tmp_path / "home" / "progress.sqlite3").exists() or qkv(
        "stats", "--json", home=tmp_path / "home").returncode == 0
