"""Where qkv keeps the student's data (progress database, reports).

The data directory is, first match wins: the ``--data-dir`` option of a command, the
environment variable ``QKV_HOME``, then the platform's user data directory
(``platformdirs.user_data_dir("qkv")``: ``~/.local/share/qkv`` on Linux,
``~/Library/Application Support/qkv`` on macOS, ``%LOCALAPPDATA%\\qkv`` on Windows).

Commands take the option with the reusable decorator :data:`data_dir_option`, which passes
``data_dir`` (a ``Path`` or ``None``) to the command; :func:`data_dir` resolves it.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

ENV_VAR = "QKV_HOME"
APP_NAME = "qkv"


def default_data_dir() -> Path:
    """The platform's user data directory for qkv (not created)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))


def data_dir(override: str | os.PathLike[str] | None = None, *, create: bool = True) -> Path:
    """The data directory: ``override``, else ``$QKV_HOME``, else the platform default.

    With ``create`` the directory is made; failure raises ``drills.output.InputError`` (one line).
    """
    if override not in (None, ""):
        path = Path(override).expanduser()
        source = "--data-dir"
    elif os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR]).expanduser()
        source = ENV_VAR
    else:
        path = default_data_dir()
        source = "the default data directory"
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            from drills.output import InputError

            reason = e.strerror or type(e).__name__
            raise InputError(f"cannot create the data directory {str(path)!r} ({source}): {reason}; "
                             f"choose another with --data-dir or {ENV_VAR}") from None
        if not path.is_dir():
            from drills.output import InputError

            raise InputError(f"{str(path)!r} ({source}) is not a directory", "--data-dir")
    return path


data_dir_option = click.option(
    "--data-dir",
    "data_dir",
    type=click.Path(file_okay=False, dir_okay=True, path_type=Path),
    default=None,
    metavar="DIR",
    help=f"Where your progress is kept (default: ${ENV_VAR}, else your user data directory).",
)
