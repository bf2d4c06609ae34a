"""Accelerator presets as data, and the result type of every hardware-arithmetic formula.

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
- ``link_bandwidth`` is the chip-to-chip bandwidth per chip in bytes/s, *bidirectional total*
  as the vendors print it (NVLink 900 GB/s = 450 GB/s each way; TPU ICI Gbps divided by 8).

:class:`Result` is what ``solver.roofline``, ``solver.inference`` and ``solver.training``
return: the answer, its unit, the conventions used, a breakdown of named figures, and the
worked solution as steps of (formula, substitution, value, unit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

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
    link_bandwidth: float  # bytes/s per chip, bidirectional total
    link_name: str
    source: str
    notes: str = ""
    aliases: tuple[str, ...] = ()
    hbm_device_bytes: int | None = None  # memory.total as nvidia-smi reports it (MiB · 2^20)
    hbm_device_source: str = ""

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
        hbm_bytes=40 * G, hbm_bandwidth=1555 * G, link_bandwidth=600 * G, link_name="NVLink 3",
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
        hbm_bytes=80 * G, hbm_bandwidth=2039 * G, link_bandwidth=600 * G, link_name="NVLink 3",
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "h100-sxm": Hardware(
        name="h100-sxm", vendor="NVIDIA",
        hbm_device_bytes=81_559 * 2**20, hbm_device_source="nvidia-smi memory.total as listed in modal-labs/modal-client PR #2797 (2025-01-23); issue 11", aliases=("h100",),
        # datasheet (sparse, printed): TF32 989, BF16/FP16 1,979, FP8/INT8 3,958 → dense = half
        peak_flops={"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T,
                    "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T},
        hbm_bytes=80 * G, hbm_bandwidth=3350 * G, link_bandwidth=900 * G, link_name="NVLink 4",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved "
              "(the Hopper whitepaper prints 989.4 dense BF16 at its boost clock; 989.5 = 1,979/2).",
    ),
    "h100-pcie": Hardware(
        name="h100-pcie", vendor="NVIDIA",
        # datasheet (sparse, printed): TF32 756, BF16/FP16 1,513, FP8/INT8 3,026 → dense = half
        peak_flops={"fp64": 51 * T, "fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T,
                    "fp16": 756.5 * T, "fp8": 1513 * T, "int8": 1513 * T},
        hbm_bytes=80 * G, hbm_bandwidth=2000 * G, link_bandwidth=600 * G,
        link_name="NVLink bridge (PCIe Gen5: 128 GB/s)",
        source="NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "h200": Hardware(
        name="h200", vendor="NVIDIA",
        hbm_device_bytes=143_771 * 2**20, hbm_device_source="nvidia-smi memory.total of H200 SXM boards in public nvidia-smi transcripts (143771MiB)", aliases=("h200-sxm",),
        # same compute as H100 SXM (datasheet BF16 1,979 with sparsity); HBM3e 141GB at 4.8 TB/s
        peak_flops={"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T,
                    "fp16": 989.5 * T, "fp8": 1979 * T, "int8": 1979 * T},
        hbm_bytes=141 * G, hbm_bandwidth=4800 * G, link_bandwidth=900 * G, link_name="NVLink 4",
        source="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)",
        notes="Dense tensor figures: the datasheet's starred (with-sparsity) values halved.",
    ),
    "tpu-v4": Hardware(
        name="tpu-v4", vendor="Google",
        # Cloud TPU v4 page: 275 TFLOPs per chip (bf16 or int8), HBM2 32 GiB at 1200 GBps
        peak_flops={"bf16": 275 * T, "int8": 275 * T},
        hbm_bytes=32 * 2**30, hbm_bandwidth=1200 * G, link_bandwidth=300 * G, link_name="ICI (6 links)",
        source="Google Cloud TPU documentation, 'TPU v4' system architecture",
        notes="Dense (TPUs have no sparsity mode). ICI 2,400 Gbps per chip (= 300 GB/s) is the "
              "figure of the older Cloud TPU system-architecture table; the current v4 page omits it.",
    ),
    "tpu-v5e": Hardware(
        name="tpu-v5e", vendor="Google",
        # Cloud TPU v5e page: 197 TFLOPs bf16, 394 TOPs int8, 16 GB HBM2 at 819 GBps, ICI 400 GBps
        peak_flops={"bf16": 197 * T, "int8": 394 * T},
        hbm_bytes=16 * G, hbm_bandwidth=819 * G, link_bandwidth=400 * G, link_name="ICI (4 ports)",
        source="Google Cloud TPU documentation, 'TPU v5e' system architecture",
        notes="Dense. The page prints int8 as 393 or 394 TOPs in different revisions (2 × 197 = 394); "
              "ICI is the bidirectional per-chip figure (older revisions: 1,600 Gbps).",
    ),
    "tpu-v5p": Hardware(
        name="tpu-v5p", vendor="Google",
        # Cloud TPU v5p page: 459 TFLOPs bf16, HBM2e 95 GB at 2765 GBps, ICI 4800 Gbps
        peak_flops={"bf16": 459 * T, "int8": 918 * T},
        hbm_bytes=95 * G, hbm_bandwidth=2765 * G, link_bandwidth=600 * G, link_name="ICI",
        source="Google Cloud TPU documentation, 'TPU v5p' system architecture",
        notes="Dense. int8 = 2 × bf16 (918 TOPs, Google's v5p announcement); ICI 4,800 Gbps = 600 GB/s.",
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


# ---------------------------------------------------------------------------------------
# The result of every formula
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One line of a worked solution: ``formula`` = ``substitution`` = ``value`` ``unit``."""

    formula: str
    substitution: str
    value: Any
    unit: str = ""


@dataclass
class Result:
    """An answer with its unit, the conventions behind it, named figures, and the worked steps."""

    answer: Any
    unit: str
    convention: dict[str, Any] = field(default_factory=dict)
    breakdown: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    def step(self, formula: str, substitution: str, value: Any, unit: str = "") -> Any:
        """Record a step and return its value (so formulas read ``t = r.step(...)``)."""
        self.steps.append(Step(formula, substitution, value, unit))
        return value

    def to_json(self) -> dict[str, Any]:
        return {"answer": as_number(self.answer), "unit": self.unit, "convention": self.convention,
                "breakdown": {k: as_number(v) for k, v in self.breakdown.items()},
                "steps": [{"formula": s.formula, "substitution": s.substitution,
                           "value": as_number(s.value), "unit": s.unit} for s in self.steps]}


def as_number(x: Any) -> Any:
    """Fractions become ints when whole, floats otherwise; everything else is left alone."""
    if isinstance(x, Fraction):
        return int(x) if x.denominator == 1 else float(x)
    return x


def fmt(x: Any) -> str:
    """A number for a substitution line: :func:`solver.units.format_number` (the one formatter:
    whole numbers with separators, others to 6 significant figures rounded half up)."""
    from solver.units import format_number

    x = as_number(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return format_number(x, 6)
