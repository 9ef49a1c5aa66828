"""The exercises of chapter 7 (``book/07_training.ipynb``): the label-smoothed targets PyTorch's loss trains towards,
and the paper's warm-up schedule."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from transformer.tokens import PAD_ID, SPECIAL_TOKENS
from transformer.train.objective import smoothed_targets
from transformer.train.schedule import noam_lr
from transformer.utils import make_rng
from transformer_book.exercises.grading import SEEDS, check_shape, returned_tensor
from transformer_book.i18n import tr

__all__ = ["grade_noam_lr", "grade_smoothed_targets"]


def _smoothing_mistakes(right: int, V: int, eps: float) -> dict[str, Tensor]:
    """What each classic mistake makes of the row of a target ``right`` (float64), by the hint that names it."""
    one_hot = torch.zeros(V, dtype=torch.float64).index_fill(0, torch.tensor([right]), 1.0)
    others = 1 - one_hot
    annotated = one_hot * (1 - eps) + others * eps / (V - 2)
    annotated[PAD_ID] = 0.0
    values = dict(spread=eps / V, best=1 - eps + eps / V, pad=SPECIAL_TOKENS[PAD_ID])
    return {
        tr(
            "it gives {pad} nothing and ε/(V - 2) to the other wrong tokens, as The Annotated Transformer's "
            "LabelSmoothing does; PyTorch's label_smoothing, which the chapter's loss uses, spreads ε/V = {spread:.4f} "
            "over all V tokens, {pad} and the right one included: 1 - ε + ε/V = {best:.4f}",
            **values,
        ): annotated,
        tr(
            "it spreads ε/(V - 1) over the wrong tokens only; PyTorch's label_smoothing spreads ε/V = {spread:.4f} "
            "over all V tokens, the right one included: 1 - ε + ε/V = {best:.4f}",
            **values,
        ): one_hot * (1 - eps) + others * eps / (V - 1),
        tr(
            "the right token gets 1 - ε without its own share of the smoothing: every token gets ε/V = {spread:.4f}, "
            "the right one too, 1 - ε + ε/V = {best:.4f}",
            **values,
        ): one_hot * (1 - eps) + others * eps / V,
        tr(
            "ε is added to every token undivided: the smoothing spreads ε over the V tokens, ε/V = {spread:.4f} each",
            **values,
        ): one_hot * (1 - eps) + eps,
        tr(
            "ε and 1 - ε are swapped: the right token keeps 1 - ε, and ε is what is spread, ε/V = {spread:.4f} each",
            **values,
        ): one_hot * eps + (1 - eps) / V,
    }


def grade_smoothed_targets(smoothed: Callable[[Tensor, int, float], Tensor]) -> None:
    """``smoothed(target (N,), V, smoothing)`` must be the ``(N, V)`` distribution that
    ``F.cross_entropy(label_smoothing=smoothing)`` trains towards (``transformer.train.objective.smoothed_targets``), for
    several vocabularies, smoothings and seeds. A row whose target is the padding id (``PAD_ID``, in every case) may
    hold anything: the chapter's loss, ``sequence_loss``, leaves those positions out (``ignore_index``). It names The
    Annotated Transformer's spread, ε/(V - 1) over the wrong tokens, the right token without its ε/V, ε undivided and
    ε swapped with 1 - ε."""
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
        where = dict(r=r, call=call, right=right)
        for hint, wrong in _smoothing_mistakes(right, V, eps).items():
            if torch.allclose(row, wrong, atol=1e-6):
                raise AssertionError(tr("row {r} of {call} (target {right}): {hint}", hint=hint, **where))
        assert math.isclose(float(row.sum()), 1.0, abs_tol=1e-5), tr(
            "row {r} of {call} (target {right}) sums to {total:.4f}, not 1: a target must be a distribution (the "
            "row: {shown})",
            total=float(row.sum()),
            shown=", ".join(f"{float(x):.4f}" for x in row),
            **where,
        )
        wrong = (right + 1) % V if (right + 1) % V != PAD_ID else (right + 2) % V
        raise AssertionError(
            tr(
                "row {r} of {call} (target {right}) gives the right token {mine_right:.4f} and a wrong one "
                "{mine_wrong:.4f}; PyTorch spreads the smoothing over all V tokens, the right one included: "
                "1 - ε + ε/V = {best:.4f} and ε/V = {spread:.4f}",
                mine_right=float(row[right]),
                mine_wrong=float(row[wrong]),
                best=1 - eps + eps / V,
                spread=eps / V,
                **where,
            )
        )


def _rate_mistakes() -> dict[str, Callable[[int, int, int], float]]:
    """What each classic mistake makes of the paper's rate, by the hint that names it."""
    return {
        tr("max where the paper takes min: the rate starts at its peak and never warms up"): (
            lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5)
        ),
        tr("d_model^-0.5 is missing: the rate is d_model^-0.5 * min(...), smaller for wider models"): (
            lambda s, d, w: min(s**-0.5, s * w**-1.5)
        ),
        tr("d_model^0.5 where the paper has d_model^-0.5: the factor shrinks the rate for wider models"): (
            lambda s, d, w: d**0.5 * min(s**-0.5, s * w**-1.5)
        ),
        tr("d_model ** -1/2 is (d_model ** -1) / 2 in Python: ** binds tighter than /; write d_model ** -0.5"): (
            lambda s, d, w: d**-1 / 2 * min(s**-0.5, s * w**-1.5)
        ),
        tr(
            "step ** -1/2 is (step ** -1) / 2 in Python: ** binds tighter than /; write step ** -0.5 (or "
            "1 / math.sqrt(step))"
        ): lambda s, d, w: d**-0.5 * min(s**-1 / 2, s * w**-1.5),
        tr("warmup ** -3/2 is (warmup ** -3) / 2 in Python: ** binds tighter than /; write warmup ** -1.5"): (
            lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-3 / 2)
        ),
        tr(
            "step * warmup^-0.5 during the warm-up: the exponent is -1.5, so that the two branches meet at step = "
            "warmup, where the rate peaks"
        ): lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5),
        tr("step / warmup during the warm-up: it is step * warmup^-1.5, which reaches warmup^-0.5 at step = warmup"): (
            lambda s, d, w: d**-0.5 * min(s**-0.5, s / w)
        ),
        tr("there is no warm-up: the rate is the smaller of step^-0.5 and step * warmup^-1.5"): (
            lambda s, d, w: d**-0.5 * s**-0.5
        ),
        tr("the rate never decays: after the warm-up it falls as step^-0.5, the smaller of the two branches"): (
            lambda s, d, w: d**-0.5 * s * w**-1.5
        ),
        tr(
            "rate(step) is the paper's rate at step + 1: the paper counts steps from 1, and step here is the "
            "paper's (a scheduler that counts from 0, as LambdaLR does, adds the 1 itself)"
        ): lambda s, d, w: noam_lr(s + 1, d, w),
        tr("rate(step) is the paper's rate at step - 1: the paper counts steps from 1, and step here is the paper's"): (
            lambda s, d, w: noam_lr(s - 1, d, w) if s > 1 else math.inf  # step 0 has no rate
        ),
        tr(
            "twice the paper's rate: factor 2 is The Annotated Transformer's setting; the paper's, and this one's, is 1"
        ): (lambda s, d, w: 2 * noam_lr(s, d, w)),
    }


def grade_noam_lr(rate: Callable[[int, int, int], float]) -> None:
    """``rate(step, d_model, warmup)`` must be the paper's schedule, ``transformer.train.schedule.noam_lr`` (steps count
    from 1), to within 1e-6 relative, through the warm-up, at its end and long after, for two model sizes. It names
    the mistake whose rates are the answer's at every step it is tried at: max for min, d_model's factor missing or
    inverted, Python's precedence in ** -1/2 and ** -3/2, the warm-up's exponent or step / warmup, no warm-up (which
    warmup^+1.5 amounts to) or no decay, steps counted from 0 or 2, and factor 2."""
    cases = [
        (step, d_model, warmup)
        for d_model, warmup in ((512, 4000), (64, 100))
        for step in (1, warmup // 2, warmup - 1, warmup, warmup + 1, 10 * warmup)
    ]
    answers = [float(rate(*case)) for case in cases]
    wrong = [
        i for i, (mine, case) in enumerate(zip(answers, cases, strict=True)) if not _same_rate(mine, noam_lr(*case))
    ]
    if not wrong:
        return
    step, d_model, warmup = cases[wrong[0]]
    values = dict(
        call=f"rate({step}, d_model={d_model}, warmup={warmup})",
        mine=answers[wrong[0]],
        expected=noam_lr(step, d_model, warmup),
    )
    for hint, mistake in _rate_mistakes().items():
        if all(_same_rate(mine, mistake(*case)) for mine, case in zip(answers, cases, strict=True)):
            raise AssertionError(tr("{call} is {mine:.4g}, not {expected:.4g}: {hint}", hint=hint, **values))
    raise AssertionError(
        tr("{call} is {mine:.4g}, not {expected:.4g}: d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)", **values)
    )


def _same_rate(mine: float, expected: float) -> bool:
    return math.isclose(mine, expected, rel_tol=1e-6)
