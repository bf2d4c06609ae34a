"""A sheet read back (``qkv sheet --from``) keeps no key that its problem no longer earns (issue 27).

A teacher edits a sheet's JSON; what qkv prints from it must still be right. For every question
(named as the sheet numbers it, ``Q11``), :func:`reconcile` compares the problem of the file with
the one qkv itself builds:

- **Generated** (``family``, ``seed``, ``difficulty``, ``given``): the family draws the problem
  again. When ``given`` is what that draw has, the file's statement, key and solution must still
  follow from it: a key, misconception or option that differs is refused, naming the field; a
  statement, option, prompt or solution may be reworded but must keep the numbers it had (the
  multiset of the figures it writes) and be edited in both of its forms (``_md`` and ``_text``).
  When ``given`` was edited, qkv rebuilds the problem from the edited parameters: it looks for
  the draw of the same family and difficulty whose parameters are exactly ``given`` (seeds 0 to
  :data:`SEARCH_SEEDS`; the problem takes that draw's seed and id) and takes its statement, key,
  worked solution, options and misconceptions, so that the key is what the family computes
  (the way a PrairieLearn question's parameters drive its answer). Parameters that no draw of
  the family has (a size outside the family's range, two sizes that must change together) are
  refused, naming the closest draw's differing parameter. The file's old text, or text that
  already carries the new figures, is replaced by the rebuilt one (a note says so); text whose
  figures follow neither is refused.
- **Curated** (``family`` null): the item of qkv's bank with that id is built again; a
  statement, option, part prompt or key that differs from it is refused, since its key was
  computed for the original statement. A teacher who means the change marks the key as their
  own with ``"key_source": "teacher"`` in the problem: the question is then printed as written
  (the structural rules still hold), and so is a question of the teacher's own that is no item
  of the bank. ``"key_source": "teacher"`` works the same way for a generated problem.

In every case ``answer`` must agree with ``key`` (it is the key's plain value), checked in
:mod:`drills.sheets.jsonfmt`.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from drills.output import jsonable
from question_bank.problem import Problem, key_to_json

#: How many seeds :func:`find_draw` tries, and for how long at most (seconds).
SEARCH_SEEDS = 1000
SEARCH_SECONDS = 3.0
_NUM = re.compile(r"\d+(?:\.\d+)?")
TEACHER = "teacher"


class ReconcileError(ValueError):
    """One line: the question (``Q11``), the field and what is wrong."""


def numbers(s: str) -> Counter:
    """The figures a text writes (``768``, ``0.25``), as a multiset: a rewording keeps them."""
    return Counter(_NUM.findall(s))


def _plain(x: Any) -> Any:
    """Sets as sorted lists (an MSQ mistake's value is a set of options; JSON writes it as a list)."""
    if isinstance(x, set | frozenset):
        return sorted(_plain(v) for v in x)
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def _canon(x: Any) -> str:
    return json.dumps(jsonable(_plain(x)), sort_keys=True, ensure_ascii=False)


def _mis(ms: list) -> str:
    return _canon([(m.id, m.label, m.feedback, m.value) for m in ms])


def find_draw(fam: Any, difficulty: str, given: dict[str, Any]) -> tuple[Problem | None, Problem | None]:
    """``(the draw of fam at difficulty whose given is exactly given, None)``, or ``(None, the
    closest draw)`` (most parameters equal) when no seed up to :data:`SEARCH_SEEDS` has them."""
    want = {k: _canon(v) for k, v in given.items()}
    best, best_score = None, -1
    start = time.monotonic()
    for seed in range(SEARCH_SEEDS):
        p = fam.generate(seed, difficulty)
        have = {k: _canon(v) for k, v in p.given.items()}
        if have == want:
            return p, None
        score = sum(have.get(k) == v for k, v in want.items()) - len(set(have) ^ set(want))
        if score > best_score:
            best, best_score = p, score
        if time.monotonic() - start > SEARCH_SECONDS:
            break
    return None, best


def replay_with(fam: Any, seed: int, difficulty: str, old: dict[str, Any], new: dict[str, Any]) -> Problem | None:
    """The family's problem for ``seed`` with the edited parameters ``new``: the draw is replayed
    with the choice that gave an edited parameter's old value replaced by its new value
    (:class:`question_bank.family.Trace`). An edited parameter that is no choice of the draw
    (computed from others, as d_ff = 4·d_model) is left to follow; the caller checks that the
    replay's parameters are the edited ones. ``None`` when no replay gives them."""
    from question_bank.family import Trace

    trace = Trace()
    fam.generate(seed, difficulty, trace)
    log = [_canon(v) for v in trace.log]

    def run(subs: dict[int, Any]) -> Problem | None:
        try:
            return fam.replay(seed, difficulty, Trace(subs=dict(subs), redraw=trace.redraw))
        except Exception:  # noqa: BLE001 - a value the family cannot take: refused by the caller
            return None

    subs: dict[int, Any] = {}
    p: Problem | None = None
    for k in (k for k in new if _canon(old.get(k)) != _canon(new[k])):
        at = [i for i, v in enumerate(log) if v == _canon(old.get(k)) and i not in subs]
        for i in at:  # the choice that gave the old value (the first whose replacement gives the new one)
            q = run({**subs, i: new[k]})
            if q is not None and _canon(q.given.get(k)) == _canon(new[k]):
                subs[i], p = new[k], q
                break
    return p if p is not None and subs else None


def _given_follows(rebuilt: dict[str, Any], old: dict[str, Any], edited: dict[str, Any]) -> bool:
    """Every parameter of the rebuilt draw is the edited one, or one the teacher left as it was
    (computed from the edited ones: d_ff = 4·d_model follows d_model)."""
    if set(rebuilt) != set(edited):
        return False
    return all(_canon(rebuilt[k]) == _canon(edited[k]) or _canon(edited[k]) == _canon(old.get(k)) for k in rebuilt)


def _short(v: Any, n: int = 60) -> str:
    s = _canon(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _diff_numbers(new: str, old: str) -> str:
    extra = sorted((numbers(new) - numbers(old)).elements(), key=lambda x: (len(x), x))
    gone = sorted((numbers(old) - numbers(new)).elements(), key=lambda x: (len(x), x))
    bits = []
    if extra:
        bits.append("writes " + ", ".join(extra[:4]))
    if gone:
        bits.append("where qkv writes " + ", ".join(gone[:4]))
    return " ".join(bits) or "changes its figures"


_TEACHER_HINT = 'or set "key_source": "teacher" to make the key your own'


class _Checker:
    def __init__(self, qn: str, obj: dict[str, Any], orig: Problem, base: Problem, rebuilt: bool, what: str):
        self.qn, self.obj, self.orig, self.base, self.rebuilt, self.what = qn, obj, orig, base, rebuilt, what

    def fail(self, field: str, msg: str) -> None:
        raise ReconcileError(f"{self.qn} {field}: {msg}")

    def text(self, field: str, file_v: str, orig_v: str, base_v: str) -> str:
        """The text to print for one field (see the module docstring)."""
        if file_v == orig_v:
            return base_v
        if not self.rebuilt:
            if numbers(file_v) == numbers(orig_v):
                return file_v  # reworded, the same figures
            self.fail(field, f"its figures no longer follow from its parameters (it {_diff_numbers(file_v, orig_v)}; "
                             f"{self.what}): to change the problem, edit given and qkv rebuilds statement, key and "
                             f"solution; {_TEACHER_HINT}")
        if numbers(file_v) == numbers(base_v):
            return base_v
        self.fail(field, f"its figures follow neither the old nor the edited parameters (it "
                         f"{_diff_numbers(file_v, base_v)}): leave it as it was, qkv rewrites it from given")
        return ""  # unreachable

    def pair(self, field_md: str, field_text: str, md: str, text: str, orig_md: str, orig_text: str) -> None:
        """A statement is written twice (Markdown for print, plain text for the terminal): one
        edited without the other would print two different questions."""
        if self.rebuilt:
            return
        if (md != orig_md) != (text != orig_text):
            edited, kept = (field_md, field_text) if md != orig_md else (field_text, field_md)
            self.fail(kept, f"{edited} was edited but {kept} was not: edit both the same way")

    def texts(self, field: str, file_v: list[str], orig_v: list[str], base_v: list[str]) -> list[str]:
        if len(file_v) != len(orig_v):
            self.fail(field, f"{len(file_v)} entries, but the problem has {len(orig_v)}: {_TEACHER_HINT}")
        if self.rebuilt and len(base_v) != len(orig_v):
            return list(base_v) if file_v == orig_v else self.fail(field, "leave it as it was, qkv rewrites it from given")
        return [self.text(f"{field}[{i}]", f, o, b) for i, (f, o, b) in enumerate(zip(file_v, orig_v, base_v, strict=True))]

    def exact(self, field: str, file_v: list[str], orig_v: list[str], base_v: list[str]) -> list[str]:
        if file_v == orig_v or (self.rebuilt and file_v == base_v):
            return list(base_v)
        k = next((i for i, (a, b) in enumerate(zip(file_v, orig_v, strict=False)) if a != b), min(len(file_v), len(orig_v)))
        self.fail(f"{field}[{k}]", f"edited, but the key names the options by position and {self.what.split(' with ')[0]} "
                                   f"wrote them: restore them; {_TEACHER_HINT}")
        return []  # unreachable

    def same(self, field: str, file_v: str, orig_v: str, base_v: str, shown: str, computed: str) -> None:
        if file_v == orig_v or (self.rebuilt and file_v == base_v):
            return
        self.fail(field, f"{shown} does not follow from its parameters ({self.what} gives {computed}): edit given, "
                         f"and qkv recomputes it; {_TEACHER_HINT}")


def _key_shown(k: Any) -> str:
    from question_bank.grading import answer_text

    return answer_text(k)


def _generated(qn: str, p: Problem, obj: dict[str, Any], notes: list[str]) -> Problem:
    from question_bank.family import all_families

    fams = all_families()
    if p.family not in fams:
        raise ReconcileError(f"{qn} family: no family {p.family!r} in qkv; {_TEACHER_HINT}")
    fam = fams[p.family]
    if p.difficulty not in fam.levels:
        raise ReconcileError(f"{qn} difficulty: family {fam.id} has {', '.join(fam.levels)}, not {p.difficulty!r}")
    if not isinstance(p.seed, int) or isinstance(p.seed, bool):
        raise ReconcileError(f"{qn} seed: a generated problem has an integer seed, not {p.seed!r}")
    orig = fam.generate(p.seed, p.difficulty)
    if p.id != orig.id and not p.id.startswith(orig.id + "~"):
        raise ReconcileError(f"{qn} id: {p.id!r}, but family, difficulty and seed name {orig.id!r}")
    rebuilt = _canon(p.given) != _canon(orig.given)
    base = orig
    if rebuilt:
        found = replay_with(fam, p.seed, p.difficulty, orig.given, p.given)
        closest = None
        if found is not None and not _given_follows(found.given, orig.given, p.given):
            closest, found = found, None
        if found is None:
            found, searched = find_draw(fam, p.difficulty, p.given)
            closest = closest or searched
        if found is None:
            diff = ""
            if closest is not None:
                bad = [k for k in p.given if _canon(closest.given.get(k)) != _canon(p.given[k])]
                diff = (f" (the closest draw, seed {closest.seed}, differs in "
                        + ", ".join(f"{k} = {_short(closest.given.get(k), 30)}" for k in bad[:3]) + ")")
            raise ReconcileError(f"{qn} given: family {fam.id} at {p.difficulty} draws no problem with these "
                                 f"parameters{diff}: use values the family draws, edited together; {_TEACHER_HINT}")
        # a problem of its own: its id names the parameters too (an Anki note, a Moodle question of
        # its own), and reading the sheet again rebuilds the same problem
        import hashlib

        tag = hashlib.sha256(_canon(found.given).encode()).hexdigest()[:8]
        base = replace(found, id=f"{found.id}~{tag}" if found.id == orig.id else found.id)
    what = f"{fam.id} with {_short(p.given, 80)}"
    c = _Checker(qn, obj, orig, base, rebuilt, what)
    c.pair("statement_md", "statement_text", p.statement_md, p.statement_text, orig.statement_md, orig.statement_text)
    c.pair("solution_md", "solution_text", p.solution_md, p.solution_text, orig.solution_md, orig.solution_text)
    statement_md = c.text("statement_md", p.statement_md, orig.statement_md, base.statement_md)
    statement_text = c.text("statement_text", p.statement_text, orig.statement_text, base.statement_text)
    solution_md = c.text("solution_md", p.solution_md, orig.solution_md, base.solution_md)
    solution_text = c.text("solution_text", p.solution_text, orig.solution_text, base.solution_text)
    explanation = c.text("explanation", p.explanation, orig.explanation, base.explanation)
    # options: as the family wrote them (a reworded option could be a reordered one, and the key names
    # options by position); a stale one (the old draw's) is replaced by the rebuilt one
    options = c.exact("options", p.options, orig.options, base.options)
    options_text = c.exact("options_text", p.options_text, orig.options_text, base.options_text)
    hints = c.texts("hints", p.hints, orig.hints, base.hints)
    c.same("key", _canon(key_to_json(p.key)), _canon(key_to_json(orig.key)), _canon(key_to_json(base.key)),
           _key_shown(p.key), _key_shown(base.key))
    c.same("misconceptions", _mis(p.misconceptions), _mis(orig.misconceptions), _mis(base.misconceptions),
           "an edited mistake", "the mistakes it computes")
    if len(p.parts) != len(orig.parts):
        c.fail("parts", f"{len(p.parts)} parts, but the problem has {len(orig.parts)}; {_TEACHER_HINT}")
    parts = []
    for k, (pt, opt, bpt) in enumerate(zip(p.parts, orig.parts, base.parts, strict=False)):
        f = f"parts[{k}]"
        if pt.label != opt.label or pt.type != opt.type:
            c.fail(f"{f}.label", f"part ({pt.label}) {pt.type} is not the problem's part ({opt.label}) {opt.type}")
        c.pair(f"{f}.prompt_md", f"{f}.prompt_text", pt.prompt_md, pt.prompt_text, opt.prompt_md, opt.prompt_text)
        c.same(f"{f}.key", _canon(key_to_json(pt.key)), _canon(key_to_json(opt.key)), _canon(key_to_json(bpt.key)),
               _key_shown(pt.key), _key_shown(bpt.key))
        c.same(f"{f}.misconceptions", _mis(pt.misconceptions), _mis(opt.misconceptions), _mis(bpt.misconceptions),
               "an edited mistake", "the mistakes it computes")
        parts.append(replace(bpt, prompt_md=c.text(f"{f}.prompt_md", pt.prompt_md, opt.prompt_md, bpt.prompt_md),
                             prompt_text=c.text(f"{f}.prompt_text", pt.prompt_text, opt.prompt_text, bpt.prompt_text)))
    if rebuilt:
        changed = [k for k in base.given if _canon(orig.given.get(k)) != _canon(base.given[k])]
        was = ", ".join(f"{k} {_short(orig.given.get(k), 20)} → {_short(base.given[k], 20)}" for k in changed[:4])
        keys = "; ".join(f"{lab}key {_key_shown(a)} → {_key_shown(b)}" for lab, a, b in
                         [("", orig.key, base.key)] + [(f"({x.label}) ", x.key, y.key) for x, y in zip(orig.parts, base.parts, strict=False)]
                         if _canon(key_to_json(a)) != _canon(key_to_json(b)))
        notes.append(f"{qn} rebuilt from its edited parameters ({was}) as {base.id}: {keys or 'key unchanged'}; "
                     "statement and worked solution rewritten by the family")
    return replace(base, statement_md=statement_md, statement_text=statement_text, solution_md=solution_md,
                   solution_text=solution_text, explanation=explanation, options=options, options_text=options_text,
                   hints=hints, parts=parts, marks=p.marks)


def _curated(qn: str, p: Problem, notes: list[str]) -> Problem:
    from question_bank import curated as mod

    ids = {it.id for it in mod.index(include_study_only=True)}
    if p.id not in ids:
        raise ReconcileError(f"{qn} id: {p.id!r} is no item of qkv's bank, so qkv cannot vouch for its key; a "
                             f'question of your own needs "key_source": "teacher"')
    item = mod.build(p.id)
    hint = (f"its key was computed for the bank's item {p.id}: restore the field, {_TEACHER_HINT} "
            "(the sheet then prints your statement and your key as written)")

    def check(field: str, a: Any, b: Any) -> None:
        if _canon(a) != _canon(b):
            raise ReconcileError(f"{qn} {field}: changed from the bank's item; {hint}")

    check("statement_md", p.statement_md, item.statement_md)
    check("statement_text", p.statement_text, item.statement_text)
    check("options", p.options, item.options)
    check("options_text", p.options_text, item.options_text)
    check("key", key_to_json(p.key), key_to_json(item.key))
    check("given", p.given, item.given)
    if len(p.parts) != len(item.parts):
        raise ReconcileError(f"{qn} parts: changed from the bank's item; {hint}")
    for k, (pt, it) in enumerate(zip(p.parts, item.parts, strict=True)):
        check(f"parts[{k}].prompt_md", pt.prompt_md, it.prompt_md)
        check(f"parts[{k}].prompt_text", pt.prompt_text, it.prompt_text)
        check(f"parts[{k}].key", key_to_json(pt.key), key_to_json(it.key))
    for field in ("solution_md", "solution_text"):
        mine, theirs = getattr(p, field), getattr(item, field)
        if mine != theirs and numbers(mine) != numbers(theirs):
            raise ReconcileError(f"{qn} {field}: its figures differ from the bank's item (it "
                                 f"{_diff_numbers(mine, theirs)}); reword it with the same figures, {_TEACHER_HINT}")
    if _mis(p.misconceptions) != _mis(item.misconceptions):
        raise ReconcileError(f"{qn} misconceptions: changed from the bank's item; {hint}")
    return replace(item, solution_md=p.solution_md, solution_text=p.solution_text, marks=p.marks,
                   explanation=p.explanation, hints=list(p.hints))


def _teacher(qn: str, p: Problem, notes: list[str]) -> Problem:
    """A key the teacher owns: printed as written (the structural rules of the format still hold),
    but a statement edited in one of its two forms only is still refused when qkv knows the original."""
    orig = _original(p)
    if orig is not None:
        for md, text in (("statement_md", "statement_text"), ("solution_md", "solution_text")):
            if (getattr(p, md) != getattr(orig, md)) != (getattr(p, text) != getattr(orig, text)):
                edited, kept = (md, text) if getattr(p, md) != getattr(orig, md) else (text, md)
                raise ReconcileError(f"{qn} {kept}: {edited} was edited but {kept} was not: edit both the same way")
    notes.append(f"{qn} {p.id}: key set by the teacher (key_source), printed as written, not checked by qkv")
    return p


def _original(p: Problem) -> Problem | None:
    """The problem qkv itself has under this id (the family's draw, the bank's item), or None."""
    try:
        if p.family is None:
            from question_bank import curated as mod

            return mod.build(p.id) if p.id in {it.id for it in mod.index(include_study_only=True)} else None
        from question_bank.family import all_families

        fam = all_families().get(p.family)
        if fam is None or p.difficulty not in fam.levels or not isinstance(p.seed, int):
            return None
        return fam.generate(p.seed, p.difficulty)
    except Exception:  # noqa: BLE001 - an id qkv cannot rebuild: nothing to compare with
        return None


def reconcile(qn: str, p: Problem, obj: dict[str, Any], notes: list[str]) -> Problem:
    """The problem to print for question ``qn`` (``"Q11"``) read from ``obj`` (see the module
    docstring); notes for the teacher are appended to ``notes``; raises :class:`ReconcileError`."""
    if p.key_source == TEACHER:
        return _teacher(qn, p, notes)
    if p.family is None:
        return _curated(qn, p, notes)
    return _generated(qn, p, obj, notes)
