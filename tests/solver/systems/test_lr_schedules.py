"""Learning-rate schedules (solver.systems.lr_schedules) against torch.optim.lr_scheduler, stepped for real.

After t calls of scheduler.step() the optimizer's lr is lr(t): LinearLR (warmup with a start factor),
SequentialLR(LinearLR, CosineAnnealingLR(eta_min)) for cosine with warmup, SequentialLR(LinearLR,
LinearLR(1 → 0)) for the linear decay, and LambdaLR with the paper's eq. 3 for inverse-sqrt (PyTorch
has no built-in one; LambdaLR still fixes the stepping: lambda gets the step count).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.systems.lr_schedules import learning_rate


def _lrs(make, steps: int, base: float) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    sched = make(opt)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


@settings(max_examples=15, deadline=None)
@given(w=st.integers(1, 20), extra=st.integers(1, 30), s=st.floats(0.01, 1), eta=st.floats(0, 0.5))
def test_cosine_with_warmup_is_sequential_lr(w, extra, s, eta):
    base, total = 1.0, w + extra
    from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

    got = _lrs(lambda o: SequentialLR(o, [LinearLR(o, s, 1.0, total_iters=w), CosineAnnealingLR(o, T_max=extra, eta_min=eta)],
                                      milestones=[w]), total + 1, base)
    for t, g in enumerate(got):
        assert learning_rate("cosine", t, peak=base, warmup=w, total=total, min_lr=eta, start_factor=s).answer \
            == pytest.approx(g, rel=1e-9, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(w=st.integers(1, 20), extra=st.integers(1, 30))
def test_linear_warmup_and_decay(w, extra):
    base, total = 0.5, w + extra
    from torch.optim.lr_scheduler import LambdaLR

    # HuggingFace's get_linear_schedule_with_warmup, as its source writes the lambda
    def hf(t):
        if t < w:
            return t / max(1, w)
        return max(0.0, (total - t) / max(1, total - w))

    got = _lrs(lambda o: LambdaLR(o, hf), total + 3, base)
    for t, g in enumerate(got):
        assert learning_rate("linear", t, peak=base, warmup=w, total=total).answer == pytest.approx(g, abs=1e-12)


@pytest.mark.parametrize("s", [0.1, 0.25])
def test_warmup_start_factor_is_linear_lr(s):
    from torch.optim.lr_scheduler import LinearLR

    got = _lrs(lambda o: LinearLR(o, s, 1.0, total_iters=8), 12, 2.0)
    for t, g in enumerate(got):
        assert learning_rate("linear", t, peak=2.0, warmup=8, start_factor=s).answer == pytest.approx(g, rel=1e-12)


def test_inverse_sqrt_paper():
    """d_model = 512, w = 4000 (the paper's base model): peak at t = 4000 is (512·4000)^−0.5 = 6.988e-4;
    at t = 8000, 512^−0.5 · 8000^−0.5 = 4.941e-4; LambdaLR stepping with eq. 3 (step + 1) agrees."""
    from torch.optim.lr_scheduler import LambdaLR

    assert learning_rate("inverse-sqrt", 4000, warmup=4000, d_model=512).answer == pytest.approx((512 * 4000) ** -0.5)
    assert learning_rate("inverse-sqrt", 8000, warmup=4000, d_model=512).answer == pytest.approx(1 / (512 * 8000) ** 0.5)
    got = _lrs(lambda o: LambdaLR(o, lambda k: 512**-0.5 * min((k + 1) ** -0.5, (k + 1) * 10**-1.5)), 30, 1.0)
    for k, g in enumerate(got):
        assert learning_rate("inverse-sqrt", k + 1, warmup=10, d_model=512).answer == pytest.approx(g, rel=1e-12)
    assert learning_rate("inverse-sqrt", 40, warmup=10, peak=1e-3).answer == pytest.approx(1e-3 * 0.5)
