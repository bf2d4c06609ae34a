"""MSQs of computed statements (issue 26): "which of these … ?", each option judged by the solver.

Every option is a statement generated from parameters (a model configuration, a mask, a matmul's
shape) and its truth is a computation: the KV cache size (``solver.counting.memory``), the KEEP
mask (``solver.kernels.masks``), the roofline verdict (``solver.systems.roofline``), a preset's
heads, head size, cache per token and parameters (``solver.counting``). The worked
solution shows that computation for every option. :func:`computed_msq` draws how many options are
true first (1, 2 or 3 of 4, uniformly, as GATE's MSQs have at least one correct option), then
that many true statements and the rest false ones from a pool, so "select all" never wins and a
guesser who knows the usual number of true options scores at chance.

Issue 22: where a statement's look says which way its computation goes (few layers, a small cache; a
large batch, compute-bound; a wide window, kept), the option is a configuration and a verdict on it
(:func:`claim`: "below" or "above" the budget, "keeps" or "drops" the entry, time set by its "FLOPs"
or its "bytes"; "above" or "below" a figure 5/8 to 3/2 of a preset's), the two verdicts of one length
and drawn evenly, and the configurations drawn on both sides in turn: the truth is the computation's
and the verdict's together, never the wording's or the sizes'. Statements with a count (recurrent
steps, a convolution's reach) are off by one either way as often as they are right.
"""

from __future__ import annotations

from dataclasses import dataclass

from question_bank.family import Draw, family
from question_bank.grading import LETTERS
from question_bank.problem import ChoiceKey, Problem
from question_bank.render import Doc, latex_to_text

_SRC = "issue 26 (MSQs of computed statements)"


@dataclass(frozen=True)
class Statement:
    """An option: its text (Markdown), whether the solver finds it true, and the working line."""

    md: str
    true: bool
    working_md: str
    params: tuple = ()  # what the statement is made of (kept in ``given["option_params"]`` for tests)


def true_count(d: Draw, n: int = 4) -> int:
    """How many of ``n`` options are true (drawn before the options): the size of a key set drawn uniformly
    from the ``2^n − 1`` non-empty sets, so 1 to ``n`` with weights C(n, k) (4 : 6 : 4 : 1 of 15 for four
    options). Every size occurs, all true included, as in a GATE MSQ, and no size is a better blind guess
    than another: a size drawn evenly (a third each of 1 to 3) made a single option or three a third
    likelier than the rest, and an evenly drawn all-true key would make "select all" score 25 %."""
    return bin(d.rng.randrange(1, 2**n)).count("1")


def claim(d: Draw, holds: bool, words: tuple[str, str]) -> tuple[str, bool]:
    """A verdict on a computed yes-or-no: one of ``words`` (what holds, what does not; the same
    length, so an option's size says nothing of which it names) drawn at random, true when it names
    what the computation gives. The truth is the computation's and the claim's together: a
    configuration's look (small sizes, a large window) says which way the computation goes, never
    whether the claim made of it is right."""
    w = d.rng.choice((0, 1))
    return words[w], (w == 0) == holds


def computed_msq(d: Draw, pool: list[Statement], k: int, n: int = 4, tries: int = 30) -> tuple[list[Statement], ChoiceKey] | None:
    """``n`` options from ``pool``, ``k`` of them true, distinct texts, in a random order; None
    when the pool cannot give that many true and false ones.

    Length balance (as ``concept_choices(balance_length=True)`` for an MCQ): where a statement's
    length follows its truth (larger sizes, longer numbers), "the options longer (or shorter) than
    average" would be the key; a draw whose true options are exactly those is drawn again (up to
    ``tries`` times)."""
    seen: dict[str, Statement] = {}
    for s in pool:
        seen.setdefault(s.md, s)
    trues = [s for s in seen.values() if s.true]
    falses = [s for s in seen.values() if not s.true]
    if len(trues) < k or len(falses) < n - k:
        return None
    for _ in range(tries):
        items = d.rng.sample(trues, k) + d.rng.sample(falses, n - k)
        size = [len(latex_to_text(s.md)) for s in items]
        mean = sum(size) / n
        right = {i for i, s in enumerate(items) if s.true}
        if right not in ({i for i in range(n) if size[i] > mean}, {i for i in range(n) if size[i] < mean}):
            break
    d.rng.shuffle(items)
    return items, ChoiceKey(frozenset(i for i, s in enumerate(items) if s.true))


def _text(md: str) -> str:
    return latex_to_text(md).replace("I^*", "I*")


def _msq_problem(d: Draw, st: Doc, items: list[Statement], key: ChoiceKey, intro_md: str, *,
                 given: dict, tags: tuple[str, ...] = (), notes: list[str] = ()) -> Problem:
    given = {**given, "option_params": [list(s.params) for s in items]}
    options = [s.md for s in items]
    options_text = [latex_to_text(o) for o in options]
    sol = Doc()
    sol.p(intro_md, _text(intro_md))
    for n in notes:
        sol.p(n, _text(n))
    sol.bullets([f"({LETTERS[i]}) {s.working_md} **{'True' if s.true else 'False'}.**" for i, s in enumerate(items)],
                [_text(f"({LETTERS[i]}) {s.working_md} {'True' if s.true else 'False'}.") for i, s in enumerate(items)])
    from question_bank.grading import answer_text

    ans = answer_text(key, options_text)
    sol.p(f"**Answer:** {ans}", f"Answer: {ans}")
    return d.problem(type="msq", statement=st, key=key, solution=sol, options=options, options_text=options_text,
                     given=given, tags=tags)


# --------------------------------------------------------------------------------------------
# KV cache below a budget

_DTYPES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}


def _gib(x: float) -> str:
    return f"{x:.3g}"


@family("msq.kv_cache_below", topic="counting", title="KV caches against a budget: which statements are true?",
        types=("msq",), tags=("kv-cache", "memory", "msq"), marks=2, source=_SRC)
def kv_cache_below(d: Draw) -> Problem:
    """KV cache = 2 (K and V) × L × B × n × n_kv × d_h × bytes, each option's against its own budget:
    each option a configuration, a budget and a verdict (:func:`claim`: its cache below or above the
    budget), true when the verdict is the computation's.

    Issue 39: each budget stands a factor 1.25 to 2.5 above or below the option's cache (drawn), so a
    configuration's sizes (a deep, wide model) say nothing of which side its budget is on; with one budget for
    all four options the largest configurations were the ones above it (boosted trees on the options' numbers
    found the key in 30 % of draws, chance 9 %). Configurations from wide ranges, so statements rarely repeat.

    Levels (disjoint, ordered): easy, multi-head attention (the K/V heads are the heads), fp16, one
    sequence; medium, grouped-query attention (n_kv K/V heads besides the query heads: the query
    heads are the trap), bf16, one sequence; hard, grouped-query attention with each option's own
    dtype (fp32, bf16, int8) and a batch of sequences."""
    from solver.counting.memory import kv_cache_bytes

    k = true_count(d)
    dts = ("fp16",) if d.level == 0 else ("bf16",) if d.level == 1 else ("fp32", "bf16", "int8")
    n = d.pick(range(4096, 32769, 512)) if d.level < 2 else d.pick(range(2048, 16385, 256))
    B = 1 if d.level < 2 else d.pick(range(2, 17))
    pool: list[Statement] = []
    while len(pool) < 16:
        L = d.pick(range(10, 97))
        h = d.pick(range(12, 97, 4)) if d.level == 0 else d.pick(range(16, 97, 8))
        dh = d.pick((32, 48, 64, 80, 96, 112, 128, 160, 192, 256))  # head sizes of real models (GPT-2 64, Gemma 256)
        kv = h if d.level == 0 else d.pick((1, 2, 4, 8))
        dt = d.pick(dts)
        size = kv_cache_bytes(L, B, n, kv, dh, dt)
        f = d.rng.uniform(1.25, 2.5)
        # in MiB, three figures: 3 or 4 characters whatever the size (in GiB, a small cache's budget read 0.0xxx)
        budget = f"{float(f'{size * (f if d.rng.random() < 0.5 else 1 / f) / 2**20:.3g}'):g}"
        limit = float(budget) * 2**20
        if d.level == 0:
            md = f"$L = {L}$ layers, ${h}$ heads of size ${dh}$"
        elif d.level == 1:
            md = f"$L = {L}$ layers, ${h}$ query heads and ${kv}$ K/V heads of size ${dh}$"
        else:
            md = f"$L = {L}$ layers, ${h}$ query heads and ${kv}$ K/V heads of size ${dh}$, cache in {dt}"
        side = "below" if size < limit else "above"
        said, ok = claim(d, size < limit, ("below", "above"))
        if sum(1 for x in pool if x.true == ok) == 8:  # 8 true and 8 false statements
            continue
        work = (f"$2 \\times {L} \\times {B} \\times {n} \\times {kv} \\times {dh} \\times {_DTYPES[dt]} = "
                f"{size:,}$ bytes $= {_gib(size / 2**20)}$ MiB, {side} {budget} MiB (the statement says {said}):"
                ).replace(",", "{,}")
        pool.append(Statement(f"{md}: the KV cache is {said} {budget} MiB", ok, work, (L, h, kv, dh, dt, float(budget), said)))
    got = computed_msq(d, pool, k)
    assert got is not None, "8 true and 8 false statements hold 3 of each"
    items, key = got
    st = Doc()
    budgets = "Each statement sets one configuration's KV cache against a budget in MiB ($2^{20}$ bytes)."
    if d.level == 0:
        st.p(f"A decoder-only model uses multi-head attention and caches K and V in fp16 (2 bytes). It generates one "
             f"sequence of $n = {n}$ tokens. {budgets} Which of these statements are true? Select all that apply.")
    elif d.level == 1:
        st.p(f"A decoder-only model uses grouped-query attention and caches K and V in bf16 (2 bytes). It generates one "
             f"sequence of $n = {n}$ tokens. {budgets} Which of these statements are true? Select all that apply.")
    else:
        st.p(f"A decoder-only model uses grouped-query attention and serves a batch of $B = {B}$ sequences of "
             f"$n = {n}$ tokens each (fp32: 4 bytes, bf16: 2 bytes, int8: 1 byte per element). {budgets} Which of "
             "these statements are true? Select all that apply.")
    notes = []
    if d.level >= 1:
        notes.append("Only the K/V heads are cached: the query heads do not enter the KV cache.")
    if d.level == 2:
        notes.append(f"Every option's bytes per element are its own dtype's; all {B} sequences are cached.")
    return _msq_problem(d, st, items, key, "KV cache $= 2 \\times L \\times B \\times n \\times n_{kv} \\times d_h "
                        "\\times$ bytes (the 2: both K and V):", notes=notes,
                        given={"n": n, "batch": B, "option_values": [s.md for s in items]})


# --------------------------------------------------------------------------------------------
# which masks let a query see a key


def _keep(kind: str, n: int, a: int, i: int, j: int) -> bool:
    """Whether the mask ``kind`` (parameter ``a``) keeps query ``i``, key ``j`` (1-based), read from
    the solver's KEEP masks."""
    import numpy as np

    from solver.kernels import masks

    if kind == "causal":
        m = masks.causal_mask(n)
    elif kind == "none":
        m = np.ones((n, n), dtype=bool)
    elif kind == "padding":
        m = np.broadcast_to(masks.padding_mask([a], n)[0], (n, n))
    elif kind == "causal_padding":
        m = masks.combine(masks.causal_mask(n), masks.padding_mask([a], n)[0])
    elif kind == "window":
        m = masks.sliding_window_mask(n, a, causal=True)
    elif kind == "window_both":
        m = masks.sliding_window_mask(n, a, causal=False)
    elif kind == "prefix":  # prefix LM: the first a tokens see each other; the rest are causal
        m = masks.causal_mask(n) | (np.arange(n)[None, :] < a)
    else:
        raise ValueError(kind)
    return bool(m[i - 1, j - 1])


def _mask_text(kind: str, a: int) -> tuple[str, str]:
    """(the option, the rule its working states) for a mask."""
    return {
        "causal": ("a causal (decoder) mask", "a causal mask keeps keys $j \\le i$"),
        "none": ("no mask (bidirectional, as in an encoder)", "without a mask every key is kept"),
        "padding": (f"a padding mask for a sequence of {a} real tokens followed by padding, no causal mask",
                    f"a padding mask keeps keys $j \\le {a}$"),
        "causal_padding": (f"a causal mask combined with a padding mask for {a} real tokens",
                           f"causal and padding keep keys $j \\le \\min(i, {a})$"),
        "window": (f"a causal sliding window of {a} tokens (each token sees itself and the {a - 1} before it)",
                   f"this window keeps keys $i - {a} < j \\le i$"),
        "window_both": (f"a bidirectional sliding window keeping keys fewer than {a} positions away",
                        f"this window keeps keys with $|i - j| < {a}$"),
        "prefix": (f"a prefix-LM mask with a prefix of {a} tokens (bidirectional within the prefix, causal after it)",
                   f"a prefix-LM mask keeps keys $j \\le i$ or $j \\le {a}$"),
    }[kind]


@family("msq.mask_attend", topic="attention", title="Which entries a mask keeps: which statements are true?",
        types=("msq",), tags=("masks", "causal-mask", "msq"), marks=2, source=_SRC)
def mask_attend(d: Draw) -> Problem:
    """Each option a mask and a verdict (:func:`claim`: it keeps or drops entry (i, j)); true when
    the verdict is what the mask's KEEP matrix (solver.kernels.masks) holds at (i, j).

    Levels (disjoint, ordered): easy, causal, none, padding and causal-with-padding masks; medium,
    with at least one causal sliding window among them; hard, with at least one prefix-LM mask or
    bidirectional window among them (the working states each mask's rule, then checks it)."""
    kinds = ["causal", "none", "padding", "causal_padding"]
    if d.level >= 1:
        kinds.append("window")
    if d.level == 2:
        kinds += ["window_both", "prefix"]
    must = {0: None, 1: {"window"}, 2: {"window_both", "prefix"}}[d.level]
    k = true_count(d)
    for _ in range(200):
        n = d.pick(range(6, 41))  # issue 39: sequences of 6 to 40 tokens, so a statement (mask, entry) rarely repeats
        i = d.rng.randint(1, n)
        j = d.rng.randint(1, n)
        if i == j:
            continue
        pool = []
        for kind in kinds:
            for a in (range(2, n) if kind not in ("causal", "none") else (0,)):
                text, rule = _mask_text(kind, a)
                kept = _keep(kind, n, a, i, j)
                said, ok = claim(d, kept, ("keeps", "drops"))
                pool.append((kind, Statement(
                    f"{text[0].upper()}{text[1:]} {said} the entry ({i}, {j}).", ok,
                    f"{rule}; $i = {i}$, $j = {j}$: {'kept' if kept else 'dropped'} (the statement says {said}).",
                    (kind, a, said))))
        # as many kept entries as dropped ones (a random subset of the larger side), so that "keeps" is as
        # often true as "drops"
        kept = [e for e in pool if (e[1].params[2] == "keeps") == e[1].true]
        dropped = [e for e in pool if e not in kept]
        m = min(len(kept), len(dropped))
        if m < 2:
            continue
        pool = d.rng.sample(kept, m) + d.rng.sample(dropped, m)
        got = computed_msq(d, [s for _, s in pool], k)
        if got is None:
            continue
        items, key = got
        kinds_in = {k for k, s in pool if s in items}
        if must is None or kinds_in & must:
            break
    st = Doc()
    st.p(f"A sequence has $n = {n}$ tokens, numbered 1 to {n}. Token {i} is the query and token {j} the key: a mask "
         f"that keeps the entry ({i}, {j}) lets token {i} attend to token {j} (a non-zero weight on it), one that "
         "drops it gives that weight zero. Which of these statements are true? Select all that apply.")
    return _msq_problem(d, st, items, key, f"Query $i = {i}$, key $j = {j}$ ({'a later' if j > i else 'an earlier'} "
                        "position). Each mask's rule, then the entry:",
                        given={"n": n, "query": i, "key": j, "option_values": [s.md for s in items]})


# --------------------------------------------------------------------------------------------
# which matmuls are compute-bound


@family("msq.matmul_compute_bound", topic="hardware", title="Compute- or memory-bound on this chip: which statements are true?",
        types=("msq",), tags=("roofline", "arithmetic-intensity", "msq"), marks=2, source=_SRC)
def matmul_compute_bound(d: Draw) -> Problem:
    """I = 2BDF / (2BD + 2DF + 2BF) FLOP/byte (bf16, each operand read once, Y written once), each
    option's against I* = dense peak / HBM bandwidth; each option a shape and a verdict
    (:func:`claim`: its time set by its FLOPs, compute-bound, or by its bytes, memory-bound), true when
    the verdict is the roofline's.

    Levels (disjoint, ordered): easy, a TPU (or an MI300X) whose dense peak is stated as such, square weights
    (D = F); medium, an NVIDIA GPU (the datasheet's with-sparsity figure to halve first), square
    weights; hard, an NVIDIA GPU with D ≠ F. No option within 20 % of I*; at easy and medium none beyond a factor
    1.5 of it (issue 39: a shape far from the ridge is on the same side of it on every chip)."""
    from question_bank.families.hardware import (
        _MORE_CHIP_NAMES,
        CHIP_NAMES,
        _bw_text,
        peak_text,
        resolved_chip,
    )
    from solver.systems.roofline import matmul

    # chips whose I* spans 150-570 FLOP/byte, so no batch size is compute-bound on all of them
    hw = d.pick(("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "mi300x") if d.level == 0
                else ("a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200"))
    chip = resolved_chip(hw)
    k = true_count(d)

    def size(lo: int, hi: int, step: int) -> int:
        """A multiple of ``step`` drawn log-uniformly in [lo, hi] (issue 39: shapes that rarely repeat)."""
        return max(lo, round(lo * (hi / lo) ** d.rng.random() / step) * step)

    for _ in range(100):
        pool: list[Statement] = []
        crit = 0.0
        for _ in range(200):
            if len(pool) == 16:
                break
            B = size(128, 8192, 16 if d.level == 2 else 8)  # mostly above I*: then D (and F) decide as often as B
            D = size(128, 16384, 64 if d.level == 2 else 32)
            F = D if d.level < 2 else size(128, 16384, 64)
            if d.level == 2 and F == D:
                continue
            r = matmul(B, D, F, dtype="bf16", chip=chip)
            I, crit = float(r.breakdown["intensity"]), float(r.breakdown["critical_intensity"])
            # compute-bound and memory-bound shapes in turn, so that either verdict is as often true as not
            if abs(I - crit) / crit < 0.2 or (I > crit) != (len(pool) % 2 == 0):
                continue
            # issue 39: within a factor 1.5 of I* (easy and medium), so that a shape's size alone does not say which
            # side it is on: a batch of 8,192 is compute-bound on every chip, one of 128 memory-bound on every chip
            # (and batches in multiples of 8, widths of 32 there, so that a shape in that band rarely repeats)
            if d.level < 2 and not crit / 1.5 < I < crit * 1.5:
                continue
            said, ok = claim(d, I > crit, ("FLOPs", "bytes"))
            # issue 39: each option names both words, the claimed one first ("… its FLOPs, not its bytes"), so every
            # option has the same words: which options share a verdict (with the shapes' sizes, the key up to its
            # complement) is no longer read off the words the options have in common
            md = f"$B = {B}$, $D = {D}$, $F = {F}$: its time is set by its {said}, not its {'bytes' if said == 'FLOPs' else 'FLOPs'}"
            work = (f"$I = \\frac{{2 \\cdot {B} \\cdot {D} \\cdot {F}}}{{2({B} \\cdot {D} + {D} \\cdot {F} + "
                    f"{B} \\cdot {F})}} = {I:.1f}$, {'above' if I > crit else 'below'} $I^* = {crit:.1f}$, "
                    f"{'compute' if I > crit else 'memory'}-bound, its time set by its {'FLOPs' if I > crit else 'bytes'} "
                    f"(the statement says {said}):")
            pool.append(Statement(md, ok, work, (B, D, F, said)))
        got = computed_msq(d, pool, k)
        if got is not None:
            break
    assert got is not None, "no draw gave matmuls on both sides of I*"
    items, key = got
    st = Doc()
    st.p(f"On the {(CHIP_NAMES | _MORE_CHIP_NAMES)[hw]} ({peak_text(hw)}; {_bw_text(hw)}), a bf16 matmul $Y = XW$ multiplies activations "
         "$X$ of shape $B \\times D$ by weights $W$ of shape $D \\times F$. Each operand is read from HBM once and $Y$ "
         "written once; count 2 FLOPs per multiply-add and 2 bytes per element. Each option gives a matmul's shape and "
         "says what sets its time on this chip: its FLOPs (compute-bound) or its bytes (memory-bound). Which of these "
         "statements are true? Select all that apply.")
    notes = [f"$I^* = $ dense peak / bandwidth $= {crit:.1f}$ FLOP/byte"
             + (" (the dense peak is half the datasheet's with-sparsity figure)." if d.level >= 1 else ".")]
    return _msq_problem(d, st, items, key, "$I = 2BDF / (2BD + 2DF + 2BF)$ FLOP per byte; compute-bound when "
                        "$I > I^*$.", notes=notes,
                        given={"hw": hw, "critical_intensity": crit, "option_values": [s.md for s in items]})


# --------------------------------------------------------------------------------------------
# statements about one model of the zoo

#: Decoder presets of the zoo whose cache is the plain 2·L·n_kv·d_h per token (no window, no latent) and whose
#: head size is d_model / n_heads, so the statement's numbers give it (issue 38: GPT-3 XL's 24 heads of 128 in a
#: width of 2048 do not), by level: multi-head; grouped-query; mixtures of experts. Issue 39: 15, 7 and 2 of them
#: (it was 7, 2 and 2), so a model's figures are not a handful an attacker learns from the printed sizes.
_MODELS_BY_LEVEL = (
    ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-2.7b",
     "gpt3-6.7b", "gpt3-175b", "llama2-7b", "llama2-13b", "olmo2-7b", "pythia-1.4b"),
    ("llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b"),
    ("mixtral-8x7b", "mixtral-8x22b"),
)
_MODELS = tuple(m for ms in _MODELS_BY_LEVEL for m in ms)
#: How far a statement's figure stands from the model's (a factor drawn in this range, on either side): never the
#: half or double a forgotten K or V gives.
_FACTOR = (1.2, 1.9)


@family("msq.model_statements", topic="counting", title="Which statements about this model are true?",
        types=("msq",), tags=("zoo", "kv-cache", "parameters", "msq"), marks=2, source=_SRC)
def model_statements(d: Draw) -> Problem:
    """Four statements about one preset (the weights of its K projection, of its attention, its KV cache
    per token, its parameters), each true or false as drawn: each sets the preset's figure against a
    number a factor 1.2 to 1.9 above or below it (drawn, issue 39: thresholds on both sides at varying
    distances, not at ×0.75 or ×4/3 of a printed figure) and says "above" or "below" (the side and the
    word each drawn evenly, so neither the number nor the word gives the truth away). Typical mistakes
    land on the wrong side: the query heads taken for the K/V heads (K weights and a cache n_heads /
    n_kv times too large), K or V forgotten (half the cache), the active experts taken for the
    parameters.

    Levels (disjoint, ordered): easy, multi-head models (GPT-2, GPT-3, Llama 2 7B/13B, OLMo 2, Pythia),
    the cache in fp16; medium, grouped-query models (Llama 2 70B, Llama 3, Qwen 2.5, Qwen 3 8B), bf16;
    hard, mixtures of experts (Mixtral), where the parameters are the total and the cache in fp8 (1 byte)."""
    from solver.counting.params import param_breakdown
    from solver.counting.presets import get_preset

    name = d.pick(_MODELS_BY_LEVEL[d.level])
    preset = get_preset(name)
    c = preset.config
    dt, nb = (("fp16", 2), ("bf16", 2), ("fp8", 1))[d.level]
    h, kv, dh, L, dm = c.n_heads, c.kv_heads, c.head_dim, c.n_layers, c.d_model
    cache = 2 * L * kv * dh * nb
    pb = param_breakdown(c)
    total = pb.total
    k = true_count(d)
    truth = [True] * k + [False] * (4 - k)
    d.rng.shuffle(truth)

    def sig3(x: float) -> str:
        return f"{float(f'{x:.3g}'):g}"

    def bound(value: float, ok: bool, fmt, read) -> tuple[str, float, str]:
        """A figure on one side of ``value`` (issue 39: a factor drawn from 1.2 to 1.9, above or below, so the
        figure's distance from any printed number says nothing of its side; never the half or double a forgotten
        K or V gives) and the word, above or below, that makes the statement ``ok``: which side the figure lies
        on and which word is said are each drawn evenly, whatever the truth. ``read``: the printed figure's value
        (the statement is judged on the figure as printed)."""
        f = d.rng.uniform(*_FACTOR)
        f = f if d.rng.random() < 0.5 else 1 / f
        shown = fmt(value * f)
        r = read(shown)
        said = ("above" if r < value else "below") if ok else ("below" if r < value else "above")
        return shown, r, said

    kinds = []
    # 1. the K projection's weights d_model · n_kv · d_h (mistake: the query heads' d_model · n_heads · d_h); its
    # output width alone is d_model, printed, for multi-head models
    kw = dm * kv * dh
    shown, r, said = bound(kw, truth[0], lambda x: sig3(x / 1e6), lambda t: float(t) * 1e6)
    kinds.append((f"Each layer's K projection holds {said} {shown} million weights.",
                  f"$d_{{model}} \\cdot n_{{kv}} \\cdot d_h = {dm} \\cdot {kv} \\cdot {dh} = {kw:,}$, "
                  f"{'above' if kw > r else 'below'} {shown} million (the statement says {said}):".replace(",", "{,}"),
                  (1, r, said)))
    # 2. the attention weights of one layer: W_Q and W_O d_model · n_heads · d_h each, W_K and W_V d_model · n_kv · d_h
    # each (mistake: K and V as wide as Q). Issue 39: it replaces the head size, 128 in every model above easy (a
    # figure an attacker remembers)
    aw = 2 * dm * h * dh + 2 * dm * kv * dh
    shown, r, said = bound(aw, truth[1], lambda x: sig3(x / 1e6), lambda t: float(t) * 1e6)
    kinds.append((f"Each layer's attention (Q, K, V and O) holds {said} {shown} million weights.",
                  f"$d_h = {dm} / {h} = {dh}$; $2 \\cdot {dm} \\cdot {h} \\cdot {dh} + 2 \\cdot {dm} \\cdot {kv} \\cdot {dh} = "
                  f"{aw:,}$ (Q and O, then K and V), {'above' if aw > r else 'below'} {shown} million (the statement says "
                  f"{said}):".replace(",", "{,}"), (2, r, said)))
    # 3. KV cache per token (mistake: the query heads cached, or K only)
    shown, r, said = bound(cache, truth[2], lambda x: sig3(x / 1024), lambda t: float(t) * 1024)
    kinds.append((f"Its KV cache in {dt} is {said} {shown} KiB per token.",
                  f"$2 \\times {L} \\times {kv} \\times {dh} \\times {nb} = {cache:,}$ bytes $= {cache / 1024:g}$ KiB per "
                  f"token, {'above' if cache > r else 'below'} {shown} KiB (the statement says {said}):".replace(",", "{,}"),
                  (3, r, said)))
    # 4. parameters (mistake: only the active experts for MoE, or without the embeddings); the figure is
    # compared as printed (three significant figures)
    shown, r, said = bound(total, truth[3], lambda x: sig3(x / 1e9), lambda t: float(t) * 1e9)
    kinds.append((f"Its parameter count is {said} {shown} billion.",
                  f"exactly {total:,} parameters $\\approx$ {total / 1e9:.3g} billion, {'above' if total > r else 'below'} "
                  f"{shown} billion (the statement says {said}):".replace(",", "{,}"), (4, r, said)))
    items = []
    for (md, work, prm), ok in zip(kinds, truth, strict=True):
        items.append(Statement(md, ok, work, prm))
    # statements in a drawn order: the truth is already drawn per statement
    d.rng.shuffle(items)
    key = ChoiceKey(frozenset(i for i, s in enumerate(items) if s.true))
    st = Doc()
    st.p(f"`{name}` is a decoder with $L = {L}$ layers, $d_{{model}} = {dm}$, {h} query heads and "
         f"{kv} K/V heads" + (f", and {c.n_experts} experts per layer of which each token uses {c.top_k}" if c.n_experts > 1 else "")
         + ". Which of these statements about it are true? Select all that apply.")
    return _msq_problem(d, st, items, key, f"Each statement against the configuration ({preset.source}):",
                        given={"model": name, "dtype": dt, "option_values": [s.md for s in items]}, tags=("zoo",))


# --------------------------------------------------------------------------------------------
# why attention replaced recurrence (Vaswani et al. 2017, Table 1), as statements with numbers


def _recurrence_pool(d: Draw, kinds: list[str]) -> list[tuple[str, Statement]]:
    """Statements about one sequence, each judged by the rule of Vaswani et al. 2017, Table 1 (per
    layer: self-attention O(n²·d) operations, O(1) sequential steps, path length 1; recurrent O(n·d²),
    O(n) steps, path length n; convolutional kernel k: a stack of L layers sees L·(k − 1) positions
    back) or by the causal mask (query i keeps keys j ≤ i)."""
    out: list[tuple[str, Statement]] = []
    for _ in range(24):
        kind = d.pick(kinds)
        if kind == "reach_rnn":
            # issue 39: tokens anywhere in a sequence of up to 2,000, so a statement rarely repeats across draws
            t = d.rng.randint(1, 300)
            m = t + d.rng.randint(3, 1500)
            # half the statements give the right count, the others one step too many or too few (a count
            # equal to a token's number is drawn again: no number is printed twice)
            s = m - t if d.rng.random() < 0.5 else d.pick((m - t - 1, m - t + 1))
            if s in (t, m):
                continue
            out.append((kind, Statement(
                f"In a recurrent layer, token {t} first influences the state at token {m} after {s} sequential steps.",
                s == m - t, f"the state at token {m} depends on token {t} through ${m} - {t} = {m - t}$ steps (one "
                f"per token after it); stated {s}:", (kind, t, m, s))))
        elif kind == "causal":
            n = d.rng.randint(12, 999)
            # tokens before the last (the last, printed twice, would say which way it goes); the key as far
            # before the query as after it, drawn evenly (issue 39: a late query is no likelier to see its key)
            i = d.rng.randint(2, n - 2)
            gap = d.rng.randint(1, min(i - 1, n - 1 - i))
            j = i - gap if d.rng.random() < 0.5 else i + gap
            out.append((kind, Statement(
                f"In causal self-attention over {n} tokens, token {i} attends to token {j} in one step.",
                j <= i, f"a causal mask keeps $j \\le i$: $j = {j}$, $i = {i}$:", (kind, i, j))))
        elif kind == "ops":
            # issue 39: n and d from one range (256 to 16,384; n a multiple of 8, d of 64) and printed in a drawn
            # order, so neither the first number nor its size says which is the sequence
            n = round(256 * 64 ** d.rng.random() / 8) * 8
            dm = round(256 * 64 ** d.rng.random() / 64) * 64
            if dm / 4 < n < 4 * dm:  # near each other a constant factor (QKᵀ and AV, W_h and W_x) could flip it
                continue
            # "less" or "more", drawn: which way the counts go (a long sequence, a narrow width) is the
            # computation's, whether the statement says so is the draw's
            said, ok = claim(d, n < dm, ("less", "more"))
            out.append((kind, Statement(
                (f"For $n = {n}$ tokens of width $d = {dm}$" if d.rng.random() < 0.5 else
                 f"For a width of $d = {dm}$ and $n = {n}$ tokens")
                + f", a self-attention layer needs {said} computation than a recurrent layer.", ok,
                f"self-attention $n^2 d = {n * n * dm:,}$, recurrent $n d^2 = {n * dm * dm:,}$ (over 4× apart: no "
                f"constant factor of a convention changes the order), {'less' if n < dm else 'more'} for "
                f"self-attention (the statement says {said}):".replace(",", "{,}"),
                (kind, n, dm, said))))
        elif kind == "conv":
            k = d.pick((2, 3, 4, 5, 7, 9))
            L = d.rng.randint(2, 24)
            reach = L * (k - 1)
            # half within the stack's reach (up to 5 positions short of it), half beyond (1 to 6 past it)
            m = reach - d.rng.randint(0, 5) if d.rng.random() < 0.5 else reach + d.rng.randint(1, 6)
            ok = m <= reach
            out.append((kind, Statement(
                f"A stack of {L} causal convolutional layers of kernel size {k} lets token {m + 1} depend on token 1.",
                ok, f"each layer reaches $k - 1 = {k - 1}$ positions back, {L} layers ${reach}$; "
                f"token {m + 1} is ${m}$ back:", (kind, L, k, m))))
    return out


@family("msq.attention_vs_recurrence", topic="architecture", title="Why attention replaced recurrence, in numbers",
        types=("msq",), tags=("rnn", "path-length", "causal-mask", "msq", "concept"), source=_SRC
        + "; Vaswani et al. 2017, Table 1 (per-layer complexity, sequential operations, maximum path length)")
def attention_vs_recurrence(d: Draw) -> Problem:
    """Statements on sequential steps, path lengths, causal masks and per-layer operations, each
    judged by a rule of Vaswani et al. 2017, Table 1 (or the causal mask) on the statement's numbers.

    Levels (disjoint, ordered): easy, recurrent steps and causal attention; medium, with at least
    one comparison of per-layer operations (n²·d against n·d²); hard, with at least one stack of
    convolutions (L·(k − 1) positions back)."""
    kinds = ["reach_rnn", "causal"] + (["ops"] if d.level >= 1 else []) + (["conv"] if d.level == 2 else [])
    must = {0: None, 1: "ops", 2: "conv"}[d.level]
    k = true_count(d)
    for _ in range(200):
        pool = _recurrence_pool(d, kinds)
        got = computed_msq(d, [s for _, s in pool], k)
        if got is None:
            continue
        items, key = got
        if must is None or any(s.params[0] == must for s in items):
            break
    st = Doc()
    st.p("Self-attention replaced recurrence because it needs no sequential steps and connects every pair of "
         "positions directly. Which of these statements are true? Select all that apply.")
    return _msq_problem(d, st, items, key, "Each statement against its rule (Vaswani et al. 2017, Table 1: per layer, "
                        "self-attention $O(n^2 d)$ operations, $O(1)$ sequential steps, path length $O(1)$; recurrent "
                        "$O(n d^2)$, $O(n)$, $O(n)$; convolutional, kernel $k$: $L$ layers reach $L(k-1)$ back):",
                        given={"option_values": [s.md for s in items]}, tags=("concept",))
