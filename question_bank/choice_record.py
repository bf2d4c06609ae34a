"""The test-wise student's record: which choice levels the bank offers.

``question_bank/data/choice_attack.json`` holds, per MCQ/MSQ family level, the adversary's figure at
500 draws (:mod:`question_bank.adversary`, measured by ``bench/choice_attack.py``). A level whose
worst gated figure sits above chance + 5 points does not measure what it claims: a student who never
computes picks its key more often than one who guesses. Such a level is **withdrawn**: it is not
drawn by ``qkv quiz``, ``qkv exam`` or ``qkv sheet``, nor listed by ``qkv bank list``; ``qkv bank
show`` still shows it, with the figure that withdrew it, and ``bank validate`` still checks its keys.
A numeric family's NAT form is a family of its own and stays offered when its MCQ view is withdrawn.

This module is the one place for the rule (:func:`passes`) and for the list (:func:`withdrawn`),
read lazily: a family that offers no choice item never reads the record.
"""

from __future__ import annotations

import functools
import json
import pathlib
from collections.abc import Sequence
from typing import Any

__all__ = ["RECORD", "passes", "outside_beaten", "gated", "passes_margin", "verdict", "withdrawn", "reason", "record", "current",
           "adversary_digest", "draws_digest", "VERDICT_KEYS", "MIN_DISTINCT_KEYS"]

RECORD = pathlib.Path(__file__).resolve().parent / "data" / "choice_attack.json"


@functools.lru_cache(maxsize=1)
def _levels() -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads(RECORD.read_text(encoding="utf-8"))["levels"])
    except (OSError, ValueError, KeyError):
        return {}


def passes_margin(chance: float, n: int) -> float:
    """How far above chance a figure on ``n`` draws may be: 5 points on 400 draws or more; on a
    smaller subset (draws whose key was never a key in training) also three standard errors."""
    from question_bank import adversary as adv

    return adv.LEARNED_MARGIN + (0.0 if n >= 400 else adv.allowance(chance, n))


def gated(rec: dict[str, Any]) -> tuple[float, str, int]:
    """The recorded figure a level is gated on (:func:`question_bank.adversary.gated_figures`): the
    worst, as ``(rate, what, draws)``."""
    from question_bank import adversary as adv

    L = adv.Learned(rec["best"], rec["attacker"], rec["draws"], rec["unseen_rate"], rec["unseen_n"], rec["attackers"],
                    rec["unseen_key_rate"], rec["unseen_key_n"], rec["numeric"])
    return max(adv.gated_figures(L), key=lambda g: g[0] - passes_margin(rec["chance"], g[2]))


#: The fresh block a level that passes on seeds 0-499 must pass too: seeds from here, never used to
#: tune a family (the record's own block was: a level tuned until it passes there can sit on the line).
HOLDOUT_FROM = 50_000


#: A numeric level draws its keys from a wide range: at least this many distinct keys in a block of
#: 400-500 draws (stricter than 100 in 1,000). A smaller pool is one a student learns by heart; the
#: key-pool attacker reads it too, but only once a key repeats within the half it trains on.
MIN_DISTINCT_KEYS = 100


def _few_keys(rec: dict[str, Any]) -> bool:
    return (bool(rec.get("numeric")) and rec.get("draws", 0) >= 400
            and rec.get("distinct_keys", MIN_DISTINCT_KEYS) < MIN_DISTINCT_KEYS)


def _passes_block(rec: dict[str, Any]) -> bool:
    if "best" not in rec or rec.get("draws", 0) < 400 or _few_keys(rec):
        return False
    r, _, n = gated(rec)
    return r <= rec["chance"] + passes_margin(rec["chance"], n)


def outside_beaten(rec: dict[str, Any]) -> bool:
    """The outside attacker's verdict on a level (``bench/outside_attack.py``, an attacker that shares no code
    with :mod:`question_bank.adversary`, recorded as ``rec["outside_rule"]``): a fixed rule a test-wise student
    applies without training (the option nearest a product of the printed numbers, the one least like the
    others), chosen on seeds 0-599, that beats chance + 5 points there and on 500 fresh draws (seeds 90,000+),
    by more than 2.5 standard errors. Its learners, which learn from past papers what the subject teaches (a
    comparison the lesson is about, the size of a formula's answer), are recorded in bench/ and do not gate, but
    one: where the options are numbers, a learner that reads only the options (``rec["outside_options"]``: no
    statement, no memory of past option texts) and beats chance + 5 points on the fresh draws has found the key in
    the options' own look (their spacing, digits, sizes), which no computation gave it."""
    return _outside_figure(rec) is not None


def _beats(o: dict[str, Any] | None, rec: dict[str, Any], chosen: bool) -> bool:
    """``o`` (an outside figure) measured on today's draws beats chance + 5 points by 2.5 standard errors on its
    fresh draws (and on validation, where the attacker was ``chosen`` there among several)."""
    if not o or o.get("first20") != rec.get("first20"):  # none, or measured on other draws than today's record
        return False
    c, r, n = o["chance"], o["heldout"], o["draws"]
    return (not chosen or o["validation"] > c + OUTSIDE_MARGIN) and r > c + OUTSIDE_MARGIN and \
        (r - c) > OUTSIDE_Z * (c * (1 - c) / n) ** 0.5


def _outside_figure(rec: dict[str, Any]) -> tuple[float, str, int, float] | None:
    """The outside figure that beats the level, as ``(rate, what, draws, chance)``; None when none does."""
    o = rec.get("outside_rule")
    if _beats(o, rec, chosen=True):
        return o["heldout"], f"the outside attacker's rule '{o['rule']}', on fresh draws (seeds 90000+)", o["draws"], o["chance"]
    b = rec.get("outside_options")
    if b and b.get("numeric_options") and _beats(b, rec, chosen=False):
        return (b["heldout"], "the outside attacker's options-only learner (it reads no statement), on fresh draws "
                "(seeds 90000+)", b["draws"], b["chance"])
    return None


#: the outside attacker's margin and standard errors (bench/outside_attack.py: MARGIN, Z_BEATEN)
OUTSIDE_MARGIN, OUTSIDE_Z = 0.05, 2.5


def passes(rec: dict[str, Any]) -> bool:
    """A measured level within chance + 5 points at 400 draws or more, on its record's draws (seeds
    0-499) and on a fresh block of as many (``rec["holdout"]``, seeds from :data:`HOLDOUT_FROM`): no
    holdout, no pass; and no fixed rule of the outside attacker beats it (:func:`outside_beaten`)."""
    return _passes_block(rec) and _passes_block(rec.get("holdout") or {}) and not outside_beaten(rec)


def _gated_either(rec: dict[str, Any]) -> tuple[float, str, int, float]:
    """The failing block's gated figure (the record's own first), with that block's chance."""
    if outside_beaten(rec) and _passes_block(rec) and _passes_block(rec.get("holdout") or {}):
        return _outside_figure(rec)  # type: ignore[return-value]
    if _passes_block(rec) and "best" in (rec.get("holdout") or {}):
        h = rec["holdout"]
        r, what, n = gated(h)
        return r, f"{what}, on fresh draws (seeds {HOLDOUT_FROM}+)", n, h["chance"]
    r, what, n = gated(rec)
    return r, what, n, rec["chance"]


#: The fields :func:`verdict` writes beside a level's figures.
VERDICT_KEYS = ("passes", "gated", "gated_chance", "holdout_pending", "few_keys")


def verdict(rec: dict[str, Any]) -> dict[str, Any]:
    """The fields ``bench/choice_attack.py`` writes beside a measured level's figures: ``passes`` and its
    ``gated`` figure ``[rate, what, draws]``, so that reading the record imports no NumPy (a quiz's
    start-up reads it), and ``holdout_pending`` where the level passes its own block but its fresh block
    is not measured yet."""
    if "best" not in rec:
        return {}
    r, what, n, chance = _gated_either(rec)
    out: dict[str, Any] = {"passes": passes(rec), "gated": [r, what, n]}
    if chance != rec["chance"]:
        out["gated_chance"] = chance
    if "holdout" not in rec and _passes_block(rec):
        out["holdout_pending"] = True  # passes seeds 0-499; its fresh block is not measured yet
    few = next((b for b in (rec, rec.get("holdout") or {}) if "best" in b and _few_keys(b)), None)
    if few is not None:
        out["few_keys"] = [few["distinct_keys"], few["draws"]]
    return out


def _fails(rec: dict[str, Any]) -> bool:
    # "0 of 200 draws are choice items": a level a mixed family draws as NAT, not a choice level
    return "best" in rec and not rec["passes"]


def reason(rec: dict[str, Any]) -> str:
    """One line: the figure that withdrew a level, read from the written verdict (no NumPy)."""
    r, what, n = rec["gated"]
    if rec.get("few_keys"):
        k, d = rec["few_keys"]
        return f"its keys repeat: {k} distinct keys in {d} draws, where a numeric level needs {MIN_DISTINCT_KEYS}"
    if rec.get("holdout_pending"):
        return "its figure on fresh draws is not measured yet (python bench/choice_attack.py --holdout)"
    return f"a test-wise student scores {r:.0%} against a chance of {rec.get('gated_chance', rec['chance']):.0%} ({what}, {n} draws)"


def withdrawn(family_id: str, levels: tuple[str, ...]) -> tuple[str, ...]:
    """The levels of ``family_id`` (a family that offers MCQs or MSQs) that its record withdraws."""
    rec = _levels()
    return tuple(lv for lv in levels if _fails(rec.get(f"{family_id}/{lv}", {})))


def record(family_id: str, level: str) -> dict[str, Any]:
    """The level's record (empty when not measured)."""
    return dict(_levels().get(f"{family_id}/{level}", {}))


@functools.lru_cache(maxsize=1)
def adversary_digest() -> str:
    """The attack's code (features, learners, rules, the scoring), not the module's prose: a record
    measured by another adversary is not today's."""
    import hashlib
    import inspect

    from question_bank import adversary as adv

    parts = [inspect.getsource(o) for o in (adv.option_features, adv.structure_features, adv.fit_logistic, adv.fit_hist_boosted,
                                            adv._pool_scores, adv._range_scores, adv._near_far_scores, adv._symbol_scores,
                                            adv._choice_credit, adv.learned_attack)]
    parts += [repr(sorted(adv.LEARNERS)), repr(sorted(adv.RULES)), repr(adv.FEATURES), repr(adv.STRUCTURE), repr(adv.SIMPLE_RATIOS)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def draws_digest(ps: Sequence[Any]) -> str:
    """The draws a figure was measured on (statements, options, keys), as a short digest."""
    import hashlib

    h = hashlib.sha256()
    for p in ps:
        h.update("\n".join([p.statement_text, *(p.options_text or p.options), repr(sorted(p.key.correct))]).encode())
    return h.hexdigest()[:12]


def current(family_id: str, level: str, first_draws: Sequence[Any]) -> dict[str, Any] | None:
    """The level's record when it was measured by today's adversary on these draws (``first_draws``:
    the level's choice draws from seed 0, at least 20), else None."""
    rec = record(family_id, level)
    if "best" not in rec or len(first_draws) < 20 or rec.get("adversary") != adversary_digest():
        return None
    return rec if draws_digest(first_draws[:20]) == rec.get("first20") else None
