"""Parse matrices, vectors and numbers typed on the command line, without ever evaluating them.

Accepted forms (entries are integers, decimals such as ``0.5`` or ``1e-3``, fractions such
as ``1/2`` or ``-3/4``, or any other exact rational the quiz reads: ``2^-3``, ``1,048,576``):

- a matrix as rows separated by ``;`` (or new lines), entries by spaces and/or commas:
  ``"1 0; 0 1; 1 1"`` or ``"1, 0; 0, 1"``;
- the same as JSON-style nested brackets: ``"[[1,0],[0,1],[1,1]]"`` (fractions allowed inside);
- a vector as one row: ``"1 2 3"``, ``"1, 2, 3"`` or ``"[1,2,3]"``.

Every entry is read by the quiz's number grammar (:func:`drills.answers.parse_number`) into a
:class:`fractions.Fraction`, so the exact decimal the user typed is kept (``0.1`` is exactly 1/10, not the nearest double) for the exact
path, and a float copy is available for the float path. Nothing here imports numpy or sympy.
Bad input raises :class:`drills.output.InputError` naming the option: one line, exit status 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from drills.output import InputError

_HINT = "use integers, decimals like 0.5, fractions like 1/2 or powers like 2^-3"


def parse_number(text: str, param: str) -> Fraction:
    """One number (``3``, ``-0.5``, ``1e-5``, ``1/2``, ``2^-3``) as an exact Fraction.

    Read by the quiz's number grammar (:func:`drills.answers.parse_number`, so there is one
    grammar), keeping only plain rational values: no unit, and nothing irrational (``sqrt``,
    ``exp``, ``pi``), so that ``--exact`` stays exact."""
    from drills.answers import AnswerParseError
    from drills.answers import parse_number as read_number

    token = text.strip()
    shown = token if len(token) <= 30 else token[:27] + "..."
    try:
        parsed = read_number(token)
    except AnswerParseError as e:
        why = str(e).replace("that answer", "that number").replace("the answer", "the number")
        if "I know" in why or "expected" in why:
            why = f"not a number ({_HINT})"
        raise InputError(f"{shown!r}: {why}", param) from None
    if parsed.unit or parsed.dimension:
        raise InputError(f"{shown!r}: a plain number is needed here, without a unit ({_HINT})", param)
    if parsed.exact is None:
        raise InputError(f"{shown!r} is not an exact rational number (sqrt, exp, ln and pi are not taken "
                         f"here; {_HINT})", param)
    return parsed.exact


@dataclass(frozen=True)
class ArrayArg:
    """A parsed 1-D or 2-D array: exact entries, the text typed, and the option it came from."""

    rows: tuple[tuple[Fraction, ...], ...]  # a vector is stored as one row, with ndim == 1
    ndim: int
    param: str

    @property
    def shape(self) -> tuple[int, ...]:
        if self.ndim == 1:
            return (len(self.rows[0]),)
        return (len(self.rows), len(self.rows[0]))

    def exact(self) -> list:
        """Nested lists of Fractions (1-D: a flat list)."""
        return list(self.rows[0]) if self.ndim == 1 else [list(r) for r in self.rows]

    def floats(self) -> list:
        """Nested lists of floats (the nearest double to each exact entry)."""
        return [float(x) for x in self.rows[0]] if self.ndim == 1 else [[float(x) for x in r] for r in self.rows]

    def to_numpy(self):
        import numpy as np

        return np.array(self.floats(), dtype=np.float64)

    def as_matrix(self) -> ArrayArg:
        """The same values as a 2-D array (a vector becomes one row)."""
        return ArrayArg(self.rows, 2, self.param)


def _split_entries(row: str, param: str, row_no: int) -> list[str]:
    row = row.strip()
    if not row:
        return []
    parts = re.split(r"\s*,\s*|\s+", row)
    if any(p == "" for p in parts):
        raise InputError(f"row {row_no}: empty entry (stray comma?) in {row!r}", param)
    return parts


def _parse_plain(text: str, param: str) -> tuple[list[list[str]], int]:
    raw_rows = re.split(r"[;\n]", text)
    # tolerate one trailing separator ("1 2; 3 4;"), nothing else empty
    if len(raw_rows) > 1 and not raw_rows[-1].strip():
        raw_rows = raw_rows[:-1]
    rows = []
    for i, raw in enumerate(raw_rows, 1):
        entries = _split_entries(raw, param, i)
        if not entries:
            raise InputError(f"row {i} is empty", param)
        rows.append(entries)
    ndim = 2 if len(raw_rows) > 1 or ";" in text or "\n" in text.strip() else 1
    return rows, ndim


_BRACKET_TOKEN = re.compile(r"\s*(\[|\]|,|[^\[\],\s]+)")


def _parse_brackets(text: str, param: str) -> tuple[list[list[str]], int]:
    tokens = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _BRACKET_TOKEN.match(text, pos)
        if not m:  # only trailing whitespace is left
            break
        tokens.append(m.group(1))
        pos = m.end()

    def bad(why: str) -> InputError:
        return InputError(f"cannot read {text!r}: {why} (write [[1,0],[0,1]] or \"1 0; 0 1\")", param)

    def parse_list(i: int, depth: int) -> tuple[list, int]:
        if depth > 2:
            raise bad("more than two levels of brackets")
        assert tokens[i] == "["
        i += 1
        items: list = []
        expect_item = True
        while i < len(tokens):
            tok = tokens[i]
            if tok == "]":
                if expect_item and items:
                    raise bad("trailing comma")
                return items, i + 1
            if not expect_item:
                if tok != ",":
                    raise bad(f"missing comma before {tok!r}")
                expect_item = True
                i += 1
                continue
            if tok == "[":
                sub, i = parse_list(i, depth + 1)
                items.append(sub)
            elif tok == ",":
                raise bad("empty entry")
            else:
                items.append(tok)
                i += 1
            expect_item = False
        raise bad("unclosed bracket")

    if not tokens or tokens[0] != "[":
        raise bad("expected '['")
    value, end = parse_list(0, 1)
    if end != len(tokens):
        raise bad(f"unexpected {tokens[end]!r} after the closing bracket")
    if not value:
        raise InputError("empty matrix", param)
    kinds = {isinstance(v, list) for v in value}
    if kinds == {False}:
        return [value], 1
    if kinds == {True}:
        for i, row in enumerate(value, 1):
            if not row:
                raise InputError(f"row {i} is empty", param)
            if any(isinstance(v, list) for v in row):
                raise bad("more than two levels of brackets")
        return value, 2
    raise bad("mixes numbers and rows at the same level")


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def parse_array(text: str, param: str) -> ArrayArg:
    """A vector or a matrix, in either form (see the module docstring)."""
    if text is None or not text.strip():
        raise InputError("empty value: give numbers, e.g. \"1 0; 0 1\" or \"[[1,0],[0,1]]\"", param)
    if text.lstrip().startswith("["):
        str_rows, ndim = _parse_brackets(text, param)
    else:
        str_rows, ndim = _parse_plain(text, param)
    widths = [len(r) for r in str_rows]
    for i, w in enumerate(widths, 1):
        if w != widths[0]:
            raise InputError(
                f"ragged rows: row {i} has {_entries(w)} but row 1 has {_entries(widths[0])}"
                " (every row needs the same length)",
                param,
            )
    rows = tuple(tuple(parse_number(tok, param) for tok in row) for row in str_rows)
    return ArrayArg(rows, ndim, param)


def parse_matrix(text: str, param: str) -> ArrayArg:
    """A matrix; a single row ("1 0") is read as a 1×n matrix."""
    return parse_array(text, param).as_matrix()


def parse_vector(text: str, param: str) -> ArrayArg:
    """A vector; a matrix with one row is accepted as that row."""
    arr = parse_array(text, param)
    if arr.ndim == 2 and len(arr.rows) != 1:
        raise InputError(f"expected a vector, got a {arr.shape[0]}×{arr.shape[1]} matrix", param)
    return ArrayArg(arr.rows, 1, param)
