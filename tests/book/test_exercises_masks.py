"""The exercises of chapter 4 (transformer_book.exercises.masks): each check passes right answers, written in several
ways, and refuses the classic wrong ones with a message that names the mistake."""

import pytest
import torch

from transformer import causal_mask, padding_mask
from transformer_book.exercises import grade_causal_mask, grade_padding_mask, grade_target_mask


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda T: torch.ones(T, T, dtype=torch.bool).tril(), r"shape \(5, 5\)"),
        (lambda T: torch.ones(1, 1, T, T).tril(), "dtype torch.float32"),
        (lambda T: ~causal_mask(T), "inverted"),
        (lambda T: causal_mask(T).transpose(-2, -1), "the future"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool).tril(-1), "diagonal"),
        (lambda T: torch.ones(1, 1, T, T, dtype=torch.bool), r"\[0, 0, 0, 1\] is True"),
    ],
)
def test_causal_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_causal_mask(wrong)


def test_causal_mask_check_passes_a_loop():
    def by_loop(T):
        mask = torch.zeros(1, 1, T, T, dtype=torch.bool)
        for i in range(T):
            mask[0, 0, i, : i + 1] = True
        return mask

    grade_causal_mask(by_loop)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, :, None], r"padding \*queries\*"),
        (lambda tokens, pad_id: tokens != pad_id, r"shape \(2, 5\)"),
        (lambda tokens, pad_id: (tokens == pad_id)[:, None, None, :], "True on the padding"),
        (lambda tokens, pad_id: (tokens != 0)[:, None, None, :], "pad_id used"),
        (lambda tokens, pad_id: (tokens != pad_id)[:, None, None, :].long(), "dtype torch.int64"),
    ],
)
def test_padding_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_padding_mask(wrong)


def test_padding_and_target_mask_checks_pass_masks_written_from_the_tokens():
    def real_keys(tokens, pad_id):
        return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)

    def no_future(T):
        return torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)

    grade_padding_mask(real_keys)
    grade_target_mask(lambda tokens, pad_id: real_keys(tokens, pad_id) & no_future(tokens.size(1)))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda tokens, pad_id: padding_mask(tokens, pad_id) | causal_mask(tokens.size(1)), r"not \|"),
        (lambda tokens, pad_id: padding_mask(tokens, pad_id), r"shape \(2, 1, 1, 5\)"),
        (lambda tokens, pad_id: causal_mask(tokens.size(1)).expand(tokens.size(0), 1, -1, -1), "is True: key"),
        (lambda tokens, pad_id: (padding_mask(tokens, pad_id) & causal_mask(tokens.size(1))).float(), "dtype"),
    ],
)
def test_target_mask_check_catches_classic_mistakes(wrong, message):
    with pytest.raises(AssertionError, match=message):
        grade_target_mask(wrong)
