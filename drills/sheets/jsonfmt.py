"""The practice set as JSON: the full problem objects (``question_bank.problem.problem_to_json``)
with their numbers and marks, documented by ``problem_schema.json`` next to this module.

The student version drops every field that gives the answer away (key, answer, worked
solution, misconceptions, explanation, errata; each part's key and misconceptions); the
full and the answers versions keep the whole object. Keys are written in insertion order,
floats with full double precision, so the bytes depend on the sheet alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drills.output import jsonable
from question_bank.problem import problem_to_json

SCHEMA_PATH = Path(__file__).with_name("problem_schema.json")
SCHEMA_VERSION = 1
ANSWER_FIELDS = ("key", "answer", "solution_md", "solution_text", "misconceptions", "explanation", "errata")
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
