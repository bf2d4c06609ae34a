"""A static index of the registered families, so that a quiz imports only the family modules it asks.

Importing every family module (``question_bank.families``) costs tens of milliseconds and the quiz's
first question needs one of them (issue 40). :data:`FAMILY_INDEX`
(``question_bank/family_index_data.py``, generated) lists each family id with what a session's plan
reads of it: the module that registers it, its topic, types, difficulties and tags, and for a
numeric-MCQ view (``question_bank.numeric_mcq``) the family it views. :func:`load_family` imports
that one module (and registers the view), and :class:`LazyFamilies` is the registry as a mapping
that loads each family when it is first looked up.

The index is data, so it could go stale: ``tests/question_bank/test_family_index.py`` checks it
against the real registry (:func:`build_index` of :func:`question_bank.family.all_families`), and
that loading each family on its own needs no fallback. After adding or changing a family,
regenerate it::

    python -m question_bank.family_index

A family missing from the index, or one its module does not register, is still found: through
the full registry (:func:`question_bank.family.all_families`), only slower.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from question_bank.family_index_data import FAMILY_INDEX

__all__ = ["FAMILY_INDEX", "PACKAGE", "load_family", "LazyFamilies", "build_index", "render_index", "main"]

PACKAGE = "question_bank.families"
DATA_FILE = Path(__file__).with_name("family_index_data.py")

_LOCK = threading.Lock()
#: ids that :func:`load_family` had to find through the full registry (a stale index); the tests read it
FALLBACKS: list[str] = []


def _import_package() -> None:
    """``question_bank.families`` imported without importing every family module (when not yet
    imported): its ``__init__`` reads ``question_bank.family._partial_import``."""
    if PACKAGE in sys.modules:
        return
    from question_bank import family

    with _LOCK:
        if PACKAGE in sys.modules:
            return
        family._partial_import = True
        try:
            importlib.import_module(PACKAGE)
        finally:
            family._partial_import = False


def load_family(fid: str) -> Any:
    """The registered :class:`~question_bank.family.Family` ``fid``, importing only its module
    (and registering it as a numeric-MCQ view when it is one). ``KeyError`` for an unknown id."""
    from question_bank.family import FAMILIES, all_families

    fam = FAMILIES.get(fid)
    if fam is not None:
        return fam
    entry = FAMILY_INDEX.get(fid)
    if entry is not None:
        _import_package()
        importlib.import_module(f"{PACKAGE}.{entry[0]}")
        base = entry[5]
        if base:
            from question_bank import numeric_mcq

            load_family(base)
            if base in numeric_mcq.NUMERIC_MCQ:
                numeric_mcq.register(FAMILIES, {base: numeric_mcq.NUMERIC_MCQ[base]})
        fam = FAMILIES.get(fid)
        if fam is not None:
            return fam
    FALLBACKS.append(fid)
    return all_families()[fid]


class LazyFamilies(Mapping[str, Any]):
    """The families of :data:`FAMILY_INDEX` as a read-only mapping id -> Family, each family's
    module imported when the family is first looked up; :meth:`meta` lists them without importing
    any: ``(id, topic, types, difficulties, tags)``."""

    def __init__(self, index: Mapping[str, tuple[Any, ...]] | None = None):
        self._index = FAMILY_INDEX if index is None else index
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, fid: str) -> Any:
        fam = self._loaded.get(fid)
        if fam is None:
            if fid not in self._index:
                raise KeyError(fid)
            fam = self._loaded[fid] = load_family(fid)
        return fam

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, fid: object) -> bool:
        return fid in self._index

    def meta(self) -> Iterator[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        for fid, (_, topic, types, difficulties, tags, _) in self._index.items():
            yield fid, topic, types, difficulties, tags


# --------------------------------------------------------------------------------------------
# the index, from the real registry


def build_index(families: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """The index of a registry (id -> Family, every module imported): per id ``(module, topic,
    types, difficulties, tags, view_of)``, ``module`` the name under ``question_bank.families``
    of the module that defines its generator (for a view: its base family's), ``view_of`` the
    viewed family's id for a numeric-MCQ view, else ``""``."""
    from question_bank import numeric_mcq

    out: dict[str, tuple[Any, ...]] = {}
    for fid, f in families.items():
        base = fid[: -len(numeric_mcq.SUFFIX)] if fid.endswith(numeric_mcq.SUFFIX) and \
            f.build.__module__ == numeric_mcq.__name__ else ""
        module = (families[base] if base else f).build.__module__
        prefix = PACKAGE + "."
        module = module[len(prefix):] if module.startswith(prefix) else module
        out[fid] = (module, f.topic, tuple(f.types), tuple(f.difficulties), tuple(f.tags), base)
    return out


def render_index(index: Mapping[str, tuple[Any, ...]]) -> str:
    """The text of ``family_index_data.py`` for ``index``."""
    lines = ['"""Generated by ``python -m question_bank.family_index`` from the registry; do not edit by hand.',
             "",
             "Per family id: (module under question_bank.families, topic, types, difficulties, tags, the family",
             'a numeric-MCQ view views or "").',
             "Checked against the registry by tests/question_bank/test_family_index.py.",
             '"""',
             "",
             "FAMILY_INDEX: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], str]] = {"]
    lines += [f"    {fid!r}: {entry!r}," for fid, entry in index.items()]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Rewrite ``family_index_data.py`` from the registry."""
    from question_bank.family import all_families

    index = build_index(all_families())
    text = render_index(index)
    changed = not DATA_FILE.exists() or DATA_FILE.read_text(encoding="utf-8") != text
    if changed:
        DATA_FILE.write_text(text, encoding="utf-8")
    print(f"{DATA_FILE.name}: {len(index)} families, {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
