"""The MLP and ViT keys (question_bank/families/vision_mlp.py), recomputed from the text.

The widths, image and patch sizes are parsed from the plain statement with regular expressions, and the
network the statement describes is built with torch on the meta device:

* an MLP of the printed widths is a stack of ``nn.Linear`` (weights and biases): its parameters are their
  ``numel()``, and a forward pass of the batch is counted by torch's FLOP counter
  (``torch.utils.flop_counter``: 2 FLOPs per multiply-add, biases and activations not counted);
* a ViT's patch embedding is ``nn.Conv2d(C, d, P, stride=P)`` (the linear map of flattened P × P × C
  patches, with its bias); the number of patches is the conv's output size on the meta image; the
  [class] (and distillation) token is d each and the learned position table has one row per patch and
  per token; a pre-norm layer is ``nn.TransformerEncoderLayer(norm_first=True)`` with the MLP width
  printed (its parameter count does not depend on the number of heads), and the final norm a LayerNorm.

The key must accept the count (MCQ: the keyed option is the one printing it). Nothing here reads
``given`` or imports the solver. ``python -m tests.question_bank.families.test_from_text_vision_mlp``
sweeps 300 seeds per level from 0 and from 70,000.
"""

from __future__ import annotations

import re

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from question_bank.family import FAMILIES
from tests.question_bank.families.from_text_audit import (
    key_tests,
    sweep_main,
    with_views,
)
from tests.question_bank.families.from_text_counting import (
    has,
    number_in,
)

META = torch.device("meta")


def numel(*modules: nn.Module) -> int:
    return sum(p.numel() for m in modules for p in m.parameters())


def mlp(text: str, p=None, *, bias: bool = True, per_mac: int = 2, batch: int | None = None) -> int:
    m = re.search(r"layer widths ((?:\d+ → )+\d+) \(an input layer of (\d+), then (\d+) fully connected layers, "
                  r"each with weights and biases\)", text)
    assert m, f"the widths are not given:\n{text}"
    widths = [int(w) for w in m[1].split(" → ")]
    assert widths[0] == int(m[2]) and len(widths) - 1 == int(m[3])
    net = nn.Sequential(*(nn.Linear(a, b, bias=bias, device=META) for a, b in zip(widths, widths[1:], strict=False)))
    if "How many trainable parameters" in text:
        return numel(net)
    batch = number_in(r"a forward pass of a batch of (\d+) examples", text) if batch is None else batch
    assert "Count 2 FLOPs per multiply-add; ignore the bias additions and the activations" in text
    with FlopCounterMode(display=False) as counter:
        net(torch.empty(batch, widths[0], device=META))
    return counter.get_total_flops() * per_mac // 2


def vit(text: str, p=None) -> int:
    S, P = number_in(r"takes (\d+) × \d+ ", text), number_in(r"cut into (\d+) × \d+ patches", text)
    C, d = number_in(r"\(C = (\d+)\)", text), number_in(r"width d = (\d+)", text)
    patch = nn.Conv2d(C, d, P, stride=P, bias=True, device=META)
    n_patches = patch(torch.empty(1, C, S, S, device=META)).shape[-2:].numel()
    if "How many parameters are in the patch embedding" in text:
        assert "with its bias" in text
        return numel(patch)
    tokens = ["[class] token"] + (["distillation token"] if "distillation token" in text else [])
    assert all(t in text for t in tokens), f"the tokens are not said:\n{text}"
    embeddings = numel(patch) + len(tokens) * d + (n_patches + len(tokens)) * d
    if has(r"parameters are in the embeddings", text):
        assert "learned position table" in text
        return embeddings
    assert "the whole encoder (no classification head)" in text and "final layer norm" in text
    L, dff = number_in(r"L = (\d+) pre-norm layers", text), number_in(r"MLP width (\d+)", text)
    assert "biases in every linear layer" in text
    layer = nn.TransformerEncoderLayer(d, 1, dim_feedforward=dff, norm_first=True, bias=True, device=META)
    return embeddings + L * numel(layer) + numel(nn.LayerNorm(d, device=META))


RECOMPUTE = {"counting.mlp_params": mlp, "counting.vit_params": vit}
FIDS = with_views(RECOMPUTE)


#: the wrong values the misconceptions name, recomputed from the text (the stretch: feedback is right
#: for the numbers on the screen)
SLIPS = {
    "counting.mlp_params": {
        "no_biases": lambda t: mlp(t, bias=False),
        "macs": lambda t: mlp(t, per_mac=1),
        "one_example": lambda t: mlp(t, batch=1),
    },
    "counting.vit_params": {  # each of these leaves out d parameters: the bias, the token, its position row
        "no_bias": lambda t: vit(t) - number_in(r"width d = (\d+)", t),
        "no_cls_token": lambda t: vit(t) - number_in(r"width d = (\d+)", t),
        "no_cls_position": lambda t: vit(t) - number_in(r"width d = (\d+)", t),
    },
}


globals().update(key_tests(RECOMPUTE, FIDS, "vision_mlp", mistakes=SLIPS))



def test_vit_hard_names_the_class_token():
    """The whole-encoder count includes the [class] token and its row of the position table: the
    statement says so (it once said only "embeddings", and the key counted a token it did not name)."""
    for s in range(10):
        p = FAMILIES["counting.vit_params"].generate(s, "hard")
        assert "[class] token" in p.statement_text and "position table" in p.statement_text, p.statement_text




if __name__ == "__main__":
    raise SystemExit(sweep_main(RECOMPUTE, FIDS, SLIPS))
