"""The quality draw of every family, generated once and shared (issue 40).

``test_every_family_quality.py`` checks 100 draws of every family (seeds 0, 1, ... at each level)
and ``test_validate_many.py`` audits the same draws and a window of further seeds: each problem is
generated once for both (about 16,600 problems, 14 kB each, held until this folder's tests end)."""

from __future__ import annotations

from typing import Any

import pytest


class SharedDraws:
    """``generate(family, seed, difficulty)`` for :func:`question_bank.quality.run_quality` and
    :func:`question_bank.bank.validate`: ``family.generate(seed, difficulty)``, each drawn once
    (a draw that raised raises again)."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, int, str], tuple[Any, BaseException | None]] = {}
        self.drawn = 0

    def __call__(self, f: Any, seed: int, difficulty: str) -> Any:
        key = (f.id, seed, difficulty)
        hit = self.cache.get(key)
        if hit is None:
            self.drawn += 1
            try:
                hit = (f.generate(seed, difficulty), None)
            except Exception as e:  # noqa: BLE001 - raised again below, to each caller
                hit = (None, e)
            self.cache[key] = hit
        p, err = hit
        if err is not None:
            raise err
        return p


@pytest.fixture(scope="package")
def shared_draws() -> SharedDraws:
    return SharedDraws()
