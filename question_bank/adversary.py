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
    "fit_logistic", "fit_boosted", "learned_attack", "operation_rules", "memory_attack",
    "distinct_problems", "pool_estimate", "LevelAttack", "attack_family",
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
    rate: float  # the better learner's score on held-out seeds
    model: str
    n: int  # held-out draws
    unseen_rate: float | None = None  # on draws whose right statement training never saw
    unseen_n: int = 0


def _featurise(problems: Sequence[Problem]) -> list[np.ndarray]:
    return [option_features(p.statement_text, p.options_text or p.options) for p in problems]


def _score(fit: Any, kind: str, feats: list[np.ndarray], problems: Sequence[Problem], k: int) -> float:
    tot = 0.0
    for F, p in zip(feats, problems, strict=True):
        tot += _choice_credit(kind, fit(F), p.key.correct, k)  # type: ignore[union-attr]
    return tot / len(problems)


def learned_attack(problems: Sequence[Problem]) -> Learned | None:
    """Train both learners on the even-indexed draws and score them on the odd-indexed ones (and,
    when the right statements repeat, on draws whose right statement is held out of training)."""
    ps = [p for p in problems if isinstance(p.key, ChoiceKey) and p.type in ("mcq", "msq")]
    if len(ps) < 20:
        return None
    kind = ps[0].type
    k = Counter(len(p.key.correct) for p in ps).most_common(1)[0][0]  # type: ignore[union-attr]
    feats = _featurise(ps)

    def train(idx: list[int]) -> list[tuple[str, Any]]:
        X = np.vstack([feats[i] for i in idx])
        y = np.concatenate([[1.0 if j in ps[i].key.correct else 0.0 for j in range(len(feats[i]))]  # type: ignore[union-attr]
                            for i in idx])
        if y.min() == y.max():
            return []
        return [("logistic regression", fit_logistic(X, y)), ("boosted trees", fit_boosted(X, y))]

    tr = list(range(0, len(ps), 2))
    te = list(range(1, len(ps), 2))
    models = train(tr)
    if not models:
        return None
    results = [(_score(f, kind, [feats[i] for i in te], [ps[i] for i in te], k), name) for name, f in models]
    rate, name = max(results)
    out = Learned(rate, name, len(te))
    # unseen content: split the distinct right statements in two halves
    keytext = [" | ".join(sorted((p.options_text or p.options)[i] for i in p.key.correct)) for p in ps]  # type: ignore[union-attr]
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
                              "unseen_rate": self.learned.unseen_rate, "unseen_tested": self.learned.unseen_n}
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
            if la.learned is not None:
                # right statements that repeat (a concept family): held-out seeds show the same statements, and
                # recognising a right statement seen before is knowing it; the gate is on unseen statements
                lim = la.chance + LEARNED_MARGIN + allowance(la.chance, la.learned.n)
                if la.learned.rate > lim and la.learned.unseen_rate is None:
                    fa.issues.append(f"{where}, {la.kind}): a learned attacker ({la.learned.model}) finds the key in "
                                     f"{la.learned.rate:.0%} of {la.learned.n} held-out draws (chance {la.chance:.0%})")
                if la.learned.unseen_rate is not None and la.learned.unseen_rate > la.chance + LEARNED_MARGIN + allowance(
                        la.chance, la.learned.unseen_n):
                    fa.issues.append(f"{where}, {la.kind}): a learned attacker finds the key in {la.learned.unseen_rate:.0%} "
                                     f"of {la.learned.unseen_n} draws whose right statement it never saw (chance {la.chance:.0%})")
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
        if lvl != "easy" and by_level.get("easy") and lvl in by_level and fam.difficulties[0] == "easy":
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
