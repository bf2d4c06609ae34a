"""The parts of machines that arithmetic questions ask about, registered (``qkv calc`` functions,
``qkv solve`` commands): a GPU's peak from its streaming multiprocessors, tensor cores and clock;
rooflines of elementwise and reduction kernels; a TPU slice's torus (chips, hosts, wraparound,
bisection); a pod's FLOP/s and HBM from its chips'; an all-reduce over two levels (inside a
node, then across nodes); and training memory by named recipe (bytes per parameter, each with
its source).
"""

from __future__ import annotations

import math
from fractions import Fraction

from solver.errors import SolverInputError
from solver.registry.formula import Choice, Convention, Input, Output, formula
from solver.result import Result, fmt
from solver.systems.sharding import _chip_figures, _num, _pos

GPUS = "Austin et al., How to Scale Your Model (2025), Part 12 'How to Think About GPUs'"
TPUS = "Austin et al., How to Scale Your Model (2025), Part 2 'How to Think About TPUs'"

_CHIP = Input("chip", "a chip preset (h100, a100-80gb, b200): its datasheet figures", kind="chip", default=None,
              aliases=("hw",))


# ---- a GPU's peak from its parts ----------------------------------------------------------------

@formula("gpu_peak", "A GPU's dense peak from its parts: SMs × tensor cores per SM × FLOPs per tensor core per "
         "cycle × clock; with a chip, compared with its datasheet's dense peak.",
         (Input("sms", "streaming multiprocessors (H100 SXM 132, A100 108, B200 148)", kind="count", integer=True,
                minimum=1, aliases=("n_sm",)),
          Input("flops_per_cycle", "dense FLOPs per tensor core per cycle at the dtype (A100 512, H100 1,024 in "
                "bf16; 2 per multiply-add)", kind="count", minimum=1, aliases=("per_cycle",)),
          Input("clock", "the clock (1.83 GHz)", unit="Hz", default=None, aliases=("freq",)),
          Input("tensor_cores", "tensor cores per SM (4 since Volta)", kind="count", integer=True, default=4,
                minimum=1),
          _CHIP, Input("dtype", "the dtype of the datasheet peak compared with", kind="dtype", default="bf16")),
         (Output("peak", "FLOP/s", "SMs · tensor cores · FLOPs/cycle · clock", ("clock",)),
          Output("per_cycle", "FLOP", "FLOPs per cycle of the whole GPU"),
          Output("vs_datasheet", "", "this peak ÷ the chip's datasheet dense peak", ("clock", "chip")),
          Output("clock_for_datasheet", "Hz", "the clock at which the parts give the datasheet peak", ("chip",))),
         solve="gpu-peak", source=GPUS + ", 'What Is a GPU?'")
def _gpu_peak(sms, flops_per_cycle, clock, tensor_cores, chip, dtype):
    r = Result(answer=None, unit="FLOP/s", convention={
        "flops": "dense (no 2:4 sparsity), 2 FLOPs per multiply-add, tensor cores only",
        "source": GPUS})
    _pos("sms", sms)
    _pos("flops_per_cycle", flops_per_cycle)
    per_cycle = r.step("FLOPs/cycle = SMs · tensor cores · FLOPs per tensor core per cycle",
                       f"{sms} · {tensor_cores} · {fmt(flops_per_cycle)}", sms * tensor_cores * _num(flops_per_cycle),
                       "FLOP")
    r.breakdown["per_cycle"] = per_cycle
    r.answer = per_cycle
    sheet = None
    if chip is not None:
        c = _chip_figures(chip, dtype)
        sheet = c.need("peak_flops")
        r.breakdown["datasheet_peak"] = sheet
        r.convention["datasheet"] = f"{c.origin.get('peak_flops')}: dense {dtype} peak (the sparse figure halved)"
        r.breakdown["clock_for_datasheet"] = r.step("clock = datasheet peak / FLOPs per cycle",
                                                    f"{fmt(sheet)} / {fmt(per_cycle)}", sheet / per_cycle, "Hz")
    if clock is not None:
        _pos("clock", clock)
        peak = r.step("peak = FLOPs/cycle · clock", f"{fmt(per_cycle)} · {fmt(clock)}", per_cycle * _num(clock),
                      "FLOP/s")
        r.answer = peak
        r.breakdown["peak"] = peak
        if sheet is not None:
            r.breakdown["vs_datasheet"] = r.step("peak / datasheet", f"{fmt(peak)} / {fmt(sheet)}", peak / sheet)
    return r


@formula("warps_resident", "Warps an SM keeps resident: the least of the register file's, shared memory's and the "
         "scheduler's limits (registers per SM / (32 threads · registers per thread), ...).",
         (Input("registers_per_thread", "32-bit registers each thread uses (at most 255 on recent GPUs)", kind="count",
                integer=True, minimum=1, aliases=("regs",)),
          Input("registers_per_sm", "32-bit registers per SM (65,536 on A100, H100, B200: 4 × 16,384)",
                kind="count", integer=True, default=65536, minimum=1),
          Input("max_warps", "the scheduler's limit of resident warps per SM (64 on A100 and H100)", kind="count",
                integer=True, default=64, minimum=1),
          Input("warps_per_block", "warps per thread block (to count shared memory and whole blocks)", kind="count",
                integer=True, default=None, minimum=1),
          Input("smem_per_block", "shared memory per block", unit="B", default=None),
          Input("smem_per_sm", "shared memory per SM (228 KiB usable on H100)", unit="B", default=None)),
         (Output("warps", "", "resident warps per SM"),
          Output("register_limit", "", "warps the register file holds"),
          Output("register_bytes", "B", "the register file's bytes per SM (4 bytes a register)"),
          Output("occupancy", "", "resident warps / the scheduler's limit")),
         solve="warps-resident", source=GPUS + ", 'Memory'; NVIDIA CUDA C++ Programming Guide (occupancy)")
def _warps_resident(registers_per_thread, registers_per_sm, max_warps, warps_per_block, smem_per_block, smem_per_sm):
    r = Result(answer=None, unit="warps", convention={"model": "32 threads a warp; registers and shared memory "
                                                               "allotted whole, no allocation granularity"})
    reg = r.step("register limit = ⌊registers per SM / (32 · registers per thread)⌋",
                 f"⌊{registers_per_sm} / (32 · {registers_per_thread})⌋", registers_per_sm // (32 * registers_per_thread),
                 "warps")
    limits = [reg, max_warps]
    if warps_per_block is not None:
        reg_blocks = reg // warps_per_block
        reg = r.step("whole blocks: ⌊register limit / warps per block⌋ · warps per block",
                     f"⌊{limits[0]} / {warps_per_block}⌋ · {warps_per_block}", reg_blocks * warps_per_block, "warps")
        limits[0] = reg
        limits[1] = (max_warps // warps_per_block) * warps_per_block
        if smem_per_block is not None and smem_per_sm is not None:
            _pos("smem_per_block", smem_per_block)
            blocks = r.step("shared-memory limit = ⌊smem per SM / smem per block⌋ blocks",
                            f"⌊{fmt(smem_per_sm)} / {fmt(smem_per_block)}⌋", math.floor(smem_per_sm / smem_per_block),
                            "blocks")
            limits.append(blocks * warps_per_block)
    w = r.step("warps = min(limits)", f"min({', '.join(map(str, limits))})", min(limits), "warps")
    r.answer = w
    r.breakdown.update(warps=w, register_limit=limits[0], register_bytes=4 * registers_per_sm,
                       occupancy=Fraction(w, max_warps))
    return r


# ---- elementwise and reduction rooflines ----------------------------------------------------------

def _roofline(r: Result, flops, nbytes, chip, dtype, peak, bandwidth):
    r.breakdown.update(flops=flops, bytes=nbytes)
    r.breakdown["intensity"] = r.step("intensity = FLOPs / bytes", f"{fmt(flops)} / {fmt(nbytes)}",
                                      Fraction(flops) / Fraction(nbytes) if isinstance(flops, (int, Fraction))
                                      and isinstance(nbytes, (int, Fraction)) else flops / nbytes, "FLOP/B")
    c = _chip_figures(chip, dtype, peak, None, bandwidth)
    C = _num(peak) if peak is not None else c.peak_flops
    W = _num(bandwidth) if bandwidth is not None else c.bandwidth
    if C is None or W is None:
        return
    _pos("peak", C)
    _pos("bandwidth", W)
    t_c = r.step("T_math = FLOPs / C", f"{fmt(flops)} / {fmt(C)}", flops / C, "s")
    t_m = r.step("T_mem = bytes / W_hbm", f"{fmt(nbytes)} / {fmt(W)}", nbytes / W, "s")
    t = r.step("T = max(T_math, T_mem)", f"max({fmt(t_c)}, {fmt(t_m)})", max(t_c, t_m), "s")
    r.convention["bound"] = "compute" if t_c > t_m else "memory"
    r.breakdown.update(time_s=t, chip_intensity=C / W)


_RATE_INPUTS = (_CHIP,
                Input("dtype", "element type (bf16, fp32 ...)", kind="dtype", default="bf16"),
                Input("peak", "the units' FLOP/s (instead of a chip; elementwise work runs on the vector units, "
                      "not the tensor cores)", unit="FLOP/s", default=None, aliases=("peak_flops",)),
                Input("bandwidth", "HBM bytes/s (instead of a chip)", unit="B/s", default=None,
                      aliases=("hbm_bandwidth",)))
_ROOF_OUT = (Output("bytes", "B", "HBM bytes read and written"),
             Output("time", "s", "max(FLOPs / C, bytes / W_hbm)", ("peak",), key="time_s"),
             Output("flops", "FLOP", "the kernel's FLOPs"),
             Output("intensity", "FLOP/B", "FLOPs per HBM byte (fused: the whole kernel's)"))


@formula("elementwise", "Roofline of an elementwise kernel (fused or not): n elements, each read from `inputs` "
         "tensors and written to `outputs`, f FLOPs each.",
         (Input("elements", "n: elements per tensor", kind="count", integer=True, minimum=1, aliases=("n",)),
          Input("flops_per_element", "f: FLOPs per element (a fused GELU+add counts all of its ops)", kind="count",
                default=1, aliases=("flops", "f")),
          Input("inputs", "tensors read (each n elements)", kind="count", integer=True, default=1, minimum=0),
          Input("outputs", "tensors written (each n elements)", kind="count", integer=True, default=1, minimum=0),
          *_RATE_INPUTS),
         _ROOF_OUT, solve="elementwise", source="Williams et al. 2009 (roofline); " + GPUS)
def _elementwise(elements, flops_per_element, inputs, outputs, chip, dtype, peak, bandwidth):
    from solver.units import dtype_bytes

    b = dtype_bytes(dtype)
    if inputs + outputs == 0:
        raise SolverInputError("a kernel reads or writes at least one tensor", param="inputs")
    r = Result(answer=None, unit="B", convention={"traffic": "each tensor read or written once (no cache reuse)"})
    nbytes = r.step("bytes = n · (inputs + outputs) · bytes per element", f"{elements} · ({inputs} + {outputs}) · "
                    f"{fmt(b)}", elements * (inputs + outputs) * b, "B")
    flops = r.step("FLOPs = n · f", f"{elements} · {fmt(flops_per_element)}", elements * _num(flops_per_element), "FLOP")
    r.answer = nbytes
    _roofline(r, flops, nbytes, chip, dtype, peak, bandwidth)
    return r


@formula("reduction", "Roofline of a reduction over the last axis (a row sum, a softmax's max): rows × cols read, "
         "rows written, f FLOPs per element read.",
         (Input("rows", "rows reduced independently", kind="count", integer=True, minimum=1),
          Input("cols", "elements reduced per row", kind="count", integer=True, minimum=1),
          Input("flops_per_element", "FLOPs per element read (1 for a sum)", kind="count", default=1,
                aliases=("flops", "f")),
          *_RATE_INPUTS),
         _ROOF_OUT, solve="reduction", source="Williams et al. 2009 (roofline)")
def _reduction(rows, cols, flops_per_element, chip, dtype, peak, bandwidth):
    from solver.units import dtype_bytes

    b = dtype_bytes(dtype)
    r = Result(answer=None, unit="B", convention={"traffic": "input read once, one value written per row"})
    nbytes = r.step("bytes = (rows·cols + rows) · bytes per element", f"({rows}·{cols} + {rows}) · {fmt(b)}",
                    (rows * cols + rows) * b, "B")
    flops = r.step("FLOPs = rows · cols · f", f"{rows} · {cols} · {fmt(flops_per_element)}",
                   rows * cols * _num(flops_per_element), "FLOP")
    r.answer = nbytes
    _roofline(r, flops, nbytes, chip, dtype, peak, bandwidth)
    return r


# ---- a TPU slice: torus, hosts, bisection -------------------------------------------------------

WRAP = Convention("wraparound", "Whether each axis of the slice closes into a ring.", {
    "yes": Choice("every axis a ring (a full cube of 4×4×4 or more on v4/v5p; a full 16×16 v5e/v6e pod)", TPUS),
    "no": Choice("open axes, a mesh (a v5p slice smaller than a cube of 4, a v5e sub-slice)", TPUS)}, "yes")


@formula("torus", "A TPU slice as a torus (shape=[4, 4, 4]): chips, hosts, links, hops across, and the bisection "
         "bandwidth (the busiest cut: the longest axis halved).",
         (Input("shape", "the slice's sides, [16, 16] or \"4x4x8\"", kind="shape"),
          Input("link", "β: one link's bandwidth per direction", unit="B/s", default=None,
                aliases=("bw", "link_bandwidth")),
          Input("chips_per_host", "chips per host (4 on v4, v5p, and v5e/v6e hosts of 4 or 8)", kind="count",
                integer=True, default=4, minimum=1, aliases=("per_host",))),
         (Output("chips", "", "the product of the sides"),
          Output("hosts", "", "chips / chips per host, rounded up"),
          Output("links", "", "bidirectional links in the slice"),
          Output("diameter", "", "the most hops between two chips"),
          Output("bisection_links", "", "links cut by halving the longest axis"),
          Output("bisection", "B/s", "bytes/s across that cut, one way: links cut · β", ("link",),
                 key="bisection_bandwidth")),
         conventions=(WRAP,), solve="torus", source=TPUS)
def _torus(shape, link, chips_per_host, wraparound="yes"):
    if isinstance(shape, str):
        try:
            shape = tuple(int(s) for s in shape.lower().replace("×", "x").replace(",", "x").split("x"))
        except ValueError:
            raise SolverInputError(f"a shape such as 4x4x8 (got {shape!r})", param="shape") from None
    shape = tuple(int(s) for s in shape)
    if not shape or any(s < 1 for s in shape):
        raise SolverInputError("each side at least 1", param="shape")
    r = Result(answer=None, unit="chips", convention={"wraparound": wraparound, "source": TPUS})
    n = r.step("chips = Π sides", " · ".join(map(str, shape)), math.prod(shape), "chips")
    wrap = wraparound == "yes"
    links = 0
    for s in shape:  # along one axis: N/s rings (or lines) of s chips
        per_line = (s if s > 2 else s - 1) if wrap else s - 1
        links += n // s * per_line
    r.step("links = Σ_axes (N/k) · (k with wraparound, k − 1 without; 1 for k = 2)", str(shape), links)
    diam = sum(s // 2 if wrap else s - 1 for s in shape)
    r.step("diameter = Σ ⌊k/2⌋ (wraparound) or Σ (k − 1)", str(shape), diam, "hops")
    kmax = max(shape)
    cut: int | None
    if kmax == 1:
        cut = 0
    elif kmax % 2:
        # a cut across an odd side leaves unequal parts (5x4x3: 24 and 36 chips), so it bisects nothing; the least
        # cut into equal halves is then no straight cut in general (a 7x2 mesh: 3 links by a staircase, 7 straight
        # across the side of 2), so none is given rather than a wrong one (TPU slices have even sides)
        cut = None
        r.convention["bisection"] = (f"not given: the longest side ({kmax}) is odd, so no straight cut across it "
                                     "halves the slice (qkv gives the bisection of a slice whose longest side is even)")
    else:
        cut = n // kmax * (2 if wrap and kmax > 2 else 1)
        r.step("links cut = (N/k_max) · (2 with wraparound: each ring is cut twice)", f"({n}/{kmax}) · "
               f"{2 if wrap and kmax > 2 else 1}", cut)
    hosts = r.step("hosts = ⌈chips / chips per host⌉", f"⌈{n} / {chips_per_host}⌉", -(-n // chips_per_host))
    r.answer = n
    r.breakdown.update(chips=n, hosts=hosts, links=links, diameter=diam, bisection_links=cut)
    if link is not None and cut is not None:
        _pos("link", link)
        r.breakdown["bisection_bandwidth"] = r.step("bisection = links cut · β", f"{cut} · {fmt(link)}",
                                                    cut * _num(link), "B/s")
    return r


@formula("pod", "A pod's (or node's) totals from its chips': FLOP/s, HBM and HBM bandwidth.",
         (Input("chips", "chips (8 in an HGX node, 72 in an NVL72 rack, 8,960 in a v5p pod)", kind="count",
                integer=True, minimum=1, aliases=("n", "gpus")),
          _CHIP, Input("dtype", "the dtype of the peak", kind="dtype", default="bf16"),
          Input("peak", "FLOP/s per chip (instead of a chip)", unit="FLOP/s", default=None, aliases=("peak_flops",)),
          Input("hbm", "HBM bytes per chip (instead of a chip)", unit="B", default=None),
          Input("bandwidth", "HBM bytes/s per chip (instead of a chip)", unit="B/s", default=None,
                aliases=("hbm_bandwidth",))),
         (Output("flops", "FLOP/s", "chips · peak", ("peak",), key="peak_flops"),
          Output("hbm", "B", "chips · HBM", ("hbm",), key="hbm_bytes"),
          Output("bandwidth", "B/s", "chips · HBM bandwidth", ("bandwidth",), key="hbm_bandwidth")),
         solve="pod", source="the chip presets (qkv hw show NAME)")
def _pod(chips, chip, dtype, peak, hbm, bandwidth):
    r = Result(answer=None, unit="FLOP/s", convention={"figures": "dense peak, datasheet HBM (qkv hw show)"})
    c = _chip_figures(chip, dtype, peak, None, bandwidth, hbm)
    for key, value, unit in (("peak_flops", c.peak_flops, "FLOP/s"), ("hbm_bytes", c.hbm, "B"),
                             ("hbm_bandwidth", c.bandwidth, "B/s")):
        if value is not None:
            v = _num(value)
            v = int(v) if isinstance(v, float) and v.is_integer() else v
            r.breakdown[key] = r.step(f"{key} = chips · per chip", f"{chips} · {fmt(v)}", chips * v, unit)
    if not r.breakdown:
        raise SolverInputError("give chip= (a preset) or a per-chip figure (peak=, hbm=, bandwidth=)", param="chip")
    r.answer = r.breakdown.get("peak_flops", next(iter(r.breakdown.values())))
    return r


# ---- an all-reduce over two levels --------------------------------------------------------------

@formula("two_level_all_reduce", "An all-reduce over nodes of g GPUs: reduce-scatter inside each node, all-reduce "
         "each 1/g shard across the m nodes, all-gather inside the node (rings, (n−1)/n factors kept).",
         (Input("size", "S: the buffer on each GPU", unit="B", aliases=("S", "bytes")),
          Input("gpus_per_node", "g: GPUs per node (8 in an HGX node; or a node=)", kind="count", integer=True,
                default=None, minimum=1, aliases=("g",)),
          Input("nodes", "m: nodes", kind="count", integer=True, minimum=1, aliases=("m",)),
          Input("intra", "β inside a node, per GPU per direction (NVLink 4: 450 GB/s; or a node=)", unit="B/s",
                default=None, aliases=("nvlink",)),
          Input("inter", "β across nodes, per GPU per direction (one 400 Gb/s NIC per GPU: 50 GB/s; or a node=)",
                unit="B/s", default=None, aliases=("network", "dcn")),
          Input("node", "a node preset (hgx-h100, hgx-b200, gb200-nvl72): g, its NVLink per GPU and its egress per "
                "GPU, where not given", kind="choice", default=None)),
         (Output("time", "s", "intra reduce-scatter + inter all-reduce + intra all-gather", key="time_s"),
          Output("intra_time", "s", "the two steps inside the node"),
          Output("inter_time", "s", "the all-reduce across nodes of S/g per GPU"),
          Output("flat_time", "s", "one flat ring over all g·m GPUs at the inter-node β (for comparison)")),
         solve="two-level-all-reduce", source="NCCL's hierarchical (tree/ring) all-reduce; nccl-tests "
         "doc/PERFORMANCE.md for the ring's (n−1)/n")
def _two_level(size, gpus_per_node, nodes, intra, inter, node=None):
    r = Result(answer=None, unit="s", convention={
        "model": "bandwidth terms only (no α); each GPU's NIC carries its own shard across nodes"})
    if node is not None:
        from solver.systems.nodes import get_node

        n = get_node(node)
        gpus_per_node = n.gpus if gpus_per_node is None else gpus_per_node
        intra = n.nvlink if intra is None else intra
        inter = Fraction(int(n.egress), n.gpus) if inter is None else inter
        r.convention["node"] = f"{n.name}: g = {n.gpus}, NVLink {fmt(n.nvlink)} B/s and egress {fmt(n.egress)} B/s " \
                               f"÷ {n.gpus} GPUs, one direction"
    for name, v in (("gpus_per_node", gpus_per_node), ("intra", intra), ("inter", inter)):
        if v is None:
            raise SolverInputError(f"give {name} (or node=)", param=name)
    S, g, m = _num(size), gpus_per_node, nodes
    _pos("size", S)
    _pos("intra", intra)
    _pos("inter", inter)
    rs = r.step("T_rs = (g−1)/g · S / β_intra", f"({g}−1)/{g} · {fmt(S)} / {fmt(intra)}",
                Fraction(g - 1, g) * S / _num(intra), "s")
    ar = r.step("T_ar = 2(m−1)/m · (S/g) / β_inter", f"2·({m}−1)/{m} · ({fmt(S)}/{g}) / {fmt(inter)}",
                Fraction(2 * (m - 1), m) * S / g / _num(inter), "s")
    ag = r.step("T_ag = (g−1)/g · S / β_intra", f"({g}−1)/{g} · {fmt(S)} / {fmt(intra)}",
                Fraction(g - 1, g) * S / _num(intra), "s")
    t = r.step("T = T_rs + T_ar + T_ag", f"{fmt(rs)} + {fmt(ar)} + {fmt(ag)}", rs + ar + ag, "s")
    n = g * m
    flat = r.step("flat ring: 2(n−1)/n · S / β_inter", f"2·({n}−1)/{n} · {fmt(S)} / {fmt(inter)}",
                  Fraction(2 * (n - 1), n) * S / _num(inter), "s")
    r.answer = t
    r.breakdown.update(time_s=t, intra_time=rs + ag, inter_time=ar, flat_time=flat)
    return r


# ---- training memory by recipe -----------------------------------------------------------------

_COOKBOOK = ("EleutherAI cookbook, calc/calc_transformer_mem.py (optimizer bytes per parameter: mixed-precision Adam "
             "4 + 4 + 4 = 12, SGD 4 + 4 = 8, 8-bit Adam 6)")
RECIPE = Convention("recipe", "What each parameter costs in training (model states: no activations).", {
    "bf16-adam": Choice("bf16 weights 2 + fp32 Adam moments 4 + 4 = 10 bytes (gradients not kept whole, no fp32 "
                        "master)", "Austin et al., How to Scale Your Model (2025), Part 5 'Training'"),
    "mixed-fp32-master": Choice("fp16/bf16 weights 2 + gradients 2 + fp32 master 4 + momentum 4 + variance 4 = 16 "
                                "bytes", "Rajbhandari et al. 2020 (ZeRO), §3.1"),
    "fp32-grads": Choice("bf16 weights 2 + fp32 gradients 4 + fp32 master, momentum and variance 12 = 18 bytes (the "
                         "cookbook's defaults: gradients kept in fp32 against overflow)", _COOKBOOK),
    "fp32-adam": Choice("fp32 weights 4 + gradients 4 + momentum 4 + variance 4 = 16 bytes",
                        "Kingma & Ba 2015 (Adam's two moments)"),
    "adam-8bit": Choice("bf16 weights 2 + gradients 2 + optimizer 6 (fp32 master 4 + 8-bit moments 1 + 1) = 10 bytes",
                        "Dettmers et al. 2022 (8-bit optimizers); " + _COOKBOOK),
    "sgd-momentum": Choice("bf16 weights 2 + gradients 2 + fp32 master 4 + momentum 4 = 12 bytes", _COOKBOOK)},
    "mixed-fp32-master")

_KORTHIKANTI = ("Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models' (Eq. 1 and "
                "§4: 16-bit activations, 1-byte dropout masks, no tensor or sequence parallelism)")
CHECKPOINTING = Convention("checkpointing", "Which activations each layer keeps for the backward pass (with seq=, "
                           "micro_batch=, d_model=, heads=, layers=).", {
    "none": Choice("every activation kept: s·b·h·(34 + 5·a·s/h) bytes a layer", _KORTHIKANTI + ", Eq. 1"),
    "selective": Choice("the attention core (QKᵀ, softmax, dropout, ·V) recomputed: 34·s·b·h bytes a layer",
                        _KORTHIKANTI + ", §4.2 'Selective Activation Recomputation'"),
    "full": Choice("every layer's input only (the whole layer recomputed): 2·s·b·h bytes a layer",
                   _KORTHIKANTI + ", §4 (full recomputation, 'store the input activations of each layer')")}, "none")

_RECIPE_BYTES = {"bf16-adam": (2, 0, 0, 8), "mixed-fp32-master": (2, 2, 4, 8), "fp32-grads": (2, 4, 4, 8),
                 "fp32-adam": (4, 4, 0, 8), "adam-8bit": (2, 2, 4, 2), "sgd-momentum": (2, 2, 4, 4)}


@formula("train_memory", "Training memory of a named recipe: bytes per parameter (weights, gradients, master copy, "
         "optimizer states), the total, and spread over chips (ZeRO-3 / FSDP).",
         (Input("params", "N: parameters", kind="count", integer=True, minimum=1, aliases=("N", "n_params")),
          Input("chips", "chips the states are sharded over (ZeRO-3 / FSDP; 1 = none)", kind="count", integer=True,
                default=1, minimum=1, aliases=("gpus",)),
          Input("hbm", "HBM bytes per chip, for the largest model that fits", unit="B", default=None),
          Input("seq", "s: tokens per sequence, for the activations", kind="count", integer=True, default=None,
                minimum=1, binary_k=True, aliases=("s",)),
          Input("micro_batch", "b: sequences per chip in one forward pass, for the activations", kind="count",
                integer=True, default=1, minimum=1, aliases=("b",)),
          Input("d_model", "h: the model width, for the activations", kind="count", integer=True, default=None,
                minimum=1, aliases=("h",)),
          Input("heads", "a: attention heads, for the activations", kind="count", integer=True, default=None,
                minimum=1, aliases=("a", "n_heads")),
          Input("layers", "L: transformer layers, for the activations", kind="count", integer=True, default=None,
                minimum=1, aliases=("L", "n_layers"))),
         (Output("bytes", "B", "N · bytes per parameter", key="total_bytes"),
          Output("per_param", "B", "bytes per parameter"),
          Output("per_chip", "B", "total / chips"),
          Output("max_params", "", "the most parameters whose states fit in chips · HBM", ("hbm",)),
          Output("activations", "B", "L layers' activations of one chip's micro-batch, by the checkpointing policy",
                 ("seq", "d_model", "heads", "layers"), key="activation_bytes"),
          Output("activations_per_layer", "B", "one layer's, by the policy",
                 ("seq", "d_model", "heads"), key="activation_per_layer_bytes"),
          Output("per_chip_with_activations", "B", "states per chip + activations",
                 ("seq", "d_model", "heads", "layers"), key="per_chip_with_activations_bytes")),
         conventions=(RECIPE, CHECKPOINTING), solve="train-memory",
         source="each recipe's source (--recipe help); " + _KORTHIKANTI)
def _train_memory(params, chips, hbm, seq=None, micro_batch=1, d_model=None, heads=None, layers=None,
                  recipe="mixed-fp32-master", checkpointing="none"):
    w, g, m, o = _RECIPE_BYTES[recipe]
    r = Result(answer=None, unit="B", convention={"recipe": recipe, "source": RECIPE.choices[recipe].source,
                                                   "counts": "model states only: no activations or buffers"})
    per = r.step("bytes/param = weights + gradients + master + optimizer", f"{w} + {g} + {m} + {o}", w + g + m + o, "B")
    total = r.step("total = N · bytes/param", f"{fmt(params)} · {per}", params * per, "B")
    r.answer = total
    r.breakdown.update(total_bytes=total, per_param=per, weights_bytes=params * w, gradients_bytes=params * g,
                       master_bytes=params * m, optimizer_bytes=params * o)
    r.breakdown["per_chip"] = r.step("per chip = total / chips", f"{fmt(total)} / {chips}", Fraction(total, chips),
                                     "B")
    if hbm is not None:
        _pos("hbm", hbm)
        r.breakdown["max_params"] = r.step("N_max = chips · HBM / bytes per param", f"{chips} · {fmt(hbm)} / {per}",
                                           chips * _num(hbm) / per)
    given = [v is not None for v in (seq, d_model, heads)]
    if any(given) and not all(given):
        missing = [n for n, v in (("seq", seq), ("d_model", d_model), ("heads", heads)) if v is None][0]
        raise SolverInputError("the activations need seq, d_model and heads (and layers for the total)",
                               param=missing)
    if all(given):
        _activation_recipe(r, seq, micro_batch, d_model, heads, layers, checkpointing)
    return r


def _activation_recipe(r: Result, s, b, h, a, L, policy):
    """Korthikanti et al.'s bytes a layer under the policy, per chip (its micro-batch), added to the states."""
    r.convention.update(checkpointing=policy, activations=CHECKPOINTING.choices[policy].source + "; the score "
                        "matrix term 5·a·s²·b is the softmax output 2, its dropout mask 1 and the dropout output 2 "
                        "bytes an element")
    if policy == "none":
        per = r.step("activations a layer = s·b·h·(34 + 5·a·s/h) = 34·s·b·h + 5·a·s²·b",
                     f"34·{s}·{b}·{h} + 5·{a}·{s}²·{b}", 34 * s * b * h + 5 * a * s * s * b, "B")
    elif policy == "selective":
        per = r.step("activations a layer = 34·s·b·h (the attention core recomputed)", f"34·{s}·{b}·{h}",
                     34 * s * b * h, "B")
    else:
        per = r.step("activations a layer = 2·s·b·h (the layer's 16-bit input)", f"2·{s}·{b}·{h}", 2 * s * b * h, "B")
    r.breakdown["activation_per_layer_bytes"] = per
    if L is not None:
        total = r.step("activations = L · a layer's", f"{L} · {fmt(per)}", L * per, "B")
        r.breakdown["activation_bytes"] = total
        r.breakdown["per_chip_with_activations_bytes"] = r.step(
            "per chip = states per chip + activations", f"{fmt(r.breakdown['per_chip'])} + {fmt(total)}",
            r.breakdown["per_chip"] + total, "B")


# ---- a chip's figures, as the preset stores them or as a text prints them ---------------------------------

#: Austin et al. Part 2's table ("Here are some specific numbers for our chips"; ICI per link): HBM bytes, HBM
#: bytes/s, bf16 and int8 FLOP/s, ICI bytes/s one way per link, chips per host; PCIe 1.5e10 B/s per chip, DCN
#: 2.5e10 B/s per host (read at github.com/jax-ml/scaling-book 0819a7d, tpus.md)
HSM_TPUS = {"tpu-v4": (32e9, 1.2e12, 2.75e14, 2.75e14, 4.5e10, 4), "tpu-v5p": (96e9, 2.8e12, 4.59e14, 9.18e14, 9e10, 4),
            "tpu-v5e": (16e9, 8.1e11, 1.97e14, 3.94e14, 4.5e10, 8), "tpu-v6e": (32e9, 1.6e12, 9.2e14, 1.84e15, 9e10, 8)}
HSM_PCIE, HSM_DCN = 1.5e10, 2.5e10

FIGURES = Convention("figures", "Whose figures for the chip.", {
    "preset": Choice("the preset's: the vendor's printed figures, dense peaks, per-direction link (qkv hw show NAME)",
                     "each preset's source and citations (solver.systems.chips)"),
    "hsm": Choice("the figures table of How to Scale Your Model Part 2 (TPUs only): HBM in GB, ICI per link one way",
                  TPUS + ", tables of chip and interconnect figures")}, "preset")


@formula("chip_figures", "A chip's figures by name, as its preset stores them or as a text prints them: the dense "
         "and the with-sparsity peak, HBM, its bandwidth, the link one way and both ways, and the ports' total.",
         (_CHIP, Input("dtype", "the peak's dtype", kind="dtype", default="bf16")),
         (Output("peak", "FLOP/s", "dense peak"), Output("peak_sparse", "FLOP/s", "the peak NVIDIA prints, with 2:4 "
                                                                                  "sparsity (2 × dense; TPUs: none)"),
          Output("hbm", "B", "HBM capacity"), Output("hbm_bandwidth", "B/s", "HBM bytes/s"),
          Output("link", "B/s", "one link (TPU) or the GPU's fabric, one direction"),
          Output("link_bidi", "B/s", "the same, both directions added"),
          Output("link_chip", "B/s", "every port, both directions (the per-chip figure vendors print)"),
          Output("ports", "", "ICI ports (TPU) or 1 (a GPU's switch fabric counted whole)"),
          Output("chips_per_host", "", "chips per host (the text's TPU table)")),
         conventions=(FIGURES,), solve="chip-figures", source="the chip presets; " + TPUS)
def _chip_figures_formula(chip, dtype, figures="preset"):
    import re

    from solver.systems.chips import get_hardware

    if chip is None:
        raise SolverInputError("give a chip preset (qkv hw list)", param="chip")
    hw = get_hardware(chip) if isinstance(chip, str) else chip
    m = re.search(r"(\d+) (?:links|ports)", hw.link_name)
    ports = int(m.group(1)) if m and hw.vendor == "Google" else 1
    r = Result(answer=None, unit="FLOP/s", convention={"figures": figures, "chip": hw.name})
    if figures == "hsm":
        if hw.name not in HSM_TPUS:
            raise SolverInputError(f"the text's table covers {', '.join(HSM_TPUS)}, not {hw.name}", param="chip")
        hbm, bw, bf16, int8, link, host = HSM_TPUS[hw.name]
        peak = {"bf16": bf16, "int8": int8}.get(dtype)
        if peak is None:
            raise SolverInputError(f"the text gives bf16 and int8 peaks, not {dtype}", param="dtype")
        r.convention["source"] = FIGURES.choices["hsm"].source
        r.breakdown["chips_per_host"] = host
    else:
        hbm, bw, link, peak = hw.hbm_bytes, hw.hbm_bandwidth, hw.link_bandwidth, hw.peak(dtype)
        r.convention["source"] = hw.source
    r.breakdown.update(peak=peak, hbm=hbm, hbm_bandwidth=bw, link=link, ports=ports)
    if hw.vendor == "NVIDIA":
        r.breakdown["peak_sparse"] = r.step("with sparsity = 2 × dense (NVIDIA's datasheets)", f"2 × {fmt(peak)}",
                                            2 * peak, "FLOP/s")
    r.breakdown["link_bidi"] = r.step("both directions = 2 × one", f"2 × {fmt(link)}", 2 * link, "B/s")
    r.breakdown["link_chip"] = r.step("per chip = ports × 2 × one", f"{ports} × 2 × {fmt(link)}", ports * 2 * link,
                                      "B/s")
    r.answer = peak
    return r


FORMULAS = (_chip_figures_formula.formula, _gpu_peak.formula, _warps_resident.formula, _elementwise.formula, _reduction.formula, _torus.formula, _pod.formula,
            _two_level.formula, _train_memory.formula)
