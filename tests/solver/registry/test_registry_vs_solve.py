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


ADAPTERS = {
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
    if len(drawn) == 3:  # a breakdown figure (train's time in days)
        got_solve = solve(*args, key=drawn[2]) * (86400 if drawn[2] == "days" else 1)
    else:
        got_solve = solve(*args)
    assert calc(expr) == pytest.approx(got_solve, rel=1e-12)
