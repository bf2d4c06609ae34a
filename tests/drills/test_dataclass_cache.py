"""The dataclass method cache (drills.dataclass_cache): the same methods as without it, kept across
runs, used only for qkv's own classes, and harmless when its file is missing, damaged or foreign."""

from __future__ import annotations

import builtins
import dataclasses
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from drills import dataclass_cache as dc

SOURCE = '''
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Key:
    value: float
    decimals: int = 2
    tags: tuple = ()


@dataclass(order=True)
class Item:
    name: str
    weight: float = 1.0
    parts: list = field(default_factory=list)
    key: "Key | None" = None
'''


def _module(name: str) -> types.ModuleType:
    """``SOURCE`` run as module ``name`` (registered in sys.modules, as dataclasses needs)."""
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    try:
        exec(compile(SOURCE, f"<{name}>", "exec"), mod.__dict__)
    finally:
        del sys.modules[name]
    return mod


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """The cache installed on a file of its own, not read yet, stats at zero; dataclasses as it was after."""
    monkeypatch.setattr(dc, "_codes", {})
    monkeypatch.setattr(dc, "_blobs", None)
    monkeypatch.setattr(dc, "_dirty", set())
    monkeypatch.setattr(dc, "stats", {"hits": 0, "misses": 0})
    had = dataclasses.__dict__.get("exec", None)
    monkeypatch.setattr(dataclasses, "exec", had, raising=False)
    monkeypatch.setattr(dc.atexit, "register", lambda fn: fn)  # no save at the test run's exit
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dc.install(tmp_path / "cache.marshal")
    yield tmp_path / "cache.marshal"
    if had is None:
        monkeypatch.delattr(dataclasses, "exec", raising=False)
    monkeypatch.setattr(dc, "_path", None)


METHODS = ["__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__ge__"]


def _methods(cls: type) -> dict[str, types.FunctionType]:
    return {m: cls.__dict__[m] for m in METHODS if isinstance(cls.__dict__.get(m), types.FunctionType)}


def test_cached_methods_are_those_exec_compiles(fresh, monkeypatch):
    """Cold, then warm from the file: each method's code, defaults and annotations are those of
    dataclasses without the cache, and the classes behave the same."""
    cold = _module("drills._dc_probe")
    assert dc.stats == {"hits": 0, "misses": dc.stats["misses"]} and dc.stats["misses"] >= 10
    dc.save()
    assert fresh.exists()
    monkeypatch.setattr(dc, "_codes", {})  # as a new process: read the file
    monkeypatch.setattr(dc, "_blobs", None)
    warm = _module("drills._dc_probe")
    assert dc.stats["hits"] == dc.stats["misses"]
    monkeypatch.setattr(dataclasses, "exec", builtins.exec)  # no cache at all
    plain = _module("drills._dc_probe")
    for name in ("Key", "Item"):
        a, b, c = (_methods(getattr(m, name)) for m in (cold, warm, plain))
        assert a.keys() == b.keys() == c.keys() and len(c) >= 3
        for m in c:
            assert b[m].__code__ == c[m].__code__ and a[m].__code__ == c[m].__code__, (name, m)
            assert b[m].__code__.co_filename == c[m].__code__.co_filename
            assert b[m].__defaults__ == c[m].__defaults__
            assert b[m].__annotations__ == c[m].__annotations__, (name, m)
    k1, k2 = warm.Key(0.5), plain.Key(0.5)
    assert repr(k1) == repr(k2) and hash(k1) == hash(k2) and k1 == warm.Key(0.5, 2, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        k1.value = 1.0
    i1 = warm.Item("a")
    i1.parts.append(1)
    assert warm.Item("a").parts == [] and warm.Item("a") < warm.Item("b") and repr(i1) == repr(plain.Item("a", 1.0, [1]))


def test_other_packages_are_not_cached(fresh):
    _module("elsewhere._dc_probe")
    assert dc.stats == {"hits": 0, "misses": 0}
    dc.save()
    assert not fresh.exists()


@pytest.mark.parametrize("content", [b"", b"not marshal", None], ids=["empty", "garbage", "foreign"])
def test_a_damaged_or_foreign_file_is_ignored(fresh, content):
    import marshal

    if content is None:  # another Python's cache: same format, other version
        content = marshal.dumps((1, "2.7.18 (other)", {"def x(): pass": compile("0", "<string>", "exec")}))
    fresh.write_bytes(content)
    mod = _module("drills._dc_probe")
    assert mod.Key(1.0) == mod.Key(1.0) and dc.stats["hits"] == 0 and dc.stats["misses"] > 0
    dc.save()  # rewritten, now readable
    assert isinstance(marshal.loads(fresh.read_bytes())[2]["drills._dc_probe"], bytes)


def test_an_unwritable_place_is_no_error(fresh, monkeypatch):
    monkeypatch.setattr(dc, "_path", Path("/proc/qkv-no-such-dir/cache.marshal"))
    _module("drills._dc_probe")
    dc.save()  # nothing written, nothing raised


PROBE = """
import json
from drills.dataclass_cache import install, stats, cache_path
install()
import drills.quiz.session, drills.quiz.view, question_bank.problem, question_bank.family  # noqa
print(json.dumps({**stats, "path": str(cache_path())}))
"""


def _run(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_a_second_run_compiles_no_dataclass_method(tmp_path):
    """What the quiz's start-up gains: the first process compiles the methods of qkv's dataclasses
    and keeps them; the next compiles none (under PYTHONPYCACHEPREFIX, as Python's own cache);
    with PYTHONDONTWRITEBYTECODE nothing is written."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    first = _run(env)
    assert first["misses"] >= 50  # (a few hits too: classes whose methods read the same)
    assert Path(first["path"]).is_file() and Path(first["path"]).is_relative_to(tmp_path)
    second = _run(env)
    assert second["misses"] == 0 and second["hits"] == first["misses"] + first["hits"]
    off = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "none")}
    assert _run(off)["misses"] == first["misses"] and _run(off)["misses"] == first["misses"]
    assert not (tmp_path / "none").exists()
