"""The keys of question_bank/families/attention_systems.py recomputed from the text a student reads.

For every family of the module (and its MCQ view) the numbers are parsed with regular expressions out
of ``statement_text`` only, the answer is computed by the formulas written below from the conventions the
statement states (bytes per element, MB = 10⁶ bytes, 2 FLOPs per multiply-add, the rounding asked), and
the key must accept it (NAT: the value rounded as asked is graded correct; MCQ: the keyed option, and only
it, prints that value). Nothing is read from ``given``, the solution or the solver. Schedules (continuous
batching, layer-by-layer sends) are simulated step by step; softmax-based answers are computed with
NumPy; exact arithmetic (Fraction) is used wherever the statement's numbers are exact.

Run as a script (``python -m tests.question_bank.families.test_from_text_attention_systems``) to sweep
300 seeds per level (0..299 and 70,000..70,299) and print every disagreement.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction as Fr

import numpy as np
import pytest

import question_bank.families  # noqa: F401  (registers the families)
from question_bank.family import FAMILIES
from tests.question_bank.families.from_text import (
    fnum,
    frac,
    search,
)
from tests.question_bank.families.from_text_audit import (
    SEEDS,
    Unreadable,
    audit,
    key_tests,
    sweep_main,
    with_views,
)

MB, GB = 10**6, 10**9


def _bytes_per(text: str) -> int:
    return int(search(text, r"\((\d) bytes?\)", "the bytes per element")[1])


def _tuple(s: str) -> list[Fr]:
    return [frac(x.strip()) for x in s.split(",")]


def _matrix(text: str) -> np.ndarray:
    """The rows of a matrix drawn with ⎡ ⎢ ⎣ (or [ ]) brackets, in order."""
    rows = re.findall(r"[⎡⎢⎣\[]\s*([-\d.\s]+?)\s*[⎤⎥⎦\]]", text)
    if not rows:
        raise Unreadable("no matrix in the text")
    return np.array([[float(x) for x in r.split()] for r in rows])


# ---------------------------------------------------------------- context.ring_attention
def ring_attention(t: str) -> Fr:
    h, hkv, dh = fnum(t, "h"), fnum(t, "hₖᵥ"), fnum(t, "dₕ")
    b = _bytes_per(t)
    if "smallest chunk c" in t:
        F, beta = fnum(t, "F") * 10**12, fnum(t, "β") * 10**9
        # compute 4 c² h dₕ / F ≥ send 2 c hₖᵥ dₕ b / β  <=>  c ≥ hₖᵥ b F / (2 h β)
        cstar = hkv * b * F / (2 * h * beta)
        if cstar.denominator == 1 and "(takes no longer than it)" not in t:
            raise Unreadable(f"at c = {cstar} the send takes exactly as long as the compute, and the text does not "
                             "say whether that counts as hidden")
        return Fr(math.ceil(cstar))
    c = fnum(t, "N") / fnum(t, "P")
    send = 2 * c * hkv * dh * b  # the K and V block
    if "How many bytes does a device send per step" in t:
        assert "Give MB (10⁶ bytes)" in t
        return send / MB
    if "How long does one ring step take when the send overlaps the compute" in t:
        F, beta = fnum(t, "F") * 10**12, fnum(t, "β") * 10**9
        return max(4 * c * c * h * dh / F, send / beta) * 1000
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- context.ulysses
def ulysses(t: str) -> Fr:
    B = fnum(t, "B") if "a batch of B" in t else 1
    N, P, h, dh = fnum(t, "N"), fnum(t, "P"), fnum(t, "h"), fnum(t, "dₕ")
    hkv = h if "and as many key/value heads" in t else fnum(t, "hₖᵥ")
    b = _bytes_per(t)
    local = B * N / P * dh * b  # one head's slice of the sequence on one device, bytes
    # Q, K, V (h + 2 hₖᵥ heads) before, O (h heads) after; each device keeps 1/P of its slice
    sent = local * (h + 2 * hkv + h) * (P - 1) / P
    if "How many bytes does each device send per layer" in t:
        return sent / MB
    if "How long do the all-to-alls of one forward pass take" in t:
        L, beta = fnum(t, "L"), fnum(t, "β") * GB
        alpha = fnum(t, "α") / 10**6
        return L * (2 * alpha + sent / beta) * 1000
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- flash.online_softmax
def online_softmax(t: str) -> float:
    m = search(t, r"x⁽¹⁾ = \(([^)]*)\) then x⁽²⁾ = \(([^)]*)\)", "the two blocks")
    x1, x2 = [float(v) for v in _tuple(m[1])], [float(v) for v in _tuple(m[2])]
    # the online recurrence, block by block
    mx, ell, o = -math.inf, 0.0, 0.0
    v = [float(a) for a in _tuple(search(t, r"v = \(([^)]*)\)", "v")[1])] if "values are v" in t else None
    states = []
    for blk, vs in ((x1, v[: len(x1)] if v else None), (x2, v[len(x1):] if v else None)):
        new = max(mx, max(blk))
        scale = math.exp(mx - new) if mx > -math.inf else 0.0
        ell = ell * scale + sum(math.exp(x - new) for x in blk)
        if vs:
            o = o * scale + sum(math.exp(x - new) * y for x, y in zip(blk, vs, strict=True))
        mx = new
        states.append((mx, ell))
    xs = np.array(x1 + x2)
    w = np.exp(xs - xs.max()) / np.exp(xs - xs.max()).sum()  # the plain softmax, as a second route
    if q := re.search(r"What is ell after the (first|second) block", t):
        return states[0 if q[1] == "first" else 1][1]
    if q := re.search(r"What is m after the (first|second) block", t):
        return states[0 if q[1] == "first" else 1][0]
    if q := re.search(r"weight of score number (\d+) \(the value (-?\d+)\)", t):
        k = int(q[1])
        assert xs[k - 1] == float(q[2]), "score number k is counted from 1"
        assert math.isclose(math.exp(xs[k - 1] - mx) / ell, w[k - 1])
        return float(w[k - 1])
    if "What is the attention output after the two blocks" in t:
        assert math.isclose(o / ell, float(w @ np.array(v)), abs_tol=1e-12)
        return o / ell
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- flash.tiling_hbm
def _flash_accesses(N: int, d: int, Bc: int) -> int:
    """Dao et al. 2022, Algorithm 1, counted line by line over the actual blocks (last ones partial)."""
    total = N * d + 2 * N  # line 2: O, ell, m written
    for j in range(0, N, Bc):
        kv = min(Bc, N - j)
        total += 2 * kv * d  # line 6: load K_j, V_j
        # lines 8 and 12-13 over all query blocks: load Q_i, O_i, ell_i, m_i; write O_i, ell_i, m_i
        total += N * (2 * d + 2) + N * (d + 2)
    return total


def tiling_hbm(t: str) -> Fr:
    N, d, M = int(fnum(t, "N")), int(fnum(t, "d")), int(fnum(t, "M"))
    assert "B_c = ⌈ M/4d ⌉" in t and "Bᵣ = min(⌈M/4d ⌉, d)" in t
    Bc = -(-M // (4 * d))
    Br = min(Bc, d)
    if "Into how many key/value blocks T_c" in t:
        return Fr(-(-N // Bc))
    if "Into how many query blocks" in t:
        return Fr(-(-N // Br))
    flash = _flash_accesses(N, d, Bc)
    if "how many HBM accesses does the forward pass make" in t:
        assert "Give millions of elements" in t
        return Fr(flash, 10**6)
    if "ratio of standard attention's HBM accesses to FlashAttention's" in t:
        # Algorithm 0: read Q, K, write S; read S, write P; read P, V, write O
        standard = 2 * N * d + N * N + 2 * N * N + N * N + N * d + N * d
        return Fr(standard, flash)
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- mla.absorbed_decode
def absorbed_decode(t: str) -> Fr:
    dc, dR, h = fnum(t, "d_c"), fnum(t, "d_R"), fnum(t, "h")
    dh, dv, S = fnum(t, "dₕ"), fnum(t, "dᵥ"), fnum(t, "S")
    assert "Count 2 FLOPs per multiply-add" in t
    # naive: every cached latent up to each head's k and v, then scores (dₕ + d_R wide) and A·V
    naive = h * (S * 2 * dc * dh + S * 2 * dc * dv + 2 * S * (dh + dR) + 2 * S * dv)
    # absorbed: q through W^(UK)ᵢ (dₕ -> d_c), scores on [c, k^R], weighted sum of latents, W^(UV)ᵢ
    absorbed = h * (2 * dh * dc + 2 * S * (dc + dR) + 2 * S * dc + 2 * dc * dv)
    q = t.split("(the same in both orders).")[-1]
    if "How many times more FLOPs does the naive order spend" in q:
        return naive / absorbed
    unit = 10**9 if "Give GFLOPs" in q else 10**6 if "Give MFLOPs" in q else None
    if unit is None:
        raise Unreadable("no unit asked")
    if q.strip().startswith("The naive order") and "How many FLOPs does it spend" in q:
        return naive / unit
    if q.strip().startswith("The absorbed order") and "How many FLOPs does it spend" in q:
        return absorbed / unit
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- moe.capacity_all_to_all
def capacity_all_to_all(t: str) -> Fr:
    if "expert parallelism" in t:
        ep, T, d = fnum(t, "ep"), fnum(t, "T"), fnum(t, "d")
        k = {"top-1": 1, "top-2": 2, "top-4": 4, "top-8": 8}[search(t, r"its (top-\d) experts?", "top-k")[1]]
        b = _bytes_per(t)
        # each (token, expert) vector leaves the device with probability (ep-1)/ep; sent there and back
        return 2 * T * k * d * b * (ep - 1) / ep / MB
    E, T = fnum(t, "E"), fnum(t, "T")
    cf = frac(search(t, r"capacity factor (\d+(?:\.\d+)?)", "the capacity factor")[1])
    C = math.floor(cf * T / E)
    if "What is the expert capacity C" in t:
        return Fr(C)
    if m := re.search(r"The router sends ([\d, ]+) tokens to experts", t):
        loads = [int(x) for x in m[1].split(",")]
        assert len(loads) == E and sum(loads) == T
        return Fr(sum(max(0, n - C) for n in loads))
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- moe.router_losses
def _softmax(X: np.ndarray) -> np.ndarray:
    e = np.exp(X - X.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def router_losses(t: str) -> float:
    X = _matrix(t)
    T, E = int(fnum(t, "T")), int(fnum(t, "E"))
    assert X.shape == (T, E)
    zl = float(np.mean(np.log(np.exp(X).sum(axis=1)) ** 2))
    if "What is it for these logits" in t:
        return zl
    k = int(search(t, r"its top-(\d) experts?", "top-k")[1])
    for row in X:  # a tie at the k-th place: the text would have to say which expert wins
        s = np.sort(row)[::-1]
        if k < E and s[k - 1] == s[k]:
            raise Unreadable(f"the row {row} ties at its top-{k} place and the text names no tie-break")
    chosen = np.argsort(-X, axis=1, kind="stable")[:, :k]
    f = np.bincount(chosen.ravel(), minlength=E) / (T * k)
    P = _softmax(X).mean(axis=0)
    lb = E * float(f @ P)
    if "What is L?" in t:
        return lb
    if "What is this auxiliary loss?" in t:
        a = 1e-2 if "α = 10⁻²" in t else None
        cz = 1e-3 if "c_z = 10⁻³" in t else None
        if a is None or cz is None:
            raise Unreadable("α or c_z")
        assert "in units of 10⁻³" in t
        return (a * lb + cz * zl) * 1000
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- paged.kv_blocks
def _cache_bytes(t: str) -> int:
    m = search(t, r"The server has ([\d,.]+) (GB|GiB) \((10⁹|2³⁰) bytes each\)", "the cache size")
    assert (m[2], m[3]) in {("GB", "10⁹"), ("GiB", "2³⁰")}
    return int(frac(m[1]) * (10**9 if m[2] == "GB" else 2**30))


def kv_blocks(t: str) -> Fr:
    B = int(fnum(t, "B"))
    if m := re.search(r"Sequences of ([\d, ]+) tokens are in the cache", t):
        lens = [int(x) for x in m[1].split(",")]
        return Fr(sum(-(-n // B) * B - n for n in lens))
    X, L = int(fnum(t, "X")), int(fnum(t, "L"))
    mem = _cache_bytes(t)
    blocks = mem // (B * X)
    paged = blocks // -(-L // B)
    if "How many such sequences fit in the cache at once" in t:
        return Fr(paged)
    if "How many more sequences fit at once with paging than without" in t:
        Lmax = int(fnum(t, "Lₘₐₓ"))
        return Fr(paged - mem // (Lmax * X))
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- rope.context_extension
def context_extension(t: str) -> float:
    base = float(search(t, r"RoPE with base ([\d,]+)", "the base")[1].replace(",", ""))
    d, L, s = float(fnum(t, "d")), float(fnum(t, "L")), float(fnum(t, "s"))
    assert "θᵢ = base^(-2i/d)" in t

    def theta(i, b=base):
        return b ** (-2 * i / d)

    if m := re.search(r"With position interpolation \(θᵢ' = θᵢ / s\), what is the wavelength .* of pair i = (\d+)", t):
        return 2 * math.pi / (theta(int(m[1])) / s)
    if m := re.search(r"NTK-aware change of base, base' = base · s\^\(d/\(d-2\)\), what is the wavelength of pair "
                      r"i = (\d+)", t):
        return 2 * math.pi / theta(int(m[1]), base * s ** (d / (d - 2)))
    if "YaRN" in t:
        fast, slow = float(fnum(t, "β_fast")), float(fnum(t, "β_slow"))
        m = search(t, r"What is θ([₀-₉]+)'\?", "the pair asked")
        i = int(m[1].translate(str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")))

        def i_of(beta):
            return d * math.log(L / (2 * math.pi * beta)) / (2 * math.log(base))

        low, high = math.floor(i_of(fast)), math.ceil(i_of(slow))
        # the statement's own check of which pairs it calls fast: turns over L = L θ / 2π
        g = min(1.0, max(0.0, (i - low) / (high - low)))
        th = (1 - g) * theta(i) + g * theta(i) / s
        assert "in units of 10⁻³ radians per position" in t
        return th * 1000
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- serving.continuous_batching
def _static(outs: list[int], B: int) -> list[tuple[int, int]]:
    """(iterations, prefills) of each static batch."""
    return [(max(outs[i:i + B]), len(outs[i:i + B])) for i in range(0, len(outs), B)]


def _continuous(outs: list[int], B: int) -> tuple[int, int]:
    """Iteration by iteration: (iterations, prefill-iterations summed) until every request is served."""
    waiting, running, it, prefills = list(outs), [], 0, 0
    while waiting or running:
        while len(running) < B and waiting:
            running.append([waiting.pop(0), True])
        it += 1
        prefills += sum(1 for r in running if r[1])
        for r in running:
            r[0] -= 1
            r[1] = False
        running = [r for r in running if r[0] > 0]
    return it, prefills


def continuous_batching(t: str) -> Fr:
    B = int(fnum(t, "B"))
    outs = [int(x) for x in search(t, r"in this order, wanting ([\d, ]+) output tokens", "the requests")[1].split(",")]
    if "With static batching" in t and "how many iterations" in t:
        return Fr(sum(i for i, _ in _static(outs, B)))
    if "With continuous batching" in t and "how many iterations" in t:
        return Fr(_continuous(outs, B)[0])
    if m := re.search(r"An iteration takes (\d+) time units? plus (\d+) unit\(s\) for each request whose prefill runs", t):
        unit, pre = int(m[1]), int(m[2])
        st_time = sum(i * unit + n * pre for i, n in _static(outs, B))
        it, npre = _continuous(outs, B)
        ct_time = it * unit + npre * pre
        assert "How many times higher is continuous batching's throughput" in t
        return Fr(st_time, ct_time)  # the same tokens in both
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- serving.disaggregation
def disaggregation(t: str) -> Fr:
    P, L, hkv, dh = fnum(t, "P"), fnum(t, "L"), fnum(t, "hₖᵥ"), fnum(t, "dₕ")
    total = 2 * L * hkv * dh * _bytes_per(t) * P
    if "How many bytes does it send? Give GB (10⁹ bytes)" in t:
        return total / GB
    beta = fnum(t, "β") * GB
    if "How long does the transfer take after the prefill" in t:
        return total / beta * 1000
    if m := re.search(r"The prefill takes ([\d.]+) s, spread evenly over the layers", t):
        T = frac(m[1])
        link = Fr(0)
        for layer in range(1, int(L) + 1):  # layer by layer on one link
            link = max(link, T * layer / L) + total / L / beta
        return (link - T) * 1000
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- softcap.gemma2
def gemma2(t: str) -> float:
    assert "y = cap · tanh(x/cap)" in t
    if m := re.search(r"With a cap of ([\d.]+), what does a logit x = (-?[\d.]+) become", t):
        cap, x = float(m[1]), float(m[2])
        return cap * math.tanh(x / cap)
    if m := re.search(r"scaled by 1/√dₕ and then capped at ([\d.]+).* dₕ = (\d+) has q · k = (-?[\d.]+)", t, re.S):
        cap, dh, qk = float(m[1]), float(m[2]), float(m[3])
        return cap * math.tanh(qk / math.sqrt(dh) / cap)
    if m := re.search(r"caps the final logits at ([\d.]+) before the softmax.*have logits ([-\d, ]+) \(", t, re.S):
        cap = float(m[1])
        z = cap * np.tanh(np.array([float(x) for x in m[2].split(",")]) / cap)
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        if "probability does the softmax give the first token" in t:
            return float(p[0])
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- window.receptive_field
def receptive_field(t: str) -> Fr:
    L, W = int(fnum(t, "L")), int(fnum(t, "W"))
    assert "p - W < j ≤ p" in t
    if "Information from how many positions back" in t:
        reach = 0
        for _ in range(L):  # one layer at a time: each adds W - 1 positions back
            reach += W - 1
        return Fr(reach)
    n = int(fnum(t, "n"))
    last = n - 1
    # positions that reach the last token: walk the stack backwards, as an interval (plus sinks)
    lo = last
    for _ in range(L):
        lo = max(0, lo - (W - 1))
    reached = set(range(lo, last))
    if "attention-sink tokens" in t:
        s = int(fnum(t, "s"))
        assert f"positions 0 … {s - 1}" in t
        reached |= set(range(s))
    if "How many earlier positions can have no influence at all on the last token's output" in t:
        return Fr(last - len(reached))
    raise Unreadable("a question this audit does not know")


# ---------------------------------------------------------------- the misconceptions, from the text
# For the commonest mistakes of each family: the value the label names, recomputed from the statement.
def ring_attention_wrong(t: str) -> dict:
    h, hkv, dh, b = fnum(t, "h"), fnum(t, "hₖᵥ"), fnum(t, "dₕ"), _bytes_per(t)
    if "smallest chunk c" in t:
        F, beta = fnum(t, "F") * 10**12, fnum(t, "β") * 10**9
        return {"query_heads": Fr(math.ceil(b * F / (2 * beta))),  # hₖᵥ = h
                "floor": Fr(math.floor(hkv * b * F / (2 * h * beta)))}
    N, P = fnum(t, "N"), fnum(t, "P")
    c = N / P
    send = 2 * c * hkv * dh * b
    if "How many bytes does a device send per step" in t:
        return {"k_only": send / 2 / MB, "whole_sequence": 2 * N * hkv * dh * b / MB}
    F, beta = fnum(t, "F") * 10**12, fnum(t, "β") * 10**9
    comp = 4 * c * c * h * dh / F
    return {"no_overlap": (comp + send / beta) * 1000, "send_only": send / beta * 1000,
            "compute_only": comp * 1000}


def ulysses_wrong(t: str) -> dict:
    P, h = fnum(t, "P"), fnum(t, "h")
    hkv = h if "and as many key/value heads" in t else fnum(t, "hₖᵥ")
    sent = ulysses(t.split("\n\nThe model has")[0] + "\n\nHow many bytes does each device send per layer") * MB
    no_out = sent * (h + 2 * hkv) / (2 * h + 2 * hkv)
    if "How long do the all-to-alls" not in t:
        return {"count_local": sent * P / (P - 1) / MB, "total": sent * P / MB, "no_output": no_out / MB}
    L, beta, alpha = fnum(t, "L"), fnum(t, "β") * GB, fnum(t, "α") / 10**6
    return {"one_layer": (2 * alpha + sent / beta) * 1000, "one_latency": L * (alpha + sent / beta) * 1000,
            "bits": L * (2 * alpha + sent / (beta / 8)) * 1000, "no_output": L * (alpha + no_out / beta) * 1000,  # one all-to-all, one latency
            "count_local": L * (2 * alpha + sent * P / (P - 1) / beta) * 1000}


def online_softmax_wrong(t: str) -> dict:
    m = search(t, r"x⁽¹⁾ = \(([^)]*)\) then x⁽²⁾ = \(([^)]*)\)", "the two blocks")
    x1, x2 = [float(v) for v in _tuple(m[1])], [float(v) for v in _tuple(m[2])]
    m1, m2 = max(x1), max(x1 + x2)
    ell1 = sum(math.exp(x - m1) for x in x1)
    new = sum(math.exp(x - m2) for x in x2)
    if "What is ell after the second block" in t:
        return {"no_rescale": ell1 + new, "rescale_up": ell1 * math.exp(m2 - m1) + new}
    if q := re.search(r"weight of score number (\d+)", t):
        k = int(q[1]) - 1
        own = x1 if k < len(x1) else x2
        x = (x1 + x2)[k]
        return {"block_weight": math.exp(x - max(own)) / sum(math.exp(y - max(own)) for y in own),
                "no_rescale": math.exp(x - m2) / (ell1 + new),
                "rescale_up": math.exp(x - m2) / (ell1 * math.exp(m2 - m1) + new)}
    v = [float(a) for a in _tuple(search(t, r"v = \(([^)]*)\)", "v")[1])]
    v1, v2 = v[: len(x1)], v[len(x1):]
    o1 = sum(math.exp(x - m1) * y for x, y in zip(x1, v1, strict=True))
    o2 = sum(math.exp(x - m2) * y for x, y in zip(x2, v2, strict=True))
    ell2 = sum(math.exp(x - max(x2)) for x in x2)
    o2_own = sum(math.exp(x - max(x2)) * y for x, y in zip(x2, v2, strict=True))
    return {"average_blocks": (o1 / ell1 + o2_own / ell2) / 2,
            "no_rescale_o": (o1 + o2) / (ell1 * math.exp(m1 - m2) + new)}


def tiling_hbm_wrong(t: str) -> dict:
    N, d, M = int(fnum(t, "N")), int(fnum(t, "d")), int(fnum(t, "M"))
    Bc = -(-M // (4 * d))
    if "Into how many key/value blocks T_c" in t:
        return {"forgot_four": Fr(-(-N // -(-M // d))), "kv_only": Fr(-(-N // -(-M // (2 * d)))),
                "floor_blocks": Fr(N // Bc)}
    flash = _flash_accesses(N, d, Bc)
    standard = 4 * N * N + 4 * N * d
    if "how many HBM accesses does the forward pass make" in t:
        return {"forgot_init": Fr(flash - N * d - 2 * N, 10**6), "standard_count": Fr(standard, 10**6)}
    return {"theta_ratio": Fr(N * d + N * N) / Fr(N * N * d * d, M)}


def absorbed_decode_wrong(t: str) -> dict:
    dc, dR, h = fnum(t, "d_c"), fnum(t, "d_R"), fnum(t, "h")
    dh, dv, S = fnum(t, "dₕ"), fnum(t, "dᵥ"), fnum(t, "S")
    naive = h * (S * 2 * dc * dh + S * 2 * dc * dv + 2 * S * (dh + dR) + 2 * S * dv)
    absorbed = h * (2 * dh * dc + 2 * S * (dc + dR) + 2 * S * dc + 2 * dc * dv)
    q = t.split("(the same in both orders).")[-1]
    if "How many times more" in q:
        return {"k_only": (naive - h * S * 2 * dc * dv) / absorbed}
    unit = 10**9 if "Give GFLOPs" in q else 10**6
    if q.strip().startswith("The naive order"):
        return {"absorbed": absorbed / unit, "k_only": (naive - h * S * 2 * dc * dv) / unit}
    return {"naive": naive / unit, "no_rope": (absorbed - h * 2 * S * dR) / unit}


def capacity_all_to_all_wrong(t: str) -> dict:
    if "expert parallelism" in t:
        ep = fnum(t, "ep")
        k = int(search(t, r"its top-(\d) experts?", "top-k")[1])
        right = capacity_all_to_all(t)
        return {"dispatch_only": right / 2, "count_local": right * ep / (ep - 1), "forgot_top_k": right / k}
    E, T = fnum(t, "E"), fnum(t, "T")
    cf = frac(search(t, r"capacity factor (\d+(?:\.\d+)?)", "the capacity factor")[1])
    if "What is the expert capacity C" in t:
        return {"forgot_cf": Fr(math.floor(T / E)), "ceil": Fr(math.ceil(cf * T / E))}
    loads = [int(x) for x in search(t, r"The router sends ([\d, ]+) tokens", "the loads")[1].split(",")]
    C = math.floor(cf * T / E)
    return {"net_overflow": Fr(max(0, T - E * C)), "forgot_cf": Fr(sum(max(0, n - math.floor(T / E)) for n in loads))}


def router_losses_wrong(t: str) -> dict:
    X = _matrix(t)
    lse = np.log(np.exp(X).sum(axis=1))
    if "What is it for these logits" in t:
        return {"no_square": float(lse.mean()), "sum_not_mean": float((lse**2).sum()),
                "square_of_mean": float(lse.mean() ** 2), "max_logit": float((X.max(axis=1) ** 2).mean())}
    lb = router_losses(t.split(" Training adds")[0] + " What is L?")
    E = X.shape[1]
    if "What is L?" in t:
        return {"no_E": lb / E}
    zl = float((lse**2).mean())
    return {"no_E": (1e-2 * lb / E + 1e-3 * zl) * 1000, "z_no_square": (1e-2 * lb + 1e-3 * float(lse.mean())) * 1000}


def kv_blocks_wrong(t: str) -> dict:
    B = int(fnum(t, "B"))
    if m := re.search(r"Sequences of ([\d, ]+) tokens are in the cache", t):
        return {"per_sequence_b_minus_one": Fr(len(m[1].split(",")) * (B - 1))}
    X, L = int(fnum(t, "X")), int(fnum(t, "L"))
    mem = _cache_bytes(t)
    if "How many such sequences fit" in t:
        return {"no_blocks": Fr(mem // (L * X))}
    Lmax = int(fnum(t, "Lₘₐₓ"))
    out = {"floor_blocks": Fr(mem // (B * X) // (L // B) - mem // (Lmax * X)),
           "no_blocks": Fr(mem // (L * X) - mem // (Lmax * X))}
    if "GiB" in t:
        mem_gb = mem // 2**30 * 10**9
        out["gib_as_gb"] = Fr(mem_gb // (B * X) // -(-L // B) - mem_gb // (Lmax * X))
    return out


def context_extension_wrong(t: str) -> dict:
    base = float(search(t, r"RoPE with base ([\d,]+)", "the base")[1].replace(",", ""))
    d, s = float(fnum(t, "d")), float(fnum(t, "s"))
    if m := re.search(r"With position interpolation .* of pair i = (\d+)", t):
        th = base ** (-2 * int(m[1]) / d)
        return {"no_two_pi": s / th, "original": 2 * math.pi / th, "times_s": 2 * math.pi / (th * s)}
    if m := re.search(r"NTK-aware .* of pair i = (\d+)", t):
        i = int(m[1])
        new = base * s ** (d / (d - 2))
        return {"pi_instead": 2 * math.pi * s / base ** (-2 * i / d), "no_two_pi": 1 / new ** (-2 * i / d),
                "base_times_s": 2 * math.pi / (base * s) ** (-2 * i / d)}
    i = int(search(t, r"What is θ([₀-₉]+)'", "i")[1].translate(str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")))
    return {"pi_instead": base ** (-2 * i / d) / s * 1000}


def continuous_batching_wrong(t: str) -> dict:
    B = int(fnum(t, "B"))
    outs = [int(x) for x in search(t, r"wanting ([\d, ]+) output tokens", "the requests")[1].split(",")]
    if "With static batching" in t and "how many iterations" in t:
        batches = _static(outs, B)
        return {"decode_only": Fr(sum(max(o - 1 for o in outs[i:i + B]) for i in range(0, len(outs), B))),
                "batch_gap": Fr(sum(i for i, _ in batches) + len(batches) - 1)}
    if "With continuous batching" in t and "how many iterations" in t:
        return {"static": Fr(sum(i for i, _ in _static(outs, B))),
                "decode_only": Fr(_continuous([o - 1 for o in outs], B)[0])}
    return {"iterations_ratio": Fr(sum(i for i, _ in _static(outs, B)), _continuous(outs, B)[0])}


def disaggregation_wrong(t: str) -> dict:
    P, L, hkv, dh = fnum(t, "P"), fnum(t, "L"), fnum(t, "hₖᵥ"), fnum(t, "dₕ")
    total = 2 * L * hkv * dh * _bytes_per(t) * P
    if "How many bytes does it send" in t:
        return {"forgot_kv_two": total / 2 / GB, "gib": total / 2**30, "one_layer": total / L / GB}
    beta = fnum(t, "β") * GB
    if "How long does the transfer take after the prefill" in t:
        return {"bits": total / (beta / 8) * 1000, "forgot_kv_two": total / 2 / beta * 1000,
                "gib": total / (beta / GB * 2**30) * 1000}
    return {"no_overlap": total / beta * 1000}


def gemma2_wrong(t: str) -> dict:
    if m := re.search(r"With a cap of ([\d.]+), what does a logit x = (-?[\d.]+) become", t):
        cap, x = float(m[1]), float(m[2])
        return {"tanh_only": math.tanh(x), "no_outer_cap": math.tanh(x / cap), "clip": max(-cap, min(cap, x))}
    if m := re.search(r"capped at ([\d.]+).* dₕ = (\d+) has q · k = (-?[\d.]+)", t, re.S):
        cap, dh, qk = float(m[1]), float(m[2]), float(m[3])
        return {"no_cap": qk / math.sqrt(dh), "cap_then_scale": cap * math.tanh(qk / cap) / math.sqrt(dh),
                "final_cap": 30 * math.tanh(qk / math.sqrt(dh) / 30)}
    m = search(t, r"have logits ([-\d, ]+) \(", "the logits")
    x = np.array([float(v) for v in m[1].split(",")])

    def first(z):
        return float(np.exp(z[0] - z.max()) / np.exp(z - z.max()).sum())

    return {"no_cap": first(x), "attention_cap": first(50 * np.tanh(x / 50))}


def receptive_field_wrong(t: str) -> dict:
    L, W = int(fnum(t, "L")), int(fnum(t, "W"))
    if "Information from how many positions back" in t:
        return {"span": Fr(L * W), "one_layer": Fr(W - 1)}
    n = int(fnum(t, "n"))
    out = {"span": Fr(max(0, n - 1 - L * W) - (int(fnum(t, "s")) if "attention-sink" in t else 0))}
    if "attention-sink" in t:
        out["forgot_sinks"] = Fr(max(0, n - 1 - L * (W - 1)))
    return out


ANSWERS = {
    "context.ring_attention": ring_attention,
    "context.ulysses": ulysses,
    "flash.online_softmax": online_softmax,
    "flash.tiling_hbm": tiling_hbm,
    "mla.absorbed_decode": absorbed_decode,
    "moe.capacity_all_to_all": capacity_all_to_all,
    "moe.router_losses": router_losses,
    "paged.kv_blocks": kv_blocks,
    "rope.context_extension": context_extension,
    "serving.continuous_batching": continuous_batching,
    "serving.disaggregation": disaggregation,
    "softcap.gemma2": gemma2,
    "window.receptive_field": receptive_field,
}
#: every family audited here, with its MCQ view where the bank has one
WRONG = {
    "context.ring_attention": ring_attention_wrong,
    "context.ulysses": ulysses_wrong,
    "flash.online_softmax": online_softmax_wrong,
    "flash.tiling_hbm": tiling_hbm_wrong,
    "mla.absorbed_decode": absorbed_decode_wrong,
    "moe.capacity_all_to_all": capacity_all_to_all_wrong,
    "moe.router_losses": router_losses_wrong,
    "paged.kv_blocks": kv_blocks_wrong,
    "rope.context_extension": context_extension_wrong,
    "serving.continuous_batching": continuous_batching_wrong,
    "serving.disaggregation": disaggregation_wrong,
    "softcap.gemma2": gemma2_wrong,
    "window.receptive_field": receptive_field_wrong,
}
FIDS = with_views(ANSWERS)

#: drawing serving.continuous_batching is slow (about 50 ms a draw: the retries of the batch schedules): every other
#: seed of the block
globals().update(key_tests(ANSWERS, FIDS, "attention_systems", mistakes=WRONG,
                           seeds_for={"serving.continuous_batching": SEEDS[::2]}))


@pytest.mark.parametrize(("fid", "seed"), [("context.ring_attention", 153), ("context.ring_attention", 70167),
                                         ("context.ring_attention_mcq", 30), ("context.ring_attention_mcq", 208)])
def test_ring_attention_tie_is_stated(fid, seed):
    """Draws whose c* is a whole number (send = compute at c = c*): the text must say that a send taking as long
    as the compute is hidden, or a student who reads "hides" strictly answers c* + 1. (Found by this audit.)"""
    p = FAMILIES[fid].generate(seed, "hard")
    t = p.statement_text
    cstar = fnum(t, "hₖᵥ") * 2 * fnum(t, "F") * 10**12 / (2 * fnum(t, "h") * fnum(t, "β") * 10**9)
    assert cstar.denominator == 1, f"{p.id} is not a tie: c* = {float(cstar)}"
    msg = audit(p, ring_attention)
    assert msg is None, msg


if __name__ == "__main__":
    raise SystemExit(sweep_main(ANSWERS, FIDS, WRONG))
