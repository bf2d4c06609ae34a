"""Exact parameter count of a T5 encoder-decoder (Raffel et al. 2020), from its own small config.

The model (as HuggingFace's ``T5ForConditionalGeneration`` builds it):

* one shared token embedding V × d (the encoder's and decoder's input embeddings); the LM
  head is tied to it in T5 v1.0 (counted once) and a separate V × d in v1.1 (``tie_embeddings=False``);
* every attention block: Q, K, V, O with no biases, 4 · d · (h · d_kv) (d_kv need not be d/h);
* the relative-position bias: one ``num_buckets × n_heads`` table in the first layer's
  self-attention of each stack, shared by all that stack's layers (2 tables in all, not 2·L);
* feed-forward: d × d_ff and d_ff × d, no biases (v1.0, ReLU); gated-GELU in v1.1 adds a
  second d × d_ff input matrix;
* norms: T5's layer norm is an RMS norm with a scale and no bias (d each): one before each
  sub-layer and one after each stack.

Convention: parameters = trainable scalars, shared tensors counted once (``numel`` over
``model.parameters()``); the tests build the HuggingFace model on the meta device to the integer.
T5 v1.1's checkpoints hold their own LM head (their config.json says ``tie_word_embeddings:
false``); transformers ≥ 5 builds T5 tied whatever the config says, so the tests add the
untied V × d head to the built model themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solver.errors import SolverInputError
from solver.result import Result, fmt


@dataclass(frozen=True)
class T5Config:
    vocab_size: int = 32128
    d_model: int = 512
    d_kv: int = 64  # per-head width (h·d_kv need not equal d)
    n_heads: int = 8
    d_ff: int = 2048
    n_layers: int = 6  # encoder layers
    n_decoder_layers: int | None = None  # None: same as the encoder
    num_buckets: int = 32
    gated_ffn: bool = False  # v1.1: gated-GELU, two input matrices
    tie_embeddings: bool = True  # v1.0: LM head tied to the shared embedding

    @property
    def decoder_layers(self) -> int:
        return self.n_layers if self.n_decoder_layers is None else self.n_decoder_layers


#: Presets with HuggingFace's configuration values; ``published`` is the paper's rounded size
#: (Raffel et al. 2020, §3.7 "Putting it all together": Small 60M, Base 220M, Large 770M, 3B, 11B).
T5_PRESETS: dict[str, T5Config] = {
    "t5-small": T5Config(),  # ~60M
    "t5-base": T5Config(d_model=768, d_kv=64, n_heads=12, d_ff=3072, n_layers=12),  # ~220M
    "t5-large": T5Config(d_model=1024, d_kv=64, n_heads=16, d_ff=4096, n_layers=24),  # ~770M
    "t5-v1_1-base": T5Config(d_model=768, d_kv=64, n_heads=12, d_ff=2048, n_layers=12, gated_ffn=True,
                             tie_embeddings=False),
}
T5_PUBLISHED = {"t5-small": 60_000_000, "t5-base": 220_000_000, "t5-large": 770_000_000}


def t5_config(preset: str = "t5-small", **overrides) -> T5Config:
    if preset not in T5_PRESETS:
        raise SolverInputError(f"unknown T5 preset {preset!r}; known: {', '.join(T5_PRESETS)}", param="preset")
    return replace(T5_PRESETS[preset], **overrides)


def t5_params(cfg: T5Config) -> Result:
    """Parameters of a T5 encoder-decoder, component by component (see the module docstring).

    Breakdown: embedding, lm_head, encoder_attention, decoder_self_attention,
    decoder_cross_attention, encoder_ffn, decoder_ffn, relative_bias, norms.
    """
    for name in ("vocab_size", "d_model", "d_kv", "n_heads", "d_ff", "n_layers", "num_buckets"):
        v = getattr(cfg, name)
        if int(v) != v or v < 1:
            raise SolverInputError(f"must be a positive integer, got {v}", param=name)
    V, d, h, dk, dff = cfg.vocab_size, cfg.d_model, cfg.n_heads, cfg.d_kv, cfg.d_ff
    Le, Ld = cfg.n_layers, cfg.decoder_layers
    r = Result(answer=None, unit="parameters",
               convention={"biases": "none (T5 has none)", "norms": "RMS scale only (d each)",
                           "lm_head": "tied (counted once)" if cfg.tie_embeddings else "untied (V·d)",
                           "relative_bias": "one num_buckets × n_heads table per stack, shared by its layers",
                           "ffn": "gated-GELU (2 input matrices)" if cfg.gated_ffn else "ReLU (1 input matrix)"})
    attn = 4 * d * h * dk
    ffn = (3 if cfg.gated_ffn else 2) * d * dff
    b = {}
    b["embedding"] = r.step("shared embedding = V·d", f"{fmt(V)} × {fmt(d)}", V * d)
    b["lm_head"] = r.step("LM head = V·d (untied)" if not cfg.tie_embeddings else "LM head = 0 (tied)",
                          f"{fmt(V)} × {fmt(d)}" if not cfg.tie_embeddings else "0", 0 if cfg.tie_embeddings else V * d)
    b["encoder_attention"] = r.step("encoder self-attention = L_e·4·d·h·d_kv", f"{Le} × 4 × {d} × {h} × {dk}", Le * attn)
    b["decoder_self_attention"] = r.step("decoder self-attention = L_d·4·d·h·d_kv", f"{Ld} × 4 × {d} × {h} × {dk}", Ld * attn)
    b["decoder_cross_attention"] = r.step("decoder cross-attention = L_d·4·d·h·d_kv", f"{Ld} × 4 × {d} × {h} × {dk}", Ld * attn)
    k = 3 if cfg.gated_ffn else 2
    b["encoder_ffn"] = r.step(f"encoder FFN = L_e·{k}·d·d_ff", f"{Le} × {k} × {d} × {dff}", Le * ffn)
    b["decoder_ffn"] = r.step(f"decoder FFN = L_d·{k}·d·d_ff", f"{Ld} × {k} × {d} × {dff}", Ld * ffn)
    b["relative_bias"] = r.step("relative bias = 2 stacks × num_buckets·h", f"2 × {cfg.num_buckets} × {h}",
                                2 * cfg.num_buckets * h)
    b["norms"] = r.step("norms = (2·L_e + 1 + 3·L_d + 1)·d", f"(2×{Le} + 1 + 3×{Ld} + 1) × {d}", (2 * Le + 1 + 3 * Ld + 1) * d)
    total = r.step("total = sum of the above", " + ".join(fmt(v) for v in b.values()), sum(b.values()))
    r.breakdown = b
    r.answer = total
    return r
