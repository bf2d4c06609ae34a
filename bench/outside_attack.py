"""An outside attacker on the choice levels the bank offers: can a test-wise student who never
computes beat chance on them?

The bank offers an MCQ/MSQ level only when its own adversary cannot beat chance + 5 points. This
script is a second, independent attacker (it shares no code with ``question_bank/adversary.py``,
``question_bank/quality.py`` or ``bench/choice_attack.py``): a student who knows no ML theory but has
seen many past papers. It sees only what a student sees (``statement_text``, ``options_text``) and,
on the training draws only, the key.

For each offered choice level it draws training problems (seeds ``0..N-1``, ``--train``) and a
held-out block that no in-house work used (seeds from ``--holdout-from``, 500 of them), and tries:

* rules a test-wise student uses: a fixed letter, the largest/smallest/middle value, the longest or
  shortest option, the option most like the others, the one most tied to the others by a simple
  factor, the one nearest a product of the printed numbers;
* per-level learners (scikit-learn): gradient boosting and a random forest on per-option features
  (value, log, rank, ratios to the other options and to the printed numbers and their products,
  digits, length, trailing zeros, word overlap, how often the option's text or its template with
  the numbers blanked out was the key in past papers, numbers inside the option), a logistic
  regression on the same features and one on character n-grams of the option text;
* a general past-paper student: gradient boosting trained on all levels of all families.

Beside the verdict the record gives two narrower figures, to tell a give-away from a good memory: the
best attacker that remembers no past paper's option text (``surface``: the rules and a gradient
boosting on the draw's own features; a fixed pool of sentences can still be told apart by their
lengths), and the chosen attacker's rate on the held-out draws whose keyed text never was a key in
training (``unseen_key``). ``hits`` marks the held-out draws the chosen attacker got right.

The attacker for a level is chosen on a 3-fold validation split of the training seeds only, then
refitted on all training draws and scored once on the held-out block. Score: the fraction of
held-out draws where its answer is the key (MCQ: its top option; MSQ: GATE credit, the keyed set
exactly; the MSQ set rule, top-k or a probability threshold, is chosen on validation too). Chance:
1/len(options) for an MCQ, 1/(2^len(options) - 1) for an MSQ (a uniform guess among the non-empty
sets). A level is **beaten** when the held-out rate exceeds chance + 5 points and the excess is more
than 2.5 binomial standard errors at chance.

Depends on scikit-learn, which is not a core dependency of qkv (bench only: ``pip install
scikit-learn``).

    python bench/outside_attack.py                         # every offered level (a long run)
    python bench/outside_attack.py --levels scaling.chinchilla_mcq/easy msq.mask_attend/hard
    python bench/outside_attack.py --train 300 --no-general

Writes ``bench/outside_attack.json`` (``--out``) after each level, with the date, the commit and
``"partial": true`` until every requested level is done.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per model: faster on a small shared machine

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "bench" / "outside_attack.json"
MARGIN = 0.05  # chance + 5 points
Z_BEATEN = 2.5  # and more than 2.5 standard errors
HOLDOUT = 500
FOLDS = 3

# ----------------------------------------------------------------------------------------------
# What a student sees: one draw is {"id", "type", "statement", "options", "key"}.


def offered_levels(withdrawn: bool = False) -> list[tuple[str, str]]:
    """Every offered level ``(family, level)`` whose problems are MCQ or MSQ (and the withdrawn ones with
    ``withdrawn``: a level changed to win its place back is measured before it is offered)."""
    import question_bank.families  # noqa: F401  (registers the families)
    from question_bank.family import FAMILIES

    out = []
    for fid, fam in sorted(FAMILIES.items()):
        if not any(t in ("mcq", "msq") for t in fam.types):
            continue
        for lv in (fam.levels if withdrawn else fam.difficulties):
            if fam.generate(0, lv).type in ("mcq", "msq"):
                out.append((fid, lv))
    return out


def draw(fid: str, level: str, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """The draws of one level as a student sees them (plus the key, for training and scoring)."""
    import question_bank.families  # noqa: F401  (registers the families)
    from question_bank.family import FAMILIES

    rows = []
    for s in seeds:
        p = FAMILIES[fid].generate(s, level)
        if p.type not in ("mcq", "msq"):
            continue
        rows.append({"id": p.id, "seed": s, "type": p.type, "statement": p.statement_text,
                     "options": list(p.options_text or p.options), "key": sorted(int(k) for k in p.key.correct)})
    return rows


def cached_draw(fid: str, level: str, seeds: Sequence[int], cache: pathlib.Path | None) -> list[dict[str, Any]]:
    if cache is None:
        return draw(fid, level, seeds)
    cache.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha1(f"{_generator_digest()}|{fid}|{level}|{list(seeds)}".encode()).hexdigest()[:12]
    path = cache / f"{fid}__{level}__{tag}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    rows = draw(fid, level, seeds)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return rows


# ----------------------------------------------------------------------------------------------
# Reading numbers the way a student skims them.

_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_NUM = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*[×x]\s*10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|\^-?\d+))?"
                  r"|(?<=\w)\d+(?:\.\d+)?")
_POW = re.compile(r"(\d+(?:\.\d+)?)([⁰¹²³⁴⁵⁶⁷⁸⁹]+)")
_UNIT = {
    "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "B": 1e9,
    "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
    "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40, "PiB": 2.0**50,
    "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0,
    "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "GFLOPs": 1e9, "TFLOPs": 1e12, "PFLOPs": 1e15, "MFLOPs": 1e6, "FLOPs": 1.0,
}


def numbers(text: str) -> list[float]:
    """Every number printed in ``text`` (commas dropped, ``a × 10ⁿ`` and ``2³⁰`` read as values)."""
    out: list[float] = []
    for m in _POW.finditer(text):
        try:
            out.append(float(m.group(1)) ** int(m.group(2).translate(_SUP)))
        except (OverflowError, ValueError):
            pass
    for m in _NUM.finditer(text):
        s = m.group(0)
        try:
            if m.group(1) is not None or "^" in s:
                base, exp = re.split(r"\s*[×x]\s*10", s)
                v = float(base.replace(",", "")) * 10.0 ** int(exp.translate(_SUP).lstrip("^"))
            else:
                v = float(s.replace(",", ""))
        except (ValueError, OverflowError):
            continue
        out.append(v)
    return out


def option_value(text: str) -> float:
    """The value of an option that is one number with an optional unit; NaN otherwise."""
    t = text.strip()
    m = re.fullmatch(r"(-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?)(?:\s*[×x]\s*10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+|\^-?\d+))?\s*([^\d\s]\S*)?"
                     r"(?:\s+[A-Za-z/ ()·%-]+)?", t)
    if not m:
        return float("nan")
    try:
        v = float(m.group(1).replace(",", ""))
        if m.group(2):
            v *= 10.0 ** int(m.group(2).translate(_SUP).lstrip("^"))
    except ValueError:
        return float("nan")
    unit = m.group(3) or ""
    return v * _UNIT.get(unit, 1.0)


def _digits(text: str) -> tuple[int, int, int, int]:
    """(significant digits, decimals, trailing zeros, last digit) of the first number in ``text``."""
    m = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    if not m:
        return (0, 0, 0, -1)
    s = m.group(0).replace(",", "")
    dec = len(s.split(".")[1]) if "." in s else 0
    digits = s.replace(".", "").lstrip("0")
    tz = len(digits) - len(digits.rstrip("0"))
    return (len(digits.rstrip("0")) or 1, dec, tz, int(s[-1]))


def template(text: str) -> str:
    """The option with its numbers blanked out: what stays the same from paper to paper."""
    return re.sub(r"\d[\d,]*(?:\.\d+)?", "#", text.strip())


_NICE = np.log10(np.array(sorted({p / q for p in range(1, 9) for q in range(1, 9) if p != q}
                                 | {2.0**k for k in range(-10, 11) if k} | {10.0**k for k in range(-9, 10) if k}
                                 | {1.024**k for k in (1, 2, 3)} | {1.073741824, 1 / 1.073741824, 0.9765625})))


def _nearest(sorted_arr: np.ndarray, x: float) -> float:
    if sorted_arr.size == 0 or not math.isfinite(x):
        return float("nan")
    i = int(np.searchsorted(sorted_arr, x))
    best = math.inf
    for j in (i - 1, i):
        if 0 <= j < sorted_arr.size:
            best = min(best, abs(sorted_arr[j] - x))
    return best


def _nearest_mod1(sorted_frac: np.ndarray, x: float) -> float:
    if sorted_frac.size == 0 or not math.isfinite(x):
        return float("nan")
    f = x % 1.0
    d = _nearest(sorted_frac, f)
    return min(d, abs(sorted_frac[0] + 1.0 - f), abs(f + 1.0 - sorted_frac[-1]))


def _closeness(d: float) -> float:
    """-log10 of a log-distance: 4 or more is a match to the printed digits, 0-1 is no match."""
    return float("nan") if not math.isfinite(d) else min(6.0, -math.log10(d + 1e-6))


class StatementNumbers:
    """The printed numbers of a statement and simple formulas of them, in log10."""

    def __init__(self, statement: str):
        vals = sorted({abs(v) for v in numbers(statement) if v and abs(v) != 1.0 and math.isfinite(v)},
                      key=lambda v: -abs(math.log10(v)))
        self.n = len(vals)
        L = np.log10(np.array(vals[:12], dtype=float)) if vals else np.zeros(0)
        self.single = np.sort(L)
        pair_p = (L[:, None] + L[None, :])[np.triu_indices(len(L))] if len(L) else np.zeros(0)
        pair_r = (L[:, None] - L[None, :]).ravel() if len(L) else np.zeros(0)
        self.prod2 = np.sort(pair_p)
        self.ratio2 = np.sort(pair_r)
        # every product of a subset of the (up to 10 largest) numbers and their squares
        base = np.concatenate([L[:10], 2 * L[:4]]) if len(L) else np.zeros(0)
        sub = np.zeros(1)
        for b in base:
            sub = np.concatenate([sub, sub + b])
        self.subset = np.sort(sub)
        self.subset_frac = np.sort(self.subset % 1.0)
        # a formula's number of factors: smaller is "simpler"
        self.log_text = L

    def features(self, v: float) -> list[float]:
        if not (math.isfinite(v) and v > 0):
            return [float("nan")] * 7
        lv = math.log10(v)
        return [
            _closeness(_nearest(self.single, lv)),
            _closeness(_nearest(self.prod2, lv)),
            _closeness(_nearest(self.ratio2, lv)),
            _closeness(_nearest(self.subset, lv)),
            _closeness(_nearest_mod1(self.subset_frac, lv)),
            _closeness(_nearest_mod1(np.sort(self.single % 1.0), lv)),
            float(self.n),
        ]


# ----------------------------------------------------------------------------------------------
# Per-option features. Each draw gives len(options) rows; columns are named in FEATURES.

FEATURES: list[str] = []


def _words(t: str) -> set[str]:
    return set(re.findall(r"[a-zA-Z]+", t.lower()))


def _grams(t: str, n: int = 3) -> set[str]:
    t = re.sub(r"\d+", "#", t.lower())
    return {t[i:i + n] for i in range(max(1, len(t) - n + 1))}


def _jac(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


_NEG_Q = re.compile(r"\b(false|not true|incorrect|wrong|untrue)\b", re.I)
_NEG_O = re.compile(r"\b(not|no|never|unable|cannot|fewer|less|without|none)\b", re.I)


def _relrank(x: np.ndarray) -> np.ndarray:
    """Rank of each entry among the options (0 = smallest), NaN-safe, scaled to [0, 1]."""
    k = len(x)
    out = np.full(k, np.nan)
    ok = np.isfinite(x)
    if ok.sum() >= 1:
        order = np.argsort(np.argsort(np.where(ok, x, np.inf), kind="stable"), kind="stable")
        out[ok] = order[ok] / max(1, k - 1)
    return out


_MEMO: dict[tuple[str, str], np.ndarray] = {}


def draw_features(d: dict[str, Any]) -> np.ndarray:
    """One row of features per option of draw ``d`` (remembered by problem id and options)."""
    k = (d.get("id", ""), "\x00".join(d["options"]) + d["statement"])
    if k not in _MEMO:
        _MEMO[k] = _draw_features(d)
    return _MEMO[k]


def _draw_features(d: dict[str, Any]) -> np.ndarray:
    opts = d["options"]
    k = len(opts)
    st = d["statement"]
    sn = StatementNumbers(st)
    neg_q = 1.0 if _NEG_Q.search(st) else 0.0
    vals = np.array([option_value(o) for o in opts], dtype=float)
    numeric = np.isfinite(vals) & (vals > 0)
    lv = np.where(numeric, np.log10(np.where(numeric, vals, 1.0)), np.nan)
    gmean = np.nanmean(lv) if numeric.any() else np.nan
    lengths = np.array([len(o) for o in opts], dtype=float)
    wsets = [_words(o) for o in opts]
    gsets = [_grams(o) for o in opts]
    st_w, st_g = _words(st), _grams(st)
    st_nums = {round(abs(x), 9) for x in numbers(st)}
    first = []
    for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", st):
        x = float(m.group(0).replace(",", ""))
        if x > 0 and x not in first:
            first.append(x)
    st_first = [math.log10(x) for x in first[:3]] + [float("nan")] * (3 - min(3, len(first)))
    rows = []
    for i, o in enumerate(opts):
        others = [j for j in range(k) if j != i]
        f: dict[str, float] = {}
        f["pos"] = i / max(1, k - 1)
        f["numeric"] = float(numeric[i])
        f["log"] = lv[i]
        f["log_minus_mean"] = lv[i] - gmean
        f["rank"] = _relrank(lv)[i]
        f["is_max"] = float(numeric[i] and lv[i] == np.nanmax(lv))
        f["is_min"] = float(numeric[i] and lv[i] == np.nanmin(lv))
        diffs = np.array([lv[i] - lv[j] for j in others]) if numeric[i] else np.full(len(others), np.nan)
        ad = np.abs(diffs)
        f["near_gap"] = np.nanmin(ad) if np.isfinite(ad).any() else np.nan
        f["far_gap"] = np.nanmax(ad) if np.isfinite(ad).any() else np.nan
        nice = [np.min(np.abs(_NICE - x)) < 2e-3 if math.isfinite(x) else False for x in diffs]
        f["nice_links"] = float(sum(nice))
        f["x2_links"] = float(sum(abs(abs(x) - math.log10(2)) < 2e-3 for x in diffs if math.isfinite(x)))
        f["x10_links"] = float(sum(abs(abs(x) % 1.0) < 2e-3 or abs(abs(x) % 1.0 - 1) < 2e-3
                                   for x in diffs if math.isfinite(x) and abs(x) > 0.5))
        f["gib_links"] = float(sum(abs(abs(x) - math.log10(1.073741824)) < 1e-3 for x in diffs if math.isfinite(x)))
        l2 = math.log2(vals[i]) if numeric[i] else float("nan")
        f["pow2_close"] = _closeness(abs(l2 - round(l2)) * math.log10(2)) if math.isfinite(l2) else float("nan")
        sd, dec, tz, last = _digits(o)
        f["sig_digits"], f["decimals"], f["trailing_zeros"], f["last_digit"] = float(sd), float(dec), float(tz), float(last)
        f["len"] = lengths[i]
        f["len_rel"] = lengths[i] / max(1.0, lengths.mean())
        f["len_rank"] = _relrank(lengths)[i]
        f["words"] = float(len(wsets[i]))
        f["sim_others"] = float(np.mean([_jac(gsets[i], gsets[j]) for j in others])) if others else 0.0
        f["sim_others_max"] = float(max(_jac(gsets[i], gsets[j]) for j in others)) if others else 0.0
        f["sim_stmt"] = _jac(gsets[i], st_g)
        f["word_overlap_stmt"] = len(wsets[i] & st_w) / max(1, len(wsets[i]))
        f["neg_q"] = neg_q
        f["neg_opt"] = float(bool(_NEG_O.search(o)))
        f["neg_x_q"] = f["neg_opt"] * neg_q
        onums = [abs(x) for x in numbers(o)]
        f["n_numbers"] = float(len(onums))
        f["nums_in_stmt"] = float(sum(round(x, 9) in st_nums for x in onums)) / max(1, len(onums))
        lo = [math.log10(x) if x > 0 else -9.0 for x in onums[:4]] + [float("nan")] * (4 - min(4, len(onums)))
        for j in range(4):
            f[f"onum{j}"] = lo[j]
        f["onum01"] = lo[0] - lo[1]
        f["onum02"] = lo[0] - lo[2]
        f["onum12"] = lo[1] - lo[2]
        f["onum_last_first"] = (lo[min(3, len(onums) - 1)] - lo[0]) if len(onums) >= 2 else float("nan")
        f["dup_numbers"] = float(len(onums) - len({round(x, 9) for x in onums}))
        # the option's numbers against the statement's first printed numbers ("under the 15 printed?")
        for a in range(2):
            for b in range(3):
                f[f"onum{a}_vs_printed{b}"] = lo[a] - st_first[b]
        (f["c_single"], f["c_prod2"], f["c_ratio2"], f["c_subset"], f["c_subset_mod"], f["c_single_mod"],
         f["stmt_numbers"]) = sn.features(vals[i]) if numeric[i] else [float("nan")] * 7
        rows.append(f)
    if not FEATURES:
        FEATURES.extend(rows[0])
    X = np.array([[r[c] for c in FEATURES] for r in rows], dtype=float)
    # listwise: each feature less its mean over the draw's options (an option's standing among the four)
    rel = X - np.nanmean(np.where(np.isfinite(X), X, np.nan), axis=0, keepdims=True) if k else X
    return np.hstack([X, rel])


def feature_names() -> list[str]:
    return FEATURES + [f"{c}-vs-others" for c in FEATURES]


# ----------------------------------------------------------------------------------------------
# A level as arrays.


class Level:
    """The option rows of a list of draws: ``X`` features, ``y`` keyed or not, ``g`` the draw index."""

    def __init__(self, draws: list[dict[str, Any]]):
        import warnings

        self.draws = draws
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            blocks = [draw_features(d) for d in draws]
        self.X = np.vstack(blocks) if blocks else np.zeros((0, 2 * len(FEATURES)))
        self.g = np.concatenate([np.full(len(d["options"]), i) for i, d in enumerate(draws)]).astype(int)
        self.y = np.concatenate([[1 if j in d["key"] else 0 for j in range(len(d["options"]))] for d in draws]).astype(int)
        self.text = [o for d in draws for o in d["options"]]
        self.tmpl = [template(o) for o in self.text]
        self.negq = np.concatenate([[1.0 if _NEG_Q.search(d["statement"]) else 0.0] * len(d["options"]) for d in draws])
        self.msq = bool(draws) and draws[0]["type"] == "msq"

    def rows(self, idx: Sequence[int]) -> np.ndarray:
        """Option-row indices of the draws ``idx``."""
        return np.flatnonzero(np.isin(self.g, np.asarray(idx)))


def chance(draws: list[dict[str, Any]]) -> float:
    return float(np.mean([1.0 / len(d["options"]) if d["type"] == "mcq" else 1.0 / (2 ** len(d["options"]) - 1)
                          for d in draws]))


# ----------------------------------------------------------------------------------------------
# Turning option scores into answers, and scoring them.


def answers(scores: np.ndarray, g: np.ndarray, msq: bool, policy: tuple[str, float]) -> dict[int, frozenset[int]]:
    """Per draw the chosen option(s): the top one (MCQ); for an MSQ the top ``k`` or every option over a
    threshold (the top one if none is)."""
    out: dict[int, frozenset[int]] = {}
    for d in np.unique(g):
        s = scores[g == d]
        jitter = np.random.default_rng(int(d) + 7).random(len(s)) * 1e-9  # ties broken at random, fixed
        order = np.argsort(-(s + jitter), kind="stable")
        if not msq:
            out[int(d)] = frozenset([int(order[0])])
        elif policy[0] == "top":
            out[int(d)] = frozenset(int(j) for j in order[: int(policy[1])])
        else:
            pick = {int(j) for j in np.flatnonzero(s > policy[1])}
            out[int(d)] = frozenset(pick or {int(order[0])})
    return out


def credit(chosen: dict[int, frozenset[int]], draws: list[dict[str, Any]], ids: Sequence[int]) -> tuple[float, float]:
    """(full-credit rate, partial credit): full credit for exactly the keyed set; the partial figure
    gives |picked| / |key| when no wrong option is picked (0 otherwise), a JEE-style mark."""
    full, part = [], []
    for pos, d in enumerate(ids):
        key = frozenset(draws[d]["key"])
        c = chosen[pos]
        full.append(1.0 if c == key else 0.0)
        part.append(len(c) / len(key) if c and c <= key else 0.0)
    return float(np.mean(full)) if full else 0.0, float(np.mean(part)) if part else 0.0


POLICIES = [("top", 1.0), ("top", 2.0), ("top", 3.0), ("top", 4.0)] + [("thr", t) for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)]


# ----------------------------------------------------------------------------------------------
# Attackers: each is fit(level, train draw ids) -> score(level, draw ids) -> one score per option row.


def _target_encode(keys_fit: list[str], y_fit: np.ndarray, keys_apply: list[str], prior: float, a: float = 2.0) -> np.ndarray:
    tot: dict[str, float] = defaultdict(float)
    cnt: dict[str, float] = defaultdict(float)
    for kk, yy in zip(keys_fit, y_fit, strict=True):
        tot[kk] += yy
        cnt[kk] += 1
    return np.array([(tot.get(kk, 0.0) + a * prior) / (cnt.get(kk, 0.0) + a) for kk in keys_apply])


def _memory_columns(L: Level, fit_rows: np.ndarray, apply_rows: np.ndarray, inner: bool) -> np.ndarray:
    """How often an option's exact text, its template, and its template under a "which is false"
    question were the key in the papers seen. On the rows fitted on, out of fold (5 folds by draw)."""
    keysets = [L.text, L.tmpl, [f"{t}|{q}" for t, q in zip(L.tmpl, L.negq, strict=True)]]
    prior = float(L.y[fit_rows].mean()) if len(fit_rows) else 0.25
    out = np.zeros((len(apply_rows), len(keysets)))
    for c, ks in enumerate(keysets):
        kf = [ks[r] for r in fit_rows]
        if not inner:
            out[:, c] = _target_encode(kf, L.y[fit_rows], [ks[r] for r in apply_rows], prior)
        else:  # apply_rows == fit_rows: out of fold
            fold = L.g[fit_rows] % 5
            for f in range(5):
                tr, te = fold != f, fold == f
                out[te, c] = _target_encode([kk for kk, t in zip(kf, tr, strict=True) if t], L.y[fit_rows][tr],
                                            [kk for kk, t in zip(kf, te, strict=True) if t], prior)
    return out


def _tmpl_codes(L: Level, fit_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    common = [t for t, _ in Counter(L.tmpl[r] for r in fit_rows).most_common(200)]
    code = {t: i for i, t in enumerate(common)}
    return np.array([code.get(L.tmpl[r], 200) for r in rows], dtype=float)[:, None]


#: the features that read the statement (its words, its printed numbers); an options-only student has none of them
_READS_STATEMENT = re.compile(r"stmt|printed|^c_|neg_q|neg_x_q")


def options_only_columns() -> np.ndarray:
    """The columns of :func:`feature_names` an options-only student reads: the options' values, digits, words and
    their standing among one another, nothing of the statement."""
    return np.array([i for i, c in enumerate(feature_names()) if not _READS_STATEMENT.search(c.removesuffix("-vs-others"))])


class Model:
    """A scikit-learn classifier on the per-option features (plus the past-paper memory columns)."""

    def __init__(self, name: str, make: Callable[..., Any], scale: bool = False, categorical: bool = False,
                 memory: bool = True, options_only: bool = False):
        self.name, self.make, self.scale, self.categorical, self.memory = name, make, scale, categorical, memory
        self.options_only = options_only

    def _X(self, L: Level, fit_rows: np.ndarray, rows: np.ndarray, inner: bool) -> np.ndarray:
        X = L.X[rows][:, options_only_columns()] if self.options_only else L.X[rows]
        parts = [X] + ([_memory_columns(L, fit_rows, rows, inner)] if self.memory else [])
        if self.categorical:
            parts.append(_tmpl_codes(L, fit_rows, rows))
        return np.hstack(parts)

    def fit(self, L: Level, ids: Sequence[int]) -> Callable[[Level, Sequence[int]], np.ndarray]:
        fit_rows = L.rows(ids)
        X = self._X(L, fit_rows, fit_rows, inner=True)
        y = L.y[fit_rows]
        if self.scale:
            from sklearn.impute import SimpleImputer
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            clf = make_pipeline(SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True),
                                StandardScaler(), self.make())
        elif self.categorical:
            clf = self.make(X.shape[1] - 1)
        else:
            clf = self.make()
        if len(set(y)) < 2:
            const = float(y.mean()) if len(y) else 0.0
            return lambda L2, ids2: np.full(len(L2.rows(ids2)), const)
        X = np.where(np.isfinite(X), X, np.nan) if not self.scale else np.nan_to_num(X, nan=0.0, posinf=9.0, neginf=-9.0)
        keep = np.isfinite(X).any(axis=0) & (np.nanmax(X, axis=0, initial=-np.inf) > np.nanmin(X, axis=0, initial=np.inf))
        if self.categorical:
            keep[-1] = True
            if not self.scale and hasattr(clf, "categorical_features"):
                clf.set_params(categorical_features=[int(keep.sum()) - 1])
        clf.fit(X[:, keep], y)

        def score(L2: Level, ids2: Sequence[int]) -> np.ndarray:
            rows = L2.rows(ids2)
            X2 = self._X(L2, fit_rows, rows, inner=False) if L2 is L else None
            assert X2 is not None, "a per-level model scores its own level"
            X2 = np.where(np.isfinite(X2), X2, np.nan) if not self.scale else np.nan_to_num(X2, nan=0.0, posinf=9.0, neginf=-9.0)
            return clf.predict_proba(X2[:, keep])[:, 1]

        return score


class TextModel:
    """Logistic regression on character and word n-grams of the option (and of the option under a
    "which is false" question), the student who remembers how right answers are worded."""

    name = "text n-grams (logistic)"

    def fit(self, L: Level, ids: Sequence[int]) -> Callable[[Level, Sequence[int]], np.ndarray]:
        from scipy.sparse import hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        rows = L.rows(ids)
        y = L.y[rows]
        if len(set(y)) < 2:
            return lambda L2, ids2: np.zeros(len(L2.rows(ids2)))
        ch = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2, sublinear_tf=True, max_features=30000)
        wd = TfidfVectorizer(analyzer="word", ngram_range=(1, 3), min_df=2, token_pattern=r"[^\s]+", max_features=20000)

        def mat(r: np.ndarray, fit: bool):
            t = [L.text[i] for i in r]
            A = ch.fit_transform(t) if fit else ch.transform(t)
            B = wd.fit_transform(t) if fit else wd.transform(t)
            q = L.negq[r][:, None]
            return hstack([A, B, A.multiply(q), B.multiply(q)]).tocsr()

        clf = LogisticRegression(C=2.0, max_iter=2000)
        try:
            clf.fit(mat(rows, True), y)
        except ValueError:  # no n-gram in two options or more: nothing to read
            return lambda L2, ids2: np.zeros(len(L2.rows(ids2)))
        return lambda L2, ids2: clf.predict_proba(mat(L2.rows(ids2), False))[:, 1]


def _rule(name: str, col: str, sign: float):
    def fit(L: Level, ids: Sequence[int]):
        c = FEATURES.index(col)

        def score(L2: Level, ids2: Sequence[int]) -> np.ndarray:
            v = L2.X[L2.rows(ids2), c] * sign
            return np.where(np.isfinite(v), v, -1e9)

        return score

    return name, fit


def _letter(j: int):
    def fit(L: Level, ids: Sequence[int]):
        def score(L2: Level, ids2: Sequence[int]) -> np.ndarray:
            rows = L2.rows(ids2)
            pos = np.concatenate([np.arange((L2.g == d).sum()) for d in ids2])
            assert len(pos) == len(rows)
            return (pos == j).astype(float)

        return score

    return f"always ({'abcd'[j]})", fit


def _middle(L: Level, ids: Sequence[int]):
    c = FEATURES.index("log_minus_mean")

    def score(L2: Level, ids2: Sequence[int]) -> np.ndarray:
        v = -np.abs(L2.X[L2.rows(ids2), c])
        return np.where(np.isfinite(v), v, -1e9)

    return score


def _learned_letter(L: Level, ids: Sequence[int]):
    rows = L.rows(ids)
    pos = np.concatenate([np.arange((L.g == d).sum()) for d in ids])
    freq = np.bincount(pos[L.y[rows] == 1], minlength=8) + np.random.default_rng(0).random(8) * 1e-6

    def score(L2: Level, ids2: Sequence[int]) -> np.ndarray:
        p2 = np.concatenate([np.arange((L2.g == d).sum()) for d in ids2])
        return freq[p2].astype(float)

    return score


#: attackers that remember past papers' option texts (which fixed statement was true, which value was a
#: key): the others read only the draw in front of them (values, digits, wording, the printed numbers)
MEMORY = {"gradient boosting (features)", "gradient boosting (features + template)", "random forest (features)",
          "logistic (features)", "text n-grams (logistic)", "general student (all levels)"}


#: a learner that never reads the statement nor remembers an option text: it sees only the four (or five) options
#: of the draw, so what it finds is a give-away of the options themselves (their spacing, digits, sizes)
OPTIONS_ONLY = "gradient boosting (options only, no memory)"
#: the attackers that learn (from past papers or from the draw's features); every other attacker is a fixed rule
LEARNERS = MEMORY | {"gradient boosting (surface, no memory)", OPTIONS_ONLY}


def first20(fid: str, lv: str) -> str:
    """The digest of the level's first 20 choice draws, as ``question_bank.choice_record`` writes it beside the
    in-house figures: the bank reads this attacker's rule verdict only while the level draws as it did here."""
    from question_bank.choice_record import draws_digest
    from question_bank.family import all_families

    ps = [all_families()[fid].generate(s, lv) for s in range(20)]
    return draws_digest([p for p in ps if p.type in ("mcq", "msq")])


def rule_verdict(res: dict[str, Any], digest: str) -> dict[str, Any]:
    """The level's fixed-rule figure as the bank records it (``outside_rule``, read by
    ``question_bank.choice_record.outside_beaten``): the rule chosen on the training seeds' validation, with its
    validation and held-out rates, and the digest of the draws it was measured on."""
    found = {a: v for a, v in res["attackers"].items() if a not in LEARNERS and v.get("heldout") is not None}
    rule = max(sorted(found), key=lambda a: found[a]["validation"])
    return {"rule": rule, "validation": found[rule]["validation"], "heldout": found[rule]["heldout"],
            "chance": res["chance"], "draws": res["draws"], "first20": digest}


def options_verdict(res: dict[str, Any], digest: str) -> dict[str, Any] | None:
    """The options-only learner's figure (:data:`OPTIONS_ONLY`) as the bank records it (``outside_options``), with
    ``numeric_options``: whether every option is a number, the levels it gates (a fixed pool of true sentences told
    apart by their look is a pool the student knows, the subject of the item); None where the learner did not run."""
    v = res["attackers"].get(OPTIONS_ONLY)
    if v is None:
        return None
    return {"attacker": OPTIONS_ONLY, "numeric_options": bool(res.get("numeric_options")), "validation": v["validation"],
            "heldout": v["heldout"], "chance": res["chance"], "draws": res["draws"], "first20": digest}


def outside_figures(fid: str, lv: str, train: int = 600, holdout_from: int = 90_000,
                learner: bool = True) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The fixed rules on one level, and the options-only learner where the options are numbers and ``learner``
    (that one needs scikit-learn): what ``bench/choice_attack.py`` records when it measures a level whose draws
    changed, so the bank's gate never reads a figure of other draws."""
    only = [n for n, _ in rules()] + ([OPTIONS_ONLY] if learner else [])
    res = attack_level(draw(fid, lv, range(train)), draw(fid, lv, range(holdout_from, holdout_from + HOLDOUT)), only=only)
    digest = first20(fid, lv)
    return rule_verdict(res, digest), options_verdict(res, digest)


def rules() -> list[tuple[str, Callable]]:
    """The fixed rules (no scikit-learn): a letter, a value's rank, length, likeness, printed numbers."""
    out: list[tuple[str, Callable]] = [_letter(j) for j in range(4)]
    out += [("the commonest key letter", _learned_letter)]
    out += [_rule("largest value", "log", 1), _rule("smallest value", "log", -1), ("the geometric middle", _middle),
            _rule("longest option", "len", 1), _rule("shortest option", "len", -1),
            _rule("most like the others", "sim_others", 1), _rule("least like the others", "sim_others", -1),
            _rule("most simple-factor links", "nice_links", 1),
            _rule("nearest a product of printed numbers", "c_subset", 1),
            _rule("nearest a product of two printed numbers", "c_prod2", 1),
            _rule("nearest a ratio of two printed numbers", "c_ratio2", 1),
            _rule("the digits of a product of printed numbers", "c_subset_mod", 1),
            _rule("the digits of a printed number", "c_single_mod", 1),
            _rule("nearest a printed number", "c_single", 1),
            _rule("most like the statement", "sim_stmt", 1)]
    return out


def attackers() -> list[tuple[str, Callable]]:
    """The fixed rules, then the learners (scikit-learn)."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    out = rules()
    hgb = Model("gradient boosting (features)", lambda: HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, l2_regularization=1.0, early_stopping=False, random_state=0))
    hgb_cat = Model("gradient boosting (features + template)", lambda n: HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, l2_regularization=1.0, early_stopping=False, random_state=0,
        categorical_features=[n]), categorical=True)
    rf = Model("random forest (features)", lambda: RandomForestClassifier(
        n_estimators=100, min_samples_leaf=3, max_features=0.3, n_jobs=1, random_state=0))
    lr = Model("logistic (features)", lambda: LogisticRegression(C=0.5, max_iter=3000), scale=True)
    surface = Model("gradient boosting (surface, no memory)", lambda: HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, l2_regularization=1.0, early_stopping=False, random_state=0),
        memory=False)
    blind = Model(OPTIONS_ONLY, lambda: HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.08, max_leaf_nodes=15, l2_regularization=1.0, early_stopping=False, random_state=0),
        memory=False, options_only=True)
    out += [(m.name, m.fit) for m in (hgb, hgb_cat, rf, lr, surface, blind)]
    tm = TextModel()
    out += [(tm.name, tm.fit)]
    return out


# ----------------------------------------------------------------------------------------------
# The general past-paper student: one model over every level's training draws.


class General:
    """Gradient boosting over every level's option rows (features + the past-paper memory columns),
    fitted per validation fold and on all training draws; it gives each level out-of-fold validation
    scores and held-out scores."""

    name = "general student (all levels)"

    def __init__(self, levels: dict[str, tuple[Level, list[int], Level]], folds: int = FOLDS):
        from sklearn.ensemble import HistGradientBoostingClassifier

        self.val: dict[str, np.ndarray] = {}
        self.hold: dict[str, np.ndarray] = {}
        names = sorted(levels)

        def stack(fold: int | None):
            Xs, ys, Xh = [], [], {}
            for nm in names:
                L, train_ids, H = levels[nm]
                fit_ids = [i for i in train_ids if fold is None or i % folds != fold]
                fr = L.rows(fit_ids)
                Xs.append(np.hstack([L.X[fr], _memory_columns(L, fr, fr, inner=True), _lvl_cols(L, fr)]))
                ys.append(L.y[fr])
                if fold is None:
                    hr = H.rows(range(len(H.draws)))
                    Xh[nm] = np.hstack([H.X[hr], _cross_memory(L, fr, H, hr), _lvl_cols(H, hr)])
                else:
                    vr = L.rows([i for i in train_ids if i % folds == fold])
                    Xh[nm] = np.hstack([L.X[vr], _memory_columns(L, fr, vr, inner=False), _lvl_cols(L, vr)])
            return np.vstack(Xs), np.concatenate(ys), Xh

        for fold in [*range(folds), None]:
            X, y, Xh = stack(fold)
            clf = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.08, max_leaf_nodes=31,
                                                 l2_regularization=1.0, early_stopping=False, random_state=0)
            clf.fit(X, y)
            for nm, M in Xh.items():
                p = clf.predict_proba(M)[:, 1]
                if fold is None:
                    self.hold[nm] = p
                else:
                    L, train_ids, _ = levels[nm]
                    vr = L.rows([i for i in train_ids if i % folds == fold])
                    self.val.setdefault(nm, np.zeros(len(L.y)))[vr] = p


def _lvl_cols(L: Level, rows: np.ndarray) -> np.ndarray:
    return np.array([[1.0 if L.msq else 0.0]] * len(rows)).reshape(len(rows), 1)


def _cross_memory(L: Level, fit_rows: np.ndarray, H: Level, rows: np.ndarray) -> np.ndarray:
    """The memory columns of held-out rows ``rows`` of ``H`` from the training rows of ``L``."""
    prior = float(L.y[fit_rows].mean()) if len(fit_rows) else 0.25
    out = []
    for kf, ka in ((L.text, H.text), (L.tmpl, H.tmpl),
                   ([f"{t}|{q}" for t, q in zip(L.tmpl, L.negq, strict=True)], [f"{t}|{q}" for t, q in zip(H.tmpl, H.negq, strict=True)])):
        out.append(_target_encode([kf[r] for r in fit_rows], L.y[fit_rows], [ka[r] for r in rows], prior))
    return np.array(out).T


# ----------------------------------------------------------------------------------------------
# One level: choose on validation, score on the held-out block.


def _best_policy(scores: np.ndarray, L: Level, ids: list[int]) -> tuple[tuple[str, float], float]:
    rows = L.rows(ids)
    g = L.g[rows]
    best = (("top", 1.0), -1.0)
    for pol in (POLICIES if L.msq else [("top", 1.0)]):
        ch = answers(scores, g, L.msq, pol)
        r, _ = credit(_in_order(ch, ids), L.draws, ids)
        if r > best[1] + 1e-12:
            best = (pol, r)
    return best


def _in_order(ch: dict[int, frozenset[int]], ids: Sequence[int]) -> dict[int, frozenset[int]]:
    return {pos: ch[int(d)] for pos, d in enumerate(ids)}


def attack_level(train: list[dict[str, Any]], holdout: list[dict[str, Any]], general: tuple[np.ndarray, np.ndarray] | None = None,
                 only: Sequence[str] | None = None, folds: int = FOLDS) -> dict[str, Any]:
    """Choose the attacker on a ``folds``-fold validation of ``train``, refit it on all of ``train``
    and score it on ``holdout``. ``general``: a general model's (validation, held-out) option scores."""
    both = Level(train + holdout)  # one feature space; the held-out keys are read only to score
    nt = len(train)
    tr_ids, ho_ids = list(range(nt)), list(range(nt, nt + len(holdout)))
    both.y[both.rows(ho_ids)] = 0  # the held-out keys are never seen by a learner
    cands = [(n, f) for n, f in (rules() if only is not None and not set(only) & LEARNERS else attackers())
             if only is None or n in only]
    val: dict[str, tuple[float, tuple[str, float]]] = {}
    failed: dict[str, str] = {}
    for name, fit in cands:
        sc = np.zeros(len(both.rows(tr_ids)))
        rows_all = both.rows(tr_ids)
        pos_of = {r: i for i, r in enumerate(rows_all)}
        try:
            for f in range(folds):
                fit_ids = [i for i in tr_ids if i % folds != f]
                v_ids = [i for i in tr_ids if i % folds == f]
                s = fit(both, fit_ids)(both, v_ids)
                for r, x in zip(both.rows(v_ids), s, strict=True):
                    sc[pos_of[r]] = x
        except (ValueError, FloatingPointError) as e:  # an attacker that cannot fit this level is left out of it
            failed[name] = f"{type(e).__name__}: {e}"[:200]
            continue
        pol, r = _best_policy(sc, both, tr_ids)
        val[name] = (r, pol)
    if general is not None:
        pol, r = _best_policy(general[0], both, tr_ids)
        val[General.name] = (r, pol)
    ranked = sorted(val, key=lambda n: -val[n][0])
    hold: dict[str, float] = {}
    partial: dict[str, float] = {}
    picks: dict[str, dict[int, frozenset[int]]] = {}
    hrows = both.rows(ho_ids)
    truth = [{**d} for d in holdout]
    for name in ranked:
        if name == General.name:
            s = general[1]  # type: ignore[index]
        else:
            fit = dict(cands)[name]
            s = fit(both, tr_ids)(both, ho_ids)
        ch = answers(s, both.g[hrows] - nt, both.msq, val[name][1])
        picks[name] = ch
        hold[name], partial[name] = credit(_in_order(ch, range(len(holdout))), truth, list(range(len(holdout))))
    best = ranked[0]
    c = chance(holdout)
    n = len(holdout)
    rate = hold[best]
    se = math.sqrt(c * (1 - c) / n) if n else float("nan")
    z = (rate - c) / se if se else float("nan")
    sb = next((nm for nm in ranked if nm not in MEMORY), None)  # the best that remembers no past paper
    surface = None
    if sb is not None:
        sz = (hold[sb] - c) / se if se else float("nan")
        surface = {"attacker": sb, "validation": round(val[sb][0], 4), "rate": round(hold[sb], 4), "excess": round(hold[sb] - c, 4),
                   "z": round(sz, 2), "beaten": bool(hold[sb] - c > MARGIN and sz > Z_BEATEN)}
    # the draws whose keyed text never was a key in training: there the attacker cannot have remembered it
    seen = {frozenset(d["options"][j] for j in d["key"]) for d in train} | {d["options"][j] for d in train for j in d["key"]}
    unseen = [i for i, d in enumerate(holdout) if not any(d["options"][j] in seen for j in d["key"])]
    hits = [picks[best][i] == frozenset(d["key"]) for i, d in enumerate(holdout)]
    un_rate = float(np.mean([hits[i] for i in unseen])) if unseen else None
    examples = [{"id": d.get("id"), "options": d["options"], "key": d["key"], "picked": sorted(picks[best][i])}
                for i, d in enumerate(holdout) if picks[best][i] == frozenset(d["key"])][:2]
    return {
        "examples": examples,
        "type": holdout[0]["type"] if holdout else None, "chance": round(c, 4), "attacker": best,
        "numeric_options": bool(len(both.X)) and bool(np.all(both.X[:, FEATURES.index("numeric")] == 1)),
        "policy": list(val[best][1]) if both.msq else None, "validation": round(val[best][0], 4),
        "rate": round(rate, 4), "partial_credit": round(partial[best], 4) if both.msq else None,
        "excess": round(rate - c, 4), "z": round(z, 2), "draws": n,
        "beaten": bool(rate - c > MARGIN and z > Z_BEATEN), "surface": surface,
        "unseen_key": {"draws": len(unseen), "rate": None if un_rate is None else round(un_rate, 4)},
        "hits": "".join("1" if h else "0" for h in hits),
        "failed": failed,
        "attackers": {nm: {"validation": round(val[nm][0], 4), "heldout": round(hold[nm], 4)} for nm in ranked},
    }


def importances(train: list[dict[str, Any]], top: int = 8) -> list[tuple[str, float]]:
    """What gives the key away: permutation importance of the per-level gradient boosting on the
    training draws (features only, no memory columns; a third kept out to measure it)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.inspection import permutation_importance

    L = Level(train)
    ids = list(range(len(train)))
    fit_rows, val_rows = L.rows([i for i in ids if i % 3]), L.rows([i for i in ids if i % 3 == 0])
    mem = lambda rows, inner: _memory_columns(L, fit_rows, rows, inner)  # noqa: E731
    X = np.hstack([L.X[fit_rows], mem(fit_rows, True)])
    Xv = np.hstack([L.X[val_rows], mem(val_rows, False)])
    X, Xv = np.where(np.isfinite(X), X, np.nan), np.where(np.isfinite(Xv), Xv, np.nan)
    keep = np.isfinite(X).any(axis=0) & (np.nanmax(X, axis=0, initial=-np.inf) > np.nanmin(X, axis=0, initial=np.inf))
    X[:, ~keep] = 0.0  # a column with one value: HGB cannot bin it; kept at 0 so the names line up
    Xv[:, ~keep] = 0.0
    clf = HistGradientBoostingClassifier(max_iter=150, learning_rate=0.08, max_leaf_nodes=15, l2_regularization=1.0,
                                         early_stopping=False, random_state=0).fit(X, L.y[fit_rows])
    pi = permutation_importance(clf, Xv, L.y[val_rows], n_repeats=3, random_state=0, scoring="roc_auc")
    names = feature_names() + ["memory: exact text", "memory: template", "memory: template|false-question"]
    order = np.argsort(-pi.importances_mean)[:top]
    return [(names[i], round(float(pi.importances_mean[i]), 4)) for i in order]


# ----------------------------------------------------------------------------------------------


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _generator_digest() -> str:
    """The committed trees of ``question_bank`` and ``solver``: draws cached under another digest are stale."""
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD:question_bank", "HEAD:solver"], capture_output=True,
                              text=True, check=True).stdout.replace("\n", "")[:24]
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", nargs="*", metavar="FID/LEVEL", help="levels to attack (default: every offered choice level)")
    ap.add_argument("--train", type=int, default=600, help="training seeds 0..N-1 (default 600)")
    ap.add_argument("--holdout-from", type=int, default=90_000, help="first held-out seed (500 seeds; default 90000)")
    ap.add_argument("--holdout", type=int, default=HOLDOUT, help=argparse.SUPPRESS)
    ap.add_argument("--no-general", action="store_true", help="skip the general student trained on all levels")
    ap.add_argument("--cache", type=pathlib.Path, help="keep the draws in this folder (keyed by commit)")
    ap.add_argument("--out", type=pathlib.Path, default=OUT, help=f"where to write the record (default {OUT.relative_to(ROOT)})")
    ap.add_argument("--resume", action="store_true", help="keep the levels already in --out (same seeds) and do the rest")
    ap.add_argument("--why", action="store_true", help="print what gives the key away for a beaten level")
    ap.add_argument("--withdrawn", action="store_true", help="--levels may name withdrawn levels too")
    args = ap.parse_args(argv)
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("outside_attack: needs scikit-learn (pip install scikit-learn); it is not a qkv dependency", file=sys.stderr)
        return 2

    every = offered_levels(args.withdrawn and bool(args.levels))
    if args.levels:
        want = []
        known = {f"{f}/{lv}" for f, lv in every}
        for s in args.levels:
            if s not in known:
                print(f"outside_attack: {s} is not an offered MCQ/MSQ level", file=sys.stderr)
                return 2
            want.append(tuple(s.split("/", 1)))
    else:
        want = every
    train_seeds = range(args.train)
    hold_seeds = range(args.holdout_from, args.holdout_from + args.holdout)

    t0 = time.time()
    data: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    gen_for = every if not args.no_general else want
    for fid, lv in gen_for:
        nm = f"{fid}/{lv}"
        data[nm] = (cached_draw(fid, lv, train_seeds, args.cache), cached_draw(fid, lv, hold_seeds, args.cache))
    print(f"drew {len(data)} levels in {time.time() - t0:.0f} s", file=sys.stderr)

    done: dict[str, Any] = {}
    if args.resume and args.out.exists():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        if old.get("train_seeds") == [0, args.train - 1] and old.get("holdout_seeds") == [hold_seeds.start, hold_seeds.stop - 1]:
            done = old.get("levels", {})
    gen = None
    gpath = None
    if args.cache is not None and not args.no_general:
        tag = hashlib.sha1(f"{_generator_digest()}|{args.train}|{hold_seeds.start}|{args.holdout}".encode()).hexdigest()[:12]
        gpath = args.cache / f"general__{tag}.npz"
    if gpath is not None and gpath.exists():
        z = np.load(gpath)
        gen = General.__new__(General)
        gen.val = {k[4:]: z[k] for k in z.files if k.startswith("val:")}
        gen.hold = {k[5:]: z[k] for k in z.files if k.startswith("hold:")}
    elif not args.no_general:
        t1 = time.time()
        lv_data = {}
        for nm, (tr, ho) in data.items():
            lv_data[nm] = (Level(tr), list(range(len(tr))), Level(ho))
        gen = General(lv_data)
        print(f"general student fitted in {time.time() - t1:.0f} s", file=sys.stderr)
        if gpath is not None:
            np.savez(gpath, **{f"val:{k}": v for k, v in gen.val.items()}, **{f"hold:{k}": v for k, v in gen.hold.items()})

    record: dict[str, Any] = {
        "date": datetime.date.today().isoformat(), "commit": _commit(), "train_seeds": [0, args.train - 1],
        "holdout_seeds": [hold_seeds.start, hold_seeds.stop - 1], "rule": f"beaten: rate > chance + {MARGIN} and z > {Z_BEATEN}",
        "general_student": not args.no_general, "partial": True, "levels": {},
    }
    print(f"{'level':48} {'type':4} {'chance':>6} {'rate':>6} {'excess':>7} {'z':>6}  verdict  attacker"
          "  [surface: rate, attacker]")
    for fid, lv in want:
        nm = f"{fid}/{lv}"
        if nm in done:
            record["levels"][nm] = done[nm]
            continue
        tr, ho = data[nm]
        t1 = time.time()
        g = (gen.val[nm], gen.hold[nm]) if gen is not None else None
        res = attack_level(tr, ho, g)
        res["seconds"] = round(time.time() - t1, 1)
        res["first20"] = first20(fid, lv)
        if res["beaten"]:
            res["why"] = importances(tr)
        record["levels"][nm] = res
        print(f"{nm:48} {res['type']:4} {res['chance']:6.3f} {res['rate']:6.3f} {res['excess']:+7.3f} {res['z']:6.2f}  "
              f"{'BEATEN ' if res['beaten'] else 'holds  '}  {res['attacker']}  [surface: {res['surface']['rate']:.3f}"
              f"{' BEATEN' if res['surface']['beaten'] else ''}, {res['surface']['attacker']}]", flush=True)
        if res["beaten"] and args.why:
            print("    gives it away: " + ", ".join(f"{a} {b}" for a, b in res["why"]), flush=True)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    record["partial"] = False
    record["beaten"] = sorted(nm for nm, r in record["levels"].items() if r["beaten"])
    record["seconds"] = round(time.time() - t0)
    args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    n_b = len(record["beaten"])
    print(f"{n_b} of {len(want)} levels beaten (held-out seeds {hold_seeds.start}-{hold_seeds.stop - 1})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
