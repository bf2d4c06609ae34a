"""The named mistakes added for the numeric MCQ views (serving.disaggregation, moe.active_params,
moe.router_losses, flash.online_softmax) and the widened draws of
window.kv_cache and serving.disaggregation: each mistake's value recomputed here a second way, from the
problem's own ``given``, over many seeds, and each mistake drawn at least once."""

from __future__ import annotations

import math

import pytest

import question_bank.families  # noqa: F401 - registers
from question_bank.family import FAMILIES

SEEDS = range(80)


def draws(fid, level, seeds=SEEDS):
    f = FAMILIES[fid]
    for s in seeds:
        p = f.generate(s, level)
        yield p, {m.id: m.value for m in p.misconceptions}


# ---------------------------------------------------------------------------- serving.disaggregation


def queued_exposed_ms(nbytes, L, beta, tp):
    """Layer l's share (nbytes/L) is ready at l·tp/L and the link sends one share after another: the time the
    last byte arrives after the prefill, in ms (a loop over the layers, not the closed form)."""
    share, free = nbytes / L / beta, 0.0
    for layer in range(1, L + 1):
        free = max(free, tp * layer / L) + share
    return (free - tp) * 1e3


def test_disaggregation_hard_new_mistakes():
    seen = set()
    for p, wrong in draws("serving.disaggregation", "hard"):
        g = p.given
        nbytes = g["P"] * 2 * g["L"] * g["h_kv"] * g["d_h"] * 2
        L, beta, tp = g["L"], g["beta"], g["t_prefill"]
        assert p.key.value == pytest.approx(queued_exposed_ms(nbytes, L, beta, tp), rel=1e-9)
        want = {"forgot_kv_two": queued_exposed_ms(nbytes / 2, L, beta, tp),  # K only: half the bytes
                "gib": queued_exposed_ms(nbytes, L, beta / 1e9 * 2**30, tp),  # a link of β·2^30 bytes/s
                "transfer_minus_prefill": (nbytes / beta - tp) * 1e3}
        for mid, v in want.items():
            if mid in wrong:
                seen.add(mid)
                assert wrong[mid] == pytest.approx(v, rel=1e-9, abs=1e-12), (p.id, mid)
        if nbytes / beta <= tp:
            assert "transfer_minus_prefill" not in wrong, p.id
    assert seen == set(want)


def test_disaggregation_prompts_are_not_powers_of_two():
    """A power-of-two prompt made the 2^30 slip a round number ("5.00 GB"), which the odd-one-out rule spotted."""
    for level in ("easy", "medium", "hard"):
        for p, wrong in draws("serving.disaggregation", level, range(40)):
            P = p.given["P"]
            assert P & (P - 1) != 0, p.id
            if "gib" in wrong:
                assert round(wrong["gib"], 2) != round(wrong["gib"]), p.id


# ---------------------------------------------------------------------------- moe.active_params


def expert_counts(p):
    """(total, active, one routed expert, one shared expert, MoE layers) from the preset's shapes, by hand."""
    from solver.counting.params import param_breakdown
    from solver.counting.presets import get_preset

    g = p.given
    cfg = get_preset(g["preset"]).config.replace(n_experts=g["n_experts"], top_k=g["top_k"])
    pb = param_breakdown(cfg)
    one = 3 * cfg.d_model * cfg.expert_ff  # gate, up, down
    one_shared = 3 * cfg.d_model * (getattr(cfg, "shared_ff", None) or cfg.expert_ff)
    L_M = cfg.n_layers - cfg.first_dense_layers
    assert pb.routed_experts == L_M * cfg.n_experts * one
    active = pb.total - pb.routed_experts + L_M * cfg.top_k * one
    assert pb.active == active
    return cfg, pb.total, active, one, one_shared, L_M


def test_active_params_hard_new_mistakes():
    seen = set()
    for p, wrong in draws("moe.active_params", "hard"):
        cfg, total, active, one, one_shared, L_M = expert_counts(p)
        n_sh, ask = cfg.n_shared_experts, p.given["ask"]
        assert p.key.value == pytest.approx((active if ask == "active" else total) / 1e9)
        if ask == "active":
            # the shared experts taken among the routed ones too: k + n_shared routed experts on top of them
            shared_twice = (active + L_M * n_sh * one) / 1e9
            assert "dense_as_moe" not in wrong
        else:
            shared_twice = (total + L_M * n_sh * one_shared) / 1e9
            # every one of the L layers with E routed experts, the dense first layer's FFN kept as well
            assert wrong["dense_as_moe"] == pytest.approx((total + cfg.n_experts * one) / 1e9), p.id
            seen.add("dense_as_moe")
        if "shared_twice" in wrong:
            seen.add("shared_twice")
            assert wrong["shared_twice"] == pytest.approx(shared_twice), p.id
    assert seen == {"dense_as_moe", "shared_twice"}


def test_active_params_mixtral_has_no_deepseek_mistakes():
    for level in ("easy", "medium"):
        for p, wrong in draws("moe.active_params", level, range(30)):
            assert not {"dense_as_moe", "shared_twice", "no_shared"} & set(wrong), p.id


# ---------------------------------------------------------------------------- moe.router_losses


def test_router_z_loss_new_mistakes():
    seen = set()
    for p, wrong in draws("moe.router_losses", "easy"):
        X = p.given["logits"]
        T, E = len(X), len(X[0])
        lse = [math.log(sum(math.exp(v) for v in row)) for row in X]
        assert p.key.value == pytest.approx(sum(v * v for v in lse) / T, rel=1e-12)
        want = {"square_of_mean": (sum(lse) / T) ** 2, "over_experts": sum(v * v for v in lse) / E}
        if E == T:
            assert "over_experts" not in wrong
        for mid, v in want.items():
            if mid in wrong:
                seen.add(mid)
                assert wrong[mid] == pytest.approx(v, rel=1e-12), (p.id, mid)
        # Jensen: the square of the mean is never above the mean of the squares
        assert (sum(lse) / T) ** 2 <= p.key.value + 1e-12
    assert seen == {"square_of_mean", "over_experts"}


# ---------------------------------------------------------------------------- flash.online_softmax


def test_online_softmax_medium_rescale_up():
    seen = 0
    for p, wrong in draws("flash.online_softmax", "medium"):
        g = p.given
        b1, b2 = g["block1"], g["block2"]
        m1, m2 = max(b1), max(b1 + b2)
        x = (b1 + b2)[g["pick"]]
        # ℓ₁ grown by e^(m₂ − m₁) where it should shrink: each block-1 term e^(y − m₁)·e^(m₂ − m₁)
        wrong_sum = sum(math.exp(y + m2 - 2 * m1) for y in b1) + sum(math.exp(y - m2) for y in b2)
        if "rescale_up" in wrong:
            seen += 1
            assert wrong["rescale_up"] == pytest.approx(math.exp(x - m2) / wrong_sum, rel=1e-12), p.id
            assert wrong["rescale_up"] < p.key.value  # a larger sum: a smaller weight
    assert seen > 40


# ---------------------------------------------------------------------------- window.kv_cache


def test_window_kv_cache_hard_keys_are_not_round():
    """With contexts of powers of two only, the GiB key was often a whole number ("5.00 GiB"), which the
    most-shared-words rule spotted; now few are."""
    whole = [p.id for p, _ in draws("window.kv_cache", "hard") if round(p.key.value, 2) == round(p.key.value)]
    assert len(whole) <= 4, whole
    for p, wrong in draws("window.kv_cache", "hard", range(40)):
        g = p.given
        local = (g["n_layers"] + 1) // 2
        per = 2 * g["batch"] * g["n_kv_heads"] * g["d_head"] * 2
        nbytes = per * (local * min(g["seq"], g["window"]) + (g["n_layers"] - local) * g["seq"])
        assert p.key.value == pytest.approx(nbytes / 2**30, rel=1e-12), p.id
        assert wrong["gb_for_gib"] == pytest.approx(nbytes / 1e9, rel=1e-12), p.id
