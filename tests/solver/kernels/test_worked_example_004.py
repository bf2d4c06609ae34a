"""Seed 004, section 12, "Worked Example 1: By-Hand Attention Computation", step by step.

Given three tokens with d_k = 2::

    Q = K = [[1, 0],      V = [[1,   0  ],
             [0, 1],           [0,   1  ],
             [1, 1]]           [1/2, 1/2]]

Derivation by hand (a = 1/√2 = √2/2 throughout):

1. Q·Kᵀ: entry (i, j) is the dot product of token i and token j::

       [[1·1+0·0, 1·0+0·1, 1·1+0·1],     [[1, 0, 1],
        [0·1+1·0, 0·0+1·1, 0·1+1·1],  =   [0, 1, 1],
        [1·1+1·0, 1·0+1·1, 1·1+1·1]]      [1, 1, 2]]

2. Scaled by 1/√d_k = 1/√2: [[a, 0, a], [0, a, a], [a, a, 2a]]  (a ≈ 0.70711, 2a = √2 ≈ 1.41421).

3. Softmax of each row, exp(s) / Σ exp(s):
   row 1: [eᵃ, 1, eᵃ] / (2eᵃ + 1);  row 2: [1, eᵃ, eᵃ] / (2eᵃ + 1);
   row 3: [eᵃ, eᵃ, e²ᵃ] / (2eᵃ + e²ᵃ) = [1, 1, eᵃ] / (2 + eᵃ).
   Numerically eᵃ ≈ 2.02811, so rows 1-2 hold 2.02811/5.05622 ≈ 0.40111 and
   1/5.05622 ≈ 0.19778, row 3 holds 1/4.02811 ≈ 0.24826 and 2.02811/4.02811 ≈ 0.50349.

4. Output = weights·V, with V's third row (1/2, 1/2): output row i = [w_i1 + w_i3/2, w_i2 + w_i3/2]:
   row 1: [ (3/2)eᵃ / (2eᵃ + 1), (1 + eᵃ/2) / (2eᵃ + 1) ] ≈ [0.60167, 0.39833];
   row 2: the same, swapped;
   row 3: [ (1 + eᵃ/2) / (2 + eᵃ) ] twice = exactly [1/2, 1/2].

The expected values (tests/seed004_example.py) are these closed forms, evaluated with ``math``
(not with our code).

What the seed prints, checked to its 3 decimals: QKᵀ, the scaled scores (0.707, 1.414), the
exponentials (2.028, 4.113), the sums (5.056, 8.169), all weights (0.401, 0.198; 0.248, 0.503)
and the output entries 0.602 and 0.500 are right. Its output entry 0.399 (rows 1 and 2) is
wrong: the exact value 0.39833 rounds to 0.398. The seed rounded the weights first and then
computed 0.198 + 0.401/2 = 0.3985 → 0.399 (double rounding). Its remark that "Token 3
attended roughly equally to all tokens" is also wrong: token 3 gives itself weight 0.503,
eᵃ ≈ 2.03 times what it gives each other token; its output is (1/2, 1/2) only because
w₃₁ = w₃₂ and V's rows 1 and 2 are mirror images.
"""

import json
import math

import numpy as np
import pytest
import sympy as sp
from click.testing import CliRunner

from drills.cli import cli
from solver.kernels import numpy_ref, sympy_ref
from tests.seed004_example import EA, HAND, A

Q = K = [[1, 0], [0, 1], [1, 1]]
V_EXACT = [[1, 0], [0, 1], ["1/2", "1/2"]]
V = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]


# The seed's printed figures (section 12), kept only to check them against the hand values.
SEED = {
    "scaled": [[0.707, 0.000, 0.707], [0.000, 0.707, 0.707], [0.707, 0.707, 1.414]],
    "weights": [[0.401, 0.198, 0.401], [0.198, 0.401, 0.401], [0.248, 0.248, 0.503]],
    "output": [[0.602, 0.399], [0.399, 0.602], [0.500, 0.500]],
}


def test_float_path_reproduces_every_step():
    (out, w), tr = numpy_ref.attention(np.array(Q, float), np.array(K, float), np.array(V), return_trace=True)
    assert tr.names() == ["scores", "scaled", "weights", "output"]
    for name, expected in HAND.items():
        np.testing.assert_allclose(tr[name].value, expected, rtol=1e-12, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(w, HAND["weights"], rtol=1e-12)
    np.testing.assert_allclose(out, HAND["output"], rtol=1e-12)


def test_exact_path_reproduces_every_step_in_closed_form():
    (out, w), tr = sympy_ref.attention(Q, K, V_EXACT, return_trace=True)
    a = sp.sqrt(2) / 2
    ea = sp.exp(a)
    assert tr["scores"].value == sp.Matrix(HAND["scores"])
    assert tr["scaled"].value == sp.Matrix([[a, 0, a], [0, a, a], [a, a, 2 * a]])
    closed_w = sp.Matrix([
        [ea / (2 * ea + 1), 1 / (2 * ea + 1), ea / (2 * ea + 1)],
        [1 / (2 * ea + 1), ea / (2 * ea + 1), ea / (2 * ea + 1)],
        [1 / (2 + ea), 1 / (2 + ea), ea / (2 + ea)],
    ])
    closed_out = sp.Matrix([
        [sp.Rational(3, 2) * ea / (2 * ea + 1), (1 + ea / 2) / (2 * ea + 1)],
        [(1 + ea / 2) / (2 * ea + 1), sp.Rational(3, 2) * ea / (2 * ea + 1)],
        [sp.Rational(1, 2), sp.Rational(1, 2)],
    ])
    assert all(sp.simplify(d) == 0 for d in w - closed_w)
    assert all(sp.simplify(d) == 0 for d in out - closed_out)
    assert list(out.row(2)) == [sp.Rational(1, 2), sp.Rational(1, 2)]  # exactly 1/2, no rounding
    for name, expected in HAND.items():  # and numerically, to 1e-12
        np.testing.assert_allclose(sympy_ref.to_floats(tr[name].value), expected, rtol=1e-12, err_msg=name)


def test_seed_figures_agree_to_three_decimals_except_output_0399():
    for name in ("scaled", "weights"):
        np.testing.assert_array_equal(np.round(HAND[name], 3), SEED[name], err_msg=name)
    # intermediate figures the seed prints in its softmax lines
    assert round(EA, 3) == 2.028 and round(math.exp(2 * A), 3) == 4.113
    assert round(2 * EA + 1, 3) == 5.056 and round(2 * EA + math.exp(2 * A), 3) == 8.169
    ours = np.round(HAND["output"], 3)
    wrong = np.argwhere(ours != np.array(SEED["output"]))
    assert wrong.tolist() == [[0, 1], [1, 0]]  # the two 0.399 entries, and nothing else
    assert ours[0, 1] == 0.398 and SEED["output"][0][1] == 0.399
    # the seed's 0.399 is what the rounded weights give: 0.198 + 0.401/2 = 0.3985 → 0.399
    assert round(0.198 + 0.401 / 2, 4) == 0.3985


def test_token_3_does_not_attend_equally():
    w3 = HAND["weights"][2]
    assert w3[0] == w3[1] and w3[2] / w3[0] == pytest.approx(EA)  # ≈ 2.03×, not "roughly equal"


def test_cli_reproduces_the_example():
    result = CliRunner().invoke(
        cli, ["solve", "attention", "--q", "1 0; 0 1; 1 1", "--k", "[[1,0],[0,1],[1,1]]", "--v", "1 0; 0 1; 0.5 0.5",
              "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    np.testing.assert_allclose(data["answer"], HAND["output"], rtol=1e-12)
    for name, expected in HAND.items():
        np.testing.assert_allclose(data["steps"][name], expected, rtol=1e-12, err_msg=name)
    text = CliRunner().invoke(
        cli, ["solve", "attention", "--q", "1 0; 0 1; 1 1", "--k", "1 0; 0 1; 1 1", "--v", "1 0; 0 1; 1/2 1/2",
              "--digits", "3"],
    )
    assert text.exit_code == 0
    assert "0.398" in text.stdout and "0.399" not in text.stdout
