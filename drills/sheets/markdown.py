"""The practice set as Markdown with LaTeX math that GitHub renders (``$…$`` inline,
``$$…$$`` display blocks on their own lines, ``bmatrix``): the problems' own ``statement_md``
and ``solution_md``, numbered, with marks, an answer key table and the worked solutions."""

from __future__ import annotations

from drills.sheets import TYPE_NAMES, TYPE_RULES, key_lines, marks_label
from question_bank.grading import LETTERS, describe_key
from question_bank.problem import ChoiceKey, MatrixKey, Problem, extra_explanation
from question_bank.render import latex_matrix


def key_md(key, options_text: list[str]) -> str:
    """The keyed answer in Markdown: a matrix as inline ``bmatrix``, the rest as ``describe_key``."""
    if isinstance(key, MatrixKey):
        return "$" + latex_matrix(key.value, key.decimals) + "$"
    if isinstance(key, ChoiceKey):
        return ", ".join(f"({LETTERS[i]})" for i in sorted(key.correct))
    return describe_key(key).replace("|", "\\|")


def _header(sheet) -> list[str]:
    out = [f"# {sheet.title}", ""]
    info = f"{len(sheet.problems)} questions · {sheet.total_marks} marks · seed {sheet.seed}"
    if sheet.date:
        info += f" · {sheet.date}"
    out += [info, ""]
    return out


def _question(i: int, p: Problem) -> list[str]:
    out = [f"## Q{i} ({marks_label(p.marks)}, {TYPE_NAMES[p.type]}: {TYPE_RULES[p.type]})", "", p.statement_md.strip(), ""]
    for j, o in enumerate(p.options):
        out.append(f"- **({LETTERS[j]})** {o}")
    if p.options:
        out.append("")
    return out


def _answers(sheet) -> list[str]:
    out = ["# Answer key", "", "| Q | Marks | Type | Answer |", "|---|---|---|---|"]
    for i, p in sheet.numbered():
        cells = "<br>".join(f"{lab} {key_md(k, p.options_text)}".strip() for lab, k in key_lines(p))
        out.append(f"| Q{i} | {p.marks} | {TYPE_NAMES[p.type]} | {cells} |")
    out += ["", "# Worked solutions", ""]
    for i, p in sheet.numbered():
        out += [f"## Q{i}", "", f"*{p.id}* — {p.source if p.source == 'generated' else p.source_label + ', ' + p.source}", ""]
        out += [p.solution_md.strip(), ""]
        if extra := extra_explanation(p):
            out += [extra, ""]
        if p.misconceptions:
            out += ["**Typical mistakes:**", ""]
            out += [f"- {m.label}: {m.feedback}" for m in p.misconceptions]
            out.append("")
        for e in p.errata:
            out += [f"> **Erratum** ({e.where}): printed {e.printed}, exact {e.exact}. {e.reason}", ""]
    return out


def render(sheet, version: str) -> bytes:
    lines = _header(sheet)
    if version == "answers":
        lines[0] = f"# {sheet.title}: answers"
    else:
        for i, p in sheet.numbered():
            lines += _question(i, p)
    if version in ("full", "answers"):
        lines += _answers(sheet)
    return ("\n".join(lines).rstrip() + "\n").encode("utf-8")
