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
            named = raw["architectures"][0]
            cls = getattr(transformers, named)
            conf_cls = cls.config_class
            conf = conf_cls.from_dict({k: v for k, v in raw.items() if k not in ("auto_map", "model_type")})
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
