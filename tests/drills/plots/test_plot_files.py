"""``--plot FILE`` writes as ``-o`` does (issue 42): through a temporary file beside the target and a
rename; a symbolic link (to a file, to a device, dangling), a FIFO or a folder is refused in one line
with exit status 2 and left exactly as it was; a disk that fills while the picture is written leaves
the file already there byte for byte, and no temporary file behind. Every plotting command."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from drills.cli import cli

pytest.importorskip("matplotlib")

from tests.drills.plots.test_plots import PICTURES  # noqa: E402 - after the skip


def _targets(tmp: Path) -> tuple[Path, dict[str, Path]]:
    kept = tmp / "kept.png"
    kept.write_bytes(b"keep me")
    os.mkfifo(tmp / "fifo.png")
    (tmp / "link.png").symlink_to(kept)
    (tmp / "devlink.svg").symlink_to("/dev/null")
    (tmp / "dangling.png").symlink_to(tmp / "nowhere.png")
    (tmp / "folder.svg").mkdir()
    return kept, {"a FIFO (named pipe)": tmp / "fifo.png", "a symbolic link": tmp / "link.png",
                  "a symbolic link ": tmp / "devlink.svg", " a symbolic link": tmp / "dangling.png",
                  "a folder": tmp / "folder.svg"}


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_plot_refuses_links_devices_fifos_and_folders(tmp_path, name):
    args, _ = PICTURES[name]
    kept, targets = _targets(tmp_path)
    for kind, target in targets.items():
        res = CliRunner().invoke(cli, [*args, "--plot", str(target)])
        assert res.exit_code == 2, (kind, res.output)
        [line] = [x for x in res.output.splitlines() if x.startswith("qkv:")]
        assert f"is {kind.strip()}; qkv writes only to a regular file or a new name" in line, line
    assert kept.read_bytes() == b"keep me"
    assert not (tmp_path / "nowhere.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kept.png", *(t.name for t in targets.values())])


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_a_full_disk_leaves_the_old_picture_whole(tmp_path, monkeypatch, name):
    args, _ = PICTURES[name]
    old = tmp_path / "old.png"
    old.write_bytes(b"\x89PNG an earlier picture" * 500)
    before = old.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("drills.files.os.fsync", full)
    res = CliRunner().invoke(cli, [*args, "--plot", str(old)])
    assert res.exit_code == 2, res.output
    assert "No space left on device; nothing was written" in res.output
    assert old.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["old.png"]


def test_a_picture_replaces_a_regular_file(tmp_path):
    args, _ = PICTURES["roofline"]
    target = tmp_path / "r.png"
    target.write_bytes(b"old")
    res = CliRunner().invoke(cli, [*args, "--plot", str(target)])
    assert res.exit_code == 0, res.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert oct(target.stat().st_mode & 0o777) != oct(0o600) or os.umask(0o022) == 0o177


def test_a_pipeline_at_its_block_limit_is_drawn_with_a_few_artists(tmp_path):
    """20,000 blocks (p = 100, m = 200, its limit) drew one artist per block: minutes and 600 MB.
    The bars are drawn per stage, kind and shade: at most 4 collections a stage, and the file is written."""
    from drills.plots import STYLE, pipeline, pyplot
    from solver.systems.parallelism import pipeline_bubble
    from solver.systems.pipeline_schedule import pipeline_timeline

    plt = pyplot()
    d = pipeline.data(pipeline_timeline(100, 200, schedule="1f1b"), pipeline_bubble(100, 200, schedule="1f1b"))
    assert len(d["blocks"]) == 40_000
    with plt.rc_context(STYLE):
        fig = pipeline.figure(d, plt)
        try:
            ax = fig.axes[0]
            assert len(ax.collections) <= 4 * 100 and not ax.texts
            assert sum(len(c.get_paths()) for c in ax.collections) == 40_000  # every block is there
        finally:
            plt.close(fig)
    res = CliRunner().invoke(cli, ["solve", "pipeline", "-p", "100", "-m", "200", "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
