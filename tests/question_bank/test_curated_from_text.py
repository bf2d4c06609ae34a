"""An outsider's audit of the curated source-text items: every key recomputed from the text a student reads.

Each curated item (``question_bank/data/seed00N.toml``) is loaded as the quiz shows it: ``statement_text``,
``options_text`` and each part's ``prompt_text``. Nothing is read from the TOML ``answer`` spec, from
``given`` or from the solution, and nothing is imported from ``solver``: the numbers are parsed from the
text by regular expressions (where the answer does not depend on a size, as the MQA cache ratio or an
embedding lookup past its table, any size is taken and the comment says so), and the answer is recomputed
here, a second way:

- parameter counts: the PyTorch model the statement describes, built on the meta device from
  ``nn.Embedding``, ``nn.Linear``, ``nn.LayerNorm``, ``nn.MultiheadAttention``,
  ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``, counted with
  ``sum(p.numel() for p in m.parameters())`` (a tied tensor counted once);
- FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` on the matmuls the statement names;
- attention, softmax, LayerNorm, masks: ``torch.softmax`` / ``F.layer_norm`` / ``torch.tril`` on the
  printed numbers; the NumPy listings the statement quotes are run as quoted;
- positional encodings, wavelengths, variances, scaling-law factors, MLM and memory arithmetic: the
  formula, written here;
- GPT-3's depth, a fact to recall: the published figure (Brown et al. 2020, Table 2.1).

A convention the recomputation needs (biases, LayerNorms, the mask's meaning, the encoding's layout) must
be stated in the text: :func:`stated` fails, naming the item and the missing words, when it is not.
The key must then accept the value written as a student would write it (rounded half up to the decimals
the text asks: ``question_bank.grading.grade``), and the key's own rounding must be the one the text asks.

Choice items: where an option prints something computable (a number, a shape, a matrix, a convention that
can be run) the options are judged by running it, and the options judged true must be exactly the keyed
ones. The conceptual ones are listed in :data:`CONCEPTUAL` with the reader's verdict (all agree with their
keys); those of their options that make a claim one can run (a parameter count, permutation-equivariance,
the post-/pre-LN formulas, how the cost grows with n) are run too (:data:`RUNNABLE_OPTIONS`).
:func:`test_every_curated_item_is_audited` keeps every item in one list or the other.

Every failure names the item, quotes the statement and gives both values. Each audit is also run on a copy of
its item whose key is wrong by more than its tolerance (``spoiled``): it must report it. The file runs in
about 7 s (73 items recomputed, 19 judged by reading).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from question_bank import curated
from question_bank.grading import grade
from question_bank.problem import ChoiceKey, IntegerKey, MatrixKey, NumericKey, Part, Problem
from tests.question_bank.families.from_text_audit import spoiled


@functools.cache
def problems() -> dict[str, Problem]:
    return {p.id: p for p in curated.load_curated()}


# --------------------------------------------------------------------------- reading the text

_NUM = r"(\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?)"
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "whole": 0}
SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


class Unreadable(AssertionError):
    """The text does not give what the answer needs."""


def number(s: str) -> int | float:
    s = s.replace(",", "")
    return float(s) if "." in s else int(s)


def val(pattern: str, text: str) -> int | float:
    """The number in ``pattern`` (``{n}`` marks it) at its first match in ``text``."""
    m = re.search(pattern.replace("{n}", _NUM), text)
    if m is None:
        raise Unreadable(f"the text does not say {pattern!r}: {text!r}")
    return number(m[1])


def array(name: str, text: str) -> list:
    """``Q = [[1, 0], [0, 1]]`` (also ``Q = K = [[…]]``) or ``x = [1, 2, 3, 4]`` as nested lists."""
    m = re.search(rf"(?<![\w']){re.escape(name)}(?: =)? (?:\w+ = )?(\[[-\d.,\s\[\]−∞]*\])", text)
    if m is None:
        raise Unreadable(f"no array {name} in the text: {text!r}")
    return json.loads(m[1].replace("−∞", "-Infinity").replace("−", "-"))


def decimals_asked(text: str) -> int:
    m = (re.search(r"(?:[Rr]ound(?:ed)?(?: off)? to) (\w+) decimal places?", text)
         or re.search(r"[Gg]ive (?:the factor as )?a (whole) number", text)
         or re.search(r"with (\w+) decimals", text))
    if m is None:
        raise Unreadable(f"the text asks for no rounding: {text!r}")
    return WORDS[m[1]] if m[1] in WORDS else int(m[1])


def round_half_up(x: float, d: int) -> Decimal:
    return Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)


def report(p: Problem, what: str, mine, key) -> str:
    return f"{p.id}: {what}: recomputed from the text {mine!r}, key {key!r}\n    statement: {p.statement_text!r}"


def stated(p: Problem, *phrases: str, text: str | None = None) -> list[str]:
    """The conventions the recomputation relies on, each of which the text must state."""
    text = p.statement_text if text is None else text
    return [report(p, f"the statement does not state {ph!r}, which the key assumes", ph, "—")
            for ph in phrases if ph not in text]


# --------------------------------------------------------------------------- asking the key


def _text_of(p: Problem, target) -> str:
    return p.statement_text + " " + getattr(target, "prompt_text", "")


def check_nat(p: Problem, target, value: float, d: int | None = None) -> list[str]:
    key = target.key
    if not isinstance(key, NumericKey):
        return [report(p, f"a {type(key).__name__} where the text asks for a rounded number", value, key)]
    d = decimals_asked(_text_of(p, target)) if d is None else d
    written = str(round_half_up(value, d))
    out = []
    if not grade(key, Decimal(written), written=written).correct:
        out.append(report(p, f"{_where(target)}the key refuses {written} (to {d} decimals)", value,
                          (key.value, key.lo, key.hi)))
    if key.decimals != d:
        out.append(report(p, f"{_where(target)}the text asks {d} decimals, the key keeps {key.decimals}", value, key.value))
    return out


def check_int(p: Problem, target, value: int) -> list[str]:
    key = target.key
    if float(value) != int(value):
        return [report(p, f"{_where(target)}the recomputed count is not whole", value, getattr(key, "value", key))]
    if isinstance(key, IntegerKey):
        ok = grade(key, int(value)).correct
    elif isinstance(key, NumericKey):
        ok = grade(key, Decimal(int(value)), written=str(int(value))).correct
    else:
        return [report(p, f"a {type(key).__name__} for a count", value, key)]
    return [] if ok else [report(p, f"{_where(target)}the key refuses the count", int(value), key.value)]


def check_matrix(p: Problem, target, rows, d: int | None = -1) -> list[str]:
    """Every entry written to the decimals the text asks (``d=-1``: read them; ``None``: exact)."""
    key = target.key
    if not isinstance(key, MatrixKey):
        return [report(p, f"a {type(key).__name__} for a matrix", rows, key)]
    if d == -1:
        try:
            d = decimals_asked(_text_of(p, target))
        except Unreadable:
            d = None
    rows = [[float(x) for x in r] for r in (rows.tolist() if hasattr(rows, "tolist") else rows)]
    rows = [r if isinstance(r, list) else [r] for r in rows]
    written = [[float(round_half_up(x, d)) if d is not None else x for x in r] for r in rows]
    if not grade(key, written).correct:
        return [report(p, f"{_where(target)}the key refuses the matrix written to {d} decimals", written, key.value)]
    exact = written == rows  # every entry already has at most d decimals (a mask, integer scores): exact is the same
    if key.decimals != d and not (key.decimals is None and exact):
        return [report(p, f"{_where(target)}the text asks {d} decimals, the key keeps {key.decimals}", written, key.value)]
    return []


def check_options(p: Problem, truths: list[bool]) -> list[str]:
    """The options judged true (by computing) are exactly the keyed ones; an MCQ has one."""
    mine = {i for i, t in enumerate(truths) if t}
    assert isinstance(p.key, ChoiceKey)
    out = []
    if p.type == "mcq" and len(mine) != 1:
        out.append(report(p, f"{len(mine)} options are true (options {p.options_text})", sorted(mine), sorted(p.key.correct)))
    elif mine != set(p.key.correct):
        out.append(report(p, f"the options true by computation are not the keyed ones (options {p.options_text})",
                          sorted(mine), sorted(p.key.correct)))
    return out


def _where(target) -> str:
    return f"part ({target.label}): " if isinstance(target, Part) else ""


def part(p: Problem, label: str) -> Part:
    return next(pt for pt in p.parts if pt.label == label)


# --------------------------------------------------------------------------- the models, built on meta


def count(*modules: nn.Module) -> int:
    """Parameters of the modules together, a shared (tied) tensor once."""
    seen = {id(t): t for m in modules for t in m.parameters()}
    return sum(t.numel() for t in seen.values())


class Attention(nn.Module):
    """Q, K, V, O as separate Linears: ``qkv_bias`` on Q/K/V, ``o_bias`` on O, K/V of ``kv_width``."""

    def __init__(self, d: int, *, qkv_bias: bool, o_bias: bool, kv_width: int | None = None):
        super().__init__()
        kv = d if kv_width is None else kv_width
        self.q, self.k, self.v = nn.Linear(d, d, qkv_bias), nn.Linear(d, kv, qkv_bias), nn.Linear(d, kv, qkv_bias)
        self.o = nn.Linear(d, d, o_bias)


def ffn(d: int, d_ff: int, act: type[nn.Module] = nn.ReLU, bias: bool = True) -> nn.Module:
    return nn.Sequential(nn.Linear(d, d_ff, bias), act(), nn.Linear(d_ff, d, bias))


def block(attn: nn.Module, d: int, d_ff: int, act: type[nn.Module] = nn.ReLU, n_norms: int = 2) -> nn.Module:
    return nn.ModuleList([attn, ffn(d, d_ff, act), *[nn.LayerNorm(d) for _ in range(n_norms)]])


def meta(build: Callable[[], nn.Module | list[nn.Module]]):
    with torch.device("meta"):
        return build()


def sinusoidal(pos: int, d: int) -> list[float]:
    """Vaswani et al.: PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(pos/10000^(2i/d))."""
    out = []
    for j in range(d):
        angle = pos / 10000 ** ((j - j % 2) / d)
        out.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
    return out


INTERLEAVED = "PE(pos, 2i) = sin(pos/10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos/10000^(2i/d_model))"

# --------------------------------------------------------------------------- the audits, item by item

AUDITS: dict[str, Callable[[Problem], list[str]]] = {}


def audit(*item_ids: str):
    def register(fn):
        for i in item_ids:
            AUDITS[i] = fn
        return fn

    return register


@audit("000.code.scaling_demo")
def _(p):
    t = p.statement_text
    x = torch.tensor(array("scores", t), dtype=torch.float64)
    out = []
    for pt in p.parts:
        m = re.search(r"/ √(\d+)", pt.prompt_text)
        div = math.sqrt(int(m[1])) if m else 1.0
        out += check_nat(p, pt, torch.softmax(x / div, -1).max().item())
    return out


@audit("000.code.head_dim", "001.code.head_dim")
def _(p):
    t = p.statement_text
    return stated(p, "evenly") + check_int(p, p, val(r"d_model={n}", t) // val(r"n_heads={n}", t))


@audit("000.code.encoder_params")
def _(p):
    t = p.statement_text
    V, d, h, L, dff = (val(r"vocab_size={n}", t), val(r"d_model={n}", t), val(r"n_heads={n}", t),
                       val(r"n_layers={n}", t), val(r"d_ff={n}", t))
    out = stated(p, "nn.MultiheadAttention with its default biases", "Linear→GELU→Linear with biases",
                 "two LayerNorms", "a final LayerNorm", "sinusoidal buffer")
    model = meta(lambda: nn.ModuleList([nn.Embedding(V, d), nn.LayerNorm(d)]
                                       + [block(nn.MultiheadAttention(d, h), d, dff, nn.GELU) for _ in range(L)]))
    return out + check_int(p, p, count(model))


@audit("000.code.minigpt_params")
def _(p):
    t = p.statement_text
    V, d, h, L, dff, S = (val(r"vocab_size={n}", t), val(r"d_model={n}", t), val(r"n_heads={n}", t),
                          val(r"n_layers={n}", t), val(r"d_ff={n}", t), val(r"max_seq={n}", t))
    out = stated(p, "learned positions", "the LM head's weight tied to the token embedding",
                 "nn.MultiheadAttention with biases", "Linear→GELU→Linear with biases", "two LayerNorms",
                 "a final LayerNorm", "LM head has no bias")

    def build():
        tok, pos = nn.Embedding(V, d), nn.Embedding(S, d)
        head = nn.Linear(d, V, bias=False)
        head.weight = tok.weight
        return [tok, pos, head, nn.LayerNorm(d)] + [block(nn.MultiheadAttention(d, h), d, dff, nn.GELU) for _ in range(L)]

    return out + check_int(p, p, count(*meta(build)))


@audit("000.code.bert_classifier_params")
def _(p):
    t = p.statement_text
    m = re.search(r"embedding (\d+)×(\d+), positions (\d+)×(\d+)", t)
    V, d, S = int(m[1]), int(m[2]), int(m[3])
    m = re.search(r"nn\.MultiheadAttention\((\d+), (\d+)\), FFN (\d+)→(\d+)→(\d+) with biases", t)
    h, dff = int(m[2]), int(m[4])
    L = WORDS[re.search(r"(\w+) pre-LN blocks", t)[1]]
    hd = [int(x) for x in re.search(r"head Linear\((\d+), (\d+)\) → GELU → Linear\((\d+), (\d+)\)", t).groups()]
    out = stated(p, "a learned [CLS] vector", "two LayerNorms", "a final LayerNorm")

    def build():
        cls = nn.ParameterList([nn.Parameter(torch.empty(d))])
        head = nn.Sequential(nn.Linear(hd[0], hd[1]), nn.GELU(), nn.Linear(hd[2], hd[3]))
        return [nn.Embedding(V, d), nn.Embedding(S, d), cls, nn.LayerNorm(d), head] + [
            block(nn.MultiheadAttention(d, h), d, dff, nn.GELU) for _ in range(L)]

    return out + check_int(p, p, count(*meta(build)))


@audit("000.s.attention_memory")
def _(p):
    t = p.statement_text
    out = stated(p, "float32", "GiB")
    b, h, n = val(r"Batch {n}", t), val(r"{n} heads", t), val(r"sequence length {n}", t)
    scores = meta(lambda: torch.empty(b, h, n, n, dtype=torch.float32))
    return out + check_nat(p, p, scores.numel() * scores.element_size() / 2**30)


@audit("000.code.causal_mask")
def _(p):
    t = p.statement_text
    n, diag = val(r"make_causal_mask\({n}\)", t), val(r"diagonal={n}", t)
    return stated(p, "torch.triu(torch.ones(n, n), diagonal=1).bool()", ".int()") + \
        check_matrix(p, p, torch.triu(torch.ones(n, n), diagonal=diag).bool().int(), d=None)


@audit("000.s.uniform_attention")
def _(p):
    t = p.statement_text
    n = WORDS[re.search(r"All (\w+) scores", t)[1]]
    assert n == val(r"the {n} keys", t), p.id
    return check_nat(p, p, torch.softmax(torch.full((n,), 3.0, dtype=torch.float64), -1).max().item())


@audit("001.code.block_params", "001.ex4.post_ln_params")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d_model={n}", t), val(r"n_heads={n}", t), val(r"d_ff={n}", t)
    if p.id == "001.code.block_params":
        out = stated(p, f"four nn.Linear({d}, {d}, bias=False) projections",
                     f"nn.Linear({d}, {dff}) and nn.Linear({dff}, {d}) (with biases)", "two LayerNorms")
    else:
        out = stated(p, "bias-free attention projections", "the FeedForward with biases", "the two LayerNorms")
    m = meta(lambda: block(nn.MultiheadAttention(d, h, bias=False), d, dff))
    return out + check_int(p, p, count(m))


def _encoder(V: int, d: int, h: int, dff: int, L: int) -> nn.Module:
    """Token embedding, L blocks (bias-free attention, ReLU FFN with biases, two LayerNorms), a final LayerNorm."""
    return meta(lambda: nn.ModuleList([nn.Embedding(V, d), nn.LayerNorm(d)]
                                      + [block(nn.MultiheadAttention(d, h, bias=False), d, dff) for _ in range(L)]))


@audit("001.code.mini_encoder_params")
def _(p):
    t = p.statement_text
    out = stated(p, "a token embedding", "sinusoidal positions (a buffer, no parameters)", "bias-free W_Q, W_K, W_V, W_O",
                 "a ReLU FeedForward", "with biases", "two LayerNorms", "a final LayerNorm", "no output head")
    m = _encoder(val(r"vocab_size={n}", t), val(r"d_model={n}", t), val(r"n_heads={n}", t), val(r"d_ff={n}", t),
                 val(r"n_layers={n}", t))
    return out + check_int(p, p, count(m))


@audit("001.code.bert_sized_configs")
def _(p):
    out = stated(p, "bias-free attention", "ReLU FFN with biases", "two LayerNorms per block", "a final LayerNorm",
                 "sinusoidal positions", "no segment embeddings, pooler or output head")
    for pt in p.parts:
        t = pt.prompt_text
        m = _encoder(val(r"vocab {n}", t), val(r"d = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t),
                     val(r"{n} layers", t))
        out += check_int(p, pt, count(m))
    return out


@audit("001.s8.attention_params_scaling")
def _(p):
    t = p.statement_text
    a, b = val(r"from {n}", t), val(r"to {n}", t)
    n = [count(meta(lambda d=d: nn.MultiheadAttention(d, 1, bias=False))) for d in (a, b)]
    return stated(p, "(bias-free)") + check_nat(p, p, n[1] / n[0])


@audit("001.ex3.per_layer")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t)
    out = stated(p, "bias-free attention", "ReLU FFN with biases", "two LayerNorms per block")
    return out + check_int(p, p, count(_encoder(1, d, h, dff, 3)) - count(_encoder(1, d, h, dff, 2)))


@audit("001.ex1.causal_mask", "004.ex.b6")
def _(p):
    t = p.statement_text
    n = val(r"for {n} positions", t) if "positions" in t else val(r"length {n}", t)
    out = stated(p, "1 = position i may attend to position j") if p.id.startswith("001") else \
        stated(p, "1 = may attend and 0 = blocked", "row i = query i")
    allowed = torch.arange(n)[None, :] <= torch.arange(n)[:, None]  # key j ≤ query i
    return out + check_matrix(p, p, allowed.int(), d=None)


@audit("001.ex2.attention_heatmap")
def _(p):
    t = p.statement_text
    dk = val(r"dₖ = {n}", t)
    out = []
    for pt, i in zip(p.parts, "₁₂", strict=True):
        q = torch.tensor(array(f"Q{i}", t), dtype=torch.float64)
        k = torch.tensor(array(f"K{i}", t), dtype=torch.float64)
        out += check_matrix(p, pt, torch.softmax(q @ k.T / math.sqrt(dk), -1))
    return out


@audit("002.code.mha_params", "004.s6.mha_params")
def _(p):
    t = p.statement_text
    if p.id.startswith("002"):
        d, h = val(r"d_model={n}", t), val(r"n_heads={n}", t)
        out = stated(p, f"four nn.Linear({d}, {d}, bias=False)")
    else:
        d, h = val(r"d_model = {n}", t), val(r"h = {n}", t)
        out = stated(p, "without biases", "W_O")
    return out + check_int(p, p, count(meta(lambda: nn.MultiheadAttention(d, h, bias=False))))


@audit("002.code.encoder_block_params")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d_model={n}", t), val(r"n_heads={n}", t), val(r"d_ff={n}", t)
    out = stated(p, "bias-free W_Q, W_K, W_V, W_O", f"Linear({d}, {dff}) → GELU → Linear({dff}, {d}) with biases",
                 "two LayerNorms (γ, β)")
    return out + check_int(p, p, count(meta(lambda: block(nn.MultiheadAttention(d, h, bias=False), d, dff, nn.GELU))))


@audit("002.code.mask_convention")
def _(p):
    t = p.statement_text
    n = val(r"over {n} tokens", t)
    out = stated(p, "scores.masked_fill(mask == 0, float('-inf'))")
    allowed = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
    mask = allowed.int()
    w = torch.softmax(torch.randn(n, n).masked_fill(mask == 0, float("-inf")), -1)  # the function's own masking
    assert torch.equal(w > 0, allowed), p.id  # this mask gives causal weights
    return out + check_matrix(p, p, mask, d=None)


@audit("003.code.encoder_layer_params")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d_model={n}", t), val(r"nhead={n}", t), val(r"dim_feedforward={n}", t)
    return check_int(p, p, count(meta(lambda: nn.TransformerEncoderLayer(d_model=d, nhead=h, dim_feedforward=dff))))


@audit("003.s.lora_adapters")
def _(p):
    t = p.statement_text
    r = val(r"r = {n}", t)
    m = re.search(r"(\d+)×(\d+) projection", t)
    d_out, d_in = int(m[1]), int(m[2])
    a, b = meta(lambda: (nn.Linear(d_in, r, bias=False), nn.Linear(r, d_out, bias=False)))
    return stated(p, "A: r×dᵢₙ, B: dₒᵤₜ×r") + check_int(p, p, count(a, b))


def _bert(V: int, d: int, h: int, dff: int, L: int, S: int, types: int) -> int:
    """BERT: word, position, segment tables and their LayerNorm; L post-norm layers with biases everywhere
    and a GELU FFN (``nn.TransformerEncoderLayer`` holds the same tensors); the pooler Linear(d, d)."""
    def build():
        return [nn.Embedding(V, d), nn.Embedding(S, d), nn.Embedding(types, d), nn.LayerNorm(d), nn.Linear(d, d)] + [
            nn.TransformerEncoderLayer(d, h, dff, activation="gelu") for _ in range(L)]

    return count(*meta(build))


def _bert_read(t: str, positions: str) -> int:
    """A BERT's count from a statement that prints its vocabulary, sizes, layers, positions and segment types."""
    return _bert(val(r"vocabulary {n}", t), val(r"d_model = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t),
                 val(r"{n} post-norm encoder layers", t), val(positions, t), val(r"{n} segment types", t))


@audit("003.s.model_table")
def _(p):
    t = p.statement_text
    out = stated(p, "post-norm", "embedding LayerNorm", "pooler", "positions", "segment types")
    return out + check_int(p, p, _bert_read(t, r"{n} positions"))


@audit("004.s10.bert_base_params")
def _(p):
    t = p.statement_text
    out = stated(p, "post-norm", "GELU", "biases everywhere", "an embedding LayerNorm", "pooler (768×768 with bias)")
    return out + check_int(p, p, _bert_read(t, r"{n} learned positions"))


@audit("003.s.mlm")
def _(p):
    t = p.statement_text
    sel, keep, n = val(r"selects {n}%", t), val(r"{n}% unchanged", t), val(r"of {n} tokens", t)
    return check_int(p, p, Fraction(n * sel * keep, 100**2))


@audit("004.s10.bert_masking")
def _(p):
    t = p.statement_text
    n, sel = val(r"batch of {n} tokens", t), val(r"selects {n}%", t)
    shares = {"a": 100, "b": val(r"{n}% become \[MASK\]", t), "c": val(r"{n}% a random token", t)}
    return [e for pt in p.parts for e in check_int(p, pt, Fraction(n * sel * shares[pt.label], 100**2))]


@audit("004.ex.b1", "004.we.attention_by_hand")
def _(p):
    t = p.statement_text
    q = torch.tensor(array("Q", t), dtype=torch.float64)
    k = torch.tensor(array("K", t) if "K = [" in t else array("Q", t), dtype=torch.float64)
    v = torch.tensor(array("V", t), dtype=torch.float64)
    dk = val(r"dₖ = {n}", t)
    assert q.shape[1] == dk, p.id
    s = q @ k.T
    steps = [s, s / math.sqrt(dk), torch.softmax(s / math.sqrt(dk), -1), torch.softmax(s / math.sqrt(dk), -1) @ v]
    return [e for pt, m in zip(p.parts, steps, strict=True) for e in check_matrix(p, pt, m)]


@audit("004.ex.b2")
def _(p):
    t = p.statement_text.translate(SUPER)
    d = val(r"ℝ{n}", t)
    # Var(Σ qᵢkᵢ) = Σ E[qᵢ²]·E[kᵢ²] (independent, zero-mean); E[x²] = 1 for N(0, 1): the variance of N(0, 1)
    e_x2 = torch.distributions.Normal(0.0, 1.0).variance.item()
    return stated(p, "independent", "N(0, 1)") + check_int(p, p, round(d * e_x2 * e_x2))


@audit("004.ex.b3")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d_model = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t)
    out = stated(p, "the four attention projections with their biases", "the ReLU FFN with its biases", "both LayerNorms")
    return out + check_int(p, p, count(meta(lambda: nn.TransformerEncoderLayer(d, h, dff))))


def flops(fn: Callable[[], object]) -> int:
    with torch.device("meta"), FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


@audit("004.ex.b5")
def _(p):
    t = p.statement_text
    n, d, dh, steps = val(r"n = {n}", t), val(r"d_model = {n}", t), val(r"d_hidden = {n}", t), val(r"over the {n} steps", t)
    out = stated(p, "2 FLOPs per multiply-add", "one d×d matrix–vector product per step")

    def qk():
        q, k = torch.empty(n, d), torch.empty(n, d)
        return q @ k.T

    def qk_av():
        a, v = qk(), torch.empty(n, d)
        return a @ v

    rnn = steps * flops(lambda: torch.empty(dh, dh) @ torch.empty(dh, 1))  # FlopCounterMode counts mm, not mv
    got = {"a": flops(qk), "b": flops(qk_av), "c": rnn}
    return out + [e for pt in p.parts for e in check_int(p, pt, got[pt.label])]


@audit("004.ex.b7")
def _(p):
    t = p.statement_text
    d, h = val(r"d_model = {n}", t), val(r"h = {n}", t)
    dff = val(r"d_ff = {n} d_model", t) * d
    out = stated(p, "MHA with biases", "GELU FFN with biases", "two LayerNorms")
    return out + check_int(p, p, count(meta(lambda: nn.TransformerEncoderLayer(d, h, dff, activation="gelu"))))


@audit("004.ex.b8")
def _(p):
    t = p.statement_text
    h, dh, n = val(r"h = {n}", t), 16, 10  # the cache per token and layer: K and V of every K/V head (any dₕ, any n)
    mha, mqa = (meta(lambda kv=kv: torch.empty(2, kv, n, dh)).numel() for kv in (h, 1))
    return stated(p, "one K/V head shared by all") + check_nat(p, p, mha / mqa)


@audit("004.ex.c1")
def _(p):
    t = p.statement_text
    m = re.search(r"np\.ones\(\((\d+), (\d+)\), dtype=bool\), k=(\d+)\)", t)
    out = stated(p, "np.triu(", "True as 1 and False as 0")
    return out + check_matrix(p, p, np.triu(np.ones((int(m[1]), int(m[2])), dtype=bool), k=int(m[3])).astype(int), d=None)


@audit("004.ex.c2")
def _(p):
    t = p.statement_text
    d = val(r"d_model = {n}", t)
    m = re.search(r"PE\[(\d+)\]·PE\[(\d+)\]", t)
    a, b = sinusoidal(int(m[1]), d), sinusoidal(int(m[2]), d)  # a dot product: the same in either layout
    return check_nat(p, p, float(np.dot(a, b)))


@audit("004.ex.c3")
def _(p):
    t = p.statement_text
    z = torch.tensor(array("logits", t), dtype=torch.float64)
    return check_nat(p, p, torch.softmax(z / val(r"T = {n}", t), -1).max().item())


@audit("004.ex.c4", "004.s9.layernorm_by_hand")
def _(p):
    t = p.statement_text.translate(SUPER)
    x = torch.tensor(array("x", t), dtype=torch.float64)
    eps = 10.0 ** -val(r"ε = 10-{n}", t) if "ε = 10-" in t else float(val(r"ε = {n}", t))
    out = stated(p, "γ = 1, β = 0", "biased variance")
    return out + check_matrix(p, p, [F.layer_norm(x, x.shape, eps=eps).tolist()])


@audit("004.we.code_mixed_positions")
def _(p):
    t = p.statement_text
    words = re.search(r'"([^"]+)" \(one token per word\)', t)[1].split()
    assert len(words) == val(r"In the {n}-token sentence", t), p.id
    a, b = re.findall(r'between "(\w+)" and "(\w+)"', t)[0]
    return check_int(p, p, words.index(b) - words.index(a) - 1)


@audit("004.we.causal_mask_8")
def _(p):
    t = p.statement_text
    n = val(r"the input has {n} tokens", t)
    prompt, last = re.search(r'after "([^"]+)"', t)[1].split(), re.search(r'the last one "(\w+)"', t)[1]
    assert len(prompt) + 1 == n and last, p.id  # the prompt's tokens and the one generated so far
    allowed = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
    return stated(p, "1 = attend, 0 = blocked") + check_matrix(p, p, allowed.int(), d=None)


@audit("004.s5.dot_product_std")
def _(p):
    t = p.statement_text
    d = val(r"dₖ = {n}", t)
    return stated(p, "i.i.d. N(0,1)") + check_nat(p, p, math.sqrt(d))  # Var(q·k) = dₖ (see 004.ex.b2)


@audit("004.s5.masked_softmax")
def _(p):
    s = torch.tensor(array("matrix", p.statement_text), dtype=torch.float64)
    return check_matrix(p, p, torch.softmax(s, -1))


@audit("004.s7.pe_table")
def _(p):
    t = p.statement_text
    d = val(r"d_model = {n}", t)
    lo, hi = (int(x) for x in re.search(r"positions (\d+)–(\d+)", t).groups())
    dlo, dhi = (int(x) for x in re.search(r"dimensions (\d+)–(\d+)", t).groups())
    rows = [sinusoidal(pos, d)[dlo:dhi + 1] for pos in range(lo, hi + 1)]
    return stated(p, INTERLEAVED) + check_matrix(p, p, rows)


@audit("004.code.pe_row")
def _(p):
    t = p.statement_text
    d, pos, dec = val(r"d_model={n}", t), val(r"PE\[{n}\]", t), val(r"np\.round\(PE\[\d+\], {n}\)", t)
    return stated(p, INTERLEAVED) + check_matrix(p, p, [sinusoidal(pos, d)], d=dec)


@audit("004.s7.pe_wavelength")
def _(p):
    t = p.statement_text
    d = val(r"d_model = {n}", t)
    dim = val(r"dimensions {n} and", t)
    i = dim // 2  # the pair (2i, 2i+1)
    return check_nat(p, p, 2 * math.pi * 10000 ** (2 * i / d))


@audit("004.s8.transformer_params")
def _(p):
    t = p.statement_text
    d, h, dff, V = val(r"d_model = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t), val(r"shared {n}-token", t)
    n_enc, n_dec = (int(x) for x in re.search(r"(\d+)\+(\d+) layers", t).groups())
    out = stated(p, "ReLU", "post-norm", "biases everywhere", "sinusoidal positions", "the output projection (no bias)",
                 "no final LayerNorm")

    def build():
        emb = nn.Embedding(V, d)
        out_proj = nn.Linear(d, V, bias=False)
        out_proj.weight = emb.weight
        return [emb, out_proj] + [nn.TransformerEncoderLayer(d, h, dff) for _ in range(n_enc)] + [
            nn.TransformerDecoderLayer(d, h, dff) for _ in range(n_dec)]

    return out + check_int(p, p, count(*meta(build)))


@audit("004.s10.gpt2_xl_params")
def _(p):
    t = p.statement_text
    d, h, dff, V = val(r"d_model = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t), val(r"vocabulary {n}", t)
    L, S = val(r"{n} pre-norm decoder layers", t), val(r"{n} learned positions", t)
    out = stated(p, "GELU", "biases", "tied to the LM head", "a final LayerNorm")

    def build():
        tok = nn.Embedding(V, d)
        head = nn.Linear(d, V, bias=False)
        head.weight = tok.weight
        return [tok, nn.Embedding(S, d), head, nn.LayerNorm(d)] + [
            nn.TransformerEncoderLayer(d, h, dff, activation="gelu", norm_first=True) for _ in range(L)]

    return out + check_int(p, p, count(*meta(build)))


@audit("004.s10.gpt_depth")
def _(p):
    # Not computable from the text (a fact to recall): Brown et al. 2020, "Language Models are Few-Shot
    # Learners", Table 2.1: GPT-3 175B has n_layers = 96 (d_model = 12288, n_heads = 96).
    return stated(p, "GPT-3 175B") + check_int(p, p, 96)


@audit("004.s11.attention_entries")
def _(p):
    n = val(r"n = {n} tokens", p.statement_text)
    return check_int(p, p, meta(lambda: torch.empty(n, n)).numel())


@audit("004.code.attention_demo")
def _(p):
    t = p.statement_text
    seed = val(r"np\.random\.seed\({n}\)", t)
    m = re.search(r"np\.random\.randn\((\d+), (\d+)\)", t)
    out = stated(p, "(in that order)", "scaled dot-product attention", "unmasked")
    rng_state = np.random.get_state()
    try:
        np.random.seed(seed)
        q, k, _v = (np.random.randn(int(m[1]), int(m[2])) for _ in range(3))
    finally:
        np.random.set_state(rng_state)
    w = torch.softmax(torch.tensor(q @ k.T / math.sqrt(q.shape[1])), -1)
    return out + check_matrix(p, p, w, d=val(r"np\.round\(weights, {n}\)", t))


@audit("004.code.block_stats")
def _(p):
    t = p.statement_text.translate(SUPER)
    d, h, dff = val(r"d = {n}", t), val(r"h = {n}", t), val(r"d_ff = {n}", t)
    eps = 10.0 ** -val(r"ε = 10-{n}", t)
    rows, cols = (int(x) for x in re.search(r"(\d+)×(\d+) output", t).groups())
    assert cols == d, p.id
    out = stated(p, "post-norm", "γ = 1, β = 0", "h.std()")
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(d, h, dff, dropout=0.0, layer_norm_eps=eps, dtype=torch.float64)  # post-norm
        y = layer(torch.randn(rows, d, dtype=torch.float64))
    # np.std is the population std (ddof = 0); any weights: a LayerNorm output has rows of mean 0, variance ≈ 1
    return out + check_nat(p, p, y.std(unbiased=False).item(), d=decimals_asked(t))


def _mini_gpt(V: int, S: int, d: int, h: int, dh: int, dff: int, L: int, kv_heads: int | None = None) -> nn.Module:
    def build():
        blocks = [block(Attention(d, qkv_bias=False, o_bias=True, kv_width=(kv_heads or h) * dh), d, dff) for _ in range(L)]
        return nn.ModuleList([nn.Embedding(V, d), nn.Embedding(S, d), nn.LayerNorm(d), nn.Linear(d, V)] + blocks)

    assert h * dh == d
    return meta(build)


_MINI_GPT_WORDS = ("bias-free Q/K/V", "output projection with bias", "ReLU FFN of 512", "two LayerNorms per block",
                   "a final LayerNorm", "untied lm_head")


@audit("004.code.minigpt_params")
def _(p):
    t = p.statement_text
    V, S, d = val(r"vocabulary {n}", t), val(r"BLOCK_SIZE = {n}", t), val(r"D_MODEL = {n}", t)
    h, dh = (int(x) for x in re.search(r"(\d+) heads of (\d+)", t).groups())
    L, dff = val(r"{n} pre-norm blocks", t), val(r"ReLU FFN of {n}", t)
    out = stated(p, "Q/K/V bias=False", "the output projection with bias", "(biases)", "two LayerNorms per block",
                 "a final LayerNorm", f"untied lm_head = nn.Linear({d}, {V}) with bias")
    return out + check_int(p, p, count(_mini_gpt(V, S, d, h, dh, dff, L)))


@audit("004.lab.layers_2_vs_6")
def _(p):
    t = p.statement_text
    V, S, d = val(r"vocabulary {n}", t), val(r"BLOCK_SIZE = {n}", t), val(r"D_MODEL = {n}", t)
    h, dh = (int(x) for x in re.search(r"(\d+) heads of (\d+)", t).groups())
    dff = val(r"ReLU FFN of {n}", t)
    out = stated(p, *_MINI_GPT_WORDS, "with biases", "with bias")
    return out + [e for pt in p.parts for e in check_int(p, pt, count(_mini_gpt(V, S, d, h, dh, dff,
                                                                                val(r"The {n}-layer", pt.prompt_text))))]


@audit("004.lab.bonus3_gqa")
def _(p):
    t = p.statement_text
    d = val(r"d_model = {n}", t)
    h, dh = (int(x) for x in re.search(r"(\d+) query heads of (\d+)", t).groups())
    kv = val(r"with {n} K/V heads", t)
    out = stated(p, "bias-free Q/K/V", "output projection with bias")
    a = part(p, "a")
    out += check_int(p, a, count(meta(lambda: Attention(d, qkv_bias=False, o_bias=True, kv_width=kv * dh))))
    b = part(p, "b")
    L, n = val(r"\({n} layers", b.prompt_text), val(r"a full {n}-token context", b.prompt_text)
    was = val(r"than with {n} K/V heads", b.prompt_text)
    cache = [meta(lambda g=g: torch.empty(L, 2, g, n, dh, dtype=torch.float16)) for g in (was, kv)]
    return out + check_nat(p, b, cache[0].nbytes / cache[1].nbytes)


@audit("004.s17.scaling_law")
def _(p):
    t = p.statement_text
    alpha = val(r"N\^\(-{n}\)", t)
    grow = val(r"grows {n}×", t)
    return check_nat(p, p, grow ** -alpha)


# --------------------------------------------------------------------------- choice items, by running them


def _option_number(o: str) -> float:
    """The figure an option prints: ``590,592``, ``~3.1M``, ``~500K``, ``32² = 1024``, ``√32 ≈ 5.7``, ``1: …``."""
    head = o.split(":")[0]
    m = re.search(r"[=≈]\s*" + _NUM, head) or re.search(r"~?" + _NUM + r"\s*([KMB])?", head)
    x = float(number(m[1]))
    if m.re.groups > 1 and m[2]:
        x *= {"K": 1e3, "M": 1e6, "B": 1e9}[m[2]]
    return x


@audit("004.gate.q1")
def _(p):
    t = p.statement_text
    dk = val(r"d_model = {n}", t) // val(r"h = {n}", t)
    return check_options(p, [_option_number(o) == dk for o in p.options_text])


@audit("004.gate.q3")
def _(p):
    t = p.statement_text
    d, h, dff = val(r"d_model={n}", t), val(r"h={n}", t), val(r"d_ff={n}", t)
    out = stated(p, "Count every weight and bias, and both LayerNorms")
    n = count(meta(lambda: nn.TransformerEncoderLayer(d, h, dff)))
    dist = [abs(math.log(_option_number(o) / n)) for o in p.options_text]
    return out + check_options(p, [x == min(dist) for x in dist])


@audit("003.code.lora_trainable")
def _(p):
    t = p.statement_text
    out = stated(p, "super().__init__(in_features, out_features)", "nn.Parameter(torch.randn(in_features, rank) * 0.01)",
                 "nn.Parameter(torch.zeros(rank, out_features))", "and then calls self.requires_grad_(False)")
    m = re.search(r"LoRALayer\((\d+), (\d+), rank=(\d+)\)", t)

    class LoRALayer(nn.Linear):  # as the statement describes it, in that order
        def __init__(self, in_features, out_features, rank=4):
            super().__init__(in_features, out_features)
            self.lora_A = nn.Parameter(torch.randn(in_features, rank) * 0.01)
            self.lora_B = nn.Parameter(torch.zeros(rank, out_features))
            self.requires_grad_(False)

    layer = meta(lambda: LoRALayer(int(m[1]), int(m[2]), rank=int(m[3])))
    n = sum(q.numel() for q in layer.parameters() if q.requires_grad)
    return out + check_options(p, [_option_number(o) == n for o in p.options_text])


@audit("002.code.weights_shape")
def _(p):
    t = p.statement_text
    shape = [int(x) for x in re.findall(r"=(\d+)", re.search(r"shape \(([^)]*)\)", t)[1])]
    q = k = meta(lambda: torch.empty(*shape))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(shape[-1]), -1)
    return check_options(p, [tuple(int(x) for x in re.findall(r"\d+", o)) == tuple(w.shape) for o in p.options_text])


@audit("004.ex.b4")
def _(p):
    def entry(s: str, wk: float) -> float:
        s = s.strip()
        sign = -1.0 if s.startswith("-") else 1.0
        s = s.lstrip("-").strip()
        table = {"cos ωk": math.cos(wk), "sin ωk": math.sin(wk), "ωk": wk}
        return sign * (table[s] if s in table else float(s))

    def matrix(o: str, wk: float) -> np.ndarray:
        rows = o.strip("[] ").split(";")
        return np.array([[entry(e, wk) for e in re.findall(r"-?(?:cos ωk|sin ωk|ωk|\d+)", r)] for r in rows])

    w, k = 0.37, 3  # any frequency and offset
    truths = []
    for o in p.options_text:
        m = matrix(o, w * k)
        truths.append(all(np.allclose(m @ [math.sin(w * pos), math.cos(w * pos)],
                                      [math.sin(w * (pos + k)), math.cos(w * (pos + k))]) for pos in range(6)))
    return check_options(p, truths)


@audit("004.s11.mqa_cost")
def _(p):
    t = p.statement_text
    d, h, n = val(r"d_model = {n}", t), val(r"h = {n} query heads", t), val(r"n = {n} tokens", t)
    dh = d // h

    def attention(kv_heads: int):
        q = torch.empty(1, h, n, dh)
        k = v = torch.empty(1, kv_heads, n, dh)  # one K/V head broadcast over the query heads
        return torch.softmax(q @ k.transpose(-2, -1), -1) @ v

    ratio = flops(lambda: attention(h)) / flops(lambda: attention(1))
    return check_options(p, [math.isclose(_option_number(o), ratio, rel_tol=0.01) for o in p.options_text])


@audit("000.concept.mha_params")
def _(p):
    d, h = 512, 8  # any d_model and h with h | d_model
    r = count(meta(lambda: nn.MultiheadAttention(d, h, bias=False))) / count(meta(lambda: nn.MultiheadAttention(d, 1, bias=False)))
    claims = {"same": r == 1, "√h times more": math.isclose(r, math.sqrt(h)), "h times more": r == h,
              "h times fewer": r == 1 / h}
    return check_options(p, [next(v for c, v in claims.items() if c in o) for o in p.options_text])


@audit("001.ex5.learned_pe")
def _(p):
    S, d = 8, 4  # nn.Embedding(max_seq_len, d_model), then a position ≥ max_seq_len
    try:
        nn.Embedding(S, d)(torch.tensor([S]))
        fails = False
    except IndexError:
        fails = True
    return check_options(p, ["index out of range" in o if fails else o.startswith("It works") for o in p.options_text])


@audit("001.s5.layernorm_axis")
def _(p):
    x = torch.randn(3, 5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = nn.LayerNorm(7, dtype=torch.float64)(x).detach()
    axes = {"feature axis": (2,), "All three axes": (0, 1, 2), "sequence axis": (1,), "batch axis": (0,)}

    def same(dims):
        z = (x - x.mean(dims, keepdim=True)) / torch.sqrt(x.var(dims, unbiased=False, keepdim=True) + 1e-5)
        return torch.allclose(z, y)

    return check_options(p, [same(next(a for c, a in axes.items() if c in o)) for o in p.options_text])


@audit("004.interview.attention_code_mask")
def _(p):
    t = p.statement_text
    assert "scores.masked_fill(mask == 0, -1e9)" in t, p.id
    scores = torch.zeros(1, 3)
    attend = torch.tensor([[True, True, False]])  # what the caller wants: the third key blocked

    def works(mask) -> bool:
        w = torch.softmax(scores.masked_fill(mask == 0, -1e9), -1)
        return torch.equal(w > 1e-6, attend)

    conv = {"1 (True) = may attend": works(attend.int()), "1 (True) = blocked": works((~attend).int()),
            "additive mask": works(torch.zeros(1, 3).masked_fill(~attend, float("-inf")))}
    conv["Any of these"] = all(conv.values())
    return check_options(p, [next(v for c, v in conv.items() if c in o) for o in p.options_text])


@audit("003.code.numpy_attention_bugs")
def _(p):
    t = p.statement_text
    assert "/ np.sqrt(d_k)" in t and "-1e9" in t and "np.exp(scores) / np.sum(np.exp(scores), axis=-1, keepdims=True)" in t

    def listing(Q, K, mask=None):  # as the statement quotes it
        d_k = Q.shape[-1]
        scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
        if mask is not None:
            scores = np.where(mask == 0, -1e9, scores)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(scores) / np.sum(np.exp(scores), axis=-1, keepdims=True)

    big = np.full((1, 1, 2, 4), 40.0)
    overflow_nan = bool(np.isnan(listing(big, big)).any())
    try:
        listing(np.ones((2, 3)), np.ones((1, 2, 3)))
        only_4d = False
    except ValueError:
        only_4d = True
    small = np.ones((1, 1, 2, 4))
    masked = listing(small, small, mask=np.array([[1, 0], [1, 1]]))[0, 0, 0, 1]
    truths = {"overflow": overflow_nan, "√dₖ is missing": False,  # the quoted listing divides by np.sqrt(d_k)
              "only for 4-D": only_4d, "would get weight 1": bool(np.isclose(masked, 1.0))}
    return check_options(p, [next(v for c, v in truths.items() if c in o) for o in p.options_text])


@audit("004.gate.q2")
def _(p):
    out = stated(p, "softmax(QKᵀ/√d) V from given Q, K, V", "the projections aside")

    def cost(n: int, d: int) -> int:
        def attention():
            q, k, v = torch.empty(n, d), torch.empty(n, d), torch.empty(n, d)
            return torch.softmax(q @ k.T / math.sqrt(d), -1) @ v

        return flops(attention)

    n, d = 64, 32
    e_n, e_d = math.log2(cost(2 * n, d) / cost(n, d)), math.log2(cost(n, 2 * d) / cost(n, d))

    def exponents(o: str) -> tuple[int, int]:
        return (2 if "n²" in o else 1), (2 if "d²" in o else 1)

    return out + check_options(p, [exponents(o) == (e_n, e_d) for o in p.options_text])


@audit("004.interview.self_attention")
def _(p):
    n, d = 5, 3  # n ≠ d: a score row (n entries) is not an output (d entries)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    wq, wk, wv = (torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(3))
    q, k, v = x @ wq, x @ wk, x @ wv
    out = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]  # torch's own kernel
    scores = q @ k.T
    candidates = {"most similar token": v[scores.argmax(-1)], "query vector multiplied by each key": scores,
                  "weighted sum of all value vectors": torch.softmax(scores / math.sqrt(d), -1) @ v,
                  "average of all token embeddings": x.mean(0).expand(n, d)}

    def same(c: torch.Tensor) -> bool:
        return c.shape == out.shape and torch.allclose(c, out)

    return check_options(p, [same(next(c for name, c in candidates.items() if name in o)) for o in p.options_text])


@audit("004.interview.encoder_walkthrough")
def _(p):
    out = stated(p, "original (post-norm) encoder layer")
    d, h = 8, 2
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(3)
        layer = nn.TransformerEncoderLayer(d, h, 16, dropout=0.0, dtype=torch.float64)  # norm_first=False: the original
        for ln in (layer.norm1, layer.norm2):  # distinct γ, β: the two LayerNorms tell apart
            ln.weight.normal_(), ln.bias.normal_()
        x = torch.randn(4, d, dtype=torch.float64)
        ref = layer(x)

        def mha(z):
            return layer.self_attn(z, z, z, need_weights=False)[0]

        def ffn_(z):
            return layer.linear2(layer.activation(layer.linear1(z)))

        ln1, ln2 = layer.norm1, layer.norm2
        y = ln1(x + mha(x))
        candidates = {"LN(x + MHA(x)) → LN(· + FFN(·))": ln2(y + ffn_(y)),
                      "x → FFN → MHA → LN": ln1(mha(ffn_(x))),
                      "with no residuals": ffn_(ln2(mha(ln1(x)))),
                      "with one residual around both": ln1(x + ffn_(mha(x)))}
        truths = [torch.allclose(next(c for name, c in candidates.items() if name in o), ref) for o in p.options_text]
    return out + check_options(p, truths)


@audit("004.code.broken_attention")
def _(p):
    t = p.statement_text
    assert "scores = Q @ K.T; weights = softmax(scores, axis=0); return weights @ V" in t, p.id
    g = np.random.default_rng(4)
    Q, K, V = g.normal(size=(5, 3)), g.normal(size=(5, 3)), g.normal(size=(5, 2))

    def softmax(z, axis):
        e = np.exp(z - z.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def broken(Q, K, V, axis=0, scale=1.0):  # as quoted; axis and scale to try the fixes one at a time
        return softmax(Q @ K.T * scale, axis=axis) @ V

    ref = F.scaled_dot_product_attention(*(torch.tensor(m)[None] for m in (Q, K, V)))[0].numpy()  # torch's kernel
    w = softmax(Q @ K.T, axis=0)
    truths = {"K.T should be K": not np.allclose(Q @ K.T, np.einsum("id,jd->ij", Q, K)),  # q_i·k_j is Q Kᵀ
              "weights @ V should be V @ weights": not np.allclose(w @ V, np.einsum("ij,jd->id", w, V)),
              "axis=0 normalises each column": (np.allclose(w.sum(0), 1) and not np.allclose(w.sum(1), 1)
                                                and not np.allclose(broken(Q, K, V), ref)),
              "not divided by √dₖ": (not np.allclose(broken(Q, K, V, axis=-1), ref)
                                     and np.allclose(broken(Q, K, V, axis=-1, scale=Q.shape[1] ** -0.5), ref))}
    return check_options(p, [next(v for c, v in truths.items() if c in o) for o in p.options_text])


@audit("004.s9.layernorm_vs_batchnorm")
def _(p):
    d = 6
    g = torch.Generator().manual_seed(5)
    ln = nn.LayerNorm(d)
    x = torch.randn(3, 4, d, generator=g)  # (batch, seq, features)
    with torch.no_grad():
        ln.weight.normal_(generator=g), ln.bias.normal_(generator=g)  # trained-looking γ, β
        ln.train()
        y_train = ln(x)
        ln.eval()
        same_modes = torch.equal(ln(x), y_train) and not list(ln.buffers())
        padded = torch.cat([x, torch.zeros(3, 5, d)], 1)  # the same tokens with padding appended
        padding_harmless = torch.allclose(ln(padded)[:, :4], y_train)
        one_token = torch.allclose(ln(x[:1, -1:]), y_train[:1, -1:])  # batch 1, sequence 1
        bn = nn.BatchNorm1d(d)  # for contrast: BatchNorm's statistics run over the batch and the positions
        bn_padding_harmless = torch.allclose(bn(padded.transpose(1, 2)).transpose(1, 2)[:, :4],
                                             bn(x.transpose(1, 2)).transpose(1, 2))
    assert not bn_padding_harmless, p.id
    truths = {"behaves identically in training and inference": same_modes,
              "no learned parameters": count(ln) == 0,
              "padding and variable lengths do not corrupt": padding_harmless,
              "one token at a time": one_token}
    return check_options(p, [next(v for c, v in truths.items() if c in o) for o in p.options_text])


# --------------------------------------------------------------------------- conceptual items

#: Choice items no computation settles: the reader's verdict (agrees with the key unless it says otherwise).
CONCEPTUAL: dict[str, str] = {
    "000.concept.bert_vs_gpt": "BERT bidirectional + MLM; fine-tuned with a task head; GPT causal + next-token. "
                               "The mask holds no parameters, so 'more parameters because of the mask' is false.",
    "001.s1.rnn_problems": "sequential, vanishing gradients, fixed bottleneck; an RNN runs on any length.",
    "001.ex4.pre_vs_post_ln": "Pre-LN: clean residual path, little or no warm-up (Xiong et al. 2020); Post-LN needs "
                              "warm-up; the two formulas; moving LayerNorms changes no count (001.ex4.post_ln_params).",
    "002.interview.answer": "order needs PE, parallel, O(1) path; self-attention is O(n²), not O(n).",
    "002.concept.model_families": "summarisation: encoder-decoder (T5, BART).",
    "002.s.rnn_problems": "order → PE; sequential → parallel; vanishing gradients → O(1) path; attention is O(n²) "
                          "in n, so 'costs O(1)' is false.",
    "003.concept.llama_components": "RoPE, RMSNorm, SwiGLU; no BatchNorm.",
    "004.gate.q4": "saturation of softmax at large dₖ, vanishing gradients.",
    "004.gate.q5": "bidirectional + MLM at 15%.",
    "004.ex.a1": "self: Q, K, V from one sequence; cross: Q from the decoder, K, V from the encoder.",
    "004.ex.a2": "permutation-equivariance; an RNN sees order through recurrence.",
    "004.ex.a3": "position-wise MLP: per-token non-linear capacity.",
    "004.ex.a4": "understanding uses both contexts; generation must not see the future.",
    "004.ex.a5": "W_O mixes the heads.",
    "004.ex.d1": "hierarchical/RAG, sparse, sliding window; removing the scaling or more heads do not help.",
    "004.ex.d2": "50%: too little context; 5%: too few targets.",
    "004.ex.d3": "code-mixed fine-tuning, tokenisation/transliteration, multilingual pre-training; not an RNN.",
    "004.s18.misconceptions": "no recurrence; Bahdanau on an RNN encoder-decoder; same block, different mask and "
                              "objective; more heads do not always help.",
    "004.interview.why_beat_rnns": "parallel, O(1) path, several relations per head; attention is not cheaper at "
                                   "every length (O(n²·d) against O(n·d²)).",
}


# --------------------------------------------------------------------------- conceptual items, the options that run


def _permutation_equivariant() -> bool:
    """Self-attention without positions: shuffling the tokens only shuffles the outputs."""
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(6)
        mha = nn.MultiheadAttention(8, 2, dtype=torch.float64)
        x, perm = torch.randn(5, 8, dtype=torch.float64), torch.tensor([3, 0, 4, 1, 2])
        return torch.allclose(mha(x[perm], x[perm], x[perm])[0], mha(x, x, x)[0][perm])


def _attention_flops(n: int, d: int) -> int:
    """QKᵀ and A·V of one sequence of n tokens (2 FLOPs per multiply-add)."""
    def attention():
        q, k, v = torch.empty(n, d), torch.empty(n, d), torch.empty(n, d)
        return torch.softmax(q @ k.T, -1) @ v

    return flops(attention)


def _exponent_in_n(d: int = 16, n: int = 256) -> float:
    return math.log2(_attention_flops(2 * n, d) / _attention_flops(n, d))


def _attention_cheaper_than_rnn_at_every_length(d: int = 16) -> bool:
    rnn = [n * flops(lambda: torch.empty(d, d) @ torch.empty(d, 1)) for n in (1, 4 * d)]  # one d×d product per step
    return all(_attention_flops(n, d) < r for n, r in zip((1, 4 * d), rnn, strict=True))


def _layers(d: int = 8, h: int = 2) -> tuple[nn.Module, nn.Module]:
    """A post-LN and a pre-LN ``nn.TransformerEncoderLayer`` with the same weights (dropout 0, float64)."""
    with torch.random.fork_rng():
        torch.manual_seed(7)
        post = nn.TransformerEncoderLayer(d, h, 16, dropout=0.0, dtype=torch.float64)
        for ln in (post.norm1, post.norm2):
            nn.init.normal_(ln.weight), nn.init.normal_(ln.bias)
    pre = nn.TransformerEncoderLayer(d, h, 16, dropout=0.0, dtype=torch.float64, norm_first=True)
    pre.load_state_dict(post.state_dict())
    return post, pre


def _post_and_pre_ln_formulas() -> bool:
    """Post-LN: LN(x + Sublayer(x)); Pre-LN: x + Sublayer(LN(x)), for both sub-layers of the executed layers."""
    post, pre = _layers()
    x = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(8))

    def mha(m, z):
        return m.self_attn(z, z, z, need_weights=False)[0]

    def ffn_(m, z):
        return m.linear2(m.activation(m.linear1(z)))

    with torch.no_grad():
        y = post.norm1(x + mha(post, x))
        post_ok = torch.allclose(post(x), post.norm2(y + ffn_(post, y)))
        y = x + mha(pre, pre.norm1(x))
        pre_ok = torch.allclose(pre(x), y + ffn_(pre, pre.norm2(y)))
    return post_ok and pre_ok


def _norm_position_changes_count() -> bool:
    post, pre = _layers()
    return count(post) != count(pre)


#: Options of the conceptual items that make a claim one can run: {item: {words of the option: truth}}. The
#: other options of these items stay judged by reading (:data:`CONCEPTUAL`).
RUNNABLE_OPTIONS: dict[str, dict[str, Callable[[], bool]]] = {
    "000.concept.bert_vs_gpt": {"more parameters per layer than BERT because of the mask": _norm_position_changes_count},
    "001.ex4.pre_vs_post_ln": {"changes the number of parameters": _norm_position_changes_count,
                               "computes LN(x + Sublayer(x)); Pre-LN computes x + Sublayer(LN(x))": _post_and_pre_ln_formulas},
    "002.interview.answer": {"permuting the tokens only permutes the outputs": _permutation_equivariant,
                             "Self-attention is O(n) in sequence length": lambda: _exponent_in_n() == 1},
    "002.s.rnn_problems": {"self-attention costs O(1) in the sequence length": lambda: _exponent_in_n() == 0},
    "004.ex.a2": {"permutation-equivariant": _permutation_equivariant},
    "004.interview.why_beat_rnns": {"costs less than recurrence for every sequence length":
                                    _attention_cheaper_than_rnn_at_every_length},
}


def runnable_options_disagree(p: Problem, keyed: frozenset[int]) -> list[str]:
    out = []
    for words, truth in RUNNABLE_OPTIONS[p.id].items():
        hits = [i for i, o in enumerate(p.options_text) if words in o]
        if len(hits) != 1:
            out.append(report(p, f"{len(hits)} options say {words!r} (options {p.options_text})", words, sorted(keyed)))
        elif truth() != (hits[0] in keyed):
            out.append(report(p, f"option {p.options_text[hits[0]]!r} is {truth()} by running it", truth(), sorted(keyed)))
    return out


# --------------------------------------------------------------------------- the tests


def test_every_curated_item_is_audited():
    """Every curated item is recomputed from its text, or judged by reading (and not both)."""
    ids = set(problems())
    assert not (set(AUDITS) & set(CONCEPTUAL)), sorted(set(AUDITS) & set(CONCEPTUAL))
    assert ids == set(AUDITS) | set(CONCEPTUAL), (
        f"not audited: {sorted(ids - set(AUDITS) - set(CONCEPTUAL))}; unknown: {sorted(set(AUDITS) | set(CONCEPTUAL) - ids)}")
    assert all(problems()[i].type in ("mcq", "msq") for i in CONCEPTUAL)


@pytest.mark.parametrize("item_id", sorted(AUDITS))
def test_key_recomputed_from_the_text(item_id):
    p = problems()[item_id]
    problems_found = AUDITS[item_id](p)
    assert not problems_found, "\n".join(problems_found)


def test_an_explanation_never_calls_a_keyed_option_false():
    """What the worked answer says of an option by its letter ("(b) is false", "so (c) is a myth") agrees with
    the key the student is marked by (the letters are the shown ones, after the options are shuffled)."""
    said = [(p, "abcdefgh".index(m[1])) for p in problems().values() if p.type in ("mcq", "msq")
            for m in re.finditer(r"\(([a-h])\) (?:is false|is a myth|confuses)", p.explanation or "")]
    assert len(said) >= 5, said  # the explanations do name their false options
    wrong = [report(p, f"the explanation calls option ({'abcdefgh'[i]}) false, the key marks it right", i,
                    sorted(p.key.correct)) for p, i in said if i in p.key.correct]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("item_id", sorted(RUNNABLE_OPTIONS))
def test_runnable_options_of_conceptual_items(item_id):
    """The options of a conceptual item that can be run are keyed as running them says; a key with any of
    them flipped is reported."""
    p = problems()[item_id]
    assert item_id in CONCEPTUAL
    found = runnable_options_disagree(p, p.key.correct)
    assert not found, "\n".join(found)
    for words in RUNNABLE_OPTIONS[item_id]:
        i = next(j for j, o in enumerate(p.options_text) if words in o)
        assert runnable_options_disagree(p, p.key.correct ^ {i}), f"{item_id}: a key with {words!r} flipped passes"


@pytest.mark.parametrize("item_id", sorted(AUDITS))
def test_the_audit_reports_a_wrong_key(item_id):
    """The same audit on a copy of the item whose key (the last part's) is off by more than its tolerance,
    or keys the wrong option: it must say so, which shows that it can fail."""
    bad = spoiled(problems()[item_id])
    assert AUDITS[item_id](bad), f"{item_id}: the audit accepts a wrong key {bad.key!r}"
