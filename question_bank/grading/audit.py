"""Auditing a problem (``qkv bank validate``, ``Family.self_test`` and the tests): the key
accepted, every misconception rejected and diagnosed as itself, options distinct."""

from __future__ import annotations

from typing import Any

from question_bank.grading.judge import grade
from question_bank.grading.keys import LETTERS, answer_text, nat_key, stored_key_value, values_coincide
from question_bank.grading.tolerance import in_range, round_half_up
from question_bank.problem import (
    ChoiceKey,
    IntegerKey,
    Key,
    MatrixKey,
    Misconception,
    NumericKey,
    Problem,
)

# auditing a problem (used by ``qkv bank validate``, ``Family.self_test`` and the tests)

_KEY_FOR_TYPE = {"nat": NumericKey, "integer": IntegerKey, "matrix": MatrixKey, "mcq": ChoiceKey, "msq": ChoiceKey}



def _audit_key(where: str, type_: str, key: Key, misconceptions: list[Misconception], target: Any,
               n_options: int | None) -> list[str]:
    out: list[str] = []
    want = _KEY_FOR_TYPE.get(type_)
    if want is None:
        return [f"{where}unknown type {type_!r}"]
    if not isinstance(key, want):
        return [f"{where}type {type_} needs a {want.__name__}, got {type(key).__name__}"]
    if isinstance(key, NumericKey):
        if not (key.lo <= key.value <= key.hi) and not in_range(key.value, key.lo, key.hi):
            out.append(f"{where}key value {key.value} outside its own range [{key.lo}, {key.hi}]")
        if key.decimals is not None:
            r = round_half_up(key.value, key.decimals)
            if not grade(key, r).correct:
                out.append(f"{where}the rounded key {r} is not accepted")
    if isinstance(key, ChoiceKey):
        if not key.correct:
            out.append(f"{where}no correct option")
        if type_ == "mcq" and len(key.correct) != 1:
            out.append(f"{where}an MCQ needs exactly one correct option, has {len(key.correct)}")
        if n_options is not None and any(i < 0 or i >= n_options for i in key.correct):
            out.append(f"{where}correct option index out of range")
    kv = stored_key_value(key)
    verdict = grade(target, kv if not isinstance(key, ChoiceKey) else set(kv))
    if not verdict.correct:
        out.append(f"{where}the key itself is not accepted: {verdict.message}")
    seen: set[str] = set()
    for m in misconceptions:
        if m.id in seen:
            out.append(f"{where}misconception id {m.id!r} twice")
        seen.add(m.id)
        mv = m.value
        if isinstance(key, ChoiceKey) and isinstance(mv, int):
            mv = {mv}
        v = grade(target, mv)
        if v.correct:
            out.append(f"{where}misconception {m.id!r} (value {mv!r}) is accepted as correct")
        elif v.misconception is None or m.id not in {x.id for x in v.misconceptions}:
            got = v.misconception.id if v.misconception else v.status
            out.append(f"{where}misconception {m.id!r} is diagnosed as {got!r}")
    return out



def audit_problem(p: Problem) -> list[str]:
    """Everything wrong with a problem, as messages (empty when it is sound): the schema, the
    key accepted by :func:`grade`, every misconception rejected *and* diagnosed as itself,
    options distinct, parts consistent with their follow-through functions; for a generated
    problem also that its worked solution states the answer as :func:`answer_text` writes it."""
    from question_bank.problem import DIFFICULTIES, PROBLEM_TYPES

    out: list[str] = []
    if not p.id:
        out.append("empty id")
    if p.type not in PROBLEM_TYPES:
        out.append(f"unknown type {p.type!r}")
        return out
    if p.difficulty not in DIFFICULTIES:
        out.append(f"difficulty {p.difficulty!r} not one of {DIFFICULTIES}")
    if p.marks not in (1, 2):
        out.append(f"marks {p.marks} not 1 or 2")
    for name in ("topic", "statement_md", "statement_text", "solution_md", "solution_text"):
        if not str(getattr(p, name)).strip():
            out.append(f"empty {name}")
    n_opt = len(p.options) if p.options else None
    if p.type in ("mcq", "msq"):
        if len(p.options) < 2:
            out.append(f"{p.type} with {len(p.options)} options")
        if p.type == "mcq" and len(p.options) != 4:
            out.append(f"an MCQ has four options, this one {len(p.options)}")
        if len(p.options_text) != len(p.options):
            out.append("options and options_text differ in length")
        if len(set(p.options)) != len(p.options) or len(set(p.options_text)) != len(p.options_text):
            out.append("two options read the same")
        vals = p.given.get("option_values")
        if vals is not None:
            dec = p.given.get("option_decimals")
            for i in range(len(vals)):
                for j in range(i + 1, len(vals)):
                    a, b = vals[i], vals[j]
                    if dec is not None:
                        same = values_coincide(a, b, nat_key(float(a), dec)) or values_coincide(b, a, nat_key(float(b), dec))
                    else:
                        same = a == b or (isinstance(a, int | float) and isinstance(b, int | float)
                                          and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
                    if same:
                        out.append(f"options ({LETTERS[i]}) and ({LETTERS[j]}) coincide: {a!r} vs {b!r}")
    out.extend(_audit_key("", p.type, p.key, p.misconceptions, p, n_opt))
    ans = answer_text(p.key, p.options_text)
    if p.family is not None and p.type != "matrix" and ans not in p.solution_text:
        out.append(f"the worked solution does not state the answer {ans!r}")
    if p.parts:
        labels = [pt.label for pt in p.parts]
        if len(set(labels)) != len(labels):
            out.append("duplicate part labels")
        keys: dict[str, Any] = {}
        for pt in p.parts:
            out.extend(_audit_key(f"part ({pt.label}): ", pt.type, pt.key, pt.misconceptions, pt, None))
            if pt.follow is not None:
                try:
                    fk = pt.follow(dict(keys))
                except Exception as e:  # noqa: BLE001
                    out.append(f"part ({pt.label}): follow() fails on the keyed earlier answers: {e}")
                else:
                    if not grade(fk, stored_key_value(pt.key)).correct:
                        out.append(f"part ({pt.label}): follow() on the keyed earlier answers disagrees with the key")
            keys[pt.label] = stored_key_value(pt.key)
        last = p.parts[-1]
        if last.type != p.type or stored_key_value(last.key) != stored_key_value(p.key):
            out.append("Problem.key/type must be the last part's key/type")
    return out
