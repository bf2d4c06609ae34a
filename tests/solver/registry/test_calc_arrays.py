"""Vector and matrix inputs and outputs in qkv calc (issue 44): each figure checked a second way
(an identity of the formula, or NumPy on the same numbers), refusals one line, JSON whole."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from drills.cli import cli
from solver.errors import SolverInputError
from solver.registry import formulas
from solver.registry.calc import Array, Evaluator, Record
from solver.registry.formula import MAX_VECTOR


def run(text: str):
    v = Evaluator().run(text)
    if isinstance(v, Record) and v.primary in v.fields:
        v = v.fields[v.primary]
    return v


def floats(a: Array) -> np.ndarray:
    return np.array([float(x) for x in a.values]).reshape(a.shape)


def test_vector_output_is_an_array_and_a_scalar_output_is_a_number():
    p = run("softmax([0, 0, 0, 0])")
    assert isinstance(p, Array) and p.shape == (4,) and floats(p) == pytest.approx([0.25] * 4)
    # cross-entropy of equal logits is ln C; its loss is a number arithmetic takes
    ev = Evaluator()
    assert float(ev.quantity(ev.run("2 * cross_entropy([0, 0, 0], 1)")).magnitude) == pytest.approx(2 * math.log(3))
    x = [3.0, -1.0, 0.5, 2.0]
    ln = floats(run(f"layernorm({x}, eps=0)"))
    assert ln.mean() == pytest.approx(0, abs=1e-12) and (ln**2).mean() == pytest.approx(1)


def test_matrix_input_and_output_against_numpy():
    q, k, v = [[1, 0], [0, 1], [1, 1]], [[1, 2], [0, 1]], [[1, 0], [0.5, 2]]
    out = run(f"attention({q}, {k}, {v})")
    s = np.array(q, float) @ np.array(k, float).T / math.sqrt(2)
    w = np.exp(s - s.max(1, keepdims=True))
    w /= w.sum(1, keepdims=True)
    assert out.shape == (3, 2) and floats(out) == pytest.approx(w @ np.array(v, float), rel=1e-12)


def test_a_result_passes_on_as_a_vector():
    a = floats(run("softmax(layernorm([1, 2, 3], eps=0))"))
    z = np.array([1, 2, 3], float)
    z = (z - z.mean()) / z.std()
    assert a == pytest.approx(np.exp(z) / np.exp(z).sum(), rel=1e-12)


REFUSED = {"softmax(3)": "a vector such as", "softmax([[1, 2], [3, 4]])": "not a matrix",
           "attention([1, 2], [[1]], [[1]])": "not a vector", "attention([[1], [1, 2]], [[1]], [[1]])": "same length",
           "softmax([1, [2]])": "mixes numbers and lists", "softmax([1 GB, 2 GB])": "plain numbers",
           "softmax([1, 2]) + 1": "is not a number", "sqrt(softmax([1, 2]))": "is not a number",
           "softmax(pe(0, 8192))": f"at most {MAX_VECTOR:,} entries", "softmax([1, 10^7])": "at most",
           "softmax([1, 2]) -> s": "not a number", "attention([[1]], [[1]], [[1]], mask=[[2]])": "at most 1",
           "mlp([784, 2.5])": "whole numbers", "softmax(\"1 2 3\")": "a vector such as"}


@pytest.mark.parametrize("text", sorted(REFUSED))
def test_refusals_are_one_line(text):
    with pytest.raises(SolverInputError) as e:
        Evaluator().run(text)
    assert REFUSED[text] in str(e.value) and "\n" not in str(e.value)


def test_json_gives_the_vector_and_its_shape():
    res = CliRunner().invoke(cli, ["calc", "--json", "attention([[1, 0]], [[1, 0], [0, 1]], [[1, 2], [3, 4]])"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["shape"] == [1, 2] and d["kind"] == "matrix" and len(d["value"][0]) == 2
    res = CliRunner().invoke(cli, ["calc", "softmax([1, 1])"])
    assert res.exit_code == 0 and res.output.strip() == "[0.5, 0.5]"


ARRAY_FORMULAS = sorted(n for n, f in formulas().items() if any(i.kind in ("vector", "matrix") for i in f.inputs))
small = st.integers(-30, 30).map(str)


@st.composite
def _call(d):
    f = formulas()[d(st.sampled_from(ARRAY_FORMULAS))]
    args = []
    for i in f.inputs:
        if not i.required and not d(st.booleans()):
            continue
        if i.kind == "vector":
            v = "[" + ", ".join(d(st.lists(small, min_size=1, max_size=6))) + "]"
        elif i.kind == "matrix":
            r, c = d(st.integers(1, 3)), d(st.integers(1, 3))
            v = "[" + ", ".join("[" + ", ".join(d(st.lists(small, min_size=c, max_size=c))) + "]"
                                for _ in range(r)) + "]"
        else:
            v = d(st.sampled_from(["0", "1", "2", "3", "0.5", "-1", "64"]))
        args.append(f"{i.name}={v}")
    for c in f.conventions:
        if d(st.booleans()):
            args.append(f"{c.name}={d(st.sampled_from(list(c.choices))).replace('-', '_')}")
    return f"{f.name}({', '.join(args)})"


@settings(max_examples=150, deadline=None)
@given(_call())
def test_any_call_is_an_answer_or_one_line(text):
    """Every vector or matrix formula on drawn inputs: an answer, or one refusal line, never a traceback."""
    t0 = time.process_time()
    try:
        Evaluator().run(text)
    except SolverInputError as e:
        assert "\n" not in str(e) and str(e)
    assert time.process_time() - t0 < 2.0
