"""Learning-rate schedules by hand: the rate at a given step.

Conventions (named in every result):

- steps count from 0: lr(t) is the rate the (t+1)-th optimizer step uses, which is what a PyTorch
  scheduler gives after ``t`` calls of ``scheduler.step()``; "inverse-sqrt" counts from 1, as the
  paper does (its formula is undefined at 0).
- "linear" (linear warmup, then linear decay to 0 at ``total``; HuggingFace's
  ``get_linear_schedule_with_warmup``): lr = peak·(s + (1 − s)·t/w) for t < w (s = start factor,
  0 by default; PyTorch's LinearLR with start_factor s), then peak·(total − t)/(total − w), 0 after
  ``total``. With ``total`` = None: constant peak after the warmup.
- "inverse-sqrt" (Vaswani et al. 2017, eq. 3): lr = d_model^−0.5 · min(t^−0.5, t · w^−1.5); the peak,
  at t = w, is (d_model · w)^−0.5. With ``peak`` given instead of d_model: lr = peak · min(√(w/t), t/w).
- "cosine" (warmup then cosine decay; HuggingFace's ``get_cosine_schedule_with_warmup`` with
  min_lr = 0, PyTorch's SequentialLR(LinearLR, CosineAnnealingLR(eta_min)) otherwise):
  linear warmup as above, then progress p = (t − w)/(total − w) and
  lr = min_lr + (peak − min_lr)·(1 + cos(π·p))/2; min_lr after ``total``.
"""

from __future__ import annotations

import math

from solver.errors import SolverInputError
from solver.result import Result, fmt

SCHEDULES = ("linear", "inverse-sqrt", "cosine")


def _int(name: str, v, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise SolverInputError(f"must be an integer >= {lo} (got {v!r})", param=name)
    return v


def learning_rate(schedule: str, step: int, *, peak: float | None = None, warmup: int = 0, total: int | None = None,
                  min_lr: float = 0.0, start_factor: float = 0.0, d_model: int | None = None) -> Result:
    """The learning rate at ``step`` under the named schedule."""
    if schedule not in SCHEDULES:
        raise SolverInputError(f"must be one of {', '.join(SCHEDULES)} (got {schedule!r})", param="schedule")
    t, w = _int("step", step), _int("warmup", warmup)
    if total is not None:
        _int("total", total, 1)
        if total < w:
            raise SolverInputError(f"total ({total}) must be at least the warmup ({w})", param="total")
    if not 0 <= start_factor <= 1:
        raise SolverInputError(f"must be in [0, 1] (got {start_factor})", param="start_factor")
    r = Result(answer=None, unit="", convention={"answer": "learning rate",
                                                 "steps": "counted from 0: lr(t) is used by the (t+1)-th optimizer step"})
    if schedule == "inverse-sqrt":
        t = _int("step", step, 1)
        if w < 1:
            raise SolverInputError("the inverse-sqrt schedule needs a warmup >= 1", param="warmup")
        r.convention["steps"] = "counted from 1, as in Vaswani et al. (2017)"
        r.convention["schedule"] = "lr = d_model^−0.5 · min(t^−0.5, t·w^−1.5) (Vaswani et al. 2017, eq. 3)"
        if d_model is not None:
            _int("d_model", d_model, 1)
            a = r.step("t^−0.5", f"{t}^−0.5", t**-0.5)
            b = r.step("t·w^−1.5", f"{t} × {w}^−1.5", t * w**-1.5)
            lr = r.step("lr = d_model^−0.5 · min(t^−0.5, t·w^−1.5)", f"{d_model}^−0.5 × min({fmt(a)}, {fmt(b)})",
                        d_model**-0.5 * min(a, b))
            pk = (d_model * w) ** -0.5
        elif peak is not None:
            r.convention["schedule"] = "lr = peak · min(√(w/t), t/w): eq. 3 scaled so its top, at t = w, is the peak"
            lr = r.step("lr = peak · min(√(w/t), t/w)", f"{fmt(peak)} × min(√({w}/{t}), {t}/{w})",
                        peak * min(math.sqrt(w / t), t / w))
            pk = peak
        else:
            raise SolverInputError("give --d-model (the paper's formula) or --peak-lr", param="d_model")
        phase = "warmup" if t < w else "decay"
        r.answer = lr
        r.breakdown.update(schedule=schedule, step=t, warmup=w, phase=phase, peak_lr=pk, lr=lr)
        return r
    if peak is None or peak <= 0:
        raise SolverInputError("give --peak-lr (> 0)", param="peak")
    if schedule == "cosine" and total is None:
        raise SolverInputError("the cosine schedule needs --total (the step where it reaches min_lr)", param="total")
    if not 0 <= min_lr <= peak:
        raise SolverInputError(f"must be in [0, peak] (got {min_lr})", param="min_lr")
    r.convention["warmup"] = f"linear over {w} steps from start factor {start_factor}: peak·(s + (1 − s)·t/w)"
    if t < w:
        phase = "warmup"
        lr = r.step("lr = peak · (s + (1 − s)·t/w)", f"{fmt(peak)} × ({fmt(start_factor)} + {fmt(1 - start_factor)} × {t}/{w})",
                    peak * (start_factor + (1 - start_factor) * t / w))
    elif schedule == "linear":
        r.convention["schedule"] = "linear decay to 0 at total (HuggingFace get_linear_schedule_with_warmup)"
        if total is None:
            phase, lr = "constant", r.step("lr = peak (no decay)", fmt(peak), peak)
        elif t >= total:
            phase, lr = "done", r.step("t ≥ total: lr = 0", "", 0.0)
        else:
            phase = "decay"
            lr = r.step("lr = peak · (total − t)/(total − w)", f"{fmt(peak)} × ({total} − {t})/({total} − {w})",
                        peak * (total - t) / (total - w))
    else:
        r.convention["schedule"] = ("cosine: min_lr + (peak − min_lr)(1 + cos πp)/2, p = (t − w)/(total − w) "
                                    "(HuggingFace get_cosine_schedule_with_warmup; PyTorch CosineAnnealingLR's eta_min)")
        if t >= total:
            phase, lr = "done", r.step("t ≥ total: lr = min_lr", fmt(min_lr), float(min_lr))
        else:
            phase = "decay"
            p = r.step("p = (t − w)/(total − w)", f"({t} − {w})/({total} − {w})", (t - w) / (total - w))
            lr = r.step("lr = min_lr + (peak − min_lr)·(1 + cos πp)/2",
                        f"{fmt(min_lr)} + ({fmt(peak)} − {fmt(min_lr)}) × (1 + cos(π × {fmt(p)}))/2",
                        min_lr + (peak - min_lr) * (1 + math.cos(math.pi * p)) / 2)
    r.answer = lr
    r.breakdown.update(schedule=schedule, step=t, warmup=w, **({"total": total} if total is not None else {}),
                       phase=phase, peak_lr=peak, lr=lr, fraction_of_peak=lr / peak)
    return r


# ---------------------------------------------------------------------------------------
# issue 44 (more entries): the registry's description (solver.registry): qkv calc's lr(...), from
# qkv solve lr.
# ---------------------------------------------------------------------------------------

from solver.registry.formula import Input, Output, formula  # noqa: E402


def _or_float(v):
    """None, or the number as a float (as the command's flags give it)."""
    return None if v is None else float(v)


@formula("lr", "The learning rate at a step: linear warmup and decay, inverse square root, or cosine with warmup.",
         (Input("schedule", "linear, inverse-sqrt (inverse_sqrt) or cosine", kind="choice"),
          Input("step", "t: the step (from 0; inverse-sqrt from 1)", kind="count", integer=True, minimum=0,
                maximum=10**12, aliases=("t",)),
          Input("peak", "the peak learning rate", kind="fraction", default=None, maximum=10,
                aliases=("peak_lr", "lr")),
          Input("warmup", "w: warmup steps", kind="count", integer=True, minimum=0, maximum=10**12, default=0,
                aliases=("w",)),
          Input("total", "the step where the decay ends (linear: 0; cosine: min_lr)", kind="count", integer=True,
                minimum=1, maximum=10**12, default=None),
          Input("min_lr", "the cosine floor (eta_min)", kind="fraction", default=0, maximum=10),
          Input("start_factor", "the warmup's first factor (LinearLR start_factor)", kind="fraction", default=0,
                maximum=1),
          Input("d_model", "inverse-sqrt: the paper's d_model^−0.5 scale", kind="count", integer=True, minimum=1,
                maximum=10**7, default=None)),
         (Output("lr", "", "the learning rate at the step"),),
         solve="lr", source="Vaswani et al. 2017 (eq. 3); Loshchilov & Hutter 2017 (SGDR)")
def _lr_formula(schedule, step, peak, warmup, total, min_lr, start_factor, d_model):
    return learning_rate(str(schedule).strip().lower().replace("_", "-"), step, peak=_or_float(peak), warmup=warmup,
                         total=total, min_lr=float(min_lr), start_factor=float(start_factor), d_model=d_model)


FORMULAS = (_lr_formula.formula,)
