"""The registry's descriptions (solver.registry) of the vector kernels ``qkv solve`` exposes:
softmax, cross-entropy, layernorm, rmsnorm, pe, rope, softcap and sampling, as ``qkv calc``
functions over vector inputs (``softmax([1, 2, 3])``) (issue 44).

Kept apart from the kernels (:mod:`solver.kernels.numpy_ref`, :mod:`solver.kernels.loss`,
:mod:`solver.kernels.sampling`), which import NumPy: listing the registry must not (``qkv calc``
starts without it); each kernel is imported when its formula is called, and called as the
``qkv solve`` command calls it.
"""

from __future__ import annotations

import math

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Input, Output, formula
from solver.result import Result

#: logits, scores and activations: plain numbers within ±10^6 (exp stays in range after the shift)
_BOUND = 10**6


def _vector(name: str, help: str, **kw) -> Input:
    return Input(name, help, kind="vector", minimum=-_BOUND, maximum=_BOUND, **kw)


def _guarded(fn, *args, **kwargs):
    """``fn(...)`` with NumPy's floating-point warnings turned into one line (as ``qkv solve``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return fn(*args, **kwargs)
        except (RuntimeWarning, FloatingPointError) as w:
            raise SolverInputError(f"the numbers are beyond what 64-bit floats hold here ({w}); use smaller "
                                   "magnitudes", param=None) from None


def _plain(v):
    return v.tolist() if hasattr(v, "tolist") else v


def _traced(answer, unit, convention, trace, row: bool = False) -> Result:
    """A Result whose steps are a kernel's trace and whose breakdown holds every step's value
    (``row``: the kernel ran on one row, [x]; each value is taken back out of it)."""
    r = Result(answer=_plain(answer), unit=unit, convention=convention)
    for s in trace:
        v = _plain(s.value)
        if row and isinstance(v, list) and len(v) == 1 and isinstance(v[0], list):
            v = v[0]
        r.step(s.name, s.formula, v)
        r.breakdown[s.name] = v
    return r


def _positive(name: str, v) -> float:
    v = float(v)
    if not (v > 0 and math.isfinite(v)):
        raise SolverInputError(f"{name} must be > 0 (got {v:g})", param=name)
    return v


# --------------------------------------------------------------------------- softmax and loss


@formula("softmax", "Softmax of a vector: exp(x/T − max) / Σ exp(x/T − max).",
         (_vector("x", "the scores", aliases=("scores", "logits")),
          Input("temperature", "T > 0: softmax(x / T)", kind="fraction", default=1, minimum=0, maximum=10**6,
                aliases=("t", "T"))),
         (Output("probabilities", "", "softmax(x / T), summing to 1", key="output", kind="vector"),
          Output("exp", "", "exp(x/T − max x/T) per entry", kind="vector"),
          Output("sum", "", "Σ exp, the denominator", key="total")),
         solve="softmax", source="Bridle 1990; Goodfellow et al. 2016, §6.2.2.3")
def _softmax(x, temperature=1):
    import numpy as np

    from solver.kernels import numpy_ref

    t = _positive("temperature", temperature)
    out, tr = _guarded(numpy_ref.softmax, np.array(x, dtype=float), temperature=t, return_trace=True)
    r = _traced(out, "", {"axis": "last", "temperature": t, "shift": "max x is subtracted before exp"}, tr)
    total = r.breakdown.get("sum")
    r.breakdown["total"] = total[0] if isinstance(total, list) else total
    return r


@formula("cross_entropy", "Cross-entropy −ln softmax(z)_y in nats, with bits and the perplexity of that one token.",
         (_vector("logits", "the logits z", aliases=("z",)),
          Input("target", "the target class y (from 0, as PyTorch's targets)", kind="count", integer=True,
                aliases=("y", "label")),
          Input("label_smoothing", "PyTorch's ε: (1 − ε)·one-hot + ε/C", kind="fraction", default=0, maximum=1,
                aliases=("smoothing",))),
         (Output("loss", "", "the loss in nats", key="output"),
          Output("bits", "", "the loss in bits"),
          Output("perplexity", "", "e^(nats) of this one token"),
          Output("log_probs", "", "ln pᵢ for every class", kind="vector"),
          Output("logsumexp", "", "logsumexp(z)", key="lse")),
         solve="cross-entropy", source="PyTorch torch.nn.functional.cross_entropy; Szegedy et al. 2016 (smoothing)")
def _cross_entropy(logits, target, label_smoothing=0):
    from solver.kernels.loss import cross_entropy as ce

    if target >= len(logits):
        raise SolverInputError(f"class indices must lie in 0 … {len(logits) - 1}", param="target")
    loss, tr = _guarded(ce, [logits], [target], label_smoothing=float(label_smoothing), return_trace=True)
    eps = float(label_smoothing)
    r = _traced(float(loss), "nats", {"log": "natural (nats), as torch.nn.functional.cross_entropy",
                                      "label_smoothing": f"ε = {eps:g}" if eps else "none",
                                      "perplexity": "e^(nats) = 2^(bits)"}, tr, row=True)
    r.breakdown["output"] = float(loss)
    r.breakdown["lse"] = r.breakdown["logsumexp"][0]
    r.breakdown["bits"] = float(loss) / math.log(2)
    r.breakdown["perplexity"] = math.exp(float(loss)) if loss < 700 else float("inf")
    return r


# --------------------------------------------------------------------------- norms


@formula("layernorm", "LayerNorm of a vector: γ·(x − μ)/√(σ² + ε) + β, biased variance (as torch.nn.LayerNorm).",
         (_vector("x", "the input vector"),
          Input("gamma", "scale γ (default all ones)", kind="vector", default=None, minimum=-_BOUND, maximum=_BOUND),
          Input("beta", "shift β (default all zeros)", kind="vector", default=None, minimum=-_BOUND, maximum=_BOUND),
          Input("eps", "ε added to the variance", kind="fraction", default=1e-5, maximum=1,
                aliases=("epsilon",))),
         (Output("output", "", "the normalised vector", kind="vector"),
          Output("mean", "", "μ", key="mu"),
          Output("variance", "", "σ² (divides by d)", key="var")),
         solve="layernorm", source="Ba et al. 2016; torch.nn.LayerNorm")
def _layernorm(x, gamma=None, beta=None, eps=1e-5):
    import numpy as np

    from solver.kernels import numpy_ref

    for name, v in (("gamma", gamma), ("beta", beta)):
        if v is not None and len(v) != len(x):
            raise SolverInputError(f"{name} has {len(v)} entries but x has {len(x)}", param=name)
    out, tr = _guarded(numpy_ref.layer_norm, np.array(x, dtype=float), None if gamma is None else np.array(gamma, float),
                       None if beta is None else np.array(beta, float), eps=float(eps), return_trace=True)
    r = _traced(out, "", {"variance": "biased: divides by d", "eps": float(eps)}, tr)
    r.breakdown["mu"] = _scalar(r.breakdown.get("mean"))
    r.breakdown["var"] = _scalar(r.breakdown.get("variance"))
    return r


def _scalar(v):
    while isinstance(v, list) and len(v) == 1:
        v = v[0]
    return v


@formula("rmsnorm", "RMSNorm of a vector: γ·x/√(mean(x²) + ε) (no centring, no β).",
         (_vector("x", "the input vector"),
          Input("gamma", "scale γ (default all ones)", kind="vector", default=None, minimum=-_BOUND, maximum=_BOUND),
          Input("eps", "ε added to mean(x²)", kind="fraction", default=1e-6, maximum=1, aliases=("epsilon",))),
         (Output("output", "", "the normalised vector", kind="vector"),
          Output("rms", "", "√(mean(x²) + ε)", key="rms_value")),
         solve="rmsnorm", source="Zhang & Sennrich 2019")
def _rmsnorm(x, gamma=None, eps=1e-6):
    import numpy as np

    from solver.kernels import numpy_ref

    if gamma is not None and len(gamma) != len(x):
        raise SolverInputError(f"gamma has {len(gamma)} entries but x has {len(x)}", param="gamma")
    out, tr = _guarded(numpy_ref.rms_norm, np.array(x, dtype=float), None if gamma is None else np.array(gamma, float),
                       eps=float(eps), return_trace=True)
    r = _traced(out, "", {"eps": float(eps)}, tr)
    r.breakdown["rms_value"] = _scalar(r.breakdown.get("rms"))
    return r


# --------------------------------------------------------------------------- positions

LAYOUT = Convention("layout", "How the sines and cosines are laid out.", {
    "interleaved": Choice("sin, cos, sin, cos, … (dim 2i = sin, 2i+1 = cos)", "Vaswani et al. 2017"),
    "concat": Choice("the paper's frequencies, all sines first, then all cosines"),
    "tensor2tensor": Choice("tensor2tensor's d/2 timescales 10000^(−i/(d/2−1)), sines then cosines",
                            "tensor2tensor; The Illustrated Transformer")}, "interleaved")

PE_VECTOR_LIMIT = 8192


@formula("pe", "Sinusoidal positional encoding: sin/cos(pos/base^(2i/d)); the whole vector, or one coordinate (dim=).",
         (Input("pos", "the position (0 = first token)", kind="fraction", minimum=None, aliases=("position",)),
          Input("d_model", "d: the model width", kind="count", integer=True, minimum=1, maximum=10**6,
                aliases=("d",)),
          Input("dim", "one coordinate 0 ≤ dim < d (default: all)", kind="count", integer=True, default=None,
                aliases=("i",)),
          Input("base", "the base of the wavelengths", kind="fraction", default=10000, minimum=1)),
         (Output("value", "", "PE[pos] (one coordinate with dim=)", key="output", kind="vector or number"),
          Output("angle", "", "the angle of each coordinate", kind="vector or number")),
         conventions=(LAYOUT,), solve="pe", source="Vaswani et al. 2017, §3.5")
def _pe(pos, d_model, dim=None, base=10000, layout="interleaved"):
    from solver.kernels import numpy_ref

    if float(base) <= 1:
        raise SolverInputError(f"base must be > 1 (got {float(base):g})", param="base")
    if dim is not None and dim >= d_model:
        raise SolverInputError(f"dim must be below d_model = {d_model} (got {dim})", param="dim")
    if dim is None and d_model > PE_VECTOR_LIMIT:
        raise SolverInputError(f"the whole vector is given for d_model up to {PE_VECTOR_LIMIT}; ask one coordinate "
                               "with dim=", param="d_model")
    angles, values = [], []
    for j in ([dim] if dim is not None else range(d_model)):
        v, t = _guarded(numpy_ref.pe_value, float(pos), j, d_model, base=float(base), layout=layout,
                        return_trace=True)
        angles.append(float(t["angle"].value))
        values.append(float(v))
    one = dim is not None
    r = Result(answer=values[0] if one else values, unit="", convention={"layout": layout, "base": float(base)})
    r.step("angle", "pos / base^(2i/d) per coordinate", angles[0] if one else angles)
    r.step("output", "sin or cos of its angle", r.answer)
    r.breakdown.update(output=r.answer, angle=angles[0] if one else angles)
    return r


PAIRING = Convention("pairing", "Which coordinates form a rotation pair.", {
    "interleaved": Choice("(x0, x1), (x2, x3), …", "GPT-J, RoFormer"),
    "half": Choice("(xᵢ, x_{i+d/2})", "GPT-NeoX, LLaMA")}, "interleaved")


@formula("rope", "Rotary position embedding of one vector at position P: each pair turns by P·θᵢ, θᵢ = base^(−2i/d).",
         (_vector("x", "the vector (even length d)"),
          Input("pos", "its position", kind="fraction", minimum=None, aliases=("position",)),
          Input("base", "the base θ of the frequencies (HuggingFace's rope_theta)", kind="fraction", default=10000,
                minimum=1, aliases=("theta", "rope_theta"))),
         (Output("output", "", "the rotated vector", kind="vector"),
          Output("angle", "", "P·θᵢ per pair", kind="vector")),
         conventions=(PAIRING,), solve="rope", source="Su et al. 2021 (RoFormer)")
def _rope(x, pos, base=10000, pairing="interleaved"):
    import numpy as np

    from solver.kernels import numpy_ref

    if len(x) % 2:
        raise SolverInputError(f"RoPE rotates pairs: the length must be even, got {len(x)}", param="x")
    if float(base) <= 1:
        raise SolverInputError(f"base must be > 1 (got {float(base):g})", param="base")
    out, tr = _guarded(numpy_ref.rope, np.array(x, dtype=float)[None, :], np.array([float(pos)]), base=float(base),
                       pairing=pairing, return_trace=True)
    return _traced(np.asarray(out)[0], "", {"pairing": pairing, "base": float(base)}, tr, row=True)


# --------------------------------------------------------------------------- softcap, sampling


@formula("softcap", "Logit soft-capping (Gemma 2): cap·tanh(x/cap) of each entry, and its gradient.",
         (_vector("x", "logits or scores"),
          Input("cap", "the cap (Gemma 2: 50 for attention scores, 30 for final logits)", kind="fraction",
                minimum=0, maximum=10**6)),
         (Output("capped", "", "cap·tanh(x/cap)", kind="vector"),
          Output("gradient", "", "1 − tanh²(x/cap)", kind="vector"),
          Output("shrink", "", "x − capped", kind="vector")),
         solve="softcap", source="Gemma Team 2024, §2")
def _softcap(x, cap):
    from solver.kernels.softcap import softcap

    return softcap(x, _positive("cap", cap))


CROSSING = Convention("crossing", "The token whose probability crosses p.", {
    "include": Choice("in the set", "HuggingFace TopPLogitsWarper"),
    "exclude": Choice("left out (at least one kept)")}, "include")


@formula("sampling", "The tokens temperature, top-k and top-p leave, and their renormalised probabilities.",
         (_vector("logits", "the logits z", aliases=("z",)),
          Input("temperature", "T > 0: softmax(z / T)", kind="fraction", default=1, minimum=0, maximum=10**6,
                aliases=("t", "T")),
          Input("top_k", "keep the k largest (ties with the k-th kept)", kind="count", integer=True, minimum=1,
                default=None, aliases=("k",)),
          Input("top_p", "nucleus: the smallest set whose mass reaches p (0 < p ≤ 1)", kind="fraction", maximum=1,
                default=None, aliases=("p",))),
         (Output("probabilities", "", "p renormalised over the set (0 outside)", key="output", kind="vector"),
          Output("kept", "", "the kept tokens (from 0), most probable first", kind="vector"),
          Output("set_size", "", "how many tokens are kept")),
         conventions=(CROSSING,), solve="sampling", source="Holtzman et al. 2020; HuggingFace generate")
def _sampling(logits, temperature=1, top_k=None, top_p=None, crossing="include"):
    from solver.kernels.sampling import sampling_set

    if top_p is not None and not float(top_p) > 0:
        raise SolverInputError(f"top_p must be > 0 (got {float(top_p):g})", param="top_p")
    (kept, probs), tr = _guarded(sampling_set, logits, temperature=_positive("temperature", temperature),
                                 top_k=top_k, top_p=None if top_p is None else float(top_p), crossing=crossing,
                                 return_trace=True)
    r = _traced(kept, "tokens", {"order": "temperature, then top-k, then top-p (HuggingFace generate)"}, tr)
    r.breakdown["set_size"] = len(kept)
    return r


# --------------------------------------------------------------------------- attention and relative positions

ON_OFF = {"off": Choice("no causal mask"), "on": Choice("query i sees keys j ≤ i + (m − n) (bottom-right aligned)")}


def _matrix(name: str, help: str, **kw) -> Input:
    return Input(name, help, kind="matrix", minimum=-_BOUND, maximum=_BOUND, **kw)


@formula("attention", "Scaled dot-product attention: softmax(Q·Kᵀ·scale + M)·V, scale = 1/√d_k (rows are tokens).",
         (_matrix("q", "queries Q (n×d_k)", aliases=("Q",)),
          _matrix("k", "keys K (m×d_k)", aliases=("K",)),
          _matrix("v", "values V (m×d_v)", aliases=("V",)),
          Input("mask", "1 = may attend, 0 = blocked (n×m)", kind="matrix", default=None, minimum=0, maximum=1,
                integer=True),
          Input("scale", "the score scale instead of 1/√d_k", kind="fraction", default=None, minimum=None)),
         (Output("output", "", "the attention output (n×d_v)", kind="matrix"),
          Output("weights", "", "softmax of the scaled scores (n×m)", kind="matrix"),
          Output("scores", "", "Q·Kᵀ (n×m)", kind="matrix")),
         conventions=(Convention("causal", "A causal mask.", ON_OFF, "off"),),
         solve="attention", source="Vaswani et al. 2017, §3.2.1")
def _attention(q, k, v, mask=None, scale=None, causal="off"):
    import numpy as np

    from solver.kernels import numpy_ref

    n, m = len(q), len(k)
    if len(k[0]) != len(q[0]):
        raise SolverInputError(f"K is {m}×{len(k[0])} but Q is {n}×{len(q[0])}: Q and K need the same number of "
                               "columns d_k", param="k")
    if len(v) != m:
        raise SolverInputError(f"V has {len(v)} rows but K has {m}: one value row per key row", param="v")
    if mask is not None and (len(mask), len(mask[0])) != (n, m):
        raise SolverInputError(f"mask is {len(mask)}×{len(mask[0])} but the scores Q·Kᵀ are {n}×{m}", param="mask")
    out, tr = _guarded(numpy_ref.attention, np.array(q, float), np.array(k, float), np.array(v, float),
                       None if mask is None else np.array(mask, dtype=bool), mask_convention="keep",
                       causal=causal == "on", scale=None if scale is None else float(scale), return_trace=True)
    return _traced(out, "", {"scale": float(scale) if scale is not None else 1 / len(q[0]) ** 0.5,
                             "mask": "1 = may attend", "causal": causal}, tr)


@formula("alibi", "ALiBi: the head slopes (the paper's rule for any head count), or one head's bias −m_h·(i − j).",
         (Input("heads", "H: the number of heads", kind="count", integer=True, minimum=1, maximum=4096,
                aliases=("n_heads",)),
          Input("head", "head h (from 1), for one bias value", kind="count", integer=True, minimum=1, default=None),
          Input("query", "query position i", kind="count", integer=True, default=None, aliases=("i",)),
          Input("key", "key position j (≤ i when causal)", kind="count", integer=True, default=None, aliases=("j",))),
         (Output("value", "", "the bias −m_h·(i − j) with head=, query=, key=; else the slopes", kind="vector or number"),
          Output("slopes", "", "m_1 … m_H", kind="vector"),
          Output("bias", "", "−m_h·(i − j)", ("head", "query", "key")),
          Output("slope", "", "m_h", ("head",))),
         conventions=(Convention("bidirectional", "Symmetric −m·|i − j| instead of the causal form.",
                                 {"off": Choice("causal: keys after the query are −∞"),
                                  "on": Choice("−m_h·|i − j|")}, "off"),),
         solve="alibi", source="Press et al. 2022")
def _alibi(heads, head=None, query=None, key=None, bidirectional="off"):
    from solver.kernels import numpy_ref

    slopes = [float(s) for s in numpy_ref.alibi_slopes(heads)]
    r = Result(answer=slopes, unit="slopes", convention={"form": bidirectional})
    r.step("slopes m_1 … m_H", f"H = {heads}", slopes)
    r.breakdown["slopes"] = slopes
    given = [x is not None for x in (head, query, key)]
    if any(given) and not all(given):
        raise SolverInputError("one bias value needs head=, query= and key= together", param="head")
    if head is not None:
        if head > heads:
            raise SolverInputError(f"head {head} does not exist: there are {heads}", param="head")
        if key > query and bidirectional == "off":
            raise SolverInputError(f"key {key} is after query {query}: the causal bias is −∞ there "
                                   "(bidirectional=on)", param="key")
        m = slopes[head - 1]
        r.answer = r.step(f"bias = −m_{head}·(i − j)", f"−{m:.6g} × {abs(query - key)}", -m * abs(query - key))
        r.breakdown.update(bias=r.answer, slope=m)
    r.breakdown["value"] = r.answer
    return r


@formula("t5_buckets", "T5's relative-position bucket of r = key − query: exact region, then logarithmic, capped.",
         (Input("r", "relative position key − query (negative: key before)", kind="count", integer=True,
                minimum=-10**9, maximum=10**9, aliases=("relative",)),
          Input("num_buckets", "n_b: buckets", kind="count", integer=True, minimum=2, maximum=10**6, default=32),
          Input("max_distance", "where the buckets stop growing", kind="count", integer=True, minimum=1,
                default=128),
          Input("heads", "heads, for the bias table's parameters", kind="count", integer=True, minimum=1,
                maximum=10**6, default=None, aliases=("n_heads",))),
         (Output("bucket", "", "the bucket index (from 0)", key="output"),
          Output("bias_table_params", "", "num_buckets × heads", ("heads",))),
         conventions=(Convention("direction", "Encoder or decoder buckets.",
                                 {"bidirectional": Choice("half the buckets per direction (encoder)"),
                                  "causal": Choice("all buckets for the past (decoder)")}, "bidirectional"),),
         solve="t5-buckets", source="Raffel et al. 2020; HuggingFace T5Attention._relative_position_bucket")
def _t5_buckets(r, num_buckets=32, max_distance=128, heads=None, direction="bidirectional"):
    from solver.kernels.positions_relative import t5_bias_table_params, t5_bucket

    b, tr = t5_bucket(r, bidirectional=direction == "bidirectional", num_buckets=num_buckets,
                      max_distance=max_distance, return_trace=True)
    res = _traced(b, "bucket", {"direction": direction}, tr)
    res.breakdown["output"] = int(b)
    if heads:
        res.breakdown["bias_table_params"] = t5_bias_table_params(num_buckets, heads)
    return res


@formula("rope_score", "The score RoPE(q, m)·RoPE(k, n), directly and through m − n only.",
         (_vector("q", "the query vector (even length)"),
          _vector("k", "the key vector"),
          Input("m", "the query position", kind="fraction", minimum=-10**9, maximum=10**9),
          Input("n", "the key position", kind="fraction", minimum=-10**9, maximum=10**9),
          Input("base", "the base θ of the frequencies", kind="fraction", default=10000, minimum=1, maximum=10**12,
                aliases=("theta",))),
         (Output("score", "", "RoPE(q, m)·RoPE(k, n)"),
          Output("relative", "", "the same score from m − n alone"),
          Output("q_rotated", "", "RoPE(q, m)", kind="vector"),
          Output("k_rotated", "", "RoPE(k, n)", kind="vector")),
         conventions=(PAIRING,), solve="rope-score", source="Su et al. 2021 (RoFormer), §3.4")
def _rope_score(q, k, m, n, base=10000, pairing="interleaved"):
    from solver.kernels.positions_relative import rope_score

    if len(q) != len(k):
        raise SolverInputError(f"q has {len(q)} entries and k {len(k)}", param="k")
    if len(q) % 2:
        raise SolverInputError("RoPE rotates pairs: give an even number of entries", param="q")
    if float(base) <= 1:
        raise SolverInputError(f"base must be > 1 (got {float(base):g})", param="base")
    score, tr = _guarded(rope_score, [float(x) for x in q], [float(x) for x in k], float(m), float(n),
                         base=float(base), pairing=pairing, return_trace=True)
    return _traced(score, "", {"pairing": pairing}, tr)


@formula("router_loss", "Switch Transformer load-balancing loss and router z-loss, from router logits (tokens × experts).",
         (_matrix("logits", "router logits, one row per token, one column per expert"),
          Input("top_k", "experts per token", kind="count", integer=True, minimum=1, default=1, aliases=("k",)),
          Input("alpha", "load-balancing coefficient α (1e-2 in Switch)", kind="fraction", default=1, maximum=10**6),
          Input("z_coef", "z-loss coefficient (1e-3 in ST-MoE)", kind="fraction", default=1, maximum=10**6)),
         (Output("loss", "", "α·E·Σ f_i·P_i", key="load_balancing_loss"),
          Output("z_loss", "", "z_coef · mean(logsumexp²)"),
          Output("f", "", "f_i: the fraction routed to each expert", kind="vector"),
          Output("P", "", "P_i: the mean router probability of each expert", kind="vector")),
         conventions=(Convention("f_per", "What f_i counts over.", {
             "assignments": Choice("over T·k assignments (uniform gives α)", "Fedus et al. 2022"),
             "tokens": Choice("over T tokens", "HuggingFace Mixtral load_balancing_loss_func")}, "assignments"),),
         solve="router-loss", source="Fedus et al. 2022 (Switch), eq. 4; Zoph et al. 2022 (ST-MoE)")
def _router_loss(logits, top_k=1, alpha=1, z_coef=1, f_per="assignments"):
    from solver.kernels.router_loss import router_losses

    return _guarded(router_losses, [[float(x) for x in r] for r in logits], top_k=top_k, alpha=float(alpha),
                    z_coef=float(z_coef), f_per=f_per)


FORMULAS = tuple(f.formula for f in (_softmax, _cross_entropy, _layernorm, _rmsnorm, _attention, _pe, _rope, _alibi,
                                          _t5_buckets, _softcap, _sampling, _rope_score, _router_loss))
