"""A bytecode cache for the methods that :mod:`dataclasses` writes, so that a command starts fast.

Python 3.11 builds each dataclass's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and a
frozen one's ``__setattr__``/``__delattr__``) by writing their source and compiling it with
``exec``: about 230 small compilations before the quiz's first question, a quarter of the
interpreter's work to that point (measured with callgrind: 514 M instructions to the first
question, 130 M of them parsing and compiling these methods; ``python -c "import numpy"`` is
400 M). Their source is the same from one run to the next, so their code objects can be kept as
Python keeps a module's: :func:`install` makes ``dataclasses`` compile through :func:`cached_exec`,
which looks the source up in a file in ``drills/__pycache__`` (read once; each module's methods
unmarshalled when that module defines its first dataclass), and the file is written at exit when a
source was missing. A cached code object is the one
``exec`` would compile from the same text (same file name ``<string>``, no inherited
``__future__`` flags, same optimisation level); the function is then made by running it, as
before, so every method, default and annotation is what it was.

Only classes of qkv's own packages (:data:`PACKAGES`) are cached; any other dataclass is built as
usual. The file follows Python's own bytecode cache: its name carries the interpreter's cache tag
and optimisation level, it is written only where ``__pycache__`` could be (not when
``PYTHONDONTWRITEBYTECODE`` is set, under ``PYTHONPYCACHEPREFIX`` when that is), and a missing,
unreadable or foreign file is ignored (the methods are compiled, as without the cache).
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
import threading
from pathlib import Path
from types import CodeType
from typing import Any

__all__ = ["PACKAGES", "cache_path", "cached_exec", "install", "stats"]

PACKAGES = ("drills.", "question_bank.", "solver.")
MAX_ENTRIES = 400  # per module: a bound on the file; qkv's largest module defines about 20 dataclasses
_FORMAT = 2

_lock = threading.Lock()
_blobs: dict[str, bytes] | None = None  # module -> its marshalled {source: code}; None: file not read yet
_codes: dict[str, dict[str, CodeType]] = {}  # module -> {source: code}, unmarshalled on first use
_path: Path | None = None
_dirty: set[str] = set()
stats = {"hits": 0, "misses": 0}  # read by the tests


def cache_path() -> Path:
    """Where the cache lives: beside drills' own bytecode (under ``sys.pycache_prefix`` if set)."""
    here = Path(__file__).resolve().parent
    name = f"dataclass_methods.{sys.implementation.cache_tag}.opt{sys.flags.optimize}.marshal"
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix) / here.relative_to(here.anchor) / name
    return here / "__pycache__" / name


def _module_codes(module: str) -> dict[str, CodeType]:
    """The cached methods of ``module``'s classes (the file is read once; each module's part is
    unmarshalled when that module first defines a dataclass: a command pays for what it imports)."""
    global _blobs
    if _blobs is None:
        blobs: dict[str, bytes] = {}
        try:
            data = marshal.loads((_path or cache_path()).read_bytes())
            if (isinstance(data, tuple) and len(data) == 3 and data[0] == _FORMAT and data[1] == sys.version
                    and isinstance(data[2], dict)):
                blobs = {k: v for k, v in data[2].items() if isinstance(k, str) and isinstance(v, bytes)}
        except (OSError, ValueError, EOFError, TypeError):
            pass
        _blobs = blobs
    codes = _codes.get(module)
    if codes is None:
        codes = {}
        blob = _blobs.pop(module, None)
        if blob is not None:
            try:
                data = marshal.loads(blob)
                if isinstance(data, dict):
                    codes = {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, CodeType)}
            except (ValueError, EOFError, TypeError):
                pass
        _codes[module] = codes
    return codes


def cached_exec(source: Any, globals: Any = None, locals: Any = None, /, **kw: Any) -> None:  # noqa: A002
    """``exec`` as :mod:`dataclasses` calls it, compiling a qkv class's method source once."""
    module = globals.get("__name__", "") if isinstance(globals, dict) else ""
    if kw or not isinstance(source, str) or not isinstance(module, str) or not module.startswith(PACKAGES):
        return builtins.exec(source, globals, locals, **kw)
    with _lock:
        codes = _module_codes(module)
        code = codes.get(source)
        if code is None:
            stats["misses"] += 1
            # exactly what exec(source) compiles: dataclasses has no __future__ imports to pass on
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if len(codes) < MAX_ENTRIES:
                codes[source] = code
                _dirty.add(module)
        else:
            stats["hits"] += 1
    return builtins.exec(code, globals, locals)


def save() -> None:
    """Write the cache if a method was compiled (atomically; silently not, where it cannot be)."""
    with _lock:
        if not _dirty or sys.dont_write_bytecode:
            return
        blobs = dict(_blobs or {})
        blobs.update({m: marshal.dumps(c) for m, c in _codes.items() if c})
        _dirty.clear()
        path = _path or cache_path()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(marshal.dumps((_FORMAT, sys.version, blobs)))
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass


def install(path: Path | None = None) -> None:
    """Make :mod:`dataclasses` compile qkv's methods through the cache (``path``: another file,
    for the tests), and write it at exit. Idempotent."""
    global _path, _blobs
    import dataclasses

    if path is not None and path != _path:
        _path, _blobs = path, None
        _codes.clear()
    if getattr(dataclasses, "exec", None) is not cached_exec:
        dataclasses.exec = cached_exec  # a module global shadows the builtin that _create_fn calls
        atexit.register(save)
