"""The model zoo: named configurations, the figure each source publishes, and why ours differs.

Presets are data. The exact count is never stored: ``Preset.exact()`` computes it with
``solver.counting``. ``published`` is the figure as its source prints it (``None`` where the
source prints none), ``tolerance`` the relative distance ``|exact − published| / published``
that ``note`` explains (``None`` when the published figure is simply wrong, as seeds'
printed outputs can be: the note then says what the code really holds).

Citations: Vaswani et al. 2017 "Attention Is All You Need" (Table 3); Devlin et al. 2019 BERT
(§3); Radford et al. 2019 GPT-2 (Table 2) and the openai/gpt-2 repository's model names;
Brown et al. 2020 GPT-3 (Table 2.1); Touvron et al. 2023 Llama 2 (Table 1, and the released
params.json); Meta 2024 Llama 3 model card; Jiang et al. 2023 Mistral 7B (Table 1); the seed
texts, cited by file name and section (no machine path).
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.counting.config import ModelConfig
from solver.errors import SolverInputError


@dataclass(frozen=True)
class Preset:
    name: str
    config: ModelConfig
    published: int | None  # the source's figure as an integer (124M -> 124_000_000)
    published_text: str  # as printed: "124M", "~110M", "411,073"
    source: str
    note: str
    tolerance: float | None  # relative distance the note explains; None: the figure is wrong
    family: str = ""
    # issue 10: a mixture of experts publishes its active parameters too (per token)
    published_active: int | None = None
    published_active_text: str = ""
    active_tolerance: float | None = None  # relative distance of ParamBreakdown.active the note explains

    def exact(self) -> int:
        """The exact parameter count (base model, ``solver.counting.param_count``)."""
        from solver.counting.params import param_count

        return param_count(self.config)

    def exact_active(self) -> int:
        """Parameters one token uses (``ParamBreakdown.active``)."""
        from solver.counting.params import param_breakdown

        return param_breakdown(self.config).active

    def relative_gap(self) -> float | None:
        if not self.published:
            return None
        return (self.exact() - self.published) / self.published


# ---- shared configuration pieces -----------------------------------------------------------
def _vaswani(d: int, h: int, d_ff: int) -> ModelConfig:
    # shared source/target BPE vocabulary (~37000 for EN-DE), one embedding shared by encoder,
    # decoder and the pre-softmax projection (§3.4), sinusoidal positions, post-norm, ReLU
    return ModelConfig(arch="encoder-decoder", d_model=d, n_layers=12, n_encoder_layers=6, n_decoder_layers=6,
                       n_heads=h, d_ff=d_ff, ffn="relu", norm="layernorm", norm_position="post",
                       final_norm=False, bias=True, vocab_size=37000, pos="sinusoidal", tied_embeddings=True,
                       lm_head=True, max_positions=1024, norm_eps=1e-6)


def _bert(d: int, L: int, h: int) -> ModelConfig:
    # BertModel: word + position (512) + segment (2) embeddings, embedding LayerNorm, post-norm
    # layers with biases everywhere, GELU, no final norm, pooler (dense d×d + tanh); no MLM head
    return ModelConfig(arch="encoder", d_model=d, n_layers=L, n_heads=h, d_ff=4 * d, ffn="gelu",
                       norm="layernorm", norm_position="post", final_norm=False, bias=True, vocab_size=30522,
                       max_positions=512, pos="learned", type_vocab_size=2, embedding_norm=True, pooler=True,
                       lm_head=False, tied_embeddings=False, norm_eps=1e-12)


def _gpt2(d: int, L: int, h: int, n_ctx: int = 1024, d_head: int | None = None) -> ModelConfig:
    # GPT-2: vocab 50257, learned positions, pre-norm, biases everywhere, GELU d_ff = 4d,
    # final LayerNorm, LM head tied to the token embedding (no bias)
    return ModelConfig(arch="decoder", d_model=d, n_layers=L, n_heads=h, d_head=d_head, d_ff=4 * d, ffn="gelu",
                       norm="layernorm", norm_position="pre", final_norm=True, bias=True, vocab_size=50257,
                       max_positions=n_ctx, pos="learned", tied_embeddings=True, lm_head=True)


def _llama(d: int, L: int, h: int, kv: int, d_ff: int, vocab: int, n_ctx: int, eps: float = 1e-5) -> ModelConfig:
    # Llama family: RMSNorm (pre) and a final RMSNorm, no biases, SwiGLU, RoPE, untied LM head
    return ModelConfig(arch="decoder", d_model=d, n_layers=L, n_heads=h, n_kv_heads=kv, d_ff=d_ff, ffn="swiglu",
                       norm="rmsnorm", norm_position="pre", final_norm=True, bias=False, vocab_size=vocab,
                       max_positions=n_ctx, pos="rope", tied_embeddings=False, lm_head=True, norm_eps=eps)


def _deepseek(d: int, L: int, d_ff: int, vocab: int, *, experts: int, top_k: int, shared: int, d_fe: int,
              dense: int) -> ModelConfig:
    # DeepSeek-V2/V3: 128 heads of 128 with latent attention (d_c 512, d_c' 1536, d_h^R 64, d_v 128), RMSNorm,
    # SwiGLU experts (routed + shared) after the first `dense` dense layers, untied head
    return _llama(d, L, 128, 128, d_ff, vocab, 163840, eps=1e-6).replace(
        n_kv_heads=None, d_head=128, n_experts=experts, top_k=top_k, n_shared_experts=shared, d_ff_expert=d_fe,
        first_dense_layers=dense, kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128)


def _gemma2(d: int, L: int, h: int, kv: int, d_head: int, d_ff: int) -> ModelConfig:
    # Gemma 2: four RMSNorms per layer (sandwich), GeGLU (three matrices), tied 256000-token head, a 4096 window on
    # every other layer (layers 2, 4, ... global)
    return _llama(d, L, h, kv, d_ff, 256000, 8192, eps=1e-6).replace(
        d_head=d_head, tied_embeddings=True, norm_position="sandwich", sliding_window=4096, global_every=2)


def _gemma3(d: int, L: int, h: int, kv: int, d_ff: int, vocab: int, n_ctx: int, window: int) -> ModelConfig:
    # Gemma 3: Gemma 2's sandwich of four RMSNorms and GeGLU, RMSNorm on each head's Q and K (QK-norm), head 256,
    # tied head; five windowed layers to one global (every 6th layer global)
    return _llama(d, L, h, kv, d_ff, vocab, n_ctx, eps=1e-6).replace(
        d_head=256, tied_embeddings=True, norm_position="sandwich", qk_norm="head", sliding_window=window,
        global_every=6)


def _qwen25(d: int, L: int, h: int, kv: int, d_ff: int) -> ModelConfig:
    # Qwen2.5: Llama's structure with Q/K/V biases (none on O), vocab 152064, untied
    return _llama(d, L, h, kv, d_ff, 152064, 131072, eps=1e-6).replace(attn_bias=True, attn_out_bias=False)


def _gpt_oss(L: int, experts: int) -> ModelConfig:
    # gpt-oss: d 2880, 64 heads of 64, 8 KV heads, Q/K/V/O biases, sinks, a 128 window on every other layer; every
    # layer MoE (top 4) of SwiGLU experts of 2880 with biases and a router with a bias; untied 201088-token head
    return ModelConfig(arch="decoder", d_model=2880, n_layers=L, n_heads=64, n_kv_heads=8, d_head=64, d_ff=2880,
                       ffn="swiglu", norm="rmsnorm", norm_position="pre", final_norm=True, bias=False, attn_bias=True,
                       ffn_bias=True, vocab_size=201088, max_positions=131072, pos="rope", tied_embeddings=False,
                       lm_head=True, n_experts=experts, top_k=4, router_bias=True, attn_sinks=True,
                       sliding_window=128, global_every=2)


def _seed001_encoder(vocab: int, d: int, h: int, d_ff: int, L: int) -> ModelConfig:
    # seed 001 §6-7: MultiHeadAttention with bias-free W_q/W_k/W_v/W_o, FeedForward with biases
    # and ReLU, two LayerNorms per block (pre-norm), sinusoidal buffer, a final LayerNorm, no head
    return ModelConfig(arch="encoder", d_model=d, n_layers=L, n_heads=h, d_ff=d_ff, ffn="relu", norm="layernorm",
                       norm_position="pre", final_norm=True, bias=True, attn_bias=False, vocab_size=vocab,
                       max_positions=512, pos="sinusoidal", lm_head=False, tied_embeddings=False)


_GPT2_NOTE = ("Exact with vocab 50257, 1024 learned positions, biases everywhere, tied LM head. The paper's "
              "Table 2 printed {paper}; OpenAI later renamed the released checkpoints {label} after a "
              "recount, which the exact figure confirms (rounded to the nearest million).")

_GPT3_SOURCE = "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1"
_GPT3_NOTE = ("Table 2.1's n_layers/d_model/n_heads/d_head with GPT-2's architecture (vocab 50257, n_ctx 2048 "
              "learned positions, tied head, biases, d_ff = 4·d_model); the paper's alternating sparse "
              "attention has no parameters. The published size is rounded.")

_SEED000 = "000_77b679b0197eab2d.txt"
_SEED001 = "001_8ec5306c4a732c7b.txt"
_SEED004 = "004_83489721195aedaa.txt"

_LIST: list[Preset] = [
    # ---- the original Transformer ---------------------------------------------------------
    Preset("transformer-base", _vaswani(512, 8, 2048), 65_000_000, "65M",
           "Vaswani et al. 2017, Attention Is All You Need, Table 3 (base)",
           "6+6 post-norm layers, one embedding shared by encoder, decoder and output projection (§3.4), "
           "vocabulary ~37000 (shared BPE, EN-DE, §5.1): 63,082,496 exact, 3% below the printed 65M. The "
           "paper states neither its exact vocabulary nor an exact count; 65M would need a ~40,700-token "
           "vocabulary, so treat the figure as rounded from an unstated configuration.",
           0.035, "transformer"),
    Preset("transformer-big", _vaswani(1024, 16, 4096), 213_000_000, "213M",
           "Vaswani et al. 2017, Attention Is All You Need, Table 3 (big)",
           "As transformer-base with d_model 1024, 16 heads, d_ff 4096; vocabulary ~37000. 214.2M exact, "
           "0.6% above the printed 213M (vocabulary size and rounding).", 0.01, "transformer"),
    # ---- BERT ------------------------------------------------------------------------------
    Preset("bert-base", _bert(768, 12, 12), 110_000_000, "110M",
           "Devlin et al. 2019, BERT, §3 (BERT_BASE: L=12, H=768, A=12)",
           "BertModel with pooler: 109,482,240 (embeddings 23,837,184 + 12 × 7,087,872 + pooler 590,592). "
           "The MLM/NSP pre-training heads are not counted; 110M is the rounded figure.", 0.005, "bert"),
    Preset("bert-large", _bert(1024, 24, 16), 340_000_000, "340M",
           "Devlin et al. 2019, BERT, §3 (BERT_LARGE: L=24, H=1024, A=16)",
           "BertModel with pooler: 335.1M, 1.4% below the printed 340M; the MLM head's transform "
           "(1024×1024 + biases + LayerNorm) and output bias add only 1.1M, so the paper's figure is "
           "loosely rounded.", 0.015, "bert"),
    # ---- GPT-2 -----------------------------------------------------------------------------
    Preset("gpt2", _gpt2(768, 12, 12), 124_000_000, "124M",
           "Radford et al. 2019 (GPT-2), Table 2; openai/gpt-2 model name 124M",
           _GPT2_NOTE.format(paper="117M", label="124M"), 0.005, "gpt2"),
    Preset("gpt2-medium", _gpt2(1024, 24, 16), 355_000_000, "355M",
           "Radford et al. 2019 (GPT-2), Table 2; openai/gpt-2 model name 355M",
           _GPT2_NOTE.format(paper="345M", label="355M"), 0.005, "gpt2"),
    Preset("gpt2-large", _gpt2(1280, 36, 20), 774_000_000, "774M",
           "Radford et al. 2019 (GPT-2), Table 2; openai/gpt-2 model name 774M",
           _GPT2_NOTE.format(paper="762M", label="774M"), 0.005, "gpt2"),
    Preset("gpt2-xl", _gpt2(1600, 48, 25), 1_558_000_000, "1558M",
           "Radford et al. 2019 (GPT-2), Table 2; openai/gpt-2 model name 1558M",
           _GPT2_NOTE.format(paper="1542M", label="1558M"), 0.005, "gpt2"),
    # ---- GPT-3 (Table 2.1) -----------------------------------------------------------------
    Preset("gpt3-small", _gpt2(768, 12, 12, 2048, 64), 125_000_000, "125M", _GPT3_SOURCE, _GPT3_NOTE, 0.01, "gpt3"),
    Preset("gpt3-medium", _gpt2(1024, 24, 16, 2048, 64), 350_000_000, "350M", _GPT3_SOURCE,
           _GPT3_NOTE + " 355.9M exact (the same shape as GPT-2 medium with 2048 positions): the paper's 350M "
           "rounds down by 1.7%.", 0.02, "gpt3"),
    Preset("gpt3-large", _gpt2(1536, 24, 16, 2048, 96), 760_000_000, "760M", _GPT3_SOURCE, _GPT3_NOTE, 0.01,
           "gpt3"),
    Preset("gpt3-xl", _gpt2(2048, 24, 24, 2048, 128), 1_300_000_000, "1.3B", _GPT3_SOURCE,
           _GPT3_NOTE + " Table 2.1 lists n_heads 24 and d_head 128 for d_model 2048: 24 × 128 = 3072 ≠ 2048. "
           "Taken literally (attention width 3072) the count is 1.52B, 17% above 1.3B; with an attention "
           "width of 2048 it would be 1.32B, so the table's head figures for XL are inconsistent.",
           0.18, "gpt3"),
    Preset("gpt3-2.7b", _gpt2(2560, 32, 32, 2048, 80), 2_700_000_000, "2.7B", _GPT3_SOURCE,
           _GPT3_NOTE + " 2.65B exact: the paper rounds up by 1.8%.", 0.02, "gpt3"),
    Preset("gpt3-6.7b", _gpt2(4096, 32, 32, 2048, 128), 6_700_000_000, "6.7B", _GPT3_SOURCE, _GPT3_NOTE, 0.01,
           "gpt3"),
    Preset("gpt3-13b", _gpt2(5140, 40, 40, 2048, 128), 13_000_000_000, "13.0B", _GPT3_SOURCE,
           _GPT3_NOTE + " Table 2.1 prints d_model 5140 with 40 heads of 128 (attention width 5120); both "
           "are taken literally here (d_model 5140, d_ff 20560).", 0.01, "gpt3"),
    Preset("gpt3-175b", _gpt2(12288, 96, 96, 2048, 128), 175_000_000_000, "175.0B", _GPT3_SOURCE,
           _GPT3_NOTE + " 174.6B exact: the paper rounds up.", 0.005, "gpt3"),
    # ---- Llama, Mistral ----------------------------------------------------------------------
    Preset("llama2-7b", _llama(4096, 32, 32, 32, 11008, 32000, 4096), 7_000_000_000, "7B",
           "Touvron et al. 2023, Llama 2, Table 1; released params.json",
           "6,738,415,616 exact (untied 32000-token head, SwiGLU d_ff 11008, RMSNorm, no biases); the name "
           "rounds 6.74B up to 7B.", 0.04, "llama"),
    Preset("llama2-13b", _llama(5120, 40, 40, 40, 13824, 32000, 4096), 13_000_000_000, "13B",
           "Touvron et al. 2023, Llama 2, Table 1; released params.json",
           "13.02B exact; the name rounds.", 0.005, "llama"),
    Preset("llama2-70b", _llama(8192, 80, 64, 8, 28672, 32000, 4096), 70_000_000_000, "70B",
           "Touvron et al. 2023, Llama 2, Table 1 and §2.2 (GQA with 8 KV heads); released params.json",
           "68.98B exact with grouped-query attention (8 KV heads) and d_ff 28672; the name rounds up.",
           0.02, "llama"),
    Preset("llama3-8b", _llama(4096, 32, 32, 8, 14336, 128256, 8192), 8_000_000_000, "8B",
           "Meta 2024, Llama 3 model card; released params.json (GQA 8, vocab 128256)",
           "8.03B exact: the 128256-token vocabulary (untied) holds 1.05B of it.", 0.005, "llama"),
    Preset("mistral-7b", _llama(4096, 32, 32, 8, 14336, 32000, 32768).replace(sliding_window=4096),
           7_000_000_000, "7B",
           "Jiang et al. 2023, Mistral 7B, Table 1 (GQA 8 KV heads, d_ff 14336, vocab 32000, window_size 4096, "
           "context_len 8192) and §2 (rolling buffer cache)",
           "7.24B exact; the name rounds down. Sliding-window attention (W = 4096 on every layer) has no "
           "parameters; it caps the KV cache at 4096 positions per layer (the rolling buffer).", 0.035, "mistral"),
    # ---- mixtures of experts, latent attention (issue 10) -----------------------------------
    Preset("mixtral-8x7b", _llama(4096, 32, 32, 8, 14336, 32000, 32768).replace(n_experts=8, top_k=2),
           46_700_000_000, "46.7B",
           "Mistral AI 2023, 'Mixtral of experts' announcement (46.7B total, 12.9B used per token); shape from "
           "Jiang et al. 2024, Mixtral of Experts, Table 1 (dim 4096, 32 layers, 32 heads, 8 KV heads, hidden "
           "14336, vocab 32000, 8 experts, top 2), whose abstract rounds to 47B and 13B",
           "46,702,792,704 exact: Mistral 7B's shape with 8 SwiGLU experts per layer and a router (4096×8); "
           "active per token 12,879,925,248 (top-2 of 8 experts; embeddings and the untied head counted, "
           "as Mistral's 12.9B does).", 0.001, "mixtral", 12_900_000_000, "12.9B", 0.002),
    Preset("mixtral-8x22b", _llama(6144, 56, 48, 8, 16384, 32768, 65536).replace(n_experts=8, top_k=2),
           141_000_000_000, "141B",
           "Mistral AI 2024, 'Cheaper, Better, Faster, Stronger' (Mixtral 8x22B announcement: 141B parameters, "
           "39B active); shape from the released config.json (dim 6144, 56 layers, 48 heads, 8 KV heads, "
           "hidden 16384, vocab 32768, 8 experts, top 2)",
           "140,630,071,296 exact, which the announcement rounds to 141B; active 39,161,468,928 (top-2 of 8, "
           "embeddings and the untied head counted) rounds to its 39B.", 0.003, "mixtral", 39_000_000_000,
           "39B", 0.005),
    Preset("deepseek-v2-lite",
           ModelConfig(arch="decoder", d_model=2048, n_layers=27, n_heads=16, d_head=128, d_ff=10944, ffn="swiglu",
                       norm="rmsnorm", norm_position="pre", final_norm=True, bias=False, vocab_size=102400,
                       max_positions=163840, pos="rope", tied_embeddings=False, lm_head=True, norm_eps=1e-6,
                       n_experts=64, top_k=6, n_shared_experts=2, d_ff_expert=1408, first_dense_layers=1,
                       kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128),
           15_700_000_000, "15.7B",
           "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434), Appendix B (DeepSeek-V2-Lite: 27 layers, d 2048, "
           "16 heads, d_c 512, d_h^R 64, no query compression, first layer dense, 2 shared + 64 routed experts "
           "of 1408, top 6; 15.7B total, 2.4B active); released config.json (vocab 102400, dense d_ff 10944)",
           "15,706,484,224 exact. Active 2,661,150,208 with every embedding counted; the paper's 2.4B leaves "
           "out the input embedding table (102400 × 2048 = 209,715,200, a lookup, not a matmul): "
           "2,451,435,008 without it.", 0.001, "deepseek", 2_400_000_000, "2.4B", 0.11),
    # ---- issue 20: the architectures interview questions name ---------------------------------
    Preset("llama3-70b", _llama(8192, 80, 64, 8, 28672, 128256, 8192), 70_000_000_000, "70B",
           "Meta 2024, Llama 3 model card; meta-llama/Meta-Llama-3-70B config.json (8192 hidden, 80 layers, 64 heads, "
           "8 KV heads, intermediate 28672, vocab 128256, untied)",
           "70,553,706,496 exact; the name rounds down by 0.8%.", 0.01, "llama"),
    Preset("llama3.1-405b", _llama(16384, 126, 128, 8, 53248, 128256, 131072), 405_000_000_000, "405B",
           "Llama Team 2024, The Llama 3 Herd of Models (arXiv 2407.21783), Table 3 (126 layers, d 16384, FFN 53248, "
           "128 heads, 8 KV heads); meta-llama/Llama-3.1-405B config.json (vocab 128256, untied)",
           "405,853,388,800 exact; the name rounds down by 0.2%.", 0.003, "llama"),
    Preset("deepseek-v2", _deepseek(5120, 60, 12288, 102400, experts=160, top_k=6, shared=2, d_fe=1536, dense=1),
           236_000_000_000, "236B",
           "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434), §3.1.1 (60 layers, d 5120, 128 heads, d_c 512, d_c' 1536, "
           "d_h^R 64, 2 shared + 160 routed experts, top 6, first layer dense; 236B total, 21B activated); "
           "deepseek-ai/DeepSeek-V2 config.json (vocab 102400, dense intermediate 12288, expert 1536)",
           "235,741,434,880 exact (0.1% below 236B). Active 21,375,800,320 with every embedding counted "
           "(20,851,512,320 without the input table): the paper's 21B rounds either.", 0.002, "deepseek",
           21_000_000_000, "21B", 0.02),
    Preset("deepseek-v3", _deepseek(7168, 61, 18432, 129280, experts=256, top_k=8, shared=1, d_fe=2048, dense=3),
           671_000_000_000, "671B",
           "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437), §4.2 (61 layers, d 7168, 128 heads, "
           "d_c 512, d_c' 1536, 1 shared + 256 routed experts of 2048, top 8, first 3 layers dense; 671B total, 37B "
           "activated); deepseek-ai/DeepSeek-V3 config.json and README_WEIGHTS.md (main model 671B, 36.6B activated "
           "including the 0.9B output head; the MTP module's 11.5B apart)",
           "671,026,404,352 exact. Active 37,552,282,624 with every embedding counted; without the input table "
           "(a lookup) 36,625,603,584, README_WEIGHTS.md's 36.6B to the digit. The router's e_score_correction_bias "
           "(a buffer in transformers) and the multi-token-prediction module are not counted.", 0.001, "deepseek",
           37_000_000_000, "37B", 0.02),
    Preset("gemma2-9b", _gemma2(3584, 42, 16, 8, 256, 14336), 9_000_000_000, "9B",
           "Gemma Team 2024, Gemma 2 (arXiv 2408.00118), Tables 1-2 (d 3584, 42 layers, 16 heads, 8 KV heads, head "
           "256, sliding window 4096 on every other layer; 8,324,201,984 non-embedding + 917,504,000 embedding "
           "parameters); google/gemma-2-9b config.json (intermediate 14336, vocab 256000, tied)",
           "9,241,705,984 exact = Table 2's 8,324,201,984 + 917,504,000 to the integer (four RMSNorms per layer "
           "counted); the name rounds down by 2.6%.", 0.03, "gemma"),
    Preset("gemma2-27b", _gemma2(4608, 46, 32, 16, 128, 36864), 27_000_000_000, "27B",
           "Gemma Team 2024, Gemma 2 (arXiv 2408.00118), Tables 1-2 (d 4608, 46 layers, 32 heads, 16 KV heads, head "
           "128; 26,047,480,320 non-embedding + 1,179,648,000 embedding parameters); google/gemma-2-27b config.json",
           "27,227,128,320 exact = Table 2's two figures to the integer; the name rounds down by 0.8%.", 0.01, "gemma"),
    Preset("qwen2.5-7b", _qwen25(3584, 28, 28, 4, 18944), 7_610_000_000, "7.61B",
           "Qwen Team 2024, Qwen2.5-7B model card (7.61B parameters, 6.53B non-embedding; 28 layers, 28 Q and 4 KV "
           "heads); Qwen/Qwen2.5-7B config.json (copy: citsjtu2020/LLM-Prof sglang/Model_Config.md)",
           "7,615,616,512 exact (Q/K/V biases, untied 152064-token head); the card rounds to 7.61B.", 0.001, "qwen"),
    Preset("qwen2.5-72b", _qwen25(8192, 80, 64, 8, 29568), 72_700_000_000, "72.7B",
           "Qwen Team 2024, Qwen2.5-72B model card (72.7B parameters, 70.0B non-embedding; 80 layers, 64 Q and 8 KV "
           "heads); Qwen/Qwen2.5-72B config.json (intermediate 29568, vocab 152064)",
           "72,706,203,648 exact; the card rounds to 72.7B.", 0.001, "qwen"),
    Preset("qwen3-30b-a3b",
           _llama(2048, 48, 32, 4, 6144, 151936, 40960, eps=1e-6).replace(d_head=128, qk_norm="head", n_experts=128,
                                                                         top_k=8, d_ff_expert=768),
           30_500_000_000, "30.5B",
           "Qwen Team 2025, Qwen3-30B-A3B model card (30.5B total, 3.3B activated; 48 layers, 32 Q and 4 KV heads, 128 "
           "experts, 8 activated); Qwen/Qwen3-30B-A3B config.json (copy: citsjtu2020/LLM-Prof sglang/Model_Config.md)",
           "30,532,122,624 exact (QK-norm over d_head, every layer MoE, untied head). Active 3,353,032,704 with every "
           "embedding counted (3,041,867,776 without the input table); the card's 3.3B rounds the first.", 0.002,
           "qwen", 3_300_000_000, "3.3B", 0.02),
    # issue 37: presets people ask for, sized from the published config.json (a copy in
    # tests/solver/counting/configs/corpus/, its source in that folder's SOURCES.md)
    Preset("qwen3-8b", _llama(4096, 36, 32, 8, 12288, 151936, 40960, eps=1e-6).replace(d_head=128, qk_norm="head"),
           8_200_000_000, "8.2B",
           "Qwen Team 2025, Qwen3-8B model card (8.2B parameters, 6.95B non-embedding; 36 layers, 32 Q and 8 KV "
           "heads); Qwen/Qwen3-8B config.json (copy: citsjtu2020/LLM-Prof sglang/Model_Config.md @ 8434c8d)",
           "8,190,735,360 exact (QK-norm over d_head, untied head); 6,946,075,648 non-embedding, the card's 6.95B.",
           0.002, "qwen"),
    Preset("qwen3-32b", _llama(5120, 64, 64, 8, 25600, 151936, 40960, eps=1e-6).replace(d_head=128, qk_norm="head"),
           32_800_000_000, "32.8B",
           "Qwen Team 2025, Qwen3-32B model card (32.8B parameters, 31.2B non-embedding; 64 layers, 64 Q and 8 KV "
           "heads); Qwen/Qwen3-32B config.json (copy: citsjtu2020/LLM-Prof sglang/Model_Config.md @ 8434c8d)",
           "32,762,123,264 exact; 31,206,298,624 non-embedding, the card's 31.2B.", 0.002, "qwen"),
    Preset("kimi-k2", _deepseek(7168, 61, 18432, 163840, experts=384, top_k=8, shared=1, d_fe=2048, dense=1)
           .replace(n_heads=64, max_positions=131072),
           1_000_000_000_000, "1000B",
           "Moonshot AI 2025, Kimi-K2-Instruct model card (1T total, 32B activated; 61 layers, 64 attention heads, "
           "384 experts, 8 per token, 1 shared, first layer dense; MLA as DeepSeek-V3's); "
           "moonshotai/Kimi-K2-Instruct config.json (model_type kimi_k2, class DeepseekV3ForCausalLM; copy: "
           "Gabriel-Yoon/LLMServingSim configs/model/moonshotai/Kimi-K2-Instruct.json @ 5e8b0f2, which adds "
           "head_dim 128)",
           "1,026,408,209,408 exact (the card's 1T rounds down by 2.6%). Active 32,861,477,888 with every embedding "
           "counted; the card's 32B rounds down.", 0.03, "deepseek", 32_000_000_000, "32B", 0.03),
    Preset("gemma3-1b", _gemma3(1152, 26, 4, 1, 6912, 262144, 32768, 512), 1_000_000_000, "1B",
           "Gemma Team 2025, Gemma 3 Technical Report (arXiv 2503.19786), Table 1 (1B: no vision encoder, 302M "
           "embedding + 698M non-embedding parameters); google/gemma-3-1b-it config.json (26 layers, d 1152, 4 heads, "
           "1 KV head, head 256, intermediate 6912, vocab 262144, window 512, sliding_window_pattern 6; copy: "
           "mlc-ai/mlc-llm python/mlc_llm/model/model_preset.py @ 79d603f, see tests/solver/counting/configs/corpus/"
           "SOURCES.md)",
           "999,885,952 exact = 301,989,888 embedding (the report's 302M) + 697,896,064 non-embedding (its 698M).",
           0.001, "gemma"),
    Preset("gemma3-4b", _gemma3(2560, 34, 8, 4, 10240, 262208, 131072, 1024), 3_884_000_000, "3,884M",
           "Gemma Team 2025, Gemma 3 Technical Report (arXiv 2503.19786), Table 1 (4B: 417M vision encoder, 675M "
           "embedding, 3,209M non-embedding parameters); google/gemma-3-4b-it config.json (text_config: 34 layers, "
           "d 2560, intermediate 10240, window 1024; heads 8, KV heads 4, head 256 and vocab 262208 are transformers' "
           "Gemma3TextConfig defaults the file leaves out; copy: sdpython/onnx-diagnostic "
           "onnx_diagnostic/torch_models/hghub/hub_data_cached_configs.py @ cc937c2)",
           "The language model only (what Gemma3ForCausalLM loads): 3,880,263,168 exact = 671,252,480 embedding + "
           "3,209,010,688 non-embedding, the report's 3,209M to the million; its 675M embedding figure is 0.6% "
           "above 262208 × 2560. The file's whole checkpoint (qkv solve params --config) adds the SigLIP tower "
           "(416,866,032, the report's 417M) and the projector (2,950,272): 4,300,079,472.", 0.002, "gemma"),
    Preset("phi3-mini", _llama(3072, 32, 32, 32, 8192, 32064, 4096).replace(sliding_window=2047), 3_800_000_000,
           "3.8B",
           "Abdin et al. 2024, Phi-3 Technical Report (arXiv 2404.14219), §2 (3.8B, 32 layers, hidden 3072, 32 heads, "
           "vocab 32064); microsoft/Phi-3-mini-4k-instruct config.json (intermediate 8192, sliding_window 2047, "
           "untied); keras-team/keras-hub phi3_presets.py lists 3,821,079,552",
           "3,821,079,552 exact, keras-hub's count to the integer; the report rounds to 3.8B. The 2047-position "
           "window caps the KV cache, not the parameters.", 0.006, "phi"),
    Preset("gpt-oss-20b", _gpt_oss(24, 32), 20_910_000_000, "20.91B",
           "OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card, Table 1 (20b: 24 layers, 32 experts, top 4; 20.91B "
           "total, 3.61B active) and §2; openai/gpt-oss-20b config.json (d 2880, 64 heads of 64, 8 KV heads, "
           "sliding window 128 on every other layer, vocab 201088, untied)",
           "20,914,757,184 exact. Active 4,187,440,704 with every embedding counted; the card's 3.61B leaves out the "
           "input table (201088 × 2880 = 579,133,440): 3,608,307,264 without it.", 0.001, "gpt-oss",
           3_610_000_000, "3.61B", 0.17),
    Preset("gpt-oss-120b", _gpt_oss(36, 128), 116_830_000_000, "116.83B",
           "OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card, Table 1 (120b: 36 layers, 128 experts, top 4; "
           "116.83B total, 5.13B active); openai/gpt-oss-120b config.json",
           "116,829,156,672 exact. Active 5,711,982,912 with every embedding counted; the card's 5.13B leaves out "
           "the input table: 5,132,849,472 without it.", 0.001, "gpt-oss", 5_130_000_000, "5.13B", 0.12),
    Preset("olmo2-7b",
           _llama(4096, 32, 32, 32, 11008, 100352, 4096, eps=1e-6).replace(norm_position="reordered", qk_norm="full"),
           7_000_000_000, "7B",
           "OLMo et al. 2024, 2 OLMo 2 Furious (arXiv 2501.00656), Table 1 (7B: 32 layers, d 4096, 32 heads, "
           "reordered norm and QK-norm); allenai/OLMo-2-1124-7B config.json (intermediate 11008, vocab 100352, untied)",
           "7,298,617,344 exact (RMSNorm on each sub-layer's output, QK-norm over all heads); the name rounds down "
           "by 4%.", 0.05, "olmo"),
    Preset("pythia-1.4b",
           ModelConfig(arch="decoder", d_model=2048, n_layers=24, n_heads=16, d_ff=8192, ffn="gelu", norm="layernorm",
                       norm_position="pre", final_norm=True, bias=True, vocab_size=50304, max_positions=2048,
                       pos="rope", tied_embeddings=False, lm_head=True, parallel_block=2, rotary_dim=32),
           1_414_647_808, "1,414,647,808",
           "Biderman et al. 2023, Pythia (arXiv 2304.01373), Table 1 (1.4B: 24 layers, d 2048, 16 heads; 1,414,647,808 "
           "parameters); EleutherAI/pythia-1.4b config.json (vocab 50304, rotary_pct 0.25, parallel residual, untied)",
           "1,414,647,808 exact, the paper's figure to the integer: GPT-NeoX's attention and FFN in parallel from two "
           "LayerNorms, biases everywhere, an untied head.", 0.0, "pythia"),
    # ---- models built in the seeds -------------------------------------------------------------
    Preset("seed000-encoder",
           ModelConfig(arch="encoder", d_model=128, n_layers=2, n_heads=4, d_ff=512, ffn="gelu", norm_position="pre",
                       final_norm=True, bias=True, vocab_size=5000, max_positions=512, pos="sinusoidal",
                       lm_head=False, tied_embeddings=False),
           None, "", f"{_SEED000}, TransformerEncoder (vocab 5000, d 128, 4 heads, 2 layers)",
           "nn.MultiheadAttention has Q/K/V/O biases; the sinusoidal table is a buffer; padding_idx does not "
           "change the count. The seed prints the count without stating it.", None, "seed"),
    Preset("seed000-minigpt",
           ModelConfig(arch="decoder", d_model=64, n_layers=2, n_heads=4, d_ff=512, ffn="gelu", norm_position="pre",
                       final_norm=True, bias=True, vocab_size=1000, max_positions=256, pos="learned",
                       tied_embeddings=True, lm_head=True),
           None, "", f"{_SEED000}, MiniGPT(vocab_size=1000, d_model=64, n_heads=4, n_layers=2)",
           "Learned positions (max_seq 256), nn.MultiheadAttention with biases, tied bias-free LM head "
           "(parameters() yields the shared weight once). The seed prints the count without stating it.",
           None, "seed"),
    Preset("seed000-bert-classifier",
           ModelConfig(arch="encoder", d_model=64, n_layers=2, n_heads=4, d_ff=256, ffn="gelu", norm_position="pre",
                       final_norm=True, bias=True, vocab_size=501, max_positions=33, pos="learned",
                       lm_head=False, tied_embeddings=False, pooler=True, n_classes=4, cls_token=True),
           None, "", f"{_SEED000}, BERTClassifier (Razorpay disputes)",
           "vocab_size + 1 = 501 tokens, a 33-row position table, a learned [CLS] vector; the classifier "
           "Linear(64, 64) + GELU + Linear(64, 4) is modelled as pooler + classifier (the activation has no "
           "parameters).", None, "seed"),
    Preset("seed001-mini-encoder", _seed001_encoder(1000, 128, 8, 512, 4), None, "",
           f"{_SEED001}, §7 Mini Transformer Encoder", "Bias-free attention projections (the seed's "
           "MultiHeadAttention), FFN and LayerNorm biases, final LayerNorm.", None, "seed"),
    Preset("seed001-bert-tiny", _seed001_encoder(30522, 128, 2, 512, 2), None, "",
           f"{_SEED001}, §8 configs['BERT-Tiny']", "The seed's simplified encoder at BERT-Tiny's sizes.", None,
           "seed"),
    Preset("seed001-bert-small", _seed001_encoder(30522, 512, 8, 2048, 4), None, "",
           f"{_SEED001}, §8 configs['BERT-Small']", "The seed's simplified encoder at BERT-Small's sizes.", None,
           "seed"),
    Preset("seed001-bert-base", _seed001_encoder(30522, 768, 12, 3072, 12), 110_000_000, "~110M",
           f"{_SEED001}, §8 (\"BERT-Base has ~110M params\")",
           "108,460,032 exact for the seed's simplified encoder: it lacks attention biases (−36,864), the "
           "learned position and segment tables (−394,752), the embedding LayerNorm and the pooler, and has "
           "a final LayerNorm; 1.4% below BERT's 110M, as the seed says (\"slightly fewer\").", 0.015, "seed"),
    Preset("seed001-bert-large", _seed001_encoder(30522, 1024, 16, 4096, 24), None, "",
           f"{_SEED001}, §8 configs['BERT-Large']", "The seed's simplified encoder at BERT-Large's sizes.", None,
           "seed"),
    Preset("seed004-minigpt",
           ModelConfig(arch="decoder", d_model=128, n_layers=4, n_heads=4, d_ff=512, ffn="relu", norm_position="pre",
                       final_norm=True, bias=True, attn_bias=False, attn_out_bias=True, vocab_size=65,
                       max_positions=64, pos="learned", tied_embeddings=False, lm_head=True, lm_head_bias=True),
           411_073, "411,073", f"{_SEED004}, §14 Mini-GPT (character-level), printed output",
           "The seed's printed 411,073 (blocks 386,048) is wrong for its own code: each block holds bias-free "
           "K/Q/V heads (3·128·128), a projection with bias (128·128 + 128), a ReLU FFN with biases "
           "(131,712) and two LayerNorms (512) = 197,888, so 4 blocks = 791,552 and the model 816,705.",
           None, "seed"),
]

PRESETS: dict[str, Preset] = {p.name: p for p in _LIST}

ALIASES = {"gpt2-small": "gpt2", "gpt-2": "gpt2", "bert": "bert-base", "llama-2-7b": "llama2-7b",
           "llama-2-13b": "llama2-13b", "llama-2-70b": "llama2-70b", "llama-3-8b": "llama3-8b",
           "gpt3": "gpt3-175b", "gpt-3": "gpt3-175b", "transformer": "transformer-base",
           # issue 20
           "llama-3-70b": "llama3-70b", "llama-3.1-405b": "llama3.1-405b", "gemma-2-9b": "gemma2-9b",
           "gemma-2-27b": "gemma2-27b", "qwen-2.5-7b": "qwen2.5-7b", "qwen-2.5-72b": "qwen2.5-72b",
           "phi-3-mini": "phi3-mini", "olmo-2-7b": "olmo2-7b", "gpt-oss-20": "gpt-oss-20b",
           # issue 37
           "qwen-3-8b": "qwen3-8b", "qwen-3-32b": "qwen3-32b", "kimi-k2-instruct": "kimi-k2",
           "gemma-3-1b": "gemma3-1b", "gemma-3-4b": "gemma3-4b",
           # DeepSeek-R1 is DeepSeek-V3's architecture and sizes (post-trained from DeepSeek-V3-Base; the answer
           # names deepseek-v3)
           "deepseek-r1": "deepseek-v3"}


def preset_names() -> list[str]:
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name`` (case-insensitive, ``_`` = ``-``, a few aliases)."""
    key = name.strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key in PRESETS:
        return PRESETS[key]
    import difflib

    # issue 37: the presets whose name starts with (or holds) what was asked come first: --preset qwen3
    # suggests qwen3-8b, qwen3-32b, qwen3-30b-a3b
    close = [n for n in PRESETS if n.startswith(key)] or [n for n in PRESETS if key and key in n]
    close = (close + [n for n in difflib.get_close_matches(key, PRESETS, n=3) if n not in close])[:4]
    hint = f"; did you mean {', '.join(close)}?" if close else f"; `qkv models list` shows all {len(PRESETS)}"
    raise SolverInputError(f"unknown preset {name!r}{hint}", param="preset")


def get_config(name: str) -> ModelConfig:
    """The ModelConfig of a preset, with ``name`` set."""
    p = get_preset(name)
    return p.config.replace(name=p.name)
