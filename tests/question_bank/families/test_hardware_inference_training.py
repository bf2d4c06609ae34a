"""The inference and training hardware families (question_bank.families.hardware_inference and
hardware_training): sound for 27 seeds each (audit: key accepted, every misconception rejected
and diagnosed as itself, the solution ends on the key), each key recomputed here from a formula
written from its source, and one hand-worked variant per family pinned.

Sources of the independent formulas:
- prefill: a forward pass does one multiply-add (2 FLOPs) per weight per token, so 2·N·T FLOPs;
  time = FLOPs / (chips · dense peak · MFU), dense peak = the datasheet's with-sparsity figure / 2.
- decode attention: FLOPs counted by ``FlopCounterMode`` on the real q·kᵀ and a·v of one new
  query against S cached keys; bytes = the sizes of the Q, K, V and O tensors (meta device).
- crossover: FLOPs of the Q, K, V, O (and FFN) matmuls of one token, and of one cached key's
  q·k and a·v, both counted by ``FlopCounterMode``; S = the ratio.
- MFU and PF-days: C = 6·N·D (Kaplan et al. 2020, §2.1: forward 2N, backward 4N per token);
  MFU = C / (GPU-hours · 3,600 s · dense peak); 1 PF-day = 10^15 FLOP/s · 86,400 s.
- Kaplan: C_forward = 2N + 2·n_layer·n_ctx·d_attn (Kaplan et al. 2020, Table 1).
- activations: Korthikanti et al. 2022, §4.1: per layer s·b·h·(34 + 5·a·s/h) bytes; with
  selective recomputation 34·s·b·h (the 5·a·s²·b of the score matrices is recomputed).
"""

from fractions import Fraction

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import question_bank.families.hardware_inference  # noqa: F401 - registers
import question_bank.families.hardware_training  # noqa: F401 - registers
from question_bank.family import FAMILIES
from question_bank.grading import audit_problem, grade
from tests.family_helpers import easy, variants

MODULES = ("question_bank.families.hardware_inference", "question_bank.families.hardware_training")
IDS = sorted(fid for fid, f in FAMILIES.items() if f.build.__module__ in MODULES)
#: dense bf16 FLOP/s, typed from the datasheets: NVIDIA's with-sparsity figure halved
DENSE_BF16 = {"a100-80gb": 624e12 / 2, "h100-sxm": 1979e12 / 2, "h200": 1979e12 / 2}


def test_family_list():
    assert IDS == sorted(["hardware.prefill_time", "hardware.decode_attention_intensity", "hardware.attention_crossover",
                          "hardware.mfu_from_gpu_hours", "hardware.pf_days", "hardware.kaplan_forward",
                          "hardware.activation_memory"])


@pytest.mark.parametrize("fid", IDS)
def test_sound(fid):
    for p in variants(fid):
        assert audit_problem(p) == [], p.id
        assert len(p.misconceptions) >= 2, p.id
        for m in p.misconceptions:
            v = grade(p, m.value)
            assert not v.correct and m.id in {x.id for x in v.misconceptions}, (p.id, m.id)
        assert p.solution_text.strip().splitlines()[-1].startswith("Answer")
        for word in ("round", "FLOP" if p.key.unit not in ("GB", "GiB", "MB", "MiB") else "bytes"):
            assert word.lower() in p.statement_text.lower(), (p.id, word)


@pytest.mark.parametrize("fid", IDS)
def test_deterministic(fid):
    a, b = FAMILIES[fid].generate(5, "hard"), FAMILIES[fid].generate(5, "hard")
    assert (a.statement_md, a.key) == (b.statement_md, b.key)


def test_prefill_time_vs_formula():
    for p in variants("hardware.prefill_time"):
        g = p.given
        t = 2 * g["params"] * g["tokens"] / (g["chips"] * DENSE_BF16[g["hw"]] * g["mfu"])
        assert p.key.value == pytest.approx(t * 1e3, rel=1e-12), p.id


def meta(*shape):
    return torch.empty(*shape, dtype=torch.bfloat16, device="meta")


def matmul_flops(*pairs) -> int:
    """FLOPs that FlopCounterMode counts for ``a @ b`` over the (shape of a, shape of b) pairs."""
    with FlopCounterMode(display=False) as c:
        for a, b in pairs:
            meta(*a) @ meta(*b)
    return c.get_total_flops()


def test_decode_attention_intensity_vs_flop_counter_and_tensor_bytes():
    for p in variants("hardware.decode_attention_intensity"):
        g = p.given
        B, S, N, G, H = g["batch"], g["context"], g["n_heads"], g["n_kv_heads"], g["d_head"]
        a = {"bf16": 2, "fp8": 1}[g["dtype"]]
        # every query head reads its group's cached K and V: q[B,N,1,H]·kᵀ[B,N,H,S], then a[B,N,1,S]·v[B,N,S,H]
        flops = matmul_flops(((B, N, 1, H), (B, N, H, S)), ((B, N, 1, S), (B, N, S, H)))
        q, k, v, o = meta(B, N, 1, H), meta(B, G, S, H), meta(B, G, S, H), meta(B, N, 1, H)
        n_bytes = a * sum(t.numel() for t in (q, k, v, o))
        assert p.key.value == pytest.approx(flops / n_bytes, rel=1e-12), p.id


def test_attention_crossover_vs_flop_counter():
    for p in variants("hardware.attention_crossover"):
        g = p.given
        dm, N, G, H, dff = g["d_model"], g["n_heads"], g["n_kv_heads"], g["d_head"], g["d_ff"]
        pairs = [((1, dm), (dm, N * H)), ((1, dm), (dm, G * H)), ((1, dm), (dm, G * H)), ((1, N * H), (N * H, dm))]
        if g["against"] == "all":
            ups = 2 if g["ffn"] == "swiglu" else 1  # SwiGLU: gate and up
            pairs += [((1, dm), (dm, dff))] * ups + [((1, dff), (dff, dm))]
        per_key = matmul_flops(((N, 1, H), (N, H, 1)), ((N, 1, 1), (N, 1, H)))  # one key: q·k and a·v, all heads
        assert p.key.value == pytest.approx(matmul_flops(*pairs) / per_key, rel=1e-12), p.id


def test_mfu_vs_formula():
    for p in variants("hardware.mfu_from_gpu_hours"):
        g = p.given
        mfu = 6 * g["params"] * g["tokens"] / (g["gpu_hours"] * 3600 * DENSE_BF16[g["hw"]])
        assert p.key.value == pytest.approx(100 * mfu, rel=1e-12), p.id
        assert 0.2 < mfu < 0.7


def test_pf_days_vs_formula():
    for p in variants("hardware.pf_days"):
        g = p.given
        assert p.key.value == pytest.approx(6 * g["params"] * g["tokens"] / (1e15 * 86400), rel=1e-12), p.id


def test_kaplan_vs_table_1():
    for p in variants("hardware.kaplan_forward"):
        g = p.given
        L, d, n = g["n_layer"], g["d_model"], g["n_ctx"]
        d_attn, d_ff = g.get("d_attn", d), g.get("d_ff", 4 * d)  # hard draws its own widths (printed, tested below)
        N = 2 * d * L * (2 * d_attn + d_ff)  # Kaplan et al. Table 1: N = 2·d_model·n_layer·(2·d_attn + d_ff)
        assert g["params"] == N
        if "d_attn" not in g:
            assert N == 12 * L * d * d
        else:
            assert f"d_{{attn}} = {d_attn}$" in p.statement_md and f"d_{{ff}} = {d_ff}$" in p.statement_md, p.id
        extra = 2 * L * n * d_attn
        want = (2 * N + extra) / {"MFLOP": 1e6, "GFLOP": 1e9}[p.key.unit] if g["ask"] == "flops" else 100 * extra / (2 * N)
        assert p.key.value == pytest.approx(want, rel=1e-12), p.id


def test_activation_memory_vs_paper():
    for p in variants("hardware.activation_memory"):
        g = p.given
        s, b, h, a = g["seq"], g["batch"], g["d_model"], g["n_heads"]
        per_layer = s * b * h * (34 + Fraction(5 * a * s, h)) if g["recompute"] == "none" else 34 * s * b * h
        unit = {"GB": 1e9, "GiB": 2**30, "MB": 1e6, "MiB": 2**20}[p.key.unit]
        assert p.key.value == pytest.approx(float(g["n_layers"] * per_layer) / unit, rel=1e-12), p.id


# ------------------------------------------------------------------ pinned hand-worked variants


def test_pin_prefill_time():
    """7B, T = 3072, one H100 SXM (1979/2 = 989.5 TFLOP/s dense), MFU 45% (easy, seed 0): 2 × 7e9 × 3072 = 4.3008e13
    FLOPs; / (989.5e12 × 0.45 = 4.45275e14) = 0.0965875 s → 96.59 ms. Sparse peak: 48.29; MFU ignored: 4.3008e13 /
    9.895e14 = 43.46 ms; 6N per token: 289.76."""
    p = easy("hardware.prefill_time")
    assert grade(p, 96.59).correct
    assert "sparse_peak" in grade(p, 48.29).misconception.id.split("+") and "forgot_mfu" in grade(p, 43.46).misconception.id.split("+")
    assert "counted_backward" in grade(p, 289.76).misconception.id.split("+")


def test_prefill_medium_is_not_an_easy_prompt_over_the_chips():
    """issue 22: T/chips at medium was an easy prompt (8192/2 = 4096), so the easy answers answered a quarter of
    medium; no medium draw's T/chips is an easy prompt now."""
    easy_T = {FAMILIES["hardware.prefill_time"].generate(s, "easy").given["tokens"] for s in range(60)}
    for s in range(60):
        g = FAMILIES["hardware.prefill_time"].generate(s, "medium").given
        assert g["tokens"] / g["chips"] not in easy_T, g


def test_pin_decode_attention_intensity():
    """MHA, B = 16, S = 96 (issue 22: short contexts at easy), N = G = 64, H = 64, bf16: FLOPs 4·16·64·96·64 =
    25,165,824; bytes 2·(2·16·64·64 + 2·16·64·96·64) = 25,427,968; I = 96/97 = 0.98969 → 0.99.
    K only: 2·(131,072 + 6,291,456) = 12,845,056 → 1.9592 → 1.96."""
    p = easy("hardware.decode_attention_intensity")
    assert p.given["context"] == 96
    assert grade(p, 0.99).correct and "forgot_k_and_v" in grade(p, 1.96).misconception.id.split("+")


def test_pin_attention_crossover():
    """d = 3584, 56 heads of 64 (issue 22: many shapes), MHA: the Q, K, V, O projections of one token cost
    4 × 2·d² = 102,760,448 FLOPs; one cached key costs q·k + a·v = 2·N·H + 2·N·H = 14,336 FLOPs;
    S = 102,760,448 / 14,336 = 7,168 (= 2d). Counting q·k only (7,168 FLOPs per key) doubles it: 14,336."""
    p = easy("hardware.attention_crossover")
    assert (p.given["d_model"], p.given["n_heads"]) == (3584, 56)
    assert grade(p, 7168).correct and "forgot_av" in grade(p, 14336).misconception.id.split("+")


def test_pin_mfu():
    """8B on 600B tokens, 59,600 A100 GPU-hours (easy, seed 0): C = 6 × 8e9 × 6e11 = 2.88e22; 5.96e4 × 3600 × 312e12 =
    6.694272e22; MFU = 43.02% → 43.0. Sparse 624 TFLOP/s: 21.51 → 21.5; 2N: 14.34 → 14.3; 8N: 57.36 → 57.4."""
    p = easy("hardware.mfu_from_gpu_hours")
    assert grade(p, 43.0).correct and "sparse_peak" in grade(p, 21.5).misconception.id.split("+")
    assert "forgot_backward" in grade(p, 14.3).misconception.id.split("+")
    assert "counted_recompute" in grade(p, 57.4).misconception.id.split("+")


def test_pin_pf_days():
    """289,603,584 parameters × 8.41T tokens (easy, seed 0; issue 39, round 4b: the answer drawn first, an exact GPT-style
    count): 289,603,584 × 8.41 = 2,435,566,141.44, so 6·N·D = 1.461339684864e22 FLOP / 8.64e19 = 169.1365 → 169.1
    PF-days; 2N: 56.379 → 56.4; PF-hours (÷ 3,600 s): 4059.28 → 4059.3; 18N (training = 3 × forward applied to 6N
    again): 507.41 → 507.4."""
    p = easy("hardware.pf_days")
    assert (p.given["params"], p.given["tokens"]) == (289_603_584, 8_410_000_000_000)
    assert grade(p, 169.1).correct and "forgot_backward" in grade(p, 56.4).misconception.id.split("+")
    assert "pf_hours" in grade(p, 4059.3).misconception.id.split("+")
    assert "forgot_backward_reversed" in grade(p, 507.4).misconception.id.split("+")
    assert not grade(p, 169.3).correct


def test_pin_kaplan():
    """GPT-2 XL (easy, seed 0): 48 layers, d = 1600, n_ctx = 384: N = 12·48·1600² = 1,474,560,000; 2N = 2,949,120,000;
    2·48·384·1600 = 58,982,400; C_forward = 3,008,102,400 = 3008.10 MFLOP. The 2N rule: 2949.12; ×3 (training): 9024.31."""
    p = easy("hardware.kaplan_forward")
    assert 12 * 48 * 1600**2 == 1_474_560_000 and 2 * 1_474_560_000 + 2 * 48 * 384 * 1600 == 3_008_102_400
    assert grade(p, 3008.10).correct and "two_n_rule" in grade(p, 2949.12).misconception.id.split("+")
    assert "counted_backward" in grade(p, 9024.31).misconception.id.split("+")


def test_pin_activation_memory():
    """s = 2048, b = 1, h = 2048, a = 16, selective: 34·2048·2048 = 142,606,336 B = 136.00 MiB; no recomputation:
    2048·2048·(34 + 5·16·2048/2048) = 478,150,656 B = 456.00 MiB; as MB 142.61. Seed 34 draws it."""
    p = easy("hardware.activation_memory", 34)
    assert (p.given["seq"], p.given["batch"], p.given["d_model"], p.given["n_heads"]) == (2048, 1, 2048, 16)
    assert grade(p, 136.00).correct and "recompute_none" in grade(p, 456.00).misconception.id.split("+")
    assert "gb_vs_gib" in grade(p, 142.61).misconception.id.split("+")


def test_factor_two_mistake_names_both_causes():
    """The with-sparsity peak (2 × dense) and one FLOP per multiply-add (3N per token for training,
    N for a forward pass) change the answer by the same factor 2, so the grader cannot tell them
    apart: the misconception a student's halved MFU (or halved prefill time) is diagnosed as must
    name both, or a student who counted multiply-adds is told they used the sparse peak.
    Pinned (easy, seed 60): 13B, 1T tokens, 224,000 A100 GPU-hours: 7.8e22 / (2.24e5 · 3600 · 312e12 = 2.515968e23)
    = 31.00%; with 624e12 or with 3N·D = 3.9e22 both give 15.50% → 15.5."""
    p = FAMILIES["hardware.mfu_from_gpu_hours"].generate(60, "easy")
    assert p.given == {"params": 13 * 10**9, "tokens": 1_000 * 10**9, "hw": "a100-80gb", "gpu_hours": 224_000,
                       "tokens_per_param": None}
    assert grade(p, 31.0).correct
    m = grade(p, 15.5).misconception
    assert "multiply-add" in m.label and "sparsity" in m.label
    for fid in ("hardware.mfu_from_gpu_hours", "hardware.prefill_time"):
        for p in variants(fid):
            half = p.key.value / 2
            for m in p.misconceptions:
                if abs(m.value - half) <= 1e-9 * half:
                    assert "multiply-add" in m.label and "sparsity" in m.label, (p.id, m.label)


@pytest.mark.parametrize("fid", ["hardware.prefill_time", "hardware.mfu_from_gpu_hours"])
def test_precision_stated_outside_the_datasheet_quote(fid):
    """Which peak applies depends on the precision the model runs in; the datasheet quote names
    BF16, but the statement itself must say the run is in BF16."""
    import re

    for p in variants(fid):
        outside = re.sub(r"\([^()]*datasheet[^()]*\)", "", p.statement_text)
        assert "BF16" in outside, p.id


def test_activation_statements_say_what_selective_drops_and_read_well():
    """Selective recomputation: the statement names the 5as/h term as the part that is recomputed
    (the key is then 34·s·b·h, which the statement's formula alone does not give); 'all L layers'
    takes 'do', and one sequence is not 'sequences'."""
    for p in variants("hardware.activation_memory"):
        if p.given["recompute"] == "selective":
            assert "5as/hterm" in p.statement_text.replace(" ", ""), p.id
        assert "does all" not in p.statement_text, p.id
    for p in variants("hardware.decode_attention_intensity"):
        assert "B = 1 sequences" not in p.statement_text, p.id


def test_activation_memory_keys_vary_and_the_batch_slip_goes_both_ways():
    """Issue 39: above easy any length a multiple of 256 (and any depth from 24 to 48 at hard): the tables gave 100
    distinct hard keys in 200 draws, which a test-wise student remembers. Forgetting the micro-batch (÷ b) has its
    inverse, the batch counted twice (× b), named by the grader: recomputed here as b × the key."""
    fam = FAMILIES["hardware.activation_memory"]
    hard = [fam.generate(s, "hard") for s in range(200)]
    assert len({p.key.value for p in hard}) >= 180
    seen = 0
    for p in [fam.generate(s, "medium") for s in range(30)]:
        b = p.given["batch"]
        v = grade(p, round(b * p.key.value, 2))
        assert "forgot_batch_reversed" in {m.id for m in v.misconceptions}, p.id
        seen += 1
    assert seen


def test_activation_memory_hard_micro_batch_keeps_the_options_within_the_keys_range():
    """Issue 39: at hard the micro-batch is 2 or 3 (with b up to 8 the "forgot the micro-batch" slip, made either way,
    moved options 0.9 decades past the level's keys, and a learned attacker told the key's pair from that), the depth
    any of 12 to 96 layers and the length any multiple of 16 from 512 to 8192, so that keys spread and rarely repeat."""
    given = [FAMILIES["hardware.activation_memory"].generate(s, "hard").given for s in range(80)]
    assert {g["batch"] for g in given} == {2, 3}
    assert all(12 <= g["n_layers"] <= 96 and g["seq"] % 16 == 0 and 512 <= g["seq"] <= 8192 for g in given)
    assert sum(g["seq"] % 256 != 0 for g in given) >= 40 and len({g["n_layers"] for g in given}) >= 30
    assert any(g["n_layers"] < 24 for g in given) and any(g["n_layers"] > 48 for g in given)


def test_kaplan_hard_keys_are_many_and_its_width_slip_goes_both_ways():
    """Issue 39: hard draws its own widths, so its keys do not repeat (61 distinct in 500 draws from the
    GPT-3 table were memorised), and d_model in d_attn's place moves the key up in some draws and down in others."""
    fam = FAMILIES["hardware.kaplan_forward"]
    keys, ups, downs = set(), 0, 0
    for seed in range(300):
        p = fam.generate(seed, "hard")
        g = p.given
        keys.add(p.key.value)
        (slip,) = [m for m in p.misconceptions if m.id == "d_model_for_d_attn"]
        # recomputed from the printed shape: the context term with d_model over 2N
        want = 100 * 2 * g["n_layer"] * g["n_ctx"] * g["d_model"] / (2 * g["params"])
        assert float(slip.value) == pytest.approx(want, rel=1e-12), p.id
        ups += float(slip.value) > p.key.value
        downs += float(slip.value) < p.key.value
    assert len(keys) >= 270 and min(ups, downs) >= 100, (len(keys), ups, downs)
