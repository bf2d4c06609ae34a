"""Exact parameter count of a Vision Transformer (Dosovitskiy et al. 2021), from its own small config.

The model (as HuggingFace's ``ViTModel`` / ``ViTForImageClassification`` builds it):

* patch embedding: a convolution with kernel = stride = P from C channels to d, i.e. a linear
  map of each flattened P·P·C patch: P·P·C·d weights + d biases;
* a learned [class] token (d) and a learned position table of (N + 1) × d, N = (H/P)·(W/P) patches;
* L pre-norm encoder layers: two layer norms (2·2d), Q, K, V, O with biases 4·(d² + d), MLP
  d·d_ff + d_ff + d_ff·d + d;
* a final layer norm (2d);
* head: ``pooler`` (d² + d, the tanh "pre-logits" dense layer of ``ViTModel``'s default) and/or
  a classifier d·C + C (``ViTForImageClassification``, no pooler).

Convention: parameters = trainable scalars (biases and norms counted). The paper's "86M" for
ViT-Base (Table 1) is the encoder without a head: 85,798,656 here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from solver.errors import SolverInputError
from solver.result import Result, fmt


@dataclass(frozen=True)
class ViTConfig:
    image_size: int = 224
    patch_size: int = 16
    channels: int = 3
    d_model: int = 768
    n_layers: int = 12
    n_heads: int = 12
    d_ff: int = 3072
    n_classes: int = 0  # 0: no classifier
    pooler: bool = False  # the tanh dense layer of ViTModel(add_pooling_layer=True)

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


#: ViT-B/16, L/16, H/14 (Dosovitskiy et al. 2021, Table 1: Base 86M, Large 307M, Huge 632M parameters).
VIT_PRESETS: dict[str, ViTConfig] = {
    "vit-b/16": ViTConfig(),  # 86M
    "vit-l/16": ViTConfig(d_model=1024, n_layers=24, n_heads=16, d_ff=4096),  # 307M
    "vit-h/14": ViTConfig(patch_size=14, d_model=1280, n_layers=32, n_heads=16, d_ff=5120),  # 632M
}
VIT_PUBLISHED = {"vit-b/16": 86_000_000}  # Table 1 of the paper, the encoder only


def vit_config(preset: str = "vit-b/16", **overrides) -> ViTConfig:
    if preset not in VIT_PRESETS:
        raise SolverInputError(f"unknown ViT preset {preset!r}; known: {', '.join(VIT_PRESETS)}", param="preset")
    return replace(VIT_PRESETS[preset], **overrides)


def vit_params(cfg: ViTConfig) -> Result:
    """Parameters of a ViT (see the module docstring). Breakdown: patch_embedding, cls_token,
    position_table, attention, mlp, layer_norms, final_norm, pooler, classifier."""
    for name in ("image_size", "patch_size", "channels", "d_model", "n_layers", "n_heads", "d_ff"):
        v = getattr(cfg, name)
        if int(v) != v or v < 1:
            raise SolverInputError(f"must be a positive integer, got {v}", param=name)
    if cfg.image_size % cfg.patch_size:
        raise SolverInputError(f"image size {cfg.image_size} is not a multiple of the patch size {cfg.patch_size}",
                               param="patch_size")
    if cfg.n_classes < 0:
        raise SolverInputError(f"must be ≥ 0, got {cfg.n_classes}", param="n_classes")
    P, C, d, L, dff, N = cfg.patch_size, cfg.channels, cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_patches
    r = Result(answer=None, unit="parameters",
               convention={"biases": "counted", "norms": "layer norm, scale and bias (2d each)",
                           "head": ", ".join(x for x in ("pooler" if cfg.pooler else "", f"classifier ({cfg.n_classes} classes)"
                                                                if cfg.n_classes else "") if x) or "none (encoder only)"})
    b = {}
    r.step("patches N = (image/P)²", f"({cfg.image_size}/{P})²", N)
    b["patch_embedding"] = r.step("patch embedding = P·P·C·d + d", f"{P}×{P}×{C}×{d} + {d}", P * P * C * d + d)
    b["cls_token"] = r.step("class token = d", f"{d}", d)
    b["position_table"] = r.step("position table = (N + 1)·d", f"({N} + 1) × {d}", (N + 1) * d)
    b["attention"] = r.step("attention = L·4·(d² + d)", f"{L} × 4 × ({d}² + {d})", L * 4 * (d * d + d))
    b["mlp"] = r.step("MLP = L·(2·d·d_ff + d_ff + d)", f"{L} × (2×{d}×{dff} + {dff} + {d})", L * (2 * d * dff + dff + d))
    b["layer_norms"] = r.step("layer norms = L·2·2d", f"{L} × 4 × {d}", L * 4 * d)
    b["final_norm"] = r.step("final norm = 2d", f"2 × {d}", 2 * d)
    b["pooler"] = r.step("pooler = d² + d", f"{d}² + {d}", d * d + d) if cfg.pooler else 0
    b["classifier"] = (r.step("classifier = d·C + C", f"{d} × {cfg.n_classes} + {cfg.n_classes}", d * cfg.n_classes + cfg.n_classes)
                       if cfg.n_classes else 0)
    total = r.step("total = sum of the above", " + ".join(fmt(v) for v in b.values() if v), sum(b.values()))
    r.breakdown = b
    r.answer = total
    return r
