"""``qkv solve collective|allreduce|tp|tp-matmul|pipeline|dp-comm|serve|generate|speculative|compute-optimal``
and the issue-11 changes to the hardware commands (decode --model, --link-bandwidth refused where unused).

Expected values are worked by hand from the stated figures (docstrings), not read from the solver."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from drills.cli import cli


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    if isinstance(res.exception, Exception) and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


def run_json(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    d = json.loads(out)
    assert set(d) == {"answer", "unit", "convention", "breakdown"}
    return d


def test_allreduce_one_gigabyte_on_eight_h100s():
    """2·7/8 · 10⁹ B / 450·10⁹ B/s = 3.888… ms; the same from --link, --link-bandwidth and --hw (900 GB/s per direction halved)."""
    for flags in (["--link", "nvlink4"], ["--link-bandwidth", "450GB/s"], ["--hw", "h100"]):
        d = run_json("solve", "allreduce", "--size", "1GB", "--ranks", "8", *flags)
        assert d["answer"] == pytest.approx(1.75 / 450) and d["unit"] == "s"
        assert d["breakdown"]["busbw"] == pytest.approx(450e9)
        assert "per direction" in d["convention"]["bandwidth"]
    code, out = run("solve", "allreduce", "--size", "1GB", "--ranks", "8", "--link", "nvlink4", "--explain")
    assert code == 0 and "2(n−1)/n·S" in out and "worked solution" in out


#: machine -> its link preset (both typed here from the datasheets' link names)
SAME_MACHINE = {"a100-40gb": "nvlink3", "a100-80gb": "nvlink3", "h100-sxm": "nvlink4", "h100-pcie": "nvlink-bridge-h100",
                "h200": "nvlink4", "b200": "nvlink5", "gb200": "nvlink5", "mi300x": "xgmi-mi300x",
                "tpu-v4": "ici-v4", "tpu-v5e": "ici-v5e", "tpu-v5p": "ici-v5p", "tpu-v6e": "ici-v6e"}


@pytest.mark.parametrize("hw", sorted(SAME_MACHINE))
def test_hw_and_link_of_the_same_machine_agree(hw):
    """Issue 25: --hw NAME and --link LINK of one machine give one answer (per direction everywhere)."""
    a = run_json("solve", "collective", "--size", "1GB", "--ranks", "8", "--hw", hw)
    b = run_json("solve", "collective", "--size", "1GB", "--ranks", "8", "--link", SAME_MACHINE[hw])
    assert a["answer"] == b["answer"] and a["breakdown"]["link_bandwidth"] == b["breakdown"]["link_bandwidth"]
    # both conventions state the figure used, per direction (--link printed only the bidirectional figure)
    per = f"{a['breakdown']['link_bandwidth'] / 1e9:g} GB/s per direction"
    assert per in a["convention"]["link"] and per in b["convention"]["link"], (a["convention"], b["convention"])


def test_tpu_v5e_ring_uses_one_port_each_way():
    """Issue 25: 1 GB all-reduce on 8 v5e chips: 400 GBps bidirectional per chip / 4 ports / 2 = 50 GB/s,
    2·7/8·10⁹ / 5·10¹⁰ = 35 ms (it was 8.75 ms from the whole-chip figure halved)."""
    for flags in (["--hw", "tpu-v5e"], ["--link", "ici-v5e"]):
        d = run_json("solve", "collective", "--size", "1GB", "--ranks", "8", *flags)
        assert d["answer"] == pytest.approx(0.035)


def test_collective_ops_and_latency():
    """All-gather of S = 8 MB on 4 ranks, β = 100 GB/s, α = 5 µs: 3·5 µs + 3/4·8·10⁶/10¹¹ s = 75 µs."""
    d = run_json("solve", "collective", "--op", "all-gather", "--size", "8MB", "--ranks", "4",
                 "--link-bandwidth", "100GB/s", "--latency", "5e-6")
    assert d["answer"] == pytest.approx(15e-6 + 60e-6)
    assert d["breakdown"]["busbw"] == pytest.approx(8e6 / 75e-6 * 3 / 4)


def test_collective_without_a_link_gives_the_bytes_and_says_the_time_needs_one():
    """All-reduce of 1 GB on 8 ranks: each rank sends 2·7/8·10⁹ = 1.75·10⁹ bytes; no time without β."""
    d = run_json("solve", "allreduce", "--size", "1GB", "--ranks", "8")
    assert d["answer"] == 1_750_000_000 and d["unit"] == "bytes" and "time_s" not in d["breakdown"]
    assert "link bandwidth" in d["convention"]["time"]
    code, out = run("solve", "allreduce", "--size", "1GB", "--ranks", "8", "--link", "nvlink9")
    assert code == 2 and "nvlink9" in out


def test_tp_and_tp_matmul():
    """b=1, s=2048, h=8192 bf16, t=8: 4 × 33,554,432 B = 134,217,728 B per layer per step.
    Row-parallel matmul on H100 (989.5e12) over NVLink 4: hidden when D ≥ 7·2·989.5e12/450e9 = 30,784.4."""
    d = run_json("solve", "tp", "-b", "1", "-s", "2048", "--d-model", "8192", "-t", "8", "--link", "nvlink4")
    assert d["answer"] == 134_217_728 and d["breakdown"]["time_s"] == pytest.approx(234_881_024 / 450e9)
    d = run_json("solve", "tp-matmul", "-B", "4096", "-D", "8192", "-F", "8192", "-t", "8", "--hw", "h100",
                 "--link", "nvlink4")
    assert d["breakdown"]["min_d_in"] == pytest.approx(7 * 2 * 989.5e12 / 450e9)
    assert d["breakdown"]["bound"] == "communication"


def test_pipeline():
    """p = 8, m = 32: 7/39 of the step; interleaved v = 2: 7/71."""
    assert run_json("solve", "pipeline", "-p", "8", "-m", "32")["answer"] == pytest.approx(7 / 39)
    assert run_json("solve", "pipeline", "-p", "8", "-m", "32", "--schedule", "interleaved", "-v", "2")["answer"] \
        == pytest.approx(7 / 71)


def test_dp_comm():
    """Ψ = 7.5B: 2Ψ = 1.5·10¹⁰ elements; ZeRO-3 3Ψ; over 64 GPUs in bf16 each sends 2·63/64·7.5e9·2 B."""
    d = run_json("solve", "dp-comm", "-N", "7.5B", "--gpus", "64", "--link", "ib-ndr")
    assert d["answer"] == 15 * 10**9 and d["breakdown"]["time_s"] == pytest.approx(2 * 63 / 64 * 7.5e9 * 2 / 50e9)
    assert run_json("solve", "dp-comm", "-N", "7.5B", "--gpus", "64", "--stage", "3")["answer"] == 22.5 * 10**9


def test_serve_names_its_hbm_figure():
    """Llama-2-70B shapes, 8 × H100: nvidia-smi's 81,559 MiB, or the datasheet's 80 GB (fewer sequences)."""
    args = ("solve", "serve", "-N", "70B", "--kv-bytes-per-token", "327680", "--context", "4096", "--hw", "h100",
            "--chips", "8")
    dev, sheet = run_json(*args, "--hbm-figure", "device"), run_json(*args)  # issue 20: datasheet by default, as chips
    assert dev["breakdown"]["max_batch"] == 405 and sheet["breakdown"]["max_batch"] == 372
    assert "device" in dev["convention"]["hbm"] and "datasheet" in sheet["convention"]["hbm"]
    code, out = run(*args, "--link-bandwidth", "450GB/s")
    assert code == 2 and "--link-bandwidth" in out


def test_generate_and_decode_models():
    d = run_json("solve", "generate", "-N", "7B", "-P", "100", "-n", "10", "--kv-bytes-per-token", "524288",
                 "--peak-flops", "1e15", "--bandwidth", "2e12")
    # prefill 2·7e9·100/1e15; 10 memory-bound steps of (14e9 + 524288·(100+i))/2e12
    steps = sum((14e9 + 524288 * (100 + i)) / 2e12 for i in range(10))
    assert d["answer"] == pytest.approx(1.4e12 / 1e15 + steps)
    base = ("solve", "decode", "-N", "7B", "-B", "8", "-S", "4096", "--kv-bytes-per-token", "524288",
            "--peak-flops", "1e15", "--bandwidth", "2e12")
    a, b = run_json(*base), run_json(*base, "--model", "kv-plus-max")
    kv, w, c = 8 * 4096 * 524288 / 2e12, 14e9 / 2e12, 2 * 7e9 * 8 / 1e15
    assert a["answer"] == pytest.approx(max(kv + w, c)) and b["answer"] == pytest.approx(kv + max(w, c))
    assert "scaling book" in b["convention"]["model"]


def test_speculative_and_compute_optimal():
    """α = 0.8, γ = 4: 3.3616 tokens; 10²⁴ FLOPs with the 20:1 rule: N = √(10²⁴/120) = 9.1287·10¹⁰."""
    assert run_json("solve", "speculative", "-a", "0.8", "-g", "4")["answer"] == pytest.approx(3.3616)
    d = run_json("solve", "compute-optimal", "-C", "1e24", "--method", "rule-20")
    assert d["answer"] == pytest.approx((1e24 / 120) ** 0.5) and "rule of thumb" in d["convention"]["method"]
    assert "fitted" in run_json("solve", "compute-optimal", "-C", "1e24")["convention"]["method"]
    o = run_json("solve", "compute-optimal", "-N", "8B", "-D", "15T")
    assert o["answer"] > 1
    code, out = run("solve", "speculative", "-a", "1.5", "-g", "4")
    assert code == 2 and "--alpha" in out


def test_link_bandwidth_refused_where_unused():
    for cmd in (["matmul", "-B", "8", "-D", "64", "-F", "64"], ["roofline"], ["prefill", "-N", "7B", "-T", "100"]):
        code, out = run("solve", *cmd, "--hw", "h100", "--link-bandwidth", "450GB/s")
        assert code == 2 and "--link-bandwidth" in out and "not used" in out, cmd


def test_matmul_critical_batch_agrees_with_bound():
    """The issue's case: bf16 activations, int8 weights, H100: batch 160 is below the exact B* and memory-bound."""
    d = run_json("solve", "matmul", "-B", "160", "-D", "4096", "-F", "4096", "--hw", "h100", "--weight-dtype", "int8")
    bd = d["breakdown"]
    assert bd["bound"] == "memory" and bd["critical_batch"] > 160 > bd["critical_batch_approx"]


def test_models_verify_default_jobs():
    """One process on up to two cores (a second one costs a torch import and loses on a busy machine), else cores − 1."""
    from drills.cli.models import auto_jobs

    assert [auto_jobs("meta", 33, c) for c in (1, 2, 3, 4, 8, 64)] == [1, 1, 2, 3, 4, 4]
    assert auto_jobs("cpu", 33, 16) == 1 and auto_jobs("meta", 3, 16) == 1


def test_hw_show_and_links():
    """hw show keeps the datasheet figure and adds the device's (81,559 MiB for the H100); hw links is per direction."""
    code, out = run("hw", "show", "h100")
    assert code == 0 and "(datasheet)" in out and "81,559 MiB" in out
    d = json.loads(run("hw", "show", "h100", "--json")[1])
    assert d["hbm_device_bytes"] == 81_559 * 2**20 and d["hbm_bytes"] == 80 * 10**9
    links = {k["name"]: k for k in json.loads(run("hw", "links", "--json")[1])["links"]}
    assert links["nvlink4"]["per_direction"] == 450e9 and links["nvlink4"]["bidirectional"] == 900e9


def test_chips_and_zero_name_their_hbm_figure():
    """chips --hbm-figure device uses nvidia-smi's 85,520,809,984 B; zero --hw says which figure it took."""
    d = run_json("solve", "chips", "-N", "70B", "--hw", "h100", "--hbm-figure", "device")
    assert d["breakdown"]["hbm_bytes"] == 85_520_809_984 and "device figure" in d["convention"]["hbm"]
    assert "datasheet figure" in run_json("solve", "chips", "-N", "70B", "--hw", "h100")["convention"]["hbm"]
    z = run_json("solve", "zero", "-N", "7.5B", "--gpus", "64", "--stage", "3", "--hw", "h100")
    assert "datasheet figure" in z["convention"]["hbm"]


def test_activations_tp_and_mfu():
    """s=2048, b=1, h=12288, a=96, t=8 with sequence parallelism and selective recompute: 34·s·b·h/8 bytes.
    MFU of 175B at 1,000 tokens/s on 8 × 312 TFLOP/s: 6·175e9·1000/(8·312e12); full recompute: HFU = 8/6 of it."""
    d = run_json("solve", "activations", "-s", "2048", "-b", "1", "--d-model", "12288", "-a", "96", "--tp", "8",
                 "--sequence-parallel", "--recompute", "selective")
    assert d["answer"] == 34 * 2048 * 12288 // 8
    m = run_json("solve", "mfu", "-N", "175B", "--tokens-per-second", "1000", "--chips", "8", "--peak-flops", "312e12",
                 "--recompute", "full")
    assert m["answer"] == pytest.approx(6 * 175e9 * 1000 / (8 * 312e12))
    assert m["breakdown"]["hfu"] == pytest.approx(m["answer"] * 8 / 6)
