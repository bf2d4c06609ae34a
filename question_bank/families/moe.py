"""Mixture of experts: total against active parameters, and the weight bytes one decode step reads.

Keys are ``solver.counting.params.param_breakdown`` (``total``, ``active``) of the zoo's MoE presets,
and ``solver.systems.decode_read`` (E·(1 − (1 − k/E)^B) experts per layer under uniform routing). The
misconceptions are the students' usual ones: every expert counted as active, or only the active
ones held (or read); with DeepSeek's shared experts, the shared experts counted twice (among the
routed top-k too, or added again to the parameters outside the routed experts) and, for the total,
the dense first layer counted as an MoE layer; the worst case min(E, B·k) taken for the expected
number; the fraction of experts missed taken for the fraction touched; the top-k forgotten (one
expert per token); at the hard level of the decode read (GiB), 10^9 bytes taken for a GiB.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from question_bank.families.counting_common import BYTE_UNITS, big, nat_problem
from question_bank.family import Draw, Wrong, family
from question_bank.grading import nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (mixture of experts); Mixtral of Experts (Jiang et al. 2024); DeepSeek-V2 (2024)"
_MOE_PRESETS = ("mixtral-8x7b", "mixtral-8x22b", "deepseek-v2-lite")


def _describe(name: str, cfg) -> str:
    shared = (f" plus {cfg.n_shared_experts} shared experts every token uses" if cfg.n_shared_experts else "")
    dense = (f"; the first {cfg.first_dense_layers} layer keeps one dense FFN of width {cfg.d_ff}"
             if cfg.first_dense_layers else "")
    return (f"{name} has $L = {cfg.n_layers}$ layers; each MoE layer has a router and $E = {cfg.n_experts}$ routed "
            f"SwiGLU experts of width {cfg.expert_ff} (three $d \\times {cfg.expert_ff}$ matrices, $d = {cfg.d_model}$), "
            f"of which each token uses the top $k = {cfg.top_k}${shared}{dense}.")


def _variant(d: Draw, name: str) -> tuple[str, Any]:
    """The preset's config with its number of routed experts E and top-k drawn (issue 22: two Mixtrals gave two
    problems a level, and typing one remembered number won half the draws): the real (E, k) among others."""
    from solver.counting.presets import get_preset

    cfg = get_preset(name).config
    E = d.pick((4, 8, 16, 32) if cfg.n_experts <= 8 else (32, 64, 128))
    k = d.pick(tuple(x for x in (1, 2, 3, 4, 6, 8) if x < E // 2 or x == cfg.top_k))
    if (E, k) == (cfg.n_experts, cfg.top_k):
        return name, cfg
    return f"A variant of {name} with {E} routed experts per layer and top-{k} routing", cfg.replace(n_experts=E, top_k=k)


@family("moe.active_params", topic="counting", title="Total and active parameters of a mixture of experts",
        types=("nat",), tags=("moe", "parameters", "active-parameters"), source=_SRC,
        small_pool="real MoE models (two Mixtrals, DeepSeek-V2-Lite), each with its number of experts and top-k drawn")
def active_params(d: Draw) -> Problem:
    """Active = total − (routed experts) + (k/E)·(routed experts): one token runs through k of the E routed
    experts of each MoE layer; everything else (attention, router, shared experts, embeddings, head) whole."""
    from solver.counting.params import param_breakdown

    # Levels (issue 12: disjoint, ordered): easy, a Mixtral's total assembled from its parts; medium, a Mixtral's
    # active parameters (k of E routed experts); hard, DeepSeek-V2-Lite, total or active, with its shared experts
    # and dense first layer to keep apart from the routed experts (a note more in the solution).
    for _ in range(100):
        preset = d.pick(("mixtral-8x7b", "mixtral-8x22b") if d.level < 2 else ("deepseek-v2-lite",))
        name, cfg = _variant(d, preset)
        ask = ("total", "active")[d.level] if d.level < 2 else d.pick(("active", "total"))
        pb = param_breakdown(cfg)
        value = (pb.active if ask == "active" else pb.total) / 1e9
        if safe_for_rounding(value, 2, 0.1):
            break
    routed, E, k = pb.routed_experts, cfg.n_experts, cfg.top_k
    one = cfg.replace(top_k=1)
    shared = sum(c.count for c in pb.components if c.name.startswith("ffn.shared."))
    L_M = cfg.n_layers - cfg.dense_layers_of(cfg.n_layers)
    per = routed // (L_M * E)  # one routed expert of one layer
    wrongs = [
        Wrong("every_expert_active", "counted every expert as active",
              f"A token runs through only {k} of the {E} routed experts of a layer.", pb.total / 1e9)
        if ask == "active" else None,
        Wrong("only_active_held", "counted only the active experts", "Every expert's weights exist (and are held in "
              "memory), even if a token uses only k of them.", pb.active / 1e9) if ask == "total" else None,
        Wrong("one_expert", "counted one expert per token (forgot the top-k)",
              f"Each token is routed to its top {k} experts, not one.", param_breakdown(one).active / 1e9)
        if ask == "active" and k > 1 else None,
        Wrong("no_shared", "left out the shared experts", "The shared experts run on every token.",
              (pb.active - shared) / 1e9)
        if ask == "active" and cfg.n_shared_experts else None,
        Wrong("shared_twice", "counted the shared experts twice",
              "The shared experts are already in the parameters outside the routed experts; the top k are routed "
              "experts only.", (param_breakdown(cfg.replace(top_k=k + cfg.n_shared_experts)).active if ask == "active"
                                else pb.total + shared) / 1e9)
        if cfg.n_shared_experts and k + cfg.n_shared_experts <= E else None,
        Wrong("dense_as_moe", "counted every layer as an MoE layer (the dense first layer too)",
              f"Only {L_M} of the {cfg.n_layers} layers are MoE layers: the first {cfg.first_dense_layers} keeps "
              "its dense FFN.", (pb.total + cfg.first_dense_layers * E * per) / 1e9)
        if ask == "total" and cfg.first_dense_layers else None,
    ]
    key = nat_key(value, 2, unit="billion parameters")
    st = Doc()
    if ask == "active":
        st.p(_describe(name, cfg) + f" In all it holds $N = {big(pb.total)}$ parameters (embeddings and LM head "
             f"included), of which the routed experts hold ${big(routed)}$.")
        st.p("How many parameters does one token use (the active parameters; embeddings and head counted whole)? "
             "Give billions, rounded off to two decimal places.")
    else:
        st.p(_describe(name, cfg) + f" Outside the routed experts it has ${big(pb.total - routed)}$ parameters "
             f"(embeddings and LM head included); one routed expert of one layer has ${big(per)}$, and {L_M} layers "
             "are MoE layers.")
        st.p("How many parameters does the model hold in all? Give billions, rounded off to two decimal places.")
    steps_doc = [f"one routed expert of one layer: ${big(routed)} / ({L_M} \\times {E}) = {big(per)}$",
                 f"total $= {big(pb.total - routed)} + {L_M} \\times {E} \\times {big(per)} = {big(pb.total)}$",
                 f"active $= {big(pb.total - routed)} + {L_M} \\times {k} \\times {big(per)} = {big(pb.active)}$"]
    notes = [f"Total $N = {big(pb.total)}$, active $= {big(pb.active)}$: a {pb.total / pb.active:.2f}× ratio."]
    if cfg.n_shared_experts or cfg.first_dense_layers:
        notes.insert(0, "Outside the routed experts (used whole by every token): attention, routers, embeddings and "
                     "head" + (f", the {cfg.n_shared_experts} shared experts of each MoE layer" if cfg.n_shared_experts
                               else "") + (f", the dense FFN of the first {cfg.first_dense_layers} layer(s)"
                                           if cfg.first_dense_layers else "") + ".")
    return nat_problem(d, st, key, [], wrongs, given={"preset": preset, "ask": ask, "n_experts": E, "top_k": k},
                       notes=[*steps_doc, *notes])


@family("moe.decode_weight_bytes", topic="hardware", title="Weight bytes one MoE decode step reads",
        types=("nat",), tags=("moe", "decode", "memory-bandwidth", "inference"), marks=2, source=_SRC,
        small_pool="real MoE models (two Mixtrals, DeepSeek-V2-Lite), each with its number of experts and top-k drawn")
def decode_weight_bytes(d: Draw) -> Problem:
    """Bytes read = (N − N_routed + L_M · E·(1 − (1 − k/E)^B) · N_expert) · w: a batch of B tokens touches on
    average E·(1 − (1 − k/E)^B) distinct experts per layer under uniform routing (each token misses an expert
    with probability 1 − k/E); between k (B = 1) and E."""
    from solver.counting.params import param_breakdown
    from solver.systems.decode_read import expected_distinct_experts, model_read, worst_case_experts

    # Levels (issue 12: disjoint, ordered): easy, Mixtral 8x7B with a batch of 2 or 3, in GB; medium, either
    # Mixtral with a batch of 4 or 8, in GB; hard, any of the three (DeepSeek-V2-Lite's 64 experts, shared experts
    # and dense first layer included) with a batch of 4 or 8, in GiB (a unit conversion more, a note more).
    for _ in range(300):
        preset = d.pick(("mixtral-8x7b",) if d.level == 0 else _MOE_PRESETS[:2] if d.level == 1 else _MOE_PRESETS)
        name, cfg = _variant(d, preset)
        B = d.pick((2, 3) if d.level == 0 else (4, 5, 6, 8, 12, 16))
        unit = "GiB" if d.level == 2 else "GB"
        read = model_read(cfg, B, 1, "bf16", "bf16")
        value = float(read.weight_bytes) / BYTE_UNITS[unit][0]
        if safe_for_rounding(value, 2, 0.1):
            break
    pb = param_breakdown(cfg)
    E, k, div = cfg.n_experts, cfg.top_k, BYTE_UNITS[unit][0]
    L_M = cfg.n_layers - cfg.dense_layers_of(cfg.n_layers)
    per = Fraction(pb.routed_experts, L_M * E)
    # issue 21: as the solver (solver.systems.decode_read) and `qkv models show`: the untied input embedding is a
    # lookup, read one row of d values per token; the LM head reads its whole matrix
    table = 0 if cfg.tied_embeddings else pb.get("token_embedding").count
    rows = B * cfg.d_model if table else 0
    base = pb.total - pb.routed_experts - table + rows

    def with_experts(n: Fraction) -> float:
        return float((base + L_M * n * per) * 2) / div

    touched = expected_distinct_experts(E, k, B)
    missed = E * (1 - Fraction(k, E)) ** B
    wrongs = [
        Wrong("every_expert_read", "read every expert (the dense model's rule)",
              f"Only the experts the {B} tokens picked are read: about {float(touched):.3g} of {E} per layer.",
              with_experts(Fraction(E))),
        Wrong("only_k_read", "read only k experts per layer (one token's)",
              f"{B} tokens pick different experts: more than k = {k} are touched.", with_experts(Fraction(k))),
        Wrong("worst_case", "took the worst case min(E, B·k) for the expected number",
              "Tokens often pick the same experts: the expectation is below B·k.",
              with_experts(Fraction(worst_case_experts(E, k, B)))) if worst_case_experts(E, k, B) != E else None,
        Wrong("missed_for_touched", "used E·(1 − k/E)^B (the experts missed) as those touched",
              "(1 − k/E)^B is the chance that no token picked an expert: the touched ones are E minus those.",
              with_experts(missed)),
        Wrong("gb_for_gib", "divided by 10^9 (GB) where GiB was asked", "1 GiB is 2^30 bytes.",
              float(read.weight_bytes) / 10**9) if unit == "GiB" else None,
        Wrong("whole_embedding_read", "read the whole input-embedding table",
              f"The input embedding is a lookup: each of the {B} tokens reads one row of d = {cfg.d_model} values, "
              "not the whole table (the LM head, a matmul, does read its whole matrix).",
              float(read.weight_bytes + (table - rows) * 2) / div) if table else None,
    ]
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    st.p(_describe(name, cfg) + f" In all it has $N = {big(pb.total)}$ parameters, of which the routed experts hold "
         f"${big(pb.routed_experts)}$ (spread evenly over {L_M} MoE layers × {E} experts).")
    st.p(f"A decode step runs a batch of $B = {B}$ tokens in bf16 (2 bytes per parameter). Assume each token picks its "
         f"{k} experts uniformly at random, independently of the other tokens, and that a step reads every weight it "
         "uses once: everything outside the routed experts, and each routed expert that at least one token picked. "
         + (f"The input embedding (a table of $V = {big(cfg.vocab_size)}$ rows of $d = {cfg.d_model}$ values, "
            f"${big(table)}$ parameters, separate from the LM head) is a lookup: a step reads one row of it per "
            "token, while the LM head reads its whole matrix. " if table else "")
         + f"What is the expected number of weight bytes read? Give it in {BYTE_UNITS[unit][1]}, rounded off to two "
         "decimal places.")
    notes = [f"Expected experts per layer: $E(1 - (1 - k/E)^B) = {E}(1 - (1 - {k}/{E})^{{{B}}}) = {float(touched):.6g}$.",
             f"One expert of one layer: ${big(pb.routed_experts)} / ({L_M} \\times {E}) = {big(int(per))}$ parameters.",
             *([f"Outside the routed experts: ${big(pb.total - pb.routed_experts)}$ parameters, less the input "
                f"embedding table (${big(table)}$) of which the {B} tokens read {B} rows of $d = {cfg.d_model}$: "
                f"${big(pb.total - pb.routed_experts)} - {big(table)} + {B} \\times {cfg.d_model} = {big(base)}$."]
               if table else []),
             f"Bytes $= 2 \\times ({big(base)} + {L_M} \\times {float(touched):.6g} \\times {big(int(per))}) = "
             f"{big(int(read.weight_bytes))}$; in {unit}: ${value:.4f}$."]
    if unit == "GiB":
        notes.append(f"1 GiB = $2^{{30}}$ = {2**30:,} bytes (not $10^9$): {big(int(read.weight_bytes))} / {2**30:,} "
                     f"= {value:.4f} GiB.")
    return nat_problem(d, st, key, [], wrongs, given={"preset": preset, "batch": B, "unit": unit, "n_experts": E,
                                                      "top_k": k, **({"vocab": cfg.vocab_size} if table else {})},
                       notes=notes)
