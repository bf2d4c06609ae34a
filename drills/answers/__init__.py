"""The one reader of what a student types (quiz, exam and checker alike): numbers, matrices, options and commands.

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
- Scientific notation as written by hand is one literal: ``4.25 × 10^9``, ``4.25x10^9``, ``4.25*10**9``,
  ``4.2467×10⁹``, ``3·10^{-4}`` read as ``4.25e9`` (three significant figures, not an exact product). ``~`` or
  ``≈`` before a figure and a full stop after its unit are dropped (``~4.25 GB.``).
- Commas are thousands separators only in groups of three (``1,048,576``); ``1,5`` is refused
  (write ``1.5``).
- Count suffixes after a number (case-sensitive except ``k``): ``K``/``k`` = 10³, ``M`` = 10⁶,
  ``B`` = ``G`` = 10⁹, ``T`` = 10¹², and the words thousand, million, billion, trillion. ``B``
  is a *billion*, never bytes: write ``bytes``, ``GB`` or ``GiB`` for bytes.
- Units at the end (case-insensitive, except for bits and bytes, below): bytes ``byte(s)``,
  decimal ``KB MB GB TB PB`` (10³ⁿ) and binary ``KiB MiB GiB TiB PiB`` (2¹⁰ⁿ); bits (a
  dimension of their own: 8 bits = 1 byte); ``FLOP(s)`` with K/M/G/T/P/E prefixes
  (``TFLOPs``); ``FLOP/s`` likewise (``TFLOP/s``); rates of bytes and bits (``B/s``,
  ``GB/s``, ``TB/s``, ``GiB/s``, ``bytes/s``, ``Gb/s`` is bits) and ``tokens/s``; time
  ``s ms us µs ns min h``; the words written out (``gigabytes``, ``gibibytes``, ``milliseconds``,
  ``seconds``, ``hours`` ...); the words ``params``, ``parameters`` and ``tokens`` (no unit).
  ``%`` divides by 100.
- A count suffix for a key asked in a scaled unit (billions, GB, units of 10²⁰) is read in that
  unit: ``12.88B`` is 12.88 for a key in billions, with its digits counted there; a full count
  (``12879925248``, ``1.288e10``) is accepted by the judge as well.
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
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from drills.answers.choices import ParsedChoice, parse_choice, parse_choice_or_text
from drills.answers.commands import COMMAND_HELP, REPORT_HELP, Command, parse_command
from drills.answers.errors import AnswerParseError
from drills.answers.matrices import MatrixReader, ParsedMatrix, parse_matrix, parse_vector
from drills.answers.numbers import (
    MAX_MATRIX_CHARS,
    MAX_MATRIX_ENTRIES,
    MAX_NUMBER_CHARS,
    NUMBER_EXPECTED,
    Parsed,
    parse_number,
)
from drills.answers.units import BITS_PER_BYTE, unit_info

if TYPE_CHECKING:
    from question_bank.grading import GivenUnit
    from question_bank.problem import Part, Problem

__all__ = [
    "AnswerParseError",
    "Parsed",
    "ParsedMatrix",
    "ParsedChoice",
    "Command",
    "MatrixReader",
    "parse_number",
    "parse_matrix",
    "parse_vector",
    "parse_choice",
    "parse_command",
    "parse_answer",
    "parse_for",
    "key_shape",
    "Answer",
    "read_answer",
    "graded_value",
    "given_unit",
    "unit_info",
    "BITS_PER_BYTE",
    "COMMAND_HELP",
    "REPORT_HELP",
    "NUMBER_EXPECTED",
    "MAX_NUMBER_CHARS",
    "MAX_MATRIX_CHARS",
    "MAX_MATRIX_ENTRIES",
]


# --------------------------------------------------------------------------------------------
# dispatch


def parse_answer(text: str, problem_type: str, *, n_options: int | None = None,
                 shape: tuple[int, int] | None = None,
                 options_text: list[str] | None = None) -> Parsed | ParsedMatrix | ParsedChoice:
    """Parse ``text`` for a problem of ``problem_type`` (mcq, msq, nat, integer, matrix); with
    ``options_text``, an option may be typed as its text (``3x6`` for "3 × 6")."""
    if problem_type in ("mcq", "msq"):
        if n_options is None:
            raise ValueError("n_options is needed for a choice problem")
        return parse_choice_or_text(text, n_options, options_text, multiple=problem_type == "msq")
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
    return parse_answer(text, item.type, n_options=len(options) or None, shape=key_shape(item.key),
                        options_text=getattr(item, "options_text", None) or None)


# --------------------------------------------------------------------------------------------
# the one path from typed text to what the judge takes (quiz, exam and checker alike)


@dataclass(frozen=True)
class Answer:
    """An answer to one question (a problem or a part): as typed, as parsed, and as the judge
    (:func:`question_bank.grading.grade`) takes it: ``value`` in the key's unit, ``written`` the
    literal whose digits count for precision feedback (None for an expression), ``unit`` the unit
    it was typed in when that was converted (bits for bytes, GB for a GiB key)."""

    text: str
    parsed: Parsed | ParsedMatrix | ParsedChoice
    value: Any
    written: str | None = None
    unit: GivenUnit | None = None


def _key_unit(unit: str) -> tuple[str, Fraction] | None:
    """``(dimension, factor)`` of a key's unit (``"GiB"``, ``"FLOPs (2 per multiply-add)"``),
    or None for a plain count (``""``, ``"parameters"``, ``"%"``)."""
    word = unit.split("(")[0].strip()
    if not word:
        return None
    try:
        dim, factor = unit_info(word)
    except (AnswerParseError, KeyError, ValueError):
        return None
    return (dim, factor) if dim else None


def _literal(parsed: Parsed) -> str | None:
    """The number as typed when it is one plain literal (``0.60``), for its digits."""
    return (parsed.plain or parsed.text) if (parsed.decimals is not None and not parsed.unit and not parsed.scale) else None


def graded_value(parsed: Parsed | ParsedMatrix | ParsedChoice, target: Problem | Part) -> tuple[Any, str | None]:
    """The value handed to the judge for a parsed answer, and the text whose digits count
    (``written``) for NAT precision feedback.

    - options: an index (MCQ) or a set of indices (MSQ); a matrix: its rows;
    - a quantity with a unit is converted to the key's unit (bits to a key in bytes too, ÷ 8: the
      judge then says the answer was in bits, see :func:`read_answer`'s ``unit``); a unit of
      another kind raises :class:`AnswerParseError`;
    - ``%``: a number typed with ``%`` for a key in % is that number of percent (``47.0%`` is 47.0
      against a key of 47.0 %); for a key without a unit it is a fraction (``40%`` is 0.4).
    """
    if isinstance(parsed, ParsedChoice):
        idx = sorted(parsed.indices)
        return (idx[0] if target.type == "mcq" else set(idx)), None
    if isinstance(parsed, ParsedMatrix):
        return [list(r) for r in parsed.rows], None
    key_unit = getattr(target.key, "unit", "") or ""
    if parsed.unit == "%" and key_unit.split("(")[0].strip() == "%":
        written = (parsed.plain or parsed.text).rstrip().removesuffix("%").strip() if parsed.decimals is not None else None
        return (parsed.exact * 100 if parsed.exact is not None else parsed.magnitude), written
    unit = _key_unit(key_unit)
    if parsed.dimension:
        if unit is not None:
            dim, factor = unit
            per = 1
            if (parsed.dimension, dim) in (("bits", "bytes"), ("bits/s", "bytes/s")):
                per = BITS_PER_BYTE
            elif dim != parsed.dimension:
                raise AnswerParseError(f"the answer is in {key_unit.split('(')[0].strip()}, not {parsed.unit}")
            if parsed.exact is not None:
                return parsed.exact / per / factor, None
            return parsed.value / per / float(factor), None
        # a plain count answered with a unit: the base-unit value (bytes, FLOPs, seconds)
        return (parsed.exact if parsed.exact is not None else parsed.value), None
    if parsed.scale:
        return _scaled(parsed, target.key)
    return (parsed.exact if parsed.exact is not None else parsed.value), _literal(parsed)


def _scaled(parsed: Parsed, key: Any) -> tuple[Any, str | None]:
    """A number typed with a count suffix or word (``12.88B``, ``537 million``) in the key's
    unit: divided by what that unit stands for (10⁹ for a key in billions or GB, 1 for a plain
    count; :func:`question_bank.grading.key_factor`), with the digits typed restated in that unit
    (``12.88B`` -> ``12.88``, ``12880M`` -> ``12.880``) so that precision is judged as asked."""
    from question_bank.grading import key_factor

    factor = key_factor(key) or Fraction(1)
    value = parsed.exact / factor if parsed.exact is not None else parsed.value / float(factor)
    written = None
    if parsed.decimals is not None and parsed.sig_digits is not None:
        from drills.answers.units import COUNT_SUFFIXES

        suffix = next((f for c, f in COUNT_SUFFIXES.values() if c == parsed.scale), 1)
        mantissa = (parsed.plain or parsed.text).strip()
        m = re.match(r"[+\-]?[\d,_]*\.?\d*(?:[eE][+\-]?\d+)?", mantissa)
        lit = m.group(0) if m else ""
        frac, _, exp = lit.replace(",", "").replace("_", "").lower().partition("e")
        places = len(frac.partition(".")[2]) - int(exp or 0) - round(math.log10(suffix)) + round(math.log10(factor))
        if places >= 0 and float(math.log10(factor)).is_integer():
            written = f"{Decimal(repr(float(value))):.{places}f}" if isinstance(value, float) else \
                f"{Decimal(value.numerator) / Decimal(value.denominator):.{places}f}"
    return value, written


def given_unit(parsed: Parsed | ParsedMatrix | ParsedChoice, target: Problem | Part) -> GivenUnit | None:
    """The unit of a number typed with a unit that :func:`graded_value` converted to the key's
    unit (bits, or GB for a GiB key); else None."""
    if not isinstance(parsed, Parsed) or not parsed.dimension:
        return None
    unit = _key_unit(getattr(target.key, "unit", "") or "")
    if unit is None:
        return None
    from question_bank.grading import GivenUnit

    return GivenUnit(unit=parsed.unit, dimension=parsed.dimension,
                     magnitude=parsed.magnitude if parsed.magnitude is not None else parsed.value,
                     key_dimension=unit[0])


def read_answer(target: Problem | Part, text: str, *, n_options: int | None = None) -> Answer:
    """Read ``text`` as the answer to ``target`` (a problem, or a part of one: ``n_options`` is
    then the problem's number of options) and convert it for the judge. Raises
    :class:`AnswerParseError` (one line) when it cannot be read."""
    if n_options is None:
        parsed = parse_for(target, text)
    else:
        parsed = parse_answer(text, target.type, n_options=n_options, shape=key_shape(target.key),
                              options_text=getattr(target, "options_text", None) or None)
    value, written = graded_value(parsed, target)
    return Answer(text=text.strip(), parsed=parsed, value=value, written=written, unit=given_unit(parsed, target))
