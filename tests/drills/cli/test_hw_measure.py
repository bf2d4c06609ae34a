"""``qkv solve`` hardware commands, ``qkv hw``, ``qkv measure`` (CPU, tiny sizes; GPU when present)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from drills.cli import cli
from drills.cli.solve_hardware import parse_quantity
from drills.output import InputError


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    if isinstance(res.exception, Exception) and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


def run_json(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


@pytest.mark.parametrize("text, kind, value", [
    ("989e12", "flops", 989 * 10**12), ("989T", "flops", 989 * 10**12), ("989TFLOPS", "flops", 989 * 10**12),
    ("80GB", "bytes", 80 * 10**9), ("80GiB", "bytes", 80 * 2**30), ("80e9", "bytes", 80 * 10**9),
    ("3.35TB/s", "bandwidth", 3_350_000_000_000), ("3.35e12", "bandwidth", 3_350_000_000_000),
    ("819GB/s", "bandwidth", 819 * 10**9), ("70B", "count", 70 * 10**9), ("1.4T", "count", 1_400_000_000_000),
    ("7.5B", "count", 7_500_000_000), ("12", "count", 12),
])
def test_parse_quantity(text, kind, value):
    assert parse_quantity(text, kind, "--x") == value


@pytest.mark.parametrize("text, kind", [("80GB", "count"), ("3.35TB/s", "bytes"), ("abc", "flops"), ("1e999", "flops"),
                                        ("80GiB", "flops")])
def test_parse_quantity_refuses(text, kind):
    with pytest.raises(InputError):
        parse_quantity(text, kind, "--x")


@given(st.integers(1, 10**6), st.sampled_from([("K", 10**3), ("M", 10**6), ("G", 10**9), ("T", 10**12)]))
def test_parse_quantity_suffix_equals_scientific(n, suffix):
    s, scale = suffix
    assert parse_quantity(f"{n}{s}B", "bytes", "--x") == parse_quantity(f"{n}e{len(str(scale)) - 1}", "bytes", "--x")


def test_json_shape_and_hw_fills_only_missing_figures():
    d = run_json("solve", "roofline", "--hw", "h100", "--bandwidth", "2TB/s")
    assert set(d) == {"answer", "unit", "convention", "breakdown"}
    assert d["breakdown"]["bandwidth"] == 2e12 and d["breakdown"]["peak_flops"] == 989.5e12
    assert d["answer"] == pytest.approx(989.5e12 / 2e12)
    assert d["convention"]["hardware"]["bandwidth"] == "given"


def test_matmul_command_matches_the_solver():
    from solver.systems.chips import resolve_chip
    from solver.systems.roofline import matmul

    d = run_json("solve", "matmul", "--batch", "32", "--d-in", "8192", "--d-out", "8192", "--hw", "h100",
                 "--weight-dtype", "int8", "--mode", "train")
    r = matmul(32, 8192, 8192, mode="train", weight_dtype="int8", chip=resolve_chip("h100"))
    assert d["answer"] == r.answer and d["breakdown"]["bound"] == "memory"
    assert d["breakdown"]["flops"] == 6 * 32 * 8192 * 8192


def test_explain_prints_formula_substitution_and_conventions():
    code, out = run("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "1", "--explain")
    assert code == 0
    assert "2Ψ + 2Ψ + K·Ψ/N_d" in out and "7,500,000,000" in out and "31,406,250,000" in out
    assert "conventions:" in out


def test_every_hardware_command_answers():
    cases = [
        ("attention-flops", "--batch", "8", "--seq", "4096", "--n-heads", "64", "--d-head", "128", "--n-kv-heads", "8",
         "--mode", "decode", "--hw", "h100"),
        ("prefill", "--params", "70B", "--tokens", "4096", "--hw", "h100", "--chips", "8", "--mfu", "0.5"),
        ("decode", "--params", "70B", "--batch", "32", "--context", "4096", "--kv-bytes-per-token", "327680",
         "--hw", "h100", "--chips", "8"),
        ("train", "--params", "70B", "--tokens", "2T", "--hw", "h100", "--chips", "2048", "--mfu", "0.4"),
        ("activations", "--seq", "2048", "--batch", "1", "--d-model", "12288", "--n-heads", "96"),
        ("chips", "--params", "70B", "--weight-dtype", "int4", "--hw", "h100"),
    ]
    answers = {c[0]: run_json("solve", *c)["answer"] for c in cases}
    assert answers["decode"] == pytest.approx(6.8265e-3, rel=1e-4)  # hand-derived in test_hardware_inference
    assert answers["chips"] == 1  # 70e9 × 0.5 byte = 35 GB < 80 GB
    assert answers["train"] == 6 * 70 * 10**9 * 2 * 10**12
    assert answers["activations"] == 2_868_903_936


def test_errors_are_one_line_with_status_2():
    for args in (["solve", "roofline", "--hw", "nope"], ["solve", "roofline", "--peak-flops", "1T"],
                 ["solve", "matmul", "--batch", "x", "--d-in", "1", "--d-out", "1"],
                 ["solve", "chips", "--params", "1B", "--weight-dtype", "int3", "--hbm", "80GB"],
                 ["solve", "train", "--params", "1B"], ["hw", "show", "nope"]):
        proc = subprocess.run([sys.executable, "-m", "drills", *args], capture_output=True, text=True)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("qkv: error:") and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr


def test_drills_modules_do_not_import_torch():
    code = ("import sys, drills.cli.solve_hardware, drills.cli.hw, solver.systems.chips, solver.systems.roofline, "
            "solver.systems.inference, solver.systems.training; assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hw_list_and_show():
    d = run_json("hw", "list")
    names = [h["name"] for h in d["hardware"]]
    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "tpu-v4", "tpu-v5e", "tpu-v5p"} <= set(names)
    for h in d["hardware"]:
        assert h["source"] and h["hbm_bytes"] > 0 and h["hbm_bandwidth"] > 0 and h["link_bandwidth"] > 0
    show = run_json("hw", "show", "H100")
    assert show["peak_flops_dense"]["bf16"] == 1979e12 / 2  # the datasheet's sparse 1,979 TFLOP/s halved
    code, out = run("hw", "show", "tpu-v4")
    assert code == 0 and "Google Cloud TPU documentation" in out


def test_hw_show_cites_each_figure_as_printed():
    """The newer presets carry each figure's primary source: the printed text, the page, how it was divided.
    GB200 NVL72 page (nvidia.com/en-us/data-center/gb200-nvl72): 'FP64 / FP64 Tensor Core 2,880 TFLOPS' per rack."""
    d = run_json("hw", "show", "gb200")
    fp64 = next(c for c in d["citations"] if "peak_flops.fp64" in c["figures"])
    assert fp64["printed"].endswith("2,880 TFLOPS") and fp64["chips"] == 72 and not fp64["sparse"]
    assert d["peak_flops_dense"]["fp64"] == fp64["stored"] == 2880e12 / 72
    bf16 = next(c for c in d["citations"] if "peak_flops.bf16" in c["figures"])
    assert bf16["sparse"] and d["peak_flops_dense"]["bf16"] == 360e15 / 72 / 2
    assert all(h["citations"] == [] or h["name"] in ("b200", "gb200", "mi300x", "tpu-v6e")
               for h in run_json("hw", "list")["hardware"])
    code, out = run("hw", "show", "mi300x")
    flat = " ".join(out.split())  # the text wraps at the terminal width
    assert code == 0 and "printed:" in flat and "1,307.4 TF | 2,614.9 TF" in flat and "amd-cdna-3-white-paper" in flat


# ---------------------------------------------------------------------------------------
# qkv measure
# ---------------------------------------------------------------------------------------

TINY = ["--device", "cpu", "--peak-size", "128", "--copy-bytes", "256KB", "--warmup", "1", "--repeats", "3"]


def check_consistent(d: dict) -> None:
    assert d["measured_s"] > 0 and d["min_s"] <= d["measured_s"]
    assert d["achieved_flops_per_s"] == pytest.approx(d["flops"] / d["measured_s"])
    assert d["fraction_of_peak"] == pytest.approx(d["achieved_flops_per_s"] / d["peak_flops"])
    assert 0 < d["fraction_of_peak"] <= 100  # loose: a tiny CPU calibration is noisy on a shared machine
    assert 0 < d["fraction_of_bandwidth"]
    assert d["roofline_s"] == max(d["roofline_compute_s"], d["roofline_memory_s"])
    assert d["roofline_compute_s"] == pytest.approx(d["flops"] / d["peak_flops"])
    assert d["bound"] == ("compute" if d["intensity"] > d["critical_intensity"] else "memory")


def test_measure_matmul_cpu():
    d = run_json("measure", "matmul", "--batch", "16", "--d-in", "64", "--d-out", "32", *TINY)
    assert d["flops"] == 2 * 16 * 64 * 32 and d["bytes"] == 4 * (16 * 64 + 64 * 32 + 16 * 32)
    assert d["peak_origin"].startswith("measured")
    check_consistent(d)
    d = run_json("measure", "matmul", "--batch", "8", "--d-in", "16", "--d-out", "16", "--mode", "train",
                 "--peak-flops", "1e9", "--bandwidth", "1e9", "--device", "cpu", "--repeats", "2")
    assert d["peak_flops"] == 1e9 and d["peak_origin"] == "given" and d["flops"] == 6 * 8 * 16 * 16
    check_consistent(d)


def test_measure_attention_and_forward_cpu():
    d = run_json("measure", "attention", "--batch", "1", "--seq", "32", "--n-heads", "4", "--d-head", "8",
                 "--n-kv-heads", "2", *TINY)
    assert d["flops"] == 4 * 1 * 4 * 32 * 32 * 8 and d["score_matrix_bytes"] == 4 * 4 * 32 * 32
    check_consistent(d)
    d = run_json("measure", "forward", "--batch", "1", "--seq", "16", "--d-model", "32", "--n-layers", "1",
                 "--n-heads", "2", "--vocab-size", "64", *TINY)
    assert d["flops"] == d["flops_counted_by_torch"]  # analytic count == FlopCounterMode on the real model
    check_consistent(d)


def test_measure_attention_backend_cpu():
    """--backend runs the attention with that SDPA backend alone and says which; one the device has
    no kernel for is refused in one line (exit 2), not a traceback."""
    args = ("measure", "attention", "--batch", "1", "--seq", "32", "--n-heads", "2", "--d-head", "8", "--causal",
            "--peak-flops", "1e11", "--bandwidth", "1e10", "--repeats", "2", "--warmup", "1")
    for backend in ("math", "flash"):
        d = run_json(*args, "--backend", backend)
        assert d["backend"] == backend and d["flops"] == 4 * 2 * 32 * 32 * 8
        check_consistent(d)
    assert run_json(*args)["backend"] == "auto"
    res = CliRunner().invoke(cli, [*args, "--backend", "efficient", "--json"])
    if res.exit_code:  # no memory-efficient kernel on this CPU build
        assert res.exit_code == 2 and res.stderr.strip().count("\n") == 0
        assert "--backend: the efficient backend cannot run" in res.stderr
    else:
        assert json.loads(res.stdout)["backend"] == "efficient"


def test_measure_cuda_without_gpu_says_so():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    res = CliRunner().invoke(cli, ["measure", "matmul", "--device", "cuda"])
    assert res.exit_code == 2
    assert res.stderr.strip().count("\n") == 0 and "no CUDA device" in res.stderr


@pytest.mark.gpu
def test_measure_attention_memory_on_gpu():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    d = run_json("measure", "attention", "--device", "cuda", "--batch", "2", "--seq", "2048", "--n-heads", "8",
                 "--d-head", "64", "--dtype", "bf16", "--repeats", "3")
    mem = d["backend_peak_memory_bytes"]
    assert mem["math"] >= d["score_matrix_bytes"]  # the math backend materialises B·N·T·T scores
    flash = [v for k, v in mem.items() if k != "math" and isinstance(v, int)]
    assert flash and min(flash) < d["score_matrix_bytes"]
    check_consistent(d)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,causal", [("bf16", True), ("fp32", False)])
def test_math_backend_memory_is_sdpa_math_workspace_on_gpu(dtype, causal):
    """What the math backend allocates on a GPU is what qkv counts before it runs: fp32 scores and
    softmax and a flag per score (the H200 run: within 0.01 % from 1k to 16k tokens, causal bf16)."""
    import torch

    from solver.counting import sdpa_math_workspace

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    d = run_json("measure", "attention", "--device", "cuda", "--batch", "2", "--seq", "2048", "--n-heads", "8",
                 "--d-head", "64", "--dtype", dtype, "--backend", "math", "--repeats", "3",
                 *(["--causal"] if causal else []))
    estimate = sum(sdpa_math_workspace(2, 8, 2048, 64, 2 if dtype == "bf16" else 4, causal).values())
    assert d["backend_peak_memory_bytes"]["math"] == pytest.approx(estimate, rel=0.01)


def test_model_config_in_place_of_params_and_kv_size():
    # Llama-2-70B: 80 layers, 8 KV heads of 128 -> 2 × 80 × 8 × 128 × 2 bytes = 327,680 bytes per token (bf16)
    from solver.counting import param_count
    from solver.counting.presets import get_config

    d = run_json("solve", "decode", "--preset", "llama2-70b", "--batch", "32", "--context", "4096", "--hw", "h100",
                 "--chips", "8")
    assert d["breakdown"]["kv_bytes"] == 32 * 4096 * 327_680
    assert d["breakdown"]["weight_bytes"] == 2 * param_count(get_config("llama2-70b"))
    flags = run_json("solve", "decode", "--params", "70B", "--n-layers", "80", "--n-heads", "64", "--n-kv-heads", "8",
                     "--d-head", "128", "--batch", "32", "--context", "4096", "--hw", "h100", "--chips", "8")
    assert flags["breakdown"]["kv_bytes"] == d["breakdown"]["kv_bytes"]
    t = run_json("solve", "train", "--preset", "gpt3-175b", "--tokens", "300B", "--seq", "2048")
    assert t["answer"] == 6 * param_count(get_config("gpt3-175b")) * 300 * 10**9
    assert 1 < t["breakdown"]["ratio_exact_to_6N"] < 1.1  # attention and the LM head on top of 6N


def test_show_wraps_long_notes_at_80_columns():
    """hw show / models show wrap their source and notes between words under the label
    (a 172-character notes line used to wrap at column 0 of an 80-column terminal)."""
    from click.testing import CliRunner

    from drills.cli import cli

    for args in (["hw", "show", "h100-sxm"], ["models", "show", "gpt2"]):
        r = CliRunner(env={"COLUMNS": "80"}).invoke(cli, args)
        assert r.exit_code == 0, r.output
        words = r.output.split()
        assert "1,979/2)." in words or "124M" in words
        long = [ln for ln in r.output.splitlines() if len(ln) > 80]
        tables = [ln for ln in long if "×" in ln]  # the breakdown table is rich's, sized apart
        assert long == tables, long


# ---------------------------------------------------------------------------------------
# Memory left per GPU: zero and activations with --hw / --hbm
# ---------------------------------------------------------------------------------------


def test_zero_reports_memory_left_per_gpu():
    """ZeRO stage 2, Ψ = 7.5B on 64 GPUs (the paper's example): 2Ψ + 14Ψ/64 = 16,640,625,000 bytes of model
    states. On an 80 GiB GPU 80·2^30 − 16,640,625,000 = 69,258,720,920 bytes are left; on an A100 40GB
    (40·10^9 bytes, preset) 23,359,375,000."""
    psi = 7_500_000_000
    states = 2 * psi + 14 * psi // 64
    d = run_json("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "2", "--hbm", "80GiB")
    assert set(d) == {"answer", "unit", "convention", "breakdown"}
    assert d["answer"] == states == 16_640_625_000
    b = d["breakdown"]
    assert b["hbm_bytes"] == 80 * 2**30 and b["left_bytes"] == 80 * 2**30 - states == 69_258_720_920
    assert b["left_GiB"] == pytest.approx((80 * 2**30 - states) / 2**30) and b["left_GB"] == pytest.approx(69.25872092)
    assert b["fits"] is True and "given" in d["convention"]["hbm"]
    d = run_json("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "2", "--hw", "a100-40gb")
    assert d["breakdown"]["left_bytes"] == 40 * 10**9 - states == 23_359_375_000 and "a100-40gb" in d["convention"]["hbm"]
    # --hbm wins over the preset; stage 0 (16Ψ = 120 GB) does not fit in 80 GB
    d = run_json("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "0", "--hw", "a100-40gb", "--hbm", "80GB")
    assert d["breakdown"]["left_bytes"] == 80 * 10**9 - 16 * psi and d["breakdown"]["fits"] is False
    # without either flag nothing about HBM is reported
    d = run_json("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "2")
    assert "left_bytes" not in d["breakdown"] and "hbm" not in d["convention"]
    code, out = run("solve", "zero", "--params", "7.5B", "--gpus", "64", "--stage", "0", "--hbm", "80GB", "--explain")
    assert code == 0 and "left per GPU = HBM − model states" in out and "fits" in out


def test_activations_report_memory_left():
    """GPT-3 175B shape (Korthikanti et al. Table 1 setting): s = 2048, b = 1, h = 12288, a = 96: per layer
    s·b·h·(34 + 5·96·2048/12288) = 25,165,824 × 114 = 2,868,903,936 bytes; on an H100 (80·10^9 bytes) one layer
    leaves 77,131,096,064 bytes; 96 layers (275,414,777,856 bytes) do not fit."""
    per_layer = 2048 * 12288 * (34 + 5 * 96 * 2048 // 12288)
    d = run_json("solve", "activations", "-s", "2048", "-b", "1", "--d-model", "12288", "-a", "96", "--hw", "h100")
    assert d["answer"] == per_layer == 2_868_903_936
    assert d["breakdown"]["left_bytes"] == 80 * 10**9 - per_layer and d["breakdown"]["fits"] is True
    d = run_json("solve", "activations", "-s", "2048", "-b", "1", "--d-model", "12288", "-a", "96", "-L", "96",
                 "--hbm", "80e9")
    assert d["breakdown"]["left_bytes"] == 80 * 10**9 - 96 * per_layer and d["breakdown"]["fits"] is False
    code, out = run("solve", "activations", "-s", "8", "-b", "1", "--d-model", "8", "-a", "1", "--hw", "nope")
    assert code == 2 and out.count("\n") == 1 and "--hw" in out


# ---------------------------------------------------------------------------------------
# qkv measure: the CPU calibration is the best of several rounds; a noisy one is flagged
# ---------------------------------------------------------------------------------------


def test_calibration_keeps_the_best_round(monkeypatch):
    """Three rounds whose fastest runs take 3, 1, 2 s (matmul) and 5, 4, 6 s (copy): the peak is 2n³ / 1 s and the
    bandwidth 2·bytes / 4 s, whatever the order."""
    import torch

    import drills.cli.hw as hw

    times = iter([3.0, 1.0, 2.0, 5.0, 4.0, 6.0])
    monkeypatch.setattr(hw, "time_op", lambda *a, **k: {"min_s": next(times)})
    assert hw.CALIBRATION_ROUNDS == 3
    fig = hw.machine_figures("cpu", "fp32", torch.float32, hw_name=None, peak_flops=None, bandwidth=None,
                             peak_size=8, copy_bytes=4096, warmup=0, repeats=1)
    assert fig["peak_flops"] == 2 * 8**3 / 1.0 and fig["bandwidth"] == 2 * 4096 / 4.0
    assert "fastest run of 3 × 1" in fig["peak_origin"]


def test_a_run_faster_than_the_calibration_is_flagged_not_printed_as_a_percentage(monkeypatch):
    """A calibration that took 1000 s per run (a busy machine) gives a peak below anything the run achieves."""
    import drills.cli.hw as hw

    monkeypatch.setattr(hw, "best_time", lambda *a, **k: 1000.0)
    args = ["measure", "matmul", "--batch", "16", "--d-in", "64", "--d-out", "32", *TINY]
    d = run_json(*args)
    assert d["fraction_of_peak"] > 1 and d["peak_note"] == hw.BUSY and d["bandwidth_note"] == hw.BUSY
    code, out = run(*args)
    assert code == 0 and out.count(hw.BUSY) == 2
    achieved = [line for line in out.splitlines() if line.startswith("achieved")]
    assert len(achieved) == 2 and not any("%" in line for line in achieved)


def test_a_normal_run_has_no_note():
    d = run_json("measure", "matmul", "--batch", "8", "--d-in", "16", "--d-out", "16", "--peak-flops", "1e18",
                 "--bandwidth", "1e18", "--device", "cpu", "--repeats", "2")
    assert "peak_note" not in d and "bandwidth_note" not in d and d["fraction_of_peak"] < 1
    d = run_json("measure", "matmul", "--batch", "8", "--d-in", "16", "--d-out", "16", "--peak-flops", "1",
                 "--bandwidth", "1e18", "--device", "cpu", "--repeats", "2")
    assert "too low" in d["peak_note"] and "bandwidth_note" not in d
