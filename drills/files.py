"""Files the user names: writing ``-o`` safely and reading ``--from``/``--config`` with a cap.

- :func:`check_output` allows only a regular file or a new name: a device node, a FIFO, a
  socket, a folder or a symbolic link is refused in one line (``-o -`` writes to standard output
  on purpose, where the command offers it).
- :func:`write_files` writes every file or none: each goes first to a temporary file created
  exclusively beside its target (``tempfile.mkstemp``: ``O_CREAT | O_EXCL``, a random name, so a
  link planted at a predictable name is never followed), is flushed to disk, then renamed over the
  target. The new file gets the permissions an ordinary ``open(..., "w")`` would give (0666 less
  the umask), not mkstemp's 0600.
- :func:`read_capped` reads a regular file of at most ``limit`` bytes; a device (a link to
  ``/dev/zero``), a FIFO or a larger file is refused before it is read, and never more than
  ``limit + 1`` bytes are read (a file growing while read).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from drills.output import InputError

STDOUT = "-"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def is_stdout(path: Path | str | None) -> bool:
    return path is not None and str(path) == STDOUT


def check_output(path: Path, option: str = "-o", *, stdout_ok: bool = True) -> None:
    """Refuse (one line) a target that is not a regular file or a new name in an existing folder."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"no such directory: {parent}", option) from None
        return
    except OSError as e:
        raise InputError(f"cannot write {str(path)!r}: {e.strerror or e}", option) from None
    if stat.S_ISREG(st.st_mode):
        return
    hint = " (write to standard output with -o -)" if stdout_ok else ""
    raise InputError(f"{str(path)!r} is {_kind(st.st_mode)}; qkv writes only to a regular file or a new name, "
                     f"nothing was written{hint}", option)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_files(files: dict[Path, bytes], option: str = "-o") -> None:
    """Write every file or none, each through an exclusively created temporary file beside it.

    A failure (a full disk, a target that is not a regular file) removes the temporary files and
    raises one line naming the file; targets already in place are left as they were."""
    for path in files:
        check_output(path, option)
    mode = 0o666 & ~_umask()
    tmps: dict[Path, str] = {}
    path = next(iter(files), Path("."))
    try:
        for path, data in files.items():
            directory = path.parent if str(path.parent) else Path(".")
            fd, tmps[path] = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), mode)
        for path in files:
            check_output(path, option)  # again, just before the rename: nothing put there meanwhile
        for path, tmp in tmps.items():
            os.replace(tmp, path)  # replaces the name itself, never what a link points to
    except OSError as e:
        for tmp in tmps.values():
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise InputError(f"cannot write {str(path)!r}: {e.strerror or e}; nothing was written", option) from None
    except BaseException:
        for tmp in tmps.values():
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def write_stdout(data: bytes | str) -> None:
    """Write ``data`` to standard output (``-o -``)."""
    if isinstance(data, str):
        sys.stdout.write(data)
        sys.stdout.flush()
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def size_words(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 2**10:g} KiB"


def read_capped(path: Path, limit: int, option: str) -> bytes:
    """The bytes of the regular file ``path`` (links followed), refused in one line when it is a
    device, a FIFO or a folder, or larger than ``limit`` bytes; never reads more than ``limit + 1``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO with no writer must not hang
    except OSError as e:
        raise InputError(f"cannot read {str(path)!r}: {e.strerror or e}", option) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{str(path)!r} is {_kind(st.st_mode)}, not a regular file; nothing was read", option)
        if st.st_size > limit:
            raise InputError(f"{str(path)!r} is {size_words(st.st_size)}, larger than the {size_words(limit)} "
                             "this option reads", option)
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise InputError(f"{str(path)!r} grew past the {size_words(limit)} this option reads", option)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"cannot read {str(path)!r}: {e.strerror or e}", option) from None
    finally:
        os.close(fd)
