"""Issue 42, moderate: an escape sequence in a ``--from`` problem id never reaches stderr; ``solve
t5-buckets --config`` refuses a config that is not T5's instead of using T5's defaults silently.
Through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x1bP+q\x1b\\"


def qkv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QKV_HOME=str(cwd / "home"))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_an_escape_sequence_in_a_from_id_never_reaches_the_terminal(tmp_path):
    made = qkv("sheet", "-n", "2", "--type", "mcq", "--seed", "1", "--format", "json", "-o", "s.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    sheet = json.loads((tmp_path / "s.json").read_text())
    sheet["questions"][0]["problem"]["id"] = "mine" + ESCAPES
    sheet["questions"][0]["problem"]["key_source"] = "teacher"
    (tmp_path / "h.json").write_text(json.dumps(sheet))
    ok = qkv("sheet", "--from", "h.json", "--format", "md", "-o", "h.md", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "key set by the teacher" in ok.stderr  # the line naming the id is there, without its escapes
    sheet["questions"][0]["problem"]["marks"] = "x" + ESCAPES  # an error line quoting what the file holds
    (tmp_path / "bad.json").write_text(json.dumps(sheet))
    bad = qkv("sheet", "--from", "bad.json", "--format", "md", "-o", "b.md", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    for out in (ok, bad):
        assert not any(c in out.stderr for c in "\x1b\x07\x9b"), repr(out.stderr)


@pytest.mark.parametrize("config", [{"model_type": "llama", "num_attention_heads": 32}, {"model_type": "bert"},
                                    {"num_heads": 8}, {"model_type": "t5\x1b[2J"}])
def test_t5_buckets_refuses_a_config_that_is_not_t5s(tmp_path, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = qkv("solve", "t5-buckets", "-r", "-20", "--config", "config.json", cwd=tmp_path)
    assert out.returncode == 2, out.stdout
    [line] = out.stderr.splitlines()
    assert line.startswith("qkv: error: --config: not a T5 config: model_type ") and "\x1b" not in line


@pytest.mark.parametrize("config", [{"model_type": "t5", "num_heads": 8}, {"model_type": "mt5"},
                                    {"relative_attention_num_buckets": 32, "model_type": "custom"}])
def test_t5_buckets_reads_t5s_configs(tmp_path, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = qkv("solve", "t5-buckets", "-r", "-20", "--config", "config.json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "answer: 10" in out.stdout
