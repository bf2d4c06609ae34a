"""An adversary who never reads the subject (issue 22): the attacks of ``qkv bank validate --quality``
beyond the fixed rules of :mod:`question_bank.quality`.

- **learned attacker** (:func:`learned_attack`), per MCQ/MSQ family level: logistic regression and
  gradient-boosted depth-2 trees, written in NumPy, trained on features of the options (length,
  words, numbers printed, position, overlap with the statement's tokens including subscripted
  symbols such as dₖ, the rank of an option's value among the options, its distance to the nearest
  printed number, ...) of some seeds and tested on other seeds; for a family with a small pool of
  right statements, also on draws whose right statement was never seen in training;
- **one- and two-operation rules** (:func:`operation_rules`) on the numbers printed in a NAT
  statement (superscripts such as ℝ⁶⁴ and 2¹⁰ are read), each a fixed recipe ("the 1st printed
  number over the 2nd", "half the largest"), scored per family level, and "type the smallest whole
  number ≥ 2 that is not printed", and "type the most common key" (one remembered number);
- **memorise easy, answer harder** (:func:`memory_attack`): the attacker remembers every easy draw
  (statement and key); at medium and hard it finds the easy draw whose statement shares the most
  numbers with the one in front of it and gives that key (a NAT value, or the option text);
- **variety** (:func:`distinct_problems`): how many distinct problems (statement, options, parts) a
  level holds in its draws, and what that means for 1,000 draws (:func:`pool_estimate`).
- **a test-wise student** (issue 39, in :func:`learned_attack`): each half of a level's draws scored by
  what the other half taught, then the other way round; the learners (:data:`LEARNERS`: logistic
  regression, histogram-boosted trees of depth 2 and 3) also read the options' structure
  (:func:`structure_features`: log position, hub, exact simple multiples, shared offsets, digits,
  values out of range, an option's number against the statement's, negation, word votes, unnamed
  symbols); key-pool memory (:func:`_pool_scores`); the fixed rules of :data:`RULES` (out of range,
  nearest/farthest a printed number and flipped on negation, named symbols). The figure is the best
  attacker's, and the learners' on draws whose key the other half never had as a key
  (:func:`gated_figures` says which figures are gated). ``bench/choice_attack.py`` measures every
  offered level at 500 draws into ``question_bank/data/choice_attack.json``.

Goals (:data:`LEARNED_MARGIN`, :data:`ONE_OP_LIMIT`, :data:`MIN_DISTINCT`): no rule, fixed or learned,
beats chance by more than 5 points on an MCQ/MSQ family level; no NAT level above easy is answered
by a one-operation rule (or by memorised easy answers) in more than 5 % of draws; every level has at
least 50 distinct problems in 1,000 draws unless the family declares why not
(``@family(..., small_pool="why")``). Small draws get a noise allowance of three standard errors.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from question_bank.problem import ChoiceKey, IntegerKey, NumericKey, Problem
from question_bank.quality import printed_numbers

__all__ = [
    "LEARNED_MARGIN", "ONE_OP_LIMIT", "MIN_DISTINCT", "printed_numbers", "option_features",
    "fit_logistic", "fit_boosted", "fit_hist_boosted", "structure_features", "learned_attack", "operation_rules", "memory_attack",
    "distinct_problems", "pool_estimate", "LevelAttack", "attack_family", "gated_figures",
]

#: How far above chance (absolute) a learned or fixed rule may score on an MCQ/MSQ level.
LEARNED_MARGIN = 0.05
#: The most draws of a NAT level above easy that one operation on printed numbers (or memorised
#: easy answers) may answer.
ONE_OP_LIMIT = 0.05
#: The most draws of a NAT level that one typed number (the most common key), or a rule that reads no
#: operation ("the smallest whole number >= 2 not printed"), may answer: a four-way guess. A count with a
#: small natural range (the tokens of a nucleus) cannot spread its keys much thinner.
ONE_NUMBER_LIMIT = 0.25
#: The fewest distinct problems a level must hold in 1,000 draws.
MIN_DISTINCT = 50
VARIETY_DRAWS = 1000


def allowance(base: float, n: int) -> float:
    """Three standard errors of a rate ``base`` measured on ``n`` draws (the noise a small draw
    is allowed on top of a margin)."""
    return 3 * math.sqrt(max(base * (1 - base), 0.0025) / max(n, 1))


# --------------------------------------------------------------------------------------------
# numbers printed in a statement, superscripts read

def _numbers_all(p: Problem) -> list[float]:
    texts = [p.statement_text, *(pt.prompt_text for pt in p.parts)]
    return [v for t in texts for v in printed_numbers(t)]


# --------------------------------------------------------------------------------------------
# option features

_WORD = re.compile(r"\w+")
_ABSOLUTE = re.compile(r"\b(always|never|only|cannot|all|none|every|impossible|exactly)\b", re.I)
_COMPARE = re.compile(r"[<>≤≥]")
FEATURES = ("chars", "chars_rank", "chars_rel", "words", "numbers", "position", "overlap", "overlap_frac",
            "overlap_short", "shared_others", "unique_words", "value_log", "value_rank", "is_max", "is_min",
            "is_median", "near_printed", "near_rank", "equals_printed", "one_op_of_printed", "absolute",
            "compare", "first_word_shared")


def _tokens(t: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(t)}


def _rank(xs: Sequence[float]) -> list[float]:
    n = len(xs)
    order = sorted(range(n), key=lambda i: xs[i])
    r = [0.0] * n
    for pos, i in enumerate(order):
        r[i] = pos / max(n - 1, 1)
    return r


def option_features(statement: str, options: Sequence[str]) -> np.ndarray:
    """One row of :data:`FEATURES` per option (what an attacker who never reads the subject sees)."""
    n = len(options)
    st_tok = _tokens(statement)
    st_nums = [v for v in printed_numbers(statement) if v != 0]
    toks = [_tokens(o) for o in options]
    chars = [float(len(o)) for o in options]
    mean_chars = sum(chars) / n or 1.0
    vals: list[float | None] = []
    for o in options:
        ns = printed_numbers(o)
        vals.append(ns[0] if ns else None)
    have_vals = all(v is not None for v in vals)
    fv = [float(v) if v is not None else 0.0 for v in vals]
    vrank = _rank(fv) if have_vals else [0.5] * n
    logs = [math.log10(abs(v)) if v else 0.0 for v in fv]

    def near(v: float) -> float:
        if not st_nums or v == 0:
            return 5.0
        return min(abs(math.log10(abs(v)) - math.log10(abs(s))) for s in st_nums)

    nears = [near(v) for v in fv] if have_vals else [5.0] * n
    one_op = set()
    for a, b in itertools.permutations(st_nums[:8], 2):
        one_op.update((a * b, a / b, a + b, a - b))
    for a in st_nums[:8]:
        one_op.update((a / 2, a * 2, a * a))

    def close(v: float, pool: set[float] | list[float]) -> float:
        return float(any(abs(v - q) <= 1e-3 * max(abs(v), abs(q), 1e-12) for q in pool))

    rows = []
    for i, o in enumerate(options):
        others = set().union(*(toks[j] for j in range(n) if j != i)) if n > 1 else set()
        words = o.split()
        first = words[0].lower() if words else ""
        rows.append([
            chars[i], _rank(chars)[i], chars[i] / mean_chars, float(len(words)), float(len(printed_numbers(o))),
            i / max(n - 1, 1), float(len(toks[i] & st_tok)), len(toks[i] & st_tok) / max(len(toks[i]), 1),
            float(sum(1 for t in toks[i] & st_tok if len(t) <= 3)),
            sum(len(toks[i] & toks[j]) for j in range(n) if j != i) / max(n - 1, 1), float(len(toks[i] - others)),
            logs[i], vrank[i], float(have_vals and fv[i] == max(fv)), float(have_vals and fv[i] == min(fv)),
            float(have_vals and 0 < vrank[i] < 1), nears[i], _rank(nears)[i],
            close(fv[i], st_nums) if have_vals else 0.0, close(fv[i], one_op) if have_vals else 0.0,
            float(bool(_ABSOLUTE.search(o))), float(bool(_COMPARE.search(o))),
            float(sum(1 for j in range(n) if j != i and (options[j].split() or [""])[0].lower() == first)),
        ])
    return np.asarray(rows, dtype=float)


# --------------------------------------------------------------------------------------------
# two learners, in NumPy


def fit_logistic(X: np.ndarray, y: np.ndarray, *, l2: float = 1.0, steps: int = 300) -> Any:
    """L2-regularised logistic regression by Newton's method; returns ``score(X) -> logits``."""
    mu, sd = X.mean(0), X.std(0) + 1e-9
    Z = np.hstack([(X - mu) / sd, np.ones((len(X), 1))])
    w = np.zeros(Z.shape[1])
    reg = l2 * np.eye(Z.shape[1])
    reg[-1, -1] = 0.0
    for _ in range(min(steps, 25)):
        p = 1 / (1 + np.exp(-np.clip(Z @ w, -30, 30)))
        g = Z.T @ (p - y) + reg @ w
        H = (Z * (p * (1 - p))[:, None]).T @ Z + reg + 1e-6 * np.eye(len(w))
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-6:
            break
    return lambda Xn: np.hstack([(Xn - mu) / sd, np.ones((len(Xn), 1))]) @ w


def _tree(X: np.ndarray, g: np.ndarray, h: np.ndarray, depth: int, cuts: list[np.ndarray], lam: float = 1.0) -> Any:
    """A regression tree on gradients ``g`` and hessians ``h`` (XGBoost's gain), ``depth`` levels."""
    leaf = -g.sum() / (h.sum() + lam)
    if depth == 0 or len(g) < 8:
        return leaf
    best = (0.0, None, None)
    base = g.sum() ** 2 / (h.sum() + lam)
    for f in range(X.shape[1]):
        col = X[:, f]
        for c in cuts[f]:
            m = col <= c
            gl, hl = g[m].sum(), h[m].sum()
            gr, hr = g.sum() - gl, h.sum() - hl
            gain = gl**2 / (hl + lam) + gr**2 / (hr + lam) - base
            if gain > best[0] + 1e-9:
                best = (gain, f, c)
    if best[1] is None:
        return leaf
    _, f, c = best
    m = X[:, f] <= c
    return (f, c, _tree(X[m], g[m], h[m], depth - 1, cuts, lam), _tree(X[~m], g[~m], h[~m], depth - 1, cuts, lam))


def _tree_predict(t: Any, X: np.ndarray) -> np.ndarray:
    if not isinstance(t, tuple):
        return np.full(len(X), t)
    f, c, lo, hi = t
    out = np.empty(len(X))
    m = X[:, f] <= c
    out[m] = _tree_predict(lo, X[m])
    out[~m] = _tree_predict(hi, X[~m])
    return out


def fit_boosted(X: np.ndarray, y: np.ndarray, *, rounds: int = 40, depth: int = 2, rate: float = 0.3) -> Any:
    """Gradient-boosted trees of ``depth`` (2: pairs of features, e.g. "nearest a printed number"
    and "says compute-bound") on the logistic loss; returns ``score(X) -> logits``."""
    cuts = [np.unique(np.quantile(X[:, f], np.linspace(0.05, 0.95, 12))) for f in range(X.shape[1])]
    trees = []
    F = np.zeros(len(X))
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-F))
        t = _tree(X, p - y, np.maximum(p * (1 - p), 1e-6), depth, cuts)
        trees.append(t)
        F += rate * _tree_predict(t, X)
    return lambda Xn: rate * sum((_tree_predict(t, Xn) for t in trees), np.zeros(len(Xn)))


# --------------------------------------------------------------------------------------------
# issue 39: a test-wise student's structural reading of the options, and attackers beyond the learner

#: Ratios a test-wise student checks between two options ("one is 1.5 times another").
SIMPLE_RATIOS = (1.25, 4 / 3, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 24.0, 32.0, 64.0, 100.0, 1000.0, 1024.0)
_NEG = re.compile(r"\b(false|not|incorrect|except|wrong|untrue|cannot)\b", re.I)
_UP = re.compile(r"\b(above|more|greater|larger|exceeds?|over|at least|higher)\b", re.I)
_DOWN = re.compile(r"\b(below|less|fewer|smaller|under|at most|lower)\b", re.I)
_SYMBOL = re.compile(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])|[^\x00-\x7f\s]\w*")
_BOUNDED = re.compile(r"\b(probabilit|weight|fraction|share|softmax|cosine|sine|utili[sz]ation|mfu|efficiency|accuracy)", re.I)
STRUCTURE = ("l_pos", "l_center", "hub_rank", "mult_up", "mult_down", "int_mult", "offset_pair", "ratio_pair",
             "gap_near", "gap_near_rank", "gap_far", "sig_digits", "sig_rank", "trailing_zeros", "pow2", "last_digit",
             "lead_digit", "is_int", "above_one", "negative", "printed_ratio", "printed_simple", "inner_ratio",
             "inner_simple", "direction", "negated", "lin_near_rank", "word_vote", "word_vote_min", "jaccard_max",
             "unnamed_symbols", "named_symbols", "lead2_shared")


def _is_simple(r: float, tol: float = 2e-3) -> float:
    if not math.isfinite(r) or r <= 0:
        return 0.0
    r = max(r, 1 / r)
    return float(any(abs(r / s - 1) <= tol for s in SIMPLE_RATIOS))


def _num_string(o: str) -> str:
    m = re.search(r"\d[\d,]*(?:\.\d+)?", o)
    return m.group(0).replace(",", "") if m else ""


def structure_features(statement: str, options: Sequence[str]) -> np.ndarray:
    """One row of :data:`STRUCTURE` per option: what a test-wise student reads from the options'
    shapes alone (issue 39): where an option sits among the others in log space, which option is an
    exact simple multiple of which, constant offsets shared by two pairs, digits, values a quantity
    cannot take, the option's number against the statement's (a threshold at ×0.75 of a printed
    figure), the direction a statement claims, the statement asking for the false one, which words
    an option shares with the others, and symbols the statement never names."""
    n = len(options)
    st_nums = [v for v in printed_numbers(statement) if v != 0]
    vals = []
    for o in options:
        ns = printed_numbers(o)
        vals.append(ns[0] if ns else None)
    have = all(v is not None for v in vals)
    fv = [float(v) if v is not None else 0.0 for v in vals]
    lg = [math.log10(abs(v)) if v else 0.0 for v in fv]
    lo, hi = (min(lg), max(lg)) if have else (0.0, 0.0)
    mean_l = sum(lg) / n
    hub = [sum(abs(lg[i] - lg[j]) for j in range(n)) for i in range(n)]
    gaps_near = [min((abs(lg[i] - lg[j]) for j in range(n) if j != i), default=0.0) for i in range(n)]
    gaps_far = [max((abs(lg[i] - lg[j]) for j in range(n) if j != i), default=0.0) for i in range(n)]
    pairs = list(itertools.permutations(range(n), 2))

    def shared(diff: Any, i: int, j: int, scale: float) -> float:
        d = diff(i, j)
        return float(any(abs(diff(k, m) - d) <= 1e-6 * scale for k, m in pairs if {k, m} != {i, j}))

    sigs = [len(_num_string(o).replace(".", "").strip("0")) for o in options]
    toks = [_tokens(o) for o in options]
    st_low = statement.lower()
    negated = float(bool(_NEG.search(statement)))
    lin_near = [min((abs(v - s) for s in st_nums), default=0.0) for v in fv]
    lin_rank = _rank(lin_near)
    lead2 = [_num_string(o).lstrip("0.")[:2] for o in options]
    rows = []
    for i, o in enumerate(options):
        v = fv[i]
        others = [j for j in range(n) if j != i]
        ratio = [fv[j] / v if v else 0.0 for j in others]
        ns = printed_numbers(o)
        inner = ns[1] / ns[0] if len(ns) >= 2 and ns[0] else 0.0
        near_s = min(st_nums, key=lambda s: abs(math.log10(abs(s)) - lg[i])) if st_nums and v else 0.0
        pr = math.log10(abs(v / near_s)) if near_s and v else 0.0
        iv = int(round(v)) if have and abs(v - round(v)) < 1e-9 and abs(v) < 1e15 else 0
        s_int = _num_string(o).split(".")[0]
        # sorted: a float sum in set order differs in its last bits between processes (hash seeds)
        votes = [sum(1 for j in others if t in toks[j]) / max(len(others), 1) for t in sorted(toks[i])] or [0.0]
        jac = max((len(toks[i] & toks[j]) / max(len(toks[i] | toks[j]), 1) for j in others), default=0.0)
        syms = set(_SYMBOL.findall(o))
        direction = float(bool(_UP.search(o))) - float(bool(_DOWN.search(o)))
        rows.append([
            (lg[i] - lo) / (hi - lo) if have and hi > lo else 0.5, lg[i] - mean_l if have else 0.0,
            _rank(hub)[i] if have else 0.5,
            float(sum(1 for r in ratio if r > 1 and _is_simple(r))) if have else 0.0,
            float(sum(1 for r in ratio if 0 < r < 1 and _is_simple(r))) if have else 0.0,
            float(sum(1 for r in ratio if r and (abs(r - round(r)) < 1e-9 or abs(1 / r - round(1 / r)) < 1e-9))) if have and v else 0.0,
            float(sum(shared(lambda a, b: fv[b] - fv[a], i, j, max(map(abs, fv)) or 1.0) for j in others)) if have else 0.0,
            float(sum(shared(lambda a, b: lg[b] - lg[a], i, j, 1.0) for j in others)) if have else 0.0,
            gaps_near[i], _rank(gaps_near)[i], gaps_far[i], float(sigs[i]), _rank([float(s) for s in sigs])[i],
            float(len(s_int) - len(s_int.rstrip("0"))) if s_int.strip("0") else 0.0,
            float(min((iv & -iv).bit_length() - 1, 24)) if iv else 0.0,
            float(int(_num_string(o).replace(".", "").rstrip("0")[-1:] or 0)), float(int(_num_string(o).lstrip("0.")[:1] or 0)),
            float(bool(iv)), float(have and v > 1 and bool(_BOUNDED.search(st_low))) + float(have and "%" in o and v > 100),
            float(have and v < 0), pr, float(any(_is_simple(v / s) for s in st_nums)) if v else 0.0,
            math.log10(abs(inner)) if inner else 0.0, _is_simple(inner) if inner else 0.0,
            direction, negated, lin_rank[i] if have else 0.5,
            sum(votes) / len(votes), min(votes), jac,
            float(sum(1 for s in syms if s not in statement)), float(sum(1 for s in syms if s in statement)),
            float(sum(1 for j in others if lead2[j] and lead2[j] == lead2[i])),
        ])
    return np.asarray(rows, dtype=float)


def fit_hist_boosted(X: np.ndarray, y: np.ndarray, *, rounds: int = 80, depth: int = 3, rate: float = 0.2,
                     bins: int = 16, lam: float = 1.0, min_leaf: float = 3.0) -> Any:
    """Gradient-boosted trees on binned features (as scikit-learn's HistGradientBoostingClassifier,
    in NumPy): ``depth`` 3 reads interactions of three features ("asked for the false one", "the
    option nearest the printed number", "an exact multiple of another option"); returns
    ``score(X) -> logits``."""
    cuts = [np.unique(np.quantile(X[:, f], np.linspace(0, 1, bins + 1)[1:-1])) for f in range(X.shape[1])]
    Xb = np.column_stack([np.searchsorted(cuts[f], X[:, f], side="left") for f in range(X.shape[1])])

    def grow(idx: np.ndarray, g: np.ndarray, h: np.ndarray, d: int) -> Any:
        G, H = g[idx].sum(), h[idx].sum()
        leaf = -G / (H + lam)
        if d == 0 or len(idx) < 2 * min_leaf:
            return leaf
        best = (1e-9, -1, -1)
        base = G * G / (H + lam)
        for f in range(Xb.shape[1]):
            nb = len(cuts[f]) + 1
            if nb < 2:
                continue
            b = Xb[idx, f]
            gl = np.cumsum(np.bincount(b, g[idx], nb))[:-1]
            hl = np.cumsum(np.bincount(b, h[idx], nb))[:-1]
            ok = (hl >= min_leaf * 0.1) & (H - hl >= min_leaf * 0.1)
            gain = np.where(ok, gl**2 / (hl + lam) + (G - gl) ** 2 / (H - hl + lam) - base, 0.0)
            k = int(np.argmax(gain))
            if gain[k] > best[0]:
                best = (float(gain[k]), f, k)
        if best[1] < 0:
            return leaf
        _, f, k = best
        m = Xb[idx, f] <= k
        return (f, k, grow(idx[m], g, h, d - 1), grow(idx[~m], g, h, d - 1))

    def predict(t: Any, B: np.ndarray) -> np.ndarray:
        if not isinstance(t, tuple):
            return np.full(len(B), t)
        f, k, lo_, hi_ = t
        out = np.empty(len(B))
        m = B[:, f] <= k
        out[m] = predict(lo_, B[m])
        out[~m] = predict(hi_, B[~m])
        return out

    trees = []
    F = np.zeros(len(X))
    idx = np.arange(len(X))
    for _ in range(rounds):
        p = 1 / (1 + np.exp(-F))
        t = grow(idx, p - y, np.maximum(p * (1 - p), 1e-6), depth)
        trees.append(t)
        F += rate * predict(t, Xb)

    def score(Xn: np.ndarray) -> np.ndarray:
        B = np.column_stack([np.searchsorted(cuts[f], Xn[:, f], side="left") for f in range(Xn.shape[1])])
        return rate * sum((predict(t, B) for t in trees), np.zeros(len(Xn)))

    return score


def _key_texts(p: Problem) -> list[str]:
    opts = p.options_text or p.options
    return [opts[i] for i in sorted(p.key.correct)]  # type: ignore[union-attr]


def _pool_scores(train: Sequence[Problem]) -> Any:
    """Key-pool memory: how often each option text was a key in ``train``, against how often it was
    offered (a text never seen scores as a random option)."""
    keyed: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    for p in train:
        keyed.update(_key_texts(p))
        shown.update(p.options_text or p.options)

    def score(p: Problem) -> np.ndarray:
        k = len(p.key.correct) / len(p.options)  # type: ignore[union-attr]
        return np.asarray([(keyed[o] + k) / (shown[o] + 1) for o in (p.options_text or p.options)])

    return score


def _range_scores(F: np.ndarray) -> np.ndarray:
    """Out of range: an option no quantity of its kind can be (a weight or probability above 1, a
    percentage above 100, a negative count) is struck out; the others tie. ``F``: the draw's
    :func:`structure_features`."""
    bad = F[:, STRUCTURE.index("above_one")] + F[:, STRUCTURE.index("negative")]
    return -bad


def _near_far_scores(F: np.ndarray, farthest: bool, flip_on_negation: bool) -> np.ndarray:
    """The option whose number is nearest (or farthest from) a number printed in the statement; with
    ``flip_on_negation``, the other way round when the statement asks for the false one."""
    r = F[:, STRUCTURE.index("lin_near_rank")]
    far = farthest != (flip_on_negation and bool(F[0, STRUCTURE.index("negated")]))
    return r if far else -r


def _symbol_scores(F: np.ndarray) -> np.ndarray:
    """Named symbols: the option with the fewest symbols the statement does not name, then the most it names."""
    return -F[:, STRUCTURE.index("unnamed_symbols")] + 0.01 * F[:, STRUCTURE.index("named_symbols")]


RULES: dict[str, Any] = {
    "out-of-range options struck out": _range_scores,
    "nearest a printed number": lambda F: _near_far_scores(F, False, False),
    "farthest from a printed number": lambda F: _near_far_scores(F, True, False),
    "nearest if asked true, farthest if asked false": lambda F: _near_far_scores(F, False, True),
    "farthest if asked true, nearest if asked false": lambda F: _near_far_scores(F, True, True),
    "the symbols the statement names": _symbol_scores,
}


# --------------------------------------------------------------------------------------------
# the learned attack


def _choice_credit(kind: str, scores: np.ndarray, key: frozenset[int], k: int) -> float:
    """Credit of the attacker's pick: the top option (ties shared) for an MCQ; the top ``k`` for an
    MSQ (right only when it is exactly the key)."""
    if kind == "msq":
        pick = frozenset(int(i) for i in np.argsort(-scores, kind="stable")[:k])
        return 1.0 if pick == key else 0.0
    top = np.flatnonzero(scores >= scores.max() - 1e-9)
    return sum(1 for i in top if int(i) in key) / len(top)


def _msq_chance(problems: Sequence[Problem]) -> float:
    sizes = Counter(len(p.key.correct) for p in problems)  # type: ignore[union-attr]
    n = max(len(p.options) for p in problems)
    return max(c / len(problems) / math.comb(n, k) for k, c in sizes.items())


def choice_chance(problems: Sequence[Problem]) -> float:
    if problems[0].type == "msq":
        return _msq_chance(problems)
    return sum(1 / len(p.options) for p in problems) / len(problems)


@dataclass
class Learned:
    rate: float  # the best attacker's score on held-out draws (each half scored by what the other half taught)
    model: str  # the best attacker
    n: int  # held-out draws
    unseen_rate: float | None = None  # on draws whose right statement training never saw
    unseen_n: int = 0
    attackers: dict[str, float] = field(default_factory=dict)  # every attacker's score on the held-out draws
    unseen_key_rate: float | None = None  # the learners' best on draws whose key text the other half never had as a key
    unseen_key_n: int = 0
    numeric: bool = False  # every option a number: remembering a key is no knowledge of the subject


def _featurise(problems: Sequence[Problem]) -> list[np.ndarray]:
    return [np.hstack([option_features(p.statement_text, p.options_text or p.options),
                       structure_features(p.statement_text, p.options_text or p.options)]) for p in problems]


def _score(fit: Any, kind: str, feats: list[np.ndarray], problems: Sequence[Problem], k: int) -> float:
    return float(np.mean(_credits(fit, kind, feats, problems, k)))


def _credits(fit: Any, kind: str, feats: list[np.ndarray], problems: Sequence[Problem], k: int) -> np.ndarray:
    return np.asarray([_choice_credit(kind, fit(F), p.key.correct, k)  # type: ignore[union-attr]
                       for F, p in zip(feats, problems, strict=True)])


LEARNERS: dict[str, Any] = {
    "logistic regression": fit_logistic,
    "boosted trees": lambda X, y: fit_hist_boosted(X, y, depth=2, rounds=40, rate=0.3),
    "boosted trees (depth 3)": lambda X, y: fit_hist_boosted(X, y, depth=3, rounds=60, rate=0.25),
}


def learned_attack(problems: Sequence[Problem]) -> Learned | None:
    """Every attacker of a choice level, trained on one half of the draws (even seeds) and scored on
    the other, then the other way round, so every draw is scored once by an attacker that never saw
    it: the learners of :data:`LEARNERS` over :func:`option_features` and :func:`structure_features`,
    key-pool memory (:func:`_pool_scores`) and the fixed rules of :data:`RULES`; the figure is the
    best attacker's. Also the learners on draws whose key text the other half never had as a key,
    and, when the right statements repeat, on draws whose right statement is held out of training."""
    ps = [p for p in problems if isinstance(p.key, ChoiceKey) and p.type in ("mcq", "msq")]
    if len(ps) < 20:
        return None
    kind = ps[0].type
    k = Counter(len(p.key.correct) for p in ps).most_common(1)[0][0]  # type: ignore[union-attr]
    feats = _featurise(ps)

    def train(idx: Sequence[int]) -> list[tuple[str, Any]]:
        X = np.vstack([feats[i] for i in idx])
        y = np.concatenate([[1.0 if j in ps[i].key.correct else 0.0 for j in range(len(feats[i]))]  # type: ignore[union-attr]
                            for i in idx])
        if y.min() == y.max():
            return []
        return [(name, fit(X, y)) for name, fit in LEARNERS.items()]

    halves = [list(range(0, len(ps), 2)), list(range(1, len(ps), 2))]
    credit: dict[str, np.ndarray] = {}
    for tr, te in [(halves[0], halves[1]), (halves[1], halves[0])]:
        models = train(tr)
        if not models:
            return None
        tps = [ps[i] for i in te]
        tf = [feats[i] for i in te]
        got = {name: _credits(f, kind, tf, tps, k) for name, f in models}
        pool = _pool_scores([ps[i] for i in tr])
        got["key-pool memory"] = np.asarray([_choice_credit(kind, pool(p), p.key.correct, k) for p in tps])  # type: ignore[union-attr]
        for name, rule in RULES.items():  # on the structure columns of the draw's features
            got[name] = np.asarray([_choice_credit(kind, rule(F[:, -len(STRUCTURE):]), p.key.correct, k)  # type: ignore[union-attr]
                                    for F, p in zip(tf, tps, strict=True)])
        seen = {t for i in tr for t in _key_texts(ps[i])}
        got["_unseen_key"] = np.asarray([all(t not in seen for t in _key_texts(p)) for p in tps], dtype=float)
        for name, c in got.items():
            credit.setdefault(name, np.zeros(len(ps)))[te] = c
    unseen_key = credit.pop("_unseen_key").astype(bool)
    rates = {name: float(c.mean()) for name, c in credit.items()}
    name = max(rates, key=lambda n: rates[n])
    numeric = all(printed_numbers(o) for p in ps for o in (p.options_text or p.options))
    out = Learned(rates[name], name, len(ps), attackers=rates, numeric=numeric)
    if unseen_key.sum() >= 20:
        out.unseen_key_rate = max(float(credit[n][unseen_key].mean()) for n in LEARNERS)
        out.unseen_key_n = int(unseen_key.sum())
    # unseen content: split the distinct right statements in two halves
    keytext = [" | ".join(_key_texts(p)) for p in ps]
    distinct = sorted(set(keytext))
    if 4 <= len(distinct) <= len(ps) // 4:
        held = set(distinct[1::2])
        tr2 = [i for i in range(len(ps)) if keytext[i] not in held]
        te2 = [i for i in range(len(ps)) if keytext[i] in held]
        models2 = train(tr2)
        if models2 and len(te2) >= 10:
            out.unseen_rate = max(_score(f, kind, [feats[i] for i in te2], [ps[i] for i in te2], k) for _, f in models2)
            out.unseen_n = len(te2)
    return out


def gated_figures(L: Learned) -> list[tuple[float, str, int]]:
    """The figures a choice level is gated on (each: rate, what, held-out draws), each to stay within
    chance + :data:`LEARNED_MARGIN` (+ three standard errors).

    - Options that are numbers (a numeric MCQ, a statement about a figure): the best attacker on
      every held-out draw, key-pool memory included (a value remembered as a key is no knowledge),
      and the learners on the draws whose key the other half never had as a key.
    - Options that are sentences: remembering a right statement is knowing it, so key-pool memory is
      left out; the best other attacker on every held-out draw, unless the right statements repeat
      (then the learners on held-out right statements, and the answer-blind rules of :data:`RULES`
      on every held-out draw: picking the option whose symbol the statement names learns nothing, so
      a repeated right statement is no excuse for it), and the learners on unseen keys."""
    out: list[tuple[float, str, int]] = []
    if L.numeric:
        out.append((L.rate, f"the best attacker ({L.model}) on held-out draws", L.n))
    elif L.unseen_rate is None:
        rest = {k: v for k, v in L.attackers.items() if k != "key-pool memory"} or {L.model: L.rate}
        name = max(rest, key=lambda k: rest[k])
        out.append((rest[name], f"the best attacker ({name}) on held-out draws", L.n))
    else:
        out.append((L.unseen_rate, "a learned attacker on draws whose right statement it never saw", L.unseen_n))
        rules = {k: v for k, v in L.attackers.items() if k in RULES}
        if rules:
            name = max(rules, key=lambda k: rules[k])
            out.append((rules[name], f"the best answer-blind rule ({name}) on held-out draws", L.n))
    if L.unseen_key_rate is not None:
        out.append((L.unseen_key_rate, "a learned attacker on draws whose key it never saw as a key", L.unseen_key_n))
    return out


# --------------------------------------------------------------------------------------------
# operation rules on printed numbers (NAT/integer levels)


def _key_of(p: Problem) -> NumericKey | IntegerKey | None:
    keys = [pt.key for pt in p.parts] or [p.key]
    for k in keys:
        if isinstance(k, NumericKey | IntegerKey):
            return k
    return None


def _accepts_vec(key: NumericKey | IntegerKey, v: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if isinstance(key, NumericKey):
            eps = 1e-9 * max(abs(key.lo), abs(key.hi), 1e-12)
            return (v >= key.lo - eps) & (v <= key.hi + eps)
        tol = max(key.rel_tol * abs(key.value), 1e-9 * max(abs(key.value), 1.0))
        return np.abs(v - key.value) <= tol


_REFS = 6  # printed numbers by position, plus the largest and the smallest
_UNARY = {"half": lambda a: a / 2, "double": lambda a: a * 2, "square": lambda a: a * a, "sqrt": np.sqrt,
          "2 to the": lambda a: np.where(a < 64, np.power(2.0, np.minimum(a, 64)), np.nan), "log2": np.log2,
          "inverse": lambda a: 1 / a, "cube": lambda a: a**3}
_BINARY = {"+": np.add, "−": np.subtract, "×": np.multiply, "÷": np.divide, "^": np.power}


def _refs(nums: list[float]) -> np.ndarray:
    nz = [v for v in nums if v != 0]
    pos = (nz + [math.nan] * _REFS)[:_REFS]
    ext = [max(nz), min(nz)] if nz else [math.nan, math.nan]
    return np.asarray(pos + ext, dtype=float)


_REF_NAMES = [f"#{i + 1}" for i in range(_REFS)] + ["largest", "smallest"]


def _candidates(r: np.ndarray, two: bool) -> tuple[np.ndarray, list[str]]:
    vals: list[np.ndarray] = []
    names: list[str] = []
    with np.errstate(all="ignore"):
        for u, f in _UNARY.items():
            vals.append(f(r))
            names.extend(f"{u} {n}" for n in _REF_NAMES)
        A, B = np.meshgrid(r, r, indexing="ij")
        for o, f in _BINARY.items():
            vals.append(f(A, B).ravel())
            names.extend(f"{a} {o} {b}" for a in _REF_NAMES for b in _REF_NAMES)
        one = np.concatenate(vals)
        if not two:
            return one, names
        first = np.concatenate([f(A, B).ravel() for f in (np.add, np.subtract, np.multiply, np.divide)])
        fnames = [f"({a} {o} {b})" for o in "+−×÷" for a in _REF_NAMES for b in _REF_NAMES]
        X, C = np.meshgrid(first, r, indexing="ij")
        two_vals = [f(X, C).ravel() for f in (np.add, np.subtract, np.multiply, np.divide)]
        two_names = [f"{x} {o} {c}" for o in "+−×÷" for x in fnames for c in _REF_NAMES]
        return np.concatenate([one, *two_vals]), names + two_names


@dataclass
class OpRules:
    n: int
    one_op: tuple[float, str] = (0.0, "")  # best one-operation rule: share of draws, its name
    two_op: tuple[float, str] = (0.0, "")
    absent: float = 0.0  # "the smallest whole number ≥ 2 not printed"
    mode: tuple[float, str] = (0.0, "")  # typing the most common key


def _smallest_absent(nums: list[float]) -> float:
    k = 2
    while float(k) in nums:
        k += 1
    return float(k)


def operation_rules(problems: Sequence[Problem], *, two: bool = True) -> OpRules | None:
    """Score every fixed one-operation recipe (and two-operation, ``two``) on the printed numbers
    of the NAT/integer draws ``problems``: the share of draws each answers, the best one reported."""
    rows = [(p, k) for p in problems if (k := _key_of(p)) is not None]
    if not rows:
        return None
    hits_one = hits_two = None
    names: list[str] = []
    absent = 0
    for p, key in rows:
        nums = _numbers_all(p)
        cand, names = _candidates(_refs(nums), two)
        ok = _accepts_vec(key, cand)
        n_one = len(_UNARY) * len(_REF_NAMES) + len(_BINARY) * len(_REF_NAMES) ** 2
        if hits_one is None:
            hits_one = np.zeros(n_one)
            hits_two = np.zeros(max(len(cand) - n_one, 1))
        hits_one += ok[:n_one]
        if two:
            hits_two += ok[n_one:]  # type: ignore[operator]
        absent += bool(_accepts_vec(key, np.asarray([_smallest_absent(nums)]))[0])
    n = len(rows)
    out = OpRules(n)
    i = int(np.argmax(hits_one))
    out.one_op = (float(hits_one[i]) / n, names[i])  # type: ignore[index]
    if two:
        j = int(np.argmax(hits_two))
        out.two_op = (float(hits_two[j]) / n, names[len(hits_one) + j])  # type: ignore[arg-type]
    out.absent = absent / n
    vals = Counter(round(float(k.value), 9) for _, k in rows)
    best, share = 0.0, 0.0
    for v, _ in vals.most_common(5):
        s = sum(bool(_accepts_vec(k, np.asarray([v]))[0]) for _, k in rows) / n
        if s > share:
            best, share = v, s
    out.mode = (share, f"{best:g}")
    return out


# --------------------------------------------------------------------------------------------
# memorise easy, answer harder


def _nat_value(key: Any) -> float | None:
    if isinstance(key, NumericKey | IntegerKey):
        return float(key.value)
    return None


def memory_attack(easy: Sequence[Problem], harder: Sequence[Problem]) -> float | None:
    """The share of ``harder`` draws answered by remembering the ``easy`` ones: the attacker takes
    the easy draw whose statement shares the most printed numbers (then words) with the one in
    front of it and gives its key (the key's option text, when that text is among the options;
    otherwise a remembered key text among the options, else a random option)."""
    if not easy or not harder:
        return None
    mem = []
    easy_keys: set[str] = set()
    for p in easy:
        kt = None
        if isinstance(p.key, ChoiceKey) and p.type == "mcq":
            kt = (p.options_text or p.options)[next(iter(p.key.correct))]
            easy_keys.add(kt)
        ns = printed_numbers(p.statement_text)
        mem.append((set(ns), _tokens(p.statement_text), kt, _nat_value(_key_of(p) if kt is None else None), tuple(ns)))
    tot = 0.0
    for q in harder:
        ns = printed_numbers(q.statement_text)
        nums, toks = set(ns), _tokens(q.statement_text)
        best = max(mem, key=lambda m: (len(m[0] & nums), m[4] == tuple(ns), len(m[1] & toks)))
        if q.type == "mcq" and isinstance(q.key, ChoiceKey):
            opts = q.options_text or q.options
            picks = [i for i, o in enumerate(opts) if o == best[2]] or [i for i, o in enumerate(opts) if o in easy_keys]
            if picks:
                tot += sum(1 for i in picks if i in q.key.correct) / len(picks)
            else:
                tot += 1 / len(opts)
        else:
            key = _key_of(q)
            if key is not None and best[3] is not None:
                tot += bool(_accepts_vec(key, np.asarray([best[3]]))[0])
    return tot / len(harder)


# --------------------------------------------------------------------------------------------
# variety


def _asked(p: Problem) -> str:
    return "\n".join([p.statement_text, *p.options_text, *(pt.prompt_text for pt in p.parts)])


def distinct_problems(problems: Sequence[Problem]) -> int:
    return len({_asked(p) for p in problems})


def expected_distinct(pool: int, n: int) -> float:
    """Distinct items expected in ``n`` uniform draws from ``pool`` items."""
    return pool * (1 - (1 - 1 / pool) ** n)


def variety_floor(n: int, pool: int = MIN_DISTINCT) -> float:
    """The fewest distinct problems ``n`` draws from a uniform pool of ``pool`` may show, short of noise: the
    expected count less three standard deviations (occupancy: ``pool`` minus the empty cells)."""
    m = float(pool)
    q1, q2 = (1 - 1 / m) ** n, (1 - 2 / m) ** n
    mean = m * (1 - q1)
    var = max(m * (m - 1) * q2 + m * q1 - m * m * q1 * q1, 0.0)
    return min(float(n), mean - 3 * math.sqrt(var))


def pool_estimate(distinct: int, n: int, draws: int = VARIETY_DRAWS) -> float:
    """Distinct problems expected in ``draws`` draws, from ``distinct`` seen in ``n``: the uniform
    pool that gives ``distinct`` in ``n`` draws, drawn ``draws`` times (at least ``distinct``)."""
    if distinct >= n:
        return float(draws) if n >= draws else max(float(distinct), min(float(draws), distinct * draws / n))
    lo, hi = float(distinct), 1e7
    for _ in range(60):
        mid = (lo + hi) / 2
        if expected_distinct(mid, n) < distinct:
            lo = mid
        else:
            hi = mid
    return max(float(distinct), expected_distinct(lo, draws))


# --------------------------------------------------------------------------------------------
# one family


@dataclass
class LevelAttack:
    level: str
    n: int
    kind: str  # "mcq", "msq", "nat" (numeric, integer, or a part with one), "matrix"
    chance: float = 0.0
    learned: Learned | None = None
    fixed: tuple[float, str, int] = (0.0, "", 0)  # best fixed rule of question_bank.quality on this level
    ops: OpRules | None = None
    memory: float | None = None
    distinct: int = 0
    distinct_1000: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"level": self.level, "draws": self.n, "kind": self.kind, "distinct": self.distinct,
                               "distinct_in_1000": round(self.distinct_1000, 1)}
        if self.fixed[2]:
            out["fixed"] = {"rate": self.fixed[0], "rule": self.fixed[1], "applied": self.fixed[2]}
        if self.learned is not None:
            out["chance"] = self.chance
            out["learned"] = {"rate": self.learned.rate, "model": self.learned.model, "tested": self.learned.n,
                              "unseen_rate": self.learned.unseen_rate, "unseen_tested": self.learned.unseen_n,
                              "unseen_key_rate": self.learned.unseen_key_rate, "unseen_key_tested": self.learned.unseen_key_n,
                              "attackers": {k: round(v, 4) for k, v in self.learned.attackers.items()}}
        if self.ops is not None:
            out["one_op"] = {"rate": self.ops.one_op[0], "rule": self.ops.one_op[1]}
            out["two_op"] = {"rate": self.ops.two_op[0], "rule": self.ops.two_op[1]}
            out["smallest_absent"] = self.ops.absent
            out["one_number"] = {"rate": self.ops.mode[0], "value": self.ops.mode[1]}
        if self.memory is not None:
            out["memorised_easy"] = self.memory
        return out


@dataclass
class FamilyAttack:
    id: str
    levels: dict[str, LevelAttack] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)


def _kind(ps: Sequence[Problem]) -> str:
    t = Counter(p.type for p in ps).most_common(1)[0][0]
    if t in ("mcq", "msq"):
        return t
    return "nat" if any(_key_of(p) is not None for p in ps) else t


def attack_family(fam: Any, by_level: dict[str, list[Problem]], *, two: bool = True) -> FamilyAttack:
    """Every attack above on the draws ``by_level`` of family ``fam``; ``issues`` lists each goal
    missed."""
    fa = FamilyAttack(fam.id)
    small_pool = getattr(fam, "small_pool", "")
    for lvl, ps in by_level.items():
        if not ps:
            continue
        la = LevelAttack(lvl, len(ps), _kind(ps))
        la.distinct = distinct_problems(ps)
        la.distinct_1000 = pool_estimate(la.distinct, len(ps))
        where = f"family {fam.id} ({lvl}"
        if la.kind in ("mcq", "msq"):
            choice = [p for p in ps if p.type == la.kind]
            la.chance = choice_chance(choice)
            la.learned = learned_attack(choice)
            from question_bank.quality import guess_rates

            rates = [(r, name, n) for name, (r, n) in guess_rates(choice).items() if n >= max(10, len(choice) // 4)]
            if rates:
                la.fixed = max(rates)
                if la.fixed[0] > la.chance + LEARNED_MARGIN + allowance(la.chance, la.fixed[2]):
                    fa.issues.append(f"{where}, {la.kind}): the fixed rule '{la.fixed[1]}' finds the key in {la.fixed[0]:.0%} "
                                     f"of {la.fixed[2]} draws (chance {la.chance:.0%})")
            from question_bank.choice_record import current, passes, reason

            rec = current(fam.id, lvl, choice)
            if rec is not None:
                # the level's record (bench/choice_attack.py: 500 draws, today's adversary, these draws) is the
                # gate: a figure on a few dozen draws is noise beside it (question_bank.choice_record)
                if not passes(rec):
                    fa.issues.append(f"{where}, {la.kind}): {reason(rec)}")
            elif la.learned is not None:
                # right statements that repeat (a concept family): held-out seeds show the same statements, and
                # recognising a right statement seen before is knowing it; the gate is on unseen statements
                for rate, what, n in gated_figures(la.learned):
                    if rate > la.chance + LEARNED_MARGIN + allowance(la.chance, n):
                        fa.issues.append(f"{where}, {la.kind}): {what} finds the key in {rate:.0%} of {n} draws (chance {la.chance:.0%})")
        elif la.kind == "nat":
            la.ops = operation_rules(ps, two=two)
            # a family whose key is a printed number or 1 on purpose (blind_key_ok) is shown the figures, not gated
            if la.ops is not None and lvl != "easy" and not getattr(fam, "blind_key_ok", ""):
                # a count with a small range (2 to 8 tokens) meets some recipe by luck as often as the most common
                # key comes up: a recipe must not beat typing that key
                base = max(ONE_OP_LIMIT, la.ops.mode[0])
                lim = base + allowance(base, la.ops.n)
                if la.ops.one_op[0] > lim:
                    fa.issues.append(f"{where}): the one-operation rule '{la.ops.one_op[1]}' on the printed numbers gives "
                                     f"the key in {la.ops.one_op[0]:.0%} of {la.ops.n} draws")
                if la.ops.absent > ONE_NUMBER_LIMIT + allowance(ONE_NUMBER_LIMIT, la.ops.n):
                    fa.issues.append(f"{where}): 'the smallest whole number ≥ 2 not printed' is the key in "
                                     f"{la.ops.absent:.0%} of {la.ops.n} draws")
            if la.ops is not None and la.ops.mode[0] > ONE_NUMBER_LIMIT + allowance(ONE_NUMBER_LIMIT, la.ops.n) and not small_pool:
                fa.issues.append(f"{where}): typing one remembered number ({la.ops.mode[1]}) gives the key in "
                                 f"{la.ops.mode[0]:.0%} of {la.ops.n} draws")
        if lvl != "easy" and by_level.get("easy") and lvl in by_level and fam.levels[0] == "easy":
            la.memory = memory_attack(by_level["easy"], ps)
            numeric = la.kind == "nat" or all(printed_numbers(o) for p in ps for o in (p.options_text or p.options))
            if la.memory is not None and numeric:
                # NAT: no better than typing the level's most common key (a count from 2 to 5 coincides often)
                base = la.chance if la.kind in ("mcq", "msq") else (la.ops.mode[0] if la.ops is not None else 0.0)
                lim = base + max(LEARNED_MARGIN, ONE_OP_LIMIT) + allowance(max(base, ONE_OP_LIMIT), len(ps))
                if la.memory > lim:
                    fa.issues.append(f"{where}): remembering the easy draws' answers gives the key in {la.memory:.0%} "
                                     f"of {len(ps)} draws" + (f" (chance {base:.0%})" if base else ""))
        if la.distinct < variety_floor(len(ps)) and not small_pool:
            fa.issues.append(f"{where}): about {la.distinct_1000:.0f} distinct problems in {VARIETY_DRAWS:,} draws "
                             f"({la.distinct} in {len(ps)}), fewer than {MIN_DISTINCT}")
        fa.levels[lvl] = la
    return fa
