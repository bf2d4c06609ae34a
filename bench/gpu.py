"""Benchmark: full models and the kernels that matter on one GPU, in one run of at most 8 minutes.

    .venv/bin/python bench/gpu.py --device cuda --out DIR        # on one CUDA GPU (H100/H200)
    .venv/bin/python bench/gpu.py --device cpu --tiny --out DIR  # the same path at toy sizes (~1 min)

Writes DIR/gpu_run.json and DIR/gpu_run.md (device, driver, torch, date, every figure and its ratio
to qkv's estimate). The stages, in order of value, each with a share of the time budget
(--budget, default 400 s; a stage's unspent time passes to the next):

1. verify: ``solver.models.verify.verify`` (what ``qkv models verify --device cuda`` runs) on every
   preset that fits, dense, MoE, latent attention and sliding window first: parameters, FlopCounterMode
   FLOPs of a forward pass, a decode step and a training step (forward + backward), and the KV cache's
   bytes, each against the analytic count (exact integers). A preset whose full depth does not fit (or
   would run past verify's 120 s) is built at a reduced depth that keeps every kind of layer it has
   (dense first layers, MoE, local and global attention), as the meta path measures train FLOPs on
   1- and 2-layer slices: the counts are exact for the depth built, which the record names. An MoE
   whose fp32 weights and gradients still do not fit (DeepSeek-V3, Kimi K2 on one H200) is built with
   its experts halved until they do, which the record names too.
2. matmul: ``qkv measure matmul`` on square bf16 matmuls 1k to 16k.
3. attention: ``qkv measure attention --backend math|flash|efficient`` at 1k to 32k tokens, each
   backend's peak memory (``torch.cuda.max_memory_allocated``) against qkv's estimate; a backend
   whose estimate does not fit in the free memory is not run (the record says so).
4. forward: ``qkv measure forward`` of a 7B-sized decoder (d 4096, 32 layers, d_ff 16384, V 32000).
5. decode: one decode step of llama2-7b (bf16) at batch 1 and 32, timed, against ``qkv solve decode``;
   on a GPU also replayed as a CUDA graph (the kernels without Python's launch of each).

Every measurement is a ratio: the roofline (or ``qkv solve``) estimate ÷ the measured time, and the
achieved FLOP/s or bytes/s ÷ the preset's peak (on a CPU, or a GPU with no preset, a peak measured
here). Before each item the time it would take is estimated from the ones before it; what would pass
its stage's deadline is listed as skipped, and past --limit (default 450 s) the run stops, writes what
it has and exits. Not a test (tests/bench/test_gpu.py runs the --tiny path): run it by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from solver.models.verify import fp32_training_fits, reduced_layers  # noqa: E402 - after the path (the rules of --fit)

#: (stage, share of --budget): the deadline of a stage is the start + budget × the shares up to it.
STAGES = (("verify", 0.42), ("matmul", 0.10), ("attention", 0.22), ("forward", 0.10), ("decode", 0.16))
#: Verified first: one preset of each kind (dense, MoE, latent attention, sliding window, ...).
FIRST = ("llama2-7b", "mixtral-8x7b", "deepseek-v2-lite", "mistral-7b", "gemma2-9b", "gpt-oss-20b",
         "qwen3-30b-a3b", "transformer-base", "bert-base", "gpt2")
#: --tiny: the presets verified (shrunk to toy widths by :func:`shrink`).
TINY = ("llama2-7b", "mixtral-8x7b", "deepseek-v2-lite", "gemma2-9b", "transformer-base")

SIZES = {
    "gpu": {"verify": (1, 128), "matmul": (1024, 2048, 4096, 8192, 16384),
            "attention": {"batch": 1, "heads": 16, "d_head": 128, "seqs": (1024, 2048, 4096, 8192, 16384, 32768)},
            "forward": {"batch": 1, "seq": 2048, "d_model": 4096, "n_layers": 32, "n_heads": 32, "vocab": 32000},
            "decode": {"preset": "llama2-7b", "runs": ((1, 2048), (32, 2048)), "shrink": False}},
    "tiny": {"verify": (1, 16), "matmul": (64, 128, 256),
             "attention": {"batch": 1, "heads": 2, "d_head": 16, "seqs": (64, 128)},
             "forward": {"batch": 2, "seq": 32, "d_model": 64, "n_layers": 2, "n_heads": 4, "vocab": 256},
             "decode": {"preset": "llama2-7b", "runs": ((1, 32), (4, 32)), "shrink": True}},
}


class HardLimit(BaseException):  # not an Exception: no handler of a stage or of click swallows it
    """--limit passed: the run stops where it is and writes what it has."""


# ---- the models -----------------------------------------------------------------------------

def kinds(cfg) -> list[str]:
    """What a config exercises: dense/moe, mla, window, encoder(-decoder)."""
    out = ["moe" if cfg.is_moe else "dense"]
    if cfg.is_mla:
        out.append("latent attention")
    if cfg.sliding_window:
        out.append("sliding window")
    if cfg.arch != "decoder":
        out.append(cfg.arch)
    return out


def shrink(cfg):
    """``cfg`` at toy widths (d_model 64, 4 heads, 4 experts, vocab 256) and reduced depth: the same
    kinds of layers (--tiny), every count still exact for the config built."""
    from solver.models.verify import with_layers

    heads = 4
    group = max(1, cfg.n_heads // cfg.kv_heads)
    ch: dict[str, Any] = {"d_model": 64, "n_heads": heads, "d_ff": 96, "vocab_size": 256,
                          "n_kv_heads": None if cfg.n_kv_heads is None else max(1, heads // min(group, heads)),
                          "d_head": None if cfg.d_head is None else 16, "max_positions": min(cfg.max_positions, 64)}
    if cfg.is_moe:
        ch.update(n_experts=min(cfg.n_experts, 4), top_k=min(cfg.top_k, 2))
        if cfg.d_ff_expert is not None:
            ch["d_ff_expert"] = 32
        if cfg.d_ff_shared is not None:
            ch["d_ff_shared"] = 32
    if cfg.is_mla:
        ch.update(kv_lora_rank=32, qk_rope_head_dim=8, d_head=16)
        if cfg.q_lora_rank:
            ch["q_lora_rank"] = 32
        if cfg.v_head_dim is not None:
            ch["v_head_dim"] = 16
    if cfg.sliding_window:
        ch["sliding_window"] = 8
    if cfg.rotary_dim:
        ch["rotary_dim"] = 8
    small = cfg.replace(**ch)
    return with_layers(small, reduced_layers(small))


def verify_order(tiny: bool) -> list[str]:
    from solver.counting.presets import preset_names

    if tiny:
        return list(TINY)
    names = list(preset_names())
    return [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]


def stage_verify(run: Run) -> None:
    import solver.counting as counts
    from solver.counting.presets import get_preset
    from solver.models.verify import stack_layers, verify, verify_fitted, with_layers

    batch, seq = run.sizes["verify"]
    # the next model's time, estimated from those before it: the fastest so far, or at the lowest
    # seconds per parameter seen, whichever is more (the first model also pays torch's one-time costs)
    fastest = per_param = None
    # torch's one-time costs (FlopCounterMode's dispatch, CUDA and cuBLAS set-up) on a toy model first
    began = time.perf_counter()
    verify(shrink(get_preset("llama2-7b").config), run.device, batch=1, seq=8)
    run.stage["warmup_s"] = time.perf_counter() - began
    for name in verify_order(run.tiny):
        cfg = get_preset(name).config
        full = stack_layers(cfg)
        if run.tiny:
            cfg = shrink(cfg)
        params = counts.param_breakdown(cfg).total_with_lora
        free = run.free_bytes()
        if free is not None and not fp32_training_fits(params, free):  # it will be built at reduced depth
            params = counts.param_breakdown(with_layers(cfg, reduced_layers(cfg))).total_with_lora
        estimate = max(fastest or 0.0, (per_param or 0.0) * params)
        item: dict[str, Any] = {"name": name, "kinds": kinds(cfg), "full_layers": full}
        if not run.fits(estimate):
            run.skip(item, estimate)
            continue
        began = time.perf_counter()
        try:  # as ``qkv models verify --fit``: full, else at reduced depth, else with fewer experts
            record, built = verify_fitted(cfg, run.device, batch=batch, seq=seq, name=name)
        except Exception as e:  # noqa: BLE001 - a kernel missing: recorded, the run goes on
            run.free()
            record, built = None, cfg
            item["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if record is not None and record.error is not None:
            item["error"], record = record.error, None
        elif record is not None:
            item["layers"] = stack_layers(built)
            if built.n_experts != cfg.n_experts:
                item["experts"] = {"built": built.n_experts, "full": cfg.n_experts}
        seconds = time.perf_counter() - began
        item["seconds"] = seconds
        run.free()
        if record is None:
            item["status"] = "not built"
        else:
            item.update(status="ok" if record.ok else "MISMATCH", depth="full" if item["layers"] == full else "reduced",
                        checks=[c.to_json() for c in record.checks],
                        **{k: v for k, v in record.extra.items()})
            rate = seconds / max(1, counts.param_breakdown(built).total_with_lora)
            per_param = rate if per_param is None else min(per_param, rate)
            fastest = seconds if fastest is None else min(fastest, seconds)
        run.add(item)


# ---- the measurements through the qkv commands ------------------------------------------------

def qkv_json(args: list[str]) -> dict[str, Any]:
    """``qkv ARGS --json`` in this process (torch imported once): its JSON, or raises RuntimeError
    with its one-line error."""
    from click.testing import CliRunner

    from drills.cli import cli

    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=True)
    if result.exit_code != 0:
        text = (getattr(result, "stderr", "") or result.output or repr(result.exception)).strip()
        line = text.splitlines()[-1] if text else f"exit status {result.exit_code}"
        raise RuntimeError(line.removeprefix("qkv: error: "))
    return json.loads(result.stdout)


def figure(report: dict[str, Any]) -> dict[str, Any]:
    """The figures of a ``qkv measure`` report that the page shows."""
    keys = ("measured_s", "roofline_s", "bound", "flops", "bytes", "achieved_flops_per_s", "fraction_of_peak",
            "achieved_bytes_per_s", "fraction_of_bandwidth", "roofline_fraction", "peak_flops", "bandwidth",
            "peak_origin", "peak_note", "bandwidth_note", "repeats")
    return {k: report[k] for k in keys if k in report}


def stage_matmul(run: Run) -> None:
    last = None  # the runs of the size before: twice the size, 8 times the work (n³)
    for n in run.sizes["matmul"]:
        estimate = 8 * last if last else 0.0
        item: dict[str, Any] = {"shape": f"[{n},{n}] @ [{n},{n}]", "n": n, "dtype": run.dtype}
        if not run.fits(estimate):
            run.skip(item, estimate)
            continue
        began = time.perf_counter()
        try:
            rep = qkv_json(["measure", "matmul", "-B", str(n), "-D", str(n), "-F", str(n), *run.measure_flags()])
            item.update(status="ok", **figure(rep))
            last = run.runs_s(rep)
        except RuntimeError as e:
            item.update(status="error", error=str(e))
        item["seconds"] = time.perf_counter() - began
        run.add(item)


def attention_estimate(batch: int, heads: int, seq: int, d_head: int, element: int) -> dict[str, int]:
    """qkv's estimate of the memory one causal SDPA call allocates beyond Q, K, V, by backend: math
    as ``solver.counting.sdpa_math_workspace`` counts it (fp32 scores and softmax, what ``qkv
    measure attention`` checks before it runs); flash holds the output and one fp32 log-sum-exp per
    row; efficient the output alone (no log-sum-exp without gradients)."""
    from solver.counting import sdpa_math_workspace

    out = batch * heads * seq * d_head * element
    return {"math": sum(sdpa_math_workspace(batch, heads, seq, d_head, element, causal=True).values()),
            "flash": out + 4 * batch * heads * seq, "efficient": out}


def stage_attention(run: Run) -> None:
    a = run.sizes["attention"]
    element = 2 if run.dtype in ("bf16", "fp16") else 4
    last: dict[str, tuple[int, float]] = {}
    for seq in a["seqs"]:
        for backend in ("math", "flash", "efficient"):
            est_mem = attention_estimate(a["batch"], a["heads"], seq, a["d_head"], element)[backend]
            prev = last.get(backend)
            estimate = prev[1] * (seq / prev[0]) ** 2 if prev else 0.0
            item: dict[str, Any] = {"seq": seq, "backend": backend, "batch": a["batch"], "heads": a["heads"],
                                    "d_head": a["d_head"], "dtype": run.dtype, "causal": True,
                                    "memory_estimate_bytes": est_mem}
            free = run.free_bytes()
            inputs = 4 * a["batch"] * a["heads"] * seq * a["d_head"] * element
            if free is not None and est_mem + inputs > 0.8 * free:
                item.update(status="skipped", note=f"qkv estimates {est_mem:,} bytes; {free:,} free")
                run.add(item)
                continue
            if not run.fits(estimate):
                run.skip(item, estimate)
                continue
            began = time.perf_counter()
            try:
                rep = qkv_json(["measure", "attention", "-B", str(a["batch"]), "-T", str(seq), "--n-heads",
                                str(a["heads"]), "--d-head", str(a["d_head"]), "--causal", "--backend", backend,
                                *run.measure_flags()])
                item.update(status="ok", **figure(rep))
                peak = (rep.get("backend_peak_memory_bytes") or {}).get(backend)
                if isinstance(peak, int):
                    item.update(peak_memory_bytes=peak, memory_ratio=peak / est_mem)
                elif peak is not None:
                    item["peak_memory_note"] = peak
            except RuntimeError as e:
                status = "unavailable" if "cannot run" in str(e) else "out of memory" if "out of" in str(e) else "error"
                item.update(status=status, error=str(e))
            item["seconds"] = time.perf_counter() - began
            run.free()
            if item["status"] == "ok":
                last[backend] = (seq, run.runs_s(item))
            run.add(item)


def stage_forward(run: Run) -> None:
    f = run.sizes["forward"]
    item: dict[str, Any] = {"model": f"decoder d={f['d_model']} L={f['n_layers']} heads={f['n_heads']} "
                                     f"d_ff={4 * f['d_model']} V={f['vocab']}", "batch": f["batch"], "seq": f["seq"],
                            "dtype": run.dtype}
    if not run.fits(0.0):
        run.skip(item, 0.0)
        return
    began = time.perf_counter()
    try:
        rep = qkv_json(["measure", "forward", "-B", str(f["batch"]), "-T", str(f["seq"]), "--d-model",
                        str(f["d_model"]), "--n-layers", str(f["n_layers"]), "--n-heads", str(f["n_heads"]),
                        "--vocab-size", str(f["vocab"]), *run.measure_flags()])
        item.update(status="ok", flops_counted_by_torch=rep.get("flops_counted_by_torch"), **figure(rep))
        counted = rep.get("flops_counted_by_torch")
        if counted:
            item["flops_counted_ratio"] = counted / rep["flops"]
    except RuntimeError as e:
        item.update(status="error", error=str(e))
    item["seconds"] = time.perf_counter() - began
    run.free()
    run.add(item)


def stage_decode(run: Run) -> None:
    import torch

    from drills.cli.hw import time_op
    from solver.counting.presets import get_preset
    from solver.models import build_model
    from solver.models.attention import LayerKV
    from solver.models.transformer import KVCache

    d = run.sizes["decode"]
    cfg = get_preset(d["preset"]).config
    if d["shrink"]:
        cfg = shrink(cfg)
    if not run.fits(0.0):
        run.skip({"preset": d["preset"]}, 0.0)
        return
    try:
        model = build_model(cfg, run.device, dtype=run.dtype).eval()
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        run.add({"preset": d["preset"], "status": "error", "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"})
        return
    last = None
    import solver.counting as counts

    for batch, seq in d["runs"]:
        free = run.free_bytes()  # the cache, and its copy the step makes, in the free memory (else a shorter one)
        while free is not None and seq > 256 and \
                2.2 * counts.kv_cache_bytes_cfg(cfg, batch=batch, seq=seq, dtype=run.dtype) > 0.8 * free:
            seq //= 2
        item: dict[str, Any] = {"preset": d["preset"], "batch": batch, "context": seq, "dtype": run.dtype,
                                "layers": cfg.n_layers, "tiny": d["shrink"]}
        estimate = last or 0.0
        if not run.fits(estimate):
            run.skip(item, estimate)
            continue
        began = time.perf_counter()
        try:
            flags = ["solve", "decode", "--preset", d["preset"], "-B", str(batch), "-S", str(seq),
                     "--dtype", run.dtype]
            if d["shrink"]:  # the shrunk config, field by field over the preset
                flags += ["--d-model", str(cfg.d_model), "--n-layers", str(cfg.n_layers), "--n-heads",
                          str(cfg.n_heads), "--d-ff", str(cfg.d_ff), "--vocab-size", str(cfg.vocab_size)]
                if cfg.n_kv_heads is not None:
                    flags += ["--n-kv-heads", str(cfg.n_kv_heads)]
            flags += run.hw_flags()
            solved = qkv_json(flags)
            base = model.new_cache(batch, seq - 1)  # the state a prefill of seq - 1 tokens leaves
            token = torch.zeros(batch, 1, dtype=torch.long, device=run.device)

            def step(base=base, token=token):  # each run from the same cache (the model replaces a
                # layer's tensors, never edits them)
                cache = KVCache(self_attn=[LayerKV(layer.k, layer.v) for layer in base.self_attn],
                                length=base.length)
                with torch.no_grad():
                    return model(token, cache=cache)

            timing = time_op(step, run.device, warmup=2, repeats=10 if not run.tiny else 5)
            t = timing["median_s"]
            b = solved["breakdown"]
            item.update(status="ok", measured_s=t, solve_decode_s=solved["answer"], roofline_fraction=solved["answer"] / t,
                        bound=b["bound"], bytes=b["total_bytes"], flops=b["flops"],
                        achieved_bytes_per_s=b["total_bytes"] / t, achieved_flops_per_s=b["flops"] / t,
                        bandwidth=run.fig["bandwidth"], peak_flops=run.fig["peak_flops"],
                        fraction_of_bandwidth=b["total_bytes"] / t / run.fig["bandwidth"],
                        fraction_of_peak=b["flops"] / t / run.fig["peak_flops"],
                        kv_cache_bytes=base.nbytes(), repeats=timing["repeats"],
                        kv_cache_bytes_analytic=int(counts.kv_cache_bytes_cfg(cfg, batch=batch, seq=seq - 1,
                                                                                dtype=run.dtype)),
                        note="the reference model concatenates each layer's cache with the new position "
                             "(a copy of the cache per step) and repeats GQA heads: more bytes than the bound",
                        **moved_by_reference(b, t, run.fig["bandwidth"]))
            if run.device.startswith("cuda"):  # the same step without Python launching each kernel
                item["graph"] = graphed_timing(step, run, solved["answer"], b, repeats=10)
            base = step = None  # the cache freed before the next size
        except Exception as e:  # noqa: BLE001 - out of memory, a refusal: recorded, the run goes on
            item.update(status="error", error=f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}")
        last = item["seconds"] = time.perf_counter() - began
        run.free()
        run.add(item)
    model = None
    run.free()


def moved_by_reference(breakdown: dict[str, Any], t: float, bandwidth: float) -> dict[str, Any]:
    """The bytes the reference model's decode step moves, beside the bound's (the weights once and
    the cache once, ``qkv solve decode``): its ``torch.cat`` reads each layer's cache and writes it
    again one position longer, and attention then reads it, so the cache moves three times. The
    time at full bandwidth, and the share of it a step that took ``t`` seconds reached."""
    moved = breakdown["weight_bytes"] + 3 * breakdown["kv_bytes"]
    return {"weight_bytes": breakdown["weight_bytes"], "kv_bytes": breakdown["kv_bytes"],
            "reference_model_bytes": moved, "reference_model_bound_s": moved / bandwidth,
            "fraction_of_bandwidth_reference_model": moved / t / bandwidth}


def graphed_timing(step, run: Run, solved_s: float, breakdown: dict[str, Any], repeats: int) -> dict[str, Any]:
    """``step`` captured once as a CUDA graph and replayed: the step's kernels alone, without the
    time Python takes to launch each of them (which an eager decode step at batch 1 mostly is)."""
    import torch

    from drills.cli.hw import time_op

    graph = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graphs asks
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        t = time_op(graph.replay, run.device, warmup=2, repeats=repeats)["median_s"]
        return {"status": "ok", "measured_s": t, "roofline_fraction": solved_s / t,
                "achieved_bytes_per_s": breakdown["total_bytes"] / t, "achieved_flops_per_s": breakdown["flops"] / t,
                "fraction_of_bandwidth": breakdown["total_bytes"] / t / run.fig["bandwidth"],
                "fraction_of_peak": breakdown["flops"] / t / run.fig["peak_flops"], "bound": breakdown["bound"],
                **moved_by_reference(breakdown, t, run.fig["bandwidth"])}
    except Exception as e:  # noqa: BLE001 - a step that cannot be captured: recorded, the run goes on
        return {"status": "error", "error": f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"}
    finally:
        graph = None
        run.free()


# ---- the run -----------------------------------------------------------------------------------

class Run:
    def __init__(self, device: str, tiny: bool, budget: float, limit: float):
        self.device, self.tiny, self.budget, self.limit = device, tiny, budget, limit
        self.sizes = SIZES["tiny" if tiny else "gpu"]
        self.dtype = "fp32" if device == "cpu" else "bf16"
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + budget
        self.stage: dict[str, Any] = {}
        self.out: dict[str, Any] = {}
        self.fig: dict[str, Any] = {}
        self.hw: str | None = None

    # time
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def fits(self, estimate: float) -> bool:
        """Whether an item estimated at ``estimate`` s ends before its stage's deadline."""
        return time.perf_counter() + estimate < self.deadline

    def skip(self, item: dict[str, Any], estimate: float) -> None:
        left = self.deadline - time.perf_counter()
        item.update(status="skipped", note=f"stage budget: estimated {estimate:.3g} s, {max(left, 0):.3g} s left")
        self.add(item)

    def add(self, item: dict[str, Any]) -> None:
        self.stage["items"].append(item)
        print(f"  {self.stage['name']}: " + ", ".join(f"{k}={_short(v)}" for k, v in item.items()
                                                      if k not in ("checks", "peak_memory")), flush=True)

    # the machine
    def free(self) -> None:
        import gc

        gc.collect()
        if self.device == "cuda":
            import torch

            torch.cuda.empty_cache()

    def free_bytes(self) -> int | None:
        if self.device != "cuda":
            return None
        import torch

        return int(torch.cuda.mem_get_info()[0])

    def runs_s(self, report: dict[str, Any]) -> float:
        """The seconds of a measurement's timed and warm-up runs (its median × their number), ×1.5."""
        return 1.5 * report["measured_s"] * (report.get("repeats", 10) + (2 if self.tiny else 3))

    def hw_flags(self) -> list[str]:
        if self.hw:
            return ["--hw", self.hw]
        return ["--peak-flops", repr(self.fig["peak_flops"]), "--bandwidth", repr(self.fig["bandwidth"])]

    def measure_flags(self) -> list[str]:
        flags = ["--device", self.device, "--dtype", self.dtype]
        flags += ["--warmup", "2", "--repeats", "5"] if self.tiny else ["--warmup", "3", "--repeats", "10"]
        return flags + self.hw_flags()

    def figures(self) -> None:
        """The peak and bandwidth every ratio divides by: the GPU's preset, else measured here once."""
        import torch

        from drills.cli.hw import GPU_NAMES, machine_figures
        from solver.systems.chips import get_hardware

        if self.device == "cuda":
            gpu = torch.cuda.get_device_name().lower()
            self.hw = next((name for key, name in GPU_NAMES if key in gpu), None)
        tdt = getattr(torch, {"bf16": "bfloat16", "fp32": "float32"}[self.dtype])
        if self.hw:
            h = get_hardware(self.hw)
            self.fig = {"peak_flops": h.peak(self.dtype), "bandwidth": h.hbm_bandwidth, "origin": f"preset {h.name}"}
            return
        fig = machine_figures(self.device, self.dtype, tdt, hw_name=None, peak_flops=None, bandwidth=None,
                              peak_size=512 if self.tiny else 4096, copy_bytes=(16 if self.tiny else 256) * 2**20,
                              warmup=1, repeats=3)
        self.fig = {"peak_flops": fig["peak_flops"], "bandwidth": fig["bandwidth"],
                    "origin": f"{fig['peak_origin']}; {fig['bandwidth_origin']}"}


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    s = str(v)
    return s if len(s) < 90 else s[:87] + "..."


def device_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"device": device, "torch": torch.__version__, "python": platform.python_version(),
                            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                            "host_cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(name=torch.cuda.get_device_name(), memory_bytes=p.total_memory, cuda=torch.version.cuda,
                    capability=f"{p.major}.{p.minor}", driver=_driver())
    else:
        info.update(name=platform.processor() or platform.machine(), driver=None, threads=torch.get_num_threads())
    return info


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the CPU check of this script)")
    parser.add_argument("--out", required=True, help="folder for gpu_run.json and gpu_run.md")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds shared by the stages (default 400; --tiny 40)")
    parser.add_argument("--limit", type=float, default=None,
                        help="hard stop: past it the run writes what it has and exits (default 450; --tiny 55)")
    parser.add_argument("--stages", default=",".join(s for s, _ in STAGES), help="comma-separated subset, in order")
    args = parser.parse_args(argv)
    budget = args.budget if args.budget is not None else (40.0 if args.tiny else 400.0)
    limit = args.limit if args.limit is not None else (55.0 if args.tiny else 450.0)
    wanted = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in dict(STAGES)]
    if unknown:
        parser.error(f"unknown stage {unknown[0]!r}: choose from {', '.join(s for s, _ in STAGES)}")

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/gpu.py: no CUDA device here (torch.cuda.is_available() is False); use --device cpu --tiny",
              file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    run = Run(args.device, args.tiny, budget, limit)

    def alarm(signum, frame):
        raise HardLimit()

    previous = None
    if hasattr(signal, "SIGALRM"):
        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
    result: dict[str, Any] = {"schema": 1, "script": "bench/gpu.py", "tiny": args.tiny, "budget_s": budget,
                              "limit_s": limit, "info": device_info(args.device), "stages": []}
    stopped = None
    try:
        run.figures()
        result["reference"] = {**run.fig, "hw": run.hw, "dtype": run.dtype}
        shares = dict(STAGES)
        total = sum(shares[s] for s in wanted)
        cumulative = 0.0
        for name in wanted:
            cumulative += shares[name] / total
            run.deadline = run.t0 + budget * cumulative
            run.stage = {"name": name, "deadline_s": round(budget * cumulative, 1), "items": []}
            result["stages"].append(run.stage)
            began = time.perf_counter()
            print(f"stage {name} (until {budget * cumulative:.0f} s)", flush=True)
            try:
                STAGE_FUNCS[name](run)
            finally:
                run.stage["seconds"] = time.perf_counter() - began
    except HardLimit:
        stopped = f"stopped at the {limit:g} s limit"
        run.stage.setdefault("stopped", stopped)
    finally:
        if hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous or signal.SIG_DFL)
    result["seconds"] = run.elapsed()
    result["stopped"] = stopped
    result["summary"] = summary(result)
    with open(os.path.join(args.out, "gpu_run.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
        f.write("\n")
    with open(os.path.join(args.out, "gpu_run.md"), "w") as f:
        f.write(markdown(result))
    s = result["summary"]
    print(f"\n{s['models_ok']} of {s['models_built']} models built match exactly ({s['models_not_built']} not built, "
          f"{s['mismatches']} mismatches); {s['measured']} measurements, {s['skipped']} skipped; "
          f"{result['seconds']:.1f} s of the {budget:g} s budget{'; ' + stopped if stopped else ''}; wrote {args.out}/gpu_run.json and gpu_run.md")
    return 1 if s["mismatches"] else 0


STAGE_FUNCS = {"verify": stage_verify, "matmul": stage_matmul, "attention": stage_attention,
               "forward": stage_forward, "decode": stage_decode}


def summary(result: dict[str, Any]) -> dict[str, int]:
    items = {st["name"]: st["items"] for st in result["stages"]}
    models = items.get("verify", [])
    measured = [i for name, its in items.items() if name != "verify" for i in its if i.get("status") == "ok"]
    return {"models_built": sum(1 for m in models if m.get("status") in ("ok", "MISMATCH")),
            "models_ok": sum(1 for m in models if m.get("status") == "ok"),
            "models_not_built": sum(1 for m in models if m.get("status") == "not built"),
            "mismatches": sum(1 for m in models if m.get("status") == "MISMATCH"),
            "measured": len(measured),
            "skipped": sum(1 for its in items.values() for i in its if i.get("status") == "skipped")}


# ---- the page ----------------------------------------------------------------------------------

def _g(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if unit and abs(v) >= scale:
                return f"{v / scale:.3g} {prefix}{unit}"
        return f"{v:.3g}{' ' + unit if unit else ''}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def markdown(r: dict[str, Any]) -> str:
    info, ref = r["info"], r.get("reference", {})
    lines = [f"# qkv on {info.get('name')} ({info['device']})", "",
             f"Written by `bench/gpu.py{' --tiny' if r['tiny'] else ''}` on {info['date']}: torch {info['torch']}, "
             f"driver {info.get('driver') or '-'}, CUDA {info.get('cuda') or '-'}, Python {info['python']}; "
             f"{r['seconds']:.0f} s of a {r['budget_s']:g} s budget" + (f" ({r['stopped']})" if r.get("stopped") else "")
             + ".", "",
             f"Ratios divide by {ref.get('origin', '-')}: peak {_g(ref.get('peak_flops'), 'FLOP/s')} ({ref.get('dtype')}), "
             f"bandwidth {_g(ref.get('bandwidth'), 'B/s')}. *roofline ÷ measured* is qkv's estimate over the time "
             "measured (1 = the estimate was met).", ""]
    for st in r["stages"]:
        lines += [f"## {st['name']} ({st.get('seconds', 0):.1f} s)", ""]
        if st.get("stopped"):
            lines += [f"**{st['stopped'].capitalize()}**: the items after the last one listed did not run.", ""]
        lines += PAGES[st["name"]](st["items"]) + [""]
    return "\n".join(lines)


def _verify_page(items) -> list[str]:
    out = ["| model | kinds | layers built | status | params | FLOPs fwd / decode / train | KV bytes | s |",
           "|---|---|---|---|---|---|---|---|"]
    for m in items:
        checks = {c["quantity"]: c for c in m.get("checks", [])}

        def cell(q, checks=checks):
            c = checks.get(q)
            return "-" if c is None else (f"{c['measured']:,}" if c["ok"] else f"{c['measured']:,} ≠ {c['analytic']:,}")

        layers = m.get("layers") or {}
        built = ", ".join(f"{k} {v}/{m['full_layers'][k]}" for k, v in layers.items()) or "-"
        if m.get("experts"):
            built += f", experts {m['experts']['built']}/{m['experts']['full']}"
        flops = " / ".join(cell(f"flops[{q}]") for q in ("forward", "decode", "train"))
        status = m["status"] + (f": {m.get('error') or m.get('note')}" if m["status"] in ("not built", "skipped") else "")
        out.append(f"| {m['name']} | {', '.join(m['kinds'])} | {built} | {status} | {cell('params')} | {flops} | "
                   f"{cell('kv_cache_bytes')} | {_g(m.get('seconds'))} |")
    return out


def _measure_row(i, label) -> str:
    if i["status"] != "ok":
        return f"| {label} | {i['status']}: {i.get('error') or i.get('note')} | | | | | |"
    return (f"| {label} | {_g(i['measured_s'], 's')} | {_g(i.get('roofline_s', i.get('solve_decode_s')), 's')} | "
            f"{i['roofline_fraction']:.3g} | {_g(i['achieved_flops_per_s'], 'FLOP/s')} ({_pct(i['fraction_of_peak'])}) | "
            f"{_g(i['achieved_bytes_per_s'], 'B/s')} ({_pct(i['fraction_of_bandwidth'])}) | {i.get('bound', '-')} |")


HEAD = ["| what | measured | roofline | roofline ÷ measured | achieved FLOP/s (of peak) | achieved bytes/s (of bandwidth) "
        "| bound |", "|---|---|---|---|---|---|---|"]


def _matmul_page(items) -> list[str]:
    return HEAD + [_measure_row(i, f"{i['shape']} {i['dtype']}") for i in items]


def _attention_page(items) -> list[str]:
    out = HEAD + [_measure_row(i, f"T={i['seq']} {i['backend']}") for i in items]
    out += ["", "Peak memory of one call beyond Q, K, V against qkv's estimate (math: "
                "`solver.counting.sdpa_math_workspace`, fp32 scores and softmax, 9 bytes per score; flash: the "
                "output and a log-sum-exp per row; efficient: the output):", "",
            "| T | backend | estimate | measured | measured ÷ estimate |", "|---|---|---|---|---|"]
    for i in items:
        if i["status"] == "ok" or i.get("memory_estimate_bytes"):
            out.append(f"| {i['seq']} | {i['backend']} | {i['memory_estimate_bytes']:,} | "
                       f"{_g(i.get('peak_memory_bytes')) if 'peak_memory_bytes' in i else i.get('peak_memory_note', '-')} | "
                       f"{_g(i.get('memory_ratio'))} |")
    return out


def _forward_page(items) -> list[str]:
    out = HEAD + [_measure_row(i, f"{i['model']} B={i['batch']} T={i['seq']}") for i in items]
    for i in items:
        if i.get("flops_counted_ratio"):
            out += ["", f"FlopCounterMode counted {i['flops_counted_by_torch']:,} FLOPs, "
                        f"{i['flops_counted_ratio']:.4f} × the analytic {i['flops']:,}."]
    return out


def _decode_page(items) -> list[str]:
    out = [HEAD[0].replace("| roofline |", "| qkv solve decode |"), HEAD[1]]
    for i in items:
        label = (f"{i['preset']}{' (toy widths)' if i.get('tiny') else ''} ({i.get('layers', '-')} layers) "
                 f"B={i.get('batch')} context {i.get('context')}")
        out.append(_measure_row(i, label))
        if i.get("graph"):
            out.append(_measure_row({**i, **i["graph"]}, label + ", replayed as a CUDA graph"))
    notes = {i["note"] for i in items if i.get("status") == "ok" and i.get("note")}
    out += [""] + sorted(notes) if notes else []
    for i in items:
        if i.get("status") == "ok" and "reference_model_bytes" in i:
            graph = i.get("graph") or {}
            out += ["", f"B={i['batch']}: the reference model moves {_g(float(i['reference_model_bytes']), 'B')} a step (the "
                        f"weights, {_g(float(i['weight_bytes']), 'B')}, and the cache, {_g(float(i['kv_bytes']), 'B')}, three times: "
                        f"read and written again by torch.cat, then read by attention), "
                        f"{_g(i['reference_model_bound_s'], 's')} at full bandwidth: eager "
                        f"{_pct(i['fraction_of_bandwidth_reference_model'])} of the bandwidth on those bytes"
                        + (f", replayed as a CUDA graph {_pct(graph['fraction_of_bandwidth_reference_model'])}"
                           if graph.get("status") == "ok" else "") + "."]
    return out


PAGES = {"verify": _verify_page, "matmul": _matmul_page, "attention": _attention_page, "forward": _forward_page,
         "decode": _decode_page}


if __name__ == "__main__":
    sys.exit(main())
