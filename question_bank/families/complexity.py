"""Complexity classes of attention variants, as MCQ and MSQ, from a table of facts.

The table (n tokens, model/head width d, window w, projected length k, block/stride √n):

====================== ============== ================ ============================================
variant                time           extra memory     why
====================== ============== ================ ============================================
full self-attention    O(n²·d)        O(n²)            QKᵀ is (n×d)(d×n); the n×n score matrix
sliding window         O(n·w·d)       O(n·w)           each query sees w keys (Longformer local)
linear attention       O(n·d²)        O(d²)            φ(K)ᵀV is d×d, computed once (Katharopoulos)
Linformer              O(n·k·d)       O(n·k)           K, V projected to k rows (Wang et al.)
sparse (strided)       O(n·√n·d)      O(n·√n)          each query sees √n keys (Child et al.)
FlashAttention         O(n²·d)        O(n)             exact attention, tiled: no n×n in memory
RNN layer              O(n·d²)        O(d)             n sequential steps of a d×d matrix-vector
decode step, KV cache  O(n·d)         O(n·d)           one query against n cached keys/values
====================== ============== ================ ============================================

Each MCQ option is another row's class, so a wrong option is diagnosed as "that is the cost
of <other variant>".
"""

from __future__ import annotations

import re

from question_bank.family import Draw, Wrong, family
from question_bank.grading import answer_text
from question_bank.problem import ChoiceKey, Misconception, Problem
from question_bank.render import Doc, latex_to_text

# variant -> (time, working memory, why the time, linear_in_n_time, why the memory).
# "Working memory" (issue 12): what the computation holds besides its inputs (X, or Q, K, V, the KV
# cache), its weights and its output; one number per class, so no second answer is defensible.
# The names are of similar lengths, so the MSQ's key is not "the longer names" (issue 12).
FACTS: dict[str, tuple[str, str, str, bool, str]] = {
    "full self-attention ($n\\times n$ query–key scores)": (
        r"O(n^2 d)", r"O(n^2)", r"$QK^\top$ multiplies $(n\times d)(d\times n)$", False,
        r"the $n\times n$ score matrix is held before the softmax"),
    "sliding-window attention ($w$ keys per query)": (
        r"O(n w d)", r"O(n w)", "each query attends to only $w$ keys", True, "each of the $n$ queries holds $w$ scores"),
    r"linear attention (kernel maps, one $d\times d$ state)": (
        r"O(n d^2)", r"O(d^2)", r"$\phi(K)^\top V$ is a $d\times d$ matrix built once, then applied to $n$ queries", True,
        r"only the $d\times d$ matrix $\phi(K)^\top V$ is held"),
    "Linformer (keys, values cut to $k$ rows)": (
        r"O(n k d)", r"O(n k)", r"the score matrix is $n\times k$", True, r"the $n\times k$ score matrix is held"),
    r"strided sparse attention ($\sqrt{n}$ keys per query)": (
        r"O(n\sqrt{n}\, d)", r"O(n\sqrt{n})", r"each query sees $\sqrt n$ keys", False,
        r"each of the $n$ queries holds $\sqrt n$ scores"),
    "FlashAttention (exact, tiled: no $n\\times n$ matrix)": (
        r"O(n^2 d)", r"O(n)", "it computes exact attention in tiles: the same FLOPs as full attention", False,
        r"tiles of fixed size plus a running maximum and sum per query: no $n\times n$ matrix"),
    "an RNN layer (recurrent, one $d$-wide state)": (
        r"O(n d^2)", r"O(d)", r"$n$ sequential steps, each a $d\times d$ matrix–vector product", True,
        "only the current hidden state $h_t$ (the recurrent weights are weights, not counted)"),
    "one decoding step (query vs $n$ cached keys)": (
        r"O(n d)", r"O(n)", "one new query against $n$ cached keys and values", True,
        "the new query's $n$ scores (the cache is the step's input, not counted)"),
}


def _slug(variant: str) -> str:
    return re.sub(r"[^a-z]+", "_", variant.split("(")[0].lower()).strip("_")


def _wrong_for(variant: str, column: int) -> str:
    return f"That is the {'time' if column == 0 else 'memory'} of {variant}."


@family(
    "complexity.attention_variants",
    topic="complexity",
    title="Complexity of attention variants",
    types=("mcq", "msq"),
    tags=("complexity", "efficient-attention", "conceptual"),
    source="004_83489721195aedaa.txt GATE Q2; 003_f22b31e216cc5b5a.txt (variants)",
)
def attention_variants(d: Draw) -> Problem:
    """MCQ: the time (or memory) class of one variant; MSQ (hard): which variants are linear in n (or which
    grow faster than linear)."""
    variants = list(FACTS)
    if d.level == 2:
        # issue 22: the question asks, with even odds, which take time linear in n or which take more: a name's
        # look (its length, its words, its symbols) that goes with one class is the key in half the draws and
        # a distractor in the other half
        faster = d.rng.random() < 0.5
        picked = d.rng.sample(variants, 4)
        while not any(FACTS[v][3] for v in picked) or all(FACTS[v][3] for v in picked):
            picked = d.rng.sample(variants, 4)
        options = [v[0].upper() + v[1:] for v in picked]
        key = ChoiceKey(frozenset(i for i, v in enumerate(picked) if FACTS[v][3] != faster))
        flash = [i for i, v in enumerate(picked) if v.startswith("FlashAttention")]
        slip = frozenset(key.correct - set(flash) if faster else key.correct | set(flash))
        # named only where the slip is an answer a student can give (an MSQ ticks at least one option)
        mis = [Misconception("flash_is_linear", "thought FlashAttention is linear in n",
                             "FlashAttention saves memory, not FLOPs: its time is still O(n²·d).",
                             slip)] if flash and slip and slip != key.correct else []
        how = "grows faster than $O(n)$" if faster else "is $O(n)$, linear in $n$"
        st = Doc().p(f"For a sequence of $n$ tokens of width $d$ (with $d$, $w$, $k$ held fixed), which of the following take "
                     f"time that {how}? Choose all that apply.")
        sol = Doc()
        sol.bullets([f"{v[0].upper() + v[1:]}: ${FACTS[v][0]}$ — {FACTS[v][2]}: "
                     f"{'linear in $n$' if FACTS[v][3] else 'faster than linear in $n$'}." for v in picked])
        sol.p("**Answer:** " + answer_text(key, [latex_to_text(o) for o in options]))
        return d.problem(type="msq", statement=st, key=key, solution=sol, options=options, misconceptions=mis,
                         given={"variants": picked, "faster_than_linear": faster}, marks=2)
    # issue 12, disjoint levels: easy asks the time class, medium the working memory (a convention
    # more to track: what is held besides the inputs, the weights and the output), hard the MSQ.
    column = 0 if d.level == 0 else 1
    variant = d.pick(variants)
    right = FACTS[variant][column]
    others = []
    for v in variants:
        val = FACTS[v][column]
        if val != right and val not in [o for o, _ in others]:
            others.append((val, v))
    d.rng.shuffle(others)
    chosen = [(right, None)] + others[:3]
    d.rng.shuffle(chosen)
    options = [f"${c}$" for c, _ in chosen]
    ci = next(i for i, (_, v) in enumerate(chosen) if v is None)
    key = ChoiceKey(frozenset({ci}))
    mis = [Wrong("confused_with_" + _slug(v), f"confused with {latex_to_text(v)}", _wrong_for(latex_to_text(v), column), i).misconception()
           for i, (_, v) in enumerate(chosen) if v is not None]
    # "its inputs, a KV cache included" read to some as counting the cache in the working memory: the cache is an input
    what = "time complexity" if column == 0 else ("working memory (what it holds besides its inputs (a KV cache counts "
                                                   "as an input), its weights and its output)")
    st = Doc().p(f"What is the {what} of {variant} for a sequence of $n$ tokens of width $d$?")
    sol = Doc()
    if column == 1:
        sol.p("Working memory counts what the computation holds while it runs; its inputs (X, or Q, K, V, a KV cache), "
              "its weights and its output are not counted, as the question says.")
    sol.p(f"${right}$: {FACTS[variant][2 if column == 0 else 4]}.")
    sol.p("**Answer:** " + answer_text(key, [latex_to_text(o) for o in options]))
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, misconceptions=mis,
                     given={"variant": variant, "column": column})
