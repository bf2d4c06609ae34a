"""Exact matmul FLOPs of a :class:`~solver.counting.config.ModelConfig`: forward, decode, training.

Conventions (what ``torch.utils.flop_counter.FlopCounterMode`` measures on the reference model
of ``solver.models``, exactly):

- **2 FLOPs per multiply-add** (``convention="flops"``); ``convention="macs"`` halves every
  figure. A matmul ``[m, k] @ [k, n]`` costs ``2·m·k·n``. Only matmuls are counted (mm, addmm,
  bmm, baddbmm and their batched forms): a bias add, an embedding lookup, softmax, norms,
  activations, the scale ``1/√d_h``, the mask and the residual adds cost 0 in the total; they
  are listed apart in :attr:`FlopReport.other` as estimates.
- **Attention is counted over the full n × n**, causal or not: the reference model computes
  ``q @ kᵀ`` and ``p @ v`` with explicit matmuls and masks afterwards, and FlopCounterMode
  counts every entry. (With grouped K/V the cost is the same as with ``n_heads`` full heads.)
  ``attention_kernel="explicit"`` is this. ``"fused"`` models the CUDA flash/efficient SDPA
  kernels, whose registered backward recomputes QKᵀ (5 bmm-sized products instead of 4).
  FlopCounterMode counts nothing for CPU's fused SDPA kernel, which is why the reference model
  uses explicit matmuls.
- ``mode="forward"`` (prefill): ``batch`` sequences of ``seq`` tokens, logits on every
  position. Encoder with ``cls_token``: ``seq + 1`` positions. Pooler and classifier run on
  one position per sequence. Encoder-decoder: the encoder runs on ``src_seq`` tokens (default
  ``seq``) and the decoder on ``seq``; cross-attention K/V are projected from the encoder
  output.
- ``mode="decode"``: one new token per sequence (``batch`` rows) with a KV cache; ``seq`` is
  the number of positions the new token attends to (the cache after appending its own K and
  V). Projections, FFN and LM head run on ``batch`` rows; QKᵀ and AV are ``1 × seq`` per head.
  Encoder-decoder: the decoder only; cross-attention K/V of the encoder output are cached
  (no projection), the new token attends to ``src_seq`` encoder positions. An encoder cannot
  decode.
- ``mode="train"``: forward + backward under autograd with every parameter requiring grad.
  Each matmul's backward is two matmuls of the same size (grad of the input and grad of the
  weight, or of both operands for QKᵀ and AV), so backward = 2 × forward and train =
  3 × forward (explicit attention kernel). The optimizer step is not a matmul.
- MoE: the router (``d·E`` per token) plus ``top_k`` experts per token (each expert runs on
  the tokens routed to it), plus the ``n_shared_experts`` every token runs through; the first
  ``first_dense_layers`` layers run one dense FFN of ``d_ff`` instead.
- Latent attention (MLA): as ``solver.models.attention.LatentAttention`` computes it, the keys
  and values re-expanded from the latent on every attended position (no weight absorption).
- Sliding window W: in a decode step a windowed layer attends to min(n, W) positions (its
  rolling cache); a forward pass still computes the full n × n rectangle and masks the band
  (what a dense masked kernel does; :func:`attention_pairs` counts the band itself).
- LoRA adapters (``lora_rank > 0``) run unmerged beside their layers: ``x·Aᵀ`` then ``·Bᵀ``,
  ``2·r·(d_in + d_out)`` FLOPs per token per adapted layer (forward).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solver.counting.config import ModelConfig
from solver.counting.params import param_breakdown
from solver.errors import SolverInputError
from solver.units import FLOP_CONVENTIONS, per_convention

MODES = ("forward", "decode", "train")
ATTENTION_KERNELS = ("explicit", "fused")


@dataclass(frozen=True)
class FlopTerm:
    """One matmul kind summed over its layers: forward and backward FLOPs (2 per multiply-add).

    ``group``: attention_proj, attention_scores, cross_attention_proj, cross_attention_scores,
    ffn, router, lora, head. ``formula`` is the forward count as a plain-Unicode product.
    """

    name: str
    group: str
    stack: str
    forward: int
    backward: int
    formula: str

    @property
    def total(self) -> int:
        return self.forward + self.backward


@dataclass(frozen=True)
class OtherOp:
    """A non-matmul operation, not in the total: how many elements it touches, and a
    FLOP estimate at ``per_element`` operations per element (an assumption, stated)."""

    name: str
    elements: int
    per_element: int
    note: str

    @property
    def flops_estimate(self) -> int:
        return self.elements * self.per_element


@dataclass(frozen=True)
class FlopReport:
    """Matmul FLOPs of one step; ``total`` is in ``convention`` (the terms are in FLOPs)."""

    config: ModelConfig
    batch: int
    seq: int
    src_seq: int
    mode: str
    convention: str
    attention_kernel: str
    terms: tuple[FlopTerm, ...]
    other: tuple[OtherOp, ...]
    textbook: dict[str, Any] = field(default_factory=dict)

    @property
    def forward_flops(self) -> int:
        return sum(t.forward for t in self.terms)

    @property
    def backward_flops(self) -> int:
        return sum(t.backward for t in self.terms)

    @property
    def flops(self) -> int:
        """The total in FLOPs (2 per multiply-add), whatever the convention asked."""
        return self.forward_flops + self.backward_flops

    @property
    def total(self) -> int:
        """The total in the asked convention (FLOPs, or multiply-adds for ``macs``)."""
        return per_convention(self.flops, self.convention)

    def value(self, flops: int) -> int:
        return per_convention(flops, self.convention)

    def by_group(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.terms:
            out[t.group] = out.get(t.group, 0) + self.value(t.total)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total, "convention": self.convention, "mode": self.mode, "batch": self.batch,
            "seq": self.seq, "src_seq": self.src_seq, "attention_kernel": self.attention_kernel,
            "forward": self.value(self.forward_flops), "backward": self.value(self.backward_flops),
            "by_group": self.by_group(),
            "terms": [{"name": (f"{t.stack}.{t.name}" if t.stack else t.name), "group": t.group,
                       "forward": self.value(t.forward), "backward": self.value(t.backward),
                       "formula": t.formula} for t in self.terms],
            "other_not_in_total": [{"name": o.name, "elements": o.elements, "per_element": o.per_element,
                                    "flops_estimate": o.flops_estimate, "note": o.note} for o in self.other],
            "textbook": self.textbook,
        }


def _check_int(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)


def matmul_flops(cfg: ModelConfig, batch: int, seq: int, mode: str = "forward", convention: str = "flops",
                 *, src_seq: int | None = None, attention_kernel: str = "explicit") -> FlopReport:
    """Matmul FLOPs of a forward pass, a decode step or a training step (module docstring)."""
    _check_int("batch", batch, 1)
    _check_int("seq", seq, 1)
    if src_seq is not None:
        _check_int("src_seq", src_seq, 1)
    if mode not in MODES:
        raise SolverInputError(f"must be one of {', '.join(MODES)} (got {mode!r})", param="mode")
    if convention not in FLOP_CONVENTIONS:
        raise SolverInputError(f"must be one of {', '.join(FLOP_CONVENTIONS)} (got {convention!r})",
                               param="convention")
    if attention_kernel not in ATTENTION_KERNELS:
        raise SolverInputError(f"must be one of {', '.join(ATTENTION_KERNELS)}", param="attention_kernel")
    if mode == "decode" and cfg.arch == "encoder":
        raise SolverInputError("an encoder does not decode token by token; use --mode forward", param="mode")
    src = src_seq if src_seq is not None else seq
    if cfg.arch != "encoder-decoder":
        src = seq

    terms: list[FlopTerm] = []
    other: list[OtherOp] = []
    train = mode == "train"
    decode = mode == "decode"

    d, h, dh, dff, V = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.d_ff, cfg.vocab_size
    qd, kvd = cfg.q_dim, cfg.kv_dim
    r = cfg.lora_rank
    n_ffn = 3 if cfg.ffn == "swiglu" else 2

    def add(name: str, group: str, stack: str, fwd: int, formula: str, fused_bwd_factor: int = 2) -> None:
        if fwd == 0:
            return
        factor = fused_bwd_factor if attention_kernel == "fused" else 2
        terms.append(FlopTerm(name, group, stack, fwd, factor * fwd if train else 0, formula))

    def lora(stack: str, L: int, rows: int, rows_sym: str, target: str, d_in: int, d_out: int,
             prefix: str) -> None:
        if r and target in cfg.lora_targets:
            add(f"lora.{prefix}.{target}", "lora", stack, 2 * L * rows * r * (d_in + d_out),
                f"2·L·{rows_sym}·r·(d_in+d_out) [{d_in}+{d_out}]")

    def keys_over_layers(L: int, n_k: int, nk_sym: str, cross: bool) -> tuple[int, str]:
        """Σ over the layers of the keys each attends to, and its symbol: ``L·n``, or in a decode
        step with a sliding window Σ min(n, W) over the windowed layers plus n over the others."""
        if cross or not decode or not cfg.sliding_window:
            return L * n_k, f"L·{nk_sym}"
        local = cfg.local_layers_of(L)
        total = local * min(n_k, cfg.sliding_window) + (L - local) * n_k
        sym = f"L_local·min({nk_sym},W)" + (f" + L_global·{nk_sym}" if L - local else "")
        return total, f"({sym})"

    def latent_attention(stack: str, L: int, rows: int, rows_sym: str, n_q: int, n_k: int, nq_sym: str,
                         nk_sym: str) -> None:
        """MLA as ``solver.models.attention.LatentAttention`` computes it: W_UK and W_UV re-expand
        every attended latent (B·Σn rows), in a decode step too."""
        dc, dcq, dR, dv = cfg.kv_lora_rank, cfg.q_lora_rank, cfg.qk_rope_head_dim, cfg.value_head_dim
        keys, k_sym = keys_over_layers(L, n_k, nk_sym, False)
        g = "attention_proj"
        if dcq:
            add("attn.q_a", g, stack, 2 * L * rows * d * dcq, f"2·L·{rows_sym}·d·d_cq")
            add("attn.q_b", g, stack, 2 * L * rows * dcq * h * dh, f"2·L·{rows_sym}·d_cq·h·d_h")
            add("attn.q_b_rope", g, stack, 2 * L * rows * dcq * h * dR, f"2·L·{rows_sym}·d_cq·h·d_R")
        else:
            add("attn.q", g, stack, 2 * L * rows * d * h * dh, f"2·L·{rows_sym}·d·h·d_h")
            add("attn.q_rope", g, stack, 2 * L * rows * d * h * dR, f"2·L·{rows_sym}·d·h·d_R")
        add("attn.kv_a", g, stack, 2 * L * rows * d * dc, f"2·L·{rows_sym}·d·d_c")
        add("attn.k_rope", g, stack, 2 * L * rows * d * dR, f"2·L·{rows_sym}·d·d_R")
        add("attn.k_b", g, stack, 2 * batch * keys * dc * h * dh, f"2·B·{k_sym}·d_c·h·d_h (keys from the latent)")
        add("attn.v_b", g, stack, 2 * batch * keys * dc * h * dv, f"2·B·{k_sym}·d_c·h·d_v (values from the latent)")
        add("attn.o", g, stack, 2 * L * rows * h * dv * d, f"2·L·{rows_sym}·h·d_v·d")
        add("attn.scores", "attention_scores", stack, 2 * batch * h * n_q * keys * (dh + dR),
            f"2·B·h·{nq_sym}·{k_sym}·(d_h+d_R) (QKᵀ)", fused_bwd_factor=3)
        add("attn.context", "attention_scores", stack, 2 * batch * h * n_q * keys * dv,
            f"2·B·h·{nq_sym}·{k_sym}·d_v (AV)")
        other.append(OtherOp(f"{stack + '.' if stack else ''}attn softmax", batch * h * n_q * keys, 5,
                             "max, subtract, exp, sum, divide per score"))

    def attention(stack: str, L: int, rows: int, rows_sym: str, kv_rows: int, kv_sym: str,
                  n_q: int, n_k: int, nq_sym: str, nk_sym: str, cross: bool) -> None:
        if cfg.is_mla and not cross:
            latent_attention(stack, L, rows, rows_sym, n_q, n_k, nq_sym, nk_sym)
            return
        prefix = "cross_attn" if cross else "attn"
        g = "cross_attention" if cross else "attention"
        keys, k_sym = keys_over_layers(L, n_k, nk_sym, cross)
        add(f"{prefix}.q", f"{g}_proj", stack, 2 * L * rows * d * qd, f"2·L·{rows_sym}·d·h·d_h")
        add(f"{prefix}.k", f"{g}_proj", stack, 2 * L * kv_rows * d * kvd, f"2·L·{kv_sym}·d·h_kv·d_h")
        add(f"{prefix}.v", f"{g}_proj", stack, 2 * L * kv_rows * d * kvd, f"2·L·{kv_sym}·d·h_kv·d_h")
        add(f"{prefix}.o", f"{g}_proj", stack, 2 * L * rows * qd * d, f"2·L·{rows_sym}·h·d_h·d")
        add(f"{prefix}.scores", f"{g}_scores", stack, 2 * batch * h * n_q * keys * dh,
            f"2·B·h·{nq_sym}·{k_sym}·d_h (QKᵀ)", fused_bwd_factor=3)  # fused: recompute QKᵀ, dQ, dK
        add(f"{prefix}.context", f"{g}_scores", stack, 2 * batch * h * n_q * keys * dh,
            f"2·B·h·{nq_sym}·{k_sym}·d_h (AV)")  # dP, dV
        for t, di, do, rr in (("q", d, qd, rows), ("k", d, kvd, kv_rows), ("v", d, kvd, kv_rows), ("o", qd, d, rows)):
            lora(stack, L, rr, rows_sym if rr == rows else kv_sym, t, di, do, prefix)
        per_layer_scores = batch * h * n_q * n_k
        other.append(OtherOp(f"{stack + '.' if stack else ''}{prefix} softmax", L * per_layer_scores, 5,
                             "max, subtract, exp, sum, divide per score"))
        other.append(OtherOp(f"{stack + '.' if stack else ''}{prefix} scale 1/√d_h", L * per_layer_scores, 1,
                             "one multiply per score"))
        if not cross and (cfg.arch == "decoder" or stack == "decoder") and not decode:
            other.append(OtherOp(f"{stack + '.' if stack else ''}{prefix} causal mask", L * per_layer_scores, 1,
                                 "one add/select per score (decode needs none)"))

    def ffn(stack: str, L: int, rows: int, rows_sym: str) -> None:
        if cfg.is_moe and (cfg.first_dense_layers or cfg.n_shared_experts or cfg.d_ff_expert is not None
                           or cfg.moe_every > 1):
            moe_ffn(stack, L, rows, rows_sym)
            return
        if cfg.n_experts > 1:
            add("ffn.router", "router", stack, 2 * L * rows * d * cfg.n_experts, f"2·L·{rows_sym}·d·E")
        k = cfg.top_k if cfg.n_experts > 1 else 1
        k_sym = "·top_k" if cfg.n_experts > 1 else ""
        mats = [("gate", d, dff), ("up", d, dff), ("down", dff, d)][3 - n_ffn:]
        for name, di, do in mats:
            add(f"ffn.{name}", "ffn", stack, 2 * L * rows * k * di * do,
                f"2·L·{rows_sym}{k_sym}·" + ("d_ff·d" if name == "down" else "d·d_ff"))
            if r and "ffn" in cfg.lora_targets:
                add(f"lora.ffn.{name}", "lora", stack, 2 * L * rows * k * r * (di + do),
                    f"2·L·{rows_sym}{k_sym}·r·(d+d_ff)")
        act_elems = L * rows * k * dff
        other.append(OtherOp(f"{stack + '.' if stack else ''}ffn activation ({cfg.ffn})", act_elems,
                             {"relu": 1, "gelu": 8, "swiglu": 5}[cfg.ffn],
                             "relu 1, gelu ≈ 8 (tanh form), swiglu ≈ 5 (silu + gate multiply) ops/element"))

    def moe_ffn(stack: str, L: int, rows: int, rows_sym: str) -> None:
        """Dense first layers (d_ff), then MoE layers: router, top_k routed experts and E_s shared
        experts per token, each of width d_fe."""
        n_dense = cfg.dense_layers_of(L)
        n_moe, fe = L - n_dense, cfg.expert_ff

        def mats(width: int) -> list[tuple[str, int, int]]:
            return [("gate", d, width), ("up", d, width), ("down", width, d)][3 - n_ffn:]

        for name, di, do in mats(dff):
            add(f"ffn.dense.{name}", "ffn", stack, 2 * n_dense * rows * di * do, f"2·L_D·{rows_sym}·d·d_ff")
        add("ffn.router", "router", stack, 2 * n_moe * rows * d * cfg.n_experts, f"2·L_M·{rows_sym}·d·E")
        for name, di, do in mats(fe):
            add(f"ffn.{name}", "ffn", stack, 2 * n_moe * rows * cfg.top_k * di * do, f"2·L_M·{rows_sym}·k·d·d_fe")
        fs = cfg.shared_ff
        for name, di, do in mats(fs):
            add(f"ffn.shared.{name}", "ffn", stack, 2 * n_moe * rows * cfg.n_shared_experts * di * do,
                f"2·L_M·{rows_sym}·E_s·d·" + ("d_fe" if cfg.d_ff_shared is None else "d_fs"))
        if cfg.shared_expert_gate:  # Qwen-MoE: sigmoid(x·w_g) scales the shared experts' output
            add("ffn.shared_gate", "router", stack, 2 * n_moe * rows * d, f"2·L_M·{rows_sym}·d")
        other.append(OtherOp(f"{stack + '.' if stack else ''}ffn activation ({cfg.ffn})",
                             rows * (n_dense * dff + n_moe * (cfg.top_k * fe + cfg.n_shared_experts * fs)),
                             {"relu": 1, "gelu": 8, "swiglu": 5}[cfg.ffn],
                             "relu 1, gelu ≈ 8 (tanh form), swiglu ≈ 5 (silu + gate multiply) ops/element"))

    def norms(stack: str, count: int, rows: int) -> None:
        if count:
            other.append(OtherOp(f"{stack + '.' if stack else ''}norms ({cfg.norm})", count * rows * d,
                                 5 if cfg.norm == "layernorm" else 4,
                                 "≈ 5 ops/element for LayerNorm, 4 for RMSNorm"))

    n_cls = 1 if cfg.cls_token else 0
    if cfg.arch == "encoder-decoder":
        Le, Ld = cfg.encoder_layers, cfg.decoder_layers
        dec_rows, dec_sym = (batch, "B") if decode else (batch * seq, "B·n")
        n_q, nq_sym = (1, "1") if decode else (seq, "n")
        if not decode:
            attention("encoder", Le, batch * src, "B·s", batch * src, "B·s", src, src, "s", "s", cross=False)
            ffn("encoder", Le, batch * src, "B·s")
            norms("encoder", 2 * Le + int(cfg.final_norm) + int(cfg.embedding_norm), batch * src)
        attention("decoder", Ld, dec_rows, dec_sym, dec_rows, dec_sym, n_q, seq, nq_sym, "n", cross=False)
        cross_kv_rows = 0 if decode else batch * src
        attention("decoder", Ld, dec_rows, dec_sym, cross_kv_rows, "B·s", n_q, src, nq_sym, "s", cross=True)
        ffn("decoder", Ld, dec_rows, dec_sym)
        norms("decoder", 3 * Ld + int(cfg.final_norm) + int(cfg.embedding_norm), dec_rows)
        head_rows, head_sym = dec_rows, dec_sym
    else:
        L = cfg.n_layers
        n = seq + n_cls
        rows, rows_sym = (batch, "B") if decode else (batch * n, "B·(n+1)" if n_cls else "B·n")
        n_q, nq_sym = (1, "1") if decode else (n, "(n+1)" if n_cls else "n")
        attention("", L, rows, rows_sym, rows, rows_sym, n_q, n, nq_sym, "(n+1)" if n_cls else "n", cross=False)
        ffn("", L, rows, rows_sym)
        norms("", cfg.norms_per_layer * L + int(cfg.final_norm) + int(cfg.embedding_norm), rows)
        head_rows, head_sym = rows, rows_sym
    if cfg.lm_head:
        add("lm_head", "head", "", 2 * head_rows * d * V, f"2·{head_sym}·d·V")
    if cfg.pooler:
        add("pooler", "head", "", 2 * batch * d * d, "2·B·d·d")
    if cfg.n_classes:
        add("classifier", "head", "", 2 * batch * d * cfg.n_classes, "2·B·d·C")

    report = FlopReport(cfg, batch, seq, src, mode, convention, attention_kernel, tuple(terms), tuple(other))
    object.__setattr__(report, "textbook", _textbook(report))
    return report


def _textbook(rep: FlopReport) -> dict[str, Any]:
    """The rules 2N (forward) and 6N (training) FLOPs per token, C = 6·N·D, beside the exact
    figure, with the gap split into the parts that the rule leaves out.

    N is the non-embedding parameter count (Kaplan et al. 2020); D the tokens the step
    processes (B·n; encoder-decoder B·(s+n); decode B). Gap items (FLOPs, 2 per MAC):
    attention QKᵀ and AV (n-dependent, not parameters); the LM head matmul (its weight is an
    embedding); norm and bias parameters (in N, but no matmul); and the rest (layers that
    run on other than D rows: pooler, classifier, MoE experts not active, LoRA adapters).
    """
    cfg = rep.config
    pb = param_breakdown(cfg)
    N = pb.non_embedding
    if rep.mode == "decode":
        D = rep.batch
    elif cfg.arch == "encoder-decoder":
        D = rep.batch * (rep.src_seq + rep.seq)
    else:
        D = rep.batch * rep.seq
    mult = 3 if rep.mode == "train" else 1
    rule = 2 * mult * N * D
    exact = rep.flops
    attn = sum(t.total for t in rep.terms if t.group.endswith("_scores"))
    lm = sum(t.total for t in rep.terms if t.name == "lm_head")
    no_matmul = sum(c.count for c in pb.components
                    if c.group == "norm" or (c.name.endswith(".bias") and c.group != "head"))
    no_matmul_flops = -2 * mult * no_matmul * D
    rest = exact - rule - attn - lm - no_matmul_flops
    macs = rep.convention == "macs"
    per_token = {(False, False): "2N FLOPs", (False, True): "N MACs",
                 (True, False): "6N FLOPs", (True, True): "3N MACs"}[(rep.mode == "train", macs)]
    return {
        "rule": f"{per_token} per token" + (" (C = 6·N·D FLOPs)" if rep.mode == "train" else ""),
        "N_non_embedding": N, "N_total": pb.total, "D_tokens": D,
        "rule_value": rep.value(rule), "exact_value": rep.value(exact),
        "ratio_exact_to_rule": (exact / rule) if rule else None,
        "gap": {"attention_scores_and_context": rep.value(attn), "lm_head": rep.value(lm),
                "norm_and_bias_params_without_matmul": -rep.value(-no_matmul_flops),
                "rest": rep.value(rest)},
    }
