"""``qkv solve mlp|rope-score|perplexity`` (issue 24) through click's CliRunner; each answer
recomputed here another way (nn.Linear counts, rotation matrices, log-sum-exp by hand)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from drills.cli import cli


def run(*args: str):
    return CliRunner().invoke(cli, ["solve", *args], catch_exceptions=False)


def as_json(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_mlp_against_torch_linear():
    torch = pytest.importorskip("torch")
    sizes = [784, 256, 10]
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    assert as_json("mlp", "--sizes", "784 256 10")["answer"] == sum(p.numel() for p in net.parameters())
    assert as_json("mlp", "--sizes", "784,256,10", "--no-bias")["answer"] == 784 * 256 + 256 * 10
    f = as_json("mlp", "--sizes", " ".join(map(str, sizes)), "--what", "flops", "--batch", "32")
    assert f["answer"] == 32 * 2 * (784 * 256 + 256 * 10)
    assert run("mlp", "--sizes", "784").exit_code == 2


def rotate(v, pos, base=10000.0):
    """Block-diagonal rotation matrix R(pos) applied to interleaved pairs."""
    d = len(v)
    R = np.zeros((d, d))
    for i in range(d // 2):
        a = pos * base ** (-2 * i / d)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    return R @ np.asarray(v, dtype=float)


@settings(max_examples=10)
@given(st.lists(st.integers(-3, 3), min_size=4, max_size=4), st.lists(st.integers(-3, 3), min_size=4, max_size=4),
       st.integers(0, 50), st.integers(0, 50))
def test_rope_score_against_rotation_matrices(q, k, m, n):
    out = as_json("rope-score", "--q", " ".join(map(str, q)), "--k", " ".join(map(str, k)), "-m", str(m), "-n", str(n))
    assert out["answer"] == pytest.approx(float(rotate(q, m) @ rotate(k, n)), abs=1e-9)


def test_perplexity_three_ways():
    lp = [-1.2, -0.3, -2.0]
    out = as_json("perplexity", "--logprobs", "-1.2 -0.3 -2")
    assert out["answer"] == pytest.approx(math.exp(-sum(lp) / 3))
    z, y = [[2, 1, 0], [0, 0, 3]], [0, 2]
    nll = [math.log(sum(math.exp(v) for v in row)) - row[t] for row, t in zip(z, y, strict=True)]
    lo = as_json("perplexity", "--logits", "2 1 0; 0 0 3", "--targets", "0 2")
    assert lo["answer"] == pytest.approx(math.exp(sum(nll) / 2))
    assert as_json("perplexity", "--loss", "2", "--log-base", "2")["answer"] == pytest.approx(4)
    assert run("perplexity", "--logprobs", "0.5").exit_code == 2
    assert run("perplexity").exit_code == 2
