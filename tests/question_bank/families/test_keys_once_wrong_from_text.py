"""Issue 38: keys that were wrong as the statement reads, each checked from the rendered text."""

from __future__ import annotations

import re

from question_bank.family import all_families
from tests.question_bank.families.from_text_audit import num

FAMS = all_families()


def test_moe_decode_statement_gives_the_embedding_table_it_subtracts():
    """The key subtracts the input-embedding table and adds B rows back: the statement must give V and d.
    Recomputed here from the statement's numbers alone (N, the routed parameters, V, d, E, k, B, L_M)."""
    for level in ("easy", "medium", "hard"):
        for seed in range(4):
            p = FAMS["moe.decode_weight_bytes"].generate(seed, level)
            t = p.statement_text
            V, dm = (int(x.replace(",", "")) for x in re.search(r"table of V = ([\d,]+) rows of d = (\d+)", t).groups())
            N = num(re.search(r"N = ([\d,]+) parameters", t)[1])
            routed = num(re.search(r"the routed experts hold ([\d,]+)", t)[1])
            LM, E = (int(x) for x in re.search(r"over (\d+) MoE layers × (\d+) experts", t).groups())
            k = int(re.search(r"uses the top k = (\d+)", t)[1])
            B = int(re.search(r"batch of B = (\d+)", t)[1])
            touched = E * (1 - (1 - k / E) ** B)
            weights = N - routed - V * dm + B * dm + LM * touched * routed / (LM * E)
            div = 2**30 if "GiB" in t else 1e9
            assert abs(p.key.value - 2 * weights / div) < 1e-6 * p.key.value, p.id


def test_flash_hard_asks_a_ratio_that_may_be_below_one():
    """The key is standard ÷ FlashAttention, below 1 in some draws: the question may not say "times fewer"."""
    below = 0
    for seed in range(30):
        p = FAMS["flash.tiling_hbm"].generate(seed, "hard")
        assert "times fewer" not in p.statement_text
        assert "standard divided by FlashAttention" in p.statement_text
        below += p.key.value < 1
    assert below  # the wording matters: such draws exist


def test_nccl_busbw_never_above_the_link():
    for seed in range(60):
        p = FAMS["measurements.nccl_busbw"].generate(seed, "hard")
        t = p.statement_text
        alg = float(re.search(r"algorithm bandwidth of ([\d.]+) GB/s", t)[1])
        link = float(re.search(r"rated ([\d.]+) GB/s", t)[1])
        n = int(re.search(r"n = (\d+)", t)[1])
        op = re.search(r"(\w+)_perf", t)[1]
        factor = 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n
        pct = alg * factor / link * 100
        assert 0 < pct <= 100, (p.id, pct)
        assert abs(p.key.value - pct) < 0.06, p.id


def test_fsdp_overlap_calls_tpus_tpus():
    seen = 0
    for level in ("easy", "hard"):
        for seed in range(40):
            p = FAMS["training.fsdp_overlap"].generate(seed, level)
            if "tpu" in p.statement_text:
                seen += 1
                assert "GPU" not in p.statement_text, p.id
    assert seen
