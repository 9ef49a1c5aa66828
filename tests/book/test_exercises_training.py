"""The exercises of chapter 7 (transformer_book.exercises.training): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch
import torch.nn.functional as F

from transformer.tokens import PAD_ID
from transformer.train.schedule import noam_lr
from transformer_book.exercises import grade_noam_lr, grade_smoothed_targets


def smoothed(target, V, eps, spread="all", padding_rows="smoothed"):
    """The smoothed targets, optionally spread as The Annotated Transformer does (nothing on <pad>, eps / (V - 2) on
    the other wrong tokens) or over the wrong tokens only, and with the padding targets' rows zeroed."""
    one_hot = F.one_hot(target, V).double()
    if spread == "all":
        q = one_hot * (1 - eps) + eps / V
    elif spread == "others":
        q = one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 1)
    else:
        q = (one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 2)).index_fill(1, torch.tensor([PAD_ID]), 0.0)
    return q.masked_fill((target == PAD_ID)[:, None], 0.0) if padding_rows == "zero" else q


def test_smoothed_targets_check_passes_right_answers_whatever_the_rows_of_padding_targets_hold():
    grade_smoothed_targets(smoothed)
    grade_smoothed_targets(lambda *a: smoothed(*a, padding_rows="zero"))  # as the loss ignores them


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            lambda *a: smoothed(*a, spread="others"),
            r"row 1 of .*V=5.* \(target 4\) gives the right token 0\.9000 and a "
            r"wrong one 0\.0250.*the right one included",
        ),
        (
            lambda *a: smoothed(*a, spread="annotated"),
            r"row 1 of .*V=5.* \(target 4\) gives <pad> nothing.*"
            r"The Annotated Transformer",
        ),
        (lambda *a: smoothed(*a, spread="annotated", padding_rows="zero"), "The Annotated Transformer"),
        (
            lambda target, V, eps: F.one_hot(target, V) * (1 - eps) + eps,
            r"row 1 of .* \(target 4\) sums to 1\.4000, "
            r"not 1: a target must be a distribution",
        ),
        (lambda target, V, eps: F.one_hot(target, V + 1).float(), "shape"),
    ],
)
def test_smoothed_targets_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_smoothed_targets(wrong)


def test_smoothed_targets_check_names_the_failing_row_not_the_first():
    def wrong_in_one_row(target, V, eps):
        q = smoothed(target, V, eps)
        q[4] *= 2  # row 4 only; row 0 is right
        return q

    with pytest.raises(
        AssertionError,
        match=r"row 4 of smoothed\(target, V=5, smoothing=0\.1\) \(target \d+\) sums "
        r"to 2\.0000",
    ):
        grade_smoothed_targets(wrong_in_one_row)


def test_noam_lr_check():
    grade_noam_lr(lambda step, d, w: d**-0.5 * min(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match=r"rate\(1, d_model=512"):
        grade_noam_lr(lambda step, d, w: d**-0.5 * max(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match="not"):
        grade_noam_lr(lambda step, d, w: min(step**-0.5, step * w**-1.5))
    with pytest.raises(AssertionError, match=r"rate\(2000"):
        grade_noam_lr(
            lambda step, d, w: (
                d**-0.5 * min((step + 1) ** -0.5, (step + 1) * w**-1.5) if step > 1 else noam_lr(step, d, w)
            )
        )
