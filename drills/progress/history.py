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
from drills.progress.rows import iso, parse_time, row_dict, seed_value
from drills.progress.scheduling import item_key, utc
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


class HistoryTransfer:
    """Export and import of the whole history (needs the store's reads and card rebuilding)."""

    conn: sqlite3.Connection

    if TYPE_CHECKING:  # provided by ProgressStore
        @property
        def schema_version(self) -> int: ...

        def reports(self) -> list[dict[str, Any]]: ...

        def _insert_reports(self, rows: list[dict[str, Any]]) -> int: ...

        def _rebuild_cards(self, keys: set[tuple[str, str]] | None) -> int: ...

    def export(self, format: str = "json", *, now: datetime | None = None) -> str:
        """The whole history as text: ``json`` (sessions, attempts, cards, reports: everything
        needed to move to a new machine) or ``csv`` (one row per answer, for spreadsheets)."""
        attempts = [row_dict(r) for r in self.conn.execute(
            f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts ORDER BY time, id")]
        if format == "csv":
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(ATTEMPT_COLUMNS)
            for a in attempts:
                writer.writerow([_csv_cell(k, a[k]) for k in ATTEMPT_COLUMNS])
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

        Rows already present (same uid / session id) are skipped, so importing twice changes
        nothing. Review cards of the items touched are rebuilt by replaying their answers.
        Returns counts: attempts, skipped, sessions, reports, cards."""
        fmt = format or ("json" if text.lstrip()[:1] in ("{", "[") else "csv")
        if fmt == "json":
            sessions, attempts, reports = _read_json_export(text)
        elif fmt == "csv":
            sessions, attempts, reports = [], _read_csv_export(text), []
        else:
            raise ProgressError(f"unknown import format {fmt!r}; choose csv or json", "--format")
        known = {s["id"] for s in sessions}
        for a in attempts:  # a CSV carries no sessions: rebuild their bare outline from the answers
            sid = a.get("session_id")
            if sid and sid not in known:
                times = [b["time"] for b in attempts if b.get("session_id") == sid]
                sessions.append({"id": sid, "mode": a.get("mode") or "quiz", "started_at": min(times),
                                 "ended_at": max(times)})
                known.add(sid)
        attempt_sql = (f"INSERT OR IGNORE INTO attempts ({', '.join(ATTEMPT_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(ATTEMPT_COLUMNS))})")
        session_sql = (f"INSERT OR IGNORE INTO sessions ({', '.join(SESSION_COLUMNS)}) "
                       f"VALUES ({', '.join('?' * len(SESSION_COLUMNS))})")

        def write(c: sqlite3.Connection) -> tuple[int, int, set[tuple[str, str]]]:
            n_sessions = sum(c.execute(session_sql, [s.get(k) for k in SESSION_COLUMNS]).rowcount
                             for s in sessions)
            touched: set[tuple[str, str]] = set()
            n_attempts = 0
            for a in attempts:
                if c.execute(attempt_sql, [a.get(k) for k in ATTEMPT_COLUMNS]).rowcount:
                    n_attempts += 1
                    if a.get("rating") is not None:
                        touched.add(item_key(a.get("family"), a["problem_id"]))
            return n_sessions, n_attempts, touched

        n_sessions, n_attempts, touched = transaction(self.conn, write)
        n_reports = self._insert_reports(reports) if reports else 0
        n_cards = self._rebuild_cards(touched) if touched else 0
        return {"attempts": n_attempts, "skipped": len(attempts) - n_attempts, "sessions": n_sessions,
                "reports": n_reports, "cards": n_cards}


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


def _csv_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column in JSON_COLUMNS:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, float):
        return repr(value)
    return str(value)


_INT_COLUMNS = {"correct", "time_ms", "rating"}
_FLOAT_COLUMNS = {"score", "marks", "negative"}


def _bad_import(message: str) -> ProgressError:
    return ProgressError(f"cannot import: {message}")


def _clean_attempt(raw: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _bad_import(f"{where}: an answer must be an object")
    a: dict[str, Any] = {}
    for k in ATTEMPT_COLUMNS:
        v = raw.get(k)
        if v == "":
            v = None
        a[k] = v
    for k in ("uid", "time", "problem_id"):
        if not a.get(k) or not isinstance(a[k], str):
            raise _bad_import(f"{where}: {k} is missing")
    try:
        a["time"] = iso(parse_time(a["time"]))
    except ValueError:
        raise _bad_import(f"{where}: time {a['time']!r} is not an ISO date-time") from None
    if a["mode"] not in MODES:
        a["mode"] = "quiz"
    try:
        for k in _INT_COLUMNS:
            if a[k] is not None:
                a[k] = int(a[k])
        for k in _FLOAT_COLUMNS:
            if a[k] is not None:
                a[k] = float(a[k])
        if isinstance(a["seed"], str) and a["seed"].lstrip("-").isdigit():
            a["seed"] = seed_value(int(a["seed"]))
    except (TypeError, ValueError):
        raise _bad_import(f"{where}: a number column holds something else") from None
    if a["rating"] is not None and a["rating"] not in (1, 2, 3, 4):
        raise _bad_import(f"{where}: rating must be 1..4")
    for k in JSON_COLUMNS & set(ATTEMPT_COLUMNS):
        if a[k] is not None and not isinstance(a[k], str):
            a[k] = json.dumps(a[k], ensure_ascii=False, sort_keys=True)
    return a


def _read_json_export(text: str) -> tuple[list[dict], list[dict], list[dict]]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise _bad_import(f"not a JSON export ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise _bad_import(f"not a qkv history export (expected \"format\": \"{EXPORT_FORMAT}\")")
    if not isinstance(doc.get("version"), int) or doc["version"] > EXPORT_VERSION:
        raise _bad_import(f"export version {doc.get('version')!r} is newer than this qkv reads ({EXPORT_VERSION})")
    attempts = [_clean_attempt(a, f"attempt {i + 1}") for i, a in enumerate(doc.get("attempts") or [])]
    sessions = []
    for i, s in enumerate(doc.get("sessions") or []):
        if not isinstance(s, dict) or not s.get("id") or not s.get("started_at"):
            raise _bad_import(f"session {i + 1}: id and started_at are needed")
        row = {k: s.get(k) for k in SESSION_COLUMNS}
        if row["mode"] not in MODES:
            row["mode"] = "quiz"
        for k in ("args", "summary"):
            if row[k] is not None and not isinstance(row[k], str):
                row[k] = json.dumps(row[k], ensure_ascii=False, sort_keys=True)
        sessions.append(row)
    reports = []
    for i, r in enumerate(doc.get("reports") or []):
        if not isinstance(r, dict) or not r.get("uid") or not r.get("problem_id") or not r.get("time"):
            raise _bad_import(f"report {i + 1}: uid, time and problem_id are needed")
        row = {k: r.get(k) for k in REPORT_COLUMNS}
        if row["extra"] is not None and not isinstance(row["extra"], str):
            row["extra"] = json.dumps(row["extra"], ensure_ascii=False, sort_keys=True)
        reports.append(row)
    return sessions, attempts, reports


def _read_csv_export(text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or not {"uid", "time", "problem_id"} <= set(reader.fieldnames):
        raise _bad_import("not a qkv history CSV (its header needs uid, time and problem_id)")
    try:
        return [_clean_attempt(row, f"line {i + 2}") for i, row in enumerate(reader)]
    except csv.Error as e:
        raise _bad_import(f"unreadable CSV: {e}") from None
