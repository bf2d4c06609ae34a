"""Conventions of counting, and the figures a student reaches under another one.

A count of parameters, FLOPs or bytes is exact only under its conventions (biases counted,
2 FLOPs per multiply-add, GiB, K and V both cached, ...). A student who follows another
legitimate convention, or makes the usual slip, reaches another figure; these functions compute
those figures from the solver's own breakdowns, so that every part of qkv names them the same way:
``qkv check params|flops|memory|kv-cache`` explains a gap with them, and a count problem in the
bank (generated or curated) carries them as its misconceptions (:meth:`Convention.misconception`),
so the quiz and the exam name the same slip in the same words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from question_bank.problem import Misconception


@dataclass(frozen=True)
class Convention:
    """Another way of counting: ``value`` is the count under it; ``counted`` says what the exact
    figure does (shown when the gap is of its size), ``alt`` what the answer did (shown when the
    answer equals ``value``); ``id`` names it as a misconception."""

    counted: str
    alt: str
    value: float
    id: str = ""

    @property
    def feedback(self) -> str:
        """The diagnosis, in the words every command uses."""
        return f"This is the count {self.alt}; {self.counted}."

    def misconception(self) -> Misconception:
        value = int(self.value) if float(self.value).is_integer() else self.value
        return Misconception(self.id, f"counted {self.alt}", self.feedback, value)


def param_conventions(components: Iterable[Any], total: int, *, config: Any = None, embedding: int = 0,
                      non_embedding: int = 0) -> list[Convention]:
    """Counts a student could reach under another convention, from the components of a count
    (``name``, ``group`` and ``count`` of each, as :func:`solver.counting.params.param_breakdown`
    gives them; a scope's components give that scope's conventions). ``config`` adds the tied LM
    head counted twice; ``embedding``/``non_embedding`` Kaplan's non-embedding count."""
    comps = [c for c in components if c.group != "lora"]

    def summed(pred: Callable[[Any], bool]) -> int:
        return sum(c.count for c in comps if pred(c))

    out: list[Convention] = []

    def part(cid: str, what: str, n: int) -> None:
        if n:
            out.append(Convention(f"the exact figure counts {what} ({n:,})", f"without {what}", total - n, cid))

    part("without_pooler", "the pooler", summed(lambda c: c.name.startswith("pooler.")))
    part("without_classifier", "the classifier", summed(lambda c: c.name.startswith("classifier.")))
    part("forgot_linear_biases", "the biases of the linear layers",
         summed(lambda c: c.name.endswith(".bias") and c.group != "norm"))
    part("forgot_attention_biases", "the biases of the Q, K, V and output projections",
         summed(lambda c: c.name.endswith(".bias") and c.group in ("attention", "cross_attention")))
    part("forgot_biases", "any bias (the linear layers' and the norms' β)", summed(lambda c: c.name.endswith(".bias")))
    part("forgot_layernorm", "the norms' γ and β", summed(lambda c: c.group == "norm"))
    part("without_lm_head", "the untied LM head", summed(lambda c: c.name == "lm_head.weight"))
    part("without_position_table", "the learned position table", summed(lambda c: c.name == "position_embedding"))
    part("without_segment_table", "the segment table", summed(lambda c: c.name == "type_embedding"))
    if getattr(config, "tied_embeddings", False) and getattr(config, "lm_head", False):
        tok = summed(lambda c: c.name == "token_embedding")
        if tok:
            out.append(Convention(f"the LM head is tied to the token embedding and counted once ({tok:,})",
                                  "with the tied LM head counted twice", total + tok, "tied_counted_twice"))
    if embedding and non_embedding:
        out.append(Convention(f"the exact figure counts the embeddings ({embedding:,})",
                              "without the embeddings (Kaplan's non-embedding count)", non_embedding, "non_embedding"))
    return distinct(out, total)


def breakdown_conventions(pb: Any) -> list[Convention]:
    """:func:`param_conventions` of a whole model's parameter breakdown."""
    return param_conventions(pb.components, pb.total, config=pb.config, embedding=pb.embedding,
                             non_embedding=pb.non_embedding)


def distinct(conventions: list[Convention], exact: float) -> list[Convention]:
    """Conventions with a value of their own: none equal to the exact figure, the first of any
    two with the same value kept (a student's figure can be named by one mistake only)."""
    seen = {exact}
    out = []
    for c in conventions:
        if c.value not in seen:
            seen.add(c.value)
            out.append(c)
    return out


def memory_conventions(exact_bytes: int, *, dtype_bytes: float | None = None, kv: bool = False,
                       n_heads: int | None = None, n_kv_heads: int | None = None) -> list[Convention]:
    """Byte counts under the usual slips: GB for GiB and back, bits, another dtype, K or V only."""
    out = [
        Convention("1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes", "in GB written as GiB (divided by 10⁹, labelled GiB)",
                   exact_bytes * 2**30 / 10**9, "gb_vs_gib"),
        Convention("1 GB = 10⁹ bytes, 1 GiB = 2³⁰ bytes", "in GiB written as GB (divided by 2³⁰, labelled GB)",
                   exact_bytes * 10**9 / 2**30, "gib_vs_gb"),
        Convention("the count is in bytes, not bits", "in bits, not bytes (× 8)", exact_bytes * 8, "bits_for_bytes"),
    ]
    if kv:
        out.append(Convention("K and V are both cached (the factor 2)", "of K or V alone (the factor 2 left out)",
                              exact_bytes / 2, "forgot_k_and_v"))
        if n_heads and n_kv_heads and n_heads != n_kv_heads:
            out.append(Convention(f"only the {n_kv_heads} KV heads are cached, not all {n_heads}",
                                  f"with all {n_heads} query heads cached", exact_bytes * n_heads / n_kv_heads,
                                  "all_heads_cached"))
    if dtype_bytes:
        from solver.units import DTYPE_BYTES

        for name, b in DTYPE_BYTES.items():
            if float(b) != dtype_bytes and name not in ("tf32", "bf16", "fp64"):
                out.append(Convention(f"{dtype_bytes:g} bytes per element", f"at {float(b):g} bytes per element "
                                      f"({name})", exact_bytes * float(b) / dtype_bytes, f"dtype_{name}"))
    return out


def flop_conventions(report: Any) -> list[Convention]:
    """FLOP counts under the usual slips: MACs for FLOPs, forward for training, a rule of thumb."""
    total = report.total
    out = [Convention("the count is 2 FLOPs per multiply-add", "in multiply-adds (MACs), not FLOPs", total / 2,
                      "macs_vs_flops")]
    if report.mode == "train":
        out.append(Convention("training = forward + backward (3 × forward)", "of the forward pass alone",
                              report.value(report.forward_flops), "forward_only"))
    else:
        out.append(Convention(f"this is a {report.mode} pass, not a training step", "of a training step (× 3)",
                              total * 3, "training_for_forward"))
    att = report.by_group().get("attention_scores")
    if att:
        out.append(Convention(f"the exact figure counts QKᵀ and A·V ({att:,})", "without the attention matmuls",
                              total - att, "without_attention_matmuls"))
        out.append(Convention("attention is counted over the full n×n, causal or not",
                              "with causal attention counted as half", total - att / 2,
                              "causal_halved"))
    tb = getattr(report, "textbook", None) or {}
    if tb.get("rule_value"):
        out.append(Convention(f"the rule {tb.get('rule')} gives {tb['rule_value']:,} (an estimate)",
                              f"of the rule {tb.get('rule')}", tb["rule_value"], "rule_of_thumb"))
    return out
