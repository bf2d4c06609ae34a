"""The bound ``qkv models verify`` checks for every model before building any (issue 28):
:func:`solver.models.verify.beyond_describable` and the largest size it allows,
:func:`solver.models.verify.largest_describable`, against torch itself on the meta device."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.counting.presets import get_config, preset_names
from solver.models.guard import DESCRIBABLE_BYTES, run_bytes
from solver.models.verify import beyond_describable, default_seq, largest_describable

torch = pytest.importorskip("torch")


@given(name=st.sampled_from(preset_names()), batch=st.integers(1, 10**12), seq=st.integers(2, 10**13),
       vary=st.sampled_from(["seq", "batch"]))
def test_largest_describable_is_the_edge(name, batch, seq, vary):
    """At the size returned every part of the run stays below 2^63 bytes (the direct sum of
    run_bytes, not the bisection); one more, where there is one, passes it."""
    cfg = get_config(name)
    n = largest_describable([cfg], batch, seq, vary)
    at = (lambda m: (batch, m)) if vary == "seq" else (lambda m: (m, seq))
    if n is None:
        b, s = at(2 if vary == "seq" else 1)
        assert max(v for k, v in run_bytes(cfg, b, default_seq(cfg, s), 4).items() if k != "total") >= DESCRIBABLE_BYTES
        return
    b, s = at(n)
    assert all(v < DESCRIBABLE_BYTES for k, v in run_bytes(cfg, b, default_seq(cfg, s), 4).items() if k != "total")
    if n < (seq if vary == "seq" else batch):
        b, s = at(n + 1)
        assert beyond_describable(cfg, b, s)


def test_the_bound_is_where_torch_itself_stops_on_meta():
    """The scores of one layer, (B, h, T, T) in fp32, are the largest tensor of llama2-7b at batch 1:
    torch describes them just below the bound and refuses them above it (independent of run_bytes)."""
    cfg = get_config("llama2-7b")
    seq = largest_describable([cfg], 1, 10**12, "seq")
    h = cfg.n_heads
    # run_bytes counts scores and softmax together (2 tensors): one tensor is half of it
    torch.empty((1, h, seq, seq), dtype=torch.float32, device="meta")
    assert 2 * h * seq * seq * 4 < DESCRIBABLE_BYTES <= 2 * h * (seq + 1) ** 2 * 4
    with pytest.raises(RuntimeError):  # 2^63 bytes and more: "Storage size calculation overflowed"
        torch.empty((1, h, 4 * seq, 4 * seq), dtype=torch.float32, device="meta")


def test_verify_on_cpu_refuses_a_run_that_would_pass_its_time_budget(monkeypatch):
    """gpt2 at batch 8 × seq 1024 on the cpu: memory allows it, the FLOPs do not (at 1e9 FLOP/s:
    thousands of seconds); refused in one line before the model is built. The FLOPs named are
    three forward passes plus 3/12 of a train step (12 layers, trained on 1- and 2-layer slices)."""
    from click.testing import CliRunner

    import solver.counting as counts
    import solver.models.guard as guard
    from drills.cli import cli

    monkeypatch.setattr(guard, "available_bytes", lambda device: 10**15)
    monkeypatch.setattr(guard, "_SPEED", {"cpu": 0.5e9})
    built = []
    monkeypatch.setattr("solver.models.build_model", lambda *a, **k: built.append(a))
    cfg = get_config("gpt2")
    forward = counts.matmul_flops(cfg, batch=8, seq=1024, mode="forward").total
    train = counts.matmul_flops(cfg, batch=8, seq=1024, mode="train").total
    flops = 3 * forward + train * 3 // 12
    r = CliRunner().invoke(cli, ["models", "verify", "gpt2", "--device", "cpu", "--batch", "8", "--seq", "1024"])
    assert r.exit_code == 2 and not built
    assert r.stderr.splitlines() == [
        f"qkv: error: refusing to run gpt2 at batch 8 × seq 1024 on cpu: its ~{float(flops):.3g} matmul FLOPs would "
        f"take at least ~{flops / 1e9:.3g} s here (at 2 × the 5e+08 FLOP/s of a probe matmul), more than the 120 s a "
        "model may take; use smaller sizes, or --device meta (counts without running)"]


def test_the_time_bound_passes_what_fits_and_ignores_meta(monkeypatch):
    import solver.models.guard as guard

    monkeypatch.setattr(guard, "_SPEED", {"cpu": 1e9})
    assert guard.check_run_time(2e11, "cpu", "x") == pytest.approx(100.0)  # at 2 × 1e9 FLOP/s
    assert guard.check_run_time(10**30, "meta", "x") == 0.0
    assert guard.matmul_speed("cpu") == 1e9  # measured once per process and device
