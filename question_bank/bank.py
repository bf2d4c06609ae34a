"""The index of the question bank: every family and every curated item.

- :func:`families` – the registered families (id -> Family);
- :func:`curated` – every curated item built (``question_bank.curated.load_curated()``, imported
  defensively: an absent module gives none); computes every key, so it is for validation,
  errata and tests, not for listing;
- :func:`curated_index` – the curated items as read from their data files, no key computed;
- :func:`entries` – one :class:`Entry` per family and per curated item, filterable by topic,
  type and difficulty (what ``qkv bank list`` prints and what the quiz picks from); built
  from the families' registry and :func:`curated_index`, so listing computes nothing;
- :func:`problem` – a problem by id: a family id with a seed (and difficulty), a generated
  problem id ``"family/difficulty/seed"``, or a curated item id (that one item is built, once
  per process);
- :func:`validate` – the checks of ``qkv bank validate``;
- :func:`errata_table` – the rows of ``qkv bank errata``.

Nothing here imports torch; sympy and numpy are imported only when a problem is generated
or a curated item is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from question_bank.family import Family, all_families, parse_problem_id
from question_bank.problem import DIFFICULTIES, Problem

__all__ = ["Entry", "families", "curated", "curated_index", "entries", "lookup", "problem", "validate", "ValidationReport",
           "errata_table", "BankError"]


class BankError(LookupError):
    """An id or a filter that names nothing in the bank."""


@dataclass(frozen=True)
class Entry:
    """One line of the bank: a family or a curated item."""

    id: str
    kind: str  # "family" | "curated"
    topic: str
    types: tuple[str, ...]
    title: str
    source: str  # "generated" for a family; the seed file and its label for a curated item
    source_label: str = ""  # curated: the seed's own name ("GATE Q3"); family: its title
    difficulties: tuple[str, ...] = DIFFICULTIES
    tags: tuple[str, ...] = ()
    errata: tuple[dict[str, str], ...] = ()
    section: str = ""  # curated: where in the seed ("§19 GATE / Exam Corner")
    based_on: str = ""  # family: the seed passages or papers it generalises
    study_only: str = ""  # curated: non-empty (the reason) when it is shown but never graded

    @property
    def type(self) -> str:
        return self.types[0] if len(self.types) == 1 else "|".join(self.types)

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id, "kind": self.kind, "topic": self.topic, "type": self.type, "types": list(self.types),
            "title": self.title, "source": self.source, "source_label": self.source_label,
            "difficulties": list(self.difficulties), "tags": list(self.tags), "errata": list(self.errata),
        }
        if self.kind == "curated":
            out["section"] = self.section
            out["study_only"] = self.study_only
        else:
            out["based_on"] = self.based_on
        return out


def families() -> dict[str, Family]:
    return all_families()


def curated() -> list[Problem]:
    """Every curated item, built (each key computed: seconds). Errors in a data file
    (``CuratedError``) propagate: they name the file, the item and the field."""
    from question_bank import curated as mod

    return list(mod.load_curated())


def curated_index(include_study_only: bool = False) -> list[Any]:
    """The curated items as :class:`question_bank.curated.ItemIndex` (read from the data files,
    nothing computed); study-only items only when asked."""
    from question_bank import curated as mod

    return mod.index(include_study_only=include_study_only)


def _erratum_json(e: Any) -> dict[str, str]:
    return {"where": e.where, "printed": e.printed, "exact": e.exact, "reason": e.reason, "kind": e.kind}


def matches_topic(selector: str, ref: str, topic: str, tags: tuple[str, ...] | list[str] = ()) -> bool:
    """Whether ``--topic selector`` picks the family or curated item ``ref`` (of ``topic``, with
    ``tags``): the topic itself (``attention``), a family or item id (``moe.active_params``,
    ``004.gate.q3``), a dotted id prefix (``004``, ``counting``) or a tag (``kv-cache``). The one
    rule of ``qkv quiz``, ``qkv exam`` and ``qkv sheet`` (issue 23)."""
    return topic == selector or ref == selector or ref.startswith(selector + ".") or selector in tags


def entries(topic: str | None = None, type: str | None = None, difficulty: str | None = None,
            kind: str | None = None, include_study_only: bool = False) -> list[Entry]:
    """Families then curated items, filtered (``topic`` is a selector of :func:`matches_topic`:
    a topic, an id, a dotted id prefix or a tag). Computes no key: a
    curated entry's ``errata`` are those its data file declares, as ``{where, printed,
    reason}`` (the exact figures: :func:`errata_table`).

    ``source``, as issue 4's ``qkv bank list --json`` defines it: ``"generated"`` for a family
    (the passages it generalises are in ``based_on``), the seed file and the item's label for a
    curated item (``"004_83489721195aedaa.txt GATE Q3"``; the section is in ``section``, the
    label alone in ``source_label``)."""
    out: list[Entry] = []
    for f in families().values() if kind != "curated" else ():
        if not f.difficulties:  # every level withdrawn (question_bank.choice_record): not offered
            continue
        out.append(Entry(f.id, "family", f.topic, f.types, f.title, "generated", f.title,
                         f.difficulties, f.tags, based_on=f.source))
    for it in curated_index(include_study_only) if kind != "family" else ():
        out.append(Entry(it.id, "curated", it.topic, (it.type,), it.source_label or it.id,
                         f"{it.seed_file} {it.source_label}", it.source_label,
                         (it.difficulty,), it.tags, tuple(dict(e) for e in it.errata), section=it.section,
                         study_only=it.study_only))

    def keep(e: Entry) -> bool:
        if topic and not matches_topic(topic, e.id, e.topic, e.tags):
            return False
        if type and type not in e.types:
            return False
        if difficulty and difficulty not in e.difficulties:
            return False
        return not (kind and e.kind != kind)

    return [e for e in out if keep(e)]


def _build_curated(item_id: str) -> Problem:
    from question_bank import compute
    from question_bank import curated as mod

    try:
        return mod.build(item_id)
    except compute.SolverMissing as e:
        raise BankError(f"curated item {item_id} needs {e.function}, which the solver lacks") from None


def lookup(item_id: str) -> Family | Problem:
    """The family or curated item named ``item_id`` (a generated problem id names its family).
    A curated item is built (its key computed) here, once per process."""
    fams = families()
    fid, _, _ = parse_problem_id(item_id)
    if fid in fams:
        return fams[fid]
    ids = [it.id for it in curated_index(include_study_only=True)]
    if item_id in ids:
        return _build_curated(item_id)
    close = [i for i in list(fams) + ids if item_id.lower() in i.lower()][:5]
    hint = f"; did you mean {', '.join(close)}?" if close else "; `qkv bank list` shows the ids"
    raise BankError(f"no family or item {item_id!r}{hint}")


def problem(item_id: str, seed: int | None = None, difficulty: str | None = None) -> Problem:
    """A problem by id. For a family: ``seed`` (default: the id's seed, else 0) and
    ``difficulty`` (default: the id's, else the family's default). A curated item ignores both."""
    found = lookup(item_id)
    if isinstance(found, Problem):
        return found
    _, id_diff, id_seed = parse_problem_id(item_id)
    s = seed if seed is not None else (id_seed if id_seed is not None else 0)
    diff = difficulty or id_diff
    if diff is not None and diff not in found.levels:
        raise BankError(f"family {found.id} has difficulties {', '.join(found.levels)}, not {diff!r}")
    return found.generate(s, diff)


@dataclass
class ValidationReport:
    """What ``qkv bank validate`` found: ``issues`` (empty when everything is sound) and counts."""

    issues: list[str] = field(default_factory=list)
    families: int = 0
    generated: int = 0
    curated: int = 0
    unavailable: list[str] = field(default_factory=list)
    per_family: dict[str, int] = field(default_factory=dict)  # family id -> problems generated
    seconds: dict[str, float] = field(default_factory=dict)  # family id -> time to generate and audit

    @property
    def ok(self) -> bool:
        return not self.issues

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "issues": self.issues, "families": self.families, "generated": self.generated,
                "curated": self.curated, "unavailable": self.unavailable}

    def merged(self, later: ValidationReport) -> ValidationReport:
        """This report and ``later`` (the same families on further seeds) as one."""
        fids = list(dict.fromkeys([*self.per_family, *later.per_family]))
        return ValidationReport(
            issues=[*self.issues, *later.issues], families=max(self.families, later.families),
            generated=self.generated + later.generated, curated=self.curated + later.curated,
            unavailable=[*self.unavailable, *later.unavailable],
            per_family={f: self.per_family.get(f, 0) + later.per_family.get(f, 0) for f in fids},
            seconds={f: self.seconds.get(f, 0.0) + later.seconds.get(f, 0.0) for f in fids})


#: Seeds per family and difficulty of the full sweep (``qkv bank validate --full``): a generator that fails in
#: 1 draw of 100 fails in one of 300 with probability 1 − 0.99³⁰⁰ ≈ 95 % (issue 21: 20 seeds never reached
#: sampling.top_p's 2 %). About 9 minutes on one core (issue 40).
VALIDATE_SEEDS = 300

#: Seeds per family and difficulty of ``qkv bank validate`` with no options: about 30 s on one core
#: (issue 40: 4 ms a problem, 166 families at 429 levels in all, and the curated items).
QUICK_SEEDS = 15


def validate(seeds: int = VALIDATE_SEEDS, *, variants: int | None = None,
             include_curated: bool = True, first_seed: int = 0,
             generate: Callable[[Any, int, str], Problem] | None = None,
             progress: Callable[[str, int], None] | None = None) -> ValidationReport:
    """Generate every family for ``seeds`` seeds at each of its difficulties and load every
    curated item; audit each problem (:func:`question_bank.grading.audit_problem`: schema, key
    accepted, every misconception rejected and diagnosed as itself, options distinct,
    follow-through consistent), check that a seed reproduces its problem, and run the
    curated errata bookkeeping check.

    ``variants``: instead of ``seeds`` per difficulty, at least this many problems per family
    in total (``ceil(variants / len(difficulties))`` seeds at each difficulty).
    ``first_seed``: the seeds are ``first_seed, first_seed + 1, ...`` (default 0).
    ``include_curated=False`` checks the families only. ``generate(family, seed, difficulty)``
    draws each problem (default ``family.generate``; the tests pass one that shares draws).
    ``progress(family_id, problems)`` is called after each family with the problems it drew.
    The report counts the problems and the seconds spent per family (``per_family``, ``seconds``)."""
    import math
    import time

    from question_bank.grading import audit_problem

    gen = generate or (lambda f, s, d: f.generate(s, d))
    rep = ValidationReport()
    fams = families()
    rep.families = len(fams)
    for f in fams.values():
        n_seeds = seeds if variants is None else math.ceil(variants / len(f.levels))
        t0 = time.perf_counter()
        before = rep.generated
        for diff in f.levels:
            for s in range(first_seed, first_seed + n_seeds):
                try:
                    p = gen(f, s, diff)
                except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
                    rep.issues.append(f"family {f.id} ({diff}, seed {s}): generation failed: {type(e).__name__}: {e}")
                    continue
                rep.generated += 1
                rep.issues.extend(f"family {f.id} ({diff}, seed {s}): {m}" for m in audit_problem(p))
            try:  # drawn again, afresh: the same problem
                again = gen(f, first_seed, diff)
                first = f.generate(first_seed, diff)
                if again.statement_md != first.statement_md:
                    rep.issues.append(f"family {f.id} ({diff}): seed {first_seed} gives two different problems")
            except Exception:  # noqa: BLE001 - already reported above
                pass
        rep.per_family[f.id] = rep.generated - before
        rep.seconds[f.id] = time.perf_counter() - t0
        if progress is not None:
            progress(f.id, rep.per_family[f.id])
    if not include_curated:
        return rep
    try:
        items = curated()
    except Exception as e:  # noqa: BLE001 - CuratedError names file, item and field
        rep.issues.append(f"curated data: {e}")
        items = []
    rep.curated = len(items)
    seen: set[str] = set()
    for p in items:
        if p.id in seen:
            rep.issues.append(f"curated {p.id}: duplicate id")
        seen.add(p.id)
        if p.id in fams:
            rep.issues.append(f"curated {p.id}: id collides with a family")
        rep.issues.extend(f"curated {p.id} ({p.source}): {m}" for m in audit_problem(p))
    if items:
        from question_bank import curated as mod

        try:
            rep.issues.extend(f"curated errata: {m}" for m in mod.audit_curated())
        except Exception as e:  # noqa: BLE001
            rep.issues.append(f"curated errata: check failed: {type(e).__name__}: {e}")
        try:
            rep.unavailable = [f"{i}: needs {what}" for i, what in mod.unavailable()]
        except Exception:  # noqa: BLE001
            pass
    return rep


def errata_table() -> list[dict[str, str]]:
    """``[{item, source_label, where, printed, exact, reason, kind}]``: every seed figure the solver
    disagrees with (``qkv bank errata --json`` prints this list as it is); ``kind`` is ``"error"``
    or ``"rounding"`` (a rounding note, not an error: issue 12)."""
    rows = []
    for p in curated():
        for e in p.errata:
            rows.append({"item": p.id, "source_label": p.source_label, **_erratum_json(e)})
    from question_bank.text_checks import errata_rows

    return rows + errata_rows()  # public texts' worked figures recomputed by the registry
