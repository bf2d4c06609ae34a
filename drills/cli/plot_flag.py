"""``--plot FILE`` (PNG or SVG by suffix) and ``--plot -`` (a plain-text sketch): the shared flag.

The picture modules live in :mod:`drills.plots`; they are imported only when ``--plot`` is given,
and matplotlib only when a file is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from drills.output import InputError, emit, warn


def plot_option(f):
    return click.option("--plot", "plot", metavar="FILE", default=None,
                        help="Draw the picture: FILE.png or FILE.svg (needs matplotlib: the 'plot' extra), "
                             "or - for an 80-column sketch in the terminal.")(f)


def check_plot(target: str | None, as_json: bool) -> None:
    """Refuse a bad target (or ``--plot -`` with ``--json``) before any work is done."""
    if target is None:
        return
    from drills.plots import check_target

    check_target(target)
    if target == "-" and as_json:
        raise InputError("the sketch would break the JSON; give a .png or .svg file with --json", "--plot")


def draw(picture: str, d: dict[str, Any], target: str) -> None:
    """Render ``d`` with ``drills.plots.<picture>``: print the sketch, or write the file and say so."""
    from drills.plots import render

    module = importlib.import_module(f"drills.plots.{picture}")
    text = render(module, d, target)
    if text is None:
        warn(f"plot: wrote {target}")
    else:
        emit("")
        emit(text)
