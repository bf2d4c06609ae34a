"""Do the problems measure what they claim? The checks of ``qkv bank validate --quality`` (issue 12).

:func:`validate` (in :mod:`question_bank.bank`) asks whether every key is right; this module asks
whether a student could score without knowing the subject. It runs over every registered family,
generically (a family added later is checked as soon as it is registered), and over the curated
items:

- **key positions** (:func:`key_positions`): over many draws, no option letter may hold more than
  :data:`MAX_LETTER_SHARE` (40 %) of the keys (for an MSQ: of the correct marks);
- **answer-blind guessing** (:data:`STRATEGIES`): rules that read the options (and the statement)
  but never compute anything, e.g. "the option whose numbers recur in the others", "the longest
  option", "the middle value". Each MCQ/MSQ family is drawn many times and each rule must score no
  better than chance plus :data:`GUESS_MARGIN`;
- **degenerate keys** (:func:`blind_key_guess`): no NAT/integer variant may be answered by typing 0,
  1, or a number printed in its statement (the key's own grader decides), unless the family
  declares that this is the point (``@family(..., blind_key_ok="why")``); ``Family.generate``
  draws such a variant again, so this check catches a family whose redraws run out;
- **self-contained curated items** (:func:`bare_references`): a graded item names no material the
  student does not see ("the listing", "the blocks above", a file name); an item that needs it is
  marked ``study_only`` (shown with its worked answer, never graded);
- **difficulty levels** (:func:`difficulty_report`): the statements drawn at different levels are
  disjoint, and the levels are ordered by the work they ask for: the median number of worked
  solution lines (the steps, and the sizes of the matrices written out) does not decrease from easy
  to hard.

Chance: an MCQ with *n* options is 1/*n*. For an MSQ (all-or-nothing) it is what the best blind
guesser who knows how many options are usually correct achieves: ``max_k P(|key| = k) / C(n, k)``,
averaged over the draws. A rule that ties between several options gets the expected credit of
picking one of them at random (1/ties when the key is among them).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from question_bank.blind_keys import (  # noqa: F401 - defined there (Family.generate needs no more of this module)
    _NUM,
    _SUP,
    _SUPS,
    _TOKEN,
    blind_guess_accepted,
    blind_key_guess,
    numbers_in,
    printed_numbers,
)
from question_bank.problem import ChoiceKey, Problem

__all__ = [
    "MAX_LETTER_SHARE", "GUESS_MARGIN", "STRATEGIES", "QualityReport", "key_positions",
    "letter_shares", "guess_rates", "chance", "blind_key_guess", "difficulty_report", "run_quality",
]

#: The most a single option letter may hold of the keys over a large draw.
MAX_LETTER_SHARE = 0.40
#: How far above chance an answer-blind rule may score before the family fails (issue 22: 5 points,
#: the same margin as the learned attacker of :mod:`question_bank.adversary`).
GUESS_MARGIN = 0.05
#: Known failures not yet fixed, per check ("guessing", "blind keys", "difficulty"): reported as
#: pending, not as failures, so that the check fails for every other family, any family added
#: later included. Shrink these sets; never grow them without saying why in the report.
PENDING: dict[str, frozenset[str]] = {
    # (attention.why_sqrt_dk left this list when its options became the 2x2 cross of two slots of one sentence frame)
    "guessing": frozenset(),
    "blind keys": frozenset(),
    "difficulty": frozenset(),
    # issue 22: the families the adversary (question_bank.adversary) still beats at 200 draws: a learned or
    # fixed rule over chance + 5 points, a one-operation rule, memorised easy answers, one remembered
    # number, or fewer than 50 distinct problems in 1,000 draws at some level.
    # issue 39: none. A choice level the test-wise student's adversary beats at 500 draws (bench/choice_attack.py,
    # question_bank/data/choice_attack.json) is withdrawn (question_bank.choice_record): not offered, so not checked
    # here; `bank validate --quality` counts the withdrawn levels and `bank show` gives each one's figure.
    "adversary": frozenset(),
    # issue 22's numeric MCQs (question_bank.numeric_mcq): the views a learned attacker beat at 100, 200 or 400 draws were
    # left out of numeric_mcq.NUMERIC_MCQ, each with its figure; those issue 39's adversary beats are pending above
}

# --------------------------------------------------------------------------------------------
# answer-blind strategies: (statement, options) -> the indices the rule picks (a set; a tie is
# several indices, credited 1/len when the rule needs one option), or None when it does not apply


Strategy = Callable[[str, Sequence[str]], frozenset[int] | None]


def _argbest(scores: Sequence[float | None], best: Callable[[Sequence[float]], float] = max) -> frozenset[int] | None:
    vals = [s for s in scores if s is not None]
    if len(vals) < 2 or len(set(vals)) == 1:
        return None
    b = best(vals)
    return frozenset(i for i, s in enumerate(scores) if s == b)


def _first_number(o: str) -> float | None:
    ns = numbers_in(o)
    return ns[0] if ns else None


def most_frequent_value(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The option whose numbers recur most often in the other options."""
    sets = [set(numbers_in(o)) for o in options]
    if not any(sets):
        return None
    counts = Counter(v for s in sets for v in s)
    return _argbest([float(sum(counts[v] - 1 for v in s)) for s in sets])


def most_shared_words(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The option sharing the most words with the others (the "convergence" guess)."""
    words = [set(re.findall(r"\w+", o.lower())) for o in options]
    return _argbest([float(sum(len(w & v) for j, v in enumerate(words) if j != i)) for i, w in enumerate(words)])


_BELOW = re.compile(r"\b(memory|below|less|fewer|smaller|lower|cheaper)\b", re.I)
_ABOVE = re.compile(r"\b(compute|above|more|greater|larger|higher|dearer)\b", re.I)


def self_consistent_label(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The options whose label agrees with their own inequality ("memory-bound: 85 < 156")."""
    def consistent(o: str) -> float | None:
        rel = "<" if "<" in o else ">" if ">" in o else None
        if rel is None:
            return None
        head = o.split(rel)[0]
        below, above = bool(_BELOW.search(head)), bool(_ABOVE.search(head))
        if below == above:
            return None
        return 1.0 if (below and rel == "<") or (above and rel == ">") else 0.0

    return _argbest([consistent(o) for o in options])


def label_matches_rank(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The options whose label agrees with where their number ranks: the smaller values with
    "memory-bound" (or "below", "fewer"), the larger with "compute-bound" (or "above", "more")."""
    vals = [_first_number(o) for o in options]
    if any(v is None for v in vals) or len(set(vals)) < 2:
        return None
    ranked = sorted(set(vals))  # type: ignore[arg-type]
    median = (ranked[(len(ranked) - 1) // 2] + ranked[len(ranked) // 2]) / 2
    pick = set()
    for i, (o, v) in enumerate(zip(options, vals, strict=True)):
        below, above = bool(_BELOW.search(o)), bool(_ABOVE.search(o))
        if below != above and ((below and v <= median) or (above and v > median)):  # type: ignore[operator]
            pick.add(i)
    return frozenset(pick) or None


def _numeric_rank(options: Sequence[str]) -> list[float | None]:
    return [_first_number(o) for o in options]


def middle_value(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The option(s) whose first number is the median (both middle ones for an even count)."""
    vals = _numeric_rank(options)
    if any(v is None for v in vals) or len(set(vals)) < 3:
        return None
    ranked = sorted(set(vals))  # type: ignore[arg-type]
    mid = {ranked[(len(ranked) - 1) // 2], ranked[len(ranked) // 2]}
    return frozenset(i for i, v in enumerate(vals) if v in mid)


def largest_value(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    vals = _numeric_rank(options)
    return None if any(v is None for v in vals) else _argbest(vals)


def smallest_value(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    vals = _numeric_rank(options)
    return None if any(v is None for v in vals) else _argbest(vals, min)


def longest_option(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    return _argbest([float(len(o)) for o in options])


def shortest_option(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    return _argbest([float(len(o)) for o in options], min)


def echoes_statement(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The option repeating the most numbers (or words) of the statement."""
    st_nums = set(numbers_in(statement))
    st_words = set(re.findall(r"[a-z]{4,}", statement.lower()))
    return _argbest([float(len(set(numbers_in(o)) & st_nums) * 10 + len(set(re.findall(r"[a-z]{4,}", o.lower())) & st_words))
                     for o in options])


def fewest_shared_words(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The odd one out: the option sharing the fewest words with the others."""
    words = [set(re.findall(r"\w+", o.lower())) for o in options]
    return _argbest([float(sum(len(w & v) for j, v in enumerate(words) if j != i)) for i, w in enumerate(words)], min)


def least_echo(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """The option repeating the fewest numbers (or words) of the statement."""
    st_nums = set(numbers_in(statement))
    st_words = set(re.findall(r"[a-z]{4,}", statement.lower()))
    return _argbest([float(len(set(numbers_in(o)) & st_nums) * 10 + len(set(re.findall(r"[a-z]{4,}", o.lower())) & st_words))
                     for o in options], min)


#: MCQ rules: each picks one option (a tie: several, credited 1/ties). A rule far below chance
#: has its opposite here too (shared words: most and fewest; the statement: most and least echoed).
STRATEGIES: dict[str, Strategy] = {
    "most frequent value": most_frequent_value,
    "most shared words": most_shared_words,
    "self-consistent label": self_consistent_label,
    "label matches rank": label_matches_rank,
    "middle value": middle_value,
    "largest value": largest_value,
    "smallest value": smallest_value,
    "longest option": longest_option,
    "shortest option": shortest_option,
    "echoes the statement": echoes_statement,
    "fewest shared words": fewest_shared_words,
    "echoes the statement least": least_echo,
}


def _msq_all(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    return frozenset(range(len(options)))


def _msq_longer(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    mean = sum(len(o) for o in options) / len(options)
    return frozenset(i for i, o in enumerate(options) if len(o) > mean) or None


def _msq_shorter(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    mean = sum(len(o) for o in options) / len(options)
    return frozenset(i for i, o in enumerate(options) if len(o) < mean) or None


def _msq_hedged(statement: str, options: Sequence[str]) -> frozenset[int] | None:
    """Options without absolute words (always, never, only, cannot), which are often false."""
    absolute = re.compile(r"\b(always|never|only|cannot|can't|all|none|every|impossible)\b", re.I)
    return frozenset(i for i, o in enumerate(options) if not absolute.search(o)) or None


#: MSQ rules: each picks a set of options, right only when it is exactly the key.
MSQ_STRATEGIES: dict[str, Strategy] = {
    "select all": _msq_all,
    "longer than average": _msq_longer,
    "shorter than average": _msq_shorter,
    "no absolute words": _msq_hedged,
}


def guess_threshold(base: float, n: int) -> float:
    """The most a blind rule may score over ``n`` draws: chance plus :data:`GUESS_MARGIN`, or plus
    three standard errors of a rate at chance when the draw is small (so a small ``--draws`` does
    not fail on noise)."""
    return base + max(GUESS_MARGIN, 3 * math.sqrt(base * (1 - base) / max(n, 1)))


def _credit(kind: str, pick: frozenset[int], key: frozenset[int]) -> float:
    if kind == "msq":
        return 1.0 if pick == key else 0.0
    return len(pick & key) / len(pick)


def chance(problems: Sequence[Problem]) -> float:
    """The blind baseline (module docstring): 1/n for an MCQ; for an MSQ the best "pick k at
    random" given the distribution of key sizes."""
    if not problems:
        return 0.0
    if all(p.type == "mcq" for p in problems):
        return sum(1 / len(p.options) for p in problems) / len(problems)
    sizes = Counter(len(p.key.correct) for p in problems if isinstance(p.key, ChoiceKey))
    n = max(len(p.options) for p in problems)
    return max(c / len(problems) / math.comb(n, k) for k, c in sizes.items())


def guess_rates(problems: Sequence[Problem]) -> dict[str, tuple[float, int]]:
    """Per rule: (success rate over the draws where it applies, how many draws it applied to).
    MCQs and MSQs are scored with their own rules; pass one type at a time."""
    if not problems:
        return {}
    kind = "msq" if problems[0].type == "msq" else "mcq"
    rules = MSQ_STRATEGIES if kind == "msq" else STRATEGIES
    out: dict[str, tuple[float, int]] = {}
    for name, rule in rules.items():
        total, n = 0.0, 0
        for p in problems:
            assert isinstance(p.key, ChoiceKey)
            pick = rule(p.statement_text, p.options_text or p.options)
            if not pick:
                continue
            total += _credit(kind, pick, p.key.correct)
            n += 1
        out[name] = (total / n if n else 0.0, n)
    return out


# --------------------------------------------------------------------------------------------
# key positions


def key_positions(problems: Iterable[Problem]) -> Counter[str]:
    """How often each option letter is (part of) the key."""
    from question_bank.grading import LETTERS

    c: Counter[str] = Counter()
    for p in problems:
        if isinstance(p.key, ChoiceKey) and p.type in ("mcq", "msq"):
            c.update(LETTERS[i] for i in p.key.correct)
    return c


def letter_shares(c: Counter[str]) -> dict[str, float]:
    total = sum(c.values())
    return {k: v / total for k, v in sorted(c.items())} if total else {}


# --------------------------------------------------------------------------------------------
# degenerate keys


# --------------------------------------------------------------------------------------------
# self-contained curated items

#: A bare reference to material the student does not see ("the listing", "the guide's", "the
#: blocks above", a file name). Naming a source by its title and section is fine: "Exercise 2 of
#: “Transformers from Scratch”", "Chapter 15, §14".
BARE_REFERENCE = re.compile(
    r"\b(the|this|its) (listing|guide|text|lesson|chapter)\b|\b(listing|guide|text|lesson|chapter)'s\b"
    r"|\b(blocks|MHA|code|layer|function) (above|below)\b|\b\w+_[0-9a-f]{16}\.txt\b|\bseed ?00\d\b", re.I)


def bare_references(p: Problem) -> list[str]:
    """The bare references in what a student reads of a graded item: statement, parts, options,
    hints, worked solution and explanation (a study-only item may refer to what it cannot show)."""
    if p.study_only:
        return []
    texts = [p.statement_md, *p.options, *(pt.prompt_md for pt in p.parts), *p.hints, p.solution_md, p.explanation]
    return sorted({m.group(0) for t in texts for m in BARE_REFERENCE.finditer(t)})


# --------------------------------------------------------------------------------------------
# difficulty


@dataclass
class LevelFigures:
    statements: set[str] = field(default_factory=set)
    work: list[int] = field(default_factory=list)  # solution lines per problem


def _work(p: Problem) -> int:
    return sum(1 for ln in p.solution_text.splitlines() if ln.strip())


def _asked(p: Problem) -> str:
    """What the student is asked: the statement, the options and the parts' prompts."""
    return "\n".join([p.statement_text, *p.options_text, *(pt.prompt_text for pt in p.parts)])


def difficulty_report(by_level: dict[str, list[Problem]]) -> tuple[int, dict[str, float]]:
    """(problems, statement with options and parts, drawn at more than one level; median solution
    lines per level)."""
    figs = {lvl: LevelFigures({_asked(p) for p in ps}, [_work(p) for p in ps]) for lvl, ps in by_level.items()}
    seen: Counter[str] = Counter()
    for f in figs.values():
        seen.update(f.statements)
    shared = sum(1 for _, n in seen.items() if n > 1)
    medians = {lvl: float(sorted(f.work)[len(f.work) // 2]) if f.work else 0.0 for lvl, f in figs.items()}
    return shared, medians


# --------------------------------------------------------------------------------------------
# the whole check


@dataclass
class FamilyQuality:
    id: str
    types: tuple[str, ...]
    draws: int = 0
    positions: dict[str, float] = field(default_factory=dict)
    chance: dict[str, float] = field(default_factory=dict)  # "mcq"/"msq" -> the blind baseline
    guessing: dict[str, tuple[float, int]] = field(default_factory=dict)
    blind_keys: int = 0
    blind_example: str = ""
    blind_exempt: bool = False  # the family declares blind_key_ok
    kinds: dict[str, int] = field(default_factory=dict)  # "mcq"/"msq" -> draws of that type
    shared_statements: int = 0
    work: dict[str, float] = field(default_factory=dict)
    attack: dict[str, Any] = field(default_factory=dict)  # level -> adversary.LevelAttack (issue 22)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "types": list(self.types), "draws": self.draws, "key_positions": self.positions,
                "chance": self.chance, "guessing": {k: {"rate": r, "applied": n} for k, (r, n) in self.guessing.items()},
                "blind_keys": self.blind_keys, "blind_example": self.blind_example,
                "shared_statements": self.shared_statements, "solution_lines": self.work,
                "adversary": [a.to_json() for a in self.attack.values()], "seconds": self.seconds}


@dataclass
class QualityReport:
    issues: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # failures of families in PENDING
    cleared: list[str] = field(default_factory=list)  # families in PENDING that passed this run
    _hits: set[tuple[str, str]] = field(default_factory=set, repr=False)
    families: dict[str, FamilyQuality] = field(default_factory=dict)
    positions_families: Counter[str] = field(default_factory=Counter)
    positions_curated: Counter[str] = field(default_factory=Counter)
    curated_guessing: dict[str, tuple[float, int]] = field(default_factory=dict)
    curated_chance: float = 0.0
    study_only: list[str] = field(default_factory=list)  # curated items shown but never graded
    # choice levels not offered (question_bank.choice_record): "<family>/<level>: <the figure>"
    withdrawn: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.issues

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "issues": self.issues, "pending": self.pending, "cleared": self.cleared,
                "key_positions": {"families": letter_shares(self.positions_families),
                                  "curated": letter_shares(self.positions_curated)},
                "curated_guessing": {k: {"rate": r, "applied": n} for k, (r, n) in self.curated_guessing.items()},
                "curated_chance": self.curated_chance, "study_only": self.study_only, "withdrawn": self.withdrawn,
                "families": [f.to_json() for f in self.families.values()]}


def _check_positions(where: str, c: Counter[str], issues: list[str]) -> dict[str, float]:
    shares = letter_shares(c)
    over = {k: s for k, s in shares.items() if s > MAX_LETTER_SHARE}
    if over:
        issues.append(f"{where}: key positions {_fmt_shares(shares)}: "
                      f"{', '.join(f'({k})' for k in over)} over {MAX_LETTER_SHARE:.0%}")
    return shares


def _fmt_shares(shares: dict[str, float]) -> str:
    return " ".join(f"({k}) {s:.0%}" for k, s in shares.items())


def _sink(rep: QualityReport, check: str, fid: str) -> list[str]:
    rep._hits.add((check, fid))
    return rep.pending if fid in PENDING.get(check, ()) else rep.issues


def run_quality(draws: int = 200, *, families: Sequence[str] | None = None, include_curated: bool = True,
                adversary: bool = True, two_ops: bool = True,
                generate: Callable[[Any, int, str], Problem] | None = None, withdrawn: bool = False) -> QualityReport:
    """Every check above, on ``draws`` problems per family (spread over its difficulties; seeds
    0, 1, ...), and on the curated items. ``families``: only these ids. ``adversary``: also the
    attacks of :mod:`question_bank.adversary` (learned attacker, operation rules, memorised easy
    answers, variety) per family level; ``two_ops``: with the two-operation rules (reported only).
    ``generate(family, seed, difficulty)`` draws each problem (default ``family.generate``; the
    tests pass one that shares its draws with the validation's). ``withdrawn``: also the choice levels
    the record withdraws (question_bank.choice_record); by default only what is offered is checked."""
    from question_bank.family import all_families

    gen = generate or (lambda f, s, d: f.generate(s, d))
    rep = QualityReport()
    fams = all_families()
    for fid, f in fams.items():
        if families is not None and fid not in families:
            continue
        if f.withdrawn and not withdrawn:
            from question_bank.choice_record import reason, record

            rep.withdrawn += [f"{fid}/{lv}: {reason(record(fid, lv))}" for lv in f.withdrawn]
        offered = f.levels if withdrawn else f.difficulties
        if not offered:  # nothing offered: its keys are validate's to check
            continue
        t0 = time.perf_counter()
        fq = FamilyQuality(fid, f.types)
        per_level = math.ceil(draws / len(offered))
        by_level: dict[str, list[Problem]] = {}
        for diff in offered:
            ps = []
            for s in range(per_level):
                try:
                    ps.append(gen(f, s, diff))
                except Exception:  # noqa: BLE001 - generation failures are validate's to report
                    continue
            by_level[diff] = ps
        problems = [p for ps in by_level.values() for p in ps]
        fq.draws = len(problems)
        for kind in ("mcq", "msq"):
            choice = [p for p in problems if p.type == kind]
            if not choice:
                continue
            fq.kinds[kind] = len(choice)
            c = key_positions(choice)
            rep.positions_families.update(c)
            fq.positions.update(_check_positions(f"family {fid} ({kind}, {len(choice)} draws)", c, rep.issues))
            base = chance(choice)
            fq.chance[kind] = base
            rates = guess_rates(choice)
            fq.guessing.update({f"{kind}: {k}" if kind == "msq" else k: v for k, v in rates.items()})
            for name, (rate, n) in rates.items():
                if n >= max(10, len(choice) // 4) and rate > guess_threshold(base, n):
                    _sink(rep, "guessing", fid).append(f"family {fid} ({kind}): the blind rule '{name}' finds the key in {rate:.0%} of "
                                      f"{n} draws (chance {base:.0%})")
        fq.blind_exempt = bool(f.blind_key_ok)
        if not f.blind_key_ok:
            for p in problems:
                g = blind_key_guess(p)
                if g is not None:
                    fq.blind_keys += 1
                    fq.blind_example = fq.blind_example or f"{p.id}: {g}"
            if fq.blind_keys:
                _sink(rep, "blind keys", fid).append(f"family {fid}: {fq.blind_keys} of {fq.draws} keys accept a blind guess "
                                  f"(e.g. {fq.blind_example})")
        fq.shared_statements, fq.work = difficulty_report(by_level)
        if fq.shared_statements:
            _sink(rep, "difficulty", fid).append(f"family {fid}: {fq.shared_statements} statements are drawn at more than one difficulty")
        levels = [fq.work[lv] for lv in offered]
        if any(b < a for a, b in zip(levels, levels[1:], strict=False)):
            _sink(rep, "difficulty", fid).append(f"family {fid}: the median worked solution shrinks with difficulty "
                              f"({', '.join(f'{lv} {fq.work[lv]:g}' for lv in offered)} lines)")
        if adversary:
            from question_bank.adversary import attack_family

            fa = attack_family(f, by_level, two=two_ops)
            fq.attack = fa.levels
            if fa.issues:
                _sink(rep, "adversary", fid).extend(fa.issues)
        fq.seconds = time.perf_counter() - t0
        rep.families[fid] = fq
        rep.cleared.extend(f"{fid}: passes '{check}' over {fq.draws} draws (take it off PENDING if it holds on a large draw)"
                           for check, ids in PENDING.items() if fid in ids and (check, fid) not in rep._hits)
    if include_curated:
        from question_bank.curated import load_curated

        items = load_curated()
        choice = [p for p in items if p.type in ("mcq", "msq")]
        rep.positions_curated = key_positions(choice)
        _check_positions(f"curated items ({len(choice)} MCQ/MSQ)", rep.positions_curated, rep.issues)
        mcq = [p for p in choice if p.type == "mcq"]
        rep.curated_chance = chance(mcq)
        rep.curated_guessing = guess_rates(mcq)
        rep.study_only = sorted(p.id for p in items if p.study_only)
        for p in items:
            refs = bare_references(p)
            if refs:
                rep.issues.append(f"curated {p.id}: refers to what the student does not see ({', '.join(refs)}): "
                                  "put it into the statement, or mark the item study_only")
    return rep
