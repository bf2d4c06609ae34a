"""The analytic counts (solver.counting) against the reference PyTorch model (solver.models).

Two independent derivations of each number: a formula written from the config, and a module
built from the same config and measured (numel of its parameters, FlopCounterMode around a real
call, the bytes of the cache tensors it holds). Hypothesis draws configurations across every
option (tests/config_strategies.py).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from solver.counting import kv_cache_bytes_cfg, matmul_flops, param_breakdown
from solver.counting.config import ModelConfig
from solver.counting.presets import PRESETS
from solver.models import build_model
from solver.models.verify import (
    instantiated_breakdown,
    measure_decode,
    measure_forward,
    measure_forward_and_train,
    measure_train_by_layers,
    sliced_stacks,
    stack_layers,
    verify,
)
from tests.config_strategies import decoding_configs, transformer_configs

# ---- a pinned example, worked by hand --------------------------------------------------------

TINY = ModelConfig(arch="decoder", d_model=4, n_layers=1, n_heads=2, d_ff=8, ffn="gelu", vocab_size=10,
                   max_positions=6, pos="learned", tied_embeddings=True, lm_head=True, bias=True)


def test_tiny_decoder_worked_by_hand():
    """d=4, L=1, h=2 (d_h=2), d_ff=8, V=10, P=6, biases, LayerNorm, tied head.

    Parameters: token 10·4 = 40; positions 6·4 = 24; Q,K,V,O 4·(4·4 + 4) = 80;
    FFN 4·8 + 8 + 8·4 + 4 = 76; two LayerNorms 2·(4 + 4) = 16; final norm 8; tied head 0.
    Total 40 + 24 + 80 + 76 + 16 + 8 = 244.

    Forward FLOPs, B = 1, n = 3 (2 per multiply-add): Q,K,V,O 4 · 2·3·4·4 = 384;
    QKᵀ and AV 2 · 2·1·2·3·3·2 = 144; FFN 2 · 2·3·4·8 = 384; LM head 2·3·4·10 = 240.
    Total 1152; training = 3 × 1152 = 3456.
    Decode (one token attending to 3 positions): 4 · 2·1·4·4 = 128; 2 · 2·1·2·1·3·2 = 48;
    2 · 2·1·4·8 = 128; 2·1·4·10 = 80. Total 384.
    KV cache after it: 2 (K, V) · 1 layer · 1 · 3 positions · 2 heads · 2 · 4 bytes = 96.
    """
    model = build_model(TINY, "cpu")
    assert sum(p.numel() for p in model.parameters()) == 244
    assert param_breakdown(TINY).total == 244
    assert measure_forward_and_train(model, 1, 3, impl="math") == (1152, 3456)
    assert matmul_flops(TINY, 1, 3, "forward").total == 1152
    assert matmul_flops(TINY, 1, 3, "train").total == 3456
    flops, cache = measure_decode(model, 1, 3, impl="math")
    assert flops == 384 == matmul_flops(TINY, 1, 3, "decode").total
    assert cache.nbytes() == 96 == kv_cache_bytes_cfg(TINY, 1, 3, "fp32")


# ---- properties over random configurations -------------------------------------------------

@given(cfg=transformer_configs())
def test_params_instantiated_equal_analytic_hypo(cfg):
    """numel of the unique parameters of the module == the analytic count, in total and per group."""
    model = build_model(cfg, "meta")
    mine = instantiated_breakdown(model)
    theirs = param_breakdown(cfg)
    assert sum(mine.values()) == theirs.total_with_lora
    assert {g: n for g, n in mine.items() if n} == {g: n for g, n in theirs.by_group().items() if n}
    base = build_model(cfg.replace(lora_rank=0), "meta")
    assert sum(p.numel() for p in base.parameters()) == theirs.total


def _check_flops(cfg, batch, seq, device):
    model = build_model(cfg, device)
    impl = "math" if device == "cpu" else "sdpa"
    forward, train = measure_forward_and_train(model, batch, seq, impl)
    assert forward == matmul_flops(cfg, batch, seq, "forward").total
    assert train == matmul_flops(cfg, batch, seq, "train").total
    if cfg.arch != "encoder":
        decode, _ = measure_decode(model, batch, seq, impl)
        assert decode == matmul_flops(cfg, batch, seq, "decode").total


@given(cfg=transformer_configs(), batch=st.integers(1, 2), seq=st.integers(2, 6))
def test_flops_measured_equal_analytic_hypo(cfg, batch, seq):
    """FlopCounterMode's FLOPs of forward, train and decode steps == the analytic matmul FLOPs
    (on the CPU, with the explicit "math" attention, whose two matmuls FlopCounterMode sees)."""
    _check_flops(cfg, batch, seq, "cpu")


@settings(max_examples=max(5, settings().max_examples // 5))  # meta ops run in Python: 10× slower
@given(cfg=transformer_configs(), batch=st.integers(1, 2), seq=st.integers(2, 6))
def test_flops_on_meta_with_sdpa_equal_analytic_hypo(cfg, batch, seq):
    """The same on the meta device, where ``scaled_dot_product_attention`` itself runs (what
    ``qkv models verify`` measures for the zoo)."""
    _check_flops(cfg, batch, seq, "meta")


@given(cfg=decoding_configs, batch=st.integers(1, 3), seq=st.integers(2, 8))
def test_kv_cache_bytes_equal_cache_tensors_hypo(cfg, batch, seq):
    """After a real prefill of seq−1 tokens and one decode step, the bytes of the cache tensors
    the model holds == the KV-cache formula (self-attention; and with cross-attention K/V)."""
    model = build_model(cfg, "cpu")
    _, cache = measure_decode(model, batch, seq, impl="sdpa", prefill="run")
    assert cache.nbytes() == kv_cache_bytes_cfg(cfg, batch, seq, "fp32")
    if cfg.arch == "encoder-decoder":
        assert cache.nbytes(cross=True) == kv_cache_bytes_cfg(cfg, batch, seq, "fp32", include_cross=True)
    for i, layer in enumerate(cache.self_attn):  # K/V heads stored once, not repeated per query head
        held = min(seq, cfg.sliding_window) if cfg.is_local_layer(i) else seq  # a rolling buffer of W
        if cfg.is_mla:  # the latent and the one rotary key, not per-head K and V
            assert layer.k.shape == (batch, 1, held, cfg.kv_lora_rank)
            assert layer.v.shape == (batch, 1, held, cfg.qk_rope_head_dim)
        else:
            assert layer.k.shape == (batch, cfg.kv_heads, held, cfg.head_dim)


def test_macs_convention_is_half_the_measured_flops():
    cfg = TINY.replace(n_layers=2, n_kv_heads=1)
    model = build_model(cfg, "meta")
    forward, _ = measure_forward_and_train(model, 2, 5)
    assert 2 * matmul_flops(cfg, 2, 5, "forward", convention="macs").total == forward


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_verify_record_reports_every_check(device):
    rec = verify(TINY.replace(arch="encoder-decoder", n_layers=2, name="tiny-ed"), device, batch=2, seq=4)
    assert rec.ok, [c for c in rec.checks if not c.ok]
    names = {c.quantity for c in rec.checks}
    assert {"params", "flops[forward]", "flops[train]", "flops[decode]", "kv_cache_bytes",
            "kv_cache_bytes[+cross]", "params[cross_attention]"} <= names


def test_verify_detects_a_wrong_count(monkeypatch):
    """A count that is off by one multiply-add is reported as a mismatch."""
    import solver.counting as counts

    real = counts.matmul_flops

    class Off:
        def __init__(self, report):
            self.total = report.total + 2

    monkeypatch.setattr(counts, "matmul_flops", lambda *a, **k: Off(real(*a, **k)))
    rec = verify(TINY, "meta", batch=1, seq=3)
    assert not rec.ok
    assert not rec.get("flops[forward]").ok and rec.get("params").ok


def test_flop_counter_sees_meta_attention():
    """The premise of counting on meta: FlopCounterMode counts scaled_dot_product_attention
    there (as two bmm's), so attention FLOPs are not silently zero."""
    from torch.utils.flop_counter import FlopCounterMode

    q = torch.empty(2, 3, 5, 4, device="meta")
    with FlopCounterMode(display=False) as fc:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert fc.get_total_flops() == 2 * (2 * 2 * 3 * 5 * 5 * 4)


# ---- the fast paths of `qkv models verify` agree with the plain ones ---------------------------

def plain_counter():
    return FlopCounterMode(display=False)


@settings(max_examples=max(10, settings().max_examples // 3))  # six measurements per example
@given(cfg=transformer_configs(), batch=st.integers(1, 2), seq=st.integers(2, 6))
def test_total_counter_counts_what_flop_counter_mode_counts_hypo(cfg, batch, seq):
    """TotalFlopCounter (FlopCounterMode without its per-module table) == FlopCounterMode, for a
    forward pass, a forward + backward pass and a decode step."""
    model = build_model(cfg, "cpu")
    assert measure_forward_and_train(model, batch, seq, "math") == \
        measure_forward_and_train(model, batch, seq, "math", counter=plain_counter)
    assert measure_forward(model, batch, seq, "math") == measure_forward(model, batch, seq, "math", plain_counter)
    if cfg.arch != "encoder":
        assert measure_decode(model, batch, seq, "math")[0] == \
            measure_decode(model, batch, seq, "math", counter=plain_counter)[0]


@settings(max_examples=max(10, settings().max_examples // 3))  # up to four models per example
@given(cfg=transformer_configs(max_layers=4), batch=st.integers(1, 2), seq=st.integers(2, 6))
def test_train_by_layers_equals_the_whole_backward_pass_hypo(cfg, batch, seq):
    """T(L) = T(1) + (L − 1)·(T(2) − T(1)) per stack, with T measured on 1- and 2-layer slices,
    equals FlopCounterMode around the backward pass of the whole L-layer model (and the analytic
    count); for an encoder-decoder each deep stack is sliced, a shallow one kept as it is."""
    assume(sliced_stacks(cfg))
    whole = measure_forward_and_train(build_model(cfg, "cpu"), batch, seq, "math")[1]
    by_layers = measure_train_by_layers(cfg, batch, seq, "math", device="cpu")
    assert by_layers == whole == matmul_flops(cfg, batch, seq, "train").total


@pytest.mark.parametrize("name", ["seed004-minigpt", "seed001-mini-encoder", "transformer-base", "gpt2"])
def test_train_by_layers_equals_the_whole_backward_pass_for_presets(name):
    """The same identity on presets of each architecture (6 + 6 layers for the Transformer,
    12 for GPT-2), on the meta device at seq 16, and ``verify``'s default uses it."""
    cfg = PRESETS[name].config
    assert sliced_stacks(cfg) == list(stack_layers(cfg))
    whole = measure_forward_and_train(build_model(cfg, "meta"), 1, 16)[1]
    assert measure_train_by_layers(cfg, 1, 16) == whole
    by_layers, full = (verify(cfg, "meta", seq=16, modes=("train",), train=t).get("flops[train]")
                       for t in ("by-layers", "full"))
    assert by_layers.measured == full.measured == whole and by_layers.ok
    assert "slices" in by_layers.note and not full.note


def test_train_by_layers_takes_each_layer_from_the_slices(monkeypatch):
    """A 5-layer decoder: one measurement at 1 layer, one at 2, none of the whole model; a layer
    that counted one multiply-add more would make the sum 5 × 2 FLOPs larger."""
    import solver.models.verify as sv

    cfg = TINY.replace(n_layers=5)
    built = []
    real_build = build_model

    def recording_build(c, device="meta", dtype="fp32"):
        built.append(c.n_layers)
        return real_build(c, device, dtype)

    monkeypatch.setattr("solver.models.build_model", recording_build)
    assert sv.measure_train_by_layers(cfg, 1, 4) == matmul_flops(cfg, 1, 4, "train").total
    assert built == [1, 2]


def test_verify_detects_a_wrong_train_count_when_measured_by_layers(monkeypatch):
    import solver.counting as counts

    real = counts.matmul_flops

    class Off:
        def __init__(self, report, mode):
            self.total = report.total + (2 if mode == "train" else 0)

    monkeypatch.setattr(counts, "matmul_flops", lambda cfg, **k: Off(real(cfg, **k), k["mode"]))
    rec = verify(TINY.replace(n_layers=4), "meta", batch=1, seq=3)
    assert not rec.ok and not rec.get("flops[train]").ok
    assert rec.get("flops[forward]").ok and rec.get("flops[decode]").ok
