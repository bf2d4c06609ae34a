"""Matrices and vectors: a whole matrix on one line (``0.6 0.4; 0.4 0.6``, ``[[0.6,0.4],[0.4,0.6]]``)
or row by row at a prompt (:class:`MatrixReader`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from drills.answers.errors import AnswerParseError, shown
from drills.answers.numbers import MAX_MATRIX_CHARS, MAX_MATRIX_ENTRIES, fraction_text, read_entry


@dataclass(frozen=True)
class ParsedMatrix:
    """A matrix (or a vector as one row): ``rows`` as floats, ``exact`` as Fractions or None."""

    text: str
    rows: tuple[tuple[float, ...], ...]
    exact: tuple[tuple[Fraction | None, ...], ...]
    #: per entry, the decimals typed (``0.707`` -> 3, ``0`` -> 0); None for an expression or ∞
    decimals: tuple[tuple[int | None, ...], ...] = ()

    kind = "matrix"

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.rows), len(self.rows[0]) if self.rows else 0)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "matrix", "text": self.text, "rows": [list(r) for r in self.rows],
                "exact": [[None if x is None else fraction_text(x) for x in r] for r in self.exact]}




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


def _build(text: str, cells: list[list[str]], shape: tuple[int, int] | None, allow_inf: bool = False) -> ParsedMatrix:
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
    values, exacts, decimals = [], [], []
    for i, r in enumerate(cells, start=1):
        vrow, erow, drow = [], [], []
        for j, cell in enumerate(r, start=1):
            try:
                p = read_entry(cell, allow_inf)
            except AnswerParseError as err:
                raise AnswerParseError(f"row {i}, entry {j} ({shown(cell, 16)}): {err}") from None
            vrow.append(p.value)
            erow.append(p.exact)
            drow.append(p.decimals)
        values.append(tuple(vrow))
        exacts.append(tuple(erow))
        decimals.append(tuple(drow))
    return ParsedMatrix(text=text.strip(), rows=tuple(values), exact=tuple(exacts), decimals=tuple(decimals))


def _matrix_cells(text: str) -> list[list[str]]:
    if not isinstance(text, str) or not text.strip():
        raise AnswerParseError("expected a matrix: rows separated by ';', e.g. 0.6 0.4; 0.4 0.6")
    if len(text) > MAX_MATRIX_CHARS:
        raise AnswerParseError(f"that answer is too long (at most {MAX_MATRIX_CHARS} characters)")
    return _json_rows(text) if text.lstrip().startswith("[") else _plain_rows(text)


def parse_matrix(text: str, shape: tuple[int, int] | None = None, *, allow_inf: bool = False) -> ParsedMatrix:
    """A whole matrix on one line (or several): ``0.6 0.4; 0.4 0.6`` or ``[[0.6,0.4],[0.4,0.6]]``.
    ``allow_inf``: entries may be ``-inf``/``−∞`` (a masked score)."""
    return _build(text, _matrix_cells(text), tuple(shape) if shape is not None else None, allow_inf)


def parse_vector(text: str, length: int | None = None, *, allow_inf: bool = False) -> ParsedMatrix:
    """A vector as one row (``1 2 3``, ``1, 2, 3``, ``[1,2,3]``) or one column (``1; 2; 3``),
    returned as a 1×n :class:`ParsedMatrix`."""
    cells = [r for r in _matrix_cells(text) if r]
    if len(cells) > 1 and all(len(r) == 1 for r in cells):
        cells = [[r[0] for r in cells]]
    if len(cells) != 1:
        raise AnswerParseError("expected a vector: entries separated by spaces or commas, e.g. 0.2 0.5 0.3")
    if length is not None and len(cells[0]) != length:
        raise AnswerParseError(f"expected {length} entries, got {len(cells[0])}")
    return _build(text, cells, None, allow_inf)


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
        if len(stripped) > MAX_MATRIX_CHARS:  # before any parsing: a pasted megabyte is refused at once
            raise AnswerParseError(f"that row is too long (at most {MAX_MATRIX_CHARS} characters)")
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
                read_entry(cell)
            except AnswerParseError as err:
                raise AnswerParseError(f"entry {j} ({shown(cell, 16)}): {err}") from None
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


