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
  in MiB), where a public nvidia-smi figure is known: the "80GB" H100 reports 81,559 MiB =
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

Every formula that uses these figures returns a :class:`solver.result.Result`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.errors import SolverInputError

T = 10**12  # tera
G = 10**9  # giga


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
        # HGX B200 datasheet, 8-GPU totals ÷ 8 (with sparsity): FP4 144 PF, FP8/INT8 72 P, FP16/BF16 36 PF,
        # TF32 18 PF → per GPU dense = ÷ 8 ÷ 2; FP64 296 TF ÷ 8 (no sparsity); HBM3e 1.4 TB, 64 TB/s ÷ 8
        peak_flops={"fp64": 37 * T, "tf32": 1125 * T, "bf16": 2250 * T, "fp16": 2250 * T,
                    "fp8": 4500 * T, "int8": 4500 * T, "fp4": 9000 * T},
        hbm_bytes=180 * G, hbm_bandwidth=8000 * G, link_bandwidth=1800 * G / 2, link_name="NVLink 5",
        link="nvlink5", link_printed="NVLink 1.8 TB/s (bidirectional, per GPU)",
        source="NVIDIA HGX B200 datasheet (8 × B200 totals); per-GPU figures cross-checked with MLPerf "
               "system 'NVIDIA B200-SXM-180GB' and stas00/ml-engineering (bf16 2,250, fp8 4,500 dense)",
        notes="Dense tensor figures: the datasheet's with-sparsity totals ÷ 8 GPUs ÷ 2; fp64 as printed ÷ 8 "
              "(no sparsity).",
    ),
    "gb200": Hardware(
        name="gb200", vendor="NVIDIA", aliases=("gb200-nvl72", "b200-gb200"),
        # GB200 NVL72 datasheet, 72-GPU totals (with sparsity): FP4 1,440 PF, FP8 720 PF, FP16/BF16 360 PF,
        # TF32 180 PF; FP64 3,240 TF; HBM3e 13.4 TB at 576 TB/s; NVLink 130 TB/s → ÷ 72 per GPU
        peak_flops={"fp64": 45 * T, "tf32": 1250 * T, "bf16": 2500 * T, "fp16": 2500 * T,
                    "fp8": 5000 * T, "int8": 5000 * T, "fp4": 10000 * T},
        hbm_bytes=186 * G, hbm_bandwidth=8000 * G, link_bandwidth=1800 * G / 2, link_name="NVLink 5",
        link="nvlink5", link_printed="NVLink 130 TB/s per 72 GPUs = 1.8 TB/s (bidirectional, per GPU)",
        source="NVIDIA GB200 NVL72 datasheet (72 × B200 totals, 36 GB200 superchips: 372 GB HBM3e, "
               "16 TB/s each); per GPU = ÷ 72",
        notes="One Blackwell GPU of a GB200 superchip at its 1,200 W setting. Dense tensor figures: the "
              "with-sparsity totals ÷ 72 ÷ 2. HBM 13.4 TB ÷ 72 = 186 GB (372 GB per 2-GPU superchip).",
    ),
    "mi300x": Hardware(
        name="mi300x", vendor="AMD", aliases=("mi300", "amd-mi300x"),
        # AMD Instinct MI300X datasheet: peak FP16/BF16 1,307.4 TFLOPS dense (2,614.9 with structured
        # sparsity), FP8 and INT8 2,614.9 dense, TF32 653.7, FP32 matrix 163.4, FP64 matrix 163.4;
        # HBM3 192 GB at 5.3 TB/s; 7 Infinity Fabric links, 128 GB/s each (896 GB/s aggregate, bidirectional)
        peak_flops={"fp64": 163.4 * T, "fp32": 163.4 * T, "tf32": 653.7 * T, "bf16": 1307.4 * T,
                    "fp16": 1307.4 * T, "fp8": 2614.9 * T, "int8": 2614.9 * T},
        hbm_bytes=192 * G, hbm_bandwidth=5300 * G, link_bandwidth=896 * G / 2, link_name="Infinity Fabric (7 links)",
        link="xgmi-mi300x", link_printed="7 Infinity Fabric links × 128 GB/s = 896 GB/s (bidirectional, per GPU)",
        source="AMD Instinct MI300X accelerator datasheet (peak theoretical figures; dense and "
               "with-sparsity printed in separate columns)",
        notes="AMD prints dense figures beside the sparse ones; these are the dense ones. In an 8-GPU "
              "platform every GPU has a direct link to each of the 7 others; 896/2 = 448 GB/s each way "
              "per GPU, one link is 64 GB/s each way.",
    ),
    "tpu-v6e": Hardware(
        name="tpu-v6e", vendor="Google", aliases=("trillium", "v6e"),
        # Cloud TPU v6e page: 918 TFLOPs bf16, 1836 TOPs int8, 32 GB HBM at 1638 GBps,
        # bidirectional ICI bandwidth per chip 800 GBps, 4 ICI ports per chip (2D torus)
        peak_flops={"bf16": 918 * T, "int8": 1836 * T},
        hbm_bytes=32 * G, hbm_bandwidth=1638 * G, link_bandwidth=800 * G / 4 / 2, link_name="ICI (4 ports)",
        link="ici-v6e", link_printed="Bidirectional ICI bandwidth per chip 800 GBps, 4 ICI ports per chip",
        source="Google Cloud TPU documentation, 'TPU v6e' (cloud.google.com/tpu/docs/v6e, specification table)",
        notes="Dense. ICI 800 GBps bidirectional per chip over 4 ports = 100 GB/s per port each way.",
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
