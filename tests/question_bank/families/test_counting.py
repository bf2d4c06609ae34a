"""The counting families (parameters, FLOPs, memory, Chinchilla arithmetic).

For every family and 27 seeds (9 per difficulty): the problem is sound (``audit_problem``:
schema, key accepted, every misconception rejected AND diagnosed as itself, options
distinct, the worked solution states the key), and the key equals an independent
recomputation: parameter counts against torch modules built in the test on the meta device
(``nn.MultiheadAttention``, ``nn.Linear`` stacks, ``nn.LayerNorm``/``nn.RMSNorm``,
``nn.TransformerEncoderLayer``/``DecoderLayer``) or H4's reference model; FLOPs against
``FlopCounterMode``; bytes against ``numel × element_size`` of meta tensors of the stated
shapes; scaling arithmetic against C = 6ND typed here. One hand-worked variant per family is
pinned (numbers derived in its docstring)."""

import functools
import math

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import question_bank.families.counting_flops  # noqa: F401 - registers
import question_bank.families.counting_memory  # noqa: F401
import question_bank.families.counting_params  # noqa: F401
import question_bank.families.counting_scaling  # noqa: F401
from question_bank.family import FAMILIES, get_family
from question_bank.grading import audit_problem, grade
from question_bank.problem import ChoiceKey, IntegerKey, NumericKey
from solver.counting.config import ModelConfig
from tests.family_helpers import easy, variants

MODULES = {f"question_bank.families.{m}" for m in ("counting_params", "counting_flops", "counting_memory", "counting_scaling")}
IDS = sorted(fid for fid, f in FAMILIES.items() if f.build.__module__ in MODULES)
META = torch.device("meta")


def numel(*modules):
    return sum(p.numel() for m in modules for p in m.parameters())


def test_family_list():
    assert IDS == sorted([
        "counting.params_mha", "counting.params_ffn", "counting.params_norm", "counting.params_layer",
        "counting.params_model", "counting.params_lora", "counting.params_kv_proj", "counting.flops_attention",
        "counting.flops_forward", "counting.flops_training", "counting.attention_vs_rnn", "counting.attention_memory",
        "counting.kv_cache", "counting.training_memory", "scaling.chinchilla"])


@pytest.mark.parametrize("fid", IDS)
def test_sound(fid):
    for p in variants(fid):
        assert audit_problem(p) == [], p.id
        assert p.misconceptions, f"{p.id}: no misconception to diagnose"
        for m in p.misconceptions:
            v = grade(p, {m.value} if isinstance(p.key, ChoiceKey) else m.value)
            assert not v.correct and m.id in {x.id for x in v.misconceptions}, (p.id, m.id)
        last = p.solution_text.strip().splitlines()[-1]
        assert last.startswith("Answer"), p.id
        if isinstance(p.key, IntegerKey):
            assert f"{p.key.value:,}" in last
        if isinstance(p.key, NumericKey):
            assert f"{round(p.key.value, p.key.decimals):.{p.key.decimals}f}" in last
            assert "decimal place" in p.statement_text or "nearest integer" in p.statement_text
        if p.type == "mcq":
            assert len(set(p.options)) == 4


@pytest.mark.parametrize("fid", IDS)
def test_deterministic(fid):
    f = FAMILIES[fid]
    a, b = f.generate(11, "hard"), f.generate(11, "hard")
    assert (a.statement_md, a.key, a.solution_md) == (b.statement_md, b.key, b.solution_md)


# ------------------------------------------------------------------ parameters vs torch modules


def test_params_mha_vs_multihead_attention():
    for p in variants("counting.params_mha"):
        g = p.given
        mha = nn.MultiheadAttention(g["d_model"], g["n_heads"], bias=g["bias"], device=META)
        assert p.key.value == g["n_layers"] * numel(mha), p.id
        assert ("**have biases**" in p.statement_md) == g["bias"]


def test_params_ffn_vs_linear_stack():
    for p in variants("counting.params_ffn"):
        g = p.given
        d, f, b = g["d_model"], g["d_ff"], g["bias"]
        mats = [nn.Linear(d, f, bias=b, device=META), nn.Linear(f, d, bias=b, device=META)]
        if g["ffn"] == "swiglu":
            mats.append(nn.Linear(d, f, bias=b, device=META))
        assert p.key.value == g["n_layers"] * numel(*mats), p.id


def test_params_norm_vs_torch_norms():
    for p in variants("counting.params_norm"):
        g = p.given
        one = nn.LayerNorm(g["d_model"], device=META) if g["norm"] == "layernorm" else nn.RMSNorm(g["d_model"], device=META)
        count = 1 if g["level"] == 0 else 2 * g["n_layers"] + int(g["final_norm"])
        assert p.key.value == count * numel(one), p.id


def test_params_layer_vs_transformer_layers():
    for p in variants("counting.params_layer"):
        g = p.given
        cls = nn.TransformerEncoderLayer if g["kind"] == "encoder" else nn.TransformerDecoderLayer
        layer = cls(g["d_model"], g["n_heads"], g["d_ff"], bias=g["bias"], device=META)
        assert p.key.value == numel(layer), p.id


def _model(cfg_dict):
    from solver.models import build_model

    return build_model(ModelConfig(**cfg_dict), "meta")


def test_params_model_vs_reference_model():
    for p in variants("counting.params_model"):
        m = _model(p.given["config"])
        assert p.key.value == numel(m), p.id
        tied = p.given["config"]["tied_embeddings"]
        assert ("**tied**" in p.statement_md) == tied


def test_params_lora_vs_adapter_modules():
    """Adapters built here: per target, A = Linear(d_in, r) and B = Linear(r, d_out), no bias."""
    for p in variants("counting.params_lora"):
        c = p.given["config"]
        d, r = c["d_model"], c["lora_rank"]
        dh = d // c["n_heads"]
        out = {"q": c["n_heads"] * dh, "k": c["n_kv_heads"] * dh, "v": c["n_kv_heads"] * dh, "o": d}
        inp = {"q": d, "k": d, "v": d, "o": c["n_heads"] * dh}
        adapters = [nn.Linear(inp[t], r, bias=False, device=META) for t in c["lora_targets"]]
        adapters += [nn.Linear(r, out[t], bias=False, device=META) for t in c["lora_targets"]]
        assert p.key.value == c["n_layers"] * numel(*adapters), p.id


def test_params_kv_proj_vs_linear():
    for p in variants("counting.params_kv_proj"):
        g = p.given
        kv_dim = g["n_kv_heads"] * g["d_model"] // g["n_heads"]
        wk, wv = (nn.Linear(g["d_model"], kv_dim, bias=g["bias"], device=META) for _ in range(2))
        assert p.key.value == g["n_layers"] * numel(wk, wv), p.id


# ------------------------------------------------------------------ FLOPs vs FlopCounterMode


def _counted(fn, *args):
    with FlopCounterMode(display=False) as c:
        fn(*args)
    return c.get_total_flops()


def rnn_step(h, w_hh, w_xh, x=None):
    return torch.tanh(h @ w_hh + (h if x is None else x) @ w_xh)


def attention(q):
    return torch.softmax(q @ q.T, -1) @ q


def test_flops_attention_vs_flop_counter():
    for p in variants("counting.flops_attention"):
        g = p.given
        B, h, n, dh = g["batch"], g["n_heads"], g["n"], g["d_model"] // g["n_heads"]
        q, k, v = (torch.empty(B, h, n, dh, device=META) for _ in range(3))
        a = torch.empty(B, h, n, n, device=META)
        qk = _counted(torch.matmul, q, k.transpose(-1, -2))
        av = _counted(torch.matmul, a, v)
        assert p.key.value == {"qk": qk, "av": av, "both": qk + av}[g["ask"]], p.id


def test_flops_forward_vs_reference_model():
    from solver.models.verify import measure_forward_and_train

    for p in variants("counting.flops_forward"):
        g = p.given
        model = _model(g["config"])
        if g["mode"] == "forward":
            tokens = torch.zeros(g["batch"], g["seq"], dtype=torch.long, device=META)
            measured = _counted(model, tokens)
        else:
            measured = measure_forward_and_train(model, g["batch"], g["seq"])[1]
        assert p.key.value == pytest.approx(measured / 1e9, rel=1e-12), p.id


def test_flops_training_is_6nd():
    for p in variants("counting.flops_training"):
        g = p.given
        C = 6 * g["params"] * g["tokens"]
        expect = C / 10 ** g["unit_exponent"] if g["ask"] == "compute" else C / (1e15 * 86400)
        assert p.key.value == pytest.approx(expect, rel=1e-12), p.id


def test_attention_vs_rnn_vs_flop_counter():
    """RNN: n steps of (1×h)(h×h) and (1×d)(d×h), per gate (an LSTM: 4; issue 22: medium and hard have a
    hidden width h ≠ d); one step's count times n (checked equal to the loop for 4 steps)."""
    for p in variants("counting.attention_vs_rnn"):
        n, d = p.given["n"], p.given["d"]
        hid, gates = p.given.get("h", d), p.given.get("gates", 1)
        q = torch.empty(n, d, device=META)
        attn = _counted(attention, q)
        w_hh, w_xh = torch.empty(hid, hid, device=META), torch.empty(d, hid, device=META)
        h, x = torch.empty(1, hid, device=META), torch.empty(1, d, device=META)
        step = _counted(rnn_step, h, w_hh, w_xh, x)
        assert _counted(lambda *a: [rnn_step(*a) for _ in range(4)], h, w_hh, w_xh, x) == 4 * step
        rnn = n * gates * step
        if p.type == "mcq":
            (ci,) = p.key.correct
            assert p.options[ci].startswith("Self-attention" if attn < rnn else "The RNN"), p.id
        else:
            assert p.key.value == pytest.approx(attn / rnn, rel=1e-12), p.id


# ------------------------------------------------------------------ memory vs tensor bytes

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}
UNITS = {"GB": 10**9, "GiB": 2**30, "MiB": 2**20}


def nbytes(*shape, dtype):
    t = torch.empty(*shape, dtype=DTYPES[dtype], device=META)
    return t.numel() * t.element_size()


def test_attention_memory_vs_tensor_bytes():
    for p in variants("counting.attention_memory"):
        g = p.given
        b = g["n_layers"] * nbytes(g["batch"], g["n_heads"], g["seq"], g["seq"], dtype=g["dtype"])
        assert p.key.value == pytest.approx(b / UNITS[g["unit"]], rel=1e-12), p.id


def test_kv_cache_vs_tensor_bytes():
    from solver.counting.presets import get_preset

    for p in variants("counting.kv_cache"):
        g = p.given
        cfg = get_preset(g["preset"]).config
        assert (g["n_layers"], g["n_heads"], g["d_head"]) == (cfg.n_layers, cfg.n_heads, cfg.d_model // cfg.n_heads)
        held = min(g["seq"], {"mistral-7b": 4096}.get(g["preset"], g["seq"]))  # Mistral 7B Table 1: window 4096
        k = nbytes(g["n_layers"], g["batch"], held, g["n_kv_heads"], g["d_head"], dtype=g["dtype"])
        assert p.key.value == pytest.approx(2 * k / UNITS[g["unit"]], rel=1e-12), p.id  # K and V


@functools.cache
def preset_numel(name):
    from solver.counting.presets import get_preset
    from solver.models import build_model

    return numel(build_model(get_preset(name).config, "meta"))


def test_training_memory_vs_tensor_bytes():
    """bf16 weights and grads, fp32 master, m and v: five tensors of N elements."""
    for p in variants("counting.training_memory"):
        g = p.given
        N = g["params"]
        assert N == preset_numel(g["preset"])
        b = sum(nbytes(N, dtype=dt) for dt in ("bf16", "bf16", "fp32", "fp32", "fp32"))
        assert p.key.value == pytest.approx(b / UNITS[g["unit"]], rel=1e-12), p.id


def test_chinchilla_vs_formula():
    for p in variants("scaling.chinchilla"):
        g = p.given
        N, C = g["params"], g["compute"]
        if g["ask"] == "compute":
            assert C == 6 * N * 20 * N and p.key.value == pytest.approx(C / 10 ** g["unit_exponent"], rel=1e-12)
        elif g["ask"] == "tokens":
            assert p.key.value == pytest.approx(C / (6 * N) / 1e9, rel=1e-12)
        else:
            assert p.key.value == pytest.approx(math.sqrt(C / 120) / 1e9, rel=1e-9)


# ------------------------------------------------------------------ pinned hand-worked variants


def test_pin_params_mha():
    """d = 5,440 (issue 39: any multiple of 64 up to 8,192), h = 64, no biases: 4·5440² = 4 × 29,593,600 =
    118,374,400 (with biases + 4·5440 = 21,760 → 118,396,160)."""
    p = easy("counting.params_mha")
    assert (p.given["d_model"], p.given["bias"]) == (5440, False)
    assert grade(p, 118_374_400).correct and "counted_biases" in grade(p, 118_396_160).misconception.id.split("+")


def test_pin_params_ffn():
    """d = 1,216 (issue 22: any multiple of 64), d_ff = 4,864, GELU with biases: 2·1216·4864 + 4864 + 1216 =
    11,829,248 + 6,080 = 11,835,328."""
    p = easy("counting.params_ffn")
    assert (p.given["d_model"], p.given["ffn"], p.given["bias"]) == (1216, "gelu", True)
    assert grade(p, 11_835_328).correct and "forgot_biases" in grade(p, 11_829_248).misconception.id.split("+")


def test_pin_params_norm():
    """One LayerNorm over 7,936 (issue 22: any multiple of 64): γ and β, 2·7,936 = 15,872; γ only (7,936) is the
    diagnosed slip."""
    p = easy("counting.params_norm")
    assert (p.given["d_model"], p.given["norm"]) == (7936, "layernorm")
    assert grade(p, 15872).correct and "layernorm_without_beta" in grade(p, 7936).misconception.id.split("+")


def test_pin_params_layer():
    """Encoder layer d = 1,664 (issue 39: any multiple of 64), d_ff = 4,928 (any multiple of 64 from 2d to 4d), no
    biases (easy), LayerNorms γ only: attention 4·1664² = 11,075,584; FFN 2·1664·4928 = 16,400,384; two LayerNorms
    2·1664 = 3,328; total 27,479,296 (without the norms 27,475,968)."""
    p = easy("counting.params_layer")
    assert p.given["kind"] == "encoder" and (p.given["d_model"], p.given["d_ff"]) == (1664, 4928) and not p.given["bias"]
    assert grade(p, 27_479_296).correct and "forgot_norm_params" in grade(p, 27_475_968).misconception.id.split("+")


def test_pin_params_model():
    """V = 99,976 (issue 39: any vocabulary size), d = 576, L = 5, RoPE (no table), tied, no biases, LayerNorms γ
    only (easy): 99,976·576 = 57,586,176 + 5 × (4·576² + 2·576·2304 + 2·576 = 1,327,104 + 2,654,208 + 1,152) + 576
    = 77,499,072; counting the tied head again adds 57,586,176 → 135,085,248."""
    p = easy("counting.params_model")
    assert p.given["config"]["vocab_size"] == 99976 and p.given["config"]["pos"] == "rope"
    assert grade(p, 77_499_072).correct and "tied_counted_twice" in grade(p, 135_085_248).misconception.id.split("+")


def test_pin_params_lora():
    """d = 3584, L = 41 (issue 39: any multiple of 256, any depth from 12 to 80), r = 8 on W_Q, W_V:
    8·(3584 + 3584) = 57,344 per matrix × 2 × 41 = 4,702,208; A or B only: 2,351,104."""
    p = easy("counting.params_lora")
    assert grade(p, 4_702_208).correct and "one_factor_only" in grade(p, 2_351_104).misconception.id.split("+")


def test_pin_params_kv_proj():
    """d = 4864, h = 16 (d_h = 304), 8 K/V heads: W_K, W_V are 4864 × 2432: 2 × 11,829,248 = 23,658,496; with
    n_heads 2 × 4864² = 47,316,992."""
    p = easy("counting.params_kv_proj")
    assert grade(p, 23_658_496).correct and "used_n_heads" in grade(p, 47_316_992).misconception.id.split("+")


def test_pin_flops_attention():
    """n = 1344, d = 1152 (issue 39: any multiple of 64), B = 1, QKᵀ only (easy asks one product): 2·1344²·1152 =
    4,161,798,144; multiply-adds 1344²·1152 = 2,080,899,072."""
    p = easy("counting.flops_attention")
    assert (p.given["ask"], p.given["n"], p.given["d_model"]) == ("qk", 1344, 1152)
    assert grade(p, 4_161_798_144).correct and "macs_vs_flops" in grade(p, 2_080_899_072).misconception.id.split("+")


def test_pin_flops_forward():
    """V = 19,448, d = 1920, L = 13, n = 64, B = 1 (issue 39: the length and the vocabulary follow from shares of the
    total drawn to fall off towards 20 %): per layer projections 4·2·64·1920² = 1,887,436,800, QKᵀ+AV 2·2·64²·1920 =
    31,457,280, FFN 2·2·64·1920·7680 = 3,774,873,600 → 5,693,767,680 × 13 = 74,018,979,840; LM head
    2·64·1920·19,448 = 4,779,540,480 (6.1 %); total 78,798,520,320 → 78.80 GFLOPs."""
    p = easy("counting.flops_forward")
    assert p.given["seq"] == 64 and grade(p, 78.80).correct


def test_pin_flops_training():
    """N = 1.0B, D = 77B (issue 39: any two significant figures): 6 × 1e9 × 7.7e10 = 4.62e20 → 4.62 (×10²⁰);
    2ND = 1.54."""
    p = easy("counting.flops_training")
    assert (p.given["params"], p.given["tokens"]) == (1_000_000_000, 77_000_000_000)
    assert grade(p, 4.62).correct and "forgot_backward" in grade(p, 1.54).misconception.id.split("+")


def test_pin_attention_vs_rnn():
    """n = 2496, d = 1792, hidden width h = 1280 (issue 22: h ≠ d; issue 39: multiples of 64 from wide ranges):
    attention 4n²d = 4·2496²·1792 = 44,656,754,688; RNN 2nh(h + d) = 2·2496·1280·3072 = 19,629,342,720: the RNN is
    cheaper, attention needs 2nd/(h(h + d)) = 8,945,664/3,932,160 = 2.275 times its FLOPs, printed 2.28 (three
    figures, half up as on paper, from the exact ratio: the double 2.275 is 2.27499... and once printed 2.27). The
    slip drawn (W_hh only: RNN 2nh² = 8,178,892,800) gives 5.46 times; the options cross {2.28, 5.46} with the two
    directions."""
    p = easy("counting.attention_vs_rnn")
    (ci,) = p.key.correct
    assert (p.given["n"], p.given["d"], p.given["h"]) == (2496, 1792, 1280)
    assert p.options[ci] == "The RNN is cheaper: self-attention needs 2.28 times its FLOPs"
    assert "only_w_hh" in grade(p, p.options.index("The RNN is cheaper: self-attention needs 5.46 times its FLOPs")).misconception.id.split("+")


def test_pin_attention_memory():
    """B = 21, h = 14, n = 1231, fp32 (issue 39: the answer's size drawn first, the length solved for it):
    21·14·1231²·4 = 294 × 1,515,361 × 4 = 1,782,064,536 bytes = 1.66 GiB (1.78 GB); in fp16 half, 0.83."""
    p = easy("counting.attention_memory")
    assert (p.given["batch"], p.given["n_heads"], p.given["seq"], p.given["dtype"]) == (21, 14, 1231, "fp32")
    assert grade(p, 1.66).correct and "gb_vs_gib" in grade(p, 1.78).misconception.id.split("+")
    assert "wrong_dtype_bytes" in grade(p, 0.83).misconception.id.split("+")


def test_pin_kv_cache():
    """Llama 2 13B: L = 40, 40 K/V heads × 128, B = 37, n = 14,948 (issue 39: the answer's size drawn first, the
    length solved for it), bf16: 2·40·37·14948·40·128·2 = 44,246,080 × 10,240 = 453,079,859,200 bytes
    = 421.96 GiB (453.08 GB); K only 210.98."""
    p = easy("counting.kv_cache")
    assert (p.given["preset"], p.given["batch"], p.given["seq"], p.given["unit"]) == ("llama2-13b", 37, 14948, "GiB")
    assert grade(p, 421.96).correct and "forgot_k_and_v" in grade(p, 210.98).misconception.id.split("+")
    assert "gb_vs_gib" in grade(p, 453.08).misconception.id.split("+")


def test_pin_training_memory():
    """Llama 2 13B, N = 13,015,864,320: 16N = 208,253,829,120 bytes = 208.25 GB (193.95 GiB: the unit mistake);
    bf16 weights only 2N = 26.03 GB. (Issue 22 widened the draws: the test finds an easy draw of that model in bf16.)"""
    fam = get_family("counting.training_memory")
    p = next(q for s in range(2000) if (q := fam.generate(s, "easy")).given["preset"] == "llama2-13b"
             and q.given["precision"] == "bf16")
    assert p.given["params"] == 13_015_864_320 and grade(p, 208.25).correct
    assert "weights_only" in grade(p, 26.03).misconception.id.split("+") and "gb_vs_gib" in grade(p, 193.95).misconception.id.split("+")


def test_pin_chinchilla():
    """N = 124.1 million (easy, seed 0; issue 39: the answer in its unit drawn first, N to four significant figures),
    D = 20N = 2.482e9: C = 6·1.241e8·2.482e9 = 1.8480972e18 = 184.80972 (×10¹⁶) → 184.81; with 2N: 61.60324 → 61.60;
    D = N tokens: 6·(1.241e8)² = 9.240486e16 → 9.24."""
    p = easy("scaling.chinchilla")
    assert p.given["ask"] == "compute" and p.given["unit_exponent"] == 16 and p.given["params"] == 124_100_000
    assert grade(p, 184.81).correct and "forgot_backward" in grade(p, 61.60).misconception.id.split("+")
    assert "forgot_twenty" in grade(p, 9.24).misconception.id.split("+")


def test_families_import_no_torch():
    import subprocess
    import sys

    code = ("import sys, question_bank.families.counting_params, question_bank.families.counting_flops, "
            "question_bank.families.counting_memory, question_bank.families.counting_scaling, question_bank.families.hardware; "
            "print(sorted(m for m in ('numpy', 'sympy', 'torch') if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_flops_forward_dropped_terms_are_a_modest_share():
    """Issue 39: QKᵀ/AV and the LM head are each at most about 20 % of a forward (or training) pass, recomputed here
    from the printed sizes (2·B·n·d·V for the head, 4·B·n²·d·L for the scores, over the exact total), so that
    dropping a term and counting it twice move the key about as far either way (a 2-layer model with a 130,000-word
    head spent 90 % in the head)."""
    for level in ("easy", "medium", "hard"):
        for seed in range(60):
            p = FAMILIES["counting.flops_forward"].generate(seed, level)
            c, B, n = p.given["config"], p.given["batch"], p.given["seq"]
            d, L, V = c["d_model"], c["n_layers"], c["vocab_size"]
            per_layer = 2 * B * n * (4 * d * d + 2 * n * d + 8 * d * d)
            total = L * per_layer + 2 * B * n * d * V
            assert math.isclose(total * (3 if level == "hard" else 1) / 1e9, p.key.value, rel_tol=1e-9), p.id
            for term in (2 * B * n * d * V, 4 * B * n * n * d * L):
                assert 0.003 <= term / total <= 0.21, (p.id, term / total)


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_flops_forward_shares_fall_off_towards_their_ceiling(level):
    """Issue 39: the MCQ moves the key by × (1 − s) (a term dropped) or × (1 + s) (counted twice), s the term's share;
    in log the drop is the longer step (0.097 against 0.079 decades at s = 0.2), so when shares near the ceiling are
    common, a gap longer than any doubling gives tells which way the slip went, and so where the key is. Each share,
    recomputed from the printed sizes, is rare near its ceiling: above 15 % in at most 6 % of draws, and at most 5 % in
    a quarter of them or more (the shares drawn evenly from 3 % to 20 % put 41 % of the heads above 15 %)."""
    shares = {"scores": [], "head": []}
    for seed in range(300):
        g = FAMILIES["counting.flops_forward"].generate(seed, level).given
        c, n = g["config"], g["seq"]
        d, L, V = c["d_model"], c["n_layers"], c["vocab_size"]
        per_token = L * (24 * d * d + 4 * n * d) + 2 * d * V  # FLOPs per token of one forward pass, matmuls only
        shares["scores"].append(4 * L * n * d / per_token)
        shares["head"].append(2 * d * V / per_token)
    for name, xs in shares.items():
        assert sum(x > 0.15 for x in xs) <= 0.06 * len(xs), (name, sorted(xs)[-20:])
        assert sum(x <= 0.05 for x in xs) >= 0.25 * len(xs), (name, sorted(xs)[:20])
