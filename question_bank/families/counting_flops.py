"""FLOPs: QKᵀ and AV, a whole forward (or training) pass exactly, the 6N rule for training
compute, and the cost of attention against an RNN.

Conventions (stated in every statement): 2 FLOPs per multiply-add, only matrix multiplications
count, the full n × n score matrix is computed (no saving from a causal mask). Keys come from
``solver.counting.flops.matmul_flops`` (the exact count of the reference model; its terms
``attn.scores``/``attn.context`` are QKᵀ and AV), ``solver.systems.roofline.matmul_flops``
(2·B·D·F for one X[B,D] @ W[D,F]) and ``solver.systems.training.train`` (C = 6·N·D). Misconceptions
are the same calls with the mistake applied: ``convention="macs"``, ``mode="forward"`` in
place of ``"train"``, one head in place of h, one sequence in place of the batch, the textbook 2N rule in
place of the exact count; and for QKᵀ/AV a dot product of length d_k counted as 2·d_k − 1 FLOPs (d_k
multiplications, d_k − 1 additions) against the stated 2 per multiply-add.

Attention versus RNN: QKᵀ and AV cost 2·n²·d each (4n²d); a recurrent layer
hₜ = tanh(W_hh hₜ₋₁ + W_xh xₜ) with d × d matrices costs 2·d² + 2·d² per step (4nd²). The
ratio is n/d: attention is cheaper exactly when n < d.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Any

from question_bank.families.counting_common import big, sci, tokens_text
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, integer_key, nat_key, safe_for_rounding
from question_bank.problem import ChoiceKey, Misconception, Problem
from question_bank.render import Doc

_SRC = "004_83489721195aedaa.txt §15.8 and exercise (FLOPs of QKᵀ and A·V vs an RNN); issue 7"
_CONV = ("Count 2 FLOPs per multiply-add, only matrix multiplications, and the full $n \\times n$ score matrix "
         "(no saving from masking).")


def _attn_cfg(d_model: int, n_heads: int, d_head: int | None = None):
    from solver.counting.config import ModelConfig

    return ModelConfig(arch="encoder", d_model=d_model, n_layers=1, n_heads=n_heads, d_head=d_head, d_ff=d_model,
                       vocab_size=1, pos="none", lm_head=False, final_norm=False)


def _scores(cfg: Any, batch: int, n: int, convention: str = "flops") -> dict[str, int]:
    """QKᵀ and AV of one layer from the counting engine: {"qk", "av", "both"}."""
    from solver.counting.flops import matmul_flops

    rep = matmul_flops(cfg, batch, n, "forward", convention)
    t = {x.name: rep.value(x.forward) for x in rep.terms}
    return {"qk": t["attn.scores"], "av": t["attn.context"], "both": t["attn.scores"] + t["attn.context"]}


@family("counting.flops_attention", topic="counting", title="FLOPs of QKᵀ and of AV",
        types=("integer",), tags=("flops", "attention", "macs"), source=_SRC)
def flops_attention(d: Draw) -> Problem:
    """QKᵀ: (n × d_h)(d_h × n) per head, 2·B·h·n²·d_h = 2·B·n²·d FLOPs; AV the same.

    Levels (issue 12: disjoint, ordered): easy, one product (QKᵀ or AV) for one sequence; medium,
    one product for a batch of 2 to 8 sequences (one factor more) and wider sizes; hard, both products together
    (one step more: the sum), for any batch."""
    from solver.systems.roofline import matmul_flops as rl_matmul

    # medium and hard draw from wider sizes (any d_model a multiple of 128 up to 2048, n a power of two or three
    # times one, batches of 3 and 6 too): with the easy level's few sizes, a hard key (both products, × B) was
    # often an easy key again (2·B·n²·d with d or n doubled), and could be recalled rather than worked out
    # issue 39: any width that is a multiple of 64 and any length that is a multiple of 64 (four widths and five
    # lengths gave 16 distinct easy keys in 200 draws, which a test-wise student remembers), batches up to 16
    widths, lengths = (tuple(range(256, 2049, 64)), tuple(range(128, 2049, 64))) if d.level == 0 else (
        tuple(range(256, 4097, 64)), tuple(range(128, 8193, 64)))
    while True:
        d_model, h = d.pick(widths), d.pick((8, 12, 16, 32))
        if d_model % h == 0 and d_model // h >= 32:
            break
    n = d.pick(lengths)
    batch = 1 if d.level == 0 else d.rng.randint(2 if d.level == 1 else 1, 16)
    ask = "both" if d.level == 2 else d.pick(("qk", "av"))
    cfg = _attn_cfg(d_model, h)
    value = _scores(cfg, batch, n)[ask]
    other = {"qk": "both", "av": "both", "both": "qk"}[ask]
    macs = _scores(cfg, batch, n, "macs")[ask]
    # issue 38: each mistake's inverse, a mistake of its own, with its value (an integer key's mirror is 2k − v)
    wrongs = [
        Wrong("macs_vs_flops", "counted multiply-adds, not FLOPs", "One multiply-add is 2 FLOPs; you counted multiply-adds.",
              macs, inverse="counted 4 FLOPs per multiply-add", inverse_value=2 * value),
        Wrong("one_head_only", "counted one head only", f"Each of the {h} heads has its own n × n product (h·d_h = d_model).",
              _scores(_attn_cfg(d_model, 1, d_model // h), batch, n)[ask],
              inverse=f"multiplied by the {h} heads twice (d_model per head)", inverse_value=h * value),
        Wrong("qk_only" if other == "qk" else "added_other_product",
              "counted QKᵀ only" if other == "qk" else "added the other product",
              "The question asks for QKᵀ and AV together." if other == "qk" else "The question asks for one of the two products only.",
              _scores(cfg, batch, n)[other],
              inverse=None if other == "qk" else "counted only the causal half of the n × n entries",
              inverse_value=None if other == "qk" else value // 2),
        Wrong("projection_cost", "counted n·d² (a projection's cost)", "QKᵀ is (n × d)(d × n): its cost grows with n², not d².",
              (2 if ask == "both" else 1) * rl_matmul(batch * n, d_model, d_model)),
        # a dot product of length d_k as d_k multiplications and d_k − 1 additions: one FLOP fewer per score entry
        Wrong("dot_product_minus_one", "counted 2·d_k − 1 FLOPs per dot product",
              "The stated convention is 2 FLOPs per multiply-add: a dot product of length d_k is 2·d_k FLOPs, "
              "not 2·d_k − 1 (d_k multiplications and d_k − 1 additions).",
              2 * macs - macs // (d_model // h),  # 2 FLOPs per multiply-add, one fewer per dot product
              inverse="counted 2·d_k + 1 FLOPs per dot product"),
    ]
    if batch > 1:
        wrongs.append(Wrong("forgot_batch", "counted one sequence, not the batch",
                            f"Each of the B = {batch} sequences has its own n × n scores: multiply by B.",
                            _scores(cfg, 1, n)[ask], inverse=f"multiplied by the batch of {batch} twice",
                            inverse_value=batch * value))
    what = {"qk": r"$QK^\top$", "av": r"the product $AV$ of the attention weights with the values",
            "both": r"$QK^\top$ and $AV$ together"}[ask]
    st = Doc()
    st.p(f"Self-attention runs on a batch of $B = {batch}$ sequence{'s' if batch > 1 else ''} of $n = {n}$ tokens with "
         f"$d_{{model}} = {d_model}$ and $h = {h}$ heads ($d_k = d_v = d_{{model}}/h$). {_CONV}")
    st.p(f"How many FLOPs does computing {what} take, over all heads of one layer?")
    sol = Doc()
    sol.p(f"Per head $Q_i$ is $n \\times d_k = {n} \\times {d_model // h}$: $Q_iK_i^\\top$ is $(n \\times d_k)(d_k \\times n)$, "
          f"$n^2 d_k$ multiply-adds; $A_iV_i$ is $(n \\times n)(n \\times d_k)$, the same. Over $h$ heads $h\\,d_k = d_{{model}}$.")
    qk = _scores(cfg, batch, n)["qk"]
    sol.p(f"$2 \\cdot B \\cdot h \\cdot n^2 \\cdot d_k = 2 \\times {batch} \\times {h} \\times {n}^2 \\times {d_model // h} = {big(qk)}$ FLOPs "
          "for each product.")
    if ask == "both":
        sol.p(f"Both: $2 \\times {big(qk)} = {big(value)}$.")
    key = integer_key(value, unit="FLOPs")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"d_model": d_model, "n_heads": h, "n": n, "batch": batch, "ask": ask},
                     hints=["A (m×k)(k×n) product is m·k·n multiply-adds = 2·m·k·n FLOPs."])


@family("counting.flops_forward", topic="counting", title="Exact FLOPs of a forward (or training) pass",
        types=("nat",), tags=("flops", "forward-pass", "2N-rule"), marks=2, source=_SRC)
def flops_forward(d: Draw) -> Problem:
    """The sum of every matmul: projections, QKᵀ/AV, FFN and LM head; training = 3 × forward.

    Levels (issue 12: disjoint, ordered): easy, one forward pass of one sequence; medium, one
    forward pass of a batch of 2 to 8 sequences (one factor more); hard, one training step
    (forward and backward: one step more), any batch."""
    from solver.counting.config import ModelConfig
    from solver.counting.flops import matmul_flops

    mode = "train" if d.level == 2 else "forward"
    for _ in range(400):
        # issue 39: any width that is a multiple of 64 up to 2048, depths 2 to 24, batches up to 16
        d_model = d.pick(tuple(range(256, 2049, 64)))
        h = d.pick(tuple(x for x in (4, 8, 12, 16) if d_model % x == 0 and d_model // x >= 32))
        layers = d.rng.randint(2, 24)
        batch = 1 if d.level == 0 else d.rng.randint(2 if d.level == 1 else 1, 16)
        # issue 39: the MCQ crosses "forgot QKᵀ and AV" or "counted them twice" (× (1 − s) or × (1 + s), s their
        # share of the total) with the same for the LM head: dropping a share of 18 % moves the key further in log
        # than doubling it does, so shares drawn evenly up to a hard ceiling told a test-wise student from the gaps
        # alone which way each slip went. Each share is drawn with a density that falls off to nothing at 20 % (in
        # log, from 0.5 % for QKᵀ/AV and 2 % for the head), and the length n and the vocabulary V are then the
        # ones that give it: per token and layer the projections and the FFN cost 24d², QKᵀ and AV 4nd, and the
        # head 2dV per token
        s_sc, s_h = (math.exp(math.log(lo) + math.log(0.2 / lo) * min(d.rng.random(), d.rng.random())) for lo in (0.005, 0.02))
        rest = 1 - s_sc - s_h
        n = 8 * round(6 * d_model * s_sc / rest / 8)
        vocab = round(12 * layers * d_model * s_h / rest)
        if not (64 <= n <= 4096 and 10_000 <= vocab <= 260_000):
            continue
        cfg = ModelConfig(arch="decoder", d_model=d_model, n_layers=layers, n_heads=h, d_ff=4 * d_model, ffn="gelu",
                          bias=True, vocab_size=vocab, max_positions=max(1024, n), pos="learned", tied_embeddings=True)
        rep = matmul_flops(cfg, batch, n, mode)
        value = rep.total / 1e9
        scores = sum(t.total for t in rep.terms if t.group.endswith("_scores"))
        head = sum(t.total for t in rep.terms if t.name == "lm_head")
        if safe_for_rounding(value, 2, 0.1) and all(0.003 <= t / rep.flops <= 0.21 for t in (scores, head)):
            break
    else:
        raise ValueError("counting.flops_forward: no configuration in 400 tries gives the drawn shares")
    wrongs = [
        # issue 39: no inverse named here (the MCQ then crosses the two dropped-or-doubled terms, whose factors vary with
        # the draw, not the fixed × 2 or × 1/2, which against the key's spread of sizes told its corner)
        Wrong("macs_vs_flops", "counted multiply-adds, not FLOPs", "One multiply-add is 2 FLOPs.",
              matmul_flops(cfg, batch, n, mode, "macs").total / 1e9),
        # issue 38: a dropped term's inverse is the term counted twice, with its own value
        Wrong("forgot_attention_scores", "forgot QKᵀ and AV", "QKᵀ and AV are matmuls too: 4·B·n²·d per layer (forward).",
              (rep.flops - scores) / 1e9, inverse="counted QKᵀ and AV twice each", inverse_value=(rep.flops + scores) / 1e9),
        Wrong("forgot_lm_head", "forgot the LM head", "The logits are a d_model × V matmul on every position: 2·B·n·d·V.",
              (rep.flops - head) / 1e9, inverse="counted the LM head twice (once more for the tied embedding)",
              inverse_value=(rep.flops + head) / 1e9),
        Wrong("used_2n_rule", "used 2N (or 6N) per token", "2N per token with N non-embedding parameters ignores QKᵀ/AV and the LM head; "
              "the question asks for the exact matmul count.", rep.textbook["rule_value"] / 1e9),
        Wrong("forgot_backward", "forgot the backward pass", "Training adds the backward pass: 2 × the forward matmuls.",
              matmul_flops(cfg, batch, n, "forward").total / 1e9) if mode == "train" else
        Wrong("counted_backward", "counted a training step", "A forward pass has no backward pass (that would be 3 × forward).",
              matmul_flops(cfg, batch, n, "train").total / 1e9),
    ]
    key = nat_key(value, 2, unit="GFLOPs")
    st = Doc()
    st.p(f"A decoder-only Transformer: vocabulary $V = {big(vocab)}$, $d_{{model}} = {d_model}$, $L = {layers}$ layers, "
         f"$h = {h}$ heads, a GELU FFN ${d_model} \\to {4 * d_model} \\to {d_model}$, learned positions, and an LM head "
         "(tied to the embedding) producing logits at every position.")
    task = "one forward pass" if mode == "forward" else "one training step (forward and backward pass; each matmul's backward is two matmuls of its size)"
    st.p(f"It processes a batch of $B = {batch}$ sequence{'s' if batch > 1 else ''} of $n = {n}$ tokens. {_CONV} "
         f"How many GFLOPs ($10^9$ FLOPs) does {task} take? Round off to two decimal places.")
    sol = Doc()
    sol.p(f"Symbols: $B = {batch}$, $n = {n}$, $d = {d_model}$, $h\\,d_h = {d_model}$, $d_{{ff}} = {4 * d_model}$, "
          f"$V = {big(vocab)}$, $L = {layers}$. Forward FLOPs of each matmul:")
    sol.bullets([f"{t.name}: {t.formula} = ${big(t.forward)}$" for t in rep.terms],
                [f"{t.name}: {t.formula} = {t.forward:,}" for t in rep.terms])
    sol.p(f"Forward total: ${big(rep.forward_flops)}$ FLOPs.")
    if mode == "train":
        sol.p(f"Backward: two matmuls of the same size per matmul, $2 \\times {big(rep.forward_flops)} = {big(rep.backward_flops)}$; "
              f"training step $= {big(rep.flops)}$ FLOPs.")
    rule = "2N" if mode == "forward" else "6N"  # issue 12: a training step's rule is 6N, and its figure is 6N's
    sol.p(f"$= {rep.flops / 1e9:.4f}$ GFLOPs. (The {rule}-per-token rule with N = {big(rep.textbook['N_non_embedding'])} "
          f"non-embedding parameters would give {rep.textbook['rule_value'] / 1e9:.2f}.)")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"config": cfg.to_dict(), "batch": batch, "seq": n, "mode": mode},
                     hints=["Per layer: Q, K, V, O projections, QKᵀ, AV, two FFN matrices; then the LM head."])


# issue 22: ten sizes up to 1.3 billion (easy) and ten from 2.7 billion (medium), sixteen token counts (seven
# sizes and five token counts gave fewer than 50 distinct problems per level)
_NS_SMALL = tuple(m * 10**6 for m in (110, 125, 160, 250, 350, 410, 560, 760, 1000, 1300))
_NS_LARGE = tuple(m * 10**8 for m in (27, 30, 67, 70, 80, 130, 300, 340, 650, 700))
_NS = _NS_SMALL + _NS_LARGE
_DS = tuple(m * 10**9 for m in (50, 100, 150, 200, 250, 300, 400, 500, 600, 800, 1000, 1400, 2000, 3000, 5000, 15000))


@family("counting.flops_training", topic="counting", title="Training compute: C = 6·N·D",
        types=("nat",), tags=("flops", "training", "6ND"), source="issue 7 (training compute); Kaplan et al. 2020")
def flops_training(d: Draw) -> Problem:
    """C = 6·N·D: 2N per token forward, 4N backward; PF-days = C / (10¹⁵ · 86,400).

    Levels (issue 12: disjoint, ordered): easy, C for a model up to 1.3 billion parameters; medium,
    C for 2.7 to 70 billion (larger exponents); hard, the same compute in PF-days (one more unit
    conversion), any model."""
    from solver.systems.roofline import matmul_flops
    from solver.systems.training import PF_DAY, train
    from solver.units import per_convention

    ask = "pf_days" if d.level == 2 else "compute"
    for _ in range(200):
        # issue 39: any size of two significant figures in the level's range, and any token count of two significant
        # figures from 20 billion to 15 trillion (ten sizes and sixteen token counts: 121 distinct easy keys in 200 draws)
        small = d.rng.randint(11, 99) * 10**7 if d.rng.random() < 0.8 else d.rng.randint(10, 13) * 10**8
        large = d.rng.randint(27, 99) * 10**8 if d.rng.random() < 0.5 else d.rng.randint(10, 70) * 10**9
        N = (small, large, small if d.rng.random() < 0.5 else large)[d.level]
        D = d.rng.randint(20, 99) * 10**d.pick((9, 10, 11)) if d.rng.random() < 0.9 else d.rng.randint(10, 15) * 10**12
        r = train(N, tokens=D)
        C = r.answer
        exp = int(math.floor(math.log10(C)))
        value = C / 10**exp if ask == "compute" else float(r.breakdown["pf_days"])
        scale = 10**exp if ask == "compute" else PF_DAY
        if safe_for_rounding(value, 2, 0.1):
            break
    wrongs = [
        Wrong("forgot_backward", "used 2N per token (forward only)", "Training also runs the backward pass (≈ 4N per token): 6N in all.",
              matmul_flops(D, N, 1, "forward") / scale, inverse="applied training = 3 × forward to 6N again (18N per token)"),
        Wrong("macs_vs_flops", "counted multiply-adds (3N per token)", "6N counts 2 FLOPs per multiply-add; 3N would be multiply-adds.",
              per_convention(6 * N * D, "macs") / scale, inverse="counted 4 FLOPs per multiply-add (12N per token)"),
        Wrong("forgot_forward", "counted the backward pass only (4N)", "The forward pass (2N) comes on top of the backward (4N).",
              (C - matmul_flops(D, N, 1, "forward")) / scale),
        Wrong("hours_for_days", "used an hour instead of a day", "A petaflop/s-day is 10¹⁵ FLOP/s for 86,400 s.",
              C / (10**15 * 3600)) if ask == "pf_days" else None,
    ]
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 2, scale=exp if ask == "compute" else 0)
    st = Doc()
    st.p(f"A dense decoder-only Transformer with $N$ = {tokens_text(N)} parameters is trained on $D$ = {tokens_text(D)} tokens. "
         "Estimate the training compute with the standard rule for matmul FLOPs (2 FLOPs per multiply-add; forward and "
         "backward pass; ignore attention's sequence-length term).")
    if ask == "compute":
        st.p(f"Give $C$ in units of $10^{{{exp}}}$ FLOPs, rounded off to two decimal places.")
    else:
        st.p("Give $C$ in petaflop/s-days ($10^{15}$ FLOP/s sustained for one day), rounded off to two decimal places.")
    sol = Doc()
    sol.p("Per token and parameter: forward 2 FLOPs (one multiply-add), backward 4 (gradients of inputs and of weights): "
          "$C = 6ND$.")
    sol.p(f"$C = 6 \\times {sci(N)} \\times {sci(D)} = {sci(C, 6)}$ FLOPs.")
    if ask == "compute":
        sol.p(f"In units of $10^{{{exp}}}$: ${value:.4f}$.")
    else:
        sol.p(f"PF-days $= C / (10^{{15}} \\times 86{{,}}400) = {sci(C, 6)} / 8.64 \\times 10^{{19}} = {value:.4f}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"params": N, "tokens": D, "ask": ask, "unit_exponent": exp if ask == "compute" else None},
                     hints=["Forward 2N, backward 4N FLOPs per token."])


def _three_figures(x: Fraction) -> str:
    """x to three significant figures, half away from zero as on paper, from the exact value (2.275 ->
    2.28, where the double 2.275 gives 2.27), written as ``:g`` writes it (92, 13.6)."""
    with localcontext() as c:
        c.prec = 40
        exact = Decimal(x.numerator) / Decimal(x.denominator)
        c.rounding = ROUND_HALF_UP
        r = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2))
    return f"{float(r):.3g}"


def _slips_both_sides(n: int, dm: int, h: int) -> bool:
    """The MCQ's two slips (QKᵀ only: ratio/2; W_hh only: ratio·(h + d)/h) give one factor above the key's
    and one below, neither 1 nor 2 (the statement prints "2 FLOPs"), all three distinct as printed, so that
    the drawn slip can fall on either side. The ratio is 4n²d / (2nh(h + d)) = 2nd/(h(h + d))."""
    q = Fraction(2 * n * dm, h * (h + dm))

    def f(r: Fraction) -> Fraction:
        return max(r, 1 / r)

    slips = [r for r in (q / 2, q * (h + dm) / h) if f(r) not in (1, 2)]
    shown = {f"{float(f(r)):.3g}" for r in (q, *slips)}
    return len(slips) == 2 and len({f(r) > f(q) for r in slips}) == 2 and len(shown) == 3 and f(q) != 2


@family("counting.attention_vs_rnn", topic="counting", title="Attention versus RNN: which costs more?",
        types=("mcq", "nat"), tags=("flops", "complexity", "rnn"), source=_SRC)
def attention_vs_rnn(d: Draw) -> Problem:
    """Attention (QKᵀ + AV) 4·n²·d against an RNN layer (W_hh and W_xh per step) 4·n·d²: ratio n/d."""
    from solver.systems.roofline import matmul_flops

    # issue 12, disjoint levels: easy is the MCQ (which is cheaper, by what factor); medium the
    # ratio with n and d both powers of two (a ratio of powers of two); hard the ratio with n or d
    # not a power of two (384, 768, 1280, 1536, 3072: the ratio must be worked out, not counted in halvings).
    def pow2(x: int) -> bool:
        return x & (x - 1) == 0

    # issue 22: as a number the ratio was n/d, the first printed number over the second in every draw.
    # Medium: the RNN's hidden width h differs from d (W_hh is h × h, W_xh is h × d): the ratio is
    # 2nd/(h(h + d)); hard: an LSTM, four gates of the same two products: nd/(2h(h + d)).
    # The easy MCQ has h ≠ d too: with h = d the right factor was n/d, the ratio of the two printed numbers,
    # which left two options of four.
    gates = 4 if d.level == 2 else 1
    while True:
        if d.level == 0:  # issue 39: the MCQ's sizes as multiples of 64 from wide ranges, so its options rarely repeat
            n, dm, h = d.pick(range(128, 4097, 64)), d.pick(range(256, 2049, 64)), d.pick(range(256, 2049, 64))
        else:
            n = d.pick((128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096))
            dm, h = d.pick((256, 512, 768, 1024, 1280, 2048)), d.pick((256, 384, 512, 768, 1024, 1536, 2048))
        if h == dm:
            continue
        ratio = 2 * n * dm / (gates * h * (h + dm))  # checked against the FLOP counts below
        if d.level == 0 and not (0.05 <= ratio <= 20 and _slips_both_sides(n, dm, h)):
            continue
        if d.level > 0 and not (0.2 <= ratio <= 50 and safe_for_rounding(ratio, 2, 0.1)):
            continue
        break
    batch = 1
    attn = _scores(_attn_cfg(dm, 1), batch, n)["both"]
    hid = h or dm
    w_hh = matmul_flops(batch * n, hid, hid)  # n steps of (1 × h)(h × h), as one (n × h)(h × h)
    w_xh = matmul_flops(batch * n, dm, hid)  # n steps of (1 × d)(d × h)
    rnn = gates * (w_hh + w_xh)  # W_hh·h and W_xh·x, per gate
    st = Doc()
    sol = Doc()
    sol.p(f"Attention: $QK^\\top$ and $AV$ are $2n^2d$ each, $4n^2d = 4 \\times {n}^2 \\times {dm} = {big(attn)}$.")
    layer = (r"one recurrent layer $h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t)$" if gates == 1 else
             r"one LSTM layer (four gates, each $W_{hh} h_{t-1} + W_{xh} x_t$ with its own matrices)")
    st.p(f"Compare, for a sequence of $n = {n}$ tokens of width $d = {dm}$, the FLOPs of self-attention's $QK^\\top$ and $AV$ "
         f"(projections excluded) with those of {layer} of hidden width $h = {h}$ run over the sequence: $W_{{hh}}$ is "
         r"$h \times h$ and $W_{xh}$ is $h \times d$ (biases and nonlinearities ignored; 2 FLOPs per multiply-add).")
    per = f"{gates} \\times " if gates > 1 else ""
    sol.p("Recurrent layer: per step and gate $2h^2$ for $W_{hh}h$ and $2hd$ for $W_{xh}x$; over $n$ steps"
          + (f" and {gates} gates" if gates > 1 else "")
          + f" ${per}2nh(h + d) = {per}2 \\times {n} \\times {h} \\times {h + dm} = {big(rnn)}$.")
    sol.p(f"Ratio attention/recurrent $= 4n^2d / ({per}2nh(h+d)) = {'2' if gates == 1 else ''}nd/({'' if gates == 1 else '2'}h(h+d)) "
          f"= {big(attn)}/{big(rnn)} = {attn / rnn:.4f}$.")
    if d.level == 0:
        # Four claims of the same form, "X is cheaper: Y needs f times its FLOPs", crossing two
        # directions with two factors (the right one, and the one a slip gives): no option can be
        # told by its length, its words or its number without computing (issue 12: the old
        # options "Both need the same" / "It cannot be told" were never the key).
        cheaper = "attention" if attn < rnn else "rnn"
        q = Fraction(attn) / Fraction(rnn)
        slips = [("forgot_av", "counted QKᵀ only", "Attention also multiplies the weights by V: another 2n²d.", q / 2),
                 ("only_w_hh", "counted only W_hh in the RNN", "Each step also multiplies the input by W_xh.",
                  Fraction(attn) / Fraction(w_hh))]

        def factor(ratio: Fraction) -> Fraction:
            return max(ratio, 1 / ratio)

        # the slip's factor is above the key's in half the draws, below in the other half (where
        # both are possible), so "the smallest (largest) factor" is no guide
        above = d.rng.random() < 0.5
        slips = [sl for sl in slips if sl[3] != 1]
        slips = [sl for sl in slips if (factor(sl[3]) > factor(q)) == above] or slips
        sid, slabel, sfeed, sq = d.pick(slips)

        def claim(ratio: Fraction) -> tuple[str, str]:
            return ("attention" if ratio < 1 else "rnn", _three_figures(factor(ratio)))

        def text(c: tuple[str, str]) -> str:
            if c[0] == "attention":
                return f"Self-attention is cheaper: the RNN needs {c[1]} times its FLOPs"
            return f"The RNN is cheaper: self-attention needs {c[1]} times its FLOPs"

        flip = {"attention": "rnn", "rnn": "attention"}
        right, slip = claim(q), claim(sq)
        claims = [right, (flip[right[0]], right[1]), slip, (flip[slip[0]], slip[1])]
        order = list(range(4))
        d.rng.shuffle(order)
        options = [text(claims[i]) for i in order]
        key = ChoiceKey(frozenset({order.index(0)}))
        mis = [Misconception("swapped_complexities", "swapped O(n²d) and O(nd²)",
                             "Attention costs O(n²·d) and the RNN O(n·d²): compare n with d.", order.index(1)),
               Misconception(sid, slabel, sfeed, order.index(2))]
        st.p("Which statement is right?")
        sol.p("**Answer:** " + answer_text(key, options))
        return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, options_text=options,
                         misconceptions=mis, given={"n": n, "d": dm, "h": hid, "gates": gates, "cheaper": cheaper})
    value = attn / rnn
    assert abs(value - ratio) <= 1e-9 * ratio  # the closed form of the loop agrees with the FLOP counts
    key = nat_key(value, 2)
    wrongs = [
        Wrong("swapped_complexities", "swapped O(n²d) and O(nd²)", "You computed recurrent/attention: attention is the n² term.", rnn / attn),
        Wrong("only_w_hh", "counted only W_hh in the recurrent layer", "Each step also multiplies the input by W_xh.", attn / (gates * w_hh)),
        Wrong("forgot_av", "counted QKᵀ only", "Attention also multiplies the weights by V: another 2n²d.", attn / 2 / rnn),
        Wrong("hidden_is_d", "took the hidden width equal to d", f"The hidden width is h = {h}, not d = {dm}: W_hh is h × h.",
              attn / (gates * 2 * matmul_flops(n, dm, dm))),
        Wrong("one_gate", "counted one gate of the LSTM", "An LSTM has four gates, each with its own W_hh and W_xh.",
              attn / (w_hh + w_xh) if gates > 1 else None),
    ]
    st.p("What is the ratio (attention FLOPs) / (recurrent layer FLOPs)? Round off to two decimal places.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"n": n, "d": dm, "h": hid, "gates": gates})
