"""Every registered formula gives the same answer through ``qkv calc`` and through the ``qkv solve``
command its registry entry names, for drawn inputs (hypothesis); and the registry's data is
whole (every input has a unit or a kind, every convention a default among its choices)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from drills.cli import SOLVE_COMMANDS, cli
from solver.registry import formulas
from solver.registry.calc import Array, Evaluator, Record

MODELS = ["gpt2", "llama2-7b", "mistral-7b", "mixtral-8x7b", "deepseek-v2-lite", "gemma2-9b", "qwen2.5-7b"]
DTYPES = ["bf16", "fp16", "fp8", "fp32", "int8"]


def solve(*args: str, key: str | None = None) -> float:
    res = CliRunner().invoke(cli, ["solve", *args, "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    return float(d["answer"] if key is None else d["breakdown"][key])


def calc(expr: str) -> float:
    ev = Evaluator()
    return float(ev.quantity(ev.run(expr)).magnitude)


def solve_json(*args: str):
    res = CliRunner().invoke(cli, ["solve", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def flat(v) -> list[float]:
    return [x for r in v for x in flat(r)] if isinstance(v, list) else [float(v)]


def calc_array(expr: str) -> list[float]:
    """A vector or matrix answer of calc, flat (a scalar answer as one entry)."""
    ev = Evaluator()
    v = ev.run(expr)
    if isinstance(v, Record) and v.primary in v.fields:
        v = v.fields[v.primary]
    if isinstance(v, Array):
        return [float(x) for x in v.values]
    return [float(ev.quantity(v).magnitude)]


# each adapter: a strategy of inputs -> (calc expression, solve arguments); calc answers in base units
sizes = st.integers(1, 2**34)
ranks = st.integers(2, 64)
links = st.integers(10**9, 10**12)
lat = st.sampled_from([0, 1e-6, 5e-6])


def _collective(op):
    @st.composite
    def draw(d):
        s, n, b, a = d(sizes), d(ranks), d(links), d(lat)
        ring = d(st.sampled_from(["unidirectional", "bidirectional"]))
        factor = d(st.sampled_from(["exact", "asymptotic"]))
        name = op.replace("-", "_")
        expr = f"{name}({s} B, ranks={n}, link={b} B/s, latency={a!r} s, ring={ring}, factor={factor})"
        args = ["collective", "--op", op] if op != "all-reduce" else ["allreduce"]
        args += ["--size", str(s), "--ranks", str(n), "--link-bandwidth", str(b), "--latency", repr(a), "--ring", ring]
        return expr, args + (["--asymptotic"] if factor == "asymptotic" else [])
    return draw()


@st.composite
def _all_to_all(d):
    topology = d(st.sampled_from(["switch", "ring", "torus"]))
    s, b = d(sizes), d(links)
    if topology == "torus":
        shape = d(st.lists(st.integers(2, 8), min_size=2, max_size=3))
        n = 1
        for k in shape:
            n *= k
        return (f"all_to_all({s} B, ranks={n}, link={b} B/s, topology=torus, torus={shape})",
                ["collective", "--op", "all-to-all", "--size", str(s), "--ranks", str(n), "--link-bandwidth", str(b),
                 "--topology", "torus", "--torus", "x".join(map(str, shape))])
    n = d(ranks)
    ring = "unidirectional" if topology == "switch" else d(st.sampled_from(["unidirectional", "bidirectional"]))
    return (f"all_to_all({s} B, ranks={n}, link={b} B/s, topology={topology}, ring={ring})",
            ["collective", "--op", "all-to-all", "--size", str(s), "--ranks", str(n), "--link-bandwidth", str(b),
             "--topology", topology, "--ring", ring])


@st.composite
def _model_count(d, name):
    m = d(st.sampled_from(MODELS))
    if name == "params":
        return f"params({m})", ["params", "--preset", m]
    dt = d(st.sampled_from(DTYPES))
    if name == "weights":
        return f"weights({m}, dtype={dt})", ["memory", "--preset", m, "--what", "weights", "--dtype", dt]
    s, b = d(st.integers(1, 32768)), d(st.integers(1, 64))
    if name == "kv_cache":
        return (f"kv_cache({m}, seq={s}, batch={b}, dtype={dt})",
                ["memory", "--preset", m, "--what", "kv-cache", "--seq", str(s), "--batch", str(b), "--dtype", dt])
    return f"flops({m}, seq={s}, batch={b})", ["flops", "--preset", m, "--seq", str(s), "--batch", str(b)]


@st.composite
def _train(d):
    N, D = d(st.integers(10**6, 10**12)), d(st.integers(10**6, 10**13))
    rec = d(st.sampled_from(["none", "full"]))
    if d(st.booleans()):
        return (f"train(params={N}, tokens={D}, recompute={rec})",
                ["train", "-N", str(N), "-D", str(D), "--recompute", rec])
    chips, peak, mfu = d(st.integers(1, 10**5)), d(st.integers(10**12, 10**16)), d(st.sampled_from([0.2, 0.35, 0.5]))
    return (f"train(params={N}, tokens={D}, chips={chips}, peak={peak} FLOP/s, mfu={mfu}, recompute={rec}).time -> s",
            ["train", "-N", str(N), "-D", str(D), "--recompute", rec, "--chips", str(chips), "--peak-flops", str(peak),
             "--mfu", str(mfu)], "days")


@st.composite
def _matmul(d):
    B, D, F = d(st.integers(1, 8192)), d(st.integers(1, 16384)), d(st.integers(1, 16384))
    act = d(st.sampled_from(["read", "resident"]))
    dt = d(st.sampled_from(["bf16", "fp8", "fp32"]))
    peak, bw = d(st.integers(10**12, 10**16)), d(st.integers(10**11, 10**13))
    return (f"matmul({B}, {D}, {F}, dtype={dt}, peak={peak} FLOP/s, bandwidth={bw} B/s, activations={act})",
            ["matmul", "-B", str(B), "-D", str(D), "-F", str(F), "--dtype", dt, "--peak-flops", str(peak),
             "--bandwidth", str(bw), "--activations", act])


@st.composite
def _moe(d):
    T, dm, k, ep = d(st.integers(1, 65536)), d(st.integers(1, 8192)), d(st.integers(1, 8)), d(st.integers(1, 64))
    dt, ct = d(st.sampled_from(DTYPES)), d(st.sampled_from(DTYPES))
    return (f"moe_all_to_all({T}, {dm}, {k}, {ep}, dtype={dt}, combine_dtype={ct})",
            ["moe-all-to-all", "--tokens", str(T), "--d-model", str(dm), "--top-k", str(k), "--ep", str(ep),
             "--dtype", dt, "--combine-dtype", ct])


@st.composite
def _transfer(d):
    s, b, a = d(sizes), d(links), d(lat)
    return (f"transfer({s} B, link={b} B/s, latency={a!r} s)",
            ["transfer", "--size", str(s), "--link", f"{b}B/s", "--latency", f"{a!r}s"])


peaks = st.integers(10**12, 10**16)
rings = st.sampled_from(["bidirectional", "unidirectional"])


@st.composite
def _dp_batch(d):
    C, b, axes, ring = d(peaks), d(links), d(st.integers(1, 3)), d(rings)
    X, B = d(st.integers(1, 10**5)), d(st.integers(1, 10**8))
    strategy = d(st.sampled_from(["dp", "fsdp"]))
    k = d(st.integers(1, 8))
    E, n = d(st.integers(k, 256)), d(st.integers(2, 64))
    out = d(st.sampled_from(["", ".ratio", ".max_chips"]))
    key = {"": None, ".ratio": "ratio", ".max_chips": "max_chips"}[out]
    return (f"dp_batch(peak={C} FLOP/s, link={b} B/s, axes={axes}, chips={X}, batch={B}, experts={E}, top_k={k}, "
            f"ring_ranks={n}, strategy={strategy}, ring={ring}){out}",
            ["dp-batch", "--peak", str(C), "--link", f"{b}B/s", "--axes", str(axes), "--chips", str(X), "--batch", str(B),
             "--experts", str(E), "--top-k", str(k), "--ring-ranks", str(n), "--strategy", strategy, "--ring", ring], key)


@st.composite
def _ep_d_ff(d):
    Z, k, C, b, g = d(st.integers(1, 2048)), d(st.integers(1, 16)), d(peaks), d(links), d(st.sampled_from([4, 8, 72]))
    return (f"ep_d_ff({Z}, {k}, peak={C} FLOP/s, link={b} B/s, gpus_per_node={g})",
            ["ep-d-ff", "-Z", str(Z), "-k", str(k), "--peak", str(C), "--link", str(b), "--gpus-per-node", str(g)])


@st.composite
def _tp_max(d):
    F, C, b, axes, ring = d(st.integers(1, 10**6)), d(peaks), d(links), d(st.integers(1, 3)), d(rings)
    return (f"tp_max({F}, peak={C} FLOP/s, link={b} B/s, axes={axes}, ring={ring})",
            ["tp-max", "-F", str(F), "--peak", str(C), "--link", str(b), "--axes", str(axes), "--ring", ring])


@st.composite
def _fsdp_tp_batch(d):
    F, C, b, mx, my, ring = (d(st.integers(1, 10**6)), d(peaks), d(links), d(st.integers(1, 3)), d(st.integers(1, 3)),
                             d(rings))
    return (f"fsdp_tp_batch({F}, peak={C} FLOP/s, link={b} B/s, mx={mx}, my={my}, ring={ring})",
            ["fsdp-tp-batch", "-F", str(F), "--peak", str(C), "--link", str(b), "--mx", str(mx), "--my", str(my),
             "--ring", ring])


@st.composite
def _fsdp_opt(d):
    B, F, N, mx, my = (d(st.integers(1, 10**8)), d(st.integers(1, 10**6)), d(st.integers(1, 10**5)),
                       d(st.integers(1, 3)), d(st.integers(1, 3)))
    return (f"fsdp_opt({B}, {F}, {N}, mx={mx}, my={my})",
            ["fsdp-opt", "-B", str(B), "-F", str(F), "-N", str(N), "--mx", str(mx), "--my", str(my)])


@st.composite
def _tp_decode_max(d):
    F, B, hbm, b, ring = d(st.integers(1, 10**6)), d(st.integers(1, 4096)), d(st.integers(10**11, 10**13)), d(links), \
        d(rings)
    return (f"tp_decode_max({F}, {B}, bandwidth={hbm} B/s, link={b} B/s, ring={ring})",
            ["tp-decode-max", "-F", str(F), "-B", str(B), "--bandwidth", str(hbm), "--link", str(b), "--ring", ring])


@st.composite
def _decode_batch(d):
    chip = d(st.sampled_from(["h100", "tpu-v5e", "mi300x", "b200"]))
    wd = d(st.sampled_from(["bf16", "int8", "fp8", "int4"]))
    k = d(st.integers(1, 8))
    E = d(st.integers(k, 256))
    return (f"decode_batch(chip={chip}, weight_dtype={wd}, experts={E}, top_k={k})",
            ["decode-batch", "--chip", chip, "--weight-dtype", wd, "--experts", str(E), "--top-k", str(k)])


@st.composite
def _decode_latency(d):
    N, B, S, X = d(st.integers(10**6, 10**12)), d(st.integers(1, 4096)), d(st.integers(0, 131072)), d(st.integers(0, 2**20))
    Na = d(st.integers(1, N))
    kv, step, n = d(st.sampled_from(["counted", "ignored"])), d(st.sampled_from(["max", "kv-plus-max"])), d(st.integers(1, 64))
    wd = d(st.sampled_from(["bf16", "int8", "int4"]))
    chip, flags = d(st.sampled_from([("chip=h100", ["--chip", "h100"]), ("chip=tpu-v5e", ["--chip", "tpu-v5e"]),
                                     ("peak=1e15 FLOP/s, bandwidth=3e12 B/s", ["--peak", "1e15", "--bandwidth", "3e12"])]))
    out = d(st.sampled_from([("", None), (".throughput", "tokens_per_second"), (".max_throughput", "max_throughput")]))
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        return (f"decode_latency(model={m}, batch={B}, context={S}, chips={n}, weight_dtype={wd}, {chip}, kv={kv}, "
                f"step={step.replace('-', '_')}){out[0]}",
                ["decode-latency", "--preset", m, "-B", str(B), "-S", str(S), "--chips", str(n), "--weight-dtype", wd,
                 *flags, "--kv", kv, "--step", step], out[1])
    return (f"decode_latency({N}, {B}, active_params={Na}, context={S}, kv_per_token={X} B, chips={n}, weight_dtype={wd}, "
            f"{chip}, kv={kv}, step={step.replace('-', '_')}){out[0]}",
            ["decode-latency", "-N", str(N), "-B", str(B), "--active-params", str(Na), "-S", str(S), "--kv-per-token",
             str(X), "--chips", str(n), "--weight-dtype", wd, *flags, "--kv", kv, "--step", step], out[1])


@st.composite
def _kv_budget(d):
    hbm, n = d(st.integers(10**9, 2 * 10**11)), d(st.integers(1, 64))
    w = d(st.integers(0, hbm * n - 1))
    kv, ctx = d(st.integers(1, 10**7)), d(st.integers(1, 10**6))
    return (f"kv_budget({w} B, {kv} B, hbm={hbm} B, chips={n}, context={ctx}).max_batch",
            ["kv-budget", "--weights", str(w), "--kv-per-token", str(kv), "--hbm", str(hbm), "--chips", str(n),
             "--context", str(ctx)], "max_batch")


@st.composite
def _sharded_matmul(d):
    i, j, k = d(st.integers(1, 10**5)), d(st.integers(1, 10**5)), d(st.integers(1, 10**5))
    case = d(st.sampled_from(["none", "one", "both", "both-scatter", "same-axis"]))
    dt, b, ring = d(st.sampled_from(DTYPES)), d(links), d(rings)
    return (f"sharded_matmul({i}, {j}, {k}, dtype={dt}, link={b} B/s, case={case.replace('-', '_')}, ring={ring}).time",
            ["sharded-matmul", "-I", str(i), "-J", str(j), "-K", str(k), "--dtype", dt, "--link", str(b), "--case", case,
             "--ring", ring], "time_s")


@st.composite
def _weight_stationary(d):
    B, D, F, N = d(st.integers(1, 4096)), d(st.integers(1, 65536)), d(st.integers(1, 262144)), d(st.integers(1, 4096))
    x = d(st.one_of(st.none(), st.integers(1, N)))
    dt, b, ring = d(st.sampled_from(DTYPES)), d(links), d(rings)
    out = d(st.sampled_from([("", None), (".time_1d", "time_1d_s"), (".time_2d_opt", "time_2d_opt_s"),
                             (".crossover_chips", "crossover_chips")]))
    xs, xf = ("", []) if x is None else (f", x={x}", ["-X", str(x)])
    return (f"weight_stationary({B}, {D}, {F}, {N}{xs}, dtype={dt}, link={b} B/s, ring={ring}){out[0]}",
            ["weight-stationary", "-B", str(B), "-D", str(D), "-F", str(F), "-N", str(N), *xf, "--dtype", dt, "--link",
             str(b), "--ring", ring], out[1])


@st.composite
def _gpu_peak(d):
    sms, fpc, clock, tc = d(st.integers(1, 256)), d(st.integers(1, 8192)), d(st.integers(10**8, 3 * 10**9)), \
        d(st.integers(1, 8))
    chip = d(st.sampled_from(["h100", "a100-80gb", "b200", "mi300x"]))
    return (f"gpu_peak({sms}, {fpc}, clock={clock} Hz, tensor_cores={tc}, chip={chip}).vs_datasheet",
            ["gpu-peak", "--sms", str(sms), "--flops-per-cycle", str(fpc), "--clock", f"{clock}Hz", "--tensor-cores",
             str(tc), "--chip", chip], "vs_datasheet")


@st.composite
def _elementwise(d):
    n, f, i, o = d(st.integers(1, 2**34)), d(st.integers(0, 64)), d(st.integers(0, 4)), d(st.integers(1, 4))
    dt, peak, bw = d(st.sampled_from(DTYPES)), d(peaks), d(st.integers(10**11, 10**13))
    return (f"elementwise({n}, flops_per_element={f}, inputs={i}, outputs={o}, dtype={dt}, peak={peak} FLOP/s, "
            f"bandwidth={bw} B/s).time",
            ["elementwise", "-n", str(n), "-f", str(f), "--inputs", str(i), "--outputs", str(o), "--dtype", dt,
             "--peak", str(peak), "--bandwidth", str(bw)], "time_s")


@st.composite
def _reduction(d):
    rows, cols, f = d(st.integers(1, 2**20)), d(st.integers(1, 2**20)), d(st.integers(1, 8))
    chip, dt = d(st.sampled_from(["h100", "tpu-v5e", "b200"])), "bf16"
    return (f"reduction({rows}, {cols}, f={f}, chip={chip}, dtype={dt}).time",
            ["reduction", "--rows", str(rows), "--cols", str(cols), "-f", str(f), "--chip", chip, "--dtype", dt],
            "time_s")


@st.composite
def _torus(d):
    shape = d(st.lists(st.integers(1, 32), min_size=1, max_size=3))
    wrap, b, per = d(st.sampled_from(["yes", "no"])), d(links), d(st.sampled_from([4, 8]))
    # a slice whose longest side is odd has no straight bisection: neither calc nor solve gives one (test_parts)
    even = max(shape) == 1 or max(shape) % 2 == 0
    out = d(st.sampled_from(["", ".hosts", ".links", ".diameter", *([".bisection"] if even else [])]))
    key = {"": None, ".hosts": "hosts", ".links": "links", ".diameter": "diameter",
           ".bisection": "bisection_bandwidth"}[out]
    return (f"torus({shape}, link={b} B/s, chips_per_host={per}, wraparound={wrap}){out}",
            ["torus", "--shape", "x".join(map(str, shape)), "--link", str(b), "--chips-per-host", str(per),
             "--wraparound", wrap], key)


@st.composite
def _pod(d):
    n, chip = d(st.integers(1, 10**5)), d(st.sampled_from(["h100", "tpu-v5p", "tpu-v5e", "gb200", "mi300x"]))
    return f"pod({n}, chip={chip})", ["pod", "--chips", str(n), "--chip", chip]


@st.composite
def _node(d):
    name = d(st.sampled_from(["hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "dgx-h100", "nvl72"]))
    figures = "hsm" if name in ("hgx-h100", "hgx-b200", "gb200-nvl72") and d(st.booleans()) else "preset"
    out = d(st.sampled_from([("", None), (".egress", "egress_bandwidth"), (".alpha_inter", "alpha_inter"),
                             (".host_load_time", "host_load_time_s"), (".flops", "peak_flops")]))
    dt = d(st.sampled_from(["bf16", "fp8"]))
    return (f"node(\"{name}\", dtype={dt}, figures={figures}){out[0]}",
            ["node", "--node", name, "--dtype", dt, "--figures", figures], out[1])


@st.composite
def _two_level(d):
    S, g, m, a, b = d(sizes), d(st.integers(1, 16)), d(st.integers(1, 512)), d(links), d(links)
    if d(st.booleans()):
        node = d(st.sampled_from(["hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72"]))
        return (f"two_level_all_reduce({S} B, nodes={m}, node=\"{node}\")",
                ["two-level-all-reduce", "--size", str(S), "-m", str(m), "--node", node])
    return (f"two_level_all_reduce({S} B, {g}, {m}, {a} B/s, {b} B/s)",
            ["two-level-all-reduce", "--size", str(S), "-g", str(g), "-m", str(m), "--intra", str(a), "--inter",
             str(b)])


@st.composite
def _train_memory(d):
    N, n = d(st.integers(1, 10**13)), d(st.integers(1, 10**5))
    recipe = d(st.sampled_from(["bf16-adam", "mixed-fp32-master", "fp32-adam", "adam-8bit", "sgd-momentum",
                                "fp32-grads"]))
    if d(st.booleans()):
        sq, b, h, a, L = d(st.integers(1, 32768)), d(st.integers(1, 64)), d(st.integers(1, 16384)), \
            d(st.integers(1, 128)), d(st.integers(1, 128))
        pol = d(st.sampled_from(["none", "selective", "full"]))
        return (f"train_memory({N}, chips={n}, recipe={recipe.replace('-', '_')}, seq={sq}, micro_batch={b}, "
                f"d_model={h}, heads={a}, layers={L}, checkpointing={pol}).per_chip_with_activations",
                ["train-memory", "-N", str(N), "--chips", str(n), "--recipe", recipe, "--seq", str(sq), "-b", str(b),
                 "--d-model", str(h), "-a", str(a), "-L", str(L), "--checkpointing", pol], "per_chip_with_activations_bytes")
    return (f"train_memory({N}, chips={n}, recipe={recipe.replace('-', '_')}).per_chip",
            ["train-memory", "-N", str(N), "--chips", str(n), "--recipe", recipe], "per_chip")


@st.composite
def _chip_figures(d):
    figures = d(st.sampled_from(["preset", "hsm"]))
    chip = d(st.sampled_from(["tpu-v4", "tpu-v5p", "tpu-v5e", "tpu-v6e"] + (["h100", "b200", "a100-80gb", "mi300x"]
                                                                           if figures == "preset" else [])))
    out = d(st.sampled_from(["peak", "hbm", "hbm_bandwidth", "link", "link_bidi", "link_chip"]))
    return (f"chip_figures({chip}, figures={figures}).{out}",
            ["chip-figures", "--chip", chip, "--figures", figures], out)


@st.composite
def _pipeline_batch(d):
    p, f = d(st.integers(1, 64)), d(st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.25, 0.5]))
    schedule = d(st.sampled_from(["1f1b", "gpipe", "interleaved"]))
    v = d(st.integers(1, 4)) if schedule == "interleaved" else 1
    mb, dp = d(st.integers(1, 8192)), d(st.integers(1, 256))
    return (f"pipeline_batch({p}, {f}, chunks={v}, microbatch={mb}, dp={dp}, schedule=\"{schedule}\").batch",
            ["pipeline-batch", "-p", str(p), "-f", str(f), "-v", str(v), "--microbatch", str(mb), "--dp", str(dp),
             "--schedule", schedule], "batch")


@st.composite
def _warps_resident(d):
    regs, wpb = d(st.integers(1, 255)), d(st.integers(1, 32))
    smem_sm, smem_b = d(st.integers(1, 256 * 1024)), d(st.integers(1, 256 * 1024))
    return (f"warps_resident({regs}, warps_per_block={wpb}, smem_per_block={smem_b} B, smem_per_sm={smem_sm} B)",
            ["warps-resident", "--registers-per-thread", str(regs), "--warps-per-block", str(wpb), "--smem-per-block",
             str(smem_b), "--smem-per-sm", str(smem_sm)])


ADAPTERS = {
    "warps_resident": _warps_resident(),
    "pipeline_batch": _pipeline_batch(),
    "chip_figures": _chip_figures(),
    "gpu_peak": _gpu_peak(), "elementwise": _elementwise(), "reduction": _reduction(), "torus": _torus(),
    "pod": _pod(), "two_level_all_reduce": _two_level(), "node": _node(), "train_memory": _train_memory(),
    "dp_batch": _dp_batch(), "ep_d_ff": _ep_d_ff(), "tp_max": _tp_max(), "fsdp_tp_batch": _fsdp_tp_batch(), "fsdp_opt": _fsdp_opt(),
    "tp_decode_max": _tp_decode_max(), "decode_batch": _decode_batch(), "decode_latency": _decode_latency(), "kv_budget": _kv_budget(),
    "sharded_matmul": _sharded_matmul(), "weight_stationary": _weight_stationary(),
    "params": _model_count("params"), "weights": _model_count("weights"), "kv_cache": _model_count("kv_cache"),
    "flops": _model_count("flops"), "all_gather": _collective("all-gather"),
    "reduce_scatter": _collective("reduce-scatter"), "all_reduce": _collective("all-reduce"),
    "all_to_all": _all_to_all(), "transfer": _transfer(), "train": _train(), "matmul": _matmul(),
    "moe_all_to_all": _moe(),
}


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): roofline, attention-flops, prefill, decode, chips, zero, activations,
# tp, tp-matmul, pipeline, dp-comm, ... (a block of its own)
# ---------------------------------------------------------------------------------------

CHIPS = ["h100-sxm", "a100-80gb", "h200", "tpu-v5e", "mi300x", "b200"]
peaks = st.integers(10**12, 10**16)
bandwidths = st.integers(10**11, 10**13)


@st.composite
def _chip_args(d, bandwidth=True):
    """(calc keyword text, solve flags) of a chip: a preset, or its figures given by hand."""
    if d(st.booleans()):
        c = d(st.sampled_from(CHIPS))
        return f", chip={c}", ["--hw", c]
    p, b = d(peaks), d(bandwidths)
    if not bandwidth:
        return f", peak={p} FLOP/s", ["--peak-flops", str(p)]
    return f", peak={p} FLOP/s, bandwidth={b} B/s", ["--peak-flops", str(p), "--bandwidth", str(b)]


@st.composite
def _roofline(d):
    chip, flags = d(_chip_args())
    wdt = d(st.sampled_from(["bf16", "fp8", "int4"]))
    key = d(st.sampled_from([None, "critical_batch"]))
    expr = f"roofline(weight_dtype={wdt}{chip})" + (f".{key}" if key else "")
    return (expr, ["roofline", "--weight-dtype", wdt, *flags]) + ((key,) if key else ())


@st.composite
def _attention_flops(d):
    B, T, G = d(st.integers(1, 64)), d(st.integers(1, 32768)), d(st.sampled_from([1, 2, 4, 8]))
    N, H = G * d(st.integers(1, 16)), d(st.sampled_from([64, 80, 128]))
    mode, ffn = d(st.sampled_from(["prefill", "decode"])), d(st.sampled_from(["gelu", "relu", "swiglu"]))
    key = d(st.sampled_from([None, "bytes", "crossover_seq_all_matmuls", "time_s"]))
    name = {"crossover_seq_all_matmuls": "crossover_all", "time_s": "time"}.get(key, key)
    chip, flags = d(_chip_args()) if key == "time_s" else ("", [])
    expr = (f"attention_flops({B}, {T}, {N}, {H}, n_kv_heads={G}, mode={mode}, ffn={ffn}{chip})"
            + (f".{name}" if key else ""))
    args = ["attention-flops", "-B", str(B), "--seq", str(T), "--n-heads", str(N), "--d-head", str(H), "--n-kv-heads",
            str(G), "--mode", mode, "--ffn", ffn, *flags]
    return (expr, args) + ((key,) if key else ())


@st.composite
def _prefill(d):
    T, chips, mfu = d(st.integers(1, 32768)), d(st.integers(1, 64)), d(st.sampled_from([0.3, 0.5, 1]))
    chip, flags = d(_chip_args(bandwidth=False))
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        return (f"prefill(model={m}, tokens={T}, chips={chips}, mfu={mfu}{chip})",
                ["prefill", "--preset", m, "-T", str(T), "--chips", str(chips), "--mfu", str(mfu), *flags])
    N = d(st.integers(10**6, 10**12))
    return (f"prefill({N}, {T}, chips={chips}, mfu={mfu}{chip})",
            ["prefill", "-N", str(N), "-T", str(T), "--chips", str(chips), "--mfu", str(mfu), *flags])


@st.composite
def _decode(d):
    N, B, S, X = d(st.integers(10**6, 10**12)), d(st.integers(1, 512)), d(st.integers(1, 131072)), d(st.integers(0, 2**20))
    chips, model = d(st.integers(1, 16)), d(st.sampled_from(["total", "kv-plus-max"]))
    wdt = d(st.sampled_from(["bf16", "int8", "int4"]))
    chip, flags = d(_chip_args())
    key = d(st.sampled_from([None, "compute_time_s", "kv_bytes"]))
    name = {"compute_time_s": "compute_time"}.get(key, key)
    expr = (f"decode({N}, {B}, {S}, {X} B, chips={chips}, weight_dtype={wdt}, model=\"{model}\"{chip})"
            + (f".{name}" if key else ""))
    args = ["decode", "-N", str(N), "-B", str(B), "-S", str(S), "--kv-bytes-per-token", str(X), "--chips", str(chips),
            "--weight-dtype", wdt, "--model", model, *flags]
    return (expr, args) + ((key,) if key else ())


@st.composite
def _chips(d):
    wdt = d(st.sampled_from(["bf16", "fp8", "int4"]))
    if d(st.booleans()):
        c = d(st.sampled_from(CHIPS))
        chip, flags = f", chip={c}", ["--hw", c]
    else:
        h = d(st.integers(10**9, 2 * 10**11))
        chip, flags = f", hbm={h} B", ["--hbm", str(h)]
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        B, S = d(st.integers(1, 64)), d(st.integers(1, 32768))
        return (f"chips(model={m}, batch={B}, context={S}, weight_dtype={wdt}{chip})",
                ["chips", "--preset", m, "-B", str(B), "-S", str(S), "--weight-dtype", wdt, *flags])
    N, B, S, X = d(st.integers(10**6, 10**12)), d(st.integers(1, 64)), d(st.integers(1, 32768)), d(st.integers(0, 2**20))
    return (f"chips({N}, batch={B}, context={S}, kv_bytes_per_token={X} B, weight_dtype={wdt}{chip})",
            ["chips", "-N", str(N), "-B", str(B), "-S", str(S), "--kv-bytes-per-token", str(X), "--weight-dtype", wdt,
             *flags])


@st.composite
def _zero(d):
    n, stage, K = d(st.integers(1, 4096)), d(st.integers(0, 3)), d(st.integers(1, 16))
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        who, args = f"model={m}", ["--preset", m]
    else:
        N = d(st.integers(1, 10**12))
        who, args = str(N), ["-N", str(N)]
    if d(st.booleans()):
        h = d(st.integers(10**9, 2 * 10**11))
        return (f"zero({who}, gpus={n}, stage={stage}, K={K}, hbm={h} B).left",
                ["zero", *args, "--gpus", str(n), "--stage", str(stage), "-K", str(K), "--hbm", str(h)], "left_bytes")
    return (f"zero({who}, gpus={n}, stage={stage}, K={K})",
            ["zero", *args, "--gpus", str(n), "--stage", str(stage), "-K", str(K)])


@st.composite
def _activations(d):
    s, b, L = d(st.integers(1, 32768)), d(st.integers(1, 64)), d(st.integers(1, 128))
    t, sp = d(st.sampled_from([1, 2, 8])), d(st.booleans())
    rec = d(st.sampled_from(["none", "selective", "full"]))
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        who, args = f"model={m}", ["--preset", m]
    else:
        h, a = d(st.integers(1, 16384)), d(st.integers(1, 128))
        who, args = f"d_model={h}, n_heads={a}", ["--d-model", str(h), "--n-heads", str(a)]
    return (f"activations({s}, {b}, {who}, layers={L}, tp={t}, recompute={rec}, "
            f"sequence_parallel={'on' if sp else 'off'})",
            ["activations", "--seq", str(s), "-b", str(b), *args, "-L", str(L), "--tp", str(t), "--recompute", rec]
            + (["--sequence-parallel"] if sp else []))


@st.composite
def _tp(d):
    b, s, h, t, L = d(st.integers(1, 64)), d(st.integers(1, 32768)), d(st.integers(1, 16384)), d(ranks), d(st.integers(1, 96))
    mode, sp, dt = d(st.sampled_from(["train", "forward"])), d(st.booleans()), d(st.sampled_from(DTYPES))
    base = (f"tp({b}, {s}, {h}, {t}, layers={L}, dtype={dt}, mode={mode}, sequence_parallel={'on' if sp else 'off'}")
    args = ["tp", "-b", str(b), "-s", str(s), "--d-model", str(h), "--tp", str(t), "-L", str(L), "--dtype", dt,
            "--mode", mode] + (["--sequence-parallel"] if sp else [])
    if d(st.booleans()):
        bw, a = d(links), d(lat)
        return (base + f", link={bw} B/s, latency={a!r} s).time",
                args + ["--link-bandwidth", str(bw), "--latency", repr(a)], "time_s")
    return base + ")", args


@st.composite
def _tp_matmul(d):
    B, D, F, t = d(st.integers(1, 8192)), d(st.integers(1, 65536)), d(st.integers(1, 65536)), d(ranks)
    p, bw, dt = d(peaks), d(links), d(st.sampled_from(["bf16", "fp8", "fp32"]))
    key = d(st.sampled_from([None, "min_d_in", "comm_time_s"]))
    name = {"comm_time_s": "comm_time"}.get(key, key)
    return ((f"tp_matmul({B}, {D}, {F}, {t}, peak={p} FLOP/s, link={bw} B/s, dtype={dt})" + (f".{name}" if key else ""),
             ["tp-matmul", "-B", str(B), "-D", str(D), "-F", str(F), "--tp", str(t), "--peak-flops", str(p),
              "--link-bandwidth", str(bw), "--dtype", dt]) + ((key,) if key else ()))


@st.composite
def _pipeline(d):
    p, schedule = d(st.integers(1, 64)), d(st.sampled_from(["gpipe", "1f1b", "interleaved"]))
    v = d(st.integers(1, 8)) if schedule == "interleaved" else 1
    m = p * d(st.integers(1, 32)) if schedule == "interleaved" else d(st.integers(1, 1024))
    key = d(st.sampled_from([None, "bubble_over_ideal"]))
    return ((f'pipeline({p}, {m}, chunks={v}, schedule="{schedule}")' + (f".{key}" if key else ""),
             ["pipeline", "-p", str(p), "-m", str(m), "--schedule", schedule, "-v", str(v)]) + ((key,) if key else ()))


@st.composite
def _dp_comm(d):
    n, stage, g = d(ranks), d(st.integers(0, 3)), d(st.sampled_from(["bf16", "fp32"]))
    if d(st.booleans()):
        m = d(st.sampled_from(MODELS))
        who, args = f"model={m}", ["--preset", m]
    else:
        N = d(st.integers(1, 10**12))
        who, args = str(N), ["-N", str(N)]
    base, args = f"dp_comm({who}, gpus={n}, stage={stage}, grad_dtype={g}", ["dp-comm", *args, "--gpus", str(n),
                                                                          "--stage", str(stage), "--grad-dtype", g]
    if d(st.booleans()):
        bw = d(links)
        return base + f", link={bw} B/s).time", args + ["--link-bandwidth", str(bw)], "time_s"
    return base + ")", args


ADAPTERS.update({
    "roofline": _roofline(), "attention_flops": _attention_flops(), "prefill": _prefill(), "decode": _decode(),
    "chips": _chips(), "zero": _zero(), "activations": _activations(), "tp": _tp(), "tp_matmul": _tp_matmul(),
    "pipeline": _pipeline(), "dp_comm": _dp_comm(),
})


@st.composite
def _serve(d):
    chips, model = d(st.integers(1, 8)), d(st.sampled_from(["total", "kv-plus-max"]))
    # what fits on the smallest chip drawn (16 GB): 2N ≤ 10 GB a chip, one sequence's cache ≤ 4 GB
    N, S, X = chips * d(st.integers(10**8, 5 * 10**9)), d(st.integers(1, 32768)), d(st.integers(1, 2**17))
    c = d(st.sampled_from(CHIPS))
    price = d(st.sampled_from([None, 2, 3.5]))
    key = d(st.sampled_from([None, "max_batch", "step_time_s"] + (["cost_per_million_tokens"] if price else [])))
    name = {"step_time_s": "latency"}.get(key, key)
    expr = (f"serve({N}, {S}, {X} B, chip={c}, chips={chips}, model=\"{model}\""
            + (f", price_per_chip_hour={price}" if price else "") + ")" + (f".{name}" if key else ""))
    args = ["serve", "-N", str(N), "-S", str(S), "--kv-bytes-per-token", str(X), "--hw", c, "--chips", str(chips),
            "--model", model] + (["--price-per-chip-hour", str(price)] if price else [])
    return (expr, args) + ((key,) if key else ())


@st.composite
def _generate(d):
    N, P, n, X = d(st.integers(10**8, 10**11)), d(st.integers(1, 8192)), d(st.integers(1, 4096)), d(st.integers(0, 2**20))
    B, chips, mfu = d(st.integers(1, 64)), d(st.integers(1, 8)), d(st.sampled_from([0.4, 1]))
    model = d(st.sampled_from(["total", "kv-plus-max"]))
    chip, flags = d(_chip_args())
    key = d(st.sampled_from([None, "prefill_s"]))
    return ((f"generate({N}, {P}, {n}, {X} B, batch={B}, chips={chips}, mfu={mfu}, model=\"{model}\"{chip})"
             + (".prefill" if key else ""),
             ["generate", "-N", str(N), "-P", str(P), "-n", str(n), "--kv-bytes-per-token", str(X), "-B", str(B),
              "--chips", str(chips), "--mfu", str(mfu), "--model", model, *flags]) + ((key,) if key else ()))


@st.composite
def _speculative(d):
    a, g = d(st.sampled_from([0, 0.5, 0.7, 0.9, 1])), d(st.integers(0, 32))
    if d(st.booleans()):
        c = d(st.sampled_from([0, 0.05, 0.2, 1]))
        key = d(st.sampled_from(["speedup", "best_gamma"]))
        return (f"speculative({a}, {g}, cost={c}).{key}", ["speculative", "--alpha", str(a), "--gamma", str(g),
                                                          "--cost", str(c)], key)
    return f"speculative({a}, {g})", ["speculative", "--alpha", str(a), "--gamma", str(g)]


@st.composite
def _compute_optimal(d):
    C, method = d(st.integers(10**18, 10**27)), d(st.sampled_from(["fitted", "besiroglu", "rule-20"]))
    key = d(st.sampled_from([None, "tokens", "loss"]))
    return ((f"compute_optimal({C} FLOP, method=\"{method}\")" + (f".{key}" if key else ""),
             ["compute-optimal", "-C", str(C), "--method", method]) + ((key,) if key else ()))


@st.composite
def _overtraining(d):
    N, D = d(st.integers(10**6, 10**12)), d(st.integers(10**6, 10**14))
    return f"overtraining({N}, {D})", ["compute-optimal", "-N", str(N), "-D", str(D)]


@st.composite
def _fsdp(d):
    P, n, T, L = d(st.integers(1, 10**10)), d(ranks), d(st.integers(1, 10**6)), d(st.integers(1, 128))
    eff, pb, gb = d(st.sampled_from([0.3, 0.6, 1])), d(st.integers(1, 8)), d(st.integers(1, 8))
    if d(st.booleans()):
        c = d(st.sampled_from(["h100-sxm", "a100-80gb", "tpu-v5e", "mi300x"]))
        chip, flags = f", chip={c}", ["--hw", c]
    else:
        p, bw = d(peaks), d(links)
        chip, flags = f", peak={p} FLOP/s, link={bw} B/s", ["--peak-flops", str(p), "--link-bandwidth", str(bw)]
    key = d(st.sampled_from([None, "tokens_to_hide_forward"]))
    return ((f"fsdp({P}, {n}, {T}, layers={L}, efficiency={eff}, param_bytes={pb}, grad_bytes={gb}{chip})"
             + (f".{key}" if key else ""),
             ["fsdp", "-P", str(P), "-n", str(n), "-T", str(T), "-L", str(L), "--efficiency", str(eff),
              "--param-bytes", str(pb), "--grad-bytes", str(gb), *flags]) + ((key,) if key else ()))


@st.composite
def _grad_accum(d):
    b, dp, m, p = d(st.integers(1, 64)), d(st.integers(1, 256)), d(st.integers(1, 64)), d(st.integers(1, 16))
    B = b * dp * m
    if p > 1 and d(st.booleans()):
        return (f"grad_accum({B}, {b}, {dp}, stages={p}).bubble",
                ["grad-accum", "-B", str(B), "-b", str(b), "-d", str(dp), "-p", str(p)], "bubble_fraction")
    return f"grad_accum({B}, {b}, {dp}, stages={p})", ["grad-accum", "-B", str(B), "-b", str(b), "-d", str(dp), "-p", str(p)]


@st.composite
def _busbw(d):
    op = d(st.sampled_from(["all-reduce", "all-reduce-in-network", "reduce-scatter", "all-gather", "all-to-all",
                            "broadcast", "reduce"]))
    n = d(ranks)
    if d(st.booleans()):
        S, us = d(sizes), d(st.integers(1, 10**7))
        what, args = f"size={S} B, time={us} us", ["--size", str(S), "--time-us", str(us)]
    else:
        a = d(links)
        what, args = f"algbw={a} B/s", ["--algbw", str(a)]
    if d(st.booleans()):
        bw = d(links)
        return (f"busbw({n}, {what}, link={bw} B/s, op=\"{op}\").link_fraction",
                ["busbw", "--op", op, "-n", str(n), *args, "--link-bandwidth", str(bw)], "link_fraction")
    return f"busbw({n}, {what}, op=\"{op}\")", ["busbw", "--op", op, "-n", str(n), *args]


@st.composite
def _run_flops(d):
    mfu, dt = d(st.sampled_from([0.2, 0.38, 0.5])), d(st.sampled_from(["bf16", "fp8"]))
    if d(st.booleans()):
        c = d(st.sampled_from(["h100-sxm", "h200", "b200"]))
        chip, flags = f", chip={c}, dtype={dt}", ["--hw", c, "--dtype", dt]
    else:
        p = d(peaks)
        chip, flags = f", peak={p} FLOP/s", ["--peak-flops", str(p)]
    if d(st.booleans()):
        h = d(st.integers(1, 10**8))
        when, args = f"gpu_hours={h} h", ["--gpu-hours", str(h)]
    else:
        days, n = d(st.integers(1, 365)), d(st.integers(1, 10**5))
        when, args = f"days={days} days, chips={n}", ["--days", str(days), "--chips", str(n)]
    if d(st.booleans()):
        N = d(st.integers(10**6, 10**12))
        return (f"run_flops({mfu}, {when}, params={N}{chip}).tokens",
                ["run-flops", "--mfu", str(mfu), *args, "-N", str(N), *flags], "tokens")
    return f"run_flops({mfu}, {when}{chip})", ["run-flops", "--mfu", str(mfu), *args, *flags]


@st.composite
def _mfu_step(d):
    N, T, t, n = d(st.integers(10**6, 10**12)), d(st.integers(1, 10**8)), d(st.sampled_from([0.5, 3, 12.25])), d(st.integers(1, 10**4))
    att = d(st.sampled_from([0, 10**6]))
    p = d(peaks)
    return (f"mfu_step({N}, {T}, {t} s, {n}, peak={p} FLOP/s, attention_flops={att} FLOP)",
            ["mfu-step", "-N", str(N), "-T", str(T), "--step-time", str(t), "--chips", str(n), "--peak-flops", str(p),
             "--attention-flops", str(att)])


@st.composite
def _lr(d):
    schedule = d(st.sampled_from(["linear", "inverse-sqrt", "cosine"]))
    w = d(st.integers(1, 1000))
    if schedule == "inverse-sqrt":
        t, dm = d(st.integers(1, 10**5)), d(st.integers(1, 8192))
        return (f"lr(inverse_sqrt, {t}, warmup={w}, d_model={dm})",
                ["lr", "--schedule", schedule, "--step", str(t), "--warmup", str(w), "--d-model", str(dm)])
    total, t = w + d(st.integers(1, 10**5)), d(st.integers(0, 2 * 10**5))
    peak, sf = d(st.sampled_from([1e-3, 3e-4, 6e-5])), d(st.sampled_from([0, 0.1]))
    minlr = d(st.sampled_from([0, 1e-5])) if schedule == "cosine" else 0
    return (f"lr({schedule}, {t}, peak={peak}, warmup={w}, total={total}, min_lr={minlr}, start_factor={sf})",
            ["lr", "--schedule", schedule, "--step", str(t), "--peak-lr", str(peak), "--warmup", str(w), "--total",
             str(total), "--min-lr", str(minlr), "--start-factor", str(sf)])


@st.composite
def _mfu(d):
    tps, n = d(st.integers(10**3, 10**8)), d(st.integers(1, 4096))
    rec = d(st.sampled_from(["none", "selective", "full"]))
    chip, flags = d(_chip_args(bandwidth=False))
    if d(st.booleans()):
        m, s = d(st.sampled_from(MODELS)), d(st.integers(1, 8192))
        who, args = f"model={m}, seq={s}", ["--preset", m, "--seq", str(s)]
    else:
        N, L, h, s = d(st.integers(10**6, 10**12)), d(st.integers(1, 128)), d(st.integers(1, 16384)), d(st.integers(1, 8192))
        who, args = f"{N}, layers={L}, d_model={h}, seq={s}", ["-N", str(N), "-L", str(L), "--d-model", str(h),
                                                               "--seq", str(s)]
    key = d(st.sampled_from([None, "hfu"]))
    return ((f"mfu({who}, tokens_per_second={tps} tokens/s, chips={n}, recompute={rec}{chip})"
             + (f".{key}" if key else ""),
             ["mfu", *args, "--tokens-per-second", str(tps), "--chips", str(n), "--recompute", rec, *flags])
            + ((key,) if key else ()))


ADAPTERS.update({
    "serve": _serve(), "generate": _generate(), "speculative": _speculative(), "compute_optimal": _compute_optimal(),
    "overtraining": _overtraining(), "fsdp": _fsdp(), "grad_accum": _grad_accum(), "busbw": _busbw(),
    "run_flops": _run_flops(), "mfu_step": _mfu_step(), "lr": _lr(), "mfu": _mfu(),
})


@st.composite
def _flash_attention(d):
    N, dh, B, H = d(st.integers(1, 16384)), d(st.sampled_from([32, 64, 128, 256])), d(st.integers(1, 8)), d(st.integers(1, 32))
    version, init = d(st.sampled_from(["1", "2"])), d(st.sampled_from(["counted", "omitted"]))
    args = ["flash-attention", "--seq", str(N), "-d", str(dh), "-B", str(B), "--heads", str(H), "--version", version]
    args += ["--no-init"] if init == "omitted" else []
    if d(st.booleans()):
        M = d(st.integers(4 * dh, 10**6))
        sram, args = f", sram={M}", args + ["--sram", str(M)]
    else:
        kb = d(st.integers(1, 256))
        sram, args = f", sram_bytes={kb} KiB", args + ["--sram-bytes", f"{kb}KiB"]
    base = f'flash_attention({N}, {dh}, batch={B}, heads={H}, version="{version}", init={init}{sram}'
    if d(st.booleans()):  # bytes: qkv solve counts them with --unit bytes
        dt = d(st.sampled_from(["bf16", "fp32", "fp8"]))
        return base + f", dtype={dt}).bytes", args + ["--unit", "bytes", "--dtype", dt]
    key = d(st.sampled_from([None, "ratio_standard_over_flash", "block_cols"]))
    name = {"ratio_standard_over_flash": "ratio"}.get(key, key)
    return (base + ")" + (f".{name}" if key else ""), args) + ((key,) if key else ())


@st.composite
def _mla_decode(d):
    S, B, order = d(st.integers(1, 131072)), d(st.integers(1, 64)), d(st.sampled_from(["absorbed", "naive"]))
    dt = d(st.sampled_from(["bf16", "fp8"]))
    if d(st.booleans()):
        who, args = "model=deepseek-v2-lite", ["--preset", "deepseek-v2-lite"]
    else:
        dm, h, dc, dr, dh = (d(st.integers(64, 8192)), d(st.integers(1, 128)), d(st.integers(16, 1024)),
                             d(st.integers(1, 128)), d(st.integers(16, 256)))
        L, q = d(st.integers(1, 64)), d(st.sampled_from([0, 1536]))
        who = f"d_model={dm}, n_heads={h}, kv_rank={dc}, rope_dim={dr}, nope_dim={dh}, q_rank={q}, layers={L}"
        args = ["--d-model", str(dm), "--n-heads", str(h), "--kv-lora-rank", str(dc), "--rope-dim", str(dr),
                "--nope-dim", str(dh), "--q-lora-rank", str(q), "--layers", str(L)]
    key = d(st.sampled_from([None, "absorbed_bytes", "naive_bytes", "cache_bytes"]))
    return ((f"mla_decode({S}, batch={B}, dtype={dt}, order={order}, {who})" + (f".{key}" if key else ""),
             ["mla-decode", "-S", str(S), "-B", str(B), "--dtype", dt, "--order", order, *args])
            + ((key,) if key else ()))


@st.composite
def _heads_args(d, need_query=True):
    if d(st.booleans()):
        m = d(st.sampled_from(["llama2-7b", "mistral-7b", "qwen2.5-7b", "gpt2"]))
        return f"model={m}", ["--preset", m], m
    hk = d(st.sampled_from([1, 2, 4, 8]))
    h, dh = hk * d(st.integers(1, 8)), d(st.sampled_from([64, 128]))
    return f"n_heads={h}, d_head={dh}, kv_heads={hk}", ["--n-heads", str(h), "--d-head", str(dh), "--kv-heads", str(hk)], h


@st.composite
def _ring_attention(d):
    P, B, dt = d(st.integers(1, 64)), d(st.integers(1, 8)), d(st.sampled_from(["bf16", "fp32"]))
    N = P * d(st.integers(1, 65536))
    who, args, _ = d(_heads_args())
    base, args = f"ring_attention({N}, {P}, {who}, batch={B}, dtype={dt}", ["ring-attention", "-N", str(N), "-P", str(P),
                                                                           *args, "-B", str(B), "--dtype", dt]
    if d(st.booleans()):
        bw, p, mfu, a = d(links), d(peaks), d(st.sampled_from([0.5, 1])), d(lat)
        key = d(st.sampled_from(["min_chunk_to_hide", "layer_time_s"]))
        name = {"layer_time_s": "layer_time"}.get(key, key)
        return (base + f", link={bw} B/s, peak={p} FLOP/s, mfu={mfu}, latency={a!r} s).{name}",
                args + ["--link-bandwidth", str(bw), "--peak-flops", str(p), "--mfu", str(mfu), "--latency", repr(a)],
                key)
    key = d(st.sampled_from([None, "layer_bytes"]))
    return (base + ")" + (f".{key}" if key else ""), args) + ((key,) if key else ())


@st.composite
def _ulysses(d):
    who, args, _ = d(_heads_args())
    # P divides the heads: the presets drawn have 12, 28 or 32 query heads and 4 to 32 K/V heads
    hk = int(args[args.index("--kv-heads") + 1]) if "--kv-heads" in args else 4
    P = d(st.sampled_from([p for p in (1, 2, 4, 8) if hk % p == 0]))
    N, B, dt = P * d(st.integers(1, 65536)), d(st.integers(1, 8)), d(st.sampled_from(["bf16", "fp32"]))
    local = d(st.booleans())
    base = f"ulysses({N}, {P}, {who}, batch={B}, dtype={dt}, count={'local' if local else 'sent'}"
    args = ["ulysses", "-N", str(N), "-P", str(P), *args, "-B", str(B), "--dtype", dt] + (["--count-local"] if local else [])
    if d(st.booleans()):
        bw, a = d(links), d(lat)
        return base + f", link={bw} B/s, latency={a!r} s).time", args + ["--link-bandwidth", str(bw), "--latency", repr(a)], "time_s"
    return base + ")", args


@st.composite
def _paged_kv(d):
    L, B = d(st.integers(1, 10**6)), d(st.sampled_from([1, 8, 16, 32, 128]))
    last = d(st.sampled_from(["counted", "full-only"]))
    base, args = f'paged_kv({L}, block_size={B}, last_block="{last}"', ["paged-kv", "--lengths", str(L), "-b", str(B),
                                                                       "--last-block", last]
    if d(st.booleans()):
        X, budget = d(st.integers(1, 2**20)), d(st.integers(10**9, 10**11))
        key = d(st.sampled_from(["paged_sequences", "contiguous_sequences", "kv_bytes"]))
        return (base + f", kv_bytes_per_token={X} B, budget={budget} B).{key}",
                args + ["-X", str(X), "--budget", str(budget)], key)
    key = d(st.sampled_from([None, "empty_slots", "fragmentation_fraction"]))
    name = {"fragmentation_fraction": "fragmentation"}.get(key, key)
    return (base + ")" + (f".{name}" if key else ""), args) + ((key,) if key else ())


@st.composite
def _disaggregation(d):
    P, X, bw, B, a = d(st.integers(1, 131072)), d(st.integers(1, 2**20)), d(links), d(st.integers(1, 64)), d(lat)
    base = f"disaggregation({P}, {X} B, {bw} B/s, batch={B}, latency={a!r} s"
    args = ["disaggregation", "-P", str(P), "-X", str(X), "--link-bandwidth", str(bw), "-B", str(B), "--latency", repr(a)]
    if d(st.booleans()):
        L, tp = d(st.integers(1, 128)), d(st.sampled_from([0.05, 0.5, 2]))
        return (base + f", layers={L}, prefill_time={tp} s).layerwise_exposed",
                args + ["--layers", str(L), "--prefill-time", str(tp)], "layerwise_exposed_s")
    return base + ")", args


@st.composite
def _expert_capacity(d):
    T, E, k = d(st.integers(1, 10**6)), d(st.integers(1, 256)), d(st.integers(1, 8))
    cf, per, rnd = d(st.sampled_from([1, 1.25, 1.1, 2])), d(st.sampled_from(["tokens", "assignments"])), d(st.sampled_from(["floor", "ceil"]))
    key = d(st.sampled_from([None, "slots"]))
    return ((f"expert_capacity({T}, {E}, {cf}, top_k={k}, per={per}, rounding={rnd})" + (f".{key}" if key else ""),
             ["expert-capacity", "-T", str(T), "-E", str(E), "--capacity-factor", str(cf), "-k", str(k), "--per", per,
              "--rounding", rnd]) + ((key,) if key else ()))


GGML = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"]


@st.composite
def _quant(d):
    kind = d(st.sampled_from(["ggml", "group", "nf4"]))
    if kind == "group":
        r, c, g = d(st.integers(1, 16384)), d(st.integers(1, 16384)), d(st.sampled_from([32, 64, 128]))
        zero, gidx = d(st.sampled_from(["int4", "fp16", "none"])), d(st.booleans())
        return (f"quant(format=group_int4, rows={r}, cols={c}, group_size={g}, zero={zero}, g_idx={'on' if gidx else 'off'})",
                ["quant", "--format", "group-int4", "--rows", str(r), "--cols", str(c), "--group-size", str(g), "--zero",
                 zero] + (["--g-idx"] if gidx else []))
    if kind == "nf4":
        bs, dq = d(st.sampled_from([32, 64, 128])), d(st.booleans())
        if d(st.booleans()):
            m = d(st.sampled_from(MODELS))
            who, args = f"model={m}", ["--preset", m]
        else:
            N = d(st.integers(1, 10**12))
            who, args = str(N), ["-N", str(N)]
        return (f"quant({who}, format=nf4, blocksize={bs}, double_quant={'on' if dq else 'off'})",
                ["quant", "--format", "nf4", *args, "--blocksize", str(bs)] + ([] if dq else ["--no-double-quant"]),
                "bytes")
    f = d(st.sampled_from(GGML))
    block = 32 if f[-1] != "K" else 256
    N = block * d(st.integers(1, 10**9))
    return f"quant({N}, format={f})", ["quant", "--format", f, "-N", str(N)]


@st.composite
def _block_format(d):
    if d(st.booleans()):
        f = d(st.sampled_from(["mxfp4", "mxfp8-e4m3", "mxfp8-e5m2", "nvfp4"]))
        what, args = f'"{f}"', ["--format", f]
    else:
        k, sb, eb = d(st.integers(1, 1024)), d(st.integers(0, 32)), d(st.integers(1, 16))
        what, args = f"custom, block={k}, scale_bits={sb}, element_bits={eb}", ["--format", "custom", "--block", str(k),
                                                                                "--scale-bits", str(sb), "--element-bits",
                                                                                str(eb)]
    if d(st.booleans()):
        N = d(st.integers(1, 10**12))
        return f"block_format({what}, params={N}).bytes", ["block-format", *args, "-N", str(N)]
    return f"block_format({what})", ["block-format", *args]


@st.composite
def _fp8_memory(d):
    N, recipe = d(st.integers(1, 10**12)), d(st.sampled_from(["fp8-te", "fp8-deepseek-v3", "bf16-mixed"]))
    return f'fp8_memory({N}, recipe="{recipe}")', ["fp8-memory", "-N", str(N), "--recipe", recipe]


@st.composite
def _perplexity(d):
    loss, unit = d(st.sampled_from([0, 0.5, 1.7, 2.3, 5, 11.25])), d(st.sampled_from(["nats", "bits"]))
    return (f"perplexity({loss}, unit={unit})",
            ["perplexity", "--loss", str(loss), "--log-base", "e" if unit == "nats" else "2"])


ADAPTERS.update({
    "flash_attention": _flash_attention(), "mla_decode": _mla_decode(), "ring_attention": _ring_attention(),
    "ulysses": _ulysses(), "paged_kv": _paged_kv(), "disaggregation": _disaggregation(),
    "expert_capacity": _expert_capacity(), "quant": _quant(), "block_format": _block_format(),
    "fp8_memory": _fp8_memory(), "perplexity": _perplexity(),
})


@st.composite
def _fit_3d(d):
    t, p, dp = d(st.sampled_from([1, 2, 4, 8])), d(st.sampled_from([1, 2, 4])), d(st.integers(1, 64))
    L, a = p * d(st.integers(1, 24)), t * d(st.integers(1, 16))
    N, h, s, b = d(st.integers(10**6, 10**12)), a * d(st.sampled_from([64, 128])), d(st.integers(1, 32768)), d(st.integers(1, 8))
    zero, rec, sp = d(st.integers(0, 3)), d(st.sampled_from(["none", "selective", "full"])), d(st.booleans())
    m = d(st.sampled_from([None, 1, 8, 32]))
    expr = (f"fit_3d({N}, {L}, {h}, {a}, {s}, micro_batch={b}, tp={t}, pp={p}, dp={dp}, zero={zero}, recompute={rec}, "
            f"sequence_parallel={'on' if sp else 'off'}" + (f", microbatches={m}" if m else ""))
    args = ["fit-3d", "-N", str(N), "-L", str(L), "--d-model", str(h), "-a", str(a), "-s", str(s), "-b", str(b),
            "-t", str(t), "-p", str(p), "-d", str(dp), "--zero", str(zero), "--recompute", rec,
            "--sequence-parallel" if sp else "--no-sequence-parallel"] + (["-m", str(m)] if m else [])
    if d(st.booleans()):
        c = d(st.sampled_from(["h100-sxm", "a100-40gb", "mi300x"]))
        return expr + f", chip={c}).left", args + ["--hw", c], "left_bytes"
    key = d(st.sampled_from([None, "activations_bytes"]))
    return (expr + ")" + (".activations" if key else ""), args) + ((key,) if key else ())


@st.composite
def _sliding_window(d):
    conv, sinks = d(st.sampled_from(["strict", "span"])), d(st.integers(0, 8))
    if d(st.booleans()):
        who, args = "model=mistral-7b", ["--preset", "mistral-7b"]
    else:
        W, L = d(st.integers(1, 8192)), d(st.integers(1, 64))
        who, args = f"{W}, {L}", ["-W", str(W), "-L", str(L)]
    base, args = f"sliding_window({who}, sinks={sinks}, convention={conv}", ["sliding-window", *args, "--sinks", str(sinks),
                                                                            "--convention", conv]
    if d(st.booleans()):
        n = d(st.integers(1, 10**6))
        key = d(st.sampled_from(["kv_tokens_per_layer", "beyond_reach"]))
        return base + f", seq={n}).{key}", args + ["--seq", str(n)], key
    return base + ")", args


ADAPTERS.update({"fit_3d": _fit_3d(), "sliding_window": _sliding_window()})


@st.composite
def _float_format(d):
    f = d(st.sampled_from(["fp32", "fp16", "bf16", "e5m2", "e4m3", "fp4"]))
    if d(st.booleans()):
        ask = d(st.sampled_from(["max-normal", "min-normal", "min-subnormal"]))
        return f"float_format({f}).{ask.replace('-', '_')}", ["float-format", "-f", f, "--ask", ask]
    # values inside every format's range (fp4's largest is 6), exact decimals as both sides read them
    x = d(st.sampled_from(["0.3", "-1.7", "5.5", "0.001", "2.25", "-0.0625", "1e-5", "3"]))
    ask = d(st.sampled_from(["spacing", "nearest"]))
    overflow = d(st.sampled_from(["pytorch", "ieee", "saturate"]))
    return (f"float_format({f}, {x}, overflow={overflow}).{ask}",
            ["float-format", "-f", f, "--value", x, "--ask", ask, "--overflow", overflow])


ADAPTERS.update({"float_format": _float_format()})


@st.composite
def _rope_scaling(d):
    dh = 2 * d(st.integers(2, 128))
    i, method = d(st.integers(0, dh // 2 - 1)), d(st.sampled_from(["linear", "ntk", "dynamic", "yarn", "none"]))
    base, s, L = d(st.sampled_from([10000, 500000, 1e6])), d(st.sampled_from([1, 2, 4, 8, 32])), d(st.sampled_from([2048, 4096, 8192]))
    trunc = d(st.booleans())
    expr = (f"rope_scaling({dh}, {i}, base={base}, factor={s}, original={L}, method={method}, "
            f"truncate={'on' if trunc else 'off'}")
    args = ["rope-scaling", "-d", str(dh), "--pair", str(i), "--base", str(base), "-s", str(s), "--original", str(L),
            "--method", method] + ([] if trunc else ["--no-truncate"])
    if method == "dynamic" and d(st.booleans()):
        n = d(st.integers(1, 10**6))
        expr, args = expr + f", seq_len={n}", args + ["--seq-len", str(n)]
    return expr + ")", args


ADAPTERS.update({"rope_scaling": _rope_scaling()})


# vectors: numbers with one decimal, typed the same way to both sides ("1.5 -2.0" and [1.5, -2.0])
entries = st.integers(-200, 200).map(lambda n: n / 10)


def vectors(lo=1, hi=12):
    return st.lists(entries, min_size=lo, max_size=hi)


def _spaced(v) -> str:
    return " ".join(map(repr, v))


@st.composite
def _softmax(d):
    x, t = d(vectors()), d(st.sampled_from([None, 0.5, 1, 2.5]))
    key = d(st.sampled_from([None, "exp"]))
    expr = f"softmax({list(x)}" + (f", temperature={t}" if t else "") + ")" + (f".{key}" if key else "")
    return expr, ["softmax", "--x", _spaced(x)] + (["-t", str(t)] if t else []), *((f"steps.{key}",) if key else ())


@st.composite
def _cross_entropy(d):
    z = d(vectors())
    y, eps = d(st.integers(0, len(z) - 1)), d(st.sampled_from([0, 0.1, 0.5]))
    key = d(st.sampled_from([None, "bits", "perplexity", "log_probs"]))
    expr = f"cross_entropy({z}, {y}, label_smoothing={eps})" + (f".{key}" if key else "")
    bk = {"log_probs": "breakdown.log_probs.0"}.get(key, f"breakdown.{key}") if key else None
    return expr, ["cross-entropy", "--logits", _spaced(z), "-y", str(y), "--label-smoothing", str(eps)], \
        *((bk,) if bk else ())


@st.composite
def _layernorm(d):
    x = d(vectors(2))
    g = d(st.one_of(st.none(), st.lists(entries, min_size=len(x), max_size=len(x))))
    b = d(st.one_of(st.none(), st.lists(entries, min_size=len(x), max_size=len(x))))
    eps = d(st.sampled_from([None, 0, 1e-3]))
    expr = f"layernorm({x}" + (f", gamma={g}" if g else "") + (f", beta={b}" if b else "") + \
        (f", eps={eps}" if eps is not None else "") + ")"
    args = ["layernorm", "--x", _spaced(x)] + (["--gamma", _spaced(g)] if g else []) + \
        (["--beta", _spaced(b)] if b else []) + (["--eps", str(eps)] if eps is not None else [])
    return expr, args


@st.composite
def _rmsnorm(d):
    x = d(vectors().filter(lambda v: any(v)))
    g = d(st.one_of(st.none(), st.lists(entries, min_size=len(x), max_size=len(x))))
    eps = d(st.sampled_from([None, 0, 1e-3]))
    key = d(st.sampled_from([None, "rms"]))
    expr = f"rmsnorm({x}" + (f", gamma={g}" if g else "") + (f", eps={eps}" if eps is not None else "") + ")" + \
        (f".{key}" if key else "")
    args = ["rmsnorm", "--x", _spaced(x)] + (["--gamma", _spaced(g)] if g else []) + \
        (["--eps", str(eps)] if eps is not None else [])
    return expr, args, *(("steps.rms",) if key else ())


@st.composite
def _pe(d):
    pos, dm = d(st.integers(0, 4096)), d(st.integers(1, 64))
    layout, base = d(st.sampled_from(["interleaved", "concat", "tensor2tensor"])), d(st.sampled_from([10000, 500]))
    dim = d(st.one_of(st.none(), st.integers(0, dm - 1)))
    expr = f"pe({pos}, {dm}, base={base}, layout={layout}" + (f", dim={dim}" if dim is not None else "") + ")"
    args = ["pe", "--pos", str(pos), "--d-model", str(dm), "--base", str(base), "--layout", layout] + \
        (["--dim", str(dim)] if dim is not None else [])
    return expr, args


@st.composite
def _rope(d):
    x = d(st.integers(1, 6).flatmap(lambda n: st.lists(entries, min_size=2 * n, max_size=2 * n)))
    pos, base = d(st.integers(0, 10**5)), d(st.sampled_from([10000, 500000]))
    pairing = d(st.sampled_from(["interleaved", "half"]))
    return (f"rope({x}, {pos}, base={base}, pairing={pairing})",
            ["rope", "--x", _spaced(x), "--pos", str(pos), "--base", str(base), "--pairing", pairing])


@st.composite
def _softcap(d):
    x, cap = d(vectors()), d(st.sampled_from([1, 30, 50, 2.5]))
    key = d(st.sampled_from([None, "gradient", "shrink"]))
    return (f"softcap({x}, {cap})" + (f".{key}" if key else ""), ["softcap", "--x", _spaced(x), "--cap", str(cap)],
            *((f"breakdown.{key}",) if key else ()))


@st.composite
def _sampling(d):
    z = d(vectors())
    t = d(st.sampled_from([0.5, 1, 2]))
    k = d(st.one_of(st.none(), st.integers(1, len(z))))
    p = d(st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9, 1])))
    crossing = d(st.sampled_from(["include", "exclude"]))
    key = d(st.sampled_from([".kept", "", ".set_size"]))
    expr = f"sampling({z}, temperature={t}" + (f", top_k={k}" if k else "") + (f", top_p={p}" if p else "") + \
        f", crossing={crossing}){key}"
    args = ["sampling", "--logits", _spaced(z), "-t", str(t), "--crossing", crossing] + \
        (["-k", str(k)] if k else []) + (["-p", str(p)] if p else [])
    return expr, args, *({"": ("breakdown.output",), ".set_size": ("breakdown.set_size",)}.get(key, ()))


def matrices(rows, cols):
    return st.lists(st.lists(entries, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


def _rows(m) -> str:
    return "; ".join(_spaced(r) for r in m)


@st.composite
def _attention(d):
    n, dk, dv, causal = d(st.integers(1, 4)), d(st.integers(1, 4)), d(st.integers(1, 4)), d(st.booleans())
    m = d(st.integers(n if causal else 1, 5))  # causal with m < n would leave a query no key (both refuse)
    q, k, v = d(matrices(n, dk)), d(matrices(m, dk)), d(matrices(m, dv))
    mask = d(st.one_of(st.none(), matrices(n, m).map(lambda r: [[1] + [int(x > 0) for x in row[1:]] for row in r])))
    scale = d(st.sampled_from([None, 1, 0.5]))
    key = d(st.sampled_from([None, "weights", "scores"]))
    expr = f"attention({q}, {k}, {v}" + (f", mask={mask}" if mask else "") + (f", scale={scale}" if scale else "") + \
        f", causal={'on' if causal else 'off'})" + (f".{key}" if key else "")
    args = ["attention", "--q", _rows(q), "--k", _rows(k), "--v", _rows(v)] + (["--mask", _rows(mask)] if mask else []) \
        + (["--scale", str(scale)] if scale else []) + (["--causal"] if causal else [])
    return expr, args, *((f"steps.{key}",) if key else ())


@st.composite
def _alibi(d):
    h = d(st.integers(1, 64))
    bid = d(st.booleans())
    args = ["alibi", "--heads", str(h)] + (["--bidirectional"] if bid else [])
    expr = f"alibi({h}, bidirectional={'on' if bid else 'off'}"
    if d(st.booleans()):
        head, i = d(st.integers(1, h)), d(st.integers(0, 4096))
        j = d(st.integers(0, 4096 if bid else i))
        expr += f", head={head}, query={i}, key={j}"
        args += ["--head", str(head), "--query", str(i), "--key", str(j)]
    return expr + ")", args


@st.composite
def _t5_buckets(d):
    r, nb, md = d(st.integers(-5000, 5000)), d(st.sampled_from([None, 8, 32, 64])), d(st.sampled_from([None, 64, 128, 300]))
    causal, h = d(st.booleans()), d(st.one_of(st.none(), st.integers(1, 64)))
    expr = f"t5_buckets({r}" + (f", num_buckets={nb}" if nb else "") + (f", max_distance={md}" if md else "") + \
        f", direction={'causal' if causal else 'bidirectional'}" + (f", heads={h}).bias_table_params" if h else ")")
    args = ["t5-buckets", "-r", str(r)] + (["--num-buckets", str(nb)] if nb else []) + \
        (["--max-distance", str(md)] if md else []) + (["--causal"] if causal else []) + (["--n-heads", str(h)] if h else [])
    return expr, args, *(("breakdown.bias_table_params",) if h else ())


@st.composite
def _quant_error(d):
    bits, scheme = d(st.integers(2, 16)), d(st.sampled_from(["absmax", "zero-point"]))
    typed = scheme.replace("-", "_")  # calc reads zero-point as a subtraction; the choice is zero_point there
    key = d(st.sampled_from(["", ".dequantised", ".mse"]))
    if d(st.booleans()):
        x = d(vectors().filter(any))
        return (f"quant_error({x}, bits={bits}, scheme={typed}){key}",
                ["quant-error", "--values", _spaced(x), "-b", str(bits), "--scheme", scheme],
                *({".dequantised": ("breakdown.dequantised",), ".mse": ("breakdown.mse",)}.get(key, ())))
    r, c = d(st.integers(2, 4)), d(st.integers(1, 4))
    w = d(matrices(r, c).filter(lambda m: any(map(any, m))))
    block = d(st.sampled_from([b for b in (None, 1, 2, 3) if c % (b or 2) == 0]))  # no block: 2 per block
    out = d(st.sampled_from(["", ".per_channel", ".per_block"]))
    return (f"quant_error(matrix={w}, bits={bits}, scheme={typed}" + (f", block={block}" if block else "") + f"){out}",
            ["quant-error", "--values", _rows(w), "-b", str(bits), "--scheme", scheme] +
            (["--block", str(block)] if block else []),
            *({".per_channel": ("breakdown.max_abs_error_per_channel",),
               ".per_block": ("breakdown.max_abs_error_per_block",)}.get(out, ())))


@st.composite
def _smoothquant(d):
    n = d(st.integers(1, 8))
    pos = st.integers(1, 1000).map(lambda v: v / 10)
    x, w = d(st.lists(pos, min_size=n, max_size=n)), d(st.lists(pos, min_size=n, max_size=n))
    a = d(st.sampled_from([0, 0.25, 0.5, 0.75, 1]))
    key = d(st.sampled_from(["", ".x_after", ".x_range_after"]))
    return (f"smoothquant({x}, {w}, alpha={a}){key}", ["smoothquant", "--x-max", _spaced(x), "--w-max", _spaced(w),
                                                      "--alpha", str(a)],
            *({".x_after": ("breakdown.x_absmax_after",), ".x_range_after": ("breakdown.x_range_ratio_after",)}.get(key, ())))


@st.composite
def _mx_quantize(d):
    x = d(st.lists(entries, min_size=1, max_size=32).filter(any))
    e = d(st.sampled_from(["fp4", "e4m3", "e5m2"]))
    key = d(st.sampled_from(["", ".dequantised", ".scale"]))
    return (f"mx_quantize({x}, element={e}){key}", ["mx-quantize", "--values", _spaced(x), "--element", e],
            *((f"breakdown.{key[1:]}",) if key else ()))


@st.composite
def _batching(d):
    outs = d(st.lists(st.integers(1, 50), min_size=1, max_size=12))
    b, t, pre = d(st.integers(1, 6)), d(st.sampled_from([0.01, 0.1, 0.025])), d(st.sampled_from([0, 0.05]))
    policy = d(st.sampled_from(["continuous", "static"]))
    key = d(st.sampled_from(["", ".makespan", ".mean_latency"]))
    return (f"batching({outs}, {b}, {t} s, prefill_time={pre} s, policy={policy}){key}",
            ["batching", "--outputs", _spaced(outs), "-B", str(b), "--step-time", str(t), "--prefill-time", str(pre),
             "--policy", policy], *({".makespan": ("breakdown.makespan_s",),
                                     ".mean_latency": ("breakdown.mean_latency_s",)}.get(key, ())))


@st.composite
def _mlp(d):
    sizes = d(st.lists(st.integers(1, 4096), min_size=2, max_size=6))
    b, bias = d(st.integers(1, 64)), d(st.booleans())
    conv, adds = d(st.sampled_from(["flops", "macs"])), d(st.booleans())
    what = d(st.sampled_from(["params", "flops"]))
    return (f"mlp({sizes}, batch={b}, bias={'on' if bias else 'off'}, convention={conv}, "
            f"bias_adds={'on' if adds else 'off'}).{what}",
            ["mlp", "--sizes", _spaced(sizes), "-B", str(b), "--convention", conv, "--what", what] +
            ([] if bias else ["--no-bias"]) + (["--bias-adds"] if adds else []))


@st.composite
def _rope_score(d):
    n = d(st.integers(1, 6))
    q, k = d(st.lists(entries, min_size=2 * n, max_size=2 * n)), d(st.lists(entries, min_size=2 * n, max_size=2 * n))
    m, p = d(st.integers(-1000, 10**5)), d(st.integers(-1000, 10**5))
    base, pairing = d(st.sampled_from([10000, 500000])), d(st.sampled_from(["interleaved", "half"]))
    key = d(st.sampled_from(["", ".relative", ".q_rotated"]))
    return (f"rope_score({q}, {k}, {m}, {p}, base={base}, pairing={pairing}){key}",
            ["rope-score", "--q", _spaced(q), "--k", _spaced(k), "-m", str(m), "-n", str(p), "--base", str(base),
             "--pairing", pairing], *((f"breakdown.{key[1:]}",) if key else ()))


@st.composite
def _router_loss(d):
    t, e = d(st.integers(1, 5)), d(st.integers(2, 6))
    x = d(matrices(t, e))
    k, a, z = d(st.integers(1, e)), d(st.sampled_from([1, 0.01])), d(st.sampled_from([1, 0.001]))
    f_per = d(st.sampled_from(["assignments", "tokens"]))
    key = d(st.sampled_from(["", ".z_loss", ".P"]))
    return (f"router_loss({x}, top_k={k}, alpha={a}, z_coef={z}, f_per={f_per}){key}",
            ["router-loss", "--logits", _rows(x), "-k", str(k), "--alpha", str(a), "--z-coef", str(z), "--f-per", f_per],
            *((f"breakdown.{key[1:]}",) if key else ()))


@st.composite
def _online_softmax(d):
    x, b = d(vectors(1, 16)), d(st.integers(1, 6))
    blocks = [x[i:i + b] for i in range(0, len(x), b)]
    args = ["online-softmax"] + [a for blk in blocks for a in ("--block", _spaced(blk))]
    key = d(st.sampled_from(["", ".final_sum", ".output"]))
    if key == ".output":
        v = d(matrices(len(x), d(st.integers(1, 3))))
        return (f"online_softmax({x}, {b}, values={v}).output", args + ["--values", _rows(v)], "breakdown.output")
    return f"online_softmax({x}, {b}){key}", args, *(("breakdown.final_sum",) if key else ())


ADAPTERS.update({"online_softmax": _online_softmax()})
ADAPTERS.update({"quant_error": _quant_error(), "smoothquant": _smoothquant(), "mx_quantize": _mx_quantize(),
                 "batching": _batching(), "mlp": _mlp(), "rope_score": _rope_score(), "router_loss": _router_loss()})
ADAPTERS.update({"attention": _attention(), "alibi": _alibi(), "t5_buckets": _t5_buckets()})
ADAPTERS.update({"softmax": _softmax(), "cross_entropy": _cross_entropy(), "layernorm": _layernorm(),
                 "rmsnorm": _rmsnorm(), "pe": _pe(), "rope": _rope(), "softcap": _softcap(), "sampling": _sampling()})


def test_every_registered_formula_has_an_adapter_here():
    assert set(ADAPTERS) == set(formulas())


def test_every_entry_names_a_real_solve_command_and_is_whole():
    for f in formulas().values():
        assert f.solve and f.solve.split()[0] in SOLVE_COMMANDS, f.name
        for c in f.conventions:
            assert c.default in c.choices and all(ch.meaning for ch in c.choices.values())
        for i in f.inputs:
            assert i.help and (i.unit or i.kind != "quantity"), (f.name, i.name)
        assert f.outputs and len({o.name for o in f.outputs}) == len(f.outputs)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_calc_and_solve_agree(name, data):
    drawn = data.draw(ADAPTERS[name])
    expr, args = drawn[0], drawn[1]
    if len(drawn) == 3 and drawn[2] and "." in drawn[2]:  # a path into the JSON (a vector's steps.exp)
        got = solve_json(*args)
        for part in drawn[2].split("."):
            got = got[int(part)] if isinstance(got, list) else got[part]
        assert calc_array(expr) == pytest.approx(flat(got), rel=1e-12, abs=1e-300)
    elif len(drawn) == 3:  # a breakdown figure (train's time in days)
        got_solve = solve(*args, key=drawn[2]) * (86400 if drawn[2] == "days" else 1)
        assert calc(expr) == pytest.approx(got_solve, rel=1e-12)
    else:
        got = solve_json(*args)["answer"]
        if isinstance(got, list):
            assert calc_array(expr) == pytest.approx(flat(got), rel=1e-12, abs=1e-300)
        else:
            assert calc(expr) == pytest.approx(float(got), rel=1e-12)
