"""The keys of ``loss.cross_entropy`` (and its MCQ view), ``loss.perplexity`` and ``sampling.top_p``,
recomputed from the text a student reads.

``cross_entropy``: z, y (classes numbered from 0, as the text says) and, when asked, the label smoothing ε
are parsed; torch's ``F.cross_entropy`` (whose ``label_smoothing`` is the convention the text names) gives
the loss in nats. ``perplexity``: the mean loss in nats (perplexity e^H), a sum in bits over N tokens
(perplexity 2^(sum/N)), or nats per token with the token and character counts (bits per character
H·tokens/(characters·ln 2)), as the text gives them. ``top_p``: z, T (1 when none is given) and p are
parsed, torch's softmax(z/T) is sorted, and the nucleus is the shortest prefix whose sum reaches p; a sum
within 1e-9 of p would make the count depend on rounding and is reported.

The named mistakes (log base 2 or 10, no log-sum-exp, e^loss for bits, the crossing token left out, the
temperature ignored or multiplied) are recomputed from the text too; in the MCQ view they point to the
option that prints their value.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_kernels import (
    find,
    vector,
)

NUM = r"(-?\d+(?:\.\d+)?)"


def cross_entropy(text: str) -> float:
    z = vector("z", text)
    y = find(r"target class is y = (\d+)", text, int)
    if "numbered from 0" not in text or y >= len(z):
        raise Unreadable("the classes' numbering is not stated, or y is out of range")
    eps = 0.0
    if "label smoothing" in text:
        eps = find(rf"label smoothing ε = {NUM}", text)
        if "(1-ε) on y plus ε/C on every class" not in text:
            raise Unreadable("the smoothing convention is not stated")
    elif "-ln softmax(z)_y" not in text:
        raise Unreadable("the loss is not stated")
    if "in nats" not in text:
        raise Unreadable("the log base is not stated")
    logits = torch.tensor([z], dtype=torch.float64)
    return float(F.cross_entropy(logits, torch.tensor([y]), label_smoothing=eps))


def perplexity(text: str) -> float:
    if m := re.search(rf"mean cross-entropy on a test text is {NUM} per token \(natural log, nats\)", text):
        h_nats = float(m[1])
    elif m := re.search(rf"summed over the (\d+) tokens of a test text is {NUM} \(log base 2, bits\)", text):
        h_nats = float(m[2]) / int(m[1]) * math.log(2)
    else:
        raise Unreadable("the loss and its base are not given")
    if "What is its perplexity?" in text:
        return math.exp(h_nats)
    if "bits per character" in text:
        tokens = find(r"The text has ([\d,]+) tokens", text, lambda s: int(s.replace(",", "")))
        chars = find(r"tokens and ([\d,]+) characters", text, lambda s: int(s.replace(",", "")))
        return h_nats * tokens / (chars * math.log(2))
    raise Unreadable("no quantity asked")


def top_p(text: str) -> int:
    z = torch.tensor(vector("z", text), dtype=torch.float64)
    if find(r"over a (\d+)-token vocabulary", text, int) != z.numel():
        raise Unreadable("z does not have one logit per token")
    t = find(rf"temperature T = {NUM}", text) if "temperature" in text else 1.0
    p = find(rf"sampling at p = {NUM}", text)
    if "smallest set of most probable tokens whose total probability reaches p" not in text:
        raise Unreadable("the nucleus is not defined")
    cum = torch.softmax(z / t, dim=0).sort(descending=True).values.cumsum(0)
    if (cum - p).abs().min() < 1e-9:
        raise Unreadable(f"a cumulative probability equals p = {p} to 1e-9")
    return int((cum < p).sum()) + 1


RECOMPUTE = {"loss.cross_entropy": cross_entropy, "loss.perplexity": perplexity, "sampling.top_p": top_p}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """z = [-2 2 3], y = 2: ln(e⁻² + e² + e³) - 3 = 0.318; a mean loss of 1.56 nats: perplexity e^1.56 = 4.76;
    280 bits over 200 tokens: 2^1.4 = 2.64."""
    ce = cross_entropy("A classifier outputs the logits z = [-2 2 3] over three classes (numbered from 0); the target "
                       "class is y = 2.\n\nCompute the cross-entropy loss -ln softmax(z)_y in nats.")
    assert round(ce, 3) == 0.318
    assert round(perplexity("A language model's mean cross-entropy on a test text is 1.56 per token (natural log, "
                            "nats).\n\nWhat is its perplexity?"), 2) == 4.76
    assert round(perplexity("A language model's cross-entropy summed over the 200 tokens of a test text is 280 (log "
                            "base 2, bits).\n\nWhat is its perplexity?"), 2) == 2.64


def _ce_plain(text: str) -> float | None:
    return None if "label smoothing" in text else cross_entropy(text)


def _top_p_at(text: str, t_of) -> int:
    """The nucleus size with the temperature replaced by ``t_of(T)`` (None: the text's T is unchanged)."""
    t = find(rf"temperature T = {NUM}", text) if "temperature" in text else None
    if t is None:
        return None
    z = torch.tensor(vector("z", text), dtype=torch.float64) / t_of(t)
    p = find(rf"sampling at p = {NUM}", text)
    return int((torch.softmax(z, dim=0).sort(descending=True).values.cumsum(0) < p).sum()) + 1


#: fid -> misconception id -> the value its label names, from the text
MISTAKES = {
    "loss.cross_entropy": {
        "log2": lambda t: cross_entropy(t) / math.log(2),
        "log10": lambda t: cross_entropy(t) / math.log(10),
        "forgot_logsumexp": lambda t: None if "label smoothing" in t else
        -vector("z", t)[find(r"target class is y = (\d+)", t, int)],
    },
    "loss.perplexity": {
        "wrong_base": lambda t: math.exp(find(rf"is {NUM} \(log base 2", t) / find(r"over the (\d+) tokens", t, int))
        if "log base 2" in t and "perplexity" in t else None,
    },
    "sampling.top_p": {
        "crossing_excluded": lambda t: top_p(t) - 1,
        "ignored_temperature": lambda t: _top_p_at(t, lambda T: 1.0),
        "multiplied_temperature": lambda t: _top_p_at(t, lambda T: 1 / T),
    },
}
# the MCQ view: the option each mistake leads to (its options offer the log-base-2 slip)
MISTAKES["loss.cross_entropy_mcq"] = {"log2": MISTAKES["loss.cross_entropy"]["log2"]}


globals().update(key_tests(RECOMPUTE, FIDS, "loss_sampling", mistakes=MISTAKES))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, MISTAKES))
