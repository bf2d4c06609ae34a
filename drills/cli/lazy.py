"""A click group whose subcommands are imported only when they are run.

``qkv --help`` lists every command from the short help given here, without importing the
module that implements it; this keeps start-up at the cost of one Python interpreter.
"""

from __future__ import annotations

import importlib
import importlib.util

import click


class LazyGroup(click.Group):
    """Subcommands given as ``{name: ("module:attribute", "short help")}``; ``aliases`` are names people reach for
    that another command answers with given options: ``{name: (command, [options], "short help")}``."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]] | None = None,
                 aliases: dict[str, tuple[str, list[str], str]] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self.aliases = dict(aliases or {})

    def _available(self, name: str) -> bool:
        module_name = self.lazy[name][0].split(":")[0]
        try:
            return importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:
            return False

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = {name for name in self.lazy if self._available(name)}
        return sorted(set(super().list_commands(ctx)) | lazy)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and self._available(name):
            target, _ = self.lazy[name]
            module_name, attr = target.split(":")
            command = getattr(importlib.import_module(module_name), attr)
            command.name = name
            return command
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] in self.aliases:
            command, options, _ = self.aliases[args[0]]
            args = [command, *options, *args[1:]]
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            if args and e.message.startswith("No such command"):
                near = self.near(ctx, args[0])
                if near:
                    e.message += f" Did you mean {', '.join(near[:-1])}{' or ' if len(near) > 1 else ''}{near[-1]}?"
            raise

    def near(self, ctx: click.Context, name: str) -> list[str]:
        """The commands a mistyped or guessed ``name`` may mean: those spelled alike, then those whose short help
        names every word of it (``kv-cache`` finds ``memory``: "Bytes of weights, KV cache, ...")."""
        import difflib
        import re

        names = self.list_commands(ctx) + sorted(self.aliases)
        alike = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
        words = [w for w in re.split(r"[-_\s]+", name.lower()) if len(w) > 1]
        helps = {n: (self.lazy[n][1] if n in self.lazy else self.aliases[n][2] if n in self.aliases else "")
                 for n in names}
        about = [n for n in names if words and n not in alike
                 and all(re.search(rf"(?<![a-z]){re.escape(w)}", helps[n].lower() + " " + n) for w in words)]
        return (alike + about)[:5]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy[name][1]))
            else:
                cmd = super().get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=formatter.width - 6 - len(name))))
        rows += [(name, help_) for name, (_, _, help_) in self.aliases.items()]
        rows.sort()
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def float_guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with NumPy's floating-point warnings (overflow, invalid, division
    by zero) turned into one line: a kernel either computes its answer stably or says that the
    numbers are beyond the float range; a warning never leaks and a NaN never passes as an answer."""
    import warnings

    from drills.output import InputError

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return fn(*args, **kwargs)
        except (RuntimeWarning, FloatingPointError) as w:
            raise InputError(f"the numbers are beyond what 64-bit floats hold here ({w}); use smaller magnitudes "
                             "or --exact where the command has it") from None
