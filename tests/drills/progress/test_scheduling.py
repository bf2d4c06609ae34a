"""FSRS scheduling: verdict -> rating, card updates, and the import cost of the quiz path."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drills.progress.scheduling import AGAIN, EASY, GOOD, HARD, item_key, rating_for, retrievability, review

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("correct,seconds,type_,marks,rating", [
    (False, 5, "mcq", 1, AGAIN),
    (None, None, "nat", 1, AGAIN),  # skipped / gave up
    (True, None, "nat", 1, GOOD),  # no time measured
    (True, 20, "mcq", 1, EASY),  # mcq: fast <= 20 s per mark
    (True, 21, "mcq", 1, GOOD),
    (True, 90, "mcq", 1, GOOD),  # slow > 90 s per mark
    (True, 91, "mcq", 1, HARD),
    (True, 40, "mcq", 2, EASY),  # a 2-mark question gets twice as long
    (True, 181, "mcq", 2, HARD),
    (True, 45, "nat", 1, EASY),
    (True, 180, "nat", 1, GOOD),
    (True, 181, "integer", 1, HARD),
    (True, 100, "matrix", 1, GOOD),
    (True, 301, "matrix", 1, HARD),
    (True, 60, "unknown-type", 1, GOOD),  # falls back to the nat thresholds
])
def test_rating_for(correct, seconds, type_, marks, rating):
    time_ms = None if seconds is None else seconds * 1000
    assert rating_for(correct, time_ms, type_, marks) == rating


def test_item_key():
    assert item_key("attention.by_hand", "attention.by_hand/12") == ("family", "attention.by_hand")
    assert item_key(None, "gate.2024.q3") == ("item", "gate.2024.q3")


def test_new_card_follows_fsrs_learning_steps():
    # fsrs 6 defaults: learning steps of 1 and 10 minutes; Easy graduates to the review state
    again = review(None, AGAIN, T0)
    assert again.due - T0 == timedelta(minutes=1) and again.state == 1
    good = review(None, GOOD, T0)
    assert good.due - T0 == timedelta(minutes=10) and good.state == 1
    easy = review(None, EASY, T0)
    assert easy.due - T0 >= timedelta(days=1) and easy.state == 2


def test_again_after_review_relapses():
    card = review(None, EASY, T0)
    later = review(card.card_json, AGAIN, card.due)
    assert later.state == 3  # relearning
    assert later.due - card.due == timedelta(minutes=10)  # fsrs default relearning step
    assert later.stability < card.stability


@given(st.lists(st.sampled_from([AGAIN, HARD, GOOD, EASY]), min_size=1, max_size=12))
def test_review_invariants(ratings):
    card, when = None, T0
    for r in ratings:
        state = review(card, r, when, item=("family", "x"))
        assert state.due > when  # always due after the review
        assert state.last_review == when
        assert state.state in (1, 2, 3)
        assert json.loads(state.card_json)["card_id"] == json.loads(review(None, GOOD, T0, item=("family", "x"))
                                                                    .card_json)["card_id"]
        card, when = state.card_json, state.due
    # deterministic (no fuzzing): the same history gives the same card
    again, when2 = None, T0
    for r in ratings:
        s2 = review(again, r, when2, item=("family", "x"))
        again, when2 = s2.card_json, s2.due
    assert again == card


def test_consecutive_goods_space_out():
    card, when, intervals = None, T0, []
    for _ in range(6):
        state = review(card, GOOD, when)
        intervals.append(state.due - when)
        card, when = state.card_json, state.due
    reviews = intervals[2:]  # after the two learning steps
    assert all(b >= a for a, b in zip(reviews, reviews[1:], strict=False))
    assert reviews[-1] > timedelta(days=7)


def test_retrievability_decays():
    state = review(None, EASY, T0)
    early = retrievability(state.card_json, T0 + timedelta(hours=1))
    late = retrievability(state.card_json, T0 + timedelta(days=60))
    assert 0 < late < early <= 1


def test_naive_datetimes_are_utc():
    assert review(None, GOOD, T0.replace(tzinfo=None)).due == review(None, GOOD, T0).due


def test_quiz_path_imports_are_light():
    """Importing the parser, the store and the scheduler loads neither fsrs, torch, sympy nor numpy."""
    code = ("import sys, time; t = time.perf_counter(); "
            "import drills.answers, drills.progress.recording, drills.progress.scheduling, drills.progress.paths; "
            "dt = time.perf_counter() - t; "
            "print(sorted(m for m in ('fsrs', 'torch', 'sympy', 'numpy', 'rich') if m in sys.modules)); "
            "print(dt)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert float(out[1]) < 0.5  # about 0.03 s here; generous for a loaded CI machine
