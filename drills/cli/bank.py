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
@click.option("--study-only/--graded-only", "study", default=True, show_default=True,
              help="Include the study-only curated items (shown with their answer, never graded).")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list of {id, kind, topic, type, source, errata, ...}; a curated item's source is its "
                   "seed file and label, a family's \"generated\".")
def list_cmd(topic: str | None, type_: str | None, difficulty: str | None, kind: str | None, study: bool,
             as_json: bool) -> None:
    """Families and curated items."""
    from question_bank import bank as qb

    try:
        items = qb.entries(topic=topic, type=type_, difficulty=difficulty, kind=kind, include_study_only=study)
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
        study = "  [study only]" if e.study_only else ""
        emit(f"{e.id:<{w_id}}  {e.kind:<7}  {e.topic:<{w_topic}}  {e.type:<9}  {src}{err}{study}")
    n_f = sum(e.kind == "family" for e in items)
    emit(f"\n{n_f} families, {len(items) - n_f} curated items")


def _render(p) -> str:
    from question_bank.grading import LETTERS, describe_key
    from question_bank.problem import extra_explanation

    head = f"{p.id}  ·  {p.topic}  ·  {p.type.upper()}  ·  {p.marks} mark{'s' if p.marks != 1 else ''}  ·  {p.difficulty}"
    src = p.source if p.source == "generated" else f"{p.source_label} — {p.source_title or p.source}"
    lines = [head, f"source: {src}", "", p.statement_text]
    if p.study_only:
        lines[2:2] = [f"study only, never graded: {p.study_only}"]
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
        what = "Rounding note" if e.kind == "rounding" else "Erratum"
        lines += ["", f"{what} ({e.where}): printed {e.printed}, exact {e.exact}. {e.reason}"]
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
    note = _withdrawn_note(p)
    if as_json:
        emit_json({**problem_to_json(p), **({"withdrawn": note} if note else {})})
    else:
        emit(_render(p) + (f"\n\nNot offered: {note}." if note else ""))


def _withdrawn_note(p) -> str:
    """Why a family's level is not offered (question_bank.choice_record), or ""."""
    from question_bank import bank as qb

    fam = qb.families().get(p.family or "") if getattr(p, "family", None) else None
    if fam is None or p.difficulty not in fam.withdrawn:
        return ""
    from question_bank.choice_record import reason, record

    return f"this level is withdrawn as a choice item: {reason(record(fam.id, p.difficulty))}"


@bank.command("validate")
@click.option("--seeds", type=click.IntRange(1, 10000), default=None,
              help="Seeds per family and difficulty [default: 15, about 30 s on one core; a failure in 1 draw of 100 "
                   "shows with probability 1 − 0.99^(15 × levels), 36 % for a family of three levels].")
@click.option("--full", is_flag=True,
              help="The full sweep: 300 seeds per family and difficulty (a failure in 1 draw of 100 shows with 95 % "
                   "probability, 1 − 0.99³⁰⁰); about 9 minutes on one core, estimated on this machine when it starts.")
@click.option("--quality", is_flag=True,
              help="Also check that the problems measure what they claim (issue 12): key positions, answer-blind "
                   "guessing, keys a blind guess gives, difficulty levels.")
@click.option("--draws", type=click.IntRange(20, 100000), default=200, show_default=True,
              help="With --quality: problems drawn per family.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object {ok, issues, families, generated, curated}.")
@click.pass_context
def validate(ctx: click.Context, seeds: int | None, full: bool, quality: bool, draws: int, as_json: bool) -> None:
    """Generate every family, load every data file, check every key; exit 1 on any problem.

    On a terminal a progress bar shows the family being checked and the time left; how long the
    whole run takes is estimated from the first seed of every family."""
    from question_bank import bank as qb

    if full and seeds is not None and seeds != qb.VALIDATE_SEEDS:
        raise InputError(f"--full is {qb.VALIDATE_SEEDS} seeds per family and difficulty; give --full or --seeds, "
                         "not both", "--seeds")
    n = qb.VALIDATE_SEEDS if full else (seeds or qb.QUICK_SEEDS)
    rep = _validate_with_progress(qb, n)
    qrep = None
    if quality:
        from question_bank import quality as ql

        qrep = ql.run_quality(draws)
    ok = rep.ok and (qrep is None or qrep.ok)
    if as_json:
        out = rep.to_json()
        if qrep is not None:
            out["quality"] = qrep.to_json()
            out["quality"]["families_by_type"] = families_by_type(qrep)
            out["ok"] = ok
        emit_json(out)
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
        if qrep is not None:
            emit(_quality_text(qrep, draws))
    if not ok:
        ctx.exit(1)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def estimate_line(families: int, levels: int, seeds: int, spent: float, per_seed: float,
                  curated_seconds: float = 1.5) -> str:
    """What ``qkv bank validate`` says once two seeds of every family are checked (``spent`` seconds;
    the first seed also loads the solver, so the pace is the second's, ``per_seed``): the problems
    in all and the time the rest will take at that pace."""
    rest = per_seed * max(seeds - 2, 0) + curated_seconds
    return (f"validating {families} families at {levels} levels × {seeds} seeds ({levels * seeds:,} problems) and the "
            f"curated items: about {_duration(spent + rest)} in all on this machine, {_duration(rest)} left "
            f"(at the pace of the second seed of every family, {_duration(per_seed)} a seed)")


def _validate_with_progress(qb, seeds: int):
    """``qb.validate(seeds)`` run as the first seed of every family (which loads what the families
    use), the second (which sets the pace), then the rest; on a terminal with a progress bar on
    stderr (the family, problems done, time left) and the estimate of the whole run printed after
    the second seed."""
    import sys
    import time

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    fams = qb.families()
    levels = sum(len(f.levels) for f in fams.values())
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:<28.28}"), BarColumn(bar_width=20), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
    began = time.perf_counter()
    with Progress(*columns, console=console, transient=True, disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("first seed of every family", total=levels * seeds)

        def step(fid: str, k: int) -> None:
            progress.update(task, advance=k, description=fid)

        rep = qb.validate(seeds=1, include_curated=seeds == 1, progress=step)
        if seeds == 1:
            return rep
        second = qb.validate(seeds=1, first_seed=1, include_curated=seeds == 2, progress=step)
        rep = rep.merged(second)
        if seeds == 2:
            return rep
        if sys.stderr.isatty():
            progress.console.print(estimate_line(len(fams), levels, seeds, time.perf_counter() - began,
                                                 sum(second.seconds.values())), highlight=False, markup=False)
        rep = rep.merged(qb.validate(seeds=seeds - 2, first_seed=2, progress=step))
    return rep


def families_by_type(q) -> dict[str, int]:
    """How many of the checked families draw each problem type (issue 26), and how many of the MCQ
    families are numeric families drawn as MCQs (``question_bank.numeric_mcq``)."""
    from question_bank.numeric_mcq import SUFFIX

    out = {t: sum(1 for f in q.families.values() if t in f.types) for t in ("mcq", "msq", "nat", "integer", "matrix")}
    out["numeric-mcq"] = sum(1 for fid in q.families if fid.endswith(SUFFIX))
    return out


def _quality_text(q, draws: int) -> str:
    from question_bank import quality as ql

    def shares(c) -> str:
        return " ".join(f"({k}) {v:.0%}" for k, v in ql.letter_shares(c).items())

    by_type = families_by_type(q)
    lines = ["", f"quality ({draws} draws per family):",
             "  families checked, by the type they draw: " + ", ".join(f"{t} {n}" for t, n in by_type.items()
                                                                       if t != "numeric-mcq")
             + f" (of the MCQ families, {by_type.get('numeric-mcq', 0)} are numeric families drawn as MCQs)",
             f"  key positions, families: {shares(q.positions_families)}",
             f"  key positions, curated:  {shares(q.positions_curated)}  (no letter over {ql.MAX_LETTER_SHARE:.0%})"]
    for f in q.families.values():
        for kind, base in f.chance.items():
            n_kind = f.kinds.get(kind, 0)
            rules = {k: v for k, v in f.guessing.items()
                     if k.startswith("msq: ") == (kind == "msq") and v[1] >= max(10, n_kind // 4)}  # as the check
            if rules:
                name, (rate, n) = max(rules.items(), key=lambda kv: kv[1][0])
                lines.append(f"  {f.id} ({kind}): best blind rule '{name}' {rate:.0%} of {n} (chance {base:.0%})")
    n_blind = sum(f.blind_keys for f in q.families.values())
    n_draws = sum(f.draws for f in q.families.values() if not f.blind_exempt)
    exempt = [f.id for f in q.families.values() if f.blind_exempt]
    lines.append(f"  keys a blind guess (0, 1, a number of the statement) gives: {n_blind} of {n_draws}"
                 + (f" (not counted: {', '.join(exempt)}, where that is the point)" if exempt else ""))
    lines.append(f"  curated items study-only (shown, never graded): {len(q.study_only)}"
                 + (f" ({', '.join(q.study_only)})" if q.study_only else ""))
    lines.append(f"  families with a statement at two difficulties: "
                 f"{sum(1 for f in q.families.values() if f.shared_statements)} of {len(q.families)}")
    lines += _adversary_lines(q)
    if q.withdrawn:
        lines.append(f"  choice levels withdrawn (a test-wise student games them; not drawn, NAT forms stay): {len(q.withdrawn)}")
    if q.pending:
        lines.append(f"  pending (known, listed in question_bank.quality.PENDING): {len(q.pending)}")
        lines += [f"    {m}" for m in q.pending]
    lines += [f"  pending no more? {m}" for m in q.cleared]
    if q.ok:
        lines.append("ok: no other family fails a quality check")
    else:
        lines.append(f"{len(q.issues)} quality problem{'s' if len(q.issues) != 1 else ''}:")
        lines += [f"  {m}" for m in q.issues]
    return "\n".join(lines)


def _adversary_lines(q) -> list[str]:
    """The adversary's figures per family level (issue 22): for MCQ/MSQ, chance, the best fixed rule
    and the learned attacker on held-out seeds (and on right statements never seen in training); for
    NAT, the best one- and two-operation rule on the printed numbers and one remembered number; the
    easy answers remembered at medium/hard; distinct problems in 1,000 draws."""
    rows = []
    for f in q.families.values():
        for lvl, a in f.attack.items():
            if a.learned is not None:
                u = f", unseen {a.learned.unseen_rate:.0%}" if a.learned.unseen_rate is not None else ""
                what = (f"chance {a.chance:.0%}, fixed {a.fixed[0]:.0%}, learned {a.learned.rate:.0%}{u}")
            elif a.ops is not None:
                what = (f"one op {a.ops.one_op[0]:.0%} ({a.ops.one_op[1]}), two ops {a.ops.two_op[0]:.0%}, "
                        f"one number {a.ops.mode[0]:.0%}")
            else:
                what = a.kind
            mem = f", memorised easy {a.memory:.0%}" if a.memory is not None else ""
            rows.append(f"    {f.id:<38} {lvl:<6} {a.kind:<6} {what}{mem}; distinct in 1,000 ≈ {a.distinct_1000:.0f}")
    if not rows:
        return []
    return ["  adversary (issue 22; learned: held-out seeds; one op / two ops: best fixed recipe on the printed numbers):",
            *rows]


@bank.command("errata")
@click.option("--kind", type=click.Choice(["error", "rounding"]), default=None,
              help="Only errors of the source, or only rounding notes (the source's own rounding, not an error).")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list of {where, printed, exact, reason, kind, item, source_label}; kind is error or rounding.")
def errata(kind: str | None, as_json: bool) -> None:
    """Figures of the seed texts that the solver disagrees with: errata, then rounding notes."""
    from question_bank import bank as qb

    try:
        rows = qb.errata_table()
    except Exception as e:  # noqa: BLE001
        if type(e).__name__ == "CuratedError":
            raise _curated_error(e) from None
        raise
    if kind:
        rows = [r for r in rows if r["kind"] == kind]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        emit("no errata: every checked figure agrees with the solver")
        return
    errors = [r for r in rows if r["kind"] != "rounding"]
    notes = [r for r in rows if r["kind"] == "rounding"]
    for title, group in (("Errata (the source is wrong, or its figure cannot be derived from what it states)", errors),
                         ("Rounding notes (the source's own rounding, or a model's name: not an error)", notes)):
        if not group:
            continue
        emit(title)
        emit("")
        for r in group:
            emit(f"{r['where']}  [{r['item']}]")
            emit(f"    printed: {r['printed']}")
            emit(f"    exact:   {r['exact']}")
            emit(f"    why:     {r['reason']}")
        emit("")
    emit(f"{len(errors)} errata, {len(notes)} rounding note{'s' if len(notes) != 1 else ''}")
