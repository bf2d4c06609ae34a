"""Curated items: every problem of the seed texts, loaded from ``question_bank/data/*.toml``.

Each file is checked against :mod:`question_bank.curated_schema`; a malformed file raises
:class:`CuratedError` naming the file, the item and the field. Keys are computed by
:mod:`question_bank.compute` (never typed in), worked solutions come from the computation's
steps, misconceptions from the computation rerun with the mistake applied.

Errata: an item records the seed's figures as printed (``[[item.printed]]``). Each is
recomputed; a figure that disagrees beyond its printed rounding becomes an
:class:`~question_bank.problem.Erratum` with the authored reason. :func:`errata` lists them
for ``qkv bank errata``; :func:`audit_curated` reports figures that disagree without a reason
and reasons given for figures that agree.

Cheap index, lazy keys: :func:`index` reads and schema-checks the TOML only (no computation,
no NumPy or SymPy import): one :class:`ItemIndex` per item with what a listing shows (id,
topic, type, difficulty, marks, source, label, and the errata the file declares: its printed
figures that carry a ``reason``). :func:`build` computes one item's key, solution and
misconceptions when that item is asked for, cached per process; :func:`load_curated` builds
them all (tests, ``qkv bank validate``, ``qkv bank errata``).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from question_bank import compute
from question_bank.curated_schema import CHOICE_LETTERS, CuratedError, validate_file
from question_bank.problem import ChoiceKey, Erratum, Misconception, Part, Problem

DATA_DIR = Path(__file__).parent / "data"

__all__ = ["CuratedError", "load_curated", "errata", "unavailable", "audit_curated", "check_printed",
           "data_files", "load_file", "PrintedCheck", "ItemIndex", "index", "build"]


@dataclass
class PrintedCheck:
    """One printed figure and its recomputation."""

    item: str
    where: str
    printed: str
    exact: str
    agrees: bool
    reason: str | None
    printed_value: Any = None
    exact_value: Any = None
    tol: float = 0.0


@dataclass
class _Loaded:
    problems: list[Problem] = field(default_factory=list)
    checks: list[PrintedCheck] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (item id, solver function)


def data_files(data_dir: Path | None = None) -> list[Path]:
    return sorted((data_dir or DATA_DIR).glob("*.toml"))


def _parse_toml(raw: bytes) -> Any:
    import tomllib

    return tomllib.loads(raw.decode())  # what tomllib.load does with the file's bytes


def _read(path: Path) -> dict[str, Any]:
    """A data file parsed (from ``question_bank.parsed_cache`` when these bytes were parsed
    before: no TOML parser imported) and checked against the schema."""
    from question_bank import parsed_cache

    try:
        with open(path, "rb") as f:
            raw = f.read()
        data = parsed_cache.load(raw, _parse_toml)
    except UnicodeDecodeError as e:  # tomllib reads UTF-8 only
        raise CuratedError(path.name, None, None, f"not UTF-8 text (byte {e.start}); save it as UTF-8") from e
    except ValueError as e:
        import tomllib

        if isinstance(e, tomllib.TOMLDecodeError):
            raise CuratedError(path.name, None, None, f"not valid TOML: {e}") from e
        raise
    except RecursionError:
        raise CuratedError(path.name, None, None, "nested too deeply to read") from None
    except OSError as e:
        raise CuratedError(path.name, None, None, f"cannot be read: {e.strerror or e}") from None
    validate_file(data, path.name)
    return data


# --------------------------------------------------------------------------- text


def _text(md: str) -> str:
    """Plain Unicode from Markdown + LaTeX (``question_bank.render.latex_to_text``)."""
    from question_bank.render import latex_to_text

    return latex_to_text(md).replace("`", "")


# --------------------------------------------------------------------------- keys


def _key(kind_type: str, c: compute.Computed, decimals: int | None, unit: str) -> Any:
    from question_bank import grading

    if kind_type == "integer":
        if c.kind != "integer":
            raise ValueError(f"an integer item needs an integer computation, got {c.kind}")
        return grading.integer_key(int(c.value), unit or c.unit)
    if kind_type == "nat":
        return grading.nat_key(float(c.value), int(decimals), unit or c.unit)
    if kind_type == "matrix":
        return grading.matrix_key(c.value, decimals if decimals is not None else 3)
    raise ValueError(kind_type)


def _misconceptions(c: compute.Computed, key: Any) -> list[Misconception]:
    from question_bank import grading

    out = []
    for w in c.wrong:
        m = w.misconception()
        try:
            if grading.accepts(key, w.value):
                continue  # the mistake happens to give the right answer here: no distractor
        except (TypeError, ValueError):
            continue
        out.append(m)
    return out


def _choose(ans: dict[str, Any], value: Any, n: int) -> frozenset[int]:
    vals = [float(v) for v in ans["option_values"]]
    how = ans.get("choose", "equal")
    v = float(value)
    if how == "equal":
        idx = [i for i, o in enumerate(vals) if math.isclose(o, v, rel_tol=1e-9, abs_tol=1e-12)]
    elif how == "at_least":
        idx = [i for i, o in enumerate(vals) if o <= v]
    else:  # nearest, on a log scale for positive figures ("~3.1M" among orders of magnitude)
        def dist(o: float) -> float:
            return abs(math.log(o / v)) if o > 0 and v > 0 else abs(o - v)

        best = min(dist(o) for o in vals)
        idx = [i for i, o in enumerate(vals) if dist(o) == best]
    if not idx:
        raise ValueError(f"no option matches the computed value {value}")
    return frozenset(idx)


# --------------------------------------------------------------------------- option order


def option_order(item_id: str, n: int) -> list[int]:
    """The order in which a curated MCQ/MSQ shows its ``n`` authored options: ``order[j]`` is the
    authored index shown at position ``j``. A permutation drawn from the item's id (the same on
    every run and platform: ``random`` hashes a string seed with SHA-512), so that the source
    texts' habit of listing the key first (17 of 22 MCQs were (a)) does not carry over into the
    quiz, the exam and the sheets, which all show ``Problem.options`` as they are."""
    order = list(range(n))
    random.Random(f"curated-options:{item_id}").shuffle(order)
    return order


def _reorder_key(key: ChoiceKey, order: list[int]) -> ChoiceKey:
    return ChoiceKey(frozenset(order.index(i) for i in key.correct))


_LETTER_REF = re.compile(r"\(([A-H])\)")


def _relabel(text: str, order: list[int]) -> str:
    """An explanation's references to authored options, "(D)", renamed to the letters shown."""
    if not order:
        return text

    def sub(m: re.Match[str]) -> str:
        i = CHOICE_LETTERS.index(m.group(1))
        return f"({CHOICE_LETTERS[order.index(i)].lower()})" if i < len(order) else m.group(0)

    return _LETTER_REF.sub(sub, text)


# --------------------------------------------------------------------------- printed figures


_NUM = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?")


def _decimals_in(text: str) -> int:
    """Decimals of the most precise number written in ``text`` (``"0.401"`` → 3)."""
    best = 0
    for m in _NUM.finditer(text):
        s = m.group(0)
        if "." in s:
            best = max(best, len(s.split(".")[1]))
    return best


def _short(v: float, sig: int = 4) -> str:
    """``v`` with ``sig`` significant digits and the suffix of its own magnitude (K, M, B, T):
    1,073,741,824 is ``1.074B``, not ``1,073.74M`` as in the printed figure's unit (issue 23)."""
    import math

    a = float(f"{abs(float(v)):.{sig - 1}e}")  # rounded first: 999,950,000,000 is 1.000T, not 1,000.0B
    unit, suffix = next(((u, s) for u, s in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")) if a >= u), (1.0, ""))
    x = math.copysign(a, float(v)) / unit
    digits = max(0, sig - 1 - math.floor(math.log10(abs(x)))) if x else 0
    return f"{x:,.{digits}f}{suffix}"


def _fmt_exact(v: Any, decimals: int, scale: float) -> str:
    """The exact figure of a printed-figure check: an integer in full (and, for a figure the
    source prints scaled, its short form in its own magnitude: ``1,073,741,824 (≈ 1.074B)``);
    a scaled float in its own magnitude; otherwise to two decimals more than the source."""
    if isinstance(v, tuple):
        return "[" + ", ".join("[" + ", ".join(f"{x:.{decimals}f}" for x in r) + "]" for r in v) + "]"
    if isinstance(v, int):
        return f"{v:,}" if scale == 1 else f"{v:,} (≈ {_short(v)})"
    if scale != 1:
        return _short(v)
    return f"{float(v):,.{decimals + 2}f}"


def _check_one(pr: dict[str, Any], item_id: str, where: str, c: compute.Computed,
               key: Any, options: list[str]) -> PrintedCheck:
    printed = pr["value"]
    reason = pr.get("reason")
    if isinstance(printed, str):  # an option letter
        assert isinstance(key, ChoiceKey)
        exact_letters = "".join(CHOICE_LETTERS[i] for i in sorted(key.correct))
        agrees = printed == exact_letters
        return PrintedCheck(item_id, where, pr["text"], f"({exact_letters}) {', '.join(options[i] for i in sorted(key.correct))}",
                            agrees, reason, printed, exact_letters)
    decimals = pr.get("decimals", _decimals_in(pr["text"]))
    scale = float(pr.get("scale", 1))
    tol = 0.5 * 10.0 ** (-decimals) * scale
    if isinstance(printed, list):
        rows = printed if printed and isinstance(printed[0], list) else [printed]
        ex = c.value if isinstance(c.value, tuple) else ((c.value,),)
        same_shape = len(rows) == len(ex) and all(len(a) == len(b) for a, b in zip(rows, ex, strict=False))
        agrees = same_shape and all(abs(float(a) * scale - b) <= tol * (1 + 1e-9) + 1e-12
                                    for ra, rb in zip(rows, ex, strict=True) for a, b in zip(ra, rb, strict=True))
        exact = _fmt_exact(tuple(tuple(r) for r in ex), decimals, 1)
    else:
        v = c.value
        if isinstance(v, tuple):
            raise CuratedError("?", item_id, "printed.value", "a scalar figure checked against a matrix computation")
        agrees = abs(float(printed) * scale - float(v)) <= tol * (1 + 1e-9) + 1e-12
        exact = _fmt_exact(v, decimals, scale)
    return PrintedCheck(item_id, where, pr["text"], exact, agrees, reason, printed, c.value, tol)


# --------------------------------------------------------------------------- items


def _follow_attention(spec: dict[str, Any], prev: str, part: str) -> Any:
    """Follow-through for attention parts: this part's key from the student's previous part."""
    import numpy as np

    from question_bank import grading
    from solver.kernels import numpy_ref

    d_k = len(spec["q"][0])
    v = np.array([[float(x) for x in r] for r in spec["v"]])

    def follow(answers: dict[str, Any]) -> Any:
        got = np.array(answers[prev], dtype=float)
        if part == "scaled":
            scale = float(spec["scale"]) if spec.get("scale") is not None else 1 / math.sqrt(d_k)
            val = got * scale
        elif part == "weights":
            val = numpy_ref.softmax(got, axis=-1)
        else:
            val = got @ v
        return grading.matrix_key(val.tolist(), 3)

    return follow


def _build_parts(it: dict[str, Any]) -> tuple[list[Part], list[compute.Computed]]:
    parts, comps = [], []
    prev_label, prev_part = None, None
    for p in it.get("parts", []):
        c = compute.run(p["answer"])
        key = _key(p["type"], c, p.get("decimals"), "")
        follow = None
        spec = p["answer"]
        if spec.get("compute") == "attention" and prev_label is not None and spec.get("mask") is None \
                and not spec.get("causal") and spec.get("part") in ("scaled", "weights", "output") \
                and prev_part == {"scaled": "scores", "weights": "scaled", "output": "weights"}[spec["part"]]:
            follow = _follow_attention(spec, prev_label, spec["part"])
        parts.append(Part(p["label"], p["type"], p["prompt"], _text(p["prompt"]), key, _misconceptions(c, key), follow))
        comps.append(c)
        prev_label, prev_part = p["label"], spec.get("part")
    return parts, comps


def _parts_solution(parts: list[Part], comps: list[compute.Computed]) -> tuple[str, str]:
    """The worked solution of a multi-part item: each part shows only the steps that the
    previous part has not shown already ((b) continues from (a)), in Markdown and as text
    (the part's label on its own line, its steps indented)."""
    md, text = [], []
    shown: list[compute.Line] = []
    for p, c in zip(parts, comps, strict=True):
        steps = c.steps[len(shown):] if c.steps[: len(shown)] == shown else c.steps
        shown = list(c.steps)
        md.append(f"**({p.label})** " + "\n\n".join(s.md for s in steps))
        body = "\n".join(s.text for s in steps)
        text.append(f"({p.label})\n" + "\n".join("    " + ln if ln else ln for ln in body.split("\n")))
    return "\n\n".join(md), "\n".join(text)


def _build(it: dict[str, Any], source: str, file: str, title: str = "") -> tuple[Problem, list[PrintedCheck]]:
    type_ = it["type"]
    options = it.get("options", [])
    ans = it.get("answer", {})
    parts, part_comps = _build_parts(it)
    misconceptions: list[Misconception] = []
    given = dict(it.get("given", {}))
    c: compute.Computed | None = None
    if parts:
        key = parts[-1].key
        misconceptions = list(parts[-1].misconceptions)
        c = part_comps[-1]
        sol_md, sol_text = _parts_solution(parts, part_comps)
    elif "compute" in ans:
        c = compute.run(ans)
        given.update({k: v for k, v in ans.items() if k not in ("compute", "choose", "option_values")})
        if type_ in ("mcq", "msq"):
            correct = _choose(ans, c.value, len(options))
            key = ChoiceKey(correct)
            given["option_values"] = list(ans["option_values"])
            seen = set(correct)
            for w in c.wrong:
                try:
                    idx = _choose({**ans, "choose": "nearest"}, w.value, len(options))
                except (ValueError, TypeError):
                    continue
                i = min(idx)
                if i not in seen:
                    seen.add(i)
                    misconceptions.append(w.misconception(i))
        else:
            key = _key(type_, c, it.get("decimals"), it.get("unit", ""))
            misconceptions = _misconceptions(c, key)
        sol_md, sol_text = c.solution_md(), c.solution_text()
    else:
        key = ChoiceKey(frozenset(CHOICE_LETTERS.index(x) for x in ans["correct"]))
        sol_md, sol_text = "", ""
    # Options in the item's own order up to here (the printed-figure checks below compare the
    # seed's letters with it); shown in the order :func:`option_order` draws, the key following.
    order = option_order(it["id"], len(options)) if type_ in ("mcq", "msq") else []
    explanation = _relabel(it.get("explanation", ""), order)
    if type_ in ("mcq", "msq"):
        shown = _reorder_key(key, order)
        letters = ", ".join(f"({CHOICE_LETTERS[i].lower()})" for i in sorted(shown.correct))  # shown as (a)
        if "compute" in ans:
            sol_md += f"\n\nAnswer: {letters}"
            sol_text += f"\nAnswer: {letters}"
        else:
            sol_md = f"Answer: {letters}\n\n{explanation}"
            sol_text = f"Answer: {letters}\n{_text(explanation)}"
    if explanation and ("compute" in ans or parts):
        sol_md += "\n\n" + explanation
        sol_text += "\n" + _text(explanation)
    where_base = _where_base(source, it)
    checks: list[PrintedCheck] = []
    errata_list: list[Erratum] = []
    for pr in it.get("printed", []):
        pc = compute.run(pr["compute"]) if "compute" in pr else c
        if pc is None:
            raise CuratedError(file, it["id"], "printed.compute", "no computation to check against")
        chk = _check_one(pr, it["id"], f"{where_base}: {pr['where']}", pc, key, options)
        checks.append(chk)
        if not chk.agrees:
            errata_list.append(Erratum(chk.where, chk.printed, chk.exact,
                                       chk.reason or "UNEXPLAINED: the seed disagrees with the solver",
                                       pr.get("kind", "error")))
    if order:
        key = _reorder_key(key, order)
        options = [options[i] for i in order]
        misconceptions = [Misconception(m.id, m.label, m.feedback, order.index(m.value)) for m in misconceptions]
        if "option_values" in given:
            given["option_values"] = [given["option_values"][i] for i in order]
    problem = Problem(
        id=it["id"], family=None, seed=None, topic=it["topic"], tags=tuple(it.get("tags", [])),
        difficulty=it["difficulty"], marks=it["marks"], type=type_,
        statement_md=it["statement"], statement_text=it.get("statement_text") or _text(it["statement"]),
        key=key, solution_md=sol_md, solution_text=sol_text, given=given,
        options=list(options), options_text=[_text(o) for o in options], misconceptions=misconceptions,
        parts=parts, source=f"{source} {it['section']}", source_label=it["label"],
        hints=[_relabel(h, order) for h in it.get("hints", [])], errata=errata_list, explanation=explanation,
        study_only=it.get("study_only", ""), source_title=f"{title}, {it['section']}" if title else "",
    )
    return problem, checks


@dataclass
class _Built:
    """One item built: its problem and printed-figure checks, or the solver function it lacks."""

    problem: Problem | None
    checks: list[PrintedCheck]
    missing: str | None = None


def _build_item(it: dict[str, Any], source: str, file: str, title: str = "") -> _Built:
    try:
        p, checks = _build(it, source, file, title)
    except compute.SolverMissing as e:
        return _Built(None, [], e.function)
    except CuratedError:
        raise
    except Exception as e:  # a computation rejected its inputs: report where
        raise CuratedError(file, it["id"], "answer", f"{type(e).__name__}: {e}") from e
    return _Built(p, checks)


def load_file(path: Path) -> _Loaded:
    """Validate and build one data file (items whose solver function is missing are skipped
    and listed in ``missing``)."""
    data = _read(path)
    out = _Loaded()
    source = data["source"]["file"]
    for it in data["item"]:
        b = _build_item(it, source, path.name, data["source"]["title"])
        if b.problem is None:
            out.missing.append((it["id"], str(b.missing)))
            continue
        out.problems.append(b.problem)
        out.checks.extend(b.checks)
    return out


# --------------------------------------------------------------------------- the cheap index


@dataclass(frozen=True)
class ItemIndex:
    """What a listing needs of a curated item, read from its data file without computing
    anything. ``errata``: the printed figures the file marks as disagreeing (those with a
    ``reason``), as ``{where, printed, reason}``; the exact figure needs the computation
    (:func:`build`, :func:`errata`). ``item`` is the item's TOML table."""

    id: str
    topic: str
    type: str
    difficulty: str
    marks: int
    tags: tuple[str, ...]
    source: str  # "004_83489721195aedaa.txt §19 GATE / Exam Corner"
    source_label: str  # "GATE Q3"
    seed_file: str  # "004_83489721195aedaa.txt"
    data_file: str  # "seed004.toml"
    section: str = ""  # "§19 GATE / Exam Corner"
    errata: tuple[dict[str, str], ...] = ()
    item: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    study_only: str = ""  # non-empty: never graded (the reason); see index()
    source_title: str = ""  # the source text's title ([source] title), for students


def _where_base(source: str, it: dict[str, Any]) -> str:
    return f"{source} {it['section']} {it['label']}"


@lru_cache(maxsize=4)
def _index(data_dir: str, skip_bad: bool = False) -> tuple[ItemIndex, ...]:
    out = []
    for path in data_files(Path(data_dir)):
        try:
            data = _read(path)
        except CuratedError as e:
            if not skip_bad:
                raise
            _SKIPPED.setdefault(data_dir, {})[path.name] = str(e)
            continue
        source = data["source"]["file"]
        for it in data["item"]:
            base = _where_base(source, it)
            declared = tuple({"where": f"{base}: {pr['where']}", "printed": pr["text"], "reason": pr["reason"],
                              "kind": pr.get("kind", "error")}
                             for pr in it.get("printed", []) if pr.get("reason"))
            out.append(ItemIndex(
                id=it["id"], topic=it["topic"], type=it["type"], difficulty=it["difficulty"], marks=it["marks"],
                tags=tuple(it.get("tags", [])), source=f"{source} {it['section']}", source_label=it["label"],
                seed_file=source, data_file=path.name, section=it["section"], errata=declared, item=it,
                study_only=it.get("study_only", ""), source_title=data["source"]["title"],
            ))
    return tuple(out)


#: data dir -> {file name: why it was left out}, for :func:`index` with ``skip_bad``
_SKIPPED: dict[str, dict[str, str]] = {}


def skipped_files(data_dir: Path | None = None) -> dict[str, str]:
    """The data files :func:`index` left out with ``skip_bad=True``, and why (one line each)."""
    return dict(_SKIPPED.get(str(data_dir or DATA_DIR), {}))


def index(data_dir: Path | None = None, *, include_study_only: bool = False, skip_bad: bool = False) -> list[ItemIndex]:
    """Every curated item that can be graded as an :class:`ItemIndex`, in file order: the data
    files read and checked against the schema (a malformed file raises :class:`CuratedError`), no
    key computed. ``include_study_only``: the study-only items too (those that cannot be answered
    from their statement: shown with their worked answer by ``qkv bank show``, never drawn by the
    quiz, the exam or the sheets, which list items through this function or ``bank.entries``).
    ``skip_bad``: a data file that cannot be read is left out (see :func:`skipped_files`) and the
    others are listed, as the quiz wants; without it the first bad file raises, as validate wants."""
    entries = _index(str(data_dir or DATA_DIR), skip_bad)
    return [e for e in entries if include_study_only or not e.study_only]


_BUILT: dict[tuple[str, str], _Built] = {}


def _built(entry: ItemIndex, data_dir: str) -> _Built:
    k = (data_dir, entry.id)
    b = _BUILT.get(k)
    if b is None:
        b = _BUILT[k] = _build_item(entry.item, entry.seed_file, entry.data_file, entry.source_title)
    return b


def build(item_id: str, data_dir: Path | None = None) -> Problem:
    """The Problem of one curated item, its key computed by the solver (once per process).

    Raises ``KeyError`` for an unknown id and :class:`~question_bank.compute.SolverMissing`
    when the item's computation needs a solver function that does not exist."""
    d = str(data_dir or DATA_DIR)
    for entry in _index(d):
        if entry.id == item_id:
            b = _built(entry, d)
            if b.problem is None:
                raise compute.SolverMissing(str(b.missing))
            return b.problem
    raise KeyError(item_id)


@lru_cache(maxsize=4)
def _load_all(data_dir: str) -> _Loaded:
    total = _Loaded()
    for entry in _index(data_dir):
        b = _built(entry, data_dir)
        if b.problem is None:
            total.missing.append((entry.id, str(b.missing)))
            continue
        total.problems.append(b.problem)
        total.checks.extend(b.checks)
    return total


def load_curated(data_dir: Path | None = None) -> list[Problem]:
    """Every curated item whose computation the solver can run, in file order."""
    return list(_load_all(str(data_dir or DATA_DIR)).problems)


def errata(data_dir: Path | None = None) -> list[tuple[str, Erratum]]:
    """``[(item id, Erratum)]``: every seed figure the solver disagrees with."""
    return [(p.id, e) for p in load_curated(data_dir) for e in p.errata]


def check_printed(data_dir: Path | None = None) -> list[PrintedCheck]:
    """Every printed figure with its recomputation."""
    return list(_load_all(str(data_dir or DATA_DIR)).checks)


def unavailable(data_dir: Path | None = None) -> list[tuple[str, str]]:
    """``[(item id, missing solver function)]`` for items not built."""
    return list(_load_all(str(data_dir or DATA_DIR)).missing)


def audit_curated(data_dir: Path | None = None) -> list[str]:
    """Problems with the errata bookkeeping: a figure that disagrees without a reason, or a
    reason given for a figure that agrees."""
    out = []
    for chk in check_printed(data_dir):
        if not chk.agrees and not chk.reason:
            out.append(f"{chk.item}: {chk.where}: printed {chk.printed!r} but exact {chk.exact}, and no reason given")
        if chk.agrees and chk.reason:
            out.append(f"{chk.item}: {chk.where}: a reason is given but the printed figure {chk.printed!r} agrees")
    return out
