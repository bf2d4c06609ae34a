"""``qkv solve alibi|t5-buckets|cross-entropy|sampling|quant`` through CliRunner: the shape every solve
command has (answer, unit, convention, breakdown; --explain; one-line errors), and answers checked
against torch, HuggingFace and byte layouts built here."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner

from drills.cli import cli
from tests.solver.kernels.test_loss_sampling import hf_set
from tests.solver.kernels.test_positions_relative import paper_slopes

KEYS = {"answer", "unit", "convention", "breakdown"}


def run(*args):
    res = CliRunner().invoke(cli, ["solve", *args])
    if isinstance(res.exception, Exception) and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


def run_json(*args):
    code, out = run(*args, "--json")
    assert code == 0, out
    d = json.loads(out)
    assert set(d) == KEYS and d["convention"]
    return d


def test_alibi_slopes_and_bias():
    """12 heads (not a power of two): the paper's slopes; head 10, i = 7, j = 2: −m₁₀·5."""
    assert run_json("alibi", "--heads", "12")["answer"] == pytest.approx(paper_slopes(12))
    d = run_json("alibi", "--heads", "12", "--head", "10", "--query", "7", "--key", "2")
    assert d["answer"] == pytest.approx(-paper_slopes(12)[9] * 5)
    code, out = run("alibi", "--heads", "8", "--head", "1", "--query", "1", "--key", "3")
    assert code == 2 and "--key" in out and len(out.strip().splitlines()) == 1


def test_alibi_attention_against_torch():
    """Head 2 of 3 (not a power of two), causal: torch SDPA with the bias built from the paper's slopes."""
    q, k, v = [[1, 0], [0, 1], [1, 1]], [[1, 2], [0, 1], [2, 0]], [[1, 0], [0, 2], [3, 1]]
    text = lambda a: "; ".join(" ".join(map(str, r)) for r in a)  # noqa: E731
    d = run_json("alibi", "--heads", "3", "--head", "2", "--q", text(q), "--k", text(k), "--v", text(v))
    dist = torch.arange(3)[:, None] - torch.arange(3)[None, :]
    bias = (-paper_slopes(3)[1] * dist.double()).masked_fill(dist < 0, float("-inf"))
    want = F.scaled_dot_product_attention(*(torch.tensor(a, dtype=torch.float64)[None] for a in (q, k, v)), attn_mask=bias)[0]
    np.testing.assert_allclose(d["answer"], want.numpy(), atol=1e-12)
    code, out = run("alibi", "--heads", "3", "--q", "1 0")
    assert code == 2 and "--head" in out


def test_t5_buckets_against_huggingface():
    from transformers.models.t5.modeling_t5 import T5Attention

    for r in (-200, -20, -3, 0, 5, 40):
        for causal in (False, True):
            d = run_json("t5-buckets", "--r", str(r), *(["--causal"] if causal else []), "--n-heads", "8")
            assert d["answer"] == T5Attention._relative_position_bucket(torch.tensor(r), bidirectional=not causal).item()
            assert d["breakdown"]["bias_table_params"] == torch.nn.Embedding(32, 8).weight.numel()
    code, out = run("t5-buckets", "--r", "3", "--max-distance", "4")
    assert code == 2 and "--max-distance" in out


def test_t5_buckets_explain_shows_the_region():
    code, out = run("t5-buckets", "--r", "-20", "--explain")
    assert code == 0 and "worked solution" in out and "log_position" in out and "conventions" in out


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_against_torch(eps):
    d = run_json("cross-entropy", "--logits", "2 1 0 -1", "--target", "2", "--label-smoothing", str(eps))
    want = F.cross_entropy(torch.tensor([[2.0, 1.0, 0.0, -1.0]], dtype=torch.float64), torch.tensor([2]), label_smoothing=eps)
    assert d["answer"] == pytest.approx(want.item()) and d["unit"] == "nats"
    assert d["breakdown"]["perplexity"] == pytest.approx(math.exp(want.item()))
    code, out = run("cross-entropy", "--logits", "2 1", "--target", "5")
    assert code == 2 and "--target" in out


@pytest.mark.parametrize("extra", [["--top-p", "0.9"], ["--top-k", "2"], ["--top-p", "0.6", "--temperature", "2"],
                                   ["--top-k", "3", "--top-p", "0.8", "--temperature", "0.5"]])
def test_sampling_against_huggingface(extra):
    logits = [2.0, 1.0, 0.5, 0.1, -1.0]
    d = run_json("sampling", "--logits", " ".join(map(str, logits)), *extra)
    opts = dict(zip(extra[::2], extra[1::2], strict=True))
    want = hf_set(logits, float(opts.get("--temperature", 1)), int(opts["--top-k"]) if "--top-k" in opts else None,
                  float(opts["--top-p"]) if "--top-p" in opts else None)
    assert set(d["answer"]) == want and d["breakdown"]["set_size"] == len(want)


def test_sampling_crossing_named():
    d = run_json("sampling", "--logits", "2 1 0", "--top-p", "0.5", "--crossing", "exclude")
    assert "left out" in d["convention"]["top_p_crossing"]


def test_quant_ggml_against_layout():
    """Q4_0: blocks of (fp16, 16 bytes) as a NumPy structured dtype; Q4_K: 144-byte blocks."""
    d = run_json("quant", "--format", "q4_0", "--weights", "4096")
    assert d["answer"] == np.zeros(4096 // 32, dtype=[("d", "<f2"), ("qs", "u1", 16)]).nbytes and d["unit"] == "bytes"
    d = run_json("quant", "--format", "q4_K", "--rows", "4096", "--cols", "4096")
    q4k = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", 12), ("qs", "u1", 128)])
    assert d["answer"] == np.zeros(4096 * 4096 // 256, dtype=q4k).nbytes
    code, out = run("quant", "--format", "q4_0", "--weights", "33")
    assert code == 2 and "--weights" in out and "multiple of 32" in out


def test_quant_group_and_nf4():
    d = run_json("quant", "--format", "group-int4", "--rows", "256", "--cols", "512", "--group-size", "64", "--zero", "fp16")
    assert d["answer"] == 256 * 512 // 2 + 256 * (512 // 64) * (2 + 2)
    d = run_json("quant", "--format", "nf4")
    assert d["answer"] == pytest.approx(4 + 8 / 64 + 32 / (64 * 256)) and d["convention"]["double_quant"] is True
    code, out = run("quant", "--format", "group-int4", "--rows", "8")
    assert code == 2 and "--rows" in out


def test_quant_explain_names_the_source():
    code, out = run("quant", "--format", "q6_K", "--weights", "256", "--explain")
    assert code == 0 and "ggml-common.h" in out and "210" in out


def test_t5_buckets_reads_a_t5_config_as_the_flags_say_it(tmp_path):
    """Issue 23: --config on t5-buckets. A T5 config.json's relative_attention_num_buckets,
    relative_attention_max_distance and num_heads give the same answer and breakdown as those flags;
    a flag given wins over the file; a value of the wrong type is one line naming the key."""
    import json as _json

    from click.testing import CliRunner

    from drills.cli import cli

    def run(*args):
        r = CliRunner().invoke(cli, ["solve", "t5-buckets", "-r", "126", *args, "--json"])
        assert r.exit_code == 0, r.output
        return _json.loads(r.stdout)

    cfg = tmp_path / "config.json"
    cfg.write_text(_json.dumps({"model_type": "t5", "relative_attention_num_buckets": 64,
                                "relative_attention_max_distance": 256, "num_heads": 8}))
    by_file = run("--config", str(cfg))
    by_flags = run("--num-buckets", "64", "--max-distance", "256", "--n-heads", "8")
    assert (by_file["answer"], by_file["breakdown"]) == (by_flags["answer"], by_flags["breakdown"])
    assert run("--config", str(cfg), "--num-buckets", "32")["answer"] == run(
        "--num-buckets", "32", "--max-distance", "256", "--n-heads", "8")["answer"]
    cfg.write_text(_json.dumps({"relative_attention_num_buckets": True}))
    r = CliRunner().invoke(cli, ["solve", "t5-buckets", "-r", "126", "--config", str(cfg)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "relative_attention_num_buckets" in r.output
