"""Spaced repetition with FSRS (the maintained ``fsrs`` package, API of version 6).

One review card per problem family (every variant of a family trains the same skill) and one
per curated item (a problem with no family): :func:`item_key`. A verdict becomes an FSRS
rating with :func:`rating_for`:

- wrong, skipped, or the solution shown before answering: **Again**;
- right but slow (more than ``slow`` seconds per mark): **Hard**;
- right within ``fast`` seconds per mark: **Easy**;
- right otherwise, or right with no time measured: **Good**;
- right after one or more hints: at most **Hard** (a hinted recall is a weaker one, so the item
  comes back sooner than after an unaided answer; the score is not changed).

Seconds per mark (a 2-mark problem gets twice as long; GATE allows about 1.8 minutes a mark):

==========  ======  ======
type        fast    slow
==========  ======  ======
mcq         20      90
msq         30      120
nat         45      180
integer     45      180
matrix      90      300
==========  ======  ======

The scheduler runs with FSRS's default parameters, desired retention 0.9, learning steps of 1
and 10 minutes (so an item missed in a quiz comes back in the same session) and *no fuzzing*,
so that the schedule is a function of the (rating, time) history alone: replaying an imported
history rebuilds exactly the same cards. ``fsrs`` is imported on the first review only (its
import costs about 10 ms); reading what is due needs only the database.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

AGAIN, HARD, GOOD, EASY = 1, 2, 3, 4  # the values of fsrs.Rating
RATING_NAMES = {AGAIN: "again", HARD: "hard", GOOD: "good", EASY: "easy"}
STATE_NAMES = {1: "learning", 2: "review", 3: "relearning"}  # the values of fsrs.State

#: (fast, slow) seconds per mark, by problem type.
TIME_THRESHOLDS: dict[str, tuple[float, float]] = {
    "mcq": (20.0, 90.0),
    "msq": (30.0, 120.0),
    "nat": (45.0, 180.0),
    "integer": (45.0, 180.0),
    "matrix": (90.0, 300.0),
}
DEFAULT_THRESHOLDS = (45.0, 180.0)


def rating_for(correct: bool | None, time_ms: int | None, problem_type: str, marks: float = 1,
               hints: int = 0) -> int:
    """The FSRS rating (1..4) of one answer; ``correct=None`` (skipped, gave up) is Again; a
    right answer given after ``hints`` > 0 hints is at most Hard."""
    if not correct:
        return AGAIN
    if hints > 0:
        return HARD
    if time_ms is None:
        return GOOD
    fast, slow = TIME_THRESHOLDS.get(problem_type, DEFAULT_THRESHOLDS)
    per_mark = max(float(marks or 1), 1.0)
    seconds = time_ms / 1000.0
    if seconds > slow * per_mark:
        return HARD
    if seconds <= fast * per_mark:
        return EASY
    return GOOD


def item_key(family: str | None, problem_id: str) -> tuple[str, str]:
    """``("family", family)`` for a generated problem, ``("item", problem_id)`` for a curated one."""
    return ("family", family) if family else ("item", problem_id)


@dataclass(frozen=True)
class CardState:
    """An FSRS card after a review: its JSON (``fsrs.Card.to_json``) and the fields we index."""

    card_json: str
    due: datetime  # UTC
    state: int  # 1 learning, 2 review, 3 relearning
    stability: float | None
    difficulty: float | None
    last_review: datetime | None


def utc(dt: datetime | None = None) -> datetime:
    """``dt`` as an aware UTC datetime (naive means UTC); now when None."""
    if dt is None:
        return datetime.now(UTC)
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


@lru_cache(maxsize=1)
def _scheduler() -> Any:
    import fsrs

    return fsrs.Scheduler(desired_retention=0.9, enable_fuzzing=False)


def review(card_json: str | None, rating: int, now: datetime, *, item: tuple[str, str] | None = None,
           duration_ms: int | None = None) -> CardState:
    """Apply one review with ``rating`` at ``now`` to the card in ``card_json`` (a new card when
    None) and return the new state."""
    import fsrs

    if rating not in RATING_NAMES:
        raise ValueError(f"rating must be 1..4, not {rating!r}")
    now = utc(now)
    if card_json:
        card = fsrs.Card.from_json(card_json)
    else:
        # a stable id (fsrs defaults to a timestamp and sleeps 1 ms to keep ids apart)
        card_id = zlib.crc32("/".join(item).encode()) if item else 0
        card = fsrs.Card(card_id=card_id, due=now)
    card, _log = _scheduler().review_card(card, fsrs.Rating(rating), review_datetime=now,
                                          review_duration=duration_ms)
    return CardState(card_json=card.to_json(), due=utc(card.due), state=int(card.state),
                     stability=card.stability, difficulty=card.difficulty,
                     last_review=utc(card.last_review) if card.last_review else None)


def retrievability(card_json: str, now: datetime) -> float:
    """FSRS's estimate (0..1) that the student still knows the item at ``now``."""
    import fsrs

    return float(_scheduler().get_card_retrievability(fsrs.Card.from_json(card_json), utc(now)))
