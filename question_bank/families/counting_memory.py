"""Memory: the attention score matrix, the KV cache (MHA/MQA/GQA) and Adam training state.

Keys are exact byte counts from ``solver.counting.memory`` (``attention_scores_bytes``,
``kv_cache_bytes``, ``training_report``), shown in the unit the statement asks for (GB = 10⁹
bytes, GiB = 2³⁰ bytes, MiB = 2²⁰ bytes), "rounded off to two decimal places". Misconceptions
are the same calls with the mistake applied: one head, batch 1 or one layer where the
statement has more, ``n_heads`` in place of ``n_kv_heads``, another dtype's bytes, the other
unit (GB for GiB), only one of K and V, only some of Adam's 16 bytes per parameter (the weights only, no
optimizer states, no master copy, no gradients), or mixed-precision gradients counted in fp32 (18 bytes).

Facts: scores of one layer = B·h·n²·bytes; KV cache = 2 (K and V)·L·B·n·h_kv·d_h·bytes;
mixed-precision Adam holds 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter (ZeRO §3.1).
"""

from __future__ import annotations

import math

from question_bank.families.counting_common import BYTE_UNITS, OTHER_UNIT, big, tokens_text
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, nat_key, safe_for_rounding
from question_bank.problem import Problem
from question_bank.render import Doc

#: issue 39: the decades (log10 of the answer in the statement's unit) over which each level's answer is spread,
#: before a soft upper edge of 0.6 decades: easy 0.1 to about 250 GiB, medium 1 to about 8,000, hard 3 to about 80,000
#: (all the scores of every layer, the memory that fused attention never materialises).
_ATT_DECADES = ((-1.0, 1.8), (0.0, 3.3), (0.5, 4.3))
_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "fp8": 1}
_DTYPE_WORD = {"fp32": "fp32 (4 bytes)", "fp16": "fp16 (2 bytes)", "bf16": "bf16 (2 bytes)", "int8": "int8 (1 byte)"}


def _unit_wrong(nbytes: int, unit: str) -> Wrong:
    other, div = OTHER_UNIT[unit]
    # issue 38: its inverse, a mistake of its own: the conversion between the two units applied once too often
    return Wrong("gb_vs_gib", f"gave {other} instead of {unit}",
                 f"{unit} and {other} differ: 1 GiB = 2³⁰ = 1,073,741,824 bytes, 1 GB = 10⁹ bytes.", nbytes / div,
                 inverse=f"converted {other} to {unit} twice (the factor 2³⁰/10⁹ once too often)")


@family("counting.attention_memory", topic="counting", title="Memory of the attention score matrix",
        types=("nat",), tags=("memory", "attention", "GiB"), source="004_83489721195aedaa.txt §15.8 (O(n²) memory); issue 7")
def attention_memory(d: Draw) -> Problem:
    """One layer's scores: B·h·n²·bytes per element (the n × n matrix of every head and sequence)."""
    from solver.counting.memory import attention_scores_bytes

    # Levels (issue 12: disjoint, ordered): easy, n from 1024 to 4096 in GiB; medium, n from 8192 to 16384 in GB or
    # GiB (larger numbers, either unit); hard, every layer of the model (× L).
    n_lo, n_hi = ((1024, 4096), (8192, 16384), (2048, 16384))[d.level]
    for attempt in range(3000):
        if attempt % 150 == 0:
            # issue 39: the answer's size drawn first, flat in log space over the decades the level's figures reach
            # (with a soft edge of 0.6 decades), and the length n solved for it: with every figure drawn uniformly the
            # answers piled up at the top of their range (a product of uniform draws), so that an option ×2 above
            # the largest answers was never the key, and a test-wise student picked by size alone (30 % easy)
            target = 10 ** (d.rng.uniform(*_ATT_DECADES[d.level]) + d.rng.uniform(0, 0.6))
        # issue 22: more batches, head counts and lengths at easy and medium; issue 39: any batch up to 64, any even
        # head count up to 64 and any length in the level's range
        batch = d.rng.randint(1, 64) if d.level < 2 else d.rng.randint(2, 64)
        h = d.pick(tuple(range(4, 65, 2)))
        dtype = d.pick(("fp32", "fp16") if d.level == 0 else ("fp32", "fp16", "bf16"))
        layers = d.rng.randint(6, 96) if d.level == 2 else 1
        unit = d.pick(("GB", "GiB") if d.level else ("GiB",))
        n = round(math.sqrt(target * BYTE_UNITS[unit][0] / (layers * batch * h * _BYTES[dtype])))
        if not n_lo <= n <= n_hi:
            continue
        nbytes = layers * attention_scores_bytes(batch, h, n, dtype)
        value = nbytes / BYTE_UNITS[unit][0]
        if safe_for_rounding(value, 2, 0.1):
            break
    else:  # never met (none in 2,000 seeds per level): a draw's figures and its key always belong together
        raise RuntimeError(f"attention_memory: no draw in 3000 tries at level {d.level}")
    div = BYTE_UNITS[unit][0]
    other_dtype = "fp16" if dtype == "fp32" else "fp32"
    # issue 38: each mistake's inverse, a mistake of its own (its value the mirror k²/v: the same factor the other way)
    wrongs = [
        _unit_wrong(nbytes, unit),
        Wrong("forgot_heads", "forgot the heads", f"Each of the {h} heads has its own n × n matrix.",
              layers * attention_scores_bytes(batch, 1, n, dtype) / div, inverse=f"multiplied by the {h} heads twice"),
        Wrong("wrong_dtype_bytes", f"used {_BYTES[other_dtype]} bytes per value", f"{dtype} takes {_BYTES[dtype]} bytes per value.",
              layers * attention_scores_bytes(batch, h, n, other_dtype) / div,
              inverse="used 8 bytes per value (fp64)" if dtype == "fp32" else "used 1 byte per value (as for int8)"),
        Wrong("forgot_batch", "forgot the batch", f"Each of the {batch} sequences has its own matrices.",
              layers * attention_scores_bytes(1, h, n, dtype) / div, inverse=f"multiplied by the batch of {batch} twice")
        if batch > 1 else None,
        Wrong("forgot_layers", "counted one layer only", f"All {layers} layers keep their scores.",
              attention_scores_bytes(batch, h, n, dtype) / div, inverse=f"multiplied by the {layers} layers twice")
        if layers > 1 else None,
    ]
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    where = "one layer" if layers == 1 else f"all {layers} layers (each keeps its own, e.g. for the backward pass)"
    st.p(f"Standard (non-fused) attention materialises the score matrix $QK^\\top/\\sqrt{{d_k}}$ of every head. For a batch of "
         f"$B = {batch}$ sequence{'s' if batch > 1 else ''} of $n = {n}$ tokens and $h = {h}$ heads, stored in {_DTYPE_WORD[dtype]}, "
         f"how much memory do these score matrices take in {where}?")
    st.p(f"Give the answer in {BYTE_UNITS[unit][1]}, rounded off to two decimal places.")
    sol = Doc()
    one = attention_scores_bytes(batch, h, n, dtype)
    sol.p(f"$B \\cdot h \\cdot n^2 \\cdot \\text{{bytes}} = {batch} \\times {h} \\times {n}^2 \\times {_BYTES[dtype]} = {big(one)}$ bytes"
          + (f"; times {layers} layers $= {big(nbytes)}$ bytes." if layers > 1 else "."))
    sol.p(f"In {unit}: ${big(nbytes)} / {big(div)} = {value:.4f}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"batch": batch, "n_heads": h, "seq": n, "dtype": dtype, "n_layers": layers, "unit": unit},
                     hints=["B·h·n² entries, times the bytes per entry."])


_KV_PRESETS = ("llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "mistral-7b", "gpt3-6.7b", "gpt3-13b")


@family("counting.kv_cache", topic="counting", title="KV-cache memory with MHA, MQA or GQA",
        types=("nat",), tags=("memory", "kv-cache", "gqa", "mqa"), marks=2,
        source="004_83489721195aedaa.txt §15.8 exercise (MQA cache); issue 7")
def kv_cache(d: Draw) -> Problem:
    """2 (K and V) · L · B · n · h_kv · d_h · bytes, with h_kv = n_kv_heads (1 for MQA)."""
    from solver.counting.memory import kv_cache_bytes
    from solver.counting.presets import get_preset

    easy_models = ("llama2-7b", "gpt3-6.7b", "llama2-13b")
    for attempt in range(3000):
        if attempt % 150 == 0:
            # issue 39: the answer's size drawn first, flat in log space (0.3 GB to about 1 TB, with a soft edge of
            # 0.6 decades), and the length n solved for it: a batch and a length drawn uniformly put most answers near
            # the top of the range, where an option ×2 above was never the key (34 % easy by size alone)
            target = 10 ** (d.rng.uniform(-0.5, 2.4) + d.rng.uniform(0, 0.6))
        # Levels (issue 12: disjoint, ordered): easy, an MHA model of 7-13B in fp16/bf16; medium, the other
        # presets (most with GQA: h_kv < h to track) in fp16/bf16; hard, any of them with an int8 cache.
        name = d.pick((easy_models, tuple(m for m in _KV_PRESETS if m not in easy_models), _KV_PRESETS)[d.level])
        cfg = get_preset(name).config
        L, h, kv, dh = cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.head_dim
        # issue 39: any batch up to 64 and any length from 512 to 32,768 (three batches and four
        # lengths gave 17 distinct easy keys in 200 draws)
        batch = d.rng.randint(1, 64)
        dtype = "int8" if d.level == 2 else d.pick(("fp16", "bf16"))
        unit = d.pick(("GB", "GiB"))
        n = round(target * BYTE_UNITS[unit][0] / kv_cache_bytes(L, batch, 1, kv, dh, dtype))
        if not 512 <= n <= 32768:
            continue
        W = cfg.sliding_window  # issue 10: a windowed model (Mistral 7B) keeps min(n, W) positions per layer
        held = min(n, W) if W else n
        nbytes = kv_cache_bytes(L, batch, held, kv, dh, dtype)
        value = nbytes / BYTE_UNITS[unit][0]
        if safe_for_rounding(value, 2, 0.1):
            break
    else:  # never met (none in 2,000 seeds per level): a draw's figures and its key always belong together
        raise RuntimeError(f"kv_cache: no draw in 3000 tries at level {d.level}")
    div = BYTE_UNITS[unit][0]
    wrongs = [
        Wrong("forgot_k_and_v", "forgot the factor 2 for K and V", "Both the keys AND the values are cached: a factor 2.",
              kv_cache_bytes(L, batch, held, kv, dh, dtype) / 2 / div,
              inverse="counted K and V twice each (a factor 4)"),
        Wrong("used_n_heads", "used n_heads instead of n_kv_heads", f"Only the {kv} K/V head(s) are cached, not all {h} query heads.",
              kv_cache_bytes(L, batch, held, h, dh, dtype) / div) if kv != h else None,
        _unit_wrong(nbytes, unit),
        Wrong("forgot_batch", "forgot the batch", f"Each of the {batch} sequences has its own cache.",
              kv_cache_bytes(L, 1, held, kv, dh, dtype) / div, inverse=f"multiplied by the batch of {batch} twice")
        if batch > 1 else None,
        Wrong("bits_as_bytes", "took 8 bytes (bits) per int8 value", "int8 is 8 bits = 1 byte per value.",
              kv_cache_bytes(L, batch, held, kv, dh, "fp64") / div) if dtype == "int8" else None,
        Wrong("forgot_layers", "counted one layer only", f"Every one of the {L} layers caches its own K and V.",
              kv_cache_bytes(1, batch, held, kv, dh, dtype) / div, inverse=f"multiplied by the {L} layers twice"),
        Wrong("window_ignored", "cached all n positions (ignored the sliding window)",
              f"With a window of W = {W} a layer's rolling buffer keeps only the last min(n, W) = {held} positions.",
              kv_cache_bytes(L, batch, n, kv, dh, dtype) / div) if held != n else None,
    ]
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 2, unit=unit)
    att = ("multi-head attention (every head has its own K and V)" if kv == h
           else "multi-query attention (one K/V head)" if kv == 1 else f"grouped-query attention with $n_{{kv}} = {kv}$ K/V heads")
    st = Doc()
    st.p(f"A decoder-only model ({name}) has $L = {L}$ layers, $h = {h}$ query heads of size $d_h = {dh}$ and uses {att}. "
         f"It generates with a KV cache in {_DTYPE_WORD[dtype]} for a batch of $B = {batch}$ sequence{'s' if batch > 1 else ''}, "
         f"each holding $n = {n}$ positions.")
    if W:
        st.p(f"It uses sliding-window attention: each token attends to itself and the {W - 1} positions before it "
             f"($W = {W}$) in every layer, and each layer's cache is a rolling buffer of the last $W$ positions.")
    st.p(f"How large is the KV cache? Give the answer in {BYTE_UNITS[unit][1]}, rounded off to two decimal places.")
    sol = Doc()
    if W:
        sol.p(f"The window caps each layer's cache at $\\min(n, W) = \\min({n}, {W}) = {held}$ positions.")
    sol.p(f"$2 \\cdot L \\cdot B \\cdot n \\cdot h_{{kv}} \\cdot d_h \\cdot \\text{{bytes}} = 2 \\times {L} \\times {batch} \\times {held} "
          f"\\times {kv} \\times {dh} \\times {_BYTES[dtype]} = {big(nbytes)}$ bytes (the 2 is K and V).")
    sol.p(f"In {unit}: ${big(nbytes)} / {big(div)} = {value:.4f}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"preset": name, "n_layers": L, "n_heads": h, "n_kv_heads": kv, "d_head": dh, "batch": batch,
                            "seq": n, "dtype": dtype, "unit": unit, "window": W},
                     hints=["Per token and layer: K and V, each h_kv·d_h values."])


# issue 22: every published model of the zoo whose configuration counts within 5 % of its published size (gpt3-xl
# does not), so that each level holds many distinct problems (the nine presets of before gave 4, 8 and 33 in 1,000 draws)
_TRAIN_PRESETS = ("transformer-base", "transformer-big", "bert-base", "bert-large", "gpt2", "gpt2-medium", "gpt2-large",
                  "gpt2-xl", "gpt3-small", "gpt3-medium", "gpt3-large", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b",
                  "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "mistral-7b",
                  "mixtral-8x7b", "mixtral-8x22b", "deepseek-v2-lite", "deepseek-v2", "deepseek-v3", "gemma2-9b",
                  "gemma2-27b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-30b-a3b", "phi3-mini", "gpt-oss-20b", "gpt-oss-120b",
                  "olmo2-7b", "pythia-1.4b")
#: How the statement describes the precision: mixed with bf16 or with fp16 halves (2 bytes either way), or full fp32.
_MODE_TEXT = {
    "bf16": ("mixed", "mixed precision: bf16 (2 bytes) weights and gradients, and fp32 (4 bytes) master weights, momentum "
                      "and variance"),
    "fp16": ("mixed", "mixed precision (fp16 with loss scaling): fp16 (2 bytes) weights and gradients, and fp32 (4 bytes) "
                      "master weights, momentum and variance"),
    "fp32": ("fp32", "full fp32 precision: fp32 (4 bytes) weights, gradients, momentum and variance, and no separate "
                     "master copy"),
}


@family("counting.training_memory", topic="counting", title="Training memory with Adam (16 bytes per parameter)",
        types=("nat",), tags=("memory", "training", "adam", "mixed-precision"),
        source="issue 7 (memory at scale); Rajbhandari et al. 2020 (ZeRO §3.1)")
def training_memory(d: Draw) -> Problem:
    """Adam's model states, 16 bytes per parameter either way: mixed precision, 2 (bf16 weights) + 2 (grads)
    + 4 (fp32 master) + 4 (m) + 4 (v); full fp32, 4 + 4 + 4 + 4 (the weights are their own master copy)."""
    from solver.counting.memory import training_report, weights_bytes
    from solver.counting.presets import get_preset

    for _ in range(300):
        name = d.pick(_TRAIN_PRESETS)
        precision = d.pick(tuple(_MODE_TEXT))
        mode = _MODE_TEXT[precision][0]
        cfg = get_preset(name).config
        # Levels (issue 12: disjoint, ordered): easy, GB; medium, GiB (2³⁰ to convert); hard, per GPU of a
        # data-parallel group (one more thing to reason out: each GPU holds a full replica), in GiB (issue 22: a
        # hard draw in GB had the key of the easy draw of its model, and remembering those answered 25 % of them)
        unit = ("GB", "GiB", "GiB")[d.level]
        gpus = d.pick((8, 16, 32, 64, 128, 256)) if d.level == 2 else 1
        rep = training_report(cfg, mode)
        nbytes = rep.bytes
        value = nbytes / BYTE_UNITS[unit][0]
        if safe_for_rounding(value, 2, 0.1):
            break
    div = BYTE_UNITS[unit][0]
    n_params = nbytes // 16
    items = {i.name: i.bytes for i in rep.items}
    mixed = mode == "mixed"
    wrongs = [
        Wrong("weights_only", f"counted the {precision} weights only",
              "Training also holds gradients and Adam's states: 16 bytes per parameter.",
              weights_bytes(cfg, precision) / div),
        Wrong("forgot_optimizer_states", "forgot Adam's states",
              "Adam keeps fp32 master weights, momentum and variance: 12 more bytes." if mixed else
              "Adam keeps fp32 momentum and variance: 8 more bytes.",
              sum(v for k, v in items.items() if "weights" in k or "gradients" in k) / div if not mixed else
              sum(v for k, v in items.items() if "fp16" in k) / div),
        Wrong("forgot_master_copy", "forgot the fp32 master weights", "Mixed precision keeps an fp32 copy of the weights (4 bytes).",
              sum(v for k, v in items.items() if "master" not in k) / div) if mixed else
        Wrong("added_master_copy", "added an fp32 master copy",
              "In full fp32 the weights are already fp32: there is no separate master copy (4 + 4 + 4 + 4 bytes).",
              (nbytes + 4 * n_params) / div),
        Wrong("forgot_gradients", "forgot the gradients",
              f"Backpropagation stores one gradient per parameter ({'2' if mixed else '4'} bytes each) until the optimizer step.",
              sum(v for k, v in items.items() if "gradients" not in k) / div),
        # the gradients taken fp32 like the optimizer's copies: 4 bytes where the statement has 2
        Wrong("fp32_gradients", "counted the gradients in fp32",
              f"The statement has {precision} gradients (2 bytes each); the fp32 tensors are the master weights, m and v.",
              (nbytes + sum(v for k, v in items.items() if "gradients" in k)) / div) if mixed else None,
        _unit_wrong(nbytes, unit),
        Wrong("divided_by_gpus", "divided by the number of GPUs", "Plain data parallelism replicates all model states on every GPU "
              "(sharding them is ZeRO).", nbytes / gpus / div) if gpus > 1 else None,
    ]
    wrongs = [w for w in wrongs if w is not None]
    key = nat_key(value, 2, unit=unit)
    st = Doc()
    st.p(f"A model with $N = {big(n_params)}$ parameters ({name}, about {tokens_text(round(n_params, -6))}) is trained with Adam in "
         f"{_MODE_TEXT[precision][1]}.")
    if gpus > 1:
        st.p(f"Training runs with plain data parallelism on {gpus} GPUs (no ZeRO, no sharding). How much memory do the model "
             "states (weights, gradients, optimizer states; no activations) take **on each GPU**?")
    else:
        st.p("How much memory do the model states (weights, gradients, optimizer states; no activations) take?")
    st.p(f"Give the answer in {BYTE_UNITS[unit][1]}, rounded off to two decimal places.")
    sol = Doc()
    sol.bullets([f"{i.name}: {i.formula} = ${big(i.bytes)}$" for i in rep.items],
                [f"{i.name}: {i.formula} = {i.bytes:,}" for i in rep.items])
    sol.p(f"{rep.formula}: ${big(nbytes)}$ bytes" + (" on every GPU (each holds a full replica)." if gpus > 1 else "."))
    if gpus > 1:
        sol.p(f"The {gpus} GPUs do not divide it: plain data parallelism keeps a whole replica of the weights, gradients and "
              "optimizer states on each GPU, and only the batch is split.")
    if unit == "GiB":
        sol.p(r"$1\,\mathrm{GiB} = 2^{30} = 1{,}073{,}741{,}824$ bytes (not $10^9$).")
    sol.p(f"In {unit}: ${big(nbytes)} / {big(div)} = {value:.4f}$.")
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="nat", statement=st, key=key, solution=sol, misconceptions=keep_distinct(key, wrongs),
                     given={"preset": name, "params": n_params, "unit": unit, "gpus": gpus, "mode": mode, "precision": precision},
                     hints=["2 + 2 + 4 + 4 + 4 bytes per parameter." if mixed else "4 + 4 + 4 + 4 bytes per parameter."])
