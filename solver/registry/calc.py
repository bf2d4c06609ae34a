"""``qkv calc``: arithmetic with units over the formula registry, parsed, never evaluated as Python.

Grammar (a hand-written recursive-descent parser; one token of look-ahead)::

    program    := statement (";" statement)*
    statement  := NAME "=" conversion | conversion
    conversion := sum (("->" | "to" | "in") unit_expr)?
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "×" | "·" | "/" | "÷") unary)*
    unary      := ("-" | "+") unary | power
    power      := postfix (("^" | "**") unary unit_expr?)?   (a NUMBER in the exponent takes no unit:
                                                        "2^40 B" is (2^40) B)
    postfix    := atom ("." NAME)*
    atom       := NUMBER unit_expr? | NAME "(" arguments? ")" | NAME | STRING
                | "(" sum ")" unit_expr? | "[" sum ("," sum)* "]"
    arguments  := argument ("," argument)*
    argument   := NAME "=" sum | sum
    unit_expr  := UNIT (("/" | "*" | "·") UNIT | "^" "-"? INTEGER)*

NUMBER is ``12``, ``3.35``, ``2e12``, ``1_000``, with an optional k/M/G/T/P right after it
(``8k``: 8,000, or 8,192 where a formula's input is a sequence length, as "an 8k context" is
meant). UNIT is a name :func:`solver.registry.quantity.unit` knows (``B``, ``GiB``, ``TB/s``,
``FLOP``, ``ms``, ``days``); after a number or an arrow a name is read as a unit first. NAME is a
variable, a unit, a preset (a model ``llama-3-70b``, a chip ``h100``, a link ``nvlink4``; its
fields with ``.``), a registered formula or a function (sqrt, log2, ceil, min, ...). STRING is a
config.json path in quotes.

Limits: 2,000 characters, nesting 64 deep, 10,000 evaluation steps, numbers within 10^±300;
anything past them is refused in one line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from solver.errors import SolverInputError
from solver.registry.quantity import NONE, Quantity, dims_name, unit

MAX_CHARS = 2000
MAX_DEPTH = 64
MAX_STEPS = 10_000
MAX_COUNT = 10**18


class CalcError(SolverInputError):
    """One line for the user: what is wrong with the expression."""

    def __init__(self, message: str):
        super().__init__(message, param=None)


# ---------------------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------------------

_DIGITS = "0123456789"
_NUMBER = re.compile(r"(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,4})?", re.ASCII)
_NAME = re.compile(r"[A-Za-z_µμ][A-Za-z0-9_]*", re.ASCII)
_RUN = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*", re.ASCII)
_SUFFIX = {"k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_BINARY_SUFFIX = {"k": 2**10, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_OPS = ("->", "**", "+", "-", "*", "/", "^", "(", ")", "[", "]", ",", "=", ";", ".", "×", "·", "÷", "→", "%", "−")


@dataclass(frozen=True)
class Token:
    kind: str  # NUMBER, NAME, PRESET, STRING, OP, END
    text: str
    pos: int
    suffix: str = ""


def _preset_names() -> dict[str, tuple[str, str]]:
    """Every preset name and alias people type -> (kind, canonical name)."""
    from solver.counting.presets import ALIASES, preset_names
    from solver.systems.chips import list_hardware
    from solver.systems.interconnect import list_links

    out: dict[str, tuple[str, str]] = {}
    for link in list_links():
        for n in (link.name, *link.aliases):
            out[n.lower()] = ("link", link.name)
    for name in preset_names():
        out[name.lower()] = ("model", name)
    for alias, name in ALIASES.items():
        out[alias.lower()] = ("model", name)
    for hw in list_hardware():  # chips last: "a100", "h100" are chips before they are links
        for n in (hw.name, *hw.aliases):
            out[n.lower()] = ("chip", hw.name)
    return out


_PRESETS: dict[str, tuple[str, str]] | None = None


def presets() -> dict[str, tuple[str, str]]:
    global _PRESETS
    if _PRESETS is None:
        _PRESETS = _preset_names()
    return _PRESETS


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_CHARS:
        raise CalcError(f"the expression is too long ({len(text):,} characters; at most {MAX_CHARS:,})")
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            m = _NUMBER.match(text, i)
            j = m.end()
            suffix = ""
            if j < n and text[j] in _SUFFIX and not (j + 1 < n and (text[j + 1].isalnum() or text[j + 1] == "_")):
                suffix, j = text[j], j + 1
            out.append(Token("NUMBER", m.group(), i, suffix))
            i = j
            continue
        if c in "\"'":
            j = text.find(c, i + 1)
            if j < 0:
                raise CalcError(f"a string opened at character {i + 1} is not closed")
            out.append(Token("STRING", text[i + 1:j], i))
            i = j + 1
            continue
        if (c.isascii() and c.isalpha()) or c == "_":
            run = _RUN.match(text, i).group()
            found = None
            for k in range(len(run), 0, -1):  # the longest preset name here that has a '-' or a '.'
                cand = run[:k]
                if ("-" in cand or "." in cand) and cand.lower() in presets() and (k == len(run) or run[k] in ".-"):
                    found = cand
                    break
            if found:
                out.append(Token("PRESET", found, i))
                i += len(found)
                continue
            m = _NAME.match(text, i)
            out.append(Token("NAME", m.group(), i))
            i = m.end()
            continue
        if c in "µμ":
            m = _NAME.match(text, i)
            out.append(Token("NAME", m.group(), i))
            i = m.end()
            continue
        for op in _OPS:
            if text.startswith(op, i):
                out.append(Token("OP", {"→": "->", "×": "*", "·": "*", "÷": "/", "**": "^", "−": "-"}.get(op, op), i))
                i += len(op)
                break
        else:
            raise CalcError(f"unexpected character {c!r} at {i + 1}")
    out.append(Token("END", "", n))
    return out


# ---------------------------------------------------------------------------------------
# Syntax tree
# ---------------------------------------------------------------------------------------


@dataclass
class Node:
    kind: str  # num, name, preset, str, unit, bin, neg, field, call, list, convert, assign
    value: Any = None
    children: list[Node] = field(default_factory=list)
    keywords: dict[str, Node] = field(default_factory=dict)
    suffix: str = ""


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0
        self.exponent = False  # reading an exponent: a unit after it belongs to the whole power (2^40 B)

    # helpers
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def is_op(self, *ops: str) -> bool:
        return self.tok.kind == "OP" and self.tok.text in ops

    def expect(self, op: str) -> None:
        if not self.is_op(op):
            got = self.tok.text or "the end"
            raise CalcError(f"expected {op!r} at character {self.tok.pos + 1}, found {got!r}")
        self.take()

    def deeper(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError(f"the expression is nested too deep (more than {MAX_DEPTH} levels)")

    # grammar
    def program(self) -> list[Node]:
        out = [self.statement()]
        while self.is_op(";"):
            self.take()
            if self.tok.kind == "END":
                break
            out.append(self.statement())
        if self.tok.kind != "END":
            raise CalcError(f"unexpected {self.tok.text!r} at character {self.tok.pos + 1}")
        return out

    def statement(self) -> Node:
        if self.tok.kind == "NAME" and self.peek().kind == "OP" and self.peek().text == "=":
            name = self.take().text
            self.take()
            if name in FUNCTIONS or _is_formula(name):
                raise CalcError(f"{name} is a function; choose another name for the variable")
            return Node("assign", name, [self.conversion()])
        return self.conversion()

    def conversion(self) -> Node:
        node = self.sum()
        if self.is_op("->") or (self.tok.kind == "NAME" and self.tok.text in ("to", "in")):
            self.take()
            if self.tok.kind == "END":
                raise CalcError("a unit is needed after ->")
            node = Node("convert", self.unit_expr(required=True).value, [node])
        return node

    def sum(self) -> Node:
        self.deeper()
        node = self.product()
        while self.is_op("+", "-"):
            op = self.take().text
            node = Node("bin", op, [node, self.product()])
        self.depth -= 1
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.is_op("*", "/"):
            op = self.take().text
            node = Node("bin", op, [node, self.unary()])
        return node

    def unary(self) -> Node:
        if self.is_op("-", "+"):
            op = self.take().text
            self.deeper()
            inner = self.unary()
            self.depth -= 1
            return Node("neg", None, [inner]) if op == "-" else inner
        return self.power()

    def power(self) -> Node:
        node = self.postfix()
        if self.is_op("^"):
            self.take()
            self.deeper()
            outer, self.exponent = self.exponent, True
            node = Node("bin", "^", [node, self.unary()])
            self.exponent = outer
            self.depth -= 1
            # "2^40 B", "4.25 × 10^9 B": the unit is the power's, as it is read (an exponent has no unit)
            u = None if self.exponent else self.unit_expr()
            if u is not None:
                node = Node("bin", "*", [node, u])
        return node

    def _grouped(self, read):
        """``read()`` inside brackets or a call's arguments: units attach to numbers there again."""
        outer, self.exponent = self.exponent, False
        try:
            return read()
        finally:
            self.exponent = outer

    def postfix(self) -> Node:
        node = self.atom()
        while self.is_op(".") and self.peek().kind == "NAME":
            self.take()
            node = Node("field", self.take().text, [node])
        return node

    def _unit_next(self) -> bool:
        t = self.tok
        return (t.kind == "NAME" and t.text not in ("to", "in") and unit(t.text) is not None) or \
            (t.kind == "OP" and t.text == "%")

    def unit_expr(self, required: bool = False) -> Node | None:
        if not self._unit_next():
            if required:
                raise CalcError(f"{self.tok.text!r} is not a unit (try B, GB, GiB, s, ms, days, FLOP, FLOP/s, "
                                "GB/s; qkv calc --list)")
            return None
        parts = [(1, self.take().text)]
        while True:
            if self.is_op("/", "*") and (self.peek().kind == "NAME" and unit(self.peek().text) is not None):
                sign = -1 if self.take().text == "/" else 1
                parts.append((sign, self.take().text))
            elif self.is_op("^") and (self.peek().kind == "NUMBER" or
                                      (self.peek().kind == "OP" and self.peek().text == "-")):
                self.take()
                neg = self.is_op("-") and self.take() is not None
                t = self.take()
                if t.kind != "NUMBER" or not t.text.isdigit() or int(t.text) > 12:
                    raise CalcError("a unit's power must be a whole number up to 12")
                s, name = parts[-1]
                parts[-1] = (s * int(t.text) * (-1 if neg else 1), name)
            else:
                break
        return Node("unit", parts)

    def atom(self) -> Node:
        t = self.tok
        if t.kind == "NUMBER":
            self.take()
            node = Node("num", t.text, suffix=t.suffix)
            u = None if self.exponent else self.unit_expr()
            return Node("bin", "*", [node, u]) if u is not None else node
        if t.kind == "STRING":
            self.take()
            return Node("str", t.text)
        if t.kind == "PRESET":
            self.take()
            return Node("preset", t.text)
        if t.kind == "NAME":
            self.take()
            if self.is_op("("):
                self.take()
                self.deeper()
                args, kwargs = [], {}
                if not self.is_op(")"):
                    while True:
                        if self.tok.kind == "NAME" and self.peek().kind == "OP" and self.peek().text == "=":
                            key = self.take().text
                            self.take()
                            if key in kwargs:
                                raise CalcError(f"{key}= is given twice")
                            kwargs[key] = self._grouped(self.sum)
                        else:
                            if kwargs:
                                raise CalcError("a positional argument after a keyword argument")
                            args.append(self._grouped(self.sum))
                        if self.is_op(","):
                            self.take()
                            continue
                        break
                self.expect(")")
                self.depth -= 1
                return Node("call", t.text, args, kwargs)
            return Node("name", t.text)
        if t.kind == "OP" and t.text == "(":
            self.take()
            node = self._grouped(self.sum)
            self.expect(")")
            # "(1/2) GiB": a unit after a bracket is the bracket's, as after a number
            u = None if self.exponent else self.unit_expr()
            return Node("bin", "*", [node, u]) if u is not None else node
        if t.kind == "OP" and t.text == "[":
            self.take()
            items = [self._grouped(self.sum)]
            while self.is_op(","):
                self.take()
                items.append(self._grouped(self.sum))
            self.expect("]")
            return Node("list", None, items)
        if t.kind == "OP" and t.text == "%":
            self.take()
            return Node("unit", [(1, "%")])
        got = t.text or "the end of the expression"
        raise CalcError(f"expected a number, a name or '(' at character {t.pos + 1}, found {got!r}")


def parse(text: str) -> list[Node]:
    return Parser(text).program()


# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


@dataclass
class Record:
    """A preset or a formula's result: named fields, and one primary value (``primary``)."""

    kind: str  # model, chip, link, result
    name: str
    fields: dict[str, Any]
    primary: str | None = None
    missing: dict[str, str] = field(default_factory=dict)  # field -> why it is not there
    obj: Any = None  # the ModelConfig, Hardware, Link or Result behind it
    formula: Any = None

    def get(self, name: str) -> Any:
        if name in self.fields:
            return self.fields[name]
        if name in self.missing:
            raise CalcError(f"{self.name}.{name}: {self.missing[name]}")
        from difflib import get_close_matches

        known = list(self.fields) + list(self.missing)
        near = get_close_matches(name, known, 1)
        raise CalcError(f"{self.name} has no field {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                        + f" (fields: {', '.join(known)})")

    def value(self) -> Quantity:
        if self.primary is None:
            raise CalcError(f"{self.name} is a {self.kind}, not a number: use one of its fields "
                            f"({', '.join(self.fields)})")
        return self.get(self.primary)


@dataclass
class Text:
    text: str


@dataclass(frozen=True)
class Array:
    """A vector (``shape`` (n,)) or a matrix (``shape`` (rows, cols)) of plain numbers: a formula's
    output (softmax's probabilities) or an input written ``[1, 2, 3]``. It is shown, passed to a
    formula, or indexed by a field; it is not a number, so arithmetic refuses it in one line."""

    values: tuple  # flat, row by row
    shape: tuple[int, ...]

    def nested(self) -> list:
        if len(self.shape) == 1:
            return list(self.values)
        c = self.shape[1]
        return [list(self.values[i * c:(i + 1) * c]) for i in range(self.shape[0])]

    @property
    def kind(self) -> str:
        return "vector" if len(self.shape) == 1 else "matrix"


def _plain_number(x) -> bool:
    return isinstance(x, int | float | Fraction) and not isinstance(x, bool) or type(x).__name__.startswith(
        ("float", "int"))


def as_array(v) -> Array | None:
    """A formula's list (or NumPy array) output as an :class:`Array`; None if it is not a vector or
    a matrix of numbers."""
    if hasattr(v, "tolist") and not isinstance(v, int | float):
        v = v.tolist()
    if not isinstance(v, list | tuple) or not v:
        return None
    if all(_plain_number(x) for x in v):
        return Array(tuple(x if isinstance(x, int | Fraction) else float(x) for x in v), (len(v),))
    if all(isinstance(r, list | tuple) and r and all(_plain_number(x) for x in r) for r in v) \
            and len({len(r) for r in v}) == 1:
        flat = tuple(x if isinstance(x, int | Fraction) else float(x) for r in v for x in r)
        return Array(flat, (len(v), len(v[0])))
    return None


def _q(x, dims=NONE) -> Quantity:
    if isinstance(x, Quantity):
        return x
    if isinstance(x, bool):
        raise CalcError("a yes/no value is not a number")
    if isinstance(x, int):
        return Quantity(Fraction(x), dims)
    if isinstance(x, Fraction):
        return Quantity(x, dims)
    return Quantity(float(x), dims)


def unit_quantity(parts: list[tuple[int, str]]) -> Quantity:
    q = Quantity(Fraction(1))
    for power, name in parts:
        f, d = unit(name)
        q = q * Quantity(f, d).power(Quantity(Fraction(power)))
    return q


def unit_text(parts: list[tuple[int, str]]) -> str:
    out = ""
    for i, (power, name) in enumerate(parts):
        sep = "" if i == 0 else ("/" if power < 0 else "·")
        p = abs(power) if i else power
        out += sep + name + (f"^{p}" if p != 1 else "")
    return out


def evaluate_unit(text: str) -> Quantity:
    p = Parser(text)
    node = p.unit_expr(required=True)
    if p.tok.kind != "END":
        raise CalcError(f"{text!r} is not a unit")
    return unit_quantity(node.value)


def _model_record(name: str, cfg, where: str) -> Record:
    from solver.counting import param_breakdown

    b = param_breakdown(cfg)
    fields: dict[str, Any] = {"params": _q(b.total), "active_params": _q(b.active), "layers": _q(cfg.n_layers),
                              "d_model": _q(cfg.d_model), "heads": _q(cfg.n_heads), "kv_heads": _q(cfg.kv_heads),
                              "d_head": _q(cfg.head_dim), "d_ff": _q(cfg.d_ff), "vocab": _q(cfg.vocab_size),
                              "experts": _q(cfg.n_experts), "top_k": _q(cfg.top_k)}
    if cfg.max_positions:
        fields["max_positions"] = _q(cfg.max_positions)
    return Record("model", name, fields, "params", obj=cfg)


def _chip_record(hw) -> Record:
    fields: dict[str, Any] = {}
    for dt, v in hw.peak_flops.items():
        fields[dt] = _q(Fraction(str(v)) if isinstance(v, float) else v, (0, 1, -1))
    fields["peak"] = fields.get("bf16", next(iter(fields.values())))
    fields["hbm"] = _q(hw.hbm_bytes, (1, 0, 0))
    fields["hbm_bw"] = _q(Fraction(str(hw.hbm_bandwidth)), (1, 0, -1))
    fields["bandwidth"] = fields["hbm_bw"]
    fields["link"] = _q(Fraction(str(hw.link_bandwidth)), (1, 0, -1))
    return Record("chip", hw.name, fields, None, obj=hw)


def _link_record(link) -> Record:
    bw = _q(Fraction(str(link.per_direction)), (1, 0, -1))
    return Record("link", link.name, {"bw": bw, "per_direction": bw,
                                      "bidirectional": _q(Fraction(str(link.bidirectional)), (1, 0, -1))},
                  "bw", obj=link)


def preset_record(text: str) -> Record:
    kind, name = presets()[text.lower()]
    if kind == "model":
        from solver.counting.presets import get_config

        return _model_record(name, get_config(name), name)
    if kind == "chip":
        from solver.systems.chips import get_hardware

        return _chip_record(get_hardware(name))
    from solver.systems.interconnect import get_link

    return _link_record(get_link(name))


def config_record(path: str, notes: list[str] | None = None) -> Record:
    """A config.json as a model; what the reader says of it (keys with no effect, what it could
    not count) goes into ``notes``, never dropped."""
    from solver.counting.config_json import read_hf_config

    cfg, said = read_hf_config(path)
    if notes is not None:
        notes.extend(f"{path}: {n}" for n in said if f"{path}: {n}" not in notes)
    return _model_record(path, cfg, path)


# ---------------------------------------------------------------------------------------
# Built-in functions (on plain numbers unless said)
# ---------------------------------------------------------------------------------------


def _plain(name: str, q: Quantity) -> float | Fraction:
    if q.dims != NONE:
        raise CalcError(f"{name}() takes a plain number, not {dims_name(q.dims)}")
    return q.magnitude


def _sqrt(q: Quantity) -> Quantity:
    if any(d % 2 for d in q.dims):
        raise CalcError(f"sqrt() of {dims_name(q.dims)} has no unit")
    m = q.magnitude
    if m < 0:
        raise CalcError("sqrt() of a negative number")
    if isinstance(m, Fraction):
        rn, rd = math.isqrt(m.numerator), math.isqrt(m.denominator)
        if rn * rn == m.numerator and rd * rd == m.denominator:
            return Quantity(Fraction(rn, rd), tuple(d // 2 for d in q.dims))
    return Quantity(math.sqrt(float(m)), tuple(d // 2 for d in q.dims))


def _log(fn, name):
    def f(q: Quantity) -> Quantity:
        m = _plain(name, q)
        if m <= 0:
            raise CalcError(f"{name}() of a number that is not positive")
        return Quantity(fn(float(m)) if not isinstance(m, Fraction) else fn(m))
    return f


def _log2(m):
    if isinstance(m, Fraction) and m.denominator == 1 and m.numerator & (m.numerator - 1) == 0:
        return Fraction(m.numerator.bit_length() - 1)
    return math.log2(m)


def _log10(m):
    if isinstance(m, Fraction) and m.denominator == 1:
        s = str(m.numerator)
        if s == "1" + "0" * (len(s) - 1):
            return Fraction(len(s) - 1)
    return math.log10(m)


def _round_fn(fn):
    def f(q: Quantity) -> Quantity:
        return Quantity(Fraction(fn(q.magnitude)), q.dims)
    return f


def _minmax(fn):
    def f(*qs: Quantity) -> Quantity:
        if not qs:
            raise CalcError("min() and max() need at least one value")
        for q in qs[1:]:
            if q.dims != qs[0].dims:
                raise CalcError(f"cannot compare {dims_name(qs[0].dims)} with {dims_name(q.dims)}")
        return fn(qs, key=lambda q: q.magnitude)
    return f


def _exp(q: Quantity) -> Quantity:
    m = float(_plain("exp", q))
    if m > 690:
        raise CalcError("exp() of more than 690 is past 10^300")
    return Quantity(math.exp(m))


FUNCTIONS = {
    "sqrt": (_sqrt, "square root (units with even powers keep half of them)"),
    "log2": (_log(lambda m: _log2(m), "log2"), "logarithm base 2 (exact for powers of 2)"),
    "log10": (_log(lambda m: _log10(m), "log10"), "logarithm base 10"),
    "ln": (_log(lambda m: math.log(m), "ln"), "natural logarithm"),
    "log": (_log(lambda m: math.log(m), "log"), "natural logarithm"),
    "exp": (_exp, "e to the power"),
    "ceil": (_round_fn(math.ceil), "round up to a whole number (in base units)"),
    "floor": (_round_fn(math.floor), "round down to a whole number (in base units)"),
    "round": (_round_fn(lambda m: math.floor(m + Fraction(1, 2)) if isinstance(m, Fraction) else
                        math.floor(m + 0.5)), "round half up to a whole number (in base units)"),
    "abs": (lambda q: Quantity(abs(q.magnitude), q.dims), "absolute value"),
    "min": (_minmax(min), "the smallest of its arguments"),
    "max": (_minmax(max), "the largest of its arguments"),
}
CONSTANTS = {"pi": (Quantity(math.pi), "π"), "e": (Quantity(math.e), "Euler's number")}


def _is_formula(name: str) -> bool:
    from solver.registry import formulas

    return name in formulas()


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------


@dataclass
class Trace:
    """What --explain shows: each formula call's worked steps, and the expression with its values."""

    calls: list[tuple[str, Any]] = field(default_factory=list)


class Evaluator:
    def __init__(self, variables: dict[str, Any] | None = None):
        self.variables: dict[str, Any] = variables if variables is not None else {}
        self.steps = 0
        self.trace = Trace()
        self.notes: list[str] = []

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise CalcError(f"the expression takes more than {MAX_STEPS:,} steps")

    def run(self, text: str) -> Any:
        """Evaluate every statement; the last one's value is the answer (an assignment's too)."""
        value = None
        self.target = None
        self.last = None
        for node in parse(text):
            self.target = None
            value = self.statement(node)
            self.last = node
        return value

    def statement(self, node: Node) -> Any:
        if node.kind == "assign":
            value = self.eval(node.children[0])
            self.variables[node.value] = value
            return value
        return self.eval(node)

    def number(self, node: Node, binary: bool = False) -> Quantity:
        try:
            m = Fraction(node.value.replace("_", ""))
        except (ValueError, ZeroDivisionError):
            raise CalcError(f"{node.value!r} is not a number") from None
        if node.suffix:
            m *= (_BINARY_SUFFIX if binary else _SUFFIX)[node.suffix]
        return Quantity(m)

    def eval(self, node: Node) -> Any:
        self.tick()
        k = node.kind
        if k == "num":
            return self.number(node)
        if k == "str":
            return Text(node.value)
        if k == "unit":
            return unit_quantity(node.value)
        if k == "preset":
            return preset_record(node.value)
        if k == "name":
            return self.name(node.value)
        if k == "neg":
            return -self.quantity(self.eval(node.children[0]))
        if k == "bin":
            a = self.quantity(self.eval(node.children[0]))
            b = self.quantity(self.eval(node.children[1]))
            return {"+": a.__add__, "-": a.__sub__, "*": a.__mul__, "/": a.__truediv__, "^": a.power}[node.value](b)
        if k == "field":
            base = self.eval(node.children[0])
            if not isinstance(base, Record):
                raise CalcError(f".{node.value}: only a preset or a formula's result has fields")
            return base.get(node.value)
        if k == "list":
            return [self.eval(c) for c in node.children]
        if k == "convert":
            value = self.quantity(self.eval(node.children[0]))
            target = unit_quantity(node.value)
            value.to(target, unit_text(node.value))  # refuses a mismatch
            self.target = node.value
            return value
        if k == "call":
            return self.call(node)
        raise CalcError(f"cannot evaluate {k}")  # pragma: no cover - every node kind is above

    def name(self, name: str) -> Any:
        if name in self.variables:
            return self.variables[name]
        u = unit(name)
        if u is not None:
            return Quantity(*u)
        if name.lower() in presets():
            return preset_record(name)
        if name in CONSTANTS:
            return CONSTANTS[name][0]
        if name in FUNCTIONS or _is_formula(name):
            raise CalcError(f"{name} is a function: call it, {name}(...)")
        from difflib import get_close_matches

        from solver.registry import formulas

        known = list(self.variables) + list(presets()) + list(FUNCTIONS) + list(formulas()) + list(CONSTANTS)
        near = get_close_matches(name.lower(), known, 1, 0.6)
        raise CalcError(f"unknown name {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                        + " (qkv calc --list shows every name)")

    def quantity(self, value: Any) -> Quantity:
        if isinstance(value, Quantity):
            return value
        if isinstance(value, Record):
            value = value.value()
            if isinstance(value, Quantity):
                return value
        if isinstance(value, Text):
            raise CalcError(f"{value.text!r} is text, not a number")
        if isinstance(value, list):
            raise CalcError("a list is not a number")
        if isinstance(value, Array):
            raise CalcError(f"a {value.kind} ({'×'.join(map(str, value.shape))}) is not a number: pass it to a formula "
                            "or take one figure of the result (.field)")
        raise CalcError(f"{value!r} is not a number")  # pragma: no cover

    # calls --------------------------------------------------------------------------------
    def call(self, node: Node) -> Any:
        name = node.value
        if name in FUNCTIONS:
            if node.keywords:
                raise CalcError(f"{name}() takes no keyword arguments")
            args = [self.quantity(self.eval(a)) for a in node.children]
            fn = FUNCTIONS[name][0]
            if name not in ("min", "max") and len(args) != 1:
                raise CalcError(f"{name}() takes one argument ({len(args)} given)")
            return fn(*args)
        from solver.registry import formulas

        table = formulas()
        if name not in table:
            from difflib import get_close_matches

            near = get_close_matches(name, list(table) + list(FUNCTIONS), 1, 0.6)
            raise CalcError(f"unknown function {name!r}" + (f"; did you mean {near[0]}?" if near else "")
                            + " (qkv calc --list)")
        return self.call_formula(table[name], node)

    def call_formula(self, f, node: Node) -> Record:
        values: dict[str, Any] = {}
        conventions: dict[str, str] = {}
        params = [i for i in f.inputs]
        if len(node.children) > len(params):
            raise CalcError(f"{f.name}() takes at most {len(params)} positional arguments "
                            f"({', '.join(i.name for i in params)})")
        pairs = [(params[j].name, a) for j, a in enumerate(node.children)]
        for key, a in node.keywords.items():
            pairs.append((key, a))
        conv_names = {c.name: c for c in f.conventions}
        for key, a in pairs:
            if key in conv_names:
                conventions[key] = self.symbol(a, f"{f.name}({key}=...)")
                continue
            try:
                inp = f.input(key)
            except KeyError:
                from difflib import get_close_matches

                near = get_close_matches(key, f.parameter_names(), 1, 0.6)
                raise CalcError(f"{f.name}() takes no argument {key!r}" + (f"; did you mean {near[0]}?" if near else "")
                                + f" (it takes {', '.join(f.parameter_names())})") from None
            if inp.name in values:
                raise CalcError(f"{f.name}(): {inp.name} is given twice")
            values[inp.name] = self.argument(f, inp, a)
        missing = [i.name for i in f.inputs if i.required and i.name not in values]
        if missing:
            i = f.input(missing[0])
            raise CalcError(f"{f.name}() needs {i.name}= ({i.help}" + (f", {i.unit}" if i.unit else "") + ")")
        result = f.run(values, conventions)
        self.trace.calls.append((self.describe_call(f, values, conventions), result))
        fields: dict[str, Any] = {}
        why: dict[str, str] = {}
        for o in f.outputs:
            key = o.breakdown_key
            v = result.breakdown.get(key)
            if isinstance(v, float) and not math.isfinite(v):
                why[o.name] = "infinite: no finite value reaches it for these inputs"
            elif v is not None and not _plain_number(v):
                a = as_array(v)
                if a is None:
                    why[o.name] = "not a number, a vector or a matrix"
                else:
                    fields[o.name] = a
            elif v is not None:
                m = v if isinstance(v, int | Fraction) else float(v)
                fields[o.name] = _q(m) * evaluate_unit(o.unit) if o.unit else _q(m)
            else:
                lack = [n for n in o.needs if values.get(n) is None]
                detail = [f"{n}= ({f.input(n).help})" for n in lack]
                why[o.name] = (f"needs {' and '.join(detail)}" if detail else "not computed for these inputs")
        primary = f.outputs[0].name
        return Record("result", f"{f.name}(...)", fields, primary, why, obj=result, formula=f)

    def describe_call(self, f, values, conventions) -> str:
        from solver.registry.display import short

        parts = []
        for k, v in values.items():
            inp = f.input(k)
            if isinstance(v, int | Fraction | float) and not isinstance(v, bool):
                dims = evaluate_unit(inp.unit).dims if inp.unit else NONE
                parts.append(f"{k}={short(_q(v, dims))}")
            elif isinstance(v, tuple):
                parts.append(f"{k}={'x'.join(map(str, v))}")
            elif isinstance(v, list):
                a = as_array(v)
                parts.append(f"{k}={array_text(a, 8) if a else v}")
            elif isinstance(v, str):
                parts.append(f"{k}={v}")
            else:
                parts.append(f"{k}={getattr(v, 'name', None) or type(v).__name__}")
        parts += [f"{k}={v}" for k, v in conventions.items()]
        return f"{f.name}({', '.join(parts)})"

    def symbol(self, node: Node, where: str) -> str:
        if node.kind in ("name", "preset"):
            return node.value
        if node.kind == "str":
            return node.value
        if node.kind == "unit":  # a name that is also a unit, read as a choice here
            return unit_text(node.value)
        if node.kind == "bin" and node.value == "-":  # method=rule-20 reads as rule minus 20
            raise CalcError(f"{where}: give a name (a choice), not an expression; quote a name that has a "
                            "dash in it (\"rule-20\")")
        raise CalcError(f"{where}: give a name (a choice), not an expression")

    def argument(self, f, inp, node: Node) -> Any:
        where = f"{f.name}({inp.name}=...)"
        if inp.kind == "dtype":
            name = self.symbol(node, where)
            from solver.units import dtype_bytes

            dtype_bytes(name)  # refuses an unknown dtype in one line
            return name.lower()
        if inp.kind == "choice":
            return self.symbol(node, where)
        if inp.kind == "model":
            if node.kind == "str":
                return config_record(node.value, self.notes).obj
            value = self.eval(node)
            if isinstance(value, Text):
                return config_record(value.text, self.notes).obj
            if isinstance(value, Record) and value.kind == "model":
                return value.obj
            raise CalcError(f"{where}: give a model preset (llama3-8b) or a config.json path in quotes")
        if inp.kind == "chip":
            value = self.eval(node) if node.kind != "name" else self.name(node.value)
            if isinstance(value, Record) and value.kind == "chip":
                return value.obj
            raise CalcError(f"{where}: give a chip preset (h100, a100, tpu-v5e; qkv hw list)")
        if inp.kind == "shape":
            value = self.eval(node)
            if isinstance(value, Text):
                try:
                    return tuple(int(x) for x in value.text.lower().replace("×", "x").split("x"))
                except ValueError:
                    raise CalcError(f"{where}: a shape such as \"4x4\" or [4, 4]") from None
            if isinstance(value, list):
                out = []
                for v in value:
                    q = self.quantity(v)
                    if q.dims != NONE or not (isinstance(q.magnitude, Fraction) and q.magnitude.denominator == 1) \
                            or not 1 <= q.magnitude <= 4096:
                        raise CalcError(f"{where}: each side a whole number from 1 to 4096")
                    out.append(int(q.magnitude))
                return tuple(out)
            raise CalcError(f"{where}: a shape such as [4, 4] or \"4x4\"")
        if inp.kind in ("vector", "matrix"):
            return self.array_argument(inp, self.eval(node), where)
        # numbers
        if node.kind == "num" and node.suffix and inp.binary_k:
            q = self.number(node, binary=True)
        else:
            q = self.quantity(self.eval(node))
        if isinstance(q, Quantity) and inp.kind in ("count", "fraction"):
            if q.dims != NONE:
                raise CalcError(f"{where}: a plain number, not {dims_name(q.dims)}")
            m = q.magnitude
        else:
            expected = evaluate_unit(inp.unit)
            if q.dims != expected.dims:
                raise CalcError(f"{where}: {dims_name(expected.dims)} expected ({inp.help}), got "
                                f"{dims_name(q.dims)}")
            m = q.magnitude
        if inp.minimum is not None and m < inp.minimum:
            raise CalcError(f"{where}: at least {inp.minimum} (got {float(m):g})")
        if inp.maximum is not None and m > inp.maximum:
            raise CalcError(f"{where}: at most {inp.maximum} (got {float(m):g})")
        if inp.integer:
            if not (isinstance(m, Fraction) and m.denominator == 1) and not (isinstance(m, float) and m.is_integer()):
                raise CalcError(f"{where}: a whole number (got {float(m):g})")
            if abs(m) > MAX_COUNT:
                raise CalcError(f"{where}: at most 10^18")
            return int(m)
        return int(m) if isinstance(m, Fraction) and m.denominator == 1 else m


    def array_argument(self, inp, value: Any, where: str) -> list:
        """A vector input as a list of floats, a matrix input as a list of rows; refused in one line
        unless every entry is a plain number within the input's bounds and the size is within
        :data:`solver.registry.formula.MAX_VECTOR` (a matrix: ``MAX_ROWS`` rows, ``MAX_MATRIX`` entries)."""
        from solver.registry.formula import MAX_MATRIX, MAX_ROWS, MAX_VECTOR

        example = "[1, 2, 3]" if inp.kind == "vector" else "[[1, 0], [0, 1]] (a list of rows)"
        if isinstance(value, Record) and value.primary is not None:
            value = value.value()
        if isinstance(value, Array):
            rows = [value.values] if len(value.shape) == 1 else [tuple(r) for r in value.nested()]
            depth = len(value.shape)
        elif isinstance(value, list):
            if all(isinstance(v, list) for v in value):
                rows, depth = value, 2
            elif any(isinstance(v, list) for v in value):
                raise CalcError(f"{where}: mixes numbers and lists; give {example}")
            else:
                rows, depth = [value], 1
        else:
            raise CalcError(f"{where}: a {inp.kind} such as {example}")
        if depth != (1 if inp.kind == "vector" else 2):
            got = "a vector" if depth == 1 else "a matrix"
            raise CalcError(f"{where}: a {inp.kind} such as {example}, not {got}")
        if len({len(r) for r in rows}) > 1:
            raise CalcError(f"{where}: every row must have the same length")
        n = sum(len(r) for r in rows)
        if inp.kind == "vector" and n > MAX_VECTOR:
            raise CalcError(f"{where}: at most {MAX_VECTOR:,} entries (got {n:,})")
        if inp.kind == "matrix" and (len(rows) > MAX_ROWS or n > MAX_MATRIX):
            raise CalcError(f"{where}: at most {MAX_ROWS} rows and {MAX_MATRIX:,} entries (got {len(rows)} × "
                            f"{len(rows[0])})")
        out = []
        for r in rows:
            row = []
            for v in r:
                if isinstance(v, list):
                    raise CalcError(f"{where}: a {inp.kind} of numbers, not of lists")
                if isinstance(v, int | float | Fraction) and not isinstance(v, bool):
                    m = v
                else:
                    q = self.quantity(v)
                    if q.dims != NONE:
                        raise CalcError(f"{where}: plain numbers, not {dims_name(q.dims)}")
                    m = q.magnitude
                x = float(m)
                if not math.isfinite(x):
                    raise CalcError(f"{where}: every entry must be finite")
                if inp.minimum is not None and m < inp.minimum:
                    raise CalcError(f"{where}: every entry at least {inp.minimum} (got {x:g})")
                if inp.maximum is not None and m > inp.maximum:
                    raise CalcError(f"{where}: every entry at most {inp.maximum} (got {x:g})")
                if inp.integer and not float(m).is_integer():
                    raise CalcError(f"{where}: whole numbers (got {x:g})")
                row.append(int(m) if inp.integer else m if isinstance(m, Fraction) else x)
            out.append(row)
        return out[0] if inp.kind == "vector" else out


def array_text(a: Array, limit: int | None = None) -> str:
    """``[0.0900306, 0.244728, 0.665241]``; a matrix as its rows ``[[1, 0], [0, 1]]``; with
    ``limit``, at most that many entries per row, then ``…``."""
    from solver.registry.display import number

    def row(vals) -> str:
        shown = list(vals) if limit is None or len(vals) <= limit else list(vals[:limit])
        return "[" + ", ".join(number(x) for x in shown) + (", …" if len(shown) < len(vals) else "") + "]"

    if len(a.shape) == 1:
        return row(a.values)
    rows = a.nested()
    shown = rows if limit is None or len(rows) <= limit else rows[:limit]
    return "[" + ", ".join(row(r) for r in shown) + (", …" if len(shown) < len(rows) else "") + "]"


# ---------------------------------------------------------------------------------------
# The expression with its values substituted (what --explain prints last)
# ---------------------------------------------------------------------------------------

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 3}


def substitution(ev: Evaluator, node: Node) -> tuple[str, str]:
    """(the expression as read, the same with every name replaced by its value)."""
    from solver.registry.display import short

    def show(v) -> str:
        if isinstance(v, Record) and v.primary in v.fields:
            v = v.get(v.primary)
        if isinstance(v, Array):
            return array_text(v, 8)
        try:
            return short(ev.quantity(v))
        except SolverInputError:
            return "…"

    def walk(n: Node, values: bool) -> str:
        k = n.kind
        if k == "num":
            return n.value + n.suffix
        if k == "unit":
            return unit_text(n.value)
        if k == "str":
            return repr(n.value)
        if k in ("name", "preset"):
            if not values or (k == "name" and unit(n.value) is not None and n.value not in ev.variables):
                return n.value
            return show(ev.name(n.value) if k == "name" else preset_record(n.value))
        if k == "field":
            base = walk(n.children[0], False)
            return f"{base}.{n.value}" if not values else show(ev.eval(n))
        if k == "call":
            if values:
                return show(ev.eval(n))
            args = [walk(a, False) for a in n.children] + [f"{key}={walk(a, False)}" for key, a in n.keywords.items()]
            return f"{n.value}({', '.join(args)})"
        if k == "neg":
            return "−" + walk(n.children[0], values)
        if k == "list":
            return "[" + ", ".join(walk(c, values) for c in n.children) + "]"
        if k == "bin":
            a, b = n.children
            p = _PRECEDENCE[n.value]
            sa, sb = walk(a, values), walk(b, values)
            if a.kind == "bin" and _PRECEDENCE[a.value] < p:
                sa = f"({sa})"
            if b.kind == "bin" and (_PRECEDENCE[b.value] < p or (_PRECEDENCE[b.value] == p and n.value in "-/")):
                sb = f"({sb})"
            if n.value == "*" and b.kind == "unit":
                return f"{sa} {sb}"
            return f"{sa} {'×' if n.value == '*' else n.value} {sb}"
        if k == "convert":
            return f"{walk(n.children[0], values)} → {unit_text(n.value)}"
        if k == "assign":
            return f"{n.value} = {walk(n.children[0], values)}"
        return "?"

    return walk(node, False), walk(node, True)
