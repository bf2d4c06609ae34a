"""Context parallelism for long sequences: ring attention and Ulysses sequence parallelism, per layer.

Sources: Liu et al. 2023, "Ring Attention with Blockwise Transformers for Near-Infinite Context"
(each device keeps its query block and passes its key/value block round a ring, overlapping the
send with the block's attention); Jacobs et al. 2023, "DeepSpeed Ulysses" (an all-to-all turns a
sequence-sharded Q, K, V into a head-sharded one before attention, and another turns the output back).

Conventions (named in each result):

- N tokens over P devices, c = N/P each (N divisible by P); B sequences; h query heads and h_kv
  key/value heads of size d_h; b bytes per element. Non-causal attention (a causal ring does half
  the work on average but its last device does the most: load balancing is another question).
- Ring: P steps per layer; at each of the first P − 1 the device sends its current K, V block,
  2·B·c·h_kv·d_h·b bytes, to its neighbour while it computes the block's attention,
  4·B·c²·h·d_h FLOPs (QKᵀ and AV, 2 per multiply-add). The send hides when α + bytes/β ≤
  FLOPs/(peak·MFU); the smallest such c (α = 0) is c* = peak·MFU·h_kv·b/(2·h·β).
- Ulysses: each device sends the (P − 1)/P of its Q, K, V (B·c·(h + 2h_kv)·d_h elements) that other
  devices' heads need, and later the same share of its output O (B·c·h·d_h): per device per layer
  B·c·d_h·(2h + 2h_kv)·b·(P − 1)/P bytes (``count_local=True``: without the (P − 1)/P). h and h_kv
  must be divisible by P.
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import dtype_bytes


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def _frac(name: str, value, zero: bool = False) -> Fraction:
    if value is None or isinstance(value, bool) or value < 0 or (value == 0 and not zero):
        raise SolverInputError(f"must be {'>= 0' if zero else 'positive'} (got {value!r})", param=name)
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def _split(N: int, P: int) -> int:
    if N % P:
        raise SolverInputError(f"{N} tokens do not split evenly over {P} devices", param="seq")
    return N // P


def ring_attention(seq: int, devices: int, n_heads: int | None, d_head: int, *, kv_heads: int | None = None,
                   batch: int = 1, dtype: str = "bf16", link_bandwidth=None, peak_flops=None, mfu=1,
                   latency=0) -> Result:
    """Bytes each device sends per ring step and per layer, the block's FLOPs, and (with a link and a
    chip) whether the send hides behind the compute. Answer: bytes sent per step.

    The bytes need only the K/V heads: without the query heads (``n_heads=None``) the FLOPs and
    the overlap are left out."""
    if n_heads is None and kv_heads is None:
        raise SolverInputError("give the K/V heads (the bytes) or the query heads (bytes and FLOPs)", param="n_heads")
    N, P, dh, B = _int("seq", seq), _int("devices", devices), _int("d_head", d_head), _int("batch", batch)
    h = None if n_heads is None else _int("n_heads", n_heads)
    hk = h if kv_heads is None else _int("kv_heads", kv_heads)
    c = _split(N, P)
    b = dtype_bytes(dtype)
    r = Result(answer=None, unit="bytes", convention={
        "source": "ring attention (Liu et al. 2023): K, V blocks passed round the ring, sends overlapped with compute",
        "split": f"c = N/P = {fmt(c)} tokens per device",
        "mask": "non-causal (every query block meets every key block once)",
        "steps": "P steps per layer, P − 1 sends", "flops": "QKᵀ and AV of one block pair, 2 per multiply-add",
        "dtype": f"{dtype}, {fmt(b)} bytes per element"})
    step = r.step("bytes per step = 2·B·c·h_kv·d_h·b", f"2 × {B} × {fmt(c)} × {hk} × {dh} × {fmt(b)}",
                  2 * B * c * hk * dh * b, "bytes")
    per_layer = r.step("bytes per layer = (P − 1)·bytes per step", f"{P - 1} × {fmt(step)}", (P - 1) * step, "bytes")
    if h is None:
        r.breakdown = {"chunk_tokens": c, "step_bytes": step, "layer_bytes": per_layer, "steps": P, "sends": P - 1}
        r.convention["flops"] = "not computed: the block's FLOPs need the query heads"
        r.answer = step
        return r
    flops = r.step("block FLOPs = 4·B·c²·h·d_h", f"4 × {B} × {fmt(c)}² × {h} × {dh}", 4 * B * c * c * h * dh, "FLOPs")
    r.breakdown = {"chunk_tokens": c, "step_bytes": step, "layer_bytes": per_layer, "block_flops": flops,
                   "steps": P, "sends": P - 1, "intensity_flops_per_byte": Fraction(flops) / step}
    if link_bandwidth is not None and peak_flops is not None:
        beta, F = _frac("link_bandwidth", link_bandwidth), _frac("peak_flops", peak_flops)
        u, alpha = _frac("mfu", mfu), _frac("latency", latency, zero=True)
        if u > 1:
            raise SolverInputError("MFU is at most 1", param="mfu")
        tc = r.step("compute per step = FLOPs/(peak·MFU)", f"{fmt(flops)}/({fmt(F)} × {fmt(u)})", flops / (F * u), "s")
        tm = r.step("send per step = α + bytes/β", f"{fmt(alpha)} + {fmt(step)}/{fmt(beta)}", alpha + step / beta, "s")
        cstar = r.step("c* = peak·MFU·h_kv·b/(2·h·β)", f"{fmt(F)} × {fmt(u)} × {hk} × {fmt(b)}/(2 × {h} × {fmt(beta)})",
                       F * u * hk * b / (2 * h * beta), "tokens")
        r.breakdown.update({"compute_s": tc, "send_s": tm, "hidden": tm <= tc, "min_chunk_to_hide": cstar,
                            "exposed_per_step_s": max(Fraction(0), tm - tc),
                            "layer_time_s": P * max(tc, tm) if P > 1 else tc})
        r.convention["overlap"] = ("a step takes max(compute, send); the send hides when it is no longer; c* ignores α")
    r.answer = step
    return r


def ulysses(seq: int, devices: int, n_heads: int, d_head: int, *, kv_heads: int | None = None, batch: int = 1,
            dtype: str = "bf16", count_local: bool = False, link_bandwidth=None, latency=0) -> Result:
    """Bytes each device sends in Ulysses' all-to-alls of one layer (Q, K, V in; O out). Answer: bytes."""
    N, P, h, dh, B = (_int("seq", seq), _int("devices", devices), _int("n_heads", n_heads), _int("d_head", d_head),
                      _int("batch", batch))
    hk = h if kv_heads is None else _int("kv_heads", kv_heads)
    if h % P or hk % P:
        raise SolverInputError(f"the heads ({h} query, {hk} key/value) must split evenly over {P} devices",
                               param="devices")
    c = _split(N, P)
    b = dtype_bytes(dtype)
    share = Fraction(1) if count_local else Fraction(P - 1, P)
    r = Result(answer=None, unit="bytes", convention={
        "source": "DeepSpeed Ulysses (Jacobs et al. 2023): all-to-all sequence→heads before attention, heads→sequence after",
        "split": f"c = N/P = {fmt(c)} tokens per device; h/P heads per device after the all-to-all",
        "count": "all of the device's Q, K, V, O counted" if count_local else
                 "only what leaves the device: (P − 1)/P of it",
        "dtype": f"{dtype}, {fmt(b)} bytes per element"})
    qkv = r.step("Q, K, V elements per device = B·c·(h + 2·h_kv)·d_h", f"{B} × {fmt(c)} × ({h} + 2 × {hk}) × {dh}",
                 B * c * (h + 2 * hk) * dh)
    o = r.step("O elements per device = B·c·h·d_h", f"{B} × {fmt(c)} × {h} × {dh}", B * c * h * dh)
    sent = r.step("bytes sent = (QKV + O)·b" + ("" if count_local else "·(P − 1)/P"),
                  f"({fmt(qkv)} + {fmt(o)}) × {fmt(b)}" + ("" if count_local else f" × {P - 1}/{P}"),
                  (qkv + o) * b * share, "bytes")
    r.breakdown = {"qkv_bytes_sent": qkv * b * share, "o_bytes_sent": o * b * share, "bytes_sent": sent,
                   "chunk_tokens": c, "heads_per_device": h // P}
    if link_bandwidth is not None:
        beta, alpha = _frac("link_bandwidth", link_bandwidth), _frac("latency", latency, zero=True)
        r.breakdown["time_s"] = r.step("time = 2α + bytes/β (two all-to-alls)", f"2 × {fmt(alpha)} + {fmt(sent)}/{fmt(beta)}",
                                       2 * alpha + sent / beta, "s")
    r.answer = sent
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's descriptions (solver.registry): qkv calc's
# ring_attention(...) and ulysses(...), from qkv solve ring-attention and ulysses.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402


def _float(v):
    return None if v is None else float(v)


def _heads_of(model, n_heads, d_head, kv_heads):
    if model is not None:
        n_heads, d_head, kv_heads = n_heads or model.n_heads, d_head or model.head_dim, kv_heads or model.kv_heads
    if d_head is None:
        raise SolverInputError("needs d_head (or a model)", param="d_head")
    return n_heads, d_head, kv_heads


def _cp_inputs(devices_help, devices_aliases):
    return (Input("seq", "N: sequence length", kind="count", integer=True, minimum=1, binary_k=True, aliases=("N",)),
            Input("devices", devices_help, kind="count", integer=True, minimum=1, aliases=devices_aliases),
            Input("n_heads", "h: query heads (or a model)", kind="count", integer=True, minimum=1, default=None,
                  aliases=("heads",)),
            Input("d_head", "d: head size (or a model)", kind="count", integer=True, minimum=1, default=None),
            Input("kv_heads", "h_kv: K/V heads (default n_heads)", kind="count", integer=True, minimum=1, default=None,
                  aliases=("n_kv_heads",)),
            Input("batch", "b: sequences", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
            Input("dtype", "activation dtype", kind="dtype", default="bf16"),
            Input("link", "β: link bandwidth per direction", unit="B/s", default=None,
                  aliases=("link_bandwidth", "bandwidth", "bw")),
            Input("latency", "α: seconds per send", unit="s", default=0, aliases=("alpha",)),
            Input("model", "a model preset or config: its heads and head size", kind="model", default=None,
                  aliases=("preset", "config")))


@formula("ring_attention", "Ring attention: the K/V bytes each device sends per ring step and layer, and whether they "
         "hide behind the block's compute.",
         (*_cp_inputs("P: devices in the ring", ("P", "cp")),
          Input("chip", "a chip preset: its peak at the dtype (the overlap)", kind="chip", default=None,
                aliases=("hw",)),
          Input("peak", "peak FLOP/s per device (the overlap)", unit="FLOP/s", default=None, aliases=("peak_flops",)),
          Input("mfu", "the share of the peak reached, 0 to 1", kind="fraction", default=1, maximum=1)),
         (Output("step_bytes", "B", "K/V bytes each device sends per step"),
          Output("layer_bytes", "B", "those of all P − 1 sends of a layer"),
          Output("block_flops", "FLOP", "one step's attention FLOPs", ("n_heads",)),
          Output("min_chunk_to_hide", "", "c*: the chunk above which the send hides", ("link", "peak")),
          Output("layer_time", "s", "P · max(compute, send)", ("link", "peak"), key="layer_time_s")),
         solve="ring-attention", source="Liu et al. 2023 (Ring Attention)")
def _ring_formula(seq, devices, n_heads, d_head, kv_heads, batch, dtype, link, latency, model, chip, peak, mfu):
    n_heads, d_head, kv_heads = _heads_of(model, n_heads, d_head, kv_heads)
    if peak is None and chip is not None:
        from solver.systems.chips import resolve_chip

        peak = resolve_chip(chip, dtype).peak_flops
    return ring_attention(seq, devices, n_heads, d_head, kv_heads=kv_heads, batch=batch, dtype=dtype,
                          link_bandwidth=_float(link), peak_flops=_float(peak) if link is not None else None,
                          mfu=float(mfu), latency=float(latency))


ULYSSES_COUNT = Convention("count", "Which of a device's Q, K, V, O bytes count as sent.", {
    "sent": Choice("only the (P − 1)/P that leaves the device", "Jacobs et al. 2023 (DeepSpeed-Ulysses)"),
    "local": Choice("all of them, the device's own share too (--count-local)", "")}, "sent")


@formula("ulysses", "Ulysses sequence parallelism: the all-to-all bytes each device sends per layer (Q, K, V in; "
         "O out).",
         _cp_inputs("P: sequence-parallel devices", ("P", "sp")),
         (Output("bytes", "B", "bytes each device sends per layer", key="bytes_sent"),
          Output("qkv_bytes", "B", "of which Q, K, V", key="qkv_bytes_sent"),
          Output("o_bytes", "B", "of which O", key="o_bytes_sent"),
          Output("time", "s", "2α + bytes/β (two all-to-alls)", ("link",), key="time_s")),
         conventions=(ULYSSES_COUNT,), solve="ulysses", source="Jacobs et al. 2023 (DeepSpeed-Ulysses)")
def _ulysses_formula(seq, devices, n_heads, d_head, kv_heads, batch, dtype, link, latency, model, count="sent"):
    n_heads, d_head, kv_heads = _heads_of(model, n_heads, d_head, kv_heads)
    if n_heads is None:
        raise SolverInputError("needs n_heads (or a model)", param="n_heads")
    return ulysses(seq, devices, n_heads, d_head, kv_heads=kv_heads, batch=batch, dtype=dtype,
                   count_local=count == "local", link_bandwidth=_float(link), latency=float(latency))


FORMULAS = (_ring_formula.formula, _ulysses_formula.formula)
