"""Choose the problems of a practice set or an exam: deterministic, filterable, no I/O.

:func:`select_problems` draws ``n`` problems from the question bank that match the filters
(any of the topics, any of the types, any of the difficulties). The draw is seeded with the
string ``"qkv-select:<seed>:<filters>"`` (``random.Random`` hashes a string seed with SHA-512,
the same on every platform), so the same arguments always give the same problems in the same
order. Curated items are used at most once; a family gives several variants (different
variant seeds, never the same problem id twice), and no problem twice in substance either:
two variants whose statement, options (in any order) and part prompts are the same are one
problem (:func:`fingerprint`; a conceptual MCQ family has few distinct questions, whatever
the seed), nor a conceptual question that another one of the sheet asks in other words
(:func:`near_duplicate`). When the filters leave fewer distinct problems than asked, the selection is
shorter and its ``notes`` say so. The result is ordered as a GATE paper is:
1-mark questions first, then 2-mark ones, the draw order kept within each group.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from question_bank.problem import Problem

__all__ = ["Selection", "select_problems", "SelectionError", "near_duplicate"]

_TRIES_PER_SLOT = 6  # variant seeds a family tries for a slot
_LAST_TRIES = 60  # more, once, before a family that found nothing new is given up as exhausted
_VARIANT_SEEDS = 1_000_000


class SelectionError(LookupError):
    """Nothing in the bank matches the filters."""


@dataclass
class Selection:
    """The chosen problems, and why there are fewer than asked when there are."""

    problems: list[Problem]
    requested: int
    notes: list[str] = field(default_factory=list)


def fingerprint(p: Problem) -> tuple:
    """What makes two problems the same question for a student."""
    return (p.type, " ".join(p.statement_md.split()), frozenset(" ".join(o.split()) for o in p.options),
            tuple((pt.label, pt.prompt_md) for pt in p.parts))


# --------------------------------------------------------------------------------------------
# near-duplicates (issue 27: a 200-question sheet asked "why divide by √dₖ" three times in other words)

_STOP = frozenset(
    "the a an of to is in and for with by on it its this that what which why how are be as at from or each one two "
    "does do if when than then into not no only all any can will would should must has have had was were their there "
    "these those they them so such but about over under more most less same other who whom whose where after before "
    "both either neither true false following statement statements correct".split())
_WORD = re.compile(r"[a-z][a-z0-9]+")


def _stem(w: str) -> str:
    for suf in ("ations", "ation", "ates", "ate", "ings", "ing", "ies", "es", "ed", "s"):  # saturate ~ saturation
        if w.endswith(suf) and len(w) - len(suf) >= 4:
            return w[: -len(suf)]
    return w


def _content_words(text: str) -> frozenset[str]:
    t = text.lower().replace("√dₖ", " sqrtdk ").replace("dₖ", " dk ")
    return frozenset(_stem(w) for w in _WORD.findall(t) if w not in _STOP)


def concept(p: Problem) -> tuple[frozenset[str], frozenset[str]] | None:
    """A conceptual question's content: ``(words of the statement, words of the right options)``
    (lower case, stop words out, plural and -ing/-ed endings cut); None for a question with
    figures in its statement (numbers make it a different question) or one that is not MCQ/MSQ."""
    if p.type not in ("mcq", "msq") or any(ch.isdigit() for ch in p.statement_text if ch.isascii()):
        return None
    from question_bank.problem import ChoiceKey

    right = " ".join(p.options_text[i] for i in sorted(p.key.correct)) if isinstance(p.key, ChoiceKey) else ""
    return _content_words(p.statement_text), _content_words(right)


#: the overlap (|A ∩ B| / min(|A|, |B|)) of two statements' words, and of their right options' words, from
#: which two conceptual questions ask the same thing. Read off every pair of the bank's conceptual questions
#: (tests/test_sheets_near_duplicates.py lists the pairs they join): "why divide by √dₖ" (GATE Q4 and
#: attention.why_sqrt_dk) 0.57 / 0.25–0.5 (issue 22's sentence frames all name the softmax, and dₖ or
#: saturation, as GATE's key does; an earlier frame shared only dₖ with it, 0.125); "why Transformers beat
#: RNNs" ×4; BERT vs GPT ×3. The nearest pair below them (self-attention's complexity vs FlashAttention's:
#: 0.56 / 0.0) asks something else.
STATEMENT_OVERLAP, KEY_OVERLAP = 0.5, 0.1


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(1, min(len(a), len(b)))


def near_duplicate(a: Problem, b: Problem) -> bool:
    """Whether two conceptual questions ask the same thing: the same family's statement (whatever
    options were drawn), or statements and right answers that overlap as :data:`STATEMENT_OVERLAP`
    and :data:`KEY_OVERLAP` say."""
    ca, cb = concept(a), concept(b)
    if ca is None or cb is None:
        return False
    if a.family is not None and a.family == b.family:
        return " ".join(a.statement_text.split()) == " ".join(b.statement_text.split())
    return _overlap(ca[0], cb[0]) >= STATEMENT_OVERLAP and _overlap(ca[1], cb[1]) >= KEY_OVERLAP


def _asked_already(p: Problem, chosen: list[Problem]) -> bool:
    return concept(p) is not None and any(near_duplicate(p, q) for q in chosen)


def _matches(p: Problem, types: Sequence[str], difficulties: Sequence[str]) -> bool:
    return (not types or p.type in types) and (not difficulties or p.difficulty in difficulties)


def select_problems(
    n: int,
    seed: int = 0,
    *,
    topics: Sequence[str] = (),
    types: Sequence[str] = (),
    difficulties: Sequence[str] = (),
    by_marks: bool = True,
) -> Selection:
    """``n`` problems matching the filters, drawn with ``seed`` (see the module docstring).

    A topic matches as ``question_bank.bank.entries(topic=...)`` does (exactly, as a prefix of
    a family id, or as a tag). Raises :class:`SelectionError` when nothing matches; returns
    fewer than ``n`` problems (with a note) when the bank runs out of distinct ones."""
    from question_bank import bank as qb

    if n < 1:
        raise ValueError("n must be at least 1")
    topics, types, difficulties = tuple(topics), tuple(types), tuple(difficulties)
    found: dict[str, qb.Entry] = {}
    for t in topics or (None,):
        for e in qb.entries(topic=t):
            found.setdefault(e.id, e)
    cands = [
        e for e in found.values()
        if (not types or any(t in e.types for t in types))
        and (not difficulties or any(d in e.difficulties for d in difficulties))
    ]
    if not cands:
        what = ", ".join(f"{k}={'|'.join(v)}" for k, v in (("topic", topics), ("type", types),
                                                           ("difficulty", difficulties)) if v)
        raise SelectionError(f"no problem in the bank matches {what or 'the filters'}")
    cands.sort(key=lambda e: e.id)
    rng = random.Random(f"qkv-select:{seed}:{'|'.join(topics)}:{'|'.join(types)}:{'|'.join(difficulties)}")
    rng.shuffle(cands)

    fams = qb.families()
    curated = {p.id: p for p in qb.curated()}
    chosen: list[Problem] = []
    seen: set[str] = set()
    same: set[tuple] = set()  # fingerprints
    notes: list[str] = []
    live = list(cands)
    while len(chosen) < n and live:
        still: list[qb.Entry] = []
        for e in live:
            if len(chosen) >= n:
                still.append(e)
                continue
            if e.kind == "curated":
                p = curated[e.id]
                if (_matches(p, types, difficulties) and p.id not in seen and fingerprint(p) not in same
                        and not _asked_already(p, chosen)):
                    chosen.append(p)
                    seen.add(p.id)
                    same.add(fingerprint(p))
                continue  # a curated item is used once
            fam = fams[e.id]
            diffs = [d for d in fam.difficulties if not difficulties or d in difficulties]
            got = None
            for _ in range(_TRIES_PER_SLOT + _LAST_TRIES):
                diff = diffs[rng.randrange(len(diffs))]
                vseed = rng.randrange(_VARIANT_SEEDS)
                try:
                    p = fam.generate(vseed, diff)
                except Exception as err:  # noqa: BLE001 - one bad variant must not sink the sheet
                    notes.append(f"{fam.id}/{diff}/{vseed}: generation failed ({type(err).__name__}: {err})")
                    continue
                if (_matches(p, types, difficulties) and p.id not in seen and fingerprint(p) not in same
                        and not _asked_already(p, chosen)):
                    got = p
                    break
            if got is not None:
                chosen.append(got)
                seen.add(got.id)
                same.add(fingerprint(got))
                still.append(e)
        live = still
    if len(chosen) < n:
        notes.append(f"only {len(chosen)} distinct problems match the filters ({n} asked)")
    if by_marks:
        chosen = sorted(chosen, key=lambda p: p.marks)  # stable: draw order within each mark group
    return Selection(chosen, n, notes)
