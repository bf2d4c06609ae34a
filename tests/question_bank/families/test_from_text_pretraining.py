"""The keys of ``pretraining.bert_masking``, recomputed from the text a student reads.

The four percentages (selected; of those, replaced by [MASK], by a random token, left unchanged) and the
number of positions (one sequence, or a batch of B sequences of n tokens) are parsed from
``statement_text``; the expected count the question names is the positions times the probability the
text's rule gives it (selected: s; [MASK]: s·m; random: s·r; unchanged: s·u; not [MASK] in the input:
1 - s·m). The rule is also run as a simulation in the pinned test.

The named mistake "took all 15 % as [MASK]" is recomputed from the text too.
"""

from __future__ import annotations

import random
import re

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    sweep_main,
    with_views,
)

RULE = re.compile(r"selects (\d+(?:\.\d+)?) % of the token positions .*?of the selected positions (\d+(?:\.\d+)?) % "
                  r"are replaced by \[MASK\], (\d+(?:\.\d+)?) % by a random token and (\d+(?:\.\d+)?) % are left "
                  r"unchanged")


def _positions(text: str) -> int:
    if m := re.search(r"For a batch of (\d+) sequences of (\d+) tokens each", text):
        return int(m[1]) * int(m[2])
    if m := re.search(r"For a sequence of (\d+) tokens", text):
        return int(m[1])
    raise Unreadable("the number of positions is not given")


def expected_count(text: str) -> float:
    m = RULE.search(text)
    if m is None:
        raise Unreadable("the masking rule is not stated")
    s, mask, rand, keep = (float(x) / 100 for x in m.groups())
    if abs(mask + rand + keep - 1) > 1e-12:
        raise Unreadable("the three fates of a selected position do not add up to 100 %")
    share = {
        "whose prediction enters the MLM loss": s,
        "replaced by the [MASK] token": s * mask,
        "replaced by a random token": s * rand,
        "selected for prediction but left unchanged": s * keep,
        "not the [MASK] token in the model's input": 1 - s * mask,
    }
    asked = [v for phrase, v in share.items() if phrase in text]
    if len(asked) != 1:
        raise Unreadable("no count asked")
    return _positions(text) * asked[0]


RECOMPUTE = {"pretraining.bert_masking": expected_count}
FIDS = with_views(RECOMPUTE)


def test_pinned_by_simulation():
    """The text's rule run on 400,000 positions: the share left as [MASK] is 0.15·0.8 = 0.12 within 0.003."""
    text = ("BERT pre-training selects 15 % of the token positions for masked language modelling; of the selected "
            "positions 80 % are replaced by [MASK], 10 % by a random token and 10 % are left unchanged. For a sequence "
            "of 400000 tokens, what is the expected number of positions replaced by the [MASK] token?")
    rng = random.Random(0)
    masked = sum(rng.random() < 0.15 and rng.random() < 0.8 for _ in range(400_000))
    assert abs(masked - expected_count(text)) < 0.003 * 400_000


def _all_selected_masked(text: str) -> float | None:
    """The [MASK] count with every selected position taken as [MASK]."""
    if "replaced by the [MASK] token" not in text:
        return None
    return _positions(text) * float(RULE.search(text)[1]) / 100


#: fid -> misconception id -> the value its label names, from the text
MISTAKES = {"pretraining.bert_masking": {"all_selected_masked": _all_selected_masked}}


globals().update(key_tests(RECOMPUTE, FIDS, "pretraining", mistakes=MISTAKES))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
