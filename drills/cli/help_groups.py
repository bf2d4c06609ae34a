"""``--help`` of a ``qkv solve`` command in sections: the command's own options first, then the
shared groups (hardware, output, the ~45 model flags last).

An option joins a group by carrying ``help_group`` (set by the decorators that add the shared
flags: :func:`drills.cli.model_flags.model_options`, ``hardware_options``, ...); options without
one are the command's own. Plain click, no extra dependency.
"""

from __future__ import annotations

import functools
from typing import Any

import click

#: Section order after the command's own options.
ORDER = ("Hardware", "Link", "Output")


def mark(func: Any, n: int, group: str) -> Any:
    """Put the last ``n`` options added to ``func`` into ``group``."""
    for p in getattr(func, "__click_params__", [])[-n:]:
        p.help_group = group
    return func


class SolveCommand(click.Command):
    """A command whose help lists its options by group."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        groups: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            rv = param.get_help_record(ctx)
            if rv is not None:
                groups.setdefault(getattr(param, "help_group", None) or "", []).append(rv)
        own = groups.pop("", [])
        if own:
            with formatter.section("Options"):
                formatter.write_dl(own)
        for name in sorted(groups, key=lambda g: (ORDER.index(g) if g in ORDER else len(ORDER), g)):
            with formatter.section(f"{name} options" if name in ORDER else name):
                formatter.write_dl(groups[name])

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The registry entries this command is made from, read from the registry (solver.registry)."""
        super().format_epilog(ctx, formatter)
        entries = registry_entries(self.name)
        if entries:
            with formatter.section("Formula registry"):
                formatter.write_dl([(f.name, f"{f.summary} qkv calc: {f.name}(...); qkv calc --list {f.name}")
                                    for f in entries])


def registry_entries(command: str | None) -> list:
    """The registered formulas whose ``solve`` command is ``command``."""
    from solver.registry import formulas

    return [f for f in formulas().values() if f.solve and f.solve.split()[0] == command]


#: ``@solve_command()`` / ``@solve_command("name")``: click.command with grouped help.
solve_command = functools.partial(click.command, cls=SolveCommand)
