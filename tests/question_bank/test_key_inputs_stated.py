"""Issue 38: every family's statement gives every number its key is computed from.

Each number a family records in ``given`` (the drawn inputs of its key) must be printed in the statement
or its options, in one of the forms people write it (1,024; 1.5 billion; 3 × 10²¹ written as "in units of
10²¹"; 5 µs for 5e-06 s; a percentage for a fraction; "two" for 2), or be one of the standard constants
listed once below, or be a ``given`` entry that is not an input (listed once, with why). A key computed
from a number the student is never told (issue 38: the vocabulary of ``moe.decode_weight_bytes``, the head
size of GPT-3 XL) shows up as a drawn number absent from the text, as soon as the family records it.
"""

from __future__ import annotations

import re

import pytest

from question_bank.family import all_families

FAMS = all_families()

#: standard constants a statement may use without printing them (each a fact of the field, not a draw)
STANDARD_CONSTANTS = {
    2,  # bytes per bf16/fp16 element, FLOPs per multiply-add, K and V
    4,  # bytes per fp32 element
    6,  # training FLOPs per parameter per token (forward + backward)
    20,  # Chinchilla's tokens per parameter
    86_400,  # seconds per day
    2**30,  # bytes per GiB
    10**9,  # bytes per GB
}

#: ``given`` entries that are not inputs of the key: bookkeeping of the draw or figures derived from the
#: printed inputs (the key may be recomputed from the statement without them)
NOT_INPUTS = {
    "option_decimals": "how the numeric MCQ's options are printed",
    "level": "the difficulty level",
    "index": "which option or item the draw picked",
    "pick": "which quantity the draw asks for",
    "unit_exponent": "the unit the answer is given in, printed as 10ⁿ",
    "exp": "the unit the answer is given in, printed as 10ⁿ",
    "critical_intensity": "derived: the chip's peak over its bandwidth, both printed",
    "intensity": "derived: the matmul's FLOPs over its bytes, from the printed shapes",
    "d_head": "derived: d / N, both printed (the statement says H = d/N)",
    "tokens": "derived: D = k·N (both printed) or sequences × tokens per sequence",
}

#: entries of one family that are not inputs of the key at the level drawn (the family, the name, why)
NOT_INPUTS_OF = {
    ("window.receptive_field", "n"): "the easy level asks the reach, which needs only L and W",
    ("concept.mask_pairs", "n"): "the sequence's length: every verdict turns on the printed query, key and mask",
    ("concept.mask_pairs_one", "n"): "the sequence's length: every verdict turns on the printed query, key and mask",
    ("training.fit_3d", "s"): "the easy level asks the model states, which need no sequence length",
    ("training.fit_3d_mcq", "s"): "the easy level asks the model states, which need no sequence length",
    ("paged.kv_blocks", "L_max"): "the medium level does not reserve the maximum length",
    ("pretraining.bert_masking", "n_tokens"): "sequences × tokens per sequence, both printed",
    ("training.grad_accum_bubble", "B"): "the global batch in sequences, from printed figures or not asked",
    ("training.grad_accum_bubble", "b"): "the easy level prints m",
    ("training.grad_accum_bubble", "d"): "the easy level prints m",
    ("training.grad_accum_bubble_mcq", "m"): "B/(b·d), all printed",
    ("training.grad_accum_bubble_mcq", "seq"): "a level that gives the batch in sequences",
    ("training.fsdp_overlap", "T"): "the easy level asks the all-gather time, which needs no token count",
    ("training.fsdp_overlap_mcq", "T"): "the easy level asks the all-gather time",
    ("sampling.top_p", "T"): "temperature 1, the logits as printed",
    ("serving.disaggregation", "beta"): "the easy level asks the bytes sent, not the time",
    ("serving.disaggregation", "t_prefill"): "the easy level asks the bytes sent, not the time",
    ("serving.disaggregation_mcq", "beta"): "the easy level asks the bytes sent",
    ("serving.disaggregation_mcq", "t_prefill"): "the easy level asks the bytes sent",
    ("context.ring_attention", "F"): "the easy level asks the bytes sent, not the time",
    ("context.ring_attention", "beta"): "the easy level asks the bytes sent, not the time",
    ("concept.norm_position", "layers"): "the depth of a statement not drawn",
    ("concept.norm_position_one", "layers"): "the depth of a statement not drawn",
    ("loss.perplexity", "loss"): "the mean, from the printed sum and token count",
    ("measurements.nccl_busbw", "S"): "the hard level prints the algorithm bandwidth",
    ("measurements.nccl_busbw", "t_us"): "the hard level prints the algorithm bandwidth",
    ("scaling.chinchilla", "params"): "what the hard level asks",
    ("scaling.chinchilla_mcq", "params"): "what the hard level asks",
    ("scaling.chinchilla", "compute"): "what the easy level asks",
    ("scaling.chinchilla_mcq", "compute"): "what the easy level asks",
    ("hardware.attention_crossover", "n_kv_heads"): "MHA or MQA, printed in words",
    ("attention.heads", "n"): "a sequence length the head size does not depend on",
    ("precision.quant_error", "bits"): "printed in the format's name (int8, int4)",
    ("training.grad_accum_bubble", "m"): "B/(b·d), all printed",
    ("training.grad_accum_bubble", "seq"): "a level that gives the batch in sequences",
    ("rope.context_extension", "pair"): "the hard level asks which pairs YaRN keeps",
    ("rope.context_extension_mcq", "pair"): "the hard level asks which pairs YaRN keeps",
    ("gpu.peak_from_parts", "fma"): "the easy level prints the SM's FLOPs per cycle (4 tensor cores × 2 × fma)",
}

_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "quadrillion": 1e15, "µs": 1e-6,
           "ms": 1e-3, "ns": 1e-9, "GB": 1e9, "TB": 1e12, "GiB": 2**30, "MiB": 2**20, "KiB": 2**10, "TFLOP": 1e12,
           "PFLOP": 1e15, "%": 1e-2, "MB": 1e6, "B": 1e9, "M": 1e6}
_WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def printed_numbers(text: str) -> list[float]:
    """Every number in the text, in each reading a person gives it."""
    t = text.replace("−", "-").replace("\u2009", "").replace("\u202f", "")
    out: list[float] = []
    for m in re.finditer(r"((?<![\w)])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:[\s-]*(thousand|million|billion|"
                         r"trillion|quadrillion|µs|ms|ns|GB|TB|MB|GiB|MiB|KiB|TFLOP|PFLOP|%|B\b|M\b))?", t):
        x = float(m[1].replace(",", ""))
        out.append(x)
        if m[2]:
            out.append(x * _SCALES[m[2]])
    for m in re.finditer(r"10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", t):  # "in units of 10²¹", "× 10⁻⁵"
        out.append(10.0 ** int(m[1].translate(_SUP)))
    for m in re.finditer(r"ℝ([⁰¹²³⁴⁵⁶⁷⁸⁹]+)", t):  # a vector space's dimension
        out.append(float(m[1].translate(_SUP)))
    for m in re.finditer(r"([\d.]+)\s*×\s*10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)", t):
        out.append(float(m[1]) * 10.0 ** int(m[2].translate(_SUP)))
    for w, i in _WORDS.items():
        if re.search(rf"\b{w}\b", t, re.I):
            out.append(float(i))
    return out


def stated(value: float, numbers: list[float]) -> bool:
    for x in numbers:
        for scale in (1, 1e2):  # a fraction may be printed as a percentage without the sign
            if x and abs(x - value * scale) <= 1e-6 * abs(value * scale):
                return True
    return value == 0 and 0.0 in numbers


def _inputs(fid: str, given: dict) -> dict[str, float]:
    return {k: v for k, v in given.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in NOT_INPUTS
            and (fid, k) not in NOT_INPUTS_OF}


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_every_drawn_input_is_in_the_statement(level):
    missing = []
    for fid, f in sorted(FAMS.items()):
        if level not in f.levels:
            continue
        p = f.generate(0, level)
        numbers = printed_numbers(p.statement_text + "\n" + "\n".join(p.options_text or []))
        for k, v in _inputs(fid, p.given or {}).items():
            if v in STANDARD_CONSTANTS or v in (0, 1):  # 0 and 1: an absent window, one chip, one layer
                continue
            if not stated(float(v), numbers):
                missing.append((fid, k, v))
    assert not missing, missing


def test_the_reading_finds_what_people_write():
    nums = printed_numbers("N = 70 billion, D = 15 trillion, in units of 10²⁵ FLOPs, α = 5 µs, 3 × 10²¹, two layers")
    for v in (70e9, 15e12, 1e25, 5e-6, 3e21, 2):
        assert stated(v, nums), v
    assert not stated(32000, printed_numbers("L = 32 layers, d = 4096"))  # a vocabulary never printed


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_the_with_sparsity_mistake_only_where_a_with_sparsity_figure_is_printed(level):
    """"Used the with-sparsity peak" names a figure the student read: it is offered only on a statement that
    prints the datasheet's 2:4-sparsity figure (``measurements.mfu_step`` offered it beside a statement that
    printed the dense peak alone)."""
    seen = 0
    for fam in FAMS.values():
        if level not in fam.levels:
            continue
        for seed in range(6):
            p = fam.generate(seed, level)
            for text, ms in ((p.statement_text, p.misconceptions),
                             *((p.statement_text + "\n" + pt.prompt_text, pt.misconceptions) for pt in p.parts)):
                if any(m.id == "sparse_peak" for m in ms):
                    seen += 1
                    assert re.search(r"2:4|sparsity", text), f"{p.id}: {text}"
    assert seen
