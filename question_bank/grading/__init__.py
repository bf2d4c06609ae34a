"""Grading: is a student's (already parsed) answer right, how close, and which mistake is it?

Text parsing is not done here (``drills.answers`` turns ``"3/5"`` or ``"0.6 0.4; 0.4 0.6"``
into Python values); :func:`grade` receives a value: a number (int, float, Fraction, Decimal,
a NumPy scalar), a matrix as a list of rows (or a flat list for a one-row key), an option
index (MCQ) or a set of indices (MSQ). Pass ``written=`` the text as typed so that the digits
the student wrote are known (a :class:`decimal.Decimal` value carries them as well).

The NAT rule (:func:`nat_key`)
------------------------------
A statement that says "round off to *d* decimal places" is keyed by

* ``r`` = the exact value rounded half away from zero to *d* decimals (the rounding people do
  on paper: the decimal digits of the double are rounded, so 0.605 -> 0.61);
* the accepted range is the closed interval ``[r - ½·10⁻ᵈ, r + ½·10⁻ᵈ]``: every answer that
  rounds to ``r``, both boundaries included (GATE ranges are inclusive), widened by a float
  slack of ``1e-9·max(1, |r|)`` so that a boundary typed as a decimal is not lost to binary
  representation.

Families keep the exact value at least a tenth of a unit away from a rounding boundary
(:func:`safe_for_rounding`), so a student who rounds an intermediate result does not drop out
of the range by accident. Curated items cannot choose their numbers (they are the source
text's), so when an exact value lies within ``BOUNDARY_MARGIN`` of a unit from a boundary
(e.g. 0.50349 asked to three decimals), the range takes in both roundings (0.503 and 0.504):
a careful hand computation with 4-digit intermediates lands on either side. A misconception
is matched with the same rule around its own rounded value.

Verdict statuses
----------------
``correct``; ``follow_through`` (right given the student's own earlier parts); ``misconception``
(wrong, and equal to a declared typical mistake); ``too_few_digits`` (the exact value rounded
to fewer decimals than asked); ``rounded_wrongly`` (within one unit of the last asked digit of
the exact value but outside the range: truncated, or rounded from rounded intermediates);
``close`` (an integer count within 1 % but not exact); ``partial`` (a matrix with some
entries right); ``wrong_unit`` (an answer in bits for a key in bytes: "you answered in bits;
the key is in bytes (÷ 8)", see :class:`GivenUnit`); ``wrong``; ``invalid`` (unusable: wrong shape, not a number, an option that
does not exist; the quiz asks again and counts nothing); ``unanswered`` (multi-part only).

Where things are: :mod:`~question_bank.grading.tolerance` (the named comparators and the NAT
rounding rule), :mod:`~question_bank.grading.keys` (keys and how they are stated),
:mod:`~question_bank.grading.judge` (:func:`grade`: one answer against one key),
:mod:`~question_bank.grading.parts` (:func:`grade_parts`: follow-through and carried rounding),
:mod:`~question_bank.grading.audit` (:func:`audit_problem`). This package is the one judge: the
quiz, the exam, ``qkv check`` and the Moodle ranges all compare through it.
"""

from __future__ import annotations

from question_bank.grading.audit import (  # noqa: F401
    audit_problem,
)
from question_bank.grading.judge import (  # noqa: F401
    GivenUnit,
    Verdict,
    accepts,
    grade,
    invalid,
    misconception_range,
    named,
    plain,
    scale_slip,
)
from question_bank.grading.keys import (  # noqa: F401
    LETTERS,
    answer_text,
    as_choice_set,
    choice_key,
    describe_key,
    fmt,
    integer_key,
    key_factor,
    matrix_key,
    nat_key,
    plural,
    range_digits,
    row_list,
    rows_of,
    stored_key_value,
    to_float,
    values_coincide,
)
from question_bank.grading.parts import (  # noqa: F401
    grade_parts,
    total_score,
)
from question_bank.grading.tolerance import (  # noqa: F401
    BOUNDARY_MARGIN,
    ENTRY_MARGIN,
    FLOAT_SLACK,
    MAX_SIG_FIGS,
    MINUS_INF_STANDIN,
    PRECISION_PHRASE,
    EntriesVerdict,
    asked_decimals,
    decimals_written,
    digits_verdict,
    half_unit,
    in_range,
    judge_as_written,
    nat_range,
    precision_words,
    right_exactly,
    right_to_decimals,
    right_to_sig_figs,
    round_half_up,
    round_off,
    rounded_off,
    safe_for_rounding,
    slack,
    tolerance_text,
    within,
)

__all__ = [
    "Verdict",
    "GivenUnit",
    "nat_key",
    "integer_key",
    "matrix_key",
    "choice_key",
    "round_half_up",
    "safe_for_rounding",
    "decimals_written",
    "grade",
    "grade_parts",
    "total_score",
    "accepts",
    "describe_key",
    "values_coincide",
    "nat_range",
    "answer_text",
    "audit_problem",
    "asked_decimals",
    "digits_verdict",
    "round_off",
    "rounded_off",
]
