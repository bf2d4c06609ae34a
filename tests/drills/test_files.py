"""``-o`` writes only to a regular file or a new name; ``--config`` and ``--from`` read with a cap
(issue 28). Through the real command line: the one-line refusal, exit status 2, and what was at
the path left exactly as it was."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.timing import assert_within, reference_seconds

REPO = Path(__file__).resolve().parents[2]


def qkv(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, QKV_HOME=str(home or cwd / "home"), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, env=env, cwd=cwd,
                          timeout=120)


def _one_error(out: subprocess.CompletedProcess[bytes]) -> str:
    assert out.returncode == 2, out.stderr
    [line] = out.stderr.decode().splitlines()
    assert line.startswith("qkv: error: ")
    return line


def _targets(tmp: Path) -> dict[str, Path]:
    """A FIFO, a link to a file, a link to a device, a link to a missing file, a folder."""
    kept = tmp / "kept.txt"
    kept.write_text("keep me")
    os.mkfifo(tmp / "fifo.json")
    (tmp / "link.json").symlink_to(kept)
    (tmp / "devlink.json").symlink_to("/dev/null")
    (tmp / "dangling.json").symlink_to(tmp / "nowhere.json")
    (tmp / "folder.json").mkdir()
    return {"fifo": tmp / "fifo.json", "link": tmp / "link.json", "devlink": tmp / "devlink.json",
            "dangling": tmp / "dangling.json", "folder": tmp / "folder.json"}


KINDS = {"fifo": "a FIFO (named pipe)", "link": "a symbolic link", "devlink": "a symbolic link",
         "dangling": "a symbolic link", "folder": "a folder"}


@pytest.mark.parametrize("command", [["history", "export", "-o"], ["sheet", "-n", "1", "--format", "json", "-o"]])
def test_o_refuses_what_is_not_a_regular_file_and_leaves_it(tmp_path, command):
    targets = _targets(tmp_path)
    for name, path in targets.items():
        before = os.lstat(path)
        line = _one_error(qkv(*command, str(path), cwd=tmp_path))
        assert (f"is {KINDS[name]}; qkv writes only to a regular file or a new name" in line
                or name == "folder" and "is a directory" in line), line
        after = os.lstat(path)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert (tmp_path / "kept.txt").read_text() == "keep me"
    assert not (tmp_path / "nowhere.json").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_o_refuses_a_device_node(tmp_path):
    line = _one_error(qkv("history", "export", "-o", "/dev/null", cwd=tmp_path))
    assert "'/dev/null' is a character device" in line
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_o_dash_writes_to_standard_output(tmp_path):
    out = qkv("history", "export", "-o", "-", cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["format"] == "qkv-history"
    out = qkv("sheet", "-n", "1", "--format", "json", "-o", "-", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["questions"]) == 1
    assert "give --format" in _one_error(qkv("sheet", "-n", "1", "-o", "-", cwd=tmp_path))


def test_a_link_planted_at_a_temporary_name_is_never_followed(tmp_path):
    """The old predictable ``.NAME.tmp`` followed a link there; temporary names are now random and
    created exclusively, so a planted link and its target stay as they were."""
    victim = tmp_path / "victim"
    (tmp_path / ".sheet.json.tmp").symlink_to(victim)
    (tmp_path / ".out.json.tmp").symlink_to(victim)
    assert qkv("sheet", "-n", "1", "-o", "sheet.json", cwd=tmp_path).returncode == 0
    assert qkv("history", "export", "-o", "out.json", cwd=tmp_path).returncode == 0
    assert not victim.exists()
    assert (tmp_path / ".sheet.json.tmp").is_symlink()
    assert json.loads((tmp_path / "sheet.json").read_text())["questions"]
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o666 & ~_umask()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_o_replaces_a_regular_file(tmp_path):
    (tmp_path / "old.json").write_text("old")
    assert qkv("history", "export", "-o", "old.json", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "old.json").read_text())["format"] == "qkv-history"


# -- reads with a cap ----------------------------------------------------------------------------

def test_config_and_from_refuse_a_link_to_dev_zero_at_once(tmp_path):
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    t0 = time.monotonic()
    line = _one_error(qkv("solve", "params", "--config", "zero.json", cwd=tmp_path))
    assert "--config: cannot read zero.json: not a regular file" in line
    line = _one_error(qkv("sheet", "--from", "zero.json", "-o", "s.md", cwd=tmp_path))
    assert "'zero.json' is a character device, not a regular file" in line
    assert_within(time.monotonic() - t0, 2 * reference_seconds("import drills.cli"), 6, "two refusals")
    assert not (tmp_path / "s.md").exists()


def test_config_and_from_refuse_a_large_file_before_reading_it(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: 1 GiB of size, no disk, no time
        f.truncate(2**30)
    t0 = time.monotonic()
    line = _one_error(qkv("solve", "params", "--config", "big.json", cwd=tmp_path))
    assert "1,073,741,824 bytes, more than the 4 MiB a config.json may hold" in line
    line = _one_error(qkv("sheet", "--from", "big.json", "-o", "s.md", cwd=tmp_path))
    assert "is 1024 MiB, larger than the 16 MiB this option reads" in line
    assert_within(time.monotonic() - t0, 2 * reference_seconds("import drills.cli"), 6, "two refusals before reading")


def test_from_refuses_more_questions_than_a_sheet_holds(tmp_path):
    """A 600-question sheet is refused by the same limit as -n (500), before any rendering (a 5,000-question
    one is refused sooner, by the 16 MiB read cap)."""
    one = qkv("sheet", "-n", "1", "--format", "json", "-o", "-", cwd=tmp_path)
    sheet = json.loads(one.stdout)
    q = sheet["questions"][0]
    sheet["questions"] = [dict(q, number=i + 1, problem=dict(q["problem"], id=f"{q['problem']['id']}-{i}"))
                          for i in range(600)]
    (tmp_path / "many.json").write_text(json.dumps(sheet))
    t0 = time.monotonic()
    line = _one_error(qkv("sheet", "--from", "many.json", "-o", "s.pdf", cwd=tmp_path))
    assert "many.json: holds 600 questions; a sheet holds at most 500 (as -n)" in line, line
    assert_within(time.monotonic() - t0, reference_seconds("import drills.cli"), 20, "refused before any rendering")
    assert not (tmp_path / "s.pdf").exists()
