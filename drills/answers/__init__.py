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

from typing import Any

from drills.answers.choices import ParsedChoice, parse_choice
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

