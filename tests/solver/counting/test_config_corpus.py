"""Issue 37's corpus: every published config.json under configs/ (sources: configs/README.md and
configs/corpus/SOURCES.md), read by qkv and checked a second, independent way against the class its
``architectures[0]`` names, built here by transformers on the meta device:

- the total equals the sum of that class's parameters (a tied tensor once);
- for a mixture of experts, qkv's active parameters (its own formula) equal the count over the
  experts the class instantiates (:func:`solver.counting.hf_meta.active_params`: modules named
  ``experts``, top-k from the router or the config);
- removing any key the reader names as not read changes no count.

Each file is built once (module-scoped) to keep the run short.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver.counting import param_breakdown
from solver.counting.config_json import read_hf_config, reads_type, type_of, unread_of

transformers = pytest.importorskip("transformers", minversion="5.0")
torch = pytest.importorskip("torch")

HERE = Path(__file__).parent / "configs"
#: Vision-language types whose native reader counts the text model only, with the note it prints: checked
#: against the named class less its vision tower and projector (issue 37 asks for the whole checkpoint:
#: a gap these readers name, not a silent one)
TEXT_ONLY: dict[str, str] = {}  # none left: llama4's wrapper is counted whole by its class
FILES = sorted(HERE.glob("*.json")) + sorted((HERE / "corpus").glob("*.json"))
#: Files whose ``architectures[0]`` is a remote-code class name transformers spells otherwise: the class transformers
#: registers for the file's model_type (qkv counts it and says so in the answer, ``not_the_named_class``)
REGISTERED = {"kimi-k2.5.json": "Kimi_K25ForConditionalGeneration"}


def test_mistral_small_3_1_counts_its_untied_head_and_vision_tower():
    """Issue 37's 24B file: 24,011,361,280 with the class the file names, where the old fallback and a
    wrapper tied by transformers 5's default gave 23,340,272,640 (the untied LM head, 131,072 × 5,120 =
    671,088,640, left out)."""
    from solver.counting.hf_meta import count_with_transformers

    theirs = count_with_transformers(json.loads((HERE / "corpus" / "mistral-small-3.1-24b.json").read_text()))
    assert theirs.total == 24_011_361_280 == 23_340_272_640 + 131_072 * 5_120
    assert theirs.parts["heads"] == 131_072 * 5_120 and theirs.parts["vision tower"] == 403_305_472
    assert theirs.model_class == "Mistral3ForConditionalGeneration" and theirs.fallback is None


def test_the_corpus_is_what_its_sources_say():
    listed = (HERE / "corpus" / "SOURCES.md").read_text()
    for path in (HERE / "corpus").glob("*.json"):
        assert f"`{path.name}`" in listed, path.name
    for path in HERE.glob("*.json"):
        assert f"`{path.name}`" in (HERE / "README.md").read_text(), path.name
    # issue 37: at least 60 published files over at least 30 model types
    assert len(FILES) >= 60
    assert len({json.loads(p.read_text())["model_type"] for p in FILES}) >= 30


@pytest.fixture(scope="module")
def built():
    """file name -> (total, active or None) of transformers' class built on meta (each once)."""
    from solver.counting.hf_meta import active_params

    cache: dict[str, tuple[int, int | None]] = {}

    def get(path: Path) -> tuple[int, int | None]:
        if path.name not in cache:
            raw = json.loads(path.read_text())
            named = REGISTERED.get(path.name, raw["architectures"][0])
            cls = getattr(transformers, named)
            conf_cls = cls.config_class
            conf = conf_cls.from_dict({k: v for k, v in raw.items()
                                       if k not in ("auto_map", "model_type", "quantization_config")})
            if "tie_word_embeddings" not in raw and conf.get_text_config() is not conf:
                # a wrapper ties its head as its text model says (transformers 5 defaults Mistral3Config to True)
                conf.tie_word_embeddings = conf.get_text_config().tie_word_embeddings
            with torch.device("meta"):
                model = cls(conf)
            total = sum(p.numel() for p in model.parameters())
            cache[path.name] = (total, active_params(model, total)[0])
        return cache[path.name]

    return get


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_published_file_counts_as_the_class_it_names(path, built):
    raw = json.loads(path.read_text())
    total, active = built(path)
    if not reads_type(type_of(raw)):  # a type qkv does not read: counted by the class the file names, parts summed
        from solver.counting.hf_meta import count_with_transformers

        theirs = count_with_transformers(raw)
        assert theirs.total == total and sum(theirs.parts.values()) == total and theirs.active == active
        assert (theirs.fallback is None) == (path.name not in REGISTERED), theirs.fallback
        return
    cfg, notes = read_hf_config(raw)
    pb = param_breakdown(cfg)
    if type_of(raw) in TEXT_ONLY:  # the reader counts text_config and says so: the class's text part
        from solver.counting.hf_meta import count_with_transformers

        assert any(TEXT_ONLY[type_of(raw)] in n for n in notes), notes
        rest = total - count_with_transformers(raw).parts["text model"]
        total, active = total - rest, (None if active is None else active - rest)
    assert pb.total == total, (path.name, pb.total, total)
    if cfg.is_moe:
        assert pb.active == active, (path.name, pb.active, active)
    # a key the reader did not read changes no count: the file without them reads the same
    unread, _ = unread_of(notes)
    if unread:
        cfg2, _ = read_hf_config({k: v for k, v in raw.items() if k not in unread})
        assert param_breakdown(cfg2).total == pb.total


def test_hybrid_and_state_space_files_against_their_model_cards():
    """Jamba 1.5 Mini (AI21's card: 52B total, 12B active; attention on 4 of 32 layers) and FalconMamba 7B
    (7.27B; no attention): the named class's total and active parameters, and the KV cache from
    transformers' config (4 layers × K and V × 8 heads × 128 × 2 B per token; none for FalconMamba)."""
    from solver.counting.hf_meta import count_with_transformers, kv_layout

    jamba = json.loads((HERE / "corpus" / "ai21-jamba-1.5-mini.json").read_text())
    theirs = count_with_transformers(jamba)
    assert abs(theirs.total - 52e9) / 52e9 < 0.01 and abs(theirs.active - 12e9) / 12e9 < 0.01
    assert theirs.experts == {"experts": 16, "top_k": 2, "moe_layers": 16}
    layout = kv_layout(jamba)
    assert sum(b for _, b, _ in layout.bytes(1, 1000, 2)) == 4 * 2 * 8 * 128 * 2 * 1000
    mamba = json.loads((HERE / "corpus" / "falcon-mamba-7b.json").read_text())
    assert count_with_transformers(mamba).total == 7_272_665_088
    assert sum(b for _, b, _ in kv_layout(mamba).bytes(1, 1000, 2)) == 0


#: Parameter counts published for a corpus file's model, as printed, with their source: what ``qkv solve params
#: --config FILE --json`` answers must round to each (to half a unit of its last printed digit; a sum of
#: several printed figures to the sum of their half units). ``non_embedding``: total less vocab × hidden.
PUBLISHED = {
    "qwen1.5-moe-a2.7b-chat.json": {"total": ["14.3B"], "active": ["2.7B"],
                                    "source": "Qwen Team 2024, Qwen1.5-MoE-A2.7B model card (14.3B total, 2.7B activated)"},
    "mixtral-8x7b-v0.1.json": {"total": ["46.7B"], "active": ["12.9B"],
                               "source": "Mistral AI 2023, 'Mixtral of experts' (46.7B total, 12.9B per token)"},
    "deepseek-v2-lite.json": {"total": ["15.7B"],
                              "source": "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434), Appendix B (15.7B total)"},
    "gemma-3-1b-it.json": {"total": ["302M", "698M"],
                           "source": "Gemma Team 2025, Gemma 3 report (arXiv 2503.19786), Table 1 (302M embedding + 698M "
                                     "non-embedding)"},
    "gemma-3-4b-it.json": {"total": ["417M", "675M", "3209M"],
                           "source": "Gemma 3 report, Table 1 (417M vision encoder + 675M embedding + 3,209M non-embedding)"},
    "stablelm-3b-4e1t.json": {"total": ["2795443200"],
                              "source": "Stability AI 2023, stablelm-3b-4e1t model card (parameters 2,795,443,200)"},
    "exaone-4.0-32b.json": {"total": ["32.0B"], "source": "LG AI Research 2025, EXAONE-4.0-32B model card (32.0B)"},
    "qwen3-0.6b.json": {"total": ["0.6B"], "non_embedding": ["0.44B"],
                        "source": "Qwen Team 2025, Qwen3-0.6B model card (0.6B; 0.44B non-embedding)"},
    "qwen3-1.7b.json": {"total": ["1.7B"], "non_embedding": ["1.4B"],
                        "source": "Qwen Team 2025, Qwen3-1.7B model card (1.7B; 1.4B non-embedding)"},
}


def _printed(texts: list[str]) -> tuple[float, float]:
    """(value, half a unit of the last printed digit, summed) of printed figures such as '14.3B', '302M'."""
    value = half = 0.0
    for text in texts:
        scale = {"B": 1e9, "M": 1e6}.get(text[-1], 1.0)
        digits = text.rstrip("BM")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        value += float(digits) * scale
        half += 0.5 * 10 ** -decimals * scale
    return value, half


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_corpus_counts_round_to_the_published_figures(name):
    from click.testing import CliRunner

    from drills.cli import cli

    path = HERE / "corpus" / name
    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    raw = json.loads(path.read_text())
    mine = {"total": out["answer"], "active": out.get("active", out["breakdown"].get("active"))}
    if "non_embedding" in PUBLISHED[name]:
        mine["non_embedding"] = out["answer"] - raw["vocab_size"] * raw["hidden_size"]
    for key, texts in PUBLISHED[name].items():
        if key != "source":
            value, half = _printed(texts)
            assert abs(mine[key] - value) <= half, (name, key, mine[key], texts, PUBLISHED[name]["source"])


def _qwen_mtp(d: int, experts: int, ffn: int, q_out: int, kv_out: int, o_in: int) -> int:
    """A Qwen3-Next / Qwen3.5 checkpoint's ``mtp.*`` tensors as the model reports list them: ``fc`` (d × 2d), one
    decoder layer (gated attention: q_proj q_out × d, k_proj and v_proj kv_out × d, o_proj d × o_in, q_norm and
    k_norm 256; its FFN: ``experts`` routed experts of ``ffn`` with a router, a shared expert and its gate, or one
    dense FFN of ``ffn`` when ``experts`` is 0), and five RMSNorm vectors of d (the layer's two, ``norm``,
    ``pre_fc_norm_embedding``, ``pre_fc_norm_hidden``)."""
    ffn_params = experts * 3 * ffn * d + experts * d + 3 * ffn * d + d if experts else 3 * ffn * d
    return d * 2 * d + q_out * d + 2 * kv_out * d + d * o_in + 2 * 256 + ffn_params + 5 * d


#: The released checkpoints' safetensors tensor totals ("参数总量") that the model reports of corpus/SOURCES.md print
#: beside each file, less the tensors those reports list that transformers' class holds no parameter for, each from
#: the report's shapes: FP8 block scales (``weight_scale_inv``), the routers' ``e_score_correction_bias`` (a buffer
#: in transformers), and the multi-token-prediction (MTP) layers the count names as not counted. What remains is what
#: ``qkv solve params --config`` must answer, to the parameter.
CHECKPOINT_TOTALS = {
    "qwen3-next-80b-a3b-instruct.json": 81_324_862_720 - _qwen_mtp(2048, 512, 512, 8192, 512, 4096),
    "qwen3.5-35b-a3b.json": 35_951_822_704 - _qwen_mtp(2048, 256, 512, 8192, 512, 4096),
    "qwen3.5-4b.json": 4_659_865_088 - _qwen_mtp(2560, 0, 9216, 8192, 1024, 4096),
    "qwen3-vl-30b-a3b-instruct.json": 31_070_754_032,
    # int4 experts packed 8 to an int32 ([7168, 256] for 7,168 × 2,048) with bf16 scales per group of 32 and a
    # 2-element weight_shape each: the report's element total, less those, plus the unpacked experts; less the
    # routers' e_score_correction_bias (60 × 384)
    "kimi-k2.5.json": 170_738_182_128 - 60 * 384 * (
        7168 * 256 + 2 * 2048 * 896 + 7168 * 64 + 2 * 2048 * 224 + 3 * 2 + 1) + 60 * 384 * 3 * 2048 * 7168,  # every tensor a parameter of the class (no MTP, no scales)
    "kimi-linear-48b-a3b-instruct.json": 49_122_681_728 - 26 * 256,  # e_score_correction_bias of 26 MoE layers
    # buffers in transformers' Gemma 4: one layer_scalar per decoder layer (60), the vision tower's std_bias and
    # std_scale (1,152 each)
    "gemma-4-31b-it.json": 31_273_088_876 - 60 - 2 * 1152,
    # FP8 scales of 62 layers: 256 experts × (w1, w2, w3) of 12 × 24 blocks, q/k/v/o of 48×24, 8×24, 8×24, 24×48
    "minimax-m2.7.json": 228_703_644_928 - 62 * (256 * 3 * 12 * 24 + 48 * 24 + 8 * 24 + 8 * 24 + 24 * 48) - 62 * 256,
    "glm-4.7-flash.json": 31_221_488_576 - 47 * 64 - (  # layer 47, the MTP layer: MLA attention, MoE, eh_proj,
        2 * 2048 + 512 + 576 * 2048 + 8960 * 512 + 2048 * 5120 + 768 + 768 * 2048 + 5120 * 768  # its own embedding
        + 64 * 3 * 1536 * 2048 + 64 * 2048 + 3 * 1536 * 2048 + 2048 * 4096 + 2 * 154880 * 2048 + 3 * 2048),  # and head
    "glm-5.1.json": 753_864_139_008 - 76 * 256 - (  # e_score_correction_bias; layer 78, the MTP layer: attention and
        2 * 6144 + 2 * 128 + 32 * 6144 + 128 * 6144 + 4096 * 2048 + 512 + 576 * 6144 + 28672 * 512 + 6144 * 16384  # indexer,
        + 2048 + 2048 * 6144 + 16384 * 2048 + 256 * 3 * 2048 * 6144 + 256 * 6144 + 3 * 2048 * 6144  # its MoE,
        + 6144 * 12288 + 3 * 6144),  # eh_proj, enorm, hnorm, shared_head.norm (no embedding or head of its own)
    "deepseek-v3.2.json": 685_396_921_376 - (
        # FP8 block scales: 3 dense FFNs; 62 layers' indexer wk, wq_b and attention kv_a, kv_b, o, q_a, q_b; 59 MoE
        # layers' 256 experts and shared expert (3 matrices each)
        3 * 3 * 56 * 144 + 62 * (56 + 64 * 12 + 5 * 56 + 256 * 4 + 56 * 128 + 12 * 56 + 192 * 12) + 59 * 257 * 3 * 56 * 16)
        - 59 * 256 - (  # e_score_correction_bias; then layer 61, the MTP layer: its attention and indexer, its MoE,
        2 * 7168 + 2 * 128 + 64 * 7168 + 128 * 7168 + 8192 * 1536 + 512 + 576 * 7168 + 32768 * 512 + 7168 * 16384 + 1536
        + 1536 * 7168 + 24576 * 1536 + 256 * 3 * 2048 * 7168 + 256 * 7168 + 3 * 2048 * 7168
        + 7168 * 14336 + 2 * 129280 * 7168 + 3 * 7168),  # eh_proj, its embedding and head, enorm/hnorm/head norm
}


@pytest.mark.parametrize("name", sorted(CHECKPOINT_TOTALS))
def test_counts_are_the_checkpoints_tensors_less_what_transformers_does_not_build(name):
    from click.testing import CliRunner

    from drills.cli import cli

    r = CliRunner().invoke(cli, ["solve", "params", "--config", str(HERE / "corpus" / name), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answer"] == CHECKPOINT_TOTALS[name], (name, out["answer"], CHECKPOINT_TOTALS[name])
    # the MTP layers the checkpoint ships are named in the answer, not left out silently
    raw = json.loads((HERE / "corpus" / name).read_text())
    text = raw.get("text_config", raw)
    if text.get("num_nextn_predict_layers") or text.get("mtp_num_hidden_layers") or "qwen3_next" in name.replace("-", "_"):
        assert any("multi-token" in n for n in out["convention"].get("notes", [])), out["convention"]
