"""``qkv hw list|show`` (the hardware presets) and ``qkv measure matmul|attention|forward``.

``measure`` runs the operation for real with torch and times it properly: warm-up runs, a
device synchronisation around every timed run (CUDA events on a GPU), several repetitions, the
median. It prints the time beside the roofline estimate and the achieved fraction of peak.
On the CPU there is no preset, so the machine's peak FLOP/s is measured first with a large
matmul (and its memory bandwidth with a large copy), each the fastest run of several separate
rounds, and those stand in for the preset; when the operation still beats them (a busy machine
slowed the calibration), the report says so instead of printing a fraction above 100%. On a
GPU the preset is found from the device name (or ``--hw``), and ``measure attention`` also
measures the memory of the attention score matrix with the math backend against the
flash/efficient ones. torch is imported only inside the commands.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import click

from drills.cli.solve_hardware import BANDWIDTH, BYTES, COUNT, FLOPS, INT, human_value
from drills.output import InputError, emit, emit_json, emit_labelled

# ---------------------------------------------------------------------------------------
# qkv hw
# ---------------------------------------------------------------------------------------


@click.group()
def hw() -> None:
    """Hardware presets: dense peak FLOP/s, HBM, bandwidth, interconnect, and their sources."""


def _hw_json(h) -> dict[str, Any]:
    return {"name": h.name, "vendor": h.vendor, "aliases": list(h.aliases), "peak_flops_dense": h.peak_flops,
            "hbm_bytes": h.hbm_bytes, "hbm_device_bytes": h.hbm_device_bytes, "hbm_device_source": h.hbm_device_source,
            "hbm_bandwidth": h.hbm_bandwidth, "link_bandwidth": h.link_bandwidth,
            "link_bandwidth_per_direction": h.link_bandwidth, "link_preset": h.link, "link_printed": h.link_printed,
            "link": h.link_name, "critical_intensity_bf16": h.critical_intensity("bf16"),
            "source": h.source, "notes": h.notes, "citations": [c.as_json() for c in h.citations]}


@hw.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def hw_list(as_json: bool) -> None:
    """Every preset: bf16 dense peak, HBM, bandwidth, link bandwidth, critical intensity."""
    from solver.systems.chips import list_hardware

    presets = list_hardware()
    if as_json:
        emit_json({"hardware": [_hw_json(h) for h in presets]})
        return
    emit(f"{'name':<11} {'bf16 dense':>11} {'HBM':>9} {'HBM BW':>10} {'link/dir':>10} {'I* (bf16)':>10}")
    for h in presets:
        hbm = f"{h.hbm_bytes / 2**30:.0f} GiB" if h.hbm_bytes % 2**30 == 0 else f"{h.hbm_bytes / 1e9:.0f} GB"
        emit(f"{h.name:<11} {h.peak('bf16') / 1e12:>7.1f} TF/s {hbm:>9} {h.hbm_bandwidth / 1e12:>6.3g} TB/s "
             f"{h.link_bandwidth / 1e9:>6.0f} GB/s {h.critical_intensity('bf16'):>10.1f}")
    emit("")
    emit("Peaks are dense (NVIDIA: with-sparsity figures halved; AMD, Google print dense); link per direction; "
         "qkv hw show NAME for the sources.")


@hw.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def hw_show(name: str, as_json: bool) -> None:
    """One preset in full, with its source."""
    from solver.errors import SolverInputError
    from solver.systems.chips import get_hardware
    from solver.units import format_bytes

    try:
        h = get_hardware(name)
    except SolverInputError as e:
        raise InputError(str(e.args[0]), "NAME") from e
    if as_json:
        emit_json(_hw_json(h))
        return
    emit(f"{h.name} ({h.vendor})" + (f"  aliases: {', '.join(h.aliases)}" if h.aliases else ""))
    emit("dense peak per chip:")
    for dt, v in h.peak_flops.items():
        emit(f"  {dt:<5} {v / 1e12:>8.1f} TFLOP/s   critical intensity {h.critical_intensity(dt):8.1f} FLOP/byte")
    emit(f"HBM:        {format_bytes(h.hbm_bytes)} (datasheet)")
    if h.hbm_device_bytes is not None:
        emit_labelled("", f"{format_bytes(h.hbm_device_bytes)} = {h.hbm_device_bytes // 2**20:,} MiB as the device "
                      f"reports it ({h.hbm_device_source})", 12)
    emit(f"bandwidth:  {h.hbm_bandwidth:.4g} bytes/s ({h.hbm_bandwidth / 1e12:.4g} TB/s)")
    emit_labelled("link:", f"{h.link_bandwidth:.4g} bytes/s ({h.link_bandwidth / 1e9:.0f} GB/s per direction, "
                  f"{h.link_name}; = qkv hw links {h.link}; printed: {h.link_printed})", 12)
    emit_labelled("source:", h.source, 12)
    if h.notes:
        emit_labelled("notes:", h.notes, 12)
    sources: list[str] = []
    for i, c in enumerate(h.citations):
        how = [f"÷ {c.chips} chips"] if c.chips > 1 else []
        how += ["÷ 2 (printed with sparsity)"] if c.sparse else []
        how += ["÷ 2 (both directions printed)"] if c.directions > 1 else []
        how += [f"÷ {c.ports} ports"] if c.ports > 1 else []
        ref = f"{c.url} ({c.seen})"
        if ref not in sources:
            sources.append(ref)
        extra = "; ".join(x for x in (c.unit, c.note) if x)
        emit_labelled("printed:" if i == 0 else "", f"{', '.join(c.figures)} = \"{c.printed}\" "
                      f"{' '.join(how) or 'as printed'} [{sources.index(ref) + 1}]" + (f"; {extra}" if extra else ""),
                      12)
    for i, ref in enumerate(sources):
        emit_labelled("where:" if i == 0 else "", f"[{i + 1}] {ref}", 12)


@hw.command("links")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def hw_links(as_json: bool) -> None:
    """Interconnect presets: bandwidth per direction (what a collective divides by), as printed, sources."""
    from solver.systems.interconnect import list_links

    links = list_links()
    if as_json:
        emit_json({"links": [{"name": k.name, "per_direction": k.per_direction, "bidirectional": k.bidirectional,
                              "printed": k.printed, "scope": k.scope, "source": k.source, "notes": k.notes}
                             for k in links]})
        return
    emit(f"{'name':<18} {'per direction':>14} {'printed':<48} scope")
    for k in links:
        emit(f"{k.name:<18} {k.per_direction / 1e9:>9.1f} GB/s {k.printed:<48} {k.scope}")
    emit("")
    emit("NVLink and PCIe are printed as both directions added; InfiniBand per direction in Gb/s.")


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------

#: the CPU calibration (peak matmul, bandwidth copy) is run this many times and the best kept:
#: a shared machine's bursts of other work only ever make a round slower
CALIBRATION_ROUNDS = 3
BUSY = "the calibration was slower than this run: the machine is busy; the fraction is unreliable"
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
GPU_NAMES = (("h200", "h200"), ("h100 pcie", "h100-pcie"), ("h100", "h100-sxm"),
             ("a100-sxm4-40gb", "a100-40gb"), ("a100 40gb", "a100-40gb"), ("a100", "a100-80gb"))


#: ``--backend`` of ``qkv measure attention``: torch's SDPA backends by their short names.
SDPA_BACKENDS = ("math", "flash", "efficient")


#: The longest a measurement's runs may take, estimated before they start (seconds).
MEASURE_BUDGET_S = 60.0


def _too_slow(per_run: float, runs: int, how: str) -> InputError:
    return InputError(f"one run takes {how} {per_run:.3g} s, so {runs} runs (--warmup + --repeats) would take "
                      f"~{per_run * runs:.3g} s, more than the {MEASURE_BUDGET_S:g} s a measurement may take; "
                      "lower --repeats or the sizes", "--repeats")


#: FLOP/s no device of the kind reaches (a CPU: 1 PFLOP/s; a GPU: 5 PFLOP/s, above an H200's dense
#: FP8): with a peak given (--peak-flops, --hw), the time estimated before any run is a lower bound
#: whatever figure was given to compare with.
FASTEST = {"cpu": 1e15, "cuda": 5e15}
#: With a peak measured on this machine, runs are estimated at this many times that peak.
MEASURED_MARGIN = 2


def check_time(flops: float | None, fig: dict[str, Any] | None, runs: int, device: str = "cpu") -> None:
    """Refuse, before any tensor is made, ``runs`` runs that would pass the budget even at
    :data:`MEASURED_MARGIN` × the peak measured here (else at :data:`FASTEST` for the device)."""
    fastest = FASTEST["cuda" if device.startswith("cuda") else "cpu"]
    if fig and str(fig.get("peak_origin", "")).startswith("measured") and fig.get("peak_flops"):
        fastest = min(fastest, MEASURED_MARGIN * float(fig["peak_flops"]))
    if flops and flops / fastest * runs > MEASURE_BUDGET_S:
        raise _too_slow(flops / fastest, runs, "at least")


def time_op(fn, device: str, warmup: int = 3, repeats: int = 10, *, flops: float | None = None,
            fig: dict[str, Any] | None = None, budget: float | None = None, too_slow=None) -> dict[str, float]:
    """Median (and min, max) seconds of ``fn()`` after ``warmup`` untimed runs, synchronised.

    Bounded in time: with ``flops`` and the machine figures ``fig``, runs that would take more than
    :data:`MEASURE_BUDGET_S` even at the speed :func:`check_time` assumes are refused before the first; after the first
    run, its time × the runs left is checked again against ``budget`` (default the measurement's budget;
    ``too_slow(first, runs)`` makes the error); and the timed runs stop (keeping those done) once twice the
    budget has passed. Ctrl-C stops at once (one line, exit status 130: :func:`interruptible`)."""
    import torch

    cuda = device.startswith("cuda")
    runs = warmup + repeats
    budget = MEASURE_BUDGET_S if budget is None else budget
    check_time(flops, fig, runs, device)

    def once() -> float:
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    began = time.perf_counter()
    times = []
    first = once()
    if first * (runs - 1) > budget:
        raise (too_slow or (lambda t, n: _too_slow(t, n, "about")))(first, runs)
    if warmup:
        for _ in range(warmup - 1):
            fn()
        if cuda:
            torch.cuda.synchronize()
    else:
        times.append(first)
    while len(times) < repeats:
        times.append(once())
        if time.perf_counter() - began > 2 * budget:
            break  # slower than estimated (a busy machine): what was timed is kept
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": len(times)}


def best_time(fn, device: str, warmup: int, repeats: int, rounds: int, *, deadline: float | None = None,
              too_slow=None, done: list[int] | None = None) -> float:
    """The fastest run over ``rounds`` separate calibrations of ``repeats`` runs each (noise only slows a run).

    With ``deadline`` (a ``time.perf_counter()`` value: the calibration's budget, shared by all its
    steps) the first round is refused by ``too_slow(first, runs)`` when its first run × its runs would
    pass the deadline, and a later round is left out when the one before it would no longer fit (the
    fastest run of the rounds done is kept; their number is appended to ``done``)."""
    best, last, r = float("inf"), 0.0, 0
    for r in range(max(1, rounds)):
        if deadline is None:
            best = min(best, time_op(fn, device, warmup, repeats)["min_s"])
            continue
        left = deadline - time.perf_counter()
        if r and last > left:
            r -= 1
            break
        began = time.perf_counter()
        best = min(best, time_op(fn, device, warmup, repeats, budget=max(left, 0.0), too_slow=too_slow)["min_s"])
        last = time.perf_counter() - began
    if done is not None:
        done.append(r + 1)
    return best


#: The calibration is estimated before it starts from a probe this small (an n×n matmul, a copy).
PROBE_N = 512
PROBE_BYTES = 16 * 2**20


def calibration_per_run(device: str, torch_dtype, *, peak_size: int, copy_bytes: int) -> tuple[float, float]:
    """Low estimates of the seconds one run of the calibration's ``peak_size``² matmul (0: none) and
    one of its copy of ``copy_bytes`` (0: none) take, at :data:`MEASURED_MARGIN` × the speed of a
    probe: the fastest of 3 to 10 runs of a :data:`PROBE_N`² matmul and of a copy of at most
    :data:`PROBE_BYTES` (a few milliseconds in all). A small matmul runs slower per FLOP than a large
    one, so the estimate errs low: what it refuses is surely too slow, and the rest is bounded
    while it runs (:func:`best_time`). Measured on the shared 2-core machine (load average 6): a
    512² matmul ran at 8-11 GFLOP/s, a 1024² one at 18 (a 256² one at 1.2: too small a probe); a
    copy of 16 MiB at 0.9 GB/s, of 64 MiB at 2 GB/s."""
    import torch

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def fastest(fn) -> float:  # after a warm-up run: 3 runs, more (up to 10) while under 50 ms have passed
        fn()
        sync()
        best, began, k = float("inf"), time.perf_counter(), 0
        while k < 3 or (k < 10 and time.perf_counter() - began < 0.05):
            t0 = time.perf_counter()
            fn()
            sync()
            best, k = min(best, time.perf_counter() - t0), k + 1
        return max(best, 1e-9)

    matmul = copy = 0.0
    if peak_size:
        n = min(peak_size, PROBE_N)
        a = torch.ones(n, n, device=device, dtype=torch_dtype)
        b = torch.ones(n, n, device=device, dtype=torch_dtype)
        flops_per_s = 2 * n**3 / fastest(lambda: a @ b)
        matmul = 2 * float(min(peak_size, 10**30)) ** 3 / (MEASURED_MARGIN * flops_per_s)
        del a, b
    if copy_bytes:
        src = torch.ones(max(1, min(copy_bytes, PROBE_BYTES) // 4), device=device, dtype=torch.float32)
        dst = torch.zeros_like(src)
        bytes_per_s = 2 * src.nbytes / fastest(lambda: dst.copy_(src))
        copy = 2 * float(max(4, min(copy_bytes, 10**30))) / (MEASURED_MARGIN * bytes_per_s)
    return matmul, copy


def _calibration_too_slow(what: str, seconds: float, how: str) -> InputError:
    return InputError(f"the calibration ({what}) would take {how} {seconds:.3g} s, more than the "
                      f"{MEASURE_BUDGET_S:g} s it may take; lower --repeats, --warmup, --peak-size or --copy-bytes, or "
                      "give --peak-flops and --bandwidth (or --hw) to skip it", "--repeats")


def interruptible(f):
    """Ctrl-C during a measurement: one line and exit status 130, nothing printed half."""
    import functools

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("qkv: measure: stopped by Ctrl-C; nothing measured", err=True)
            raise click.exceptions.Exit(130) from None

    return wrapper


def _device(device: str) -> str:
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("no CUDA device is available on this machine (use --device cpu)", "--device")
    return device


def _dtype(name: str, device: str):
    import torch

    name = name or ("bf16" if device == "cuda" else "fp32")
    if name not in TORCH_DTYPES:
        raise InputError(f"choose one of {', '.join(TORCH_DTYPES)} (got {name!r})", "--dtype")
    return name, getattr(torch, TORCH_DTYPES[name])


def machine_figures(device: str, dtype_name: str, torch_dtype, *, hw_name: str | None, peak_flops, bandwidth,
                    peak_size: int, copy_bytes: int, warmup: int, repeats: int) -> dict[str, Any]:
    """Peak FLOP/s and bandwidth: given, from a preset (GPU), or measured (CPU, or unknown GPU)."""
    import torch

    from solver.systems.chips import get_hardware

    fig: dict[str, Any] = {}
    preset = None
    if hw_name:
        preset = get_hardware(hw_name)
    elif device == "cuda":
        gpu = torch.cuda.get_device_name().lower()
        for key, name in GPU_NAMES:
            if key in gpu:
                preset = get_hardware(name)
                break
    if peak_flops is None and preset is not None and dtype_name in preset.peak_flops:
        peak_flops, fig["peak_origin"] = preset.peak(dtype_name), f"preset {preset.name} (dense)"
    if bandwidth is None and preset is not None:
        bandwidth, fig["bandwidth_origin"] = preset.hbm_bandwidth, f"preset {preset.name}"
    rounds = CALIBRATION_ROUNDS
    runs = warmup + repeats
    what = f"{rounds} rounds × {runs} runs of " + " and ".join(
        ([f"a {peak_size}×{peak_size} matmul"] if peak_flops is None else []) +
        ([f"a copy of {copy_bytes:,} bytes"] if bandwidth is None else []))
    began = time.perf_counter()
    deadline = reserve = None
    if peak_flops is None or bandwidth is None:  # the whole calibration, estimated before its tensors exist
        matmul_s, copy_s = calibration_per_run(device, torch_dtype, peak_size=peak_size if peak_flops is None else 0,
                                               copy_bytes=copy_bytes if bandwidth is None else 0)
        estimate = (matmul_s + copy_s) * runs * rounds
        if estimate > MEASURE_BUDGET_S:
            raise _calibration_too_slow(what, estimate, "at least")
        began = time.perf_counter()
        deadline = began + MEASURE_BUDGET_S  # one budget for every run of every step
        reserve = copy_s * runs  # the matmul's rounds leave the copy one round at the estimated speed

    def too_slow(first: float, n: int) -> InputError:  # after a first run: the time spent, and the rest at its pace
        return _calibration_too_slow(what, time.perf_counter() - began + first * (n * rounds - 1), "about")

    if peak_flops is None:
        n = peak_size
        a = torch.randn(n, n, device=device, dtype=torch_dtype)
        b = torch.randn(n, n, device=device, dtype=torch_dtype)
        done: list[int] = []
        t = best_time(lambda: a @ b, device, warmup, repeats, rounds, too_slow=too_slow, done=done,
                      deadline=None if deadline is None else deadline - (reserve or 0.0))
        peak_flops = 2 * n**3 / t
        fig["peak_origin"] = f"measured: {n}×{n} @ {n}×{n} matmul, fastest run of {(done or [rounds])[0]} × {repeats}"
        del a, b
    else:
        fig.setdefault("peak_origin", "given")
    if bandwidth is None:
        numel = max(1, copy_bytes // 4)
        src = torch.empty(numel, device=device, dtype=torch.float32).fill_(1.0)
        dst = torch.empty_like(src)
        done = []
        t = best_time(lambda: dst.copy_(src), device, warmup, repeats, rounds, deadline=deadline, too_slow=too_slow,
                      done=done)
        bandwidth = 2 * src.nbytes / t
        fig["bandwidth_origin"] = (f"measured: copy of {src.nbytes:,} bytes (read + write), "
                                   f"fastest run of {(done or [rounds])[0]} × {repeats}")
    else:
        fig.setdefault("bandwidth_origin", "given")
    fig.update(peak_flops=float(peak_flops), bandwidth=float(bandwidth))
    return fig


def _report(kind: str, flops: int, n_bytes, timing: dict[str, float], fig: dict[str, Any],
            extra: dict[str, Any]) -> dict[str, Any]:
    from solver.systems.roofline import bound, critical_intensity, roofline_time

    peak, bw = fig["peak_flops"], fig["bandwidth"]
    t_roof, t_c, t_m = roofline_time(flops, n_bytes, peak, bw)
    t = timing["median_s"]
    intensity = float(flops) / float(n_bytes)
    notes = {}
    for what, achieved, ref, origin in (("peak", flops / t, peak, fig.get("peak_origin", "")),
                                        ("bandwidth", float(n_bytes) / t, bw, fig.get("bandwidth_origin", ""))):
        if achieved > ref:  # a run cannot beat the machine's true peak: the reference figure is off
            notes[f"{what}_note"] = BUSY if origin.startswith("measured") else (
                f"this run beat the {'stated' if origin == 'given' else 'preset'} {what}: that figure is too low for "
                "this machine; the fraction is unreliable")
    return {
        "operation": kind, **extra, "flops": flops, "bytes": float(n_bytes), "intensity": intensity,
        "critical_intensity": critical_intensity(peak, bw), "bound": bound(intensity, critical_intensity(peak, bw)),
        "measured_s": t, "min_s": timing["min_s"], "repeats": timing["repeats"],
        "roofline_s": t_roof, "roofline_compute_s": t_c, "roofline_memory_s": t_m,
        "achieved_flops_per_s": flops / t, "fraction_of_peak": flops / t / peak,
        "achieved_bytes_per_s": float(n_bytes) / t, "fraction_of_bandwidth": float(n_bytes) / t / bw,
        "roofline_fraction": t_roof / t, **fig, **notes,
    }


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(report)
        return
    emit(f"{report['operation']}: measured {human_value('s', report['measured_s'])} (median of {report['repeats']}), "
         f"roofline {human_value('s', report['roofline_s'])} ({report['bound']}-bound)")
    for what, unit, frac, ref in (("peak", "FLOP/s", "fraction_of_peak", "peak_flops"),
                                  ("bandwidth", "bytes/s", "fraction_of_bandwidth", "bandwidth")):
        achieved = report["achieved_flops_per_s" if what == "peak" else "achieved_bytes_per_s"]
        note = report.get(f"{what}_note")
        share = f"above the {'measured ' if not note or 'calibration' in note else ''}{what}" if note else \
            f"= {report[frac]:.1%} of {what}"
        emit(f"achieved {achieved:.4g} {unit} {share} {report[ref]:.4g} ({report[f'{what}_origin']})")
        if note:
            emit(f"  {note}")
    skip = {"operation", "measured_s", "roofline_s", "bound", "achieved_flops_per_s", "fraction_of_peak",
            "peak_flops", "peak_origin", "achieved_bytes_per_s", "fraction_of_bandwidth", "bandwidth",
            "bandwidth_origin", "repeats", "peak_note", "bandwidth_note"}
    for k, v in report.items():
        if k not in skip:
            emit(f"  {k:<26} {human_value(k, v) if not isinstance(v, dict) else v}")


# ---------------------------------------------------------------------------------------
# qkv measure
# ---------------------------------------------------------------------------------------


def measure_options(f):
    opts = [
        click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True),
        click.option("--dtype", default=None, help="fp32, bf16, fp16 (default: fp32 on cpu, bf16 on cuda)."),
        click.option("--hw", "hw_name", metavar="NAME", help="Preset whose peak and bandwidth to compare with."),
        click.option("--peak-flops", type=FLOPS, default=None, help="Peak FLOP/s to compare with."),
        click.option("--bandwidth", type=BANDWIDTH, default=None, help="Bandwidth (bytes/s) to compare with."),
        click.option("--peak-size", type=INT, default=1024, show_default=True,
                     help="n of the n×n matmul that measures the peak when no preset applies."),
        click.option("--copy-bytes", type=BYTES, default=64 * 2**20, show_default=True,
                     help="Bytes copied to measure the bandwidth when no preset applies."),
        click.option("--warmup", type=click.IntRange(0, 1000), default=3, show_default=True),
        click.option("--repeats", type=click.IntRange(1, 10000), default=10, show_default=True),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@click.group()
def measure() -> None:
    """Run an operation for real with torch, time it, compare with the roofline."""
    from drills.cli.extras import require_torch

    require_torch("qkv measure")


def _element_size(dtype: str | None, device: str) -> int:
    from solver.units import dtype_bytes

    name = dtype or ("bf16" if device == "cuda" else "fp32")
    if name not in TORCH_DTYPES:
        raise InputError(f"choose one of {', '.join(TORCH_DTYPES)} (got {name!r})", "--dtype")
    return int(dtype_bytes(name))


def _fits(device: str, what: str, parts: dict[str, int], *, hw_name, peak_flops, bandwidth, peak_size: int,
          copy_bytes: int, element: int, param: str) -> None:
    """Refuse in one line, before any tensor exists, when the tensors of ``parts`` (bytes by kind)
    or the calibration buffers (a peak_size² matmul, a copy of copy_bytes) would not fit."""
    from solver.models.guard import check_run_fits, describe

    if device == "cuda":
        _device(device)
    calibrate = {}
    if peak_flops is None and not (hw_name or device == "cuda"):
        calibrate["peak matmul"] = 3 * peak_size * peak_size * element
    if bandwidth is None and not (hw_name or device == "cuda"):
        calibrate["copy"] = 2 * max(4, copy_bytes)
    if calibrate:
        check_run_fits(sum(calibrate.values()), device, "the calibration", param="--peak-size/--copy-bytes",
                       detail=describe(calibrate))
    check_run_fits(sum(parts.values()), device, what, param=param, detail=describe(parts))


def _setup(device, dtype, hw_name, peak_flops, bandwidth, peak_size, copy_bytes, warmup, repeats):
    import torch

    from solver.errors import SolverInputError

    device = _device(device)
    name, tdt = _dtype(dtype, device)
    torch.manual_seed(0)
    try:
        fig = machine_figures(device, name, tdt, hw_name=hw_name, peak_flops=peak_flops, bandwidth=bandwidth,
                              peak_size=peak_size, copy_bytes=copy_bytes, warmup=warmup, repeats=repeats)
    except SolverInputError as e:
        raise InputError(str(e.args[0]), "--hw") from e
    return device, name, tdt, fig


@measure.command("matmul")
@click.option("--batch", "-B", type=COUNT, default=512, show_default=True)
@click.option("--d-in", "-D", type=COUNT, default=1024, show_default=True)
@click.option("--d-out", "-F", type=COUNT, default=1024, show_default=True)
@click.option("--mode", type=click.Choice(["forward", "train"]), default="forward", show_default=True)
@measure_options
@interruptible
def measure_matmul(batch, d_in, d_out, mode, device, dtype, hw_name, peak_flops, bandwidth, peak_size,
                   copy_bytes, warmup, repeats, as_json):
    """Time X[B,D] @ W[D,F] (forward, or forward + both backward matmuls)."""
    import torch

    from solver.systems.roofline import matmul_bytes, matmul_flops
    from solver.units import dtype_bytes

    e = _element_size(dtype, device)
    parts = {"X": batch * d_in * e, "W": d_in * d_out * e, "Y": batch * d_out * e}
    if mode == "train":
        parts.update({"dY": batch * d_out * e, "dX": batch * d_in * e, "dW": d_in * d_out * e})
    _fits(device, f"a [{batch},{d_in}] @ [{d_in},{d_out}] matmul ({mode})", parts, hw_name=hw_name,
          peak_flops=peak_flops, bandwidth=bandwidth, peak_size=peak_size, copy_bytes=copy_bytes, element=e,
          param="--batch/--d-in/--d-out")
    device, name, tdt, fig = _setup(device, dtype, hw_name, peak_flops, bandwidth, peak_size, copy_bytes,
                                    warmup, repeats)
    check_time(matmul_flops(batch, d_in, d_out, mode), fig, warmup + repeats, device)
    x = torch.randn(batch, d_in, device=device, dtype=tdt)
    w = torch.randn(d_in, d_out, device=device, dtype=tdt)
    if mode == "forward":
        def fn():
            return x @ w
    else:
        dy = torch.randn(batch, d_out, device=device, dtype=tdt)

        def fn():
            return x @ w, dy @ w.T, x.T @ dy
    timing = time_op(fn, device, warmup, repeats, flops=matmul_flops(batch, d_in, d_out, mode), fig=fig)
    b = dtype_bytes(name)
    report = _report("matmul", matmul_flops(batch, d_in, d_out, mode), matmul_bytes(batch, d_in, d_out, b, b, mode),
                     timing, fig, {"shape": f"[{batch},{d_in}] @ [{d_in},{d_out}]", "mode": mode, "device": device,
                                   "dtype": name})
    _print(report, as_json)


@measure.command("attention")
@click.option("--batch", "-B", type=COUNT, default=4, show_default=True)
@click.option("--seq", "-T", type=COUNT, default=512, show_default=True)
@click.option("--n-heads", type=INT, default=8, show_default=True)
@click.option("--d-head", type=INT, default=64, show_default=True)
@click.option("--n-kv-heads", type=INT, default=None, help="GQA/MQA: K and V heads (repeated for the kernel).")
@click.option("--causal/--no-causal", default=False, show_default=True)
@click.option("--backend", type=click.Choice(["auto", *SDPA_BACKENDS]), default="auto", show_default=True,
              help="The SDPA backend timed: auto (torch chooses), math (materialises the scores), flash, "
                   "efficient (memory-efficient); on a GPU the peak memory is then of that backend alone.")
@measure_options
@interruptible
def measure_attention(batch, seq, n_heads, d_head, n_kv_heads, causal, backend, device, dtype, hw_name, peak_flops,
                      bandwidth, peak_size, copy_bytes, warmup, repeats, as_json):
    """Time scaled_dot_product_attention; on a GPU also the score-matrix memory per backend."""
    import torch
    import torch.nn.functional as F

    from solver.systems.roofline import attention_bytes, attention_flops
    from solver.units import dtype_bytes

    G = n_kv_heads or n_heads
    if n_heads % G:
        raise InputError(f"n_heads ({n_heads}) must be divisible by n_kv_heads ({G})", "--n-kv-heads")
    e = _element_size(dtype, device)
    parts = {"Q and output": 2 * batch * n_heads * seq * d_head * e, "K, V": 2 * batch * G * seq * d_head * e,
             "K, V repeated": (2 * batch * n_heads * seq * d_head * e) if G != n_heads else 0}
    if backend in ("flash", "efficient"):  # tiled: no score matrix, one log-sum-exp (fp32) per row instead
        parts["log-sum-exp"] = 4 * batch * n_heads * seq
    else:  # the math backend's fp32 scores and softmax (what auto may fall back to)
        from solver.counting import sdpa_math_workspace

        parts.update(sdpa_math_workspace(batch, n_heads, seq, d_head, e, causal))
    _fits(device, f"attention at B={batch} heads={n_heads} T={seq} d_head={d_head}", parts, hw_name=hw_name,
          peak_flops=peak_flops, bandwidth=bandwidth, peak_size=peak_size, copy_bytes=copy_bytes, element=e,
          param="--batch/--seq/--n-heads")
    device, name, tdt, fig = _setup(device, dtype, hw_name, peak_flops, bandwidth, peak_size, copy_bytes,
                                    warmup, repeats)
    check_time(attention_flops(batch, seq, seq, n_heads, d_head), fig, warmup + repeats, device)
    q = torch.randn(batch, n_heads, seq, d_head, device=device, dtype=tdt)
    k = torch.randn(batch, G, seq, d_head, device=device, dtype=tdt)
    v = torch.randn(batch, G, seq, d_head, device=device, dtype=tdt)

    def sdpa():
        kk = k.repeat_interleave(n_heads // G, dim=1) if G != n_heads else k
        vv = v.repeat_interleave(n_heads // G, dim=1) if G != n_heads else v
        return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal)

    if backend == "auto":
        fn = sdpa
    else:
        from torch.nn.attention import sdpa_kernel

        def fn():
            with sdpa_kernel(_sdpa_backend(backend)):
                return sdpa()

    try:
        timing = time_op(fn, device, warmup, repeats, flops=attention_flops(batch, seq, seq, n_heads, d_head),
                         fig=fig)
    except torch.cuda.OutOfMemoryError:
        raise InputError(f"the {backend} backend ran out of GPU memory at B={batch} heads={n_heads} T={seq} "
                         f"d_head={d_head}; use a smaller --seq or --batch", "--seq") from None
    except RuntimeError as e:  # no kernel of that backend for these inputs (e.g. efficient on a CPU)
        if backend == "auto":
            raise
        raise InputError(f"the {backend} backend cannot run this attention on {device} ({name}): "
                         f"{str(e).splitlines()[0][:160]}", "--backend") from None
    a = dtype_bytes(name)
    extra: dict[str, Any] = {"shape": f"B={batch} N={n_heads} G={G} T={seq} H={d_head}", "causal": causal,
                             "device": device, "dtype": name, "backend": backend,
                             "score_matrix_bytes": int(batch * n_heads * seq * seq * a)}
    if device == "cuda":
        extra["backend_peak_memory_bytes"] = _backend_memory(q, k, v, n_heads // G, causal,
                                                             None if backend == "auto" else (backend,))
    report = _report("attention", attention_flops(batch, seq, seq, n_heads, d_head),
                     attention_bytes(batch, seq, seq, n_heads, G, d_head, a), timing, fig, extra)
    report["flops_note"] = "full T×T counted (a causal kernel may skip about half)" if causal else "full T×T"
    _print(report, as_json)


def _sdpa_backend(label: str):
    from torch.nn.attention import SDPBackend

    return {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}[label]


def _backend_memory(q, k, v, group: int, causal: bool, labels: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Peak extra CUDA memory of one SDPA call with each backend of ``labels`` (default all three;
    math materialises the scores)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel

    kk = k.repeat_interleave(group, dim=1) if group > 1 else k
    vv = v.repeat_interleave(group, dim=1) if group > 1 else v
    out: dict[str, Any] = {}
    for label in labels or SDPA_BACKENDS:
        backend = _sdpa_backend(label)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        try:
            with sdpa_kernel(backend):
                o = F.scaled_dot_product_attention(q, kk, vv, is_causal=causal)
            torch.cuda.synchronize()
            out[label] = torch.cuda.max_memory_allocated() - base
            del o
        except RuntimeError as e:
            out[label] = f"unavailable: {str(e).splitlines()[0][:80]}"
    return out


@measure.command("forward")
@click.option("--batch", "-B", type=COUNT, default=2, show_default=True)
@click.option("--seq", "-T", type=COUNT, default=128, show_default=True)
@click.option("--d-model", type=INT, default=256, show_default=True)
@click.option("--n-layers", type=INT, default=2, show_default=True)
@click.option("--n-heads", type=INT, default=4, show_default=True)
@click.option("--d-ff", type=INT, default=None, help="Default 4·d_model.")
@click.option("--vocab-size", type=INT, default=1000, show_default=True)
@measure_options
@interruptible
def measure_forward(batch, seq, d_model, n_layers, n_heads, d_ff, vocab_size, device, dtype, hw_name, peak_flops,
                    bandwidth, peak_size, copy_bytes, warmup, repeats, as_json):
    """Time a forward pass of the reference decoder (solver.models) at batch × seq tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from solver.counting import matmul_flops, weights_bytes
    from solver.counting.config import ModelConfig
    from solver.errors import SolverInputError
    from solver.models import build_model
    from solver.models.guard import run_bytes

    try:
        cfg = ModelConfig(d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff or 4 * d_model,
                          vocab_size=vocab_size, max_positions=seq)
    except SolverInputError as e:
        raise InputError(str(e.args[0]), f"--{(e.param or 'd-model').replace('_', '-')}") from e
    e = _element_size(dtype, device)
    parts = run_bytes(cfg, batch, seq, e, decode=False)
    parts.pop("total")
    _fits(device, f"a forward pass of {batch} × {seq} tokens", parts, hw_name=hw_name, peak_flops=peak_flops,
          bandwidth=bandwidth, peak_size=peak_size, copy_bytes=copy_bytes, element=e,
          param="--batch/--seq/--d-model")
    device, name, tdt, fig = _setup(device, dtype, hw_name, peak_flops, bandwidth, peak_size, copy_bytes,
                                    warmup, repeats)
    check_time(matmul_flops(cfg, batch, seq, "forward").flops, fig, warmup + repeats + 1, device)
    try:
        model = build_model(cfg, device=device, dtype=name).eval()
    except SolverInputError as e:
        raise InputError(str(e.args[0]), f"--{(e.param or 'd-model').replace('_', '-')}") from e
    tokens = torch.randint(0, vocab_size, (batch, seq), device=device)
    with torch.no_grad():
        with FlopCounterMode(display=False) as counter:
            model(tokens, impl="math") if _accepts_impl(model) else model(tokens)
        counted = counter.get_total_flops()

        def fn():
            return model(tokens)

        timing = time_op(fn, device, warmup, repeats, flops=matmul_flops(cfg, batch, seq, "forward").flops,
                         fig=fig)
    flops = matmul_flops(cfg, batch, seq, "forward").flops
    n_bytes = weights_bytes(cfg, name)
    report = _report("forward", flops, n_bytes, timing, fig, {
        "model": f"decoder d={d_model} L={n_layers} heads={n_heads} d_ff={cfg.d_ff} V={vocab_size}",
        "tokens": batch * seq, "device": device, "dtype": name, "flops_counted_by_torch": counted,
        "bytes_note": "weights read once (a lower bound: activations not counted)"})
    _print(report, as_json)


def _accepts_impl(model) -> bool:
    import inspect

    return "impl" in inspect.signature(model.forward).parameters
