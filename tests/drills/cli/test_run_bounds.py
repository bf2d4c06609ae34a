"""Work without a bound, refused or stopped (issue 28): ``measure`` estimates its time and refuses
what would pass its budget; the memory guard respects a cgroup limit and ``ulimit -v``;
``models verify`` refuses sizes torch cannot describe even on the meta device; a bad
``--config`` value is one line naming the key. Through the real command line, with the time
each refusal took."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drills.output import InputError
from tests.child_signals import default_signals
from tests.timing import assert_within, reference_seconds

REPO = Path(__file__).resolve().parents[3]


def qkv(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


def _one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    [line] = out.stderr.splitlines()
    assert line.startswith("qkv: error: ") and "internal error" not in line
    return line


def test_measure_refuses_repeats_that_would_pass_its_budget():
    """One run of the default matmul, timed, then refused: 10,003 of them would pass 60 s."""
    t0 = time.monotonic()
    line = _one_line(qkv("measure", "matmul", "--repeats", "10000", "--peak-flops", "1e9", "--bandwidth", "1e9"))
    assert "more than the 60 s a measurement may take; lower --repeats or the sizes" in line
    assert_within(time.monotonic() - t0, reference_seconds(), 8, "refused after one run")


@pytest.mark.slow
def test_measure_refuses_a_huge_batch_before_its_runs():
    """-B 400000 (the trial ran past two minutes): refused from the peak measured here before any
    run, or (a machine fast enough that 2 × its measured peak allows it) after the first run."""
    t0 = time.monotonic()
    line = _one_line(qkv("measure", "matmul", "-B", "400000", "--repeats", "10"))
    assert "one run takes " in line and "more than the 60 s a measurement may take" in line
    assert_within(time.monotonic() - t0, reference_seconds(), 20, "refused before or after the first run")


def test_the_advance_estimate_uses_the_measured_peak_or_a_ceiling_no_device_passes():
    from drills.cli import hw

    flops = 2 * 400_000 * 1024 * 1024  # -B 400000 at the default sizes: 8.4e11
    measured = {"peak_origin": "measured: 1024×1024 @ 1024×1024 matmul", "peak_flops": 1e10}
    with pytest.raises(InputError, match="one run takes at least 41.9 s"):
        hw.check_time(flops, measured, 13)  # at 2 × 1e10 FLOP/s: 41.9 s a run
    hw.check_time(flops, dict(measured, peak_flops=1e12), 13)  # at 2e12: 0.4 s a run, 5.5 s in all
    given = {"peak_origin": "given", "peak_flops": 1.0}  # a figure to compare with: no bound on speed
    hw.check_time(flops, given, 13)  # at 1 PFLOP/s
    with pytest.raises(InputError, match="one run takes at least 100 s"):
        hw.check_time(1e17, given, 1)


class Clock:
    """A clock that moves only when the work says so: ``hw.time`` in these tests, so that what they
    check (runs done, rounds left out) is counted, not raced against a busy machine (issue 40)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def perf_counter(self) -> float:
        return self.t

    def run(self, seconds: float):
        def fn():
            self.t += seconds
        return fn


def test_time_op_refuses_after_one_slow_run_and_stops_at_twice_the_budget(monkeypatch):
    from drills.cli import hw

    clock = Clock()
    monkeypatch.setattr(hw, "time", clock)
    calls = []
    step = clock.run(0.02)
    with pytest.raises(InputError, match="one run takes about"):
        hw.time_op(lambda: (calls.append(1), step()), "cpu", warmup=0, repeats=10_000)
    assert len(calls) == 1  # refused after the first run, not after 10,000
    monkeypatch.setattr(hw, "MEASURE_BUDGET_S", 0.05)
    runs = []

    def slower():  # the first run takes no time (the estimate passes), then 30 ms each: a busy machine
        runs.append(1)
        if len(runs) > 1:
            clock.t += 0.03

    result = hw.time_op(slower, "cpu", warmup=0, repeats=1000)
    assert result["repeats"] == 5  # 0, then 30 ms runs until past 2 × 0.05 s (at 0.12 s), the runs done kept
    assert len(runs) == 5


def test_memory_guard_respects_a_cgroup_limit(tmp_path, monkeypatch):
    from solver.models import guard

    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v2 = [ln for ln in lines if ln.startswith("0::")]
    if not v2:
        pytest.skip("no cgroup v2 line for this process")
    folder = tmp_path.joinpath(*[p for p in v2[0].split(":", 2)[2].strip("/").split("/") if p])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.max").write_text(str(3 * 2**30) + "\n")
    (folder / "memory.current").write_text(str(2**30) + "\n")
    assert guard._cgroup_free(str(tmp_path)) == 2 * 2**30
    (folder / "memory.max").write_text("max\n")
    assert guard._cgroup_free(str(tmp_path)) is None


def test_memory_guard_respects_ulimit_v():
    code = ("import resource; soft = 3 * 2**30; resource.setrlimit(resource.RLIMIT_AS, (soft, resource.RLIM_INFINITY));"
            "from solver.models.guard import available_bytes; print(available_bytes('cpu'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    assert 0 < int(out.stdout) < 3 * 2**30


def test_measure_under_ulimit_v_is_refused_in_one_line():
    """``-B`` sized to fit MemAvailable but not the address space ``ulimit -v`` leaves."""
    code = ("import resource, sys, runpy; resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY));"
            "sys.argv = ['qkv', 'measure', 'matmul', '-B', '300000', '-D', '2048', '-F', '1', '--peak-flops', '1e15',"
            " '--bandwidth', '1e12']; runpy.run_module('drills', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    line = _one_line(out)
    assert "refusing to run" in line and "free; use smaller sizes" in line


def test_verify_on_meta_refuses_sizes_torch_cannot_describe():
    t0 = time.monotonic()
    line = _one_line(qkv("models", "verify", "llama2-7b", "--device", "meta", "--batch", "1000000000",
                         "--seq", "1000000000000"))
    assert "beyond what torch can describe even on the meta device" in line
    assert_within(time.monotonic() - t0, reference_seconds(), 12, "refused on the meta device")


BASE = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 32,
        "rms_norm_eps": 1e-6}


@pytest.mark.parametrize("key, value", [
    ("rms_norm_eps", "x"), ("rms_norm_eps", [1]), ("head_dim", "16"), ("num_key_value_heads", {"a": 1}),
    ("hidden_size", float("inf")), ("intermediate_size", 1e300),
])
def test_a_bad_config_value_is_one_line_naming_the_key(tmp_path, key, value):
    """Text, a list, an object, infinity or a decimal beyond 2**53 where a count goes: one line that
    names the key (the reader's typed check, issue 20) and shows the value."""
    (tmp_path / "config.json").write_text(json.dumps({**BASE, key: value}))
    line = _one_line(qkv("solve", "params", "--config", "config.json", cwd=tmp_path))
    assert line.startswith("qkv: error: --config:") and f" {key} " in line, line


def test_verify_over_the_zoo_refuses_indescribable_sizes_up_front():
    """No model given: the bound of every model is checked before any is built, and the whole
    command is one line (before: the models whose position table clips the sequence were built
    and verified, the others listed as not built, exit 0 after 8 to 60 s)."""
    import re

    from solver.counting.presets import preset_names

    t0 = time.monotonic()
    line = _one_line(qkv("models", "verify", "--device", "meta", "--batch", "1000000000", "--seq", "1000000000000"))
    assert_within(time.monotonic() - t0, reference_seconds(), 5, "refused before any model is built")
    m = re.search(r"(\d+) of (\d+) models are beyond what torch can describe even on the meta device", line)
    assert m and 1 <= int(m[1]) < int(m[2]) == len(preset_names()), line
    seq = int(re.search(r"every model takes --seq up to ([\d,]+)$", line)[1].replace(",", ""))
    assert 2 <= seq < 10**12
    # every model at that --seq: describable (the edge itself is tests/solver/models/test_verify_describable.py)
    from solver.counting.presets import get_config
    from solver.models.verify import beyond_describable

    assert not any(beyond_describable(get_config(n), 10**9, seq) for n in preset_names())
    assert any(beyond_describable(get_config(n), 10**9, seq + 1) for n in preset_names())


@pytest.mark.parametrize("args", [
    ("--device", "cpu", "--batch", "1000000000", "--seq", "1000000000000"),
    ("--batch", str(10**400)),
    ("--seq", str(10**4000), "gpt2", "llama3-8b"),
    ("--batch", str(10**20), "--seq", "2"),
])
def test_verify_with_huge_flags_answers_in_one_line_at_once(args):
    t0 = time.monotonic()
    line = _one_line(qkv("models", "verify", *args))
    assert "beyond what torch can describe even on the meta device" in line and len(line) < 600
    assert_within(time.monotonic() - t0, reference_seconds(), 5, "refused before any model is built")


def test_measure_refuses_a_calibration_that_would_pass_its_budget_before_it_starts():
    """A 12000² calibration matmul, 3 rounds × 100 runs (3.5e12 FLOPs a run): refused from a probe of a
    few milliseconds, before the calibration's tensors exist. Before, nothing bounded the
    calibration's first run (one such run: about 3 minutes at the 18 GFLOP/s a 1024² matmul reached
    on the loaded 2-core machine; --peak-size 8000 --repeats 1 ran all 3 rounds, 41 s), and its
    rounds could take 60 s each (--repeats 1000: refused after 70 s)."""
    t0 = time.monotonic()
    line = _one_line(qkv("measure", "matmul", "--peak-size", "12000", "--repeats", "100", "--warmup", "0"))
    took = time.monotonic() - t0
    assert "the calibration (3 rounds × 100 runs of a 12000×12000 matmul and a copy of 67,108,864 bytes) " \
           "would take at least " in line and "more than the 60 s it may take" in line, line
    assert_within(took, reference_seconds(), 6, "the start-up, torch's import and a probe")


def test_the_calibration_estimate_scales_with_the_work():
    """The probe's estimate grows with the work: a 1024² matmul is estimated from the same 512² probe
    as a 512² one, 8 × the FLOPs (the ratio within the probe's noise on a shared machine); no work,
    no time."""
    import torch

    from drills.cli import hw

    m512, c = hw.calibration_per_run("cpu", torch.float32, peak_size=512, copy_bytes=16 * 2**20)
    m1024, c4 = hw.calibration_per_run("cpu", torch.float32, peak_size=1024, copy_bytes=64 * 2**20)
    assert m512 > 0 and c > 0 and m1024 > 0 and c4 > 0
    assert 2 <= m1024 / m512 <= 32  # 8 × in FLOPs, the probe's noise on a shared machine either way
    assert hw.calibration_per_run("cpu", torch.float32, peak_size=0, copy_bytes=0) == (0.0, 0.0)


def test_the_calibration_rounds_share_one_deadline(monkeypatch):
    """Runs of 20 ms, 10 a round: a second round fits in 0.5 s, a third not (left out, the rounds
    done counted); a first round that cannot fit is refused after its first run. On a clock that
    the runs move (:class:`Clock`)."""
    from drills.cli import hw

    clock = Clock()
    monkeypatch.setattr(hw, "time", clock)
    done: list[int] = []
    t = hw.best_time(clock.run(0.02), "cpu", 0, 10, 3, deadline=clock.t + 0.5, done=done)
    assert t == pytest.approx(0.02) and done == [2]
    calls = []

    def too_slow(first, n):
        calls.append((first, n))
        return InputError("too slow")

    with pytest.raises(InputError, match="too slow"):
        hw.best_time(clock.run(0.02), "cpu", 0, 1000, 3, deadline=clock.t + 1.0, too_slow=too_slow)
    assert len(calls) == 1 and calls[0][1] == 1000 and calls[0][0] == pytest.approx(0.02)


def test_ctrl_c_in_measure_is_one_line_and_exit_130(monkeypatch):
    from click.testing import CliRunner

    from drills.cli import cli, hw

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(hw, "best_time", interrupted)
    r = CliRunner().invoke(cli, ["measure", "matmul", "-B", "8", "-D", "8", "-F", "8", "--peak-size", "64",
                                 "--copy-bytes", "4096"])
    assert r.exit_code == 130 and r.stdout == ""
    assert r.stderr.splitlines() == ["qkv: measure: stopped by Ctrl-C; nothing measured"]


@pytest.mark.slow
def test_a_real_sigint_during_the_calibration_stops_it_in_one_line():
    """SIGINT to the real process once its calibration has begun (it says so on stderr through a
    wrapper of best_time): one line, exit status 130 (the calibration's 3 × 60 runs not finished)."""
    import signal

    code = ("import sys\nimport drills.cli.hw as hw\norig = hw.best_time\n"
            "def marked(*a, **k):\n    print('CALIBRATING', file=sys.stderr, flush=True)\n    return orig(*a, **k)\n"
            "hw.best_time = marked\nsys.argv = ['qkv', 'measure', 'matmul', '--repeats', '60', '--peak-size', '1024']\n"
            "from drills.cli import main\nmain()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), preexec_fn=default_signals)
    try:
        assert p.stderr.readline().strip() == "CALIBRATING"
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and out == ""
    assert [ln for ln in err.splitlines() if ln != "CALIBRATING"] == ["qkv: measure: stopped by Ctrl-C; nothing measured"]
