"""T5 and ViT counts against HuggingFace's models built on the meta device (to the integer) and the
papers' rounded sizes; MLP counts against nn.Sequential's numel and FlopCounterMode."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from solver.counting.mlp import mlp_flops, mlp_params
from solver.counting.t5 import T5_PRESETS, T5_PUBLISHED, T5Config, t5_params
from solver.counting.vit import VIT_PRESETS, VIT_PUBLISHED, ViTConfig, vit_params
from solver.errors import SolverInputError

transformers = pytest.importorskip("transformers")


def hf_t5_numel(c: T5Config) -> int:
    hc = transformers.T5Config(vocab_size=c.vocab_size, d_model=c.d_model, d_kv=c.d_kv, num_heads=c.n_heads, d_ff=c.d_ff,
                               num_layers=c.n_layers, num_decoder_layers=c.decoder_layers,
                               relative_attention_num_buckets=c.num_buckets,
                               feed_forward_proj="gated-gelu" if c.gated_ffn else "relu")
    with torch.device("meta"):
        m = transformers.T5ForConditionalGeneration(hc)
        if not c.tie_embeddings:  # a v1.1 checkpoint's own LM head (transformers ≥ 5 always ties T5)
            m.lm_head.weight = nn.Parameter(torch.empty(c.vocab_size, c.d_model))
    return sum(p.numel() for p in m.parameters())


@pytest.mark.parametrize("name", sorted(T5_PRESETS))
def test_t5_presets_match_huggingface(name):
    assert t5_params(T5_PRESETS[name]).answer == hf_t5_numel(T5_PRESETS[name])


@pytest.mark.parametrize("name", sorted(T5_PUBLISHED))
def test_t5_published_sizes(name):
    """Raffel et al. 2020 §3.7: Small ≈ 60M, Base ≈ 220M, Large ≈ 770M (within 5%)."""
    assert t5_params(T5_PRESETS[name]).answer == pytest.approx(T5_PUBLISHED[name], rel=0.05)


def test_t5_small_exact():
    """T5-small: 32128·512 + 6·(4·512² + 2·512·2048 + 2·512) + 6·(8·512² + 2·512·2048 + 3·512) + 2·32·8 + 2·512 = 60,506,624."""
    assert t5_params(T5_PRESETS["t5-small"]).answer == 60_506_624


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.sampled_from((4, 8, 16)), st.sampled_from((8, 16, 32)),
       st.booleans(), st.booleans())
def test_t5_counts_random_configs(le, ld, h, dk, nb, gated, tied):
    c = T5Config(vocab_size=50, d_model=16, d_kv=dk, n_heads=h, d_ff=24, n_layers=le, n_decoder_layers=ld, num_buckets=nb,
                 gated_ffn=gated, tie_embeddings=tied)
    assert t5_params(c).answer == hf_t5_numel(c)


def hf_vit_numel(c: ViTConfig) -> int:
    hc = transformers.ViTConfig(image_size=c.image_size, patch_size=c.patch_size, num_channels=c.channels,
                                hidden_size=c.d_model, num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
                                intermediate_size=c.d_ff, num_labels=max(c.n_classes, 1))
    with torch.device("meta"):
        m = (transformers.ViTForImageClassification(hc) if c.n_classes
             else transformers.ViTModel(hc, add_pooling_layer=c.pooler))
    return sum(p.numel() for p in m.parameters())


@pytest.mark.parametrize("pooler,classes", [(False, 0), (True, 0), (False, 1000)])
def test_vit_b16_matches_huggingface(pooler, classes):
    c = ViTConfig(pooler=pooler, n_classes=classes)
    assert vit_params(c).answer == hf_vit_numel(c)


def test_vit_b16_paper():
    """Dosovitskiy et al. 2021, Table 1: ViT-Base, 86M parameters (the encoder: 85,798,656)."""
    assert round(vit_params(VIT_PRESETS["vit-b/16"]).answer / 1e6) == VIT_PUBLISHED["vit-b/16"] // 10**6


@given(st.sampled_from((8, 16, 32)), st.sampled_from((2, 4, 8)), st.integers(1, 2), st.sampled_from((1, 3)),
       st.booleans(), st.integers(0, 5))
def test_vit_random_configs(image, patch, layers, channels, pooler, classes):
    c = ViTConfig(image_size=image, patch_size=patch, channels=channels, d_model=8, n_layers=layers, n_heads=2, d_ff=12,
                  pooler=pooler and not classes, n_classes=classes)
    assert vit_params(c).answer == hf_vit_numel(c)


def test_vit_bad_patch():
    with pytest.raises(SolverInputError, match="patch"):
        vit_params(ViTConfig(image_size=30, patch_size=16))


def sequential(sizes, bias):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b, bias=bias), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


@given(st.lists(st.integers(1, 64), min_size=2, max_size=6), st.booleans(), st.integers(1, 4))
def test_mlp_against_sequential(sizes, bias, batch):
    """numel of nn.Sequential of Linear layers; FlopCounterMode's 2 FLOPs per multiply-add (it skips bias adds)."""
    net = sequential(sizes, bias)
    assert mlp_params(sizes, bias=bias).answer == sum(p.numel() for p in net.parameters())
    with FlopCounterMode(display=False) as fc:
        net(torch.zeros(batch, sizes[0]))
    assert mlp_flops(sizes, batch=batch).answer == fc.get_total_flops()
    assert mlp_flops(sizes, batch=batch, convention="macs").answer * 2 == fc.get_total_flops()


def test_mlp_worked_example():
    """784 → 128 → 10 with biases: 784·128 + 128 + 128·10 + 10 = 101,770 (the GATE-style answer)."""
    assert mlp_params([784, 128, 10]).answer == 101_770
    assert mlp_params([784, 128, 10], bias=False).answer == 101_632
