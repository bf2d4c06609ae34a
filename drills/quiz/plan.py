"""What a quiz session asks: the bank listed cheaply (:class:`Catalogue`), and the plan of a
session (:func:`plan`): due reviews first, then new problems, filtered by topic, type and difficulty.
New problems are spread over the topics (:func:`spread`: one topic after another, and never two
near-identical items side by side, such as ``000.code.head_dim`` then ``001.code.head_dim``)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from drills.output import InputError

if TYPE_CHECKING:
    from drills.progress import ProgressStore

TYPE_TRIES = 60  # seeds tried when a multi-type family must give the requested type
SEED_RANGE = 1_000_000

@dataclass(frozen=True)
class QuizOptions:
    topics: tuple[str, ...] = ()
    type: str | None = None
    difficulty: str | None = None
    count: int = 10
    seed: int | None = None  # None: drawn at random (and reported, so the session can be replayed)

    def to_json(self) -> dict[str, Any]:
        return {"topics": list(self.topics), "type": self.type, "difficulty": self.difficulty,
                "count": self.count, "seed": self.seed}


@dataclass(frozen=True)
class Candidate:
    """A family or a curated item that a session may ask."""

    kind: str  # "family" | "item" (the review-card kinds of drills.progress.scheduling.item_key)
    ref: str  # family id or curated item id
    topic: str
    types: tuple[str, ...]
    difficulties: tuple[str, ...]
    tags: tuple[str, ...] = ()

    def matches(self, topics: tuple[str, ...], type_: str | None, difficulty: str | None) -> bool:
        from question_bank.bank import matches_topic  # the one --topic rule of quiz, exam and sheet

        if not self.difficulties:  # a family whose every level is withdrawn (question_bank.choice_record)
            return False
        if topics and not any(matches_topic(t, self.ref, self.topic, self.tags) for t in topics):
            return False
        if type_ and type_ not in self.types:
            return False
        return not (difficulty and difficulty not in self.difficulties)


@dataclass(frozen=True)
class Pick:
    """One planned question: which family or item, with which seed and difficulty."""

    kind: str
    ref: str
    seed: int | None = None
    difficulty: str | None = None
    due: bool = False
    group: str = "new"  # "due" | "new" | "seen" | "more"
    level_fixed: bool = False  # the difficulty was asked for (--difficulty), not drawn


class Catalogue:
    """The bank, listed cheaply: the family registry, and the curated items as indexed from
    their data files (id, topic, type, difficulty, tags) without running their computations.

    :meth:`load` lists the families from ``question_bank.family_index`` (a
    :class:`~question_bank.family_index.LazyFamilies`): a family's module is imported when a
    problem of it is built, so the first question waits for one family module, not all."""

    def __init__(self, families: Mapping[str, Any], items: dict[str, Any]):
        self.families = families
        self.items = items  # id -> question_bank.curated.ItemIndex
        self.data_dir: Path | None = None
        self._built: dict[str, Any] = {}

    @classmethod
    def load(cls, data_dir: Path | None = None) -> Catalogue:
        from question_bank import curated
        from question_bank.family_index import LazyFamilies

        try:  # a bad data file leaves out its own items only; `qkv bank validate` says more
            items = {e.id: e for e in curated.index(data_dir, skip_bad=True)}
        except curated.CuratedError as e:  # an item of a readable file that breaks the index
            items = {}
            _warn(f"curated items left out: {e}")
        for why in curated.skipped_files(data_dir).values():
            _warn(f"curated items left out: {why}")
        cat = cls(LazyFamilies(), items)
        cat.data_dir = data_dir
        return cat

    def candidates(self) -> list[Candidate]:
        meta = getattr(self.families, "meta", None)  # a LazyFamilies lists them without importing any
        if meta is not None:
            out = [Candidate("family", *m) for m in meta()]
        else:
            out = [Candidate("family", f.id, f.topic, tuple(f.types), tuple(f.difficulties), tuple(f.tags))
                   for f in self.families.values()]
        out = [c for c in out if c.difficulties]  # a family whose every level is withdrawn is not offered
        for iid, e in self.items.items():
            out.append(Candidate("item", iid, e.topic, (e.type,), (e.difficulty,), e.tags))
        return out

    def topics(self) -> list[str]:
        return sorted({c.topic for c in self.candidates()})

    def build(self, pick: Pick, type_: str | None = None) -> Any:
        """The Problem of ``pick`` (a family variant with the pick's seed, or the curated item).

        A family that can give several types is asked for seeds ``seed, seed+1, ...`` until it
        gives ``type_``; the problem's own ``seed`` says which one was used."""
        if pick.kind == "family":
            fam = self.families[pick.ref]
            seed = int(pick.seed or 0)
            levels = [pick.difficulty]
            if type_ and len(fam.types) > 1 and not pick.level_fixed:
                # a drawn level that never gives this type (attention_vs_rnn: MCQ at easy only): another level
                levels += [d for d in fam.difficulties if d != pick.difficulty]
            for level in levels:
                for attempt in range(TYPE_TRIES if type_ and len(fam.types) > 1 else 1):
                    p = fam.generate(seed + attempt, level)
                    if not type_ or p.type == type_:
                        return p
            raise LookupError(f"family {fam.id} gave no {type_} problem in {TYPE_TRIES} seeds")
        if pick.ref not in self._built:
            from question_bank import curated

            self._built[pick.ref] = curated.build(pick.ref, self.data_dir)
        return self._built[pick.ref]


def _withdrawn_line(catalogue: Catalogue, opts: QuizOptions) -> str:
    """Why a family asked for by id offers nothing at the asked level: withdrawn as a choice item
    (question_bank.choice_record), with its figure and the NAT form that stays; "" otherwise."""
    for t in opts.topics:
        if t not in catalogue.families:
            continue
        fam = catalogue.families[t]
        levels = [lv for lv in fam.withdrawn if not opts.difficulty or lv == opts.difficulty]
        if not levels:
            continue
        from question_bank.choice_record import reason, record
        from question_bank.numeric_mcq import base_of

        nat = base_of(t)
        return (f"{t} is not offered at {levels[0]}: {reason(record(t, levels[0]))}"
                + (f"; its NAT form is `--topic {nat}`" if nat else "") + f" (`qkv bank show {t} --difficulty {levels[0]}` shows it)")
    return ""


def plan(catalogue: Catalogue, store: ProgressStore, opts: QuizOptions, now: datetime | None = None) -> list[Pick]:
    """The session's questions, in order (see the module docstring). Raises
    :class:`~drills.output.InputError` when the filters match nothing."""
    from drills.progress.scheduling import utc

    now = utc(now)
    cands = [c for c in catalogue.candidates() if c.matches(opts.topics, opts.type, opts.difficulty)]
    if not cands:
        what = ", ".join(f"{n} {v}" for n, v in (("--topic", "/".join(opts.topics)), ("--type", opts.type),
                                                   ("--difficulty", opts.difficulty)) if v)
        raise InputError(_withdrawn_line(catalogue, opts) or f"no problems match {what}; topics: {', '.join(catalogue.topics())}")
    cands.sort(key=lambda c: (c.kind, c.ref))
    by_key = {(c.kind, c.ref): c for c in cands}
    rng = random.Random(f"qkv-quiz:{opts.seed}")
    cards = store.cards()
    due_keys = [(d.kind, d.ref) for d in store.due_items(now) if (d.kind, d.ref) in by_key]
    new_keys = [k for k in by_key if k not in cards]
    rng.shuffle(new_keys)
    new_keys = spread(new_keys, lambda k: by_key[k].topic)
    seen_keys = sorted((k for k in by_key if k in cards and k not in set(due_keys)), key=lambda k: cards[k].due)

    def pick(key: tuple[str, str], group: str) -> Pick:
        c = by_key[key]
        if c.kind == "item":
            return Pick("item", c.ref, None, c.difficulties[0], group == "due", group)
        diff = opts.difficulty or rng.choice(c.difficulties)
        return Pick("family", c.ref, rng.randrange(SEED_RANGE), diff, group == "due", group,
                    level_fixed=opts.difficulty is not None)

    picks: list[Pick] = []
    for group, keys in (("due", due_keys), ("new", new_keys), ("seen", seen_keys)):
        for k in keys:
            if len(picks) >= opts.count:
                return picks
            picks.append(pick(k, group))
    families = [k for k in by_key if k[0] == "family"]
    rng.shuffle(families)
    i = 0
    while families and len(picks) < opts.count:
        picks.append(pick(families[i % len(families)], "more"))
        i += 1
    return picks


def stem(ref: str) -> str:
    """What makes two ids near-identical questions: the last part of the id
    (``000.code.head_dim`` and ``001.code.head_dim`` are both ``head_dim``)."""
    return ref.rsplit(".", 1)[-1]


def spread(keys: list[tuple[str, str]], topic_of: Any) -> list[tuple[str, str]]:
    """``keys`` (already shuffled) reordered so that a session's new problems spread over the
    topics: one of each topic in turn, the topics in the order they first come in ``keys``
    (so the shuffle still decides), each topic's keys in their shuffled order. Then no two
    neighbours share a :func:`stem` where a later key can change places with the second."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for k in keys:
        groups.setdefault(topic_of(k), []).append(k)
    out: list[tuple[str, str]] = []
    while len(out) < len(keys):
        for g in groups.values():
            if g:
                out.append(g.pop(0))
    for _ in range(4):  # a swap can make a new pair further on: go over the list again (4 passes at most)
        moved = False
        for i in range(1, len(out)):
            if stem(out[i][1]) != stem(out[i - 1][1]):
                continue
            for j in [*range(i + 1, len(out)), *range(i - 2, -1, -1)]:  # later keys first, then earlier ones
                # the key moved in must fit between out[i - 1] and out[i + 1]; the key moved out, between out[j ± 1]
                if j in (i - 1, i) or stem(out[j][1]) == stem(out[i][1]):
                    continue
                if stem(out[j][1]) == stem(out[i - 1][1]) or (i + 1 < len(out) and stem(out[j][1]) == stem(out[i + 1][1])):
                    continue
                if (j - 1 >= 0 and j - 1 != i and stem(out[i][1]) == stem(out[j - 1][1])) or \
                        (j + 1 < len(out) and j + 1 != i and stem(out[i][1]) == stem(out[j + 1][1])):
                    continue
                out[i], out[j] = out[j], out[i]
                moved = True
                break
        if not moved:
            break
    return out


def _warn(line: str) -> None:
    from drills.output import warn

    warn(line)
