"""The model zoo: every exact count within the distance its note explains of the published
figure, and the seeds' models pinned to counts derived by hand from the seeds' code."""

from __future__ import annotations

import re

import pytest

from solver.counting.presets import PRESETS, get_config, get_preset
from solver.errors import SolverInputError

WITH_FIGURE = [p for p in PRESETS.values() if p.published and p.tolerance is not None]


def _figure(text: str) -> int:
    """'124M' → 124·10^6, '13.0B' → 13·10^9, '~110M' → 110·10^6, '411,073' → 411073."""
    m = re.fullmatch(r"~?([\d.,]+)([MB]?)", text)
    assert m, text
    value = float(m[1].replace(",", ""))
    return round(value * {"": 1, "M": 10**6, "B": 10**9}[m[2]])


@pytest.mark.parametrize("preset", WITH_FIGURE, ids=lambda p: p.name)
def test_exact_count_is_within_the_explained_distance(preset):
    assert abs(preset.exact() - preset.published) <= preset.tolerance * preset.published
    assert preset.note and preset.source


@pytest.mark.parametrize("preset", [p for p in PRESETS.values() if p.published], ids=lambda p: p.name)
def test_published_integer_matches_the_printed_text(preset):
    assert _figure(preset.published_text) == preset.published


@pytest.mark.parametrize("name, exact", [
    # GPT-2 small: see tests/solver/counting/test_params.py::test_gpt2_small_by_hand
    ("gpt2", 124_439_808),
    # BERT-base: embeddings 30522·768 + 512·768 + 2·768 + LN 1,536 = 23,837,184;
    # layer 4·(768² + 768) + 4,722,432 + 2·1,536 = 7,087,872, ×12 = 85,054,464; pooler 768² + 768 = 590,592
    ("bert-base", 109_482_240),
    # seed 000 encoder: 5000·128 = 640,000; layer 4·(128² + 128) + (128·512 + 512 + 512·128 + 128) + 2·256
    # = 66,048 + 131,712 + 512 = 198,272, ×2 = 396,544; final LN 256 → 1,036,800
    ("seed000-encoder", 1_036_800),
    # seed 000 MiniGPT: 1000·64 + 256·64 = 80,384; layer 4·(64² + 64) + (64·512 + 512 + 512·64 + 64) + 2·128
    # = 16,640 + 66,112 + 256 = 83,008, ×2 = 166,016; final LN 128; tied head 0 → 246,528
    ("seed000-minigpt", 246_528),
    # seed 000 BERTClassifier: 501·64 + 33·64 = 34,176; layer 16,640 + (64·256 + 256 + 256·64 + 64) + 256
    # = 49,984, ×2 = 99,968; final LN 128; Linear(64,64) 4,160 + Linear(64,4) 260; [CLS] 64 → 138,756
    ("seed000-bert-classifier", 138_756),
    # seed 004 Mini-GPT: 65·128 + 64·128 = 16,512; block 3·128² + 128² + 128 + 131,712 + 512 = 197,888,
    # ×4 = 791,552; final LN 256; head 128·65 + 65 = 8,385 → 816,705 (the seed prints 411,073)
    ("seed004-minigpt", 816_705),
    # seed 001 BERT-Base: 30522·768 = 23,440,896; layer 4·768² + 4,722,432 + 3,072 = 7,084,800, ×12 =
    # 85,017,600; final LN 1,536 → 108,460,032
    ("seed001-bert-base", 108_460_032),
    # Llama-2-7B: 2·32000·4096 = 262,144,000; layer 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360,
    # ×32 = 6,476,267,520; final norm 4,096 → 6,738,415,616
    ("llama2-7b", 6_738_415_616),
])
def test_hand_derived_counts(name, exact):
    assert get_preset(name).exact() == exact


def test_the_seed_figure_that_is_wrong_is_flagged_as_wrong():
    p = get_preset("seed004-minigpt")
    assert p.tolerance is None and p.published == 411_073 and p.exact() != p.published


def test_every_preset_is_valid_and_names_itself():
    for name, p in PRESETS.items():
        assert p.name == name and get_config(name).name == name
        p.config.validate()


def test_lookup_is_forgiving_and_errors_suggest():
    assert get_preset("GPT2_Small").name == "gpt2"
    assert get_preset("Llama-2-7B").name == "llama2-7b"
    with pytest.raises(SolverInputError, match="did you mean"):
        get_preset("gpt2-smal")
