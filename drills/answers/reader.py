"""Read what a student types at the quiz prompt: numbers, matrices, options and commands.

Nothing here evaluates the input: a small tokenizer and a recursive-descent parser read a tiny
grammar, and every value is computed by this module's own arithmetic (exact fractions while
the expression allows it, floats after ``sqrt``, ``pi`` or a non-integer power). Anything else
raises :class:`AnswerParseError` whose message is one short line saying what was expected.

Numbers (:func:`parse_number`)::

    0.602   .602   6.02e-1   3/5   -1/√2   sqrt(2)/2   2√2   2^20   2**20   2²⁰
    1,048,576   1_048_576   1.07e9   1e-3   40%   537M   1.2G   175B   4 GiB   2^20 bytes

- Operators ``+ - * / ^ **`` (also ``− × · ÷``), brackets, ``sqrt``/``√``, ``exp``, ``ln``,
  ``log2``, ``log10``, the constants ``pi``/``π`` and ``e``. A number may be followed directly
  by ``(``, ``√``, a function or ``π`` to multiply (``2√2``, ``3pi``); ``-2^2`` is -4.
- Commas are thousands separators only in groups of three (``1,048,576``); ``1,5`` is refused
  (write ``1.5``).
- Count suffixes after a number (case-sensitive except ``k``): ``K``/``k`` = 10³, ``M`` = 10⁶,
  ``B`` = ``G`` = 10⁹, ``T`` = 10¹², and the words thousand, million, billion, trillion. ``B``
  is a *billion*, never bytes: write ``bytes``, ``GB`` or ``GiB`` for bytes.
- Units at the end (case-insensitive, except for bits and bytes, below): bytes ``byte(s)``,
  decimal ``KB MB GB TB PB`` (10³ⁿ) and binary ``KiB MiB GiB TiB PiB`` (2¹⁰ⁿ); bits (a
  dimension of their own: 8 bits = 1 byte); ``FLOP(s)`` with K/M/G/T/P/E prefixes
  (``TFLOPs``); ``FLOP/s`` likewise (``TFLOP/s``); time ``s ms us µs ns min h``; the words
  ``params``, ``parameters`` and ``tokens`` (no unit). ``%`` divides by 100.
- Bits or bytes ("bits instead of bytes" is a mistake the bank teaches, so they are never
  mixed up here):

  ===============================================  =====================================
  spelling                                         reads as
  ===============================================  =====================================
  ``B``-ending: ``KB MB GB TB PB``, ``kB``         bytes, 10³ⁿ
  ``KiB MiB GiB TiB PiB``                          bytes, 2¹⁰ⁿ
  all lower case: ``kb mb gb tb pb``, ``kib gib``  bytes (how people type GB in a hurry)
  ``byte``, ``bytes``                              bytes
  ``Kb Mb Gb Tb Pb`` (upper-case prefix, ``b``)    bits, 10³ⁿ
  ``Kib Mib Gib Tib Pib``                          bits, 2¹⁰ⁿ
  ``bit``, ``bits``, ``Kbit``/``kbit`` … ``Pbit``,  bits (any case)
  ``Kibit`` … ``Pibit`` (also with a final ``s``)
  ``b`` alone                                      refused (write bits or bytes)
  ===============================================  =====================================

  The lower-case ``b`` means bits only after an upper-case prefix (``Gb``): an all-lower-case
  ``gb`` is far more often a hurried GB than gigabits, so it reads as bytes. ``B`` directly
  after a number with no prefix is a *billion* (above), never bytes.
- :class:`Parsed` keeps the value in the base unit of its dimension (bytes, bits, FLOPs,
  FLOP/s, seconds), the number as typed before the unit (``magnitude``) and the unit, so that
  a grader can convert (:meth:`Parsed.to`, bits to bytes included) and say "you answered in GB
  but the key is in GiB" or "you answered in bits; the key is in bytes".

Matrices (:func:`parse_matrix`, :class:`MatrixReader` for row-by-row entry): rows separated by
``;`` or new lines, entries by commas or else by spaces (so an entry holds no space: ``1/√2``,
not ``1 / √2``); or JSON-style ``[[0.6,0.4],[0.4,0.6]]``. With a known shape, a single line of
rows×cols entries is read row by row. Vectors (:func:`parse_vector`): one row or one column.

Options (:func:`parse_choice`): ``b``, ``B``, ``(b)``, ``b)``, ``2`` (1-based); several for MSQ
as ``a,c``, ``a c``, ``AC``, ``1,3``, ``1 3``. Indices returned are 0-based (0 = a).

Commands at the prompt (:func:`parse_command`): a bare letter is always an answer, so commands
are full words or a colon and one letter:

=================  ==========================  =====================================
command            words                       short
=================  ==========================  =====================================
hint               ``hint``                    ``:h``
skip               ``skip``, ``next``, ``pass``  ``:s``
solution           ``solution``, ``show``      ``:w`` (worked solution)
another            ``another``, ``new``        ``:a``
quit               ``quit``, ``exit``          ``:q``
report             ``report [last] [note]``    ``:r [last] [note]``
help               ``help``, ``?``             ``:?``
=================  ==========================  =====================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

MAX_NUMBER_CHARS = 200
MAX_MATRIX_CHARS = 8000
MAX_MATRIX_ENTRIES = 1024
MAX_DEPTH = 24  # brackets and unary signs nested
MAX_LOG10 = 300  # |value| must lie in [1e-300, 1e300] (or be 0)
MAX_EXACT_BITS = 4096  # beyond this an exact fraction is carried on as a float

NUMBER_EXPECTED = "a number such as 0.6, 3/5, 2^20, 1.07e9, 537M, 4 GiB or sqrt(2)/2"


class AnswerParseError(ValueError):
    """An answer that cannot be read; ``str(e)`` is one short line saying what was expected."""


# --------------------------------------------------------------------------------------------
# parsed values


@dataclass(frozen=True)
class Parsed:
    """A number as the student typed it.

    ``value`` is in the base unit of ``dimension`` (bytes, FLOPs, FLOP/s, s; a plain number
    for ``""``); ``magnitude`` is the number before the unit (4 for ``4 GiB``, 40 for ``40%``,
    537e6 for ``537M``, where ``scale`` is ``"M"``). ``exact`` is the exact rational value of
    ``value`` when the expression has one (``3/5``, ``0.1``, ``2^20 bytes``; ``None`` after
    ``sqrt``/``pi``). ``decimals`` and ``sig_digits`` describe a single typed literal
    (``6.02e-1``: 3 decimals, 3 significant digits) and are ``None`` for an expression.
    """

    text: str
    value: float
    exact: Fraction | None = None
    magnitude: float | None = None
    unit: str = ""  # canonical spelling: "", "%", "bytes", "GB", "GiB", "bits", "Gbit", "FLOPs", "ms", ...
    dimension: str = ""  # "", "bytes", "bits", "FLOPs", "FLOP/s", "s"
    scale: str = ""  # the count suffix used, canonical: "K", "M", "B", "T"
    decimals: int | None = None
    sig_digits: int | None = None

    kind = "number"

    def to(self, unit: str) -> float:
        """This value expressed in ``unit`` (same dimension, or bits and bytes: 8 bits a byte):
        ``parse_number('4.29 GB').to('GiB')``, ``parse_number('16 Gb').to('GB') == 2``."""
        dim, factor = unit_info(unit)
        value = self.value
        if {dim, self.dimension} == {"bits", "bytes"}:
            value = value / BITS_PER_BYTE if self.dimension == "bits" else value * BITS_PER_BYTE
        elif dim != self.dimension:
            have = self.dimension or "a plain number"
            raise AnswerParseError(f"cannot express {have} in {unit}")
        return value / float(factor)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "number", "text": self.text, "value": self.value,
            "exact": None if self.exact is None else _fraction_text(self.exact),
            "magnitude": self.magnitude, "unit": self.unit, "dimension": self.dimension,
            "scale": self.scale, "decimals": self.decimals, "sig_digits": self.sig_digits,
        }


@dataclass(frozen=True)
class ParsedMatrix:
    """A matrix (or a vector as one row): ``rows`` as floats, ``exact`` as Fractions or None."""

    text: str
    rows: tuple[tuple[float, ...], ...]
    exact: tuple[tuple[Fraction | None, ...], ...]

    kind = "matrix"

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), len(self.rows[0]) if self.rows else 0)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "matrix", "text": self.text, "rows": [list(r) for r in self.rows],
                "exact": [[None if x is None else _fraction_text(x) for x in r] for r in self.exact]}


@dataclass(frozen=True)
class ParsedChoice:
    """Chosen options as 0-based indices (0 = a)."""

    text: str
    indices: frozenset[int]
    n_options: int

    kind = "choice"

    @property
    def letters(self) -> str:
        return ",".join(_letter(i) for i in sorted(self.indices))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "choice", "text": self.text, "indices": sorted(self.indices), "letters": self.letters}


@dataclass(frozen=True)
class Command:
    """A quiz command typed at the prompt; ``arg`` is the rest of the line (a report's note)."""

    name: str  # hint | skip | solution | another | quit | report | help
    arg: str = ""


def _fraction_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _letter(i: int) -> str:
    return chr(ord("a") + i)


def _shown(text: str, limit: int = 24) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# --------------------------------------------------------------------------------------------
# units


_COUNT_SUFFIXES: dict[str, tuple[str, int]] = {
    "K": ("K", 10**3), "k": ("K", 10**3), "thousand": ("K", 10**3),
    "M": ("M", 10**6), "million": ("M", 10**6), "mn": ("M", 10**6),
    "B": ("B", 10**9), "G": ("B", 10**9), "billion": ("B", 10**9), "bn": ("B", 10**9),
    "T": ("T", 10**12), "trillion": ("T", 10**12),
}

_SI = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
BITS_PER_BYTE = 8


def _build_units() -> dict[str, tuple[str, str, Fraction]]:
    """lower-case spelling -> (canonical unit, dimension, factor to the base unit)."""
    units: dict[str, tuple[str, str, Fraction]] = {}
    for word in ("byte", "bytes"):
        units[word] = ("bytes", "bytes", Fraction(1))
    for word in ("bit", "bits"):
        units[word] = ("bits", "bits", Fraction(1))
    for i, p in enumerate("KMGTP", start=1):
        units[f"{p}B".lower()] = (f"{p}B", "bytes", Fraction(10 ** (3 * i)))
        units[f"{p}iB".lower()] = (f"{p}iB", "bytes", Fraction(2 ** (10 * i)))
        for s in ("", "s"):
            units[f"{p}bit{s}".lower()] = (f"{p}bit", "bits", Fraction(10 ** (3 * i)))
            units[f"{p}ibit{s}".lower()] = (f"{p}ibit", "bits", Fraction(2 ** (10 * i)))
    for p, f in _SI.items():
        for spelling in ("FLOP", "FLOPs"):
            units[f"{p}{spelling}".lower()] = (f"{p}FLOPs", "FLOPs", Fraction(f))
            units[f"{p}{spelling}/s".lower()] = (f"{p}FLOP/s", "FLOP/s", Fraction(f))
        units[f"{p}FLOPS".lower()] = (f"{p}FLOPs", "FLOPs", Fraction(f))  # same lower-case key
    for spelling, factor in (("s", 1), ("sec", 1), ("ms", Fraction(1, 10**3)), ("us", Fraction(1, 10**6)),
                             ("µs", Fraction(1, 10**6)), ("μs", Fraction(1, 10**6)),
                             ("ns", Fraction(1, 10**9)), ("min", 60), ("h", 3600)):
        canonical = {"sec": "s", "µs": "us", "μs": "us"}.get(spelling, spelling)
        units[spelling] = (canonical, "s", Fraction(factor))
    for word in ("params", "parameters", "tokens"):
        units[word] = ("", "", Fraction(1))
    return units


_UNITS = _build_units()
_PREFIX_POWER = {p: i for i, p in enumerate("KMGTP", start=1)}


def _unit_entry(word: str) -> tuple[str, str, Fraction] | None:
    """``(canonical, dimension, factor)`` of a unit as typed, or None. Case matters for one
    thing only: an upper-case prefix followed by a lower-case ``b`` (``Gb``, ``Gib``) is bits;
    every other spelling is looked up case-insensitively (``gb`` and ``GB`` are bytes)."""
    if len(word) in (2, 3) and word[0] in _PREFIX_POWER and word[-1] == "b" and word[1:-1] in ("", "i"):
        i = _PREFIX_POWER[word[0]]
        if word[1:-1] == "i":
            return (f"{word[0]}ibit", "bits", Fraction(2 ** (10 * i)))
        return (f"{word[0]}bit", "bits", Fraction(10 ** (3 * i)))
    return _UNITS.get(word.lower())


def unit_info(unit: str) -> tuple[str, Fraction]:
    """``(dimension, factor to the base unit)`` of a unit spelling: ``'GiB' -> ('bytes', 2**30)``.

    ``""`` is a plain number; ``"%"`` is 1/100 of a plain number."""
    if unit == "":
        return "", Fraction(1)
    if unit == "%":
        return "", Fraction(1, 100)
    entry = _unit_entry(unit)
    if entry is None:
        raise AnswerParseError(f"unknown unit {unit!r}")
    return entry[1], entry[2]


# --------------------------------------------------------------------------------------------
# tokenizer

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_TOKEN_PATTERN = (
    r"""
    (?P<space>\s+)
  | (?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:_\d+)*)(?:\.\d*)?(?:[eE][+-]?\d+)?
           |\.\d+(?:[eE][+-]?\d+)?)
  | (?P<sup>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)
  | (?P<ident>[A-Za-zµμ]+(?:\d+)?(?:/s\b)?)
  | (?P<op>\*\*|[-+*/^()%√π×·⋅÷−,])
    """
)
_OP_ALIASES = {"−": "-", "×": "*", "·": "*", "⋅": "*", "÷": "/", "**": "^"}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num | sup | ident | op | end
    text: str
    pos: int


@lru_cache(maxsize=1)
def _token_re() -> re.Pattern[str]:
    return re.compile(_TOKEN_PATTERN, re.VERBOSE)  # compiled on first use: keeps the import quick


def _tokenize(text: str) -> list[_Tok]:
    token_re = _token_re()
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = token_re.match(text, pos)
        if m is None:
            raise AnswerParseError(f"unexpected {text[pos]!r}; expected {NUMBER_EXPECTED}")
        kind = m.lastgroup or ""
        piece = m.group()
        if kind == "num" and "," in piece and pos + len(piece) < len(text) and text[pos + len(piece)] == ",":
            raise AnswerParseError("commas group thousands in threes (1,048,576); write decimals with a point")
        if kind != "space":
            if kind == "op":
                piece = _OP_ALIASES.get(piece, piece)
            tokens.append(_Tok(kind, piece, pos))
        pos = m.end()
    tokens.append(_Tok("end", "", len(text)))
    return tokens


# --------------------------------------------------------------------------------------------
# arithmetic on exact-or-float values

Num = Fraction | float


def _check_float(x: float) -> float:
    if math.isnan(x):
        raise AnswerParseError("that is not a real number")
    if math.isinf(x) or (x != 0 and abs(x) > 10.0**MAX_LOG10):
        raise AnswerParseError("that number is too large")
    if x != 0 and abs(x) < 10.0**-MAX_LOG10:
        raise AnswerParseError("that number is too small")
    return x


def _check(x: Num) -> Num:
    if isinstance(x, Fraction):
        if x.numerator.bit_length() + x.denominator.bit_length() > MAX_EXACT_BITS:
            return _check_float(_frac_to_float(x))
        return x
    return _check_float(x)


def _frac_to_float(x: Fraction) -> float:
    if x == 0:
        return 0.0
    # estimate the size first: float(huge Fraction) raises OverflowError
    log10 = (x.numerator.bit_length() - x.denominator.bit_length()) * math.log10(2) if x > 0 else \
        ((-x).numerator.bit_length() - x.denominator.bit_length()) * math.log10(2)
    if log10 > MAX_LOG10 + 1:
        raise AnswerParseError("that number is too large")
    if log10 < -MAX_LOG10 - 1:
        raise AnswerParseError("that number is too small")
    return float(x)


def _as_float(x: Num) -> float:
    return _frac_to_float(x) if isinstance(x, Fraction) else x


def _power(base: Num, exp: Num) -> Num:
    if isinstance(exp, Fraction) and exp.denominator == 1:
        n = exp.numerator
        if base == 0:
            if n < 0:
                raise AnswerParseError("division by zero")
            return Fraction(0) if n > 0 else Fraction(1)
        b = abs(_as_float(base))
        if b != 1.0:
            if abs(n) > 10**6 or abs(n) * abs(math.log10(b)) > MAX_LOG10:
                raise AnswerParseError("that number is too large" if (b > 1) == (n > 0) else "that number is too small")
        elif abs(n) > 10**6:
            n = n % 2 + 2  # (+-1)^n keeps only the parity of n
        if isinstance(base, Fraction) and abs(n) * max(base.numerator.bit_length(), base.denominator.bit_length()) \
                <= MAX_EXACT_BITS:
            return _check(base**n)
        return _check_float(_as_float(base) ** n)
    b, e = _as_float(base), _as_float(exp)
    if b < 0:
        raise AnswerParseError("a negative number to a fractional power is not a real number")
    if b == 0:
        if e < 0:
            raise AnswerParseError("division by zero")
        return 0.0
    if e * math.log10(b) > MAX_LOG10:
        raise AnswerParseError("that number is too large")
    if e * math.log10(b) < -MAX_LOG10:
        raise AnswerParseError("that number is too small")
    return _check_float(b**e)


def _binary(op: str, a: Num, b: Num) -> Num:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        if op == "+":
            return _check(a + b)
        if op == "-":
            return _check(a - b)
        if op == "*":
            return _check(a * b)
        if b == 0:
            raise AnswerParseError("division by zero")
        return _check(a / b)
    x, y = _as_float(a), _as_float(b)
    if op == "+":
        return _check_float(x + y)
    if op == "-":
        return _check_float(x - y)
    if op == "*":
        if x != 0 and y != 0 and math.log10(abs(x)) + math.log10(abs(y)) > MAX_LOG10:
            raise AnswerParseError("that number is too large")
        return _check_float(x * y)
    if y == 0:
        raise AnswerParseError("division by zero")
    if x != 0 and math.log10(abs(x)) - math.log10(abs(y)) > MAX_LOG10:
        raise AnswerParseError("that number is too large")
    return _check_float(x / y)


def _literal(text: str) -> Fraction:
    """A decimal literal as an exact Fraction (``1,048,576``, ``6.02e-1``, ``.5``)."""
    clean = text.replace(",", "").replace("_", "")
    mantissa, _, exp_text = clean.lower().partition("e")
    exp = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0") or "0"
    if abs(exp) > 400 or len(digits) > 60:
        raise AnswerParseError("that number is too large" if exp > 0 else
                               ("that number is too small" if exp < 0 else "too many digits"))
    value = Fraction(int(int_part + frac_part or "0")) * Fraction(10) ** (exp - len(frac_part))
    return _check(value)  # type: ignore[return-value]


def _literal_precision(text: str) -> tuple[int, int]:
    """(decimals, significant digits) of a literal: ``6.02e-1`` -> (3, 3); ``1.07e9`` -> (0, 3)."""
    clean = text.replace(",", "").replace("_", "")
    mantissa, _, exp_text = clean.lower().partition("e")
    exp = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    sig = len((int_part + frac_part).lstrip("0")) or 1
    return max(0, len(frac_part) - exp), sig


# --------------------------------------------------------------------------------------------
# parser

_FUNCTIONS = {"sqrt", "exp", "ln", "log2", "log10"}
_CONSTANTS = {"pi", "e"}


class _Parser:
    """expr := term (('+'|'-') term)* ; term := unary (('*'|'/') unary | implicit)* ;
    unary := ('+'|'-') unary | power ; power := postfix (('^') unary | SUP)? ;
    postfix := atom [count suffix] ; atom := NUM | '(' expr ')' | FUNC '(' expr ')' | '√' unary-free atom
    | 'pi' | 'π' | 'e'."""

    def __init__(self, tokens: list[_Tok]):
        self.tokens = tokens
        self.i = 0
        self.depth = 0
        self.literals = 0  # count of number literals and constants, for "single literal" detection
        self.operators = 0
        self.scale = ""

    @property
    def tok(self) -> _Tok:
        return self.tokens[self.i]

    def take(self) -> _Tok:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise AnswerParseError("too deeply nested")

    def expr(self) -> Num:
        self.enter()
        value = self.term()
        while self.at_op("+", "-"):
            op = self.take().text
            self.operators += 1
            value = _binary(op, value, self.term())
        self.depth -= 1
        return value

    def _implicit_follows(self) -> bool:
        t = self.tok
        return (t.kind == "op" and t.text in ("(", "√", "π")) or (
            t.kind == "ident" and (t.text in _FUNCTIONS or t.text == "pi"))

    def term(self) -> Num:
        value = self.unary()
        while True:
            if self.at_op("*", "/"):
                op = self.take().text
                self.operators += 1
                value = _binary(op, value, self.unary())
            elif self._implicit_follows():
                self.operators += 1
                value = _binary("*", value, self.power())
            else:
                return value

    def unary(self) -> Num:
        if self.at_op("-", "+"):
            self.enter()
            op = self.take().text
            value = self.unary()
            self.depth -= 1
            return -value if op == "-" else value
        return self.power()

    def power(self) -> Num:
        base = self.postfix()
        if self.at_op("^"):
            self.take()
            self.operators += 1
            self.enter()
            exponent = self.unary()
            self.depth -= 1
            return _power(base, exponent)
        if self.tok.kind == "sup":
            sup = self.take().text.translate(_SUPERSCRIPTS)
            self.operators += 1
            if len(sup.lstrip("+-")) > 6:
                raise AnswerParseError("that number is too large")
            return _power(base, Fraction(int(sup)))
        return base

    def postfix(self) -> Num:
        start = self.tok
        value = self.atom()
        if start.kind == "num" and self.tok.kind == "ident" and self.tok.text in _COUNT_SUFFIXES:
            canonical, factor = _COUNT_SUFFIXES[self.take().text]
            if self.scale:
                raise AnswerParseError("one count suffix (K, M, B, T) per answer")
            self.scale = canonical
            value = _binary("*", value, Fraction(factor))
        return value

    def atom(self) -> Num:
        t = self.tok
        if t.kind == "num":
            self.take()
            self.literals += 1
            return _literal(t.text)
        if t.kind == "op" and t.text == "(":
            self.take()
            value = self.expr()
            if not self.at_op(")"):
                raise AnswerParseError("a bracket is not closed")
            self.take()
            return value
        if t.kind == "op" and t.text == "√":
            self.take()
            self.operators += 1
            self.enter()
            value = self.power() if not self.at_op("-") else self.unary()
            self.depth -= 1
            return _sqrt(value)
        if (t.kind == "op" and t.text == "π") or (t.kind == "ident" and t.text == "pi"):
            self.take()
            self.literals += 1
            return math.pi
        if t.kind == "ident" and t.text == "e":
            self.take()
            self.literals += 1
            return math.e
        if t.kind == "ident" and t.text in _FUNCTIONS:
            self.take()
            self.operators += 1
            if not self.at_op("("):
                raise AnswerParseError(f"write {t.text}(...) with brackets")
            self.take()
            value = self.expr()
            if not self.at_op(")"):
                raise AnswerParseError("a bracket is not closed")
            self.take()
            return _function(t.text, value)
        if t.kind == "end":
            raise AnswerParseError(f"the answer ends too early; expected {NUMBER_EXPECTED}")
        if t.kind == "ident":
            if t.text.lower() in ("inf", "infinity", "nan"):
                raise AnswerParseError("expected a finite number")
            raise AnswerParseError(f"{_shown(t.text)} is not a number or function I know "
                                   "(sqrt, exp, ln, log2, log10, pi, e)")
        raise AnswerParseError(f"unexpected {t.text!r}; expected {NUMBER_EXPECTED}")


def _sqrt(x: Num) -> Num:
    if x < 0:
        raise AnswerParseError("the square root of a negative number is not a real number")
    if isinstance(x, Fraction):
        n, d = x.numerator, x.denominator
        rn, rd = math.isqrt(n), math.isqrt(d)
        if rn * rn == n and rd * rd == d:
            return Fraction(rn, rd)
    return _check_float(math.sqrt(_as_float(x)))


def _function(name: str, x: Num) -> Num:
    if name == "sqrt":
        return _sqrt(x)
    f = _as_float(x)
    if name == "exp":
        if f > MAX_LOG10 * math.log(10):
            raise AnswerParseError("that number is too large")
        return _check_float(math.exp(f))
    if f <= 0:
        raise AnswerParseError(f"{name} needs a positive number")
    return _check_float({"ln": math.log, "log2": math.log2, "log10": math.log10}[name](f))


def _split_unit(tokens: list[_Tok], end: int) -> tuple[list[_Tok], str]:
    """Peel ``%`` or a unit off the end of the token list."""
    body = tokens[:end]
    if body and body[-1].kind == "op" and body[-1].text == "%":
        return body[:-1], "%"
    if body and body[-1].kind == "ident":
        word = body[-1].text
        if word not in _COUNT_SUFFIXES and word not in _FUNCTIONS and word not in _CONSTANTS \
                and _unit_entry(word) is not None:
            return body[:-1], word
    return body, ""


def parse_number(text: str) -> Parsed:
    """One number, possibly with a count suffix, a unit or ``%`` (see the module docstring)."""
    if not isinstance(text, str):
        raise AnswerParseError(f"expected {NUMBER_EXPECTED}")
    raw = text.strip()
    if not raw:
        raise AnswerParseError(f"expected {NUMBER_EXPECTED}")
    if len(raw) > MAX_NUMBER_CHARS:
        raise AnswerParseError(f"that answer is too long (at most {MAX_NUMBER_CHARS} characters)")
    tokens = _tokenize(raw)
    body, unit = _split_unit(tokens, len(tokens) - 1)
    if not body:
        raise AnswerParseError(f"expected {NUMBER_EXPECTED}")
    parser = _Parser([*body, _Tok("end", "", len(raw))])
    try:
        magnitude = parser.expr()
    except RecursionError:  # pragma: no cover - MAX_DEPTH keeps far below the limit
        raise AnswerParseError("too deeply nested") from None
    rest = parser.tok
    if rest.kind != "end":
        if rest.kind == "ident" and rest.text == "b":
            raise AnswerParseError("'b' alone is ambiguous: write bits or bytes (Gb is gigabits, GB gigabytes)")
        if rest.kind == "ident":
            raise AnswerParseError(f"{_shown(rest.text)} is not a unit I know (e.g. GB, GiB, bytes, "
                                   "TFLOPs, ms) or a suffix (K, M, B, T)")
        if rest.kind == "op" and rest.text == ")":
            raise AnswerParseError("a closing bracket has no opening one")
        if rest.kind == "op" and rest.text == ",":
            raise AnswerParseError("one number expected (commas group thousands in threes: 1,048,576)")
        raise AnswerParseError(f"unexpected {rest.text!r} after the number; expected {NUMBER_EXPECTED}")
    if unit == "%":
        dimension, factor, canonical = "", Fraction(1, 100), "%"
    elif unit:
        canonical, dimension, factor = _unit_entry(unit)  # type: ignore[misc]
    else:
        dimension, factor, canonical = "", Fraction(1), ""
    value = _binary("*", magnitude, factor)
    decimals = sig = None
    if parser.literals == 1 and parser.operators == 0 and len(body) >= 1:
        literal = next(t for t in body if t.kind == "num") if any(t.kind == "num" for t in body) else None
        if literal is not None:
            decimals, sig = _literal_precision(literal.text)
    exact = value if isinstance(value, Fraction) else None
    return Parsed(text=raw, value=_as_float(value), exact=exact, magnitude=_as_float(magnitude),
                  unit=canonical, dimension=dimension, scale=parser.scale, decimals=decimals, sig_digits=sig)


def _entry(text: str) -> tuple[float, Fraction | None]:
    p = parse_number(text)
    if p.dimension or p.unit:
        raise AnswerParseError("matrix entries are plain numbers (no units)")
    return p.value, p.exact


# --------------------------------------------------------------------------------------------
# matrices and vectors


def _shape_text(shape: tuple[int, int]) -> str:
    return f"{shape[0]}×{shape[1]}"


def _json_rows(text: str) -> list[list[str]]:
    """Split ``[[a,b],[c,d]]`` (or ``[a,b]``) into entry strings, by hand (no json, no eval)."""
    s = text.strip()
    pos = 0

    def skip_spaces() -> None:
        nonlocal pos
        while pos < len(s) and s[pos].isspace():
            pos += 1

    def read_list(depth: int) -> list:
        nonlocal pos
        pos += 1  # the "["
        items: list = []
        skip_spaces()
        if pos < len(s) and s[pos] == "]":
            pos += 1
            return items
        while True:
            skip_spaces()
            if pos < len(s) and s[pos] == "[":
                if depth >= 2:
                    raise AnswerParseError("a matrix nests brackets two deep: [[1,2],[3,4]]")
                items.append(read_list(depth + 1))
            else:
                start = pos
                while pos < len(s) and s[pos] not in ",[]":
                    pos += 1
                if not s[start:pos].strip():
                    raise AnswerParseError("an entry is missing in the brackets")
                items.append(s[start:pos].strip())
            skip_spaces()
            if pos >= len(s):
                raise AnswerParseError("a [ bracket is not closed")
            if s[pos] == ",":
                pos += 1
                continue
            if s[pos] == "]":
                pos += 1
                return items
            raise AnswerParseError("each row goes in its own brackets: [[1,2],[3,4]]")

    top = read_list(1)
    skip_spaces()
    if pos != len(s):
        raise AnswerParseError("text after the closing bracket")
    if all(isinstance(x, list) for x in top):
        return top
    if all(isinstance(x, str) for x in top):
        return [top]
    raise AnswerParseError("mix of rows and numbers; write [[1,2],[3,4]] or [1,2]")


def _plain_rows(text: str) -> list[list[str]]:
    rows = []
    for line in re.split(r"[;\n]", text):
        if not line.strip():
            continue
        if "," in line:
            cells = [c for c in line.split(",")]
            if any(not c.strip() for c in cells):
                raise AnswerParseError("an entry is missing between two commas")
        else:
            cells = line.split()
        rows.append([c.strip() for c in cells])
    return rows


def _build(text: str, cells: list[list[str]], shape: tuple[int, int] | None) -> ParsedMatrix:
    cells = [r for r in cells if r]
    if not cells:
        raise AnswerParseError("expected a matrix: rows separated by ';', e.g. 0.6 0.4; 0.4 0.6")
    if shape is not None and len(cells) == 1 and shape[0] > 1 and len(cells[0]) == shape[0] * shape[1]:
        flat = cells[0]
        cells = [flat[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]
    n_entries = sum(len(r) for r in cells)
    if n_entries > MAX_MATRIX_ENTRIES:
        raise AnswerParseError(f"too many entries (at most {MAX_MATRIX_ENTRIES})")
    width = len(cells[0])
    for i, r in enumerate(cells[1:], start=2):
        if len(r) != width:
            raise AnswerParseError(f"row {i} has {len(r)} entries but row 1 has {width}")
    if shape is not None and (len(cells), width) != tuple(shape):
        raise AnswerParseError(f"expected a {_shape_text(shape)} matrix ({shape[0]} rows of {shape[1]}), "
                               f"got {_shape_text((len(cells), width))}")
    values, exacts = [], []
    for i, r in enumerate(cells, start=1):
        vrow, erow = [], []
        for j, cell in enumerate(r, start=1):
            try:
                v, e = _entry(cell)
            except AnswerParseError as err:
                raise AnswerParseError(f"row {i}, entry {j} ({_shown(cell, 16)}): {err}") from None
            vrow.append(v)
            erow.append(e)
        values.append(tuple(vrow))
        exacts.append(tuple(erow))
    return ParsedMatrix(text=text.strip(), rows=tuple(values), exact=tuple(exacts))


def _matrix_cells(text: str) -> list[list[str]]:
    if not isinstance(text, str) or not text.strip():
        raise AnswerParseError("expected a matrix: rows separated by ';', e.g. 0.6 0.4; 0.4 0.6")
    if len(text) > MAX_MATRIX_CHARS:
        raise AnswerParseError(f"that answer is too long (at most {MAX_MATRIX_CHARS} characters)")
    return _json_rows(text) if text.lstrip().startswith("[") else _plain_rows(text)


def parse_matrix(text: str, shape: tuple[int, int] | None = None) -> ParsedMatrix:
    """A whole matrix on one line (or several): ``0.6 0.4; 0.4 0.6`` or ``[[0.6,0.4],[0.4,0.6]]``."""
    return _build(text, _matrix_cells(text), tuple(shape) if shape is not None else None)


def parse_vector(text: str, length: int | None = None) -> ParsedMatrix:
    """A vector as one row (``1 2 3``, ``1, 2, 3``, ``[1,2,3]``) or one column (``1; 2; 3``),
    returned as a 1×n :class:`ParsedMatrix`."""
    cells = [r for r in _matrix_cells(text) if r]
    if len(cells) > 1 and all(len(r) == 1 for r in cells):
        cells = [[r[0] for r in cells]]
    if len(cells) != 1:
        raise AnswerParseError("expected a vector: entries separated by spaces or commas, e.g. 0.2 0.5 0.3")
    if length is not None and len(cells[0]) != length:
        raise AnswerParseError(f"expected {length} entries, got {len(cells[0])}")
    return _build(text, cells, None)


class MatrixReader:
    """Row-by-row entry of a matrix at a prompt.

    ``feed(line)`` returns True when the matrix is complete: the expected row count is reached,
    a blank line follows at least one row, or a whole matrix came in one line (with ``;`` or
    brackets). A row that cannot be read raises :class:`AnswerParseError` and is dropped (the
    rows before it are kept, so the student retypes only that row). ``result()`` gives the
    :class:`ParsedMatrix`; ``prompt()`` says which row comes next.
    """

    def __init__(self, shape: tuple[int, int] | None = None):
        self.shape = tuple(shape) if shape is not None else None
        self.rows: list[list[str]] = []
        self.lines: list[str] = []
        self._done: ParsedMatrix | None = None

    @property
    def complete(self) -> bool:
        return self._done is not None

    def prompt(self) -> str:
        n = len(self.rows) + 1
        return f"row {n} of {self.shape[0]}" if self.shape else f"row {n} (blank line to finish)"

    def reset(self) -> None:
        self.rows, self.lines, self._done = [], [], None

    def feed(self, line: str) -> bool:
        if self._done is not None:
            return True
        stripped = line.strip()
        if not stripped:
            if not self.rows:
                raise AnswerParseError("expected a row of numbers, e.g. 0.6 0.4")
            self._done = _build("\n".join(self.lines), self.rows, self.shape)
            return True
        if not self.rows and (stripped.startswith("[") or ";" in stripped):
            self._done = parse_matrix(stripped, self.shape)
            self.lines = [stripped]
            return True
        if ";" in stripped or stripped.startswith("["):
            raise AnswerParseError("one row per line here (or the whole matrix on the first line)")
        cells = _plain_rows(stripped)
        row = cells[0]
        if self.shape is not None and not self.rows and len(row) == self.shape[0] * self.shape[1] \
                and self.shape[0] > 1:
            self._done = parse_matrix(stripped, self.shape)
            self.lines = [stripped]
            return True
        for j, cell in enumerate(row, start=1):  # an unreadable entry first: "abc" is not a short row
            try:
                _entry(cell)
            except AnswerParseError as err:
                raise AnswerParseError(f"entry {j} ({_shown(cell, 16)}): {err}") from None
        width = self.shape[1] if self.shape else (len(self.rows[0]) if self.rows else None)
        if width is not None and len(row) != width:
            raise AnswerParseError(f"expected {width} entries in this row, got {len(row)}")
        self.rows.append(row)
        self.lines.append(stripped)
        if self.shape is not None and len(self.rows) == self.shape[0]:
            self._done = _build("\n".join(self.lines), self.rows, self.shape)
            return True
        return False

    def result(self) -> ParsedMatrix:
        if self._done is None:
            raise AnswerParseError("the matrix is not complete yet")
        return self._done


# --------------------------------------------------------------------------------------------
# options


def _options_text(n: int) -> str:
    return f"a-{_letter(n - 1)} or 1-{n}" if n > 1 else "a or 1"


def parse_choice(text: str, n_options: int, multiple: bool = False) -> ParsedChoice:
    """MCQ (``multiple=False``): one of ``b``, ``B``, ``(b)``, ``b)``, ``2``. MSQ: one or more,
    ``a,c``, ``a c``, ``AC``, ``(a)(c)``, ``1,3``, ``13`` (digits run together only with at most 9
    options). Returns 0-based indices."""
    if not 1 <= n_options <= 26:
        raise ValueError(f"n_options must be 1..26, not {n_options}")
    if not isinstance(text, str):
        raise AnswerParseError("expected an option letter")
    raw = text.strip()
    expected = (f"expected one or more options ({_options_text(n_options)}), e.g. a,c" if multiple
                else f"expected one option ({_options_text(n_options)})")
    if not raw or len(raw) > 100:
        raise AnswerParseError(expected)
    low = re.sub(r"^(options?|answer)\s*:?\s*", "", raw.lower())
    low = re.sub(r"[()\[\].]", " ", low)
    picks: list[int] = []
    for piece in re.split(r"[\s,;/&+]+|\band\b", low):
        if not piece:
            continue
        if piece.isascii() and piece.isdigit():
            if len(piece) > 3:
                raise AnswerParseError(expected)
            if len(piece) > 1 and n_options <= 9 and multiple:
                picks.extend(int(c) - 1 for c in piece)
            else:
                picks.append(int(piece) - 1)
        elif piece.isascii() and piece.isalpha():
            picks.extend(ord(c) - ord("a") for c in piece)
        else:
            raise AnswerParseError(expected)
    if not picks:
        raise AnswerParseError(expected)
    for p in picks:
        if p < 0:
            raise AnswerParseError(expected)
        if p >= n_options:
            raise AnswerParseError(f"there are {n_options} options ({_options_text(n_options)})")
    chosen = frozenset(picks)
    if not multiple and len(chosen) > 1:
        raise AnswerParseError(f"choose one option ({_options_text(n_options)}); this question has one answer")
    return ParsedChoice(text=raw, indices=chosen, n_options=n_options)


# --------------------------------------------------------------------------------------------
# commands

_COMMAND_WORDS = {
    "hint": "hint", "skip": "skip", "next": "skip", "pass": "skip",
    "solution": "solution", "show": "solution", "another": "another", "new": "another",
    "quit": "quit", "exit": "quit", "report": "report", "help": "help", "?": "help",
}
_COMMAND_SHORT = {"h": "hint", "s": "skip", "w": "solution", "a": "another", "q": "quit", "r": "report",
                  "?": "help"}
COMMAND_HELP = (
    "hint (:h)   skip (:s)   solution (:w)   another (:a)   report [last] [note] (:r)   quit (:q)   help (:?)"
)
REPORT_HELP = "report: dispute the key of the problem on screen; report last: of the previous problem"


def parse_command(text: str, letters_are_answers: bool = True) -> Command | None:
    """The quiz command in ``text``, or ``None`` when it is an answer.

    Commands are full words or ``:`` and one letter (table in the module docstring). A bare
    letter is an answer while ``letters_are_answers`` (MCQ/MSQ); for number and matrix
    problems pass ``False`` and the bare shortcuts ``h s w a q r`` are commands too."""
    if not isinstance(text, str):
        return None
    raw = text.strip()
    if not raw:
        return None
    head, _, rest = raw.partition(" ")
    word = head.lower()
    if word.startswith(":") and len(word) >= 2:
        name = _COMMAND_SHORT.get(word[1:]) or _COMMAND_WORDS.get(word[1:])
        if name is None:
            raise AnswerParseError(f"unknown command {head!r}; commands: {COMMAND_HELP}")
        return Command(name, rest.strip() if name == "report" else "")
    name = _COMMAND_WORDS.get(word)
    if name is None and not letters_are_answers and len(word) == 1:
        name = _COMMAND_SHORT.get(word)
    if name is None:
        return None
    if rest.strip() and name != "report":
        return None  # "show 3" is not a command; the answer parser says why
    return Command(name, rest.strip())


# --------------------------------------------------------------------------------------------
# dispatch


def parse_answer(text: str, problem_type: str, *, n_options: int | None = None,
                 shape: tuple[int, int] | None = None) -> Parsed | ParsedMatrix | ParsedChoice:
    """Parse ``text`` for a problem of ``problem_type`` (mcq, msq, nat, integer, matrix)."""
    if problem_type in ("mcq", "msq"):
        if n_options is None:
            raise ValueError("n_options is needed for a choice problem")
        return parse_choice(text, n_options, multiple=problem_type == "msq")
    if problem_type in ("nat", "integer"):
        return parse_number(text)
    if problem_type == "matrix":
        return parse_matrix(text, shape)
    raise ValueError(f"unknown problem type {problem_type!r}")


def key_shape(key: Any) -> tuple[int, int] | None:
    """The shape of a matrix key's ``value`` (rows of numbers), or None."""
    value = getattr(key, "value", None)
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], (tuple, list)):
        return (len(value), len(value[0]))
    return None


def parse_for(item: Any, text: str) -> Parsed | ParsedMatrix | ParsedChoice:
    """Parse ``text`` for a ``question_bank.problem.Problem`` or ``Part`` (duck-typed: ``type``,
    ``key``, and ``options`` for choice problems)."""
    options = getattr(item, "options", None) or getattr(item, "options_text", None) or []
    return parse_answer(text, item.type, n_options=len(options) or None, shape=key_shape(item.key))
