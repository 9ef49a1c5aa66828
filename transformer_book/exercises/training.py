"""The exercises of chapter 7 (``book/07_training.ipynb``): the label-smoothed targets PyTorch's loss trains towards,
and the paper's warm-up schedule."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer.tokens import PAD_ID
from transformer.train.objective import smoothed_targets
from transformer.train.schedule import noam_lr
from transformer.utils import make_rng
from transformer_book.exercises.grading import SEEDS, check_shape, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_noam_lr", "grade_smoothed_targets"]


def grade_smoothed_targets(smoothed: Callable[[Tensor, int, float], Tensor]) -> None:
    """``smoothed(target (N,), V, smoothing)`` must be the ``(N, V)`` distribution that
    ``F.cross_entropy(label_smoothing=smoothing)`` trains towards (``transformer.train.objective.smoothed_targets``), for
    several vocabularies, smoothings and seeds. A row whose target is the padding id (``PAD_ID``, in every case) may
    hold anything: the chapter's loss, ``sequence_loss``, leaves those positions out (``ignore_index``)."""
    for seed, V, eps in zip(SEEDS, (5, 13, 3), (0.1, 0.3, 0.2), strict=True):
        target = torch.randint(0, V, (7,), generator=make_rng(seed))
        target[seed] = PAD_ID  # a padding target, in another row each time
        call = f"smoothed(target, V={V}, smoothing={eps})"
        mine = returned_tensor(smoothed(target, V, eps), call)
        check_shape(mine, (7, V), call, tr("one distribution over the V tokens per target"))
        expected = smoothed_targets(target, V, eps)
        wrong_rows = [
            r
            for r in range(7)
            if target[r] != PAD_ID and not torch.allclose(mine[r].double(), expected[r].double(), atol=1e-6)
        ]
        if not wrong_rows:
            continue
        r = wrong_rows[0]
        row, right = mine[r].double(), int(target[r])
        shown = ", ".join(f"{float(x):.4f}" for x in row)
        assert math.isclose(float(row.sum()), 1.0, abs_tol=1e-5), tr(
            "row {r} of {call} (target {right}) sums to {total:.4f}, not 1: a target must be a distribution (the "
            "row: {shown})",
            r=r,
            call=call,
            right=right,
            total=float(row.sum()),
            shown=shown,
        )
        others = [v for v in range(V) if v not in (right, PAD_ID)]
        if math.isclose(float(row[PAD_ID]), 0.0, abs_tol=1e-6) and torch.allclose(
            row[others], torch.full((len(others),), eps / (V - 2), dtype=torch.float64), atol=1e-6
        ):
            raise AssertionError(
                tr(
                    "row {r} of {call} (target {right}) gives <pad> nothing and ε/(V - 2) to the other wrong tokens, "
                    "as The Annotated Transformer's LabelSmoothing does; PyTorch's label_smoothing, which the "
                    "chapter's loss uses, spreads ε/V = {spread:.4f} over all V tokens, <pad> and the right one "
                    "included: 1 - ε + ε/V = {best:.4f}",
                    r=r,
                    call=call,
                    right=right,
                    spread=eps / V,
                    best=1 - eps + eps / V,
                )
            )
        wrong = (right + 1) % V if (right + 1) % V != PAD_ID else (right + 2) % V
        raise AssertionError(
            tr(
                "row {r} of {call} (target {right}) gives the right token {mine_right:.4f} and a wrong one "
                "{mine_wrong:.4f}; PyTorch spreads the smoothing over all V tokens, the right one included: "
                "1 - ε + ε/V = {best:.4f} and ε/V = {spread:.4f}",
                r=r,
                call=call,
                right=right,
                mine_right=float(row[right]),
                mine_wrong=float(row[wrong]),
                best=1 - eps + eps / V,
                spread=eps / V,
            )
        )


def grade_noam_lr(rate: Callable[[int, int, int], float]) -> None:
    """``rate(step, d_model, warmup)`` must be the paper's schedule, ``transformer.train.schedule.noam_lr`` (steps count
    from 1), to within 1e-6 relative, through the warm-up, at its end and long after, for two model sizes."""
    for d_model, warmup in ((512, 4000), (64, 100)):
        for step in (1, warmup // 2, warmup - 1, warmup, warmup + 1, 10 * warmup):
            call = f"rate({step}, d_model={d_model}, warmup={warmup})"
            mine, expected = float(rate(step, d_model, warmup)), noam_lr(step, d_model, warmup)
            assert math.isclose(mine, expected, rel_tol=1e-6), tr(
                "{call} is {mine:.4g}, not {expected:.4g}: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)",
                call=call,
                mine=mine,
                expected=expected,
            )
