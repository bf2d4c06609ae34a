"""How values are written into and read out of the progress database's rows.

Times are UTC ISO-8601 text with microseconds (``2025-01-31T18:04:05.123456+00:00``); seeds
beyond 64 bits are text; ``parsed``/``extra``/``args``/``summary`` are JSON text. Also the two
record types the store hands back: :class:`Recorded` and :class:`DueItem`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from drills.progress.scheduling import utc
from drills.progress.schema import JSON_COLUMNS


def iso(dt: datetime) -> str:
    """UTC ISO-8601 with microseconds: sorts as text."""
    return utc(dt).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    """The UTC datetime of an ISO-8601 text (``Z`` accepted; a naive time is taken as UTC)."""
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return utc(dt)


def seed_value(seed: int | str | None) -> int | str | None:
    """A seed as stored: an integer, or its text when it does not fit SQLite's 64 bits."""
    if isinstance(seed, int) and not -(2**63) <= seed < 2**63:
        return str(seed)
    return seed


def safe_text(text: str) -> str:
    """``text`` as valid UTF-8: bytes a terminal passed through undecoded (lone surrogates, as
    Python's ``surrogateescape`` keeps them) become U+FFFD, so that SQLite can store them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "replace")
        return raw.decode("utf-8", "replace")


def safe_row(row: dict[str, Any]) -> dict[str, Any]:
    """:func:`safe_text` on every text value of ``row``."""
    return {k: safe_text(v) if isinstance(v, str) else v for k, v in row.items()}


def json_text(value: Any) -> str | None:
    """``value`` (anything with ``to_json()``, or JSON-able data) as sorted JSON text."""
    if value is None:
        return None
    if hasattr(value, "to_json") and callable(value.to_json):
        value = value.to_json()
    from drills.output import jsonable

    return safe_text(json.dumps(jsonable(value), ensure_ascii=False, sort_keys=True))


def decode_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row's dict with its JSON columns decoded (text that is not JSON is left as it is)."""
    out = dict(row)
    for k in JSON_COLUMNS & out.keys():
        if isinstance(out[k], str):
            try:
                out[k] = json.loads(out[k])
            except ValueError:
                pass
    return out


def row_dict(row: sqlite3.Row) -> dict[str, Any]:
    return decode_row(dict(row))


@dataclass(frozen=True)
class Recorded:
    """What :meth:`ProgressStore.record_attempt` stored."""

    id: int
    uid: str
    rating: int | None  # the FSRS rating applied, None when the answer was not reviewed
    due: datetime | None  # when the item is due next


@dataclass(frozen=True)
class DueItem:
    """A review card: the family or curated item, and when it is due."""

    kind: str  # "family" | "item"
    ref: str  # family id or problem id
    topic: str | None
    type: str | None
    due: datetime
    state: int
    reps: int
    lapses: int
    last_review: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ref": self.ref, "topic": self.topic, "type": self.type,
                "due": iso(self.due), "state": self.state, "reps": self.reps, "lapses": self.lapses,
                "last_review": iso(self.last_review) if self.last_review else None}


def due_item(row: sqlite3.Row) -> DueItem:
    return DueItem(kind=row["kind"], ref=row["ref"], topic=row["topic"], type=row["type"],
                   due=parse_time(row["due"]), state=row["state"], reps=row["reps"], lapses=row["lapses"],
                   last_review=parse_time(row["last_review"]) if row["last_review"] else None)
