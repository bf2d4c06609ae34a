"""Numbers as people type them (``3/5``, ``2^20``, ``1.07e9``, ``537M``, ``4 GiB``, ``sqrt(2)/2``):
a tokenizer and a recursive-descent parser of a tiny grammar with its own exact arithmetic.
Nothing is evaluated; see :mod:`drills.answers` for the grammar."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from drills.answers.errors import AnswerParseError, shown
from drills.answers.units import BITS_PER_BYTE, COUNT_SUFFIXES, unit_entry, unit_info

MAX_NUMBER_CHARS = 200
MAX_MATRIX_CHARS = 8000
MAX_MATRIX_ENTRIES = 1024
MAX_DEPTH = 24  # brackets and unary signs nested
MAX_LOG10 = 300  # |value| must lie in [1e-300, 1e300] (or be 0)
MAX_EXACT_BITS = 4096  # beyond this an exact fraction is carried on as a float

NUMBER_EXPECTED = "a number such as 0.6, 3/5, 2^20, 1.07e9, 537M, 4 GiB or sqrt(2)/2"


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
    #: ``text`` as read, the ways of writing by hand made plain (``~4.25 × 10^9 GB.`` -> ``4.25e9 GB``): the
    #: digits a precision rule counts
    plain: str = ""

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
            "exact": None if self.exact is None else fraction_text(self.exact),
            "magnitude": self.magnitude, "unit": self.unit, "dimension": self.dimension,
            "scale": self.scale, "decimals": self.decimals, "sig_digits": self.sig_digits,
        }


def fraction_text(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


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
        if start.kind == "num" and self.tok.kind == "ident" and self.tok.text in COUNT_SUFFIXES:
            canonical, factor = COUNT_SUFFIXES[self.take().text]
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
            raise AnswerParseError(f"{shown(t.text)} is not a number or function I know "
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
        if word not in COUNT_SUFFIXES and word not in _FUNCTIONS and word not in _CONSTANTS \
                and unit_entry(word) is not None:
            return body[:-1], word
    return body, ""


#: ``0,867`` or ``12,5``: a decimal comma (a first group of 0, or a group not of three digits)
_DECIMAL_COMMA = re.compile(r"([+\-−]?)(\d+),(\d+)(?![\d,])")


#: ``4.25 × 10^9``, ``4.25x10^9``, ``4.25*10**9``, ``4.2467×10⁹``, ``3 · 10^{-4}``: a number in scientific notation as
#: people write it by hand, read as the literal ``4.25e9`` (its significant figures those of ``4.25``); what follows
#: (a unit) is kept
_SCIENTIFIC = re.compile(r"([+\-−]?\s*(?:\d[\d,_]*(?:\.\d*)?|\.\d+))\s*[x×X*·⋅]\s*10\s*"
                         r"(?:(?:\^|\*\*)\s*\{?\s*\(?\s*([+\-−]?\s*\d+)\s*\)?\s*\}?|([⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))")
#: ``~4.25 GB``, ``≈ 4.25 GB``: "about" before a figure a student rounded
_ABOUT = re.compile(r"^(?:~|≈|∼)\s*")


def _as_written(raw: str) -> str:
    """``raw`` with the ways people write one number by hand made plain: "about" (``~``, ``≈``) before it dropped, a
    full stop after a unit dropped (``4.25 GB.``), and scientific notation (:data:`_SCIENTIFIC`) as one literal, so
    that ``4.25 × 10^9`` states three significant figures as ``4.25e9`` does (it was read as an exact product)."""
    text = _ABOUT.sub("", raw)
    if text.endswith(".") and len(text) > 1 and text[-2].isalpha():
        text = text[:-1]
    m = _SCIENTIFIC.match(text)
    if m:
        mantissa = m.group(1).replace(" ", "").replace("−", "-")
        exponent = (m.group(2) or m.group(3).translate(_SUPERSCRIPTS)).replace(" ", "").replace("−", "-")
        text = f"{mantissa}e{exponent}{text[m.end():]}"
    return text


def parse_number(text: str) -> Parsed:
    """One number, possibly with a count suffix, a unit or ``%`` (see the module docstring)."""
    if not isinstance(text, str):
        raise AnswerParseError(f"expected {NUMBER_EXPECTED}")
    raw = text.strip()
    if not raw:
        raise AnswerParseError(f"expected {NUMBER_EXPECTED}")
    if len(raw) > MAX_NUMBER_CHARS:
        raise AnswerParseError(f"that answer is too long (at most {MAX_NUMBER_CHARS} characters)")
    comma = _DECIMAL_COMMA.match(raw)
    if comma and (comma.group(2).lstrip("+-−") == "0" or len(comma.group(3)) != 3):
        sign, whole, frac = comma.group(1), comma.group(2), comma.group(3)
        raise AnswerParseError(f"{shown(raw)} has a decimal comma: write {sign}{whole}.{frac} with a point "
                               "(commas group thousands, in threes: 1,048,576)")
    plain = _as_written(raw)
    tokens = _tokenize(plain)
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
            raise AnswerParseError(f"{shown(rest.text)} is not a unit I know (e.g. GB, GiB, bytes, "
                                   "TFLOPs, ms) or a suffix (K, M, B, T)")
        if rest.kind == "op" and rest.text == ")":
            raise AnswerParseError("a closing bracket has no opening one")
        if rest.kind == "op" and rest.text == ",":
            raise AnswerParseError("one number expected (commas group thousands in threes: 1,048,576)")
        raise AnswerParseError(f"unexpected {rest.text!r} after the number; expected {NUMBER_EXPECTED}")
    if unit == "%":
        dimension, factor, canonical = "", Fraction(1, 100), "%"
    elif unit:
        canonical, dimension, factor = unit_entry(unit)  # type: ignore[misc]
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
                  unit=canonical, dimension=dimension, scale=parser.scale, decimals=decimals, sig_digits=sig,
                  plain=plain)


_INFINITY = re.compile(r"([-−+]?)\s*(?:inf(?:inity)?|∞)", re.IGNORECASE)


def read_entry(text: str, allow_inf: bool = False) -> Parsed:
    """One entry of a matrix or vector: a plain number (no unit). With ``allow_inf``, ``-inf``,
    ``−∞``, ``inf`` and ``∞`` are read as infinities (a masked score is −∞)."""
    if allow_inf:
        m = _INFINITY.fullmatch(text.strip())
        if m:
            return Parsed(text=text.strip(), value=-math.inf if m.group(1) in ("-", "−") else math.inf)
    p = parse_number(text)
    if p.dimension or p.unit:
        raise AnswerParseError("matrix entries are plain numbers (no units)")
    return p

