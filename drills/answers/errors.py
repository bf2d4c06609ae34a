"""The error every answer reader raises, and how a bad piece of input is shown in it."""

from __future__ import annotations


class AnswerParseError(ValueError):
    """An answer that cannot be read; ``str(e)`` is one short line saying what was expected."""


def letter(i: int) -> str:
    return chr(ord("a") + i)


def shown(text: str, limit: int = 24) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")

