"""The keys of question_bank/families/parallelism.py recomputed from the text a student reads.

For each family and its MCQ view, the numbers are parsed from ``statement_text`` with regular expressions and
the answer computed here by the textbook formula for what the statement describes (``from_text_audit`` then
asks the grader whether the key accepts it, exact and rounded as asked; for an MCQ, whether the keyed option is
the one it matches):

- ``parallel.allreduce_time``: a ring all-reduce is 2(n - 1) steps, each moving S/n bytes per link in one
  direction: T = 2(n - 1)·α + 2(n - 1)/n · S / B, with B the link's one-direction rate (half a printed
  bidirectional figure; a Gb/s figure divided by 8);
- ``parallel.bus_bandwidth``: nccl-tests' algbw = S / t and busbw = algbw × 2(n - 1)/n (all-reduce) or
  × (n - 1)/n (reduce-scatter, all-gather), as its PERFORMANCE.md defines them;
- ``parallel.mfu_with_recompute``: MFU = FLOPs per token × tokens/s / (GPUs × dense peak), the dense peak being
  half the datasheet's 2:4-sparse figure; recomputation is not model FLOPs;
- ``parallel.pipeline_bubble``: idle share (p - 1)/(m + p - 1) for GPipe and 1F1B, and (p - 1)/v over
  m + (p - 1)/v with v chunks per stage (interleaved);
- ``parallel.tensor_parallel_bytes``: Megatron's f/g operators all-reduce the b·s·h activation twice forward
  and twice backward per layer; a ring all-reduce sends 2(t - 1)/t of the tensor per GPU, and a reduce-scatter
  plus an all-gather the same.

The answer is also simulated where that is cheap: the ring all-reduce is stepped chunk by chunk
(``ring_allreduce_steps``) to count its steps and per-GPU bytes. Nothing is read from ``given``, the solution
or the misconceptions; nothing is imported from the solver.
"""

from __future__ import annotations

import re

import pytest

from tests.question_bank.families.from_text_audit import (
    key_tests,
    shown_all,
    sweep_main,
    with_views,
)
from tests.question_bank.families.key_from_text import (
    find,
    num,
)

UNIT = {"GB": 1e9, "MB": 1e6, "kB": 1e3, "MiB": 2**20}


def ring_allreduce_steps(n: int) -> tuple[int, float]:
    """Simulates a ring all-reduce of a buffer of 1 split in n chunks: (steps, bytes each GPU sends).

    Reduce-scatter: at step k GPU i sends its running sum of chunk (i - k) mod n to GPU i + 1; after n - 1 steps
    GPU i holds chunk (i + 1) mod n reduced. All-gather: n - 1 more steps pass the reduced chunks round."""
    have = [{c: {i} for c in range(n)} for i in range(n)]  # GPU i: chunk -> set of GPUs summed in
    steps, sent = 0, 0.0
    for k in range(n - 1):
        msgs = [(i, (i - k) % n, set(have[i][(i - k) % n])) for i in range(n)]
        for i, c, part in msgs:
            have[(i + 1) % n][c] |= part
        steps, sent = steps + 1, sent + 1 / n
    assert all(have[i][(i + 1) % n] == set(range(n)) for i in range(n))
    return steps + (n - 1), sent + (n - 1) / n  # the all-gather: n - 1 steps of one chunk each


def allreduce_time(p, all_gather: bool = False, factor=None, halve: bool = True, bits: bool = True) -> float:
    t = p.statement_text
    n = int(find(r"^(\d+) GPUs all-reduce", t)[1])
    m = find(r"S = ([\d,.]+) (GB|MB|kB) \(10(?:⁹|⁶|³) bytes\)", t)
    size = num(m[1]) * UNIT[m[2]]
    if m := re.search(r"printed as ([\d.]+) GB/s \(bidirectional", t):
        bw = num(m[1]) * 1e9 / (2 if halve else 1)
    else:
        bw = num(find(r"printed as ([\d.]+) Gb/s per port \(each direction\)", t)[1]) * 1e9 / (8 if bits else 1)
    alpha = 0.0 if "no latency (α = 0)" in t else num(find(r"latency of α = ([\d.]+) µs per step", t)[1]) * 1e-6
    steps, sent = ring_allreduce_steps(n)
    assert (steps, round(sent * n)) == (2 * (n - 1), 2 * (n - 1))
    if all_gather:  # the all-gather's time: n - 1 steps, (n - 1)/n of the buffer
        steps, sent = n - 1, (n - 1) / n
    seconds = steps * alpha + (sent if factor is None else factor(n)) * size / bw
    return seconds * (1e3 if "in milliseconds" in t else 1e6 if "in microseconds" in t else float("nan"))


def bus_bandwidth(p, factor=None) -> float:
    t = p.statement_text
    m = find(r"runs an? (all-reduce|reduce-scatter|all-gather) on (\d+) GPUs", t)
    op, n = m[1], int(m[2])
    size = num(find(r"S = ([\d,]+) bytes", t)[1])
    m = find(r"measured time (?:is|\$?t\$? =) ([\d,.]+) (ms|µs|s)\b", t)
    secs = num(m[1]) * {"ms": 1e-3, "µs": 1e-6, "s": 1.0}[m[2]]
    right = 2 * (n - 1) / n if op == "all-reduce" else (n - 1) / n
    factor = right if factor is None else factor(right, n)
    find(r"in GB/s \(10⁹ bytes/s\)", t)
    return size / secs * factor / 1e9


def mfu_with_recompute(p, chips: bool = True, dense: bool = True, attention: bool = True) -> float:
    t = p.statement_text
    n_params = num(find(r"N = ([\d.]+) billion parameters", t)[1]) * 1e9
    gpus = int(find(r"trains on (\d+) × NVIDIA", t)[1])
    sparse = num(find(r"BF16 tensor throughput as ([\d.]+) TFLOP/s with 2:4 structured sparsity", t)[1]) * 1e12
    tokens = num(find(r"at ([\d,]+) tokens per second in all", t)[1])
    per_token = 6 * n_params
    if "12 L h s" in t and attention:
        m = find(r"L = (\d+) layers, h = ([\d,]+), s = ([\d,]+) \(PaLM's convention\)", t)
        per_token += 12 * int(m[1]) * num(m[2]) * num(m[3])
    elif attention:
        find(r"Count 6N FLOPs per token", t)
    return 100 * per_token * tokens / ((gpus if chips else 1) * sparse / (2 if dense else 1))


def pipeline_bubble(p, share=lambda bubble, m: bubble / (m + bubble)) -> float:
    t = p.statement_text
    stages, micro = int(find(r"p = (\d+) pipeline stages", t)[1]), int(find(r"m = (\d+) microbatches", t)[1])
    if "interleaved 1F1B" in t:
        v = int(find(r"v = (\d+) model chunks per stage", t)[1])
        bubble = (stages - 1) / v
    else:
        find(r"the (GPipe|1F1B) schedule", t)
        bubble = stages - 1
    return 100 * share(bubble, micro)


def bubble_by_label(p, label: str) -> float:
    """The percentage the label's own formula gives on the printed p, m (and v): "took (p − 1)/(v·m + p)"."""
    t = p.statement_text
    stages, micro = int(find(r"p = (\d+) pipeline stages", t)[1]), int(find(r"m = (\d+) microbatches", t)[1])
    v = int(m[1]) if (m := re.search(r"v = (\d+) model chunks", t)) else 1
    f = find(r"(?:took|gave) \(p − 1\)/\(?((?:v·)?m)(?: \+ p\))?", label)
    slots = v * micro if f[1] == "v·m" else micro
    return 100 * (stages - 1) / (slots + stages if f[0].endswith(")") else slots)


bubble_by_label.reads_label = True


def tensor_parallel_bytes(p, width: int = 2, count: int = 4, per_gpu: bool = True, ring: bool = True) -> float:
    t = p.statement_text
    h, tp = int(find(r"hidden size h = (\d+)", t)[1]), int(find(r"t = (\d+) GPUs", t)[1])
    b, s = int(find(r"b = (\d+) sequences? of", t)[1]), int(find(r"s = (\d+) tokens", t)[1])
    find(r"activations are bf16", t)
    tensor = b * s * h * width  # bytes of one all-reduced activation
    if "counting each all-reduced tensor once" in t:
        total = count * tensor
    else:
        find(r"How many bytes does each GPU send .* with ring collectives", t)
        _, sent = ring_allreduce_steps(tp)  # a reduce-scatter plus an all-gather: the same bytes
        total = count * (sent if ring else 2) * tensor if per_gpu else count * tensor
    find(r"in MiB \(2²⁰ bytes\)", t)
    return total / 2**20


RECOMPUTE = shown_all({"parallel.allreduce_time": allreduce_time, "parallel.bus_bandwidth": bus_bandwidth,
             "parallel.mfu_with_recompute": mfu_with_recompute, "parallel.pipeline_bubble": pipeline_bubble,
             "parallel.tensor_parallel_bytes": tensor_parallel_bytes})
FIDS = with_views(RECOMPUTE)



#: the commonest mistakes, each recomputed from the text with the slip its label names
WRONGS = shown_all({
    "parallel.allreduce_time": {"forgot_factor": lambda p: allreduce_time(p, factor=lambda n: 1),
                                "all_gather_factor": lambda p: allreduce_time(p, all_gather=True),
                                "bidirectional_bandwidth": lambda p: allreduce_time(p, halve=False),
                                "gigabits": lambda p: allreduce_time(p, bits=False)},
    "parallel.bus_bandwidth": {"algbw": lambda p: bus_bandwidth(p, factor=lambda f, n: 1),
                               "inverted_factor": lambda p: bus_bandwidth(p, factor=lambda f, n: 1 / f),
                               "forgot_factor_n": lambda p: bus_bandwidth(p, factor=lambda f, n: f * n)},
    "parallel.mfu_with_recompute": {"one_chip": lambda p: mfu_with_recompute(p, chips=False),
                                    "sparse_peak": lambda p: mfu_with_recompute(p, dense=False),
                                    "forgot_attention_term": lambda p: mfu_with_recompute(p, attention=False)},
    "parallel.pipeline_bubble": {"ideal_ratio": bubble_by_label, "one_slot_more": bubble_by_label},
    "parallel.tensor_parallel_bytes": {"fp32": lambda p: tensor_parallel_bytes(p, width=4),
                                       "half_the_all_reduces": lambda p: tensor_parallel_bytes(p, count=2),
                                       "message_only": lambda p: tensor_parallel_bytes(p, per_gpu=False),
                                       "forgot_ring_factor": lambda p: tensor_parallel_bytes(p, ring=False)},
})


globals().update(key_tests(RECOMPUTE, FIDS, "parallelism", mistakes=WRONGS))



@pytest.mark.parametrize("n", [2, 3, 8])
def test_ring_simulation_counts_steps_and_bytes(n):
    """The simulated ring: 2(n - 1) steps, and each GPU sends 2(n - 1)/n of the buffer."""
    assert ring_allreduce_steps(n) == (2 * (n - 1), pytest.approx(2 * (n - 1) / n))


if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, WRONGS))
