"""Relative positions: T5's relative-position bucket, its bias table's parameters, and an ALiBi bias.

Keys come from ``solver.kernels.positions_relative`` (T5's bucket function, the bias table) and
``solver.kernels.numpy_ref.alibi_slopes`` (the paper's slopes, head counts that are not powers of two
included). Misconceptions: the bucket computed linearly past the exact region, the offset of the
other direction (r's sign), causal read as bidirectional; a bias table in every layer; ALiBi's
slope base (2^(−k) whatever the head count, or 2^(−8k/h) for h not a power of two), its sign.
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import big
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, integer_key, nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc, latex_matrix, num

_SRC = "issue 10 (relative positions: T5, Raffel et al. 2020 §2.1; ALiBi, Press et al. 2022)"


@family("positional.t5_bucket", topic="positional", title="T5's relative-position bucket",
        types=("integer",), tags=("t5", "relative-position", "positional-encoding"), source=_SRC)
def t5_bucket(d: Draw) -> Problem:
    """The bucket of r = key − query: exact below max_exact, logarithmic above (easy: the exact region or a cap).

    Levels (issue 12: disjoint, ordered by the conventions to track): easy, the default
    bidirectional table (n_b = 32, D = 128), a key before the query (no offset) in the logarithmic
    region below D; medium, the same table, a key after the query (the n_b/2 offset to add), up to
    past D (the cap); hard, another table (n_b = 16 or 64, or D = 64 or 256) in either direction,
    or the causal table (all n_b buckets for the past, a different half)."""
    from solver.kernels.positions_relative import t5_bucket as bucket
    from solver.kernels.positions_relative import t5_linear_bucket_mistake

    for _ in range(300):
        bi = d.level < 2 or d.rng.random() < 0.5
        nb, md = 32, 128
        while d.level == 2 and bi and (nb, md) == (32, 128):  # hard, bidirectional: not the default table
            nb, md = d.pick((16, 32, 64)), d.pick((64, 128, 256))
        if d.level == 2 and not bi:
            nb, md = d.pick((16, 32, 64)), d.pick((64, 128, 256))
        half = nb // 2 if bi else nb
        me = half // 2
        # issue 22: a distance drawn uniformly up to max_distance + 20 fell in the top buckets (the cap, 31, was the key
        # of 54 % of medium draws); log-uniform distances spread over the logarithmic buckets as the table does
        dist = round(me * (md / me) ** d.rng.uniform(0, 1.08 if d.level else 0.99))
        r = (-dist, dist, d.pick((-dist, dist)))[d.level] if bi else -dist
        value, tr = bucket(r, bidirectional=bi, num_buckets=nb, max_distance=md, return_trace=True)
        lp = tr["log_position"].value if "log_position" in tr else None
        # too close to a bucket edge, on either side, for hand logs (hard seed 70049 floored 1.9967: three-digit logs
        # could give 2.00 and the next bucket)
        if lp is not None and min(lp - math.floor(lp), math.ceil(lp) - lp) < 0.02:
            continue
        wrongs = [
            Wrong("linear_region", "kept one bucket per distance past the exact region",
                  f"Only distances below {me} get a bucket each; beyond, buckets widen logarithmically up to {md}.",
                  t5_linear_bucket_mistake(r, bidirectional=bi, num_buckets=nb)),
            Wrong("wrong_direction", "put the key in the other direction's half",
                  "r = key − query: a key after the query (r > 0) takes the upper half (offset nb/2); before it, the lower half.",
                  (value + half if r < 0 else value - half) if bi else None),
            Wrong("no_offset", "forgot the nb/2 offset of the second half",
                  "Bidirectional tables give each direction half the buckets: keys after the query are offset by nb/2.",
                  value - half if bi and r > 0 else None),
        ]
        key = integer_key(value)
        mis = keep_distinct(key, [w for w in wrongs if w])
        if len(mis) >= 1:
            break
    st = Doc()
    kind = ("bidirectional (the encoder): half of the buckets for keys at or before the query, half (offset by $n_b/2$) for keys after it"
            if bi else "causal (the decoder): all buckets for keys before the query; keys after it count as distance 0")
    st.p(f"T5 maps the relative position $r = j - i$ (key $j$, query $i$) to one of $n_b = {nb}$ buckets, {kind}. "
         r"Within one direction's $n$ buckets, a distance $\delta < n/2$ gets bucket $\delta$; a larger one gets "
         r"$\min\left(n-1,\ n/2 + \left\lfloor \frac{\ln(\delta/(n/2))}{\ln(D/(n/2))}\,(n - n/2) \right\rfloor\right)$ "
         f"with max distance $D = {md}$.")
    st.p(f"Which bucket does $r = {r}$ fall in?")
    sol = Doc()
    sol.bullets([f"{s.name}: {s.value if not isinstance(s.value, float) else f'{s.value:.4f}'}  ({s.formula})" for s in tr])
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"r": r, "bidirectional": bi, "num_buckets": nb, "max_distance": md, "trace": tr.names()},
                     hints=["Work out the direction first, then whether the distance is below n/2 (exact) or not (logarithmic)."])


@family("positional.t5_bias_params", topic="positional", title="Parameters of T5's relative-position bias",
        types=("integer",), tags=("t5", "relative-position", "parameters"), source=_SRC,
        small_pool="three real T5 sizes (small, base, large); the number of buckets is drawn, and the stacks and "
                   "the storage type vary with the level")
def t5_bias_params(d: Draw) -> Problem:
    """num_buckets × n_heads per stack, shared by that stack's layers: 2·nb·h for encoder + decoder.

    Levels (issue 12: disjoint, ordered by steps): easy, the encoder's table (one product); medium,
    the encoder's and the decoder's (one table per stack, two stacks); hard, the bytes those two
    tables take in fp32 or bf16 (a unit more)."""
    from dataclasses import replace

    from solver.counting.t5 import T5_PRESETS, t5_params
    from solver.units import dtype_bytes

    # issue 22: three presets gave three problems at medium and six at hard, and one remembered number won 40 %;
    # the number of buckets is drawn (T5 uses 32; the count is what varies)
    # (n_b = 2h, 4h or 8h is excluded: the key would be the square of n_b, a number of the statement)
    name = d.pick(("t5-small", "t5-base", "t5-large"))
    h = T5_PRESETS[name].n_heads
    cfg = replace(T5_PRESETS[name], num_buckets=d.pick(tuple(b for b in (16, 24, 32, 40, 48, 64, 96, 128)
                                                             if b not in (2 * h, 4 * h, 8 * h) or b == 32)))
    stacks = 2 if d.level else 1
    dtype = d.pick(("fp32", "bf16")) if d.level == 2 else None
    per = int(dtype_bytes(dtype)) if dtype else 1  # bytes per parameter (hard), else a count of parameters
    r = t5_params(cfg)
    params = r.breakdown["relative_bias"] // (2 // stacks)
    value = params * per
    L = cfg.n_layers
    wrongs = [
        Wrong("per_layer", "gave every layer its own table", "One table per stack, in its first layer, shared by all its layers.",
              value * L),
        Wrong("per_head_matrix", "counted a table of num_buckets × num_buckets per head",
              "Each head learns one scalar per bucket: num_buckets × n_heads in all.",
              cfg.num_buckets ** 2 * cfg.n_heads * stacks * per),
        Wrong("one_stack", "counted one stack only", "The decoder has its own table besides the encoder's.",
              value // 2 if stacks == 2 else None),
        Wrong("params_for_bytes", "gave the parameters, not the bytes", f"Each {dtype} parameter takes {per} bytes.",
              params) if dtype else None,
    ]
    key = integer_key(value, unit="bytes" if dtype else "parameters")
    mis = keep_distinct(key, [w for w in wrongs if w])
    st = Doc()
    label = name if cfg.num_buckets == 32 else f"A variant of {name}"
    st.p(f"{label} has $L = {L}$ layers in each stack, $h = {cfg.n_heads}$ heads and $n_b = {cfg.num_buckets}$ relative-position "
         "buckets; each head adds a learned scalar bias, looked up by bucket, to its attention scores. As in T5, each stack "
         "has one bias table (in its first layer's self-attention) that all the layers of that stack share.")
    if dtype:
        st.p(f"The biases are stored in {dtype} ({per} bytes per parameter). How many bytes do the relative-position biases "
             "of the encoder and the decoder together take?")
    else:
        st.p("How many parameters do the relative-position biases of " + ("the encoder and the decoder together have?"
                                                                          if stacks == 2 else "the encoder have?"))
    sol = Doc()
    sol.p(f"Each stack holds one table of $n_b \\times h = {cfg.num_buckets} \\times {cfg.n_heads} = {big(cfg.num_buckets * cfg.n_heads)}$ "
          "scalars in its first layer's self-attention; every layer of the stack reuses it.")
    if stacks == 2:
        sol.p(f"Two stacks: $2 \\times {big(cfg.num_buckets * cfg.n_heads)} = {big(params)}$ parameters.")
    if dtype:
        sol.p(f"In {dtype}: ${big(params)} \\times {per} = {big(value)}$ bytes.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"preset": name, "stacks": stacks, "dtype": dtype, "bytes_per_param": per if dtype else None,
                            "num_buckets": cfg.num_buckets})


def _pow2_below(h: int) -> int:
    """The largest power of two not above ``h`` (ALiBi's rule for head counts that are not powers of two)."""
    return 2 ** int(math.log2(h))


@family("positional.alibi_bias", topic="positional", title="ALiBi: a head's slope and bias",
        types=("nat",), tags=("alibi", "relative-position", "positional-encoding"), source=_SRC,
        told_apart=("base_ignores_heads",))  # 8 heads made the slopes' base the same whether or not it was scaled
def alibi_bias(d: Draw) -> Problem:
    """Bias −m_h·(i − j) for head h (1-based), query i, key j ≤ i; hard: h not a power of two.

    Levels (issue 12: disjoint, ordered by the slope to work out): easy, H = 8 heads (m_h = 2^(−h),
    a power of two); medium, H = 16 or 32 (fractional exponents, 2^(−h/2) or 2^(−h/4)); hard, H
    not a power of two (6, 12, 24: the paper's interleaving rule, one step more)."""
    from solver.kernels import numpy_ref

    decimals = 4
    for _ in range(300):
        H = d.pick(((8,), (16, 32), (6, 12, 24))[d.level])
        head = d.rng.randint(1, H)
        i = d.rng.randint(1, 12)
        j = d.rng.randint(0, i - 1)
        slopes = numpy_ref.alibi_slopes(H)
        value = float(-slopes[head - 1] * (i - j))
        if not safe_for_rounding(value, decimals, 0.1) or abs(value) < 1e-3:
            continue
        wrongs = [
            Wrong("positive_sign", "added the distance instead of subtracting it",
                  "ALiBi penalises distant keys: the bias is −m·(i − j) ≤ 0.", -value),
            Wrong("base_ignores_heads", "used m_h = 2^(−h) whatever the number of heads",
                  (f"The slopes depend on H: with H = {H} heads, m_h = 2^(−8h/{H}), a ratio of 2^(−8/{H})."
                   if H & (H - 1) == 0 else
                   f"The slopes depend on H: H = {H} is not a power of two, so the first {_pow2_below(H)} heads take "
                   f"2^(−8k/{_pow2_below(H)}) and the other {H - _pow2_below(H)} take every other slope of "
                   f"{2 * _pow2_below(H)} heads, 2^(−8k/{2 * _pow2_below(H)}) for k = 1, 3, 5, …; 2^(−h) is the rule for 8 heads only."),
                  -(2.0 ** -head) * (i - j) if H != 8 else None),
            Wrong("naive_non_power", "applied 2^(−8h/H) to a head count that is not a power of two",
                  "For H not a power of two the paper takes the slopes of the closest lower power of two, then every "
                  "other slope of the next power.", -(2.0 ** (-8 * head / H)) * (i - j) if H & (H - 1) else None),
            Wrong("natural_base", "used e^(−8h/H)", "The slopes are powers of 2, not of e.",
                  -math.exp(-8 * head / H) * (i - j)),
        ]
        key = nat_key(value, decimals)
        mis = keep_distinct(key, [w for w in wrongs if w])
        if len(mis) >= 2:
            break
    st = Doc()
    rule = ""
    if H & (H - 1):  # issue 21: state the rule where the problem needs it, not only name it
        p2 = _pow2_below(H)
        rule = (f" For $H$ not a power of two the paper's rule is: with $p = {p2}$ the largest power of two below $H$, heads "
                f"$h = 1, \\dots, {p2}$ take the slopes $2^{{-8h/{p2}}}$ of {p2} heads, and the other {H - p2} heads take every "
                f"other slope of $2p = {2 * p2}$ heads, $2^{{-8k/{2 * p2}}}$ for $k = 1, 3, 5, \\dots$ (head ${p2 + 1}$ takes "
                f"$k = 1$, head ${p2 + 2}$ takes $k = 3$, …).")
    st.p(f"ALiBi adds $-m_h\\,(i - j)$ to the attention score of query $i$ and key $j \\le i$ in head $h$. A model has "
         f"$H = {H}$ heads; the slopes follow the ALiBi paper: for $H$ a power of two, $m_h = 2^{{-8h/H}}$, $h = 1, \\dots, H$."
         + rule)
    st.p(f"What bias does head $h = {head}$ add for query position $i = {i}$ and key position $j = {j}$? "
         f"Round off to {decimals} decimal places.")
    sol = Doc()
    if H & (H - 1) == 0:
        sol.p(f"$m_{{{head}}} = 2^{{-8 \\cdot {head}/{H}}} = {slopes[head - 1]:.6g}$.")
    else:
        p = 2 ** int(math.log2(H))
        sol.p(f"$H = {H}$ is not a power of two: the first {p} slopes are those of {p} heads ($2^{{-8k/{p}}}$), the other "
              f"{H - p} are the 1st, 3rd, 5th, … slopes of {2 * p} heads ($2^{{-8k/{2 * p}}}$, $k$ odd).")
        sol.p("Slopes: " + ", ".join(f"{s:.6g}" for s in slopes) + f"; head {head} has $m = {slopes[head - 1]:.6g}$.")
    sol.p(f"Bias $= -{slopes[head - 1]:.6g} \\times ({i} - {j}) = {value:.6f}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"H": H, "head": head, "i": i, "j": j},
                     hints=["The slopes form a geometric sequence with ratio 2^(−8/H) for H a power of two."])


@family("positional.rope_relative_score", topic="positional", title="RoPE inside attention: the score depends on m − n",
        types=("nat",), tags=("rope", "rotary", "relative-position"), source=_SRC,
        told_apart=("reversed_offset",))
def rope_relative_score(d: Draw) -> Problem:
    """q·k after rotating q to position m and k to n: Σ (ac + bd)cos((m − n)θ) − (bc − ad) sin((m − n)θ).

    Levels (issue 12: disjoint, ordered): easy, d = 2 and the key at position n = 0 (one rotation);
    medium, d = 2 and both rotated (n ≥ 1: the offset m − n to find); hard, d = 4 (two pairs, two
    frequencies)."""
    import numpy as np

    from solver.kernels import numpy_ref
    from solver.kernels.positions_relative import rope_score

    decimals = 3
    dim = 2 if d.level < 2 else 4
    for _ in range(300):
        q = [d.pick((1, 2, -1, 3, 0, -2)) for _ in range(dim)]
        k = [d.pick((1, 2, -1, 3, 0, -2)) for _ in range(dim)]
        if not any(q) or not any(k):
            continue
        m = d.rng.randint(2, 12 if d.level else 6)
        n = 0 if d.level == 0 else d.rng.randint(1, m - 1)
        value, tr = rope_score(q, k, m, n, return_trace=True)
        if not safe_for_rounding(value, decimals, 0.15) or abs(value) < 0.05:
            continue
        qa, ka = np.array([q], dtype=float), np.array([k], dtype=float)
        wrongs = [
            Wrong("rotated_q_only", "rotated the query only", "RoPE rotates both the query (by mθ) and the key (by nθ).",
                  float(numpy_ref.rope(qa, [m])[0] @ ka[0])),
            Wrong("sum_of_positions", "rotated by (m + n)θ", "The two rotations partly cancel: only m − n is left.",
                  rope_score(q, k, m + n, 0)),
            Wrong("reversed_offset", "rotated by (n − m)θ", "The query's angle minus the key's: (m − n)θ.", rope_score(q, k, n, m)),
            Wrong("no_rotation", "took the plain dot product", "The rotations change the score unless m = n.",
                  float(np.dot(q, k))),
        ]
        key = nat_key(value, decimals)
        mis = keep_distinct(key, [w for w in wrongs if w])
        if len(mis) >= 2:
            break
    st = Doc()
    pairs = r"the pair $(x_0, x_1)$" if dim == 2 else r"each pair $(x_{2i}, x_{2i+1})$"
    st.p(f"RoPE rotates {pairs} of a query or key at position $p$ by $p\\,\\theta_i$, $\\theta_i = 10000^{{-2i/d}}$ "
         r"(radians): $(a, b) \to (a\cos\phi - b\sin\phi,\ a\sin\phi + b\cos\phi)$.")
    st.p(f"With $d = {dim}$, the query $q = {latex_matrix(q)}$ sits at position $m = {m}$ and the key $k = {latex_matrix(k)}$ at "
         f"position $n = {n}$. What is the attention score $\\mathrm{{RoPE}}(q, m) \\cdot \\mathrm{{RoPE}}(k, n)$ (no scaling)? "
         f"Round off to {decimals} decimal places.")
    sol = Doc()
    sol.p(r"For each pair, with $q = (a, b)$, $k = (c, e)$ and $\phi = (m - n)\theta_i$: the score is "
          r"$(ac + be)\cos\phi - (bc - ae)\sin\phi$: only $m - n$ matters.")
    phi, dot, cross = tr["phi"].value, tr["dot_pairs"].value, tr["cross_pairs"].value
    sol.bullets([f"pair {i}: $\\phi = {m - n} \\times {num(10000 ** (-2 * i / dim), 4)} = {num(phi[i], 4)}$, "
                 f"$ac + be = {num(dot[i], 4)}$, $bc - ae = {num(cross[i], 4)}$: "
                 f"${num(dot[i], 4)} \\cos {num(phi[i], 4)} - ({num(cross[i], 4)}) \\sin {num(phi[i], 4)} = "
                 f"{num(dot[i] * math.cos(phi[i]) - cross[i] * math.sin(phi[i]), 6)}$" for i in range(dim // 2)])
    sol.p(f"Score $= {num(value, 6)}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"q": q, "k": k, "m": m, "n": n, "trace": tr.names()},
                     hints=["Rotate both, or use the relative form: the score only sees m − n."])
