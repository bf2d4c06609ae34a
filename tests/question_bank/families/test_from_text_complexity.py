"""The keys of ``complexity.attention_variants``, judged from the text a student reads.

Each variant is named in the text with its defining mechanism ("sliding-window attention (w keys per
query)", "linear attention (kernel maps, one d×d state)", ...). This file states, for each mechanism as
described, its time and its working memory (the stem's definition: what it holds besides its inputs, a
KV cache counted as an input, its weights and its output), derived from what it computes:

- full self-attention scores n×n pairs of width d: time n²d, memory the n×n scores;
- FlashAttention computes the same n²d products in tiles, keeping per-row softmax statistics: memory n;
- sliding-window (w keys per query): nwd, the n×w band; strided (√n keys): n√n·d, n√n scores;
- Linformer (k rows of keys/values): nkd, the n×k scores;
- linear attention (one d×d state): nd², the d×d state; an RNN (one d-wide state): nd² (a d×d matrix per
  step), the d-wide state;
- one decoding step (one query against n cached keys): nd, the n scores.

The MCQ's keyed option must print the asked complexity (and be the only one); the MSQ's keyed options must be
those whose time is O(n) (d, w, k fixed), or grows faster, as the stem asks.
"""

from __future__ import annotations

import re

from tests.question_bank.families.from_text_audit import (
    Unreadable,
    key_tests,
    shown,
    sweep_main,
    true_options,
    with_views,
)

#: mechanism as the text describes it -> (time, working memory), as printed in O(...)
VARIANTS = {
    "full self-attention (n×n query–key scores)": ("n² d", "n²"),
    "flashattention (exact, tiled: no n×n matrix)": ("n² d", "n"),
    "sliding-window attention (w keys per query)": ("n w d", "n w"),
    "strided sparse attention (√n keys per query)": ("n√n d", "n√n"),
    "linformer (keys, values cut to k rows)": ("n k d", "n k"),
    "linear attention (kernel maps, one d×d state)": ("n d²", "d²"),
    "rnn layer (recurrent, one d-wide state)": ("n d²", "d"),
    "one decoding step (query vs n cached keys)": ("n d", "n"),
}
#: time as a function of n alone (d, w, k fixed): the power of n
POWER_OF_N = {"n² d": 2, "n w d": 1, "n√n d": 1.5, "n k d": 1, "n d²": 1, "n d": 1}


def _variant(words: str) -> str:
    name = re.sub(r"^(an?|the) ", "", words.strip().lower())
    if name not in VARIANTS:
        raise Unreadable(f"a mechanism this audit does not know: {words!r}")
    return name


def truth(p):
    text = p.statement_text
    if m := re.match(r"What is the (time complexity|working memory) (?:\(.*?\) )?of (.*) for a sequence of n tokens "
                     r"of width d\?", text):
        if m[1] == "working memory" and "a KV cache counts as an input" not in text:
            raise Unreadable("the working memory is not defined")
        want = "O({})".format(VARIANTS[_variant(m[2])][0 if m[1] == "time complexity" else 1])
        return lambda o: o.strip() == want
    if m := re.match(r"For a sequence of n tokens of width d \(with d, w, k held fixed\), which of the following take "
                     r"time that (is O\(n\), linear in n|grows faster than O\(n\))\?", text):
        linear = m[1].startswith("is")
        return lambda o: (POWER_OF_N[VARIANTS[_variant(o)][0]] == 1) == linear
    raise Unreadable("a question this audit cannot read")


RECOMPUTE = {"complexity.attention_variants": shown(lambda p: true_options(p, truth(p)))}
FIDS = with_views(RECOMPUTE)


def test_pinned():
    """Full attention's n×n scores cost n²d; with w keys per query the band is nwd; only the latter two of
    these four are linear in n (d, w, k fixed)."""
    assert VARIANTS[_variant("full self-attention (n×n query–key scores)")][0] == "n² d"
    linear = [POWER_OF_N[VARIANTS[_variant(v)][0]] == 1 for v in (
        "Full self-attention (n×n query–key scores)", "Strided sparse attention (√n keys per query)",
        "Sliding-window attention (w keys per query)", "Linformer (keys, values cut to k rows)")]
    assert linear == [False, False, True, True]


globals().update(key_tests(RECOMPUTE, FIDS, "complexity"))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS))
