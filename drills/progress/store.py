"""The old path of the progress store, kept only for imports not yet moved to :mod:`drills.progress`.

Import from ``drills.progress`` (``ProgressStore``, ``ProgressError``, ``parse_time``, ...); the
store itself is split by what it holds: :mod:`~drills.progress.schema`,
:mod:`~drills.progress.database`, :mod:`~drills.progress.recording`,
:mod:`~drills.progress.statistics`, :mod:`~drills.progress.history`.
"""

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

__all__ = ["DB_NAME", "EXPORT_FORMAT", "EXPORT_VERSION", "MIGRATIONS", "MODES", "REPORTS_NAME", "SCHEMA_VERSION",
           "DueItem", "ProgressError", "ProgressStore", "Recorded", "iso", "migrate", "parse_time"]
