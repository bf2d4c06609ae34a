"""Problem families: seeded generators, and the registry ``FAMILIES`` (id -> :class:`Family`).

A family is a function that draws its numbers from a :class:`Draw` and returns a
:class:`~question_bank.problem.Problem`; the :func:`family` decorator registers it::

    @family("softmax.temperature", topic="attention", types=("nat",), title="Softmax with a temperature")
    def softmax_temperature(d: Draw) -> Problem:
        x = [d.rng.randint(-2, 3) for _ in range(3)]
        ...
        return d.problem(type="nat", statement=doc, key=nat_key(p, 2), solution=sol, ...)

Determinism: ``Family.generate(seed, difficulty)`` seeds ``random.Random`` with the string
``"<family id>:<difficulty>:<seed>"`` (a string seed is hashed with SHA-512 by ``random``, the
same on every platform and Python ≥ 3.2), and :meth:`Draw.np` gives a NumPy Generator
derived from the same draw. No family may touch global random state. The same
``(family, seed, difficulty)`` therefore always gives the same problem, and its id
``"<family id>/<difficulty>/<seed>"`` names it.

``FAMILIES`` is filled when ``question_bank.families`` is imported (each topic module
registers its families at import); :func:`all_families` does that import. Families import
the solver's SymPy path only inside their generator, so importing the registry is cheap.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import CodeType, FunctionType
from typing import Any

from question_bank.grading import LETTERS, values_coincide
from question_bank.problem import (
    DIFFICULTIES,
    PROBLEM_TYPES,
    ChoiceKey,
    Key,
    Misconception,
    Part,
    Problem,
    Wrong,
)
from question_bank.render import Doc, latex_to_text

__all__ = [
    "FAMILIES",
    "Family",
    "Draw",
    "family",
    "all_families",
    "get_family",
    "parse_problem_id",
    "numeric_choices",
    "concept_choices",
    "Wrong",
    "keep_distinct",
    "safe_call",
]

FAMILIES: dict[str, Family] = {}
#: How many times Family.generate draws again when a key is a blind guess (issue 12) or a told-apart mistake gives
#: it. A draw that succeeds sooner is the same whatever this is (the loop stops at the first good draw): 8 left
#: ``paged.kv_blocks`` medium seed 49 with a request of exactly 165 blocks, where forgetting the blocks gives the key.
_REDRAWS = 16


class Kept(list):
    """The mistakes :func:`keep_distinct` keeps (a list of :class:`Misconception`), and the ids of those it left out
    because they give the key (``coinciding``: a student who makes one would be marked right). :meth:`Family.generate`
    draws again when one of the family's ``told_apart`` is among them in the problem it returns."""

    coinciding: tuple[str, ...] = ()


class _Tracing(random.Random):
    """A ``random.Random`` whose ``randint``/``uniform`` results are logged in the draw's trace
    and may be replaced (see :class:`Trace`); the stream itself is unchanged."""

    def __init__(self, seed: str, trace: Trace | None):
        super().__init__(seed)
        self.trace = trace

    def randint(self, a: int, b: int) -> int:
        v = super().randint(a, b)
        return self.trace.value(v) if self.trace is not None else v

    def uniform(self, a: float, b: float) -> float:
        v = super().uniform(a, b)
        return self.trace.value(v) if self.trace is not None else v


@dataclass
class Trace:
    """What a draw chose (issue 27: a teacher edits a generated problem's parameters): every value of
    :meth:`Draw.pick`, ``rng.randint`` and ``rng.uniform`` in order (``log``), and replacements
    by position (``subs``: the i-th choice returns this value instead). Replaying a draw with the
    choice that gave ``d_model = 768`` replaced by 1024 builds the family's problem for 1024: its
    statement, key and worked solution, computed as for any draw."""

    subs: dict[int, Any] = field(default_factory=dict)
    log: list[Any] = field(default_factory=list)
    redraw: int = 0  # the blind-key redraw (Family.generate) the problem came from

    def value(self, v: Any) -> Any:
        i = len(self.log)
        if i in self.subs:
            v = self.subs[i]
        self.log.append(v)
        return v


class Draw:
    """The random draw of one problem, and the helper that assembles it.

    ``rng`` is a ``random.Random``; :meth:`np` a NumPy Generator seeded from it (created on
    first use, so families that need no NumPy do not import it)."""

    def __init__(self, fam: Family, seed: int, difficulty: str, redraw: int = 0, trace: Trace | None = None):
        self.family = fam
        self.seed = int(seed)
        self.difficulty = difficulty
        # ``redraw`` > 0: Family.generate drawing again because the first draw's key was a blind guess
        suffix = f":redraw{redraw}" if redraw else ""
        self.trace = trace
        self.rng = _Tracing(f"{fam.id}:{difficulty}:{int(seed)}{suffix}", trace)
        self._np = None

    @property
    def level(self) -> int:
        """0 for easy, 1 for medium, 2 for hard."""
        return DIFFICULTIES.index(self.difficulty)

    def np(self):
        if self._np is None:
            import numpy as np

            self._np = np.random.default_rng(self.rng.getrandbits(64))
        return self._np

    def pick(self, seq: Sequence[Any]) -> Any:
        v = seq[self.rng.randrange(len(seq))]
        return self.trace.value(v) if self.trace is not None else v

    def log_uniform(self, lo: float, hi: float, sig: int | None = 3) -> float:
        """A value drawn log-uniformly in [lo, hi], rounded to ``sig`` significant figures (None: not
        rounded). Issue 39: a key that is a product of figures drawn this way has a flat density in log
        space, so an option one slip away (×2, ×4/3) is as likely a key as the key itself; a linear
        draw puts the mass at the top of its range, and slips above it are never keys."""
        # the untraced stream: the trace logs the rounded value, the one a teacher's edit replaces
        v = 10 ** random.Random.uniform(self.rng, math.log10(lo), math.log10(hi))
        if sig is not None:
            v = float(f"{v:.{sig}g}")
        return self.trace.value(v) if self.trace is not None else v

    def problem(
        self,
        *,
        type: str,
        statement: Doc,
        key: Key,
        solution: Doc,
        given: dict[str, Any] | None = None,
        marks: int | None = None,
        options: list[str] | None = None,
        options_text: list[str] | None = None,
        misconceptions: Sequence[Misconception | Wrong] = (),
        parts: Sequence[Part] = (),
        hints: Sequence[str] = (),
        explanation: str = "",
        tags: Sequence[str] = (),
    ) -> Problem:
        """Assemble the Problem, filling id, family, seed, topic, tags and difficulty."""
        if options is not None and options_text is None:
            options_text = [latex_to_text(o) for o in options]
        if "Answer" not in solution.text:  # issue 21: every worked solution ends with its answer line
            from question_bank.grading import answer_text

            solution.p(f"**Answer: {answer_text(key, options_text)}**")
        mis = Kept(m.misconception() if isinstance(m, Wrong) else m for m in misconceptions)
        mis.coinciding = getattr(misconceptions, "coinciding", ())  # what keep_distinct left out (Family.generate)
        return Problem(
            id=f"{self.family.id}/{self.difficulty}/{self.seed}",
            family=self.family.id,
            seed=self.seed,
            topic=self.family.topic,
            tags=tuple(dict.fromkeys((*self.family.tags, *tags))),
            difficulty=self.difficulty,
            marks=marks if marks is not None else (2 if self.level >= 1 and self.family.marks == 2 else self.family.marks),
            type=type,  # type: ignore[arg-type]
            statement_md=statement.md,
            statement_text=statement.text,
            key=key,
            solution_md=solution.md,
            solution_text=solution.text,
            given=dict(given or {}),
            options=list(options or []),
            options_text=list(options_text or []),
            misconceptions=mis,
            parts=list(parts),
            source="generated",
            source_label=self.family.title,
            hints=list(hints),
            explanation=explanation,
        )


@dataclass(frozen=True)
class Family:
    """A registered generator. ``types`` lists the problem types it can produce; ``source``
    names the seed sections it drills (for reference; generated problems say "generated")."""

    id: str
    topic: str
    title: str
    types: tuple[str, ...]
    build: Callable[[Draw], Problem] = field(repr=False)
    tags: tuple[str, ...] = ()
    difficulties: tuple[str, ...] = DIFFICULTIES
    marks: int = 1
    source: str = ""
    description: str = ""
    # issue 12: why a key that a blind guess gives (0, 1, a number of the statement) is the point of
    # this family; empty (the default): generate() draws again when that happens.
    blind_key_ok: str = ""
    # issue 22: why a level may hold fewer than 50 distinct problems in 1,000 draws (a small table of
    # real chips or models; then the asked quantity varies); empty: the variety check applies.
    small_pool: str = ""
    # issue 39: the levels a test-wise student games (question_bank.choice_record): not offered (not
    # drawn by quiz, exam or sheet), still generated for ``bank show``, validation and the record.
    withdrawn: tuple[str, ...] = ()
    # the mistakes the family's lesson is about: a draw in which one of them gives the key (ignoring the temperature
    # changes no count, forgetting √dₖ changes nothing at dₖ = 1) is drawn again, as a blind-guess key is
    told_apart: tuple[str, ...] = ()
    # issue 39: the only mistakes (``Wrong`` ids) its numeric-MCQ view crosses (``question_bank.numeric_mcq``), per
    # level: ``(level, ids)`` pairs, in the order the levels were declared; a level not named crosses every mistake of
    # its draw. Declared with ``@family(..., view_slips=...)``, the reason beside it in the family's module.
    view_slips: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def slips_in_view(self, level: str) -> tuple[str, ...]:
        """The mistakes the MCQ view of this family crosses at ``level`` (empty: every mistake of the draw)."""
        return next((ids for lv, ids in self.view_slips if lv == level), ())

    @property
    def levels(self) -> tuple[str, ...]:
        """Every level the family generates: the offered ``difficulties`` and the ``withdrawn`` ones."""
        return tuple(d for d in DIFFICULTIES if d in self.difficulties or d in self.withdrawn) + tuple(
            d for d in (*self.difficulties, *self.withdrawn) if d not in DIFFICULTIES)

    @property
    def default_difficulty(self) -> str:
        offered = self.difficulties or self.levels
        return "medium" if "medium" in offered else offered[0]

    def generate(self, seed: int, difficulty: str | None = None, trace: Trace | None = None) -> Problem:
        """The problem for ``seed`` at ``difficulty`` (default: medium, or the family's only
        level); the same arguments always give the same problem. ``trace`` records the draw's
        choices (:class:`Trace`)."""
        diff = difficulty or self.default_difficulty
        if diff not in self.levels:
            raise ValueError(f"family {self.id} has difficulties {', '.join(self.levels)}, not {diff!r}")
        # issue 12: a NAT/integer key that typing 0, 1 or a number of the statement would win is drawn
        # again (deterministically: the redraw's random stream is named by the seed and the attempt),
        # unless the family declares that such a key is its point (``blind_key_ok``).
        from question_bank.blind_keys import blind_key_guess

        for redraw in range(_REDRAWS + 1):
            if trace is not None:
                trace.log.clear()
                trace.redraw = redraw
            p = self.build(Draw(self, seed, diff, redraw, trace))
            if (self.blind_key_ok or blind_key_guess(p) is None) and not coinciding(p) & set(self.told_apart):
                break
        if p.type not in self.types:
            raise AssertionError(f"family {self.id} produced type {p.type}, declared {self.types}")
        return p

    def replay(self, seed: int, difficulty: str, trace: Trace) -> Problem:
        """The draw ``trace.redraw`` of ``seed`` at ``difficulty`` again, with ``trace.subs``
        replacing its choices (see :class:`Trace`); no blind-key redraw."""
        trace.log.clear()
        p = self.build(Draw(self, seed, difficulty, trace.redraw, trace))
        if p.type not in self.types:
            raise AssertionError(f"family {self.id} produced type {p.type}, declared {self.types}")
        return p

    def self_test(self, seeds: Sequence[int] = range(10)) -> list[str]:
        """Generate each seed at each difficulty and audit it (schema, key accepted,
        misconceptions rejected and diagnosed, options distinct); returns the problems found."""
        from question_bank.grading import audit_problem

        problems: list[str] = []
        for diff in self.levels:
            for s in seeds:
                try:
                    p = self.generate(s, diff)
                except Exception as e:  # noqa: BLE001 - reported, not raised
                    problems.append(f"{self.id}/{diff}/{s}: generation failed: {type(e).__name__}: {e}")
                    continue
                problems.extend(f"{p.id}: {msg}" for msg in audit_problem(p))
        return problems


def offered_levels(fid: str, types: Sequence[str], levels: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(offered, withdrawn)``: a family that offers MCQs or MSQs loses the levels its record in
    :mod:`question_bank.choice_record` withdraws; any other family offers every level."""
    levels = tuple(levels)
    if not set(types) & {"mcq", "msq"}:
        return levels, ()
    from question_bank.choice_record import withdrawn

    out = withdrawn(fid, levels)
    return tuple(lv for lv in levels if lv not in out), out


def family(
    id: str,
    *,
    topic: str,
    title: str,
    types: Sequence[str],
    tags: Sequence[str] = (),
    difficulties: Sequence[str] = DIFFICULTIES,
    marks: int = 1,
    source: str = "",
    blind_key_ok: str = "",
    small_pool: str = "",
    told_apart: Sequence[str] = (),
    view_slips: Sequence[str] | Mapping[str, Sequence[str]] = (),
) -> Callable[[Callable[[Draw], Problem]], Family]:
    """Register the decorated ``build(draw) -> Problem`` as family ``id``.

    ``told_apart``: the mistakes a draw may not share its key with (:attr:`Family.told_apart`). Refused (ValueError)
    when an id is spelled nowhere in the family's code, as for ``view_slips``: a typo would tell nothing apart.

    ``view_slips``: the only mistakes its numeric-MCQ view crosses (:attr:`Family.view_slips`), at every level (a
    sequence of ``Wrong`` ids) or at the levels named (a mapping level -> ids). Refused (ValueError) when an id is
    spelled nowhere in the family's code (:func:`spelled`: a typo would make the view cross nothing) or a level is
    not one of the family's."""
    for t in types:
        if t not in PROBLEM_TYPES:
            raise ValueError(f"unknown problem type {t!r}")
    if isinstance(told_apart, str):
        raise TypeError(f"family {id!r}: told_apart takes a sequence of mistake ids, not a string")
    if isinstance(view_slips, str) or any(isinstance(v, str) for v in (
            view_slips.values() if isinstance(view_slips, Mapping) else ())):
        raise TypeError(f"family {id!r}: view_slips takes a sequence of mistake ids, or a mapping level -> ids, not a string")
    slips_by_level = (tuple((lv, tuple(ids)) for lv, ids in view_slips.items()) if isinstance(view_slips, Mapping)
                      else tuple((lv, tuple(view_slips)) for lv in difficulties) if view_slips else ())

    def deco(fn: Callable[[Draw], Problem]) -> Family:
        if id in FAMILIES:
            raise ValueError(f"family {id!r} registered twice")
        if slips_by_level or told_apart:
            _check_declared_ids(id, fn, difficulties, slips_by_level, tuple(told_apart))
        offered, withdrawn = offered_levels(id, types, difficulties)
        fam = Family(
            id=id, topic=topic, title=title, types=tuple(types), build=fn, tags=tuple(tags),
            difficulties=offered, marks=marks, source=source,
            description=(fn.__doc__ or "").strip().split("\n\n")[0], blind_key_ok=blind_key_ok,
            small_pool=small_pool, withdrawn=withdrawn, told_apart=tuple(told_apart), view_slips=slips_by_level,
        )
        FAMILIES[id] = fam
        return fam

    return deco


def spelled(fn: Callable[..., Any]) -> set[str]:
    """Every string constant of ``fn``'s code: its own, that of the code nested in it (inner functions, lambdas,
    comprehensions), and that of the functions of its module it names, with the strings of the module-level
    constants (strings, tuples, dicts) they name, transitively, among those defined when it is called. A family's
    mistake ids are among them (``Wrong("gb_for_gib", ...)``, ``Wrong(*_SPARSE, ...)``); read from the compiled
    code, no source file is parsed."""
    found: set[str] = set()
    names = fn.__globals__
    seen: set[int] = set()
    stack: list[Any] = [fn.__code__]

    def strings(v: Any) -> None:
        if isinstance(v, str):
            found.add(v)
        elif isinstance(v, tuple | list | frozenset | set):
            for x in v:
                strings(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                strings(k)
                strings(x)

    while stack:
        code = stack.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        for c in code.co_consts:
            if isinstance(c, CodeType):
                stack.append(c)
            else:
                strings(c)
        for name in code.co_names:
            v = names.get(name)
            if isinstance(v, FunctionType):
                if v.__module__ == fn.__module__:
                    stack.append(v.__code__)
            elif isinstance(v, str | tuple | list | frozenset | set | dict):
                strings(v)
    return found


def _check_declared_ids(fid: str, fn: Callable[..., Any], levels: Sequence[str],
                        slips: tuple[tuple[str, tuple[str, ...]], ...], told_apart: tuple[str, ...]) -> None:
    """ValueError when a level of ``view_slips`` is not one of the family's, names no mistake, or a mistake id of
    ``view_slips`` or ``told_apart`` is spelled nowhere in its code (:func:`spelled`): a typo fails at import, not as a
    view that crosses nothing or a draw that tells nothing apart."""
    known = spelled(fn)

    def refuse_unknown(what: str, ids: Sequence[str]) -> None:
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValueError(f"family {fid!r}: {what} names {', '.join(map(repr, unknown))}, which is no mistake "
                             f"its code makes (spelled nowhere in its build function nor in the helpers of its module "
                             f"defined before it)")

    for lv, ids in slips:
        if lv not in levels:
            raise ValueError(f"family {fid!r}: view_slips names level {lv!r}, not one of {', '.join(levels)}")
        if not ids:
            raise ValueError(f"family {fid!r}: view_slips names no mistake at {lv}")
        refuse_unknown("view_slips", ids)
    refuse_unknown("told_apart", told_apart)


#: Set while ``question_bank.family_index`` imports ``question_bank.families`` without its modules.
_partial_import = False


def all_families() -> dict[str, Family]:
    """The registry, after importing every family module."""
    import question_bank.families

    question_bank.families.load_all()  # a no-op once done (the package's import does it, unless partial)
    return FAMILIES


def get_family(fid: str) -> Family:
    fams = all_families()
    if fid not in fams:
        raise KeyError(f"no family {fid!r}")
    return fams[fid]


def parse_problem_id(pid: str) -> tuple[str, str | None, int | None]:
    """``"fam"`` -> (fam, None, None); ``"fam/7"`` -> (fam, None, 7); ``"fam/hard/7"`` -> (fam, "hard", 7)."""
    parts = pid.split("/")
    if len(parts) == 3 and parts[1] in DIFFICULTIES and parts[2].lstrip("-").isdigit():
        return parts[0], parts[1], int(parts[2])
    if len(parts) == 2 and parts[1].lstrip("-").isdigit():
        return parts[0], None, int(parts[1])
    if len(parts) == 2 and parts[1] in DIFFICULTIES:
        return parts[0], parts[1], None
    return pid, None, None


# --------------------------------------------------------------------------------------------
# building choice questions


def numeric_choices(
    d: Draw,
    correct: Any,
    wrongs: Sequence[Wrong],
    *,
    fmt: Callable[[Any], str],
    tol_key: Key | None,
    fillers: Callable[[Any], Sequence[Any]] | None = None,
    n: int = 4,
) -> tuple[list[str], ChoiceKey, list[Misconception], list[Any]]:
    """An MCQ from a correct value and the values of typical mistakes.

    Distractors are the mistakes' values, in order, skipping any that coincide (under
    ``tol_key``'s tolerance, or as displayed; ``tol_key=None``: as displayed only) with the key or with an earlier option; then
    ``fillers(correct)`` until there are ``n`` options. Options are shuffled with the draw.
    Returns ``(options_md, ChoiceKey, misconceptions keyed by option index, option values)``."""
    chosen: list[tuple[Any, Wrong | None]] = [(correct, None)]

    def clash(v: Any) -> bool:
        return any(
            fmt(v) == fmt(c) or (tol_key is not None and (values_coincide(v, c, tol_key) or values_coincide(c, v, tol_key)))
            for c, _ in chosen
        )

    also: dict[int, list[Wrong]] = {}  # more mistakes that land on an option already chosen
    for w in wrongs:
        if not clash(w.value):
            if len(chosen) < n:
                chosen.append((w.value, w))
            continue
        # a mistake that gives an option's value is named on that option too (issue 21)
        for j, (c, cw) in enumerate(chosen):
            if j and cw is not None and (fmt(w.value) == fmt(c) or (tol_key is not None and (
                    values_coincide(w.value, c, tol_key) or values_coincide(c, w.value, tol_key)))):
                also.setdefault(j, []).append(w)
                break
    for v in fillers(correct) if fillers else ():
        if len(chosen) >= n:
            break
        if not clash(v):
            chosen.append((v, None))
    if len(chosen) < n:
        raise ValueError(f"only {len(chosen)} distinct options for {fmt(correct)}")
    order = list(range(len(chosen)))
    d.rng.shuffle(order)
    options = [fmt(chosen[i][0]) for i in order]
    values = [chosen[i][0] for i in order]
    key = ChoiceKey(frozenset({order.index(0)}))
    mis = [
        w.misconception(pos)
        for pos, i in enumerate(order)
        for w in ([chosen[i][1]] if chosen[i][1] is not None else []) + also.get(i, [])
    ]
    return options, key, mis, values


def concept_choices(
    d: Draw,
    right: Sequence[str],
    wrong: Sequence[tuple[str, Wrong | None]],
    *,
    n: int = 4,
    n_right: int = 1,
    balance_length: bool = False,
) -> tuple[list[str], ChoiceKey, list[Misconception]]:
    """An MCQ (``n_right == 1``) or MSQ from statements known true (``right``) and false
    (``wrong``, each with the mistake it reflects, if any), drawn and shuffled with ``d``.

    ``balance_length`` (MCQ; issue 12, "the longest option is the key"): the key's rank by
    length among the options is drawn uniformly first, and the distractors are drawn to give
    it that rank, so "pick the longest (or shortest) option" scores at chance. It needs, for
    some right statement, ``n - 1`` wrong ones shorter and ``n - 1`` longer (ValueError if not)."""
    if n_right > len(right) or n - n_right > len(wrong):
        raise ValueError("not enough statements")
    if balance_length and n_right == 1:
        rank = d.rng.randrange(n)  # how many distractors are shorter than the key
        size = lambda t: len(latex_to_text(t))  # noqa: E731 - what the student sees
        fits = [r for r in right if sum(size(t) < size(r) for t, _ in wrong) >= rank
                and sum(size(t) > size(r) for t, _ in wrong) >= n - 1 - rank]
        if not fits:
            raise ValueError(f"no right statement can take length rank {rank} among the wrong ones")
        r = d.pick(fits)
        shorter = [w for w in wrong if size(w[0]) < size(r)]
        longer = [w for w in wrong if size(w[0]) > size(r)]
        rs, ws = [r], d.rng.sample(shorter, rank) + d.rng.sample(longer, n - 1 - rank)
    else:
        rs = d.rng.sample(list(right), n_right)
        ws = d.rng.sample(list(wrong), n - n_right)
    items: list[tuple[str, bool, Wrong | None]] = [(r, True, None) for r in rs] + [(t, False, w) for t, w in ws]
    d.rng.shuffle(items)
    options = [t for t, _, _ in items]
    if len(set(options)) != len(options):
        raise ValueError("duplicate options")
    key = ChoiceKey(frozenset(i for i, (_, ok, _) in enumerate(items) if ok))
    mis: list[Misconception] = []
    if n_right == 1:
        mis = [w.misconception(i) for i, (_, ok, w) in enumerate(items) if w is not None and not ok]
    return options, key, mis


def letter(i: int) -> str:
    return LETTERS[i]


def keep_distinct(key: Key, wrongs: Sequence[Wrong]) -> Kept:
    """The mistakes a grader can tell from the key: drops any whose value coincides (under the
    key's tolerance) with the key, or could not be computed (None), or repeats an id. Mistakes
    that give the same wrong value are all kept: the judge names them all together when a student
    gives that value (issue 21: :func:`question_bank.grading.named`)."""
    from question_bank.grading import grade, stored_key_value

    kept: list[Wrong] = []
    left_out: list[str] = []
    kv = stored_key_value(key)
    for w in wrongs:
        if w.value is None or any(k.id == w.id for k in kept):
            continue
        if values_coincide(w.value, kv, key) or values_coincide(kv, w.value, key) or grade(key, w.value).correct:
            left_out.append(w.id)
            continue
        kept.append(w)
    out = Kept(w.misconception() for w in kept)
    out.coinciding = tuple(left_out)
    return out


def coinciding(p: Problem) -> set[str]:
    """The ids of the mistakes :func:`keep_distinct` left out of ``p`` (and of its parts) because they give the key."""
    return {i for ms in (p.misconceptions, *(pt.misconceptions for pt in p.parts)) for i in getattr(ms, "coinciding", ())}


def safe_call(fn: Callable[[], Any]) -> Any:
    """``fn()``, or None when the mistaken computation is undefined (e.g. an all −∞ column)."""
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a mistake that cannot be computed is simply not offered
        return None
