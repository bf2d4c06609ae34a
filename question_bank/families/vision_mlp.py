"""Counting beyond the text Transformer: a plain MLP's parameters (GATE DA's network counts) and a
Vision Transformer's embedding and whole-model counts.

Keys come from ``solver.counting.mlp`` and ``solver.counting.vit`` (checked against ``nn.Sequential``
and HuggingFace's ``ViTModel`` in the tests). Misconceptions: biases forgotten or counted on the
input layer, the class token's slot in the position table, the patch projection without its bias
or with the channels forgotten.
"""

from __future__ import annotations

from question_bank.families.counting_common import big
from question_bank.family import Draw, Wrong, family, keep_distinct
from question_bank.grading import answer_text, integer_key
from question_bank.problem import Problem
from question_bank.render import Doc

_SRC = "issue 10 (vision and plain networks; Dosovitskiy et al. 2021, ViT)"


@family("counting.mlp_params", topic="counting", title="Parameters (and forward FLOPs) of a fully connected network",
        types=("integer",), tags=("parameters", "flops", "mlp"), source=_SRC)
def mlp_params(d: Draw) -> Problem:
    """Σ n_{i−1}·n_i + n_i over the layers (weights and biases); hard: the forward FLOPs of a batch,
    2 per multiply-add, bias additions and activations not counted."""
    from solver.counting.mlp import mlp_flops
    from solver.counting.mlp import mlp_params as count

    flops = d.level == 2
    for _ in range(300):
        depth = 2 if d.level == 0 else d.pick((3, 4))
        # issue 39: any widths in a range and any batch up to 256 (seven inputs, six hidden widths and four batches gave
        # 116 distinct easy keys in 200 draws, which a test-wise student remembers)
        sizes = [d.rng.randint(8, 1024)] + [d.rng.randint(8, 512) for _ in range(depth - 1)]
        sizes.append(d.rng.randint(1, 20))
        batch = d.rng.randint(8, 256)
        if flops:
            r = mlp_flops(sizes, batch=batch)
            wrongs = [
                Wrong("macs", "counted one FLOP per multiply-add", "A multiply-add is 2 FLOPs (a multiply and an add).",
                      mlp_flops(sizes, batch=batch, convention="macs").answer,
                      inverse="counted 4 FLOPs per multiply-add", inverse_value=2 * mlp_flops(sizes, batch=batch).answer),
                Wrong("one_example", "forgot the batch", f"Every one of the {batch} examples goes through the network.",
                      mlp_flops(sizes).answer, inverse=f"multiplied by the batch of {batch} twice",
                      inverse_value=batch * mlp_flops(sizes, batch=batch).answer),
                Wrong("params_times_two", "used 2 × parameters per example, biases included",
                      "Biases cost additions, not multiply-adds; the question leaves them out.", 2 * batch * count(sizes).answer),
            ]
        else:
            r = count(sizes)
            wrongs = [
                Wrong("no_biases", "forgot the biases", "Every neuron of a hidden or output layer has a bias.",
                      count(sizes, bias=False).answer, inverse="counted every bias twice"),
                Wrong("output_no_bias", "left out the output layer's biases",
                      "The output layer's neurons have biases too: every layer 1 … k has one per neuron.",
                      r.answer - sizes[-1]),
                Wrong("input_biases", "gave the input layer biases too", "The input layer has no neurons to bias: biases sit on "
                      "layers 1 … k only.", r.answer + sizes[0]),
                Wrong("neurons_only", "counted neurons instead of connections",
                      "Parameters are the weights of the connections (n_{i−1}·n_i per layer) plus the biases.", sum(sizes)),
            ]
        key = integer_key(r.answer, unit="FLOPs" if flops else "parameters")
        mis = keep_distinct(key, [w for w in wrongs if w])
        if len(mis) >= 2:
            break
    st = Doc()
    st.p("A fully connected feed-forward network has layer widths " + " → ".join(str(s) for s in sizes) +
         f" (an input layer of {sizes[0]}, then {len(sizes) - 1} fully connected layers, each with weights and biases).")
    if flops:
        st.p(f"How many FLOPs does a forward pass of a batch of {batch} examples take? Count 2 FLOPs per multiply-add; ignore "
             "the bias additions and the activations.")
    else:
        st.p("How many trainable parameters does it have?")
    sol = Doc()
    pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
    if flops:
        sol.bullets([f"layer {i}: ${a} \\times {b} = {big(a * b)}$ multiply-adds per example" for i, (a, b) in enumerate(pairs, start=1)])
        sol.p(f"$2 \\times {batch} \\times {big(sum(a * b for a, b in pairs))} = {big(r.answer)}$.")
    else:
        sol.bullets([f"layer {i}: ${a} \\times {b} + {b} = {big(a * b + b)}$" for i, (a, b) in enumerate(pairs, start=1)])
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"sizes": sizes, "batch": batch if flops else None})


@family("counting.vit_params", topic="counting", title="Vision Transformer: patch embedding, class token, position table",
        types=("integer",), tags=("parameters", "vit", "vision"), source=_SRC,
        small_pool="three real ViT sizes (B, L, H): the patch embedding of easy depends only on the patch size, the "
                   "channels and d, so easy varies the patch size (8, 14, 16, 32) and the channels (1, 3, 4)")
def vit_params(d: Draw) -> Problem:
    """Easy: the patch embedding P·P·C·d + d; medium: + class token + (N + 1)·d positions; hard: the whole ViT."""
    from dataclasses import replace

    from solver.counting.vit import VIT_PRESETS
    from solver.counting.vit import vit_params as count

    # issue 22: hard held one problem (ViT-B/16 at 224) and easy a handful: the width and depth stay a real
    # ViT's, and the image size, the patch size and the channels vary (then the asked count varies)
    name = d.pick(tuple(VIT_PRESETS))
    cfg = VIT_PRESETS[name]
    while True:
        # issue 39: any image side that is a whole number of patches from 96 to 640 pixels (six sizes gave 54 distinct
        # medium keys in 200 draws, which a test-wise student remembers)
        P = d.pick((8, 14, 16, 32))
        image = P * d.rng.randint(-(-96 // P), 640 // P)
        if image % P == 0:
            break
    # issue 39: grayscale, RGB and RGBA images at every level (RGB only above easy: a whole ViT's count then depended
    # on the preset and the number of patches alone, 251 distinct keys in 400 hard draws, remembered as keys)
    cfg = replace(cfg, image_size=image, patch_size=P, channels=d.pick((1, 3, 4)))
    name = f"{name.split('/')[0]}/{P}"
    r = count(cfg)
    b = r.breakdown
    P, C, dm = cfg.patch_size, cfg.channels, cfg.d_model
    if d.level == 0:
        value = b["patch_embedding"]
        ask = "the patch embedding (the linear projection of flattened patches, with its bias)"
        wrongs = [Wrong("no_bias", "left out the bias", "The projection has d biases.", value - dm),
                  Wrong("no_channels", "forgot the colour channels", f"A flattened patch has P·P·C = {P * P * C} values.",
                        P * P * dm + dm)]
    elif d.level == 1:
        value = b["patch_embedding"] + b["cls_token"] + b["position_table"]
        ask = "the embeddings: patch projection (with bias), the [class] token and the learned position table"
        # issue 21: three slips each cost exactly d; the judge names all three for that value
        # issue 38: each slip's inverse, a fencepost or a double count a student makes (+d, +2d)
        wrongs = [Wrong("no_cls_position", "gave the position table N rows", "The [class] token has a position too: N + 1 rows.",
                        value - dm, inverse="gave the position table N + 2 rows"),
                  Wrong("no_cls_token", "forgot the [class] token", "The learned [class] token is d parameters.", value - dm),
                  Wrong("no_bias", "left out the projection's bias", "The projection has d biases.", value - dm),
                  Wrong("no_cls_at_all", "forgot the [class] token and its position",
                        "The [class] token is d parameters and has its own row of the position table: 2d in all.",
                        value - 2 * dm, inverse="counted the [class] token and its position row twice")]
    else:
        value = r.answer
        ask = "the whole encoder (no classification head): embeddings, layers and the final layer norm"
        wrongs = [Wrong("no_biases", "forgot the biases of the attention and MLP", "ViT's linear layers all have biases.",
                        value - cfg.n_layers * (4 * dm + cfg.d_ff + dm), inverse="counted the attention and MLP biases twice"),
                  Wrong("no_cls_position", "gave the position table N rows", "The [class] token has a position too.", value - dm,
                        inverse="gave the position table N + 2 rows"),
                  Wrong("no_cls_token", "forgot the [class] token", "The learned [class] token is d parameters.", value - dm),
                  Wrong("no_patch_bias", "left out the patch projection's bias", "The patch projection has d biases.",
                        value - dm),
                  Wrong("no_norms", "forgot the layer norms", "Two per layer and a final one, each 2d.",
                        value - b["layer_norms"] - b["final_norm"],
                        inverse="counted a running mean and variance in every layer norm (as in BatchNorm)")]
    key = integer_key(value, unit="parameters")
    mis = keep_distinct(key, [w for w in wrongs if w])
    st = Doc()
    colour = {1: "grayscale", 3: "RGB", 4: "RGBA"}[C]
    st.p(f"ViT-{name[4:].upper()} takes ${cfg.image_size} \\times {cfg.image_size}$ {colour} images ($C = {C}$) cut into ${P} \\times {P}$ patches, "
         f"with width $d = {dm}$" + (f", $L = {cfg.n_layers}$ pre-norm layers, MLP width {cfg.d_ff}, and biases in every linear layer."
                                     if d.level == 2 else "."))
    st.p(f"How many parameters are in {ask}?")
    sol = Doc()
    steps = [s for s in r.steps if d.level == 2 or s.formula.split(" =")[0] in
             (("patches N", "patch embedding") if d.level == 0 else ("patches N", "patch embedding", "class token", "position table"))]
    sol.bullets([f"{s.formula} = {s.substitution} = ${big(s.value)}$" for s in steps])
    sol.p(f"**Answer: {answer_text(key)}**")
    return d.problem(type="integer", statement=st, key=key, solution=sol, misconceptions=mis,
                     given={"preset": name, "image_size": cfg.image_size, "patch_size": P, "channels": C, "level": d.level})
