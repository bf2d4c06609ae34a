"""``--plot FILE`` / ``--plot -`` (issue 29): every picture writes a PNG and an SVG, the same bytes
twice, with the marked points' labels and values in the SVG's text; the sketch fits 80 columns;
the data each picture shows agrees with an independent reading of the model it draws."""

from __future__ import annotations

import math
import struct

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from drills.cli import cli

pytest.importorskip("matplotlib")


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    if isinstance(res.exception, Exception) and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


#: each command, and strings its SVG must hold (labels and values of the marked points)
PICTURES = {
    "roofline": (["solve", "roofline", "--hw", "h100-sxm", "--compare", "a100-80gb"],
                 ["ridge I* = 295.4 FLOP/B", "ridge I* = 153 FLOP/B", "matmul B=1: I = 0.9998, 3.35 TFLOP/s",
                  "matmul B=2368: I = 1501, 990 TFLOP/s", "h100-sxm", "a100-80gb"]),
    "matmul": (["solve", "matmul", "-B", "64", "-D", "8192", "-F", "8192", "--hw", "h100"],
               ["matmul [64,8192]@[8192,8192] forward: I = 63.02, 211 TFLOP/s", "ridge I* = 295.4 FLOP/B"]),
    "decode": (["solve", "decode", "--preset", "llama2-7b", "-B", "16", "-S", "2048", "--hw", "h100"],
               ["decode step B=16 S=2048: I = 7.594, 25.4 TFLOP/s"]),
    "pipeline-gpipe": (["solve", "pipeline", "-p", "4", "-m", "8", "--schedule", "gpipe"], ["3/11", "27.3%", "F8", "B1"]),
    "pipeline-1f1b": (["solve", "pipeline", "-p", "4", "-m", "8"], ["1F1B", "3/11", "27.3%"]),
    "pipeline-interleaved": (["solve", "pipeline", "-p", "4", "-m", "8", "--schedule", "interleaved", "-v", "2"],
                             ["3/19", "15.8%", "v = 2"]),
    "serve": (["solve", "serve", "--preset", "llama2-7b", "--hw", "h100-sxm", "--context", "4096"],
              ["batch 30", "weights", "KV cache", "HBM 80 GB"]),
    "train": (["solve", "train", "-N", "7B", "-D", "1T", "--hw", "h100-sxm"],
              ["112 GB", "HBM 80 GB", "optimizer states"]),
    "zero": (["solve", "zero", "-N", "7.5B", "--gpus", "64", "--stage", "2", "--hw", "h100-sxm"],
             ["120 GB", "31.4 GB", "16.6 GB", "1.88 GB", "HBM 80 GB"]),
    "memory": (["solve", "memory", "--preset", "llama2-7b", "--what", "training", "--hbm", "80GB"],
               ["fp32 Adam m (momentum)", "108 GB", "HBM 80 GB"]),
    "compute-optimal": (["solve", "compute-optimal", "-C", "1e24"],
                        ["optimum N = 41.3B, D = 4.04T, L = 1.9112", "20:1 rule N = 91.3B, L = 1.9177"]),
    "collective": (["solve", "collective", "-S", "1GB", "-n", "8", "--link", "nvlink4", "--latency", "5e-6"],
                   ["ring at 1 GB: 3.96 ms, busbw 442 GB/s", "latency = bandwidth term at 18 MB",
                    "tree at 1 GB: 13.4 ms"]),
}


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PICTURES))
def test_plot_writes_the_same_png_and_svg_twice_with_its_labels(name, tmp_path):
    args, labels = PICTURES[name]
    files = {}
    for n in (1, 2):
        for suffix in ("png", "svg"):
            target = tmp_path / f"{name}-{n}.{suffix}"
            code, out = run(*args, "--plot", str(target))
            assert code == 0, out
            files[(n, suffix)] = target.read_bytes()
    assert files[(1, "png")] == files[(2, "png")]
    assert files[(1, "svg")] == files[(2, "svg")]
    svg = files[(1, "svg")].decode()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg  # no timestamp, no version
    for label in labels:
        assert label in svg, (label, name)
    w, h = _png_size(files[(1, "png")])
    assert w == 1125 and h >= 330  # 7.5 in at 150 dpi: an A4 text width, sharp on screen


@pytest.mark.parametrize("name", sorted(PICTURES))
def test_sketch_fits_eighty_columns_and_names_its_points(name):
    args, labels = PICTURES[name]
    code, out = run(*args, "--plot", "-")
    assert code == 0, out
    sketch = out.split("\n\n")[-1]
    lines = sketch.splitlines()
    assert len(lines) >= 4
    assert max(len(line) for line in lines) <= 80
    assert "Traceback" not in out


def test_sketch_values_are_the_printed_ones():
    """The sketch's legend repeats the command's own figures (here the bubble and ZeRO totals)."""
    _, out = run("solve", "pipeline", "-p", "4", "-m", "8", "--schedule", "gpipe", "--plot", "-")
    assert "bubble 3/11 = 27.3% of the step" in out and "stage 4 |...12345678aabb" in out
    _, out = run("solve", "zero", "-N", "7.5B", "--gpus", "64", "--stage", "1", "--plot", "-")
    assert "31.4 GB" in out and "1.88 GB" in out


@pytest.mark.parametrize("bad, message", [
    (["--plot", "x.pdf"], "give a .png or .svg file"),
    (["--plot", "-", "--json"], "the sketch would break the JSON"),
])
def test_bad_plot_targets_are_one_line(bad, message):
    code, out = run("solve", "pipeline", "-p", "2", "-m", "4", *bad)
    assert code == 2 and message in out and "Traceback" not in out


def test_json_with_a_plot_file_stays_one_object(tmp_path):
    import json

    code, out = run("solve", "roofline", "--hw", "h100-sxm", "--json", "--plot", str(tmp_path / "r.svg"))
    assert code == 0
    assert set(json.loads(out.strip().splitlines()[0])) == {"answer", "unit", "convention", "breakdown"}
    assert (tmp_path / "r.svg").exists()


# ---------------------------------------------------------------------------------------
# The data behind the pictures, checked another way
# ---------------------------------------------------------------------------------------


def test_roofline_points_lie_on_the_roof():
    """Attained FLOP/s = FLOPs / roofline time must equal min(peak, I · bandwidth) (Williams et al. 2009)."""
    from drills.plots import roofline as picture
    from solver.systems.chips import resolve_chip
    from solver.systems.roofline import attention, matmul, roofline

    chip = resolve_chip("h100-sxm", "bf16")
    pts = [(f"B={b}", matmul(b, 4096, 11008, chip=chip)) for b in (1, 7, 300, 5000)]
    pts.append(("attn", attention(4, 2048, 32, 128, mode="decode", n_kv_heads=8, chip=chip)))
    from solver.systems.inference import decode_step

    pts.append(("decode", decode_step(7_000_000_000, 32, 4096, 524288, chip, chips=2)))
    d = picture.data([("h100", roofline(chip))], pts)
    peak, bw = chip.peak_flops, chip.bandwidth
    for p in d["points"]:
        assert p["attained"] == pytest.approx(min(peak, p["intensity"] * bw), rel=1e-12)
        assert (p["intensity"] < peak / bw) == (p["bound"] == "memory")
    assert d["chips"][0]["ridge"] == pytest.approx(989.5e12 / 3.35e12)


@given(st.sampled_from(["gpipe", "1f1b", "interleaved"]), st.integers(1, 8), st.integers(1, 6), st.integers(1, 4))
def test_simulated_schedule_idles_the_bubble_formula(schedule, p, k, v):
    """The timeline the picture draws idles exactly the closed-form bubble (Narayanan et al. 2021), and it
    is a valid schedule: no stage runs two blocks at once, every block waits for its input."""
    from solver.systems.parallelism import pipeline_bubble
    from solver.systems.pipeline_schedule import pipeline_timeline

    m = p * k if schedule == "interleaved" else k + p // 2
    v = v if schedule == "interleaved" else 1
    t = pipeline_timeline(p, m, schedule=schedule, chunks=v)
    assert t.idle_fraction == pipeline_bubble(p, m, schedule=schedule, chunks=v).answer
    ends = {}
    for b in t.blocks:
        ends[(b.kind, b.chunk * p + b.stage, b.microbatch)] = b.end
    for s in range(p):
        row = sorted((b for b in t.blocks if b.stage == s), key=lambda b: b.start)
        assert all(a.end <= b.start for a, b in zip(row, row[1:], strict=False))
        assert len(row) == 2 * m * v
    last = p * v - 1
    for b in t.blocks:
        vs = b.chunk * p + b.stage
        if b.kind == "F" and vs > 0:
            assert ends[("F", vs - 1, b.microbatch)] <= b.start
        if b.kind == "B":
            assert ends[("B", vs + 1, b.microbatch) if vs < last else ("F", last, b.microbatch)] <= b.start


def test_gpipe_picture_by_hand():
    """p = 2, m = 2, forward 1, backward 2: stage 2 runs F1 F2 at 1-3, B1 B2 at 3-7; stage 1 idles 1 + 2 = 3 of 9."""
    from solver.systems.pipeline_schedule import pipeline_timeline

    t = pipeline_timeline(2, 2, schedule="gpipe")
    by_stage = {s: [(b.kind, b.microbatch + 1, b.start, b.end) for b in t.blocks if b.stage == s] for s in (0, 1)}
    assert by_stage[1] == [("F", 1, 1, 2), ("F", 2, 2, 3), ("B", 1, 3, 5), ("B", 2, 5, 7)]
    assert by_stage[0] == [("F", 1, 0, 1), ("F", 2, 1, 2), ("B", 1, 5, 7), ("B", 2, 7, 9)]
    assert t.makespan == 9 and t.idle_fraction == pytest.approx(3 / 9)


def test_isoflop_optimum_is_the_lowest_point_of_its_curve():
    """The closed-form optimum (compute_optimal) against a brute-force scan of L(N, C/6N)."""
    from drills.plots import scaling as picture
    from solver.systems.serving import chinchilla_loss, compute_optimal

    for C in (1e21, 5.76e23, 1e26):
        d = picture.data([(C, compute_optimal(C), compute_optimal(C, method="rule-20"))], chinchilla_loss)
        c = d["curves"][0]
        assert min(c["L"]) >= c["optimum"]["L"] - 1e-12
        scan = min(chinchilla_loss(n, C / (6 * n)) for n in (10 ** (8 + i / 2000) for i in range(10000)))
        assert c["optimum"]["L"] == pytest.approx(scan, abs=1e-6)
        assert c["rule20"]["D"] == pytest.approx(20 * c["rule20"]["N"])
        assert c["rule20"]["L"] >= c["optimum"]["L"]


def test_collective_crossover_is_where_the_two_terms_are_equal():
    from drills.plots import collective as picture
    from solver.systems.collectives import collective

    beta, alpha, n = 450e9, 5e-6, 8
    sizes = [10 ** (3 + k / 2) for k in range(12)]
    series = {a: [collective("all-reduce", s, n, beta, latency=alpha, algorithm=a) for s in sizes]
              for a in ("ring", "tree")}
    d = picture.data("all-reduce", n, 1e6, series, {})
    # by hand: ring 2(n−1)α = 2(n−1)/n · S/β → S = nαβ; tree 2⌈log₂n⌉α = 2⌈log₂n⌉ S/β → S = αβ
    assert d["crossover"]["ring"] == pytest.approx(n * alpha * beta)
    assert d["crossover"]["tree"] == pytest.approx(alpha * beta)
    for p in d["series"]["ring"]:
        assert (p["latency"] > p["bandwidth"]) == (p["size"] < n * alpha * beta)


def test_memory_bars_add_up_to_the_command_total():
    from drills.plots import memory as picture
    from solver.systems.training import zero

    for stage in range(4):
        r = zero(7_500_000_000, 64, stage)
        b = r.breakdown
        d = picture.data("t", [("s", [("weights", b["weights_bytes"]), ("gradients", b["gradients_bytes"]),
                                      ("optimizer states", b["optimizer_bytes"])])], 80e9)
        assert d["bars"][0]["total"] == pytest.approx(float(r.answer))
    # ZeRO paper, Figure 1: 120, 31.4, 16.6, 1.88 GB
    assert [round(float(zero(7_500_000_000, 64, s).answer) / 1e9, 2) for s in range(4)] == [120, 31.41, 16.64, 1.88]


def test_canvas_maps_the_ends_of_its_axes_to_its_corners():
    from drills.plots import Canvas

    cv = Canvas(50, 10, (1, 1e6), (1e3, 1e9))
    assert (cv.col(1), cv.row(1e3)) == (0, 9) and (cv.col(1e6), cv.row(1e9)) == (49, 0)
    assert cv.col(1e3) == round(0.5 * 49)
    assert math.isclose(10 ** (6 * cv.col(1e3) / 49), 1e3, rel_tol=0.2)


def test_pipeline_problems_carry_their_timeline_in_the_pdf_solution():
    """The PDF sheet's solution of a pipeline-bubble problem draws its schedule (Typst, no matplotlib):
    p·m·v forward and as many backward blocks, and the bubble the key is about in the caption."""
    import question_bank.families.parallelism  # noqa: F401 - registers
    from drills.sheets.pdf import pictures
    from question_bank.family import FAMILIES

    for seed, level in ((3, "easy"), (4, "medium"), (5, "hard")):
        p = FAMILIES["parallel.pipeline_bubble"].generate(seed, level)
        g = p.given
        _, sol = pictures(p)
        figs = [s for s in sol if "stage 1" in s]
        assert len(figs) == 1
        n, m, v = g["stages"], g["microbatches"], g.get("chunks", 1)
        assert figs[0].count("place(") == 2 * n * m * v
        assert f"stage {n}]" in figs[0] and f"stage {n + 1}]" not in figs[0]
        assert f"{float(p.key.value):.1f}% of the step" in figs[0]  # the key, in percent


def test_matmul_bound_problems_carry_their_roofline_in_the_pdf_solution():
    """The solution of a matmul-bound problem draws the chip's roofline (Typst) with the matmul at
    I = 2BDF / (2(BD + DF + BF)) (bf16, each operand read once), worked here by hand."""
    import question_bank.families.hardware  # noqa: F401 - registers
    from drills.sheets.pdf import compile_typst, pictures
    from question_bank.family import FAMILIES

    for seed in (1, 2, 3):
        p = FAMILIES["hardware.matmul_bound"].generate(seed, "easy")
        g = p.given
        B, D, F = g["batch"], g["d_in"], g["d_out"]
        _, sol = pictures(p)
        figs = [s for s in sol if "roofline" in s]
        assert len(figs) == 1 and figs[0].count("square(") == 1
        assert f"I = {2 * B * D * F / (2 * (B * D + D * F + B * F)):.4g}," in figs[0]
        assert f"{g['hw']}: ridge I* =" in figs[0]
    from drills.sheets.pdf import PREAMBLE

    out = compile_typst("#set page(width: 16cm, height: auto)\n" + PREAMBLE + figs[0] + "\n", "svg")
    assert (out if isinstance(out, bytes) else out[0]).startswith(b"<svg")


@pytest.mark.slow
def test_files_are_the_same_bytes_from_two_separate_processes(tmp_path):
    """Nothing per-process (ids, hash seeds, dates) leaks into the files."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(repo), PYTHONHASHSEED="random")
    digests = []
    for n in (1, 2):
        for suffix in ("svg", "png"):
            target = tmp_path / f"p{n}.{suffix}"
            subprocess.run([sys.executable, "-m", "drills", "solve", "pipeline", "-p", "3", "-m", "6", "--plot",
                            str(target)], env=env, check=True, capture_output=True, timeout=120)
        digests.append(((tmp_path / f"p{n}.svg").read_bytes(), (tmp_path / f"p{n}.png").read_bytes()))
    assert digests[0] == digests[1]


def test_zero_problems_carry_their_bars_in_the_pdf_solution():
    """ZeRO (Rajbhandari et al. 2020, §5): 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N bytes per GPU, worked by hand."""
    import question_bank.families.hardware  # noqa: F401 - registers
    from drills.plots import si
    from drills.sheets.pdf import pictures
    from question_bank.family import FAMILIES

    for seed, level in ((1, "easy"), (3, "medium"), (4, "hard")):
        p = FAMILIES["hardware.zero_memory"].generate(seed, level)
        psi, n = p.given["params"], p.given["gpus"]
        _, sol = pictures(p)
        figs = [s for s in sol if "model states per GPU" in s]
        assert len(figs) == 1
        for total in (16 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n, 16 * psi / n):
            assert f'"{si(total, "B")}"' in figs[0]
        assert f"stage {p.given['stage']} (asked)" in figs[0]
