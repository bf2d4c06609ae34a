"""The calculators audited from the outside: what ``qkv solve ...`` and ``qkv calc`` print.

Each test runs the command through click's CliRunner as a user would type it (sizes written with
their suffixes: ``8k``, ``70B``, ``80GiB``, ``3.35TB/s``, fractions ``1/2``), reads the number on the
printed ``answer:`` line (or the printed vector) and, where the command has it, the ``--json``
answer, and compares both with a figure recomputed here without importing ``solver`` or ``drills``:

- ``params``, ``flops``, ``memory``/``kv-cache``: a decoder built in this file with ``torch.nn``
  on the meta device (its ``numel()`` for parameters, ``torch.utils.flop_counter.FlopCounterMode``
  for the FLOPs of a forward, a decode step and a training step); presets and corpus
  ``config.json`` files against transformers' own class built on the meta device; the KV cache
  as 2·L·B·n·h_kv·d_h·bytes (K and V each, every layer), training state as 16 bytes a parameter
  (mixed-precision Adam, Rajbhandari et al. 2020, ZeRO §3: 2+2+12).
- ``matmul``, ``roofline``, ``prefill``, ``decode``, ``train``, ``zero``, ``chips``, ``mfu``:
  the formulas their ``--help`` states (2 FLOPs per multiply-add; bytes of X, W, Y), from figures
  given on the command line.
- ``allreduce``/``collective``: a ring simulated chunk by chunk (bytes each rank sends), then
  α-β time; ``pipeline``: a GPipe schedule simulated tick by tick (the idle share of the step).
- ``compute-optimal``: Chinchilla's fitted loss (Hoffmann et al. 2022, approach 3: E = 1.69,
  A = 406.4, B = 410.7, α = 0.34, β = 0.28) minimised numerically along C = 6·N·D (scipy), and the
  20:1 rule.
- ``softmax``, ``attention``, ``layernorm``, ``cross-entropy``: ``torch.nn.functional``;
  ``rope``: rotation by complex multiplication (``torch.polar``); ``pe``: the paper's formula in
  NumPy; ``sampling``: a top-k / top-p filter written from HuggingFace's documented rule.
- ``qkv calc``: the same expression in ``fractions.Fraction``.

A text answer is held to the house formatter: whole numbers printed in full, others to 6
significant figures (relative error at most 5·10⁻⁶).
"""

from __future__ import annotations

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


@given(decoder_configs(), st.sampled_from(sorted(DTYPE_BYTES)))
def test_memory_weights_are_params_times_dtype_bytes(c, dtype):
    """Bytes first, then GB (10⁹) and GiB (2³⁰): the three views of params × bytes per element."""
    exact = ref_params(c) * DTYPE_BYTES[dtype]
    out = solve("memory", *model_flags(c), "--dtype", dtype)
    line = answer_line(out)
    printed = number(line)
    # int4: half a byte per weight; an odd count is a half byte the text must not hide
    assert printed == math.ceil(exact), (exact, out)
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
