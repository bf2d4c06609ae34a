"""Residual blocks as graphs: where the norms sit, read off the block's formula (issue 26).

A stack of ``L`` layers, each with ``sublayers`` sub-layers (attention, feed-forward: 2), each
sub-layer wrapped in one of the four residual forms of ``ModelConfig.norm_position``
(``solver.counting.config``):

=============  ==========================  =========================================
form           one sub-layer               models
=============  ==========================  =========================================
``pre``        y = x + F(N(x))             GPT-2, Llama (Xiong et al. 2020, "pre-LN")
``post``       y = N(x + F(x))             the original Transformer, BERT ("post-LN")
``sandwich``   y = x + N₂(F(N₁(x)))        Gemma 2
``reordered``  y = x + N(F(x))             OLMo 2
=============  ==========================  =========================================

:func:`stack_graph` builds the directed graph of the stack (nodes ``input``, ``N``, ``F``, ``+``,
``output``; an edge from each operand to its operation) and :func:`analyse` reads from it, by
walking the graph, never by looking the form up:

- ``skip_norms``: the norms on the skip path, the path from the input to the output that enters
  no sub-layer ``F`` (the residual "highway");
- ``normalised_inputs``: how many sub-layers read the output of a norm;
- ``output_normalised``: whether the last node before the output is a norm, hence
  ``final_norm_needed`` (a norm after the last layer, for the stack's output to be normalised);
- ``norms``: the norm modules in the stack (without a final norm), and ``norms_with_final``.

Pure Python: no NumPy, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

FORMS = ("pre", "post", "sandwich", "reordered")

#: One sub-layer's formula per form (text), as the questions print it.
FORMULA = {
    "pre": "y = x + F(N(x))",
    "post": "y = N(x + F(x))",
    "sandwich": "y = x + N2(F(N1(x)))",
    "reordered": "y = x + N(F(x))",
}


@dataclass(frozen=True)
class Graph:
    kinds: tuple[str, ...]  # node kind: input | N | F | + | output
    preds: tuple[tuple[int, ...], ...]  # operands of each node


def stack_graph(form: str, layers: int, sublayers: int = 2) -> Graph:
    """The graph of ``layers`` × ``sublayers`` sub-layers in residual ``form`` (no final norm)."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, not {form!r}")
    if layers < 1 or sublayers < 1:
        raise ValueError("layers and sublayers must be >= 1")
    kinds: list[str] = ["input"]
    preds: list[tuple[int, ...]] = [()]

    def add(kind: str, *ops: int) -> int:
        kinds.append(kind)
        preds.append(tuple(ops))
        return len(kinds) - 1

    x = 0
    for _ in range(layers * sublayers):
        if form == "pre":
            x = add("+", x, add("F", add("N", x)))
        elif form == "post":
            x = add("N", add("+", x, add("F", x)))
        elif form == "sandwich":
            x = add("+", x, add("N", add("F", add("N", x))))
        else:  # reordered
            x = add("+", x, add("N", add("F", x)))
    add("output", x)
    return Graph(tuple(kinds), tuple(preds))


@dataclass(frozen=True)
class Analysis:
    skip_norms: int
    normalised_inputs: int
    sublayers: int
    output_normalised: bool
    norms: int

    @property
    def final_norm_needed(self) -> bool:
        return not self.output_normalised

    @property
    def norms_with_final(self) -> int:
        return self.norms + (1 if self.final_norm_needed else 0)

    @property
    def skip_path_normalised(self) -> bool:
        return self.skip_norms > 0


def analyse(g: Graph) -> Analysis:
    """Walk the graph: the skip path from the output back to the input through ``+`` and ``N``
    nodes only (at a ``+``, the operand that is not a sub-layer's branch), counting its norms;
    each ``F``'s operand; the output's operand; the number of ``N`` nodes."""
    out = g.kinds.index("output")

    def reaches_f(node: int) -> bool:
        """Whether ``node`` lies on a sub-layer's branch: an ``F`` on the way back before any ``+``."""
        while True:
            k = g.kinds[node]
            if k == "F":
                return True
            if k in ("+", "input"):
                return False
            node = g.preds[node][0]

    node, norms = g.preds[out][0], 0
    while g.kinds[node] != "input":
        k = g.kinds[node]
        if k == "N":
            norms += 1
            node = g.preds[node][0]
        elif k == "+":
            skip = [p for p in g.preds[node] if not reaches_f(p)]
            if len(skip) != 1:
                raise ValueError("a residual sum with no single skip operand")
            node = skip[0]
        else:
            raise ValueError(f"the skip path met a {k} node")
    fs = [i for i, k in enumerate(g.kinds) if k == "F"]
    normalised = sum(g.kinds[g.preds[i][0]] == "N" for i in fs)
    return Analysis(skip_norms=norms, normalised_inputs=normalised, sublayers=len(fs),
                    output_normalised=g.kinds[g.preds[out][0]] == "N", norms=sum(k == "N" for k in g.kinds))
