"""The calculators audited from the outside: what ``qkv solve ...`` and ``qkv calc`` print.

Each test runs the command through click's CliRunner as a user would type it (sizes written with
their suffixes: ``8k``, ``70B``, ``80GiB``, ``3.35TB/s``, ``5us``, fractions ``1/2``), reads the number
on the printed ``answer:`` line (or the printed vector, or a breakdown line) and, where the command
has it, the ``--json`` answer, and compares both with a figure recomputed here without importing
``solver`` or ``drills`` (only ``drills.cli.cli``, to run the command):

- ``params``, ``flops``, ``memory``/``kv-cache``: a decoder built in this file with ``torch.nn``
  on the meta device (its ``numel()`` for parameters, ``torch.utils.flop_counter.FlopCounterMode``
  for the FLOPs of a forward, a decode step and a training step: MQA/GQA, odd widths, odd head
  sizes); presets and corpus ``config.json`` files against transformers' own classes on the meta
  device (counts, and FLOPs under FlopCounterMode); the KV cache as 2·L·B·n·h_kv·d_h·bytes (K and V,
  every layer), training state as 16 bytes a parameter (mixed-precision Adam, Rajbhandari et al.
  2020, ZeRO §3: 2 + 2 + 12), int4 as half a byte rounded up to whole bytes.
- ``matmul``, ``roofline``, ``prefill``, ``decode`` (and a mixture of experts' expected experts,
  Mixtral-8x7B from transformers' class), ``train``, ``zero``, ``chips``, ``mfu``: the formulas
  their ``--help`` states (2 FLOPs per multiply-add; bytes of X, W, Y), from figures given on the
  command line; every hardware flag given either changes the answer or is named as ignored.
- ``allreduce``/``collective``: a ring simulated chunk by chunk (the bytes each rank sends, the
  values reduced), a binomial tree simulated hop by hop, a pairwise all-to-all, then the α-β time;
  ``pipeline``: a GPipe schedule simulated tick by tick (the idle share of the step).
- ``compute-optimal`` (and the over-training factor): Chinchilla's fitted loss (Hoffmann et al.
  2022, approach 3: E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28) and Besiroglu et al. 2024's
  refit (arXiv:2404.10102, Table 1) minimised numerically along C = 6·N·D (scipy), and the 20:1 rule.
- ``softmax``, ``attention`` (single and multi-head from ``--x`` and weights), ``layernorm``,
  ``cross-entropy``: ``torch.nn.functional``; ``rope``: rotation by complex multiplication
  (``torch.polar``); ``pe``: the paper's formula in NumPy; ``sampling``: a top-k / top-p filter
  written from HuggingFace's documented rule.
- ``qkv calc``: the same expression in ``fractions.Fraction`` (SI and binary prefixes, powers,
  brackets with a unit, a leading minus, presets against transformers and the H100 datasheet).

A text answer is held to the house formatter: whole numbers printed in full, others to 6
significant figures (relative error at most 5·10⁻⁶); the by-hand kernels to their printed decimals.
"""

from __future__ import annotations

import functools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from drills.cli import cli

CORPUS = Path(__file__).resolve().parents[2] / "solver" / "counting" / "configs" / "corpus"
SIX_SF = 5.01e-6  # 6 significant figures, rounded half up
DTYPE_BYTES = {"fp32": Fraction(4), "fp16": Fraction(2), "bf16": Fraction(2), "fp8": Fraction(1),
               "int8": Fraction(1), "int4": Fraction(1, 2)}


# ---------------------------------------------------------------- running and reading the CLI


def run(*args: str) -> str:
    """Run ``qkv ARGS``; a traceback or a non-zero exit fails the test with the output."""
    r = CliRunner().invoke(cli, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output, r.exc_info)
    assert "Traceback" not in r.output, (args, r.output)
    assert r.exit_code == 0, (args, r.output)
    return r.output


def solve(*args: str) -> str:
    return run("solve", *args)


def solve_json(*args: str) -> dict:
    return json.loads(solve(*args, "--json"))


_NUM = re.compile(r"[−-]?\d[\d,]*(?:\.\d+)?(?:e[+−-]?\d+)?")


def number(text: str) -> float:
    """The first number in ``text`` as printed (1,234 / 6.9e-05 / −0.5)."""
    m = _NUM.search(text)
    assert m, text
    return float(m.group().replace(",", "").replace("−", "-"))


def answer_line(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.startswith("answer:")]
    assert len(lines) == 1, out
    return lines[0][len("answer:"):].strip()


def text_answer(out: str) -> float:
    return number(answer_line(out))


def breakdown(out: str, label: str) -> float:
    """The number on the breakdown line that starts with ``label``."""
    for ln in out.splitlines():
        if re.match(rf"\s+{re.escape(label)}\s\s", ln):
            return number(ln[len(label) + 2:])
    raise AssertionError(f"no line {label!r} in\n{out}")


def rate(out: str, label: str) -> float:
    """A breakdown line printed as bytes per second (kB/s ... TB/s, SI)."""
    line = next(ln for ln in out.splitlines() if re.match(rf"\s+{re.escape(label)}\s\s", ln))
    m = re.search(r"([\d.,e+-]+)\s*([kMGTP]?)B/s", line)
    assert m, line
    return float(m.group(1).replace(",", "")) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[m.group(2)]


def vector_answer(out: str) -> list[float]:
    """The vector printed under ``Answer (...)``."""
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("Answer"))
    rows = []
    for ln in lines[i + 1:]:
        if not ln.strip():
            break
        rows.append([float(t.replace("−", "-")) for t in ln.strip().strip("[]").split()])
    return rows


def close_6sf(printed: float, exact: float) -> bool:
    return math.isclose(printed, exact, rel_tol=SIX_SF, abs_tol=1e-300)


def sized(n: int, draw_k: bool) -> str:
    """A size as people write it: 8k for 8192 (k = 1024 for lengths and layer sizes)."""
    return f"{n // 1024}k" if draw_k and n % 1024 == 0 else str(n)


# ---------------------------------------------------------------- an independent decoder in torch


class RefDecoder(nn.Module):
    """A pre-norm decoder written from the papers (GPT-2 / LLaMA shapes), for numel() and FLOPs.

    Grouped-query attention repeats each K/V head for h/h_kv query heads (no FLOPs); the scores are
    computed explicitly over every key (QKᵀ and A·V are matmuls FlopCounterMode sees).
    """

    def __init__(self, c: dict):
        super().__init__()
        self.c = c
        d, dh, h, hkv, dff, bias = c["d"], c["dh"], c["h"], c["hkv"], c["dff"], c["bias"]
        norm = (lambda: nn.LayerNorm(d, bias=bias)) if c["norm"] == "layernorm" else (lambda: nn.RMSNorm(d))
        self.tok = nn.Embedding(c["V"], d)
        self.pos = nn.Embedding(c["max_pos"], d) if c["pos"] == "learned" else None
        self.layers = nn.ModuleList()
        for _ in range(c["L"]):
            layer = nn.Module()
            layer.n1, layer.n2 = norm(), norm()
            layer.q = nn.Linear(d, h * dh, bias=bias)
            layer.k = nn.Linear(d, hkv * dh, bias=bias)
            layer.v = nn.Linear(d, hkv * dh, bias=bias)
            layer.o = nn.Linear(h * dh, d, bias=bias)
            layer.up = nn.Linear(d, dff, bias=bias)
            layer.gate = nn.Linear(d, dff, bias=bias) if c["ffn"] == "swiglu" else None
            layer.down = nn.Linear(dff, d, bias=bias)
            self.layers.append(layer)
        self.final = norm()
        self.head = None if c["tied"] else nn.Linear(d, c["V"], bias=False)

    def forward(self, ids: torch.Tensor, past: int = 0) -> torch.Tensor:
        c = self.c
        B, t = ids.shape
        h, hkv, dh = c["h"], c["hkv"], c["dh"]
        x = self.tok(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(past, past + t, device=ids.device))
        for ly in self.layers:
            a = ly.n1(x)
            q = ly.q(a).view(B, t, h, dh).transpose(1, 2)  # (B, h, t, dh)
            k = ly.k(a).view(B, t, hkv, dh).transpose(1, 2)  # (B, hkv, t, dh)
            v = ly.v(a).view(B, t, hkv, dh).transpose(1, 2)
            if past:  # the cache: past positions' K and V, read, not recomputed
                k = torch.cat([torch.zeros(B, hkv, past, dh, device=k.device), k], 2)
                v = torch.cat([torch.zeros(B, hkv, past, dh, device=v.device), v], 2)
            k = k.repeat_interleave(h // hkv, 1)
            v = v.repeat_interleave(h // hkv, 1)
            w = (q @ k.transpose(-2, -1) / math.sqrt(dh)).softmax(-1)  # (B, h, t, past + t)
            x = x + ly.o((w @ v).transpose(1, 2).reshape(B, t, h * dh))
            b = ly.n2(x)
            u = F.silu(ly.gate(b)) * ly.up(b) if ly.gate is not None else F.gelu(ly.up(b))
            x = x + ly.down(u)
        x = self.final(x)
        return self.head(x) if self.head is not None else F.linear(x, self.tok.weight)


@st.composite
def decoder_configs(draw) -> dict:
    """Small and awkward decoders: MQA (1 K/V head) and GQA, odd widths, odd head sizes."""
    hkv = draw(st.integers(1, 4))
    h = hkv * draw(st.integers(1, 4))
    dh = draw(st.sampled_from([1, 2, 3, 7, 8, 16, 64]))
    pos = draw(st.sampled_from(["learned", "none", "sinusoidal", "rope"] if dh % 2 == 0 else ["learned", "none"]))
    return {
        "L": draw(st.integers(1, 3)), "h": h, "hkv": hkv, "dh": dh, "d": h * dh,
        "dff": draw(st.one_of(st.integers(1, 300), st.just(1024))),
        "V": draw(st.integers(1, 700)), "ffn": draw(st.sampled_from(["gelu", "swiglu"])),
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])), "bias": draw(st.booleans()),
        "tied": draw(st.booleans()), "pos": pos, "max_pos": draw(st.integers(64, 300)),
        "k_suffix": draw(st.booleans()),
    }


def model_flags(c: dict) -> list[str]:
    flags = ["--d-model", str(c["d"]), "--n-layers", str(c["L"]), "--n-heads", str(c["h"]),
             "--n-kv-heads", str(c["hkv"]), "--d-ff", sized(c["dff"], c["k_suffix"]),
             "--vocab-size", str(c["V"]), "--ffn", c["ffn"], "--norm", c["norm"], "--pos", c["pos"],
             "--bias" if c["bias"] else "--no-bias",
             "--tied-embeddings" if c["tied"] else "--untied-embeddings", "--final-norm"]
    if c["pos"] == "learned":
        flags += ["--max-positions", str(c["max_pos"])]
    return flags


def ref_params(c: dict) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in RefDecoder(c).parameters())


def ref_flops(c: dict, batch: int, seq: int, mode: str) -> int:
    with torch.device("meta"):
        m = RefDecoder(c)
        if mode == "decode":  # one new token attending to seq positions, its own included
            ids = torch.zeros(batch, 1, dtype=torch.long)
            with FlopCounterMode(display=False) as fc:
                m(ids, past=seq - 1)
            return fc.get_total_flops()
        ids = torch.zeros(batch, seq, dtype=torch.long)
        with FlopCounterMode(display=False) as fc:
            out = m(ids)
            if mode == "train":
                out.sum().backward()
        return fc.get_total_flops()


# ---------------------------------------------------------------- params, flops, memory, kv-cache


@given(decoder_configs())
@example({"L": 2, "h": 4, "hkv": 1, "dh": 7, "d": 28, "dff": 101, "V": 333, "ffn": "swiglu",
          "norm": "rmsnorm", "bias": True, "tied": False, "pos": "none", "max_pos": 64, "k_suffix": False})
def test_params_from_flags_match_a_torch_model(c):
    """The printed count and the JSON answer are the numel() of the same decoder built in torch."""
    want = ref_params(c)
    out = solve("params", *model_flags(c))
    assert text_answer(out) == want, out
    assert solve_json("params", *model_flags(c))["answer"] == want


@given(decoder_configs(), st.integers(1, 4), st.integers(1, 64), st.sampled_from(["forward", "train", "decode"]))
@settings(max_examples=30)
def test_flops_match_flop_counter_mode(c, batch, seq, mode):
    """--help: "counts what FlopCounterMode counts: matmuls only, attention over the full n × n"."""
    c = dict(c, max_pos=max(c["max_pos"], seq))
    want = ref_flops(c, batch, seq, mode)
    args = ("flops", *model_flags(c), "--batch", str(batch), "--seq", str(seq), "--mode", mode)
    out = solve(*args)
    assert text_answer(out) == want, out
    assert solve_json(*args)["answer"] == want
    macs = solve_json(*args, "--convention", "macs")["answer"]
    assert macs * 2 == want


@pytest.mark.parametrize(("preset", "seq", "past"), [("gpt2", "1024", False), ("gpt2", "1M", True),
                                                   ("bert-base", "513", True), ("llama2-7b", "1M", False)])
def test_flops_past_a_learned_position_table_is_said(preset, seq, past):
    """GPT-2 has 1,024 learned positions: 1M tokens is not a GPT-2 forward; the count is printed with
    a note (RoPE models have no table to run past)."""
    out = solve("flops", "--preset", preset, "--batch", "1", "--seq", seq)
    assert ("learned positions" in out) == past, out


@given(decoder_configs(), st.sampled_from(sorted(DTYPE_BYTES)))
@example({"L": 1, "h": 7, "hkv": 1, "dh": 1, "d": 7, "dff": 3, "V": 5, "ffn": "gelu", "norm": "layernorm",
          "bias": True, "tied": True, "pos": "none", "max_pos": 64, "k_suffix": False}, "int4")  # 257 × 1/2 B
def test_memory_weights_are_params_times_dtype_bytes(c, dtype):
    """Bytes first, then GB (10⁹) and GiB (2³⁰): the three views of params × bytes per element."""
    exact = ref_params(c) * DTYPE_BYTES[dtype]
    out = solve("memory", *model_flags(c), "--dtype", dtype)
    line = answer_line(out)
    printed = number(line)
    # int4: half a byte per weight; an odd count is a half byte the text must not hide
    assert printed == math.ceil(exact), (exact, out)
    assert ("⌈" in out) == (exact.denominator != 1), out  # the rounding up is shown, not hidden
    gb = re.search(r"= ([\d.e+−-]+) GB", line)
    gib = re.search(r"= ([\d.e+−-]+) GiB", line)
    assert gb and gib, line
    assert math.isclose(float(gb.group(1)), printed / 1e9, rel_tol=5e-4)
    assert math.isclose(float(gib.group(1)), printed / 2**30, rel_tol=5e-4)


@given(decoder_configs(), st.integers(1, 64), st.sampled_from([1, 7, 100, 1024, 8192, 32768]),
       st.sampled_from(sorted(DTYPE_BYTES)), st.booleans())
def test_kv_cache_is_two_l_b_n_hkv_dh_bytes(c, batch, seq, dtype, alias):
    """K and V, every layer, h_kv heads (not h): 2·L·B·n·h_kv·d_h·bytes; kv-cache = memory --what kv-cache."""
    want = 2 * c["L"] * batch * seq * c["hkv"] * c["dh"] * DTYPE_BYTES[dtype]
    cmd = ["kv-cache"] if alias else ["memory", "--what", "kv-cache"]
    args = (*cmd, *model_flags(c), "--batch", str(batch), "--seq", sized(seq, True), "--dtype", dtype)
    out = solve(*args)
    assert text_answer(out) == math.ceil(want), out
    assert solve_json(*args)["answer"] == math.ceil(want)


@given(decoder_configs(), st.sampled_from(["mixed", "fp32"]))
def test_training_state_is_sixteen_bytes_a_parameter(c, precision):
    """Mixed: fp16 weights + grads (2+2) and fp32 master, m, v (12); fp32: 4 × 4 (ZeRO paper §3)."""
    want = 16 * ref_params(c)
    out = solve("memory", *model_flags(c), "--what", "training", "--precision", precision)
    assert text_answer(out) == want, out


def _hf_count(model_type: str, **kw) -> int:
    import transformers

    config = transformers.AutoConfig.for_model(model_type, **kw)
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config) if model_type == "bert" else \
            transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("preset", "model_type"), [
    ("gpt2", "gpt2"),  # GPT2Config() is GPT-2 small
    ("llama2-7b", "llama"),  # LlamaConfig() is Llama 2 7B
    ("mistral-7b", "mistral"),  # MistralConfig() is Mistral 7B v0.1
    ("bert-base", "bert"),  # BertConfig() is BERT-base (BertModel: with the pooler)
])
def test_params_presets_match_transformers_default_configs(preset, model_type):
    pytest.importorskip("transformers")
    want = _hf_count(model_type)
    out = solve("params", "--preset", preset)
    assert text_answer(out) == want, out


@pytest.mark.parametrize(("preset", "model_type", "head"), [
    ("gpt2", "gpt2", True), ("bert-base", "bert", False), ("llama2-7b", "llama", True)])
def test_flops_of_presets_match_transformers_modules(preset, model_type, head):
    """A forward of B = 2 sequences of 128 tokens through transformers' own class (eager attention),
    counted by FlopCounterMode on the meta device."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type)
    config._attn_implementation = "eager"
    with torch.device("meta"):
        model = (transformers.AutoModelForCausalLM if head else transformers.AutoModel).from_config(config)
        with FlopCounterMode(display=False) as fc:
            model(input_ids=torch.zeros(2, 128, dtype=torch.long))
    args = ("flops", "--preset", preset, "--batch", "2", "--seq", "128")
    assert text_answer(solve(*args)) == fc.get_total_flops()
    assert solve_json(*args)["answer"] == fc.get_total_flops()


@pytest.mark.parametrize("name", ["qwen3-0.6b.json", "smollm2-135m.json", "llama3.2-1b.json", "gpt-j-6b.json"])
def test_params_and_weights_from_corpus_config_files(name):
    """--config FILE counts what transformers builds from the same file; bf16 weights are 2 bytes each."""
    transformers = pytest.importorskip("transformers")
    path = CORPUS / name
    raw = json.loads(path.read_text())
    config = transformers.AutoConfig.for_model(raw["model_type"], **{k: v for k, v in raw.items() if k != "model_type"})
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    want = sum(p.numel() for p in model.parameters())
    assert text_answer(solve("params", "--config", str(path))) == want
    assert text_answer(solve("memory", "--config", str(path), "--dtype", "bf16")) == 2 * want


# ---------------------------------------------------------------- figures as people type them


@st.composite
def counts(draw, lo: int = 1, hi: int = 10**13) -> tuple[Fraction, str]:
    """A count and how it is written: 70B, 1.4T, 7e9, 3K or in full (K = 10³, B = 10⁹)."""
    fits = [(s, sc) for s, sc in [("", 1), ("K", 10**3), ("M", 10**6), ("B", 10**9), ("T", 10**12)]
            if sc * 999 >= lo and sc <= hi]
    suffix, scale = draw(st.sampled_from(fits))
    step = 10 if scale == 1 else 1  # tenths of a whole count only
    t_lo, t_hi = max(1, -(-lo * 10 // scale)), min(9999, hi * 10 // scale)
    tenths = draw(st.integers(-(-t_lo // step), t_hi // step)) * step
    value = Fraction(tenths * scale, 10)
    style = draw(st.sampled_from(["suffix", "e", "full"]))
    if style == "suffix":
        text = f"{tenths / 10:g}{suffix}"
    elif style == "e":
        text = f"{int(value):.6e}".replace("e+", "e")
    else:
        text = f"{int(value):,}" if draw(st.booleans()) else str(int(value))
    return value, text


@st.composite
def bandwidths(draw) -> tuple[Fraction, str]:
    """Bytes per second: 3.35TB/s (10¹²), 900GB/s, 1.5TiB/s (2⁴⁰), or plain 3.35e12."""
    x = Fraction(draw(st.integers(1, 99999)), 100)
    unit, scale = draw(st.sampled_from([("TB/s", 10**12), ("GB/s", 10**9), ("TiB/s", 2**40), ("GiB/s", 2**30)]))
    if draw(st.booleans()):
        return x * scale, f"{float(x):g}{unit}"
    assume((x * scale).denominator == 1)
    return x * scale, str(int(x * scale))


@st.composite
def peaks(draw) -> tuple[Fraction, str]:
    """Peak FLOP/s: 989T, 989.5e12, 312T."""
    x = Fraction(draw(st.integers(10, 99999)), 10)
    return x * 10**12, (f"{float(x):g}T" if draw(st.booleans()) else f"{float(x):g}e12")


@st.composite
def hbms(draw) -> tuple[Fraction, str]:
    x = draw(st.integers(1, 288))
    unit, scale = draw(st.sampled_from([("GB", 10**9), ("GiB", 2**30)]))
    return Fraction(x * scale), f"{x}{unit}"


fractions_01 = st.sampled_from([("1/2", Fraction(1, 2)), ("0.4", Fraction(2, 5)), ("2/5", Fraction(2, 5)),
                                ("3/7", Fraction(3, 7)), ("1", Fraction(1)), ("0.35", Fraction(7, 20))])
dtypes = st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8", "int4"])
sizes = st.one_of(st.integers(1, 5000), st.sampled_from([1024, 4096, 8192, 12288]))


def check_time(out: str, args: tuple, want: Fraction) -> None:
    """The printed answer (6 s.f.) and the JSON answer (full precision) are ``want`` seconds."""
    assert answer_line(out).split()[1] == "s", out
    assert close_6sf(text_answer(out), float(want)), (float(want), out)
    assert math.isclose(solve_json(*args)["answer"], float(want), rel_tol=1e-12)


@given(sizes, sizes, sizes, st.booleans(), peaks(), bandwidths(), dtypes, dtypes,
       st.sampled_from(["forward", "train"]), st.sampled_from(["read", "resident"]))
@example(3, 5, 7, False, (Fraction(989 * 10**12), "989T"), (Fraction(335 * 10**10), "3.35TB/s"),
         "fp8", "int4", "forward", "read")
@example(4096, 4096, 1024, True, (Fraction(989 * 10**12), "989T"), (Fraction(335 * 10**10), "3.35TB/s"),
         "bf16", "bf16", "forward", "read")  # -M 4k -K 4k -N 1k: 4,096 and 1,024 (a matmul's sizes), not 4,000
def test_matmul_roofline_time(m, k, n, k_suffix, peak, bw, act, wt, mode, activations):
    """X[M,K]·W[K,N]: 2·M·K·N FLOPs; bytes a·M·K (unless resident) + w·K·N + a·M·N; train is 3×
    both (dX and dW each read two operands and write one); time = max(FLOPs/peak, bytes/bandwidth).
    -M, -K and -N are a matmul's sizes (4k = 4096)."""
    if mode == "train" and activations == "resident":
        mode = "forward"  # refused in one line: resident activations are a forward-pass model
    a, w = DTYPE_BYTES[act], DTYPE_BYTES[wt]
    flops = 2 * m * k * n
    by = (a * m * k if activations == "read" else 0) + w * k * n + a * m * n
    if mode == "train":
        flops, by = 3 * flops, 3 * by
    want = max(flops / peak[0], by / bw[0])
    args = ("matmul", "-M", sized(m, k_suffix), "-K", sized(k, k_suffix), "-N", sized(n, k_suffix), "--peak-flops", peak[1],
            "--bandwidth", bw[1], "--dtype", act, "--weight-dtype", wt, "--mode", mode, "--activations", activations)
    out = solve(*args)
    check_time(out, args, want)
    assert breakdown(out, "FLOPs") == flops
    assert ("compute" if flops / peak[0] >= by / bw[0] else "memory") in [
        ln.split()[-1] for ln in out.splitlines() if ln.strip().startswith("bound ")]


def test_matmul_on_a_chip_without_that_dtypes_peak_says_it_answers_the_intensity():
    """--hw h100 --dtype int4: no int4 peak on the preset, so no time: the answer is the intensity
    2·M·K·N / (bytes), and the output says why (it answered a FLOP/byte figure without a word)."""
    out = solve("matmul", "-M", "3", "-K", "5", "-N", "7", "--hw", "h100", "--dtype", "int4")
    by = Fraction(1, 2) * (3 * 5 + 5 * 7 + 3 * 7)
    assert answer_line(out).endswith("FLOP/byte") and close_6sf(text_answer(out), float(2 * 3 * 5 * 7 / by)), out
    assert "no int4 peak" in out, out


@given(peaks(), bandwidths(), dtypes)
def test_roofline_critical_intensity_and_batch(peak, bw, dtype):
    """I* = peak / bandwidth FLOP/byte; B* = I*·w/2 (weights of w bytes, the --help's rule)."""
    istar = peak[0] / bw[0]
    out = solve("roofline", "--peak-flops", peak[1], "--bandwidth", bw[1], "--dtype", dtype)
    assert "FLOP/byte" in answer_line(out)
    assert close_6sf(text_answer(out), float(istar)), out
    assert close_6sf(breakdown(out, "critical batch"), float(istar * DTYPE_BYTES[dtype] / 2)), out


@given(counts(10**6, 10**12), st.integers(1, 70000), st.booleans(), peaks(), st.integers(1, 4096), fractions_01,
       st.one_of(st.none(), bandwidths()))
def test_prefill_time_is_2nt_over_chips_peak_mfu(n, tokens, k_suffix, peak, chips, mfu, bw):
    """2·N·T / (chips·peak·MFU); a bandwidth given is not used, and said so (ignored: --bandwidth)."""
    want = 2 * n[0] * tokens / (chips * peak[0] * mfu[1])
    args = ("prefill", "-N", n[1], "-T", sized(tokens, k_suffix), "--peak-flops", peak[1], "--chips", str(chips),
            "--mfu", mfu[0], *(["--bandwidth", bw[1]] if bw else []))
    out = solve(*args)
    check_time(out, args, want)
    assert ("ignored: --bandwidth" in out) == (bw is not None), out


@given(counts(10**6, 10**12), st.integers(1, 512), st.integers(1, 40000), peaks(), bandwidths(), st.integers(1, 64),
       st.sampled_from(["0", "1/2", "327680", "131072", "1k"]), dtypes, st.sampled_from(["total", "kv-plus-max"]))
def test_decode_step_lower_bound(n, batch, ctx, peak, bw, chips, kv_text, wt, model):
    """Bytes: N·w weights + B·S·(KV bytes a token); FLOPs 2·N·B; total: max(bytes/bw, FLOPs/peak);
    kv-plus-max: KV/bw + max(weights/bw, FLOPs/peak); all over the chips."""
    kv = Fraction(kv_text.replace("k", "000")) if "/" not in kv_text else Fraction(kv_text)
    wbytes, kvbytes, flops = n[0] * DTYPE_BYTES[wt], batch * ctx * kv, 2 * n[0] * batch
    bwc, pkc = chips * bw[0], chips * peak[0]
    want = (max((wbytes + kvbytes) / bwc, flops / pkc) if model == "total"
            else kvbytes / bwc + max(wbytes / bwc, flops / pkc))
    args = ("decode", "-N", n[1], "-B", str(batch), "-S", str(ctx), "--peak-flops", peak[1], "--bandwidth", bw[1],
            "--chips", str(chips), "--kv-bytes-per-token", kv_text, "--weight-dtype", wt, "--model", model)
    out = solve(*args)
    check_time(out, args, want)
    assert "ignored: --mfu" in solve(*args, "--mfu", "1/2"), "an MFU the lower bound does not use is named"


@functools.cache
def _mixtral():
    """transformers' MixtralConfig() (Mixtral-8x7B) and its parameter count on the meta device."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MixtralConfig()
    with torch.device("meta"):
        return cfg, sum(p.numel() for p in transformers.MixtralForCausalLM(cfg).parameters())


@given(st.integers(1, 256), st.integers(1, 32768))
@settings(max_examples=15)
def test_decode_of_a_mixture_of_experts_reads_the_experts_the_batch_touches(batch, ctx):
    """Mixtral-8x7B (transformers' MixtralConfig defaults, counted on the meta device): the step reads
    every non-expert weight but the embedding table (a lookup: B rows), E·(1 − (1 − k/E)^B) experts per
    layer (--help's expected count under uniform routing), and the KV cache 2·L·B·S·h_kv·d_h·2 B."""
    cfg, total = _mixtral()
    d, L, E, k = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_local_experts, cfg.num_experts_per_tok
    per_expert = 3 * d * cfg.intermediate_size
    dense = total - L * E * per_expert - cfg.vocab_size * d + batch * d
    experts = E * (1 - (1 - k / E) ** batch)
    want_weights = 2 * (dense + L * experts * per_expert)
    want_kv = 2 * L * batch * ctx * cfg.num_key_value_heads * (d // cfg.num_attention_heads) * 2
    b = solve_json("decode", "--preset", "mixtral-8x7b", "-B", str(batch), "-S", str(ctx), "--hw", "h100")["breakdown"]
    assert math.isclose(b["weight_bytes"], want_weights, rel_tol=1e-12), (b["weight_bytes"], want_weights)
    assert b["kv_bytes"] == want_kv


@given(counts(10**6, 10**13), counts(10**6, 10**13), peaks(), st.integers(1, 100000), fractions_01)
def test_train_compute_and_days(n, d, peak, chips, mfu):
    """C = 6·N·D FLOPs; days = C / (chips · peak · MFU) / 86,400."""
    c = 6 * n[0] * d[0]
    args = ("train", "-N", n[1], "-D", d[1], "--peak-flops", peak[1], "--chips", str(chips), "--mfu", mfu[0])
    out = solve(*args)
    assert close_6sf(text_answer(out), float(c)), out
    assert solve_json(*args)["answer"] == c
    assert close_6sf(breakdown(out, "days"), float(c / (chips * peak[0] * mfu[1]) / 86400)), out


@given(counts(10**6, 10**13), st.integers(1, 1024), st.integers(0, 3), st.integers(1, 16), hbms())
@example((Fraction(7 * 10**9), "7B"), 3, 2, 12, (Fraction(80 * 2**30), "80GiB"))
@example((Fraction(7 * 10**9), "7B"), 1, 3, 12, (Fraction(10**9), "1GB"))  # does not fit: −111 GB left
def test_zero_model_states_per_gpu(psi, gpus, stage, k, hbm):
    """ZeRO (Rajbhandari et al. 2020, Fig. 1): 2Ψ + 2Ψ + KΨ, the optimizer states (stage ≥ 1),
    gradients (≥ 2) and weights (3) divided over N_d GPUs; what is left of the HBM."""
    p = psi[0]
    parts = [2 * p / (gpus if stage >= 3 else 1), 2 * p / (gpus if stage >= 2 else 1),
             k * p / (gpus if stage >= 1 else 1)]
    want = sum(parts)
    args = ("zero", "-N", psi[1], "--gpus", str(gpus), "--stage", str(stage), "-K", str(k), "--hbm", hbm[1])
    out = solve(*args)
    assert close_6sf(text_answer(out), float(want)), (float(want), out)
    assert math.isclose(solve_json(*args)["answer"], float(want), rel_tol=1e-12)
    left = hbm[0] - want
    assert close_6sf(breakdown(out, "left GB"), float(left / 10**9)), out
    # bytes, GB and GiB of what is left carry one sign (a model that does not fit: all negative)
    line = next(ln for ln in out.splitlines() if re.match(r"\s+left\s\s", ln))
    views = [float(x.replace(",", "").replace("−", "-")) for x in re.findall(r"[−-]?[\d,.]+(?= (?:bytes|GB|GiB|MB|MiB))", line)]
    assert len(views) >= 3 and all((v < 0) == (left < 0) for v in views if v), (float(left), line)


@given(counts(10**6, 10**13), hbms(), st.integers(0, 256), st.integers(1, 200000),
       st.sampled_from(["1/2", "327680", "4096"]), dtypes)
def test_chips_hold_weights_and_cache(n, hbm, batch, ctx, kv_text, wt):
    """⌈(N·w + B·S·KV) / HBM⌉ chips, the whole HBM usable as the --help says."""
    kv = Fraction(kv_text)
    total = n[0] * DTYPE_BYTES[wt] + batch * ctx * kv
    want = math.ceil(total / hbm[0])
    args = ["chips", "-N", n[1], "--hbm", hbm[1], "--weight-dtype", wt]
    if batch:
        args += ["-B", str(batch), "-S", str(ctx), "--kv-bytes-per-token", kv_text]
    out = solve(*args)
    assert text_answer(out) == want and answer_line(out).split()[1] in ("chip", "chips"), (want, out)


@given(counts(10**6, 10**12), counts(1, 10**9), peaks(), st.integers(1, 100000), st.sampled_from(["none", "full"]))
@example((Fraction(70 * 10**9), "70B"), (Fraction(10**12), "1T"), (Fraction(9895 * 10**11), "989.5T"), 1, "none")
def test_mfu_against_hfu(n, tps, peak, chips, recompute):
    """MFU = 6N·tokens/s / (chips·peak); full recomputation adds a forward (8N) to the HFU only."""
    mfu = 6 * n[0] * tps[0] / (chips * peak[0])
    hfu = (8 if recompute == "full" else 6) * n[0] * tps[0] / (chips * peak[0])
    args = ("mfu", "-N", n[1], "--tokens-per-second", tps[1], "--peak-flops", peak[1], "--chips", str(chips),
            "--recompute", recompute)
    out = solve(*args)
    assert close_6sf(text_answer(out), float(mfu)), out
    assert close_6sf(breakdown(out, "HFU"), float(hfu)), out
    # a utilisation above 1 is more FLOP/s than the chips have: said, not printed as if it were fine
    assert ("warning: HFU" in out) == (hfu > 1), out


# ---------------------------------------------------------------- collectives, pipeline, scaling laws


def ring_simulation(op: str, n: int) -> tuple[int, Fraction]:
    """Run a ring collective on n ranks chunk by chunk; return (steps, bytes each rank sends per byte of S).

    Each rank holds n chunks of S/n (all-gather: its own chunk of the gathered S); at every step
    rank r sends one chunk to r + 1. The values are checked at the end: every rank holds the sum
    (all-reduce), its reduced chunk (reduce-scatter) or every chunk (all-gather).
    """
    rng = np.random.default_rng(n)
    data = rng.integers(0, 100, size=(n, n))  # data[r, c]: rank r's chunk c
    want_sum = data.sum(axis=0)
    if op == "all-gather":  # rank r starts with its own chunk r
        partial = [{r: int(data[r, r])} for r in range(n)]
    else:
        partial = [dict(enumerate(map(int, data[r]))) for r in range(n)]
    sent, steps = 0, 0
    phases = {"all-reduce": ["rs", "ag"], "reduce-scatter": ["rs"], "all-gather": ["ag"]}[op]
    for phase in phases:
        for s in range(n - 1):
            msgs = []
            for r in range(n):
                c = (r - s) % n if phase == "rs" else (r - s + (1 if op == "all-reduce" else 0)) % n
                msgs.append(((r + 1) % n, c, partial[r][c]))
            for dst, c, val in msgs:
                partial[dst][c] = partial[dst][c] + val if phase == "rs" else val
            sent += 1  # one chunk of S/n per rank
            steps += 1
    for r in range(n):
        if op == "all-reduce":
            assert [partial[r][c] for c in range(n)] == list(want_sum)
        elif op == "reduce-scatter":
            assert partial[r][(r + 1) % n] == want_sum[(r + 1) % n]
        else:
            assert sorted(partial[r]) == list(range(n)) and all(partial[r][c] == data[c, c] for c in range(n))
    return steps, Fraction(sent, n)


@given(st.sampled_from(["all-reduce", "all-gather", "reduce-scatter"]), st.integers(2, 64),
       st.sampled_from([("1GB", 10**9), ("256MiB", 2**28), ("3.5GiB", 7 * 2**29), ("1e6", 10**6), ("4KiB", 4096)]),
       bandwidths(), st.sampled_from([("0", 0), ("5e-6", Fraction(5, 10**6)), ("1/1000", Fraction(1, 1000)),
                        ("5us", Fraction(5, 10**6)), ("1.5ms", Fraction(3, 2000))]),
       st.sampled_from(["unidirectional", "bidirectional"]), st.booleans(), st.booleans())
@example("all-reduce", 8, ("1GB", 10**9), (Fraction(450 * 10**9), "450GB/s"), ("5us", Fraction(5, 10**6)),
         "unidirectional", False, True)  # α typed with its unit
def test_ring_collectives_against_a_simulated_ring(op, n, size, bw, alpha, ring, asymptotic, alias):
    """t = steps·α + (bytes a rank sends)/β, the bytes counted by running the ring; bidirectional
    sends half each way (half the time); --asymptotic drops (n−1)/n; busbw = algbw·(bus factor)."""
    steps, per_byte = ring_simulation(op, n)
    if asymptotic:
        per_byte = per_byte * n / (n - 1)
    # bidirectional: half the bytes each way; two ranks have one link each way, so no gain (stated)
    bw_time = per_byte * size[1] / bw[0] / (2 if ring == "bidirectional" and n > 2 else 1)
    want = steps * alpha[1] + bw_time
    cmd = ["allreduce"] if (alias and op == "all-reduce") else ["collective", "--op", op]
    args = (*cmd, "-S", size[0], "-n", str(n), "--link-bandwidth", bw[1], "--latency", alpha[0], "--ring", ring,
            *(["--asymptotic"] if asymptotic else []))
    out = solve(*args)
    check_time(out, args, want)
    assert breakdown(out, "steps") == steps
    factor = {"all-reduce": Fraction(2 * (n - 1), n)}.get(op, Fraction(n - 1, n))
    busbw = Fraction(size[1]) / want * factor if want else None
    if busbw is not None:
        assert math.isclose(rate(out, "busbw"), float(busbw), rel_tol=1e-3), (float(busbw), out)


def binomial_tree_allreduce(n: int) -> tuple[int, int, int]:
    """A binomial-tree reduce to rank 0, then a broadcast back, whole buffers at each hop, run rank by
    rank: (rounds, the most buffers one rank sends, buffers sent by all ranks)."""
    sent = [0] * n
    rounds, span = 0, 1
    have = {0}
    while span < n:  # reduce: rank r (a multiple of 2·span) receives from r + span
        for r in range(0, n, 2 * span):
            if r + span < n:
                sent[r + span] += 1
        span *= 2
        rounds += 1
    span //= 2
    while span >= 1:  # broadcast: the same edges, the other way
        for r in sorted(have):
            if r + span < n:
                sent[r] += 1
                have = have | {r + span}
        span //= 2
    assert have == set(range(n))
    return 2 * rounds, max(sent), sum(sent)


@given(st.integers(2, 200), st.sampled_from([("1GB", 10**9), ("3MiB", 3 * 2**20)]), bandwidths(),
       st.sampled_from([("0", 0), ("1e-3", Fraction(1, 1000)), ("5us", Fraction(5, 10**6))]))
def test_tree_allreduce_against_a_simulated_binomial_tree(n, size, bw, alpha):
    """--algorithm tree: every step α + S/β along the simulated tree (reduce, then broadcast)."""
    steps, most, total = binomial_tree_allreduce(n)
    want = steps * (alpha[1] + Fraction(size[1]) / bw[0])
    args = ("allreduce", "-S", size[0], "-n", str(n), "--link-bandwidth", bw[1], "--latency", alpha[0],
            "--algorithm", "tree")
    out = solve(*args)
    check_time(out, args, want)
    assert breakdown(out, "steps") == steps
    assert breakdown(out, "bytes sent max rank") == most * size[1]
    assert breakdown(out, "bytes sent all ranks") == total * size[1]


@given(st.integers(2, 256), st.sampled_from([("1GB", 10**9), ("256MiB", 2**28), ("7e6", 7 * 10**6)]), bandwidths(),
       st.sampled_from([("0", 0), ("1e-6", Fraction(1, 10**6))]))
def test_all_to_all_through_a_switch(n, size, bw, alpha):
    """Pairwise exchange through a switch: n − 1 steps, each rank sending S/n to one other rank each."""
    per_rank = sum(Fraction(size[1], n) for peer in range(n) if peer != 0)  # rank 0's sends; every rank alike
    want = (n - 1) * alpha[1] + per_rank / bw[0]
    args = ("collective", "--op", "all-to-all", "-S", size[0], "-n", str(n), "--link-bandwidth", bw[1],
            "--latency", alpha[0], "--topology", "switch")
    out = solve(*args)
    check_time(out, args, want)
    assert breakdown(out, "steps") == n - 1


def gpipe_bubble(p: int, m: int, f: int = 1, b: int = 2) -> Fraction:
    """Idle share of a GPipe step, simulated: all m forwards through p stages, then all backwards."""
    end_f = [[0] * m for _ in range(p)]
    for i in range(p):
        for j in range(m):
            end_f[i][j] = max(end_f[i - 1][j] if i else 0, end_f[i][j - 1] if j else 0) + f
    last_f = max(end_f[i][m - 1] for i in range(p))
    end_b = [[0] * m for _ in range(p)]
    for i in reversed(range(p)):
        for j in range(m):
            ready = end_b[i + 1][j] if i + 1 < p else last_f
            end_b[i][j] = max(ready, end_b[i][j - 1] if j else 0, end_f[i][m - 1]) + b
    makespan = max(end_b[0][m - 1], last_f)
    return 1 - Fraction(m * (f + b), makespan)


@given(st.integers(1, 32), st.integers(1, 64), st.sampled_from(["gpipe", "1f1b"]), st.booleans())
def test_pipeline_bubble_against_a_simulated_schedule(p, m, schedule, long_flag):
    """The idle share of a simulated GPipe step; 1F1B idles as long (Narayanan et al. 2021, §2.2)."""
    want = gpipe_bubble(p, m)
    args = ("pipeline", "--stages" if long_flag else "-p", str(p), "--microbatches" if long_flag else "-m", str(m),
            "--schedule", schedule)
    out = solve(*args)
    assert close_6sf(text_answer(out), float(want)), (float(want), out)
    assert close_6sf(breakdown(out, "bubble over ideal"), float(Fraction(p - 1, m))), out


@given(st.integers(2, 32), st.integers(1, 8), st.integers(2, 8))
def test_pipeline_interleaved_bubble(p, k, v):
    """Interleaved 1F1B: bubble over the ideal time (p − 1)/(v·m) (Narayanan et al. 2021, §2.2);
    m a multiple of p, as Megatron requires (other m are refused in one line)."""
    m = p * k
    over = Fraction(p - 1, v * m)
    out = solve("pipeline", "-p", str(p), "-m", str(m), "--schedule", "interleaved", "-v", str(v))
    assert close_6sf(breakdown(out, "bubble over ideal"), float(over)), out
    assert close_6sf(text_answer(out), float(over / (1 + over))), out


# Hoffmann et al. 2022 (Chinchilla), approach 3, eq. 10; Besiroglu et al. 2024 (arXiv:2404.10102) Table 1
LAWS = {"fitted": (1.69, 406.4, 410.7, 0.34, 0.28), "besiroglu": (1.8172, 482.01, 2085.43, 0.3478, 0.3658)}


def _n_opt(c: float, method: str) -> float:
    """The compute-optimal N at budget C: the fitted loss E + A/N^α + B/D^β minimised along C = 6·N·D (in log N),
    or √(C/120) for the 20-tokens-per-parameter rule."""
    from scipy.optimize import minimize_scalar

    if method == "rule-20":
        return math.sqrt(c / 120)
    e, a, b, al, be = LAWS[method]
    r = minimize_scalar(lambda x: a * math.exp(-al * x) + b * (c / 6) ** -be * math.exp(be * x),
                        bounds=(math.log(1e3), math.log(1e16)), method="bounded", options={"xatol": 1e-10})
    return math.exp(r.x)


@given(st.sampled_from(["1e20", "3.14e23", "1e24", "5.76e23", "1e26", "2.5e21"]),
       st.sampled_from(["fitted", "besiroglu", "rule-20"]), st.booleans())
def test_compute_optimal_minimises_the_fitted_loss(c_text, method, long_flag):
    """N minimising E + A/N^α + B/D^β along C = 6·N·D, found numerically; rule-20: D = 20·N."""
    c = float(c_text)
    n_opt = _n_opt(c, method)
    args = ("compute-optimal", "--flops" if long_flag else "-C", c_text, "--method", method)
    out = solve(*args)
    assert math.isclose(text_answer(out), n_opt, rel_tol=2e-5), (n_opt, out)
    assert math.isclose(solve_json(*args)["answer"], n_opt, rel_tol=1e-6)
    assert math.isclose(breakdown(out, "tokens"), c / 6 / n_opt, rel_tol=2e-5), out


# ---------------------------------------------------------------- the by-hand kernels

ENTRIES = [("1", 1.0), ("-2", -2.0), ("0", 0.0), ("1/2", 0.5), ("-1/3", -1 / 3), ("0.25", 0.25), ("2.5", 2.5),
           ("3", 3.0), ("-0.7", -0.7), ("7/4", 1.75), ("10", 10.0), ("-12.5", -12.5)]
entries = st.sampled_from(ENTRIES)


def vec_text(v) -> str:
    return " ".join(t for t, _ in v)


def mat_text(rows) -> str:
    return "; ".join(vec_text(r) for r in rows)


def tensor(rows) -> torch.Tensor:
    return torch.tensor([[x for _, x in r] for r in rows], dtype=torch.float64)


def check_vector(out: str, got_json, want: torch.Tensor, digits: int = 4) -> None:
    """JSON to 1e-9; the printed answer rounded to ``digits`` places (half a unit in the last place)."""
    want = want.reshape(-1)
    assert np.allclose(np.ravel(got_json), want.numpy(), rtol=1e-9, atol=1e-9), (got_json, want)
    printed = np.ravel(vector_answer(out))
    assert np.allclose(printed, want.numpy(), rtol=0, atol=0.5 * 10**-digits + 1e-12), (printed, want, out)


@given(st.lists(entries, min_size=1, max_size=8), st.sampled_from([("1", 1.0), ("1/2", 0.5), ("2", 2.0), ("0.7", 0.7)]))
def test_softmax_matches_torch(x, t):
    args = ("softmax", "--x", vec_text(x), "-t", t[0])
    want = F.softmax(tensor([x])[0] / t[1], dim=-1)
    check_vector(solve(*args), solve_json(*args)["answer"], want)


@st.composite
def attention_inputs(draw):
    n, m, dk, dv = (draw(st.integers(1, 4)) for _ in range(4))
    q = [[draw(entries) for _ in range(dk)] for _ in range(n)]
    k = [[draw(entries) for _ in range(dk)] for _ in range(m)]
    v = [[draw(entries) for _ in range(dv)] for _ in range(m)]
    return q, k, v, draw(st.booleans()), draw(st.sampled_from([None, ("1", 1.0), ("1/2", 0.5)]))


@given(attention_inputs())
def test_attention_matches_scaled_dot_product_attention(inp):
    """softmax(Q·Kᵀ·scale + M)·V with torch's SDPA; --causal bottom-right aligned when m > n (its help)."""
    q, k, v, causal, scale = inp
    n, m = len(q), len(k)
    mask = None
    if causal:
        mask = torch.ones(n, m, dtype=torch.bool).tril(diagonal=m - n)
        if not mask.any(-1).all():  # a query seeing no key: torch gives NaN; skip (m < n, top rows empty)
            causal, mask = False, None
    want = F.scaled_dot_product_attention(tensor(q)[None], tensor(k)[None], tensor(v)[None], attn_mask=mask,
                                          scale=None if scale is None else scale[1])[0]
    args = ["attention", "--q", mat_text(q), "--k", mat_text(k), "--v", mat_text(v)]
    args += ["--causal"] if causal else []
    args += ["--scale", scale[0]] if scale else []
    check_vector(solve(*args), solve_json(*args)["answer"], want)


@given(st.lists(entries, min_size=2, max_size=8).filter(lambda v: len({x for _, x in v}) > 1), st.data())
def test_layernorm_matches_torch(x, data):
    d = len(x)
    gamma = data.draw(st.one_of(st.none(), st.lists(entries, min_size=d, max_size=d)))
    beta = data.draw(st.one_of(st.none(), st.lists(entries, min_size=d, max_size=d)))
    eps = data.draw(st.sampled_from([None, ("1e-5", 1e-5), ("0", 0.0), ("1/2", 0.5)]))
    args = ["layernorm", "--x", vec_text(x)]
    args += ["--gamma", vec_text(gamma)] if gamma else []
    args += ["--beta", vec_text(beta)] if beta else []
    args += ["--eps", eps[0]] if eps else []
    want = F.layer_norm(tensor([x])[0], (d,), tensor([gamma])[0] if gamma else None,
                        tensor([beta])[0] if beta else None, eps=eps[1] if eps else 1e-5)
    check_vector(solve(*args), solve_json(*args)["answer"], want)


@given(st.integers(1, 4).flatmap(lambda h: st.lists(entries, min_size=2 * h, max_size=2 * h)),
       st.integers(0, 5000), st.sampled_from(["interleaved", "half"]), st.sampled_from([10000, 500000, 10]))
def test_rope_matches_complex_rotation(x, pos, pairing, base):
    """Pairs as complex numbers, multiplied by e^{i·p·θ_i}, θ_i = base^(−2i/d) (RoFormer eq. 34)."""
    d = len(x)
    t = tensor([x])[0]
    theta = base ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2 / d)
    rot = torch.polar(torch.ones(d // 2, dtype=torch.float64), pos * theta)
    if pairing == "interleaved":
        z = torch.view_as_complex(t.reshape(d // 2, 2).contiguous()) * rot
        want = torch.view_as_real(z).reshape(d)
    else:
        z = torch.complex(t[: d // 2], t[d // 2:]) * rot
        want = torch.cat([z.real, z.imag])
    args = ("rope", "--x", vec_text(x), "--pos", str(pos), "--pairing", pairing, "--base", str(base))
    check_vector(solve(*args), solve_json(*args)["answer"], want)


@given(st.integers(0, 10000), st.integers(1, 64), st.sampled_from(["interleaved", "concat"]), st.data())
def test_pe_matches_the_papers_formula(pos, d, layout, data):
    """PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(...) (Vaswani et al. 2017, §3.5);
    concat: all sines, then all cosines; an odd d's last frequency has only its sine."""
    i = np.arange(0, (d + 1) // 2)
    ang = pos / 10000 ** (2 * i / d)
    sines, cosines = np.sin(ang), np.cos(ang)[: d // 2]
    if layout == "interleaved":
        full = np.empty(d)
        full[0::2], full[1::2] = sines, cosines
    else:
        full = np.concatenate([sines, cosines])
    one = data.draw(st.one_of(st.none(), st.integers(0, d - 1)))
    args = ["pe", "--pos", str(pos), "--d-model", str(d), "--layout", layout]
    if one is not None:
        args += ["--dim", str(one)]
    got = solve_json(*args)["answer"]
    want = torch.tensor(full if one is None else [full[one]])
    check_vector(solve(*args), got, want)


@given(st.lists(entries, min_size=2, max_size=8), st.data(),
       st.sampled_from([("0", 0.0), ("0.1", 0.1), ("1/4", 0.25), ("1", 1.0)]))
def test_cross_entropy_matches_torch(z, data, eps):
    y = data.draw(st.integers(0, len(z) - 1))
    want = F.cross_entropy(tensor([z]), torch.tensor([y]), label_smoothing=eps[1]).item()
    args = ("cross-entropy", "--logits", vec_text(z), "-y", str(y), "--label-smoothing", eps[0])
    out = solve(*args)
    assert answer_line(out).endswith("nats") and close_6sf(text_answer(out), want), (want, out)
    assert math.isclose(solve_json(*args)["answer"], want, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(breakdown(out, "bits"), want / math.log(2), rel_tol=1e-5, abs_tol=1e-6), out


def kept_tokens(z: list[float], t: float, k: int | None, p: float | None, include: bool) -> list[int]:
    """HuggingFace's documented order: temperature, then top-k (ties with the k-th kept), then top-p
    on the renormalised remainder (the smallest set, by descending probability, whose mass reaches p)."""
    probs = np.exp(np.array(z) / t - max(z) / t)
    probs /= probs.sum()
    keep = set(range(len(z)))
    if k is not None and k < len(z):
        kth = sorted(z, reverse=True)[k - 1]
        keep = {i for i in keep if z[i] >= kth}
    if p is not None:
        mass = sum(probs[i] for i in keep)
        order = sorted(keep, key=lambda i: -probs[i])
        acc, chosen = 0.0, []
        for i in order:
            if acc >= p - 1e-12:
                break
            if acc + probs[i] / mass > p + 1e-12 and not include and chosen:
                break
            chosen.append(i)
            acc += probs[i] / mass
        keep = set(chosen)
    return sorted(keep)


@given(st.lists(st.integers(-40, 40), min_size=2, max_size=8, unique=True), st.sampled_from([1, 0.5, 2, 0.7]),
       st.one_of(st.none(), st.integers(1, 8)), st.one_of(st.none(), st.sampled_from([0.3, 0.5, 0.9, 0.95, 1])),
       st.sampled_from(["include", "exclude"]))
def test_sampling_keeps_the_documented_set(z10, t, k, p, crossing):
    """--crossing include: the token that crosses p is kept (HuggingFace's TopPLogitsWarper); exclude:
    it is not (the most probable token always stays)."""
    z = [x / 10 for x in z10]
    want = kept_tokens(z, t, k, p, include=crossing == "include")
    args = ["sampling", "--logits", " ".join(f"{x:g}" for x in z), "-t", str(t), "--crossing", crossing]
    args += ["-k", str(k)] if k else []
    args += ["-p", str(p)] if p is not None else []
    out = solve(*args)
    # listed most probable first (not stated in --help; the set is what is checked)
    assert sorted(json.loads(answer_line(out).rsplit(" ", 1)[0])) == want, (want, out)
    assert sorted(solve_json(*args)["answer"]) == want


# ---------------------------------------------------------------- qkv calc

UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
         "TiB": 2**40}
TIMES = {"s": 1, "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "h": 3600, "days": 86400}


def calc(expr: str) -> tuple[float, str, dict]:
    """The printed value and unit of ``qkv calc EXPR``, and its --json object."""
    out = run("calc", expr)
    first = out.splitlines()[0]
    m = re.match(r"(\S+)\s*(\S*)", first)
    data = json.loads(run("calc", "--json", expr))
    return number(m.group(1)), m.group(2), data


def check_calc(expr: str, want: Fraction, unit: str) -> None:
    value, shown_unit, data = calc(expr)
    first = run("calc", expr).splitlines()[0]
    readings = [part.split("(exactly")[0].strip() for part in first.split("  = ")]
    assert len(readings) == len(set(readings)), f"a reading printed twice: {first!r}"
    assert shown_unit == unit and data["unit"] == unit, (expr, shown_unit, data)
    assert close_6sf(value, float(want)), (expr, float(want), value)
    assert math.isclose(data["value"], float(want), rel_tol=1e-12), (expr, data)


@given(st.integers(1, 10**6), st.sampled_from(["", "e3", "e9"]), st.integers(1, 16), st.sampled_from(sorted(UNITS)),
       st.sampled_from(sorted(UNITS)))
@example(70, "e9", 2, "B", "GiB")
def test_calc_bytes_convert_si_and_binary(a, exp, b, unit_in, unit_out):
    """a·b unit_in -> unit_out: k, M, G, T = 10³ⁿ; Ki, Mi, Gi, Ti = 2¹⁰ⁿ."""
    want = Fraction(a) * 10 ** int(exp[1:] or 0) * b * UNITS[unit_in] / UNITS[unit_out]
    check_calc(f"{a}{exp} * {b} {unit_in} -> {unit_out}", want, unit_out)


@given(st.integers(0, 60), st.sampled_from(sorted(UNITS)))
@example(40, "TiB")
def test_calc_power_takes_the_unit(k, unit_out):
    """2^k B is (2^k) bytes (the unit is the power's, as --help says)."""
    check_calc(f"2^{k} B -> {unit_out}", Fraction(2**k, UNITS[unit_out]), unit_out)


@given(st.integers(1, 1000), st.sampled_from(sorted(TIMES)), st.integers(1, 9))
@example(5, "s", 2)
def test_calc_time_without_a_target(a, unit, k):
    """``5 s * 2`` prints 10 s once (it printed "10 s  = 10 s")."""
    check_calc(f"{a} {unit} * {k} -> s", a * k * Fraction(TIMES[unit]), "s")
    out = run("calc", f"{a} {unit} * {k}").splitlines()[0]
    readings = [part.split("(exactly")[0].strip() for part in out.split("  = ")]
    assert len(readings) == len(set(readings)), out


@given(st.integers(1, 1000), st.integers(1, 1000), st.sampled_from(sorted(UNITS)), st.sampled_from(sorted(UNITS)))
@example(1, 2, "GiB", "MiB")
def test_calc_a_fraction_in_brackets_takes_its_unit(p, q, unit_in, unit_out):
    """(1/2) GiB -> MiB is 512 MiB: a unit after a bracket is the bracket's (``1/2 GiB`` alone is
    1 / (2 GiB), as ``x / 3.35 TB/s`` divides by the bandwidth)."""
    check_calc(f"({p}/{q}) {unit_in} -> {unit_out}", Fraction(p * UNITS[unit_in], q * UNITS[unit_out]), unit_out)


@given(st.integers(1, 10**4), st.sampled_from(["", "e6", "e9"]), st.integers(1, 9999), st.sampled_from(sorted(TIMES)))
@example(70, "e9", 335, "ms")
def test_calc_bytes_over_bandwidth_is_a_time(a, exp, bw_centi, unit_out):
    """a·2 B / (x TB/s) -> unit: the read time of a model's weights."""
    want = Fraction(a) * 10 ** int(exp[1:] or 0) * 2 / (Fraction(bw_centi, 100) * 10**12) / TIMES[unit_out]
    assume(Fraction(1, 10**290) < want < 10**290)
    check_calc(f"{a}{exp} * 2 B / {bw_centi / 100:g} TB/s -> {unit_out}", want, unit_out)


def test_calc_presets_in_expressions():
    """Presets against their sources: Llama 3 8B counted by transformers from the published config
    (corpus llama3.1-8b.json: the same sizes), the H100 SXM datasheet's 80 GB and 989.5 dense TFLOP/s
    (1,979 with sparsity, halved), and Llama 3 8B's KV cache 2·L·B·n·h_kv·d_h·2 B."""
    transformers = pytest.importorskip("transformers")
    raw = json.loads((CORPUS / "llama3.1-8b.json").read_text())
    config = transformers.AutoConfig.for_model(raw["model_type"], **{k: v for k, v in raw.items() if k != "model_type"})
    with torch.device("meta"):
        n = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(config).parameters())
    check_calc("llama3-8b.params * 2 B -> GiB", Fraction(2 * n, 2**30), "GiB")
    check_calc("h100.hbm -> GB", Fraction(80), "GB")
    check_calc("70e9 * 2 * 2e12 FLOP / h100.bf16 -> s", Fraction(70 * 10**9 * 4 * 10**12) / Fraction(9895, 10) / 10**12,
               "s")
    for batch in (1, 3, 16):
        kv = 2 * raw["num_hidden_layers"] * batch * 8192 * raw["num_key_value_heads"] * 128 * 2
        check_calc(f"kv_cache(llama3-8b, seq=8k, batch={batch}, dtype=bf16) -> B", Fraction(kv), "B")


@given(st.integers(1, 10**6), st.sampled_from(sorted(UNITS)), st.sampled_from(sorted(UNITS)))
@example(1, "B", "GiB")
def test_calc_an_expression_may_start_with_a_minus(a, unit_in, unit_out):
    """``qkv calc "-1 B -> GiB"`` is an expression (it was refused as an unknown option '-1')."""
    check_calc(f"-{a} {unit_in} -> {unit_out}", Fraction(-a * UNITS[unit_in], UNITS[unit_out]), unit_out)


@st.composite
def self_attention_inputs(draw):
    h, dk, n, d_in = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    x = [[draw(entries) for _ in range(d_in)] for _ in range(n)]
    w = [[[draw(entries) for _ in range(h * dk)] for _ in range(d_in)] for _ in range(3)]
    wo = draw(st.one_of(st.none(), st.just([[draw(entries) for _ in range(2)] for _ in range(h * dk)])))
    return h, x, w, wo, draw(st.booleans())


@given(self_attention_inputs())
def test_multi_head_self_attention_matches_torch(inp):
    """--x with --wq/--wk/--wv (d_in × h·d_k, Q = X·W_q), --heads h: each head takes its d_k columns
    (Vaswani et al. 2017, §3.2.2), scale 1/√d_k, heads concatenated, then ·W_o when given."""
    h, x, (wq, wk, wv), wo, causal = inp
    X = tensor(x)
    q, k, v = (X @ tensor(w) for w in (wq, wk, wv))
    n, dk = X.shape[0], q.shape[1] // h

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(n, h, dk).transpose(0, 1)  # (h, n, d_k)

    mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None
    o = F.scaled_dot_product_attention(split(q), split(k), split(v), attn_mask=mask)  # (h, n, d_k)
    want = o.transpose(0, 1).reshape(n, h * dk)
    if wo is not None:
        want = want @ tensor(wo)
    args = ["attention", "--x", mat_text(x), "--wq", mat_text(wq), "--wk", mat_text(wk), "--wv", mat_text(wv),
            "--heads", str(h)]
    args += ["--wo", mat_text(wo)] if wo is not None else []
    args += ["--causal"] if causal else []
    check_vector(solve(*args), solve_json(*args)["answer"], want)


@given(counts(10**8, 10**12), counts(10**9, 10**14), st.sampled_from(["fitted", "besiroglu", "rule-20"]))
def test_overtraining_factor(n, d, method):
    """D / D_opt at the same budget C = 6·N·D, D_opt from the minimised fitted loss (or 20·N_opt)."""
    c = 6 * float(n[0]) * float(d[0])
    n_opt = _n_opt(c, method)
    want = float(d[0]) / (c / 6 / n_opt)
    out = solve("compute-optimal", "-N", n[1], "-D", d[1], "--method", method)
    assert math.isclose(text_answer(out), want, rel_tol=2e-5), (want, out)


# ---------------------------------------------------------------- a figure given is used, or named as unused

HW_BASE = {
    "matmul": "-M 512 -K 4096 -N 4096 --hw h100",
    "roofline": "--hw h100",
    "prefill": "-N 7B -T 4k --hw h100",
    "decode": "-N 7B -B 8 -S 4k --hw h100 --kv-bytes-per-token 131072",
    "train": "-N 7B -D 1T --hw h100 --chips 64 --mfu 0.4",
    "chips": "-N 70B --hw h100 -B 8 -S 4k --kv-bytes-per-token 327680",
    "mfu": "-N 7B --tokens-per-second 1e5 --hw h100 --chips 8",
}
HW_EXTRA = ["--bandwidth 1TB/s", "--hbm 1000GB", "--mfu 0.5", "--chips 7", "--weight-dtype int4", "--dtype fp8",
            "--peak-flops 1e15"]


@pytest.mark.parametrize("command", sorted(HW_BASE))
def test_a_hardware_figure_given_changes_the_answer_or_is_named(command):
    """Every command takes the same hardware flags; one that its answer does not use is named on the
    ``ignored:`` line (as a model field is), never dropped without a word (--mfu on a decode step,
    --bandwidth on a prefill, --peak-flops on chips were)."""
    import shlex

    base = shlex.split(HW_BASE[command])
    before = solve_json(command, *base)
    for extra in HW_EXTRA:
        flag = extra.split()[0]
        if flag in base:
            continue
        args = (command, *base, *shlex.split(extra))
        after = solve_json(*args)
        if (after["answer"], after["breakdown"]) == (before["answer"], before["breakdown"]):
            assert flag in after["convention"].get("ignored", {}), (command, extra)
            assert re.search(rf"^ignored: .*{re.escape(flag)} \(", solve(*args), re.M), (command, extra)
