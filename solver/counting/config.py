"""One description of a Transformer: :class:`ModelConfig`.

Every count (``solver.counting``), every reference model (``solver.models``) and every preset
(``solver.counting.presets``) speaks in these fields. Field names are an interface (the command line
turns each into a flag: ``n_kv_heads`` is ``--n-kv-heads``).

The model the fields describe (the contract between the analytic counts and the reference
PyTorch model; a count is exact only for a module built this way):

Embeddings (one *stack* = the encoder or the decoder):

- token embedding ``vocab_size × d_model``; an encoder-decoder has ONE table shared by both
  stacks (Vaswani et al. 2017 §3.4, T5);
- ``pos="learned"``: a position table ``max_positions × d_model`` per stack (an
  encoder-decoder has two, as BART); ``sinusoidal`` is a buffer, ``rope``/``alibi``/``none``
  have no parameters;
- ``type_vocab_size > 0``: a segment table ``type_vocab_size × d_model`` (BERT), one, at the
  input of the first stack;
- ``embedding_norm``: a norm after the embedding sum, one per stack (BERT's embedding
  LayerNorm);
- ``cls_token`` (encoder only): one learned ``d_model`` vector prepended to every sequence
  (seed 000's BERTClassifier); the model then runs on ``seq + 1`` positions and the learned
  position table is applied to the ``seq`` token positions only.

Layers:

- self-attention: Q ``d_model → n_heads·d_head``, K and V ``d_model → n_kv_heads·d_head``,
  O ``n_heads·d_head → d_model``; Q/K/V biases when ``has_attn_bias``, the O bias when
  ``has_attn_out_bias``. Grouped K/V heads are shared by ``n_heads / n_kv_heads`` query heads.
- the decoder layers of an encoder-decoder also have cross-attention (same shapes as
  self-attention: Q from the decoder, K/V from the encoder output) and a third norm;
- FFN: ``relu``/``gelu`` ``d_model → d_ff → d_model`` (two matrices); ``swiglu``: gate and up
  ``d_model → d_ff``, down ``d_ff → d_model`` (three matrices); biases on every FFN matrix
  when ``has_ffn_bias``. With ``n_experts > 1``: a router ``d_model → n_experts`` (no bias)
  and ``n_experts`` such FFNs; each token runs through its ``top_k`` experts only.
- two norms per layer (three in the decoder of an encoder-decoder), before (``pre``) or after
  (``post``) each sub-layer. A norm has γ (``d_model``) and, for LayerNorm with
  ``has_norm_bias``, β (``d_model``); RMSNorm never has β.
- ``final_norm``: one norm after the last layer of each stack.

Heads:

- ``lm_head``: ``d_model → vocab_size`` on every position of the last stack; with
  ``tied_embeddings`` its weight IS the token embedding (counted once); ``lm_head_bias`` adds
  a ``vocab_size`` bias (counted even when the weight is tied);
- ``pooler`` (encoder only): ``d_model → d_model`` with bias, on the first position (BERT);
- ``n_classes > 0`` (encoder only): a classifier ``d_model → n_classes`` with bias, on the
  pooled output (the pooler's output, or the first position's hidden state without pooler).

Blocks of issue 20 (the architectures people bring; each off by default):

- ``parallel_block``: attention and FFN read the same residual input and add into it together:
  1 = from one norm (GPT-J, Falcon-7B, Phi-2: one norm per layer), 2 = each from its own norm
  (GPT-NeoX/Pythia, Falcon-40B: two). Pre-norm decoders only. Counts as two sub-layers otherwise.
- ``norm_position``: ``sandwich`` = a norm before and after each sub-layer, x + n₂(f(n₁(x)))
  (Gemma 2/3: four per layer); ``reordered`` = a norm on each sub-layer's output only, x + n(f(x))
  (OLMo 2: two per layer). Decoders only.
- ``norm_affine`` false: every norm without γ or β (OLMo's LayerNorm): no parameters.
- ``qk_norm``: a norm (the config's kind) on the queries and on the keys of self-attention, before
  RoPE: ``head`` over d_head, one γ shared by the heads (Qwen3, Gemma 3); ``full`` over h·d_head and
  h_kv·d_head (OLMo 2).
- ``rotary_dim``: RoPE rotates the first ``rotary_dim`` features of each head (GPT-J, Pythia's 25 %);
  no parameters, no matmul.
- ``position_offset``: the learned position table has max_positions + offset rows and position p
  reads row p + offset (OPT: 2).
- ``attn_sinks``: one learned logit per head and layer joins each softmax's denominator and attends
  to nothing (gpt-oss): h parameters per layer, no matmul, nothing in the KV cache.
- MoE: ``d_ff_shared`` the width of each shared expert (Qwen-MoE's own size); ``shared_expert_gate``
  a d_model → 1 sigmoid gate (no bias) scaling the shared experts' sum per token (Qwen-MoE);
  ``router_bias`` an n_experts bias on the router (gpt-oss); ``moe_every`` k: experts on layers
  k, 2k, … (1-based) after the ``first_dense_layers``, a dense FFN of d_ff elsewhere (Llama 4).

Other conventions that the fields settle:

- ``bias`` switches the biases of every linear layer and every norm; the finer switches
  ``attn_bias``, ``attn_out_bias``, ``ffn_bias``, ``norm_bias`` (``None`` = follow ``bias``;
  ``attn_out_bias`` follows ``attn_bias``) override it per part. The pooler and classifier
  always have biases; the LM head has one only with ``lm_head_bias``.
- ``d_head`` defaults to ``d_model // n_heads``; ``n_heads·d_head`` need not equal
  ``d_model`` (GPT-3 XL and 13B in the GPT-3 paper's Table 2.1 do not).
- ``max_positions`` sizes the learned position table (``pos="learned"`` only).
- Encoder-decoder models use ``n_encoder_layers`` and ``n_decoder_layers``; ``n_layers`` is
  their sum there, and the layer count of the stack otherwise.
- LoRA: ``lora_rank`` r adds A (r × d_in) and B (d_out × r) beside each targeted linear layer
  (``lora_targets`` from q, k, v, o: in every attention, cross-attention included; ffn: every
  FFN matrix of every expert); the adapters are counted separately from the base.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from solver.errors import SolverInputError

ARCHS = ("encoder", "decoder", "encoder-decoder")
FFNS = ("relu", "gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
NORM_POSITIONS = ("pre", "post", "sandwich", "reordered")
QK_NORMS = ("none", "head", "full")
POSITIONS = ("learned", "sinusoidal", "rope", "alibi", "none")
LORA_TARGETS = ("q", "k", "v", "o", "ffn")


@dataclass(frozen=True)
class ModelConfig:
    arch: str = "decoder"  # encoder (BERT-style) | decoder (GPT-style) | encoder-decoder
    d_model: int = 768
    n_layers: int = 12  # for encoder-decoder: n_encoder_layers + n_decoder_layers
    n_heads: int = 12
    n_kv_heads: int | None = None  # None = n_heads (MHA); 1 = MQA; in between = GQA
    d_head: int | None = None  # None = d_model // n_heads
    d_ff: int = 3072
    ffn: str = "gelu"  # relu | gelu (two matrices) | swiglu (three matrices)
    norm: str = "layernorm"  # layernorm | rmsnorm
    norm_position: str = "pre"  # pre | post
    final_norm: bool = True  # a norm after the last layer (pre-norm models have one)
    bias: bool = True  # biases in linear layers and norms
    attn_bias: bool | None = None  # None = follow bias (Q, K, V biases)
    attn_out_bias: bool | None = None  # None = follow attn_bias (the O projection's bias)
    ffn_bias: bool | None = None  # None = follow bias
    norm_bias: bool | None = None  # None = follow bias
    vocab_size: int = 50257
    max_positions: int = 1024
    pos: str = "learned"  # learned | sinusoidal | rope | alibi | none
    tied_embeddings: bool = True
    lm_head: bool = True  # an output projection to the vocabulary
    lm_head_bias: bool = False  # a vocab_size bias on the LM head (seed 004's Mini-GPT)
    embedding_norm: bool = False  # a norm after the embedding sum, per stack (BERT)
    type_vocab_size: int = 0  # BERT's segment embeddings (2 in BERT)
    pooler: bool = False  # BERT's pooler: a d_model × d_model dense layer with bias
    n_classes: int = 0  # encoder only: a d_model × n_classes classifier (with bias) on the pooled output
    cls_token: bool = False  # encoder only: a learned d_model vector prepended to each sequence
    n_encoder_layers: int | None = None
    n_decoder_layers: int | None = None
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ("q", "v")
    n_experts: int = 1
    top_k: int = 1
    norm_eps: float = 1e-5
    # ---- issue 10 (first half): experts, latent attention, sliding window -------------------
    # Grouped here on purpose (another change adds its own fields elsewhere); see the
    # "Mixture of experts, latent attention, sliding window" section of the module docstring.
    n_shared_experts: int = 0  # MoE: experts every token runs through besides its top_k (DeepSeek)
    d_ff_expert: int | None = None  # MoE: hidden width of each routed/shared expert; None = d_ff
    first_dense_layers: int = 0  # MoE: the first k layers keep one dense FFN of d_ff (first_k_dense_replace)
    kv_lora_rank: int = 0  # MLA: compressed KV width d_c (0 = ordinary attention)
    q_lora_rank: int = 0  # MLA: compressed query width d_c' (0 = queries projected from d_model)
    qk_rope_head_dim: int = 0  # MLA: decoupled RoPE width d_h^R (one rotary key shared by the heads)
    v_head_dim: int | None = None  # MLA: value head size; None = d_head
    sliding_window: int = 0  # W: a query sees itself and the W - 1 positions before it; 0 = no window
    global_every: int = 0  # with a window: layers k, 2k, ... (1-based) attend globally (Gemma 2: 2); 0 = none
    # ---- issue 20: the architectures people bring -------------------------------------------
    # See the "Blocks of issue 20" section of the module docstring.
    parallel_block: int = 0  # 0: attention then FFN; 1: both from one norm (GPT-J, Falcon-7B, Phi-2); 2: each its own norm (GPT-NeoX)
    rotary_dim: int = 0  # RoPE on the first rotary_dim features of each head (GPT-J 64, Pythia 25 %); 0 = all
    norm_affine: bool = True  # False: norms without γ or β (OLMo's LayerNorm)
    qk_norm: str = "none"  # none | head (a norm over d_head on Q and K: Qwen3, Gemma 3) | full (over h·d_h and h_kv·d_h: OLMo 2)
    position_offset: int = 0  # a learned position table of max_positions + offset rows (OPT: 2)
    d_ff_shared: int | None = None  # MoE: hidden width of each shared expert; None = expert_ff (Qwen-MoE has its own)
    shared_expert_gate: bool = False  # MoE: a d_model → 1 sigmoid gate on the shared experts' output (Qwen-MoE)
    router_bias: bool = False  # MoE: an n_experts bias on the router (gpt-oss)
    moe_every: int = 1  # MoE: layers k, 2k, ... (1-based) after the first_dense_layers are MoE (Llama 4 Maverick: 2)
    attn_sinks: bool = False  # a learned sink logit per head and layer in the softmax's denominator (gpt-oss)
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.lora_targets, (list, str)):
            targets = (self.lora_targets,) if isinstance(self.lora_targets, str) else self.lora_targets
            object.__setattr__(self, "lora_targets", tuple(targets))
        if self.arch == "encoder-decoder":
            enc = self.n_encoder_layers if self.n_encoder_layers is not None else self.n_layers // 2
            dec = self.n_decoder_layers if self.n_decoder_layers is not None else self.n_layers - enc
            object.__setattr__(self, "n_encoder_layers", enc)
            object.__setattr__(self, "n_decoder_layers", dec)
            object.__setattr__(self, "n_layers", enc + dec)
        self.validate()

    # ---- derived values -------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads if self.d_head is None else self.d_head

    @property
    def has_attn_bias(self) -> bool:
        return self.bias if self.attn_bias is None else self.attn_bias

    @property
    def has_attn_out_bias(self) -> bool:
        return self.has_attn_bias if self.attn_out_bias is None else self.attn_out_bias

    @property
    def q_dim(self) -> int:
        """Width of the queries (and of the O projection's input): ``n_heads · d_head``."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys and of the values: ``n_kv_heads · d_head``."""
        return self.kv_heads * self.head_dim

    # ---- derived: experts, latent attention, sliding window (issue 10) ----------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def expert_ff(self) -> int:
        """Hidden width of one expert's FFN (routed or shared): ``d_ff_expert`` or ``d_ff``."""
        return self.d_ff if self.d_ff_expert is None else self.d_ff_expert

    def is_moe_layer(self, i: int) -> bool:
        """Whether layer ``i`` (0-based) has experts: not one of the first ``first_dense_layers``,
        and (``moe_every`` = k) one of layers k, 2k, ... (1-based)."""
        return self.is_moe and i >= self.first_dense_layers and (i + 1) % self.moe_every == 0

    def dense_layers_of(self, n_layers: int) -> int:
        """How many of a stack's ``n_layers`` layers keep a dense FFN (all when not MoE): the MoE layers
        are the multiples of k = ``moe_every`` in (first_dense_layers, n_layers] (1-based), counted in
        closed form, ⌊n/k⌋ − ⌊f/k⌋, so a config with 10⁸ layers costs no more than one with 8 (issue 28)."""
        if not self.is_moe:
            return n_layers
        f, k = min(self.first_dense_layers, n_layers), self.moe_every
        return n_layers - (n_layers // k - f // k)

    @property
    def shared_ff(self) -> int:
        """Hidden width of one shared expert: ``d_ff_shared`` or ``expert_ff``."""
        return self.expert_ff if self.d_ff_shared is None else self.d_ff_shared

    @property
    def norms_per_layer(self) -> int:
        """Norms with d_model features in one self-attention + FFN layer (cross-attention adds
        one, or two with ``sandwich``): 2 (pre, post, reordered; parallel with two norms), 1
        (parallel from one norm), 4 (sandwich: a norm before and after each sub-layer)."""
        if self.parallel_block:
            return self.parallel_block
        return 4 if self.norm_position == "sandwich" else 2

    @property
    def rope_dim(self) -> int:
        """Features of each head that RoPE rotates (``rotary_dim`` or the whole head)."""
        return self.rotary_dim or self.head_dim

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self) -> int:
        """Size of a query/key head: ``d_head`` (+ ``qk_rope_head_dim`` with MLA)."""
        return self.head_dim + (self.qk_rope_head_dim if self.is_mla else 0)

    @property
    def value_head_dim(self) -> int:
        return self.head_dim if self.v_head_dim is None else self.v_head_dim

    def is_local_layer(self, i: int) -> bool:
        """Whether layer ``i`` (0-based) attends within ``sliding_window`` only."""
        if not self.sliding_window:
            return False
        return not (self.global_every and (i + 1) % self.global_every == 0)

    def local_layers_of(self, n_layers: int) -> int:
        """How many of ``n_layers`` layers attend within the window: all but the multiples of
        ``global_every`` (1-based), in closed form (issue 28: no per-layer loop)."""
        if not self.sliding_window:
            return 0
        return n_layers - (n_layers // self.global_every if self.global_every else 0)

    def attended(self, n: int, i: int) -> int:
        """Positions a new token at cache length ``n`` (itself included) attends to in layer ``i``:
        ``min(n, W)`` in a windowed layer, ``n`` otherwise (the rolling buffer's size)."""
        return min(n, self.sliding_window) if self.is_local_layer(i) else n

    def attended_over(self, n: int, n_layers: int) -> int:
        """``attended(n, i)`` summed over layers ``0 .. n_layers - 1``, in closed form."""
        local = self.local_layers_of(n_layers)
        return local * (min(n, self.sliding_window) if local else n) + (n_layers - local) * n

    @property
    def has_ffn_bias(self) -> bool:
        return self.bias if self.ffn_bias is None else self.ffn_bias

    @property
    def has_norm_bias(self) -> bool:
        """Whether LayerNorm carries β (RMSNorm never does)."""
        return self.norm == "layernorm" and self.norm_affine and (self.bias if self.norm_bias is None
                                                                  else self.norm_bias)

    @property
    def encoder_layers(self) -> int:
        if self.arch == "encoder-decoder":
            return int(self.n_encoder_layers or 0)
        return self.n_layers if self.arch == "encoder" else 0

    @property
    def decoder_layers(self) -> int:
        if self.arch == "encoder-decoder":
            return int(self.n_decoder_layers or 0)
        return self.n_layers if self.arch == "decoder" else 0

    # ---- validation -----------------------------------------------------------------
    def validate(self) -> None:
        def need(cond: bool, param: str, message: str) -> None:
            if not cond:
                raise SolverInputError(message, param=param)

        for name, allowed in (("arch", ARCHS), ("ffn", FFNS), ("norm", NORMS),
                              ("norm_position", NORM_POSITIONS), ("pos", POSITIONS)):
            value = getattr(self, name)
            need(value in allowed, name, f"must be one of {', '.join(allowed)} (got {value!r})")
        self._validate_types(need)
        for name in ("d_model", "n_heads", "d_ff"):
            value = getattr(self, name)
            need(isinstance(value, int) and value > 0, name, f"must be a positive integer (got {value!r})")
        # issue 20: vocabulary 0 = no vocabulary tables (the scaling book's --no-embeddings accounting)
        need(isinstance(self.vocab_size, int) and self.vocab_size >= 0, "vocab_size",
             f"must be an integer >= 0 (got {self.vocab_size!r})")
        need(isinstance(self.n_layers, int) and self.n_layers >= 0, "n_layers", "must be a non-negative integer")
        need(self.kv_heads > 0, "n_kv_heads", "must be a positive integer")
        need(self.n_heads % self.kv_heads == 0, "n_kv_heads",
             f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.kv_heads})")
        if self.d_head is None:
            need(self.d_model % self.n_heads == 0, "n_heads",
                 f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}) when d_head is not given")
        else:
            need(self.d_head > 0, "d_head", "must be a positive integer")
        need(self.pos != "learned" or self.max_positions > 0, "max_positions",
             "a learned position table needs max_positions > 0")
        need(self.type_vocab_size >= 0, "type_vocab_size", "must be >= 0")
        need(self.lora_rank >= 0, "lora_rank", "must be >= 0")
        bad = [t for t in self.lora_targets if t not in LORA_TARGETS]
        need(not bad, "lora_targets", f"unknown target(s) {bad}; choose from {', '.join(LORA_TARGETS)}")
        need(self.n_experts >= 1, "n_experts", "must be >= 1")
        need(1 <= self.top_k <= self.n_experts, "top_k", f"must be between 1 and n_experts ({self.n_experts})")
        need(self.pos != "rope" or self.kv_lora_rank > 0 or self.head_dim % 2 == 0, "d_head",
             "RoPE needs an even head size")
        need(self.n_classes >= 0, "n_classes", "must be >= 0")
        self._validate_issue10(need)
        self._validate_issue20(need)
        for name in ("pooler", "cls_token", "n_classes"):
            need(not getattr(self, name) or self.arch == "encoder", name,
                 f"only an encoder has a {name.replace('_', ' ')} (arch is {self.arch})")
        need(not self.lm_head_bias or self.lm_head, "lm_head_bias", "an LM head bias needs lm_head")
        if self.arch == "encoder-decoder":
            need(int(self.n_encoder_layers or 0) >= 0 and int(self.n_decoder_layers or 0) >= 0,
                 "n_layers", "layer counts must be >= 0")

    def _validate_types(self, need) -> None:
        """Issue 20: every field of its own type: a count a whole number (never a boolean, a fraction or
        infinity), a switch a boolean (never 0/1 or the string "false"), a float finite."""
        import math
        from numbers import Integral, Real

        for f in fields(self):
            if f.name in ("name", "lora_targets"):
                continue
            value, kind = getattr(self, f.name), str(f.type)
            if value is None and "None" in kind:
                continue
            if kind.startswith("bool"):
                need(type(value).__name__ in ("bool", "bool_"), f.name, f"must be true or false (got {value!r})")
            elif kind.startswith("int"):
                need(isinstance(value, Integral) and type(value).__name__ not in ("bool", "bool_"), f.name,
                     f"must be a whole number (got {value!r})")
                object.__setattr__(self, f.name, int(value))
            elif kind.startswith("float"):
                need(isinstance(value, Real) and type(value).__name__ not in ("bool", "bool_")
                     and math.isfinite(value), f.name, f"must be a finite number (got {value!r})")
            elif kind.startswith("str"):
                need(isinstance(value, str), f.name, f"must be a string (got {value!r})")

    def _validate_issue10(self, need) -> None:
        """Experts, latent attention and the sliding window (issue 10)."""
        for name in ("n_shared_experts", "first_dense_layers", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                     "sliding_window", "global_every"):
            value = getattr(self, name)
            need(isinstance(value, int) and value >= 0, name, f"must be an integer >= 0 (got {value!r})")
        need(self.d_ff_expert is None or self.d_ff_expert > 0, "d_ff_expert", "must be a positive integer")
        need(self.v_head_dim is None or self.v_head_dim > 0, "v_head_dim", "must be a positive integer")
        if not self.is_moe:
            for name in ("n_shared_experts", "first_dense_layers", "d_ff_expert"):
                need(not getattr(self, name), name, f"{name} needs a mixture of experts (n_experts > 1)")
        if not self.is_mla:
            for name in ("q_lora_rank", "qk_rope_head_dim", "v_head_dim"):
                need(not getattr(self, name), name, f"{name} belongs to latent attention: set kv_lora_rank > 0")
        else:
            need(self.arch == "decoder", "kv_lora_rank", f"latent attention is modelled in a decoder only "
                 f"(arch is {self.arch})")
            need(self.n_kv_heads is None, "n_kv_heads", "latent attention has no grouped K/V heads (leave "
                 "n_kv_heads unset)")
            need(self.pos != "rope" or (self.qk_rope_head_dim > 0 and self.qk_rope_head_dim % 2 == 0),
                 "qk_rope_head_dim", "latent attention with RoPE needs an even qk_rope_head_dim > 0")
        need(not self.first_dense_layers or self.arch == "decoder", "first_dense_layers",
             f"dense first layers are modelled in a decoder only (arch is {self.arch})")
        need(not (self.lora_rank and self.is_mla), "lora_rank", "LoRA on latent attention is not modelled")
        need(not (self.lora_rank and "ffn" in self.lora_targets and (self.n_shared_experts or self.first_dense_layers
                                                                     or self.d_ff_expert is not None)),
             "lora_targets", "LoRA on the FFN is modelled for plain routed experts only (no shared experts, "
             "dense first layers or d_ff_expert)")
        need(not self.global_every or self.sliding_window, "global_every", "global layers need a sliding_window")
        need(not self.sliding_window or self.arch == "decoder", "sliding_window",
             f"a sliding window is modelled in a decoder only (arch is {self.arch})")

    def _validate_issue20(self, need) -> None:
        """The blocks of issue 20."""
        need(self.qk_norm in QK_NORMS, "qk_norm", f"must be one of {', '.join(QK_NORMS)} (got {self.qk_norm!r})")
        need(self.parallel_block in (0, 1, 2), "parallel_block", "must be 0 (sequential), 1 or 2 (norms)")
        need(self.norm_position in ("pre", "post") or self.arch == "decoder", "norm_position",
             f"{self.norm_position} norms are modelled in a decoder only (arch is {self.arch})")
        need(not self.parallel_block or (self.norm_position == "pre" and self.arch == "decoder"), "parallel_block",
             "a parallel block is modelled in a pre-norm decoder only")
        for name in ("rotary_dim", "position_offset"):
            value = getattr(self, name)
            need(isinstance(value, int) and value >= 0, name, f"must be an integer >= 0 (got {value!r})")
        need(not self.rotary_dim or (self.pos == "rope" and not self.is_mla and self.rotary_dim % 2 == 0
                                     and self.rotary_dim <= self.head_dim), "rotary_dim",
             "a partial rotary dimension needs pos=rope, no latent attention, and an even size <= d_head")
        need(not self.position_offset or self.pos == "learned", "position_offset",
             "a position offset needs a learned position table")
        need(self.d_ff_shared is None or (self.d_ff_shared > 0 and self.is_moe), "d_ff_shared",
             "must be a positive integer, with a mixture of experts")
        need(not self.shared_expert_gate or self.n_shared_experts > 0, "shared_expert_gate",
             "a shared-expert gate needs n_shared_experts > 0")
        need(not self.router_bias or self.is_moe, "router_bias", "a router bias needs a mixture of experts")
        need(isinstance(self.moe_every, int) and self.moe_every >= 1, "moe_every", "must be an integer >= 1")
        need(self.moe_every == 1 or (self.is_moe and self.arch == "decoder"), "moe_every",
             "MoE every k-th layer needs a mixture of experts in a decoder")
        need(not self.attn_sinks or (self.arch == "decoder" and not self.is_mla), "attn_sinks",
             "attention sinks are modelled in a decoder's ordinary attention only")
        need(self.qk_norm == "none" or not self.is_mla, "qk_norm", "a QK-norm on latent attention is not modelled")
        need(not self.lora_rank or not (self.d_ff_shared is not None or self.moe_every > 1 or self.shared_expert_gate)
             or "ffn" not in self.lora_targets, "lora_targets",
             "LoRA on the FFN is modelled for plain routed experts only")

    # ---- conversions ----------------------------------------------------------------
    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes``; for an encoder-decoder, a new ``n_layers`` without new
        ``n_encoder_layers``/``n_decoder_layers`` is split in half again."""
        if (self.arch == "encoder-decoder" or changes.get("arch") == "encoder-decoder") and "n_layers" in changes:
            changes.setdefault("n_encoder_layers", None)
            changes.setdefault("n_decoder_layers", None)
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lora_targets"] = list(self.lora_targets)
        return d

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


# ---- overriding a preset's fields (issue 10) -------------------------------------------------
def override(base: ModelConfig, given: dict[str, Any]) -> tuple[ModelConfig, list[str]]:
    """``base`` with the fields in ``given`` changed, re-deriving what ``base`` derived, and the
    notes that say what was re-derived. A change that would leave ``base`` inconsistent and that
    cannot be re-derived is refused in one line (:class:`SolverInputError`).

    - ``d_head``: a base whose n_heads·d_head equals d_model derived it; a new ``d_model`` or
      ``n_heads`` re-derives it as d_model / n_heads (refused when that is not an integer). A base
      whose d_head is its own (GPT-3 XL: 24·128 ≠ 2048) needs ``d_head`` given with them.
    - ``d_ff``: a base with d_ff = 4·d_model (GPT, BERT) derived it; a new ``d_model`` makes it
      4·d_model again. Any other d_ff is the base's own and is kept (noted).
    """
    changes = dict(given)
    notes: list[str] = []
    shape_changed = "d_model" in changes or "n_heads" in changes
    d = changes.get("d_model", base.d_model)
    h = changes.get("n_heads", base.n_heads)
    if shape_changed and "d_head" not in changes and base.d_head is not None and not base.is_mla:
        if base.d_head * base.n_heads != base.d_model:
            raise SolverInputError(
                f"the base's d_head ({base.d_head}) is its own (n_heads·d_head = {base.n_heads * base.d_head} ≠ "
                f"d_model {base.d_model}); with a new d_model or n_heads give d_head too", param="d_head")
        if d % h:
            raise SolverInputError(f"d_model ({d}) is not divisible by n_heads ({h}): give d_head too",
                                   param="n_heads")
        changes["d_head"] = None
        if d // h != base.d_head:
            notes.append(f"d_head re-derived as d_model / n_heads = {d} / {h} = {d // h} (was {base.d_head})")
    if "d_model" in changes and "d_ff" not in changes and changes["d_model"] != base.d_model:
        if base.d_ff == 4 * base.d_model:
            changes["d_ff"] = 4 * d
            notes.append(f"d_ff re-derived as 4·d_model = {4 * d} (was {base.d_ff})")
        else:
            notes.append(f"d_ff kept at {base.d_ff} (the base's own, not a multiple rule of d_model)")
    if "n_heads" in changes and "n_kv_heads" not in changes and base.n_kv_heads is not None and h % base.n_kv_heads:
        raise SolverInputError(f"n_heads ({h}) is not a multiple of the base's n_kv_heads ({base.n_kv_heads}): "
                               f"give n_kv_heads too", param="n_kv_heads")
    return base.replace(**changes), notes
