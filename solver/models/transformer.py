"""The reference Transformer: one ``nn.Module`` for any :class:`~solver.counting.config.ModelConfig`.

Read top to bottom: embeddings → stacks of blocks (an encoder, a decoder, or both) → heads.
It builds exactly what the config's docstring describes (the contract with the analytic counts
in ``solver.counting``), so that instantiating it checks a parameter count and running it under
``FlopCounterMode`` checks a FLOP count.

    tokens (B, T) ──tok_emb──┬─ + positions (learned table / sinusoidal buffer; RoPE and
                             │    ALiBi act inside attention) + segment types (BERT)
                             └─ [CLS] prepended (cls_token) ─ embedding norm
      encoder stack: n_encoder_layers × Block(self-attn, FFN)               ─ final norm
      decoder stack: n_decoder_layers × Block(causal self-attn, [cross-attn], FFN) ─ final norm
    heads: lm_head (every position of the last stack; tied = the token embedding's weight),
           pooler (first position, tanh), classifier (on the pooled output)

Decoding: ``cache = model.new_cache()``, then ``model(prompt, cache=cache)`` and
``model(next_token, cache=cache)``; the cache holds each decoder layer's keys and values (with
latent attention: its latent and rotary key; a windowed layer: the last ``sliding_window``
positions only, a rolling buffer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError
from solver.models.attention import LayerKV, causal_mask, self_attention_bias
from solver.models.blocks import Block
from solver.models.layers import make_norm
from solver.models.positions import rope_rotation, sinusoidal_table


@dataclass
class KVCache:
    """Keys and values of every decoder layer: ``self_attn[i]`` grows by one position per
    decoded token; ``cross_attn[i]`` (encoder-decoder) holds the encoder's keys and values,
    projected once. ``length`` is the number of positions seen by the decoder."""

    self_attn: list[LayerKV] = field(default_factory=list)
    cross_attn: list[LayerKV] = field(default_factory=list)
    length: int = 0

    def nbytes(self, cross: bool = False) -> int:
        """Bytes held by the self-attention cache (and by the cross-attention one if ``cross``)."""
        layers = self.self_attn + (self.cross_attn if cross else [])
        return sum(layer.nbytes for layer in layers)


@dataclass
class ModelOutput:
    hidden: torch.Tensor  # (B, T, d_model): the last stack's output, after its final norm
    logits: torch.Tensor | None = None  # (B, T, vocab_size)
    pooled: torch.Tensor | None = None  # (B, d_model)
    class_logits: torch.Tensor | None = None  # (B, n_classes)
    memory: torch.Tensor | None = None  # (B, S, d_model): the encoder's output in an encoder-decoder

    def scalar(self) -> torch.Tensor:
        """A scalar that depends on every output (what a training step back-propagates); the
        encoder's output is one, so the encoder is trained even by a decoder of zero layers."""
        parts = [self.hidden, self.logits, self.pooled, self.class_logits, self.memory]
        parts = [t for t in parts if t is not None]
        return sum(t.sum() for t in parts)


class Stack(nn.Module):
    """An encoder or a decoder: its own position table and norms, its layers."""

    def __init__(self, cfg: ModelConfig, n_layers: int, causal: bool, cross: bool):
        super().__init__()
        self.cfg, self.causal = cfg, causal
        # OPT: the table has position_offset more rows; position p reads row p + offset
        self.pos_emb = nn.Embedding(cfg.max_positions + cfg.position_offset, cfg.d_model) \
            if cfg.pos == "learned" else None
        self.emb_norm = make_norm(cfg) if cfg.embedding_norm else None
        self.layers = nn.ModuleList(Block(cfg, causal=causal, cross=cross, index=i) for i in range(n_layers))
        self.final_norm = make_norm(cfg) if cfg.final_norm else None

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, cache: KVCache | None = None,
                impl: str = "sdpa") -> torch.Tensor:
        """x: (B, T, d_model), embeddings already summed → (B, T, d_model)."""
        start = cache.length if cache is not None else 0
        T = x.shape[1]
        if self.emb_norm is not None:
            x = self.emb_norm(x)
        # position-dependent pieces of self-attention, the same in every layer
        rope_dim = self.cfg.qk_rope_head_dim if self.cfg.is_mla else self.cfg.rope_dim  # MLA: the rotary part
        rope = rope_rotation(start, T, rope_dim, x.device) if self.cfg.pos == "rope" and rope_dim else None
        bias = self_attention_bias(self.cfg, self.causal, start, T, x.device)  # None, (T, Tk) or (1, nh, T, Tk)
        if bias is None and impl == "math" and self.causal and T > 1:
            bias = causal_mask(start, T, start + T, x.device)  # the math path adds the mask explicitly
        local_bias = self_attention_bias(self.cfg, self.causal, start, T, x.device, self.cfg.sliding_window) \
            if self.cfg.sliding_window else None  # the band of the windowed layers
        for i, block in enumerate(self.layers):
            layer_cache = (cache.self_attn[i], cache.cross_attn[i] if cache.cross_attn else None) if cache else None
            x = block(x, memory=memory, cache=layer_cache, rope=rope, bias=local_bias if block.local else bias,
                      impl=impl)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model

        # ---- embeddings ---------------------------------------------------------------
        self.tok_emb = nn.Embedding(cfg.vocab_size, d)  # one table, shared by both stacks
        self.type_emb = nn.Embedding(cfg.type_vocab_size, d) if cfg.type_vocab_size else None
        self.cls = nn.Parameter(torch.zeros(d)) if cfg.cls_token else None
        if cfg.pos == "sinusoidal":  # a fixed table: a buffer, not a parameter
            self.register_buffer("pos_table", sinusoidal_table(cfg.max_positions, d), persistent=False)

        # ---- stacks -------------------------------------------------------------------
        self.encoder = Stack(cfg, cfg.encoder_layers, causal=False, cross=False) \
            if cfg.arch in ("encoder", "encoder-decoder") else None
        self.decoder = Stack(cfg, cfg.decoder_layers, causal=True, cross=cfg.arch == "encoder-decoder") \
            if cfg.arch in ("decoder", "encoder-decoder") else None

        # ---- heads --------------------------------------------------------------------
        self.lm_head = nn.Linear(d, cfg.vocab_size, bias=cfg.lm_head_bias) if cfg.lm_head else None
        if self.lm_head is not None and cfg.tied_embeddings:
            self.lm_head.weight = self.tok_emb.weight  # the same Parameter: named_parameters() lists it once
        self.pooler = nn.Linear(d, d, bias=True) if cfg.pooler else None
        self.classifier = nn.Linear(d, cfg.n_classes, bias=True) if cfg.n_classes else None

    # ---- embeddings -------------------------------------------------------------------
    def embed(self, stack: Stack, tokens: torch.Tensor, start: int = 0,
              token_types: torch.Tensor | None = None) -> torch.Tensor:
        """tokens (B, T) → (B, T, d_model) (T + 1 with a [CLS] vector) for ``stack``."""
        B, T = tokens.shape
        cfg = self.cfg
        if cfg.pos in ("learned", "sinusoidal"):
            assert start + T <= cfg.max_positions, \
                f"positions up to {start + T} exceed max_positions={cfg.max_positions}"
        x = self.tok_emb(tokens)  # (B, T, d)
        positions = torch.arange(start, start + T, device=tokens.device)  # (T,)
        if stack.pos_emb is not None:
            x = x + stack.pos_emb(positions + cfg.position_offset)  # (T, d) broadcast over B
        elif cfg.pos == "sinusoidal":
            x = x + self.pos_table[start:start + T]
        if self.type_emb is not None and stack is self.first_stack:
            types = token_types if token_types is not None else torch.zeros_like(tokens)
            x = x + self.type_emb(types)
        if self.cls is not None:
            x = torch.cat((self.cls.expand(B, 1, -1), x), dim=1)  # (B, T + 1, d)
        return x

    @property
    def first_stack(self) -> Stack:
        return self.encoder if self.encoder is not None else self.decoder

    # ---- forward ----------------------------------------------------------------------
    def new_cache(self, batch: int = 1, length: int = 0, src_length: int | None = None) -> KVCache:
        """An empty KV cache, or (``length > 0``) one that already holds ``length`` positions of
        zeros per sequence (and ``src_length`` encoder positions of cross-attention K/V): the
        state a prefill of ``length`` tokens leaves, without running it."""
        if self.decoder is None:
            raise SolverInputError("an encoder has no decode step and no KV cache", param="arch")
        n = len(self.decoder.layers)
        cache = KVCache(self_attn=[LayerKV() for _ in range(n)],
                        cross_attn=[LayerKV() for _ in range(n)] if self.encoder is not None else [])
        if length:
            w = self.tok_emb.weight
            kv_shape = (self.cfg.kv_heads, self.cfg.head_dim)
            for i, layer in enumerate(cache.self_attn):
                held = self.cfg.attended(length, i)  # a windowed layer keeps the last W positions
                if self.cfg.is_mla:  # the latent and the shared rotary key
                    layer.k = w.new_zeros(batch, 1, held, self.cfg.kv_lora_rank)
                    layer.v = w.new_zeros(batch, 1, held, self.cfg.qk_rope_head_dim)
                    continue
                layer.k, layer.v = (w.new_zeros(batch, kv_shape[0], held, kv_shape[1]) for _ in "kv")
            for layer in cache.cross_attn:
                s = src_length if src_length is not None else length
                layer.k, layer.v = (w.new_zeros(batch, kv_shape[0], s, kv_shape[1]) for _ in "kv")
            cache.length = length
        return cache

    def forward(self, tokens: torch.Tensor, *, src_tokens: torch.Tensor | None = None,
                token_types: torch.Tensor | None = None, cache: KVCache | None = None,
                impl: str = "sdpa") -> ModelOutput:
        """tokens (B, T): the encoder's input for an encoder, the decoder's otherwise.
        ``src_tokens`` (B, S): the encoder's input of an encoder-decoder (not needed once the
        cache holds the encoder's keys and values). ``cache`` turns on incremental decoding."""
        assert tokens.dim() == 2, f"tokens must be (B, T), got shape {tuple(tokens.shape)}"
        if self.decoder is None:  # encoder only
            h = self.encoder(self.embed(self.encoder, tokens, token_types=token_types), impl=impl)
            return self.heads(h)

        memory = None
        if self.encoder is not None and not (cache is not None and cache.length > 0):
            assert src_tokens is not None, "an encoder-decoder needs src_tokens for the encoder"
            memory = self.encoder(self.embed(self.encoder, src_tokens, token_types=token_types), impl=impl)
        start = cache.length if cache is not None else 0
        h = self.decoder(self.embed(self.decoder, tokens, start=start), memory=memory, cache=cache, impl=impl)
        if cache is not None:
            cache.length += tokens.shape[1]
        out = self.heads(h)
        out.memory = memory
        return out

    def heads(self, h: torch.Tensor) -> ModelOutput:
        out = ModelOutput(hidden=h)
        if self.lm_head is not None:
            out.logits = self.lm_head(h)  # (B, T, vocab)
        if self.pooler is not None:
            out.pooled = torch.tanh(self.pooler(h[:, 0]))  # (B, d): the first position only
        if self.classifier is not None:
            out.class_logits = self.classifier(out.pooled if out.pooled is not None else h[:, 0])  # (B, n_classes)
        return out
