"""The session's problems, built on demand: the first one on screen under an import guard (no
NumPy, SymPy or torch: the quiz shows its first question in about the time of ``import numpy``),
the next ones in a background thread."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from drills.quiz.plan import Catalogue, Pick

if TYPE_CHECKING:
    pass

SLOW_MODULES = frozenset({"numpy", "sympy", "torch", "matplotlib", "scipy"})
FIRST_TRIES = 8  # problems tried under the import guard for the first one on screen


class _SlowImport(BaseException):  # noqa: N818 - not an error: a signal to try another problem
    """Raised by :class:`_ImportGuard`; a BaseException so that no generator swallows it."""


class _ImportGuard:
    """A ``sys.meta_path`` finder that stops the import of the given top-level packages."""

    def __init__(self, names: frozenset[str]):
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.names:
            raise _SlowImport(fullname)
        return None


def without_slow_imports(fn: Any, names: frozenset[str] = SLOW_MODULES) -> tuple[bool, Any]:
    """``(True, fn())`` when ``fn`` runs without importing any of ``names`` that is not
    imported yet; ``(False, None)`` when it would import one."""
    missing = frozenset(n for n in names if n not in sys.modules)
    if not missing:
        return True, fn()
    guard = _ImportGuard(missing)
    sys.meta_path.insert(0, guard)
    try:
        return True, fn()
    except _SlowImport:
        return False, None
    finally:
        sys.meta_path.remove(guard)


class ProblemSource:
    """The session's problems, built on demand; :meth:`prefetch` builds one in a background
    thread. A pick that cannot be built gives ``None`` (and a message through ``warn``)."""

    def __init__(self, catalogue: Catalogue, picks: list[Pick], type_: str | None = None):
        self.catalogue = catalogue
        self.picks = list(picks)
        self.type = type_
        self._done: dict[int, Any] = {}
        self._threads: dict[int, threading.Thread] = {}
        self.errors: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.picks)

    def _build(self, i: int) -> None:
        try:
            self._done[i] = self.catalogue.build(self.picks[i], self.type)
        except Exception as e:  # noqa: BLE001 - one unusable problem must not end the session
            self._done[i] = None
            self.errors[i] = f"{self.picks[i].ref}: {type(e).__name__}: {e}"

    def start(self) -> None:
        """Put first a problem of the first group that builds without a slow import."""
        if not self.picks:
            return
        group = self.picks[0].group
        for j in range(min(FIRST_TRIES, len(self.picks))):
            if self.picks[j].group != group:
                break
            try:
                # the family's module imported unguarded (no family module imports a slow one at import;
                # its generator may): an import stopped halfway would leave its families registered
                if self.picks[j].kind == "family":
                    self.catalogue.families[self.picks[j].ref]
                ok, problem = without_slow_imports(lambda j=j: self.catalogue.build(self.picks[j], self.type))
            except Exception:  # noqa: BLE001 - built (and reported) again in its turn
                continue
            if ok:
                self.picks.insert(0, self.picks.pop(j))
                self._done[0] = problem
                return

    def prefetch(self, i: int) -> None:
        if 0 <= i < len(self.picks) and i not in self._done and i not in self._threads:
            t = threading.Thread(target=self._build, args=(i,), name=f"qkv-prefetch-{i}", daemon=True)
            self._threads[i] = t
            t.start()

    def get(self, i: int) -> Any:
        t = self._threads.get(i)
        if t is not None:
            t.join()
        elif i not in self._done:
            self._build(i)
        return self._done.get(i)
