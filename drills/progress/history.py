"""Moving a history: ``qkv history export`` (JSON with everything, or CSV for spreadsheets)
and ``qkv history import`` (a merge: rows already present are skipped).

:class:`HistoryTransfer` is that half of :class:`drills.progress.recording.ProgressStore`.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any

from drills.progress.database import transaction
from drills.progress.history_format import (
    MAX_IMPORT_BYTES,
    bad_import,
    check_card,
    clean_attempt,
    clean_report,
    clean_session,
    csv_cell,
    csv_records,
    json_records,
)
from drills.progress.rows import iso, row_dict
from drills.progress.scheduling import item_key, utc
from drills.progress.schema import (
    ATTEMPT_COLUMNS,
    CARD_COLUMNS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    SESSION_COLUMNS,
    ProgressError,
)


class HistoryTransfer:
    """Export and import of the whole history (needs the store's reads and card rebuilding)."""

    conn: sqlite3.Connection

    if TYPE_CHECKING:  # provided by ProgressStore
        @property
        def schema_version(self) -> int: ...

        def reports(self) -> list[dict[str, Any]]: ...

        def _insert_report_rows(self, c: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

        def _append_reports_file(self, rows: list[dict[str, Any]]) -> None: ...

        def _replay_cards(self, c: sqlite3.Connection, keys: set[tuple[str, str]] | None) -> int: ...

    def export(self, format: str = "json", *, now: datetime | None = None) -> str:
        """The whole history as text: ``json`` (sessions, attempts, cards, reports: everything
        needed to move to a new machine) or ``csv`` (one row per answer, for spreadsheets)."""
        attempts = [row_dict(r) for r in self.conn.execute(
            f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts ORDER BY time, id")]
        if format == "csv":
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180; a CR inside a cell is quoted
            writer.writerow(ATTEMPT_COLUMNS)
            for a in attempts:
                writer.writerow([csv_cell(k, a[k]) for k in ATTEMPT_COLUMNS])
            return out.getvalue()
        if format != "json":
            raise ProgressError(f"unknown export format {format!r}; choose csv or json", "--format")
        doc = {
            "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "schema": self.schema_version,
            "exported_at": iso(now or utc()),
            "sessions": [row_dict(r) for r in self.conn.execute(
                f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions ORDER BY started_at, id")],
            "attempts": attempts,
            "cards": [dict(r) for r in self.conn.execute(
                f"SELECT {', '.join(CARD_COLUMNS)} FROM cards ORDER BY kind, ref")],
            "reports": self.reports(),
        }
        return _dump_export(doc)

    def import_(self, text: str, format: str | None = None) -> dict[str, int]:
        """Merge an export (``json`` or ``csv``; guessed from the text when None) into this store.

        All or nothing: one transaction for the whole file, records read and checked one at a
        time (:mod:`drills.progress.history_format`); the first record that is not exactly as
        export writes it refuses the file in one line naming the record and field, and nothing is
        stored. Rows already present (same uid / session id) are skipped, so importing twice
        changes nothing. Review cards of the items touched are rebuilt by replaying their answers.
        Returns counts: attempts, skipped, sessions, reports, cards."""
        if len(text) > MAX_IMPORT_BYTES:
            raise bad_import(f"the text is longer than the {MAX_IMPORT_BYTES:,} bytes a history file may be")
        fmt = format or ("json" if text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[") else "csv")
        if fmt not in ("json", "csv"):
            raise ProgressError(f"unknown import format {fmt!r}; choose csv or json", "--format")
        attempt_sql = (f"INSERT OR IGNORE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})")
        session_sql = (f"INSERT OR IGNORE INTO sessions ({', '.join(SESSION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(SESSION_COLUMNS))})")

        def write(c: sqlite3.Connection) -> tuple[dict[str, int], list[dict[str, Any]]]:
            counts = {"attempts": 0, "skipped": 0, "sessions": 0, "reports": 0, "cards": 0}
            touched: set[tuple[str, str]] = set()
            outlines: dict[str, list[str]] = {}  # a session named by answers only: mode, first, last
            new_reports: list[dict[str, Any]] = []

            def answer(row: dict[str, Any]) -> None:
                if c.execute(attempt_sql, [row[k] for k in ATTEMPT_COLUMNS]).rowcount:
                    counts["attempts"] += 1
                    if row["rating"] is not None:
                        touched.add(item_key(row["family"], row["problem_id"]))
                else:
                    counts["skipped"] += 1
                sid = row["session_id"]
                if sid:
                    o = outlines.setdefault(sid, [row["mode"], row["time"], row["time"]])
                    o[1], o[2] = min(o[1], row["time"]), max(o[2], row["time"])

            if fmt == "csv":
                for line, raw in csv_records(text):
                    answer(clean_attempt(raw, f"line {line}", from_csv=True))
            else:
                for section, i, raw in json_records(text):
                    where = f"{section[:-1]} {i + 1}"
                    if section == "attempts":
                        answer(clean_attempt(raw, where))
                    elif section == "sessions":
                        row = clean_session(raw, where)
                        counts["sessions"] += c.execute(session_sql, [row[k] for k in SESSION_COLUMNS]).rowcount
                    elif section == "reports":
                        row = clean_report(raw, where)
                        new_reports += self._insert_report_rows(c, [row])
                    else:
                        check_card(raw, where)
            for sid, (mode, first, last) in outlines.items():  # sessions a CSV names: their bare outline
                counts["sessions"] += c.execute(
                    "INSERT OR IGNORE INTO sessions (id, mode, started_at, ended_at) VALUES (?, ?, ?, ?)",
                    (sid, mode, first, last)).rowcount
            counts["reports"] = len(new_reports)
            counts["cards"] = self._replay_cards(c, touched) if touched else 0
            return counts, new_reports

        counts, new_reports = transaction(self.conn, write)
        self._append_reports_file(new_reports)
        return counts


def _dump_export(doc: dict[str, Any]) -> str:
    """JSON with one record a line (readable, diff-friendly, and fast: the C encoder per record)."""
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        name = json.dumps(key)
        if isinstance(value, list) and value:
            lines.append(f"{name}: [")
            last = len(value) - 1
            lines += [json.dumps(v, ensure_ascii=False) + ("," if j < last else "") for j, v in enumerate(value)]
            lines.append(f"]{comma}")
        else:
            lines.append(f"{name}: {json.dumps(value, ensure_ascii=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
