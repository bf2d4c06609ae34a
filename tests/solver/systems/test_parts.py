"""Machine parts, topology and memory recipes (solver.systems.parts) checked a second way: a GPU's
peak from its parts against the chip presets' datasheet peaks; a torus against a graph built
chip by chip (links counted, diameter by breadth-first search, the bisection's cut edges
counted); the two-level all-reduce against the project's collectives composed; the recipes
against ZeRO's worked example and the figures of Austin et al. Part 5."""

from __future__ import annotations

import itertools
from collections import deque

import pytest

from solver.registry import get_formula
from solver.registry.calc import Evaluator


def calc(expr: str) -> float:
    ev = Evaluator()
    return float(ev.quantity(ev.run(expr)).magnitude)


# ---- GPU parts -------------------------------------------------------------------------------


@pytest.mark.parametrize("chip,sms,per_cycle,clock,tol", [
    # H100 SXM: 132 SMs, 4 tensor cores of 1,024 dense bf16 FLOPs/cycle (Austin et al. Part 12); datasheet 989.5
    ("h100", 132, 1024, 1.83e9, 1e-4),
    # A100: 108 SMs, 512 FLOPs/cycle per tensor core, 1.41 GHz boost; datasheet 312
    ("a100-80gb", 108, 512, 1.41e9, 1e-3),
    # B200: 148 SMs, "2250e12 / (148 * 4 * 1.86e9) is about 2048"; datasheet 2,250 (dense)
    ("b200", 148, 2048, 1.86e9, 3e-3),
])
def test_gpu_peak_from_parts_is_the_datasheet_peak(chip, sms, per_cycle, clock, tol):
    assert calc(f"gpu_peak({sms}, {per_cycle}, clock={clock} Hz, chip={chip}).vs_datasheet") == \
        pytest.approx(1, abs=tol)


def test_gpu_peak_clock_the_text_uses():
    # Part 12: "990 bf16 TFLOPs/s with 132 SM running at 1.76GHz means ... 7.5e12 / 1.76e9 / 4 ~ 1024": at 1,024
    # FLOPs/cycle per tensor core the parts give 989.5 TFLOP/s at 1.83 GHz, and 951.6 at 1.76 GHz (see worked_checks)
    assert calc("gpu_peak(132, 1024, chip=h100).clock_for_datasheet") == pytest.approx(1.830e9, rel=1e-3)
    assert calc("gpu_peak(132, 1024, clock=1.76 GHz)") == pytest.approx(951.6e12, rel=1e-4)
    assert 990e12 / 132 / 1.76e9 / 4 == pytest.approx(1065.3, abs=0.1)


# ---- rooflines of elementwise and reduction kernels --------------------------------------------


def test_elementwise_counts_and_bound():
    n = 2**30
    # an unfused add c = a + b in bf16: 2 reads + 1 write of n elements, n FLOPs
    assert calc(f"elementwise({n}, inputs=2, outputs=1)") == 3 * n * 2
    assert calc(f"elementwise({n}, inputs=2, outputs=1).intensity") == pytest.approx(1 / 6)
    # memory-bound on an H100: time is the bytes over 3.35 TB/s
    assert calc(f"elementwise({n}, inputs=2, chip=h100).time") == pytest.approx(3 * n * 2 / 3.35e12)
    # fusing a GELU (say 8 FLOPs) into the add moves no more bytes: intensity (1 + 8)/6
    assert calc(f"elementwise({n}, flops_per_element=9, inputs=2)") == 3 * n * 2
    assert calc(f"elementwise({n}, flops_per_element=9, inputs=2).intensity") == pytest.approx(9 / 6)


def test_reduction_counts():
    assert calc("reduction(4096, 8192, dtype=fp32)") == (4096 * 8192 + 4096) * 4
    assert calc("reduction(4096, 8192, dtype=fp32).flops") == 4096 * 8192


# ---- a torus, built as a graph -------------------------------------------------------------------


def _graph(shape, wrap):
    nodes = list(itertools.product(*(range(k) for k in shape)))
    edges = set()
    for v in nodes:
        for ax, k in enumerate(shape):
            for step in (1, -1):
                u = list(v)
                u[ax] += step
                if not 0 <= u[ax] < k:
                    if not wrap:
                        continue
                    u[ax] %= k
                u = tuple(u)
                if u != v:
                    edges.add(frozenset((u, v)))
    return nodes, edges


def _diameter(nodes, edges):
    adj = {v: [] for v in nodes}
    for e in edges:
        a, b = tuple(e)
        adj[a].append(b)
        adj[b].append(a)
    best = 0
    for s in nodes[:: max(1, len(nodes) // 16)]:
        dist = {s: 0}
        q = deque([s])
        while q:
            v = q.popleft()
            for u in adj[v]:
                if u not in dist:
                    dist[u] = dist[v] + 1
                    q.append(u)
        best = max(best, max(dist.values()))
    return best


@pytest.mark.parametrize("shape", [(4, 4, 4), (8, 4), (16, 16), (2, 4, 8), (3, 5), (2, 2)])
@pytest.mark.parametrize("wrap", ["yes", "no"])
def test_torus_against_its_graph(shape, wrap):
    nodes, edges = _graph(shape, wrap == "yes")
    r = get_formula("torus").run({"shape": shape, "link": 10**11, "chips_per_host": 4}, {"wraparound": wrap})
    b = r.breakdown
    assert b["chips"] == len(nodes)
    assert b["links"] == len(edges)
    assert b["diameter"] == _diameter(nodes, edges)
    if max(shape) % 2:  # a cut across an odd longest side is no bisection (3x5: 6 and 9 chips): none is given
        assert b["bisection_links"] is None and "bisection_bandwidth" not in b
        return
    ax = shape.index(max(shape))
    half = max(shape) // 2
    cut = sum(1 for e in edges if len({v[ax] < half for v in e}) == 2)
    assert len([v for v in nodes if v[ax] < half]) * 2 == len(nodes)  # the cut halves the slice
    assert b["bisection_links"] == cut
    assert b["bisection_bandwidth"] == cut * 10**11


def _least_bisection(shape, wrap):
    """The fewest links cut by any split of the chips into two equal halves, by trying every half with chip 0."""
    nodes, edges = _graph(shape, wrap)
    index = {v: i for i, v in enumerate(nodes)}
    pairs = [tuple(index[v] for v in e) for e in edges]
    n = len(nodes)
    best = None
    for rest in itertools.combinations(range(1, n), n // 2 - 1):
        half = {0, *rest}
        cut = sum((a in half) != (b in half) for a, b in pairs)
        best = cut if best is None else min(best, cut)
    return best


@pytest.mark.parametrize("shape", [(2, 4), (4, 4), (2, 2, 4), (2, 6), (4, 3), (2, 2, 2), (8, 2)])
@pytest.mark.parametrize("wrap", ["yes", "no"])
def test_torus_bisection_is_the_least_cut_into_halves(shape, wrap):
    """The bisection the torus formula gives is the least cut into two equal halves of any shape (every half tried),
    not only the straight cut the formula makes; a 5x4x3 mesh (the longest side odd) has no straight bisection
    across that side, and a 7x2 mesh's least one is a staircase of 3 links, not the 7 across the side of 2."""
    r = get_formula("torus").run({"shape": shape, "link": None, "chips_per_host": 4}, {"wraparound": wrap})
    assert r.breakdown["bisection_links"] == _least_bisection(shape, wrap == "yes")


def test_torus_with_an_odd_longest_side_gives_no_bisection():
    assert _least_bisection((7, 2), False) == 3  # why no straight cut is given: it would say 7
    for shape in ((5, 4, 3), (7, 2), (3, 3)):
        r = get_formula("torus").run({"shape": shape, "link": 10**11, "chips_per_host": 4}, {"wraparound": "no"})
        assert r.breakdown["bisection_links"] is None and "odd" in r.convention["bisection"]


def test_torus_hosts_and_pod_totals():
    # a v5p 16x16x16 slice: 4,096 chips on 1,024 hosts of 4
    assert calc("torus([16, 16, 16]).hosts") == 1024
    # "On a TPU v5p 16x16x16 slice, we have 393TB of HBM": 4,096 × 96 GB (the text's per-chip figure)
    assert calc("pod(4096, hbm=96 GB).hbm") == pytest.approx(393.2e12, rel=1e-3)
    # the tpu-v5p preset stores Google's 95 GiB: 417.8 TB (see worked_checks)
    assert calc("pod(4096, chip=tpu-v5p).hbm") == 4096 * 95 * 2**30
    assert calc("pod(8, chip=h100).flops") == 8 * 989.5e12


# ---- an all-reduce over two levels ---------------------------------------------------------------


@pytest.mark.parametrize("S,g,m", [(2**30, 8, 16), (10**9, 4, 2), (12345678, 8, 1), (2**20, 1, 64)])
def test_two_level_is_the_collectives_composed(S, g, m):
    a, b = 450e9, 50e9
    got = calc(f"two_level_all_reduce({S} B, {g}, {m}, {a} B/s, {b} B/s)")
    parts = 0.0
    if g > 1:
        parts += calc(f"reduce_scatter({S} B, ranks={g}, link={a} B/s)") + calc(f"all_gather({S} B, ranks={g}, "
                                                                                  f"link={a} B/s)")
    if m > 1:
        parts += calc(f"all_reduce({S / g} B, ranks={m}, link={b} B/s)")
    assert got == pytest.approx(parts, rel=1e-12)


# ---- training memory by recipe --------------------------------------------------------------------


def test_recipes_against_zero_and_the_text():
    from solver.systems.training import zero

    # ZeRO (Rajbhandari et al. 2020) Figure 1: Ψ = 7.5B, 16 bytes each = 120 GB; stage 3 over 64 GPUs = 1.875 GB
    assert calc("train_memory(7.5e9)") == zero(7_500_000_000, 1, 0).answer == 120e9
    assert calc("train_memory(7.5e9, chips=64).per_chip") == zero(7_500_000_000, 64, 3).answer
    # Austin et al. Part 5, Question 2: bf16 parameters and fp32 Adam states for LLaMA-2 13B, "(2 + 4 + 4) * 13e9 ~ 130GB"
    assert calc("train_memory(13e9, recipe=bf16_adam)") == 130e9
    # "num_params = HBM per device / 10 ... For TPU v5p this is roughly 9B" (96 GB / 10 = 9.6B)
    assert calc("train_memory(1, hbm=96 GB, recipe=bf16_adam).max_params") == 9.6e9
    # the EleutherAI cookbook's optimizer bytes: Adam 12, SGD 4 + 4 = 8, 8-bit Adam 6 (beside 2 weights, 2 gradients);
    # its defaults (bf16 weights, fp32 gradients, Adam) 2 + 4 + 12 = 18
    assert calc("train_memory(1, recipe=adam_8bit).per_param") == 2 + 2 + 6
    assert calc("train_memory(1, recipe=sgd_momentum).per_param") == 2 + 2 + 8
    assert calc("train_memory(1, recipe=fp32_grads).per_param") == 2 + 4 + 12


def test_checkpointing_policies_by_hand():
    """Korthikanti et al. 2022 for GPT-3 175B (s = 2,048, h = 12,288, a = 96, L = 96), one sequence a GPU, no
    tensor parallelism: 34 + 5·a·s/h = 34 + 5·96·2048/12288 = 34 + 80 = 114 bytes per s·b·h with nothing
    recomputed; 34 with the attention core recomputed; 2 (the layer's bf16 input) with each layer recomputed."""
    args = "175e9, seq=2048, d_model=12288, heads=96, layers=96"
    sbh = 2048 * 12288
    for policy, per in (("none", 114), ("selective", 34), ("full", 2)):
        assert calc(f"train_memory({args}, checkpointing={policy}).activations_per_layer") == per * sbh
        assert calc(f"train_memory({args}, checkpointing={policy}).activations") == 96 * per * sbh
        assert calc(f"train_memory({args}, chips=64, checkpointing={policy}).per_chip_with_activations") == \
            175e9 * 16 / 64 + 96 * per * sbh
    # two micro-batch sequences double the activations, not the states; without seq nothing is added
    assert calc(f"train_memory({args}, micro_batch=2).activations") == 2 * 96 * 114 * sbh
    assert "activation_bytes" not in get_formula("train_memory").run({"params": 7}, {}).breakdown


# ---- a chip's figures: the preset's against the vendors' printed figures, and the text's table --------------


@pytest.mark.parametrize("chip,figure,printed", [
    ("h100", "peak_sparse", 1979e12),  # NVIDIA H100 SXM datasheet: "BF16 Tensor Core 1,979 teraFLOPS" (with sparsity)
    ("b200", "peak_sparse", 4500e12),  # HGX B200: 36 PFLOPS FP16/BF16 sparse over 8 GPUs
    ("h100", "link_chip", 900e9),  # "NVLink 900GB/s" (both directions, per GPU)
    ("tpu-v5p", "link_chip", 1200e9),  # Cloud TPU v5p: "Interchip Interconnect BW 1,200 GBps" per chip
    ("tpu-v5e", "link_chip", 400e9),  # Cloud TPU v5e: "Bidirectional ICI bandwidth per chip 400 GBps"
    ("tpu-v6e", "link_chip", 800e9),  # Cloud TPU v6e: "Bidirectional ICI bandwidth per chip 800 GBps"
])
def test_chip_figures_give_back_the_printed_figures(chip, figure, printed):
    assert calc(f"chip_figures({chip}).{figure}") == pytest.approx(printed)


def test_chip_figures_the_texts_table():
    # How to Scale Your Model, Part 2: v5p 96 GB, 2.8e12 B/s, ICI 9e10 one way / 1.8e11 bidi per link
    assert calc("chip_figures(tpu-v5p, figures=hsm).hbm") == 96e9
    assert calc("chip_figures(tpu-v5p, figures=hsm).link_bidi") == 1.8e11
    assert calc("chip_figures(tpu-v5e, figures=hsm, dtype=int8)") == 3.94e14
    # ... where the preset stores Google's 95 GiB and 100 GB/s per port: the two readings named apart
    assert calc("chip_figures(tpu-v5p).hbm") == 95 * 2**30
    assert calc("chip_figures(tpu-v5p).link") == 100e9
    # and the text's C/W_ici = 2550 comes back from its own figures
    assert calc("dp_batch(peak=chip_figures(tpu-v5p, figures=hsm).peak, "
                "link=chip_figures(tpu-v5p, figures=hsm).link)") == pytest.approx(2550)


# ---- warps resident on an SM ------------------------------------------------------------------------------


def test_warps_resident_by_enumeration():
    # the most whole blocks that fit every limit at once, counted block by block
    for regs, wpb, smem_b in [(256, None, None), (128, 4, None), (64, 8, 48 * 1024), (32, 2, 100 * 1024),
                              (40, 3, 20000)]:
        blocks, used_regs, used_smem = 0, 0, 0
        step = wpb or 1
        while True:
            r2, s2 = used_regs + step * 32 * regs, used_smem + (smem_b or 0)
            if r2 > 65536 or (blocks + 1) * step > 64 or (smem_b and s2 > 228 * 1024):
                break
            blocks, used_regs, used_smem = blocks + 1, r2, s2
        extra = f", warps_per_block={wpb}" + (f", smem_per_block={smem_b} B, smem_per_sm={228 * 1024} B" if smem_b else "")
        assert calc(f"warps_resident({regs}{extra if wpb else ''})") == blocks * step, (regs, wpb, smem_b)


def test_warps_resident_the_texts_figure():
    # Part 12: "you can only fit 8 (256 * 1024 / (4 * 32 * 256)) at a time if each thread uses 256 registers";
    # "4 * 16384 * 4 = 256kiB per SM"
    assert calc("warps_resident(256)") == 8
    assert calc("warps_resident(1).register_bytes") == 256 * 1024
