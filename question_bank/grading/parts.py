"""Multi-part problems: follow-through from the student's earlier parts, and carried rounding."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from question_bank.grading.judge import GivenUnit, Verdict, grade
from question_bank.grading.keys import stored_key_value
from question_bank.grading.tolerance import round_half_up
from question_bank.problem import (
    Key,
    MatrixKey,
    NumericKey,
    Part,
    Problem,
)


def grade_parts(problem: Problem, answers: dict[str, Any], *, written: dict[str, str] | None = None,
                units: dict[str, GivenUnit] | None = None) -> dict[str, Verdict]:
    """Grade every part of a multi-part problem, with follow-through.

    Parts are judged in order. A part that is wrong against its own key, coming after a wrong
    (or unanswered) earlier part, is judged again against ``part.follow(earlier)``, where
    ``earlier`` maps each earlier label to the student's answer (or to the key's value when
    that part was unanswered or unusable). If it is right there, the part gets full marks
    with ``status="follow_through"`` and a message that says so; ``expected`` stays the true
    key. ``units`` maps a label to the unit its answer was typed in (see :func:`grade`).
    Returns ``{label: Verdict}`` in part order."""
    written = written or {}
    units = units or {}
    out: dict[str, Verdict] = {}
    earlier: dict[str, Any] = {}
    slipped = False
    for part in problem.parts:
        if part.label not in answers or answers[part.label] is None:
            v = Verdict(False, 0.0, "unanswered", "Not answered.", expected=stored_key_value(part.key), label=part.label)
            out[part.label] = v
            earlier[part.label] = stored_key_value(part.key)
            slipped = True
            continue
        ans = answers[part.label]
        v = grade(part, ans, written=written.get(part.label), unit=units.get(part.label))
        if not v.correct and not v.invalid and v.status != "wrong_unit" and slipped and part.follow is not None:
            try:
                fkey = part.follow(dict(earlier))
            except Exception:  # noqa: BLE001 - an unusable earlier answer simply gives no follow-through
                fkey = None
            if fkey is not None:
                fv = _grade_either(part.key, fkey, ans, written.get(part.label))
                if fv.correct:
                    given = [f"({lab})" for lab, pv in out.items() if not pv.correct or pv.follow_through]
                    slips = [f"({lab})" for lab, pv in out.items() if not pv.correct]
                    slip_text = " and ".join(slips) + (" was" if len(slips) == 1 else " were")
                    v = replace(
                        fv,
                        status="follow_through",
                        follow_through=True,
                        label=part.label,
                        expected=stored_key_value(part.key),
                        cells=fv.cells,
                        message=(
                            f"Correct given your answer to {', '.join(given)}: this follows from it, so full marks "
                            f"(follow-through); it differs from the exact value only because {slip_text} wrong."
                        ),
                    )
        elif not v.correct and not v.invalid and v.status != "wrong_unit" and not slipped and part.follow is not None:
            before = problem.parts[: problem.parts.index(part)]
            v = _carried_rounding(part, ans, v, earlier, before, written.get(part.label))
        out[part.label] = v
        earlier[part.label] = ans if not v.invalid else stored_key_value(part.key)
        if not v.correct or v.follow_through:
            slipped = True
    return out



def _rounded_key_value(key: Key, extra: int = 0) -> Any:
    """The key as a student writes it when rounding as the statement asks (its decimals), or to
    ``extra`` places more (as a worked solution carries its intermediate values)."""
    if isinstance(key, NumericKey) and key.decimals is not None:
        return round_half_up(key.value, key.decimals + extra)
    if isinstance(key, MatrixKey) and key.decimals is not None:
        return [[round_half_up(x, key.decimals + extra) for x in r] for r in key.value]
    return stored_key_value(key)



def _carried_rounding(part: Part, ans: Any, v: Verdict, earlier: dict[str, Any], before: list[Part],
                      written: str | None) -> Verdict:
    """Every earlier part was right, but this one misses the exact key: a student who carries
    their correctly rounded earlier values forward lands a little off. Accept the answer when
    it follows from the student's own (right) earlier answers or from the earlier keys rounded
    as asked (or to one place more, as worked solutions carry them); full marks, ``status`` stays ``correct`` with a note on the rounding."""
    rounded = [{pt.label: _rounded_key_value(pt.key, extra) for pt in before} for extra in (0, 1)]
    for basis in (dict(earlier), *rounded):
        try:
            fkey = part.follow(basis)  # type: ignore[misc]
        except Exception:  # noqa: BLE001 - an unusable basis simply gives nothing
            continue
        fv = _grade_either(part.key, fkey, ans, written)
        if fv.correct:
            shown = ", ".join(f"({pt.label})" for pt in before)
            return replace(fv, label=part.label, expected=v.expected, precision="carried_rounding",
                           message=f"Correct: this follows from your rounded answers to {shown} (the exact value "
                                   "differs in the last places only because of that rounding).")
    return v



def _grade_either(key: Key, fkey: Key, ans: Any, written: str | None) -> Verdict:
    """``ans`` against ``fkey`` (what follows from the earlier answers); for a matrix, each entry
    right against either ``fkey`` or the exact ``key`` counts (a student who carries rounded
    weights into A·V but writes the plain 2 where every value averaged is 2)."""
    fv = grade(fkey, ans, written=written)
    if fv.correct or not (isinstance(key, MatrixKey) and isinstance(fkey, MatrixKey)):
        return fv
    kv = grade(key, ans)
    if fv.cells is None or kv.cells is None:
        return fv
    cells = tuple(tuple(a or b for a, b in zip(r1, r2, strict=True)) for r1, r2 in zip(fv.cells, kv.cells, strict=True))
    if all(all(r) for r in cells):
        return replace(fv, correct=True, score=1.0, status="correct", cells=cells, misconception=None,
                       misconceptions=(), message="Correct: every entry is right.")
    return fv


def total_score(verdicts: dict[str, Verdict] | list[Verdict]) -> float:
    """Mean score over parts (each part weighs the same), in [0, 1]."""
    vs = list(verdicts.values()) if isinstance(verdicts, dict) else list(verdicts)
    return sum(v.score for v in vs) / len(vs) if vs else 0.0
