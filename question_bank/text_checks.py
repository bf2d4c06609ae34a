"""Worked figures of public texts (not seed files) recomputed by qkv's registry: each printed
figure with the ``qkv calc`` expression that recomputes it, the figures it is printed to, and,
where qkv disagrees beyond that rounding, why (a ``rounding:`` note, or an error or a
convention, explained). :func:`errata_rows` adds the disagreements to ``qkv bank errata``,
beside the seed texts' errata, in the same shape.

A figure agrees when the exact value rounded half up to the printed significant figures is the
printed value. The texts are read at the versions named in ``TEXTS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

#: text key -> (title and version read, its address)
TEXTS = {
    "hsm": ("Austin et al., How to Scale Your Model (2025), as in github.com/jax-ml/scaling-book at 0819a7d "
            "(Parts 3, 5, 7) and at 1a55377 (Part 12, gpus.md)", "https://jax-ml.github.io/scaling-book/"),
    "kipply": ("kipply, Transformer Inference Arithmetic (2022-03-30), as in github.com/kipply/blog at 09819d4 "
               "(blog/content/endorsed/transformer_inference_arithmetic.md)",
               "https://kipp.ly/transformer-inference-arithmetic/"),
    "tm101": ("Anthony, Biderman & Schoelkopf, Transformer Math 101 (EleutherAI blog, 2023-04-18): the compute "
              "section as stored from blog.eleuther.ai/transformer-math/, the memory sections through two full "
              "translations of the post (the blog's own source was not reachable)",
              "https://blog.eleuther.ai/transformer-math/"),
}

V5P = "peak=4.59e14 FLOP/s, link=9e10 B/s"  # Part 5: "C=4.6e14 and W=2 * 9e10" (one ICI link, 9e10 each way)
V5E = "peak=1.97e14 FLOP/s, bandwidth=8.2e11 B/s"  # Part 7: "1.97E+14 / 8.20E+11"
#: Part 7's pop quiz: 16 v5e chips (a 4x4 slice), 8.1e11 B/s and 1.97e14 FLOP/s each; int8 weights, 100 kB a token
V5E_16 = "context=8192, kv_per_token=100e3 B, chips=16, peak=1.97e14 FLOP/s, bandwidth=8.1e11 B/s, weight_dtype=int8"
#: Part 7's LLaMA 2-13B tables: 8 v5e (6.56e12 B/s together), 13e9 bf16 params, 2·2·128·40·40 B a token (or a 5th)
L13 = "context=8192, kv_per_token=819200 B, chips=8, peak=1.97e14 FLOP/s, bandwidth=8.2e11 B/s"
L13_GQA = L13.replace("819200", "163840")
H100 = "peak=990e12 FLOP/s, ring=unidirectional"
#: kipply's A100: "312e12 flops per second and 1.5e12 bytes per second of memory bandwidth", comms 300 GB/s one way
A100K = "peak=312e12 FLOP/s, bandwidth=1.5e12 B/s"
#: kipply's 52B model (Anthropic's: d_model 8,192, 64 layers) on 40 GB A100s: 104e9 bytes of weights, a token's cache
#: 2·2·n_layers·n_heads·d_head = 4·64·8192 bytes
K52 = "104e9 B, 2 * 2 * 64 * 8192 B, hbm=40e9 B"  # Part 12: "990e12", W the GPU's or node's egress, one way


@dataclass(frozen=True)
class TextCheck:
    id: str  # "hsm.p5.dp-2550"
    where: str  # "hsm_training.md §Data Parallelism"
    printed: str  # the text as printed
    value: float  # the printed figure, in the unit of ``expr``
    figures: int  # significant figures printed
    expr: str  # a qkv calc expression for the exact figure
    reason: str = ""  # why qkv disagrees ("" when it agrees)

    def exact(self) -> float:
        from solver.registry.calc import Evaluator

        ev = Evaluator()
        return float(ev.quantity(ev.run(self.expr)).magnitude)

    def agrees(self) -> bool:
        return _round_sig(self.exact(), self.figures) == _round_sig(self.value, self.figures)

    @property
    def kind(self) -> str:
        return "rounding" if self.reason.startswith("rounding:") else "error"


def _round_sig(x: float, sig: int) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    d = Decimal(repr(float(x)))
    q = Decimal(1).scaleb(d.adjusted() - sig + 1)
    return float(d.quantize(q, rounding=ROUND_HALF_UP))


CHECKS: tuple[TextCheck, ...] = (
    # ---- Part 5, training.md
    TextCheck("hsm.p5.dp-2550", "hsm_training.md §Data Parallelism",
              "our batch size per chip must be at least 2,550", 2550, 4, f"dp_batch({V5P})"),
    TextCheck("hsm.p5.dp-850-pod", "hsm_training.md §Data Parallelism",
              "BS=850 per TPU or 7.6M tokens per batch per pod (of 8960 chips)", 7.6e6, 2,
              f"dp_batch({V5P}, axes=3, chips=8960).global_batch"),
    TextCheck("hsm.p5.llama-chips", "hsm_training.md §Fully-Sharded Data Parallelism",
              "16e6 / (2550 / 3) = 18,823 chips", 18823, 5, f"dp_batch({V5P}, axes=3, batch=16e6).max_chips",
              "rounding: 18,823.5 truncated (half up: 18,824); the text's next figure, 'roughly 2 pods', is unaffected"),
    TextCheck("hsm.p5.llama-17-days", "hsm_training.md §Fully-Sharded Data Parallelism",
              "train it in approximately 17 days", 17, 2,
              "train(params=70e9, tokens=15e12, chips=18823, peak=4.59e14 FLOP/s, mfu=0.5).time / (1 day)"),
    TextCheck("hsm.p5.tp-20k", "hsm_training.md §Tensor Parallelism",
              "The required F for 8 way model sharding is 20k", 20000, 2,
              f"8 * tp_max(1, {V5P}).f_needed_per_way"),
    TextCheck("hsm.p5.tp-gemma-19", "hsm_training.md §Tensor Parallelism",
              "For Gemma 7B, F ≈ 50k, so we become communication bound with 19-way model parallelism", 19, 2,
              f"tp_max(50000, {V5P}).whole"),
    TextCheck("hsm.p5.x-opt", "hsm_training.md §Mixed FSDP and Tensor Parallelism",
              "N = 64, B=48,000, F=32,768, gives roughly X ≈ 13.9", 13.9, 3, "fsdp_opt(48000, 32768, 64)",
              "convention: √(48,000/32,768 · 2 · 64) = 13.69 with M_X/M_Y = 2 (2 FSDP axes of a 3D mesh, as the text "
              "uses beside it); 13.9 follows from F taken as 32,000 (13.86); the choice of X = 16, Y = 4 stands"),
    TextCheck("hsm.p5.fsdp-tp-400", "hsm_training.md §Mixed FSDP and Tensor Parallelism",
              "plug in F=32,768, α=2550, and M_X M_Y=2 ... This gives roughly B/N > 400", 400, 1,
              f"fsdp_tp_batch(32768, {V5P})"),
    TextCheck("hsm.p5.fig-1.6e10", "hsm_training.md §Mixed FSDP and Tensor Parallelism, figure caption",
              "below batch size 1.5e6, which is in line with our expected 4096 * 2 * 2550^2 / (8192 * 4) = 1.6e10",
              1.6e10, 2, f"4096 * fsdp_tp_batch(32768, {V5P})",
              "error: 4096 · 2 · 2550² / (8192 · 4) = 1,625,625 ≈ 1.6e6, as the sentence's own 1.5e6 says; 1.6e10 is "
              "a slip of the exponent (repeated in the next paragraph)"),
    TextCheck("hsm.p5.q1-params", "hsm_training.md §Some Problems to Work, Question 1",
              "Total: 8.5e9 + 4.2e9 + 0.39e9 = 13.1e9", 13.1e9, 3, "params(llama2-13b)",
              "error: the vocabulary term is 2·V·D = 2 · 32,000 · 5,120 = 0.33e9 (the answer prints 0.3e9 on its own "
              "line, then adds 0.39e9); every parameter counted (norms included) LLaMA-2 13B has 13,015,864,320"),
    TextCheck("hsm.p5.q2-states", "hsm_training.md §Some Problems to Work, Question 2",
              "(2 + 4 + 4) * 13e9 ~ 130GB", 130e9, 2, "train_memory(13e9, recipe=bf16_adam)"),
    TextCheck("hsm.p5.q3-hbm", "hsm_training.md §Some Problems to Work, Question 3",
              "On a TPU v5p 16x16x16 slice, we have 393TB of HBM", 393e12, 3, "pod(4096, chip=tpu-v5p).hbm",
              "convention: the text takes 96 GB (10⁹ bytes) per chip, 4,096 × 96 GB = 393 TB; the tpu-v5p preset "
              "stores Google's printed 95 GiB (2³⁰ bytes), 4,096 × 95 GiB = 417.8 TB (pod(4096, hbm=96 GB) gives "
              "the text's figure)"),
    TextCheck("hsm.p5.q3-3.48M", "hsm_training.md §Some Problems to Work, Question 3",
              "we can do a minimum batch size of 850 * 4096 = 3.48M tokens", 3.48e6, 3,
              f"dp_batch({V5P}, axes=3, chips=4096).global_batch"),
    TextCheck("hsm.p5.q3-940", "hsm_training.md §Some Problems to Work, Question 3",
              "2 · 2550² / F = 940", 940, 3, f"fsdp_tp_batch(13824, {V5P})",
              "rounding: 940.76 truncated (half up: 941); F = 2.7 · 5,120 = 13,824"),
    # ---- Part 1, roofline.md
    TextCheck("hsm.p1.q1-243", "hsm_roofline.md §Worked Problems, Question 1",
              "this int8 intensity is 3.94e14 / 8.1e11 = 486, so the rule is B > 486 / 2 = 243", 243, 3,
              "decode_batch(peak=3.94e14 FLOP/s, bandwidth=8.1e11 B/s, weight_dtype=int8, dtype=int8)"),
    TextCheck("hsm.p1.q2-120", "hsm_roofline.md §Worked Problems, Question 2",
              "we become compute-bound when 2B > 240 or B > 120", 120, 3, f"decode_batch({V5E}, weight_dtype=int8)"),
    TextCheck("hsm.p1.q5-298", "hsm_roofline.md §Worked Problems, Problem 5",
              "The true value is half this without sparsity, meaning close to 1e15 FLOPs/s ... B_crit is "
              "1e15 / 3.35e12 = 298", 298, 3, "decode_batch(chip=h100)",
              "rounding: the text rounds the dense 989.5 TFLOP/s up to 1e15 before dividing (989.5e12 / 3.35e12 = "
              "295.4)"),
    # ---- Part 2, tpus.md: point-to-point transfers (v5e: ICI 4.5e10 B/s one way per link, PCIe 1.5e10 per chip)
    TextCheck("hsm.p2.q5-194us", "hsm_tpus.md §Worked Problems, Question 5",
              "2 * 8 * 128 * 8192 = 1.7e7 bytes ... 1.7e7 / 9e10 = 188us ... the total transfer will take 188 + 6 = "
              "194us", 194e-6, 3, "transfer(2 * 8 * 128 * 8192 B, link=2 * 4.5e10 B/s, latency=6 us)",
              "rounding: the text rounds 16,777,216 bytes up to 1.7e7 before dividing (186.4 µs + 6 µs = 192.4 µs)"),
    TextCheck("hsm.p2.q6-pcie", "hsm_tpus.md §Worked Problems, Question 6",
              "we're loading chunks of 16GB / 2 = 8GB over 8 PCIe links, each of which has 1.5e10 bytes/second "
              "bandwidth. Thus this will take about 66ms", 66e-3, 2, "transfer(8e9 B, link=8 * 1.5e10 B/s)",
              "rounding: 66.7 ms truncated (half up: 67 ms)"),
    TextCheck("hsm.p2.q6-ici", "hsm_tpus.md §Worked Problems, Question 6",
              "we can lower bound the time by 15e9 / (4.5e10 * 2) = 167ms", 167e-3, 3,
              "transfer(15e9 B, link=2 * 4.5e10 B/s)"),
    TextCheck("hsm.p2.q6-hbm", "hsm_tpus.md §Worked Problems, Question 6",
              "we need to load these 16e9 bytes ... which will take 16e9 / 8.1e11 = 19ms", 19e-3, 2,
              "transfer(128 * 1024 * 128 * 1024 B, link=8.1e11 B/s)",
              "convention: int8[128·1024, 128·1024] is 2³⁴ = 17,179,869,184 bytes (16 GiB), taken as 16e9: 21.2 ms "
              "(16e9 / 8.1e11 = 19.75 ms, itself truncated to 19)"),
    # ---- Part 3, sharding.md
    TextCheck("hsm.p3.q2-23us", "hsm_sharding.md §Some Problems to Work, Question 2",
              "2BD / (9e10 · Y) = 2 · 1024 · 4096 / (9e10 · 4) = 23 µs", 23e-6, 2,
              "sharded_matmul(1024, 1024, 1, case=one, link=4.5e10 B/s).time"),
    TextCheck("hsm.p3.q2-46us", "hsm_sharding.md §Some Problems to Work, Question 2",
              "T = 2BD / (2 * W) = 2*1024*4096 / (2 * 9e10) = 46us", 46e-6, 2,
              "sharded_matmul(1024, 4096, 1, case=one, link=4.5e10 B/s, axes=2).time",
              "rounding: 46.6 µs truncated (half up: 47 µs)"),
    TextCheck("hsm.p3.q2-allreduce", "hsm_sharding.md §Some Problems to Work, Question 2",
              "AllReduce_Z([B_X, D_Y] {U_Z}): about 4BD / W, or roughly 4 * 1024 * 4096 / 9e10 = 190us", 190e-6, 2,
              "sharded_matmul(256, 1, 1024, case=both, link=4.5e10 B/s).time",
              "error: each chip all-reduces its own [B/X, D/Y] shard over Z, 2BD/16 bytes, so 4BD/(16·W) = 11.6 µs; "
              "the answer drops the X and Y sharding it kept in the two parts before (and 4BD/W itself is 186 µs)"),
    # ---- Part 7, inference.md
    TextCheck("hsm.p7.bcrit-240", "hsm_inference.md §Linear operations: what bottlenecks us?",
              "1.97E+14 / 8.20E+11 = 240 ... B ≥ 240 = B_crit", 240, 3, f"decode_batch({V5E})"),
    TextCheck("hsm.p7.bcrit-int8-120", "hsm_inference.md §Linear operations: what bottlenecks us?",
              "if we have int8 parameters but do our computation in bf16, the critical batch size drops to 120", 120, 3,
              f"decode_batch({V5E}, weight_dtype=int8)"),
    TextCheck("hsm.p7.tp-decode-64", "hsm_inference.md §Generation",
              "if F is 16,384 and B is 32, we can in theory do model parallelism up to 16384 / (32 * 8) = 64 ways",
              64, 2, "tp_decode_max(16384, 32, bandwidth=8e11 B/s, link=5e10 B/s)"),
    TextCheck("hsm.p7.quiz-2.5ms", "hsm_inference.md §Theoretical estimates for LLM latency and throughput",
              "our step time to be at least (4 * 819e6 + 30e9) / (16 * 8.1e11) = 2.5 ms", 2.5e-3, 2,
              f"decode_latency(30e9, 4, {V5E_16})",
              "rounding: 33.28e9 / 1.296e13 = 2.57 ms, truncated (half up: 2.6 ms)"),
    TextCheck("hsm.p7.quiz-21ms", "hsm_inference.md §Theoretical estimates for LLM latency and throughput",
              "(256 * 819e6) / (16 * 8.1e11) + (2 * 256 * 30e9) / (16 * 1.97e14) = 21ms", 21e-3, 2,
              f"decode_latency(30e9, 256, {V5E_16}, step=kv_plus_max)"),
    TextCheck("hsm.p7.quiz-21ms-max", "hsm_inference.md §Theoretical estimates for LLM latency and throughput",
              "At 256 tokens ... we have a step time of roughly ... = 21ms", 21e-3, 2,
              f"decode_latency(30e9, 256, {V5E_16})",
              "convention: the text adds the cache read to max(weight read, FLOPs) (kv-plus-max, 21.05 ms); one "
              "roofline for the whole step, max(all bytes, FLOPs), gives 18.5 ms, as the bytes (239.7e9) outlast the "
              "FLOPs (4.9 ms)"),
    TextCheck("hsm.p7.13b-4.98ms", "hsm_inference.md §Modeling throughput and latency for LLaMA 2-13B",
              "Batch Size 1 ... Theoretical Step Time (ms) 4.98", 4.98e-3, 3, f"decode_latency(13e9, 1, {L13})",
              "rounding: the table takes the cache of one sequence as 6.7 GB (it is 6.71e9 bytes) and truncates "
              "32.7e9 / 6.56e12 = 4.985 ms; exact: 4.986 ms"),
    TextCheck("hsm.p7.13b-963", "hsm_inference.md §Modeling throughput and latency for LLaMA 2-13B",
              "Batch Size 240 ... Theoretical Throughput (tokens/s) 963.53", 963.53, 5,
              f"decode_latency(13e9, 240, {L13}).throughput",
              "rounding: the table's 6.7 GB a sequence (for 6.71e9 bytes) makes the 240 caches 1,608 GB, not 1,610.6 GB; "
              "exact: 961.99 tokens/s"),
    TextCheck("hsm.p7.13b-gqa-4.17ms", "hsm_inference.md §Modeling throughput and latency for LLaMA 2-13B",
              "a 5x smaller KV cache ... Batch Size 1 ... Theoretical Step Time (ms) 4.17", 4.17e-3, 3,
              f"decode_latency(13e9, 1, {L13_GQA})"),
    TextCheck("hsm.p7.13b-gqa-4529", "hsm_inference.md §Modeling throughput and latency for LLaMA 2-13B",
              "a 5x smaller KV cache ... Batch Size 240 ... Theoretical Throughput (tokens/s) 4,529.34", 4529.34, 6,
              f"decode_latency(13e9, 240, {L13_GQA}).throughput",
              "rounding: 1.34 GB a sequence (for 1.342e9 bytes), so 321.6 GB of caches at 240, not 322.1 GB; exact: "
              "4,522.55 tokens/s"),
    TextCheck("hsm.p7.q7-11.3", "hsm_inference.md §Worked Problems, Question 7",
              "T_2D comms = √128 · BD / (√N · W_ici) ≈ 11.3 BD / (√N · W_ici)", 11.3, 3,
              "weight_stationary(1, 1, 4, 64, link=0.5 B/s).time_2d_opt * sqrt(64) / (1 s)"),
    TextCheck("hsm.p7.q7-81", "hsm_inference.md §Worked Problems, Question 7",
              "T_model parallel comms > T_2D comms ⟺ N > 128 · (3/4)² = 81", 81, 2,
              "weight_stationary(1, 1024, 4096, 64).crossover_chips",
              "error: 128 · (3/4)² = 128 · 9/16 = 72 (81 is 144 · 9/16); the text's own general form, N > 32·(F/D)·"
              "(3/4)², also gives 72 at F = 4D"),
    # ---- Part 12, gpus.md: W_collective is one GPU's (or one node's share of) egress, one way
    TextCheck("hsm.p12.dp-2200", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "Within a node, we just need the per-GPU token batch size > 990e12 / 450e9 = 2200", 2200, 4,
              f"dp_batch({H100}, link=450e9 B/s)"),
    TextCheck("hsm.p12.dp-2475", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "Within an SU or at the spine level, BS > 990e12 / 400e9 = 2475", 2475, 4,
              f"dp_batch({H100}, link=400e9 B/s)"),
    TextCheck("hsm.p12.llama3-40M", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "LLaMA-3, which trained on 16000 H100s would need a batch size of at least 40M tokens", 40e6, 2,
              f"dp_batch({H100}, link=400e9 B/s, chips=16000).global_batch"),
    TextCheck("hsm.p12.deepseek-6.7M", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "990e12 / 300e9 = 3300 tokens per GPU, or about 6.7M", 6.7e6, 2,
              f"dp_batch({H100}, link=300e9 B/s, chips=2048).global_batch",
              "rounding: 2,048 × 3,300 = 6,758,400, truncated (half up: 6.8M)"),
    TextCheck("hsm.p12.moe-79200", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "with k=4 and E=128, this increases to 32 * 2475 = 79,200 across nodes", 79200, 5,
              f"dp_batch({H100}, link=400e9 B/s, experts=128, top_k=4)"),
    TextCheck("hsm.p12.two-node-1237", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Data Parallelism",
              "for a dense model we have B / N > α · (X − 1) / X, or e.g. B / N > 1237", 1237, 4,
              f"dp_batch({H100}, link=400e9 B/s, ring_ranks=2)", "rounding: 1,237.5 truncated (half up: 1,238)"),
    TextCheck("hsm.p12.tp-11", "hsm_gpus.md §Rooflines for LLM Scaling on GPUs, Tensor Parallelism",
              "For F=28000 like LLaMA-3, this is about 11-way TP", 11, 2,
              f"tp_max(28000, {H100}, link=400e9 B/s).whole"),
    TextCheck("hsm.p12.q1-2500", "hsm_gpus.md §Quiz 5, Question 1",
              "the critical intensity goes up to 2250e12 / 900e9 = 2500", 2500, 4,
              "dp_batch(peak=2250e12 FLOP/s, link=900e9 B/s, ring=unidirectional)"),
    TextCheck("hsm.p12.q1-5625", "hsm_gpus.md §Quiz 5, Question 1",
              "our critical batch size increases to 2250e12 / 400e9 = 5625", 5625, 4,
              "dp_batch(peak=2250e12 FLOP/s, link=400e9 B/s, ring=unidirectional)"),
    TextCheck("hsm.p12.q2-700GB", "hsm_gpus.md §Quiz 5, Question 2",
              "We need 2 bytes for the weights and 8 for the optimizer state, so at least 700GB", 700e9, 3,
              "train_memory(70e9, recipe=bf16_adam)"),
    TextCheck("hsm.p12.q2-40-days", "hsm_gpus.md §Quiz 5, Question 2",
              "at 45% MFU ... the whole thing will take 3.5e6 seconds, or 40 days", 40, 2,
              "train(params=70e9, tokens=15e12, chips=4096, peak=990e12 FLOP/s, mfu=0.45).time / (1 day)"),
    TextCheck("hsm.p12.q2-tp-14", "hsm_gpus.md §Quiz 5, Question 2",
              "Within a node, we have 450GB/s of bandwidth, so the limit is roughly F / 1995 = 28672 / 1995 = 14.372",
              14.372, 5, f"tp_max(28672, {H100}, link=450e9 B/s)",
              "error: C/W inside an H100 node is 990e12 / 450e9 = 2,200 (as the section says), so Y < 28,672/2,200 = "
              "13.03; 1995 matches no stated figure. The conclusion (8-way, one node) stands"),
    TextCheck("hsm.p12.q2-309", "hsm_gpus.md §Quiz 5, Question 2",
              "8-way pipelining ... goes from 400GB/s to 8 * 400GB/s = 3200GB/s. The roofline then is 990e12 / 3200e9 "
              "= 309", 309, 3, f"dp_batch({H100}, link=3200e9 B/s)"),
    TextCheck("hsm.p12.q3-2472", "hsm_gpus.md §Quiz 5, Question 3",
              "We had calculated that bound to be 2,472 tokens / GPU based on the spine level reduction", 2472, 4,
              f"dp_batch({H100}, link=400e9 B/s)",
              "convention: the section computed 990e12 / 400e9 = 2,475; 2,472 follows from the datasheet's 989 TFLOP/s "
              "(989e12 / 400e9 = 2,472.5, truncated)"),
    TextCheck("hsm.p12.h100-1024", "hsm_gpus.md §What Is a GPU?",
              "990 bf16 TFLOPs/s with 132 SM running at 1.76GHz means each H100 TC can do 7.5e12 / 1.76e9 / 4 ~ 1024 "
              "bf16 FLOPs/cycle", 1024, 4, "1 / gpu_peak(132, 1, clock=1.76 GHz, chip=h100).vs_datasheet",
              "convention: at 1.76 GHz the datasheet's 989.5 TFLOP/s needs 1,065 FLOPs/cycle per tensor core; 1,024 "
              "(a power of two, 8×8×8 multiply-adds) gives it at 1.83 GHz (gpu_peak(132, 1024, chip=h100)"
              ".clock_for_datasheet), so the text's 1.76 GHz is not the clock of the datasheet peak"),
    TextCheck("hsm.p12.node-3.6TB", "hsm_gpus.md §Quiz 2: GPU nodes, Question 1",
              "each GPU can only handle 450GB/s ... we have at most 450e9 * 8 = 3.6TB/s bandwidth", 3.6e12, 2,
              "node(hgx_h100).nvlink_total"),
    TextCheck("hsm.p12.node-6.4TB", "hsm_gpus.md §Quiz 2: GPU nodes, Question 1",
              "Gen4 4xNVSwitches, each with 64 * 25e9=1.6TB/s ... 4 * 1.6e12=6.4e12 bandwidth at the switch level",
              6.4e12, 2, "node(hgx_h100).switch_total"),
    TextCheck("hsm.p12.node-ag-1.04ms", "hsm_gpus.md §Quiz 2: GPU nodes, Question 3",
              "B=4096 * 65536 * 2=512MB, so the total time is 536e6 * (8 - 1) / 3.6e12 = 1.04ms", 1.04e-3, 3,
              "all_gather(4096 * 65536 * 2 B, ranks=8, link=node(hgx_h100).nvlink, ring=unidirectional)"),
    TextCheck("hsm.p12.nvl72-egress", "hsm_gpus.md §Beyond the node level, GB200 NVL72s",
              "we have 4 * 18 * 400 / 8 = 3.6TB/s of bandwidth to the leaf level", 3.6e12, 2, "node(nvl72).egress"),
    TextCheck("hsm.p12.regs-8-warps", "hsm_gpus.md §Memory",
              "you can only fit 8 (256 * 1024 / (4 * 32 * 256)) at a time if each thread uses 256 registers", 8, 1,
              "warps_resident(256)"),
    TextCheck("hsm.p12.b200-2048", "hsm_gpus.md §What Is a GPU?",
              "2250e12 / (148 * 4 * 1.86e9) is about 2048", 2048, 4,
              "1 / gpu_peak(148, 1, clock=1.86 GHz, chip=b200).vs_datasheet",
              "rounding: 2,043.3, read as the nearest power of two"),
)

#: kipply's worked figures (kipp.ly, 2022), each through the registry; sections as the post names them
CHECKS += (
    TextCheck("kipply.kv-flops", "kip_inference_arithmetic.md §kv cache",
              "2 · 2 · 64 · 8192² = 17,179,869,184 (the flops to compute k and v for all layers, one token)",
              17179869184, 11, f"decode_latency(2 * 64 * 8192^2, 1, {A100K}).flops"),
    TextCheck("kipply.ratio-208", "kip_inference_arithmetic.md §kv cache",
              "we get a distinct ratio here of 208 given this hardware specification", 208, 3,
              f"decode_batch({A100K})"),
    TextCheck("kipply.52b-69ms", "kip_inference_arithmetic.md §kv cache",
              "For a 52B model full forwards pass, that's 12 · 2 · n_layers · d_model² / 1.5e12 ≈ 69 milliseconds for "
              "up to 208 tokens", 69e-3, 2, f"decode_latency(12 * 64 * 8192^2, 208, {A100K})"),
    TextCheck("kipply.52b-17ms", "kip_inference_arithmetic.md §kv cache",
              "in practice, we'd use four GPUs in parallel so it would actually be ~17 milliseconds", 17e-3, 2,
              f"decode_latency(12 * 64 * 8192^2, 208, chips=4, {A100K})"),
    TextCheck("kipply.52b-104e12", "kip_inference_arithmetic.md §capacity",
              "52e12 · 2 = 104e12 bytes ≈ 104GB", 104e12, 3, f"decode_latency(52e9, 1, {A100K}).weight_bytes",
              "error: 52B parameters are 52e9, and 52e9 · 2 = 104e9 bytes, the 104 GB the line ends with (the e12 is a "
              "slip of the exponent, twice)"),
    TextCheck("kipply.16GB", "kip_inference_arithmetic.md §capacity",
              "That leaves us 120 − 104 = 16GB left for our kv cache", 16e9, 2, f"kv_budget({K52}, chips=3)"),
    TextCheck("kipply.8000-tokens", "kip_inference_arithmetic.md §capacity",
              "16/0.002 ≈ 8000 tokens can fit into our kv cache", 8000, 1, f"kv_budget({K52}, chips=3).tokens"),
    TextCheck("kipply.batch-4", "kip_inference_arithmetic.md §capacity",
              "or that we could do up to a batch size 4 where each request has up to 2048 tokens", 4, 1,
              f"kv_budget({K52}, chips=3, context=2048).max_batch",
              "error: 4 · 2,048 · 2,097,152 B = 17.2e9 B, more than the 16e9 B left; 16e9 / (2,048 · 2,097,152) = "
              "3.7, so 3 whole sequences (the 8,000 tokens of the line before, from 0.002 GB a token, ÷ 2,048 = 3.9 "
              "was rounded up)"),
    TextCheck("kipply.23000", "kip_inference_arithmetic.md §capacity",
              "For four GPUs, we'd get 56/0.002 ≈ 23000", 23000, 2, f"kv_budget({K52}, chips=4).tokens",
              "error: 56 / 0.002 = 28,000 (exactly 56e9 / 2,097,152 = 26,702 tokens); 23,000 follows from neither"),
    TextCheck("kipply.gopher-22ms", "kip_inference_arithmetic.md §latency calculations",
              "compute = 2 · P / (N · A_bm) = 2 · 260e9 / (16 · 1.5e12) ≈ 0.0217 ≈ 22ms", 0.0217, 3,
              f"decode_latency(260e9, 1, chips=16, {A100K})"),
    TextCheck("kipply.gopher-comms-latency", "kip_inference_arithmetic.md §latency calculations",
              "comms = 2 · 4 · n_layers · 8μs = 4 · 80 · 8μs = 2560μs ≈ 3ms", 2560e-6, 3,
              "2 * 4 * 80 * transfer(1 B, link=300e9 B/s, latency=8 us)",
              "error: 2 · 4 · 80 · 8 µs = 5,120 µs; the line's next member, 4 · 80 · 8 µs = 2,560 µs, is the section's "
              "own formula (comms = 4 · n_layers · 8 µs: four messages a layer), so the leading 2 is a slip "
              "(4 * 80 * transfer(1 B, link=300e9 B/s, latency=8 us) gives the 2,560 µs)"),
    TextCheck("kipply.gopher-53ms", "kip_inference_arithmetic.md §latency calculations",
              "compute = B · 2 · P / (N · A_f) = 512 · 2 · 260e9 / (16 · 312e12) ≈ 0.053 ≈ 53ms", 0.053, 2,
              f"decode_latency(260e9, 512, chips=16, {A100K})"),
    TextCheck("kipply.gopher-62ms", "kip_inference_arithmetic.md §latency calculations",
              "for a total of 53 ms per token generated (per batch, so in the 62ms 512 tokens are generated)", 62e-3, 2,
              f"decode_latency(260e9, 512, chips=16, {A100K})",
              "error: the step is the 53 ms of the same sentence (compute-bound: 512 · 2 · 260e9 / (16 · 312e12) = "
              "53.3 ms, above the 21.7 ms weight read and the 17.9 ms of comms); 62 ms follows from no figure of the "
              "section"),
    TextCheck("kipply.gopher-comms-18ms", "kip_inference_arithmetic.md §latency calculations",
              "comms = B · 2 · 4 · n_layers · d_model / A_c = 512 · 8 · 80 · 16384 / 300e9 ≈ 18ms", 18e-3, 2,
              "transfer(512 * 8 * 80 * 16384 B, link=300e9 B/s)"),
    TextCheck("kipply.comms-1040", "kip_inference_arithmetic.md §batch sizes",
              "312e12 ÷ 300e9 = 1040, which is our flops per byte of comms for our A100s", 1040, 4,
              "dp_batch(peak=312e12 FLOP/s, link=300e9 B/s, ring=unidirectional)"),
    TextCheck("kipply.flops-103B", "kip_inference_arithmetic.md §flops counting",
              "F = 64 · 24 · 8192² = 103079215104 flops", 103079215104, 12,
              f"decode_latency(12 * 64 * 8192^2, 1, {A100K}).flops"),
)


#: Transformer Math 101's figures. The post prints rules per parameter or per token, not a worked model, so each
#: check instantiates the rule at one parameter (one token, unit sizes) or at the instance named in ``printed``.
#: Its mixed-precision model memory is 2 bytes/param, the fp32 copy (4) counted in the optimizer's 12; gradients
#: take the model's dtype (2 in fp16 mixed precision), so its mixed-precision AdamW total is qkv's 16-byte recipe.
ZERO1 = "zero(params=1, gpus=1, stage=0)"  # mixed-precision Adam: weights 2, gradients 2, optimizer 12 (ZeRO §3.1)
CHECKS += (
    TextCheck("tm101.pf-day", "tm1_transformer_math.md §Compute Requirements",
              "Scaling laws papers tend to report values in PetaFLOP-days, or 10^15 × 24 × 3600 total floating point "
              "operations", 1, 3, "train(params=1e15, tokens=24 * 3600 / 6).pf_days"),
    TextCheck("tm101.6pd", "tm1_transformer_math.md §Compute Requirements",
              "C ≈ τT = 6PD (6 FLOPs a parameter and a token)", 6, 1, "train(params=1, tokens=1).compute"),
    TextCheck("tm101.forward-2pd", "tm1_transformer_math.md §Compute Requirements",
              "C_forward ≈ 2PD", 2, 1, "prefill(params=1, tokens=1, peak=1 FLOP/s).flops"),
    TextCheck("tm101.recompute-4pd", "tm1_transformer_math.md §Activations and Batch Size",
              "the updated forward pass cost is 2PD ≤ C_forward ≤ 4PD (at most a full extra forward pass)", 4, 1,
              "train(params=1, tokens=1, recompute=full).compute - train(params=1, tokens=1).compute "
              "+ prefill(params=1, tokens=1, peak=1 FLOP/s).flops"),
    # Chinchilla's D = 20P is its approaches 1 and 2, rounded; qkv's default (approach 3's fitted loss, eq. 10)
    # gives 93 tokens a parameter at Chinchilla's budget, Besiroglu et al.'s refit of it 18.4, 20 to the one figure
    TextCheck("tm101.d-20p", "tm1_transformer_math.md §Parameter vs Dataset Tradeoffs",
              "A compute-optimal language model has a number of parameters and a dataset size that satisfies the "
              "approximation D = 20P (at Chinchilla's budget, 6 · 70e9 · 1.4e12 FLOP)", 20, 1,
              "compute_optimal(6 * 70e9 * 1.4e12 FLOP, method=besiroglu).tokens_per_param"),
    TextCheck("tm101.int8", "tm1_transformer_math.md §Inference",
              "In int8, memory_model = (1 byte/param) · (No. params)", 1, 1,
              f"decode_latency(1, 1, {A100K}, weight_dtype=int8).weight_bytes"),
    TextCheck("tm101.fp32", "tm1_transformer_math.md §Inference",
              "In fp32, memory_model = (4 bytes/param) · (No. params)", 4, 1,
              f"decode_latency(1, 1, {A100K}, weight_dtype=fp32).weight_bytes"),
    TextCheck("tm101.mixed-model-2", "tm1_transformer_math.md §Model Parameters",
              "Mixed-precision (fp16/bf16 and fp32), memory_model = (2 bytes/param) · (No. params), plus an "
              "additional size (4 bytes/param) · (#params) copy of the model that we count in our optimizer states",
              2, 1, f"{ZERO1}.weights"),
    TextCheck("tm101.adamw-12", "tm1_transformer_math.md §Optimizer States",
              "For vanilla AdamW, memory_optimizer = (12 bytes/param) · (No. params): fp32 copy 4, momentum 4, "
              "variance 4", 12, 2, f"{ZERO1}.optimizer"),
    TextCheck("tm101.adam8-6", "tm1_transformer_math.md §Optimizer States",
              "For 8-bit optimizers like bitsandbytes, memory_optimizer = (6 bytes/param) · (No. params): fp32 copy "
              "4, momentum 1, variance 1", 6, 1,
              f'train_memory(1, recipe="adam-8bit").per_param - {ZERO1}.weights - {ZERO1}.gradients'),
    TextCheck("tm101.sgd-8", "tm1_transformer_math.md §Optimizer States",
              "For SGD-like optimizers with momentum, memory_optimizer = (8 bytes/param) · (No. params): fp32 copy 4, "
              "momentum 4", 8, 1,
              f'train_memory(1, recipe="sgd-momentum").per_param - {ZERO1}.weights - {ZERO1}.gradients'),
    TextCheck("tm101.act-none", "tm1_transformer_math.md §Activations and Batch Size",
              "memory_activations^No Recomputation = sbhL(10 + 24/t + 5as/(ht)) bytes (at s = b = h = L = a = t = 1: "
              "10 + 24 + 5)", 39, 2, "activations(seq=1, batch=1, d_model=1, n_heads=1).bytes"),
    TextCheck("tm101.act-selective-t8", "tm1_transformer_math.md §Activations and Batch Size",
              "memory_activations^Selective Recomputation = sbhL(10 + 24/t) bytes (at t = 8 and unit s, b, h, L: "
              "10 + 3)", 13, 2, "activations(seq=1, batch=1, d_model=1, n_heads=1, tp=8, recompute=selective).bytes"),
    TextCheck("tm101.act-full", "tm1_transformer_math.md §Activations and Batch Size",
              "memory_activations^Full Recomputation = 2 · sbhL bytes (at t = 8 too: the layer inputs are not split)",
              2, 1, "activations(seq=1, batch=1, d_model=1, n_heads=1, tp=8, recompute=full).bytes"),
    TextCheck("tm101.zero1", "tm1_transformer_math.md §Sharded Optimizers",
              "For ZeRO-1, Total Memory ≈ Model Memory + Optimizer Memory / (No. GPUs) + Activation Memory + Gradient "
              "Memory (mixed precision and Adam, one parameter, 64 GPUs, activations aside: 2 + 12/64 + 2)", 4.1875, 5,
              "zero(params=1, gpus=64, stage=1).bytes"),
    TextCheck("tm101.zero3", "tm1_transformer_math.md §Sharded Optimizers",
              "For ZeRO-3, Total Memory ≈ Activation Memory + (Model Memory + Optimizer Memory + Gradient Memory) / "
              "(No. GPUs) + (ZeRO-3 Live Params) (one parameter, 64 GPUs, activations and live parameters aside: "
              "16/64)", 0.25, 2, "zero(params=1, gpus=64, stage=3).bytes"),
)


def errata_rows() -> list[dict[str, str]]:
    """The checks qkv disagrees with, as ``qkv bank errata`` rows."""
    from solver.units import format_number

    rows = []
    for c in CHECKS:
        if c.agrees():
            continue
        rows.append({"item": c.id, "source_label": TEXTS[c.id.split(".")[0]][0], "where": c.where,
                     "printed": c.printed, "exact": format_number(c.exact(), 6) + f"  ({c.expr})",
                     "reason": c.reason, "kind": c.kind})
    return rows
