"""The kernels' chains of steps for ``qkv check``: attention, softmax, LayerNorm, RMSNorm,
sinusoidal PE and RoPE. Each chain holds the exact steps (from :mod:`solver.kernels.numpy_ref`), how a
step follows from the student's own earlier values (follow-through), and the typical mistakes,
each recomputed by the solver with the mistake applied. :func:`drills.check.steps.check_chain`
judges a student's steps against a chain."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from drills.check.steps import Chain, Mistakes, latest, safe, trace_steps
from solver.kernels import numpy_ref

# ---------------------------------------------------------------------------- attention

ATTENTION_LABELS = {"scores": "QKᵀ", "scaled": "QKᵀ/√dₖ", "masked": "QKᵀ/√dₖ + M", "weights": "weights A",
                    "output": "output A·V"}


def attention_chain(q: Any, k: Any, v: Any, mask: Any = None, *, causal: bool = False,
                    scale: float | None = None) -> Chain:
    """The attention chain: scores, scaled, [masked], weights, output (mask: 1 = may attend)."""
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    keep = None if mask is None else np.asarray(mask).astype(bool)
    d_k = q.shape[-1]
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)

    def run(q_=q, k_=k, v_=v, keep_=keep, scale_=s, convention="keep", causal_=causal):
        return trace_steps(lambda: numpy_ref.attention(q_, k_, v_, keep_, mask_convention=convention, causal=causal_,
                                                  scale=scale_, return_trace=True))

    exact = run()
    names = [n for n in ("scores", "scaled", "masked", "weights", "output") if n in exact]
    masked_name = "masked" if "masked" in names else "scaled"
    eye = np.eye(k.shape[-2])

    def from_step(name: str, value: np.ndarray, *, scale_: float = 1.0, masked: bool = True) -> dict[str, Any]:
        """Carry on the solver's pipeline from a student's value of ``name``: attention with
        Q = their matrix and K = I reproduces it as the scores (S·I = S)."""
        if name == "weights":
            return {"output": value @ v}
        if name == "output":
            return {}
        use_scale = scale_ if name == "scores" else 1.0
        use_mask = keep if (masked and name in ("scores", "scaled")) else None
        out = run(q_=value, k_=eye, keep_=use_mask, scale_=use_scale, causal_=causal and name != "masked")
        if name == "scaled":
            out.pop("scaled", None)
        return out

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = latest(theirs, names, name)
        if last is None:
            return None
        return from_step(last[0], last[1], scale_=s).get(name)

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        last = latest(theirs, names, name)
        base_name, base = last if last is not None else (None, None)
        prev = names[names.index(name) - 1] if names.index(name) > 0 else None
        if base_name != prev:  # only a value of the step right before can be the base
            base_name, base = prev, exact.get(prev) if prev else None
        out: Mistakes = []
        # one-step mistakes, from the student's previous step (or the exact one)
        if name == "scores":
            out.append(("scores transposed: you computed K·Qᵀ instead of Q·Kᵀ", run(q_=k, k_=q, v_=q).get("scores")))
            out.append(("used V instead of K: Q·Vᵀ", run(k_=v, v_=v).get("scores") if v.shape == k.shape else None))
        if name == "scaled" and base is not None:
            for desc, sc in ((f"not scaled: the scores were not divided by √dₖ = √{d_k}", 1.0),
                             (f"divided by dₖ = {d_k} instead of √dₖ", 1.0 / d_k),
                             ("multiplied by √dₖ instead of dividing", math.sqrt(d_k))):
                out.append((desc, from_step("scores", base, scale_=sc).get("scaled")))
        if name == "masked" and base is not None:
            blocked = ~_kept(keep, causal, base.shape)
            out.append(("blocked entries set to 0 instead of −∞", np.where(blocked, 0.0, base)))
            out.append(("mask not applied", base))
            out.append(("mask read the wrong way round (1 taken as blocked)",
                        run(convention="block", causal_=False).get("masked") if keep is not None else None))
        if name == "weights" and base is not None:
            out.append(("softmax over the wrong axis: each column sums to 1 instead of each row",
                        safe(lambda: numpy_ref.softmax(base, axis=-2))))
            out.append(("weights transposed", safe(lambda: numpy_ref.softmax(base).T)))
            blocked = ~_kept(keep, causal, base.shape)
            if blocked.any():
                out.append(("masked with 0 instead of −∞ before the softmax",
                            safe(lambda: numpy_ref.softmax(np.where(blocked, 0.0, exact["scaled"])))))
        if name == "output" and base is not None:
            out.append(("weights transposed: you computed Aᵀ·V", base.T @ v if base.shape[0] == base.shape[1] else None))
            col = safe(lambda: numpy_ref.softmax(exact[masked_name], axis=-2))
            out.append(("softmax over the wrong axis (columns) before multiplying by V", None if col is None else col @ v))
        # mistakes made earlier and carried to this step, from the inputs
        pipelines = [
            (f"not scaled: softmax of Q·Kᵀ without dividing by √dₖ = √{d_k}", run(scale_=1.0)),
            (f"divided by dₖ = {d_k} instead of √dₖ", run(scale_=1.0 / d_k)),
            ("multiplied by √dₖ instead of dividing", run(scale_=math.sqrt(d_k))),
            ("scores transposed (K·Qᵀ)", run(q_=k, k_=q) if q.shape == k.shape else {}),
        ]
        if keep is not None or causal:
            pipelines.append(("mask not applied", run(keep_=None, causal_=False)))
        if keep is not None:
            pipelines.append(("mask read the wrong way round (1 taken as blocked)", run(convention="block")))
        col_w = safe(lambda: numpy_ref.softmax(exact[masked_name], axis=-2))
        if col_w is not None:
            pipelines.append(("softmax over the wrong axis (columns)", {"weights": col_w, "output": col_w @ v}))
        out += [(desc, steps.get(name)) for desc, steps in pipelines if name in steps]
        return out

    conventions = {"scale": f"1/√dₖ = 1/√{d_k}" if scale is None else f"{s:g} (given)",
                   "softmax": "over each row (over the keys)"}
    if keep is not None or causal:
        conventions["mask"] = ("causal: query i sees keys j ≤ i" if causal else
                               "1 = may attend, 0 = blocked") + " (−∞ before the softmax)"
    return Chain("attention", names, ATTENTION_LABELS, exact, follow, mistakes, conventions=conventions)


def _kept(keep: np.ndarray | None, causal: bool, shape: tuple[int, ...]) -> np.ndarray:
    """Where the scores are kept (True) for this mask/causal setting, from :mod:`solver.kernels.masks`."""
    from solver.kernels import masks

    n, m = shape[-2], shape[-1]
    bias = masks.attention_bias(keep, masks.KEEP, causal, n, m, like=np.zeros(shape))
    return np.ones(shape, dtype=bool) if bias is None else np.broadcast_to(~np.isneginf(bias), shape)


# ---------------------------------------------------------------------------- softmax

SOFTMAX_LABELS = {"scaled": "x/T", "shifted": "x − max x", "exp": "exp", "sum": "Σ exp", "output": "softmax"}


def softmax_chain(x: Any, temperature: float = 1.0) -> Chain:
    """softmax: [scaled], shifted, exp, sum, output. exp and sum may be given unshifted
    (exp(xᵢ/T) and their sum), the way most people compute by hand: both are right."""
    x = np.asarray(x, dtype=float)
    t = float(temperature)

    def trace(x_=x, t_=t, axis=-1) -> dict[str, Any]:
        return trace_steps(lambda: numpy_ref.softmax(x_, axis=axis, temperature=t_, return_trace=True))

    exact = trace()
    sum_shape = () if x.ndim == 1 else np.shape(exact["sum"])
    exact["sum"] = np.reshape(exact["sum"], sum_shape)  # a vector's sum is one number
    names = [n for n in ("scaled", "shifted", "exp", "sum", "output") if n in exact]
    top = np.max(exact.get("scaled", x), axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # huge x: the unshifted alternative is inf and matches nothing
        unshift = np.exp(top)  # exp(max): the factor between exp(x) and exp(x − max x)
    unshift_sum = np.reshape(unshift, sum_shape)

    def alternatives(name: str) -> Mistakes:
        if name == "exp":
            return [("unshifted: exp(xᵢ/T) instead of exp(xᵢ/T − max); the same softmax", exact["exp"] * unshift)]
        if name == "sum":
            return [("unshifted: Σ exp(xᵢ/T); the same softmax", exact["sum"] * unshift_sum)]
        return []

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        if prev in ("scaled", "shifted"):
            return trace(x_=val, t_=1.0).get(name)
        if prev == "exp":
            if name == "sum":
                return np.reshape(val.sum(axis=-1), sum_shape)
            return val / val.sum(axis=-1, keepdims=True)
        if prev == "sum" and name == "output":
            e = theirs.get("exp")
            if e is None:  # their sum with the exact exp, in whichever convention the sum is closer to
                shifted_closer = np.max(abs(val - exact["sum"])) < np.max(abs(val - exact["sum"] * unshift_sum))
                e = exact["exp"] if shifted_closer else exact["exp"] * unshift
            return e / np.reshape(val, np.shape(val) + (1,) * (np.ndim(e) - np.ndim(val)))
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = []
        if t != 1.0:
            wrong_t = trace(t_=1.0 / t)
            out.append((f"temperature multiplied instead of divided: x·{t:g} instead of x/{t:g}",
                        wrong_t.get(name) if name != "exp" else None))
            no_t = trace(t_=1.0)
            out.append(("temperature ignored", no_t.get(name)))
        if name == "output":
            if np.all(x > 0):  # softmax(log x) = x/Σx: normalising without exponentiating
                out.append(("forgot to exponentiate: divided x by Σx", safe(lambda: numpy_ref.softmax(np.log(x)))))
            if x.ndim == 2:
                out.append(("softmax over the wrong axis (columns)", trace(axis=-2).get("output")))
        if name == "exp":
            out.append(("exp of the unshifted but unscaled x", trace(t_=1.0).get("exp")))
        return out

    conv = {"axis": "last (each row)", "temperature": f"{t:g}",
            "shift": "exp and sum accepted with or without subtracting max x"}
    return Chain("softmax", names, SOFTMAX_LABELS, exact, follow, mistakes, alternatives, conv)


# ---------------------------------------------------------------------------- norms

NORM_LABELS = {"mean": "μ", "variance": "σ²", "normalised": "x̂", "output": "γ·x̂ + β"}
RMSNORM_LABELS = {"mean_square": "mean(x²)", "rms": "rms", "normalised": "x̂", "output": "γ·x̂"}  # RMSNorm has no β


def layernorm_chain(x: Any, gamma: Any = None, beta: Any = None, eps: float = 1e-5) -> Chain:
    """LayerNorm: mean, variance (biased), normalised, output."""
    x = np.asarray(x, dtype=float)
    g = None if gamma is None else np.asarray(gamma, dtype=float)
    b = None if beta is None else np.asarray(beta, dtype=float)

    def trace(x_=x, g_=g, b_=b, eps_=eps) -> dict[str, Any]:
        return trace_steps(lambda: numpy_ref.layer_norm(x_, g_, b_, eps=eps_, return_trace=True))

    exact = trace()
    names = ["mean", "variance", "normalised", "output"]
    d = x.shape[-1]

    def affine(normalised: np.ndarray) -> np.ndarray:
        # the output step from a normalised vector: LayerNorm of an already normalised row with
        # ε = 0 returns it unchanged up to rounding, so apply γ, β through the solver
        return normalised * (1.0 if g is None else g) + (0.0 if b is None else b)

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        mean = theirs.get("mean", exact["mean"])
        var = theirs.get("variance", exact["variance"])
        if name == "variance" and prev == "mean":
            return ((x - np.asarray(val)[..., None]) ** 2).mean(axis=-1)
        if name == "normalised":
            return (x - np.asarray(mean)[..., None]) / np.sqrt(np.asarray(var)[..., None] + eps)
        if name == "output":
            if prev == "normalised":
                return affine(val)
            return affine((x - np.asarray(mean)[..., None]) / np.sqrt(np.asarray(var)[..., None] + eps))
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = []
        bessel = d / (d - 1) if d > 1 else None
        if name == "variance":
            if bessel:
                out.append((f"unbiased variance: divided by d − 1 = {d - 1} instead of d = {d} (LayerNorm uses "
                            "the biased one)", exact["variance"] * bessel))
            out.append(("standard deviation instead of variance", np.sqrt(exact["variance"])))
        if name in ("normalised", "output"):
            if bessel:
                v_u = exact["variance"] * bessel
                nu = (x - exact["mean"][..., None]) / np.sqrt(v_u[..., None] + eps)
                out.append((f"unbiased variance (divided by d − 1 = {d - 1}) in the normalisation",
                            nu if name == "normalised" else affine(nu)))
            nv = (x - exact["mean"][..., None]) / (exact["variance"][..., None] + eps)
            out.append(("divided by the variance instead of the standard deviation",
                        nv if name == "normalised" else affine(nv)))
            out.append(("ε left out", trace(eps_=0.0).get(name)))
            out.append(("RMSNorm instead of LayerNorm (mean not subtracted)",
                        trace_steps(lambda: numpy_ref.rms_norm(x, g, eps=eps, return_trace=True)).get(name)))
        if name == "output":
            out.append(("γ and β not applied", exact["normalised"]))
            if b is not None:
                out.append(("β not added", trace(b_=None).get("output")))
        return out

    conv = {"variance": "biased (divide by d), as torch.nn.LayerNorm", "eps": f"{eps:g}"}
    return Chain("layernorm", names, NORM_LABELS, exact, follow, mistakes, conventions=conv)


def rmsnorm_chain(x: Any, gamma: Any = None, eps: float = 1e-6) -> Chain:
    """RMSNorm: mean_square, rms, normalised, output."""
    x = np.asarray(x, dtype=float)
    g = None if gamma is None else np.asarray(gamma, dtype=float)

    def trace(x_=x, g_=g, eps_=eps) -> dict[str, Any]:
        return trace_steps(lambda: numpy_ref.rms_norm(x_, g_, eps=eps_, return_trace=True))

    exact = trace()
    names = ["mean_square", "rms", "normalised", "output"]

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        last = latest(theirs, names, name)
        if last is None:
            return None
        prev, val = last
        rms = theirs.get("rms")
        if name == "rms" and prev == "mean_square":
            return np.sqrt(val + eps)
        if name == "normalised":
            r = rms if rms is not None else np.sqrt(theirs["mean_square"] + eps)
            return x / np.asarray(r)[..., None]
        if name == "output":
            n = theirs.get("normalised")
            if n is None:
                r = rms if rms is not None else np.sqrt(theirs["mean_square"] + eps)
                n = x / np.asarray(r)[..., None]
            return n * (1.0 if g is None else g)
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        ln = trace_steps(lambda: numpy_ref.layer_norm(x, g, eps=eps, return_trace=True))
        out: Mistakes = [("ε left out", trace(eps_=0.0).get(name))]
        if name == "rms":
            out.append(("square root not taken (the mean square itself)", exact["mean_square"]))
            out.append(("mean subtracted first (the LayerNorm standard deviation)", np.sqrt(ln["variance"] + eps)))
        if name in ("normalised", "output"):
            out.append(("mean subtracted first (LayerNorm instead of RMSNorm)", ln.get(name)))
            ms = exact["mean_square"][..., None]
            div = x / (ms + eps)
            out.append(("divided by the mean square instead of its root", div if name == "normalised" else
                        div * (1.0 if g is None else g)))
        if name == "output":
            out.append(("γ not applied", exact["normalised"]))
        return out

    conv = {"eps": f"{eps:g}", "centring": "none (no mean subtracted, no β)"}
    return Chain("rmsnorm", names, RMSNORM_LABELS, exact, follow, mistakes, conventions=conv)


# ---------------------------------------------------------------------------- positions

PE_LABELS = {"angle": "pos/10000^(2i/d)", "output": "sin/cos(angle)"}
ROPE_LABELS = {"angle": "p·θᵢ", "cos": "cos(p·θᵢ)", "sin": "sin(p·θᵢ)", "output": "rotated x"}


def pe_chain(pos: float, d_model: int, dims: list[int], *, base: float = 10000.0,
             layout: str = "interleaved") -> Chain:
    """Sinusoidal PE at ``pos`` for the coordinates ``dims``: angle, output (vectors over dims;
    one number when one dim is asked)."""

    def values(pos_=pos, d_=d_model, dims_=None, layout_=layout, base_=base) -> dict[str, Any]:
        dims_ = dims if dims_ is None else dims_
        got = [trace_steps(lambda j=j: numpy_ref.pe_value(pos_, j, d_, base=base_, layout=layout_, return_trace=True))
               for j in dims_]
        if any(not s for s in got):
            return {}
        shape = (lambda a: np.array(a[0])) if len(dims) == 1 else np.array
        return {n: shape([s[n] for s in got]) for n in ("angle", "output")}

    exact = values()
    names = ["angle", "output"]
    other_layout = "concat" if layout == "interleaved" else "interleaved"

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        if name != "output" or "angle" not in theirs:
            return None
        # sin or cos of their angle: the kernel at position = their angle and i = 0 (angle = pos)
        ang = np.atleast_1d(theirs["angle"])
        out = [trace_steps(lambda a=a, j=j: numpy_ref.pe_value(float(a), j % 2 if layout == "interleaved" else
                                                          (0 if j < (d_model + 1) // 2 else (d_model + 1) // 2),
                                                          d_model, base=base, layout=layout,
                                                          return_trace=True)).get("output")
               for a, j in zip(ang, dims, strict=False)]
        if any(o is None for o in out) or len(out) != len(dims):
            return None
        return np.array(out[0]) if len(dims) == 1 else np.array(out)

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        swapped = [j ^ 1 for j in dims] if layout == "interleaved" and all((j ^ 1) < d_model for j in dims) else None
        out: Mistakes = []
        if swapped is not None and name == "output":
            out.append(("sin and cos swapped (sin belongs to even dims 2i, cos to odd 2i+1)",
                        values(dims_=swapped).get("output")))
        out.append((f"{other_layout} layout instead of {layout}", values(layout_=other_layout).get(name)))
        out.append(("used i instead of 2i in the exponent: pos/10000^(i/d)", values(d_=2 * d_model).get(name)))
        out.append(("used the dimension index itself in the exponent: pos/10000^(dim/d)",
                    values(d_=2 * d_model, dims_=[2 * j for j in dims]).get(name) if name == "angle" else None))
        if name == "output":
            out.append(("calculator in degrees: sin/cos of the angle read in degrees",
                        values(pos_=pos * math.pi / 180).get("output")))
        return out

    conv = {"layout": layout, "base": f"{base:g}", "angle": "pos / base^(2i/d_model), i = frequency index"}
    return Chain("pe", names, PE_LABELS, exact, follow, mistakes, conventions=conv)


def rope_chain(x: Any, pos: float, *, base: float = 10000.0, pairing: str = "interleaved") -> Chain:
    """RoPE of one vector at ``pos``: angle, cos, sin, output (vectors)."""
    x = np.asarray(x, dtype=float)

    def trace(x_=x, pos_=pos, base_=base, pairing_=pairing) -> dict[str, Any]:
        got = trace_steps(lambda: numpy_ref.rope(x_[None, :], np.array([float(pos_)]), base=base_, pairing=pairing_,
                                            return_trace=True))
        return {n: np.asarray(v)[0] for n, v in got.items()}

    exact = trace()
    names = ["angle", "cos", "sin", "output"]
    other = "half" if pairing == "interleaved" else "interleaved"

    def follow(name: str, theirs: dict[str, np.ndarray]) -> Any:
        if "angle" in theirs and name in ("cos", "sin"):
            return np.cos(theirs["angle"]) if name == "cos" else np.sin(theirs["angle"])
        if name == "output" and ("cos" in theirs or "sin" in theirs or "angle" in theirs):
            ang = theirs.get("angle", exact["angle"])
            c = theirs.get("cos", np.cos(ang))
            s = theirs.get("sin", np.sin(ang))
            if pairing == "interleaved":
                a, b = x[0::2], x[1::2]
                return np.stack([a * c - b * s, a * s + b * c], axis=-1).reshape(-1)
            a, b = x[: x.size // 2], x[x.size // 2:]
            return np.concatenate([a * c - b * s, a * s + b * c])
        return None

    def mistakes(name: str, theirs: dict[str, np.ndarray]) -> Mistakes:
        out: Mistakes = [
            ("rotated the wrong way (by −pθᵢ)", trace(pos_=-pos).get(name) if name != "angle" else None),
            (f"{other} pairing instead of {pairing}", trace(pairing_=other).get(name) if name == "output" else None),
            ("used i instead of 2i in θᵢ = base^(−2i/d)", trace(base_=math.sqrt(base)).get(name)),
            ("calculator in degrees", trace(pos_=pos * math.pi / 180).get(name) if name != "angle" else None),
        ]
        if name in ("cos", "sin"):
            out.append(("cos and sin swapped", exact["sin" if name == "cos" else "cos"]))
        return out

    conv = {"pairing": pairing, "base": f"{base:g}", "theta": "θᵢ = base^(−2i/d)"}
    return Chain("rope", names, ROPE_LABELS, exact, follow, mistakes, conventions=conv)
