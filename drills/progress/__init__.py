"""The student's progress: where it is kept, how it is stored, read, moved and scheduled.

- :mod:`~drills.progress.paths`: the data directory (``--data-dir``, ``$QKV_HOME``, platform default).
- :mod:`~drills.progress.schema`: file names, tables and their migrations, column lists.
- :mod:`~drills.progress.database`: connecting, transactions, integrity checks, damaged files, a
  write-ahead log that is not the file's, dropped tables, read-only opening.
- :mod:`~drills.progress.rows`: how times, seeds and JSON are written into rows; ``Recorded``, ``DueItem``.
- :mod:`~drills.progress.recording`: :class:`ProgressStore`, opening and every write.
- :mod:`~drills.progress.statistics`: reads and ``qkv stats``' numbers.
- :mod:`~drills.progress.history`: ``qkv history export|import``.
- :mod:`~drills.progress.history_format`: the history file read strictly, record by record, size-limited.
- :mod:`~drills.progress.scheduling`: FSRS review cards.

The names below are imported on first use (``from drills.progress import ProgressStore``), so
that importing :mod:`drills.progress.paths` for a command's options loads no SQLite.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "ProgressStore": "recording",
    "Recorded": "rows",
    "DueItem": "rows",
    "iso": "rows",
    "parse_time": "rows",
    "ProgressError": "schema",
    "DB_NAME": "schema",
    "REPORTS_NAME": "schema",
    "MIGRATIONS": "schema",
    "SCHEMA_VERSION": "schema",
    "MODES": "schema",
    "EXPORT_FORMAT": "schema",
    "EXPORT_VERSION": "schema",
    "migrate": "database",
}
__all__ = ["DB_NAME", "EXPORT_FORMAT", "EXPORT_VERSION", "MIGRATIONS", "MODES", "REPORTS_NAME", "SCHEMA_VERSION",
           "DueItem", "ProgressError", "ProgressStore", "Recorded", "iso", "migrate", "parse_time"]

if TYPE_CHECKING:
    from drills.progress.database import migrate
    from drills.progress.recording import ProgressStore
    from drills.progress.rows import DueItem, Recorded, iso, parse_time
    from drills.progress.schema import (
        DB_NAME,
        EXPORT_FORMAT,
        EXPORT_VERSION,
        MIGRATIONS,
        MODES,
        REPORTS_NAME,
        SCHEMA_VERSION,
        ProgressError,
    )


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'drills.progress' has no attribute {name!r}")
    value = getattr(import_module(f"drills.progress.{module}"), name)
    globals()[name] = value
    return value
