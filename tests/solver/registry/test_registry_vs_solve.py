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
from solver.registry.calc import Evaluator

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
    out = d(st.sampled_from(["", ".hosts", ".links", ".diameter", ".bisection"]))
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
def _two_level(d):
    S, g, m, a, b = d(sizes), d(st.integers(1, 16)), d(st.integers(1, 512)), d(links), d(links)
    return (f"two_level_all_reduce({S} B, {g}, {m}, {a} B/s, {b} B/s)",
            ["two-level-all-reduce", "--size", str(S), "-g", str(g), "-m", str(m), "--intra", str(a), "--inter",
             str(b)])


@st.composite
def _train_memory(d):
    N, n = d(st.integers(1, 10**13)), d(st.integers(1, 10**5))
    recipe = d(st.sampled_from(["bf16-adam", "mixed-fp32-master", "fp32-adam", "adam-8bit", "sgd-momentum",
                                "fp32-grads"]))
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
    "pod": _pod(), "two_level_all_reduce": _two_level(), "train_memory": _train_memory(),
    "dp_batch": _dp_batch(), "ep_d_ff": _ep_d_ff(), "tp_max": _tp_max(), "fsdp_tp_batch": _fsdp_tp_batch(), "fsdp_opt": _fsdp_opt(),
    "tp_decode_max": _tp_decode_max(), "decode_batch": _decode_batch(), "kv_budget": _kv_budget(),
    "sharded_matmul": _sharded_matmul(),
    "params": _model_count("params"), "weights": _model_count("weights"), "kv_cache": _model_count("kv_cache"),
    "flops": _model_count("flops"), "all_gather": _collective("all-gather"),
    "reduce_scatter": _collective("reduce-scatter"), "all_reduce": _collective("all-reduce"),
    "all_to_all": _all_to_all(), "transfer": _transfer(), "train": _train(), "matmul": _matmul(),
    "moe_all_to_all": _moe(),
}


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
    if len(drawn) == 3 and drawn[2] == "days":  # the time is a breakdown figure in days
        got_solve = solve(*args, key=drawn[2]) * 86400
    elif len(drawn) == 3:  # another breakdown figure than the answer
        got_solve = solve(*args, key=drawn[2])
    else:
        got_solve = solve(*args)
    assert calc(expr) == pytest.approx(got_solve, rel=1e-12)
