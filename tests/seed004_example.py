"""Seed 004, section 12: the by-hand attention example's exact steps, shared by the tests that
check it (test_worked_example_004, test_checker, test_check_cli).

Q = K = [[1,0],[0,1],[1,1]], V = [[1,0],[0,1],[1/2,1/2]], d_k = 2. The closed forms are derived
by hand in tests/solver/kernels/test_worked_example_004.py's docstring and evaluated here with ``math`` (never
with our code): a = 1/√2, eᵃ = exp(a); scores [[1,0,1],[0,1,1],[1,1,2]]; scaled = a·scores;
weights rows [eᵃ,1,eᵃ]/(2eᵃ+1), [1,eᵃ,eᵃ]/(2eᵃ+1), [1,1,eᵃ]/(2+eᵃ); output rows
[1.5eᵃ, 1+eᵃ/2]/(2eᵃ+1), the same swapped, [1/2, 1/2].
"""

import math

A = 1 / math.sqrt(2)
EA = math.exp(A)
HAND = {
    "scores": [[1, 0, 1], [0, 1, 1], [1, 1, 2]],
    "scaled": [[A, 0, A], [0, A, A], [A, A, 2 * A]],
    "weights": [
        [EA / (2 * EA + 1), 1 / (2 * EA + 1), EA / (2 * EA + 1)],
        [1 / (2 * EA + 1), EA / (2 * EA + 1), EA / (2 * EA + 1)],
        [1 / (2 + EA), 1 / (2 + EA), EA / (2 + EA)],
    ],
    "output": [
        [1.5 * EA / (2 * EA + 1), (1 + EA / 2) / (2 * EA + 1)],
        [(1 + EA / 2) / (2 * EA + 1), 1.5 * EA / (2 * EA + 1)],
        [0.5, 0.5],
    ],
}
#: the steps in the order a student computes them
STEPS = ["scores", "scaled", "weights", "output"]
