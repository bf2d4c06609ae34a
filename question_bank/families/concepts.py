"""The seeds' concepts as endless computed variants (issue 26): MCQs and MSQs whose options are
statements generated from parameters and judged true or false by a computation.

Four concepts, each an MSQ family ("which of these are true? select all") and an MCQ family
("which one of these is true?" or "which one is false?", drawn half and half so the key is as
often a true statement as a false one):

- ``concept.mask_pairs`` / ``concept.mask_pairs_one``: what a mask lets a query see. A drawn mask
  (causal, padding, causal sliding window, causal with padding, each also reversed as a right-to-left decoder
  reads, or padded on the left; prefix-LM, bidirectional window),
  sequence length and query; the options are (query, key) pairs of that query's row, each judged by
  the KEEP matrix of ``solver.kernels.masks``.
- ``concept.encoder_decoder`` / ``concept.encoder_decoder_one``: encoder-only, decoder-only and
  encoder-decoder models of the zoo (``solver.counting.presets``). Each model's attention
  sub-layers (self-attention with its mask, cross-attention) are listed from its config's ``arch``
  and layer counts; a statement (it generates token by token, a token sees later tokens, it has
  cross-attention, every attention layer is causal, it has so many attention sub-layers, token i's
  output depends on input token j through its L layers) is judged on that list, the last by the
  reachability of the solver's masks composed over the layers.
- ``concept.norm_position`` / ``concept.norm_position_one``: pre-LN against post-LN (and Gemma 2's
  sandwich, OLMo 2's reordered norm). A statement about a residual form and a depth (the skip path
  crosses a norm, so many norms on it per layer, every sub-layer reads a normalised input, a final
  norm is needed, the stack has so many norms) is judged on the graph of the stack
  (``solver.kernels.residual_graph``), built from the block's formula.
- ``concept.attention_vs_rnn_sizes`` / ``concept.attention_vs_rnn_sizes_one``: why attention
  replaced recurrence, with numbers: sequential operations, maximum path lengths, operations per
  layer (n²·d against n·d², k·n·d² for a convolution), layers of convolution needed to connect two
  positions, each computed for the statement's own n, d, k (Vaswani et al. 2017, Table 1).

Balance (issue 12's and 22's blind rules): every claim is asked in forms that are true and forms
that are false with the same words (both polarities, "is able" / "is unable"; each value asked of
the case it fits and of one it does not; the model named by a letter the stem resolves; one mask
row per problem), and :func:`pick_options` draws the truth of each option first (MSQ: 1 to 3 of
4 true, uniformly; MCQ: the one true or the one false statement), then a template uniformly among
those that can give that truth, then a statement whose subject no other option shares (no option
is another's mirror). Levels are disjoint (each level's stem and claims are its own) and add
working: easy one note, medium two, hard three.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from question_bank.families.computed_statements import Statement, _msq_problem, true_count
from question_bank.family import Draw, family
from question_bank.grading import LETTERS, answer_text
from question_bank.problem import ChoiceKey, Problem
from question_bank.render import Doc, latex_to_text

_SRC = "issue 26 (the seeds' concepts as computed statements)"


@dataclass
class Context:
    """One drawn situation: the stem (before the question), the solution's opening line and notes,
    and the pool of statements (``params[0]`` names each statement's template)."""

    stem_md: str
    intro_md: str
    pool: list[Statement]
    notes: list[str] = field(default_factory=list)
    given: dict = field(default_factory=dict)
    #: what a statement is about (a model and a fact, a form and a claim, the sizes of a comparison):
    #: two options never share one, so no option is the mirror of another (one true, one false)
    subject: Callable[[Statement], object] | None = None
    #: MCQ: draw the key's rank by words shared with the other options (see :func:`_mcq`); for pools
    #: whose options share many words (the encoder/decoder statements), not for small ones
    balance_shared: bool = False


def pick_options(d: Draw, pool: list[Statement], truths: list[bool],
                 subject: Callable[[Statement], object] | None = None) -> list[Statement] | None:
    """One statement per entry of ``truths`` (its truth), distinct texts and distinct subjects, in a
    random order; each slot's template drawn uniformly among those that can give its truth (those
    that can give both truths preferred), least-used first. None when the pool cannot."""
    subj = subject or (lambda st: st.md)
    truths = list(truths)
    d.rng.shuffle(truths)  # the slots in a random order: the least-used templates go to either truth
    groups: dict[str, dict[bool, list[Statement]]] = {}
    seen: set[str] = set()
    for s in pool:
        if s.md in seen:
            continue
        seen.add(s.md)
        groups.setdefault(str(s.params[0]), {True: [], False: []})[s.true].append(s)
    chosen: list[Statement] = []
    used: dict[str, int] = {}
    texts: set[object] = set()
    for t in truths:
        cands = [tid for tid, g in groups.items() if any(subj(s) not in texts for s in g[t])]
        both = [tid for tid in cands if groups[tid][not t]]
        cands = both or cands
        if not cands:
            return None
        least = min(used.get(c, 0) for c in cands)
        tid = d.pick(sorted(c for c in cands if used.get(c, 0) == least))
        s = d.pick([s for s in groups[tid][t] if subj(s) not in texts])
        chosen.append(s)
        texts.add(subj(s))
        used[tid] = used.get(tid, 0) + 1
    d.rng.shuffle(chosen)
    return chosen


def _msq(d: Draw, draw: Callable[[Draw], Context], tags: tuple[str, ...]) -> Problem:
    k = true_count(d)
    for _ in range(200):
        ctx = draw(d)
        items = pick_options(d, ctx.pool, [True] * k + [False] * (4 - k), ctx.subject)
        if items is not None:
            break
    else:  # pragma: no cover - every context's pool has both truths
        raise ValueError("no draw gave the options")
    key = ChoiceKey(frozenset(i for i, s in enumerate(items) if s.true))
    st = Doc()
    st.p(ctx.stem_md + " Which of these statements are true? Select all that apply.")
    return _msq_problem(d, st, items, key, ctx.intro_md, notes=ctx.notes,
                        given={**ctx.given, "option_values": [s.md for s in items]}, tags=tags)


def _ranks(items: list[Statement], ask_true: bool) -> tuple[int, int]:
    """The key's rank among the options (how many others score strictly lower) by the words it shares
    with the others (as question_bank.quality's "most/fewest shared words") and by its length."""
    import re

    texts = [latex_to_text(s.md) for s in items]
    words = [set(re.findall(r"\w+", t.lower())) for t in texts]
    shared = [sum(len(w & v) for j, v in enumerate(words) if j != i) for i, w in enumerate(words)]
    k = next(i for i, s in enumerate(items) if s.true == ask_true)
    if shared.count(shared[k]) > 1:  # tied with another option: no rank of its own
        return (-1, -1)
    return (sum(x < shared[k] for x in shared), sum(len(t) < len(texts[k]) for t in texts))


def _mcq(d: Draw, draw: Callable[[Draw], Context], tags: tuple[str, ...]) -> Problem:
    ask_true = d.rng.random() < 0.5
    for _ in range(200):
        ctx = draw(d)
        items = pick_options(d, ctx.pool, [ask_true] + [not ask_true] * 3, ctx.subject)
        if items is not None:
            break
    else:  # pragma: no cover
        raise ValueError("no draw gave the options")
    # the odd one out: the key is the one option whose truth differs, and the words it shares with the
    # others could single it out. Its rank among the options by shared words is drawn first
    # (uniformly), and the options drawn again (up to 100 times) until the key takes that rank, tied
    # with no other option
    want = d.rng.randrange(4)
    for _ in range(100 if ctx.balance_shared else 0):
        if _ranks(items, ask_true)[0] == want:
            break
        items = pick_options(d, ctx.pool, [ask_true] + [not ask_true] * 3, ctx.subject) or items
    key = ChoiceKey(frozenset(i for i, s in enumerate(items) if s.true == ask_true))
    options = [s.md for s in items]
    options_text = [latex_to_text(o) for o in options]
    st = Doc()
    which = "true" if ask_true else "false"
    st.p(ctx.stem_md + f" Which one of these statements is {which}? Exactly one of them is.")
    sol = Doc()
    sol.p(ctx.intro_md)
    for n in ctx.notes:
        sol.p(n)
    sol.bullets([f"({LETTERS[i]}) {s.working_md} **{'True' if s.true else 'False'}.**" for i, s in enumerate(items)],
                [latex_to_text(f"({LETTERS[i]}) {s.working_md} {'True' if s.true else 'False'}.")
                 for i, s in enumerate(items)])
    ans = answer_text(key, options_text)
    sol.p(f"**Answer:** {ans} (the one {which} statement)", f"Answer: {ans} (the one {which} statement)")
    given = {**ctx.given, "asks": which, "option_values": [s.md for s in items],
             "option_params": [list(s.params) for s in items], "option_truth": [s.true for s in items]}
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, options_text=options_text,
                     given=given, tags=tags)


def _pair(draw: Callable[[Draw], Context], *, stem: str, topic: str, title: str, tags: tuple[str, ...],
          source: str, msq_draw: Callable[[Draw], Context] | None = None) -> None:
    """Register the MSQ family ``stem`` and the MCQ family ``stem_one`` (or the given names); the MSQ
    draws its situations with ``msq_draw`` when given."""
    msq_id, mcq_id = stem, (stem + "_one")

    def build_msq(dd: Draw) -> Problem:
        return _msq(dd, msq_draw or draw, ("concept",))

    def build_mcq(dd: Draw) -> Problem:
        return _mcq(dd, draw, ("concept",))

    build_msq.__doc__ = (draw.__doc__ or "") + "\n\nAn MSQ: 1 to 3 of 4 statements true."
    build_mcq.__doc__ = (draw.__doc__ or "") + "\n\nAn MCQ: exactly one of 4 statements true (or exactly one false)."
    family(msq_id, topic=topic, title=title, types=("msq",), tags=(*tags, "msq", "concept"), marks=2,
           source=source)(build_msq)
    # the MCQ asks for the one true statement or the one false one (drawn half and half): its title says both
    mcq_title = title.replace("Which of these", "Which one of these").replace(" are true?", " is true, or false?")
    family(mcq_id, topic=topic, title=mcq_title, types=("mcq",),
           tags=(*tags, "concept"), source=source)(build_mcq)


# --------------------------------------------------------------------------------------------
# (a) what a mask lets a query see


def mask_matrix(kind: str, n: int, a: int):
    """The KEEP matrix (n × n, row = query, column = key) of mask ``kind`` with parameter ``a``,
    from ``solver.kernels.masks``."""
    import numpy as np

    from solver.kernels import masks

    if kind == "causal":
        return masks.causal_mask(n)
    if kind == "reversed_causal":  # a right-to-left decoder: the causal mask of the reversed sequence
        return masks.causal_mask(n)[::-1, ::-1]
    if kind == "padding":
        return np.broadcast_to(masks.padding_mask([a], n)[0], (n, n))
    if kind == "left_padding":  # the first a tokens padding (as batched generation pads on the left), the rest real
        return np.broadcast_to(masks.padding_mask([n - a], n)[0][..., ::-1], (n, n))
    if kind == "causal_padding":
        return masks.combine(masks.causal_mask(n), masks.padding_mask([a], n)[0])
    if kind == "window":
        return masks.sliding_window_mask(n, a, causal=True)
    if kind == "reversed_window":  # a right-to-left decoder's window: the causal window of the reversed sequence
        return masks.sliding_window_mask(n, a, causal=True)[::-1, ::-1]
    if kind == "reversed_causal_padding":  # the causal mask with padding, the sequence reversed: a right-to-left decoder
        return masks.combine(masks.causal_mask(n), masks.padding_mask([n - a], n)[0])[::-1, ::-1]  # padded on the left
    if kind == "window_both":
        return masks.sliding_window_mask(n, a, causal=False)
    if kind == "prefix":  # prefix LM: the first a tokens see each other; the rest are causal
        return masks.causal_mask(n) | (np.arange(n)[None, :] < a)
    raise ValueError(kind)


_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _runs(keys: list[int]) -> str:
    """The keys a mask's row keeps, as a reader says them: runs of three or more as "9 to 21" (a causal row keeps up
    to 99 keys), "keys 1 to 4 and 9 to 12", "key 5", "no key"."""
    runs: list[list[int]] = []
    for k in keys:
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    parts = []
    for r in runs:
        parts += [f"{r[0]} to {r[-1]}"] if len(r) >= 3 else [str(k) for k in r]
    if not parts:
        return "no key"
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return ("key " if len(keys) == 1 else "keys ") + said


def _mask_words(kind: str, n: int, a: int) -> tuple[str, str]:
    """(how the stem names the mask, the rule the working states). The stem writes the mask's size in
    words: a printed number that an option's key token repeats would point at it."""
    w = _WORDS.get(a, str(a))
    return {
        "causal": ("a causal mask (as in a decoder)", "a causal mask keeps key $j$ for query $i$ when $j \\le i$"),
        "reversed_causal": ("a reversed causal mask (as in a right-to-left decoder, which reads the sequence from its "
                            "end)", "a reversed causal mask keeps key $j$ for query $i$ when $j \\ge i$"),
        "padding": (f"a padding mask only (no causal mask): the first {w} tokens are real, the rest padding",
                    f"a padding mask keeps the real keys, $j \\le {a}$, for every query"),
        "left_padding": (f"a padding mask only (no causal mask), padded on the left: the first {w} tokens are "
                         "padding, the rest real", f"a left-padding mask keeps the real keys, $j > {a}$, for every query"),
        "causal_padding": (f"a causal mask combined with a padding mask: the first {w} tokens are real, the rest "
                           "padding", f"the two together keep $j \\le i$ and $j \\le {a}$"),
        "window": (f"a causal sliding window of {w} tokens (each query sees itself and the tokens just before it, "
                   f"{w} in all)",
                   f"the window keeps $i - {a} < j \\le i$"),
        "reversed_window": (f"a reversed causal sliding window of {w} tokens (as in a right-to-left decoder: each query "
                            f"sees itself and the tokens just after it, {w} in all)",
                            f"the window keeps $i \\le j < i + {a}$"),
        "reversed_causal_padding": (f"a reversed causal mask (as in a right-to-left decoder) combined with a padding mask "
                                    f"padded on the left: the first {w} tokens are padding, the rest real",
                                    f"the two together keep $j \\ge i$ and $j > {a}$"),
        "window_both": (f"a bidirectional sliding window: a query sees the keys fewer than {w} positions away, "
                        "on either side", f"the window keeps $|i - j| < {a}$"),
        "prefix": (f"a prefix-LM mask with a prefix of {w} tokens (bidirectional within the prefix, causal after it)",
                   f"a prefix-LM mask keeps $j \\le i$, and every $j \\le {a}$"),
    }[kind]


# issue 39: easy mirrors each mask (causal and right-to-left, padding on the right and on the left), so that a key
# below the query, or a small key, is kept as often as a key above it: with the causal and right-padding masks alone,
# the one true pair was always the option with the smallest key (and the one false pair the largest); medium the
# same with a right-to-left decoder's window and its mask on a sequence padded on the left (the kept keys just after
# the query, or from the later of the query and the first real token on)
_MASK_KINDS = {0: ("causal", "reversed_causal", "padding", "left_padding"),
               1: ("window", "reversed_window", "causal_padding", "reversed_causal_padding"), 2: ("prefix", "window_both")}
_MASK_NOTES = {
    0: ["A mask's entry (query $i$, key $j$) is 1 (kept) or 0 (blocked: the score is set to $-\\infty$ before the "
        "softmax, so the weight is 0)."],
    1: ["A mask's entry (query $i$, key $j$) is 1 (kept) or 0 (blocked: the score is set to $-\\infty$ before the "
        "softmax, so the weight is 0).",
        "A window or a padding mask only removes keys: whatever it keeps, the plain causal mask of the same "
        "direction keeps too (left to right, or right to left)."],
    2: ["A mask's entry (query $i$, key $j$) is 1 (kept) or 0 (blocked: the score is set to $-\\infty$ before the "
        "softmax, so the weight is 0).",
        "Prefix-LM (T5's and UniLM's prefix language model): the prefix is read bidirectionally, the rest generated "
        "causally.",
        "A bidirectional window is an encoder's local attention (Longformer's sliding window): it sees later keys."],
}


def draw_mask(d: Draw) -> Context:
    """(query, key) pairs under one mask, each judged by the solver's KEEP matrix
    (solver.kernels.masks). Levels (disjoint, by the mask): easy, causal or padding only (each either way: a
    right-to-left decoder's reversed causal mask, padding on the left); medium, a causal sliding window or causal
    with padding (each also a right-to-left decoder's, the padding then on the left); hard, a prefix-LM mask or a
    bidirectional window."""
    kind = d.pick(_MASK_KINDS[d.level])
    # issue 39: 20 to 99 tokens, the query and the keys asked all two-digit (tokens 10 on), so a (query, key)
    # pair rarely repeats across draws and every option has the same length
    n = d.rng.randint(20, 99 if d.level < 2 else 60)  # hard: 20 to 60 (its record's draws; 99 drew its keys wider apart)
    a = d.rng.randint(12, n - 2) if kind not in ("causal", "reversed_causal") else 0
    if kind in ("window", "reversed_window", "window_both"):
        a = d.rng.randint(2, max(2, (n - 10) // 2))
    m = mask_matrix(kind, n, a)
    name, rule = _mask_words(kind, n, a)
    # one query per problem (its row of the mask): every option names the same query first, so an
    # option's first number, its words and its length say nothing of its truth
    i = d.rng.randint(10, n)
    row = [c + 1 for c in range(n) if m[i - 1, c]]
    pool = []
    for j in range(10, n + 1):
        if j in (i, a):  # its own key (kept by every mask here but padding), or the number the stem prints: giveaways
            continue
        ok = bool(m[i - 1, j - 1])
        said = ("Query token {i} attends to key token {j}.", "Query {i} attends to key {j}.",
                "Token {i} attends to token {j}.")[d.level]  # a wording per level: nothing to remember across
        pool.append(Statement(
            said.format(i=i, j=j), ok,
            f"row {i} of the mask keeps {_runs(row)}; key {j} is {'kept' if ok else 'blocked'}:",
            ("row", kind, n, a, i, j)))
    stem = (f"A sequence of tokens, numbered in order, goes through self-attention with {name}. "
            f"Look at the row of query token {i}: a query *attends to* a key when the mask keeps that pair (its "
            "attention weight is not forced to 0).")
    return Context(stem, f"The rule: {rule}. Each pair against row {i} of the mask:", pool,
                   list(_MASK_NOTES[d.level]), {"mask": kind, "n": n, "a": a, "query": i})


# issue 39 (round 4c): the MSQ's options are pairs of any row, each named from the query's side or from the key's
# ("query token 30 reads key token 12", "key token 12 feeds query token 30": one length, one set of words). With one
# row per problem, every mask here keeps an interval of keys, so the true options were always the smallest keys asked
# or the largest (a set a test-wise student picks by sorting the keys, guessing only the side); with a query of its own
# per option, named first or second, the order of the printed numbers no longer sorts the options by truth.
_MSQ_FRAMES = (("Query token {i} reads key token {j}.", "Key token {j} feeds query token {i}."),
               ("Query {i} reads key {j}.", "Key {j} feeds query {i}."),
               ("Token {i} reads token {j}.", "Token {j} feeds token {i}."))


def draw_mask_pairs(d: Draw) -> Context:
    """(query, key) pairs under one mask, each of its own row, each judged by the solver's KEEP matrix
    (solver.kernels.masks); the levels' masks as :func:`draw_mask`'s. Each pair is named from the query's
    side ("query token i reads key token j") or the key's ("key token j feeds query token i"), drawn half and
    half."""
    kind = d.pick(_MASK_KINDS[d.level])
    n = d.rng.randint(20, 99 if d.level < 2 else 60)
    a = d.rng.randint(12, n - 2) if kind not in ("causal", "reversed_causal") else 0
    if kind in ("window", "reversed_window", "window_both"):
        a = d.rng.randint(2, max(2, (n - 10) // 2))
    m = mask_matrix(kind, n, a)
    name, rule = _mask_words(kind, n, a)
    pool = []
    seen: set[tuple[int, int]] = set()
    for _ in range(48):
        i, j = d.rng.randint(10, n), d.rng.randint(10, n)
        if kind in ("window", "reversed_window", "window_both"):
            # a window keeps the keys near the query: pairs of any distance would make every far pair false, so
            # the distance is drawn on both sides of the window's edge, inside it or just past it (at most a quarter
            # of the window beyond it: the farther the pairs past the edge, the more of them the distance alone rules out)
            j = i + d.rng.choice((-1, 1)) * d.rng.randint(max(1, a // 2) if kind == "window_both" else 1, a + max(1, a // 4))
            if not 10 <= j <= n:
                continue
        if i == j or a in (i, j) or (i, j) in seen:  # its own key, or the number the stem prints: giveaways
            continue
        seen.add((i, j))
        ok = bool(m[i - 1, j - 1])
        said = _MSQ_FRAMES[d.level][d.rng.randrange(2)]
        row = [c + 1 for c in range(n) if m[i - 1, c]]
        pool.append(Statement(
            said.format(i=i, j=j), ok,
            f"row {i} of the mask keeps {_runs(row)}; key {j} is {'kept' if ok else 'blocked'}:",
            ("row", kind, n, a, i, j)))
    stem = (f"A sequence of tokens, numbered in order, goes through self-attention with {name}. "
            "Look at each pair below: query token $i$ *reads* key token $j$ (said the other way, key token $j$ "
            "*feeds* query token $i$) when the mask keeps that pair (its attention weight is not forced to 0).")
    return Context(stem, f"The rule: {rule}. Each pair against its query's row of the mask:", pool,
                   list(_MASK_NOTES[d.level]), {"mask": kind, "n": n, "a": a},
                   subject=lambda st: st.params[4:])


_pair(draw_mask, stem="concept.mask_pairs", topic="attention",
      title="Which of these pairs does the mask let attend?", tags=("masks", "causal-mask"),
      source=_SRC + "; solver.kernels.masks (KEEP masks)", msq_draw=draw_mask_pairs)


# --------------------------------------------------------------------------------------------
# (b) encoder, decoder, encoder-decoder


def attention_sublayers(c) -> list[tuple[str, str, str]]:
    """Every attention sub-layer of a model, in order: (stack, kind, mask) with kind ``self`` or
    ``cross`` and mask ``causal`` or ``none``; from the config's ``arch`` and layer counts (an
    encoder layer: bidirectional self-attention; a decoder layer: causal self-attention, and in an
    encoder-decoder model cross-attention to the encoder's output, as in Vaswani et al. 2017, Fig. 1)."""
    out: list[tuple[str, str, str]] = []
    enc, dec = c.encoder_layers, c.decoder_layers
    out += [("encoder", "self", "none")] * enc
    for _ in range(dec):
        out.append(("decoder", "self", "causal"))
        if c.arch == "encoder-decoder":
            out.append(("decoder", "cross", "none"))
    return out


def arch_facts(c) -> dict[str, bool]:
    """What the list of attention sub-layers says about a model."""
    subs = attention_sublayers(c)
    selfs = [s for s in subs if s[1] == "self"]
    return {
        "generates": any(s[2] == "causal" for s in selfs),  # a causal stack predicts the next token
        "sees_later": any(s[2] == "none" for s in selfs),  # a bidirectional self-attention somewhere
        "cross": any(s[1] == "cross" for s in subs),
        "all_causal": all(s[2] == "causal" for s in subs),
        "has_encoder": any(s[0] == "encoder" for s in subs),
        "has_decoder": any(s[0] == "decoder" for s in subs),
    }


def reach(c, n: int):
    """Whether the final output at position i depends on input token j (n × n booleans) in a model
    with one stack (encoder or decoder): the stack's KEEP masks (solver.kernels.masks: causal, or
    none; a sliding window on its local layers) composed over its layers, with the residual (each
    layer also keeps position i itself)."""
    import numpy as np

    from solver.kernels import masks

    r = np.eye(n, dtype=bool)
    for idx in range(c.n_layers):
        causal = c.arch == "decoder"
        if c.sliding_window and c.is_local_layer(idx):
            # the zoo's windows (128 tokens and more) exceed the few tokens asked about; either reading
            # of a window's size (with or without the query) then keeps the same keys
            m = masks.sliding_window_mask(n, c.sliding_window, causal=causal)
        else:
            m = masks.causal_mask(n) if causal else np.ones((n, n), dtype=bool)
        r = (m.astype(int) @ r.astype(int)) > 0
    return r


#: (template id, text, the fact, whether the text asserts it): each fact asked in both polarities, so
#: every model is as often the subject of a true statement as of a false one
_ARCH_TEMPLATES = (
    ("generates", "Given a prompt of {t} tokens, {m} is able to generate the next tokens one by one, each "
     "attending to the ones before it.", "generates", True),
    ("generates_not", "Given a prompt of {t} tokens, {m} is unable to generate the next tokens one by one, each "
     "attending to the ones before it.", "generates", False),
    ("sees_later", "Reading {t} tokens, {m} has a self-attention in which token 1 attends to token {t}.",
     "sees_later", True),
    ("sees_later_not", "Reading {t} tokens, {m} has no self-attention in which token 1 attends to token {t}.",
     "sees_later", False),
    ("cross", "Reading {t} tokens, {m} has cross-attention: queries from one stack, keys and values from another.",
     "cross", True),
    ("cross_not", "Reading {t} tokens, {m} has no cross-attention: its queries, keys and values share a stack.",
     "cross", False),
    ("all_causal", "Reading {t} tokens, {m} applies a causal mask in each attention sub-layer it has.",
     "all_causal", True),
    ("all_causal_not", "Reading {t} tokens, {m} has an attention sub-layer that applies no causal mask.",
     "all_causal", False),
    ("decoder", "Reading {t} tokens, {m} has a decoder stack that reads them left to right, {t} in all.",
     "has_decoder", True),
    ("decoder_not", "Reading {t} tokens, {m} has no decoder stack that reads them left to right, {t} in all.",
     "has_decoder", False),
    ("encoder", "Reading {t} tokens, {m} has an encoder stack that reads all {t} of them at once.", "has_encoder",
     True),
    ("encoder_not", "Reading {t} tokens, {m} has no encoder stack that reads all {t} of them at once.",
     "has_encoder", False),
)


def _subs_text(c) -> str:
    subs = attention_sublayers(c)
    parts = []
    enc = sum(1 for s in subs if s[0] == "encoder")
    dsel = sum(1 for s in subs if s[0] == "decoder" and s[1] == "self")
    dcross = sum(1 for s in subs if s[1] == "cross")
    if enc:
        parts.append(f"{enc} bidirectional self-attention (encoder)")
    if dsel:
        parts.append(f"{dsel} causal self-attention (decoder)")
    if dcross:
        parts.append(f"{dcross} cross-attention (decoder to encoder)")
    return ", ".join(parts)


def _zoo_models(level: int) -> list:
    """The published models of the zoo (every level; the levels differ by the facts asked)."""
    from question_bank.families.zoo import zoo

    return zoo()


#: the facts each level asks (easy: generation, an encoder, a decoder; medium: later tokens seen,
#: cross-attention, causal masks everywhere): three facts, six templates, so each option of a problem
#: can come from a template of its own
_LEVEL_FACTS = {0: ("generates", "has_encoder", "has_decoder"), 1: ("sees_later", "cross", "all_causal")}


def draw_arch(d: Draw) -> Context:
    """Statements about encoder-only, decoder-only and encoder-decoder models of the zoo, judged on
    each model's list of attention sub-layers (from its config's arch and layer counts) and, at
    hard, on the reachability of its masks composed over its layers. One model of each shape
    (encoder, decoder, encoder-decoder; two more at hard), named in the options by a letter the stem
    resolves. Levels (disjoint, by the facts asked): easy, generating token by token, an encoder
    stack, a decoder stack; medium, a token seeing later tokens, cross-attention, causal masks
    everywhere; hard,
    counts of attention sub-layers and which input tokens a position's output depends on. Each fact
    is asked in both polarities ("is able" / "is unable")."""
    models = _zoo_models(d.level)
    by_arch: dict[str, list] = {}
    for p in models:
        by_arch.setdefault(p.config.arch, []).append(p)
    chosen = [d.pick(sorted(ps, key=lambda p: p.name)) for _, ps in sorted(by_arch.items())]
    if d.level == 2:
        # two or three more of the zoo (of the one-stack models the position statements need)
        extra = [p for p in models if p not in chosen and p.config.arch != "encoder-decoder"]
        chosen += d.rng.sample(extra, 2)
    # the options name a model by a letter, the stem gives each letter's model (in a drawn order): an
    # option's words and length then say nothing of which model, hence of its truth
    order = list(range(len(chosen)))
    d.rng.shuffle(order)
    label = {chosen[k].name: "ABCDE"[pos] for pos, k in enumerate(order)}
    pool: list[Statement] = []
    for p in chosen:
        c = p.config
        facts = arch_facts(c)
        subs = _subs_text(c)
        if d.level < 2:
            for tid, tmpl, fact, asserts in _ARCH_TEMPLATES:
                if fact not in _LEVEL_FACTS[d.level]:
                    continue
                ok = facts[fact] == asserts
                t = d.rng.randint(8, 999)  # any input length: the claim does not depend on it
                pool.append(Statement(tmpl.format(m=f"model {label[p.name]}", t=t).replace(". model", ". Model"), ok, f"`{p.name}` (arch = {c.arch}): {subs}:",
                                      (tid, p.name, fact, t)))
        else:
            total = len(attention_sublayers(c))
            # the count, or what a slip gives: the cross-attention forgotten (total - decoder layers, for the
            # encoder-decoder) or one sub-layer too many in half the layers
            # (one below, one above: the count's rank among the values says nothing)
            wrong = {total - c.n_layers // 2, total + c.n_layers // 2}
            for x in sorted({total} | wrong):
                if x <= 0:
                    continue
                pool.append(Statement(f"Model {label[p.name]} has {x} attention sub-layers in all.", x == total,
                                      f"`{p.name}` ({c.n_layers} layers, arch = {c.arch}): {subs}, {total} in all:",
                                      ("count", p.name, "count", x)))
            if c.arch != "encoder-decoder":
                # issue 39: 8 to 60 tokens, and the input token as far before the position as after it (drawn
                # evenly), so a late position is no likelier to depend on the token asked
                n = d.rng.randint(8, 60)
                r = reach(c, n)
                for _ in range(3):
                    i = d.rng.randint(2, n - 1)
                    gap = d.rng.randint(1, min(i - 1, n - i))
                    j = i - gap if d.rng.random() < 0.5 else i + gap
                    dep = bool(r[i - 1, j - 1])
                    mask = "causal" if c.arch == "decoder" else "none (bidirectional)"
                    work = (f"`{p.name}`: self-attention mask {mask} in each of its {c.n_layers} layers; composed over "
                            f"the layers, position {i} {'reaches' if dep else 'does not reach'} token {j}:")
                    for word, ok in (("depends", dep), ("does not depend", not dep)):
                        pool.append(Statement(
                            f"In model {label[p.name]} reading {n} tokens, the output at position {i} {word} on input token "
                            f"{j}.",
                            ok, work, (f"depends:{word}", p.name, ("depends", i, j), n)))
    names = "; ".join(f"model {'ABCDE'[pos]} is `{chosen[k].name}`" for pos, k in enumerate(order))
    stem = (f"Consider these models of the zoo, each configured as its paper or released configuration describes "
            f"it: {names}.")
    if d.level == 1:
        stem += " An encoder-decoder's decoder reads the encoder's output."
    if d.level == 2:
        stem += " Count an attention sub-layer for each self-attention and each cross-attention of every layer."
    notes = ["An encoder's self-attention is bidirectional (no mask); a decoder's is causal; an encoder-decoder's "
             "decoder also has cross-attention to the encoder's output (Vaswani et al. 2017, Fig. 1)."]
    if d.level >= 1:
        notes.append("Generating token by token needs a causal stack that predicts the next token: a decoder.")
    if d.level >= 2:
        notes.append("Over $L$ layers, position $i$ depends on token $j$ when a chain of kept (query, key) entries "
                     "leads from $i$ to $j$: the boolean product of the layers' masks (each keeps $i$ itself).")
    return Context(stem, "Each model's attention sub-layers, from its configuration (solver.counting.presets):",
                   pool, notes, {"models": {label[p.name]: p.name for p in chosen}}, subject=lambda st: (st.params[1], st.params[2]),
                   balance_shared=True)


_pair(draw_arch, stem="concept.encoder_decoder", topic="architecture",
      title="Which of these statements about encoders and decoders are true?", tags=("encoder-decoder", "zoo"),
      source=_SRC + "; solver.counting.presets (arch, layer counts); Vaswani et al. 2017, Fig. 1")


# --------------------------------------------------------------------------------------------
# (c) pre-LN against post-LN


_FORM_TEX = {
    "pre": "y = x + F(\\mathrm{N}(x))",
    "post": "y = \\mathrm{N}(x + F(x))",
    "sandwich": "y = x + \\mathrm{N}_2(F(\\mathrm{N}_1(x)))",
    "reordered": "y = x + \\mathrm{N}(F(x))",
}
_FORM_NAME = {"pre": "pre-LN", "post": "post-LN", "sandwich": "sandwich norm", "reordered": "reordered norm"}


def _norm_statements(form: str, L: int, level: int, letter: str | None = None) -> list[Statement]:
    from solver.kernels.residual_graph import analyse, stack_graph

    a = analyse(stack_graph(form, L))
    one = analyse(stack_graph(form, 1, 1))
    # hard names each form by the letter the stem gives it (drawn per problem), as the encoder/decoder statements
    # name a model: the statement's formula no longer tells which form it is without reading the stem
    f = f"form {letter}" if letter else f"${_FORM_TEX[form]}$"
    tex = f"${_FORM_TEX[form]}$"
    out: list[Statement] = []
    work = (f"the graph of {L} layer{'s' if L > 1 else ''} of {tex} (2 sub-layers each): {a.norms} norms, "
            f"{a.skip_norms} on the skip path, {a.normalised_inputs} of {a.sublayers} sub-layers read a norm's "
            f"output, the last node {'is' if a.output_normalised else 'is not'} a norm;")
    if level == 0:
        work1 = (f"in {f} the skip path crosses {one.skip_norms} norm{'s' if one.skip_norms != 1 else ''}, $F$ reads "
                 f"{'a norm' + chr(39) + 's output' if one.normalised_inputs else 'the raw input $x$'}, $y$ "
                 f"{'is' if one.output_normalised else 'is not'} "
                 "a norm's output;")
        out += [
            Statement(f"In {f}, the path from $x$ to $y$ that skips $F$ passes through a norm.", one.skip_norms > 0,
                      work1, ("skip", form, "skip")),
            Statement(f"In {f}, the sub-layer $F$ reads a normalised input.", one.normalised_inputs == 1, work1,
                      ("input", form, "input")),
            Statement(f"In {f}, the block's output $y$ is the output of a norm.", one.output_normalised, work1,
                      ("output", form, "output")),
            Statement(f"A stack of {f} blocks needs a final norm for its output to be normalised.",
                      one.final_norm_needed, work1, ("final", form, "final")),
        ]
        return out
    per_layer = a.skip_norms // L
    if form in ("pre", "post"):
        for x in (0, 2):  # pre-LN's and post-LN's figures, asked of both
            out.append(Statement(f"In {L} layers of {f}, the skip path crosses {x} norms per layer.",
                                 per_layer == x, work, ("per_layer", form, "per_layer", x)))
    every = a.normalised_inputs == a.sublayers
    out.append(Statement(f"In {L} layers of {f}, every sub-layer reads the output of a norm.", every, work,
                         ("all_inputs", form, "inputs")))
    out.append(Statement(f"In {L} layers of {f}, some sub-layer reads an input that no norm produced.", not every, work,
                         ("some_input", form, "inputs")))
    out.append(Statement(f"{L} layers of {f} need a final norm for the stack's output to be normalised.",
                         a.final_norm_needed, work, ("final", form, "final")))
    out.append(Statement(f"{L} layers of {f} need no final norm for the stack's output to be normalised.",
                         not a.final_norm_needed, work, ("final_not", form, "final")))
    total = a.norms_with_final
    # each form's own figure and another form's (pre against post; the sandwich against pre, the reordered
    # form against the sandwich): every value is asked as often where it is right as where it is wrong
    other = {"pre": "post", "post": "pre", "sandwich": "pre", "reordered": "sandwich"}[form]
    for x in (total, analyse(stack_graph(other, L)).norms_with_final):
        out.append(Statement(f"{L} layers of {f}, with the final norm they need if any, hold {x} norms.",
                             x == total, work + f" with the final norm {'needed' if a.final_norm_needed else 'not needed'}, "
                             f"{total} norms:", ("norms", form, "norms", x)))
    return out


def draw_norm(d: Draw) -> Context:
    """Statements about residual forms, judged on the graph of the block or the stack
    (solver.kernels.residual_graph) built from its formula. Levels (disjoint): easy, one block of
    pre-LN or post-LN (the skip path, the sub-layer's input, the output, a final norm); medium, a
    stack of L layers of pre-LN or post-LN (norms per layer on the skip path, every sub-layer's
    input, the number of norms); hard, the same for the four forms (sandwich and reordered too)."""
    forms = ("pre", "post") if d.level < 2 else ("pre", "post", "sandwich", "reordered")
    # issue 39: any depth from 2 to 1,000 layers (DeepNet, Wang et al. 2022, trained 1,000; hard once took a zoo
    # model's, a few dozen depths), so a statement with its depth rarely repeats across draws
    L = d.rng.randint(2, 1000)
    where = f"with $L = {L}$ layers" if d.level >= 1 else ""
    # issue 39: hard names the four forms by letters drawn per problem (the stem says which is which): a statement
    # that wrote its formula was judged by a test-wise student from the formula's look and the claim's words
    letters = dict(zip(forms, d.rng.sample("ABCD", 4), strict=True)) if d.level == 2 else {}
    pool: list[Statement] = []
    for form in forms:
        pool += _norm_statements(form, L, d.level, letters.get(form))
    forms_md = "; ".join(f"{_FORM_NAME[f]} ${_FORM_TEX[f]}$" + (f" (form {letters[f]})" if letters else "")
                         for f in forms)
    stem = {0: f"A residual block wraps a sub-layer $F$ (attention or feed-forward) and a norm $\\mathrm{{N}}$ "
               f"(LayerNorm or RMSNorm) in one of two forms: {forms_md}.",
            1: f"A Transformer stack {where} has two sub-layers per layer (attention, feed-forward), each wrapped "
               f"in one residual form: {forms_md}. The skip path is the path from the embeddings to the stack's "
               "output that enters no sub-layer.",
            2: f"A Transformer stack {where} has two sub-layers per layer (attention, feed-forward), each wrapped "
               f"in one residual form: {forms_md} (Gemma 2 uses the sandwich, OLMo 2 the reordered norm). The skip "
               "path is the path from the embeddings to the stack's output that enters no sub-layer."}[d.level]
    notes = ["Read each formula as a graph: the skip path is $x$'s route to $y$ that never enters $F$."]
    if d.level >= 1:
        notes.append("Post-LN puts a norm on the skip path of every sub-layer, so the stack's output is normalised; "
                     "pre-LN leaves the skip path free and needs a final norm (GPT-2's ln_f).")
    if d.level >= 2:
        notes.append("The sandwich adds a second norm on each sub-layer's output (4 per layer); the reordered "
                     "form normalises only the sub-layer's output, so no sub-layer reads a normalised input.")
    return Context(stem, "Each statement against the graph of its formula:", pool, notes,
                   {"layers": L, "forms": list(forms)}, subject=lambda st: st.params[2])


_pair(draw_norm, stem="concept.norm_position", topic="architecture",
      title="Which of these statements about pre-LN and post-LN are true?", tags=("normalisation", "residual"),
      source=_SRC + "; solver.kernels.residual_graph; Xiong et al. 2020 (pre-LN); Vaswani et al. 2017 (post-LN)")


# --------------------------------------------------------------------------------------------
# (d) why attention replaced recurrence, with numbers


def table1(layer: str, n: int, d: int, k: int = 3) -> dict[str, int]:
    """Vaswani et al. 2017, Table 1, per layer, as exact counts for these sizes: ``ops`` (n²·d for
    self-attention, n·d² for a recurrent layer, k·n·d² for a convolution), ``sequential`` (1, n, 1)
    and ``path`` (the most steps between two of the n positions: 1 for self-attention, n − 1 for a
    recurrent layer)."""
    if layer == "self-attention":
        return {"ops": n * n * d, "sequential": 1, "path": 1}
    if layer == "recurrent":
        return {"ops": n * d * d, "sequential": n, "path": n - 1}
    if layer == "convolutional":
        return {"ops": k * n * d * d, "sequential": 1, "path": n - 1}
    raise ValueError(layer)


def conv_layers(m: int, k: int, dilated: bool) -> int:
    """Layers of kernel-k causal convolutions for a position to depend on the one m positions back:
    contiguous kernels reach k − 1 more positions per layer (⌈m/(k − 1)⌉ layers); dilated ones
    (dilation k^l in layer l, WaveNet's) reach k^L − 1 after L layers (the least L with k^L > m)."""
    if dilated:
        L = 0
        while k**L - 1 < m:
            L += 1
        return L
    return -(-m // (k - 1))


def _count(x: int, what: str) -> str:
    """``one step`` or ``530 steps``: 1 written as a word, so no digit recurs across the options."""
    return f"one {what}" if x == 1 else f"{x} {what}s"


def _num(x: int) -> str:
    return f"{x:,}".replace(",", "{,}")


def _size(d: Draw, lo: int, hi: int, step: int) -> int:
    """A multiple of ``step`` drawn log-uniformly in [lo, hi] (issue 39: sizes, and so statements, that rarely
    repeat across draws)."""
    return max(lo, round(lo * (hi / lo) ** d.rng.random() / step) * step)


def draw_rnn(d: Draw) -> Context:
    """Statements with numbers on why self-attention replaced recurrence, each computed for its own
    sizes from Vaswani et al. 2017, Table 1. Levels (disjoint): easy, sequential steps (and whether
    the n outputs are computed at once) and maximum path lengths for n tokens; medium, operations per layer (n²·d against n·d²: which is
    fewer, and their ratio); hard, convolutions (operations k·n·d² against n²·d, and the layers of
    contiguous or dilated kernels needed to connect two positions)."""
    pool: list[Statement] = []
    if d.level == 0:
        for _ in range(3):
            for layer in ("self-attention", "recurrent"):
                n = d.rng.randint(10, 4096)  # each claim its own sequence length
                t = table1(layer, n, 1)
                the = "the attention layer" if layer == "self-attention" else "the recurrent layer"  # one length
                for x in (1, n):
                    pool.append(Statement(f"Over $n = {n}$ tokens, {the} needs {_count(x, 'sequential step')}.",
                                          t["sequential"] == x,
                                          f"a {layer} layer: {t['sequential']} sequential step"
                                          f"{'s' if t['sequential'] > 1 else ''} for $n = {n}$ (stated {x}):",
                                          ("sequential", layer, n, x)))
                n = d.rng.randint(10, 4096)
                t = table1(layer, n, 1)
                par = t["sequential"] == 1  # one sequential step: all outputs computed at once
                pool.append(Statement(f"Over $n = {n}$ tokens, {the} can compute the {n} outputs at the same time.",
                                      par, f"a {layer} layer: {t['sequential']} sequential step"
                                      f"{'s' if t['sequential'] > 1 else ''} for $n = {n}$:", ("parallel", layer, n)))
                n = d.rng.randint(10, 4096)
                t = table1(layer, n, 1)
                pool.append(Statement(f"Over $n = {n}$ tokens, {the} must compute its {n} outputs one after another.",
                                      t["sequential"] > 1, f"a {layer} layer: {t['sequential']} sequential step"
                                      f"{'s' if t['sequential'] > 1 else ''} for $n = {n}$:", ("serial", layer, n)))
                n = d.rng.randint(10, 4096)
                t = table1(layer, n, 1)
                for x in (1, n - 1):
                    pool.append(Statement(f"Over $n = {n}$ tokens, {the} links the first token to the last in "
                                          f"{_count(x, 'step')}.",
                                          t["path"] == x,
                                          f"a {layer} layer: longest path {t['path']} step{'s' if t['path'] > 1 else ''} "
                                          f"between the {n} positions (stated {x}):", ("path", layer, n, x)))
        stem = ("A layer reads a sequence of $n$ tokens. Compare a self-attention layer (the attention layer) "
                "with a recurrent layer (one step per token) in sequential steps and path lengths.")

        def subject(st: Statement) -> object:
            return st.params[:3]  # one statement per claim, layer and length: no option mirrors another
    elif d.level == 1:
        for _ in range(10):
            n, dm = _size(d, 100, 16384, 4), _size(d, 128, 16384, 64)  # any length of tokens, widths of 64s
            if n == dm:
                continue
            sa, rnn = table1("self-attention", n, dm)["ops"], table1("recurrent", n, dm)["ops"]
            work = (f"self-attention $n^2 d = {n}^2 \\times {dm} = {_num(sa)}$, recurrent $n d^2 = {n} \\times {dm}^2 "
                    f"= {_num(rnn)}$:")
            # n and d in a drawn order: the first number printed says nothing of which is larger
            sizes_md = f"$n = {n}$ and $d = {dm}$" if d.rng.random() < 0.5 else f"$d = {dm}$ and $n = {n}$"
            for word, ok in (("fewer", sa < rnn), ("more", sa > rnn)):
                pool.append(Statement(f"For {sizes_md}, a self-attention layer does {word} operations than "
                                      "a recurrent layer.", ok, work, ("compare", n, dm, word)))
            r = sa / rnn
            for x in (r, 1 / r):
                pool.append(Statement(f"For {sizes_md}, self-attention does {x:g} times the operations of "
                                      "a recurrent layer.", math.isclose(x, r), work + f" ratio $n/d = {r:g}$:",
                                      ("ratio", n, dm, round(x, 6))))
        stem = ("Vaswani et al. 2017 (Table 1) count the operations of one layer over $n$ tokens of width $d$: "
                "$n^2 \\cdot d$ for self-attention, $n \\cdot d^2$ for a recurrent layer.")

        def subject(st: Statement) -> object:
            return st.params[1:3]  # one statement per pair of sizes
    else:
        for _ in range(6):
            # issue 39: the ratio n/d drawn first (3 to 6), then a one-digit kernel at least 1.5 times below or
            # above it, the side drawn evenly: n/d then says nothing of whether n > k·d (less computation for the
            # convolution), nor does the kernel's length
            dm = _size(d, 64, 2048, 64)
            r = 3 * 2 ** d.rng.random()
            n = max(64, round(r * dm / 4) * 4)
            ks = range(2, 10)
            fewer = d.rng.random() < 0.5
            k = d.pick([x for x in ks if (x * 1.5 <= n / dm if fewer else x >= 1.5 * n / dm)] or [0])
            if not k:
                continue
            sa, conv = table1("self-attention", n, dm)["ops"], table1("convolutional", n, dm, k)["ops"]
            if max(sa, conv) < 1.5 * min(sa, conv):
                continue
            work = (f"self-attention $n^2 d = {_num(sa)}$, convolution $k n d^2 = {k} \\times {n} \\times {dm}^2 = "
                    f"{_num(conv)}$:")
            sizes_md = (f"$n = {n}$, $d = {dm}$ and $k = {k}$" if d.rng.random() < 0.5
                        else f"$d = {dm}$, $n = {n}$ and $k = {k}$")  # n and d in a drawn order
            for word, ok in (("less", conv < sa), ("more", conv > sa)):  # words of one length
                pool.append(Statement(f"For {sizes_md}, a convolutional layer needs {word} "
                                      "computation than a self-attention layer.", ok, work,
                                      ("conv_ops", (n, dm, k), word)))
        for _ in range(6):
            k = d.pick((2, 3, 4, 5, 7))
            m = d.rng.randint(100, 2000)  # 3 or more dilated layers (k ≤ 7): a count one or two off is never below 1
            if conv_layers(m, k, True) == conv_layers(m, k, False):
                continue
            for dilated in (False, True):
                true = conv_layers(m, k, dilated)
                # the right count and one off by one or two either way (issue 39: a wrong count as near the
                # right one as the right one is to it, so the count's size does not say which kind it belongs to)
                other = true + d.pick((-2, -1, 1, 2))
                how = "dilated (dilation $k^l$ in layer $l$)" if dilated else "contiguous"
                for x in (true, other):
                    pool.append(Statement(
                        f"With {'dilated' if dilated else 'contiguous'} kernels of size {k}, the fewest layers of "
                        f"causal convolution that let a token depend on the token {m} positions back are {x}.",
                        x == true,
                        f"{how} kernels of size {k}: "
                        + (f"$k^L - 1 \\ge {m}$ first at $L = {true}$ (reach ${k}^{{{true}}} - 1 = {k**true - 1}$):"
                           if dilated else f"$\\lceil {m} / {k - 1} \\rceil = {true}$ layers:"),
                        ("conv_layers", (k, m), dilated, x)))
        stem = ("Vaswani et al. 2017 (Table 1) compare self-attention ($n^2 \\cdot d$ operations per layer, any two "
                "positions one step apart) with convolutions of kernel $k$ ($k \\cdot n \\cdot d^2$ operations; a "
                "contiguous kernel reaches $k - 1$ positions further back per layer, so $L$ layers reach $L(k - 1)$; a dilated "
                "one, dilation $k^l$ in layer $l = 0, 1, \\ldots$, multiplies its receptive field by $k$, so $L$ layers "
                "reach $k^L - 1$).")

        def subject(st: Statement) -> object:
            return st.params[1]  # one statement per sizes (n, d, k) or per (k, m)
    notes = ["Table 1 of Vaswani et al. 2017: self-attention $O(n^2 d)$ operations, $O(1)$ sequential operations, "
             "path length $O(1)$; recurrent $O(n d^2)$, $O(n)$, $O(n)$."]
    if d.level >= 1:
        notes.append("Self-attention costs fewer operations than recurrence exactly when $n < d$ (the ratio is $n/d$), "
                     "which holds for most sentences a translation model reads.")
    if d.level >= 2:
        notes.append("Convolutions: $O(k n d^2)$ operations, path length $O(n/k)$ with contiguous kernels and "
                     "$O(\\log_k n)$ with dilated ones.")
    return Context(stem, "Each statement computed for its own sizes:", pool, notes, subject=subject)


_pair(draw_rnn, stem="concept.attention_vs_rnn_sizes", topic="architecture",
      title="Which of these statements on attention against recurrence are true?", tags=("rnn", "complexity"),
      source=_SRC + "; Vaswani et al. 2017, Table 1")
