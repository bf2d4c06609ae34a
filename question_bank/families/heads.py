"""Head bookkeeping (dₖ = d_model/h, per-head shapes, score entries) and attention shapes.

Facts: each of the h heads projects to dₖ = d_model/h (``solver.counting.config.ModelConfig.head_dim``);
one head's W_Q is d_model × dₖ; a layer holds h score matrices of n × n entries (self-attention
over n tokens). For Q (n × dₖ), K (m × dₖ), V (m × d_v): QKᵀ and the weights are n × m,
the output n × d_v.
"""

from __future__ import annotations

from question_bank.family import Draw, Wrong, family, keep_distinct, numeric_choices
from question_bank.grading import answer_text, integer_key
from question_bank.problem import Problem
from question_bank.render import Doc, latex_to_text


@family(
    "attention.heads",
    topic="attention",
    title="Heads: dₖ = d_model / h and per-head sizes",
    types=("integer",),
    tags=("multi-head", "d_k", "bookkeeping"),
    source="004_83489721195aedaa.txt GATE Q1",
    told_apart=("n_times_dk_heads", "n_times_d"),  # n = dₖ gave the key to a student who mixed them up
)
def heads(d: Draw) -> Problem:
    """dₖ from d_model and h; one head's W_Q entries; the score entries of a layer."""
    from solver.counting.config import ModelConfig

    while True:
        # Levels (issue 12: disjoint, ordered): easy, d_k = d_model/h; medium, one head's W_Q entries or the
        # score entries of a layer (one more product); hard, the same for d_model of 2048 and above. Issue 22:
        # hard no longer asks d_k (one division of two printed numbers), and the sizes vary more.
        d_model = d.pick((192, 256, 320, 384, 448, 512, 576, 640, 768, 896, 1024, 1152, 1280, 1536, 1792) if d.level < 2
                         else (2048, 2560, 3072, 4096, 5120, 6144, 8192))
        h = d.pick((4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40))
        if d_model % h == 0 and d_model // h >= 16:
            break
    cfg = ModelConfig(d_model=d_model, n_heads=h, d_ff=4 * d_model)
    d_k = cfg.head_dim
    ask = (("d_k",), ("wq_head", "score_entries"), ("wq_head", "score_entries"))[d.level]
    ask = d.pick(ask)
    n = d.pick((128, 256, 512, 1024))
    st = Doc()
    sol = Doc()
    sol.p(f"Each head works in $d_k = d_{{model}}/h = {d_model}/{h} = {d_k}$ dimensions.")
    if ask == "d_k":
        value = d_k
        st.p(f"A Transformer layer has $d_{{model}} = {d_model}$ and $h = {h}$ attention heads. What is the dimension $d_k$ of the "
             "queries and keys of each head?")
        wrongs = [Wrong("used_d_model", "used d_model where dₖ belongs", "That is d_model; each head gets d_model/h.", d_model),
                  Wrong("multiplied_by_h", "multiplied by h", "The heads split d_model: divide by h.", d_model * h),
                  Wrong("divided_by_h_squared", "divided by h twice", "Divide d_model by h once.", d_model // (h * h) if d_model % (h * h) == 0 else None)]
    elif ask == "wq_head":
        value = d_model * d_k
        st.p(f"A multi-head attention layer has $d_{{model}} = {d_model}$ and $h = {h}$ heads. How many weights does the query "
             "projection matrix $W_i^Q$ of **one** head have (no bias)?")
        sol.p(f"$W_i^Q$ maps $d_{{model}} \\to d_k$: ${d_model} \\times {d_k} = {value:,}$ entries.")
        wrongs = [Wrong("used_d_model", "used d_model where dₖ belongs", "That is d_model × d_model, the W_Q of all heads together.", d_model * d_model),
                  Wrong("d_k_squared", "used dₖ × dₖ", "The projection maps the d_model-dimensional input to dₖ.", d_k * d_k),
                  Wrong("all_qkv", "counted Q, K and V together", "The question asks for the query projection only.", 3 * d_model * d_k),
                  # a bias vector of d_k entries added to the weights the statement asks for (it says: no bias)
                  Wrong("counted_bias", "counted a bias", "The question asks for the weights of W_i^Q, which has no bias: "
                        "d_model × dₖ entries only.", d_model * d_k + d_k)]
    else:
        value = h * n * n
        st.p(f"Self-attention over $n = {n}$ tokens with $h = {h}$ heads and $d_{{model}} = {d_model}$: how many attention "
             "weights (entries of the score matrices) does one layer compute for one sequence?")
        sol.p(f"Each head has its own $n \\times n$ matrix: $h \\cdot n^2 = {h} \\times {n}^2 = {value:,}$.")
        wrongs = [Wrong("forgot_heads", "forgot the heads", "Each of the h heads has its own n × n matrix.", n * n),
                  Wrong("n_times_d", "counted n × d_model", "The scores are n × n per head, independent of d_model.", n * d_model),
                  Wrong("n_times_dk_heads", "counted n × dₖ per head", "Q is n × dₖ, but the score matrix is n × n.", h * n * d_k)]
    key = integer_key(value)
    mis = keep_distinct(key, wrongs)
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"d_model": d_model, "n_heads": h, "n": n, "ask": ask})


@family(
    "attention.shapes",
    topic="attention",
    title="Shapes in attention",
    types=("mcq",),
    tags=("shapes", "cross-attention"),
    difficulties=("easy", "medium"),
    source="000_77b679b0197eab2d.txt, 001_8ec5306c4a732c7b.txt (shapes)",
)
def shapes(d: Draw) -> Problem:
    """The shape of QKᵀ, of the weights or of the output, for Q n×dₖ, K m×dₖ, V m×d_v.

    Levels (disjoint, issue 39: easy seed 434 and medium seed 401 were once the same problem): easy, the
    shape of QKᵀ or of the attention weights (one product, n × m); medium, the shape of the output (two
    products, n × d_v). All four sizes from 2 to 48, so a shape rarely repeats."""
    while True:
        # all four from one range: a dimension's size says nothing of which it is
        n, m, d_k, d_v = (d.pick(range(2, 49)) for _ in range(4))
        if len({n, m, d_k, d_v}) == 4:
            break
    ask = d.pick(("weights", "scores")) if d.level == 0 else "output"
    right = (n, m) if ask in ("scores", "weights") else (n, d_v)
    cands = [
        Wrong("transposed", "transposed the shape", "Rows belong to the queries: the first dimension is n.", (right[1], right[0])),
        Wrong("self_attention_assumed", "assumed n × n", "With cross-attention the keys can be a different sequence (m of them).", (n, n)),
        Wrong("used_dk", "used dₖ", "dₖ is contracted away in QKᵀ." if ask != "output" else "The output has d_v columns, one per value dimension.",
              (n, d_k)),
        Wrong("used_m_dv", "took V's shape", "The output has one row per query.", (m, d_v)),
        Wrong("n_dv_for_scores", "gave the output's shape", "The weights are n × m; n × d_v is the output.", (n, d_v)),
    ]
    # The options are the key, its transpose, one mistake sharing one dimension with the key, and
    # that mistake's transpose: every number then appears equally often among the options, so
    # "pick the option whose numbers recur" (issue 12: it found the key in half the draws) ties.
    shares_one = [w for w in cands if w.value != right and w.value[0] != w.value[1]
                  and len(set(w.value) & set(right)) == 1 and w.id != "transposed"]
    mistake = d.pick(shares_one)
    wrongs = [cands[0], mistake]

    def fmt(s: tuple[int, int]) -> str:
        return f"${s[0]} \\times {s[1]}$"

    options, key, mis, values = numeric_choices(
        d, right, wrongs, fmt=fmt, tol_key=None, fillers=lambda r: [(mistake.value[1], mistake.value[0])],
    )
    what = {"scores": r"$QK^\top$", "weights": r"the attention weights $\mathrm{softmax}(QK^\top/\sqrt{d_k})$",
            "output": r"the output $\mathrm{softmax}(QK^\top/\sqrt{d_k})V$"}[ask]
    st = Doc().p(f"In cross-attention, $Q$ is ${n} \\times {d_k}$, $K$ is ${m} \\times {d_k}$ and $V$ is ${m} \\times {d_v}$. "
                 f"What is the shape of {what}?")
    sol = Doc()
    sol.p(f"$QK^\\top$: $({n} \\times {d_k})({d_k} \\times {m}) = {n} \\times {m}$, one row per query, one column per key; "
          f"the softmax keeps the shape; multiplying by $V$: $({n} \\times {m})({m} \\times {d_v}) = {n} \\times {d_v}$.")
    sol.p("**Answer:** " + answer_text(key, [latex_to_text(o) for o in options]))
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, misconceptions=mis,
                     given={"n": n, "m": m, "d_k": d_k, "d_v": d_v, "ask": ask, "option_values": [list(v) for v in values]})
