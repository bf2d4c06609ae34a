"""GPU node presets (solver.systems.nodes) against their cited sources: each stored figure is the printed
figure of its citation divided as the citation says; the presets agree with How to Scale Your Model's node
tables (Part 12, gpus.md at 1a55377: transcribed here a second time, from the printed rows), with the chip
and interconnect presets, and with the text's worked figures; every GPU link lands on a switch port."""

from __future__ import annotations

import pytest

from solver.registry.calc import Evaluator
from solver.systems.chips import get_hardware
from solver.systems.interconnect import get_link
from solver.systems.nodes import NODES, get_node


def calc(expr: str) -> float:
    ev = Evaluator()
    return float(ev.quantity(ev.run(expr)).magnitude)


#: the text's rows as printed: "| H100 | 8 | 450e9 | 400e9 |", "| B200 | 8 | 900e9 | 400e9 |",
#: "| GB200 NVL72 | 72 | 900e9 | 3600e9 |"; NVLink table: Hopper "25 | 18 | 450 | 8 | 4",
#: Blackwell "50 | 18 | 900 | 8/72 | 2/18"
TEXT = {"hgx-h100": dict(gpus=8, nvlink=450e9, egress=400e9, nvlink_link=25e9, nvlink_links=18, nvswitches=4),
        "hgx-b200": dict(gpus=8, nvlink=900e9, egress=400e9, nvlink_link=50e9, nvlink_links=18, nvswitches=2),
        "gb200-nvl72": dict(gpus=72, nvlink=900e9, egress=3600e9, nvlink_link=50e9, nvlink_links=18, nvswitches=18)}


@pytest.mark.parametrize("name", sorted(NODES))
def test_each_figure_is_its_citation_divided_as_printed(name):
    n = NODES[name]
    assert n.citations and n.source
    for c in n.citations:
        assert c.printed and c.source and c.seen, (name, c.figure)
        assert n.figure(c.figure) == pytest.approx(c.stored(), rel=1e-12), (name, c.figure)


@pytest.mark.parametrize("name", sorted(TEXT))
def test_the_presets_are_the_texts_node_tables(name):
    n = NODES[name]
    for figure, value in TEXT[name].items():
        assert n.figure(figure) == value, (name, figure)


@pytest.mark.parametrize("name", sorted(NODES))
def test_a_node_agrees_with_its_chip_and_link_presets(name):
    """NVLink per GPU is the chip preset's link figure; a PCIe host link is the pcie5 preset's; each GPU's links
    all land on NVSwitch ports (8·18 = 144 ≤ 4·64 on HGX H100; 144 = 2·72 on HGX B200; 1,296 = 18·72 on NVL72)."""
    n = NODES[name]
    assert n.nvlink == get_hardware(n.gpu).link_bandwidth
    if n.host_link_name.startswith("PCIe Gen5"):
        assert n.host_link == get_link("pcie5").per_direction
    if n.nic_name.startswith("ConnectX-7 400"):
        assert n.nic == get_link("ib-ndr").per_direction
    assert n.gpus * n.nvlink_links <= n.nvswitches * n.switch_ports
    assert n.gpus % n.gpus_per_host == 0


def test_the_texts_worked_node_figures():
    # Quiz 2, Q1: "450e9 * 8 = 3.6TB/s" (the GPUs' limit) below "4 * 1.6e12=6.4e12" (the switches')
    assert calc("node(hgx_h100).nvlink_total") == 3.6e12
    assert calc("node(hgx_h100).switch_total") == 6.4e12
    # Quiz 2, Q3: "536e6 * (8 - 1) / 3.6e12 = 1.04ms"
    assert calc("all_gather(4096 * 65536 * 2 B, ranks=8, link=node(hgx_h100).nvlink, ring=unidirectional)") == \
        pytest.approx(2**29 * 7 / 8 / 450e9)
    # Data parallelism: "990e12 / 450e9 = 2200" inside, "990e12 / 400e9 = 2475" across nodes
    assert calc("node(hgx_h100, peak=990e12 FLOP/s).alpha_intra") == pytest.approx(2200)
    assert calc("node(hgx_h100, peak=990e12 FLOP/s).alpha_inter") == pytest.approx(2475)
    assert calc("node(hgx_h100, peak=990e12 FLOP/s).alpha_inter") == \
        calc("dp_batch(peak=990e12 FLOP/s, link=400e9 B/s, ring=unidirectional)")
    # GB200: "4 * 18 * 400 / 8 = 3.6TB/s ... 9x more than an H100"
    assert calc("node(nvl72).egress") == 3.6e12 == 9 * calc("node(dgx_h100).egress")


def test_the_hsm_figures_choice_and_refusals():
    assert calc("node(hgx_b200, figures=hsm).egress") == 400e9
    from solver.errors import SolverInputError
    from solver.registry import get_formula

    with pytest.raises(SolverInputError, match="hgx-h100, hgx-b200, gb200-nvl72"):
        get_formula("node").run({"node": "hgx-h200"}, {"figures": "hsm"})
    with pytest.raises(SolverInputError, match="did you mean"):
        get_node("hgx-h10")


@pytest.mark.parametrize("name", sorted(NODES))
def test_two_level_all_reduce_takes_a_node(name):
    """node= fills g, β inside (NVLink per GPU) and β across (the node's egress ÷ its GPUs): the same time as those
    figures given by hand; a figure given by hand wins."""
    n = NODES[name]
    by_hand = calc(f"two_level_all_reduce(1 GB, {n.gpus}, 16, {n.nvlink} B/s, {n.egress / n.gpus} B/s)")
    assert calc(f"two_level_all_reduce(1 GB, nodes=16, node=\"{name}\")") == pytest.approx(by_hand, rel=1e-12)
    assert calc(f"two_level_all_reduce(1 GB, nodes=16, inter=25 GB/s, node=\"{name}\")") == pytest.approx(
        calc(f"two_level_all_reduce(1 GB, {n.gpus}, 16, {n.nvlink} B/s, 25 GB/s)"), rel=1e-12)
