"""Parsed data files cached by content, in the user's cache directory (issue 40).

Parsing the curated TOML files (``question_bank/data``) takes tens of milliseconds on every
start of ``qkv quiz``; reading the same data back with :mod:`marshal` takes about one.
:func:`load` returns the parsed form of a file's bytes: from the cache entry named by a hash of
those bytes when there is one, else by parsing them (and then stores it). A changed file has
another hash, so it is parsed again: an entry never outlives the text it was parsed from.

Where: ``$QKV_CACHE_DIR`` when set, else the platform's user cache directory (what
``platformdirs.user_cache_dir("qkv")`` gives, without importing it: ``$XDG_CACHE_HOME/qkv`` or
``~/.cache/qkv`` on Linux, ``~/Library/Caches/qkv`` on macOS, ``%LOCALAPPDATA%\\qkv\\Cache`` on
Windows), under ``parsed/``. The cache is only ever a shortcut: an entry that cannot be read
(missing, truncated, written by another Python) is parsed again, a directory that cannot be
written is left alone, and nothing is printed either way. At most :data:`MAX_ENTRIES` entries
are kept (the oldest go first).
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # the built-in module: hashlib's import costs milliseconds (OpenSSL)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - every CPython ≥ 3.11 has it
    from hashlib import blake2b

__all__ = ["ENV_VAR", "cache_dir", "load", "entry_path"]

ENV_VAR = "QKV_CACHE_DIR"
#: Bumped when the form of an entry changes.
FORMAT = 1
MAX_ENTRIES = 64


def cache_dir() -> Path:
    """The directory of qkv's cache (not created)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "qkv" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "qkv"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "qkv"


def _digest(raw: bytes, kind: str) -> str:
    return blake2b(raw, digest_size=20, person=kind.encode()[:16]).hexdigest()


def entry_path(raw: bytes, kind: str) -> Path:
    """Where the parsed form of ``raw`` (a ``kind`` file, e.g. ``"toml"``) is kept."""
    return _entry_path(_digest(raw, kind), kind)


def _entry_path(digest: str, kind: str) -> Path:
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}m{marshal.version}f{FORMAT}"
    return cache_dir() / "parsed" / f"{kind}-{digest}-{tag}.marshal"


def load(raw: bytes, parse: Callable[[bytes], Any], kind: str = "toml") -> Any:
    """``parse(raw)``, or the same value as cached for these bytes. An error of ``parse``
    propagates (and nothing is cached)."""
    digest = _digest(raw, kind)
    try:
        path: Path | None = _entry_path(digest, kind)
    except RuntimeError:  # no home directory to put it in
        path = None
    if path is not None:
        try:
            with open(path, "rb") as f:
                stored, value = marshal.loads(f.read())
            if stored == digest:
                return value
        except (OSError, EOFError, ValueError, TypeError):  # no entry, or not one we wrote
            pass
    value = parse(raw)
    if path is not None:
        _store(path, (digest, value))
    return value


def _store(path: Path, entry: Any) -> None:
    try:
        blob = marshal.dumps(entry)
    except ValueError:  # a value marshal cannot write (a TOML date): not cached
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(blob)
        os.replace(tmp, path)  # readers see the whole entry or none
        _prune(path.parent)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _prune(folder: Path) -> None:
    entries = []
    for p in folder.glob("*.marshal"):
        try:
            entries.append((p.stat().st_mtime, p))
        except OSError:
            continue
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort()
    for _, p in entries[: len(entries) - MAX_ENTRIES]:
        try:
            p.unlink()
        except OSError:
            pass
