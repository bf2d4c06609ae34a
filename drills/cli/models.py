"""``qkv models list|show|verify``: the model zoo, and the proof of its counts.

``list`` and ``show`` need only the analytic counts (no torch). ``verify`` builds each model
with ``solver.models`` (meta by default: any size, no memory), compares instantiated with
analytic parameters, FlopCounterMode's FLOPs with the analytic matmul FLOPs (forward, decode,
train) and the KV cache's bytes with the formula, prints a table, and exits with status 1 on
any mismatch. The numbers come from ``solver.models.verify``; this module only prints.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from drills.output import InputError, emit, emit_json, emit_labelled


@click.group()
def models() -> None:
    """The model zoo: list, show, verify against real PyTorch models."""


def _preset(name: str):
    from solver.counting.presets import get_preset
    from solver.errors import SolverInputError

    try:
        return get_preset(name)
    except SolverInputError as e:
        raise InputError(str(e.args[0]), "NAME") from None


def _gap(p) -> str:
    gap = p.relative_gap()
    return "" if gap is None else f"{100 * gap:+.2f}%"


def _render(table) -> str:
    """A rich table as plain text (colour only on a terminal)."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    Console(file=buf, width=160, force_terminal=sys.stdout.isatty(), color_system="auto" if sys.stdout.isatty()
            else None).print(table)
    return buf.getvalue().rstrip("\n")


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_models(as_json: bool) -> None:
    """Every preset: exact parameters beside the published figure."""
    from rich.table import Table

    from solver.counting.presets import PRESETS

    rows = [(p, p.exact()) for p in PRESETS.values()]
    if as_json:
        emit_json({"presets": [{"name": p.name, "family": p.family, "arch": p.config.arch, "exact": exact,
                                "published": p.published, "published_text": p.published_text,
                                "relative_gap": p.relative_gap(), "source": p.source} for p, exact in rows]})
        return
    table = Table(box=None, header_style="bold")
    for col, justify in (("name", "left"), ("arch", "left"), ("exact params", "right"),
                         ("published", "right"), ("gap", "right")):
        table.add_column(col, justify=justify)
    for p, exact in rows:
        table.add_row(p.name, p.config.arch, f"{exact:,}", p.published_text or "-", _gap(p))
    emit(_render(table))
    emit("\nqkv models show NAME: breakdown, source and why the figures differ; "
         "qkv models verify: check against PyTorch.")


@models.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def show(name: str, as_json: bool) -> None:
    """One preset: configuration, parameter breakdown, exact vs published, and why."""
    from rich.table import Table

    from solver.counting import param_breakdown

    p = _preset(name)
    bd = param_breakdown(p.config)
    if as_json:
        emit_json({"name": p.name, "config": p.config.to_dict(), "exact": bd.total, "published": p.published,
                   "published_text": p.published_text, "relative_gap": p.relative_gap(), "source": p.source,
                   "note": p.note, "breakdown": bd.to_json()})
        return
    cfg = p.config
    emit_labelled(p.name, f"({cfg.arch}, {cfg.n_layers} layers, d_model {cfg.d_model}, {cfg.n_heads} heads"
                  f"{f' / {cfg.kv_heads} KV' if cfg.kv_heads != cfg.n_heads else ''}, d_head {cfg.head_dim}, "
                  f"d_ff {cfg.d_ff} {cfg.ffn}, {cfg.norm_position}-{cfg.norm}, pos {cfg.pos}, "
                  f"vocab {cfg.vocab_size})", len(p.name) + 2)
    table = Table(box=None, header_style="bold")
    for col, justify in (("component", "left"), ("shape × times", "left"), ("formula", "left"), ("count", "right")):
        table.add_column(col, justify=justify)
    for label, shape, formula, count in bd.table():
        table.add_row(label, shape, formula, f"{count:,}")
    emit(_render(table))
    emit(f"total      {bd.total:,}  (embedding {bd.embedding:,}, non-embedding {bd.non_embedding:,})")
    if bd.lora:
        emit(f"LoRA       {bd.lora:,} more (adapters)")
    emit(f"published  {p.published_text or '-'}" + (f"  gap {_gap(p)}" if p.published else ""))
    emit_labelled("source", p.source, 11)
    emit_labelled("why", p.note, 11)


@models.command("verify")
@click.argument("names", nargs=-1)
@click.option("--device", type=click.Choice(["meta", "cpu", "cuda"]), default="meta", show_default=True,
              help="meta counts without allocating; cpu/cuda build the model for real (memory-checked first).")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--seq", type=click.IntRange(min=2), default=128, show_default=True,
              help="Sequence length (clipped to the position table); decode attends to seq positions.")
@click.option("--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes for --device meta (0 = auto: 1 on up to 2 cores, else cores − 1, at most 4).")
@click.option("--full-train", is_flag=True,
              help="Measure train FLOPs with a backward pass of each whole model (slower), not on 1- and "
                   "2-layer slices of the stacks deeper than 2 layers.")
@click.option("--fit", is_flag=True,
              help="On cpu/cuda, build a model that does not fit (or would run past 120 s) at the fewest layers "
                   "that keep every kind it has (dense first layers, MoE, local and global), then, for a large "
                   "MoE, with its experts halved until it fits; the table names what was built, and the counts "
                   "are exact for it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (described above).")
@click.pass_context
def verify_cmd(ctx: click.Context, names: tuple[str, ...], device: str, batch: int, seq: int, jobs: int,
               full_train: bool, fit: bool, as_json: bool) -> None:
    """Build each preset (all by default) and check its counts against the real PyTorch model.

    Parameters: numel of the built model's parameters vs the analytic count (in total and per
    group). FLOPs: FlopCounterMode around a forward pass, a decode step and a training step
    (forward + backward) vs the analytic matmul FLOPs. KV cache: bytes of the cache tensors
    after the decode step vs the formula. Exit status 1 on any mismatch; a model that does not
    fit on cpu/cuda, or whose run is estimated past 120 s there, is not built (listed below the
    table, not a mismatch); sizes no device can describe are refused before any model is built.

    \b
    --json prints one object:
      {"device", "batch", "seq", "ok" (no mismatch; a model not built is none),
       "models": [{"name", "device", "batch", "seq", "ok", "seconds",
                   "error" (null, or why the model was not built),
                   "checks": [{"quantity", "analytic", "measured", "ok", "note"}]}]}
    quantity: params, params[GROUP], flops[forward|decode|train], kv_cache_bytes,
    kv_cache_bytes[+cross]; counts are exact integers. On cpu/cuda a model also has
    "forward_seconds", on cuda "peak_memory" ({"math", "sdpa", "score_matrix_bytes"}); with --fit,
    a model built smaller has "built" ({"layers", "full_layers"} by stack, and "experts",
    "full_experts" where they were halved)."""
    from drills.cli.extras import require_torch
    from solver.counting.presets import preset_names
    from solver.errors import SolverInputError

    presets = [_preset(n) for n in (names or preset_names())]
    _refuse_indescribable(presets, batch, seq)  # every model's size bound first (no torch yet): one line
    require_torch("qkv models verify")
    jobs = min(jobs, len(presets), os.cpu_count() or 1) if jobs else 0  # more processes than cores gain nothing
    try:
        from solver.models.verify import require_device

        require_device(device)
    except SolverInputError as e:
        raise InputError(str(e.args[0]), "--device") from None
    records = _run(presets, device, batch, seq, jobs, train="full" if full_train else "by-layers", fit=fit)
    if names and all(r.error is not None for r in records):  # nothing was run: one line, as for any refusal
        raise InputError(records[0].error if len(records) == 1 else
                         f"none of the models was built; {records[0].name}: {records[0].error}")
    failed = [r for r in records if r.error is None and not r.ok]
    if as_json:
        emit_json({"device": device, "batch": batch, "seq": seq, "ok": not failed,
                   "models": [r.to_json() for r in records]})
    else:
        emit(_verify_table(records))
        for r in failed:
            for c in r.checks:
                if not c.ok:
                    emit(f"MISMATCH {r.name}: {c.quantity} analytic {c.analytic:,} != measured {c.measured:,} "
                         f"(measured - analytic = {c.measured - c.analytic:+,})")
        skipped = [r for r in records if r.error is not None]
        for r in skipped:
            emit(f"not built {r.name}: {r.error}")
        for r in records:
            mem = r.extra.get("peak_memory")
            if mem:
                emit(f"{r.name}: forward peak memory {mem['math']:,} B with the score matrix materialised (math), "
                     f"{mem['sdpa']:,} B with sdpa (flash/efficient); one layer's scores: "
                     f"{mem['score_matrix_bytes']:,} B")
        emit(f"\n{len(records) - len(failed) - len(skipped)} of {len(records)} models match exactly on {device} "
             f"(batch {batch}, seq {seq})" + (f"; {len(skipped)} not built" if skipped else ""))
        if any("slices" in c.note for r in records for c in r.checks):
            emit("train FLOPs of a stack deeper than 2 layers: measured on the same model at 1 and 2 layers, "
                 "scaled by its layers (--full-train: one backward pass of the whole model)")
    if failed:
        ctx.exit(1)


def _refuse_indescribable(presets, batch: int, seq: int) -> None:
    """One line (exit 2), before any model is built, when ``batch`` × ``seq`` passes the bound that
    ``solver.models.verify.verify`` would hit for some of ``presets``: a tensor of the run beyond what
    torch can describe even on the meta device (2^63 bytes). The check is analytic (about 0.2 ms a
    model); before it, ``qkv models verify --batch 1000000000 --seq 1000000000000`` over the zoo
    built and verified the 24 models whose position table clips the sequence and listed the other
    23 as not built (8 to 60 s, exit 0). The line names how many, the largest part of the worst, and
    the largest --seq (else --batch) that every model given takes."""
    from solver.models.verify import beyond_describable, largest_describable

    over = [(p, big) for p in presets if (big := beyond_describable(p.config, batch, seq))]
    if not over:
        return
    from solver.models.guard import describe

    worst, big = max(over, key=lambda pb: max(pb[1].values()))
    cfgs = [p.config for p, _ in over]
    which, whose = ((f"{worst.name} is", "") if len(presets) == 1 else
                    (f"{len(over)} of {len(presets)} models are", f"the largest, {worst.name}: "))
    every = "it takes" if len(presets) == 1 else "every model takes"
    most_seq = largest_describable(cfgs, batch, seq, "seq")
    if most_seq is not None:
        hint = f"at --batch {_n(batch)} {every} --seq up to {_n(most_seq)}"
    else:
        most_batch = largest_describable(cfgs, batch, seq, "batch")
        hint = (f"at --seq {_n(seq)} {every} --batch up to {_n(most_batch)}" if most_batch is not None
                else "use a smaller --batch and --seq")
    raise InputError(f"at batch {_n(batch)} × seq {_n(seq)} {which} beyond what torch can describe even on the "
                     f"meta device ({whose}{describe(big)}; a tensor's size must stay below 2^63 bytes); {hint}",
                     "--batch/--seq")


def _n(n: int) -> str:
    """``1,000,000`` up to 10^15, then ``10^21.0`` (a 400-digit --batch stays one short line)."""
    import math

    return f"{n:,}" if n < 10**15 else f"10^{math.log10(n):.1f}"


def auto_jobs(device: str, n_models: int, cores: int) -> int:
    """The default --jobs: 1 on up to 2 cores, else cores − 1 (at most 4), and 1 off the meta device.

    Measured (``qkv models verify``, all 33 presets, --device meta, on the 2-core CI machine shared
    with other work): every worker is a spawned process that imports torch again (about 5 s of
    CPU more per extra worker: user 23-31 s with --jobs 1 against 30-32 s with --jobs 2). With
    the second core idle --jobs 2 won (12.5 s against 21.0 s wall), but with the machine loaded
    (load average 3-5) it lost three times out of three (62.1, 52.1, 54.9 s against 45.7, 49.9,
    36.8 s). On two cores the
    gain needs a core nobody else uses, so the default keeps one process; with more cores one
    is left for the parent and everything else. Off the meta device models allocate real
    memory, so they run one at a time.
    """
    if device != "meta" or n_models <= 4 or cores <= 2:
        return 1
    return min(cores - 1, 4)


def _run(presets, device: str, batch: int, seq: int, jobs: int, train: str, fit: bool = False) -> list:
    """Verify each preset with a progress bar on stderr (only on a terminal)."""
    import os

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from solver.models.verify import verify_many

    if jobs == 0:
        jobs = auto_jobs(device, len(presets), os.cpu_count() or 1)
    columns = (TextColumn("{task.description:<26}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True,
                  disable=not sys.stderr.isatty()) as progress:
        task = progress.add_task("verifying", total=len(presets))
        return verify_many([(p.name, p.config) for p in presets], device, batch=batch, seq=seq, jobs=jobs,
                           # on meta the decode step starts from a cache of zeros (no prefill to run)
                           prefill="zeros" if device == "meta" else "run", train=train, fit=fit,
                           on_done=lambda r: progress.update(task, advance=1, description=r.name))


def _cell(rec, quantity: str) -> str:
    try:
        c = rec.get(quantity)
    except KeyError:
        return "-"
    return f"{c.measured:,}" if c.ok else f"[red]{c.measured:,} != {c.analytic:,}[/red]"


def _built(rec) -> str:
    """`` (4/61 layers, 128/256 experts)`` for a model --fit built smaller, else nothing."""
    from solver.models.verify import built_label

    b = rec.extra.get("built")
    return f" ({built_label(b)})" if b else ""


def _verify_table(records) -> str:
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for col, justify in (("model", "left"), ("params", "right"), ("forward FLOPs", "right"),
                         ("decode FLOPs", "right"), ("train FLOPs", "right"), ("KV cache B", "right"),
                         ("s", "right"), ("", "left")):
        table.add_column(col, justify=justify)
    for r in records:
        status: Any = "OK" if r.ok else ("not built (below)" if r.error else "[red]MISMATCH[/red]")
        table.add_row(r.name + _built(r), _cell(r, "params"), _cell(r, "flops[forward]"), _cell(r, "flops[decode]"),
                      _cell(r, "flops[train]"), _cell(r, "kv_cache_bytes"), f"{r.seconds:.2f}", status)
    return _render(table)
