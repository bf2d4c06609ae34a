"""FlashAttention's tiling arithmetic: block sizes, blocks, HBM traffic, what the backward recomputes.

Sources: Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention with
IO-Awareness" (Algorithm 0 = standard attention, Algorithm 1 = FlashAttention forward, Theorem 2:
standard attention needs Θ(Nd + N²) HBM accesses, FlashAttention Θ(N²d²M⁻¹)); Dao 2023,
"FlashAttention-2" (§3.1: loops swapped, Q outer; only the logsumexp L is saved).

Conventions (all named in each result):

- M is the on-chip SRAM size **in elements** (as the paper states it); with bytes, M = SRAM bytes
  ÷ bytes per element.
- Block sizes (Algorithm 1, line 1): B_c = ⌈M/(4d)⌉ key/value rows, B_r = min(⌈M/(4d)⌉, d) query
  rows; T_r = ⌈N/B_r⌉ and T_c = ⌈N/B_c⌉ blocks. Either may be given instead (kernels pick 64/128).
- HBM accesses are counted per (batch, head) and multiplied by B·H; each element read or written
  once counts 1 (``unit="elements"``) or its bytes (``unit="bytes"``).
- Standard attention (Algorithm 0): read Q, K, write S; read S, write P; read P, V, write O:
  reads 3Nd + 2N², writes Nd + 2N², total 4Nd + 4N².
- FlashAttention-1 (Algorithm 1, exactly its loads and stores): line 2 writes the initial O, ℓ, m
  (Nd + 2N); the outer loop reads each K_j, V_j once (2Nd); for each of the T_c outer steps the
  inner loop reads all of Q, O, ℓ, m (2Nd + 2N) and writes O, ℓ, m (Nd + 2N).
  ``count_init=False`` leaves out line 2's writes (a kernel initialises in SRAM).
- FlashAttention-2 (§3.1, Algorithm 1 of that paper): Q outer, read once (Nd); K, V read T_r times
  (2Nd·T_r); O and the logsumexp L written once (Nd + N).
"""

from __future__ import annotations

from fractions import Fraction

from solver.errors import SolverInputError
from solver.result import Result, fmt
from solver.units import dtype_bytes

VERSIONS = ("1", "2")
UNITS = ("elements", "bytes")


def _int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or value is None or int(value) != value or value < minimum:
        raise SolverInputError(f"must be an integer >= {minimum} (got {value!r})", param=name)
    return int(value)


def block_sizes(sram: int, d: int) -> tuple[int, int]:
    """(B_r, B_c) of FlashAttention's Algorithm 1, line 1: B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d)."""
    M, d = _int("sram", sram), _int("d_head", d)
    bc = -(-M // (4 * d))
    return min(bc, d), bc


def standard_hbm(n: int, d: int) -> dict[str, int]:
    """Algorithm 0's HBM accesses for one head, in elements: reads 3Nd + 2N², writes Nd + 2N²."""
    return {"reads": 3 * n * d + 2 * n * n, "writes": n * d + 2 * n * n}


def flash_hbm(n: int, d: int, block_rows: int, block_cols: int, *, version: str = "1",
              count_init: bool = True) -> dict[str, int]:
    """FlashAttention's HBM accesses for one head, in elements, load by load as the algorithm does."""
    tr, tc = -(-n // block_rows), -(-n // block_cols)
    if version == "1":
        init = (n * d + 2 * n) if count_init else 0
        return {"reads": 2 * n * d + tc * (2 * n * d + 2 * n), "writes": init + tc * (n * d + 2 * n)}
    return {"reads": n * d + tr * 2 * n * d, "writes": n * d + n}


def flash_attention(seq: int, d_head: int, *, sram: int | None = None, block_rows: int | None = None,
                    block_cols: int | None = None, batch: int = 1, heads: int = 1, version: str = "1",
                    unit: str = "elements", dtype: str = "bf16", count_init: bool = True) -> Result:
    """Block sizes, block counts and HBM traffic of FlashAttention against standard attention.

    Answer: FlashAttention's HBM accesses (reads + writes) in ``unit``. Breakdown: B_r, B_c, T_r,
    T_c, reads and writes of both, the ratio, the paper's orders Nd + N² and N²d²/M, and what the
    backward pass saves and recomputes."""
    N, d = _int("seq", seq), _int("d_head", d_head)
    B, H = _int("batch", batch), _int("heads", heads)
    if version not in VERSIONS:
        raise SolverInputError(f"version must be 1 or 2 (got {version!r})", param="version")
    if unit not in UNITS:
        raise SolverInputError(f"unit must be elements or bytes (got {unit!r})", param="unit")
    w = dtype_bytes(dtype) if unit == "bytes" else Fraction(1)
    r = Result(answer=None, unit=unit, convention={
        "sram": "M in elements (Dao et al. 2022 state it so); bytes ÷ bytes per element",
        "blocks": "B_c = ⌈M/4d⌉, B_r = min(⌈M/4d⌉, d) (Algorithm 1, line 1)",
        "standard": "Algorithm 0: read Q,K write S; read S write P; read P,V write O",
        "flash": ("FlashAttention-1, Algorithm 1's loads and stores: K,V once; Q, O, ℓ, m read and O, ℓ, m "
                  "written on each of the T_c outer steps" + ("; line 2's initial O, ℓ, m writes counted"
                                                             if count_init else "; line 2's initial writes not counted")
                  if version == "1" else
                  "FlashAttention-2 §3.1: Q outer (read once), K,V read T_r times, O and logsumexp L written once"),
        "unit": f"bytes ({dtype}, {fmt(w)} per element)" if unit == "bytes" else "elements (1 per element read or written)",
        "scope": f"per head, times batch·heads = {B}·{H}"})
    if block_rows is None or block_cols is None:
        if sram is None:
            raise SolverInputError("give the SRAM size M (elements) or both block sizes", param="sram")
        br0, bc0 = block_sizes(sram, d)
        M = int(sram)
        bc = _int("block_cols", block_cols) if block_cols is not None else r.step(
            "B_c = ⌈M/4d⌉", f"⌈{fmt(M)}/(4 × {d})⌉", bc0)
        br = _int("block_rows", block_rows) if block_rows is not None else r.step(
            "B_r = min(⌈M/4d⌉, d)", f"min({fmt(bc0)}, {d})", br0)
    else:
        M = None if sram is None else _int("sram", sram)
        br, bc = _int("block_rows", block_rows), _int("block_cols", block_cols)
    tr = r.step("T_r = ⌈N/B_r⌉", f"⌈{fmt(N)}/{fmt(br)}⌉", -(-N // br))
    tc = r.step("T_c = ⌈N/B_c⌉", f"⌈{fmt(N)}/{fmt(bc)}⌉", -(-N // bc))
    std = standard_hbm(N, d)
    r.step("standard reads = 3Nd + 2N²", f"3·{fmt(N)}·{d} + 2·{fmt(N)}²", std["reads"], "elements")
    r.step("standard writes = Nd + 2N²", f"{fmt(N)}·{d} + 2·{fmt(N)}²", std["writes"], "elements")
    fl = flash_hbm(N, d, br, bc, version=version, count_init=count_init)
    if version == "1":
        r.step("flash reads = 2Nd + T_c·(2Nd + 2N)", f"2·{fmt(N)}·{d} + {fmt(tc)}·(2·{fmt(N)}·{d} + 2·{fmt(N)})",
               fl["reads"], "elements")
        r.step("flash writes = " + ("(Nd + 2N) + " if count_init else "") + "T_c·(Nd + 2N)",
               (f"({fmt(N)}·{d} + 2·{fmt(N)}) + " if count_init else "") + f"{fmt(tc)}·({fmt(N)}·{d} + 2·{fmt(N)})",
               fl["writes"], "elements")
    else:
        r.step("flash reads = Nd + T_r·2Nd", f"{fmt(N)}·{d} + {fmt(tr)}·2·{fmt(N)}·{d}", fl["reads"], "elements")
        r.step("flash writes = Nd + N", f"{fmt(N)}·{d} + {fmt(N)}", fl["writes"], "elements")
    scale = B * H * w
    std_total = r.step("standard total = B·H·(reads + writes)" + (" × bytes" if unit == "bytes" else ""),
                       f"{B}·{H}·{fmt(std['reads'] + std['writes'])}" + (f" × {fmt(w)}" if unit == "bytes" else ""),
                       scale * (std["reads"] + std["writes"]), unit)
    fl_total = r.step("flash total = B·H·(reads + writes)" + (" × bytes" if unit == "bytes" else ""),
                      f"{B}·{H}·{fmt(fl['reads'] + fl['writes'])}" + (f" × {fmt(w)}" if unit == "bytes" else ""),
                      scale * (fl["reads"] + fl["writes"]), unit)
    saved_std = N * N  # P (n×n) is kept for the backward of standard attention
    saved_fl = 2 * N if version == "1" else N
    r.breakdown = {
        "block_rows": br, "block_cols": bc, "row_blocks": tr, "col_blocks": tc,
        "standard_reads": scale * std["reads"], "standard_writes": scale * std["writes"], "standard_total": std_total,
        "flash_reads": scale * fl["reads"], "flash_writes": scale * fl["writes"], "flash_total": fl_total,
        "ratio_standard_over_flash": Fraction(std_total) / Fraction(fl_total),
        "order_standard_nd_plus_n2": B * H * (N * d + N * N) * w,
    }
    if M is not None:
        r.breakdown["order_flash_n2d2_over_m"] = Fraction(B * H * N * N * d * d, M) * w
    r.breakdown["backward_saved_standard_elements"] = B * H * saved_std
    r.breakdown["backward_saved_flash_elements"] = B * H * saved_fl
    r.breakdown["backward_recompute_flops"] = B * H * 2 * N * N * d
    r.convention["backward"] = (
        "standard attention saves P (N² per head) for the backward; FlashAttention saves only O and the "
        + ("statistics ℓ, m (2N per head)" if version == "1" else "logsumexp L (N per head)")
        + ", and recomputes S = Q_i K_jᵀ and P = exp(S − L) block by block in SRAM from Q, K, V "
          "(2N²d more FLOPs per head: one extra QKᵀ), trading FLOPs for HBM traffic")
    r.answer = fl_total
    return r



# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's
# flash_attention(...), from qkv solve flash-attention.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Choice, Convention, Input, Output, formula  # noqa: E402

FLASH_VERSION = Convention("version", "Which FlashAttention's loops (write version=\"2\").", {
    "1": Choice("K, V blocks in the outer loop; O, ℓ, m read and written per block", "Dao et al. 2022, Algorithm 1"),
    "2": Choice("Q blocks in the outer loop; O written once", "Dao 2023 (FlashAttention-2), Algorithm 1")}, "1")
FLASH_INIT = Convention("init", "Whether Algorithm 1 line 2's initial writes of O, ℓ, m count.", {
    "counted": Choice("O, ℓ, m written once at the start, as Algorithm 1 line 2 does", "Dao et al. 2022"),
    "omitted": Choice("those writes left out (qkv solve flash-attention --no-init)", "")}, "counted")


@formula("flash_attention", "FlashAttention's block sizes and HBM accesses against standard attention's "
         "(elements, and bytes at the dtype).",
         (Input("seq", "N: sequence length", kind="count", integer=True, minimum=1, binary_k=True, aliases=("N",)),
          Input("d_head", "d: head size", kind="count", integer=True, minimum=1, binary_k=True, aliases=("d",)),
          Input("sram", "M: on-chip SRAM in elements (the paper's unit)", kind="count", integer=True, minimum=1,
                default=None, binary_k=True, aliases=("M",)),
          Input("sram_bytes", "on-chip SRAM in bytes (M = bytes ÷ the dtype's bytes)", unit="B", default=None),
          Input("block_rows", "B_r (default min(⌈M/4d⌉, d))", kind="count", integer=True, minimum=1, default=None,
                aliases=("br",)),
          Input("block_cols", "B_c (default ⌈M/4d⌉)", kind="count", integer=True, minimum=1, default=None,
                aliases=("bc",)),
          Input("batch", "B: sequences", kind="count", integer=True, minimum=1, default=1, aliases=("B",)),
          Input("heads", "H: heads", kind="count", integer=True, minimum=1, default=1, aliases=("n_heads",)),
          Input("dtype", "bytes per element (bytes, sram_bytes)", kind="dtype", default="bf16")),
         (Output("accesses", "", "FlashAttention's HBM reads + writes, in elements", key="flash_total"),
          Output("bytes", "B", "the same in bytes of the dtype", key="flash_bytes"),
          Output("standard", "", "standard attention's HBM reads + writes, in elements", key="standard_total"),
          Output("ratio", "", "standard ÷ flash", key="ratio_standard_over_flash"),
          Output("block_rows", "", "B_r"),
          Output("block_cols", "", "B_c")),
         conventions=(FLASH_VERSION, FLASH_INIT), solve="flash-attention", source="Dao et al. 2022 (FlashAttention)")
def _flash_formula(seq, d_head, sram, sram_bytes, block_rows, block_cols, batch, heads, dtype, version="1",
                   init="counted"):
    w = dtype_bytes(dtype)
    if sram is not None and sram_bytes is not None:
        raise SolverInputError("give sram (elements) or sram_bytes, not both", param="sram_bytes")
    if sram_bytes is not None:
        sram = int(Fraction(sram_bytes) // w)
        if sram < 1:
            raise SolverInputError("holds less than one element", param="sram_bytes")
    r = flash_attention(seq, d_head, sram=sram, block_rows=block_rows, block_cols=block_cols, batch=batch, heads=heads,
                        version=version, unit="elements", dtype=dtype, count_init=init == "counted")
    r.breakdown["flash_bytes"] = r.breakdown["flash_total"] * w
    return r


FORMULAS = (_flash_formula.formula,)
