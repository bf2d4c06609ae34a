"""Sliding-window attention by hand: the band of (query, key) pairs, its FLOPs, the receptive field.

A layer with window W lets the query at position p see keys p − W < j ≤ p (itself and the W − 1
positions before it; Mistral 7B §2, HuggingFace's ``sliding_window``). Over a causal sequence of n
tokens the band holds Σ_p min(p + 1, W) pairs: n(n + 1)/2 when n ≤ W, else W(W + 1)/2 + (n − W)·W.
A kernel that computes only the band spends 4·h·d_h FLOPs per pair and layer (QKᵀ and AV, 2 per
multiply-add); the reference model computes the whole rectangle and masks it
(``solver.counting.flops``), as a dense masked kernel does.

Receptive field: information moves at most W − 1 positions back per windowed layer, so after L
layers a token depends on the L·(W − 1) positions before it (Mistral 7B §2 rounds this to L·W:
"up to k × W tokens" after k layers). A global layer (Gemma 2's every other layer) sees the whole
prefix, so the field is then unbounded (the whole sequence).
"""

from __future__ import annotations

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError


def _int(name: str, value: int, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return value


def attention_pairs(n: int, window: int = 0, causal: bool = True) -> int:
    """(query, key) pairs a layer attends over for n tokens: n² (bidirectional), n(n+1)/2 (causal),
    or the causal band of width ``window`` (0 = no window)."""
    _int("seq", n, 1)
    _int("window", window, 0)
    if not causal:
        if window:
            raise SolverInputError("a window is modelled for causal attention only", param="window")
        return n * n
    if not window or n <= window:
        return n * (n + 1) // 2
    return window * (window + 1) // 2 + (n - window) * window


def banded_attention_flops(cfg: ModelConfig, batch: int, seq: int) -> int:
    """Forward FLOPs of QKᵀ and AV that a band-only (causal, windowed) kernel spends, all layers:
    Σ_layers 4·B·h·pairs·d_h (a global layer's pairs are the causal triangle)."""
    _int("batch", batch, 1)
    L = cfg.decoder_layers
    local = cfg.local_layers_of(L)
    per_pair = 2 * cfg.n_heads * (cfg.qk_head_dim + cfg.value_head_dim)
    return batch * per_pair * (local * attention_pairs(seq, cfg.sliding_window)
                               + (L - local) * attention_pairs(seq))


def receptive_field(cfg: ModelConfig) -> int | None:
    """Positions before a token that can influence it after every layer: L·(W − 1) with every layer
    windowed; None (unbounded: the whole prefix) without a window or with a global layer."""
    L = cfg.decoder_layers
    if not cfg.sliding_window or cfg.local_layers_of(L) < L:
        return None
    return L * (cfg.sliding_window - 1)


def window_stack(layers: int, window: int, *, convention: str = "strict", sinks: int = 0, seq: int | None = None):
    """A stack of L sliding-window layers: its receptive field (both conventions, named), and with
    ``seq`` the KV cache each layer keeps, with ``sinks`` attention-sink tokens (StreamingLLM,
    Xiao et al. 2023: the first s tokens stay in every window, the cache holds s + W tokens).

    ``convention="strict"``: L·(W − 1) positions back (the window counts the query itself, as
    HuggingFace's ``sliding_window``); ``"span"``: L·W (Mistral 7B §2, "up to k × W tokens").
    Returns a :class:`solver.result.Result` (answer: the receptive field in positions)."""
    from solver.result import Result, fmt

    L, W, s = _int("layers", layers, 1), _int("window", window, 1), _int("sinks", sinks, 0)
    if convention not in ("strict", "span"):
        raise SolverInputError(f"convention must be strict or span (got {convention!r})", param="convention")
    r = Result(answer=None, unit="positions", convention={
        "window": "query p sees keys p − W < j ≤ p: itself and the W − 1 before it",
        "receptive_field": ("strict: L·(W − 1) positions before the token (each layer reaches W − 1 back)"
                            if convention == "strict" else
                            "span: L·W (Mistral 7B §2's 'up to k × W tokens', the window's span counted per layer)")})
    strict = r.step("strict field = L·(W − 1)", f"{L} × ({fmt(W)} − 1)", L * (W - 1), "positions")
    span = r.step("span field = L·W", f"{L} × {fmt(W)}", L * W, "positions")
    r.breakdown = {"receptive_field_strict": strict, "receptive_field_span": span,
                   "tokens_seen_strict": strict + 1}
    if s:
        r.convention["sinks"] = (f"{s} attention-sink tokens (positions 0 … {s - 1}) stay visible to every query "
                                 "(StreamingLLM): reached in one layer from any distance")
        r.breakdown["sink_tokens"] = s
    if seq is not None:
        n = _int("seq", seq, 1)
        cache = r.step("KV tokens kept per layer = min(n, s + W)", f"min({fmt(n)}, {s} + {fmt(W)})", min(n, s + W),
                       "tokens")
        r.breakdown["kv_tokens_per_layer"] = cache
        r.breakdown["kv_tokens_full_attention"] = n
        r.breakdown["beyond_reach"] = max(0, n - 1 - (strict if convention == "strict" else span) - s)
        r.convention["beyond_reach"] = "earlier positions (neither sinks nor in the field) the last token cannot see"
    r.answer = strict if convention == "strict" else span
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's
# sliding_window(...), from qkv solve sliding-window.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

REACH = Convention("convention", "How far back a stack of windowed layers reaches.", {
    "strict": Choice("L·(W − 1) positions before the token: each layer reaches W − 1 back (W counts the query)",
                     "Beltagy et al. 2020 (Longformer), §3"),
    "span": Choice("L·W, as Mistral 7B writes 'k × W'", "Jiang et al. 2023 (Mistral 7B), §2")}, "strict")


@formula("sliding_window", "A stack of sliding-window layers: how far back a token reaches, the sinks kept, the KV "
         "cache per layer.",
         (Input("window", "W: the window, the query included (or a model's)", kind="count", integer=True, minimum=1,
                default=None, binary_k=True, aliases=("W",)),
          Input("layers", "L: windowed layers stacked (or a model's)", kind="count", integer=True, minimum=1,
                default=None, aliases=("L",)),
          Input("sinks", "attention-sink tokens kept (StreamingLLM)", kind="count", integer=True, minimum=0, default=0),
          Input("seq", "n: sequence length (the KV cache per layer)", kind="count", integer=True, minimum=1,
                default=None, binary_k=True, aliases=("n",)),
          Input("model", "a model with a sliding window (mistral-7b)", kind="model", default=None,
                aliases=("preset", "config"))),
         (Output("reach", "", "positions before the token it can attend to, in the chosen convention", key="reach"),
          Output("kv_tokens_per_layer", "", "tokens a layer caches", ("seq",)),
          Output("beyond_reach", "", "positions of the sequence it cannot reach", ("seq",))),
         conventions=(REACH,), solve="sliding-window", source="Jiang et al. 2023 (Mistral 7B); Xiao et al. 2023")
def _window_formula(window, layers, sinks, seq, model, convention="strict"):
    if model is not None:
        if not model.sliding_window and window is None:
            raise SolverInputError(f"{model.name} has no sliding window; give window=", param="window")
        n_layers = model.decoder_layers or model.n_layers
        if model.local_layers_of(n_layers) < n_layers and layers is None:
            raise SolverInputError(f"{model.name} has global layers: the receptive field is the whole prefix",
                                   param="model")
        window, layers = window or model.sliding_window, layers or n_layers
    if window is None or layers is None:
        raise SolverInputError("needs window and layers (or a model)", param="window")
    r = window_stack(layers, window, convention=convention, sinks=sinks, seq=seq)
    r.breakdown["reach"] = r.answer
    return r


FORMULAS = (_window_formula.formula,)
