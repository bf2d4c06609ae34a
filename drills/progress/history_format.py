"""The history file format, read strictly: every field of every record checked as
``qkv history export`` writes it, one record at a time.

- :func:`read_history_bytes` reads at most :data:`MAX_IMPORT_BYTES` (a pipe or ``/dev/zero``
  is cut there, a larger file refused before it is read) and decodes UTF-8.
- :func:`json_records` walks a JSON export record by record (``json.JSONDecoder.raw_decode``
  on each element), so memory holds the text and one record, never the whole parsed file;
  ``format`` and ``version`` must come before the record lists, as export writes them.
- :func:`csv_records` does the same for a CSV export (one answer a row).
- :func:`clean_attempt`, :func:`clean_session`, :func:`clean_report` turn one record into a
  row ready to insert, or raise :class:`~drills.progress.schema.ProgressError` naming the record
  and the field. Nothing is coerced: ``"correct": 5`` or a score ``"abc"`` is refused, a time must
  carry its offset and lie in years :data:`FIRST_YEAR`..:data:`LAST_YEAR`.

CSV cells holding text that a spreadsheet would run as a formula (beginning with ``=``, ``+``,
``-``, ``@``, tab or carriage return) are written with a leading ``'`` (as OWASP's "CSV
injection" advice and the spreadsheet programs' own convention have it), and so is text
beginning with ``'`` itself; the reader removes exactly one leading ``'``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from drills.output import strip_controls
from drills.progress.rows import iso, seed_value
from drills.progress.schema import (
    ATTEMPT_COLUMNS,
    CARD_COLUMNS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    JSON_COLUMNS,
    MODES,
    REPORT_COLUMNS,
    SESSION_COLUMNS,
    ProgressError,
)

MAX_IMPORT_BYTES = 64 * 2**20  # 64 MiB: about 100,000 answers, a decade of daily drilling
FIRST_YEAR, LAST_YEAR = 1970, 2200
_MAX_TIME_MS = 2**53
_SECTIONS = ("sessions", "attempts", "cards", "reports")
_HEADER_KEYS = ("format", "version", "schema", "exported_at")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\x00", "'")
_INTEGER = re.compile(r"-?[0-9]+")

_TEXT = "text"
_NAME = "name"  # non-empty text
_TIME = "time"
_OPT_TIME = "time or null"
_MODE = "mode"
_SEED = "seed"
_JSON = "json"
_BIT = "0 or 1"
_NUMBER = "number"
_DURATION = "duration"
_RATING = "rating"

ATTEMPT_FIELDS: dict[str, str] = {
    "uid": _NAME, "time": _TIME, "session_id": _TEXT, "mode": _MODE, "problem_id": _NAME, "part": _TEXT,
    "family": _TEXT, "seed": _SEED, "topic": _TEXT, "type": _TEXT, "answer": _TEXT, "parsed": _JSON,
    "correct": _BIT, "score": _NUMBER, "marks": _NUMBER, "negative": _NUMBER, "time_ms": _DURATION,
    "misconception": _TEXT, "misconception_label": _TEXT, "rating": _RATING, "extra": _JSON,
}
SESSION_FIELDS: dict[str, str] = {
    "id": _NAME, "mode": _MODE, "started_at": _TIME, "ended_at": _OPT_TIME, "args": _JSON, "score": _NUMBER,
    "max_score": _NUMBER, "negative": _NUMBER, "summary": _JSON,
}
REPORT_FIELDS: dict[str, str] = {
    "uid": _NAME, "time": _TIME, "session_id": _TEXT, "problem_id": _NAME, "family": _TEXT, "seed": _SEED,
    "answer": _TEXT, "key": _TEXT, "note": _TEXT, "extra": _JSON,
}
assert tuple(ATTEMPT_FIELDS) == ATTEMPT_COLUMNS and tuple(SESSION_FIELDS) == SESSION_COLUMNS
assert tuple(REPORT_FIELDS) == REPORT_COLUMNS
_REQUIRED = {"uid", "time", "problem_id", "id", "started_at"}


def bad_import(message: str) -> ProgressError:
    return ProgressError(f"cannot import: {message}")


# -- reading the bytes ---------------------------------------------------------------------------

def read_history_bytes(stream: IO[bytes], name: str, *, limit: int = MAX_IMPORT_BYTES) -> str:
    """The text of a history file, read in 1 MiB chunks and refused past ``limit`` bytes."""
    try:
        size = os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        size = 0
    if size > limit:
        raise bad_import(f"{name} is {size:,} bytes, more than the {limit:,} a history file may be "
                         f"({limit // 2**20} MiB); split it, or import its CSV in parts")
    chunks, total = [], 0
    while chunk := stream.read(1 << 20):
        total += len(chunk)
        if total > limit:
            raise bad_import(f"{name} is longer than the {limit:,} bytes a history file may be "
                             f"({limit // 2**20} MiB); split it, or import its CSV in parts")
        chunks.append(chunk)
    data = b"".join(chunks)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise bad_import(f"{name}: byte {e.start} (line {line}) is not UTF-8; save the file as UTF-8") from None


def read_history_file(path: Path | str) -> str:
    """:func:`read_history_bytes` of a file (``-``: standard input)."""
    import sys

    if str(path) == "-":
        return read_history_bytes(sys.stdin.buffer, "standard input")
    try:
        with open(path, "rb") as f:
            return read_history_bytes(f, repr(str(path)))
    except FileNotFoundError:
        raise bad_import(f"no such file {str(path)!r}") from None
    except IsADirectoryError:
        raise bad_import(f"{str(path)!r} is a folder, not a history file") from None
    except OSError as e:
        raise bad_import(f"cannot read {str(path)!r}: {e.strerror or e}") from None


# -- one field -----------------------------------------------------------------------------------

def _text_ok(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _time(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("an ISO-8601 date-time with its offset, as text")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not an ISO date-time") from None
    if dt.tzinfo is None:
        raise ValueError(f"{value[:40]!r} has no UTC offset (export writes +00:00)")
    if not FIRST_YEAR <= dt.year <= LAST_YEAR:
        raise ValueError(f"{value[:40]!r} is outside the years {FIRST_YEAR}..{LAST_YEAR}")
    try:
        return iso(dt)
    except OverflowError:
        raise ValueError(f"{value[:40]!r} is outside the years {FIRST_YEAR}..{LAST_YEAR}") from None


def _field(kind: str, value: Any, from_csv: bool) -> Any:
    """The stored value of one field of kind ``kind``; ValueError says what was expected."""
    if from_csv:
        value = _from_cell(kind, value)
    if value is None:
        if kind == _NAME or kind == _TIME or kind == _MODE:
            raise ValueError("is missing")
        return None
    if kind in (_TEXT, _NAME):
        if not isinstance(value, str):
            raise ValueError("must be text")
        if kind == _NAME and not value:
            raise ValueError("is empty")
        if not _text_ok(value):
            raise ValueError("holds a character that is not valid Unicode")
        return strip_controls(value, keep="\t" if kind == _NAME else "\t\n\r")
    if kind in (_TIME, _OPT_TIME):
        return _time(value)
    if kind == _MODE:
        if value not in MODES:
            raise ValueError(f"must be one of {', '.join(MODES)}")
        return value
    if kind == _SEED:
        if isinstance(value, bool):
            raise ValueError("must be an integer")
        if isinstance(value, int):
            return seed_value(value)
        if isinstance(value, str) and _INTEGER.fullmatch(value):
            if len(value.lstrip("-")) > 4000:
                raise ValueError("must be an integer of at most 4,000 digits")
            return seed_value(int(value))
        raise ValueError("must be an integer")
    if kind == _JSON:
        if isinstance(value, str):
            if not _text_ok(value):
                raise ValueError("holds a character that is not valid Unicode")
            return value  # stored as it was exported (text that is not JSON stays text)
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        except ValueError:
            raise ValueError("holds NaN or infinity") from None
    if kind == _BIT:
        if isinstance(value, bool) or value not in (0, 1):
            raise ValueError("must be 0 or 1 (or empty when skipped)")
        return int(value)
    if kind == _NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError("must be a finite number")
        if isinstance(value, int) and abs(value) > 2**53:
            raise ValueError("must be a number below 2^53")
        return float(value) if isinstance(value, float) else value
    if kind == _DURATION:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_TIME_MS:
            raise ValueError("must be a whole number of milliseconds, 0 or more")
        return value
    if kind == _RATING:
        if isinstance(value, bool) or value not in (1, 2, 3, 4):
            raise ValueError("must be 1, 2, 3 or 4")
        return int(value)
    raise AssertionError(kind)  # pragma: no cover


def _from_cell(kind: str, cell: Any) -> Any:
    """A CSV cell (text) as the value the JSON export would hold."""
    if cell is None or cell == "":
        return None
    if not isinstance(cell, str):
        raise ValueError("has extra cells beyond the header")
    if kind in (_TEXT, _NAME, _TIME, _OPT_TIME, _MODE):
        return cell[1:] if cell.startswith("'") else cell
    if kind == _SEED:  # a seed beyond 64 bits is exported as text, so a negative one starts with '
        return cell[1:] if cell.startswith("'") and _INTEGER.fullmatch(cell[1:]) else cell
    if kind == _JSON:
        text = cell[1:] if cell.startswith("'") else cell
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError("is not JSON") from None
    if kind in (_BIT, _DURATION, _RATING):
        if not _INTEGER.fullmatch(cell):
            raise ValueError("must be a whole number")
        return int(cell)
    if kind == _NUMBER:
        try:
            return float(cell)
        except ValueError:
            raise ValueError("must be a number") from None
    raise AssertionError(kind)  # pragma: no cover


def _clean(raw: Any, fields: dict[str, str], where: str, *, from_csv: bool = False) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise bad_import(f"{where}: must be an object with the fields export writes")
    unknown = [k for k in raw if k not in fields]
    if unknown:
        name = unknown[0] if isinstance(unknown[0], str) else repr(unknown[0])
        raise bad_import(f"{where}: unknown field {name[:40]!r}")
    row = {}
    for key, kind in fields.items():
        try:
            row[key] = _field(kind, raw.get(key), from_csv)
        except ValueError as e:
            if key in _REQUIRED and raw.get(key) in (None, ""):
                raise bad_import(f"{where}: {key} is missing") from None
            raise bad_import(f"{where}: {key} {e}") from None
    return row


def clean_attempt(raw: Any, where: str, *, from_csv: bool = False) -> dict[str, Any]:
    return _clean(raw, ATTEMPT_FIELDS, where, from_csv=from_csv)


def clean_session(raw: Any, where: str) -> dict[str, Any]:
    return _clean(raw, SESSION_FIELDS, where)


def clean_report(raw: Any, where: str) -> dict[str, Any]:
    return _clean(raw, REPORT_FIELDS, where)


def check_card(raw: Any, where: str) -> None:
    """Cards are rebuilt from the answers, never imported: only their shape is checked."""
    if not isinstance(raw, dict) or any(k not in CARD_COLUMNS for k in raw):
        raise bad_import(f"{where}: must be an object with the fields export writes")


# -- walking a file ------------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _decode(text: str, pos: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as e:
        raise bad_import(f"not a JSON export ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise bad_import("not a JSON export (nested too deeply)") from None
    except ValueError as e:  # an integer of more than 4,300 digits (Python's int_max_str_digits)
        raise bad_import(f"not a JSON export ({str(e).split(';')[0][:100]})") from None


def _expect(text: str, pos: int, char: str, what: str) -> int:
    pos = _WS.match(text, pos).end()
    if text[pos:pos + 1] != char:
        line = text.count("\n", 0, pos) + 1
        raise bad_import(f"not a JSON export (expected {what} at line {line})")
    return _WS.match(text, pos + 1).end()


def json_records(text: str) -> Iterator[tuple[str, int, Any]]:
    """``(section, index, record)`` for each element of the export's record lists, in file order,
    after checking ``format`` and ``version``; the rest of the header is checked as it comes."""
    pos = _WS.match(text, 0).end()
    if text[pos:pos + 1] != "{":
        raise bad_import(f"not a qkv history export (expected a JSON object with \"format\": \"{EXPORT_FORMAT}\")")
    pos = _WS.match(text, pos + 1).end()
    header: dict[str, Any] = {}
    first = True
    while True:
        if text[pos:pos + 1] == "}":
            pos += 1
            break
        if not first:
            pos = _expect(text, pos, ",", "',' or '}'")
        first = False
        key, pos = _decode(text, pos)
        if not isinstance(key, str):
            raise bad_import("not a JSON export (a key is not text)")
        pos = _expect(text, pos, ":", "':'")
        if key in _SECTIONS and text[pos:pos + 1] == "[":
            _check_header(header)
            pos = _WS.match(text, pos + 1).end()
            index = 0
            while text[pos:pos + 1] != "]":
                if index:
                    pos = _expect(text, pos, ",", f"',' or ']' in {key}")
                record, pos = _decode(text, pos)
                yield key, index, record
                index += 1
                pos = _WS.match(text, pos).end()
            pos = _WS.match(text, pos + 1).end()
            continue
        value, pos = _decode(text, pos)
        pos = _WS.match(text, pos).end()
        if key in _SECTIONS:
            if value is not None:
                raise bad_import(f"{key} must be a list")
            continue
        if key not in _HEADER_KEYS:
            raise bad_import(f"unknown field {key[:40]!r} in the export")
        header[key] = value
        if key == "format":
            _check_header(header)
    if _WS.match(text, pos).end() != len(text):
        raise bad_import("not a JSON export (text after the closing '}')")
    _check_header(header)
    if "exported_at" in header and header["exported_at"] is not None:
        try:
            _time(header["exported_at"])
        except ValueError as e:
            raise bad_import(f"exported_at {e}") from None


def _check_header(header: dict[str, Any]) -> None:
    if header.get("format") != EXPORT_FORMAT:
        raise bad_import(f"not a qkv history export (expected \"format\": \"{EXPORT_FORMAT}\" first, "
                         "as `qkv history export` writes it)")
    if "version" not in header:
        return  # checked when it comes, and before any record
    version = header["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise bad_import(f"version {version!r} must be a whole number from 1")
    if version > EXPORT_VERSION:
        raise bad_import(f"export version {version} is newer than this qkv reads ({EXPORT_VERSION})")


def csv_records(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of a CSV export; the header must name only the export's columns."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        fields = reader.fieldnames
        if not fields or not {"uid", "time", "problem_id"} <= set(fields):
            raise bad_import("not a qkv history CSV (its header needs uid, time and problem_id)")
        unknown = [f for f in fields if f not in ATTEMPT_FIELDS]
        if unknown:
            raise bad_import(f"CSV header: unknown column {unknown[0][:40]!r}")
        if len(set(fields)) != len(fields):
            raise bad_import("CSV header: a column appears twice")
        for row in reader:
            if None in row:
                raise bad_import(f"line {reader.line_num}: more cells than the header has columns")
            if "mode" not in fields:
                row["mode"] = "quiz"  # a CSV without the column: answers from quizzes
            yield reader.line_num, row
    except csv.Error as e:
        raise bad_import(f"unreadable CSV: {e}") from None


def csv_cell(column: str, value: Any) -> str:
    """One cell of the CSV export: numbers as they are, text made safe for spreadsheets."""
    if value is None:
        return ""
    if column in JSON_COLUMNS:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif isinstance(value, float):
        return repr(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    else:
        text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text
