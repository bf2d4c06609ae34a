"""Units and count suffixes an answer may carry: bytes (decimal and binary prefixes), bits,
FLOPs, FLOP/s, time, ``%``; K/M/B/T. See :mod:`drills.answers` for the table of spellings."""

from __future__ import annotations

from fractions import Fraction

from drills.answers.errors import AnswerParseError

COUNT_SUFFIXES: dict[str, tuple[str, int]] = {
    "K": ("K", 10**3), "k": ("K", 10**3), "thousand": ("K", 10**3),
    "M": ("M", 10**6), "million": ("M", 10**6), "mn": ("M", 10**6),
    "B": ("B", 10**9), "G": ("B", 10**9), "billion": ("B", 10**9), "bn": ("B", 10**9),
    "T": ("T", 10**12), "trillion": ("T", 10**12),
}

_SI = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
BITS_PER_BYTE = 8


def _build_units() -> dict[str, tuple[str, str, Fraction]]:
    """lower-case spelling -> (canonical unit, dimension, factor to the base unit)."""
    units: dict[str, tuple[str, str, Fraction]] = {}
    for word in ("byte", "bytes"):
        units[word] = ("bytes", "bytes", Fraction(1))
    for word in ("bit", "bits"):
        units[word] = ("bits", "bits", Fraction(1))
    # the words written out: kilobytes .. petabytes (decimal), kibibytes .. pebibytes (binary)
    for i, (si, binary) in enumerate((("kilo", "kibi"), ("mega", "mebi"), ("giga", "gibi"), ("tera", "tebi"),
                                      ("peta", "pebi")), start=1):
        p = "KMGTP"[i - 1]
        for s in ("", "s"):
            units[f"{si}byte{s}"] = (f"{p}B", "bytes", Fraction(10 ** (3 * i)))
            units[f"{binary}byte{s}"] = (f"{p}iB", "bytes", Fraction(2 ** (10 * i)))
    for i, p in enumerate("KMGTP", start=1):
        units[f"{p}B".lower()] = (f"{p}B", "bytes", Fraction(10 ** (3 * i)))
        units[f"{p}iB".lower()] = (f"{p}iB", "bytes", Fraction(2 ** (10 * i)))
        for s in ("", "s"):
            units[f"{p}bit{s}".lower()] = (f"{p}bit", "bits", Fraction(10 ** (3 * i)))
            units[f"{p}ibit{s}".lower()] = (f"{p}ibit", "bits", Fraction(2 ** (10 * i)))
    for p, f in _SI.items():
        for spelling in ("FLOP", "FLOPs"):
            units[f"{p}{spelling}".lower()] = (f"{p}FLOPs", "FLOPs", Fraction(f))
            units[f"{p}{spelling}/s".lower()] = (f"{p}FLOP/s", "FLOP/s", Fraction(f))
        units[f"{p}FLOPS".lower()] = (f"{p}FLOPs", "FLOPs", Fraction(f))  # same lower-case key
    for spelling, factor in (("s", 1), ("sec", 1), ("ms", Fraction(1, 10**3)), ("us", Fraction(1, 10**6)),
                             ("µs", Fraction(1, 10**6)), ("μs", Fraction(1, 10**6)),
                             ("ns", Fraction(1, 10**9)), ("min", 60), ("h", 3600),
                             ("second", 1), ("seconds", 1), ("millisecond", Fraction(1, 10**3)),
                             ("milliseconds", Fraction(1, 10**3)), ("microsecond", Fraction(1, 10**6)),
                             ("microseconds", Fraction(1, 10**6)), ("nanosecond", Fraction(1, 10**9)),
                             ("nanoseconds", Fraction(1, 10**9)), ("minute", 60), ("minutes", 60),
                             ("hour", 3600), ("hours", 3600)):
        canonical = {"sec": "s", "µs": "us", "μs": "us"}.get(spelling) or {1: "s", 60: "min", 3600: "h"}.get(
            factor) or {Fraction(1, 10**3): "ms", Fraction(1, 10**6): "us", Fraction(1, 10**9): "ns"}.get(factor, spelling)
        units[spelling] = (canonical, "s", Fraction(factor))
    for word in ("params", "parameters", "tokens"):
        units[word] = ("", "", Fraction(1))
    for word in ("tokens/s", "token/s", "tok/s"):  # a rate of tokens (throughput)
        units[word] = ("tokens/s", "tokens/s", Fraction(1))
    return units


UNITS = _build_units()
PREFIX_POWER = {p: i for i, p in enumerate("KMGTP", start=1)}


def unit_entry(word: str) -> tuple[str, str, Fraction] | None:
    """``(canonical, dimension, factor)`` of a unit as typed, or None. Case matters for one
    thing only: an upper-case prefix followed by a lower-case ``b`` (``Gb``, ``Gib``) is bits;
    every other spelling is looked up case-insensitively (``gb`` and ``GB`` are bytes)."""
    if len(word) in (2, 3) and word[0] in PREFIX_POWER and word[-1] == "b" and word[1:-1] in ("", "i"):
        i = PREFIX_POWER[word[0]]
        if word[1:-1] == "i":
            return (f"{word[0]}ibit", "bits", Fraction(2 ** (10 * i)))
        return (f"{word[0]}bit", "bits", Fraction(10 ** (3 * i)))
    if word.endswith("/s") and word.lower() not in UNITS:
        # a rate: bytes or bits per second (GB/s, TB/s, B/s, Gb/s, GiB/s, bytes/s)
        base = "bytes" if word[:-2] == "B" else word[:-2]
        entry = unit_entry(base) if base else None
        if entry is not None and entry[1] in ("bytes", "bits"):
            return ("B/s" if entry[0] == "bytes" else f"{entry[0]}/s", f"{entry[1]}/s", entry[2])
        return None
    return UNITS.get(word.lower())


def unit_info(unit: str) -> tuple[str, Fraction]:
    """``(dimension, factor to the base unit)`` of a unit spelling: ``'GiB' -> ('bytes', 2**30)``.

    ``""`` is a plain number; ``"%"`` is 1/100 of a plain number."""
    if unit == "":
        return "", Fraction(1)
    if unit == "%":
        return "", Fraction(1, 100)
    entry = unit_entry(unit)
    if entry is None:
        raise AnswerParseError(f"unknown unit {unit!r}")
    return entry[1], entry[2]


