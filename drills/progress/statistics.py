"""What the progress store knows, read back: answers, sessions, reports, review cards, statistics.

:class:`StoreReads` is the reading half of :class:`drills.progress.recording.ProgressStore` (a
mixin over its ``conn`` and ``data_dir``). Nothing here writes.
"""

from __future__ import annotations

import sqlite3
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from drills.progress.rows import DueItem, due_item, iso, parse_time, row_dict
from drills.progress.scheduling import utc
from drills.progress.schema import ATTEMPT_COLUMNS, REPORT_COLUMNS


class StoreReads:
    """Reads of the progress database (answers, sessions, reports, cards, statistics)."""

    conn: sqlite3.Connection
    data_dir: Path

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def session(self, session_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row_dict(row) if row else None

    def attempts(self, *, session_id: str | None = None, problem_id: str | None = None,
                 family: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Stored answers, oldest first, as dicts (``parsed``/``extra`` decoded)."""
        where, params = [], []
        for column, value in (("session_id", session_id), ("problem_id", problem_id), ("family", family)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        sql = f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY time, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [row_dict(r) for r in self.conn.execute(sql, params)]

    def seeds_seen(self, family: str) -> set[int]:
        """Seeds of the variants of ``family`` already answered (to draw a fresh one)."""
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT seed FROM attempts WHERE family = ? AND typeof(seed) = 'integer'", (family,))}

    def count_attempts(self) -> int:
        return self.conn.execute("SELECT count(*) FROM attempts").fetchone()[0]

    def reports(self) -> list[dict[str, Any]]:
        return [row_dict(r) for r in self.conn.execute(
            f"SELECT {', '.join(REPORT_COLUMNS)} FROM reports ORDER BY time, id")]

    def due_items(self, now: datetime | None = None, topic: str | None = None, *,
                  within: timedelta | None = None, types: tuple[str, ...] | None = None,
                  limit: int | None = None) -> list[DueItem]:
        """Cards due at ``now`` (plus ``within``), the longest overdue first."""
        horizon = iso(utc(now) + (within or timedelta(0)))
        sql, params = "SELECT * FROM cards WHERE due <= ?", [horizon]
        if topic is not None:
            sql += " AND topic = ?"
            params.append(topic)
        if types:
            sql += f" AND type IN ({', '.join('?' * len(types))})"
            params.extend(types)
        sql += " ORDER BY due, kind, ref"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [due_item(r) for r in self.conn.execute(sql, params)]

    def cards(self) -> dict[tuple[str, str], DueItem]:
        """Every review card, by ``(kind, ref)``: the items the student has already met."""
        return {(r["kind"], r["ref"]): due_item(r) for r in self.conn.execute("SELECT * FROM cards")}

    def card_json(self, kind: str, ref: str) -> str | None:
        row = self.conn.execute("SELECT card FROM cards WHERE kind = ? AND ref = ?", (kind, ref)).fetchone()
        return row["card"] if row else None

    def stats(self, now: datetime | None = None, tz: tzinfo | None = None, days: int = 14) -> dict[str, Any]:
        """Accuracy per topic and type, top misconceptions, items due, streak, daily accuracy.

        Days are calendar days in ``tz`` (default: the local time zone). The streak counts
        consecutive days with at least one answer, ending today, or yesterday when today has
        none yet. Accuracy is correct / answered (skipped answers count as attempts only)."""
        now = utc(now)
        tz = tz or datetime.now().astimezone().tzinfo or UTC
        rows = self.conn.execute(
            "SELECT time, topic, type, correct, misconception, misconception_label FROM attempts").fetchall()

        def tally() -> dict[str, Any]:
            return {"attempts": 0, "answered": 0, "correct": 0}

        total = tally()
        by_topic: dict[str, dict[str, Any]] = defaultdict(tally)
        by_type: dict[str, dict[str, Any]] = defaultdict(tally)
        by_day: dict[date, dict[str, Any]] = defaultdict(tally)
        mistakes: Counter[str] = Counter()
        labels: dict[str, str] = {}
        mistake_topics: dict[str, set[str]] = defaultdict(set)
        for r in rows:
            day = parse_time(r["time"]).astimezone(tz).date()
            for t in (total, by_topic[r["topic"] or "(none)"], by_type[r["type"] or "(none)"], by_day[day]):
                t["attempts"] += 1
                if r["correct"] is not None:
                    t["answered"] += 1
                    t["correct"] += r["correct"]
            if r["misconception"]:
                mistakes[r["misconception"]] += 1
                labels[r["misconception"]] = r["misconception_label"] or labels.get(r["misconception"], "")
                if r["topic"]:
                    mistake_topics[r["misconception"]].add(r["topic"])

        def finish(name: str, key: str, t: dict[str, Any]) -> dict[str, Any]:
            return {name: key, **t, "accuracy": t["correct"] / t["answered"] if t["answered"] else None}

        today = now.astimezone(tz).date()
        end_of_today = datetime.combine(today + timedelta(days=1), datetime.min.time(), tz)
        end_of_week = end_of_today + timedelta(days=6)
        due_now = self.due_items(now)
        due_today = self.due_items(end_of_today - timedelta(microseconds=1))
        due_week = self.due_items(end_of_week - timedelta(microseconds=1))
        n_cards = self.conn.execute("SELECT count(*) FROM cards").fetchone()[0]

        active = sorted(by_day)
        streak = 0
        if active:
            day = today if today in by_day else today - timedelta(days=1)
            while day in by_day:
                streak += 1
                day -= timedelta(days=1)
        longest = run = 0
        previous = None
        for day in active:
            run = run + 1 if previous is not None and day - previous == timedelta(days=1) else 1
            longest = max(longest, run)
            previous = day

        daily = []
        for i in range(days - 1, -1, -1):
            day = today - timedelta(days=i)
            daily.append(finish("day", day.isoformat(), by_day.get(day, tally())))

        exams = [
            {"session_id": r["id"], "started_at": r["started_at"], "ended_at": r["ended_at"],
             "score": r["score"], "max_score": r["max_score"], "negative": r["negative"]}
            for r in self.conn.execute(
                "SELECT * FROM sessions WHERE mode = 'exam' AND ended_at IS NOT NULL ORDER BY started_at DESC LIMIT 10")
        ]
        return {
            "data_dir": str(self.data_dir),
            "now": iso(now),
            "totals": finish("scope", "all", total),
            "topics": sorted((finish("topic", k, v) for k, v in by_topic.items()),
                             key=lambda t: (-t["attempts"], t["topic"])),
            "types": sorted((finish("type", k, v) for k, v in by_type.items()),
                            key=lambda t: (-t["attempts"], t["type"])),
            "misconceptions": [{"id": m, "label": labels.get(m, ""), "count": n,
                                "topics": sorted(mistake_topics[m])} for m, n in mistakes.most_common(10)],
            "due": {"now": len(due_now), "today": len(due_today), "week": len(due_week), "cards": n_cards,
                    "items": [d.to_json() for d in due_today[:20]]},
            "streak": {"current": streak, "longest": longest,
                       "last_day": active[-1].isoformat() if active else None,
                       "today": today in by_day},
            "daily": daily,
            "exams": exams,
            # issue 42: exams cut short (a closed terminal, a kill), their answers saved: `qkv exam` resumes them
            "unfinished_exams": [
                {"session_id": sid, "started_at": started, "questions": len(state.get("questions") or []),
                 "answered": sum(1 for q in state.get("questions") or [] if isinstance(q, dict)
                                 and q.get("answer") is not None)}
                for sid, started, state in self._unfinished_for_stats()],
        }

    def _unfinished_for_stats(self) -> list[tuple[str, str, dict[str, Any]]]:
        out = []
        for sid, _args, state in getattr(self, "unfinished_exams", lambda: [])():
            row = self.conn.execute("SELECT started_at FROM sessions WHERE id = ?", (sid,)).fetchone()
            out.append((sid, row[0] if row else None, state))
        return out
