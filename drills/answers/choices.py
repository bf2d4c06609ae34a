"""Options of MCQ and MSQ answers: ``b``, ``(b)``, ``2``; ``a,c``, ``AC``, ``1 3``."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from drills.answers.errors import AnswerParseError, letter


@dataclass(frozen=True)
class ParsedChoice:
    """Chosen options as 0-based indices (0 = a)."""

    text: str
    indices: frozenset[int]
    n_options: int

    kind = "choice"

    @property
    def letters(self) -> str:
        return ",".join(letter(i) for i in sorted(self.indices))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "choice", "text": self.text, "indices": sorted(self.indices), "letters": self.letters}




# --------------------------------------------------------------------------------------------
# options


def _options_text(n: int) -> str:
    return f"a-{letter(n - 1)} or 1-{n}" if n > 1 else "a or 1"


def parse_choice(text: str, n_options: int, multiple: bool = False) -> ParsedChoice:
    """MCQ (``multiple=False``): one of ``b``, ``B``, ``(b)``, ``b)``, ``2``. MSQ: one or more,
    ``a,c``, ``a c``, ``AC``, ``(a)(c)``, ``1,3``, ``13`` (digits run together only with at most 9
    options). Returns 0-based indices."""
    if not 1 <= n_options <= 26:
        raise ValueError(f"n_options must be 1..26, not {n_options}")
    if not isinstance(text, str):
        raise AnswerParseError("expected an option letter")
    raw = text.strip()
    expected = (f"expected one or more options ({_options_text(n_options)}), e.g. a,c" if multiple
                else f"expected one option ({_options_text(n_options)})")
    if not raw or len(raw) > 100:
        raise AnswerParseError(expected)
    low = re.sub(r"^(options?|answer)\s*:?\s*", "", raw.lower())
    low = re.sub(r"[()\[\].]", " ", low)
    picks: list[int] = []
    for piece in re.split(r"[\s,;/&+]+|\band\b", low):
        if not piece:
            continue
        if piece.isascii() and piece.isdigit():
            if len(piece) > 3:
                raise AnswerParseError(expected)
            if len(piece) > 1 and n_options <= 9 and multiple:
                picks.extend(int(c) - 1 for c in piece)
            else:
                picks.append(int(piece) - 1)
        elif piece.isascii() and piece.isalpha():
            picks.extend(ord(c) - ord("a") for c in piece)
        else:
            raise AnswerParseError(expected)
    if not picks:
        raise AnswerParseError(expected)
    for p in picks:
        if p < 0:
            raise AnswerParseError(expected)
        if p >= n_options:
            raise AnswerParseError(f"there are {n_options} options ({_options_text(n_options)})")
    chosen = frozenset(picks)
    if not multiple and len(chosen) > 1:
        raise AnswerParseError(f"choose one option ({_options_text(n_options)}); this question has one answer")
    return ParsedChoice(text=raw, indices=chosen, n_options=n_options)




def _option_form(text: str) -> str:
    """An option's text as compared with what was typed: Unicode-normalised (``n²`` -> ``n2``),
    lower case, no spaces, braces or ``^``, and every multiplication sign as ``x`` (``3 × 6``,
    ``3*6`` and ``3x6`` read alike)."""
    t = unicodedata.normalize("NFKC", text).lower().replace("−", "-")
    for sign in ("×", "·", "⋅", "*"):
        t = t.replace(sign, "x")
    return re.sub(r"[\s{}^$`]", "", t).rstrip(".")


def option_by_text(text: str, options_text: list[str] | None) -> int | None:
    """The index of the option whose text ``text`` is (``3x6`` for the option "3 × 6"), or None
    when it is no option's text or more than one's."""
    if not options_text or not isinstance(text, str) or not text.strip():
        return None
    typed = _option_form(text)
    hits = [i for i, o in enumerate(options_text) if _option_form(o) == typed]
    if not hits:  # a numeric option typed as people write the number: 60 for "60.00", 1,985,280 for "1985280"
        want = _number_and_unit(text)
        values = [_number_and_unit(o) for o in options_text]
        # only where every option is a value in one unit (a numeric MCQ), not "4 × 5" or "2 heads" among words
        if want is not None and all(values) and len({u for _, u in values}) == 1 and not re.search(r"\d", values[0][1]):
            hits = [i for i, (v, u) in enumerate(values) if v == want[0] and want[1] in ("", u)]
    return hits[0] if len(hits) == 1 else None


_NUMBER_OPTION = re.compile(r"\s*([-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(.*?)\s*")


def _number_and_unit(text: str) -> tuple[Decimal, str] | None:
    """A number with an optional unit (``60.00 GB``, ``1,985,280``) as (value, unit in option form);
    None for any other text."""
    m = _NUMBER_OPTION.fullmatch(text)
    if m is None:
        return None
    return Decimal(m.group(1).replace(",", "").replace("−", "-")), _option_form(m.group(2))


def parse_choice_or_text(text: str, n_options: int, options_text: list[str] | None,
                         multiple: bool = False) -> ParsedChoice:
    """:func:`parse_choice`, or else the option whose text was typed (an MCQ's option typed as
    its text, ``3x6`` for "3 × 6", is that option). A digit that is both an option's number and
    another option's text is refused (one line, asking for the letter)."""
    by_text = option_by_text(text, options_text)
    try:
        parsed = parse_choice(text, n_options, multiple)
    except AnswerParseError:
        if by_text is None:
            raise
        return ParsedChoice(text=text.strip(), indices=frozenset({by_text}), n_options=n_options)
    if by_text is not None and parsed.indices != frozenset({by_text}):
        raise AnswerParseError(f"{text.strip()!r} is option ({letter(min(parsed.indices))}) by its number and the "
                               f"text of option ({letter(by_text)}): type the letter of the one you mean")
    return parsed
