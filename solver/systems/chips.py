"""Accelerator presets as data, and the figures one computation takes from them (:class:`Chip`).

Conventions of the presets (read before quoting a figure):

- ``peak_flops`` is the **dense** peak in FLOP/s per chip (2 FLOPs per multiply-add), per dtype.
  NVIDIA's datasheets print the tensor-core figures *with 2:4 structured sparsity*, which are
  twice the dense ones (the footnote reads "shown with sparsity; specifications 1/2 lower
  without sparsity"); every NVIDIA tensor figure below is that printed number halved. Quoting
  the sparse number as the peak is a classic mistake (it halves every MFU you compute).
  Google's Cloud TPU pages print dense figures (TPUs have no sparsity mode).
- ``hbm_bytes`` is the capacity as the vendor prints it: NVIDIA's "80GB" is taken as 80·10^9
  bytes, Google's "32 GiB" as 32·2^30. ``hbm_bandwidth`` is in bytes/s (10^12 = 1 TB/s).
- ``hbm_device_bytes`` is what the device itself reports (``nvidia-smi --query-gpu=memory.total``,
  in MiB; ``rocm-smi --showmeminfo vram`` for AMD, in bytes), where a public figure is known: the "80GB" H100 reports 81,559 MiB =
  85,520,809,984 bytes, neither 80·10^9 nor 80·2^30. :meth:`Hardware.hbm` gives either figure by
  name ("datasheet" or "device"); every statement says which one it uses.
- ``link_bandwidth`` is the chip-to-chip bandwidth **per direction** in bytes/s, the β a ring
  step of :mod:`solver.systems.collectives` divides by, and it equals the ``per_direction`` of the
  interconnect preset named in ``link`` (:mod:`solver.systems.interconnect`), so ``--hw NAME``
  and ``--link LINK`` of the same machine give the same answer. ``link_printed`` is the figure
  as the vendor prints it (bidirectional totals: NVLink 4 "900 GB/s" = 450 GB/s each way).
  Its scope follows the fabric: a GPU behind a switch (NVLink/NVSwitch) pushes all its links
  into the switch, so the per-GPU total counts; a TPU ring runs along one axis of the torus,
  one ICI port each way, so the figure is one port's (the per-chip bidirectional figure ÷
  ports ÷ 2); an MI300X in an 8-GPU platform is fully connected by 7 Infinity Fabric links,
  which RCCL's rings use together, so the per-GPU total counts.
- ``citations`` (the B200, GB200, MI300X and TPU v6e presets) record, figure by figure, the
  vendor's primary statement as printed: the text, the page, the chips it covers, whether it is
  printed with sparsity, how a capacity's unit is read (GB or GiB), and how the printed text was
  checked (read in the vendor's own document, or only through verbatim copies of it). ``qkv hw
  show NAME`` prints them; ``tests/solver/systems/test_chips.py`` pins every figure to them.

Every formula that uses these figures returns a :class:`solver.result.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.errors import SolverInputError

T = 10**12  # tera
G = 10**9  # giga


@dataclass(frozen=True)
class Citation:
    """One stored figure as its vendor prints it, where it is printed, and how the stored figure follows.

    ``value`` is the printed number in base units (FLOP/s, bytes, bytes/s) over the ``chips`` the
    printed figure covers (8 for an HGX board, 72 for an NVL72 rack, 2 for a GB200 superchip);
    ``sparse`` marks a figure printed with 2:4 structured sparsity (dense = half); a link figure
    printed as both directions added has ``directions=2``, one spread over ports ``ports=N``. So
    the stored figure is :meth:`stored`. ``unit`` says how a capacity is read (GB = 10^9 bytes,
    GiB = 2^30), ``seen`` how the printed text was checked: read in the vendor's own page or
    document, or in a verbatim copy of it (named), or that no primary statement was found;
    ``note`` what else the source says about the figure (another revision, a second table).
    """

    figures: tuple[str, ...]  # "peak_flops.bf16", "hbm_bytes", "hbm_bandwidth", "link_bandwidth"
    printed: str
    value: float
    url: str
    chips: int = 1
    sparse: bool = False
    directions: int = 1
    ports: int = 1
    unit: str = ""
    seen: str = ""
    note: str = ""  # what else the source says about this figure

    def stored(self) -> float:
        """The per-chip, dense, per-direction figure the printed one gives."""
        return self.value / self.chips / (2 if self.sparse else 1) / self.directions / self.ports

    def as_json(self) -> dict:
        return {"figures": list(self.figures), "printed": self.printed, "value": self.value, "url": self.url,
                "chips": self.chips, "sparse": self.sparse, "directions": self.directions, "ports": self.ports,
                "unit": self.unit, "seen": self.seen, "note": self.note, "stored": self.stored()}


@dataclass(frozen=True)
class Hardware:
    """One accelerator: dense peak FLOP/s per dtype, HBM capacity and bandwidth, link bandwidth."""

    name: str
    vendor: str
    peak_flops: dict[str, float]  # dense FLOP/s per chip, per dtype
    hbm_bytes: int
    hbm_bandwidth: float  # bytes/s per chip
    link_bandwidth: float  # bytes/s per direction (what a ring step divides by)
    link_name: str
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()
    hbm_device_bytes: int | None = None  # memory.total as nvidia-smi reports it (MiB · 2^20)
    hbm_device_source: str = ""
    link: str = ""  # the interconnect preset (solver.systems.interconnect) with the same per-direction figure
    link_printed: str = ""  # the link figure as the vendor prints it
    citations: tuple[Citation, ...] = ()  # each figure's primary source, as printed (the newer presets)

    def hbm(self, figure: str = "datasheet") -> int:
        """HBM bytes per chip: the vendor's "datasheet" figure or what the "device" reports."""
        if figure == "datasheet":
            return self.hbm_bytes
        if figure == "device":
            if self.hbm_device_bytes is None:
                raise SolverInputError(f"no device-reported HBM figure is known for {self.name}; "
                                       "use the datasheet figure", param="hbm_figure")
            return self.hbm_device_bytes
        raise SolverInputError(f"must be datasheet or device (got {figure!r})", param="hbm_figure")

    def figure(self, name: str) -> float:
        """A stored figure by the name a :class:`Citation` gives it ("peak_flops.bf16", "hbm_bytes", ...)."""
        if name.startswith("peak_flops."):
            return self.peak_flops[name.split(".", 1)[1]]
        return float(getattr(self, name))

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s at ``dtype`` (fp16 falls back to bf16 and back)."""
        from solver.units import DTYPE_ALIASES

        name = DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
        if name in self.peak_flops:
            return self.peak_flops[name]
        raise SolverInputError(
            f"{self.name} has no published peak for {dtype}; known: {', '.join(self.peak_flops)} "
            "(or give --peak-flops)", param="dtype")

    def critical_intensity(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s ÷ HBM bytes/s: the FLOPs per byte above which a kernel is compute-bound."""
        return self.peak(dtype) / self.hbm_bandwidth


# Where the newer presets' figures are printed (see each preset's citations).
URL_HGX = "https://www.nvidia.com/en-us/data-center/hgx/"
URL_DGX_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
URL_NVL72 = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
URL_GTC24 = "https://nvidianews.nvidia.com/news/nvidia-blackwell-platform-arrives-to-power-a-new-era-of-computing"
URL_NVL72_BLOG = ("https://developer.nvidia.com/blog/achieving-peak-system-and-workload-efficiency-on-nvidia-"
                  "gb200-nvl72-with-slurm-block-scheduling/")
URL_CDNA3 = ("https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
             "amd-cdna-3-white-paper.pdf")
URL_ROCM_MI300 = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html"
URL_V6E = "https://docs.cloud.google.com/tpu/docs/v6e"
SEEN_NVIDIA = ("NVIDIA's page itself is not held in the reference library; the printed text is as quoted verbatim, "
               "with the URL, by independent repository transcriptions of the page's table (secondary copies)")
SEEN_AMD = ("read in a copy of AMD's white paper (URL Source: the amd.com PDF, published 2025-04-09) and in AMD's "
            "ROCm repository (docs/conceptual/gpu-arch/mi300.md)")
SEEN_GOOGLE = "read in the page itself (docs.cloud.google.com/tpu/docs/v6e.md.txt) in the reference library"

# Each preset: figures from the source named beside it. NVIDIA tensor figures are the
# datasheet's sparse numbers halved (dense); fp32/fp64 rows have no sparsity and are as printed.
PRESETS: dict[str, Hardware] = {
    "a100-40gb": Hardware(
        name="a100-40gb", vendor="NVIDIA",
        hbm_device_bytes=40_960 * 2**20, hbm_device_source="nvidia-smi memory.total as listed in modal-labs/modal-client PR #2797 (2025-01-23)", aliases=("a100",),
        # datasheet (sparse, printed): TF32 312, BF16/FP16 624, INT8 1248 → dense = half
        peak_flops={"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T,
                    "fp16": 312 * T, "int8": 624 * T},
        hbm_bytes=40 * G, hbm_bandwidth=1555 * G, link_bandwidth=600 * G / 2, link_name="NVLink 3",
        link="nvlink3", link_printed="NVLink 600 GB/s (bidirectional, per GPU)",
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved. "
              "fp64 is the FP64 Tensor Core figure (vector FP64 is 9.7 TFLOP/s).",
    ),
    "a100-80gb": Hardware(
        name="a100-80gb", vendor="NVIDIA",
        hbm_device_bytes=81_920 * 2**20, hbm_device_source="nvidia-smi memory.total as listed in modal-labs/modal-client PR #2797 (2025-01-23)",
        # same chip as the 40GB part; HBM2e 80GB at 2,039 GB/s (SXM)
        peak_flops={"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T,
                    "fp16": 312 * T, "int8": 624 * T},
        hbm_bytes=80 * G, hbm_bandwidth=2039 * G, link_bandwidth=600 * G / 2, link_name="NVLink 3",
        link="nvlink3", link_printed="NVLink 600 GB/s (bidirectional, per GPU)",
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "h100-sxm": Hardware(
        name="h100-sxm", vendor="NVIDIA",
        hbm_device_bytes=81_559 * 2**20, hbm_device_source="nvidia-smi memory.total as listed in modal-labs/modal-client PR #2797 (2025-01-23); issue 11", aliases=("h100",),
        # datasheet (sparse, printed): TF32 989, BF16/FP16 1,979, FP8/INT8 3,958 → dense = half
        peak_flops={"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T,
                    "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T},
        hbm_bytes=80 * G, hbm_bandwidth=3350 * G, link_bandwidth=900 * G / 2, link_name="NVLink 4",
        link="nvlink4", link_printed="NVLink 900 GB/s (bidirectional, per GPU)",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved "
              "(the Hopper whitepaper prints 989.4 dense BF16 at its boost clock; 989.5 = 1,979/2).",
    ),
    "h100-pcie": Hardware(
        name="h100-pcie", vendor="NVIDIA",
        # datasheet (sparse, printed): TF32 756, BF16/FP16 1,513, FP8/INT8 3,026 → dense = half
        peak_flops={"fp64": 51 * T, "fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T,
                    "fp16": 756.5 * T, "fp8": 1513 * T, "int8": 1513 * T},
        hbm_bytes=80 * G, hbm_bandwidth=2000 * G, link_bandwidth=600 * G / 2,
        link_name="NVLink bridge (PCIe Gen5: 128 GB/s)", link="nvlink-bridge-h100",
        link_printed="NVLink bridge 600 GB/s (bidirectional, per GPU)",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "h200": Hardware(
        name="h200", vendor="NVIDIA",
        hbm_device_bytes=143_771 * 2**20, hbm_device_source="nvidia-smi memory.total of H200 SXM boards in public nvidia-smi transcripts (143771MiB)", aliases=("h200-sxm",),
        # same compute as H100 SXM (datasheet BF16 1,979 with sparsity); HBM3e 141GB at 4.8 TB/s
        peak_flops={"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T,
                    "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T},
        hbm_bytes=141 * G, hbm_bandwidth=4800 * G, link_bandwidth=900 * G / 2, link_name="NVLink 4",
        link="nvlink4", link_printed="NVLink 900 GB/s (bidirectional, per GPU)",
        source="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "tpu-v4": Hardware(
        name="tpu-v4", vendor="Google",
        # Cloud TPU v4 page: 275 TFLOPs per chip (bf16 or int8), HBM2 32 GiB at 1200 GBps
        peak_flops={"bf16": 275 * T, "int8": 275 * T},
        hbm_bytes=32 * 2**30, hbm_bandwidth=1200 * G, link_bandwidth=300 * G / 6 / 2, link_name="ICI (6 links)",
        link="ici-v4", link_printed="ICI 2,400 Gbps = 300 GB/s per chip (6 ports)",
        source="Google Cloud TPU documentation, 'TPU v4' system architecture",
        notes="Dense (TPUs have no sparsity mode). ICI 2,400 Gbps per chip (= 300 GB/s) is the "
              "figure of the older Cloud TPU system-architecture table; the current v4 page omits it. "
              "Read as bidirectional over 6 ports: one port carries 300/6/2 = 25 GB/s each way.",
    ),
    "tpu-v5e": Hardware(
        name="tpu-v5e", vendor="Google",
        # Cloud TPU v5e page: 197 TFLOPs bf16, 394 TOPs int8, 16 GB HBM2 at 819 GBps, ICI 400 GBps
        peak_flops={"bf16": 197 * T, "int8": 394 * T},
        hbm_bytes=16 * G, hbm_bandwidth=819 * G, link_bandwidth=400 * G / 4 / 2, link_name="ICI (4 ports)",
        link="ici-v5e", link_printed="Bidirectional ICI bandwidth per chip 400 GBps, 4 ICI ports per chip",
        source="Google Cloud TPU documentation, 'TPU v5e' system architecture",
        notes="Dense. The page prints int8 as 393 or 394 TOPs in different revisions (2 × 197 = 394); "
              "ICI: the page's bidirectional per-chip 400 GBps over 4 ports is 50 GB/s per port each way, "
              "what a ring along one torus axis uses (older revisions: 1,600 Gbps).",
    ),
    "tpu-v5p": Hardware(
        name="tpu-v5p", vendor="Google",
        # Cloud TPU v5p page (current table): 459 TFLOPs bf16, HBM 95 GiB per chip at 2765 GBps,
        # bidirectional ICI bandwidth per chip 1200 GBps; 3D torus = 6 ports per chip
        peak_flops={"bf16": 459 * T, "int8": 918 * T},
        hbm_bytes=95 * 2**30, hbm_bandwidth=2765 * G, link_bandwidth=1200 * G / 6 / 2, link_name="ICI (6 ports)",
        link="ici-v5p", link_printed="Bidirectional ICI bandwidth per chip 1200 GBps (3D torus, 6 ports)",
        source="Google Cloud TPU documentation, 'TPU v5p' (cloud.google.com/tpu/docs/v5p, specification table)",
        notes="Dense. int8 = 2 × bf16 (918 TOPs, Google's v5p announcement). The page's HBM capacity is "
              "'95 GiB' (older revisions: '95GB'); ICI 1200 GBps bidirectional per chip (older revisions: "
              "4,800 Gbps = 600 GB/s, half of it) is 100 GB/s per port each way.",
    ),
    "b200": Hardware(
        name="b200", vendor="NVIDIA", aliases=("b200-sxm", "hgx-b200"),
        # HGX B200 (8 GPUs, with sparsity): FP4 144 | 72 PF (sparse | dense), FP8/FP6 72 PF, INT8 72 POPS,
        # FP16/BF16 36 PF, TF32 18 PF; FP64 296 TF. DGX B200: 1,440 GB, 64 TB/s. Per GPU: ÷ 8 (÷ 2 if sparse).
        peak_flops={"fp64": 37 * T, "tf32": 1125 * T, "bf16": 2250 * T, "fp16": 2250 * T,
                    "fp8": 4500 * T, "int8": 4500 * T, "fp4": 9000 * T},
        hbm_bytes=180 * G, hbm_bandwidth=8000 * G, link_bandwidth=1800 * G / 2, link_name="NVLink 5",
        link="nvlink5", link_printed="NVLink GPU-to-GPU 1.8 TB/s (bidirectional, per GPU)",
        source=f"NVIDIA HGX platform page, Blackwell table, HGX B200 column ({URL_HGX}; 8-GPU totals; footnote "
               "'Specification in Sparse. Dense is ½ sparse spec shown.') for compute and NVLink; NVIDIA DGX B200 "
               f"page ({URL_DGX_B200}: '1,440GB total GPU memory', '64TB/s HBM3e bandwidth') for HBM; per GPU "
               "= ÷ 8. Neither page is held in the reference library: the printed figures are checked against "
               "verbatim copies of them (see citations).",
        notes="Dense tensor figures: the with-sparsity totals ÷ 8 GPUs ÷ 2; FP4 is printed dense beside sparse "
              "('144 PFLOPS | 72 PFLOPS', footnote 'Specification in Sparse | Dense'), so 72 PF ÷ 8; fp64 as printed "
              "÷ 8 (no sparsity). Capacity in GB (10^9). NVIDIA's pages disagree on the memory: the Blackwell "
              "datasheet (as transcribed by one repository copy) prints 'Up to 192 GB HBM3e | 7.7 TB/s' per HGX B200 GPU and TF32 '1.1/2.2 petaFLOPS', "
              "the HGX page 'Total Memory 1.4 TB'; this preset keeps the DGX B200 totals (180 GB = MLPerf's "
              "'B200-SXM-180GB', 8 TB/s) and the HGX page's compute totals (TF32 18 PF ÷ 8 ÷ 2 = 1,125).",
        citations=(
            Citation(("peak_flops.bf16", "peak_flops.fp16"), "FP16/BF16 Tensor Core 36 PFLOPS", 36e15, URL_HGX,
                     chips=8, sparse=True, seen=SEEN_NVIDIA),
            Citation(("peak_flops.fp8",), "FP8/FP6 Tensor Core 72 PFLOPS", 72e15, URL_HGX, chips=8, sparse=True,
                     seen=SEEN_NVIDIA, note="DGX B200 page: '72 petaFLOPS training and 144 petaFLOPS inference' (FP8 and FP4, sparse, 8 GPUs)"),
            Citation(("peak_flops.int8",), "INT8 Tensor Core 72 POPS", 72e15, URL_HGX, chips=8, sparse=True,
                     seen="NVIDIA's page itself is not held in the reference library; this row is quoted by one "
                          "repository transcription of the HGX table only"),
            Citation(("peak_flops.fp4",), "FP4 Tensor Core 144 PFLOPS | 72 PFLOPS (Sparse | Dense)", 72e15, URL_HGX,
                     chips=8, seen=SEEN_NVIDIA, note="the dense figure is printed, so not halved"),
            Citation(("peak_flops.tf32",), "TF32 Tensor Core 18 PFLOPS", 18e15, URL_HGX, chips=8, sparse=True,
                     seen=SEEN_NVIDIA),
            Citation(("peak_flops.fp64",), "FP64/FP64 Tensor Core 296 TFLOPS", 296e12, URL_HGX, chips=8,
                     seen=SEEN_NVIDIA, note="no sparsity mode"),
            Citation(("hbm_bytes",), "GPU Memory 1,440GB total GPU memory", 1440e9, URL_DGX_B200, chips=8,
                     unit="GB (10^9 bytes)", seen=SEEN_NVIDIA),
            Citation(("hbm_bandwidth",), "64TB/s HBM3e bandwidth", 64e12, URL_DGX_B200, chips=8, seen=SEEN_NVIDIA),
            Citation(("link_bandwidth",), "NVLink GPU-to-GPU Bandwidth 1.8 TB/s; 'Fifth-generation NVLink delivers "
                     "1.8TB/s bidirectional throughput per GPU'", 1.8e12, URL_HGX, directions=2,
                     seen=SEEN_NVIDIA, note="'bidirectional' in NVIDIA's GTC 2024 press release (" + URL_GTC24 + ")"),
        ),
    ),
    "gb200": Hardware(
        name="gb200", vendor="NVIDIA", aliases=("gb200-nvl72", "b200-gb200"),
        # GB200 NVL72 page (72 GPUs, with sparsity): NVFP4 1,440 | 720 PF (sparse | dense), FP8/FP6 720 PF,
        # INT8 720 POPS, FP16/BF16 360 PF, TF32 180 PF; FP64 2,880 TF; 13.4 TB HBM3E | 576 TB/s; NVLink 130 TB/s.
        # Superchip (2 GPUs): 372 GB HBM3E | 16 TB/s, NVLink 3.6 TB/s, FP64 80 TF. Per GPU: ÷ 72 (÷ 2 if sparse).
        peak_flops={"fp64": 40 * T, "tf32": 1250 * T, "bf16": 2500 * T, "fp16": 2500 * T,
                    "fp8": 5000 * T, "int8": 5000 * T, "fp4": 10000 * T},
        hbm_bytes=186 * G, hbm_bandwidth=8000 * G, link_bandwidth=1800 * G / 2, link_name="NVLink 5",
        link="nvlink5", link_printed="NVLink 3.6 TB/s per 2-GPU superchip (130 TB/s per 72 GPUs) = 1.8 TB/s "
                                     "(bidirectional, per GPU)",
        source=f"NVIDIA GB200 NVL72 page, specification table ({URL_NVL72}; columns 'GB200 NVL72' = 72 GPUs and "
               "'GB200 Grace Blackwell Superchip' = 2 GPUs; footnote 'Specification in sparse. Dense is one-half "
               "sparse spec shown.'); per GPU = rack ÷ 72 or superchip ÷ 2. The page is not held in the reference "
               "library: the printed figures are checked against verbatim copies of it (see citations).",
        notes="One Blackwell GPU of a GB200 superchip (1,200 W class; more than an HGX B200's 2,250 dense BF16). "
              "Dense tensor figures: the with-sparsity totals ÷ 72 ÷ 2; NVFP4 is printed dense beside sparse "
              "('1,440 | 720 PFLOPS'), so 720 ÷ 72. HBM in GB (10^9): 372 GB per superchip = 186 GB per GPU "
              "(13.4 TB ÷ 72 = 186.1). fp64 is the current page's 2,880 TFLOPS ÷ 72 = 40 (superchip 80 ÷ 2); an "
              "earlier revision printed 'FP64 Tensor Core 3,240 TFLOPS' (45 per GPU) beside 'Up to 13.5 TB HBM3e' "
              "and 'Up to 384 GB' per superchip.",
        citations=(
            Citation(("peak_flops.bf16", "peak_flops.fp16"), "FP16/BF16 Tensor Core² 360 PFLOPS", 360e15, URL_NVL72,
                     chips=72, sparse=True, seen=SEEN_NVIDIA, note="superchip: 10 PFLOPS (÷ 2 GPUs ÷ 2 = 2.5 PF)"),
            Citation(("peak_flops.fp8",), "FP8/FP6 Tensor Core² 720 PFLOPS", 720e15, URL_NVL72, chips=72,
                     sparse=True, seen=SEEN_NVIDIA),
            Citation(("peak_flops.int8",), "INT8 Tensor Core² 720 POPS", 720e15, URL_NVL72, chips=72, sparse=True,
                     seen=SEEN_NVIDIA),
            Citation(("peak_flops.fp4",), "NVFP4 Tensor Core 1,440 | 720 PFLOPS (sparse | dense)", 720e15,
                     URL_NVL72, chips=72, seen=SEEN_NVIDIA, note="the dense figure is printed, so not halved"),
            Citation(("peak_flops.tf32",), "TF32 Tensor Core² 180 PFLOPS", 180e15, URL_NVL72, chips=72,
                     sparse=True, seen=SEEN_NVIDIA),
            Citation(("peak_flops.fp64",), "FP64 / FP64 Tensor Core 2,880 TFLOPS", 2880e12, URL_NVL72, chips=72,
                     seen=SEEN_NVIDIA, note="superchip: 80 TFLOPS; an earlier revision printed 3,240 | 90"),
            Citation(("hbm_bytes",), "Superchip GPU Memory | Bandwidth: 372 GB HBM3E | 16 TB/s", 372e9, URL_NVL72,
                     chips=2, unit="GB (10^9 bytes)", seen=SEEN_NVIDIA, note="rack: 13.4 TB HBM3E | 576 TB/s"),
            Citation(("hbm_bandwidth",), "GPU Memory | Bandwidth: 13.4 TB HBM3E | 576 TB/s", 576e12, URL_NVL72,
                     chips=72, seen=SEEN_NVIDIA),
            Citation(("link_bandwidth",), "Superchip NVLink Bandwidth 3.6 TB/s; 'GB200 NVL72 provides 1.8 TB/s "
                     "bidirectional throughput per GPU, for a total of 130 TB/s'", 3.6e12, URL_NVL72, chips=2,
                     directions=2, seen=SEEN_NVIDIA, note="the quoted sentence is NVIDIA's developer blog (" + URL_NVL72_BLOG
                     + ", 2026-05-07), read in a verbatim capture in the reference library"),
        ),
    ),
    "mi300x": Hardware(
        name="mi300x", vendor="AMD", aliases=("mi300", "amd-mi300x"),
        # AMD CDNA 3 white paper, Table 2 (MI300X column), dense | with sparsity: FP16 and BF16 1,307.4 | 2,614.9 TF,
        # FP8 2,614.9 | 5,229.8 TF, INT8 2,614.9 | 5,229.8 TOPs, TF32 653.7 | 1,307.4 TF; FP32 and FP64 matrix
        # 163.4 TF; 192 GB HBM3 at up to 5.3 TB/s; 7 x16 Infinity Fabric links, P2P ring peak aggregate 896 GB/s
        peak_flops={"fp64": 163.4 * T, "fp32": 163.4 * T, "tf32": 653.7 * T, "bf16": 1307.4 * T,
                    "fp16": 1307.4 * T, "fp8": 2614.9 * T, "int8": 2614.9 * T},
        hbm_bytes=192 * G, hbm_bandwidth=5300 * G, link_bandwidth=896 * G / 2, link_name="Infinity Fabric (7 links)",
        hbm_device_bytes=196_288 * 2**20,
        hbm_device_source="rocm-smi --showmeminfo vram on MI300X, 'VRAM Total Memory (B): 205822885888' "
                          "(= 196,288 MiB = 191.7 GiB), the same in three independent public transcripts",
        link="xgmi-mi300x", link_printed="7 x16 Infinity Fabric links; P2P ring peak aggregate I/O bandwidth "
                                         "896 GB/s (8 GPUs) = 7 × 128 GB/s (bidirectional, per GPU)",
        source=f"AMD, 'Introducing AMD CDNA 3 Architecture' white paper, Table 2 ({URL_CDNA3}); AMD ROCm "
               f"documentation, 'AMD Instinct MI300 microarchitecture' ({URL_ROCM_MI300}: peak TFLOPS table, "
               "'theoretical aggregated peak memory bandwidth of the GPU is 5.3 TB per second', 'seven "
               "high-bandwidth, low-latency AMD Infinity Fabric links'). Both read in the reference library.",
        notes="AMD prints dense figures beside the with-sparsity ones ('1,307.4 TF | 2,614.9 TF'); these are "
              "the dense ones. fp64 and fp32 are the matrix figures (vector FP64 81.7 TF). The white paper's "
              "Table 1 prints Matrix TF32 as 490.3 TF, against 653.7 in its Table 2 and in ROCm's table; 653.7 is "
              "kept. Capacity: the data sheet and white paper print '192 GB' (10^9), while ROCm's "
              "hardware-specifications table heads its column 'VRAM (GiB)' with 192, and the device reports "
              "205.8·10^9 bytes (191.7 GiB), more than 192·10^9: the '192' counts 2^30-byte units (8 stacks of "
              "24 GiB). The preset keeps the printed '192 GB' as 10^9, the rule for every preset (NVIDIA's '80GB' "
              "H100 likewise reports 79.6 GiB); --hbm-figure device gives the device's figure. Link: each x16 link runs "
              "at up to 32 Gbps per lane, bi-directional: 16 × 32 Gb/s ÷ 8 = 64 GB/s each way (128 GB/s both "
              "ways, the data sheet's 'Peak Infinity Fabric Link Bandwidth'); 7 links = 896 GB/s, 448 GB/s each "
              "way per GPU, what RCCL's rings over the fully connected 8-GPU platform use.",
        citations=(
            Citation(("peak_flops.bf16",), "BF16 | BF16 (SPARSITY) 1,307.4 TF | 2,614.9 TF", 1307.4e12, URL_CDNA3,
                     seen=SEEN_AMD, note="ROCm: 'Matrix BF16 2048 FLOPS/clock/CU, 1307.4' (304 CU × 2.1 GHz)"),
            Citation(("peak_flops.fp16",), "FP16 | FP16 (SPARSITY) 1,307.4 TF | 2,614.9", 1307.4e12, URL_CDNA3,
                     seen=SEEN_AMD),
            Citation(("peak_flops.fp8",), "FP8 | FP8 (SPARSITY) 2,614.9 TF | 5,229.8 TF", 2614.9e12, URL_CDNA3,
                     seen=SEEN_AMD),
            Citation(("peak_flops.int8",), "INT8 | INT8 (SPARSITY) 2,614.9 TOPs | 5,229.8 TOPs", 2614.9e12,
                     URL_CDNA3, seen=SEEN_AMD),
            Citation(("peak_flops.tf32",), "TF32 MATRIX | TF32 (SPARSITY) 653.7 TF | 1,307.4 TF", 653.7e12,
                     URL_CDNA3, seen=SEEN_AMD, note="Table 1 of the same paper: 'Matrix TF32 ... 490.3'"),
            Citation(("peak_flops.fp32",), "FP32 MATRIX 163.4 TF", 163.4e12, URL_CDNA3, seen=SEEN_AMD),
            Citation(("peak_flops.fp64",), "FP64 MATRIX 163.4 TF", 163.4e12, URL_CDNA3,
                     seen=SEEN_AMD, note="FP64 VECTOR 81.7 TF"),
            Citation(("hbm_bytes",), "MEMORY CAPACITY 192 GB HBM3", 192e9, URL_CDNA3, unit="GB (10^9 bytes)",
                     seen=SEEN_AMD, note="ROCm's specifications table: 'VRAM (GiB) 192'"),
            Citation(("hbm_bandwidth",), "MEMORY BANDWIDTH (PEAK) up to 5.3 TB/sec", 5.3e12, URL_CDNA3,
                     seen=SEEN_AMD, note="ROCm: '5.3 TB per second'"),
            Citation(("link_bandwidth",), "7 x16 AMD Infinity Fabric links; P2P RING PEAK AGGREGATE I/O BANDWIDTH "
                     "896 GB/s (8 GPUs); links 'operate at up to 32Gbps', '16-lane, bi-directional'", 896e9,
                     URL_CDNA3, directions=2, seen=SEEN_AMD),
        ),
    ),
    "tpu-v6e": Hardware(
        name="tpu-v6e", vendor="Google", aliases=("trillium", "v6e"),
        # Cloud TPU v6e page: 918 TFLOPs bf16, 1836 TOPs int8, 32 GB HBM at 1638 GBps,
        # bidirectional ICI bandwidth per chip 800 GBps, 4 ICI ports per chip (2D torus)
        peak_flops={"bf16": 918 * T, "int8": 1836 * T},
        hbm_bytes=32 * G, hbm_bandwidth=1638 * G, link_bandwidth=800 * G / 4 / 2, link_name="ICI (4 ports)",
        link="ici-v6e", link_printed="Bidirectional ICI bandwidth per chip 800 GBps, 4 ICI ports per chip",
        source=f"Google Cloud TPU documentation, 'TPU v6e' ({URL_V6E}, system architecture table), read in the "
               "reference library.",
        notes="Dense (TPUs have no sparsity mode). Capacity as printed, 'HBM capacity per chip 32 GB' (10^9; the "
              "v5p page prints GiB). ICI 800 GBps bidirectional per chip over 4 ports = 100 GB/s per port each "
              "way (the division over ports is this tool's convention; the page gives the per-chip figure). The "
              "same table's 'All-reduce bandwidth per Pod 102.4 TB/s' over 256 chips is 400 GB/s per chip, the "
              "800 GBps halved.",
        citations=(
            Citation(("peak_flops.bf16",), "Peak compute per chip (bf16) 918 TFLOPs", 918e12, URL_V6E, seen=SEEN_GOOGLE),
            Citation(("peak_flops.int8",), "Peak compute per chip (Int8) 1836 TOPs", 1836e12, URL_V6E,
                     seen=SEEN_GOOGLE),
            Citation(("hbm_bytes",), "HBM capacity per chip 32 GB", 32e9, URL_V6E, unit="GB (10^9 bytes)",
                     seen=SEEN_GOOGLE),
            Citation(("hbm_bandwidth",), "HBM bandwidth per chip 1638 GBps", 1638e9, URL_V6E, seen=SEEN_GOOGLE),
            Citation(("link_bandwidth",), "Bidirectional inter-chip interconnect (ICI) bandwidth (per chip) 800 GBps; "
                     "ICI ports per chip 4", 800e9, URL_V6E, directions=2, ports=4, seen=SEEN_GOOGLE),
        ),
    ),
}


def list_hardware() -> list[Hardware]:
    return list(PRESETS.values())


def get_hardware(name: str) -> Hardware:
    """A preset by name or alias (case-insensitive; ``_`` and spaces read as ``-``)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key in PRESETS:
        return PRESETS[key]
    for hw in PRESETS.values():
        if key in hw.aliases:
            return hw
    raise SolverInputError(f"unknown hardware {name!r}; choose from {', '.join(PRESETS)}", param="hw")


# ---------------------------------------------------------------------------------------
# Figures for one computation: a preset fills only what was not given.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chip:
    """The hardware figures a formula uses, each with where it came from ("given" or a preset)."""

    peak_flops: float | None = None  # FLOP/s per chip (dense, at the compute dtype)
    bandwidth: float | None = None  # HBM bytes/s per chip
    hbm: float | None = None  # bytes per chip
    link_bandwidth: float | None = None  # bytes/s per chip
    origin: dict[str, str] = field(default_factory=dict)

    def need(self, name: str) -> float:
        value = getattr(self, name)
        if value is None:
            flag = "--" + name.replace("_", "-")
            raise SolverInputError(f"needed here: give {flag}, or --hw NAME to take it from a preset",
                                   param=name)
        if value <= 0:
            raise SolverInputError(f"must be positive (got {value})", param=name)
        return value


def resolve_chip(hw: str | Hardware | None = None, dtype: str = "bf16", *, peak_flops: float | None = None,
                 bandwidth: float | None = None, hbm: float | None = None,
                 link_bandwidth: float | None = None, hbm_figure: str = "datasheet") -> Chip:
    """Explicit figures win; a preset (``hw``) fills in only those not given.

    ``hbm_figure`` picks the preset's HBM capacity: "datasheet" (the vendor's figure) or
    "device" (what nvidia-smi reports); ``origin["hbm_figure"]`` records which.
    """
    preset = get_hardware(hw) if isinstance(hw, str) else hw
    given = {"peak_flops": peak_flops, "bandwidth": bandwidth, "hbm": hbm, "link_bandwidth": link_bandwidth}
    values: dict[str, float | None] = {}
    origin: dict[str, str] = {}
    for key, value in given.items():
        if value is not None:
            values[key], origin[key] = float(value), "given"
        elif preset is not None:
            if key == "peak_flops":
                try:
                    values[key] = preset.peak(dtype)
                except SolverInputError:
                    values[key] = None
                    continue
            else:
                values[key] = float({"bandwidth": preset.hbm_bandwidth, "hbm": preset.hbm(hbm_figure),
                                     "link_bandwidth": preset.link_bandwidth}[key])
            origin[key] = preset.name
            if key == "hbm":
                origin["hbm_figure"] = hbm_figure
        else:
            values[key] = None
    if preset is not None and any(v == preset.name for v in origin.values()):
        origin["source"] = preset.source
    return Chip(origin=origin, **values)
