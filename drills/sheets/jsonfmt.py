"""The practice set as JSON: the full problem objects (``question_bank.problem.problem_to_json``)
with their numbers and marks, documented by ``problem_schema.json`` next to this module.

The student version drops every field that gives the answer away (key, answer, worked
solution, misconceptions, explanation, errata; each part's key and misconceptions); the
full and the answers versions keep the whole object. Keys are written in insertion order,
floats with full double precision, so the bytes depend on the sheet alone.

Read back (``qkv sheet --from FILE.json``): :func:`sheet_from_json` checks a file against
the rules of the format (:func:`check_sheet`: the schema's structure and what a schema cannot
say: an MCQ's key is one option, a key's type is the problem's type, every option index
exists, a range has lo ≤ value ≤ hi, a matrix is rectangular, a question's marks are its
problem's marks, a student file holds no answer) and rebuilds the sheet, so that a teacher
can reorder, drop or edit the problems of a ``full`` (or ``answers``) file and render it
again in any format. The question ``number`` is recomputed from the order (questions are named
``Q1``, ``Q2``... in that order in every message); ``total_marks`` too, with a note when the
file's differs; ``answer`` must agree with ``key``. Every problem is then checked against what
qkv computes (:mod:`drills.sheets.rebuild`): a generated problem whose ``given`` was edited is
rebuilt from it, a stale statement or key is refused. A student file has no keys and cannot be
read back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from drills.output import jsonable
from question_bank.problem import (
    PROBLEM_TYPES,
    ChoiceKey,
    Erratum,
    IntegerKey,
    MatrixKey,
    Misconception,
    NumericKey,
    Part,
    Problem,
    key_value,
    problem_to_json,
)

SCHEMA_PATH = Path(__file__).with_name("problem_schema.json")
SCHEMA_VERSION = 1
ANSWER_FIELDS = ("key", "answer", "solution_md", "solution_text", "misconceptions", "explanation", "errata")
KEY_KIND = {"mcq": "choice", "msq": "choice", "nat": "numeric", "integer": "integer", "matrix": "matrix"}
PART_ANSWER_FIELDS = ("key", "misconceptions", "follow_through")


def _student(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k not in ANSWER_FIELDS}
    out["parts"] = [{k: v for k, v in pt.items() if k not in PART_ANSWER_FIELDS} for pt in obj["parts"]]
    return out


def sheet_object(sheet, version: str) -> dict[str, Any]:
    questions = []
    for i, p in sheet.numbered():
        obj = problem_to_json(p)
        questions.append({"number": i, "marks": p.marks, "problem": obj if version != "student" else _student(obj)})
    return jsonable({
        "format": "qkv-sheet",
        "schema_version": SCHEMA_VERSION,
        "version": version,
        "title": sheet.title,
        "seed": sheet.seed,
        "arguments": sheet.arguments,
        "date": sheet.date,
        "total_marks": sheet.total_marks,
        "questions": questions,
    })


def render(sheet, version: str) -> bytes:
    return (json.dumps(sheet_object(sheet, version), ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# reading a sheet back


class SheetFormatError(ValueError):
    """A JSON file that is not a qkv sheet: one line, with where (``questions[2].problem.key``)."""


def _fail(where: str, what: str) -> None:
    raise SheetFormatError(f"{where}: {what}")


def _at(where: str, name: str) -> str:
    """``Q3`` + ``key`` -> ``Q3 key``; ``Q3 key`` + ``value`` -> ``Q3 key.value`` (issue 27: a question
    is named as the sheet numbers it, never ``questions[2]``)."""
    sep = "." if " " in where or not where.startswith("Q") else " "
    return f"{where}{sep}{name}"


def _need(obj: Any, where: str, fields: dict[str, type | tuple[type, ...]]) -> None:
    if not isinstance(obj, dict):
        _fail(where, "expected an object")
    for name, kind in fields.items():
        if name not in obj:
            _fail(where, f"missing field {name!r}")
        v = obj[name]
        if not isinstance(v, kind) or (isinstance(v, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
            _fail(_at(where, f"{name}"), f"expected {_kind_name(kind)}, got {type(v).__name__}")


def _kind_name(kind) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "an array", dict: "an object",
             bool: "true/false", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


#: The most decimals a key may ask for (a double holds about 16 significant digits).
MAX_DECIMALS = 15
#: Numbers in a key lie within this magnitude: the sheets round and print them with ``decimal``
#: at 28 significant digits, and a value this large is no exam answer anyway.
MAX_MAGNITUDE = 1e100


def _number(x: Any, where: str) -> float:
    if isinstance(x, str) and x in ("inf", "-inf"):
        return float(x)
    return _real(x, where)


def _real(x: Any, where: str) -> float:
    """A JSON number as a finite float of at most :data:`MAX_MAGNITUDE`, else one line."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        _fail(where, f"expected a number, got {str(x)[:40]!r}")
    try:
        f = float(x)
    except OverflowError:
        f = math.inf
    if math.isnan(f):
        _fail(where, "not a number (NaN)")
    if not abs(f) <= MAX_MAGNITUDE:
        _fail(where, f"{str(x)[:20]}{'…' if len(str(x)) > 20 else ''} is beyond ±{MAX_MAGNITUDE:g}, "
                     "the range a sheet's key may hold")
    return f


def _decimals(obj: dict[str, Any], where: str) -> None:
    d = obj["decimals"]
    if d is not None and not 0 <= d <= MAX_DECIMALS:
        _fail(_at(where, "decimals"), f"must lie in 0..{MAX_DECIMALS}, not {str(d)[:20]}")


def _value(v: Any, where: str, depth: int = 0) -> Any:
    """A misconception's value: text, a number in range, or (nested) arrays of them."""
    if isinstance(v, list):
        if depth > 2:
            _fail(where, "nested deeper than a matrix")
        return [_value(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]
    if isinstance(v, int | float) and not isinstance(v, bool):
        _real(v, where)
    elif not (v is None or isinstance(v, str | bool)):
        _fail(where, f"expected a number, text or an array, got {type(v).__name__}")
    return v


def _strings(obj: dict[str, Any], where: str, *names: str) -> None:
    for name in names:
        for i, v in enumerate(obj[name]):
            if not isinstance(v, str):
                _fail(_at(where, f"{name}[{i}]"), f"expected a string, got {type(v).__name__}")


def _key(obj: Any, where: str, type_: str, n_options: int) -> Any:
    _need(obj, where, {"kind": str})
    kind = obj["kind"]
    if kind != KEY_KIND[type_]:
        _fail(_at(where, "kind"), f"a {type_} problem has a {KEY_KIND[type_]!r} key, not {kind!r}")
    if kind == "numeric":
        _need(obj, where, {"value": (int, float), "lo": (int, float), "hi": (int, float), "decimals": (int, type(None)),
                           "unit": str})
        lo, hi = _real(obj["lo"], f"{where}.lo"), _real(obj["hi"], f"{where}.hi")
        v = _real(obj["value"], f"{where}.value")
        if lo > hi:
            _fail(where, f"range lo {lo:g} > hi {hi:g}")
        if not lo <= v <= hi:
            _fail(where, f"value {v:g} outside its own range [{lo:g}, {hi:g}]")
        _decimals(obj, where)
        return NumericKey(obj["value"], lo, hi, obj["decimals"], obj["unit"])
    if kind == "integer":
        _need(obj, where, {"value": int, "unit": str, "rel_tol": (int, float)})
        _real(obj["value"], f"{where}.value")
        _real(obj["rel_tol"], f"{where}.rel_tol")
        if obj["rel_tol"] < 0:
            _fail(_at(where, "rel_tol"), "must be ≥ 0")
        return IntegerKey(obj["value"], obj["unit"], float(obj["rel_tol"]))
    if kind == "matrix":
        _need(obj, where, {"value": list, "abs_tol": (int, float), "decimals": (int, type(None))})
        rows = obj["value"]
        if not rows or not all(isinstance(r, list) and r for r in rows):
            _fail(_at(where, "value"), "a matrix is a non-empty array of non-empty rows")
        if len({len(r) for r in rows}) != 1:
            _fail(_at(where, "value"), "ragged matrix: rows of lengths " + ", ".join(str(len(r)) for r in rows))
        _real(obj["abs_tol"], _at(where, "abs_tol"))
        _decimals(obj, where)
        if obj["abs_tol"] < 0:
            _fail(_at(where, "abs_tol"), "must be ≥ 0")
        value = tuple(tuple(_number(x, _at(where, f"value[{i}][{j}]")) for j, x in enumerate(r)) for i, r in enumerate(rows))
        return MatrixKey(value, float(obj["abs_tol"]), obj["decimals"])
    if kind == "choice":
        _need(obj, where, {"correct": list})
        correct = obj["correct"]
        if not correct or not all(isinstance(i, int) and not isinstance(i, bool) for i in correct):
            _fail(_at(where, "correct"), "a non-empty array of option indices (0 = a)")
        if len(set(correct)) != len(correct):
            _fail(_at(where, "correct"), "an option listed twice")
        if type_ == "mcq" and len(correct) != 1:
            _fail(_at(where, "correct"), f"an MCQ has exactly one correct option, not {len(correct)}")
        for i in correct:
            if not 0 <= i < n_options:
                _fail(_at(where, "correct"), f"option {i} does not exist (there are {n_options}, 0 to {n_options - 1})")
        return ChoiceKey(frozenset(correct))
    _fail(_at(where, "kind"), f"unknown key kind {kind!r}")


def _misconceptions(items: Any, where: str) -> list[Misconception]:
    if not isinstance(items, list):
        _fail(where, "expected an array")
    out = []
    for k, m in enumerate(items):
        _need(m, f"{where}[{k}]", {"id": str, "label": str, "feedback": str})
        if "value" not in m:
            _fail(f"{where}[{k}]", "missing field 'value'")
        v = _value(m["value"], f"{where}[{k}].value")
        if isinstance(v, list) and v and all(isinstance(r, list) for r in v):
            v = tuple(tuple(r) for r in v)
        out.append(Misconception(m["id"], m["label"], m["feedback"], v))
    return out


def _type(v: Any, where: str) -> str:
    if v not in PROBLEM_TYPES:
        _fail(where, f"type must be one of {', '.join(PROBLEM_TYPES)}, not {v!r}")
    return v


def problem_from_json(obj: Any, where: str, student: bool) -> Problem:
    _need(obj, where, {"id": str, "topic": str, "tags": list, "difficulty": str, "marks": int, "type": str,
                       "statement_md": str, "statement_text": str, "options": list, "options_text": list,
                       "given": dict, "parts": list, "source": str, "source_label": str, "hints": list})
    for f in ("family", "seed"):
        if f not in obj:
            _fail(where, f"missing field {f!r}")
    type_ = _type(obj["type"], _at(where, "type"))
    _strings(obj, where, "tags", "options", "options_text", "hints")
    if obj["marks"] not in (1, 2):
        _fail(_at(where, "marks"), f"marks are 1 or 2, not {obj['marks']}")
    if obj["difficulty"] not in ("easy", "medium", "hard"):
        _fail(_at(where, "difficulty"), f"easy, medium or hard, not {obj['difficulty']!r}")
    if not obj["statement_md"].strip():
        _fail(_at(where, "statement_md"), "empty")
    n_opt = len(obj["options"])
    if type_ in ("mcq", "msq") and n_opt < 2:
        _fail(_at(where, "options"), f"an {type_.upper()} needs at least two options")
    if type_ not in ("mcq", "msq") and n_opt:
        _fail(_at(where, "options"), f"a {type_} problem has no options")
    if len(obj["options_text"]) != n_opt:
        _fail(_at(where, "options_text"), f"{len(obj['options_text'])} options, but options has {n_opt}")
    leaked = [f for f in ANSWER_FIELDS if f in obj]
    if student:
        if leaked:
            _fail(where, f"a student file holds no answers, but this problem has {', '.join(leaked)}")
        _fail(where, "a student file has no keys: read back a full or answers file")
    for f in ANSWER_FIELDS:
        if f not in obj:
            _fail(where, f"missing field {f!r}")
    key = _key(obj["key"], _at(where, "key"), type_, n_opt)
    if _canon(obj["answer"]) != _canon(key_value(key)):
        _fail(_at(where, "answer"), f"{_short(obj['answer'])} disagrees with key ({_short(key_value(key))}); the key "
                                    "is what is printed and graded: edit key, and answer with it (or answer alone is wrong)")
    key_source = obj.get("key_source", "qkv")
    if key_source not in ("qkv", "teacher"):
        _fail(_at(where, "key_source"), f"qkv or teacher, not {key_source!r}")
    parts = []
    for k, pt in enumerate(obj["parts"]):
        pw = _at(where, f"parts[{k}]")
        _need(pt, pw, {"label": str, "type": str, "prompt_md": str, "prompt_text": str, "key": dict, "misconceptions": list})
        ptype = _type(pt["type"], _at(pw, "type"))
        if ptype in ("mcq", "msq"):
            _fail(_at(pw, "type"), "a part is a number, an integer or a matrix")
        parts.append(Part(pt["label"], ptype, pt["prompt_md"], pt["prompt_text"], _key(pt["key"], _at(pw, "key"), ptype, 0),
                          _misconceptions(pt["misconceptions"], _at(pw, "misconceptions"))))
    if len({pt.label for pt in parts}) != len(parts):
        _fail(_at(where, "parts"), "two parts with the same label")
    errata = []
    for k, e in enumerate(obj["errata"] if isinstance(obj["errata"], list) else _fail(_at(where, "errata"), "expected an array")):
        _need(e, _at(where, f"errata[{k}]"), {"where": str, "printed": str, "exact": str, "reason": str})
        kind = e.get("kind", "error")
        if kind not in ("error", "rounding"):
            _fail(_at(where, f"errata[{k}].kind"), f"error or rounding, not {kind!r}")
        errata.append(Erratum(e["where"], e["printed"], e["exact"], e["reason"], kind))
    for f in ("solution_md", "solution_text", "explanation"):
        if not isinstance(obj[f], str):
            _fail(_at(where, f"{f}"), "expected a string")
    return Problem(
        id=obj["id"], family=obj["family"], seed=obj["seed"], topic=obj["topic"], tags=tuple(obj["tags"]),
        difficulty=obj["difficulty"], marks=obj["marks"], type=type_, statement_md=obj["statement_md"],
        statement_text=obj["statement_text"], key=key, solution_md=obj["solution_md"], solution_text=obj["solution_text"],
        given=obj["given"], options=list(obj["options"]), options_text=list(obj["options_text"]),
        misconceptions=_misconceptions(obj["misconceptions"], _at(where, "misconceptions")), parts=parts,
        source=obj["source"], source_label=obj["source_label"], hints=list(obj["hints"]), errata=errata,
        explanation=obj["explanation"], source_title=_optional_str(obj, "source_title", where), key_source=key_source,
    )


def _canon(x: Any) -> str:
    return json.dumps(jsonable(x), sort_keys=True, ensure_ascii=False)


def _short(x: Any, n: int = 40) -> str:
    s = json.dumps(jsonable(x), ensure_ascii=False)
    return s if len(s) <= n else s[: n - 1] + "…"


def _optional_str(obj: dict[str, Any], name: str, where: str) -> str:
    v = obj.get(name, "")
    if not isinstance(v, str):
        _fail(_at(where, f"{name}"), "expected a string")
    return v


def check_sheet(obj: Any, notes: list[str] | None = None) -> list[Problem]:
    """The problems of a sheet object, in order; raises :class:`SheetFormatError` on the first
    rule the object breaks. Each problem is then reconciled with what qkv computes
    (:func:`drills.sheets.rebuild.reconcile`: a generated problem with edited parameters is
    rebuilt, a stale statement or key refused); what the teacher should know goes to ``notes``."""
    from drills.sheets.rebuild import ReconcileError, reconcile

    notes = [] if notes is None else notes
    _need(obj, "sheet", {"format": str, "schema_version": int, "version": str, "title": str, "questions": list})
    if obj["format"] != "qkv-sheet":
        _fail("format", f"not a qkv sheet ({obj['format']!r})")
    if obj["schema_version"] != SCHEMA_VERSION:
        _fail("schema_version", f"this qkv reads version {SCHEMA_VERSION}, not {obj['schema_version']}")
    if obj["version"] not in ("student", "full", "answers"):
        _fail("version", f"student, full or answers, not {obj['version']!r}")
    if not obj["questions"]:
        _fail("questions", "no questions")
    out = []
    ids = set()
    for k, q in enumerate(obj["questions"]):
        qn = f"Q{k + 1}"  # as the sheet prints it (the file's order; "number" is recomputed)
        _need(q, qn, {"marks": int, "problem": dict})
        p = problem_from_json(q["problem"], qn, obj["version"] == "student")
        if q["marks"] != p.marks:
            _fail(f"{qn} marks", f"{q['marks']}, but its problem is worth {p.marks} (edit both)")
        try:
            p = reconcile(qn, p, q["problem"], notes)
        except ReconcileError as e:
            raise SheetFormatError(str(e)) from None
        if p.id in ids:
            _fail(f"{qn} id", f"{p.id!r} twice")
        ids.add(p.id)
        out.append(p)
    return out


def sheet_from_json(data: bytes, *, title: str | None = None, notes: list[str] | None = None,
                    max_questions: int | None = None):
    """The sheet a JSON file holds (see the module docstring); what the teacher should know (a
    problem rebuilt from edited parameters, a ``total_marks`` that was not the sum) goes to ``notes``."""
    from drills.sheets import Sheet

    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SheetFormatError(f"not JSON: {e}") from None
    except (ValueError, RecursionError) as e:  # an integer of more than 4,300 digits; nesting too deep
        raise SheetFormatError(f"not JSON qkv can read: {str(e)[:120]}") from None
    notes = [] if notes is None else notes
    n = len(obj["questions"]) if isinstance(obj, dict) and isinstance(obj.get("questions"), list) else 0
    if max_questions is not None and n > max_questions:  # before any question is checked or rebuilt
        raise SheetFormatError(f"holds {n} questions; a sheet holds at most {max_questions} (as -n)")
    problems = check_sheet(obj, notes)
    total = sum(p.marks for p in problems)
    if "total_marks" in obj and obj["total_marks"] != total:
        notes.append(f"total_marks is {_short(obj['total_marks'])} in the file, but its questions are worth {total} "
                     f"marks: the sheet prints {total}")
    seed = obj.get("seed") if isinstance(obj.get("seed"), int) else 0
    args = obj.get("arguments") if isinstance(obj.get("arguments"), dict) else {}
    date = obj.get("date") if isinstance(obj.get("date"), str) else None
    return Sheet(title=title or obj["title"], problems=problems, seed=seed, arguments=args, date=date,
                 sections=_sections(args, problems, notes))


def _sections(args: dict[str, Any], problems: list[Problem], notes: list[str]) -> list:
    """A paper's sections from ``arguments.sections`` (``[[section, number], ...]``, one per question,
    as ``qkv sheet --paper`` writes them), when they still fit the questions: one label per question,
    each section's questions together. Counts and marks are recomputed from the questions, the
    marking rule from ``arguments.marking``; labels that no longer fit are left out, with a note."""
    from drills.sheets import paper_sections

    raw = args.get("sections")
    if raw is None:
        return []
    labels = [r[0] for r in raw if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str)] \
        if isinstance(raw, list) else []
    runs = [lab for k, lab in enumerate(labels) if k == 0 or labels[k - 1] != lab]
    if len(labels) != len(problems) or len(runs) != len(set(runs)) or not labels:
        notes.append("arguments.sections does not fit the questions (one section per question, each section's "
                     "questions together): the sheet prints no section headings")
        return []
    marking = args.get("marking")
    penalties = None
    if isinstance(marking, dict):
        from fractions import Fraction

        try:
            penalties = {t: Fraction(str(v)[:20]) for t, v in marking.items() if t in ("mcq", "msq", "nat")}
        except (ValueError, ZeroDivisionError):
            notes.append("arguments.marking is not fractions: the section headings state GATE's marking")
            penalties = None
        else:
            if not all(0 <= f <= 1 for f in penalties.values()):
                notes.append("arguments.marking is not fractions from 0 to 1: the section headings state GATE's "
                             "marking")
                penalties = None
    return paper_sections(labels, problems, penalties)
