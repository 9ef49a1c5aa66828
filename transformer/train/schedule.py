"""Learning-rate schedules: the paper's warm-up then inverse-square-root decay (section 5.3), and a linear warm-up
then a polynomial (linear or quadratic) decay to 0 for short runs with a known budget, all standard ``LambdaLR``
schedulers."""

from __future__ import annotations

import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's rate at ``step`` (counted from 1): ``factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)``.

    It rises linearly for ``warmup`` steps to its peak ``factor / sqrt(d_model * warmup)``, then decays as
    ``1 / sqrt(step)``.
    """
    if step < 1:
        raise ValueError(f"step counts from 1; got {step}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_scheduler(optimizer: torch.optim.Optimizer, warmup: int) -> LambdaLR:
    """The paper's schedule as a standard scheduler, with the optimizer's ``lr`` as its peak (reached at ``warmup``).

    The multiplier is ``sqrt(warmup) * min(step**-0.5, step * warmup**-1.5)``; the paper's rates are this with
    ``lr = (d_model * warmup)**-0.5`` (:func:`noam_lr`). ``LambdaLR`` counts from 0, the schedule from 1, so the
    first update already has a small non-zero rate.
    """
    return LambdaLR(optimizer, lambda i: warmup**0.5 * min((i + 1) ** -0.5, (i + 1) * warmup**-1.5))


def polynomial_scheduler(
    optimizer: torch.optim.Optimizer, warmup: int, total_steps: int, power: float = 1.0
) -> LambdaLR:
    """Linear warm-up to the optimizer's ``lr`` over ``warmup`` steps, then decay as ``remaining ** power`` towards 0
    at ``total_steps``, where ``remaining`` falls from 1 after the warm-up to nearly 0 at the last step.

    For a short run with a known budget: the rate is high while there is much to learn and anneals at the end,
    which is what removes the last few errors (the paper's ``1 / sqrt(step)`` tail never gets small). ``power=1``
    decays in a straight line; ``power=2`` (quadratic) stays high for a shorter time and then lingers near 0, so a
    run reaches its low rates, and with them its last errors fixed, well before its last step.
    """

    def multiplier(i: int) -> float:
        step = i + 1
        if step <= warmup:
            return step / warmup
        remaining = max(0.0, (total_steps + 1 - step) / (total_steps + 1 - warmup))
        return remaining**power

    return LambdaLR(optimizer, multiplier)


SCHEDULES = ("noam", "linear", "quadratic")


def make_scheduler(optimizer: torch.optim.Optimizer, schedule: str, warmup: int, total_steps: int) -> LambdaLR:
    """The scheduler a :class:`~transformer.train.config.TrainConfig` names: ``"noam"`` (the paper's), ``"linear"``
    or ``"quadratic"`` (:func:`polynomial_scheduler` with power 1 or 2)."""
    if schedule == "noam":
        return noam_scheduler(optimizer, warmup)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    return polynomial_scheduler(optimizer, warmup, total_steps, power=2.0 if schedule == "quadratic" else 1.0)
