"""``qkv bank list|show|validate|errata``: browse and check the question bank.

Thin commands over :mod:`question_bank.bank`; all printing goes through ``drills.output``.
Nothing is imported from question_bank (or numpy/sympy) at module level; torch never.
"""

from __future__ import annotations

import click

from drills.output import InputError, emit, emit_json

DIFFICULTY_CHOICE = click.Choice(["easy", "medium", "hard"])
TYPE_CHOICE = click.Choice(["mcq", "msq", "nat", "integer", "matrix"])


def _curated_error(e: Exception) -> InputError:
    return InputError(f"curated data: {e}")


@click.group()
def bank() -> None:
    """The question bank: list, show, validate, errata."""


@bank.command("list")
@click.option("--topic", "-t", default=None, help="Only this topic (attention, positional, normalisation, ...).")
@click.option("--type", "type_", type=TYPE_CHOICE, default=None, help="Only this problem type.")
@click.option("--difficulty", type=DIFFICULTY_CHOICE, default=None, help="Only items at this difficulty.")
@click.option("--kind", type=click.Choice(["family", "curated"]), default=None, help="Only families or curated items.")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list of {id, kind, topic, type, source, errata, ...}; a curated item's source is its "
                   "seed file and label, a family's \"generated\".")
def list_cmd(topic: str | None, type_: str | None, difficulty: str | None, kind: str | None, as_json: bool) -> None:
    """Families and curated items."""
    from question_bank import bank as qb

    try:
        items = qb.entries(topic=topic, type=type_, difficulty=difficulty, kind=kind)
    except Exception as e:  # noqa: BLE001 - a malformed data file: one line naming file, item, field
        if type(e).__name__ == "CuratedError":
            raise _curated_error(e) from None
        raise
    if as_json:
        emit_json([e.to_json() for e in items])
        return
    if not items:
        emit("(nothing matches)")
        return
    w_id = max(len(e.id) for e in items)
    w_topic = max(len(e.topic) for e in items)
    for e in items:
        err = f"  [{len(e.errata)} {'erratum' if len(e.errata) == 1 else 'errata'}]" if e.errata else ""
        src = e.title if e.kind == "family" else f"{e.source} — {e.section}"
        emit(f"{e.id:<{w_id}}  {e.kind:<7}  {e.topic:<{w_topic}}  {e.type:<9}  {src}{err}")
    n_f = sum(e.kind == "family" for e in items)
    emit(f"\n{n_f} families, {len(items) - n_f} curated items")


def _render(p) -> str:
    from question_bank.grading import LETTERS, describe_key
    from question_bank.problem import extra_explanation

    head = f"{p.id}  ·  {p.topic}  ·  {p.type.upper()}  ·  {p.marks} mark{'s' if p.marks != 1 else ''}  ·  {p.difficulty}"
    src = p.source if p.source == "generated" else f"{p.source_label} — {p.source}"
    lines = [head, f"source: {src}", "", p.statement_text]
    if p.options_text:
        lines.append("")
        lines += [f"  ({LETTERS[i]}) {o}" for i, o in enumerate(p.options_text)]
    if p.parts:
        lines += ["", "Parts:"]
        lines += [f"  ({pt.label}) {pt.prompt_text}" for pt in p.parts]
        lines += ["", "Answers:"]
        lines += [f"  ({pt.label}) {describe_key(pt.key)}" for pt in p.parts]
    else:
        lines += ["", f"Answer: {describe_key(p.key, p.options_text)}"]
    if p.misconceptions:
        lines += ["", "Typical mistakes:"]
        lines += [f"  • {m.label}" for m in p.misconceptions]
    lines += ["", "Worked solution:", "", p.solution_text]
    if extra := extra_explanation(p):
        from question_bank.render import latex_to_text

        lines += ["", latex_to_text(extra)]
    for e in p.errata:
        lines += ["", f"Erratum ({e.where}): printed {e.printed}, exact {e.exact}. {e.reason}"]
    return "\n".join(lines)


@bank.command("show")
@click.argument("item_id", metavar="ID")
@click.option("--seed", "-s", type=int, default=None, help="Seed of a family's variant (default: from the id, else 0).")
@click.option("--difficulty", type=DIFFICULTY_CHOICE, default=None, help="Difficulty of a family's variant.")
@click.option("--json", "as_json", is_flag=True, help="The whole problem object, answer included.")
def show(item_id: str, seed: int | None, difficulty: str | None, as_json: bool) -> None:
    """One problem: statement, options, answer, worked solution."""
    from question_bank import bank as qb
    from question_bank.problem import problem_to_json

    try:
        p = qb.problem(item_id, seed=seed, difficulty=difficulty)
    except qb.BankError as e:
        raise InputError(str(e), "ID") from None
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ == "CuratedError":
            raise InputError(f"{item_id!r} cannot be looked up: the curated data is malformed ({e})", "ID") from None
        raise
    if as_json:
        emit_json(problem_to_json(p))
    else:
        emit(_render(p))


@bank.command("validate")
@click.option("--seeds", type=click.IntRange(1, 10000), default=20, show_default=True,
              help="Seeds per family and difficulty.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object {ok, issues, families, generated, curated}.")
@click.pass_context
def validate(ctx: click.Context, seeds: int, as_json: bool) -> None:
    """Generate every family, load every data file, check every key; exit 1 on any problem."""
    from question_bank import bank as qb

    rep = qb.validate(seeds=seeds)
    if as_json:
        emit_json(rep.to_json())
    else:
        emit(f"families: {rep.families}, generated problems: {rep.generated}, curated items: {rep.curated}")
        for u in rep.unavailable:
            emit(f"not built (solver function missing): {u}")
        if rep.ok:
            emit("ok: every key accepted, every misconception rejected and diagnosed, options distinct")
        else:
            emit(f"{len(rep.issues)} problem{'s' if len(rep.issues) != 1 else ''}:")
            for m in rep.issues:
                emit(f"  {m}")
    if not rep.ok:
        ctx.exit(1)


@bank.command("errata")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of {where, printed, exact, reason, item, source_label}.")
def errata(as_json: bool) -> None:
    """Figures of the seed texts that the solver disagrees with."""
    from question_bank import bank as qb

    try:
        rows = qb.errata_table()
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ == "CuratedError":
            raise _curated_error(e) from None
        raise
    if as_json:
        emit_json(rows)
        return
    if not rows:
        emit("no errata: every checked figure agrees with the solver")
        return
    for r in rows:
        emit(f"{r['where']}  [{r['item']}]")
        emit(f"    printed: {r['printed']}")
        emit(f"    exact:   {r['exact']}")
        emit(f"    why:     {r['reason']}")
    emit(f"\n{len(rows)} errata")
