"""`qkv solve attention|softmax|layernorm|rmsnorm|pe|rope` through click's CliRunner.

Expected values are worked by hand in each test (or come from an independent formula), not
from our own output.
"""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from drills.cli import cli
from drills.cli.matrix_args import parse_array

EYE3 = "1 0 0; 0 1 0; 0 0 1"


def close(actual, expected, rtol=1e-13):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float), rtol=rtol,
                               atol=1e-15)


def run(*args):
    return CliRunner().invoke(cli, ["solve", *args])


def run_json(*args):
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# ------------------------------------------------------------------ JSON shape


def test_json_has_answer_steps_formulas_convention():
    data = run_json("attention", "--q", "1 0", "--k", "1 0; 0 1", "--v", "2; 4")
    assert set(data) == {"command", "answer", "steps", "formulas", "convention"}
    assert list(data["steps"]) == ["scores", "scaled", "weights", "output"]
    # scores [1, 0], scaled [1/√2, 0]; weights e^(1/√2)/(e^(1/√2) + 1) and 1/(…); output 2w₁ + 4w₂
    e = math.exp(1 / math.sqrt(2))
    w = [e / (e + 1), 1 / (e + 1)]
    close(data["steps"]["weights"], [w])
    close(data["answer"], [[2 * w[0] + 4 * w[1]]])
    close(data["convention"]["scale"], 1 / math.sqrt(2))


def test_json_keeps_full_double_precision():
    data = run_json("softmax", "--x", "0 1")
    assert data["answer"][1] == 1 / (1 + math.exp(-1))  # not rounded to --digits


# ------------------------------------------------------------------ masks


def test_mask_one_means_may_attend():
    # key 2 blocked for query 1: its weights are [1, 0]; query 2 sees both: scores [0, 1/√2]
    data = run_json("attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1 0; 0 1", "--mask", "1 0; 1 1")
    w = data["steps"]["weights"]
    assert w[0] == [1.0, 0.0]
    e = math.exp(1 / math.sqrt(2))
    close(w[1], [1 / (1 + e), e / (1 + e)])
    assert data["steps"]["masked"][0][1] == "-inf"
    assert "1 = may attend" in data["convention"]["mask"]


def test_causal_equals_lower_triangular_mask():
    common = ["attention", "--q", "1 2; 0 1; 1 1", "--k", "1 0; 2 1; 0 1", "--v", EYE3]
    causal = run_json(*common, "--causal")
    masked = run_json(*common, "--mask", "1 0 0; 1 1 0; 1 1 1")
    assert causal["answer"] == masked["answer"]
    assert causal["steps"]["weights"][0] == [1.0, 0.0, 0.0]
    for row in causal["steps"]["weights"]:
        close(sum(row), 1)


def test_help_states_the_mask_convention():
    r = run("attention", "--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "1 = may attend" in text and "0 = blocked" in text


# ------------------------------------------------------------------ --exact


def test_exact_shows_closed_forms_and_agrees_with_floats():
    r = run("attention", "--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1", "--v", "1 0; 0 1; 1/2 1/2", "--exact")
    assert r.exit_code == 0, r.output
    assert "√2/2 ≈ 0.7071" in r.stdout
    data = run_json("attention", "--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1", "--v", "1 0; 0 1; 1/2 1/2",
                    "--exact")
    assert data["exact"]["steps"]["scaled"][0] == ["sqrt(2)/2", "0", "sqrt(2)/2"]
    assert data["exact"]["answer"][2] == ["1/2", "1/2"]
    floats = run_json("attention", "--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1", "--v", "1 0; 0 1; 1/2 1/2")
    np.testing.assert_allclose(data["answer"], floats["answer"], rtol=1e-14)


def test_self_attention_from_embeddings_starts_with_projections():
    # W_q = W_k = W_v = I by default, so q = k = v = x; with 2 heads, head 2 sees columns 2-3
    data = run_json("attention", "--x", "1 0 0 1; 0 1 1 0", "--heads", "2", "--exact")
    assert list(data["steps"])[:3] == ["q", "k", "v"]
    assert data["steps"]["q"] == [[1, 0, 0, 1], [0, 1, 1, 0]]
    # head 1: scores [[1,0],[0,1]]; head 2: columns (0,1) and (1,0) → [[1,0],[0,1]] too
    assert data["steps"]["scores"] == [[[1, 0], [0, 1]], [[1, 0], [0, 1]]]
    e = math.exp(1 / math.sqrt(2))
    w_self = e / (e + 1)  # each token weighs itself by e^(1/√2)/(e^(1/√2) + 1)
    close(data["answer"][0], [w_self, 1 - w_self, 1 - w_self, w_self])


def test_wo_projects_the_concatenation():
    # one head, identity projections so V = X, whose rows each sum to 1; the weights of a row sum
    # to 1, so every output row sums to 1, and W_o = (1, 1)ᵀ returns exactly that sum
    data = run_json("attention", "--x", "1 0; 0 1; 0.5 0.5", "--wo", "1; 1")
    close(data["answer"], [[1.0], [1.0], [1.0]])


# ------------------------------------------------------------------ other kernels


def test_softmax_temperature():
    data = run_json("softmax", "--x", "0 2", "--temperature", "2")
    # x/T = [0, 1] → [1/(1+e), e/(1+e)]
    close(data["answer"], [1 / (1 + math.e), math.e / (1 + math.e)])
    assert list(data["steps"])[0] == "scaled"


def test_layernorm_rows_and_biased_variance():
    data = run_json("layernorm", "--x", "1 2 3; 2 4 6", "--eps", "0")
    # row 1: μ = 2, σ² = (1+0+1)/3 = 2/3 (biased), output (x − 2)/√(2/3) = [−√1.5, 0, √1.5]
    assert data["steps"]["mean"] == [2, 4]
    close(data["steps"]["variance"], [2 / 3, 8 / 3])
    close(data["answer"][0], [-math.sqrt(1.5), 0, math.sqrt(1.5)])
    assert "biased" in data["convention"]["variance"]


def test_layernorm_gamma_beta():
    data = run_json("layernorm", "--x", "0 2", "--gamma", "2 3", "--beta", "1 1", "--eps", "0")
    # μ = 1, σ² = 1, x̂ = [−1, 1]; y = [2·(−1) + 1, 3·1 + 1]
    assert data["answer"] == [-1, 4]


def test_rmsnorm():
    data = run_json("rmsnorm", "--x", "3 4", "--eps", "0")
    # mean(x²) = 25/2, rms = 5/√2, output = x·√2/5
    close(data["steps"]["rms"], 5 / math.sqrt(2))
    close(data["answer"], [3 * math.sqrt(2) / 5, 4 * math.sqrt(2) / 5])


def test_pe_layouts():
    # d = 4, pos = 1: frequencies 1 and 1/100; interleaved [sin 1, cos 1, sin .01, cos .01]
    inter = run_json("pe", "--pos", "1", "--d-model", "4")["answer"]
    close(inter, [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)])
    concat = run_json("pe", "--pos", "1", "--d-model", "4", "--layout", "concat")["answer"]
    close(concat, [math.sin(1), math.sin(0.01), math.cos(1), math.cos(0.01)])
    one = run_json("pe", "--pos", "3", "--d-model", "4", "--dim", "3")
    close(one["answer"], math.cos(0.03))


def test_rope_pairings():
    # d = 4 at pos 1: angles [1, 1/100]; interleaved pairs (x0, x1), (x2, x3)
    x = "1 0 0 1"
    inter = run_json("rope", "--x", x, "--pos", "1")["answer"]
    close(inter, [math.cos(1), math.sin(1), -math.sin(0.01), math.cos(0.01)])
    # half pairs (x0, x2) and (x1, x3): (1, 0) turns by 1, (0, 1) by 1/100
    half = run_json("rope", "--x", x, "--pos", "1", "--pairing", "half")["answer"]
    close(half, [math.cos(1), -math.sin(0.01), math.sin(1), math.cos(0.01)])


# ------------------------------------------------------------------ bad input: one line, exit 2

BAD = [
    (["attention", "--q", "1 0; 0 1 1", "--k", "1 0", "--v", "1"], "--q", "ragged"),
    (["attention", "--q", "1 0", "--k", "1 0 0", "--v", "1"], "--k", "same number of columns"),
    (["attention", "--q", "1 0", "--k", "1 0; 0 1", "--v", "1"], "--v", "one value row per key"),
    (["attention", "--q", "1 a", "--k", "1 0", "--v", "1"], "--q", "not a number"),
    (["attention", "--q", "1 0", "--k", "1 0", "--v", ""], "--v", "empty"),
    (["attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1; 2", "--mask", "1 1; 0 0"], "--mask", "no key"),
    (["attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1; 2", "--mask", "1 1"], "--mask", "2×2"),
    (["attention", "--q", "1 0; 0 1", "--k", "1 0; 0 1", "--v", "1; 2", "--mask", "1 2; 1 1"], "--mask", "0 (blocked)"),
    (["attention", "--q", "1 0"], "--k", "missing"),
    (["attention", "--x", "1 0; 0 1", "--wq", "1 0 0"], "--wq", "d_model = 2"),
    (["attention", "--x", "1 0; 0 1", "--heads", "3"], "--heads", "divide"),
    (["softmax", "--x", "1 2", "--temperature", "0"], "--temperature", "> 0"),
    (["softmax", "--x", "[1, 2"], "--x", "unclosed"),
    (["layernorm", "--x", "1 2 3", "--gamma", "1 1"], "--gamma", "3"),
    (["layernorm", "--x", "1 1", "--eps", "0"], "--eps", "constant"),
    (["pe", "--pos", "1", "--d-model", "4", "--dim", "4"], "--dim", "below"),
    (["rope", "--x", "1 2 3", "--pos", "1"], "--x", "even"),
    (["rope", "--x", "1 2", "--pos", "1/0"], "--pos", "division by zero"),
]


@pytest.mark.parametrize("args,param,words", BAD, ids=[f"{b[1]}:{b[2]}" for b in BAD])
def test_bad_input_is_one_line_naming_the_option(args, param, words):
    r = run(*args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"qkv: error: {param}: "), lines[0]
    assert words in lines[0]
    assert "Traceback" not in r.output


# ------------------------------------------------------------------ argument parsing


@pytest.mark.parametrize(
    "text,shape,first",
    [
        ("1 0; 0 1; 1 1", (3, 2), "1"),
        ("[[1,0],[0,1],[1,1]]", (3, 2), "1"),
        ("1, 2, 3", (3,), "1"),
        ("[1,2,3]", (3,), "1"),
        ("1/2 -3/4; 1e-3 .5", (2, 2), "1/2"),
        ("[[1/3, 2]]", (1, 2), "1/3"),
    ],
)
def test_matrix_arguments(text, shape, first):
    from fractions import Fraction

    a = parse_array(text, "--q")
    assert a.shape == shape
    assert a.rows[0][0] == Fraction(first)


def test_decimal_text_is_kept_exactly():
    from fractions import Fraction

    assert parse_array("0.1", "--x").rows[0][0] == Fraction(1, 10)  # not the double nearest 0.1
