"""The progress database's layout: file names, the SQL of every schema step, column lists.

``PRAGMA user_version`` is the number of :data:`MIGRATIONS` steps applied; steps are appended,
never edited (:func:`drills.progress.database.migrate` applies the missing ones). Times are stored
as UTC ISO-8601 text with microseconds, which sorts as text.
"""

from __future__ import annotations

from drills.output import InputError

DB_NAME = "progress.sqlite3"
REPORTS_NAME = "reports.jsonl"
EXPORT_FORMAT = "qkv-history"
EXPORT_VERSION = 1
MODES: tuple[str, ...] = ("quiz", "exam", "check")

#: Schema steps; ``PRAGMA user_version`` is the number of steps applied. Append, never edit.
MIGRATIONS: list[str] = [
    # 1: sessions and attempts
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        mode TEXT NOT NULL CHECK (mode IN ('quiz', 'exam', 'check')),
        started_at TEXT NOT NULL,
        ended_at TEXT,
        args TEXT,              -- JSON: the options the session ran with
        score REAL,             -- exams: marks obtained (negative marks subtracted)
        max_score REAL,
        negative REAL,          -- exams: marks lost to negative marking
        summary TEXT            -- JSON: anything else worth keeping
    );
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,          -- stable across export/import
        time TEXT NOT NULL,                -- UTC ISO-8601
        session_id TEXT,
        mode TEXT NOT NULL CHECK (mode IN ('quiz', 'exam', 'check')),
        problem_id TEXT NOT NULL,
        part TEXT,                         -- multi-part problems: the part's label
        family TEXT,
        seed,                              -- integer (text when beyond 64 bits)
        topic TEXT,
        type TEXT,
        answer TEXT,                       -- as typed (NULL when skipped)
        parsed TEXT,                       -- JSON of the parsed value
        correct INTEGER,                   -- 1, 0, NULL (skipped / unanswered)
        score REAL,
        marks REAL,
        negative REAL,
        time_ms INTEGER,
        misconception TEXT,                -- id of the misconception the answer matched
        misconception_label TEXT,
        rating INTEGER,                    -- the FSRS rating applied (1..4), NULL if none
        extra TEXT                         -- JSON
    );
    CREATE INDEX attempts_time ON attempts (time);
    CREATE INDEX attempts_topic ON attempts (topic);
    CREATE INDEX attempts_family ON attempts (family);
    CREATE INDEX attempts_session ON attempts (session_id);
    """,
    # 2: review cards
    """
    CREATE TABLE cards (
        kind TEXT NOT NULL CHECK (kind IN ('family', 'item')),
        ref TEXT NOT NULL,
        topic TEXT,
        type TEXT,
        card TEXT NOT NULL,     -- fsrs.Card.to_json()
        due TEXT NOT NULL,      -- UTC ISO-8601, a copy of the card's due date
        state INTEGER NOT NULL, -- 1 learning, 2 review, 3 relearning
        reps INTEGER NOT NULL DEFAULT 0,
        lapses INTEGER NOT NULL DEFAULT 0,
        last_review TEXT,
        PRIMARY KEY (kind, ref)
    );
    CREATE INDEX cards_due ON cards (due);
    """,
    # 3: disputed keys
    """
    CREATE TABLE reports (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        time TEXT NOT NULL,
        session_id TEXT,
        problem_id TEXT NOT NULL,
        family TEXT,
        seed,
        answer TEXT,
        key TEXT,               -- the key as shown to the student
        note TEXT,
        extra TEXT
    );
    """,
    # 4: the store's id, written once: a write-ahead log showing another id is not this file's
    """
    CREATE TABLE store (
        id TEXT NOT NULL        -- 32 random hex digits
    );
    INSERT INTO store (id) VALUES (lower(hex(randomblob(16))));
    """,
    # 5: a count of write transactions, raised by every one of them
    # (:func:`drills.progress.database.transaction`), so that every write-ahead log of this file
    # holds the store's page: a log without it, or showing another id, is not this file's
    """
    ALTER TABLE store ADD COLUMN writes INTEGER NOT NULL DEFAULT 0;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
TABLES = ("sessions", "attempts", "cards", "reports", "store")

ATTEMPT_COLUMNS = ("uid", "time", "session_id", "mode", "problem_id", "part", "family", "seed", "topic",
                   "type", "answer", "parsed", "correct", "score", "marks", "negative", "time_ms",
                   "misconception", "misconception_label", "rating", "extra")
SESSION_COLUMNS = ("id", "mode", "started_at", "ended_at", "args", "score", "max_score", "negative", "summary")
REPORT_COLUMNS = ("uid", "time", "session_id", "problem_id", "family", "seed", "answer", "key", "note", "extra")
CARD_COLUMNS = ("kind", "ref", "topic", "type", "card", "due", "state", "reps", "lapses", "last_review")
JSON_COLUMNS = {"parsed", "extra", "args", "summary"}


class ProgressError(InputError):
    """A progress-store problem the user must act on (one line, exit status 2)."""
