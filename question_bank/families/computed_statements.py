"""MSQs of computed statements (issue 26): "which of these … ?", each option judged by the solver.

Every option is a statement generated from parameters (a model configuration, a mask, a matmul's
shape) and its truth is a computation: the KV cache size (``solver.counting.memory``), the KEEP
mask (``solver.kernels.masks``), the roofline verdict (``solver.systems.roofline``), a preset's
heads, head size, cache per token and parameters (``solver.counting``). The worked
solution shows that computation for every option. :func:`computed_msq` draws how many options are
true first (1, 2 or 3 of 4, uniformly, as GATE's MSQs have at least one correct option), then
that many true statements and the rest false ones from a pool, so "select all" never wins and a
guesser who knows the usual number of true options scores at chance.
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
    """How many of ``n`` options are true: 1 to ``n − 1``, uniformly (drawn before the options)."""
    return d.rng.randint(1, n - 1)


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


@family("msq.kv_cache_below", topic="counting", title="Which configurations keep the KV cache under a budget?",
        types=("msq",), tags=("kv-cache", "memory", "msq"), marks=2, source=_SRC)
def kv_cache_below(d: Draw) -> Problem:
    """KV cache = 2 (K and V) × L × B × n × n_kv × d_h × bytes, each option's against the budget.

    Levels (disjoint, ordered): easy, multi-head attention (the K/V heads are the heads), fp16, one
    sequence; medium, grouped-query attention (n_kv K/V heads besides the query heads: the query
    heads are the trap), bf16, one sequence; hard, grouped-query attention with each option's own
    dtype (fp32, bf16, int8) and a batch of sequences. No option lies within 20 % of the budget."""
    from solver.counting.memory import kv_cache_bytes

    k = true_count(d)
    for _ in range(100):
        n = d.pick((8192, 16384, 32768) if d.level < 2 else (4096, 8192, 16384))
        budget = d.pick((1, 2, 4) if d.level < 2 else (4, 8, 16))
        B = 1 if d.level < 2 else d.pick((2, 4, 8))
        limit = budget * 2**30
        pool: list[Statement] = []
        for _ in range(40):
            L = d.pick((12, 16, 24, 32, 40, 48))
            dh = d.pick((64, 80, 96))  # sizes of one width, so an option's length says nothing of its size
            h = d.pick((16, 32, 40, 64))
            kv = h if d.level == 0 else d.pick((1, 2, 4, 8))
            dt = "fp16" if d.level == 0 else "bf16" if d.level == 1 else d.pick(("fp32", "bf16", "int8"))
            size = kv_cache_bytes(L, B, n, kv, dh, dt)
            if 0.8 < size / limit < 1.25:
                continue
            if d.level == 0:
                md = f"$L = {L}$ layers, ${h}$ heads of size ${dh}$"
            elif d.level == 1:
                md = f"$L = {L}$ layers, ${h}$ query heads and ${kv}$ K/V heads of size ${dh}$"
            else:
                md = f"$L = {L}$ layers, ${h}$ query heads and ${kv}$ K/V heads of size ${dh}$, cache in {dt}"
            work = (f"$2 \\times {L} \\times {B} \\times {n} \\times {kv} \\times {dh} \\times {_DTYPES[dt]} = "
                    f"{size:,}$ bytes $= {_gib(size / 2**30)}$ GiB, {'below' if size < limit else 'above'} {budget} GiB:"
                    ).replace(",", "{,}")
            pool.append(Statement(md, size < limit, work, (L, h, kv, dh, dt)))
        got = computed_msq(d, pool, k)
        if got is not None:
            break
    assert got is not None, "no draw gave configurations on both sides of the budget"
    items, key = got
    st = Doc()
    if d.level == 0:
        st.p(f"A decoder-only model uses multi-head attention and caches K and V in fp16 (2 bytes). It generates one "
             f"sequence of $n = {n}$ tokens. Which of these configurations keep the KV cache below {budget} GiB "
             f"($2^{{30}}$ bytes)? Select all that apply.")
    elif d.level == 1:
        st.p(f"A decoder-only model uses grouped-query attention and caches K and V in bf16 (2 bytes). It generates one "
             f"sequence of $n = {n}$ tokens. Which of these configurations keep the KV cache below {budget} GiB "
             f"($2^{{30}}$ bytes)? Select all that apply.")
    else:
        st.p(f"A decoder-only model uses grouped-query attention and serves a batch of $B = {B}$ sequences of "
             f"$n = {n}$ tokens each (fp32: 4 bytes, bf16: 2 bytes, int8: 1 byte per element). Which of these "
             f"configurations keep the KV cache below {budget} GiB ($2^{{30}}$ bytes)? Select all that apply.")
    notes = []
    if d.level >= 1:
        notes.append("Only the K/V heads are cached: the query heads do not enter the KV cache.")
    if d.level == 2:
        notes.append(f"Every option's bytes per element are its own dtype's; all {B} sequences are cached.")
    return _msq_problem(d, st, items, key, "KV cache $= 2 \\times L \\times B \\times n \\times n_{kv} \\times d_h "
                        "\\times$ bytes (the 2: both K and V):", notes=notes,
                        given={"n": n, "batch": B, "budget_gib": budget, "option_values": [s.md for s in items]})


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


@family("msq.mask_attend", topic="attention", title="Which masks let this query attend to this key?",
        types=("msq",), tags=("masks", "causal-mask", "msq"), marks=2, source=_SRC)
def mask_attend(d: Draw) -> Problem:
    """Each option a mask; true when its KEEP matrix (solver.kernels.masks) keeps entry (i, j).

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
        n = d.pick((6, 7, 8, 9, 10))
        i = d.rng.randint(1, n)
        j = d.rng.randint(1, n)
        if i == j:
            continue
        pool = []
        for kind in kinds:
            for a in (range(2, n) if kind not in ("causal", "none") else (0,)):
                text, rule = _mask_text(kind, a)
                ok = _keep(kind, n, a, i, j)
                pool.append((kind, Statement(text, ok, f"{rule}; $i = {i}$, $j = {j}$: {'kept' if ok else 'blocked'}.",
                                             (kind, a))))
        got = computed_msq(d, [s for _, s in pool], k)
        if got is None:
            continue
        items, key = got
        kinds_in = {k for k, s in pool if s in items}
        if must is None or kinds_in & must:
            break
    st = Doc()
    st.p(f"A sequence has $n = {n}$ tokens, numbered 1 to {n}. Token {i} is the query and token {j} the key. "
         f"Under which of these attention masks does token {i} attend to token {j} (receive a non-zero weight on it)? "
         "Select all that apply.")
    return _msq_problem(d, st, items, key, f"Query $i = {i}$, key $j = {j}$ ({'a later' if j > i else 'an earlier'} "
                        "position). Each mask's rule, then the entry:",
                        given={"n": n, "query": i, "key": j, "option_values": [s.md for s in items]})


# --------------------------------------------------------------------------------------------
# which matmuls are compute-bound


@family("msq.matmul_compute_bound", topic="hardware", title="Which matmuls are compute-bound on this chip?",
        types=("msq",), tags=("roofline", "arithmetic-intensity", "msq"), marks=2, source=_SRC)
def matmul_compute_bound(d: Draw) -> Problem:
    """I = 2BDF / (2BD + 2DF + 2BF) FLOP/byte (bf16, each operand read once, Y written once), each
    option's against I* = dense peak / HBM bandwidth.

    Levels (disjoint, ordered): easy, a TPU whose dense peak is stated as such, square weights
    (D = F); medium, an NVIDIA GPU (the datasheet's with-sparsity figure to halve first), square
    weights; hard, an NVIDIA GPU with D ≠ F. No option within 20 % of I*."""
    from question_bank.families.hardware import CHIP_NAMES, _bw_text, peak_text, resolved_chip
    from solver.systems.roofline import matmul

    hw = d.pick(("tpu-v5e", "tpu-v5p") if d.level == 0 else ("a100-80gb", "h100-sxm", "h200"))
    chip = resolved_chip(hw)
    sizes = (256, 512, 1024, 2048, 4096, 8192, 16384)
    k = true_count(d)
    for _ in range(100):
        pool: list[Statement] = []
        crit = 0.0
        for _ in range(40):
            B = d.pick((16, 64, 128, 256, 512, 1024, 2048, 4096))
            D = d.pick(sizes)
            F = D if d.level < 2 else d.pick(tuple(x for x in sizes if x != D))
            r = matmul(B, D, F, dtype="bf16", chip=chip)
            I, crit = float(r.breakdown["intensity"]), float(r.breakdown["critical_intensity"])
            if abs(I - crit) / crit < 0.2:
                continue
            md = f"$B = {B}$, $D = {D}$, $F = {F}$"
            work = (f"$I = \\frac{{2 \\cdot {B} \\cdot {D} \\cdot {F}}}{{2({B} \\cdot {D} + {D} \\cdot {F} + "
                    f"{B} \\cdot {F})}} = {I:.1f}$, {'above' if I > crit else 'below'} $I^* = {crit:.1f}$:")
            pool.append(Statement(md, I > crit, work, (B, D, F)))
        got = computed_msq(d, pool, k)
        if got is not None:
            break
    assert got is not None, "no draw gave matmuls on both sides of I*"
    items, key = got
    st = Doc()
    st.p(f"On the {CHIP_NAMES[hw]} ({peak_text(hw)}; {_bw_text(hw)}), a bf16 matmul $Y = XW$ multiplies activations "
         "$X$ of shape $B \\times D$ by weights $W$ of shape $D \\times F$. Each operand is read from HBM once and $Y$ "
         "written once; count 2 FLOPs per multiply-add and 2 bytes per element. Which of these matmuls are "
         "compute-bound? Select all that apply.")
    notes = [f"$I^* = $ dense peak / bandwidth $= {crit:.1f}$ FLOP/byte"
             + (" (the dense peak is half the datasheet's with-sparsity figure)." if d.level >= 1 else ".")]
    return _msq_problem(d, st, items, key, "$I = 2BDF / (2BD + 2DF + 2BF)$ FLOP per byte; compute-bound when "
                        "$I > I^*$.", notes=notes,
                        given={"hw": hw, "critical_intensity": crit, "option_values": [s.md for s in items]})


# --------------------------------------------------------------------------------------------
# statements about one model of the zoo

#: Decoder presets of the zoo whose cache is the plain 2·L·n_kv·d_h per token (no window, no latent).
_MODELS = ("gpt2", "gpt2-medium", "gpt2-large", "gpt3-xl", "gpt3-6.7b", "gpt3-175b", "llama2-7b", "llama2-13b",
           "llama2-70b", "llama3-8b", "mixtral-8x7b", "mixtral-8x22b")


@family("msq.model_statements", topic="counting", title="Which statements about this model are true?",
        types=("msq",), tags=("zoo", "kv-cache", "parameters", "msq"), marks=2, source=_SRC)
def model_statements(d: Draw) -> Problem:
    """Four statements about one preset (its sharing of K/V heads, its head size, its KV cache per
    token, its parameters), each true or false as drawn, a false one being what a typical mistake
    gives: the query heads taken for the K/V heads, d_model / n_kv for the head size, K or V
    forgotten, the parameters with every expert (or without the embeddings).

    Levels (disjoint, ordered): easy, multi-head models (GPT-2, GPT-3, Llama 2 7B/13B), the cache in
    fp16; medium, grouped-query models (Llama 2 70B, Llama 3 8B), bf16; hard, mixtures of experts
    (Mixtral), where the parameters are the total and the cache in fp8 (1 byte)."""
    from solver.counting.params import param_breakdown
    from solver.counting.presets import get_preset

    names = (_MODELS[:8], _MODELS[8:10], _MODELS[10:])[d.level]
    name = d.pick(names)
    preset = get_preset(name)
    c = preset.config
    dt, nb = (("fp16", 2), ("bf16", 2), ("fp8", 1))[d.level]
    h, kv, dh, L, dm = c.n_heads, c.kv_heads, c.head_dim, c.n_layers, c.d_model
    group = h // kv
    cache = 2 * L * kv * dh * nb
    pb = param_breakdown(c)
    total = pb.total
    k = true_count(d)
    truth = [True] * k + [False] * (4 - k)
    d.rng.shuffle(truth)

    def kib(x: int) -> str:
        return f"{x / 1024:g} KiB"

    def params(x: float) -> str:
        return f"{x / 1e9:.3g} billion"

    kinds = []
    # 1. sharing of K/V heads (mistake: every query head has its own K/V head, or the reverse)
    wrong_group = 1 if group > 1 else 4
    g = group if truth[0] else wrong_group
    kinds.append((f"Each K/V head is shared by {g} query head{'s' if g > 1 else ''}.",
                  f"$n_{{heads}} / n_{{kv}} = {h} / {kv} = {group}$ query head{'s' if group > 1 else ''} per K/V head:", (1, g)))
    # 2. head size (mistake: d_model / n_kv, or d_model / n_heads when d_head is set otherwise)
    wrong_dh = dm // kv if kv != h else 2 * dh
    x = dh if truth[1] else wrong_dh
    kinds.append((f"Its attention heads have size $d_h = {x}$.", f"$d_h = {dh}$ (d_model = {dm}, {h} heads):", (2, x)))
    # 3. KV cache per token (mistake: the query heads cached, or K only)
    wrong_cache = 2 * L * h * dh * nb if kv != h else L * kv * dh * nb
    y = cache if truth[2] else wrong_cache
    kinds.append((f"Its KV cache in {dt} takes {kib(y)} per token.",
                  f"$2 \\times {L} \\times {kv} \\times {dh} \\times {nb} = {cache:,}$ bytes $= {kib(cache)}$ per token:"
                  .replace(",", "{,}"), (3, y)))
    # 4. parameters (mistake: without the embeddings for a dense model; only the active experts for MoE)
    emb = c.vocab_size * dm * (1 if c.tied_embeddings else 2)
    wrong_total = pb.active if c.n_experts > 1 else 12 * L * dm * dm
    if abs(wrong_total - total) / total < 0.15:
        wrong_total = total - emb if abs(emb) / total >= 0.15 else 2 * total
    z = total if truth[3] else wrong_total
    kinds.append((f"It has {params(z)} parameters (to three significant figures).",
                  f"exactly {total:,} parameters $\\approx$ {params(total)}:".replace(",", "{,}"), (4, z)))
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
            n = d.pick((16, 32, 64, 128))
            m = d.rng.randint(3, n)
            s = d.pick((m - 1, 1, m))
            ok = s == m - 1
            out.append((kind, Statement(
                f"In a recurrent layer, token 1 first influences the state at token {m} after {s} sequential step{'s' if s > 1 else ''}.",
                ok, f"the state at token {m} depends on token 1 through {m - 1} steps (one per token); stated {s}:",
                (kind, m, s))))
        elif kind == "causal":
            n = d.pick((8, 16, 32))
            i, j = d.rng.randint(1, n), d.rng.randint(1, n)
            if i == j:
                continue
            out.append((kind, Statement(
                f"In causal self-attention over {n} tokens, token {i} attends to token {j} in one step.",
                j <= i, f"a causal mask keeps $j \\le i$: $j = {j}$, $i = {i}$:", (kind, i, j))))
        elif kind == "ops":
            n = d.pick((256, 512, 1024, 4096, 8192, 32768))
            dm = d.pick((512, 768, 1024, 2048, 4096))
            if dm / 4 < n < 4 * dm:  # near each other a constant factor (QKᵀ and AV, W_h and W_x) could flip it
                continue
            out.append((kind, Statement(
                f"For $n = {n}$ tokens of width $d = {dm}$, a self-attention layer does fewer operations than a "
                "recurrent layer.", n < dm,
                f"self-attention $n^2 d = {n * n * dm:,}$, recurrent $n d^2 = {n * dm * dm:,}$ (over 4× apart: no "
                "constant factor of a convention changes the order):".replace(",", "{,}"),
                (kind, n, dm))))
        elif kind == "conv":
            k = d.pick((3, 5))
            L = d.rng.randint(2, 6)
            m = d.rng.randint(4, 30)
            ok = m <= L * (k - 1)
            out.append((kind, Statement(
                f"A stack of {L} causal convolutional layers of kernel size {k} lets token {m + 1} depend on token 1.",
                ok, f"each layer reaches $k - 1 = {k - 1}$ positions back, {L} layers ${L * (k - 1)}$; "
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
