"""Concept questions from the zoo (issue 26): "which of these models use grouped-query attention?"

The presets (``solver.counting.presets``: a ``ModelConfig`` and a citation each) are a table of
facts: the positional scheme, the norm and where it sits, the attention variant, tied embeddings,
encoder or decoder, the feed-forward activation, experts, a sliding window. Each question here is
one of :data:`FACTS` (a predicate on the ``ModelConfig``, read from its fields) asked of four
published models; the key is the predicate's value on each preset's config, never typed in, and
the worked solution gives, for each option, the fields that decide it and the preset's source.

Options are preset names (what ``--preset`` accepts), at most one per model family (GPT-2, GPT-3,
Llama, …) so that two options of one family never share a name; the tutorial models of the seed
texts are left out (their names say nothing to a student). :func:`computed_msq` draws how many
options are true (MSQ); the MCQ draws what its key looks like first (length rank, a number printed).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from question_bank.families.computed_statements import Statement, _msq_problem, computed_msq, true_count
from question_bank.family import Draw, family
from question_bank.grading import LETTERS, answer_text
from question_bank.problem import ChoiceKey, Problem
from question_bank.render import Doc, latex_to_text

_SRC = "issue 26 (concept questions from the zoo); solver.counting.presets (each preset's source)"


@dataclass(frozen=True)
class Fact:
    """A property of a model read from its ModelConfig: how a question asks it, the predicate, and
    the fields that decide it (for the worked solution)."""

    id: str
    level: int  # 0 easy (architecture, positions, norm position), 1 medium (attention, norm, FFN), 2 hard
    asks: str  # "use grouped-query attention (fewer K/V heads than query heads, more than one)"
    holds: Callable[[object], bool]
    fields: Callable[[object], str]


def _attn(c) -> str:
    if c.is_mla:
        return f"latent attention (kv_lora_rank = {c.kv_lora_rank})"
    return f"n_heads = {c.n_heads}, n_kv_heads = {c.kv_heads}"


FACTS: tuple[Fact, ...] = (
    Fact("decoder_only", 0, "are decoder-only (no encoder stack)", lambda c: c.arch == "decoder", lambda c: f"arch = {c.arch}"),
    Fact("has_encoder", 0, "have an encoder stack (encoder-only or encoder-decoder)", lambda c: c.arch != "decoder",
         lambda c: f"arch = {c.arch}"),
    Fact("learned_pos", 0, "add learned absolute position embeddings to the token embeddings",
         lambda c: c.pos == "learned", lambda c: f"positions: {c.pos}"),
    Fact("sinusoidal_pos", 0, "add fixed sinusoidal position encodings", lambda c: c.pos == "sinusoidal",
         lambda c: f"positions: {c.pos}"),
    Fact("rope", 0, "rotate queries and keys by position (rotary position embeddings, RoPE)", lambda c: c.pos == "rope",
         lambda c: f"positions: {c.pos}"),
    Fact("pre_norm", 0, "normalise the input of each sublayer (pre-norm)", lambda c: c.norm_position == "pre",
         lambda c: f"norm position: {c.norm_position}"),
    Fact("post_norm", 0, "normalise after each residual addition (post-norm)",
         lambda c: c.norm_position == "post", lambda c: f"norm position: {c.norm_position}"),
    Fact("gqa", 1, "use grouped-query attention (fewer K/V heads than query heads, more than one)",
         lambda c: not c.is_mla and 1 < c.kv_heads < c.n_heads, _attn),
    Fact("mha", 1, "give every query head its own K/V head (multi-head attention)",
         lambda c: not c.is_mla and c.kv_heads == c.n_heads, _attn),
    Fact("rmsnorm", 1, "normalise with RMSNorm (no mean subtracted, no bias)", lambda c: c.norm == "rmsnorm",
         lambda c: f"norm: {c.norm}"),
    Fact("layernorm", 1, "normalise with LayerNorm", lambda c: c.norm == "layernorm", lambda c: f"norm: {c.norm}"),
    Fact("swiglu", 1, "use a gated SwiGLU feed-forward (three weight matrices)", lambda c: c.ffn == "swiglu",
         lambda c: f"feed-forward: {c.ffn}"),
    Fact("gelu", 1, "use a two-matrix GELU feed-forward", lambda c: c.ffn == "gelu", lambda c: f"feed-forward: {c.ffn}"),
    Fact("moe", 2, "route each token to a few of many experts (mixture of experts)", lambda c: c.n_experts > 1,
         lambda c: f"n_experts = {c.n_experts}, top_k = {c.top_k}"),
    Fact("window", 2, "restrict attention to a sliding window", lambda c: c.sliding_window > 0,
         lambda c: f"sliding_window = {c.sliding_window}"),
    Fact("tied", 2, "tie the output projection to the token embedding matrix", lambda c: c.lm_head and c.tied_embeddings,
         lambda c: f"LM head: {'yes' if c.lm_head else 'none'}, tied = {c.tied_embeddings}"),
    Fact("untied", 2, "have an output projection separate from the token embedding", lambda c: c.lm_head and not c.tied_embeddings,
         lambda c: f"LM head: {'yes' if c.lm_head else 'none'}, tied = {c.tied_embeddings}"),
    Fact("mla", 2, "cache a compressed latent in place of per-head keys and values (multi-head latent attention)",
         lambda c: c.is_mla, _attn),
)


def zoo() -> list:
    """The published models of the zoo (the seed texts' tutorial models left out)."""
    from solver.counting.presets import PRESETS

    return [p for p in PRESETS.values() if p.family != "seed"]


def _statement(fact: Fact, p) -> Statement:
    c = p.config
    ok = bool(fact.holds(c))
    return Statement(f"`{p.name}`", ok, f"`{p.name}`: {fact.fields(c)} ({p.source}):", (p.name, fact.id))


def _one_per_family(d: Draw, presets: list, fact: Fact) -> list[Statement]:
    """A pool with one preset per model family, shuffled with the draw."""
    by_fam: dict[str, list] = {}
    for p in presets:
        by_fam.setdefault(p.family, []).append(p)
    return [_statement(fact, d.pick(ps)) for _, ps in sorted(by_fam.items())]


def _even_odds(d: Draw, pool: list[Statement], facts: list[Fact], k: int, n: int = 4) -> list[Statement] | None:
    """``k`` true and ``n - k`` false options of ``pool``, each model drawn with odds that even out how often
    it is offered as a true and as a false option over the level's facts (issue 39: among the hard facts
    ``deepseek-v3`` holds three of five and ``gpt2`` one, so a test-wise student who remembers which names
    were keys before, reading nothing of the question, found the key set 19 % of the time against 8 %).
    A true option is drawn with weight 1/(the facts its model has)², a false one with 1/(the facts it lacks)²;
    models that have none or all of the level's facts are left out. None when the pool cannot."""
    from solver.counting.presets import PRESETS

    def odds(s: Statement) -> tuple[int, int]:
        c = PRESETS[s.params[0]].config
        has = sum(1 for f in facts if f.holds(c))
        return has, len(facts) - has

    def draw(items: list[Statement], weight: list[float], m: int) -> list[Statement] | None:
        items, weight, out = list(items), list(weight), []
        if len(items) < m:
            return None
        for _ in range(m):
            i = d.rng.choices(range(len(items)), weights=weight)[0]
            out.append(items.pop(i))
            weight.pop(i)
        return out

    pool = [s for s in pool if 0 not in odds(s)]
    trues = [s for s in pool if s.true]
    falses = [s for s in pool if not s.true]
    t = draw(trues, [1 / odds(s)[0] ** 2 for s in trues], k)
    f = draw(falses, [1 / odds(s)[1] ** 2 for s in falses], n - k)
    return None if t is None or f is None else t + f


@family("zoo.which_models", topic="architecture", title="Which of these models …? (facts of the zoo)",
        types=("msq",), tags=("zoo", "architecture", "msq", "concept"), source=_SRC)
def which_models(d: Draw) -> Problem:
    """A fact of :data:`FACTS` asked of four presets; each option's truth read from its ModelConfig.

    Levels (disjoint, ordered by what the fact needs): easy, encoder/decoder, positions and where
    the norm sits; medium, the attention variant, the norm and the feed-forward; hard, experts,
    sliding windows, tied embeddings and latent attention."""
    k = true_count(d)
    facts = [f for f in FACTS if f.level == d.level]
    for _ in range(200):
        fact = d.pick(facts)
        pool = _one_per_family(d, zoo(), fact)
        if d.level == 2:
            pool = _even_odds(d, pool, facts, k)
        got = computed_msq(d, pool, k) if pool is not None else None
        if got is not None:
            break
    assert got is not None, "every fact holds for some families and not for others"
    items, key = got
    st = Doc()
    st.p(f"Which of these models {fact.asks}? Each is configured as its paper or released configuration "
         "describes it. Select all that apply.")
    return _msq_problem(d, st, items, key, "Each model's configuration, the fields that decide it, and its source:",
                        given={"fact": fact.id, "option_values": [s.params[0] for s in items]}, tags=("zoo",))


def _balanced(d: Draw, right: list[Statement], wrong: list[Statement], rank: int, numbered: int, key_numbered: bool,
              n: int = 4) -> list[Statement] | None:
    """A key from ``right`` and ``n - 1`` distractors from ``wrong`` such that the key is the
    ``rank``-th shortest option (ties excluded), ``numbered`` options print a number (``7b`` in
    ``llama2-7b``), the key among them when ``key_numbered``; None if the pool cannot."""
    from question_bank.quality import printed_numbers  # the one rule of what counts as a printed number

    size = lambda s: len(latex_to_text(s.md))  # noqa: E731 - what the student sees
    has_num = lambda s: bool(printed_numbers(latex_to_text(s.md)))  # noqa: E731
    combos = []
    for r in right:
        if has_num(r) != key_numbered:
            continue
        for ws in itertools.combinations(wrong, n - 1):
            if (sum(size(w) < size(r) for w in ws) == rank and sum(size(w) > size(r) for w in ws) == n - 1 - rank
                    and sum(map(has_num, ws)) == numbered - key_numbered):
                combos.append((r, *ws))
    if not combos:
        return None
    items = list(d.pick(combos))
    d.rng.shuffle(items)
    return items


@family("zoo.which_model", topic="architecture", title="Which one of these models …? (facts of the zoo)",
        types=("mcq",), tags=("zoo", "architecture", "concept"), source=_SRC)
def which_model(d: Draw) -> Problem:
    """A fact of :data:`FACTS` that exactly one of four presets has; the key read from the configs.

    Levels as :func:`which_models`. What the key's name looks like is drawn before the fact (issue
    22: the facts one model of four has are mostly the older models', named ``bert-large``, not
    ``llama2-7b``): its length rank among the options, uniformly, so the longest or shortest name
    scores at chance; how many options print a number (0 to 3), and whether the key is one of
    them with that share, so "the name with (or without) a number" scores at chance too."""
    facts = [f for f in FACTS if f.level == d.level]
    rank = d.rng.randrange(4)
    numbered = d.rng.randrange(4)
    key_numbered = d.rng.random() < numbered / 4
    for _ in range(300):
        fact = d.pick(facts)
        pool = _one_per_family(d, zoo(), fact)
        items = _balanced(d, [s for s in pool if s.true], [s for s in pool if not s.true], rank, numbered, key_numbered)
        if items is not None:
            break
    else:  # pragma: no cover - every level has, for each rank and count, a fact one family has and three do not
        raise ValueError("no fact with one model that has it")
    options = [s.md for s in items]
    key = ChoiceKey(frozenset(i for i, s in enumerate(items) if s.true))
    options_text = [latex_to_text(o) for o in options]
    st = Doc()
    st.p(f"Which of these models {fact.asks}? Exactly one of them does. Each is configured as its paper or "
         "released configuration describes it.")
    sol = Doc()
    sol.p("Each model's configuration, the fields that decide it, and its source:")
    sol.bullets([f"({LETTERS[i]}) {s.working_md} **{'yes' if s.true else 'no'}.**" for i, s in enumerate(items)],
                [latex_to_text(f"({LETTERS[i]}) {s.working_md} {'yes' if s.true else 'no'}.") for i, s in enumerate(items)])
    ans = answer_text(key, options_text)
    sol.p(f"**Answer:** {ans}", f"Answer: {ans}")
    return d.problem(type="mcq", statement=st, key=key, solution=sol, options=options, options_text=options_text,
                     given={"fact": fact.id, "option_values": [s.params[0] for s in items]}, tags=("zoo",))
