"""The one place where qkv prints: results to stdout, diagnostics to stderr.

Commands build plain data (dicts, lists, strings) and hand it here. Errors that the user can
fix are raised as :class:`InputError` (or ``solver.errors.SolverInputError``) and end up as
one line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import json
import math
from typing import Any

import click


class InputError(click.ClickException):
    """Bad input from the user: printed as one line, exit status 2."""

    exit_code = 2

    def __init__(self, message: str, param: str | None = None):
        super().__init__(f"{param}: {message}" if param else message)

    def show(self, file=None) -> None:  # one line, no usage block
        click.echo(f"qkv: error: {strip_controls(self.format_message(), keep='')}", err=True)


def jsonable(obj: Any) -> Any:
    """Convert numpy/sympy/fractions to JSON types; floats keep full double precision."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        if math.isnan(obj) or math.isinf(obj):
            return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
        return obj
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):  # numpy arrays and scalars, torch tensors
        return jsonable(tolist())
    if type(obj).__module__.startswith("sympy"):
        if getattr(obj, "is_Matrix", False):
            return [[jsonable(x) for x in row] for row in obj.tolist()]
        if getattr(obj, "is_Integer", False):
            return int(obj)
        return float(obj)
    if hasattr(obj, "numerator") and hasattr(obj, "denominator"):  # Fraction
        return float(obj)
    if hasattr(obj, "to_json"):
        return jsonable(obj.to_json())
    return str(obj)


def valid_utf8(text: str) -> str:
    """``text`` as valid UTF-8: bytes a terminal passed through undecoded (lone surrogates, as
    Python's ``surrogateescape`` keeps them) become U+FFFD, so every line printed is UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)


def emit_json(obj: Any) -> None:
    """Print one JSON object on one line of stdout (valid UTF-8, whatever the input held)."""
    click.echo(valid_utf8(json.dumps(jsonable(obj), ensure_ascii=False)))


def emit(text: str = "") -> None:
    click.echo(text)


def emit_labelled(label: str, text: str, indent: int) -> None:
    """``label`` then ``text`` wrapped between words to the terminal's width (at most 100
    columns), continuation lines under the text rather than at column 0."""
    import shutil
    import textwrap

    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 100) - 1)
    prefix = label.ljust(indent)
    lines = textwrap.wrap(text, width=width, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                          break_long_words=False, break_on_hyphens=False)
    click.echo("\n".join(lines) if lines else prefix.rstrip())


def warn(text: str) -> None:
    """One line on stderr; control characters from a file's text (an id with an escape sequence)
    dropped, so that nothing a file brings in can drive the terminal."""
    click.echo(f"qkv: {strip_controls(text, keep='')}", err=True)


def strip_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` without control characters (Unicode category Cc: C0, DEL, C1) other than those in
    ``keep``: an ESC or CSI from an imported history cannot set the terminal's title or clear it."""
    import unicodedata

    if text.isprintable():
        return text
    return "".join(ch for ch in text if ch in keep or unicodedata.category(ch) != "Cc")
