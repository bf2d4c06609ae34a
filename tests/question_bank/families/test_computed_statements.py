"""The MSQs of computed statements (issue 26): every option's truth recomputed another way.

- KV cache: the cache a model would allocate, as torch tensors on the meta device (L × 2 × B ×
  n_kv × n × d_h of the option's dtype: ``numel() * element_size()``), against the budget;
- masks: the attention weights of a softmax over random scores with the mask written here with
  torch primitives (``tril``, index comparisons), the weight on (i, j) non-zero or zero;
- matmuls: the roofline times, FLOPs / peak against bytes / bandwidth, with the chips' figures
  typed from their datasheets (``tests.family_helpers.CHIPS``).

Plus: 1 to 4 of the 4 options true (every size, weighted as the 15 non-empty sets are), sound (audit), deterministic, and one pinned hand-worked variant.
"""

from __future__ import annotations

import math

import pytest
import torch

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import audit_problem, grade
from tests.family_helpers import CHIPS, variants

IDS = ("msq.kv_cache_below", "msq.mask_attend", "msq.matmul_compute_bound", "msq.model_statements",
       "msq.attention_vs_recurrence")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8}


def test_key_sets_of_every_size_each_set_as_likely():
    """A key set is drawn uniformly from the 15 non-empty sets of four options: sizes 1 to 4 in the ratio
    C(4, k) = 4 : 6 : 4 : 1, all true included (a chi-squared bound at 3,000 draws; an even draw of the size,
    1 to 3, fails it), and in each MSQ family's own draws every size occurs."""
    from question_bank.families.computed_statements import true_count
    from question_bank.family import Draw

    d = Draw(FAMILIES["msq.kv_cache_below"], 7, "easy")
    n = 3000
    seen = [0] * 5
    for _ in range(n):
        seen[true_count(d)] += 1
    assert seen[0] == 0
    expected = [n * math.comb(4, k) / 15 for k in range(1, 5)]
    chi2 = sum((o - e) ** 2 / e for o, e in zip(seen[1:], expected, strict=True))
    assert chi2 < 16.3, (seen, chi2)  # 3 degrees of freedom, p = 0.001
    for fid in IDS:
        sizes = {len(FAMILIES[fid].generate(s, "easy").key.correct) for s in range(120)}
        assert sizes == {1, 2, 3, 4}, (fid, sizes)


def truths(p):
    return [i in p.key.correct for i in range(len(p.options))]


@pytest.mark.parametrize("fid", IDS)
def test_sound_msq(fid):
    for p in variants(fid, per_difficulty=6):
        assert p.type == "msq" and len(p.options) == 4, p.id
        assert 1 <= len(p.key.correct) <= 4, p.id
        assert audit_problem(p) == [], p.id
        assert grade(p, set(p.key.correct)).correct
        assert len(p.key.correct) == 4 or not grade(p, set(range(4))).correct
        again = FAMILIES[fid].generate(p.seed, p.difficulty)
        assert (again.statement_md, again.options, again.key) == (p.statement_md, p.options, p.key)


def _meta_cache_bytes(L, B, n, kv, dh, dtype):
    t = torch.empty((L, 2, B, kv, n, dh), dtype=DTYPES[dtype], device="meta")
    return t.numel() * t.element_size()


def test_kv_cache_truth_from_meta_tensors():
    for p in variants("msq.kv_cache_below", per_difficulty=8):
        g = p.given
        for (L, h, kv, dh, dt, budget_mib, said), truth in zip(g["option_params"], truths(p), strict=True):
            if p.difficulty == "easy":
                assert kv == h  # multi-head attention: every head caches K and V
            size = _meta_cache_bytes(L, g["batch"], g["n"], kv, dh, dt)
            below = size < budget_mib * 2**20
            # issue 39: the budget a factor 1.25 to 2.5 from the cache, either side (within its 3 printed figures)
            assert 1.24 <= max(size, budget_mib * 2**20) / min(size, budget_mib * 2**20) <= 2.52, (p.id, size, budget_mib)
            assert said in ("below", "above")
            assert (below == (said == "below")) == truth, (p.id, L, kv, dh, dt, said)


def _keep(kind, a, n):
    """KEEP masks written from their definitions (1-based tokens: row i, column j)."""
    i = torch.arange(1, n + 1)[:, None]
    j = torch.arange(1, n + 1)[None, :]
    return {
        "causal": torch.tril(torch.ones(n, n, dtype=torch.bool)),
        "none": torch.ones(n, n, dtype=torch.bool),
        "padding": (j <= a).expand(n, n),
        "causal_padding": (j <= i) & (j <= a),
        "window": (j <= i) & (j > i - a),
        "window_both": (i - j).abs() < a,
        "prefix": (j <= i) | (j <= a),
    }[kind]


def test_mask_truth_from_softmax_weights():
    gen = torch.Generator().manual_seed(0)
    for p in variants("msq.mask_attend", per_difficulty=10):
        g = p.given
        n, qi, kj = g["n"], g["query"], g["key"]
        for (kind, a, said), truth in zip(g["option_params"], truths(p), strict=True):
            scores = torch.randn(n, n, generator=gen, dtype=torch.float64)
            w = torch.softmax(scores.masked_fill(~_keep(kind, a, n), float("-inf")), dim=-1)
            assert said in ("keeps", "drops")
            assert ((w[qi - 1, kj - 1].item() > 0) == (said == "keeps")) == truth, (p.id, kind, a, said)


def test_matmul_truth_from_roofline_times():
    for p in variants("msq.matmul_compute_bound", per_difficulty=8):
        peak, bw, _ = CHIPS[p.given["hw"]]
        for (B, D, F, said), truth in zip(p.given["option_params"], truths(p), strict=True):
            if p.difficulty != "hard":
                assert D == F
            t_compute = 2 * B * D * F / peak
            t_memory = 2 * (B * D + D * F + B * F) / bw
            assert said in ("FLOPs", "bytes")
            assert ((t_compute > t_memory) == (said == "FLOPs")) == truth, (p.id, B, D, F, said)


def test_matmul_shapes_sit_near_the_ridge_below_hard():
    """Issue 39: at easy and medium each option's compute and memory times (from the chip's table here, not the
    solver) are within a factor 1.5 of each other (and at least 1.2 apart): a shape far from the ridge (a batch of
    8,192, or of 128) is compute- or memory-bound on every chip, and its size alone gave the verdict away."""
    for p in variants("msq.matmul_compute_bound", per_difficulty=10):
        if p.difficulty == "hard":
            continue
        peak, bw, _ = CHIPS[p.given["hw"]]
        for B, D, F, _said in p.given["option_params"]:
            ratio = (2 * B * D * F / peak) / (2 * (B * D + D * F + B * F) / bw)
            assert 1 / 1.5 < ratio < 1.5 and not 1 / 1.2 < ratio < 1.2, (p.id, B, D, F, ratio)


def test_matmul_options_share_every_word():
    """Issue 39: each option names both verdicts, the claimed one first ("its FLOPs, not its bytes"), so all four
    options of a draw are made of the same words (numbers aside) and of the same length up to their digits: which
    options share a verdict is not read off their common words (with the shapes' sizes that gave the key up to its
    complement, and a learned attacker 6 points over chance)."""
    import re

    for p in variants("msq.matmul_compute_bound", per_difficulty=10):
        words = [sorted(re.findall(r"[A-Za-z]+", re.sub(r"\d+", "", o))) for o in p.options_text]
        assert all(w == words[0] for w in words), (p.id, p.options_text)
        for (_B, _D, _F, said), text in zip(p.given["option_params"], p.options_text, strict=True):
            other = "bytes" if said == "FLOPs" else "FLOPs"
            assert text.endswith(f"its {said}, not its {other}"), (p.id, text)


def test_levels_ask_what_they_say():
    """Medium windows, hard prefix-LM or bidirectional windows: each level brings its own masks."""
    for p in variants("msq.mask_attend", per_difficulty=10):
        kinds = {prm[0] for prm in p.given["option_params"]}
        if p.difficulty == "easy":
            assert kinds <= {"causal", "none", "padding", "causal_padding"}
        elif p.difficulty == "medium":
            assert "window" in kinds and not kinds & {"window_both", "prefix"}
        else:
            assert kinds & {"window_both", "prefix"}


def test_pinned_mask_rules():
    """By hand, n = 8, query 3, key 5 (a later token): a causal mask blocks it (5 > 3); no mask keeps
    it; padding with 6 real tokens keeps it (5 ≤ 6), with 4 blocks it; a causal window of 3 blocks
    it (keys 1 < j ≤ 3); a bidirectional window of 3 keeps it (|3 − 5| = 2 < 3); a prefix of 5
    keeps it (5 ≤ 5), a prefix of 4 blocks it."""
    from question_bank.families.computed_statements import _keep as family_keep

    expected = {("causal", 0): False, ("none", 0): True, ("padding", 6): True, ("padding", 4): False,
                ("causal_padding", 6): False, ("window", 3): False, ("window_both", 3): True,
                ("prefix", 5): True, ("prefix", 4): False}
    for (kind, a), want in expected.items():
        assert family_keep(kind, 8, a, 3, 5) is want, (kind, a)


def test_pinned_kv_cache_line():
    """By hand: 2 × 16 layers × 1 sequence × 32768 tokens × 8 K/V heads × 64 × 2 bytes
    = 2 · 2⁴ · 2¹⁵ · 2³ · 2⁶ · 2 = 2³⁰ bytes, exactly 1 GiB (not below a 1 GiB budget);
    12 layers: 12 · 2²⁶ = 805,306,368 bytes = 0.75 GiB (below)."""
    from solver.counting.memory import kv_cache_bytes

    assert kv_cache_bytes(16, 1, 32768, 8, 64, "bf16") == 2**30
    assert kv_cache_bytes(12, 1, 32768, 8, 64, "bf16") == 805_306_368


def _reference_figures(name, nbytes):
    """Heads, head size, cache per token and parameters read from the reference model on the meta
    device: the K projection's output width is n_kv · d_h, the Q projection's n_heads · d_h."""
    from solver.counting.presets import get_config
    from solver.models import build_model

    cfg = get_config(name)
    m = build_model(cfg)
    shapes = dict((n, tuple(p.shape)) for n, p in m.named_parameters())
    q_out = shapes["decoder.layers.0.attn.q.weight"][0]
    k_out, k_in = shapes["decoder.layers.0.attn.k.weight"]
    layers = sum(1 for n in shapes if n.endswith(".attn.k.weight"))
    d_h = q_out // cfg.n_heads
    attn = sum(math.prod(shapes[f"decoder.layers.0.attn.{w}.weight"]) for w in ("q", "k", "v", "o"))
    assert d_h == q_out // cfg.n_heads
    return {1: k_out * k_in, 2: attn, 3: 2 * layers * k_out * nbytes,
            4: sum(p.numel() for p in m.parameters())}


@pytest.mark.slow
def test_model_statements_from_the_reference_model():
    cache = {}
    for p in variants("msq.model_statements", per_difficulty=5):
        nbytes = {"fp16": 2, "bf16": 2, "fp8": 1}[p.given["dtype"]]
        name = p.given["model"]
        ref = cache.setdefault(name, _reference_figures(name, nbytes))
        for (kind, figure, said), truth, text in zip(p.given["option_params"], truths(p), p.options_text, strict=True):
            assert said in ("above", "below") and said in text
            # the figure stands a factor 1.2 to 1.9 away from the reference's, either side (never a slip's half or
            # double; issue 39: at varying distances), within the rounding of the printed figure
            ratio = figure / ref[kind]
            assert 1 / 1.92 <= ratio <= 1 / 1.19 or 1.19 <= ratio <= 1.92, (p.id, kind, figure)
            assert ((ref[kind] > figure) == (said == "above")) == truth, (p.id, kind, figure, said, ref[kind])


def _rnn_steps(m):
    """Simulated: the set of tokens each state depends on, grown one recurrence step at a time; the
    step at which token 1 enters the state of token m."""
    deps = {1: {1}}
    for t in range(2, m + 1):
        deps[t] = deps[t - 1] | {t}
    # token 1 reaches state t through the chain 1 -> 2 -> ... -> t: t - 1 applications of the cell
    steps, reach = 0, {1}
    while m not in reach:
        reach = reach | {t + 1 for t in reach}
        steps += 1
    assert 1 in deps[m]
    return steps


def _conv_reach(L, k, m):
    """Simulated: can token m + 1 depend on token 1 through L causal convolutions of kernel k?"""
    import numpy as np

    x = np.zeros(m + 1, dtype=bool)
    x[0] = True
    for _ in range(L):
        y = x.copy()
        for shift in range(1, k):
            y[shift:] |= x[:-shift]
        x = y
    return bool(x[m])


def _ops(n, d):
    """Multiply-adds counted from the shapes: QKᵀ (n×d by d×n) and AV (n×n by n×d) against n steps of
    W_h h + W_x x (two d×d matrix-vector products)."""
    attention = n * d * n + n * n * d
    recurrent = n * (d * d + d * d)
    return attention, recurrent


def test_recurrence_statements_by_simulation():
    gen = torch.Generator().manual_seed(1)
    for p in variants("msq.attention_vs_recurrence", per_difficulty=10):
        kinds = set()
        for prm, truth in zip(p.given["option_params"], truths(p), strict=True):
            kind = prm[0]
            kinds.add(kind)
            if kind == "reach_rnn":
                _, t, m, stated = prm
                assert (_rnn_steps(m - t + 1) == stated) == truth, (p.id, prm)  # token t as the chain's first
            elif kind == "causal":
                _, i, j = prm
                n = max(i, j)
                w = torch.softmax(torch.randn(n, n, generator=gen).masked_fill(
                    ~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf")), dim=-1)
                assert (w[i - 1, j - 1].item() > 0) == truth, (p.id, prm)
            elif kind == "ops":
                _, n, d, said = prm
                attention, recurrent = _ops(n, d)
                assert said in ("less", "more")
                assert ((attention < recurrent) == (said == "less")) == truth, (p.id, prm)
                assert ((n * n * d < n * d * d) == (said == "less")) == truth  # Table 1's count agrees
            else:
                _, L, k, m = prm
                assert _conv_reach(L, k, m) == truth, (p.id, prm)
        if p.difficulty == "medium":
            assert "ops" in kinds and "conv" not in kinds
        if p.difficulty == "hard":
            assert "conv" in kinds


def test_pinned_recurrence_rules():
    """By hand: token 1 reaches token 5's state after 4 recurrent steps; 2 convolutions of kernel 3
    reach 4 positions back (token 5 from token 1: yes; token 6: no); n = 256, d = 2048: 2·256²·2048
    = 268,435,456 multiply-adds against 2·256·2048² = 2,147,483,648, fewer for attention."""
    assert _rnn_steps(5) == 4
    assert _conv_reach(2, 3, 4) and not _conv_reach(2, 3, 5)
    assert _ops(256, 2048) == (268_435_456, 2_147_483_648)


@pytest.mark.parametrize(("fid", "words"), [("msq.kv_cache_below", {"below", "above"}),
                                            ("msq.mask_attend", {"keeps", "drops"}),
                                            ("msq.matmul_compute_bound", {"FLOPs", "bytes"}),
                                            ("msq.model_statements", {"above", "below"})])
def test_verdicts_are_true_and_false_both_ways(fid, words):
    """Issue 22: an option is a configuration and a verdict on it; each verdict is drawn true and false
    at every level (the wording never decides the truth), and the two verdicts have the same length."""
    assert len({len(w) for w in words}) == 1
    seen = {}
    for p in variants(fid, per_difficulty=12):
        for prm, truth, text in zip(p.given["option_params"], truths(p), p.options_text, strict=True):
            said = prm[-1]
            assert said in words and said in text, (p.id, prm)
            seen.setdefault(p.difficulty, set()).add((said, truth))
    for level, got in seen.items():
        assert got == {(w, t) for w in words for t in (True, False)}, (fid, level, got)


def test_recurrence_kinds_are_true_half_the_time():
    """Issue 22: each kind of statement is drawn true about as often as false, so which template an option
    comes from says nothing of its truth (a recurrent step count off by one either way, a convolution's token
    just within or just beyond its reach, "less" or "more" computation)."""
    from collections import Counter

    from question_bank.families.computed_statements import _recurrence_pool
    from question_bank.family import Draw

    counts: Counter = Counter()
    for seed in range(40):
        d = Draw(FAMILIES["msq.attention_vs_recurrence"], seed, "hard")
        for kind, st in _recurrence_pool(d, ["reach_rnn", "causal", "ops", "conv"]):
            counts[kind, st.true] += 1
    for kind in ("reach_rnn", "causal", "ops", "conv"):
        share = counts[kind, True] / (counts[kind, True] + counts[kind, False])
        assert 0.35 < share < 0.65, (kind, counts)
