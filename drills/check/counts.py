"""``qkv check params|flops|memory|kv-cache``: a count judged to the significant figures the
student gave, and the gap explained by the conventions of :mod:`question_bank.conventions`
(the same ones the bank's count problems carry as misconceptions).

A count is judged by significant figures (:func:`check_count`): ``110M`` states 2 of them, so
it is right when the exact count rounds to 110M; when it is close but not equal the report says
which convention (a component of the breakdown, GB vs GiB, bits vs bytes, MACs vs FLOPs) could
account for the gap."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from question_bank.conventions import Convention
from question_bank.grading import right_exactly, right_to_sig_figs

if TYPE_CHECKING:
    from drills.answers import Parsed


@dataclass(frozen=True)
class Explanation:
    convention: Convention
    equals: bool  # the answer equals the count under the convention (at the answer's precision)

    @property
    def text(self) -> str:
        c = self.convention
        return f"your figure is the count {c.alt}: {c.value:,.0f}" if self.equals else c.counted


@dataclass
class CountCheck:
    """The verdict on a count (``params``, ``flops``, ``memory``, ``kv-cache``)."""

    quantity: str
    unit: str
    given_text: str
    given: float
    exact: int
    sig_figs: int | None
    ok: bool
    tolerance: str
    explanations: list[Explanation] = field(default_factory=list)
    note: str | None = None
    unit_note: str | None = None  # an answer in bits for a count in bytes (see check_bytes_in_bits)
    slip: str | None = None  # a slip of the scale: the answer is 10³ⁿ times the count (issue 21)

    @property
    def relative(self) -> float:
        return (self.given - self.exact) / self.exact if self.exact else math.inf

    @property
    def mistake(self) -> str | None:
        if self.unit_note and not self.ok:
            return self.unit_note
        if self.slip and not self.ok:
            return self.slip
        eq = [e for e in self.explanations if e.equals]
        return eq[0].text if eq and not self.ok else None

    def message(self) -> str:
        """One line: the verdict, the relative difference, the likely convention."""
        ex = f"{self.exact:,}"
        if self.unit_note:
            return f"{self.unit_note}; the exact figure is {ex} {self.unit}"
        if self.given == self.exact:
            return f"your {self.given_text} is exactly right: {ex} {self.unit}"
        rel = abs(self.relative)
        if rel < 0.01:
            head = f"your {self.given_text} is within {_pct(rel)} of the exact {ex} {self.unit}"
        else:
            side = "above" if self.given > self.exact else "below"
            head = f"your {self.given_text} is {_pct(rel)} {side} the exact {ex} {self.unit}"
        parts = [head]
        if self.ok:
            parts.append(f"right to the {self.sig_figs} significant figures you gave")
        eq = [e for e in self.explanations if e.equals]
        if self.slip and not self.ok:
            parts.append(self.slip)
        else:
            parts += [e.text for e in (eq or self.explanations)[:1]]
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "steps": [{"name": self.quantity, "given": self.given, "given_text": self.given_text,
                       "expected": self.exact, "ok": self.ok, "follow_through": False, "mistake": self.mistake,
                       "tolerance": self.tolerance}],
            "first_wrong": None if self.ok else self.quantity,
            "unit": self.unit, "relative_difference": self.relative, "significant_figures": self.sig_figs,
            "explanations": [{"text": e.text, "value": e.convention.value, "equals": e.equals}
                             for e in self.explanations],
            "message": self.message(), "note": self.note, "unit_note": self.unit_note, "slip": self.slip,
        }


def _pct(r: float) -> str:
    return f"{r:.2%}" if r < 0.01 else f"{r:.1%}"


def stated_sig_figs(parsed: Parsed) -> int | None:
    """Significant figures an answer states; trailing zeros of an integer are not counted
    (``110M`` states 2, ``1.10G`` states 3, ``109,482,240`` states 8). None for an expression."""
    sig = getattr(parsed, "sig_digits", None)
    if sig is None:
        return None
    magnitude = abs(parsed.magnitude if parsed.magnitude is not None else parsed.value)
    if getattr(parsed, "decimals", None) == 0 and magnitude != 0:
        lead = round(magnitude / 10.0 ** (math.floor(math.log10(magnitude)) - sig + 1))
        while sig > 1 and lead % 10 == 0:
            lead //= 10
            sig -= 1
    return sig


MIN_SIG_FIGS = 2


def check_count(quantity: str, given_text: str, given: float, exact: int, unit: str, sig: int | None,
                conventions: list[Convention], note: str | None = None) -> CountCheck:
    """Judge a count: exact, or ``exact`` rounded to the answer's significant figures (at least
    :data:`MIN_SIG_FIGS` of them). Conventions the answer equals, or whose difference from the
    exact count is of the size of the gap (between half and twice it) and on the same side of the
    exact count as the answer, become explanations."""
    if given == exact:
        ok, tol = True, "exact"
    elif sig is None:
        ok, tol = right_exactly(given, exact), "exact (an expression was given)"
    else:
        ok = sig >= MIN_SIG_FIGS and right_to_sig_figs(given, exact, sig)
        tol = f"to the {sig} significant figure{'s' if sig != 1 else ''} given"
        if sig < MIN_SIG_FIGS:
            tol += f" (too rough: give at least {MIN_SIG_FIGS})"
    at = max(sig or 0, MIN_SIG_FIGS)
    gap = given - exact
    ranked = []
    for c in conventions:
        if c.value is None or c.value == exact:
            continue
        equals = given == c.value or (sig is not None and right_to_sig_figs(given, c.value, at)
                                      and not right_to_sig_figs(given, exact, at))
        if sig is None and not equals:
            equals = right_exactly(given, c.value)
        size = abs(c.value - exact)
        # issue 21: a convention explains the gap only if it moves the figure the way the answer
        # differs (a count above the exact one is not explained by something that would lower it)
        same_way = (c.value - exact) * gap > 0
        near = gap != 0 and same_way and 0.5 <= size / abs(gap) <= 2.0
        if equals or near:
            ranked.append((not equals, abs(size - abs(gap)), Explanation(c, equals)))
    ranked.sort(key=lambda t: (t[0], t[1]))
    slip = None
    if not ok and given and exact and not any(e.equals for *_, e in ranked):
        # a slip of the scale (issue 21, as the judge names it): the answer is 10³ⁿ times the count
        for e in (3, -3, 6, -6, 9, -9, 12, -12):
            scaled = given / 10.0**e
            if (right_to_sig_figs(scaled, exact, at) if sig is not None else right_exactly(scaled, exact)):
                how = f"× 10^{e}" if e > 0 else f"÷ 10^{-e}"
                slip = (f"your figure is the count {how}: a slip of the scale (thousand, million, billion, "
                        "trillion: each step is 10³)")
                break
    return CountCheck(quantity, unit, given_text, given, exact, sig, ok, tol, [e for *_, e in ranked], note,
                      slip=slip)


def check_bytes_in_bits(quantity: str, given_text: str, given_bits: float, unit: str, exact: int,
                        sig: int | None, conventions: list[Convention], note: str | None = None) -> CountCheck:
    """Judge a byte count answered in bits (``16 Gb``; ``unit`` is the parser's spelling,
    ``Gbit``). The answer is never right as it stands: the count is asked in bytes. The
    report says which slip it is: the bits figure is the exact count × 8 ("you answered in
    bits; the key is in bytes (÷ 8)"), or the number typed is the exact count in the byte
    unit of the same prefix (``Gb`` typed for ``GB``), or neither (the conversion is shown)."""
    from drills.answers import unit_info

    given_bytes = given_bits / 8
    base = check_count(quantity, given_text, given_bytes, exact, "bytes", sig, conventions, note)
    byte_unit = "bytes" if unit == "bits" else unit.replace("bit", "B")  # Gbit -> GB, Gibit -> GiB
    shown = f"{given_text} = {given_bytes / float(unit_info(byte_unit)[1]):,.6g} {byte_unit}"
    explanations: list[Explanation] = []
    if base.ok:
        text = f"you answered in bits; the key is in bytes (÷ 8): {shown}, right once divided by 8"
    elif check_count(quantity, given_text, given_bits, exact, "bytes", sig, []).ok:
        text = f"{given_text} is in bits ({unit}), so {shown}; for bytes write {byte_unit} (capital B)"
    else:
        text = f"you answered in bits: {shown}"
        explanations = base.explanations
    return CountCheck(quantity, "bytes", given_text, given_bytes, exact, sig, False, base.tolerance,
                      explanations, note, unit_note=text)
