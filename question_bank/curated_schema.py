"""The schema of the curated data files ``question_bank/data/*.toml``, as code.

A file holds one ``[source]`` table and a list of ``[[item]]`` tables::

    [source]
    file = "004_83489721195aedaa.txt"       # the seed, in /work/shared/seeds/
    title = "Textbook chapter 15 ..."

    [[item]]
    id = "004.gate.q3"                       # stable: <seed>.<group>.<name>
    section = "§19 GATE / Exam Corner"       # where in the seed
    label = "GATE Q3"                        # the seed's own name for it
    topic = "counting"
    tags = ["parameters", "encoder"]
    difficulty = "medium"                    # easy | medium | hard
    marks = 2                                # 1 | 2
    type = "mcq"                             # mcq | msq | nat | integer | matrix
    statement = "Markdown with $LaTeX$"
    statement_text = "plain Unicode"         # optional: derived from the Markdown otherwise
    options = ["~500K", "~1.5M", "~3.1M", "~6.3M"]          # mcq / msq
    answer = { compute = "params", config = {...}, scope = "layer",
               choose = "nearest", option_values = [5e5, 1.5e6, 3.1e6, 6.3e6] }
    # conceptual mcq/msq instead: answer = { correct = ["C"] } and an explanation
    decimals = 3                             # nat / matrix: the rounding the statement asks for
    hints = ["..."]
    explanation = "why the key is right"
    study_only = "why it cannot be answered from the statement"   # optional: shown with its worked
                                             # answer (qkv bank show), never drawn by the quiz, exam or sheets

    [[item.printed]]                         # a figure as the seed prints it (its claim)
    where = "answer: MHA figure"
    text = "MHA: 4×512² = 1,048,576"
    value = 1048576                          # a number, a matrix, or an option letter
    compute = { compute = "params", ... }    # optional: default is the item's answer
    scale = 1e6                              # optional: "537M" -> value 537, scale 1e6
    decimals = 0                             # optional: the printed rounding (else from text)
    reason = "why the seed differs"          # present exactly when the seed disagrees
    kind = "rounding"                        # optional, with a reason: "error" (default) or "rounding"
                                             # (the source's own rounding, or a model's name: not an error)

    [[item.parts]]                           # optional multi-part problem ((a), (b), ...)
    label = "a"
    type = "matrix"
    prompt = "Compute $QK^\\top$."
    answer = { compute = "attention", ..., part = "scores" }
    decimals = 3

Answers are never typed in: a numeric answer names a computation of
:mod:`question_bank.compute`; only the option set of a conceptual MCQ/MSQ is authored, with
its explanation beside it. :func:`validate_file` checks a parsed file and raises
:class:`CuratedError` with one line naming the file, the item and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from question_bank.problem import DIFFICULTIES, PROBLEM_TYPES


class CuratedError(ValueError):
    """A malformed curated data file: ``file: item <id>: field <name>: message``."""

    def __init__(self, file: str, item: str | None, field: str | None, message: str):
        where = file
        if item is not None:
            where += f": item {item}"
        if field is not None:
            where += f": field {field}"
        super().__init__(f"{where}: {message}")
        self.file, self.item, self.field = file, item, field


@dataclass(frozen=True)
class Field:
    """One key of a table: its accepted Python types, whether it is required, and an optional
    set of allowed values or a regular expression."""

    types: tuple[type, ...]
    required: bool = False
    choices: tuple[Any, ...] | None = None
    pattern: str | None = None
    item_types: tuple[type, ...] | None = None  # for lists: the type of every element


STR, INT, NUM, LIST, DICT = (str,), (int,), (int, float), (list,), (dict,)

SOURCE_FIELDS: dict[str, Field] = {
    "file": Field(STR, True, pattern=r"^\d{3}_[0-9a-f]{16}\.txt$"),
    "title": Field(STR, True),
}

ITEM_FIELDS: dict[str, Field] = {
    "id": Field(STR, True, pattern=r"^\d{3}\.[a-z0-9_]+(\.[a-z0-9_]+)+$"),
    "section": Field(STR, True),
    "label": Field(STR, True),
    "topic": Field(STR, True),
    "tags": Field(LIST, False, item_types=STR),
    "difficulty": Field(STR, True, choices=DIFFICULTIES),
    "marks": Field(INT, True, choices=(1, 2)),
    "type": Field(STR, True, choices=PROBLEM_TYPES),
    "statement": Field(STR, True),
    "statement_text": Field(STR),
    "options": Field(LIST, False, item_types=STR),
    "answer": Field(DICT, False),
    "decimals": Field(INT),
    "unit": Field(STR),
    "hints": Field(LIST, False, item_types=STR),
    "explanation": Field(STR),
    "given": Field(DICT),
    "printed": Field(LIST, False, item_types=DICT),
    "parts": Field(LIST, False, item_types=DICT),
    "study_only": Field(STR),
}

PRINTED_FIELDS: dict[str, Field] = {
    "where": Field(STR, True),
    "text": Field(STR, True),
    "value": Field((int, float, str, list), True),
    "compute": Field(DICT),
    "scale": Field(NUM),
    "decimals": Field(INT),
    "reason": Field(STR),
    "kind": Field(STR, choices=("error", "rounding")),
}

PART_FIELDS: dict[str, Field] = {
    "label": Field(STR, True, pattern=r"^[a-z]$"),
    "type": Field(STR, True, choices=("nat", "integer", "matrix")),
    "prompt": Field(STR, True),
    "answer": Field(DICT, True),
    "decimals": Field(INT),
}

CHOICE_LETTERS = "ABCDEFGH"


def _check_fields(table: Any, spec: dict[str, Field], file: str, item: str | None, prefix: str) -> None:
    if not isinstance(table, dict):
        raise CuratedError(file, item, prefix.rstrip(".") or None, "expected a table")
    for name in table:
        if name not in spec:
            raise CuratedError(file, item, prefix + name, f"unknown field (known: {', '.join(spec)})")
    for name, f in spec.items():
        where = prefix + name
        if name not in table:
            if f.required:
                raise CuratedError(file, item, where, "missing")
            continue
        v = table[name]
        if isinstance(v, bool) or not isinstance(v, f.types):
            raise CuratedError(file, item, where,
                               f"expected {' or '.join(t.__name__ for t in f.types)}, got {type(v).__name__}")
        if f.choices is not None and v not in f.choices:
            raise CuratedError(file, item, where, f"{v!r} is not one of {', '.join(map(str, f.choices))}")
        if f.pattern is not None and not re.fullmatch(f.pattern, v):
            raise CuratedError(file, item, where, f"{v!r} does not match {f.pattern}")
        if f.item_types is not None and any(not isinstance(e, f.item_types) for e in v):
            raise CuratedError(file, item, where, f"every element must be {f.item_types[0].__name__}")
        if f.types == STR and not v.strip():
            raise CuratedError(file, item, where, "empty")


def _check_answer(ans: dict[str, Any], type_: str, n_options: int, file: str, item: str, where: str) -> None:
    if "compute" in ans:
        if not isinstance(ans["compute"], str):
            raise CuratedError(file, item, f"{where}.compute", "expected the name of a computation")
        if "correct" in ans:
            raise CuratedError(file, item, f"{where}.correct", "an answer is computed or authored, not both")
        if type_ in ("mcq", "msq"):
            vals = ans.get("option_values")
            if not isinstance(vals, list) or len(vals) != n_options:
                raise CuratedError(file, item, f"{where}.option_values",
                                   f"a computed {type_} needs one value per option ({n_options})")
            if ans.get("choose", "equal") not in ("equal", "nearest", "at_least"):
                raise CuratedError(file, item, f"{where}.choose", "must be equal, nearest or at_least")
        return
    if "correct" not in ans:
        raise CuratedError(file, item, where, "needs compute = \"...\" (numeric) or correct = [...] (conceptual)")
    if type_ not in ("mcq", "msq"):
        raise CuratedError(file, item, f"{where}.correct", f"a {type_} answer must be computed, never typed in")
    letters = ans["correct"]
    if not isinstance(letters, list) or not letters or any(
            not isinstance(c, str) or c not in CHOICE_LETTERS[:n_options] for c in letters):
        raise CuratedError(file, item, f"{where}.correct", f"a list of option letters A..{CHOICE_LETTERS[n_options - 1]}")
    if type_ == "mcq" and len(letters) != 1:
        raise CuratedError(file, item, f"{where}.correct", "an MCQ has exactly one correct option")
    extra = set(ans) - {"correct"}
    if extra:
        raise CuratedError(file, item, f"{where}.{sorted(extra)[0]}", "unknown key for a conceptual answer")


def validate_item(it: Any, file: str, index: int) -> None:
    item = it.get("id") if isinstance(it, dict) and isinstance(it.get("id"), str) else f"#{index + 1}"
    _check_fields(it, ITEM_FIELDS, file, item, "")
    type_ = it["type"]
    options = it.get("options", [])
    if type_ in ("mcq", "msq"):
        if type_ == "mcq" and len(options) != 4:
            raise CuratedError(file, item, "options", f"an MCQ has four options, got {len(options)}")
        if type_ == "msq" and len(options) < 2:
            raise CuratedError(file, item, "options", "an MSQ needs at least two options")
    elif options:
        raise CuratedError(file, item, "options", f"a {type_} item has no options")
    parts = it.get("parts", [])
    if "answer" not in it and not parts:
        raise CuratedError(file, item, "answer", "missing (or give parts)")
    if "answer" in it:
        _check_answer(it["answer"], type_, len(options), file, item, "answer")
        if "correct" in it["answer"] and not it.get("explanation", "").strip():
            raise CuratedError(file, item, "explanation", "a conceptual item keeps its explanation beside the key")
    if type_ == "nat" and "decimals" not in it and not parts:
        raise CuratedError(file, item, "decimals", "a NAT item states its rounding")
    labels = []
    for j, p in enumerate(parts):
        _check_fields(p, PART_FIELDS, file, item, f"parts[{j}].")
        _check_answer(p["answer"], p["type"], 0, file, item, f"parts[{j}].answer")
        if p["type"] == "nat" and "decimals" not in p:
            raise CuratedError(file, item, f"parts[{j}].decimals", "a NAT part states its rounding")
        labels.append(p["label"])
    if parts and type_ not in ("nat", "integer", "matrix"):
        raise CuratedError(file, item, "parts", "parts belong to numeric items")
    if len(set(labels)) != len(labels):
        raise CuratedError(file, item, "parts", "two parts share a label")
    for j, pr in enumerate(it.get("printed", [])):
        _check_fields(pr, PRINTED_FIELDS, file, item, f"printed[{j}].")
        if isinstance(pr["value"], str) and (type_ not in ("mcq", "msq") or pr["value"] not in CHOICE_LETTERS):
            raise CuratedError(file, item, f"printed[{j}].value", "a text value is an option letter of an MCQ/MSQ")
        if isinstance(pr["value"], str) and "compute" not in it.get("answer", {}):
            raise CuratedError(file, item, f"printed[{j}].value",
                               "a printed option letter is checked only against a computed key")
        if "kind" in pr and "reason" not in pr:
            raise CuratedError(file, item, f"printed[{j}].kind", "a kind belongs to a figure that disagrees (give its reason)")
        if "compute" in pr:
            _check_answer(pr["compute"], "nat", 0, file, item, f"printed[{j}].compute")
        if "compute" not in pr and "compute" not in it.get("answer", {}) and not parts:
            raise CuratedError(file, item, f"printed[{j}].compute", "needs a computation to check the figure against")


def validate_file(data: Any, file: str) -> None:
    """Raise :class:`CuratedError` (file, item, field) for the first problem in a parsed file."""
    if not isinstance(data, dict):
        raise CuratedError(file, None, None, "expected a TOML document")
    extra = set(data) - {"source", "item"}
    if extra:
        raise CuratedError(file, None, sorted(extra)[0], "unknown top-level table")
    if "source" not in data:
        raise CuratedError(file, None, "source", "missing")
    _check_fields(data["source"], SOURCE_FIELDS, file, None, "source.")
    items = data.get("item")
    if not isinstance(items, list) or not items:
        raise CuratedError(file, None, "item", "no [[item]] tables")
    seen: set[str] = set()
    for i, it in enumerate(items):
        validate_item(it, file, i)
        if it["id"] in seen:
            raise CuratedError(file, it["id"], "id", "duplicate id")
        if not it["id"].startswith(data["source"]["file"][:3] + "."):
            raise CuratedError(file, it["id"], "id", "ids start with the seed number of the file")
        seen.add(it["id"])
