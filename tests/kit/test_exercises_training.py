"""The exercises of chapter 7 (transformer_book.exercises.training): each check passes right answers, written in
several ways, and refuses the classic wrong ones with a message that names the mistake."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_checks import accepted, refused

from transformer.tokens import PAD_ID
from transformer.train.schedule import noam_lr
from transformer_book.exercises import grade_noam_lr, grade_smoothed_targets


def smoothed(target, V, eps, spread="all", padding_rows="smoothed"):
    """The smoothed targets, optionally spread with one classic mistake, and with the padding targets' rows zeroed."""
    one_hot = F.one_hot(target, V).double()
    if spread == "all":
        q = one_hot * (1 - eps) + eps / V
    elif spread == "others":  # over the wrong tokens only
        q = one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 1)
    elif spread == "right token left out":  # ε/V to the wrong tokens, the right one 1 - ε
        q = one_hot * (1 - eps) + (1 - one_hot) * eps / V
    elif spread == "undivided":
        q = one_hot * (1 - eps) + eps
    elif spread == "swapped":
        q = one_hot * eps + (1 - eps) / V
    else:  # The Annotated Transformer's: nothing on <pad>, ε / (V - 2) on the other wrong tokens
        q = (one_hot * (1 - eps) + (1 - one_hot) * eps / (V - 2)).index_fill(1, torch.tensor([PAD_ID]), 0.0)
    return q.masked_fill((target == PAD_ID)[:, None], 0.0) if padding_rows == "zero" else q


def from_the_loss(target, V, eps):
    """The target the loss trains towards, read off its gradient: d CE / d logits = softmax - q, at logits 0."""
    logits = torch.zeros(target.size(0), V, dtype=torch.float64, requires_grad=True)
    F.cross_entropy(logits, target, label_smoothing=eps, reduction="sum").backward()
    return torch.softmax(logits.detach(), dim=-1) - logits.grad


@pytest.mark.parametrize(
    "right",
    [
        smoothed,
        lambda *a: smoothed(*a, padding_rows="zero"),  # as the loss ignores them
        lambda target, V, eps: torch.full((target.size(0), V), eps / V).scatter(1, target[:, None], 1 - eps + eps / V),
        from_the_loss,
    ],
    ids=["one-hot and ε/V", "padding rows zeroed", "full and scatter", "read off the loss's gradient"],
)
def test_smoothed_targets_check_passes_right_answers_whatever_the_rows_of_padding_targets_hold(right):
    accepted(grade_smoothed_targets, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda *a: smoothed(*a, spread="others"), r"row 1 of .*V=5.* \(target 4\): it spreads ε/\(V - 1\)"),
        (lambda *a: smoothed(*a, spread="annotated"), r"row 1 of .*\(target 4\): it gives <pad> nothing.*Annotated"),
        (lambda *a: smoothed(*a, spread="annotated", padding_rows="zero"), "The Annotated Transformer"),
        (lambda *a: smoothed(*a, spread="right token left out"), "the right token gets 1 - ε without its own share"),
        (lambda *a: smoothed(*a, spread="undivided"), "ε is added to every token undivided"),
        (lambda *a: smoothed(*a, spread="swapped"), "ε and 1 - ε are swapped"),
        (lambda target, V, eps: F.one_hot(target, V).double(), r"row 1 of .* gives the right token 1\.0000"),
        (lambda target, V, eps: 2 * smoothed(target, V, eps), r"row 1 of .* \(target 4\) sums to 2\.0000"),
        (lambda target, V, eps: F.one_hot(target, V + 1).float(), "shape"),
    ],
    ids=[
        "others",
        "annotated",
        "annotated, padding rows zero",
        "right token left out",
        "undivided",
        "swapped",
        "no smoothing",
        "twice",
        "V + 1 columns",
    ],
)
def test_smoothed_targets_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_smoothed_targets, wrong, message)


def test_smoothed_targets_check_names_the_failing_row_not_the_first():
    def wrong_in_one_row(target, V, eps):
        q = smoothed(target, V, eps)
        q[4] *= 2  # row 4 only; row 0 is right
        return q

    refused(
        grade_smoothed_targets,
        wrong_in_one_row,
        r"row 4 of smoothed\(target, V=5, smoothing=0\.1\) \(target \d+\) sums to 2\.0000",
    )


@pytest.mark.parametrize(
    "right",
    [
        lambda step, d, w: d**-0.5 * min(step**-0.5, step * w**-1.5),
        noam_lr,
        lambda step, d, w: min(1 / math.sqrt(step), step / w / math.sqrt(w)) / math.sqrt(d),
        lambda step, d, w: (d * w) ** -0.5 * (step / w if step < w else (w / step) ** 0.5),  # peak, times a shape
    ],
    ids=["the paper's", "the package's", "square roots", "peak and shape"],
)
def test_noam_lr_check_passes_right_answers(right):
    accepted(grade_noam_lr, right)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda s, d, w: d**-0.5 * max(s**-0.5, s * w**-1.5), r"rate\(1, d_model=512.*max where the paper takes min"),
        (lambda s, d, w: min(s**-0.5, s * w**-1.5), "d_model\\^-0.5 is missing"),
        (lambda s, d, w: d**0.5 * min(s**-0.5, s * w**-1.5), "d_model\\^0.5 where the paper has d_model\\^-0.5"),
        (lambda s, d, w: d**-1 / 2 * min(s**-0.5, s * w**-1.5), r"d_model \*\* -1/2 is \(d_model \*\* -1\) / 2"),
        (lambda s, d, w: d**-0.5 * min(s**-1 / 2, s * w**-1.5), r"step \*\* -1/2 is \(step \*\* -1\) / 2"),
        (lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-3 / 2), r"warmup \*\* -3/2 is \(warmup \*\* -3\) / 2"),
        (lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**-0.5), r"step \* warmup\^-0.5 during the warm-up"),
        (lambda s, d, w: d**-0.5 * min(s**-0.5, s * w**1.5), "there is no warm-up"),  # the warm-up branch never smaller
        (lambda s, d, w: d**-0.5 * min(s**-0.5, s / w), "step / warmup during the warm-up"),
        (lambda s, d, w: d**-0.5 * s**-0.5, "there is no warm-up"),
        (lambda s, d, w: d**-0.5 * s * w**-1.5, "the rate never decays"),
        (lambda s, d, w: noam_lr(s + 1, d, w), r"the paper's rate at step \+ 1: the paper counts steps from 1"),
        (
            lambda s, d, w: noam_lr(max(s - 1, 1), d, w),
            r"rate\(2000, d_model=512, warmup=4000\) is 0\.0003492, not 0\.0003494: d_model\^-0\.5",
        ),
        (lambda s, d, w: 2 * noam_lr(s, d, w), "twice the paper's rate: factor 2"),
        (
            lambda s, d, w: noam_lr(s, d, w) * (1.01 if s == 2000 else 1),
            r"rate\(2000, .* is 0\.0003529, not 0\.0003494",
        ),
    ],
    ids=[
        "max",
        "no d_model",
        "d_model^0.5",
        "d_model ** -1/2",
        "step ** -1/2",
        "warmup ** -3/2",
        "warmup^-0.5",
        "warmup^1.5",
        "step / warmup",
        "no warm-up",
        "no decay",
        "step + 1",
        "step - 1 from step 2 (unnamed)",
        "factor 2",
        "one step off",
    ],
)
def test_noam_lr_check_refuses_classic_mistakes_naming_them(wrong, message):
    refused(grade_noam_lr, wrong, message)
