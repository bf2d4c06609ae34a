"""The one option type for every number a ``qkv solve`` option takes (:class:`Number`).

A value is read exactly (the quiz's number grammar, :func:`drills.cli.matrix_args.parse_number`:
``3``, ``0.5``, ``1e-3``, ``1/2``, ``2^-3``, ``1,024``), then scaled by its suffix, then checked:
it must be finite, inside the option's range, and of a size a double holds comfortably
(magnitude at most 10^30 and, unless 0, at least 10^-30; a whole number at most 10^18). Anything
else is refused in one line naming the option (exit status 2), so no NaN, infinity or overflow
reaches a formula: ``nan``, ``inf``, ``1e400``, ``1e-300`` or a 401-digit integer never do.

Suffixes, by the kind of the option (the rule ``qkv solve --help`` states):

- sizes of one sequence or of one layer (``--seq``, ``--context``, ``--prompt``, ``--d-model``,
  ``--d-ff``, ...: kind ``"size"``): **k/K = 1024, M = 2^20** (the field writes "8k context" for
  8,192 tokens and "4k wide" for 4,096); Ki and Mi say the same explicitly;
- counts (parameters, training tokens, batch, weights, FLOPs: kinds ``"count"``, ``"flops"``,
  ``"plain"``): **k/K = 10^3, M = 10^6, B/G = 10^9, T = 10^12** (70B parameters, 1.4T tokens);
- bytes and bytes/s: SI prefixes are powers of 10, Ki/Mi/Gi/Ti/Pi powers of 2 (80GB, 80GiB, 3.35TB/s);
- a vocabulary size takes no suffix (kind ``"exact"``): "32k" is 32,000 for Llama 2 and
  32,768 for Mistral, so it must be written out.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import click

from drills.output import InputError

#: The rule as the help states it (``qkv solve --help``, and each size option's help).
SUFFIX_RULE = (
    "Suffixes: sequence lengths and layer sizes (--seq, --context, --prompt, --d-model, ...) read "
    "k = 1024 and M = 2^20 (8k = 8,192); counts (parameters, tokens of a budget, batch, weights, "
    "FLOPs) read K = 10^3, M = 10^6, B = 10^9, T = 10^12 (70B, 1.4T); bytes read GB = 10^9 and "
    "GiB = 2^30. A vocabulary size takes no suffix."
)

MAX_MAGNITUDE = Fraction(10) ** 30
MIN_MAGNITUDE = Fraction(1, 10**30)
MAX_INTEGER = 10**18

_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_COUNT = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_SIZE = {"": 1, "k": 2**10, "K": 2**10, "M": 2**20, "Ki": 2**10, "Mi": 2**20}
_UNITS = {
    "flops": r"(?:flop/s|flops|flop)?",
    "bytes": r"(?:b|bytes?)?",
    "bandwidth": r"(?:b/s|bps|bytes?/s)?",
    "count": r"",
    "size": r"",
    "plain": r"",
    "exact": r"",
}
_QTY = re.compile(r"^(?P<num>[-+0-9.eE/^,_]+?)\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|[kKMGTPEB]?)\s*(?P<unit>[A-Za-z/]*)$")
_EXAMPLES = {
    "count": "70B, 1.4T, 4096",
    "size": "8k (= 8192), 4096, 1M (= 2^20)",
    "bytes": "80GB, 80GiB, 80e9",
    "bandwidth": "3.35TB/s, 3.35e12",
    "flops": "989T, 989e12",
    "plain": "2, 0.5, 1e-3, 1/2",
    "exact": "32000",
    "seconds": "5e-6, 5us, 1.5ms",
}
_SECONDS = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
            "ns": Fraction(1, 10**9)}


def _shown(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 30 else text[:27] + "..."


def parse_quantity(text: str, kind: str, param: str) -> Fraction:
    """``'80GB'`` → 80·10^9, ``'80GiB'`` → 80·2^30, ``'989T'`` → 989·10^12, ``'70B'`` (a count) →
    7·10^10, ``'8k'`` (a size) → 8192. Exact; no range check (see :class:`Number`)."""
    from drills.cli.matrix_args import parse_number

    if len(text) > 200:
        raise InputError(f"{_shown(text)!r}: too long to be a number here", param)
    if kind == "seconds":  # a time: 5us, 1.5 ms, 2e-6 s, or plain seconds
        t = re.fullmatch(r"(?P<num>[-+0-9.eE/^,_]+?)\s*(?P<unit>s|ms|us|µs|ns)?", text.strip())
        if not t:
            raise InputError(f"{_shown(text)!r} is not a time (examples: {_EXAMPLES['seconds']})", param)
        return parse_number(t["num"], param) * _SECONDS[t["unit"] or "s"]
    m = _QTY.match(text.strip())
    if not m and kind in ("plain", "exact"):
        return parse_number(text, param)  # the quiz grammar's own message ("1/sqrt(2)": not exact)
    if not m:
        raise InputError(f"{_shown(text)!r} is not a number (examples: {_EXAMPLES.get(kind, _EXAMPLES['plain'])})",
                         param)
    prefix, unit = m["prefix"], m["unit"]
    if kind in ("plain", "exact") and not prefix and not unit:
        return parse_number(m["num"], param)
    value = parse_number(m["num"], param)
    if kind == "exact":
        raise InputError(f"{_shown(text)!r}: write the number out (a vocabulary size takes no suffix: "
                         "32k is 32,000 for some models and 32,768 for others)", param)
    if kind == "count":
        if prefix not in _COUNT or unit:
            raise InputError(f"{_shown(text)!r}: use a plain number or a suffix K, M, B (billion) or T", param)
        return value * _COUNT[prefix]
    if kind == "size":
        if prefix not in _SIZE or unit:
            raise InputError(f"{_shown(text)!r}: use a plain number or a suffix k (= 1024) or M (= 2^20)", param)
        return value * _SIZE[prefix]
    if prefix == "B" and not unit:  # '80B' for bytes means 80 bytes
        prefix, unit = "", "B"
    if not re.fullmatch(_UNITS[kind], unit, flags=re.IGNORECASE):
        raise InputError(f"{_shown(text)!r}: unit {unit!r} does not fit here", param)
    scale = _BIN.get(prefix) or _SI.get(prefix)
    if scale is None or (prefix in _BIN and kind not in ("bytes", "bandwidth")):
        raise InputError(f"{_shown(text)!r}: unknown prefix {prefix!r}", param)
    return value * scale


def _num_text(x: Fraction | int | float) -> str:
    x = Fraction(x)
    if x.denominator == 1:
        return f"{x.numerator:,}" if abs(x) < 10**15 else f"{float(x):g}"
    return f"{float(x):g}"


class Number(click.ParamType):
    """A number option: exact reading, suffix by ``kind``, then a finite value in range or one line.

    ``min``/``max`` bound the value (``min_open``/``max_open`` exclude the bound); the default
    is positive (> 0), as most sizes and figures are. ``integer`` asks for a whole number and
    returns an ``int``; otherwise the value is an ``int`` when whole, else a ``float``.
    """

    name = "number"

    def __init__(self, kind: str = "plain", *, integer: bool = False, min: Any = 0, max: Any = None,
                 min_open: bool | None = None, max_open: bool = False, metavar: str | None = None,
                 exact: bool = False):
        self.kind, self.integer, self.exact = kind, integer, exact
        self.min = None if min is None else Fraction(min)
        self.max = None if max is None else Fraction(max)
        # the default lower bound 0 is open (positive) unless said otherwise
        self.min_open = (min == 0 and not integer) if min_open is None else min_open
        if integer and min == 0 and min_open is None:
            self.min_open = True
        self.max_open = max_open
        self.metavar = metavar or ("INT" if integer else ("SIZE" if kind == "size" else "NUMBER"))

    def get_metavar(self, param, ctx=None):  # noqa: D102 - click's hook
        return self.metavar

    def _range_text(self) -> str:
        lo, hi = self.min, self.max
        if lo is not None and hi is not None:
            left = "above" if self.min_open else "from"
            right = "below" if self.max_open else "to"
            return f"{left} {_num_text(lo)} {right} {_num_text(hi)}"
        if lo is not None:
            if lo == 0:
                return "positive (> 0)" if self.min_open else "0 or more"
            return f"{'above' if self.min_open else 'at least'} {_num_text(lo)}"
        if hi is not None:
            return f"{'below' if self.max_open else 'at most'} {_num_text(hi)}"
        return "finite"

    def check(self, q: Fraction, shown: str, flag: str) -> int | float:
        """The value of ``q`` once its range and size are checked (or a one-line refusal)."""
        bad_low = self.min is not None and (q < self.min or (self.min_open and q == self.min))
        bad_high = self.max is not None and (q > self.max or (self.max_open and q == self.max))
        if bad_low or bad_high:
            raise InputError(f"must be {self._range_text()} (got {shown})", flag)
        if self.exact:  # kept as the exact rational typed (the --exact paths of the kernels)
            if abs(q) > MAX_MAGNITUDE:
                raise InputError(f"{shown} is too large here (magnitude at most 1e30)", flag)
            if q != 0 and abs(q) < MIN_MAGNITUDE:
                raise InputError(f"{shown} is too small here (magnitude at least 1e-30, or 0)", flag)
            return q
        if self.integer:
            if q.denominator != 1:
                raise InputError(f"must be a whole number (got {shown})", flag)
            if abs(q) > MAX_INTEGER:
                raise InputError(f"{shown} is too large here (at most 10^18)", flag)
            return int(q)
        if abs(q) > MAX_MAGNITUDE:
            raise InputError(f"{shown} is too large here (magnitude at most 1e30)", flag)
        if q != 0 and abs(q) < MIN_MAGNITUDE:
            raise InputError(f"{shown} is too small here (magnitude at least 1e-30, or 0)", flag)
        if q.denominator == 1 and abs(q) <= MAX_INTEGER:
            return int(q)
        return float(q)

    def convert(self, value, param, ctx):
        flag = param.opts[0] if param is not None and param.opts else "value"
        if isinstance(value, bool):
            raise InputError(f"must be a number (got {value})", flag)
        if isinstance(value, (int, Fraction)):  # a default or a programmatic value
            return self.check(Fraction(value), _num_text(value), flag)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise InputError(f"must be a finite number (got {value})", flag)
            return self.check(Fraction(value), f"{value:g}", flag)
        text = str(value)
        q = parse_quantity(text, self.kind, flag)
        return self.check(q, _shown(text), flag)


def Int(min: int | None = 1, max: int | None = None, kind: str = "plain") -> Number:
    """A whole number from ``min`` to ``max`` (both included)."""
    return Number(kind, integer=True, min=min, max=max, min_open=False)


def Real(min: Any = None, max: Any = None, *, min_open: bool = False, max_open: bool = False) -> Number:
    """A real number in a range (closed unless said otherwise)."""
    return Number("plain", min=min, max=max, min_open=min_open, max_open=max_open)


def Exact(min: Any = None, max: Any = None, *, min_open: bool = False, metavar: str = "X") -> Number:
    """A real number kept as the exact Fraction typed (``0.1`` is 1/10), checked like the rest."""
    return Number("plain", min=min, max=max, min_open=min_open, metavar=metavar, exact=True)


# The shared instances (names kept from drills.cli.solve_hardware, which re-exports them).
FLOPS, BYTES = Number("flops", min=1, min_open=False), Number("bytes")
BANDWIDTH = Number("bandwidth", min=1, min_open=False)
COUNT = Number("count", integer=True, min=1, min_open=False)
SIZE = Number("size", integer=True, min=1, min_open=False)
INT = Number("plain", integer=True, min=1, min_open=False)
POSITIVE = Number("plain")
KV_BYTES = Number("bytes", min=0, min_open=False)  # issue 20: 0 = no KV cache (a model without one)
